"""The independent checker catches each kind of broken decision, and accepts sound ones.

Every case arranges a tiny cluster with the builders, hand-writes the decision document a buggy engine
could produce, and pins the violation codes `validate` reports (in check order).
"""
from __future__ import annotations

import pytest

from tests.engine import build
from tests.engine.build import GIB, document, eviction, node, pod, podgroup, queue, running, snapshot
from vpolicy.engine.session import run_session
from vpolicy.engine.validate import Violation, codes, validate
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf_text, parse_conf_text
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, Pod, PodGroupPhase, PriorityClass, TaskStatus

NODE = node("n0", cpu=4000, memory=8 * GIB, pods=10)
ONE_GANG = snapshot(nodes=[NODE], podgroups=[podgroup("pg", min_member=2)],
                    pods=[pod("pg-0", "pg"), pod("pg-1", "pg")])


def test_a_sound_document_has_no_violations() -> None:
    doc = document(binds={"pg-0": "n0", "pg-1": "n0"})
    assert validate(ONE_GANG, doc) == []


def test_a_violation_reads_as_code_and_sentence() -> None:
    found = validate(ONE_GANG, document(binds={"pg-0": "nowhere", "pg-1": "n0"}))
    assert found == [Violation("placement.unknown-node", "pod ns/pg-0 is bound to unknown node nowhere",
                               "ns/pg-0")]
    assert str(found[0]) == "placement.unknown-node: pod ns/pg-0 is bound to unknown node nowhere"


# Placements ------------------------------------------------------------------------------------------

PLACED = snapshot(
    nodes=[NODE, node("down", ready=False)],
    podgroups=[podgroup("pg", min_member=1)],
    pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), running("pg-2", "pg", "n0"), pod("lone"),
          pod("other", "pg", scheduler="default-scheduler")],
)


@pytest.mark.parametrize("doc, expected", [
    pytest.param(document(binds={"ghost": "n0"}), ["placement.unknown-pod"], id="unknown-pod"),
    pytest.param(document(binds={"pg-2": "n0"}), ["placement.not-pending"], id="running-pod-bound-again"),
    pytest.param(document(binds={"pg-0": "n9"}), ["placement.unknown-node"], id="unknown-node"),
    pytest.param(document(pipelined={"pg-0": "down"}), ["placement.node-not-ready"], id="node-not-ready"),
    pytest.param(document(binds={"lone": "n0"}, unschedulable={"pg-0": ["x"], "pg-1": ["x"]}),
                 ["placement.no-podgroup"], id="pod-without-podgroup"),
    pytest.param(document(binds={"other": "n0"}, unschedulable={"pg-0": ["x"], "pg-1": ["x"]}),
                 ["placement.other-scheduler"], id="other-schedulers-pod"),
    pytest.param(document(binds={"pg-0": "n0"}, pipelined={"pg-0": "n0"}, unschedulable={"pg-1": ["x"]}),
                 ["placement.bound-and-pipelined"], id="bound-and-pipelined"),
])
def test_placements_must_take_pending_pods_of_a_podgroup_to_ready_nodes(doc: dict[str, object],
                                                                       expected: list[str]) -> None:
    found = [c for c in codes(validate(PLACED, doc)) if c != "pending.no-reason"]
    assert found == expected


# Nodes -----------------------------------------------------------------------------------------------

SMALL = node("n0", cpu=2000, memory=4 * GIB, pods=3)


def _node_world(*pods_on_node: Pod) -> ClusterSnapshot:
    return snapshot(nodes=[SMALL], podgroups=[podgroup("old"), podgroup("new", min_member=1)],
                    pods=[*pods_on_node, pod("new-0", "new", cpu=1500), pod("new-1", "new", cpu=500, memory=0)])


@pytest.mark.parametrize("world, doc, expected", [
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000)), document(binds={"new-0": "n0"}),
                 ["node.over-allocatable", "node.over-future-idle"], id="bind-over-cpu"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=0, memory=0),
                             running("old-1", "old", "n0", cpu=0, memory=0)),
                 document(binds={"new-0": "n0", "new-1": "n0"}),
                 ["node.over-allocatable", "node.over-future-idle"], id="bind-over-pod-count"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000, status=TaskStatus.RELEASING)),
                 document(binds={"new-0": "n0"}), ["node.over-allocatable"], id="bind-into-releasing-room"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000, status=TaskStatus.RELEASING)),
                 document(pipelined={"new-0": "n0"}), [], id="pipeline-into-releasing-room"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000)),
                 document(pipelined={"new-0": "n0"}), ["node.over-future-idle"], id="pipeline-over-future-idle"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000)),
                 document(binds={"new-0": "n0"}, evictions=[eviction("old-0", "preempt", "new")]),
                 ["eviction.no-preemptor-placed", "node.over-allocatable"],
                 id="bind-into-room-an-eviction-frees-later"),
    pytest.param(_node_world(running("old-0", "old", "n0", cpu=1000)),
                 document(pipelined={"new-0": "n0"}, evictions=[eviction("old-0", "preempt", "new")]), [],
                 id="pipeline-into-room-an-eviction-frees"),
])
def test_no_node_holds_more_than_it_can(world: ClusterSnapshot, doc: dict[str, object],
                                        expected: list[str]) -> None:
    assert [c for c in codes(validate(world, doc)) if c != "pending.no-reason"] == expected


def test_a_node_already_full_in_the_snapshot_is_not_blamed_on_the_session() -> None:
    world = snapshot(nodes=[SMALL], podgroups=[podgroup("old")],
                     pods=[running("old-0", "old", "n0", cpu=3000)])
    assert validate(world, document()) == []


# Gangs -----------------------------------------------------------------------------------------------

def _gang(min_member: int, *extra: Pod) -> ClusterSnapshot:
    return snapshot(nodes=[NODE], podgroups=[podgroup("pg", min_member=min_member)],
                    pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), pod("pg-2", "pg"), *extra])


@pytest.mark.parametrize("world, doc, expected", [
    pytest.param(_gang(3), document(binds={"pg-0": "n0", "pg-1": "n0"}, unschedulable={"pg-2": ["full"]}),
                 ["gang.bound-below-min-member"], id="gang-half-bound"),
    pytest.param(_gang(3), document(binds={"pg-0": "n0", "pg-1": "n0", "pg-2": "n0"}), [], id="gang-fully-bound"),
    pytest.param(_gang(3, running("pg-3", "pg", "n0")),
                 document(binds={"pg-0": "n0", "pg-1": "n0"}, unschedulable={"pg-2": ["full"]}), [],
                 id="running-members-count"),
    pytest.param(_gang(3, pod("pg-3", "pg", cpu=0, memory=0)),
                 document(binds={"pg-0": "n0", "pg-1": "n0"}, unschedulable={"pg-2": ["full"], "pg-3": ["x"]}),
                 [], id="pending-best-effort-members-count"),
    pytest.param(_gang(3), document(pipelined={"pg-0": "n0"}, binds={"pg-1": "n0"},
                                    unschedulable={"pg-2": ["x"]}),
                 ["gang.bound-below-min-member"], id="pipelined-pods-do-not-complete-a-bound-gang"),
    pytest.param(_gang(3), document(pipelined={"pg-0": "n0"}, unschedulable={"pg-1": ["x"], "pg-2": ["x"]}),
                 [], id="pipelined-gangs-are-not-checked"),
])
def test_gangs_are_placed_all_or_nothing(world: ClusterSnapshot, doc: dict[str, object],
                                         expected: list[str]) -> None:
    assert codes(validate(world, doc)) == expected


def test_the_gang_check_can_be_switched_off() -> None:
    doc = document(binds={"pg-0": "n0"}, unschedulable={"pg-1": ["x"], "pg-2": ["x"]})
    assert validate(_gang(3), doc, gang=False) == []


NO_GANG_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@pytest.mark.parametrize("conf_text, engine_binds, expected", [
    pytest.param(NO_GANG_CONF, 2, [], id="conf-without-gang-binds-tasks-one-by-one"),
    pytest.param(default_conf_text(), 0, ["gang.bound-below-min-member"], id="volcano-default-conf-has-gang"),
])
def test_the_policy_says_whether_gang_is_in_force(conf_text: str, engine_binds: int, expected: list[str]) -> None:
    """The engine's own output under a conf without gang binds what fits, below minMember: the policy
    the session ran tells the validator so, without a `gang=False` every caller must remember."""
    policy = from_conf(parse_conf_text(conf_text, file="test.conf"))
    world = snapshot(nodes=[node("n0", cpu=2000, memory=8 * GIB)], podgroups=[podgroup("pg", min_member=3)],
                     pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), pod("pg-2", "pg")])
    doc = run_session(world, policy, solver_budget=0).decisions.to_document()
    binds = doc["binds"]
    assert isinstance(binds, dict) and len(binds) == engine_binds  # 2 cpu: two of the three 1-cpu pods
    assert codes(validate(world, doc, policy=policy)) == []
    half_bound = document(binds={"pg-0": "n0", "pg-1": "n0"}, unschedulable={"pg-2": ["full"]})
    assert codes(validate(world, half_bound, policy=policy)) == expected


# Queues ----------------------------------------------------------------------------------------------

def _capped(capability: Resources, *extra: Pod) -> ClusterSnapshot:
    return snapshot(nodes=[NODE], queues=[queue("q0", capability=capability)],
                    podgroups=[podgroup("pg", min_member=1)],
                    pods=[pod("pg-0", "pg", cpu=1000, memory=GIB), pod("pg-1", "pg", cpu=1000, memory=GIB), *extra])


@pytest.mark.parametrize("world, doc, expected", [
    pytest.param(_capped(build.resources(1500, 8 * GIB)), document(binds={"pg-0": "n0", "pg-1": "n0"}),
                 ["queue.over-capability"], id="binds-over-cpu-capability"),
    pytest.param(_capped(build.resources(1500, 8 * GIB)), document(binds={"pg-0": "n0"}, pipelined={"pg-1": "n0"}),
                 ["queue.over-capability"], id="pipelined-pods-hold-quota-too"),
    pytest.param(_capped(build.resources(2000, 8 * GIB)), document(binds={"pg-0": "n0", "pg-1": "n0"}), [],
                 id="exactly-at-capability"),
    pytest.param(_capped(build.resources(1500, 8 * GIB), running("pg-2", "pg", "n0", cpu=1000)),
                 document(binds={"pg-0": "n0"}, evictions=[], unschedulable={"pg-1": ["x"]}),
                 ["queue.over-capability"], id="running-pods-count"),
    pytest.param(_capped(build.resources(2000, 8 * GIB), running("pg-2", "pg", "n0", cpu=1000)),
                 document(pipelined={"pg-0": "n0"}, evictions=[eviction("pg-2", "preempt", "pg")],
                          unschedulable={"pg-1": ["x"]}),
                 [], id="evicted-pods-give-quota-back"),
    pytest.param(_capped(build.resources(1000, GIB // 2), running("pg-2", "pg", "n0", cpu=0, memory=GIB)),
                 document(binds={"pg-0": "n0"}, unschedulable={"pg-1": ["x"]}),
                 ["queue.over-capability"], id="over-on-a-dim-the-new-pod-requests"),
    pytest.param(_capped(build.resources(3000, GIB // 2), running("pg-2", "pg", "n0", cpu=0, memory=GIB)),
                 document(binds={"pg-0": "n0"}, unschedulable={"pg-1": ["x"]}),
                 ["queue.over-capability"], id="memory-already-over-and-requested-again"),
    pytest.param(_capped(Resources({"cpu": -1, "nvidia.com/gpu": 1000})),
                 document(binds={"pg-0": "n0", "pg-1": "n0"}), [], id="negative-cpu-capability-is-unlimited"),
    pytest.param(_capped(build.resources(pods=1, cpu=8000, memory=8 * GIB)),
                 document(binds={"pg-0": "n0", "pg-1": "n0"}), [], id="pods-in-capability-ignored"),
])
def test_no_queue_grows_above_its_capability(world: ClusterSnapshot, doc: dict[str, object],
                                             expected: list[str]) -> None:
    assert codes(validate(world, doc)) == expected


def test_a_queue_over_capability_only_where_no_new_pod_asks_is_not_blamed() -> None:
    world = snapshot(nodes=[NODE], queues=[queue("q0", capability=build.resources(8000, GIB // 2))],
                     podgroups=[podgroup("pg")],
                     pods=[running("pg-0", "pg", "n0", cpu=0, memory=GIB), pod("pg-1", "pg", cpu=500, memory=0)])
    assert validate(world, document(binds={"pg-1": "n0"})) == []


# Evictions -------------------------------------------------------------------------------------------

CLASSES = [PriorityClass("low", 10), PriorityClass("high", 1000)]


def _contest(*, victim_queue: str = "q0", victim_class: str = "low", preemptor_class: str = "high",
             reclaimable: bool = True, victim_status: TaskStatus = TaskStatus.RUNNING,
             preemptable: bool = True) -> ClusterSnapshot:
    """A full node: `old-0` of podgroup `old` runs there; `new-0` of podgroup `new` (queue q0) waits."""
    return snapshot(
        nodes=[node("n0", cpu=1000, memory=GIB, pods=10)],
        queues=[queue("q0"), queue("q1", reclaimable=reclaimable)],
        podgroups=[podgroup("old", victim_queue, priority_class=victim_class, phase=PodGroupPhase.RUNNING),
                   podgroup("new", "q0", priority_class=preemptor_class)],
        pods=[running("old-0", "old", "n0", status=victim_status, preemptable=preemptable), pod("new-0", "new")],
        priority_classes=CLASSES,
    )


PIPELINED = {"new-0": "n0"}


@pytest.mark.parametrize("world, doc, expected", [
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")]), [],
                 id="preempt-lower-priority-in-same-queue"),
    pytest.param(_contest(victim_queue="q1"),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "reclaim", "new")]), [],
                 id="reclaim-from-other-reclaimable-queue"),
    pytest.param(_contest(victim_queue="q1"),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")]),
                 ["preempt.cross-queue"], id="preempt-across-queues"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("old-0", "reclaim", "new")]),
                 ["reclaim.same-queue"], id="reclaim-inside-own-queue"),
    pytest.param(_contest(victim_queue="q1", reclaimable=False),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "reclaim", "new")]),
                 ["reclaim.not-reclaimable"], id="reclaim-from-unreclaimable-queue"),
    pytest.param(_contest(victim_queue="q1", victim_status=TaskStatus.BOUND),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "reclaim", "new")]),
                 ["eviction.not-running"], id="reclaim-of-bound-pod"),
    pytest.param(_contest(victim_status=TaskStatus.BOUND),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")]), [],
                 id="preempt-of-bound-pod"),
    pytest.param(_contest(victim_status=TaskStatus.RELEASING),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")]),
                 ["eviction.not-running"], id="evict-releasing-pod"),
    pytest.param(_contest(preemptable=False),
                 document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")]),
                 ["eviction.not-preemptable"], id="victim-not-preemptable"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")] * 2),
                 ["eviction.duplicate"], id="evicted-twice"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("new-0", "preempt", "new")]),
                 ["eviction.not-running", "node.over-future-idle"], id="pending-pod-evicted"),
    pytest.param(_contest(), document(evictions=[eviction("old-0", "preempt", "new")],
                                      unschedulable={"new-0": ["waiting"]}),
                 ["eviction.no-preemptor-placed"], id="eviction-without-pipelined-preemptor"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "gone")]),
                 ["eviction.unknown-podgroup"], id="unknown-preemptor-podgroup"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("ghost", "preempt", "new")]),
                 ["eviction.unknown-pod", "node.over-future-idle"], id="unknown-victim"),
    pytest.param(_contest(), document(pipelined=PIPELINED, evictions=[eviction("old-0", "gangpreempt", "new")]),
                 ["eviction.action-not-configured"], id="unknown-action"),
    pytest.param(_contest(), document(pipelined=PIPELINED, nominated=PIPELINED,
                                      evictions=[eviction("old-0", "preempt", "new")]), [],
                 id="preemptor-nominated-where-it-evicted"),
    pytest.param(_contest(), document(pipelined=PIPELINED, nominated={"new-0": "n1"},
                                      evictions=[eviction("old-0", "preempt", "new")]),
                 ["placement.nominated-not-pipelined"], id="nominated-elsewhere"),
    pytest.param(_contest(victim_status=TaskStatus.RELEASING), document(pipelined=PIPELINED, nominated=PIPELINED),
                 ["placement.nominated-without-eviction"], id="nominated-onto-room-being-released"),
])
def test_evictions_follow_preempt_and_reclaim_rules(world: ClusterSnapshot, doc: dict[str, object],
                                                    expected: list[str]) -> None:
    assert codes(validate(world, doc)) == expected


@pytest.mark.parametrize("victim_class, preemptor_class, priority_victims, expected", [
    pytest.param("low", "high", True, [], id="lower-priority-victim"),
    pytest.param("high", "low", True, ["preempt.not-lower-priority"], id="higher-priority-victim"),
    pytest.param("low", "low", True, ["preempt.not-lower-priority"], id="equal-priority-victim"),
    pytest.param("high", "low", False, [], id="priority-check-off"),
])
def test_preempt_victims_have_lower_job_priority_when_priority_decides(
        victim_class: str, preemptor_class: str, priority_victims: bool, expected: list[str]) -> None:
    world = _contest(victim_class=victim_class, preemptor_class=preemptor_class)
    doc = document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")])
    assert codes(validate(world, doc, priority_victims=priority_victims)) == expected


@pytest.mark.parametrize("conf_actions, expected", [
    pytest.param(None, [], id="any-action"),
    pytest.param(("enqueue", "allocate", "backfill", "preempt"), [], id="preempt-configured"),
    pytest.param(("enqueue", "allocate", "backfill"), ["eviction.action-not-configured"], id="preempt-not-configured"),
])
def test_evictions_come_only_from_configured_actions(conf_actions: tuple[str, ...] | None,
                                                     expected: list[str]) -> None:
    doc = document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")])
    assert codes(validate(_contest(), doc, conf_actions=conf_actions)) == expected


@pytest.mark.parametrize("world, expected", [
    pytest.param(_contest(victim_status=TaskStatus.RELEASING),
                 ["eviction.action-not-configured", "eviction.not-running"], id="releasing-victim"),
    pytest.param(_contest(victim_queue="q1", preemptable=False),
                 ["eviction.action-not-configured", "eviction.not-preemptable", "preempt.cross-queue"],
                 id="unpreemptable-victim-of-another-queue"),
])
def test_an_unconfigured_action_does_not_hide_the_victims_other_problems(world: ClusterSnapshot,
                                                                         expected: list[str]) -> None:
    doc = document(pipelined=PIPELINED, evictions=[eviction("old-0", "preempt", "new")])
    assert codes(validate(world, doc, conf_actions=("enqueue", "allocate"))) == expected


# Reasons ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("doc, expected", [
    pytest.param(document(unschedulable={"pg-0": ["full"], "pg-1": ["full"]}), [], id="every-pending-pod-explained"),
    pytest.param(document(unschedulable={"pg-0": ["full"]}), ["pending.no-reason"], id="one-pod-unexplained"),
    pytest.param(document(unschedulable={"pg-0": ["full"], "pg-1": []}), ["pending.no-reason"], id="empty-reasons"),
    pytest.param(document(unschedulable={"pg-0": ["full"], "pg-1": [" "]}), ["pending.no-reason"], id="blank-reason"),
    pytest.param(document(binds={"pg-0": "n0", "pg-1": "n0"}, unschedulable={"pg-0": ["full"]}),
                 ["pending.reason-for-placed-pod"], id="placed-pod-listed-unschedulable"),
])
def test_every_pending_pod_says_why(doc: dict[str, object], expected: list[str]) -> None:
    assert codes(validate(ONE_GANG, doc)) == expected


def test_other_schedulers_pending_pods_need_no_reason() -> None:
    world = snapshot(nodes=[NODE], podgroups=[podgroup("pg")], pods=[pod("pg-0", "pg", scheduler="default-scheduler")])
    assert validate(world, document()) == []


@pytest.mark.parametrize("doc", [
    pytest.param({"binds": ["ns/pg-0"]}, id="binds-not-a-map"),
    pytest.param({"evictions": {"pod": "ns/pg-0"}}, id="evictions-not-a-list"),
    pytest.param({"unschedulable": []}, id="unschedulable-not-a-map"),
])
def test_a_malformed_document_is_a_broken_contract(doc: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        validate(ONE_GANG, doc)
