"""Volcano's admission rules as pure functions (vpolicy.admission): one clear message per broken rule."""
from __future__ import annotations

from typing import Any

import pytest

from vpolicy.admission import common, jobs, podgroups, queues


def job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"queue": "default", "tasks": [{"name": "worker", "replicas": 2, "template": {}}]}
    base.update(spec)
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": base}


QUEUES = {"root": {"spec": {}, "status": {"state": "Open"}},
          "default": {"spec": {"parent": "root"}, "status": {"state": "Open"}},
          "closed": {"spec": {"parent": "root"}, "status": {"state": "Closed"}},
          "parent": {"spec": {"parent": "root", "capability": {"cpu": "10"}, "deserved": {"cpu": "6"}},
                     "status": {"state": "Open"}},
          "child": {"spec": {"parent": "parent", "deserved": {"cpu": "4"}}, "status": {"state": "Open"}}}


def codes(violations: list[common.Violation]) -> list[str]:
    return [v.code for v in violations]


def test_job_defaults() -> None:
    out = jobs.default_job({"spec": {"tasks": [{"replicas": 3, "template": {"spec": {"hostNetwork": True}}},
                                               {"name": "ps", "replicas": 1, "minAvailable": 1}],
                                     "plugins": {"mpi": []}}})
    spec = out["spec"]
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == ("default", "volcano", 3, 4)
    assert spec["tasks"][0]["name"] == "default0" and spec["tasks"][0]["minAvailable"] == 3
    assert spec["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert set(spec["plugins"]) == {"mpi", "svc", "ssh"}


@pytest.mark.parametrize("spec, expected", [
    pytest.param({}, [], id="valid"),
    pytest.param({"tasks": []}, ["admission.job-no-tasks"], id="no-tasks"),
    pytest.param({"minAvailable": 3}, ["admission.job-min-available"], id="min-available-above-replicas"),
    pytest.param({"minAvailable": -1}, ["admission.job-negative"], id="negative-min-available"),
    pytest.param({"tasks": [{"name": "w", "replicas": 1, "minAvailable": 2}]}, ["admission.task-min-available"],
                 id="task-min-above-replicas"),
    pytest.param({"tasks": [{"name": "w", "replicas": 1}, {"name": "w", "replicas": 1}]},
                 ["admission.task-name-duplicate"], id="duplicate-task"),
    pytest.param({"tasks": [{"name": "Bad_Name", "replicas": 1}]}, ["admission.task-name"], id="task-name-dns"),
    pytest.param({"policies": [{"event": "PodFailed", "exitCode": 1, "action": "RestartJob"}]},
                 ["admission.policy-event-and-exit-code"], id="event-and-exit-code"),
    pytest.param({"policies": [{"exitCode": 0, "action": "RestartJob"}]}, ["admission.policy-exit-code"],
                 id="exit-code-zero"),
    pytest.param({"policies": [{"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}]},
                 ["admission.policy-any-not-alone"], id="any-not-alone"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "AbortJob"}, {"event": "PodFailed", "action": "AbortJob"}]},
                 ["admission.policy-duplicate"], id="duplicate-event"),
    pytest.param({"policies": [{"event": "PodExploded", "action": "Panic"}]},
                 ["admission.policy-event", "admission.policy-action"], id="unknown-event-and-action"),
    pytest.param({"plugins": {"sshh": []}}, ["admission.job-plugin"], id="unknown-plugin"),
    pytest.param({"volumes": [{"mountPath": "/d"}]}, ["admission.volume-claim"], id="volume-without-claim"),
    pytest.param({"tasks": [{"name": "a", "replicas": 1, "dependsOn": {"name": ["b"]}},
                            {"name": "b", "replicas": 1, "dependsOn": {"name": ["a"]}}]},
                 ["admission.task-depends-on-cycle"], id="depends-on-cycle"),
    pytest.param({"queue": "nowhere"}, ["admission.job-queue-not-found"], id="queue-missing"),
    pytest.param({"queue": "closed"}, ["admission.job-queue-not-open"], id="queue-closed"),
    pytest.param({"queue": "parent"}, ["admission.job-queue-not-leaf"], id="queue-not-leaf"),
    pytest.param({"queue": "root"}, ["admission.job-queue-root"],
                 id="queue-root"),
])
def test_validate_job(spec: dict[str, Any], expected: list[str]) -> None:
    assert codes(jobs.validate_job(job(**spec), queues=QUEUES)) == expected


def test_job_messages_name_the_field() -> None:
    [violation] = jobs.validate_job(job(minAvailable=3))
    assert str(violation) == ("spec.minAvailable: job 'minAvailable' (3) should not be greater than total replicas "
                              "in tasks (2)")
    [diagnostic] = common.diagnostics([violation])
    assert diagnostic.one_line() == f"error[admission.job-min-available]: {violation}"


def test_job_updates_may_change_only_scaling_fields() -> None:
    old = job()
    scaled = job(minAvailable=1, tasks=[{"name": "worker", "replicas": 3, "template": {}}])
    assert jobs.validate_job(scaled, old=old) == []
    assert codes(jobs.validate_job(job(queue="other"), old=old)) == ["admission.job-update"]


@pytest.mark.parametrize("queue, expected", [
    pytest.param({"metadata": {"name": "q"}, "spec": {"weight": 2}}, [], id="valid"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"weight": 0}}, ["admission.queue-weight"], id="weight-zero"),
    pytest.param({"metadata": {"name": "q"}, "spec": {}, "status": {"state": "Sleeping"}}, ["admission.queue-state"],
                 id="bad-state"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"deserved": {"cpu": "4"}, "capability": {"cpu": "2"}}},
                 ["admission.queue-resources"], id="deserved-above-capability"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"memory": "2Gi"}},
                                                      "deserved": {"memory": "1Gi"}}},
                 ["admission.queue-resources"], id="guarantee-above-deserved"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"parent": "q"}}, ["admission.queue-parent"], id="self-parent"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"parent": "ghost"}}, ["admission.queue-parent"],
                 id="missing-parent"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"parent": "parent", "capability": {"cpu": "20"}}},
                 ["admission.queue-capability"], id="capability-above-ancestor"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"parent": "parent", "deserved": {"cpu": "3"}}},
                 ["admission.queue-children-sum"], id="children-deserved-above-parent"),
    pytest.param({"metadata": {"name": "q"}, "spec": {"parent": "default"}}, ["admission.queue-parent"],
                 id="parent-holds-podgroups"),
    pytest.param({"metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy": "a/b",
                                                            "volcano.sh/hierarchy-weights": "1"}}, "spec": {}},
                 ["admission.queue-hierarchy"], id="hierarchy-mismatch"),
])
def test_validate_queue(queue: dict[str, Any], expected: list[str]) -> None:
    assert codes(queues.validate_queue(queue, queues=QUEUES, podgroups={"default": 2})) == expected


@pytest.mark.parametrize("name, podgroup_count, expected", [
    pytest.param("default", 0, ["admission.queue-delete"], id="default-stays"),
    pytest.param("parent", 0, ["admission.queue-delete"], id="has-children"),
    pytest.param("child", 1, ["admission.queue-delete"], id="has-podgroups"),
    pytest.param("closed", 0, [], id="empty-leaf"),
])
def test_validate_queue_delete(name: str, podgroup_count: int, expected: list[str]) -> None:
    assert codes(queues.validate_queue_delete(name, queues=QUEUES, podgroups={name: podgroup_count})) == expected


def test_queue_defaults() -> None:
    out = queues.default_queue({"metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy": "a/q",
                                                                         "volcano.sh/hierarchy-weights": "2/3"}},
                                "spec": {"weight": 0}})
    assert out["spec"] == {"weight": 1, "reclaimable": True}
    assert out["metadata"]["annotations"] == {"volcano.sh/hierarchy": "root/a/q", "volcano.sh/hierarchy-weights": "1/2/3"}


def test_podgroup_rules() -> None:
    group = {"metadata": {"name": "g"}, "spec": {"queue": "default", "minMember": 1}}
    moved = podgroups.default_podgroup(group, namespace_annotations={"scheduling.volcano.sh/queue-name": "team"})
    assert moved["spec"]["queue"] == "team"
    assert podgroups.validate_podgroup(group, queues=QUEUES) == []
    assert codes(podgroups.validate_podgroup({"spec": {"queue": "closed"}}, queues=QUEUES)) == \
        ["admission.podgroup-queue-not-open"]
    assert codes(podgroups.validate_podgroup(
        {"spec": {"networkTopology": {"highestTierAllowed": 1, "highestTierName": "x"}}})) == \
        ["admission.podgroup-network-topology"]
