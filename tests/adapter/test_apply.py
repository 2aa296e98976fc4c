"""Binder, evictor and status writer against the emulator, including the faults they must survive."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest

from cluster_adapter.kube import retry
from cluster_adapter.kube.binder import Binder
from cluster_adapter.kube.client import PODGROUPS, KubeClient
from cluster_adapter.kube.evictor import Evictor
from cluster_adapter.kube.status import StatusWriter
from tests.adapter.conftest import FAST_APPLY, load, pod, podgroup, queue
from tests.adapter.kubeemu import Call, EmulatorThread


def fail_first(n: int, verb: str, status: int, reason: str, *, then: Callable[[Call], None] | None = None,
               **details: Any) -> Callable[[Call], kmock.KubernetesError | None]:
    """A fault hook: the first `n` calls of `verb` answer `status` (after running `then`, if given)."""
    left = [n]

    def hook(call: Call) -> kmock.KubernetesError | None:
        if call.verb != verb or left[0] <= 0:
            return None
        left[0] -= 1
        if then is not None:
            then(call)
        return kmock.KubernetesError(status=status, reason=reason, message=f"injected {status}", details=details)
    return hook


def add_fault(emu: EmulatorThread, hook: Callable[[Call], kmock.KubernetesError | None]) -> None:
    emu.call(lambda e: e.faults.append(hook))


def test_bind_sets_the_node_and_carries_annotations(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("p")])
    result = Binder(client, FAST_APPLY).bind(p, "n1", {"volcano.sh/vgpu-node": "n1"})
    assert result.ok
    bound = emu.call(lambda e: e.get("pods", "default", "p"))
    assert bound["spec"]["nodeName"] == "n1" and bound["metadata"]["annotations"]["volcano.sh/vgpu-node"] == "n1"


@pytest.mark.parametrize("status, reason", [
    pytest.param(500, "InternalError", id="500"),
    pytest.param(429, "TooManyRequests", id="429"),
    pytest.param(503, "ServiceUnavailable", id="503"),
])
def test_transient_errors_are_retried_and_the_pod_is_bound_once(emu: EmulatorThread, client: KubeClient,
                                                                status: int, reason: str) -> None:
    [p] = load(emu, [pod("p")])
    add_fault(emu, fail_first(2, "bind", status, reason))
    assert Binder(client, FAST_APPLY).bind(p, "n1").ok
    assert emu.call(lambda e: e.count("bind", status=201)) == 1


def test_retry_after_from_the_server_sets_the_wait(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("p")])
    add_fault(emu, fail_first(1, "bind", 429, "TooManyRequests", retryAfterSeconds=1))
    slept: list[float] = []
    binder = Binder(client, FAST_APPLY.__class__(attempts=3, backoff_initial_s=0.01, backoff_max_s=5.0),
                    sleep=slept.append)
    assert binder.bind(p, "n1").ok
    assert slept == [1.0]


def test_a_bind_whose_answer_was_lost_is_not_applied_twice(emu: EmulatorThread, client: KubeClient) -> None:
    """The server binds, the answer is a 500; the retry meets 409, reads the pod: bound to our node = done."""
    [p] = load(emu, [pod("p")])

    def bind_for_real(call: Call) -> None:
        e = emu.emulator
        assert e is not None
        e._bind(call.kind, e._current(call.kind, "default", "p"), call.body)  # noqa: SLF001  # reason: the server's own bind

    add_fault(emu, fail_first(1, "bind", 500, "InternalError", then=bind_for_real))
    result = Binder(client, FAST_APPLY).bind(p, "n1")
    assert result.ok
    assert emu.call(lambda e: e.count("bind", status=409)) == 1
    assert emu.call(lambda e: e.get("pods", "default", "p"))["spec"]["nodeName"] == "n1"


def test_a_conflict_whose_pod_cannot_be_read_again_is_left_for_the_next_session(emu: EmulatorThread,
                                                                                client: KubeClient) -> None:
    """A 409, then 500s on reading the pod back: the binder cannot judge it, so it reports a failure the
    next session retries (never an exception, which would cost the other parallel binds their outcome)."""
    [p] = load(emu, [pod("p")])
    add_fault(emu, fail_first(1, "bind", 409, "Conflict"))
    add_fault(emu, fail_first(100, "get", 500, "InternalError"))
    result = Binder(client, FAST_APPLY).bind(p, "n1")
    assert not result.ok and result.retry_next_session and "could not be read again" in result.reason
    assert emu.call(lambda e: e.get("pods", "default", "p"))["spec"].get("nodeName") is None


def test_a_pod_bound_elsewhere_meanwhile_is_a_final_failure(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("p")])
    load(emu, [pod("p", node_name="other")])  # another scheduler got there first
    result = Binder(client, FAST_APPLY).bind(p, "n1")
    assert not result.ok and "already bound to other" in result.reason and not result.retry_next_session


def test_a_bind_that_keeps_failing_is_left_for_the_next_session(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("p")])
    add_fault(emu, fail_first(100, "bind", 500, "InternalError"))
    result = Binder(client, FAST_APPLY).bind(p, "n1")
    assert not result.ok and result.retry_next_session
    assert emu.call(lambda e: e.get("pods", "default", "p"))["spec"].get("nodeName") is None


def test_no_write_is_attempted_once_the_gate_closes(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("p")])
    with pytest.raises(retry.NotLeader):
        Binder(client, FAST_APPLY, gate=lambda: False).bind(p, "n1")
    assert emu.call(lambda e: e.count("bind")) == 0


def test_eviction_blocked_by_a_budget_is_not_retried_within_the_session(emu: EmulatorThread,
                                                                        client: KubeClient) -> None:
    [p, _] = load(emu, [pod("v", node_name="n1", phase="Running", labels={"app": "x"}),
                        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": "b", "namespace": "default"},
                         "spec": {"selector": {"matchLabels": {"app": "x"}}}, "status": {"disruptionsAllowed": 0}}])
    result = Evictor(client, FAST_APPLY).evict(p)
    assert not result.ok and result.blocked
    assert emu.call(lambda e: e.count("evict")) == 1


def test_evicting_a_pod_that_is_already_gone_counts_as_done(emu: EmulatorThread, client: KubeClient) -> None:
    result = Evictor(client, FAST_APPLY).evict({"metadata": {"namespace": "default", "name": "ghost", "uid": "u"}})
    assert result.ok


def test_eviction_retries_a_500_then_deletes(emu: EmulatorThread, client: KubeClient) -> None:
    [p] = load(emu, [pod("v", node_name="n1", phase="Running")])
    add_fault(emu, fail_first(1, "evict", 500, "InternalError"))
    assert Evictor(client, FAST_APPLY).evict(p).ok
    assert emu.call(lambda e: e.get("pods", "default", "v")) is None


def test_podgroup_status_conflict_rereads_and_recomputes(emu: EmulatorThread, client: KubeClient) -> None:
    [g] = load(emu, [podgroup("g", phase="Pending")])
    load(emu, [{**podgroup("g", phase="Pending"), "metadata": {"name": "g", "namespace": "default",
                                                               "labels": {"touched": "yes"}}}])  # RV moves on
    seen: list[str] = []

    def status_for(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["resourceVersion"])
        return {"phase": "Inqueue", "conditions": []}

    written = StatusWriter(client, FAST_APPLY).podgroup(g, status_for)
    assert written is not None and written["status"]["phase"] == "Inqueue"
    assert written["metadata"]["labels"] == {"touched": "yes"}
    assert len(seen) == 2 and emu.call(lambda e: e.count("patch", "podgroups", status=409)) == 1


def test_podgroup_status_is_not_written_onto_a_podgroup_recreated_under_its_name(emu: EmulatorThread,
                                                                                  client: KubeClient) -> None:
    """The PodGroup is deleted and created again (a vcjob restart) after the status was computed: the
    write meets 409, and the copy read back has another uid, so nothing is written to it."""
    [old] = load(emu, [podgroup("g", phase="Pending")])
    client.delete_object(PODGROUPS, "default", "g")
    [new] = load(emu, [podgroup("g", phase="Pending")])
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    computed_for: list[str] = []

    def status_for(obj: dict[str, Any]) -> dict[str, Any]:
        computed_for.append(obj["metadata"]["uid"])
        return {"phase": "Running", "conditions": []}

    assert StatusWriter(client, FAST_APPLY).podgroup(old, status_for) is None
    assert computed_for == [old["metadata"]["uid"]]
    assert emu.call(lambda e: e.count("patch", "podgroups", status=409)) == 1
    assert emu.call(lambda e: e.get("podgroups", "default", "g"))["status"]["phase"] == "Pending"


def test_queue_status_goes_through_the_status_subresource(emu: EmulatorThread, client: KubeClient) -> None:
    load(emu, [queue("q")])
    StatusWriter(client, FAST_APPLY).queue("q", {"allocated": {"cpu": "2"}, "running": 1})
    held = emu.call(lambda e: e.get("queues", "", "q"))
    assert held["status"] == {"state": "Open", "allocated": {"cpu": "2"}, "running": 1}
    assert emu.call(lambda e: e.count("patch", "queues")) == 1
    assert [r.call.subresource for r in emu.call(lambda e: e.records) if r.call.verb == "patch"] == ["status"]
