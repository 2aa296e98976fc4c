"""One translation for files and live objects: the adapter's snapshot is the loader's snapshot."""
from __future__ import annotations

import copy

import pytest

from cluster_adapter import convert
from tests.adapter.conftest import EXAMPLE, read_objects
from vpolicy import load_cluster, snapshot_from_objects
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


def test_only_changed_queue_fields_are_written() -> None:
    desired = convert.queue_status({"state": "Open", "allocated": {"cpu": 1500}, "running": 1})
    assert desired == {"state": "Open", "allocated": {"cpu": "1500m"}, "running": 1}
    assert convert.changed_fields(desired, {"state": "Open", "allocated": {"cpu": "1500m"}, "running": 0}) == {"running": 1}
