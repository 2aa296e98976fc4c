"""Lease-based leader election: one writer at a time, takeover after expiry, immediate step-down."""
from __future__ import annotations

import threading
import time

from cluster_adapter.config import LeaderSettings
from cluster_adapter.kube.client import KubeClient
from cluster_adapter.kube.leader import LeaderElector
from tests.adapter.kubeemu import EmulatorThread

FAST = LeaderSettings(enabled=True, namespace="volcano-system", name="volcano", lease_duration_s=1.0,
                      renew_deadline_s=0.6, retry_period_s=0.1)


def make(client: KubeClient, identity: str, lost: list[str] | None = None) -> LeaderElector:
    settings = LeaderSettings(enabled=True, namespace=FAST.namespace, name=FAST.name, identity=identity,
                              lease_duration_s=FAST.lease_duration_s, renew_deadline_s=FAST.renew_deadline_s,
                              retry_period_s=FAST.retry_period_s)
    sink = lost if lost is not None else []
    return LeaderElector(client, settings, on_lost=lambda: sink.append(identity))


def test_only_one_candidate_holds_the_lease(client: KubeClient, emu: EmulatorThread) -> None:
    a, b = make(client, "a"), make(client, "b")
    assert a.try_acquire_or_renew() and a.is_leader()
    assert not b.try_acquire_or_renew() and not b.is_leader()
    lease = emu.call(lambda e: e.get("leases", "volcano-system", "volcano"))
    assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseDurationSeconds"] == 1


def test_a_silent_leader_stops_writing_before_another_takes_over(client: KubeClient, stop: threading.Event) -> None:
    a, b = make(client, "a"), make(client, "b")
    assert a.try_acquire_or_renew()
    started = time.monotonic()
    threading.Thread(target=b.acquire, args=(stop,), daemon=True).start()
    while a.is_leader():
        time.sleep(0.01)
    a_stopped = time.monotonic() - started
    while not b.is_leader():
        time.sleep(0.01)
    b_started = time.monotonic() - started
    assert a_stopped < FAST.lease_duration_s <= b_started + 0.05  # never two writers at once


def test_released_lease_is_taken_over_at_once(client: KubeClient, stop: threading.Event) -> None:
    a, b = make(client, "a"), make(client, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    time.sleep(0.05)
    started = time.monotonic()
    assert b.acquire(stop)
    assert time.monotonic() - started < 1.2 * FAST.lease_duration_s


def test_losing_the_lease_to_another_holder_stops_at_the_next_renewal(client: KubeClient, emu: EmulatorThread,
                                                                      stop: threading.Event) -> None:
    lost: list[str] = []
    a = make(client, "a", lost)
    assert a.acquire(stop)
    a.start_renewing(stop)

    def steal(e: object) -> None:
        lease = emu.emulator.get("leases", "volcano-system", "volcano")  # type: ignore[union-attr]
        lease["spec"]["holderIdentity"] = "thief"
        emu.emulator.put_object(lease)  # type: ignore[union-attr]

    emu.call(steal)
    deadline = time.monotonic() + 2
    # the elector drops leadership first and then calls on_lost: wait for both
    while (a.is_leader() or not lost) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not a.is_leader() and lost == ["a"]
