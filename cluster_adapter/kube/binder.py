"""Bind a pod to a node through `pods/binding`, exactly once.

The Binding carries the pod's uid as a precondition and the scheduler's pod annotations (vGPU device
assignments), which the API server merges into the pod atomically with `spec.nodeName`, as Volcano's
binder does. Outcomes:

- 201: bound.
- 409: someone (maybe our own earlier try, whose answer was lost) already bound it, or the pod was
  replaced or is being deleted. The pod is read again: bound to *our* node counts as success, so a
  retried bind is never applied twice and never reported as a failure; anything else is a failure.
  When the pod cannot be read again, the bind is a failure left for the next session, which reads the
  pod from its watch (the uid precondition keeps a bind that did go through from being applied twice).
- 404: the pod is gone (deleted, or never existed: a pod derived from a vcjob the job controller has
  not created yet) — a failure the next session will not repeat.
- transient errors: retried with backoff by `retry.attempt`; when the tries run out, a failure that
  leaves the pod pending, so the next session places it again.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APIConflict, APIError, APINotFound, KubeClient


@dataclass(frozen=True, slots=True)
class BindResult:
    key: str
    node: str
    ok: bool
    reason: str = ""  # why not, for the pod's event
    error: APIError | None = None
    retry_next_session: bool = False


class Binder:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, gate: retry.Gate = retry.always,
                 on_error: Callable[[APIError], None] = lambda _: None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client, self.settings, self.gate, self.on_error = client, settings, gate, on_error
        self.sleep = sleep

    def bind(self, pod: dict[str, Any], node: str, annotations: dict[str, str] | None = None) -> BindResult:
        """Every API failure comes back as a failed BindResult, never raised: binds run in parallel, and
        one pod's failure must not hide the others' outcomes. Only `retry.NotLeader` is raised."""
        meta = pod.get("metadata") or {}
        ns, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
        key = f"{ns}/{name}"
        for _ in range(max(1, self.settings.attempts)):
            try:
                retry.attempt(lambda: self.client.bind(ns, name, uid=uid, node=node, annotations=annotations or {}),
                              settings=self.settings, gate=self.gate, on_error=self.on_error, sleep=self.sleep)
                return BindResult(key, node, True)
            except APINotFound as exc:
                return BindResult(key, node, False, f"pod {key} no longer exists", exc)
            except APIConflict as exc:
                verdict = self._after_conflict(ns, name, uid, node, key, exc)
                if verdict is not None:
                    return verdict
            except APIError as exc:
                return BindResult(key, node, False, f"binding to {node} failed: {exc}", exc, retry_next_session=True)
        return BindResult(key, node, False, f"binding to {node} kept conflicting", retry_next_session=True)

    def _after_conflict(self, ns: str, name: str, uid: str, node: str, key: str,
                        exc: APIConflict) -> BindResult | None:
        """Success, failure, or None to try again — from the pod as the server holds it now."""
        try:
            current = retry.attempt(lambda: self.client.get_pod(ns, name), settings=self.settings,
                                    gate=self.gate, on_error=self.on_error, sleep=self.sleep)
        except APINotFound as gone:
            return BindResult(key, node, False, f"pod {key} no longer exists", gone)
        except APIError as unread:
            return BindResult(key, node, False, f"binding to {node} conflicted and pod {key} could not be read "
                              f"again: {unread}", unread, retry_next_session=True)
        meta, spec = current.get("metadata") or {}, current.get("spec") or {}
        if meta.get("uid") != uid:
            return BindResult(key, node, False, f"pod {key} was replaced by another with the same name", exc)
        bound = spec.get("nodeName") or ""
        if bound == node:
            return BindResult(key, node, True)  # our earlier try went through
        if bound:
            return BindResult(key, node, False, f"pod {key} is already bound to {bound}", exc)
        if meta.get("deletionTimestamp"):
            return BindResult(key, node, False, f"pod {key} is being deleted", exc)
        return None
