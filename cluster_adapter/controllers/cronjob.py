"""CronJob controller (`batch.volcano.sh/v1alpha1` CronJob -> vcjobs on a schedule), mirroring the
Kubernetes CronJob controller (v2), as Volcano's cronjob-controller does.

One reconcile of a CronJob, at the controllers' clock's `now`:

1. its Jobs (controller ownerReference) are matched with `status.active`: finished ones (Completed,
   Failed, Terminated, Aborted) leave it — a Completed one moves `lastSuccessfulTime` — active ones
   missing from it are added, references to vanished Jobs dropped;
2. `suspend: true` stops here;
3. the most recent schedule time in (lastScheduleTime or creation, now] is found with `croniter`, in
   `timeZone` (an IANA name; default UTC); with `startingDeadlineSeconds`, a time older than
   now - deadline is missed on purpose: a Warning `MissSchedule` Event, once per missed time, and no
   Job (lastScheduleTime stays, as in Kubernetes). No time due: come back at the next one;
4. concurrencyPolicy: **Allow** runs it; **Forbid** skips it while a Job is active (lastScheduleTime
   stays, so the run starts late if the active Job finishes before the next time and the deadline
   allows); **Replace** deletes the active Jobs first;
5. the Job `<cronjob>-<minutes since the epoch>` is created from `jobTemplate` (labels, annotations,
   spec), owned by the CronJob and stamped with its schedule time; `lastScheduleTime` = that time;
6. finished Jobs beyond `successfulJobsHistoryLimit` (3) / `failedJobsHistoryLimit` (1) are deleted,
   oldest first; the status is written if it changed; the CronJob is queued again for its next time.

A schedule croniter cannot read, a `TZ=`/`CRON_TZ=` prefix (refused, as Volcano's webhook does), or an
unknown time zone gives a Warning event and no Jobs.
"""
from __future__ import annotations

import datetime
import logging
import zoneinfo
from typing import Any

from croniter import croniter

from cluster_adapter.controllers import names
from cluster_adapter.controllers.api import CRONJOBS, JOBS
from cluster_adapter.timestamps import parse_rfc3339, rfc3339
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import APIConflict, APINotFound

log = logging.getLogger(__name__)

FINISHED = {"Completed": True, "Failed": False, "Terminated": False, "Aborted": False}  # phase -> successful
DEFAULT_SUCCESSFUL_LIMIT, DEFAULT_FAILED_LIMIT = 3, 1


class ScheduleError(ValueError):
    """The CronJob's schedule or time zone cannot be used."""


@register
class CronJobController(Controller):
    name = "cronjob-controller"
    resources = (CRONJOBS, JOBS)

    def __init__(self) -> None:
        super().__init__()
        # (namespace, name) -> the missed schedule time last reported: a missed time stays the most
        # recent unmet one until the next is due, and every reconcile in between would report it again
        self._missed: dict[tuple[str, str], float] = {}

    def setup(self, options: Options) -> None:
        options.store.on(CRONJOBS.name, self._on_cronjob)
        options.store.on(JOBS.name, self._on_job)

    def key_of(self, item: Any) -> str:
        return "/".join(item)

    def _on_cronjob(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if event == "DELETED":
            self._missed.pop(key, None)
        else:
            self.work.add(key)

    def _on_job(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        owner = names.controller_of(obj)
        if owner is not None and owner.get("kind") == names.CRONJOB_KIND:
            self.work.add((obj["metadata"].get("namespace", ""), owner["name"]))

    def process(self, item: Any) -> None:
        namespace, name = item
        store, api = self.opts.store, self.opts.api
        cron = store.get(CRONJOBS.name, namespace, name)
        if cron is None or cron["metadata"].get("deletionTimestamp"):
            return
        now = self.opts.clock.now()
        spec, status = cron.get("spec") or {}, dict(cron.get("status") or {})
        jobs = {j["metadata"]["uid"]: j for j in store.owned_by(JOBS.name, namespace, cron["metadata"].get("uid", ""))}
        active, finished = self._reconcile_active(status, jobs)
        status["active"] = active
        for job in finished:
            state = (job.get("status") or {}).get("state") or {}
            if FINISHED.get(state.get("phase", "")):
                done = parse_rfc3339(state.get("lastTransitionTime")) or now
                last = parse_rfc3339(status.get("lastSuccessfulTime"))
                if last is None or done > last:
                    status["lastSuccessfulTime"] = rfc3339(done)
        if spec.get("suspend"):
            self._cleanup(spec, jobs.values(), active)
            self._write(cron, status)
            return
        try:
            scheduled, following = schedule_times(spec, cron, status, now)
        except ScheduleError as exc:
            self.opts.events.event(cron, "Warning", "InvalidSchedule", str(exc))
            self._write(cron, status)
            return
        deadline = spec.get("startingDeadlineSeconds")
        if scheduled is not None and deadline is not None and scheduled + float(deadline) < now:
            self._report_missed(cron, item, scheduled)
            scheduled = None
        if scheduled is not None:
            policy = spec.get("concurrencyPolicy") or "Allow"
            if policy == "Forbid" and active:
                self.opts.events.event(cron, "Normal", "JobAlreadyActive",
                                       f"not starting the run at {rfc3339(scheduled)}: a job is still active")
                scheduled = None
            elif policy == "Replace":
                for ref in active:
                    try:
                        api.delete(JOBS, namespace, ref["name"], propagation="Background")
                    except APINotFound:
                        pass
                    self.opts.events.event(cron, "Normal", "SuccessfulDelete", f"Deleted job {ref['name']}")
                active = []
                status["active"] = active
        if scheduled is not None:
            created = self._create_job(cron, scheduled)
            if created is not None:
                active.append(_reference(created))
                status["lastScheduleTime"] = rfc3339(scheduled)
        self._cleanup(spec, jobs.values(), active)
        self._write(cron, status)
        if following is not None:
            self.work.add_after(item, max(0.0, following - now))

    # parts ---------------------------------------------------------------------------------------------
    @staticmethod
    def _reconcile_active(status: dict[str, Any], jobs: dict[str, dict[str, Any]]
                          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        listed = {ref.get("uid"): ref for ref in status.get("active") or [] if isinstance(ref, dict)}
        active: list[dict[str, Any]] = []
        finished: list[dict[str, Any]] = []
        for uid, ref in listed.items():
            job = jobs.get(str(uid))
            if job is None:
                continue  # deleted meanwhile
            if _finished(job):
                finished.append(job)
            else:
                active.append(ref)
        for uid, job in sorted(jobs.items(), key=lambda kv: _scheduled_at(kv[1])):
            if uid not in listed and not _finished(job):
                active.append(_reference(job))  # made by us, but the status write was lost
        return active, finished

    def _report_missed(self, cron: dict[str, Any], item: tuple[str, str], scheduled: float) -> None:
        """A Warning `MissSchedule` about a run past its startingDeadlineSeconds, once per missed time."""
        if self._missed.get(item) == scheduled:
            return
        self._missed[item] = scheduled
        self.opts.events.event(cron, "Warning", "MissSchedule",
                               f"missed the run at {rfc3339(scheduled)}: startingDeadlineSeconds passed")

    def _create_job(self, cron: dict[str, Any], scheduled: float) -> dict[str, Any] | None:
        meta, template = cron["metadata"], (cron.get("spec") or {}).get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        name = f"{meta['name']}-{int(scheduled // 60)}"
        annotations = dict(template_meta.get("annotations") or {})
        annotations[names.CRONJOB_SCHEDULED_TIMESTAMP_KEY] = rfc3339(scheduled)
        body = {"apiVersion": JOBS.api_version, "kind": "Job",
                "metadata": {"name": name, "namespace": meta.get("namespace", ""),
                             "labels": dict(template_meta.get("labels") or {}), "annotations": annotations,
                             "ownerReferences": [names.owner_reference(cron, api_version=CRONJOBS.api_version,
                                                                       kind=names.CRONJOB_KIND)]},
                "spec": template.get("spec") or {}}
        try:
            job = self.opts.api.create(JOBS, body)
        except APIConflict:
            try:
                job = self.opts.api.get(JOBS, meta.get("namespace", ""), name)
            except APINotFound:
                return None
            if (names.controller_of(job) or {}).get("uid") != meta.get("uid"):
                self.opts.events.event(cron, "Warning", "FailedCreate", f"a job named {name} exists and is not ours")
                return None
            return job
        self.opts.events.event(cron, "Normal", "SuccessfulCreate", f"Created job {name}")
        return job

    def _cleanup(self, spec: dict[str, Any], jobs: Any, active: list[dict[str, Any]]) -> None:
        active_uids = {ref.get("uid") for ref in active}
        done = sorted((j for j in jobs if _finished(j) and j["metadata"]["uid"] not in active_uids), key=_scheduled_at)
        for successful, limit in ((True, spec.get("successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_LIMIT)),
                                  (False, spec.get("failedJobsHistoryLimit", DEFAULT_FAILED_LIMIT))):
            if limit is None:
                continue
            kind = [j for j in done if FINISHED.get(_phase(j)) is successful]
            for job in kind[:max(0, len(kind) - int(limit))]:
                try:
                    self.opts.api.delete(JOBS, job["metadata"].get("namespace", ""), job["metadata"]["name"],
                                         propagation="Background")
                except APINotFound:
                    pass

    def _write(self, cron: dict[str, Any], status: dict[str, Any]) -> None:
        held = cron.get("status") or {}
        changes = {k: v for k, v in status.items() if held.get(k) != v}
        if changes:
            meta = cron["metadata"]
            self.opts.api.patch(CRONJOBS, meta.get("namespace", ""), meta["name"], {"status": changes},
                                subresource="status")


def schedule_times(spec: dict[str, Any], cron: dict[str, Any], status: dict[str, Any],
                   now: float) -> tuple[float | None, float | None]:
    """(the most recent unmet schedule time <= now, or None; the next schedule time after now).

    The unmet time is returned even when it is past `startingDeadlineSeconds`: the caller reports it as
    missed (a time dropped here could never be told from no time due)."""
    expression = str(spec.get("schedule") or "").strip()
    if expression.upper().startswith(("TZ=", "CRON_TZ=")):
        raise ScheduleError(f"schedule {expression!r}: set the time zone with spec.timeZone, not a TZ= prefix")
    if not croniter.is_valid(expression):
        raise ScheduleError(f"schedule {expression!r} is not a cron expression")
    zone_name = spec.get("timeZone") or "UTC"
    try:
        zone = zoneinfo.ZoneInfo(str(zone_name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"unknown time zone {zone_name!r}") from exc
    earliest = parse_rfc3339(status.get("lastScheduleTime")) or parse_rfc3339(
        cron["metadata"].get("creationTimestamp")) or now
    at_now = datetime.datetime.fromtimestamp(now, zone)
    latest = croniter(expression, at_now + datetime.timedelta(microseconds=1)).get_prev(datetime.datetime).timestamp()
    following = croniter(expression, at_now).get_next(datetime.datetime).timestamp()
    return (latest if latest > earliest else None), following


def _finished(job: dict[str, Any]) -> bool:
    return _phase(job) in FINISHED


def _phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def _scheduled_at(job: dict[str, Any]) -> float:
    meta = job["metadata"]
    return parse_rfc3339((meta.get("annotations") or {}).get(names.CRONJOB_SCHEDULED_TIMESTAMP_KEY)) or \
        parse_rfc3339(meta.get("creationTimestamp")) or 0.0


def _reference(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": JOBS.api_version, "kind": "Job", "name": meta["name"],
            "namespace": meta.get("namespace", ""), "uid": meta.get("uid", "")}
