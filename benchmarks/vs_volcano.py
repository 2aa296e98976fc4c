"""`python -m benchmarks.vs_volcano --size S|M|L --workload steady|preemption|reclaim`: vpolicy and Volcano's own
scheduler (the conformance oracle, volcano.sh/volcano v1.10.0) on the same snapshot and the same conf.

The snapshot is `benchmarks.generate`'s, written once as the `kind: List` both engines read; vpolicy's
sessions run on that file loaded back (so both see the very same objects), Volcano's in the oracle, one
fresh scheduler cache per run. Times are each engine's own session: vpolicy's `run_session` (state
built from the snapshot, every action, closing), Volcano's OpenSession + actions + CloseSession (its
cache filled beforehand, as informers would have). The conf is Volcano's built-in one, with `preempt`
added for the preemption workload, `reclaim` for the reclaim workload (`benchmarks.run.policy_for`). Decisions are compared as
`python -m conformance.run` compares them (binds, pipelined pods, evictions, podgroup phases, up to
interchangeable nodes, the phase rule as main has it); the differences are counted, not judged: at
these sizes Volcano searches only part of the nodes for each task (vc-scheduler's default
percentage-of-nodes-to-find) and breaks ties at random. Wall time and CPU time (the process's, all
threads) are both reported: the machine is shared, and Volcano's session runs 16 goroutines wide.
Nothing is asserted about speed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import generate as gen
from benchmarks.run import EVICTING_ACTIONS
from conformance import build, version_gap
from conformance.compare import differences, node_classes, outcome, shared_podgroups
from conformance.engines import Oracle
from conformance.generate import Case
from vpolicy.engine.session import run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.load import manifest
from vpolicy.load.cluster import load_cluster


def conf_text(workload: str) -> str:
    text = conf_loader.default_conf_text()
    actions = EVICTING_ACTIONS.get(workload)
    if actions is None:
        return text
    first, rest = text.split("\n", 1)
    return f'actions: "{actions}"\n{rest}'


def measure(size: str, workload: str, *, seed: int = 1, runs: int = 3) -> dict[str, Any]:
    generated = gen.generate(gen.SIZES[size], workload, seed=seed)
    objects = manifest.to_objects(generated.snapshot)
    conf = conf_text(workload)
    case = Case("bench", seed, 0, objects, conf)
    cluster_json = case.cluster_json()
    with tempfile.TemporaryDirectory(prefix="vs-volcano-") as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(cluster_json)
        snapshot = load_cluster([str(path)])
    conf_path_policy = from_conf(conf_loader.parse_conf_text(conf, file="<vs-volcano>"))

    vp_times, vp_cpu, vp_doc = [], [], None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = run_session(snapshot, conf_path_policy)
        vp_times.append((time.perf_counter() - t0) * 1000)
        vp_cpu.append((time.process_time() - c0) * 1000)
        vp_doc = result.decisions.to_document()

    vc_times, vc_cpu, vc_docs = [], [], []
    with Oracle(build.oracle_path(log=True)) as oracle:
        for _ in range(runs):
            doc = version_gap.main_document(case, oracle.run(cluster_json, conf))
            vc_times.append(float(doc["stats"]["session_ms"]))
            vc_cpu.append(float(doc["stats"].get("session_cpu_ms", 0.0)))
            vc_docs.append(doc)

    assert vp_doc is not None
    classes = node_classes(objects)
    groups = shared_podgroups(vc_docs[0], vp_doc)
    mine = outcome(vp_doc, classes, groups)
    theirs = [outcome(d, classes, groups) for d in vc_docs]
    diff = differences(theirs[0], mine)
    vp_ms, vc_ms = statistics.median(vp_times), statistics.median(vc_times)
    vp_cpu_ms, vc_cpu_ms = statistics.median(vp_cpu), statistics.median(vc_cpu)
    return {
        "size": size, "workload": workload, "seed": seed, "runs": runs,
        "nodes": len(generated.snapshot.nodes), "pending_pods": generated.pending_pods,
        "vpolicy_ms": round(vp_ms, 1), "volcano_ms": round(vc_ms, 1),
        "ratio": round(vp_ms / vc_ms, 2) if vc_ms else None,
        "vpolicy_cpu_ms": round(vp_cpu_ms, 1), "volcano_cpu_ms": round(vc_cpu_ms, 1),
        "cpu_ratio": round(vp_cpu_ms / vc_cpu_ms, 2) if vc_cpu_ms else None,
        "volcano_runs_agree": len(set(theirs)) == 1,
        "decisions_equal": mine in theirs,
        "differences": len(diff),
        "binds": {"vpolicy": len(mine.binds), "volcano": len(theirs[0].binds)},
        "evictions": {"vpolicy": len(mine.evictions), "volcano": len(theirs[0].evictions)},
        "pipelined": {"vpolicy": len(mine.pipelined), "volcano": len(theirs[0].pipelined)},
        "first_differences": diff[:10],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vs_volcano", description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=sorted(gen.SIZES), required=True)
    parser.add_argument("--workload", choices=("steady", *EVICTING_ACTIONS), required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        row = measure(args.size, args.workload, seed=args.seed, runs=args.runs)
    except build.OracleBuildError as exc:
        print(f"vs_volcano: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        print(f"{row['size']} {row['workload']}: vpolicy {row['vpolicy_ms']} ms, Volcano {row['volcano_ms']} ms, "
              f"ratio {row['ratio']} (CPU: {row['vpolicy_cpu_ms']} / {row['volcano_cpu_ms']} ms = {row['cpu_ratio']}); "
              f"decisions equal: {row['decisions_equal']} ({row['differences']} differences; "
              f"binds {row['binds']}, evictions {row['evictions']}, pipelined {row['pipelined']})")
        for line in row["first_differences"]:
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
