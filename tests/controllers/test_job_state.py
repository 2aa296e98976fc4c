"""The job state machine of reference §14, cell by cell: what each action does in each phase (sync or
kill, which pods are kept, targeted or not) and where the job goes, plus every branch of the rules."""
from __future__ import annotations

import pytest

from cluster_adapter.controllers.job import state
from cluster_adapter.controllers.job.state import Action, Facts, Op, Phase, Status

ALL, SOFT = state.RETAIN_NONE, state.RETAIN_SOFT
FACTS = Facts(min_available=2, replicas=2, max_retry=3, total_task_min_available=2)
KILL_ALL_RESTART = (Op.KILL, ALL, False, "Restarting", 1)
KILL_TARGET_RESTART = (Op.KILL, ALL, True, "Restarting", 1)


def quiet() -> Status:
    """Nothing alive, both replicas succeeded: every 'when quiet' rule fires."""
    return Status(phase=Phase.PENDING, succeeded=2, task_succeeded={"worker": 2})


def busy() -> Status:
    """One pod still running: 'when quiet' rules wait."""
    return Status(phase=Phase.PENDING, running=1, succeeded=1, task_succeeded={"worker": 1})


# (phase, action) -> (op, retained phases, targeted, phase after on quiet(), retry increment)
TABLE: dict[tuple[str, str], tuple[Op, frozenset[str], bool, str, int]] = {}
for _phase in ("Pending", "Running"):
    _sync = "Running" if _phase == "Pending" else "Completed"  # both rules fire on quiet()
    TABLE.update({
        (_phase, "RestartJob"): KILL_ALL_RESTART,
        (_phase, "RestartTask"): KILL_TARGET_RESTART,
        (_phase, "RestartPod"): KILL_TARGET_RESTART,
        (_phase, "RestartPartition"): KILL_TARGET_RESTART,
        (_phase, "AbortJob"): (Op.KILL, SOFT, False, "Aborting", 0),
        (_phase, "TerminateJob"): (Op.KILL, SOFT, False, "Terminating", 0),
        (_phase, "CompleteJob"): (Op.KILL, SOFT, False, "Completing", 0),
        (_phase, "ResumeJob"): (Op.SYNC, ALL, False, _sync, 0),
        (_phase, "SyncJob"): (Op.SYNC, ALL, False, _sync, 0),
        (_phase, "EnqueueJob"): (Op.SYNC, ALL, False, _sync, 0),
    })
for _action in ("RestartJob", "AbortJob", "TerminateJob", "CompleteJob", "ResumeJob"):
    TABLE[("Restarting", _action)] = (Op.KILL, ALL, False, "Pending", 0)
for _action in ("SyncJob", "EnqueueJob"):
    TABLE[("Restarting", _action)] = (Op.SYNC, ALL, False, "Pending", 0)
for _action in ("RestartTask", "RestartPod", "RestartPartition"):
    TABLE[("Restarting", _action)] = (Op.KILL, ALL, True, "Pending", 0)
ACTIONS = [a.value for a in Action]
for _action in ACTIONS:
    TABLE[("Aborting", _action)] = (Op.KILL, SOFT, False, "Aborted", 0)
    TABLE[("Aborted", _action)] = (Op.KILL, SOFT, False, "Aborted", 0)
    TABLE[("Completing", _action)] = (Op.KILL, SOFT, False, "Completed", 0)
    TABLE[("Terminating", _action)] = (Op.KILL, SOFT, False, "Terminated", 0)
    for _done in ("Completed", "Terminated", "Failed"):
        TABLE[(_done, _action)] = (Op.KILL, SOFT, False, _done, 0)
TABLE[("Aborting", "ResumeJob")] = (Op.KILL, SOFT, False, "Restarting", 1)
TABLE[("Aborted", "ResumeJob")] = (Op.KILL, SOFT, False, "Restarting", 1)


def test_the_table_covers_every_phase_and_action() -> None:
    assert set(TABLE) == {(p.value, a) for p in Phase for a in ACTIONS}


@pytest.mark.parametrize("phase, action", [pytest.param(p, a, id=f"{p}-{a}") for p, a in sorted(TABLE)])
def test_each_cell_of_the_state_table(phase: str, action: str) -> None:
    op, retain, target, after, retry = TABLE[(phase, action)]
    step = state.plan(phase, action)
    assert (step.op, step.retain, step.target) == (op, retain, target)
    status = quiet()
    status.phase = Phase(phase)
    if step.update is not None:
        step.update(FACTS, status)
    assert (status.phase.value, status.retry_count) == (after, retry)


@pytest.mark.parametrize("phase, after", [
    pytest.param("Aborting", "Aborting", id="aborting-waits-for-running-pods"),
    pytest.param("Completing", "Completing", id="completing-waits"),
    pytest.param("Terminating", "Terminating", id="terminating-waits"),
])
def test_finishing_phases_wait_until_nothing_is_alive(phase: str, after: str) -> None:
    status = busy()
    status.phase = Phase(phase)
    update = state.plan(phase, "SyncJob").update
    assert update is not None and update(FACTS, status) is False
    assert status.phase.value == after


def test_unknown_phase_and_action_read_as_pending_and_sync() -> None:
    step = state.plan("", "NoSuchAction")
    assert step.op is Op.SYNC and step.rule == "pending"


@pytest.mark.parametrize("counts, after", [
    pytest.param(dict(running=2), "Running", id="running-reaches-min-available"),
    pytest.param(dict(running=1, failed=1), "Running", id="failed-counts-too"),
    pytest.param(dict(running=1, pending=1), "Pending", id="one-short-stays-pending"),
])
def test_pending_rule(counts: dict[str, int], after: str) -> None:
    status = Status(phase=Phase.PENDING, **counts)
    state.pending_rule(FACTS, status)
    assert status.phase.value == after


@pytest.mark.parametrize("facts, counts, after", [
    pytest.param(FACTS, dict(succeeded=2), "Completed", id="all-succeeded-completed"),
    pytest.param(FACTS, dict(succeeded=1, failed=1), "Failed", id="fewer-successes-than-min-available-failed"),
    pytest.param(Facts(min_available=1, replicas=2, total_task_min_available=1), dict(succeeded=1, failed=1),
                 "Completed", id="min-available-successes-completed"),
    pytest.param(Facts(min_available=2, replicas=3, min_success=2, total_task_min_available=2),
                 dict(succeeded=2, running=1), "Completed", id="min-success-reached-early"),
    pytest.param(Facts(min_available=1, replicas=2, min_success=2, total_task_min_available=1),
                 dict(succeeded=1, failed=1), "Failed", id="below-min-success-failed"),
    pytest.param(Facts(min_available=3, replicas=3, task_min_available={"ps": 1}, total_task_min_available=3),
                 dict(succeeded=2, failed=1, task_succeeded={"ps": 0, "worker": 2}), "Failed",
                 id="task-below-its-min-available-failed"),
    pytest.param(FACTS, dict(running=1, pending=1), "Pending", id="a-pod-pending-again-back-to-pending"),
    pytest.param(FACTS, dict(running=2), "Running", id="still-running"),
    pytest.param(Facts(min_available=0, replicas=0), dict(), "Running", id="scaled-to-zero-keeps-phase"),
])
def test_running_rule(facts: Facts, counts: dict[str, int], after: str) -> None:
    status = Status(phase=Phase.RUNNING, **counts)
    state.running_rule(facts, status)
    assert status.phase.value == after


@pytest.mark.parametrize("counts, after", [
    pytest.param(dict(retry_count=3), "Failed", id="max-retry-reached-failed"),
    pytest.param(dict(retry_count=1, terminating=1), "Restarting", id="pods-still-terminating"),
    pytest.param(dict(retry_count=1), "Pending", id="pods-gone-pending"),
])
def test_restarting_rule(counts: dict[str, int], after: str) -> None:
    status = Status(phase=Phase.RESTARTING, **counts)
    state.restarting_rule(FACTS, status)
    assert status.phase.value == after
