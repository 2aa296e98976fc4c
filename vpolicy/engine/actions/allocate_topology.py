"""allocate for a job bound to the network topology: its gang goes inside one domain (Volcano's
allocateForJob, reference §4.2).

A hard-mode job (`job.topology_mode == "hard"`) is dry-run in the domains its `hypernode_gradient`
rules allow, every allowed tier (Volcano main): each domain that leaves the gang ready (or pipelined) is
a solution, scored by the `hypernode_order` rules on the domain its placements ended in (the lowest
one holding them, and where the job already runs), as the session was before the dry run; a job with
sub-groups scores the sum of its sub-groups' scores (`sub_group_hypernode_order`, each on where it
ended). The best score wins, then the lower tier, then the first name (Volcano main's
selectBestHyperNodeForJob), and its placements are replayed into the returned statement. With no
`hypernode_gradient` rule (the plugin is off, or its `enabledHyperNodeGradient` is false) the only
domain is the whole cluster, as in Volcano.

Soft-mode jobs and jobs without a topology are allocated by `allocate.allocate_tasks` over all nodes;
their preference for low tiers is a node score (`network-topology-aware.vpol`).

This module decides nothing about which domains are allowed or how they score: rules do.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from vpolicy.engine import domain_plan, optimize
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import Queue
from vpolicy.engine.placement import FitErrors, fits
from vpolicy.engine.state import JobInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.engine.topology import SessionTopology
from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import Resources, total
from vpolicy.model.snapshot import TaskStatus


@dataclass(slots=True)
class _Solution:
    domain: str
    score: tuple[float, ...]
    placements: list[tuple[str, TaskInfo, str]]  # (allocate | pipeline, task, node)
    left: list[TaskInfo]  # the worksheet's tasks not yet popped when the trial ended
    ended_in: str = ""  # the lowest domain holding the job after the dry run (where it ran, and placed)
    group_scores: float | None = None  # a job with sub-groups: the sum of its sub-groups' scores


def searches_domains(ctx: ActionContext, job: JobInfo) -> bool:
    """Whether the job's gang is placed domain by domain: hard mode on a cluster with HyperNodes; in
    optimize mode soft mode too (its gang first tries to stay within its highest tier, then, as soft
    mode allows, anywhere)."""
    if not ctx.state.topology.enabled:
        return False
    return (job.topology_mode == "hard" or bool(job.sub_groups)
            or (ctx.optimize and job.topology_mode == "soft"))


def joint_plan(ctx: ActionContext, jobs: list[JobInfo]) -> domain_plan.Plan | None:
    """optimize mode: the domain each pending topology gang should go to, planned for all at once
    (`engine.domain_plan`); None in volcano mode."""
    if not ctx.optimize or not ctx.state.topology.enabled:
        return None
    gangs = [j for j in jobs if searches_domains(ctx, j)]
    return domain_plan.plan_domains(ctx.state, gangs, lambda j: domain_gradients(ctx, j), optimize.gpus)


def allocate_job(ctx: ActionContext, job: JobInfo, tasks: Queue[TaskInfo], *,
                 plan: domain_plan.Plan | None = None) -> tuple[Statement | None, str]:
    """The statement placing the job's gang in the best domain of the lowest tier that holds it, and
    that domain ("" when none does); `tasks` is left holding what the chosen trial did not reach.

    Volcano mode keeps the domain its `hypernode_order` rules score highest. Optimize mode tries the
    planned domain first and keeps it when the gang fits there; otherwise it keeps the domain left with
    the fewest free GPUs (best fit), the rules' score breaking ties; a soft-mode gang that fits no
    allowed domain is then allocated over the whole cluster, as soft mode allows. With a plan, no trial
    may take the room of a planned gang not yet served (`Plan.keeps`)."""
    from vpolicy.engine.actions.allocate import allocate_tasks  # allocate dispatches here

    topo = ctx.state.topology
    planned = plan.domain(job) if plan is not None else ""
    pending = _drain(tasks)
    tried: list[list[str]] = []
    unplaced: list[str] = []  # why a sub-group found no domain, from the dry runs
    placement = ctx.placement
    sample, placement.sample = placement.sample, False  # a domain is searched whole
    fits = _fit_rows(ctx, pending)  # every trial is undone: the same FutureIdle before each
    floor = least_placed(ctx, job, pending) if ctx.optimize else None
    gradients = domain_gradients(ctx, job)
    tried.extend(gradients)
    if not ctx.optimize:  # Volcano main: every allowed tier is searched, the tier only breaks ties
        gradients = [[n for group in gradients for n in group]] if gradients else []
    try:
        for group in gradients:
            best: _Solution | None = None
            if planned in group:
                group = [planned, *(n for n in group if n != planned)]
            names = [n for n in group if fits is None or fits[topo.rows(n)].any()]  # else it places nothing
            if floor is not None:  # optimize: no dry run where the gang cannot be ready or pipelined
                names = [n for n in names if _may_hold(ctx, job, floor, n, plan)]
            if not ctx.optimize:
                best = _best_solution(ctx, job, pending, names, unplaced)
            for name in names if ctx.optimize else ():
                trial = _trial(ctx, job, pending, name, plan, planned, unplaced)
                if trial is not None and (best is None or trial.score > best.score):
                    best = trial
                if best is not None and best.domain == planned:
                    break  # optimize: the plan holds
            if best is not None:
                final = ctx.statement()
                for kind, task, node in best.placements:
                    (final.allocate if kind == "allocate" else final.pipeline)(task, node)
                for task in best.left:
                    tasks.push(task)
                for _kind, placed, _node in best.placements:
                    ctx.fit_errors.pop(placed.uid, None)
                ctx.job_reasons.pop(job.key, None)
                if plan is not None:
                    plan.served(job)
                return final, best.domain
    finally:
        placement.sample = sample
    for task in pending:
        tasks.push(task)
    if plan is not None and plan.holds_room() and not planned:
        plan.deferred.append(job)  # optimize: try again once the planned gangs are served
        return None, ""
    if ctx.optimize and job.topology_mode == "soft" and not any(g.topology_mode == "hard" for g in job.sub_groups):
        return allocate_tasks(ctx, job, tasks), ""  # optimize: no allowed domain holds it; soft mode spreads
    ctx.job_reasons[job.key] = (unplaced[0] if unplaced and (not job.topology_mode or len(tried) == 1)
                                else unplaced_reason(topo, job, pending, tried))
    return None, ""


def _trial(ctx: ActionContext, job: JobInfo, pending: list[TaskInfo], name: str,
           plan: domain_plan.Plan | None = None, planned: str = "", unplaced: list[str] | None = None,
           ) -> _Solution | None:
    """The gang's dry run inside domain `name`: its placements (undone) when it is ready or pipelined
    there, scored by the `hypernode_order` rules as the session was before the dry run (as Volcano
    scores its solutions); optimize mode's GPUs left free are read before the placements are undone."""
    from vpolicy.engine.actions.allocate import allocate_tasks  # allocate dispatches here

    rt, topo = ctx.runtime, ctx.state.topology
    original = job.allocated_hypernode
    job.failed_roles.clear()  # Volcano's ResetFitErr: each domain starts clean
    worksheet = rt.task_queue(pending)
    group_scores: list[float] = []
    if job.sub_groups:
        stmt = place_sub_groups(ctx, job, worksheet, name, scores=group_scores, unplaced=unplaced)
    else:
        stmt = allocate_tasks(ctx, job, worksheet, within=topo.mask(name))
    if (stmt is not None and stmt.ops and plan is not None and name != planned
            and not plan.keeps(ctx.state, name, job=job)):
        stmt.discard()  # it would take a planned gang's room
        stmt = None
    trial = None
    if stmt is not None and stmt.ops:
        placements = [(op.kind, op.task, op.task.node_name) for op in stmt.ops]
        ended = original  # the lowest domain holding where the job runs and this dry run's placements
        for _kind, _task, node in placements:
            ended = topo.lca(ended, topo.leaf_of(node))
        trial = _Solution(name, (), placements, _drain(worksheet), ended,
                          sum(group_scores) if job.sub_groups else None)
        if ctx.optimize:
            trial.score = (-float(optimize.gpus(topo.info(name).idle)),)  # GPUs the gang would leave free
        stmt.discard()
    job.allocated_hypernode = original
    if trial is not None and ctx.optimize:
        trial.score = (*trial.score, _domain_score(ctx, job, name))
    return trial


def _domain_score(ctx: ActionContext, job: JobInfo, name: str) -> float:
    rt = ctx.runtime
    return float(sum(rt.ask(rule, job, ctx.state.topology.info(name)) for rule in rt.rules("hypernode_order")))


def _best_solution(ctx: ActionContext, job: JobInfo, pending: list[TaskInfo], names: list[str],
                   unplaced: list[str] | None = None) -> _Solution | None:
    """Volcano mode: the best solution among the dry runs in `names` (every allowed tier, lowest first,
    breadth-first within a tier), as Volcano main's allocateForJob and selectBestHyperNodeForJob pick
    it: the highest score, then the lowest tier, then the first name. A solution's score is the
    `hypernode_order` rules' on the domain the job ended in (`_Solution.ended_in`), or, for a job with
    sub-groups, the sum of its sub-groups' scores, the session as it was before the dry run.

    Every dry run is undone, so a domain's score before any dry run is what a solution ending in it
    scores, and a dry run inside domain D ends in some domain of D's subtree (joined with where the job
    already runs): the best such score bounds what trying D can give. Domains are tried in order of
    that bound, and once no domain left can beat the best solution found, they are not tried, provided
    the best places every pending task (what the skipped dry runs would leave behind, the fit errors of
    tasks they could not place and where each task was last placed, concerns only tasks the winner
    places); otherwise (tasks beyond minMember left over, or a job with sub-groups) every domain is
    tried. What the dry runs leave behind is then replayed in breadth-first order, as trying them in
    that order leaves it."""
    topo = ctx.state.topology
    scores: dict[str, float] = {}

    def score(name: str) -> float:
        found = scores.get(name)
        if found is None:
            found = scores[name] = _domain_score(ctx, job, name)
        return found

    bounds_of: dict[str, float] = {}

    def bound(name: str) -> float:
        if job.sub_groups:
            return float("inf")
        if job.allocated_hypernode:
            return max(score(topo.lca(job.allocated_hypernode, x)) for x in topo.tree.descendants(name))
        found = bounds_of.get(name)
        if found is None:  # a fresh job ends in its domain's subtree: the best of it, children kept
            tree = topo.tree
            kids = ([h for h in tree.hypernodes if h not in tree.parent] if name == hn.CLUSTER_ROOT
                    else tree.children.get(name, ()))
            found = bounds_of[name] = max([score(name), *(bound(c) for c in kids)])
        return found

    def value(solution: _Solution) -> float:
        if solution.group_scores is not None:
            return solution.group_scores
        return score(solution.ended_in or solution.domain)

    def rank(name: str) -> tuple[int, str]:
        return topo.tree.tier(name), name

    bounds = [bound(name) for name in names] if len(names) > 1 else [0.0] * len(names)
    order = sorted(range(len(names)), key=lambda i: (-bounds[i], *rank(names[i])))
    session_errors = ctx.fit_errors
    errors_before: dict[str, FitErrors | None] = {}
    placed_before: dict[int, tuple[TaskInfo, tuple[str, str] | None]] = {}
    runs: list[tuple[int, list[tuple[str, FitErrors | None]], list[tuple[TaskInfo, tuple[str, str] | None]],
                     set[str]]] = []
    best: _Solution | None = None
    best_key: tuple[float, int, str] | None = None  # (-score, tier, name): the least wins
    try:
        for i in order:
            if (best is not None and best_key is not None and len(best.placements) == len(pending)
                    and (-bounds[i], *rank(names[i])) > best_key):
                break  # no domain left can beat it, and it places every task (see above)
            journal = _FitErrorJournal(session_errors, errors_before)
            ctx.fit_errors = journal
            last = [t.last_placement for t in pending]
            trial = _trial(ctx, job, pending, names[i], unplaced=unplaced)
            moved: list[tuple[TaskInfo, tuple[str, str] | None]] = []
            for task, was in zip(pending, last):
                if task.last_placement is not was:  # placed by this dry run, and undone
                    placed_before.setdefault(id(task), (task, was))
                    moved.append((task, task.last_placement))
            runs.append((i, journal.log, moved, set(job.failed_roles)))
            if trial is not None:
                key = (-value(trial), *rank(names[i]))
                if best_key is None or key < best_key:
                    best, best_key = trial, key
    finally:
        ctx.fit_errors = session_errors
    if len(runs) > 1:
        for uid, errors in errors_before.items():
            _put(session_errors, uid, errors)
        for task, where in placed_before.values():
            task.last_placement = where
        runs.sort(key=lambda run: run[0])
        for _i, log, placed, _roles in runs:
            for uid, errors in log:
                _put(session_errors, uid, errors)
            for task, where in placed:
                task.last_placement = where
        job.failed_roles.clear()
        job.failed_roles.update(runs[-1][3])
    return best


class _FitErrorJournal(dict[str, FitErrors]):
    """Stands in for `ActionContext.fit_errors` during one dry run (which only records and drops a
    task's fit errors): each write goes to the session's dict and is logged, with the value it
    replaced the first time a task is touched (`before`, shared by the dry runs of one tier)."""

    def __init__(self, session: dict[str, FitErrors], before: dict[str, FitErrors | None]):
        super().__init__()
        self.session, self.before = session, before
        self.log: list[tuple[str, FitErrors | None]] = []

    def __setitem__(self, uid: str, errors: FitErrors) -> None:
        self.before.setdefault(uid, self.session.get(uid))
        self.session[uid] = errors
        self.log.append((uid, errors))

    def pop(self, uid: str, default: Any = None) -> Any:
        self.before.setdefault(uid, self.session.get(uid))
        self.log.append((uid, None))
        return self.session.pop(uid, default)


def _put(errors: dict[str, FitErrors], uid: str, value: FitErrors | None) -> None:
    if value is None:
        errors.pop(uid, None)
    else:
        errors[uid] = value


def place_sub_groups(ctx: ActionContext, job: JobInfo, tasks: Queue[TaskInfo], domain: str, *,
                     scores: list[float] | None = None, unplaced: list[str] | None = None) -> Statement | None:
    """A job with sub-groups inside `domain` (Volcano's allocateForSubJob, each sub-group in turn): a
    sub-group whose policy has a hard networkTopology goes inside one domain under `domain` of at most
    its highest allowed tier, lowest tier first, the best-scored of those where its gang is placed
    (`sub_job_ready`) or pipelined (`sub_job_pipelined`); the others, and tasks of no sub-group,
    anywhere in `domain`. Every allowed domain is dry-run; a trial is scored by
    `sub_group_hypernode_order` (with the sub-group's own tasks) on the domain it ended in (the lowest
    holding its tasks placed so far and by the trial), after the trial is undone, the tie-break added
    where several share the best score; the lowest tier that holds it wins, then the best score, then
    the first name (`_ranked_candidates`; Volcano main's collectSubJobPlacementCandidates and
    scoreSubJobPlacementCandidates). The sub-groups go in `transaction_sub_groups` order; once the
    job is ready or pipelined only those the turn needs still go, and one of those finding no place
    ends the turn (Volcano main's working set). With a hard sub-group the turn's placements are
    searched together (`_search_sub_groups`, Volcano main's searchSubJobAllocations);
    returns the placements when it is ready or pipelined, else undoes them; `scores` gets the score of
    each sub-group placed (their sum is the job's, in `allocate_job`), `unplaced` why a hard sub-group
    found no domain (`sub_group_reason`).
    Without `hypernode_gradient` rules a sub-group's only domain is the job's (as Volcano without the
    plugin's gradient). `tasks` is left with what no sub-group placed."""
    from vpolicy.engine.actions.allocate import allocate_tasks

    rt, topo = ctx.runtime, ctx.state.topology
    pending = _drain(tasks)
    stmt = ctx.statement()
    placed: set[str] = set()
    ready_rules = rt.rules("sub_job_ready")

    def is_ready(group: Any) -> bool:
        return all(rt.ask(rule, job, group) for rule in ready_rules)

    waiting = {id(t) for t in pending}
    order, working = transaction_sub_groups(ctx, job, [g for g in job.sub_groups
                                                       if any(id(t) in waiting for t in g.tasks)], is_ready)
    def pipelined(group: Any) -> bool:
        return bool(rt.sub_job_pipelined(job, group))

    def job_done() -> bool:
        return bool(rt.job_ready(job) or rt.job_pipelined(job))

    def unplaced_tasks(group: Any) -> list[TaskInfo]:
        return [t for t in pending if t in group.tasks and t.uid not in placed]

    def candidates_of(group: Any) -> list[tuple[float, _Candidate]]:
        found, allowed = _sub_group_candidates(ctx, job, group, unplaced_tasks(group), domain, is_ready, pipelined)
        if not found and unplaced is not None and group.topology_mode == "hard":
            reason = sub_group_reason(topo, group, allowed)
            if reason not in unplaced:
                unplaced.append(reason)
        return _ranked_candidates(ctx, group, found) if found else []

    if any(g.topology_mode == "hard" for g in job.sub_groups) and rt.rules("hypernode_gradient"):
        has_rest = any(not any(t in g.tasks for g in job.sub_groups) for t in pending)
        path = _search_sub_groups(ctx, order, working, unplaced_tasks, candidates_of, job_done, placed, has_rest)
        for group, score, chosen in path or ():
            for kind, task, node in chosen.placements:
                (stmt.allocate if kind == "allocate" else stmt.pipeline)(task, node)
                placed.add(task.uid)
            if scores is not None:
                scores.append(score)
    else:
        processed: set[int] = set()
        for group in order:
            if job_done() and (working <= processed or id(group) not in working):
                continue  # ready: only the transaction's sub-groups still go (Volcano main's working set)
            processed.add(id(group))
            if not unplaced_tasks(group):
                continue
            ranked = candidates_of(group)
            if ranked:
                score, chosen = ranked[0]  # as _best_candidate
                for kind, task, node in chosen.placements:
                    (stmt.allocate if kind == "allocate" else stmt.pipeline)(task, node)
                    placed.add(task.uid)
                if scores is not None:
                    scores.append(score)
            elif id(group) in working:
                break  # a sub-group the transaction needs found no place: the job's dry run here fails
    rest = [t for t in pending if t.uid not in placed and not any(t in g.tasks for g in job.sub_groups)]
    if rest and not rt.job_ready(job):
        more = allocate_tasks(ctx, job, rt.task_queue(rest), within=topo.mask(domain))
        if more is not None:
            for op in more.ops:
                placed.add(op.task.uid)
            stmt.merge(more)
    for task in pending:
        if task.uid not in placed:
            tasks.push(task)
    if rt.job_ready(job) or rt.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


SEARCH_BUDGET = 4  # a search collects at most this many times (and 64) as many sub-group candidate sets
# as taking each sub-group's first choice would, then keeps first choices (each collection is a dry run
# per allowed domain)


def _search_sub_groups(ctx: ActionContext, order: list[Any], working: set[int], unplaced_tasks: Any,
                       candidates_of: Any, job_done: Any, placed: set[str], has_rest: bool,
                       ) -> list[tuple[Any, float, _Candidate]] | None:
    """The best way to place the turn's sub-groups (Volcano main's searchSubJobAllocations, used when
    some sub-group has a hard networkTopology): each sub-group in turn tries every domain where it fits,
    best-ranked first, and the rest of the turn is searched below each; a path counts once the job is
    ready or pipelined with every sub-group of the working set placed, and the path with the highest
    sum of sub-group scores wins, then the first in the order of its decisions (Volcano's
    jobAllocationSolutionLess on the subJobDecisionKey). None when no path gets there. Once it has
    collected candidates SEARCH_BUDGET times as often as one pass over the sub-groups would (at least
    64), each sub-group keeps its first-ranked domain that leads somewhere (a bound Volcano's search does
    not have; its pruning is by explored state)."""
    tried = [0]
    budget = max(64, SEARCH_BUDGET * len(order))

    def search(processed: frozenset[int]) -> tuple[float, str, list[tuple[Any, float, _Candidate]]] | None:
        done = job_done()
        if done and working <= processed:
            return 0.0, "", []
        group = next((g for g in order if unplaced_tasks(g)
                      and (not done or (id(g) in working and id(g) not in processed))), None)
        if group is None:  # the tasks of no sub-group go after the search (Volcano's default SubJob)
            return (0.0, "", []) if has_rest else None
        best: tuple[float, str, list[tuple[Any, float, _Candidate]]] | None = None
        tried[0] += 1
        for score, chosen in candidates_of(group):
            if best is not None and tried[0] >= budget:
                break
            trial = ctx.statement()
            for kind, task, node in chosen.placements:
                (trial.allocate if kind == "allocate" else trial.pipeline)(task, node)
                placed.add(task.uid)
            below = search(processed | {id(group)})
            trial.discard()
            for _kind, task, _node in chosen.placements:
                placed.discard(task.uid)
            if below is None:
                continue
            key = ",".join(sorted([f"{group.name}={chosen.ended_in}", *filter(None, below[1].split(","))]))
            total = (score + below[0], key, [(group, score, chosen), *below[2]])
            if best is None or (-total[0], total[1]) < (-best[0], best[1]):
                best = total
        return best

    found = search(frozenset())
    return None if found is None else found[2]


def _sub_group_candidates(ctx: ActionContext, job: JobInfo, group: Any, mine: list[TaskInfo], domain: str,
                          is_ready: Any, pipelined: Any) -> tuple[list[_Candidate], list[list[str]]]:
    """Where the sub-group's pending tasks `mine` could go inside `domain` (Volcano main's
    collectSubJobPlacementCandidates): a hard sub-group inside one domain of at most its highest tier
    (under its highest allowed domain holding where it already runs; otherwise only domains whose free
    resources cover its pending requests), any other in `domain`; each a dry run, undone, that left
    it ready or pipelined. Also the domains allowed before the resource check (for the reason)."""
    from vpolicy.engine.actions.allocate import allocate_tasks

    rt, topo = ctx.runtime, ctx.state.topology
    gradients = [[domain]]
    if group.topology_mode == "hard" and rt.rules("hypernode_gradient"):
        by_tier: dict[int, list[str]] = {}
        for name in topo.tree.descendants(domain):
            if topo.tree.tier(name) <= group.highest_tier_allowed:
                by_tier.setdefault(topo.tree.tier(name), []).append(name)
        gradients = [by_tier[t] for t in sorted(by_tier)]
    held = ""  # the lowest domain holding the sub-group's tasks already placed
    for task in group.tasks:
        if task.node_name and task.status is not TaskStatus.PENDING:
            held = topo.lca(held, topo.leaf_of(task.node_name))
    if held and group.topology_mode == "hard" and rt.rules("hypernode_gradient"):
        # where it runs already: only under its highest allowed domain holding that (Volcano main's
        # gradient for a SubJob searches from its allocated HyperNode's ancestor at that tier)
        root = topo.tree.highest_allowed(held, group.highest_tier_allowed)
        gradients = [kept for kept in ([n for n in names if root and topo.tree.within(n, root)]
                                       for names in gradients) if kept]
    allowed = gradients
    if not held:  # Volcano main's FilterGradientsByMinResource with the SubJob's minResources
        need = sub_group_min_resources(group)
        gradients = [kept for kept in ([n for n in names if _covers(topo, need, n)] for names in gradients) if kept]
    candidates: list[_Candidate] = []
    for gradient, names in enumerate(gradients):
        for name in names:
            trial = allocate_tasks(ctx, job, rt.task_queue(mine), within=topo.mask(name) & topo.mask(domain),
                                   ready_when=lambda: is_ready(group), pipelined_when=lambda: pipelined(group))
            if trial is None or not trial.ops:
                continue
            ops = [(op.kind, op.task, op.task.node_name) for op in trial.ops]
            trial.discard()
            ended = held
            for _kind, _task, node in ops:
                ended = topo.lca(ended, topo.leaf_of(node))
            candidates.append(_Candidate(gradient, name, ended or name, ops))
    return candidates, allowed


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One sub-group's dry run that left it ready or pipelined (Volcano main's subJobPlacementCandidate)."""

    gradient: int  # the tier group it was tried in, lowest first
    domain: str  # where it was tried
    ended_in: str  # the lowest domain holding the sub-group's tasks after it
    placements: list[tuple[str, TaskInfo, str]]


def _ranked_candidates(ctx: ActionContext, group: Any, candidates: list[_Candidate]) -> list[tuple[float, _Candidate]]:
    """The sub-group's placements, best first, with their scores (Volcano main's
    scoreSubJobPlacementCandidates): each domain a candidate ended in scored by
    `sub_group_hypernode_order`, those sharing the best score (when more than one) raised by
    `sub_group_hypernode_tie_break`; then the lowest tier group first, the best score, the first name."""
    rt, topo = ctx.runtime, ctx.state.topology
    ended = list(dict.fromkeys(c.ended_in for c in candidates))
    scores = {name: float(sum(rt.ask(rule, group, topo.info(name)) for rule in rt.rules("sub_group_hypernode_order")))
              for name in ended}
    top = max(scores.values())
    tied = [name for name in ended if scores[name] == top]
    if len(tied) > 1:
        for name in tied:
            scores[name] += float(sum(rt.ask(rule, group, topo.info(name))
                                      for rule in rt.rules("sub_group_hypernode_tie_break")))
    ranked = sorted(candidates, key=lambda c: (c.gradient, -scores[c.ended_in], c.domain))
    return [(scores[c.ended_in], c) for c in ranked]


def _best_candidate(ctx: ActionContext, group: Any, candidates: list[_Candidate]) -> tuple[float, _Candidate]:
    """The first of `_ranked_candidates`: the sub-group's placement a turn without search takes."""
    return _ranked_candidates(ctx, group, candidates)[0]


def transaction_sub_groups(ctx: ActionContext, job: JobInfo, groups: list[Any],
                           is_ready: Any) -> tuple[list[Any], set[int]]:
    """The sub-groups with pending tasks in the order a job's turn tries them, and the ids of those the
    turn must place even once the job is ready (Volcano main's requiredSubJobs and working set): per
    policy, the sub-groups not yet ready, in `sub_job_order`, as many as its minSubGroups still lacks
    after the ready ones; when none is, the first sub-group in order. The required ones go first."""
    counts: dict[str, int] = {}
    for group in job.sub_groups:
        if is_ready(group):
            counts[group.policy_name] = counts.get(group.policy_name, 0) + 1
    required: set[int] = set()
    for group in sub_group_order(ctx, [g for g in job.sub_groups if not is_ready(g)]):
        if counts.get(group.policy_name, 0) < job.min_sub_groups.get(group.policy_name, 0):
            required.add(id(group))
            counts[group.policy_name] = counts.get(group.policy_name, 0) + 1
    order = sub_group_order(ctx, groups)
    order = [g for g in order if id(g) in required] + [g for g in order if id(g) not in required]
    working = {id(g) for g in order if id(g) in required}
    if not working and order:
        working = {id(order[0])}
    return order, working


def sub_group_order(ctx: ActionContext, groups: list[Any]) -> list[Any]:
    """The job's sub-groups in `sub_job_order` (first rule with a non-zero answer decides), else by
    match_index, then name (Volcano's SubJobOrderFn and its default)."""
    rt = ctx.runtime
    rules = rt.rules("sub_job_order")

    def compare(l: Any, r: Any) -> int:
        for rule in rules:
            answer = rt.ask(rule, l, r)
            if answer:
                return -1 if answer < 0 else 1
        first, second = (l.match_index, l.name), (r.match_index, r.name)
        return -1 if first < second else (1 if first > second else 0)

    return sorted(groups, key=functools.cmp_to_key(compare))


def retry_deferred(ctx: ActionContext, plan: domain_plan.Plan | None,
                   worksheets: dict[str, Queue[TaskInfo]]) -> None:
    """optimize mode, after allocate's turns: the gangs refused while planned ones held their room try
    again, in job order, on what is left (committed when ready, kept when pipelined, as in a turn)."""
    if plan is None:
        return
    plan.domains.clear()
    waiting, plan.deferred = plan.deferred, []
    for job in waiting:
        tasks = worksheets[job.key]
        if tasks.empty():
            continue
        stmt, domain = allocate_job(ctx, job, tasks, plan=plan)
        if stmt is not None and ctx.runtime.job_ready(job):
            stmt.commit()
            if domain:
                job.allocated_hypernode = ctx.state.topology.lca(job.allocated_hypernode, domain)


@dataclass(frozen=True, slots=True)
class _Floor:
    """What a dry run that leaves a gang ready or pipelined places at the least (`least_placed`)."""

    columns: np.ndarray  # per resource column of the node arrays
    gpus: int  # whole GPUs (`optimize.gpus`), task by task


def least_placed(ctx: ActionContext, job: JobInfo, pending: list[TaskInfo]) -> _Floor | None:
    """A lower bound of what a dry run that leaves the gang ready or pipelined places: the smallest
    requests, column by column, of as many pending tasks as the gang still lacks (minAvailable less its
    ready, pipelined and pending best-effort tasks, as gang's `ready` and `pipelined` count; one task
    when no `job_ready` rule holds a job back). None when some request names a resource no column
    holds (nothing is pruned)."""
    arrays = ctx.placement.arrays
    requests = [t.resreq for t in pending if not t.best_effort]
    if not requests or any(arrays.unknown_dims(r) for r in requests):
        return None
    lacking = 1
    if ctx.runtime.rules("job_ready"):
        lacking = max(job.min_available - job.ready_count - job.pipelined_count - job.pending_best_effort_count, 1)
    matrix = np.sort(np.array([arrays.cached_vector(r) for r in requests]), axis=0)
    return _Floor(matrix[:lacking].sum(axis=0), sum(sorted(optimize.gpus(r) for r in requests)[:lacking]))


def _may_hold(ctx: ActionContext, job: JobInfo, floor: _Floor, name: str, plan: domain_plan.Plan | None) -> bool:
    """optimize mode: whether a dry run of the gang in domain `name` can succeed, judged from the
    domain's free totals alone: its nodes' free room (the larger of Idle and FutureIdle, node by node)
    covers `floor`, and, with a plan and another domain planned for the gang, its free GPUs less
    `floor`'s still cover the unserved planned gangs held inside it (else `Plan.keeps` refuses the
    trial after its dry run)."""
    arrays = ctx.placement.arrays
    rows = ctx.state.topology.node_rows(name)
    room = np.maximum(arrays.idle_now[rows], arrays.future[rows]).sum(axis=0)
    if (room < floor.columns).any():
        return False
    if plan is None or not plan.holds_room() or name == plan.domain(job):
        return True
    held = plan.held_within(ctx.state, name, job=job)
    if not held:
        return True
    # each node's whole GPUs (`optimize.gpus` of its FutureIdle) fall by at least the whole GPUs of
    # each task placed on it
    gpu_columns = np.array([i for d, i in arrays.index.items() if optimize.is_gpu_dim(d)], dtype=np.int64)
    free = int((arrays.future[np.ix_(rows, gpu_columns)].sum(axis=1) // 1000).sum())
    return free - floor.gpus >= held


def _fit_rows(ctx: ActionContext, pending: list[TaskInfo]) -> np.ndarray | None:
    """Per node row: some pending task's request fits the node's FutureIdle (a domain with no such node
    is not tried: a dry run there places nothing, the resource check coming before every predicate);
    None when some request names a resource no column holds (every domain is tried)."""
    arrays = ctx.placement.arrays
    out = np.zeros(len(arrays.future), dtype=bool)
    seen: set[int] = set()
    for task in pending:
        if id(task.resreq) in seen:
            continue
        seen.add(id(task.resreq))
        if arrays.unknown_dims(task.resreq):
            return None
        request = arrays.cached_vector(task.resreq)
        asked = request > 0  # only what it asks for: never prunes a domain Volcano's check would allow
        out |= (arrays.future[:, asked] >= request[asked]).all(axis=1)
    return out


def domain_gradients(ctx: ActionContext, job: JobInfo) -> list[list[str]]:
    """The domains to try, grouped by tier, lowest first: those every `hypernode_gradient` rule allows
    (all of them, from the cluster down; the rules say which); the cluster alone when there is no rule."""
    rt, topo = ctx.runtime, ctx.state.topology
    rules = rt.rules("hypernode_gradient")
    if not rules or not (job.topology_mode == "hard" or (ctx.optimize and job.topology_mode == "soft")):
        return [[hn.CLUSTER_ROOT]]  # a job with sub-groups only: its sub-groups pick their domains
    out = []
    for group in topo.gradients(hn.CLUSTER_ROOT):
        allowed = [n for n in group if all(rt.ask(rule, job, topo.info(n)) for rule in rules)
                   and _holds_min_resources(topo, job, n)]
        if allowed:
            out.append(allowed)
    return out


def sub_group_min_resources(group: Any) -> Resources:
    """A sub-group's minResources as Volcano main's SubJob counts them (GetMinResources: its gang is all
    of it): the requests of its pending tasks summed."""
    return total(t.resreq for t in group.tasks if t.status is TaskStatus.PENDING)


def _covers(topo: SessionTopology, need: Resources, name: str) -> bool:
    """The domain's nodes' Idle, or FutureIdle, summed cover `need` (Volcano main's
    hyperNodeSatisfiesMinResource)."""
    info = topo.info(name)
    return fits(need, info.idle) or fits(need, info.future_idle)


def _holds_min_resources(topo: SessionTopology, job: JobInfo, name: str) -> bool:
    """Volcano main's FilterGradientsByMinResource: a domain whose nodes' Idle, or FutureIdle, summed
    does not cover the job's minResources is not tried (not for a job already running somewhere, nor
    one without minResources)."""
    if job.allocated_hypernode or not job.has_min_resources:
        return True
    return _covers(topo, job.min_resources, name)


def unplaced_reason(topo: SessionTopology, job: JobInfo, pending: list[TaskInfo], tried: list[list[str]]) -> str:
    """Which domains the gang could not fit in and what would make it fit: the gang's request (its
    first min_available pending tasks, less what is already placed) against the most idle domain of the
    lowest tier allowed."""
    limit = f"network topology (hard, highest tier {job.highest_tier_allowed})"
    if not tried:
        return f"{limit}: no HyperNode of an allowed tier holds the job"
    need_count = max(job.min_available - job.ready_count - job.pipelined_count, 1)
    return _shortfall(topo, limit, "gang", total(t.resreq for t in pending[:need_count]), tried[0])


def sub_group_reason(topo: SessionTopology, group: Any, tried: list[list[str]]) -> str:
    """Why a hard sub-group found no domain: its pending tasks' requests (Volcano's SubJob
    minResources) against the most idle domain of the lowest tier it may use."""
    limit = f"sub-group {group.name} (hard, highest tier {group.highest_tier_allowed})"
    if not tried:
        return f"{limit}: no HyperNode of an allowed tier lies inside the job's domain"
    return _shortfall(topo, limit, "sub-group", sub_group_min_resources(group), tried[0])


def _shortfall(topo: SessionTopology, limit: str, what: str, need: Resources, lowest: list[str]) -> str:
    """`need` against the most idle of `lowest` (domains of one tier): what is short, and where."""
    tier = topo.tree.tier(lowest[0])
    scarce = _scarcest(need, [topo.info(n).idle for n in lowest])
    if scarce is None:
        return (f"{limit}: the {what} fits in no domain of tier {tier} ({', '.join(lowest[:5])}"
                f"{', ...' if len(lowest) > 5 else ''}) nor above within the limit")
    dim, wanted = scarce
    most = max(lowest, key=lambda n: topo.info(n).idle.get(dim, 0))
    has = topo.info(most).idle.get(dim, 0)
    return (f"{limit}: needs {_amount(dim, wanted)} {dim} under one tier-{tier} HyperNode; the most free is "
            f"{most} with {_amount(dim, has)}; free {_amount(dim, wanted - has)} more there, or allow a "
            f"higher tier")


def _scarcest(need: Resources, idles: list[Resources]) -> tuple[str, int] | None:
    """The requested dimension no domain has enough of (the first such, GPUs before cpu and memory)."""
    dims = sorted((d for d in need if d != "pods" and need.get(d, 0) > 0), key=lambda d: (d in ("cpu", "memory"), d))
    for dim in dims:
        if all(idle.get(dim, 0) < need.get(dim, 0) for idle in idles):
            return dim, need.get(dim, 0)
    return None


def _amount(dim: str, value: int) -> str:
    """Resources hold milli-units for cpu and extended resources, bytes for memory."""
    if dim == "memory":
        return f"{value / 2**30:g}Gi"
    return f"{value / 1000:g}"


def _drain(tasks: Queue[TaskInfo]) -> list[TaskInfo]:
    out = []
    while not tasks.empty():
        out.append(tasks.pop())
    return out
