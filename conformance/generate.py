"""Seeded clusters and confs for each conformance family, as the Kubernetes objects a dump holds.

Both engines read the very same objects (a `kind: List`), so nothing in between can hide a difference.
Every case is a pure function of (family, seed, index): `case(family, seed, i)` rebuilds it exactly.

Ties. Volcano picks at random among equally scored nodes (util.SelectBestNode) and among equal queues
in its heaps; vpolicy takes snapshot order. The generators keep ties rare — every node of a cluster has
its own cpu and memory size, so least-requested, balanced and binpack scores differ — and the comparison
(`conformance.compare`) handles the rest: nodes identical at the start are interchangeable, and a case
whose Volcano outcome changes from run to run accepts any outcome Volcano produced.

Hooks. `POD_DECORATORS` holds functions that may add to a pending pod of the `allocate` family (pod
affinity and anti-affinity, topology spread, host ports: issue 22); `CLUSTER_DECORATORS` functions that
may add objects to any cluster (HyperNodes: issue 23). Each takes the case's `random.Random`.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance import pod_relations
from vpolicy.load.conf import default_conf_text, helm_default_conf_text

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
NS = "ns"
ROLE = "volcano.sh/task-spec"
GROUP = "scheduling.k8s.io/group-name"
ZONES = ("a", "b")
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
PRIORITY_CLASSES = (("low", 10), ("normal", 100), ("high", 1000))

FAMILIES = ("allocate", "enqueue", "preempt", "reclaim", "capacity", "backfill", "confs", "tdm", "task-topology",
            "usage", "resourcequota", "sla", "rescheduling", "cdp", "nodegroup", "pdb",
            "numaaware", "volumes", "imagelocality", "extender")


@dataclass
class Case:
    """One generated input: the cluster's objects and the conf text both engines run."""

    family: str
    seed: int
    index: int
    objects: list[Obj]
    conf: str

    @property
    def name(self) -> str:
        return f"{self.family}-{self.seed}-{self.index}"

    def cluster_json(self) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": self.objects})


PodDecorator = Callable[[random.Random, Obj, "Builder"], None]
ClusterDecorator = Callable[[random.Random, "Builder"], None]
POD_DECORATORS: list[PodDecorator] = [pod_relations.decorate]
CLUSTER_DECORATORS: list[ClusterDecorator] = []


@dataclass
class Builder:
    """Accumulates one cluster's objects; names are short and regular so a shrunk case reads well."""

    rng: random.Random
    nodes: list[Obj] = field(default_factory=list)
    queues: list[Obj] = field(default_factory=list)
    podgroups: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    extra: list[Obj] = field(default_factory=list)
    free: dict[str, list[int]] = field(default_factory=dict)  # node -> [cpu m, memory Mi, gpu, pods]
    clock: int = 0

    def objects(self) -> list[Obj]:
        classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n},
                    "value": v} for n, v in PRIORITY_CLASSES]
        return [*classes, *self.queues, *self.nodes, *self.podgroups, *self.pods, *self.extra]

    def tick(self) -> str:
        self.clock += 1
        return f"2026-01-01T00:{self.clock // 60:02d}:{self.clock % 60:02d}Z"

    def node(self, cpu: int, mem_mi: int, *, gpu: int = 0, pods: int = 16, zone: str | None = None,
             tainted: bool = False, unschedulable: bool = False, ready: bool = True,
             labels: dict[str, str] | None = None) -> str:
        """A node of `cpu` millicores; callers give each node its own size (see the module's note on ties)."""
        name = f"n{len(self.nodes)}"
        alloc = {"cpu": f"{cpu}m", "memory": f"{mem_mi}Mi", "pods": str(pods)}
        if gpu:
            alloc[GPU] = str(gpu)
        obj: Obj = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                          "zone": zone or self.rng.choice(ZONES), **(labels or {})}},
                    "spec": {}, "status": {"allocatable": alloc, "capacity": dict(alloc),
                                           "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
        if tainted:
            obj["spec"]["taints"] = [dict(TAINT)]
        if unschedulable:
            obj["spec"]["unschedulable"] = True
        self.nodes.append(obj)
        self.free[name] = [cpu, mem_mi, gpu, pods]
        return name

    def queue(self, name: str, *, weight: int = 1, capability: dict[str, str] | None = None,
              deserved: dict[str, str] | None = None, guarantee: dict[str, str] | None = None,
              reclaimable: bool | None = None, state: str = "Open", parent: str = "",
              priority: int = 0) -> str:
        spec: Obj = {"weight": weight}
        if capability:
            spec["capability"] = capability
        if deserved:
            spec["deserved"] = deserved
        if guarantee:
            spec["guarantee"] = {"resource": guarantee}
        if reclaimable is not None:
            spec["reclaimable"] = reclaimable
        if parent:
            spec["parent"] = parent
        if priority:
            spec["priority"] = priority
        self.queues.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                            "metadata": {"name": name, "creationTimestamp": self.tick()},
                            "spec": spec, "status": {"state": state}})
        return name

    def podgroup(self, queue: str, min_member: int, *, phase: str = "Pending", priority_class: str = "",
                 min_resources: dict[str, str] | None = None, min_task_member: dict[str, int] | None = None) -> str:
        name = f"pg{len(self.podgroups)}"
        spec: Obj = {"minMember": min_member, "queue": queue}
        if priority_class:
            spec["priorityClassName"] = priority_class
        if min_resources:
            spec["minResources"] = min_resources
        if min_task_member:
            spec["minTaskMember"] = min_task_member
        self.podgroups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                            "creationTimestamp": self.tick()},
                               "spec": spec, "status": {"phase": phase}})
        return name

    def pod(self, group: str, cpu: int, mem_mi: int, *, gpu: int = 0, priority: int = 0, node: str = "",
            phase: str = "Pending", releasing: bool = False, role: str = "", role_as_label: bool = False,
            node_selector: dict[str, str] | None = None, tolerate: bool = False,
            affinity: Obj | None = None, labels: dict[str, str] | None = None,
            priority_class: str = "") -> Obj:
        """A pod of `group`; with `node`, placed there (Running, or Bound when phase is Pending) and its
        room taken from the node."""
        index = sum(1 for p in self.pods if p["metadata"]["annotations"][GROUP] == group)
        name = f"{group}-{role or 't'}-{index}"
        meta: Obj = {"name": name, "namespace": NS, "uid": f"uid-{name}", "creationTimestamp": self.tick(),
                     "annotations": {GROUP: group}, "labels": dict(labels or {})}
        if role:
            (meta["labels"] if role_as_label else meta["annotations"])[ROLE] = role
        if releasing:
            meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
        requests: dict[str, str] = {}
        if cpu:
            requests["cpu"] = f"{cpu}m"
        if mem_mi:
            requests["memory"] = f"{mem_mi}Mi"
        if gpu:
            requests[GPU] = str(gpu)
        container: Obj = {"name": "main", "image": "busybox"}
        if requests:
            container["resources"] = {"requests": requests, "limits": dict(requests)} if gpu else \
                {"requests": requests}
        spec: Obj = {"schedulerName": "volcano", "priority": priority, "containers": [container]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        if node:
            spec["nodeName"] = node
            free = self.free[node]
            free[0] -= cpu
            free[1] -= mem_mi
            free[2] -= gpu
            free[3] -= 1
        if node_selector:
            spec["nodeSelector"] = node_selector
        if tolerate:
            spec["tolerations"] = [dict(TOLERATION)]
        if affinity:
            spec["affinity"] = affinity
        obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}
        self.pods.append(obj)
        return obj

    def fits(self, node: str, cpu: int, mem_mi: int, gpu: int = 0) -> bool:
        free = self.free[node]
        return free[0] >= cpu and free[1] >= mem_mi and free[2] >= gpu and free[3] >= 1


def distinct_sizes(rng: random.Random, count: int, *, cpu_range: tuple[int, int] = (2, 8),
                   mem_range: tuple[int, int] = (2, 16)) -> list[tuple[int, int]]:
    """`count` (cpu m, memory Mi) sizes, none equal in either dimension, in odd steps (fewer score ties)."""
    cpus = rng.sample(range(cpu_range[0] * 4, cpu_range[1] * 4 + 1), count)
    mems = rng.sample(range(mem_range[0] * 4, mem_range[1] * 4 + 1), count)
    return [(c * 250 + 10 * i, m * 256 + 16 * i) for i, (c, m) in enumerate(zip(cpus, mems))]


# ---- confs -------------------------------------------------------------------------------------------

# Volcano's built-in conf and its Helm chart's: the texts vpolicy itself falls back to.
DEFAULT_CONF = default_conf_text()
HELM_CONF = helm_default_conf_text()


def conf_text(actions: str, tiers: list[list[str | tuple[str, dict[str, Any]]]]) -> str:
    lines = [f'actions: "{actions}"', "tiers:"]
    for tier in tiers:
        lines.append("- plugins:")
        for plugin in tier:
            name, options = (plugin, {}) if isinstance(plugin, str) else plugin
            lines.append(f"  - name: {name}")
            for key, value in options.items():
                if key == "arguments":
                    lines.append("    arguments:")
                    lines += [f"      {k}: {json.dumps(v)}" for k, v in value.items()]
                else:
                    lines.append(f"    {key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def _standard_tiers(share: str = "proportion") -> list[list[str | tuple[str, dict[str, Any]]]]:
    return [["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", share, "nodeorder"]]


# ---- families ----------------------------------------------------------------------------------------

def _allocate(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        gpu = rng.choice((0, 0, 0, 2))
        b.node(cpu, mem, gpu=gpu, tainted=bool(gpu) and rng.random() < 0.5, pods=rng.randint(3, 10),
               unschedulable=rng.random() < 0.05)
    queues = [b.queue(f"q{i}", weight=rng.randint(1, 4)) for i in range(rng.randint(1, 2))]
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 4)
        roles = rng.random() < 0.4
        min_member = rng.randint(1, count)
        role_names = [("ps" if i == 0 else "worker") if roles else "" for i in range(count)]
        mtm = None
        if roles and rng.random() < 0.4:
            mtm = {"worker": rng.randint(0, max(0, role_names.count("worker")))}
        pg = b.podgroup(rng.choice(queues), min_member, phase=rng.choice(("Pending", "Inqueue", "Inqueue")),
                        priority_class=rng.choice(("", "low", "high")), min_task_member=mtm)
        as_label = rng.random() < 0.5
        for i in range(count):
            best_effort = rng.random() < 0.1
            cpu = 0 if best_effort else rng.randint(1, 12) * 250
            mem = 0 if best_effort else rng.randint(1, 12) * 256
            gpu = 1 if not best_effort and rng.random() < 0.15 else 0
            selector = {"zone": rng.choice(ZONES)} if rng.random() < 0.2 else None
            affinity = None
            if rng.random() < 0.15:
                affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": [rng.choice(ZONES)]}]}]}}}
            pod = b.pod(pg, cpu, mem, gpu=gpu, role=role_names[i], role_as_label=as_label,
                        node_selector=selector, tolerate=rng.random() < 0.5, affinity=affinity,
                        priority=rng.choice((1, 10, 100)))
            for decorate in POD_DECORATORS:
                decorate(rng, pod, b)
    _running_load(b, rng, queues, releasing=0.25)
    conf = DEFAULT_CONF if rng.random() < 0.6 else HELM_CONF
    return b, conf


def _running_load(b: Builder, rng: random.Random, queues: list[str], *, releasing: float = 0.0,
                  fill: float = 0.5, priority_class: str = "low", preemptable: bool = True) -> None:
    """Running pods of one Running podgroup filling about `fill` of some nodes; some Releasing (so their
    room can pipeline a pending pod)."""
    pg = b.podgroup(rng.choice(queues), 1, phase="Running", priority_class=priority_class)
    for node in b.nodes:
        if rng.random() > 0.6:
            continue
        name = node["metadata"]["name"]
        cpu_total = b.free[name][0]
        cpu = max(250, int(cpu_total * fill * rng.uniform(0.5, 1.0)) // 250 * 250)
        mem = max(256, b.free[name][1] // 4 // 256 * 256)
        if b.fits(name, cpu, mem):
            labels = {} if preemptable else {"volcano.sh/preemptable": "false"}
            b.pod(pg, cpu, mem, node=name, phase="Running", releasing=rng.random() < releasing,
                  priority=10, labels=labels)


def _enqueue(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 3)):
        b.node(cpu, mem)
    queues = []
    for i in range(rng.randint(1, 3)):
        cap = {"cpu": f"{rng.randint(1, 8)}", "memory": f"{rng.randint(1, 16)}Gi"} if rng.random() < 0.5 else None
        state = "Closed" if rng.random() < 0.2 else "Open"
        queues.append(b.queue(f"q{i}", weight=rng.randint(1, 3), capability=cap, state=state))
    for _ in range(rng.randint(1, 5)):
        count = rng.randint(1, 3)
        cpu, mem = rng.randint(1, 8) * 500, rng.randint(1, 8) * 512
        min_member = rng.randint(1, count)
        min_res = None
        if rng.random() < 0.7:
            min_res = {"cpu": f"{cpu * min_member}m", "memory": f"{mem * min_member}Mi"}
        pg = b.podgroup(rng.choice(queues), min_member, phase="Pending", min_resources=min_res,
                        priority_class=rng.choice(("", "low", "high")))
        for _ in range(count):
            b.pod(pg, cpu, mem, priority=rng.choice((1, 10)))
    _running_load(b, rng, [q for q in queues], fill=0.4)
    share = rng.choice(("proportion", "proportion", "capacity"))
    conf = conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill")), _standard_tiers(share))
    return b, conf


def _preempt(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 3)):
        b.node(cpu, mem, pods=8)
    queues = [b.queue("q0", weight=1)]
    if rng.random() < 0.4:
        queues.append(b.queue("q1", weight=rng.randint(1, 3)))
    # low priority running gangs filling the nodes
    for _ in range(rng.randint(1, 3)):
        pg = b.podgroup(rng.choice(queues), rng.randint(1, 2), phase="Running",
                        priority_class=rng.choice(("low", "low", "normal")))
        for node in b.nodes:
            name = node["metadata"]["name"]
            cpu = min(b.free[name][0], rng.randint(2, 8) * 250)
            mem = min(b.free[name][1], rng.randint(2, 8) * 256)
            if cpu > 0 and mem > 0 and b.fits(name, cpu, mem) and rng.random() < 0.8:
                labels = {"volcano.sh/preemptable": "false"} if rng.random() < 0.1 else {}
                b.pod(pg, cpu, mem, node=name, phase="Running", priority=rng.choice((10, 10, 100)), labels=labels)
    # pending preemptors: high priority, sometimes gangs, sometimes a pending task of a running job
    for _ in range(rng.randint(1, 3)):
        count = rng.randint(1, 3)
        pg = b.podgroup(rng.choice(queues), rng.randint(1, count), phase="Inqueue",
                        priority_class=rng.choice(("high", "high", "normal", "low")))
        for _ in range(count):
            b.pod(pg, rng.randint(1, 8) * 250, rng.randint(1, 8) * 256, priority=rng.choice((1000, 1000, 100, 10)))
    if rng.random() < 0.3 and b.podgroups:
        running = [g["metadata"]["name"] for g in b.podgroups if g["status"]["phase"] == "Running"]
        if running:
            b.pod(rng.choice(running), rng.randint(1, 6) * 250, rng.randint(1, 6) * 256, priority=1000)
    tiers = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]
    if rng.random() < 0.3:
        tiers[0][1] = ("gang", {"enablePreemptable": False})
    conf = conf_text(rng.choice(("enqueue, allocate, preempt", "enqueue, allocate, preempt, backfill",
                                 "enqueue, preempt")), tiers)
    return b, conf


def _reclaim(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 3)):
        b.node(cpu, mem, pods=10)
    share = rng.choice(("proportion", "proportion", "capacity"))
    names = ["q0", "q1"] + (["q2"] if rng.random() < 0.4 else [])
    queues = []
    for i, name in enumerate(names):
        deserved = None
        if share == "capacity":
            deserved = {"cpu": f"{rng.randint(1, 6)}", "memory": f"{rng.randint(1, 12)}Gi"}
        guarantee = {"cpu": f"{rng.randint(1, 3)}", "memory": f"{rng.randint(1, 4)}Gi"} if rng.random() < 0.2 else None
        state = "Closed" if i > 0 and rng.random() < 0.25 else "Open"
        queues.append(b.queue(name, weight=rng.randint(1, 4), deserved=deserved, guarantee=guarantee,
                              reclaimable=rng.random() >= 0.2, state=state))
    # q0 holds the whole cluster
    pg = b.podgroup("q0", 1, phase="Running", priority_class=rng.choice(("low", "normal")))
    for node in b.nodes:
        name = node["metadata"]["name"]
        while True:
            cpu, mem = rng.randint(2, 6) * 250, rng.randint(2, 6) * 256
            if not b.fits(name, cpu, mem) or rng.random() < 0.15:
                break
            labels = {"volcano.sh/preemptable": "false"} if rng.random() < 0.1 else {}
            b.pod(pg, cpu, mem, node=name, phase="Running", priority=10, labels=labels)
    for _ in range(rng.randint(1, 3)):
        count = rng.randint(1, 3)
        pg = b.podgroup(rng.choice(queues[1:]), rng.randint(1, count), phase="Inqueue",
                        priority_class=rng.choice(("low", "normal", "high")))
        for _ in range(count):
            b.pod(pg, rng.randint(1, 6) * 250, rng.randint(1, 6) * 256, priority=rng.choice((10, 100)))
    tiers = [["priority", "gang", "conformance"], ["drf", "predicates", share, "nodeorder"]]
    conf = conf_text(rng.choice(("enqueue, allocate, reclaim", "enqueue, reclaim", "enqueue, allocate, reclaim, backfill")),
                     tiers)
    return b, conf


def _capacity(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 4)):
        b.node(cpu, mem)
    hierarchical = rng.random() < 0.5
    queues = []
    if hierarchical:
        b.queue("root", weight=1)
        parents = [b.queue(f"p{i}", weight=1, parent="root",
                           capability={"cpu": f"{rng.randint(2, 12)}", "memory": f"{rng.randint(4, 32)}Gi"})
                   for i in range(rng.randint(1, 2))]
    for i in range(rng.randint(1, 3)):
        deserved = {"cpu": f"{rng.randint(0, 6)}", "memory": f"{rng.randint(0, 12)}Gi"}
        cap = {"cpu": f"{rng.randint(1, 10)}", "memory": f"{rng.randint(2, 24)}Gi"} if rng.random() < 0.6 else None
        queues.append(b.queue(f"q{i}", deserved=deserved, capability=cap,
                              parent=rng.choice(parents) if hierarchical else "",
                              state="Closed" if rng.random() < 0.1 else "Open"))
    _running_load(b, rng, queues, fill=0.5)
    for _ in range(rng.randint(1, 5)):
        count = rng.randint(1, 3)
        cpu, mem = rng.randint(1, 8) * 250, rng.randint(1, 8) * 256
        min_member = rng.randint(1, count)
        pg = b.podgroup(rng.choice(queues), min_member, phase=rng.choice(("Pending", "Inqueue")),
                        min_resources={"cpu": f"{cpu * min_member}m", "memory": f"{mem * min_member}Mi"})
        for _ in range(count):
            b.pod(pg, cpu, mem, priority=rng.choice((1, 10)))
    tiers = [["priority", "gang", "conformance"], ["drf", "predicates", "capacity", "nodeorder"]]
    conf = conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, reclaim", "enqueue, allocate, backfill")),
                     tiers)
    return b, conf


def _backfill(rng: random.Random) -> tuple[Builder, str]:
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 4)):
        b.node(cpu, mem, pods=rng.randint(2, 6), tainted=rng.random() < 0.2)
    queues = [b.queue("q0")]
    _running_load(b, rng, queues, fill=0.6)
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 4)
        pg = b.podgroup("q0", rng.randint(1, count), phase=rng.choice(("Pending", "Inqueue", "Inqueue")))
        for _ in range(count):
            if rng.random() < 0.7:
                b.pod(pg, 0, 0, node_selector={"zone": rng.choice(ZONES)} if rng.random() < 0.3 else None,
                      tolerate=rng.random() < 0.5)
            else:
                b.pod(pg, rng.randint(1, 4) * 250, rng.randint(1, 4) * 256)
    conf = conf_text(rng.choice(("enqueue, allocate, backfill", "enqueue, backfill")), _standard_tiers())
    return b, conf


_PLUGIN_POOL_FIRST = ("priority", "gang", "conformance")
_PLUGIN_POOL_SECOND = ("overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack")
_FLAGS = ("enableJobOrder", "enableJobReady", "enableJobPipelined", "enableTaskOrder", "enablePreemptable",
          "enableReclaimable", "enableQueueOrder", "enablePredicate", "enableNodeOrder")
_ARGUMENTS: dict[str, list[dict[str, Any]]] = {
    "nodeorder": [{"leastrequested.weight": 2}, {"mostrequested.weight": 1, "leastrequested.weight": 0},
                  {"balancedresource.weight": 3}, {"nodeaffinity.weight": 2}],
    "binpack": [{"binpack.weight": 5}, {"binpack.cpu": 3, "binpack.memory": 1}],
    "overcommit": [{"overcommit-factor": 1.5}, {"overcommit-factor": 1.0}],
    "predicates": [{"predicate.CacheEnable": False}],
}


def _confs(rng: random.Random) -> tuple[Builder, str]:
    pick = rng.random()
    family = rng.choice((_allocate, _preempt, _reclaim, _enqueue))
    b, _ = family(rng)
    if pick < 0.1:
        return b, DEFAULT_CONF
    if pick < 0.2:
        return b, HELM_CONF
    first = [p for p in _PLUGIN_POOL_FIRST if rng.random() < 0.8]
    second = [p for p in _PLUGIN_POOL_SECOND if rng.random() < 0.7]
    if "predicates" not in second:
        second.append("predicates")  # without it, Volcano places pods on nodes they cannot run on
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = []
    for tier in (first, second):
        out: list[str | tuple[str, dict[str, Any]]] = []
        for name in tier:
            options: dict[str, Any] = {}
            if rng.random() < 0.3:
                options[rng.choice(_FLAGS)] = rng.random() < 0.5
            if name in _ARGUMENTS and rng.random() < 0.4:
                options["arguments"] = rng.choice(_ARGUMENTS[name])
            out.append((name, options) if options else name)
        if out:
            tiers.append(out)
    actions = rng.choice(("enqueue, allocate, backfill", "enqueue, allocate, preempt", "enqueue, allocate, reclaim",
                          "allocate, backfill", "enqueue, reclaim, allocate, backfill, preempt"))
    return b, conf_text(actions, tiers)


# tdm: the windows are chosen so that both engines agree whatever their clocks read (Volcano reads the
# oracle's wall clock, vpolicy's conformance run the epoch): rz1 is open all day, rz2 closed but for the
# minute 23:58 (a case run in that minute of the oracle's local time may differ), rz3 is not configured.
TDM_WINDOWS = {"tdm.revocable-zone.rz1": "0:00-0:00", "tdm.revocable-zone.rz2": "23:58-23:59"}
REVOCABLE = "volcano.sh/revocable-zone"
PREEMPTABLE = "volcano.sh/preemptable"


def _tdm(rng: random.Random) -> tuple[Builder, str]:
    """Revocable nodes by zone, running preemptable and other pods on them and on ordinary nodes (some
    jobs with disruption budgets), pending jobs preemptable or not, some pods allowed on revocable nodes."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        zone = rng.choice(("", "", "rz1", "rz2", "rz3"))
        b.node(cpu, mem, pods=rng.randint(4, 10), labels={REVOCABLE: zone} if zone else None)
    queue = b.queue("q0")
    for _ in range(rng.randint(1, 2)):
        pg = b.podgroup(queue, 1, phase="Running", priority_class="low")
        budget = rng.random()
        if budget < 0.3:
            b.podgroups[-1]["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": rng.choice(("1", "2", "50%"))}
        elif budget < 0.6:
            b.podgroups[-1]["metadata"]["annotations"] = {
                "volcano.sh/jdb-max-unavailable": rng.choice(("1", "2", "50%", "99%"))}
        for node in b.nodes:
            name = node["metadata"]["name"]
            for _ in range(rng.randint(0, 2)):
                cpu, mem = rng.randint(1, 4) * 250, rng.randint(1, 4) * 256
                if b.fits(name, cpu, mem):
                    b.pod(pg, cpu, mem, node=name, phase="Running", priority=10,
                          labels={PREEMPTABLE: "true" if rng.random() < 0.7 else "false"})
    for _ in range(rng.randint(1, 3)):
        count = rng.randint(1, 3)
        pg = b.podgroup(queue, rng.randint(1, count), phase="Inqueue",
                        priority_class=rng.choice(("high", "normal", "low")))
        if rng.random() < 0.4:
            b.podgroups[-1]["metadata"]["annotations"] = {PREEMPTABLE: "true"}
        revocable = rng.random() < 0.5
        for _ in range(count):
            pod = b.pod(pg, rng.randint(1, 8) * 250, rng.randint(1, 8) * 256, priority=rng.choice((1000, 100, 10)))
            if revocable:
                pod["metadata"]["annotations"][REVOCABLE] = "*"
            elif rng.random() < 0.3:
                pod["metadata"]["annotations"][PREEMPTABLE] = rng.choice(("true", "false"))
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"],
        ["predicates", "proportion", "nodeorder", ("tdm", {"arguments": dict(TDM_WINDOWS)})]]
    if rng.random() < 0.4:  # tdm first: its job order and victims decide before priority's
        tiers = [["gang", ("tdm", {"arguments": dict(TDM_WINDOWS)}), "priority"],
                 ["predicates", "proportion", "nodeorder"]]
    # no shuffle: Volcano v1.10.0 panics evicting a pod of a revocable node (Session.Evict ->
    # NodeInfo.RemoveTask: "resource is not sufficient", node_info.go:472); tdm's shuffle victims are
    # scenario files (policies/tests/tdm/shuffle-*)
    actions = rng.choice(("enqueue, allocate, backfill", "enqueue, allocate, preempt",
                          "enqueue, allocate, preempt, backfill"))
    return b, conf_text(actions, tiers)


TOPOLOGY_ROLES = ("ps", "worker", "chief", "evaluator")


def _task_topology(rng: random.Random) -> tuple[Builder, str]:
    """Jobs of roles with task-topology affinity, anti-affinity and task-order annotations (some naming a
    role the job lacks, which turns the job's topology off), some tasks already running."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5), cpu_range=(4, 12), mem_range=(8, 24)):
        b.node(cpu, mem, pods=rng.randint(4, 12))
    queue = b.queue("q0")
    for _ in range(rng.randint(1, 3)):
        roles = rng.sample(TOPOLOGY_ROLES, rng.randint(1, 3))
        counts = {r: rng.randint(1, 3) for r in roles}
        total = sum(counts.values())
        pg = b.podgroup(queue, rng.randint(1, total), phase=rng.choice(("Inqueue", "Inqueue", "Running")),
                        priority_class=rng.choice(("", "normal", "high")))
        notes: dict[str, str] = {}
        named = roles + (["launcher"] if rng.random() < 0.1 else [])  # an unknown role: no topology

        def groups() -> str:
            picked = rng.sample(named, rng.randint(1, len(named)))
            if len(picked) > 1 and rng.random() < 0.5:
                return ",".join(picked) + ";" + rng.choice(named)
            return ",".join(picked)
        if rng.random() < 0.7:
            notes["volcano.sh/task-topology-affinity"] = groups()
        if rng.random() < 0.5:
            notes["volcano.sh/task-topology-anti-affinity"] = groups()
        if rng.random() < 0.4:
            notes["volcano.sh/task-topology-task-order"] = ",".join(rng.sample(named, len(named)))
        if notes:
            b.podgroups[-1]["metadata"]["annotations"] = notes
        for role in roles:
            for _ in range(counts[role]):
                cpu, mem = rng.randint(1, 6) * 250, rng.randint(1, 6) * 512
                node = ""
                if rng.random() < 0.2:
                    fitting = [n["metadata"]["name"] for n in b.nodes if b.fits(n["metadata"]["name"], cpu, mem)]
                    node = rng.choice(fitting) if fitting else ""
                b.pod(pg, cpu, mem, role=role, node=node, phase="Running" if node else "Pending",
                      priority=rng.choice((10, 100)))
    weight = rng.choice((None, 1, 5))
    topology: str | tuple[str, dict[str, Any]] = "task-topology"
    if weight is not None:
        topology = ("task-topology", {"arguments": {"task-topology.weight": weight}})
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder", topology]]
    return b, conf_text(rng.choice(("enqueue, allocate, backfill", "enqueue, allocate")), tiers)


# usage: the oracle reads a node's load from these annotations as vpolicy's loader does
# (conformance/oracle/usage.go). Metrics "measured" in 2099 are fresh for both engines whatever their
# clocks (Volcano: now - time is negative, not over 5 minutes), those of 1969 stale for both (vpolicy's
# conformance run reads the epoch).
USAGE_FRESH, USAGE_STALE = "2099-01-01T00:00:00Z", "1969-12-31T23:00:00Z"


def _usage(rng: random.Random) -> tuple[Builder, str]:
    """Nodes with measured CPU and memory load (fresh, stale or none), running pods started long ago,
    and one pending pod: v1.10.0's usage scores the measured load alone, main's adds an estimate of pods
    placed too recently for the metrics (none here: the pods ran for years, and a second pending pod
    would be such a pod for main only)."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        b.node(cpu, mem, pods=rng.randint(4, 10))
        if rng.random() < 0.85:
            b.nodes[-1]["metadata"]["annotations"] = {
                "usage.volcano.sh/cpu-usage-avg": str(rng.randint(0, 100)),
                "usage.volcano.sh/mem-usage-avg": str(rng.randint(0, 100)),
                "usage.volcano.sh/metrics-time": USAGE_FRESH if rng.random() < 0.85 else USAGE_STALE}
    queue = b.queue("q0")
    running = b.podgroup(queue, 1, phase="Running", priority_class="low")
    for node in b.nodes:
        name = node["metadata"]["name"]
        cpu, mem = rng.randint(1, 4) * 250, rng.randint(1, 4) * 256
        if rng.random() < 0.5 and b.fits(name, cpu, mem):
            pod = b.pod(running, cpu, mem, node=name, phase="Running", priority=10)
            pod["status"]["startTime"] = "1969-12-31T00:00:00Z"  # long ago for both clocks
    pending = b.podgroup(queue, 1, phase="Inqueue", priority_class=rng.choice(("", "normal")))
    b.pod(pending, rng.randint(1, 8) * 250, rng.randint(1, 8) * 256, priority=100)
    arguments: dict[str, Any] = {"usage.weight": rng.choice((1, 5, 10)), "cpu.weight": rng.randint(1, 3),
                                 "memory.weight": rng.randint(1, 3),
                                 "thresholds": {"cpu": rng.randint(30, 100), "mem": rng.randint(30, 100)}}
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"],
        ["predicates", "proportion", ("usage", {"arguments": arguments})]]
    if rng.random() < 0.5:
        tiers[1].insert(2, "nodeorder")
    return b, conf_text(rng.choice(("enqueue, allocate, backfill", "enqueue, allocate")), tiers)


def _resourcequota(rng: random.Random) -> tuple[Builder, str]:
    """Pending jobs with and without minResources against one or two ResourceQuotas of their namespace
    (hard by `cpu`/`memory` or `requests.*` names, some already used). No other plugin votes on
    enqueue: Volcano's resourcequota counts a job it permits as pending even when another plugin then
    rejects it, vpolicy only the jobs enqueue admitted (docs/plugins.md), which this family leaves out."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(1, 3)):
        b.node(cpu, mem)
    queue = b.queue("q0")
    for i in range(rng.randint(1, 2)):
        names = ("cpu", "memory") if rng.random() < 0.7 else ("requests.cpu", "requests.memory")
        hard = {names[0]: f"{rng.randint(1, 12) * 500}m", names[1]: f"{rng.randint(1, 12) * 512}Mi"}
        if rng.random() < 0.3:
            del hard[names[rng.randint(0, 1)]]
        used = {k: f"{rng.randint(0, 4) * 250}m" if "cpu" in k else f"{rng.randint(0, 4) * 256}Mi" for k in hard}
        b.extra.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": f"rq{i}", "namespace": NS},
                        "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})
    for _ in range(rng.randint(1, 5)):
        count = rng.randint(1, 3)
        cpu, mem = rng.randint(1, 8) * 250, rng.randint(1, 8) * 256
        min_member = rng.randint(1, count)
        min_res = {"cpu": f"{cpu * min_member}m", "memory": f"{mem * min_member}Mi"} if rng.random() < 0.8 else None
        pg = b.podgroup(queue, min_member, phase="Pending", min_resources=min_res,
                        priority_class=rng.choice(("", "low", "high")))
        for _ in range(count):
            b.pod(pg, cpu, mem, priority=rng.choice((1, 10)))
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["predicates", "nodeorder", "resourcequota"]]
    return b, conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill", "enqueue")), tiers)


def _sla(rng: random.Random) -> tuple[Builder, str]:
    """An enqueue-family cluster whose podgroups carry SLA waiting times (`volcano.sh/sla-waiting-time`,
    or the plugin's `sla-waiting-time`), sla in the first tier (an overdue job is enqueued and kept
    pipelined whatever the second tier's proportion or capacity says) or the second. Creation times are
    on 1969-12-31 (overdue for both engines' clocks: Volcano reads the wall clock, vpolicy's conformance
    run the epoch) or in 2099 (not yet due for either), a minute apart so deadlines rarely tie."""
    b, _ = _enqueue(rng)
    for q in b.queues:  # open queues only: v1.10 never reads a queue's state, and how main's refusal of a
        q["status"]["state"] = "Open"  # closed queue meets an sla permit is not what this family asks
    minutes = rng.sample(range(0, 600), len(b.podgroups))
    for pg, minute in zip(b.podgroups, minutes):
        day = "1969-12-31" if rng.random() < 0.5 else "2099-01-01"
        pg["metadata"]["creationTimestamp"] = f"{day}T{minute // 60:02d}:{minute % 60:02d}:00Z"
        if rng.random() < 0.6:
            pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": rng.choice(("30m", "1h", "2h", "bad"))}
    sla: str | tuple[str, dict[str, Any]] = "sla"
    if rng.random() < 0.4:
        sla = ("sla", {"arguments": {"sla-waiting-time": rng.choice(("45m", "3h"))}})
    share = rng.choice(("proportion", "capacity"))
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", share, "nodeorder"]]
    tiers[0 if rng.random() < 0.6 else 1].append(sla)
    return b, conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill")), tiers)


def _rescheduling(rng: random.Random) -> tuple[Builder, str]:
    """Nodes with measured load (as the usage family), running pods of distinct priorities, best-effort or
    not, and shuffle with lowNodeUtilization (its thresholds drawn, `metricsPeriod: 10m` most of the time:
    under the default 5m Volcano reads no usage at all; `interval: 0s`, due at once: Volcano counts the
    first interval from the process's start, which for the oracle is this case)."""
    b = Builder(rng)
    loads = rng.sample(range(0, 100), 8)
    for i, (cpu, mem) in enumerate(distinct_sizes(rng, rng.randint(2, 4), cpu_range=(4, 12), mem_range=(8, 24))):
        b.node(cpu, mem, pods=12)
        b.nodes[-1]["metadata"]["annotations"] = {
            "usage.volcano.sh/cpu-usage-avg": str(loads[2 * i]),
            "usage.volcano.sh/mem-usage-avg": str(loads[2 * i + 1]),
            "usage.volcano.sh/metrics-time": USAGE_FRESH}
    queue = b.queue("q0")
    priorities = rng.sample(range(1, 1000), 24)
    for _ in range(rng.randint(1, 2)):
        pg = b.podgroup(queue, 1, phase="Running", priority_class="low")
        for node in b.nodes:
            name = node["metadata"]["name"]
            for _ in range(rng.randint(0, 3)):
                best_effort = rng.random() < 0.15
                cpu, mem = (0, 0) if best_effort else (rng.randint(1, 6) * 250, rng.randint(1, 6) * 512)
                if priorities and b.fits(name, cpu, mem):
                    pod = b.pod(pg, cpu, mem, node=name, phase="Running", priority=priorities.pop())
                    pod["status"]["startTime"] = "1969-12-31T00:00:00Z"
    low, high = rng.randint(10, 40), rng.randint(50, 90)
    arguments: dict[str, Any] = {"interval": "0s", "strategies": [  # 0s: due at once in a fresh process
        {"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": low, "memory": low + rng.randint(0, 10)},
                                                  "targetThresholds": {"cpu": high, "memory": high}}}]}
    # always written: Volcano keeps MetricsPeriod in a package variable that an unset argument leaves as
    # the previous conf set it, and the oracle runs many cases in one process
    arguments["metricsPeriod"] = "10m" if rng.random() < 0.85 else "5m"
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"],
        ["predicates", "proportion", "nodeorder", ("rescheduling", {"arguments": arguments})]]
    return b, conf_text(rng.choice(("enqueue, allocate, shuffle", "shuffle")), tiers)


def _cdp(rng: random.Random) -> tuple[Builder, str]:
    """A preempt-family cluster whose running pods carry `volcano.sh/cooldown-time` (label or annotation,
    some invalid) and a PodScheduled condition from 1969-12-31 (cooled down for both engines' clocks)
    or 2099 (still cooling for both); cdp beside priority and gang in the first tier."""
    b, _ = _preempt(rng)
    for pod in b.pods:
        if pod["status"]["phase"] != "Running":
            continue
        day = "1969-12-31T00:00:00Z" if rng.random() < 0.4 else "2099-01-01T00:00:00Z"
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": day}]
        if rng.random() < 0.9:
            where = "labels" if rng.random() < 0.5 else "annotations"
            pod["metadata"][where]["volcano.sh/cooldown-time"] = rng.choice(("10m", "1h", "30s", "bad"))
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance", "cdp"], ["drf", "predicates", "proportion", "nodeorder"]]
    if rng.random() < 0.3:
        tiers[0][1] = ("gang", {"enablePreemptable": False})
    return b, conf_text(rng.choice(("enqueue, allocate, preempt", "enqueue, preempt")), tiers)


NODEGROUP = "volcano.sh/nodegroup-name"
NODE_GROUPS = ("g1", "g2", "g3")
QUEUE_NAME = "volcano.sh/queue-name"


def _group_affinity(rng: random.Random) -> Obj:
    """A queue's spec.affinity: each of the four lists drawn from the node groups, some empty."""
    def some() -> list[str]:
        return rng.sample(NODE_GROUPS, rng.choice((0, 0, 1, 1, 2)))
    affinity: Obj = {}
    required, preferred = some(), some()
    if required or preferred:
        affinity["nodeGroupAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": required,
                                         "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    anti_required, anti_preferred = some(), rng.sample(NODE_GROUPS, rng.choice((0, 0, 0, 1)))
    if anti_required or anti_preferred:
        affinity["nodeGroupAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti_required,
                                             "preferredDuringSchedulingIgnoredDuringExecution": anti_preferred}
    return affinity


def _nodegroup(rng: random.Random) -> tuple[Builder, str]:
    """Nodes in node groups (label `volcano.sh/nodegroup-name`, a few unlabelled), queues with node-group
    affinity and anti-affinity, required and preferred (some without any: no node for their jobs), pods
    of an allocate-like workload labelled with their queue (`volcano.sh/queue-name`: where v1.10.0 reads
    the queue, main reads the job's; the same queue here). nodegroup comes last in the conf: v1.10.0's
    predicate answers a passing node with a FitError of status Success, which ends Session.PredicateFn
    before the plugins after it (nodegroup.go:242-248 at v1.10.0); main returns nil."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 6)):
        group = rng.choice((*NODE_GROUPS, *NODE_GROUPS, ""))
        b.node(cpu, mem, pods=rng.randint(3, 10), labels={NODEGROUP: group} if group else None)
    queues = []
    for i in range(rng.randint(1, 3)):
        queues.append(b.queue(f"q{i}", weight=rng.randint(1, 3)))
        affinity = _group_affinity(rng) if rng.random() < 0.85 else {}
        if affinity:
            b.queues[-1]["spec"]["affinity"] = affinity
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 3)
        queue = rng.choice(queues)
        pg = b.podgroup(queue, rng.randint(1, count), phase=rng.choice(("Pending", "Inqueue", "Inqueue")),
                        priority_class=rng.choice(("", "low", "high")))
        for _ in range(count):
            selector = {"zone": rng.choice(ZONES)} if rng.random() < 0.15 else None
            b.pod(pg, rng.randint(1, 10) * 250, rng.randint(1, 10) * 256, node_selector=selector,
                  labels={QUEUE_NAME: queue}, priority=rng.choice((1, 10, 100)))
    actions = rng.choice(("enqueue, allocate", "enqueue, allocate, backfill", "enqueue, allocate, preempt"))
    # preempting: the running pods fill their nodes, so a higher-priority job of their queue must evict
    _running_load(b, rng, queues, fill=0.95 if "preempt" in actions else 0.5)
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"]]
    if rng.random() < 0.5:
        tiers[1].remove("nodeorder")  # the group score alone orders the nodes
    tiers[1].append("nodegroup")
    return b, conf_text(actions, tiers)


PDB_APPS = ("a", "b", "c")


def _pdb(rng: random.Random) -> tuple[Builder, str]:
    """A preempt- or reclaim-family cluster whose running pods carry an `app` label (some none: never a
    victim while pdb is on), and PodDisruptionBudgets selecting one app each (disjoint, so no pod counts
    against two budgets: Volcano spends a disruption of every budget selecting a victim, vpolicy of the
    first only, docs/plugins.md), with 0-2 disruptions allowed and sometimes a pod already disrupted;
    pdb beside priority and gang in the first tier."""
    reclaim = rng.random() < 0.35
    b, conf = (_reclaim if reclaim else _preempt)(rng)
    for pod in b.pods:
        if pod["status"]["phase"] == "Running" and rng.random() < 0.85:
            pod["metadata"]["labels"]["app"] = rng.choice(PDB_APPS)
    running = [p["metadata"]["name"] for p in b.pods if p["status"]["phase"] == "Running"]
    for app in PDB_APPS:
        if rng.random() < 0.3:
            continue
        status: Obj = {"disruptionsAllowed": rng.choice((0, 0, 1, 1, 2)), "currentHealthy": 1, "desiredHealthy": 1,
                       "expectedPods": 1}
        if running and rng.random() < 0.3:
            status["disruptedPods"] = {rng.choice(running): "2026-01-01T00:00:00Z"}
        spec: Obj = {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1}
        b.extra.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": f"pdb-{app}", "namespace": NS if rng.random() < 0.9 else "other"},
                        "spec": spec, "status": status})
    conf = conf.replace("  - name: conformance\n", "  - name: conformance\n  - name: pdb\n", 1)
    if rng.random() < 0.2:  # shuffle: pdb's VictimTasks names every labelled running pod no budget protects
        conf = conf.replace(conf.split("\n", 1)[0], 'actions: "shuffle"', 1)
    return b, conf


NUMA_POLICY = "volcano.sh/numa-topology-policy"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


def _cpu_set(cpus: list[int]) -> str:
    """A cpuset string ("0-3,6") of sorted CPU ids."""
    runs: list[list[int]] = []
    for c in cpus:
        if runs and c == runs[-1][-1] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _numaaware(rng: random.Random) -> tuple[Builder, str]:
    """Nodes with a Numatopology (CPU manager static or not, one of the four topology-manager policies, 2 or
    4 NUMA nodes, some CPUs already taken: `numares.cpu.allocatable` is what the node agent reports free),
    some without one; Guaranteed pods of whole CPUs asking one of the policies (or none), and Burstable
    ones, which numa-aware lets through. CPUs only: main's GPU hints (gpuDetail) and podAllocations are
    newer than v1.10.0."""
    b = Builder(rng)
    for i, (_, mem) in enumerate(distinct_sizes(rng, rng.randint(2, 4))):
        cores = rng.choice((4, 8, 8, 16))
        numas = 2 if cores < 16 or rng.random() < 0.5 else 4
        name = b.node(cores * 1000 + 10 * i, mem, pods=rng.randint(4, 12))
        if rng.random() < 0.15:
            continue
        per_numa = cores // numas
        detail = {str(c): {"numa": c // per_numa, "socket": c // per_numa, "core": c // 2} for c in range(cores)}
        free = sorted(rng.sample(range(cores), rng.randint(max(1, cores // 3), cores)))
        topo_spec: Obj = {"policies": {"CPUManagerPolicy": "static" if rng.random() < 0.9 else "none",
                                       "TopologyManagerPolicy": rng.choice(TOPOLOGY_POLICIES)},
                          "numares": {"cpu": {"allocatable": _cpu_set(free), "capacity": cores}},
                          "cpuDetail": detail}
        if rng.random() < 0.3:  # CPUs the kubelet keeps back (kube-reserved / system-reserved)
            topo_spec["resReserved"] = {"cpu": str(rng.randint(1, 2))}
        b.extra.append({"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
                        "metadata": {"name": name}, "spec": topo_spec})
    queue = b.queue("q0")
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 3)
        pg = b.podgroup(queue, rng.randint(1, count), phase="Inqueue", priority_class=rng.choice(("", "low", "high")))
        guaranteed = rng.random() < 0.75
        policy = rng.choice((*TOPOLOGY_POLICIES, "", ""))
        for _ in range(count):
            cpus, mem = rng.randint(1, 6), rng.randint(1, 8) * 256
            pod = b.pod(pg, cpus * 1000 if guaranteed else cpus * 500, mem, priority=rng.choice((1, 10, 100)))
            if guaranteed:
                container = pod["spec"]["containers"][0]
                container["resources"]["limits"] = dict(container["resources"]["requests"])
            if policy:
                pod["metadata"]["annotations"][NUMA_POLICY] = policy
    numa: str | tuple[str, dict[str, Any]] = "numa-aware"
    if rng.random() < 0.5:
        numa = ("numa-aware", {"arguments": {"weight": rng.choice((1, 5, 20))}})
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder", numa]]
    return b, conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill")), tiers)


CSI_DRIVER = "csi.vpolicy.dev"
ZONE_LABEL = "topology.kubernetes.io/zone"


def _volumes(rng: random.Random) -> tuple[Builder, str]:
    """Pods with PersistentVolumeClaims: bound to CSI volumes in a zone (VolumeZone) or in none, or
    waiting for their first consumer under a provisioning StorageClass; CSINodes limiting the driver's
    volumes per node (NodeVolumeLimits), counting the claims of pods already there. No PersistentVolume
    has node affinity and no claim is unbound with Immediate binding: v1.10.0 checks volume binding only
    on the node allocate has chosen (statement.Allocate -> GetPodVolumes, framework/statement.go:228 at
    v1.10.0), main as a predicate (VolumeBinding), so only cases where binding passes everywhere compare."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        name = b.node(cpu, mem, pods=rng.randint(4, 10))
        node = b.nodes[-1]
        node["metadata"]["labels"][ZONE_LABEL] = node["metadata"]["labels"]["zone"]
        if rng.random() < 0.8:
            driver: Obj = {"name": CSI_DRIVER, "nodeID": name, "topologyKeys": [ZONE_LABEL]}
            if rng.random() < 0.85:
                driver["allocatable"] = {"count": rng.randint(1, 4)}
            b.extra.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                            "spec": {"drivers": [driver]}})
    b.extra.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
                    "provisioner": CSI_DRIVER, "volumeBindingMode": "WaitForFirstConsumer"})
    claims = 0

    def claim(pod: Obj, *, zone: str | None, bound: bool) -> None:
        nonlocal claims
        name = f"pvc{claims}"
        claims += 1
        pvc: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "zonal",
                             "resources": {"requests": {"storage": "1Gi"}}},
                    "status": {"phase": "Pending"}}
        if bound:
            pv = f"pv-{name}"
            pvc["spec"]["volumeName"] = pv
            pvc["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
            labels = {ZONE_LABEL: zone} if zone else {}
            b.extra.append({"apiVersion": "v1", "kind": "PersistentVolume",
                            "metadata": {"name": pv, "labels": labels},
                            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                     "storageClassName": "zonal", "persistentVolumeReclaimPolicy": "Delete",
                                     "csi": {"driver": CSI_DRIVER, "volumeHandle": pv},
                                     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": NS, "name": name,
                                                  "uid": f"uid-{name}"}},
                            "status": {"phase": "Bound"}})
        b.extra.append(pvc)
        volumes = pod["spec"].setdefault("volumes", [])
        volumes.append({"name": f"v{len(volumes)}", "persistentVolumeClaim": {"claimName": name}})

    queue = b.queue("q0")
    running = b.podgroup(queue, 1, phase="Running", priority_class="low")
    for node in b.nodes:
        name = node["metadata"]["name"]
        for _ in range(rng.randint(0, 2)):
            cpu, mem = rng.randint(1, 3) * 250, rng.randint(1, 3) * 256
            if b.fits(name, cpu, mem):
                pod = b.pod(running, cpu, mem, node=name, phase="Running", priority=10)
                if rng.random() < 0.7:
                    claim(pod, zone=node["metadata"]["labels"]["zone"], bound=True)
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 3)
        pg = b.podgroup(queue, rng.randint(1, count), phase="Inqueue", priority_class=rng.choice(("", "low", "high")))
        for _ in range(count):
            pod = b.pod(pg, rng.randint(1, 6) * 250, rng.randint(1, 6) * 256, priority=rng.choice((1, 10, 100)))
            for _ in range(rng.choice((0, 1, 1, 2, 3))):
                bound = rng.random() < 0.7
                claim(pod, zone=rng.choice((*ZONES, None)) if bound else None, bound=bound)
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"]]
    if rng.random() < 0.2:
        flag = rng.choice(("predicate.VolumeZoneEnable", "predicate.NodeVolumeLimitsEnable"))
        tiers[1][0] = ("predicates", {"arguments": {flag: False}})
    return b, conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill")), tiers)


# images: (name as pods write it, names as a node's status lists it, size in MB); kube-scheduler reads a
# pod's image through its normalised name (docker.io/library/..., :latest), as the node lists it
IMAGES = (("busybox", ("docker.io/library/busybox:latest",), 40),
          ("nginx:1.25", ("docker.io/library/nginx:1.25",), 180),
          ("registry.example/train:v1", ("registry.example/train:v1",), 900),
          ("registry.example/serve:v2", ("registry.example/serve:v2", "registry.example/serve@sha256:ab12"), 450),
          ("registry.example/tiny:v1", ("registry.example/tiny:v1",), 12),
          ("registry.example/huge:v3", ("registry.example/huge:v3",), 2500))


def _imagelocality(rng: random.Random) -> tuple[Builder, str]:
    """Nodes holding some of the images (status.images), pods of one or two containers whose images
    some nodes hold; nodeorder's imagelocality.weight drawn, the resource scores sometimes off so the
    image score decides (kube-scheduler's ImageLocality: bytes present, scaled by the share of nodes
    holding each image, between 23 MB and 1000 MB per container)."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        b.node(cpu, mem, pods=rng.randint(4, 10))
        held = rng.sample(IMAGES, rng.randint(0, 4))
        b.nodes[-1]["status"]["images"] = [{"names": list(names), "sizeBytes": size * 1024 * 1024}
                                           for _, names, size in held]
    queue = b.queue("q0")
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 3)
        pg = b.podgroup(queue, rng.randint(1, count), phase="Inqueue", priority_class=rng.choice(("", "low", "high")))
        images = [rng.choice(IMAGES)[0] for _ in range(rng.choice((1, 1, 2)))]
        for _ in range(count):
            pod = b.pod(pg, rng.randint(1, 6) * 250, rng.randint(1, 6) * 256, priority=rng.choice((1, 10, 100)))
            containers = pod["spec"]["containers"]
            containers[0]["image"] = images[0]
            for i, image in enumerate(images[1:], 1):
                # with or without requests of its own: kube-scheduler's resource scores give a container
                # without them 100m and 200Mi (NonMissingContainerRequests, per container)
                side: Obj = {"name": f"side{i}", "image": image}
                if rng.random() < 0.5:
                    side["resources"] = {"requests": {"cpu": "50m", "memory": "64Mi"}}
                containers.append(side)
    _running_load(b, rng, [queue])
    arguments: dict[str, Any] = {"imagelocality.weight": rng.choice((1, 3, 10))}
    if rng.random() < 0.4:
        arguments.update({"leastrequested.weight": 0, "balancedresource.weight": 0})
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"], ["predicates", "proportion", ("nodeorder", {"arguments": arguments})]]
    return b, conf_text(rng.choice(("enqueue, allocate", "enqueue, allocate, backfill")), tiers)


EXTENDER_URL = "http://extender.conformance.invalid"  # conformance.extender_server.resolve puts its address here


def _extender(rng: random.Random) -> tuple[Builder, str]:
    """An allocate-like cluster (a preempting conf at times) and the extender plugin asking
    `conformance.extender_server`, whose answers depend only on the task and node names: a predicate
    failing some pairs (resolvably or not, or with HTTP 500 in its flaky form), a prioritize scoring
    every node (failing for some tasks in its flaky form, drawn only with `ignorable`), onSessionOpen
    at times; `extender.ignorable` drawn."""
    b = Builder(rng)
    for cpu, mem in distinct_sizes(rng, rng.randint(2, 5)):
        b.node(cpu, mem, pods=rng.randint(3, 10))
    queue = b.queue("q0")
    for _ in range(rng.randint(1, 4)):
        count = rng.randint(1, 3)
        pg = b.podgroup(queue, rng.randint(1, count), phase=rng.choice(("Pending", "Inqueue", "Inqueue")),
                        priority_class=rng.choice(("", "low", "high")))
        for _ in range(count):
            b.pod(pg, rng.randint(1, 10) * 250, rng.randint(1, 10) * 256, priority=rng.choice((1, 10, 100)))
    actions = rng.choice(("enqueue, allocate", "enqueue, allocate, backfill", "enqueue, allocate, preempt"))
    _running_load(b, rng, [queue], fill=0.95 if "preempt" in actions else 0.5)
    ignorable = rng.random() < 0.5
    arguments: dict[str, Any] = {"extender.urlPrefix": EXTENDER_URL, "extender.httpTimeout": "2s"}
    predicate = rng.choice(("predicate", "predicateFlaky", ""))
    if predicate and "preempt" in actions:
        predicate = "predicateUnresolvable"  # see conformance.extender_server
    prioritize = rng.choice(("prioritize", "prioritizeFlaky" if ignorable else "prioritize", ""))
    if predicate:
        arguments["extender.predicateVerb"] = predicate
    if prioritize:
        arguments["extender.prioritizeVerb"] = prioritize
    if rng.random() < 0.3:
        arguments["extender.onSessionOpenVerb"] = "onSessionOpen"
    for verb in ("jobEnqueueable", "queueOverused", "jobReady"):
        if rng.random() < 0.25:
            arguments[f"extender.{verb}Verb"] = verb
    if ignorable:
        arguments["extender.ignorable"] = True
    tiers: list[list[str | tuple[str, dict[str, Any]]]] = [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", ("extender", {"arguments": arguments})]]
    return b, conf_text(actions, tiers)


_FAMILY_BUILDERS: dict[str, Callable[[random.Random], tuple[Builder, str]]] = {
    "allocate": _allocate, "enqueue": _enqueue, "preempt": _preempt, "reclaim": _reclaim,
    "capacity": _capacity, "backfill": _backfill, "confs": _confs, "tdm": _tdm, "task-topology": _task_topology,
    "usage": _usage, "resourcequota": _resourcequota, "sla": _sla, "rescheduling": _rescheduling,
    "cdp": _cdp, "nodegroup": _nodegroup, "pdb": _pdb, "numaaware": _numaaware,
    "volumes": _volumes, "imagelocality": _imagelocality, "extender": _extender,
}


def case(family: str, seed: int, index: int) -> Case:
    """Case `index` of `family` under `seed`: the same three numbers always give the same case."""
    rng = random.Random(f"{family}/{seed}/{index}")
    builder, conf = _FAMILY_BUILDERS[family](rng)
    for decorate in CLUSTER_DECORATORS:
        decorate(rng, builder)
    return Case(family, seed, index, builder.objects(), conf)
