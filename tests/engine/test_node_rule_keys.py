"""What a node rule's cached answers are keyed by (`compile.lower.classify`, `placement.task_key`): a rule
reading annotations by a literal key is cached per task class and tells apart exactly the pods that differ
in the annotations it reads; a rule blind to its task (usage's score) keeps one answer per node for every
class, recomputed only where a node's tasks changed. Either way the decisions are those of asking the rule
afresh for every task and node."""
from __future__ import annotations

import textwrap
from pathlib import Path

from vpolicy.compile.lower import ANY_ANNOTATION, annotation_reads, compile_module
from vpolicy.engine import runtime
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.lang import load_module
from vpolicy.lang.parse import parse_text
from vpolicy.model.snapshot import ClusterSnapshot, Node, Pod
from tests.engine import build

ROOT = Path(__file__).resolve().parents[2]


def _policy(tmp_path: Path, body: str) -> CompiledPolicy:
    path = tmp_path / "p.vpol"
    path.write_text("plugin p\n" + textwrap.dedent(body).strip("\n") + "\n", encoding="utf-8")
    module = compile_module(parse_text(path.read_text(encoding="utf-8"), str(path)))
    return CompiledPolicy(("enqueue", "allocate", "backfill"), ((runtime.PluginInstance("p", module, {}),),))


def _rules(module_path: Path) -> dict[str, runtime.CompiledRule]:
    module = compile_module(load_module(str(module_path)))
    return {r.name: r for rules in module.rules.values() for r in rules}


DRAINED = """
rule batch_avoids_draining: predicate(task, node) =
    task.annotations["tier"] != "batch" or node.annotations["drain"] != "true"
"""


def _with_annotations(pod: Pod, annotations: dict[str, str]) -> Pod:
    from dataclasses import replace
    return replace(pod, annotations=annotations)


def _drain_cluster(first_batch: bool) -> ClusterSnapshot:
    """12 nodes, the first 6 annotated drain=true, each with room for one pod; 6 one-pod jobs of one
    spec, every other one tier=batch, each pod with its own group-name annotation (as every vcjob's)."""
    nodes = [Node(n.name, n.allocatable, annotations={"drain": "true"} if i < 6 else {})
             for i, n in enumerate(build.node(f"n{i:02d}", cpu=1000) for i in range(12))]
    pods, groups = [], []
    for j in range(6):
        batch = (j % 2 == 0) == first_batch
        annotations = {"scheduling.k8s.io/group-name": f"g{j}", **({"tier": "batch"} if batch else {})}
        pods.append(_with_annotations(build.pod(f"g{j}-0", f"g{j}"), annotations))
        groups.append(build.podgroup(f"g{j}"))
    return build.snapshot(nodes=nodes, pods=pods, podgroups=groups)


def test_pods_differing_only_in_a_read_annotation_get_their_own_answers(tmp_path: Path) -> None:
    policy = _policy(tmp_path, DRAINED)
    for first_batch in (True, False):  # whichever class asks first, the other is not handed its answers
        binds = run_session(_drain_cluster(first_batch), policy).decisions.binds
        assert len(binds) == 6
        for pod, node in binds.items():
            batch = (int(pod.split("/g")[1].split("-")[0]) % 2 == 0) == first_batch
            drained = int(node[1:]) < 6
            assert not (batch and drained), (pod, node)
        # the others are free to take the drained nodes, which come first
        assert sum(int(node[1:]) < 6 for node in binds.values()) == 3


def test_a_rule_reading_annotations_by_key_is_cached_per_class_and_keyed_by_those_keys(tmp_path: Path) -> None:
    rule = _rules(ROOT / "policies" / "volcano" / "usage.vpol")["offline_pods_avoid_evicting_nodes"]
    assert rule.depends == "static"
    assert {annotation_reads("volcano.sh/qos-level"), annotation_reads("volcano.sh/offline-job-evicting")} <= rule.reads
    assert ANY_ANNOTATION not in rule.reads
    (tmp_path / "q.vpol").write_text(
        'plugin q\nrule any_key: predicate(task, node) = task.annotations[node.labels["zone"]] != "off"\n', encoding="utf-8")
    whole = _rules(tmp_path / "q.vpol")["any_key"]
    assert ANY_ANNOTATION in whole.reads  # then every annotation of the task is part of its key


def test_usage_score_is_blind_to_its_task_and_its_predicates_are_not() -> None:
    rules = _rules(ROOT / "policies" / "volcano" / "usage.vpol")
    assert rules["less_loaded_first"].task_blind and rules["less_loaded_first"].depends == "node"
    assert not rules["offline_pods_avoid_evicting_nodes"].task_blind


FEWEST = """
rule fewest_pods_first: node_order(task, node) = 100 - 10 * len(list(t in node.tasks where t.resreq["cpu"] > 0))
"""
# the same score read afresh for every task and node: naming the task's priority makes it depend on "any"
FEWEST_ASKED_EACH_TIME = """
rule fewest_pods_first: node_order(task, node) =
    100 - 10 * len(list(t in node.tasks where t.resreq["cpu"] > 0)) + 0 * task.priority
"""


def _spread_cluster() -> ClusterSnapshot:
    """4 nodes of room for 4 pods; 8 jobs of one pod in 3 sizes (3 task classes), 2 pods placed already."""
    nodes = [build.node(f"n{i}", cpu=4000, memory=64 * build.GIB) for i in range(4)]
    groups = [build.podgroup(f"g{j}") for j in range(8)] + [build.podgroup("old")]
    pods = [build.pod(f"g{j}-0", f"g{j}", cpu=(500, 700, 900)[j % 3]) for j in range(8)]
    pods += [build.running("old-0", "old", "n0", cpu=500), build.running("old-1", "old", "n1", cpu=500)]
    return build.snapshot(nodes=nodes, pods=pods, podgroups=groups)


def test_a_task_blind_score_shared_by_every_class_spreads_as_one_asked_each_time(tmp_path: Path) -> None:
    shared = _policy(tmp_path, FEWEST)
    rule = shared.tiers[0][0].module.rules["node_order"][0]
    assert rule.task_blind and rule.depends == "node"
    binds = run_session(_spread_cluster(), shared).decisions.binds
    (tmp_path / "each").mkdir()
    fresh = _policy(tmp_path / "each", FEWEST_ASKED_EACH_TIME)
    assert fresh.tiers[0][0].module.rules["node_order"][0].depends == "any"
    assert binds == run_session(_spread_cluster(), fresh).decisions.binds
    per_node = {n: sum(1 for v in binds.values() if v == n) for n in ("n0", "n1", "n2", "n3")}
    # fewest first: each new pod goes where the fewest are, ties to the first node; n0 and n1 had one
    # each, so the 8 new ones even out at 2 per node (3, 3, 2, 2 in all)
    assert per_node == {"n0": 2, "n1": 2, "n2": 2, "n3": 2}
