"""Numatopology objects (`nodeinfo.volcano.sh/v1alpha1`, written by Volcano's resource-exporter) ->
`vpolicy.model.numa.NumaTopology`.

Field names are the CRD's: `spec.policies` (`CPUManagerPolicy`, `TopologyManagerPolicy`),
`spec.resReserved` (quantities as text: `{cpu: "1"}`), `spec.numares.<resource>.allocatable` (a cpuset
text, `0-3,8`; for `nvidia.com/gpu` the free GPU indices) and `.capacity`, `spec.cpuDetail.<cpu id>`
(`numa`, `socket`, `core`), `spec.gpuDetail.<gpu index>` (`numa`: Volcano's api.GPUDetails, which its
exporter fills per GPU), `spec.podAllocations[]` (`uid`, `name`, `namespace`). A cpuset text or a
CPU id that does not parse, and a free CPU that cpuDetail does not describe, are located errors (Volcano
logs the first and schedules as if the node had no free CPUs). A TopologyManagerPolicy other than
Kubernetes' four is a warning: Volcano then admits every pod as with `none`.

This module does not walk files (`vpolicy.load.cluster` does) and applies no plugin's rule.
"""
from __future__ import annotations

from vpolicy.load.fields import View
from vpolicy.model import numa, resources


def read_numatopology(obj: View) -> numa.NumaTopology | None:
    from vpolicy.load.kinds import read_meta  # kinds is the home of metadata reading

    meta = read_meta(obj, namespaced=False)
    spec = obj.mapping("spec")
    if meta is None:
        return None
    if spec is None:
        return numa.NumaTopology(name=meta.name, origin=meta.origin, version=_resource_version(obj))
    policies = spec.text_map("policies")
    topology_policy = policies.get(numa.TOPOLOGY_MANAGER_POLICY)
    if topology_policy is not None and topology_policy not in numa.TOPOLOGY_POLICIES:
        policy_view = spec.mapping("policies")
        where = policy_view.value_span(numa.TOPOLOGY_MANAGER_POLICY) if policy_view else spec.span()
        obj.problems.warn(where, f"Numatopology {meta.name}: TopologyManagerPolicy {topology_policy!r} is none of "
                                 f"{', '.join(numa.TOPOLOGY_POLICIES)}; numa-aware treats it as none")
    reserved = spec.mapping("resReserved")
    reserved_cpu = (reserved.quantity(resources.CPU, resources.CPU) or 0) if reserved and reserved.has("cpu") else 0
    cpus: dict[int, numa.CpuInfo] = {}
    detail = spec.mapping("cpuDetail")
    for key in detail.named_keys() if detail else ():
        info = detail.mapping(key) if detail else None
        if not key.isdigit():
            if detail:
                detail.bad_value(key, f"CPU id {key!r} is not a non-negative integer", "key cpuDetail by CPU id")
            continue
        if info is not None:
            cpus[int(key)] = numa.CpuInfo(numa=info.integer("numa", default=0, minimum=0),
                                          socket=info.integer("socket", default=0, minimum=0),
                                          core=info.integer("core", default=0, minimum=0))
    gpus: dict[int, int] = {}
    gpu_detail = spec.mapping("gpuDetail")
    for key in gpu_detail.named_keys() if gpu_detail else ():
        gpu = gpu_detail.mapping(key) if gpu_detail else None
        if not key.isdigit():
            if gpu_detail:
                gpu_detail.bad_value(key, f"GPU index {key!r} is not a non-negative integer",
                                     "key gpuDetail by GPU index")
            continue
        if gpu is not None:
            gpus[int(key)] = gpu.integer("numa", default=0, minimum=0)
    allocatable: dict[str, frozenset[int]] = {}
    numares = spec.mapping("numares")
    for name in numares.named_keys() if numares else ():
        res = numares.mapping(name) if numares else None
        if res is None:
            continue
        res.integer("capacity", default=0, minimum=0)
        try:
            found = numa.parse_cpuset(res.text("allocatable"))
        except ValueError as exc:
            res.bad_value("allocatable", f"not a cpuset: {exc}", "write CPU ids and ranges: 0-3,8")
            continue
        unknown = sorted(found - cpus.keys())
        if name == resources.CPU and cpus and unknown:
            res.bad_value("allocatable", f"CPUs {numa.format_cpuset(set(unknown))} are not in spec.cpuDetail",
                          "list every CPU in cpuDetail with its numa, socket and core")
            found = found & cpus.keys()
        unknown_gpus = sorted(found - gpus.keys())
        if name == numa.GPU and gpus and unknown_gpus:
            res.bad_value("allocatable", f"GPUs {numa.format_cpuset(set(unknown_gpus))} are not in spec.gpuDetail",
                          "list every GPU in gpuDetail with its numa node")
            found = found & gpus.keys()
        allocatable[name] = found
    assigned = set()
    for allocation in spec.mappings("podAllocations"):
        if allocation.text("uid"):
            assigned.add(allocation.text("uid"))
        if allocation.text("name"):
            assigned.add(f"{allocation.text('namespace') or 'default'}/{allocation.text('name')}")
    return numa.NumaTopology(name=meta.name, policies=policies, reserved_cpu=reserved_cpu,
                             allocatable=allocatable, cpus=cpus, origin=meta.origin, gpus=gpus,
                             assigned_pods=frozenset(assigned), version=_resource_version(obj))


def _resource_version(obj: View) -> str:
    meta = obj.mapping("metadata")
    return meta.text("resourceVersion") if meta else ""
