"""The fields the loader reads, per kind: what the fast path of a big dump turns into Python objects.

A real dump is mostly noise to a scheduler: managedFields, the last-applied annotation, a node's image
list, env, probes, volumes, container statuses. `vpolicy.load.dumpfile` reads big dumps with a C JSON
decoder (msgspec) that is given, per kind, the *shape* declared here and skips every other field inside
the decoder, without creating a Python object for it. The readers (`vpolicy.load.kinds` and the modules
beside it) then run on the plain dicts and lists it returns, exactly as they run on the round-trip nodes of
a small file.

A shape is a nested `dict`: `KEEP` keeps a field's whole value, a `dict` keeps a mapping with only the
fields it names, and `[dict]` keeps a list of such mappings. Every field a reader looks at must be
reachable here, or the fast path would read that field as absent; `tests/load/test_dumpfile.py` checks
the fast and the exact path agree on every dump the tests load.

How to add a kind (see also /work/notes/loader-extension.md):
1. add its `(group, kind)` to `vpolicy.load.cluster._KNOWN` and its reader call to `cluster._build`;
2. add `SHAPES["YourKind"] = {...}` here, naming every field the reader reads (when in doubt, `KEEP` the
   whole `spec`). A known kind with no shape is still read correctly, only slower: the whole object is
   decoded.
A shape is a promise about the reader, not a validation: a field of the wrong type (a string where the
shape says mapping) makes the decoder give up on that object, which is then decoded whole so that the
reader reports the mistake as it does for small files.
"""
from __future__ import annotations

from typing import Any, Union

KEEP: Any = Any  # keep the field's value as it is written
Shape = dict[str, Any]

META: Shape = {
    "name": KEEP, "namespace": KEEP, "uid": KEEP, "labels": KEEP, "annotations": KEEP,
    "creationTimestamp": KEEP, "deletionTimestamp": KEEP, "resourceVersion": KEEP,
    "ownerReferences": [{"kind": KEEP, "name": KEEP, "apiVersion": KEEP, "uid": KEEP, "controller": KEEP}],
}
_CONTAINER: Shape = {"name": KEEP, "resources": KEEP, "restartPolicy": KEEP, "image": KEEP, "ports": KEEP}
POD_SPEC: Shape = {
    "containers": [_CONTAINER], "initContainers": [_CONTAINER], "overhead": KEEP, "schedulerName": KEEP,
    "priority": KEEP, "priorityClassName": KEEP, "nodeName": KEEP, "nodeSelector": KEEP, "affinity": KEEP,
    "tolerations": KEEP, "preemptionPolicy": KEEP, "schedulingGates": KEEP, "topologySpreadConstraints": KEEP,
    # VolumeZone, VolumeBinding; NodeVolumeLimits counts the migratable in-tree sources
    "volumes": [{"name": KEEP, "persistentVolumeClaim": KEEP, "ephemeral": KEEP, "awsElasticBlockStore": KEEP,
                 "gcePersistentDisk": KEEP, "azureDisk": KEEP, "cinder": KEEP}],
}

SHAPES: dict[str, Shape] = {
    "Pod": {"metadata": META, "spec": POD_SPEC,
            "status": {"phase": KEEP, "nominatedNodeName": KEEP, "qosClass": KEEP, "startTime": KEEP,  # usage
                       "conditions": [{"type": KEEP, "status": KEEP, "lastTransitionTime": KEEP}]}},
    "Node": {"metadata": META, "spec": {"taints": KEEP, "unschedulable": KEEP},
             "status": {"allocatable": KEEP, "capacity": KEEP, "conditions": [{"type": KEEP, "status": KEEP}],
                        "images": [{"names": KEEP, "sizeBytes": KEEP}]}},  # image locality
    "Namespace": {"metadata": META},
    "PriorityClass": {"metadata": META, "value": KEEP, "globalDefault": KEEP, "preemptionPolicy": KEEP},
    "Queue": {"metadata": META, "spec": KEEP, "status": {"state": KEEP}},
    "PodGroup": {"metadata": META, "spec": KEEP, "status": {"phase": KEEP, "conditions": KEEP}},
    "ConfigMap": {"metadata": META, "data": KEEP},
    "PersistentVolume": {"metadata": META, "spec": KEEP, "status": {"phase": KEEP}},
    "PersistentVolumeClaim": {"metadata": META, "spec": {"volumeName": KEEP, "storageClassName": KEEP,
                                                         "resources": KEEP, "accessModes": KEEP, "selector": KEEP,
                                                         "volumeMode": KEEP}},
    "StorageClass": {"metadata": META, "volumeBindingMode": KEEP, "provisioner": KEEP, "allowedTopologies": KEEP},
    "CSINode": {"metadata": META, "spec": KEEP},
    "Numatopology": {"metadata": META, "spec": {"policies": KEEP, "resReserved": KEEP, "numares": KEEP,
                                                "cpuDetail": KEEP, "gpuDetail": KEEP, "podAllocations": KEEP}},
}


def decoder_type(shape: Shape, name: str) -> Any:
    """The msgspec type for `shape`: nested `TypedDict`s (total=False: every field optional, unknown
    fields skipped by the decoder), each field also allowed to be null, as the API allows."""
    from typing import TypedDict

    fields: dict[str, Any] = {}
    for key, value in shape.items():
        fields[key] = _field_type(value, f"{name}_{_identifier(key)}")
    return TypedDict(name, fields, total=False)  # type: ignore[operator]


def _field_type(value: Any, name: str) -> Any:
    if value is KEEP:
        return Any
    if isinstance(value, dict):
        return Union[decoder_type(value, name), None]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        return Union[list[decoder_type(value[0], name)], None]  # type: ignore[misc]
    raise TypeError(f"shape {name}: expected KEEP, a dict or [dict], got {value!r}")


def _identifier(key: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in key)
