"""The vcjob controller: store changes become requests, requests become sync or kill.

Handlers (enqueue only; Volcano's `job_controller_handler.go`):
- Job added, or its spec or phase changed -> OutOfSync;
- a pod the job controls: added -> OutOfSync (PodPending while Pending, for timeout policies);
  became Failed -> PodFailed with the first container's exit code; became Succeeded and its task is
  complete -> TaskCompleted; pending/running while the task's pods restarted their containers more
  than the task's maxRetry -> TaskFailed;
  became Running -> PodRunning; deleted or being deleted -> PodEvicted; each request carries the
  job version the pod was made for;
- the job's PodGroup changed phase -> Unknown when it became Unknown, else OutOfSync;
- a `bus.volcano.sh` Command targeting a Job: deleted (runs at most once), then its action.

Processing one request: `policies.decide` gives the action (and a timeout: the request is held
that long on the clock, then carried out only if the job was not restarted meanwhile and, for
PodPending/PodFailed, the pod is still so); `state.plan` gives sync or kill and the update rule.

- **sync**: initiate the job on first sight (status Pending, plugins, PodGroup `<job>-<uid>`),
  otherwise update plugins and the PodGroup spec; once the PodGroup left Pending create the missing
  pods `<job>-<task>-<i>` and delete pods beyond the replicas; count per phase and per task (Volcano
  keeps the old counters while the PodGroup is Pending; counting anyway lets a Restarting job see
  its pods go), apply the update rule, write the status (only if it changed).
- **kill**: delete the pods not retained (all but Succeeded/Failed at the last retry), count,
  bump `status.version`, apply the rule, let plugins clean up, write the status, delete the
  PodGroup (a targeted kill — RestartTask/Pod/Partition — deletes only the target's pods and keeps
  the PodGroup and plugins).

A phase our own write changed is synced again (the store tells the handlers of our writes, as
Volcano's informer does). A request that keeps failing is retried with backoff up to `--max-requeue-num` times, then the job is
terminated, as Volcano does. Deliberate difference: a job whose queue does not exist (yet) is not an
error that counts towards that limit; it waits (Warning event) and is looked at again every second.
"""
from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cluster_adapter.controllers import names
from cluster_adapter.controllers.api import COMMANDS, JOBS, PODGROUPS, PODS, PRIORITY_CLASSES, QUEUES
from cluster_adapter.controllers.clock import go_duration
from cluster_adapter.timestamps import parse_rfc3339, rfc3339
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.job import build, plugins, state
from cluster_adapter.controllers.job.policies import Request, decide, events_of
from cluster_adapter.controllers.job.state import Action, Event, Op, Phase
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import APIConflict, APIError, APINotFound

log = logging.getLogger(__name__)

QUEUE_WAIT_S = 1.0  # how often a job waiting for its queue is looked at again
CREATE_WORKERS = 8  # parallel pod creations per job (Volcano creates them all at once)


@dataclasses.dataclass(frozen=True, slots=True)
class CommandItem:
    namespace: str
    name: str
    job_name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.job_name}"


class JobError(Exception):
    """Some of a job's pods could not be created or deleted; the request is retried."""


@register
class JobController(Controller):
    name = "job-controller"
    resources = (JOBS, PODS, PODGROUPS, QUEUES, COMMANDS, PRIORITY_CLASSES)

    def setup(self, options: Options) -> None:
        self.plugin_context = plugins.Context(api=options.api, settings=options.settings)
        self._warned_plugins: set[tuple[str, str]] = set()
        options.store.on(JOBS.name, self._on_job)
        options.store.on(PODS.name, self._on_pod)
        options.store.on(PODGROUPS.name, self._on_podgroup)
        options.store.on(COMMANDS.name, self._on_command)

    def key_of(self, item: Any) -> str:
        return str(item.key)

    # handlers -----------------------------------------------------------------------------------------
    def _on_job(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj["metadata"]
        if event == "DELETED":
            self.plugin_context.hosts_written.pop(str(meta.get("uid")), None)
            return
        if event == "MODIFIED" and old is not None and obj.get("spec") == old.get("spec") and \
                _phase(obj) == _phase(old):
            return
        self.work.add(Request(meta.get("namespace", ""), meta["name"]))

    def _on_pod(self, event: str, pod: dict[str, Any], old: dict[str, Any] | None) -> None:
        if not names.controlled_by(pod, kind=names.JOB_KIND, api_version=names.JOB_API_VERSION):
            return
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        job_name = annotations.get(names.JOB_NAME_KEY)
        if not job_name:
            return
        try:
            version = int(annotations.get(names.JOB_VERSION_KEY, "0"))
        except ValueError:
            return
        owner = names.controller_of(pod) or {}
        base = Request(meta.get("namespace", ""), job_name, job_uid=str(owner.get("uid", "")),
                       task_name=annotations.get(names.TASK_SPEC_KEY, ""), pod_name=meta["name"], job_version=version)
        phase, before = _pod_phase(pod), (_pod_phase(old) if old is not None else "")
        if event == "DELETED" or (meta.get("deletionTimestamp") and not
                                  (old is not None and old["metadata"].get("deletionTimestamp"))):
            request = dataclasses.replace(base, event=Event.POD_EVICTED.value)
        elif meta.get("deletionTimestamp"):
            return
        elif event == "ADDED":
            if phase != "Pending" or not self._watches_pending(base):
                self.work.add(Request(base.namespace, base.job_name))  # one OutOfSync per job, deduplicated
                return
            request = dataclasses.replace(base, event=Event.POD_PENDING.value)
        elif phase == "Failed" and before != "Failed":
            request = dataclasses.replace(base, event=Event.POD_FAILED.value, exit_code=_exit_code(pod))
        elif phase == "Succeeded" and before != "Succeeded" and self._task_completed(base):
            request = dataclasses.replace(base, event=Event.TASK_COMPLETED.value)
        elif phase in ("Pending", "Running") and self._task_failed(base):
            request = dataclasses.replace(base, event=Event.TASK_FAILED.value)
        elif phase == "Running" and before != "Running":
            request = dataclasses.replace(base, event=Event.POD_RUNNING.value)
        else:
            request = Request(base.namespace, base.job_name)
        self.work.add(request)

    def _on_podgroup(self, event: str, group: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event != "MODIFIED" or old is None:
            return
        phase = (group.get("status") or {}).get("phase")
        if phase == (old.get("status") or {}).get("phase"):
            return
        owner = names.controller_of(group)
        if owner is None or owner.get("kind") != names.JOB_KIND:
            return
        event_name = Event.JOB_UNKNOWN.value if phase == "Unknown" else Event.OUT_OF_SYNC.value
        self.work.add(Request(group["metadata"].get("namespace", ""), owner["name"], event=event_name,
                              job_version=_version_of(self.opts.store.get(JOBS.name, group["metadata"].get(
                                  "namespace", ""), owner["name"]))))

    def _on_command(self, event: str, command: dict[str, Any], old: dict[str, Any] | None) -> None:
        target = command.get("target") or {}
        if event != "DELETED" and target.get("kind") == names.JOB_KIND and target.get("name"):
            meta = command["metadata"]
            self.work.add(CommandItem(meta.get("namespace", ""), meta["name"], target["name"]))

    def _watches_pending(self, request: Request) -> bool:
        """Whether a PodPending request could matter: the job or the pod's task has a PodPending (or
        `*`) policy with a timeout."""
        job = self.opts.store.get(JOBS.name, request.namespace, request.job_name)
        if job is None:
            return False
        policies = list((job.get("spec") or {}).get("policies") or [])
        for task in build.tasks(job):
            if task["name"] == request.task_name:
                policies += task.get("policies") or []
        return any(isinstance(p, dict) and p.get("timeout") and
                   {Event.POD_PENDING.value, Event.ANY.value} & set(events_of(p)) for p in policies)

    def _task_pods(self, request: Request) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        job = self.opts.store.get(JOBS.name, request.namespace, request.job_name)
        if job is None:
            return None, []
        task = next((t for t in build.tasks(job) if t["name"] == request.task_name), None)
        if task is None:
            return None, []
        pods = [p for p in self.opts.store.owned_by(PODS.name, request.namespace, job["metadata"].get("uid", ""))
                if (p["metadata"].get("annotations") or {}).get(names.TASK_SPEC_KEY) == request.task_name
                and not p["metadata"].get("deletionTimestamp")]  # Volcano's cache drops a pod being deleted
        return task, pods

    def _task_completed(self, request: Request) -> bool:
        """TaskCompleted: every replica of the task succeeded (Volcano's `jobCache.TaskCompleted`)."""
        task, pods = self._task_pods(request)
        replicas = int((task or {}).get("replicas") or 0)
        return replicas > 0 and sum(1 for p in pods if _pod_phase(p) == "Succeeded") >= replicas

    def _task_failed(self, request: Request) -> bool:
        """TaskFailed (Volcano's `jobCache.TaskFailed`): the container restarts (init containers
        included) of the task's Pending/Running pods, summed, exceed the task's `maxRetry`
        (unset or 0 -> 3; -1 -> no limit)."""
        task, pods = self._task_pods(request)
        if task is None or not int(task.get("replicas") or 0):
            return False
        max_retry = int(task.get("maxRetry") or 0)
        if max_retry == -1:
            return False
        max_retry = max_retry or names.DEFAULT_MAX_RETRY
        restarts = 0
        for pod in pods:
            if _pod_phase(pod) not in ("Pending", "Running"):
                continue
            status = pod.get("status") or {}
            for key in ("initContainerStatuses", "containerStatuses"):
                restarts += sum(int((c or {}).get("restartCount") or 0) for c in status.get(key) or [])
        return restarts > max_retry

    # processing ---------------------------------------------------------------------------------------
    def process(self, item: Any) -> None:
        if isinstance(item, CommandItem):
            self._command(item)
            return
        request: Request = item
        store = self.opts.store
        job = store.get(JOBS.name, request.namespace, request.job_name)
        if job is None:
            return
        action, timeout = decide(job, request)
        if timeout > 0 and not request.delayed:
            log.info("job %s: %s -> %s in %.0f s unless it recovers", request.key, request.event, action, timeout)
            self.work.add_after(dataclasses.replace(request, delayed=True), timeout)
            return
        if request.delayed and not self._still_applies(job, request):
            action = Action.SYNC_JOB.value
        self.execute(job, action, request)

    def execute(self, job: dict[str, Any], action: str, request: Request | None = None) -> None:
        step = state.plan(_phase(job), action)
        if action != Action.SYNC_JOB.value:
            self.opts.events.event(job, "Normal", "ExecuteAction", f"Start to execute action {action} ")
        if step.op is Op.SYNC:
            self.sync(job, step)
        else:
            self.kill(job, step, request, action)

    def gave_up(self, item: Any, error: Exception) -> None:
        if isinstance(item, CommandItem):
            return super().gave_up(item, error)
        job = self.opts.store.get(JOBS.name, item.namespace, item.job_name)
        if job is None:
            return None
        self.opts.events.event(job, "Warning", "ExecuteAction",
                               f"Job failed on action {decide(job, item)[0]} for retry limit reached")
        log.warning("job %s: retry limit reached (%s); terminating it", item.key, error)
        try:
            self.execute(job, Action.TERMINATE_JOB.value, item)
        except Exception as exc:  # noqa: BLE001  # reason: best effort, as Volcano's; logged
            log.error("job %s: could not terminate: %s", item.key, exc)
        return None

    def _still_applies(self, job: dict[str, Any], request: Request) -> bool:
        if _version_of(job) != request.job_version:
            return False  # killed or restarted meanwhile
        if request.event in (Event.POD_PENDING.value, Event.POD_FAILED.value):
            pod = self.opts.store.get(PODS.name, request.namespace, request.pod_name)
            want = "Pending" if request.event == Event.POD_PENDING.value else "Failed"
            return pod is not None and _pod_phase(pod) == want and not pod["metadata"].get("deletionTimestamp")
        return True

    def _command(self, item: CommandItem) -> None:
        command = self.opts.store.get(COMMANDS.name, item.namespace, item.name)
        if command is None or not self.opts.api.delete(COMMANDS, item.namespace, item.name):
            return
        action = str(command.get("action") or "")
        job = self.opts.store.get(JOBS.name, item.namespace, item.job_name)
        if job is not None:
            self.opts.events.event(job, "Normal", "CommandIssued", f"Start to execute command {action}, and clean "
                                                                   "it up to make sure executed not more than once.")
        self.work.add(Request(item.namespace, item.job_name, event=Event.COMMAND_ISSUED.value, action=action))

    # sync ---------------------------------------------------------------------------------------------
    def sync(self, job: dict[str, Any], step: state.Step) -> None:
        if job["metadata"].get("deletionTimestamp"):
            return
        store, now = self.opts.store, self.opts.clock.now()
        meta = job["metadata"]
        namespace = meta.get("namespace", "")
        if store.get(QUEUES.name, "", build.queue_of(job)) is None:
            self.opts.events.event(job, "Warning", "QueueNotFound", f"queue {build.queue_of(job)} does not exist; "
                                                                    "the job waits for it")
            self.work.add_after(Request(namespace, meta["name"]), QUEUE_WAIT_S)
            return
        active, unknown = plugins.plugins_for(job, self.plugin_context)
        self._warn_unknown_plugins(job, unknown)
        if _phase(job) == Phase.PENDING:  # not initiated yet (Volcano's isInitiated)
            job = self._initiate(job, active, now)
        else:
            for plugin in active:
                plugin.on_job_update(job)
            self._ensure_podgroup(job)
        group = store.get(PODGROUPS.name, namespace, build.podgroup_name(job))
        if group is not None and group["metadata"].get("deletionTimestamp"):
            group = None  # the previous run's, being deleted: the new one has not been enqueued
        group_phase = ((group or {}).get("status") or {}).get("phase") or ""
        for condition in ((group or {}).get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
                self.opts.events.event(job, "Warning", "PodGroupPending",
                                       f"PodGroup {namespace}:{meta['name']} unschedule,reason: "
                                       f"{condition.get('message', '')}")
        pods = {p["metadata"]["name"]: p for p in store.owned_by(PODS.name, namespace, meta.get("uid", ""))}
        if group is None or group_phase in ("", "Pending"):  # not enqueued: count what exists, create nothing
            self._write_status(job, self._status_from(job, list(pods.values())), step, now)
            return
        counted: list[dict[str, Any]] = []
        to_create: list[dict[str, Any]] = []
        for task in build.tasks(job):
            for index in range(int(task.get("replicas") or 0)):
                name = build.pod_name(job, task["name"], index)
                pod = pods.pop(name, None)
                if pod is None:
                    new = build.pod_for(job, task, index, default_scheduler=self.opts.settings.scheduler_names[0])
                    for plugin in active:
                        plugin.on_pod_create(new, job, task, index)
                    to_create.append(new)
                else:
                    counted.append(pod)
        created, errors = self._create_pods(to_create)
        counted += created
        deleted = 0
        for extra in pods.values():  # beyond the replicas (scaled down), or of a task no longer in the spec
            if extra["metadata"].get("deletionTimestamp"):
                counted.append(extra)
                continue
            deleted += self._delete_pod(namespace, extra, counted, errors)
        if errors:
            self.opts.events.event(job, "Warning", "FailedCreatePod" if to_create else "FailedDeletePod",
                                   "; ".join(errors)[:1000])
            raise JobError(f"job {namespace}/{meta['name']}: {len(errors)} pod operations failed")
        status = self._status_from(job, counted, extra_terminating=deleted)
        self._write_status(job, status, step, now)

    def _initiate(self, job: dict[str, Any], active: list[plugins.Plugin], now: float) -> dict[str, Any]:
        status = job.setdefault("status", {})
        if not (status.get("state") or {}).get("phase"):
            status["state"] = {"phase": Phase.PENDING.value, "lastTransitionTime": rfc3339(now)}
            status["minAvailable"] = build.min_available(job)
            status.setdefault("conditions", []).append({"status": Phase.PENDING.value,
                                                        "lastTransitionTime": rfc3339(now)})
            job = self.opts.api.replace(JOBS, job, subresource="status")
        job.setdefault("status", {}).setdefault("controlledResources", {})
        for plugin in active:
            plugin.on_job_add(job)
        self._ensure_podgroup(job)
        return job

    def _ensure_podgroup(self, job: dict[str, Any]) -> None:
        store, api = self.opts.store, self.opts.api
        namespace = job["metadata"].get("namespace", "")
        values = {str(pc["metadata"]["name"]): int(pc.get("value") or 0) for pc in store.list(PRIORITY_CLASSES.name)}
        current = store.get(PODGROUPS.name, namespace, build.podgroup_name(job))
        if current is None or current["metadata"].get("deletionTimestamp"):
            try:
                api.create(PODGROUPS, build.podgroup_for(job, values))
            except APIConflict:
                pass
            return
        changes = build.podgroup_spec_changes(current, job, values)
        if changes:
            api.patch(PODGROUPS, namespace, current["metadata"]["name"], {"spec": changes})

    def _create_pods(self, pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
        if not pods:
            return [], []
        api = self.opts.api

        def create(pod: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
            try:
                return api.create(PODS, pod), ""
            except APIConflict:
                return pod, ""  # already there: an earlier try went through
            except APIError as exc:
                return None, f"create {pod['metadata']['name']}: {exc}"

        with ThreadPoolExecutor(max_workers=min(CREATE_WORKERS, len(pods)), thread_name_prefix="create-pod") as pool:
            results = list(pool.map(create, pods))
        return [p for p, _ in results if p is not None], [e for _, e in results if e]

    def _delete_pod(self, namespace: str, pod: dict[str, Any], counted: list[dict[str, Any]],
                    errors: list[str]) -> int:
        """Delete one pod: 1 when the request went through; else its error is kept and the pod still counts."""
        try:
            self.opts.api.delete(PODS, namespace, pod["metadata"]["name"])
            return 1
        except APIError as exc:
            errors.append(f"delete {pod['metadata']['name']}: {exc}")
            counted.append(pod)
            return 0

    # kill ---------------------------------------------------------------------------------------------
    def kill(self, job: dict[str, Any], step: state.Step, request: Request | None, action: str = "") -> None:
        if job["metadata"].get("deletionTimestamp"):
            return
        store, api, now = self.opts.store, self.opts.api, self.opts.clock.now()
        meta = job["metadata"]
        namespace = meta.get("namespace", "")
        targeted = step.target and request is not None and bool(request.task_name or request.pod_name)
        last_retry = int((job.get("status") or {}).get("retryCount") or 0) >= build.max_retry(job) - 1
        retain = state.RETAIN_SOFT if last_retry else step.retain
        counted: list[dict[str, Any]] = []
        killed = 0
        errors: list[str] = []
        for pod in store.owned_by(PODS.name, namespace, meta.get("uid", "")):
            if pod["metadata"].get("deletionTimestamp"):
                counted.append(pod)
                continue
            if targeted and not _is_target(pod, request, action):
                counted.append(pod)
                continue
            if _pod_phase(pod) in retain:
                counted.append(pod)
                continue
            killed += self._delete_pod(namespace, pod, counted, errors)
        if errors:
            self.opts.events.event(job, "Warning", "FailedDeletePod", "; ".join(errors)[:1000])
            raise JobError(f"job {namespace}/{meta['name']}: could not delete {len(errors)} pods")
        status = self._status_from(job, counted, extra_terminating=killed)
        status["version"] = int(status.get("version") or 0) + 1
        created = parse_rfc3339(meta.get("creationTimestamp"))
        if created is not None:
            status["runningDuration"] = go_duration(now - created)
        if not targeted:
            job = {**job, "status": status}
            active, _ = plugins.plugins_for(job, self.plugin_context)
            for plugin in active:
                plugin.on_job_delete(job)
            status = job["status"]
        self._write_status(job, status, step, now, force=True)
        if not targeted:
            try:
                api.delete(PODGROUPS, namespace, build.podgroup_name(job))
            except APINotFound:
                pass

    # status -------------------------------------------------------------------------------------------
    def _status_from(self, job: dict[str, Any], pods: list[dict[str, Any]] | None, *,
                     extra_terminating: int = 0) -> dict[str, Any]:
        """The job's status with counters from `pods` (None: keep the counters as they are)."""
        old = job.get("status") or {}
        out: dict[str, Any] = {k: v for k, v in old.items()}
        out["minAvailable"] = build.min_available(job)
        if pods is None:
            return out
        counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": extra_terminating,
                  "unknown": 0}
        per_task: dict[str, dict[str, int]] = {}
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                counts["terminating"] += 1
                continue
            phase = _pod_phase(pod) or "Pending"
            field = {"Pending": "pending", "Running": "running", "Succeeded": "succeeded",
                     "Failed": "failed"}.get(phase, "unknown")
            counts[field] += 1
            task = (pod["metadata"].get("annotations") or {}).get(names.TASK_SPEC_KEY)
            if task:
                phases = per_task.setdefault(task, {})
                key = phase if field != "unknown" else "Unknown"
                phases[key] = phases.get(key, 0) + 1
        out.update(counts)
        out["taskStatusCount"] = {task: {"phase": phases} for task, phases in sorted(per_task.items())}
        return out

    def _write_status(self, job: dict[str, Any], status: dict[str, Any], step: state.Step, now: float, *,
                      force: bool = False) -> None:
        facts = build.facts(job)
        counted = state.Status(phase=Phase(_phase({"status": status})), pending=int(status.get("pending") or 0),
                               running=int(status.get("running") or 0), succeeded=int(status.get("succeeded") or 0),
                               failed=int(status.get("failed") or 0),
                               terminating=int(status.get("terminating") or 0),
                               unknown=int(status.get("unknown") or 0), retry_count=int(status.get("retryCount") or 0),
                               task_succeeded={t: int((c.get("phase") or {}).get("Succeeded", 0))
                                               for t, c in (status.get("taskStatusCount") or {}).items()})
        changed = step.update(facts, counted) if step.update is not None else False
        status["retryCount"] = counted.retry_count
        if changed:
            status["state"] = {"phase": counted.phase.value, "lastTransitionTime": rfc3339(now)}
            status["conditions"] = list(status.get("conditions") or []) + [
                {"status": counted.phase.value, "lastTransitionTime": rfc3339(now)}]
        if not force and status == (job.get("status") or {}):
            return
        body = {**job, "status": status}
        written = self.opts.api.replace(JOBS, body, subresource="status")
        if _phase(written) != _phase(job):  # the store's handler queues the job again, as an informer would
            meta = written["metadata"]
            log.info("job %s/%s: %s -> %s", meta.get("namespace"), meta["name"], _phase(job), _phase(written))

    def _warn_unknown_plugins(self, job: dict[str, Any], unknown: list[str]) -> None:
        for name in unknown:
            key = (str(job["metadata"].get("uid")), name)
            if key not in self._warned_plugins:
                self._warned_plugins.add(key)
                self.opts.events.event(job, "Warning", "PluginError", f"plugin {name!r} is not supported by this "
                                                                      "controller manager; ignored")


def _phase(job: dict[str, Any]) -> str:
    return str((((job.get("status") or {}).get("state") or {}).get("phase")) or Phase.PENDING.value)


def _version_of(job: dict[str, Any] | None) -> int:
    return int(((job or {}).get("status") or {}).get("version") or 0)


def _pod_phase(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")


def _exit_code(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if statuses:
        terminated = ((statuses[0] or {}).get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return 0


def _is_target(pod: dict[str, Any], request: Request | None, action: str) -> bool:
    """RestartPod: the request's pod; RestartTask and RestartPartition: every pod of the request's task."""
    if request is None:
        return True
    if action == Action.RESTART_POD.value and request.pod_name:
        pod_name: str = pod["metadata"]["name"]
        return request.pod_name == pod_name
    return (pod["metadata"].get("annotations") or {}).get(names.TASK_SPEC_KEY) == request.task_name
