"""Volcano's job webhooks: defaulting (jobs/mutate) and validation (jobs/validate).

Defaults (`default_job`): queue `default`, schedulerName, maxRetry 3, task names `default<i>`, task
minAvailable = replicas, task maxRetry 3, job minAvailable (when unset or 0) = the sum of the tasks'
minAvailable,
`dnsPolicy: ClusterFirstWithHostNet` for hostNetwork pods, and the svc (and for mpi, ssh) plugin
that the tensorflow / mpi / pytorch / ray plugins need.

Validation (`validate_job`): at least one task; replicas >= 0; 0 <= task minAvailable <= replicas;
unique, DNS-label task names; 0 <= job minAvailable <= total replicas; maxRetry,
ttlSecondsAfterFinished >= 0; 1 <= minSuccess <= total replicas; lifecycle policies (event xor
exitCode, exitCode != 0, events and actions a user may name, no duplicate across policies, `*` the
only event); known plugins; volumes (mountPath, exactly one of volumeClaim and volumeClaimName, no
duplicate mount paths); dependsOn naming existing tasks without a
cycle; the queue exists, is Open, is not `root` and has no children. On update, only minAvailable,
task replicas/minAvailable and priorityClassName may change (and the volumeClaimName of a volume
with a volumeClaim, which the job controller fills in).
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, cast

from vpolicy.admission.common import Queues, Violation, integer

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
DEFAULT_MAX_RETRY = 3
KNOWN_PLUGINS = frozenset({"env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"})
NEEDS_SVC = frozenset({"tensorflow", "mpi", "pytorch", "ray"})
# The events and actions a user may name in a lifecycle policy (Volcano's policyEventMap /
# policyActionMap entries marked true). The controller's internal events (OutOfSync, CommandIssued,
# PodRunning) and actions (SyncJob, EnqueueJob) exist but are refused here.
EVENTS = frozenset({"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed",
                    "JobUpdated"})
ACTIONS = frozenset({"AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob",
                     "CompleteJob", "ResumeJob"})
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def default_job(job: Mapping[str, Any], *, scheduler_name: str = "volcano") -> dict[str, Any]:
    out = copy.deepcopy(dict(job))
    spec = out.setdefault("spec", {})
    if not spec.get("queue"):
        spec["queue"] = DEFAULT_QUEUE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if not spec.get("maxRetry"):
        spec["maxRetry"] = DEFAULT_MAX_RETRY
    tasks = spec.get("tasks") or []
    for index, task in enumerate(tasks):
        if not isinstance(task, dict):
            continue
        if not task.get("name"):
            task["name"] = f"default{index}"
        if task.get("minAvailable") is None:
            task["minAvailable"] = integer(task.get("replicas")) or 0
        if not task.get("maxRetry"):
            task["maxRetry"] = DEFAULT_MAX_RETRY
        pod_spec = (task.get("template") or {}).get("spec")
        if isinstance(pod_spec, dict) and pod_spec.get("hostNetwork") and not pod_spec.get("dnsPolicy"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if spec.get("minAvailable") is None or integer(spec.get("minAvailable")) == 0:
        # Volcano's patchDefaultMinAvailable: an unset *or zero* minAvailable becomes the sum
        spec["minAvailable"] = sum(integer(t.get("minAvailable")) or 0 for t in tasks if isinstance(t, dict))
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        if NEEDS_SVC & set(plugins) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
    return out


def validate_job(job: Mapping[str, Any], *, queues: Queues | None = None,
                 old: Mapping[str, Any] | None = None) -> list[Violation]:
    if old is not None:
        return _validate_update(job, old)
    out: list[Violation] = []
    spec: Mapping[str, Any] = (cast(Mapping[str, Any], job.get("spec")) if isinstance(job.get("spec"), Mapping)
                               else {})
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    if not tasks:
        out.append(Violation("admission.job-no-tasks", "spec.tasks", "no task specified in job spec"))
    for name in ("minAvailable", "maxRetry", "ttlSecondsAfterFinished"):
        value = integer(spec.get(name)) if spec.get(name) is not None else None
        if spec.get(name) is not None and (value is None or value < 0):
            out.append(Violation("admission.job-negative", f"spec.{name}", f"'{name}' must be >= 0"))
    total = 0
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        where = f"spec.tasks[{index}]"
        name = str(task.get("name") or f"default{index}")
        replicas = integer(task.get("replicas")) if task.get("replicas") is not None else 0
        if replicas is None or replicas < 0:
            out.append(Violation("admission.task-replicas", f"{where}.replicas",
                                 f"'replicas' must be >= 0 in task {name}"))
            replicas = 0
        total += replicas
        if task.get("minAvailable") is not None:
            minimum = integer(task.get("minAvailable"))
            if minimum is None or minimum < 0:
                out.append(Violation("admission.task-min-available", f"{where}.minAvailable",
                                     f"'minAvailable' must be >= 0 in task {name}"))
            elif minimum > replicas:
                out.append(Violation("admission.task-min-available", f"{where}.minAvailable",
                                     f"'minAvailable' ({minimum}) is greater than 'replicas' ({replicas}) "
                                     f"in task {name}"))
        if task.get("name") and not _DNS_LABEL.match(name):
            out.append(Violation("admission.task-name", f"{where}.name",
                                 f"task name {name!r} must be a DNS-1123 label (lower case letters, digits, '-')"))
        if name in seen:
            out.append(Violation("admission.task-name-duplicate", f"{where}.name", f"duplicated task name {name}"))
        seen.add(name)
        out += _policies(task.get("policies"), f"{where}.policies")
    job_min = integer(spec.get("minAvailable")) if spec.get("minAvailable") is not None else None
    if tasks and job_min is not None and job_min > total:
        out.append(Violation("admission.job-min-available", "spec.minAvailable",
                             f"job 'minAvailable' ({job_min}) should not be greater than total replicas "
                             f"in tasks ({total})"))
    if spec.get("minSuccess") is not None:
        min_success = integer(spec.get("minSuccess"))
        if min_success is None or min_success < 1:
            out.append(Violation("admission.job-min-success", "spec.minSuccess", "'minSuccess' must be >= 1"))
        elif tasks and min_success > total:
            out.append(Violation("admission.job-min-success", "spec.minSuccess",
                                 f"'minSuccess' ({min_success}) should not be greater than total replicas ({total})"))
    out += _policies(spec.get("policies"), "spec.policies")
    for name in sorted((spec.get("plugins") or {}) if isinstance(spec.get("plugins"), Mapping) else {}):
        if name not in KNOWN_PLUGINS:
            out.append(Violation("admission.job-plugin", f"spec.plugins.{name}",
                                 f"unable to find job plugin: {name} (known: {', '.join(sorted(KNOWN_PLUGINS))})"))
    out += _volumes(spec.get("volumes"))
    out += _depends_on(tasks)
    if queues is not None:
        out += _queue(str(spec.get("queue") or DEFAULT_QUEUE), queues)
    return out


def _policies(policies: Any, where: str) -> list[Violation]:
    out: list[Violation] = []
    if not policies:
        return out
    events_seen: set[str] = set()
    codes_seen: set[int] = set()
    for index, policy in enumerate(p for p in policies if isinstance(p, Mapping)):
        at = f"{where}[{index}]"
        # one policy naming an event twice (in `event` and `events`) is fine: Volcano dedupes them
        events = list(dict.fromkeys([str(e) for e in policy.get("events") or []]
                                    + ([str(policy["event"])] if policy.get("event") else [])))
        code = policy.get("exitCode")
        if events and code is not None:
            out.append(Violation("admission.policy-event-and-exit-code", at,
                                 "must not specify event and exitCode simultaneously"))
        elif not events and code is None:
            out.append(Violation("admission.policy-no-trigger", at, "either event or exitCode should be specified"))
        if code is not None:
            value = integer(code)
            if value == 0:
                out.append(Violation("admission.policy-exit-code", f"{at}.exitCode", "0 is not a valid error code"))
            elif value is not None and value in codes_seen:
                out.append(Violation("admission.policy-duplicate", f"{at}.exitCode", f"duplicate exitCode {value}"))
            elif value is not None:
                codes_seen.add(value)
        for event in events:
            if event not in EVENTS:
                out.append(Violation("admission.policy-event", f"{at}.event", f"invalid policy event {event!r}"))
            elif event in events_seen:
                out.append(Violation("admission.policy-duplicate", f"{at}.event", f"duplicate event {event}"))
            events_seen.add(event)
        action = policy.get("action")
        if action not in ACTIONS:
            out.append(Violation("admission.policy-action", f"{at}.action", f"invalid policy action {action!r}"))
    # Volcano counts distinct events, not policies: `*` beside exitCode policies is fine, `*` beside
    # another event (in the same policy or another) is not
    if "*" in events_seen and len(events_seen) > 1:
        out.append(Violation("admission.policy-any-not-alone", where,
                             "if there's * here, no other policy should be here"))
    return out


def _volumes(volumes: Any) -> list[Violation]:
    out: list[Violation] = []
    paths: set[str] = set()
    for index, volume in enumerate(v for v in volumes or [] if isinstance(v, Mapping)):
        at = f"spec.volumes[{index}]"
        path = str(volume.get("mountPath") or "")
        if not path:
            out.append(Violation("admission.volume-mount-path", f"{at}.mountPath", "mountPath is required"))
        elif path in paths:
            out.append(Violation("admission.volume-mount-path", f"{at}.mountPath", f"duplicated mountPath: {path}"))
        paths.add(path)
        if not volume.get("volumeClaimName") and volume.get("volumeClaim") is None:
            out.append(Violation("admission.volume-claim", at,
                                 "either volumeClaim or volumeClaimName must be specified"))
        elif volume.get("volumeClaimName") and volume.get("volumeClaim") is not None:
            out.append(Violation("admission.volume-claim", at,
                                 "conflict: to use an existing PVC specify only volumeClaimName; to create a new "
                                 "PVC specify only volumeClaim"))
    return out


def _depends_on(tasks: list[Mapping[str, Any]]) -> list[Violation]:
    names = [str(t.get("name") or f"default{i}") for i, t in enumerate(tasks)]
    graph: dict[str, list[str]] = {}
    out: list[Violation] = []
    for index, task in enumerate(tasks):
        deps = (task.get("dependsOn") or {}).get("name") or [] if isinstance(task.get("dependsOn"), Mapping) else []
        for dep in deps:
            if dep not in names:
                out.append(Violation("admission.task-depends-on", f"spec.tasks[{index}].dependsOn",
                                     f"task {names[index]} depends on {dep!r}, which is not a task of this job"))
        graph[names[index]] = [str(d) for d in deps if d in names]
    state: dict[str, int] = {}

    def cyclic(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1 or (state.get(nxt) is None and cyclic(nxt)):
                return True
        state[node] = 2
        return False

    if any(state.get(n) is None and cyclic(n) for n in names):
        out.append(Violation("admission.task-depends-on-cycle", "spec.tasks", "dependsOn of the tasks forms a cycle"))
    return out


def _queue(name: str, queues: Queues) -> list[Violation]:
    queue = queues.get(name)
    if queue is None:
        return [Violation("admission.job-queue-not-found", "spec.queue", f"unable to find job queue: {name}")]
    out: list[Violation] = []
    state = ((queue.get("status") or {}).get("state") or "Open")
    if state != "Open":
        out.append(Violation("admission.job-queue-not-open", "spec.queue",
                             f"can only submit job to queue with state `Open`, queue `{name}` status is `{state}`"))
    if name == ROOT_QUEUE:
        out.append(Violation("admission.job-queue-root", "spec.queue", "can not submit job to the root queue"))
    elif any(((q.get("spec") or {}).get("parent")) == name for q in queues.values()):
        out.append(Violation("admission.job-queue-not-leaf", "spec.queue",
                             f"can only submit job to a leaf queue; queue `{name}` has child queues"))
    return out


def _validate_update(job: Mapping[str, Any], old: Mapping[str, Any]) -> list[Violation]:
    """Updates may only change minAvailable, tasks' replicas and minAvailable, and priorityClassName."""
    out: list[Violation] = []
    new_spec, old_spec = copy.deepcopy(dict(job.get("spec") or {})), copy.deepcopy(dict(old.get("spec") or {}))
    new_tasks, old_tasks = new_spec.get("tasks") or [], old_spec.get("tasks") or []
    if len(new_tasks) != len(old_tasks):
        return [Violation("admission.job-update", "spec.tasks", "job updates may not add or remove tasks")]
    total = 0
    for index, (new, previous) in enumerate(zip(new_tasks, old_tasks)):
        if isinstance(new, dict) and isinstance(previous, dict):
            replicas = integer(new.get("replicas")) or 0
            minimum = integer(new.get("minAvailable")) if new.get("minAvailable") is not None else replicas
            if replicas < 0 or minimum is None or minimum < 0 or minimum > replicas:
                out.append(Violation("admission.task-min-available", f"spec.tasks[{index}]",
                                     "need 0 <= minAvailable <= replicas"))
            total += replicas
            for key in ("replicas", "minAvailable"):
                new.pop(key, None)
                previous.pop(key, None)
    job_min = integer(new_spec.get("minAvailable"))
    if job_min is not None and (job_min < 0 or job_min > total):
        out.append(Violation("admission.job-min-available", "spec.minAvailable",
                             f"job 'minAvailable' must be between 0 and the total replicas ({total})"))
    for key in ("minAvailable", "priorityClassName"):
        new_spec.pop(key, None)
        old_spec.pop(key, None)
    for spec in (new_spec, old_spec):  # the job controller names the claims it creates (volcano: validateJobUpdate)
        for volume in spec.get("volumes") or []:
            if isinstance(volume, dict) and volume.get("volumeClaim") is not None:
                volume.pop("volumeClaimName", None)
    if new_spec != old_spec:
        changed = sorted(k for k in set(new_spec) | set(old_spec) if new_spec.get(k) != old_spec.get(k))
        out.append(Violation("admission.job-update", "spec",
                             "job updates may not change fields other than `minAvailable`, `tasks[*].replicas`, "
                             f"`tasks[*].minAvailable` and `priorityClassName` (changed: {', '.join(changed)})"))
    return out
