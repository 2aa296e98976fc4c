"""After the actions: ask the solver whether each unplaced gang could fit at all.

Volcano's allocate is greedy, so "not placed" has two meanings a user must tell apart: no placement of
`minAvailable` tasks exists on the free resources (an `Unsat` proof, with the rules in its core), or
one exists and the greedy order missed it. Nodes and tasks are aggregated into classes
(`compile.encode_gang`), predicates are evaluated exactly per class representative, and the whole
check runs under a budget of Z3 resource units, never of time: the notes a user reads (pod reasons,
`explain`) are the same on a busy machine as on an idle one. `Unknown` adds nothing (never read as
infeasible). A gang whose tasks
have pod affinity, topology spread or host ports is not checked: those relate its tasks to each other
(and to other pods), which the class encoding does not express.
"""
from __future__ import annotations

from dataclasses import dataclass

from vpolicy.compile import encode_gang, ir
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import JobInfo, NodeInfo, SessionState, TaskInfo
from vpolicy.model.snapshot import TaskStatus
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unsat
from vpolicy.source import Span

_BUILTIN = Span("<engine>", 0, 0)
# The budget is counted in Z3 resource units (`rlimit`), deterministic, unlike a timeout. Per check Z3 may
# use RLIMIT: a gang of 2 task classes over 8 node classes needs ~6,000, 40 tasks of 4 classes over 32
# node classes 100,000-500,000; a check that runs out says Unknown, which adds nothing. The session's
# checks share SESSION_RLIMIT, each charged Z3's units plus its Python work in the same units: building and
# translating a constraint costs ~100 us of CPU, what Z3 does with ~500 units (Z3 ran 4-6M units per CPU
# second on these checks), and a check ~20,000 more. SESSION_RLIMIT is then about half a second of CPU,
# what the 1 s wall-clock backstop it replaces gave on a loaded machine; the jobs after it get no note.
RLIMIT = 500_000
SESSION_RLIMIT = 2_500_000
UNITS_PER_CONSTRAINT = 500
UNITS_PER_CHECK = 20_000
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
                         budget: int = SESSION_RLIMIT, max_jobs: int = 20) -> list[Verdict]:
    """At most `max_jobs` verdicts, each check within `RLIMIT` Z3 resource units and all within `budget`
    (Z3's units and each check's size, see SESSION_RLIMIT): counted, never timed, so the same snapshot
    always gets the same answers, however busy the machine."""
    verdicts: list[Verdict] = []
    spent = 0
    gang_rule = next((r for r in runtime.rules("job_ready")), None)
    gang_label = gang_rule.label if gang_rule else ir.Label("engine.min-available", _BUILTIN)
    pred_rule = next((r for r in runtime.rules("predicate")), None)
    pred_label = pred_rule.label if pred_rule else ir.Label("engine.predicates", _BUILTIN)
    node_groups = _node_groups(list(state.nodes.values()))
    if len(node_groups) > MAX_NODE_CLASSES:
        return verdicts
    for job in state.jobs.values():
        if len(verdicts) >= max_jobs or spent >= budget:
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
        spent += UNITS_PER_CHECK + UNITS_PER_CONSTRAINT * len(constraints)
        if spent >= budget:
            break
        before = backend.rlimit_spent
        result = backend.check(constraints, rlimit=min(RLIMIT, budget - spent))
        spent += backend.rlimit_spent - before
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
