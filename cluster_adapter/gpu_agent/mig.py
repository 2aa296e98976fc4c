"""The node's MIG plan: which GPU instances to create and destroy so the assigned pods get their slices.

The scheduler reserves MIG instances by profile and placement (`volcano.sh/vgpu-mig-allocations`, the
reservation model kubernetes-and-gpu.md §8.6 recommends). `plan` compares what the pods on this node
hold with the GPU instances NVML reports: instances nobody reserved are destroyed, reservations with no
instance at their placement are created (destroys first, so a re-cut card frees its slices before the
new ones are made). `apply` carries a plan out through the backend, and only `--apply` calls it: the
default is a dry run that prints the plan.

It never touches MIG mode itself (that needs an idle GPU and often a reset): a card whose MIG mode is
off is reported as a problem of the plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

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
class MigPlan:
    destroy: tuple[Destroy, ...] = ()
    create: tuple[Create, ...] = ()
    keep: tuple[tuple[str, MigInstanceInfo], ...] = ()  # (device id, the existing instance that serves it)
    problems: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.destroy and not self.create

    def lines(self) -> list[str]:
        out = [f"destroy {d.gpu_uuid} GI {d.gi_id} ({d.profile} at {d.start})" for d in self.destroy]
        out += [f"create {c.gpu_uuid} {c.profile} at {c.start} for {c.device_id}" for c in self.create]
        out += [f"problem: {p}" for p in self.problems]
        return out


def plan(gpus: Sequence[GpuInfo], reservations: Iterable[gpu.MigAllocation]) -> MigPlan:
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
    destroy, keep = [], []
    existing: set[tuple[str, str, int]] = set()
    for g in gpus:
        for inst in g.mig_instances:
            key = (g.uuid, inst.profile, inst.start)
            if key in wanted:
                existing.add(key)
                keep.append((wanted[key].device_id, inst))
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
    return MigPlan(tuple(destroy), tuple(create), tuple(keep), tuple(problems))


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
