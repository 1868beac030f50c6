"""Idle capacity per executor (in local mode, the driver) straight from an event log's JSON (no
aether code): the executor's life (ExecutorAdded until ExecutorRemoved, else ApplicationEnd) minus the union of its
tasks' [Launch Time, Finish Time] (TaskEnd), its idle gaps, and the idle time had each gap been cut
at 60 s. Prints `executor allocated_ms idle_ms gaps idle_60s` per executor.

    zstd -dc LOG.zstd | python3 executor_idle_truth.py
"""
import json
import sys

added, removed, cores, tasks, end, driver = {}, {}, {}, {}, None, None
for line in sys.stdin:
    e = json.loads(line)
    ev = e.get("Event")
    if ev == "SparkListenerExecutorAdded":
        added[e["Executor ID"]] = e["Timestamp"]
        cores[e["Executor ID"]] = e["Executor Info"]["Total Cores"]
    elif ev == "SparkListenerExecutorRemoved":
        removed[e["Executor ID"]] = e["Timestamp"]
    elif ev == "SparkListenerBlockManagerAdded" and e["Block Manager ID"]["Executor ID"] == "driver":
        driver = e["Timestamp"]
    elif ev == "SparkListenerApplicationEnd":
        end = e["Timestamp"]
    elif ev == "SparkListenerTaskEnd":
        i = e["Task Info"]
        if i["Finish Time"] >= i["Launch Time"] > 0:
            tasks.setdefault(i["Executor ID"], []).append((i["Launch Time"], i["Finish Time"]))

# local mode: no executor but the driver, which runs the tasks
if not added:
    added["driver"] = driver
for x in sorted(added, key=lambda k: (len(k), k)):
    start, stop = added[x], removed.get(x, end)
    spans = []
    for s, f in sorted(tasks.get(x, [])):
        s, f = max(s, start), min(f, stop)
        if f <= start or s >= stop:
            continue
        if spans and s <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], f)
        else:
            spans.append([s, f])
    gaps, prev = [], start
    for s, f in spans:
        gaps.append(s - prev)
        prev = f
    gaps.append(stop - prev)
    print(x, stop - start, sum(gaps), sum(1 for g in gaps if g > 0), sum(min(g, 60000) for g in gaps))
