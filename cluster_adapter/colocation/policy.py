"""The colocation decisions as pure functions: numbers and pods in, numbers and pods out.

- **Oversubscription** (`idle_resources`, `smooth`, `should_publish`): what the node lends to BE pods
  is `(allocatable - usage) * ratio%` per resource (cpu less the requests of Guaranteed pods when the
  kubelet pins their cpus), smoothed over the last 10 samples with weights 1, 2, 4, ... (newest heaviest),
  published when it moved more than 10 % from what the node shows or every 6th report (Volcano's
  extend policy, historicalUsageCalculator and reSyncPeriod).
- **CPU throttling** (`be_cpu_quota`): the BestEffort cgroup may use `allocatable * threshold% - online
  usage`; a rise is capped at `recover%` of the last quota per interval, and a change within `jitter%`
  of the last quota is not written (Volcano's detectCPUQuota).
- **Eviction** (`update_high_counts`, `plan_evictions`, `all_low`): a resource is under pressure once its
  usage has been at or above the high watermark for `limit` consecutive samples; then BE pods are
  evicted, lowest priority first and, among equals, the one using most of that resource, until the
  usage they leave is at or below the low watermark. The node reopens to BE pods only when every
  resource is at or below its low watermark.

Two deliberate differences from Volcano, both to keep online pods safe and offline pods alive:
the throttling budget subtracts the *online* usage (Volcano subtracts all usage, so BE pods shrink
their own quota and the quota swings), and a quota of zero is written as the kernel's 1 ms minimum
(Volcano writes -1, which lifts the limit exactly when there is no room). And eviction takes as many
pods as the low watermark needs in one step, then waits for `limit` new high samples before taking
more (Volcano takes one pod every detection while the count stays high, which over-evicts while
terminating pods still show their usage).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cluster_adapter.colocation import qos

RESOURCES = ("cpu", "memory")
HISTORY = 10  # samples in the smoothing window (Volcano's SqQueue size)
RESYNC_EVERY = 6  # reports between forced publications (one minute at 10 s)
CHANGE_STEP = 0.1  # relative change that forces a publication


def idle_resources(*, allocatable: Mapping[str, int], usage: Mapping[str, int], ratio_percent: int,
                   guaranteed_cpu_request: int = 0) -> dict[str, int]:
    """Millicores and bytes the node can lend now: `(allocatable - usage) * ratio%`, never negative."""
    out = {}
    for res in RESOURCES:
        total = allocatable.get(res, 0) - (guaranteed_cpu_request if res == "cpu" else 0)
        used = usage.get(res, 0)
        out[res] = (total - used) * ratio_percent // 100 if total >= used else 0
    return out


def smooth(history: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """The weighted mean of `history` (oldest first), weights doubling towards the newest sample."""
    if not history:
        return {}
    weight, total_weight = 1, 0
    sums = dict.fromkeys(RESOURCES, 0)
    for sample in history[-HISTORY:]:
        total_weight += weight
        for res in RESOURCES:
            sums[res] += sample.get(res, 0) * weight
        weight *= 2
    return {res: sums[res] // total_weight for res in RESOURCES}


def restrict(amounts: Mapping[str, int], types: Sequence[str]) -> dict[str, int]:
    """Zero for the resources the configuration does not oversubscribe."""
    return {res: amounts.get(res, 0) if res in types else 0 for res in RESOURCES}


def should_publish(current: Mapping[str, int], new: Mapping[str, int], *, report: int) -> bool:
    """Publish every RESYNC_EVERY-th report, or when a resource moved more than CHANGE_STEP of its value."""
    if report % RESYNC_EVERY == 0:
        return True
    for res in RESOURCES:
        old, now = current.get(res, 0), new.get(res, 0)
        if old == 0:
            if now != 0:
                return True
        elif abs(now - old) / old > CHANGE_STEP:
            return True
    return False


def be_cpu_quota(*, allocatable_cpu_milli: int, online_cpu_milli: int, threshold_percent: int,
                 last_quota_milli: int | None, recover_percent: int, jitter_percent: int) -> int | None:
    """The BestEffort cgroup's new cpu budget in millicores, or None when the last one stays."""
    allowed = allocatable_cpu_milli * threshold_percent // 100
    available = max(allowed - online_cpu_milli, 0)
    last = last_quota_milli
    if last is not None and last > 0 and available > last:
        available = min(available, last + last * recover_percent // 100)
    if last is None:
        return available
    if last == 0:
        return available if available != 0 else None
    return available if abs(available - last) >= last * jitter_percent // 100 else None


def usage_percent(used: int | None, allocatable: int) -> int | None:
    """Integer percent of allocatable in use (Volcano's UsagesByPercentage), None when unknown."""
    if used is None or allocatable <= 0:
        return None
    return used * 100 // allocatable


def update_high_counts(counts: Mapping[str, int], percents: Mapping[str, int | None],
                       high: Mapping[str, int]) -> dict[str, int]:
    """One more sample: a resource at or above its high watermark counts up, any other restarts at 0."""
    out = {}
    for res in RESOURCES:
        value = percents.get(res)
        out[res] = counts.get(res, 0) + 1 if value is not None and value >= high[res] else 0
    return out


@dataclass(frozen=True, slots=True)
class Eviction:
    pod: qos.PodInfo
    resource: str
    reason: str


def plan_evictions(resource: str, pods: Sequence[qos.PodInfo], *, pod_usage: Mapping[str, int | None],
                   used: int, allocatable: int, low_percent: int) -> list[Eviction]:
    """The BE pods to evict for `resource` so that its usage falls to the low watermark.

    Only offline (BE) pods are candidates; they go lowest priority first, then most usage of
    `resource` first (the pod's request of the batch resource when its usage is unknown), then by
    name so the order is stable. Online pods are never returned, whatever the pressure.
    """
    def usage_of(pod: qos.PodInfo) -> int:
        measured = pod_usage.get(pod.uid)
        if measured is not None:
            return measured
        if resource == "cpu":
            return pod.batch_cpu_request or pod.cpu_request_milli
        return pod.batch_memory_request or pod.memory_request

    target = allocatable * low_percent // 100
    candidates = sorted((p for p in pods if p.offline), key=lambda p: (p.priority, -usage_of(p), p.key))
    out: list[Eviction] = []
    remaining = used
    for pod in candidates:
        if remaining <= target:
            break
        out.append(Eviction(pod, resource, f"{resource} usage {usage_percent(used, allocatable)}% of allocatable "
                                           f"stayed at or above the high watermark; evicting to reach "
                                           f"{low_percent}%"))
        remaining -= usage_of(pod)
    return out


def all_low(percents: Mapping[str, int | None], low: Mapping[str, int]) -> bool:
    """Every resource known and at or below its low watermark."""
    for res in RESOURCES:
        value = percents.get(res)
        if value is None or value > low[res]:
            return False
    return True
