"""GC controller: a finished Job with `ttlSecondsAfterFinished` is deleted that many seconds after it
finished (Volcano's gc-controller, after Kubernetes' TTL-after-finished controller).

Finished means phase Completed, Failed or Terminated (Aborted jobs can still be resumed); the
finish time is `status.state.lastTransitionTime`. A job not yet due is looked at again when it is
(a delayed work item on the controllers' clock). Just before deleting, the job is read again from
the API, so a TTL raised meanwhile is honoured. The job is deleted with `propagationPolicy:
Foreground` and a uid precondition; its pods and PodGroup (owned through ownerReferences) are
deleted too, because not every API server runs a garbage collector (the test emulator does not).
"""
from __future__ import annotations

from typing import Any

from cluster_adapter.controllers.api import JOBS, PODGROUPS, PODS
from cluster_adapter.timestamps import parse_rfc3339
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import APINotFound

FINISHED = frozenset({"Completed", "Failed", "Terminated"})


@register
class GarbageCollector(Controller):
    name = "gc-controller"
    resources = (JOBS, PODS, PODGROUPS)

    def setup(self, options: Options) -> None:
        options.store.on(JOBS.name, self._on_job)

    def key_of(self, item: Any) -> str:
        return "/".join(item)

    def _on_job(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event != "DELETED" and expires_at(obj) is not None:
            self.work.add((obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def process(self, item: Any) -> None:
        namespace, name = item
        store, api, now = self.opts.store, self.opts.api, self.opts.clock.now()
        job = store.get(JOBS.name, namespace, name)
        if job is None or (due := expires_at(job)) is None:
            return
        if due > now:
            self.work.add_after(item, due - now)
            return
        try:
            fresh = api.get(JOBS, namespace, name)
        except APINotFound:
            return
        due = expires_at(fresh)
        if due is None:
            return
        if due > now:
            self.work.add_after(item, due - now)
            return
        uid = fresh["metadata"].get("uid", "")
        api.delete(JOBS, namespace, name, uid=uid, propagation="Foreground")
        for res in (PODS, PODGROUPS):
            for owned in store.owned_by(res.name, namespace, uid):
                api.delete(res, namespace, owned["metadata"]["name"])
        self.opts.events.event(fresh, "Normal", "Deleted",
                               f"job {namespace}/{name} deleted {job['spec'].get('ttlSecondsAfterFinished')} s "
                               "after it finished (ttlSecondsAfterFinished)")


def expires_at(job: dict[str, Any]) -> float | None:
    """When the job is due for deletion, or None (no TTL, not finished, or being deleted)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    state = (job.get("status") or {}).get("state") or {}
    if ttl is None or state.get("phase") not in FINISHED or job["metadata"].get("deletionTimestamp"):
        return None
    finished = parse_rfc3339(state.get("lastTransitionTime"))
    if finished is None:
        return None
    return finished + float(ttl)
