"""`vpolicy explain` for jobs a job-level gate closed this session: the gate is the conflict reported
(whatever other rule the solver could also have named), what would block the job next comes after it,
and a podgroup whose pods are not created yet names the enqueue rules that keep it Pending."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.engine.build import node, pod, podgroup, queue, resources, snapshot
from vpolicy.engine.session import run_session
from vpolicy.harness import explain, explain_fix, explain_pending
from vpolicy.harness import policy as policies
from vpolicy.load.cluster import load_cluster
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase

ROOT = Path(__file__).resolve().parent.parent.parent
GIB = 1024 ** 3
LLM = "research/llm-finetune-5b0c7f5e-2d7e-4c1a-9f0e-0d6a1c2b3e4f"  # the example's vcjob, no pods yet
NOT_ENQUEUED = "job is not enqueued: queue resource quota insufficient"


def _refused_by_enqueue(pod_cpu: int) -> ClusterSnapshot:
    """Queue q1 may use 2 cpu; podgroup big (minResources 4 cpu) is refused by enqueue while node n1
    has 8 cpu free; small (1 cpu) is enqueued after it. Its one pod asks `pod_cpu`."""
    big = replace(podgroup("big", "q1", phase=PodGroupPhase.PENDING), min_resources=resources(4000, GIB), creation=1.0)
    small = replace(podgroup("small", "q1", phase=PodGroupPhase.PENDING), min_resources=resources(1000, GIB),
                    creation=2.0)
    return snapshot(nodes=[node("n1", cpu=8000, memory=16 * GIB, pods=110)],
                    queues=[queue("q1", capability=resources(2000))], podgroups=[big, small],
                    pods=[pod("big-0", "big", cpu=pod_cpu)])


def _rules(items: list[explain_pending.CoreItem]) -> list[tuple[str, str]]:
    return [(i.kind, i.rule) for i in items]


@pytest.mark.parametrize("pod_cpu, after, after_rules", [
    pytest.param(4000, "conflict", [("gang", "gang.ready"), ("allocatable", "proportion.within_deserved")],
                 id="pod-also-over-the-queues-deserved-share"),
    pytest.param(1000, "fits", [], id="pod-within-the-queues-share"),
])
def test_a_job_enqueue_refused_shows_the_enqueue_rule_first_and_what_blocks_next(
        pod_cpu: int, after: str, after_rules: list[tuple[str, str]]) -> None:
    world = _refused_by_enqueue(pod_cpu)
    e = explain.explain_snapshot(world, policies.resolve(world), "ns/big-0", fixes=False)
    assert e.volcano[0] == NOT_ENQUEUED
    a = e.analysis
    assert a is not None and a.verdict == "conflict" and a.minimal
    assert _rules(a.core) == [("enqueue", "proportion.within_capability"), ("gang", "gang.ready")]
    assert a.core[0].text.endswith("= cpu 5 > real_capability[job.queue] = cpu 2")
    assert a.after is not None and a.after.verdict == after and _rules(a.after.core) == after_rules
    text = explain.format_text(e)
    assert text.index("proportion.within_capability") < text.index("once past that gate, ")
    assert explain.to_json(e)["conflict"]["after"]["verdict"] == after  # type: ignore[index]  # reason: JSON-shaped


def test_a_podgroup_without_pods_that_enqueue_refused_names_the_rules_and_a_checked_fix() -> None:
    snapshot_ = load_cluster([ROOT / "examples" / "cluster.yaml"])
    compiled = policies.resolve(snapshot_, conf=str(ROOT / "examples" / "volcano-scheduler.conf"))
    e = explain.explain_snapshot(snapshot_, compiled, LLM)
    assert e.status == "no-pods"
    assert e.summary == f"{LLM} has no pods yet (phase Pending): enqueue refused it in this session; these rules conflict"
    assert e.volcano == [NOT_ENQUEUED]
    a = e.analysis
    assert a is not None and a.verdict == "conflict"
    assert _rules(a.core) == [("enqueue", "overcommit.within_overcommit")]
    assert _rules(a.also) == [("enqueue", "proportion.within_capability")]
    assert a.core[0].text.endswith("cluster.inqueue + job.min_resources = nvidia.com/gpu 18 > idle = "
                                   "nvidia.com/gpu 11200m")
    assert e.notes == ["its Volcano Job's 2 pods are created by the job controller once the PodGroup leaves "
                       "Pending, and scheduled in a later session"]
    assert e.cheapest is not None
    fixed = run_session(explain_fix.apply(snapshot_, e.cheapest), compiled, solver_budget=0)
    assert fixed.state.jobs[LLM].phase == PodGroupPhase.INQUEUE.value
    assert "(checked: the engine then enqueues it (its pods are created next))" in explain.format_text(e)


def test_a_podgroup_without_pods_that_enqueue_let_in_keeps_the_plain_note() -> None:
    """Without minResources enqueue admits every podgroup: nothing refused it, so nothing conflicts."""
    snapshot_ = load_cluster([ROOT / "examples" / "cluster.yaml"])
    snapshot_ = replace(snapshot_, podgroups=tuple(replace(pg, min_resources=None) if pg.key == LLM else pg
                                                   for pg in snapshot_.podgroups))
    e = explain.explain_snapshot(snapshot_, policies.resolve(snapshot_), LLM)
    assert e.status == "no-pods" and e.analysis is None and e.fixes == []
    assert e.summary == (f"{LLM} has no pods yet (phase Inqueue): its Volcano Job's 2 pods are created by the job "
                         "controller once the PodGroup leaves Pending, and scheduled in a later session")


def test_a_capability_fix_stays_within_the_cluster_so_a_queue_tree_stays_valid(tmp_path: Path) -> None:
    """Queue org (capability cpu 2) caps its child team-a on a 4-cpu node: the third pod of team/work waits.
    Raising org's cpu by the whole pending demand (3 cpu, to 5) would put it above the cluster, which
    breaks a hierarchical capacity tree (nothing binds at all), and the search used to give up there;
    capped at what the cluster has, it finds the raise to 3 that places the pod."""
    scenario = (ROOT / "policies/tests/capacity/hierarchy_child_bounded_by_parent_capability.yaml").read_text()
    header, _, cluster = scenario.partition("\n---\n")
    conf_text = header.split("conf: |\n", 1)[1].split("\nexpect:", 1)[0]
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "conf.yaml").write_text("\n".join(line[2:] for line in conf_text.splitlines()) + "\n")
    snapshot_ = load_cluster([tmp_path / "cluster.yaml"])
    compiled = policies.resolve(snapshot_, conf=str(tmp_path / "conf.yaml"))
    e = explain.explain_snapshot(snapshot_, compiled, "team/work-p-2")
    raises = [f for f in e.fixes if f.kind == "capability"]
    assert [f.text for f in raises] == ["raise capability cpu of queue org from 2 to 3"]
    fixed = run_session(explain_fix.apply(snapshot_, raises[0]), compiled, solver_budget=0)
    assert "team/work-p-2" in fixed.decisions.binds
