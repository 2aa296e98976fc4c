"""The comparison rules of the differential runner, without the oracle: what counts as the same decision."""
from __future__ import annotations

import random

from conformance.compare import differences, node_classes, outcome
from conformance.generate import Builder, Case
from conformance.version_gap import closed_queues, main_case, main_phase


def _cluster(*, second_size: int = 4000) -> list[dict[str, object]]:
    b = Builder(random.Random(0))
    b.node(4000, 8192, zone="a")
    b.node(second_size, 8192, zone="a")
    b.queue("q0")
    pg = b.podgroup("q0", 1, phase="Inqueue")
    b.pod(pg, 500, 512)
    b.pod(pg, 500, 512)
    return b.objects()


def test_swapping_identical_empty_nodes_is_the_same_decision() -> None:
    objects = _cluster()
    classes = node_classes(objects)
    one = outcome({"binds": {"ns/pg0-t-0": "n0", "ns/pg0-t-1": "n0"}}, classes)
    other = outcome({"binds": {"ns/pg0-t-0": "n1", "ns/pg0-t-1": "n1"}}, classes)
    assert one == other


def test_nodes_of_different_sizes_are_not_interchangeable() -> None:
    objects = _cluster(second_size=6000)
    classes = node_classes(objects)
    one = outcome({"binds": {"ns/pg0-t-0": "n0"}}, classes)
    other = outcome({"binds": {"ns/pg0-t-0": "n1"}}, classes)
    assert one != other
    assert differences(one, other) == ["bind ns/pg0-t-0: volcano n0, vpolicy n1"]


def test_splitting_pods_over_identical_nodes_differs_from_packing_them() -> None:
    classes = node_classes(_cluster())
    packed = outcome({"binds": {"ns/pg0-t-0": "n0", "ns/pg0-t-1": "n0"}}, classes)
    spread = outcome({"binds": {"ns/pg0-t-0": "n0", "ns/pg0-t-1": "n1"}}, classes)
    assert packed != spread


def test_main_keeps_a_gang_dispatched_this_session_inqueue() -> None:
    """v1.10 calls a gang whose pods are Binding Running; main counts only scheduled pods."""
    status = {"phase": "Running", "session_phase": "Inqueue", "tasks": {"Binding": 2}, "min_member": 2}
    assert main_phase(status) == "Inqueue"
    running = {"phase": "Running", "session_phase": "Running", "tasks": {"Running": 2}, "min_member": 2}
    assert main_phase(running) == "Running"
    done = {"phase": "Completed", "session_phase": "Running", "tasks": {"Succeeded": 2}, "min_member": 1}
    assert main_phase(done) == "Completed"


def test_a_closed_queues_pending_pods_can_go_nowhere_but_still_count() -> None:
    b = Builder(random.Random(0))
    b.node(4000, 8192)
    b.queue("q0", state="Closed")
    pg = b.podgroup("q0", 1, phase="Inqueue")
    b.pod(pg, 500, 512)
    case = Case("reclaim", 0, 0, b.objects(), "tiers:\n- plugins:\n  - name: proportion\n")
    assert closed_queues(case) == {"q0"}
    pods = [o for o in main_case(case).objects if o["kind"] == "Pod"]
    assert len(pods) == 1 and pods[0]["spec"]["nodeSelector"]


def test_without_proportion_or_capacity_main_does_not_look_at_queue_state() -> None:
    b = Builder(random.Random(0))
    b.queue("q0", state="Closed")
    case = Case("confs", 0, 0, b.objects(), "tiers:\n- plugins:\n  - name: gang\n")
    assert closed_queues(case) == set()
