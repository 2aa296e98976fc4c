"""The small clusters `verify` searches: every cluster within a bound, or a seeded sample of them.

A world is a `Spec` of choices, built into a `ClusterSnapshot` by `build`:

- 1..N nodes of 1 or 2 cpus (4Gi memory, 4 pod slots);
- 1..min(N, 3) queues, each of a profile (plain, capability cpu 1, guarantee cpu 1, not reclaimable,
  weight 2) and, after the first, either under `root` or under `q0` (a hierarchy);
- 1..N jobs, each in some queue, of priority class `low` (10) or `high` (1000), of a shape (1 or 2
  tasks of 1 cpu with minMember 1 or 2, one task of 2 cpus, or 2 tasks whose second has pod priority
  1000), and in a state: Running from node k (tasks go to nodes k, k+1, ... while they fit; a task that
  fits nowhere stays Pending), Inqueue with pending tasks, or Pending with minResources. A Running job
  may instead name the node of each task (`placed`): `verify_canon` writes the worlds it runs that way.

`space(bound)` counts the worlds; `worlds(bound, limit, seed)` yields all of them when they are at most
`limit`, else `limit` distinct ones drawn with a seeded generator (the caller reports which). `shrink`
makes a failing world smaller while a predicate still fails, so counterexamples read well. Many worlds
of the space are the same cluster, or clusters a policy cannot tell apart: `verify_canon` enumerates
one world for each class and counts the worlds it stands for.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Iterator

from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources

EPOCH = 1704067200  # 2024-01-01T00:00:00Z: creation times count from here
GIB = 1 << 30
NAMESPACE = "ns"
PRIORITY_CLASSES = (snap.PriorityClass("low", 10), snap.PriorityClass("high", 1000))
MAX_QUEUES = 3
NODE_CPUS = (1, 2)
QUEUE_PROFILES = ("plain", "capped", "guaranteed", "unreclaimable", "weighted")
# (tasks, minMember, cpu millis per task, the last task has pod priority 1000)
SHAPES = ((1, 1, 1000, False), (2, 1, 1000, False), (2, 2, 1000, False), (1, 1, 2000, False), (2, 1, 1000, True))
RUNNING, INQUEUE, PENDING = "running", "inqueue", "pending"


@dataclass(frozen=True, slots=True)
class JobSpec:
    queue: int
    high: bool
    shape: int
    state: str  # running | inqueue | pending
    node: int = 0  # first node tried when running
    placed: tuple[int, ...] | None = None  # running: the node index of each task (-1: pending), if given


@dataclass(frozen=True, slots=True)
class Spec:
    nodes: tuple[int, ...]  # cpus per node
    queues: tuple[tuple[str, bool], ...]  # (profile, under q0)
    jobs: tuple[JobSpec, ...]

    def size(self) -> tuple[int, int, int]:
        return len(self.nodes), len(self.queues), len(self.jobs)


# The space ------------------------------------------------------------------------------------------

def _job_choices(queues: int, nodes: int) -> list[JobSpec]:
    out = []
    for q, high, shape in itertools.product(range(queues), (False, True), range(len(SHAPES))):
        out += [JobSpec(q, high, shape, RUNNING, k) for k in range(nodes)]
        out += [JobSpec(q, high, shape, INQUEUE), JobSpec(q, high, shape, PENDING)]
    return out


def _queue_choices(count: int) -> list[tuple[tuple[str, bool], ...]]:
    first = [(p, False) for p in QUEUE_PROFILES]
    rest = [(p, under) for p in QUEUE_PROFILES for under in (False, True)]
    return [tuple(c) for c in itertools.product(first, *([rest] * (count - 1)))]


def space(bound: int) -> int:
    """How many worlds lie within `bound` nodes, queues and jobs."""
    total = 0
    for n in range(1, bound + 1):
        node_sets = len(NODE_CPUS) ** n
        for q in range(1, min(bound, MAX_QUEUES) + 1):
            queue_sets = len(QUEUE_PROFILES) * (2 * len(QUEUE_PROFILES)) ** (q - 1)
            per_job = len(_job_choices(q, n))
            job_sets = sum(per_job ** j for j in range(1, bound + 1))
            total += node_sets * queue_sets * job_sets
    return total


def worlds(bound: int, limit: int, seed: int = 0) -> tuple[Iterator[Spec], bool]:
    """The worlds to try and whether that is all of them (exhaustive) or a sample."""
    if space(bound) <= limit:
        return _all(bound), True
    return _sample(bound, limit, seed), False


def _all(bound: int) -> Iterator[Spec]:
    for n in range(1, bound + 1):
        for nodes in itertools.product(NODE_CPUS, repeat=n):
            for q in range(1, min(bound, MAX_QUEUES) + 1):
                choices = _job_choices(q, n)
                for queues in _queue_choices(q):
                    for j in range(1, bound + 1):
                        for jobs in itertools.product(choices, repeat=j):
                            yield Spec(tuple(nodes), queues, tuple(jobs))


def _sample(bound: int, limit: int, seed: int) -> Iterator[Spec]:
    """Distinct worlds drawn with a seeded generator. Draws lean towards contention (running work and
    pending work together, small nodes), where preempt and reclaim act; every world of the space can
    still be drawn."""
    rng = random.Random(seed)
    seen: set[Spec] = set()
    attempts = 0
    while len(seen) < limit and attempts < limit * 20:
        attempts += 1
        n = rng.randint(1, bound)
        q = rng.randint(1, min(bound, MAX_QUEUES))
        j = rng.randint(1, bound) if rng.random() < 0.2 else bound
        nodes = tuple(rng.choice(NODE_CPUS) if rng.random() < 0.3 else min(NODE_CPUS) for _ in range(n))
        queues = ((rng.choice(QUEUE_PROFILES), False),
                  *((rng.choice(QUEUE_PROFILES), rng.random() < 0.3) for _ in range(q - 1)))
        jobs = []
        for i in range(j):
            state = rng.choice((RUNNING, INQUEUE, PENDING)) if rng.random() < 0.3 else \
                (RUNNING if i < max(1, j - 1) else INQUEUE)
            jobs.append(JobSpec(rng.randrange(q), rng.random() < 0.5, rng.randrange(len(SHAPES)), state,
                                rng.randrange(n)))
        spec = Spec(nodes, queues, tuple(jobs))
        if spec not in seen:
            seen.add(spec)
            yield spec


# Building a snapshot -----------------------------------------------------------------------------------

def build(spec: Spec) -> snap.ClusterSnapshot:
    nodes, queues = _nodes(spec.nodes), _queues(spec.queues)
    free = {n.name: n.allocatable for n in nodes}
    podgroups, pods = [], []
    for i, job in enumerate(spec.jobs):
        tasks, min_member, cpu, mixed = SHAPES[job.shape]
        cls = PRIORITY_CLASSES[1 if job.high else 0]
        name = f"j{i}"
        placed = 0
        for t in range(tasks):
            request = _res(cpu, GIB, 1)
            node = ""
            if job.state == RUNNING and job.placed is not None:
                k = job.placed[t] if t < len(job.placed) else -1
                if k >= 0 and request.le(free[nodes[k].name]):
                    node = nodes[k].name
                    free[node] = free[node] - request
            elif job.state == RUNNING:
                for k in range(len(nodes)):
                    candidate = nodes[(job.node + k) % len(nodes)].name
                    if request.le(free[candidate]):
                        node = candidate
                        free[candidate] = free[candidate] - request
                        break
            placed += bool(node)
            pods.append(snap.Pod(
                namespace=NAMESPACE, name=f"{name}-t-{t}", uid=f"{NAMESPACE}/{name}-t-{t}", resreq=request,
                status=snap.TaskStatus.RUNNING if node else snap.TaskStatus.PENDING, node_name=node,
                phase="Running" if node else "Pending",
                priority=1000 if mixed and t == tasks - 1 else cls.value, priority_class_name=cls.name,
                scheduler_name="volcano", group=name, annotations={snap.GROUP_NAME_ANNOTATION: name},
                creation=EPOCH + 200 + 10 * i + t))
        phase = {RUNNING: snap.PodGroupPhase.RUNNING if placed else snap.PodGroupPhase.INQUEUE,
                 INQUEUE: snap.PodGroupPhase.INQUEUE, PENDING: snap.PodGroupPhase.PENDING}[job.state]
        podgroups.append(snap.PodGroup(
            namespace=NAMESPACE, name=name, uid=f"{NAMESPACE}/{name}", queue=f"q{job.queue}", min_member=min_member,
            min_resources=_res(cpu * min_member, GIB * min_member, 0) if job.state == PENDING else None,
            priority_class_name=cls.name, phase=phase, creation=EPOCH + 100 + i))
    return snap.ClusterSnapshot(nodes=nodes, pods=tuple(pods), podgroups=tuple(podgroups), queues=queues,
                                priority_classes=PRIORITY_CLASSES, namespaces=(NAMESPACE,))


@lru_cache(maxsize=64)
def _nodes(cpus: tuple[int, ...]) -> tuple[snap.Node, ...]:
    """The nodes of a world (immutable, so worlds with the same nodes share them)."""
    return tuple(snap.Node(name=f"n{i}", allocatable=_res(c * 1000, 4 * GIB, 4), capacity=_res(c * 1000, 4 * GIB, 4),
                           labels={"kubernetes.io/hostname": f"n{i}"}) for i, c in enumerate(cpus))


@lru_cache(maxsize=1024)
def _queues(profiles: tuple[tuple[str, bool], ...]) -> tuple[snap.Queue, ...]:
    queues = tuple(_queue(i, profile, under) for i, (profile, under) in enumerate(profiles))
    return (*queues, snap.Queue(name=snap.ROOT_QUEUE, weight=1, reclaimable=False),
            snap.Queue(name=snap.DEFAULT_QUEUE, weight=1, reclaimable=True))


def _res(cpu: int, memory: int, pods: int) -> Resources:
    return Resources({"cpu": cpu, "memory": memory, "pods": pods})


def _queue(i: int, profile: str, under: bool) -> snap.Queue:
    cpu1 = Resources({"cpu": 1000})
    return snap.Queue(
        name=f"q{i}", weight=2 if profile == "weighted" else 1,
        capability=cpu1 if profile == "capped" else None,
        guarantee=cpu1 if profile == "guaranteed" else Resources(),
        reclaimable=profile != "unreclaimable", parent="q0" if under and i > 0 else "", creation=EPOCH + i)


# Shrinking --------------------------------------------------------------------------------------------

def shrink(spec: Spec, fails: Callable[[Spec], bool], *, max_steps: int = 200) -> Spec:
    """A smaller spec that still `fails`: drop jobs, nodes and queues, then simplify what is left."""
    steps = 0
    changed = True
    while changed and steps < max_steps:
        changed = False
        for candidate in _smaller(spec):
            steps += 1
            if fails(candidate):
                spec, changed = candidate, True
                break
            if steps >= max_steps:
                break
    return spec


def _smaller(spec: Spec) -> Iterator[Spec]:
    for i in range(len(spec.jobs)):
        if len(spec.jobs) > 1:
            yield replace(spec, jobs=spec.jobs[:i] + spec.jobs[i + 1:])
    for i in range(len(spec.nodes)):
        if len(spec.nodes) > 1:
            rest = len(spec.nodes) - 1
            jobs = tuple(replace(j, node=min(j.node if j.node < i else max(j.node - 1, 0), rest - 1),
                                 placed=_without_node(j.placed, i))
                         for j in spec.jobs)
            yield replace(spec, nodes=spec.nodes[:i] + spec.nodes[i + 1:], jobs=jobs)
    if len(spec.queues) > 1:
        last = len(spec.queues) - 1
        yield replace(spec, queues=spec.queues[:-1],
                      jobs=tuple(replace(j, queue=0) if j.queue == last else j for j in spec.jobs))
    for i, (profile, under) in enumerate(spec.queues):
        if profile != "plain":
            yield replace(spec, queues=spec.queues[:i] + (("plain", under),) + spec.queues[i + 1:])
        if under:
            yield replace(spec, queues=spec.queues[:i] + ((profile, False),) + spec.queues[i + 1:])
    for i, cpus in enumerate(spec.nodes):
        if cpus > min(NODE_CPUS):
            yield replace(spec, nodes=spec.nodes[:i] + (min(NODE_CPUS),) + spec.nodes[i + 1:])
    for i, job in enumerate(spec.jobs):
        if job.shape != 0:
            simpler = replace(job, shape=0, placed=job.placed[:1] if job.placed else job.placed)
            yield replace(spec, jobs=spec.jobs[:i] + (simpler,) + spec.jobs[i + 1:])


def _without_node(placed: tuple[int, ...] | None, i: int) -> tuple[int, ...] | None:
    """Explicit placements once node i is gone: its tasks pending, later nodes one index down."""
    if placed is None:
        return None
    return tuple(-1 if k == i else (k - 1 if k > i else k) for k in placed)
