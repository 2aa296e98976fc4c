"""PodDisruptionBudgets and ResourceQuotas read from dumps and from live objects (pdb, resourcequota)."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster
from vpolicy.load.objects import snapshot_from_objects
from vpolicy.model import budgets
from vpolicy.model.resources import Resources

PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "ns"},
       "spec": {"selector": {"matchLabels": {"app": "db"},
                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
       "status": {"disruptionsAllowed": 1, "disruptedPods": {"db-0": "2024-01-01T00:00:00Z"}}}
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ns"},
         "spec": {"hard": {"cpu": "4"}}, "status": {"hard": {"cpu": "4", "requests.memory": "8Gi"},
                                                     "used": {"cpu": "1500m"}}}


def test_live_objects_carry_budgets_and_quotas_into_the_snapshot() -> None:
    snap = snapshot_from_objects([PDB, QUOTA])
    (pdb,) = snap.pdbs
    assert (pdb.key, pdb.disruptions_allowed, pdb.disrupted_pods) == ("ns/db", 1, ("db-0",))
    assert budgets.selector_matches(pdb.selector, {"app": "db", "tier": "a"})
    assert not budgets.selector_matches(pdb.selector, {"app": "db", "tier": "c"})
    (quota,) = snap.resource_quotas
    assert quota.hard == Resources({"cpu": 4000, "requests.memory": 8 * 1024 ** 3 * 1000})
    assert quota.used == Resources({"cpu": 1500})


def test_a_nil_or_empty_pdb_selector_selects_no_pod() -> None:
    snap = snapshot_from_objects([{**PDB, "spec": {}}, {**PDB, "metadata": {"name": "e", "namespace": "ns"},
                                                        "spec": {"selector": {}}}])
    assert [budgets.selector_matches(p.selector, {"app": "db"}) for p in snap.pdbs] == [False, False]


def test_a_bad_selector_operator_in_a_dump_is_a_located_error(tmp_path: Path) -> None:
    dump = tmp_path / "pdb.yaml"
    dump.write_text("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: ns}\n"
                    "spec:\n  selector:\n    matchExpressions:\n    - {key: app, operator: Near, values: [x]}\n")
    with pytest.raises(PolicyError) as caught:
        load_cluster([dump])
    (diag,) = caught.value.diagnostics
    assert (diag.span.file, diag.span.line) == (str(dump), 7)
    assert "Near" in diag.message
