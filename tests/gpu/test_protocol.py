"""The vGPU protocol's strings: every annotation the scheduler and the agent write follows its documented
format (kubernetes-and-gpu.md §8.2-8.4, §8.6), and every codec round-trips."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vpolicy.model import gpu

# The documented formats, as regular expressions over the whole value.
UUID = r"GPU-[A-Za-z0-9-]+"
DEVICE = rf"{UUID}(\[\d+-\d+\])?,NVIDIA,\d+,\d+:"
FORMATS = {
    gpu.NODE_REGISTER: rf"({UUID},\d+,\d+,NVIDIA-[^,:;]+,(true|false),(hami-core|mig):)+",
    gpu.NODE_HANDSHAKE: r"(Reported \d{4}\.\d\d\.\d\d \d\d:\d\d:\d\d|(Requesting|Deleted)_\d{4}\.\d\d\.\d\d \d\d:\d\d:\d\d)",
    gpu.NODE_MIG_LAYOUT: rf"({UUID},([0-9]g\.\d+gb\*\d+(\+[0-9]g\.\d+gb\*\d+)*)?:)*",
    gpu.IDS_NEW: rf"({DEVICE})*(;({DEVICE})*)*",
    gpu.DEVICES_TO_ALLOCATE: rf"({DEVICE})*(;({DEVICE})*)*",
    gpu.VGPU_NODE: r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?",
    gpu.VGPU_TIME: r"\d+",
    gpu.BIND_TIME: r"\d+",
    gpu.BIND_PHASE: r"(allocating|success|failed)",
}

cards_st = st.lists(st.builds(
    lambda i, split, mem, name, health, mode: gpu.Card(i, f"GPU-{i:04x}-abcd", split, mem, f"NVIDIA-{name}",
                                                       health, mode),
    st.integers(0, 0), st.integers(1, 64), st.integers(1, 200_000), st.sampled_from(["NVIDIA H200", "Tesla V100S"]),
    st.booleans(), st.sampled_from(gpu.MODES)), min_size=1, max_size=8).map(
    lambda cs: tuple(gpu.Card(i, f"GPU-{i:04x}-abcd", c.split, c.memory, c.type, c.health, c.mode)
                     for i, c in enumerate(cs)))
device_st = st.builds(gpu.ContainerDevice,
                      st.one_of(st.just("GPU-0a1b"), st.builds(gpu.mig_id, st.just("GPU-9f"), st.integers(0, 5),
                                                               st.integers(0, 6))),
                      st.just("NVIDIA"), st.integers(0, 200_000), st.integers(0, 100))
pod_st = st.lists(st.lists(device_st, max_size=3).map(tuple), min_size=1, max_size=4).map(tuple)


def matches(key: str, value: str) -> bool:
    return re.fullmatch(FORMATS[key], value) is not None


def test_reference_examples_match_the_formats() -> None:
    assert matches(gpu.NODE_REGISTER, "GPU-f571,10,32768,NVIDIA-Tesla V100S-PCIE-32GB,true,hami-core:")
    assert matches(gpu.IDS_NEW, "GPU-a,NVIDIA,1000,30:;;GPU-b,NVIDIA,2000,0:GPU-c,NVIDIA,2000,0:")
    assert matches(gpu.IDS_NEW, "GPU-a[2-1],NVIDIA,40192,0:")
    assert not matches(gpu.IDS_NEW, "GPU-a,NVIDIA,1000:")


@given(cards_st)
def test_inventory_round_trips(cards: tuple[gpu.Card, ...]) -> None:
    text = gpu.encode_inventory(cards)
    assert matches(gpu.NODE_REGISTER, text)
    assert gpu.parse_inventory(text) == gpu.Inventory(cards)


@given(pod_st)
def test_pod_devices_round_trip(pod: gpu.PodDevices) -> None:
    text = gpu.encode_pod_devices(pod)
    assert matches(gpu.IDS_NEW, text)
    assert gpu.decode_pod_devices(text) == pod


@pytest.mark.parametrize("text, problem", [
    pytest.param("GPU-a,10,100,NVIDIA-X:", "has 4 fields", id="too-few-fields"),
    pytest.param("GPU-a,ten,100,NVIDIA-X,true,hami-core:", "must be integers", id="not-a-number"),
    pytest.param("GPU-a,10,100,NVIDIA-X,true,vgpu:", "unknown mode", id="unknown-mode"),
])
def test_broken_inventory_entries_are_skipped_with_a_problem(text: str, problem: str) -> None:
    found = gpu.parse_inventory(text + "GPU-b,10,100,NVIDIA-X,true,hami-core:")
    assert [c.uuid for c in found.cards] == ["GPU-b"]
    assert problem in found.problems[0]


def test_an_entry_without_mode_is_hami_core_as_older_plugins_wrote_it() -> None:
    assert gpu.parse_inventory("GPU-a,10,100,NVIDIA-X,true:").cards[0].mode == gpu.MODE_HAMI_CORE


@pytest.mark.parametrize("text", [
    pytest.param("GPU-a,NVIDIA,1:", id="three-fields"),
    pytest.param("GPU-a,NVIDIA,x,0:", id="memory-not-a-number"),
])
def test_malformed_device_entries_raise_protocol_error(text: str) -> None:
    with pytest.raises(gpu.ProtocolError, match="GPU-a"):
        gpu.decode_pod_devices(text)


def test_mig_ids_carry_the_geometry_and_position() -> None:
    assert gpu.mig_id("GPU-1", 2, 1) == "GPU-1[2-1]"
    assert gpu.parse_mig_id("GPU-1[2-1]") == ("GPU-1", 2, 1)
    assert gpu.parse_mig_id("GPU-1") is None
    assert gpu.ContainerDevice("GPU-1[2-1]", "NVIDIA", 1, 0).card_uuid == "GPU-1"


@pytest.mark.parametrize("device_id, parsed", [
    pytest.param("GPU-1[group1-0]", ("GPU-1", gpu.UNKNOWN_GEOMETRY, 0), id="volcano-group-name"),
    pytest.param("GPU-0fc3eda5-e98b[group2-3]", ("GPU-0fc3eda5-e98b", gpu.UNKNOWN_GEOMETRY, 3), id="volcano-uuid"),
    pytest.param("GPU-1[group1-x]", None, id="position-not-a-number"),
    pytest.param("GPU-1[a-b-1]", None, id="dash-in-group"),
])
def test_volcano_mig_ids_name_their_card_with_an_unknown_geometry(device_id: str,
                                                                  parsed: tuple[str, int, int] | None) -> None:
    # Volcano's encodeMIGID is "%s[%s-%d]" with the geometry's config name as the group
    assert gpu.parse_mig_id(device_id) == parsed
    if parsed is not None:
        assert gpu.ContainerDevice(device_id, "NVIDIA", 1, 0).card_uuid == parsed[0]


def test_mig_allocations_are_an_exact_json_list() -> None:
    a = gpu.MigAllocation(0, 1, "GPU-1", "3g.71gb", 4, 4, 2, 1)
    text = gpu.encode_mig_allocations([a])
    assert text == ('[{"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-1","profile":"3g.71gb",'
                    '"placement":{"start":4,"size":4},"group":2,"position":1}]')
    assert json.loads(text)[0]["placement"] == {"start": 4, "size": 4}
    assert gpu.decode_mig_allocations(text) == (a,)
    with pytest.raises(gpu.ProtocolError):
        gpu.decode_mig_allocations('[{"gpuUUID": "x"}]')


def test_mig_layout_and_handshake_round_trip() -> None:
    layouts = {"GPU-1": "3g.71gb*2", "GPU-2": "", "GPU-3": "2g.35gb*3+1g.18gb*1"}
    text = gpu.encode_mig_layout(layouts)
    assert matches(gpu.NODE_MIG_LAYOUT, text)
    assert gpu.parse_mig_layout(text) == layouts
    for h in (gpu.Handshake("Reported", "2026.01.02 03:04:05"), gpu.Handshake("Deleted", "2026.01.02 03:04:05")):
        assert matches(gpu.NODE_HANDSHAKE, h.encode())
        assert gpu.parse_handshake(h.encode()) == h


@pytest.mark.parametrize("limits, request_", [
    pytest.param({gpu.VGPU_NUMBER: 2, gpu.VGPU_MEMORY: 1000, gpu.VGPU_CORES: 30},
                 gpu.DeviceRequest(2, 1000, 101, 30), id="number-memory-cores"),
    pytest.param({gpu.VGPU_MEMORY: 1000}, gpu.DeviceRequest(1, 1000, 101, 0), id="memory-alone-is-one-card"),
    pytest.param({gpu.VGPU_NUMBER: 1}, gpu.DeviceRequest(1, 0, 100, 0), id="no-memory-is-the-whole-card"),
    pytest.param({gpu.VGPU_NUMBER: 1, gpu.VGPU_MEMORY_PERCENTAGE: 25}, gpu.DeviceRequest(1, 0, 25, 0),
                 id="percentage"),
    pytest.param({gpu.VGPU_NUMBER: 0, gpu.VGPU_MEMORY: 1000}, gpu.DeviceRequest(0, 1000, 101, 0),
                 id="zero-cards-keeps-its-place"),
    pytest.param({gpu.VGPU_CORES: 50}, None, id="cores-alone-is-no-gpu"),
    pytest.param({}, None, id="nothing"),
])
def test_container_requests_follow_volcanos_resourcereqs(limits: dict[str, int],
                                                         request_: gpu.DeviceRequest | None) -> None:
    assert gpu.container_request(limits) == request_


def test_memory_percentage_is_a_share_of_the_card() -> None:
    assert gpu.DeviceRequest(1, 0, 25, 0).memory_on(40000) == 10000
    assert gpu.DeviceRequest(1, 3000, 101, 0).memory_on(40000) == 3000


@pytest.mark.parametrize("annotations, card, allowed", [
    pytest.param({gpu.USE_GPUTYPE: "h200,a100"}, "NVIDIA-NVIDIA A100-SXM4-40GB", True, id="use-type-substring"),
    pytest.param({gpu.USE_GPUTYPE: "H200"}, "NVIDIA-NVIDIA A100-SXM4-40GB", False, id="use-type-miss"),
    pytest.param({gpu.NOUSE_GPUTYPE: "a100"}, "NVIDIA-NVIDIA A100-SXM4-40GB", False, id="nouse-type"),
    pytest.param({"nvidia.com/use-gpuuuid": "GPU-9"}, "NVIDIA-X", False, id="use-uuid-miss"),
    pytest.param({"volcano.sh/vgpu-nouse-gpuuuid": "GPU-1"}, "NVIDIA-X", False, id="nouse-uuid"),
    pytest.param({gpu.VGPU_MODE: "mig"}, "NVIDIA-X", False, id="mode-mismatch"),
    pytest.param({}, "NVIDIA-X", True, id="no-filters"),
])
def test_filters_from_pod_annotations(annotations: dict[str, str], card: str, allowed: bool) -> None:
    assert gpu.filters_from(annotations).allows(gpu.Card(0, "GPU-1", 10, 100, card)) is allowed


def test_every_scheduler_annotation_has_a_documented_format() -> None:
    assert set(gpu.SCHEDULER_ANNOTATIONS) <= set(FORMATS)
