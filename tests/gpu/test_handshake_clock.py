"""A node whose vGPU handshake still says `Requesting_<time>` a minute after that time has no vGPU devices
(Volcano's NewGPUDevices): the test reads the session clock through the DSL's `now()`."""
from pathlib import Path

import pytest

from tests.gpu.test_session import A100, conf, group, node, pod
from vpolicy.engine.session import run_session
from vpolicy.harness import policy as policies
from vpolicy.load import conf as conf_loader
from vpolicy.load.cluster import load_cluster

REQUESTED_AT = 1767225600.0  # 2026-01-01T00:00:00Z, the stamp below


@pytest.mark.parametrize("now, binds", [pytest.param(REQUESTED_AT + 60, 1, id="a-minute-old-stamp-still-counts"),
                                        pytest.param(REQUESTED_AT + 61, 0, id="an-older-stamp-drops-the-node")])
def test_a_stale_requesting_handshake_takes_the_node_out(tmp_path: Path, now: float, binds: int) -> None:
    registered = node("n1", f"GPU-a0,10,40000,{A100},true,hami-core:").replace(
        "annotations:\n", 'annotations:\n    volcano.sh/node-vgpu-handshake: "Requesting_2026.01.01 00:00:00"\n')
    (tmp_path / "c.yaml").write_text((registered + group("w") + pod("w-w-0", "w", "{volcano.sh/vgpu-number: 1}"))
                                     .lstrip("-\n"))
    (tmp_path / "conf.yaml").write_text(conf())
    policy = policies.from_conf(conf_loader.load_conf(tmp_path / "conf.yaml"))
    result = run_session(load_cluster(tmp_path / "c.yaml"), policy, now=now)
    assert len(result.decisions.binds) == binds, result.decisions.unschedulable
    if not binds:
        (reasons,) = result.decisions.unschedulable.values()
        assert "node not initialized with device" in reasons[0]
