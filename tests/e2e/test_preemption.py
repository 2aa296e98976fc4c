"""Preemption through the Eviction API, against a PodDisruptionBudget whose status the real disruption
controller (kube-controller-manager) computes: while the budget allows no disruption the victim stays and
a `FailedEvict` Event says why; once the budget is relaxed (and the controller has recomputed it) the
victim is evicted, kwok deletes it, and the preemptor is bound in its room."""
from __future__ import annotations

from typing import Any

from tests.e2e.cluster import Cluster, Component, controllers, eventually, scheduler

CONF = """\
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"


def job(ns: str, name: str, priority: str, size: int, cpu: str) -> list[dict[str, Any]]:
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {
        "name": name, "namespace": ns}, "spec": {"minMember": 1, "queue": "default", "priorityClassName": priority}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{name}-{i}", "namespace": ns, "labels": {"app": name},
        "annotations": {"scheduling.k8s.io/group-name": name}},
        "spec": {"schedulerName": "volcano", "priorityClassName": priority, "containers": [{
            "name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}]}}
        for i in range(size)]
    return [group, *pods]


def test_preemption_waits_for_the_budget_the_disruption_controller_computes(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("preempt")
    low, high = f"{ns}-low", f"{ns}-high"
    for name, value in ((low, 10), (high, 1000)):
        cluster.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": name}, "value": value})
    [node] = cluster.kwok_nodes(f"{ns}-n", 1, cpu="2", memory="4Gi")
    conf = cluster.workdir / "preempt.conf"
    conf.write_text(CONF)
    components += [controllers(cluster), scheduler(cluster, conf=conf)]
    for obj in job(ns, "low", low, 2, "1"):
        cluster.create(obj)
    pdbs = PDBS.format(ns=ns)
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "low", "namespace": ns},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}}})

    def running(prefix: str) -> list[str]:
        return sorted(p["metadata"]["name"] for p in cluster.pods(ns) if p["metadata"]["name"].startswith(prefix)
                      and p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))

    eventually(lambda: running("low-") == ["low-0", "low-1"], 60, "both low pods Running")

    def budget() -> dict[str, Any]:
        return dict((cluster.get(f"{pdbs}/low") or {}).get("status") or {})
    eventually(lambda: budget().get("currentHealthy") == 2 and budget().get("disruptionsAllowed") == 0, 60,
               "the disruption controller's status: 2 healthy, 0 disruptions allowed")
    for obj in job(ns, "high", high, 1, "1"):
        cluster.create(obj)

    def failed_evictions() -> list[dict[str, Any]]:
        return [e for e in cluster.events(ns) if e.get("reason") == "FailedEvict"]
    eventually(failed_evictions, 60, "a FailedEvict Event (the budget's 429)")
    assert running("low-") == ["low-0", "low-1"]
    assert not (cluster.get(f"/api/v1/namespaces/{ns}/pods/high-0") or {})["spec"].get("nodeName")

    cluster.call("PATCH", f"{pdbs}/low", {"spec": {"minAvailable": 1}}, content_type="application/merge-patch+json")

    def high_bound() -> bool:
        return bool((cluster.get(f"/api/v1/namespaces/{ns}/pods/high-0") or {})["spec"].get("nodeName"))
    eventually(high_bound, 90, "the preemptor bound once the budget allows one disruption")
    assert (cluster.get(f"/api/v1/namespaces/{ns}/pods/high-0") or {})["spec"]["nodeName"] == node
    assert len(running("low-")) == 1  # exactly one victim
    for name in (low, high):
        cluster.admin.call("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
