"""The oracle's tie run (`ties="first"`, conformance/oracle/ties.go): Volcano's choice among equally scored
nodes made the way vpolicy makes it, and never a choice Volcano could not make."""
from __future__ import annotations

import random

from conformance.engines import Oracle
from conformance.generate import Builder, Case, conf_text

NO_SCORES = conf_text("enqueue, allocate", [["gang"], ["predicates"]])  # every node scores 0
LEAST_REQUESTED = conf_text("enqueue, allocate", [["gang"], ["predicates", "nodeorder"]])


def _case(sizes: list[int], conf: str) -> Case:
    """One pending pod and nodes of the given cpu sizes (so none is interchangeable with another), in
    that order in the dump; the first node runs a pod of its own."""
    b = Builder(random.Random(0))
    for cpu in sizes:
        b.node(cpu, 8192)
    b.queue("q0")
    busy = b.podgroup("q0", 1, phase="Running")
    b.pod(busy, 1000, 1024, node="n0", phase="Running")
    pg = b.podgroup("q0", 1, phase="Inqueue")
    b.pod(pg, 500, 512)
    return Case("ties", 0, 0, b.objects(), conf)


def _node_of(oracle: Oracle, c: Case, ties: str) -> str:
    node: str = oracle.run(c.cluster_json(), c.conf, ties=ties)["binds"]["ns/pg1-t-0"]
    return node


def test_equal_scores_go_to_the_node_first_in_the_dump(oracle: Oracle) -> None:
    c = _case([4000, 6000, 8000], NO_SCORES)
    assert _node_of(oracle, c, "first") == "n0"
    nodes = [o for o in c.objects if o["kind"] == "Node"]
    others = [o for o in c.objects if o["kind"] != "Node"]
    reordered = Case(c.family, c.seed, c.index, [nodes[1], nodes[2], nodes[0], *others], c.conf)
    assert _node_of(oracle, reordered, "first") == "n1"


def test_the_tie_run_is_one_of_volcanos_own_outcomes(oracle: Oracle) -> None:
    c = _case([4000, 6000, 8000], NO_SCORES)
    drawn = {_node_of(oracle, c, "random") for _ in range(30)}
    assert len(drawn) > 1, "the nodes should tie: Volcano draws among them"
    assert _node_of(oracle, c, "first") in drawn


def test_a_better_score_wins_over_dump_order(oracle: Oracle) -> None:
    """least-requested prefers the empty 8-cpu node n2 to the busy n0: the tie run changes no such choice."""
    c = _case([4000, 6000, 8000], LEAST_REQUESTED)
    assert _node_of(oracle, c, "random") == "n2"
    assert _node_of(oracle, c, "first") == "n2"
