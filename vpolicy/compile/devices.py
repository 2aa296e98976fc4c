"""Card-level fit, choice and score for vGPU (HAMi-core) and MIG requests: the deviceshare primitives.

Volcano's deviceshare plugin decides at card level what the DSL cannot express over resource vectors:
which cards of a node can take a container's ask, in which order they are tried, and the card score.
This module is that algorithm (Volcano's checkNodeGPUSharingPredicateAndScore, reference §10 and
kubernetes-and-gpu.md §8.3 and §8.6), exact and deterministic, over an immutable view of the cards:

- a **hami-core** card takes a container when a sharing slot is free, free memory >= the ask,
  used cores + asked cores <= 100, an exclusive ask (cores 100) finds it idle, a card already at 100
  cores is not given to a cores-0 ask, and the type/UUID/mode filters allow it;
- a **mig** card takes a container in one instance of its model's geometry: a card with instances in
  use keeps its geometry; an idle card may be (re)cut. Among the cards that can, the choice minimises
  (reconfigurations, instance memory): fewest reconfigurations first, then the smallest slice that fits.
  Per container the cards are independent, so sorting by that key is the exact optimum;
- cards are visited highest index first (default), most used memory first (`binpack`) or fewest users
  first (`spread`); the score of each chosen card is `100 * usedMem / mem` (binpack) or 100 when the card
  was idle (spread), summed over the cards, as Volcano scores.

What it does not do: keep usage across placements (`vpolicy.engine.devices` holds it and gives this module
`CardState`s), or decide policy (`policies/volcano/deviceshare.vpol` decides which rules apply and weighs
the score). The DSL's built-ins at the bottom read a node's cards through the `CardSource` protocol.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, Sequence

from vpolicy.model import gpu

POLICY_BINPACK = "binpack"
POLICY_SPREAD = "spread"
SCORE_MULTIPLIER = 100.0  # Volcano's binpackMultiplier / spreadMultiplier

NO_DEVICES = "node(s) had no registered vGPU devices"
TOO_FEW_CARDS = "node(s) had fewer GPU cards than the pod asks for"
NO_MATCHING_CARD = "node(s) had no healthy GPU of the requested type, UUID or mode"
NO_ROOM = "node(s) had no GPU card with enough free memory, cores, sharing slots or MIG slices"


@dataclass(frozen=True, slots=True)
class CardState:
    """One card and what is in use on it. MIG cards also carry their configured geometry (`layout`,
    None when not cut or unknown) and the (geometry, position) instances in use."""

    card: gpu.Card
    used_num: int = 0
    used_memory: int = 0
    used_cores: int = 0
    layout: int | None = None
    mig_used: frozenset[tuple[int, int]] = frozenset()

    @property
    def geometry(self) -> int | None:
        """The geometry the card is in: the one of its instances in use, else its configured layout.
        Instances of a geometry vpolicy cannot name (Volcano's group names), or of two geometries at
        once, leave it `gpu.UNKNOWN_GEOMETRY`: the card is in use, in a cut nobody may change."""
        groups = {g for g, _ in self.mig_used}
        if not groups:
            return self.layout
        return groups.pop() if len(groups) == 1 else gpu.UNKNOWN_GEOMETRY

    def plus(self, device: gpu.ContainerDevice) -> "CardState":
        mig = gpu.parse_mig_id(device.uuid)
        used = self.mig_used | {(mig[1], mig[2])} if mig else self.mig_used
        return replace(self, used_num=self.used_num + 1, used_memory=self.used_memory + device.memory,
                       used_cores=self.used_cores + device.cores, mig_used=used)

    def minus(self, device: gpu.ContainerDevice) -> "CardState":
        mig = gpu.parse_mig_id(device.uuid)
        used = self.mig_used - {(mig[1], mig[2])} if mig else self.mig_used
        return replace(self, used_num=self.used_num - 1, used_memory=self.used_memory - device.memory,
                       used_cores=self.used_cores - device.cores, mig_used=used)


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a pod's containers go: devices per container, Volcano's score, the MIG cards that must be
    (re)cut, and the MIG instances to create."""

    devices: gpu.PodDevices
    score: float = 0.0
    reconfigurations: int = 0
    mig: tuple[gpu.MigAllocation, ...] = ()


@dataclass(frozen=True, slots=True)
class Unfit:
    reason: str


class CardSource(Protocol):
    """A node's cards as the session sees them now (`vpolicy.engine.devices.NodeGpus`)."""

    memo: dict[tuple[str, str], "Assignment | Unfit"]  # (task uid, policy) -> answer; cleared on change

    def states(self) -> tuple[CardState, ...]: ...

    def note_policy(self, uid: str, policy: str) -> None: ...


def allocate(requests: Sequence[gpu.DeviceRequest], cards: Sequence[CardState], *, policy: str = "",
             filters: gpu.DeviceFilters = gpu.DeviceFilters()) -> Assignment | Unfit:
    """Cards for every container of a pod, or why there are none. Containers are served in order, each
    seeing the cards the earlier ones took; a container asking 0 cards gets an empty segment, as in
    Volcano's checkNodeGPUSharingPredicateAndScore, and touches no card."""
    if not gpu.asks_for_cards(requests):
        return Assignment(())
    if not cards:
        return Unfit(NO_DEVICES)
    working = {s.card.index: s for s in cards}
    containers: list[tuple[gpu.ContainerDevice, ...]] = []
    migs: list[gpu.MigAllocation] = []
    recut: set[int] = set()
    score = 0.0
    for ci, req in enumerate(requests):
        if req.nums == 0:
            containers.append(())
            continue
        if req.nums > len(working):
            return Unfit(TOO_FEW_CARDS)
        allowed = [s for s in working.values()
                   if s.card.health and req.type in s.card.type and filters.allows(s.card)]
        if not allowed:
            return Unfit(NO_MATCHING_CARD)
        options = []
        for rank, state in enumerate(visit_order(allowed, policy)):
            option = _option(state, req)
            if option is not None:
                options.append((option[0], option[1], rank, state, option[2]))
        if len(options) < req.nums:
            return Unfit(NO_ROOM)
        options.sort(key=lambda o: (o[0], o[1], o[2]))
        chosen: list[gpu.ContainerDevice] = []
        for cost, _memory, _rank, state, (device, mig) in options[:req.nums]:
            after = state.plus(device)
            working[state.card.index] = after
            score += card_score(after, policy)
            if cost:
                recut.add(state.card.index)
            if mig is not None:
                migs.append(replace(mig, container=ci, device=len(chosen)))
            chosen.append(device)
        containers.append(tuple(chosen))
    return Assignment(tuple(containers), score, len(recut), tuple(migs))


def visit_order(cards: Sequence[CardState], policy: str) -> list[CardState]:
    """Highest index first; binpack: most used memory first; spread: fewest users first (stable)."""
    order = sorted(cards, key=lambda s: -s.card.index)
    if policy == POLICY_BINPACK:
        return sorted(order, key=lambda s: -s.used_memory)
    if policy == POLICY_SPREAD:
        return sorted(order, key=lambda s: s.used_num)
    return order


def card_score(after: CardState, policy: str) -> float:
    """Volcano's per-card score, computed with the card's usage after the placement."""
    if policy == POLICY_BINPACK:
        return SCORE_MULTIPLIER * after.used_memory / after.card.memory if after.card.memory else 0.0
    if policy == POLICY_SPREAD:
        return SCORE_MULTIPLIER if after.used_num == 1 else 0.0
    return 0.0


_Option = tuple[int, int, tuple[gpu.ContainerDevice, "gpu.MigAllocation | None"]]


def _option(state: CardState, req: gpu.DeviceRequest) -> _Option | None:
    """(reconfigurations, slice memory, (device, MIG instance)) for putting one card of `req` here."""
    card = state.card
    if card.mode == gpu.MODE_MIG:
        return _mig_option(state, req)
    memory = req.memory_on(card.memory)
    if state.used_num >= card.split or card.memory - state.used_memory < memory:
        return None
    if state.used_cores + req.cores > 100:
        return None
    if req.cores == 100 and state.used_num > 0:  # an exclusive ask needs an idle card
        return None
    if state.used_cores == 100 and req.cores == 0:  # a card taken whole is not shared with a cores-0 ask
        return None
    return 0, 0, (gpu.ContainerDevice(card.uuid, req.type, memory, req.cores), None)


def _mig_option(state: CardState, req: gpu.DeviceRequest) -> _Option | None:
    model = gpu.mig_model_for(state.card.type)
    if model is None:
        return None
    largest = max(p.memory for p in model.profiles)
    need = req.memory if req.memory else largest * req.memory_percentage // 100
    current = state.geometry
    if state.mig_used and not (current is not None and 0 <= current < len(model.geometries)):
        return None  # instances in use in a geometry this model's table does not know: leave the card alone
    groups = [current] if state.mig_used and current is not None else range(len(model.geometries))
    best: tuple[int, int, int, int] | None = None
    best_instance: gpu.MigInstance | None = None
    for group in groups:
        taken = {p for g, p in state.mig_used if g == group}
        for inst in model.instances(group):
            if inst.position in taken or inst.profile.memory < need:
                continue
            key = (0 if group == current else 1, inst.profile.memory, group, inst.position)
            if best is None or key < best:
                best, best_instance = key, inst
    if best is None or best_instance is None:
        return None
    cost, memory, group, position = best
    uuid = state.card.uuid
    device = gpu.ContainerDevice(gpu.mig_id(uuid, group, position), req.type, memory, req.cores)
    mig = gpu.MigAllocation(0, 0, uuid, best_instance.profile.name, best_instance.start, best_instance.size,
                            group, position)
    return cost, memory, (device, mig)


def usage(cards: Sequence[gpu.Card], pods: Sequence[gpu.PodDevices], *,
          layouts: dict[str, int] | None = None) -> tuple[CardState, ...]:
    """Card states from the inventory, the MIG layouts and the devices of pods already on the node;
    devices naming a card the node does not have are ignored."""
    states = {c.uuid: CardState(c, layout=(layouts or {}).get(c.uuid)) for c in cards}
    for pod in pods:
        for container in pod:
            for device in container:
                state = states.get(device.card_uuid)
                if state is not None:
                    states[device.card_uuid] = state.plus(device)
    return tuple(states.values())


# DSL built-ins (catalogue: vpolicy.lang.builtins.FUNCTIONS) ---------------------------------------------
# They take the node's cards as `node.gpus` (a CardSource, or none without an inventory), not the node:
# the cards change with every placement on the node, and a rule that reads `node.gpus` says so, so the
# engine never caches its answer as if it depended on the task's spec and the node's fixed fields only.
def requests_of(task: Any) -> tuple[gpu.DeviceRequest, ...]:
    """A task's vGPU requests, one per container that names vgpu-number or vgpu-memory, in container order
    (Volcano's resourcereqs): the snapshot keeps each container's limits apart (`Pod.vgpu_limits`).
    A container asking 0 cards keeps its place, with nums 0, so that its segment stays where it was."""
    return gpu.pod_requests(task.pod.vgpu_limits)


def answer(task: Any, cards: CardSource | None, policy: str) -> Assignment | Unfit:
    """The card assignment for the task on these cards now, memoised until the cards change."""
    requests = requests_of(task)
    if not gpu.asks_for_cards(requests):
        return Assignment(())
    if cards is None:
        return Unfit(NO_DEVICES)
    key = (task.uid, policy)
    found = cards.memo.get(key)
    if found is None:
        found = allocate(requests, cards.states(), policy=policy, filters=gpu.filters_from(task.pod.annotations))
        cards.memo[key] = found
    return found


def vgpu_requested(task: Any) -> bool:
    """The pod asks for at least one card (a pod whose containers all ask 0 cards is not a GPU pod)."""
    return gpu.asks_for_cards(requests_of(task))


def vgpu_fits(task: Any, cards: CardSource | None, policy: str) -> bool:
    if not vgpu_requested(task):
        return True
    if cards is not None:
        cards.note_policy(task.uid, policy)  # a placement on this node takes the cards this policy picks
    return isinstance(answer(task, cards, policy), Assignment)


def vgpu_unfit_reason(task: Any, cards: CardSource | None) -> str:
    found = answer(task, cards, "")
    return found.reason if isinstance(found, Unfit) else ""


def vgpu_score(task: Any, cards: CardSource | None, policy: str) -> float:
    found = answer(task, cards, policy)
    return found.score if isinstance(found, Assignment) else 0.0


def mig_reconfigurations(task: Any, cards: CardSource | None, policy: str) -> int:
    found = answer(task, cards, policy)
    return found.reconfigurations if isinstance(found, Assignment) else 0


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "vgpu_requested": vgpu_requested,
    "vgpu_fits": vgpu_fits,
    "vgpu_unfit_reason": vgpu_unfit_reason,
    "vgpu_score": vgpu_score,
    "mig_reconfigurations": mig_reconfigurations,
}
