"""The resources the emulator serves, declared the way the real API server and Volcano's CRDs declare them.

PodGroup has **no** status subresource (Volcano's CRD: `subresources: {}`), so its status is written
through the main endpoint; Queue, vcjob, CronJob, Pod, Node, Namespace, Service and PodDisruptionBudget
have one. Services, Secrets, NetworkPolicies and `bus.volcano.sh` Commands are what the controller
manager's job plugins and commands write (tests/controllers).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    # Field selectors the real server accepts besides metadata.name / metadata.namespace.
    fields: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return f"{self.group}/{self.version}/{self.plural}"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


_POD_FIELDS = ("spec.nodeName", "spec.schedulerName", "spec.serviceAccountName", "spec.restartPolicy",
               "status.phase", "status.podIP", "status.nominatedNodeName", "spec.hostNetwork")
_EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                 "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")

RESOURCES: tuple[Kind, ...] = (
    Kind("", "v1", "nodes", "Node", False, frozenset({"status"}), ("spec.unschedulable",)),
    Kind("", "v1", "pods", "Pod", True, frozenset({"status", "binding", "eviction"}), _POD_FIELDS),
    Kind("", "v1", "namespaces", "Namespace", False, frozenset({"status"}), ("status.phase",)),
    Kind("", "v1", "events", "Event", True, frozenset(), _EVENT_FIELDS),
    Kind("", "v1", "configmaps", "ConfigMap", True),
    Kind("", "v1", "services", "Service", True, frozenset({"status"})),
    Kind("", "v1", "secrets", "Secret", True, frozenset(), ("type",)),
    Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True),
    Kind("bus.volcano.sh", "v1alpha1", "commands", "Command", True),
    Kind("events.k8s.io", "v1", "events", "Event", True),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, frozenset({"status"})),
    Kind("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, frozenset({"status"})),
    Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, frozenset()),
    Kind("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, frozenset({"status"})),
    Kind("batch.volcano.sh", "v1alpha1", "cronjobs", "CronJob", True, frozenset({"status"})),
    Kind("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, frozenset({"status"})),
    Kind("", "v1", "persistentvolumes", "PersistentVolume", False, frozenset({"status"})),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, frozenset({"status"})),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    Kind("storage.k8s.io", "v1", "csinodes", "CSINode", False),
)

BY_KEY: dict[str, Kind] = {k.key: k for k in RESOURCES}
BY_KIND: dict[tuple[str, str], Kind] = {(k.api_version, k.kind): k for k in RESOURCES}
