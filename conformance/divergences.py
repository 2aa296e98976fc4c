"""Differences between vpolicy and the pinned Volcano that are kept on purpose, each with the Go line
that decides Volcano's side (docs/conformance.md explains each one).

A listed divergence is recognised from the case and the two outcomes; a difference it explains is
counted as `listed`, not as a failure. Keep this list short: every entry is a place where vpolicy does
not make Volcano's decision.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance import extender_server
from conformance.compare import Outcome
from conformance.generate import GROUP, Case
from vpolicy.model.quantity import parse_quantity


@dataclass(frozen=True)
class Divergence:
    key: str
    go_line: str  # file:line in volcano.sh/volcano at the pinned version
    why: str
    matches: Callable[[Case, Outcome, Outcome, list[str]], bool]


Resources = dict[str, float]
_DIMS = ("cpu", "memory")
_MIN_RESOURCE = 0.1  # Volcano's minResource: a dimension below it counts as empty


def _reclaims_with_capacity(case: Case) -> bool:
    return "reclaim" in case.conf.split("tiers")[0] and "name: capacity" in case.conf


def _requests(pod: dict[str, Any]) -> Resources:
    """cpu (millicores) and memory (bytes) a pod asks for, as Volcano's Resreq counts them."""
    out = {d: 0.0 for d in _DIMS}
    for container in pod["spec"].get("containers", []):
        for d, text in container.get("resources", {}).get("requests", {}).items():
            if d in out:
                out[d] += parse_quantity(text, d)
    return out


def _resources(spec: dict[str, Any] | None) -> Resources:
    return {d: float(parse_quantity(spec[d], d)) if spec and d in spec else 0.0 for d in _DIMS}


def _plus(a: Resources, b: Resources, sign: float = 1.0) -> Resources:
    return {d: a[d] + sign * b[d] for d in _DIMS}


@dataclass(frozen=True)
class _CapacityView:
    """What v1.10.0's capacity plugin holds at session start (non-hierarchical): each pod's queue and
    request, each queue's allocated and deserved (spec.deserved lowered to the queue's request, raised
    to its guarantee: capacity.go:78-166)."""
    pods: dict[str, dict[str, Any]]
    queue_of: dict[str, str]
    allocated: dict[str, Resources]
    deserved: dict[str, Resources]


def _capacity_view(case: Case) -> _CapacityView:
    queues = {o["metadata"]["name"]: o for o in case.objects if o["kind"] == "Queue"}
    group_queue = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o["spec"].get("queue", "default")
                   for o in case.objects if o["kind"] == "PodGroup"}
    pods = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o
            for o in case.objects if o["kind"] == "Pod"}
    queue_of: dict[str, str] = {}
    zero = {d: 0.0 for d in _DIMS}
    allocated: dict[str, Resources] = {}
    request: dict[str, Resources] = {}
    for key, pod in pods.items():
        group = pod["metadata"].get("annotations", {}).get(GROUP)
        queue = group_queue.get(f"{pod['metadata'].get('namespace', 'default')}/{group}")
        if queue is None:
            continue
        queue_of[key] = queue
        phase = pod.get("status", {}).get("phase", "Pending")
        releasing = bool(pod["metadata"].get("deletionTimestamp"))
        placed = bool(pod["spec"].get("nodeName")) and phase in ("Pending", "Running") and not releasing
        if placed:
            allocated[queue] = _plus(allocated.get(queue, zero), _requests(pod))
        if placed or (phase == "Pending" and not pod["spec"].get("nodeName")):
            request[queue] = _plus(request.get(queue, zero), _requests(pod))
    deserved = {}
    for name, q in queues.items():
        spec = _resources(q["spec"].get("deserved"))
        guarantee = _resources(q["spec"].get("guarantee", {}).get("resource"))
        wanted = request.get(name, zero)
        deserved[name] = {d: max(min(spec[d], wanted[d]), guarantee[d]) for d in _DIMS}
    return _CapacityView(pods, queue_of, allocated, deserved)


def _subject(line: str) -> str:
    return line.split()[1].rstrip(":")


def _capacity_reclaims_on_any_dimension(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """The conf reclaims with capacity; some pods vpolicy's reclaim pipelined, Volcano did not, and
    vpolicy's placements take each such pod's queue beyond its deserved on a dimension the pod asks
    for (v1.10.0 refuses a task there, main takes any one dimension within deserved); the other
    differences are pods of those queues Volcano pipelined instead and evictions."""
    if not _reclaims_with_capacity(case) or not lines:
        return False
    view = _capacity_view(case)
    extra = [_subject(line) for line in lines if line.startswith("pipeline ") and ": volcano -," in line]
    if not extra:
        return False
    queues = {view.queue_of.get(pod) for pod in extra}
    for line in lines:
        if line.startswith("evict ") or (line.startswith("pipeline ") and ": volcano -," in line):
            continue
        # Volcano pipelined another pod of those queues instead, or the same pod elsewhere (vpolicy's
        # further evictions changed the node scores)
        if not (line.startswith("pipeline ") and ": volcano -," not in line
                and view.queue_of.get(_subject(line)) in queues):
            return False
    zero = {d: 0.0 for d in _DIMS}
    evicted = set(vpolicy.evictions)
    for pod in extra:
        queue = view.queue_of.get(pod)
        if queue is None:
            return False
        used = view.allocated.get(queue, zero)
        for other, _ in (*vpolicy.binds, *vpolicy.pipelined):
            if view.queue_of.get(other) == queue:
                used = _plus(used, _requests(view.pods[other]))
        for other in evicted:
            if view.queue_of.get(other) == queue:
                used = _plus(used, _requests(view.pods[other]), -1.0)
        asks = _requests(view.pods[pod])
        if not any(asks[d] > 0 and used[d] - view.deserved[queue][d] >= _MIN_RESOURCE for d in _DIMS):
            return False
    return True


def _capacity_v110_takes_zero_deserved_dimension(case: Case, volcano: Outcome, vpolicy: Outcome,
                                                 lines: list[str]) -> bool:
    """The conf reclaims with capacity and every difference is an eviction Volcano made (and pods it
    pipelined) where the victim asks for a cpu or memory dimension its queue deserves none of, while its
    queue stays within deserved on every dimension it deserves: v1.10.0 takes such a victim (its queue's
    allocated is not <= deserved), main compares only the dimensions deserved defines."""
    if not _reclaims_with_capacity(case) or not lines:
        return False
    view = _capacity_view(case)
    victims = [_subject(line) for line in lines if line.startswith("evict ") and line.endswith("only volcano")]
    if not victims:
        return False
    for line in lines:
        if not ((line.startswith("evict ") and line.endswith("only volcano"))
                or (line.startswith("pipeline ") and line.endswith("vpolicy -"))):
            return False
    zero = {d: 0.0 for d in _DIMS}
    for pod in victims:
        queue = view.queue_of.get(pod)
        if queue is None:
            return False
        asks, deserved = _requests(view.pods[pod]), view.deserved[queue]
        allocated = view.allocated.get(queue, zero)
        deserves_none = [d for d in _DIMS if asks[d] > 0 and deserved[d] < _MIN_RESOURCE]
        deserves_some = [d for d in _DIMS if asks[d] > 0 and deserved[d] >= _MIN_RESOURCE]
        if not deserves_none or not deserves_some:
            return False
        if any(allocated[d] > deserved[d] for d in deserves_some):
            return False
    return True


def _capacity_v110_skips_victim_queue_below_request(case: Case, volcano: Outcome, vpolicy: Outcome,
                                                   lines: list[str]) -> bool:
    """The conf reclaims with capacity, every difference is a pod vpolicy's reclaim pipelined or evicted
    where Volcano did nothing, and each pod vpolicy evicted belongs to a queue that held, at the start,
    less than one of those pipelined reclaimers asks on some dimension (v1.10.0 skips such a victim)."""
    if not _reclaims_with_capacity(case) or not lines:
        return False
    if not all((line.startswith("pipeline ") and ": volcano -," in line)
               or (line.startswith("evict ") and line.endswith("only vpolicy")) for line in lines):
        return False
    view = _capacity_view(case)
    reclaimers = [_requests(view.pods[_subject(line)]) for line in lines
                  if line.startswith("pipeline ") and _subject(line) in view.pods]
    victims = [_subject(line) for line in lines if line.startswith("evict ")]
    if not reclaimers or not victims:
        return False
    zero = {d: 0.0 for d in _DIMS}
    for pod in victims:
        queue = view.queue_of.get(pod)
        if queue is None:
            return False
        held = view.allocated.get(queue, zero)
        if not any(held[d] < asks[d] for asks in reclaimers for d in _DIMS):
            return False
    return True


def _overfull_nodes(case: Case, volcano: Outcome) -> set[str]:
    """Nodes holding more pods in Volcano's outcome (pods already there, releasing ones too, plus its
    binds, pipelined pods and pods left allocated) than their allocatable pod count."""
    slots = {o["metadata"]["name"]: int(o["status"]["allocatable"].get("pods", "110"))
             for o in case.objects if o["kind"] == "Node"}
    count: dict[str, int] = {}
    for o in case.objects:
        node = o["spec"].get("nodeName") if o["kind"] == "Pod" else None
        if node:
            count[node] = count.get(node, 0) + 1
    for _, node in (*volcano.binds, *volcano.pipelined, *volcano.allocated):
        count[node] = count.get(node, 0) + 1
    return {n for n, cap in slots.items() if count.get(n, 0) > cap}


def _placed_beyond_pod_slots(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """Every difference is a pod Volcano placed (vpolicy did not) on a node it filled beyond its slots,
    or a pod vpolicy placed (Volcano did not) on a node where Volcano left allocated a pod of a job
    that such a placement kept (pipelined, not ready: its statement neither committed nor discarded)."""
    overfull = _overfull_nodes(case, volcano)
    if not overfull or not lines:
        return False
    placed = {p: n for p, n in (*volcano.binds, *volcano.pipelined)}
    group = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}":
             f"{o['metadata'].get('namespace', 'default')}/{o['metadata'].get('annotations', {}).get(GROUP)}"
             for o in case.objects if o["kind"] == "Pod"}
    beyond = [line.split()[1].rstrip(":") for line in lines if line.split()[0] in ("bind", "pipeline")
              and "vpolicy -" in line]
    kept_jobs = {group.get(pod) for pod in beyond if placed.get(pod) in overfull}
    held = {n for p, n in volcano.allocated if group.get(p) in kept_jobs}
    mine = {p: n for p, n in (*vpolicy.binds, *vpolicy.pipelined)}
    if not kept_jobs:
        return False
    for line in lines:
        words = line.split()
        pod = words[1].rstrip(":")
        if words[0] not in ("bind", "pipeline"):
            return False
        if "vpolicy -" in line:
            if placed.get(pod) not in overfull:
                return False
        elif ": volcano -," not in line or mine.get(pod) not in held:
            return False
    return True


def _has_pod_relations(pod: dict[str, Any]) -> bool:
    spec = pod["spec"]
    affinity = spec.get("affinity", {})
    return bool(spec.get("topologySpreadConstraints") or affinity.get("podAffinity")
                or affinity.get("podAntiAffinity") or any(
                    p.get("hostPort") for c in spec.get("containers", []) for p in c.get("ports", [])))


def _extender_refuses_resolvably(case: Case, pod: dict[str, Any], node: str) -> bool:
    """The conf's extender predicate (the extender family's server) refuses `pod` on `node` with a
    resolvable code, which v1.10.0's preempt-flavour predicate lets through."""
    verb = re.search(r'extender\.predicateVerb: "([^"]+)"', case.conf)
    if verb is None:
        return False
    status, reply = extender_server.answer(verb.group(1), {"task": {"Name": pod["metadata"]["name"]},
                                                          "node": {"Name": node}})
    return status == 200 and bool(reply.get("status")) and reply.get("code") != 3


def _preempt_pipelines_without_predicate(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> bool:
    """The conf preempts and every difference is a pod with pod relations Volcano pipelined and vpolicy
    did not, or a pod Volcano alone evicted from a node where it pipelined such a pod (the room it made
    for it); reclaim's likewise (the oracle's reclaim asks v1.10.0's preempt-flavour predicate)."""
    actions = case.conf.split("tiers")[0]
    if ("preempt" not in actions and "reclaim" not in actions) or not lines:
        return False
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in case.objects if o["kind"] == "Pod"}
    pipelined_on: set[str] = set()
    evicted: list[dict[str, Any]] = []
    for line in lines:
        words = line.split()
        pod = pods.get(words[1].rstrip(":"))
        if pod is None:
            return False
        if words[0] == "evict" and line.endswith("only volcano"):
            evicted.append(pod)
            continue
        if words[0] != "pipeline" or "vpolicy -" not in line:
            return False
        node = dict(volcano.pipelined)[words[1].rstrip(":")]
        if not (_has_pod_relations(pod) or _extender_refuses_resolvably(case, pod, node)):
            return False
        pipelined_on.add(node)
    return bool(pipelined_on) and all(p["spec"].get("nodeName") in pipelined_on for p in evicted)


def _evicted_without_need(case: Case, volcano: Outcome, pod: dict[str, Any]) -> bool:
    """Whether the pods Volcano pipelined onto `pod`'s node fit there with `pod` left running: the
    node's allocatable less every pod on it that is neither releasing nor evicted by Volcano."""
    node_name = pod["spec"].get("nodeName")
    node = next((o for o in case.objects if o["kind"] == "Node" and o["metadata"]["name"] == node_name), None)
    if node is None:
        return False
    evicted = set(volcano.evictions)
    held = _resources(node["status"].get("allocatable"))
    for o in case.objects:
        if o["kind"] != "Pod" or o["spec"].get("nodeName") != node_name:
            continue
        key = f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
        if o is pod or (key not in evicted and not o["metadata"].get("deletionTimestamp")):
            held = _plus(held, _requests(o), -1.0)
    pods = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o
            for o in case.objects if o["kind"] == "Pod"}
    wanted = {d: 0.0 for d in _DIMS}
    for name, on in volcano.pipelined:
        if on == node_name and name in pods:
            wanted = _plus(wanted, _requests(pods[name]))
    return all(wanted[d] <= held[d] for d in _DIMS)


def _preempt_keeps_evictions_of_failed_nodes(case: Case, volcano: Outcome, vpolicy: Outcome,
                                             lines: list[str]) -> bool:
    """The conf preempts; every difference is a pod only Volcano evicted or only Volcano pipelined, the
    pipelined ones onto nodes of such evictions; and some such eviction was not needed by what Volcano
    pipelined onto its node (it was made for a preemptor that then went elsewhere)."""
    if "preempt" not in case.conf.split("tiers")[0] or not lines:
        return False
    pods = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o
            for o in case.objects if o["kind"] == "Pod"}
    evicted: list[dict[str, Any]] = []
    pipelined_on: list[str] = []
    phases: list[str] = []
    for line in lines:
        words = line.split()
        name = words[1].rstrip(":")
        if words[0] == "evict" and line.endswith("only volcano") and name in pods:
            evicted.append(pods[name])
        elif words[0] == "pipeline" and line.endswith("vpolicy -"):
            pipelined_on.append(dict(volcano.pipelined)[name])
        elif words[0] == "phase":
            phases.append(name)
        else:
            return False
    # a podgroup's phase may differ only for the pods Volcano evicted of it
    groups = {f"{p['metadata'].get('namespace', 'default')}/{p['metadata'].get('annotations', {}).get(GROUP)}"
              for p in evicted}
    if any(g not in groups for g in phases):
        return False
    nodes = {p["spec"].get("nodeName") for p in evicted}
    return (bool(evicted) and all(n in nodes for n in pipelined_on)
            and any(_evicted_without_need(case, volcano, p) or _evicted_for_another_queue(case, volcano, p)
                    for p in evicted))


def _evicted_for_another_queue(case: Case, volcano: Outcome, pod: dict[str, Any]) -> bool:
    """Whether every pod Volcano pipelined onto `pod`'s node belongs to another queue than `pod`: main's
    preempt evicts only in the preemptor's own queue (other jobs, or the preemptor's job), so such an
    eviction was made for a preemptor that was then not pipelined there, and kept (v1.10.0)."""
    view = _capacity_view(case)
    key = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
    queue = view.queue_of.get(key)
    on_node = [p for p, n in volcano.pipelined if n == pod["spec"].get("nodeName")]
    return queue is not None and bool(on_node) and all(view.queue_of.get(p) != queue for p in on_node)


DIVERGENCES: tuple[Divergence, ...] = (
    Divergence(
        key="preempt-v1.10-pipelines-without-predicate",
        go_line="pkg/scheduler/actions/preempt/preempt.go:291,315 (v1.10.0)",
        why="version gap: v1.10.0's preempt pipelines the preemptor on a node once the queue is "
            "Allocatable and its request fits FutureIdle, without asking the predicates again, so a "
            "preemptor whose pod affinity, anti-affinity, topology spread or host port fails there, or "
            "that an extender refuses there with a resolvable code "
            "(resolvable failures pass the preempt-flavour predicate) is pipelined, with or without "
            "evictions; main asks PredicateFn too (`preemptorFitsOnNode`), as vpolicy does. The same "
            "v1.10.0 reading (an anti-affinity failure is Unschedulable, not UnschedulableAndUnresolvable) "
            "keeps such a failure of a sibling out of preempt's per-role predicate cache "
            "(util/predicate_helper.go:47-87), so a later task of that role may still get the node in "
            "v1.10.0 where vpolicy's cache refuses it (confs-3-34, confs-11-9); and reclaim, whose "
            "oracle loop (reclaim_main.go) asks v1.10.0's preempt-flavour predicate, pipelines a pod "
            "whose anti-affinity fails on the node (confs-5-179). Matched when "
            "the conf preempts or reclaims and every difference is a pod with such terms (or such an extender answer, "
            "asked of conformance.extender_server) that Volcano pipelined and "
            "vpolicy did not, or a pod Volcano alone evicted from a node where it pipelined one.",
        matches=_preempt_pipelines_without_predicate),
    Divergence(
        key="predicates-v1.10-passes-full-pod-slots",
        go_line="pkg/scheduler/plugins/predicates/predicates.go:395-403 (v1.10.0)",
        why="version gap: v1.10.0's predicate records NodePodNumberExceeded when a node's pods fill its "
            "slots but returns success unless another filter fails, so a task whose request fits the "
            "node's FutureIdle (a releasing pod gives its slot back there) is pipelined onto a full node; "
            "main returns the failure (`if len(predicateStatus) > 0`), as vpolicy does. Matched when every "
            "difference is a pod Volcano placed, and vpolicy did not, on a node Volcano's outcome fills "
            "beyond its pod slots (counting the pods it left allocated), or a pod vpolicy placed on a node "
            "where Volcano left allocated a pod of a job such a placement kept pipelined (allocate-7-392; "
            "the backfill family's cases are bridged in backfill_main.go).",
        matches=_placed_beyond_pod_slots),
    Divergence(
        key="capacity-v1.10-preemptive-needs-every-dimension",
        go_line="pkg/scheduler/plugins/capacity/capacity.go:255-271 (v1.10.0)",
        why="version gap: v1.10.0's capacity answers Preemptive only when the queue's allocated plus the "
            "task's request stays within deserved on every dimension the task asks for "
            "(LessEqualWithDimension), though its comment says one dimension suffices; main does what the "
            "comment says (LessEqualPartlyWithDimensionZeroFiltered), and vpolicy follows main. Matched "
            "when the conf reclaims with capacity, some pods vpolicy's reclaim pipelined and Volcano did not, "
            "vpolicy's placements take each one's queue beyond its deserved on a dimension the pod asks for, "
            "and the other differences are evictions and pods of those queues Volcano pipelined instead (a "
            "smaller task that stays within deserved on every dimension) or on another node (reclaim-5-28).",
        matches=_capacity_reclaims_on_any_dimension),
    Divergence(
        key="preempt-v1.10-keeps-evictions-of-failed-nodes",
        go_line="pkg/scheduler/actions/preempt/preempt.go:283-305 (v1.10.0)",
        why="version gap: v1.10.0's preempt evicts a node's victims straight into the job's statement "
            "until the preemptor fits, and keeps them when it then does not (Allocatable still false, "
            "or not enough room): the preemptor goes to a later node and the first node's victims stay "
            "evicted, their room taken by a later preemptor; main evicts into a statement per node and "
            "discards it when the preemptor is not pipelined there, as vpolicy does. Matched when the "
            "conf preempts, every difference is a pod only Volcano evicted or only Volcano pipelined "
            "(onto a node of such an eviction) or a podgroup phase of an evicted pod, and some such eviction "
            "was not needed by what Volcano pipelined onto its node, or every pod Volcano pipelined there "
            "is of another queue than the victim, which main's preempt never evicts for (confs-5-35, "
            "confs-5-41, preempt-7-899: a within-job eviction kept, its room taken by another queue).",
        matches=_preempt_keeps_evictions_of_failed_nodes),
    Divergence(
        key="capacity-v1.10-reclaims-zero-deserved-dimension",
        go_line="pkg/scheduler/plugins/capacity/capacity.go:245 (v1.10.0)",
        why="version gap: v1.10.0's capacity takes a reclaimee whenever its queue's allocated is not <= "
            "deserved (`allocated.LessEqual(attr.deserved, api.Infinity)`), so a queue whose deserved is 0 "
            "on cpu or memory loses any pod asking for that dimension; main compares only the dimensions "
            "the queue's deserved defines (`checkDeservedExceedance`: GreaterPartlyWithRelevantDimensions "
            "skips a cpu or memory deserved below minResource; a victim sharing no dimension with deserved "
            "is taken at once by `isImmediateVictim`), and vpolicy follows main. Matched when the conf "
            "reclaims with capacity and every difference is an eviction Volcano made, and pods it "
            "pipelined, where each victim asks for a dimension its queue deserves none of and another it "
            "deserves, with its queue within deserved on the latter.",
        matches=_capacity_v110_takes_zero_deserved_dimension),
    Divergence(
        key="capacity-v1.10-skips-victim-queue-below-request",
        go_line="pkg/scheduler/plugins/capacity/capacity.go:236 (v1.10.0)",
        why="version gap: v1.10.0's capacity skips a reclaimee whose queue holds less than the reclaimer "
            "asks on some dimension (`allocated.LessPartly(reclaimer.Resreq, api.Zero)`), as proportion "
            "does; main's capacity dropped that check (its reclaimable keeps `shouldSkipReclaimee`, the "
            "guarantee and `isImmediateVictim` / `checkDeservedExceedance`), and vpolicy follows main. "
            "Matched when the conf reclaims with capacity, every difference is a pod vpolicy's reclaim "
            "pipelined or evicted where Volcano did nothing, and each pod vpolicy evicted belongs to a "
            "queue that held, at the start, less than one of those reclaimers asks on some dimension.",
        matches=_capacity_v110_skips_victim_queue_below_request),
)


def explain(case: Case, volcano: Outcome, vpolicy: Outcome, lines: list[str]) -> Divergence | None:
    for d in DIVERGENCES:
        if d.matches(case, volcano, vpolicy, lines):
            return d
    return None


def describe() -> list[dict[str, Any]]:
    return [{"key": d.key, "go_line": d.go_line, "why": d.why} for d in DIVERGENCES]
