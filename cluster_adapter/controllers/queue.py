"""Queue controller: `root` and `default` exist, every other queue has a parent, status counters, and
the Open / Closing / Closed state machine driven by `bus.volcano.sh` Commands.

- At start (and whenever one is deleted) `root` (weight 1, reclaimable false) and `default`
  (weight 1, reclaimable true, parent root) are created if missing; Volcano's scheduler cache does
  this in Volcano, the queue controller here, so a cluster with no queues works at once.
- A queue without `spec.parent` (other than root) gets `parent: root`.
- `status` counts the queue's PodGroups by phase (pending, inqueue, running, unknown, completed),
  written only when something changed.
- State (reference §13): a Command `{action: CloseQueue|OpenQueue, target: {kind: Queue, name}}` is
  deleted (so it runs at most once) and applied: close turns Open into Closed when the queue holds no
  PodGroups, else into Closing; Closing becomes Closed when its last PodGroup is gone; open turns
  Closed, Closing or Unknown into Open. Closing a queue closes its children, recursively. A state
  that is none of Open/Closed/Closing/Unknown becomes Unknown; an empty one becomes Open. `root`
  cannot be closed (an Event says so).

    kubectl create -f - <<EOF
    apiVersion: bus.volcano.sh/v1alpha1
    kind: Command
    metadata: {generateName: close-q1-, namespace: default}
    action: CloseQueue
    target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: q1}
    EOF

(what `vcctl queue operate --action close --name q1` sends). Admission of new jobs into a closed
queue is refused by the job webhook (`vpolicy.admission.jobs`), not here.
"""
from __future__ import annotations

import logging
from typing import Any

from cluster_adapter.controllers import names
from cluster_adapter.controllers.api import COMMANDS, PODGROUPS, QUEUES
from cluster_adapter.controllers.framework import Controller, register
from cluster_adapter.controllers.options import Options
from cluster_adapter.kube.client import APIConflict

log = logging.getLogger(__name__)

OPEN, CLOSED, CLOSING, UNKNOWN = "Open", "Closed", "Closing", "Unknown"
STATES = (OPEN, CLOSED, CLOSING, UNKNOWN)
OPEN_QUEUE, CLOSE_QUEUE = "OpenQueue", "CloseQueue"
COUNTERS = {"Pending": "pending", "Inqueue": "inqueue", "Running": "running", "Unknown": "unknown",
            "Completed": "completed"}
_ENSURE = ("ensure",)


@register
class QueueController(Controller):
    name = "queue-controller"
    resources = (QUEUES, PODGROUPS, COMMANDS)

    def setup(self, options: Options) -> None:
        options.store.on(QUEUES.name, self._on_queue)
        options.store.on(PODGROUPS.name, self._on_podgroup)
        options.store.on(COMMANDS.name, self._on_command)
        self.work.add(_ENSURE)

    def key_of(self, item: Any) -> str:
        return "/".join(item)

    # handlers (enqueue only) --------------------------------------------------------------------------
    def _on_queue(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = obj["metadata"]["name"]
        self.work.add(("queue", name))
        if event == "DELETED" and name in (names.ROOT_QUEUE, names.DEFAULT_QUEUE):
            self.work.add(_ENSURE)
        parent = (obj.get("spec") or {}).get("parent")
        if parent:
            self.work.add(("queue", parent))

    def _on_podgroup(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for group in (obj, old):
            if group is not None:
                self.work.add(("queue", (group.get("spec") or {}).get("queue") or names.DEFAULT_QUEUE))

    def _on_command(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        target = obj.get("target") or {}
        if event != "DELETED" and target.get("kind") == "Queue":
            self.work.add(("command", obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    # work ---------------------------------------------------------------------------------------------
    def process(self, item: Any) -> None:
        if item == _ENSURE:
            self._ensure_defaults()
        elif item[0] == "command":
            self._command(item[1], item[2])
        else:
            self._sync(item[1])

    def _ensure_defaults(self) -> None:
        store, api = self.opts.store, self.opts.api
        wanted = [(names.ROOT_QUEUE, {"weight": 1, "reclaimable": False}),
                  (names.DEFAULT_QUEUE, {"weight": 1, "reclaimable": True, "parent": names.ROOT_QUEUE})]
        for queue_name, spec in wanted:
            if store.get(QUEUES.name, "", queue_name) is not None:
                continue
            try:
                api.create(QUEUES, {"apiVersion": QUEUES.api_version, "kind": "Queue",
                                    "metadata": {"name": queue_name}, "spec": spec})
                log.info("created queue %s", queue_name)
            except APIConflict:
                pass  # someone else made it
            self.work.add(("queue", queue_name))

    def _sync(self, queue_name: str) -> None:
        store, api = self.opts.store, self.opts.api
        queue = store.get(QUEUES.name, "", queue_name)
        if queue is None:
            return
        spec = queue.get("spec") or {}
        if queue_name != names.ROOT_QUEUE and not spec.get("parent"):
            queue = api.patch(QUEUES, "", queue_name, {"spec": {"parent": names.ROOT_QUEUE}})
        status = queue.get("status") or {}
        groups = self._podgroups(queue_name)
        desired: dict[str, Any] = {field: 0 for field in COUNTERS.values()}
        for group in groups:
            phase = (group.get("status") or {}).get("phase") or "Pending"
            if phase in COUNTERS:
                desired[COUNTERS[phase]] += 1
        state = status.get("state") or ""
        if state == "":
            state = OPEN
        elif state not in STATES:
            state = UNKNOWN
        elif state == CLOSING and not groups:
            state = CLOSED
        desired["state"] = state
        changes = {k: v for k, v in desired.items() if k not in status or status[k] != v}
        if changes:
            api.patch(QUEUES, "", queue_name, {"status": _with_allocated(status, changes)}, subresource="status")

    def _command(self, namespace: str, name: str) -> None:
        store, api = self.opts.store, self.opts.api
        command = store.get(COMMANDS.name, namespace, name)
        if command is None:
            return
        if not api.delete(COMMANDS, namespace, name):
            return  # already taken by another worker or manager: it runs at most once
        target, action = (command.get("target") or {}).get("name", ""), command.get("action", "")
        queue = store.get(QUEUES.name, "", target)
        if queue is None:
            log.info("command %s/%s: queue %s not found", namespace, name, target)
            return
        if action not in (OPEN_QUEUE, CLOSE_QUEUE):
            self.opts.events.event(queue, "Warning", "InvalidAction", f"unknown queue action {action!r}")
            return
        self.opts.events.event(queue, "Normal", "CommandIssued", f"Start to execute command {action}")
        self.apply_action(target, action)

    def apply_action(self, queue_name: str, action: str) -> None:
        """Open or close one queue (and, closing, its children), from the state the store holds."""
        store, api = self.opts.store, self.opts.api
        queue = store.get(QUEUES.name, "", queue_name)
        if queue is None:
            return
        state = (queue.get("status") or {}).get("state") or OPEN
        if action == CLOSE_QUEUE:
            if queue_name == names.ROOT_QUEUE:
                self.opts.events.event(queue, "Warning", "CloseRefused", "the root queue cannot be closed")
                return
            new = CLOSING if self._podgroups(queue_name) else CLOSED
            if state in (CLOSED, CLOSING) and not (state == CLOSING and new == CLOSED):
                new = state
            for child in store.list(QUEUES.name, where=lambda q: (q.get("spec") or {}).get("parent") == queue_name):
                self.apply_action(child["metadata"]["name"], CLOSE_QUEUE)
        else:
            new = OPEN
        if new != state:
            api.patch(QUEUES, "", queue_name, {"status": _with_allocated(queue.get("status") or {}, {"state": new})},
                      subresource="status")
            self.opts.events.event(queue, "Normal", "QueueStateChanged", f"{state} -> {new}")

    def _podgroups(self, queue_name: str) -> list[dict[str, Any]]:
        return self.opts.store.list(PODGROUPS.name, where=lambda g: ((g.get("spec") or {}).get("queue")
                                                                      or names.DEFAULT_QUEUE) == queue_name)


def _with_allocated(status: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`changes`, plus an empty `allocated` when the queue has none yet: Volcano's Queue CRD requires
    `status.allocated`, so a real API server refuses (422) a status without it. The scheduler fills it."""
    return changes if "allocated" in status else {**changes, "allocated": {}}
