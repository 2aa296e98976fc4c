"""The API server restarted mid-run, with etcd compacted first so that every watch resumed from before
gets 410 Gone: the controllers and the scheduler list again and carry on. Nothing is lost (every job of
both waves ends Completed, every pod bound) and nothing is done twice (one PodGroup per job, one pod per
task index, one bind — one `Scheduled` Event — per pod, no retry of any job)."""
from __future__ import annotations

import datetime
import time

from tests.e2e.cluster import (Cluster, Component, audit, calls, controllers, eventually, forbidden, scheduled_events,
                               scheduler)
from tests.e2e.test_vcjob import JOBS, tf_job


def test_api_server_restart_and_etcd_compaction_lose_nothing_and_repeat_nothing(
        cluster: Cluster, webhook: Component, components: list[Component]) -> None:
    ns = cluster.namespace("restart")
    cluster.kwok_nodes(f"{ns}-n", 3, cpu="4", memory="8Gi")
    components += [controllers(cluster), scheduler(cluster)]
    jobs = JOBS.format(ns=ns)
    for i in range(4):
        cluster.create(tf_job(ns, f"a{i}"))
    restarted_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    # mid-run: the first wave is being created, bound and run while the API server goes away; etcd is
    # compacted to its latest revision while it is away, so no watch can resume where it stopped
    restarted = cluster.control_plane("restart", "kube-apiserver", "--compact", timeout=180)
    assert restarted.returncode == 0, restarted.stderr
    settled = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=10)
    for i in range(4):
        cluster.create(tf_job(ns, f"b{i}"))

    def phases() -> dict[str, str]:
        return {j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase", "")
                for j in cluster.items(jobs)}
    eventually(lambda: set(phases().values()) == {"Completed"} and len(phases()) == 8, 180, "all 8 jobs Completed")
    time.sleep(2)  # anything done twice would show by now
    assert all(c.alive() for c in components), [c.output()[-2000:] for c in components if not c.alive()]
    # etcd's history before the restart is gone: each component's pod informer could not resume its
    # watch (410) and listed again (a second list; the first was at its start, before the restart)
    relisted = {e["user"]["username"].rsplit(":", 1)[-1] for e in audit(cluster)
                if e["verb"] == "list" and e["objectRef"].get("resource") == "pods"
                and e.get("stageTimestamp", "") > restarted_at and e["responseStatus"].get("code") == 200}
    assert {"vpolicy-scheduler", "vpolicy-controllers"} <= relisted
    events = audit(cluster, ns)
    expected = {f"{j}{i}-{task}" for j in "ab" for i in range(4) for task in ("ps-0", "worker-0", "worker-1")}
    # every pod created once and bound once (the API server's own record of the calls)
    assert calls(events, "vpolicy-controllers", "create", "pods", code=201) == {name: 1 for name in expected}
    assert calls(events, "vpolicy-scheduler", "create", "pods", "binding", code=201) == {name: 1 for name in expected}
    assert scheduled_events(cluster, ns) == {name: 1 for name in expected}
    # one PodGroup per job; no job restarted; every worker ran to the end (a ps still running when its
    # workers finished is killed by the TaskCompleted -> CompleteJob policy, as in Volcano)
    assert sorted(calls(events, "vpolicy-controllers", "create", "podgroups", code=201).values()) == [1] * 8
    for job in cluster.items(jobs):
        assert job["status"].get("retryCount", 0) == 0, job["status"]
    pods = {p["metadata"]["name"]: p for p in cluster.pods(ns)}
    assert all(pods[f"{j}{i}-worker-{w}"]["status"]["phase"] == "Succeeded"
               for j in "ab" for i in range(4) for w in range(2))
    # a restarted API server refuses everything (403) until its RBAC cache is filled: those calls were
    # retried; after that moment deploy/'s RBAC allowed every call
    assert forbidden(cluster, after=settled.strftime("%Y-%m-%dT%H:%M:%S")) == []
    cluster.admin.call("DELETE", f"/api/v1/namespaces/{ns}")
