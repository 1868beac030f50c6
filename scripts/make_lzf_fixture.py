#!/usr/bin/env python3
"""Write a small real Spark event log compressed with Spark's LZF codec (ning compress-lzf),
for the codec tests: datasets/fixtures/lzf/<appId>.lzf, plus a JSON record of what Spark counted.

Usage: SPARK_LOCAL_IP=127.0.0.1 python3 scripts/make_lzf_fixture.py  (needs pyspark: scripts/setup --test puts it in .venv)
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
# Spark's own numbers, from its live REST API (as the shared datasets' ground truth)
import urllib.request
ui = spark.sparkContext.uiWebUrl
spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
def api(path):
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app_id}/{path}") as r:
        return json.load(r)
jobs = api("jobs")
stages = api("stages")
gt = {"gt_jobs": len(jobs),
      "gt_jobs_succeeded": sum(j["status"] == "SUCCEEDED" for j in jobs),
      "gt_stage_attempts": len(stages),
      "gt_stages_complete": sum(s["status"] == "COMPLETE" for s in stages),
      "gt_stages_skipped": sum(s["status"] == "SKIPPED" for s in stages),
      "gt_tasks_completed": sum(s["numCompleteTasks"] for s in stages),
      "gt_sum_executorRunTime": sum(s["executorRunTime"] for s in stages),
      "gt_sum_shuffleWriteRecords": sum(s["shuffleWriteRecords"] for s in stages),
      "gt_sum_shuffleReadRecords": sum(s["shuffleReadRecords"] for s in stages),
      "gt_sql_executions": len(api("sql"))}
spark.stop()
src = [f for f in os.listdir(tmp) if f.startswith(app_id)]
assert src == [app_id + ".lzf"], src
shutil.copy(os.path.join(tmp, src[0]), os.path.join(out_dir, src[0]))
with open(os.path.join(out_dir, "record.json"), "w") as f:
    json.dump({"app_id": app_id, "app_name": "lzf_fixture", "spark_version": spark.version,
               "result_rows": len(rows), "ground_truth": gt}, f, indent=1)
print(app_id)
