"""optimize mode skips the dry run of a gang in a domain whose free totals cannot hold it
(`allocate_topology._may_hold`): the decisions are those of trying every domain, and a gang too large
for every domain its tier allows is never dry-run at all (the benchmark's M sessions spent most of
their time there)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import topology as workload
from vpolicy.engine.actions import allocate_topology
from vpolicy.engine.session import run_session
from vpolicy.model import hypernodes as hn
from vpolicy.model.resources import Resources
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod, PodGroup, PodGroupPhase, Queue, TaskStatus

GIB = 1 << 30
GPU = "nvidia.com/gpu"
POLICY = workload.policy()


def _pod(name: str, group: str, gpus: int, *, node: str = "") -> Pod:
    request = Resources({"cpu": 1000 * gpus, "memory": GIB * gpus, "pods": 1, GPU: gpus * 1000})
    return Pod("ns", name, name, request, TaskStatus.RUNNING if node else TaskStatus.PENDING, node_name=node,
               phase="Running" if node else "Pending", group=group)


def _cluster(leaves: list[list[int]], gangs: list[tuple[int, int, str, int]]) -> ClusterSnapshot:
    """Leaves of 8-GPU nodes (each number: the GPUs a running job uses on that node) under two spines
    and a root; gangs of (pods, GPUs per pod, mode, highest tier)."""
    nodes, pods, groups, hypernodes = [], [], [], []
    for i, used in enumerate(leaves):
        names = [f"l{i}n{j}" for j in range(len(used))]
        nodes += [Node(n, Resources({"cpu": 64_000, "memory": 64 * GIB, "pods": 110, GPU: 8000})) for n in names]
        for name, gpus in zip(names, used):
            if gpus:
                groups.append(PodGroup("ns", f"run-{name}", f"run-{name}", queue="q", phase=PodGroupPhase.RUNNING))
                pods.append(_pod(f"run-{name}", f"run-{name}", gpus, node=name))
        hypernodes.append(hn.HyperNode(f"leaf{i}", 1, tuple(hn.Member("Node", hn.MemberSelector(exact=n))
                                                             for n in names)))
    spines = [[f"leaf{i}" for i in range(len(leaves)) if i % 2 == s] for s in (0, 1)]
    spines = [s for s in spines if s]
    for s, members in enumerate(spines):
        hypernodes.append(hn.HyperNode(f"spine{s}", 2, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=m))
                                                              for m in members)))
    hypernodes.append(hn.HyperNode("root", 3, tuple(hn.Member("HyperNode", hn.MemberSelector(exact=f"spine{s}"))
                                                    for s in range(len(spines)))))
    for g, (count, gpus, mode, tier) in enumerate(gangs):
        key = f"g{g}"
        groups.append(PodGroup("ns", key, key, queue="q", min_member=count, phase=PodGroupPhase.INQUEUE,
                               creation=float(g), network_topology=hn.NetworkTopology(mode, tier)))  # type: ignore[arg-type]  # reason: drawn from the literal's values
        pods += [_pod(f"{key}-{j}", key, gpus) for j in range(count)]
    return ClusterSnapshot(nodes=tuple(nodes), pods=tuple(pods), podgroups=tuple(groups),
                           queues=(Queue("q"), Queue("root"), Queue("default")), namespaces=("ns",),
                           hypernodes=tuple(hypernodes))


@contextmanager
def _counting_dry_runs() -> Iterator[list[tuple[str, str]]]:
    """Every dry run of a gang in a domain, as (job key, domain)."""
    seen: list[tuple[str, str]] = []
    real = allocate_topology._trial

    def counted(ctx: Any, job: Any, pending: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        seen.append((job.key, name))
        return real(ctx, job, pending, name, *args, **kwargs)

    with mock.patch.object(allocate_topology, "_trial", counted):
        yield seen


def _placed(snapshot: ClusterSnapshot, mode: str) -> tuple[dict[str, str], dict[str, str]]:
    document = run_session(snapshot, POLICY, mode=mode).decisions.to_document()
    return document["binds"], document["pipelined"]  # type: ignore[return-value]  # reason: the document's JSON shape


def test_a_gang_larger_than_every_allowed_leaf_gets_no_dry_run_in_optimize_mode() -> None:
    """Two leaves with 16 and 12 free GPUs: the 24-GPU hard tier-1 gang fits neither, so optimize
    never dry-runs it (Volcano mode does, in the leaf with a node that holds a pod); the 16-GPU gang
    still goes to the leaf that holds it, and the big gang's reason names the shortfall."""
    snapshot = _cluster([[0, 0, 8, 8], [4, 4, 0, 8]], [(3, 8, "hard", 1), (2, 8, "hard", 1)])
    with _counting_dry_runs() as runs:
        document = run_session(snapshot, POLICY, mode="optimize").decisions.to_document()
    assert not [name for job, name in runs if job == "ns/g0"]
    binds: dict[str, str] = document["binds"]  # type: ignore[assignment]  # reason: the document's JSON shape
    assert {k.split("/")[1] for k in binds} == {"g1-0", "g1-1"}
    reason = document["podgroups"]["ns/g0"]["conditions"][0]["message"]  # type: ignore[index]  # reason: JSON shape
    assert "needs 24 nvidia.com/gpu under one tier-1 HyperNode" in reason
    with _counting_dry_runs() as runs:
        run_session(snapshot, POLICY, mode="volcano")
    assert [name for job, name in runs if job == "ns/g0"]


_leaf_usage = st.lists(st.sampled_from([0, 0, 2, 4, 6, 8]), min_size=1, max_size=4)
_gang = st.tuples(st.integers(1, 5), st.sampled_from([2, 4, 8]), st.sampled_from(["hard", "soft"]),
                  st.sampled_from([1, 1, 2]))


@settings(max_examples=40, deadline=None)
@given(leaves=st.lists(_leaf_usage, min_size=1, max_size=4), gangs=st.lists(_gang, min_size=1, max_size=6))
def test_pruned_domains_are_ones_no_dry_run_could_use(leaves: list[list[int]],
                                                     gangs: list[tuple[int, int, str, int]]) -> None:
    """optimize mode with the prune binds and pipelines exactly what it does dry-running every domain."""
    snapshot = _cluster(leaves, gangs)
    pruned = _placed(snapshot, "optimize")
    with mock.patch.object(allocate_topology, "_may_hold", lambda *args: True):
        every = _placed(snapshot, "optimize")
    assert pruned == every
