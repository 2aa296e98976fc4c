"""The live scheduler reads PVs, claims, classes and CSINodes from their informers, and writes a pod's
WaitForFirstConsumer bindings before it binds the pod, as Volcano's BindVolumes: a matched PV's claimRef,
or the claim's selected-node for its provisioner."""
from __future__ import annotations

from typing import Any

from cluster_adapter.kube.client import KubeClient
from cluster_adapter.kube.volumes import BOUND_BY_CONTROLLER, SELECTED_NODE
from cluster_adapter.scheduler import Scheduler
from tests.adapter.conftest import load, node, pod, podgroup, queue, started
from tests.adapter.kubeemu import EmulatorThread


def _with_claim(obj: dict[str, Any], claim: str) -> dict[str, Any]:
    obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return obj


def _cluster() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [queue("default"), node("n1", **{"kubernetes.io/hostname": "n1", "zone": "a"}),
                                     node("n2", **{"kubernetes.io/hostname": "n2", "zone": "b"})]
    objects += [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
         "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer",
         "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-n2"},
         "spec": {"storageClassName": "local", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                  "local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}},
         "status": {"phase": "Available"}},
    ]
    for name, cls in (("db-data", "local"), ("cache-data", "zonal")):
        objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": name, "namespace": "default"},
                        "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                                 "resources": {"requests": {"storage": "1Gi"}}}})
    for name in ("db", "cache"):
        objects += [podgroup(name), _with_claim(pod(name, group=name), f"{name}-data")]
    return objects


def test_a_delayed_claim_is_bound_before_its_pod(emu: EmulatorThread, client: KubeClient,
                                                  schedulers: list[Scheduler]) -> None:
    load(emu, _cluster())
    report = started(client, schedulers).run_once()
    assert report.document["binds"] == {"default/cache": "n2", "default/db": "n2"}
    pv = emu.call(lambda e: e.get("persistentvolumes", "", "local-n2"))
    claim = emu.call(lambda e: e.get("persistentvolumeclaims", "default", "db-data"))
    assert pv["spec"]["claimRef"]["name"] == "db-data" and pv["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert pv["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    provisioned = emu.call(lambda e: e.get("persistentvolumeclaims", "default", "cache-data"))
    assert provisioned["metadata"]["annotations"][SELECTED_NODE] == "n2"
    records = emu.call(lambda e: [(r.call.verb, r.call.plural, r.call.name) for r in e.records
                                  if r.call.verb in ("patch", "bind")])
    assert records.index(("patch", "persistentvolumes", "local-n2")) < records.index(("bind", "pods", "db"))


def test_a_pv_taken_meanwhile_leaves_the_pod_unbound(emu: EmulatorThread, client: KubeClient,
                                                     schedulers: list[Scheduler]) -> None:
    load(emu, _cluster())
    scheduler = started(client, schedulers)
    # someone else binds the PV after the informers saw it: the session's write conflicts
    scheduler.cache.get = _stale(scheduler.cache.get)  # type: ignore[method-assign]
    report = scheduler.run_once()
    assert "default/db" in report.bind_failed and "local-n2" in report.bind_failed["default/db"]
    assert "409" in report.bind_failed["default/db"]
    assert not emu.call(lambda e: e.get("pods", "default", "db"))["spec"].get("nodeName")


def _stale(get: Any) -> Any:
    def read(resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = get(resource, namespace, name)
        if resource == "persistentvolumes" and found is not None:
            found = {**found, "metadata": {**found["metadata"], "resourceVersion": "1"}}
        return found
    return read
