"""PodGroup controller: a plain pod of our scheduler without a group gets a PodGroup of its own.

A pod whose `schedulerName` is one of ours (`--scheduler-name`, default volcano), that names no
group (`scheduling.k8s.io/group-name`) and has not finished gets the PodGroup `podgroup-<uid>` — the
uid of its controller owner (a ReplicaSet's pods share one group) or its own — with:

- `minMember` from the pod's `scheduling.volcano.sh/group-min-member` annotation (default 1);
- `queue` from its `scheduling.volcano.sh/queue-name` annotation (default `default`);
- `priorityClassName` from the pod, `minResources` = the pod's requests × minMember;
- the owner's ownerReference (or one to the pod), so the group goes when its workload goes;
- Volcano's scheduling annotations copied from the pod (preemptable, revocable zone, jdb-*);

and the pod is annotated with the group's name. Pods made by the job controller always carry a
group and are never touched here. Owner annotations (`--inherit-owner-annotations`) are read only
from the pod itself: this controller does not watch workloads.
"""
from __future__ import annotations

from typing import Any

from cluster_adapter.controllers import names, quantities
from cluster_adapter.controllers.api import PODGROUPS, PODS
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import APIConflict, APINotFound, STRATEGIC_PATCH

_COPIED = (names.PREEMPTABLE_KEY, names.REVOCABLE_ZONE_KEY, names.JDB_MIN_AVAILABLE_KEY,
           names.JDB_MAX_UNAVAILABLE_KEY, names.PG_QUEUE_NAME_KEY, names.PG_MIN_MEMBER_KEY)


@register
class PodGroupController(Controller):
    name = "pg-controller"
    resources = (PODS, PODGROUPS)

    def setup(self, options: Options) -> None:
        options.store.on(PODS.name, self._on_pod)

    def key_of(self, item: Any) -> str:
        return "/".join(item)

    def _on_pod(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event != "DELETED" and self._wants_group(obj):
            self.work.add((obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def _wants_group(self, pod: dict[str, Any]) -> bool:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        return (spec.get("schedulerName") in self.opts.settings.scheduler_names
                and not (meta.get("annotations") or {}).get(names.GROUP_NAME_KEY)
                and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and not meta.get("deletionTimestamp"))

    def process(self, item: Any) -> None:
        namespace, pod_name = item
        store, api = self.opts.store, self.opts.api
        pod = store.get(PODS.name, namespace, pod_name)
        if pod is None or not self._wants_group(pod):
            return
        meta = pod["metadata"]
        owner = names.controller_of(pod)
        group_name = f"podgroup-{owner['uid'] if owner else meta.get('uid', '')}"
        if store.get(PODGROUPS.name, namespace, group_name) is None:
            try:
                api.create(PODGROUPS, podgroup_for(pod, group_name))
            except APIConflict:
                pass  # another pod of the same owner made it
        try:
            api.patch(PODS, namespace, pod_name, {"metadata": {"annotations": {names.GROUP_NAME_KEY: group_name}}},
                      content_type=STRATEGIC_PATCH)
        except APINotFound:
            return


def podgroup_for(pod: dict[str, Any], group_name: str) -> dict[str, Any]:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    try:
        min_member = max(1, int(annotations.get(names.PG_MIN_MEMBER_KEY, "1")))
    except ValueError:
        min_member = 1
    owner = names.controller_of(pod)
    reference = dict(owner) if owner else names.owner_reference(pod, api_version="v1", kind="Pod")
    group_spec: dict[str, Any] = {
        "minMember": min_member,
        "queue": annotations.get(names.PG_QUEUE_NAME_KEY) or names.DEFAULT_QUEUE,
        "minResources": quantities.scaled(quantities.pod_requests(spec), min_member),
    }
    if spec.get("priorityClassName"):
        group_spec["priorityClassName"] = spec["priorityClassName"]
    return {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup",
            "metadata": {"name": group_name, "namespace": meta.get("namespace", ""), "ownerReferences": [reference],
                         "annotations": {k: v for k, v in annotations.items() if k in _COPIED}},
            "spec": group_spec, "status": {"phase": "Pending"}}
