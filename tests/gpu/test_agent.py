"""The node GPU agent end to end on a fake NVML: discovery and registration, HAMi-core environment for an
assigned pod, MIG plans applied only with --apply, health, the API loop, the CLI and gpu_check."""
from __future__ import annotations

import argparse
import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.gpu_agent import agent as agent_mod
from cluster_adapter.gpu_agent import api, cli, discovery, hami, mig, nvml
from cluster_adapter.gpu_agent.nvml import FakeNvml
from tests.gpu.test_protocol import matches
from vpolicy.model import gpu

ROOT = Path(__file__).resolve().parents[2]
NOW = 1767225600.0


def node_object(name: str = "gpu-1", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}},
            "status": {}}


def assigned_pod(name: str, devices: str, *, node: str = "gpu-1", extra: dict[str, str] | None = None,
                 containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    annotations = {gpu.VGPU_NODE: node, gpu.BIND_PHASE: "allocating", gpu.VGPU_TIME: "1767225600",
                   gpu.IDS_NEW: devices, gpu.DEVICES_TO_ALLOCATE: devices, **(extra or {})}
    return {"metadata": {"name": name, "namespace": "ns1", "uid": f"uid-{name}", "annotations": annotations},
            "spec": {"containers": containers or [{"name": "main", "resources": {"limits": {
                gpu.VGPU_NUMBER: "1", gpu.VGPU_MEMORY: "20000", gpu.VGPU_CORES: "30"}}}]},
            "status": {"phase": "Pending"}}


@pytest.mark.parametrize("model, memory", [
    pytest.param("A100-40GB", 40960, id="a100-40gb"),
    pytest.param("A100-80GB", 81920, id="a100-80gb"),
    pytest.param("H100-80GB", 81559, id="h100-80gb"),
    pytest.param("H200", 143771, id="h200"),
])
def test_discovery_registers_every_card_of_a_fake_inventory(model: str, memory: int) -> None:
    backend = FakeNvml.of(model, 2)
    inventory = discovery.discover(backend.gpus(), split=4)
    assert [(c.index, c.split, c.memory, c.health, c.mode) for c in inventory.cards] == [
        (0, 4, memory, True, "hami-core"), (1, 4, memory, True, "hami-core")]
    assert all(c.type == f"NVIDIA-{nvml.FAKE_MODELS[model][0]}" for c in inventory.cards)


def test_the_agent_registers_an_8_h200_node() -> None:
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1"), FakeNvml.of("H200", 8))
    tick = agent.tick(node_object(), [], now=NOW)
    annotations = tick.node_patch["metadata"]["annotations"]
    register = annotations[gpu.NODE_REGISTER]
    assert matches(gpu.NODE_REGISTER, register) and matches(gpu.NODE_HANDSHAKE, annotations[gpu.NODE_HANDSHAKE])
    cards = gpu.parse_inventory(register).cards
    assert len(cards) == 8 and {c.type for c in cards} == {"NVIDIA-NVIDIA H200"}
    assert register.startswith("GPU-fake-h200-00,10,143771,NVIDIA-NVIDIA H200,true,hami-core:")
    assert annotations[gpu.NODE_HANDSHAKE] == "Reported 2026.01.01 00:00:00"
    assert tick.status_patch == {"status": {
        "capacity": {gpu.VGPU_NUMBER: "80", gpu.VGPU_MEMORY: str(8 * 143771), gpu.VGPU_CORES: "800"},
        "allocatable": {gpu.VGPU_NUMBER: "80", gpu.VGPU_MEMORY: str(8 * 143771), gpu.VGPU_CORES: "800"}}}


def test_an_assigned_pod_gets_the_hami_core_environment() -> None:
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1"), FakeNvml.of("H200", 8), new_id=lambda: "cache-1")
    pod = assigned_pod("train-0", "GPU-fake-h200-07,NVIDIA,20000,30:GPU-fake-h200-06,NVIDIA,20000,30:",
                       containers=[{"name": "main", "resources": {"limits": {gpu.VGPU_NUMBER: "2"}}}])
    tick = agent.tick(node_object(), [pod], now=NOW)
    (result,) = tick.pods
    assert result.error == ""
    (container,) = result.containers
    assert container.name == "main"
    assert dict(container.env) == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-fake-h200-07,GPU-fake-h200-06",
        "CUDA_DEVICE_MEMORY_LIMIT_0": "20000m", "CUDA_DEVICE_MEMORY_LIMIT_1": "20000m",
        "CUDA_DEVICE_SM_LIMIT": "30", "CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/vgpu/cache-1.cache"}
    assert ("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so") in container.mounts
    assert ("/usr/local/vgpu/containers/uid-train-0_main", "/tmp/vgpu") in container.mounts
    assert dict(result.annotations) == {gpu.BIND_PHASE: "success", gpu.VGPU_TIME: str(gpu.MAX_UINT64),
                                        gpu.DEVICES_TO_ALLOCATE: ""}
    assert matches(gpu.BIND_PHASE, result.annotations[gpu.BIND_PHASE])


def test_segments_go_to_the_gpu_containers_in_order() -> None:
    containers = [{"name": "sidecar"},
                  {"name": "a", "resources": {"limits": {gpu.VGPU_NUMBER: "1"}}},
                  {"name": "b", "resources": {"limits": {gpu.VGPU_MEMORY: "100"}}}]
    pod = assigned_pod("p", "GPU-1,NVIDIA,10,0:;GPU-2,NVIDIA,100,5:", containers=containers)
    result = hami.allocate_pod(pod, new_id=lambda: "x")
    assert [(c.name, c.env["NVIDIA_VISIBLE_DEVICES"], c.env["CUDA_DEVICE_SM_LIMIT"]) for c in result.containers] == [
        ("a", "GPU-1", "0"), ("b", "GPU-2", "5")]
    assert result.annotations[gpu.DEVICES_TO_ALLOCATE] == ";"


@pytest.mark.parametrize("devices, why", [
    pytest.param("GPU-1,NVIDIA,10,0:;GPU-2,NVIDIA,10,0:", "2 device segments for 1 GPU containers", id="too-many"),
    pytest.param("GPU-1,NVIDIA:", "devices-to-allocate", id="malformed"),
])
def test_a_pod_whose_devices_do_not_match_fails_its_bind_phase(devices: str, why: str) -> None:
    result = hami.allocate_pod(assigned_pod("p", devices))
    assert result.annotations == {gpu.BIND_PHASE: "failed"} and why in result.error


def test_memory_factor_and_core_settings_shape_the_env() -> None:
    settings = hami.HamiSettings(memory_factor=2, core_scaling=1.5, disable_core_limit=True)
    env = hami.container_env([gpu.ContainerDevice("GPU-1", "NVIDIA", 1000, 20)], cache_id="c", settings=settings)
    assert env["CUDA_DEVICE_MEMORY_LIMIT_0"] == "2000m"
    assert env["CUDA_OVERSUBSCRIBE"] == "true" and env["GPU_CORE_UTILIZATION_POLICY"] == "disable"


def test_pods_of_other_nodes_or_already_handed_out_are_left_alone() -> None:
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1"), FakeNvml.of("H200", 1))
    other = assigned_pod("elsewhere", "GPU-x,NVIDIA,1,0:", node="gpu-2")
    done = assigned_pod("done", "GPU-fake-h200-00,NVIDIA,1,0:", extra={gpu.BIND_PHASE: "success"})
    assert agent.tick(node_object(), [other, done], now=NOW).pods == []


def test_a_card_that_disappears_is_registered_unhealthy() -> None:
    backend = FakeNvml.of("H200", 2)
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1"), backend)
    first = agent.tick(node_object(), [], now=NOW).node_patch["metadata"]["annotations"]
    backend.remove("GPU-fake-h200-00")
    tick = agent.tick(node_object(annotations=first), [], now=NOW)
    cards = gpu.parse_inventory(tick.node_patch["metadata"]["annotations"][gpu.NODE_REGISTER]).cards
    assert [(c.uuid, c.health) for c in cards] == [("GPU-fake-h200-01", True), ("GPU-fake-h200-00", False)]
    assert tick.status_patch["status"]["capacity"][gpu.VGPU_NUMBER] == "10"
    assert "no longer visible" in tick.problems[0]


# MIG -------------------------------------------------------------------------------------------------------
def mig_pod(name: str, group: int, position: int, profile: str, start: int, size: int,
            uuid: str = "GPU-fake-h200-00") -> dict[str, Any]:
    device = gpu.mig_id(uuid, group, position)
    alloc = gpu.MigAllocation(0, 0, uuid, profile, start, size, group, position)
    return assigned_pod(name, f"{device},NVIDIA,67710,0:",
                        extra={gpu.MIG_ALLOCATIONS: gpu.encode_mig_allocations([alloc])})


def test_mig_plan_is_a_dry_run_by_default() -> None:
    backend = FakeNvml.of("H200", 1, mig=True)
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1", mode=gpu.MODE_MIG), backend)
    tick = agent.tick(node_object(), [mig_pod("m", 2, 1, "3g.71gb", 4, 4)], now=NOW)
    assert [(c.profile, c.start, c.device_id) for c in tick.mig_plan.create] == [
        ("3g.71gb", 4, "GPU-fake-h200-00[2-1]")]
    assert backend.created == [] and tick.pods == []
    assert "dry run" in tick.waiting[0]


def test_mig_plan_applied_creates_the_instance_and_hands_out_its_uuid() -> None:
    backend = FakeNvml.of("H200", 1, mig=True)
    backend.create_instance("GPU-fake-h200-00", 19, 0)  # a stale 1g instance nobody reserved
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1", mode=gpu.MODE_MIG, apply_mig=True), backend)
    tick = agent.tick(node_object(), [mig_pod("m", 2, 0, "3g.71gb", 0, 4)], now=NOW)
    assert backend.destroyed == [("GPU-fake-h200-00", 1)]
    assert backend.created == [("GPU-fake-h200-00", "1g.18gb", 0), ("GPU-fake-h200-00", "3g.71gb", 0)]
    (result,) = tick.pods
    (container,) = result.containers
    assert container.env == {"NVIDIA_VISIBLE_DEVICES": "MIG-fake-h200-00-2"}
    assert result.annotations[gpu.BIND_PHASE] == "success"
    assert tick.node_patch["metadata"]["annotations"][gpu.NODE_MIG_LAYOUT] == "GPU-fake-h200-00,3g.71gb*1:"


def test_mig_plan_keeps_reserved_instances_and_reports_problems() -> None:
    backend = FakeNvml.of("H200", 1, mig=True)
    kept = backend.create_instance("GPU-fake-h200-00", 9, 0)
    reservations = [gpu.MigAllocation(0, 0, "GPU-fake-h200-00", "3g.71gb", 0, 4, 2, 0),
                    gpu.MigAllocation(0, 0, "GPU-gone", "3g.71gb", 0, 4, 2, 0)]
    found = mig.plan(backend.gpus(), reservations)
    assert found.destroy == () and found.create == ()
    assert found.keep == (("GPU-fake-h200-00[2-0]", kept),)
    assert "GPU-gone is not on this node" in found.problems[0]
    off = FakeNvml.of("H200", 1, mig=False)
    assert "MIG mode is off" in mig.plan(off.gpus(), reservations[:1]).problems[0]


def test_the_fake_refuses_overlapping_instances_like_nvml() -> None:
    backend = FakeNvml.of("A100-40GB", 1, mig=True)
    backend.create_instance("GPU-fake-a100-40gb-00", 9, 0)
    with pytest.raises(nvml.NvmlError, match="in use"):
        backend.create_instance("GPU-fake-a100-40gb-00", 19, 2)


def test_scheduler_reservations_are_what_the_agent_creates() -> None:
    """The scheduler's MIG choice (vpolicy.compile.devices) and the agent's plan agree on the placement."""
    from vpolicy.compile import devices

    card = devices.CardState(gpu.Card(0, "GPU-fake-h200-00", 7, 143771, "NVIDIA-NVIDIA H200", True, gpu.MODE_MIG))
    found = devices.allocate((gpu.DeviceRequest(1, 30000),), [card])
    assert isinstance(found, devices.Assignment)
    backend = FakeNvml.of("H200", 1, mig=True)
    plan = mig.plan(backend.gpus(), found.mig)
    uuids, errors = mig.apply(plan, backend)
    assert errors == [] and list(uuids) == [found.devices[0][0].uuid]


# The API loop ------------------------------------------------------------------------------------------------
class FakeNodeApi:
    """The five calls, on dicts; patches merged the way the API server merges these simple ones."""

    def __init__(self, node: dict[str, Any], pods: list[dict[str, Any]]):
        self.node, self.pods = node, pods
        self.calls: list[str] = []

    def get_node(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.node)

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.calls.append("patch node")
        annotations = self.node["metadata"].setdefault("annotations", {})
        for k, v in patch["metadata"]["annotations"].items():
            if v is None:
                annotations.pop(k, None)
            else:
                annotations[k] = v

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        self.calls.append("patch node status")
        self.node["status"].update(patch["status"])

    def list_pods(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.pods)

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.calls.append(f"patch pod {namespace}/{name}")
        for p in self.pods:
            if p["metadata"]["name"] == name:
                p["metadata"]["annotations"].update(patch["metadata"]["annotations"])


def test_run_once_registers_hands_out_and_releases_the_node_lock(tmp_path: Path) -> None:
    fake = FakeNodeApi(node_object(annotations={"volcano.sh/mutex.lock": "2026-01-01T00:00:00Z"}),
                       [assigned_pod("train-0", "GPU-fake-h200-03,NVIDIA,20000,30:")])
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1"), FakeNvml.of("H200", 8), new_id=lambda: "c")
    report = api.run_once(agent, fake, now=NOW, env_dir=tmp_path)
    assert report.errors == []
    assert fake.calls == ["patch node", "patch node status", "patch pod ns1/train-0"]
    assert "volcano.sh/mutex.lock" not in fake.node["metadata"]["annotations"]
    assert len(gpu.parse_inventory(fake.node["metadata"]["annotations"][gpu.NODE_REGISTER]).cards) == 8
    assert fake.pods[0]["metadata"]["annotations"][gpu.BIND_PHASE] == "success"
    env = (tmp_path / "ns1_train-0_main.env").read_text().splitlines()
    assert "CUDA_DEVICE_MEMORY_LIMIT_0=20000m" in env and "NVIDIA_VISIBLE_DEVICES=GPU-fake-h200-03" in env
    again = api.run_once(agent, fake, now=NOW)
    assert again.tick.pods == []  # handed out once


def test_the_cli_registers_the_agent_subcommand() -> None:
    parser = argparse.ArgumentParser(prog="vpolicy")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["agent", "--node", "n1", "--kubeconfig", "k", "--mode", "mig", "--split", "7",
                              "--apply"])
    assert (args.node, args.mode, args.split, args.apply, args.extension) == ("n1", "mig", 7, True, cli.main)


def test_pyproject_declares_the_agent_entry_point() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'agent = "cluster_adapter.gpu_agent.cli:register"' in text
    assert "nvidia-ml-py" in text


def test_gpu_check_says_so_without_nvml() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py")], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/nonexistent"})
    assert proc.returncode == 0, proc.stderr
    assert "no NVML on this machine" in proc.stdout or "driver:" in proc.stdout


def test_gpu_check_prints_a_fake_inventory_and_the_dry_run() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--fake-nvml", "H200x8:mig",
                           "--mode", "mig"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("NVIDIA H200, 143771 MiB, MIG enabled") == 8
    assert "profile 2 id 9: 3g.71gb 3 slices x2, 67710 MiB, placements 0+4 4+4" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith(gpu.NODE_REGISTER))
    assert matches(gpu.NODE_REGISTER, line.split(": ", 1)[1])
    assert "nothing is written" in proc.stdout


# MIG instances pods hold without (readable) reservations -------------------------------------------------
def running_pod(name: str, extra: dict[str, str]) -> dict[str, Any]:
    """A pod on gpu-1 whose devices were handed out (`bind-phase: success`), running."""
    annotations = {gpu.VGPU_NODE: "gpu-1", gpu.BIND_PHASE: "success", **extra}
    return {"metadata": {"name": name, "namespace": "ns1", "uid": f"uid-{name}", "annotations": annotations},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "resources": {"limits": {
                gpu.VGPU_NUMBER: "1", gpu.VGPU_MEMORY: "10000"}}}]},
            "status": {"phase": "Running"}}


def one_instance(profile: str = "1g.18gb", start: int = 0) -> tuple[FakeNvml, nvml.MigInstanceInfo]:
    backend = FakeNvml.of("H200", 1, mig=True)
    (profile_id,) = (p.id for p in backend.devices[0].mig_profiles if p.name == profile)
    return backend, backend.create_instance("GPU-fake-h200-00", profile_id, start)


def applied_tick(backend: FakeNvml, pods: list[dict[str, Any]]) -> agent_mod.Tick:
    agent = agent_mod.Agent(agent_mod.AgentSettings("gpu-1", mode=gpu.MODE_MIG, apply_mig=True), backend)
    return agent.tick(node_object(), pods, now=NOW)


@pytest.mark.parametrize("extra, problem", [
    pytest.param({gpu.IDS_NEW: "GPU-fake-h200-00[group1-0],NVIDIA,10000,0:"}, "",
                 id="volcano-id-names-the-geometry"),
    pytest.param({gpu.IDS_NEW: "GPU-fake-h200-00[0-0],NVIDIA,17166,0:", gpu.MIG_ALLOCATIONS: '[{"broken":1}]'},
                 "is not a list of MIG allocations", id="unreadable-reservation-readable-id"),
    pytest.param({gpu.IDS_NEW: "GPU-fake-h200-00[0-0],NVIDIA:", gpu.MIG_ALLOCATIONS: '[{"broken":1}]'},
                 "no MIG instance is destroyed while it cannot be read", id="nothing-readable"),
])
def test_an_instance_a_running_pod_may_hold_is_never_destroyed(extra: dict[str, str], problem: str) -> None:
    backend, instance = one_instance()
    tick = applied_tick(backend, [running_pod("holder", extra)])
    assert backend.destroyed == []
    ((spared, why),) = tick.mig_plan.spared
    assert (spared.gi_id, spared.profile) == (instance.gi_id, "1g.18gb") and why
    assert any(line.startswith("spare GPU-fake-h200-00 GI") for line in tick.mig_plan.lines())
    if problem:
        assert any(problem in p for p in tick.problems), tick.problems


def test_an_instance_only_a_finished_pod_held_is_destroyed() -> None:
    backend, instance = one_instance()
    done = running_pod("done", {gpu.IDS_NEW: "GPU-fake-h200-00[group1-0],NVIDIA,10000,0:"})
    done["status"]["phase"] = "Succeeded"
    applied_tick(backend, [done])
    assert backend.destroyed == [("GPU-fake-h200-00", instance.gi_id)]


def test_a_vpolicy_id_spares_only_its_own_instance() -> None:
    backend, held = one_instance("1g.18gb", 0)
    stale = backend.create_instance("GPU-fake-h200-00", held.profile_id, 1)  # position 1 of 1g*7, unused
    tick = applied_tick(backend, [running_pod("holder", {gpu.IDS_NEW: "GPU-fake-h200-00[0-0],NVIDIA,17166,0:"})])
    assert backend.destroyed == [("GPU-fake-h200-00", stale.gi_id)]
    assert [d.gi_id for d, _ in tick.mig_plan.spared] == [held.gi_id]


def test_a_container_asking_zero_cards_gets_no_segment() -> None:
    # Volcano's resourcereqs keeps a request for `vgpu-number: "0"` and encodes an empty segment for it
    containers = [{"name": "a", "resources": {"limits": {gpu.VGPU_NUMBER: "0"}}},
                  {"name": "b", "resources": {"limits": {gpu.VGPU_NUMBER: "1", gpu.VGPU_MEMORY: "1000"}}}]
    result = hami.allocate_pod(assigned_pod("p", ";GPU-a0,NVIDIA,1000,0:", containers=containers), new_id=lambda: "x")
    assert result.error == ""
    assert [(c.name, c.env["NVIDIA_VISIBLE_DEVICES"]) for c in result.containers] == [("b", "GPU-a0")]
    assert hami.gpu_containers(assigned_pod("q", "", containers=containers)) == ["b"]
