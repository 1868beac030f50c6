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
}


def main():
    base, out = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(VARIANTS)
    with open(base) as f:
        lines = f.read().splitlines()
    os.makedirs(out, exist_ok=True)
    for name in names:
        suffix, _, edit = VARIANTS[name]
        app = BASE_APP[: -len(suffix)] + suffix
        events = [json.loads(l.replace(BASE_APP, app)) for l in lines if l.strip()]
        edit(events)
        path = os.path.join(out, name)
        with open(path, "w") as f:
            for e in events:
                f.write(json.dumps(e, separators=(",", ":")) + "\n")
        subprocess.run(["zstd", "-q", "-f", "-19", "--rm", path, "-o", path + ".zstd"], check=True)
        print(f"{path}.zstd\t{app}\t{VARIANTS[name][1]}")


if __name__ == "__main__":
    main()
