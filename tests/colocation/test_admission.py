"""pods/mutate: a BE pod's cpu/memory become kubernetes.io/batch-cpu/batch-memory; other pods pass unchanged."""
from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from cluster_adapter.controllers import webhook
from vpolicy.admission import pods


def pod(level: str | None, resources: dict[str, Any]) -> dict[str, Any]:
    annotations = {pods.QOS_LEVEL_KEY: level} if level else {}
    return {"metadata": {"name": "p", "namespace": "default", "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}


@pytest.mark.parametrize("resources, expected", [
    pytest.param({"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
                 {"requests": {pods.BATCH_CPU: "1500", pods.BATCH_MEMORY: "1073741824"},
                  "limits": {pods.BATCH_CPU: "2000", pods.BATCH_MEMORY: "2147483648"}}, id="requests-and-limits"),
    pytest.param({"requests": {"cpu": "1", pods.BATCH_CPU: "500", "nvidia.com/gpu": "1"}},
                 {"requests": {pods.BATCH_CPU: "500", "nvidia.com/gpu": "1"}}, id="explicit-batch-kept"),
])
def test_a_be_pod_asks_for_lent_resources(resources: dict[str, Any], expected: dict[str, Any]) -> None:
    out = pods.default_pod(pod("BE", resources))
    assert out["spec"]["containers"][0]["resources"] == expected


@pytest.mark.parametrize("level", ["LC", "HLS", "LS", None])
def test_online_pods_are_unchanged(level: str | None) -> None:
    original = pod(level, {"requests": {"cpu": "1", "memory": "1Gi"}})
    assert pods.default_pod(original) == original


def test_the_webhook_answers_a_patch_for_a_be_pod_and_none_for_an_online_pod() -> None:
    be = webhook.review("/pods/mutate", {"request": {"uid": "1", "operation": "CREATE",
                                                     "object": pod("BE", {"requests": {"cpu": "250m"}})}}, None)
    patch = json.loads(base64.b64decode(be["response"]["patch"]))
    assert patch[0]["path"] == "/spec"
    assert patch[0]["value"]["containers"][0]["resources"] == {"requests": {pods.BATCH_CPU: "250"}}
    online = webhook.review("/pods/mutate", {"request": {"uid": "2", "operation": "CREATE",
                                                         "object": pod("LC", {"requests": {"cpu": "1"}})}}, None)
    assert "patch" not in online["response"] and online["response"]["allowed"] is True
