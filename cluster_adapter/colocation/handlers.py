"""The per-pod cgroup handlers: what each pod's cgroup should say, given its QoS level and the config.

    feature          pods                          v1 files                   v2 files
    CPU QoS          all (level 2, 1, 0, -1)       cpu.qos_level              cpu.weight (2: 1000, 1: 500,
                                                                              0: 100), cpu.idle (BE: 1)
    memory QoS       all                           memory.qos_level (0/-1)    memory.min (LC/HLS: request),
                                                                              memory.low (LS: request),
                                                                              memory.high (BE: limit)
    CPU burst        annotated                     cpu.cfs_burst_us           cpu.max.burst
                     volcano.sh/enable-quota-burst
    batch resources  requesting batch-cpu/memory   cpu.shares, cfs_quota_us,  cpu.weight, cpu.max,
                                                   memory.limit_in_bytes      memory.max

The first three follow the ConfigMap's switches (`cpuQosConfig`, `memoryQosConfig`, `cpuBurstConfig`)
and the node labels; the batch-resource handler always runs, because the kubelet sizes cgroups from
cpu/memory only and would leave a BE pod's batch requests and limits unenforced. The writer does the
version-specific part and writes only what changed; this module only chooses.
"""
from __future__ import annotations

from cluster_adapter.colocation import cgroups, config, qos

BURST_ENABLED_KEY = "volcano.sh/enable-quota-burst"
BURST_TIME_KEY = "volcano.sh/quota-burst-time"  # microseconds per period a container may burst


def apply_pod(writer: cgroups.CgroupWriter, pod: qos.PodInfo, cfg: config.ColocationConfig) -> list[cgroups.Write]:
    tree = writer.tree
    cpu_dir = tree.pod_dir(pod.qos_class, pod.uid, "cpu")
    memory_dir = tree.pod_dir(pod.qos_class, pod.uid, "memory")
    out: list[cgroups.Write] = []
    if cfg.enabled("cpu-qos"):
        out += writer.cpu_qos(cpu_dir, pod.level)
    if cfg.enabled("memory-qos"):
        limit = pod.batch_memory_limit or pod.memory_limit
        out += writer.memory_qos(memory_dir, pod.level, request=pod.memory_request, limit=limit)
    if cfg.enabled("cpu-burst") and config.parse_bool(pod.annotations.get(BURST_ENABLED_KEY)):
        out += writer.cpu_burst(cpu_dir, burst_time(pod))
    if pod.batch_cpu_request or pod.batch_cpu_limit or pod.batch_memory_limit:
        out += writer.batch_resources(cpu_dir, memory_dir, request_milli=pod.batch_cpu_request,
                                      limit_milli=pod.batch_cpu_limit, memory_limit=pod.batch_memory_limit)
    return out


def burst_time(pod: qos.PodInfo) -> int:
    """The annotated burst in microseconds; 0 (each container's own quota) when absent or not positive."""
    text = str(pod.annotations.get(BURST_TIME_KEY, "")).strip()
    return int(text) if text.isdigit() else 0
