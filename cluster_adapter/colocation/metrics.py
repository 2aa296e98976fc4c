"""The colocation agent's health check and Prometheus metrics, served on `--metrics-port`.

    GET /healthz   200 "ok" while passes complete (the last within `stale_after_s`), else 500 and why
    GET /metrics   the registry below, in Prometheus' text format

Metrics (`vpolicy_agent_` prefix; Volcano's agent exports the first as
`volcano_agent_oversubscription_resource_quantity{node, resource}`):

    oversubscription_resource_quantity{node, resource}   millicores / bytes lent to BE pods
    node_usage_percent{node, resource}                   usage the last pass measured, % of allocatable
    be_cpu_quota_millicores{node}                        the BestEffort cgroup's cpu budget (-1: none)
    evictions_total{node, resource}                      BE pods evicted (resource "oversubscription": turned off)
    cgroup_writes_total{node}                            cgroup files changed
    passes_total{node, result}                           passes (ok, api-error, config-problem)

Each `AgentMetrics` has its own registry, so tests can run several. The clock is passed in.
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import prometheus_client as prom

from cluster_adapter.colocation.api import Report


class AgentMetrics:
    def __init__(self, node: str, *, clock: Callable[[], float], stale_after_s: float = 60.0):
        self.node, self.clock, self.stale_after_s = node, clock, stale_after_s
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.lent = prom.Gauge("vpolicy_agent_oversubscription_resource_quantity",
                               "Resources lent to BE pods (cpu in millicores, memory in bytes)",
                               ["node", "resource"], registry=r)
        self.usage = prom.Gauge("vpolicy_agent_node_usage_percent", "Node usage in percent of allocatable",
                                ["node", "resource"], registry=r)
        self.quota = prom.Gauge("vpolicy_agent_be_cpu_quota_millicores",
                                "The BestEffort cgroup's cpu budget (-1: no limit)", ["node"], registry=r)
        self.evictions = prom.Counter("vpolicy_agent_evictions_total", "BE pods evicted", ["node", "resource"],
                                      registry=r)
        self.writes = prom.Counter("vpolicy_agent_cgroup_writes_total", "cgroup files changed", ["node"], registry=r)
        self.passes = prom.Counter("vpolicy_agent_passes_total", "Colocation passes", ["node", "result"], registry=r)
        self.last_ok: float | None = None
        self.last_problem = "no pass yet"

    def observe(self, report: Report | None, *, quota_milli: int | None, error: str = "") -> None:
        """One pass: its report, or the API error that stopped it."""
        if report is None or report.tick is None:
            self.passes.labels(self.node, "api-error").inc()
            self.last_problem = error or "the pass did not run"
            return
        tick = report.tick
        for key, value in tick.status.get("allocatable", {}).items():
            resource = "cpu" if key.endswith("batch-cpu") else "memory"
            self.lent.labels(self.node, resource).set(float(value) if value is not None else 0.0)
        for resource, percent in tick.percents.items():
            if percent is not None:
                self.usage.labels(self.node, resource).set(percent)
        self.quota.labels(self.node).set(-1 if quota_milli is None else quota_milli)
        for eviction in tick.evictions:
            self.evictions.labels(self.node, eviction.resource).inc()
        if tick.writes:
            self.writes.labels(self.node).inc(len(tick.writes))
        result = "config-problem" if tick.problems else "ok"
        self.passes.labels(self.node, result).inc()
        if report.errors:
            self.last_problem = report.errors[0]
        else:
            self.last_ok = self.clock()

    def health(self) -> tuple[bool, str]:
        if self.last_ok is None:
            return False, self.last_problem
        age = self.clock() - self.last_ok
        if age > self.stale_after_s:
            return False, f"no successful pass for {age:.0f}s: {self.last_problem}"
        return True, "ok"


def serve(metrics: AgentMetrics, address: str, port: int) -> ThreadingHTTPServer:
    """Serve /healthz and /metrics in a daemon thread; the caller shuts the server down."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  # reason: http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                ok, why = metrics.health()
                self._send(200 if ok else 500, why.encode(), "text/plain")
            elif path == "/metrics":
                self._send(200, prom.generate_latest(metrics.registry), prom.CONTENT_TYPE_LATEST)
            else:
                self._send(404, b"not found", "text/plain")

        def _send(self, code: int, data: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # reason: the base class's name
            pass

    server = ThreadingHTTPServer((address, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="agent-metrics", daemon=True).start()
    return server
