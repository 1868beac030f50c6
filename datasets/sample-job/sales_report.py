"""The bundled sample job: a nightly sales report over three Parquet tables (made by
`make_sales_data.py`), written as Parquet. Plain SQL that the RAPIDS Accelerator runs on the
GPU: Parquet scans, joins, aggregations (with count(DISTINCT)), sorts, a top-N; no UDFs.

Usage: spark-submit sales_report.py DATA_DIR OUTPUT_DIR
Writes OUTPUT_DIR/{revenue_by_month,top_customers,store_days}/ (replacing them).
"""
import sys

from pyspark.sql import SparkSession

data, out = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.appName("sales_report").getOrCreate()
# the tables' schemas, so that reading them runs no schema-inference job
SCHEMAS = {
    "sales": "sale_id BIGINT, customer_id INT, product_id INT, store_id INT, sale_date DATE, "
             "quantity INT, discount DECIMAL(4,2), channel STRING",
    "customers": "customer_id INT, name STRING, segment STRING, region STRING",
    "products": "product_id INT, category STRING, brand STRING, list_price DECIMAL(8,2)",
}
for t, schema in SCHEMAS.items():
    spark.read.schema(schema).parquet(f"{data}/{t}").createOrReplaceTempView(t)


def write(name, sql):
    spark.sparkContext.setJobDescription(name)
    spark.sql(sql).write.mode("overwrite").parquet(f"{out}/{name}")


# revenue per region, category and month
write("revenue_by_month", """
SELECT c.region, p.category, date_trunc('MONTH', s.sale_date) AS month,
       count(*) AS sales, count(DISTINCT s.customer_id) AS buyers, sum(s.quantity) AS units,
       sum(s.quantity * p.list_price * (1 - s.discount)) AS revenue
FROM sales s JOIN customers c ON s.customer_id = c.customer_id
             JOIN products p ON s.product_id = p.product_id
GROUP BY c.region, p.category, date_trunc('MONTH', s.sale_date)
ORDER BY region, category, month""")

# the 1,000 best customers: orders, distinct products, units, revenue
write("top_customers", """
SELECT c.customer_id, c.name, c.segment, c.region, t.orders, t.products, t.units, t.revenue
FROM (SELECT s.customer_id, count(*) AS orders, count(DISTINCT s.product_id) AS products,
             sum(s.quantity) AS units,
             sum(s.quantity * p.list_price * (1 - s.discount)) AS revenue
      FROM sales s JOIN products p ON s.product_id = p.product_id
      GROUP BY s.customer_id) t
JOIN customers c ON t.customer_id = c.customer_id
ORDER BY t.revenue DESC, c.customer_id
LIMIT 1000""")

# every store's days, channel by channel
write("store_days", """
SELECT store_id, sale_date, channel, count(*) AS sales, sum(quantity) AS units,
       count(DISTINCT customer_id) AS customers
FROM sales
GROUP BY store_id, sale_date, channel
ORDER BY store_id, sale_date, channel""")

spark.stop()
