"""CronJob controller on the fake clock: an hour of `*/20 * * * *` fires three times; Forbid skips a
run while a job is active and starts it late when the job finishes; Replace replaces the active job;
suspend, runs missed past their starting deadline, history limits, time zones and bad schedules."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cluster_adapter.controllers import cronjob
from cluster_adapter.controllers.clock import FakeClock
from tests.adapter.kubeemu import EmulatorThread
from tests.controllers.conftest import FAST_APPLY, Manager, create, get, listed, settle, task

MINUTE = 60.0


def cron(name: str = "nightly", *, schedule: str = "*/20 * * * *", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"app": name}},
                                                           "spec": {"queue": "default", "tasks": [task("t", 1)]}},
                     **spec}}


def jobs(emu: EmulatorThread) -> list[str]:
    return [j["metadata"]["name"] for j in listed(emu, "jobs")]


def finish(emu: EmulatorThread, name: str, phase: str, clock: FakeClock) -> None:
    from cluster_adapter.timestamps import rfc3339

    def write(e: Any) -> None:
        job = e.get("jobs", "default", name)
        job["status"] = {"state": {"phase": phase, "lastTransitionTime": rfc3339(clock.now())}}
        e.put_object(job)
    emu.call(write)


def an_hour(emu: EmulatorThread, controllers: Any, clock: FakeClock, before: Any = None) -> list[int]:
    """Advance minute by minute for an hour (calling `before(minute, fired)` first each minute, as
    the world moving); return the minutes at which a new job appeared."""
    fired: list[int] = []
    seen = set(jobs(emu))
    for minute in range(1, 61):
        clock.advance(MINUTE)
        if before is not None:
            before(minute, fired)
        settle(controllers)
        now = set(jobs(emu))
        if now - seen:
            fired.append(minute)
        seen |= now
    return fired


def unfinished(emu: EmulatorThread) -> list[str]:
    return [j["metadata"]["name"] for j in listed(emu, "jobs") if not (j.get("status") or {}).get("state")]


@pytest.mark.parametrize("policy", [pytest.param("Allow", id="allow"), pytest.param("Replace", id="replace")])
def test_fires_three_times_in_an_hour(emu: EmulatorThread, manager: Manager, clock: FakeClock, policy: str) -> None:
    create(emu, cron(concurrencyPolicy=policy))
    controllers = manager("cronjob")
    settle(controllers)
    fired = an_hour(emu, controllers, clock)
    assert len(fired) == 3 and fired[1] - fired[0] == fired[2] - fired[1] == 20
    held = get(emu, "cronjobs", "nightly")
    assert held is not None
    active = [ref["name"] for ref in held["status"]["active"]]
    assert len(active) == (3 if policy == "Allow" else 1)  # Replace deleted each active job for the next
    assert len(jobs(emu)) == len(active)
    last = held["status"]["lastScheduleTime"]
    assert last.endswith(":00Z") and int(last[14:16]) % 20 == 0
    job = get(emu, "jobs", active[-1])
    assert job is not None and job["metadata"]["labels"] == {"app": "nightly"}
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


def test_forbid_skips_while_active_and_starts_late_when_the_job_ends(emu: EmulatorThread, manager: Manager,
                                                                       clock: FakeClock) -> None:
    create(emu, cron(concurrencyPolicy="Forbid"))
    controllers = manager("cronjob")
    settle(controllers)
    def before(minute: int, fired: list[int]) -> None:
        if len(fired) == 1 and minute == fired[0] + 25:  # the first run ends 5 minutes after the second was due
            for name in unfinished(emu):
                finish(emu, name, "Completed", clock)

    fired = an_hour(emu, controllers, clock, before)
    assert len(fired) == 2 and fired[1] - fired[0] == 25  # skipped at +20, started late at +25
    events = [e["reason"] for e in listed(emu, "events") if e["involvedObject"]["name"] == "nightly"]
    assert "JobAlreadyActive" in events
    held = get(emu, "cronjobs", "nightly")
    assert held is not None and held["status"]["lastSuccessfulTime"]


def test_forbid_fires_three_times_when_each_run_finishes_in_time(emu: EmulatorThread, manager: Manager,
                                                                 clock: FakeClock) -> None:
    create(emu, cron(concurrencyPolicy="Forbid", successfulJobsHistoryLimit=1))
    controllers = manager("cronjob")
    settle(controllers)

    def before(minute: int, fired: list[int]) -> None:
        for name in unfinished(emu):  # each run finishes within a minute
            finish(emu, name, "Completed", clock)
    fired = an_hour(emu, controllers, clock, before)
    assert len(fired) == 3
    assert len(jobs(emu)) == 1  # successfulJobsHistoryLimit


def test_suspend_and_starting_deadline(emu: EmulatorThread, manager: Manager, clock: FakeClock) -> None:
    create(emu, cron("paused", suspend=True), cron("strict", schedule="0 * * * *", startingDeadlineSeconds=90))
    controllers = manager("cronjob")
    settle(controllers)
    # the controller was away for hours (back at half past): runs older than the deadline do not start
    clock.advance(3 * 3600 + (30 * 60 - clock.now() % 3600) % 3600)
    settle(controllers)
    assert jobs(emu) == []
    fired = an_hour(emu, controllers, clock)
    assert len(fired) == 1


def test_a_run_missed_past_the_starting_deadline_gives_one_miss_schedule_event_per_missed_time(
        emu: EmulatorThread, manager: Manager, clock: FakeClock) -> None:
    """The controller was away for hours and is back at half past: the run due on the hour is past its
    90 s deadline, so it does not start, and a Warning `MissSchedule` says so, once however often the
    CronJob is reconciled before the next run (the event recorder's own repeat window is off here); the
    next hour's run, missed too, gets its own."""
    create(emu, cron("strict", schedule="0 * * * *", startingDeadlineSeconds=90))
    controllers = manager("cronjob", apply=dataclasses.replace(FAST_APPLY, event_repeat_s=0.0))
    settle(controllers)
    for hour in range(2):
        clock.advance(3 * 3600 if hour == 0 else 3600)
        clock.advance((30 * 60 - clock.now() % 3600) % 3600)  # to half past
        settle(controllers)
        for touch in range(3):  # reconciled again before the next run is due
            create(emu, {**cron("strict", schedule="0 * * * *", startingDeadlineSeconds=90),
                         "metadata": {"name": "strict", "namespace": "default", "labels": {"touch": str(touch)}}})
            settle(controllers)
    assert jobs(emu) == []
    missed = [e for e in listed(emu, "events") if e["reason"] == "MissSchedule"]
    assert [e["type"] for e in missed] == ["Warning", "Warning"]
    hours = sorted(e["message"].split(" at ")[1][:19] for e in missed)
    assert hours[0].endswith(":00:00") and hours[1].endswith(":00:00") and hours[0] != hours[1]


@pytest.mark.parametrize("spec, message", [
    pytest.param({"schedule": "TZ=UTC */5 * * * *"}, "timeZone", id="tz-prefix-refused"),
    pytest.param({"schedule": "every five minutes"}, "not a cron expression", id="nonsense"),
    pytest.param({"timeZone": "Mars/Olympus"}, "unknown time zone", id="bad-zone"),
])
def test_bad_schedules_give_an_event_and_no_jobs(emu: EmulatorThread, manager: Manager, clock: FakeClock,
                                                 spec: dict[str, Any], message: str) -> None:
    create(emu, cron(**spec))
    controllers = manager("cronjob")
    clock.advance(3600)
    settle(controllers)
    assert jobs(emu) == []
    assert any(message in e["message"] for e in listed(emu, "events") if e["reason"] == "InvalidSchedule")


def test_time_zone_moves_the_schedule() -> None:
    created = "2024-03-10T12:00:00Z"
    held = {"metadata": {"creationTimestamp": created}}
    now = 1710079200.0 + 3600 * 20  # 2024-03-11T10:00Z (after the US DST change)
    utc, _ = cronjob.schedule_times({"schedule": "0 6 * * *"}, held, {}, now)
    ny, _ = cronjob.schedule_times({"schedule": "0 6 * * *", "timeZone": "America/New_York"}, held, {}, now)
    assert utc is not None and ny is not None and ny - utc == 4 * 3600  # 06:00 EDT = 10:00Z
