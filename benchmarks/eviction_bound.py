"""`python -m benchmarks.eviction_bound`: how few GPU pods any session could evict for the same preemptors.

    python -m benchmarks.eviction_bound [--size S] [--seed 1] [--time-limit 60] [--json]
        [--optimize-budget 1s|unlimited]

Runs one `volcano` and one `optimize` session (within the conf's session budget, 1 s, or
`--optimize-budget`) on a generated preemption workload, checks that both pipelined the same GPU
preemptors (DESIGN §7's eviction ratio compares like with like only then), and computes a lower bound
on the GPU pods evicted to pipeline those preemptors: a mixed-integer program (scipy's HiGHS `milp`)
that keeps only rules every preempt decision must obey and drops the rest, so its optimum can only be
lower than what a rule-abiding session achieves:

- each preemptor goes to one GPU node, and a node's preemptors fit its free GPUs (after the optimize
  session's own binds) plus the GPUs of the victims evicted there;
- a victim is a Running/Bound GPU pod of a PodGroup in the same queue as a preemptor placed on its node,
  of another job and of lower priority (preempt's same-queue filter and the priority plugin);
- per victim job at most `ready - minMember` pods are evicted (the gang plugin's preemptable budget).

Dropped (so the bound may be loose, never wrong): cpu and memory, Volcano's victim order and the
evictions of CPU pods, the victim rules beyond those three (drf's shares, the queue's allocatable),
and the order of preemptor turns. (Volcano's ValidateVictims asks for no victim on the node: a
preemptor may take the room an earlier eviction left, as the room constraint above allows.)
`target` is DESIGN §7's 0.7 x volcano's evicted GPU pods: when the bound exceeds it, no session that
places the same preemptors under these rules can meet the target.

This module only measures; it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchmarks import generate as gen
from benchmarks.run import budget_text, policy_for
from vpolicy.engine.session import run_session
from vpolicy.harness.policy import UNLIMITED
from vpolicy.model.snapshot import ClusterSnapshot, Pod, TaskStatus

TARGET_RATIO = 0.7  # DESIGN §7: evicted GPU pods, optimize over volcano, on the preemption workload
_VICTIM_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})


def eviction_bound(snapshot: ClusterSnapshot, preemptors: Sequence[str], *, binds: Mapping[str, str] | None = None,
                   time_limit: float = 60.0) -> dict[str, Any]:
    """The MILP lower bound on evicted GPU pods for pipelining `preemptors` (pod keys; module docstring);
    `binds` (pod key -> node) are the session's own placements, whose GPUs are no longer free."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # type: ignore[import-untyped]  # reason: no stubs
    from scipy.sparse import coo_array  # type: ignore[import-untyped]  # reason: no stubs

    pods = {p.key: p for p in snapshot.pods}
    groups = {f"{g.namespace}/{g.name}": g for g in snapshot.podgroups}
    nodes = [n for n in snapshot.nodes if gen.gpus(n.allocatable)]
    if not preemptors or not nodes:
        return {"milp": 0, "proven": True, "preemptors": len(preemptors)}
    index = {n.name: k for k, n in enumerate(nodes)}
    used: Counter[str] = Counter()
    ready: Counter[str] = Counter()
    for p in snapshot.pods:
        if p.node_name:
            used[p.node_name] += gen.gpus(p.resreq)
            if p.group and p.status in _VICTIM_STATUSES:
                ready[_job(p)] += 1
    for key, node_name in (binds or {}).items():
        used[node_name] += gen.gpus(pods[key].resreq)
    victims = [p for p in snapshot.pods if p.node_name in index and p.group and gen.gpus(p.resreq)
               and p.status in _VICTIM_STATUSES]
    placed = [pods[k] for k in preemptors]
    n_p, n_n = len(placed), len(nodes)
    nx = n_p * n_n  # x[p, n]: preemptor p on node n; then y[v]: victim v evicted
    nv = nx + len(victims)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(entries: Mapping[int, float], low: float, high: float) -> None:
        """One constraint, sparse: at L a dense row per constraint took more memory than the machine has."""
        for col, val in entries.items():
            rows.append(len(lo))
            cols.append(col)
            vals.append(val)
        lo.append(low)
        hi.append(high)

    for i in range(n_p):
        add({i * n_n + k: 1.0 for k in range(n_n)}, 1, 1)
    on_node: defaultdict[str, list[int]] = defaultdict(list)
    for t, v in enumerate(victims):
        on_node[v.node_name].append(t)
    for k, node in enumerate(nodes):
        row = {i * n_n + k: float(gen.gpus(p.resreq)) for i, p in enumerate(placed)}
        row.update({nx + t: -float(gen.gpus(victims[t].resreq)) for t in on_node[node.name]})
        add(row, -np.inf, gen.gpus(node.allocatable) - used[node.name])
    for t, v in enumerate(victims):
        row = {nx + t: 1.0}
        k = index[v.node_name]
        for i, p in enumerate(placed):
            if _queue(groups, p) == _queue(groups, v) and p.priority > v.priority and _job(p) != _job(v):
                row[i * n_n + k] = -1.0
        add(row, -np.inf, 0)
    by_job: defaultdict[str, list[int]] = defaultdict(list)
    for t, v in enumerate(victims):
        by_job[_job(v)].append(t)
    for job, members in by_job.items():
        group = groups.get(job)
        add({nx + t: 1.0 for t in members}, -np.inf, max(0, ready[job] - (group.min_member if group else 1)))
    objective = np.zeros(nv)
    objective[nx:] = 1
    matrix = coo_array((vals, (rows, cols)), shape=(len(lo), nv)).tocsr()
    result = milp(objective, constraints=LinearConstraint(matrix, np.array(lo), np.array(hi)),
                  bounds=Bounds(np.zeros(nv), np.ones(nv)), integrality=np.ones(nv),
                  options={"time_limit": time_limit})
    proven = result.status == 0
    dual = getattr(result, "mip_dual_bound", None)
    if proven:
        bound = int(round(result.fun))
    elif dual is not None and np.isfinite(dual):
        bound = int(np.ceil(dual - 1e-6))
    else:
        bound = 0
    return {"milp": bound, "proven": proven, "preemptors": n_p, "victims": len(victims), "status": result.message}


def _job(p: Pod) -> str:
    return f"{p.namespace}/{p.group}"


def _queue(groups: dict[str, Any], p: Pod) -> str:
    group = groups.get(_job(p))
    return group.queue if group is not None else ""


def check(size: gen.Size, *, seed: int = 1, time_limit: float = 60.0,
          optimize_budget: str | None = None) -> dict[str, Any]:
    generated = gen.generate(size, "preemption", seed=seed)
    snapshot, policy = generated.snapshot, policy_for("preemption", optimize_budget=optimize_budget)
    pods = {p.key: p for p in snapshot.pods}
    out: dict[str, Any] = {"size": size.name, "workload": "preemption", "seed": seed}
    placed: dict[str, list[str]] = {}
    binds: dict[str, str] = {}
    for mode in ("volcano", "optimize"):
        document = run_session(snapshot, policy, mode=mode).decisions.to_document()
        placed[mode] = sorted(k for k in document["pipelined"] if gen.gpus(pods[k].resreq))  # type: ignore[attr-defined]  # reason: JSON
        binds = dict(document["binds"])  # type: ignore[call-overload]  # reason: JSON
        evicted = [e["pod"] for e in document["evictions"]]  # type: ignore[attr-defined]  # reason: JSON
        out[mode] = {"gpu_preemptors": len(placed[mode]),
                     "gpus_pipelined": sum(gen.gpus(pods[k].resreq) for k in placed[mode]),
                     "evicted_gpu_pods": sum(1 for k in evicted if gen.gpus(pods[k].resreq))}
    out["same_preemptors"] = placed["volcano"] == placed["optimize"]
    out["bound"] = eviction_bound(snapshot, placed["optimize"], binds=binds, time_limit=time_limit)
    out["target"] = TARGET_RATIO * out["volcano"]["evicted_gpu_pods"]
    out["target_reachable"] = out["bound"]["milp"] <= out["target"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.eviction_bound", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds for the MILP (default 60)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--optimize-budget", type=budget_text, metavar="DURATION",
                   help=f"optimize mode's session budget: 800ms, 1s, 2m or {UNLIMITED} (default: the conf's, 1s)")
    args = p.parse_args(argv)
    result = check(gen.SIZES[args.size], seed=args.seed, time_limit=args.time_limit,
                   optimize_budget=args.optimize_budget)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    v, o, b = result["volcano"], result["optimize"], result["bound"]
    print(f"{result['size']} preemption seed {result['seed']}: GPU preemptors volcano {v['gpu_preemptors']} "
          f"({v['gpus_pipelined']} GPUs), optimize {o['gpu_preemptors']} ({o['gpus_pipelined']} GPUs), "
          f"same: {result['same_preemptors']}")
    print(f"  evicted GPU pods: volcano {v['evicted_gpu_pods']}, optimize {o['evicted_gpu_pods']}, "
          f"lower bound {b['milp']} ({'proven' if b['proven'] else 'dual bound'}), "
          f"target <= {result['target']:.1f} ({'reachable' if result['target_reachable'] else 'out of reach'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
