"""Why a gang does not fit, as labelled groups of integer constraints: one group per rule instance.

`explain` asks the solver which rules conflict for a pending job. The question is the aggregated gang
problem of `encode_gang` (unknowns `x[c,k]`: tasks of task class c placed on nodes of node class k),
but every constraint is grouped under the rule instance that imposes it, so an unsat core names rules
with their numbers rather than anonymous inequalities:

- `Exclusion`: one predicate rule fails for some task classes on one node class (`x[c,k] == 0`);
- node capacity, one group per node class (exact per task class, a sound relaxation across classes);
- `Limit`: at most `bound` tasks of some classes in total (a queue's allocatable check with its numbers,
  an overused queue, a job that is not enqueued or not valid: bound 0);
- `Need`: at least `at_least` tasks of some classes (gang minAvailable, a role's minTaskMember);
- the job's own pending tasks per class (`x[c,*] <= count`).

The values the groups carry (which rule fails where, how many tasks a queue still takes) are computed by
the caller with the exact evaluator; this module only builds terms, and never imports the solver.
"""
from __future__ import annotations

from dataclasses import dataclass

from vpolicy.compile import ir
from vpolicy.compile.encode_gang import per_node_fit
from vpolicy.model.resources import Resources


@dataclass(frozen=True, slots=True)
class TaskClass:
    """Interchangeable pending tasks of one job: same role, request and predicate answers."""

    count: int
    request: Resources
    role: str = ""


@dataclass(frozen=True, slots=True)
class NodeClass:
    """Interchangeable nodes: same free resources (FutureIdle) and predicate answers."""

    count: int
    free: Resources
    label: ir.Label  # the capacity group's label (its text names the nodes and their free resources)


@dataclass(frozen=True, slots=True)
class Exclusion:
    label: ir.Label
    node_class: int
    task_classes: frozenset[int]


@dataclass(frozen=True, slots=True)
class Limit:
    label: ir.Label
    bound: int
    task_classes: frozenset[int] | None = None  # None: every class


@dataclass(frozen=True, slots=True)
class Need:
    label: ir.Label
    at_least: int
    task_classes: frozenset[int] | None = None


@dataclass(frozen=True, slots=True)
class Encoding:
    groups: tuple[tuple[ir.Label, tuple[ir.Term, ...]], ...]
    hard: tuple[ir.Term, ...]  # x >= 0: the domain, never part of a core


_PREFIX = "explain"


def read_placement(model: dict[str, object], tasks: int, nodes: int) -> dict[tuple[int, int], int]:
    """`x[c,k]` read back from a solver model (a missing unknown is 0)."""
    out = {}
    for c in range(tasks):
        for k in range(nodes):
            value = model.get(var(_PREFIX, c, k), 0)
            out[c, k] = int(value) if isinstance(value, (int, float)) else 0
    return out


def var(prefix: str, c: int, k: int) -> str:
    return f"{prefix}/x[{c},{k}]"


def encode(tasks: list[TaskClass], nodes: list[NodeClass], *, exclusions: list[Exclusion],
           limits: list[Limit], needs: list[Need], tasks_label: ir.Label) -> Encoding:
    """All groups for one job; `tasks_label` labels the job's own task counts."""
    x: dict[tuple[int, int], ir.Term] = {(c, k): ir.Sym(var(_PREFIX, c, k))
                                         for c in range(len(tasks)) for k in range(len(nodes))}
    hard = tuple(ir.op(">=", v, ir.Const(0)) for v in x.values())
    groups: list[tuple[ir.Label, tuple[ir.Term, ...]]] = []
    for e in exclusions:
        groups.append((e.label, tuple(ir.op("==", x[c, e.node_class], ir.Const(0)) for c in sorted(e.task_classes))))
    for k, nc in enumerate(nodes):
        terms: list[ir.Term] = []
        for c, tc in enumerate(tasks):
            terms.append(ir.op("<=", x[c, k], ir.Const(nc.count * per_node_fit(nc.free, tc.request))))
        if len(tasks) > 1:
            dims = sorted(set().union(*(tc.request.keys() for tc in tasks)))
            for d in dims:
                load = ir.add(*(ir.mul(tc.request.get(d, 0), x[c, k]) for c, tc in enumerate(tasks)))
                if not isinstance(load, ir.Const):
                    terms.append(ir.op("<=", load, ir.Const(nc.count * nc.free.get(d, 0))))
        groups.append((nc.label, tuple(terms)))
    counts = tuple(ir.op("<=", _row(x, c, len(nodes)), ir.Const(tc.count)) for c, tc in enumerate(tasks))
    groups.append((tasks_label, counts))
    for lim in limits:
        groups.append((lim.label, (ir.op("<=", _sum(x, lim.task_classes, len(tasks), len(nodes)), ir.Const(lim.bound)),)))
    for need in needs:
        groups.append((need.label, (ir.op(">=", _sum(x, need.task_classes, len(tasks), len(nodes)),
                                           ir.Const(need.at_least)),)))
    return Encoding(tuple(groups), hard)


def _row(x: dict[tuple[int, int], ir.Term], c: int, nodes: int) -> ir.Term:
    return ir.add(*(x[c, k] for k in range(nodes)))


def _sum(x: dict[tuple[int, int], ir.Term], classes: frozenset[int] | None, tasks: int, nodes: int) -> ir.Term:
    chosen = range(tasks) if classes is None else sorted(classes)
    return ir.add(*(x[c, k] for c in chosen for k in range(nodes)))
