"""Numatopology objects (`nodeinfo.volcano.sh/v1alpha1`): one node's CPU layout and its kubelet's policies.

Volcano's resource-exporter writes one Numatopology per node, named after the node: the kubelet's
`CPUManagerPolicy` and `TopologyManagerPolicy` (`spec.policies`), what the kubelet keeps back
(`spec.resReserved`), the CPUs still free for exclusive use per resource (`spec.numares.<res>.allocatable`,
a Linux cpuset text such as `0-3,8`), and each logical CPU's NUMA node, socket and core
(`spec.cpuDetail`); for GPUs, the free `nvidia.com/gpu` indices (`spec.numares["nvidia.com/gpu"]`, the
same cpuset text) and each GPU's NUMA node (`spec.gpuDetail.<index>.numa`); and, from a newer exporter,
the pods whose resources the kubelet has assigned (`spec.podAllocations`). The numa-aware plugin reads
them (`vpolicy.compile.numa`); this module only holds them and parses cpuset texts. Standard library only.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vpolicy.source import Span

CPU_MANAGER_POLICY = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
# The pod annotation a vcjob task's topologyPolicy becomes (Volcano's batch.NumaPolicyKey).
POD_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
GPU = "nvidia.com/gpu"  # the one device resource numa-aware aligns (Volcano's gpumanager provider)


@dataclass(frozen=True, slots=True)
class CpuInfo:
    """Where one logical CPU sits (kubelet's topology.CPUInfo)."""

    numa: int
    socket: int
    core: int


@dataclass(frozen=True, slots=True)
class NumaTopology:
    """One node's Numatopology. `name` is the node's name; `reserved_cpu` is resReserved's cpu in millicores
    (0 when absent); `allocatable` holds each numares resource's free CPU ids."""

    name: str
    policies: Mapping[str, str] = field(default_factory=dict)
    reserved_cpu: int = 0
    allocatable: Mapping[str, frozenset[int]] = field(default_factory=dict)
    cpus: Mapping[int, CpuInfo] = field(default_factory=dict)
    origin: Span | None = field(default=None, compare=False)
    gpus: Mapping[int, int] = field(default_factory=dict)  # GPU index -> its NUMA node (spec.gpuDetail)
    # spec.podAllocations: the pods (uid, and namespace/name) the exporter reports the kubelet has assigned
    assigned_pods: frozenset[str] = frozenset()
    version: str = ""  # metadata.resourceVersion: a new one replaces what the scheduler held back (NumaHold)

    @property
    def cpu_manager_policy(self) -> str:
        return self.policies.get(CPU_MANAGER_POLICY, "")

    @property
    def topology_manager_policy(self) -> str:
        return self.policies.get(TOPOLOGY_MANAGER_POLICY, "")

    @property
    def numa_nodes(self) -> tuple[int, ...]:
        """The NUMA node ids of its CPUs, ascending (Volcano's GenerateNumaNodes)."""
        return tuple(sorted({c.numa for c in self.cpus.values()}))


def parse_cpuset(text: str) -> frozenset[int]:
    """A Linux cpuset list (`0-3,7,9-10`; "" is empty), as k8s.io/utils/cpuset.Parse reads it.

    Raises ValueError saying what is wrong."""
    out: set[int] = set()
    if text.strip() == "":
        return frozenset()
    for part in text.split(","):
        bounds = part.strip().split("-")
        if len(bounds) == 1 and bounds[0].isdigit():
            out.add(int(bounds[0]))
        elif len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            low, high = int(bounds[0]), int(bounds[1])
            if low > high:
                raise ValueError(f"range {part.strip()!r} runs backwards")
            out.update(range(low, high + 1))
        else:
            raise ValueError(f"{part.strip()!r} is not a CPU id or a range a-b")
    return frozenset(out)


def format_cpuset(cpus: frozenset[int] | set[int]) -> str:
    """The shortest cpuset text for the ids (`0-3,7`), as cpuset.String writes it."""
    ids = sorted(cpus)
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class NumaHold:
    """CPUs and GPUs the numa-aware plugin gave a pod bound in an earlier session, held back from the
    node's free sets until the node's Numatopology shows them taken: Volcano's OnSessionClose writes them
    into its cache (UpdateSchedulerNumaInfo), where they stay until the Numatopology object is updated
    (its informer replaces the node's NUMA info) or, with an exporter that reports `podAllocations`, until
    it lists the pod. `version` is the Numatopology's resourceVersion the hold was taken against."""

    pod: str  # uid
    key: str  # namespace/name
    node: str
    version: str
    cpus: frozenset[int] = frozenset()
    gpus: frozenset[int] = frozenset()

    def applies_to(self, topology: NumaTopology) -> bool:
        """Still held on this Numatopology: the same object version, and the pod not reported assigned."""
        return (topology.name == self.node and topology.version == self.version
                and self.pod not in topology.assigned_pods and self.key not in topology.assigned_pods)
