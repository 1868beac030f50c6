#!/usr/bin/env python3
"""A local EMR emulator for aether's tests and demos (never real AWS).

moto's EMR and S3 (in-process, on 127.0.0.1) plus what moto does not do:

- a ticker that actually runs each step: a `command-runner.jar` `spark-submit …` step is run with
  this machine's Spark (pyspark's spark-submit, `local[N]` instead of YARN), moving the step
  PENDING -> RUNNING -> COMPLETED / FAILED / CANCELLED with timestamps, one step at a time per
  cluster (EMR's default step concurrency), the cluster RUNNING while a step runs and WAITING after;
- s3:// paths in a step's arguments are mirrored: the objects under them are fetched before the
  step and what the step wrote under them is put back after it (so a job reads and writes the
  emulated S3 as it would on EMR);
- the step's stderr (with the YARN client's `Submitted application application_<ts>_<n>` line)
  and stdout go to `<LogUri>/<cluster>/steps/<step>/stderr.gz` / `stdout.gz`, and the Spark event
  log to the cluster's `spark.eventLog.dir` (its `spark-defaults` classification), named by the
  application id, in the layout asked for: `plain` (`application_…`), `attempt`
  (`application_…_1`), `rolling` (`eventlog_v2_application_…/events_N_…`) or `inprogress`;
- `CancelSteps` (moto answers 500) cancels a pending step and stops a running one; terminating a
  cluster cancels its steps and stops their processes; `GetAutoTerminationPolicy` and
  `ListInstanceFleets` answer what RunJobFlow asked for; a cluster idle for its policy's IdleTimeout (times `--time_scale`) is
  terminated, as EMR does;
- faults on demand: `POST /_emulator/faults` with `{"operation": "RunJobFlow", "status": 500,
  "code": "InternalFailure", "count": 1, "when": "before" | "after"}` answers the next `count`
  calls of the operation with that error, before moto sees them or after moto did the work (a
  lost answer: the case that makes non-idempotent calls dangerous to retry);
- `"delay_s": N` in a fault holds the answer N seconds (with `"when": "after"`, after moto did
  the work): time for a test to interrupt the caller mid-call;
- `GET /_emulator/state`: every call counted per operation, the clusters, their steps, the
  step processes still alive, and the RunJobFlow and AddJobFlowSteps requests as received
  (`requests`: what aether sent, to check field by field); `POST /_emulator/layout` `{"layout": "rolling"}`; `POST
  /_emulator/steps` `{"mode": "fail" | "hang", "count": 1}`; `POST /_emulator/clear_faults` `{}`: the next steps fail as if Spark ran
  out of memory, or never finish; `{"mode": "replay", "event_log": PATH, "sleep_s": N}`: the
  next step runs N seconds and completes with that real event log as its own (no Spark
  started: quick steps whose figures are known).

EMR on EKS (moto's `emr-containers`: virtual clusters and job runs exist, but runs stay RUNNING
forever, a reused client token makes a second run and RAPIDS release labels are rejected): here
a job run is PENDING until the ticker runs its `sparkSubmitJobDriver` with the local Spark
(entry point, arguments, sparkSubmitParameters and the `spark-defaults` classification), its
pod template files must be in S3 as Pod manifests (else it FAILS as on EKS), its event log goes
to the `spark.eventLog.dir` of its spark-defaults as `spark-<jobRunId>`, its driver's stderr to
`<logUri>/<virtualClusterId>/jobs/<id>/containers/spark-<id>/spark-<id>-driver/stderr.gz`;
StartJobRun with a client token already used in the virtual cluster returns that run; release
labels `emr-X.Y.Z-[spark-rapids-]latest|YYYYMMDD` are accepted (others: ResourceNotFound);
CancelJobRun moves a running run to CANCEL_PENDING and stops it (then CANCELLED). Faults and
call counts work for its operations too (StartJobRun, DescribeJobRun, CancelJobRun, ListJobRuns,
DescribeVirtualCluster, …).

CloudWatch (metrics and alarms, `aether report metrics`): moto's, with the AWS SDK for Rust's
Smithy RPC v2 CBOR calls translated to moto's JSON 1.0 (`cloudwatch_cbor.py`).

Run: `tests/emr-emulator/emulator.py [--port 0] [--work DIR]`; it prints `READY <endpoint>` once
it listens. Point aether at it with `AWS_ENDPOINT_URL=<endpoint>` (and any access keys).
"""

import argparse
import gzip
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

import boto3
from cloudwatch_cbor import CloudWatchCbor
from moto.emr import models as emr_models
from moto.emr.models import emr_backends
from moto.emrcontainers import models as eks_models
from moto.emrcontainers.exceptions import ResourceNotFoundException
from moto.emrcontainers.models import emrcontainers_backends
import shlex
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.server import DomainDispatcherApplication, create_backend_app
import logging
from werkzeug.serving import make_server

LOCK = threading.RLock()
FAULTS = []  # {"operation", "status", "code", "message", "count", "when"}
CALLS = {}  # operation -> count
POLICIES = {}  # cluster id -> AutoTerminationPolicy
FLEETS = {}  # cluster id -> the InstanceFleets RunJobFlow asked for (moto keeps none)
OPTS = {"layout": "plain", "step_modes": []}
RUNS = {}  # step id -> {"proc", "cluster", ...}
CLUSTER_SEQ = {}  # cluster id -> next application sequence
IDLE_SINCE = {}  # cluster id -> when it became idle (monotonic)
RECORDED = ("RunJobFlow", "AddJobFlowSteps")
REQUESTS = {}  # operation of RECORDED -> the request bodies received, in order


def utcnow():
    return datetime.now(timezone.utc).replace(tzinfo=None)


# moto's Step has no FailureDetails; EMR's has Reason, Message and LogFile
_status = emr_models.Step.status


def _status_with_failure(self):
    d = _status.fget(self)
    if getattr(self, "failure_details", None):
        d["FailureDetails"] = self.failure_details
    return d


emr_models.Step.status = property(_status_with_failure)
# nor an InstanceCollectionType: a cluster made of fleets says so
emr_models.Cluster.instance_collection_type = property(
    lambda self: "INSTANCE_FLEET" if FLEETS.get(self.id) else "INSTANCE_GROUP")


EKS_RELEASE = re.compile(r"emr-[0-9]+\.[0-9]+\.[0-9]+-(spark-rapids-)?(latest|[0-9]{8})")
_eks_start = eks_models.EMRContainersBackend.start_job_run
_eks_cancel = eks_models.EMRContainersBackend.cancel_job_run


def eks_start_job_run(self, name, virtual_cluster_id, client_token, execution_role_arn,
                      release_label, job_driver, configuration_overrides, tags):
    with LOCK:
        # StartJobRun is idempotent by client token (moto makes a second run)
        for r in self.job_runs.values():
            if r.virtual_cluster_id == virtual_cluster_id and client_token and \
                    r.client_token == client_token:
                return r
        if virtual_cluster_id in self.virtual_clusters and not EKS_RELEASE.fullmatch(
                release_label or ""):
            raise ResourceNotFoundException(f"Release {release_label} doesn't exist.")
        # moto knows no RAPIDS label: it is given one it takes, then the real one is put back
        run = _eks_start(self, name, virtual_cluster_id, client_token, execution_role_arn,
                         "emr-7.0.0-latest", job_driver, configuration_overrides, tags)
        run.release_label = release_label
        run.state = "PENDING"
        run.created_at = utcnow()
        return run


def eks_cancel_job_run(self, job_run_id, virtual_cluster_id):
    with LOCK:
        run = self.job_runs.get(job_run_id)
        if run is not None and run.virtual_cluster_id == virtual_cluster_id and \
                run.state in ("PENDING", "SUBMITTED", "RUNNING") and job_run_id in RUNS:
            run.state = "CANCEL_PENDING"
            stop(RUNS[job_run_id]["proc"])
            return run
        run = _eks_cancel(self, job_run_id, virtual_cluster_id)
        run.finished_at = utcnow()
        return run


eks_models.EMRContainersBackend.start_job_run = eks_start_job_run
eks_models.EMRContainersBackend.cancel_job_run = eks_cancel_job_run

# emr-containers is a REST API: its operations by method and path
EKS_OPS = [
    ("POST", re.compile(r"^/virtualclusters/[^/]+/jobruns$"), "StartJobRun"),
    ("GET", re.compile(r"^/virtualclusters/[^/]+/jobruns$"), "ListJobRuns"),
    ("GET", re.compile(r"^/virtualclusters/[^/]+/jobruns/[^/]+$"), "DescribeJobRun"),
    ("DELETE", re.compile(r"^/virtualclusters/[^/]+/jobruns/[^/]+$"), "CancelJobRun"),
    ("POST", re.compile(r"^/virtualclusters$"), "CreateVirtualCluster"),
    ("GET", re.compile(r"^/virtualclusters$"), "ListVirtualClusters"),
    ("GET", re.compile(r"^/virtualclusters/[^/]+$"), "DescribeVirtualCluster"),
    ("DELETE", re.compile(r"^/virtualclusters/[^/]+$"), "DeleteVirtualCluster"),
]


def eks_op(environ):
    if "/emr-containers/" not in environ.get("HTTP_AUTHORIZATION", ""):
        return None
    path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
    return next((op for m, rx, op in EKS_OPS if m == method and rx.match(path)),
                "EmrContainers" + method)


def take_fault(op):
    """Count a call of `op` and take the next fault injected for it, if any."""
    with LOCK:
        CALLS[op] = CALLS.get(op, 0) + 1
        fault = next((f for f in FAULTS if f["operation"] == op and f["count"] > 0), None)
        if fault:
            fault["count"] -= 1
        return fault


def json_error(start_response, status, code, message):
    body = json.dumps({"__type": code, "message": message}).encode()
    reason = {400: "Bad Request", 500: "Internal Server Error", 503: "Service Unavailable"}
    start_response(
        f"{status} {reason.get(status, 'Error')}",
        [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", code),
         ("Content-Length", str(len(body)))],
    )
    return [body]


def json_ok(start_response, obj):
    body = json.dumps(obj, default=str).encode()
    start_response("200 OK", [("Content-Type", "application/x-amz-json-1.1"),
                              ("Content-Length", str(len(body)))])
    return [body]


CLUSTER_OPS = {"DescribeStep", "ListSteps", "CancelSteps", "AddJobFlowSteps", "ListInstanceGroups",
               "ListInstanceFleets", "ListBootstrapActions", "GetAutoTerminationPolicy"}


def backends(of=None):
    """moto's backends of a service (EMR by default) in every account and region."""
    of = emr_backends if of is None else of
    return [of[acct][region] for acct in list(of.keys()) for region in list(of[acct].keys())]


def find_cluster(cluster_id):
    for b in backends():
        if cluster_id in b.clusters:
            return b.clusters[cluster_id]
    return None


class Emulator:
    """The WSGI app: the control API, faults and the EMR calls moto lacks, then moto."""

    def __init__(self):
        self.moto = DomainDispatcherApplication(create_backend_app)

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_emulator/"):
            return self.control(environ, start_response, path[len("/_emulator/"):])
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        op = target.split(".", 1)[1] if target.startswith("ElasticMapReduce.") else None
        if op is None:
            op = eks_op(environ)
            if op is None:
                return self.moto(environ, start_response)
            return self.rest(op, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if op in RECORDED:
            with LOCK:
                REQUESTS.setdefault(op, []).append(body)
        fault = take_fault(op)
        if fault and fault.get("when", "before") == "before":
            time.sleep(fault["delay_s"])
            if fault["status"] == 200:
                fault = None
            else:
                return json_error(start_response, fault["status"], fault["code"], fault["message"])
        # EMR answers an unknown cluster with InvalidRequestException (moto: a KeyError, 500)
        cid = body.get("ClusterId") or body.get("JobFlowId")
        if op in CLUSTER_OPS and cid and find_cluster(cid) is None:
            return json_error(start_response, 400, "InvalidRequestException",
                              f"Cluster id '{cid}' is not valid.")
        emulated = {
            "CancelSteps": cancel_steps,
            "GetAutoTerminationPolicy": lambda b: {
                "AutoTerminationPolicy": POLICIES.get(b.get("ClusterId"), {})},
            "ListInstanceFleets": list_instance_fleets,
        }.get(op)
        if emulated:
            obj = emulated(body)
            if not fault:
                return json_ok(start_response, obj)
            result = [json.dumps(obj, default=str).encode()]
        else:
            status = {}

            def capture(s, headers, exc_info=None):
                status["s"] = s
                if fault:  # the work is done; the answer is replaced below
                    return lambda _b: None
                return start_response(s, headers, exc_info)

            chunks = list(self.moto(environ, capture))
            if op == "RunJobFlow" and status.get("s", "").startswith("200"):
                try:
                    cid = json.loads(b"".join(chunks))["JobFlowId"]
                    if body.get("AutoTerminationPolicy"):
                        POLICIES[cid] = body["AutoTerminationPolicy"]
                    FLEETS[cid] = (body.get("Instances") or {}).get("InstanceFleets") or []
                except (ValueError, KeyError):
                    pass
            result = chunks
        if fault:  # "after": moto did the work, the caller sees an error (or a late answer)
            time.sleep(fault["delay_s"])
            if fault["status"] == 200:
                return json_ok(start_response, json.loads(b"".join(result) or b"{}"))
            return json_error(start_response, fault["status"], fault["code"], fault["message"])
        return result

    def rest(self, op, environ, start_response):
        """An emr-containers call: counted, faults applied, then moto (patched above)."""
        fault = take_fault(op)
        if fault and fault.get("when", "before") == "before":
            time.sleep(fault["delay_s"])
            if fault["status"] != 200:
                return json_error(start_response, fault["status"], fault["code"],
                                  fault["message"])
            fault = None
        if not fault:
            return self.moto(environ, start_response)
        chunks = list(self.moto(environ, lambda s, h, e=None: (lambda _b: None)))
        time.sleep(fault["delay_s"])
        if fault["status"] == 200:
            return json_ok(start_response, json.loads(b"".join(chunks) or b"{}"))
        return json_error(start_response, fault["status"], fault["code"], fault["message"])

    def control(self, environ, start_response, what):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        with LOCK:
            if what == "faults":
                FAULTS.append({
                    "operation": body["operation"],
                    "status": int(body.get("status", 500)),
                    "code": body.get("code", "InternalFailure"),
                    "message": body.get("message", "injected by the EMR emulator"),
                    "count": int(body.get("count", 1)),
                    "when": body.get("when", "before"),
                    "delay_s": float(body.get("delay_s", 0)),
                })
                return json_ok(start_response, {"faults": FAULTS})
            if what == "clear_faults":
                FAULTS.clear()
                return json_ok(start_response, {"faults": FAULTS})
            if what == "layout":
                OPTS["layout"] = body["layout"]
                return json_ok(start_response, OPTS)
            if what == "steps":
                mode = {k: v for k, v in body.items() if k != "count"}
                OPTS["step_modes"] += [mode] * int(body.get("count", 1))
                return json_ok(start_response, OPTS)
            if what == "state":
                return json_ok(start_response, state())
        return json_error(start_response, 400, "UnknownControl", what)


def state():
    clusters = {}
    for b in backends():
        for cid, c in b.clusters.items():
            clusters[cid] = {
                "state": c.state,
                "steps": {s.id: s.state for s in c.steps},
            }
    alive = [sid for sid, r in RUNS.items() if r["proc"].poll() is None]
    job_runs = {r.id: {"state": r.state, "name": r.name, "virtual_cluster": r.virtual_cluster_id,
                       "client_token": r.client_token, "release_label": r.release_label,
                       "driver": r.job_driver, "overrides": r.configuration_overrides,
                       "tags": r.tags, "role": r.execution_role_arn}
                for b in eks_backends() for r in b.job_runs.values()}
    return {"calls": CALLS, "clusters": clusters, "alive_steps": alive, "job_runs": job_runs,
            "faults_left": [f for f in FAULTS if f["count"] > 0], "requests": REQUESTS}


def list_instance_fleets(body):
    out = []
    for i, f in enumerate(FLEETS.get(body.get("ClusterId"), [])):
        od, spot = f.get("TargetOnDemandCapacity", 0), f.get("TargetSpotCapacity", 0)
        out.append({
            "Id": f"if-{i:012d}", "Name": f.get("Name"),
            "InstanceFleetType": f.get("InstanceFleetType"),
            "Status": {"State": "RUNNING"},
            "TargetOnDemandCapacity": od, "TargetSpotCapacity": spot,
            "ProvisionedOnDemandCapacity": od, "ProvisionedSpotCapacity": spot,
            "InstanceTypeSpecifications": f.get("InstanceTypeConfigs", []),
            "LaunchSpecifications": f.get("LaunchSpecifications", {}),
        })
    return {"InstanceFleets": out}


def cancel_steps(body):
    out = []
    with LOCK:
        cluster = find_cluster(body.get("ClusterId", ""))
        for sid in body.get("StepIds", []):
            step = next((s for s in cluster.steps if s.id == sid), None) if cluster else None
            if step is None:
                out.append({"StepId": sid, "Status": "FAILED", "Reason": "unknown step"})
            elif step.state == "PENDING" or (step.state == "RUNNING" and sid not in RUNS):
                end_step(step, "CANCELLED", "Cancelled by the user (CancelSteps)")
                out.append({"StepId": sid, "Status": "SUBMITTED", "Reason": ""})
            elif step.state == "RUNNING":
                step.state = "CANCEL_PENDING"
                stop(RUNS[sid]["proc"])
                out.append({"StepId": sid, "Status": "SUBMITTED", "Reason": ""})
            else:
                out.append({"StepId": sid, "Status": "FAILED",
                            "Reason": f"step is {step.state}"})
    return {"CancelStepsInfoList": out}


def stop(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def end_step(step, st, reason=None, failure=None):
    step.state = st
    step.end_date_time = utcnow()
    if step.start_date_time is None:
        step.start_date_time = step.end_date_time
    if reason:
        step.last_state_change_reason = reason
    if failure:
        step.failure_details = failure


def s3():
    return boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1",
                        aws_access_key_id="emulator", aws_secret_access_key="emulator")


def split_s3(url):
    rest = url[len("s3://"):] if url.startswith("s3://") else url[len("s3a://"):]
    bucket, _, key = rest.partition("/")
    return bucket, key


S3_URL = re.compile(r"s3a?://[A-Za-z0-9._-]+(?:/[^\s,;\"']*)?")


def spark_conf(cluster, key):
    for c in cluster.configurations or []:
        if c.get("Classification") == "spark-defaults":
            v = (c.get("Properties") or {}).get(key)
            if v:
                return v
    return None


def gpu_only(key, value):
    """Confs local Spark cannot honour (there is no GPU here): the plugin, GPU resources."""
    return ("com.nvidia" in value or ".resource.gpu." in key
            or key in ("spark.shuffle.manager",) and "nvidia" in value.lower())


def local_args(args, mirror, drop=lambda k, v: False):
    """spark-submit arguments (without the program) for the local Spark: s3 paths mirrored,
    cluster-manager and GPU settings dropped. (args, dropped confs, s3 urls named)."""
    urls = set()

    def local(m):
        # `--archives s3://…/x.tar#name`: the object, then its unpacked name as given
        url, mark, name = m.group(0).partition("#")
        urls.add(url)
        b, k = split_s3(url)
        return os.path.join(mirror, b, k) + mark + name

    out, dropped, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a in ("--master", "--deploy-mode") and i + 1 < len(args):
            i += 2
            continue
        if a == "--conf" and i + 1 < len(args):
            k, _, v = args[i + 1].partition("=")
            if gpu_only(k, v) or drop(k, v) or k in (
                    "spark.eventLog.dir", "spark.eventLog.enabled", "spark.submit.deployMode",
                    "spark.master"):
                dropped.append(args[i + 1])
            else:
                out += ["--conf", S3_URL.sub(local, args[i + 1])]
            i += 2
            continue
        out.append(S3_URL.sub(local, a))
        i += 1
    return out, dropped, urls


def fetch(urls, mirror):
    """The objects under every s3 path a job names, into the mirror."""
    client = s3()
    for u in urls:
        b, k = split_s3(u)
        try:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=k)
            for page in pages:
                for o in page.get("Contents", []):
                    if o["Key"] == k or o["Key"].startswith(k.rstrip("/") + "/") or not k:
                        dest = os.path.join(mirror, b, o["Key"])
                        os.makedirs(os.path.dirname(dest), exist_ok=True)
                        client.download_file(b, o["Key"], dest)
        except Exception as e:  # a missing bucket: the job will fail as on EMR
            print(f"emulator: {u}: {e}", file=sys.stderr)


def launch(key, args, work, app_id, note, **run):
    """Start the local spark-submit of a step or job run (or the fault mode asked for)."""
    events = os.path.join(work, "events")
    os.makedirs(events, exist_ok=True)
    cmd = [SPARK_SUBMIT, "--master", f"local[{CORES}]",
           "--conf", "spark.eventLog.enabled=true",
           "--conf", f"spark.eventLog.dir=file://{events}",
           "--conf", "spark.ui.enabled=false"] + args
    entry = OPTS["step_modes"].pop(0) if OPTS["step_modes"] else {}
    mode = entry.get("mode")
    if mode == "replay":
        # Spark's part played by a real event log: the step runs `sleep_s`, then "writes" it
        cmd = ["sh", "-c", 'sleep "$1"; cp "$2" "$3/"', "sh", str(entry.get("sleep_s", 1)),
               entry["event_log"], events]
    elif mode == "fail":
        cmd = ["sh", "-c", "echo 'Exception in thread \"main\" java.lang.OutOfMemoryError: "
               "Java heap space (injected by the EMR emulator)' >&2; exit 1"]
    elif mode == "hang":
        cmd = ["sleep", "3600"]
    stderr = open(os.path.join(work, "stderr"), "wb")
    ts = time.strftime("%y/%m/%d %H:%M:%S")
    stderr.write(f"{ts} INFO emulator: {note}\n".encode())
    stderr.flush()
    stdout = open(os.path.join(work, "stdout"), "wb")
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, start_new_session=True,
                            cwd=work)
    RUNS[key] = dict(run, proc=proc, work=work, events=events, app_id=app_id,
                     started=time.time())
    return RUNS[key]


def start_step(cluster, step):
    sid = step.id
    work = os.path.join(WORK, cluster.id, sid)
    mirror = os.path.join(WORK, "s3")
    os.makedirs(work, exist_ok=True)
    args = list(step.args)
    if step.jar != "command-runner.jar" or not args or args[0] != "spark-submit":
        end_step(step, "FAILED", failure={"Reason": "The emulator runs command-runner.jar "
                                          "spark-submit steps only", "Message": " ".join(args)})
        return
    out, dropped, urls = local_args(args[1:], mirror)
    fetch(urls, mirror)
    seq = CLUSTER_SEQ.get(cluster.id, 1)
    CLUSTER_SEQ[cluster.id] = seq + 1
    app_id = "application_%d_%04d" % (int(cluster.creation_datetime.replace(
        tzinfo=timezone.utc).timestamp() * 1000), seq)
    note = (f"local Spark instead of YARN; no GPU here; dropped {' '.join(dropped) or 'nothing'}"
            f"\n{time.strftime('%y/%m/%d %H:%M:%S')} INFO Client: Submitted application {app_id}")
    launch(sid, out, work, app_id, note, cluster=cluster, step=step, urls=urls, mirror=mirror,
           event_dir=spark_conf(cluster, "spark.eventLog.dir"))
    step.state = "RUNNING"
    step.start_date_time = utcnow()
    put_logs(cluster, sid, work, app_id, final=False)


def eks_backends():
    return backends(emrcontainers_backends)


def eks_defaults(run):
    props = {}
    for c in (run.configuration_overrides or {}).get("applicationConfiguration") or []:
        if c.get("classification") == "spark-defaults":
            props.update(c.get("properties") or {})
    return props


def eks_fail(run, details, reason="USER_ERROR"):
    run.state = "FAILED"
    run.failure_reason = reason
    run.state_details = details
    run.finished_at = utcnow()


def start_job_run(run):
    """A PENDING job run, run with the local Spark as EMR on EKS would run its driver."""
    work = os.path.join(WORK, "eks", run.id)
    mirror = os.path.join(WORK, "s3")
    os.makedirs(work, exist_ok=True)
    driver = (run.job_driver or {}).get("sparkSubmitJobDriver")
    if not driver:
        eks_fail(run, "The emulator runs sparkSubmitJobDriver job runs only", "VALIDATION_ERROR")
        return
    props = eks_defaults(run)
    # the pods are made from the pod templates: missing or not a Pod, the run fails
    for role in ("driver", "executor"):
        url = props.get(f"spark.kubernetes.{role}.podTemplateFile")
        if not url:
            continue
        try:
            b, k = split_s3(url.replace("s3a://", "s3://", 1))
            body = s3().get_object(Bucket=b, Key=k)["Body"].read().decode()
            import yaml
            doc = yaml.safe_load(body)
            if not isinstance(doc, dict) or doc.get("kind") != "Pod":
                raise ValueError("not a Pod manifest")
        except Exception as e:
            eks_fail(run, f"Job submission failed: the {role} pod template {url} could not be "
                          f"read ({e})")
            return
    args = shlex.split(driver.get("sparkSubmitParameters") or "")
    for k, v in props.items():
        args += ["--conf", f"{k}={v}"]
    args += [driver["entryPoint"]] + list(driver.get("entryPointArguments") or [])
    out, dropped, urls = local_args(
        args, mirror, drop=lambda k, v: k.startswith("spark.kubernetes.")
        or k == "spark.executor.instances")
    fetch(urls, mirror)
    app_id = f"spark-{run.id}"
    note = (f"EMR on EKS job run {run.id} ({run.release_label}): local Spark instead of "
            f"Kubernetes; no GPU here; dropped {' '.join(dropped) or 'nothing'}")
    mon = ((run.configuration_overrides or {}).get("monitoringConfiguration") or {})
    launch(run.id, out, work, app_id, note, job_run=run, urls=urls, mirror=mirror,
           event_dir=props.get("spark.eventLog.dir"),
           log_uri=(mon.get("s3MonitoringConfiguration") or {}).get("logUri"))
    run.state = "RUNNING"
    put_eks_logs(RUNS[run.id])


def put_eks_logs(r):
    """The driver's stdout/stderr where S3 monitoring puts them."""
    run = r["job_run"]
    if r.get("log_uri"):
        put_gz_logs(r["work"], r["log_uri"],
                    f"{run.virtual_cluster_id}/jobs/{run.id}/containers/spark-{run.id}/"
                    f"spark-{run.id}-driver")


def tick_eks():
    for b in eks_backends():
        for run in list(b.job_runs.values()):
            r = RUNS.get(run.id)
            if r is None:
                if run.state in ("PENDING", "SUBMITTED"):
                    start_job_run(run)
                continue
            if r.get("done"):
                continue
            rc = r["proc"].poll()
            if rc is None:
                continue
            r["done"] = True
            put_eks_logs(r)
            put_event_log(r)
            if run.state == "CANCEL_PENDING":
                run.state = "CANCELLED"
                run.state_details = "JobRun CANCELLED successfully."
                run.finished_at = utcnow()
            elif rc == 0:
                put_outputs(r)
                run.state = "COMPLETED"
                run.finished_at = utcnow()
            else:
                eks_fail(run, "Jobrun failed. Main Spark container terminated with errors. "
                              f"Last error seen in logs - {last_error(r['work']) or rc}. Please "
                              "refer logs uploaded to S3/CloudWatch based on your monitoring "
                              "configuration.")


def put_gz_logs(work, log_uri, folder, stderr_tail=b""):
    """A run's stderr (and `stderr_tail`) and stdout, gzipped, to `<log_uri>/<folder>/`."""
    b, k = split_s3(log_uri.rstrip("/"))
    client = s3()
    for name in ("stderr", "stdout"):
        path = os.path.join(work, name)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if name == "stderr":
            data += stderr_tail
        key = f"{k}/{folder}/{name}.gz".lstrip("/")
        try:
            client.put_object(Bucket=b, Key=key, Body=gzip.compress(data))
        except Exception as e:
            print(f"emulator: putting {key}: {e}", file=sys.stderr)


def put_logs(cluster, sid, work, app_id, final):
    if not cluster.log_uri:
        return
    tail = (f"{time.strftime('%y/%m/%d %H:%M:%S')} INFO Client: Application report for "
            f"{app_id} (state: FINISHED)\n").encode() if final else b""
    put_gz_logs(work, cluster.log_uri, f"{cluster.id}/steps/{sid}", tail)


def put_outputs(run):
    client = s3()
    for u in run["urls"]:
        b, k = split_s3(u)
        root = os.path.join(run["mirror"], b, k)
        if not os.path.isdir(root):
            continue
        for d, _, files in os.walk(root):
            for f in files:
                if f.startswith(".") or f.endswith(".crc"):
                    continue
                path = os.path.join(d, f)
                key = os.path.relpath(path, os.path.join(run["mirror"], b))
                try:
                    client.upload_file(path, b, key)
                except Exception as e:
                    print(f"emulator: putting s3://{b}/{key}: {e}", file=sys.stderr)


def put_event_log(run):
    dest = run.get("event_dir")
    if not dest or not dest.startswith("s3"):
        return
    files = [f for f in os.listdir(run["events"]) if not f.startswith(".")]
    if not files:
        return
    with open(os.path.join(run["events"], files[0]), "rb") as f:
        data = f.read()
    app_id = run["app_id"]
    data = re.sub(rb'"App ID":"local-[0-9]+"', b'"App ID":"' + app_id.encode() + b'"', data)
    # the job read and wrote S3 on EMR: its plans name s3:// paths, not the local mirror
    mirror = run["mirror"].rstrip("/").encode()
    data = data.replace(b"file:" + mirror + b"/", b"s3://").replace(mirror + b"/", b"s3://")
    b, k = split_s3(dest.rstrip("/"))
    k = (k + "/") if k else ""
    layout = OPTS["layout"]
    client = s3()
    if layout == "rolling":
        lines = data.splitlines(keepends=True)
        half = max(1, len(lines) // 2)
        d = f"{k}eventlog_v2_{app_id}"
        client.put_object(Bucket=b, Key=f"{d}/events_1_{app_id}", Body=b"".join(lines[:half]))
        client.put_object(Bucket=b, Key=f"{d}/events_2_{app_id}", Body=b"".join(lines[half:]))
        client.put_object(Bucket=b, Key=f"{d}/appstatus_{app_id}", Body=b"")
    else:
        name = {"attempt": f"{app_id}_1", "inprogress": f"{app_id}.inprogress"}.get(layout, app_id)
        client.put_object(Bucket=b, Key=k + name, Body=data)


def last_error(work):
    try:
        with open(os.path.join(work, "stderr"), errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return None
    for l in reversed(lines):
        if "Exception" in l or "Error" in l:
            return l[:500]
    return lines[-1][:500] if lines else None


def tick():
    now = time.monotonic()
    for b in backends():
        for cid, cluster in list(b.clusters.items()):
            ended = cluster.state in ("TERMINATING", "TERMINATED", "TERMINATED_WITH_ERRORS")
            for step in cluster.steps:
                run = RUNS.get(step.id)
                if run and run.get("done"):
                    continue
                if ended and step.state in ("PENDING", "RUNNING", "CANCEL_PENDING"):
                    if run:
                        stop(run["proc"])
                        run["proc"].wait()
                        run["done"] = True
                        put_logs(cluster, step.id, run["work"], run["app_id"], final=True)
                    end_step(step, "CANCELLED", "the cluster was terminated")
                    continue
                if run is None:
                    continue
                rc = run["proc"].poll()
                if rc is None:
                    continue
                run["done"] = True
                put_logs(cluster, step.id, run["work"], run["app_id"], final=True)
                put_event_log(run)
                if step.state == "CANCEL_PENDING":
                    end_step(step, "CANCELLED", "Cancelled by the user (CancelSteps)")
                elif rc == 0:
                    put_outputs(run)
                    end_step(step, "COMPLETED")
                else:
                    log = None
                    if cluster.log_uri:
                        log = f"{cluster.log_uri.rstrip('/')}/{cid}/steps/{step.id}/stderr.gz"
                    end_step(step, "FAILED", failure={
                        "Reason": "Unknown Error.",
                        "Message": last_error(run["work"]) or f"spark-submit exited {rc}",
                        "LogFile": log,
                    })
            if ended:
                continue
            busy = any(s.state in ("RUNNING", "CANCEL_PENDING") and s.id in RUNS
                       and not RUNS[s.id].get("done") for s in cluster.steps)
            if not busy:
                nxt = next((s for s in cluster.steps if s.state in ("PENDING", "RUNNING")
                            and s.id not in RUNS), None)
                if nxt is not None:
                    start_step(cluster, nxt)
                    busy = True
            if busy:
                cluster.state = "RUNNING"
                IDLE_SINCE.pop(cid, None)
            else:
                cluster.state = "WAITING"
                since = IDLE_SINCE.setdefault(cid, now)
                idle = (POLICIES.get(cid) or {}).get("IdleTimeout")
                if idle and now - since >= float(idle) * TIME_SCALE:
                    cluster.terminate()
                    cluster.last_state_change_reason = "Cluster was terminated after being idle"


def ticker():
    while True:
        try:
            with LOCK:
                tick()
                tick_eks()
        except Exception as e:  # keep ticking: one bad step must not stop the others
            print(f"emulator: tick: {e!r}", file=sys.stderr)
        time.sleep(0.25)


def shutdown(*_):
    for r in RUNS.values():
        stop(r["proc"])
    sys.exit(0)


def main():
    global ENDPOINT, WORK, SPARK_SUBMIT, CORES, TIME_SCALE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                  "aether-emr-emulator"))
    p.add_argument("--cores", type=int, default=2, help="local[N] for the steps' Spark")
    p.add_argument("--time_scale", type=float, default=1.0,
                   help="seconds per second of an idle timeout (0.01: 60 s idle ends in 0.6 s)")
    a = p.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    WORK, CORES, TIME_SCALE = a.work, a.cores, a.time_scale
    os.makedirs(WORK, exist_ok=True)
    SPARK_SUBMIT = os.environ.get("EMULATOR_SPARK_SUBMIT") or shutil.which("spark-submit")
    if not SPARK_SUBMIT:
        sys.exit("emulator: no spark-submit (scripts/setup --test installs pyspark in .venv; put .venv/bin on PATH)")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "emulator")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "emulator")
    app = CloudWatchCbor(Emulator())
    server = make_server("127.0.0.1", a.port, app, True, request_handler=MotoRequestHandler)
    ENDPOINT = f"http://127.0.0.1:{server.server_address[1]}"
    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    threading.Thread(target=ticker, daemon=True).start()
    print(f"READY {ENDPOINT}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
