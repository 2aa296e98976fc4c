"""An independent checker for decision documents: what one session decided, judged against its snapshot.

`validate(snapshot, document)` re-derives, in plain Python and from `vpolicy.model` alone, the facts any
correct session must respect, whatever its policy: placements target Pending pods and Ready nodes, no
node holds more than it can, a bound gang reaches its minMember, no queue grows above its capability,
evictions follow Volcano's preempt/reclaim rules, and every pod left Pending says why. It shares no
code with the engine (no rules, no session state), so a bug in one is not silently repeated in the
other; of the policy it reads only the configured actions and whether gang is in force (`PolicyView`),
never a rule's answer. The document is the JSON-shaped dict of `Decisions.to_document()` (DESIGN §4).

Accounting follows the reference (§1): a pod occupies its node while Bound, Binding, Running, Allocated
or Releasing. An eviction turns a victim into Releasing, so it keeps its resources until it is gone:
binds must fit the node's Idle (allocatable - occupants, victims included), and binds plus pipelined
pods must fit FutureIdle (the same, with releasing pods and victims given back). Pipelined pods hold
their queue's quota as bound ones do (Volcano's Pipeline fires the plugins' allocate handlers).
Checks only blame the session for what it added: a node or queue already over its limit in the
snapshot is flagged only when this session placed something more on it. See docs/validator.md.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping, Protocol, Sequence

from vpolicy.model.hypernodes import HyperNodeTree
from vpolicy.model.resources import CPU, MEMORY, PODS, Resources, total
from vpolicy.model.snapshot import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    ClusterSnapshot,
    Node,
    Pod,
    PodGroup,
    Queue,
    TaskStatus,
)

# Statuses of pods that hold node resources when the session opens (reference §1, node accounting).
_ON_NODE = ALLOCATED_STATUSES | {TaskStatus.RELEASING}
# Statuses a victim may have: preempt takes Bound or Running pods, reclaim only Running ones (§4.3, §4.4).
_PREEMPT_VICTIM = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
_RECLAIM_VICTIM = frozenset({TaskStatus.RUNNING})
EVICTION_ACTIONS = frozenset({"preempt", "reclaim", "shuffle"})


class PluginView(Protocol):
    """What the validator reads of one plugin of a policy (`engine.runtime.PluginInstance` is one)."""

    def rules(self, callback: str) -> Sequence[object]: ...


class PolicyView(Protocol):
    """What the validator reads of a policy (`engine.session.CompiledPolicy` is one): its actions, and
    which callbacks its enabled plugins define. Read, never run: no rule is evaluated here."""

    @property
    def actions(self) -> Sequence[str]: ...

    @property
    def tiers(self) -> Sequence[Sequence[PluginView]]: ...


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: a stable `code` (e.g. `node.over-allocatable`), a sentence, and its subject."""

    code: str
    message: str
    subject: str = ""  # the pod, node, podgroup or queue it is about

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class _Decided:
    """The parts of a decision document the checks read, with pod keys as in the document."""

    binds: Mapping[str, str]
    pipelined: Mapping[str, str]
    evictions: tuple[Mapping[str, str], ...]
    unschedulable: Mapping[str, object]
    nominated: Mapping[str, str]

    @property
    def evicted(self) -> frozenset[str]:
        return frozenset(e.get("pod", "") for e in self.evictions)

    def placed(self) -> dict[str, str]:
        """Pods bound or pipelined in this session, with their node."""
        return {**self.pipelined, **self.binds}


@dataclass(frozen=True, slots=True)
class _World:
    """Lookups over the snapshot, built once per validation."""

    pods: Mapping[str, Pod]
    nodes: Mapping[str, Node]
    podgroups: Mapping[str, PodGroup]
    queues: Mapping[str, Queue]
    snapshot: ClusterSnapshot
    schedulers: frozenset[str]  # schedulerNames the session schedules for ("" = unwritten = ours)
    members: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)  # podgroup key -> its tasks

    @classmethod
    def of(cls, snapshot: ClusterSnapshot, schedulers: Collection[str]) -> "_World":
        names = frozenset({"", *schedulers})
        podgroups = {pg.key: pg for pg in snapshot.podgroups}
        members: dict[str, list[Pod]] = {}
        for pod in snapshot.pods:
            group = _group_key(pod)
            if pod.group and group in podgroups and (pod.node_name or pod.scheduler_name in names):
                members.setdefault(group, []).append(pod)
        return cls(pods={p.key: p for p in snapshot.pods}, nodes={n.name: n for n in snapshot.nodes},
                   podgroups=podgroups, queues={q.name: q for q in snapshot.queues}, snapshot=snapshot,
                   schedulers=names, members={k: tuple(v) for k, v in members.items()})

    def podgroup_of(self, pod: Pod) -> PodGroup | None:
        return self.podgroups.get(_group_key(pod)) if pod.group else None

    def ours(self, pod: Pod) -> bool:
        """The session schedules this pod: its schedulerName is one of ours (reference §1)."""
        return pod.scheduler_name in self.schedulers


def validate(snapshot: ClusterSnapshot, document: Mapping[str, object], *, policy: PolicyView | None = None,
             conf_actions: Collection[str] | None = None, gang: bool | None = None,
             priority_victims: bool = False, scheduler_names: Collection[str] = ("volcano",)) -> list[Violation]:
    """Every invariant `document` breaks for `snapshot`, in check order; [] when it is sound.

    `policy`: the policy the session ran; it says which actions are configured and whether gang is in
    force (see `gang_in_force`), so pass it whenever it is at hand. `conf_actions` and `gang` override
    what it says, and stand alone without it: `conf_actions`, the configured actions, an eviction by
    an action not among them is a violation (None and no policy: any of preempt, reclaim, shuffle);
    `gang`, check gang all-or-nothing (None and no policy: checked).
    `priority_victims`: a preempt victim from another job must have a lower job priority than the
    preemptor's job (true when the priority plugin alone decides preempt victims, as with the Helm tiers).
    `scheduler_names`: the schedulerNames the session acts for (a pod with none written counts as ours);
    other schedulers' pods are never placed and need no reason, but still take node resources.
    """
    if conf_actions is None and policy is not None:
        conf_actions = policy.actions
    if gang is None:
        gang = gang_in_force(policy) if policy is not None else True
    world = _World.of(snapshot, scheduler_names)
    decided = _read(document)
    found: list[Violation] = []
    found += _check_placements(world, decided)
    found += _check_evictions(world, decided, conf_actions=conf_actions, priority_victims=priority_victims)
    found += _check_nodes(world, decided)
    if gang:
        found += _check_gangs(world, decided)
    found += _check_queues(world, decided)
    found += _check_topology(world, decided)
    found += _check_reasons(world, decided)
    return found


def gang_in_force(policy: PolicyView) -> bool:
    """Whether `policy` keeps gangs all-or-nothing: some enabled plugin defines `job_ready` (Volcano's
    gang plugin, unless its enableJobReady is off). Without one every job counts as ready at once and
    each task is bound on its own, so a gang bound below minMember is the policy, not a bug."""
    return any(plugin.rules("job_ready") for tier in policy.tiers for plugin in tier)


# Placements ------------------------------------------------------------------------------------------

def _check_placements(world: _World, decided: _Decided) -> list[Violation]:
    """Bound and pipelined pods exist, were Pending in a podgroup, target Ready nodes, and are placed once."""
    found: list[Violation] = []
    for kind, placements in (("bound", decided.binds), ("pipelined", decided.pipelined)):
        for key, node_name in placements.items():
            found += _placement_problems(world, key, node_name, kind)
    for key in sorted(set(decided.binds) & set(decided.pipelined)):
        found.append(Violation("placement.bound-and-pipelined",
                               f"pod {key} is both bound (to {decided.binds[key]}) and pipelined "
                               f"(to {decided.pipelined[key]})", key))
    return found + _nomination_problems(world, decided)


def _nomination_problems(world: _World, decided: _Decided) -> list[Violation]:
    """A nominated pod is pipelined to that node, and something was evicted there for its job (Volcano
    nominates a node only for a preemptor whose own evictions made its room)."""
    found: list[Violation] = []
    evicted_for: set[tuple[str, str]] = set()
    for eviction in decided.evictions:
        victim = world.pods.get(eviction.get("pod", ""))
        if victim is not None:
            evicted_for.add((eviction.get("for", ""), victim.node_name))
    for key, node_name in sorted(decided.nominated.items()):
        if decided.pipelined.get(key) != node_name:
            found.append(Violation("placement.nominated-not-pipelined",
                                   f"pod {key} is nominated to {node_name} but not pipelined there", key))
            continue
        pod = world.pods.get(key)
        if pod is not None and (_group_key(pod), node_name) not in evicted_for:
            found.append(Violation("placement.nominated-without-eviction",
                                   f"pod {key} is nominated to {node_name}, but nothing was evicted there for "
                                   f"{_group_key(pod)}", key))
    return found


def _placement_problems(world: _World, key: str, node_name: str, kind: str) -> list[Violation]:
    pod = world.pods.get(key)
    if pod is None:
        return [Violation("placement.unknown-pod", f"{kind} pod {key} is not in the snapshot", key)]
    found: list[Violation] = []
    if pod.status is not TaskStatus.PENDING or pod.node_name:
        where = f" on {pod.node_name}" if pod.node_name else ""
        found.append(Violation("placement.not-pending",
                               f"{kind} pod {key} was {pod.status.value}{where}, not Pending", key))
    if world.podgroup_of(pod) is None:
        found.append(Violation("placement.no-podgroup",
                               f"{kind} pod {key} belongs to no podgroup of the snapshot", key))
    if not world.ours(pod):
        found.append(Violation("placement.other-scheduler",
                               f"{kind} pod {key} is for scheduler '{pod.scheduler_name}', not this one", key))
    node = world.nodes.get(node_name)
    if node is None:
        found.append(Violation("placement.unknown-node", f"pod {key} is {kind} to unknown node {node_name}", key))
    elif not node.ready:
        found.append(Violation("placement.node-not-ready", f"pod {key} is {kind} to node {node_name}, "
                                                           "which is not Ready", key))
    return found


# Evictions -------------------------------------------------------------------------------------------

def _check_evictions(world: _World, decided: _Decided, *, conf_actions: Collection[str] | None = None,
                    priority_victims: bool = False) -> list[Violation]:
    """Each victim is evicted once, was running on a node, and was taken as preempt or reclaim allow."""
    allowed = EVICTION_ACTIONS if conf_actions is None else EVICTION_ACTIONS & set(conf_actions)
    found: list[Violation] = []
    counts = Counter(e.get("pod", "") for e in decided.evictions)
    for key in sorted(k for k, n in counts.items() if n > 1):
        found.append(Violation("eviction.duplicate", f"pod {key} is evicted {counts[key]} times", key))
    for eviction in decided.evictions:
        found += _eviction_problems(world, decided, eviction, allowed, priority_victims)
    return found


def _eviction_problems(world: _World, decided: _Decided, eviction: Mapping[str, str], allowed: Collection[str],
                       priority_victims: bool) -> list[Violation]:
    """Every problem of one eviction: an action not configured does not hide what else is wrong with
    the victim; an action the validator does not know is checked only for what any eviction needs."""
    key, action, for_job = eviction.get("pod", ""), eviction.get("action", ""), eviction.get("for", "")
    found: list[Violation] = []
    if action not in allowed:
        found.append(Violation("eviction.action-not-configured",
                               f"pod {key} is evicted by action '{action}', which is not one of {sorted(allowed)}",
                               key))
    victim = world.pods.get(key)
    if victim is None:
        return found + [Violation("eviction.unknown-pod", f"evicted pod {key} is not in the snapshot", key)]
    statuses = _RECLAIM_VICTIM if action == "reclaim" else _PREEMPT_VICTIM
    if victim.status not in statuses or victim.node_name not in world.nodes:
        wanted = " or ".join(sorted(s.value for s in statuses))
        found.append(Violation("eviction.not-running", f"{action} victim {key} was {victim.status.value} on "
                                                       f"'{victim.node_name}', not {wanted} on a node", key))
    if action == "shuffle":
        return found
    if not victim.preemptable:
        found.append(Violation("eviction.not-preemptable",
                               f"{action} victim {key} is marked volcano.sh/preemptable=false", key))
    victim_pg, preemptor_pg = world.podgroup_of(victim), world.podgroups.get(for_job)
    if victim_pg is None or preemptor_pg is None:
        missing = f"victim {key}'s podgroup" if victim_pg is None else f"preemptor podgroup {for_job}"
        found.append(Violation("eviction.unknown-podgroup", f"{action} of {key}: {missing} is not in the snapshot",
                               key))
        return found
    if victim.node_name and not any(decided.pipelined.get(p.key) == victim.node_name
                                    for p in world.members.get(for_job, ())):
        found.append(Violation("eviction.no-preemptor-placed",
                               f"{action} of {key} on {victim.node_name} for {for_job}, but no pod of {for_job} "
                               f"is pipelined onto {victim.node_name}", key))
    if action == "preempt":
        found += _preempt_problems(world, key, victim_pg, preemptor_pg, priority_victims)
    elif action == "reclaim":
        found += _reclaim_problems(world, key, victim_pg, preemptor_pg)
    return found


def _preempt_problems(world: _World, key: str, victim_pg: PodGroup, preemptor_pg: PodGroup,
                      priority_victims: bool) -> list[Violation]:
    found: list[Violation] = []
    if victim_pg.queue != preemptor_pg.queue:
        found.append(Violation("preempt.cross-queue",
                               f"preempt victim {key} is in queue {victim_pg.queue}, but preemptor "
                               f"{preemptor_pg.key} is in queue {preemptor_pg.queue}", key))
    if priority_victims and victim_pg.key != preemptor_pg.key:
        victim_priority = world.snapshot.job_priority(victim_pg)
        preemptor_priority = world.snapshot.job_priority(preemptor_pg)
        if victim_priority >= preemptor_priority:
            found.append(Violation("preempt.not-lower-priority",
                                   f"preempt victim {key} has job priority {victim_priority}, not below "
                                   f"preemptor {preemptor_pg.key}'s {preemptor_priority}", key))
    return found


def _reclaim_problems(world: _World, key: str, victim_pg: PodGroup, preemptor_pg: PodGroup) -> list[Violation]:
    if victim_pg.queue == preemptor_pg.queue:
        return [Violation("reclaim.same-queue", f"reclaim victim {key} is in the reclaimer {preemptor_pg.key}'s "
                                                f"own queue {victim_pg.queue}", key)]
    queue = world.queues.get(victim_pg.queue)
    if queue is not None and not queue.reclaimable:
        return [Violation("reclaim.not-reclaimable",
                          f"reclaim victim {key} is in queue {queue.name}, which is not reclaimable", key)]
    return []


# Nodes -----------------------------------------------------------------------------------------------

def _check_nodes(world: _World, decided: _Decided) -> list[Violation]:
    """Binds fit each node's Idle; binds plus pipelined pods fit its FutureIdle (every dimension, pods too)."""
    occupants: dict[str, list[Pod]] = {}
    for pod in world.pods.values():
        if pod.node_name and pod.status in _ON_NODE:
            occupants.setdefault(pod.node_name, []).append(pod)
    bound = _requests_by_node(world, decided.binds)
    pipelined = _requests_by_node(world, decided.pipelined)
    evicted = decided.evicted
    found: list[Violation] = []
    for name in sorted(set(bound) | set(pipelined)):
        node = world.nodes.get(name)
        if node is None:
            continue  # reported by _check_placements
        here = occupants.get(name, [])
        used = total(p.resreq for p in here)
        staying = total(p.resreq for p in here if p.status is not TaskStatus.RELEASING and p.key not in evicted)
        now = used + bound.get(name, Resources())
        if not now.le(node.allocatable):
            found.append(_over("node.over-allocatable", node, now, "occupants plus newly bound pods"))
        future = staying + bound.get(name, Resources()) + pipelined.get(name, Resources())
        if not future.le(node.allocatable):
            found.append(_over("node.over-future-idle", node, future,
                               "staying occupants plus newly bound and pipelined pods"))
    return found


def _requests_by_node(world: _World, placements: Mapping[str, str]) -> dict[str, Resources]:
    by_node: dict[str, list[Resources]] = {}
    for key, node_name in placements.items():
        pod = world.pods.get(key)
        if pod is not None:
            by_node.setdefault(node_name, []).append(pod.resreq)
    return {name: total(vectors) for name, vectors in by_node.items()}


def _over(code: str, node: Node, demand: Resources, what: str) -> Violation:
    dims = ", ".join(f"{d} {demand[d]} > {node.allocatable[d]}" for d in demand.any_gt(node.allocatable))
    return Violation(code, f"node {node.name}: {what} exceed allocatable ({dims})", node.name)


# Gangs -----------------------------------------------------------------------------------------------

def _check_gangs(world: _World, decided: _Decided) -> list[Violation]:
    """A podgroup that got binds reaches minMember on totals: tasks ready before the session plus newly
    bound ones, plus pending best-effort ones (gang's JobReady counts them, backfill places them later).

    Evictions are not subtracted (a later action may evict members of a gang bound earlier). Pipelined
    gangs are not checked: a gang that ends only pipelined keeps its other placements Allocated but
    unbound (reference §4.2, §18.6), and the document does not list those (see docs/validator.md)."""
    placed = decided.placed()
    found: list[Violation] = []
    for pg_key, pods in sorted(world.members.items()):
        pg = world.podgroups[pg_key]
        bound = sum(1 for p in pods if p.key in decided.binds)
        if not bound:
            continue
        ready = sum(1 for p in pods if p.status in READY_STATUSES)
        best_effort = sum(1 for p in pods if p.status is TaskStatus.PENDING and p.key not in placed
                          and p.resreq.is_empty())
        if ready + bound + best_effort < pg.min_member:
            found.append(Violation("gang.bound-below-min-member",
                                   f"podgroup {pg_key} has {bound} pods bound but only {ready + bound} ready "
                                   f"(+{best_effort} pending best-effort) of minMember {pg.min_member}", pg_key))
    return found


# Network topology ------------------------------------------------------------------------------------

def _check_topology(world: _World, decided: _Decided) -> list[Violation]:
    """A hard-mode job (spec.networkTopology mode hard) the session placed pods for spans no domain above
    its highest allowed tier: its pods running before and those bound or pipelined now all lie under one
    HyperNode of at most that tier (a pod on a node in no HyperNode spans the whole cluster)."""
    hard = [pg for pg in world.podgroups.values()
            if pg.network_topology is not None and pg.network_topology.mode == "hard"]
    if not hard or not world.snapshot.hypernodes:
        return []
    tree = HyperNodeTree(world.snapshot.hypernodes, ((n.name, n.labels) for n in world.snapshot.nodes if n.ready))
    hard = [pg for pg in hard if tree.holds_to_a_tier(pg.network_topology)]
    placed = decided.placed()
    found: list[Violation] = []
    for pg in sorted(hard, key=lambda g: g.key):
        pods = world.members.get(pg.key, ())
        new = [placed[p.key] for p in pods if p.key in placed]
        if not new:
            continue
        nodes = new + [p.node_name for p in pods if p.node_name and p.status in ALLOCATED_STATUSES]
        domain = tree.span_of(nodes)
        limit = tree.highest_tier(pg.network_topology)
        if tree.tier(domain) > limit:
            found.append(Violation("topology.above-highest-tier",
                                   f"podgroup {pg.key} is hard-mode with highest tier {limit}, but its pods span "
                                   f"{domain} (tier {tree.tier(domain)})", pg.key))
    return found


# Queues ----------------------------------------------------------------------------------------------

def _check_queues(world: _World, decided: _Decided) -> list[Violation]:
    """A queue with a capability stays within it, after the session, on every dimension the capability
    names and this session's placements in the queue request (pods never; cpu/memory <= 0 = unlimited)."""
    placed = decided.placed()
    evicted = decided.evicted
    found: list[Violation] = []
    for queue in world.queues.values():
        if queue.capability is None:
            continue
        pods = [p for pg in world.podgroups.values() if pg.queue == queue.name for p in world.members.get(pg.key, ())]
        new = [p for p in pods if p.key in placed]
        if not new:
            continue
        kept = [p for p in pods if p.status in ALLOCATED_STATUSES and p.key not in evicted]
        after = total(p.resreq for p in [*kept, *new])
        requested = set().union(*(p.resreq.dims() for p in new))
        over = [d for d in sorted(_limited_dims(queue.capability) & requested) if after[d] > queue.capability[d]]
        if over:
            dims = ", ".join(f"{d} {after[d]} > {queue.capability[d]}" for d in over)
            found.append(Violation("queue.over-capability",
                                   f"queue {queue.name} holds more than its capability after this session "
                                   f"({dims})", queue.name))
    return found


def _limited_dims(capability: Resources) -> set[str]:
    """Dimensions a capability bounds: those it names, except pods and non-positive cpu/memory."""
    return {d for d, v in capability.items() if d != PODS and not (d in (CPU, MEMORY) and v <= 0)}


# Reasons ---------------------------------------------------------------------------------------------

def _check_reasons(world: _World, decided: _Decided) -> list[Violation]:
    """Every podgroup pod still Pending has a non-empty list of reasons; placed pods have none."""
    placed = decided.placed()
    found: list[Violation] = []
    for pods in world.members.values():
        for pod in pods:
            if pod.status is not TaskStatus.PENDING or pod.key in placed:
                continue
            reasons = decided.unschedulable.get(pod.key)
            if not _reason_list(reasons):
                found.append(Violation("pending.no-reason",
                                       f"pod {pod.key} is still Pending but has no reason "
                                       f"(unschedulable: {reasons!r})", pod.key))
    for key in sorted(set(decided.unschedulable) & set(placed)):
        found.append(Violation("pending.reason-for-placed-pod",
                               f"pod {key} is placed on {placed[key]} yet listed as unschedulable", key))
    return found


def _reason_list(reasons: object) -> bool:
    return (isinstance(reasons, list) and bool(reasons)
            and all(isinstance(r, str) and r.strip() for r in reasons))


# Helpers ---------------------------------------------------------------------------------------------

def _group_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.group}"


def _read(document: Mapping[str, object]) -> _Decided:
    """The document's decision sections, with missing sections empty (a malformed one is a broken
    contract, not a policy violation, so it raises)."""
    binds = _string_map(document.get("binds", {}), "binds")
    pipelined = _string_map(document.get("pipelined", {}), "pipelined")
    nominated = _string_map(document.get("nominated", {}), "nominated")
    evictions = document.get("evictions", [])
    unschedulable = document.get("unschedulable", {})
    if not isinstance(evictions, list) or not all(isinstance(e, Mapping) for e in evictions):
        raise TypeError("document['evictions'] must be a list of objects")
    if not isinstance(unschedulable, Mapping):
        raise TypeError("document['unschedulable'] must be an object")
    return _Decided(binds, pipelined, tuple(evictions), unschedulable, nominated)


def _string_map(value: object, name: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TypeError(f"document[{name!r}] must map pod keys to node names")
    return value


def codes(violations: Iterable[Violation]) -> list[str]:
    """The codes of `violations`, in order (handy in tests and reports)."""
    return [v.code for v in violations]
