"""The emulator is test code that other tests trust: each behaviour a real API server has is pinned here,
exercised through the official client exactly as the adapter uses it."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import kmock
import kubernetes.client as k
import pytest
from kubernetes.client.exceptions import ApiException

from tests.adapter.conftest import load, node, official_api, pod, podgroup, queue
from tests.adapter.kubeemu import EmulatorThread

GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def api(emu: EmulatorThread) -> Iterator[k.ApiClient]:
    client = official_api(emu)
    yield client
    client.close()


@pytest.fixture
def core(api: k.ApiClient) -> k.CoreV1Api:
    return k.CoreV1Api(api)


@pytest.fixture
def custom(api: k.ApiClient) -> k.CustomObjectsApi:
    return k.CustomObjectsApi(api)


def status_of(call: Any) -> int:
    with pytest.raises(ApiException) as info:
        call()
    return int(info.value.status)


def raw(response: Any) -> dict[str, Any]:
    """The JSON body of a `_preload_content=False` answer; the connection goes back to the pool."""
    try:
        return dict(json.loads(response.data))
    finally:
        response.release_conn()


def answered(response: Any) -> int:
    raw(response)
    return int(response.status)


def _chunks(response: Any) -> Iterator[bytes]:
    try:
        yield from response.stream(amt=None, decode_content=False)
    finally:
        response.release_conn()


def watch_events(core: k.CoreV1Api, *, seconds: int = 1, **params: Any) -> list[tuple[str, str, str]]:
    response = core.list_namespaced_pod("default", watch=True, timeout_seconds=seconds, _preload_content=False,
                                        **params)
    out = []
    for line in _chunks(response):
        for item in line.decode().splitlines():
            if item.strip():
                event = json.loads(item)
                obj = event["object"]
                out.append((event["type"], obj.get("metadata", {}).get("name", ""),
                            str(obj.get("code", "")) if event["type"] == "ERROR" else ""))
    return out


def test_create_stamps_what_the_server_owns_and_answers_201(core: k.CoreV1Api) -> None:
    response = core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": []}},
                                          _preload_content=False)
    created = raw(response)
    assert response.status == 201
    meta = created["metadata"]
    assert meta["namespace"] == "default" and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert created["status"] == {"phase": "Pending"}  # status is the server's on create
    assert created["spec"]["schedulerName"] == "default-scheduler"


def test_generate_name_creates_a_unique_name(core: k.CoreV1Api) -> None:
    event = {"metadata": {"generateName": "p1."}, "involvedObject": {"name": "p1"}, "reason": "Scheduled"}
    first = raw(core.create_namespaced_event("default", event, _preload_content=False))
    second = raw(core.create_namespaced_event("default", event, _preload_content=False))
    assert first["metadata"]["name"].startswith("p1.") and first["metadata"]["name"] != second["metadata"]["name"]


def test_creating_an_existing_object_is_409(core: k.CoreV1Api) -> None:
    core.create_node({"metadata": {"name": "n1"}})
    assert status_of(lambda: core.create_node({"metadata": {"name": "n1"}})) == 409


def test_a_stale_patch_or_put_is_409_and_put_keeps_identity(core: k.CoreV1Api) -> None:
    created = raw(core.create_node({"metadata": {"name": "n1"}}, _preload_content=False))
    old_rv = created["metadata"]["resourceVersion"]
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    assert status_of(lambda: core.patch_node("n1", {"metadata": {"resourceVersion": old_rv, "labels": {"a": "2"}}})) == 409
    current = raw(core.read_node("n1", _preload_content=False))
    replaced = raw(core.replace_node("n1", {"metadata": {"name": "n1", "resourceVersion": current["metadata"]["resourceVersion"],
                                                         "labels": {"b": "1"}}}, _preload_content=False))
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert replaced["metadata"]["labels"] == {"b": "1"}
    assert status_of(lambda: core.replace_node("n1", {"metadata": {"name": "n1", "resourceVersion": old_rv}})) == 409


def test_strategic_merge_patch_merges_conditions_by_type(core: k.CoreV1Api) -> None:
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": []}})
    core.patch_namespaced_pod_status("p", "default", {"status": {"conditions": [{"type": "A", "status": "True"}]}})
    patched = raw(core.patch_namespaced_pod_status("p", "default", {"status": {"conditions": [
        {"type": "B", "status": "True"}]}}, _preload_content=False))
    assert [c["type"] for c in patched["status"]["conditions"]] == ["A", "B"]


@pytest.mark.parametrize("selector, names", [
    pytest.param("gpu=nvidia", ["a"], id="equals"),
    pytest.param("gpu==nvidia", ["a"], id="double-equals"),
    pytest.param("gpu!=nvidia", ["b", "c"], id="not-equals-includes-missing"),
    pytest.param("tier in (gold, silver)", ["a", "b"], id="in"),
    pytest.param("tier notin (gold)", ["b", "c"], id="notin"),
    pytest.param("gpu", ["a"], id="exists"),
    pytest.param("!gpu", ["b", "c"], id="does-not-exist"),
    pytest.param("gpu=nvidia,tier=silver", [], id="and"),
])
def test_label_selectors_filter_lists(core: k.CoreV1Api, emu: EmulatorThread, selector: str, names: list[str]) -> None:
    load(emu, [node("a", gpu="nvidia", tier="gold"), node("b", tier="silver"), node("c")])
    listed = raw(core.list_node(label_selector=selector, _preload_content=False))
    assert [i["metadata"]["name"] for i in listed["items"]] == names


def test_field_selectors_filter_pods_and_unknown_fields_are_400(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    load(emu, [pod("bound", node_name="n1"), pod("free"), pod("other", scheduler="default-scheduler")])
    unbound = raw(core.list_pod_for_all_namespaces(field_selector="spec.nodeName=", _preload_content=False))
    assert [i["metadata"]["name"] for i in unbound["items"]] == ["free", "other"]
    ours = raw(core.list_pod_for_all_namespaces(field_selector="spec.schedulerName=volcano,spec.nodeName=",
                                                _preload_content=False))
    assert [i["metadata"]["name"] for i in ours["items"]] == ["free"]
    assert status_of(lambda: core.list_pod_for_all_namespaces(field_selector="spec.queue=x")) == 400


def test_status_subresource_isolates_status_and_podgroup_has_none(custom: k.CustomObjectsApi,
                                                                    emu: EmulatorThread) -> None:
    load(emu, [queue("q"), podgroup("g")])
    custom.patch_cluster_custom_object(GROUP, VERSION, "queues", "q", {"status": {"state": "Closed"},
                                                                        "spec": {"weight": 3}})
    after = custom.get_cluster_custom_object(GROUP, VERSION, "queues", "q")
    assert after["status"]["state"] == "Open" and after["spec"]["weight"] == 3  # main endpoint ignores status
    # (Volcano's Queue CRD requires status.allocated: a status write without it is refused, as checked below)
    assert status_of(lambda: custom.patch_cluster_custom_object_status(
        GROUP, VERSION, "queues", "q", {"status": {"state": "Closed"}})) == 422
    custom.patch_cluster_custom_object_status(GROUP, VERSION, "queues", "q", {
        "status": {"state": "Closed", "allocated": {}}, "spec": {"weight": 9}})
    after = custom.get_cluster_custom_object(GROUP, VERSION, "queues", "q")
    assert after["status"]["state"] == "Closed" and after["spec"]["weight"] == 3  # /status ignores spec
    assert status_of(lambda: custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", "podgroups", "g", {"status": {"phase": "Running"}})) == 404
    custom.patch_namespaced_custom_object(GROUP, VERSION, "default", "podgroups", "g", {"status": {"phase": "Running"}})
    assert custom.get_namespaced_custom_object(GROUP, VERSION, "default", "podgroups", "g")["status"]["phase"] == "Running"


def binding(name: str, node_name: str, uid: str | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if uid:
        meta["uid"] = uid
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "target": {"kind": "Node", "name": node_name}}


def test_binding_sets_node_condition_and_annotations_once(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    [created] = load(emu, [pod("p")])
    uid = created["metadata"]["uid"]
    response = core.create_namespaced_pod_binding("p", "default", binding("p", "n1", uid, gpu="0"),
                                                  _preload_content=False)
    assert answered(response) == 201
    bound = raw(core.read_namespaced_pod("p", "default", _preload_content=False))
    assert bound["spec"]["nodeName"] == "n1" and bound["metadata"]["annotations"]["gpu"] == "0"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    again = lambda: core.create_namespaced_pod_binding("p", "default", binding("p", "n2"), _preload_content=False)  # noqa: E731
    assert status_of(again) == 409


def test_binding_with_a_wrong_uid_is_409(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    load(emu, [pod("p")])
    assert status_of(lambda: core.create_namespaced_pod_binding(
        "p", "default", binding("p", "n1", "not-the-uid"), _preload_content=False)) == 409


@pytest.mark.parametrize("allowed, code, left", [
    pytest.param(0, 429, 0, id="budget-exhausted-is-429"),
    pytest.param(1, 201, 0, id="budget-allows-and-decrements"),
])
def test_eviction_honours_pod_disruption_budgets(core: k.CoreV1Api, emu: EmulatorThread, allowed: int, code: int,
                                                 left: int) -> None:
    load(emu, [pod("p", node_name="n1", phase="Running", labels={"app": "x"}),
               {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": "x"}}}, "status": {"disruptionsAllowed": allowed}}])
    body = {"metadata": {"name": "p"}}
    if code == 429:
        assert status_of(lambda: core.create_namespaced_pod_eviction("p", "default", body, _preload_content=False)) == 429
        assert emu.call(lambda e: e.get("pods", "default", "p")) is not None
    else:
        assert answered(core.create_namespaced_pod_eviction("p", "default", body, _preload_content=False)) == 201
        assert emu.call(lambda e: e.get("pods", "default", "p")) is None
    assert emu.call(lambda e: e.get("poddisruptionbudgets", "default", "b"))["status"]["disruptionsAllowed"] == left


def test_namespaced_watch_streams_live_events(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    threading.Timer(0.3, lambda: load(emu, [pod("late")])).start()
    events = watch_events(core, seconds=1)
    assert ("ADDED", "late", "") in events


def test_watch_resumes_after_a_resource_version_without_replaying_older_events(core: k.CoreV1Api,
                                                                               emu: EmulatorThread) -> None:
    load(emu, [pod("a")])
    listed = raw(core.list_namespaced_pod("default", _preload_content=False))
    load(emu, [pod("b")])
    events = watch_events(core, resource_version=listed["metadata"]["resourceVersion"])
    assert events == [("ADDED", "b", "")]


def test_watch_from_a_compacted_resource_version_answers_410(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    load(emu, [pod("a")])
    emu.call(lambda e: e.compact())
    load(emu, [pod("b")])
    assert watch_events(core, resource_version="1") == [("ERROR", "", "410")]


def test_watch_sends_bookmarks_and_ends_at_timeout_seconds(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    started = time.monotonic()
    response = core.list_namespaced_pod("default", watch=True, timeout_seconds=1, allow_watch_bookmarks=True,
                                        resource_version=str(emu.call(lambda e: e.rv)), _preload_content=False)
    types = [json.loads(line)["type"] for chunk in _chunks(response)
             for line in chunk.decode().splitlines() if line.strip()]
    assert 0.9 < time.monotonic() - started < 6
    assert types and set(types) == {"BOOKMARK"}


def test_a_selector_watch_sees_a_pod_leave_its_selection_as_deleted(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    [created] = load(emu, [pod("p")])
    threading.Timer(0.3, lambda: answered(core.create_namespaced_pod_binding(
        "p", "default", binding("p", "n1", created["metadata"]["uid"]), _preload_content=False))).start()
    events = watch_events(core, field_selector="spec.nodeName=")
    assert events == [("ADDED", "p", ""), ("DELETED", "p", "")]


def test_fault_hooks_answer_before_any_state_changes(core: k.CoreV1Api, emu: EmulatorThread) -> None:
    emu.call(lambda e: e.faults.append(
        lambda call: kmock.KubernetesError(status=500, reason="InternalError", message="injected")
        if call.verb == "create" else None))
    assert status_of(lambda: core.create_node({"metadata": {"name": "n1"}})) == 500
    assert emu.call(lambda e: e.get("nodes", "", "n1")) is None


def test_namespaces_can_be_listed_and_read(core: k.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    assert [n.metadata.name for n in core.list_namespace().items] == ["team"]
    assert core.read_namespace("team").status.phase == "Active"


def test_discovery_answers_with_and_without_trailing_slash(api: k.ApiClient) -> None:
    assert k.VersionApi(api).get_code().major == "1"
    groups = {g.name for g in k.ApisApi(api).get_api_versions().groups}
    assert {"scheduling.volcano.sh", "batch.volcano.sh", "coordination.k8s.io"} <= groups
