"""examples/cluster.yaml, the dump the docs and demos use, loads cleanly and says what its comments say."""
from __future__ import annotations

from pathlib import Path

from vpolicy.load import cluster
from vpolicy.model.snapshot import PodGroupPhase, TaskStatus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


def test_the_example_cluster_loads_without_errors_or_warnings() -> None:
    snap = cluster.load_cluster([EXAMPLE])
    assert snap.warnings == ()
    assert [n.name for n in snap.nodes] == ["cpu-1", "cpu-2", "cpu-3", "cpu-4", "gpu-1", "gpu-2"]
    assert [q.name for q in snap.queues] == ["research", "research-nlp", "research-vision", "prod", "root", "default"]
    assert [(c.name, c.value) for c in snap.priority_classes] == [("high", 1000), ("low", 10)]


def test_the_example_has_running_and_pending_gangs_as_described() -> None:
    snap = cluster.load_cluster([EXAMPLE])
    phases = {g.name: g.phase for g in snap.podgroups}
    assert phases["web-api"] is PodGroupPhase.RUNNING
    assert phases["bert-large"] is PodGroupPhase.INQUEUE
    assert phases["etl-nightly"] is PodGroupPhase.PENDING
    running = [p.key for p in snap.pods if p.status is TaskStatus.RUNNING]
    assert running == ["prod/web-api-0", "prod/web-api-1", "research/resnet-train-worker-0",
                       "research/resnet-train-worker-1"]
    assert sum(p.resreq["nvidia.com/gpu"] for p in snap.pods if p.node_name == "gpu-1") == 8000
    assert all(p.scheduler_name == "volcano" and p.group for p in snap.pods)


def test_the_example_vcjob_is_derived_pending_with_deferred_pods() -> None:
    snap = cluster.load_cluster([EXAMPLE])
    (finetune,) = [g for g in snap.podgroups if g.name.startswith("llm-finetune-")]
    assert finetune.phase is PodGroupPhase.PENDING and finetune.min_member == 2
    assert [p.name for p in snap.deferred_pods] == ["llm-finetune-worker-0", "llm-finetune-worker-1"]


def test_only_cpu_4_matches_the_ssd_indexers_node_selector() -> None:
    snap = cluster.load_cluster([EXAMPLE])
    (indexer,) = [p for p in snap.pods if p.name == "ssd-indexer-0"]
    matching = [n.name for n in snap.nodes if all(n.labels.get(k) == v for k, v in indexer.node_selector.items())]
    assert matching == ["cpu-4"]
