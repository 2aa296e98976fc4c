"""A Volcano CronJob on the real API server, its clock sped up (`vpolicy controllers --clock-speed 30`:
a cron minute every 2 s): it creates a vcjob each scheduled minute (each one admitted by the webhook,
run by the scheduler and kwok to Completed) and keeps only `successfulJobsHistoryLimit` finished ones,
deleting the oldest, with lastScheduleTime and lastSuccessfulTime in its status."""
from __future__ import annotations

from typing import Any

from tests.e2e.cluster import Cluster, Component, audit, calls, controllers, eventually, scheduler

CRONJOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/cronjobs"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"


def test_cronjob_runs_on_schedule_and_keeps_its_history_limit(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("cron")
    cluster.kwok_nodes(f"{ns}-n", 2, cpu="4", memory="8Gi")
    components += [controllers(cluster, "controllers", "--clock-speed", "30"), scheduler(cluster)]
    cluster.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                    "metadata": {"name": "tick", "namespace": ns},
                    "spec": {"schedule": "*/1 * * * *", "successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1,
                             "concurrencyPolicy": "Allow", "jobTemplate": {"spec": {
                                 "schedulerName": "volcano", "minAvailable": 1, "tasks": [{
                                     "name": "main", "replicas": 1, "template": {"spec": {
                                         "restartPolicy": "Never", "containers": [{
                                             "name": "main", "image": "busybox",
                                             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}]}}}})

    def created() -> dict[str, int]:
        return calls(audit(cluster, ns), "vpolicy-controllers", "create", "jobs", code=201)

    def settled() -> bool:
        jobs = cluster.items(JOBS.format(ns=ns))
        finished = [j for j in jobs if ((j.get("status") or {}).get("state") or {}).get("phase") == "Completed"]
        return len(created()) >= 5 and len(finished) == 2 and len(jobs) <= 3
    eventually(settled, 120, "five scheduled runs, two finished ones kept")
    made = created()
    assert set(made.values()) == {1}  # each scheduled minute made one Job
    minutes = sorted(int(name.rsplit("-", 1)[1]) for name in made)
    assert all(b - a == 1 for a, b in zip(minutes, minutes[1:])), minutes  # every minute, none skipped
    jobs: list[dict[str, Any]] = cluster.items(JOBS.format(ns=ns))
    finished = sorted(j["metadata"]["name"] for j in jobs
                      if ((j.get("status") or {}).get("state") or {}).get("phase") == "Completed")
    older = sorted(set(made) - {j["metadata"]["name"] for j in jobs})
    assert older and max(int(n.rsplit("-", 1)[1]) for n in older) < min(int(n.rsplit("-", 1)[1]) for n in finished)
    for job in jobs:
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner.get("controller")) == ("CronJob", "tick", True)
        assert job["spec"]["queue"] == "default"  # through the job webhook's defaults
    status = cluster.get(f"{CRONJOBS.format(ns=ns)}/tick")["status"]
    assert status["lastScheduleTime"] and status["lastSuccessfulTime"]
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
