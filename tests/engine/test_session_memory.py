"""A long-running scheduler opens a session every second: what a session leaves behind must go."""
from __future__ import annotations

import gc

from benchmarks import generate as gen
from benchmarks.run import policy_for
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
