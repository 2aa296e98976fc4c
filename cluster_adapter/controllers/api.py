"""The writes and direct reads controllers make, through the adapter's client, with retries and the
leader gate; every answer is recorded in the store so the next read sees our own write.

Thin by design: the calls are `cluster_adapter.kube.client.KubeClient`'s generic object calls; this
adds the resources only controllers touch (Services, Secrets, NetworkPolicies, Commands, CronJobs),
`retry.attempt` (transient errors retried with backoff, only while we hold the lease) and the
store feedback. What a 404 or 409 means is the caller's decision, except `delete`, for which
"already gone" is success.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.controllers.clock import Clock
from cluster_adapter.controllers.store import Store
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import (EVENTS, MERGE_PATCH, NAMESPACES, NODES, PODGROUPS, PODS, PRIORITY_CLASSES,
                                         QUEUES, VCJOBS, APIError, APINotFound, KubeClient, Resource)

SERVICES = Resource("services", "v1", "Service", "services", True)
SECRETS = Resource("secrets", "v1", "Secret", "secrets", True)
CONFIGMAPS = Resource("configmaps", "v1", "ConfigMap", "configmaps", True)
NETWORK_POLICIES = Resource("networkpolicies", "networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True)
COMMANDS = Resource("commands", "bus.volcano.sh/v1alpha1", "Command", "commands", True, optional=True)
CRONJOBS = Resource("cronjobs", "batch.volcano.sh/v1alpha1", "CronJob", "cronjobs", True, optional=True)
JOBS = Resource(VCJOBS.name, VCJOBS.api_version, VCJOBS.kind, VCJOBS.plural, True)  # required for controllers

__all__ = ["Api", "COMMANDS", "CONFIGMAPS", "CRONJOBS", "EVENTS", "JOBS", "NAMESPACES", "NETWORK_POLICIES", "NODES",
           "PODGROUPS", "PODS", "PRIORITY_CLASSES", "QUEUES", "SECRETS", "SERVICES"]


class Api:
    def __init__(self, client: KubeClient, store: Store, settings: ApplySettings, *, clock: Clock,
                 gate: retry.Gate = retry.always, on_error: Callable[[APIError], None] = lambda _: None) -> None:
        self.client, self.store, self.settings, self.clock = client, store, settings, clock
        self.gate, self.on_error = gate, on_error
        self.writes = 0

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        obj = self._try(lambda: self.client.get_object(res, namespace, name))
        self._stamp(res, obj)
        self.store.record(res.name, obj)
        return obj

    def create(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        namespace = str((obj.get("metadata") or {}).get("namespace") or "") if res.namespaced else ""
        return self._written(res, lambda: self.client.create_object(res, namespace, obj))

    def replace(self, res: Resource, obj: dict[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        return self._written(res, lambda: self.client.replace_object(
            res, str(meta.get("namespace") or ""), str(meta.get("name")), obj, subresource=subresource))

    def patch(self, res: Resource, namespace: str, name: str, patch: Any, *, subresource: str | None = None,
              content_type: str = MERGE_PATCH) -> dict[str, Any]:
        return self._written(res, lambda: self.client.patch_object(res, namespace, name, patch,
                                                                   subresource=subresource,
                                                                   content_type=content_type))

    def delete(self, res: Resource, namespace: str, name: str, *, uid: str | None = None,
               propagation: str | None = None) -> bool:
        """True if deleted now, False if it was already gone."""
        try:
            self._try(lambda: self.client.delete_object(res, namespace, name, uid=uid, propagation=propagation))
        except APINotFound:
            self.store.forget(res.name, namespace, name)
            return False
        self.writes += 1
        self.store.mark_deleting(res.name, namespace, name, self.clock.now())
        return True

    def _written(self, res: Resource, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        obj = self._try(call)
        self.writes += 1
        self._stamp(res, obj)
        self.store.record(res.name, obj)
        return obj

    def _try(self, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        return retry.attempt(call, settings=self.settings, gate=self.gate, on_error=self.on_error)

    @staticmethod
    def _stamp(res: Resource, obj: dict[str, Any]) -> None:
        if obj:
            obj.setdefault("apiVersion", res.api_version)
            obj.setdefault("kind", res.kind)
