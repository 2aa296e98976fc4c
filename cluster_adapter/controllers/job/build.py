"""The PodGroup and the pods a vcjob implies (Volcano's `createOrUpdatePodGroup`, `createJobPod`).

Pure functions of the job object (plus PriorityClass values): the controller creates what they
return. Defaults are the job webhook's, applied here too so a job admitted without our webhook
behaves the same: task names `default<i>`, task minAvailable = replicas (or minPartitions *
partitionSize), job minAvailable = the sum of the tasks', queue `default`, maxRetry 3.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from cluster_adapter.controllers import names, quantities
from cluster_adapter.controllers.job.state import Facts

PARTITION_ID = "volcano.sh/partition-id"  # the pod label of a partitionPolicy sub-group


def podgroup_name(job: Mapping[str, Any]) -> str:
    meta = job.get("metadata") or {}
    return f"{meta.get('name', '')}-{meta.get('uid', '')}"


def tasks(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for index, task in enumerate((job.get("spec") or {}).get("tasks") or []):
        if isinstance(task, dict):
            task = dict(task)
            task.setdefault("name", f"default{index}")
            out.append(task)
    return out


def explicit_task_min(task: Mapping[str, Any]) -> int | None:
    if task.get("minAvailable") is not None:
        return int(task["minAvailable"])
    policy = task.get("partitionPolicy") or {}
    if policy.get("minPartitions") is not None:
        return int(policy["minPartitions"]) * int(policy.get("partitionSize") or 1)
    return None


def task_min(task: Mapping[str, Any]) -> int:
    explicit = explicit_task_min(task)
    return int(task.get("replicas") or 0) if explicit is None else explicit


def min_available(job: Mapping[str, Any]) -> int:
    spec = job.get("spec") or {}
    if spec.get("minAvailable") is not None:
        return int(spec["minAvailable"])
    return sum(task_min(t) for t in tasks(job))


def replicas(job: Mapping[str, Any]) -> int:
    return sum(int(t.get("replicas") or 0) for t in tasks(job))


def max_retry(job: Mapping[str, Any]) -> int:
    value = (job.get("spec") or {}).get("maxRetry")
    return int(value) if value else names.DEFAULT_MAX_RETRY


def queue_of(job: Mapping[str, Any]) -> str:
    return str((job.get("spec") or {}).get("queue") or names.DEFAULT_QUEUE)


def facts(job: Mapping[str, Any]) -> Facts:
    spec = job.get("spec") or {}
    explicit = {t["name"]: m for t in tasks(job) if (m := explicit_task_min(t)) is not None}
    min_success = spec.get("minSuccess")
    return Facts(min_available=min_available(job), replicas=replicas(job), max_retry=max_retry(job),
                 min_success=int(min_success) if min_success is not None else None,
                 task_min_available=explicit, total_task_min_available=sum(task_min(t) for t in tasks(job)))


def min_resources(job: Mapping[str, Any], class_values: Mapping[str, int]) -> dict[str, str]:
    """Requests of the first minAvailable pods, tasks of higher priority class first, each task's
    minAvailable before spare replicas (`calcPGMinResources`; as vpolicy.load.vcjob derives it)."""
    ranked = sorted(tasks(job), key=lambda t: -class_values.get(
        ((t.get("template") or {}).get("spec") or {}).get("priorityClassName", ""), 0))
    wanted = min_available(job)
    counts: dict[str, int] = {}
    if wanted < sum(task_min(t) for t in ranked):
        for task in ranked:
            take = min(int(task.get("replicas") or 0), wanted)
            counts[task["name"]] = take
            wanted -= take
            if wanted <= 0:
                break
    else:
        for task in ranked:
            take = min(task_min(task), wanted)
            counts[task["name"]] = take
            wanted -= take
        for task in ranked:
            take = max(min(int(task.get("replicas") or 0) - task_min(task), wanted), 0)
            counts[task["name"]] = counts.get(task["name"], 0) + take
            wanted -= take
    total: dict[str, Fraction] = {}
    for task in tasks(job):
        per_pod = quantities.pod_requests((task.get("template") or {}).get("spec") or {})
        for name, amount in per_pod.items():
            total[name] = total.get(name, Fraction(0)) + amount * counts.get(task["name"], 0)
    return quantities.render({k: v for k, v in total.items() if v})


def min_task_member(job: Mapping[str, Any]) -> dict[str, int]:
    return {t["name"]: task_min(t) for t in tasks(job)}


def podgroup_for(job: Mapping[str, Any], class_values: Mapping[str, int]) -> dict[str, Any]:
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    group_spec: dict[str, Any] = {"minMember": min_available(job), "minTaskMember": min_task_member(job),
                                  "queue": queue_of(job), "minResources": min_resources(job, class_values)}
    if spec.get("priorityClassName"):
        group_spec["priorityClassName"] = spec["priorityClassName"]
    if spec.get("networkTopology"):
        group_spec["networkTopology"] = copy.deepcopy(spec["networkTopology"])
    sub_groups = [sub_group_policy(t) for t in tasks(job) if t.get("partitionPolicy")]
    if sub_groups:
        group_spec["subGroupPolicy"] = sub_groups
    return {"apiVersion": names.PODGROUP_API_VERSION, "kind": "PodGroup",
            "metadata": {"name": podgroup_name(job), "namespace": meta.get("namespace", ""),
                         "labels": dict(meta.get("labels") or {}), "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [names.owner_reference(dict(job), api_version=names.JOB_API_VERSION,
                                                                   kind=names.JOB_KIND)]},
            "spec": group_spec, "status": {"phase": "Pending"}}


def sub_group_policy(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task's partitionPolicy as the PodGroup's subGroupPolicy entry Volcano's job controller writes:
    named after the task, selecting its pods by `volcano.sh/task-spec`, grouped by `volcano.sh/partition-id`."""
    policy = task.get("partitionPolicy") or {}
    out: dict[str, Any] = {"name": str(task["name"]), "subGroupSize": int(policy.get("partitionSize") or 1),
                           "labelSelector": {"matchLabels": {names.TASK_SPEC_KEY: str(task["name"])}},
                           "matchLabelKeys": [PARTITION_ID]}
    if policy.get("minPartitions"):
        out["minSubGroups"] = int(policy["minPartitions"])
    if policy.get("networkTopology"):
        out["networkTopology"] = copy.deepcopy(policy["networkTopology"])
    return out


def podgroup_spec_changes(group: Mapping[str, Any], job: Mapping[str, Any],
                          class_values: Mapping[str, int]) -> dict[str, Any]:
    """The spec fields of an existing PodGroup that no longer match the job (a merge patch)."""
    want = podgroup_for(job, class_values)["spec"]
    have = group.get("spec") or {}
    changes: dict[str, Any] = {}
    for key in ("minMember", "minResources", "priorityClassName"):
        if have.get(key) != want.get(key) and not (key == "priorityClassName" and not have.get(key)
                                                    and not want.get(key)):
            changes[key] = want.get(key)
    member = dict(have.get("minTaskMember") or {})
    for task, minimum in want["minTaskMember"].items():
        if member.get(task) != minimum:
            changes.setdefault("minTaskMember", {})[task] = minimum
    return changes


def pod_name(job: Mapping[str, Any], task: str, index: int) -> str:
    return f"{(job.get('metadata') or {}).get('name', '')}-{task}-{index}"


def pod_for(job: Mapping[str, Any], task: Mapping[str, Any], index: int, *, default_scheduler: str) -> dict[str, Any]:
    """The pod `<job>-<task>-<index>` before plugins (createJobPod)."""
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    template = copy.deepcopy(task.get("template") or {})
    template_meta = template.get("metadata") or {}
    job_name, namespace, task_name = meta.get("name", ""), meta.get("namespace", ""), str(task["name"])
    annotations = dict(template_meta.get("annotations") or {})
    annotations.update({
        names.TASK_SPEC_KEY: task_name, names.GROUP_NAME_KEY: podgroup_name(job), names.JOB_NAME_KEY: job_name,
        names.QUEUE_NAME_KEY: queue_of(job), names.JOB_VERSION_KEY: str(int(status.get("version") or 0)),
        names.POD_TEMPLATE_KEY: f"{job_name}-{task_name}", names.TASK_INDEX_KEY: str(index)})
    job_annotations = meta.get("annotations") or {}
    for key in (names.PREEMPTABLE_KEY, names.REVOCABLE_ZONE_KEY):
        if key in job_annotations:
            annotations[key] = job_annotations[key]
    if names.JDB_MIN_AVAILABLE_KEY in job_annotations:
        annotations[names.JDB_MIN_AVAILABLE_KEY] = job_annotations[names.JDB_MIN_AVAILABLE_KEY]
    elif names.JDB_MAX_UNAVAILABLE_KEY in job_annotations:
        annotations[names.JDB_MAX_UNAVAILABLE_KEY] = job_annotations[names.JDB_MAX_UNAVAILABLE_KEY]
    if task.get("topologyPolicy"):
        annotations["volcano.sh/numa-topology-policy"] = str(task["topologyPolicy"])
    labels = dict(template_meta.get("labels") or {})
    labels.update({names.JOB_NAME_KEY: job_name, names.TASK_SPEC_KEY: task_name, names.JOB_NAMESPACE_KEY: namespace,
                   names.QUEUE_NAME_KEY: queue_of(job), names.TASK_INDEX_KEY: str(index)})
    if names.PREEMPTABLE_KEY in (meta.get("labels") or {}):
        labels[names.PREEMPTABLE_KEY] = meta["labels"][names.PREEMPTABLE_KEY]
    size = int((task.get("partitionPolicy") or {}).get("partitionSize") or 0)
    if size > 0:
        labels[PARTITION_ID] = str(index // size)  # which sub-group of the task's partitionPolicy
    pod_spec = template.get("spec") or {}
    if not pod_spec.get("schedulerName"):
        pod_spec["schedulerName"] = spec.get("schedulerName") or default_scheduler
    _mount_job_volumes(pod_spec, spec.get("volumes") or [], job_name)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(job, task_name, index), "namespace": namespace, "labels": labels,
                         "annotations": annotations,
                         "ownerReferences": [names.owner_reference(dict(job), api_version=names.JOB_API_VERSION,
                                                                   kind=names.JOB_KIND)]},
            "spec": pod_spec}


def _mount_job_volumes(pod_spec: dict[str, Any], volumes: list[Any], job_name: str) -> None:
    """`spec.volumes[]` with a volumeClaimName: the claim mounted at mountPath in every container."""
    for index, volume in enumerate(v for v in volumes if isinstance(v, dict) and v.get("volumeClaimName")):
        name = f"{job_name}-volume-{index}"
        pod_spec.setdefault("volumes", []).append(
            {"name": name, "persistentVolumeClaim": {"claimName": volume["volumeClaimName"]}})
        for container in pod_spec.get("containers") or []:
            container.setdefault("volumeMounts", []).append({"name": name, "mountPath": volume.get("mountPath", "")})
