"""optimize mode's joint plan for network-topology gangs: which domain each pending gang should go to,
chosen for all of them at once before allocate serves any.

Volcano places gangs one at a time: each takes the domain its rules score best *now*, and a small gang
may settle in the only leaf a later large gang could have used whole. The plan looks at every pending
topology gang of the session together (best fit decreasing): the largest gangs first, each into the
domain of the lowest allowed tier where its pods fit node by node and the fewest GPUs are left over,
gangs kept to one leaf first, then those allowed to span leaves, so each leaf is filled tightly and the
spanning gangs take the whole nodes left over. A gang too large for any one domain of its lowest tier
goes up a tier. Gangs that fit nowhere in the plan wait (`Plan.deferred`) until every planned gang has
been served, then try what is left.

The plan is advice only: `allocate_topology` tries a gang's planned domain first, through the same
dry run and rules as any other domain (a planned domain never allowed by `hypernode_gradient`
is never tried); when the dry run fails there it falls back to its own choice. It counts GPUs only
(cpu and memory are checked by the dry run); jobs asking for no GPU get no plan.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vpolicy.engine.state import JobInfo, SessionState, TaskInfo
from vpolicy.engine.topology import SessionTopology
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import PodGroupPhase, TaskStatus

GpuCount = Callable[[Resources], int]
# How much of the most GPUs a candidate plan places another may give up for more gangs: gangs placed
# and capacity used pull apart (many small gangs vs a few large ones); within 2% of the best use of
# the capacity, the plan placing more gangs wins.
GPU_TOLERANCE = 0.02
_NEVER = np.iinfo(np.int64).max  # free GPUs of a node that cannot hold the pod, for best fit's argmin


@dataclass(slots=True)
class _Gang:
    job: JobInfo
    pods: list[int]  # GPUs per pod still to place for the gang to be ready, largest first
    gradients: list[list[str]]

    @property
    def need(self) -> int:
        return sum(self.pods)


@dataclass(slots=True)
class Plan:
    """The planned domain of each gang, and the room the gangs not yet served hold there: a gang
    without a plan (or placed elsewhere) may use a domain only as long as every unserved planned gang
    overlapping it still fits its own domain node by node (`keeps`)."""

    domains: dict[str, str]  # job key -> domain
    pods: dict[str, list[int]]  # job key -> GPUs of the pods it still needs, largest first
    gpus: GpuCount
    deferred: list[JobInfo] = field(default_factory=list)  # refused while planned gangs held the room
    # node row -> (its version in the node arrays, free GPUs then): `keeps` counts a node again only
    # after it changed
    _free: dict[int, tuple[int, int]] = field(default_factory=dict)

    def holds_room(self) -> bool:
        return bool(self.domains)

    @property
    def merit(self) -> tuple[int, int]:
        """GPUs planned, then gangs planned: what the choice among candidate plans maximises."""
        return sum(sum(p) for p in self.pods.values()), len(self.pods)

    def domain(self, job: JobInfo) -> str:
        return self.domains.get(job.key, "")

    def served(self, job: JobInfo) -> None:
        self.domains.pop(job.key, None)

    def held_within(self, state: SessionState, domain: str, *, job: JobInfo) -> int:
        """The GPUs the unserved planned gangs (other than `job`) planned inside `domain` still need:
        room a trial there must leave free, or `keeps` refuses it."""
        tree = state.topology.tree
        return sum(sum(self.pods[key]) for key, name in self.domains.items()
                   if key != job.key and tree.within(name, domain))

    def keeps(self, state: SessionState, domain: str, *, job: JobInfo) -> bool:
        """Every unserved planned gang (other than `job`) whose domain shares nodes with `domain` still
        fits there, node by node, in the session as it is now."""
        tree = state.topology.tree
        involved = [(key, name) for key, name in self.domains.items()
                    if key != job.key and (tree.within(name, domain) or tree.within(domain, name))]
        if not involved:
            return True
        topo = state.topology
        free = np.zeros(len(state.nodes), dtype=np.int64)
        version = state.arrays.version
        for _key, name in involved:
            for row, node in zip(topo.node_rows(name).tolist(), topo.info(name).nodes):
                kept = self._free.get(row)
                if kept is None or kept[0] != version[row]:  # the node changed since: count again
                    kept = self._free[row] = (int(version[row]), self.gpus(node.future_idle))
                free[row] = kept[1]
        for key, name in involved:  # the plan's own order: largest gangs first
            chosen = _fit(topo, name, self.pods[key], free)
            if chosen is None:
                return False
            np.subtract.at(free, chosen, self.pods[key])
        return True


def plan_domains(state: SessionState, jobs: list[JobInfo], gradients: Callable[[JobInfo], list[list[str]]],
                 gpus: GpuCount) -> Plan:
    """The planned domain of each job (jobs that need no GPU, or fit nowhere, are left out): of a few
    orders of the gangs, the plan placing the most gangs among those within `GPU_TOLERANCE` of the
    most GPUs placed (the least capacity stranded).

    The base order: higher job priority first; then gangs held to one leaf before those allowed wider
    domains, the largest first (best fit decreasing fills leaves tightly; gangs that may span leaves
    take the whole nodes left); a stable sort keeps equal gangs in job order. Its variants first place
    the k largest spanning gangs (k = 1, 2, 4, ...), which can use whole spines the leaf gangs would
    otherwise split."""
    gangs = []
    for job in jobs:
        pods = _pods_to_place(job, gpus)
        if pods and sum(pods) > 0:
            gangs.append(_Gang(job, pods, gradients(job)))
    gangs.sort(key=lambda g: (-g.job.priority, g.job.highest_tier_allowed, -g.need))
    spanning = sorted((g for g in gangs if g.job.highest_tier_allowed > 1), key=lambda g: -g.need)
    orders = [gangs]
    k = 1
    while k <= len(spanning):
        first = spanning[:k]
        orders.append([*first, *(g for g in gangs if g not in first)])
        k *= 2
    plans = [_plan_in_order(state, order, gpus) for order in orders]
    most = max(p.merit[0] for p in plans)
    close = [p for p in plans if p.merit[0] >= most * (1 - GPU_TOLERANCE)]
    return max(close, key=lambda p: (p.merit[1], p.merit[0]))  # first of equals: the base order


def _plan_in_order(state: SessionState, gangs: list[_Gang], gpus: GpuCount) -> Plan:
    """Each gang in turn into the domain of its lowest allowed tier where its pods fit node by node
    and the fewest GPUs are left over."""
    topo = state.topology
    free = np.array([gpus(node.future_idle) for node in state.nodes.values()], dtype=np.int64)  # by node row
    plan = Plan({}, {}, gpus)
    members: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
    for gang in gangs:
        for group in gang.gradients:
            best: tuple[int, str, list[int]] | None = None
            alike = gang.pods[0] == gang.pods[-1] > 0
            if alike:  # pods all alike: every domain of the group at once
                best = _best_alike(topo, group, gang, free, members)
            for name in group if not alike else ():
                rows = _fit(topo, name, gang.pods, free)
                if rows is None:
                    continue
                left = int(free[topo.node_rows(name)].sum()) - gang.need
                if best is None or left < best[0]:
                    best = (left, name, rows)
            if best is not None:
                _, name, rows = best
                np.subtract.at(free, rows, gang.pods)
                plan.domains[gang.job.key] = name
                plan.pods[gang.job.key] = gang.pods
                break
    return plan


def _best_alike(topo: SessionTopology, group: list[str], gang: _Gang, free: np.ndarray,
                members: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]) -> tuple[int, str, list[int]] | None:
    """`_plan_in_order`'s choice in one group for a gang of alike pods: a domain holds them node by node
    exactly when its nodes hold that many pods between them (best fit places one pod per such slot),
    and the one left with the fewest free GPUs wins, the first of equals. `members`: each group's
    node rows and the index of each row's domain, kept across gangs."""
    key = tuple(group)
    found = members.get(key)
    if found is None:
        parts = [topo.node_rows(name) for name in group]
        found = members[key] = (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64),
                                np.repeat(np.arange(len(group)), [len(p) for p in parts]))
    rows, owner = found
    pod, count = gang.pods[0], len(gang.pods)
    holds = np.bincount(owner, weights=free[rows] // pod, minlength=len(group))
    fits = holds >= count
    if not fits.any():
        return None
    left = np.bincount(owner, weights=free[rows], minlength=len(group)) - gang.need
    i = int(np.where(fits, left, np.inf).argmin())
    domain_rows = topo.node_rows(group[i])
    chosen = _fit_alike(domain_rows, free[domain_rows], pod, count)
    return None if chosen is None else (int(left[i]), group[i], chosen)


def _pods_to_place(job: JobInfo, gpus: GpuCount) -> list[int]:
    """The GPUs of the pending pods the gang still needs (minAvailable less what is ready or pipelined),
    largest first; all pending pods when the job is already ready."""
    if job.phase == PodGroupPhase.PENDING.value:
        return []
    pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.best_effort]
    short = job.min_available - job.ready_count - job.pipelined_count
    chosen: list[TaskInfo] = pending[:short] if short > 0 else pending
    return sorted((gpus(t.resreq) for t in chosen), reverse=True)


def _fit(topo: SessionTopology, domain: str, pods: list[int], free: np.ndarray) -> list[int] | None:
    """Node rows of `domain` for each pod (best fit: the node with the least free GPUs that holds it,
    the first such in the domain's node order), or None when the pods do not fit node by node. `free`:
    free GPUs by node row."""
    rows = topo.node_rows(domain)
    left = free[rows]
    if int(left.sum()) < sum(pods):
        return None
    if pods and pods[0] == pods[-1] and pods[0] > 0:  # pods all alike (largest first): one array step
        return _fit_alike(rows, left, pods[0], len(pods))
    chosen = []
    for pod in pods:
        fitting = left >= pod
        if not fitting.any():
            return None
        i = int(np.where(fitting, left, _NEVER).argmin())
        left[i] -= pod
        chosen.append(int(rows[i]))
    return chosen


def _fit_alike(rows: np.ndarray, left: np.ndarray, pod: int, count: int) -> list[int] | None:
    """`_fit` for `count` pods of `pod` GPUs each: best fit takes the fitting node with the least free
    GPUs (the first of equals) and keeps taking it while it still holds a pod (it only gets emptier,
    so it stays the least free), then the next: the nodes in order of free GPUs, then position, each
    taking as many pods as it holds."""
    holds = left // pod
    order = np.lexsort((np.arange(len(left)), left))  # by free GPUs, then position
    order = order[holds[order] > 0]
    taken = np.cumsum(holds[order])
    if not len(taken) or taken[-1] < count:
        return None
    last = int(np.searchsorted(taken, count))  # the node that takes the last pod
    counts = holds[order[:last + 1]].copy()
    counts[-1] -= int(taken[last]) - count
    return [int(r) for r in np.repeat(rows[order[:last + 1]], counts)]
