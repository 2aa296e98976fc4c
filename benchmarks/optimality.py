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
  verdicts are the same in every session under these rules (computed by an enqueue-only session);
- a GPU job of allocate's first turns is placed when no choice of nodes can stop it (`_first_turns`):
  the first turn starts from the same state in every session, and a turn whose pods fit enough nodes
  however the earlier turns' pods were spread places the same pods in every session, so the next turn
  starts from the same queue and job order too. Volcano's queue and job order (priority first) are
  rules; without this the bound "places" more GPUs by leaving out a job that every session must place
  first;
- with proportion's `within_deserved` and no evicting action, a queue's GPU pods stay within its
  deserved share less what it holds at the start and what those first turns place in it before its
  first GPU pod (`_queue_room`).

Dropped (so the bound may be loose, never wrong): capabilities and overuse, CPU pods placed after the
first turns (competing for GPU nodes' cpu and for their queue's deserved share), later turns' order,
preemption. The LP relaxation (fractional pods) is reported too; the gap is `1 - optimize / bound`, with
the proven MILP optimum when HiGHS finishes within `--time-limit` and its dual bound (still an upper
bound) when it does not.

This module only measures; it asserts nothing (the issue's target is a gap <= 2% on S).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from benchmarks import generate as gen
from benchmarks.run import decision_metrics, policy_for
from vpolicy.engine.optimize import gpus, is_gpu_dim
from vpolicy.engine.actions import allocate
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.placement import FitErrors, fits
from vpolicy.engine.session import CompiledPolicy, SessionResult, run_session
from vpolicy.engine.state import SessionState
from vpolicy.model.resources import ZERO, Resources
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

    opened = _after_enqueue(snapshot, policy)
    state = opened.state
    nodes = [n for n in state.nodes.values() if any(is_gpu_dim(d) and v > 0 for d, v in n.allocatable.items())]
    demands = _demands(state)
    # replayed on a session of its own: the replay places pods, the bound starts from the snapshot
    first = (_first_turns(_after_enqueue(snapshot, policy).context) if "allocate" in policy.actions
             else FirstTurns(set(), {}))
    forced = first.gpu_jobs
    free = {n.name: n.future_idle for n in nodes}
    n_jobs, n_nodes = len(demands), len(nodes)
    if not n_jobs or not n_nodes:
        return {"milp": 0, "lp": 0.0, "status": "trivial", "jobs": n_jobs, "nodes": n_nodes}
    # variables: n[j, k] (pods of job j on node k), then x[j] (job j placed at all)
    nv = n_jobs * n_nodes + n_jobs
    objective = np.zeros(nv)
    upper = np.zeros(nv)
    lower = np.zeros(nv)
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
        lower[n_jobs * n_nodes + j] = 1 if d.job in forced else 0
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
    for (queue, dim), room in _queue_room(opened, demands, policy.actions, first.held).items():
        row = np.zeros(nv)
        for j, d in enumerate(demands):
            if state.jobs[d.job].queue is queue:
                row[j * n_nodes:(j + 1) * n_nodes] = d.request.get(dim, 0)
        rows.append(row)
        lo.append(-np.inf)
        hi.append(float(room))
    constraints = LinearConstraint(np.array(rows), np.array(lo), np.array(hi))
    bounds = Bounds(lower, upper)
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
            "lp": round(float(-relaxed.fun), 2), "jobs": n_jobs, "nodes": n_nodes, "placed_first": sorted(forced),
            "status": exact.message}


def _after_enqueue(snapshot: ClusterSnapshot, policy: CompiledPolicy) -> SessionResult:
    """A session that ran only `enqueue` (none at all when the policy has no enqueue): its state and
    context are where allocate starts from in every session of the policy."""
    actions = ("enqueue",) if "enqueue" in policy.actions else ()
    return run_session(snapshot, CompiledPolicy(actions, policy.tiers, source=policy.source), solver_budget=0)


@dataclass(slots=True)
class FirstTurns:
    """What allocate's first turns do in every rule-abiding session (`_first_turns`)."""

    gpu_jobs: set[str]  # GPU jobs they place
    # queue name -> the requests of the other pods they place in that queue before its first GPU pod
    held: dict[str, Resources]


def _first_turns(ctx: ActionContext, *, max_turns: int = 256) -> FirstTurns:
    """Allocate's first turns replayed on `ctx` (which they change) while each is robust (see the
    module docstring).

    A turn is robust when its job's pending pods are alike and, of the nodes where one fits Idle and
    passes the predicates at the start, more than max(1, need) stay so whatever nodes the earlier turns'
    pods took (`_blockable`, over the nodes those pods could reach and overfill: a pod goes only to a
    node where it fitted at the start): each pod then finds one the others left alone. Robust turns place the
    same pods in every session (on different nodes, which no queue or job order reads), so the next
    turn starts from the same queue and job order; the replay stops at the first turn that is not."""
    rt = ctx.runtime
    queues, jobs_by_queue, worksheets = allocate.turn_queues(ctx)
    idle = {name: node.idle for name, node in ctx.state.nodes.items()}  # before any turn
    earlier, earlier_pods = ZERO, 0  # the pods the replayed turns placed: their sum and their number
    # node -> the most those pods could put there (all that could go: a pod goes only to a node where it
    # fitted at the start), and the largest request of one of them, per dimension
    reach: dict[str, Resources] = {}
    largest: dict[str, dict[str, int]] = {}
    out = FirstTurns(set(), {})
    gpu_queues: set[str] = set()  # queues a replayed turn placed a GPU pod in
    for _turn in range(max_turns):
        if queues.empty():
            break
        queue = queues.pop()
        jobs = jobs_by_queue.get(queue.name)
        if rt.overused(queue) or jobs is None or jobs.empty():
            continue  # the same in every session: overuse reads only what was placed, not where
        job = jobs.pop()
        tasks = worksheets[job.key]
        pods = [tasks.pop() for _ in range(len(tasks))]
        count = max(1, job.min_available - job.ready_count)
        if len({t.resreq for t in pods}) != 1 or count > len(pods):
            break
        request = pods[0].resreq
        fitting = [n for n in ctx.placement.feasible_nodes(pods[0], FitErrors()) if fits(request, idle[n.name])]
        # only where the earlier turns' pods could go, and could together exceed the room, can they block
        margins = {n.name: idle[n.name] - request for n in fitting}
        exposed = [(m, largest[name]) for name, m in margins.items() if not reach.get(name, ZERO).le(m)]
        if count > len(fitting) - _blockable(exposed, earlier, earlier_pods):
            break
        stmt = ctx.statement()
        for task, node in zip(pods[:count], fitting):
            if not rt.allocatable(job.queue, task):
                return out
            stmt.allocate(task, node.name)
        if not rt.job_ready(job):
            return out
        stmt.commit()
        earlier, earlier_pods = earlier + request.times(count), earlier_pods + count
        for node in fitting:
            reach[node.name] = reach.get(node.name, ZERO) + request.times(count)
            there = largest.setdefault(node.name, {})
            for dim, amount in request.items():
                there[dim] = max(there.get(dim, 0), amount)
        if gpus(request):
            out.gpu_jobs.add(job.key)
            gpu_queues.add(queue.name)
        elif queue.name not in gpu_queues:
            out.held[queue.name] = out.held.get(queue.name, ZERO) + request.times(count)
        for task in reversed(pods[count:]):
            tasks.push(task)
        if not tasks.empty():
            jobs.push(job)
        queues.push(queue)
    return out


def _queue_room(opened: SessionResult, demands: list[GangDemand], actions: Sequence[str],
                held: Mapping[str, Resources]) -> dict[tuple[Any, str], int]:
    """(queue, dimension) -> what the GPU pods a session places in the queue may add up to on that
    dimension, when the policy has proportion's `within_deserved` rule: a pod is placed only while its
    queue's allocation plus the pod stays within the queue's deserved share on every dimension it
    requests (but `pods`), and allocations only grow (no action of the policy may evict), so at the
    last GPU pod asking for d the queue holds at least what it held at the start, every GPU pod placed
    in it, and the pods `held` says every session places in it before its first GPU pod: the GPU pods
    sum to at most deserved less those two. Empty for a policy without that rule or with preempt or
    reclaim."""
    rt = opened.context.runtime
    if {"preempt", "reclaim"} & set(actions) or not any(
            r.plugin == "proportion" and r.name == "within_deserved" for r in rt.rules("allocatable")):
        return {}
    deserved = rt.env["$session"][("proportion", "deserved")]
    out: dict[tuple[Any, str], int] = {}
    for d in demands:
        queue = opened.state.jobs[d.job].queue
        before = held.get(queue.name, ZERO)
        for dim in d.request:
            if dim != "pods":
                out[(queue, dim)] = max(0, deserved[queue].get(dim, 0) - queue.allocated.get(dim, 0)
                                        - before.get(dim, 0))
    return out


def _blockable(nodes: list[tuple[Resources, Mapping[str, int]]], placed: Resources, pods: int) -> int:
    """At most how many of `nodes` — each (room left after one more pod, the largest request of a pod
    that could go there) — the `pods` pods summing to `placed` can fill past that room, however they
    are spread. A node is filled past its room in some dimension d only by pods summing to more than
    its margin in d there, and the pods on different nodes are different pods. So, per dimension, no
    more nodes than the smallest margins (+1) that `placed` covers, summed over dimensions; and no more
    nodes than the cheapest ones whose pod counts (the fewest pods that exceed the node's margin in
    some dimension, each pod at most the largest there) add up to at most `pods`."""
    by_sum = 0
    for dim, amount in placed.items():
        if amount <= 0:
            continue
        left = amount
        for need in sorted(margin.get(dim, 0) + 1 for margin, _largest in nodes):
            if need > left:
                break
            left -= need
            by_sum += 1
    costs = sorted(min((-(-(margin.get(dim, 0) + 1) // size) for dim, size in largest.items() if size > 0),
                       default=pods + 1) for margin, largest in nodes)
    by_count, spent = 0, 0
    for cost in costs:
        if spent + max(1, cost) > pods:
            break
        spent += max(1, cost)
        by_count += 1
    return min(by_sum, by_count, pods, len(nodes))


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
