"""`vpolicy diff --symbolic`: search small clusters for one on which two policies decide differently."""
from __future__ import annotations

from pathlib import Path

from vpolicy.harness.diff import PolicyRef
from vpolicy.harness.diff_search import search
from vpolicy.load.cluster import load_cluster

ROOT = Path(__file__).resolve().parents[2]
HELM = PolicyRef("conf", str(ROOT / "examples/volcano-scheduler.conf"))


def test_a_conf_never_differs_from_itself_and_bound_one_is_exhaustive() -> None:
    result = search(HELM, HELM, bound=1, worlds=2000)
    assert result.exhaustive and result.diff is None
    assert result.summary().startswith("proved equal: all ")


def test_two_confs_that_differ_get_a_cluster_that_reproduces_the_difference(tmp_path: Path) -> None:
    no_gang = tmp_path / "no-gang.conf"
    no_gang.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
                       '- plugins:\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n')
    result = search(HELM, PolicyRef("conf", str(no_gang)), bound=2, worlds=500)
    assert result.diff is not None and not result.diff.same
    assert result.cluster_yaml is not None
    (tmp_path / "cluster.yaml").write_text(result.cluster_yaml)
    assert load_cluster([tmp_path / "cluster.yaml"]).nodes, "the printed cluster loads back"
