"""Free CPUs and GPUs per NUMA-aware node through one session: which ones the pods placed in it hold.

Volcano's numa-aware plugin keeps, per node with a Numatopology, the CPUs still free for exclusive use
(`nodeResSets`, from `spec.numares.cpu.allocatable` at session open). A pod its predicate admitted takes
the CPUs the predicate chose when it is allocated or pipelined there (the plugin's AllocateFunc) and gives
them back when it is evicted or its statement is discarded (DeallocateFunc), so later predicates in the
session see earlier placements. `NumaLedger` is that table; `SessionState.set_status` tells it about every
status change. Pods already on the node at session open hold nothing here: the Numatopology's allocatable
set already leaves out the CPUs the kubelet has given them, except those the scheduler gave pods it
bound in an earlier session which the Numatopology does not show yet: those are the snapshot's
`numa_holds`, taken out at session open while they still apply (`NumaHold.applies_to`), and passed on,
with the binds of this session, as `Decisions.numa_holds` (`holds_after`), as Volcano's OnSessionClose
writes them into its cache. A pod placed where no numa-aware predicate ran (the plugin off) takes
nothing, as in Volcano. GPUs (`nvidia.com/gpu` indices) are kept beside the CPUs in the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vpolicy.compile import numa
from vpolicy.model.numa import GPU, NumaHold, NumaTopology
from vpolicy.model.snapshot import TaskStatus

if TYPE_CHECKING:
    from vpolicy.engine.state import NodeInfo, TaskInfo

_PLACING = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
_HOLDING = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
                      TaskStatus.RUNNING})


class NodeNuma:
    """One node's CPUs as the session sees them now; the `NumaSource` the DSL built-ins read."""

    def __init__(self, name: str, topology: NumaTopology):
        self.name = name
        self.topology = topology
        self.free_cpu: frozenset[int] = topology.allocatable.get("cpu", frozenset())
        self.free_gpu: frozenset[int] = topology.allocatable.get(GPU, frozenset())
        self.memo: dict[Any, numa.Fit | numa.Refused] = {}  # by pod spec, until the free CPUs change
        self.noted: set[Any] = set()  # pod specs (compile.numa.spec_key) a numa-aware predicate ran for here

    def note(self, key: Any) -> None:
        self.noted.add(key)

    def take(self, cpus: frozenset[int], gpus: frozenset[int] = frozenset()) -> None:
        self.free_cpu = self.free_cpu - cpus
        self.free_gpu = self.free_gpu - gpus
        self.memo.clear()

    def give_back(self, cpus: frozenset[int], gpus: frozenset[int] = frozenset()) -> None:
        self.free_cpu = self.free_cpu | cpus
        self.free_gpu = self.free_gpu | gpus
        self.memo.clear()

    def __repr__(self) -> str:
        return f"NodeNuma({self.name}, free {len(self.free_cpu)} cpus)"


@dataclass(slots=True)
class NumaLedger:
    nodes: dict[str, NodeNuma] = field(default_factory=dict)
    # uid -> (node, cpus, gpus) of the pods placed in this session
    holdings: dict[str, tuple[str, frozenset[int], frozenset[int]]] = field(default_factory=dict)
    carried: list[NumaHold] = field(default_factory=list)  # earlier sessions' holds that still apply

    @classmethod
    def open(cls, nodes: Mapping[str, "NodeInfo"], topologies: Iterable[NumaTopology],
             holds: Iterable[NumaHold] = ()) -> "NumaLedger":
        """The table at session open: every node that has a Numatopology of its name, less what earlier
        sessions' holds still keep back on it."""
        ledger = cls()
        for topology in topologies:
            node = nodes.get(topology.name)
            if node is None:
                continue
            node.numa = ledger.nodes[node.name] = NodeNuma(node.name, topology)
        for hold in holds:
            found = ledger.nodes.get(hold.node)
            if found is not None and hold.applies_to(found.topology):
                found.take(hold.cpus, hold.gpus)
                ledger.carried.append(hold)
        return ledger

    def holds_after(self, binds: Mapping[str, str], tasks: Iterable["TaskInfo"]) -> tuple[NumaHold, ...]:
        """What the next session must keep back: the carried holds, and the CPUs and GPUs of the pods
        this session binds (`binds`: pod key -> node), against their node's Numatopology version."""
        out = list(self.carried)
        for task in tasks:
            holding = self.holdings.get(task.uid)
            if holding is None or binds.get(task.key) != holding[0]:
                continue
            node, cpus, gpus = holding
            out.append(NumaHold(task.uid, task.key, node, self.nodes[node].topology.version, cpus, gpus))
        return tuple(out)

    def on_status(self, task: "TaskInfo") -> None:
        """Follow one status change (called by SessionState.set_status after it)."""
        if not self.nodes:
            return
        holding = self.holdings.get(task.uid)
        if holding is not None:
            if task.status in _HOLDING and task.node_name == holding[0]:
                return  # Allocated -> Binding, and the like
            self.nodes[holding[0]].give_back(holding[1], holding[2])
            del self.holdings[task.uid]
        if task.status not in _PLACING or not task.node_name:
            return
        node = self.nodes.get(task.node_name)
        if node is None or numa.spec_key(task) not in node.noted:
            return
        found = numa.answer(task, node)
        if isinstance(found, numa.Fit) and (found.cpus or found.gpus):
            node.take(found.cpus, found.gpus)
            self.holdings[task.uid] = (node.name, found.cpus, found.gpus)
