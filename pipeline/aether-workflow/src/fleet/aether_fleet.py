"""aether's fleet driver: one aether command fanned out over N shards of the logs, one Spark
task per shard, on any Spark (EMR, YARN, Kubernetes, local).

    spark-submit --archives aether-bundle.tar#aether aether_fleet.py --shards N \
        -- ingest s3://logs/ --out s3://warehouse/

Each task runs `aether <command…> --shard i/N` as a subprocess (the binary from the `aether`
archive, with libxgboost.so beside it, or --binary) and fails when it exits non-zero, so Spark
retries it (spark.task.maxFailures); a retried shard redoes nothing, because aether skips the
logs the warehouse already holds. The driver prints one JSON line per shard (its exit status,
attempt, seconds and the summary line aether printed) and a total, and exits non-zero when a
shard failed every attempt. Shipped with aether (`aether fleet driver`); not meant to be edited.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def find_binary(given):
    """The aether binary on this executor: --binary, the unpacked `aether` archive (the
    container's working directory on YARN, SparkFiles elsewhere), or aether on PATH."""
    if given:
        return given
    candidates = [os.path.join(os.getcwd(), "aether", "aether")]
    try:
        from pyspark import SparkFiles
        candidates.append(os.path.join(SparkFiles.getRootDirectory(), "aether", "aether"))
    except Exception:
        pass
    for c in candidates:
        if os.path.isfile(c):
            return c
    found = shutil.which("aether")
    if found:
        return found
    raise RuntimeError("no aether binary: ship it with --archives aether-bundle.tar#aether, "
                       f"or give --binary (looked in {', '.join(candidates)} and PATH)")


def runnable(binary):
    """A copy that can be executed (archives and --files may be unpacked without the
    executable bit or on a noexec mount), with the libraries beside it; the third item is the
    temporary folder of the copy (None when the binary runs where it is), for the caller to
    remove once aether exits."""
    if os.access(binary, os.X_OK):
        return binary, os.path.dirname(binary), None
    d = tempfile.mkdtemp(prefix="aether-fleet-")
    for name in os.listdir(os.path.dirname(binary)):
        src = os.path.join(os.path.dirname(binary), name)
        if os.path.isfile(src):
            shutil.copy(src, d)
    exe = os.path.join(d, os.path.basename(binary))
    os.chmod(exe, 0o755)
    return exe, d, d


def run_shard(index, shards, command, binary, timeout_s):
    from pyspark import TaskContext
    ctx = TaskContext.get()
    attempt = ctx.attemptNumber() if ctx else 0
    exe, libs, copy = runnable(find_binary(binary))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (libs, env.get("LD_LIBRARY_PATH", "")) if p)
    cmd = [exe] + list(command) + ["--shard", f"{index}/{shards}"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"shard {index}/{shards}: aether did not finish within {timeout_s} s")
    finally:
        # the copy (a binary of ~200 MB) would otherwise stay in the executor's temp folder
        if copy:
            shutil.rmtree(copy, ignore_errors=True)
    err = p.stderr.decode(errors="replace").strip().splitlines()
    summary = next((l for l in reversed(err) if l.startswith(("ingested ", "qualified "))),
                   err[-1] if err else "")
    if p.returncode != 0:
        # a failed task: Spark runs it again (the shard's finished logs are skipped then)
        tail = "\n".join(err[-8:])
        raise RuntimeError(
            f"shard {index}/{shards} attempt {attempt}: {' '.join(cmd)} exited {p.returncode}\n{tail}")
    return {"shard": index, "shards": shards, "attempt": attempt, "exit": p.returncode,
            "seconds": round(time.time() - t0, 3), "summary": summary}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shards", type=int, required=True, help="N: one task per shard")
    p.add_argument("--binary", help="the aether binary (default: the `aether` archive)")
    p.add_argument("--timeout_s", type=int, default=6 * 3600, help="per shard")
    p.add_argument("--summary", help="also write the shards' JSON lines to this local file")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- then the aether command, e.g. -- ingest s3://logs/ --out s3://wh/")
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if a.shards < 1 or not command:
        p.error("give --shards N (N >= 1) and, after --, the aether command to run per shard")
    if "--shard" in command:
        p.error("the command must not set --shard: each task adds its own")

    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName(f"aether fleet {command[0]} x{a.shards}").getOrCreate()
    sc = spark.sparkContext
    shards, binary, timeout_s = a.shards, a.binary, a.timeout_s
    t0 = time.time()
    try:
        results = (sc.parallelize(range(shards), shards)
                   .mapPartitionsWithIndex(
                       lambda i, _: [run_shard(i, shards, command, binary, timeout_s)])
                   .collect())
    except Exception as e:  # a shard failed every attempt: say which, exit non-zero
        msg = str(e)
        cause = next((l for l in msg.splitlines() if "shard " in l and " exited " in l), msg[-2000:])
        print(json.dumps({"failed": True, "error": cause}), flush=True)
        spark.stop()
        return 1
    results.sort(key=lambda r: r["shard"])
    lines = [json.dumps(r) for r in results]
    lines.append(json.dumps({"shards": shards, "retried": sum(r["attempt"] > 0 for r in results),
                             "seconds": round(time.time() - t0, 3)}))
    for l in lines:
        print(l, flush=True)
    if a.summary:
        with open(a.summary, "w") as f:
            f.write("\n".join(lines) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
