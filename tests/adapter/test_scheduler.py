"""The live loop in-process against the emulator: decisions reach the API once, faults are survived,
losing the lease stops writes, and the next session (or the next leader) repairs."""
from __future__ import annotations

import threading
import time
import urllib.request
from collections import Counter
from typing import Any

import kmock
import pytest

from cluster_adapter.config import LeaderSettings, SchedulerSettings
from cluster_adapter.kube.client import KubeClient
from cluster_adapter.scheduler import EXIT_LOST_LEASE, EXIT_OK, Scheduler, SessionReport
from tests.adapter.conftest import FAST_APPLY, FAST_INFORMERS, FAST_SCHEDULER, eventually, load, started, node, pod, podgroup, queue
from tests.adapter.kubeemu import Call, EmulatorThread

SETTINGS = FAST_SCHEDULER


def cluster(jobs: int = 2, tasks: int = 2, *, nodes: int = 2, prefix: str = "job") -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [queue("default")]
    objects += [node(f"n{i}", cpu="4") for i in range(nodes)]
    for j in range(jobs):
        objects.append(podgroup(f"{prefix}{j}", min_member=tasks))
        objects += [pod(f"{prefix}{j}-t-{t}", group=f"{prefix}{j}") for t in range(tasks)]
    return objects


def bound(emu: EmulatorThread) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in emu.call(lambda e: e.list("pods"))
            if p["spec"].get("nodeName")}


def binds_per_pod(emu: EmulatorThread) -> Counter[str]:
    return Counter(r.call.name for r in emu.call(lambda e: e.records) if r.call.verb == "bind" and r.status == 201)


def writes(emu: EmulatorThread) -> int:
    return emu.call(lambda e: sum(1 for r in e.records if r.call.verb in ("bind", "evict", "patch", "update")))


def test_a_session_applies_exactly_what_it_decided(emu: EmulatorThread, client: KubeClient,
                                                   schedulers: list[Scheduler]) -> None:
    load(emu, cluster())
    report = started(client, schedulers).run_once()
    doc = report.document
    assert doc["binds"] and {k.split("/")[1]: v for k, v in doc["binds"].items()} == bound(emu)
    for key, status in doc["podgroups"].items():
        held = emu.call(lambda e: e.get("podgroups", *key.split("/")))["status"]
        assert held["phase"] == status["phase"]
        assert [{k: c[k] for k in ("type", "status", "reason", "message")} for c in held["conditions"]] == \
            status["conditions"]
    held_queue = emu.call(lambda e: e.get("queues", "", "default"))["status"]
    assert held_queue["inqueue"] == doc["queues"]["default"]["inqueue"]
    events = emu.call(lambda e: e.list("events"))
    assert sorted(e["involvedObject"]["name"] for e in events
                  if e["reason"] == "Scheduled" and e["involvedObject"]["kind"] == "Pod") == \
        sorted(k.split("/")[1] for k in doc["binds"])


def test_podgroups_get_volcanos_events_unschedulable_while_waiting_and_scheduled_once_running(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """A gang of two 3-cpu pods fits the two 4-cpu nodes; a second such gang cannot fit beside it. The
    waiting podgroup gets a Warning `Unschedulable` with its gang condition's message (once, however
    many sessions it waits); the placed one a Normal `Scheduled` "pod group is ready" when it runs."""
    objects = cluster(jobs=2, tasks=2)
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    load(emu, objects)
    scheduler = started(client, schedulers)
    scheduler.run_once()
    scheduler.run_once()
    eventually(lambda: scheduler.cache.assumed() == 0)
    for _ in range(3):
        report = scheduler.run_once()
    waiting = [k for k, s in report.document["podgroups"].items() if s["phase"] == "Inqueue"]
    running = [k for k, s in report.document["podgroups"].items() if s["phase"] == "Running"]
    assert len(waiting) == 1 and len(running) == 1, report.document["podgroups"]
    events = [e for e in emu.call(lambda e: e.list("events")) if e["involvedObject"]["kind"] == "PodGroup"]
    by_group = {(e["involvedObject"]["name"], e["reason"], e["type"]): e["message"] for e in events}
    condition = report.document["podgroups"][waiting[0]]["conditions"][0]
    assert by_group == {(waiting[0].split("/")[1], "Unschedulable", "Warning"): condition["message"],
                        (running[0].split("/")[1], "Scheduled", "Normal"): "pod group is ready"}
    assert len(events) == 2
    assert all(e["involvedObject"]["apiVersion"] == "scheduling.volcano.sh/v1beta1" for e in events)


def test_later_sessions_bind_nothing_twice_and_settle_to_no_writes(emu: EmulatorThread, client: KubeClient,
                                                                  schedulers: list[Scheduler]) -> None:
    load(emu, cluster())
    scheduler = started(client, schedulers)
    first = scheduler.run_once()  # the next session may start before the watch shows the binds
    second = scheduler.run_once()
    assert first.bound and not second.bound
    eventually(lambda: scheduler.cache.assumed() == 0)
    for _ in range(3):
        scheduler.run_once()
    before = writes(emu)
    quiet = scheduler.run_once()
    assert writes(emu) == before, quiet
    assert max(binds_per_pod(emu).values()) == 1


@pytest.mark.parametrize("status, reason", [
    pytest.param(500, "InternalError", id="500"),
    pytest.param(429, "TooManyRequests", id="429"),
])
def test_transient_bind_errors_are_retried_without_duplicates(emu: EmulatorThread, client: KubeClient,
                                                              schedulers: list[Scheduler], status: int,
                                                              reason: str) -> None:
    load(emu, cluster())
    flaky = Counter[str]()

    def hook(call: Call) -> kmock.KubernetesError | None:
        if call.verb == "bind" and flaky[call.name or ""] < 1:
            flaky[call.name or ""] += 1
            return kmock.KubernetesError(status=status, reason=reason, message="injected", details={})
        return None

    emu.call(lambda e: e.faults.append(hook))
    report = started(client, schedulers).run_once()
    assert sorted(report.bound) == sorted(report.document["binds"]) and not report.bind_failed
    assert set(binds_per_pod(emu).values()) == {1}


def test_a_bind_that_fails_for_good_is_reported_and_the_next_session_repairs(emu: EmulatorThread,
                                                                             client: KubeClient,
                                                                             schedulers: list[Scheduler]) -> None:
    load(emu, cluster(jobs=1))
    outage = threading.Event()
    outage.set()
    emu.call(lambda e: e.faults.append(lambda call: kmock.KubernetesError(
        status=500, reason="InternalError", message="etcd is down", details={})
        if outage.is_set() and call.verb == "bind" else None))
    scheduler = started(client, schedulers)
    failed = scheduler.run_once()
    assert failed.bind_failed and not failed.bound and not bound(emu)
    events = emu.call(lambda e: e.list("events"))
    assert any(e["reason"] == "FailedScheduling" and "etcd is down" in e["message"] for e in events)
    outage.clear()
    repaired = scheduler.run_once()
    assert sorted(repaired.bound) == sorted(failed.document["binds"])
    assert set(binds_per_pod(emu).values()) == {1}


def test_a_pod_bound_by_someone_else_meanwhile_gets_a_failed_scheduling_event(emu: EmulatorThread,
                                                                              client: KubeClient,
                                                                              schedulers: list[Scheduler]) -> None:
    load(emu, cluster(jobs=1, tasks=1))
    scheduler = started(client, schedulers)

    def sneak_in(call: Call) -> None:
        if call.verb == "bind" and call.name == "job0-t-0":
            e = emu.emulator
            assert e is not None
            held = e.get("pods", "default", "job0-t-0")
            if held and not held["spec"].get("nodeName"):
                held["spec"]["nodeName"] = "elsewhere"
                e.put_object(held)

    emu.call(lambda e: e.faults.append(sneak_in))
    report = scheduler.run_once()
    assert "already bound to elsewhere" in report.bind_failed["default/job0-t-0"]
    assert bound(emu) == {"job0-t-0": "elsewhere"}


def test_dropped_watches_and_expired_versions_do_not_stop_scheduling(emu: EmulatorThread, client: KubeClient,
                                                                     schedulers: list[Scheduler]) -> None:
    load(emu, cluster(jobs=1, nodes=3))
    scheduler = started(client, schedulers)
    loop = threading.Thread(target=scheduler.run, daemon=True)
    loop.start()
    eventually(lambda: len(bound(emu)) == 2)
    emu.call(lambda e: e.drop_watches())
    load(emu, cluster(jobs=1, nodes=0, prefix="second")[1:])
    eventually(lambda: len(bound(emu)) == 4)
    emu.call(lambda e: (e.compact(), e.drop_watches(expire=True)))
    load(emu, cluster(jobs=1, nodes=0, prefix="third")[1:])
    eventually(lambda: len(bound(emu)) == 6)
    scheduler.stop.set()
    loop.join(5)
    assert max(binds_per_pod(emu).values()) == 1
    assert any(i.lists >= 2 for i in scheduler.informers)


def test_pods_arriving_over_time_are_all_scheduled_once(emu: EmulatorThread, client: KubeClient,
                                                        schedulers: list[Scheduler]) -> None:
    load(emu, [queue("default"), *[node(f"n{i}", cpu="16") for i in range(4)]])
    scheduler = started(client, schedulers)
    result: list[int] = []
    loop = threading.Thread(target=lambda: result.append(scheduler.run()), daemon=True)
    loop.start()
    for wave in range(5):
        load(emu, cluster(jobs=2, tasks=3, nodes=0, prefix=f"w{wave}j")[1:])
        time.sleep(0.15)
    eventually(lambda: len(bound(emu)) == 30)
    scheduler.stop.set()
    loop.join(5)
    assert result == [EXIT_OK]
    assert set(binds_per_pod(emu).values()) == {1}


def test_losing_the_lease_mid_session_stops_writes_and_the_next_leader_finishes(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    load(emu, [queue("default"), node("n0", cpu="64"), *[
        obj for j in range(8) for obj in (podgroup(f"g{j}", min_member=1), pod(f"g{j}-t-0", group=f"g{j}"))]])
    fast = LeaderSettings(enabled=True, lease_duration_s=1.0, renew_deadline_s=0.6, retry_period_s=0.05)
    settings_a = SchedulerSettings(period_s=0.2, informers=FAST_INFORMERS, leader=LeaderSettings(
        **{**_fields(fast), "identity": "a"}), apply=FAST_APPLY.__class__(
        **{**_fields(FAST_APPLY), "bind_workers": 1}))
    a = started(client, schedulers, settings_a)
    binds = [0]

    def slow_then_steal(call: Call) -> float | None:
        if call.verb != "bind":
            return None
        binds[0] += 1
        if binds[0] == 3:  # mid-session: the lease goes to "b"
            e = emu.emulator
            assert e is not None
            lease = e.get("leases", "volcano-system", "volcano")
            assert lease is not None
            lease["spec"]["holderIdentity"] = "b"
            e.put_object(lease)
        return 0.3  # each bind is slow: the elector (renewing every 50 ms) notices well before the next

    emu.call(lambda e: e.faults.append(slow_then_steal))
    codes: list[int] = []
    loop = threading.Thread(target=lambda: codes.append(a.run()), daemon=True)
    loop.start()
    loop.join(10)
    assert codes == [EXIT_LOST_LEASE]
    assert 3 <= len(bound(emu)) < 8  # it stopped part way
    emu.call(lambda e: e.faults.clear())
    b = started(client, schedulers, SchedulerSettings(period_s=0.2, informers=FAST_INFORMERS, apply=FAST_APPLY,
                                                      leader=LeaderSettings(**{**_fields(fast), "identity": "b"})))
    b_loop = threading.Thread(target=b.run, daemon=True)
    b_loop.start()
    eventually(lambda: len(bound(emu)) == 8)
    b.stop.set()
    b_loop.join(5)
    assert set(binds_per_pod(emu).values()) == {1}


def test_metrics_are_served_on_the_metrics_port(emu: EmulatorThread, client: KubeClient,
                                                schedulers: list[Scheduler]) -> None:
    load(emu, cluster(jobs=1))
    scheduler = started(client, schedulers)
    report: SessionReport = scheduler.run_once()
    port = scheduler.metrics.serve(0, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    finally:
        scheduler.metrics.stop()
    assert f"vpolicy_pods_bound_total {float(len(report.bound))}" in text
    for name in ("vpolicy_session_duration_seconds_bucket", "vpolicy_pending_pods", "vpolicy_solver_calls_total",
                 "vpolicy_api_errors_total", "vpolicy_pods_evicted_total"):
        assert name in text


def test_optimize_modes_fallbacks_are_counted_by_action_run_kept_and_reason() -> None:
    from cluster_adapter.metrics import Metrics

    metrics = Metrics()
    spent = {"kept": "volcano", "reason": "budget-spent", "why": "optimize's earlier runs in the session had spent its budget"}
    for stats in ({"optimize": {"preempt": spent}}, {"optimize": {"preempt": spent}}, {}):
        metrics.observe_stats(stats)
    labels = {"action": "preempt", "kept": "volcano", "reason": "budget-spent"}
    assert metrics.registry.get_sample_value("vpolicy_optimize_runs_total", labels) == 2.0


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


@pytest.mark.slow
def test_soak_pods_arrive_for_a_minute_under_random_faults_and_each_is_bound_once(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """Run with `pytest -m slow`: 60 s of arrivals, 5% of writes failing with 500/429, watches dropped and
    history compacted every few seconds; every pod ends bound, none twice."""
    import random

    rng = random.Random(7)
    load(emu, [queue("default"), *[node(f"n{i}", cpu="512", memory="2Ti", pods="1000") for i in range(8)]])

    def flaky(call: Call) -> kmock.KubernetesError | None:
        if call.verb in ("bind", "patch") and rng.random() < 0.05:
            status = rng.choice([500, 429])
            return kmock.KubernetesError(status=status, reason="Injected", message="soak", details={})
        return None

    emu.call(lambda e: e.faults.append(flaky))
    scheduler = started(client, schedulers)
    loop = threading.Thread(target=scheduler.run, daemon=True)
    loop.start()
    deadline = time.monotonic() + 60
    wave = 0
    while time.monotonic() < deadline:
        load(emu, cluster(jobs=3, tasks=4, nodes=0, prefix=f"s{wave}j")[1:])
        wave += 1
        if wave % 10 == 0:
            emu.call(lambda e: (e.compact(), e.drop_watches()))
        time.sleep(0.5)
    eventually(lambda: len(bound(emu)) == wave * 12, timeout=30)
    scheduler.stop.set()
    loop.join(10)
    assert set(binds_per_pod(emu).values()) == {1}
