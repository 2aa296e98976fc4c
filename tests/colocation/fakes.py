"""Fake cgroup trees and /proc folders in a temporary directory, laid out as the kubelet and kernel do.

`make_tree(root, version, driver, pods)` creates the kubepods hierarchy (QoS class folders, one folder per
pod and one per container) with the files a kernel of that version shows, at their kernel defaults, so
the agent's writer finds exactly the files it would find on a node. `set_cpu_usage` and
`set_memory_usage` move the counters the probes read. Nothing here touches the host's /sys or /proc.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster_adapter.colocation import cgroups, qos

V1_CPU_FILES = {"cpu.shares": "1024", "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
                "cpu.cfs_burst_us": "0", "cpu.qos_level": "0", "cpuacct.usage": "0"}
V1_MEMORY_FILES = {"memory.limit_in_bytes": "9223372036854771712", "memory.qos_level": "0",
                   "memory.stat": "total_cache 0\ntotal_rss 0\ntotal_swap 0\n"}
V2_FILES = {"cpu.weight": "100", "cpu.max": "max 100000", "cpu.max.burst": "0", "cpu.idle": "0",
            "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n", "memory.current": "0",
            "memory.high": "max", "memory.max": "max", "memory.low": "0", "memory.min": "0"}


def pod(name: str, *, level: str | None = None, uid: str | None = None, node: str = "n1", cpu: str | None = None,
        memory: str | None = None, limits: dict[str, str] | None = None, batch_cpu: int | None = None,
        batch_memory: int | None = None, priority: int = 0, annotations: dict[str, str] | None = None,
        containers: int = 1) -> dict[str, Any]:
    """A running pod as the API returns it; BE pods ask batch resources the way Volcano's docs write them."""
    requests: dict[str, Any] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    if batch_cpu is not None:
        requests[qos.BATCH_CPU] = str(batch_cpu)
    if batch_memory is not None:
        requests[qos.BATCH_MEMORY] = str(batch_memory)
    notes = dict(annotations or {})
    if level:
        notes[qos.QOS_LEVEL_KEY] = level
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}", "annotations": notes},
            "spec": {"nodeName": node, "priority": priority,
                     "containers": [{"name": f"c{i}", "image": "x", "resources": resources}
                                    for i in range(containers)]},
            "status": {"phase": "Running"}}


def node(name: str = "n1", *, cpu: str = "8", memory: str = "16Gi", labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def make_tree(root: Path, version: str, driver: str, pods: list[dict[str, Any]]) -> cgroups.CgroupTree:
    """The kubepods hierarchy for `pods` under `root`, with the files of cgroup `version`."""
    tree = cgroups.CgroupTree(root, version, driver)
    if version == cgroups.V2:
        root.mkdir(parents=True, exist_ok=True)
        (root / "cgroup.controllers").write_text("cpu memory io\n")
    controllers = {"cpu": V1_CPU_FILES, "memory": V1_MEMORY_FILES} if version == cgroups.V1 else {"cpu": V2_FILES}
    for controller, files in controllers.items():
        dirs = [tree.kube_dir(controller), tree.qos_dir(qos.BURSTABLE, controller),
                tree.qos_dir(qos.BESTEFFORT, controller)]
        for p in pods:
            info = qos.pod_info(p)
            pod_dir = tree.pod_dir(info.qos_class, info.uid, controller)
            dirs.append(pod_dir)
            dirs += [pod_dir / f"container-{i}" for i in range(len(p["spec"]["containers"]))]
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
            for name, value in files.items():
                (d / name).write_text(value + "\n")
    return tree


def set_cpu_usage(tree: cgroups.CgroupTree, cgroup_dir: Path, total_ns: int) -> None:
    if tree.version == cgroups.V1:
        (cgroup_dir / "cpuacct.usage").write_text(f"{total_ns}\n")
    else:
        (cgroup_dir / "cpu.stat").write_text(f"usage_usec {total_ns // 1000}\nuser_usec 0\nsystem_usec 0\n")


def set_memory_usage(tree: cgroups.CgroupTree, cgroup_dir: Path, used: int) -> None:
    if tree.version == cgroups.V1:
        (cgroup_dir / "memory.stat").write_text(f"total_cache 0\ntotal_rss {used}\ntotal_swap 0\n")
    else:
        (cgroup_dir / "memory.current").write_text(f"{used}\n")


def make_proc(root: Path, *, busy_ticks: int = 0, idle_ticks: int = 0, mem_total_kb: int = 16 * 1024 * 1024,
              mem_available_kb: int = 8 * 1024 * 1024) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(f"cpu  {busy_ticks} 0 0 {idle_ticks} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    (root / "meminfo").write_text(f"MemTotal:       {mem_total_kb} kB\nMemFree:        1 kB\n"
                                  f"MemAvailable:   {mem_available_kb} kB\n")
    return root


def read(path: Path) -> str:
    return path.read_text().strip()
