"""How busy the node is: usage of its pods (from the cgroup tree) and of the whole machine (from /proc).

`UsageProbe.sample(pods, now)` returns a `Usage`: millicores and bytes used by all pods, by the
BestEffort cgroup (where BE pods run, since they request only batch resources), by each pod, and by the
machine (`/proc/stat`, `/proc/meminfo`). CPU usage is a rate: the probe keeps the previous counters and
divides by the time between two samples, on the clock the caller passes in; the first sample of a
counter gives no CPU figure (None), and callers skip CPU decisions until there is one.

`CgroupProcProbe` reads a real (or a fake, in tests) cgroup tree through `cgroups.CgroupWriter`'s
readers and a proc root (`--proc-root`). `StaticProbe` returns figures it is given: the fake the tests
raise and lower. Nothing here decides anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

from cluster_adapter.colocation import cgroups, qos

USER_HZ = 100  # /proc/stat ticks per second on every Linux the kubelet supports


@dataclass(frozen=True, slots=True)
class PodUsage:
    cpu_milli: int | None
    memory: int | None


@dataclass(frozen=True, slots=True)
class Usage:
    pods_cpu_milli: int | None  # every pod (the kubepods cgroup)
    pods_memory: int | None
    be_cpu_milli: int | None  # the BestEffort cgroup (BE pods)
    be_memory: int | None
    node_cpu_milli: int | None = None  # the whole machine, system daemons included
    node_memory: int | None = None
    per_pod: dict[str, PodUsage] = field(default_factory=dict)  # by pod uid

    def online_cpu_milli(self) -> int | None:
        if self.pods_cpu_milli is None:
            return None
        return max(self.pods_cpu_milli - (self.be_cpu_milli or 0), 0)


class UsageProbe(Protocol):
    def sample(self, pods: Sequence[qos.PodInfo], now: float) -> Usage: ...


class StaticProbe:
    """A probe that reports `usage` as set (tests change it between ticks)."""

    def __init__(self, usage: Usage):
        self.usage = usage

    def sample(self, pods: Sequence[qos.PodInfo], now: float) -> Usage:
        return self.usage


class CgroupProcProbe:
    """Usage from the cgroup tree and the proc filesystem, rates between consecutive samples."""

    def __init__(self, writer: cgroups.CgroupWriter, proc_root: Path):
        self.writer = writer
        self.proc_root = proc_root
        self._last: dict[str, tuple[float, int]] = {}  # counter name -> (time, nanoseconds of cpu)

    def sample(self, pods: Sequence[qos.PodInfo], now: float) -> Usage:
        tree = self.writer.tree
        per_pod: dict[str, PodUsage] = {}
        for pod in pods:
            cpu_dir = tree.pod_dir(pod.qos_class, pod.uid, "cpu")
            mem_dir = tree.pod_dir(pod.qos_class, pod.uid, "memory")
            per_pod[pod.uid] = PodUsage(self._rate(f"pod:{pod.uid}", self.writer.cpu_usage_ns(cpu_dir), now),
                                        self.writer.memory_usage(mem_dir))
        live = {f"pod:{p.uid}" for p in pods}
        for name in [n for n in self._last if n.startswith("pod:") and n not in live]:
            del self._last[name]  # a finished pod's counter would otherwise stay forever
        be_cpu = tree.qos_dir(qos.BESTEFFORT, "cpu")
        be_mem = tree.qos_dir(qos.BESTEFFORT, "memory")
        return Usage(
            pods_cpu_milli=self._rate("kubepods", self.writer.cpu_usage_ns(tree.kube_dir("cpu")), now),
            pods_memory=self.writer.memory_usage(tree.kube_dir("memory")),
            be_cpu_milli=self._rate("besteffort", self.writer.cpu_usage_ns(be_cpu), now),
            be_memory=self.writer.memory_usage(be_mem),
            node_cpu_milli=self._rate("node", self._node_cpu_ns(), now),
            node_memory=self._node_memory(),
            per_pod=per_pod)

    def _rate(self, name: str, counter_ns: int | None, now: float) -> int | None:
        if counter_ns is None:
            self._last.pop(name, None)
            return None
        previous = self._last.get(name)
        self._last[name] = (now, counter_ns)
        if previous is None or now <= previous[0] or counter_ns < previous[1]:
            return None  # first sample, a clock that did not move, or a counter that restarted
        return int((counter_ns - previous[1]) / (now - previous[0]) / 1e6)

    def _node_cpu_ns(self) -> int | None:
        """Busy time of all cpus: the first line of /proc/stat, idle and iowait excluded."""
        try:
            first = (self.proc_root / "stat").read_text(encoding="ascii").splitlines()[0].split()
        except (OSError, IndexError):
            return None
        if not first or first[0] != "cpu":
            return None
        ticks = [int(x) for x in first[1:] if x.isdigit()]
        busy = sum(v for i, v in enumerate(ticks) if i not in (3, 4))
        return busy * 1_000_000_000 // USER_HZ

    def _node_memory(self) -> int | None:
        """MemTotal - MemAvailable from /proc/meminfo, in bytes."""
        try:
            lines = (self.proc_root / "meminfo").read_text(encoding="ascii").splitlines()
        except OSError:
            return None
        values: dict[str, int] = {}
        for line in lines:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                values[key] = int(parts[0]) * 1024
        if "MemTotal" not in values or "MemAvailable" not in values:
            return None
        return values["MemTotal"] - values["MemAvailable"]
