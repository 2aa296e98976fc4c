"""What the agent asks of NVML, as a Protocol with two backends: `nvidia-ml-py` (real) and a fake.

The agent needs few NVML facts: each GPU's index, minor number, UUID, name, total memory, MIG mode, the
GPU-instance profiles it offers (id, name, slices, memory, placements) and the GPU instances that exist;
and, only with `--apply`, two mutations: create a GPU instance (plus its compute instance) at a
placement, destroy one. `NvmlBackend` is exactly that; `RealNvml` implements it with `pynvml`
(kubernetes-and-gpu.md §8.7 lists the calls), `FakeNvml` in memory with A100/H100/H200 inventories for
tests and dry runs on machines without a GPU.

Nothing here changes a device unless `create_instance` / `destroy_instance` is called; discovery only
reads. NVML failures come out as `NvmlError` (chained from pynvml's), a missing library or driver as
`NvmlUnavailable`, so callers never import pynvml to catch them.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

MIB = 1024 * 1024


class NvmlError(Exception):
    """An NVML call failed."""


class NvmlUnavailable(NvmlError):
    """No NVML here: the library, the driver or the GPU is missing."""


@dataclass(frozen=True, slots=True)
class MigProfileInfo:
    """One GPU-instance profile as NVML reports it (nvmlDeviceGetGpuInstanceProfileInfo)."""

    index: int  # NVML_GPU_INSTANCE_PROFILE_* (the enum value)
    id: int  # the profile id other calls take
    name: str  # e.g. "1g.18gb" (NVML says "MIG 1g.18gb"; the prefix is dropped)
    slices: int
    instance_count: int
    memory_mib: int
    placements: tuple[tuple[int, int], ...] = ()  # (start, size)


@dataclass(frozen=True, slots=True)
class MigInstanceInfo:
    """One existing GPU instance: its id, profile and placement, and the MIG device UUID if known."""

    gi_id: int
    profile_id: int
    profile: str
    start: int
    size: int
    uuid: str = ""


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    minor: int
    uuid: str
    name: str
    memory_mib: int
    mig_enabled: bool | None = None  # None: the GPU does not support MIG
    mig_profiles: tuple[MigProfileInfo, ...] = ()
    mig_instances: tuple[MigInstanceInfo, ...] = ()


class NvmlBackend(Protocol):
    def driver_version(self) -> str: ...

    def gpus(self) -> list[GpuInfo]: ...

    def create_instance(self, gpu_uuid: str, profile_id: int, start: int) -> MigInstanceInfo: ...

    def destroy_instance(self, gpu_uuid: str, gi_id: int) -> None: ...

    def close(self) -> None: ...


# The real backend ----------------------------------------------------------------------------------------
class RealNvml:
    """NVML through `pynvml` (package nvidia-ml-py). Opening it without a driver raises NvmlUnavailable."""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError as exc:
            raise NvmlUnavailable("the nvidia-ml-py package (pynvml) is not installed") from exc
        self.nv: Any = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(f"NVML cannot start here: {exc}") from exc

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            raise NvmlError(f"{what}: {exc}") from exc

    def driver_version(self) -> str:
        return _text(self._call("driver version", self.nv.nvmlSystemGetDriverVersion))

    def gpus(self) -> list[GpuInfo]:
        out = []
        for i in range(self._call("device count", self.nv.nvmlDeviceGetCount)):
            handle = self._call("device handle", self.nv.nvmlDeviceGetHandleByIndex, i)
            memory = self._call("memory info", self.nv.nvmlDeviceGetMemoryInfo, handle)
            try:
                minor = int(self.nv.nvmlDeviceGetMinorNumber(handle))
            except self.nv.NVMLError:
                minor = i
            mig = self._mig_mode(handle)
            out.append(GpuInfo(i, minor, _text(self._call("uuid", self.nv.nvmlDeviceGetUUID, handle)),
                               _text(self._call("name", self.nv.nvmlDeviceGetName, handle)),
                               int(memory.total) // MIB, mig,
                               self._profiles(handle) if mig is not None else (),
                               self._instances(handle) if mig else ()))
        return out

    def _mig_mode(self, handle: Any) -> bool | None:
        try:
            current, _pending = self.nv.nvmlDeviceGetMigMode(handle)
        except self.nv.NVMLError:
            return None  # NOT_SUPPORTED on GPUs without MIG
        return bool(current == self.nv.NVML_DEVICE_MIG_ENABLE)

    def _profiles(self, handle: Any) -> tuple[MigProfileInfo, ...]:
        out = []
        for index in range(self.nv.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = self.nv.nvmlDeviceGetGpuInstanceProfileInfo(handle, index)
            except self.nv.NVMLError:
                continue  # not offered by this GPU (or MIG mode off)
            placements = self._placements(handle, int(info.id), int(info.instanceCount))
            out.append(MigProfileInfo(index, int(info.id), _profile_name(getattr(info, "name", b"")),
                                      int(info.sliceCount), int(info.instanceCount), int(info.memorySizeMB),
                                      placements))
        return tuple(out)

    def _placements(self, handle: Any, profile_id: int, count: int) -> tuple[tuple[int, int], ...]:
        array = (self.nv.c_nvmlGpuInstancePlacement_t * max(count, 1))()
        n = ctypes.c_uint(max(count, 1))
        try:
            self.nv.nvmlDeviceGetGpuInstancePossiblePlacements(handle, profile_id, array, ctypes.byref(n))
        except self.nv.NVMLError:
            return ()
        return tuple((int(array[i].start), int(array[i].size)) for i in range(n.value))

    def _instances(self, handle: Any) -> tuple[MigInstanceInfo, ...]:
        out = []
        for profile in self._profiles(handle):
            array = (self.nv.c_nvmlGpuInstance_t * max(profile.instance_count, 1))()
            n = ctypes.c_uint(0)
            try:
                self.nv.nvmlDeviceGetGpuInstances(handle, profile.id, array, ctypes.byref(n))
            except self.nv.NVMLError:
                continue
            for i in range(n.value):
                info = self._call("GPU instance info", self.nv.nvmlGpuInstanceGetInfo, array[i])
                out.append(MigInstanceInfo(int(info.id), profile.id, profile.name, int(info.placement.start),
                                           int(info.placement.size)))
        return tuple(out)

    def create_instance(self, gpu_uuid: str, profile_id: int, start: int) -> MigInstanceInfo:
        handle = self._call("device by uuid", self.nv.nvmlDeviceGetHandleByUUID, gpu_uuid)
        placement = self.nv.c_nvmlGpuInstancePlacement_t()
        placement.start = start
        profile = next(p for p in self._profiles(handle) if p.id == profile_id)
        placement.size = next((s for st, s in profile.placements if st == start), profile.slices)
        gi = self._call("create GPU instance", self.nv.nvmlDeviceCreateGpuInstanceWithPlacement, handle, profile_id,
                        ctypes.byref(placement))
        ci_profile = self._call("compute instance profile", self.nv.nvmlGpuInstanceGetComputeInstanceProfileInfo,
                                gi, _full_compute_profile(self.nv, profile.slices),
                                self.nv.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        self._call("create compute instance", self.nv.nvmlGpuInstanceCreateComputeInstance, gi, ci_profile.id)
        info = self._call("GPU instance info", self.nv.nvmlGpuInstanceGetInfo, gi)
        return MigInstanceInfo(int(info.id), profile_id, profile.name, start, placement.size)

    def destroy_instance(self, gpu_uuid: str, gi_id: int) -> None:
        handle = self._call("device by uuid", self.nv.nvmlDeviceGetHandleByUUID, gpu_uuid)
        gi = self._call("GPU instance", self.nv.nvmlDeviceGetGpuInstanceById, handle, gi_id)
        for index in range(self.nv.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):  # compute instances first
            try:
                info = self.nv.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                    gi, index, self.nv.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            except self.nv.NVMLError:
                continue
            array = (self.nv.c_nvmlComputeInstance_t * max(int(info.instanceCount), 1))()
            n = ctypes.c_uint(0)
            try:
                self.nv.nvmlGpuInstanceGetComputeInstances(gi, info.id, array, ctypes.byref(n))
            except self.nv.NVMLError:
                continue
            for i in range(n.value):
                self._call("destroy compute instance", self.nv.nvmlComputeInstanceDestroy, array[i])
        self._call("destroy GPU instance", self.nv.nvmlGpuInstanceDestroy, gi)

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass


def _full_compute_profile(nv: Any, slices: int) -> int:
    """The compute-instance profile that spans a GPU instance of `slices` slices."""
    name = {1: "1_SLICE", 2: "2_SLICE", 3: "3_SLICE", 4: "4_SLICE", 6: "6_SLICE", 7: "7_SLICE", 8: "8_SLICE"}
    return int(getattr(nv, f"NVML_COMPUTE_INSTANCE_PROFILE_{name.get(slices, '1_SLICE')}"))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _profile_name(raw: Any) -> str:
    text = _text(raw).strip()
    return text[4:] if text.startswith("MIG ") else text


# The fake backend --------------------------------------------------------------------------------------
# Profiles as NVML lists them for the four models (ids and names; memory as in vpolicy.model.gpu's tables).
_FAKE_PROFILES: dict[str, tuple[tuple[int, int, str, int, int, int, tuple[int, ...], int], ...]] = {
    # model: (index, id, name, slices, count, memory MiB, starts, size)
    "H200": ((0, 19, "1g.18gb", 1, 7, 17166, (0, 1, 2, 3, 4, 5, 6), 1), (1, 14, "2g.35gb", 2, 3, 33378, (0, 2, 4), 2),
             (2, 9, "3g.71gb", 3, 2, 67710, (0, 4), 4), (4, 0, "7g.141gb", 7, 1, 134468, (0,), 8)),
    "H100-80GB": ((0, 19, "1g.10gb", 1, 7, 9536, (0, 1, 2, 3, 4, 5, 6), 1), (1, 14, "2g.20gb", 2, 3, 19073, (0, 2, 4), 2),
                  (2, 9, "3g.40gb", 3, 2, 38146, (0, 4), 4), (4, 0, "7g.80gb", 7, 1, 76293, (0,), 8)),
    "A100-80GB": ((0, 19, "1g.10gb", 1, 7, 9728, (0, 1, 2, 3, 4, 5, 6), 1), (1, 14, "2g.20gb", 2, 3, 19968, (0, 2, 4), 2),
                  (2, 9, "3g.40gb", 3, 2, 40192, (0, 4), 4), (4, 0, "7g.80gb", 7, 1, 80896, (0,), 8)),
    "A100-40GB": ((0, 19, "1g.5gb", 1, 7, 4864, (0, 1, 2, 3, 4, 5, 6), 1), (1, 14, "2g.10gb", 2, 3, 9984, (0, 2, 4), 2),
                  (2, 9, "3g.20gb", 3, 2, 20096, (0, 4), 4), (4, 0, "7g.40gb", 7, 1, 40192, (0,), 8)),
}
FAKE_MODELS: dict[str, tuple[str, int]] = {  # model -> (NVML name, memory MiB)
    "H200": ("NVIDIA H200", 143771),
    "H100-80GB": ("NVIDIA H100 80GB HBM3", 81559),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", 81920),
    "A100-40GB": ("NVIDIA A100-SXM4-40GB", 40960),
}


@dataclass
class FakeNvml:
    """NVML in memory. `FakeNvml.of("H200", 8)` is an 8 x H200 node; `remove(uuid)` makes a GPU vanish
    (for health tests); `created` / `destroyed` record the mutations; `unavailable` behaves like a
    machine without a driver."""

    devices: list[GpuInfo] = field(default_factory=list)
    driver: str = "570.00-fake"
    created: list[tuple[str, str, int]] = field(default_factory=list)  # (gpu uuid, profile, start)
    destroyed: list[tuple[str, int]] = field(default_factory=list)
    _next_gi: int = 1

    @classmethod
    def of(cls, model: str, count: int, *, mig: bool = False, uuid_prefix: str = "GPU-fake") -> "FakeNvml":
        name, memory = FAKE_MODELS[model]
        profiles = tuple(MigProfileInfo(i, pid, pname, s, n, mem, tuple((st, size) for st in starts))
                         for i, pid, pname, s, n, mem, starts, size in _FAKE_PROFILES[model])
        devices = [GpuInfo(i, i, f"{uuid_prefix}-{model.lower()}-{i:02d}", name, memory, mig, profiles)
                   for i in range(count)]
        return cls(devices)

    def driver_version(self) -> str:
        return self.driver

    def gpus(self) -> list[GpuInfo]:
        return list(self.devices)

    def remove(self, uuid: str) -> None:
        self.devices = [d for d in self.devices if d.uuid != uuid]

    def _gpu(self, uuid: str) -> tuple[int, GpuInfo]:
        for i, d in enumerate(self.devices):
            if d.uuid == uuid:
                return i, d
        raise NvmlError(f"device by uuid: no GPU {uuid}")

    def create_instance(self, gpu_uuid: str, profile_id: int, start: int) -> MigInstanceInfo:
        i, device = self._gpu(gpu_uuid)
        if not device.mig_enabled:
            raise NvmlError(f"create GPU instance: MIG mode is off on {gpu_uuid}")
        profile = next((p for p in device.mig_profiles if p.id == profile_id), None)
        if profile is None:
            raise NvmlError(f"create GPU instance: no profile {profile_id}")
        size = next((s for st, s in profile.placements if st == start), None)
        if size is None:
            raise NvmlError(f"create GPU instance: {profile.name} cannot start at {start}")
        taken = {x for inst in device.mig_instances for x in range(inst.start, inst.start + inst.size)}
        if taken & set(range(start, start + size)):
            raise NvmlError(f"create GPU instance: slices {start}..{start + size - 1} are in use")
        instance = MigInstanceInfo(self._next_gi, profile_id, profile.name, start, size,
                                   f"MIG-{gpu_uuid[4:]}-{self._next_gi}")
        self._next_gi += 1
        self.devices[i] = replace(device, mig_instances=(*device.mig_instances, instance))
        self.created.append((gpu_uuid, profile.name, start))
        return instance

    def destroy_instance(self, gpu_uuid: str, gi_id: int) -> None:
        i, device = self._gpu(gpu_uuid)
        kept = tuple(x for x in device.mig_instances if x.gi_id != gi_id)
        if len(kept) == len(device.mig_instances):
            raise NvmlError(f"destroy GPU instance: no instance {gi_id} on {gpu_uuid}")
        self.devices[i] = replace(device, mig_instances=kept)
        self.destroyed.append((gpu_uuid, gi_id))

    def close(self) -> None:
        pass


def open_backend(*, fake: str | None = None) -> NvmlBackend:
    """`RealNvml()`, or a fake (`"H200x8"`, `"A100-40GBx2:mig"`) for dry runs without a GPU."""
    if not fake:
        return RealNvml()
    spec, _, flags = fake.partition(":")
    model, _, count = spec.rpartition("x")
    if model not in FAKE_MODELS or not count.isdigit():
        raise ValueError(f"fake NVML spec {fake!r}: write MODELxCOUNT[:mig], MODEL one of {', '.join(FAKE_MODELS)}")
    return FakeNvml.of(model, int(count), mig=flags == "mig")
