"""The sorted task queue pops exactly what Go's heap pops, whenever the runtime chooses it."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vpolicy.engine.heap import PriorityQueue, SortedQueue
from vpolicy.engine.runtime import Runtime
from vpolicy.engine.state import SessionState
from vpolicy.harness.policy import from_conf
from vpolicy.load import conf as conf_loader
from vpolicy.load.cluster import load_cluster


def _drain(q) -> list:  # type: ignore[no-untyped-def]  # reason: either queue kind
    out = []
    while not q.empty():
        out.append(q.pop())
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6)), unique_by=lambda x: x[1], max_size=40),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6)), unique_by=lambda x: x[1], max_size=5))
def test_sorted_queue_pops_as_the_heap_for_a_total_order(items, pushed) -> None:  # type: ignore[no-untyped-def]
    def less(a: tuple[int, int], b: tuple[int, int]) -> bool:
        return (-a[0], a[1]) < (-b[0], b[1])  # higher first, then smaller id: never a tie

    pushed = [p for p in pushed if p[1] not in {i[1] for i in items}]
    heap, ordered = PriorityQueue(less, items), SortedQueue(less, items)
    for item in pushed:
        heap.push(item)
        ordered.push(item)
    assert _drain(ordered) == _drain(heap)


_CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 1, queue: default}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ns
  creationTimestamp: "2026-01-01T00:00:{sec:02d}Z"
  annotations: {{scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  priority: {prio}
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
""" for name, prio, sec in [("w-b-3", 5, 1), ("w-b-1", 5, 2), ("x", 9, 3), ("y", 0, 0), ("w-b-2", 5, 0), ("z", 9, 0)])


def test_default_conf_sorts_tasks_once_and_in_the_heap_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Volcano's default conf orders tasks by priority then name index, creation, uid: fixed values."""
    (tmp_path / "cluster.yaml").write_text(_CLUSTER)
    snapshot = load_cluster(tmp_path / "cluster.yaml")
    policy = from_conf(conf_loader.default_conf())
    rt = Runtime(policy.tiers, SessionState(snapshot))
    tasks = list(rt.state.jobs["ns/pg"].tasks)
    queue = rt.task_queue(tasks)
    assert isinstance(queue, SortedQueue)
    popped = [t.name for t in _drain(queue)]
    assert popped == [t.name for t in _drain(PriorityQueue(rt.task_before, tasks))]
    assert popped == ["z", "x", "w-b-1", "w-b-2", "w-b-3", "y"]
