"""A long-running scheduler opens a session every second: what a session leaves behind must go."""
from __future__ import annotations

import gc

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine import runtime
from vpolicy.engine.session import run_session


def test_sessions_in_a_loop_leave_no_garbage_behind() -> None:
    """The session pauses the cyclic collector; its cycles (jobs and their tasks) must still be
    collected afterwards by the collector's own schedule, with no explicit collection."""
    snapshot = gen.generate(gen.Size("tiny", 10, 60), "steady", seed=1).snapshot
    policy = policy_for("steady")
    assert gc.isenabled()
    for _ in range(30):
        run_session(snapshot, policy)
    settled = len(gc.get_objects())
    for _ in range(150):
        run_session(snapshot, policy)
    assert len(gc.get_objects()) < settled * 1.5
    assert gc.isenabled()  # the caller's setting is back


def test_a_session_leaves_almost_no_cyclic_garbage() -> None:
    """With the collector paused for the session, a reference cycle made per task or per node would pile
    up until the session ends (optimize's victim search once held 190,000 objects that way on 300 nodes)."""
    snapshot = gen.generate(gen.Size("small", 60, 600), "preemption", seed=1).snapshot
    policy = policy_for("preemption")
    # Tables of policies earlier tests ran (runtime._TABLES keeps 32, the oldest dropped when a new one
    # comes) would be freed inside this session and counted as its garbage: a test that ran many
    # policies before this one (test_pod_relations' properties do) made it fail in the full run.
    runtime._TABLES.clear()
    for mode in ("volcano", "optimize"):
        gc.collect()
        gc.disable()
        try:
            result = run_session(snapshot, policy, mode=mode)
            garbage = gc.collect()
        finally:
            gc.enable()
        assert result.decisions.evictions  # the workload did preempt
        assert garbage < 2_000, (mode, garbage)
        del result  # its own cycles are the next collection's, not the next session's
