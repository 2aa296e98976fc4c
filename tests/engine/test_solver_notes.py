"""The solver's note after a pending pod's own reason (`engine.feasibility`): it blames Volcano's greedy
order only for jobs the actions actually tried, since the check knows nothing of queue or job rules."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tests.engine.build import node, pod, podgroup, queue, resources, snapshot
from vpolicy.engine.session import run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase

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
    doc = run_session(_refused_by_enqueue(pod_cpu), from_conf(default_conf()), solver_budget_s=30.0).decisions
    reasons = doc.unschedulable["ns/big-0"]
    assert reasons == [NOT_ENQUEUED, "the nodes' free resources could hold 1 tasks (solver): what holds it is "
                                     f"its job's reason: {NOT_ENQUEUED}"]
    assert not any(GREEDY in r for r in reasons)
    assert doc.pod_conditions["ns/big-0"] == {"reason": "Undetermined", "message": NOT_ENQUEUED}


def test_a_held_job_that_fits_no_node_keeps_the_solvers_proof() -> None:
    doc = run_session(_refused_by_enqueue(16000), from_conf(default_conf()), solver_budget_s=30.0).decisions
    reasons = doc.unschedulable["ns/big-0"]
    assert reasons[0] == NOT_ENQUEUED
    assert reasons[1].startswith("no placement of 1 tasks exists on the free resources (proved by the solver; "
                                 "conflicting: ")
