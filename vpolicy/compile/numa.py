"""The numa-aware plugin's CPU placement: which CPUs of a node a Guaranteed pod would get, and whether
the node's topology manager policy admits that (Volcano's pkg/scheduler/plugins/numaaware).

For each container with a whole-CPU request, in order, on the CPUs still free on the node less those the
kubelet reserves:
1. hints (cpumanager.GetTopologyHints): every set of NUMA nodes, smallest first, whose free CPUs cover
   the request; preferred are those of the fewest NUMA nodes whose CPUs (free or not) could;
2. the node's policy merges them (policy.mergeFilteredHints): a preferred hint before a non-preferred one,
   then the narrowest (fewest nodes, then lowest ids); `single-numa-node` keeps only preferred one-node
   hints; `restricted` and `single-numa-node` admit only a preferred result, `best-effort` admits any,
   `none` (or an unknown policy) admits without a hint;
3. CPUs are taken (cpumanager.Allocate, kubelet's takeByTopology): first inside the hint's NUMA nodes,
   then anywhere; whole free sockets, then whole free cores, then single CPUs.
A container with no whole-CPU request has no preference and takes nothing.

GPUs (Volcano's gpumanager provider, `nvidia.com/gpu` only) are a second hint provider: on a node whose
Numatopology has `gpuDetail` and a free `nvidia.com/gpu` set, a container asking for N GPUs hints every
set of the GPUs' NUMA nodes whose free GPUs number at least N, preferred when of the fewest nodes among
those (unlike CPUs, counted on the free GPUs); the policy merges the CPU and GPU hints of a container
(every pair: masks ANDed, preferred when both are) and the GPUs taken are the lowest-numbered free ones
inside the chosen NUMA nodes, then the lowest elsewhere. The score counts the NUMA nodes of the CPUs and
GPUs taken together.

Which pods and nodes the rules apply to (filterNodeByPolicy) is in `answer`. The node's CPUs as the
session sees them (the free set shrinks as placements take CPUs) come from `NumaSource`, which
`vpolicy.engine.numa` implements; this module keeps no state across calls but the source's memo.

One difference from Volcano, on purpose: Volcano's freeCPUs sorts cores with a comparison that is not a
strict order (`a > b || c < d || ...`), so its order depends on Go's sort internals; here cores are sorted
by the key its comment describes (CPUs already taken on the core's socket, more first; then free CPUs on
the socket, fewer first; free CPUs on the core, fewer first; socket id; core id). Volcano's unit tests
(cpu_mng_test.go) give the same CPUs either way.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vpolicy.model.numa import GPU, POD_POLICY_ANNOTATION, NumaTopology

STATIC = "static"
NO_POLICY = ("", "none")
MAX_GPU_NUMA_NODES = 16  # gpumanager gives no hint (no preference) on a node with more GPU NUMA nodes


class NumaSource(Protocol):
    """A node's CPUs as the session sees them now (`vpolicy.engine.numa.NodeNuma`)."""

    name: str
    topology: NumaTopology
    free_cpu: frozenset[int]
    free_gpu: frozenset[int]
    memo: dict[Any, "Fit | Refused"]

    def note(self, key: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Fit:
    """The node admits the task; `cpus` are the CPUs it would get (empty: none pinned)."""

    cpus: frozenset[int] = frozenset()
    numa_nodes: int = 0  # how many NUMA nodes those CPUs and GPUs span
    gpus: frozenset[int] = frozenset()  # the nvidia.com/gpu indices it would get


@dataclass(frozen=True, slots=True)
class Unfit:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """The node's policy refuses this container (what the memo keeps; the reason names the task)."""

    container: str


NOT_APPLICABLE = Fit()


class Layout:
    """A topology's CPUs grouped as kubelet's CPUDetails groups them (a core is its CoreID, as there)."""

    def __init__(self, topology: NumaTopology):
        cpus = topology.cpus
        self.all = frozenset(cpus)
        self.numa_nodes = topology.numa_nodes
        self.by_numa = _group(cpus, lambda c: c.numa)
        self.by_socket = _group(cpus, lambda c: c.socket)
        self.by_core = _group(cpus, lambda c: c.core)
        self.socket_of = {cpu: info.socket for cpu, info in cpus.items()}
        self.core_of = {cpu: info.core for cpu, info in cpus.items()}
        self.numa_of = {cpu: info.numa for cpu, info in cpus.items()}
        sockets = len(self.by_socket)
        cores = len({(info.socket, info.core) for info in cpus.values()})  # getPhysicalCoresNum
        self.cpus_per_socket = len(self.all) // sockets if sockets else 0
        self.cpus_per_core = len(self.all) // cores if cores else 0
        self.gpu_numa = dict(topology.gpus)  # GPU index -> NUMA node (spec.gpuDetail)
        self.gpu_numa_nodes = tuple(sorted(set(self.gpu_numa.values())))
        reserve = -(-topology.reserved_cpu // 1000)  # whole CPUs, rounded up
        self.reserved = (take_by_topology(self, self.all, reserve) or frozenset()) if reserve > 0 else frozenset()

    def cpus_in(self, numa_nodes: Sequence[int]) -> frozenset[int]:
        return frozenset().union(*(self.by_numa.get(n, frozenset()) for n in numa_nodes))


def _group(cpus: Any, key: Callable[[Any], int]) -> dict[int, frozenset[int]]:
    out: dict[int, set[int]] = {}
    for cpu, info in cpus.items():
        out.setdefault(key(info), set()).add(cpu)
    return {k: frozenset(v) for k, v in out.items()}


_LAYOUTS: dict[int, tuple[NumaTopology, Layout]] = {}


def layout_of(topology: NumaTopology) -> Layout:
    """The topology's layout, built once per Numatopology object."""
    kept = _LAYOUTS.get(id(topology))
    if kept is None or kept[0] is not topology:
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        kept = _LAYOUTS[id(topology)] = (topology, Layout(topology))
    return kept[1]


# kubelet's takeByTopology ------------------------------------------------------------------------------
def take_by_topology(layout: Layout, available: frozenset[int], count: int) -> frozenset[int] | None:
    """`count` CPUs of `available`, whole sockets first, then whole cores, then single CPUs; None when
    there are not enough."""
    if count < 1:
        return frozenset()
    if count > len(available):
        return None
    free = set(available)
    taken: set[int] = set()

    def take(cpus: frozenset[int] | set[int]) -> None:
        taken.update(cpus)
        free.difference_update(cpus)

    def needed() -> int:
        return count - len(taken)

    per_socket, per_core = layout.cpus_per_socket, layout.cpus_per_core
    if per_socket and needed() >= per_socket:
        for socket in sorted(layout.by_socket):
            if needed() < per_socket:
                break
            cpus = layout.by_socket[socket]
            if len(cpus & free) == per_socket:
                take(cpus & free)
        if needed() < 1:
            return frozenset(taken)
    if per_core and needed() >= per_core:
        for core in _free_cores(layout, free):
            if needed() < per_core:
                break
            take(layout.by_core[core] & free)
        if needed() < 1:
            return frozenset(taken)
    for cpu in _free_cpus(layout, free, taken):
        if needed() < 1:
            break
        take({cpu})
    return frozenset(taken) if needed() < 1 else None


def _free_cores(layout: Layout, free: set[int]) -> list[int]:
    """Cores whose CPUs are all free: sockets with fewer whole free cores first, then socket, core id."""
    def whole(socket: int) -> list[int]:
        cores = {layout.core_of[c] for c in layout.by_socket[socket] & free}
        return sorted(c for c in cores if len(layout.by_core[c] & free) == layout.cpus_per_core)
    sockets = sorted({layout.socket_of[c] for c in free}, key=lambda s: (len(whole(s)), s))
    return [core for s in sockets for core in whole(s)]


def _free_cpus(layout: Layout, free: set[int], taken: set[int]) -> list[int]:
    cores = {layout.core_of[c] for c in free}

    def key(core: int) -> tuple[int, int, int, int, int]:
        socket = layout.socket_of[min(layout.by_core[core])]
        on_socket = layout.by_socket[socket]
        return (-len(on_socket & taken), len(on_socket & free), len(layout.by_core[core] & free), socket, core)
    return [cpu for core in sorted(cores, key=key) for cpu in sorted(layout.by_core[core] & free)]


# the topology manager ----------------------------------------------------------------------------------
Hint = tuple[frozenset[int] | None, bool]  # (NUMA nodes, or None: any; preferred)


def cpu_hints(layout: Layout, available: frozenset[int], request: int) -> list[Hint]:
    """cpumanager's GetTopologyHints for one container: every NUMA-node set (by size, then ids) whose
    available CPUs cover the request, preferred when of the fewest nodes whose CPUs could."""
    nodes = layout.numa_nodes
    smallest = len(nodes)
    found: list[frozenset[int]] = []
    for size in range(1, len(nodes) + 1):
        for combo in itertools.combinations(nodes, size):
            in_mask = layout.cpus_in(combo)
            if len(in_mask) >= request and size < smallest:
                smallest = size
            if len(available & in_mask) >= request:
                found.append(frozenset(combo))
    return [(mask, len(mask) == smallest) for mask in found]


def gpu_hints(layout: Layout, available: frozenset[int], request: int) -> list[Hint] | None:
    """gpumanager's generateGPUTopologyHints: every set of the GPUs' NUMA nodes (by size, then ids) whose
    available GPUs number at least the request, preferred when of the fewest nodes among them; None (no
    preference) past MAX_GPU_NUMA_NODES."""
    nodes = layout.gpu_numa_nodes
    if len(nodes) > MAX_GPU_NUMA_NODES:
        return None
    per_node: dict[int, int] = {}
    for gpu in available:
        if gpu in layout.gpu_numa:
            per_node[layout.gpu_numa[gpu]] = per_node.get(layout.gpu_numa[gpu], 0) + 1
    found = [frozenset(combo) for size in range(1, len(nodes) + 1) for combo in itertools.combinations(nodes, size)
             if sum(per_node.get(n, 0) for n in combo) >= request]
    smallest = min((len(m) for m in found), default=0)
    return [(mask, len(mask) == smallest) for mask in found]


def merge_hints(policy: str, numa_nodes: Sequence[int], providers: Sequence[list[Hint] | None]
                ) -> tuple[Hint, bool]:
    """The node policy's best hint and whether it admits the container (policy.Predicate). `providers`:
    each hint provider's hints for the container (CPU, GPU); None for one with no preference, [] for one
    that cannot be satisfied (filterProvidersHints). Every permutation of one hint per provider is merged
    (masks ANDed, preferred when all are), and the best merge kept (mergeFilteredHints)."""
    if policy not in ("best-effort", "restricted", "single-numa-node"):
        return (None, True), True  # policyNone
    lists: list[list[Hint]] = [[(None, True)] if h is None else [(None, False)] if not h else list(h)
                               for h in providers]
    if policy == "single-numa-node":
        lists = [[h for h in hs if h[1] and (h[0] is None or len(h[0]) == 1)] for hs in lists]
    everything = frozenset(numa_nodes)
    best: Hint = (everything, False)
    for permutation in itertools.product(*lists):
        merged, preferred = everything, True
        for mask, one_preferred in permutation:
            merged = merged if mask is None else merged & mask
            preferred = preferred and one_preferred
        if not merged:
            continue
        if preferred and not best[1]:
            best = (merged, preferred)
            continue
        if not preferred and best[1]:
            continue
        if _narrower(merged, best[0] or everything):
            best = (merged, preferred)
    return best, (True if policy == "best-effort" else best[1])


def _narrower(a: frozenset[int], b: frozenset[int]) -> bool:
    """bitmask.IsNarrowerThan: fewer NUMA nodes, or as many with a lower mask value."""
    if len(a) != len(b):
        return len(a) < len(b)
    return sum(1 << n for n in a) < sum(1 << n for n in b)


def allocate_gpus(layout: Layout, available: frozenset[int], request: int, hint: frozenset[int] | None
                  ) -> frozenset[int]:
    """gpumanager.Allocate: the lowest-numbered available GPUs inside the hint's NUMA nodes, then the lowest
    of the rest (fewer than asked when not enough are free: the resource fit refuses such a node)."""
    aligned = sorted(g for g in available if hint is None or layout.gpu_numa.get(g) in hint)[:request]
    rest = sorted(available - set(aligned))[:request - len(aligned)]
    return frozenset(aligned) | frozenset(rest)


def allocate_cpus(layout: Layout, available: frozenset[int], request: int, hint: frozenset[int] | None
                  ) -> frozenset[int]:
    """cpumanager.Allocate: CPUs inside the hint first, the rest anywhere; empty when they do not fit."""
    result: frozenset[int] = frozenset()
    if hint is not None:
        aligned = available & layout.cpus_in(sorted(hint))
        got = take_by_topology(layout, aligned, min(request, len(aligned)))
        if got is None:
            return frozenset()
        result = got
    rest = take_by_topology(layout, available - result, request - len(result))
    return frozenset() if rest is None else result | rest


# what the rules ask ------------------------------------------------------------------------------------
def task_policy(task: Any) -> str:
    """The pod's `volcano.sh/numa-topology-policy` ("" when unset)."""
    return str(task.pod.annotations.get(POD_POLICY_ANNOTATION, ""))


def spec_key(task: Any) -> tuple[str, tuple[tuple[str, int], ...], tuple[int, ...]]:
    """What an answer depends on of the task: its topology policy, each container's whole CPUs and GPUs.
    The engine keeps rule answers per task class, so the predicate is noted per spec, not per pod."""
    return task_policy(task), task.pod.container_cpus, task.pod.container_gpus


def answer(task: Any, source: NumaSource | None) -> Fit | Unfit:
    """The numa-aware predicate for the task on the node, as the session sees it now (memoised until the
    node's free CPUs change). Only a Guaranteed pod is checked. Volcano's filterNodeByPolicy first: a task with a topology policy
    needs a node whose Numatopology has the static CPU manager, the same topology policy and free CPUs;
    a task without one is only checked on such nodes with a policy other than none."""
    if not task.pod.guaranteed:
        return NOT_APPLICABLE  # predicateFn: only Guaranteed pods get CPUs pinned
    policy = task_policy(task)
    if policy not in NO_POLICY:
        if source is None:
            return Unfit("numa info is empty")
        topo = source.topology
        if topo.cpu_manager_policy != STATIC:
            return Unfit("cpu manager policy isn't static")
        if policy != topo.topology_manager_policy:
            return Unfit(f"task topology policy[{policy}] is different with node[{topo.topology_manager_policy}]")
        if not source.free_cpu:
            return Unfit("cpu allocatable map is empty")
    elif (source is None or source.topology.cpu_manager_policy != STATIC
          or source.topology.topology_manager_policy in NO_POLICY):
        return NOT_APPLICABLE
    key = spec_key(task)  # the answer depends on the pod's spec, not on which pod it is
    found = source.memo.get(key)
    if found is None:
        found = source.memo[key] = _place(task, source)
    if isinstance(found, Refused):
        return Unfit(f"plugin numa-aware predicates failed for task {task.name} container {found.container} "
                     f"on node {source.name}")
    return found


def _place(task: Any, source: NumaSource) -> Fit | Refused:
    topo = source.topology
    layout = layout_of(topo)
    has_cpu = "cpu" in topo.allocatable
    has_gpu = bool(layout.gpu_numa) and GPU in topo.allocatable  # gpumanager: gpuDetail and a free set
    free, free_gpu = source.free_cpu, source.free_gpu
    gpus = task.pod.container_gpus
    taken: frozenset[int] = frozenset()
    taken_gpus: frozenset[int] = frozenset()
    for index, (name, request) in enumerate(task.pod.container_cpus):
        gpu_request = gpus[index] if index < len(gpus) else 0
        available = free - layout.reserved
        hints = [cpu_hints(layout, available, request) if request > 0 and has_cpu else None,
                 gpu_hints(layout, free_gpu, gpu_request) if gpu_request > 0 and has_gpu else None]
        (mask, _), admitted = merge_hints(topo.topology_manager_policy, layout.numa_nodes, hints)
        if not admitted:
            return Refused(name)
        got = allocate_cpus(layout, available, request, mask)
        taken |= got
        free = free - got
        if gpu_request > 0 and GPU in topo.allocatable:
            got_gpus = allocate_gpus(layout, free_gpu, gpu_request, mask)
            taken_gpus |= got_gpus
            free_gpu = free_gpu - got_gpus
    spanned = {layout.numa_of[c] for c in taken if c in layout.numa_of}
    spanned |= {layout.gpu_numa[g] for g in taken_gpus if g in layout.gpu_numa}
    return Fit(taken, len(spanned), taken_gpus)


# DSL built-ins (catalogue: vpolicy.lang.builtins.FUNCTIONS). They take `node.numa` (a NumaSource, or none
# for a node without a Numatopology), which changes with every placement on the node, so the engine never
# caches a rule reading it as if it depended on fixed fields only.
def numa_fits(task: Any, source: NumaSource | None) -> bool:
    found = answer(task, source)
    if source is not None and found is not NOT_APPLICABLE:
        source.note(spec_key(task))  # a placement of such a pod on this node takes the CPUs answered
    return isinstance(found, Fit)


def numa_unfit_reason(task: Any, source: NumaSource | None) -> str:
    found = answer(task, source)
    return found.reason if isinstance(found, Unfit) else ""


def numa_nodes_used(task: Any, source: NumaSource | None) -> int:
    found = answer(task, source)
    return found.numa_nodes if isinstance(found, Fit) else 0


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "numa_fits": numa_fits,
    "numa_unfit_reason": numa_unfit_reason,
    "numa_nodes_used": numa_nodes_used,
}


# Batched forms, for the vectoriser (`compile.vectorize`): `sources` is the batch's `node.numa` column
# (an object array, None where a node has no Numatopology). A pod without a topology policy is answered
# on the nodes without one at once (NOT_APPLICABLE), so a cluster with few NUMA-aware nodes pays little.
def _batched(task: Any, sources: Any, one: Callable[[Any, Any], Any], absent: Any, dtype: Any) -> Any:
    if not isinstance(sources, np.ndarray):
        return one(task, sources)
    out = np.full(len(sources), absent, dtype=dtype)
    # a source is truthy (NodeNuma defines no __len__ or __bool__), None is not
    rows = np.flatnonzero(sources.astype(bool)) if task_policy(task) in NO_POLICY else range(len(sources))
    for i in rows:
        out[i] = one(task, sources[i])
    return out


VECTOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "numa_fits": lambda task, sources: _batched(task, sources, numa_fits, True, bool),
    "numa_unfit_reason": lambda task, sources: _batched(task, sources, numa_unfit_reason, "", object),
    "numa_nodes_used": lambda task, sources: _batched(task, sources, numa_nodes_used, 0, np.int64),
}
