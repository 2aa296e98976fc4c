"""The fast evaluators give the reference evaluator's answers, for every node rule of every shipped module.

A rule body has four executable forms: the closure tree (`compile.evaluate`, the reference), generated
Python per rule (`compile.pycode`), and over a batch of nodes the numpy interpreter
(`compile.vectorize`) and generated numpy (`compile.vcode`). The engine picks whichever is fastest for
the call, so any difference between them would be a wrong placement; this checks them against each
other on generated clusters and the session state they open with, and on the edge cases of what the
generators rewrite (`compile.rewrite`: inlined helpers, dropped identities; `compile.share`: values kept
in locals, of a function or of one select lambda or aggregate comprehension, divisions without the zero
guard).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpolicy.compile import vectorize
from vpolicy.compile.functions import FUNCTIONS
from vpolicy.compile.lower import CompiledModule, CompiledRule, compile_module
from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import PluginInstance, Runtime
from vpolicy.engine.state import SessionState
from vpolicy.lang.parse import parse_file, parse_text
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, TaskStatus
from tests.strategies import clusters

VOLCANO = Path(__file__).resolve().parents[2].joinpath("policies", "volcano")
MODULES = sorted(VOLCANO.glob("*.vpol"))


def _compiled(path: Path, codegen: bool, monkeypatch: pytest.MonkeyPatch, *, text: str | None = None,
              settings: dict[str, Any] | None = None) -> CompiledModule:
    with monkeypatch.context() as m:
        if codegen:
            m.delenv("VPOLICY_NO_CODEGEN", raising=False)
        else:
            m.setenv("VPOLICY_NO_CODEGEN", "1")
        module = parse_file(path) if text is None else parse_text(text, str(path))
        return compile_module(module, settings)


def _generated_and_reference(name: str, text: str, callback: str, rule_name: str) -> tuple[CompiledRule, CompiledRule]:
    """One rule of a module given as text, compiled with generated code and without (the reference)."""
    patch = pytest.MonkeyPatch()
    try:
        fast, ref = (_compiled(Path(name), codegen, patch, text=text) for codegen in (True, False))
    finally:
        patch.undo()
    rule = next(r for r in fast.rules[callback] if r.name == rule_name)
    assert rule.fn.__code__.co_filename == "<vpolicy-generated>"
    return rule, next(r for r in ref.rules[callback] if r.name == rule_name)


def _node_rules(module: CompiledModule) -> list[CompiledRule]:
    return [r for cb in ("predicate", "node_order") for r in module.rules.get(cb, [])]


@pytest.fixture(scope="module")
def modules() -> list[tuple[CompiledModule, CompiledModule]]:
    """Each shipped module compiled twice: with generated code (fast forms) and without (reference)."""
    patch = pytest.MonkeyPatch()
    try:
        return [(_compiled(p, True, patch), _compiled(p, False, patch)) for p in MODULES]
    finally:
        patch.undo()


def test_every_shipped_rule_has_its_generated_forms(modules) -> None:  # type: ignore[no-untyped-def]
    """Guards the speed of sessions: a rule that silently lost its fast form would still pass the rest."""
    slow = [f"{fast.name}.{r.name}" for fast, _ref in modules for r in _node_rules(fast)
            if r.vector is not None and r.vector.__code__.co_filename != "<vpolicy-vector>"]
    assert slow == []
    # every rule of every callback runs as generated Python (a module the generator cannot compile
    # falls back to the closure tree as a whole, silently)
    closures = [f"{fast.name}.{r.name}" for fast, _ref in modules for rules in fast.rules.values() for r in rules
                if getattr(r.fn, "__code__", None) is None or r.fn.__code__.co_filename != "<vpolicy-generated>"]
    assert closures == []
    generated = [f"{ref.name}.{r.name}" for _fast, ref in modules for r in _node_rules(ref)
                 if getattr(r.fn, "__code__", None) is not None and r.fn.__code__.co_filename == "<vpolicy-generated>"]
    assert generated == []  # the reference forms are the closure tree
    assert sum(len(_node_rules(fast)) for fast, _ref in modules) >= 10


def _as_float(v: object) -> float:
    return float(v)  # type: ignore[arg-type]  # reason: rule answers are numbers or bools


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clusters())
def test_fast_forms_agree_with_the_reference_on_every_node(modules, snapshot: ClusterSnapshot) -> None:  # type: ignore[no-untyped-def]
    fast_tier = [PluginInstance(fast.name, fast, {}) for fast, _ref in modules]
    state = SessionState(snapshot)
    if not state.nodes:
        return
    rt = Runtime([fast_tier], state)
    placement = Placement(rt, state)
    rows = np.arange(len(placement.node_list))
    tasks = [t for t in state.tasks.values() if t.status is TaskStatus.PENDING][:4] or list(state.tasks.values())[:2]
    for fast, ref in modules:
        for rule, ref_rule in zip(_node_rules(fast), _node_rules(ref)):
            reference = ref_rule.fn  # compiled without generated code: the closure tree
            interpreted = None
            if rule.vector is not None:
                interpreted = vectorize.compile_node_rule(rule.term, rule.params[1], fast.functions, FUNCTIONS)
            for task in tasks:
                env = dict(rt.env)
                answers = []
                for node in placement.node_list:
                    env[rule.params[0]], env[rule.params[1]] = task, node
                    answers.append(reference(env))
                expected = [_as_float(v) for v in answers]
                scalar = [rule.call(dict(rt.env), task, node) for node in placement.node_list]
                assert [_as_float(v) for v in scalar] == expected, f"{fast.name}.{rule.name}: generated Python differs"
                assert [type(v) for v in scalar] == [type(v) for v in answers], f"{fast.name}.{rule.name}: types differ"
                if rule.vector is None:
                    continue
                batch_env = dict(rt.env)
                batch_env[rule.params[0]], batch_env[rule.params[1]] = task, placement._batch(rows)
                for form, fn in (("vcode", rule.vector), ("vectorize", interpreted)):
                    got = np.broadcast_to(np.asarray(fn(dict(batch_env)), dtype=float), (len(rows),))
                    assert got.tolist() == expected, f"{fast.name}.{rule.name}: {form} differs"


# Rules where a rewrite could change an answer: a value kept in a local where it recurs, under guards that
# decide whether it may be computed at all (with an empty `tasks`, `tasks[0]` raises IndexError); divisions
# with and without a zero guard; `1 *` a value that may be a bool.
EDGE_CASES = """plugin edge_cases "edge cases of the generated forms"

rule first_task_priority: node_order(task, node) =
    if len(node.tasks) == 0 then 0 else node.tasks[0].priority + node.tasks[0].priority

rule name_length: node_order(task, node) =
    if node.pod_count == 0 or len(node.tasks[0].name) > 3 then len(node.tasks[0].name) else 1

rule ten_per_pod: node_order(task, node) =
    (if node.max_pods == 0 then 10 / node.max_pods else 0) + (if node.max_pods != 0 then 10 / node.max_pods else 0)

rule few_pods: node_order(task, node) = if node.max_pods != 0 or 10 / node.max_pods > 1 then 1 else 2

rule one_times_gpus: node_order(task, node) = 1 * node.gpus

rule tenths: node_order(task, node) = sum(t in node.tasks where t.priority != 0: 10 / t.priority + 10 / t.priority)

rule pods_around_priorities: node_order(task, node) =
    node.max_pods + sum(t in node.tasks: t.priority * t.priority) + node.max_pods

rule int_or_float: node_order(task, node) = if node.max_pods > 0 then 1 else 1.0

rule let_in_a_source: node_order(task, node) =
    sum(t in (let ts = node.tasks in ts): t.priority + sum(u in (let us = node.tasks in us): u.priority))

rule let_in_a_filter: node_order(task, node) = count(t in node.tasks where (let p = t.priority in p > 1))

rule lets_of_each_kind: node_order(task, node) =
    let room = node.idle in let pods = node.max_pods * 2 in
    if pods - 1 < 2 then 0 else get(room - room, "cpu") + pods / 4
"""


def _node(*, tasks: tuple[str, ...] = (), pod_count: int = 1, max_pods: int = 1,
          gpus: object = None, idle: Resources | None = None) -> SimpleNamespace:
    return SimpleNamespace(tasks=[SimpleNamespace(name=n, priority=len(n)) for n in tasks], pod_count=pod_count,
                           max_pods=max_pods, gpus=gpus, idle=idle)


@pytest.mark.parametrize("rule_name, node, expected", [
    pytest.param("first_task_priority", _node(), 0, id="a-repeated-value-under-a-failing-guard-is-not-computed"),
    pytest.param("first_task_priority", _node(tasks=("abc",)), 6, id="a-repeated-value-under-its-guard-is-kept"),
    pytest.param("name_length", _node(pod_count=0, tasks=("abcd",)), 4,
                 id="a-value-from-an-or-operand-that-did-not-run-is-computed-again"),
    pytest.param("name_length", _node(tasks=("abcdef",)), 6, id="a-value-from-an-or-operand-that-ran-true"),
    pytest.param("name_length", _node(tasks=("ab",)), 1, id="both-or-operands-false"),
    pytest.param("ten_per_pod", _node(max_pods=0), 0.0, id="a-division-where-the-divisor-is-0-keeps-its-guard"),
    pytest.param("ten_per_pod", _node(max_pods=4), 2.5, id="a-division-where-the-divisor-is-not-0"),
    pytest.param("few_pods", _node(max_pods=0), 2, id="an-or-operand-runs-where-the-ones-before-it-are-false"),
    pytest.param("one_times_gpus", _node(gpus=True), 1, id="1-times-a-value-of-type-any-is-not-dropped"),
    pytest.param("tenths", _node(tasks=("", "ab")), 10.0,
                 id="a-repeated-division-in-an-aggregate-body-guarded-by-its-filter"),
    pytest.param("tenths", _node(tasks=("",)), 0, id="an-aggregate-filter-that-fails-skips-its-body"),
    pytest.param("pods_around_priorities", _node(tasks=("abc",)), 11,
                 id="a-comprehension-local-does-not-overwrite-the-function-local"),
    pytest.param("int_or_float", _node(max_pods=0), 1.0, id="branches-1-and-1.0-are-not-folded-into-one"),
    pytest.param("let_in_a_source", _node(tasks=("a", "abc")), 12, id="a-let-in-an-aggregate-source"),
    pytest.param("let_in_a_filter", _node(tasks=("a", "ab", "abc")), 2, id="a-let-in-an-aggregate-filter"),
    pytest.param("lets_of_each_kind", _node(max_pods=1, idle=Resources({"cpu": 500})), 0,
                 id="a-numeric-let-beside-a-resource-let-compared"),
    pytest.param("lets_of_each_kind", _node(max_pods=3, idle=Resources({"cpu": 500})), 1.5,
                 id="a-resource-let-subtracted-beside-numeric-arithmetic"),
])
def test_generated_python_answers_as_the_reference_where_a_rewrite_could_differ(
        rule_name: str, node: SimpleNamespace, expected: object) -> None:
    rule, ref_rule = _generated_and_reference("<edge_cases>", EDGE_CASES, "node_order", rule_name)
    got, want = rule.call({}, None, node), ref_rule.call({}, None, node)
    assert (got, type(got)) == (want, type(want)) == (expected, type(expected))


# Values kept in locals of a select's lambdas: one under a guard in `when` (a job without tasks has no
# tasks[0]), and one of a lambda next to one of the comprehension inside it, which Python binds in the same
# lambda (had they one name, a candidate of priority 1 with one task of priority 3 would sum to 13, not 11).
SELECT_CASES = """plugin select_cases "edge cases of locals inside a select's lambdas"

rule first_task_is_high: preemptable(preemptor, candidates) =
    select c in candidates
        when if len(c.job.tasks) == 0 then false else c.job.tasks[0].priority + c.job.tasks[0].priority > 4

rule heavy_job: preemptable(preemptor, candidates) =
    select c in candidates when c.priority + sum(t in c.job.tasks: t.priority * t.priority) + c.priority > 12
"""


def _candidate(priority: int, *task_priorities: int) -> SimpleNamespace:
    return SimpleNamespace(priority=priority,
                           job=SimpleNamespace(tasks=[SimpleNamespace(priority=p) for p in task_priorities]))


@pytest.mark.parametrize("rule_name, candidates, chosen", [
    pytest.param("first_task_is_high", [_candidate(0), _candidate(0, 3), _candidate(0, 2)], [1],
                 id="a-repeated-value-under-a-guard-in-when-is-not-computed-for-a-job-without-tasks"),
    pytest.param("heavy_job", [_candidate(1, 3), _candidate(2, 3)], [1],
                 id="a-lambda-local-and-a-comprehension-local-in-it-do-not-overwrite-each-other"),
])
def test_generated_select_answers_as_the_reference_where_a_lambda_keeps_a_local(
        rule_name: str, candidates: list[SimpleNamespace], chosen: list[int]) -> None:
    rule, ref_rule = _generated_and_reference("<select_cases>", SELECT_CASES, "preemptable", rule_name)
    got, want = rule.call({}, None, candidates), ref_rule.call({}, None, candidates)
    assert [candidates.index(c) for c in got] == [candidates.index(c) for c in want] == chosen


class _Job:
    """A job as a select groups by it (hashable, by identity)."""

    def __init__(self, allocated: Resources):
        self.allocated = allocated


class _CountingTask:
    """A victim candidate that counts reads of its request."""

    def __init__(self, reads: list[int], job: _Job, resreq: Resources):
        self.reads, self.job, self._resreq = reads, job, resreq

    @property
    def resreq(self) -> Resources:
        self.reads[0] += 1
        return self._resreq


def test_generated_drf_victims_compute_the_share_after_eviction_once_per_candidate() -> None:
    """Guards the speed of preemption (drf's `when` names `share(left - c.resreq, cluster.total)` twice, and
    victim selection runs it for every candidate of every node tried), and its answers."""
    path = VOLCANO / "drf.vpol"
    patch = pytest.MonkeyPatch()
    try:
        fast, ref = (_compiled(path, codegen, patch) for codegen in (True, False))
    finally:
        patch.undo()
    env = {"cluster": SimpleNamespace(total=Resources({"cpu": 10_000, "memory": 2 ** 35}))}
    preemptor = SimpleNamespace(job=_Job(Resources({"cpu": 1000})), resreq=Resources({"cpu": 1000}))
    big, small = _Job(Resources({"cpu": 6000, "memory": 2 ** 33})), _Job(Resources({"cpu": 2500}))
    answers, reads = [], []
    for module in (fast, ref):
        counted = [0]
        candidates = [_CountingTask(counted, job, Resources({"cpu": 1000}))
                      for job in (big, small, big, small, big)]
        chosen = module.rules["preemptable"][0].call(dict(env), preemptor, candidates)
        answers.append([candidates.index(c) for c in chosen])
        reads.append(counted[0])
    assert answers == [[0, 2, 4], [0, 2, 4]]  # small's share falls to 0.15, then 0.05: not fairer than 0.2
    # per candidate `when` reads it once (the reference twice where `mine < share` is false); `after` once
    # per candidate that another of its job follows (generated code: 3 of the 5; the reference: all 5)
    assert reads == [8, 12]


class _CountingNode:
    """A node that counts reads of its resource attributes."""

    def __init__(self, reads: dict[str, int], allocatable: Resources, used: Resources,
                 pipelined: Resources | None = None):
        self.reads, self._allocatable, self._used = reads, allocatable, used
        self._pipelined = pipelined if pipelined is not None else Resources({})
        self.pods_without_cpu_request = self.pods_without_memory_request = 0  # (not counted)

    @property
    def allocatable(self) -> Resources:
        self.reads["allocatable"] = self.reads.get("allocatable", 0) + 1
        return self._allocatable

    @property
    def used(self) -> Resources:
        self.reads["used"] = self.reads.get("used", 0) + 1
        return self._used

    @property
    def pipelined(self) -> Resources:
        self.reads["pipelined"] = self.reads.get("pipelined", 0) + 1
        return self._pipelined

    @property
    def evicted(self) -> Resources:
        self.reads["evicted"] = self.reads.get("evicted", 0) + 1
        return Resources({})


@pytest.mark.parametrize("settings, weight_type", [
    pytest.param({}, int, id="weight-1-from-the-default-literal-gives-ints"),
    pytest.param({"leastrequested.weight": "1"}, float, id="weight-1-from-the-conf-is-1.0-and-gives-floats"),
])
def test_generated_least_requested_reads_node_resources_at_most_once_per_dimension(
        settings: dict[str, Any], weight_type: type) -> None:
    """Guards the speed of the hottest rule (free_score reads node.allocatable four times per dimension and
    node.used twice), and that dropping `1 *` did not change an int answer into a float or back."""
    path = VOLCANO / "nodeorder.vpol"
    patch = pytest.MonkeyPatch()
    try:
        fast, ref = (_compiled(path, codegen, patch, settings=settings) for codegen in (True, False))
    finally:
        patch.undo()
    task = SimpleNamespace(resreq=Resources({"cpu": 500, "memory": 2 ** 30}),
                           containers_without_cpu_request=0, containers_without_memory_request=0)
    answers, reads = [], []
    for module in (fast, ref):
        counted: dict[str, int] = {}
        node = _CountingNode(counted, Resources({"cpu": 4000, "memory": 2 ** 33}), Resources({"cpu": 1000}))
        answers.append(module.rules["node_order"][0].call({}, task, node))
        reads.append(counted)
    assert [(a, type(a)) for a in answers] == [(74, weight_type)] * 2
    # node.pipelined is read beside node.used since 2448918 (kube's scores count pipelined pods), and
    # node.evicted since pods this session evicted left kube's NodeInfo: once per dimension too; the fused
    # form reads allocatable once per dimension since the node's side counts its pods without requests
    # (nonzero_used)
    assert reads == [{"allocatable": 2, "used": 2, "pipelined": 2, "evicted": 2},
                     {"allocatable": 8, "used": 4, "pipelined": 4, "evicted": 4}]


def _outcome(fn: Any) -> object:
    """What a call answers (the value and its type), or the type of what it raises: a fused form must
    fail where the form it replaces fails."""
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001  # reason: the reference's failure is an answer too
        return type(e)
    return value, type(value)


_VECTORS = st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), st.integers(-3, 8),
                           max_size=4).map(Resources)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_VECTORS, st.just(0)), st.one_of(_VECTORS, st.just(0)), _VECTORS)
def test_the_share_of_a_difference_is_computed_as_the_share_of_the_built_difference(a, b, total) -> None:  # type: ignore[no-untyped-def]
    """Generated code asks `share(a - b, c)` without building `a - b` (`pycode._share_minus`)."""
    from vpolicy.compile import evaluate, pycode
    from vpolicy.compile.functions import share

    assert _outcome(lambda: pycode._share_minus(a, b, total)) == _outcome(lambda: share(evaluate._sub(a, b), total))


@settings(max_examples=200, deadline=None)
@given(st.one_of(_VECTORS, st.just(0)), st.one_of(_VECTORS, st.just(0)), _VECTORS,
       st.lists(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "hugepages"]), max_size=5))
def test_a_sum_compared_on_some_dimensions_is_compared_as_the_built_sum(a, b, limit, names) -> None:  # type: ignore[no-untyped-def]
    """Generated code asks `le_on(a + b, limit, names)` without building `a + b` (`pycode._le_on_sum`):
    proportion's allocatable check, once per task placed."""
    from vpolicy.compile import evaluate, pycode
    from vpolicy.compile.functions import FUNCTIONS as builtins

    assert _outcome(lambda: pycode._le_on_sum(a, b, limit, names)) == \
        _outcome(lambda: builtins["le_on"](evaluate._add(a, b), limit, names))


@settings(max_examples=200, deadline=None)
@given(st.one_of(_VECTORS, st.just(0)), st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]))
def test_the_dimensions_of_a_vector_without_one_are_those_of_the_built_vector(r, name) -> None:  # type: ignore[no-untyped-def]
    """Generated code asks `dims(without(r, name))` without building `without(r, name)`
    (`pycode._dims_without`)."""
    from vpolicy.compile import pycode
    from vpolicy.compile.functions import FUNCTIONS as builtins

    assert _outcome(lambda: pycode._dims_without(r, name)) == \
        _outcome(lambda: builtins["dims"](builtins["without"](r, name)))
