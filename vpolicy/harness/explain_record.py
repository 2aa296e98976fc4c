"""One session run exactly as `engine.session.run_session` runs it, recording how nodes were chosen.

`explain` on a placed pod must show the scores that decided it *at the moment it was placed*, not at
the end of the session, when later placements have changed every node's usage. The engine's actions
ask `Placement.best_node` for every placement; a subclass records, for the pods asked about, the
candidate nodes, whether they fit Idle or only FutureIdle, and every `node_order` rule's score per node
(normalised and weighted as the runtime combines them). Decisions come from the same actions in the
same order and `session.close_session`, so they equal `run_session`'s; only the solver notes on
unplaced gangs (explain asks the solver its own questions) and device annotations are left out.
Committed evictions are recorded with their victim queue's allocated just before each one (`verify`'s
`reclaim-overused-only` and `guarantee-kept` need the numbers of that moment).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection

import numpy as np

from vpolicy.compile.lower import CompiledRule
from vpolicy.engine.actions import ACTIONS
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.placement import Placement, rule_score
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import CompiledPolicy, SessionResult, close_session
from vpolicy.engine.state import NodeInfo, SessionState, TaskInfo
from vpolicy.engine.statement import Outcome, Statement
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class RuleScore:
    rule: CompiledRule
    tier: int
    raw: dict[str, float]
    score: dict[str, float]  # what the rule adds to each node's total (normalised, weighted)


@dataclass(frozen=True, slots=True)
class Scoring:
    """One `best_node` decision for a recorded task."""

    action: str
    candidates: tuple[str, ...]  # feasible nodes offered
    group: tuple[str, ...]  # the ones scored: those that fit Idle, else all (FutureIdle)
    fits_idle: bool
    chosen: str
    rules: tuple[RuleScore, ...]
    totals: dict[str, float]


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """A committed eviction with the victim queue's numbers just before it (for verify's properties)."""

    pod: str
    action: str
    for_job: str
    queue: str
    allocated_before: Resources  # the victim queue's allocated (this queue only) before this eviction
    tree_allocated_before: Resources  # with its descendants


@dataclass(slots=True)
class Recorded:
    result: SessionResult
    scorings: dict[str, list[Scoring]] = field(default_factory=dict)  # task uid -> decisions, in order
    evictions: list[EvictionRecord] = field(default_factory=list)  # committed, in order


class _RecordingStatement(Statement):
    def __init__(self, state: SessionState, outcome: Outcome, sink: dict[int, EvictionRecord]):
        super().__init__(state, outcome)
        self.sink = sink

    def evict(self, task: TaskInfo, *, action: str, for_job: str, rule: str) -> None:
        queue = task.job.queue if task.job is not None else None
        before = queue.allocated if queue is not None else Resources()
        tree = queue.tree_allocated if queue is not None else Resources()
        super().evict(task, action=action, for_job=for_job, rule=rule)
        self.sink[id(self.ops[-1])] = EvictionRecord(task.key, action, for_job, queue.name if queue else "",
                                                     before, tree)


@dataclass(slots=True)
class _RecordingContext(ActionContext):
    sink: dict[int, EvictionRecord] = field(default_factory=dict)

    def statement(self) -> Statement:
        return _RecordingStatement(self.state, self.outcome, self.sink)


class _RecordingPlacement(Placement):
    def __init__(self, runtime: Runtime, state: SessionState, watch: Collection[str] | None):
        super().__init__(runtime, state)
        self.watch = watch
        self.action = ""
        self.scorings: dict[str, list[Scoring]] = {}

    def best_node(self, task: TaskInfo, nodes: list[NodeInfo]) -> tuple[NodeInfo, bool]:
        if self.watch is not None and task.uid not in self.watch:
            return super().best_node(task, nodes)
        node, fits_idle = super().best_node(task, nodes)
        self._record(task, nodes, node, fits_idle)
        return node, fits_idle

    def best_row(self, task: TaskInfo, rows: Any) -> tuple[NodeInfo, bool]:
        """The engine's fast path of `best_node` (node rows of its arrays): recorded the same way."""
        node, fits_idle = super().best_row(task, rows)
        if self.watch is None or task.uid in self.watch:
            self._record(task, [self.node_list[int(r)] for r in rows], node, fits_idle)
        return node, fits_idle

    def _record(self, task: TaskInfo, nodes: list[NodeInfo], node: NodeInfo, fits_idle: bool) -> None:
        """Scores as they stood when `node` was chosen (the caller has not placed the task yet)."""
        idle_fit = [n for n in nodes if task.resreq.le(n.idle)]
        group = idle_fit or nodes
        rules = rule_scores(self.rt, task, group) if len(group) > 1 else ()
        totals = dict(zip((n.name for n in group), map(float, self.scores(task, group)))) if len(group) > 1 \
            else {group[0].name: 0.0}
        self.scorings.setdefault(task.uid, []).append(Scoring(
            self.action, tuple(n.name for n in nodes), tuple(n.name for n in group), fits_idle, node.name,
            tuple(rules), totals))


    def rows_by_score(self, task: TaskInfo, rows: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        """preempt visits nodes by score; the node it ends up using is known only afterwards ("")."""
        ordered = super().rows_by_score(task, rows, among)
        if len(rows) and (self.watch is None or task.uid in self.watch):
            nodes = [self.node_list[int(r)] for r in rows]
            rules = rule_scores(self.rt, task, nodes)
            self.scorings.setdefault(task.uid, []).append(Scoring(
                self.action, tuple(n.name for n in nodes), tuple(n.name for n in nodes), False, "",
                tuple(rules), dict(zip((n.name for n in nodes), map(float, self.scores(task, nodes))))))
        return ordered


def run_recorded(snapshot: ClusterSnapshot, policy: CompiledPolicy, *, now: float = 0.0,
                 watch: Collection[str] | None = None) -> Recorded:
    """Run one session; record node choices for the task uids in `watch` (None: every task)."""
    state = SessionState(snapshot)
    runtime = Runtime(policy.tiers, state, now=now)
    placement = _RecordingPlacement(runtime, state, watch)
    ctx = _RecordingContext(runtime, state, placement, Outcome(), policy.actions)
    for name in policy.actions:
        placement.action = name
        ACTIONS[name](ctx)
    decisions = close_session(ctx)
    decisions.stats = {"rule_calls": runtime.calls}
    evictions = [ctx.sink[id(op)] for op in ctx.outcome.evicted if id(op) in ctx.sink]
    return Recorded(SessionResult(decisions, state, ctx), placement.scorings, evictions)


def rule_scores(rt: Runtime, task: TaskInfo, nodes: list[NodeInfo]) -> list[RuleScore]:
    """Each `node_order` rule's share of a node's score, computed as `Placement.scores` does."""
    tiers = {id(r): i for i, tier in enumerate(rt.tiers, start=1) for p in tier for r in p.rules("node_order")}
    out = []
    for rule in rt.rules("node_order"):
        raw = {n.name: float(rt.ask(rule, task, n)) for n in nodes}
        values = rule_score(rule, np.array(list(raw.values()), dtype=float), rt.env)
        score = {name: float(v) for name, v in zip(raw, values)}
        out.append(RuleScore(rule, tiers.get(id(rule), 0), raw, score))
    return out
