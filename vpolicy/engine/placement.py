"""Finding and choosing nodes for one task, the way Volcano's actions do, and recording why not.

`feasible_nodes` applies the action's resource check (request <= FutureIdle, "Insufficient <res>") and
then the policy's `predicate` rules; `best_node` splits candidates into those that fit Idle now and those
that fit only once releasing resources free up, and scores the first non-empty group with the policy's
`node_order` rules. Score ties go to the node that comes first in the snapshot (Volcano picks at random;
a deterministic choice keeps dry-runs reproducible). Fit errors are kept per task for explanations.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import NodeInfo, SessionState, TaskInfo


@dataclass(slots=True)
class FitErrors:
    """Why one task fits no node: node name -> reasons (Volcano's FitErrors)."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    message: str = ""

    def add(self, node: str, reasons: list[str]) -> None:
        self.nodes[node] = reasons

    def text(self) -> str:
        if self.message and not self.nodes:
            return self.message
        counts: Counter[str] = Counter(r for reasons in self.nodes.values() for r in reasons)
        histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"0/{len(self.nodes)} nodes are unavailable: {', '.join(histogram)}."


class Placement:
    def __init__(self, runtime: Runtime, state: SessionState):
        self.rt = runtime
        self.state = state
        self.node_list = list(state.nodes.values())

    def feasible_nodes(self, task: TaskInfo, errors: FitErrors, *, nodes: list[NodeInfo] | None = None) -> list[NodeInfo]:
        """Nodes passing the allocate-flavour predicate: resources fit FutureIdle, then every rule."""
        found = []
        for node in self.node_list if nodes is None else nodes:
            future = node.future_idle
            if not task.resreq.le(future):
                errors.add(node.name, [f"Insufficient {r}" for r in task.resreq.any_gt(future)])
                continue
            failure = self.rt.predicate(task, node)
            if failure is not None:
                errors.add(node.name, [failure.reason])
                continue
            found.append(node)
        return found

    def nominated_node(self, task: TaskInfo) -> list[NodeInfo]:
        """The pod's nominatedNodeName, tried first when the task fits its Idle and passes the rules."""
        node = self.state.nodes.get(task.pod.nominated_node) if task.pod.nominated_node else None
        if node is None or not task.resreq.le(node.idle):
            return []
        return self.feasible_nodes(task, FitErrors(), nodes=[node])

    def preempt_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        """Nodes where evicting could help: only `unresolvable` predicate failures exclude a node."""
        found = []
        for node in self.node_list:
            failure = self.rt.predicate(task, node)
            if failure is not None and failure.unresolvable:
                continue
            found.append(node)
        return found

    def best_node(self, task: TaskInfo, nodes: list[NodeInfo]) -> tuple[NodeInfo, bool]:
        """The node to use and whether it fits Idle now (allocate) or only FutureIdle (pipeline)."""
        idle_fit = [n for n in nodes if task.resreq.le(n.idle)]
        group = idle_fit or nodes
        if len(group) == 1:
            return group[0], bool(idle_fit)
        scores = self.rt.node_scores(task, group)
        best = group[0]
        for node in group[1:]:
            if scores[node.name] > scores[best.name]:
                best = node
        return best, bool(idle_fit)

    def ordered_by_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        scores = self.rt.node_scores(task, nodes)
        index = {n.name: i for i, n in enumerate(nodes)}
        return sorted(nodes, key=lambda n: (-scores[n.name], index[n.name]))
