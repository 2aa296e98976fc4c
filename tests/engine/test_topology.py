"""Network topology in a session: hard-mode gangs never span above their highest allowed tier (checked by
the independent validator, in both engine modes), a job's allocated HyperNode survives sessions, and the
validator itself catches a document that breaks a tier limit."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import topology as workload
from tests.engine import build
from vpolicy.engine import validate
from vpolicy.engine.session import run_session
from vpolicy.engine.state import SessionState
from vpolicy.model import hypernodes as hn
from vpolicy.model.snapshot import ClusterSnapshot, PodGroup, PodGroupPhase, TaskStatus


def _leaf(name: str, *nodes: str) -> hn.HyperNode:
    return hn.HyperNode(name, 1, tuple(hn.Member("Node", hn.MemberSelector(exact=n)) for n in nodes))


def _spine(name: str, *leaves: str) -> hn.HyperNode:
    return hn.HyperNode(name, 2, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=leaf)) for leaf in leaves))


def _hard_group(name: str, min_member: int, tier: int | None = 1, annotations: dict[str, str] | None = None,
                phase: PodGroupPhase = PodGroupPhase.INQUEUE) -> PodGroup:
    return PodGroup(build.NS, name, f"uid-{name}", queue="q0", min_member=min_member, phase=phase,
                    annotations=annotations or {}, network_topology=hn.NetworkTopology("hard", tier))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(min_value=16, max_value=48), seed=st.integers(min_value=0, max_value=10_000),
       mode=st.sampled_from(workload.MODES))
def test_no_hard_mode_gang_spans_above_its_highest_tier(nodes: int, seed: int, mode: str) -> None:
    snapshot, gangs = workload.generate(workload.Size("T", nodes, 1.5), seed=seed)
    policy = workload.policy()
    document = run_session(snapshot, policy, mode=mode).decisions.to_document()
    assert validate.validate(snapshot, document, policy=policy) == []
    assert workload.figures(snapshot, gangs, document, policy)["hard_violations"] == 0


def test_the_validator_flags_a_hard_gang_across_two_leaves() -> None:
    snapshot = ClusterSnapshot(
        nodes=(build.node("a"), build.node("b")), queues=(build.queue(),), namespaces=(build.NS,),
        podgroups=(_hard_group("pg", 2),), pods=(build.pod("pg-0", "pg"), build.pod("pg-1", "pg")),
        hypernodes=(_leaf("l0", "a"), _leaf("l1", "b"), _spine("s", "l0", "l1")))
    document = build.document(binds={"pg-0": "a", "pg-1": "b"})
    assert validate.codes(validate.validate(snapshot, document)) == ["topology.above-highest-tier"]
    within = build.document(binds={"pg-0": "a", "pg-1": "a"})
    assert validate.validate(snapshot, within) == []


@pytest.mark.parametrize("pods, annotations, expected", [
    pytest.param([build.running("pg-0", "pg", "a"), build.running("pg-1", "pg", "b")], {}, "s",
                 id="from-where-its-tasks-run"),
    pytest.param([build.running("pg-0", "pg", "a")], {hn.ALLOCATED_HYPERNODE_ANNOTATION: "s"}, "l0",
                 id="tasks-win-over-the-annotation"),
    pytest.param([build.pod("pg-0", "pg")], {hn.ALLOCATED_HYPERNODE_ANNOTATION: "l1"}, "l1",
                 id="annotation-when-nothing-runs"),
    pytest.param([build.pod("pg-0", "pg")], {hn.ALLOCATED_HYPERNODE_ANNOTATION: "nowhere"}, "",
                 id="unknown-annotation-is-ignored"),
])
def test_a_jobs_allocated_hypernode_is_rebuilt_when_a_session_opens(pods: list, annotations: dict[str, str],  # type: ignore[type-arg]  # reason: builder pods
                                                                    expected: str) -> None:
    snapshot = ClusterSnapshot(
        nodes=(build.node("a"), build.node("b")), queues=(build.queue(),), namespaces=(build.NS,),
        podgroups=(_hard_group("pg", 1, 2, annotations, PodGroupPhase.RUNNING),), pods=tuple(pods),
        hypernodes=(_leaf("l0", "a"), _leaf("l1", "b"), _spine("s", "l0", "l1")))
    job = SessionState(snapshot).jobs["ns/pg"]
    assert (job.topology_mode, job.highest_tier_allowed, job.allocated_hypernode) == ("hard", 2, expected)


def test_a_hard_gang_grows_only_inside_its_domain_across_sessions() -> None:
    """Two sessions: the first places the gang's minimum in one leaf; the second, with the job now
    running there, places its remaining task in the same leaf although the other leaf is emptier."""
    nodes = (build.node("a1", cpu=2000), build.node("a2", cpu=2000), build.node("b1", cpu=8000))
    topology = (_leaf("la", "a1", "a2"), _leaf("lb", "b1"), _spine("s", "la", "lb"))
    running = (build.running("pg-0", "pg", "a1", cpu=2000, status=TaskStatus.RUNNING),)
    snapshot = ClusterSnapshot(
        nodes=nodes, queues=(build.queue(),), namespaces=(build.NS,), hypernodes=topology,
        podgroups=(_hard_group("pg", 1, 1, phase=PodGroupPhase.RUNNING),),
        pods=(*running, build.pod("pg-1", "pg", cpu=2000)))
    document = run_session(snapshot, workload.policy()).decisions.to_document()
    assert document["binds"] == {"ns/pg-1": "a2"}
