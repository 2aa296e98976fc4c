"""Pods counted per topology domain (engine.pod_relations) and the predicates written over them.

The counts must follow every placement and removal of a session (Volcano's predicates plugin updates
its node infos on Allocate and Deallocate), and no session may ever place a pod where a required
anti-affinity forbids it: its own against every pod, a running pod's against it (a hypothesis property
over generated clusters). A pod placed this session is seen as the *owner* of an anti-affinity term only
on a node that held such an owner when the session opened: Volcano's snapshot lists those nodes once
(plugins/util/k8s/snapshot.go, NewSnapshot).
"""
from __future__ import annotations

from functools import cache

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.build import GIB, NS, node, pod, podgroup, snapshot
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.engine.state import SessionState
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf, helm_default_conf_text, parse_conf_text
from vpolicy.model import affinity
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod, TaskStatus

ZONE = "topology.kubernetes.io/zone"
HOST = affinity.HOSTNAME_KEY
HELM_ALL_ACTIONS = helm_default_conf_text().replace(
    'actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, backfill, preempt, reclaim"')


def zoned(name: str, zone: str, *, cpu: int = 4000) -> Node:
    base = node(name, cpu=cpu)
    return Node(base.name, base.allocatable, labels={HOST: name, ZONE: zone})


def anti(app: str, key: str) -> affinity.PodRelations:
    term = affinity.PodAffinityTerm(key, affinity.LabelSelector((("app", app),)))
    return affinity.PodRelations(required_anti_affinity=(term,))


def labelled(p: Pod, app: str, relations: affinity.PodRelations = affinity.NO_RELATIONS) -> Pod:
    return Pod(p.namespace, p.name, p.uid, p.resreq, p.status, node_name=p.node_name, priority=p.priority,
               group=p.group, labels={"app": app}, scheduler_name=p.scheduler_name, relations=relations)


@cache
def _policy(conf_text: str | None) -> CompiledPolicy:
    return from_conf(default_conf() if conf_text is None else parse_conf_text(conf_text, file="<test-conf>"))


def test_counts_follow_placements_and_removals_within_the_session() -> None:
    snap = snapshot(
        nodes=[zoned("a1", "z1"), zoned("a2", "z1"), zoned("b1", "z2")],
        pods=[labelled(pod("w-0", "w"), "web", anti("web", ZONE)),
              labelled(pod("w-1", "w"), "web", anti("web", ZONE))],
        podgroups=[podgroup("w")])
    state = SessionState(snap)
    index = state.pod_index
    w0, w1 = (state.tasks[f"uid-w-{i}"] for i in range(2))
    term = w1.pod_anti_affinity[0]
    rows = np.arange(3)
    assert index.in_domain(term, rows).tolist() == [0, 0, 0]
    state.set_status(w0, TaskStatus.ALLOCATED, "a2")
    assert index.in_domain(term, rows).tolist() == [1, 1, 0], "a1 shares a2's zone"
    assert index.owners_in_domain(w1, rows).tolist() == [0, 0, 0], "a2 held no anti-affinity owner at open"
    state.set_status(w0, TaskStatus.PIPELINED, "b1")
    assert index.in_domain(term, rows).tolist() == [0, 0, 1]
    state.set_status(w0, TaskStatus.PENDING, "")
    assert index.in_domain(term, rows).tolist() == [0, 0, 0]


def test_owners_are_seen_on_the_nodes_that_held_one_when_the_session_opened() -> None:
    snap = snapshot(
        nodes=[zoned("a1", "z1"), zoned("a2", "z1"), zoned("b1", "z2")],
        pods=[labelled(pod("old-0", "old", status=TaskStatus.RUNNING, on="a1"), "db", anti("web", ZONE)),
              labelled(pod("w-0", "w"), "db", anti("web", ZONE)), labelled(pod("w-1", "w"), "web")],
        podgroups=[podgroup("old"), podgroup("w")])
    state = SessionState(snap)
    w0, w1 = state.tasks["uid-w-0"], state.tasks["uid-w-1"]
    rows = np.arange(3)
    assert state.pod_index.owners_in_domain(w1, rows).tolist() == [1, 1, 0]
    state.set_status(w0, TaskStatus.ALLOCATED, "a1")  # a listed node: its new owner counts too
    assert state.pod_index.owners_in_domain(w1, rows).tolist() == [2, 2, 0]
    state.set_status(w0, TaskStatus.ALLOCATED, "b1")  # not listed at open: Volcano does not see it
    assert state.pod_index.owners_in_domain(w1, rows).tolist() == [1, 1, 0]


def test_a_session_without_relations_builds_no_index() -> None:
    snap = snapshot(nodes=[node("n1")], pods=[pod("p-0", "p")], podgroups=[podgroup("p")])
    state = SessionState(snap)
    assert not state.pod_index.active
    assert state.tasks["uid-p-0"].pod_affinity == []


def test_a_spread_term_skips_terminating_pods_and_other_namespaces() -> None:
    spread = affinity.PodRelations(spread=(affinity.SpreadConstraint(1, ZONE, selector=affinity.LabelSelector(
        (("app", "web"),))),))
    releasing = labelled(pod("old-0", "old", status=TaskStatus.RELEASING, on="a1"), "web")
    other_ns = Pod("other", "x-0", "uid-x-0", releasing.resreq, TaskStatus.RUNNING, node_name="a1",
                   labels={"app": "web"})
    running = labelled(pod("old-1", "old", status=TaskStatus.RUNNING, on="b1"), "web")
    snap = snapshot(nodes=[zoned("a1", "z1"), zoned("b1", "z2")],
                    pods=[releasing, other_ns, running, labelled(pod("p-0", "p"), "web", spread)],
                    podgroups=[podgroup("old"), podgroup("p")])
    state = SessionState(snap)
    term = state.tasks["uid-p-0"].spread_constraints[0]
    assert state.pod_index.in_domain(term, np.arange(2)).tolist() == [0, 1]
    assert state.pod_index.domain_min(term) == 0


def test_image_bytes_is_kubes_sum_of_sizes_scaled_by_the_share_of_nodes_holding_each_image() -> None:
    """ImageLocality's sumImageScores by hand: `a` (1001 bytes) is on 2 of 3 nodes, listed twice on n0
    under two of its names, and counts once per node (int(1001 * 2/3) = 667); `b` (1000 bytes) is on
    n0 only (int(1000 / 3) = 333); n2 holds no image; a placement changes none of it."""
    def imaged(name: str, images: tuple[tuple[tuple[str, ...], int], ...]) -> Node:
        return Node(name, node(name).allocatable, labels={HOST: name}, images=images)

    nodes = [imaged("n0", ((("a:v1", "a@sha256:1"), 1001), (("a:v1",), 1001), (("b:v1",), 1000))),
             imaged("n1", ((("a:v1",), 1001),)), imaged("n2", ())]
    both = affinity.PodRelations(images=("a:v1", "b"))  # `b` without a tag is kube's `b:latest`: not `b:v1`
    tagged = affinity.PodRelations(images=("a:v1", "b:v1"))
    snap = snapshot(nodes=nodes, pods=[labelled(pod("p-0", "p"), "x", both), labelled(pod("p-1", "p"), "x", tagged),
                                       labelled(pod("p-2", "p"), "x")], podgroups=[podgroup("p")])
    state = SessionState(snap)
    index, rows = state.pod_index, np.arange(3)
    p0, p1, p2 = (state.tasks[f"uid-p-{i}"] for i in range(3))
    assert index.image_bytes(p0.relations.images, rows).tolist() == [667, 667, 0]
    assert index.image_bytes(p1.relations.images, rows).tolist() == [667 + 333, 667, 0]
    assert p2.relations.images == ()
    state.set_status(p0, TaskStatus.ALLOCATED, "n2")
    assert index.image_bytes(p1.relations.images, np.array([2, 0])).tolist() == [0, 667 + 333]


# --- property: required anti-affinity is never broken by a placement ------------------------------------
@st.composite
def anti_affinity_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    zones = draw(st.integers(1, 3))
    nodes = [zoned(f"n{i}", f"z{draw(st.integers(0, zones - 1))}", cpu=draw(st.sampled_from([2000, 4000])))
             for i in range(draw(st.integers(1, 5)))]
    pods: list[Pod] = []
    groups = []
    for g in range(draw(st.integers(1, 4))):
        name = f"g{g}"
        size = draw(st.integers(1, 4))
        groups.append(podgroup(name, min_member=draw(st.integers(1, size))))
        app = draw(st.sampled_from(["a", "b"]))
        relations = affinity.NO_RELATIONS
        if draw(st.booleans()):
            relations = anti(draw(st.sampled_from(["a", "b"])), draw(st.sampled_from([HOST, ZONE])))
        for i in range(size):
            placed = draw(st.booleans()) if g == 0 else False
            on = draw(st.sampled_from(nodes)).name if placed else ""
            status = TaskStatus.RUNNING if placed else TaskStatus.PENDING
            pods.append(labelled(pod(f"{name}-{i}", name, status=status, on=on, priority=g + 1), app, relations))
    return snapshot(nodes=nodes, pods=pods, podgroups=groups)


def _forbids(owner: Pod, other: Pod, owner_node: Node, other_node: Node) -> bool:
    for term in owner.relations.required_anti_affinity:
        same = owner_node.labels.get(term.topology_key) == other_node.labels.get(term.topology_key) is not None
        if same and other.namespace == owner.namespace and affinity.selector_matches(term.selector, other.labels):
            return True
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=anti_affinity_clusters(), conf=st.sampled_from([None, HELM_ALL_ACTIONS]))
def test_no_placement_breaks_a_required_anti_affinity(snap: ClusterSnapshot, conf: str | None) -> None:
    """Between a pod placed this session and a pod running since before it: neither's required
    anti-affinity forbids the other's node (pods evicted this session still count: they are releasing)."""
    decisions = run_session(snap, _policy(conf)).decisions
    nodes = {n.name: n for n in snap.nodes}
    placed_now = {**decisions.binds, **decisions.pipelined}
    running = {p.key: p.node_name for p in snap.pods if p.node_name}
    by_key = {p.key: p for p in snap.pods}
    for key, node_name in placed_now.items():
        for other_key, other_node in running.items():
            new, other = by_key[key], by_key[other_key]
            assert not _forbids(new, other, nodes[node_name], nodes[other_node]), (key, other_key)
            assert not _forbids(other, new, nodes[other_node], nodes[node_name]), (other_key, key)


def test_the_property_checker_sees_a_broken_anti_affinity() -> None:
    """The property's own judge: a pair that does share a forbidden zone is caught."""
    a, b = zoned("a", "z1"), zoned("b", "z1")
    owner = labelled(pod("x", on="a"), "a", anti("b", ZONE))
    other = labelled(pod("y", on="b"), "b")
    assert _forbids(owner, other, a, b)
    assert not _forbids(other, owner, b, a)
    assert NS == owner.namespace and GIB > 0


# --- the batched forms of the counting built-ins answer as the scalar ones -------------------------------
@st.composite
def related_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """Nodes over zones (some without the zone label, some holding an image); pods with every kind of
    term, spread constraint, host port and image, some already running."""
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        labels = {HOST: f"n{i}"}
        if draw(st.integers(0, 4)):
            labels[ZONE] = f"z{draw(st.integers(0, 2))}"
        images = (((("img:v1",), 300 * 1024 * 1024),) if draw(st.booleans()) else ())
        nodes.append(Node(f"n{i}", node(f"n{i}").allocatable, labels=labels, images=images))
    term = st.builds(lambda app, key, w: affinity.PodAffinityTerm(key, affinity.LabelSelector((("app", app),)),
                                                                  weight=w),
                     st.sampled_from(["a", "b"]), st.sampled_from([HOST, ZONE]), st.integers(1, 100))
    spread = st.builds(lambda app, key, skew, when, md: affinity.SpreadConstraint(
        skew, key, when, affinity.LabelSelector((("app", app),)), min_domains=md),
        st.sampled_from(["a", "b"]), st.sampled_from([HOST, ZONE]), st.integers(1, 2),
        st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]), st.integers(1, 3))
    relations = st.builds(
        affinity.PodRelations, required_affinity=st.lists(term, max_size=1).map(tuple),
        required_anti_affinity=st.lists(term, max_size=1).map(tuple),
        preferred_affinity=st.lists(term, max_size=1).map(tuple),
        preferred_anti_affinity=st.lists(term, max_size=1).map(tuple), spread=st.lists(spread, max_size=2).map(tuple),
        host_ports=st.sampled_from([(), (affinity.HostPort("", "TCP", 80),)]),
        images=st.sampled_from([(), ("img:v1",), ("other",)]))
    pods: list[Pod] = []
    groups = []
    for g in range(draw(st.integers(1, 3))):
        groups.append(podgroup(f"g{g}"))
        for i in range(draw(st.integers(1, 3))):
            on = draw(st.sampled_from(["", *[n.name for n in nodes]]))
            status = TaskStatus.RUNNING if on else TaskStatus.PENDING
            pods.append(labelled(pod(f"g{g}-{i}", f"g{g}", status=status, on=on), draw(st.sampled_from(["a", "b"])),
                                 draw(relations)))
    return snapshot(nodes=nodes, pods=pods, podgroups=groups)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=related_clusters())
def test_batched_answers_equal_the_scalar_ones_for_every_relation_rule(snap: ClusterSnapshot) -> None:
    """predicates.vpol and nodeorder.vpol over tasks with relations: the generated Python, the numpy
    forms (vcode and the interpreted vectoriser) and the closure tree answer alike on every node."""
    from pathlib import Path

    from vpolicy.compile import vectorize
    from vpolicy.compile.functions import FUNCTIONS
    from vpolicy.compile.lower import compile_module
    from vpolicy.engine.placement import Placement
    from vpolicy.engine.runtime import PluginInstance, Runtime
    from vpolicy.lang.parse import parse_file

    root = Path(__file__).resolve().parents[2] / "policies" / "volcano"
    modules = [compile_module(parse_file(root / f"{name}.vpol")) for name in ("predicates", "nodeorder")]
    state = SessionState(snap)
    rt = Runtime([[PluginInstance(m.name, m, {}) for m in modules]], state)
    placement = Placement(rt, state)
    rows = np.arange(len(placement.node_list))
    for module in modules:
        for rule in (r for cb in ("predicate", "node_order") for r in module.rules.get(cb, [])):
            interpreted = vectorize.compile_node_rule(rule.term, rule.params[1], module.functions, FUNCTIONS)
            for task in state.tasks.values():
                scalar = [float(rule.call(dict(rt.env), task, n)) for n in placement.node_list]
                env = dict(rt.env)
                env[rule.params[0]], env[rule.params[1]] = task, placement._batch(rows)
                for form, fn in (("vcode", rule.vector), ("vectorize", interpreted)):
                    assert fn is not None, f"{module.name}.{rule.name} has no batched form"
                    got = np.broadcast_to(np.asarray(fn(dict(env)), dtype=float), (len(rows),)).tolist()
                    assert got == scalar, f"{module.name}.{rule.name}: {form} differs for {task.key}"


# --- property: DoNotSchedule spread keeps every zone within maxSkew of the emptiest ---------------------
@st.composite
def spread_clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, int]:
    """Zoned nodes of assorted sizes and one app's replicas in single-pod-minimum jobs, all with the same
    DoNotSchedule zone constraint; nothing runs yet and nothing is discarded (minMember 1)."""
    zones = draw(st.integers(2, 3))
    nodes = [zoned(f"n{i}", f"z{i % zones}", cpu=draw(st.sampled_from([1000, 2000, 8000])))
             for i in range(draw(st.integers(zones, 6)))]
    skew = draw(st.integers(1, 2))
    relations = affinity.PodRelations(spread=(affinity.SpreadConstraint(
        skew, ZONE, selector=affinity.LabelSelector((("app", "web"),))),))
    pods, groups = [], []
    for g in range(draw(st.integers(1, 4))):
        groups.append(podgroup(f"g{g}"))
        pods += [labelled(pod(f"g{g}-{i}", f"g{g}"), "web", relations) for i in range(draw(st.integers(1, 5)))]
    return snapshot(nodes=nodes, pods=pods, podgroups=groups), skew


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=spread_clusters())
def test_a_spread_constraint_holds_among_the_pods_a_session_places(case: tuple[ClusterSnapshot, int]) -> None:
    """Each placement checks count + 1 - min <= maxSkew against the pods placed before it, and the
    minimum never falls while nothing is removed: so the session ends within maxSkew, zones left empty
    counting as 0 (kube's global minimum counts every eligible domain)."""
    snap, skew = case
    decisions = run_session(snap, _policy(None)).decisions
    zone_of = {n.name: n.labels[ZONE] for n in snap.nodes}
    counts = dict.fromkeys(zone_of.values(), 0)
    for node_name in decisions.binds.values():
        counts[zone_of[node_name]] += 1
    assert max(counts.values()) - min(counts.values()) <= skew, counts
