"""optimize mode's joint domain plan: where Volcano's one-gang-at-a-time choice strands a leaf, planning
every pending gang together places them all, within their tier, with Volcano's same rules."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import topology as workload
from vpolicy.engine import domain_plan, validate
from vpolicy.engine.session import run_session
from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod, PodGroup, PodGroupPhase, Queue, TaskStatus

GIB = 1 << 30
GPU = "nvidia.com/gpu"


def _node(name: str) -> Node:
    return Node(name, Resources({"cpu": 128_000, "memory": 1024 * GIB, "pods": 110, GPU: 8000}))


def _pod(name: str, group: str, *, gpus: int = 8, cpu: int = 64_000, node: str = "") -> Pod:
    request = Resources({"cpu": cpu, "memory": 64 * GIB, "pods": 1, **({GPU: gpus * 1000} if gpus else {})})
    return Pod("ns", name, name, request, TaskStatus.RUNNING if node else TaskStatus.PENDING, node_name=node,
               phase="Running" if node else "Pending", group=group)


def _leaf(name: str, nodes: list[str]) -> hn.HyperNode:
    return hn.HyperNode(name, 1, tuple(hn.Member("Node", hn.MemberSelector(exact=n)) for n in nodes))


def test_planning_both_gangs_places_what_greedy_strands() -> None:
    """Leaf small: 2 free GPU nodes. Leaf big: 4 GPU nodes, each running a 60-cpu CPU job, so by cpu
    it looks fuller. The 16-GPU gang comes first: Volcano's HyperNode binpack (cpu and memory) puts it
    in big, and the 32-GPU gang then fits nowhere. The plan puts the 32-GPU gang in big and the
    16-GPU gang in small."""
    small, big = ["s0", "s1"], ["b0", "b1", "b2", "b3"]
    busy = [_pod(f"cpu-{n}", f"cpu-{n}", gpus=0, cpu=60_000, node=n) for n in big]
    groups = [PodGroup("ns", f"cpu-{n}", f"cpu-{n}", queue="q", phase=PodGroupPhase.RUNNING) for n in big]
    groups += [PodGroup("ns", g, g, queue="q", min_member=k, phase=PodGroupPhase.INQUEUE, creation=float(i),
                        network_topology=hn.NetworkTopology("hard", 1))
               for i, (g, k) in enumerate((("first-16", 2), ("then-32", 4)))]
    pending = [_pod(f"first-16-{i}", "first-16") for i in range(2)] + [_pod(f"then-32-{i}", "then-32") for i in range(4)]
    snapshot = ClusterSnapshot(nodes=tuple(_node(n) for n in (*small, *big)), pods=(*busy, *pending),
                               podgroups=tuple(groups), queues=(Queue("q"), Queue("root"), Queue("default")),
                               namespaces=("ns",),
                               hypernodes=(_leaf("small", small), _leaf("big", big),
                                           hn.HyperNode("spine", 2, (hn.Member("HyperNode", hn.MemberSelector(exact="small")),
                                                                     hn.Member("HyperNode", hn.MemberSelector(exact="big"))))))
    policy = workload.policy()
    placed: dict[str, set[str]] = {}
    for mode in workload.MODES:
        document = run_session(snapshot, policy, mode=mode).decisions.to_document()
        assert validate.validate(snapshot, document, policy=policy) == []
        binds: dict[str, str] = document["binds"]  # type: ignore[assignment]  # reason: the document's JSON shape
        placed[mode] = {k.split("/")[1].rsplit("-", 1)[0] for k in binds}
    assert placed == {"volcano": {"first-16"}, "optimize": {"first-16", "then-32"}}


def _best_fit(free: list[int], pods: list[int]) -> list[int] | None:
    """Best fit by its definition: each pod to the node with the fewest free GPUs that holds it, the
    first of equals."""
    left = list(free)
    chosen = []
    for pod in pods:
        fitting = [i for i, f in enumerate(left) if f >= pod]
        if not fitting:
            return None
        i = min(fitting, key=lambda j: left[j])
        left[i] -= pod
        chosen.append(i)
    return chosen


@given(free=st.lists(st.integers(min_value=0, max_value=16), max_size=12), pod=st.integers(min_value=1, max_value=8),
       count=st.integers(min_value=1, max_value=20))
def test_alike_pods_take_the_nodes_best_fit_gives_them(free: list[int], pod: int, count: int) -> None:
    rows = np.arange(100, 100 + len(free))
    chosen = domain_plan._fit_alike(rows, np.array(free, dtype=np.int64), pod, count)
    expected = _best_fit(free, [pod] * count)
    assert chosen == (None if expected is None else [100 + i for i in expected])
