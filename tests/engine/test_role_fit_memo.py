"""The per-role predicate error cache (`engine.actions.role_fit_memo`) joins a task's failed nodes into its
role's entry only when they can add something: a task finding the same feasible rows as the role's last
one (the class view's same array) adds none. Sessions decide as when every task's failures are joined."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.build import GIB, NS, node, podgroup, resources, snapshot
from vpolicy.engine.actions import role_fit_memo
from vpolicy.engine.placement import FitErrors
from vpolicy.engine.session import run_session
from vpolicy.engine.state import TaskInfo
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import helm_default_conf_text, parse_conf_text
from vpolicy.model.snapshot import ClusterSnapshot, Pod, TaskStatus


@st.composite
def role_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """Nodes of assorted sizes; jobs whose tasks share a role but not a size (a big one fails where a
    small sibling would fit: the cache then refuses the small one), some needing only part of their
    tasks, some tasks without a role."""
    nodes = [node(f"n{i}", cpu=draw(st.sampled_from([1000, 2000, 4000])), memory=8 * GIB, pods=draw(st.integers(2, 6)))
             for i in range(draw(st.integers(2, 8)))]
    pods: list[Pod] = []
    groups = []
    for g in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 6))
        groups.append(podgroup(f"g{g}", min_member=draw(st.integers(1, size))))
        for i in range(size):
            cpu = draw(st.sampled_from([500, 1000, 1500, 3000]))
            role = draw(st.sampled_from(["worker", "worker", "ps", ""]))
            pods.append(Pod(NS, f"g{g}-{i}", f"uid-g{g}-{i}", resources(cpu, GIB, pods=1), TaskStatus.PENDING,
                            group=f"g{g}", role=role))
    return snapshot(nodes=nodes, pods=pods, podgroups=groups)


def _document(snap: ClusterSnapshot) -> dict[str, Any]:
    policy = from_conf(parse_conf_text(helm_default_conf_text(), file="<helm-conf>"))
    document = run_session(snap, policy).decisions.to_document()
    document.pop("stats")
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(snap=role_clusters())
def test_joining_only_new_failures_decides_as_joining_every_tasks(monkeypatch: pytest.MonkeyPatch,
                                                                  snap: ClusterSnapshot) -> None:
    shortcut = _document(snap)
    screen = role_fit_memo.RoleFitMemo.screen

    def every_time(self: role_fit_memo.RoleFitMemo, task: TaskInfo, rows: np.ndarray, errors: FitErrors) -> np.ndarray:
        self._joined = None  # each task's failed nodes joined into its role's entry
        return screen(self, task, rows, errors)

    with monkeypatch.context() as m:
        m.setattr(role_fit_memo.RoleFitMemo, "screen", every_time)
        assert _document(snap) == shortcut


def test_a_role_gets_its_failures_even_where_another_roles_task_found_the_same_rows() -> None:
    """a-w1 and b-p1 are one class and find the same rows (n1: n0 is too small for 3 cpu); b-p1's
    failure on n0 is its role's own, so c-p2 (same role, small enough for n0) is refused n0."""
    def pod(name: str, cpu: int, role: str, priority: int) -> Pod:
        return Pod(NS, name, f"uid-{name}", resources(cpu, GIB, pods=1), TaskStatus.PENDING, group="g", role=role,
                   priority=priority)

    snap = snapshot(nodes=[node("n0", cpu=1000, memory=8 * GIB), node("n1", cpu=8000, memory=64 * GIB)],
                    pods=[pod("a-w1", 3000, "worker", 3), pod("b-p1", 3000, "ps", 2), pod("c-p2", 500, "ps", 1)],
                    podgroups=[podgroup("g", min_member=3)])
    assert _document(snap)["binds"] == {"ns/a-w1": "n1", "ns/b-p1": "n1", "ns/c-p2": "n1"}
