"""Make the AutoTuner rule variants of tests/golden/autotuner-variants: copies of one real GPU
event log, each edited so that one profiling AutoTuner rule fires.

The base is the reference tool's own test log `eventlog_minimal_events` (Spark 3.1.1, local
mode, RAPIDS plugin enabled; a GpuScan csv in stages 6 and 8, GpuColumnarExchanges), from the
shared datasets. Each variant gets its own application id (the base's with the last digits
replaced), so that the reference profiler writes one folder and one `App ID:` block per variant.

    python3 make_variants.py BASE_LOG OUT_DIR [NAME ...]   # writes OUT_DIR/<name>.zstd

Then `../shared/tools/anchor/profile.sh` on the written logs gives the reference's answers
(README.md says how they were made and kept). Standard library + the `zstd` command only.
"""
import copy
import json
import os
import subprocess
import sys

BASE_APP = "local-1619631016646"

GPU_OOM_TRACE = (
    "com.nvidia.spark.rapids.jni.GpuSplitAndRetryOOM: GPU OutOfMemory: could not split inputs "
    "and retry. The current attempt: {HostMemoryBuffer{address=0x7fac24b85210, length=729491223, "
    "id=974}}\n\tat com.nvidia.spark.rapids.RmmRapidsRetryIterator$AutoCloseableAttemptSpliterator"
    ".split(RmmRapidsRetryIterator.scala:468)\n"
)
CONTAINER_OOM = (
    "ExecutorLostFailure (executor 2 exited caused by one of the running tasks) Reason: Container "
    "from a bad node: container_e02_1701368813061_0008_01_000003 on host: ip-10-0-0-12. "
    "Exit status: 137. Diagnostics: [2024-11-02 10:12:31.511]Container killed on request. "
    "Exit code is 137"
)


def props(events, set_=None, unset=()):
    """Edit the Spark properties of the EnvironmentUpdate."""
    for e in events:
        if e["Event"] == "SparkListenerEnvironmentUpdate":
            p = e["Spark Properties"]
            for k in unset:
                p.pop(k, None)
            p.update(set_ or {})


def failed_task(events, stage, reason, task_id):
    """Add a failed first attempt (TaskStart + TaskEnd) before the first task of `stage`."""
    for i, e in enumerate(events):
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] == stage:
            end = copy.deepcopy(e)
            info = end["Task Info"]
            info["Task ID"] = task_id
            info["Failed"] = True
            info["Finish Time"] = info["Launch Time"] + 5
            info["Accumulables"] = []
            end["Task End Reason"] = reason
            start = {
                "Event": "SparkListenerTaskStart",
                "Stage ID": stage,
                "Stage Attempt ID": e["Stage Attempt ID"],
                "Task Info": dict(info, **{"Failed": False, "Finish Time": 0}),
            }
            events[i:i] = [start, end]
            return
    raise SystemExit(f"no task of stage {stage} in the base log")


def exception(class_name, trace):
    return {
        "Reason": "ExceptionFailure",
        "Class Name": class_name,
        "Description": trace.split(": ", 1)[1].split("\n")[0],
        "Stack Trace": [],
        "Full Stack Trace": trace,
        "Accumulator Updates": [],
    }


def scale_accum(events, name, factor):
    """Multiply every value of the task and stage accumulables called `name`."""
    for e in events:
        infos = []
        if e["Event"] == "SparkListenerTaskEnd":
            infos = e["Task Info"].get("Accumulables", [])
        elif e["Event"] == "SparkListenerStageCompleted":
            infos = e["Stage Info"].get("Accumulables", [])
        for a in infos:
            if a.get("Name") == name:
                for k in ("Update", "Value"):
                    if k in a:
                        a[k] = str(int(a[k]) * factor)


def rename_stage(events, stage, name):
    for e in events:
        if e["Event"] in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
            if e["Stage Info"]["Stage ID"] == stage:
                e["Stage Info"]["Stage Name"] = name
        if e["Event"] == "SparkListenerJobStart":
            for s in e.get("Stage Infos", []):
                if s["Stage ID"] == stage:
                    s["Stage Name"] = name


def fail_stage(events, stage, reason):
    for e in events:
        if e["Event"] == "SparkListenerStageCompleted" and e["Stage Info"]["Stage ID"] == stage:
            e["Stage Info"]["Failure Reason"] = reason


ACCUM = {
    ("JVM GC Time",): "internal.metrics.jvmGCTime",
    ("Executor CPU Time",): "internal.metrics.executorCpuTime",
    ("Memory Bytes Spilled",): "internal.metrics.memoryBytesSpilled",
    ("Disk Bytes Spilled",): "internal.metrics.diskBytesSpilled",
    ("Input Metrics", "Bytes Read"): "internal.metrics.input.bytesRead",
    ("Shuffle Read Metrics", "Local Bytes Read"): "internal.metrics.shuffle.read.localBytesRead",
    ("Shuffle Read Metrics", "Remote Bytes Read"): "internal.metrics.shuffle.read.remoteBytesRead",
}


def task_metric(events, stage, path, value, task=None):
    """Set a task metric of the tasks of `stage` (or of one task), in its Task Metrics and in
    the matching internal.metrics accumulable."""
    for e in events:
        if e["Event"] != "SparkListenerTaskEnd" or e["Stage ID"] != stage:
            continue
        if task is not None and e["Task Info"]["Task ID"] != task:
            continue
        m = e["Task Metrics"]
        for k in path[:-1]:
            m = m[k]
        m[path[-1]] = value
        for a in e["Task Info"].get("Accumulables", []):
            if a.get("Name") == ACCUM.get(path):
                a["Update"] = value
                a["Value"] = value


def clone_tasks(events, stage, n, first_id):
    """Add n copies of the first task of `stage` (new task ids and indexes)."""
    for i, e in enumerate(events):
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] == stage:
            out = []
            for k in range(n):
                end = copy.deepcopy(e)
                end["Task Info"]["Task ID"] = first_id + k
                end["Task Info"]["Index"] = e["Task Info"]["Index"] + 1 + k
                start = {
                    "Event": "SparkListenerTaskStart",
                    "Stage ID": stage,
                    "Stage Attempt ID": e["Stage Attempt ID"],
                    "Task Info": dict(end["Task Info"], **{"Finish Time": 0}),
                }
                out += [start, end]
            events[i + 1 : i + 1] = out
            return list(range(first_id, first_id + n))
    raise SystemExit(f"no task of stage {stage} in the base log")


def spark_version(events, v):
    for e in events:
        if e["Event"] == "SparkListenerLogStart":
            e["Spark Version"] = v


def classpath(events, jar):
    for e in events:
        if e["Event"] == "SparkListenerEnvironmentUpdate":
            e["Classpath Entries"][jar] = "System Classpath"


def rename_jars(events, old, new):
    """Rename the plugin jar everywhere it is named (properties, classpath)."""
    for e in events:
        if e["Event"] == "SparkListenerEnvironmentUpdate":
            for sec in ("Spark Properties", "Classpath Entries"):
                e[sec] = {k.replace(old, new): v.replace(old, new) for k, v in e[sec].items()}


def system_prop(events, k, v):
    for e in events:
        if e["Event"] == "SparkListenerEnvironmentUpdate":
            e["System Properties"][k] = v


def skewed_spill(ev):
    ids = clone_tasks(ev, 7, 4, 910)
    for t in ids:
        task_metric(ev, 7, ("Shuffle Read Metrics", "Local Bytes Read"), 1 << 20, task=t)
    task_metric(ev, 7, ("Shuffle Read Metrics", "Local Bytes Read"), 300 << 20, task=7)
    task_metric(ev, 7, ("Memory Bytes Spilled",), 1 << 30, task=7)


def add_cache_scan(events, sql=2):
    """Give SQL `sql`'s plan a cached-table scan (an InMemoryTableScan leaf under its root)."""
    for e in events:
        if e["Event"].endswith("SQLExecutionStart") and e["executionId"] == sql:
            e["sparkPlanInfo"]["children"].append(
                {
                    "nodeName": "InMemoryTableScan",
                    "simpleString": "InMemoryTableScan [value#0]",
                    "children": [],
                    "metadata": {},
                    "metrics": [],
                }
            )
            return
    raise SystemExit(f"no SQL {sql} in the base log")



def rdd_scope(events, stage, name):
    """Name the operation scope of `stage`'s first RDD `name` (in its JobStart, StageSubmitted
    and StageCompleted infos), with no plan node to match."""
    found = False
    for e in events:
        infos = e.get("Stage Infos", []) + ([e["Stage Info"]] if "Stage Info" in e else [])
        for info in infos:
            if info.get("Stage ID") == stage and info.get("RDD Info"):
                scope = json.loads(info["RDD Info"][0]["Scope"])
                scope["name"] = name
                info["RDD Info"][0]["Scope"] = json.dumps(scope, separators=(",", ":"))
                found = True
    if not found:
        raise SystemExit(f"no RDD of stage {stage} in the base log")


def parquet_rereads(events):
    """Make every file scan read the same Parquet location, 60 GB each time: the same files read
    over and over (the file cache rule). The plan's text, its nodes and the scans' driver-side
    "size of files read" all say so."""
    loc = "s3://bucket/warehouse/events"
    old = [
        "file:/home/user2/spark-3.1.1/spark-3.1.1-bin-hadoop3.2/media_touchpoints.tsv",
        "file:/home/user2/spark-3.1.1/spark-3.1.1-bin-hadoop3.2/customer_events.tsv",
    ]
    names = {"Scan text": "Scan parquet", "GpuScan csv": "GpuScan parquet"}
    size_ids = set()

    def retext(t):
        for o in old:
            t = t.replace(o, loc)
        for a, b in [
            ("FileScan text", "FileScan parquet"),
            ("GpuFileGpuScan csv", "GpuFileGpuScan parquet"),
            ("Format: Text", "Format: Parquet"),
            ("Format: CSV", "Format: Parquet"),
        ]:
            t = t.replace(a, b)
        return t

    def walk(n, sql):
        if n["nodeName"].strip() in names:
            n["nodeName"] = names[n["nodeName"].strip()]
            n["simpleString"] = retext(n["simpleString"])
            n["metadata"] = {k: retext(v) for k, v in n["metadata"].items()}
            if "Format" in n["metadata"]:
                n["metadata"]["Format"] = "Parquet"
            for m in n["metrics"]:
                if m["name"] == "size of files read":
                    size_ids.add(m["accumulatorId"])
        for c in n["children"]:
            walk(c, sql)

    for e in events:
        if e["Event"].endswith("SQLExecutionStart"):
            text = e["physicalPlanDescription"]
            for o in old:
                text = text.replace(o, loc)
            for a, b in names.items():
                text = text.replace(a, b)
            e["physicalPlanDescription"] = text
            walk(e["sparkPlanInfo"], e["executionId"])
    # AQE re-plans the two GPU queries once each (the same plan): each scan is listed again
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if e["Event"].endswith("SQLExecutionStart") and e["executionId"] in (4, 5):
            events.insert(
                i + 1,
                {
                    "Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveExecutionUpdate",
                    "executionId": e["executionId"],
                    "physicalPlanDescription": e["physicalPlanDescription"],
                    "sparkPlanInfo": copy.deepcopy(e["sparkPlanInfo"]),
                },
            )
    for e in events:
        if e["Event"].endswith("DriverAccumUpdates"):
            e["accumUpdates"] = [
                [i, 60_000_000_000 if i in size_ids else v] for i, v in e["accumUpdates"]
            ]


def plugin_per_job(events, plugins):
    """The SQL plugin set per job (the first job's properties) instead of in the environment."""
    props(events, {"spark.plugins": plugins} if plugins else None, unset=() if plugins else ("spark.plugins",))
    for e in events:
        if e["Event"] == "SparkListenerJobStart":
            e.setdefault("Properties", {})["spark.plugins"] = "com.nvidia.spark.SQLPlugin"
            return


FOOTPRINTS = [1073741824, 536870912, 268435456, 805306368, 134217728]


def footprints(events, batch):
    """Plugin 25.08 with the per-task GPU memory footprint the plugin records
    (gpuMaxTaskFootprint) in stage 7's five tasks, and the run's batch size."""
    rename_jars(events, "rapids-4-spark_2.12-0.6.0-SNAPSHOT", "rapids-4-spark_2.12-25.08.0")
    if batch:
        props(events, {"spark.rapids.sql.batchSizeBytes": batch})
    ids = clone_tasks(events, 7, 4, 910)
    values = dict(zip([7] + ids, FOOTPRINTS))
    for e in events:
        if e["Event"] == "SparkListenerTaskEnd" and e["Task Info"]["Task ID"] in values:
            v = str(values[e["Task Info"]["Task ID"]])
            e["Task Info"]["Accumulables"].append(
                {
                    "ID": 90001,
                    "Name": "gpuMaxTaskFootprint",
                    "Update": v,
                    "Value": v,
                    "Internal": False,
                    "Count Failed Values": True,
                }
            )
        if e["Event"] == "SparkListenerStageCompleted" and e["Stage Info"]["Stage ID"] == 7:
            e["Stage Info"].setdefault("Accumulables", []).append(
                {
                    "ID": 90001,
                    "Name": "gpuMaxTaskFootprint",
                    "Value": str(max(FOOTPRINTS)),
                    "Internal": False,
                    "Count Failed Values": True,
                }
            )


PYTHON_OOM = (
    "Job aborted due to stage failure: Task 0 in stage 6.0 failed 4 times, most recent failure: "
    "Lost task 0.3 in stage 6.0 (TID 9) (host1.net executor driver): "
    "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
    '  File "/opt/spark/python/pyspark/worker.py", line 1247, in main\n'
    "    process()\n"
    "MemoryError\n"
)


def python_oom(events, version=None):
    """A stage failed on Python workers running out of memory, with 2g of PySpark memory."""
    props(events, {"spark.executor.pyspark.memory": "2g"})
    fail_stage(events, 6, PYTHON_OOM)
    if version:
        spark_version(events, version)


KRYO = "org.apache.spark.serializer.KryoSerializer"

# name -> (app id suffix, what the variant is for, edit)
VARIANTS = {
    "kryo": (
        "01",
        "Kryo serializer, no registrator, no buffer.max: the GPU registrator and a 512m buffer added",
        lambda ev: props(ev, {"spark.serializer": KRYO}),
    ),
    "kryo-registrator-set": (
        "02",
        "Kryo with the user's own registrator and a 128m buffer: GpuKryoRegistrator appended, buffer raised",
        lambda ev: props(
            ev,
            {
                "spark.serializer": KRYO,
                "spark.kryo.registrator": "com.example.MyKryoRegistrator",
                "spark.kryoserializer.buffer.max": "128m",
            },
        ),
    ),
    "kryo-done": (
        "03",
        "Kryo with GpuKryoRegistrator already listed and a 1g buffer: nothing to add",
        lambda ev: props(
            ev,
            {
                "spark.serializer": KRYO,
                "spark.kryo.registrator": "com.example.A, com.nvidia.spark.rapids.GpuKryoRegistrator",
                "spark.kryoserializer.buffer.max": "1g",
            },
        ),
    ),
    "scan-gpu-oom": (
        "04",
        "a scan-stage task failed on GpuSplitAndRetryOOM, maxPartitionBytes 1g: halved",
        lambda ev: (
            props(ev, {"spark.sql.files.maxPartitionBytes": "1g"}),
            failed_task(
                ev, 6, exception("com.nvidia.spark.rapids.jni.GpuSplitAndRetryOOM", GPU_OOM_TRACE), 900
            ),
        ),
    ),
    "scan-gpu-oom-unset": (
        "05",
        "a scan-stage GPU OOM with maxPartitionBytes left unset",
        lambda ev: failed_task(
            ev, 6, exception("com.nvidia.spark.rapids.jni.GpuSplitAndRetryOOM", GPU_OOM_TRACE), 900
        ),
    ),
    "nonscan-gpu-oom": (
        "06",
        "a GPU OOM in a stage with no scan (stage 7), maxPartitionBytes 1g: not a scan OOM",
        lambda ev: (
            props(ev, {"spark.sql.files.maxPartitionBytes": "1g"}),
            failed_task(
                ev, 7, exception("com.nvidia.spark.rapids.jni.GpuRetryOOM", GPU_OOM_TRACE.replace("GpuSplitAndRetryOOM", "GpuRetryOOM")), 900
            ),
        ),
    ),
    "exchange-data-size": (
        "07",
        "GpuColumnarExchange data size scaled to ~1.3 TB: shuffle partitions from size / batch size",
        lambda ev: scale_accum(ev, "data size", 2_000_000_000),
    ),
    "container-oom-yarn": (
        "08",
        "YARN: a failed GpuShuffleExchangeExec stage whose task was killed (exit 137): partitions doubled",
        lambda ev: (
            props(ev, {"spark.master": "yarn"}),
            rename_stage(ev, 6, "submitShuffleJob$ at GpuShuffleExchangeExec.scala:53"),
            fail_stage(ev, 6, "Job aborted due to stage failure: " + CONTAINER_OOM),
            failed_task(
                ev,
                6,
                {
                    "Reason": "ExecutorLostFailure",
                    "Executor ID": "2",
                    "Exit Caused By App": True,
                    "Loss Reason": CONTAINER_OOM.split("Reason: ", 1)[1],
                },
                900,
            ),
        ),
    ),
    "dynalloc": (
        "09",
        "dynamic allocation on, 4-core executors, initial 2 / min 1 / max 8: scaled by the cores ratio",
        lambda ev: props(
            ev,
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.executor.cores": "4",
                "spark.dynamicAllocation.initialExecutors": "2",
                "spark.dynamicAllocation.minExecutors": "1",
                "spark.dynamicAllocation.maxExecutors": "8",
            },
        ),
    ),
    "dynalloc-invariants": (
        "10",
        "dynamic allocation with 32-core executors and min > max: min pulled under max",
        lambda ev: props(
            ev,
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.executor.cores": "32",
                "spark.dynamicAllocation.minExecutors": "10",
                "spark.dynamicAllocation.maxExecutors": "4",
            },
        ),
    ),
    "dynalloc-off": (
        "11",
        "dynamic allocation off with min/max set: removed",
        lambda ev: props(
            ev,
            {
                "spark.dynamicAllocation.enabled": "false",
                "spark.dynamicAllocation.minExecutors": "2",
                "spark.dynamicAllocation.maxExecutors": "20",
            },
        ),
    ),
    "offheap-low-memory": (
        "12",
        "8g off-heap on a g6.4xlarge: not enough memory left for the executor",
        lambda ev: props(
            ev, {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "8g"}
        ),
    ),
    "offheap-low-memory-yarn": (
        "13",
        "the same on YARN (memoryOverhead unresolved too)",
        lambda ev: props(
            ev,
            {
                "spark.master": "yarn",
                "spark.memory.offHeap.enabled": "true",
                "spark.memory.offHeap.size": "8g",
            },
        ),
    ),
    "offheap-some": (
        "14",
        "2g off-heap: memory still fits, pinned pool smaller",
        lambda ev: props(
            ev, {"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "2g"}
        ),
    ),
    "file-encoding": (
        "15",
        "JVM file.encoding ISO-8859-1: the UTF-8 comment",
        lambda ev: system_prop(ev, "file.encoding", "ISO-8859-1"),
    ),
    "delta-old": (
        "16",
        "Delta Lake session extension with delta-core 2.4.0 on the classpath: upgrade comment",
        lambda ev: (
            props(
                ev,
                {
                    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,com.nvidia.spark.rapids.SQLExecPlugin",
                },
            ),
            classpath(ev, "/home/user2/.ivy2/jars/io.delta_delta-core_2.12-2.4.0.jar"),
        ),
    ),
    "delta-write-off": (
        "17",
        "Delta catalog, no delta jar, GPU delta writes disabled",
        lambda ev: props(
            ev,
            {
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "spark.rapids.sql.format.delta.write.enabled": "false",
            },
        ),
    ),
    "delta-new": (
        "18",
        "Delta Lake 3.3.0 (delta-spark jar): no upgrade comment",
        lambda ev: (
            props(ev, {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"}),
            classpath(ev, "/opt/jars/io.delta_delta-spark_2.12-3.3.0.jar"),
        ),
    ),
    "gc-heavy": (
        "19",
        "JVM GC time 60% of executor CPU time in every task: the GC comment",
        lambda ev: [
            task_metric(ev, s, ("JVM GC Time",), 600000)
            for s in range(10)
        ],
    ),
    "gc-no-cpu": (
        "20",
        "GC time with zero executor CPU time in one SQL's stages",
        lambda ev: (
            task_metric(ev, 6, ("Executor CPU Time",), 0),
            task_metric(ev, 7, ("Executor CPU Time",), 0),
            task_metric(ev, 6, ("JVM GC Time",), 5),
        ),
    ),
    "shuffle-spill": (
        "21",
        "1 GiB memory spill in a shuffle-read stage: shuffle partitions doubled",
        lambda ev: task_metric(ev, 7, ("Memory Bytes Spilled",), 1 << 30),
    ),
    "shuffle-skew-spill": (
        "22",
        "one reducer of stage 7 reads 300 MiB (4 others 1 MiB) and spills: the skew comment",
        skewed_spill,
    ),
    "aqe-off": (
        "23",
        "spark.sql.adaptive.enabled=false: the AQE comment, no AQE partition keys",
        lambda ev: props(ev, {"spark.sql.adaptive.enabled": "false"}),
    ),
    "spark-3.5.1": (
        "24",
        "Spark 3.5.1: the RAPIDS Shuffle Manager for spark351, minPartitionSize",
        lambda ev: spark_version(ev, "3.5.1"),
    ),
    "plugin-25.08": (
        "25",
        "RAPIDS plugin 25.08.0 jar: concurrentGpuTasks left to the plugin",
        lambda ev: rename_jars(ev, "rapids-4-spark_2.12-0.6.0-SNAPSHOT", "rapids-4-spark_2.12-25.08.0"),
    ),
    "plugin-two-versions": (
        "26",
        "two plugin jars (25.08.0 and 24.12.0) on the classpath",
        lambda ev: (
            rename_jars(ev, "rapids-4-spark_2.12-0.6.0-SNAPSHOT", "rapids-4-spark_2.12-25.08.0"),
            classpath(ev, "/opt/old/rapids-4-spark_2.12-24.12.0.jar"),
        ),
    ),
    "big-input": (
        "27",
        "a 1 GiB scan task and 10 MiB of shuffle read: maxPartitionBytes lowered, AQE parallelismFirst off",
        lambda ev: (
            task_metric(ev, 6, ("Input Metrics", "Bytes Read"), 1 << 30),
            task_metric(ev, 7, ("Shuffle Read Metrics", "Local Bytes Read"), 10 << 20),
        ),
    ),
    "broadcast-threshold": (
        "28",
        "autoBroadcastJoinThreshold 200m: the regression comment",
        lambda ev: props(ev, {"spark.sql.adaptive.autoBroadcastJoinThreshold": "200m"}),
    ),
    "broadcast-off": (
        "29",
        "autoBroadcastJoinThreshold -1 (broadcasts off)",
        lambda ev: props(ev, {"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"}),
    ),
    "gpu-amount-zero": (
        "30",
        "spark.executor.resource.gpu.amount 0.0, THP already off for the driver",
        lambda ev: props(
            ev,
            {
                "spark.executor.resource.gpu.amount": "0.0",
                "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:-UseTransparentHugePages",
            },
        ),
    ),
    "plugins-extra": (
        "31",
        "spark.plugins lists another plugin before the SQL plugin, shuffle partitions 64, AQE initial 500",
        lambda ev: props(
            ev,
            {
                "spark.plugins": "com.example.MetricsPlugin, com.nvidia.spark.SQLPlugin",
                "spark.sql.shuffle.partitions": "64",
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "500",
            },
        ),
    ),
    "cache-scan": (
        "32",
        "a cached-table scan (InMemoryTableScan) in a plan: the Parquet cache serializer",
        add_cache_scan,
    ),
    "cache-scan-custom": (
        "33",
        "a cached-table scan with the user's own cache serializer",
        lambda ev: (
            add_cache_scan(ev),
            props(ev, {"spark.sql.cache.serializer": "com.example.MyCachedBatchSerializer"}),
        ),
    ),
    "cache-scan-disabled": (
        "34",
        "a cached-table scan with GPU InMemoryTableScanExec disabled",
        lambda ev: (
            add_cache_scan(ev),
            props(ev, {"spark.rapids.sql.exec.InMemoryTableScanExec": "false"}),
        ),
    ),
    "cache-scan-3.5.1": (
        "35",
        "a cached-table scan on Spark 3.5.1",
        lambda ev: (add_cache_scan(ev), spark_version(ev, "3.5.1")),
    ),
    "no-executors": (
        "36",
        "spark.executor.instances=0: the cluster cannot be inferred, default comments",
        lambda ev: props(ev, {"spark.executor.instances": "0"}),
    ),
    "parquet-rereads": (
        "37",
        "every scan reads the same 60 GB Parquet location (the GPU plans re-planned once by AQE): the file cache comment",
        parquet_rereads,
    ),
    "plugin-per-job": (
        "38",
        "spark.plugins only in the first job's properties: the reference (26.08.4) recommends nothing",
        lambda ev: plugin_per_job(ev, None),
    ),
    "plugin-per-job-other": (
        "39",
        "the environment's spark.plugins names another plugin, the SQL plugin set per job",
        lambda ev: plugin_per_job(ev, "com.example.MetricsPlugin"),
    ),
    "pyspark-yarn": (
        "40",
        "YARN with 2g of PySpark memory: memory fits around it, spark.yarn.isPython",
        lambda ev: props(ev, {"spark.master": "yarn", "spark.executor.pyspark.memory": "2g"}),
    ),
    "pyspark-k8s": (
        "41",
        "Kubernetes with 2g of PySpark memory: spark.kubernetes.resource.type=python",
        lambda ev: props(
            ev, {"spark.master": "k8s://https://10.0.0.1:443", "spark.executor.pyspark.memory": "2g"}
        ),
    ),
    "databricks-runtime": (
        "42",
        "a Databricks runtime version property: the Databricks shuffle-manager comment",
        lambda ev: props(ev, {"spark.databricks.clusterUsageTags.sparkVersion": "13.3.x-gpu-ml-scala2.12"}),
    ),
    "footprint": (
        "43",
        "plugin 25.08, GPU task footprints up to 1 GiB, the target batch size: concurrentGpuTasks seeded",
        lambda ev: footprints(ev, "2147483647"),
    ),
    "footprint-batch-unset": (
        "44",
        "footprints, the run's batch size unset: no seed, the reason why",
        lambda ev: footprints(ev, None),
    ),
    "footprint-batch-1g": (
        "45",
        "footprints measured with 1g batches: no seed, the batch-size reason",
        lambda ev: footprints(ev, "1g"),
    ),
    "python-oom": (
        "46",
        "a stage failed on a Python MemoryError, 2g of PySpark memory (Spark 3.1.1)",
        lambda ev: python_oom(ev),
    ),
    "python-oom-3.5.7": (
        "47",
        "the same on Spark 3.5.7 (its procfs memory metrics trusted; the log has none)",
        lambda ev: python_oom(ev, "3.5.7"),
    ),
    "gc-sub-ms": (
        "48",
        "sub-millisecond tasks (0.9 ms of CPU each, 10 in one stage) and 1 ms of GC: "
        "CPU time summed per stage before it is cut to ms, so no GC comment",
        lambda ev: (
            clone_tasks(ev, 6, 9, 1000),
            task_metric(ev, 6, ("Executor CPU Time",), 900000),
            task_metric(ev, 7, ("Executor CPU Time",), 900000),
            task_metric(ev, 6, ("JVM GC Time",), 0),
            task_metric(ev, 6, ("JVM GC Time",), 1, task=6),
        ),
    ),
    "cache-scan-3.5.2-rc1": (
        "49",
        "a cached-table scan on Spark 3.5.2-rc1: a release candidate is below 3.5.2 (Maven's "
        "version order), so the Spark 3.5.0/3.5.1 cache comment",
        lambda ev: (add_cache_scan(ev), spark_version(ev, "3.5.2-rc1")),
    ),
    "cache-scan-3.5.0-rc1": (
        "50",
        "a cached-table scan on Spark 3.5.0-rc1: below 3.5.0, no Spark 3.5.0/3.5.1 cache comment",
        lambda ev: (add_cache_scan(ev), spark_version(ev, "3.5.0-rc1")),
    ),
    "cache-rdd-scope": (
        "51",
        "a stage's RDD ran in a TableCacheQueryStage scope, no cache node in any plan",
        lambda ev: rdd_scope(ev, 0, "TableCacheQueryStage"),
    ),
}


def write_variants(base, out, names, base_app, variants, text_edits=None):
    """Write each variant of `base` (its app id's last digits replaced by the variant's suffix)
    as OUT/<name>.zstd and print its INDEX.tsv line; `text_edits` may rewrite a variant's raw
    lines before its events are edited."""
    with open(base) as f:
        lines = f.read().splitlines()
    os.makedirs(out, exist_ok=True)
    for name in names:
        suffix, what, edit = variants[name]
        app = base_app[: -len(suffix)] + suffix
        text = [l.replace(base_app, app) for l in lines if l.strip()]
        if text_edits and name in text_edits:
            text = text_edits[name](text)
        events = [json.loads(l) for l in text]
        edit(events)
        path = os.path.join(out, name)
        with open(path, "w") as f:
            for e in events:
                f.write(json.dumps(e, separators=(",", ":")) + "\n")
        subprocess.run(["zstd", "-q", "-f", "-19", "--rm", path, "-o", path + ".zstd"], check=True)
        print(f"{name}.zstd\t{app}\t{what}")


def main():
    write_variants(sys.argv[1], sys.argv[2], sys.argv[3:] or list(VARIANTS), BASE_APP, VARIANTS)


if __name__ == "__main__":
    main()
