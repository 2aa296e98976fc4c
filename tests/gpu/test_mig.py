"""Dynamic MIG: per-model profile tables and geometries, and the choice of geometry and instance for a
pod (fewest re-cuts first, then the smallest slice that fits; a card in use keeps its geometry)."""
from __future__ import annotations

import pytest

from vpolicy.compile import devices
from vpolicy.compile.devices import CardState
from vpolicy.model import gpu

H200 = "NVIDIA-NVIDIA H200"


@pytest.mark.parametrize("card_type, model", [
    pytest.param("NVIDIA-NVIDIA H200", "H200", id="h200"),
    pytest.param("NVIDIA-NVIDIA H200 NVL", "H200", id="h200-nvl"),
    pytest.param("NVIDIA-NVIDIA H100 80GB HBM3", "H100-80GB", id="h100-80gb"),
    pytest.param("NVIDIA-NVIDIA A100-SXM4-80GB", "A100-80GB", id="a100-80gb"),
    pytest.param("NVIDIA-NVIDIA A100-SXM4-40GB", "A100-40GB", id="a100-40gb"),
    pytest.param("NVIDIA-NVIDIA A100-PCIE-40GB", "A100-40GB", id="a100-pcie"),
    pytest.param("NVIDIA-NVIDIA H100 NVL", "H100-94GB", id="h100-nvl-is-94gb"),
    pytest.param("NVIDIA-NVIDIA GH200 480GB", "GH200", id="gh200-is-not-h200"),
    pytest.param("NVIDIA-NVIDIA H20", "H20", id="h20"),
    pytest.param("NVIDIA-NVIDIA GH200 144G HBM3e", None, id="gh200-144g-not-tabled"),
    pytest.param("NVIDIA-NVIDIA A30", None, id="a30-not-tabled"),
    pytest.param("NVIDIA-NVIDIA A800-SXM4-80GB", None, id="a800-not-tabled"),
    pytest.param("NVIDIA-Tesla V100S-PCIE-32GB", None, id="no-mig"),
])
def test_card_types_map_to_their_mig_table(card_type: str, model: str | None) -> None:
    found = gpu.mig_model_for(card_type)
    assert (found.name if found else None) == model


def test_h200_profiles_are_the_documented_ones() -> None:
    model = gpu.mig_model_for(H200)
    assert model is not None
    assert [p.name for p in model.profiles] == ["1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"]


@pytest.mark.parametrize("card_type, profiles", [
    pytest.param("NVIDIA-NVIDIA GH200 480GB", [("1g.12gb", 11444), ("2g.24gb", 22888), ("3g.48gb", 45776),
                                               ("7g.96gb", 91552)], id="gh200"),
    pytest.param("NVIDIA-NVIDIA H100 NVL", [("1g.12gb", 11444), ("2g.24gb", 22888), ("3g.47gb", 44822),
                                           ("7g.94gb", 89645)], id="h100-nvl"),
])
def test_96gb_class_profiles_are_the_reference_ones_in_nominal_mib(card_type: str,
                                                                    profiles: list[tuple[str, int]]) -> None:
    # kubernetes-and-gpu.md §8.6 (HAMi's allowlist); MiB = nominal decimal GB, rounded down
    model = gpu.mig_model_for(card_type)
    assert model is not None
    assert [(p.name, p.memory) for p in model.profiles] == profiles


@pytest.mark.parametrize("model", [pytest.param(m, id=m.name) for m in gpu.MIG_MODELS])
def test_every_geometry_lays_out_within_the_card(model: gpu.MigModel) -> None:
    for group in range(len(model.geometries)):
        instances = model.instances(group)
        slices = [s for i in instances for s in range(i.start, i.start + i.size)]
        assert len(slices) == len(set(slices)) and max(slices) < gpu.MIG_MEMORY_SLICES
        assert sum(i.profile.slices for i in instances) <= 7
        assert [i.position for i in instances] == list(range(len(instances)))


def mig_card(*, layout: int | None = None, used: set[tuple[int, int]] | None = None, index: int = 0) -> CardState:
    return CardState(gpu.Card(index, f"GPU-m{index}", 7, 143771, H200, True, gpu.MODE_MIG), len(used or ()),
                     0, 0, layout, frozenset(used or ()))


def only(found: devices.Assignment | devices.Unfit) -> tuple[gpu.MigAllocation, int]:
    assert isinstance(found, devices.Assignment), found
    (alloc,) = found.mig
    return alloc, found.reconfigurations


H = gpu.mig_model_for(H200)
assert H is not None
GROUP = {g.label(): i for i, g in enumerate(H.geometries)}


@pytest.mark.parametrize("card, memory, profile, recut", [
    pytest.param(mig_card(), 10000, "1g.18gb", 1, id="uncut-card-smallest-slice"),
    pytest.param(mig_card(), 60000, "3g.71gb", 1, id="uncut-card-3g"),
    pytest.param(mig_card(layout=GROUP["3g.71gb*2"]), 10000, "3g.71gb", 0, id="configured-layout-beats-smaller-slice"),
    pytest.param(mig_card(layout=GROUP["1g.18gb*7"]), 30000, "2g.35gb", 1, id="layout-too-small-is-recut"),
    pytest.param(mig_card(layout=-1), 10000, "1g.18gb", 1, id="unknown-layout-is-recut"),
    pytest.param(mig_card(used={(GROUP["2g.35gb*3+1g.18gb*1"], 0)}), 10000, "1g.18gb", 0, id="in-use-keeps-geometry"),
])
def test_mig_choice(card: CardState, memory: int, profile: str, recut: int) -> None:
    alloc, reconfigurations = only(devices.allocate((gpu.DeviceRequest(1, memory),), [card]))
    assert (alloc.profile, reconfigurations) == (profile, recut)


def test_a_card_in_use_cannot_be_recut_for_a_bigger_slice() -> None:
    card = mig_card(layout=GROUP["1g.18gb*7"], used={(GROUP["1g.18gb*7"], 0)})
    assert devices.allocate((gpu.DeviceRequest(1, 30000),), [card]) == devices.Unfit(devices.NO_ROOM)


def test_the_next_free_position_of_the_geometry_is_taken() -> None:
    g = GROUP["1g.18gb*7"]
    alloc, _ = only(devices.allocate((gpu.DeviceRequest(1, 100),), [mig_card(used={(g, 0), (g, 1)})]))
    assert (alloc.group, alloc.position, alloc.start, alloc.size) == (g, 2, 2, 1)
    assert alloc.device_id == f"GPU-m0[{g}-2]"


def test_whole_card_ask_takes_the_7g_instance() -> None:
    alloc, _ = only(devices.allocate((gpu.DeviceRequest(1, 0, 100),), [mig_card()]))
    assert (alloc.profile, alloc.start, alloc.size) == ("7g.141gb", 0, 8)


def test_cards_needing_no_recut_are_preferred_over_the_policy_order() -> None:
    cards = [mig_card(index=0, layout=GROUP["3g.71gb*2"]), mig_card(index=1)]
    found = devices.allocate((gpu.DeviceRequest(1, 20000),), cards)
    alloc, recut = only(found)
    assert (alloc.gpu_uuid, alloc.profile, recut) == ("GPU-m0", "3g.71gb", 0)


def test_assignment_names_the_instances_in_the_device_ids() -> None:
    found = devices.allocate((gpu.DeviceRequest(1, 60000),), [mig_card(layout=GROUP["3g.71gb*2"])])
    assert isinstance(found, devices.Assignment)
    ((device,),) = found.devices
    assert device.uuid == f"GPU-m0[{GROUP['3g.71gb*2']}-0]" and device.memory == 67710


def test_a_model_without_a_table_offers_no_mig_slice() -> None:
    card = CardState(gpu.Card(0, "GPU-v", 7, 32000, "NVIDIA-Tesla V100S", True, gpu.MODE_MIG))
    assert devices.allocate((gpu.DeviceRequest(1, 100),), [card]) == devices.Unfit(devices.NO_ROOM)


def test_a_volcano_instance_on_a_card_pins_it_whatever_its_group_is_called() -> None:
    # Volcano names the geometry by its config's group name: vpolicy cannot tell which cut that is, so
    # the card takes no other instance (neither a new cut nor a guess at a free position)
    card = devices.usage([gpu.Card(0, "GPU-m0", 7, 143771, H200, True, gpu.MODE_MIG)],
                         [((gpu.ContainerDevice("GPU-m0[group1-0]", "NVIDIA", 10000, 0),),)])[0]
    assert (card.used_num, card.used_memory, card.geometry) == (1, 10000, gpu.UNKNOWN_GEOMETRY)
    assert devices.allocate((gpu.DeviceRequest(1, 10000),), [card]) == devices.Unfit(devices.NO_ROOM)
