"""Persistent volumes as the scheduler sees them: what kube-scheduler's VolumeZone, VolumeBinding and
NodeVolumeLimits filters read (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode), as plain
immutable data.

No scheduling here: `vpolicy.engine.pod_relations` resolves a pod's claims to volumes once per session,
and rules in `policies/volcano/predicates.vpol` decide through the `volume_*` built-ins.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # both import this module: it imports neither at run time
    from vpolicy.model.affinity import LabelSelector
    from vpolicy.model.snapshot import NodeSelectorTerm
    from vpolicy.source import Span

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
# The PV labels VolumeZone compares with the node's (the beta ones also match the node's GA label).
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")
# The pod-side annotation that names a claim's class before spec.storageClassName (kube's
# storagehelpers.GetPersistentVolumeClaimClass reads it first).
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# The CSINode annotation listing the in-tree plugins whose volumes the node's CSI drivers serve.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
# A StorageClass whose volumes are created by hand (local PVs): delayed binding can only use existing PVs.
NO_PROVISIONER = "kubernetes.io/no-provisioner"
# In-tree volume plugins that kube-scheduler counts against a CSI driver's attach limit once a node's
# CSINode lists them as migrated (csi-translation-lib; these four are migrated unconditionally in kube):
# plugin name -> (CSI driver, the pod/PV volume source field, the field naming the disk).
MIGRATABLE = {
    "kubernetes.io/aws-ebs": ("ebs.csi.aws.com", "awsElasticBlockStore", "volumeID"),
    "kubernetes.io/gce-pd": ("pd.csi.storage.gke.io", "gcePersistentDisk", "pdName"),
    "kubernetes.io/azure-disk": ("disk.csi.azure.com", "azureDisk", "diskURI"),
    "kubernetes.io/cinder": ("cinder.csi.openstack.org", "cinder", "volumeID"),
}
GA_LABEL = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


@dataclass(frozen=True, slots=True)
class AttachedVolume:
    """A volume as NodeVolumeLimits counts it: a CSI driver's volume (`plugin` ""), or an in-tree one
    (`plugin` its in-tree plugin name) that counts against `driver` only on nodes that migrated it."""

    driver: str
    handle: str
    plugin: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple["NodeSelectorTerm", ...] = ()  # spec.nodeAffinity.required: ORed terms; () = none
    storage_class: str = ""
    attach: AttachedVolume | None = None  # spec.csi, or a migratable in-tree source; None: counts nowhere
    capacity: int = 0  # spec.capacity.storage in bytes
    access_modes: tuple[str, ...] = ()
    claim_ref: str = ""  # spec.claimRef as namespace/name ("" when free)
    available: bool = True  # status.phase is Available (or unset)
    volume_mode: str = "Filesystem"


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    volume_name: str = ""  # spec.volumeName: "" while unbound
    # the beta annotation, else spec.storageClassName; None when neither is set (the default class applies)
    storage_class: str | None = None
    owner_uid: str = ""  # the uid of its controlling owner (a generic ephemeral volume's pod)
    request: int = 0  # spec.resources.requests.storage in bytes
    access_modes: tuple[str, ...] = ()
    selector: "LabelSelector | None" = None  # spec.selector over PV labels
    volume_mode: str = "Filesystem"
    selected_node: str = ""  # the volume.kubernetes.io/selected-node annotation (provisioning under way)
    origin: "Span | None" = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    binding_mode: str = IMMEDIATE  # volumeBindingMode
    default: bool = False  # the storageclass.kubernetes.io/is-default-class annotation
    provisioner: str = ""
    # allowedTopologies: ORed terms, each ANDing (label key, allowed values); () = anywhere
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()


@dataclass(frozen=True, slots=True)
class CSINode:
    """A node's CSI drivers (storage.k8s.io/v1 CSINode, named after the node): each driver's attach limit
    (spec.drivers[].allocatable.count; a driver without one has no limit) and the in-tree plugins it serves."""

    name: str
    limits: Mapping[str, int] = field(default_factory=dict)
    drivers: tuple[str, ...] = ()
    migrated_plugins: frozenset[str] = frozenset()
    origin: "Span | None" = field(default=None, compare=False)
