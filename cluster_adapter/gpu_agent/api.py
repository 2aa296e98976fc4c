"""The agent's loop against the Kubernetes API: read the Node and the pods, write what a tick decided.

`NodeApi` is the five calls the agent makes (get the Node, patch its metadata and its status, list pods,
patch a pod); `KubernetesNodeApi` makes them with the official client (JSON in and out,
`_preload_content=False`). The agent keeps its own small client here instead of the scheduler's
`cluster_adapter.kube` because that layer does not yet have Node and pod patch calls; when it does,
`KubernetesNodeApi` is the one class to replace (kubernetes is imported lazily, only by it).

`run_once` is one tick: decide (`Agent.tick`), register the node, patch every handled pod, release the
node lock once pods are handed out, and write each container's environment to `env_dir` (one
`<ns>_<pod>_<container>.env` file per container) when one is given. `run` repeats it every period.
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from cluster_adapter.gpu_agent.agent import Agent, Tick
from vpolicy.model import gpu

log = logging.getLogger("vpolicy.agent")


class ApiFailure(Exception):
    """A Kubernetes call failed (the client's error is chained)."""


class NodeApi(Protocol):
    def get_node(self, name: str) -> dict[str, Any]: ...

    def patch_node(self, name: str, patch: dict[str, Any]) -> None: ...

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None: ...

    def list_pods(self) -> list[dict[str, Any]]: ...

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None: ...


class KubernetesNodeApi:
    """NodeApi over the official `kubernetes` client, from a kubeconfig (or the in-cluster account)."""

    def __init__(self, kubeconfig: str | None, *, timeout_s: float = 30.0):
        import kubernetes.client
        import kubernetes.config

        cfg = kubernetes.client.Configuration()
        try:
            if kubeconfig:
                kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]  # reason: untyped in the client
                    config_file=kubeconfig, client_configuration=cfg)
            else:
                kubernetes.config.load_incluster_config(  # type: ignore[no-untyped-call]  # reason: as above
                    client_configuration=cfg)
        except (kubernetes.config.ConfigException, OSError, ValueError) as exc:
            raise ApiFailure(f"cannot load the cluster configuration: {exc}") from exc
        cfg.retries = 0
        self.api = kubernetes.client.ApiClient(cfg)
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.timeout_s = timeout_s
        self._errors: tuple[type[BaseException], ...] = (kubernetes.client.exceptions.ApiException, OSError)

    def _call(self, verb: str, fn: Callable[[], Any]) -> dict[str, Any]:
        try:
            response = fn()
        except self._errors as exc:
            raise ApiFailure(f"{verb}: {exc}") from exc
        data = getattr(response, "data", b"")
        return json.loads(data) if data else {}

    def get_node(self, name: str) -> dict[str, Any]:
        return self._call("get node", lambda: self.core.read_node(name, _preload_content=False,
                                                                  _request_timeout=self.timeout_s))

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self._call("patch node", lambda: self.core.patch_node(name, patch, _preload_content=False,
                                                              _request_timeout=self.timeout_s))

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        self._call("patch node status", lambda: self.core.patch_node_status(
            name, patch, _preload_content=False, _request_timeout=self.timeout_s))

    def list_pods(self) -> list[dict[str, Any]]:
        found = self._call("list pods", lambda: self.core.list_pod_for_all_namespaces(
            _preload_content=False, _request_timeout=self.timeout_s))
        return list(found.get("items", []))

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._call("patch pod", lambda: self.core.patch_namespaced_pod(
            name, namespace, patch, _preload_content=False, _request_timeout=self.timeout_s))


@dataclass(slots=True)
class Report:
    tick: Tick
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_once(agent: Agent, api: NodeApi, *, now: float, env_dir: Path | None = None) -> Report:
    name = agent.settings.node
    node = api.get_node(name)
    tick = agent.tick(node, api.list_pods(), now=now)
    report = Report(tick)
    node_patch = tick.node_patch
    annotations = node.get("metadata", {}).get("annotations") or {}
    held = [k for k in gpu.NODE_LOCK_KEYS if k in annotations]
    if tick.pods and held:  # the pods are handed out: release the scheduler's node lock (§8.4)
        node_patch = {"metadata": {"annotations": {**node_patch["metadata"]["annotations"],
                                                   **{k: None for k in held}}}}
    writes: tuple[tuple[str, Callable[[], None]], ...] = (
        ("register node", lambda: api.patch_node(name, node_patch)),
        ("advertise resources", lambda: api.patch_node_status(name, tick.status_patch)))
    for verb, call in writes:
        try:
            call()
            report.written.append(verb)
        except ApiFailure as exc:
            report.errors.append(str(exc))
    for pod in tick.pods:
        if env_dir is not None and not pod.error:
            _write_env(env_dir, pod.namespace, pod.name, pod.containers)
        try:
            api.patch_pod(pod.namespace, pod.name, {"metadata": {"annotations": dict(pod.annotations)}})
            report.written.append(f"pod {pod.key}: bind-phase {pod.annotations.get(gpu.BIND_PHASE)}"
                                  + (f" ({pod.error})" if pod.error else ""))
        except ApiFailure as exc:
            report.errors.append(str(exc))
    return report


def run(agent: Agent, api: NodeApi, *, clock: Callable[[], float], period_s: float, stop: threading.Event,
        env_dir: Path | None = None, once: bool = False) -> int:
    while True:
        try:
            report = run_once(agent, api, now=clock(), env_dir=env_dir)
            for line in report.written:
                log.info("%s", line)
            for line in report.errors + report.tick.problems + report.tick.waiting + report.tick.mig_plan.lines():
                log.warning("%s", line)
        except ApiFailure as exc:
            log.error("%s", exc)
            if once:
                return 1
        if once or stop.wait(period_s):
            return 0


def _write_env(env_dir: Path, ns: str, name: str, containers: Any) -> None:
    env_dir.mkdir(parents=True, exist_ok=True)
    for c in containers:
        lines = [f"{k}={v}" for k, v in sorted(c.env.items())]
        (env_dir / f"{ns}_{name}_{c.name}.env").write_text("\n".join(lines) + "\n", encoding="utf-8")
