"""Volcano's PodGroup webhooks: defaulting (podgroups/mutate) and validation (podgroups/validate).

Defaults (`default_podgroup`): a group in the `default` queue (or none) moves to the queue its
namespace names in the `scheduling.volcano.sh/queue-name` annotation.
Validation (`validate_podgroup`): minMember >= 0; the queue exists and is Open; networkTopology
sets at most one of highestTierAllowed and highestTierName.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vpolicy.admission.common import Queues, Violation, integer

DEFAULT_QUEUE = "default"
NAMESPACE_QUEUE_KEY = "scheduling.volcano.sh/queue-name"


def default_podgroup(group: Mapping[str, Any], *, namespace_annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    out = copy.deepcopy(dict(group))
    spec = out.setdefault("spec", {})
    wanted = (namespace_annotations or {}).get(NAMESPACE_QUEUE_KEY)
    if wanted and spec.get("queue") in (None, "", DEFAULT_QUEUE):
        spec["queue"] = wanted
    return out


def validate_podgroup(group: Mapping[str, Any], *, queues: Queues | None = None) -> list[Violation]:
    out: list[Violation] = []
    spec = group.get("spec") or {}
    if spec.get("minMember") is not None:
        value = integer(spec.get("minMember"))
        if value is None or value < 0:
            out.append(Violation("admission.podgroup-min-member", "spec.minMember", "minMember must be >= 0"))
    topology = spec.get("networkTopology") or {}
    if isinstance(topology, Mapping) and topology.get("highestTierAllowed") is not None and \
            topology.get("highestTierName"):
        out.append(Violation("admission.podgroup-network-topology", "spec.networkTopology",
                             "set highestTierAllowed or highestTierName, not both"))
    if queues is not None:
        name = str(spec.get("queue") or DEFAULT_QUEUE)
        queue = queues.get(name)
        if queue is None:
            out.append(Violation("admission.podgroup-queue-not-found", "spec.queue", f"unable to find queue: {name}"))
        else:
            state = (queue.get("status") or {}).get("state") or "Open"
            if state != "Open":
                out.append(Violation("admission.podgroup-queue-not-open", "spec.queue",
                                     f"can only submit PodGroup to queue with state `Open`, queue `{name}` "
                                     f"status is `{state}`"))
    return out
