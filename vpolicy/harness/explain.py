"""`vpolicy explain`: why one pod or podgroup was placed, left pending, or evicted in a session.

- placed (bound or pipelined): the node, the candidates, and each `node_order` rule's score per node at
  the moment of the decision (`explain_record`);
- pending: Volcano's own fit errors, the minimal set of conflicting rule instances with their numbers
  (an unsat core, `explain_pending`), and the cheapest fix, each fix checked by re-running the engine
  on the edited snapshot (`explain_fix`);
- evicted: the action, the rule and tier that selected it, and the job it was evicted for.

Returns an `Explanation` and never prints: `format_text` and `to_json` render it, the CLI picks one.
`short_reasons` gives `dry-run --explain` one line per pending pod (the core, no fix search). Bad input
(unknown target, unreadable files) surfaces as `PolicyError`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from vpolicy.engine.session import CompiledPolicy, SessionResult
from vpolicy.engine.state import JobInfo, TaskInfo
from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy.harness import explain_fix, explain_pending, explain_record
from vpolicy.harness import explain_render as render
from vpolicy.harness import policy as policies
from vpolicy.load.cluster import load_cluster
from vpolicy.model.snapshot import ClusterSnapshot, TaskStatus
from vpolicy.solve import cores
from vpolicy.solve.backend_z3 import Z3Backend

_PREFIXES = ("pod/", "podgroup/", "pg/")


@dataclass(slots=True)
class Explanation:
    target: str
    kind: str  # pod | podgroup
    status: str  # bound | pipelined | pending | evicted | running | finished | not-scheduled-here | no-pods
    summary: str
    node: str = ""
    placement: dict[str, object] | None = None
    volcano: list[str] = field(default_factory=list)  # the engine's reasons, in Volcano's words
    analysis: explain_pending.Analysis | None = None
    fixes: list[explain_fix.Fix] = field(default_factory=list)
    eviction: dict[str, object] | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def cheapest(self) -> explain_fix.Fix | None:
        return self.fixes[0] if self.fixes else None


def explain(cluster: Sequence[str], target: str, *, policy: str | None = None, conf: str | None = None,
            now: float = 0.0, fixes: bool = True, fix_budget_s: float = 10.0) -> Explanation:
    snapshot = load_cluster(list(cluster))
    compiled = policies.resolve(snapshot, policy=policy, conf=conf)
    return explain_snapshot(snapshot, compiled, target, now=now, fixes=fixes, fix_budget_s=fix_budget_s)


def explain_snapshot(snapshot: ClusterSnapshot, compiled: CompiledPolicy, target: str, *, now: float = 0.0,
                     fixes: bool = True, fix_budget_s: float = 10.0) -> Explanation:
    kind, key = _resolve_target(snapshot, target)
    t0 = time.perf_counter()
    uids = {p.uid for p in snapshot.pods if p.key == key} if kind == "pod" else None
    recorded = explain_record.run_recorded(snapshot, compiled, now=now, watch=uids)
    timings = {"session_ms": _ms(t0)}
    if kind == "pod":
        out = _explain_pod(snapshot, compiled, recorded, key, now=now, fixes=fixes, budget=fix_budget_s)
    else:
        out = _explain_podgroup(snapshot, compiled, recorded, key, now=now, fixes=fixes, budget=fix_budget_s)
    out.timings = {**timings, **out.timings, "total_ms": _ms(t0)}
    return out


def short_reasons(result: SessionResult, *, rlimit: int = cores.CHECK_RLIMIT // 2) -> dict[str, str]:
    """One line per pending pod of `result`: the conflicting rules (minimal core) or what the solver saw,
    each solver check within `rlimit` Z3 resource units (the same lines however busy the machine)."""
    backend = Z3Backend()
    out: dict[str, str] = {}
    cache: dict[tuple[str, bool], str] = {}
    for key in result.decisions.unschedulable:
        task = _task(result, key)
        if task is None or task.job is None:
            continue
        slot = (task.job.key, task.best_effort)
        if slot not in cache:
            cache[slot] = explain_pending.analyse(result, task.job.key, target=task if task.best_effort else None,
                                                  backend=backend, rlimit=rlimit).short()
        out[key] = cache[slot]
    return out


# Targets ---------------------------------------------------------------------------------------------

def _resolve_target(snapshot: ClusterSnapshot, target: str) -> tuple[str, str]:
    kind = ""
    name = target
    for prefix in _PREFIXES:
        if target.startswith(prefix):
            kind, name = ("pod" if prefix == "pod/" else "podgroup"), target[len(prefix):]
    pods = {p.key for p in (*snapshot.pods, *snapshot.deferred_pods)}
    groups = {pg.key for pg in snapshot.podgroups}
    if kind in ("", "pod") and name in pods:
        return "pod", name
    if kind in ("", "podgroup") and name in groups:
        return "podgroup", name
    if "/" not in name:
        hint = "write the target as NAMESPACE/NAME"
    else:
        hint = did_you_mean(name, sorted(pods | groups)) or "list the cluster's pods with `vpolicy dry-run`"
    raise PolicyError([Diagnostic("explain.unknown-target", f"no pod or podgroup '{target}' in the cluster",
                                  help=hint)])


def _task(result: SessionResult, key: str) -> TaskInfo | None:
    for task in result.state.tasks.values():
        if task.key == key:
            return task
    return None


# Pods ------------------------------------------------------------------------------------------------

def _explain_pod(snapshot: ClusterSnapshot, compiled: CompiledPolicy, recorded: explain_record.Recorded, key: str,
                 *, now: float, fixes: bool, budget: float) -> Explanation:
    result = recorded.result
    doc = result.decisions
    pod = next((p for p in snapshot.pods if p.key == key), None)
    if pod is None:
        return Explanation(key, "pod", "no-pods", f"{key} is not created yet: its Volcano Job's controller creates "
                           "the pods once the PodGroup leaves Pending (it is scheduled in a later session)")
    eviction = next((e for e in doc.evictions if e.pod == key), None)
    if eviction is not None:
        return _explain_eviction(snapshot, compiled, result, key, eviction)
    task = _task(result, key)
    if task is None:
        return Explanation(key, "pod", "not-scheduled-here", _not_ours(snapshot, key))
    if key in doc.binds or key in doc.pipelined:
        return _explain_placed(recorded, task)
    if pod.status is not TaskStatus.PENDING or pod.node_name:
        verb = "finished" if pod.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED) else "running"
        where = f" on {pod.node_name}" if pod.node_name else ""
        return Explanation(key, "pod", verb, f"{key} is {pod.status.value}{where}: placed before this session",
                           node=pod.node_name)
    return _explain_pending(snapshot, compiled, result, task.job, task, now=now, fixes=fixes, budget=budget)


def _not_ours(snapshot: ClusterSnapshot, key: str) -> str:
    pod = next(p for p in snapshot.pods if p.key == key)
    if not pod.group:
        return (f"{key} has no scheduling.k8s.io/group-name annotation: Volcano schedules only pods of a PodGroup "
                "(its podgroup controller creates one first)")
    group = f"{pod.namespace}/{pod.group}"
    pg = next((g for g in snapshot.podgroups if g.key == group), None)
    if pg is None:
        return f"{key} names podgroup {group}, which is not in the cluster"
    if pg.queue not in {q.name for q in snapshot.queues}:
        return f"{key}'s podgroup {group} names queue {pg.queue}, which does not exist: Volcano drops the job"
    return f"{key} belongs to scheduler '{pod.scheduler_name}', not volcano: it only takes up node resources"


def _explain_placed(recorded: explain_record.Recorded, task: TaskInfo) -> Explanation:
    doc = recorded.result.decisions
    bound = task.key in doc.binds
    node = doc.binds.get(task.key) or doc.pipelined.get(task.key, "")
    status = "bound" if bound else "pipelined"
    scorings = [s for s in recorded.scorings.get(task.uid, []) if s.chosen == node or (not s.chosen and node in s.group)]
    summary = f"{task.key} is {'bound to' if bound else 'pipelined onto'} {node}"
    if not bound:
        summary += " (placed on resources still being released; bound in a later session)"
    out = Explanation(task.key, "pod", status, summary, node=node)
    if scorings:
        s = scorings[-1]
        victims = [e.pod for e in doc.evictions if task.job is not None and e.for_job == task.job.key]
        if victims:
            out.notes.append(f"evicted for its job in this session: {', '.join(victims)}")
        out.placement = {
            "action": s.action, "node": node, "candidates": list(s.candidates), "scored": list(s.group),
            "fits_idle": s.fits_idle,
            "rules": [{"rule": r.rule.label.rule_id, "location": render.location(r.rule.label), "tier": r.tier,
                       "scores": {n: round(v, 3) for n, v in r.score.items()}} for r in s.rules],
            "totals": {n: round(v, 3) for n, v in s.totals.items()},
        }
        if not s.chosen:
            out.notes.append(f"{s.action} visits nodes by score and takes the first where evicting victims makes "
                             f"room: {node}")
        elif len(s.group) == 1:
            out.notes.append(f"{node} was the only node where it {'fits Idle' if s.fits_idle else 'fits FutureIdle'}: "
                             "taken without scoring (Volcano does the same)")
    return out


def _explain_eviction(snapshot: ClusterSnapshot, compiled: CompiledPolicy, result: SessionResult, key: str,
                      eviction: object) -> Explanation:
    action = getattr(eviction, "action", "")
    for_job = getattr(eviction, "for_job", "")
    where = getattr(eviction, "rule", "")
    callback = "reclaimable" if action == "reclaim" else "preemptable"
    rule_id, tier, others = "", 0, []
    for i, t in enumerate(compiled.tiers, start=1):
        rules = [r for p in t for r in p.rules(callback)]
        hit = next((r for r in rules if r.label.location == where), None)
        if hit is not None:
            rule_id, tier = hit.label.rule_id, i
            others = [f"{r.label.rule_id} ({render.location(r.label)})" for r in rules if r is not hit]
            location = render.location(hit.label)
            break
    else:
        location = where
    victim = next(p for p in snapshot.pods if p.key == key)
    vg = next((g for g in snapshot.podgroups if victim.group and g.key == f"{victim.namespace}/{victim.group}"), None)
    pg = next((g for g in snapshot.podgroups if g.key == for_job), None)
    preemptors = [k for k, n in result.decisions.pipelined.items()
                  if n == victim.node_name and k.startswith(for_job.split("/")[0] + "/")
                  and any(t.key == k for t in result.state.jobs[for_job].tasks)] if for_job in result.state.jobs else []
    summary = f"{key} is evicted by {action} on {victim.node_name} for {for_job}"
    info: dict[str, object] = {"action": action, "for": for_job, "rule": rule_id, "location": location, "tier": tier,
                               "intersected_with": others, "preemptors": preemptors}
    notes = []
    if rule_id:
        notes.append(f"selected by {rule_id} ({location}), tier {tier}"
                     + (f", intersected with {', '.join(others)}" if others else ""))
    if vg is not None and pg is not None:
        vp, pp = snapshot.job_priority(vg), snapshot.job_priority(pg)
        if vg.key == pg.key:
            notes.append(f"same job: victim task priority {victim.priority}")
        else:
            notes.append(f"victim job {vg.key} priority {vp} (queue {vg.queue}); preemptor job {pg.key} priority {pp} "
                         f"(queue {pg.queue})")
        info.update(victim_job=vg.key, victim_priority=vp, preemptor_priority=pp)
    if preemptors:
        notes.append(f"pipelined in its place: {', '.join(preemptors)}")
    return Explanation(key, "pod", "evicted", summary, node=victim.node_name, eviction=info, notes=notes)


def _explain_pending(snapshot: ClusterSnapshot, compiled: CompiledPolicy, result: SessionResult, job: JobInfo | None,
                     task: TaskInfo | None, *, now: float, fixes: bool, budget: float) -> Explanation:
    assert job is not None
    key = task.key if task is not None else job.key
    out = Explanation(key, "pod" if task is not None else "podgroup", "pending", f"{key} is pending")
    if task is not None:
        out.volcano = list(result.decisions.unschedulable.get(task.key, []))
    status = result.decisions.podgroups.get(job.key)
    if status is not None:
        out.volcano += [f"podgroup {job.key} {c['type']}: {c.get('message') or c.get('reason', '')}"
                        for c in status.conditions if c.get("type") == "Unschedulable"]
    t0 = time.perf_counter()
    out.analysis = explain_pending.analyse(result, job.key, target=task if task is not None and task.best_effort else None)
    out.timings["solver_ms"] = _ms(t0)
    # the solver's room ignores network domains: a hard-mode gang held by its topology says so first
    topology = next((r for t in job.tasks for r in result.decisions.unschedulable.get(t.key, [])
                     if r.startswith("network topology (hard")
                     or (r.startswith("sub-group ") and " (hard, highest tier " in r)), "")
    if topology:
        out.summary += f": {topology}"
    elif out.analysis.verdict == "conflict":
        out.summary += ": these rules conflict"
    elif out.analysis.verdict == "fits":
        out.summary += (": a placement exists on the free resources (solver), but the session's greedy order did "
                        "not take it")
    if fixes:
        t1 = time.perf_counter()
        found, runs = explain_fix.search(snapshot, compiled, result, job.key, target=task, now=now, budget_s=budget)
        out.fixes = found
        out.timings["fix_ms"] = _ms(t1)
        out.timings["engine_runs"] = float(runs)
    return out


# Podgroups -------------------------------------------------------------------------------------------

def _explain_podgroup(snapshot: ClusterSnapshot, compiled: CompiledPolicy, recorded: explain_record.Recorded,
                      key: str, *, now: float, fixes: bool, budget: float) -> Explanation:
    result = recorded.result
    job = result.state.jobs.get(key)
    pg = next(g for g in snapshot.podgroups if g.key == key)
    if job is None:
        return Explanation(key, "podgroup", "not-scheduled-here",
                           f"{key} names queue {pg.queue}, which does not exist: Volcano drops the job")
    status = result.decisions.podgroups.get(key)
    phase = status.phase if status is not None else job.phase
    doc = result.decisions
    placed = [t.key for t in job.tasks if t.key in doc.binds or t.key in doc.pipelined]
    pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.best_effort]
    if not job.tasks:
        return _explain_podless(snapshot, compiled, result, job, phase, now=now, fixes=fixes, budget=budget)
    if not pending or job.ready_count + job.pipelined_count >= job.min_available:
        out = Explanation(key, "podgroup", "bound" if placed else "running",
                          f"{key} is {phase}: {job.ready_count} ready, {job.pipelined_count} pipelined of "
                          f"minAvailable {job.min_available}")
        if placed:
            out.notes.append("placed in this session: " + ", ".join(
                f"{k} -> {doc.binds.get(k) or doc.pipelined.get(k)}" for k in placed))
        if pending:
            out.notes.append(f"{len(pending)} more pods pending beyond minAvailable")
        return out
    out = _explain_pending(snapshot, compiled, result, job, None, now=now, fixes=fixes, budget=budget)
    out.summary = f"{key} is {phase}, {len(pending)} pods pending" + out.summary[len(f"{key} is pending"):]
    return out


def _explain_podless(snapshot: ClusterSnapshot, compiled: CompiledPolicy, result: SessionResult, job: JobInfo,
                     phase: str, *, now: float, fixes: bool, budget: float) -> Explanation:
    """A podgroup with no pods yet. When enqueue refused it this session, the rules that did, with their
    numbers, and the cheapest change that gets it enqueued; the job controller's part stays a note."""
    deferred = [p.key for p in snapshot.deferred_pods if f"{p.namespace}/{p.group}" == job.key]
    created = (f"its Volcano Job's {len(deferred)} pods are created by the job controller once the PodGroup "
               "leaves Pending, and scheduled in a later session") if deferred else ""
    out = Explanation(job.key, "podgroup", "no-pods", f"{job.key} has no pods yet (phase {phase})")
    out.analysis = explain_pending.enqueue_refusal(result, job.key)
    if out.analysis is None:
        out.summary += f": {created}" if created else ""
        return out
    out.summary += ": enqueue refused it in this session; these rules conflict"
    out.volcano = [result.context.job_reasons[job.key]] if result.context.job_reasons.get(job.key) else []
    if created:
        out.notes.append(created)
    if fixes:
        t1 = time.perf_counter()
        out.fixes, runs = explain_fix.search(snapshot, compiled, result, job.key, now=now, budget_s=budget)
        out.timings["fix_ms"] = _ms(t1)
        out.timings["engine_runs"] = float(runs)
    return out


# Rendering -------------------------------------------------------------------------------------------

def to_json(e: Explanation) -> dict[str, object]:
    return {
        "target": e.target, "kind": e.kind, "status": e.status, "summary": e.summary, "node": e.node,
        "placement": e.placement, "volcano": e.volcano,
        "conflict": e.analysis.to_json() if e.analysis is not None else None,
        "fix": e.cheapest.to_json() if e.cheapest is not None else None,
        "fixes": [f.to_json() for f in e.fixes], "eviction": e.eviction, "notes": e.notes, "timings": e.timings,
    }


def format_text(e: Explanation) -> str:
    lines = [e.summary]
    for reason in e.volcano:
        lines.append(f"  Volcano: {reason}")
    if e.analysis is not None:
        lines += _analysis_lines(e.analysis)
    if e.placement is not None and e.placement["rules"]:
        lines += _score_table(e.placement)
    for note in e.notes:
        lines.append(f"  {note}")
    if e.fixes:
        best = e.fixes[0]
        done = "enqueues it (its pods are created next)" if e.status == "no-pods" else "places it"
        lines.append(f"  cheapest fix: {best.text} (checked: the engine then {done})")
        for other in e.fixes[1:]:
            lines.append(f"  other fix: {other.text}")
    elif "fix_ms" in e.timings:
        lines.append("  no fix found within the search budget")
    return "\n".join(lines) + "\n"


def _analysis_lines(a: explain_pending.Analysis) -> list[str]:
    """The solver's answer; for a job a gate closed, the gate's conflict first, then the other gates
    that close it on their own, then what would block it once past them."""
    lines = _verdict_lines(a, lead="")
    if a.also:
        lines.append("  also closing it on its own:")
        lines += _item_lines(a.also)
    if a.after is not None:
        lines += _verdict_lines(a.after, lead="once past these gates, " if a.also else "once past that gate, ")
    return lines


def _verdict_lines(a: explain_pending.Analysis, *, lead: str) -> list[str]:
    if a.verdict == "conflict":
        head = ("conflicting rules (minimal unsat core):" if a.minimal else
                "conflicting rules (unsat core; the solver could not show every one needed):")
        return [f"  {lead}{head}", *_item_lines(a.core)]
    if a.verdict == "fits":
        return [f"  {lead}the solver finds room: " + "; ".join(a.witness)]
    if a.verdict == "unknown":
        return [f"  {lead}the solver gave up ({a.reason}); no conflict is claimed"]
    return []


def _item_lines(items: Sequence[explain_pending.CoreItem]) -> list[str]:
    width = max(len(i.location) for i in items)
    return [f"    {i.location.ljust(width)}  {i.rule}: {i.text}" for i in items]


def _score_table(p: dict[str, object]) -> list[str]:
    """Per-rule scores per node, one row per `node_order` rule, the rule's location last."""
    rules: list[dict[str, object]] = p["rules"]  # type: ignore[assignment]  # reason: built by _explain_placed
    totals: dict[str, float] = p["totals"]  # type: ignore[assignment]  # reason: built by _explain_placed
    nodes = list(totals)
    how = "those that fit Idle" if p["fits_idle"] else ("every candidate" if p["action"] == "preempt"
                                                          else "those that fit FutureIdle (pipeline)")
    lines = [f"  chosen by {p['action']} among {len(p['candidates'])} feasible node(s)"  # type: ignore[arg-type]  # reason: a list
             f"; scores of {how}:"]
    width = max(len("total"), *(len(str(r["rule"])) for r in rules))
    cols = [max(8, len(n)) for n in nodes]
    lines.append("    " + "rule".ljust(width) + "".join(f"  {n.rjust(c)}" for n, c in zip(nodes, cols)))
    for r in rules:
        scores: dict[str, float] = r["scores"]  # type: ignore[assignment]  # reason: built by _explain_placed
        lines.append("    " + str(r["rule"]).ljust(width)
                     + "".join(f"  {scores.get(n, 0):{c}.1f}" for n, c in zip(nodes, cols)) + f"  {r['location']}")
    lines.append("    " + "total".ljust(width) + "".join(f"  {totals[n]:{c}.1f}" for n, c in zip(nodes, cols)))
    return lines


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
