"""Make the outputs `aether validate` is tested on, with real Spark (pyspark 3.5, local mode).

One dataset (20,000 rows: long id, int, string with empty strings and nulls, double, float,
decimal, date, timestamp, array of strings, boolean) written as a CPU run would, and beside it
what a GPU run might have written instead: the same rows with another partitioning, file count,
row order and array element order, or INT96 timestamps (each must PASS); and pairs with one
difference injected (each must FAIL, naming the column; a float changed by 1 ulp must PASS).

    python3 make_outputs.py OUT_DIR      # OUT_DIR/<case>/ (Parquet unless the name says)
"""
import sys

from pyspark.sql import SparkSession, functions as F

out = sys.argv[1]
spark = (
    SparkSession.builder.master("local[2]")
    .appName("validate_fixtures")
    .config("spark.sql.shuffle.partitions", "4")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    .getOrCreate()
)
n = 20_000
base = (
    spark.range(0, n, 1, 4)
    .withColumn("grp", (F.col("id") % 7).cast("int"))
    .withColumn(
        "name",
        F.when(F.col("id") % 89 == 0, F.lit(None).cast("string"))
        .when(F.col("id") % 97 == 0, F.lit(""))
        .otherwise(F.concat(F.lit("n"), (F.col("id") % 500).cast("string"))),
    )
    .withColumn("amount", (F.col("id") * 37 % 1000) / 7.0 + F.col("id") * 1e-3)
    .withColumn("ratio", ((F.col("id") % 100) / 3.0).cast("float"))
    .withColumn("price", (F.col("id") % 1000 * 1.25).cast("decimal(12,2)"))
    .withColumn("day", F.expr("date_add(DATE'2024-01-01', CAST(id % 365 AS INT))"))
    .withColumn("ts", F.expr("TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id)"))
    .withColumn(
        "tags",
        F.array(
            F.concat(F.lit("a"), (F.col("id") % 3).cast("string")),
            F.concat(F.lit("b"), (F.col("id") % 5).cast("string")),
        ),
    )
    .withColumn("flag", F.col("id") % 2 == 0)
).cache()


def write(df, case, parts=4, fmt="parquet", **opts):
    w = df.repartition(parts).write.mode("overwrite")
    for k, v in opts.items():
        w = w.option(k, v)
    w.format(fmt).save(f"{out}/{case}")


write(base, "base")
# the same rows, differently laid out: must PASS
base.withColumn("tags", F.reverse("tags")).orderBy(F.desc("id")).coalesce(1).write.mode(
    "overwrite"
).parquet(f"{out}/same")
spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
write(base, "int96", parts=3)
spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
# a third of the doubles 1 ulp off: must PASS within the tolerance
write(
    base.withColumn(
        "amount",
        F.when(F.col("id") % 3 == 0, F.col("amount") * (1 + 2.220446049250313e-16)).otherwise(
            F.col("amount")
        ),
    ),
    "ulp",
)
# one difference each: must FAIL
write(base.filter(F.col("id") != 12345), "dropped")
write(base.unionByName(base.filter(F.col("id") == 4321)), "duplicated")
write(
    base.withColumn(
        "name", F.when(F.col("id") == 777, F.lit("CHANGED")).otherwise(F.col("name"))
    ),
    "changed",
)
write(base.withColumn("amount", F.col("amount") + 40.0), "shifted")
write(base.withColumn("grp", F.col("grp").cast("long")), "type_changed")
write(base.withColumnRenamed("amount", "amount_usd"), "renamed")
write(
    base.withColumn("name", F.when(F.col("name") == "", F.lit(None)).otherwise(F.col("name"))),
    "null_vs_empty",
)
write(base.withColumn("ts", F.col("ts") + F.expr("INTERVAL 1 HOUR")), "tz")
# other formats and layouts: must PASS
flat = base.drop("tags")
write(flat, "csv_a", parts=2, fmt="csv", header="true")
write(flat, "csv_b", parts=5, fmt="csv", header="true")
write(base, "orc_a", parts=2, fmt="orc")
write(base, "orc_b", parts=3, fmt="orc")
write(
    base.withColumn(
        "name", F.when(F.col("id") == 777, F.lit("CHANGED")).otherwise(F.col("name"))
    ),
    "orc_changed",
    fmt="orc",
)
base.repartition(3).write.mode("overwrite").partitionBy("grp").orc(f"{out}/orc_part_a")
base.repartition(1).write.mode("overwrite").partitionBy("grp").orc(f"{out}/orc_part_b")
base.filter(F.col("id") != 4242).repartition(2).write.mode("overwrite").partitionBy("grp").orc(
    f"{out}/orc_part_dropped"
)
write(base, "json_a", parts=2, fmt="json")
write(base, "json_b", parts=3, fmt="json")
base.repartition(3).write.mode("overwrite").partitionBy("grp").parquet(f"{out}/part_a")
base.repartition(1).write.mode("overwrite").partitionBy("grp").parquet(f"{out}/part_b")
write(base.limit(0), "empty_a", parts=1)
write(base.limit(0), "empty_b", parts=2)
spark.stop()

# three small runs of one job, each with its event log (OUT_DIR/eventlogs/<run>/): the CPU run
# writes prod/agg; the "GPU" run writes the same rows to a sandbox (sandbox/7/prod/agg), a bad
# one writes a row fewer (sandbox/8/prod/agg)
for run, path, drop in (("cpu", "prod/agg", False), ("gpu", "sandbox/7/prod/agg", False),
                        ("bad", "sandbox/8/prod/agg", True)):
    import os

    logs = f"{out}/eventlogs/{run}"
    os.makedirs(logs, exist_ok=True)
    s = (
        SparkSession.builder.master("local[2]")
        .appName(f"validate_run_{run}")
        .config("spark.ui.enabled", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", logs)
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    df = s.range(0, 1000, 1, 2).withColumn("grp", (F.col("id") % 4).cast("int"))
    if drop:
        df = df.filter(F.col("id") != 500)
    df.groupBy("grp").agg(F.count("*").alias("n"), F.sum("id").alias("s")).write.mode(
        "overwrite"
    ).parquet(f"{out}/{path}_summary")
    df.write.mode("overwrite").partitionBy("grp").parquet(f"{out}/{path}")
    s.stop()
