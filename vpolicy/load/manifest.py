"""A ClusterSnapshot written back as Kubernetes objects, the way `kubectl get ... -o yaml` shows them.

`to_objects(snapshot)` gives plain dicts (Namespace, PriorityClass, Queue, Node, PodGroup, Pod) that
`vpolicy.load.cluster` reads back into an equal snapshot: requests become one container's
`resources.requests` (the loader adds `pods: 1` back), task status becomes `status.phase`, `nodeName`
and `deletionTimestamp` (Releasing), a pipelined pod's node `status.nominatedNodeName`, times RFC 3339.
Replay uses it to turn a recorded session into a scenario file (docs/scenarios.md); `verify` and
`diff --symbolic` use it to print the clusters they find.

It cannot express what no object holds: vcjob-deferred pods are left out (the snapshot's
`deferred_pods`), and so is a conf found in a ConfigMap (a scenario names its policy in its header).
"""
from __future__ import annotations

import datetime
from typing import Any, Mapping

from vpolicy.model import hypernodes as hn
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import PODS, milli_scaled

_CONTAINER = "main"
_PHASE = {snap.TaskStatus.PENDING: "Pending", snap.TaskStatus.BOUND: "Pending", snap.TaskStatus.RUNNING: "Running",
          snap.TaskStatus.SUCCEEDED: "Succeeded", snap.TaskStatus.FAILED: "Failed",
          snap.TaskStatus.UNKNOWN: "Unknown"}


def to_objects(s: snap.ClusterSnapshot) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    out += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in s.namespaces]
    out += [_priority_class(pc) for pc in s.priority_classes]
    out += [_queue(q) for q in s.queues]
    out += [_node(n) for n in s.nodes]
    out += [_hypernode(h) for h in s.hypernodes]
    out += [_podgroup(g) for g in s.podgroups]
    out += [_pod(p) for p in s.pods]
    return out


def quantities(values: Mapping[str, int], *, with_pods: bool = True) -> dict[str, str]:
    """Resources in Kubernetes quantity notation (`1500m`, `4`, bytes as plain numbers)."""
    out = {}
    for name, amount in values.items():
        if name == PODS and not with_pods:
            continue
        if milli_scaled(name):
            out[name] = str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
        elif name == PODS:
            out[name] = str(amount)
        else:  # bytes: the largest binary suffix that keeps the amount whole
            out[name] = next((f"{amount // 1024**p}{s}" for p, s in ((4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki"))
                              if amount and amount % 1024**p == 0), str(amount))
    return out


def timestamp(epoch: float) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def _meta(name: str, *, namespace: str = "", uid: str = "", creation: float = 0.0,
          labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if uid:
        meta["uid"] = uid
    if creation:
        meta["creationTimestamp"] = timestamp(creation)
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _priority_class(pc: snap.PriorityClass) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": pc.name}, "value": pc.value}
    if pc.global_default:
        obj["globalDefault"] = True
    return obj


def _queue(q: snap.Queue) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": q.weight, "reclaimable": q.reclaimable}
    if q.parent:
        spec["parent"] = q.parent
    if q.priority:
        spec["priority"] = q.priority
    if q.capability is not None:
        spec["capability"] = quantities(q.capability)
    if q.deserved is not None:
        spec["deserved"] = quantities(q.deserved)
    if q.guarantee:
        spec["guarantee"] = {"resource": quantities(q.guarantee)}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": _meta(q.name, creation=q.creation, annotations=q.annotations), "spec": spec,
            "status": {"state": q.state.value}}


def _node(n: snap.Node) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if n.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} if t.value
                          else {"key": t.key, "effect": t.effect} for t in n.taints]
    if n.unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": quantities(n.allocatable)}
    if n.capacity:
        status["capacity"] = quantities(n.capacity)
    status["conditions"] = [{"type": "Ready", "status": "True" if n.ready else "False"}]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": _meta(n.name, labels=n.labels, annotations=_usage_annotations(n))}
    if spec:
        obj["spec"] = spec
    obj["status"] = status
    return obj


def _usage_annotations(n: snap.Node) -> Mapping[str, str]:
    """The node's annotations, with its measured usage written as the loader reads it back."""
    if n.usage is None:
        return n.annotations
    notes = {**n.annotations, snap.USAGE_CPU_ANNOTATION: repr(n.usage.cpu), snap.USAGE_MEMORY_ANNOTATION: repr(n.usage.memory)}
    if n.usage.at:
        notes[snap.USAGE_TIME_ANNOTATION] = timestamp(n.usage.at)
    return notes


def _podgroup(g: snap.PodGroup) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": g.min_member, "queue": g.queue}
    if g.min_task_member:
        spec["minTaskMember"] = dict(g.min_task_member)
    if g.min_resources is not None:
        spec["minResources"] = quantities(g.min_resources, with_pods=False)
    if g.priority_class_name:
        spec["priorityClassName"] = g.priority_class_name
    if g.network_topology is not None:
        spec["networkTopology"] = _network_topology(g.network_topology)
    status: dict[str, Any] = {"phase": g.phase.value}
    if g.conditions:
        status["conditions"] = [{k: v for k, v in (("type", c.type), ("status", c.status), ("reason", c.reason),
                                                   ("message", c.message)) if v} for c in g.conditions]
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": _meta(g.name, namespace=g.namespace, uid=g.uid, creation=g.creation, labels=g.labels,
                              annotations=g.annotations),
            "spec": spec, "status": status}


def _network_topology(t: hn.NetworkTopology) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": t.mode}
    if t.highest_tier_allowed is not None:
        out["highestTierAllowed"] = t.highest_tier_allowed
    if t.highest_tier_name:
        out["highestTierName"] = t.highest_tier_name
    return out


def _hypernode(h: hn.HyperNode) -> dict[str, Any]:
    members = []
    for m in h.members:
        sel = m.selector
        if sel.exact is not None:
            selector: dict[str, Any] = {"exactMatch": {"name": sel.exact}}
        elif sel.regex is not None:
            selector = {"regexMatch": {"pattern": sel.regex}}
        else:
            label_match: dict[str, Any] = {}
            if sel.match_labels:
                label_match["matchLabels"] = dict(sel.match_labels)
            if sel.match_expressions:
                label_match["matchExpressions"] = [{"key": r.key, "operator": r.operator, "values": list(r.values)}
                                                   for r in sel.match_expressions]
            selector = {"labelMatch": label_match}
        members.append({"type": m.type, "selector": selector})
    spec: dict[str, Any] = {"tier": h.tier, "members": members}
    if h.tier_name:
        spec["tierName"] = h.tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": _meta(h.name, labels=h.labels), "spec": spec}


def _pod(p: snap.Pod) -> dict[str, Any]:
    meta = _meta(p.name, namespace=p.namespace, uid=p.uid, creation=p.creation, labels=p.labels,
                 annotations=p.annotations)
    phase = _PHASE.get(p.status, p.phase)
    if p.status is snap.TaskStatus.RELEASING:
        meta["deletionTimestamp"] = timestamp(p.creation or 0.0)
        phase = p.phase if p.phase in ("Pending", "Running") else "Running"
    container: dict[str, Any] = {"name": _CONTAINER}
    requests = quantities(p.resreq, with_pods=False)
    if requests:
        container["resources"] = {"requests": requests}
    if p.limits:
        container.setdefault("resources", {})["limits"] = quantities(p.limits, with_pods=False)
    spec: dict[str, Any] = {"priority": p.priority}
    if p.scheduler_name:
        spec["schedulerName"] = p.scheduler_name
    if p.priority_class_name:
        spec["priorityClassName"] = p.priority_class_name
    if p.node_name:
        spec["nodeName"] = p.node_name
    if p.node_selector:
        spec["nodeSelector"] = dict(p.node_selector)
    if p.tolerations:
        spec["tolerations"] = [_toleration(t) for t in p.tolerations]
    affinity = _affinity(p)
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    if p.preemption_policy != "PreemptLowerPriority":
        spec["preemptionPolicy"] = p.preemption_policy
    if p.scheduling_gated:
        spec["schedulingGates"] = [{"name": "vpolicy.replay/gated"}]
    spec["containers"] = [container]
    status: dict[str, Any] = {"phase": phase}
    if p.nominated_node:
        status["nominatedNodeName"] = p.nominated_node
    if p.started_at:
        status["startTime"] = timestamp(p.started_at)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _toleration(t: snap.Toleration) -> dict[str, str]:
    return {k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect))
            if v}


def _affinity(p: snap.Pod) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if p.required_affinity:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(t) for t in p.required_affinity]}
    if p.preferred_affinity:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": t.weight, "preference": _term(t.term)} for t in p.preferred_affinity]
    return out


def _term(term: snap.NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field_key, wanted in (("matchExpressions", False), ("matchFields", True)):
        items = [{"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
                 for r in term.requirements if r.field is wanted]
        if items:
            out[field_key] = items
    return out
