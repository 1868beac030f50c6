"""The comparison `aether validate` makes, done in pyspark for `scripts/bench-validate`: row
counts, every row as a multiset (exceptAll both ways) and per-column aggregates (count, nulls,
min, max, sum, mean, stddev) of two Parquet outputs.

    spark-submit spark_compare.py CPU_OUTPUT GPU_OUTPUT
"""
import sys

from pyspark.sql import SparkSession, functions as F

spark = (
    SparkSession.builder.appName("validate_compare")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
a = spark.read.parquet(sys.argv[1])
b = spark.read.parquet(sys.argv[2])
print("rows", a.count(), b.count())
print("only in CPU", a.exceptAll(b).count(), "only in GPU", b.exceptAll(a).count())
numeric = {"bigint", "int", "double", "float"}
for df, side in ((a, "cpu"), (b, "gpu")):
    aggs = []
    for name, t in df.dtypes:
        aggs += [F.count(name), F.min(name), F.max(name)]
        if t in numeric or t.startswith("decimal"):
            aggs += [F.sum(name), F.mean(name), F.stddev(name)]
    print(side, df.agg(*aggs).collect()[0])
spark.stop()
