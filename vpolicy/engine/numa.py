"""Free CPUs per NUMA-aware node through one session: which CPUs the pods placed in it hold.

Volcano's numa-aware plugin keeps, per node with a Numatopology, the CPUs still free for exclusive use
(`nodeResSets`, from `spec.numares.cpu.allocatable` at session open). A pod its predicate admitted takes
the CPUs the predicate chose when it is allocated or pipelined there (the plugin's AllocateFunc) and gives
them back when it is evicted or its statement is discarded (DeallocateFunc), so later predicates in the
session see earlier placements. `NumaLedger` is that table; `SessionState.set_status` tells it about every
status change. Pods already on the node at session open hold nothing here: the Numatopology's allocatable
set already leaves out the CPUs the kubelet has given them. A pod placed where no numa-aware predicate
ran (the plugin off) takes nothing, as in Volcano.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vpolicy.compile import numa
from vpolicy.model.numa import NumaTopology
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
        self.memo: dict[Any, numa.Fit | numa.Refused] = {}  # by pod spec, until the free CPUs change
        self.noted: set[Any] = set()  # pod specs (compile.numa.spec_key) a numa-aware predicate ran for here

    def note(self, key: Any) -> None:
        self.noted.add(key)

    def take(self, cpus: frozenset[int]) -> None:
        self.free_cpu = self.free_cpu - cpus
        self.memo.clear()

    def give_back(self, cpus: frozenset[int]) -> None:
        self.free_cpu = self.free_cpu | cpus
        self.memo.clear()

    def __repr__(self) -> str:
        return f"NodeNuma({self.name}, free {len(self.free_cpu)} cpus)"


@dataclass(slots=True)
class NumaLedger:
    nodes: dict[str, NodeNuma] = field(default_factory=dict)
    holdings: dict[str, tuple[str, frozenset[int]]] = field(default_factory=dict)  # uid -> (node, cpus)

    @classmethod
    def open(cls, nodes: Mapping[str, "NodeInfo"], topologies: Iterable[NumaTopology]) -> "NumaLedger":
        """The table at session open: every node that has a Numatopology of its name."""
        ledger = cls()
        for topology in topologies:
            node = nodes.get(topology.name)
            if node is None:
                continue
            node.numa = ledger.nodes[node.name] = NodeNuma(node.name, topology)
        return ledger

    def on_status(self, task: "TaskInfo") -> None:
        """Follow one status change (called by SessionState.set_status after it)."""
        if not self.nodes:
            return
        holding = self.holdings.get(task.uid)
        if holding is not None:
            if task.status in _HOLDING and task.node_name == holding[0]:
                return  # Allocated -> Binding, and the like
            self.nodes[holding[0]].give_back(holding[1])
            del self.holdings[task.uid]
        if task.status not in _PLACING or not task.node_name:
            return
        node = self.nodes.get(task.node_name)
        if node is None or numa.spec_key(task) not in node.noted:
            return
        found = numa.answer(task, node)
        if isinstance(found, numa.Fit) and found.cpus:
            node.take(found.cpus)
            self.holdings[task.uid] = (node.name, found.cpus)
