"""Which action a request leads to: Volcano's `applyPolicies`, with policy timeouts.

A request names a job and carries what happened (an event, a pod's exit code, the job version the
pod was made for) or an explicit action (from a Command). In order:

1. an explicit action wins;
2. internal events (OutOfSync, CommandIssued, PodRunning) -> SyncJob;
3. a request from another incarnation of the job (uid) or an older job version (a pod of a run
   already killed) -> SyncJob;
4. the task's policies (when the request names a task), then the job's: the first policy whose
   events contain the event (or `*`) or whose exitCode equals the request's gives its action;
   a PodPending request matches only a policy with a timeout (a pod is pending at first; only
   "pending for too long" means something);
5. otherwise SyncJob.

The matched policy's `timeout` (a Go duration, `10m`) comes back with the action: the controller
holds the request that long and then carries the action out only if the cause still holds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cluster_adapter.controllers.job.state import Action, Event

INTERNAL = frozenset({Event.OUT_OF_SYNC.value, Event.COMMAND_ISSUED.value, Event.POD_RUNNING.value})
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Request:
    namespace: str
    job_name: str
    job_uid: str = ""
    task_name: str = ""
    pod_name: str = ""
    event: str = Event.OUT_OF_SYNC.value
    exit_code: int = 0
    action: str = ""
    job_version: int = 0
    delayed: bool = False  # held for a policy timeout already; carry it out now

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.job_name}"


def decide(job: dict[str, Any], request: Request) -> tuple[str, float]:
    """(action, timeout in seconds; 0 = at once)."""
    if request.action:
        return request.action, 0.0
    if request.event in INTERNAL:
        return Action.SYNC_JOB.value, 0.0
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    if request.job_uid and request.job_uid != meta.get("uid"):
        return Action.SYNC_JOB.value, 0.0
    if request.job_version < int(status.get("version") or 0):
        return Action.SYNC_JOB.value, 0.0
    if request.task_name:
        for task in spec.get("tasks") or []:
            if isinstance(task, dict) and task.get("name") == request.task_name:
                found = _match(task.get("policies") or [], request)
                if found is not None:
                    return found
                break
    found = _match(spec.get("policies") or [], request)
    return found if found is not None else (Action.SYNC_JOB.value, 0.0)


def events_of(policy: dict[str, Any]) -> list[str]:
    events = [str(e) for e in policy.get("events") or []]
    if policy.get("event"):
        events.append(str(policy["event"]))
    return events


def parse_duration(text: Any) -> float:
    """A Go duration (`1h30m`, `90s`, `500ms`) in seconds; 0 for none or nonsense."""
    if isinstance(text, (int, float)):
        return float(text)
    if not isinstance(text, str) or not text:
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip().lstrip("+"):
        return 0.0
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _match(policies: list[Any], request: Request) -> tuple[str, float] | None:
    for policy in policies:
        if not isinstance(policy, dict):
            continue
        timeout = parse_duration(policy.get("timeout"))
        events = events_of(policy)
        if events and request.event and (request.event in events or Event.ANY.value in events):
            if request.event == Event.POD_PENDING.value and timeout <= 0:
                continue
            return str(policy.get("action") or Action.SYNC_JOB.value), timeout
        code = policy.get("exitCode")
        if code is not None and int(code) == request.exit_code:
            return str(policy.get("action") or Action.SYNC_JOB.value), timeout
    return None
