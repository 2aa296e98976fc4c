"""The arithmetic of vpolicy.sim.metrics, on numbers small enough to check by hand."""
from __future__ import annotations

import pytest

from vpolicy.model.resources import Resources
from vpolicy.sim import metrics

GPU = metrics.GPU


@pytest.mark.parametrize("values, q, expected", [
    pytest.param([], 50, None, id="no-values"),
    pytest.param([7.0], 95, 7.0, id="one-value-is-every-percentile"),
    pytest.param([40.0, 10.0, 30.0, 20.0], 50, 20.0, id="p50-of-four-is-rank-2"),
    pytest.param([40.0, 10.0, 30.0, 20.0], 95, 40.0, id="p95-of-four-is-rank-4"),
    pytest.param([float(v) for v in range(1, 21)], 95, 19.0, id="p95-of-1-to-20-is-rank-19"),
    pytest.param([3.0, 1.0, 2.0], 100, 3.0, id="p100-is-the-max"),
])
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float | None) -> None:
    assert metrics.percentile(values, q) == expected


@pytest.mark.parametrize("values, expected", [
    pytest.param([1.0, 1.0, 1.0], 1.0, id="equal-shares-are-fair"),
    pytest.param([1.0, 0.0, 0.0, 0.0], 0.25, id="one-of-four-has-all"),
    pytest.param([1.0, 3.0], 0.8, id="1-and-3"),  # (1+3)^2 / (2 * (1+9)) = 16/20
    pytest.param([0.0, 0.0], None, id="all-zero-is-undefined"),
    pytest.param([], None, id="no-queues"),
])
def test_jain_index(values: list[float], expected: float | None) -> None:
    assert metrics.jain(values) == expected


def test_time_weighted_mean_holds_each_value_until_the_next_point() -> None:
    # 2 for 10 s, 4 for 30 s, 0 for 60 s: (20 + 120 + 0) / 100
    assert metrics.time_weighted_mean([(0.0, 2.0), (10.0, 4.0), (40.0, 0.0)], 100.0) == pytest.approx(1.4)


def test_time_weighted_mean_leaves_out_undefined_stretches() -> None:
    # 1 for 10 s, undefined for 10 s, 0.5 for 20 s: (10 + 10) / 30
    assert metrics.time_weighted_mean([(0.0, 1.0), (10.0, None), (20.0, 0.5)], 40.0) == pytest.approx(20 / 30)


@pytest.mark.parametrize("total, requests, weights, expected", [
    pytest.param(8, [8, 2], [1, 1], [6.0, 2.0], id="excess-of-the-small-queue-goes-to-the-big-one"),
    pytest.param(12, [100, 100], [1, 2], [4.0, 8.0], id="split-by-weight"),
    pytest.param(10, [3, 3], [1, 1], [3.0, 3.0], id="everyone-satisfied-rest-unused"),
    pytest.param(9, [0, 9], [5, 1], [0.0, 9.0], id="no-request-no-share"),
])
def test_water_fill(total: int, requests: list[int], weights: list[int], expected: list[float]) -> None:
    assert metrics.water_fill(total, requests, weights) == pytest.approx(expected)


def test_jain_of_queues_uses_allocated_over_deserved_per_queue() -> None:
    # 8 GPUs; a asks 8 and holds 6, b asks 2 and holds 2 -> deserved 6 and 2 -> shares 1 and 1.
    fair = [metrics.QueueDemand("a", 1, Resources({GPU: 6000}), Resources({GPU: 8000})),
            metrics.QueueDemand("b", 1, Resources({GPU: 2000}), Resources({GPU: 2000}))]
    assert metrics.jain_of_queues(fair, Resources({GPU: 8000})) == pytest.approx(1.0)
    # a holds 2 of its deserved 6 (1/3), b holds 2 of 2 (1): (4/3)^2 / (2 * (1/9 + 1)) = 0.8
    unfair = [metrics.QueueDemand("a", 1, Resources({GPU: 2000}), Resources({GPU: 8000})),
              metrics.QueueDemand("b", 1, Resources({GPU: 2000}), Resources({GPU: 2000}))]
    assert metrics.jain_of_queues(unfair, Resources({GPU: 8000})) == pytest.approx(0.8)


def test_a_queue_share_is_its_largest_ratio_over_resources() -> None:
    # cpu: 4 of deserved 8 (0.5); gpu: 2 of deserved 2 (1.0) -> share 1.0
    demand = metrics.QueueDemand("a", 1, Resources({"cpu": 4000, GPU: 2000}), Resources({"cpu": 8000, GPU: 2000}))
    assert metrics.shares([demand], Resources({"cpu": 16000, GPU: 8000})) == {"a": 1.0}


@pytest.mark.parametrize("free, pending, expected", [
    pytest.param([{GPU: 1000}, {GPU: 1000}], [{GPU: 2000}], 2000, id="two-single-gpus-cannot-host-a-pair"),
    pytest.param([{GPU: 2000}, {GPU: 1000}], [{GPU: 2000}], 1000, id="the-node-that-fits-is-not-fragmented"),
    pytest.param([{GPU: 1000}], [], 0, id="nothing-pending"),
    pytest.param([{GPU: 1000}], [{"cpu": 1000}], 0, id="no-gpu-pod-pending"),
    pytest.param([{GPU: 4000, "cpu": 500}], [{GPU: 1000, "cpu": 1000}], 4000, id="gpus-free-but-cpu-short"),
    pytest.param([{GPU: 1000}, {GPU: 3000}], [{GPU: 4000}, {GPU: 2000}], 1000, id="the-smallest-pending-pod-counts"),
])
def test_fragmented_gpus(free: list[dict[str, int]], pending: list[dict[str, int]], expected: int) -> None:
    assert metrics.fragmented_gpus([Resources(f) for f in free], [Resources(p) for p in pending]) == expected
