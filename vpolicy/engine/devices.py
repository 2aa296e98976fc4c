"""GPU card usage through one session: which cards (or MIG instances) every placed pod holds.

Volcano's deviceshare plugin keeps a per-node device table that follows the session: devices of pods on
the node (rebuilt from their `volcano.sh/vgpu-ids-new`) are in use, a placement adds the cards it gets,
an eviction frees them at once (the plugin's Deallocate event handler), a discarded statement gives
them back. `DeviceLedger` is that table. `SessionState.set_status` tells it about every status change,
so it never drifts from the tasks; later placements in the session see earlier ones' cards, and a
discarded gang leaves no trace.

The card choice itself is `vpolicy.compile.devices.allocate`, with the card policy the deviceshare
predicate was evaluated with for that task on that node (noted by the `vgpu_fits` built-in): a
placement takes exactly the cards its predicate saw. A task placed where no deviceshare predicate ran
(the plugin off) holds no cards and gets no annotations, as in Volcano.

Two things of Volcano's NewGPUDevices / decodeNodeDevices are read here, at session open: the node's
`volcano.sh/node-vgpu-handshake` (kept on `NodeGpus` for deviceshare's `handshake` rule, which needs the
session clock), and a MIG card whose model has no MIG table, which Volcano shares as hami-core.

At the end of the session, `annotations` gives the pod annotations the scheduler writes before binding
(the decision document's `annotations`, DESIGN §4), for the pods dispatched to bind.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping

from vpolicy.compile import devices
from vpolicy.model import gpu
from vpolicy.model.snapshot import Pod, TaskStatus

if TYPE_CHECKING:
    from vpolicy.engine.state import NodeInfo, TaskInfo

# Statuses in which a task holds its cards. RELEASING only for pods that were already releasing in the
# snapshot (they still run); an eviction in the session frees the cards at once.
_HOLDING = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
                      TaskStatus.RUNNING})
_PLACING = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})


class NodeGpus:
    """One node's cards as the session sees them now; the `CardSource` the DSL built-ins read.

    `handshake`, `handshake_state` and `handshake_at` are `volcano.sh/node-vgpu-handshake` as the
    deviceshare policy reads it (`node.gpus.handshake_state`): the text, its state (Reported, Requesting,
    Deleted, "" when absent or unknown) and its time in epoch seconds (0 when it is not a time: Go's
    time.Parse then gives the zero time, which Volcano's 60 s test finds stale)."""

    def __init__(self, name: str, inventory: gpu.Inventory, layouts: Mapping[str, int | None], *,
                 handshake: str = ""):
        self.name = name
        self.inventory = inventory
        parsed = gpu.parse_handshake(handshake)
        self.handshake = handshake
        self.handshake_state = parsed.state if parsed else ""
        self.handshake_at = (gpu.handshake_epoch(parsed) or 0.0) if parsed else 0.0
        self._states = {c.uuid: devices.CardState(c, layout=layouts.get(c.uuid)) for c in inventory.cards}
        self.memo: dict[tuple[str, str], devices.Assignment | devices.Unfit] = {}
        self.policies: dict[str, str] = {}  # task uid -> the card policy its predicate used here

    def states(self) -> tuple[devices.CardState, ...]:
        return tuple(self._states.values())

    def note_policy(self, uid: str, policy: str) -> None:
        self.policies[uid] = policy

    def add(self, pod: gpu.PodDevices) -> None:
        self._change(pod, add=True)

    def remove(self, pod: gpu.PodDevices) -> None:
        self._change(pod, add=False)

    def _change(self, pod: gpu.PodDevices, *, add: bool) -> None:
        for container in pod:
            for device in container:
                state = self._states.get(device.card_uuid)
                if state is not None:
                    self._states[device.card_uuid] = state.plus(device) if add else state.minus(device)
        self.memo.clear()

    def __repr__(self) -> str:
        return f"NodeGpus({self.name}, {len(self._states)} cards)"


@dataclass(frozen=True, slots=True)
class Holding:
    node: str
    assignment: devices.Assignment
    placed_now: bool = False  # assigned in this session (its annotations are written at bind)


@dataclass(slots=True)
class DeviceLedger:
    nodes: dict[str, NodeGpus] = field(default_factory=dict)
    holdings: dict[str, Holding] = field(default_factory=dict)  # task uid -> the cards it holds now
    released: dict[str, Holding] = field(default_factory=dict)  # evicted in this session (for a discard)
    unassigned: dict[str, str] = field(default_factory=dict)  # task uid -> why it was placed without cards
    problems: dict[str, list[str]] = field(default_factory=dict)  # node -> unreadable inventory or pod devices

    @classmethod
    def open(cls, nodes: Mapping[str, "NodeInfo"]) -> "DeviceLedger":
        """The table at session open: every node with an inventory, and the devices of pods on it."""
        ledger = cls()
        for node in nodes.values():
            text = node.spec.annotations.get(gpu.NODE_REGISTER)
            if text is None:
                continue
            inventory = untabled_mig_as_hami_core(gpu.parse_inventory(text))
            problems = list(inventory.problems)
            cards = NodeGpus(node.name, inventory, _layouts(node.spec.annotations, inventory),
                             handshake=node.spec.annotations.get(gpu.NODE_HANDSHAKE, ""))
            for task in node.tasks:
                try:
                    pod = pod_devices(task.pod)
                except gpu.ProtocolError as exc:
                    problems.append(f"pod {task.key}: {exc}")
                    continue
                if pod:
                    cards.add(pod)
                    ledger.holdings[task.uid] = Holding(node.name, devices.Assignment(pod))
            node.gpus = cards
            ledger.nodes[node.name] = cards
            if problems:
                ledger.problems[node.name] = problems
        return ledger

    def on_status(self, task: "TaskInfo") -> None:
        """Follow one status change (called by SessionState.set_status after it)."""
        holding = self.holdings.get(task.uid)
        holds = task.status in _HOLDING and bool(task.node_name)
        if holding is not None:
            if holds and holding.node == task.node_name:
                return  # Allocated -> Binding, and the like
            self.nodes[holding.node].remove(holding.assignment.devices)
            del self.holdings[task.uid]
            if task.status is TaskStatus.RELEASING:
                self.released[task.uid] = holding
        if not holds:
            return
        back = self.released.pop(task.uid, None)
        if back is not None and back.node == task.node_name and task.status not in _PLACING:
            self.nodes[back.node].add(back.assignment.devices)  # a discarded eviction
            self.holdings[task.uid] = back
            return
        cards = self.nodes.get(task.node_name)
        if cards is None or task.status not in _PLACING or not devices.vgpu_requested(task):
            return
        policy = cards.policies.get(task.uid)
        if policy is None:
            return  # no deviceshare predicate ran for it here: the plugin is off
        found = devices.answer(task, cards, policy)
        if isinstance(found, devices.Unfit):
            self.unassigned[task.uid] = found.reason
            return
        cards.add(found.devices)
        self.holdings[task.uid] = Holding(task.node_name, found, placed_now=True)
        self.unassigned.pop(task.uid, None)

    def annotations(self, tasks: Mapping[str, "TaskInfo"], binds: Mapping[str, str], *,
                    now: float) -> dict[str, dict[str, str]]:
        """The pod annotations for every pod dispatched to bind that got cards in this session."""
        stamp = str(int(now))
        out: dict[str, dict[str, str]] = {}
        for uid, holding in self.holdings.items():
            task = tasks.get(uid)
            if task is None or not holding.placed_now or binds.get(task.key) != holding.node:
                continue
            out[task.key] = pod_annotations(holding.node, holding.assignment, stamp)
        return out


def pod_annotations(node: str, assignment: devices.Assignment, stamp: str) -> dict[str, str]:
    """volcano-vgpu's annotations for one pod (kubernetes-and-gpu.md §8.3), plus the MIG reservation."""
    encoded = gpu.encode_pod_devices(assignment.devices)
    out = {gpu.VGPU_NODE: node, gpu.VGPU_TIME: stamp, gpu.BIND_TIME: stamp, gpu.BIND_PHASE: "allocating",
           gpu.IDS_NEW: encoded, gpu.DEVICES_TO_ALLOCATE: encoded}
    if assignment.mig:
        out[gpu.MIG_ALLOCATIONS] = gpu.encode_mig_allocations(assignment.mig)
    return out


def pod_devices(pod: Pod) -> gpu.PodDevices:
    """The devices a pod on a node holds: `vgpu-ids-new` (what Volcano rebuilds usage from), else
    `devices-to-allocate`; none without either."""
    text = pod.annotations.get(gpu.IDS_NEW) or pod.annotations.get(gpu.DEVICES_TO_ALLOCATE) or ""
    found = gpu.decode_pod_devices(text) if text.strip() else ()
    return found if any(found) else ()


def untabled_mig_as_hami_core(inventory: gpu.Inventory) -> gpu.Inventory:
    """The inventory with every MIG card whose model has no MIG table (A30, A800, ...) turned hami-core,
    with a problem naming it: Volcano's decodeNodeDevices falls back to hami-core sharing when it finds no
    geometry for the card type, rather than leaving the card unusable."""
    untabled = [c for c in inventory.cards if c.mode == gpu.MODE_MIG and gpu.mig_model_for(c.type) is None]
    if not untabled:
        return inventory
    cards = tuple(replace(c, mode=gpu.MODE_HAMI_CORE) if c in untabled else c for c in inventory.cards)
    problems = tuple(f"card {c.uuid} ({c.type}) is in mig mode but has no known MIG table: shared as hami-core, "
                     "as Volcano does" for c in untabled)
    return gpu.Inventory(cards, inventory.problems + problems)


def _layouts(annotations: Mapping[str, str], inventory: gpu.Inventory) -> dict[str, int | None]:
    """Each MIG card's configured geometry from `volcano.sh/node-mig-layout`: its index in the model's
    table, None when the card is not cut, -1 for a layout the table does not list (any use recuts it)."""
    text = annotations.get(gpu.NODE_MIG_LAYOUT, "")
    labels = gpu.parse_mig_layout(text) if text else {}
    out: dict[str, int | None] = {}
    for card in inventory.cards:
        label = labels.get(card.uuid, "")
        model = gpu.mig_model_for(card.type)
        if not label or model is None:
            out[card.uuid] = None
            continue
        try:
            group = model.geometry_of(label)
        except ValueError:
            group = None
        out[card.uuid] = -1 if group is None else group
    return out
