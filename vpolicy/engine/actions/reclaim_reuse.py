"""reclaim's victim answers, kept per node while the queue shares they compared stay on the same side.

reclaim walks the nodes in node order for every reclaimer task and asks the `reclaimable` rules on
each until one frees room (Volcano's reclaim.go). Once a borrowing queue is back at its deserved
share, or its jobs at their gang minimum, every later reclaimer walks past the nodes holding its tasks
and the rules refuse them all again: at 1,000 nodes a reclaimer passed about 70 such nodes, at 5,000
several hundred, and the walk was the session. An answer can be reused exactly while everything it
read is unchanged or provably answers the same:

- the node's candidates (its version in the node arrays: every task placed, evicted or restatused on
  it), which the reclaimer's queue and the node decide (the action's `reclaimee` filter),
- the candidates' jobs (`SessionState.job_log`: every status change of a task of the job),
- what the rules read of the reclaimer: the subterms reading it alone (`victim_reuse.ReusePlan`'s
  inputs, such as proportion's `reclaimer.resreq`), computed per reclaimer and part of the key,
- the candidates' queues: attributes fixed for the session (`QUEUE_FIXED`), and `allocated`, which
  every eviction changes. The rules are evaluated a second time on views of the candidates whose
  queue's `allocated` is a probe (`_Allocated`): each comparison it takes part in (Volcano's
  `LessEqual` through `le`, a dimension's value through `get`, after adding or taking away
  requests) records the range of the queue's allocation, per dimension, over which its outcome stays
  the same. The answer holds while every queue's allocation stays inside its box (`_Box`).

Any other use of a probed value, a queue attribute outside `QUEUE_FIXED`, or a probing answer that
differs from the session's own keeps nothing for that node: the rules are asked there again, as
before. Only answers that, with the node's FutureIdle, cannot hold the reclaimer (ValidateVictims)
are kept (one that can is acted on at once, and the evictions change the node): while such an answer
holds, the node leaves the walks of the kind's later reclaimers in one array step (`open_rows`).
Queues' boxes are checked as arrays, one pass per queue whose allocation moved. `Reclaimees` keeps each
node's reclaimees per reclaimer queue, so nodes with none, or too few, leave the walk the same way.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from vpolicy.engine.actions.evict_common import fits_with
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import JobInfo, NodeInfo, QueueInfo, SessionState, TaskInfo
from vpolicy.engine.victim_reuse import ReusePlan, cannot_hold
from vpolicy.model.resources import Resources, total
from vpolicy.model.snapshot import TaskStatus

# Queue attributes no action changes during a session (QueueInfo's spec-derived fields).
QUEUE_FIXED = frozenset({
    "name", "weight", "priority", "state", "open", "reclaimable", "has_capability", "capability",
    "has_deserved", "deserved", "guarantee", "creation", "has_node_group_affinity",
})
# Job attributes fixed for the session, and the counts a status change moves (probed as integers).
JOB_FIXED = frozenset({
    "name", "namespace", "key", "uid", "priority", "min_available", "min_task_member", "min_resources",
    "has_min_resources", "creation", "preemptable", "labels", "annotations",
})
JOB_COUNTS = frozenset({
    "ready_count", "pipelined_count", "pending_count", "pending_best_effort_count", "valid_task_count", "task_count",
})
_KINDS = 32  # (reclaimer queue, inputs) memos kept; a queue's reclaimers come in a row
_EXACT = 2 ** 53  # integers a float64 holds exactly: the boxes' bounds are kept in float64 arrays


class Unprobeable(Exception):
    """A probed allocation met an operation the box bookkeeping does not cover."""


# ---------------------------------------------------------------------------------------------------
# Probing a queue's allocation
# ---------------------------------------------------------------------------------------------------

class _Box:
    """For one queue: per dimension, the closed integer range of its allocation over which every
    comparison recorded so far comes out as it did (`lo`, `hi`; dimensions not named are unbounded).
    `universe`: the dimensions the node arrays know; an allocation in any other stays out of reuse.
    For one job: the same per count (`JOB_COUNTS`)."""

    def __init__(self, universe: frozenset[str] = frozenset()):
        self.universe = universe
        self.lo: dict[str, float] = {}
        self.hi: dict[str, float] = {}
        self.exact = False  # (a job's) read beyond what is probed: holds only while it is unchanged

    def holds(self, read: Any) -> bool:
        """`read(name)`, the current values, inside every range."""
        for name, lo in self.lo.items():
            if read(name) < lo:
                return False
        for name, hi in self.hi.items():
            if read(name) > hi:
                return False
        return True


def _record(box: _Box, dim: str, offset: int, op: str, other: Any, outcome: bool) -> None:
    """`allocated[dim] + offset <op> other` came out `outcome`: narrow the dimension's range to the
    integers A for which it still does. An allocation is an integer, so a float `other` (a deserved
    share plus Volcano's 0.1) becomes an integer threshold exactly (floor, ceil) before `offset` moves it."""
    if type(other) is int:
        low = high = other
    elif type(other) is float and math.isfinite(other):
        low, high = math.floor(other), math.ceil(other)
    else:
        raise Unprobeable
    if not outcome:  # the kept side is the negation: not (x < c) is x >= c, and so on
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    # x = A + offset; for an integer x: x < c <=> x <= ceil(c) - 1, x <= c <=> x <= floor(c),
    # x > c <=> x >= floor(c) + 1, x >= c <=> x >= ceil(c)
    if op == "<":
        box.hi[dim] = min(box.hi.get(dim, math.inf), high - 1 - offset)
    elif op == "<=":
        box.hi[dim] = min(box.hi.get(dim, math.inf), low - offset)
    elif op == ">":
        box.lo[dim] = max(box.lo.get(dim, -math.inf), low + 1 - offset)
    else:
        box.lo[dim] = max(box.lo.get(dim, -math.inf), high - offset)


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _Dim:
    """One dimension of a probed allocation (what `get(left, r)` answers): compares as its value and
    records each comparison with a plain number in its queue's box."""

    __slots__ = ("box", "dim", "value", "offset")

    def __init__(self, box: _Box, dim: str, value: int, offset: int):
        self.box, self.dim, self.value, self.offset = box, dim, value, offset

    def _compare(self, op: str, other: Any) -> bool:
        if isinstance(other, bool) or type(other) not in (int, float):
            raise Unprobeable
        outcome = bool(_OPS[op](self.value, other))
        _record(self.box, self.dim, self.offset, op, other, outcome)
        return outcome

    def __lt__(self, other: Any) -> bool:
        return self._compare("<", other)

    def __le__(self, other: Any) -> bool:
        return self._compare("<=", other)

    def __gt__(self, other: Any) -> bool:
        return self._compare(">", other)

    def __ge__(self, other: Any) -> bool:
        return self._compare(">=", other)

    def _shift(self, other: Any, sign: int) -> _Dim:
        if isinstance(other, bool) or type(other) is not int:
            raise Unprobeable
        return _Dim(self.box, self.dim, self.value + sign * other, self.offset + sign * other)

    def __add__(self, other: Any) -> _Dim:
        return self._shift(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> _Dim:
        return self._shift(other, -1)

    def __eq__(self, other: object) -> bool:
        raise Unprobeable

    def __ne__(self, other: object) -> bool:
        raise Unprobeable

    __hash__ = None  # type: ignore[assignment]  # reason: a probed value is never a key

    def __bool__(self) -> bool:
        raise Unprobeable

    def __getattr__(self, name: str) -> Any:
        raise Unprobeable


class _Allocated:
    """A queue's `allocated`, probed: `value` is the allocation plus `offset` (requests added or taken
    away by the rule, as `left - c.resreq`); comparisons record in the queue's box."""

    __slots__ = ("box", "value", "offset")

    def __init__(self, box: _Box, value: Resources, offset: Resources):
        self.box, self.value, self.offset = box, value, offset

    def __sub__(self, other: Any) -> _Allocated:
        if type(other) is not Resources:
            raise Unprobeable
        return _Allocated(self.box, self.value - other, self.offset - other)

    def __add__(self, other: Any) -> _Allocated:
        if type(other) is not Resources:
            raise Unprobeable
        return _Allocated(self.box, self.value + other, self.offset + other)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return False  # as a Resources compares with a number (evaluate._res asks `v == 0`)
        raise Unprobeable

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # reason: a probed value is never a key

    def __bool__(self) -> bool:
        raise Unprobeable

    def get(self, dim: str, default: Any = None) -> _Dim:
        if default != 0 or isinstance(default, bool):
            raise Unprobeable  # only `get(left, r)`'s missing-is-zero reading is followed
        return _Dim(self.box, dim, self.value.get(dim, 0), self.offset.get(dim, 0))

    def le(self, other: Any) -> bool:
        """Resources.le: every dimension within the other's + 0.1. True: each dimension's range is
        bounded above, those not named too (they must stay at zero); false: one failing dimension
        bounded below."""
        if type(other) is not Resources:
            raise Unprobeable
        outcome = self.value.le(other)
        value, offset = self.value, self.offset
        names = set(value.keys()) | set(other.keys())
        if outcome:  # a dimension named by neither side stays within 0.1 of zero too
            for name in names | self.box.universe:
                _record(self.box, name, offset.get(name, 0), "<", other.get(name, 0) + 0.1, True)
        else:
            for name in sorted(names):
                limit = other.get(name, 0) + 0.1
                if not value.get(name, 0) < limit:
                    _record(self.box, name, offset.get(name, 0), "<", limit, False)
                    break
        return outcome

    def __getattr__(self, name: str) -> Any:
        raise Unprobeable


class _QueueView:
    """A candidate's queue as the probing evaluation sees it: `allocated` probed, attributes fixed
    for the session read through, anything else refused. Equal to (and hashed as) its queue, so a
    session constant indexed by queue (proportion's `deserved[q]`) and a `group c.queue` work alike."""

    __slots__ = ("_queue", "_allocated")

    def __init__(self, queue: QueueInfo, allocated: _Allocated):
        self._queue, self._allocated = queue, allocated

    def __getattr__(self, name: str) -> Any:
        if name == "allocated":
            return self._allocated
        if name in QUEUE_FIXED:
            return getattr(self._queue, name)
        raise Unprobeable

    def __eq__(self, other: object) -> bool:
        return other is self or other is self._queue

    def __hash__(self) -> int:
        return hash(self._queue)


class _JobView:
    """A candidate's job: its queue is the view, its counts probed in the job's box (`JOB_COUNTS`),
    attributes fixed for the session read through; reading any other marks the box `exact` (the
    answer then holds only until the job changes)."""

    __slots__ = ("_job", "_queue", "box")

    def __init__(self, job: JobInfo, queue: _QueueView, box: _Box):
        self._job, self._queue, self.box = job, queue, box

    def __getattr__(self, name: str) -> Any:
        if name == "queue":
            return self._queue
        value = getattr(self._job, name)
        if name in JOB_COUNTS and type(value) is int:
            return _Dim(self.box, name, value, 0)
        if name not in JOB_FIXED:
            self.box.exact = True
        return value

    def __eq__(self, other: object) -> bool:
        return other is self or other is self._job

    def __hash__(self) -> int:
        return hash(self._job)


class _TaskView:
    """A candidate: its job and queue are views; the rest is the task's (followed by the node version)."""

    __slots__ = ("task", "_job")

    def __init__(self, task: TaskInfo, job: _JobView):
        self.task, self._job = task, job

    def __getattr__(self, name: str) -> Any:
        if name == "job":
            return self._job
        if name == "queue":
            return self._job._queue
        return getattr(self.task, name)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self.task

    def __hash__(self) -> int:
        return hash(self.task)


# ---------------------------------------------------------------------------------------------------
# The answers kept
# ---------------------------------------------------------------------------------------------------

class _Kept:
    """Per node row, for one (reclaimer queue, inputs): 1 + the node version the answer was found at
    (0: none kept), the answer, its victims' requests summed per node column, and per queue it read
    the box of that queue's allocation (`lo`, `hi` per row and column; unbounded where not read)."""

    def __init__(self, rows: int, dims: int, cursor: int, holds: tuple[Any, ...]):
        self.version = np.zeros(rows, dtype=np.int64)
        self.answers: list[tuple[list[TaskInfo], Any] | None] = [None] * rows
        self.room = np.zeros((rows, dims))
        self.boxes: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # queue name -> (lo, hi)
        self.row_queues: list[tuple[str, ...]] = [()] * rows
        # job key -> (row, its keep's stamp, the job's box there) for answers that read the job
        self.by_job: dict[str, list[tuple[int, int, _Box]]] = {}
        self.stamp = np.zeros(rows, dtype=np.int64)  # per row: how many answers were kept there
        self.cursor = cursor  # how much of SessionState.job_log is accounted for
        self.holds = holds  # the inputs' objects, alive while their ids are in the key
        # queue name -> (its allocation's vector when `ok` was computed, per row: inside the box)
        self.ok: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}


def _frozen(value: Any) -> Any:
    """A key equal for equal values: a list (`dims(reclaimer.resreq)`) as a tuple, a set as a frozen
    one, a dict as its sorted items; TypeError for anything else unhashable."""
    if type(value) is list or type(value) is tuple:
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if type(value) is set or type(value) is frozenset:
        return ("set", frozenset(_frozen(v) for v in value))
    if type(value) is dict:
        return ("dict", tuple(sorted((_frozen(k), _frozen(v)) for k, v in value.items())))
    hash(value)
    return value


class ReclaimAnswers:
    """One reclaim action's kept answers of the `reclaimable` rules (see the module docstring)."""

    def __init__(self, runtime: Runtime, state: SessionState, arrays: Any, callback: str = "reclaimable"):
        """`arrays`: the placement's node arrays (`version`, `row`, `dims`, `future`)."""
        self.runtime, self.state, self.arrays, self.callback = runtime, state, arrays, callback
        functions = {p.module.name: p.module.functions for tier in runtime.tiers for p in tier}
        self.plan = ReusePlan.of(runtime.rules(callback), functions)
        self.universe = frozenset(arrays.dims)
        self.memos: dict[tuple[tuple[object, ...], tuple[object, ...]], _Kept] = {}  # (kind, inputs) -> answers
        self.reclaimees = Reclaimees(arrays)
        self.reused = 0  # answers given from a kept one, rows dropped from walks (tests, profiles)
        self.dropped = 0
        # the last reclaimer's inputs while no task changed status: ((its id, len(job_log)), key, holds)
        self._last: tuple[tuple[int, int], tuple[object, ...] | None, tuple[Any, ...]] | None = None

    # what the rules read of the reclaimer --------------------------------------------------------
    def _inputs(self, reclaimer: TaskInfo) -> tuple[tuple[object, ...], tuple[Any, ...]] | None:
        assert self.plan is not None
        env = dict(self.runtime.env)
        env["$preemptor"] = reclaimer
        key: list[object] = []
        holds: list[Any] = []
        for _name, fn, _may_probe in self.plan.inputs:
            try:
                value = fn(env)
            except Exception:  # noqa: BLE001  # reason: the session's own evaluation reports it; no reuse here
                return None
            try:
                key.append(("=", _frozen(value)))
            except TypeError:
                key.append(("id", id(value)))
                holds.append(value)
        return tuple(key), tuple(holds)

    def _memo(self, kind: tuple[object, ...], reclaimer: TaskInfo) -> _Kept | None:
        if self.plan is None:
            return None
        stamp = (id(reclaimer), len(self.state.job_log))
        if self._last is None or self._last[0] != stamp:
            found = self._inputs(reclaimer)
            self._last = (stamp, None if found is None else found[0], () if found is None else found[1])
        if self._last[1] is None:
            return None
        key = (kind, self._last[1])
        memo = self.memos.get(key)
        if memo is None:
            while len(self.memos) >= _KINDS:
                del self.memos[next(iter(self.memos))]
            memo = self.memos[key] = _Kept(len(self.arrays.version), len(self.arrays.dims),
                                           len(self.state.job_log), self._last[2])
        self._catch_up(memo)
        return memo

    def _catch_up(self, memo: _Kept) -> None:
        """Forget the rows whose answer read a job changed since the memo last looked, unless what it
        read stays in range (the job's box: its counts compared, nothing else that changes read)."""
        log = self.state.job_log
        if memo.cursor == len(log):
            return
        changed = {log[i].key: log[i] for i in range(memo.cursor, len(log))}
        memo.cursor = len(log)
        for key, job in changed.items():
            entries = memo.by_job.get(key)
            if not entries:
                continue
            kept = []
            for row, stamp, box in entries:
                if memo.stamp[row] != stamp or not memo.version[row]:
                    continue  # an answer since replaced or forgotten
                if box.exact or not box.holds(lambda name: getattr(job, name)):
                    memo.version[row] = 0
                else:
                    kept.append((row, stamp, box))
            memo.by_job[key] = kept

    # queues' boxes -------------------------------------------------------------------------------
    def _inside(self, memo: _Kept, name: str) -> np.ndarray:
        """Per row: the queue's allocation now is inside the row's box for it."""
        lo, hi = memo.boxes[name]
        queue = self.state.queues[name]
        allocated = queue.allocated
        vector = None if any(k not in self.universe for k in allocated.keys()) else \
            self.arrays.vector(allocated)
        held = memo.ok.get(name)
        if held is not None and (held[0] is None and vector is None or held[0] is not None and vector is not None
                                 and np.array_equal(held[0], vector)):
            return held[1]
        inside: np.ndarray
        if vector is None:  # an allocation in a dimension no node has: keep only rows that never read it
            inside = ~np.isfinite(lo).any(axis=1) & ~np.isfinite(hi).any(axis=1)
        else:
            inside = ((lo <= vector) & (vector <= hi)).all(axis=1)
        memo.ok[name] = (vector, inside)
        return inside

    def _valid(self, memo: _Kept, rows: np.ndarray) -> np.ndarray:
        valid: np.ndarray = memo.version[rows] == self.arrays.version[rows] + 1
        if valid.any():
            for name in memo.boxes:
                valid &= self._inside(memo, name)[rows]
        return valid

    # the walk ------------------------------------------------------------------------------------
    def open_rows(self, kind: tuple[object, ...], reclaimer: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """`rows` without those where a kept answer's victims, with the node's FutureIdle, cannot hold
        the reclaimer (ValidateVictims over the node columns, by a margin, so float sums never drop a
        node that fits)."""
        memo = self._memo(kind, reclaimer) if len(rows) else None
        if memo is None:
            return rows
        kept = self._valid(memo, rows)
        if not kept.any():
            return rows
        short = cannot_hold(self.arrays, reclaimer.resreq, rows[kept], memo.room)
        if short is None:
            return rows
        kept[kept] = short
        self.dropped += int(kept.sum())
        out: np.ndarray = rows[~kept]
        return out

    def victims(self, kind: tuple[object, ...], reclaimer: TaskInfo, node: NodeInfo,
                candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Any]:
        """The rules' answer among the node's reclaimees for `kind`, the reclaimer's queue: the kept
        one while it holds, else asked, and kept when it cannot hold the reclaimer (an answer that can
        is acted on at once, and the evictions change the node)."""
        memo = self._memo(kind, reclaimer) if candidates else None
        if memo is None:
            return self.runtime.victims(self.callback, reclaimer, candidates)
        row = self.arrays.row[node.name]
        rows = np.array([row])
        if self._valid(memo, rows)[0]:
            kept = memo.answers[row]
            assert kept is not None
            self.reused += 1
            return list(kept[0]), kept[1]
        answer = self.runtime.victims(self.callback, reclaimer, candidates)
        if fits_with(answer[0], reclaimer, node):
            memo.version[row] = 0
        else:
            self._keep(memo, row, reclaimer, candidates, answer)
        return answer

    def _keep(self, memo: _Kept, row: int, reclaimer: TaskInfo, candidates: list[TaskInfo],
              answer: tuple[list[TaskInfo], Any]) -> None:
        """Ask the rules again on views of the candidates whose queues' allocations are probed; keep
        the answer with the boxes found when it is the session's own."""
        memo.version[row] = 0
        boxes: dict[str, _Box] = {}
        queue_views: dict[int, _QueueView] = {}
        job_views: dict[int, _JobView] = {}
        job_boxes: dict[str, _Box] = {}
        views: list[_TaskView] = []
        for c in candidates:
            job = c.job
            if job is None:
                return
            qv = queue_views.get(id(job.queue))
            if qv is None:
                box = boxes[job.queue.name] = _Box(self.universe)
                qv = queue_views[id(job.queue)] = _QueueView(job.queue, _Allocated(box, job.queue.allocated,
                                                                                  Resources()))
            jv = job_views.get(id(job))
            if jv is None:
                jv = job_views[id(job)] = _JobView(job, qv, job_boxes.setdefault(job.key, _Box()))
            views.append(_TaskView(c, jv))
        try:
            again, rule = self.runtime.victims(self.callback, reclaimer, views)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001  # reason: a use the probes do not follow (Unprobeable, or what it causes)
            return
        found = [v.task if isinstance(v, _TaskView) else v for v in again]
        if rule is not answer[1] or len(found) != len(answer[0]) or any(a is not b for a, b in zip(found, answer[0])):
            return
        index = self.arrays.index
        read = {name: box for name, box in boxes.items() if box.lo or box.hi}
        if any(d not in index for box in read.values() for d in (*box.lo, *box.hi)) or any(
                abs(v) >= _EXACT for box in read.values() for v in (*box.lo.values(), *box.hi.values())
                if math.isfinite(v)):
            return  # a dimension no column holds, or a bound a float64 column would round
        self._forget_boxes(memo, row)
        for name, box in read.items():
            held = memo.boxes.get(name)
            if held is None:
                rows, dims = len(self.arrays.version), len(self.arrays.dims)
                held = memo.boxes[name] = (np.full((rows, dims), -np.inf), np.full((rows, dims), np.inf))
                memo.ok.pop(name, None)
            lo, hi = held
            for d, v in box.lo.items():
                lo[row, index[d]] = v
            for d, v in box.hi.items():
                hi[row, index[d]] = v
            self._recheck(memo, name, row)
        memo.row_queues[row] = tuple(read)
        memo.answers[row] = (list(answer[0]), answer[1])
        memo.room[row] = sum((self.arrays.cached_vector(v.resreq) for v in answer[0]), np.zeros(len(self.arrays.dims)))
        memo.stamp[row] += 1
        stamp = int(memo.stamp[row])
        for key, box in job_boxes.items():
            if box.exact or box.lo or box.hi:
                memo.by_job.setdefault(key, []).append((row, stamp, box))
        memo.version[row] = int(self.arrays.version[row]) + 1

    def _recheck(self, memo: _Kept, name: str, row: int) -> None:
        """The row's box for the queue changed: its entry in the queue's `ok` vector, if one is held."""
        held = memo.ok.get(name)
        if held is None:
            return
        vector, inside = held
        lo, hi = memo.boxes[name]
        if vector is None:
            inside[row] = not np.isfinite(lo[row]).any() and not np.isfinite(hi[row]).any()
        else:
            inside[row] = bool(((lo[row] <= vector) & (vector <= hi[row])).all())

    def _forget_boxes(self, memo: _Kept, row: int) -> None:
        for name in memo.row_queues[row]:
            lo, hi = memo.boxes[name]
            lo[row] = -np.inf
            hi[row] = np.inf
            self._recheck(memo, name, row)
        memo.row_queues[row] = ()


# ---------------------------------------------------------------------------------------------------
# The reclaimees on each node
# ---------------------------------------------------------------------------------------------------

_Table = tuple[np.ndarray, list[list[TaskInfo]], np.ndarray, np.ndarray]


class Reclaimees:
    """Per reclaimer queue, each node's reclaimees (Running, preemptable tasks of other reclaimable
    queues, in the node's order) with their requests summed per node column, kept at the node's
    version. Nodes with none, or with too few to free room for a reclaimer even all together
    (ValidateVictims on every candidate), leave its walk in one array step (`open_rows`) instead of
    one call each: the walk's nodes are the same for every reclaimer of a queue, whatever its request."""

    def __init__(self, arrays: Any):
        self.arrays = arrays
        # queue name -> per row: 1 + the node version the row was listed at, the lists, their lengths
        # and their requests' sums
        self.tables: dict[str, _Table] = {}

    def _table(self, queue: QueueInfo, rows: np.ndarray) -> _Table:
        table = self.tables.get(queue.name)
        if table is None:
            n = len(self.arrays.version)
            table = self.tables[queue.name] = (np.zeros(n, dtype=np.int64), [[] for _ in range(n)],
                                               np.zeros(n, dtype=np.int64), np.zeros((n, len(self.arrays.dims))))
        listed, lists, counts, sums = table
        stale = rows[listed[rows] != self.arrays.version[rows] + 1]
        infos = self.arrays.infos
        for row in stale.tolist():
            found = [t for t in infos[row].tasks
                     if t.status is TaskStatus.RUNNING and t.preemptable and t.job is not None
                     and t.job.queue is not queue and t.job.queue.reclaimable]
            lists[row] = found
            counts[row] = len(found)
            sums[row] = self.arrays.vector(total(t.resreq for t in found))
            listed[row] = self.arrays.version[row] + 1
        return table

    def open_rows(self, queue: QueueInfo, reclaimer: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """`rows` without the nodes holding no reclaimee for the queue's reclaimer, or too few."""
        if not len(rows):
            return rows
        _listed, _lists, counts, sums = self._table(queue, rows)
        rows = rows[counts[rows] > 0]
        short = cannot_hold(self.arrays, reclaimer.resreq, rows, sums) if len(rows) else None
        if short is None:
            return rows  # a dimension no column holds: each node is asked (`fits_with`)
        out: np.ndarray = rows[~short]
        return out

    def on(self, queue: QueueInfo, row: int) -> list[TaskInfo]:
        """The node's reclaimees for the queue's reclaimers now (in the node's order)."""
        return self._table(queue, np.array([row]))[1][row]
