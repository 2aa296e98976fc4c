"""The colocation agent against the Kubernetes API: read the Node, the pods and the ConfigMap, write back.

`ColocationApi` is the calls it makes: the GPU agent's five (`gpu_agent.api.NodeApi`) plus listing the
pods of one node (a field selector), reading a ConfigMap and evicting a pod through the Eviction API (so PodDisruptionBudgets are honoured; a 429 is
reported and the pod retried on a later pass). `KubernetesColocationApi` adds those two calls to the
GPU agent's client class.

`run_once` is one pass: read, merge the configuration for this node (a ConfigMap that does not parse or
validate is reported, and the last good one, or Volcano's defaults at start, stays in force, as
Volcano's config manager keeps its previous config), tick, then write the node's annotations and status
and evict. `Report` says what was written and what failed.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from cluster_adapter.colocation import config
from cluster_adapter.colocation.agent import ColocationAgent, Tick
from cluster_adapter.gpu_agent.api import ApiFailure, KubernetesNodeApi, NodeApi

log = logging.getLogger("vpolicy.agent.colocation")


class ColocationApi(NodeApi, Protocol):
    def list_node_pods(self, node: str) -> list[dict[str, Any]]: ...

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def evict_pod(self, namespace: str, name: str) -> None: ...


class KubernetesColocationApi(KubernetesNodeApi):
    def list_node_pods(self, node: str) -> list[dict[str, Any]]:
        """The pods bound to `node` only (a field selector: a DaemonSet on every node must not list the
        whole cluster each pass)."""
        found = self._call("list pods", lambda: self.core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node}", _preload_content=False, _request_timeout=self.timeout_s))
        return list(found.get("items", []))

    def get_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call("get configmap", lambda: self.core.read_namespaced_config_map(
                name, namespace, _preload_content=False, _request_timeout=self.timeout_s))
        except ApiFailure as exc:
            if getattr(exc.__cause__, "status", None) == 404:
                return None
            raise

    def evict_pod(self, namespace: str, name: str) -> None:
        # a plain dict: the client serialises it as it is (its V1Eviction model would only be turned back into one)
        body: Any = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        self._call(f"evict pod {namespace}/{name}", lambda: self.core.create_namespaced_pod_eviction(
            name, namespace, body, _preload_content=False, _request_timeout=self.timeout_s))


@dataclass(slots=True)
class Report:
    tick: Tick | None
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ConfigSource:
    """The ConfigMap's document, keeping the last good one when a new one is refused."""

    def __init__(self, namespace: str = config.DEFAULT_NAMESPACE, name: str = config.CONFIG_MAP_NAME):
        self.namespace, self.name = namespace, name
        self.good: dict[str, Any] | None = None

    def read(self, api: ColocationApi, node: dict[str, Any], problems: list[str]) -> config.ColocationConfig:
        where = f"configmap {self.namespace}/{self.name}"
        cm = api.get_config_map(self.namespace, self.name)
        text = ((cm or {}).get("data") or {}).get(config.CONFIG_KEY) if cm else None
        try:
            document = config.parse_document(text) if text is not None else {}
            effective = config.for_node(document, node)
            self.good = document
            return effective
        except config.ConfigError as exc:
            problems.extend(f"{where}: {p}" for p in exc.problems)
            return config.for_node(self.good, node)  # the last good one; the defaults always validate


def run_once(agent: ColocationAgent, api: ColocationApi, source: ConfigSource, *, now: float) -> Report:
    name = agent.settings.node
    node = api.get_node(name)
    problems: list[str] = []
    cfg = source.read(api, node, problems)
    tick = agent.tick(node, api.list_node_pods(name), cfg, now=now)
    tick.problems[:0] = problems
    report = Report(tick)
    if tick.annotations:
        _try(report, "annotate node", lambda: api.patch_node(name, {"metadata": {"annotations": tick.annotations}}))
    if tick.status:
        _try(report, "publish batch resources", lambda: api.patch_node_status(name, {"status": tick.status}))
    for eviction in tick.evictions:
        pod = eviction.pod
        _try(report, f"evict {pod.key} ({eviction.reason})", lambda: api.evict_pod(pod.namespace, pod.name))
    report.written += [str(w) for w in tick.writes]
    return report


def run(agent: ColocationAgent, api: ColocationApi, source: ConfigSource, *, clock: Callable[[], float],
        period_s: float, stop: threading.Event, once: bool = False, metrics: Any = None) -> int:
    """Passes every `period_s` until `stop` (one with `once`); `metrics` (metrics.AgentMetrics) observes each."""
    while True:
        try:
            report = run_once(agent, api, source, now=clock())
            if metrics is not None:
                metrics.observe(report, quota_milli=agent.last_quota_milli)
            if report.tick is not None:
                for line in report.tick.notes:
                    log.info("%s", line)
                for line in report.tick.problems:
                    log.warning("%s", line)
            for line in report.written:
                log.info("%s", line)
            for line in report.errors:
                log.warning("%s", line)
            if once and report.tick is not None and report.tick.problems:
                return 1
        except ApiFailure as exc:
            log.error("%s", exc)
            if metrics is not None:
                metrics.observe(None, quota_milli=agent.last_quota_milli, error=str(exc))
            if once:
                return 1
        if once or stop.wait(period_s):
            return 0


def _try(report: Report, verb: str, call: Callable[[], None]) -> None:
    try:
        call()
        report.written.append(verb)
    except ApiFailure as exc:
        report.errors.append(str(exc))
