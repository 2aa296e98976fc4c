"""Node load from the metrics source a conf's `metrics` section names, as Volcano's scheduler cache reads it.

Volcano (pkg/scheduler/metrics/source) keeps, per node, CPU and memory usage in percent averaged over
`NODE_METRICS_PERIOD` (10m) and the time they were read, refreshed every `metrics.interval` (default 30s)
by a loop beside the sessions; the usage and rescheduling plugins read them from NodeInfo.ResourceUsage.
Here the same numbers become each node's `snapshot.NodeUsage`, which the scheduler lays over the
snapshot before every session (`with_usage`). Three sources, chosen by `metrics.type`:

- `prometheus` (the default): two instant queries per node on `<address>/api/v1/query`, Volcano's PromQL
  (node-exporter's idle CPU rate and MemAvailable over MemTotal, averaged over 10m at 30s steps);
- `elasticsearch`: one search per node on `<address>/<elasticsearch.index>/_search` (default index
  `metricbeat-*`), averaging metricbeat's `host.cpu.usage` and `system.memory.actual.used.pct` over the
  last 10m, with `elasticsearch.username` / `elasticsearch.password` as basic auth;
- `prometheus_adaptor`: the API server's custom metrics (`node_cpu_usage_avg`, `node_memory_usage_avg`
  of every node, fractions, times 100), through the scheduler's own Kubernetes client.

A node a source has nothing for keeps no usage (the plugins then read it as never measured); a failed
read keeps the previous values, whose time then ages past the plugins' five-minute freshness.
"""
from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from cluster_adapter.timestamps import parse_rfc3339
from vpolicy.model import durations
from vpolicy.model.quantity import parse_milli_value
from vpolicy.model.snapshot import ClusterSnapshot, NodeUsage

log = logging.getLogger(__name__)

NODE_METRICS_PERIOD = "10m"  # Volcano's source.NODE_METRICS_PERIOD
DEFAULT_INTERVAL_S = 30.0  # Volcano's default metrics.interval
TIMEOUT_S = 10.0

CPU_QUERY = ('avg_over_time((100 - (avg by (instance) (rate(node_cpu_seconds_total{{mode="idle",instance="{node}"}}'
             '[5m])) * 100))[{period}:30s])')
MEMORY_QUERY = ('100*avg_over_time(((1-node_memory_MemAvailable_bytes{{instance="{node}"}}'
                '/node_memory_MemTotal_bytes{{instance="{node}"}}))[{period}:30s])')
ADAPTOR_PATH = "/apis/custom.metrics.k8s.io/v1beta1/nodes/%2A/{metric}"  # every node's value of one metric

Fetch = Callable[[urllib.request.Request], bytes]


class MetricsError(Exception):
    """A metrics source could not be read (its answer is logged; the previous values stay)."""


def _urlopen(insecure: bool) -> Fetch:
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

    def fetch(request: urllib.request.Request) -> bytes:
        try:
            # the conf's own metrics address
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context) as answer:
                body: bytes = answer.read()
                return body
        except (OSError, ValueError) as exc:
            raise MetricsError(f"{request.full_url}: {exc}") from exc
    return fetch


def parse_interval(text: str | None) -> float:
    """`metrics.interval` as seconds (a Go duration); Volcano's 30s when missing, invalid or not positive."""
    seconds = durations.go_seconds(text) if text else None
    return seconds if seconds is not None and seconds > 0 else DEFAULT_INTERVAL_S


class PrometheusSource:
    def __init__(self, address: str, fetch: Fetch) -> None:
        self.address, self.fetch = address.rstrip("/"), fetch

    def read(self, nodes: Iterable[str], now: float) -> dict[str, NodeUsage]:
        out: dict[str, NodeUsage] = {}
        for node in nodes:
            cpu = self._query(CPU_QUERY.format(node=node, period=NODE_METRICS_PERIOD), now)
            memory = self._query(MEMORY_QUERY.format(node=node, period=NODE_METRICS_PERIOD), now)
            if cpu is None and memory is None:
                continue
            out[node] = NodeUsage(cpu=cpu or 0.0, memory=memory or 0.0, at=now)
        return out

    def _query(self, query: str, now: float) -> float | None:
        """The first sample of an instant vector query; None when Prometheus has no data for it."""
        url = f"{self.address}/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{now:.3f}"})
        answer = _json(self.fetch(urllib.request.Request(url)))
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, dict) or data.get("resultType") != "vector" or not data.get("result"):
            return None
        sample = data["result"][0].get("value")
        return _number(sample[1]) if isinstance(sample, list) and len(sample) == 2 else None


class ElasticsearchSource:
    def __init__(self, address: str, conf: Mapping[str, str], fetch: Fetch) -> None:
        self.address, self.fetch = address.rstrip("/"), fetch
        self.index = conf.get("elasticsearch.index") or "metricbeat-*"
        user, password = conf.get("elasticsearch.username", ""), conf.get("elasticsearch.password", "")
        self.auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode() if user or password else ""

    def read(self, nodes: Iterable[str], now: float) -> dict[str, NodeUsage]:
        out: dict[str, NodeUsage] = {}
        for node in nodes:
            body = {"size": 0,
                    "query": {"bool": {"must": [
                        {"range": {"@timestamp": {"gte": f"now-{NODE_METRICS_PERIOD}", "lt": "now"}}},
                        {"term": {"host.hostname": node}}]}},
                    "aggs": {"cpu": {"avg": {"field": "host.cpu.usage"}},
                             "mem": {"avg": {"field": "system.memory.actual.used.pct"}}}}
            headers = {"Content-Type": "application/json", **({"Authorization": self.auth} if self.auth else {})}
            request = urllib.request.Request(f"{self.address}/{urllib.parse.quote(self.index)}/_search",
                                             data=json.dumps(body).encode(), headers=headers, method="POST")
            answer = _json(self.fetch(request))
            aggs = answer.get("aggregations") if isinstance(answer, dict) else None
            if not isinstance(aggs, dict):
                continue
            cpu, memory = (_number((aggs.get(k) or {}).get("value")) for k in ("cpu", "mem"))
            if cpu is None and memory is None:
                continue
            # Volcano stores the averages as they come (metricbeat's fields are fractions)
            out[node] = NodeUsage(cpu=cpu or 0.0, memory=memory or 0.0, at=now)
        return out


class AdaptorSource:
    """The custom metrics API (prometheus-adapter rules `node_cpu_usage_avg`, `node_memory_usage_avg`)."""

    def __init__(self, get_json: Callable[[str], Any]) -> None:
        self.get_json = get_json

    def read(self, nodes: Iterable[str], now: float) -> dict[str, NodeUsage]:
        wanted = set(nodes)
        values: dict[str, dict[str, float]] = {}
        for metric, key in (("node_cpu_usage_avg", "cpu"), ("node_memory_usage_avg", "memory")):
            answer = self.get_json(ADAPTOR_PATH.format(metric=metric))
            for item in answer.get("items", []) if isinstance(answer, dict) else []:
                name = (item.get("describedObject") or {}).get("name")
                value = _quantity_float(item.get("value"))
                if name in wanted and value is not None:
                    entry = values.setdefault(name, {})
                    entry[key] = value * 100
                    at = _rfc3339(item.get("timestamp"))
                    entry["at"] = at if at is not None else now
        return {name: NodeUsage(cpu=v.get("cpu", 0.0), memory=v.get("memory", 0.0), at=v["at"])
                for name, v in values.items()}


class NodeMetrics:
    """The latest usage of every node, refreshed every `metrics.interval` by a thread beside the sessions."""

    def __init__(self, conf: Mapping[str, str], *, fetch: Fetch | None = None,
                 get_json: Callable[[str], Any] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.conf = dict(conf)
        self.interval_s = parse_interval(conf.get("interval"))
        self.clock = clock
        self.usage: dict[str, NodeUsage] = {}
        self._lock = threading.Lock()
        kind = conf.get("type", "") or "prometheus"
        address = conf.get("address", "")
        fetch = fetch or _urlopen(conf.get("tls.insecureSkipVerify", "") == "true")
        self.source: PrometheusSource | ElasticsearchSource | AdaptorSource | None
        if kind == "prometheus_adaptor":
            self.source = AdaptorSource(get_json) if get_json is not None else None
        elif not address:
            self.source = None  # Volcano: "metrics address is empty", no client
        elif kind == "elasticsearch":
            self.source = ElasticsearchSource(address, conf, fetch)
        else:
            self.source = PrometheusSource(address, fetch)

    @property
    def enabled(self) -> bool:
        return self.source is not None

    def refresh(self, nodes: Iterable[str]) -> None:
        """Read every node once; on failure keep what was read before."""
        if self.source is None:
            return
        try:
            fresh = self.source.read(list(nodes), self.clock())
        except (MetricsError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("node metrics: %s", exc)
            return
        with self._lock:
            self.usage.update(fresh)

    def run(self, nodes: Callable[[], Iterable[str]], stop: threading.Event, *,
            first_wait: bool = False) -> threading.Thread:
        """Refresh every interval until `stop`, on a daemon thread (at once, unless `first_wait`)."""
        def loop() -> None:
            if first_wait:
                stop.wait(self.interval_s)
            while not stop.is_set():
                self.refresh(nodes())
                stop.wait(self.interval_s)
        thread = threading.Thread(target=loop, name="node-metrics", daemon=True)
        thread.start()
        return thread

    def with_usage(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """The snapshot with each node's latest usage (a node read from a dump keeps its own otherwise)."""
        with self._lock:
            usage = dict(self.usage)
        if not usage:
            return snapshot
        nodes = tuple(replace(n, usage=usage[n.name]) if n.name in usage else n for n in snapshot.nodes)
        return replace(snapshot, nodes=nodes)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError as exc:
        raise MetricsError(f"not JSON: {body[:80]!r}") from exc


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _quantity_float(value: Any) -> float | None:
    """A resource.Quantity as text (`250m`, `1`, `1500m`) as a float (AsApproximateFloat64)."""
    if value is None:
        return None
    try:
        return parse_milli_value(str(value)) / 1000.0
    except ValueError:
        return None


def _rfc3339(text: Any) -> float | None:
    return parse_rfc3339(text)
