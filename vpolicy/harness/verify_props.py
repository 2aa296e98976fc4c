"""The properties `verify` knows: what each one says, how it is proved, and how one session is judged.

Built-in properties (usable with any policy or conf):

| name | statement |
|---|---|
| node-capacity | no node holds more than its allocatable (binds fit Idle, pipelined fit FutureIdle) |
| gang-all-or-nothing | a podgroup gets binds (or pipelined pods) only together with enough to reach minMember |
| queue-capability | no queue grows above its capability in a session |
| preempt-lower-priority-only | every preempt victim has lower priority than its preemptor: job priority across jobs, task priority within one job |
| reclaim-overused-only | every reclaim victim's queue held more than its deserved share just before the eviction |
| guarantee-kept | reclaim never takes a queue below its guarantee |
| no-preemption-cycle | no job (or queue, or queue subtree) evicts for another that evicts for it, within a session or in the next one |
| pending-has-reason | every pod left pending has a reason |

Each session is judged from the decision document (with `engine.validate`, the independent checker),
the evictions as recorded with their numbers (`explain_record`), and, for cycles, a second session on
the cluster the first one leaves. Proof methods other than search live here too: structural (the policy
runs no action that could break the property) and symbolic (`compile.encode_victims` + Z3).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable

from vpolicy.compile import encode_victims as ev
from vpolicy.compile import ir, lower
from vpolicy.engine import validate
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import CompiledPolicy
from vpolicy.engine.state import SessionState
from vpolicy.harness import explain_record, explain_render
from vpolicy.lang import load_module
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unknown, Unsat
from vpolicy.source import Span

BUILTIN = ("node-capacity", "gang-all-or-nothing", "queue-capability", "preempt-lower-priority-only",
           "reclaim-overused-only", "guarantee-kept", "no-preemption-cycle", "pending-has-reason")
_VALIDATOR_PREFIX = {"node-capacity": ("node.",), "gang-all-or-nothing": ("gang.",),
                     "queue-capability": ("queue.",), "pending-has-reason": ("pending.",)}
# Which actions can break a property at all: without them it holds for every cluster (structural proof).
_NEEDS_ACTIONS = {"preempt-lower-priority-only": ("preempt",), "reclaim-overused-only": ("reclaim",),
                  "guarantee-kept": ("reclaim",), "no-preemption-cycle": ("preempt", "reclaim")}
_PROPERTY_SPAN = Span("<verify>", 0, 0)


@dataclass(slots=True)
class Observed:
    """One world and what the policy did with it."""

    snapshot: snap.ClusterSnapshot
    policy: CompiledPolicy
    first: explain_record.Recorded
    now: float = 0.0
    _doc: dict[str, Any] | None = None
    _validated: list[validate.Violation] | None = None
    _second: explain_record.Recorded | None = None
    _next: snap.ClusterSnapshot | None = None

    @property
    def doc(self) -> dict[str, Any]:
        if self._doc is None:
            self._doc = self.first.result.decisions.to_document()
        return self._doc

    def violations(self) -> list[validate.Violation]:
        if self._validated is None:
            self._validated = validate.validate(self.snapshot, self.doc, conf_actions=self.policy.actions)
        return self._validated

    def opening_env(self) -> dict[str, Any]:
        """The rules' environment over the cluster as the session opens (before any action)."""
        return Runtime(self.policy.tiers, SessionState(self.snapshot), now=self.now).env

    def second(self) -> explain_record.Recorded:
        """The next session, on the cluster this one leaves (evicted pods recreated Pending, bound pods
        Running, pipelined pods Pending with their node nominated)."""
        if self._second is None:
            self._next = advance(self.snapshot, self.doc)
            self._second = explain_record.run_recorded(self._next, self.policy, now=self.now + 1, watch=frozenset())
        return self._second


@dataclass(frozen=True, slots=True)
class Symbolic:
    status: str  # proved | refuted | inconclusive | unknown
    detail: str
    ms: float
    witness: dict[str, Any] = field(default_factory=dict)


Check = Callable[[Observed], list[str]]


# Structural and symbolic proofs --------------------------------------------------------------------

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
        how = "exactly" if encoded.exact else f"with {', '.join(encoded.abstracted)} taken as any subset"
        return Symbolic("proved", f"symbolic (Z3): the preemptable rules, combined tier by tier as Volcano does, "
                                  f"choose only lower-priority victims for {scope} (rules encoded {how})", ms)
    if isinstance(result, Sat) and not encoded.exact:
        # Is there a witness decided by a tier that, like every tier before it, was encoded exactly?
        result = backend.check([*constraints, (label, encoded.decided_exactly)])
        ms = round((time.perf_counter() - t0) * 1000, 3)
        if not isinstance(result, Sat):
            return Symbolic("inconclusive", f"symbolic (Z3): not proved; {', '.join(encoded.abstracted)} could not be "
                                            "encoded (taken as any subset)", ms)
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
    parts = ([f"{', '.join(encoded.abstracted)} taken as any subset"] if encoded.abstracted else []) + \
        ([f"{', '.join(sorted(world.unknown_maps))} taken as any value"] if world.unknown_maps else [])
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
    out: dict[tuple[str, str], tuple[tuple[str, ...], ir.Term]] = {}
    for tier in policy.tiers:
        for plugin in tier:
            module = plugin.module
            params = tuple(sorted((k, v) for k, v in module.params.items() if _hashable(v)))
            for name, (names, term) in _module_helpers(module.file, params).items():
                out[(module.name, name)] = (names, term)
    return out


@lru_cache(maxsize=None)
def _module_helpers(file: str, params: tuple[tuple[str, Any], ...]) -> dict[str, tuple[tuple[str, ...], ir.Term]]:
    """`CompiledModule` keeps no helper bodies; lower the module again with the same parameters
    (reason for the private use: the lowering of helpers is not exposed)."""
    lowerer = lower._Lowerer(load_module(file), dict(params))
    lowerer.run()
    out = {}
    for name, decl in lowerer.functions.items():
        scope = {b.name: f"{name}.{b.name}" for b in decl.params or ()}
        out[name] = (tuple(scope.values()), lowerer.lower(decl.value, scope))
    return out


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


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
    out: dict[str, Any] = {"preemptor": {"priority": model.get("p.priority"), "job_priority": model.get("job0.priority")}}
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


# Checks on one session --------------------------------------------------------------------------------

def builtin_check(name: str) -> Check:
    if name in _VALIDATOR_PREFIX:
        prefixes = _VALIDATOR_PREFIX[name]
        return lambda o: [str(v) for v in o.violations() if v.code.startswith(prefixes)]
    return {"preempt-lower-priority-only": _preempt_priority, "reclaim-overused-only": _reclaim_overused,
            "guarantee-kept": _guarantee_kept, "no-preemption-cycle": _cycles}[name]


def _pods(o: Observed) -> dict[str, snap.Pod]:
    return {p.key: p for p in o.snapshot.pods}


def _podgroups(o: Observed) -> dict[str, snap.PodGroup]:
    return {pg.key: pg for pg in o.snapshot.podgroups}


def _preempt_priority(o: Observed) -> list[str]:
    if not any(e.action == "preempt" for e in o.first.evictions):
        return []
    pods, groups = _pods(o), _podgroups(o)
    out = []
    for e in o.first.evictions:
        if e.action != "preempt":
            continue
        victim = pods[e.pod]
        vg, pg = groups.get(f"{victim.namespace}/{victim.group}"), groups.get(e.for_job)
        if vg is None or pg is None:
            continue
        if vg.key == pg.key:
            preemptors = [pods[k] for k, n in o.doc["pipelined"].items()
                          if n == victim.node_name and k in pods and pods[k].group == pg.name
                          and pods[k].namespace == pg.namespace]
            top = max((p.priority for p in preemptors), default=None)
            if top is not None and victim.priority >= top:
                out.append(f"{e.pod} (task priority {victim.priority}) is preempted inside {pg.key} for a task of "
                           f"priority {top}")
        else:
            vp, pp = o.snapshot.job_priority(vg), o.snapshot.job_priority(pg)
            if vp >= pp:
                out.append(f"{e.pod} of {vg.key} (job priority {vp}) is preempted for {pg.key} (job priority {pp})")
    return out


def deserved_shares(o: Observed) -> dict[str, Resources] | None:
    """Each queue's deserved share as the policy computes it (proportion's `deserved`, capacity's
    `deserved_of`), or None when the policy has neither."""
    rt = o.first.result.context.runtime
    for tier in o.policy.tiers:
        for plugin in tier:
            module = plugin.module
            table = rt.env["$session"].get((module.name, "deserved"))
            if isinstance(table, dict):
                return {q.name: v for q, v in table.items()}
            helpers = explain_render._helpers(module.file, tuple(sorted(module.params.items())))
            fn = helpers.get("deserved_of")
            if fn is not None:
                env = {k: rt.env[k] for k in ("cluster", "$session", "$now")}
                return {q.name: fn({**env, "deserved_of.q": q}) for q in o.first.result.state.queues.values()}
    return None


def _hierarchical(o: Observed) -> bool:
    return any(plugin.module.params.get("hierarchy") is True for tier in o.policy.tiers for plugin in tier)


def _reclaim_overused(o: Observed) -> list[str]:
    reclaims = [e for e in o.first.evictions if e.action == "reclaim"]
    if not reclaims:
        return []
    shares = deserved_shares(o)
    if shares is None:
        return []
    tree = _hierarchical(o)
    out = []
    for e in reclaims:
        deserved = shares.get(e.queue)
        held = e.tree_allocated_before if tree else e.allocated_before
        if deserved is not None and held.le(deserved):
            dims = sorted((set(held) | set(deserved)) - {"pods"})
            out.append(f"{e.pod} is reclaimed from queue {e.queue}, which held {explain_render.resources(held, dims)} "
                       f"within its deserved {explain_render.resources(deserved, dims)}")
    return out


def _guarantee_kept(o: Observed) -> list[str]:
    if not any(e.action == "reclaim" for e in o.first.evictions):
        return []
    pods = _pods(o)
    queues = {q.name: q for q in o.snapshot.queues}
    out = []
    for e in o.first.evictions:
        queue = queues.get(e.queue)
        if e.action != "reclaim" or queue is None or not queue.guarantee:
            continue
        after = e.allocated_before - pods[e.pod].resreq
        below = [d for d, v in queue.guarantee.items() if v > 0 and after.get(d, 0) < v]
        if below:
            out.append(f"{e.pod} is reclaimed from queue {e.queue}, leaving "
                       f"{explain_render.resources(after, below)} below its guarantee "
                       f"{explain_render.resources(queue.guarantee, below)}")
    return out


def _cycles(o: Observed) -> list[str]:
    if not o.first.evictions:  # no edge in the first session, so none can close a cycle in the second
        return []
    edges = _eviction_edges(o, o.first)
    if o.first.evictions:
        edges += _eviction_edges(o, o.second(), session=2)
    graph: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for a, b, text in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            why.setdefault((a, b), text)
    cycle = _find_cycle(graph)
    if not cycle:
        return []
    steps = [why[(cycle[i], cycle[i + 1])] for i in range(len(cycle) - 1)]
    return ["preemption cycle " + " -> ".join(cycle) + ": " + "; ".join(steps)]


def _eviction_edges(o: Observed, rec: explain_record.Recorded, session: int = 1) -> list[tuple[str, str, str]]:
    """(evictor, evicted, why) for jobs, queues and, in a hierarchy, the subtrees below their meeting point."""
    pods = {p.key: p for p in (o._next or o.snapshot).pods} if session == 2 else _pods(o)
    groups = _podgroups(o)
    parents = {q.name: q.parent or (snap.ROOT_QUEUE if q.name != snap.ROOT_QUEUE else "") for q in o.snapshot.queues}
    out = []
    for e in rec.evictions:
        victim = pods.get(e.pod)
        if victim is None:
            continue
        vjob = f"{victim.namespace}/{victim.group}"
        text = f"session {session}: {e.action} of {e.pod} ({vjob}) for {e.for_job}"
        out.append((f"job {e.for_job}", f"job {vjob}", text))
        a, b = groups.get(e.for_job), groups.get(vjob)
        if a is not None and b is not None and a.queue != b.queue:
            out.append((f"queue {a.queue}", f"queue {b.queue}", text))
            x, y = _below_meeting_point(parents, a.queue, b.queue)
            if x and y and (x, y) != (a.queue, b.queue):
                out.append((f"queue {x}", f"queue {y}", text))
    return out


def _below_meeting_point(parents: dict[str, str], a: str, b: str) -> tuple[str, str]:
    def chain(q: str) -> list[str]:
        out = [q]
        while parents.get(out[-1]) and parents[out[-1]] not in out:
            out.append(parents[out[-1]])
        return out[::-1]  # root first
    ca, cb = chain(a), chain(b)
    i = 0
    while i < min(len(ca), len(cb)) and ca[i] == cb[i]:
        i += 1
    return (ca[i] if i < len(ca) else "", cb[i] if i < len(cb) else "")


def _find_cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return []
    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def advance(snapshot: snap.ClusterSnapshot, doc: dict[str, Any]) -> snap.ClusterSnapshot:
    """The cluster one session leaves behind, as the next session sees it."""
    evicted = {e["pod"] for e in doc["evictions"]}
    binds, pipelined = doc["binds"], doc["pipelined"]
    pods = []
    for p in snapshot.pods:
        if p.key in evicted:  # deleted, and recreated by its controller
            pods.append(replace(p, status=snap.TaskStatus.PENDING, node_name="", phase="Pending", nominated_node=""))
        elif p.key in binds:
            pods.append(replace(p, status=snap.TaskStatus.RUNNING, node_name=binds[p.key], phase="Running"))
        elif p.key in pipelined:
            pods.append(replace(p, nominated_node=pipelined[p.key]))
        else:
            pods.append(p)
    phases = {k: v["phase"] for k, v in doc["podgroups"].items()}
    groups = tuple(replace(pg, phase=snap.PodGroupPhase(phases[pg.key])) if pg.key in phases else pg
                   for pg in snapshot.podgroups)
    return replace(snapshot, pods=tuple(pods), podgroups=groups)


# Declared properties -------------------------------------------------------------------------------------

def declared_check(term_fn: Callable[[dict[str, Any]], Any], session_lets: list[tuple[str, Any]],
                   module_name: str, name: str) -> Check:
    """A `property` of a module, checked as an invariant of one session: when it holds in the state the
    session opens with, it must hold in the state the session leaves. (A cluster that starts out
    breaking it is not the policy's doing.)"""
    def holds(env: dict[str, Any]) -> bool:
        inner = dict(env)
        inner["$session"] = dict(env["$session"])
        for let_name, fn in session_lets:
            inner["$session"][(module_name, let_name)] = fn(inner)
        return bool(term_fn(inner))

    def check(o: Observed) -> list[str]:
        try:
            if not holds(o.opening_env()):
                return []
            after = holds(o.first.result.context.runtime.env)
        except Exception as exc:  # noqa: BLE001  # reason: a property that cannot be evaluated is reported, not raised
            return [f"property {name} could not be evaluated: {exc}"]
        return [] if after else [f"property {name} held when the session opened and is false after it"]
    return check
