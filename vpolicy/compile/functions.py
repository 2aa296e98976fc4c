"""Implementations of the DSL's built-in functions (catalogue: `vpolicy.lang.builtins.FUNCTIONS`).

These are the documented primitives DESIGN §6 allows: resource-vector arithmetic, Volcano's share
convention, label/selector/taint matching and proportion's water-filling. They work on any object with
the catalogue's attributes (duck-typed), so they serve the session runtime and tests alike. No policy
decision is made here; `policies/` decides.
"""
from __future__ import annotations

import datetime
import math
from typing import Any, Callable, Iterable, Mapping

from vpolicy.compile import devices, extender, numa, relations, topology
from vpolicy.model import budgets, durations
from vpolicy.model.quantity import parse_quantity
from vpolicy.model.resources import Resources, ZERO
from vpolicy.model.snapshot import Taint

PODS = "pods"


def compare(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def share(a: Resources, b: Resources) -> float:
    return a.max_ratio(b)


def share_on(a: Resources, b: Resources, names: Iterable[str]) -> float:
    return a.max_ratio(b, names=list(names))


def min_each(a: Resources, b: Resources) -> Resources:
    return Resources({k: min(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)})


def max_each(a: Resources, b: Resources) -> Resources:
    return Resources({k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)})


def cap_by(a: Resources, cap: Resources) -> Resources:
    out = {}
    for k, v in a.items():
        limit = cap.get(k) if k in cap else None
        if limit is None or (k in ("cpu", "memory") and limit <= 0):
            out[k] = v
        else:
            out[k] = min(v, limit)
    return Resources(out)


def ratio(a: float, b: float) -> float:
    return 0.0 if b == 0 else a / b


# ------------------------------------------------------------------------------------- label matching
def _requirement_matches(req: Any, labels: Mapping[str, str], node_name: str) -> bool:
    value = node_name if req.field else labels.get(req.key)
    present = node_name != "" if req.field else req.key in labels
    op = req.operator
    if op == "In":
        return present and value in req.values
    if op == "NotIn":
        return not present or value not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and req.values:
        try:
            left, right = int(value or ""), int(req.values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def term_matches(term: Any, labels: Mapping[str, str], node_name: str) -> bool:
    """A nodeSelectorTerm matches when all its requirements do; an empty term matches nothing (k8s)."""
    return bool(term.requirements) and all(_requirement_matches(r, labels, node_name) for r in term.requirements)


def matches_node_selector(task: Any, node: Any) -> bool:
    labels = node.labels
    return all(labels.get(k) == v for k, v in task.pod.node_selector.items())


def matches_required_affinity(task: Any, node: Any) -> bool:
    terms = task.pod.required_affinity
    return not terms or any(term_matches(t, node.labels, node.name) for t in terms)


def preferred_affinity_weight(task: Any, node: Any) -> int:
    return sum(p.weight for p in task.pod.preferred_affinity if term_matches(p.term, node.labels, node.name))


def _tolerated(taint: Any, tolerations: Iterable[Any]) -> bool:
    for tol in tolerations:
        if tol.effect and tol.effect != taint.effect:
            continue
        if tol.operator == "Exists":
            if not tol.key or tol.key == taint.key:
                return True
        elif tol.key == taint.key and tol.value == taint.value:
            return True
    return False


def tolerates_taints(task: Any, node: Any, effects: Iterable[str]) -> bool:
    wanted = set(effects)
    return all(_tolerated(t, task.pod.tolerations) for t in node.spec.taints if t.effect in wanted)


def tolerates_taint(task: Any, key: str, effect: str) -> bool:
    """Whether the pod tolerates the taint `key` with `effect` and no value, whether or not a node carries
    it: kube-scheduler's NodeUnschedulable asks it for node.kubernetes.io/unschedulable:NoSchedule."""
    return _tolerated(Taint(key, "", effect), task.pod.tolerations)


def intolerable_taints(task: Any, node: Any, effect: str) -> int:
    return sum(1 for t in node.spec.taints if t.effect == effect and not _tolerated(t, task.pod.tolerations))


# ------------------------------------------------------------------------------------- water filling
def water_fill(queues: list[Any], cluster_total: Resources, caps: Mapping[Any, Resources],
               requests: Mapping[Any, Resources]) -> dict[Any, Resources]:
    """Proportion's deserved: split `cluster_total` by weight, clamped to capability and request, raised
    to guarantee, repeated over unmet queues until nothing is left to give (reference §8).

    The arithmetic is Volcano's: float64 with its 0.1-milli-unit epsilon. That matters for termination
    (exact fractions can approach a clamp geometrically for ever; floats stop moving) and for results.
    Each deserved value is returned as the float64 Volcano computes (weight ratio first, then the
    product, as Resource.Multi), not rounded: allocatable compares strictly against it.
    """
    eps = 0.1

    def clamp(a: dict[str, float], b: Mapping[str, int], *, unlimited_missing: bool) -> dict[str, float]:
        out = {}
        for k in set(a) | set(b):
            if k not in b and unlimited_missing:
                out[k] = a.get(k, 0.0)
            else:
                out[k] = min(a.get(k, 0.0), float(b.get(k, 0)))
        return out

    deserved: dict[Any, dict[str, float]] = {q: {} for q in queues}
    met: set[Any] = set()
    remaining = {k: float(v) for k, v in cluster_total.items()}
    for _ in range(10_000):  # a guard only: float arithmetic reaches a fixed point long before
        active = [q for q in queues if q not in met]
        weight = sum(q.weight for q in active)
        if weight == 0:
            break
        old_remaining = dict(remaining)
        increased: dict[str, float] = {}
        decreased: dict[str, float] = {}
        for q in active:
            old = dict(deserved[q])
            ratio = q.weight / weight  # Go: remaining.Multi(float64(weight) / float64(totalWeight))
            new = {k: old.get(k, 0.0) + v * ratio for k, v in remaining.items()}
            if q in caps:
                new = clamp(new, caps[q], unlimited_missing=True)
            new = clamp(new, requests.get(q, ZERO), unlimited_missing=False)
            for k, v in q.guarantee.items():
                new[k] = max(new.get(k, 0.0), float(v))
            deserved[q] = new
            request = requests.get(q, ZERO)
            if all(request.get(k, 0) < new.get(k, 0.0) + eps for k in request) or new == old:
                met.add(q)
            for k in set(new) | set(old):
                d = new.get(k, 0.0) - old.get(k, 0.0)
                if d > 0:
                    increased[k] = increased.get(k, 0.0) + d
                elif d < 0:
                    decreased[k] = decreased.get(k, 0.0) - d
        for k in set(remaining) | set(increased) | set(decreased):
            remaining[k] = remaining.get(k, 0.0) - increased.get(k, 0.0) + decreased.get(k, 0.0)
        empty = all(v < eps for k, v in remaining.items() if k != PODS)
        if empty or remaining == old_remaining:
            break
    # float values in a Resources (typed as int amounts): only proportion's comparisons and shares read them
    return {q: Resources({k: _exact(v) for k, v in d.items()}) for q, d in deserved.items()}  # type: ignore[arg-type]


def _exact(value: float) -> float | int:
    """A deserved amount as Volcano holds it: the float64 itself (an int when it is one), so a strict
    comparison (`le_on`, Volcano's LessEqualWithDimension) and an epsilon one (`le`, LessEqual with its
    0.1 minimum) both answer as Volcano's do, and a share divides by the same number."""
    return int(value) if value.is_integer() else value


def _argument_placeholder(key: str, default: float) -> float:  # replaced per module at lowering time
    return default


def duration(text: Any) -> float:
    """A Go duration in seconds; -1 when `text` is not one (a rule then reads it as unset)."""
    found = durations.go_seconds(text) if isinstance(text, str) else None
    return -1.0 if found is None else found


def timestamp(text: Any) -> float:
    """An RFC 3339 time as epoch seconds (no offset: UTC); -1 when `text` is not one."""
    if not isinstance(text, str):
        return -1.0
    try:
        parsed = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return -1.0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def time_of_day(at: float, zone: datetime.tzinfo | None = None) -> float:
    """Seconds since midnight of an epoch time, on the wall clock of `zone` (the session's time zone,
    which lowering passes in; UTC without one). Volcano's tdm reads `time.Now()` in the scheduler's
    local zone."""
    if zone is None:
        return float(at) % 86_400.0
    local = datetime.datetime.fromtimestamp(float(at), zone)
    return float(local.hour * 3600 + local.minute * 60 + local.second) + (float(at) % 1.0)


def clock_time(text: Any) -> float:
    """`H:MM` or `HH:MM` (Go's `15:04` layout) as seconds since midnight; -1 when it is not one."""
    if not isinstance(text, str):
        return -1.0
    hours, sep, minutes = text.partition(":")
    if (not sep or not hours.isdigit() or not minutes.isdigit() or not 1 <= len(hours) <= 2 or len(minutes) != 2
            or int(hours) > 23 or int(minutes) > 59):
        return -1.0
    return float(int(hours) * 3600 + int(minutes) * 60)


def int_or_percent(text: Any, whole: float) -> int:
    """Kubernetes' GetValueFromIntOrPercent, rounding up: `2` is 2, `50%` of 5 is 3; 0 when neither."""
    raw = str(text).strip()
    if raw.endswith("%") and raw[:-1].isdigit():
        return int(math.ceil(int(raw[:-1]) * float(whole) / 100.0))
    try:
        return int(raw)
    except ValueError:
        return 0


def quantity_of(text: Any, resource: Any) -> int:
    """A Kubernetes quantity (`250m`, `200Mi`, `1`) in vpolicy's unit for `resource` (millicores for cpu,
    bytes for memory); -1 when the text is not one (a plugin keeps its default then)."""
    try:
        return parse_quantity(str(text).strip(), str(resource))
    except ValueError:
        return -1


def selects(pdb: Any, task: Any) -> bool:
    """A PodDisruptionBudget covers a pod: same namespace, and its (non-empty) selector matches the labels."""
    return bool(pdb.namespace == task.namespace and budgets.selector_matches(pdb.selector, task.labels))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "compare": compare,
    "duration": duration,
    "selects": selects,
    "index_of": lambda items, value: next((i for i, item in enumerate(items) if item == value), -1),
    "sort_by": lambda items, keys: [item for _, _, item in sorted(zip(keys, range(len(items)), items),
                                                               key=lambda kv: (kv[0], kv[1]))],
    "time_of_day": time_of_day,
    "clock_time": clock_time,
    "split_by": lambda text, sep: str(text).split(sep) if sep else [str(text)],
    "trim": lambda text: str(text).strip(),
    "int_or_percent": int_or_percent,
    "quantity": quantity_of,
    "timestamp": timestamp,
    "le": lambda a, b: a.le(b),
    "le_on": lambda a, b, names: a.le_on_dims_of(b, names),
    "dims": lambda r: sorted(r.dims()),
    "get": lambda r, name: r.get(name, 0),
    "without": lambda r, name: r.without(name),
    "only": lambda r, names: r.only(names),
    "min_each": min_each,
    "max_each": max_each,
    "positive": lambda r: r.clamp_min_zero(),
    "is_empty": lambda r: r.is_empty(),
    "share": share,
    "share_on": share_on,
    "ratio": ratio,
    "maximum": max,
    "minimum": min,
    "contains": lambda xs, x: x in xs,
    "len": len,
    "keys": lambda m: list(m),
    "split": lambda text: [x.strip() for x in str(text).split(",") if x.strip()],
    "cap_by": lambda a, cap: cap_by(a, cap),
    "argument": _argument_placeholder,
    # replaced per module at lowering time by a client of its `extender.*` arguments
    "extender": lambda verb, subject, other: extender.Reply(ok=False, error="no extender is configured"),
    "argument_at": _argument_placeholder,
    "argument_text_at": _argument_placeholder,
    "argument_keys": lambda path: [],  # replaced per module at lowering time
    "metrics_setting": lambda key, default: default,  # replaced per module at lowering time
    "water_fill": water_fill,
    "matches_node_selector": matches_node_selector,
    "matches_required_affinity": matches_required_affinity,
    "preferred_affinity_weight": preferred_affinity_weight,
    "tolerates_taints": tolerates_taints,
    "tolerates_taint": tolerates_taint,
    "intolerable_taints": intolerable_taints,
    "half": lambda x: x / 2,
    "abs": abs,
    "floor": lambda x: int(x // 1),
    "round": lambda x: int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1),  # half away from zero, as Go
    "log": lambda x: math.log(x),
    "float": float,
    "str": str,
    **devices.FUNCTIONS,  # deviceshare's card-level primitives
    **numa.FUNCTIONS,  # numa-aware's CPU pinning
    **relations.FUNCTIONS,  # pods per topology domain: pod affinity, topology spread, host ports
    **topology.FUNCTIONS,  # network-topology domain arithmetic
}
