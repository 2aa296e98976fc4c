"""reclaim keeps the `reclaimable` rules' answer on a node while it provably holds: the node, the
candidates' jobs' counts and their queues' allocations inside the ranges the rules' comparisons
recorded. Reused answers must be the rules' own, and the decisions those of asking every node."""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine.actions import ACTIONS, reclaim
from vpolicy.engine.actions import reclaim_reuse as rr
from vpolicy.engine.actions.evict_common import fits_with
from vpolicy.engine.actions.reclaim_reuse import ReclaimAnswers, Unprobeable
from vpolicy.engine.session import run_session
from vpolicy.model.resources import Resources

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_thresholds = st.one_of(st.integers(-60, 60), st.floats(-60, 60, allow_nan=False).map(lambda v: round(v, 1)))


@settings(max_examples=500, deadline=None)
@given(a0=st.integers(-50, 50), a1=st.integers(-50, 50), offset=st.integers(-20, 20), other=_thresholds,
       op=st.sampled_from(sorted(_COMPARE)), reflected=st.booleans())
def test_a_count_compares_the_same_for_every_value_in_its_recorded_range(
        a0: int, a1: int, offset: int, other: Any, op: str, reflected: bool) -> None:
    box = rr._Box()
    probed = rr._Dim(box, "n", a0, 0) + offset
    compare = _COMPARE[op]
    seen = compare(other, probed) if reflected else compare(probed, other)
    assert seen == (compare(other, a0 + offset) if reflected else compare(a0 + offset, other))
    assert box.holds(lambda _name: a0), "the value probed lies outside its own range"
    if box.holds(lambda _name: a1):
        assert (compare(other, a1 + offset) if reflected else compare(a1 + offset, other)) == seen


_vectors = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(-5, 40), max_size=3)


@settings(max_examples=500, deadline=None)
@given(a0=_vectors, a1=_vectors, taken=_vectors, deserved=st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
    st.one_of(st.integers(0, 40), st.floats(0, 40, allow_nan=False).map(lambda v: round(v, 2))), max_size=3))
def test_a_less_equal_comes_out_the_same_for_every_allocation_in_its_recorded_box(
        a0: dict[str, int], a1: dict[str, int], taken: dict[str, int], deserved: dict[str, Any]) -> None:
    """proportion's `not le(left, deserved[q])` with `left` the queue's allocation less the requests of
    the candidates taken before: the box holds exactly allocations that answer the same."""
    universe = frozenset({"cpu", "memory", "nvidia.com/gpu"})
    box = rr._Box(universe)
    start, minus, limit = Resources(a0), Resources(taken), Resources(deserved)
    probed = rr._Allocated(box, start, Resources()) - minus
    seen = probed.le(limit)
    assert seen == (start - minus).le(limit)
    assert box.holds(lambda name: start.get(name, 0))
    if box.holds(lambda name: Resources(a1).get(name, 0)):
        assert (Resources(a1) - minus).le(limit) == seen


def test_a_probed_value_refuses_what_the_box_cannot_follow() -> None:
    box = rr._Box(frozenset({"cpu"}))
    allocated = rr._Allocated(box, Resources({"cpu": 3}), Resources())
    with pytest.raises((Unprobeable, TypeError)):  # either way the probing evaluation keeps nothing
        allocated.get("cpu", 0) * 2  # type: ignore[operator]  # reason: the refusal is the point
    with pytest.raises(Unprobeable):
        _ = allocated == Resources({"cpu": 3})
    with pytest.raises(Unprobeable):
        _ = allocated.max_ratio  # anything but le, get, + and - of requests


def test_volcanos_reclaim_rules_are_followed() -> None:
    """Volcano's reclaim conf (gang, conformance, proportion): proportion reads the reclaimer's
    request, which becomes part of the key; nothing else keeps the rules from being followed."""
    from vpolicy.engine.placement import Placement
    from vpolicy.engine.runtime import Runtime
    from vpolicy.engine.state import SessionState

    generated = gen.generate(gen.Size("small", 20, 200), "reclaim", seed=1)
    state = SessionState(generated.snapshot)
    rt = Runtime(policy_for("reclaim").tiers, state)
    answers = ReclaimAnswers(rt, state, Placement(rt, state).arrays)
    assert answers.plan is not None


class _CheckedReclaimees(rr.Reclaimees):
    """Every node dropped from a walk checked: no reclaimee there, or all of them would not free room."""

    def open_rows(self, queue: Any, reclaimer: Any, rows: np.ndarray) -> np.ndarray:
        kept = super().open_rows(queue, reclaimer, rows)
        for row in np.setdiff1d(rows, kept).tolist():
            node = self.arrays.infos[row]
            found = [t for t in node.tasks if t.status.value == "Running" and t.preemptable and t.job is not None
                     and t.job.queue is not queue and t.job.queue.reclaimable]
            assert not found or not fits_with(found, reclaimer, node)
        return kept


class _Checked(ReclaimAnswers):
    """Every reused answer and every dropped row checked against asking the rules there now."""

    checked = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reclaimees = _CheckedReclaimees(self.arrays)

    def victims(self, kind: tuple[object, ...], reclaimer: Any, node: Any, candidates: list[Any]) -> Any:
        before = self.reused
        answer = super().victims(kind, reclaimer, node, candidates)
        if self.reused > before:
            fresh = self.runtime.victims(self.callback, reclaimer, candidates)
            assert [t.uid for t in answer[0]] == [t.uid for t in fresh[0]] and answer[1] is fresh[1]
            _Checked.checked += 1
        return answer

    def open_rows(self, kind: tuple[object, ...], reclaimer: Any, rows: np.ndarray) -> np.ndarray:
        kept = super().open_rows(kind, reclaimer, rows)
        memo = self._memo(kind, reclaimer)
        assert memo is not None or len(kept) == len(rows)
        for row in np.setdiff1d(rows, kept)[:5]:  # a few per walk: each is a full evaluation
            answer = memo.answers[int(row)] if memo is not None else None
            assert answer is not None
            node = self.arrays.infos[int(row)]
            fresh = self.runtime.victims(self.callback, reclaimer, answer_candidates(self, memo, int(row), node))
            assert [t.uid for t in fresh[0]] == [t.uid for t in answer[0]]
            _Checked.checked += 1
        return kept


def answer_candidates(answers: ReclaimAnswers, memo: Any, row: int, node: Any) -> list[Any]:
    """The candidates the kept answer was asked among: the node's reclaimees for the memo's queue."""
    queue = next(kind[1] for (kind, _inputs), m in answers.memos.items() if m is memo)  # kind: ("queue", name)
    return [t for t in node.tasks if t.status.value == "Running" and t.preemptable and t.job is not None
            and t.job.queue.name != queue and t.job.queue.reclaimable]


def _decisions(snapshot: Any, *, reuse: bool, monkeypatch: pytest.MonkeyPatch,
               answers: type[ReclaimAnswers] = ReclaimAnswers) -> dict[str, Any]:
    with monkeypatch.context() as patched:
        patched.setitem(ACTIONS, "reclaim", functools.partial(reclaim.run, reuse=reuse))
        patched.setattr(reclaim, "ReclaimAnswers", answers)
        document = run_session(snapshot, policy_for("reclaim"), solver_budget=0).decisions.to_document()
    document.pop("stats", None)
    return document


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(1, 10_000), nodes=st.integers(20, 60))
def test_reclaim_decides_the_same_with_answers_kept_as_when_asking_every_node(seed: int, nodes: int) -> None:
    generated = gen.generate(gen.Size("small", nodes, nodes * 10), "reclaim", seed=seed)
    with pytest.MonkeyPatch.context() as monkeypatch:
        kept = _decisions(generated.snapshot, reuse=True, monkeypatch=monkeypatch, answers=_Checked)
        fresh = _decisions(generated.snapshot, reuse=False, monkeypatch=monkeypatch)
    assert kept == fresh


def test_the_reclaim_workload_reuses_answers_and_decides_as_asking_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = gen.generate(gen.Size("small", 100, 1_000), "reclaim", seed=2)
    _Checked.checked = 0
    kept = _decisions(generated.snapshot, reuse=True, monkeypatch=monkeypatch, answers=_Checked)
    fresh = _decisions(generated.snapshot, reuse=False, monkeypatch=monkeypatch)
    assert _Checked.checked > 0, "no answer was reused and no node dropped: the case tests nothing"
    assert kept["evictions"], "nothing was reclaimed: the case tests nothing"
    assert kept == fresh
