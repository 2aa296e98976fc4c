"""Evict a pod through the `policy/v1` Eviction API, honouring PodDisruptionBudgets.

The Eviction carries the pod's uid as a precondition. 201: the API server deletes the pod (with its
grace period). 404: it is already gone — the goal is met. 429: a PodDisruptionBudget forbids the
disruption *now*; it is not retried within the session (hammering a PDB helps nobody): the victim
stays, and the next session decides again with fresh state. Other transient errors are retried with
backoff. 409: the pod was replaced; nothing to evict.

Volcano itself deletes victims directly (no PDB check); going through the Eviction API is the
deliberate difference (DESIGN §8).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import APIConflict, APIError, APINotFound, APITooManyRequests, KubeClient


@dataclass(frozen=True, slots=True)
class EvictResult:
    key: str
    ok: bool
    blocked: bool = False  # a PodDisruptionBudget said no
    reason: str = ""
    error: APIError | None = None


class _Blocked(APIError):
    """A 429 from a PodDisruptionBudget: final for this session (not transient)."""


class Evictor:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, gate: retry.Gate = retry.always,
                 on_error: Callable[[APIError], None] = lambda _: None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client, self.settings, self.gate, self.on_error = client, settings, gate, on_error
        self.sleep = sleep

    def evict(self, pod: dict[str, Any]) -> EvictResult:
        meta = pod.get("metadata") or {}
        ns, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
        key = f"{ns}/{name}"

        def once() -> None:
            try:
                self.client.evict(ns, name, uid=uid)
            except APITooManyRequests as exc:
                if _is_budget(exc):
                    raise _Blocked(str(exc), status=429, reason=exc.reason, verb=exc.verb) from exc
                raise

        try:
            retry.attempt(once, settings=self.settings, gate=self.gate, on_error=self.on_error, sleep=self.sleep)
            return EvictResult(key, True)
        except APINotFound:
            return EvictResult(key, True, reason="already gone")
        except _Blocked as exc:
            return EvictResult(key, False, blocked=True, reason=f"a PodDisruptionBudget forbids evicting {key} now",
                               error=exc)
        except APIConflict as exc:
            return EvictResult(key, False, reason=f"pod {key} was replaced", error=exc)
        except APIError as exc:
            return EvictResult(key, False, reason=f"evicting {key} failed: {exc}", error=exc)


def _is_budget(exc: APITooManyRequests) -> bool:
    causes = exc.details.get("causes") if exc.details else None
    if isinstance(causes, list) and any(isinstance(c, dict) and c.get("reason") == "DisruptionBudget" for c in causes):
        return True
    return "disruption budget" in str(exc).lower()
