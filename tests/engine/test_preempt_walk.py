"""What preempt computes for every preemptor over every node (the nodes its predicates leave open, the
nodes its request fits on FutureIdle, the walk in score order) is kept per task class or request and
brought up to date on the nodes changed since: the answers must be those computed from scratch, after
any sequence of evictions and placements, and a session must decide the same with them as without."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine.placement import Placement, fits
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import run_session
from vpolicy.engine.state import SessionState
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, Taint, TaskStatus


def _from_scratch(rt: Runtime, state: SessionState, task: Any, among: np.ndarray) -> tuple[np.ndarray, ...]:
    """The answers a placement with nothing kept gives: the predicate chain over every row, the fit on
    each node's FutureIdle, and `among` in the order of the scores summed over every allowed row."""
    fresh = Placement(rt, state)
    mask = fresh.preempt_mask(task)
    future = np.array([fits(task.resreq, n.future_idle) for n in fresh.node_list], dtype=bool)
    allowed = np.flatnonzero(mask)
    ordered = allowed[np.argsort(-fresh._scores_rows(task, allowed), kind="stable")] if len(allowed) else allowed
    return mask, future, ordered[np.isin(ordered, among)]


def _few_pod_slots(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """Each node with room for two pods more than it runs, every other one with a taint no pod tolerates:
    placing a few pods fills a node (its pod count then fails, a rule preemption can help), and the
    taint excludes a node whatever else fails there."""
    running = Counter(p.node_name for p in snapshot.pods if p.node_name)
    nodes = tuple(dataclasses.replace(n, allocatable=Resources({**dict(n.allocatable.items()), "pods": running[n.name] + 2}),
                                      taints=n.taints + ((Taint("test/kept", "yes", "NoSchedule"),) if i % 2 else ()))
                  for i, n in enumerate(snapshot.nodes))
    return dataclasses.replace(snapshot, nodes=nodes)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(1, 10_000), nodes=st.integers(12, 40), steps=st.lists(st.integers(0, 10**6), min_size=1, max_size=12))
def test_kept_answers_are_those_from_scratch_as_nodes_change(seed: int, nodes: int, steps: list[int]) -> None:
    generated = gen.generate(gen.Size("small", nodes, nodes * 8), "preemption", seed=seed)
    state = SessionState(_few_pod_slots(generated.snapshot))
    rt = Runtime(policy_for("preemption").tiers, state)
    kept = Placement(rt, state)
    node_names = [n.name for n in kept.node_list]
    pending = [t for t in state.tasks.values() if t.status is TaskStatus.PENDING and t.job is not None]
    probes = pending[:: max(1, len(pending) // 6)][:6]
    for step in steps:
        running = [t for t in state.tasks.values() if t.status is TaskStatus.RUNNING]
        waiting = [t for t in state.tasks.values() if t.status is TaskStatus.PENDING]
        # evict a running pod, or pipeline a pending one on some node: both change that node only
        if step % 2 and running:
            state.set_status(running[step % len(running)], TaskStatus.RELEASING)
        elif waiting:
            state.set_status(waiting[step % len(waiting)], TaskStatus.PIPELINED, node_names[step % 4])
        for task in probes:
            among = np.flatnonzero(kept.fits_future(task) | (np.arange(len(node_names)) % 3 == 0))
            allowed = np.flatnonzero(kept.preempt_mask(task))
            among = among[np.isin(among, allowed)]
            mask, future, ordered = _from_scratch(rt, state, task, among)
            assert (kept.preempt_mask(task) == mask).all()
            assert (kept.fits_future(task) == future).all()
            assert list(kept.rows_by_score(task, allowed, among=among)) == list(ordered)
            assert list(kept.preempt_rows(task)) == list(np.flatnonzero(mask))


def _document(snapshot: Any, *, keep: bool) -> dict[str, Any]:
    """The session's decision document with the per-class answers kept, or computed anew on every ask."""
    real = (Placement._unresolvable_rows, Placement.fits_future, Placement.rows_by_score)

    def chain_anew(self: Placement, task: Any) -> np.ndarray:
        self._unresolvable.clear()
        return real[0](self, task)

    def fit_anew(self: Placement, task: Any) -> np.ndarray:
        self._fits_future.clear()
        return real[1](self, task)

    def scores_anew(self: Placement, task: Any, rows: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
        ordered = rows[np.argsort(-self._scores_rows(task, rows), kind="stable")] if len(rows) else rows
        return ordered if among is None else ordered[np.isin(ordered, among)]

    import pytest
    with pytest.MonkeyPatch.context() as patched:
        if not keep:
            patched.setattr(Placement, "_unresolvable_rows", chain_anew)
            patched.setattr(Placement, "fits_future", fit_anew)
            patched.setattr(Placement, "rows_by_score", scores_anew)
        document = run_session(snapshot, policy_for("preemption"), solver_budget=0).decisions.to_document()
    document.pop("stats", None)
    return document


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(1, 10_000), nodes=st.integers(20, 60))
def test_preempt_decides_the_same_with_answers_kept_as_computing_them_anew(seed: int, nodes: int) -> None:
    generated = gen.generate(gen.Size("small", nodes, nodes * 10), "preemption", seed=seed)
    assert _document(generated.snapshot, keep=True) == _document(generated.snapshot, keep=False)


def test_the_preemption_workload_evicts_and_decides_the_same_with_answers_kept() -> None:
    generated = gen.generate(gen.Size("small", 100, 1_000), "preemption", seed=3)
    kept = _document(generated.snapshot, keep=True)
    assert kept["evictions"], "nothing was preempted: the case tests nothing"
    assert kept == _document(generated.snapshot, keep=False)
