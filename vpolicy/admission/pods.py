"""Pod defaulting for colocation (pods/mutate): a BE pod asks for lent resources, not the node's own.

An offline pod (annotation `volcano.sh/qos-level: BE`) runs on what online pods leave idle, which the
node agent publishes as the extended resources `kubernetes.io/batch-cpu` (millicores, an integer) and
`kubernetes.io/batch-memory` (bytes). `default_pod` rewrites each container's `cpu` and `memory`
requests and limits into those, so the scheduler fits the pod against the lent amounts and the kubelet
files it under the BestEffort cgroup (where the agent throttles BE work). A container that already
names a batch resource keeps it and loses the native one. Other pods are returned unchanged.
This module is pure (no cluster, no I/O); the webhook server is `cluster_adapter.controllers.webhook`.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vpolicy.model import quantity

QOS_LEVEL_KEY = "volcano.sh/qos-level"
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
_CONVERSIONS = (("cpu", BATCH_CPU, quantity.parse_milli_value), ("memory", BATCH_MEMORY, quantity.parse_value))


def is_offline(pod: Mapping[str, Any]) -> bool:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(QOS_LEVEL_KEY) == "BE"


def default_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod with a BE pod's cpu/memory requests and limits turned into batch-cpu/batch-memory."""
    out = copy.deepcopy(dict(pod))
    if not is_offline(out):
        return out
    spec = out.get("spec") or {}
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                values = resources.get(section)
                if isinstance(values, dict):
                    _convert(values)
    return out


def _convert(values: dict[str, Any]) -> None:
    for native, batch, parse in _CONVERSIONS:
        if native not in values:
            continue
        text = values.pop(native)
        if batch in values:
            continue  # the pod said what it wants from the lent pool
        try:
            values[batch] = str(parse(text))
        except (ValueError, TypeError):
            values[native] = text  # the API server refuses it with its own message
