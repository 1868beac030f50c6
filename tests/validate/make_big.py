"""Two large Parquet outputs of the same rows for `scripts/bench-validate` (pyspark, local mode):
ROWS rows (default 32 million, about 1 GB of Parquet each) of long, int, string, double, float,
decimal, date and timestamp columns, written once in 16 files and once, reordered, in 7.

    python3 make_big.py OUT_DIR [ROWS]      # OUT_DIR/a, OUT_DIR/b
"""
import sys

from pyspark.sql import SparkSession, functions as F

out = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 32_000_000
spark = (
    SparkSession.builder.master("local[2]")
    .appName("validate_bench_data")
    .config("spark.driver.memory", "4g")
    .config("spark.sql.shuffle.partitions", "16")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    .getOrCreate()
)
df = (
    spark.range(0, rows, 1, 16)
    .withColumn("grp", (F.col("id") % 1000).cast("int"))
    .withColumn("name", F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 12))
    .withColumn("amount", F.rand(7) * 1000.0)
    .withColumn("ratio", (F.rand(11) * 10).cast("float"))
    .withColumn("price", (F.col("id") % 100000 / 100.0).cast("decimal(12,2)"))
    .withColumn("day", F.expr("date_add(DATE'2020-01-01', CAST(id % 2000 AS INT))"))
    .withColumn("ts", F.expr("TIMESTAMP'2020-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id)"))
)
df.write.mode("overwrite").parquet(f"{out}/a")
spark.read.parquet(f"{out}/a").repartition(7, "grp").write.mode("overwrite").parquet(f"{out}/b")
spark.stop()
