"""From what NVML sees to what the node registers: the vGPU inventory, MIG layouts and extended resources.

`discover` turns the backend's GPUs into `vpolicy.model.gpu.Card`s in minor-number order (as the device
plugin registers them), each `NVIDIA-<NVML name>` with its memory divided by the memory factor, in the
node's mode. A card the node registered before that NVML no longer shows is kept, marked unhealthy
(the issue's health rule), so the scheduler stops giving it out while pods that hold it still count.
`node_patch` / `status_patch` are the Node changes that register all of it (kubernetes-and-gpu.md §8.2).

Pure functions: no NVML calls of its own (the caller passes the GPUs), no API calls, no clock.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

from cluster_adapter.gpu_agent.nvml import GpuInfo
from vpolicy.model import gpu


def discover(gpus: Sequence[GpuInfo], *, mode: str = gpu.MODE_HAMI_CORE, split: int = gpu.DEFAULT_SPLIT,
             memory_factor: int = 1, previous: gpu.Inventory | None = None) -> gpu.Inventory:
    if mode not in gpu.MODES:
        raise ValueError(f"mode must be one of {', '.join(gpu.MODES)}, not {mode!r}")
    present = sorted(gpus, key=lambda g: (g.minor, g.index))
    cards = [gpu.Card(i, g.uuid, split, g.memory_mib // max(memory_factor, 1), f"NVIDIA-{g.name}", True, mode)
             for i, g in enumerate(present)]
    seen = {c.uuid for c in cards}
    problems = []
    for old in previous.cards if previous else ():
        if old.uuid not in seen:
            cards.append(replace(old, index=len(cards), health=False))
            problems.append(f"{old.uuid} is no longer visible to NVML: registered unhealthy")
    return gpu.Inventory(tuple(cards), tuple(problems))


def mig_layouts(gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """Each MIG-enabled GPU's current layout, `<profile>*<n>+...` in placement order ("" when not cut)."""
    out = {}
    for g in gpus:
        if not g.mig_enabled:
            continue
        counts: dict[str, int] = {}
        for inst in sorted(g.mig_instances, key=lambda x: x.start):
            counts[inst.profile] = counts.get(inst.profile, 0) + 1
        out[g.uuid] = "+".join(f"{name}*{n}" for name, n in counts.items())
    return out


def handshake_time(now: float) -> str:
    """Volcano's handshake clock format, `YYYY.MM.DD HH:MM:SS`, in UTC."""
    return time.strftime("%Y.%m.%d %H:%M:%S", time.gmtime(now))


def node_patch(inventory: gpu.Inventory, *, now: float, layouts: dict[str, str] | None = None) -> dict[str, Any]:
    """The Node metadata patch: the inventory, the handshake, and (mig mode) the MIG layouts."""
    annotations = {gpu.NODE_REGISTER: gpu.encode_inventory(inventory.cards),
                   gpu.NODE_HANDSHAKE: gpu.Handshake("Reported", handshake_time(now)).encode()}
    if layouts is not None:
        annotations[gpu.NODE_MIG_LAYOUT] = gpu.encode_mig_layout(layouts)
    return {"metadata": {"annotations": annotations}}


def extended_resources(inventory: gpu.Inventory) -> dict[str, str]:
    """What the node advertises for its healthy cards: sharing slots, memory (MiB) and cores (percent)."""
    healthy = [c for c in inventory.cards if c.health]
    return {gpu.VGPU_NUMBER: str(sum(c.split for c in healthy)),
            gpu.VGPU_MEMORY: str(sum(c.memory for c in healthy)),
            gpu.VGPU_CORES: str(100 * len(healthy))}


def status_patch(inventory: gpu.Inventory) -> dict[str, Any]:
    """The Node status patch (status subresource) that advertises the extended resources."""
    resources = extended_resources(inventory)
    return {"status": {"capacity": dict(resources), "allocatable": dict(resources)}}
