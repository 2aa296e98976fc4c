"""PersistentVolume, PersistentVolumeClaim, StorageClass and CSINode objects -> `vpolicy.model.volumes`.

Reads what kube-scheduler's VolumeZone, VolumeBinding and NodeVolumeLimits filters look at: a PV's zone
labels, required node affinity, CSI driver and handle (or migratable in-tree disk), capacity, access
modes and claimRef; a claim's bound volume, storage class, request, access modes and selector; a class's
volumeBindingMode, provisioner and allowedTopologies and whether it is the default; a CSINode's per-driver
attach limits and migrated plugins. Mistakes are reported at the field, as every reader of `vpolicy.load`
does. `vpolicy.load.cluster` calls these; a pod's claims are read with its spec (`vpolicy.load.affinity`).
"""
from __future__ import annotations

from collections.abc import Sequence

from vpolicy.load import kinds
from vpolicy.load.affinity import in_tree_volume, read_selector
from vpolicy.load.fields import Problems, View
from vpolicy.model import volumes
from vpolicy.source import Span

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
_MODES = (volumes.IMMEDIATE, volumes.WAIT_FOR_FIRST_CONSUMER)
_ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_VOLUME_MODES = ("Filesystem", "Block")


def read_persistent_volume(obj: View) -> volumes.PersistentVolume | None:
    meta = kinds.read_meta(obj, namespaced=False)
    if meta is None:
        return None
    spec = obj.mapping("spec")
    affinity = spec.mapping("nodeAffinity") if spec else None
    required = affinity.mapping("required") if affinity else None
    terms = kinds.read_node_selector_terms(required) if required is not None else ()
    if spec is None:
        return volumes.PersistentVolume(meta.name, labels=meta.labels)
    capacity = spec.mapping("capacity")
    ref = spec.mapping("claimRef")
    status = obj.mapping("status")
    return volumes.PersistentVolume(
        meta.name, labels=meta.labels, node_affinity=terms, storage_class=spec.text("storageClassName"),
        attach=_attach(spec), capacity=(capacity.quantity("storage", "storage") or 0) if capacity else 0,
        access_modes=_access_modes(spec), claim_ref=f"{ref.text('namespace') or 'default'}/{ref.text('name')}"
        if ref is not None and ref.text("name") else "",
        available=(status.text("phase") or "Available") == "Available" if status else True,
        volume_mode=spec.choice("volumeMode", _VOLUME_MODES, default="Filesystem"))


def _attach(spec: View) -> volumes.AttachedVolume | None:
    """What NodeVolumeLimits counts of a PV: its CSI driver and handle, or a migratable in-tree disk."""
    csi = spec.mapping("csi")
    if csi is not None:
        driver, handle = csi.text("driver", required=True), csi.text("volumeHandle", required=True)
        return volumes.AttachedVolume(driver, handle) if driver and handle else None
    return in_tree_volume(spec)


def _access_modes(spec: View) -> tuple[str, ...]:
    modes = spec.texts("accessModes")
    for mode in modes:
        if mode not in _ACCESS_MODES:
            spec.bad_value("accessModes", f"unknown access mode {mode!r}", f"use {', '.join(_ACCESS_MODES)}")
            return ()
    return modes


def read_persistent_volume_claim(obj: View) -> volumes.PersistentVolumeClaim | None:
    meta = kinds.read_meta(obj, namespaced=True)
    if meta is None:
        return None
    spec = obj.mapping("spec")
    storage_class = meta.annotations.get(volumes.BETA_CLASS_ANNOTATION)
    if storage_class is None and spec and spec.has("storageClassName"):
        storage_class = spec.text("storageClassName")
    if spec is None:
        return volumes.PersistentVolumeClaim(meta.namespace, meta.name, storage_class=storage_class,
                                             owner_uid=_controller_uid(obj))
    resources = spec.mapping("resources")
    requests = resources.mapping("requests") if resources else None
    return volumes.PersistentVolumeClaim(
        meta.namespace, meta.name, volume_name=spec.text("volumeName"), storage_class=storage_class,
        owner_uid=_controller_uid(obj), request=(requests.quantity("storage", "storage") or 0) if requests else 0,
        access_modes=_access_modes(spec), selector=read_selector(spec.mapping("selector")),
        volume_mode=spec.choice("volumeMode", _VOLUME_MODES, default="Filesystem"),
        selected_node=meta.annotations.get(SELECTED_NODE_ANNOTATION, ""), origin=meta.origin)


def _controller_uid(obj: View) -> str:
    """The uid of the object's controlling owner ("" when none): a generic ephemeral volume's claim is
    the pod's only when the pod controls it (kube's ephemeral.VolumeIsForPod)."""
    meta = obj.mapping("metadata")
    for ref in meta.mappings("ownerReferences") if meta else ():
        if ref.flag("controller", default=False):
            return ref.text("uid")
    return ""


def read_storage_class(obj: View) -> volumes.StorageClass | None:
    meta = kinds.read_meta(obj, namespaced=False)
    if meta is None:
        return None
    mode = obj.choice("volumeBindingMode", _MODES, default=volumes.IMMEDIATE)
    default = meta.annotations.get(DEFAULT_CLASS_ANNOTATION, "").strip().lower() == "true"
    topologies = []
    for term in obj.mappings("allowedTopologies"):
        requirements = []
        for expression in term.mappings("matchLabelExpressions"):
            key, values = expression.text("key", required=True), expression.texts("values")
            if key and not values:
                expression.bad_value("values", "an allowed topology needs at least one value", "add values: [...]")
            elif key:
                requirements.append((key, values))
        topologies.append(tuple(requirements))
    return volumes.StorageClass(meta.name, binding_mode=mode, default=default,
                                provisioner=obj.text("provisioner"),
                                allowed_topologies=tuple(topologies))


def read_csi_node(obj: View) -> volumes.CSINode | None:
    """A CSINode: spec.drivers[] each with a name and an optional allocatable.count (the most volumes of
    that driver the node can attach), and the migrated-plugins annotation. A driver listed twice is an
    error (the API rejects it)."""
    meta = kinds.read_meta(obj, namespaced=False)
    if meta is None:
        return None
    spec = obj.mapping("spec", required=True)
    limits: dict[str, int] = {}
    drivers: list[str] = []
    for driver in spec.mappings("drivers") if spec else ():
        name = driver.text("name", required=True)
        if not name:
            continue
        if name in drivers:
            driver.bad_value("name", f"driver {name!r} is listed twice", "list each CSI driver once")
            continue
        drivers.append(name)
        allocatable = driver.mapping("allocatable")
        count = allocatable.optional_integer("count", minimum=0) if allocatable else None
        if count is not None:
            limits[name] = count
    migrated = meta.annotations.get(volumes.MIGRATED_PLUGINS_ANNOTATION, "")
    return volumes.CSINode(meta.name, limits=limits, drivers=tuple(drivers),
                           migrated_plugins=frozenset(p.strip() for p in migrated.split(",") if p.strip()),
                           origin=meta.origin)


def check_volumes(claims: Sequence[volumes.PersistentVolumeClaim], pvs: Sequence[volumes.PersistentVolume],
                  classes: Sequence[volumes.StorageClass], csi_nodes: Sequence[volumes.CSINode],
                  node_names: set[str], problems: Problems) -> None:
    """What the objects say of each other that a user would want to know, as warnings at the object's name
    (the API allows each, and kube-scheduler acts on it as noted): a claim bound to a PV the dump lacks, a
    claim of a class it lacks, a CSINode of no node."""
    pv_names = {pv.name for pv in pvs}
    class_names = {c.name for c in classes}
    for claim in claims:
        where = claim.origin or Span("<claims>", 1, 1)
        if claim.volume_name and claim.volume_name not in pv_names:
            problems.warn(where, f"PersistentVolumeClaim {claim.key} is bound to PersistentVolume "
                                 f"{claim.volume_name}, which the cluster lacks: VolumeBinding keeps its pods pending")
        elif not claim.volume_name and claim.storage_class and claim.storage_class not in class_names:
            problems.warn(where, f"PersistentVolumeClaim {claim.key} names StorageClass {claim.storage_class}, "
                                 "which the cluster lacks: its pods wait for it to be bound (as Immediate)")
    for csi in csi_nodes:
        if csi.name not in node_names:
            problems.warn(csi.origin or Span("<csinodes>", 1, 1),
                          f"CSINode {csi.name} names no node of the cluster: its limits apply to none")
