"""Persistent volumes as the scheduler sees them: what kube-scheduler's VolumeZone and VolumeBinding
filters read (PersistentVolume, PersistentVolumeClaim, StorageClass), as plain immutable data.

No scheduling here: `vpolicy.engine.pod_relations` resolves a pod's claims to volumes once per session,
and rules in `policies/volcano/predicates.vpol` decide through the `volume_*` built-ins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from vpolicy.model.snapshot import NodeSelectorTerm

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
# The PV labels VolumeZone compares with the node's (the beta ones also match the node's GA label).
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")
GA_LABEL = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple["NodeSelectorTerm", ...] = ()  # spec.nodeAffinity.required: ORed terms; () = none
    storage_class: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    volume_name: str = ""  # spec.volumeName: "" while unbound
    storage_class: str | None = None  # spec.storageClassName; None when unset (the default class applies)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    binding_mode: str = IMMEDIATE  # volumeBindingMode
    default: bool = False  # the storageclass.kubernetes.io/is-default-class annotation
