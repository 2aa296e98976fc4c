"""How a sub-group's placement is chosen among its candidate domains (Volcano main's
scoreSubJobPlacementCandidates), checked on the choice alone with rules answering from tables."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from vpolicy.engine.actions import allocate_topology


class _Rules:
    """A runtime whose `sub_group_hypernode_order` and `sub_group_hypernode_tie_break` rules answer from
    tables (domain -> score), for `allocate_topology._best_candidate`."""

    def __init__(self, order: dict[str, float], tie: dict[str, float]):
        self.tables = {"sub_group_hypernode_order": order, "sub_group_hypernode_tie_break": tie}

    def rules(self, callback: str) -> list[str]:
        return [callback]

    def ask(self, rule: str, _group: Any, info: Any) -> float:
        return self.tables[rule][info]


def _choose(order: dict[str, float], tie: dict[str, float], *candidates: tuple[int, str, str]) -> tuple[float, str]:
    ctx: Any = SimpleNamespace(runtime=_Rules(order, tie),
                               state=SimpleNamespace(topology=SimpleNamespace(info=lambda name: name)))
    score, chosen = allocate_topology._best_candidate(
        ctx, None, [allocate_topology._Candidate(g, domain, ended, []) for g, domain, ended in candidates])
    return score, chosen.domain


def test_the_task_count_tie_break_is_added_only_where_several_candidates_share_the_best_score() -> None:
    """Volcano main's scoreSubJobPlacementCandidates with the plugin's HyperNodeOrderFn: the domains the
    sub-group's candidates ended in are scored together; when more than one has the best binpack
    score, each of those gets its task share added; then the lowest tier group wins, the best score,
    the first name."""
    order = {"a": 50.0, "b": 50.0, "s": 70.0}
    tie = {"a": 10.0, "b": 30.0, "s": 5.0}
    # leaves a and b tie at 50 but the spine scores 70: no tie-break; the leaf group comes first, a by name
    assert _choose(order, tie, (0, "a", "a"), (0, "b", "b"), (1, "s", "s")) == (50.0, "a")
    # without the spine a and b share the best score: the task share decides, and counts in the score
    assert _choose(order, tie, (0, "a", "a"), (0, "b", "b")) == (80.0, "b")
    # two candidates that ended in the same domain are one domain: no tie
    assert _choose(order, tie, (0, "a", "a"), (1, "s", "a")) == (50.0, "a")
