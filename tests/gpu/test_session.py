"""deviceshare in whole sessions: the decision's pod annotations, card usage across placements, and
eviction or discard giving cards back (DESIGN §4, reference §10, kubernetes-and-gpu.md §8.3)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gpu.test_protocol import FORMATS
from vpolicy.engine.session import SessionResult, run_session
from vpolicy.harness import policy as policies
from vpolicy.load import conf as conf_loader
from vpolicy.load.cluster import load_cluster
from vpolicy.model import gpu

A100 = "NVIDIA-NVIDIA A100-SXM4-40GB"
H200 = "NVIDIA-NVIDIA H200"
NOW = 1767225600.75


def conf(*, policy: str = "binpack", enable: bool = True, actions: str = "enqueue, allocate, backfill") -> str:
    return f"""actions: "{actions}"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: {str(enable).lower()}
      deviceshare.SchedulePolicy: {policy}
      deviceshare.ScheduleWeight: 10
"""


def node(name: str, register: str, layout: str = "") -> str:
    extra = f'\n    volcano.sh/node-mig-layout: "{layout}"' if layout else ""
    return f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations:
    volcano.sh/node-vgpu-register: "{register}"{extra}
status:
  allocatable: {{cpu: "64", memory: 512Gi, pods: "110", volcano.sh/vgpu-number: "80", volcano.sh/vgpu-memory: "2000000", volcano.sh/vgpu-cores: "800"}}
"""


def group(name: str, min_member: int = 1, priority_class: str = "", phase: str = "Inqueue") -> str:
    pc = f", priorityClassName: {priority_class}" if priority_class else ""
    return f"""---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: ns1}}
spec: {{minMember: {min_member}{pc}}}
status: {{phase: {phase}}}
"""


def pod(name: str, pg: str, limits: str, *, node_name: str = "", ids: str = "", priority: int | None = None,
        annotations: str = "") -> str:
    ann = f"scheduling.k8s.io/group-name: {pg}" + (f', volcano.sh/vgpu-ids-new: "{ids}"' if ids else "")
    ann += f", {annotations}" if annotations else ""
    placed = f"\n  nodeName: {node_name}" if node_name else ""
    prio = f"\n  priority: {priority}" if priority is not None else ""
    status = "\nstatus: {phase: Running}" if node_name else ""
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ns1, annotations: {{{ann}}}}}
spec:
  schedulerName: volcano{placed}{prio}
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, limits: {limits}}}}}]{status}
"""


def session(tmp_path: Path, cluster: str, conf_text: str) -> SessionResult:
    (tmp_path / "cluster.yaml").write_text(cluster.lstrip("-\n"), encoding="utf-8")
    (tmp_path / "conf.yaml").write_text(conf_text, encoding="utf-8")
    snapshot = load_cluster(tmp_path / "cluster.yaml")
    compiled = policies.from_conf(conf_loader.load_conf(tmp_path / "conf.yaml"))
    return run_session(snapshot, compiled, now=NOW)


def assert_protocol_formats(annotations: dict[str, dict[str, str]]) -> None:
    for pod_key, values in annotations.items():
        for key in gpu.SCHEDULER_ANNOTATIONS:
            assert re.fullmatch(FORMATS[key], values[key]), (pod_key, key, values[key])


def test_a_bound_pod_gets_the_protocol_annotations_with_the_session_clock(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:GPU-a1,10,40000,{A100},true,hami-core:")
               + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 3000, "
                                            "volcano.sh/vgpu-cores: 25}"))
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == {"ns1/w-w-0": "n1"}
    assert result.decisions.annotations == {"ns1/w-w-0": {
        "volcano.sh/vgpu-node": "n1", "volcano.sh/vgpu-time": "1767225600", "volcano.sh/bind-time": "1767225600",
        "volcano.sh/bind-phase": "allocating",
        "volcano.sh/vgpu-ids-new": "GPU-a1,NVIDIA,3000,25:GPU-a0,NVIDIA,3000,25:",
        "volcano.sh/devices-to-allocate": "GPU-a1,NVIDIA,3000,25:GPU-a0,NVIDIA,3000,25:"}}
    assert_protocol_formats(result.decisions.annotations)
    assert result.decisions.to_document()["annotations"] == result.decisions.annotations


def test_later_placements_see_earlier_ones_cards(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:GPU-a1,10,40000,{A100},true,hami-core:")
               + group("w") + "".join(pod(f"w-w-{i}", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 15000}")
                                      for i in range(4)))
    result = session(tmp_path, cluster, conf(policy="binpack"))
    ids = {k: v[gpu.IDS_NEW] for k, v in result.decisions.annotations.items()}
    # binpack fills the most used card first: two pods on GPU-a1, then two on GPU-a0
    assert sorted(ids.values()) == ["GPU-a0,NVIDIA,15000,0:"] * 2 + ["GPU-a1,NVIDIA,15000,0:"] * 2
    (cards,) = result.state.devices.nodes.values()
    assert sorted((s.card.uuid, s.used_num, s.used_memory) for s in cards.states()) == [
        ("GPU-a0", 2, 30000), ("GPU-a1", 2, 30000)]


def test_spread_puts_the_second_pod_on_the_other_card(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:GPU-a1,10,40000,{A100},true,hami-core:")
               + group("w") + "".join(pod(f"w-w-{i}", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000}")
                                      for i in range(2)))
    result = session(tmp_path, cluster, conf(policy="spread"))
    assert {v[gpu.IDS_NEW] for v in result.decisions.annotations.values()} == {
        "GPU-a0,NVIDIA,1000,0:", "GPU-a1,NVIDIA,1000,0:"}


def test_a_discarded_gang_gives_its_cards_back(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:") + group("g", 3)
               + "".join(pod(f"g-g-{i}", "g", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 15000}")
                         for i in range(3)))
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == {} and result.decisions.annotations == {}
    (cards,) = result.state.devices.nodes.values()
    assert [(s.used_num, s.used_memory) for s in cards.states()] == [(0, 0)]
    assert result.state.devices.holdings == {}


def test_without_vgpu_enable_no_cards_are_assigned(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:") + group("w")
               + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000}"))
    result = session(tmp_path, cluster, conf(enable=False))
    assert result.decisions.binds == {"ns1/w-w-0": "n1"} and result.decisions.annotations == {}


def test_mig_binds_name_their_instances(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-m0,7,143771,{H200},true,mig:", "GPU-m0,3g.71gb*2:") + group("m")
               + pod("m-m-0", "m", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 40000}")
               + pod("m-m-1", "m", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 40000}"))
    result = session(tmp_path, cluster, conf(policy=""))
    model = gpu.mig_model_for(H200)
    assert model is not None
    group_index = model.geometry_of("3g.71gb*2")
    annotations = result.decisions.annotations
    assert {a[gpu.IDS_NEW] for a in annotations.values()} == {
        f"GPU-m0[{group_index}-0],NVIDIA,67710,0:", f"GPU-m0[{group_index}-1],NVIDIA,67710,0:"}
    placements = sorted((m.profile, m.start, m.size) for a in annotations.values()
                        for m in gpu.decode_mig_allocations(a[gpu.MIG_ALLOCATIONS]))
    assert placements == [("3g.71gb", 0, 4), ("3g.71gb", 4, 4)]
    assert_protocol_formats(annotations)


PRIORITIES = """---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def test_an_eviction_frees_the_victims_cards_for_the_preemptor(tmp_path: Path) -> None:
    cluster = (PRIORITIES + node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:")
               + group("low", priority_class="low", phase="Running")
               + pod("low-p-0", "low", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 30000}", node_name="n1",
                     ids="GPU-a0,NVIDIA,30000,0:", priority=10)
               + group("pre", priority_class="high")
               + pod("pre-p-0", "pre", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 20000}", priority=1000))
    result = session(tmp_path, cluster, conf(actions="enqueue, allocate, preempt"))
    assert [e.pod for e in result.decisions.evictions] == ["ns1/low-p-0"]
    assert result.decisions.pipelined == {"ns1/pre-p-0": "n1"}
    assert result.decisions.annotations == {}  # pipelined, not bound: nothing is written yet
    (cards,) = result.state.devices.nodes.values()
    assert [(s.used_num, s.used_memory) for s in cards.states()] == [(1, 20000)]


def test_an_unreadable_pod_assignment_is_a_node_problem_not_a_crash(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:") + group("r", phase="Running")
               + pod("r-r-0", "r", "{volcano.sh/vgpu-number: 1}", node_name="n1", ids="GPU-a0,NVIDIA:")
               + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000}"))
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == {"ns1/w-w-0": "n1"}
    assert "ns1/r-r-0" in result.state.devices.problems["n1"][0]


@pytest.mark.parametrize("register", [
    pytest.param("", id="empty"),
    pytest.param("garbage", id="no-entries"),
])
def test_a_node_whose_inventory_has_no_cards_takes_no_vgpu_pod(tmp_path: Path, register: str) -> None:
    cluster = node("n1", register) + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1}")
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == {}
    assert "no registered vGPU devices" in result.decisions.unschedulable["ns1/w-w-0"][0]


def multi_container_pod(name: str, pg: str, containers: list[tuple[str, str]]) -> str:
    listed = "".join(f"\n  - {{name: {c}, resources: {{limits: {limits}}}}}" for c, limits in containers)
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ns1, annotations: {{scheduling.k8s.io/group-name: {pg}}}}}
spec:
  schedulerName: volcano
  containers:{listed}
"""


@pytest.mark.parametrize("containers, devices", [
    pytest.param([("sidecar", '{cpu: "1"}'),
                  ("a", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 10000}"),
                  ("b", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 10000, volcano.sh/vgpu-cores: 30}")],
                 "GPU-a1,NVIDIA,10000,0:;GPU-a1,NVIDIA,10000,30:", id="two-gpu-containers-and-a-sidecar"),
    pytest.param([("a", "{volcano.sh/vgpu-number: 0}"),
                  ("b", "{volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 1000}")],
                 ";GPU-a1,NVIDIA,1000,0:GPU-a0,NVIDIA,1000,0:", id="zero-cards-is-an-empty-segment"),
])
def test_each_container_gets_its_own_segment_and_the_agent_hands_them_out(
        tmp_path: Path, containers: list[tuple[str, str]], devices: str) -> None:
    # Volcano's resourcereqs + encodePodDevices: one request, one `;` segment per container naming
    # vgpu-number or vgpu-memory, in container order; the agent gives the non-empty ones to the containers
    # that ask for cards, in order
    from cluster_adapter.gpu_agent import hami

    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:GPU-a1,10,40000,{A100},true,hami-core:")
               + group("p") + multi_container_pod("p-p-0", "p", containers))
    result = session(tmp_path, cluster, conf(policy="binpack"))
    annotations = result.decisions.annotations["ns1/p-p-0"]
    assert annotations[gpu.IDS_NEW] == annotations[gpu.DEVICES_TO_ALLOCATE] == devices
    assert_protocol_formats(result.decisions.annotations)
    pod_json = {"metadata": {"name": "p-p-0", "namespace": "ns1", "uid": "u", "annotations": annotations},
                "spec": {"containers": [{"name": c, "resources": {"limits": yaml_limits(limits)}}
                                        for c, limits in containers]}}
    handed = hami.allocate_pod(pod_json, new_id=lambda: "x")
    assert handed.error == ""
    segments = [s for s in devices.split(";") if s]
    assert [c.env["NVIDIA_VISIBLE_DEVICES"] for c in handed.containers] == [
        ",".join(entry.split(",")[0] for entry in s.split(":") if entry) for s in segments]


def yaml_limits(flow: str) -> dict[str, str]:
    """`{a: 1, b: 2}` as the API returns it: every quantity a string."""
    pairs = (item.split(":", 1) for item in flow.strip("{}").split(",") if item.strip())
    return {k.strip(): v.strip().strip('"') for k, v in pairs}


def test_the_second_container_sees_the_memory_the_first_took(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:") + group("p")
               + multi_container_pod("p-p-0", "p", [
                   ("a", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 30000}"),
                   ("b", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 20000}")]))
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == {}
    assert "no GPU card with enough free memory" in result.decisions.unschedulable["ns1/p-p-0"][0]


def test_a_gh200_is_cut_with_its_own_profiles(tmp_path: Path) -> None:
    cluster = (node("n1", "GPU-g0,7,97871,NVIDIA-NVIDIA GH200 480GB,true,mig:") + group("m")
               + pod("m-m-0", "m", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 30000}"))
    result = session(tmp_path, cluster, conf(policy=""))
    (alloc,) = gpu.decode_mig_allocations(result.decisions.annotations["ns1/m-m-0"][gpu.MIG_ALLOCATIONS])
    assert (alloc.profile, alloc.start, alloc.size) == ("3g.48gb", 0, 4)


def test_a_volcano_placed_instance_is_counted_on_its_card(tmp_path: Path) -> None:
    cluster = (node("n1", f"GPU-m0,7,143771,{H200},true,mig:") + group("r", phase="Running")
               + pod("r-r-0", "r", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 10000}", node_name="n1",
                     ids="GPU-m0[group1-0],NVIDIA,10000,0:")
               + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 120000}"))
    result = session(tmp_path, cluster, conf(policy=""))
    assert result.decisions.binds == {}
    (cards,) = result.state.devices.nodes.values()
    assert [(s.used_num, s.used_memory, s.geometry) for s in cards.states()] == [(1, 10000, gpu.UNKNOWN_GEOMETRY)]


@pytest.mark.parametrize("handshake, binds", [
    pytest.param("Deleted_2026.01.01 00:00:00", {}, id="deleted"),
    pytest.param("Reported 2020.01.01 00:00:00", {"ns1/w-w-0": "n1"}, id="reported"),
    pytest.param("", {"ns1/w-w-0": "n1"}, id="absent-is-tolerated"),
])
def test_a_deleted_vgpu_handshake_takes_the_node_out(tmp_path: Path, handshake: str, binds: dict[str, str]) -> None:
    registered = node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:")
    if handshake:
        registered = registered.replace("annotations:\n", f'annotations:\n    volcano.sh/node-vgpu-handshake: "{handshake}"\n')
    cluster = registered + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000}")
    result = session(tmp_path, cluster, conf())
    assert result.decisions.binds == binds
    if not binds:
        assert result.decisions.unschedulable["ns1/w-w-0"][0] == (
            f"0/1 nodes are unavailable: 1 node not initialized with device hamivgpu: vGPU handshake {handshake}.")
