"""Tasks alike but for their images share one class view (`engine.placement._ClassView.tail`).

nodeorder's image locality reads the task's images; a realistic dump's pods have hundreds of image sets,
and a class view per image set cost the M dump 1,072 views instead of a dozen. The view now keeps the
score rules before image locality summed per node and adds the task's own image score, then the rules
after it (binpack's usage score), in the rules' order when a node is chosen. These tests hold that to
the plain path, where every score rule is asked on every candidate node and summed in order: the same
node scores bit for bit, and the same decisions from a whole session, in both modes.
"""
from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.build import GIB, NS, node, podgroup, resources, snapshot
from vpolicy.engine import placement, pod_relations
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.engine.state import SessionState
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import helm_default_conf_text, parse_conf_text
from vpolicy.model import affinity
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod, TaskStatus

MIB = 1024 * 1024
# image name -> size: some below kube's 23 MiB floor, some near its 1000 MiB per-container ceiling
IMAGES = {"app:v1": 40 * MIB, "app:v2": 300 * MIB, "base:v1": 900 * MIB, "tiny:v1": 5 * MIB,
          "ml:v3": 2000 * MIB, "side:v1": 120 * MIB}


@cache
def _policy() -> CompiledPolicy:
    """Volcano's Helm conf (the dumps' benchmark conf): nodeorder, image locality among its scores, then
    binpack, whose usage score comes after image locality and is not a whole number."""
    return from_conf(parse_conf_text(helm_default_conf_text(), file="<helm-conf>"))


@st.composite
def imaged_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """Nodes of assorted sizes holding assorted images; pending pods of assorted requests asking for
    assorted image lists (a few of the same request, so classes alike but for images exist), and
    some pods already running so that usage scores differ from node to node."""
    names = sorted(IMAGES)
    nodes = []
    for i in range(draw(st.integers(2, 12))):
        held = draw(st.sets(st.sampled_from(names), max_size=5))
        # sizes whose fractions are not binary ones (1/3, 1/12...): a sum in another order would differ
        base = node(f"n{i}", cpu=draw(st.sampled_from([3000, 7000, 12000])), memory=draw(st.sampled_from([6, 20])) * GIB,
                    pods=20)
        nodes.append(Node(base.name, base.allocatable, labels={affinity.HOSTNAME_KEY: base.name},
                          images=tuple(((name,), IMAGES[name]) for name in sorted(held))))
    image_lists = st.lists(st.sampled_from([*names, "absent:v1"]), max_size=3, unique=True).map(tuple)
    pods: list[Pod] = []
    groups = []
    for g in range(draw(st.integers(1, 5))):
        groups.append(podgroup(f"g{g}", min_member=1))
        for i in range(draw(st.integers(1, 6))):
            cpu = draw(st.sampled_from([250, 500, 1000, 1500]))
            memory = draw(st.sampled_from([1, 2, 3])) * GIB // 2
            on = draw(st.sampled_from(["", "", *[n.name for n in nodes]]))
            relations = affinity.PodRelations(images=draw(image_lists))
            pods.append(Pod(NS, f"g{g}-{i}", f"uid-g{g}-{i}", resources(cpu, memory, pods=1),
                            TaskStatus.RUNNING if on else TaskStatus.PENDING, node_name=on, group=f"g{g}",
                            relations=relations))
    return snapshot(nodes=nodes, pods=pods, podgroups=groups)


def _document(snap: ClusterSnapshot, mode: str) -> dict[str, Any]:
    document = run_session(snap, _policy(), mode=mode).decisions.to_document()
    document.pop("stats")
    return document


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(snap=imaged_clusters(), mode=st.sampled_from(["volcano", "optimize"]))
def test_views_shared_across_image_sets_decide_as_scoring_every_candidate(
        monkeypatch: pytest.MonkeyPatch, snap: ClusterSnapshot, mode: str) -> None:
    shared = _document(snap, mode)
    with monkeypatch.context() as m:
        # no cached class scores: every score rule asked on every candidate node and summed in order
        m.setattr(placement.Placement, "_score_parts", lambda self, task: (None, [], []))
        plain = _document(snap, mode)
    assert shared == plain


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(snap=imaged_clusters())
def test_image_scores_let_go_and_computed_again_decide_the_same(monkeypatch: pytest.MonkeyPatch,
                                                                 snap: ClusterSnapshot) -> None:
    """The per-image-set answers are kept for the latest sets only (memory at L); one set at a time
    kept, every other task's are computed again, and nothing changes."""
    kept = _document(snap, "volcano")
    with monkeypatch.context() as m:
        m.setattr(placement, "_OWN_SCORES_KEPT", 1)
        m.setattr(pod_relations, "_IMAGE_SUMS_KEPT", 1)
        assert _document(snap, "volcano") == kept


@settings(max_examples=25, deadline=None)
@given(snap=imaged_clusters(), mode=st.sampled_from(["volcano", "optimize"]))
def test_pods_related_by_images_alone_decide_as_with_pods_counted(snap: ClusterSnapshot, mode: str) -> None:
    """Pods whose only relations are their images leave the pod index nothing to count (`PodIndex.counting`
    false: no query, no count moved per placement). A pod of no job with a host port, on no node, makes
    it count every pod as usual and changes nothing else: the same decisions."""
    other = Pod(NS, "other", "uid-other", resources(100, GIB, pods=1), TaskStatus.PENDING,
                relations=affinity.PodRelations(host_ports=(affinity.HostPort("", "TCP", 8080),)))
    assert not pod_relations.PodIndex(SessionState(snap)).counting
    counted = dataclasses.replace(snap, pods=(*snap.pods, other))
    assert pod_relations.PodIndex(SessionState(counted)).counting
    assert _document(snap, mode) == _document(counted, mode)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=imaged_clusters(), placed=st.lists(st.integers(0, 99), max_size=6))
def test_a_views_scores_are_the_plain_sum_bit_for_bit_as_nodes_fill(snap: ClusterSnapshot, placed: list[int]) -> None:
    """Every pending task's scores from its (shared) view equal the rules summed in order over all
    nodes, exactly as floats, before and after tasks are placed (the usage scores after image locality
    are kept per node in the view and follow the node change log)."""
    state = SessionState(snap)
    rt = Runtime(_policy().tiers, state)
    place = placement.Placement(rt, state)
    rows = np.arange(len(place.node_list))
    pending = [t for t in state.tasks.values() if not t.node_name]

    def check() -> None:
        for task in pending:
            view = place._view(task)
            assert view.total is not None
            assert place._view_scores(view, task, rows).tolist() == place._scores_rows(task, rows).tolist(), task.key

    check()
    for k in placed:
        task = pending[k % len(pending)] if pending else None
        if task is None or task.node_name:
            continue
        found = place.feasible_rows(task, placement.FitErrors())
        if len(found):
            state.set_status(task, TaskStatus.ALLOCATED, place.best_row(task, found)[0].name)
            check()


def test_tasks_alike_but_for_their_images_share_one_class_view() -> None:
    nodes = [Node(f"n{i}", node(f"n{i}").allocatable, images=(((f"img{i}:v1",), 500 * MIB),)) for i in range(3)]
    pods = [Pod(NS, f"p{i}", f"uid-p{i}", resources(500, GIB, pods=1), TaskStatus.PENDING, group="g",
                relations=affinity.PodRelations(images=(f"img{i}:v1",))) for i in range(3)]
    state = SessionState(snapshot(nodes=nodes, pods=pods, podgroups=[podgroup("g")]))
    place = placement.Placement(Runtime(_policy().tiers, state), state)
    views = {id(place._view(t)) for t in state.tasks.values()}
    assert len(views) == 1
    # each task still prefers the node holding its own image
    for i in range(3):
        task = state.tasks[f"uid-p{i}"]
        assert place.best_row(task, np.arange(3))[0].name == f"n{i}"
