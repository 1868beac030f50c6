"""Make the CPU/GPU event-log pairs of tests/golden/validate-phase: one Spark job run seven
times (pyspark 3.5, local mode): the reference run, an identical rerun, and five runs that
really differ from it at one point of the data flow each.

    python3 make_pairs.py OUT_DIR     # writes OUT_DIR/<name>.zstd and OUT_DIR/INDEX.tsv

The job reads orders (Parquet, 4 files) and customers, filters the orders, joins them to the
customers (a sort-merge join: broadcasts off), aggregates per region and writes the result as
Parquet. The variants:
- clean: the same job again (no divergence);
- scan: the orders folder holds one more file (rows read differ);
- shuffle: a changed filter before the join's exchange (records shuffled differ);
- join: a left join instead of an inner one (orders of unknown customers kept);
- aggregate: grouped by status instead of region (the partial aggregate's rows differ);
- output: the groups of fewer than 2,500 orders dropped before the write (rows written differ).
"""
import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession, functions as F

out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
work = tempfile.mkdtemp(prefix="validate-phase-")
logs = os.path.join(work, "logs")
os.makedirs(logs)


def session(name):
    return (
        SparkSession.builder.master("local[2]")
        .appName(name)
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", logs)
        .config("spark.eventLog.compress", "true")
        .config("spark.eventLog.compression.codec", "zstd")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


# the inputs, written once (by a session without an event log)
spark = (
    SparkSession.builder.master("local[2]")
    .appName("inputs")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
orders = os.path.join(work, "orders")
customers = os.path.join(work, "customers")
(
    spark.range(0, 200_000, 1, 4)
    .select(
        F.col("id").alias("order_id"),
        (F.col("id") % 1100).alias("cust"),
        ((F.col("id") * 7919) % 100).cast("double").alias("amount"),
        F.element_at(F.array(F.lit("open"), F.lit("paid"), F.lit("shipped")), (F.col("id") % 3 + 1).cast("int")).alias("status"),
    )
    .write.parquet(orders)
)
(
    spark.range(0, 1000, 1, 1)
    .select(
        F.col("id").alias("cust"),
        F.element_at(
            F.array(*[F.lit(r) for r in ["north", "south", "east", "west", "centre"]]),
            (F.col("id") % 5 + 1).cast("int"),
        ).alias("region"),
    )
    .write.parquet(customers)
)
orders_more = os.path.join(work, "orders_more")
shutil.copytree(orders, orders_more)
spark.range(200_000, 210_000, 1, 1).select(
    F.col("id").alias("order_id"),
    (F.col("id") % 1100).alias("cust"),
    ((F.col("id") * 7919) % 100).cast("double").alias("amount"),
    F.lit("open").alias("status"),
).write.mode("append").parquet(orders_more)
spark.stop()

index = []
for name in ["cpu", "clean", "scan", "shuffle", "join", "aggregate", "output"]:
    spark = session(f"validate-phase {name}")
    o = spark.read.parquet(orders_more if name == "scan" else orders)
    c = spark.read.parquet(customers)
    o = o.filter(F.col("amount") > (50 if name == "shuffle" else 10))
    j = o.join(c, "cust", "left" if name == "join" else "inner")
    key = "status" if name == "aggregate" else "region"
    a = j.groupBy(key).agg(F.sum("amount").alias("total"), F.count("*").alias("orders"))
    if name == "output":
        a = a.filter(F.col("orders") >= 35_000)
    a.write.mode("overwrite").parquet(os.path.join(work, "result", name))
    app = spark.sparkContext.applicationId
    spark.stop()
    src = os.path.join(logs, app + ".zstd")
    shutil.copy(src, os.path.join(out, name + ".zstd"))
    index.append(f"{name}.zstd\t{app}")
    print(name, app, flush=True)

with open(os.path.join(out, "INDEX.tsv"), "w") as f:
    f.write("\n".join(index) + "\n")
shutil.rmtree(work)
