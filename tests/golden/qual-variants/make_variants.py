"""Make the qualification AutoTuner rule variants of tests/golden/qual-variants: copies of one
real CPU event log (TPC-H q3 on Spark 4.3.0, local mode, from the shared datasets), each edited
so that one rule of the qualification AutoTuner fires (the edits are those of
../autotuner-variants/make_variants.py, whose helpers this reuses).

    python3 make_variants.py BASE_LOG OUT_DIR [NAME ...]   # writes OUT_DIR/<name>.zstd
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "autotuner-variants"))
from make_variants import KRYO, classpath, props, write_variants  # noqa: E402

BASE_APP = "local-1796009671201"

VARIANTS = {
    "kryo": ("01", "Kryo serializer with the user's registrator and a 128m buffer", lambda ev: props(
        ev,
        {
            "spark.serializer": KRYO,
            "spark.kryo.registrator": "com.example.MyKryoRegistrator",
            "spark.kryoserializer.buffer.max": "128m",
        },
    )),
    "dynalloc": ("02", "dynamic allocation on, 4-core executors, initial 2 / min 1 / max 8", lambda ev: props(
        ev,
        {
            "spark.dynamicAllocation.enabled": "true",
            "spark.executor.cores": "4",
            "spark.dynamicAllocation.initialExecutors": "2",
            "spark.dynamicAllocation.minExecutors": "1",
            "spark.dynamicAllocation.maxExecutors": "8",
        },
    )),
    "dynalloc-off": ("03", "dynamic allocation off with min/max set", lambda ev: props(
        ev,
        {
            "spark.dynamicAllocation.enabled": "false",
            "spark.dynamicAllocation.minExecutors": "2",
            "spark.dynamicAllocation.maxExecutors": "20",
        },
    )),
    "offheap-some": ("04", "2g of off-heap memory", lambda ev: props(
        ev, {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "2g"}
    )),
    "offheap-low-memory": ("05", "8g of off-heap memory: not enough memory left", lambda ev: props(
        ev, {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "8g"}
    )),
    "pyspark-yarn": ("06", "YARN with 2g of PySpark memory", lambda ev: props(
        ev, {"spark.master": "yarn", "spark.executor.pyspark.memory": "2g"}
    )),
    "delta-old": ("07", "a Delta Lake session with delta-core 2.4.0", lambda ev: (
        props(ev, {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"}),
        classpath(ev, "/home/user/.ivy2/jars/io.delta_delta-core_2.13-2.4.0.jar"),
    )),
    "parquet-rereads": ("08", "every scan reads one 60 GB Parquet location: the file cache", lambda ev: parquet_rereads(ev)),
}


TABLES = ["customer", "orders", "lineitem"]


def parquet_rereads(events):
    """Point the three TPC-H tables the query scans at one Parquet location, each scan reading
    60 GB (its driver-side "size of files read"): the same files read over and over."""
    size_ids = set()

    def walk(n):
        for m in n.get("metrics", []):
            if m["name"] == "size of files read":
                size_ids.add(m["accumulatorId"])
        for c in n.get("children", []):
            walk(c)

    for e in events:
        if e["Event"].endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")):
            walk(e["sparkPlanInfo"])
    for e in events:
        if e["Event"].endswith("DriverAccumUpdates"):
            e["accumUpdates"] = [
                [i, 60_000_000_000 if i in size_ids else v] for i, v in e["accumUpdates"]
            ]


def same_location(text):
    """Every table of the query read from one Parquet location."""
    for t in TABLES:
        text = [l.replace(f"tpch-sf0.1/{t}.parquet", "tpch-sf0.1/events.parquet") for l in text]
    return text


def main():
    write_variants(
        sys.argv[1],
        sys.argv[2],
        sys.argv[3:] or list(VARIANTS),
        BASE_APP,
        VARIANTS,
        {"parquet-rereads": same_location},
    )


if __name__ == "__main__":
    main()
