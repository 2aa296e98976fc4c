"""Builders that arrange a small world for engine tests: nodes, queues, podgroups, pods, a snapshot and a
decision document, with Volcano's units (cpu in millicores, memory in bytes, 1 GPU = 1000, `pods: 1`).

Pods live in namespace `ns`; `pod("pg-0", group="pg")` is `ns/pg-0` in podgroup `ns/pg`.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import (
    ClusterSnapshot,
    Node,
    Pod,
    PodGroup,
    PodGroupPhase,
    PriorityClass,
    Queue,
    TaskStatus,
)

GIB = 1024 ** 3
GPU = "nvidia.com/gpu"
NS = "ns"


def resources(cpu: int = 0, memory: int = 0, *, pods: int = 0, gpu: int = 0) -> Resources:
    return Resources({"cpu": cpu, "memory": memory, "pods": pods, GPU: gpu})


def node(name: str, cpu: int = 4000, memory: int = 8 * GIB, *, pods: int = 10, gpu: int = 0,
         ready: bool = True) -> Node:
    return Node(name, resources(cpu, memory, pods=pods, gpu=gpu), ready=ready)


def queue(name: str = "q0", *, capability: Resources | None = None, reclaimable: bool = True,
          weight: int = 1) -> Queue:
    return Queue(name, weight=weight, capability=capability, reclaimable=reclaimable)


def podgroup(name: str, queue: str = "q0", *, min_member: int = 1, priority_class: str = "",
             phase: PodGroupPhase = PodGroupPhase.INQUEUE) -> PodGroup:
    return PodGroup(NS, name, f"uid-{name}", queue=queue, min_member=min_member,
                    priority_class_name=priority_class, phase=phase)


def pod(name: str, group: str = "", *, cpu: int = 1000, memory: int = GIB, gpu: int = 0,
        status: TaskStatus = TaskStatus.PENDING, on: str = "", priority: int = 1, preemptable: bool = True,
        scheduler: str = "volcano") -> Pod:
    """A pod requesting cpu/memory/gpu (and `pods: 1`); `on` places it on a node (give a status too)."""
    labels = {} if preemptable else {"volcano.sh/preemptable": "false"}
    return Pod(NS, name, f"uid-{name}", resources(cpu, memory, pods=1, gpu=gpu), status, node_name=on,
               priority=priority, group=group, labels=labels, scheduler_name=scheduler)


def running(name: str, group: str, on: str, *, cpu: int = 1000, memory: int = GIB, gpu: int = 0,
            priority: int = 1, preemptable: bool = True, status: TaskStatus = TaskStatus.RUNNING) -> Pod:
    """A pod of `group` already placed on node `on` (Running unless told)."""
    return pod(name, group, cpu=cpu, memory=memory, gpu=gpu, status=status, on=on, priority=priority,
               preemptable=preemptable)


def snapshot(*, nodes: Iterable[Node] = (), pods: Iterable[Pod] = (), podgroups: Iterable[PodGroup] = (),
             queues: Iterable[Queue] = (), priority_classes: Iterable[PriorityClass] = ()) -> ClusterSnapshot:
    return ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods), podgroups=tuple(podgroups),
                           queues=tuple(queues) or (queue(),), priority_classes=tuple(priority_classes),
                           namespaces=(NS,))


def eviction(pod_name: str, action: str, for_group: str) -> dict[str, str]:
    return {"pod": f"{NS}/{pod_name}", "action": action, "for": f"{NS}/{for_group}", "rule": "test.vpol:1"}


def document(*, binds: Mapping[str, str] | None = None, pipelined: Mapping[str, str] | None = None,
             evictions: Iterable[Mapping[str, str]] = (),
             unschedulable: Mapping[str, list[str]] | None = None,
             nominated: Mapping[str, str] | None = None) -> dict[str, object]:
    """A decision document; pod names without a namespace get `ns/`."""
    def keyed(mapping: Mapping[str, object] | None) -> dict[str, object]:
        return {(k if "/" in k else f"{NS}/{k}"): v for k, v in (mapping or {}).items()}
    return {"binds": keyed(binds), "pipelined": keyed(pipelined), "nominated": keyed(nominated),
            "evictions": list(evictions),
            "podgroups": {}, "unschedulable": keyed(unschedulable), "annotations": {}, "stats": {}}
