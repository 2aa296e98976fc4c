"""optimize mode's joint victim plan: for the preemptors Volcano's run placed, the nodes and victims
that together evict the fewest GPU pods.

Why joint: the cheapest victims for each preemptor in turn are not the cheapest for the action. A
preemptor that evicts one 4-GPU pod where Volcano evicted four 1-GPU pods saves three pods, but it
may take the node a later gang needed, or leave its queue holding more than its deserved share, so
the later gang no longer fits (on the generated preemption clusters at M, seeds 1-3, the one-by-one
choice placed 180 of 184, 188 of 196 and 120 of 152 GPUs, and never_worse threw it away). Choosing
for all of Volcano's preemptors at once keeps room for every one of them.

The plan is a mixed-integer program, solved by HiGHS (`scipy.optimize.milp`):
- x[p, n] = 1: preemptor p goes to node n, one of its `Option`s (a node the rules let it use, with the
  victims the policy's rules allow it there); each planned preemptor goes to exactly one node;
- y[v] = 1: victim v is evicted, only if a preemptor it is allowed for goes to its node;
- on every node and for every resource the preemptors ask for (and cpu, memory), the preemptors' requests
  fit its FutureIdle plus what its victims release;
- at most `budgets[job]` victims of a job (the rules' own limit across nodes, e.g. gang's ready -
  minMember);
- the victims of a queue release at least `floors[queue]` (what Volcano's run evicted there: with the
  same preemptors placed, the queue then ends holding no more than after Volcano's run, so an
  allocatable check that let Volcano's run end there lets this one end there too);
- objective: fewest evicted GPU pods, then fewest GPUs, then fewest pods, then the lowest priorities.

The plan is advice, never a decision: the action replays it preemptor by preemptor through its usual
checks (the rules' victims now, the fit, allocatable, predicates) and makes its own choice wherever the
plan no longer holds; `never_worse` then compares the whole run with Volcano's, as for any optimize run.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vpolicy.engine.state import NodeInfo, TaskInfo
from vpolicy.model.resources import CPU, MEMORY, Resources

# The objective's weights rank victim sets as `optimize.victim_cost` does: fewest GPU pods, then fewest
# GPUs, then fewest pods, then lowest priorities (a share of one pod spread over the priority ranks).
GPU_POD_WEIGHT = 1e6
GPU_WEIGHT = 1e3
POD_WEIGHT = 1.0
PRIORITY_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Option:
    """A node a preemptor may use, and the victims the policy's rules allow it to evict there."""

    node: NodeInfo
    victims: tuple[TaskInfo, ...]


@dataclass(frozen=True, slots=True)
class VictimPlan:
    node_of: dict[str, str]  # preemptor uid -> node name
    victims_on: dict[str, tuple[TaskInfo, ...]]  # node name -> the victims planned there


# Above this many (options list, node) pairs, the program's columns once alike preemptors are grouped
# (`_groups`), each list keeps only its cheapest nodes. With a column per (preemptor, node) HiGHS took
# 6-12 s on the 51,000 pairs of an L cluster (246 preemptors); grouped they are 528 columns (0.23 s).
MAX_PAIRS = 5_000
MIN_OPTIONS = 8  # nodes kept per options list however many lists there are


def cheapest_options(found: Sequence[Option], limit: int, *, need: int, gpus: Callable[[TaskInfo], int],
                     room: Callable[[NodeInfo], int], keep: Collection[str] = ()) -> list[Option]:
    """The `limit` options that look cheapest alone for a preemptor that needs `need` GPUs: the fewest
    GPU pods, then GPUs, evicted when its largest victims go first until the node's free GPUs (`room`)
    hold it, ties in the given (node) order; the options on the nodes `keep` (where Volcano's run placed
    the preemptors that have these options, so the plan can always do what Volcano did) are kept too. A node whose victims can never free enough
    counts as dearest: together with other preemptors' victims it may still serve."""
    def cost(option: Option) -> tuple[int, int]:
        short, pods, taken = need - room(option.node), 0, 0
        for v in sorted(option.victims, key=gpus, reverse=True):
            if short <= 0:
                break
            g = gpus(v)
            short, pods, taken = short - g, pods + (1 if g else 0), taken + g
        return (pods, taken) if short <= 0 else (1 << 30, 1 << 30)

    ranked = sorted(range(len(found)), key=lambda i: cost(found[i]))[:limit]
    chosen = set(ranked) | {i for i, o in enumerate(found) if o.node.name in keep}
    return [found[i] for i in sorted(chosen)]


def load_solver() -> tuple[Any, Any, Any, Any]:
    """scipy's MILP and what builds its input, imported on first use: importing scipy takes 0.3-0.5 s,
    which every command that never plans (most of them) would pay, and which an optimize session
    should not pay inside its budget (`optimize.configure` loads it as the session starts)."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # type: ignore[import-untyped]  # reason: no stubs
    from scipy.sparse import coo_array  # type: ignore[import-untyped]  # reason: no stubs
    return Bounds, LinearConstraint, milp, coo_array


def plan_victims(preemptors: Sequence[TaskInfo], options: Callable[[TaskInfo], Sequence[Option]], *,
                 gpus: Callable[[TaskInfo], int], budgets: Mapping[str, int],
                 floors: Mapping[str, Resources], time_limit: float) -> VictimPlan | None:
    """The plan for `preemptors` (module docstring); None when no plan places every one of them, or
    the solver found none within `time_limit` seconds. `budgets` is keyed by victim job key, `floors`
    by victim queue name; `gpus` counts a victim's whole GPUs.

    Preemptors with the same request and the same options (nodes and victims) are one column per node,
    an integer count (`_groups`): they are interchangeable, and one 0/1 column per preemptor gave HiGHS
    as many symmetric solutions to branch over (an L cluster's 246 GPU preemptors are 4 such groups;
    their 51,118 (preemptor, node) columns, 6-12 s of HiGHS, are 528 of them)."""
    Bounds, LinearConstraint, milp, coo_array = load_solver()

    groups = _groups(preemptors, options)
    if groups is None:
        return None
    pairs: list[tuple[int, NodeInfo, tuple[TaskInfo, ...]]] = []  # x columns: (group, node, its victims)
    for i, (_members, found) in enumerate(groups):
        pairs.extend((i, o.node, o.victims) for o in found)
    victims: dict[str, TaskInfo] = {}
    for _i, _node, allowed in pairs:
        for v in allowed:
            victims.setdefault(v.uid, v)
    column = {uid: len(pairs) + k for k, uid in enumerate(victims)}
    n_cols = len(pairs) + len(victims)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def constrain(entries: Sequence[tuple[int, float]], low: float, high: float) -> None:
        row = len(lower)
        for col, val in entries:
            rows.append(row)
            cols.append(col)
            vals.append(val)
        lower.append(low)
        upper.append(high)

    columns_of: list[list[int]] = [[] for _ in groups]
    nodes: dict[str, NodeInfo] = {}
    placed_on: dict[str, list[tuple[int, TaskInfo]]] = {}  # node name -> (x column, a member of its group)
    for k, (i, node, _v) in enumerate(pairs):
        columns_of[i].append(k)
        nodes[node.name] = node
        placed_on.setdefault(node.name, []).append((k, groups[i][0][0]))
    for (members, _found), ks in zip(groups, columns_of):  # each preemptor on one node
        constrain([(k, 1.0) for k in ks], float(len(members)), float(len(members)))
    dims = sorted({CPU, MEMORY}.union(*(p.resreq.keys() for p in preemptors)))
    on_node: dict[str, list[TaskInfo]] = {name: [] for name in nodes}
    for v in victims.values():
        on_node[v.node_name].append(v)
    for name, node in nodes.items():  # room on every node
        here = placed_on[name]
        for d in dims:
            entries = [(k, float(p.resreq.get(d, 0))) for k, p in here]
            entries += [(column[v.uid], -float(v.resreq.get(d, 0))) for v in on_node[name]]
            _scaled(constrain, entries, -np.inf, float(node.future_idle.get(d, 0)))  # empty: asked by none
    allowed_by: dict[str, list[int]] = {}
    for k, (_i, _node, allowed) in enumerate(pairs):
        for v in allowed:
            allowed_by.setdefault(v.uid, []).append(k)
    for uid, ks in allowed_by.items():  # a victim only for a preemptor placed on its node
        constrain([(column[uid], 1.0), *((k, -1.0) for k in ks)], -np.inf, 0.0)
    by_job: dict[str, list[TaskInfo]] = {}
    by_queue: dict[str, list[TaskInfo]] = {}
    for v in victims.values():
        if v.job is not None:
            by_job.setdefault(v.job.key, []).append(v)
            by_queue.setdefault(v.job.queue.name, []).append(v)
    for key, members in by_job.items():
        if key in budgets:
            constrain([(column[v.uid], 1.0) for v in members], -np.inf, float(budgets[key]))
    for queue, floor in floors.items():
        for d, amount in floor.items():
            if amount > 0:
                entries = [(column[v.uid], float(v.resreq.get(d, 0))) for v in by_queue.get(queue, ())]
                if not _scaled(constrain, entries, float(amount), np.inf):
                    return None  # no victim there releases that resource
    objective = np.zeros(n_cols)
    ranks = {prio: r for r, prio in enumerate(sorted({v.priority for v in victims.values()}))}
    for uid, v in victims.items():
        g = gpus(v)
        objective[column[uid]] = ((GPU_POD_WEIGHT if g else 0.0) + GPU_WEIGHT * g + POD_WEIGHT
                                  + PRIORITY_WEIGHT * ranks[v.priority] / max(1, len(ranks)))
    upper_x = np.ones(n_cols)
    upper_x[:len(pairs)] = [len(groups[i][0]) for i, _node, _v in pairs]
    matrix = coo_array((vals, (rows, cols)), shape=(len(lower), n_cols)).tocsr()
    result = milp(objective, constraints=LinearConstraint(matrix, np.array(lower), np.array(upper)),
                  bounds=Bounds(np.zeros(n_cols), upper_x), integrality=np.ones(n_cols),
                  options={"time_limit": max(0.01, time_limit), "mip_rel_gap": 0.0})
    if result.x is None:
        return None
    counts = np.rint(result.x).astype(int)
    node_of: dict[str, str] = {}
    for (members, _found), ks in zip(groups, columns_of):  # the group's members in their order, node by node
        slots = [pairs[k][1].name for k in ks for _ in range(counts[k])]
        node_of.update((p.uid, name) for p, name in zip(members, slots))
    victims_on: dict[str, list[TaskInfo]] = {}
    for uid, v in victims.items():
        if counts[column[uid]] > 0:
            victims_on.setdefault(v.node_name, []).append(v)
    return VictimPlan(node_of, {name: tuple(vs) for name, vs in victims_on.items()})


def _groups(preemptors: Sequence[TaskInfo], options: Callable[[TaskInfo], Sequence[Option]]
            ) -> list[tuple[list[TaskInfo], Sequence[Option]]] | None:
    """The preemptors that are interchangeable in the plan, in their order, with their options: the
    same request and the same nodes with the same victims. None when one has no option. The options of
    one preemptor kind are one list (`options` keeps them), so most are told apart by identity."""
    # id(options list) -> the list (held, so that its id is not reused) and its content
    by_list: dict[int, tuple[Sequence[Option], tuple[object, ...]]] = {}
    found: dict[tuple[object, ...], tuple[list[TaskInfo], Sequence[Option]]] = {}
    for p in preemptors:
        listed = options(p)
        if not listed:
            return None
        known = by_list.get(id(listed))
        if known is None:
            known = by_list[id(listed)] = (listed, tuple((o.node.name, tuple(v.uid for v in o.victims))
                                                         for o in listed))
        content = known[1]
        key = (tuple(sorted(p.resreq.items())), content)
        if key not in found:
            found[key] = ([], listed)
        found[key][0].append(p)
    return list(found.values())


def _scaled(constrain: Callable[[Sequence[tuple[int, float]], float, float], None],
            entries: Sequence[tuple[int, float]], low: float, high: float) -> bool:
    """One constraint divided by its largest coefficient (bytes of memory, 10^12, beside 0/1 columns
    would strain the solver's tolerances); False when it has no coefficient and 0 is outside [low, high]."""
    entries = [(c, v) for c, v in entries if v]
    scale = max((abs(v) for _c, v in entries), default=0.0)
    if scale == 0.0:
        return low <= 0.0 <= high
    constrain([(c, v / scale) for c, v in entries], low / scale, high / scale)
    return True
