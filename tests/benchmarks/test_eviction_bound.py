"""`benchmarks.eviction_bound`: a lower bound on the GPU pods evicted for the same preemptors.

A bound above what a session did would be a false claim that the DESIGN's eviction target cannot be
met; so no session of either mode may evict fewer GPU pods than the bound, on generated preemption
clusters where preempt does evict GPU pods, and on a hand-built case the bound is the obvious minimum.
"""
from __future__ import annotations

import pytest

from benchmarks import eviction_bound
from benchmarks import generate as gen
from tests.engine.build import node, pod, podgroup, running, snapshot
from vpolicy.model.snapshot import PodGroupPhase


@pytest.mark.parametrize("seed", [8, 11])  # S seeds whose preempt evicts GPU pods, the same in both modes (5 stopped
# evicting any when preempt's within-job phase came to run for every starving job after each queue, 5a22765)
def test_no_session_evicts_fewer_gpu_pods_than_the_bound(seed: int) -> None:
    """The bound is for optimize's preemptors; Volcano's run is held to it where it placed the same."""
    result = eviction_bound.check(gen.SIZES["S"], seed=seed, time_limit=30)
    bound = result["bound"]
    assert bound["proven"] and bound["preemptors"] > 0 and result["volcano"]["evicted_gpu_pods"] > 0, result
    assert result["same_preemptors"], result
    for mode in ("volcano", "optimize"):
        assert result[mode]["evicted_gpu_pods"] >= bound["milp"], (mode, result)


def test_the_bound_takes_one_whole_node_pod_over_two_halves() -> None:
    """n0 holds two 4-GPU pods, n1 one 8-GPU pod, all of one low-priority elastic job: an 8-GPU
    preemptor of the same queue needs one eviction (on n1), not two."""
    snap = snapshot(
        nodes=[node(f"n{i}", cpu=32_000, pods=20, gpu=8_000) for i in range(2)],
        podgroups=[podgroup("low", phase=PodGroupPhase.RUNNING), podgroup("urgent")],
        pods=[running("low-0", "low", "n0", gpu=4_000, priority=1), running("low-1", "low", "n0", gpu=4_000, priority=1),
              running("low-2", "low", "n1", gpu=8_000, priority=1), pod("urgent-0", "urgent", gpu=8_000, priority=100)],
    )
    assert eviction_bound.eviction_bound(snap, ["ns/urgent-0"])["milp"] == 1
