"""The `optimize` engine mode: the same rules as `volcano`, better choices among what they allow.

Volcano decides greedily: a task goes to the best-scored feasible node (among a sample), and a
preemptor evicts victims in victim order until it fits, on the first node (by score) where that works.
`optimize` keeps every rule exactly as it is — the nodes a task may use are still those that pass the
resource check and the policy's predicates, victims are still only those the `preemptable` /
`reclaimable` rules return, a node's evictions are still all-or-nothing, gangs are still committed only
when ready — and changes only which of the allowed choices is taken:

- placement (`pack`): all feasible nodes are searched (no sampling), and among those of the group
  Volcano would pick from (fits Idle now, else FutureIdle) a GPU task takes the node whose free GPUs
  after placement are fewest (best fit), a CPU task prefers nodes with no free GPU; the policy's
  `node_order` score breaks ties. Whole GPU nodes stay free for the gangs that need them.
- victims (`evict_cheapest`): on every candidate node the cheapest sufficient subset of the allowed
  victims is found by an exact branch-and-bound (fewest evicted GPU pods, then fewest GPUs, fewest
  pods, lowest priority, least runtime lost), and the node whose set is cheapest is used. A search that
  runs out of its step budget, or a set the final fit check rejects, falls back to Volcano's greedy
  choice: the budget never yields a wrong decision, only a less good one.

This module decides nothing about feasibility (see `placement`, `runtime`) and applies evictions only
through a `Statement`; the actions call it through one-line hooks when `ActionContext.mode` says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from vpolicy.engine.state import NodeArrays, NodeInfo, TaskInfo
from vpolicy.model.resources import CPU, MEMORY, Resources

if TYPE_CHECKING:
    from vpolicy.engine.actions.context import ActionContext
    from vpolicy.engine.placement import Placement
    from vpolicy.engine.statement import Statement

MODES = ("volcano", "optimize")
SEARCH_STEPS = 20_000  # branch-and-bound steps per node before falling back to the greedy victim order


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown engine mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode


def is_gpu_dim(name: str) -> bool:
    """Whole-GPU resources: `nvidia.com/gpu`, `amd.com/gpu`, Volcano's `volcano.sh/gpu-number`."""
    return name.endswith("/gpu") or name == "gpu" or name.endswith("gpu-number")


def gpus(res: Resources) -> int:
    """Whole GPUs a request asks for (resources hold milli-units, so 1000 per GPU)."""
    return sum(v for k, v in res.items() if is_gpu_dim(k)) // 1000


# placement ---------------------------------------------------------------------------------------
class Packer:
    """Best fit on GPUs among the rows the policy allows, the policy's score breaking ties."""

    def __init__(self, arrays: NodeArrays):
        self.arrays = arrays
        self.gpu_cols = [i for d, i in arrays.index.items() if is_gpu_dim(d)]

    def __call__(self, task: TaskInfo, rows: np.ndarray, scores: np.ndarray, idle: bool) -> int:
        """Index into `rows` of the node to use; `idle` says the group fits Idle now (else FutureIdle)."""
        if not self.gpu_cols:
            return int(np.argmax(scores))
        free = (self.arrays.idle() if idle else self.arrays.future_idle())[rows][:, self.gpu_cols].sum(axis=1)
        asked = gpus(task.resreq) * 1000
        # lexsort: the last key is the primary one; ties keep the first row, as Volcano's argmax does
        if asked:
            left = free - asked
            order = np.lexsort((np.arange(len(rows)), -scores, left))
        else:
            order = np.lexsort((np.arange(len(rows)), -scores, free > 0))
        return int(order[0])


# victims -----------------------------------------------------------------------------------------
Cost = tuple[int, int, int, int, float]


def victim_cost(task: TaskInfo) -> Cost:
    """What evicting one task costs: (GPU pod, GPUs, pod, priority, runtime lost ~ -creation)."""
    g = gpus(task.resreq)
    return (1 if g else 0, g, 1, task.priority, -task.pod.creation)


def _add(a: Cost, b: Cost) -> Cost:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


ZERO_COST: Cost = (0, 0, 0, 0, 0.0)


def cheapest_subset(request: Resources, available: Resources, victims: Sequence[TaskInfo],
                    *, steps: int = SEARCH_STEPS) -> tuple[list[TaskInfo], Cost] | None:
    """The cheapest subset of `victims` whose resources, added to `available`, fit `request` (Volcano's
    `LessEqual`: cpu, memory and every requested dimension); None when no subset does or the search
    ran out of `steps` before proving its best answer optimal."""
    dims = sorted({CPU, MEMORY, *request})
    need = [request.get(d, 0) - available.get(d, 0) for d in dims]
    if all(n <= 0 for n in need):
        return [], ZERO_COST
    live = [i for i, n in enumerate(need) if n > 0]
    need = [need[i] for i in live]
    keep = [v for v in victims if any(v.resreq.get(dims[i], 0) > 0 for i in live)]
    keep.sort(key=victim_cost)
    vecs = [[v.resreq.get(dims[i], 0) for i in live] for v in keep]
    costs = [victim_cost(v) for v in keep]
    n = len(keep)
    suffix = [[0] * len(live) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        suffix[i] = [a + b for a, b in zip(suffix[i + 1], vecs[i])]
    if any(s < q for s, q in zip(suffix[0], need)):
        return None
    best: list[tuple[Cost, list[int]]] = []
    budget = [steps]

    def search(i: int, left: list[int], cost: Cost, chosen: list[int]) -> None:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        if best and cost >= best[0][0]:
            return
        if all(x <= 0 for x in left):
            best[:] = [(cost, list(chosen))]
            return
        if i == n or any(s < x for s, x in zip(suffix[i], left)):
            return
        chosen.append(i)
        search(i + 1, [x - y for x, y in zip(left, vecs[i])], _add(cost, costs[i]), chosen)
        chosen.pop()
        search(i + 1, left, cost, chosen)

    search(0, need, ZERO_COST, [])
    if budget[0] <= 0 or not best:
        return None
    cost, chosen = best[0]
    return [keep[i] for i in chosen], cost


@dataclass(slots=True)
class VictimChoice:
    node: NodeInfo
    victims: list[TaskInfo]
    cost: Cost
    rank: int  # the node's place in the action's own node order (ties go to the earlier node)


def cheapest_choices(preemptor: TaskInfo, nodes: Sequence[NodeInfo],
                     allowed: Callable[[NodeInfo], list[TaskInfo]]) -> list[VictimChoice] | None:
    """Per node, the cheapest sufficient subset of the victims `allowed` returns there, cheapest node
    first; None when a node's search ran out of budget (the caller then keeps Volcano's choice)."""
    out = []
    for rank, node in enumerate(nodes):
        victims = allowed(node)
        if not victims:
            continue
        found = cheapest_subset(preemptor.resreq, node.future_idle, victims)
        if found is None:
            total = node.future_idle
            for v in victims:
                total = total + v.resreq
            if _covers(preemptor.resreq, total):
                return None  # feasible but not proven cheapest within the budget
            continue
        chosen, cost = found
        if chosen:
            out.append(VictimChoice(node, chosen, cost, rank))
    out.sort(key=lambda c: (c.cost, c.rank))
    return out


def _covers(request: Resources, available: Resources) -> bool:
    dims = {CPU, MEMORY, *request}
    return all(request.get(d, 0) <= available.get(d, 0) for d in dims)


def evict_cheapest(ctx: "ActionContext", stmt: "Statement", preemptor: TaskInfo, nodes: Sequence[NodeInfo],
                   *, callback: str, keep: Callable[[TaskInfo], bool], action: str,
                   fits: Callable[[NodeInfo], bool]) -> bool | None:
    """Preempt/reclaim for one task with the cheapest victim set over all candidate `nodes`.

    Victims on a node are those the policy's `callback` rules (`preemptable` / `reclaimable`) return
    for the `keep` candidates there, as in Volcano; the chosen subset is evicted into a local statement
    and kept only when `fits(node)` — the action's own final check — then holds. True: placed
    (pipelined, merged into `stmt`); False: no node can hold it; None: undecided here, the caller runs
    Volcano's greedy choice instead."""
    from vpolicy.engine.actions.evict_common import candidates_on, fits_with, ordered_victims

    rules: dict[str, str] = {}

    def allowed(node: NodeInfo) -> list[TaskInfo]:
        candidates = candidates_on(node, keep)
        if not candidates or not fits_with(candidates, preemptor, node):
            return []
        victims, rule = ctx.runtime.victims(callback, preemptor, candidates)
        rules[node.name] = rule.label.location if rule else ""
        return victims

    choices = cheapest_choices(preemptor, nodes, allowed)
    if choices is None or preemptor.job is None:
        return None
    if not choices:
        return False
    for choice in choices:
        local = ctx.statement()
        for victim in ordered_victims(ctx, choice.victims, preemptor):
            local.evict(victim, action=action, for_job=preemptor.job.key, rule=rules[choice.node.name])
        if fits(choice.node):
            local.pipeline(preemptor, choice.node.name)
            stmt.merge(local)
            return True
        local.discard()
    return None


def configure(placement: "Placement") -> None:
    """Switch a session's placement to optimize mode: every feasible node searched, GPU best fit."""
    placement.sample = False
    placement.pack = Packer(placement.arrays)
