"""Reading what relates a pod to others: pod (anti-)affinity terms, spread constraints, host ports,
images, node images and Namespace labels (vpolicy.load.affinity), and their mistakes at their field."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster
from vpolicy.model import affinity

POD = """\
apiVersion: v1
kind: Namespace
metadata: {name: ns, labels: {team: a}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4"}
  images:
  - {names: ["registry/x:v1", "registry/x@sha256:ab"], sizeBytes: 1000}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, labels: {app: web}}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchExpressions: [{key: app, operator: In, values: [db]}]}
        topologyKey: topology.kubernetes.io/zone
        namespaceSelector: {}
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 30
        podAffinityTerm:
          labelSelector: {matchLabels: {app: web}}
          topologyKey: kubernetes.io/hostname
  topologySpreadConstraints:
  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
     labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash]}
  containers:
  - name: c
    image: registry/x:v1
    ports: [{containerPort: 80, hostPort: 8080}, {containerPort: 81}]
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]  # reason: a snapshot or a raised error
    path = tmp_path / "dump.yaml"
    path.write_text(text, encoding="utf-8")
    return load_cluster([str(path)])


def test_a_pods_terms_constraints_ports_and_images_are_read(tmp_path: Path) -> None:
    snap = _load(tmp_path, POD)
    rel = snap.pods[0].relations
    (required,) = rel.required_affinity
    assert required.topology_key == "topology.kubernetes.io/zone"
    assert required.selector == affinity.LabelSelector((), (affinity.Requirement("app", "In", ("db",)),))
    assert required.namespace_selector == affinity.LabelSelector()
    (preferred,) = rel.preferred_anti_affinity
    assert (preferred.weight, preferred.topology_key) == (30, affinity.HOSTNAME_KEY)
    (spread,) = rel.spread
    assert (spread.max_skew, spread.when_unsatisfiable, spread.min_domains) == (2, "ScheduleAnyway", 1)
    assert (spread.node_affinity_policy, spread.node_taints_policy) == ("Honor", "Ignore")
    assert spread.match_label_keys == ("pod-template-hash",)
    assert rel.host_ports == (affinity.HostPort("", "TCP", 8080),)
    assert rel.images == ("registry/x:v1",)
    assert snap.nodes[0].images == ((("registry/x:v1", "registry/x@sha256:ab"), 1000),)
    assert snap.namespace_labels == {"ns": {"team": "a"}}


@pytest.mark.parametrize("old, new, message", [
    pytest.param("{maxSkew: 2, ", "{", "missing spec.topologySpreadConstraints[0].maxSkew", id="spread-without-max-skew"),
    pytest.param("operator: In, values: [db]", "operator: In", "In needs at least one value", id="in-without-values"),
    pytest.param("weight: 30", "weight: 300", "must be at most 100", id="weight-above-100"),
])
def test_a_broken_term_is_one_located_diagnostic(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        _load(tmp_path, POD.replace(old, new))
    (diagnostic,) = caught.value.diagnostics
    assert message in diagnostic.message
    assert diagnostic.span.file.endswith("dump.yaml") and diagnostic.span.line > 14


def test_host_port_conflicts_follow_kube_scheduler() -> None:
    wild, local, other_ip = (affinity.HostPort(ip, "TCP", 80) for ip in ("", "127.0.0.1", "10.0.0.1"))
    assert wild.conflicts(local) and local.conflicts(wild)
    assert not local.conflicts(other_ip)
    assert not wild.conflicts(affinity.HostPort("", "UDP", 80))


VOLUMES = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: x
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1, labels: {topology.kubernetes.io/zone: z1}}
spec:
  storageClassName: local
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ns}
spec: {volumeName: pv-1, storageClassName: local}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  volumes:
  - {name: a, persistentVolumeClaim: {claimName: data}}
  - {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}
  - {name: cfg, configMap: {name: c}}
  containers: [{name: c}]
"""


@pytest.mark.parametrize("fast", [False, True], ids=["exact-path", "fast-path"])
def test_volumes_claims_and_classes_are_read(tmp_path: Path, fast: bool) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(VOLUMES, encoding="utf-8")
    snap = load_cluster([str(path)], fast=fast)
    (pv,) = snap.persistent_volumes
    assert pv.labels == {"topology.kubernetes.io/zone": "z1"} and pv.storage_class == "local"
    assert pv.node_affinity[0].requirements[0].values == ("n1",)
    (claim,) = snap.persistent_volume_claims
    assert (claim.key, claim.volume_name, claim.storage_class) == ("ns/data", "pv-1", "local")
    (cls,) = snap.storage_classes
    assert (cls.binding_mode, cls.default) == ("WaitForFirstConsumer", True)
    assert snap.pods[0].relations.claims == ("data", "{pod}-scratch")


def test_a_bad_binding_mode_is_one_located_diagnostic(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        _load(tmp_path, VOLUMES.replace("volumeBindingMode: WaitForFirstConsumer", "volumeBindingMode: Later"))
    (diagnostic,) = caught.value.diagnostics
    assert "volumeBindingMode" in diagnostic.message and diagnostic.span.line == 5
