"""The agent against the Kubernetes API emulator (tests/adapter/kubeemu): `vpolicy agent --once` with a
fake 8 x H200 NVML registers the node and hands an assigned pod its devices, through real HTTP calls."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.gpu_agent import cli
from vpolicy.model import gpu

kubeemu = pytest.importorskip("tests.adapter.kubeemu")
server = pytest.importorskip("tests.adapter.kubeemu.server")


@pytest.fixture
def emu() -> Iterator[Any]:
    thread = kubeemu.EmulatorThread().start()
    yield thread
    thread.stop()


def test_agent_once_registers_the_node_and_hands_out_an_assigned_pod(emu: Any, tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-1", "annotations": {"volcano.sh/mutex.lock": "2026-01-01T00:00:00Z"}},
            "status": {"allocatable": {"cpu": "64"}, "capacity": {"cpu": "64"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    devices = "GPU-fake-h200-05,NVIDIA,30000,50:"
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "train-0", "namespace": "default", "annotations": {
               gpu.VGPU_NODE: "gpu-1", gpu.BIND_PHASE: "allocating", gpu.IDS_NEW: devices,
               gpu.DEVICES_TO_ALLOCATE: devices, gpu.VGPU_TIME: "1767225600"}},
           "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "x", "resources": {
               "limits": {gpu.VGPU_NUMBER: "1", gpu.VGPU_MEMORY: "30000", gpu.VGPU_CORES: "50"}}}]}}
    emu.call(lambda e: [e.put_object(node), e.put_object(pod)])
    kubeconfig = server.write_kubeconfig(emu.url, tmp_path / "kubeconfig")
    parser = argparse.ArgumentParser(prog="vpolicy")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["agent", "--node", "gpu-1", "--kubeconfig", str(kubeconfig), "--once",
                              "--fake-nvml", "H200x8", "--env-dir", str(tmp_path / "env"),
                              "--features", "gpu"])  # colocation would read the host's cgroups and /proc
    assert args.extension(args) == 0

    stored_node = emu.call(lambda e: e.get("nodes", "", "gpu-1"))
    annotations = stored_node["metadata"]["annotations"]
    cards = gpu.parse_inventory(annotations[gpu.NODE_REGISTER]).cards
    assert len(cards) == 8 and all(c.type == "NVIDIA-NVIDIA H200" and c.health for c in cards)
    assert "volcano.sh/mutex.lock" not in annotations
    assert stored_node["status"]["capacity"][gpu.VGPU_NUMBER] == "80"
    stored_pod = emu.call(lambda e: e.get("pods", "default", "train-0"))["metadata"]["annotations"]
    assert stored_pod[gpu.BIND_PHASE] == "success" and stored_pod[gpu.DEVICES_TO_ALLOCATE] == ""
    env = (tmp_path / "env" / "default_train-0_main.env").read_text().splitlines()
    assert {"NVIDIA_VISIBLE_DEVICES=GPU-fake-h200-05", "CUDA_DEVICE_MEMORY_LIMIT_0=30000m",
            "CUDA_DEVICE_SM_LIMIT=50"} <= set(env)
