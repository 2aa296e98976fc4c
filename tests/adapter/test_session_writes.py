"""A session's writes when the API refuses some of them or the world moves while it runs: one refused
write costs the session nothing else and never the loop, and what is written lands only where the
session's decision still holds (the PodGroup it saw, the preemptor whose victims did go, a Queue's
status without the controller's `state`)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kmock
import pytest

import vpolicy
from cluster_adapter.config import SchedulerSettings
from cluster_adapter.kube.client import PODGROUPS, PODS, KubeClient
from cluster_adapter.scheduler import Scheduler, SessionReport
from tests.adapter.conftest import FAST_APPLY, FAST_INFORMERS, FAST_SCHEDULER, eventually, load, started, node, pod, podgroup, queue
from tests.adapter.kubeemu import Call, EmulatorThread
from tests.adapter.test_e2e import SCENARIOS, scenario

SETTINGS = FAST_SCHEDULER
Fault = Callable[[Call], kmock.KubernetesError | None]


def refuse(emu: EmulatorThread, status: int, *, when: Callable[[Call], bool]) -> None:
    """Every call `when` accepts is answered `status`."""
    def hook(call: Call) -> kmock.KubernetesError | None:
        return kmock.KubernetesError(status=status, reason="Injected", message=f"injected {status}",
                                     details={}) if when(call) else None
    emu.call(lambda e: e.faults.append(hook))


def gangs(jobs: int, tasks: int, *, cpu: str = "1") -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [queue("default"), node("n0", cpu="4"), node("n1", cpu="4")]
    for j in range(jobs):
        objects.append(podgroup(f"job{j}", min_member=tasks))
        objects += [pod(f"job{j}-t-{t}", group=f"job{j}", cpu=cpu) for t in range(tasks)]
    return objects


def bound(emu: EmulatorThread) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in emu.call(lambda e: e.list("pods"))
            if p["spec"].get("nodeName")}


def events(emu: EmulatorThread, reason: str) -> set[str]:
    return {e["involvedObject"]["name"] for e in emu.call(lambda e: e.list("events")) if e["reason"] == reason}


def podgroup_phase(emu: EmulatorThread, name: str) -> str | None:
    held = emu.call(lambda e: e.get("podgroups", "default", name))
    return None if held is None else (held.get("status") or {}).get("phase")


def pod_condition(emu: EmulatorThread, name: str, ns: str = "default") -> dict[str, Any] | None:
    held = emu.call(lambda e: e.get("pods", ns, name))
    return next((c for c in held["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None)


def failures(scheduler: Scheduler, kind: str) -> float:
    return scheduler.metrics.registry.get_sample_value("vpolicy_status_write_failures_total", {"kind": kind}) or 0.0


# one refused write costs nothing else ------------------------------------------------------------------
def test_a_bind_conflict_whose_pod_cannot_be_read_again_fails_that_bind_alone(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """A 409 on one bind, then 500s on reading that pod back: the bind fails for this session (the next
    decides again); the other binds are recorded, assumed and announced, and the status goes out."""
    load(emu, gangs(jobs=2, tasks=2))
    refuse(emu, 409, when=lambda c: c.verb == "bind" and c.name == "job0-t-0")
    refuse(emu, 500, when=lambda c: c.verb == "get" and c.plural == "pods" and c.name == "job0-t-0")
    scheduler = started(client, schedulers)
    report = scheduler.run_once()
    assert list(report.bind_failed) == ["default/job0-t-0"]
    assert "could not be read again" in report.bind_failed["default/job0-t-0"]
    assert sorted(report.bound) == ["default/job0-t-1", "default/job1-t-0", "default/job1-t-1"]
    assert sorted(bound(emu)) == ["job0-t-1", "job1-t-0", "job1-t-1"]
    next_snapshot = scheduler.cache.snapshot()  # assumed bound, or already seen bound through the watch
    assert sorted(p.name for p in next_snapshot.pods if p.node_name) == ["job0-t-1", "job1-t-0", "job1-t-1"]
    assert events(emu, "Scheduled") >= {"job0-t-1", "job1-t-0", "job1-t-1"}
    assert "job0-t-0" in events(emu, "FailedScheduling")
    assert report.podgroups_written and report.queues_written == ["default"]
    assert scheduler.metrics.registry.get_sample_value("vpolicy_sessions_total", {"result": "ok"}) == 1.0


def test_a_refused_queue_status_write_is_reported_and_the_rest_of_the_session_goes_out(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    load(emu, gangs(jobs=1, tasks=2))
    refuse(emu, 500, when=lambda c: c.verb == "patch" and c.plural == "queues")
    scheduler = started(client, schedulers)
    report = scheduler.run_once()
    assert list(report.status_failed) == ["queues/default"] and not report.queues_written
    assert failures(scheduler, "queue") == 1.0
    assert sorted(bound(emu)) == ["job0-t-0", "job0-t-1"]
    assert podgroup_phase(emu, "job0") == report.document["podgroups"]["default/job0"]["phase"]
    assert events(emu, "Scheduled") >= {"job0-t-0", "job0-t-1"}


def test_one_pods_refused_status_patch_leaves_the_other_pods_conditions_and_the_events(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """Two pods too big for the cluster; an admission webhook refuses (422) the first one's status patch."""
    load(emu, [queue("default"), node("n0", cpu="1"),
               podgroup("big", min_member=1), pod("big-0", group="big", cpu="8"),
               podgroup("huge", min_member=1), pod("huge-0", group="huge", cpu="8"),
               podgroup("small", min_member=1), pod("small-0", group="small", cpu="1")])
    refuse(emu, 422, when=lambda c: c.verb == "patch" and c.subresource == "status" and c.name == "big-0")
    scheduler = started(client, schedulers)
    report = scheduler.run_once()
    assert list(report.status_failed) == ["pods/default/big-0"] and failures(scheduler, "pod") == 1.0
    assert pod_condition(emu, "big-0") is None
    written = pod_condition(emu, "huge-0")
    assert written is not None and written["status"] == "False"
    assert {k: written[k] for k in ("reason", "message")} == report.document["pod_conditions"]["default/huge-0"]
    assert bound(emu) == {"small-0": "n0"}
    assert events(emu, "FailedScheduling") >= {"big-0", "huge-0"}
    assert sorted(report.podgroups_written) == ["default/big", "default/huge", "default/small"]


def test_the_loop_outlives_an_outage_of_queue_status_writes_and_schedules_what_comes_after(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    load(emu, gangs(jobs=1, tasks=1))
    outage = threading.Event()
    outage.set()
    refused: list[Call] = []

    def down(call: Call) -> bool:
        if outage.is_set() and call.verb == "patch" and call.plural == "queues":
            refused.append(call)
            return True
        return False

    refuse(emu, 500, when=down)
    scheduler = started(client, schedulers)
    loop = threading.Thread(target=scheduler.run, daemon=True)
    loop.start()
    eventually(lambda: len(refused) > 2 * FAST_APPLY.attempts)  # more than one session met the outage
    outage.clear()
    load(emu, [podgroup("late", min_member=1), pod("late-0", group="late")])
    eventually(lambda: "late-0" in bound(emu))
    eventually(lambda: (scheduler.metrics.registry.get_sample_value("vpolicy_status_writes_total",
                                                                    {"kind": "queue"}) or 0.0) >= 1)
    assert loop.is_alive()
    scheduler.stop.set()
    loop.join(5)
    assert not loop.is_alive()


# writes land only where the decision still holds -------------------------------------------------------
PREEMPT = SCENARIOS / "preempt" / "evicts_lower_priority_job_in_same_queue.yaml"
BUDGET = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard", "namespace": "team"},
          "spec": {"selector": {"matchLabels": {"app": "guarded"}}}, "status": {"disruptionsAllowed": 0}}


@pytest.mark.parametrize("budget, nominated", [
    pytest.param(False, "n2", id="victim-evicted-preemptor-nominated"),
    pytest.param(True, None, id="budget-refuses-eviction-preemptor-not-nominated"),
])
def test_a_preemptor_is_nominated_only_when_its_victims_eviction_went_through(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler], tmp_path: Path, budget: bool,
        nominated: str | None) -> None:
    """The scenario evicts team/low-p-0 on n2 for team/pre-p-0. A PodDisruptionBudget that allows no
    disruption refuses the eviction (429): the victim stays, so pre-p-0 must not be nominated to n2;
    it keeps the session's PodScheduled=False condition."""
    objects, conf = scenario(PREEMPT)
    for obj in objects:
        if obj.get("kind") == "Pod" and obj["metadata"]["name"] == "low-p-0":
            obj["metadata"].setdefault("labels", {})["app"] = "guarded"
    load(emu, objects + ([BUDGET] if budget else []))
    conf_file = tmp_path / "volcano-scheduler.conf"
    conf_file.write_text(conf or "")
    scheduler = started(client, schedulers, SchedulerSettings(conf=str(conf_file), apply=FAST_APPLY,
                                                              informers=FAST_INFORMERS))
    report = scheduler.run_once()
    assert report.document["nominated"] == {"team/pre-p-0": "n2"}  # what the session decided, either way
    preemptor = emu.call(lambda e: e.get("pods", "team", "pre-p-0"))
    assert preemptor["status"].get("nominatedNodeName") == nominated
    assert report.nominated == ([] if nominated is None else ["team/pre-p-0"])
    condition = pod_condition(emu, "pre-p-0", "team")
    assert condition is not None
    assert {k: condition[k] for k in ("reason", "message")} == report.document["pod_conditions"]["team/pre-p-0"]
    assert (emu.call(lambda e: e.get("pods", "team", "low-p-0")) is not None) is budget
    assert ("low-p-0" in events(emu, "FailedEvict")) is budget


def test_the_queue_status_write_leaves_a_state_the_controller_set_during_the_session(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """The queue controller closes q1 (CloseQueue with a podgroup left: Closing) while a session that
    saw it Open runs; the session's status write must not open it again."""
    load(emu, [queue("default"), queue("q1"), node("n0", cpu="4"),
               podgroup("pg", queue="q1", phase="Running"), pod("pg-0", group="pg", node_name="n0", phase="Running"),
               podgroup("pg2", queue="q1", phase="Inqueue"), pod("pg2-0", group="pg2")])
    scheduler = started(client, schedulers)
    snapshot = scheduler.cache.snapshot()
    decided = vpolicy.run_session(snapshot, scheduler.policy.get(), now=time.time(),
                                  scheduler_names=("volcano",)).decisions
    assert decided.queues["q1"]["state"] == "Open"

    def close(e: Any) -> None:
        held = e.get("queues", "", "q1")
        held["status"]["state"] = "Closing"
        e.put_object(held)

    emu.call(close)
    eventually(lambda: (scheduler.cache.get("queues", "", "q1") or {})["status"].get("state") == "Closing")
    report = SessionReport()
    scheduler.apply(decided, report, snapshot=snapshot)
    assert "q1" in report.queues_written  # its counters did change
    held = emu.call(lambda e: e.get("queues", "", "q1"))["status"]
    assert held["state"] == "Closing" and held["running"] == 1
    patches = [r.call.body for r in emu.call(lambda e: e.records) if r.call.verb == "patch" and r.call.plural == "queues"]
    assert patches and all("state" not in body["status"] for body in patches)


def test_a_podgroup_recreated_under_its_name_during_the_session_keeps_its_own_status(
        emu: EmulatorThread, client: KubeClient, schedulers: list[Scheduler]) -> None:
    """A vcjob restart deletes the pods and the PodGroup and creates the PodGroup again (Pending) while a
    session that decided the old one Inqueue runs: neither its phase nor its Events reach the new one."""
    load(emu, [queue("default"), node("n0", cpu="8"), podgroup("job-abc", min_member=2, phase="Pending"),
               pod("job-abc-w-0", group="job-abc"), pod("job-abc-w-1", group="job-abc")])
    scheduler = started(client, schedulers)
    old_uid = scheduler.cache.get("podgroups", "default", "job-abc")["metadata"]["uid"]
    snapshot = scheduler.cache.snapshot()
    decided = vpolicy.run_session(snapshot, scheduler.policy.get(), now=time.time(),
                                  scheduler_names=("volcano",)).decisions
    assert decided.podgroups["default/job-abc"].phase != "Pending"
    for resource, name in ((PODS, "job-abc-w-0"), (PODS, "job-abc-w-1"), (PODGROUPS, "job-abc")):
        client.delete_object(resource, "default", name)
    load(emu, [podgroup("job-abc", min_member=2, phase="Pending")])
    eventually(lambda: (scheduler.cache.get("podgroups", "default", "job-abc") or {}).get("metadata", {}).get("uid")
               not in (None, old_uid) and scheduler.cache.get("pods", "default", "job-abc-w-0") is None)
    report = SessionReport()
    scheduler.apply(decided, report, snapshot=snapshot)
    assert podgroup_phase(emu, "job-abc") == "Pending"
    assert "default/job-abc" not in report.podgroups_written and "default/job-abc" in report.skipped
    assert not [e for e in emu.call(lambda e: e.list("events")) if e["involvedObject"]["kind"] == "PodGroup"]
