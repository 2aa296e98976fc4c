"""Pod cgroups where the kubelet lays them out, and one writer for cgroup v1 and v2.

Layout (`CgroupTree`), for a pod of QoS class Q and uid U under the cgroup root R (`--cgroup-root`):

    driver    v1 (one tree per controller C)                    v2 (unified)
    cgroupfs  R/C/kubepods[/burstable|/besteffort]/podU         R/kubepods[/burstable|/besteffort]/podU
    systemd   R/C/kubepods.slice/kubepods-burstable.slice/      R/kubepods.slice/kubepods-burstable.slice/
                kubepods-burstable-podU'.slice                    kubepods-burstable-podU'.slice

Guaranteed pods sit directly under kubepods; U' is the uid with '-' turned to '_' (systemd escaping).
The version is v2 when R has `cgroup.controllers`; the driver is systemd when `kubepods.slice` exists.

The writer (`CgroupWriter`, `V1Writer`/`V2Writer`) turns the agent's intentions into the files of each
version, e.g. "BE pods idle" is `cpu.qos_level = -1` on v1 kernels that have it and `cpu.idle = 1` on v2.
Writes go only to files that exist (a cgroup file cannot be created, and a missing one means the kernel
lacks the feature), only when the value differs, and to the pod directory and every directory below it
(its containers), as Volcano's `UpdatePodCgroup` does. Every write is returned as a `Write` so a dry run
or a test can see it. Reading usage counters for the probes is here too, since the files are the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cluster_adapter.colocation import qos

V1, V2 = "v1", "v2"
CGROUPFS, SYSTEMD = "cgroupfs", "systemd"
CPU_PERIOD_US = 100_000  # the CFS period the kubelet uses
MIN_QUOTA_US = 1_000  # the kernel refuses a quota under 1 ms
UNLIMITED = -1


@dataclass(frozen=True, slots=True)
class Write:
    path: str
    old: str
    new: str

    def __str__(self) -> str:
        return f"{self.path}: {self.old or '(empty)'} -> {self.new}"


@dataclass(frozen=True, slots=True)
class CgroupTree:
    root: Path
    version: str
    driver: str

    @classmethod
    def detect(cls, root: Path, *, driver: str | None = None) -> CgroupTree:
        version = V2 if (root / "cgroup.controllers").exists() else V1
        if driver is None:
            base = root if version == V2 else root / "cpu"
            driver = SYSTEMD if (base / "kubepods.slice").exists() else CGROUPFS
        return cls(root, version, driver)

    def kube_dir(self, controller: str) -> Path:
        return self._join(controller, ["kubepods"])

    def qos_dir(self, qos_class: str, controller: str) -> Path:
        return self._join(controller, ["kubepods", *_qos_part(qos_class)])

    def pod_dir(self, qos_class: str, uid: str, controller: str) -> Path:
        return self._join(controller, ["kubepods", *_qos_part(qos_class), f"pod{uid}"])

    def _join(self, controller: str, names: list[str]) -> Path:
        base = self.root if self.version == V2 else self.root / controller
        if self.driver == CGROUPFS:
            return base.joinpath(*names)
        parts, prefix = [], ""
        for name in names:  # systemd's slice expansion: a-b-c.slice lives in a.slice/a-b.slice/
            prefix = f"{prefix}-{name.replace('-', '_')}" if prefix else name.replace("-", "_")
            parts.append(f"{prefix}.slice")
        return base.joinpath(*parts)


class CgroupWriter(Protocol):
    tree: CgroupTree

    def cpu_qos(self, pod_dir: Path, level: int) -> list[Write]: ...

    def memory_qos(self, pod_dir: Path, level: int, *, request: int, limit: int) -> list[Write]: ...

    def cpu_burst(self, pod_dir: Path, burst_us: int) -> list[Write]: ...

    def be_quota(self, milli: int | None) -> list[Write]: ...

    def batch_resources(self, pod_dir_cpu: Path, pod_dir_memory: Path, *, request_milli: int, limit_milli: int,
                        memory_limit: int) -> list[Write]: ...

    def cpu_usage_ns(self, cgroup_dir: Path) -> int | None: ...

    def memory_usage(self, cgroup_dir: Path) -> int | None: ...


def writer_for(tree: CgroupTree) -> CgroupWriter:
    return V2Writer(tree) if tree.version == V2 else V1Writer(tree)


class V1Writer:
    """cgroup v1: cpu.qos_level / memory.qos_level (openEuler kernels), cfs quota and burst, shares."""

    def __init__(self, tree: CgroupTree):
        self.tree = tree

    def cpu_qos(self, pod_dir: Path, level: int) -> list[Write]:
        return update_tree(pod_dir, "cpu.qos_level", str(level))

    def memory_qos(self, pod_dir: Path, level: int, *, request: int, limit: int) -> list[Write]:
        # memory.qos_level knows only 0 (online) and -1 (offline: reclaimed and OOM-killed first)
        return update_tree(pod_dir, "memory.qos_level", "-1" if level < 0 else "0")

    def cpu_burst(self, pod_dir: Path, burst_us: int) -> list[Write]:
        return _burst(pod_dir, burst_us, quota_file="cpu.cfs_quota_us", burst_file="cpu.cfs_burst_us",
                      read=_read_v1_quota)

    def be_quota(self, milli: int | None) -> list[Write]:
        value = UNLIMITED if milli is None else quota_us(milli)
        return update_file(self.tree.qos_dir(qos.BESTEFFORT, "cpu") / "cpu.cfs_quota_us", str(value))

    def batch_resources(self, pod_dir_cpu: Path, pod_dir_memory: Path, *, request_milli: int, limit_milli: int,
                        memory_limit: int) -> list[Write]:
        out = update_file(pod_dir_cpu / "cpu.shares", str(milli_to_shares(request_milli)))
        if limit_milli:
            out += update_file(pod_dir_cpu / "cpu.cfs_quota_us", str(quota_us(limit_milli)))
        if memory_limit:
            out += update_file(pod_dir_memory / "memory.limit_in_bytes", str(memory_limit))
        return out

    def cpu_usage_ns(self, cgroup_dir: Path) -> int | None:
        return _read_int(cgroup_dir / "cpuacct.usage")

    def memory_usage(self, cgroup_dir: Path) -> int | None:
        # Volcano's reading: total_cache + total_rss + total_swap of memory.stat
        stat = _read_stat(cgroup_dir / "memory.stat")
        if stat is None:
            return None
        return sum(stat.get(k, 0) for k in ("total_cache", "total_rss", "total_swap"))


class V2Writer:
    """cgroup v2: cpu.idle / cpu.weight, cpu.max and cpu.max.burst, memory.high / memory.low / memory.min."""

    WEIGHTS = {2: 1000, 1: 500, 0: 100}  # Volcano's CalculateCPUWeightFromQoSLevel

    def __init__(self, tree: CgroupTree):
        self.tree = tree

    def cpu_qos(self, pod_dir: Path, level: int) -> list[Write]:
        if level < 0:
            return update_tree(pod_dir, "cpu.idle", "1")
        return update_tree(pod_dir, "cpu.idle", "0") + update_tree(pod_dir, "cpu.weight", str(self.WEIGHTS[level]))

    def memory_qos(self, pod_dir: Path, level: int, *, request: int, limit: int) -> list[Write]:
        if level < 0:  # offline: reclaimed hard before it reaches its limit, nothing protected
            high = str(limit) if limit else "max"
            return update_file(pod_dir / "memory.high", high) + update_file(pod_dir / "memory.min", "0") + \
                update_file(pod_dir / "memory.low", "0")
        if level == 2:  # LC/HLS: its requested memory is never reclaimed
            return update_file(pod_dir / "memory.min", str(request)) + update_file(pod_dir / "memory.high", "max")
        if level == 1:  # LS: its requested memory is reclaimed last
            return update_file(pod_dir / "memory.low", str(request)) + update_file(pod_dir / "memory.high", "max")
        return []

    def cpu_burst(self, pod_dir: Path, burst_us: int) -> list[Write]:
        return _burst(pod_dir, burst_us, quota_file="cpu.max", burst_file="cpu.max.burst", read=_read_v2_quota)

    def be_quota(self, milli: int | None) -> list[Write]:
        path = self.tree.qos_dir(qos.BESTEFFORT, "cpu") / "cpu.max"
        if milli is None:
            return [] if _read_v2_quota(path) in (None, UNLIMITED) else update_file(path, "max")
        return update_file(path, f"{quota_us(milli)} {CPU_PERIOD_US}")

    def batch_resources(self, pod_dir_cpu: Path, pod_dir_memory: Path, *, request_milli: int, limit_milli: int,
                        memory_limit: int) -> list[Write]:
        out = update_file(pod_dir_cpu / "cpu.weight", str(min(max(request_milli // 10, 1), 10000)))
        if limit_milli:
            out += update_file(pod_dir_cpu / "cpu.max", f"{quota_us(limit_milli)} {CPU_PERIOD_US}")
        if memory_limit:
            out += update_file(pod_dir_memory / "memory.max", str(memory_limit))
        return out

    def cpu_usage_ns(self, cgroup_dir: Path) -> int | None:
        stat = _read_stat(cgroup_dir / "cpu.stat")
        return None if stat is None or "usage_usec" not in stat else stat["usage_usec"] * 1000

    def memory_usage(self, cgroup_dir: Path) -> int | None:
        return _read_int(cgroup_dir / "memory.current")


def quota_us(milli: int) -> int:
    """CFS quota for `milli` millicores per 100 ms period, at least the kernel's 1 ms."""
    return max(milli * CPU_PERIOD_US // 1000, MIN_QUOTA_US)


def milli_to_shares(milli: int) -> int:
    """The kubelet's MilliCPUToShares: 1024 per cpu, within [2, 262144]."""
    return min(max(milli * 1024 // 1000, 2), 262144)


def update_file(path: Path, value: str) -> list[Write]:
    """Write `value` to an existing cgroup file when it differs; nothing when the file is missing."""
    try:
        old = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return []
    if old == value:
        return []
    path.write_text(value + "\n", encoding="ascii")
    return [Write(str(path), old, value)]


def update_tree(pod_dir: Path, name: str, value: str) -> list[Write]:
    """`update_file` on `name` in `pod_dir` and in every directory below it (its containers)."""
    if not pod_dir.is_dir():
        return []
    out = update_file(pod_dir / name, value)
    for child in sorted(p for p in pod_dir.rglob("*") if p.is_dir()):
        out += update_file(child / name, value)
    return out


def _burst(pod_dir: Path, burst_us: int, *, quota_file: str, burst_file: str,
           read: "_QuotaReader") -> list[Write]:
    """Volcano's CPU burst: each container may burst by `burst_us` (its own quota when 0 or larger),
    the pod by the sum; containers and pods without a quota are left alone."""
    if not pod_dir.is_dir():
        return []
    out: list[Write] = []
    total = 0
    for child in sorted(p for p in pod_dir.rglob("*") if p.is_dir()):
        quota = read(child / quota_file)
        if quota is None or quota == UNLIMITED:
            continue
        burst = quota if burst_us <= 0 or burst_us > quota else burst_us
        total += burst
        out += update_file(child / burst_file, str(burst))
    pod_quota = read(pod_dir / quota_file)
    if pod_quota is not None and pod_quota != UNLIMITED:
        out += update_file(pod_dir / burst_file, str(total))
    return out


class _QuotaReader(Protocol):
    def __call__(self, path: Path) -> int | None: ...


def _read_v1_quota(path: Path) -> int | None:
    return _read_int(path)


def _read_v2_quota(path: Path) -> int | None:
    try:
        first = path.read_text(encoding="ascii").split()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not first:
        return None
    return UNLIMITED if first[0] == "max" else int(first[0]) if first[0].lstrip("-").isdigit() else None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return int(text) if text.lstrip("-").isdigit() else None


def _read_stat(path: Path) -> dict[str, int] | None:
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return None
    out: dict[str, int] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _qos_part(qos_class: str) -> list[str]:
    return {qos.BURSTABLE: ["burstable"], qos.BESTEFFORT: ["besteffort"]}.get(qos_class, [])
