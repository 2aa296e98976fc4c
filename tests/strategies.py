"""Hypothesis strategies for small, random but plausible clusters, built directly as `ClusterSnapshot`s.

`clusters()` draws 1-6 nodes (cpu, memory, pods, sometimes GPUs; some tainted, cordoned or not Ready),
1-4 queues (weights, some capabilities and deserved, sometimes a parent, sometimes not reclaimable),
PriorityClasses, 1-6 podgroups (minMember, priority class, phase Pending/Inqueue/Running, sometimes
minResources) and their pods: Pending, or Running/Bound/Releasing on a node that still has room for
them (the snapshot never starts over capacity). Most pods name the `volcano` scheduler, some say nothing
(so are Volcano's) and some belong to `default-scheduler` (they only take room). Units are the model's: cpu in millicores, memory in
bytes, extended resources in milli-units (1 GPU = 1000), `pods` a count and 1 in every request.

Names are small and regular (`n0`, `q1`, `ns/pg2`, `ns/pg2-t-0`) so a shrunk example reads well.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import (
    ClusterSnapshot,
    Node,
    Pod,
    PodGroup,
    PodGroupPhase,
    PriorityClass,
    Queue,
    Taint,
    TaskStatus,
    Toleration,
)

GPU = "nvidia.com/gpu"
GIB = 1024 ** 3
NAMESPACE = "ns"
ZONES = ("a", "b")
PRIORITY_CLASSES = (PriorityClass("low", 10), PriorityClass("high", 1000))
TAINT = Taint("dedicated", "gpu", "NoSchedule")
TOLERATION = Toleration(key="dedicated", operator="Equal", value="gpu", effect="NoSchedule")


def _resources(cpu: int, memory: int, pods: int = 0, gpu: int = 0) -> Resources:
    return Resources({"cpu": cpu, "memory": memory, "pods": pods, GPU: gpu})


@st.composite
def nodes(draw: st.DrawFn, index: int) -> Node:
    """One node: 1-8 cpus, 1-16 GiB, 2-8 pod slots, GPUs on one node in three; some tainted, cordoned
    or not Ready."""
    gpu = draw(st.sampled_from((0, 0, 1000, 4000)))
    allocatable = _resources(cpu=draw(st.integers(1, 8)) * 1000, memory=draw(st.integers(1, 16)) * GIB,
                             pods=draw(st.integers(2, 8)), gpu=gpu)
    return Node(
        name=f"n{index}",
        allocatable=allocatable,
        capacity=allocatable,
        labels={"zone": draw(st.sampled_from(ZONES)), "kubernetes.io/hostname": f"n{index}"},
        taints=(TAINT,) if gpu and draw(st.booleans()) else (),
        unschedulable=draw(st.integers(0, 9)) == 0,
        ready=draw(st.integers(0, 9)) != 0,
    )


@st.composite
def requests(draw: st.DrawFn) -> Resources:
    """A pod request: sometimes best-effort (only `pods: 1`), else cpu/memory and sometimes a GPU."""
    if draw(st.integers(0, 7)) == 0:
        return Resources({"pods": 1})
    return _resources(cpu=draw(st.integers(0, 8)) * 250, memory=draw(st.integers(0, 8)) * GIB // 2,
                      pods=1, gpu=draw(st.sampled_from((0, 0, 0, 1000))))


@st.composite
def queues(draw: st.DrawFn) -> tuple[Queue, ...]:
    """1-4 queues `q0..`: weights 1-4; some with a capability or deserved; q1.. sometimes under q0."""
    count = draw(st.integers(1, 4))
    out = []
    for i in range(count):
        capability = None
        if draw(st.booleans()):
            capability = _resources(cpu=draw(st.integers(1, 12)) * 1000, memory=draw(st.integers(1, 24)) * GIB,
                                    gpu=draw(st.sampled_from((0, 1000, 2000))))
        deserved = None
        if draw(st.booleans()):
            deserved = _resources(cpu=draw(st.integers(0, 8)) * 1000, memory=draw(st.integers(0, 16)) * GIB)
        out.append(Queue(
            name=f"q{i}",
            weight=draw(st.integers(1, 4)),
            capability=capability,
            deserved=deserved,
            reclaimable=draw(st.integers(0, 4)) != 0,
            parent="q0" if i > 0 and draw(st.integers(0, 3)) == 0 else "",
            creation=float(i),
        ))
    return tuple(out)


@dataclass
class _Room:
    """What is still free on each node while Running pods are drawn, so none starts over capacity."""

    free: dict[str, Resources] = field(default_factory=dict)

    def fitting(self, request: Resources) -> list[str]:
        return [name for name, free in self.free.items() if request.le(free)]

    def take(self, name: str, request: Resources) -> None:
        self.free[name] = self.free[name] - request


@st.composite
def pod_of(draw: st.DrawFn, pg: PodGroup, index: int, room: _Room) -> Pod:
    """A pod of `pg`: Pending, or (when its podgroup has left Pending) placed on a node with room."""
    resreq = draw(requests())
    status, node_name = TaskStatus.PENDING, ""
    if pg.phase is not PodGroupPhase.PENDING and draw(st.integers(0, 2)) > 0:
        candidates = room.fitting(resreq)
        if candidates:
            node_name = draw(st.sampled_from(candidates))
            room.take(node_name, resreq)
            status = draw(st.sampled_from((TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.RUNNING,
                                           TaskStatus.BOUND, TaskStatus.RELEASING)))
    priority = draw(st.sampled_from((1, 1, 10, 1000)))
    labels = {"volcano.sh/preemptable": "false"} if draw(st.integers(0, 5)) == 0 else {}
    return Pod(
        namespace=pg.namespace,
        name=f"{pg.name}-t-{index}",
        uid=f"uid-{pg.name}-{index}",
        resreq=resreq,
        status=status,
        node_name=node_name,
        phase="Pending" if status in (TaskStatus.PENDING, TaskStatus.BOUND) else "Running",
        priority=priority,
        scheduler_name=draw(st.sampled_from(("volcano", "volcano", "volcano", "", "default-scheduler"))),
        group=pg.name,
        labels=labels,
        node_selector={"zone": draw(st.sampled_from(ZONES))} if draw(st.integers(0, 4)) == 0 else {},
        tolerations=(TOLERATION,) if draw(st.booleans()) else (),
        creation=float(index),
    )


@st.composite
def podgroups(draw: st.DrawFn, index: int, queue_names: list[str]) -> PodGroup:
    """A podgroup `ns/pg<i>` in one of the queues: minMember 0-3, a priority class, a phase."""
    min_member = draw(st.integers(0, 3))
    min_resources = None
    if draw(st.integers(0, 3)) == 0:
        min_resources = _resources(cpu=draw(st.integers(0, 4)) * 500, memory=draw(st.integers(0, 4)) * GIB)
    return PodGroup(
        namespace=NAMESPACE,
        name=f"pg{index}",
        uid=f"pg-uid-{index}",
        queue=draw(st.sampled_from(queue_names)),
        min_member=min_member,
        min_resources=min_resources,
        priority_class_name=draw(st.sampled_from(("", "low", "high"))),
        phase=draw(st.sampled_from((PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING))),
        creation=float(index),
    )


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """A whole snapshot: nodes, queues, priority classes, podgroups with 1-4 pods each."""
    node_list = tuple(draw(nodes(i)) for i in range(draw(st.integers(1, 6))))
    queue_list = draw(queues())
    room = _Room({n.name: n.allocatable for n in node_list})
    groups, pods = [], []
    for i in range(draw(st.integers(1, 6))):
        pg = draw(podgroups(i, [q.name for q in queue_list]))
        groups.append(pg)
        pods += [draw(pod_of(pg, j, room)) for j in range(draw(st.integers(1, 4)))]
    priority_classes: tuple[PriorityClass, ...] = PRIORITY_CLASSES
    if draw(st.integers(0, 4)) == 0:
        priority_classes += (PriorityClass("normal", 100, global_default=True),)
    return ClusterSnapshot(nodes=node_list, pods=tuple(pods), podgroups=tuple(groups), queues=queue_list,
                           priority_classes=priority_classes, namespaces=(NAMESPACE,))
