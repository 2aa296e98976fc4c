"""Whole simulations on tiny workloads whose numbers are computed by hand in each test.

The first tests run the real engine under Volcano's default conf, on clusters where its decisions are
forced; the eviction tests script the sessions (`ScriptedSessions`) so the lifecycle arithmetic is
checked independently of what a policy would choose.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from tests.sim.conftest import WriteWorkload, cluster, load, node
from vpolicy.harness import policy as policies
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions, Eviction
from vpolicy.model.resources import Resources
from vpolicy.sim import simulate, summary

START = 1_714_953_600.0  # the workloads' default start, 2024-05-06T00:00:00Z


def run(snapshot: snap.ClusterSnapshot, path: str, decide: simulate.Decide | None = None,
        **kwargs: object) -> simulate.RunResult:
    workload, jobs = load(path)
    chosen = decide if decide is not None else policies.resolve(snapshot)
    return simulate.simulate(snapshot, jobs, chosen, workload=workload, **kwargs)  # type: ignore[arg-type]  # reason: test passes through keyword arguments


def test_a_job_waits_for_gpus_held_by_an_earlier_job(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: first, at: 0s, requests: {cpu: "1", nvidia.com/gpu: "2"}, duration: 100s}
        - {name: second, at: 10s, requests: {cpu: "1", nvidia.com/gpu: "1"}, duration: 50s}
    """)
    result = run(cluster(node("n1", cpu=8, gpus=2)), path)

    # Sessions at 0 (first binds), 10 (second arrives, no GPU), 100 (first done, second binds), 150 (done).
    assert [s.time for s in result.samples] == [0.0, 10.0, 100.0, 150.0]
    assert result.end == 150.0
    first, second = result.jobs["default/first"], result.jobs["default/second"]
    assert (first.first_start, first.finish) == (0.0, 100.0)
    assert (second.first_start, second.finish) == (100.0, 150.0)
    m = summary.summarize(result, starve_after=60)
    # GPUs: 2 for 100 s, then 1 for 50 s -> 250 / 150; CPU: 1 core all along.
    assert m["gpu"]["mean_allocated"] == round(250 / 150, 4) == 1.6667
    assert m["gpu"]["mean_utilization"] == round(250 / 150 / 2, 4) == 0.8333
    assert m["cpu"]["mean_allocated_cores"] == 1.0 and m["cpu"]["mean_utilization"] == 0.125
    # waits 0 and 90: nearest rank gives p50 = 0, p95 = 90; completions 100 and 140.
    assert m["wait_s"] == {"count": 2, "p50": 0.0, "p95": 90.0, "max": 90.0}
    assert m["completion_s"] == {"count": 2, "p50": 100.0, "p95": 140.0, "max": 140.0}
    assert m["starvation"] == {"threshold_s": 60, "count": 1, "jobs": ["default/second"]}
    # one queue with demand holds its whole deserved share whenever defined: Jain = 1
    assert m["fairness"] == {"mean_jain": 1.0, "min_jain": 1.0}
    assert m["jobs"] == {"submitted": 2, "started": 2, "completed": 2, "failed": 0, "unfinished": 0, "restarted": 0}


def test_free_gpus_split_over_nodes_count_as_fragmented(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: a, at: 0s, requests: {cpu: "1", nvidia.com/gpu: "3"}, duration: 100s}
        - {name: b, at: 0s, requests: {cpu: "1", nvidia.com/gpu: "3"}, duration: 100s}
        - {name: c, at: 5s, requests: {cpu: "1", nvidia.com/gpu: "2"}, duration: 10s}
    """)
    result = run(cluster(node("n1", gpus=4), node("n2", gpus=4)), path)

    # a and b take 3 GPUs on each node; c (2 GPUs) waits from 5 s to 100 s while 1 + 1 GPUs sit free.
    assert [(s.time, s.gpu_fragmented) for s in result.samples] == [(0.0, 0), (5.0, 2000), (100.0, 0), (110.0, 0)]
    m = summary.summarize(result, starve_after=3600)
    assert m["gpu"]["mean_fragmented"] == round(2 * 95 / 110, 4) == 1.7273
    assert m["gpu"]["max_fragmented"] == 2.0
    # 6 GPUs for 100 s, 2 for 10 s, of 8: (600 + 20) / 110 / 8
    assert m["gpu"]["mean_utilization"] == round(620 / 110 / 8, 4) == 0.7045
    assert m["queues"]["default"]["wait_s"] == {"count": 3, "p50": 0.0, "p95": 95.0, "max": 95.0}


def test_a_closed_queue_holds_its_jobs_until_it_opens(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: late, at: 10s, requests: {cpu: "1"}, duration: 20s}
    """, extra="""\
        events:
        - {at: 0s, queue: default, state: Closed}
        - {at: 60s, queue: default, state: Open}
    """)
    result = run(cluster(node("n1")), path)
    job = result.jobs["default/late"]
    assert (job.arrival, job.first_start, job.finish) == (10.0, 60.0, 80.0)


def test_the_period_sets_the_session_grid(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: a, at: 0s, requests: {cpu: "8"}, duration: 95s}
        - {name: b, at: 1s, requests: {cpu: "8"}, duration: 10s}
    """)
    result = run(cluster(node("n1", cpu=8)), path, period=30.0)
    # b arrives at 1 s but is first seen at 30 s; a's end at 95 s is seen at 120 s, when b starts.
    assert [s.time for s in result.samples] == [0.0, 30.0, 120.0, 150.0]
    assert (result.jobs["default/a"].finish, result.jobs["default/b"].first_start) == (95.0, 120.0)


def test_until_stops_the_run_and_counts_unfinished_jobs(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: long, at: 0s, requests: {cpu: "1"}, duration: 1h}
    """)
    result = run(cluster(node("n1")), path, until=600.0)
    m = summary.summarize(result, starve_after=3600)
    assert result.end == 600.0
    assert m["jobs"]["unfinished"] == 1 and m["completion_s"]["count"] == 0


class ScriptedSessions:
    """Binds every pending pod to n1; at `evict_at` seconds evicts `victim` for `default/high`."""

    def __init__(self, *, evict_at: float, victim: str):
        self.evict_at, self.victim = evict_at, victim

    def __call__(self, snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions:
        d = Decisions(binds={p.key: "n1" for p in snapshot.pods if p.status is snap.TaskStatus.PENDING})
        if now - START == self.evict_at:
            d.evictions.append(Eviction(self.victim, "preempt", "default/high", "test"))
        return d


@pytest.mark.parametrize("on_evict, restarted, failed", [
    pytest.param("restart", 1, 0, id="restart-runs-the-whole-job-again"),
    pytest.param("fail", 0, 1, id="fail-ends-the-job"),
])
def test_an_eviction_throws_away_the_jobs_gpu_time(write_workload: WriteWorkload, on_evict: str, restarted: int,
                                                    failed: int) -> None:
    path = write_workload(f"""\
        - {{name: low, at: 0s, pods: 2, requests: {{nvidia.com/gpu: "1"}}, duration: 1000s, on_evict: {on_evict}}}
        - {{name: high, at: 100s, pods: 2, requests: {{nvidia.com/gpu: "1"}}, duration: 50s}}
    """)
    result = run(cluster(node("n1", gpus=4)), path, ScriptedSessions(evict_at=100.0, victim="default/low-worker-0"))
    m = summary.summarize(result, starve_after=3600)

    # Both of low's pods ran 100 s on 1 GPU each: 200 GPU-seconds lost.
    assert m["preemption"] == {"evicted_pods": 1, "by_action": {"preempt": 1}, "jobs_restarted": restarted,
                               "jobs_failed": failed, "lost_gpu_hours": round(200 / 3600, 4)}
    low = result.jobs["default/low"]
    if on_evict == "restart":
        # Released at 101 and bound again at once; its 1000 s start over: done at 1101.
        assert (low.first_start, low.finish, low.restarts) == (0.0, 1101.0, 1)
        # GPUs: 2 for 100 s, 4 for 1 s (low releasing + high), 4 until 150, then 2 until 1101.
        assert m["gpu"]["mean_allocated"] == round((200 + 4 + 4 * 49 + 2 * 951) / 1101, 4) == 2.0908
    else:
        assert (low.finish, low.failed) == (100.0, True)
        assert m["jobs"]["completed"] == 1 and m["jobs"]["failed"] == 1
        assert result.end == 150.0


def test_pods_evicted_in_a_session_release_their_node_one_period_later(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: low, at: 0s, requests: {nvidia.com/gpu: "1"}, duration: 1000s, on_evict: fail}
        - {name: tick, at: 10s, requests: {cpu: "1"}, duration: 5s}
    """)
    seen: list[tuple[float, tuple[str, ...]]] = []
    scripted = ScriptedSessions(evict_at=10.0, victim="default/low-worker-0")

    def decide(snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions:
        seen.append((now - START, tuple(f"{p.key}:{p.status.value}" for p in snapshot.pods)))
        return scripted(snapshot, now=now)

    run(cluster(node("n1", gpus=1)), path, decide, until=30.0)
    assert seen == [(0.0, ("default/low-worker-0:Pending",)),
                    (10.0, ("default/low-worker-0:Running", "default/tick-worker-0:Pending")),
                    (11.0, ("default/tick-worker-0:Running",)),  # evicted at 10, Releasing until 11
                    (15.0, ())]  # tick's 5 s are over: it is gone before the session


def test_jobs_already_in_the_dump_run_for_the_existing_duration(write_workload: WriteWorkload) -> None:
    running = snap.Pod("ns", "old-0", "u1", Resources({"cpu": 1000, "pods": 1}),
                       snap.TaskStatus.RUNNING, node_name="n1", phase="Running", group="old")
    group = snap.PodGroup("ns", "old", "g1", phase=snap.PodGroupPhase.RUNNING)
    base = replace(cluster(node("n1")), pods=(running,), podgroups=(group,))
    path = write_workload("", extra="existing: {duration: 30m}\n")
    result = run(base, path)
    old = result.jobs["ns/old"]
    assert (old.origin, old.first_start, old.finish) == ("cluster", 0.0, 1800.0)
    assert summary.summarize(result, starve_after=60)["jobs"]["submitted"] == 0  # not a workload job


def test_only_preemptors_are_nominated_and_a_new_pipeline_calls_for_a_session(write_workload: WriteWorkload) -> None:
    """At 10 s the session pipelines both of `later`'s pods, nominating only the one its evictions made
    room for (as Volcano does); the next session sees that pod nominated, the other not, and comes one
    period later although nothing else is due then."""
    path = write_workload("""\
        - {name: later, at: 10s, pods: 2, requests: {cpu: "1"}, duration: 5s}
    """)
    seen: list[tuple[float, tuple[str, ...]]] = []

    def decide(snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions:
        pods = tuple(f"{p.key}:{p.nominated_node or '-'}" for p in snapshot.pods)
        seen.append((now - START, pods))
        if now - START == 10.0:
            return Decisions(pipelined={"default/later-worker-0": "n1", "default/later-worker-1": "n1"},
                             nominated={"default/later-worker-0": "n1"})
        return Decisions()

    run(cluster(node("n1")), path, decide, until=12.0)
    assert seen == [(0.0, ()),
                    (10.0, ("default/later-worker-0:-", "default/later-worker-1:-")),
                    (11.0, ("default/later-worker-0:n1", "default/later-worker-1:-"))]
