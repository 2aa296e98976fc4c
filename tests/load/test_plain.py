"""A pod written as the API writes it is read without a View per field (`vpolicy.load.plain`); any other pod is
read through the checked readers. Either way the snapshot and every diagnostic must be what the checked
readers alone give: here the same generated JSON dumps, with ordinary and odd values in the fields the plain
path reads, are loaded by the fast path (plain dicts: the plain readers first) and by the exact path
(ruamel's nodes: checked readers only), and must agree to the last warning and `file:line:col`.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings, strategies as st

from vpolicy.errors import PolicyError
from vpolicy.load import cluster
from vpolicy.model import snapshot

_NAMES = st.sampled_from(["a", "job-1-0", "job-1-1", "web"])
_TIMES = st.sampled_from(["2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5+02:00", "2024-05-01"])
_TEXT_MAP = st.dictionaries(st.sampled_from(["app", "volcano.sh/preemptable", "scheduling.k8s.io/group-name"]),
                            _NAMES, max_size=2)
_META = st.fixed_dictionaries({"name": _NAMES}, optional={
    "namespace": st.sampled_from(["default", "team-a", ""]), "uid": st.sampled_from(["u-1", "u-2", ""]),
    "labels": _TEXT_MAP, "annotations": st.one_of(_TEXT_MAP, st.just({"volcano.sh/task-priority": "5"})),
    "creationTimestamp": _TIMES, "deletionTimestamp": _TIMES,
    "ownerReferences": st.lists(st.one_of(st.fixed_dictionaries({}, optional={"kind": st.just("Job"), "name": _NAMES}),
                                          st.none()), max_size=2),
})
_CONDITION = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["PodScheduled", "Ready"]), "status": st.sampled_from(["True", "False"]),
    "lastTransitionTime": _TIMES})
_STATUS = st.fixed_dictionaries({}, optional={
    "phase": st.sampled_from(["Pending", "Running", "Succeeded", ""]), "qosClass": st.sampled_from(["Guaranteed", ""]),
    "startTime": _TIMES, "nominatedNodeName": st.just("n1"),
    "conditions": st.lists(st.one_of(_CONDITION, st.none()), max_size=3)})
_SPEC = st.fixed_dictionaries({"containers": st.just([{"name": "main", "resources": {"requests": {"cpu": "1"}}}])},
                              optional={"nodeName": st.just("n1"), "priority": st.just(3)})
_POD = st.fixed_dictionaries({"metadata": _META}, optional={"status": _STATUS, "spec": _SPEC})
# Where a value the API would not write may be put, and such values (a time that is none, a phase that
# is none, and values of the wrong type).
_SPOTS = [("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("metadata", "uid"),
          ("metadata", "labels"), ("metadata", "labels", "app"), ("metadata", "annotations"),
          ("metadata", "annotations", "volcano.sh/task-priority"), ("metadata", "creationTimestamp"),
          ("metadata", "deletionTimestamp"), ("metadata", "ownerReferences"), ("metadata", "ownerReferences", 0),
          ("metadata", "ownerReferences", 0, "kind"), ("metadata", "ownerReferences", 0, "name"), ("status",),
          ("status", "phase"), ("status", "qosClass"), ("status", "startTime"), ("status", "nominatedNodeName"),
          ("status", "conditions"), ("status", "conditions", 0), ("status", "conditions", 0, "type"),
          ("status", "conditions", 0, "status"), ("status", "conditions", 0, "lastTransitionTime")]
_ODD = st.sampled_from([None, "", 7, True, 1.5, ["x"], {"k": "v"}, "yesterday", "Bogus", " 9 ", "99999999999"])


def _spoil(pod: dict[str, Any], spot: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """The pod with `value` at `spot` (mappings on the way made when missing; a list too short: unchanged)."""
    node: Any = pod
    for step in spot[:-1]:
        if isinstance(node, dict) and isinstance(step, str):
            node = node.setdefault(step, {} if not isinstance(node.get(step), (dict, list)) else node[step])
        elif isinstance(node, list) and isinstance(step, int) and step < len(node) and node[step] is not None:
            node = node[step]
        else:
            return pod
    last = spot[-1]
    if isinstance(node, dict) and isinstance(last, str):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    return pod


# Most pods as the API writes them (the plain path), some with one odd value (read checked instead).
_PODS = st.lists(st.one_of(_POD, st.builds(_spoil, _POD, st.sampled_from(_SPOTS), _ODD)), min_size=1, max_size=4)


def _load(path: str, *, fast: bool) -> tuple[snapshot.ClusterSnapshot | None, list[str]]:
    try:
        loaded = cluster.load_cluster(path, fast=fast)
    except PolicyError as exc:
        return None, [d.one_line() for d in exc.diagnostics]
    return loaded, list(loaded.warnings)


@settings(max_examples=80, deadline=None)
@given(pods=_PODS)
def test_pods_read_plain_are_read_as_the_checked_readers_read_them(pods: list[dict[str, Any]]) -> None:
    items = [{"apiVersion": "v1", "kind": "Pod", **pod} for pod in pods]
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "pods.json")
        Path(path).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2))
        exact, exact_reports = _load(path, fast=False)
        fast, fast_reports = _load(path, fast=True)
        assert fast_reports == exact_reports  # (spans are found in the file when first read)
        assert fast == exact  # origins are left out of equality; every scheduling field is in it
        if fast is not None and exact is not None:
            assert [str(p.origin) for p in fast.pods] == [str(p.origin) for p in exact.pods]


def test_a_plain_pod_keeps_every_field_the_checked_readers_give(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "job-1-3", "namespace": "team-a", "uid": "u-9", "labels": {"app": "web"},
                        "annotations": {"scheduling.k8s.io/group-name": "job-1", "volcano.sh/task-priority": "7"},
                        "creationTimestamp": "2024-05-01T12:00:00Z", "ownerReferences": [{"kind": "Job", "name": "j"}]},
           "spec": {"nodeName": "n1", "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
           "status": {"phase": "Running", "qosClass": "Guaranteed", "startTime": "2024-05-01T12:00:05Z",
                      "nominatedNodeName": "n2",
                      "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T12:00:09Z"},
                                     {"type": "PodScheduled", "status": "True",
                                      "lastTransitionTime": "2024-05-01T12:00:01Z"},
                                     {"type": "PodScheduled", "status": "True",  # only the first counts
                                      "lastTransitionTime": "2024-05-01T12:00:07Z"}]}}
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}))
    read = cluster.load_cluster(str(path), fast=True).pods[0]
    start = 1714564800.0  # 2024-05-01T12:00:00Z
    assert (read.key, read.uid, read.group, read.priority, read.phase, read.node_name, read.nominated_node) == (
        "team-a/job-1-3", "u-9", "job-1", 7, "Running", "n1", "n2")
    assert (read.creation, read.started_at, read.scheduled_at, read.guaranteed) == (start, start + 5, start + 1, True)
    assert read.status is snapshot.TaskStatus.RUNNING and dict(read.labels) == {"app": "web"}
    assert read == cluster.load_cluster(str(path), fast=False).pods[0]


_IMAGE = st.fixed_dictionaries({}, optional={
    "names": st.sampled_from([["nginx:1"], ["nginx:1", "registry/app@sha256:ab"], [], None, "nginx", [None], [3]]),
    "sizeBytes": st.sampled_from([0, 123, 10**10, None, -1, "12", 1.5, True])})


@settings(max_examples=60, deadline=None)
@given(images=st.lists(st.one_of(_IMAGE, _IMAGE, _IMAGE, st.none(), st.just("x")), max_size=4))
@example(images=[{"names": ["nginx:1"], "sizeBytes": 5}, {"names": ["a"], "sizeBytes": -1}])
def test_node_images_read_plain_are_read_as_the_checked_readers_read_them(images: list[Any]) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4"}, "images": images}}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "nodes.json")
        Path(path).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]}, indent=2))
        exact, exact_reports = _load(path, fast=False)
        fast, fast_reports = _load(path, fast=True)
        assert fast_reports == exact_reports
        assert fast == exact
