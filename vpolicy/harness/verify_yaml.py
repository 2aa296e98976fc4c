"""A `ClusterSnapshot` written back as Kubernetes manifests, so a counterexample can be dry-run.

`verify` builds its small clusters as snapshots; a user needs them as the YAML `vpolicy dry-run
--cluster` reads (Cedar's concretizer: decode into the user's vocabulary). This writer covers what the
verify worlds use — Nodes, Queues (weight, capability, guarantee, reclaimable, parent, state),
PriorityClasses, PodGroups (minMember, queue, priorityClassName, minResources, phase) and Pods (requests,
node, phase, priority, group annotation) — and the tests check that `load_cluster` reads back the same
snapshot. The `root` and `default` queues are left out when they are the ones the loader creates.
"""
from __future__ import annotations

import datetime
import io
from typing import Any, Mapping

from ruamel.yaml import YAML

from vpolicy.harness import explain_render as render
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import PODS, Resources

_PHASES = {snap.TaskStatus.RUNNING: "Running", snap.TaskStatus.SUCCEEDED: "Succeeded",
           snap.TaskStatus.FAILED: "Failed"}


def manifests(snapshot: snap.ClusterSnapshot) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    out += [_priority_class(pc) for pc in snapshot.priority_classes]
    out += [_queue(q) for q in snapshot.queues if not _loader_default(q)]
    out += [_node(n) for n in snapshot.nodes]
    out += [_podgroup(pg) for pg in snapshot.podgroups]
    out += [_pod(p) for p in snapshot.pods]
    return out


def to_yaml(snapshot: snap.ClusterSnapshot, *, comment: str = "") -> str:
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 120
    buf = io.StringIO()
    if comment:
        buf.write("".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines()))
    yaml.dump_all(manifests(snapshot), buf)
    return buf.getvalue()


def timestamp(seconds: float) -> str:
    """Epoch seconds as an RFC 3339 time (UTC), as the loader reads `creationTimestamp`."""
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quantities(res: Mapping[str, int]) -> dict[str, str]:
    return {k: render.quantity(k, v) for k, v in sorted(res.items())}


def _loader_default(q: snap.Queue) -> bool:
    if q.name == snap.ROOT_QUEUE:
        return q == snap.Queue(name=snap.ROOT_QUEUE, weight=1, reclaimable=False)
    if q.name == snap.DEFAULT_QUEUE:
        return q == snap.Queue(name=snap.DEFAULT_QUEUE, weight=1, reclaimable=True)
    return False


def _priority_class(pc: snap.PriorityClass) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": pc.name}, "value": pc.value}
    if pc.global_default:
        out["globalDefault"] = True
    return out


def _queue(q: snap.Queue) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": q.weight}
    if q.parent:
        spec["parent"] = q.parent
    if q.priority:
        spec["priority"] = q.priority
    if q.capability is not None:
        spec["capability"] = _quantities(q.capability)
    if q.deserved is not None:
        spec["deserved"] = _quantities(q.deserved)
    if q.guarantee:
        spec["guarantee"] = {"resource": _quantities(q.guarantee)}
    spec["reclaimable"] = q.reclaimable
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": q.name, "creationTimestamp": timestamp(q.creation)},
            "spec": spec, "status": {"state": q.state.value}}


def _node(n: snap.Node) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": n.name}
    if n.labels:
        meta["labels"] = dict(n.labels)
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
    spec: dict[str, Any] = {}
    if n.unschedulable:
        spec["unschedulable"] = True
    if n.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints]
    if spec:
        out["spec"] = spec
    out["status"] = {"allocatable": _quantities(n.allocatable),
                     "capacity": _quantities(n.capacity or n.allocatable),
                     "conditions": [{"type": "Ready", "status": "True" if n.ready else "False"}]}
    return out


def _podgroup(pg: snap.PodGroup) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": pg.min_member, "queue": pg.queue}
    if pg.priority_class_name:
        spec["priorityClassName"] = pg.priority_class_name
    if pg.min_resources is not None:
        spec["minResources"] = _quantities(pg.min_resources)
    if pg.min_task_member:
        spec["minTaskMember"] = dict(pg.min_task_member)
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": pg.name, "namespace": pg.namespace, "creationTimestamp": timestamp(pg.creation)},
            "spec": spec, "status": {"phase": pg.phase.value}}


def _pod(p: snap.Pod) -> dict[str, Any]:
    annotations = dict(p.annotations)
    if p.group:
        annotations[snap.GROUP_NAME_ANNOTATION] = p.group
    if p.role:
        annotations[snap.TASK_SPEC_ANNOTATION] = p.role
    meta: dict[str, Any] = {"name": p.name, "namespace": p.namespace, "creationTimestamp": timestamp(p.creation)}
    if p.uid != p.key:
        meta["uid"] = p.uid
    if annotations:
        meta["annotations"] = annotations
    if p.labels:
        meta["labels"] = dict(p.labels)
    requests = Resources({k: v for k, v in p.resreq.items() if k != PODS})
    spec: dict[str, Any] = {"schedulerName": p.scheduler_name or "volcano", "priority": p.priority}
    if p.priority_class_name:
        spec["priorityClassName"] = p.priority_class_name
    if p.node_name:
        spec["nodeName"] = p.node_name
    spec["containers"] = [{"name": "main", "resources": {"requests": _quantities(requests)}}]
    if p.status is snap.TaskStatus.RELEASING:
        meta["deletionTimestamp"] = timestamp(p.creation + 1)
    phase = _PHASES.get(p.status, "Running" if p.status is snap.TaskStatus.RELEASING and p.node_name else "Pending")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}
