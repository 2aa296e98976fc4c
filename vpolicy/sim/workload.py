"""Workload files: which jobs arrive when, what they ask for, how long they run, and queue events.

`load_workload(path)` reads the YAML format of docs/simulate.md strictly: every unknown key, wrong
type, bad duration or quantity is a `workload.*` diagnostic with its `file:line:col` (and a "did you
mean"), and all of them are raised together as one `PolicyError`. `check_against(workload, snapshot)`
then checks what only the cluster can tell (queues, priority classes, names already taken).

A workload holds job *templates*; `expand(workload, seed=N)` turns them into concrete `JobSpec`s,
drawing jitter and duration ranges from a generator seeded per template, so the same seed always
gives the same jobs and editing one template does not reshuffle the others.

This module reads and expands; it runs nothing (`vpolicy.sim.simulate` does). CSV traces are read by
`vpolicy.sim.trace`, generated workloads come from `vpolicy.sim.generate`; both build the same model.
"""
from __future__ import annotations

import datetime
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarbool import ScalarBoolean

from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy.load import fields, vcjob, yaml_spans
from vpolicy.model import durations, quantity, snapshot
from vpolicy.model.resources import PODS, Resources
from vpolicy.source import Span

API_VERSION = "vpolicy/v1"
KIND = "Workload"
UNKNOWN_KEY = "workload.unknown-key"
MISSING_KEY = "workload.missing-key"
WRONG_TYPE = "workload.wrong-type"
BAD_VALUE = "workload.bad-value"
BAD_DURATION = "workload.bad-duration"
BAD_QUANTITY = "workload.bad-quantity"
DUPLICATE_JOB = "workload.duplicate-job"
UNKNOWN_QUEUE = "workload.unknown-queue"
UNKNOWN_PRIORITY_CLASS = "workload.unknown-priority-class"
# Monday 2024-05-06 00:00 UTC: after the example cluster's objects were created, so ages stay positive.
DEFAULT_START = datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone.utc).timestamp()
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK = "worker"
ON_EVICT = ("restart", "fail")
QUEUE_STATES = (snapshot.QueueState.OPEN.value, snapshot.QueueState.CLOSED.value)

TOP_KEYS = ("apiVersion", "kind", "name", "description", "start", "duration", "existing", "jobs", "events")
JOB_KEYS = ("name", "namespace", "queue", "at", "count", "every", "jitter", "pods", "min_available", "task",
            "requests", "priority", "duration", "on_evict", "tolerations", "node_selector")
EXISTING_KEYS = ("duration", "on_evict")
EVENT_KEYS = ("at", "queue", "state")
RANGE_KEYS = ("min", "max")
TOLERATION_KEYS = ("key", "operator", "value", "effect")
DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DURATION_HELP = "write a duration such as 90s, 45m, 2h, 1h30m or 1d (a bare number is seconds)"
# The longest time a workload may write (ten years). Simulated runs span days or weeks; a longer time is
# a typo (`1e400`, `.inf`), and the simulation's clock and plots need finite, moderate times.
MAX_DURATION = "3650d"
MAX_DURATION_S = 3650 * 86_400.0
# The most pods one job may have (as for a vcjob's replicas), and the most a whole workload may create:
# a simulated run costs about one session per arrival and finish, so a million pods is already days of
# CPU; more (`count: 100000000000`) is a typo that would hang the loader.
MAX_JOB_PODS = vcjob.MAX_JOB_PODS
MAX_WORKLOAD_PODS = 1_000_000

OnEvict = Literal["restart", "fail"]


@dataclass(frozen=True, slots=True)
class JobTemplate:
    """One `jobs:` entry: `count` jobs arriving `every` apart from `at`, each with the same shape."""

    name: str
    requests: Resources  # one pod's request, `pods: 1` included
    duration: tuple[float, float]  # seconds, min and max (equal for a fixed duration)
    namespace: str = DEFAULT_NAMESPACE
    queue: str = snapshot.DEFAULT_QUEUE
    at: float = 0.0
    count: int = 1
    every: float = 0.0
    jitter: float = 0.0
    pods: int = 1
    min_available: int = 1
    task: str = DEFAULT_TASK
    priority: str | int | None = None  # a PriorityClass name, a bare value, or the cluster's default
    on_evict: OnEvict = "restart"
    tolerations: tuple[snapshot.Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    spans: Mapping[str, Span] = field(default_factory=dict, compare=False)  # key -> where its value is


@dataclass(frozen=True, slots=True)
class QueueEvent:
    at: float
    queue: str
    state: snapshot.QueueState
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Existing:
    """How jobs already in the cluster dump behave: they run `duration` (None: to the end)."""

    duration: float | None = None
    on_evict: OnEvict = "restart"


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    templates: tuple[JobTemplate, ...] = ()
    events: tuple[QueueEvent, ...] = ()
    existing: Existing = Existing()
    start: float = DEFAULT_START  # epoch seconds of simulated time 0
    duration: float | None = None  # simulate this long; None: until the workload is done
    description: str = ""
    file: str = ""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job of an expanded workload."""

    name: str
    namespace: str
    queue: str
    arrival: float  # seconds after the start
    pods: int
    min_available: int
    requests: Resources
    duration: float
    task: str = DEFAULT_TASK
    priority: str | int | None = None
    on_evict: OnEvict = "restart"
    tolerations: tuple[snapshot.Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def load_workload(path: str | Path) -> Workload:
    """Read and check a workload file; every mistake is raised at once as one PolicyError."""
    loaded = yaml_spans.read_yaml(path, stage="workload")
    reader = _Reader(loaded)
    workload = reader.read()
    if reader.diagnostics or workload is None:
        raise PolicyError(reader.diagnostics)
    return workload


def expand(workload: Workload, *, seed: int) -> tuple[JobSpec, ...]:
    """The workload's jobs for one seed, in arrival order (ties: file order)."""
    jobs: list[tuple[float, int, int, JobSpec]] = []
    for index, t in enumerate(workload.templates):
        # A str seed is hashed with sha512 by `random`, so it does not depend on PYTHONHASHSEED.
        rng = random.Random(f"{seed}:{index}:{t.name}")
        for i in range(t.count):
            arrival = t.at + i * t.every + (rng.uniform(0.0, t.jitter) if t.jitter else 0.0)
            low, high = t.duration
            duration = low if high == low else rng.uniform(low, high)
            spec = JobSpec(name=instance_name(t.name, i, t.count), namespace=t.namespace, queue=t.queue,
                           arrival=round(arrival, 3), pods=t.pods, min_available=t.min_available,
                           requests=t.requests, duration=round(duration, 3), task=t.task, priority=t.priority,
                           on_evict=t.on_evict, tolerations=t.tolerations, node_selector=t.node_selector)
            jobs.append((spec.arrival, index, i, spec))
    jobs.sort(key=lambda j: j[:3])
    return tuple(j[3] for j in jobs)


def instance_name(template: str, i: int, count: int) -> str:
    if "{i}" in template:
        return template.replace("{i}", str(i))
    return f"{template}-{i}" if count > 1 else template


def check_against(workload: Workload, cluster: snapshot.ClusterSnapshot) -> None:
    """Queues and priority classes must exist, and no job may take a PodGroup name the dump already has."""
    queues = [q.name for q in cluster.queues]
    classes = [pc.name for pc in cluster.priority_classes]
    groups = {g.key for g in cluster.podgroups}
    diags: list[Diagnostic] = []
    for t in workload.templates:
        if t.queue not in queues:
            diags.append(Diagnostic(UNKNOWN_QUEUE, f"queue '{t.queue}' is not in the cluster", t.spans.get("queue"),
                                    help=did_you_mean(t.queue, queues) or f"queues: {', '.join(queues)}"))
        if isinstance(t.priority, str) and t.priority not in classes:
            diags.append(Diagnostic(UNKNOWN_PRIORITY_CLASS, f"priority class '{t.priority}' is not in the cluster",
                                    t.spans.get("priority"),
                                    help=did_you_mean(t.priority, classes)
                                    or (f"classes: {', '.join(classes)}; or write a number" if classes
                                        else "the cluster has no PriorityClass; write a number")))
        for i in range(t.count):
            key = f"{t.namespace}/{instance_name(t.name, i, t.count)}"
            if key in groups:
                diags.append(Diagnostic(DUPLICATE_JOB, f"job {key} is already a PodGroup in the cluster",
                                        t.spans.get("name"), help="rename the job"))
                break
    for event in workload.events:
        if event.queue not in queues:
            diags.append(Diagnostic(UNKNOWN_QUEUE, f"queue '{event.queue}' is not in the cluster", event.span,
                                    help=did_you_mean(event.queue, queues) or f"queues: {', '.join(queues)}"))
    if diags:
        raise PolicyError(diags)


def parse_duration(value: object, *, written: str | None = None) -> float:
    """`90s`, `45m`, `2h`, `1h30m`, `1d`, `1.5h`, or a number of seconds, up to `MAX_DURATION`; ValueError
    otherwise (`written`, the value as the file writes it, is what the message quotes for a number)."""
    if isinstance(value, (bool, ScalarBoolean)):
        raise ValueError(f"expected a duration, got {str(bool(value)).lower()}")
    if isinstance(value, (int, float)):
        shown = written or str(value)
        if math.isnan(value):
            raise ValueError(f"'{shown}' is not a duration")
        if value < 0:
            raise ValueError(f"must not be negative, got {shown}")
        return _at_most_max(float(value) if value <= MAX_DURATION_S else math.inf, f"'{shown}'")
    if not isinstance(value, str):
        raise ValueError(f"expected a duration, got {_describe(value)}")
    text = value.strip()
    seconds = durations.seconds(text)
    if seconds is None or math.isnan(seconds):
        raise ValueError(f"'{text}' is not a duration")
    if seconds < 0:
        raise ValueError(f"must not be negative, got '{text}'")
    return _at_most_max(seconds, f"'{text}'")


def _at_most_max(seconds: float, written: str) -> float:
    if seconds > MAX_DURATION_S:  # infinity included
        raise ValueError(f"{written} is longer than {MAX_DURATION} (ten years), the longest a workload may write")
    return seconds


def pods_over_limit(templates: tuple[JobTemplate, ...]) -> tuple[JobTemplate, int] | None:
    """The first template whose jobs take the workload's pods (count x pods, in file order) above
    `MAX_WORKLOAD_PODS`, and that running total; None when the workload stays within it."""
    total = 0
    for t in templates:
        total += t.count * t.pods
        if total > MAX_WORKLOAD_PODS:
            return t, total
    return None


def format_duration(seconds: float) -> str:
    """The shortest of `1d2h3m4s` that reads back as `seconds` (rounded to whole seconds)."""
    rest = int(round(seconds))
    if rest == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts)


def pod_request(values: Mapping[str, int]) -> Resources:
    """A pod's request as the loader makes it: the given amounts plus `pods: 1`."""
    return Resources({**values, PODS: 1})


class _Reader:
    """One pass over the workload document, collecting every mistake."""

    def __init__(self, loaded: yaml_spans.YamlFile):
        self.file = loaded
        self.diagnostics: list[Diagnostic] = []

    def read(self) -> Workload | None:
        docs = [d for d in self.file.documents if d is not None]
        if len(docs) != 1 or not isinstance(docs[0], CommentedMap):
            span = self.file.document_span(0) if self.file.documents else Span(self.file.name, 1, 1)
            self._error(WRONG_TYPE, "a workload file holds one mapping (apiVersion, kind: Workload, name, jobs)",
                        span, "see docs/simulate.md for the format")
            return None
        doc = docs[0]
        self._keys(doc, TOP_KEYS, "")
        self._fixed(doc, "apiVersion", API_VERSION)
        self._fixed(doc, "kind", KIND)
        name = self._text(doc, "name", "", required=True) or ""
        description = self._text(doc, "description", "") or ""
        start = self._start(doc)
        duration = self._duration(doc, "duration", "") if "duration" in doc else None
        existing = self._existing(doc)
        templates = tuple(t for i, item in enumerate(self._list(doc, "jobs", ""))
                          if (t := self._job(item, f"jobs[{i}]")) is not None)
        events = tuple(e for i, item in enumerate(self._list(doc, "events", ""))
                       if (e := self._event(item, f"events[{i}]")) is not None)
        if self._pods_within_limit(templates):  # else naming every job would take as long as the run
            self._unique_names(templates)
        if self.diagnostics:
            return None
        return Workload(name=name, templates=templates, events=tuple(sorted(events, key=lambda e: e.at)),
                        existing=existing, start=start, duration=duration, description=description,
                        file=self.file.name)

    # parts ----------------------------------------------------------------------------------------
    def _pods_within_limit(self, templates: tuple[JobTemplate, ...]) -> bool:
        over = pods_over_limit(templates)
        if over is None:
            return True
        template, total = over
        where = template.spans.get("count") or template.spans.get("pods") or template.spans.get("name")
        self._error(BAD_VALUE, f"job '{template.name}': count {template.count} x pods {template.pods} takes the "
                               f"workload to {total} pods, more than the {MAX_WORKLOAD_PODS} it may create",
                    where or Span(self.file.name, 1, 1),
                    f"lower count or pods; all jobs of a workload (count x pods each) add up to at most "
                    f"{MAX_WORKLOAD_PODS} pods")
        return False

    def _start(self, doc: CommentedMap) -> float:
        value = doc.get("start")
        if value is None:
            return DEFAULT_START
        seconds = fields.rfc3339_seconds(value)
        if seconds is None:
            self._error(BAD_VALUE, f"start: {_describe(value)} is not an RFC 3339 time",
                        self.file.value_span(doc, "start"), "write e.g. start: 2024-05-06T00:00:00Z")
            return DEFAULT_START
        return seconds

    def _existing(self, doc: CommentedMap) -> Existing:
        block = self._mapping(doc, "existing", "")
        if block is None:
            return Existing()
        self._keys(block, EXISTING_KEYS, "existing.")
        duration = self._duration(block, "duration", "existing.") if "duration" in block else None
        return Existing(duration=duration, on_evict=self._on_evict(block, "existing."))

    def _job(self, item: object, path: str) -> JobTemplate | None:
        if not isinstance(item, CommentedMap):
            return None  # reported by _list
        before = len(self.diagnostics)
        self._keys(item, JOB_KEYS, f"{path}.")
        spans = {str(k): self.file.value_span(item, k) for k in item}
        name = self._text(item, "name", path + ".", required=True)
        namespace = self._text(item, "namespace", path + ".") or DEFAULT_NAMESPACE
        queue = self._text(item, "queue", path + ".") or snapshot.DEFAULT_QUEUE
        task = self._text(item, "task", path + ".") or DEFAULT_TASK
        count = self._integer(item, "count", path + ".", default=1, minimum=1)
        at = self._duration(item, "at", path + ".") if "at" in item else 0.0
        every = self._duration(item, "every", path + ".") if "every" in item else 0.0
        jitter = self._duration(item, "jitter", path + ".") if "jitter" in item else 0.0
        if count > 1 and "every" not in item:
            self._error(MISSING_KEY, f"{path}: count {count} needs every (the time between arrivals)",
                        self.file.key_span(item, "count"), "add e.g. every: 1h")
        pods = self._integer(item, "pods", path + ".", default=1, minimum=1)
        if pods > MAX_JOB_PODS:
            self._error(BAD_VALUE, f"{path}.pods: must be at most {MAX_JOB_PODS}, got {pods}",
                        self.file.value_span(item, "pods"), vcjob.MAX_PODS_HELP)
        min_available = self._integer(item, "min_available", path + ".", default=pods, minimum=1)
        if min_available > pods:
            self._error(BAD_VALUE, f"{path}.min_available: {min_available} is more than pods ({pods})",
                        self.file.value_span(item, "min_available"), f"write a number from 1 to {pods}")
        requests = self._requests(item, path + ".")
        duration = self._duration_range(item, path + ".")
        for key, value in (("name", name), ("namespace", namespace)):
            if value is not None and key in item:
                shown = instance_name(value, 0, count) if key == "name" else value
                if not DNS_NAME.match(shown):
                    self._error(BAD_VALUE, f"{path}.{key}: '{value}' is not a Kubernetes name",
                                self.file.value_span(item, key),
                                "use lowercase letters, digits and '-', starting and ending with a letter or digit"
                                + ("; {i} stands for the job's index" if key == "name" else ""))
        template = JobTemplate(
            name=name or "", requests=requests, duration=duration, namespace=namespace, queue=queue, at=at,
            count=count, every=every, jitter=jitter, pods=pods, min_available=min_available, task=task,
            priority=self._priority(item, path + "."), on_evict=self._on_evict(item, path + "."),
            tolerations=self._tolerations(item, path + "."), node_selector=self._string_map(item, "node_selector",
                                                                                             path + "."),
            spans=spans)
        return template if len(self.diagnostics) == before else None

    def _event(self, item: object, path: str) -> QueueEvent | None:
        if not isinstance(item, CommentedMap):
            return None
        before = len(self.diagnostics)
        self._keys(item, EVENT_KEYS, f"{path}.")
        at = self._duration(item, "at", path + ".", required=True)
        queue = self._text(item, "queue", path + ".", required=True)
        state = self._text(item, "state", path + ".", required=True)
        if state is not None and state not in QUEUE_STATES:
            self._error(BAD_VALUE, f"{path}.state: '{state}' is not one of {', '.join(QUEUE_STATES)}",
                        self.file.value_span(item, "state"),
                        did_you_mean(state, QUEUE_STATES) or f"write one of {', '.join(QUEUE_STATES)}")
        if len(self.diagnostics) != before or queue is None or state is None:
            return None
        return QueueEvent(at=at, queue=queue, state=snapshot.QueueState(state),
                          span=self.file.value_span(item, "queue"))

    def _requests(self, item: CommentedMap, path: str) -> Resources:
        block = self._mapping(item, "requests", path, required=True)
        if block is None:
            return pod_request({})
        out: dict[str, int] = {}
        for key in block:
            value = block[key]
            where = self.file.value_span(block, key)
            if isinstance(value, (bool, ScalarBoolean)) or not isinstance(value, (str, int, float)):
                self._error(BAD_QUANTITY, f"{path}requests.{key}: expected a quantity, got {_describe(value)}",
                            where, "quantities look like 500m, 2, 1.5Gi, 1e3")
                continue
            try:
                amount = quantity.parse_quantity(self.file.value_text(block, key), str(key))
            except ValueError as exc:
                self._error(BAD_QUANTITY, f"{path}requests.{key}: {exc}", where,
                            "quantities look like 500m, 2, 1.5Gi, 1e3")
                continue
            if amount < 0:
                self._error(BAD_QUANTITY, f"{path}requests.{key}: must not be negative", where,
                            "resource amounts are zero or more")
                continue
            problem = fields.too_large(self.file.value_text(block, key), amount, str(key))
            if problem is not None:
                self._error(BAD_QUANTITY, f"{path}requests.{key}: {problem}", where, fields.TOO_LARGE_HELP)
                continue
            out[str(key)] = amount
        return pod_request(out)

    def _duration_range(self, item: CommentedMap, path: str) -> tuple[float, float]:
        if "duration" not in item:
            self._error(MISSING_KEY, f"{path}duration is missing", self.file.node_span(item),
                        "add duration: 2h, or duration: {min: 1h, max: 3h}")
            return (0.0, 0.0)
        value = item["duration"]
        if isinstance(value, CommentedMap):
            self._keys(value, RANGE_KEYS, f"{path}duration.")
            low = self._duration(value, "min", f"{path}duration.", required=True)
            high = self._duration(value, "max", f"{path}duration.", required=True)
            if high < low:
                self._error(BAD_VALUE, f"{path}duration: max is less than min", self.file.value_span(value, "max"),
                            "write max >= min")
            return (low, high)
        seconds = self._duration(item, "duration", path)
        return (seconds, seconds)

    def _priority(self, item: CommentedMap, path: str) -> str | int | None:
        value = item.get("priority")
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, (bool, ScalarBoolean)):
            return int(value)
        if isinstance(value, str) and value:
            return str(value)
        self._wrong_type(item, "priority", path, "a PriorityClass name or a number")
        return None

    def _on_evict(self, block: CommentedMap, path: str) -> OnEvict:
        value = self._text(block, "on_evict", path)
        if value is None:
            return "restart"
        if value not in ON_EVICT:
            self._error(BAD_VALUE, f"{path}on_evict: '{value}' is not one of {', '.join(ON_EVICT)}",
                        self.file.value_span(block, "on_evict"),
                        did_you_mean(value, ON_EVICT) or "write restart (Volcano's RestartJob) or fail (AbortJob)")
            return "restart"
        return value  # type: ignore[return-value]  # reason: checked against ON_EVICT just above

    def _tolerations(self, item: CommentedMap, path: str) -> tuple[snapshot.Toleration, ...]:
        out = []
        for i, entry in enumerate(self._list(item, "tolerations", path)):
            if not isinstance(entry, CommentedMap):
                continue
            where = f"{path}tolerations[{i}]."
            self._keys(entry, TOLERATION_KEYS, where)
            operator = self._text(entry, "operator", where) or "Equal"
            if operator not in ("Equal", "Exists"):
                self._error(BAD_VALUE, f"{where}operator: '{operator}' is not one of Equal, Exists",
                            self.file.value_span(entry, "operator"), "write Equal or Exists")
            out.append(snapshot.Toleration(key=self._text(entry, "key", where) or "", operator=operator,
                                           value=self._text(entry, "value", where) or "",
                                           effect=self._text(entry, "effect", where) or ""))
        return tuple(out)

    def _unique_names(self, templates: tuple[JobTemplate, ...]) -> None:
        seen: dict[str, Span | None] = {}
        for t in templates:
            for i in range(t.count):
                key = f"{t.namespace}/{instance_name(t.name, i, t.count)}"
                if key in seen:
                    first = seen[key]
                    self.diagnostics.append(Diagnostic(
                        DUPLICATE_JOB, f"job {key} is defined twice", t.spans.get("name"),
                        help="give each job its own name; {i} in a name stands for the job's index",
                        related=((first, "first here"),) if first is not None else ()))
                    break
                seen[key] = t.spans.get("name")

    # typed values ---------------------------------------------------------------------------------
    def _keys(self, mapping: CommentedMap, known: tuple[str, ...], path: str) -> None:
        for key in mapping:
            if key not in known:
                self._error(UNKNOWN_KEY, f"unknown key '{path}{key}'", self.file.key_span(mapping, key),
                            did_you_mean(str(key), known) or f"known keys: {', '.join(known)}")

    def _fixed(self, doc: CommentedMap, key: str, wanted: str) -> None:
        value = self._text(doc, key, "", required=True)
        if value is not None and value != wanted:
            self._error(BAD_VALUE, f"{key} must be {wanted}, got '{value}'", self.file.value_span(doc, key),
                        f"write {key}: {wanted}")

    def _text(self, mapping: CommentedMap, key: str, path: str, *, required: bool = False) -> str | None:
        if mapping.get(key) is None:
            if required:
                self._error(MISSING_KEY, f"{path}{key} is missing", self.file.node_span(mapping), f"add {key}:")
            return None
        value = mapping[key]
        if not isinstance(value, str):
            self._wrong_type(mapping, key, path, "a string")
            return None
        return str(value)

    def _integer(self, mapping: CommentedMap, key: str, path: str, *, default: int, minimum: int) -> int:
        value = mapping.get(key)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, (bool, ScalarBoolean)):
            self._wrong_type(mapping, key, path, "a whole number")
            return default
        if value < minimum:
            self._error(BAD_VALUE, f"{path}{key}: must be at least {minimum}, got {value}",
                        self.file.value_span(mapping, key), f"write a whole number >= {minimum}")
            return default
        return int(value)

    def _duration(self, mapping: CommentedMap, key: str, path: str, *, required: bool = False) -> float:
        value = mapping.get(key)
        if value is None:
            if required or key in mapping:
                self._error(MISSING_KEY, f"{path}{key} is missing", self.file.node_span(mapping),
                            f"add {key}: {'1h' if key != 'at' else '0s'}")
            return 0.0
        try:
            return parse_duration(value, written=self.file.value_text(mapping, key))
        except ValueError as exc:
            self._error(BAD_DURATION, f"{path}{key}: {exc}", self.file.value_span(mapping, key), _DURATION_HELP)
            return 0.0

    def _mapping(self, mapping: CommentedMap, key: str, path: str, *, required: bool = False) -> CommentedMap | None:
        value = mapping.get(key)
        if value is None:
            if required:
                self._error(MISSING_KEY, f"{path}{key} is missing", self.file.node_span(mapping),
                            "add requests: {cpu: 1, memory: 2Gi}" if key == "requests" else f"add {key}:")
            return None
        if not isinstance(value, CommentedMap):
            self._wrong_type(mapping, key, path, "a mapping")
            return None
        return value

    def _list(self, mapping: CommentedMap, key: str, path: str) -> list[Any]:
        value = mapping.get(key)
        if value is None:
            return []
        if not isinstance(value, CommentedSeq):
            self._wrong_type(mapping, key, path, "a list")
            return []
        for i, item in enumerate(value):
            if not isinstance(item, CommentedMap):
                self._error(WRONG_TYPE, f"{path}{key}[{i}] must be a mapping, got {_describe(item)}",
                            self.file.item_span(value, i), "write key: value pairs under '- '")
        return list(value)

    def _string_map(self, mapping: CommentedMap, key: str, path: str) -> dict[str, str]:
        block = self._mapping(mapping, key, path)
        if block is None:
            return {}
        out: dict[str, str] = {}
        for name, value in block.items():
            if not isinstance(value, str):
                self._wrong_type(block, name, f"{path}{key}.", "a string")
                continue
            out[str(name)] = value
        return out

    def _wrong_type(self, mapping: CommentedMap, key: str, path: str, wanted: str) -> None:
        value = mapping.get(key)
        help_text = f"write {wanted} here"
        if wanted == "a string" and isinstance(value, (int, float)):
            help_text = "quote the value: YAML reads unquoted numbers and booleans as other types"
        elif wanted == "a whole number" and isinstance(value, str):
            help_text = "remove the quotes around the value"
        self._error(WRONG_TYPE, f"{path}{key} must be {wanted}, got {_describe(value)}",
                    self.file.value_span(mapping, key), help_text)

    def _error(self, code: str, message: str, span: Span, help: str | None) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, span=span, help=help))


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (bool, ScalarBoolean)):
        return f"a boolean ({str(bool(value)).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, CommentedMap):
        return "a mapping"
    if isinstance(value, CommentedSeq):
        return "a list"
    return f"'{value}'"
