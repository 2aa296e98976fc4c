"""`verify_canon`: the canonical worlds stand for exactly the worlds of the space, every world maps to
one of them, and a world decides what its representative decides (so a search over the canonical
worlds is a search over all of them)."""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vpolicy.harness import verify, verify_canon, verify_props, verify_worlds
from vpolicy.model import snapshot as snap

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_POLICY = str(ROOT / "policies" / "default.vpol")
HELM_CONF = str(ROOT / "examples" / "volcano-scheduler.conf")
TREE_POLICY = str(Path(__file__).resolve().parent / "data" / "hierarchy-capacity.conf")

TARGETS = [pytest.param(DEFAULT_POLICY, id="default-policy"), pytest.param(HELM_CONF, id="helm-conf"),
           pytest.param(None, id="volcano-builtin")]


def blind_of(file: str | None) -> tuple[Any, verify_canon.Blind]:
    policy, _declared, terms = verify._load(file)
    return policy, verify_canon.blind_spots(policy, terms)


@pytest.mark.parametrize("file", TARGETS)
def test_canonical_worlds_stand_for_every_world_of_bound_1_exactly(file: str | None) -> None:
    _policy, blind = blind_of(file)
    canon = {verify_canon.key(verify_worlds.build(w.spec), blind): w.weight for w in verify_canon.worlds(1, blind)}
    naive = Counter(verify_canon.key(verify_worlds.build(spec), blind) for spec in verify_worlds._all(1))
    assert len(canon) == verify_canon.count(1, blind)  # no two canonical worlds are one class
    assert canon == dict(naive)


@pytest.mark.parametrize("file", TARGETS)
def test_canonical_weights_add_up_to_the_bound_2_space(file: str | None) -> None:
    _policy, blind = blind_of(file)
    worlds = list(verify_canon.worlds(2, blind))
    assert len(worlds) == verify_canon.count(2, blind)
    assert sum(w.weight for w in worlds) == verify_worlds.space(2) == 1_704_100


@pytest.mark.parametrize("file", TARGETS)
def test_every_bound_2_world_drawn_maps_to_an_enumerated_world(file: str | None) -> None:
    """A world's class, read from the built cluster, is one the enumeration runs (checked here for drawn
    worlds; for all 1.7 million, with their shares, by test_every_bound_2_world_maps_to_its_share)."""
    _policy, blind = blind_of(file)
    specs, _ = verify_worlds.worlds(2, 3000, seed=5)
    for spec in specs:
        assert verify_canon.representative(2, blind, verify_canon.key(verify_worlds.build(spec), blind)), spec


@pytest.mark.slow
@pytest.mark.parametrize("file", TARGETS)
def test_every_bound_2_world_maps_to_its_share(file: str | None) -> None:
    """All 1,704,100 worlds of bound 2: each class is enumerated once and its weight is its number of worlds."""
    _policy, blind = blind_of(file)
    naive = Counter(verify_canon.key(verify_worlds.build(spec), blind) for spec in verify_worlds._all(2))
    canon = {verify_canon.key(verify_worlds.build(w.spec), blind): w.weight for w in verify_canon.worlds(2, blind)}
    assert canon == dict(naive)


@pytest.mark.parametrize("file", [pytest.param(DEFAULT_POLICY, id="default-policy"),
                                  pytest.param(HELM_CONF, id="helm-conf")])
def test_a_world_decides_what_its_representative_decides(file: str) -> None:
    """Equivariance of the merges: decisions and verdicts of a world equal its representative's once its
    jobs are renamed; most worlds drawn relabel jobs or drop a queue without jobs."""
    policy, blind = blind_of(file)
    rng = random.Random(11)
    drawn, _ = verify_worlds.worlds(2, 400, seed=3)
    specs = [s for s in drawn if (len(s.jobs) == 2 and s.jobs[0].queue > s.jobs[1].queue)
             or (len(s.queues) == 2 and len({j.queue for j in s.jobs}) == 1)][:60]
    specs += rng.sample(list(verify_worlds.worlds(2, 100, seed=4)[0]), 20)
    assert len(specs) >= 50
    for spec in specs:
        world = verify_worlds.build(spec)
        rep = verify_canon.representative(2, blind, verify_canon.key(world, blind))
        assert rep is not None
        assert _decided(world, policy, blind) == _decided(verify_worlds.build(rep), policy, blind), (spec, rep)


def test_mirror_worlds_are_not_merged_because_node_order_breaks_ties() -> None:
    """Two 1-cpu nodes, one pending 1-cpu pod: the engine binds to the first node, so the worlds with a
    running pod on n0 or on n1 decide differently; both stay in the enumeration."""
    _policy, blind = blind_of(DEFAULT_POLICY)
    pending = verify_worlds.JobSpec(0, False, 0, verify_worlds.INQUEUE)
    a = verify_worlds.Spec((2, 2), (("plain", False),), (verify_worlds.JobSpec(0, False, 0, verify_worlds.RUNNING, 0),
                                                          pending))
    b = verify_worlds.Spec((2, 2), (("plain", False),), (verify_worlds.JobSpec(0, False, 0, verify_worlds.RUNNING, 1),
                                                          pending))
    assert verify_canon.key(verify_worlds.build(a), blind) != verify_canon.key(verify_worlds.build(b), blind)


@pytest.mark.parametrize("file, expected", [
    # proportion holds back the guarantee of every queue, one without jobs too: such a queue is seen
    pytest.param(DEFAULT_POLICY, {"hierarchy": True, "reclaimable": False, "weight": False, "empty_queues": False,
                                  "empty_queue_guarantees": True, "cross_queue_order": True}, id="default-policy"),
    pytest.param(HELM_CONF, {"hierarchy": True, "reclaimable": True, "weight": False, "empty_queues": False,
                             "empty_queue_guarantees": True, "cross_queue_order": True},
                 id="helm-conf-runs-no-reclaim"),
    pytest.param(TREE_POLICY, {"hierarchy": False, "empty_queues": False, "cross_queue_order": False},
                 id="hierarchical-capacity-sees-the-tree"),
])
def test_blind_spots_are_read_from_the_compiled_terms(file: str, expected: dict[str, bool]) -> None:
    _policy, blind = blind_of(file)
    assert {k: getattr(blind, k) for k in expected} == expected


def _decided(world: snap.ClusterSnapshot, policy: Any, blind: verify_canon.Blind) -> tuple[object, ...]:
    """The session's decisions with jobs named by their place in the class, and every property's verdict."""
    index = {key: i for i, key in enumerate(verify_canon.job_order(world, blind))}
    pods = {p.key: p for p in world.pods}
    nodes = {n.name: i for i, n in enumerate(world.nodes)}

    def pod(key: str) -> tuple[int, str]:
        p = pods[key]
        return index[f"{p.namespace}/{p.group}"], p.name.rsplit("-", 1)[1]
    observed = verify._observe(world, policy, 0.0)
    doc = observed.doc
    return (sorted((pod(k), nodes[v]) for k, v in doc["binds"].items()),
            sorted((pod(k), nodes[v]) for k, v in doc["pipelined"].items()),
            sorted((pod(e["pod"]), e["action"], index[e["for"]]) for e in doc["evictions"]),
            sorted((index[k], v["phase"]) for k, v in doc["podgroups"].items()),
            sorted(pod(k) for k in doc["unschedulable"]),
            tuple(bool(verify_props.builtin_check(name)(observed)) for name in verify_props.BUILTIN))
