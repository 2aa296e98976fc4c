"""Invariants of the session's volume book (vpolicy.engine.volume_binding): NodeVolumeLimits counts each
volume once per node and never frees room by adding pods; delayed binding gives each PV to one claim."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, strategies as st

from vpolicy.engine.volume_binding import VolumeBook
from vpolicy.model import volumes

DRIVERS = ("ebs.csi.aws.com", "pd.csi.storage.gke.io")
volume = st.builds(volumes.AttachedVolume, st.sampled_from(DRIVERS), st.sampled_from([f"v{i}" for i in range(6)]))
pod_volumes = st.lists(volume, max_size=4).map(tuple)


def _task(uid: str, attachable: tuple[volumes.AttachedVolume, ...] = (),
          claims: tuple[volumes.PersistentVolumeClaim, ...] = ()) -> Any:
    return SimpleNamespace(uid=uid, key=f"ns/{uid}",
                           relations=SimpleNamespace(attachable=attachable, delayed_claims=claims))


def _node(name: str, tasks: list[Any]) -> Any:
    return SimpleNamespace(name=name, labels={"kubernetes.io/hostname": name}, tasks=tasks,
                           spec=SimpleNamespace(allocatable={}))


def _book(limit: int) -> VolumeBook:
    csi = volumes.CSINode("n1", limits={d: limit for d in DRIVERS}, drivers=DRIVERS)
    return VolumeBook([], {}, [csi], lambda terms, node: True)


@given(st.lists(pod_volumes, max_size=5), pod_volumes, st.integers(0, 6))
def test_a_pod_using_only_volumes_already_on_the_node_changes_nothing(on_node: list[Any], new: Any,
                                                                      limit: int) -> None:
    book = _book(limit)
    tasks = [_task(f"p{i}", v) for i, v in enumerate(on_node)]
    candidate = _task("new", new)
    before = book.limits_ok(candidate, _node("n1", tasks))
    sharing = _task("sharer", tuple(v for t in tasks for v in t.relations.attachable))
    assert book.limits_ok(candidate, _node("n1", [*tasks, sharing])) == before


@given(st.lists(pod_volumes, max_size=5), pod_volumes, pod_volumes, st.integers(0, 6))
def test_more_pods_on_a_node_never_make_room(on_node: list[Any], more: Any, new: Any, limit: int) -> None:
    """... unless they bring the candidate's own volumes, which are then attached already (kube counts
    only the candidate's volumes not yet on the node, so sharing one fits even at the limit)."""
    book = _book(limit)
    tasks = [_task(f"p{i}", v) for i, v in enumerate(on_node)]
    candidate = _task("new", new)
    others = _task("more", tuple(v for v in more if v not in new))
    if not book.limits_ok(candidate, _node("n1", tasks)):
        assert not book.limits_ok(candidate, _node("n1", [*tasks, others]))


@given(st.integers(0, 4), st.integers(1, 6))
def test_each_local_pv_goes_to_one_claim(pvs: int, claims: int) -> None:
    """With `pvs` local PVs on a node and a class that cannot provision, exactly min(pvs, claims) pods
    with one delayed claim each can be placed there one after another."""
    book = VolumeBook([volumes.PersistentVolume(f"pv{i}", storage_class="local", capacity=10, access_modes=("ReadWriteOnce",))
                       for i in range(pvs)],
                      {"local": volumes.StorageClass("local", volumes.WAIT_FOR_FIRST_CONSUMER,
                                                     provisioner=volumes.NO_PROVISIONER)},
                      [], lambda terms, node: True)
    node = _node("n1", [])
    placed = 0
    for i in range(claims):
        claim = volumes.PersistentVolumeClaim("ns", f"c{i}", storage_class="local", request=1,
                                              access_modes=("ReadWriteOnce",))
        task = _task(f"p{i}", claims=(claim,))
        if book.binding_ok(task, node):
            book.moved(task, node, 1)
            placed += 1
    assert placed == min(pvs, claims)
    chosen = book.bindings({f"ns/p{i}": "n1" for i in range(claims)})
    assert sorted(pv for pods in chosen.values() for pv in pods.values()) == sorted(f"pv{i}" for i in range(placed))
