"""Input data of the sample job `sales_report.py`: three Parquet tables, the same rows on
every machine and every run (every value a hash of the row number; fixed partition counts).

Usage: spark-submit make_sales_data.py DATA_DIR [SALES_ROWS]
Writes DATA_DIR/{sales,customers,products}/ (replacing them).
"""
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

data = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 3_000_000
CUSTOMERS, PRODUCTS, STORES = 200_000, 20_000, 50

spark = SparkSession.builder.appName("sales_report_data").getOrCreate()


def h(col, seed, n):
    """A value in [0, n) from a hash of `col`: deterministic, evenly spread."""
    return F.pmod(F.xxhash64(col, F.lit(seed)), F.lit(n))


sales = spark.range(0, rows, 1, 2).select(
    F.col("id").alias("sale_id"),
    h("id", 1, CUSTOMERS).cast("int").alias("customer_id"),
    h("id", 2, PRODUCTS).cast("int").alias("product_id"),
    h("id", 3, STORES).cast("int").alias("store_id"),
    F.date_add(F.lit("2024-01-01").cast("date"), h("id", 4, 730).cast("int")).alias("sale_date"),
    (h("id", 5, 10) + 1).cast("int").alias("quantity"),
    (h("id", 6, 30) / 100).cast("decimal(4,2)").alias("discount"),
    F.element_at(F.array(*[F.lit(c) for c in ["store", "web", "phone", "partner"]]),
                 (h("id", 7, 4) + 1).cast("int")).alias("channel"),
)
sales.write.mode("overwrite").parquet(f"{data}/sales")

segments = F.array(*[F.lit(s) for s in ["consumer", "corporate", "home office", "small business"]])
regions = F.array(*[F.lit(r) for r in ["north", "south", "east", "west", "central", "overseas"]])
spark.range(0, CUSTOMERS, 1, 2).select(
    F.col("id").cast("int").alias("customer_id"),
    F.concat(F.lit("customer "), F.col("id")).alias("name"),
    F.element_at(segments, (h("id", 11, 4) + 1).cast("int")).alias("segment"),
    F.element_at(regions, (h("id", 12, 6) + 1).cast("int")).alias("region"),
).write.mode("overwrite").parquet(f"{data}/customers")

categories = F.array(*[F.lit(c) for c in
                       ["books", "garden", "toys", "kitchen", "sports", "music", "tools", "office"]])
spark.range(0, PRODUCTS, 1, 1).select(
    F.col("id").cast("int").alias("product_id"),
    F.element_at(categories, (h("id", 21, 8) + 1).cast("int")).alias("category"),
    F.concat(F.lit("brand "), h("id", 22, 300)).alias("brand"),
    ((h("id", 23, 20000) + 99) / 100).cast("decimal(8,2)").alias("list_price"),
).write.mode("overwrite").parquet(f"{data}/products")

spark.stop()
