"""The PodScheduled=False condition the live side writes for each pod left unbound (the document's
`pod_conditions`): Volcano's reason and the pod's own message, the same whatever the solver had time for."""
from __future__ import annotations

from tests.engine.build import node, pod, podgroup, snapshot
from vpolicy.engine.session import run_session
from vpolicy.harness.policy import from_conf
from vpolicy.load.conf import default_conf, parse_conf_text

# Two nodes of one pod each; a gang of three cannot fit, which the solver can prove after the actions.
GANG_TOO_BIG = snapshot(
    nodes=[node("n0", pods=1), node("n1", pods=1)],
    podgroups=[podgroup("pg", min_member=3)],
    pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), pod("pg-2", "pg")],
)


def test_a_solver_note_goes_into_the_reasons_but_not_into_the_pod_condition() -> None:
    policy = from_conf(default_conf())
    with_solver = run_session(GANG_TOO_BIG, policy).decisions
    without = run_session(GANG_TOO_BIG, policy, solver_budget=0).decisions
    key = "ns/pg-2"
    assert len(with_solver.unschedulable[key]) == 2 and "solver" in with_solver.unschedulable[key][1]
    assert without.unschedulable[key] == with_solver.unschedulable[key][:1]
    # a message that changed with the solver's luck would be patched onto the pod again next session
    assert with_solver.pod_conditions == without.pod_conditions
    assert with_solver.pod_conditions[key]["message"] == with_solver.unschedulable[key][0]


# One 2-cpu node; a gang of three 1-cpu pods: allocate places two, the third fits nowhere, and the job's
# statement is discarded. No queue shares: proportion would refuse the third pod before any node did.
NO_QUEUE_SHARES = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: nodeorder
"""
GANG_PLACED_THEN_UNDONE = snapshot(
    nodes=[node("n0", cpu=2000)],
    podgroups=[podgroup("pg", min_member=3)],
    pods=[pod("pg-0", "pg"), pod("pg-1", "pg"), pod("pg-2", "pg")],
)


def test_tasks_placed_then_undone_with_their_gang_read_as_schedulable() -> None:
    """Volcano's Statement.Discard keeps each task's last transaction, and TaskSchedulingReason reads it:
    the two pods allocate placed are Schedulable (a cluster autoscaler adds nothing for them), the one
    that fit nowhere is Unschedulable, and the PodGroup's histogram says the same."""
    decisions = run_session(GANG_PLACED_THEN_UNDONE, from_conf(parse_conf_text(NO_QUEUE_SHARES, file="<t>")),
                            solver_budget=0).decisions
    reasons = {key: c["reason"] for key, c in decisions.pod_conditions.items()}
    assert sorted(reasons.values()) == ["Schedulable", "Schedulable", "Unschedulable"]
    placed = [key for key, reason in reasons.items() if reason == "Schedulable"]
    assert all(decisions.pod_conditions[k]["message"] == f"Pod {k} can possibly be assigned to n0, once "
               "minAvailable is satisfied" for k in placed)
    (condition,) = [c for c in decisions.podgroups["ns/pg"].conditions if c["type"] == "Unschedulable"]
    assert "Pending: 1 Unschedulable, 2 Schedulable" in condition["message"]  # Volcano sorts the strings
