"""The agent's /healthz and /metrics: what a pass reports, and health going stale without passes."""
from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from cluster_adapter.colocation import agent, api, cgroups, metrics, policy, qos
from tests.colocation import fakes


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_pass_is_exported_and_health_follows_the_last_good_pass(tmp_path: Path) -> None:
    clock = Clock()
    m = metrics.AgentMetrics("n1", clock=clock, stale_after_s=30)
    assert m.health() == (False, "no pass yet")
    be = qos.pod_info(fakes.pod("etl", level="BE", batch_cpu=1000))
    tick = agent.Tick(status={"allocatable": {qos.BATCH_CPU: "3000", qos.BATCH_MEMORY: "1024"}},
                      evictions=[policy.Eviction(be, "cpu", "pressure")], percents={"cpu": 85, "memory": 40},
                      writes=[cgroups.Write("/x/cpu.max", "max", "1000 100000")])
    m.observe(api.Report(tick), quota_milli=800)
    assert m.health() == (True, "ok")
    server = metrics.serve(m, "127.0.0.1", 0)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        text = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
        assert 'vpolicy_agent_oversubscription_resource_quantity{node="n1",resource="cpu"} 3000.0' in text
        assert 'vpolicy_agent_node_usage_percent{node="n1",resource="cpu"} 85.0' in text
        assert 'vpolicy_agent_evictions_total{node="n1",resource="cpu"} 1.0' in text
        assert 'vpolicy_agent_be_cpu_quota_millicores{node="n1"} 800.0' in text
        assert urllib.request.urlopen(f"{base}/healthz", timeout=5).read() == b"ok"
        clock.now = 100.0
        m.observe(None, quota_milli=800, error="get node: connection refused")
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=5)
            raise AssertionError("a stale agent must not report healthy")
        except urllib.error.HTTPError as exc:
            assert exc.code == 500
            assert exc.read() == b"no successful pass for 100s: get node: connection refused"
    finally:
        server.shutdown()
        server.server_close()


def test_a_config_problem_is_counted() -> None:
    m = metrics.AgentMetrics("n1", clock=Clock())
    m.observe(api.Report(agent.Tick(problems=["configmap x: bad"])), quota_milli=None)
    assert m.registry.get_sample_value("vpolicy_agent_passes_total", {"node": "n1", "result": "config-problem"}) == 1
    assert m.registry.get_sample_value("vpolicy_agent_be_cpu_quota_millicores", {"node": "n1"}) == -1
