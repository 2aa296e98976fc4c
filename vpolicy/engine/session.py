"""One scheduling session: open over a snapshot, run the configured actions in order, close.

`run_session(snapshot, policy)` is the engine's whole public behaviour: snapshot and compiled policy
in, `Decisions` out (binds, pipelined, evictions, PodGroup phases and conditions, reasons for every
pending pod, queue status, timings). It is pure: the clock is passed in, nothing is read or written.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Mapping, Sequence

from vpolicy import collector
from vpolicy.engine.actions import ACTIONS
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.feasibility import SESSION_RLIMIT, check_unplaced_gangs, describe
from vpolicy.engine import optimize
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import PluginInstance, Runtime
from vpolicy.engine.state import JobInfo, SessionState, TaskInfo
from vpolicy.engine.statement import Outcome
from vpolicy.model.decisions import Decisions, Eviction, PodGroupStatus
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase, TaskStatus
from vpolicy.solve.backend_z3 import Z3Backend


# Volcano's default schedule period: optimize mode may add at most this much to a session
OPTIMIZE_BUDGET_S = 1.0


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """What a session needs from a policy: the actions in order and the tiers of plugin instances."""

    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginInstance, ...], ...]
    source: str = ""
    mode: str = "volcano"  # "optimize": same rules, better choices among feasible ones (engine.optimize)
    # the time optimize mode may add to a session beyond Volcano's own runs (`optimize.never_worse`):
    # its runs of the evicting actions stop once they have taken this long together, and Volcano's run
    # is kept (Volcano's schedule period, the DESIGN §7 session budget); None: no limit
    optimize_budget_s: float | None = OPTIMIZE_BUDGET_S
    # what loading the policy warned about, one line each (a plugin or setting of the conf that is not
    # implemented and was left out): the decisions may differ from Volcano's there, so tools show them
    warnings: tuple[str, ...] = ()
    # the conf's `configurations`: action name -> its arguments (gangpreempt's allowWholeBundle, ...)
    action_arguments: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # the conf's `metrics` section: where the live scheduler reads node usage from (docs/plugins.md)
    metrics: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SessionResult:
    decisions: Decisions
    state: SessionState
    context: ActionContext


def run_session(snapshot: ClusterSnapshot, policy: CompiledPolicy, *, now: float = 0.0,
                solver_budget: int = SESSION_RLIMIT, scheduler_names: tuple[str, ...] = ("volcano",),
                mode: str | None = None, last_runs: Mapping[str, float] | None = None,
                timezone: tzinfo | None = None, started: float | None = None,
                solver_budget_s: float | None = None) -> SessionResult:
    """Run one session. `solver_budget` bounds the post-action gang feasibility checks in Z3 resource
    units, never in time, so their notes do not depend on the machine's load (0 = no checks; see
    `engine.feasibility`). `solver_budget_s` is its old spelling, read only as 0 = no checks;
    pending pods are scheduled when their schedulerName is one of `scheduler_names` (or unset);
    `mode` ("volcano" or "optimize") overrides the policy's own. `last_runs`: when each `every` rule
    last ran in this scheduler (the previous sessions' `Decisions.rule_runs`; none: never). `timezone`:
    the zone `time_of_day` reads the clock in (Volcano: the scheduler's local time; default UTC).
    `started`: when the scheduler started (`every ... from start` rules; none: at `now`, a fresh one)."""
    with collector.paused():  # a session frees nothing before it ends (vpolicy.collector)
        if solver_budget_s is not None and solver_budget_s <= 0:
            solver_budget = 0
        return _run_session(snapshot, policy, now=now, solver_budget=solver_budget,
                            scheduler_names=scheduler_names, mode=mode, last_runs=last_runs,
                            timezone=timezone, scheduler_started=started)


def _run_session(snapshot: ClusterSnapshot, policy: CompiledPolicy, *, now: float, solver_budget: int,
                 scheduler_names: tuple[str, ...], mode: str | None, last_runs: Mapping[str, float] | None,
                 timezone: tzinfo | None, scheduler_started: float | None) -> SessionResult:
    started = time.perf_counter()
    state = SessionState(snapshot, scheduler_names=scheduler_names)
    runtime = Runtime(policy.tiers, state, now=now, last_runs=last_runs, timezone=timezone,
                      started=scheduler_started)
    outcome = Outcome()
    ctx = ActionContext(runtime, state, Placement(runtime, state), outcome, policy.actions,
                        mode=optimize.check_mode(mode or policy.mode), action_arguments=policy.action_arguments)
    if ctx.optimize:
        optimize.configure(ctx.placement, policy.actions)
        ctx.budget_left = policy.optimize_budget_s
    timings: dict[str, dict[str, float]] = {}
    for name in policy.actions:
        t0 = time.perf_counter()
        if ctx.optimize and name in optimize.EVICTING_ACTIONS:
            optimize.never_worse(ctx, ACTIONS[name], action=name)
        else:
            ACTIONS[name](ctx)
        timings[name] = {"ms": round((time.perf_counter() - t0) * 1000, 3)}
    backend = Z3Backend()
    t0 = time.perf_counter()
    if solver_budget > 0:
        for verdict in check_unplaced_gangs(state, runtime, backend, budget=solver_budget):
            job = state.jobs[verdict.job]
            ctx.solver_notes[verdict.job] = describe(verdict, job, held_by=_job_hold(ctx, job))
    solver_ms = round((time.perf_counter() - t0) * 1000, 3)
    decisions = close_session(ctx)
    runtime.session_close()  # the plugins' session-close rules (an extender's onSessionCloseVerb)
    decisions.annotations.update(state.devices.annotations(state.tasks, decisions.binds, now=now))
    decisions.stats = {
        "session_ms": round((time.perf_counter() - started) * 1000, 3),
        "actions": timings,
        "rule_calls": runtime.calls,
        "solver": {"calls": backend.calls, "ms": solver_ms},
    }
    if ctx.optimize_runs:
        decisions.stats["optimize"] = ctx.optimize_runs
    decisions.rule_runs = dict(runtime.ran)
    decisions.numa_holds = state.numa.holds_after(decisions.binds, state.tasks.values())
    decisions.volume_bindings = state.pod_index.volume_book.bindings(decisions.binds)
    return SessionResult(decisions, state, ctx)


def close_session(ctx: ActionContext) -> Decisions:
    state, rt, outcome = ctx.state, ctx.runtime, ctx.outcome
    d = Decisions()
    for task in outcome.dispatched:
        if task.status is TaskStatus.BINDING:
            d.binds[task.key] = task.node_name
    for job in state.jobs.values():
        if not job.counts.get(TaskStatus.PIPELINED):
            continue  # most jobs: no need to look at their tasks
        for task in job.tasks:
            if task.status is TaskStatus.PIPELINED:
                d.pipelined[task.key] = task.node_name
                if task.eviction_occurred:
                    d.nominated[task.key] = task.node_name
    for op in outcome.evicted:
        d.evictions.append(Eviction(op.task.key, op.action, op.for_job, op.rule))
    for job in state.jobs.values():
        ready = rt.job_ready(job)
        status = _podgroup_status(job, ready, ctx)
        d.podgroups[job.key] = status
        if not any(job.counts.get(s) for s in _REPORTED_STATUSES):
            continue
        gang_message = next((c["message"] for c in status.conditions if c["type"] == "Unschedulable"), "")
        for task in job.tasks:
            if task.status is TaskStatus.PENDING and not task.evicted:
                d.unschedulable[task.key] = _reasons(ctx, job, task.uid, gang_message)
                if task.last_placement is not None:  # placed, then undone with its job's statement
                    d.pod_conditions[task.key] = _placed_condition(task.key, *task.last_placement)
                    continue
                own_errors = task.uid in ctx.fit_errors
                # the pod's own reason, as Volcano writes it; the solver's note after it depends on the
                # solver's time budget, and a message that changes with load would be written again
                d.pod_conditions[task.key] = _condition("Unschedulable" if own_errors else "Undetermined",
                                                        d.unschedulable[task.key][0])
            elif task.status is TaskStatus.ALLOCATED:
                # placed by a statement that was neither committed nor discarded (a pipelined gang):
                # it holds the node's resources this session but is not bound (reference §4.2)
                d.unschedulable[task.key] = [
                    f"held on {task.node_name} for its gang, which is pipelined but not ready: not bound "
                    "this session"]
                d.pod_conditions[task.key] = _placed_condition(task.key, "allocate", task.node_name)
            elif task.status is TaskStatus.PIPELINED:
                d.pod_conditions[task.key] = _condition(
                    "Unschedulable", f"Pod {task.key} can possibly be assigned to {task.node_name}, once "
                    "resource is released and minAvailable is satisfied")
    _orphan_reasons(state, d)
    for queue in state.queues.values():
        tree = [queue, *queue.descendants()]
        counts = Counter(j.phase for q in tree for j in q.jobs)
        d.queues[queue.name] = {
            "state": queue.state,
            "allocated": queue.tree_allocated.to_dict(),
            **{k.lower(): counts.get(k, 0) for k in ("Pending", "Inqueue", "Running", "Unknown", "Completed")},
        }
    return d


# the statuses of the tasks close_session writes a pod condition or reason for
_REPORTED_STATUSES = (TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.PIPELINED)


def _condition(reason: str, message: str) -> dict[str, str]:
    """The PodScheduled=False condition of a task not bound this session, as Volcano's
    TaskSchedulingReason words it: Unschedulable (its own fit errors, or pipelined), Undetermined
    (not tried for a reason of its job), Schedulable (held for its gang)."""
    return {"reason": reason, "message": message}


def _placed_condition(key: str, kind: str, node: str) -> dict[str, str]:
    """Schedulable: a task that was placed (held for its gang, or placed and then undone with its job's
    statement), as Volcano's TaskSchedulingReason reads the last transaction."""
    released = " once resource is released" if kind == "pipeline" else ""
    return _condition("Schedulable", f"Pod {key} can possibly be assigned to {node},{released} once minAvailable "
                                     "is satisfied")


def _orphan_reasons(state: SessionState, d: Decisions) -> None:
    """Pending pods that name a podgroup the session has no job for: say why Volcano skips them."""
    podgroups = {pg.key: pg for pg in state.snapshot.podgroups}
    for task in state.other_pods:
        pod = task.pod
        if not pod.group or pod.node_name or task.status is not TaskStatus.PENDING:
            continue
        pg = podgroups.get(f"{pod.namespace}/{pod.group}")
        if pg is None:
            d.unschedulable[pod.key] = [f"podgroup {pod.namespace}/{pod.group} does not exist"]
        elif pg.queue not in state.queues:
            d.unschedulable[pod.key] = [f"queue {pg.queue!r} of podgroup {pg.key} does not exist"]


def _job_hold(ctx: ActionContext, job: JobInfo) -> str:
    """The job-level reason that kept `job` out of allocation this session ("" when none): what the
    actions recorded (not enqueued, invalid, queue overused or full), or a podgroup still Pending. The
    solver's feasibility check encodes none of these, so its note must not blame the greedy order."""
    if ctx.job_reasons.get(job.key):
        return ctx.job_reasons[job.key]
    if job.phase == PodGroupPhase.PENDING.value:
        return "podgroup is Pending: not enqueued"
    return ""


def _reasons(ctx: ActionContext, job: JobInfo, uid: str, gang_message: str) -> list[str]:
    """Why a task is still pending: its own fit errors, else its job's reason (as Volcano records the
    job's fit-error message on tasks that have none of their own), plus what the solver proved."""
    errors = ctx.fit_errors.get(uid)
    note = ctx.solver_notes.get(job.key)
    held = _job_hold(ctx, job)
    if errors is not None:
        first = errors.text()
    elif held:
        first = held
    elif gang_message:
        first = gang_message
    else:
        first = "not scheduled in this session: its job placed other tasks this turn (one task per turn once ready)"
    return [first, note] if note else [first]


def _podgroup_status(job: JobInfo, ready: bool, ctx: ActionContext) -> PodGroupStatus:
    counts = job.counts  # per status, kept by set_status (read directly: this runs for every job)
    running = counts.get(TaskStatus.RUNNING, 0)
    succeeded = counts.get(TaskStatus.SUCCEEDED, 0)
    failed = counts.get(TaskStatus.FAILED, 0)
    conditions: list[dict[str, str]] = []
    unschedulable = False
    if job.tasks:
        if ready:
            conditions.append({"type": "Scheduled", "status": "True",
                               "reason": "tasks in gang are ready to be scheduled", "message": ""})
        else:
            unschedulable = True
            schedulable = job.ready_count
            message = (f"{job.min_available - schedulable}/{len(job.tasks)} tasks in gang unschedulable: "
                       f"{_job_fit_error(ctx, job)}")
            conditions.append({"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                               "message": message})
    scheduled = running + counts.get(TaskStatus.BOUND, 0) + failed + succeeded
    if counts.get(TaskStatus.RELEASING, 0):
        scheduled += sum(1 for t in job.tasks if t.status is TaskStatus.RELEASING and t.node_name)
    if running and unschedulable:
        phase = PodGroupPhase.UNKNOWN.value
    elif scheduled >= job.min_available and (scheduled > 0 or job.min_available == 0):
        finished = succeeded + failed
        phase = PodGroupPhase.COMPLETED.value if scheduled and finished == scheduled else PodGroupPhase.RUNNING.value
    elif job.phase == PodGroupPhase.INQUEUE.value:
        phase = PodGroupPhase.INQUEUE.value
    else:
        phase = PodGroupPhase.PENDING.value
    return PodGroupStatus(phase, tuple(conditions), running, succeeded, failed)


def _job_fit_error(ctx: ActionContext, job: JobInfo) -> str:
    by_status = Counter(t.status.value for t in job.tasks)
    by_status["minAvailable"] = job.min_available
    text = "pod group is not ready, " + ", ".join(sorted(f"{n} {s}" for s, n in by_status.items()))
    pending = [t for t in job.tasks if t.status is TaskStatus.PENDING]
    if pending:
        why = Counter(_pending_reason(ctx, t) for t in pending)
        text += "; Pending: " + ", ".join(sorted(f"{n} {s}" for s, n in why.items()))
    origin = ctx.job_reasons.get(job.key)
    if origin:
        return f"{text}. Origin reason is {origin}"
    for task in job.tasks:
        errors = ctx.fit_errors.get(task.uid)
        if errors is not None:
            return f"{text}. Origin reason is {task.name}: {errors.text()}"
    return text


def _pending_reason(ctx: ActionContext, task: TaskInfo) -> str:
    """Volcano's TaskSchedulingReason for a pending task: Schedulable when it was placed this session
    and undone with its job's statement, Unschedulable with fit errors of its own, else Undetermined."""
    if task.last_placement is not None:
        return "Schedulable"
    return "Unschedulable" if task.uid in ctx.fit_errors else "Undetermined"


def plugin_names(policy: CompiledPolicy) -> Sequence[str]:
    return [p.name for tier in policy.tiers for p in tier]
