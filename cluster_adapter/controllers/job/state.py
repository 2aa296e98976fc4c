"""The vcjob state machine (reference §14, Volcano's `pkg/controllers/job/state`), as data.

`plan(phase, action)` says what the controller does for an action in a phase: **sync** (create the
missing pods once the PodGroup left Pending, count them) or **kill** (delete pods, keeping those
whose phase is in `retain`: nothing for "kill all", Succeeded/Failed for "kill soft"; `target`:
only the request's task or pod), and then which `update` decides the new phase from the counted
status. Nothing here touches the API (the controller does), so the whole table is tested cell by
cell (tests/controllers/test_job_state.py).

| phase        | RestartJob          | RestartTask/Pod/Partition | Abort       | Terminate     | Complete     | Resume                  | other (SyncJob)      |
|--------------|---------------------|---------------------------|-------------|---------------|--------------|-------------------------|----------------------|
| Pending      | kill all, Restarting, retry+1 | kill target, Restarting, retry+1 | kill soft, Aborting | kill soft, Terminating | kill soft, Completing | sync (pending rule) | sync (pending rule) |
| Running      | as Pending          | as Pending                | as Pending  | as Pending    | as Pending   | sync (running rule)     | sync (running rule)  |
| Restarting   | kill all, restarting rule | kill target, restarting rule | kill all, restarting rule |||| sync, restarting rule |
| Aborting     | kill soft, Aborted when nothing is alive |||||  kill soft, Restarting, retry+1 | kill soft, Aborted when nothing is alive |
| Aborted      | kill soft, stays    ||||| kill soft, Restarting, retry+1 | kill soft, stays |
| Completing   | kill soft, Completed when nothing is alive (every action) |||||||
| Terminating  | kill soft, Terminated when nothing is alive (every action) |||||||
| Completed, Terminated, Failed | kill soft, stays (every action) |||||||

Rules: *pending* -> Running when running + succeeded + failed >= minAvailable. *running* -> Completed
when minSuccess is reached; when every replica finished -> Failed if a task with an explicit
minAvailable has fewer successes (and minAvailable >= the tasks' minAvailable sum), or successes <
minSuccess, else Completed if successes >= minAvailable, else Failed; otherwise -> Pending when more
pods are pending than replicas - minAvailable. *restarting* -> Failed when retryCount >= maxRetry,
else Pending once replicas - terminating >= minAvailable. "Alive" = pending, running or terminating.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


class Phase(str, enum.Enum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class Action(str, enum.Enum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"


class Event(str, enum.Enum):
    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"


class Op(str, enum.Enum):
    SYNC = "sync"
    KILL = "kill"


RETAIN_NONE: frozenset[str] = frozenset()  # "kill all"
RETAIN_SOFT: frozenset[str] = frozenset({"Succeeded", "Failed"})  # "kill soft": finished pods stay
FINISHED = frozenset({Phase.COMPLETED, Phase.TERMINATED, Phase.FAILED})
TARGETED = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})


@dataclass(frozen=True, slots=True)
class Facts:
    """What the update rules read from the job's spec (webhook defaults applied)."""

    min_available: int
    replicas: int
    max_retry: int = 3
    min_success: int | None = None
    task_min_available: Mapping[str, int] = field(default_factory=dict)  # tasks with an explicit minAvailable
    total_task_min_available: int = 0  # every task's minAvailable (defaulted to replicas), summed


@dataclass(slots=True)
class Status:
    """The counted status an update rule reads, and the two fields it may change."""

    phase: Phase
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    retry_count: int = 0
    task_succeeded: dict[str, int] = field(default_factory=dict)


Update = Callable[[Facts, Status], bool]  # may change status.phase / retry_count; True if the phase changed


@dataclass(frozen=True, slots=True)
class Step:
    op: Op
    retain: frozenset[str] = RETAIN_NONE
    target: bool = False
    update: Update | None = None
    rule: str = ""  # the update rule's name, for logs and tests


def plan(phase: Phase | str, action: Action | str) -> Step:
    phase = _phase(phase)
    action = _action(action)
    if phase in (Phase.PENDING, Phase.RUNNING):
        sync_rule = (pending_rule, "pending") if phase is Phase.PENDING else (running_rule, "running")
        if action is Action.RESTART_JOB:
            return Step(Op.KILL, RETAIN_NONE, update=to(Phase.RESTARTING, retry=True), rule="-> Restarting, retry+1")
        if action in TARGETED:
            return Step(Op.KILL, RETAIN_NONE, target=True, update=to(Phase.RESTARTING, retry=True),
                        rule="-> Restarting, retry+1")
        if action is Action.ABORT_JOB:
            return Step(Op.KILL, RETAIN_SOFT, update=to(Phase.ABORTING), rule="-> Aborting")
        if action is Action.TERMINATE_JOB:
            return Step(Op.KILL, RETAIN_SOFT, update=to(Phase.TERMINATING), rule="-> Terminating")
        if action is Action.COMPLETE_JOB:
            return Step(Op.KILL, RETAIN_SOFT, update=to(Phase.COMPLETING), rule="-> Completing")
        return Step(Op.SYNC, update=sync_rule[0], rule=sync_rule[1])
    if phase is Phase.RESTARTING:
        if action in (Action.SYNC_JOB, Action.ENQUEUE_JOB):
            return Step(Op.SYNC, update=restarting_rule, rule="restarting")
        return Step(Op.KILL, RETAIN_NONE, target=action in TARGETED, update=restarting_rule, rule="restarting")
    if phase in (Phase.ABORTING, Phase.ABORTED):
        if action is Action.RESUME_JOB:
            return Step(Op.KILL, RETAIN_SOFT, update=to(Phase.RESTARTING, retry=True), rule="-> Restarting, retry+1")
        if phase is Phase.ABORTING:
            return Step(Op.KILL, RETAIN_SOFT, update=when_quiet(Phase.ABORTED), rule="-> Aborted when quiet")
        return Step(Op.KILL, RETAIN_SOFT, rule="stays")
    if phase is Phase.COMPLETING:
        return Step(Op.KILL, RETAIN_SOFT, update=when_quiet(Phase.COMPLETED), rule="-> Completed when quiet")
    if phase is Phase.TERMINATING:
        return Step(Op.KILL, RETAIN_SOFT, update=when_quiet(Phase.TERMINATED), rule="-> Terminated when quiet")
    return Step(Op.KILL, RETAIN_SOFT, rule="stays")  # Completed, Terminated, Failed


# update rules ---------------------------------------------------------------------------------------
def to(phase: Phase, *, retry: bool = False) -> Update:
    def update(facts: Facts, status: Status) -> bool:
        status.phase = phase
        if retry:
            status.retry_count += 1
        return True
    return update


def when_quiet(phase: Phase) -> Update:
    def update(facts: Facts, status: Status) -> bool:
        if status.terminating or status.pending or status.running:
            return False
        status.phase = phase
        return True
    return update


def pending_rule(facts: Facts, status: Status) -> bool:
    if facts.min_available <= status.running + status.succeeded + status.failed:
        status.phase = Phase.RUNNING
        return True
    return False


def running_rule(facts: Facts, status: Status) -> bool:
    if facts.replicas == 0:
        return False  # scaled down to zero: keep the phase
    if facts.min_success is not None and status.succeeded >= facts.min_success:
        status.phase = Phase.COMPLETED
        return True
    if status.succeeded + status.failed == facts.replicas:
        if facts.min_available >= facts.total_task_min_available:
            for task, minimum in facts.task_min_available.items():
                if status.task_succeeded.get(task, 0) < minimum:
                    status.phase = Phase.FAILED
                    return True
        if facts.min_success is not None and status.succeeded < facts.min_success:
            status.phase = Phase.FAILED
        elif status.succeeded >= facts.min_available:
            status.phase = Phase.COMPLETED
        else:
            status.phase = Phase.FAILED
        return True
    if status.pending > facts.replicas - facts.min_available:
        status.phase = Phase.PENDING
        return True
    return False


def restarting_rule(facts: Facts, status: Status) -> bool:
    if status.retry_count >= facts.max_retry:
        status.phase = Phase.FAILED
        return True
    if facts.replicas - status.terminating >= facts.min_available:
        status.phase = Phase.PENDING
        return True
    return False


def _phase(value: Phase | str) -> Phase:
    try:
        return Phase(value) if value else Phase.PENDING
    except ValueError:
        return Phase.PENDING  # Volcano: "It's pending by default."


def _action(value: Action | str) -> Action:
    try:
        return Action(value)
    except ValueError:
        return Action.SYNC_JOB
