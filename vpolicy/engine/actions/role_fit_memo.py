"""Volcano's per-role predicate error cache, for one job's turn of allocate or backfill.

Volcano's actions search nodes through a `PredicateHelper` made afresh for each job's turn
(`pkg/scheduler/util/predicate_helper.go`, v1.10.0 lines 47-87; main the same, `allocateResourcesForTasks`
and backfill's `allocateTasksForJob`). It keys each node's predicate error by job and role
(`taskGroupID`: `<job>/<volcano.sh/task-spec>`): once a task of a role failed on a node in this turn, the
role's later tasks are refused that node without being checked. The failure may have been the resource
check against FutureIdle, so a smaller sibling is refused a node that a bigger one did not fit. Right for
vcjob pods made from one template, a shortcut when the pods of a role differ; vpolicy makes Volcano's
decision here. A task without a role never reads the cache (issue volcano-sh/volcano#3527), and the
action argument `predicateErrorCacheEnable: false` turns it off.
"""
from __future__ import annotations

import numpy as np

from vpolicy.engine.actions.context import ActionContext
from vpolicy.engine.placement import FitErrors
from vpolicy.engine.state import TaskInfo

ENABLE_KEY = "predicateErrorCacheEnable"  # Volcano's conf.EnablePredicateErrCacheKey
CACHED_REASON = "node(s) failed the predicates for an earlier task of the same role"


class RoleFitMemo:
    """The nodes each role of one job failed on during one turn."""

    def __init__(self, ctx: ActionContext, action: str):
        self._ctx = ctx
        self._enabled = ctx.action_arguments.get(action, {}).get(ENABLE_KEY, True) is not False
        self._failed: dict[str, np.ndarray] = {}  # role -> per node row: failed for a task of the role
        # the role and feasible rows (`Placement.last_found`, the same array while no node's answer for
        # the class changed) whose failures the role's entry already holds: a job's tasks mostly find
        # the same rows, and adding them again would change nothing (a pass over every node per task)
        self._joined: tuple[str, np.ndarray] | None = None

    def refused(self, task: TaskInfo, row: int) -> bool:
        """Whether the cache refuses node `row` to `task` without checking it."""
        failed = self._failed.get(task.role) if self._enabled and task.role else None
        return failed is not None and bool(failed[row])

    def screen(self, task: TaskInfo, rows: np.ndarray, errors: FitErrors) -> np.ndarray:
        """The feasible `rows` the placement just found for `task` (`Placement.feasible_rows`), less the
        nodes the cache refuses; the nodes the task failed on join the role's entry. When nothing is
        left, `errors` says why, node by node."""
        if not self._enabled:
            return rows
        placement = self._ctx.placement
        before = self._failed.get(task.role) if task.role else None
        kept = rows if before is None else rows[~before[rows]]
        joined, found = self._joined, placement.last_found
        if task.role and (joined is None or joined[0] != task.role or joined[1] is not found):
            failed_now = np.ones(len(placement.node_list), dtype=bool)
            failed_now[found] = False
            if failed_now.any():
                self._failed[task.role] = failed_now if before is None else before | failed_now
            self._joined = (task.role, found)
        if before is not None and len(rows) and not len(kept):
            placement.explain(task, errors)
            for row in np.flatnonzero(before).tolist():
                errors.nodes.setdefault(placement.node_list[row].name, [CACHED_REASON])
            errors.add(placement.node_list[int(rows[0])].name, [CACHED_REASON])  # refresh the summary
        return kept
