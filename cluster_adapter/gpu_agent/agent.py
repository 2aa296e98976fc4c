"""One node's GPU agent, one tick at a time: register the cards, hand assigned pods their devices.

A tick (`Agent.tick`) takes the Node object and the pods as the API returns them (plain JSON) and
returns what to write: the Node's annotations and extended resources, and for every pod the scheduler
assigned to this node (`volcano.sh/vgpu-node` = this node, `bind-phase` = allocating) its per-container
devices and environment and the annotations that close the handshake (`bind-phase` success or failed).
In mig mode it first plans the GPU instances the node's reservations need (`mig.plan`) and, only with
`apply_mig`, creates and destroys them through NVML; in a dry run a pod whose instance does not exist
yet is left allocating. An instance that any pod on the node holds by its device ids (a Volcano-placed
pod has no reservation), or that might be held by a pod whose devices cannot be read, is never destroyed.

The Kubernetes calls are `api.py`'s, the NVML calls the backend's; this module only decides, so the
whole agent runs in tests on a `FakeNvml` and plain dicts. The env of each container is kept in
`Tick.pods` for the caller to hand to the runtime (files, a CDI spec or a device-plugin response).
"""
from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from cluster_adapter.gpu_agent import discovery, hami, mig
from cluster_adapter.gpu_agent.nvml import GpuInfo, NvmlBackend, NvmlError
from vpolicy.model import gpu


@dataclass(frozen=True, slots=True)
class AgentSettings:
    node: str
    mode: str = gpu.MODE_HAMI_CORE
    split: int = gpu.DEFAULT_SPLIT
    apply_mig: bool = False  # --apply: really create/destroy MIG instances
    hami: hami.HamiSettings = hami.HamiSettings()


@dataclass(slots=True)
class Tick:
    node_patch: dict[str, Any] = field(default_factory=dict)
    status_patch: dict[str, Any] = field(default_factory=dict)
    pods: list[hami.PodAllocation] = field(default_factory=list)  # pods to patch (bind-phase and the rest)
    waiting: list[str] = field(default_factory=list)  # pods left allocating (dry-run MIG), with why
    mig_plan: mig.MigPlan = field(default_factory=mig.MigPlan)
    problems: list[str] = field(default_factory=list)


class Agent:
    def __init__(self, settings: AgentSettings, backend: NvmlBackend, *,
                 new_id: Callable[[], str] = lambda: str(uuidlib.uuid4())):
        self.settings = settings
        self.backend = backend
        self.new_id = new_id

    def tick(self, node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *, now: float) -> Tick:
        out = Tick()
        try:
            gpus = self.backend.gpus()
        except NvmlError as exc:
            out.problems.append(f"NVML: {exc}")
            gpus = []
        previous_text = (node.get("metadata", {}).get("annotations") or {}).get(gpu.NODE_REGISTER, "")
        previous = gpu.parse_inventory(previous_text) if previous_text else None
        inventory = discovery.discover(gpus, mode=self.settings.mode, split=self.settings.split,
                                       memory_factor=self.settings.hami.memory_factor, previous=previous)
        out.problems.extend(inventory.problems)
        layouts = discovery.mig_layouts(gpus) if self.settings.mode == gpu.MODE_MIG else None
        mine = [p for p in pods if _on_node(p, self.settings.node)]
        mig_uuids: dict[str, str] = {}
        if self.settings.mode == gpu.MODE_MIG:
            out.mig_plan = mig.plan(gpus, _reservations(mine, out.problems), held=_held(mine, gpus, out.problems))
            out.problems.extend(out.mig_plan.problems)
            mig_uuids = {device_id: inst.uuid for device_id, inst in out.mig_plan.keep if inst.uuid}
            if self.settings.apply_mig and not out.mig_plan.empty:
                mig_uuids, errors = mig.apply(out.mig_plan, self.backend)
                out.problems.extend(errors)
                try:
                    layouts = discovery.mig_layouts(self.backend.gpus())
                except NvmlError as exc:
                    out.problems.append(f"NVML: {exc}")
        out.node_patch = discovery.node_patch(inventory, now=now, layouts=layouts)
        out.status_patch = discovery.status_patch(inventory)
        for pod in mine:
            if not hami.is_assigned_to(pod, self.settings.node):
                continue
            result = hami.allocate_pod(pod, settings=self.settings.hami, mig_uuids=mig_uuids, new_id=self.new_id)
            if result.error.startswith("no MIG instance") and not self.settings.apply_mig:
                out.waiting.append(f"{result.key}: {result.error} (dry run: run with --apply to create it)")
                continue
            out.pods.append(result)
        return out


def _on_node(pod: Mapping[str, Any], node: str) -> bool:
    annotations = pod.get("metadata", {}).get("annotations") or {}
    spec_node = pod.get("spec", {}).get("nodeName") or ""
    phase = pod.get("status", {}).get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        return False  # its devices are free again
    return annotations.get(gpu.VGPU_NODE) == node or spec_node == node


def _held(pods: Sequence[Mapping[str, Any]], gpus: Sequence[GpuInfo], problems: list[str]) -> mig.InUse:
    """The MIG instances the pods on this node hold by their device ids (`vgpu-ids-new` and
    `devices-to-allocate`). A pod whose ids cannot be read might hold any instance: every one is spared,
    and the pod is a problem."""
    devices: list[gpu.ContainerDevice] = []
    unreadable: list[str] = []
    for pod in pods:
        annotations = pod.get("metadata", {}).get("annotations") or {}
        for key in (gpu.IDS_NEW, gpu.DEVICES_TO_ALLOCATE):
            try:
                devices.extend(d for c in gpu.decode_pod_devices(annotations.get(key) or "") for d in c)
            except gpu.ProtocolError as exc:
                why = f"{_key(pod)}: {key}: {exc}"
                problems.append(f"{why} (no MIG instance is destroyed while it cannot be read)")
                unreadable.append(why)
    return mig.in_use(devices, gpus, unreadable="; ".join(unreadable))


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata", {})
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _reservations(pods: Sequence[Mapping[str, Any]], problems: list[str]) -> list[gpu.MigAllocation]:
    out: list[gpu.MigAllocation] = []
    for pod in pods:
        text = (pod.get("metadata", {}).get("annotations") or {}).get(gpu.MIG_ALLOCATIONS)
        if not text:
            continue
        try:
            out.extend(gpu.decode_mig_allocations(text))
        except gpu.ProtocolError as exc:
            problems.append(f"{_key(pod)}: {exc} (its instances are kept as far as its device ids show them)")
    return out
