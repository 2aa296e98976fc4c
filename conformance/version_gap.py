"""What separates the pinned Volcano (v1.10.0, the newest release the Go module proxy serves) from the
main-branch Volcano vpolicy follows (reference at ed72c7c), applied to the oracle's side before comparing.

Two rules are applied here, exactly, not guessed from outcomes (docs/conformance.md, "Version gap"); the
action loops main rewrote run inside the oracle instead, as our transcriptions on v1.10.0's framework
(allocate_main.go: a job goes back into its queue whenever tasks are left; backfill_main.go;
reclaim_main.go), and what neither can bridge is a listed divergence (`conformance.divergences`):

1. PodGroup phase at session close. v1.10 counts allocated tasks (Bound, Binding, Running, Allocated)
   and Succeeded towards minMember (pkg/scheduler/framework/session.go:264-275 at v1.10.0); main counts
   scheduled ones (Running, Bound, Failed, Succeeded, `api.ScheduledStatus`), so a gang dispatched this
   session stays Inqueue until its pods run. The oracle reports each podgroup's tasks by status and the
   phase it held before closing; `main_phase` applies main's rule to them.
2. Queue state. v1.10's scheduler never reads a Queue's `status.state`; main refuses a queue that is not
   Open in proportion's and capacity's Allocatable, Preemptive and JobEnqueueable. `main_case` gives the
   oracle the case main would see: the pending pods of jobs in a non-Open queue can go on no node (main
   places none of them and reclaims for none, but still counts their requests), and `main_phase` keeps such a podgroup's Pending phase when it
   has minResources (main's enqueue asks JobEnqueueable, which rejects it; without minResources enqueue
   admits it without asking, in both versions: actions/enqueue/enqueue.go:98 at v1.10.0).
"""
from __future__ import annotations

import copy
from typing import Any

from conformance.generate import GROUP, Case

Document = dict[str, Any]

UNPLACEABLE = "conformance.vpolicy.dev/queue-not-open"  # a node label no generated node has
_BEYOND_ANY_CLUSTER = {"cpu": "1000000", "memory": "1000000Gi"}
_SCHEDULED = ("Running", "Bound", "Failed", "Succeeded", "Releasing")


def closed_queues(c: Case) -> set[str]:
    """The non-Open queues main would refuse: none when the conf has neither proportion nor capacity,
    the two plugins whose callbacks hold main's queue-state checks."""
    if not any(f"name: {plugin}" in c.conf for plugin in ("proportion", "capacity")):
        return set()
    return {o["metadata"]["name"] for o in c.objects
            if o["kind"] == "Queue" and o.get("status", {}).get("state", "Open") != "Open"}


def _groups_in(c: Case, queues: set[str]) -> dict[str, str]:
    """`ns/podgroup` -> its phase in the input, for podgroups of the given queues ("" when the podgroup has
    no minResources: main's enqueue then never asks JobEnqueueable, so the queue's state does not stop it)."""
    return {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}":
            o.get("status", {}).get("phase", "") if o["spec"].get("minResources") is not None else ""
            for o in c.objects if o["kind"] == "PodGroup" and o["spec"].get("queue") in queues}


_ATTACH_LIMIT = "attachable-volumes-csi-"  # volumeutil.GetCSIAttachLimitKey's prefix
_BEYOND_ANY_VOLUME_COUNT = "100000"


def _csi_volumes_uncounted(c: Case) -> Case:
    """v1.10's cache adds a pod's CSI volumes to its task's request as the scalar resource
    `attachable-volumes-csi-<driver>` (cache/event_handlers.go:238, NewTaskInfo -> addPodCSIVolumesToTask, at v1.10.0),
    which no node's allocatable lists, so such a pod fits no node there; main's NewTaskInfo leaves the
    count out (the call is commented out) and only the NodeVolumeLimits predicate limits volumes. Every
    node the oracle sees gets an allocatable of each driver's key beyond any count, so v1.10's resource
    checks never refuse a pod for it (the predicate, the same in both, still does)."""
    drivers = {o["spec"]["csi"]["driver"] for o in c.objects if o["kind"] == "PersistentVolume" and "csi" in o["spec"]}
    drivers |= {o["provisioner"] for o in c.objects if o["kind"] == "StorageClass" and o.get("provisioner")}
    if not drivers or not any(o["kind"] == "PersistentVolumeClaim" for o in c.objects):
        return c
    extra = {_ATTACH_LIMIT + d: _BEYOND_ANY_VOLUME_COUNT for d in sorted(drivers)}
    objects = []
    for o in c.objects:
        if o["kind"] == "Node":
            o = copy.deepcopy(o)
            for side in ("allocatable", "capacity"):
                o["status"][side] = {**o["status"].get(side, {}), **extra}
        objects.append(o)
    return Case(c.family, c.seed, c.index, objects, c.conf)


def main_case(c: Case) -> Case:
    """The case as main would act on it: no pending pod of a job in a non-Open queue can be placed, and
    no Pending podgroup with minResources in such a queue is admitted by enqueue.

    The pods stay (proportion and capacity still count their requests, as main does); each gets a node
    selector no node matches, so allocate, backfill, preempt and reclaim find no node for it. Such a
    podgroup's minResources are raised beyond any cluster, so v1.10's enqueue rejects it as main's does,
    and without its side effects: overcommit counts a job's minResources only once it is enqueued, and
    proportion and capacity only when they permit it (otherwise the admitted job would take room in
    their `inqueue` that main leaves to the jobs of Open queues).
    """
    c = _csi_volumes_uncounted(c)
    closed = closed_queues(c)
    if not closed:
        return c
    groups = {key.split("/", 1)[1] for key in _groups_in(c, closed)}
    objects = []
    for o in c.objects:
        if o["kind"] == "Pod" and o["metadata"].get("annotations", {}).get(GROUP) in groups \
                and not o["spec"].get("nodeName"):
            o = copy.deepcopy(o)
            o["spec"]["nodeSelector"] = {**o["spec"].get("nodeSelector", {}), UNPLACEABLE: "true"}
        elif o["kind"] == "PodGroup" and o["metadata"]["name"] in groups and o["spec"].get("minResources") \
                and o.get("status", {}).get("phase", "Pending") == "Pending":
            o = copy.deepcopy(o)
            o["spec"]["minResources"] = {**o["spec"]["minResources"], **_BEYOND_ANY_CLUSTER}
        objects.append(o)
    return Case(c.family, c.seed, c.index, objects, c.conf)


def main_document(c: Case, doc: Document) -> Document:
    """Volcano v1.10's document with main's podgroup phase rule applied."""
    out = copy.deepcopy(doc)
    # only enqueue holds a Pending job back; without it allocate admits the job on the spot, in both
    closed = _groups_in(c, closed_queues(c)) if "enqueue" in c.conf.split("tiers")[0] else {}
    for key, status in out.get("podgroups", {}).items():
        status["phase"] = main_phase(status, input_phase=closed.get(key))
    return out


def main_phase(status: dict[str, Any], *, input_phase: str | None = None) -> str:
    """Main's phase from v1.10's counts; `input_phase` is set for a podgroup of a non-Open queue."""
    phase: str = status["phase"]
    tasks: dict[str, int] = status.get("tasks") or {}
    if phase == "Unknown" or "session_phase" not in status:
        return phase  # Unknown: the same rule in both; no session_phase: the job was not in the session
    scheduled = sum(tasks.get(s, 0) for s in _SCHEDULED)
    finished = tasks.get("Succeeded", 0) + tasks.get("Failed", 0)
    min_member = int(status.get("min_member", 0))
    if scheduled >= min_member and (scheduled > 0 or min_member == 0):
        return "Completed" if scheduled and finished == scheduled else "Running"
    before = status["session_phase"]
    if input_phase == "Pending":
        before = "Pending"  # main's enqueue rejects a job of a queue that is not Open
    return "Inqueue" if before == "Inqueue" else "Pending"
