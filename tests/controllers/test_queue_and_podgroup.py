"""Queue controller (defaults, parents, counters, Open/Closing/Closed through Commands, children) and
PodGroup controller (plain pods of our scheduler get a group)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.adapter.conftest import pod, podgroup, queue
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import Manager, command, create, delete, get, listed, settle


def state(emu: EmulatorThread, name: str) -> str:
    held = get(emu, "queues", name)
    return str(((held or {}).get("status") or {}).get("state") or "")


def test_root_and_default_exist_and_parentless_queues_get_root(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, queue("team-a"), queue("team-b", parent="team-a"))
    settle(manager("queue"))
    queues = {q["metadata"]["name"]: q for q in listed(emu, "queues")}
    assert set(queues) == {"root", "default", "team-a", "team-b"}
    assert queues["root"]["spec"] == {"weight": 1, "reclaimable": False}
    assert (queues["default"]["spec"]["parent"], queues["team-a"]["spec"]["parent"],
            queues["team-b"]["spec"]["parent"]) == ("root", "root", "team-a")
    assert {n: q["status"]["state"] for n, q in queues.items()} == dict.fromkeys(queues, "Open")


def test_status_counts_podgroups_by_phase(emu: EmulatorThread, manager: Manager) -> None:
    create(emu, queue("q"), podgroup("g1", queue="q", phase="Running"), podgroup("g2", queue="q", phase="Inqueue"),
           podgroup("g3", queue="q", phase="Pending"))
    settle(manager("queue"))
    status = get(emu, "queues", "q")["status"]  # type: ignore[index]
    assert {k: status[k] for k in ("pending", "inqueue", "running", "unknown", "completed")} == \
        {"pending": 1, "inqueue": 1, "running": 1, "unknown": 0, "completed": 0}


def test_close_goes_through_closing_while_podgroups_remain_and_closes_children(emu: EmulatorThread,
                                                                              manager: Manager) -> None:
    create(emu, queue("parent"), queue("child", parent="parent"), queue("grandchild", parent="child"),
           queue("empty"), podgroup("g1", queue="child", phase="Running"))
    controllers = manager("queue")
    settle(controllers)
    create(emu, command("CloseQueue", kind="Queue", target="parent"), command("CloseQueue", kind="Queue", target="empty"))
    settle(controllers)
    assert [state(emu, q) for q in ("parent", "child", "grandchild", "empty")] == \
        ["Closed", "Closing", "Closed", "Closed"]
    assert listed(emu, "commands") == []
    delete(emu, "podgroups", "g1")
    settle(controllers)
    assert state(emu, "child") == "Closed"
    create(emu, command("OpenQueue", kind="Queue", target="child"))
    settle(controllers)
    assert state(emu, "child") == "Open"


def test_root_cannot_be_closed(emu: EmulatorThread, manager: Manager) -> None:
    controllers = manager("queue")
    settle(controllers)
    create(emu, command("CloseQueue", kind="Queue", target="root"))
    settle(controllers)
    assert state(emu, "root") == "Open"
    assert any(e["reason"] == "CloseRefused" for e in listed(emu, "events"))


@pytest.mark.parametrize("annotations, expected", [
    pytest.param({}, {"minMember": 1, "queue": "default"}, id="defaults"),
    pytest.param({"scheduling.volcano.sh/queue-name": "q1", "scheduling.volcano.sh/group-min-member": "3"},
                 {"minMember": 3, "queue": "q1"}, id="annotations-honoured"),
])
def test_a_plain_pod_gets_a_podgroup(emu: EmulatorThread, manager: Manager, annotations: dict[str, str],
                                     expected: dict[str, Any]) -> None:
    plain = pod("web", cpu="500m")
    plain["metadata"]["annotations"] = annotations
    create(emu, plain, pod("other", scheduler="default-scheduler"), pod("grouped", group="g"))
    settle(manager("pg"))
    web = get(emu, "pods", "web")
    assert web is not None
    group_name = web["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
    assert group_name == f"podgroup-{web['metadata']['uid']}"
    group = get(emu, "podgroups", group_name)
    assert group is not None
    assert {k: group["spec"][k] for k in expected} == expected
    assert group["spec"]["minResources"]["cpu"] == f"{500 * expected['minMember']}m"
    assert group["metadata"]["ownerReferences"][0]["uid"] == web["metadata"]["uid"]
    assert [g["metadata"]["name"] for g in listed(emu, "podgroups")] == [group_name]  # others untouched
