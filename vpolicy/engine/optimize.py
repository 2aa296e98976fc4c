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
- victims (`evict_cheapest`, for a preemptor where GPUs are at stake: `weighs_gpus`): on every
  candidate node the cheapest sufficient subset of the allowed victims is found by an exact
  branch-and-bound (fewest evicted GPU pods, then fewest GPUs, fewest pods, lowest priority, least
  runtime lost), and the node whose set is cheapest is used; a node where the preemptor already fits
  FutureIdle (room released by earlier evictions) costs nothing and wins, victim or none (Volcano's
  ValidateVictims asks for none). A search that runs out of its step budget, or a set the final fit
  check rejects, falls back to Volcano's greedy choice: the budget never yields a wrong decision, only
  a less good one.
- joint victim plan (`victim_plan`, preempt): the preemptors Volcano's run placed get their nodes and
  victims chosen all at once by a mixed-integer program (fewest evicted GPU pods for all of them),
  which the optimize run replays through the usual checks (`evict_planned`) before searching on its
  own; cheapest victims one preemptor at a time can leave less room for the next.
- whole evicting actions (`never_worse`): preempt and reclaim run once as Volcano would and once (or,
  for a plan that placed less, twice) as optimize would, and the optimize run is kept only when it
  does better: places more, or as much with cheaper victims (else Volcano's is put back).

This module decides nothing about feasibility (see `placement`, `runtime`) and applies evictions only
through a `Statement`; the actions call it through one-line hooks when `ActionContext.mode` says so.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from vpolicy.engine.state import NodeArrays, NodeInfo, TaskInfo
from vpolicy.engine.statement import undo
from vpolicy.engine.victim_plan import load_solver
from vpolicy.model.resources import CPU, MEMORY, Resources
from vpolicy.model.snapshot import TaskStatus

if TYPE_CHECKING:
    from vpolicy.engine.actions.context import ActionContext
    from vpolicy.engine.placement import Placement
    from vpolicy.engine.statement import Operation, Statement

MODES = ("volcano", "optimize")
SEARCH_STEPS = 20_000  # branch-and-bound steps per node before falling back to the greedy victim order


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown engine mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode


def is_gpu_dim(name: str) -> bool:
    """Whole-GPU resources: `nvidia.com/gpu`, `amd.com/gpu`, Volcano's `volcano.sh/gpu-number`."""
    known = _GPU_DIMS.get(name)
    if known is None:
        known = _GPU_DIMS[name] = name.endswith("/gpu") or name == "gpu" or name.endswith("gpu-number")
    return known


# resource name -> is_gpu_dim: a cluster has a handful of names, and the victim search asks for every
# candidate of every node it weighs
_GPU_DIMS: dict[str, bool] = {}


def gpus(res: Resources) -> int:
    """Whole GPUs a request asks for (resources hold milli-units, so 1000 per GPU)."""
    total = 0
    for name, value in res.items():
        if is_gpu_dim(name):
            total += value
    return total // 1000


def budget_clock() -> float:
    """The clock optimize's session budget is counted on: CPU seconds of the thread running the session
    (`time.thread_time`), not wall time. On a machine shared with other work the wall clock runs on while
    the session waits for a core, and a 1 s budget of wall time ran out at M on the preemption workload
    (17x wall to CPU): optimize then kept Volcano's run where on a quiet machine it evicted 0.54x the GPU
    pods, and the same snapshot gave other decisions at other loads. Counted in the session's own CPU the
    budget is the work optimize may add, the decisions do not depend on what else the machine runs, and
    on a scheduler with a core to itself the two clocks agree. The thread's, not the process's: the live
    scheduler's informer threads share the process and are not the session's work."""
    return time.thread_time()


# placement ---------------------------------------------------------------------------------------
class Packer:
    """Best fit on GPUs among the rows the policy allows, the policy's score breaking ties."""

    def __init__(self, arrays: NodeArrays):
        self.arrays = arrays
        self.gpu_cols = [i for d, i in arrays.index.items() if is_gpu_dim(d)]
        self.gpu_nodes: np.ndarray | None = (
            np.asarray((arrays.allocatable[:, self.gpu_cols] > 0).any(axis=1)) if self.gpu_cols else None)
        self._reaches_gpus: dict[int, tuple[np.ndarray, bool]] = {}  # id(reach) -> (reach, any GPU node)

    def __call__(self, task: TaskInfo, group: np.ndarray, scores: np.ndarray, idle: bool,
                 reach: np.ndarray | None = None) -> int:
        """The row of the node to use among the nodes `group` marks (a mask over every node); `scores`
        holds the policy's score per node (read on the group only); `idle` says the group fits Idle now
        (else FutureIdle); `reach`, when given, marks every node the task's class could ever use (its
        static predicates), so a CPU task that can reach no GPU node skips the GPU check. Masks over
        whole columns, not index lists: with no sampling the group is most of the cluster, and gathering
        it row by row cost more than the choice."""
        if self.gpu_cols and (gpus(task.resreq) or self._reaches_gpu_nodes(reach)):
            available = self.arrays.idle_now if idle else self.arrays.future
            cols = self.gpu_cols
            free = available[:, cols[0]] if len(cols) == 1 else available[:, cols].sum(axis=1)
            # the least GPU left over (or, for a CPU task, no free GPU), then the highest score, then the
            # first row (as Volcano's argmax): the order a lexsort on (row, -score, key) gives, unsorted
            if gpus(task.resreq):
                left = np.where(group, free, np.inf)
                group = left == left.min()
            else:
                no_gpu = group & (free <= 0)
                if no_gpu.any():
                    group = no_gpu
        return int(np.where(group, scores, -np.inf).argmax())

    def choose_among(self, task: TaskInfo, rows: np.ndarray, scores: np.ndarray, idle: bool,
                     reach: np.ndarray | None = None) -> int:
        """`__call__` among a few ascending `rows` (`scores` one per row): the same node, without masks
        over every node (a HyperNode's rows in a domain's dry run)."""
        wants = gpus(task.resreq) if self.gpu_cols else 0
        if self.gpu_cols and (wants or self._reaches_gpu_nodes(reach)):
            available = self.arrays.idle_now if idle else self.arrays.future
            cols = self.gpu_cols
            free = available[rows, cols[0]] if len(cols) == 1 else available[rows][:, cols].sum(axis=1)
            keep: np.ndarray | None
            if wants:
                keep = free == free.min()
            else:
                keep = free <= 0
                if not keep.any():
                    keep = None
            if keep is not None:
                rows, scores = rows[keep], scores[keep]
        return int(rows[int(scores.argmax())])

    def _reaches_gpu_nodes(self, reach: np.ndarray | None) -> bool:
        if reach is None or self.gpu_nodes is None:
            return True
        kept = self._reaches_gpus.get(id(reach))
        if kept is None or kept[0] is not reach:
            kept = self._reaches_gpus[id(reach)] = (reach, bool((reach & self.gpu_nodes).any()))
        return kept[1]


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
    ran out of `steps` before proving its best answer optimal.

    Interchangeable victims (same request, GPU count and priority) form one group, and the search
    picks how many of each group to take (the most recently created first), so identical pods do not
    multiply the search; branches whose lower bound (GPU pods, GPUs and pods still needed) is no better
    than the best set found are cut."""
    dims = sorted({CPU, MEMORY, *request})
    need_all = [request.get(d, 0) - available.get(d, 0) for d in dims]
    if all(n <= 0 for n in need_all):
        return [], ZERO_COST
    live = [i for i, n in enumerate(need_all) if n > 0]
    need = [need_all[i] for i in live]
    gpu_live = [j for j, i in enumerate(live) if is_gpu_dim(dims[i])]
    by_key: dict[tuple[tuple[int, ...], tuple[int, int, int, int]], list[TaskInfo]] = {}
    for v in victims:
        vec = tuple(v.resreq.get(dims[i], 0) for i in live)
        if any(vec):
            c = victim_cost(v)
            by_key.setdefault((vec, (c[0], c[1], c[2], c[3])), []).append(v)
    groups = sorted(by_key.items(), key=lambda kv: kv[0][1])
    for _key, members in groups:
        members.sort(key=lambda t: -t.pod.creation)  # newest first: least runtime lost
    vecs = [list(key[0]) for key, _m in groups]
    sizes = [len(m) for _k, m in groups]
    prefix: list[list[Cost]] = []
    for _key, members in groups:
        acc, row = ZERO_COST, [ZERO_COST]
        for t in members:
            acc = _add(acc, victim_cost(t))
            row.append(acc)
        prefix.append(row)
    g = len(groups)
    total = [[0] * len(live) for _ in range(g + 1)]
    top = [[0] * len(live) for _ in range(g + 1)]
    for i in range(g - 1, -1, -1):
        total[i] = [a + b * sizes[i] for a, b in zip(total[i + 1], vecs[i])]
        top[i] = [max(a, b) for a, b in zip(top[i + 1], vecs[i])]
    if any(t < q for t, q in zip(total[0], need)):
        return None
    best: list[tuple[Cost, list[int]]] = []
    budget = [steps]

    def bound(i: int, left: list[int], cost: Cost) -> Cost:
        pods = max((-(-x // top[i][j]) for j, x in enumerate(left) if x > 0), default=0)
        gpu_left = sum(max(0, left[j]) for j in gpu_live)
        gpu_top = max((top[i][j] for j in gpu_live), default=0)
        gpu_pods = -(-gpu_left // gpu_top) if gpu_left and gpu_top else 0
        return (cost[0] + gpu_pods, cost[1] + gpu_left // 1000, cost[2] + pods, cost[3], float("-inf"))

    def search(i: int, left: list[int], cost: Cost, counts: list[int]) -> None:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        if all(x <= 0 for x in left):
            if not best or cost < best[0][0]:
                best[:] = [(cost, list(counts))]
            return
        if i == g or any(t < x for t, x in zip(total[i], left)):
            return
        if best and bound(i, left, cost) >= best[0][0]:
            return
        vec = vecs[i]
        most = min(sizes[i], max(-(-x // v) for x, v in zip(left, vec) if x > 0 and v > 0)
                   if any(x > 0 and v > 0 for x, v in zip(left, vec)) else 0)
        for c in range(most, -1, -1):
            counts.append(c)
            search(i + 1, [x - v * c for x, v in zip(left, vec)],
                   _add(cost, prefix[i][c]) if c else cost, counts)
            counts.pop()

    search(0, need, ZERO_COST, [])
    # `search` calls itself through its closure cell, a reference cycle holding every list above; a
    # session runs with the cyclic collector paused, so the cycle is broken here, not left to it
    search = None  # type: ignore[assignment]  # reason: breaks the self-reference
    if budget[0] <= 0 or not best:
        return None
    cost, counts = best[0]
    chosen = [t for (_key, members), c in zip(groups, counts) for t in members[:c]]
    return chosen, cost


@dataclass(slots=True)
class VictimChoice:
    node: NodeInfo
    victims: list[TaskInfo]
    cost: Cost
    rank: int  # the node's place in the action's own node order (ties go to the earlier node)


Bound = tuple[Cost, list[TaskInfo]] | None


def cheapest_choices(preemptor: TaskInfo, nodes: Sequence[NodeInfo], bound_of: Callable[[NodeInfo], Bound],
                     victims_of: Callable[[NodeInfo, list[TaskInfo]], list[TaskInfo]]) -> list[VictimChoice] | None:
    """The cheapest sufficient victim set on the best node, then on any node that ties with it or was
    searched on the way; cheapest first. None when a search ran out of budget on a node that could
    hold the preemptor (the caller then keeps Volcano's choice).

    Victims are a subset of the candidates, so the cheapest set over a node's candidates bounds its
    cost from below without calling the policy's victim rules: nodes are visited by that bound
    (`bound_of`, see `node_bound`) and the visit stops once the bound exceeds the best set found
    (branch and bound across nodes)."""
    bounded: list[tuple[Cost, int, NodeInfo, list[TaskInfo]]] = []
    for rank, node in enumerate(nodes):
        lowest = bound_of(node)
        if lowest is not None:
            bounded.append((lowest[0], rank, node, lowest[1]))
    bounded.sort(key=lambda b: (b[0], b[1]))
    out: list[VictimChoice] = []
    for low, rank, node, candidates in bounded:
        if out and low > out[0].cost:
            break
        victims = victims_of(node, candidates) if candidates else []
        found = cheapest_subset(preemptor.resreq, node.future_idle, victims)
        if found is None:
            if _covers_with(preemptor.resreq, node.future_idle, victims):
                return None  # feasible but not proven cheapest within the budget
            continue
        chosen, cost = found
        # an empty set is the cheapest of all: the preemptor already fits FutureIdle (resources released
        # by earlier evictions); Volcano pipelines it there too, victims or none (ValidateVictims)
        out.append(VictimChoice(node, chosen, cost, rank))
        out.sort(key=lambda c: (c.cost, c.rank))
    return out


def node_bound(preemptor: TaskInfo, node: NodeInfo, candidates: list[TaskInfo] | None) -> Bound:
    """The cost of the cheapest sufficient set among the node's candidates (a lower bound for the
    victims the rules allow there) with those candidates; zero when the search ran out but the
    candidates could free enough (no bound known); None when the node cannot help. It depends on the
    node alone (its tasks and FutureIdle, and the candidate filter)."""
    if candidates is None:
        return None
    cheapest = cheapest_subset(preemptor.resreq, node.future_idle, candidates)
    if cheapest is not None:
        return cheapest[1], candidates
    if _covers_with(preemptor.resreq, node.future_idle, candidates):
        return ZERO_COST, candidates
    return None


def _covers_with(request: Resources, available: Resources, victims: Sequence[TaskInfo]) -> bool:
    total = available
    for v in victims:
        total = total + v.resreq
    return _covers(request, total)


def _covers(request: Resources, available: Resources) -> bool:
    dims = {CPU, MEMORY, *request}
    return all(request.get(d, 0) <= available.get(d, 0) for d in dims)


def weighs_gpus(placement: "Placement", preemptor: TaskInfo, nodes: Sequence[NodeInfo]) -> bool:
    """Whether the cheapest victim search serves this preemptor: it asks for GPUs, or one of its
    candidate nodes has GPUs whose pods it could evict. A preemptor of CPU only among CPU nodes keeps
    Volcano's greedy choice: lowest-priority victims first, and room its larger evictions leave for
    the next preemptor (at M on the preemption workload the cheapest CPU victim sets placed 45 fewer
    CPU pods of 900, saving no GPU)."""
    if gpus(preemptor.resreq):
        return True
    gpu_nodes = _gpu_nodes(placement)
    if gpu_nodes is None:
        return False
    row = placement.arrays.row
    return any(gpu_nodes[row[n.name]] for n in nodes)


def _gpu_nodes(placement: "Placement") -> np.ndarray | None:
    """A mask over the node rows of the nodes with GPUs, as optimize's packer keeps it; None when
    the cluster has none (or placement is not optimize's)."""
    pack = placement.pack
    return pack.gpu_nodes if isinstance(pack, Packer) else None


def evict_cheapest(ctx: "ActionContext", stmt: "Statement", preemptor: TaskInfo, nodes: Sequence[NodeInfo],
                   *, callback: str, keep: Callable[[TaskInfo], bool], action: str,
                   fits: Callable[[NodeInfo], bool], kind: tuple[object, ...]) -> bool | None:
    """Preempt/reclaim for one task with the cheapest victim set over all candidate `nodes`.

    Victims on a node are those the policy's `callback` rules (`preemptable` / `reclaimable`) return
    for the `keep` candidates there, as in Volcano; the chosen subset is evicted into a local statement
    and kept only when `fits(node)` — the action's own final check — then holds. True: placed
    (pipelined, merged into `stmt`); False: no node can hold it; None: undecided here, the caller runs
    Volcano's greedy choice instead. `kind` names the preemptor's class and `keep` (same spec, same
    job, same filter): each node's bound is kept for its siblings until the node changes."""
    from vpolicy.engine.actions.evict_common import useful_candidates

    if ctx.out_of_time():
        return None  # the greedy choice finishes this job quickly; never_worse discards the run anyway
    rules: dict[str, str] = {}

    def bound(node: NodeInfo) -> Bound:
        return node_bound(preemptor, node, useful_candidates(ctx, node, keep, preemptor, kind,
                                                             need_one=action == "reclaim"))

    def allowed(node: NodeInfo, found: list[TaskInfo]) -> list[TaskInfo]:
        victims, rule = ctx.runtime.victims(callback, preemptor, found)
        rules[node.name] = rule.label.location if rule else ""
        return victims

    choices = cheapest_choices(preemptor, nodes, lambda node: ctx.kept_per_node(ctx.victim_bounds, kind, node, bound),
                               allowed)
    if choices is None or preemptor.job is None:
        return None
    if not choices:
        return False
    for choice in choices:
        if _evict_and_place(ctx, stmt, preemptor, choice.node, choice.victims, action=action,
                            rule=rules.get(choice.node.name, ""), fits=fits):  # none: no victims there
            return True
    return None


def _evict_and_place(ctx: "ActionContext", stmt: "Statement", preemptor: TaskInfo, node: NodeInfo,
                     victims: Sequence[TaskInfo], *, action: str, rule: str,
                     fits: Callable[[NodeInfo], bool]) -> bool:
    """Evict `victims` (in victim order) for `preemptor` in a statement of their own and pipeline it
    on `node` if `fits(node)` then holds, merging into `stmt`; otherwise undo them all."""
    from vpolicy.engine.actions.evict_common import ordered_victims

    assert preemptor.job is not None
    local = ctx.statement()
    for victim in ordered_victims(ctx, list(victims), preemptor):
        local.evict(victim, action=action, for_job=preemptor.job.key, rule=rule)
    if fits(node):
        local.pipeline(preemptor, node.name, eviction_occurred=local.evicts())
        stmt.merge(local)
        return True
    local.discard()
    return False


def witness_first(ctx: "ActionContext", preemptor: TaskInfo) -> NodeInfo | None:
    """The node Volcano's run of this action placed `preemptor` on (also in a statement it discarded),
    for the optimize run to try before any other: a preemptor of CPU only that Volcano placed on a node
    without GPUs. Its choice there costs no GPU, and the node walk it saves is what dominates preempt's
    time (at M on the preemption workload Volcano's run weighs about 36 nodes per CPU preemptor it
    places). A preemptor that asks for GPUs, or that Volcano placed on a GPU node, is left to the plan
    and the cheapest search."""
    name = ctx.witness_nodes.get(preemptor.uid)
    if name is None or gpus(preemptor.resreq):
        return None
    gpu_nodes = _gpu_nodes(ctx.placement)
    if gpu_nodes is not None and gpu_nodes[ctx.placement.arrays.row[name]]:
        return None
    return ctx.state.nodes[name]


def missed_by_volcano(ctx: "ActionContext", preemptor: TaskInfo) -> bool:
    """Whether Volcano's run of the action never placed this preemptor (not even in a statement it
    discarded), so that the optimize run, kept only when it does better than Volcano's (`never_worse`),
    does not need it. preempt then spends less of the session budget on it: a preemptor of CPU only
    is not searched for at all (it can gain no GPU), and one of GPUs gets the cheapest victim search
    but not Volcano's node walk after it, which failed it in Volcano's run. At M on the preemption
    workload, seeds 1 and 3, the two walks took 0.2-0.35 s and 0.14-0.26 s of a 0.6-0.8 s run and
    placed 6 CPU pods and no GPU pod; the search still finds the gangs that cheaper victims elsewhere
    leave room for (S seed 3: one of 8 GPUs)."""
    return ctx.witness is not None and preemptor.uid not in ctx.witness_nodes


def evict_planned(ctx: "ActionContext", stmt: "Statement", preemptor: TaskInfo, *, callback: str,
                  keep: Callable[[TaskInfo], bool], action: str, fits: Callable[[NodeInfo], bool]) -> bool:
    """Preempt for one task as the action's joint victim plan (`ctx.victim_plan`) says, if the
    rules still agree: on the planned node, the victims planned there that `keep` accepts and the
    `callback` rules allow now are evicted (the plan's victims on a node serve all its preemptors; the
    first takes them all, the others find the room), and the task is pipelined if `fits(node)` (the
    action's own final check: room, the queue's allocatable, predicates) then holds.
    True: placed (pipelined, merged into `stmt`); False: not planned, or the plan no longer holds
    (nothing is changed, and the caller chooses as it would without a plan)."""
    plan = ctx.victim_plan
    name = plan.node_of.get(preemptor.uid) if plan is not None else None
    if plan is None or name is None or preemptor.job is None:
        return False
    remaining = [v for v in plan.victims_on.get(name, ()) if keep(v)]
    victims, rule = ctx.runtime.victims(callback, preemptor, remaining) if remaining else ([], None)
    return _evict_and_place(ctx, stmt, preemptor, ctx.state.nodes[name], victims, action=action,
                            rule=rule.label.location if rule else "", fits=fits)


# whole actions -------------------------------------------------------------------------------------
EVICTING_ACTIONS = frozenset({"preempt", "reclaim"})


@dataclass(slots=True)
class _Trial:
    """One run of an action: the operations its statements committed, the last placements its discards
    recorded (each task with the one it had before), and where the outcome's lists stood before it."""

    journal: list["Operation"]
    marks: tuple[int, int, int]
    placements_kept: list[tuple[TaskInfo, tuple[str, str] | None]] = field(default_factory=list)

    def merit(self) -> tuple[int, int, int, int, int, int]:
        """GPUs placed, pods placed, then the victims' cost as `victim_cost` ranks it (fewer GPU pods,
        GPUs, pods, lower priorities): higher is better."""
        placed = [op.task for op in self.journal if op.kind != "evict"]
        evicted = [op.task for op in self.journal if op.kind == "evict"]
        return (sum(gpus(t.resreq) for t in placed), len(placed), -sum(1 for t in evicted if gpus(t.resreq)),
                -sum(gpus(t.resreq) for t in evicted), -len(evicted), -sum(t.priority for t in evicted))


def never_worse(ctx: "ActionContext", run: Callable[["ActionContext"], None], *, action: str) -> None:
    """Run an evicting action (preempt, reclaim) in optimize mode, never worse than Volcano's run of it.

    The cheapest victims for each preemptor in turn are not the cheapest for the action: Volcano's
    greedy order sometimes evicts a larger pod, and a later preemptor, of this job or another, takes
    the room left over without evicting anything (ValidateVictims asks for no victim), so the greedy
    run can place more. Volcano's run is taken first as the witness, kept aside and undone, then the
    optimize run is kept when its merit (`_Trial.merit`: GPUs placed, pods placed, then fewer evicted
    GPU pods, GPUs, pods, lower victim priorities) is above the witness's; otherwise it is undone and
    the witness's end state put back (the same decisions as a run of Volcano's, without running it
    again). A run only as good keeps Volcano's too: optimize departs from Volcano's choices only where
    that gains something, and even a run that decided the same may have left the nodes' tasks in
    another order (its discarded statements), where victims of equal order are taken in list order.

    The optimize run sees the witness's operations (`ctx.witness`), from which preempt makes its joint
    victim plan (`victim_plan`), and the node the witness placed each task on (`ctx.witness_nodes`),
    which preempt tries first for a CPU preemptor (`witness_first`). The first plan asks nothing of the queues; when its run places less
    (a queue's allocatable check refused a preemptor the plan had made too little room for), a second
    run plans with floors: each queue's victims release at least what Volcano's run evicted there.

    What optimize adds to the session, everything after Volcano's run (undoing it, the plans, the
    optimize runs, putting Volcano's end state back), must fit in what is left of the session budget
    (`ctx.budget_left`): Volcano's run is what Volcano would do anyway, and it alone can take longer
    than the schedule period (M on the preemption workload: 2 s), so a budget counted from the
    session's start would leave optimize nothing exactly where evictions are many. An optimize run is
    not started once the budget is spent, and one that runs out (`ctx.deadline`) stops at its next job
    and is discarded. Which run was kept, and why, goes to `ctx.optimize_runs` (the decision
    document's `stats.optimize`)."""
    state = ctx.state
    # a status change moves a task to the end of its node's list, and victims of equal order are taken
    # in list order: an undo puts the lists back as they were, or a later run could differ
    versions = state.arrays.version.copy()
    lists = {name: list(node.tasks) for name, node in state.nodes.items()}
    witness = _trial(ctx, run, "volcano")
    ctx.mode = "optimize"
    if ctx.budget_left is not None and ctx.budget_left <= 0:
        _kept(ctx, action, kept="volcano", reason="budget-spent")
        return
    started = budget_clock()
    ctx.deadline = None if ctx.budget_left is None else started + ctx.budget_left
    try:
        _improve(ctx, run, action, witness, versions, lists)
    finally:
        if ctx.budget_left is not None:
            ctx.budget_left -= budget_clock() - started


def _improve(ctx: "ActionContext", run: Callable[["ActionContext"], None], action: str, witness: _Trial,
             versions: np.ndarray, lists: dict[str, list[TaskInfo]]) -> None:
    """`never_worse` after Volcano's run (`witness`): its end state kept aside and undone, then the
    optimize run (or two), the better of them and Volcano's kept."""
    ended = _Ended.of(ctx, witness, versions)
    _undo(ctx, witness, versions, lists)
    ctx.optimize_stopped = False
    placed_on = ended.placed_on()
    for floored in (False, True):
        ctx.witness, ctx.plan_floored, ctx.victim_plan = witness.journal, floored, None
        ctx.witness_nodes = placed_on
        try:
            tried = _trial(ctx, run, "optimize")
        finally:
            planned, ctx.witness, ctx.victim_plan = ctx.victim_plan is not None, None, None
            ctx.witness_nodes = {}
        if ctx.optimize_stopped:
            reason = "budget-ran-out"
        elif tried.merit() < witness.merit():
            reason = "placed-less"
        elif tried.merit() == witness.merit():
            reason = "no-better"  # Volcano's end state then, its choices and task order on the nodes
        else:
            _kept(ctx, action, kept="optimize", reason="better")
            return
        _undo(ctx, tried, versions, lists)
        if reason != "placed-less" or not planned:
            break  # without a plan a second run would be the same run
    ended.restore(ctx)
    _kept(ctx, action, kept="volcano", reason=reason)


# Why never_worse kept the run it kept: the reason (short, a metric label) and its words for people.
KEPT_BECAUSE = {
    "better": "it placed more, or as much with fewer, smaller or lower-priority victims",
    "no-better": "the optimize run did no better than Volcano's",
    "placed-less": "the optimize run placed less, or evicted more, than Volcano's",
    "budget-spent": "optimize's earlier runs in the session had spent its budget",
    "budget-ran-out": "the optimize run stopped at the session budget",
}


def _kept(ctx: "ActionContext", action: str, *, kept: str, reason: str) -> None:
    ctx.optimize_runs[action] = {"kept": kept, "reason": reason, "why": KEPT_BECAUSE[reason]}


def _trial(ctx: "ActionContext", run: Callable[["ActionContext"], None], mode: str) -> _Trial:
    outcome = ctx.outcome
    marks = (len(outcome.dispatched), len(outcome.pipelined), len(outcome.evicted))
    outcome.journal, outcome.placements_kept, ctx.mode = [], [], mode
    try:
        run(ctx)
        return _Trial(outcome.journal, marks, outcome.placements_kept)
    finally:
        outcome.journal = outcome.placements_kept = None


def _undo(ctx: "ActionContext", trial: _Trial, versions: np.ndarray, lists: dict[str, list[TaskInfo]]) -> None:
    """Every committed operation of the trial reverted, last first, the outcome as before it, and the
    task lists of the nodes changed since `versions` as `lists` kept them."""
    state = ctx.state
    for op in reversed(trial.journal):
        undo(state, op)
    for task, before in reversed(trial.placements_kept):
        task.last_placement = before
    _put_lists(ctx, versions, lists)
    outcome = ctx.outcome
    dispatched, pipelined, evicted = trial.marks
    del outcome.dispatched[dispatched:], outcome.pipelined[pipelined:], outcome.evicted[evicted:]


def _put_lists(ctx: "ActionContext", versions: np.ndarray, lists: dict[str, list[TaskInfo]]) -> None:
    """The task lists of the nodes changed since `versions`, as `lists` holds them."""
    for node in _changed_since(ctx, versions):
        node.tasks[:] = lists[node.name]


def _changed_since(ctx: "ActionContext", versions: np.ndarray) -> list[NodeInfo]:
    """The nodes whose version moved since `versions` was copied from the node arrays."""
    node_list = ctx.placement.node_list  # row i of the arrays
    return [node_list[row] for row in np.flatnonzero(ctx.state.arrays.version != versions)]


@dataclass(slots=True)
class _Ended:
    """Where a trial left the session: each committed operation's task status, node and nomination
    flag (in the operations' order), the last placements its discards recorded, the task lists of the
    nodes it changed, and what it added to the outcome."""

    ends: list[tuple["Operation", TaskStatus, str, bool]]
    placements: list[tuple[TaskInfo, tuple[str, str] | None]]
    lists: dict[str, list[TaskInfo]]
    added: tuple[list[TaskInfo], list[TaskInfo], list["Operation"]]

    @classmethod
    def of(cls, ctx: "ActionContext", trial: _Trial, versions: np.ndarray) -> "_Ended":
        outcome = ctx.outcome
        dispatched, pipelined, evicted = trial.marks
        return cls([(op, op.task.status, op.task.node_name, op.task.eviction_occurred) for op in trial.journal],
                   [(task, task.last_placement) for task, _before in trial.placements_kept],
                   {node.name: list(node.tasks) for node in _changed_since(ctx, versions)},
                   (outcome.dispatched[dispatched:], outcome.pipelined[pipelined:], outcome.evicted[evicted:]))

    def placed_on(self) -> dict[str, str]:
        """Task uid -> the node the trial placed it on, or last placed it on in a statement it then
        discarded (a gang that did not complete)."""
        found = {task.uid: placement[1] for task, placement in self.placements if placement is not None}
        found.update({op.task.uid: node_name for op, _status, node_name, _flag in self.ends if op.kind != "evict"})
        return found

    def restore(self, ctx: "ActionContext") -> None:
        """Put the session back where the trial left it (from where it started)."""
        state = ctx.state
        for op, status, node_name, eviction_occurred in self.ends:
            state.set_status(op.task, status, node_name)
            op.task.eviction_occurred = eviction_occurred
            if op.kind == "evict":
                op.task.evicted = True
        for task, placement in self.placements:
            task.last_placement = placement
        # every node the trial changed, also where only a discarded statement reordered its tasks
        for name, tasks in self.lists.items():
            state.nodes[name].tasks[:] = tasks
        outcome = ctx.outcome
        dispatched, pipelined, evicted = self.added
        outcome.dispatched.extend(dispatched)
        outcome.pipelined.extend(pipelined)
        outcome.evicted.extend(evicted)


def configure(placement: "Placement", actions: Sequence[str]) -> None:
    """Switch a session's placement to optimize mode: every feasible node searched, GPU best fit; and,
    when an evicting action is to run, load the victim plan's solver now, outside the session budget
    (`victim_plan.load_solver`)."""
    placement.sample = False
    placement.pack = Packer(placement.arrays)
    if EVICTING_ACTIONS.intersection(actions):
        load_solver()
