"""Properties of whole sessions over generated clusters, judged by the independent validator (DESIGN §9).

Each property runs `run_session` on clusters from `tests.strategies` under three confs: Volcano's
built-in default, the Helm tiers with every action (`enqueue, allocate, backfill, preempt, reclaim`),
and the same with `capacity` in place of `proportion`. With the Helm tiers gang's and drf's
Preemptable are off, so priority alone picks preempt victims and the lower-priority rule applies.

A session is given `SESSION_LIMIT_S` seconds of CPU; one that runs longer is set aside (hypothesis
`reject`) so a hang does not stall every property (`test_proportion_deserved_is_computed_in_finite_time`
pins the one found). Minimal examples of engine bugs the properties found are pinned with `@example`.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from types import FrameType
from typing import Iterator

import pytest
from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st

from tests.engine.build import GIB, node, pod, podgroup, queue, running, snapshot
from tests.strategies import clusters
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.engine.validate import Violation, validate
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf, helm_default_conf_text, parse_conf_text
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase, TaskStatus

SESSION_LIMIT_S = 1.0
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Volcano's Helm conf with every action Volcano ships, so preempt and reclaim run too.
HELM_ALL_ACTIONS = helm_default_conf_text().replace(
    'actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, backfill, preempt, reclaim"')
assert "preempt, reclaim" in HELM_ALL_ACTIONS
CAPACITY = HELM_ALL_ACTIONS.replace("name: proportion", "name: capacity")


@dataclass(frozen=True)
class Setup:
    """One conf the properties run under."""

    name: str
    conf_text: str | None  # None: Volcano's built-in default

    @property
    def policy(self) -> CompiledPolicy:
        return _policy(self.conf_text)


@cache
def _policy(conf_text: str | None) -> CompiledPolicy:
    conf = default_conf() if conf_text is None else parse_conf_text(conf_text, file="<test-conf>")
    return from_conf(conf)


SETUPS = [
    pytest.param(Setup("volcano-default", None), id="volcano-default"),
    pytest.param(Setup("helm-all-actions", HELM_ALL_ACTIONS), id="helm-all-actions"),
    pytest.param(Setup("capacity", CAPACITY), id="capacity"),
]


class SessionTooLong(Exception):
    """A session ran past its time limit."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise SessionTooLong once the block has used `seconds` of CPU time (so a loaded machine does not
    trip it; SIGVTALRM: main thread, Unix)."""
    def overrun(_signum: int, _frame: FrameType | None) -> None:
        raise SessionTooLong(f"the session ran longer than {seconds} s")
    previous = signal.signal(signal.SIGVTALRM, overrun)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def decide(snap: ClusterSnapshot, setup: Setup) -> dict[str, object]:
    """The session's decision document, or `reject()` when the session overruns `SESSION_LIMIT_S`."""
    try:
        with time_limit(SESSION_LIMIT_S):
            return run_session(snap, setup.policy).decisions.to_document()
    except SessionTooLong:
        reject()


def violations(snap: ClusterSnapshot, setup: Setup, *families: str) -> list[Violation]:
    """What the validator reports for this session, limited to codes of the given families."""
    found = validate(snap, decide(snap, setup), policy=setup.policy, priority_victims=True)
    return [v for v in found if not families or v.code.split(".")[0] in families]


# Regression examples: minimal clusters for engine bugs these properties found, pinned with @example.
#
# Held pods had no reason: a gang that is not ready keeps the pods it placed Allocated but unbound
# (Volcano's backfill, or allocate's pipelined-only statement), and the session reported only Pending
# tasks, so those pods were in neither binds, pipelined nor unschedulable.
# n0 {cpu 1000, memory 1Gi, pods 2}; ns/pg minMember 2 (Inqueue) with ns/pg-0 best-effort and ns/pg-1
# asking 2 cpus: pg-1 fits nowhere, backfill allocates pg-0, the gang is not ready, pg-0 stays held.
HELD_BY_BACKFILL = snapshot(
    nodes=[node("n0", cpu=1000, memory=GIB, pods=2)],
    podgroups=[podgroup("pg", min_member=2)],
    pods=[pod("pg-0", "pg", cpu=0, memory=0), pod("pg-1", "pg", cpu=2000)],
)
# The same through allocate: ns/old-0 (1250m) is Releasing on n0 {cpu 2000, memory 1Gi, pods 3}; pg-0
# (512Mi) fits Idle and is Allocated, pg-1 (1 cpu) fits only FutureIdle and is pipelined; the gang
# (minMember 2) is pipelined, not ready, so pg-0 is held: the document had {pipelined: {ns/pg-1: n0}} only.
HELD_BY_PIPELINED_GANG = snapshot(
    nodes=[node("n0", cpu=2000, memory=GIB, pods=3)],
    podgroups=[podgroup("old", phase=PodGroupPhase.RUNNING), podgroup("pg", min_member=2)],
    pods=[running("old-0", "old", "n0", cpu=1250, memory=0, status=TaskStatus.RELEASING),
          pod("pg-0", "pg", cpu=0, memory=GIB // 2), pod("pg-1", "pg", cpu=1000, memory=0)],
)
# Proportion's water_fill never ended with exact fractions: q0's pods share approached 2 and q1's memory
# 1Gi geometrically, `remaining` never repeated and cpu never ran out (Volcano's floats converge).
# n0 {cpu 6000, memory 1Gi, pods 4}; q0 (weight 1) holds ns/a with two 1-cpu pods; q1 (weight 2) holds
# ns/b with a 2Gi pod and a 500m pod.
ENDLESS_WATER_FILL = snapshot(
    nodes=[node("n0", cpu=6000, memory=GIB, pods=4)],
    queues=[queue("q0", weight=1), queue("q1", weight=2)],
    podgroups=[podgroup("a", "q0"), podgroup("b", "q1")],
    pods=[pod("a-0", "a", cpu=1000, memory=0), pod("a-1", "a", cpu=1000, memory=0),
          pod("b-0", "b", cpu=0, memory=2 * GIB), pod("b-1", "b", cpu=500, memory=0)],
)
# The same snapshot gave different documents within one process: the solver's note on an unplaced gang
# listed its unsat core in z3's order, which follows z3's global term history, and was only added when
# the wall-clock solver budget allowed. n0, n1 {pods 1 each}; ns/pg minMember 3 with three 1-cpu pods:
# pg-2's second reason flipped order between runs (2 runs differed ~60% of the time, 12 runs always).
CORE_ORDER_FLIPS = snapshot(
    nodes=[node("n0", pods=1), node("n1", pods=1)],
    podgroups=[podgroup("pg", min_member=3)],
    pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), pod("pg-2", "pg")],
)


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@example(snap=HELD_BY_BACKFILL)
@example(snap=ENDLESS_WATER_FILL)
@given(snap=clusters())
def test_the_validator_finds_nothing(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup) == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@given(snap=clusters())
def test_placements_take_pending_pods_to_ready_nodes(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "placement") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@given(snap=clusters())
def test_no_node_goes_over_capacity(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "node") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@given(snap=clusters())
def test_gangs_bind_all_or_nothing(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "gang") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@given(snap=clusters())
def test_no_queue_goes_above_its_capability(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "queue") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@given(snap=clusters())
def test_evictions_follow_preempt_and_reclaim_rules(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "eviction", "preempt", "reclaim") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@example(snap=HELD_BY_BACKFILL)
@example(snap=HELD_BY_PIPELINED_GANG)
@given(snap=clusters())
def test_every_pending_pod_has_a_reason(setup: Setup, snap: ClusterSnapshot) -> None:
    assert violations(snap, setup, "pending") == []


@pytest.mark.parametrize("setup", SETUPS)
@PROPERTY
@example(snap=CORE_ORDER_FLIPS, runs=12)
@given(snap=clusters(), runs=st.just(2))
def test_a_session_decides_the_same_every_time(setup: Setup, snap: ClusterSnapshot, runs: int) -> None:
    documents = [_without_stats(decide(snap, setup)) for _ in range(runs)]
    assert documents == [documents[0]] * runs


def _without_stats(document: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in document.items() if k != "stats"}


def test_proportion_deserved_is_computed_in_finite_time() -> None:
    with time_limit(2.0):
        run_session(ENDLESS_WATER_FILL, _policy(None))


# Engine bug (minimal example): a podgroup whose queue does not exist is dropped from the session (as
# Volcano drops it from its snapshot), so its pods are reported nowhere: no bind, no reason.
# n0 {cpu 4000, memory 8Gi, pods 10}; queue q0; ns/pg in queue "missing" with one 1-cpu pod ns/pg-0.
# Document: {binds: {}, pipelined: {}, unschedulable: {}}. Once fixed, let `tests.strategies` draw
# podgroups in missing queues too.
IN_MISSING_QUEUE = snapshot(
    nodes=[node("n0")],
    podgroups=[podgroup("pg", "missing")],
    pods=[pod("pg-0", "pg")],
)


@pytest.mark.parametrize("setup", SETUPS)
def test_a_pod_whose_podgroup_has_no_queue_says_why(setup: Setup) -> None:
    assert violations(IN_MISSING_QUEUE, setup, "pending") == []
