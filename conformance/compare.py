"""Whether two decision documents decide the same, up to what Volcano itself leaves to chance.

Compared: binds (pod -> node), pipelined pods (pod -> node), evicted pods, and the phase of every
podgroup both engines report. Not compared: reasons, conditions' messages, eviction rules, timings.

Interchangeable nodes: nodes equal in everything a rule can read (allocatable, labels but the hostname,
taints, schedulability, readiness) and empty at the start can be swapped without changing the problem,
so an outcome is rewritten with each class's nodes renamed in a canonical order (by the pods they
received) before comparing. Volcano's own randomness beyond that is handled by the caller, which runs
the oracle several times and accepts any outcome Volcano produced.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

Document = dict[str, Any]
Obj = dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    binds: tuple[tuple[str, str], ...]
    pipelined: tuple[tuple[str, str], ...]
    evictions: tuple[str, ...]
    phases: tuple[tuple[str, str], ...]
    # tasks Volcano left Allocated, never dispatched (a job pipelined but not ready): not a decision to
    # compare, but they hold pod slots (`divergences`); vpolicy's documents have none
    allocated: tuple[tuple[str, str], ...] = field(default=(), compare=False)


def node_classes(objects: list[Obj]) -> dict[str, str]:
    """node -> the name of its class of interchangeable nodes (itself when it has no twin)."""
    occupied = {o["spec"].get("nodeName") for o in objects if o.get("kind") == "Pod"}
    signature: dict[str, str] = {}
    for o in objects:
        if o.get("kind") != "Node":
            continue
        name = o["metadata"]["name"]
        if name in occupied:
            signature[name] = name
            continue
        labels = {k: v for k, v in o["metadata"].get("labels", {}).items() if k != "kubernetes.io/hostname"}
        signature[name] = json.dumps([labels, o.get("spec", {}), o.get("status", {})], sort_keys=True)
    by_signature: dict[str, list[str]] = defaultdict(list)
    for name, sig in signature.items():
        by_signature[sig].append(name)
    return {name: min(by_signature[sig]) for name, sig in signature.items()}


def outcome(doc: Document, classes: dict[str, str], podgroups: set[str] | None = None) -> Outcome:
    binds: dict[str, str] = dict(doc.get("binds", {}))
    pipelined: dict[str, str] = dict(doc.get("pipelined", {}))
    rename = _canonical_names(binds, pipelined, classes)
    phases = {k: v["phase"] for k, v in doc.get("podgroups", {}).items()
              if podgroups is None or k in podgroups}
    return Outcome(
        binds=tuple(sorted((p, rename.get(n, n)) for p, n in binds.items())),
        pipelined=tuple(sorted((p, rename.get(n, n)) for p, n in pipelined.items())),
        evictions=tuple(sorted({e["pod"] for e in doc.get("evictions", [])})),
        phases=tuple(sorted(phases.items())),
        allocated=tuple(sorted((p, rename.get(n, n)) for p, n in doc.get("allocated", {}).items())),
    )


def _canonical_names(binds: dict[str, str], pipelined: dict[str, str], classes: dict[str, str]) -> dict[str, str]:
    received: dict[str, list[str]] = defaultdict(list)
    for pod, node in [*binds.items(), *pipelined.items()]:
        received[node].append(pod)
    members: dict[str, list[str]] = defaultdict(list)
    for node, cls in classes.items():
        members[cls].append(node)
    rename: dict[str, str] = {}
    for nodes in members.values():
        if len(nodes) < 2:
            continue
        by_pods = sorted(nodes, key=lambda n: (sorted(received.get(n, [])), n))
        for canonical, node in zip(sorted(nodes), by_pods):
            rename[node] = canonical
    return rename


def shared_podgroups(a: Document, b: Document) -> set[str]:
    return set(a.get("podgroups", {})) & set(b.get("podgroups", {}))


def differences(volcano: Outcome, vpolicy: Outcome) -> list[str]:
    """One line per decision that differs, Volcano's side first."""
    lines: list[str] = []
    for label, left, right in (("bind", dict(volcano.binds), dict(vpolicy.binds)),
                               ("pipeline", dict(volcano.pipelined), dict(vpolicy.pipelined)),
                               ("phase", dict(volcano.phases), dict(vpolicy.phases))):
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                lines.append(f"{label} {key}: volcano {left.get(key, '-')}, vpolicy {right.get(key, '-')}")
    for pod in sorted(set(volcano.evictions) ^ set(vpolicy.evictions)):
        who = "volcano" if pod in volcano.evictions else "vpolicy"
        lines.append(f"evict {pod}: only {who}")
    return lines
