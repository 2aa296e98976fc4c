"""The single translation point between Kubernetes objects and vpolicy's model, both ways.

Objects -> snapshot: `to_snapshot` hands the informers' objects to `vpolicy.snapshot_from_objects`,
the file loader's own readers and assembly, so `vpolicy dry-run` on a dump and the live scheduler on
the cluster it came from build the same `ClusterSnapshot`. Live, an object with errors is skipped
with a warning instead of stopping every session.

Decisions -> objects: the status bodies the scheduler writes, in Kubernetes' own shapes: PodGroup
`status` (phase, conditions with Volcano's fields, counters), Queue `status` (allocated as
quantities, counters), quantities formatted back from vpolicy's integer units, and the Events.
Which of these to write and when is `cluster_adapter.scheduler`'s business; the API calls are
`cluster_adapter.kube`'s.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cluster_adapter.timestamps import rfc3339
import vpolicy
from vpolicy.model import decisions, resources
from vpolicy.model.snapshot import ClusterSnapshot

COMPONENT = "vpolicy-scheduler"
QUEUE_COUNTERS = ("pending", "inqueue", "running", "unknown", "completed")  # Queue status: podgroups per phase


def to_snapshot(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return vpolicy.snapshot_from_objects(objects, strict=False)


SnapshotReader = vpolicy.SnapshotReader  # to_snapshot for repeated reads of one cluster (see vpolicy.load.objects)


def quantity_text(name: str, amount: int) -> str:
    """vpolicy units back to a Kubernetes quantity: 1500 cpu -> "1500m", 2000 -> "2", bytes as is."""
    if not resources.milli_scaled(name):
        return str(amount)
    if amount % 1000 == 0:
        return str(amount // 1000)
    return f"{amount}m"


def resource_list(values: Mapping[str, int]) -> dict[str, str]:
    return {name: quantity_text(name, amount) for name, amount in sorted(values.items())}


def podgroup_status(status: decisions.PodGroupStatus, current: Mapping[str, Any], *, now: float,
                    session_id: str) -> dict[str, Any]:
    """The full PodGroup status to write: the session's phase, conditions and counters.

    A condition keeps its `lastTransitionTime` and `transitionID` while its type, status, reason and
    message stay the same; a changed one gets this session's. Conditions of other types are kept,
    as Volcano's UpdatePodGroupCondition replaces by type and never drops one.
    """
    old = {c.get("type"): c for c in current.get("conditions") or [] if isinstance(c, Mapping)}
    conditions = []
    for cond in status.conditions:
        previous = old.get(cond.get("type"))
        same = previous is not None and all(previous.get(k, "") == cond.get(k, "")
                                            for k in ("status", "reason", "message"))
        conditions.append({
            "type": cond.get("type", ""), "status": cond.get("status", ""),
            "transitionID": previous.get("transitionID", session_id) if same and previous else session_id,
            "lastTransitionTime": (previous.get("lastTransitionTime") if same and previous else None) or rfc3339(now),
            "reason": cond.get("reason", ""), "message": cond.get("message", ""),
        })
    ours = {c["type"] for c in conditions}
    kept = [dict(c) for t, c in old.items() if t not in ours]
    out: dict[str, Any] = {"phase": status.phase, "conditions": kept + conditions}
    for key, value in (("running", status.running), ("succeeded", status.succeeded), ("failed", status.failed)):
        if value or key in current:
            out[key] = value
    return out


def status_changed(desired: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether writing `desired` would change anything but condition bookkeeping times."""
    def strip(status: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in status.items() if k != "conditions"}
        out["conditions"] = [{k: v for k, v in c.items() if k not in ("lastTransitionTime", "transitionID")}
                             for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        return out
    return strip(desired) != strip({k: v for k, v in current.items() if k in desired or k == "conditions"})


def queue_status(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The decision document's queue entry as the Queue `status` fields the scheduler owns: allocated
    and the podgroup counters. Never `state`: the queue controller owns it (Volcano's scheduler never
    writes it), and a state from the session's snapshot, written without a resourceVersion, would undo
    a CloseQueue or OpenQueue the controller made while the session ran."""
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "allocated" and isinstance(value, Mapping):
            out["allocated"] = resource_list(value)
        elif key in QUEUE_COUNTERS:
            out[key] = value
    return out


def changed_fields(desired: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `desired` whose value differs from `current` (a merge patch of only what changed)."""
    return {k: v for k, v in desired.items() if current.get(k) != v}


POD = ("v1", "Pod")
PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")


def object_event(*, involved: tuple[str, str], namespace: str, name: str, uid: str, reason: str, message: str,
                 event_type: str, now: float, instance: str) -> dict[str, Any]:
    """A core/v1 Event about an object (`involved`: its apiVersion and kind, `POD` or `PODGROUP`), as
    kube-scheduler and Volcano write them."""
    stamp = rfc3339(now)
    api_version, kind = involved
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name,
                           "uid": uid},
        "reason": reason, "message": message[:1024], "type": event_type,
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT, "reportingInstance": instance,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


def pod_status_changes(pod: Mapping[str, Any], *, condition: Mapping[str, str] | None, nominated: str | None,
                       now: float) -> dict[str, Any]:
    """The pod `status` fields to patch so that it shows this session's PodScheduled=False condition
    and nominated node, as Volcano's taskUnschedulable writes them; empty when it already shows both.

    The condition is rewritten when its status, reason or message differ (its lastTransitionTime moves
    only when the status does); the nominated node is written when set and different, and never
    cleared: a preemptor still waiting for its victims to go keeps the node its evictions chose."""
    status = pod.get("status") or {}
    changes: dict[str, Any] = {}
    if condition is not None:
        held = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        wanted = {"type": "PodScheduled", "status": "False", "reason": condition["reason"],
                  "message": condition["message"]}
        if held is None or any(held.get(k) != v for k, v in wanted.items()):
            since = held.get("lastTransitionTime") if held is not None and held.get("status") == "False" else None
            wanted["lastTransitionTime"] = since or rfc3339(now)
            changes["conditions"] = [wanted]
    if nominated and status.get("nominatedNodeName") != nominated:
        changes["nominatedNodeName"] = nominated
    return changes


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name
