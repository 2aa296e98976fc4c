"""The optimality bound (benchmarks/optimality.py) is an upper bound: no session, of either mode, places
more GPUs than it; and its rule-derived parts are sound on their own."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import generate as gen
from benchmarks import optimality
from vpolicy.model.resources import Resources


@pytest.mark.parametrize("workload,seed", [("fragmentation", 1), ("fragmentation", 3), ("steady", 3)])
def test_no_session_places_more_gpus_than_the_bound(workload: str, seed: int) -> None:
    result = optimality.check(gen.Size("tiny", 40, 300), workload, seed=seed, time_limit=10)
    bound = result["bound"]["milp"]
    assert result["volcano"]["gpus_placed"] <= bound
    assert result["optimize"]["gpus_placed"] <= bound


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.lists(st.integers(1, 3), min_size=0, max_size=5))
def test_blockable_never_undercounts_what_pods_can_fill(margins: list[int], pods: list[int]) -> None:
    """Every way of spreading the pods over the nodes fills at most `_blockable` of them past their room."""
    largest = {"cpu": max(pods, default=0)}
    rooms = [(Resources({"cpu": m}), largest) for m in margins]
    placed = Resources({"cpu": sum(pods)})
    worst = 0
    for spread in itertools.product(range(len(margins)), repeat=len(pods)):
        on = [0] * len(margins)
        for pod, node in zip(pods, spread):
            on[node] += pod
        worst = max(worst, sum(1 for amount, room in zip(on, margins) if amount > room))
    assert worst <= optimality._blockable(rooms, placed, len(pods))
