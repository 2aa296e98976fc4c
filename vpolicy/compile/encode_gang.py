"""Gang feasibility as an aggregated integer problem: can `min_tasks` of a job's pending tasks be placed?

Volcano's allocate is greedy; it can fail a gang that fits. Whether one exists is a question for the
solver, asked without one variable per (pod, node): interchangeable nodes (same free resources, same
predicate answers) form a class with a count, interchangeable tasks (same request, same predicate
answers) another, and the unknowns are `x[c,k]` = tasks of class c placed on nodes of class k.

Per node class the constraints are exact for one task class (at most `count_k * fit(free_k, req_c)`
tasks) and a sound relaxation for several (the class's summed capacity): an `Unsat` answer therefore
proves that no placement exists; a `Sat` answer is a candidate the caller verifies exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from vpolicy.compile import ir
from vpolicy.model.resources import Resources


@dataclass(frozen=True, slots=True)
class TaskClass:
    count: int
    request: Resources
    allowed: frozenset[int]  # indices of node classes that pass the predicates


@dataclass(frozen=True, slots=True)
class NodeClass:
    count: int
    free: Resources  # FutureIdle of each node in the class


def per_node_fit(free: Mapping[str, int], request: Mapping[str, int]) -> int:
    """How many copies of `request` one node with `free` holds (exact, integer)."""
    fits = [free.get(k, 0) // v for k, v in request.items() if v > 0]
    return max(0, min(fits)) if fits else 1 << 30


def encode(job: str, tasks: list[TaskClass], nodes: list[NodeClass], min_tasks: int, *,
           gang_label: ir.Label, capacity_label: ir.Label, predicate_label: ir.Label) -> list[tuple[ir.Label, ir.Term]]:
    out: list[tuple[ir.Label, ir.Term]] = []
    placed: list[ir.Term] = []
    per_node: dict[int, list[tuple[int, ir.Term]]] = {}
    for c, tc in enumerate(tasks):
        row: list[ir.Term] = []
        for k, nc in enumerate(nodes):
            x = ir.Sym(f"{job}/x[{c},{k}]")
            out.append((capacity_label, ir.op(">=", x, ir.Const(0))))
            if k not in tc.allowed:
                out.append((predicate_label, ir.op("==", x, ir.Const(0))))
                continue
            out.append((capacity_label, ir.op("<=", x, ir.Const(nc.count * per_node_fit(nc.free, tc.request)))))
            row.append(x)
            per_node.setdefault(k, []).append((c, x))
        out.append((gang_label, ir.op("<=", ir.add(*row), ir.Const(tc.count))))
        placed.extend(row)
    for k, entries in per_node.items():
        nc = nodes[k]
        if len(entries) < 2:
            continue
        dims = set().union(*(tasks[c].request.keys() for c, _ in entries))
        for d in sorted(dims):
            load = ir.add(*(ir.mul(tasks[c].request.get(d, 0), x) for c, x in entries))
            out.append((capacity_label, ir.op("<=", load, ir.Const(nc.count * nc.free.get(d, 0)))))
    out.append((gang_label, ir.op(">=", ir.add(*placed), ir.Const(min_tasks))))
    return out
