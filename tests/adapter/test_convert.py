"""One translation for files and live objects: the adapter's snapshot is the loader's snapshot."""
from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from cluster_adapter import convert
from tests.adapter.conftest import EXAMPLE, read_objects
from vpolicy import SnapshotReader, load_cluster, snapshot_from_objects
from vpolicy.errors import PolicyError
from vpolicy.model.decisions import PodGroupStatus


def test_objects_from_memory_give_the_snapshot_the_file_gives() -> None:
    assert snapshot_from_objects(read_objects(EXAMPLE)) == load_cluster(EXAMPLE)


def test_a_broken_object_is_skipped_with_a_warning_when_not_strict() -> None:
    objects = read_objects(EXAMPLE)
    broken = next(o for o in objects if o["kind"] == "Pod")
    broken = copy.deepcopy(broken)
    broken["metadata"]["name"] = "broken"
    broken["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    with pytest.raises(PolicyError):
        snapshot_from_objects([*objects, broken])
    snap = convert.to_snapshot([*objects, broken])
    assert "broken" not in {p.name for p in snap.pods}
    assert any("api:Pod/" in w and "broken" in w for w in snap.warnings)
    assert snap.pods == load_cluster(EXAMPLE).pods


@pytest.mark.parametrize("name, amount, text", [
    pytest.param("cpu", 1500, "1500m", id="millicores"),
    pytest.param("cpu", 2000, "2", id="whole-cores"),
    pytest.param("memory", 1073741824, "1073741824", id="bytes"),
    pytest.param("nvidia.com/gpu", 8000, "8", id="extended"),
    pytest.param("pods", 3, "3", id="pods"),
])
def test_quantities_go_back_to_kubernetes_form(name: str, amount: int, text: str) -> None:
    assert convert.quantity_text(name, amount) == text


def test_podgroup_status_keeps_transition_bookkeeping_while_the_condition_holds() -> None:
    status = PodGroupStatus("Running", ({"type": "Scheduled", "status": "True", "reason": "ok", "message": ""},), 2)
    first = convert.podgroup_status(status, {"conditions": [{"type": "Unschedulable", "status": "True"}]},
                                    now=100.0, session_id="s1")
    assert [c["type"] for c in first["conditions"]] == ["Unschedulable", "Scheduled"]  # Volcano keeps other types
    again = convert.podgroup_status(status, first, now=200.0, session_id="s2")
    assert again == first
    assert not convert.status_changed(again, first)
    changed = PodGroupStatus("Running", ({"type": "Scheduled", "status": "True", "reason": "other", "message": ""},), 2)
    later = convert.podgroup_status(changed, first, now=300.0, session_id="s3")
    assert later["conditions"][-1]["transitionID"] == "s3"
    assert convert.status_changed(later, first)


WAITING = {"reason": "Unschedulable", "message": "0/2 nodes are available: 2 Insufficient cpu"}


def test_a_pending_pod_gets_volcanos_pod_scheduled_condition_once() -> None:
    pod: dict[str, Any] = {"status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}}
    first = convert.pod_status_changes(pod, condition=WAITING, nominated=None, now=100.0)
    assert first == {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                     "message": WAITING["message"], "lastTransitionTime": "1970-01-01T00:01:40Z"}]}
    written = {"status": {"conditions": [*pod["status"]["conditions"], *first["conditions"]]}}
    assert convert.pod_status_changes(written, condition=WAITING, nominated=None, now=200.0) == {}


def test_a_new_message_keeps_the_transition_time_and_a_new_status_moves_it() -> None:
    held = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "old",
            "lastTransitionTime": "1970-01-01T00:01:40Z"}
    reworded = convert.pod_status_changes({"status": {"conditions": [held]}}, condition=WAITING, nominated=None,
                                          now=200.0)
    assert reworded["conditions"][0]["lastTransitionTime"] == "1970-01-01T00:01:40Z"
    was_true = {**held, "status": "True"}
    flipped = convert.pod_status_changes({"status": {"conditions": [was_true]}}, condition=WAITING, nominated=None,
                                         now=200.0)
    assert flipped["conditions"][0]["lastTransitionTime"] == "1970-01-01T00:03:20Z"


def test_a_nominated_node_is_written_when_it_changes_and_never_cleared() -> None:
    pod = {"status": {"nominatedNodeName": "n1"}}
    assert convert.pod_status_changes(pod, condition=None, nominated="n2", now=0.0) == {"nominatedNodeName": "n2"}
    assert convert.pod_status_changes(pod, condition=None, nominated="n1", now=0.0) == {}
    # still waiting for its victims: the nomination stays
    assert convert.pod_status_changes(pod, condition=None, nominated=None, now=0.0) == {}


def test_only_changed_queue_fields_are_written() -> None:
    desired = convert.queue_status({"state": "Open", "allocated": {"cpu": 1500}, "running": 1})
    assert desired == {"allocated": {"cpu": "1500m"}, "running": 1}  # never state: the queue controller's
    assert convert.changed_fields(desired, {"state": "Closed", "allocated": {"cpu": "1500m"}, "running": 0}) == \
        {"running": 1}


def _pod(name: str, rv: int, *, cpu: str = "1", node: str = "", priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "status": {"phase": "Running" if node else "Pending"},
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": str(rv),
                         "annotations": {"scheduling.k8s.io/group-name": "g"}}}


def test_the_incremental_reader_agrees_with_a_full_build_on_random_changes() -> None:
    rng = random.Random(11)
    base = [o for o in read_objects(EXAMPLE) if o["kind"] not in ("Job", "Pod")]
    for index, obj in enumerate(base):
        obj.setdefault("metadata", {})["resourceVersion"] = str(index + 1)
    rv = 1000
    pods: dict[str, dict[str, Any]] = {}
    reader = SnapshotReader()
    for _ in range(60):
        action = rng.choice(["add", "add", "change", "delete", "class", "node", "queue", "podgroup"])
        rv += 1
        if action == "add" or not pods:
            name = f"p{rv}"
            pods[name] = _pod(name, rv, cpu=rng.choice(["1", "500m"]), priority_class=rng.choice(["", "high", "low"]))
        elif action == "change":
            name = rng.choice(sorted(pods))
            pods[name] = _pod(name, rv, node=rng.choice(["cpu-1", "cpu-2"]), cpu=rng.choice(["2", "250m"]))
        elif action == "delete":
            pods.pop(rng.choice(sorted(pods)))
        elif action == "class":  # a non-pod change: the reader must not take its shortcut
            at = next(i for i, o in enumerate(base) if o["kind"] == "PriorityClass")
            pc = copy.deepcopy(base[at])  # informers hand over a new dict for a changed object, never edit one
            pc["value"] = rng.randint(1, 2000)
            pc["metadata"]["resourceVersion"] = str(rv)
            base[at] = pc
        elif action in ("node", "queue", "podgroup"):  # patched in place: a new dict, as a watch event brings
            kind = {"node": "Node", "queue": "Queue", "podgroup": "PodGroup"}[action]
            at = rng.choice([i for i, o in enumerate(base) if o["kind"] == kind])
            obj = copy.deepcopy(base[at])
            obj["metadata"]["resourceVersion"] = str(rv)
            if kind == "Node":
                obj.setdefault("spec", {})["unschedulable"] = rng.choice([True, False])
            elif kind == "Queue":
                obj.setdefault("spec", {})["weight"] = rng.randint(1, 9)
            else:
                obj.setdefault("spec", {})["minMember"] = rng.randint(0, 4)
            base[at] = obj
        objects = [*base, *(pods[k] for k in sorted(pods))]
        given = copy.deepcopy(objects) if rng.random() < 0.3 else list(objects)  # the same dicts, or all new
        assert reader.read(given) == snapshot_from_objects(objects)
    assert reader.pods_read and reader.patched and reader.full_builds < 60  # shortcuts taken, and not always
