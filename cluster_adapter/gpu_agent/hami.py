"""The node side of an assignment: `devices-to-allocate` decoded into each container's devices and env.

What the volcano-vgpu device plugin does at Allocate (kubernetes-and-gpu.md §8.4), as pure functions:
the pod's `volcano.sh/devices-to-allocate` holds one `;`-separated segment per container; the non-empty
segments are handed, in order, to the containers that ask for at least one card (`volcano.sh/vgpu-number`
above 0, or `vgpu-memory` alone), as the plugin pops the next NVIDIA segment for each Allocate. A
container asking `vgpu-number: 0` gets no device (Volcano gives it an empty segment; kubelet no Allocate). For a
HAMi-core card a container gets

    NVIDIA_VISIBLE_DEVICES=<uuids>             CUDA_DEVICE_MEMORY_LIMIT_<i>=<MiB x factor>m (i: index in the container)
    CUDA_DEVICE_SM_LIMIT=<cores of its first card>
    CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/<id>.cache
    (+ CUDA_OVERSUBSCRIBE=true when cores are scaled above 1, GPU_CORE_UTILIZATION_POLICY=disable
       when the core limit is off)

and the mounts of `libvgpu.so`, its `ld.so.preload` and a per-container cache folder. A MIG device gets
only `NVIDIA_VISIBLE_DEVICES=<MIG UUID>` (HAMi-core is not used on MIG). Once every segment is handed
out the pod's `bind-phase` becomes `success` and `vgpu-time` the max uint64, as the plugin writes them;
a mismatch makes it `failed`.

No API calls, no files: `agent` and `api` act on the results.
"""
from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from vpolicy.model import gpu

HOOK_PATH = "/usr/local/vgpu"  # where the device plugin installs libvgpu.so on the host
CONTAINER_HOOK = "/usr/local/vgpu/libvgpu.so"
CACHE_DIR = "/tmp/vgpu"


@dataclass(frozen=True, slots=True)
class HamiSettings:
    memory_factor: int = 1  # gpuMemoryFactor: the annotation's MiB are multiplied back by it
    core_scaling: float = 1.0  # deviceCoreScaling > 1 -> CUDA_OVERSUBSCRIBE
    disable_core_limit: bool = False
    hook_path: str = HOOK_PATH
    containers_dir: str = "/usr/local/vgpu/containers"


@dataclass(frozen=True, slots=True)
class ContainerAllocation:
    name: str
    devices: tuple[gpu.ContainerDevice, ...]
    env: Mapping[str, str]
    mounts: tuple[tuple[str, str], ...] = ()  # (host path, container path)


@dataclass(frozen=True, slots=True)
class PodAllocation:
    namespace: str
    name: str
    uid: str
    containers: tuple[ContainerAllocation, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)  # the pod patch that records the outcome
    error: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def container_env(devices: Sequence[gpu.ContainerDevice], *, cache_id: str,
                  settings: HamiSettings = HamiSettings(), mig: bool = False) -> dict[str, str]:
    """HAMi-core's environment for one container's cards; for MIG instances (`mig`, or devices still named
    by their reservation id) only the visible devices."""
    if not devices:
        return {}
    env = {"NVIDIA_VISIBLE_DEVICES": ",".join(d.uuid for d in devices)}
    if mig or any(gpu.parse_mig_id(d.uuid) for d in devices):
        return env
    for i, d in enumerate(devices):
        env[f"CUDA_DEVICE_MEMORY_LIMIT_{i}"] = f"{d.memory * settings.memory_factor}m"
    env["CUDA_DEVICE_SM_LIMIT"] = str(devices[0].cores)
    env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = f"{CACHE_DIR}/{cache_id}.cache"
    if settings.core_scaling > 1:
        env["CUDA_OVERSUBSCRIBE"] = "true"
    if settings.disable_core_limit:
        env["GPU_CORE_UTILIZATION_POLICY"] = "disable"
    return env


def container_mounts(pod_uid: str, container: str, settings: HamiSettings = HamiSettings()) -> tuple[tuple[str, str], ...]:
    return ((f"{settings.hook_path}/libvgpu.so", CONTAINER_HOOK),
            (f"{settings.containers_dir}/{pod_uid}_{container}", CACHE_DIR),
            ("/tmp/vgpulock", "/tmp/vgpulock"),
            (f"{settings.hook_path}/ld.so.preload", "/etc/ld.so.preload"))


def gpu_containers(pod: Mapping[str, Any]) -> list[str]:
    """Names of the containers that ask for at least one card, in spec order."""
    names = []
    for c in pod.get("spec", {}).get("containers", []) or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        if (gpu.VGPU_NUMBER in limits or gpu.VGPU_MEMORY in limits) and _card_count(limits) != 0:
            names.append(str(c.get("name", "")))
    return names


def _card_count(limits: Mapping[str, Any]) -> int | None:
    """The container's `vgpu-number` (memory alone: 1), None when it is not a plain integer (the kubelet
    has then asked for devices however it read it, so the container counts as a GPU one)."""
    if gpu.VGPU_NUMBER not in limits:
        return 1
    try:
        return max(0, int(str(limits[gpu.VGPU_NUMBER]).strip()))
    except ValueError:
        return None


def is_assigned_to(pod: Mapping[str, Any], node: str) -> bool:
    """A pod the scheduler gave devices on this node that the node has not handed out yet."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    return annotations.get(gpu.VGPU_NODE) == node and annotations.get(gpu.BIND_PHASE) == "allocating"


def allocate_pod(pod: Mapping[str, Any], *, settings: HamiSettings = HamiSettings(),
                 mig_uuids: Mapping[str, str] | None = None,
                 new_id: Callable[[], str] = lambda: str(uuidlib.uuid4())) -> PodAllocation:
    """Decode the pod's devices-to-allocate, give every GPU container its devices and environment, and
    say what to write back. `mig_uuids` maps a MIG device id (`GPU-..[g-p]`) to the MIG UUID the agent
    created for it."""
    meta = pod.get("metadata", {})
    ns, name, uid = str(meta.get("namespace", "default")), str(meta.get("name", "")), str(meta.get("uid", ""))
    annotations = meta.get("annotations") or {}
    try:
        segments = [s for s in gpu.decode_pod_devices(annotations.get(gpu.DEVICES_TO_ALLOCATE, "")) if s]
    except gpu.ProtocolError as exc:
        return _failed(ns, name, uid, f"{gpu.DEVICES_TO_ALLOCATE}: {exc}")
    wanted = gpu_containers(pod)
    if len(segments) != len(wanted):
        return _failed(ns, name, uid, f"{len(segments)} device segments for {len(wanted)} GPU containers")
    containers = []
    for container, devices in zip(wanted, segments):
        if any(gpu.parse_mig_id(d.uuid) for d in devices):
            missing = [d.uuid for d in devices if d.uuid not in (mig_uuids or {})]
            if missing:
                return _failed(ns, name, uid, f"no MIG instance for {', '.join(missing)}")
            devices = tuple(gpu.ContainerDevice((mig_uuids or {})[d.uuid], d.type, d.memory, d.cores) for d in devices)
            containers.append(ContainerAllocation(container, devices,
                                                  container_env(devices, cache_id=new_id(), mig=True)))
            continue
        containers.append(ContainerAllocation(container, devices, container_env(devices, cache_id=new_id(),
                                                                                  settings=settings),
                                              container_mounts(uid, container, settings)))
    consumed = ";".join("" for _ in gpu.decode_pod_devices(annotations.get(gpu.DEVICES_TO_ALLOCATE, "")))
    done = {gpu.BIND_PHASE: "success", gpu.VGPU_TIME: str(gpu.MAX_UINT64), gpu.DEVICES_TO_ALLOCATE: consumed}
    return PodAllocation(ns, name, uid, tuple(containers), done)


def _failed(ns: str, name: str, uid: str, why: str) -> PodAllocation:
    return PodAllocation(ns, name, uid, (), {gpu.BIND_PHASE: "failed"}, why)
