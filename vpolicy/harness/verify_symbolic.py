"""Proofs without search: structural (the policy runs no action, or no rule, that could break the
property) and symbolic (the victim rules over a symbolic world, `compile.encode_victims`, asked of Z3).

`prove_preempt_priority` asks whether the preemptable rules can choose a victim of equal or higher
priority; `prove_reclaim` whether the reclaimable rules can choose victims that, in some eviction
order, take a queue below its guarantee (`guarantee-kept`) or find it at or below its deserved share
(`reclaim-overused-only`). Unsat proves the property for every cluster in which a node has at most
`candidates` candidate victims; the search (`verify`) decides what these cannot. Checks of one session
are in `verify_props`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from vpolicy.compile import encode_victims as ev
from vpolicy.compile import ir
from vpolicy.engine.session import CompiledPolicy
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unknown, Unsat
from vpolicy.source import Span

# Which actions can break a property at all: without them it holds for every cluster (structural proof).
_NEEDS_ACTIONS = {"preempt-lower-priority-only": ("preempt",), "reclaim-overused-only": ("reclaim",),
                  "guarantee-kept": ("reclaim",), "no-preemption-cycle": ("preempt", "reclaim")}
_PROPERTY_SPAN = Span("<verify>", 0, 0)


@dataclass(frozen=True, slots=True)
class Symbolic:
    status: str  # proved | refuted | inconclusive | unknown
    detail: str
    ms: float
    witness: dict[str, Any] = field(default_factory=dict)


# Structural proofs and symbolic ones --------------------------------------------------------------------

def structural(name: str, policy: CompiledPolicy) -> str | None:
    """Why `name` holds for every cluster without search, or None."""
    needed = _NEEDS_ACTIONS.get(name)
    if needed and not set(needed) & set(policy.actions):
        return f"the policy runs no {' or '.join(needed)} action, so nothing is ever evicted that way"
    if name == "preempt-lower-priority-only" and not _victim_tiers(policy, "preemptable"):
        return "no preemptable rule is enabled: Volcano's Preemptable then allows no victims"
    if name in ("reclaim-overused-only", "guarantee-kept") and not _victim_tiers(policy, "reclaimable"):
        return "no reclaimable rule is enabled: Volcano's Reclaimable then allows no victims"
    return None


def _victim_tiers(policy: CompiledPolicy, callback: str) -> list[list[tuple[str, tuple[str, ...], ir.Term]]]:
    tiers = []
    for tier in policy.tiers:
        rules = [(r.label.rule_id, r.params, r.term) for p in tier for r in p.rules(callback)]
        if rules:
            tiers.append(rules)
    return tiers


def prove_preempt_priority(policy: CompiledPolicy, *, candidates: int, timeout_ms: int = 10_000) -> Symbolic:
    """Is every task the preemptable rules can choose of lower priority than the preemptor, for every
    candidate list of up to `candidates` tasks with any attribute values? Unsat of the negation = proved."""
    t0 = time.perf_counter()
    world = ev.World(candidates, helpers=helper_terms(policy), constants=constant_lets(policy))
    encoded = ev.encode(world, _victim_tiers(policy, "preemptable"))
    p_job = ir.Const(0)
    facts: list[ir.Term] = [ir.op("==", world.sym("p", "status", "task"), ir.Const(world.code("Pending")))]
    phase_b = ir.Sym("phase-b", "bool")  # preempt's second phase: victims from the preemptor's own job
    bound_running = [ir.Const(world.code("Bound")), ir.Const(world.code("Running"))]
    bad: list[ir.Term] = []
    for i in range(candidates):
        c = f"c{i}"
        present, job = world.present(i), world.job_of(c)
        same_queue = ir.op("==", _queue_index(world, job), world.queue_of_job(0))
        status = world.sym(c, "status", "task")
        facts += [
            ir.op("or", ir.op("not", present), ir.op("and", ir.op(">=", job, ir.Const(0)),
                                                       ir.op("<=", job, ir.Const(candidates)))),
            ir.op("or", ir.op("not", present), ir.op("or", *(ir.op("==", status, s) for s in bound_running))),
            ir.op("or", ir.op("not", present), world.sym(c, "preemptable", "task")),
            ir.op("or", ir.op("not", present), ir.op("not", world.sym("p", "best_effort", "task")),
                  world.sym(c, "best_effort", "task")),
            ir.op("or", ir.op("not", present), ir.cond(phase_b, ir.op("==", job, p_job),
                                                         ir.op("and", ir.op("!=", job, p_job), same_queue))),
        ]
        own = ir.op("<", world.sym(c, "priority", "task"), world.sym("p", "priority", "task"))
        other = ir.op("<", _job_attr(world, job, "priority"), world.sym("job0", "priority", "job"))
        ok = ir.cond(ir.op("==", job, p_job), own, other)
        bad.append(ir.op("and", encoded.victims[i], ir.op("not", ok)))
    for j in range(world.jobs):  # a job's ready count covers its running candidates
        members = ir.add(*(ir.cond(ir.op("and", world.present(i), ir.op("==", world.job_of(f"c{i}"), ir.Const(j))),
                                   ir.Const(1), ir.Const(0)) for i in range(candidates)))
        facts.append(ir.op(">=", world.sym(f"job{j}", "ready_count", "job"), members))
    label = ir.Label("verify.preempt-lower-priority-only", _PROPERTY_SPAN)
    constraints = [(label, t) for t in (*world.hard, *facts, ir.op("or", *bad))]
    backend = Z3Backend(timeout_ms=timeout_ms)
    result = backend.check(constraints)
    ms = round((time.perf_counter() - t0) * 1000, 3)
    scope = f"every candidate list of up to {candidates} tasks on a node, any priorities and counts"
    if isinstance(result, Unsat):
        return Symbolic("proved", f"symbolic (Z3): the preemptable rules, combined tier by tier as Volcano does, "
                                  f"choose only lower-priority victims for {scope} ({_how(encoded, world)})", ms)
    if isinstance(result, Sat) and not encoded.exact:
        # Is there a witness decided by a tier that, like every tier before it, was encoded exactly?
        result = backend.check([*constraints, (label, encoded.decided_exactly)])
        ms = round((time.perf_counter() - t0) * 1000, 3)
        if not isinstance(result, Sat):
            return Symbolic("inconclusive", f"symbolic (Z3): not proved; a witness rests on what was not encoded "
                                            f"exactly ({_how(encoded, world)})", ms)
    if isinstance(result, Sat):
        witness = _witness(result.model, candidates, world)
        return Symbolic("refuted", f"symbolic (Z3): the preemptable rules can choose a victim of equal or higher "
                                   f"priority: {_describe(witness)}", ms, witness)
    return Symbolic("unknown", f"symbolic (Z3): the solver gave up ({result.reason})", ms)


_RECLAIM_PROPERTIES = {
    "guarantee-kept": "never choose victims that take their queue below its guarantee",
    "reclaim-overused-only": "choose a victim only while its queue holds more than its deserved share, in "
                             "whatever order reclaim evicts them",
}


def prove_reclaim(policy: CompiledPolicy, name: str, *, candidates: int, timeout_ms: int = 10_000) -> Symbolic:
    """`guarantee-kept` or `reclaim-overused-only` for the reclaimable rules, over a candidate list of
    up to `candidates` tasks with any attributes and resources. Unsat of the negation = proved.

    Reclaim evicts the victims one by one (in victim order, until the reclaimer fits); each eviction
    lowers the victim queue's allocated by the victim's request, and allocated is read when the rules
    are asked, on this node, after every earlier eviction of the session. So the worst case of any
    order is covered by asking: with every chosen victim of the queue gone (guarantee), or every one
    but v (v's eviction, for deserved), is the queue below its guarantee / not above its share? What
    holds for a set of victims holds for any part of it, so a rule that keeps the property on its own
    keeps it for its whole tier (the tier's victims are a part of its answer): each tier's rules are
    tried alone first (few comparisons, so few dimensions), then the combination."""
    t0 = time.perf_counter()
    if name == "reclaim-overused-only" and any(p.module.params.get("hierarchy") is True
                                               for tier in policy.tiers for p in tier):
        return Symbolic("inconclusive", "symbolic (Z3): not tried; a hierarchy compares subtrees (search decides)", 0.0)
    tiers = _victim_tiers(policy, "reclaimable")
    keepers: list[str] = []
    for tier in tiers:
        keeper = next((rule for rule in tier if isinstance(
            _reclaim_query(policy, name, [[rule]], candidates, timeout_ms)[0], Unsat)), None)
        if keeper is None:
            break
        keepers.append(keeper[0])
    scope = (f"every candidate list of up to {candidates} tasks on a node, any requests, allocations, "
             "guarantees and deserved shares of any number of resources")
    what = _RECLAIM_PROPERTIES[name]
    if tiers and len(keepers) == len(tiers):
        ms = round((time.perf_counter() - t0) * 1000, 3)
        return Symbolic("proved", f"symbolic (Z3): {', '.join(keepers)} alone would {what}, for {scope}, and every "
                                  "tier that can answer has it (victims are a part of its answer)", ms)
    result, encoded, world = _reclaim_query(policy, name, tiers, candidates, timeout_ms)
    ms = round((time.perf_counter() - t0) * 1000, 3)
    if isinstance(result, Unsat):
        return Symbolic("proved", f"symbolic (Z3): the reclaimable rules, combined tier by tier as Volcano does, "
                                  f"{what}, for {scope} ({_how(encoded, world)})", ms)
    if isinstance(result, Sat):
        return Symbolic("inconclusive", f"symbolic (Z3): not proved that the reclaimable rules {what}; a symbolic "
                                        "world breaks it (search decides)", ms,
                        {"model": {k: v for k, v in sorted(result.model.items()) if not k.startswith("def")}})
    return Symbolic("unknown", f"symbolic (Z3): the solver gave up ({result.reason})", ms)


def prove_reclaim_guarantee(policy: CompiledPolicy, *, candidates: int, timeout_ms: int = 10_000) -> Symbolic:
    return prove_reclaim(policy, "guarantee-kept", candidates=candidates, timeout_ms=timeout_ms)


def _reclaim_query(policy: CompiledPolicy, name: str, tiers: list[list[tuple[str, tuple[str, ...], ir.Term]]],
                   candidates: int, timeout_ms: int) -> tuple[Any, ev.Encoded, ev.World]:
    """Encode `tiers` and ask for victims that break `name`. Vectors get one dimension per comparison
    the rules make, plus one (the property's): enough for every size."""
    helpers, constants = helper_terms(policy), constant_lets(policy)
    lets = {(p.module.name, n): term for tier in policy.tiers for p in tier for n, term, _fn in p.module.session_lets}
    deserved = next((m for (m, n) in lets if n == "deserved"), None)
    if name == "reclaim-overused-only" and deserved is None:
        return Unknown("no session map 'deserved' to compare with"), ev.Encoded((), False, ir.Const(False), (), ()), \
            ev.World(candidates)
    world = ev.World(candidates, helpers=helpers, constants=constants, session_terms=lets)
    encoded = ev.encode(world, tiers)
    if world.comparisons + 1 > len(world.dims):
        dims = ("cpu", "memory", *(f"r{i}" for i in range(2, world.comparisons + 1)))
        world = ev.World(candidates, helpers=helpers, constants=constants, session_terms=lets, dims=dims)
        encoded = ev.encode(world, tiers)
    running, pending = ir.Const(world.code("Running")), ir.Const(world.code("Pending"))
    facts: list[ir.Term] = [ir.op("==", world.sym("p", "status", "task"), pending)]
    reclaimer_queue = world.queue_of_job(0)
    for i in range(candidates):
        c, present, job = f"c{i}", world.present(i), world.job_of(f"c{i}")
        queue = _queue_index(world, job)
        facts += [ir.op("or", ir.op("not", present), term) for term in (
            ir.op("and", ir.op(">=", job, ir.Const(1)), ir.op("<=", job, ir.Const(candidates))),
            ir.op("==", world.sym(c, "status", "task"), running),
            world.sym(c, "preemptable", "task"),
            ir.op("!=", queue, reclaimer_queue),
            _slot_attr(world, queue, "reclaimable"),
        )]
    for j in range(world.jobs):
        members = ir.add(*(ir.cond(ir.op("and", world.present(i), ir.op("==", world.job_of(f"c{i}"), ir.Const(j))),
                                   ir.Const(1), ir.Const(0)) for i in range(candidates)))
        facts.append(ir.op(">=", world.sym(f"job{j}", "ready_count", "job"), members))
        facts.append(ir.op("and", ir.op(">=", world.queue_of_job(j), ir.Const(0)),
                           ir.op("<=", world.queue_of_job(j), ir.Const(candidates))))
    bad: list[ir.Term] = []
    for q in range(world.jobs):  # queue slots
        allocated = world.vec(f"queue{q}", "allocated")
        mine = [ir.op("and", world.present(i), ir.op("==", _queue_index(world, world.job_of(f"c{i}")), ir.Const(q)))
                for i in range(candidates)]
        chosen = [ir.op("and", m, v) for m, v in zip(mine, encoded.victims)]
        request = [world.vec(f"c{i}", "resreq") for i in range(candidates)]
        taken = []
        for d in range(len(world.dims)):
            held = ir.add(*(ir.cond(m, request[i].dims[d], ir.Const(0)) for i, m in enumerate(mine)))
            facts.append(ir.op(">=", allocated.dims[d], held))  # running candidates count in allocated
            taken.append(ir.add(*(ir.cond(x, request[i].dims[d], ir.Const(0)) for i, x in enumerate(chosen))))
        if name == "guarantee-kept":
            guarantee = world.vec(f"queue{q}", "guarantee")
            bad += [ir.op("and", ir.op("or", *chosen), ir.op(">", guarantee.dims[d], ir.Const(0)),
                          ir.op("<", ir.op("-", allocated.dims[d], taken[d]), guarantee.dims[d]))
                    for d in range(len(world.dims))]
        else:  # victim i goes last: its queue holds allocated - taken + its request, within deserved?
            assert deserved is not None
            share = world.vec(f"queue{q}", ev.map_name(world, deserved, "deserved"))
            bad += [ir.op("and", x, *(ir.op("<=", ir.op("+", ir.op("-", allocated.dims[d], taken[d]),
                                                          request[i].dims[d]), share.dims[d])
                                       for d in range(len(world.dims))))
                    for i, x in enumerate(chosen)]
    label = ir.Label(f"verify.{name}", _PROPERTY_SPAN)
    constraints = [(label, t) for t in (*world.hard, *facts, ir.op("or", *bad))]
    return Z3Backend(timeout_ms=timeout_ms).check(constraints), encoded, world


def _how(encoded: ev.Encoded, world: ev.World) -> str:
    """How exactly the rules were encoded, naming what was not: rules taken as any subset, session maps
    taken as any value, doubles that may round taken within their rounding error."""
    parts = ([f"{', '.join(encoded.abstracted)} taken as any subset"] if encoded.abstracted else []) + \
        ([f"{', '.join(sorted(world.unknown_maps))} taken as any value"] if world.unknown_maps else []) + \
        ([f"the doubles of {', '.join(encoded.approximated)} taken within their rounding error"]
         if world.doubles.roundings else [])
    return "rules encoded exactly" if not parts else "rules encoded with " + "; ".join(parts)


def _slot_attr(world: ev.World, index: ir.Term, name: str) -> ir.Term:
    out: ir.Term = world.sym(f"queue{world.jobs - 1}", name, "queue")
    for q in range(world.jobs - 2, -1, -1):
        out = ir.cond(ir.op("==", index, ir.Const(q)), world.sym(f"queue{q}", name, "queue"), out)
    return out


def constant_lets(policy: CompiledPolicy) -> dict[tuple[str, str], ir.Term]:
    """Session lets whose value is a literal (a list of class names, a number): the same in every cluster."""
    out: dict[tuple[str, str], ir.Term] = {}
    for tier in policy.tiers:
        for plugin in tier:
            for name, term, _fn in plugin.module.session_lets:
                if _literal(term):
                    out[(plugin.module.name, name)] = term
    return out


def _literal(t: ir.Term) -> bool:
    if isinstance(t, ir.Const):
        return True
    if isinstance(t, ir.ListOf):
        return all(_literal(x) for x in t.items)
    return False


def helper_terms(policy: CompiledPolicy) -> dict[tuple[str, str], tuple[tuple[str, ...], ir.Term]]:
    """Every helper function of the policy's modules as (parameter names, body term)."""
    return {(plugin.module.name, name): fn for tier in policy.tiers for plugin in tier
            for name, fn in plugin.module.functions.items()}


def _queue_index(world: ev.World, job: ir.Term) -> ir.Term:
    out: ir.Term = world.queue_of_job(world.jobs - 1)
    for j in range(world.jobs - 2, -1, -1):
        out = ir.cond(ir.op("==", job, ir.Const(j)), world.queue_of_job(j), out)
    return out


def _job_attr(world: ev.World, job: ir.Term, name: str) -> ir.Term:
    out: ir.Term = world.sym(f"job{world.jobs - 1}", name, "job")
    for j in range(world.jobs - 2, -1, -1):
        out = ir.cond(ir.op("==", job, ir.Const(j)), world.sym(f"job{j}", name, "job"), out)
    return out


def _witness(model: dict[str, Any], candidates: int, world: ev.World) -> dict[str, Any]:
    out: dict[str, Any] = {"preemptor": {"priority": model.get("p.priority"),
                                         "job_priority": model.get("job0.priority")}}
    for i in range(candidates):
        if model.get(f"c{i}.present"):
            j = model.get(f"c{i}.job#", 0)
            out[f"candidate {i}"] = {"job": f"job{j}", "priority": model.get(f"c{i}.priority"),
                                     "job_priority": model.get(f"job{j}.priority"),
                                     "job_ready": model.get(f"job{j}.ready_count"),
                                     "job_min_available": model.get(f"job{j}.min_available")}
    return out


def _describe(witness: dict[str, Any]) -> str:
    return "; ".join(f"{k}: " + ", ".join(f"{a} {v}" for a, v in attrs.items() if v is not None)
                     for k, attrs in witness.items())
