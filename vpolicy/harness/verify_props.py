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
| hard-topology-within-tier | a hard-mode job never spans above its highestTierAllowed (policies with network-topology rules; its own worlds, `verify_topology`) |

Each session is judged from the decision document (with `engine.validate`, the independent checker),
the evictions as recorded with their numbers (`explain_record`), and, for cycles, a second session on
the cluster the first one leaves. The proofs that need no search (structural and symbolic) are in
`verify_symbolic`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from vpolicy.compile.lower import CompiledModule
from vpolicy.engine import validate
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import CompiledPolicy
from vpolicy.engine.state import SessionState
from vpolicy.harness import explain_record, explain_render
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources

BUILTIN = ("node-capacity", "gang-all-or-nothing", "queue-capability", "preempt-lower-priority-only",
           "reclaim-overused-only", "guarantee-kept", "no-preemption-cycle", "pending-has-reason")
# Built in too, but run only on policies with network-topology rules (`verify_topology` has its worlds):
# without a `hypernode_gradient` rule a hard-mode job is placed anywhere, as in Volcano without the plugin.
TOPOLOGY = "hard-topology-within-tier"
_VALIDATOR_PREFIX = {TOPOLOGY: ("topology.",), "node-capacity": ("node.",), "gang-all-or-nothing": ("gang.",),
                     "queue-capability": ("queue.",), "pending-has-reason": ("pending.",)}


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


Check = Callable[[Observed], list[str]]


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
            fn = module.helpers.get("deserved_of")
            if fn is not None:
                env = {k: rt.env[k] for k in ("cluster", "$session", "$now", "$tz", "$candidates")}
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

def module_properties(modules: Iterable[CompiledModule]) -> dict[str, tuple[str, Check]]:
    """Every `property` the rule modules declare, by name, with where it is declared (`file:line`) and
    its check on one session. `verify` proves them; `vpolicy test` checks them after every scenario."""
    declared: dict[str, tuple[str, Check]] = {}
    seen: set[str] = set()
    for module in modules:
        if module.file in seen:
            continue
        seen.add(module.file)
        lets = [(name, fn) for name, _term, fn in module.session_lets]
        for name, _term, fn, label in module.properties:
            origin = f"{_relative(label.span.file)}:{label.span.line}"
            declared[name] = (origin, declared_check(fn, lets, module.name, name))
    return declared


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


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
