"""numa-aware's CPU placement (vpolicy.compile.numa) against Volcano's own unit tests, and Numatopology
objects and pod QoS as the loader reads them."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from vpolicy.compile import numa
from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster
from vpolicy.load.objects import snapshot_from_objects
from vpolicy.model.numa import CpuInfo, NumaTopology, format_cpuset, parse_cpuset

# cpu_mng_test.go's numaInfo: CPUs 0-3 on NUMA node 0 / socket 0, 4-7 on NUMA 1 / socket 1, two per core
CPUS = {i: CpuInfo(numa=i // 4, socket=i // 4, core=i // 2) for i in range(8)}
LAYOUT = numa.Layout(NumaTopology(name="n", cpus=CPUS))


@pytest.mark.parametrize(("request_", "free", "expected"), [
    pytest.param(4, "0-7", [({0}, True), ({1}, True), ({0, 1}, False)], id="test-1"),
    pytest.param(4, "1-7", [({1}, True), ({0, 1}, False)], id="test-2"),
    pytest.param(5, "0-7", [({0, 1}, True)], id="test-3"),
    pytest.param(8, "0-7", [({0, 1}, True)], id="test-4"),
    pytest.param(9, "0-7", [], id="test-5"),
    pytest.param(4, "2-5", [({0, 1}, False)], id="test-6"),
])
def test_cpu_hints_are_volcanos(request_: int, free: str, expected: list[tuple[set[int], bool]]) -> None:
    """cpu_mng_test.go Test_GetTopologyHints."""
    hints = numa.cpu_hints(LAYOUT, parse_cpuset(free), request_)
    assert [(set(mask or ()), preferred) for mask, preferred in hints] == expected


@pytest.mark.parametrize(("request_", "free", "hint", "expected"), [
    pytest.param(4, "0-7", {0}, "0-3", id="test-1"),
    pytest.param(4, "1-7", {1}, "4-7", id="test-2"),
    pytest.param(5, "0-7", {0, 1}, "0-4", id="test-3"),
    pytest.param(5, "1-7", {0, 1}, "1,4-7", id="test-4"),
    pytest.param(8, "1-7", {0, 1}, "", id="test-5"),
])
def test_cpus_taken_are_volcanos(request_: int, free: str, hint: set[int], expected: str) -> None:
    """cpu_mng_test.go Test_Allocate: a whole free socket first, then single CPUs on fuller cores."""
    got = numa.allocate_cpus(LAYOUT, parse_cpuset(free), request_, frozenset(hint))
    assert format_cpuset(set(got)) == expected


@pytest.mark.parametrize(("policy", "hints", "best", "admitted"), [
    # one preferred single-node hint wins over a preferred wider one and over non-preferred ones
    ("single-numa-node", [({0}, True), ({1}, True), ({0, 1}, False)], {0}, True),
    ("restricted", [({1}, True), ({0, 1}, False)], {1}, True),
    # only a non-preferred hint: single-numa-node and restricted refuse, best-effort admits it
    ("single-numa-node", [({0, 1}, False)], {0, 1}, False),
    ("restricted", [({0, 1}, False)], {0, 1}, False),
    ("best-effort", [({0, 1}, False)], {0, 1}, True),
    # no possible hint: the any-node hint, not preferred
    ("restricted", [], {0, 1}, False),
    ("best-effort", [], {0, 1}, True),
    # single-numa-node drops the preferred two-node hint (no NUMA node has 5 CPUs)
    ("single-numa-node", [({0, 1}, True)], {0, 1}, False),
    ("restricted", [({0, 1}, True)], {0, 1}, True),
])
def test_policies_merge_hints_as_volcanos(policy: str, hints: list[tuple[set[int], bool]], best: set[int],
                                           admitted: bool) -> None:
    """policy_*_test.go: the best hint and the admission of each topology manager policy."""
    (mask, _), admit = numa.merge_hints(policy, (0, 1), [[(frozenset(m), p) for m, p in hints]])
    assert (set(mask or ()), admit) == (best, admitted)


def test_policy_none_and_a_container_without_preference_admit_without_a_hint() -> None:
    assert numa.merge_hints("none", (0, 1), [[(frozenset({0, 1}), False)]]) == ((None, True), True)
    (mask, preferred), admit = numa.merge_hints("single-numa-node", (0, 1), [None])
    assert (set(mask or ()), preferred, admit) == ({0, 1}, True, True)


def test_reserved_cpus_are_taken_by_topology_and_rounded_up() -> None:
    layout = numa.Layout(NumaTopology(name="n", cpus=CPUS, reserved_cpu=1500))
    assert layout.reserved == frozenset({0, 1})  # 2 CPUs: one whole core, the first


@given(st.sets(st.integers(0, 7)), st.integers(0, 9))
def test_take_by_topology_takes_exactly_what_is_asked_from_what_is_free(free: set[int], count: int) -> None:
    got = numa.take_by_topology(LAYOUT, frozenset(free), count)
    if count > len(free):
        assert got is None
    else:
        assert got is not None and len(got) == max(count, 0) and got <= free


def test_cpuset_texts_round_trip_and_bad_ones_say_why() -> None:
    assert parse_cpuset("0-3,7, 9-10") == frozenset({0, 1, 2, 3, 7, 9, 10})
    assert format_cpuset({0, 1, 2, 3, 7, 9, 10}) == "0-3,7,9-10"
    assert parse_cpuset("") == frozenset()
    with pytest.raises(ValueError, match="backwards"):
        parse_cpuset("5-2")
    with pytest.raises(ValueError, match="not a CPU id"):
        parse_cpuset("a")


TOPO = {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology", "metadata": {"name": "n1"},
        "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
                 "resReserved": {"cpu": "1", "memory": "1Gi"},
                 "numares": {"cpu": {"allocatable": "1-3", "capacity": 4}},
                 "cpuDetail": {str(i): {"numa": i // 2, "socket": 0, "core": i} for i in range(4)}}}


def test_live_numatopologies_reach_the_snapshot() -> None:
    (topo,) = snapshot_from_objects([TOPO]).numatopologies
    assert (topo.name, topo.cpu_manager_policy, topo.topology_manager_policy) == ("n1", "static", "single-numa-node")
    assert (topo.reserved_cpu, topo.allocatable["cpu"], topo.numa_nodes) == (1000, frozenset({1, 2, 3}), (0, 1))


def test_a_bad_cpuset_in_a_dump_is_a_located_error(tmp_path: Path) -> None:
    dump = tmp_path / "numa.yaml"
    dump.write_text("apiVersion: nodeinfo.volcano.sh/v1alpha1\nkind: Numatopology\nmetadata: {name: n1}\n"
                    "spec:\n  numares:\n    cpu: {allocatable: '0-x'}\n")
    with pytest.raises(PolicyError) as caught:
        load_cluster([dump])
    (diag,) = caught.value.diagnostics
    assert diag.span is not None and (diag.span.file, diag.span.line) == (str(dump), 6)
    assert "not a cpuset" in diag.message


def _pod(name: str, resources: dict[str, dict[str, str]], qos: str = "") -> dict[str, object]:
    status: dict[str, str] = {"phase": "Pending"}
    if qos:
        status["qosClass"] = qos
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": resources}]}, "status": status}


def test_pod_qos_and_whole_cpus_are_read_as_the_kubelet_computes_them() -> None:
    snap = snapshot_from_objects([
        _pod("limits-only", {"limits": {"cpu": "2", "memory": "1Gi"}}),
        _pod("equal", {"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}),
        _pod("no-memory-limit", {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}),
        _pod("request-below", {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}),
        _pod("written", {"requests": {"cpu": "1"}}, qos="Guaranteed"),
    ])
    pods = {p.name: p for p in snap.pods}
    assert {n: p.guaranteed for n, p in pods.items()} == {
        "limits-only": True, "equal": True, "no-memory-limit": False, "request-below": False, "written": True}
    assert pods["limits-only"].container_cpus == (("c", 2),)
    assert pods["equal"].container_cpus == (("c", 0),)  # a fraction is not pinned
    assert pods["request-below"].container_cpus == ()  # not Guaranteed: the kubelet pins none of its CPUs
    assert pods["written"].container_cpus == (("c", 1),)  # Guaranteed as the kubelet wrote it


def test_a_vcjob_tasks_topology_policy_becomes_its_pods_annotation() -> None:
    """The job controller writes a task's topologyPolicy as volcano.sh/numa-topology-policy on its pods."""
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
           "spec": {"minAvailable": 1, "tasks": [
               {"name": "w", "replicas": 1, "topologyPolicy": "single-numa-node",
                "template": {"spec": {"containers": [{"name": "c", "resources": {
                    "limits": {"cpu": "2", "memory": "1Gi"}}}]}}}]}}
    snap = snapshot_from_objects([job])
    (pod,) = [*snap.pods, *snap.deferred_pods]
    assert pod.annotations["volcano.sh/numa-topology-policy"] == "single-numa-node"
    assert (pod.guaranteed, pod.container_cpus) == (True, (("c", 2),))


def test_the_batched_forms_answer_as_the_scalar_ones_node_by_node() -> None:
    """The vectoriser's forms (a batch's node.numa column, None where a node has no Numatopology)."""
    import numpy as np
    from types import SimpleNamespace

    from vpolicy.engine.numa import NodeNuma

    def topo(name: str, free: str, policy: str) -> NumaTopology:
        return NumaTopology(name=name, policies={"CPUManagerPolicy": "static", "TopologyManagerPolicy": policy},
                            allocatable={"cpu": parse_cpuset(free)}, cpus=CPUS)

    for written in ({}, {"volcano.sh/numa-topology-policy": "single-numa-node"}):
        sources = np.empty(4, dtype=object)
        sources[:] = [NodeNuma("a", topo("a", "2-5", "single-numa-node")), None,
                      NodeNuma("c", topo("c", "0-7", "single-numa-node")), NodeNuma("d", topo("d", "0-7", "none"))]
        pod = SimpleNamespace(annotations=written, container_cpus=(("c", 4),), container_gpus=(), guaranteed=True)
        task = SimpleNamespace(uid="u", name="t", pod=pod)
        for name, batched in numa.VECTOR_FUNCTIONS.items():
            scalar = numa.FUNCTIONS[name]
            assert list(batched(task, sources)) == [scalar(task, s) for s in sources], name


# GPUs and the hold across sessions ----------------------------------------------------------------------
GPU_SCENARIO = Path(__file__).resolve().parents[2] / "policies" / "tests" / "numa-aware" / \
    "gpus-taken-in-the-session-are-not-free-again.yaml"


def test_gpu_hints_are_gpumanagers() -> None:
    """gpu_mng: masks whose free GPUs cover the request, preferred when of the fewest nodes that do."""
    layout = numa.Layout(NumaTopology(name="n", cpus=CPUS, gpus={0: 0, 1: 0, 2: 1, 3: 1}))
    assert numa.gpu_hints(layout, frozenset({0, 1, 2, 3}), 2) == [
        (frozenset({0}), True), (frozenset({1}), True), (frozenset({0, 1}), False)]
    assert numa.gpu_hints(layout, frozenset({0, 2}), 2) == [(frozenset({0, 1}), True)]
    assert numa.gpu_hints(layout, frozenset({0}), 2) == []
    assert numa.allocate_gpus(layout, frozenset({0, 1, 2, 3}), 2, frozenset({1})) == {2, 3}
    assert numa.allocate_gpus(layout, frozenset({0, 2, 3}), 2, frozenset({0})) == {0, 2}  # then the lowest


def _after_first_session(holds: bool, **topology_changes: object) -> tuple[list[str], list[str]]:
    """Session 1 places g1 and g2 (each takes one NUMA node's two GPUs); session 2 sees them running, with
    the Numatopology as `topology_changes` leave it, and the first session's holds if `holds`: which of
    g3 and a new g4 (2 GPUs each, single-numa-node) bind, and which stay pending."""
    import dataclasses

    from vpolicy.engine.session import run_session
    from vpolicy.harness.scenario import load_scenario
    from vpolicy.model.snapshot import TaskStatus

    loaded = load_scenario(GPU_SCENARIO)
    first = run_session(loaded.cluster, loaded.policy).decisions
    assert sorted(first.binds) == ["ns1/g1", "ns1/g2"]
    assert {h.key: h.gpus for h in first.numa_holds} == {"ns1/g1": {0, 1}, "ns1/g2": {2, 3}}
    snap = loaded.cluster
    pods = tuple(dataclasses.replace(p, status=TaskStatus.RUNNING, node_name="n1", phase="Running")
                 if p.key in first.binds else p for p in snap.pods)
    g4 = dataclasses.replace(next(p for p in pods if p.name == "g3"), name="g4", uid="ns1/g4", group="g3")
    topologies = tuple(dataclasses.replace(t, **topology_changes) for t in snap.numatopologies)  # type: ignore[arg-type]
    second = dataclasses.replace(snap, pods=(*pods, g4), numatopologies=topologies,
                                 numa_holds=first.numa_holds if holds else ())
    decided = run_session(second, loaded.policy).decisions
    return sorted(decided.binds), sorted(decided.unschedulable)


def test_gpus_given_in_an_earlier_session_stay_held_until_the_numatopology_shows_them() -> None:
    """Volcano's OnSessionClose keeps the sets it gave in its cache (UpdateSchedulerNumaInfo) until the
    node's Numatopology is updated: a scheduler that forgot them would give g1's and g2's GPUs again."""
    assert _after_first_session(holds=True) == ([], ["ns1/g3", "ns1/g4"])
    assert _after_first_session(holds=False) == (["ns1/g3", "ns1/g4"], [])  # what the hold prevents
    # the exporter wrote the Numatopology again (a new resourceVersion): its sets now decide alone
    assert _after_first_session(holds=True, version="2")[0] == ["ns1/g3", "ns1/g4"]
    # a newer exporter lists the pods whose resources the kubelet assigned: their holds are dropped
    assert _after_first_session(holds=True, assigned_pods=frozenset({"ns1/g1", "ns1/g2"}))[0] == [
        "ns1/g3", "ns1/g4"]


def test_gpu_detail_and_pod_allocations_are_read() -> None:
    topo_obj = {**TOPO, "metadata": {"name": "n1", "resourceVersion": "7"},
                "spec": {**TOPO["spec"],  # type: ignore[dict-item]
                         "numares": {"cpu": {"allocatable": "1-3"}, "nvidia.com/gpu": {"allocatable": "0-1"}},
                         "gpuDetail": {"0": {"numa": 0}, "1": {"numa": 1}},
                         "podAllocations": [{"uid": "u1", "name": "p", "namespace": "ns"}]}}
    (topo,) = snapshot_from_objects([topo_obj]).numatopologies
    assert (topo.gpus, topo.allocatable["nvidia.com/gpu"]) == ({0: 0, 1: 1}, frozenset({0, 1}))
    assert (topo.assigned_pods, topo.version) == (frozenset({"u1", "ns/p"}), "7")
    bad = {**topo_obj, "spec": {**topo_obj["spec"], "numares": {"nvidia.com/gpu": {"allocatable": "0-2"}}}}
    with pytest.raises(PolicyError) as caught:
        snapshot_from_objects([bad])
    assert "GPUs 2 are not in spec.gpuDetail" in caught.value.diagnostics[0].message
