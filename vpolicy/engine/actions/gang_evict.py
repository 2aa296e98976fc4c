"""What gangpreempt and gangreclaim share (Volcano's actions/gangevict): victims chosen in job-level
bundles so that a starving gang is placed whole, or nothing is evicted.

A starving job's pending tasks are its demand. Each victim job's candidate tasks split into a *safe*
bundle (tasks it can lose and stay gang-ready: its surplus over minAvailable and over each role's
minTaskMember) and a *whole* bundle (the rest: evicting them breaks the job). Bundles are ordered safe
first, then by the action's victim order (jobs, or queues), then by how much of the demand they cover
per resource they destroy (a safe bundle destroys nothing beyond itself), then by uid. The policy's
`evictable` rules (Volcano's UnifiedEvictable: gang permits every candidate, capacity keeps queues'
guarantee and deserved on reclaim) filter the candidates: a whole bundle survives only entire. Bundles are then taken cumulatively until the
cluster's idle plus releasing resources plus the victims' requests cover the demand; at each such
point the victims are evicted on trial and every pending task pipelined (allocatable, predicates,
FutureIdle fit, best node by the policy's scores); the attempt stands only when the job is then
pipelined, else it is undone and the next bundle added.

Domains (Volcano main's GetCandidateDomains): a job whose PodGroup has a hard networkTopology looks for
room domain by domain, inside the HyperNodes its `hypernode_gradient` rules allow (only those whose
allocatable covers its minResources, unless it already runs somewhere), the widest tier first and by
name within a tier, at most as many as the `hypernode_evict_limit` rules allow (the plugin's
`hypernode.gradient.evict.max-hypernodes`) and the action's `maxDomains` (default 8); victims, the
room counted and the nodes its tasks are pipelined to all lie inside the domain, and the first domain
where the job ends pipelined wins. Every other job has one domain, the whole cluster. Inside it, a
sub-group with a hard networkTopology goes inside one HyperNode of at most its tier whose allocatable
covers its pending tasks' requests (`_nominate`), as many as `hypernode_evict_limit` allows.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, Callable

import numpy as np

from vpolicy.engine.actions.allocate_topology import sub_group_min_resources
from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.heap import PriorityQueue
from vpolicy.engine.placement import fits
from vpolicy.engine.state import JobInfo, NodeInfo, QueueInfo, TaskInfo
from vpolicy.engine.statement import Statement
from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import PODS, Resources, ZERO, total
from vpolicy.model.snapshot import ALLOCATED_STATUSES, PREEMPTABLE_KEY, TaskStatus

SAFE, WHOLE = 0, 1
ALLOW_WHOLE_BUNDLE = "allowWholeBundle"  # the actions' argument: may whole-job bundles be taken
MAX_DOMAINS = "maxDomains"  # the actions' argument: how many HyperNode domains a hard-topology job tries
DEFAULT_MAX_DOMAINS = 8


@dataclass(slots=True)
class Bundle:
    kind: int  # SAFE or WHOLE
    job: JobInfo
    tasks: list[TaskInfo]
    local: Resources  # what evicting the bundle frees
    destroyed: Resources  # what it costs beyond that: the whole job's requests for a whole bundle


def allow_whole_bundle(ctx: ActionContext, action: str) -> bool:
    """The action's `allowWholeBundle` argument (default true); a value that is not a boolean keeps the
    default, as Volcano's GetBool does."""
    value = ctx.action_arguments.get(action, {}).get(ALLOW_WHOLE_BUNDLE)
    return value if isinstance(value, bool) else True


def max_domains(ctx: ActionContext, action: str) -> int:
    """The action's `maxDomains` argument (default 8; 0 or less: no limit, as PickDomainsFromGradients)."""
    value = ctx.action_arguments.get(action, {}).get(MAX_DOMAINS)
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_DOMAINS


def candidate_domains(ctx: ActionContext, job: JobInfo, action: str) -> list[str]:
    """The domains the job looks for room in, in order (see the module docstring): the whole cluster
    unless the job has a hard networkTopology on a cluster with HyperNodes and `hypernode_gradient`
    rules; then possibly none."""
    rt, topo = ctx.runtime, ctx.state.topology
    rules = rt.rules("hypernode_gradient")
    if not topo.enabled or job.topology_mode != "hard" or not rules:
        return [hn.CLUSTER_ROOT]
    by_tier: dict[int, list[str]] = {}
    for name in topo.tree.descendants(hn.CLUSTER_ROOT):
        info = topo.info(name)
        if not all(rt.ask(rule, job, info) for rule in rules):
            continue
        if not job.allocated_hypernode and job.has_min_resources and not fits(job.min_resources, info.allocatable):
            continue  # too small for the gang even empty
        by_tier.setdefault(info.tier, []).append(name)
    out = _widest_first(by_tier, rt.hypernode_evict_limit())
    cap = max_domains(ctx, action)
    return out[:cap] if cap > 0 else out


def domain_nodes(ctx: ActionContext, domain: str) -> list[NodeInfo]:
    """The domain's Ready nodes in snapshot order (all of them for the whole cluster)."""
    nodes = list(ctx.state.nodes.values())
    if domain == hn.CLUSTER_ROOT:
        return nodes
    members = ctx.state.topology.info(domain).node_set
    return [n for n in nodes if n.name in members]


def starving_jobs(ctx: ActionContext) -> tuple[list[QueueInfo], dict[str, list[JobInfo]]]:
    """The queues of the schedulable jobs and, per queue, its starving jobs (in no order yet)."""
    queues: dict[str, QueueInfo] = {}
    starving: dict[str, list[JobInfo]] = {}
    for job in ctx.schedulable_jobs():
        queues.setdefault(job.queue.name, job.queue)
        if ctx.runtime.job_starving(job):
            starving.setdefault(job.queue.name, []).append(job)
    return list(queues.values()), starving


def pending_demand(ctx: ActionContext, job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks that ask for something, not gated, in task order (the worksheet)."""
    pending = [t for t in job.tasks if t.status is TaskStatus.PENDING and not t.pod.scheduling_gated
               and not t.best_effort]
    queue = ctx.runtime.task_queue(pending)
    out = []
    while not queue.empty():
        out.append(queue.pop())
    return out


def gang_evictable_job(job: JobInfo) -> bool:
    """IsJobPreemptableForGangEviction: a PodGroup that says `volcano.sh/preemptable` (annotation, else
    label) is taken at its word (a value that is no boolean reads false); one that says nothing may be."""
    raw = job.pg.annotations.get(PREEMPTABLE_KEY, job.pg.labels.get(PREEMPTABLE_KEY))
    if raw is None:
        return True
    return raw.strip().lower() in ("1", "t", "true")


def job_bundles(job: JobInfo, candidates: list[TaskInfo]) -> list[Bundle]:
    """CreateJobBundles: the job's candidates split into what it can lose and stay gang-ready (safe)
    and the rest (whole), lowest task priority first."""
    tasks = sorted(candidates, key=lambda t: (t.priority, t.uid))
    surplus = job.ready_count + job.pending_best_effort_count - job.min_available
    if surplus < 0:  # not gang-ready already: evicting more breaks nothing more
        return [Bundle(SAFE, job, tasks, total(t.resreq for t in tasks), ZERO)]
    role_surplus: dict[str, int] = {}
    if job.min_available >= sum(job.min_task_member.values()):
        ready: dict[str, int] = {}
        for t in job.tasks:
            if t.status in ALLOCATED_STATUSES or t.status is TaskStatus.SUCCEEDED or (
                    t.status is TaskStatus.PENDING and t.best_effort):
                ready[t.role] = ready.get(t.role, 0) + 1
        role_surplus = {role: ready.get(role, 0) - least for role, least in job.min_task_member.items()}
    safe, whole = [], []
    for t in tasks:
        role_safe = t.role not in role_surplus or role_surplus[t.role] > 0
        if surplus > 0 and role_safe:
            safe.append(t)
            surplus -= 1
            if t.role in role_surplus:
                role_surplus[t.role] -= 1
        else:
            whole.append(t)
    bundles = []
    if safe:
        bundles.append(Bundle(SAFE, job, safe, total(t.resreq for t in safe), ZERO))
    if whole:
        bundles.append(Bundle(WHOLE, job, whole, total(t.resreq for t in whole), total(t.resreq for t in job.tasks)))
    return bundles


def sort_bundles(bundles: list[Bundle], need: Resources, victim_first: Callable[[Bundle, Bundle], bool] | None
                 ) -> list[Bundle]:
    """SortBundlesForPreempt / ForReclaim: safe first; then the action's victim order where it tells the
    two apart; then the most demand covered per resource destroyed; then job uid, first task uid, size."""
    def cmp(a: Bundle, b: Bundle) -> int:
        if a.kind != b.kind:
            return a.kind - b.kind
        if victim_first is not None and a.job is not b.job:
            ab, ba = victim_first(a, b), victim_first(b, a)
            if ab != ba:
                return -1 if ab else 1
        ra, rb = _roi(a, need), _roi(b, need)
        if ra != rb:
            return -1 if ra > rb else 1
        ka = (a.job.uid, a.tasks[0].uid if a.tasks else "", len(a.tasks))
        kb = (b.job.uid, b.tasks[0].uid if b.tasks else "", len(b.tasks))
        return -1 if ka < kb else (1 if ka > kb else 0)
    return sorted(bundles, key=cmp_to_key(cmp))


def allowed_bundles(bundles: list[Bundle], allowed: set[str], *, allow_whole: bool) -> list[Bundle]:
    """ApplyAllowedTasks: a safe bundle keeps its allowed tasks, a whole one survives only entire;
    whole bundles are dropped when the action's allowWholeBundle is false."""
    out = []
    for b in bundles:
        kept = [t for t in b.tasks if t.uid in allowed]
        if b.kind == WHOLE:
            if allow_whole and kept and len(kept) == len(b.tasks):
                out.append(b)
        elif kept:
            out.append(Bundle(SAFE, b.job, kept, total(t.resreq for t in kept), ZERO))
    return out


def run_turns(ctx: ActionContext, action: str,
              find_room: Callable[[ActionContext, Statement, QueueInfo, JobInfo, bool], bool], *,
              skip: Callable[[QueueInfo], bool] | None = None) -> None:
    """Both actions' loop: queues in queue order (`skip` leaves some out), in each its starving jobs in
    job order; `find_room(ctx, stmt, queue, job, allow_whole)` evicts and pipelines into a statement
    that is committed only when the job is then pipelined, and a job that got room comes back for
    another turn (Volcano pushes it back)."""
    rt = ctx.runtime
    allow_whole = allow_whole_bundle(ctx, action)
    queues, starving = starving_jobs(ctx)
    order: PriorityQueue[QueueInfo] = PriorityQueue(rt.queue_before, queues)
    while not order.empty():
        queue = order.pop()
        if skip is not None and skip(queue):
            continue
        jobs: PriorityQueue[JobInfo] = PriorityQueue(rt.job_before, starving.get(queue.name, []))
        while not jobs.empty():
            job = jobs.pop()
            stmt = ctx.statement()
            assigned = find_room(ctx, stmt, queue, job, allow_whole)
            if rt.job_pipelined(job):
                stmt.commit()
                if assigned:
                    jobs.push(job)
            else:
                stmt.discard()


def evict_in_domains(ctx: ActionContext, stmt: Statement, job: JobInfo, queue: QueueInfo, pending: list[TaskInfo],
                     candidate: Callable[[TaskInfo], bool], victim_first: Callable[[Bundle, Bundle], bool], *,
                     action: str, allow_whole: bool) -> bool:
    """Look for room for the job domain by domain (`candidate_domains`): in each, the bundles of the
    `candidate` tasks on its nodes, ordered with `victim_first` and filtered by the policy's
    `evictable` rules, are taken until the job is pipelined there. Whether a domain gave it room."""
    rt = ctx.runtime
    need = total(t.resreq for t in pending)
    for domain in candidate_domains(ctx, job, action):
        if not rt.job_starving(job):
            break
        nodes = domain_nodes(ctx, domain)
        bundles = candidate_bundles(ctx, candidate, nodes) if nodes else []
        if not bundles:
            continue
        ordered = sort_bundles(bundles, need, victim_first)
        flat = [t for b in ordered for t in b.tasks]
        allowed = {t.uid for t in rt.evictable(action, job, flat)}
        valid = allowed_bundles(ordered, allowed, allow_whole=allow_whole)
        if valid and place_with_victims(ctx, stmt, job, queue, sort_bundles(valid, need, victim_first),
                                        pending, action=action, nodes=nodes, domain=domain):
            return True
    return False


def place_with_victims(ctx: ActionContext, stmt: Statement, job: JobInfo, queue: QueueInfo, bundles: list[Bundle],
                       pending: list[TaskInfo], *, action: str, nodes: list[NodeInfo] | None = None,
                       domain: str = hn.CLUSTER_ROOT) -> bool:
    """Take bundles cumulatively; once they could cover the demand, try evicting them all and pipelining
    every pending task. The first attempt that leaves the job pipelined stays in `stmt`. `nodes`: the
    nodes of `domain` (the whole cluster when None): the room counted and where the tasks may go."""
    need = total(t.resreq for t in pending)
    within: np.ndarray | None = None
    if nodes is None:
        nodes = list(ctx.state.nodes.values())
    elif len(nodes) < len(ctx.state.nodes):
        within = np.zeros(len(ctx.state.nodes), dtype=bool)
        within[[ctx.placement.arrays.row[n.name] for n in nodes]] = True
    room = total(n.idle + n.releasing for n in nodes)
    chosen: list[TaskInfo] = []
    for bundle in bundles:
        chosen.extend(bundle.tasks)
        if not fits(need, room + total(t.resreq for t in chosen)):
            continue
        trial = ctx.statement()
        if _nominate(ctx, trial, job, queue, chosen, pending, action=action, within=within, domain=domain):
            stmt.merge(trial)
            return True
        trial.discard()
    return False


def _nominate(ctx: ActionContext, trial: Statement, job: JobInfo, queue: QueueInfo, victims: list[TaskInfo],
              pending: list[TaskInfo], *, action: str, within: np.ndarray | None = None,
              domain: str = hn.CLUSTER_ROOT) -> bool:
    """BuildNominationPlanInDomain: evict, then pipeline the pending tasks inside the domain (`within`,
    None: anywhere). A sub-group whose policy has a hard networkTopology goes inside one HyperNode of
    the domain of at most its tier, the widest first and by name (as the plugin's eviction gradient),
    all its pending tasks pipelined and the sub-group then ready or pipelined; sub-groups in
    `sub_job_order`, tasks of no sub-group last; done once the job is pipelined (or, a job already
    ready, after one sub-group)."""
    rt = ctx.runtime
    rules = rt.rules("evictable")
    rule = rules[0].label.location if rules else ""
    for victim in victims:
        if victim.status is TaskStatus.RUNNING or victim.status is TaskStatus.BOUND:
            trial.evict(victim, action=action, for_job=job.key, rule=rule)
    evicted = bool(victims)
    hard = [g for g in job.sub_groups if g.topology_mode == "hard"]
    if not hard or not rt.rules("hypernode_gradient") or not ctx.state.topology.enabled:
        return _pipeline_all(ctx, trial, queue, pending, within, evicted) and rt.job_pipelined(job)
    from vpolicy.engine.actions.allocate_topology import sub_group_order

    topo = ctx.state.topology
    ready_rules = rt.rules("sub_job_ready")
    was_ready = rt.job_ready(job)
    grouped: set[str] = set()
    for group in sub_group_order(ctx, job.sub_groups):
        members = {t.uid for t in group.tasks}
        grouped |= members
        mine = [t for t in pending if t.uid in members and t.status is TaskStatus.PENDING]
        if not mine or all(rt.ask(r, job, group) for r in ready_rules):
            continue
        placed = False
        for sub in _sub_group_domains(ctx, group, domain) if group.topology_mode == "hard" else [domain]:
            step = ctx.statement()
            mask = topo.mask(sub) if within is None else within & topo.mask(sub)
            if _pipeline_all(ctx, step, queue, mine, mask, evicted) and (
                    all(rt.ask(r, job, group) for r in ready_rules) or rt.sub_job_pipelined(job, group)):
                trial.merge(step)
                placed = True
                break
            step.discard()
        if not placed:
            return False
        if was_ready or rt.job_pipelined(job):
            return True
    rest = [t for t in pending if t.uid not in grouped]
    return _pipeline_all(ctx, trial, queue, rest, within, evicted) and rt.job_pipelined(job)


def _sub_group_domains(ctx: ActionContext, group: Any, domain: str) -> list[str]:
    """The HyperNodes under `domain` (itself included) of at most the sub-group's tier whose allocatable
    covers the sub-group's minResources (unless it already runs somewhere: the plugin's
    isEligibleHyperNode for eviction), the widest tier first and by name within a tier, at most
    `hypernode_evict_limit` (the plugin's eviction gradient)."""
    topo = ctx.state.topology
    tree = topo.tree
    placed = any(t.node_name and t.status is not TaskStatus.PENDING for t in group.tasks)
    need = None if placed else sub_group_min_resources(group)
    by_tier: dict[int, list[str]] = {}
    for name in tree.descendants(domain):
        if tree.tier(name) <= group.highest_tier_allowed and (need is None or fits(need, topo.info(name).allocatable)):
            by_tier.setdefault(tree.tier(name), []).append(name)
    return _widest_first(by_tier, ctx.runtime.hypernode_evict_limit())


def _widest_first(by_tier: dict[int, list[str]], limit: int | None) -> list[str]:
    """Domains by tier, the widest tier first and by name within a tier, at most `limit` of them (None:
    all); a tier that does not fit whole keeps its last names (Volcano's reverseAndCapEvictionGradients)."""
    out: list[str] = []
    for tier in sorted(by_tier, reverse=True):
        names = sorted(by_tier[tier])
        if limit is None:
            out.extend(names)
            continue
        room = limit - len(out)
        out.extend(names if len(names) <= room else names[len(names) - room:])
        if len(out) >= limit:
            break
    return out


def _pipeline_all(ctx: ActionContext, trial: Statement, queue: QueueInfo, tasks: list[TaskInfo],
                  within: np.ndarray | None, evicted: bool) -> bool:
    """Pipeline each pending task onto its best node among those where evicting could help (`within`:
    a node-row mask) that fit it on FutureIdle and pass the predicates; False at the first that cannot."""
    rt, placement = ctx.runtime, ctx.placement
    for task in tasks:
        if task.status is not TaskStatus.PENDING:
            continue
        if not rt.allocatable(queue, task):
            return False
        rows = placement.preempt_rows(task)
        if within is not None:
            rows = rows[within[rows]]
        candidates = [n for n in (placement.node_list[r] for r in rows.tolist())
                      if fits(task.resreq, n.future_idle) and rt.predicate(task, n) is None]
        if not candidates:
            return False
        node, _ = placement.best_node(task, candidates)
        if not fits(task.resreq, node.future_idle):
            return False
        trial.pipeline(task, node.name, eviction_occurred=evicted)
    return True


def _roi(bundle: Bundle, need: Resources) -> float:
    """bundleROI: demand covered by the freed resources (capped at the need) over the demand the
    destroyed resources would cover; a bundle that destroys nothing more scores infinity."""
    destroyed = _against(bundle.destroyed, need, cap=False)
    if destroyed == 0:
        return math.inf
    return _against(bundle.local, need, cap=True) / destroyed


def _against(res: Resources, need: Resources, *, cap: bool) -> float:
    score = 0.0
    for name, wanted in need.items():
        if name == PODS or wanted <= 0:
            continue
        value = res.get(name, 0)
        score += (min(value, wanted) if cap else value) / wanted
    return score


def candidate_bundles(ctx: ActionContext, keep: Callable[[TaskInfo], bool],
                      nodes: list[NodeInfo] | None = None) -> list[Bundle]:
    """The bundles of every job with candidate victims `keep` accepts on `nodes` (all nodes when None;
    candidates in node order)."""
    by_job: dict[str, tuple[JobInfo, list[TaskInfo]]] = {}
    for node in ctx.state.nodes.values() if nodes is None else nodes:
        for t in node.tasks:
            if t.job is not None and keep(t):
                by_job.setdefault(t.job.key, (t.job, []))[1].append(t)
    return [b for job, tasks in by_job.values() for b in job_bundles(job, tasks)]
