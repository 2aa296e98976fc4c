"""What the agent reads from a pod: its QoS level, its Kubernetes QoS class, its requests and priority.

QoS levels are Volcano's annotation `volcano.sh/qos-level`: LC (latency critical) and HLS (highly
latency sensitive) map to kernel level 2, LS (latency sensitive) to 1, BE (best effort) to -1; no or an
unknown annotation is 0, an ordinary online pod. Only level -1 pods are offline ("preemptable"): they are
the only ones the agent throttles or evicts.

The Kubernetes QoS class (Guaranteed, Burstable, BestEffort) decides where the kubelet puts the pod's
cgroup; `status.qosClass` is used when the kubelet has written it, else it is computed from the spec as
the kubelet does (cpu and memory only; extended resources such as batch-cpu do not count). Quantities
are parsed by `vpolicy.model.quantity`; batch resources are integers Volcano writes in millicores
(`kubernetes.io/batch-cpu`) and bytes (`kubernetes.io/batch-memory`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vpolicy.model import quantity

QOS_LEVEL_KEY = "volcano.sh/qos-level"
LEVELS = {"LC": 2, "HLS": 2, "LS": 1, "BE": -1}
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
GUARANTEED, BURSTABLE, BESTEFFORT = "Guaranteed", "Burstable", "BestEffort"


@dataclass(frozen=True, slots=True)
class PodInfo:
    """The parts of a pod the agent decides on."""
    namespace: str
    name: str
    uid: str
    level: int  # kernel QoS level: 2, 1, 0 or -1 (BE)
    qos_class: str
    priority: int
    cpu_request_milli: int  # cpu requests of its containers (init containers as the kubelet counts them)
    memory_request: int
    batch_cpu_request: int  # millicores, as Volcano writes kubernetes.io/batch-cpu
    batch_memory_request: int  # bytes
    batch_cpu_limit: int
    batch_memory_limit: int
    memory_limit: int  # 0 when any container has none
    annotations: Mapping[str, str]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def offline(self) -> bool:
        return self.level < 0


def level_of(pod: Mapping[str, Any]) -> int:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return LEVELS.get(str(annotations.get(QOS_LEVEL_KEY, "")), 0)


def active_on(pods: list[Mapping[str, Any]], node: str) -> list[PodInfo]:
    """The pods bound to `node` that still run (not finished, not being deleted), as PodInfo."""
    out = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        if spec.get("nodeName") != node or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if meta.get("deletionTimestamp"):
            continue
        out.append(pod_info(pod))
    return out


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    containers = list(spec.get("containers") or [])
    requests = [((c.get("resources") or {}).get("requests") or {}) for c in containers]
    limits = [((c.get("resources") or {}).get("limits") or {}) for c in containers]
    memory_limits = [_amount(lim, "memory") for lim in limits]
    return PodInfo(
        namespace=str(meta.get("namespace") or "default"), name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""), level=level_of(pod), qos_class=qos_class(pod),
        priority=int(spec.get("priority") or 0),
        cpu_request_milli=sum(_amount(r, "cpu", milli=True) for r in requests),
        memory_request=sum(_amount(r, "memory") for r in requests),
        batch_cpu_request=sum(_amount(r, BATCH_CPU) for r in requests),
        batch_memory_request=sum(_amount(r, BATCH_MEMORY) for r in requests),
        batch_cpu_limit=sum(_amount(lim, BATCH_CPU) for lim in limits),
        batch_memory_limit=sum(_amount(lim, BATCH_MEMORY) for lim in limits),
        memory_limit=sum(memory_limits) if memory_limits and all(memory_limits) else 0,
        annotations=dict(meta.get("annotations") or {}))


def qos_class(pod: Mapping[str, Any]) -> str:
    """The kubelet's QoS class: status.qosClass if written, else computed from cpu/memory requests and limits."""
    written = (pod.get("status") or {}).get("qosClass")
    if written in (GUARANTEED, BURSTABLE, BESTEFFORT):
        return str(written)
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = dict(res.get("requests") or {}), dict(res.get("limits") or {})
        for name in ("cpu", "memory"):
            r, lm = req.get(name, lim.get(name)), lim.get(name)
            if r is not None or lm is not None:
                any_set = True
            if lm is None or r is None or _parse(r, name) != _parse(lm, name):
                guaranteed = False
    if not any_set:
        return BESTEFFORT
    return GUARANTEED if guaranteed else BURSTABLE


def _amount(values: Mapping[str, Any], name: str, *, milli: bool = False) -> int:
    text = values.get(name)
    if text is None:
        return 0
    try:
        return quantity.parse_milli_value(text) if milli else quantity.parse_value(text)
    except (ValueError, TypeError):
        return 0  # the API server refuses bad quantities; a hand-made object is read as none


def _parse(text: Any, name: str) -> int | None:
    try:
        return quantity.parse_milli_value(text) if name == "cpu" else quantity.parse_value(text)
    except (ValueError, TypeError):
        return None
