"""The arithmetic behind the simulation's numbers, as small pure functions a test can check by hand.

- `percentile`: nearest-rank (the value at rank ceil(q/100 * n) of the sorted values), so every
  reported p50/p95/max is a value that was observed.
- `time_weighted_mean`: a step function (each value holds until the next time) averaged over [t0, end).
- `water_fill` / `deserved`: what each queue deserves, per resource, the way Volcano's proportion
  plugin divides the cluster: by weight, never more than a queue asks for (allocated + pending) or
  its capability, the excess handed on to the others until nothing is left or everyone is satisfied.
- `jain`: Jain's fairness index (sum x)^2 / (n * sum x^2) — 1 when all x are equal, 1/n when one
  queue has everything. `jain_of_queues` applies it to x = allocated/deserved, the larger of the
  per-resource ratios (Volcano's share), over the queues that ask for something.
- `fragmented_gpus`: free GPUs on nodes that cannot host the smallest pending GPU pod (resources only;
  taints and selectors are not considered).

This module knows nothing about sessions or files: `vpolicy.sim.summary` feeds it what a run saw.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from vpolicy.model.resources import Resources

GPU = "nvidia.com/gpu"
# The resources fairness is measured on (pods is a count the scheduler checks, not a share).
FAIRNESS_DIMENSIONS = ("cpu", "memory", GPU)
# Water-filling stops handing out remainders smaller than this (in the resource's unit).
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class QueueDemand:
    name: str
    weight: int
    allocated: Resources
    request: Resources  # allocated + what its pending pods ask for
    capability: Resources | None = None


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no values. q=100 is the maximum."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index of non-negative values; None when there are none or all are zero."""
    squares = sum(v * v for v in values)
    if not values or squares == 0:
        return None
    return sum(values) ** 2 / (len(values) * squares)


def time_weighted_mean(points: Sequence[tuple[float, float | None]], end: float) -> float | None:
    """Mean of a step function: each (time, value) holds until the next time, the last one until `end`.

    Points whose value is None are left out of both the sum and the duration. None when no time is covered.
    """
    total = covered = 0.0
    for i, (t, value) in enumerate(points):
        until = points[i + 1][0] if i + 1 < len(points) else end
        width = max(0.0, until - t)
        if value is None or width == 0:
            continue
        total += value * width
        covered += width
    return total / covered if covered > 0 else None


def water_fill(total: float, requests: Sequence[float], weights: Sequence[int]) -> list[float]:
    """Split `total` by weight, each share capped at its request; excess goes round again."""
    deserved = [0.0] * len(requests)
    active = [i for i, r in enumerate(requests) if r > 0]
    remaining = float(total)
    while remaining > _EPSILON and active:
        weight_sum = sum(max(weights[i], 1) for i in active)
        excess = 0.0
        still = []
        for i in active:
            deserved[i] += remaining * max(weights[i], 1) / weight_sum
            if deserved[i] >= requests[i] - _EPSILON:
                excess += deserved[i] - requests[i]
                deserved[i] = float(requests[i])
            else:
                still.append(i)
        active, remaining = still, excess
    return deserved


def deserved(demands: Sequence[QueueDemand], total: Resources) -> dict[str, dict[str, float]]:
    """Each queue's deserved amount of every fairness dimension (water-filled per dimension)."""
    out: dict[str, dict[str, float]] = {d.name: {} for d in demands}
    weights = [d.weight for d in demands]
    for dim in FAIRNESS_DIMENSIONS:
        caps = [min(d.request.get(dim, 0), d.capability.get(dim, 0)) if d.capability is not None
                and dim in d.capability else d.request.get(dim, 0) for d in demands]
        for d, amount in zip(demands, water_fill(total.get(dim, 0), caps, weights), strict=True):
            out[d.name][dim] = amount
    return out


def shares(demands: Sequence[QueueDemand], total: Resources) -> dict[str, float]:
    """allocated/deserved per queue with demand: the largest ratio over dimensions it deserves some of."""
    fair = deserved(demands, total)
    out: dict[str, float] = {}
    for d in demands:
        ratios = [d.allocated.get(dim, 0) / amount for dim, amount in fair[d.name].items() if amount > _EPSILON]
        if ratios:
            out[d.name] = max(ratios)
    return out


def jain_of_queues(demands: Sequence[QueueDemand], total: Resources) -> float | None:
    asking = [d for d in demands if any(d.request.get(dim, 0) > 0 for dim in FAIRNESS_DIMENSIONS)]
    return jain(list(shares(asking, total).values()))


def fits(request: Resources, free: Resources) -> bool:
    """The request fits in `free` on every dimension it asks for."""
    return all(request[dim] <= free.get(dim, 0) for dim in request if request[dim] > 0)


def fragmented_gpus(free: Sequence[Resources], pending: Sequence[Resources]) -> int:
    """Milli-GPUs free on nodes that cannot host the smallest pending GPU pod; 0 when none is pending."""
    gpu_pods = [p for p in pending if p.get(GPU, 0) > 0]
    if not gpu_pods:
        return 0
    smallest = min(gpu_pods, key=lambda p: (p.get(GPU, 0), p.get("cpu", 0), p.get("memory", 0)))
    return sum(f.get(GPU, 0) for f in free if f.get(GPU, 0) > 0 and not fits(smallest, f))
