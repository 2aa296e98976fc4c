"""The benchmark generator builds the clusters DESIGN §7 describes, the same ones for the same seed, and
the runner's correctness run decides something the independent validator accepts.

No timing is asserted anywhere here. Size S (100 nodes, 1,000 pending pods) runs once for correctness in
every test run, as DESIGN §7 asks; small custom sizes cover the other workloads.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from benchmarks import generate as gen
from benchmarks import run, table
from vpolicy.model.resources import Resources, total
from vpolicy.model.snapshot import ClusterSnapshot, PodGroupPhase, TaskStatus

TINY = gen.Size("tiny", 20, 200)
WORKLOADS = [pytest.param(w, id=w) for w in gen.WORKLOADS]


def _node_load(snapshot: ClusterSnapshot) -> dict[str, Resources]:
    by_node: dict[str, list[Resources]] = defaultdict(list)
    for pod in snapshot.pods:
        if pod.node_name:
            by_node[pod.node_name].append(pod.resreq)
    return {name: total(reqs) for name, reqs in by_node.items()}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_same_seed_gives_the_same_cluster(workload: str) -> None:
    first = gen.generate(TINY, workload, seed=7)
    second = gen.generate(TINY, workload, seed=7)
    assert first.snapshot == second.snapshot
    assert [p.uid for p in first.snapshot.pods] == [p.uid for p in second.snapshot.pods]
    assert first.summary() == second.summary()


@pytest.mark.parametrize("workload", WORKLOADS)
def test_another_seed_gives_another_cluster(workload: str) -> None:
    assert gen.generate(TINY, workload, seed=1).snapshot != gen.generate(TINY, workload, seed=2).snapshot


@pytest.mark.parametrize("size_name, max_jobs", [
    pytest.param("S", 200, id="S"),
    pytest.param("M", 1_300, id="M"),
    pytest.param("L", 6_500, id="L", marks=pytest.mark.slow),
])
def test_sizes_have_their_node_and_pending_pod_counts(size_name: str, max_jobs: int) -> None:
    size = gen.SIZES[size_name]
    generated = gen.generate(size, "steady", seed=1)
    snapshot = generated.snapshot
    pending = [p for p in snapshot.pods if p.status is TaskStatus.PENDING]
    assert len(snapshot.nodes) == size.nodes
    assert len(pending) == generated.pending_pods == size.pending_pods
    assert generated.gpu_nodes == sum(1 for n in snapshot.nodes if n.allocatable.get(gen.GPU)) == size.nodes // 5
    assert size.pending_pods // 64 < generated.pending_jobs <= max_jobs
    queues_with_pending = {pg.queue for pg in snapshot.podgroups if pg.phase is not PodGroupPhase.RUNNING}
    assert len(queues_with_pending) == 8


@pytest.mark.parametrize("workload", WORKLOADS)
def test_running_pods_never_overfill_a_node(workload: str) -> None:
    snapshot = gen.generate(gen.SIZES["S"], workload, seed=3).snapshot
    nodes = {n.name: n for n in snapshot.nodes}
    for name, load in _node_load(snapshot).items():
        assert load.le(nodes[name].allocatable), f"{name} holds {load}, more than {nodes[name].allocatable}"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_running_pods_belong_to_running_podgroups_and_pending_ones_to_waiting_podgroups(workload: str) -> None:
    snapshot = gen.generate(gen.SIZES["S"], workload, seed=3).snapshot
    podgroups = {pg.key: pg for pg in snapshot.podgroups}
    members = Counter(f"{p.namespace}/{p.group}" for p in snapshot.pods if p.group)
    for pod in snapshot.pods:
        if not pod.group:
            assert pod.namespace == "kube-system" and pod.status is TaskStatus.RUNNING
            continue
        pg = podgroups[f"{pod.namespace}/{pod.group}"]
        if pod.status is TaskStatus.RUNNING:
            assert pod.node_name and pg.phase is PodGroupPhase.RUNNING
        else:
            assert pod.status is TaskStatus.PENDING and not pod.node_name
            assert pg.phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)
    for key, pg in podgroups.items():
        assert 1 <= pg.min_member <= members[key] <= 64
        assert pg.min_resources is not None and "pods" not in pg.min_resources


@pytest.mark.parametrize("workload", WORKLOADS)
def test_gpu_pods_ask_1_2_4_or_8_gpus_and_tolerate_the_gpu_taint(workload: str) -> None:
    snapshot = gen.generate(gen.SIZES["S"], workload, seed=3).snapshot
    gpu_pods = [p for p in snapshot.pods if gen.gpus(p.resreq)]
    assert gpu_pods
    assert {gen.gpus(p.resreq) for p in gpu_pods} <= {1, 2, 4, 8}
    assert all(p.tolerations == (gen.GPU_TOLERATION,) and p.node_selector == gen.GPU_SELECTOR for p in gpu_pods)
    assert all(p.resreq["pods"] == 1 for p in snapshot.pods)


def test_queues_form_a_hierarchy_with_weights_and_some_capabilities() -> None:
    queues = {q.name: q for q in gen.generate(TINY, "steady").snapshot.queues}
    assert {"root", "default", "research", "production"} <= set(queues)
    children = Counter(q.parent for q in queues.values() if q.parent)
    assert children["research"] == 3 and children["production"] == 3
    assert all(queues[q.parent] for q in queues.values() if q.parent)
    assert sum(1 for q in queues.values() if q.capability is not None) >= 2
    assert len({q.weight for q in queues.values()}) > 2


def test_fragmentation_leaves_some_gpu_nodes_empty_and_the_others_partly_used() -> None:
    generated = gen.generate(gen.SIZES["S"], "fragmentation", seed=1)
    load = _node_load(generated.snapshot)
    used = [gen.gpus(load.get(n.name, Resources())) for n in generated.snapshot.nodes if n.allocatable.get(gen.GPU)]
    assert 0 in used and any(0 < u < 8 for u in used)
    assert generated.pending_gpus <= generated.free_gpus


def test_preemption_fills_each_gpu_node_with_one_teams_training_and_small_low_priority_pods() -> None:
    generated = gen.generate(gen.SIZES["S"], "preemption", seed=1)
    snapshot = generated.snapshot
    assert generated.free_gpus <= 0.1 * 8 * generated.gpu_nodes
    running_gpu = [p for p in snapshot.pods if gen.gpus(p.resreq) and p.status is TaskStatus.RUNNING]
    pending_gpu = [p for p in snapshot.pods if gen.gpus(p.resreq) and p.status is TaskStatus.PENDING]
    assert {(p.priority_class_name, gen.gpus(p.resreq)) for p in running_gpu} == {
        ("normal", 4), ("normal", 8), ("low", 1), ("low", 2)}
    teams: dict[str, set[str]] = {}
    for p in running_gpu:
        teams.setdefault(p.node_name, set()).add(p.namespace)
    assert all(len(team) == 1 for team in teams.values())
    assert {p.priority_class_name for p in pending_gpu} <= {"high", "urgent"}
    assert {gen.gpus(p.resreq) for p in pending_gpu} == {4, 8}
    assert {p.namespace for p in pending_gpu} <= {p.namespace for p in running_gpu}


def test_reclaim_lets_two_queues_borrow_the_cluster_and_the_lenders_ask_for_it_back() -> None:
    generated = gen.generate(gen.SIZES["S"], "reclaim", seed=1)
    snapshot = generated.snapshot
    running = [p for p in snapshot.pods if p.group and p.status is TaskStatus.RUNNING]
    pending = [p for p in snapshot.pods if p.status is TaskStatus.PENDING]
    borrowers = {q for q, _w in (*gen.GPU_BORROWERS, *gen.CPU_BORROWERS)}
    lenders = {q for q, _w in (*gen.GPU_LENDERS, *gen.CPU_LENDERS)}
    assert not borrowers & lenders
    assert {p.namespace for p in running} == borrowers
    assert {p.namespace for p in running if gen.gpus(p.resreq)} == {q for q, _w in gen.GPU_BORROWERS}
    assert {p.namespace for p in pending} <= lenders
    assert {p.namespace for p in pending if gen.gpus(p.resreq)} == {q for q, _w in gen.GPU_LENDERS}
    assert generated.free_gpus <= 0.1 * 8 * generated.gpu_nodes < generated.pending_gpus
    queues = {q.name: q for q in snapshot.queues}
    assert all(queues[q].reclaimable for q in borrowers)
    podgroups = [pg for pg in snapshot.podgroups if pg.queue in borrowers]
    assert any(pg.min_member == 1 for pg in podgroups)  # elastic: gang lets reclaim take all but one


def test_the_reclaim_workload_reclaims_from_the_borrowers_only_and_validates() -> None:
    generated = gen.generate(gen.Size("small", 20, 200), "reclaim", seed=1)
    policy = run.policy_for("reclaim")
    assert policy.actions == ("enqueue", "allocate", "reclaim", "backfill")
    result = run.measure_mode(generated, "volcano", runs=1)
    _assert_sound(result, 200)
    document = run.run_session(generated.snapshot, policy).decisions.to_document()
    evicted = document["evictions"]
    assert evicted and {e["action"] for e in evicted} == {"reclaim"}
    borrowers = {q for q, _w in (*gen.GPU_BORROWERS, *gen.CPU_BORROWERS)}
    assert {e["pod"].split("/")[0] for e in evicted} <= borrowers
    assert {e["for"].split("/")[0] for e in evicted} <= {q for q, _w in (*gen.GPU_LENDERS, *gen.CPU_LENDERS)}


def test_decision_metrics_count_placed_gpus_and_evicted_gpu_pods() -> None:
    snapshot = gen.generate(TINY, "steady").snapshot
    gpu_pod = next(p for p in snapshot.pods if gen.gpus(p.resreq) and p.status is TaskStatus.PENDING)
    cpu_pod = next(p for p in snapshot.pods if not gen.gpus(p.resreq) and p.status is TaskStatus.PENDING)
    victim = next(p for p in snapshot.pods if gen.gpus(p.resreq) and p.status is TaskStatus.RUNNING)
    document = {"binds": {gpu_pod.key: "gpu-00000"}, "pipelined": {cpu_pod.key: "cpu-00000"},
                "evictions": [{"pod": victim.key, "action": "preempt", "for": "x/y", "rule": ""}],
                "unschedulable": {}}
    metrics = run.decision_metrics(snapshot, document)
    assert metrics["pods_placed"] == 2
    assert metrics["gpus_placed"] == gen.gpus(gpu_pod.resreq)
    assert (metrics["evictions"], metrics["evicted_gpu_pods"]) == (1, 1)
    assert metrics["evicted_gpus"] == gen.gpus(victim.resreq)
    assert metrics["gpu_pods_pipelined"] == 0  # the GPU pod is bound, the pipelined one asks no GPU
    moved = run.decision_metrics(snapshot, {**document, "binds": {}, "pipelined": {gpu_pod.key: "gpu-00000"}})
    assert moved["gpu_pods_pipelined"] == 1
    assert moved["gpu_pods_pipelined_digest"] != metrics["gpu_pods_pipelined_digest"]


def _assert_sound(result: dict[str, object], pending_pods: int) -> None:
    assert result["status"] == "ok"
    assert result["deterministic"] is True
    assert 0 < int(result["pods_placed"]) <= pending_pods  # type: ignore[call-overload]  # reason: JSON value
    assert result["violations"] == 0, result["violation_codes"]


def test_a_volcano_run_of_a_small_steady_cluster_validates() -> None:
    generated = gen.generate(gen.Size("small", 20, 200), "steady", seed=1)
    result = run.measure_mode(generated, "volcano", runs=1)
    assert result["actions"] == ["enqueue", "allocate", "backfill"]
    _assert_sound(result, 200)


def test_the_preemption_workload_runs_preempt_and_validates() -> None:
    generated = gen.generate(gen.Size("small", 20, 200), "preemption", seed=1)
    result = run.measure_mode(generated, "volcano", runs=1)
    assert result["actions"] == ["enqueue", "allocate", "preempt", "backfill"]
    _assert_sound(result, 200)


def test_a_volcano_run_of_size_s_steady_validates() -> None:
    result = run.measure_mode(gen.generate(gen.SIZES["S"], "steady", seed=1), "volcano", runs=1)
    _assert_sound(result, 1_000)


def test_the_runner_reports_every_mode_and_null_ratios_when_one_is_missing() -> None:
    result = run.run_benchmark(gen.Size("tiny", 10, 40), "steady", modes=run.MODES, runs=1, seed=1, timeout=300)
    assert (result["size"], result["workload"], result["nodes"], result["pending_pods"]) == ("tiny", "steady", 10, 40)
    volcano = result["volcano"]
    assert volcano["status"] == "ok", volcano
    assert volcano["peak_rss_mb"] > 0 and volcano["session_ms_p50"] > 0
    assert set(volcano) >= {"session_ms_p50", "session_ms_max", "pods_placed", "gpus_placed", "evictions",
                            "evicted_gpu_pods", "peak_rss_mb", "pods_per_s", "violations"}
    assert result["optimize"]["status"] == "ok", result["optimize"]
    ratio = result["gpus_placed_optimize_over_volcano"]
    assert ratio is None or isinstance(ratio, float)
    assert isinstance(result["same_gpu_pods_pipelined"], bool)
    assert result["optimize_pipelined_every_volcano_gpu_pod"] is True  # steady pipelines no GPU pod


def test_the_runner_tells_same_preemptors_from_more_preemptors() -> None:
    def out(volcano: list[str], optimize: list[str]) -> dict[str, object]:
        return {mode: {"status": "ok", "gpu_pods_pipelined_keys": keys,
                       "gpu_pods_pipelined_digest": ",".join(keys)}
                for mode, keys in (("volcano", volcano), ("optimize", optimize))}

    more = out(["ns/a", "ns/b"], ["ns/a", "ns/b", "ns/c"])
    assert run._same(more, "gpu_pods_pipelined_digest") is False
    assert run._every_volcano_gpu_pod(more) is True
    other = out(["ns/a", "ns/b"], ["ns/a", "ns/c", "ns/d"])
    assert run._every_volcano_gpu_pod(other) is False
    assert run._every_volcano_gpu_pod({"volcano": {"status": "timeout"}, "optimize": more["optimize"]}) is None


def test_the_runner_says_which_run_optimize_kept_under_the_budget_it_was_given() -> None:
    generated = gen.generate(gen.Size("small", 20, 200), "preemption", seed=1)
    spent = run.measure_mode(generated, "optimize", runs=1, optimize_budget="1e-9")  # stops at its first check
    assert spent["optimize_budget_s"] == 1e-9
    assert spent["optimize_runs"] == {"preempt": {"kept": "volcano", "reason": "budget-ran-out",
                                                  "why": "the optimize run stopped at the session budget"}}
    unlimited = run.measure_mode(generated, "optimize", runs=1, optimize_budget="unlimited")
    assert unlimited["optimize_budget_s"] is None
    assert unlimited["optimize_runs"]["preempt"]["why"] != spent["optimize_runs"]["preempt"]["why"]
    _assert_sound(unlimited, 200)
    shown = table.build_table({"size": "small", "nodes": 20, "gpu_nodes": 4, "pending_pods": 200, "pending_jobs": 20,
                               "running_pods": 100, "workload": "preemption", "seed": 1, "optimize": spent})
    assert shown.caption == ("optimize's preempt kept volcano's run (the optimize run stopped at the session "
                             "budget; budget 1e-09 s)")


def test_the_runner_refuses_a_budget_that_is_no_duration(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run.main(["--optimize-budget", "soon"])
    assert exited.value.code == 2
    assert "--optimize-budget" in capsys.readouterr().err
