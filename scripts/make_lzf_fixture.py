#!/usr/bin/env python3
"""Write a small real Spark event log compressed with Spark's LZF codec (ning compress-lzf),
for the codec tests: datasets/fixtures/lzf/<appId>.lzf, plus a JSON record of what Spark counted.

Usage: SPARK_LOCAL_IP=127.0.0.1 python3 scripts/make_lzf_fixture.py  (needs `pip install pyspark`)
"""
import json, os, shutil, sys, tempfile
from pyspark.sql import SparkSession

out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets", "fixtures", "lzf")
os.makedirs(out_dir, exist_ok=True)
tmp = tempfile.mkdtemp()
spark = (SparkSession.builder.master("local[2]").appName("lzf_fixture")
         .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", "file://" + tmp)
         .config("spark.eventLog.compress", "true").config("spark.eventLog.rolling.enabled", "false").config("spark.eventLog.compression.codec", "lzf")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.range(0, 200000).selectExpr("id % 97 AS k", "id AS v")
rows = df.groupBy("k").sum("v").orderBy("k").collect()
app_id = spark.sparkContext.applicationId
status = spark.sparkContext.statusTracker()
jobs = sorted(status.getJobIdsForGroup(None))
spark.stop()
src = [f for f in os.listdir(tmp) if f.startswith(app_id)]
assert src == [app_id + ".lzf"], src
shutil.copy(os.path.join(tmp, src[0]), os.path.join(out_dir, src[0]))
with open(os.path.join(out_dir, "record.json"), "w") as f:
    json.dump({"app_id": app_id, "app_name": "lzf_fixture", "result_rows": len(rows),
               "jobs": len(jobs), "spark_version": spark.version if hasattr(spark, "version") else None}, f, indent=1)
print(app_id)
