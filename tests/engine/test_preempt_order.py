"""preempt visits nodes highest score first and, among equal scores, in the order it was given them
(Volcano's SortNodes is stable over the predicate order), so the first node that works is the same node
Volcano's preempt would take."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vpolicy.engine.placement import Placement
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import SessionState
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import PodGroupPhase

from tests.engine.build import node, pod, podgroup, running, snapshot

# Pairs of identically loaded nodes (equal scores), from empty to nearly full.
_LOADS = (0, 0, 1000, 1000, 3000, 3000)


def _placement() -> tuple[Placement, SessionState]:
    nodes = [node(f"n{i}") for i in range(len(_LOADS))]
    pods = [running(f"r{i}", "busy", f"n{i}", cpu=load) for i, load in enumerate(_LOADS) if load]
    state = SessionState(snapshot(nodes=nodes, pods=[*pods, pod("p-0", "p")],
                                  podgroups=[podgroup("busy", phase=PodGroupPhase.RUNNING), podgroup("p")]))
    rt = Runtime(from_conf(conf_loader.default_conf()).tiers, state)
    return Placement(rt, state), state


PLACEMENT, STATE = _placement()
TASK = next(t for t in STATE.tasks.values() if t.name == "p-0")


@given(st.permutations(range(len(_LOADS))).flatmap(
    lambda order: st.integers(1, len(order)).map(lambda n: np.array(order[:n], dtype=np.int64))))
def test_nodes_come_highest_score_first_and_equals_in_the_order_given(rows: np.ndarray) -> None:
    scores = dict(zip(rows.tolist(), PLACEMENT._scores_rows(TASK, rows)))  # over the rows given, as preempt asks
    expected = sorted(rows.tolist(), key=lambda r: (-scores[r], rows.tolist().index(r)))
    assert PLACEMENT.rows_by_score(TASK, rows).tolist() == expected


def test_equally_loaded_nodes_tie() -> None:
    """The cluster above has ties to keep in order: each pair of nodes scores the same."""
    rows = np.arange(len(_LOADS))
    scores = PLACEMENT._scores_rows(TASK, rows)
    assert scores[0] == scores[1] and scores[2] == scores[3] and scores[4] == scores[5]
    assert len(set(scores.tolist())) == 3
