"""Events about controller objects (Jobs, Queues, CronJobs, PodGroups), best effort and not repeated.

Built the way client-go's recorder writes core/v1 Events (`source.component: vc-controller-manager`)
and written through the adapter's `EventRecorder`, which drops an event identical to the last one
for the same object and never retries or fails the caller.
"""
from __future__ import annotations

import time
from typing import Any

from cluster_adapter.config import ApplySettings
from cluster_adapter.controllers.clock import Clock
from cluster_adapter.timestamps import rfc3339
from cluster_adapter.kube import retry
from cluster_adapter.kube.client import KubeClient
from cluster_adapter.kube.events import EventRecorder

COMPONENT = "vc-controller-manager"


class Recorder:
    def __init__(self, client: KubeClient, settings: ApplySettings, *, clock: Clock,
                 gate: retry.Gate = retry.always) -> None:
        self.clock = clock
        self._recorder = EventRecorder(client, settings, clock=time.monotonic, gate=gate)

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> bool:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        stamp = rfc3339(self.clock.now())
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                               "namespace": str(meta.get("namespace") or ""), "name": meta.get("name", ""),
                               "uid": meta.get("uid", "")},
            "reason": reason, "message": message[:1024], "type": event_type,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        try:
            return self._recorder.record(f"{meta.get('uid') or meta.get('name')}/{reason}", event)
        except retry.NotLeader:
            return False
