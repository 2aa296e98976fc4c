"""PersistentVolume, PersistentVolumeClaim and StorageClass objects -> `vpolicy.model.volumes`.

Reads what kube-scheduler's VolumeZone and VolumeBinding filters look at: a PV's zone labels and
required node affinity, a claim's bound volume and storage class, a class's volumeBindingMode and
whether it is the default. Mistakes are reported at the field, as every reader of `vpolicy.load` does.
`vpolicy.load.cluster` calls these; a pod's claims are read with its spec (`vpolicy.load.affinity`).
"""
from __future__ import annotations

from vpolicy.load import kinds
from vpolicy.load.fields import View
from vpolicy.model import volumes

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
_MODES = (volumes.IMMEDIATE, volumes.WAIT_FOR_FIRST_CONSUMER)


def read_persistent_volume(obj: View) -> volumes.PersistentVolume | None:
    meta = kinds.read_meta(obj, namespaced=False)
    if meta is None:
        return None
    spec = obj.mapping("spec")
    affinity = spec.mapping("nodeAffinity") if spec else None
    required = affinity.mapping("required") if affinity else None
    terms = kinds.read_node_selector_terms(required) if required is not None else ()
    return volumes.PersistentVolume(meta.name, labels=meta.labels, node_affinity=terms,
                                    storage_class=spec.text("storageClassName") if spec else "")


def read_persistent_volume_claim(obj: View) -> volumes.PersistentVolumeClaim | None:
    meta = kinds.read_meta(obj, namespaced=True)
    if meta is None:
        return None
    spec = obj.mapping("spec")
    storage_class = spec.text("storageClassName") if spec and spec.has("storageClassName") else None
    return volumes.PersistentVolumeClaim(meta.namespace, meta.name, volume_name=spec.text("volumeName") if spec else "",
                                         storage_class=storage_class)


def read_storage_class(obj: View) -> volumes.StorageClass | None:
    meta = kinds.read_meta(obj, namespaced=False)
    if meta is None:
        return None
    mode = obj.choice("volumeBindingMode", _MODES, default=volumes.IMMEDIATE)
    default = meta.annotations.get(DEFAULT_CLASS_ANNOTATION, "").strip().lower() == "true"
    return volumes.StorageClass(meta.name, binding_mode=mode, default=default)
