#!/usr/bin/env python3
"""Make the Spark 3.5 fixture logs of datasets/fixtures/spark-3.5/ with a real pyspark 3.5.

Runs the shared generator (../shared/tools/spark-logs/gen_logs.py: its python_udf and pandas_udf
workloads, Spark's REST ground truth per app) plus one workload of aether's own:
`sql_executor_lost`, a SQL query whose map stage loses an executor (SIGKILL) after it finished
some tasks, so Spark re-runs them: TaskEnd events with reason `Resubmitted` (whose TaskInfo still
says the attempt succeeded), an ExecutorLostFailure, a replacement executor.

Set-up (once): python3 -m venv /tmp/venv35 && /tmp/venv35/bin/pip install "pyspark==3.5.*"
"pandas<3" pyarrow tpchgen-cli; tpchgen-cli parquet -s 0.1 --output-dir=/tmp/tpch-sf0.1
Usage: SPARK_LOCAL_IP=127.0.0.1 /tmp/venv35/bin/python scripts/spark-logs/gen-spark35-fixtures.py \
         --out /tmp/spark35-logs --data /tmp/tpch-sf0.1 [--apps python_udf,pandas_udf,sql_executor_lost]
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "shared", "tools", "spark-logs"))
import gen_logs  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import LongType  # noqa: E402


def w_sql_executor_lost(spark, facts):
    import signal
    import threading

    sc = spark.sparkContext
    t_wait = time.time()  # both executor JVMs registered (<= 60 s)
    while len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1 < 2 and time.time() - t_wait < 60:
        time.sleep(0.5)
    facts["executors_registered_before_job"] = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1

    def slow(x):
        import time as _t
        _t.sleep(0.25)
        return x

    slow_udf = F.udf(slow, LongType())
    killed = {}

    def killer():
        # executor 1 dies mid-stage once it has finished two of the 1-second map tasks
        t0 = time.time()
        while time.time() - t0 < 120:
            execs = gen_logs.rest(4050, f"applications/{sc.applicationId}/executors")
            done = {e["id"]: e["completedTasks"] for e in execs}
            if list(sc.statusTracker().getActiveStageIds()) and done.get("1", 0) >= 2:
                pids = gen_logs._executor_pids(sc.applicationId, 1)
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                killed["pids"] = pids
                killed["after_s"] = round(time.time() - t0, 2)
                return
            time.sleep(0.2)

    th = threading.Thread(target=killer)
    th.start()
    sc.setJobDescription("SQL aggregate; executor 1 is SIGKILLed during the map stage")
    df = spark.range(0, 96, 1, 24).select(slow_udf("id").alias("v"))
    rows = df.groupBy((F.col("v") % 8).alias("k")).agg(F.count("*").alias("n"), F.sum("v").alias("s")).collect()
    th.join()
    facts.update(gen_logs.result_facts(rows))
    facts["killed_executor_pids"] = len(killed.get("pids", []))
    facts["kill_after_s"] = killed.get("after_s")
    facts["result_sum"] = sum(r["s"] for r in rows)  # 4560


gen_logs.app("sql_executor_lost", "sql_executor_lost", w_sql_executor_lost,
             {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "4"},
             master="local-cluster[2,1,1024]")

if __name__ == "__main__":
    if "--apps" not in sys.argv:
        sys.argv += ["--apps", "python_udf,pandas_udf,sql_executor_lost"]
    gen_logs.main()
