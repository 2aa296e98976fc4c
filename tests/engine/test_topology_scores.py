"""The topology session's shortcuts decide as the plain node-by-node path does: a rule that sees its
node only through the node's HyperNodes is asked once per lowest domain (`by_domain`); a trailing score
rule reading job state is added to the class's cached node scores (`_ClassView.late`) instead of every
score being recomputed over the candidates; a node back at a usage it had before gets the answers it had
then (`Placement._refresh_row`), and so does a domain's usage (`HyperNodeInfo`); optimize chooses among
a domain's rows as over whole-node masks (`Placement._packed_among`)."""
from __future__ import annotations

from typing import Any

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import topology as workload
from vpolicy.compile.lower import compile_module
from vpolicy.engine import placement, topology
from vpolicy.engine.actions import allocate_topology
from vpolicy.engine.session import run_session
from vpolicy.lang import parse
from vpolicy.model.resources import total


def _document(snapshot: Any, mode: str) -> dict[str, Any]:
    document = run_session(snapshot, workload.policy(), mode=mode).decisions.to_document()
    document.pop("stats")
    return document


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(min_value=16, max_value=64), seed=st.integers(min_value=0, max_value=10_000),
       mode=st.sampled_from(workload.MODES), plain=st.sets(st.integers(min_value=0, max_value=40)))
def test_scores_asked_per_domain_decide_as_asked_per_node(monkeypatch: pytest.MonkeyPatch, nodes: int, seed: int,
                                                          mode: str, plain: set[int]) -> None:
    snapshot, gangs = workload.generate(workload.Size("T", nodes, 1.5), seed=seed)
    # some gangs without a networkTopology: their pods pack the fullest domains (the plugin's normal pods)
    keys = {gang.key for i, gang in enumerate(gangs) if i in plain}
    snapshot = dataclasses.replace(snapshot, podgroups=tuple(
        dataclasses.replace(pg, network_topology=None) if pg.key in keys else pg for pg in snapshot.podgroups))
    fast = _document(snapshot, mode)
    with monkeypatch.context() as m:
        # every node its own domain, and no cached class scores: each rule asked on each candidate node
        m.setattr(placement.Placement, "_domain_ids", lambda self: np.arange(len(self.node_list)))
        m.setattr(placement.Placement, "_score_parts", lambda self, task: (None, [], []))
        m.setattr(placement, "_FEW_ROWS", 10**9)  # optimize chooses over whole-node masks, never among rows
        init = placement.Placement.__init__

        def unkeyed(self: placement.Placement, *args: Any) -> None:
            init(self, *args)
            self._usage_keyed = False  # every changed row computed again

        m.setattr(placement.Placement, "__init__", unkeyed)

        def summed(self: topology.HyperNodeInfo) -> tuple[int, Any, Any]:
            used = total(n.used for n in self.nodes)
            return self._state.version, used, self.allocatable - used

        m.setattr(topology.HyperNodeInfo, "_usage", summed)
        slow = _document(snapshot, mode)
    assert fast == slow


def _rule(text: str) -> Any:
    module = parse.parse_text("plugin p \"test\"\n" + text, "p.vpol")
    return compile_module(module).rules["node_order"][0]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param('rule r: node_order(task, node) = if node.hypernode == "" then 0 else len(node.hypernodes)',
                 True, id="domains-only"),
    pytest.param('let depth(n: node): number = len(n.hypernodes)\n'
                 'rule r: node_order(task, node) = depth(node) * 2', True, id="through-a-helper"),
    pytest.param('rule r: node_order(task, node) = if node.hypernode == node.name then 1 else 0',
                 False, id="reads-the-name"),
    pytest.param('let named(n: node): string = n.name\n'
                 'rule r: node_order(task, node) = if named(node) == node.hypernode then 1 else 0',
                 False, id="a-helper-reads-the-name"),
    pytest.param('rule r: node_order(task, node) = len(node.hypernodes) + get(node.idle, "cpu")',
                 False, id="reads-usage"),
])
def test_a_rule_is_asked_per_domain_only_when_it_reads_nothing_else_of_the_node(text: str, expected: bool) -> None:
    assert _rule(text).by_domain is expected


def test_the_shipped_topology_node_score_is_asked_per_domain() -> None:
    plugin = next(p for tier in workload.policy().tiers for p in tier if p.name == "network-topology-aware")
    rules = {r.name: r for r in plugin.module.rules["node_order"]}
    assert rules["near_the_job"].by_domain


def _try_every_domain(ctx: Any, job: Any, pending: list[Any], names: list[str], unplaced: Any = None) -> Any:
    """allocate's domain search by its definition (Volcano main's allocateForJob): every domain of every
    allowed tier dry-run in breadth-first order; of those that hold the gang, the one whose placements
    end in the best-scored domain kept (a job with sub-groups: the best sum of its sub-groups' scores),
    ties to the lower tier, then the first name."""
    tree = ctx.state.topology.tree
    best, best_key = None, None
    for name in names:
        trial = allocate_topology._trial(ctx, job, pending, name, unplaced=unplaced)
        if trial is None:
            continue
        score = (trial.group_scores if trial.group_scores is not None
                 else allocate_topology._domain_score(ctx, job, trial.ended_in or name))
        key = (-score, tree.tier(name), name)
        if best_key is None or key < best_key:
            best, best_key = trial, key
    return best


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(nodes=st.integers(min_value=96, max_value=192), seed=st.integers(min_value=0, max_value=10_000),
       elastic=st.sets(st.integers(min_value=0, max_value=40)))
def test_trying_domains_best_first_decides_as_trying_all(monkeypatch: pytest.MonkeyPatch, nodes: int, seed: int,
                                                         elastic: set[int]) -> None:
    """Fit errors and pod conditions included: what the dry runs leave behind is replayed."""
    snapshot, gangs = workload.generate(workload.Size("T", nodes, 1.5), seed=seed)
    # some gangs need only half their pods: tasks beyond minMember are left over after a domain wins
    keys = {gang.key for i, gang in enumerate(gangs) if i in elastic}
    snapshot = dataclasses.replace(snapshot, podgroups=tuple(
        dataclasses.replace(pg, min_member=max(1, pg.min_member // 2)) if pg.key in keys else pg
        for pg in snapshot.podgroups))
    fast = _document(snapshot, "volcano")
    with monkeypatch.context() as m:
        m.setattr(allocate_topology, "_best_solution", _try_every_domain)
        slow = _document(snapshot, "volcano")
    assert fast == slow
