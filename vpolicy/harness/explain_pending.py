"""Why a job's pending tasks are not placed: the minimal set of rule instances that conflict.

After a session, the job's situation is turned into the labelled integer problem of
`compile.encode_explain`, each group carrying one rule instance and its numbers, all computed with the
exact evaluator on the session's final state:

- the job-level gates that closed it: a `job_valid` rule that failed, `job_enqueueable` rules that
  rejected a still-Pending podgroup, `overused` rules that dropped its queue;
- per task class, each `allocatable` rule's allowance (how many more tasks of the class the queue takes,
  found by raising the queue's allocated one task at a time and re-asking the rule);
- per node class (nodes with the same FutureIdle and the same failing predicate rules), each failing
  `predicate` rule, and the node capacity (the actions' "Insufficient <res>" check);
- gang minAvailable (and minTaskMember per role) from the `job_ready` rule, or one task for a single pod.

Z3 answers: `Unsat` with a minimal core (`solve.cores`), `Sat` with a placement the greedy session did
not make, or `Unknown` (reported as such, never as a conflict). A job that a gate closed is asked twice:
first the gate against the gang (what held it this session, shown first whatever other rule would also
block it), then the rest without the gates (what would block it next). Fix search lives in `explain_fix`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from vpolicy.compile import encode_explain as enc
from vpolicy.compile import encode_gang
from vpolicy.compile import ir
from vpolicy.compile.lower import CompiledModule, CompiledRule
from vpolicy.engine.runtime import Runtime, evaluate_clause
from vpolicy.engine.session import SessionResult
from vpolicy.engine.state import JobInfo, NodeInfo, TaskInfo
from vpolicy.harness import explain_render as render
from vpolicy.model.resources import PODS
from vpolicy.model.snapshot import PodGroupPhase, TaskStatus
from vpolicy.solve import cores
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unsat
from vpolicy.source import Span

ENGINE = Span("<engine>", 0, 0)
_NAMES_SHOWN = 3  # node names listed per node class before "and N more"


@dataclass(frozen=True, slots=True)
class CoreItem:
    """One conflicting rule instance, ready to print: kind, rule id, `file:line`, and its numbers."""

    kind: str  # gate | enqueue | overused | allocatable | predicate | capacity | gang | tasks
    rule: str
    location: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "rule": self.rule, "location": self.location, "text": self.text}


@dataclass(slots=True)
class Analysis:
    """What the solver says about one pending job (or one pending pod's share of it)."""

    job: str
    verdict: str  # conflict | fits | unknown | nothing-pending
    core: list[CoreItem] = field(default_factory=list)
    minimal: bool = False
    witness: list[str] = field(default_factory=list)  # for `fits`: where the tasks could go
    reason: str = ""  # for `unknown`
    need: int = 0
    ms: float = 0.0
    # when a job-level gate (enqueue, job_valid, overused) is in the core: the other gates that close
    # the job on their own, and what the solver says once the gates are open (None: no gate held it)
    also: list[CoreItem] = field(default_factory=list)
    after: Analysis | None = None

    def short(self) -> str:
        if self.verdict == "conflict":
            shown = [i for i in self.core if i.rule != "engine.place-task"] or self.core
            return "conflict: " + "; ".join(f"{i.rule} ({i.location}): {i.text}" if i.location != "<engine>"
                                            else f"{i.rule}: {i.text}" for i in shown)
        if self.verdict == "fits":
            return "fits on the free resources (solver); the greedy session did not place it"
        if self.verdict == "unknown":
            return f"solver gave up ({self.reason})"
        return "nothing pending"

    def to_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "minimal": self.minimal, "need": self.need,
                "core": [i.to_json() for i in self.core], "witness": self.witness, "reason": self.reason,
                "ms": self.ms, "also": [i.to_json() for i in self.also],
                "after": self.after.to_json() if self.after is not None else None}


@dataclass(frozen=True, slots=True)
class _Problem:
    """One job's question as labelled groups, with what is needed to read an answer back."""

    job: str
    groups: list[cores.Group]
    hard: tuple[ir.Term, ...]
    kinds: dict[ir.Label, str]
    classes: list[enc.TaskClass]
    nodes: list[enc.NodeClass]
    need: int

    def kind(self, group: cores.Group) -> str:
        return self.kinds.get(group.label, "")

    def item(self, group: cores.Group) -> CoreItem:
        return _item(group.label, self.kinds)


def analyse(result: SessionResult, job_key: str, *, target: TaskInfo | None = None,
            backend: Z3Backend | None = None, rlimit: int = cores.CHECK_RLIMIT) -> Analysis:
    """The minimal conflicting rule instances that keep `job_key`'s pending tasks (or `target`) unplaced.

    When a job-level gate closed the job (not enqueued, invalid, its queue overused), that gate is the
    conflict reported: the session never tried the job, so another rule that would also block it (a
    queue's allocatable share, a full node) is what comes next, in `after`, not what held it."""
    job = result.state.jobs[job_key]
    pending = _pending(result, job, target)
    if not pending:
        return Analysis(job_key, "nothing-pending")
    problem = _problem(result, job, pending, target)
    backend = backend or Z3Backend()
    gates = sorted((g for g in problem.groups if problem.kind(g) in _GATE_ORDER),
                   key=lambda g: _GATE_ORDER[problem.kind(g)])
    if not gates:
        return _solve(problem, problem.groups, backend, rlimit)
    needs = [g for g in problem.groups if problem.kind(g) == "gang"]
    held = _solve(problem, [gates[0], *needs], backend, rlimit)
    held.also = [problem.item(g) for g in gates[1:]]
    held.after = _solve(problem, [g for g in problem.groups if g not in gates], backend, rlimit)
    held.ms = round(held.ms + held.after.ms, 3)
    return held


def enqueue_refusal(result: SessionResult, job_key: str) -> Analysis | None:
    """For a podgroup with no pods yet (a Volcano Job's controller creates them once it is enqueued): the
    `job_enqueueable` rules that kept it Pending this session, with their numbers; None when it was
    enqueued, or enqueue does not run. Each rule refuses it on its own (the first is the core, the others
    `also`), so no solver is asked: there are no tasks to place."""
    job = result.state.jobs[job_key]
    kinds: dict[ir.Label, str] = {}
    refusals = [_item(limit.label, kinds) for limit in _enqueue_gates(result, job, kinds)]
    if not refusals:
        return None
    return Analysis(job_key, "conflict", core=refusals[:1], minimal=True, also=refusals[1:])


_DROP_ORDER = {"capacity": 0, "tasks": 1, "predicate": 2, "allocatable": 3, "overused": 4, "enqueue": 5,
               "gate": 6, "gang": 7}
_KIND_ORDER = {"gate": 0, "enqueue": 1, "overused": 2, "gang": 3, "tasks": 4, "allocatable": 5, "predicate": 6,
               "capacity": 7}
# Job-level gates, in the order a session meets them: enqueue keeps a podgroup Pending before allocate
# checks job_valid, and allocate checks job_valid before it drops an overused queue's jobs.
_GATE_ORDER = {"enqueue": 0, "gate": 1, "overused": 2}


def _problem(result: SessionResult, job: JobInfo, pending: list[TaskInfo], target: TaskInfo | None) -> _Problem:
    """`job`'s question on the session's final state: every rule instance as one labelled group."""
    state, rt = result.state, result.context.runtime
    kinds: dict[ir.Label, str] = {}
    classes, reps = _task_classes(pending)
    limits = _gates(result, job, kinds) + _allowances(rt, job, classes, reps, kinds)
    nodes, exclusions = _node_classes(rt, list(state.nodes.values()), reps, kinds)
    needs, need = _needs(rt, job, classes, target, kinds)
    tasks_label = ir.Label("job.pending-tasks", ENGINE, f"{job.key} has {len(pending)} pending task"
                           f"{'s' if len(pending) != 1 else ''}: " + "; ".join(
                               f"{tc.count} x {render.resources(tc.request)}" + (f" (role {tc.role})" if tc.role else "")
                               for tc in classes))
    kinds[tasks_label] = "tasks"
    encoding = enc.encode(classes, nodes, exclusions=exclusions, limits=limits, needs=needs, tasks_label=tasks_label)
    groups = [cores.Group(label, terms) for label, terms in encoding.groups]
    return _Problem(job.key, groups, encoding.hard, kinds, classes, nodes, need)


def _solve(problem: _Problem, groups: list[cores.Group], backend: Z3Backend, rlimit: int) -> Analysis:
    """Solve `groups` of `problem` together: a minimal core, a witness placement, or unknown."""
    # Engine facts (full nodes, task counts) go first when the core is shrunk, so a rule that also blocks
    # the job is the one shown; gang and gates are dropped last.
    drop_first = sorted(range(len(groups)), key=lambda i: _DROP_ORDER.get(problem.kind(groups[i]), 5))
    outcome = cores.minimal_core(backend, groups, hard=problem.hard, rlimit=rlimit, drop_first=drop_first)
    analysis = Analysis(problem.job, "unknown", need=problem.need, ms=outcome.ms)
    if isinstance(outcome.result, Unsat):
        analysis.verdict = "conflict"
        analysis.minimal = outcome.minimal
        analysis.core = sorted((problem.item(g) for g in outcome.groups), key=lambda i: _KIND_ORDER.get(i.kind, 9))
    elif isinstance(outcome.result, Sat):
        analysis.verdict = "fits"
        classes, nodes = problem.classes, problem.nodes
        placed = enc.read_placement(outcome.result.model, len(classes), len(nodes))
        analysis.witness = [f"{n} task{'s' if n != 1 else ''} of {render.resources(classes[c].request)} on "
                            f"{nodes[k].label.text.split(':')[0]}" for (c, k), n in sorted(placed.items()) if n > 0]
    else:
        analysis.reason = outcome.result.reason
    return analysis


def _item(label: ir.Label, kinds: dict[ir.Label, str]) -> CoreItem:
    return CoreItem(kinds.get(label, "rule"), label.rule_id, render.location(label), label.text)


# The pieces ------------------------------------------------------------------------------------------

def _pending(result: SessionResult, job: JobInfo, target: TaskInfo | None) -> list[TaskInfo]:
    best_effort = bool(target is not None and target.best_effort)
    return [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.evicted
            and not t.pod.scheduling_gated and t.best_effort == best_effort]


def _task_classes(pending: list[TaskInfo]) -> tuple[list[enc.TaskClass], list[TaskInfo]]:
    groups: dict[tuple[object, ...], list[TaskInfo]] = {}
    for t in pending:
        key = (t.resreq, t.role, tuple(sorted(t.pod.node_selector.items())), t.pod.tolerations,
               t.pod.required_affinity, t.relations.key)  # pod affinity and spread: per kind of terms
        groups.setdefault(key, []).append(t)
    classes = [enc.TaskClass(len(members), members[0].resreq, members[0].role) for members in groups.values()]
    return classes, [members[0] for members in groups.values()]


def _module_of(rt: Runtime, rule: CompiledRule) -> CompiledModule:
    for tier in rt.tiers:
        for plugin in tier:
            if plugin.module.name == rule.plugin:
                return plugin.module
    raise LookupError(rule.plugin)


def _label(rule: CompiledRule, text: str) -> ir.Label:
    return ir.Label(rule.label.rule_id, rule.label.span, text)


def _gates(result: SessionResult, job: JobInfo, kinds: dict[ir.Label, str]) -> list[enc.Limit]:
    rt = result.context.runtime
    out: list[enc.Limit] = []
    invalid = rt.job_valid(job)
    if invalid is not None:
        label = _label(invalid.rule, f"{invalid.reason}: {invalid.message}")
        kinds[label] = "gate"
        out.append(enc.Limit(label, 0))
    out += _enqueue_gates(result, job, kinds)
    for rule in rt.rules("overused"):
        if rt.ask(rule, job.queue):
            why = render.why_holds(rule, _module_of(rt, rule), rt.env, job.queue)
            label = _label(rule, f"queue {job.queue.name} is overused: {why}")
            kinds[label] = "overused"
            out.append(enc.Limit(label, 0))
    return out


def _enqueue_gates(result: SessionResult, job: JobInfo, kinds: dict[ir.Label, str]) -> list[enc.Limit]:
    """A podgroup still Pending after a session that runs enqueue: each `job_enqueueable` rule that
    rejects it, with why (one label per rule, not the combined vote), or the engine's word when none
    does on the final state."""
    rt, ctx = result.context.runtime, result.context
    if job.phase != PodGroupPhase.PENDING.value or "enqueue" not in ctx.actions:
        return []
    out: list[enc.Limit] = []
    for rule in rt.rules("job_enqueueable"):
        if rt.ask(rule, job) < 0:
            why = render.why_not(rule, _module_of(rt, rule), rt.env, job)
            label = _label(rule, f"podgroup stays Pending (job is not enqueued: queue resource quota "
                                 f"insufficient): {why}")
            kinds[label] = "enqueue"
            out.append(enc.Limit(label, 0))
    if not out:
        label = ir.Label("engine.not-enqueued", ENGINE, "podgroup is Pending: not enqueued in this session")
        kinds[label] = "enqueue"
        out.append(enc.Limit(label, 0))
    return out


def _allowances(rt: Runtime, job: JobInfo, classes: list[enc.TaskClass], reps: list[TaskInfo],
                kinds: dict[ir.Label, str]) -> list[enc.Limit]:
    """Per allocatable rule and task class: how many more tasks of the class the queue takes."""
    out: list[enc.Limit] = []
    queue = job.queue
    for rule in rt.rules("allocatable"):
        for c, (tc, rep) in enumerate(zip(classes, reps)):
            saved = queue.allocated
            allowed, why = tc.count, ""
            try:
                for i in range(tc.count):
                    queue.allocated = saved + rep.resreq.times(i)
                    if not rt.ask(rule, queue, rep):
                        allowed = i
                        why = render.why_not(rule, _module_of(rt, rule), rt.env, queue, rep)
                        break
            finally:
                queue.allocated = saved
            if allowed < tc.count:
                more = f"takes {allowed} more" if allowed else "takes no more"
                label = _label(rule, f"queue {queue.name}: allocated {render.resources(saved, _asked(rep))}, "
                                     f"this task asks {render.resources(rep.resreq, _asked(rep))}; {more} ({why})")
                kinds[label] = "allocatable"
                out.append(enc.Limit(label, allowed, frozenset({c})))
    return out


def _asked(task: TaskInfo) -> list[str]:
    return sorted(task.resreq.dims() - {PODS}) or [PODS]


# The extended resources the node agent publishes from what online pods leave idle (docs/agent.md).
LENT_RESOURCES = frozenset({"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"})


def _node_classes(rt: Runtime, nodes: list[NodeInfo], reps: list[TaskInfo],
                  kinds: dict[ir.Label, str]) -> tuple[list[enc.NodeClass], list[enc.Exclusion]]:
    failing_by_node: dict[str, tuple[tuple[CompiledRule, ...], ...]] = {}
    reasons: dict[tuple[str, int], str] = {}
    for node in nodes:
        row = []
        for c, rep in enumerate(reps):
            failed = []
            for rule in rt.rules("predicate"):  # every failing rule, not only the first
                if not rt.ask(rule, rep, node):
                    failed.append(rule)
                    reasons[(rule.label.rule_id, id(node))] = (
                        evaluate_clause(rule, rule.reason, rt.env, part="reason") if rule.reason else rule.name)
            row.append(tuple(failed))
        failing_by_node[node.name] = tuple(row)
    groups: dict[tuple[object, ...], list[NodeInfo]] = {}
    for node in nodes:
        key = (node.future_idle, tuple(tuple(r.label.rule_id for r in f) for f in failing_by_node[node.name]))
        groups.setdefault(key, []).append(node)
    classes: list[enc.NodeClass] = []
    exclusions: list[enc.Exclusion] = []
    for k, members in enumerate(groups.values()):
        first = members[0]
        names = _names(members)
        free = first.future_idle
        insufficient = sorted({d for rep in reps for d in rep.resreq.any_gt(free)})
        dims = sorted({d for rep in reps for d in rep.resreq.dims()} - {PODS}) or [PODS]
        text = f"{names}: free {render.resources(free, dims)}{' each' if len(members) > 1 else ''}"
        room = [len(members) * encode_gang.per_node_fit(free, rep.resreq) for rep in reps]
        if len(reps) == 1 and room[0] < classes_needed(reps):
            text += f", room for {room[0]} such task{'s' if room[0] != 1 else ''}"
        if insufficient:
            text += " (" + ", ".join(f"Insufficient {d}" for d in insufficient) + ")"
            if set(insufficient) & LENT_RESOURCES:
                text += "; batch resources are what the node agent lends from idle online capacity: " \
                    "BE pods wait for oversubscribed room (docs/agent.md)"
        label = ir.Label("engine.node-capacity", ENGINE, text)
        kinds[label] = "capacity"
        classes.append(enc.NodeClass(len(members), free, label))
        per_rule: dict[str, tuple[CompiledRule, set[int]]] = {}
        for c, failing in enumerate(failing_by_node[first.name]):
            for rule in failing:
                per_rule.setdefault(rule.label.rule_id, (rule, set()))[1].add(c)
        for rule_id, (rule, task_classes) in per_rule.items():
            reason = reasons.get((rule_id, id(first)), rule.name)
            plabel = _label(rule, f"{reason} on {names}")
            kinds[plabel] = "predicate"
            exclusions.append(enc.Exclusion(plabel, k, frozenset(task_classes)))
    return classes, exclusions


def classes_needed(reps: list[TaskInfo]) -> int:
    """How many tasks the job wants placed (for the room note on node classes)."""
    job = reps[0].job
    return max(1, job.min_available - job.ready_count) if job is not None else 1


def _names(nodes: list[NodeInfo]) -> str:
    names = [n.name for n in nodes]
    shown = ", ".join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown += f" and {len(names) - _NAMES_SHOWN} more"
    return f"node{'s' if len(names) > 1 else ''} {shown}"


def _needs(rt: Runtime, job: JobInfo, classes: list[enc.TaskClass], target: TaskInfo | None,
           kinds: dict[ir.Label, str]) -> tuple[list[enc.Need], int]:
    ready_rules = rt.rules("job_ready")
    out: list[enc.Need] = []
    need = job.min_available - job.ready_count - job.pipelined_count - job.pending_best_effort_count
    if ready_rules and need > 0:
        rule = ready_rules[0]
        label = _label(rule, f"minAvailable {job.min_available}: {job.ready_count} ready, {job.pipelined_count} "
                             f"pipelined; {need} more must be placed together")
        kinds[label] = "gang"
        out.append(enc.Need(label, need))
        members = job.min_task_member
        if members and job.min_available >= sum(members.values()):
            for role, want in sorted(members.items()):
                have = job.role_count(role, frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING,
                                                       TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED,
                                                       TaskStatus.PIPELINED}))
                role_classes = frozenset(c for c, tc in enumerate(classes) if tc.role == role)
                if want > have and role_classes:
                    rlabel = _label(rule, f"role {role}: minTaskMember {want}, {have} placed")
                    kinds[rlabel] = "gang"
                    out.append(enc.Need(rlabel, want - have, role_classes))
        return out, need
    label = ir.Label("engine.place-task", ENGINE,
                     f"place {target.key if target is not None else 'one pending task of ' + job.key}")
    kinds[label] = "gang"
    wanted = None
    if target is not None:
        wanted = frozenset(c for c, tc in enumerate(classes) if tc.request == target.resreq and tc.role == target.role)
    out.append(enc.Need(label, 1, wanted or None))
    return out, 1
