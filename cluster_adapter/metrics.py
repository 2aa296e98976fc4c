"""Prometheus metrics of the live scheduler, served on `/metrics` when `--metrics-port` is given.

Each `Metrics` has its own registry (tests run several schedulers in one process). Names follow
Prometheus conventions with the `vpolicy_` prefix; Volcano's own metric names are noted where one
corresponds.
"""
from __future__ import annotations

from typing import Any

import prometheus_client as prom

# Session durations span a quiet 5 ms to an overloaded 10 s.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.session_seconds = prom.Histogram(  # volcano: e2e_scheduling_latency_milliseconds
            "vpolicy_session_duration_seconds", "Wall time of one scheduling session, whole and per action",
            ["action"], buckets=_BUCKETS, registry=r)
        self.apply_seconds = prom.Histogram(
            "vpolicy_apply_duration_seconds", "Wall time to apply one session's decisions", buckets=_BUCKETS, registry=r)
        self.sessions = prom.Counter("vpolicy_sessions_total", "Sessions run", ["result"], registry=r)
        self.pods_bound = prom.Counter("vpolicy_pods_bound_total", "Pods bound through pods/binding", registry=r)
        self.bind_failures = prom.Counter("vpolicy_bind_failures_total", "Binds not applied", ["reason"], registry=r)
        self.pods_evicted = prom.Counter("vpolicy_pods_evicted_total", "Pods evicted", ["action"], registry=r)
        self.evict_failures = prom.Counter("vpolicy_evict_failures_total", "Evictions not applied", ["reason"],
                                           registry=r)
        self.pending_pods = prom.Gauge("vpolicy_pending_pods", "Pods left pending by the last session, per queue",
                                       ["queue"], registry=r)
        self.solver_calls = prom.Counter("vpolicy_solver_calls_total", "Calls into the Z3 backend", registry=r)
        self.solver_seconds = prom.Counter("vpolicy_solver_seconds_total", "Time spent in the Z3 backend", registry=r)
        self.api_errors = prom.Counter("vpolicy_api_errors_total", "Failed Kubernetes API calls", ["verb", "code"],
                                       registry=r)
        self.status_writes = prom.Counter("vpolicy_status_writes_total", "PodGroup/Queue/Pod status writes",
                                          ["kind"], registry=r)
        self.status_write_failures = prom.Counter(
            "vpolicy_status_write_failures_total", "PodGroup/Queue/Pod status writes the API refused (written "
            "again by the next session)", ["kind"], registry=r)
        self.events = prom.Counter("vpolicy_events_total", "Events written", ["reason"], registry=r)
        self.optimize_runs = prom.Counter(
            "vpolicy_optimize_runs_total", "Evicting actions run in optimize mode, by the run kept (optimize's or "
            "Volcano's) and why (better, no-better, placed-less, budget-spent, budget-ran-out)", ["action", "kept", "reason"],
            registry=r)
        self.leader = prom.Gauge("vpolicy_leader", "1 while this process holds the lease (or needs none)",
                                 registry=r)
        self._server: Any = None

    def api_error(self, exc: Any) -> None:
        self.api_errors.labels(verb=getattr(exc, "verb", "") or "unknown",
                               code=getattr(exc, "code_label", "none")).inc()

    def observe_stats(self, stats: dict[str, Any]) -> None:
        """Timings and solver figures from a session's `Decisions.stats`."""
        total = stats.get("session_ms")
        if isinstance(total, (int, float)):
            self.session_seconds.labels(action="session").observe(total / 1000)
        for action, figures in (stats.get("actions") or {}).items():
            ms = figures.get("ms") if isinstance(figures, dict) else None
            if isinstance(ms, (int, float)):
                self.session_seconds.labels(action=action).observe(ms / 1000)
        for action, run in (stats.get("optimize") or {}).items():
            self.optimize_runs.labels(action=action, kept=run.get("kept", ""), reason=run.get("reason", "")).inc()
        solver = stats.get("solver") or {}
        if isinstance(solver.get("calls"), int):
            self.solver_calls.inc(solver["calls"])
        if isinstance(solver.get("ms"), (int, float)):
            self.solver_seconds.inc(solver["ms"] / 1000)

    def set_pending(self, per_queue: dict[str, int]) -> None:
        self.pending_pods.clear()
        for queue, count in per_queue.items():
            self.pending_pods.labels(queue=queue).set(count)

    def serve(self, port: int, address: str) -> int:
        """Start the /metrics HTTP server; returns the port (useful with port 0)."""
        server, _thread = prom.start_http_server(port, addr=address, registry=self.registry)
        self._server = server
        return int(server.server_port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def text(self) -> str:
        return prom.generate_latest(self.registry).decode()
