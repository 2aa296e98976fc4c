"""Reading what NodeVolumeLimits and delayed VolumeBinding look at (vpolicy.load.volumes): CSINodes, a PV's
CSI or in-tree source, capacity, access modes and claimRef, a claim's request, selector and controlling
owner, a class's provisioner and allowedTopologies, a pod's inline in-tree disks; mistakes at their field,
on the exact and the fast path alike."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster
from vpolicy.model import volumes

DUMP = """\
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: n1
  annotations: {storage.alpha.kubernetes.io/migrated-plugins: "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}}
  - {name: efs.csi.aws.com, nodeID: i-1}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-csi}
spec:
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: ns, name: data}
  storageClassName: gp3
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-ebs}
spec:
  awsElasticBlockStore: {volumeID: "aws://us-east-1a/vol-2"}
  capacity: {storage: 5Gi}
  volumeMode: Block
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: p-scratch
  namespace: ns
  annotations: {volume.beta.kubernetes.io/storage-class: beta-class}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u-1, controller: true}]
spec:
  storageClassName: ignored
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
  selector: {matchLabels: {tier: fast}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [z1, z2]}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, uid: u-1}
spec:
  volumes:
  - {name: disk, gcePersistentDisk: {pdName: pd-1}}
  - {name: tmp, emptyDir: {}}
  containers: [{name: c}]
"""


@pytest.mark.parametrize("fast", [False, True], ids=["exact-path", "fast-path"])
def test_storage_objects_are_read(tmp_path: Path, fast: bool) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(DUMP, encoding="utf-8")
    snap = load_cluster([str(path)], fast=fast)
    (csi,) = snap.csi_nodes
    assert csi.limits == {"ebs.csi.aws.com": 25} and csi.drivers == ("ebs.csi.aws.com", "efs.csi.aws.com")
    assert csi.migrated_plugins == {"kubernetes.io/aws-ebs", "kubernetes.io/gce-pd"}
    by_name = {pv.name: pv for pv in snap.persistent_volumes}
    assert by_name["pv-csi"].attach == volumes.AttachedVolume("ebs.csi.aws.com", "vol-1")
    assert (by_name["pv-csi"].claim_ref, by_name["pv-csi"].available) == ("ns/data", False)
    assert by_name["pv-csi"].capacity == by_name["pv-ebs"].capacity * 2
    assert by_name["pv-ebs"].attach == volumes.AttachedVolume("ebs.csi.aws.com", "vol-2", "kubernetes.io/aws-ebs")
    assert by_name["pv-ebs"].volume_mode == "Block" and by_name["pv-ebs"].available
    (claim,) = snap.persistent_volume_claims
    assert (claim.storage_class, claim.owner_uid, claim.access_modes) == ("beta-class", "u-1", ("ReadWriteOnce",))
    assert claim.selector is not None and claim.selector.match_labels == (("tier", "fast"),)
    assert claim.request == by_name["pv-ebs"].capacity * 2 // 5
    (cls,) = snap.storage_classes
    assert cls.provisioner == "ebs.csi.aws.com"
    assert cls.allowed_topologies == ((("topology.kubernetes.io/zone", ("z1", "z2")),),)
    (pod,) = snap.pods
    assert pod.relations.inline_volumes == (
        volumes.AttachedVolume("pd.csi.storage.gke.io", "pd-1", "kubernetes.io/gce-pd"),)


@pytest.mark.parametrize("old, new, field", [
    ("allocatable: {count: 25}", "allocatable: {count: -1}", "count"),
    ("accessModes: [ReadWriteOnce]\n  claimRef", "accessModes: [ReadWriteSometimes]\n  claimRef", "accessModes"),
    ("values: [z1, z2]", "values: []", "values"),
])
def test_a_storage_mistake_is_one_located_diagnostic(tmp_path: Path, old: str, new: str, field: str) -> None:
    assert old in DUMP
    path = tmp_path / "dump.yaml"
    path.write_text(DUMP.replace(old, new), encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_cluster([str(path)])
    (diagnostic,) = caught.value.diagnostics
    line = next(i for i, text in enumerate(DUMP.replace(old, new).splitlines(), 1) if new.split("\n")[0] in text)
    assert field in diagnostic.message and diagnostic.span is not None and diagnostic.span.line == line


def test_a_driver_listed_twice_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(DUMP.replace("- {name: efs.csi.aws.com, nodeID: i-1}", "- {name: ebs.csi.aws.com, nodeID: i-1}"),
                    encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_cluster([str(path)])
    (diagnostic,) = caught.value.diagnostics
    assert "listed twice" in diagnostic.message and diagnostic.span is not None and diagnostic.span.line == 9


def test_a_recorded_session_keeps_the_storage_objects(tmp_path: Path) -> None:
    """`vpolicy replay` reads recorded snapshots back through the simulator's codec: PVs with node
    affinity, claims with selectors and CSINodes come back equal."""
    from vpolicy.sim import codec

    path = tmp_path / "dump.yaml"
    path.write_text(DUMP.replace("  volumeMode: Block", "  volumeMode: Block\n  nodeAffinity: {required: "
                                 "{nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In, values: [v]}]}]}}"),
                    encoding="utf-8")
    snap = load_cluster([str(path)])
    back = codec.decode_snapshot(codec.encode_snapshot(snap))
    assert back.persistent_volumes == snap.persistent_volumes and back.persistent_volumes[1].node_affinity
    assert back.persistent_volume_claims == snap.persistent_volume_claims
    assert back.csi_nodes == snap.csi_nodes and back.pods == snap.pods


def test_dangling_storage_references_are_located_warnings(tmp_path: Path) -> None:
    """A claim bound to a PV the dump lacks, a claim of a missing class and a CSINode of no node load, as
    the API allows them, with a warning at each object's name."""
    path = tmp_path / "dump.yaml"
    path.write_text(DUMP + """---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: gone-pv, namespace: ns}
spec: {volumeName: nowhere}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: no-class, namespace: ns}
spec: {storageClassName: missing}
""", encoding="utf-8")
    snap = load_cluster([str(path)])
    lines = DUMP.count("\n") + 1
    warnings = "\n".join(snap.warnings)
    assert f"dump.yaml:{lines + 3}:" in warnings and "PersistentVolume nowhere, which the cluster lacks" in warnings
    assert f"dump.yaml:{lines + 8}:" in warnings and "StorageClass missing, which the cluster lacks" in warnings
    assert "CSINode n1 names no node of the cluster" in warnings  # the dump has no Node n1
