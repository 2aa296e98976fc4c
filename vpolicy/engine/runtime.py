"""The session's view of the policy: compiled rules grouped into Volcano tiers, combined as Volcano does.

Each callback (`job_order`, `predicate`, `preemptable`, ...) has one combination rule (reference §3):
first non-zero for orders, AND for readiness, votes per tier for pipelined/enqueueable, intersection
within a tier for victims, sum for node scores. This module is that table, plus session opening: each
plugin's session constants (`let` without parameters) are evaluated once, in file order.

It knows nothing of actions (see `actions`); it never changes session state.

Rule coverage (for `vpolicy test --coverage`) is off by default and then costs nothing: only inside
`recording_coverage(counts)` does a new `Runtime` count, per rule label, its calls and its deciding
answers (`DECIDES`), by swapping in a counting `_call` on that instance.

A rule that fails on this session's values (an index past a list's end, a map's missing key compared
as none, a helper that never stops calling itself) is the policy's mistake, not the engine's: where
rules are called (`Runtime._call`, and the batched node rules of `engine.placement`), the failure
becomes `RuleFailed`, a `PolicyError` with one `eval.failed` diagnostic at the rule. The `try` costs
nothing in CPython 3.11 until something raises; nothing is recorded per call.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timezone as dt_timezone, tzinfo
from typing import TYPE_CHECKING, Any, Sequence

from vpolicy.compile import evaluate, ir
from vpolicy.compile.ir import Label
from vpolicy.compile.lower import CompiledModule, CompiledRule, classify, is_comparison
from vpolicy.engine.heap import KeyedQueue, PriorityQueue, Queue, SortedQueue
from vpolicy.engine.state import JobInfo, NodeInfo, QueueInfo, SessionState, TaskInfo
from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.lang.builtins import CALLBACKS, JOB, QUEUE
from vpolicy.source import Span

# When an answer of a rule decided something, by how its callback's answers are combined: a non-zero
# order or vote (abstain is 0), a false test (the first false one ends an AND), a true `overused` (the
# first true one ends the OR), any `job_starving` answer (only the first tier with rules is asked, and
# none is no), victims, a non-zero node score.
DECIDES: dict[str, Callable[[Any], bool]] = {
    "first-non-zero": lambda v: v != 0,
    "first-failure": lambda v: not v,
    "and": lambda v: not v,
    "or": bool,
    "vote": lambda v: v != 0,
    "first-tier-and": lambda v: True,
    "sum": lambda v: v != 0,
    "tier-intersection": bool,
    "tier-union": bool,
    "each": lambda v: False,  # session_close: asked for its effect, its answer decides nothing
    "min": lambda v: True,  # hypernode_evict_limit: every answer bounds the count
}


@dataclass(slots=True)
class RuleCounts:
    """Per rule label: how often it was called, and how often its answer decided something."""

    calls: Counter[Label] = field(default_factory=Counter)
    decided: Counter[Label] = field(default_factory=Counter)


_COVERAGE: ContextVar[RuleCounts | None] = ContextVar("vpolicy_rule_coverage", default=None)


@contextmanager
def recording_coverage(counts: RuleCounts) -> Iterator[RuleCounts]:
    """Count into `counts` the rule calls of every session opened inside this block (this context only)."""
    token = _COVERAGE.set(counts)
    try:
        yield counts
    finally:
        _COVERAGE.reset(token)


# What evaluating a rule raises on values the checker cannot rule out: an index past a list's end (an
# IndexError), a map's missing key read as none and then compared, added or passed on (TypeError,
# AttributeError), a helper that never stops calling itself (RecursionError), a number too large for a
# float (OverflowError). Anything else is a broken invariant of the engine and propagates as it is.
RULE_FAILURES: tuple[type[BaseException], ...] = (
    ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError, evaluate.EvaluationError)
EVAL_FAILED = "eval.failed"
# Python's names for the values rules compute, as the DSL calls them (in failure messages).
_DSL_TYPES = {"NoneType": "none", "int": "int", "float": "number", "str": "string", "bool": "bool", "list": "list",
              "dict": "map", "Resources": "resources", "QueueInfo": "queue", "JobInfo": "job", "TaskInfo": "task",
              "NodeInfo": "node"}
_PYTHON_TYPE = re.compile(r"'(\w+)'")
# TypeError's two wordings of an operator applied to values it does not take: (operator, left, right).
_OPERATOR_ERRORS = (re.compile(r"'(\S+)' not supported between instances of '(\w+)' and '(\w+)'"),
                    re.compile(r"unsupported operand type\(s\) for (\S+): '(\w+)' and '(\w+)'"))
# Where generated helpers run (compile.pycode, compile.vcode): a frame `u_NAME` there is helper NAME.
_GENERATED_FILES = ("<vpolicy-generated>", "<vpolicy-vector>")
_VECTOR_HELPER = re.compile(r"v_(\w+?)_\d+")


class RuleFailed(PolicyError):
    """A rule, one of its clauses, or a session constant failed on this session's values: bad input (a
    policy that does not handle the cluster it met), as one located `eval.failed` diagnostic."""

    def __reduce__(self) -> tuple[type[RuleFailed], tuple[list[Diagnostic]]]:
        # `simulate --parallel` sends it back from a worker process; PolicyError's args are its text only
        return (RuleFailed, (self.diagnostics,))


def rule_failed(label: Label, exc: BaseException, *, part: str = "") -> RuleFailed:
    """The diagnostic for `exc`, raised while evaluating the rule of `label` (or its `part`: reason,
    message, normalize weight), located at the rule: IR terms keep no spans of their own."""
    message, help = describe_failure(exc)
    where = f"rule {label.rule_id}" + (f" ({part})" if part else "")
    return RuleFailed([Diagnostic(EVAL_FAILED, f"{where}: {message}", label.span, help=help)])


def evaluate_clause(rule: CompiledRule, clause: evaluate.Closure, env: dict[str, Any], *, part: str) -> Any:
    """One of a rule's clauses (`reason`, `message`, `normalize`) over `env`, its failure located at the rule."""
    try:
        return clause(env)
    except RULE_FAILURES as exc:
        raise rule_failed(rule.label, exc, part=part) from exc


def describe_failure(exc: BaseException) -> tuple[str, str | None]:
    """What went wrong, in the DSL's words (`none`, `string`, `map`, not Python's type names), and what
    the policy's author can do about it."""
    if isinstance(exc, RecursionError):
        helpers = _recursing_helpers(exc)
        if not helpers:
            return "recursion too deep", "make sure every recursive helper reaches a case that does not call itself"
        if len(helpers) > 1:
            named = " and ".join(f"'{h}'" for h in helpers)
            return (f"helpers {named} keep calling each other (recursion too deep)",
                    "give one of them a case that returns without calling the other")
        return (f"helper '{helpers[0]}' keeps calling itself (recursion too deep)",
                f"give '{helpers[0]}' a case that returns without calling itself")
    text = _in_dsl_words(str(exc))
    if isinstance(exc, KeyError):
        return f"no value for key {text}", None
    if isinstance(exc, (TypeError, AttributeError)) and "none" in text:
        return (f"a value is none where it cannot be: {text}",
                "indexing a map by a key it lacks gives none, as does the root queue's parent; "
                "test 'm[k] != none' first")
    if isinstance(exc, IndexError):
        return text, "test the length first: if len(xs) > i then xs[i] else ..."
    if isinstance(exc, ZeroDivisionError):
        return "division by zero", "ratio(a, b) is 0 when b is 0"
    if isinstance(exc, OverflowError):
        return f"a number is too large: {text}", None
    return text, None


@dataclass(frozen=True, slots=True)
class PluginInstance:
    """One plugin of one tier: its compiled module and its enable flags from the conf."""

    name: str
    module: CompiledModule
    flags: dict[str, bool]

    def rules(self, callback: str) -> list[CompiledRule]:
        flag = CALLBACKS[callback].flag
        if flag is not None and not self.flags.get(flag, True):
            return []
        return self.module.rules.get(callback, [])


@dataclass(frozen=True, slots=True)
class PredicateFailure:
    reason: str
    unresolvable: bool
    rule: CompiledRule


@dataclass(frozen=True, slots=True)
class JobInvalid:
    reason: str
    message: str
    rule: CompiledRule


class Runtime:
    def __init__(self, tiers: Sequence[Sequence[PluginInstance]], state: SessionState, *, now: float = 0.0,
                 last_runs: Mapping[str, float] | None = None, timezone: tzinfo | None = None,
                 started: float | None = None):
        self.tiers = [list(t) for t in tiers]
        self.state = state
        # `$tz`: the zone `time_of_day` reads the session clock in (compile.functions.time_of_day)
        # `$candidates`: the nodes a node_order rule is scored among (engine.placement sets them while
        # it scores; every Ready node otherwise), read by `candidate_nodes()`
        self.env: dict[str, Any] = {"cluster": state.cluster, "$session": {}, "$now": now,
                                    "$tz": timezone or dt_timezone.utc, "$candidates": state.cluster.nodes}
        # `every` rules: when each last ran in this scheduler process (rule id -> session clock), and
        # the ones that ran in this session (the caller carries them into the next session's last_runs)
        self.last_runs: Mapping[str, float] = last_runs or {}
        self.ran: dict[str, float] = {}
        # when the scheduler started (`every ... from start` rules count their first period from it);
        # None: this session is a fresh scheduler's first
        self.started = now if started is None else started
        self.calls = 0
        counts = _COVERAGE.get()
        if counts is not None:  # an instance attribute, so the class's plain `_call` stays as fast when off
            self._call = self._counting_call(counts)  # type: ignore[method-assign]  # reason: opt-in coverage
        shared = _shared_tables(self.tiers)
        self._open_session_lets(shared.lets)
        self._flat: dict[str, list[CompiledRule]] = {}
        self._task_attrs: list[tuple[str, bool] | None] | None = None  # see _sorted_by_attributes
        if counts is None:  # the tables depend on the tiers alone: shared by the policy's sessions, read only
            tables = shared
            self._by_callback, self._flat, self._orders = tables.by_callback, tables.flat, tables.orders
            self._fixed_task_order = tables.fixed_task_order
            self._job_keys = tables.job_keys
            self._queue_keys = tables.queue_keys
            self._order_memo: dict[tuple[int, Any, Any], Any] = {}
        else:
            # coverage counts every comparison: jobs and queues compared by their rules
            self._job_keys = self._queue_keys = None
            self._by_callback = _by_callback(self.tiers)
            self._flatten()
            self._scalar_only()

    def _open_session_lets(self, lets: _LetPlan) -> None:
        """Each plugin's session constants, in file order; a let computed as an earlier one is not redone."""
        session = self.env["$session"]
        for key, fn, same_as in lets:
            if same_as is not None:
                session[key] = session[same_as]
                continue
            try:
                session[key] = fn(self.env)
            except RULE_FAILURES as exc:
                raise self._let_failed(key, exc) from exc

    def _let_failed(self, key: tuple[str, str], exc: BaseException) -> RuleFailed:
        """The diagnostic of a session constant that failed, at its `let`."""
        module_name, name = key
        module = next(p.module for tier in self.tiers for p in tier if p.module.name == module_name)
        message, help = describe_failure(exc)
        span = module.let_spans.get(name) or Span(module.file, 1, 1)
        return RuleFailed([Diagnostic(EVAL_FAILED, f"let {module_name}.{name}: {message}", span, help=help)])

    def has(self, callback: str) -> bool:
        return any(self._by_callback[callback])

    def rules(self, callback: str) -> list[CompiledRule]:
        """Every enabled rule of `callback` in combination order (tiers, then plugins): for callers that
        need each rule's own answer (explanations, feasibility, bounds), not the combined vote."""
        return self._flat[callback]

    def _flatten(self) -> None:
        """Each callback's rules in combination order, listed once (asked for on every comparison)."""
        self._flat = {cb: [r for tier in per_tier for _p, rules in tier for r in rules]
                      for cb, per_tier in self._by_callback.items()}
        self._orders = {cb: [(rule, _fixed_key(rule)) for rule in self._flat[cb]]
                        for cb in ("queue_order", "job_order", "task_order")}
        self._order_memo = {}
        self._fixed_task_order = all(key is not None and _is_comparison(rule)
                                     for rule, key in self._orders["task_order"])

    def ask(self, rule: CompiledRule, *args: Any) -> Any:
        """One rule's own answer, outside the combination of its callback (tools such as `explain` ask
        rules one by one); a failure is located at the rule, as in a session."""
        return self._call(rule, *args)

    def _call(self, rule: CompiledRule, *args: Any) -> Any:
        self.calls += 1
        env = self.env  # CompiledRule.call, written out: this is the engine's most frequent call
        for name, value in zip(rule.params, args):
            env[name] = value
        try:  # free until something raises (CPython 3.11's zero-cost exceptions)
            return rule.fn(env)
        except RULE_FAILURES as exc:
            raise rule_failed(rule.label, exc) from exc

    def _counting_call(self, counts: RuleCounts) -> Callable[..., Any]:
        decides = {name: DECIDES[cb.combine] for name, cb in CALLBACKS.items()}

        def call(rule: CompiledRule, *args: Any) -> Any:
            self.calls += 1
            try:
                value = rule.call(self.env, *args)
            except RULE_FAILURES as exc:
                raise rule_failed(rule.label, exc) from exc
            counts.calls[rule.label] += 1
            if decides[rule.callback](value):
                counts.decided[rule.label] += 1
            return value

        return call

    def _scalar_only(self) -> None:
        """Coverage counts calls through `_call`, so node rules lose their batched form (same answers)."""
        for per_tier in self._by_callback.values():
            for entries in per_tier:
                for i, (plugin, rules) in enumerate(entries):
                    entries[i] = (plugin, [_scalar(r) for r in rules])
        self._flatten()

    # orders: first non-zero ----------------------------------------------------------------------
    def _order(self, callback: str, l: Any, r: Any) -> int:
        memo = self._order_memo
        for rule, key in self._orders[callback]:
            if key is None:
                v = self._call(rule, l, r)
            else:
                k = (id(rule), key(l), key(r))
                v = memo.get(k)
                if v is None:
                    v = memo[k] = self._call(rule, l, r)
            if v:
                return -1 if v < 0 else 1
        return 0

    def queue_before(self, l: QueueInfo, r: QueueInfo) -> bool:
        v = self._order("queue_order", l, r)
        if v:
            return v < 0
        if l.creation != r.creation:
            return l.creation < r.creation
        return l.name < r.name

    def job_before(self, l: JobInfo, r: JobInfo) -> bool:
        v = self._order("job_order", l, r)
        if v:
            return v < 0
        if l.creation != r.creation:
            return l.creation < r.creation
        return l.key < r.key  # Volcano's JobID is <namespace>/<podgroup name>

    def job_queue(self) -> Queue[JobInfo]:
        """A queue of one queue's jobs for enqueue and allocate, popped in job order. When every job_order
        rule sorts by expressions of the job's own state (`_own_state_keys`), the jobs are ordered by
        keys computed when pushed: in those actions only the popped job changes before it is pushed
        back (if it is), so its key is the live answer, and Go's heap pops the smallest. Else Go's heap
        comparing live values."""
        if self._job_keys is None:
            return PriorityQueue(self.job_before)
        return KeyedQueue(self._job_key)

    def _job_key(self, job: JobInfo) -> tuple[Any, ...]:
        """The job's place in job order: each rule's expressions (negated when descending), then Volcano's
        tie-break (creation, then namespace/name): comparing keys is `job_before`."""
        return (*self._order_key(self._job_keys or (), job), job.creation, job.key)

    def turn_queue_heap(self) -> Queue[QueueInfo]:
        """The queues of an action that serves them in turns, where only the popped queue changes before
        it is pushed back (enqueue, allocate), popped in queue order. As `job_queue`: by keys computed
        when pushed when every queue_order rule sorts by expressions of the queue's own state
        (`_own_state_keys`); else Go's heap comparing live values. Not for preempt and reclaim: their
        evictions change other queues' state."""
        if self._queue_keys is None:
            return PriorityQueue(self.queue_before)
        return KeyedQueue(self._queue_key)

    def _queue_key(self, queue: QueueInfo) -> tuple[Any, ...]:
        """The queue's place in queue order; comparing keys is `queue_before`."""
        return (*self._order_key(self._queue_keys or (), queue), queue.creation, queue.name)

    def _order_key(self, rules: tuple[CompiledRule, ...], item: Any) -> list[Any]:
        """Each rule's order keys for `item`, in order (negated when descending)."""
        env = self.env
        key: list[Any] = []
        for rule in rules:
            self.calls += 1
            env[rule.params[0]] = item
            for order_key in rule.order_keys:
                try:
                    value = order_key.fn(env)
                except RULE_FAILURES as exc:
                    raise rule_failed(rule.label, exc) from exc
                key.append(_descending(value) if order_key.descending else value)
        return key

    def task_queue(self, tasks: Sequence[TaskInfo] = ()) -> Queue[TaskInfo]:
        """A queue of tasks popped in task order: sorted once when the task order is fixed for the
        session (every rule compares a fixed attribute of the two tasks; ties end in the task uid),
        else Go's heap comparing live values."""
        if self._fixed_task_order:
            keyed = self._sorted_by_attributes(tasks)
            if keyed is not None:
                return SortedQueue(self.task_before, keyed, presorted=True)
            return SortedQueue(self.task_before, tasks)
        return PriorityQueue(self.task_before, tasks)

    def _sorted_by_attributes(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo] | None:
        """Tasks in task order without running the rules per comparison, when every task_order rule
        compares one numeric attribute (`compare(l.a, r.a)` ascending, `compare(r.a, l.a)` descending):
        sorted by Volcano's tie-break first, then stably by the rules' attributes, which is the order
        "first rule that differs, else the tie-break" gives. None when a rule is of another form."""
        attrs = self._task_attrs
        if attrs is None:
            attrs = self._task_attrs = [_attribute_compared(rule) for rule, _key in self._orders["task_order"]]
        if any(a is None for a in attrs):
            return None
        values = [[getattr(t, name) for name, _desc in attrs] for t in tasks]  # type: ignore[misc]  # reason: None excluded above
        if not all(type(v) in (int, float, bool) for row in values for v in row):
            return None
        indexes = [t.order_index for t in tasks]
        if None not in indexes and len(set(indexes)) == len(indexes):  # the tie-break is the name index
            out = sorted(tasks, key=operator.attrgetter("order_index"))
        else:
            out = sorted(tasks, key=functools.cmp_to_key(_default_task_cmp))
        keys = {id(t): tuple(-v if desc else v for v, (_n, desc) in zip(row, attrs))  # type: ignore[misc]  # reason: as above
                for t, row in zip(tasks, values)}
        out.sort(key=lambda t: keys[id(t)])
        return out

    def task_before(self, l: TaskInfo, r: TaskInfo) -> bool:
        v = self._order("task_order", l, r)
        if v:
            return v < 0
        return default_task_before(l, r)

    def victim_queue_before(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:
        for rule in self.rules("victim_queue_order"):
            v: float = self._call(rule, l, r, preemptor)
            if v:
                return v < 0
        return not self.queue_before(l, r)

    # job-level predicates --------------------------------------------------------------------------
    def job_valid(self, job: JobInfo) -> JobInvalid | None:
        for rule in self.rules("job_valid"):
            if not self._call(rule, job):
                reason = evaluate_clause(rule, rule.reason, self.env, part="reason") if rule.reason else rule.name
                message = evaluate_clause(rule, rule.message, self.env, part="message") if rule.message else reason
                return JobInvalid(reason, message, rule)
        return None

    def _all(self, callback: str, *args: Any) -> bool:
        rules = self.rules(callback)
        if len(rules) == 1:  # the usual case (allocatable, job_ready per task): no generator per call
            return bool(self._call(rules[0], *args))
        return all(self._call(rule, *args) for rule in rules)

    def job_ready(self, job: JobInfo) -> bool:
        return self._all("job_ready", job)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all("allocatable", queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all("preemptive", queue, task)

    def overused(self, queue: QueueInfo) -> bool:
        return any(self._call(rule, queue) for rule in self.rules("overused"))

    def _vote(self, callback: str, *args: Any) -> bool:
        for tier in self._by_callback[callback]:
            permitted = False
            for _plugin, rules in tier:
                for rule in rules:
                    v = self._call(rule, *args)
                    if v < 0:
                        return False
                    if v > 0:
                        permitted = True
            if permitted:
                return True
        return True

    def hypernode_evict_limit(self) -> int | None:
        """How many HyperNode domains an evicting action tries for a hard-mode job or sub-group: the
        least `hypernode_evict_limit` answer (the network-topology-aware plugin's
        hypernode.gradient.evict.max-hypernodes); None without a rule (no limit)."""
        answers = [int(self._call(rule)) for rule in self.rules("hypernode_evict_limit")]
        return min(answers) if answers else None

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def sub_job_pipelined(self, job: JobInfo, group: Any) -> bool:
        """A sub-group's gang placed or pipelined (`sub_job_pipelined` votes; none: it is)."""
        return self._vote("sub_job_pipelined", job, group)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._by_callback["job_starving"]:
            if tier:
                return all(self._call(rule, job) for _p, rules in tier for rule in rules)
        return False

    # nodes -----------------------------------------------------------------------------------------
    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateFailure | None:
        for rule in self.rules("predicate"):
            if not self._call(rule, task, node):
                reason = (evaluate_clause(rule, rule.reason, self.env, part="reason") if rule.reason
                          else f"rule {rule.label.rule_id} failed")
                return PredicateFailure(reason, rule.unresolvable, rule)
        return None

    # victims: Volcano's Preemptable/Reclaimable, step for step ------------------------------------
    def victims(self, callback: str, preemptor: TaskInfo, candidates: list[TaskInfo], *,
                ask: Callable[[CompiledRule, TaskInfo, list[TaskInfo]], Any] | None = None,
                ) -> tuple[list[TaskInfo], CompiledRule | None]:
        """Intersection inside a tier; an empty answer ends the tier with nothing; the first tier with
        victims wins. As in Volcano's code, once any rule has answered with victims, later tiers can
        only intersect with what is left, so they never bring victims of their own. `ask`: how a
        rule is asked, when not as the session asks it (`engine.victim_reuse` probes the answers)."""
        call = self._call if ask is None else ask
        victims: list[TaskInfo] | None = None
        answered = False
        first_rule: CompiledRule | None = None
        for tier in self._by_callback[callback]:
            for _plugin, rules in tier:
                stop = False
                for rule in rules:
                    result = call(rule, preemptor, candidates)  # rules are pure: no copy
                    if not result:
                        victims = None
                        stop = True
                        break
                    if not answered:
                        victims, answered, first_rule = list(result), True, rule
                    else:
                        ids = {t.uid for t in result}
                        kept = [v for v in victims or [] if v.uid in ids]
                        victims = kept or None
                if stop:
                    break
            if victims:
                return victims, first_rule
        return [], None


    def evictable(self, kind: str, job: JobInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Volcano's UnifiedEvictable (gangpreempt, gangreclaim): as `victims`, intersection within a
        tier and the first tier with victims deciding; no rule at all allows nothing."""
        victims: list[TaskInfo] | None = None
        for tier in self._by_callback["evictable"]:
            for _plugin, rules in tier:
                for rule in rules:
                    result = self._call(rule, kind, job, candidates)
                    if victims is None:
                        victims = list(result)
                    else:
                        ids = {t.uid for t in result}
                        victims = [v for v in victims if v.uid in ids]
            if victims:
                return victims
            victims = None
        return []

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Volcano's VictimTasks (shuffle): the union of the tier's rules' answers, in first-seen order;
        the first tier whose rules name any victim decides."""
        for tier in self._by_callback["victim_tasks"]:
            chosen: dict[str, TaskInfo] = {}
            for _plugin, rules in tier:
                for rule in rules:
                    if rule.every is not None and not self._due(rule):
                        continue  # ran less than its period ago: no victims from it this session
                    for task in self._call(rule, tasks):
                        chosen.setdefault(task.uid, task)
            if chosen:
                return list(chosen.values())
        return []

    def session_close(self) -> None:
        """Volcano's OnSessionClose: every `session_close` rule once, in tier order, for its effect."""
        for tier in self._by_callback["session_close"]:
            for _plugin, rules in tier:
                for rule in rules:
                    self._call(rule)

    def _due(self, rule: CompiledRule) -> bool:
        """Whether an `every` rule runs in this session: never ran in this process, or ran at least its
        period ago (Volcano's `lastEvictAt.Add(period).After(now)` skips); running it records the time.
        A `from start` rule that never ran counts from the scheduler's start (rescheduling's
        lastRescheduleTime, set when the process starts)."""
        assert rule.every is not None
        now = float(self.env["$now"])
        key = rule.label.rule_id
        last = self.ran.get(key, self.last_runs.get(key))
        if last is None and rule.every_from_start:
            last = self.started
        if last is not None and now < last + float(rule.every(dict(self.env))):
            return False
        self.ran[key] = now
        return True


# Attributes that never change within a session, on tasks, jobs and queues alike: an order rule that
# reads nothing else answers the same for the same values, so its answers are remembered by them.
_FIXED_ATTRS = frozenset({"priority", "name", "namespace", "uid", "key", "role", "resreq", "best_effort",
                          "priority_class_name", "weight"})


def _fixed_key(rule: CompiledRule) -> Callable[[Any], Any] | None:
    """The values an order rule's answer depends on, when they are all fixed attributes of its operands
    (read through `attrgetter`, in C); None when the rule reads anything that can change."""
    reads = rule.reads or classify(rule.term, {})[1]
    if not reads or not reads <= _FIXED_ATTRS or _reads_beyond_operands(rule):
        return None
    return operator.attrgetter(*sorted(reads))


def _reads_beyond_operands(rule: CompiledRule) -> bool:
    """True when the rule reads anything but attributes of its own parameters (a helper call, the
    cluster, a session constant, an attribute of an attribute)."""
    found = False

    def walk(t: object) -> None:
        nonlocal found
        if isinstance(t, (ir.CallUser, ir.SessionRef, ir.Select, ir.Agg, ir.Bind)):
            found = True
        elif isinstance(t, ir.GetAttr) and not (isinstance(t.obj, ir.Var) and t.obj.name in rule.params):
            found = True
        elif isinstance(t, ir.Var) and t.name not in rule.params:
            found = True
        for name in getattr(t, "__dataclass_fields__", {}):
            child = getattr(t, name)
            for c in child if isinstance(child, tuple) else (child,):
                if c is not None and not isinstance(c, (str, int, float, bool)):
                    walk(c)

    walk(rule.term)
    return found


def _own_state_keys(rules: list[CompiledRule], plugins: Sequence[PluginInstance],
                    own_attrs: frozenset[str]) -> tuple[CompiledRule, ...] | None:
    """The order rules, when each sorts by expressions of one operand (`CompiledRule.order_keys`) that
    read only that operand's attributes in `own_attrs`; else None."""
    functions = {p.module.name: p.module.functions for p in plugins}
    for rule in rules:
        if not rule.order_keys:
            return None
        for key in rule.order_keys:
            if not _own_state_only(key.term, frozenset(rule.params[:1]), frozenset(), functions, frozenset(),
                                   own_attrs):
                return None
    return tuple(rules)


# A job's attributes that change only when its own tasks do (not its queue's, not its tasks' objects).
_JOB_OWN_ATTRS = frozenset(JOB) - {"queue", "tasks"}
# A queue's attributes that, inside enqueue and allocate, change only in the queue's own turn: not its
# place in the tree, nor its descendants' sums, nor the objects of its jobs.
_QUEUE_OWN_ATTRS = frozenset(QUEUE) - {"parent", "ancestors", "children", "jobs", "tree_allocated", "tree_inqueue"}
_Functions = dict[str, dict[str, tuple[tuple[str, ...], ir.Term]]]


def _own_state_only(t: Any, owners: frozenset[str], values: frozenset[str], functions: _Functions,
                    calling: frozenset[tuple[str, str]], own_attrs: frozenset[str]) -> bool:
    """True when `t` reads nothing but `own_attrs` of the object bound to a name in `owners`, values
    bound to a name in `values` (helper parameters given such reads), the cluster's total and session
    constants: what, inside enqueue and allocate, changes only during that job's (or queue's) own turn."""
    if isinstance(t, (ir.Const, ir.SessionRef)):
        return True
    if isinstance(t, ir.Var):
        return t.name in values
    if (isinstance(t, ir.GetIndex) and isinstance(t.obj, ir.SessionRef) and isinstance(t.key, ir.Var)
            and t.key.name in owners):
        return True  # the object's entry in a session constant (proportion's `deserved[q]`): fixed
    if isinstance(t, ir.GetAttr):
        if not isinstance(t.obj, ir.Var):
            return False
        return ((t.obj.name in owners and t.name in own_attrs)
                or (t.obj.name == "cluster" and t.name == "total"))
    if isinstance(t, ir.CallUser):
        called = (t.module, t.func)
        body = functions.get(t.module, {}).get(t.func)
        if body is None or called in calling:
            return False
        inner_owners, inner_values = set(), set()
        for name, arg in zip(body[0], t.args):
            if isinstance(arg, ir.Var) and arg.name in owners:
                inner_owners.add(name)
            elif _own_state_only(arg, owners, values, functions, calling, own_attrs):
                inner_values.add(name)
            else:
                return False
        return _own_state_only(body[1], frozenset(inner_owners), frozenset(inner_values), functions,
                               calling | {called}, own_attrs)
    if isinstance(t, (ir.Apply, ir.Op, ir.Cond, ir.GetIndex, ir.ResourceVec, ir.ListOf)):
        children = [getattr(t, f) for f in t.__dataclass_fields__]
        return all(_own_state_only(c, owners, values, functions, calling, own_attrs) for c in _terms(children))
    return False


def _terms(items: Any) -> Iterator[Any]:
    """The terms among a node's fields (nested in tuples, as ResourceVec's entries are), not names."""
    for item in items:
        if isinstance(item, tuple):
            yield from _terms(item)
        elif item is not None and not isinstance(item, str):
            yield item


class _Descending:
    """A value that sorts in reverse: a descending rule's key when negating is not possible."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __lt__(self, other: "_Descending") -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]  # reason: compared only


def _descending(value: Any) -> Any:
    return -value if type(value) in (int, float, bool) else _Descending(value)


def _is_comparison(rule: CompiledRule) -> bool:
    return is_comparison(rule.term, rule.params)


def _attribute_compared(rule: CompiledRule) -> tuple[str, bool] | None:
    """(attribute, descending) for `compare(l.a, r.a)` / `compare(r.a, l.a)`, else None."""
    t = rule.term
    if not _is_comparison(rule):
        return None
    if TYPE_CHECKING:  # _is_comparison checked it is an Apply
        assert isinstance(t, ir.Apply)
    first = t.args[0]
    if not (isinstance(first, ir.GetAttr) and isinstance(first.obj, ir.Var)):
        return None
    return first.name, first.obj.name != rule.params[0]


def _default_task_cmp(l: TaskInfo, r: TaskInfo) -> int:
    return -1 if default_task_before(l, r) else (1 if default_task_before(r, l) else 0)


# Session constants in evaluation order: (key, closure, or the key of an earlier let of equal shape).
_LetPlan = tuple[tuple[tuple[str, str], Callable[[dict[str, Any]], Any], tuple[str, str] | None], ...]


@dataclass(frozen=True, slots=True)
class _Tables:
    """What a Runtime derives from its tiers alone (rules per callback, flattened, order keys)."""

    plugins: tuple[PluginInstance, ...]  # kept alive: the cache below is keyed by their ids
    by_callback: dict[str, "_PerTier"]
    flat: dict[str, list[CompiledRule]]
    orders: dict[str, list[tuple[CompiledRule, Callable[[Any], Any] | None]]]
    fixed_task_order: bool
    job_keys: tuple[CompiledRule, ...] | None  # see Runtime.job_queue
    queue_keys: tuple[CompiledRule, ...] | None  # see Runtime.turn_queue_heap
    lets: _LetPlan = ()


# Sessions of one policy share its tables instead of rebuilding them (a fifth of a small session's time
# went there, mostly into the order keys); a few policies are kept, the oldest dropped first.
_TABLES: dict[tuple[tuple[int, ...], ...], _Tables] = {}
_TABLES_KEPT = 32


_PerTier = list[list[tuple[PluginInstance, list[CompiledRule]]]]


def _by_callback(tiers: list[list[PluginInstance]]) -> dict[str, _PerTier]:
    out = {}
    for callback in CALLBACKS:
        per_tier = []
        for tier in tiers:
            entries = [(p, p.rules(callback)) for p in tier]
            per_tier.append([(p, rs) for p, rs in entries if rs])
        out[callback] = per_tier
    return out


def _shared_tables(tiers: list[list[PluginInstance]]) -> _Tables:
    key = tuple(tuple(id(p) for p in tier) for tier in tiers)
    tables = _TABLES.get(key)
    if tables is None:
        by_callback = _by_callback(tiers)
        flat = {cb: [r for tier in per_tier for _p, rules in tier for r in rules]
                for cb, per_tier in by_callback.items()}
        orders = {cb: [(rule, _fixed_key(rule)) for rule in flat[cb]]
                  for cb in ("queue_order", "job_order", "task_order")}
        fixed = all(k is not None and _is_comparison(rule) for rule, k in orders["task_order"])
        plugins = tuple(p for tier in tiers for p in tier)
        tables = _Tables(plugins, by_callback, flat, orders, fixed,
                         _own_state_keys(flat["job_order"], plugins, _JOB_OWN_ATTRS),
                         _own_state_keys(flat["queue_order"], plugins, _QUEUE_OWN_ATTRS), _let_plan(tiers))
        if len(_TABLES) >= _TABLES_KEPT:
            del _TABLES[next(iter(_TABLES))]
        _TABLES[key] = tables
    return tables


def _let_plan(tiers: list[list[PluginInstance]]) -> _LetPlan:
    """Each plugin's session constants in order; one whose term has the shape of an earlier one (two
    modules computing proportion's deserved shares, say) takes that one's value instead of computing it."""
    terms = {(p.module.name, n): t for tier in tiers for p in tier for n, t, _fn in p.module.session_lets}
    shapes: dict[tuple[str, str], object] = {}

    def shape_of(key: tuple[str, str]) -> object:
        if key not in shapes:
            shapes[key] = None  # a let that reads itself never matches
            term = terms.get(key)
            shapes[key] = None if term is None else ir.shape(term, lambda ref: shape_of((ref.module, ref.name)))
        return shapes[key]
    first: dict[object, tuple[str, str]] = {}
    plan = []
    for tier in tiers:
        for p in tier:
            for name, _term, fn in p.module.session_lets:
                key = (p.module.name, name)
                found = shape_of(key)
                same_as = first.get(found) if found is not None and key not in first.values() else None
                if found is not None and same_as is None:
                    first.setdefault(found, key)
                plan.append((key, fn, same_as))
    return tuple(plan)


def _in_dsl_words(text: str) -> str:
    """Python's message with the DSL's type names, and its operator errors as the checker words them."""
    for wording in _OPERATOR_ERRORS:
        found = wording.fullmatch(text)
        if found:
            op, left, right = found.groups()
            return f"cannot apply '{op}' to {_DSL_TYPES.get(left, left)} and {_DSL_TYPES.get(right, right)}"
    return _PYTHON_TYPE.sub(lambda m: _DSL_TYPES.get(m.group(1), m.group(0)), text)


def _recursing_helpers(exc: RecursionError) -> list[str]:
    """The helpers whose calls fill the traceback of `exc` (one, or the several of a mutual recursion),
    when they can be told apart: generated helpers are functions `u_NAME`, and closures of
    `compile.evaluate` call their helper by the name in `func`."""
    counts: Counter[str] = Counter()
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in _GENERATED_FILES and code.co_name.startswith("u_"):
            name = code.co_name[2:]
            vector = _VECTOR_HELPER.fullmatch(name)
            counts[vector.group(1) if vector else name] += 1
        elif code.co_filename == evaluate.__file__ and code.co_name == "call":
            counts[str(tb.tb_frame.f_locals.get("func", ""))] += 1
        tb = tb.tb_next
    counts.pop("", None)
    if not counts:
        return []
    most = counts.most_common(1)[0][1]
    return sorted(name for name, n in counts.items() if n * 2 >= most)  # a helper called on the way is not one


def _scalar(rule: CompiledRule) -> CompiledRule:
    """The rule without its batched form (the placement then asks it node by node, through `_call`)."""
    if getattr(rule, "vector", None) is None:
        return rule
    return dataclasses.replace(rule, vector=None)


def default_task_before(l: TaskInfo, r: TaskInfo) -> bool:
    """Volcano's CompareTask: name index when both names have one, else creation time, else uid."""
    if l.order_index is not None and r.order_index is not None and l.order_index != r.order_index:
        return l.order_index < r.order_index
    if l.pod.creation != r.pod.creation:
        return l.pod.creation < r.pod.creation
    return l.uid < r.uid
