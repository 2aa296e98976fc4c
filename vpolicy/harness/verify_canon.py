"""The worlds of `verify_worlds`' space that a policy can tell apart: one run for each, with a count of
the worlds it stands for, so that a bound is searched exhaustively in a fraction of its size.

Two worlds are merged only when the exact engine must decide the same in both (up to renaming jobs
and queues) and every property is judged the same. Each merge has its reason:

1. **Same cluster.** Different choices can build one cluster: a Running job that fits nowhere is an
   Inqueue job; two start nodes may lead to the same placements. Worlds are keyed by what is built.
2. **Fields the policy never reads** (found by reading every compiled term of the policy, `blind_spots`):
   a queue's parent when no rule reads the queue tree (with at most two queues, where `verify`'s cycle
   check draws no subtree edge); `reclaimable` when the policy runs no reclaim and no rule reads it;
   `weight` when no rule reads it (nor `water_fill`, which does).
3. **Queues without jobs**, when the policy reaches queues only through their jobs (every use of
   `cluster.queues` is `list(q in cluster.queues where len(q.jobs) > 0)`) and not through the tree.
   The engine hands rules only the queues of jobs; no property check looks at a queue without jobs.
   Such queues are dropped and the others keep their order (a world with jobs in q1 only is the
   one-queue world). When the policy also sums every queue's guarantee (`sum(q in cluster.queues:
   q.guarantee)`, as proportion and capacity hold an idle queue's guarantee back), a queue without
   jobs is kept but only its guarantee tells it apart: its other profiles are one.
4. **Creation order of jobs in different queues**, when no rule reads names, uids, creation times or
   annotations, every `tasks`/`jobs` list is only counted or quantified, and victim rules carry state
   only per job or per queue. The engine compares jobs only within a queue (queue heaps, job heaps
   per queue, victims by queue, then job, then task: strict orders, so a heap pops the same whatever
   the insertion order). The one place where jobs of different queues are taken in snapshot order is
   preempt's second phase (Volcano walks a map there); worlds where more than one job holds both a
   running and a pending task are therefore not merged when the policy preempts.

What is *not* merged: nodes. The engine breaks score ties by node order and reclaim visits nodes in
order (Volcano picks at random and walks a map), so a world and its mirror image can decide
differently and both are run. Likewise jobs of one queue (their creation order decides ties).

`tests/harness/test_verify_canon.py` checks the reductions: weights add up to the space, every world
of a small space maps to an enumerated one, and a world decides what its representative decides.
"""
from __future__ import annotations

import itertools
import math
from collections import defaultdict
from functools import lru_cache
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Iterable, Iterator

from vpolicy.compile import ir
from vpolicy.engine.session import CompiledPolicy
from vpolicy.harness import verify_worlds as vw
from vpolicy.model import snapshot as snap

# Naive spaces up to this size are enumerated canonically (bound 2 has 1.7 million worlds; bound 3,
# 1.8e10, is only ever sampled).
MAX_SPACE = 5_000_000
# Worlds with at most this many queues may drop queues without jobs and erase parents: with three
# queues the cycle check draws subtree edges from parents.
_ERASABLE_QUEUES = 2
_TREE_ATTRS = frozenset({"parent", "ancestors", "children", "is_leaf", "tree_allocated", "tree_inqueue"})
_IDENTITY_ATTRS = frozenset({"name", "key", "uid", "creation", "annotations"})
_ORDER_FREE_AGGS = frozenset({"count", "all", "any", "max", "min"})
_LISTS_OF_JOBS_OR_TASKS = frozenset({"jobs", "tasks"})


# A job as built: (queue, high, (tasks, minMember, cpu millis, pod priorities), state, placements)
_Job = tuple[int, bool, tuple[object, ...], str, "tuple[int, ...] | None"]
_Class = tuple[tuple[int, ...], tuple[bool, ...], tuple[_Job, ...]]  # nodes, parent of each queue, jobs
# The class of a world: node cpus, profile class of each queue, parent of each queue, jobs
Key = tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...], tuple[_Job, ...]]
# The first job choice seen for each (high, signature, state): its shape index builds the representative
_REPRESENTATIVE: dict[tuple[bool, tuple[object, ...], str], vw.JobSpec] = {}


@dataclass(frozen=True, slots=True)
class Blind:
    """What a policy cannot tell apart, with the reason for each thing it can."""

    hierarchy: bool = False
    reclaimable: bool = False
    weight: bool = False
    empty_queues: bool = False
    empty_queue_guarantees: bool = False  # queues without jobs are seen, but only through their guarantee
    cross_queue_order: bool = False
    preempts: bool = True
    why_not: tuple[str, ...] = ()

    def describe(self) -> str:
        merged = [name for name, on in (("queue parents", self.hierarchy), ("reclaimable", self.reclaimable),
                                        ("queue weights", self.weight), ("queues without jobs", self.empty_queues),
                                        ("queues without jobs but for their guarantee", self.empty_queue_guarantees),
                                        ("job order across queues", self.cross_queue_order)) if on]
        return "the policy cannot see " + (", ".join(merged) if merged else "nothing merged beyond equal clusters")


@dataclass(frozen=True, slots=True)
class World:
    spec: vw.Spec
    weight: int  # how many worlds of the naive space it stands for


def blind_spots(policy: CompiledPolicy, extra: Iterable[ir.Term] = ()) -> Blind:
    """Read every compiled term of the policy (rules, session lets, helpers, properties; `extra`: the
    policy file's own properties) and say which world differences it cannot see."""
    scan = _Scan()
    for tier in policy.tiers:
        for plugin in tier:
            module = plugin.module
            for rules in module.rules.values():
                for rule in rules:
                    scan.walk(rule.term)
            for _name, term, _fn in module.session_lets:
                scan.walk(term)
            for _params, body in module.functions.values():
                scan.walk(body)
            for _name, term, _fn, _label in module.properties:
                scan.walk(term)
    for term in extra:
        scan.walk(term)
    why: list[str] = []
    hierarchy = not (scan.attrs & _TREE_ATTRS)
    if not hierarchy:
        why.append(f"reads the queue tree ({', '.join(sorted(scan.attrs & _TREE_ATTRS))})")
    reclaimable = "reclaim" not in policy.actions and "reclaimable" not in scan.attrs
    weight = "weight" not in scan.attrs and "water_fill" not in scan.funcs
    empty = hierarchy and not scan.all_queues and not scan.guarantee_sums
    guarantees_only = hierarchy and not scan.all_queues and scan.guarantee_sums
    if hierarchy and scan.all_queues:
        why.append("reads cluster.queues other than as the queues with jobs")
    elif guarantees_only:
        why.append("reads the guarantees of queues without jobs")
    droppable = empty or guarantees_only  # queues without jobs (and, for the second, a guarantee) dropped
    order = droppable and not (scan.attrs & _IDENTITY_ATTRS) and not scan.ordered_lists and not scan.ordered_selects
    if droppable and not order:
        why.append("reads " + ", ".join(sorted(scan.attrs & _IDENTITY_ATTRS) + (["a list of jobs or tasks in order"]
                                                                              if scan.ordered_lists else [])
                                         + (["victims in candidate order"] if scan.ordered_selects else [])))
    return Blind(hierarchy, reclaimable, weight, empty, guarantees_only, order, "preempt" in policy.actions,
                 tuple(why))


def space_is_enumerable(bound: int) -> bool:
    return vw.space(bound) <= MAX_SPACE


def count(bound: int, blind: Blind) -> int:
    """How many canonical worlds `worlds` yields for the bound."""
    return sum(_profile_choices(blind, parents, jobs) for (_nodes, parents, jobs) in _job_classes(bound, blind))


def worlds(bound: int, blind: Blind) -> Iterator[World]:
    """One world per class of the bound's space, smallest first, each with the number it stands for."""
    for (nodes, parents, jobs), mult in _job_classes(bound, blind).items():
        specs = tuple(_representative(job) for job in jobs)
        per_queue = _queue_profile_classes(blind, len(parents), jobs)
        for choice in itertools.product(*(range(len(classes)) for classes in per_queue)):
            weight = mult
            for classes, c in zip(per_queue, choice):
                weight *= len(classes[c][1])
            queues = tuple((classes[c][0], parent) for classes, c, parent in zip(per_queue, choice, parents))
            yield World(vw.Spec(nodes, queues, specs), weight)


def representative(bound: int, blind: Blind, k: Key) -> vw.Spec | None:
    """The world `worlds` runs for the class `k` (a `key`), or None when no enumerated world has it."""
    cpus, profiles, parents, jobs = k
    if (cpus, parents, jobs) not in _job_classes(bound, blind):
        return None
    per_queue = _queue_profile_classes(blind, len(parents), jobs)
    queues = tuple((classes[c][0], parent) for classes, c, parent in zip(per_queue, profiles, parents))
    return vw.Spec(cpus, queues, tuple(_representative(job) for job in jobs))


def key(snapshot: snap.ClusterSnapshot, blind: Blind) -> Key:
    """The class of a built world, read from the cluster itself (an independent check of `worlds`)."""
    return _read(snapshot, blind)[0]


def job_order(snapshot: snap.ClusterSnapshot, blind: Blind) -> list[str]:
    """The world's podgroup keys in the order of its class's representative (jobs relabelled)."""
    return _read(snapshot, blind)[1]


def _read(snapshot: snap.ClusterSnapshot, blind: Blind) -> tuple[Key, list[str]]:
    node_index = {n.name: i for i, n in enumerate(snapshot.nodes)}
    queues = [q for q in snapshot.queues if q.name not in (snap.ROOT_QUEUE, snap.DEFAULT_QUEUE)]
    pods: dict[str, list[snap.Pod]] = defaultdict(list)
    for p in snapshot.pods:
        pods[p.group].append(p)
    jobs: list[_Job] = []
    for pg in snapshot.podgroups:
        members = sorted(pods[pg.name], key=lambda p: p.creation)
        signature = (len(members), pg.min_member, members[0].resreq.get("cpu", 0), tuple(p.priority for p in members))
        running = pg.phase is snap.PodGroupPhase.RUNNING
        state = vw.RUNNING if running else (vw.PENDING if pg.phase is snap.PodGroupPhase.PENDING else vw.INQUEUE)
        placed = tuple(node_index[p.node_name] if p.node_name else -1 for p in members) if running else None
        jobs.append((int(pg.queue[1:]), pg.priority_class_name == "high", signature, state, placed))
    parents = [bool(q.parent) for q in queues]
    kept = list(range(len(queues)))
    if (blind.empty_queues or blind.empty_queue_guarantees) and len(queues) <= _ERASABLE_QUEUES:
        used = sorted({j[0] for j in jobs})
        guaranteed_idle = [x for x in kept if x not in used and _profile_of(queues[x]) == "guaranteed"]
        kept = used + (guaranteed_idle if blind.empty_queue_guarantees else [])
        rank = {x: i for i, x in enumerate(used)}
        jobs = [(rank[j[0]], *j[1:]) for j in jobs]
        parents = [False for _ in kept]
    elif blind.hierarchy and len(queues) <= _ERASABLE_QUEUES:
        parents = [False for _ in queues]
    per_queue = _queue_profile_classes(blind, len(kept), jobs)
    profiles = [next(i for i, (_rep, members) in enumerate(classes) if _profile_of(queues[x]) in members)
                for classes, x in zip(per_queue, kept)]
    order = list(range(len(jobs)))
    if blind.cross_queue_order and _may_relabel(jobs, blind):
        order.sort(key=lambda i: jobs[i][0])
    cpus = tuple(n.allocatable.get("cpu", 0) // 1000 for n in snapshot.nodes)
    keys = [pg.key for pg in snapshot.podgroups]
    return (cpus, tuple(profiles), tuple(parents), tuple(jobs[i] for i in order)), [keys[i] for i in order]


# Enumeration ----------------------------------------------------------------------------------------

def _profile_classes(blind: Blind) -> list[tuple[str, tuple[str, ...]]]:
    """Queue profiles the policy can tell apart: (representative, the profiles it stands for)."""
    same_as_plain = {"unreclaimable": blind.reclaimable, "weighted": blind.weight}
    plain = ("plain", *(p for p in vw.QUEUE_PROFILES if same_as_plain.get(p)))
    return [("plain", plain), *((p, (p,)) for p in vw.QUEUE_PROFILES if p != "plain" and p not in plain)]


def _queue_profile_classes(blind: Blind, queues: int, jobs: Iterable[_Job]
                           ) -> list[list[tuple[str, tuple[str, ...]]]]:
    """The profile classes of each queue of a world: a queue with jobs has those the policy can tell
    apart; one without, when the policy sees it only through its guarantee, two (guaranteed or not),
    or only the first where such queues are dropped unless guaranteed (`_job_classes`)."""
    full = _profile_classes(blind)
    if not blind.empty_queue_guarantees:
        return [full] * queues
    used = {job[0] for job in jobs}
    idle: list[tuple[str, tuple[str, ...]]] = [("guaranteed", ("guaranteed",))]
    if queues > _ERASABLE_QUEUES:
        idle.append(("plain", tuple(p for p in vw.QUEUE_PROFILES if p != "guaranteed")))
    return [full if i in used else idle for i in range(queues)]


def _profile_choices(blind: Blind, parents: tuple[bool, ...], jobs: tuple[_Job, ...]) -> int:
    """How many profile choices `worlds` runs for one class of (nodes, parents, jobs)."""
    total = 1
    for classes in _queue_profile_classes(blind, len(parents), jobs):
        total *= len(classes)
    return total


def _profile_of(q: snap.Queue) -> str:
    if q.capability is not None:
        return "capped"
    if q.guarantee:
        return "guaranteed"
    if not q.reclaimable:
        return "unreclaimable"
    return "weighted" if q.weight == 2 else "plain"




@lru_cache(maxsize=8)
def _job_classes(bound: int, blind: Blind) -> dict[_Class, int]:
    """Every class of (nodes, queues, jobs) with how many naive choices land in it: job tuples, times
    the queue choices erased (parents the policy cannot see; every profile of a queue without jobs).
    The profiles of the queues kept are chosen by `worlds`."""
    classes: dict[_Class, int] = {}
    for n in range(1, bound + 1):
        for nodes in itertools.product(vw.NODE_CPUS, repeat=n):
            for q in range(1, min(bound, vw.MAX_QUEUES) + 1):
                choices = vw._job_choices(q, n)  # reason: the space's own definition of a job choice
                erase = q <= _ERASABLE_QUEUES
                for j in range(1, bound + 1):
                    for jobs in itertools.product(choices, repeat=j):
                        built = _built(nodes, jobs)
                        layouts: list[tuple[tuple[bool, ...], int]]
                        if (blind.empty_queues or blind.empty_queue_guarantees) and erase:
                            used = sorted({job[0] for job in built})
                            rank = {x: i for i, x in enumerate(used)}
                            built = [(rank[job[0]], *job[1:]) for job in built]
                            layouts = _idle_queue_layouts(blind, q, len(used))
                        elif blind.hierarchy and erase:
                            layouts = [(tuple(False for _ in range(q)), 2 ** (q - 1))]
                        else:
                            layouts = [((False, *bits), 1) for bits in itertools.product((False, True), repeat=q - 1)]
                        if blind.cross_queue_order and _may_relabel(built, blind):
                            built.sort(key=lambda job: job[0])
                        for parents, mult in layouts:
                            k = (nodes, parents, tuple(built))
                            classes[k] = classes.get(k, 0) + mult
    return classes


def _idle_queue_layouts(blind: Blind, queues: int, used: int) -> list[tuple[tuple[bool, ...], int]]:
    """Where queues without jobs are dropped: the parents of the queues kept (none drawn: the tree is
    not read) and how many worlds each layout stands for (every parent choice, every dropped profile).
    A policy that reads only their guarantees keeps the guaranteed ones, after the queues with jobs."""
    idle = queues - used
    parent_choices = 2 ** (queues - 1)
    if blind.empty_queues:
        return [(tuple(False for _ in range(used)), len(vw.QUEUE_PROFILES) ** idle * parent_choices)]
    others = len(vw.QUEUE_PROFILES) - 1  # the profiles without a guarantee
    return [(tuple(False for _ in range(used + kept)), math.comb(idle, kept) * others ** (idle - kept) * parent_choices)
            for kept in range(idle + 1)]


def _representative(job: _Job) -> vw.JobSpec:
    q, high, _signature, state, placed = job
    spec = _REPRESENTATIVE[(job[1], job[2], job[3])]
    return vw.JobSpec(q, high, spec.shape, state, node=next((k for k in placed or () if k >= 0), 0), placed=placed)


def _built(nodes: tuple[int, ...], jobs: tuple[vw.JobSpec, ...]) -> list[_Job]:
    """What `verify_worlds.build` makes of these jobs: each job's state and task placements."""
    free = list(nodes)
    out: list[_Job] = []
    for job in jobs:
        tasks, min_member, millis, mixed = vw.SHAPES[job.shape]
        value = vw.PRIORITY_CLASSES[1 if job.high else 0].value
        priorities = tuple(1000 if mixed and t == tasks - 1 else value for t in range(tasks))
        signature = (tasks, min_member, millis, priorities)
        cpu = millis // 1000
        placed = []
        for _t in range(tasks):
            node = -1
            if job.state == vw.RUNNING:
                for k in range(len(free)):
                    c = (job.node + k) % len(free)
                    if cpu <= free[c]:
                        free[c] -= cpu
                        node = c
                        break
            placed.append(node)
        if job.state == vw.RUNNING and any(k >= 0 for k in placed):
            built: _Job = (job.queue, job.high, signature, vw.RUNNING, tuple(placed))
        else:  # a Running job that fits nowhere is an Inqueue one
            built = (job.queue, job.high, signature, vw.INQUEUE if job.state == vw.RUNNING else job.state, None)
        _REPRESENTATIVE.setdefault((built[1], built[2], built[3]), job)
        out.append(built)
    return out


def _may_relabel(jobs: list[_Job], blind: Blind) -> bool:
    """Jobs of different queues may change creation order, unless preempt's second phase could see two
    jobs that each hold a running and a pending task (it takes them in snapshot order)."""
    if not blind.preempts:
        return True
    both = sum(1 for job in jobs if job[4] is not None and min(job[4]) < 0 <= max(job[4]))
    return both <= 1


# Reading the policy ------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Scan:
    attrs: set[str] = field(default_factory=set)
    funcs: set[str] = field(default_factory=set)
    all_queues: bool = False  # cluster.queues read other than filtered to the queues with jobs
    guarantee_sums: bool = False  # `sum(q in cluster.queues: q.guarantee)`: idle queues' guarantees read
    ordered_lists: bool = False  # a list of jobs or tasks used where its order may matter
    ordered_selects: bool = False  # a select whose state runs across jobs and queues

    def walk(self, t: object, *, order_free: bool = False) -> None:
        if isinstance(t, ir.GetAttr):
            self.attrs.add(t.name)
            if t.name == "queues" and t.obj == ir.Var("cluster"):
                self.all_queues = True
            if t.name in _LISTS_OF_JOBS_OR_TASKS and not order_free:
                self.ordered_lists = True
            self.walk(t.obj)
            return
        if isinstance(t, ir.Agg):
            if _queues_with_jobs(t):
                self.attrs.add("queues")
                self.walk(t.where)
                return
            if _guarantees_of_all_queues(t):
                self.attrs.update(("queues", "guarantee"))
                self.guarantee_sums = True
                return
            self.walk(t.source, order_free=t.func in _ORDER_FREE_AGGS)
            self.walk(t.where)
            self.walk(t.body)
            return
        if isinstance(t, ir.Apply):
            self.funcs.add(t.func)
            for a in t.args:
                self.walk(a, order_free=t.func == "len")
            return
        if isinstance(t, ir.Select):
            if t.state is not None and not (isinstance(t.group_key, ir.GetAttr) and t.group_key.obj == ir.Var(t.var)
                                            and t.group_key.name in ("job", "queue")):
                self.ordered_selects = True
        if is_dataclass(t) and not isinstance(t, type):
            for f in fields(t):
                value = getattr(t, f.name)
                if isinstance(value, tuple):
                    for v in value:
                        self.walk(v)
                else:
                    self.walk(value)


def _guarantees_of_all_queues(t: ir.Agg) -> bool:
    """`sum(q in cluster.queues: q.guarantee)`: what every queue holds back, with jobs or none."""
    return (t.func == "sum" and t.source == ir.GetAttr(ir.Var("cluster"), "queues") and t.where is None
            and t.body == ir.GetAttr(ir.Var(t.var), "guarantee"))


def _queues_with_jobs(t: ir.Agg) -> bool:
    """`list(q in cluster.queues where len(q.jobs) > 0)`: the only way a blind policy may list queues."""
    return (t.func == "list" and t.source == ir.GetAttr(ir.Var("cluster"), "queues") and t.body is None
            and t.where == ir.Op(">", (ir.Apply("len", (ir.GetAttr(ir.Var(t.var), "jobs"),)), ir.Const(0))))
