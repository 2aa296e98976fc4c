"""The pure colocation decisions: lending idle resources, the BE cpu budget, which BE pods to evict."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_adapter.colocation import policy, qos
from tests.colocation.fakes import pod


def test_idle_resources_lend_the_ratio_of_what_is_unused() -> None:
    lend = policy.idle_resources(allocatable={"cpu": 8000, "memory": 16 << 30},
                                 usage={"cpu": 3000, "memory": 20 << 30}, ratio_percent=60)
    assert lend == {"cpu": 3000, "memory": 0}  # (8000-3000)*60%; memory over allocatable lends nothing


def test_pinned_guaranteed_cpus_are_not_lent() -> None:
    lend = policy.idle_resources(allocatable={"cpu": 8000, "memory": 0}, usage={"cpu": 1000, "memory": 0},
                                 ratio_percent=100, guaranteed_cpu_request=4000)
    assert lend["cpu"] == 3000


def test_smoothing_weighs_the_newest_sample_most() -> None:
    assert policy.smooth([{"cpu": 0, "memory": 0}, {"cpu": 300, "memory": 30}]) == {"cpu": 200, "memory": 20}
    window = [{"cpu": 1000, "memory": 0}] * 20
    assert policy.smooth(window) == {"cpu": 1000, "memory": 0}


@pytest.mark.parametrize("current, new, report, publish", [
    pytest.param({"cpu": 1000, "memory": 100}, {"cpu": 1050, "memory": 100}, 1, False, id="within-10pct"),
    pytest.param({"cpu": 1000, "memory": 100}, {"cpu": 1200, "memory": 100}, 1, True, id="beyond-10pct"),
    pytest.param({"cpu": 1000, "memory": 100}, {"cpu": 1000, "memory": 100}, 6, True, id="resync"),
    pytest.param({}, {"cpu": 5, "memory": 0}, 1, True, id="first"),
])
def test_publication_waits_for_a_real_change_or_the_resync(current: dict, new: dict, report: int, publish: bool) -> None:
    assert policy.should_publish(current, new, report=report) == publish


@pytest.mark.parametrize("online, last, expected", [
    pytest.param(0, None, 800, id="first-emits"),
    pytest.param(300, None, 500, id="online-usage-subtracted"),
    pytest.param(900, None, 0, id="floored-at-zero"),
    pytest.param(280, 500, None, id="within-jitter"),
    pytest.param(0, 500, 550, id="recovery-capped-at-10pct"),
    pytest.param(600, 500, 200, id="throttle-at-once"),
    pytest.param(0, 0, 800, id="from-zero-no-cap"),
])
def test_be_cpu_quota(online: int, last: int | None, expected: int | None) -> None:
    # Volcano's detectCPUQuota cases on a 1000m node, threshold 80 %, jitter 10 %, recover 10 %
    assert policy.be_cpu_quota(allocatable_cpu_milli=1000, online_cpu_milli=online, threshold_percent=80,
                               last_quota_milli=last, recover_percent=10, jitter_percent=10) == expected


def test_high_counts_restart_when_a_sample_is_under_the_watermark() -> None:
    high = {"cpu": 80, "memory": 60}
    counts = policy.update_high_counts({}, {"cpu": 85, "memory": 10}, high)
    counts = policy.update_high_counts(counts, {"cpu": 80, "memory": None}, high)
    assert counts == {"cpu": 2, "memory": 0}
    assert policy.update_high_counts(counts, {"cpu": 79, "memory": 70}, high) == {"cpu": 0, "memory": 1}


def test_evictions_take_lowest_priority_then_most_usage_until_the_low_watermark() -> None:
    pods = [qos.pod_info(p) for p in (
        pod("lc", level="LC", cpu="4"), pod("small", level="BE", batch_cpu=500),
        pod("big", level="BE", batch_cpu=3000), pod("important", level="BE", batch_cpu=4000, priority=100))]
    usage = {"uid-small": 500, "uid-big": 2500, "uid-important": 3000, "uid-lc": 9000}
    plan = policy.plan_evictions("cpu", pods, pod_usage=usage, used=9000, allocatable=10000, low_percent=40)
    assert [e.pod.name for e in plan] == ["big", "small", "important"]  # 9000 -> 6500 -> 6000 -> 3000 <= 4000
    plan = policy.plan_evictions("cpu", pods, pod_usage=usage, used=6000, allocatable=10000, low_percent=40)
    assert [e.pod.name for e in plan] == ["big"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["LC", "HLS", "LS", "BE", None]), st.integers(0, 5000),
                          st.integers(-10, 10)), max_size=12),
       st.integers(0, 20000), st.integers(1, 100))
def test_evictions_never_take_an_online_pod_and_stop_at_the_low_watermark(
        spec: list[tuple[str | None, int, int]], used: int, low: int) -> None:
    pods = [qos.pod_info(pod(f"p{i}", level=level, batch_cpu=use, priority=prio))
            for i, (level, use, prio) in enumerate(spec)]
    usage: dict[str, int | None] = {p.uid: use for p, (_, use, _) in zip(pods, spec)}
    plan = policy.plan_evictions("cpu", pods, pod_usage=usage, used=used, allocatable=10000, low_percent=low)
    assert all(e.pod.level == -1 for e in plan)
    left = used - sum(usage[e.pod.uid] or 0 for e in plan)
    target = 10000 * low // 100
    offline_left = [p for p in pods if p.offline and p not in [e.pod for e in plan]]
    assert left <= target or not offline_left  # enough was evicted, or nothing offline is left to take
    if plan:  # and not one pod more than needed
        assert left + (usage[plan[-1].pod.uid] or 0) > target


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 64000), st.lists(st.integers(0, 64000), min_size=1, max_size=30), st.integers(1, 100),
       st.integers(0, 50), st.integers(0, 50))
def test_the_be_quota_never_exceeds_the_budget_nor_recovers_faster_than_allowed(
        allocatable: int, online_series: list[int], threshold: int, recover: int, jitter: int) -> None:
    last: int | None = None
    for online in online_series:
        budget = max(allocatable * threshold // 100 - online, 0)
        new = policy.be_cpu_quota(allocatable_cpu_milli=allocatable, online_cpu_milli=online,
                                  threshold_percent=threshold, last_quota_milli=last, recover_percent=recover,
                                  jitter_percent=jitter)
        if new is None:  # kept: only a change within the jitter band (or none at all) is skipped
            assert last is not None
            candidate = min(budget, last + last * recover // 100) if last > 0 else budget
            assert candidate == last or abs(candidate - last) < last * jitter // 100
            continue
        assert 0 <= new <= budget  # never more than the online pods leave
        if last is not None and last > 0 and new > last:
            assert new <= last + last * recover // 100  # recovery is gradual
        last = new
