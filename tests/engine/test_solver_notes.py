"""The solver's note after a pending pod's own reason (`engine.feasibility`): it blames Volcano's greedy
order only for jobs the actions actually tried, since the check knows nothing of queue or job rules, and
it is the same whatever the machine's load (a budget of Z3 resource units, not of time)."""
from __future__ import annotations

import itertools
import time
from dataclasses import replace

import pytest

from tests.engine.build import node, pod, podgroup, queue, resources, snapshot
from vpolicy.engine.session import run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase, TaskStatus

NOT_ENQUEUED = "job is not enqueued: queue resource quota insufficient"
GREEDY = "Volcano's greedy allocation did not find it this session"


def _refused_by_enqueue(pod_cpu: int) -> ClusterSnapshot:
    """The audit's enq.yaml: queue q1 may use 2 cpu; `big` (minResources 4 cpu) is refused by enqueue
    while the node has 8 cpu free. `pod_cpu` is what its one pod asks (4: also over the queue's share,
    1: it would fit the queue too; 16 cpu: no node holds it)."""
    big = replace(podgroup("big", "q1", phase=PodGroupPhase.PENDING), min_resources=resources(4000, 1024 ** 3),
                  creation=1.0)
    small = replace(podgroup("small", "q1", phase=PodGroupPhase.PENDING), min_resources=resources(1000, 1024 ** 3),
                    creation=2.0)
    return snapshot(nodes=[node("n1", cpu=8000, memory=16 * 1024 ** 3, pods=110)],
                    queues=[queue("q1", capability=resources(2000))], podgroups=[big, small],
                    pods=[pod("big-0", "big", cpu=pod_cpu)])


@pytest.mark.parametrize("pod_cpu", [pytest.param(4000, id="pod-over-queue-share"),
                                     pytest.param(1000, id="pod-within-queue-share")])
def test_a_job_held_by_enqueue_is_not_said_to_be_missed_by_the_greedy_order(pod_cpu: int) -> None:
    doc = run_session(_refused_by_enqueue(pod_cpu), from_conf(default_conf())).decisions
    reasons = doc.unschedulable["ns/big-0"]
    assert reasons == [NOT_ENQUEUED, "the nodes' free resources could hold 1 tasks (solver): what holds it is "
                                     f"its job's reason: {NOT_ENQUEUED}"]
    assert not any(GREEDY in r for r in reasons)
    assert doc.pod_conditions["ns/big-0"] == {"reason": "Undetermined", "message": NOT_ENQUEUED}


def test_a_held_job_that_fits_no_node_keeps_the_solvers_proof() -> None:
    doc = run_session(_refused_by_enqueue(16000), from_conf(default_conf())).decisions
    reasons = doc.unschedulable["ns/big-0"]
    assert reasons[0] == NOT_ENQUEUED
    assert reasons[1].startswith("no placement of 1 tasks exists on the free resources (proved by the solver; "
                                 "conflicting: ")


def _gangs_that_cannot_fit(count: int) -> ClusterSnapshot:
    """`count` gangs of 2 pods x 3.5 cpu beside two 4-cpu nodes using 1 cpu each: no gang fits (no placement
    exists), so every pod gets the solver's proof after its own reason."""
    nodes = [node(f"n{i}", cpu=4000, memory=16 * 1024 ** 3, pods=110) for i in range(2)]
    groups = [podgroup("busy"), *(podgroup(f"g{j}", min_member=2) for j in range(count))]
    pods = [pod(f"busy-{i}", "busy", cpu=1000, status=TaskStatus.RUNNING, on=f"n{i}") for i in range(2)]
    pods += [pod(f"g{j}-{t}", f"g{j}", cpu=3500) for j in range(count) for t in range(2)]
    return snapshot(nodes=nodes, podgroups=groups, pods=pods)


def test_the_solvers_notes_do_not_depend_on_how_fast_the_clock_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # A busy machine makes every step look slow: here each clock reading is a minute after the last. The
    # notes are bounded by Z3's resource units, so they are the notes of an idle machine, for every job.
    world, policy = _gangs_that_cannot_fit(5), from_conf(default_conf())
    idle = run_session(world, policy).decisions.unschedulable
    minutes = itertools.count(start=0.0, step=60.0)
    monkeypatch.setattr(time, "perf_counter", lambda: next(minutes))
    monkeypatch.setattr(time, "monotonic", lambda: next(minutes))
    busy = run_session(world, policy).decisions.unschedulable
    assert busy == idle
    for j in range(5):
        for t in range(2):
            assert busy[f"ns/g{j}-{t}"][-1].startswith(
                "no placement of 2 tasks exists on the free resources (proved by the solver; conflicting: ")


def test_a_session_budget_of_zero_adds_no_solver_note() -> None:
    doc = run_session(_gangs_that_cannot_fit(1), from_conf(default_conf()), solver_budget=0).decisions
    assert not any("solver" in reason for reason in doc.unschedulable["ns/g0-0"])


def _gangs_over_many_node_shapes(shapes: int, jobs: int, tasks: int) -> ClusterSnapshot:
    """`jobs` gangs of `tasks` pods in 4 shapes over 2 nodes of each of `shapes` sizes: no gang is placed
    whole, each check is a few hundred constraints, and the session's budget runs out among them."""
    nodes = [node(f"n{i}", cpu=1000 + (i % shapes) * 137, memory=(2 + i % shapes) * 1024 ** 3, pods=110)
             for i in range(2 * shapes)]
    groups = [podgroup(f"g{j}", min_member=tasks) for j in range(jobs)]
    pods = [pod(f"g{j}-{t}", f"g{j}", cpu=900 + (t % 4) * 311 + j, memory=(1 + t % 4) * 1024 ** 3)
            for j in range(jobs) for t in range(tasks)]
    return snapshot(nodes=nodes, podgroups=groups, pods=pods)


def test_the_same_snapshot_gets_the_same_notes_whatever_ran_before_in_the_process() -> None:
    # A live scheduler runs session after session in one process. Z3's work on a question depends on
    # what its context met before, so with one context for the process the budget cut off a different
    # check after other sessions (224 notes, then 192); each session's solver now has its own.
    world, policy = _gangs_over_many_node_shapes(24, 12, 32), from_conf(default_conf())
    first = run_session(world, policy).decisions.unschedulable
    run_session(_gangs_over_many_node_shapes(8, 6, 8), policy)
    again = run_session(world, policy).decisions.unschedulable
    assert again == first
    noted = [key for key, reasons in first.items() if "solver" in reasons[-1]]
    assert 0 < len(noted) < len(first)  # the budget ran out among the jobs: where it did is what must not move
