"""allocate's job queue and queue heap: ordered by keys computed at push when every order rule sorts by
expressions of its operand's own state, and then popping exactly what Go's heap comparing live values
pops under allocate's discipline (only the popped job, or queue, changes before it is pushed back)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import clusters
from vpolicy.engine import runtime
from vpolicy.engine.heap import KeyedQueue, PriorityQueue
from vpolicy.engine.state import SessionState
from vpolicy.harness import policy as policies
from vpolicy.harness import verify_worlds
from vpolicy.model.snapshot import TaskStatus

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT = policies.from_policy_file(ROOT / "policies" / "default.vpol")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_keyed_jobs_pop_as_gos_heap_comparing_live_values(snapshot, data) -> None:
    state = SessionState(snapshot)
    rt = runtime.Runtime(DEFAULT.tiers, state)
    keyed = rt.job_queue()
    assert isinstance(keyed, KeyedQueue)  # the default policy's job orders are all of that form
    live: PriorityQueue = PriorityQueue(rt.job_before)
    for job in state.jobs.values():
        keyed.push(job)
        live.push(job)
    while not live.empty():
        job = live.pop()
        assert keyed.pop() is job
        pending = [t for t in job.tasks if t.status is TaskStatus.PENDING]
        if pending and data.draw(st.booleans(), label="push back"):
            # a turn: some of its tasks placed (share and readiness change), then back into the queue
            placed = data.draw(st.integers(1, len(pending)), label="placed")
            node = next(iter(state.nodes), None)  # no Ready node: the job's counters change all the same
            for task in pending[:placed]:
                state.set_status(task, TaskStatus.ALLOCATED, node)
            keyed.push(job)
            live.push(job)
    assert keyed.empty()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_keyed_queues_pop_as_gos_heap_comparing_live_values(snapshot, data) -> None:
    """proportion's queue order (priority first, then the smaller share of what the queue deserves),
    under allocate's discipline: a popped queue places some of its pending tasks, then goes back."""
    priorities = data.draw(st.lists(st.integers(0, 2), min_size=len(snapshot.queues),
                                    max_size=len(snapshot.queues)), label="queue priorities")
    snapshot = dataclasses.replace(snapshot, queues=tuple(
        dataclasses.replace(q, priority=p) for q, p in zip(snapshot.queues, priorities)))
    state = SessionState(snapshot)
    rt = runtime.Runtime(DEFAULT.tiers, state)
    keyed = rt.turn_queue_heap()
    assert isinstance(keyed, KeyedQueue)  # the default policy's queue order is of that form
    live: PriorityQueue = PriorityQueue(rt.queue_before)
    for queue in state.queues.values():
        if queue.jobs:  # allocate's heap holds the queues with work (proportion's shares cover those)
            keyed.push(queue)
            live.push(queue)
    while not live.empty():
        queue = live.pop()
        assert keyed.pop() is queue
        pending = [t for j in queue.jobs for t in j.tasks if t.status is TaskStatus.PENDING]
        if pending and data.draw(st.booleans(), label="push back"):
            placed = data.draw(st.integers(1, len(pending)), label="placed")
            node = next(iter(state.nodes), None)
            for task in pending[:placed]:  # its allocated, so its share, grows
                state.set_status(task, TaskStatus.ALLOCATED, node)
            keyed.push(queue)
            live.push(queue)
    assert keyed.empty()


def _queue_heap_kind(tmp_path: Path, rule: str) -> type:
    world = verify_worlds.build(verify_worlds.Spec((1,), (("plain", False),), ()))
    policy = _policy(tmp_path, rule)
    return type(runtime.Runtime(policy.tiers, SessionState(world)).turn_queue_heap())


def test_queue_orders_keyed_only_when_each_branch_sorts_by_the_expression_it_tests(tmp_path: Path) -> None:
    lexicographic = ("rule r: queue_order(l, r) = if l.priority != r.priority then compare(r.priority, l.priority) "
                     "else if l.weight != r.weight then compare(l.weight, r.weight) else compare(l.name, r.name)")
    assert _queue_heap_kind(tmp_path, lexicographic) is KeyedQueue
    # the branch compares something else than its test: not a lexicographic order of keys
    mismatched = ("rule r: queue_order(l, r) = if l.priority != r.priority then compare(r.weight, l.weight) "
                  "else compare(l.name, r.name)")
    assert _queue_heap_kind(tmp_path, mismatched) is PriorityQueue
    # a descendant's allocation changes in the descendant's turns, not the queue's own
    by_tree = "rule r: queue_order(l, r) = compare(share(l.tree_allocated, cluster.total), share(r.tree_allocated, cluster.total))"
    assert _queue_heap_kind(tmp_path, by_tree) is PriorityQueue
    by_own = "rule r: queue_order(l, r) = compare(share(l.allocated, cluster.total), share(r.allocated, cluster.total))"
    assert _queue_heap_kind(tmp_path, by_own) is KeyedQueue


def _policy(tmp_path: Path, rule: str) -> policies.CompiledPolicy:
    (tmp_path / "order.vpol").write_text(f'plugin order "test"\n\n{rule}\n', encoding="utf-8")
    (tmp_path / "p.vpol").write_text('policy p "test"\n\ntier {\n    use "order.vpol"\n}\n', encoding="utf-8")
    return policies.from_policy_file(tmp_path / "p.vpol")


def _queue_kind(policy: policies.CompiledPolicy, snapshot) -> type:
    return type(runtime.Runtime(policy.tiers, SessionState(snapshot)).job_queue())


def test_orders_that_read_more_than_the_job_compare_live_values(tmp_path: Path) -> None:
    world = verify_worlds.build(verify_worlds.Spec((1,), (("plain", False),), ()))
    # the queue's allocation changes with every job of the queue: a key computed at push would go stale
    by_queue = _policy(tmp_path, "rule r: job_order(l, r) = compare(share(l.queue.allocated, cluster.total), "
                                 "share(r.queue.allocated, cluster.total))")
    assert _queue_kind(by_queue, world) is PriorityQueue
    # not one expression compared: no key
    mixed = _policy(tmp_path, "rule r: job_order(l, r) = compare(l.priority, r.min_available)")
    assert _queue_kind(mixed, world) is PriorityQueue
    own = _policy(tmp_path, "let weight(j: job): int = j.priority * 2 + j.ready_count\n\n"
                            "rule r: job_order(l, r) = compare(weight(r), weight(l))")
    assert _queue_kind(own, world) is KeyedQueue


def test_a_descending_rule_on_text_orders_in_reverse(tmp_path: Path) -> None:
    """Keys that cannot be negated (strings) still sort descending."""
    world = verify_worlds.build(verify_worlds.Spec((1, 1), (("plain", False), ("weighted", False)),
                                                   (verify_worlds.JobSpec(0, False, 1, verify_worlds.INQUEUE),
                                                    verify_worlds.JobSpec(1, False, 1, verify_worlds.INQUEUE))))
    policy = _policy(tmp_path, "rule r: job_order(l, r) = compare(r.name, l.name)")
    rt = runtime.Runtime(policy.tiers, SessionState(world))
    keyed, live = rt.job_queue(), PriorityQueue(rt.job_before)
    assert isinstance(keyed, KeyedQueue)
    for job in rt.state.jobs.values():
        keyed.push(job)
        live.push(job)
    names = [keyed.pop().name for _ in range(len(keyed))]
    assert names == [live.pop().name for _ in range(len(live))]
    assert names == sorted(names, reverse=True)
