"""The node's MIG plan: which GPU instances to create and destroy so the assigned pods get their slices.

The scheduler reserves MIG instances by profile and placement (`volcano.sh/vgpu-mig-allocations`, the
reservation model kubernetes-and-gpu.md §8.6 recommends). `plan` compares what the pods on this node
hold with the GPU instances NVML reports: instances nobody reserved are destroyed, reservations with no
instance at their placement are created (destroys first, so a re-cut card frees its slices before the
new ones are made).

A reservation is not the only sign of use: a pod placed by Volcano names its instance only in
`volcano.sh/vgpu-ids-new` (`GPU-..[group1-0]`, a geometry named by Volcano's config), and a pod's
reservation may be unreadable. `InUse` (built by `in_use`) is every instance the pods' device ids show
in use; `plan` never destroys one of them, nor anything on a card where a pod holds an instance it cannot
pin to a placement, nor anything at all when a pod's devices cannot be read. It spares them and says why.

`apply` carries a plan out through the backend, and only `--apply` calls it: the default is a dry run
that prints the plan.

It never touches MIG mode itself (that needs an idle GPU and often a reset): a card whose MIG mode is
off is reported as a problem of the plan.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from cluster_adapter.gpu_agent.nvml import GpuInfo, MigInstanceInfo, NvmlBackend, NvmlError
from vpolicy.model import gpu


@dataclass(frozen=True, slots=True)
class Create:
    gpu_uuid: str
    profile: str
    profile_id: int
    start: int
    size: int
    device_id: str  # the scheduler's name for it: GPU-..[group-position]


@dataclass(frozen=True, slots=True)
class Destroy:
    gpu_uuid: str
    gi_id: int
    profile: str
    start: int


@dataclass(frozen=True, slots=True)
class InUse:
    """The GPU instances pods on the node hold as their device ids tell: exact placements ((GPU UUID,
    profile, start) -> the device id), cards where a pod holds an instance whose placement cannot be told
    (UUID -> why), and `unreadable`: why no instance at all may go ("" when every pod could be read)."""

    placements: Mapping[tuple[str, str, int], str] = field(default_factory=dict)
    cards: Mapping[str, str] = field(default_factory=dict)
    unreadable: str = ""

    def why_spared(self, gpu_uuid: str, instance: MigInstanceInfo) -> str:
        """Why this unreserved instance must stay, "" when nothing shows it in use."""
        device_id = self.placements.get((gpu_uuid, instance.profile, instance.start))
        if device_id is not None:
            return f"in use as {device_id}"
        return self.cards.get(gpu_uuid) or self.unreadable


@dataclass(frozen=True, slots=True)
class MigPlan:
    destroy: tuple[Destroy, ...] = ()
    create: tuple[Create, ...] = ()
    keep: tuple[tuple[str, MigInstanceInfo], ...] = ()  # (device id, the existing instance that serves it)
    problems: tuple[str, ...] = ()
    spared: tuple[tuple[Destroy, str], ...] = ()  # unreserved instances left alone, each with why

    @property
    def empty(self) -> bool:
        return not self.destroy and not self.create

    def lines(self) -> list[str]:
        out = [f"destroy {d.gpu_uuid} GI {d.gi_id} ({d.profile} at {d.start})" for d in self.destroy]
        out += [f"spare {d.gpu_uuid} GI {d.gi_id} ({d.profile} at {d.start}): {why}" for d, why in self.spared]
        out += [f"create {c.gpu_uuid} {c.profile} at {c.start} for {c.device_id}" for c in self.create]
        out += [f"problem: {p}" for p in self.problems]
        return out


def in_use(devices: Iterable[gpu.ContainerDevice], gpus: Sequence[GpuInfo], *, unreadable: str = "") -> InUse:
    """Where the MIG devices that pods on the node hold sit. A vpolicy id (`[<geometry index>-<position>]`)
    names a placement of the card's MIG table; a Volcano id (`[<group name>-<position>]`), or an id on a card
    without a table, holds an instance that cannot be told apart, so the whole card is held."""
    by_uuid = {g.uuid: g for g in gpus}
    placements: dict[tuple[str, str, int], str] = {}
    cards: dict[str, str] = {}
    for device in devices:
        mig = gpu.parse_mig_id(device.uuid)
        if mig is None or mig[0] not in by_uuid:
            continue
        uuid, group, position = mig
        instance = _instance_of(by_uuid[uuid], group, position)
        if instance is None:
            cards[uuid] = f"{device.uuid} is in use and its placement cannot be told: the card is left as it is"
        else:
            placements[(uuid, instance.profile.name, instance.start)] = device.uuid
    return InUse(placements, cards, unreadable)


def plan(gpus: Sequence[GpuInfo], reservations: Iterable[gpu.MigAllocation], *, held: InUse = InUse()) -> MigPlan:
    """Destroy what nobody reserved and nobody holds, create what is reserved and missing."""
    by_uuid = {g.uuid: g for g in gpus}
    wanted: dict[tuple[str, str, int], gpu.MigAllocation] = {}
    problems: list[str] = []
    for r in reservations:
        if r.gpu_uuid not in by_uuid:
            problems.append(f"{r.device_id}: GPU {r.gpu_uuid} is not on this node")
            continue
        if not by_uuid[r.gpu_uuid].mig_enabled:
            problems.append(f"{r.device_id}: MIG mode is off on {r.gpu_uuid} (enable it with the GPU idle)")
            continue
        wanted[(r.gpu_uuid, r.profile, r.start)] = r
    destroy, keep, spared = [], [], []
    existing: set[tuple[str, str, int]] = set()
    for g in gpus:
        for inst in g.mig_instances:
            key = (g.uuid, inst.profile, inst.start)
            why = held.why_spared(g.uuid, inst)
            if key in wanted:
                existing.add(key)
                keep.append((wanted[key].device_id, inst))
            elif why:
                spared.append((Destroy(g.uuid, inst.gi_id, inst.profile, inst.start), why))
                if key in held.placements:
                    keep.append((held.placements[key], inst))
            else:
                destroy.append(Destroy(g.uuid, inst.gi_id, inst.profile, inst.start))
    create = []
    for key, r in sorted(wanted.items()):
        if key in existing:
            continue
        profile = next((p for p in by_uuid[r.gpu_uuid].mig_profiles if p.name == r.profile), None)
        if profile is None:
            problems.append(f"{r.device_id}: {r.gpu_uuid} offers no profile {r.profile}")
            continue
        create.append(Create(r.gpu_uuid, r.profile, profile.id, r.start, r.size, r.device_id))
    return MigPlan(tuple(destroy), tuple(create), tuple(keep), tuple(problems), tuple(spared))


def _instance_of(card: GpuInfo, group: int, position: int) -> gpu.MigInstance | None:
    """The instance a vpolicy MIG id names on this card, None when the id cannot be placed."""
    model = gpu.mig_model_for(card.name)
    if model is None or not 0 <= group < len(model.geometries):
        return None
    instances = model.instances(group)
    return instances[position] if 0 <= position < len(instances) else None


def apply(mig_plan: MigPlan, backend: NvmlBackend) -> tuple[dict[str, str], list[str]]:
    """Destroy, then create; the MIG UUID of every reserved device id, and the errors met."""
    uuids = {device_id: inst.uuid for device_id, inst in mig_plan.keep if inst.uuid}
    errors = []
    for d in mig_plan.destroy:
        try:
            backend.destroy_instance(d.gpu_uuid, d.gi_id)
        except NvmlError as exc:
            errors.append(str(exc))
    for c in mig_plan.create:
        try:
            made = backend.create_instance(c.gpu_uuid, c.profile_id, c.start)
        except NvmlError as exc:
            errors.append(str(exc))
            continue
        uuids[c.device_id] = made.uuid
    return uuids, errors
