"""optimize mode's joint plan for network-topology gangs: which domain each pending gang should go to,
chosen for all of them at once before allocate serves any.

Volcano places gangs one at a time: each takes the domain its rules score best *now*, and a small gang
may settle in the only leaf a later large gang could have used whole. The plan looks at every pending
topology gang of the session together (best fit decreasing): the largest gangs first, each into the
domain of the lowest allowed tier where its pods fit node by node and the fewest GPUs are left over,
so large gangs keep whole leaves and small ones fill the gaps. A gang too large for any one domain of its
lowest tier goes up a tier, crossing the fewest leaves (fullest-free first).

The plan is advice only: `allocate_topology` tries a gang's planned domain first, through the same
dry run and rules as any other domain (a planned domain never allowed by `hypernode_gradient`
is never tried); when the dry run fails there it falls back to its own choice. It counts GPUs only
(cpu and memory are checked by the dry run); jobs asking for no GPU get no plan.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vpolicy.engine.state import JobInfo, SessionState, TaskInfo
from vpolicy.engine.topology import SessionTopology
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import PodGroupPhase, TaskStatus

GpuCount = Callable[[Resources], int]


@dataclass(slots=True)
class _Gang:
    job: JobInfo
    pods: list[int]  # GPUs per pod still to place for the gang to be ready, largest first
    gradients: list[list[str]]

    @property
    def need(self) -> int:
        return sum(self.pods)


def plan_domains(state: SessionState, jobs: list[JobInfo], gradients: Callable[[JobInfo], list[list[str]]],
                 gpus: GpuCount) -> dict[str, str]:
    """job key -> the domain planned for it (jobs that need no GPU, or fit nowhere, are left out)."""
    topo = state.topology
    free = {name: gpus(node.future_idle) for name, node in state.nodes.items()}
    gangs = []
    for job in jobs:
        pods = _pods_to_place(job, gpus)
        if pods and sum(pods) > 0:
            gangs.append(_Gang(job, pods, gradients(job)))
    gangs.sort(key=lambda g: -g.need)  # stable: equal gangs keep job order
    plan: dict[str, str] = {}
    for gang in gangs:
        for group in gang.gradients:
            best: tuple[int, str, list[str]] | None = None
            for name in group:
                nodes = _fit(topo, name, gang.pods, free)
                if nodes is None:
                    continue
                left = sum(free[n] for n in topo.info(name).node_names) - gang.need
                if best is None or left < best[0]:
                    best = (left, name, nodes)
            if best is not None:
                _, name, nodes = best
                for node, pod in zip(nodes, gang.pods):
                    free[node] -= pod
                plan[gang.job.key] = name
                break
    return plan


def _pods_to_place(job: JobInfo, gpus: GpuCount) -> list[int]:
    """The GPUs of the pending pods the gang still needs (minAvailable less what is ready or pipelined),
    largest first; all pending pods when the job is already ready."""
    if job.phase == PodGroupPhase.PENDING.value:
        return []
    pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.best_effort]
    short = job.min_available - job.ready_count - job.pipelined_count
    chosen: list[TaskInfo] = pending[:short] if short > 0 else pending
    return sorted((gpus(t.resreq) for t in chosen), reverse=True)


def _fit(topo: SessionTopology, domain: str, pods: list[int], free: dict[str, int]) -> list[str] | None:
    """Nodes of `domain` for each pod (best fit: the node with the least free GPUs that holds it), or
    None when the pods do not fit node by node."""
    left = {n: free[n] for n in topo.info(domain).node_names}
    if sum(left.values()) < sum(pods):
        return None
    chosen = []
    for pod in pods:
        fitting = [n for n, f in left.items() if f >= pod]
        if not fitting:
            return None
        node = min(fitting, key=lambda n: left[n])
        left[node] -= pod
        chosen.append(node)
    return chosen
