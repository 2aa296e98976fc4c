"""A vcjob written like Volcano's TensorFlow example goes the whole way on a real API server: vpolicy's
webhook (called by the API server over TLS) defaults and admits it, the controllers create its
PodGroup, pods, Service, hosts ConfigMap and ssh Secret, the scheduler binds the gang onto kwok nodes,
kwok runs the pods to Succeeded, and the job ends Completed. A job Volcano refuses is refused with
Volcano's message. All three components run under deploy/'s RBAC, each with its own ServiceAccount."""
from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.cluster import (Cluster, Component, audit, calls, controllers, eventually, forbidden, scheduled_events,
                               scheduler)

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"


def tf_job(namespace: str, name: str = "tf-dist-mnist", *, workers: int = 2, **spec: Any) -> dict[str, Any]:
    def task(task_name: str, replicas: int, **extra: Any) -> dict[str, Any]:
        return {"name": task_name, "replicas": replicas, **extra, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "tensorflow", "image": "volcanosh/dist-mnist-tf-example:0.0.1",
                            "command": ["sh", "-c", "python /var/tf_dist_mnist/dist_mnist.py"],
                            "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
                            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minAvailable": 1 + workers, "schedulerName": "volcano",
                     "plugins": {"env": [], "svc": [], "ssh": []},
                     "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                     "tasks": [task("ps", 1), task("worker", workers,
                                                   policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])],
                     **spec}}


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    ns = cluster.namespace("vcjob")
    yield ns
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")


def test_tensorflow_style_job_is_admitted_scheduled_run_and_completed(
        cluster: Cluster, webhook: Component, components: list[Component], namespace: str) -> None:
    began = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    nodes = cluster.kwok_nodes(f"{namespace}-n", 2, cpu="2", memory="4Gi")
    components += [controllers(cluster), scheduler(cluster)]
    created = cluster.create(tf_job(namespace))
    # the mutating webhook's defaults are in the stored object (queue, task minAvailable, maxRetry)
    assert created["spec"]["queue"] == "default"
    assert [t["minAvailable"] for t in created["spec"]["tasks"]] == [1, 2]
    assert created["spec"]["maxRetry"] == 3
    jobs = JOBS.format(ns=namespace)

    seen: dict[str, Any] = {}  # the plugins' objects live while the job does: caught on the way

    def completed() -> bool:
        for key, path in (("service", "services/tf-dist-mnist"), ("hosts", "configmaps/tf-dist-mnist-svc"),
                          ("secret", "secrets/tf-dist-mnist-ssh")):
            seen[key] = seen.get(key) or cluster.get(f"/api/v1/namespaces/{namespace}/{path}")
        job = cluster.get(f"{jobs}/tf-dist-mnist") or {}
        return bool(((job.get("status") or {}).get("state") or {}).get("phase") == "Completed")
    eventually(completed, 120, "the job Completed")

    expected = ["tf-dist-mnist-ps-0", "tf-dist-mnist-worker-0", "tf-dist-mnist-worker-1"]
    events = audit(cluster, namespace)
    assert calls(events, "vpolicy-controllers", "create", "pods", code=201) == {name: 1 for name in expected}
    assert calls(events, "vpolicy-scheduler", "create", "pods", "binding", code=201) == {name: 1 for name in expected}
    # the workers ran to the end; the ps too, unless it was still running when they finished: then the
    # TaskCompleted -> CompleteJob policy killed it, as Volcano does
    pods = {p["metadata"]["name"]: p for p in cluster.pods(namespace)}
    assert set(expected[1:]) <= set(pods) <= set(expected)
    for pod in pods.values():
        assert pod["spec"]["nodeName"] in nodes
        assert pod["status"]["phase"] == "Succeeded"
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Job", "tf-dist-mnist", created["metadata"]["uid"])
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env") or []}
        assert env["VK_TASK_INDEX"] == env["VC_TASK_INDEX"] == pod["metadata"]["name"].rsplit("-", 1)[1]
    # each pod bound once, by us; and no call of any component was refused by deploy/'s RBAC
    assert scheduled_events(cluster, namespace) == {name: 1 for name in expected}
    assert forbidden(cluster, after=began) == []
    # the gang's PodGroup, named after the job's uid, held the pods; a finished job's is deleted (killJob)
    assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods.values()} == {
        f"tf-dist-mnist-{created['metadata']['uid']}"}
    assert cluster.items(f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups") == []
    # the plugins' objects: the svc plugin's headless Service and hosts ConfigMap, the ssh plugin's Secret
    service, hosts, secret = seen["service"], seen["hosts"], seen["secret"]
    assert service is not None and service["spec"]["clusterIP"] == "None"
    assert hosts is not None and hosts["data"]["worker.host"].split() == [
        f"tf-dist-mnist-worker-{i}.tf-dist-mnist" for i in range(2)]
    assert secret is not None and {"id_rsa", "id_rsa.pub", "authorized_keys", "config"} <= set(secret["data"])
    job = cluster.get(f"{jobs}/tf-dist-mnist")
    assert job["status"]["succeeded"] == len(pods) and job["status"]["minAvailable"] == 3


def test_a_job_volcano_refuses_is_refused_with_volcanos_message(
        cluster: Cluster, webhook: Component, namespace: str) -> None:
    code, answer = cluster.admin.call("POST", JOBS.format(ns=namespace), tf_job(namespace, minAvailable=5))
    assert code == 400, answer
    assert 'admission webhook "validate-jobs.volcano.sh" denied the request' in answer["message"]
    assert "job 'minAvailable'" in answer["message"]
    assert "should not be greater than total replicas in tasks" in answer["message"]
    assert cluster.items(JOBS.format(ns=namespace)) == []
