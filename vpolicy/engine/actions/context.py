"""What every action works with: the runtime, the live state, node placement and the session outcome."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

import numpy as np

from vpolicy.engine.optimize import budget_clock
from vpolicy.engine.placement import FitErrors, Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import JobInfo, NodeInfo, SessionState, TaskInfo
from vpolicy.engine.statement import Operation, Outcome, Statement
from vpolicy.engine.victim_memo import VictimMemo, preemptor_reads
from vpolicy.engine.victim_plan import VictimPlan
from vpolicy.engine.victim_reuse import FailMemo
from vpolicy.model.snapshot import PodGroupPhase, TaskStatus


def unresolvable_before(ctx: ActionContext, task: TaskInfo) -> frozenset[str]:
    """The nodes an earlier action of the session found UnschedulableAndUnresolvable for `task` (its
    kept fit errors), which the evicting actions leave out for it (`Placement.preempt_rows`)."""
    return _unresolvable_kept(ctx, task)[0]


def unresolvable_rows_before(ctx: ActionContext, task: TaskInfo) -> np.ndarray:
    """`unresolvable_before` as node rows (those the session's node arrays hold)."""
    return _unresolvable_kept(ctx, task)[1]


_NONE_BEFORE: tuple[frozenset[str], np.ndarray] = (frozenset(), np.zeros(0, dtype=np.int64))


def _unresolvable_kept(ctx: ActionContext, task: TaskInfo) -> tuple[frozenset[str], np.ndarray]:
    """The task's recorded unresolvable nodes as names and rows, made once per set of fit errors (a
    set only grows): preempt asks for every preemptor, and at 5,000 nodes a task's set holds thousands."""
    recorded = ctx.fit_errors.get(task.uid)
    if recorded is None or not recorded.unresolvable:
        return _NONE_BEFORE
    kept = ctx.unresolvable_kept.get(task.uid)
    if kept is None or kept[0] is not recorded or kept[1] != len(recorded.unresolvable):
        names = frozenset(recorded.unresolvable)
        row = ctx.placement.arrays.row
        rows = np.array(sorted(row[name] for name in names if name in row), dtype=np.int64)
        kept = ctx.unresolvable_kept[task.uid] = (recorded, len(names), names, rows)
    return kept[2], kept[3]


_NODE_MEMO_KINDS = 4  # preemptor kinds whose per-node answers are kept (see ActionContext.kept_per_node)
T = TypeVar("T")


@dataclass(slots=True)
class ActionContext:
    runtime: Runtime
    state: SessionState
    placement: Placement
    outcome: Outcome
    actions: tuple[str, ...]
    mode: str = "volcano"  # "optimize": choices among feasible nodes and victims by engine.optimize
    # the conf's `configurations`: action name -> its arguments
    action_arguments: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # what is left of the session budget (`CompiledPolicy.optimize_budget_s`, the time optimize's own
    # runs of evicting actions may take together), and the `budget_clock()` time after which the run in
    # progress stops and Volcano's run of its action is kept; None: no limit
    budget_left: float | None = None
    deadline: float | None = None
    optimize_stopped: bool = False  # an optimize run found the budget spent (`out_of_time`)
    # evicting action -> which run optimize mode kept and why (`optimize.never_worse`)
    optimize_runs: dict[str, dict[str, str]] = field(default_factory=dict)
    fit_errors: dict[str, FitErrors] = field(default_factory=dict)  # task uid -> why it fits nowhere
    job_reasons: dict[str, str] = field(default_factory=dict)  # job key -> why it was not scheduled
    solver_notes: dict[str, str] = field(default_factory=dict)  # job key -> what the solver proved
    # (action, job, task spec) -> state version at which evicting could not place such a task: until
    # anything changes, its identical siblings cannot be placed either (skips re-scanning every node)
    eviction_failures: dict[tuple[object, ...], int] = field(default_factory=dict)
    # (action, job, task spec) -> node -> (node version, what is kept there for such a preemptor): its
    # candidates that could free room (`evict_common.useful_candidates`), and in optimize mode the
    # cheapest-victims bound (`optimize.node_bound`)
    node_candidates: dict[tuple[object, ...], dict[str, tuple[int, list[TaskInfo] | None]]] = field(
        default_factory=dict)
    victim_bounds: dict[tuple[object, ...], dict[str, tuple[int, Any]]] = field(default_factory=dict)
    # ("queue", name) -> node -> (node version, the queue's tasks there, in the node's order): where
    # preempt looks for victims of its queue, for every preemptor kind of that queue
    queue_tasks: dict[tuple[object, ...], dict[str, tuple[int, list[TaskInfo]]]] = field(default_factory=dict)
    # victim callback -> its answers kept per node (`engine.victim_memo`); None: its rules read the
    # preemptor, or what the memo cannot follow
    victim_memos: dict[str, VictimMemo | None] = field(default_factory=dict)
    # the same kinds as node_candidates -> per node row, 1 + the node version at which no candidate set
    # there could free room (`evict_common.useful_candidates` answered None), else 0: preempt's walk
    # drops those rows in one array step instead of asking each node
    useless_rows: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict)
    # preempt's failed nodes, kept while what the victim rules read there is unchanged
    # (`engine.victim_reuse`); made when preempt starts
    victim_fails: FailMemo | None = None
    # (job key, role) -> per node row: a task of the role failed preempt's predicate there this action
    # (Volcano's one PredicateHelper per preempt Execute, `preempt.allowed_rows`); cleared when it starts
    preempt_role_failures: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    # task uid -> (its fit errors, how many unresolvable nodes they held, those nodes' names and rows)
    # (`unresolvable_before`)
    unresolvable_kept: dict[str, tuple[FitErrors, int, frozenset[str], np.ndarray]] = field(default_factory=dict)
    # while optimize mode runs an evicting action again: what Volcano's run of it committed
    # (`optimize.never_worse`), the node where it placed each task (uid -> node name), and the joint
    # victim plan the action made from it (`victim_plan`)
    witness: list[Operation] | None = None
    witness_nodes: dict[str, str] = field(default_factory=dict)
    victim_plan: VictimPlan | None = None
    plan_floored: bool = False  # the plan keeps each queue's evictions at least the witness's

    def eviction_failed_before(self, key: tuple[object, ...]) -> bool:
        return self.eviction_failures.get(key) == self.state.version

    def remember_eviction_failure(self, key: tuple[object, ...]) -> None:
        self.eviction_failures[key] = self.state.version

    def kept_per_node(self, table: dict[tuple[object, ...], dict[str, tuple[int, T]]], kind: tuple[object, ...],
                      node: NodeInfo, compute: Callable[[NodeInfo], T]) -> T:
        """`compute(node)` for a preemptor of `kind`, kept in `table` (`node_candidates`,
        `victim_bounds` or `queue_tasks`) until the node changes (its version in the node arrays). Siblings come one
        after another (a job's preemptors are tried in a row), so only the last few kinds are kept:
        one per node per kind for every job of an L cluster took gigabytes."""
        memo = table.get(kind)
        if memo is None:
            while len(table) >= _NODE_MEMO_KINDS:
                del table[next(iter(table))]
            memo = table[kind] = {}
        arrays = self.placement.arrays
        version = int(arrays.version[arrays.row[node.name]])
        kept = memo.get(node.name)
        if kept is None or kept[0] != version:
            kept = memo[node.name] = (version, compute(node))
        return kept[1]

    def forget_node_memos(self) -> None:
        """Start an evicting action with no per-node answers kept (and their memory freed). Node versions
        follow every usage change and every reordering of a node's tasks (allocate's Allocated ->
        Binding, `SessionState._restatus_in_place`), so this is not needed for correctness."""
        self.node_candidates.clear()
        self.victim_bounds.clear()
        self.queue_tasks.clear()
        self.victim_memos.clear()
        self.useless_rows.clear()
        self.victim_fails = None

    def mark_useless(self, kind: tuple[object, ...], node: NodeInfo) -> None:
        """No candidate set of `kind` on `node` can free room at the node's version now (`useless_rows`)."""
        marks = self.useless_rows.get(kind)
        if marks is None:
            while len(self.useless_rows) >= _NODE_MEMO_KINDS:
                del self.useless_rows[next(iter(self.useless_rows))]
            marks = self.useless_rows[kind] = np.zeros(len(self.placement.node_list), dtype=np.int64)
        arrays = self.placement.arrays
        row = arrays.row[node.name]
        marks[row] = int(arrays.version[row]) + 1

    def not_useless(self, kind: tuple[object, ...], rows: np.ndarray) -> np.ndarray:
        """`rows` without those marked useless for `kind` at their node's version now."""
        marks = self.useless_rows.get(kind)
        if marks is None or not len(rows):
            return rows
        kept: np.ndarray = rows[marks[rows] != self.placement.arrays.version[rows] + 1]
        return kept

    def victims_on(self, callback: str, preemptor: TaskInfo, node: NodeInfo,
                   candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Any]:
        """`Runtime.victims` among the node's candidates; when the rules read at most the preemptor's
        request, the answer is kept for the node until it or one of the candidates' queues changes
        (`engine.victim_memo`), and later preemptors asking the same walking past the node reuse it."""
        if callback not in self.victim_memos:
            rt = self.runtime
            functions = {p.module.name: p.module.functions for tier in rt.tiers for p in tier}
            reads = preemptor_reads(rt.rules(callback), functions)
            self.victim_memos[callback] = VictimMemo(reads) if reads is not None else None
        memo = self.victim_memos[callback]
        if memo is None or not candidates:
            return self.runtime.victims(callback, preemptor, candidates)
        arrays = self.placement.arrays
        found = memo.get(node.name, int(arrays.version[arrays.row[node.name]]), candidates, preemptor)
        if found is None:
            found = self.runtime.victims(callback, preemptor, candidates)
            memo.keep(node.name, found)
        return list(found[0]), found[1]

    @property
    def optimize(self) -> bool:
        return self.mode == "optimize"

    def budget_spent(self) -> bool:
        return self.deadline is not None and budget_clock() > self.deadline

    def out_of_time(self) -> bool:
        """Whether an optimize run is past the session budget and must stop where it safely can (its
        caller, `optimize.never_worse`, then keeps Volcano's run: `optimize_stopped` tells it). Never
        in volcano mode: Volcano's run always finishes."""
        if self.mode != "optimize":
            return False
        if self.budget_spent():
            self.optimize_stopped = True
        return self.optimize_stopped

    def statement(self) -> Statement:
        return Statement(self.state, self.outcome)

    def schedulable_jobs(self, among: list[JobInfo] | None = None) -> list[JobInfo]:
        """Jobs preempt/reclaim/backfill consider: not Pending, valid, with a queue (reference §4.3)."""
        jobs = []
        for job in self.state.jobs.values() if among is None else among:
            if job.phase == PodGroupPhase.PENDING.value:
                continue
            invalid = self.runtime.job_valid(job)
            if invalid is not None:
                self.job_reasons.setdefault(job.key, f"{invalid.reason}: {invalid.message}")
                continue
            jobs.append(job)
        return jobs

    def pending_tasks(self, job: JobInfo, *, best_effort: bool | None = False) -> list[TaskInfo]:
        """The job's pending tasks not gated: those asking for resources (allocate's), the best-effort
        ones (`best_effort=True`, backfill's), or all of them (None: preempt's and reclaim's preemptors,
        `job.TaskStatusIndex[api.Pending]` in Volcano)."""
        return [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.pod.scheduling_gated
                and (best_effort is None or t.best_effort == best_effort)]
