"""Victim rules' answers on a node, shared by every preemptor, when the rules do not read the preemptor.

reclaim asks the policy's `reclaimable` rules on every node it walks, for every task it reclaims for,
in node order, as Volcano does: once a queue it takes from is back at its deserved share, each later
reclaimer passes every node holding that queue's tasks, and the rules refuse them all again. Volcano's
default reclaim rules (gang, conformance, proportion) read nothing of the reclaimer: their answer
depends on the node's candidates, their jobs and their queues alone. `preemptor_free` reads that off
the rules' terms when an action starts; `VictimMemo` then keeps each node's answer until the node
changes (its version in the node arrays) or a task of one of the candidates' queues changes status
(`QueueInfo.changes`, which covers every job and queue attribute a rule can read of them).

Rules that read only the preemptor's request (proportion's reclaim rule skips the victims of a queue
holding less than the reclaimer asks: Volcano's `allocated.LessPartly(reclaimer.Resreq)`) keep one
answer per node for one request: a reclaimer asking the same reuses it, another replaces it.
Rules that read more of the preemptor (preempt's priority and drf rules, capacity's requested
dimensions), or anything this cannot follow (a queue's parent or children, other cluster state, a
built-in not known to read only its arguments), are always asked: the answer is computed for every
node, as before.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from vpolicy.compile import ir
from vpolicy.compile.lower import CompiledRule

# Attributes of a candidate, of its job and of its queue whose values change only with a status change
# of a task on the candidate's node (the node's version) or of a task of one of the queue's jobs
# (`QueueInfo.changes`). A rule reading any other name is always asked.
FOLLOWED = frozenset({
    # task
    "job", "queue", "resreq", "priority", "status", "status_name", "preemptable", "best_effort", "namespace",
    "name", "uid", "key", "role", "labels", "annotations", "priority_class_name", "node_name", "order_index",
    # job
    "allocated", "ready_count", "min_available", "pipelined_count", "pending_count", "pending_best_effort_count",
    "task_count", "valid_task_count", "min_resources", "has_min_resources", "creation", "min_task_member",
    # queue
    "deserved", "has_deserved", "capability", "has_capability", "guarantee", "weight", "reclaimable", "open",
    "state", "elastic",
})
# Built-ins whose answer depends on their arguments alone (no session or cluster state behind them).
PURE = frozenset({
    "share", "abs", "le", "lt", "get", "requested_dims", "dims", "without", "max", "min", "len", "positive",
    "cap_by", "le_on", "contains", "is_zero", "floor", "ceil", "clamp", "sum", "round",
})
# `cluster.<name>` values fixed for a session
FIXED_CLUSTER = frozenset({"total"})
# What of the preemptor a rule may read and still have its answers kept: they are kept per value of it
KEYED_PREEMPTOR = frozenset({"resreq"})


class _Refused(Exception):
    """The rules read the preemptor, or something reuse cannot follow."""


def preemptor_free(rules: list[CompiledRule], functions: dict[str, dict[str, tuple[tuple[str, ...], ir.Term]]]) -> bool:
    """Whether the answer of these victim rules depends only on the candidates, their jobs and queues,
    the session's constants and the cluster's fixed total (never on the preemptor). `functions`:
    module name -> its helper functions (`CompiledModule.functions`), followed into."""
    return preemptor_reads(rules, functions) == frozenset()


def preemptor_reads(rules: list[CompiledRule],
                    functions: dict[str, dict[str, tuple[tuple[str, ...], ir.Term]]]) -> frozenset[str] | None:
    """What of the preemptor these victim rules read (attributes in KEYED_PREEMPTOR, each read as
    `preemptor.<name>`), when besides it their answer depends only on what `preemptor_free` allows;
    None when they read anything else of it, or anything reuse cannot follow."""
    read: set[str] = set()
    try:
        for rule in rules:
            if len(rule.params) != 2:
                raise _Refused
            walker = _Walker(rule.params[0], rule.params[1], functions)
            walker.walk(rule.term, set())
            read |= walker.preemptor_attrs
    except _Refused:
        return None
    return frozenset(read)


def attribute_chain(t: ir.Term) -> tuple[ir.Term, tuple[str, ...]]:
    """The root of an attribute chain and the names along it: `c.job.queue` -> (c, ("job", "queue"))."""
    names: list[str] = []
    while isinstance(t, ir.GetAttr):
        names.append(t.name)
        t = t.obj
    return t, tuple(reversed(names))


class _Walker:
    """Refuses a term that reads the preemptor or anything but candidate-side attributes in `FOLLOWED`."""

    def __init__(self, preemptor: str, candidates: str, functions: dict[str, dict[str, tuple[tuple[str, ...], ir.Term]]]):
        self.p, self.cs, self.functions = preemptor, candidates, functions
        self.inside: set[tuple[str, str]] = set()
        self.preemptor_attrs: set[str] = set()  # `preemptor.<name>` read, each in KEYED_PREEMPTOR

    def walk(self, t: Any, bound: set[str]) -> None:
        """`bound`: names a `let`, select, aggregate or helper parameter binds inside the rule."""
        if isinstance(t, ir.Var):
            if t.name not in bound and t.name != self.cs:
                raise _Refused  # the preemptor, `cluster` whole, `$now` or another free name
            return
        if isinstance(t, (ir.Const, ir.SessionRef)):
            return
        if isinstance(t, ir.GetAttr):
            root, path = attribute_chain(t)
            if isinstance(root, ir.Var) and root.name == "cluster" and "cluster" not in bound:
                if path[0] not in FIXED_CLUSTER:
                    raise _Refused
                return
            if isinstance(root, ir.Var) and root.name == self.p and root.name not in bound:
                if len(path) != 1 or path[0] not in KEYED_PREEMPTOR:
                    raise _Refused
                self.preemptor_attrs.add(path[0])
                return
            if not all(name in FOLLOWED for name in path):
                raise _Refused
            self.walk(root, bound)
            return
        if isinstance(t, ir.Apply):
            if t.func not in PURE:
                raise _Refused
            self.walk(t.args, bound)
            return
        if isinstance(t, ir.CallUser):
            self.walk(t.args, bound)
            key = (t.module, t.func)
            found = self.functions.get(t.module, {}).get(t.func)
            if found is None or key in self.inside:
                raise _Refused  # unknown, or recursive: not followed
            self.inside.add(key)
            try:
                self.walk(found[1], set(found[0]))  # a helper sees only its own parameters
            finally:
                self.inside.discard(key)
            return
        if isinstance(t, ir.Bind):
            self.walk(t.value, bound)
            self.walk(t.body, bound | {t.name})
            return
        if isinstance(t, (ir.Agg, ir.Select)):
            self.walk(t.source, bound)
            inner = bound | {t.var} | ({t.state} if isinstance(t, ir.Select) and t.state else set())
            self.walk((t.where, t.body) if isinstance(t, ir.Agg) else (t.group_key, t.group_start, t.when, t.then),
                      inner)
            return
        if isinstance(t, tuple):
            for x in t:
                self.walk(x, bound)
            return
        if t is None or isinstance(t, str):
            return
        if isinstance(t, ir.Sym) or not dataclasses.is_dataclass(t):
            raise _Refused
        for f in dataclasses.fields(t):
            self.walk(getattr(t, f.name), bound)


class VictimMemo:
    """One callback's answers per node, for rules that read of the preemptor at most `reads`
    (`preemptor_reads`): each answer is kept with those values and serves preemptors with the same.
    An action makes one when it starts (`ActionContext.victims_on`). Change counts only grow, so a
    node keeps only answers for its state now."""

    def __init__(self, reads: frozenset[str] = frozenset()) -> None:
        self.reads = tuple(sorted(reads))
        # node name -> [node version, the candidates list, its queues,
        #               {the preemptor's values of `reads`: [the queues' change counts, the answer]}]
        self.nodes: dict[str, list[Any]] = {}
        self._asked: tuple[str, tuple[Any, ...]] = ("", ())  # the node and key of the last `get`

    def get(self, node_name: str, version: int, candidates: list[Any], preemptor: Any = None) -> Any:
        """The answer kept for the node and these candidates (the list the action keeps for the node's
        version) and a preemptor alike in what the rules read of it, or None when it is not known for
        the state now."""
        key = tuple(getattr(preemptor, a) for a in self.reads)
        self._asked = (node_name, key)
        kept = self.nodes.get(node_name)
        if kept is None or kept[0] != version or kept[1] is not candidates:
            queues = tuple(dict.fromkeys(c.job.queue for c in candidates if c.job is not None))
            self.nodes[node_name] = [version, candidates, queues, {}]
            return None
        answer = kept[3].get(key)
        if answer is None or answer[0] != [q.changes for q in kept[2]]:
            return None
        return answer[1]

    def keep(self, node_name: str, answer: Any) -> None:
        """The answer for the node, as asked by the `get` that just found none."""
        kept = self.nodes[node_name]
        asked_node, key = self._asked
        assert asked_node == node_name, "keep follows the get that found nothing"
        kept[3][key] = [[q.changes for q in kept[2]], answer]
