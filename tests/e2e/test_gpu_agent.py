"""The GPU agent on a kwok node of the real API server: `vpolicy agent --fake-nvml H200x2` registers the
cards (node annotations, vGPU resources in the Node's status, next to what kwok keeps there), the
scheduler places a vGPU pod with its device annotations carried by the Binding, and the agent hands the
pod its devices (bind-phase success, the container's environment)."""
from __future__ import annotations

from tests.e2e.cluster import Cluster, Component, eventually, scheduler
from vpolicy.model import gpu

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
  - name: proportion
  - name: nodeorder
"""


def test_agent_registers_fake_cards_on_a_kwok_node_and_a_vgpu_pod_gets_its_devices(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("gpu")
    [node] = cluster.kwok_nodes(f"{ns}-gpu", 1, cpu="16", memory="64Gi")
    env_dir = cluster.workdir / f"{ns}-env"
    components.append(Component("agent", ["agent", "--node", node, "--kubeconfig", str(cluster.kubeconfig),
                                           "--features", "gpu", "--fake-nvml", "H200x2", "--period", "1",
                                           "--env-dir", str(env_dir)], cluster.workdir))

    def capacity() -> str:
        return str(((cluster.get(f"/api/v1/nodes/{node}") or {}).get("status") or {}).get(
            "allocatable", {}).get(gpu.VGPU_NUMBER, ""))
    eventually(lambda: capacity() == "20", 60, "the node's vGPU resources (2 cards x split 10)")
    stored = cluster.get(f"/api/v1/nodes/{node}")
    cards = gpu.parse_inventory(stored["metadata"]["annotations"][gpu.NODE_REGISTER]).cards
    assert len(cards) == 2 and all(c.health for c in cards)
    conf = cluster.workdir / "gpu.conf"
    conf.write_text(CONF)
    from tests.e2e.cluster import controllers
    components += [controllers(cluster), scheduler(cluster, conf=conf)]
    cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": ns},
                    "spec": {"schedulerName": "volcano", "containers": [{
                        "name": "main", "image": "busybox", "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {gpu.VGPU_NUMBER: "1", gpu.VGPU_MEMORY: "20000", gpu.VGPU_CORES: "50"}}}]}})

    def annotations() -> dict[str, str]:
        return dict((cluster.get(f"/api/v1/namespaces/{ns}/pods/train-0") or {}).get("metadata", {}).get(
            "annotations") or {})
    eventually(lambda: annotations().get(gpu.BIND_PHASE) == "success", 90, "the agent's bind-phase success")
    pod = cluster.get(f"/api/v1/namespaces/{ns}/pods/train-0")
    assert pod["spec"]["nodeName"] == node
    got = annotations()
    assert got[gpu.VGPU_NODE] == node
    [uuid] = [seg.split(",")[0] for seg in got[gpu.IDS_NEW].rstrip(";").split(":") if seg]
    assert uuid in {c.uuid for c in cards}
    env = set((env_dir / f"{ns}_train-0_main.env").read_text().splitlines())
    assert {f"NVIDIA_VISIBLE_DEVICES={uuid}", "CUDA_DEVICE_MEMORY_LIMIT_0=20000m", "CUDA_DEVICE_SM_LIMIT=50"} <= env
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
