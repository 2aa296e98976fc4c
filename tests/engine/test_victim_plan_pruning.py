"""At L the joint victim plan keeps, per preemptor, only its cheapest nodes (and the one Volcano used):
the program then fits optimize's budget. The ranking must follow what an eviction costs."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from vpolicy.engine.victim_plan import Option, cheapest_options


def _option(name: str, free: int, *victim_gpus: int) -> Option:
    node: Any = SimpleNamespace(name=name, free=free)
    victims: Any = tuple(SimpleNamespace(g=g) for g in victim_gpus)
    return Option(node, victims)


def _names(options: list[Option]) -> list[str]:
    return [o.node.name for o in options]


def _gpus(victim: Any) -> int:
    return int(victim.g)


def _room(node: Any) -> int:
    return int(node.free)


def _keep(found: list[Option], limit: int, keep: tuple[str, ...] = (), need: int = 4) -> list[str]:
    return _names(cheapest_options(found, limit, need=need, gpus=_gpus, room=_room, keep=keep))


FOUND = [
    _option("four-small", 0, 1, 1, 1, 1),  # four GPU pods to evict
    _option("never", 0, 1, 1),  # its victims can never free 4 GPUs
    _option("one-large", 0, 4, 1),  # the 4-GPU pod alone
    _option("half-free", 2, 2, 1, 1),  # 2 GPUs free: one 2-GPU pod
]


def test_the_fewest_gpu_pods_come_first_then_the_fewest_gpus() -> None:
    assert _keep(FOUND, 1) == ["half-free"]  # one GPU pod of 2 GPUs, where one-large's has 4
    assert _keep(FOUND, 2) == ["one-large", "half-free"]  # then one GPU pod before four-small's four


def test_kept_options_stay_in_node_order_and_the_node_volcano_used_is_always_kept() -> None:
    assert _keep(FOUND, 2, keep=("four-small",)) == ["four-small", "one-large", "half-free"]
    assert _keep(FOUND, 1, keep=("four-small", "never")) == ["four-small", "never", "half-free"]
    assert _keep(FOUND, 3) == ["four-small", "one-large", "half-free"]


def test_a_node_that_can_never_free_enough_is_kept_last() -> None:
    assert _keep(FOUND, 4) == ["four-small", "never", "one-large", "half-free"]
    assert "never" not in _keep(FOUND, 3)


def test_a_preemptor_that_fits_already_evicts_nothing_there() -> None:
    found = [_option("busy", 0, 4), _option("free", 4, 2)]
    assert _keep(found, 1) == ["free"]
