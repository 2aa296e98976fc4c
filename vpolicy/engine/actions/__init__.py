"""Volcano's actions as engine algorithms that consult the policy's rules (reference §4).

Each action is one module with a `run(ctx)` function; `ACTIONS` maps Volcano's action names to them
in the order a conf lists them. Actions decide nothing themselves beyond Volcano's skeleton: every
judgement (order, readiness, fairness, victims) is a call into the runtime's compiled rules.
"""
from __future__ import annotations

from typing import Callable

from vpolicy.engine.actions import allocate, backfill, enqueue, gangpreempt, gangreclaim, preempt, reclaim, shuffle
from vpolicy.engine.actions.context import ActionContext

ACTIONS: dict[str, Callable[[ActionContext], None]] = {
    "enqueue": enqueue.run,
    "allocate": allocate.run,
    "backfill": backfill.run,
    "preempt": preempt.run,
    "reclaim": reclaim.run,
    "shuffle": shuffle.run,
    "gangpreempt": gangpreempt.run,
    "gangreclaim": gangreclaim.run,
}
