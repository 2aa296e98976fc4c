"""Volcano's well-known label, annotation and object names, in one place for all controllers.

Values are Volcano's own (`volcano.sh/apis`), so pods and PodGroups made here are read by Volcano's
scheduler, `vcctl` and our loader (`vpolicy.load.vcjob`) alike.
"""
from __future__ import annotations

from typing import Any

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
JOB_KIND = "Job"
CRONJOB_KIND = "CronJob"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"

JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
JOB_VERSION_KEY = "volcano.sh/job-version"
POD_TEMPLATE_KEY = "volcano.sh/template-uid"
GROUP_NAME_KEY = "scheduling.k8s.io/group-name"

# Copied from the job onto its pods (createJobPod).
PREEMPTABLE_KEY = "volcano.sh/preemptable"
REVOCABLE_ZONE_KEY = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE_KEY = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY = "volcano.sh/jdb-max-unavailable"

# The PodGroup controller reads these on plain pods (and their owners).
PG_QUEUE_NAME_KEY = "scheduling.volcano.sh/queue-name"
PG_MIN_MEMBER_KEY = "scheduling.volcano.sh/group-min-member"

# The CronJob controller stamps each Job it creates with the schedule time it was created for.
CRONJOB_SCHEDULED_TIMESTAMP_KEY = "batch.volcano.sh/cronjob-scheduled-timestamp"

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3  # the job webhook's default


def owner_reference(obj: dict[str, Any], *, api_version: str, kind: str,
                    controller: bool = True) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {"apiVersion": api_version, "kind": kind, "name": meta.get("name", ""), "uid": meta.get("uid", ""),
            "controller": controller, "blockOwnerDeletion": True}


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with `controller: true`, if any (metav1.GetControllerOf)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def controlled_by(obj: dict[str, Any], *, kind: str, api_version: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("kind") == kind and ref.get("apiVersion") == api_version
