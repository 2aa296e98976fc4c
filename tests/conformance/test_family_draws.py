"""The plugin families draw only what both Volcano versions decide alike (docs/conformance.md, version gaps).

Each family leaves out, on purpose, a shape where v1.10.0 (the oracle) and main (vpolicy) part ways; a
change to a generator that starts drawing such a shape would turn a version gap into reported
differences, or hide one. These tests hold each family to what its docstring promises, over many cases.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from conformance.generate import NODEGROUP, QUEUE_NAME, case

CASES = range(80)


def _kinds(family: str, index: int) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in case(family, 11, index).objects:
        out.setdefault(o["kind"], []).append(o)
    return out


def test_nodegroup_pods_carry_their_jobs_queue_and_nodegroup_comes_last() -> None:
    """v1.10.0 reads the queue from the pod's label and ends PredicateFn at nodegroup's Success answer."""
    drawn: Counter[str] = Counter()
    for i in CASES:
        objs = _kinds("nodegroup", i)
        queue_of = {g["metadata"]["name"]: g["spec"]["queue"] for g in objs["PodGroup"]}
        for pod in objs["Pod"]:
            group = pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            if not pod["spec"].get("nodeName"):
                assert pod["metadata"]["labels"][QUEUE_NAME] == queue_of[group]
        conf = case("nodegroup", 11, i).conf
        assert conf.rstrip().endswith("- name: nodegroup")
        drawn["labelled nodes"] += sum(NODEGROUP in n["metadata"]["labels"] for n in objs["Node"])
        drawn["queues with affinity"] += sum("affinity" in q["spec"] for q in objs["Queue"])
    assert drawn["labelled nodes"] and drawn["queues with affinity"]


def test_pdb_budgets_select_disjoint_pods() -> None:
    """Volcano spends a disruption of every budget selecting a victim, vpolicy of the first only."""
    budgets = 0
    for i in CASES:
        objs = _kinds("pdb", i)
        pdbs = [p for p in objs.get("PodDisruptionBudget", []) if p["metadata"]["namespace"] == "ns"]
        budgets += len(pdbs)
        for pod in objs["Pod"]:
            labels = pod["metadata"].get("labels", {})
            selecting = [p for p in pdbs if all(labels.get(k) == v
                                                for k, v in p["spec"]["selector"]["matchLabels"].items())]
            assert len(selecting) <= 1
        assert "  - name: pdb\n" in case("pdb", 11, i).conf
    assert budgets


def test_volumes_bind_on_every_node() -> None:
    """v1.10.0 checks volume binding only on the chosen node, main as a filter: no PV has node affinity
    and no unbound claim binds Immediately, so binding passes everywhere in both."""
    claims: Counter[str] = Counter()
    for i in CASES:
        objs = _kinds("volumes", i)
        classes = {c["metadata"]["name"]: c for c in objs.get("StorageClass", [])}
        assert all("nodeAffinity" not in pv["spec"] for pv in objs.get("PersistentVolume", []))
        for pvc in objs.get("PersistentVolumeClaim", []):
            if pvc["spec"].get("volumeName"):
                claims["bound"] += 1
            else:
                claims["waiting"] += 1
                assert classes[pvc["spec"]["storageClassName"]]["volumeBindingMode"] == "WaitForFirstConsumer"
    assert claims["bound"] and claims["waiting"]


def test_numaaware_draws_cpus_only() -> None:
    """main's GPU hints and podAllocations are newer than v1.10.0."""
    topologies = 0
    for i in CASES:
        for topo in _kinds("numaaware", i).get("Numatopology", []):
            topologies += 1
            assert set(topo["spec"]["numares"]) == {"cpu"}
            assert "gpuDetail" not in topo["spec"] and "podAllocations" not in topo["spec"]
    assert topologies


def test_imagelocality_draws_side_containers_with_and_without_requests() -> None:
    """kube-scheduler's resource scores default each container without requests (per container)."""
    sides: Counter[bool] = Counter()
    for i in CASES:
        for pod in _kinds("imagelocality", i)["Pod"]:
            for container in pod["spec"]["containers"][1:]:
                sides["requests" in container.get("resources", {})] += 1
    assert sides[True] and sides[False]


def test_extender_answers_depend_only_on_names() -> None:
    """Both engines must hear the same answer to the same question, whatever else their requests hold."""
    from conformance import extender_server

    volcano_like = {"task": {"Name": "pg0-t-0", "Resreq": {"MilliCPU": 250}}, "node": {"Name": "n1", "Idle": {}}}
    vpolicy_like = {"task": {"Name": "pg0-t-0", "UID": "x"}, "node": {"Name": "n1"}}
    for verb in ("predicate", "predicateFlaky"):
        assert extender_server.answer(verb, volcano_like) == extender_server.answer(verb, vpolicy_like)
    scores = extender_server.answer("prioritize", {"task": {"Name": "t"}, "nodes": [{"Name": "a"}, {"Name": "b"}]})
    assert scores[0] == 200 and set(scores[1]["nodeScore"]) == {"a", "b"}
    answers = Counter(extender_server.answer("predicateFlaky", {"task": {"Name": f"t{i}"}, "node": {"Name": "n"}})[0]
                      for i in range(200))
    assert answers[200] and answers[500]  # the flaky form does fail some calls


def test_extender_family_asks_flaky_prioritize_only_when_ignorable() -> None:
    """A failed prioritize call that is not ignorable leaves Volcano's allocate with a nil node (a panic)."""
    for i in CASES:
        conf = case("extender", 11, i).conf
        if "prioritizeFlaky" in conf:
            assert "extender.ignorable: true" in conf


def test_extender_refusals_are_unresolvable_where_the_conf_preempts() -> None:
    """v1.10.0's preempt pipelines onto a node a resolvable refusal fails (a listed version gap)."""
    from conformance import extender_server

    preempting = 0
    for i in CASES:
        conf = case("extender", 11, i).conf
        if "preempt" in conf.split("tiers")[0] and "predicateVerb" in conf:
            preempting += 1
            assert 'extender.predicateVerb: "predicateUnresolvable"' in conf
    assert preempting
    codes = {extender_server.answer("predicateUnresolvable", {"task": {"Name": f"t{i}"}, "node": {"Name": "n"}})[1]
             .get("code") for i in range(300)}
    assert codes == {0, 3}
