"""Write what a session concluded onto the objects: PodGroup status, Queue status, pod conditions and
nominated nodes.

- **PodGroup**: the CRD has no status subresource, so the whole `status` goes through the main
  endpoint as a merge patch carrying the resourceVersion it was computed from (the list of
  conditions is replaced whole, as merge patches replace lists). A 409 means the object moved on:
  read it again, recompute from the fresh copy, try again — unless the copy has another uid: the
  PodGroup was deleted and created again under its name (a vcjob restart), and a status computed for
  the old one must not land on the new one. 404: the PodGroup is not in the API (derived from a vcjob
  the controller has not processed): nothing to write.
- **Queue**: `status` subresource, merge patch of only the fields that changed (allocated as
  quantities, the podgroup counters; never `state`, which the queue controller owns — see
  `convert.queue_status`).
- **Pod** `status`: the PodScheduled=False condition of a pod not bound, and the nominatedNodeName of
  a preemptor, in one strategic merge patch (conditions merge by `type`, so other conditions stay).

Nothing is written when nothing changed, so a quiet cluster sees no writes. Each write returns the
server's new object, which the caller may feed back into its cache. Other API errors are raised: the
caller reports them and goes on with its other writes.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APIConflict, APIError, APINotFound, KubeClient

StatusFor = Callable[[dict[str, Any]], dict[str, Any] | None]  # current object -> status to write, None = no change


class StatusWriter:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, gate: retry.Gate = retry.always,
                 on_error: Callable[[APIError], None] = lambda _: None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client, self.settings, self.gate, self.on_error = client, settings, gate, on_error
        self.sleep = sleep

    def podgroup(self, current: dict[str, Any], status_for: StatusFor) -> dict[str, Any] | None:
        """Write `status_for(current)`; on conflict re-read and recompute. Returns the new object, if
        written; None when nothing changed, the PodGroup is gone, or it was replaced by another one."""
        meta = current.get("metadata") or {}
        ns, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid")
        obj = current
        for _ in range(max(1, self.settings.attempts)):
            status = status_for(obj)
            if status is None:
                return None
            patch = {"metadata": {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion")},
                     "status": status}
            try:
                return retry.attempt(lambda: self.client.patch_podgroup(ns, name, patch), settings=self.settings,
                                     gate=self.gate, on_error=self.on_error, sleep=self.sleep)
            except APINotFound:
                return None
            except APIConflict:
                try:
                    obj = retry.attempt(lambda: self.client.get_podgroup(ns, name), settings=self.settings,
                                        gate=self.gate, on_error=self.on_error, sleep=self.sleep)
                except APINotFound:
                    return None
                if (obj.get("metadata") or {}).get("uid") != uid:
                    return None  # re-created under the same name: not the object the status was computed for
        raise APIConflict(f"podgroup {ns}/{name}: status kept conflicting", status=409)

    def queue(self, name: str, changes: dict[str, Any]) -> dict[str, Any] | None:
        if not changes:
            return None
        try:
            return retry.attempt(lambda: self.client.patch_queue_status(name, {"status": changes}),
                                 settings=self.settings, gate=self.gate, on_error=self.on_error, sleep=self.sleep)
        except APINotFound:
            return None  # root/default exist only in the snapshot until Volcano's controllers create them

    def pod(self, namespace: str, name: str, changes: dict[str, Any]) -> dict[str, Any] | None:
        """Patch a pod's status with `changes` (`convert.pod_status_changes`); None when there are none
        or the pod is gone."""
        if not changes:
            return None
        try:
            return retry.attempt(lambda: self.client.patch_pod_status(namespace, name, {"status": changes}),
                                 settings=self.settings, gate=self.gate, on_error=self.on_error, sleep=self.sleep)
        except APINotFound:
            return None
