"""The vGPU / MIG device protocol as plain data: names, the node inventory, pod device assignments, MIG tables.

One physical GPU can be shared two ways, node by node (reference kubernetes-and-gpu.md §8):

- **hami-core**: software slices; each container gets a memory limit (MiB) and an SM share (percent) on
  each card it is given, enforced inside the container by HAMi-core (`libvgpu.so`);
- **mig**: hardware MIG instances; a card is cut into one of its model's allowed *geometries* and a
  container gets one instance of it.

This module holds the wire formats both sides of the protocol share: the node's
`volcano.sh/node-vgpu-register` inventory, the pod's `volcano.sh/vgpu-ids-new` /
`volcano.sh/devices-to-allocate` assignments, MIG device ids `<GPU-UUID>[<group>-<position>]`, the
MIG reservation annotation, and a container's request as Volcano reads it from `resources.limits`.
Every codec here is exact and round-trips (`decode(encode(x)) == x`).

It does not choose cards (`vpolicy.compile.devices` does), track usage in a session
(`vpolicy.engine.devices`) or talk to NVML (`cluster_adapter.gpu_agent`). Only the standard library.
"""
from __future__ import annotations

import calendar
import json
import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

# Resource names (container limits; the node advertises the same names) --------------------------------
VGPU_NUMBER = "volcano.sh/vgpu-number"  # cards per container; node: cards x split
VGPU_MEMORY = "volcano.sh/vgpu-memory"  # MiB per card
VGPU_CORES = "volcano.sh/vgpu-cores"  # percent of the card's SMs; 100 = the whole card, exclusively
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"  # percent of the card's memory

# Node annotations ----------------------------------------------------------------------------------------
NODE_REGISTER = "volcano.sh/node-vgpu-register"
NODE_HANDSHAKE = "volcano.sh/node-vgpu-handshake"
# vpolicy's addition: the MIG layout a card is configured with now (written by the agent), so the scheduler
# can count reconfigurations. Absent: only the instances in use pin a card's geometry.
NODE_MIG_LAYOUT = "volcano.sh/node-mig-layout"
NODE_LOCK_KEYS = ("hamivgpu", "volcano.sh/mutex.lock")  # current and older lock names (§8.3)

# Pod annotations the scheduler writes before binding ----------------------------------------------------
IDS_NEW = "volcano.sh/vgpu-ids-new"
DEVICES_TO_ALLOCATE = "volcano.sh/devices-to-allocate"
VGPU_NODE = "volcano.sh/vgpu-node"
VGPU_TIME = "volcano.sh/vgpu-time"
BIND_TIME = "volcano.sh/bind-time"
BIND_PHASE = "volcano.sh/bind-phase"
# The MIG reservation (profile + placement per instance), HAMi's `vgpu-mig-allocations` shape under
# Volcano's prefix: the agent creates exactly these GPU instances.
MIG_ALLOCATIONS = "volcano.sh/vgpu-mig-allocations"
SCHEDULER_ANNOTATIONS = (VGPU_NODE, VGPU_TIME, BIND_TIME, BIND_PHASE, IDS_NEW, DEVICES_TO_ALLOCATE)

BIND_PHASES = ("allocating", "success", "failed")
MAX_UINT64 = 2**64 - 1  # vgpu-time the device plugin writes once a pod's devices are all handed out

# Pod annotations that steer placement ------------------------------------------------------------------
VGPU_MODE = "volcano.sh/vgpu-mode"  # hami-core | mig: must equal the card's mode
USE_GPUTYPE = "nvidia.com/use-gputype"  # comma list; case-insensitive substring of the card type
NOUSE_GPUTYPE = "nvidia.com/nouse-gputype"
USE_GPUUUID = ("nvidia.com/use-gpuuuid", "volcano.sh/vgpu-use-gpuuuid")  # HAMi's and Volcano's spelling
NOUSE_GPUUUID = ("nvidia.com/nouse-gpuuuid", "volcano.sh/vgpu-nouse-gpuuuid")

MODE_HAMI_CORE = "hami-core"
MODE_MIG = "mig"
MODES = (MODE_HAMI_CORE, MODE_MIG)
DEVICE_TYPE = "NVIDIA"  # the request type; a card matches when its registered type contains it
DEFAULT_SPLIT = 10  # deviceSplitCount: containers that may share one card
UNSET_PERCENTAGE = 101  # Volcano's "no memory percentage given"

# `<uuid>[<group>-<position>]`: vpolicy writes the geometry's index as the group, Volcano (encodeMIGID
# "%s[%s-%d]") the geometry's name from its knownMigGeometries config (`group1`); its decodeMIGID splits
# the bracket on "-", so a group name never holds one.
_MIG_ID = re.compile(r"^(?P<uuid>[^\[\],:;]+)\[(?P<group>[^\[\]\-,:;]+)-(?P<position>\d+)\]$")
# The geometry of a MIG id whose group is a name (Volcano's): vpolicy cannot tell which of its model's
# geometries the operator's config calls that, so the card's cut is unknown to it.
UNKNOWN_GEOMETRY = -1
HANDSHAKE_TIME_FORMAT = "%Y.%m.%d %H:%M:%S"  # Go's "2006.01.02 15:04:05", read as UTC as time.Parse does


class ProtocolError(ValueError):
    """A protocol string that does not follow its documented format."""


# The node inventory ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Card:
    """One physical GPU as the node registers it. `index` is its position in the annotation (minor order)."""

    index: int
    uuid: str
    split: int  # sharing slots (deviceSplitCount)
    memory: int  # MiB (already divided by gpuMemoryFactor)
    type: str  # `NVIDIA-<NVML name>`
    health: bool = True
    mode: str = MODE_HAMI_CORE


@dataclass(frozen=True, slots=True)
class Inventory:
    cards: tuple[Card, ...]
    problems: tuple[str, ...] = ()  # entries skipped, each with why


def encode_inventory(cards: Iterable[Card]) -> str:
    """`<UUID>,<split>,<memMiB>,<type>,<true|false>,<mode>:` per card, in the given order."""
    return "".join(f"{c.uuid},{c.split},{c.memory},{c.type},{'true' if c.health else 'false'},{c.mode}:"
                   for c in cards)


def parse_inventory(text: str) -> Inventory:
    """Volcano's decodeNodeDevices: `:`-terminated entries of comma fields. Entries with fewer than five
    fields, or numbers that are not numbers, are skipped with a problem; a missing sixth field (older
    plugins) means hami-core. A card's index is its entry's position among the kept entries."""
    cards: list[Card] = []
    problems: list[str] = []
    for n, entry in enumerate(e for e in text.strip().split(":") if e.strip()):
        fields = [f.strip() for f in entry.split(",")]
        if len(fields) < 5:
            problems.append(f"entry {n + 1} has {len(fields)} fields, expected 6: {entry!r}")
            continue
        try:
            split, memory = int(fields[1]), int(fields[2])
        except ValueError:
            problems.append(f"entry {n + 1}: split and memory must be integers: {entry!r}")
            continue
        mode = fields[5] if len(fields) > 5 and fields[5] else MODE_HAMI_CORE
        if mode not in MODES:
            problems.append(f"entry {n + 1}: unknown mode {mode!r} (expected hami-core or mig)")
            continue
        cards.append(Card(len(cards), fields[0], split, memory, fields[3], fields[4].lower() == "true", mode))
    return Inventory(tuple(cards), tuple(problems))


# Requests -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One container's ask (Volcano's ContainerDeviceRequest): `nums` cards, each with `memory` MiB (0: take
    `memory_percentage` of the card) and `cores` percent of its SMs."""

    nums: int
    memory: int = 0
    memory_percentage: int = UNSET_PERCENTAGE
    cores: int = 0
    type: str = DEVICE_TYPE

    def memory_on(self, card_memory: int) -> int:
        """MiB this request takes on a card of `card_memory` MiB."""
        if self.memory == 0 and self.memory_percentage != UNSET_PERCENTAGE:
            return card_memory * self.memory_percentage // 100
        return self.memory


def container_request(limits: Mapping[str, int]) -> DeviceRequest | None:
    """Volcano's resourcereqs for one container's `resources.limits`: no vgpu-number and no vgpu-memory
    means no request; memory alone means one card; neither memory nor percentage means the whole card.
    `vgpu-number: 0` is a request for no card (nums 0): Volcano keeps it so that the container keeps its
    (empty) segment in the pod's device annotations, but it asks for no GPU."""
    number, memory = limits.get(VGPU_NUMBER), limits.get(VGPU_MEMORY)
    if number is None and memory is None:
        return None
    nums = max(0, 1 if number is None else int(number))
    percentage = int(limits.get(VGPU_MEMORY_PERCENTAGE, UNSET_PERCENTAGE))
    if percentage == UNSET_PERCENTAGE and not memory:
        percentage = 100
    return DeviceRequest(nums, int(memory or 0), percentage, int(limits.get(VGPU_CORES, 0)))


def pod_requests(containers: Sequence[Mapping[str, int]]) -> tuple[DeviceRequest, ...]:
    """The requests of a pod's containers, in order, one per container that names vgpu-number or
    vgpu-memory (Volcano's resourcereqs; its nums may be 0); other containers are left out."""
    return tuple(r for r in (container_request(c) for c in containers) if r is not None)


def asks_for_cards(requests: Sequence[DeviceRequest]) -> bool:
    """At least one container asks for a card: a pod (or container) asking 0 cards is not a GPU one."""
    return any(r.nums > 0 for r in requests)


@dataclass(frozen=True, slots=True)
class DeviceFilters:
    """What a pod's annotations allow: card types (substrings, case-insensitive), UUIDs and mode."""

    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()
    mode: str = ""  # "" = any

    def allows(self, card: Card) -> bool:
        kind = card.type.lower()
        if self.use_types and not any(t.lower() in kind for t in self.use_types):
            return False
        if any(t.lower() in kind for t in self.nouse_types):
            return False
        if self.use_uuids and card.uuid not in self.use_uuids:
            return False
        if card.uuid in self.nouse_uuids:
            return False
        return not self.mode or self.mode == card.mode


def filters_from(annotations: Mapping[str, str]) -> DeviceFilters:
    def items(*keys: str) -> tuple[str, ...]:
        return tuple(x.strip() for k in keys for x in annotations.get(k, "").split(",") if x.strip())
    return DeviceFilters(items(USE_GPUTYPE), items(NOUSE_GPUTYPE), items(*USE_GPUUUID), items(*NOUSE_GPUUUID),
                         annotations.get(VGPU_MODE, "").strip())


# Assignments (vgpu-ids-new / devices-to-allocate) ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ContainerDevice:
    """One card (or MIG instance) given to one container: `<uuid>,<type>,<memMiB>,<cores>:`."""

    uuid: str
    type: str
    memory: int
    cores: int

    @property
    def card_uuid(self) -> str:
        mig = parse_mig_id(self.uuid)
        return mig[0] if mig else self.uuid


PodDevices = tuple[tuple[ContainerDevice, ...], ...]  # per container, in container order


def encode_container_devices(devices: Iterable[ContainerDevice]) -> str:
    return "".join(f"{d.uuid},{d.type},{d.memory},{d.cores}:" for d in devices)


def encode_pod_devices(pod: Sequence[Sequence[ContainerDevice]]) -> str:
    """Containers joined by `;` (a container without GPUs is an empty segment); no trailing `;`."""
    return ";".join(encode_container_devices(c) for c in pod)


def decode_pod_devices(text: str) -> PodDevices:
    """The inverse of `encode_pod_devices`; a malformed entry raises ProtocolError naming it."""
    containers = []
    for segment in text.split(";"):
        devices = []
        for entry in segment.split(":"):
            if not entry.strip():
                continue
            fields = entry.split(",")
            if len(fields) != 4:
                raise ProtocolError(f"device entry {entry!r} has {len(fields)} fields, expected uuid,type,mem,cores")
            try:
                devices.append(ContainerDevice(fields[0].strip(), fields[1].strip(), int(fields[2]), int(fields[3])))
            except ValueError as exc:
                raise ProtocolError(f"device entry {entry!r}: memory and cores must be integers") from exc
        containers.append(tuple(devices))
    return tuple(containers)


def mig_id(uuid: str, group: int, position: int) -> str:
    """A MIG instance's device id: the card's UUID, the geometry index and the instance position."""
    return f"{uuid}[{group}-{position}]"


def parse_mig_id(device_id: str) -> tuple[str, int, int] | None:
    """(card UUID, geometry index, position) of a MIG device id, None for a whole card. Volcano's ids name
    the geometry (`GPU-1[group1-0]`): the geometry is then `UNKNOWN_GEOMETRY`, but the id still says the
    card holds an instance, which is what keeps its usage counted."""
    match = _MIG_ID.match(device_id)
    if match is None:
        return None
    group = match["group"]
    return match["uuid"], int(group) if group.isdigit() else UNKNOWN_GEOMETRY, int(match["position"])


# MIG ------------------------------------------------------------------------------------------------------
# GPU-instance placements are in memory slices of 8 (NVML's c_nvmlGpuInstancePlacement_t start/size): a
# profile's `size` and the starts it may take, as NVML reports them for A100/H100/H200.
_PLACEMENTS: dict[int, tuple[int, tuple[int, ...]]] = {  # compute slices -> (size, allowed starts)
    1: (1, (0, 1, 2, 3, 4, 5, 6)),
    2: (2, (0, 2, 4)),
    3: (4, (0, 4)),
    4: (4, (0,)),
    7: (8, (0,)),
}
MIG_MEMORY_SLICES = 8


@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str  # e.g. 3g.71gb
    slices: int  # compute slices (the "3g")
    memory: int  # MiB

    @property
    def size(self) -> int:
        return _PLACEMENTS[self.slices][0]

    @property
    def starts(self) -> tuple[int, ...]:
        return _PLACEMENTS[self.slices][1]


@dataclass(frozen=True, slots=True)
class MigInstance:
    """One instance of a geometry: its position (index in the geometry's flattened list), profile and
    placement (start, size in memory slices)."""

    position: int
    profile: MigProfile
    start: int

    @property
    def size(self) -> int:
        return self.profile.size


@dataclass(frozen=True, slots=True)
class MigGeometry:
    """One allowed way to cut a card: (profile name, count) in order; positions follow that order."""

    counts: tuple[tuple[str, int], ...]

    def label(self) -> str:
        return "+".join(f"{name}*{n}" for name, n in self.counts)


@dataclass(frozen=True, slots=True)
class MigModel:
    name: str
    profiles: tuple[MigProfile, ...]
    geometries: tuple[MigGeometry, ...]

    def profile(self, name: str) -> MigProfile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(name)

    def instances(self, group: int) -> tuple[MigInstance, ...]:
        return _instances(self, group)

    def geometry_of(self, label: str) -> int | None:
        """The index of the geometry with these instances (any order of its parts), or None."""
        wanted = _layout_counts(label)
        for i, g in enumerate(self.geometries):
            if dict(g.counts) == wanted:
                return i
        return None


def _model(name: str, names: tuple[str, str, str, str], memory: tuple[int, int, int, int]) -> MigModel:
    one, two, three, seven = (MigProfile(n, s, m) for n, s, m in zip(names, (1, 2, 3, 7), memory))
    shapes = (((one, 7),), ((two, 3), (one, 1)), ((three, 2),), ((seven, 1),),
              ((three, 1), (two, 1), (one, 1)), ((three, 1), (one, 3)))
    return MigModel(name, (one, two, three, seven),
                    tuple(MigGeometry(tuple((p.name, n) for p, n in shape)) for shape in shapes))


# Memory sizes in MiB: A100 values are NVML's (A100-80GB as Volcano's Helm chart lists them); the others
# are the nominal size in decimal GB expressed in MiB, rounded down, so that a request that fits the table
# always fits the real instance (check with scripts/gpu_check.py on the node). Profile names are HAMi's
# allowlist (kubernetes-and-gpu.md §8.6): H100-94GB (H100 NVL) 1g.12gb..7g.94gb, H20 and GH200 (96 GB)
# 1g.12gb..7g.96gb, H200 1g.18gb..7g.141gb.
MIG_MODELS: tuple[MigModel, ...] = (
    _model("A100-40GB", ("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"), (4864, 9984, 20096, 40192)),
    _model("A100-80GB", ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"), (9728, 19968, 40192, 80896)),
    _model("H100-80GB", ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"), (9536, 19073, 38146, 76293)),
    _model("H100-94GB", ("1g.12gb", "2g.24gb", "3g.47gb", "7g.94gb"), (11444, 22888, 44822, 89645)),
    _model("H20", ("1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"), (11444, 22888, 45776, 91552)),
    _model("GH200", ("1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"), (11444, 22888, 45776, 91552)),
    _model("H200", ("1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"), (17166, 33378, 67710, 134468)),
)


def mig_model_for(card_type: str) -> MigModel | None:
    """The MIG table for a registered card type (`NVIDIA-NVIDIA H200`, `NVIDIA-NVIDIA GH200 480GB`, ...),
    None for a card vpolicy knows no table for (A30, A800, GH200 144G, ...). The names nest ("GH200"
    holds "H200", which holds "H20"), so the longer names are tried first."""
    kind = card_type.upper().replace(" ", "-")
    by_name = {m.name: m for m in MIG_MODELS}
    if "GH200" in kind:
        return None if "144G" in kind else by_name["GH200"]  # GH200 144G HBM3e has other profiles
    if "H200" in kind:
        return by_name["H200"]
    if "H20" in kind:
        return by_name["H20"]
    if "H100" in kind:
        return by_name["H100-94GB" if "94GB" in kind or "NVL" in kind else "H100-80GB"]
    if "A100" in kind:
        return by_name["A100-80GB" if "80GB" in kind else "A100-40GB"]
    return None


def _instances(model: MigModel, group: int) -> tuple[MigInstance, ...]:
    """Lay the geometry's instances out on the 8 memory slices: each instance, in order, at the first
    allowed start that overlaps nothing placed before it, backtracking when a later one finds no room."""
    profiles = [model.profile(name) for name, n in model.geometries[group].counts for _ in range(n)]

    def place(k: int, used: frozenset[int]) -> list[int] | None:
        if k == len(profiles):
            return []
        p = profiles[k]
        for start in p.starts:
            span = frozenset(range(start, start + p.size))
            if start + p.size <= MIG_MEMORY_SLICES and not span & used:
                rest = place(k + 1, used | span)
                if rest is not None:
                    return [start, *rest]
        return None
    starts = place(0, frozenset())
    if starts is None:
        raise ValueError(f"MIG geometry {model.geometries[group].label()} of {model.name} cannot be laid out")
    return tuple(MigInstance(i, p, s) for i, (p, s) in enumerate(zip(profiles, starts)))


def _layout_counts(label: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in label.split("+"):
        name, _, n = part.strip().partition("*")
        if name:
            counts[name] = counts.get(name, 0) + int(n or 1)
    return counts


def encode_mig_layout(layouts: Mapping[str, str]) -> str:
    """`<UUID>,<profile>*<n>[+<profile>*<n>...]:` per card (`volcano.sh/node-mig-layout`); "" = not cut."""
    return "".join(f"{uuid},{label}:" for uuid, label in layouts.items())


def parse_mig_layout(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in text.split(":"):
        uuid, _, label = entry.partition(",")
        if uuid.strip():
            out[uuid.strip()] = label.strip()
    return out


@dataclass(frozen=True, slots=True)
class MigAllocation:
    """One reserved MIG instance (HAMi's reservation shape): which container, which of its devices, the
    card, the profile and the placement the agent creates the GPU instance at."""

    container: int
    device: int
    gpu_uuid: str
    profile: str
    start: int
    size: int
    group: int = 0
    position: int = 0

    @property
    def device_id(self) -> str:
        return mig_id(self.gpu_uuid, self.group, self.position)


def encode_mig_allocations(allocations: Iterable[MigAllocation]) -> str:
    """A JSON list, keys in a fixed order, no spaces: the exact text of `volcano.sh/vgpu-mig-allocations`."""
    return json.dumps([{"containerIndex": a.container, "deviceIndex": a.device, "gpuUUID": a.gpu_uuid,
                        "profile": a.profile, "placement": {"start": a.start, "size": a.size},
                        "group": a.group, "position": a.position} for a in allocations], separators=(",", ":"))


def decode_mig_allocations(text: str) -> tuple[MigAllocation, ...]:
    try:
        items = json.loads(text)
        return tuple(MigAllocation(int(i["containerIndex"]), int(i["deviceIndex"]), str(i["gpuUUID"]),
                                   str(i["profile"]), int(i["placement"]["start"]), int(i["placement"]["size"]),
                                   int(i.get("group", 0)), int(i.get("position", 0))) for i in items)
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"{MIG_ALLOCATIONS} is not a list of MIG allocations: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Handshake:
    """`volcano.sh/node-vgpu-handshake`: `Reported <time>`, `Requesting_<time>` or `Deleted_<time>`."""

    state: str  # Reported | Requesting | Deleted
    time: str = field(default="")

    def encode(self) -> str:
        return f"Reported {self.time}" if self.state == "Reported" else f"{self.state}_{self.time}"


def handshake_epoch(handshake: Handshake) -> float | None:
    """The handshake's time as epoch seconds (UTC, as Go's time.Parse reads the zone-less text), None when
    it is not a time."""
    try:
        return float(calendar.timegm(time.strptime(handshake.time.strip(), HANDSHAKE_TIME_FORMAT)))
    except ValueError:
        return None


def parse_handshake(text: str) -> Handshake | None:
    if text.startswith("Reported "):
        return Handshake("Reported", text[len("Reported "):])
    for state in ("Requesting", "Deleted"):
        if text.startswith(state + "_"):
            return Handshake(state, text[len(state) + 1:])
    return None
