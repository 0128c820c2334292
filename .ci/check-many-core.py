#!/usr/bin/env python3
"""Checks what .ci/many-core-smoke's runs in the emulated 8-core, 2-socket, 2-node
machine wrote: behaviour only (pins, placements, nodes, the report's word on emulation),
never a figure. Usage: check-many-core.py OUT (the folder .ci/many-core-inside.sh wrote)."""
import glob
import json
import os
import sys

out = sys.argv[1]
errors = []


def check(ok, what):
    if not ok:
        errors.append(what)


def load(path):
    with open(path) as f:
        return json.load(f)


def distinct(cpus):
    return len(set(cpus)) == len(cpus)


def group_of(env, cpu):
    for i, g in enumerate(env["l3_groups"]):
        lo_hi = [p.split("-") for p in g.split(",")]
        if any(int(r[0]) <= cpu <= int(r[-1]) for r in lo_hi):
            return i
    return None


reports = glob.glob(os.path.join(out, "all", "*", "REPORT.md"))
check(len(reports) == 1, f"runner all --smoke wrote {len(reports)} REPORT.md files, expected 1")
folder = os.path.dirname(reports[0]) if reports else None
if folder:
    check(os.path.basename(folder).startswith("emulated-"), f"the results folder {folder} is not named emulated-...")
    report = open(reports[0]).read()
    check("**Emulated CPUs.**" in report, "REPORT.md does not say the CPUs were emulated")
    rows = report.count("| **not measurable here (emulated CPUs)** |")
    check(rows >= 40, f"REPORT.md judges {rows} claims 'not measurable here (emulated CPUs)', expected every timed one (40 or more)")

runs = {}
for path in glob.glob(os.path.join(folder or "/nonexistent", "*.json")):
    r = load(path)
    runs[r["experiment"]] = r
for name, path in [("queue --pin 4,5,6", "pin-4-5-6/queue.json"), ("pipeline --cross-l3", "cross-l3/pipeline.json")]:
    p = os.path.join(out, path)
    check(os.path.exists(p), f"{name} wrote no {path}")
    if os.path.exists(p):
        runs[name] = load(p)
check(set(runs) >= {"queue", "pipeline", "pool", "patterns", "alloc"}, f"runner all --smoke ran {sorted(runs)}")

all_pins = set()
for name, r in runs.items():
    env = r["env"]
    check(env["emulated_cpus"] is True, f"{name}: env.emulated_cpus is not true")
    check(env["tsc"]["source"] == "monotonic", f"{name}: the clock is {env['tsc']['source']}, not the monotonic fallback")
    check(len(env["l3_groups"]) == 2, f"{name}: {len(env['l3_groups'])} L3 groups recorded, expected 2")
    check(len(env.get("numa_nodes", [])) == 2, f"{name}: NUMA nodes recorded {env.get('numa_nodes')}, expected 2")
    pins = [c for c in env["pins"].values() if c is not None]
    all_pins.update(pins)
    for c in r["claims"]:
        if c.get("timed", True) and c["verdict"] not in ("not measurable here", "not measured"):
            errors.append(f"{name}: the timed claim {c['id']} was judged {c['verdict']} on emulated CPUs")
        if c.get("timed", True) and c["verdict"] == "not measurable here":
            check(c["reason"].startswith("emulated CPUs"), f"{name}: {c['id']}'s reason does not name the emulation")

pin = runs.get("queue --pin 4,5,6", {}).get("env", {}).get("pins", {})
check(pin.get("producer") == 4 and pin.get("consumer") == 5 and pin.get("control") == 6,
      f"queue --pin 4,5,6 recorded pins {pin}")

if "pipeline" in runs:
    r = runs["pipeline"]
    p = r["env"]["pins"]
    check(distinct([p.get("producer"), p.get("consumer"), p.get("background")]) and None not in
          (p.get("producer"), p.get("consumer"), p.get("background")),
          f"pipeline: the background thread is not on a core of its own: {p}")
    check(r["config"]["headline_bg_threads"] >= 1, "pipeline: the headline ran without the background thread")
    # Two L3 groups and no --pin: the headline once more with the consumer in the other group.
    cross = r.get("cross_l3") or {}
    check(cross.get("consumer") is not None and group_of(r["env"], cross["consumer"]) != group_of(r["env"], p["producer"]),
          f"pipeline: no cross-L3 headline beside the same-L3 one, or its consumer shares the producer's L3 group: {cross.get('consumer')}")
    check(len(cross.get("variants", [])) >= 3, "pipeline: the cross-L3 headline has fewer than 3 variants")
    judged = {c["id"]: c for c in r["claims"]}
    for i in ("cross-l3-p50-floor", "cross-l3-p99", "cross-l3-p999", "cross-l3-expansion"):
        c = judged.get(i, {})
        check(c.get("verdict") == "not measurable here" and "on these figures alone" in c.get("reason", ""),
              f"pipeline: {i} was not judged on this run's figures: {c.get('verdict')}, {c.get('reason', '')[:120]}")
    check(len(r.get("sweeps", [])) > 0, "pipeline: no sweep")
if "pipeline --cross-l3" in runs:
    r = runs["pipeline --cross-l3"]
    p, env = r["env"]["pins"], r["env"]
    check(group_of(env, p["producer"]) != group_of(env, p["consumer"]),
          f"pipeline --cross-l3: producer {p['producer']} and consumer {p['consumer']} share an L3 group")
    judged = {c["id"]: c["verdict"] for c in r["claims"]}
    for i in ("cross-l3-p50-floor", "cross-l3-p99", "cross-l3-p999"):
        check(judged.get(i) == "not measurable here", f"pipeline --cross-l3: {i} is {judged.get(i)}")
if "pool" in runs:
    threads = [c for k, c in runs["pool"]["env"]["pins"].items() if k.startswith("thread")]
    check(len(threads) == 4 and distinct(threads), f"pool: the 4 threads of document 001 are not on 4 cores: {threads}")
if "alloc" in runs:
    r = runs["alloc"]
    threads = [c for k, c in r["env"]["pins"].items() if k.startswith("thread")]
    check(len(threads) == 8 and distinct(threads), f"alloc: not 8 threads on 8 cores: {threads}")
    check(max(r["config"]["scaling"] or [0]) == 8, f"alloc: the scaling run stopped at {r['config']['scaling']}")
if "patterns" in runs:
    numa = runs["patterns"]["numa"]
    check(numa["nodes"] == [0, 1], f"patterns: nodes {numa['nodes']}")
    check(numa["buffer_node"] == numa["nodes"][0], f"patterns: the buffer asked on node {numa['nodes'][0]} lies on {numa['buffer_node']}")
    check({c["node"] for c in numa["per_node"]} == {0, 1}, "patterns: the per-node pool ran on one node only")
    check(all(c["on_own_node"] == c["objects"] for c in numa["per_node"]),
          "patterns: a per-node pool handed out memory of another node")
    check(numa.get("remote_cpu") is not None, "patterns: no remote CPU for the NUMA access")
check(len(all_pins) >= 8, f"pins recorded on {len(all_pins)} distinct cores, expected all 8")

if errors:
    print("many-core smoke: %d problem(s)" % len(errors))
    for e in errors:
        print("  " + e)
    sys.exit(1)
print(f"many-core smoke: {len(runs)} runs checked; pins on cores {sorted(all_pins)}; 2 L3 groups, 2 nodes; every timed claim not measurable here (emulated CPUs)")
