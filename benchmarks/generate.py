"""Seeded benchmark clusters: nodes, queues, priority classes, running and pending gang jobs, built
directly as `vpolicy.model.snapshot` dataclasses (no YAML: parsing a 5,000-node dump would dominate).

What it builds (DESIGN §7): 80% CPU nodes (32 cpu, 128Gi, 110 pods) and 20% 8-GPU nodes (96 cpu, 1Ti,
110 pods, `nvidia.com/gpu: 8`, tainted `nvidia.com/gpu=present:NoSchedule` so only GPU pods land there);
every node runs one kube-proxy pod of no PodGroup and is partly filled by Running pods of Running
PodGroups; 8 leaf queues with weights under two parents (`research`, `production`) and `root`, two of
them with a capability and one with a guarantee; four PriorityClasses; pending gang jobs of 1-64 pods
(minMember = replicas for most, about half of it for one job in five), GPU jobs asking 1, 2, 4 or 8
GPUs per pod. Pending jobs are Pending (enqueue decides) or already Inqueue, with Volcano's
minResources (minMember pods' requests, without `pods`).

Workloads differ in how the cluster is filled and what is pending:
- `steady`: nodes 15-55% used; pending GPU demand about 70% of the free GPUs; CPU demand about 80%
  of the free CPU — room for most.
- `fragmentation`: 30% of the GPU nodes empty, the rest holding 1-7 GPUs in 1- and 2-GPU pods; pending
  whole-node gangs (8 GPUs per pod) for about 90% of the empty nodes' GPUs, and small 1/2/4-GPU jobs
  for about 90% of the fragments — spreading small pods over empty nodes strands the gangs.
- `preemption`: GPU nodes full, each node of one GPU team (queue): a normal-priority training pod
  or two of 4 or 8 GPUs, the rest filled by the team's low-priority 1- and 2-GPU pods (most running
  GPU jobs elastic, minMember 1); CPU nodes 50-80% used; high-priority GPU gangs of 4- or 8-GPU pods,
  already Inqueue, pending in the same queues for about 30% of the cluster's GPUs.
- `reclaim`: two queues have borrowed the cluster while others were idle: `research-rl` and
  `research-vision` own every GPU node (full, as in `preemption`), `analytics` and `prod-batch` fill
  the CPU nodes to 60-90%, in elastic jobs (minMember 1) seven times in ten, so both hold far more than
  their weight deserves. The queues that lent it, `prod-training` and `research-nlp`, now ask for
  GPUs (normal or high gangs of 4- or 8-GPU pods, already Inqueue, about 30% of the cluster's GPUs), and
  they and `prod-inference` for CPU: allocate places what free room allows and reclaim takes back
  the rest from the borrowers.

The same (size, workload, seed) always gives the same snapshot; the sizes S, M and L differ only in
counts (10 pending pods per node). This module only builds data; `benchmarks.run` times sessions.
"""
from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources

GPU = "nvidia.com/gpu"
MI = 1024**2
GI = 1024**3
# Creation timestamps count from 2024-05-01T08:00:00Z; pending jobs arrive about 20 s apart.
BASE_TIME = 1_714_550_400.0
GPU_NODE_SHARE = 0.2
CPU_NODE = Resources({"cpu": 32_000, "memory": 128 * GI, "pods": 110})
GPU_NODE = Resources({"cpu": 96_000, "memory": 1024 * GI, "pods": 110, GPU: 8_000})
GPU_TAINT = snap.Taint("nvidia.com/gpu", "present", "NoSchedule")
GPU_TOLERATION = snap.Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
GPU_SELECTOR = {"nvidia.com/gpu.present": "true"}
SYSTEM_POD = Resources({"cpu": 100, "memory": 128 * MI, "pods": 1})

PRIORITY_CLASSES = (
    snap.PriorityClass("low", 100),
    snap.PriorityClass("normal", 1_000, global_default=True),
    snap.PriorityClass("high", 10_000),
    snap.PriorityClass("urgent", 100_000),
)
_PRIORITY_VALUE = {pc.name: pc.value for pc in PRIORITY_CLASSES}
_PENDING_PRIORITIES = (("low", 30), ("normal", 50), ("high", 15), ("urgent", 5))

# (cpu millicores, memory bytes, weight): CPU pods average about 1.4 cpu.
_CPU_SHAPES = ((250, 512 * MI, 10), (500, 1 * GI, 20), (1_000, 2 * GI, 25), (1_000, 4 * GI, 10),
               (2_000, 4 * GI, 15), (2_000, 8 * GI, 10), (4_000, 8 * GI, 7), (4_000, 16 * GI, 3))
# (replicas, weight): most gangs are small, a few reach 64 pods; about 10 pods per job on average.
_GANG_SIZES = ((1, 20), (2, 20), (4, 20), (8, 15), (16, 12), (32, 8), (64, 5))
_GPU_GANG_SIZES = ((1, 35), (2, 25), (4, 20), (8, 15), (16, 5))
_GPUS_PER_POD = ((1, 30), (2, 20), (4, 25), (8, 25))

# Leaf queues (name, parent, weight, runs GPU jobs); `research` and `production` are parents only.
_PARENT_QUEUES = (("research", 4), ("production", 6))
_LEAF_QUEUES = (
    ("research-nlp", "research", 2, True),
    ("research-vision", "research", 2, True),
    ("research-rl", "research", 1, True),
    ("prod-training", "production", 4, True),
    ("prod-inference", "production", 3, False),
    ("prod-batch", "production", 2, False),
    ("analytics", "", 2, False),
    ("dev", "", 1, False),
)
GPU_QUEUES = tuple(name for name, _p, _w, gpu in _LEAF_QUEUES if gpu)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Size:
    name: str
    nodes: int
    pending_pods: int


SIZES = {
    "S": Size("S", 100, 1_000),
    "M": Size("M", 1_000, 10_000),
    "L": Size("L", 5_000, 50_000),
}
WORKLOADS = ("steady", "fragmentation", "preemption", "reclaim")
# The reclaim workload: the queues holding more than they deserve, and the ones asking for it back.
GPU_BORROWERS = (("research-rl", 1), ("research-vision", 2))
CPU_BORROWERS = (("analytics", 2), ("prod-batch", 2))
GPU_LENDERS = (("prod-training", 4), ("research-nlp", 2))
CPU_LENDERS = (("prod-training", 4), ("research-nlp", 2), ("prod-inference", 3))


@dataclass(frozen=True, slots=True)
class Generated:
    """A generated snapshot and the figures that describe it (for the runner's JSON and the tests)."""

    size: Size
    workload: str
    seed: int
    snapshot: snap.ClusterSnapshot
    gpu_nodes: int
    pending_pods: int
    pending_jobs: int
    running_pods: int
    running_jobs: int
    free_gpus: int  # whole GPUs not used by running pods
    pending_gpus: int  # whole GPUs asked for by pending pods

    def summary(self) -> dict[str, object]:
        return {
            "nodes": len(self.snapshot.nodes), "gpu_nodes": self.gpu_nodes, "pending_pods": self.pending_pods,
            "pending_jobs": self.pending_jobs, "running_pods": self.running_pods,
            "running_jobs": self.running_jobs, "free_gpus": self.free_gpus, "pending_gpus": self.pending_gpus,
        }


def generate(size: Size, workload: str, *, seed: int = 1) -> Generated:
    """Build the snapshot of `workload` at `size`; the same arguments always give the same snapshot."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; expected one of {', '.join(WORKLOADS)}")
    return _Builder(size, workload, seed).build()


def gpus(resources: Resources) -> int:
    """Whole GPUs in a resource vector (GPUs are stored in milli-units)."""
    return resources.get(GPU, 0) // 1000


@dataclass(slots=True)
class _Job:
    """A gang job under construction: one pod shape, a replica target, the pods placed so far."""

    name: str
    queue: str
    priority_class: str
    request: Resources
    replicas: int
    gpu: bool
    pods: list[snap.Pod] = field(default_factory=list)


class _Builder:
    def __init__(self, size: Size, workload: str, seed: int):
        self.size = size
        self.workload = workload
        self.seed = seed
        # A str seed is hashed with sha512 by `random`, so it does not depend on PYTHONHASHSEED.
        self.rng = random.Random(f"{seed}:{size.name}:{size.nodes}:{size.pending_pods}:{workload}")
        self.shapes: dict[tuple[int, int, int], Resources] = {}
        self.pods: list[snap.Pod] = []
        self.podgroups: list[snap.PodGroup] = []
        self.job_serial = 0
        self.running_jobs = 0
        self.pending_pods = 0
        self.pending_jobs = 0

    # the whole cluster ---------------------------------------------------------------------------
    def build(self) -> Generated:
        gpu_count = round(self.size.nodes * GPU_NODE_SHARE)
        cpu_nodes = [self._node(f"cpu-{i:05d}", CPU_NODE, i, gpu=False) for i in range(self.size.nodes - gpu_count)]
        gpu_nodes = [self._node(f"gpu-{i:05d}", GPU_NODE, i, gpu=True) for i in range(gpu_count)]
        queues = self._queues(cpu_nodes, gpu_nodes)
        for node in (*cpu_nodes, *gpu_nodes):
            self._system_pod(node)
        gpu_used = self._fill_running(cpu_nodes, gpu_nodes)
        free_gpus = 8 * gpu_count - sum(gpu_used)
        pending_gpus = self._pending(gpu_used, free_gpus)
        nodes = (*cpu_nodes, *gpu_nodes)
        namespaces = tuple(sorted({"kube-system", *(name for name, *_ in _LEAF_QUEUES)}))
        snapshot = snap.ClusterSnapshot(nodes=nodes, pods=tuple(self.pods), podgroups=tuple(self.podgroups),
                                        queues=queues, priority_classes=PRIORITY_CLASSES, namespaces=namespaces)
        running = sum(1 for p in self.pods if p.status is snap.TaskStatus.RUNNING and p.group)
        return Generated(self.size, self.workload, self.seed, snapshot, gpu_count, self.pending_pods,
                         self.pending_jobs, running, self.running_jobs, free_gpus, pending_gpus)

    def _node(self, name: str, allocatable: Resources, index: int, *, gpu: bool) -> snap.Node:
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{'abc'[index % 3]}",
                  "node.kubernetes.io/instance-type": "gpu-8x" if gpu else "cpu-32"}
        if gpu:
            labels.update(GPU_SELECTOR)
        return snap.Node(name=name, allocatable=allocatable, capacity=allocatable, labels=labels,
                         taints=(GPU_TAINT,) if gpu else (), origin=f"node/{name}")

    def _queues(self, cpu_nodes: Sequence[snap.Node], gpu_nodes: Sequence[snap.Node]) -> tuple[snap.Queue, ...]:
        cluster_cpu = sum(n.allocatable["cpu"] for n in (*cpu_nodes, *gpu_nodes))
        cluster_mem = sum(n.allocatable["memory"] for n in (*cpu_nodes, *gpu_nodes))
        cluster_gpu = sum(n.allocatable[GPU] for n in gpu_nodes)
        out = [snap.Queue(name=snap.ROOT_QUEUE, weight=1, reclaimable=False, origin="queue/root")]
        t = BASE_TIME - 86_400.0
        for name, weight in _PARENT_QUEUES:
            capability = Resources({GPU: cluster_gpu * 6 // 10}) if name == "research" else None
            out.append(snap.Queue(name=name, weight=weight, parent=snap.ROOT_QUEUE, capability=capability,
                                  creation=t, origin=f"queue/{name}"))
            t += 60.0
        for name, parent, weight, _gpu in _LEAF_QUEUES:
            capability = guarantee = None
            if name == "research-rl":  # a small team: at most a tenth of the GPUs
                capability = Resources({GPU: max(1000, cluster_gpu // 10 // 1000 * 1000)})
            if name == "dev":  # at most 5% of the CPU and memory
                capability = Resources({"cpu": cluster_cpu // 20, "memory": cluster_mem // 20})
            if name == "prod-inference":  # 5% of the CPU and memory kept for serving
                guarantee = Resources({"cpu": cluster_cpu // 20, "memory": cluster_mem // 20})
            out.append(snap.Queue(name=name, weight=weight, parent=parent or snap.ROOT_QUEUE,
                                  capability=capability, guarantee=guarantee or Resources(), creation=t,
                                  origin=f"queue/{name}"))
            t += 60.0
        out.append(snap.Queue(name=snap.DEFAULT_QUEUE, weight=1, reclaimable=True, origin="queue/default"))
        return tuple(out)

    # running pods ----------------------------------------------------------------------------------
    def _system_pod(self, node: snap.Node) -> None:
        name = f"kube-proxy-{node.name}"
        self.pods.append(snap.Pod(namespace="kube-system", name=name, uid=self._uid(), resreq=SYSTEM_POD,
                                  status=snap.TaskStatus.RUNNING, node_name=node.name, phase="Running",
                                  priority=2_000_001_000, priority_class_name="system-node-critical",
                                  scheduler_name="default-scheduler",
                                  creation=BASE_TIME - 86_400.0, origin=f"pod/kube-system/{name}"))

    def _fill_running(self, cpu_nodes: Sequence[snap.Node], gpu_nodes: Sequence[snap.Node]) -> list[int]:
        """Fill nodes with Running pods of Running PodGroups; returns the GPUs used on each GPU node."""
        rng, workload = self.rng, self.workload
        low, high = {"preemption": (0.5, 0.8), "reclaim": (0.6, 0.9)}.get(workload, (0.15, 0.55))

        def cpu_target(node: snap.Node) -> Resources:
            f = rng.uniform(low, high)
            return Resources({"cpu": int(CPU_NODE["cpu"] * f), "memory": int(CPU_NODE["memory"] * f),
                              "pods": CPU_NODE["pods"]})

        def cpu_job() -> _Job:
            queue = _weighted(rng, CPU_BORROWERS) if workload == "reclaim" else _pick_queue(rng, gpu=False)
            return self._new_job(queue, "normal", self._cpu_request(), rng.randint(1, 16), gpu=False)

        self._fill(cpu_nodes, cpu_target, cpu_job)
        if workload == "steady":
            used = [rng.choice((0, 0, 1, 2, 3, 4, 5, 6)) for _ in gpu_nodes]
            sizes: tuple[tuple[int, int], ...] = ((1, 40), (2, 40), (4, 20))
            priority = "normal"
        elif workload == "fragmentation":
            used = [0 if rng.random() < 0.3 else _weighted(rng, ((1, 10), (2, 10), (3, 20), (4, 10), (5, 20),
                                                                  (6, 10), (7, 20))) for _ in gpu_nodes]
            sizes, priority = ((1, 60), (2, 40)), "normal"
        else:
            totals = {n.name: 8 if rng.random() < 0.9 else rng.choice((6, 7)) for n in gpu_nodes}
            self._fill_team_nodes(gpu_nodes, totals, GPU_BORROWERS if workload == "reclaim" else None)
            return self._gpus_used(gpu_nodes)

        targets = iter(used)

        def gpu_target(node: snap.Node) -> Resources:
            return Resources({**GPU_NODE.to_dict(), GPU: next(targets) * 1000})

        def gpu_job() -> _Job:
            queue = _pick_queue(rng, gpu=True)
            return self._new_job(queue, priority, self._gpu_request(_weighted(rng, sizes)), rng.randint(1, 8),
                                 gpu=True)

        self._fill(gpu_nodes, gpu_target, gpu_job)
        return self._gpus_used(gpu_nodes)

    def _fill_team_nodes(self, gpu_nodes: Sequence[snap.Node], totals: dict[str, int],
                         owners: Sequence[tuple[str, int]] | None = None) -> None:
        """The preemption workload's GPU nodes: each belongs to one GPU team (a queue, by weight), as
        with per-team node pools; normal-priority training pods of 4 or 8 GPUs come first (4 GPUs' worth
        on 80% of the nodes, 8 on 20%), then the team's low-priority 1- and 2-GPU experiments fill
        the node to `totals` GPUs. A preemptor that needs 4 GPUs can then take one training pod, or the
        several small pods that Volcano's lowest-priority-first victim order evicts. `owners`: the
        (queue, weight) teams to choose from (default: every GPU team)."""
        rng = self.rng
        team = {n.name: _weighted(rng, owners) if owners else _pick_queue(rng, gpu=True) for n in gpu_nodes}
        training = {n.name: _weighted(rng, ((4, 80), (8, 20))) for n in gpu_nodes}

        def up_to(limit: dict[str, int]) -> Callable[[snap.Node], Resources]:
            return lambda node: Resources({**GPU_NODE.to_dict(), GPU: limit[node.name] * 1000})

        def jobs_of(queue: str, priority: str, sizes: tuple[tuple[int, int], ...]) -> Callable[[], _Job]:
            return lambda: self._new_job(queue, priority, self._gpu_request(_weighted(rng, sizes)),
                                         rng.randint(1, 8), gpu=True)

        teams = [(queue, [n for n in gpu_nodes if team[n.name] == queue])
                 for queue in ([q for q, _w in owners] if owners else GPU_QUEUES)]
        for queue, nodes in teams:
            self._fill(nodes, up_to(training), jobs_of(queue, "normal", ((4, 60), (8, 40))))
        used = self._used_by_node()
        for queue, nodes in teams:
            self._fill(nodes, up_to(totals), jobs_of(queue, "low", ((1, 60), (2, 40))), used=used)

    def _gpus_used(self, gpu_nodes: Sequence[snap.Node]) -> list[int]:
        filled = self._used_by_node()
        return [gpus(filled.get(n.name, Resources())) for n in gpu_nodes]

    def _used_by_node(self) -> dict[str, Resources]:
        used: dict[str, Resources] = {}
        for pod in self.pods:
            if pod.node_name:
                used[pod.node_name] = used.get(pod.node_name, Resources()) + pod.resreq
        return used

    def _fill(self, nodes: Sequence[snap.Node], target: Callable[[snap.Node], Resources],
              new_job: Callable[[], _Job], *, used: dict[str, Resources] | None = None) -> None:
        """Place pods of running jobs on each node up to its target; a job spans nodes until it is full.
        `used`: what the nodes already hold (else only the system pod).

        A pod never makes a node exceed its target or its allocatable (on every resource). When the
        current job's pod no longer fits, the job usually resumes on the next node and other jobs fill
        what is left here; otherwise it ends with the pods it has (its replica count).
        """
        job: _Job | None = None
        for node in nodes:
            limit = target(node)
            taken = used[node.name] if used is not None else Resources(SYSTEM_POD)
            carried: _Job | None = None
            misses = 0
            while misses < 6:
                job = job or new_job()
                after = taken + job.request
                if after.le(limit) and after.le(node.allocatable):
                    taken = after
                    job.pods.append(self._running_pod(job, node.name))
                    if len(job.pods) == job.replicas:
                        self._close_running(job)
                        job = None
                    continue
                misses += 1
                if job.pods and carried is None and self.rng.random() < 0.7:
                    carried, job = job, None
                    continue
                if job.pods:
                    self._close_running(job)
                job = None
            if carried is not None:
                if job is not None and job.pods:
                    self._close_running(job)
                job = carried
        if job is not None and job.pods:
            self._close_running(job)

    def _running_pod(self, job: _Job, node_name: str) -> snap.Pod:
        name = f"{job.name}-worker-{len(job.pods)}"
        return self._pod(job, name, status=snap.TaskStatus.RUNNING, node_name=node_name,
                         creation=BASE_TIME - 3_600.0 + self.job_serial)

    def _close_running(self, job: _Job) -> None:
        replicas = len(job.pods)
        elastic = (self.workload == "preemption" and job.gpu or self.workload == "reclaim") and self.rng.random() < 0.7
        min_member = 1 if elastic else replicas
        self.pods.extend(job.pods)
        self.podgroups.append(self._podgroup(job, min_member, snap.PodGroupPhase.RUNNING,
                                             creation=BASE_TIME - 3_600.0 + self.job_serial))
        self.running_jobs += 1

    # pending jobs ----------------------------------------------------------------------------------
    def _pending(self, gpu_used: list[int], free_gpus: int) -> int:
        """Create the pending jobs (GPU ones first by demand, then CPU ones up to the pod count), in a
        shuffled arrival order; returns the whole GPUs they ask for."""
        rng, budget = self.rng, self.size.pending_pods
        jobs: list[tuple[_Job, bool]] = []  # (job, already Inqueue)
        pods_left = budget

        def add(job: _Job, inqueue: bool) -> bool:
            nonlocal pods_left
            job.replicas = min(job.replicas, pods_left)
            if job.replicas <= 0:
                return False
            pods_left -= job.replicas
            jobs.append((job, inqueue))
            return True

        def gpu_jobs(goal: int, shape: Callable[[], _Job], inqueue: Callable[[], bool]) -> int:
            asked = 0
            while asked < goal and pods_left > 0:
                job = shape()
                if not add(job, inqueue()):
                    break
                asked += gpus(job.request) * job.replicas
            return asked

        def some_inqueue() -> bool:
            return rng.random() < 0.4
        if self.workload == "steady":
            asked = gpu_jobs(int(0.7 * free_gpus), lambda: self._pending_job(gpu=True), some_inqueue)
        elif self.workload == "fragmentation":
            empty = 8 * sum(1 for g in gpu_used if g == 0)
            asked = gpu_jobs(int(0.9 * empty), lambda: self._pending_job(gpu=True, gpus_per_pod=8,
                                                                          sizes=((1, 30), (2, 40), (4, 30))),
                             some_inqueue)
            asked += gpu_jobs(int(0.9 * (free_gpus - empty)),
                              lambda: self._pending_job(gpu=True, gpus_per_pod=_weighted(rng, ((1, 50), (2, 35),
                                                                                             (4, 15))),
                                                        sizes=((1, 60), (2, 30), (4, 10))),
                              some_inqueue)
        elif self.workload == "preemption":
            total_gpus = 8 * len(gpu_used)
            asked = gpu_jobs(int(0.3 * total_gpus),
                             lambda: self._pending_job(gpu=True, gpus_per_pod=_weighted(rng, ((4, 2), (8, 1))),
                                                       priority=rng.choice(("high", "urgent")),
                                                       sizes=((1, 30), (2, 30), (4, 30), (8, 10))),
                             lambda: True)
        else:
            asked = gpu_jobs(int(0.3 * 8 * len(gpu_used)),
                             lambda: self._pending_job(gpu=True, gpus_per_pod=_weighted(rng, ((4, 2), (8, 1))),
                                                       priority=rng.choice(("normal", "high")),
                                                       sizes=((1, 30), (2, 30), (4, 30), (8, 10)),
                                                       queues=GPU_LENDERS),
                             lambda: True)
        while pods_left > 0:
            cpu_priority = _weighted(rng, (("low", 40), ("normal", 60))) if self.workload == "preemption" else None
            add(self._pending_job(gpu=False, priority=cpu_priority,
                                  queues=CPU_LENDERS if self.workload == "reclaim" else None), some_inqueue())
        rng.shuffle(jobs)
        for arrival, (job, inqueue) in enumerate(jobs):
            self._emit_pending(job, inqueue, BASE_TIME + 20.0 * arrival)
        return asked

    def _pending_job(self, *, gpu: bool, gpus_per_pod: int | None = None, priority: str | None = None,
                     sizes: tuple[tuple[int, int], ...] | None = None,
                     queues: Sequence[tuple[str, int]] | None = None) -> _Job:
        rng = self.rng
        replicas = _weighted(rng, sizes or (_GPU_GANG_SIZES if gpu else _GANG_SIZES))
        if sizes is None and replicas > 1 and rng.random() < 0.3:
            replicas = rng.randint(replicas // 2 + 1, replicas)
        if gpu:
            request = self._gpu_request(gpus_per_pod or _weighted(rng, _GPUS_PER_POD))
        else:
            request = self._cpu_request()
        queue = _weighted(rng, queues) if queues else _pick_queue(rng, gpu=gpu)
        return self._new_job(queue, priority or _weighted(rng, _PENDING_PRIORITIES), request, replicas, gpu=gpu)

    def _emit_pending(self, job: _Job, inqueue: bool, creation: float) -> None:
        min_member = job.replicas
        if job.replicas > 1 and self.rng.random() < 0.2:
            min_member = (job.replicas + 1) // 2
        for i in range(job.replicas):
            self.pods.append(self._pod(job, f"{job.name}-worker-{i}", status=snap.TaskStatus.PENDING,
                                       node_name="", creation=creation))
        phase = snap.PodGroupPhase.INQUEUE if inqueue else snap.PodGroupPhase.PENDING
        self.podgroups.append(self._podgroup(job, min_member, phase, creation=creation))
        self.pending_pods += job.replicas
        self.pending_jobs += 1

    # objects ---------------------------------------------------------------------------------------
    def _new_job(self, queue: str, priority_class: str, request: Resources, replicas: int, *, gpu: bool) -> _Job:
        self.job_serial += 1
        kind = "gpu" if gpu else "cpu"
        return _Job(f"{kind}-job-{self.job_serial:06d}", queue, priority_class, request, replicas, gpu)

    def _pod(self, job: _Job, name: str, *, status: snap.TaskStatus, node_name: str, creation: float) -> snap.Pod:
        return snap.Pod(
            namespace=job.queue, name=name, uid=self._uid(), resreq=job.request, status=status,
            node_name=node_name, phase="Running" if status is snap.TaskStatus.RUNNING else "Pending",
            priority=_PRIORITY_VALUE[job.priority_class], priority_class_name=job.priority_class,
            scheduler_name="volcano", group=job.name, role="worker",
            annotations={snap.GROUP_NAME_ANNOTATION: job.name, snap.TASK_SPEC_ANNOTATION: "worker"},
            node_selector=GPU_SELECTOR if job.gpu else {},
            tolerations=(GPU_TOLERATION,) if job.gpu else (), creation=creation,
            origin=f"pod/{job.queue}/{name}")

    def _podgroup(self, job: _Job, min_member: int, phase: snap.PodGroupPhase, *, creation: float) -> snap.PodGroup:
        return snap.PodGroup(namespace=job.queue, name=job.name, uid=self._uid(), queue=job.queue,
                             min_member=min_member, min_resources=job.request.without("pods").times(min_member),
                             priority_class_name=job.priority_class, phase=phase, creation=creation,
                             origin=f"podgroup/{job.queue}/{job.name}")

    def _cpu_request(self) -> Resources:
        cpu, memory, _w = self.rng.choices(_CPU_SHAPES, weights=[s[2] for s in _CPU_SHAPES])[0]
        return self._shape(cpu, memory, 0)

    def _gpu_request(self, count: int) -> Resources:
        return self._shape(10_000 * count, 100 * GI * count, count)

    def _shape(self, cpu: int, memory: int, gpu_count: int) -> Resources:
        """One shared Resources object per pod shape: pods of a shape hold the same vector."""
        key = (cpu, memory, gpu_count)
        if key not in self.shapes:
            self.shapes[key] = Resources({"cpu": cpu, "memory": memory, GPU: 1000 * gpu_count, "pods": 1})
        return self.shapes[key]

    def _uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))


def _pick_queue(rng: random.Random, *, gpu: bool) -> str:
    """A leaf queue, chosen in proportion to its weight (GPU jobs only go to the GPU teams' queues)."""
    leaves = [(name, weight) for name, _p, weight, has_gpu in _LEAF_QUEUES if has_gpu or not gpu]
    return _weighted(rng, leaves)


def _weighted(rng: random.Random, choices: Sequence[tuple[_T, int]]) -> _T:
    return rng.choices([c for c, _w in choices], weights=[w for _c, w in choices])[0]
