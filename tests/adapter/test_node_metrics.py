"""The live scheduler's node load (cluster_adapter.node_metrics) against local HTTP servers that answer as
Prometheus and Elasticsearch do, and a stub custom-metrics API: the conf's `metrics` section picks the
source, each node gets Volcano's numbers and the time they were read, and the usage plugin then decides
on them as on a dump's annotations."""
from __future__ import annotations

import dataclasses
import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from cluster_adapter.config import ClientSettings
from cluster_adapter.kube.client import KubeClient
from cluster_adapter.node_metrics import NodeMetrics, parse_interval
from cluster_adapter.scheduler import Scheduler
from tests.adapter.conftest import FAST_SCHEDULER, load, node, official_api, pod, podgroup, queue
from tests.adapter.kubeemu import EmulatorThread
from vpolicy.engine.session import run_session
from vpolicy.harness import policy as policy_mod
from vpolicy.load import conf as conf_loader
from vpolicy.load.objects import snapshot_from_objects
from vpolicy.model.snapshot import NodeUsage

NOW = 1714564800.0  # 2024-05-01T12:00:00Z

Answer = Callable[[str, str, dict[str, Any]], tuple[int, Any]]


class Server:
    """Answers GET/POST with `answer(method, path+query, body)`; records each request."""

    def __init__(self, answer: Answer) -> None:
        self.requests: list[tuple[str, str, dict[str, Any], dict[str, str]]] = []
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _reply(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                server.requests.append((method, self.path, body, dict(self.headers)))
                status, payload = answer(method, self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802  # reason: http.server's name
                self._reply("GET")

            def do_POST(self) -> None:  # noqa: N802  # reason: http.server's name
                self._reply("POST")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Server]]:
    servers: list[Server] = []

    def start(answer: Answer) -> Server:
        servers.append(Server(answer))
        return servers[-1]
    yield start
    for s in servers:
        s.close()


LOADS = {"n1": (30.0, 50.0), "n2": (60.0, 50.0), "n0": (70.0, 60.0)}


def prometheus(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    query = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)["query"][0]
    node = next((n for n in LOADS if f'instance="{n}"' in query), None)
    if node is None:
        return 200, {"status": "success", "data": {"resultType": "vector", "result": []}}
    value = LOADS[node][0] if "node_cpu_seconds_total" in query else LOADS[node][1]
    return 200, {"status": "success", "data": {"resultType": "vector",
                                               "result": [{"metric": {"instance": node},
                                                           "value": [NOW, str(value)]}]}}


def test_prometheus_gives_each_node_volcanos_averages(serve: Callable[[Answer], Server]) -> None:
    server = serve(prometheus)
    source = NodeMetrics({"type": "prometheus", "address": server.url, "interval": "15s"}, clock=lambda: NOW)
    source.refresh(["n1", "n2", "n3"])
    assert source.usage == {"n1": NodeUsage(30.0, 50.0, NOW), "n2": NodeUsage(60.0, 50.0, NOW)}  # n3: no data
    queries = [urllib.parse.parse_qs(urllib.parse.urlparse(p).query)["query"][0] for _, p, _, _ in server.requests]
    assert queries[0] == ('avg_over_time((100 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle",'
                          'instance="n1"}[5m])) * 100))[10m:30s])')
    assert queries[1] == ('100*avg_over_time(((1-node_memory_MemAvailable_bytes{instance="n1"}'
                          '/node_memory_MemTotal_bytes{instance="n1"}))[10m:30s])')
    assert source.interval_s == 15


def test_a_failed_read_keeps_the_last_values(serve: Callable[[Answer], Server]) -> None:
    healthy = {"up": True}

    def flaky(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        return prometheus(method, path, body) if healthy["up"] else (503, {"status": "error"})
    server = serve(flaky)
    source = NodeMetrics({"address": server.url}, clock=lambda: NOW)  # no type: prometheus, as Volcano
    source.refresh(["n1"])
    healthy["up"] = False
    source.refresh(["n1"])
    assert source.usage == {"n1": NodeUsage(30.0, 50.0, NOW)}  # its time will age past usage's 5 minutes


def test_elasticsearch_averages_metricbeat_fields(serve: Callable[[Answer], Server]) -> None:
    def elastic(method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        node = body["query"]["bool"]["must"][1]["term"]["host.hostname"]
        cpu, mem = LOADS[node]
        return 200, {"aggregations": {"cpu": {"value": cpu}, "mem": {"value": mem}}}
    server = serve(elastic)
    source = NodeMetrics({"type": "elasticsearch", "address": server.url, "elasticsearch.index": "beats",
                          "elasticsearch.username": "u", "elasticsearch.password": "p"}, clock=lambda: NOW)
    source.refresh(["n1"])
    assert source.usage == {"n1": NodeUsage(30.0, 50.0, NOW)}
    method, path, body, headers = server.requests[0]
    assert (method, path) == ("POST", "/beats/_search")
    assert body["query"]["bool"]["must"][0] == {"range": {"@timestamp": {"gte": "now-10m", "lt": "now"}}}
    assert headers["Authorization"] == "Basic dTpw"


def test_prometheus_adaptor_reads_the_custom_metrics_api() -> None:
    asked: list[str] = []

    def get_json(path: str) -> Any:
        asked.append(path)
        value = "300m" if path.endswith("node_cpu_usage_avg") else "500m"
        return {"items": [{"describedObject": {"kind": "Node", "name": "n1"}, "value": value,
                           "timestamp": "2024-05-01T11:59:00Z"},
                          {"describedObject": {"kind": "Node", "name": "unknown"}, "value": "1"}]}
    source = NodeMetrics({"type": "prometheus_adaptor"}, get_json=get_json, clock=lambda: NOW)
    source.refresh(["n1"])
    assert source.usage == {"n1": NodeUsage(30.0, 50.0, NOW - 60)}
    assert asked == ["/apis/custom.metrics.k8s.io/v1beta1/nodes/%2A/node_cpu_usage_avg",
                     "/apis/custom.metrics.k8s.io/v1beta1/nodes/%2A/node_memory_usage_avg"]


def test_no_address_no_source() -> None:
    assert not NodeMetrics({"type": "prometheus"}).enabled
    assert parse_interval("bad") == parse_interval(None) == parse_interval("-1s") == 30


CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: usage
metrics:
  type: prometheus
  address: {url}
  interval: 30s
"""


def _objects() -> list[dict[str, Any]]:
    def node(name: str) -> dict[str, Any]:
        size = {"cpu": "4", "memory": "8Gi", "pods": "10"}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"allocatable": size, "capacity": size,
                           "conditions": [{"type": "Ready", "status": "True"}]}}
    return [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"},
         "spec": {"weight": 1}, "status": {"state": "Open"}},
        node("n2"), node("n1"),
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "pg1", "namespace": "c1"}, "spec": {"minMember": 1, "queue": "q1"},
         "status": {"phase": "Inqueue"}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "p1", "namespace": "c1", "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
         "spec": {"schedulerName": "volcano",
                  "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
         "status": {"phase": "Pending"}},
    ]


def test_the_usage_plugin_decides_on_the_sources_numbers(serve: Callable[[Answer], Server]) -> None:
    server = serve(prometheus)
    policy = policy_mod.from_conf(conf_loader.parse_conf_text(CONF.format(url=server.url), file="usage.conf"))
    assert policy.metrics == {"type": "prometheus", "address": server.url, "interval": "30s"}
    source = NodeMetrics(policy.metrics, clock=lambda: NOW)
    snapshot = snapshot_from_objects(_objects())
    source.refresh([n.name for n in snapshot.nodes])
    # n1 (30%, 50%) scores 300, n2 (60%, 50%) 225: p1 goes to n1 though n2 comes first
    decided = run_session(source.with_usage(snapshot), policy, now=NOW + 60).decisions
    assert decided.binds == {"c1/p1": "n1"}
    # five minutes and more later the numbers are stale: both score 0 and the first node wins
    assert run_session(source.with_usage(snapshot), policy, now=NOW + 301).decisions.binds == {"c1/p1": "n2"}


LIVE_CONF = """
actions: "enqueue, allocate, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: usage
  - name: tdm
  - name: rescheduling
metrics:
  type: prometheus
  address: {url}
  interval: 30s
"""


def test_the_live_scheduler_reads_the_conf_metrics_source_and_keeps_rule_run_times(
        serve: Callable[[Answer], Server], tmp_path: Path) -> None:
    """A live session: the nodes' load comes from the conf's Prometheus (n1 less loaded than n0, which
    comes first), tdm's victim rule ran (a fresh scheduler's first session: its time is kept for the
    next), rescheduling's did not (its first interval runs from the scheduler's start)."""
    server = serve(prometheus)
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(LIVE_CONF.format(url=server.url))
    emu = EmulatorThread(bookmark_interval=0.2).start()
    kube = KubeClient(official_api(emu), ClientSettings(request_timeout_s=5, connect_timeout_s=2))
    scheduler = Scheduler(kube, dataclasses.replace(FAST_SCHEDULER, conf=str(conf)))
    try:
        load(emu, [queue("default"), node("n0", cpu="4"), node("n1", cpu="4"), podgroup("pg"),
                   pod("pg-0", group="pg")])
        scheduler.start_informers()
        assert scheduler.wait_synced(5)
        report = scheduler.run_once()
        assert report.document["binds"] == {"default/pg-0": "n1"}
        assert scheduler.node_metrics is not None and sorted(scheduler.node_metrics.usage) == ["n0", "n1"]
        assert set(scheduler.rule_runs) == {"tdm.closed_zone_victims"}
    finally:
        scheduler.stop.set()
        kube.close()
        emu.stop()
