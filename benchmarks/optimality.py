"""`python -m benchmarks.optimality`: how far `optimize` is from the best a session could do (DESIGN §7).

    python -m benchmarks.optimality [--size S] [--workload fragmentation] [--seed 1] [--time-limit 30] [--json]

Runs one `volcano` and one `optimize` session on a generated snapshot and compares their GPUs placed
with an upper bound on the GPUs any rule-abiding session could place: a mixed-integer program
(scipy's HiGHS `milp`) over the GPU jobs that are pending and the nodes with free GPUs, which keeps
only rules every placement must obey and drops the rest, so its optimum is an upper bound:

- a pod goes to one node whose allocatable has GPUs, and a node's pods fit its FutureIdle GPUs, cpu,
  memory and pod slots (bin packing per node, exact: one integer count per (job, node));
- a gang places 0 pods or between the pods it still needs for `minMember` and all its pending pods;
- only jobs that `enqueue` admits can place pods: enqueue runs first, on the snapshot alone, so its
  verdicts are the same in every session under these rules (computed by an enqueue-only session).

Dropped (so the bound may be loose, never wrong): queue shares, capabilities and overuse, CPU pods competing for GPU nodes' cpu, task order and turns, preemption. The LP relaxation
(fractional pods) is reported too; the gap is `1 - optimize / bound`, with the proven MILP optimum when
HiGHS finishes within `--time-limit` and its dual bound (still an upper bound) when it does not.

This module only measures; it asserts nothing (the issue's target is a gap <= 2% on S).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks import generate as gen
from benchmarks.run import decision_metrics, policy_for
from vpolicy.engine.optimize import gpus, is_gpu_dim
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.engine.state import SessionState
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase, TaskStatus

_DIMS = ("cpu", "memory", "pods")


@dataclass(frozen=True, slots=True)
class GangDemand:
    """The pending GPU pods of one job: all alike in the generator (one request per job)."""

    job: str
    pods: int
    need: int  # pods it must place at least, when it places any (minMember - already ready)
    request: dict[str, float]
    gpus: int


def gpu_bound(snapshot: ClusterSnapshot, policy: CompiledPolicy, *, time_limit: float = 30.0) -> dict[str, Any]:
    """The MILP and LP upper bounds on GPUs placed in one session (see the module docstring)."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # type: ignore[import-untyped]  # reason: no stubs

    state = _after_enqueue(snapshot, policy)
    nodes = [n for n in state.nodes.values() if any(is_gpu_dim(d) and v > 0 for d, v in n.allocatable.items())]
    demands = _demands(state)
    free = {n.name: n.future_idle for n in nodes}
    n_jobs, n_nodes = len(demands), len(nodes)
    if not n_jobs or not n_nodes:
        return {"milp": 0, "lp": 0.0, "status": "trivial", "jobs": n_jobs, "nodes": n_nodes}
    # variables: n[j, k] (pods of job j on node k), then x[j] (job j placed at all)
    nv = n_jobs * n_nodes + n_jobs
    objective = np.zeros(nv)
    upper = np.zeros(nv)
    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    for j, d in enumerate(demands):
        for k, node in enumerate(nodes):
            fits_one = all(d.request.get(dim, 0) <= free[node.name].get(dim, 0)
                           for dim in {*d.request, *_DIMS})
            upper[j * n_nodes + k] = d.pods if fits_one else 0
            objective[j * n_nodes + k] = -d.gpus
        upper[n_jobs * n_nodes + j] = 1
        # need * x <= sum_k n[j, k] <= pods * x
        row = np.zeros(nv)
        row[j * n_nodes:(j + 1) * n_nodes] = 1
        a, b = row.copy(), row.copy()
        a[n_jobs * n_nodes + j] = -d.need
        b[n_jobs * n_nodes + j] = -d.pods
        rows += [a, b]
        lo += [0, -np.inf]
        hi += [np.inf, 0]
    dims = sorted({dim for d in demands for dim in d.request} | set(_DIMS))
    for k, node in enumerate(nodes):
        for dim in dims:
            row = np.zeros(nv)
            for j, d in enumerate(demands):
                row[j * n_nodes + k] = d.request.get(dim, 0)
            if not row.any():
                continue
            rows.append(row)
            lo.append(-np.inf)
            hi.append(float(free[node.name].get(dim, 0)))
    constraints = LinearConstraint(np.array(rows), np.array(lo), np.array(hi))
    bounds = Bounds(np.zeros(nv), upper)
    t0 = time.process_time()
    exact = milp(objective, constraints=constraints, bounds=bounds, integrality=np.ones(nv),
                 options={"time_limit": time_limit})
    milp_s = time.process_time() - t0
    relaxed = milp(objective, constraints=constraints, bounds=bounds, integrality=np.zeros(nv))
    proven = exact.status == 0
    dual = getattr(exact, "mip_dual_bound", None)
    if proven:
        bound = round(-exact.fun)
    elif dual is not None and np.isfinite(dual):
        bound = int(np.floor(-dual + 1e-6))
    else:
        bound = int(np.floor(-relaxed.fun + 1e-6))
    return {"milp": bound, "milp_proven": proven, "milp_cpu_s": round(milp_s, 2),
            "lp": round(float(-relaxed.fun), 2), "jobs": n_jobs, "nodes": n_nodes, "status": exact.message}


def _after_enqueue(snapshot: ClusterSnapshot, policy: CompiledPolicy) -> SessionState:
    """The session state once `enqueue` has run (the snapshot's own when the policy has no enqueue)."""
    if "enqueue" not in policy.actions:
        return SessionState(snapshot)
    enqueue_only = CompiledPolicy(("enqueue",), policy.tiers, source=policy.source)
    return run_session(snapshot, enqueue_only, solver_budget_s=0).state


def _demands(state: SessionState) -> list[GangDemand]:
    out = []
    for job in state.jobs.values():
        if job.phase in (PodGroupPhase.COMPLETED.value, PodGroupPhase.PENDING.value):
            continue
        pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.pod.scheduling_gated]
        gpu_pods = [t for t in pending if gpus(t.resreq) > 0]
        if not gpu_pods:
            continue
        requests = {t.resreq for t in gpu_pods}
        if len(requests) != 1:
            raise ValueError(f"job {job.key} has GPU pods of different requests; the bound assumes one")
        request = {k: float(v) for k, v in gpu_pods[0].resreq.items()}
        need = max(0, job.min_available - job.ready_count - (len(pending) - len(gpu_pods)))
        out.append(GangDemand(job.key, len(gpu_pods), min(need, len(gpu_pods)), request, gpus(gpu_pods[0].resreq)))
    return out


def check(size: gen.Size, workload: str, *, seed: int = 1, time_limit: float = 30.0) -> dict[str, Any]:
    generated = gen.generate(size, workload, seed=seed)
    policy = policy_for(workload)
    out: dict[str, Any] = {"size": size.name, "workload": workload, "seed": seed, **generated.summary()}
    for mode in ("volcano", "optimize"):
        t0, c0 = time.perf_counter(), time.process_time()
        document = run_session(generated.snapshot, policy, mode=mode).decisions.to_document()
        out[mode] = {"gpus_placed": decision_metrics(generated.snapshot, document)["gpus_placed"],
                     "session_ms": round((time.perf_counter() - t0) * 1000, 1),
                     "session_cpu_ms": round((time.process_time() - c0) * 1000, 1)}
    bound = gpu_bound(generated.snapshot, policy, time_limit=time_limit)
    out["bound"] = bound
    for mode in ("volcano", "optimize"):
        placed = out[mode]["gpus_placed"]
        out[mode]["gap"] = round(1 - placed / bound["milp"], 4) if bound["milp"] else 0.0
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.optimality", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(gen.SIZES), default="S")
    p.add_argument("--workload", choices=gen.WORKLOADS, default="fragmentation")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--time-limit", type=float, default=30.0, help="seconds for the MILP (default 30)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    result = check(gen.SIZES[args.size], args.workload, seed=args.seed, time_limit=args.time_limit)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    b = result["bound"]
    print(f"{result['size']} {result['workload']} seed {result['seed']}: upper bound {b['milp']} GPUs "
          f"({'proven MILP optimum' if b['milp_proven'] else 'MILP dual bound'}; LP {b['lp']}), "
          f"{b['jobs']} GPU jobs on {b['nodes']} GPU nodes")
    for mode in ("volcano", "optimize"):
        m = result[mode]
        print(f"  {mode:9s} {m['gpus_placed']:5d} GPUs placed, gap {m['gap']:.1%}  "
              f"({m['session_ms']:.0f} ms wall, {m['session_cpu_ms']:.0f} ms cpu)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
