"""`engine.victim_plan`: the joint victim plan places every preemptor it is given, with the fewest GPU
pods evicted for all of them together, within each job's victim budget and each queue's floor."""
from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from vpolicy.engine.state import NodeInfo, SessionState, TaskInfo
from vpolicy.engine.victim_plan import Option, VictimPlan, plan_victims
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import PodGroupPhase

from tests.engine.build import GIB, GPU, node, pod, podgroup, running, snapshot


def _state() -> SessionState:
    """n0: one 4-GPU pod `big-0` beside four 1-GPU pods `small-*`; n1: one 8-GPU pod `whole-0`. All
    low priority, of three jobs of one queue. p0 and p1 are pending 4-GPU pods of another job."""
    pods = [running("big-0", "big", "n0", gpu=4000, cpu=0, memory=0),
            *(running(f"small-{i}", "small", "n0", gpu=1000, cpu=0, memory=0) for i in range(4)),
            running("whole-0", "whole", "n1", gpu=8000, cpu=0, memory=0),
            pod("p-0", "p", gpu=4000, cpu=0, memory=0, priority=100),
            pod("p-1", "p", gpu=4000, cpu=0, memory=0, priority=100)]
    groups = [podgroup(name, phase=PodGroupPhase.RUNNING) for name in ("big", "small", "whole")]
    return SessionState(snapshot(nodes=[node(n, cpu=32_000, memory=64 * GIB, gpu=8000) for n in ("n0", "n1")],
                                 podgroups=[*groups, podgroup("p", min_member=2)], pods=pods))


def _tasks(state: SessionState) -> dict[str, TaskInfo]:
    return {t.name: t for job in state.jobs.values() for t in job.tasks}


def _everything_allowed(state: SessionState) -> Callable[[TaskInfo], list[Option]]:
    """Every running pod on a node is a victim any preemptor may take there."""
    def options(p: TaskInfo) -> list[Option]:
        return [Option(n, tuple(t for t in n.tasks if t.node_name == n.name)) for n in state.nodes.values()]
    return options


def _gpus(t: TaskInfo) -> int:
    return t.resreq.get(GPU, 0) // 1000


def _evicted(plan: VictimPlan) -> set[str]:
    return {v.name for victims in plan.victims_on.values() for v in victims}


def test_two_preemptors_share_one_eviction_rather_than_taking_four_small_pods() -> None:
    """Two 4-GPU preemptors: evicting `whole-0` (one GPU pod) makes room for both on n1; `big-0` plus
    the small pods would cost five. One by one, each would take a single pod (big-0, then whole-0):
    two in all."""
    state = _state()
    tasks = _tasks(state)
    plan = plan_victims([tasks["p-0"], tasks["p-1"]], _everything_allowed(state), gpus=_gpus, budgets={},
                        floors={}, time_limit=10)
    assert plan is not None
    assert _evicted(plan) == {"whole-0"}
    assert plan.node_of == {tasks["p-0"].uid: "n1", tasks["p-1"].uid: "n1"}


def test_a_job_budget_keeps_its_pods_and_the_plan_looks_elsewhere() -> None:
    state = _state()
    tasks = _tasks(state)
    plan = plan_victims([tasks["p-0"]], _everything_allowed(state), gpus=_gpus,
                        budgets={"ns/big": 0, "ns/whole": 0}, floors={}, time_limit=10)
    assert plan is not None
    assert _evicted(plan) == {f"small-{i}" for i in range(4)}


def test_a_floor_asks_the_queue_to_release_at_least_what_it_names() -> None:
    """One 4-GPU preemptor, but the queue must release 8 GPUs: whole-0 (one pod) rather than big-0 and
    four small pods."""
    state = _state()
    tasks = _tasks(state)
    one = plan_victims([tasks["p-0"]], _everything_allowed(state), gpus=_gpus, budgets={}, floors={},
                       time_limit=10)
    floored = plan_victims([tasks["p-0"]], _everything_allowed(state), gpus=_gpus, budgets={},
                           floors={"q0": Resources({GPU: 8000})}, time_limit=10)
    assert one is not None and _evicted(one) == {"big-0"}  # fewest GPUs among one-pod sets
    assert floored is not None and _evicted(floored) == {"whole-0"}


def test_no_plan_when_a_preemptor_cannot_be_placed() -> None:
    state = _state()
    tasks = _tasks(state)
    nowhere: dict[str, list[Option]] = {}
    assert plan_victims([tasks["p-0"]], lambda p: nowhere.get(p.uid, []), gpus=_gpus, budgets={}, floors={},
                        time_limit=10) is None
    # with big-0 and whole-0 kept by their jobs' budgets only the small pods' 4 GPUs can be freed: room
    # for one 4-GPU preemptor, not two
    budgets = {"ns/big": 0, "ns/whole": 0}
    assert plan_victims([tasks["p-0"], tasks["p-1"]], _everything_allowed(state), gpus=_gpus, budgets=budgets,
                        floors={}, time_limit=10) is None


def test_room_already_free_costs_nothing() -> None:
    state = _state()
    tasks = _tasks(state)
    empty = NodeInfo(node("n2", cpu=32_000, memory=64 * GIB, gpu=8000))
    plan = plan_victims([tasks["p-0"]], lambda p: [Option(empty, ()), *_everything_allowed(state)(p)],
                        gpus=_gpus, budgets={}, floors={}, time_limit=10)
    assert plan is not None and _evicted(plan) == set() and plan.node_of == {tasks["p-0"].uid: "n2"}


def _cluster(layout: list[list[int]], asks: list[int]) -> SessionState:
    """Nodes of 8 GPUs, node i full of running 1/2/4/8-GPU pods of `layout[i]` (one job per pod, low
    priority, one queue); one pending preemptor per entry of `asks`, of its GPUs."""
    pods = [running(f"v{i}-{j}", f"v{i}-{j}", f"n{i}", gpu=g * 1000, cpu=0, memory=0)
            for i, sizes in enumerate(layout) for j, g in enumerate(sizes)]
    pods += [pod(f"p-{k}", "p", gpu=g * 1000, cpu=0, memory=0, priority=100) for k, g in enumerate(asks)]
    groups = [podgroup(p.group, phase=PodGroupPhase.RUNNING) for p in pods if p.node_name]
    nodes = [node(f"n{i}", cpu=32_000, memory=64 * GIB, gpu=8000) for i in range(len(layout))]
    return SessionState(snapshot(nodes=nodes, podgroups=[*groups, podgroup("p", min_member=len(asks))], pods=pods))


def test_alike_preemptors_go_to_as_many_nodes_as_they_need() -> None:
    """Three 8-GPU preemptors with the same options are one group of the program, a count per node;
    each still gets a node of its own, the three where one 8-GPU pod makes the room."""
    state = _cluster([[8], [4, 4], [8], [2, 2, 2, 2], [8]], [8, 8, 8])
    tasks = _tasks(state)
    preemptors = [tasks[f"p-{k}"] for k in range(3)]
    plan = plan_victims(preemptors, _everything_allowed(state), gpus=_gpus, budgets={}, floors={}, time_limit=10)
    assert plan is not None
    assert sorted(plan.node_of[p.uid] for p in preemptors) == ["n0", "n2", "n4"]
    assert _evicted(plan) == {"v0-0", "v2-0", "v4-0"}


@settings(max_examples=25, deadline=None)
@given(layout=st.lists(st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=4).filter(lambda s: sum(s) <= 8),
                       min_size=1, max_size=5),
       asks=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4))
def test_grouping_alike_preemptors_changes_nothing_the_plan_evicts(layout: list[list[int]], asks: list[int]) -> None:
    """Whether alike preemptors are one group (their options one list) or each its own (the same options
    listed in another order for every other one), the program finds a plan exactly when the other does,
    and evicts the same number of GPU pods and GPUs."""
    state = _cluster(layout, asks)
    tasks = _tasks(state)
    preemptors = [tasks[f"p-{k}"] for k in range(len(asks))]
    shared = _everything_allowed(state)

    def apart(p: TaskInfo) -> list[Option]:
        found = shared(p)
        return found[::-1] if preemptors.index(p) % 2 else found

    def cost(plan: VictimPlan | None) -> tuple[int, int] | None:
        if plan is None:
            return None
        victims = [v for vs in plan.victims_on.values() for v in vs]
        return sum(1 for v in victims if _gpus(v)), sum(_gpus(v) for v in victims)

    grouped = plan_victims(preemptors, shared, gpus=_gpus, budgets={}, floors={}, time_limit=10)
    single = plan_victims(preemptors, apart, gpus=_gpus, budgets={}, floors={}, time_limit=10)
    assert cost(grouped) == cost(single)
    if grouped is not None:
        for name in {grouped.node_of[p.uid] for p in preemptors}:  # the planned room holds the preemptors
            here = sum(_gpus(p) for p in preemptors if grouped.node_of[p.uid] == name)
            free = 8 - sum(_gpus(t) for t in state.nodes[name].tasks) + sum(_gpus(v) for v in grouped.victims_on.get(name, ()))
            assert here <= free
