"""deploy/crds.yaml against Volcano's own CRDs (its v1.10.0 Helm chart, read from the volcano.sh/volcano
module in the Go module cache): same names, scope, versions and subresources, and every field ours
types is there in theirs with the same type — so a cluster with Volcano's CRDs serves every field vpolicy
reads and writes. Then, on the real API server (which runs Volcano's CRDs), the status fields the
scheduler writes survive the CRDs' pruning."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import DEPLOY, Cluster, load_yaml

Schema = dict[str, Any]


@pytest.fixture(scope="module")
def volcano_crds() -> dict[str, dict[str, Any]]:
    from controlplane import build

    try:
        directory = build.volcano_crds()
    except build.BuildError as exc:
        pytest.fail(str(exc), pytrace=False)
    return {d["metadata"]["name"]: d for f in sorted(Path(directory).glob("*.yaml")) for d in load_yaml(f.read_text())}


def ours() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in load_yaml((DEPLOY / "crds.yaml").read_text())}


def typed_paths(schema: Schema, prefix: str = "") -> Iterator[tuple[str, Schema]]:
    """(path, schema) of every node below `schema`: `.name` for properties, `[]` items, `{}` map values."""
    for name, sub in (schema.get("properties") or {}).items():
        yield f"{prefix}.{name}", sub
        yield from typed_paths(sub, f"{prefix}.{name}")
    if isinstance(schema.get("items"), dict):
        yield f"{prefix}[]", schema["items"]
        yield from typed_paths(schema["items"], f"{prefix}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield f"{prefix}{{}}", schema["additionalProperties"]
        yield from typed_paths(schema["additionalProperties"], f"{prefix}{{}}")


def find(schema: Schema, path: str) -> Schema | None:
    """The node at `path` in `schema`; a node that keeps unknown fields answers for all below it."""
    import re

    node = schema
    for step in re.findall(r"\.[^.\[{]+|\[\]|\{\}", path):
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return {"x-kubernetes-preserve-unknown-fields": True}
        if step == "[]":
            node = node.get("items") or {}
        elif step == "{}":
            node = node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else {}
        else:
            properties = node.get("properties") or {}
            if step[1:] not in properties:
                return None
            node = properties[step[1:]]
    return node


def kind_of(schema: Schema) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(schema.get("type", "any"))


# Fields Volcano's main branch reads that its 1.10 chart (the newest the module proxy serves) does not
# declare yet: numa-aware's GPU hints (api.GPUDetails) and the kubelet's podAllocations. A server with
# the 1.10 CRDs prunes them, so there vpolicy sees no GPU topology, as Volcano 1.10 does.
NEWER_THAN_1_10 = {"numatopologies.nodeinfo.volcano.sh": (".spec.gpuDetail", ".spec.podAllocations")}

SHARED = ["queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh", "jobs.batch.volcano.sh",
          "numatopologies.nodeinfo.volcano.sh"]  # deploy/'s CronJob and HyperNode: not in Volcano 1.10's chart


@pytest.mark.parametrize("name", SHARED)
def test_our_crd_declares_what_volcanos_does(name: str, volcano_crds: dict[str, dict[str, Any]]) -> None:
    mine, theirs = ours()[name], volcano_crds[name]
    assert mine["spec"]["group"] == theirs["spec"]["group"]
    assert mine["spec"]["scope"] == theirs["spec"]["scope"]
    for key in ("kind", "listKind", "plural", "singular"):
        assert mine["spec"]["names"].get(key) == theirs["spec"]["names"].get(key), key
    assert set(mine["spec"]["names"].get("shortNames") or []) <= set(theirs["spec"]["names"].get("shortNames") or [])
    [my_version], [their_version] = mine["spec"]["versions"], theirs["spec"]["versions"]
    assert (my_version["name"], my_version["served"], my_version["storage"]) == \
        (their_version["name"], their_version["served"], their_version["storage"])
    assert (my_version.get("subresources") or {}) == (their_version.get("subresources") or {})


@pytest.mark.parametrize("name", SHARED)
def test_every_field_our_crd_types_volcanos_has_with_the_same_type(
        name: str, volcano_crds: dict[str, dict[str, Any]]) -> None:
    [mine] = ours()[name]["spec"]["versions"]
    [theirs] = volcano_crds[name]["spec"]["versions"]
    their_schema = theirs["schema"]["openAPIV3Schema"]
    problems = []
    newer = NEWER_THAN_1_10.get(name, ())
    problems += [f"{path}: listed as newer than Volcano 1.10 but in its CRD (drop it from the list)"
                 for path in newer if find(their_schema, path) is not None]
    for path, schema in typed_paths(mine["schema"]["openAPIV3Schema"]):
        if path.startswith(newer):
            continue
        found = find(their_schema, path)
        if found is None:
            problems.append(f"{path}: not in Volcano's CRD (a server with it prunes the field)")
        elif not found.get("x-kubernetes-preserve-unknown-fields") and kind_of(found) != kind_of(schema):
            problems.append(f"{path}: ours {kind_of(schema)}, Volcano's {kind_of(found)}")
    assert problems == []


def test_status_the_scheduler_writes_survives_volcanos_pruning(cluster: Cluster) -> None:
    """PodGroup status goes through the object (no /status in Volcano's CRD); Queue status through
    /status. What comes back is what was written: nothing pruned."""
    ns = cluster.namespace("crd")
    group = cluster.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                            "metadata": {"name": "pg", "namespace": ns},
                            "spec": {"minMember": 2, "minTaskMember": {"w": 2}, "queue": "default"}})
    status = {"phase": "Inqueue", "running": 1, "succeeded": 0, "failed": 0,
              "conditions": [{"type": "Unschedulable", "status": "True", "transitionID": "t-1",
                              "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "NotEnoughResources",
                              "message": "1/2 tasks in gang unschedulable"}]}
    answer = cluster.call("PATCH", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/pg",
                          {"status": status}, content_type="application/merge-patch+json")
    assert answer["status"] == status
    assert answer["spec"]["minTaskMember"] == {"w": 2}
    assert group["metadata"]["uid"] == answer["metadata"]["uid"]
    cluster.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": f"q-{ns}"}, "spec": {"weight": 1}})
    queue_status = {"state": "Open", "allocated": {"cpu": "2", "memory": "1Gi"}, "pending": 1, "running": 2,
                    "inqueue": 0, "unknown": 0, "completed": 0}
    answer = cluster.call("PATCH", f"/apis/scheduling.volcano.sh/v1beta1/queues/q-{ns}/status",
                          {"status": queue_status}, content_type="application/merge-patch+json")
    assert answer["status"] == queue_status
    cluster.admin.call("DELETE", f"/apis/scheduling.volcano.sh/v1beta1/queues/q-{ns}")
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
