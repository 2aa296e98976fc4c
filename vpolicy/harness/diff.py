"""`vpolicy diff --cluster PATH (--policy A | --conf A) (--policy B | --conf B)`: which pods and podgroups
change fate between two policies on one snapshot, with each run's own reasons.

Both policies run one session on the same snapshot. A pod's *fate* is what its session did with it:
bound to a node, pipelined to a node, evicted, left pending, or left alone (already running, finished, or
another scheduler's); a podgroup's fate is its phase after the session. Only changes of fate are listed:
a pod pending on both sides is not a change even when the reasons differ. Each side of a change carries
what its run says about it: the node, the pending reasons, the action, job and rule of an eviction,
the podgroup's Unschedulable condition.

It does not search for a cluster on which two policies differ (`--symbolic`, a solver question) and does
not explain placements beyond what the sessions record (`vpolicy explain` does). Returns results, never
prints: `format_text` and `to_json` give what the CLI writes.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Sequence

from vpolicy.engine.session import run_session
from vpolicy.harness import policy as policies
from vpolicy.load.cluster import load_cluster
from vpolicy.model.decisions import Decisions

SourceKind = Literal["policy", "conf"]
FateKind = Literal["bound", "pipelined", "evicted", "pending", "untouched"]


@dataclass(frozen=True, slots=True)
class PolicyRef:
    """One side: `--policy FILE` or `--conf FILE`."""

    kind: SourceKind
    path: str

    def __str__(self) -> str:
        return f"--{self.kind} {self.path}"


@dataclass(frozen=True, slots=True)
class Fate:
    kind: FateKind | str  # for a podgroup: its phase
    node: str = ""
    reasons: tuple[str, ...] = ()

    def same(self, other: "Fate") -> bool:
        return (self.kind, self.node) == (other.kind, other.node)

    def short(self) -> str:
        if self.kind in ("bound", "pipelined"):
            return f"{self.kind} to {self.node}"
        return str(self.kind)

    def long(self) -> str:
        """The fate and the run's reasons, on one line."""
        return f"{self.short()}: {'; '.join(self.reasons)}" if self.reasons else self.short()


@dataclass(frozen=True, slots=True)
class Change:
    what: Literal["pod", "podgroup"]
    key: str  # ns/name
    a: Fate
    b: Fate


@dataclass(slots=True)
class PolicyDiff:
    a: PolicyRef
    b: PolicyRef
    changes: list[Change] = field(default_factory=list)
    pods: int = 0
    podgroups: int = 0

    @property
    def same(self) -> bool:
        return not self.changes

    def summary(self) -> str:
        pods = sum(1 for c in self.changes if c.what == "pod")
        groups = len(self.changes) - pods
        total = f"of {_plural(self.podgroups, 'podgroup')}, {_plural(self.pods, 'pod')}"
        if not self.changes:
            return f"no podgroup or pod changes fate ({total})"
        return f"{_plural(groups, 'podgroup')} and {_plural(pods, 'pod')} change fate ({total})"


def diff_policies(cluster: Sequence[str], a: PolicyRef, b: PolicyRef, *, now: float = 0.0) -> PolicyDiff:
    """Run one session per side on the cluster and compare the decisions (PolicyError on bad input)."""
    snapshot = load_cluster(list(cluster))
    runs = []
    for ref in (a, b):
        compiled = policies.resolve(snapshot, policy=ref.path if ref.kind == "policy" else None,
                                    conf=ref.path if ref.kind == "conf" else None)
        runs.append(run_session(snapshot, compiled, now=now).decisions)
    groups = {p.key: f"{p.namespace}/{p.group}" for p in snapshot.pods if p.group}
    return compare(a, b, runs[0], runs[1], pods=[p.key for p in snapshot.pods], groups=groups)


def compare(a: PolicyRef, b: PolicyRef, left: Decisions, right: Decisions, *, pods: Sequence[str],
            groups: Mapping[str, str] | None = None) -> PolicyDiff:
    """The changes of fate between two sessions' decisions on the same snapshot (`pods`: its pod keys;
    `groups`: pod -> its podgroup, whose Unschedulable condition is added to a pending pod's reasons
    unless they already say it)."""
    groups = groups or {}
    out = PolicyDiff(a, b)
    keys = sorted(set(left.podgroups) | set(right.podgroups))
    out.podgroups = len(keys)
    for key in keys:
        fa, fb = podgroup_fate(key, left), podgroup_fate(key, right)
        if not fa.same(fb):
            out.changes.append(Change("podgroup", key, fa, fb))
    keys = sorted(set(pods) | set(left.binds) | set(right.binds) | set(left.unschedulable) | set(right.unschedulable))
    out.pods = len(keys)
    for key in keys:
        fa, fb = pod_fate(key, left, groups.get(key)), pod_fate(key, right, groups.get(key))
        if not fa.same(fb):
            out.changes.append(Change("pod", key, fa, fb))
    return out


def pod_fate(pod: str, d: Decisions, group: str | None = None) -> Fate:
    for e in d.evictions:
        if e.pod == pod:
            return Fate("evicted", reasons=(f"{e.action} for {e.for_job}, victim chosen by the rule at {e.rule}",))
    if pod in d.binds:
        return Fate("bound", d.binds[pod])
    if pod in d.pipelined:
        return Fate("pipelined", d.pipelined[pod])
    if pod in d.unschedulable:
        own = tuple(d.unschedulable[pod])
        conditions = d.podgroups[group].conditions if group and group in d.podgroups else ()
        gang = tuple(f"podgroup {group}: {c.get('message')}" for c in conditions  # what the pod's reasons lack
                     if c.get("type") == "Unschedulable" and c.get("message")
                     and not any(str(c.get("message")) in reason for reason in own))
        return Fate("pending", reasons=own + gang)
    return Fate("untouched")


def podgroup_fate(key: str, d: Decisions) -> Fate:
    status = d.podgroups.get(key)
    if status is None:
        return Fate("absent", reasons=("not in this session (its queue is missing?)",))
    reasons = tuple(f"{c.get('type')}: {c.get('message') or c.get('reason')}" for c in status.conditions
                    if c.get("type") == "Unschedulable")
    return Fate(status.phase, reasons=reasons)


def format_text(diff: PolicyDiff) -> str:
    """Both sides, then per change a headline (`pod ns/p: bound to n1 -> pending`) and, when a side has
    reasons, one line per side with them; then the summary."""
    lines = [f"A: {diff.a}", f"B: {diff.b}"]
    for change in diff.changes:
        lines.append(f"{change.what} {change.key}: {change.a.short()} -> {change.b.short()}")
        if change.a.reasons or change.b.reasons:  # otherwise the headline says it all
            lines.append(f"  A: {change.a.long()}")
            lines.append(f"  B: {change.b.long()}")
    lines.append(diff.summary())
    return "\n".join(lines) + "\n"


def to_json(diff: PolicyDiff) -> dict[str, object]:
    def side(fate: Fate) -> dict[str, object]:
        doc: dict[str, object] = {"fate": fate.kind}
        if fate.node:
            doc["node"] = fate.node
        if fate.reasons:
            doc["reasons"] = list(fate.reasons)
        return doc

    return {
        "a": {"kind": diff.a.kind, "path": diff.a.path},
        "b": {"kind": diff.b.kind, "path": diff.b.path},
        "podgroups": [{"podgroup": c.key, "a": side(c.a), "b": side(c.b)} for c in diff.changes
                      if c.what == "podgroup"],
        "pods": [{"pod": c.key, "a": side(c.a), "b": side(c.b)} for c in diff.changes if c.what == "pod"],
        "summary": {"podgroups": diff.podgroups, "pods": diff.pods, "changed": len(diff.changes)},
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
