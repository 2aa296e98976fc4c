"""Two replicas with leader election, as deploy/deployment.yaml runs them: only the Lease holder writes;
when it is killed (SIGKILL: no release) the other takes over once the lease expires and goes on, and no
pod is bound twice. The same for two controller managers."""
from __future__ import annotations

import signal
import time
from typing import Any

from tests.e2e.cluster import Cluster, Component, audit, calls, controllers, eventually, scheduled_events, scheduler
from tests.e2e.test_vcjob import JOBS, tf_job

LEASES = "/apis/coordination.k8s.io/v1/namespaces/volcano-system/leases"
FAST = ["--leader-elect", "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "0.5s"]


def gang(ns: str, name: str, size: int) -> list[dict[str, Any]]:
    """A PodGroup and its pods, as a user without vcjobs writes them (kwok keeps such pods Running)."""
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": size, "queue": "default"}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{name}-{i}", "namespace": ns, "annotations": {"scheduling.k8s.io/group-name": name}},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "image": "busybox", "resources": {
            "requests": {"cpu": "500m", "memory": "256Mi"}}}]}} for i in range(size)]
    return [group, *pods]


def holder(cluster: Cluster, name: str) -> str:
    lease = cluster.get(f"{LEASES}/{name}") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def which(replicas: list[Component], identity: str) -> Component:
    [leader] = [r for r in replicas if f"{identity}: acquired the lease" in r.output()]
    return leader


def bound(cluster: Cluster, ns: str, names: list[str]) -> bool:
    pods = {p["metadata"]["name"]: p for p in cluster.pods(ns)}
    return all(pods.get(n, {}).get("spec", {}).get("nodeName") for n in names)


def test_scheduler_leader_killed_the_other_replica_takes_over_and_binds_nothing_twice(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("failover")
    cluster.kwok_nodes(f"{ns}-n", 2, cpu="8", memory="16Gi")
    replicas = [scheduler(cluster, "scheduler-a", *FAST), scheduler(cluster, "scheduler-b", *FAST)]
    components += [controllers(cluster), *replicas]
    first = [o for g in range(3) for o in gang(ns, f"one-{g}", 2)]
    for obj in first:
        cluster.create(obj)
    eventually(lambda: bound(cluster, ns, [o["metadata"]["name"] for o in first if o["kind"] == "Pod"]), 60,
               "the first gangs bound")
    identity = eventually(lambda: holder(cluster, "volcano"), 10, "a lease holder")
    leader = which(replicas, identity)
    leader.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    second = [o for g in range(3) for o in gang(ns, f"two-{g}", 2)]
    for obj in second:
        cluster.create(obj)
    eventually(lambda: bound(cluster, ns, [o["metadata"]["name"] for o in second if o["kind"] == "Pod"]), 60,
               "the second gangs bound by the other replica")
    took = time.monotonic() - killed_at
    assert holder(cluster, "volcano") not in ("", identity)
    assert took < 4 + 3 + 10, f"{took:.1f} s to take over (lease 4 s)"  # lease + sessions + node-status noise
    time.sleep(2)
    pods = [p["metadata"]["name"] for p in cluster.pods(ns)]
    # the API server's record: one successful bind per pod, whichever replica made it (a replica killed
    # between a bind and its `Scheduled` Event leaves the pod without the Event; that is all it loses)
    assert calls(audit(cluster, ns), "vpolicy-scheduler", "create", "pods", "binding", code=201) == {
        name: 1 for name in pods}
    assert set(scheduled_events(cluster, ns).values()) == {1}
    survivor = next(r for r in replicas if r is not leader)
    assert survivor.alive()
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")


def test_controllers_leader_killed_the_other_replica_takes_over(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("ctlfail")
    cluster.kwok_nodes(f"{ns}-n", 2, cpu="8", memory="16Gi")
    replicas = [controllers(cluster, "controllers-a", "--leader-elect"),
                controllers(cluster, "controllers-b", "--leader-elect")]
    components += [scheduler(cluster), *replicas]
    cluster.create(tf_job(ns, "before"))
    jobs = JOBS.format(ns=ns)

    def phase(name: str) -> str:
        return str(((cluster.get(f"{jobs}/{name}") or {}).get("status") or {}).get("state", {}).get("phase"))
    eventually(lambda: phase("before") == "Completed", 90, "the first job Completed")
    identity = eventually(lambda: holder(cluster, "vc-controller-manager"), 10, "a lease holder")
    which(replicas, identity).stop(signal.SIGKILL)
    cluster.create(tf_job(ns, "after"))
    eventually(lambda: phase("after") == "Completed", 90, "the second job Completed under the new leader")
    assert holder(cluster, "vc-controller-manager") not in ("", identity)
    names = sorted(f"{j}-{t}" for j in ("before", "after") for t in ("ps-0", "worker-0", "worker-1"))
    events = audit(cluster, ns)
    assert calls(events, "vpolicy-controllers", "create", "pods", code=201) == {name: 1 for name in names}
    assert calls(events, "vpolicy-scheduler", "create", "pods", "binding", code=201) == {name: 1 for name in names}
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
