"""Tentative placements and evictions with commit/discard (Volcano's framework/statement.go).

An action records every operation of one job's turn in a Statement. `commit` makes them decisions
(allocated tasks are dispatched to bind, evictions are executed); `discard` undoes them in reverse so
the session state is exactly as before. A statement that is neither (a pipelined gang) keeps holding
its resources for the rest of the session, as in Volcano.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from vpolicy.engine.state import SessionState, TaskInfo
from vpolicy.model.snapshot import TaskStatus


@dataclass(slots=True)
class Operation:
    kind: str  # allocate | pipeline | evict
    task: TaskInfo
    prev_status: TaskStatus
    prev_node: str
    action: str = ""
    for_job: str = ""
    rule: str = ""
    prev_eviction_occurred: bool = False  # the task's flag before a pipeline set it
    # the part of its action that placed the task (preempt's node step: `other-jobs`, `same-job`; empty
    # elsewhere), for optimize's plan to tell which preemptors Volcano's run placed with victims of
    # other jobs
    phase: str = ""


@dataclass(slots=True)
class Outcome:
    """What committed statements produced, collected by the session."""

    dispatched: list[TaskInfo] = field(default_factory=list)
    pipelined: list[TaskInfo] = field(default_factory=list)
    evicted: list[Operation] = field(default_factory=list)
    # every committed operation, in order, while an action is run on trial (`optimize.never_worse`)
    journal: list[Operation] | None = None
    # meanwhile, each task whose last placement a discard recorded, with the one it had before
    placements_kept: list[tuple[TaskInfo, tuple[str, str] | None]] | None = None


class Statement:
    def __init__(self, state: SessionState, outcome: Outcome):
        self.state = state
        self.outcome = outcome
        self.ops: list[Operation] = []

    def allocate(self, task: TaskInfo, node: str) -> None:
        self.ops.append(Operation("allocate", task, task.status, task.node_name))
        self.state.set_status(task, TaskStatus.ALLOCATED, node)

    def pipeline(self, task: TaskInfo, node: str, *, eviction_occurred: bool = False, phase: str = "") -> None:
        """`eviction_occurred`: this statement evicted for `task` on `node` (preempt, reclaim), which is
        when Volcano nominates the node for the pod; `phase`: see `Operation.phase`."""
        self.ops.append(Operation("pipeline", task, task.status, task.node_name,
                                  prev_eviction_occurred=task.eviction_occurred, phase=phase))
        self.state.set_status(task, TaskStatus.PIPELINED, node)
        task.eviction_occurred = eviction_occurred

    def evicts(self) -> bool:
        """Whether the statement holds an eviction (a per-node statement: evictions for one preemptor)."""
        return any(op.kind == "evict" for op in self.ops)

    def evict(self, task: TaskInfo, *, action: str, for_job: str, rule: str) -> None:
        self.ops.append(Operation("evict", task, task.status, task.node_name, action=action, for_job=for_job,
                                  rule=rule))
        self.state.set_status(task, TaskStatus.RELEASING)

    def merge(self, other: "Statement") -> None:
        self.ops.extend(other.ops)
        other.ops = []

    def discard(self) -> None:
        """Undo every operation, last first; a task keeps where it was placed (Volcano's
        GenerateLastTxContext in Statement.Discard), which its pod condition reports."""
        for op in reversed(self.ops):
            if op.kind != "evict":
                if self.outcome.placements_kept is not None:
                    self.outcome.placements_kept.append((op.task, op.task.last_placement))
                op.task.last_placement = (op.kind, op.task.node_name)
            undo(self.state, op)
        self.ops = []

    def commit(self) -> None:
        if self.outcome.journal is not None:
            self.outcome.journal.extend(self.ops)
        for op in self.ops:
            if op.kind == "evict":
                op.task.evicted = True
                self.outcome.evicted.append(op)
            elif op.kind == "allocate" and op.task.status is TaskStatus.ALLOCATED:
                self.state.set_status(op.task, TaskStatus.BINDING)
                self.outcome.dispatched.append(op.task)
            elif op.kind == "pipeline" and op.task.status is TaskStatus.PIPELINED:
                self.outcome.pipelined.append(op.task)
        self.ops = []


def undo(state: SessionState, op: Operation) -> None:
    """The task of `op` as it was before the operation, committed or not (status, node, nomination
    flag; an eviction's mark, which only a commit sets)."""
    state.set_status(op.task, op.prev_status, op.prev_node)
    if op.kind == "pipeline":
        op.task.eviction_occurred = op.prev_eviction_occurred
    elif op.kind == "evict":
        op.task.evicted = False
