"""Volcano's queue webhooks: defaulting (queues/mutate) and validation (queues/validate, delete).

Defaults (`default_queue`): weight 1 when unset or 0, reclaimable true when unset, and the
hierarchy annotations (`volcano.sh/hierarchy`, `volcano.sh/hierarchy-weights`) prefixed with `root`.

Validation (`validate_queue`): `status.state`, if set, is Open or Closed; weight 1..65535; the two
hierarchy annotations have as many parts, weights positive; quantities >= 0; guarantee <= deserved
<= capability per resource (cpu and memory missing from a set deserved or capability count as 0, so
a guarantee needs a deserved); the parent exists, is not the queue itself, holds no PodGroups of its own, and the
hierarchy is at most `MAX_DEPTH` deep; the queue's capability is within every ancestor's; the
children's guarantees and deserved shares together fit the parent's; `root`'s resources cannot change.
`validate_queue_delete`: `root` and `default` stay; a queue with PodGroups or children stays.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from vpolicy.admission.common import Queues, Violation, exceeds, integer, resource_list

ROOT_QUEUE, DEFAULT_QUEUE = "root", "default"
HIERARCHY_KEY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_KEY = "volcano.sh/hierarchy-weights"
MAX_WEIGHT = 65535
MAX_DEPTH = 10  # levels below root; deeper trees are almost certainly a parent loop or a typo
STATES = ("Open", "Closed")
# Volcano's Resource keeps these two as fields (0 when absent); other resources are compared only when
# both lists name them.
_ALWAYS_COMPARED = ("cpu", "memory")


def default_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(queue))
    spec = out.setdefault("spec", {})
    if not integer(spec.get("weight")):
        spec["weight"] = 1
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    annotations = out.setdefault("metadata", {}).get("annotations") or {}
    hierarchy, weights = annotations.get(HIERARCHY_KEY), annotations.get(HIERARCHY_WEIGHTS_KEY)
    if hierarchy and weights and not str(hierarchy).startswith(ROOT_QUEUE):  # volcano: HasPrefix(h, "root")
        annotations[HIERARCHY_KEY] = f"{ROOT_QUEUE}/{hierarchy}"
        annotations[HIERARCHY_WEIGHTS_KEY] = f"1/{weights}"
        out["metadata"]["annotations"] = annotations
    return out


def validate_queue(queue: Mapping[str, Any], *, queues: Queues | None = None,
                   podgroups: Mapping[str, int] | None = None, old: Mapping[str, Any] | None = None) -> list[Violation]:
    out: list[Violation] = []
    meta, spec = queue.get("metadata") or {}, queue.get("spec") or {}
    name = str(meta.get("name") or "")
    state = (queue.get("status") or {}).get("state")
    if state and state not in STATES:
        out.append(Violation("admission.queue-state", "status.state",
                             f"queue state must be one of {', '.join(STATES)}, not {state!r}"))
    if spec.get("weight") is not None:
        weight = integer(spec.get("weight"))
        if weight is None or not 1 <= weight <= MAX_WEIGHT:
            out.append(Violation("admission.queue-weight", "spec.weight",
                                 f"queue weight must be between 1 and {MAX_WEIGHT}, not {spec.get('weight')!r}"))
    out += _hierarchy(meta.get("annotations") or {})
    amounts: dict[str, dict[str, Fraction]] = {}
    for field, value in (("capability", spec.get("capability")), ("deserved", spec.get("deserved")),
                         ("guarantee", (spec.get("guarantee") or {}).get("resource"))):
        parsed = resource_list(value)
        if parsed is None:
            out.append(Violation("admission.queue-quantity", f"spec.{field}", f"{field} holds a quantity that does "
                                                                              "not parse"))
            parsed = {}
        negative = sorted(res for res, amount in parsed.items() if amount < 0)
        if negative:
            out.append(Violation("admission.queue-quantity", f"spec.{field}",
                                 f"{field} must be greater than or equal to 0 ({', '.join(negative)})"))
        amounts[field] = parsed
    for small, big in (("guarantee", "deserved"), ("deserved", "capability"), ("guarantee", "capability")):
        # Volcano's validateResourceOfQueue compares capability only when it is set, and deserved
        # whenever guarantee is set; cpu and memory missing from the bigger list count as 0.
        if big == "capability" and not amounts[big]:
            continue
        over = sorted(set(exceeds(amounts[small], amounts[big]))
                      | {res for res in _ALWAYS_COMPARED if amounts[small].get(res, 0) > 0 and res not in amounts[big]})
        if over:
            out.append(Violation("admission.queue-resources", f"spec.{small}",
                                 f"{small} must not exceed {big} ({', '.join(over)})"))
    if old is not None and name == ROOT_QUEUE:
        for field in ("capability", "deserved", "guarantee"):
            if (old.get("spec") or {}).get(field) != spec.get(field):
                out.append(Violation("admission.queue-root-immutable", f"spec.{field}",
                                     "the root queue's resources cannot be changed"))
    if queues is not None and name != ROOT_QUEUE:
        out += _parent(name, spec, amounts, queues, podgroups or {})
    return out


def validate_queue_delete(name: str, *, queues: Queues, podgroups: Mapping[str, int] | None = None) -> list[Violation]:
    if name in (ROOT_QUEUE, DEFAULT_QUEUE):
        return [Violation("admission.queue-delete", "metadata.name", f"the {name} queue cannot be deleted")]
    out: list[Violation] = []
    if (podgroups or {}).get(name):
        out.append(Violation("admission.queue-delete", "metadata.name",
                             f"queue {name} cannot be deleted: it holds {(podgroups or {})[name]} PodGroups"))
    children = sorted(n for n, q in queues.items() if (q.get("spec") or {}).get("parent") == name)
    if children:
        out.append(Violation("admission.queue-delete", "metadata.name",
                             f"queue {name} cannot be deleted: it has child queues ({', '.join(children)})"))
    return out


def _hierarchy(annotations: Mapping[str, Any]) -> list[Violation]:
    hierarchy, weights = annotations.get(HIERARCHY_KEY), annotations.get(HIERARCHY_WEIGHTS_KEY)
    if not hierarchy and not weights:
        return []
    parts, weight_parts = str(hierarchy or "").split("/"), str(weights or "").split("/")
    if len(parts) != len(weight_parts):
        return [Violation("admission.queue-hierarchy", f"metadata.annotations.{HIERARCHY_KEY}",
                          f"{HIERARCHY_KEY} and {HIERARCHY_WEIGHTS_KEY} must have as many parts")]
    for part in weight_parts:
        try:
            ok = float(part) > 0
        except ValueError:
            ok = False
        if not ok:
            return [Violation("admission.queue-hierarchy", f"metadata.annotations.{HIERARCHY_WEIGHTS_KEY}",
                              f"hierarchy weight {part!r} must be a positive number")]
    return []


def _parent(name: str, spec: Mapping[str, Any], amounts: Mapping[str, Mapping[str, Fraction]], queues: Queues,
            podgroups: Mapping[str, int]) -> list[Violation]:
    out: list[Violation] = []
    parent = str(spec.get("parent") or ROOT_QUEUE)
    if parent == name:
        return [Violation("admission.queue-parent", "spec.parent", "a queue cannot be its own parent")]
    if parent not in queues and parent != ROOT_QUEUE:
        return [Violation("admission.queue-parent", "spec.parent", f"parent queue {parent} does not exist")]
    if parent != ROOT_QUEUE and podgroups.get(parent):
        out.append(Violation("admission.queue-parent", "spec.parent",
                             f"parent queue {parent} holds PodGroups; only a queue without jobs can have children"))
    chain, seen, node = [], {name}, parent
    while node and node != ROOT_QUEUE:
        if node in seen:
            return out + [Violation("admission.queue-parent", "spec.parent", f"the parents of {name} form a loop")]
        seen.add(node)
        chain.append(node)
        node = str(((queues.get(node) or {}).get("spec") or {}).get("parent") or ROOT_QUEUE)
    if len(chain) + 1 > MAX_DEPTH:
        out.append(Violation("admission.queue-depth", "spec.parent", f"the queue tree is deeper than {MAX_DEPTH}"))
    for ancestor in chain + ([ROOT_QUEUE] if ROOT_QUEUE in queues else []):
        cap = resource_list((queues[ancestor].get("spec") or {}).get("capability")) or {}
        over = exceeds(amounts["capability"], cap)
        if over:
            out.append(Violation("admission.queue-capability", "spec.capability",
                                 f"capability exceeds ancestor {ancestor}'s ({', '.join(over)})"))
    parent_spec = (queues.get(parent) or {}).get("spec") or {}
    siblings = [q for n, q in queues.items() if n != name and (q.get("spec") or {}).get("parent") == parent]
    for field, path in (("guarantee", ("guarantee", "resource")), ("deserved", ("deserved",))):
        limit = resource_list(_dig(parent_spec, path)) or {}
        if not limit:
            continue
        total = dict(amounts[field])
        for sibling in siblings:
            for res, amount in (resource_list(_dig(sibling.get("spec") or {}, path)) or {}).items():
                total[res] = total.get(res, Fraction(0)) + amount
        over = exceeds(total, limit)
        if over:
            out.append(Violation("admission.queue-children-sum", f"spec.{field}",
                                 f"the {field} of {parent}'s children together exceed {parent}'s ({', '.join(over)})"))
    return out


def _dig(spec: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = spec
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
