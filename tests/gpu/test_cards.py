"""Card-level fit, order and score (vpolicy.compile.devices.allocate), case by case against Volcano's
checkNodeGPUSharingPredicateAndScore (reference §10, kubernetes-and-gpu.md §8.3)."""
from __future__ import annotations

import pytest

from vpolicy.compile import devices
from vpolicy.compile.devices import CardState
from vpolicy.model import gpu

A100 = "NVIDIA-NVIDIA A100-SXM4-40GB"


def card(i: int, *, memory: int = 40000, split: int = 10, used_mem: int = 0, used_cores: int = 0, users: int = 0,
         kind: str = A100, health: bool = True) -> CardState:
    return CardState(gpu.Card(i, f"GPU-{i}", split, memory, kind, health), users, used_mem, used_cores)


def ask(nums: int = 1, memory: int = 0, cores: int = 0, pct: int = 101) -> tuple[gpu.DeviceRequest, ...]:
    return (gpu.DeviceRequest(nums, memory, pct if (memory or pct != 101) else 100, cores),)


def chosen(found: devices.Assignment | devices.Unfit) -> list[str]:
    assert isinstance(found, devices.Assignment), found
    return [d.uuid for c in found.devices for d in c]


@pytest.mark.parametrize("cards, request_, expected", [
    pytest.param([card(0, used_mem=25000, users=1)], ask(memory=15000), ["GPU-0"], id="memory-exactly-enough"),
    pytest.param([card(0, used_mem=25001, users=1)], ask(memory=15000), devices.NO_ROOM, id="memory-one-short"),
    pytest.param([card(0, used_cores=70, users=1)], ask(memory=1, cores=30), ["GPU-0"], id="cores-to-100"),
    pytest.param([card(0, used_cores=70, users=1)], ask(memory=1, cores=31), devices.NO_ROOM, id="cores-over-100"),
    pytest.param([card(0, used_mem=1, users=1)], ask(memory=1, cores=100), devices.NO_ROOM,
                 id="exclusive-needs-idle"),
    pytest.param([card(0)], ask(memory=1, cores=100), ["GPU-0"], id="exclusive-on-idle"),
    pytest.param([card(0, used_cores=100, users=1)], ask(memory=1), devices.NO_ROOM, id="full-cores-refuse-zero"),
    pytest.param([card(0, split=2, users=2)], ask(memory=1), devices.NO_ROOM, id="no-sharing-slot"),
    pytest.param([card(0, health=False)], ask(memory=1), devices.NO_MATCHING_CARD, id="unhealthy"),
    pytest.param([card(0)], ask(nums=2, memory=1), devices.TOO_FEW_CARDS, id="too-few-cards"),
    pytest.param([], ask(memory=1), devices.NO_DEVICES, id="no-cards"),
    pytest.param([card(0, used_mem=1, users=1)], ask(), devices.NO_ROOM, id="whole-card-needs-all-memory"),
    pytest.param([card(0, used_mem=20000, users=1)], ask(pct=50), ["GPU-0"], id="percentage-half"),
    pytest.param([card(0, used_mem=20001, users=1)], ask(pct=50), devices.NO_ROOM, id="percentage-half-short"),
])
def test_card_fit(cards: list[CardState], request_: tuple[gpu.DeviceRequest, ...], expected: object) -> None:
    found = devices.allocate(request_, cards)
    if isinstance(expected, str):
        assert found == devices.Unfit(expected)
    else:
        assert chosen(found) == expected


def test_assigned_memory_and_cores_are_the_asks() -> None:
    found = devices.allocate(ask(memory=1234, cores=30), [card(0)])
    assert isinstance(found, devices.Assignment)
    assert found.devices == ((gpu.ContainerDevice("GPU-0", "NVIDIA", 1234, 30),),)


def test_percentage_asks_are_written_in_mib_of_the_card() -> None:
    found = devices.allocate(ask(pct=25), [card(0, memory=80000)])
    assert isinstance(found, devices.Assignment) and found.devices[0][0].memory == 20000


@pytest.mark.parametrize("policy, expected", [
    pytest.param("", ["GPU-2", "GPU-1"], id="default-highest-index-first"),
    pytest.param("binpack", ["GPU-1", "GPU-0"], id="binpack-most-used-memory-first"),
    pytest.param("spread", ["GPU-2", "GPU-0"], id="spread-fewest-users-first"),
])
def test_visit_order(policy: str, expected: list[str]) -> None:
    cards = [card(0, used_mem=1000, users=1), card(1, used_mem=9000, users=3), card(2)]
    assert chosen(devices.allocate(ask(nums=2, memory=100), cards, policy=policy)) == expected


@pytest.mark.parametrize("policy, score", [
    pytest.param("binpack", 100 * 10000 / 40000 + 100 * 30000 / 40000, id="binpack-used-fraction"),
    pytest.param("spread", 100.0, id="spread-idle-cards-only"),
    pytest.param("", 0.0, id="default-no-score"),
])
def test_score_sums_the_chosen_cards_after_placement(policy: str, score: float) -> None:
    cards = [card(0), card(1, used_mem=20000, users=1)]
    found = devices.allocate(ask(nums=2, memory=10000), cards, policy=policy)
    assert isinstance(found, devices.Assignment) and found.score == pytest.approx(score)


def test_type_and_uuid_filters_restrict_the_cards() -> None:
    cards = [card(0), card(1, kind="NVIDIA-NVIDIA H200")]
    filters = gpu.filters_from({gpu.USE_GPUTYPE: "h200"})
    assert chosen(devices.allocate(ask(memory=1), cards, filters=filters)) == ["GPU-1"]
    filters = gpu.filters_from({"nvidia.com/use-gpuuuid": "GPU-0"})
    assert chosen(devices.allocate(ask(memory=1), cards, filters=filters)) == ["GPU-0"]
    filters = gpu.filters_from({gpu.USE_GPUTYPE: "L40"})
    assert devices.allocate(ask(memory=1), cards, filters=filters) == devices.Unfit(devices.NO_MATCHING_CARD)


def test_containers_see_the_cards_earlier_containers_took() -> None:
    requests = (gpu.DeviceRequest(1, 30000), gpu.DeviceRequest(1, 30000))
    found = devices.allocate(requests, [card(0), card(1)])
    assert isinstance(found, devices.Assignment)
    assert [[d.uuid for d in c] for c in found.devices] == [["GPU-1"], ["GPU-0"]]
    assert devices.allocate(requests, [card(0)]) == devices.Unfit(devices.NO_ROOM)


def test_usage_is_rebuilt_from_pods_and_undone_exactly() -> None:
    pods = [gpu.decode_pod_devices("GPU-0,NVIDIA,1000,10:"), gpu.decode_pod_devices("GPU-0,NVIDIA,500,0:;GPU-9,NVIDIA,1,1:")]
    (state,) = devices.usage([gpu.Card(0, "GPU-0", 10, 40000, A100)], pods)
    assert (state.used_num, state.used_memory, state.used_cores) == (2, 1500, 10)
    d = gpu.ContainerDevice("GPU-0", "NVIDIA", 1000, 10)
    assert state.plus(d).minus(d) == state
