"""Regression tests: admission rules where vpolicy disagreed with Volcano's webhooks
(volcano-sh/volcano pkg/webhooks/admission/...), each test citing the Volcano source it follows."""
from __future__ import annotations

from typing import Any

import pytest

from vpolicy.admission import common, jobs, queues


def job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"queue": "default", "tasks": [{"name": "worker", "replicas": 2, "template": {}}]}
    base.update(spec)
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": base}


def codes(violations: list[common.Violation]) -> list[str]:
    return [v.code for v in violations]


def test_job_min_available_zero_is_defaulted_to_the_sum() -> None:
    """jobs/mutate `patchDefaultMinAvailable`: `if job.Spec.MinAvailable == 0 { ... sum of the tasks'
    minAvailable (or replicas) }` -- an explicit 0 is the Go zero value and is defaulted like an unset one."""
    out = jobs.default_job({"spec": {"minAvailable": 0, "tasks": [{"name": "a", "replicas": 3},
                                                                  {"name": "b", "replicas": 2, "minAvailable": 1}]}})
    assert out["spec"]["minAvailable"] == 4
    kept = jobs.default_job({"spec": {"minAvailable": 2, "tasks": [{"name": "a", "replicas": 3}]}})
    assert kept["spec"]["minAvailable"] == 2


@pytest.mark.parametrize("policy", [
    pytest.param({"event": "OutOfSync", "action": "RestartJob"}, id="OutOfSync"),
    pytest.param({"event": "CommandIssued", "action": "RestartJob"}, id="CommandIssued"),
    pytest.param({"event": "PodRunning", "action": "RestartJob"}, id="PodRunning"),
])
def test_internal_policy_events_are_refused(policy: dict[str, Any]) -> None:
    """jobs/validate util.go `policyEventMap`: OutOfSync, CommandIssued and PodRunning are `false`
    ("whether to allow external use") -> "invalid policy event"."""
    assert codes(jobs.validate_job(job(policies=[policy]))) == ["admission.policy-event"]


@pytest.mark.parametrize("action", ["SyncJob", "EnqueueJob"])
def test_internal_policy_actions_are_refused(action: str) -> None:
    """jobs/validate util.go `policyActionMap`: SyncJob and EnqueueJob are `false` -> "invalid policy action"."""
    assert codes(jobs.validate_job(job(policies=[{"event": "PodFailed", "action": action}]))) == \
        ["admission.policy-action"]


def test_user_events_and_actions_stay_valid() -> None:
    """policyEventMap / policyActionMap entries marked `true` are still admitted."""
    policies = [{"event": e, "action": "RestartPod" if e == "PodPending" else "AbortJob"}
                for e in ("PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed",
                          "JobUpdated")]
    assert jobs.validate_job(job(policies=policies)) == []


def test_any_event_beside_an_exit_code_policy_is_admitted() -> None:
    """util.go `validatePolicies`: the `*` rule is `policyEvents[AnyEvent] found && len(policyEvents) > 1`,
    counting distinct *events*; an exitCode policy adds no event, so `*` plus an exitCode policy is valid."""
    policies = [{"event": "*", "action": "RestartJob"}, {"exitCode": 3, "action": "AbortJob"}]
    assert jobs.validate_job(job(policies=policies)) == []


def test_any_event_beside_another_event_in_the_same_policy_is_refused() -> None:
    """util.go `validatePolicies`: `events: ["*", "PodFailed"]` in one policy makes len(policyEvents) == 2."""
    assert codes(jobs.validate_job(job(policies=[{"events": ["*", "PodFailed"], "action": "RestartJob"}]))) == \
        ["admission.policy-any-not-alone"]


def test_an_event_named_twice_in_one_policy_is_not_a_duplicate() -> None:
    """util.go `getEventList` merges `events` and `event` through `removeDuplicates`; only a repeat
    across policies is "duplicate event ... across different policy"."""
    policy = {"event": "PodFailed", "events": ["PodFailed"], "action": "RestartJob"}
    assert jobs.validate_job(job(policies=[policy])) == []


def test_volume_with_both_claim_and_claim_name_is_refused() -> None:
    """util.go `validateIO`: `if len(volume.VolumeClaimName) != 0 { if volume.VolumeClaim != nil { "conflict:
    If you want to use an existing PVC, just specify VolumeClaimName..." } }`."""
    volume = {"mountPath": "/d", "volumeClaimName": "data", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}
    assert codes(jobs.validate_job(job(volumes=[volume]))) == ["admission.volume-claim"]
    assert jobs.validate_job(job(volumes=[{"mountPath": "/d", "volumeClaimName": "data"}])) == []
    assert jobs.validate_job(job(volumes=[{"mountPath": "/d", "volumeClaim": {}}])) == []


def test_update_filling_the_claim_name_of_a_created_claim_is_admitted() -> None:
    """admit_job.go `validateJobUpdate`: "job controller will update the pvc name if not provided" -- for a
    volume with a VolumeClaim, VolumeClaimName is blanked on both sides before the DeepEqual."""
    old = job(volumes=[{"mountPath": "/d", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}])
    new = job(volumes=[{"mountPath": "/d", "volumeClaim": {"accessModes": ["ReadWriteOnce"]},
                        "volumeClaimName": "j-volume-abc"}])
    assert jobs.validate_job(new, old=old) == []
    moved = job(volumes=[{"mountPath": "/e", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}}])
    assert codes(jobs.validate_job(moved, old=old)) == ["admission.job-update"]


def queue(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "q"}, "spec": {"weight": 1, **spec}}


def test_deserved_naming_cpu_or_memory_missing_from_capability_is_refused() -> None:
    """queues/validate `validateResourceOfQueue`: `capabilityResource.LessPartly(deservedResource, api.Zero)`
    -- a memory absent from capability is 0 there; Volcano's e2e "Should reject queue creation with deserved
    resource type not in capability" (capability cpu 10, deserved cpu 5 + memory 10Gi)."""
    assert codes(queues.validate_queue(queue(capability={"cpu": "10"}, deserved={"cpu": "5", "memory": "10Gi"}))) \
        == ["admission.queue-resources"]
    assert codes(queues.validate_queue(queue(capability={"cpu": "10"}, guarantee={"resource": {"memory": "1Gi"}},
                                             deserved={"memory": "1Gi"}))) == \
        ["admission.queue-resources", "admission.queue-resources"]  # deserved and guarantee above capability
    assert queues.validate_queue(queue(deserved={"cpu": "5", "memory": "10Gi"})) == []  # no capability: no check


def test_guarantee_without_deserved_is_refused() -> None:
    """queues/validate `validateResourceOfQueue`: `len(Guarantee.Resource) != 0 &&
    deservedResource.LessPartly(guaranteeResource, api.Zero)` -> "guarantee should less equal than deserved";
    validate_queue_test.go's onlyGuaranteeSet case expects exactly that refusal."""
    [violation] = queues.validate_queue(queue(guarantee={"resource": {"cpu": "1", "memory": "1Gi"}}))
    assert violation.code == "admission.queue-resources" and violation.field == "spec.guarantee"
    assert queues.validate_queue(queue(guarantee={"resource": {"cpu": "1"}}, deserved={"cpu": "1"})) == []


def test_negative_queue_quantities_are_refused() -> None:
    """queues/validate `validateResourceOfQueue`: `k8scorevalid.ValidateResourceQuantityValue` on every
    capability / deserved / guarantee quantity ("must be greater than or equal to 0")."""
    assert codes(queues.validate_queue(queue(capability={"cpu": "-1"}))) == ["admission.queue-quantity"]
    assert codes(queues.validate_queue(queue(deserved={"nvidia.com/gpu": "-2"}))) == ["admission.queue-quantity"]


def test_hierarchy_already_starting_with_root_is_not_prefixed() -> None:
    """queues/mutate `createQueuePatch`: prefixes only when `!strings.HasPrefix(hierarchy, "root")`."""
    out = queues.default_queue({"metadata": {"name": "root", "annotations": {"volcano.sh/hierarchy": "root",
                                                                            "volcano.sh/hierarchy-weights": "1"}}})
    assert out["metadata"]["annotations"] == {"volcano.sh/hierarchy": "root", "volcano.sh/hierarchy-weights": "1"}
