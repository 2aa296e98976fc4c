"""The extender call-out: Volcano's HTTP scheduler-extender protocol as one typed, timed-out, retried client.

A rule module reaches an external server through the DSL's `extender(verb, subject, other)` built-in,
which the lowering binds per module to a client configured from that module's arguments
(`extender.urlPrefix`, `extender.httpTimeout`, and vpolicy's `extender.retries`). Each call POSTs JSON to
`<urlPrefix>/<verb>` and answers a `Reply` (the DSL's `reply` object): `ok` is false when the server
could not be reached in time, answered other than 200, or with something that is not the verb's JSON,
and `error` says which; the rule module then applies Volcano's `ignorable` failure policy. The request
body depends on what is passed: a task and a node (predicate), a task and a list of nodes
(prioritize), a task and a list of tasks (preemptable, reclaimable: `evictor` and `evictees`), a job
(jobEnqueueable, jobReady), a queue (queueOverused), the cluster (onSessionOpen: Volcano's
OnSessionOpenRequest, `Jobs`, `Nodes`, `Queues`, `NamespaceInfo`, `RevocableNodes` keyed as in Go), or
nothing (onSessionClose: `{}`). Objects are sent as Volcano's TaskInfo, NodeInfo, JobInfo and QueueInfo
encode to JSON (Go field names, a TaskStatus as its number, a Resource as `MilliCPU`, `Memory`,
`ScalarResources`, `MaxTaskNum`), with the Kubernetes objects inside them reduced to metadata and the
scheduling fields vpolicy reads; victims come back as tasks and are matched by `UID`.

Answers are remembered for the objects they were asked about while those objects live (one session),
so a rule and its reason clause, or a node score asked node by node, make one request. This module
decides nothing about scheduling; `policies/volcano/extender.vpol` does.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from vpolicy.model import durations
from vpolicy.model.resources import Resources

DEFAULT_TIMEOUT_S = 1.0  # Volcano's default extender.httpTimeout
RETRY_PAUSE_S = 0.05
_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Reply:
    """What one extender call answered; the DSL's `reply` object (attributes as named here)."""

    ok: bool
    error: str = ""
    detail: str = ""  # predicate's `status` (an error message; empty: the node fits), prioritize's errorMessage
    code: int = 0  # predicate's status code (Volcano's api.Status codes)
    status: int = 0  # preemptable/reclaimable/jobEnqueueable vote: 1 permit, -1 reject, 0 abstain
    overused: bool = False
    ready: bool = False
    scores: Mapping[str, float] = field(default_factory=dict)
    victims: list[str] = field(default_factory=list)  # UIDs of the victims chosen


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    url_prefix: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = 0

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> "ExtenderConfig":
        """Volcano's parseExtenderConfig: an httpTimeout that is no Go duration keeps the 1 s default."""
        timeout = durations.go_seconds(str(arguments.get("extender.httpTimeout", "") or ""))
        retries = arguments.get("extender.retries", 0)
        return cls(url_prefix=str(arguments.get("extender.urlPrefix", "") or ""),
                   timeout_s=timeout if timeout is not None and timeout > 0 else DEFAULT_TIMEOUT_S,
                   retries=retries if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0 else 0)


class ExtenderClient:
    """POSTs to one extender; retries a call that could not connect, timed out or got a 5xx."""

    def __init__(self, config: ExtenderConfig):
        self.config = config
        self._cache: dict[tuple[Any, ...], tuple[tuple[Any, ...], Reply]] = {}
        self.requests = 0  # calls actually sent (tests and stats read it)

    def __call__(self, verb: str, subject: Any, other: Any) -> Reply:
        key, keep = _cache_key(verb, subject, other)
        hit = self._cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], keep)):
            return hit[1]
        reply = self._send(verb, _payload(subject, other), kind=_kind(subject, other))
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = (keep, reply)
        return reply

    def _send(self, verb: str, body: Mapping[str, Any], *, kind: str) -> Reply:
        # imported here: only a conf with an extender calls one, and urllib.request (http, ssl, email) costs
        # every other command 0.03 s of start-up
        import urllib.error
        import urllib.request

        url = self.config.url_prefix.rstrip("/") + "/" + verb
        data = json.dumps(body).encode()
        error = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                time.sleep(RETRY_PAUSE_S)
            self.requests += 1
            request = urllib.request.Request(url, data=data, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
                    text = response.read()
            except urllib.error.HTTPError as exc:
                error = f"failed {verb} with extender at URL {url}, code {exc.code}"
                if exc.code < 500:
                    return Reply(ok=False, error=error)
                continue
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                error = f"failed {verb} with extender at URL {url}: {getattr(exc, 'reason', exc)}"
                continue
            return _decode(kind, text, verb)
        return Reply(ok=False, error=error)


def _kind(subject: Any, other: Any) -> str:
    if subject is None:
        return "session"
    if hasattr(subject, "queues") and hasattr(subject, "nodes"):
        return "open"
    if hasattr(subject, "min_available"):
        return "job"
    if hasattr(subject, "weight") and hasattr(subject, "jobs"):
        return "queue"
    if isinstance(other, list):
        return "prioritize" if other and hasattr(other[0], "allocatable") else "victims"
    return "predicate"


def _payload(subject: Any, other: Any) -> dict[str, Any]:
    kind = _kind(subject, other)
    if kind == "session":
        return {}
    if kind == "open":
        return _session_open(subject)
    if kind == "job":
        return {"job": _job(subject)}
    if kind == "queue":
        return {"queue": _queue(subject)}
    if kind == "prioritize":
        return {"task": _task(subject), "nodes": [_node(n) for n in other]}
    if kind == "victims":
        return {"evictor": _task(subject), "evictees": [_task(t) for t in other]}
    return {"task": _task(subject), "node": _node(other)}


def _cache_key(verb: str, subject: Any, other: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A key by identity (the objects of one session) and the objects to check it against."""
    items = tuple(other) if isinstance(other, list) else (other,)
    keep = (subject, *items)
    return (verb, id(subject), *(id(x) for x in items)), keep


def _decode(kind: str, text: bytes, verb: str) -> Reply:
    if kind in ("session", "open"):
        return Reply(ok=True)
    try:
        body = json.loads(text or b"null")
    except ValueError:
        return Reply(ok=False, error=f"{verb}: the extender's answer is not JSON")
    if not isinstance(body, dict):
        return Reply(ok=False, error=f"{verb}: the extender's answer is not a JSON object")
    try:
        if kind == "predicate":
            return Reply(ok=True, detail=str(body.get("status") or ""), code=int(body.get("code") or 0))
        if kind == "prioritize":
            scores = body.get("nodeScore")
            return Reply(ok=True, detail=str(body.get("errorMessage") or ""),
                         scores={str(k): float(v) for k, v in (scores or {}).items()})
        if kind == "victims":
            victims = [str(v.get("UID", "")) for v in body.get("victims") or () if isinstance(v, dict)]
            return Reply(ok=True, status=int(body.get("status") or 0), victims=victims)
        if kind == "queue":
            return Reply(ok=True, overused=bool(body.get("overused")))
        # a job: jobEnqueueable answers an int status, jobReady a bool
        status = body.get("status")
        if isinstance(status, bool):
            return Reply(ok=True, ready=status, status=1 if status else 0)
        return Reply(ok=True, status=int(status or 0))
    except (TypeError, ValueError, AttributeError):
        return Reply(ok=False, error=f"{verb}: the extender's answer does not have the verb's fields")


# Volcano's TaskStatus values (api/types.go: 1 << iota from Pending); Go encodes the type as its number.
TASK_STATUS = {name: 1 << i for i, name in enumerate(
    ("Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing", "Succeeded", "Failed",
     "Unknown"))}
REVOCABLE_ZONE_LABEL = "volcano.sh/revocable-zone"


def _resources(r: Resources) -> dict[str, Any]:
    """A Volcano api.Resource as Go encodes it: millicores, bytes, extended resources in milli-units (as
    vpolicy keeps them), and the pod count as MaxTaskNum."""
    scalars = {name: float(v) for name, v in r.items() if name not in ("cpu", "memory", "pods")}
    return {"MilliCPU": float(r.get("cpu", 0)), "Memory": float(r.get("memory", 0)),
            "ScalarResources": scalars or None, "MaxTaskNum": int(r.get("pods", 0))}


def _task(t: Any) -> dict[str, Any]:
    pod = t.pod
    status = t.status.value
    return {"UID": t.uid, "Job": t.job.key if t.job is not None else "", "Name": t.name, "Namespace": t.namespace,
            "TaskRole": t.role, "Resreq": _resources(t.resreq), "InitResreq": _resources(t.resreq),
            "NodeName": t.node_name, "Status": TASK_STATUS.get(status, TASK_STATUS["Unknown"]),
            "Priority": t.priority, "Preemptable": t.preemptable, "BestEffort": t.best_effort,
            "RevocableZone": t.revocable_zone,
            "Pod": {"metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid,
                                 "labels": dict(pod.labels), "annotations": dict(pod.annotations)},
                    "spec": {"nodeName": pod.node_name, "schedulerName": pod.scheduler_name,
                             "priority": pod.priority, "priorityClassName": pod.priority_class_name,
                             "nodeSelector": dict(pod.node_selector)},
                    "status": {"phase": pod.phase}}}


def _node(n: Any) -> dict[str, Any]:
    return {"Name": n.name, "RevocableZone": n.labels.get(REVOCABLE_ZONE_LABEL, ""),
            "Allocatable": _resources(n.allocatable), "Capacity": _resources(n.capacity),
            "Used": _resources(n.used), "Idle": _resources(n.idle), "Releasing": _resources(n.releasing),
            "Pipelined": _resources(n.pipelined),
            "Node": {"metadata": {"name": n.name, "labels": dict(n.labels), "annotations": dict(n.annotations)},
                     "spec": {"unschedulable": n.unschedulable}}}


def _job(j: Any) -> dict[str, Any]:
    return {"UID": j.key, "PgUID": j.uid, "Name": j.name, "Namespace": j.namespace, "Queue": j.queue.name,
            "Priority": j.priority, "MinAvailable": j.min_available, "Preemptable": j.preemptable,
            "Allocated": _resources(j.allocated), "Tasks": {t.uid: _task(t) for t in j.tasks}}


def _queue(q: Any) -> dict[str, Any]:
    return {"UID": q.name, "Name": q.name, "Weight": q.weight, "Reclaimable": q.reclaimable,
            "Allocated": _resources(q.allocated)}


def _session_open(cluster: Any) -> dict[str, Any]:
    """Volcano's OnSessionOpenRequest (its fields carry no JSON tags: Go's names)."""
    nodes = {n.name: _node(n) for n in cluster.nodes}
    return {"Jobs": {j.key: _job(j) for j in cluster.jobs},
            "Nodes": nodes,
            "Queues": {q.name: _queue(q) for q in cluster.queues},
            "NamespaceInfo": {ns: {"Name": ns} for ns in sorted({j.namespace for j in cluster.jobs})},
            "RevocableNodes": {name: n for name, n in nodes.items() if n["RevocableZone"]},
            "NodeList": None}
