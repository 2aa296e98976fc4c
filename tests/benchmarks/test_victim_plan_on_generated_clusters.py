"""optimize's preempt with its joint victim plan, on generated preemption clusters: every decision still
passes the independent validator, and the run optimize keeps never places fewer GPUs than Volcano's,
nor, placing the same GPU preemptors, evicts more GPU pods."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import generate as gen
from benchmarks.run import policy_for
from vpolicy.engine.session import run_session
from vpolicy.engine.validate import validate


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=1, max_value=100_000))
def test_planned_preemption_keeps_the_rules_and_never_does_worse(seed: int) -> None:
    generated = gen.generate(gen.SIZES["S"], "preemption", seed=seed)  # GPU preemptors on about half the seeds
    snapshot, policy = generated.snapshot, policy_for("preemption", optimize_budget="unlimited")
    pods = {p.key: p for p in snapshot.pods}
    documents = {mode: run_session(snapshot, policy, mode=mode).decisions.to_document()
                 for mode in ("volcano", "optimize")}
    assert list(validate(snapshot, documents["optimize"], policy=policy)) == []

    def preemptors(mode: str) -> set[str]:
        return {k for k in documents[mode]["pipelined"] if gen.gpus(pods[k].resreq)}  # type: ignore[attr-defined]  # reason: JSON

    def gpus(mode: str) -> int:
        placed = [*documents[mode]["binds"], *documents[mode]["pipelined"]]  # type: ignore[misc]  # reason: JSON
        return sum(gen.gpus(pods[k].resreq) for k in placed)

    def evicted_gpu_pods(mode: str) -> int:
        return sum(1 for e in documents[mode]["evictions"] if gen.gpus(pods[e["pod"]].resreq))  # type: ignore[attr-defined, index]  # reason: JSON

    assert gpus("optimize") >= gpus("volcano")
    if preemptors("optimize") == preemptors("volcano"):
        assert evicted_gpu_pods("optimize") <= evicted_gpu_pods("volcano")
