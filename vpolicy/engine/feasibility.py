"""After the actions: ask the solver whether each unplaced gang could fit at all.

Volcano's allocate is greedy, so "not placed" has two meanings a user must tell apart: no placement of
`minAvailable` tasks exists on the free resources (an `Unsat` proof, with the rules in its core), or
one exists and the greedy order missed it. Nodes and tasks are aggregated into classes
(`compile.encode_gang`), predicates are evaluated exactly per class representative, and the whole
check runs under a time budget; `Unknown` adds nothing (never read as infeasible). A gang whose tasks
have pod affinity, topology spread or host ports is not checked: those relate its tasks to each other
(and to other pods), which the class encoding does not express.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from vpolicy.compile import encode_gang, ir
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import JobInfo, NodeInfo, SessionState, TaskInfo
from vpolicy.model.snapshot import TaskStatus
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unsat
from vpolicy.source import Span

_BUILTIN = Span("<engine>", 0, 0)
# Z3 resource units per check: deterministic, unlike a timeout; a gang of a few task classes over a few
# node classes needs far less, and a check that runs out says Unknown, which adds nothing.
RLIMIT = 500_000
# Above this many node classes the aggregated encoding stops being small; the proof is skipped (a
# cluster with unique labels per node has one class per node).
MAX_NODE_CLASSES = 64
CAPACITY = ir.Label("engine.node-capacity", _BUILTIN, "request <= FutureIdle on every node")


@dataclass(frozen=True, slots=True)
class Verdict:
    job: str
    feasible: bool
    core: tuple[str, ...]


def check_unplaced_gangs(state: SessionState, runtime: Runtime, backend: Z3Backend, *,
                         budget_s: float = 0.2, max_jobs: int = 20) -> list[Verdict]:
    """At most `max_jobs` checks, each bounded by Z3's deterministic resource limit (so the same snapshot
    always gets the same answers); `budget_s` is only a wall-clock backstop."""
    verdicts: list[Verdict] = []
    deadline = time.perf_counter() + max(budget_s, 1.0)
    gang_rule = next((r for r in runtime.rules("job_ready")), None)
    gang_label = gang_rule.label if gang_rule else ir.Label("engine.min-available", _BUILTIN)
    pred_rule = next((r for r in runtime.rules("predicate")), None)
    pred_label = pred_rule.label if pred_rule else ir.Label("engine.predicates", _BUILTIN)
    node_groups = _node_groups(list(state.nodes.values()))
    if len(node_groups) > MAX_NODE_CLASSES:
        return verdicts
    for job in state.jobs.values():
        if len(verdicts) >= max_jobs or time.perf_counter() > deadline:
            break
        pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.best_effort]
        if not pending or runtime.job_ready(job):
            continue
        if any(t.relations.queries or t.relations.host_ports for t in pending):
            continue  # pod affinity, spread and host ports relate the tasks to each other: not encoded
        need = job.min_available - job.ready_count - job.pipelined_count
        if need <= 0:
            continue
        tasks = _task_classes(pending, node_groups, runtime)
        nodes = [encode_gang.NodeClass(len(group), group[0].future_idle) for group in node_groups]
        constraints = encode_gang.encode(job.key, tasks, nodes, need, gang_label=gang_label,
                                         capacity_label=CAPACITY, predicate_label=pred_label)
        remaining_ms = max(1, int((deadline - time.perf_counter()) * 1000))
        result = backend.check(constraints, timeout_ms=remaining_ms, rlimit=RLIMIT)
        if isinstance(result, Unsat):
            core = sorted({f"{l.rule_id} ({l.location})" for l in result.core})
            verdicts.append(Verdict(job.key, False, tuple(core)))
        elif isinstance(result, Sat):
            verdicts.append(Verdict(job.key, True, ()))
    return verdicts


def _node_groups(nodes: list[NodeInfo]) -> list[list[NodeInfo]]:
    groups: dict[tuple[object, ...], list[NodeInfo]] = {}
    for n in nodes:
        key = (n.future_idle, tuple(sorted(n.labels.items())), n.spec.taints, n.unschedulable, n.pod_count)
        groups.setdefault(key, []).append(n)
    return list(groups.values())


def _task_classes(pending: list[TaskInfo], groups: list[list[NodeInfo]], runtime: Runtime) -> list[encode_gang.TaskClass]:
    classes: dict[tuple[object, ...], list[TaskInfo]] = {}
    for t in pending:
        key = (t.resreq, t.role, tuple(sorted(t.pod.node_selector.items())), t.pod.tolerations,
               t.pod.required_affinity, t.relations.static_key)
        classes.setdefault(key, []).append(t)
    out = []
    for members in classes.values():
        rep = members[0]
        allowed = frozenset(k for k, group in enumerate(groups) if runtime.predicate(rep, group[0]) is None)
        out.append(encode_gang.TaskClass(len(members), rep.resreq, allowed))
    return out


def describe(verdict: Verdict, job: JobInfo, *, held_by: str = "") -> str:
    """The solver's note for the pods of `job`, after their own reason.

    The check encodes only node capacity, predicates and gang size, so a feasible verdict says that
    the free resources could hold the gang, nothing more. It blames Volcano's greedy order only when
    no job-level reason (`held_by`: not enqueued, invalid, its queue overused or full) kept the job
    from being tried; otherwise that reason is what holds it. An infeasible verdict is a proof whatever
    held the job: no placement exists on the free resources."""
    if not verdict.feasible:
        return (f"no placement of {job.min_available} tasks exists on the free resources (proved by the solver; "
                f"conflicting: {', '.join(verdict.core)})")
    if held_by:
        return (f"the nodes' free resources could hold {job.min_available} tasks (solver): what holds it is "
                f"its job's reason: {held_by}")
    return (f"a placement of {job.min_available} tasks exists on the free resources (solver); "
            "Volcano's greedy allocation did not find it this session")
