"""shuffle: evict the running tasks the policy's `victim_tasks` rules select (Volcano's shuffle action).

Volcano's shuffle gathers every Running task of every job, asks the plugins' VictimTasks functions
(rescheduling's strategies, tdm's closed revocable windows, and pdb's filter) which of them to evict —
the union within a tier, the first tier with any victim deciding — and evicts each one. It places
nothing: the evicted pods come back through the job controller and land elsewhere in a later session.
Every eviction is committed at once, as Volcano's `ssn.Evict` does; the rule that chose the victim is
not tracked per task (the first `victim_tasks` rule of the deciding tier is named).
"""
from __future__ import annotations

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.statement import Statement
from vpolicy.model.snapshot import TaskStatus

ACTION = "shuffle"


def run(ctx: ActionContext) -> None:
    rt = ctx.runtime
    if not rt.has("victim_tasks"):
        return
    running = [t for job in ctx.state.jobs.values() for t in job.tasks if t.status is TaskStatus.RUNNING]
    victims = rt.victim_tasks(running)
    if not victims:
        return
    rules = rt.rules("victim_tasks")
    rule = rules[0].label.location if rules else ""
    stmt = Statement(ctx.state, ctx.outcome)
    for victim in victims:
        if victim.status is TaskStatus.RUNNING:
            stmt.evict(victim, action=ACTION, for_job=victim.job.key if victim.job else "", rule=rule)
    stmt.commit()
