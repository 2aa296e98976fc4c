"""Every mistake in a dump is one diagnostic with its code, its exact position and a help line."""
from __future__ import annotations

import pytest

from tests.load.conftest import WriteDump, diagnostics_of, load

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: 500m, memory: 1Gi}
"""


@pytest.mark.parametrize("text, code, line, col, message", [
    pytest.param(POD.replace("500m", "1.5x"), "load.bad-quantity", 10, 23,
                 "spec.containers[0].resources.requests.cpu: '1.5x' is not a quantity: unknown suffix 'x'",
                 id="bad-quantity"),
    pytest.param(POD.replace("1Gi", "1gi"), "load.bad-quantity", 10, 37,
                 "spec.containers[0].resources.requests.memory: '1gi' is not a quantity: unknown suffix 'gi' "
                 "(did you mean 'Gi'?)", id="lowercase-suffix"),
    pytest.param(POD.replace("500m", "-1"), "load.bad-quantity", 10, 23,
                 "spec.containers[0].resources.requests.cpu: must not be negative, got '-1'", id="negative-quantity"),
    pytest.param(POD.replace("500m", "true"), "load.bad-quantity", 10, 23,
                 "spec.containers[0].resources.requests.cpu: expected a quantity, got the boolean true",
                 id="boolean-quantity"),
    pytest.param(POD.replace("  name: p\n", ""), "load.missing-field", 3, 1, "Pod is missing metadata.name",
                 id="missing-name"),
    pytest.param(POD.replace("  name: p\n", '  name: ""\n'), "load.missing-field", 3, 1,
                 "Pod is missing metadata.name", id="empty-name"),
    pytest.param(POD.replace("kind: Pod\n", ""), "load.missing-field", 1, 1, "object is missing kind",
                 id="missing-kind"),
    pytest.param(POD.replace("apiVersion: v1\n", ""), "load.missing-field", 1, 1, "object is missing apiVersion",
                 id="missing-api-version"),
    pytest.param("apiVersion: v1\nkind: Node\nspec: {}\n", "load.missing-field", 2, 1, "Node is missing metadata",
                 id="missing-metadata"),
    pytest.param(POD.replace("name: p", "name: 42"), "load.wrong-type", 4, 9,
                 "metadata.name: expected a string, got the number 42", id="number-as-name"),
    pytest.param(POD.replace("  namespace: ns\n", "  labels: [a, b]\n"), "load.wrong-type", 5, 11,
                 "metadata.labels: expected a mapping, got a list", id="labels-as-list"),
    pytest.param(POD.replace("  namespace: ns\n", "  labels: {gpu: true}\n"), "load.wrong-type", 5, 17,
                 "metadata.labels.gpu: expected a string, got the boolean true", id="unquoted-label-value"),
    pytest.param(POD + "  priority: '5'\n", "load.wrong-type", 11, 13,
                 'spec.priority: expected an integer, got the string "5"', id="quoted-integer"),
    pytest.param(POD.replace("  - name: c\n", "  - c\n").replace("    resources:\n      requests: "
                                                                  "{cpu: 500m, memory: 1Gi}\n", ""),
                 "load.wrong-type", 8, 5, 'spec.containers[0]: expected a mapping, got the string "c"',
                 id="container-not-a-mapping"),
    pytest.param("- apiVersion: v1\n  kind: Pod\n", "load.wrong-type", 1, 1,
                 "document 1: expected a Kubernetes object (a mapping), got a list", id="document-is-a-list"),
    pytest.param("---\njust text\n", "load.wrong-type", 2, 1,
                 "document 1: expected a Kubernetes object (a mapping), got a scalar", id="document-is-a-scalar"),
    pytest.param(POD + "status: {phase: Runing}\n", "load.bad-value", 11, 17,
                 'status.phase: "Runing" is not one of Pending, Running, Succeeded, Failed, Unknown',
                 id="misspelt-phase"),
    pytest.param(POD.replace("  namespace: ns\n", "  creationTimestamp: yesterday\n"), "load.bad-value", 5, 22,
                 'metadata.creationTimestamp: the string "yesterday" is not an RFC 3339 time', id="bad-timestamp"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints:\n  - {key: k}\n",
                 "load.missing-field", 6, 5, "Node is missing spec.taints[0].effect", id="taint-without-effect"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec:\n  taints:\n  - {key: k, effect: NoShedule}\n",
                 "load.bad-value", 6, 22,
                 'spec.taints[0].effect: "NoShedule" is not one of NoSchedule, PreferNoSchedule, NoExecute',
                 id="misspelt-taint-effect"),
    pytest.param(POD + "  tolerations: [{key: k, operator: Exists, value: v}]\n", "load.bad-value", 11, 51,
                 'spec.tolerations[0].value: must be empty when operator is Exists, got "v"',
                 id="exists-toleration-with-value"),
    pytest.param(POD + "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                       "{nodeSelectorTerms: [{matchExpressions: [{key: z, operator: In}]}]}}}\n",
                 "load.bad-value", 11, 137,
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                 ".matchExpressions[0].operator: In needs at least one value", id="in-without-values"),
    pytest.param("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n",
                 "load.missing-field", 2, 1, "PriorityClass is missing value", id="priority-class-without-value"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
                 "spec: {minMember: -1}\n", "load.bad-value", 4, 19, "spec.minMember: must be at least 0, got -1",
                 id="negative-min-member"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                 "spec: {reclaimable: 'no'}\n", "load.wrong-type", 4, 21,
                 'spec.reclaimable: expected a boolean (true or false), got the string "no"', id="quoted-boolean"),
    pytest.param("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
                 "  - {name: w, replicas: 2, minAvailable: 3, template: {spec: {containers: []}}}\n",
                 "load.bad-value", 6, 42, "spec.tasks[0].minAvailable: 3 is more than the task's 2 replicas",
                 id="task-min-available-above-replicas"),
    pytest.param("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {queue: q}\n",
                 "load.missing-field", 4, 1, "Job is missing spec.tasks", id="job-without-tasks"),
    pytest.param(POD + "---\n" + POD, "load.duplicate-object", 15, 9, "Pod ns/p is defined twice",
                 id="same-pod-twice"),
    pytest.param("kind: Pod\napiVersion: v1\nmetadata:\n  name: a\n  name: b\n", "load.duplicate-key", 5, 3,
                 'duplicate key "name"', id="duplicate-key"),
    pytest.param("apiVersion: v1\nkind: Pod\nmetadata:\n\tname: p\n", "load.yaml-syntax", 4, 1,
                 "invalid YAML: found character '\\t' that cannot start any token", id="tab-indentation"),
    pytest.param(POD.replace("500m", "1e400"), "load.bad-quantity", 10, 23,
                 "spec.containers[0].resources.requests.cpu: '1e400' is too large: at most 9223372036854775807m "
                 "(2^63-1 thousandths)", id="quantity-beyond-a-float"),
    pytest.param(POD.replace("500m", "9223372036854775808m"), "load.bad-quantity", 10, 23,
                 "spec.containers[0].resources.requests.cpu: '9223372036854775808m' is too large: at most "
                 "9223372036854775807m (2^63-1 thousandths)", id="cpu-just-above-the-limit"),
    pytest.param(POD.replace("1Gi", "100Ei"), "load.bad-quantity", 10, 37,
                 "spec.containers[0].resources.requests.memory: '100Ei' is too large: at most 9223372036854775807 "
                 "(2^63-1)", id="memory-above-the-limit"),
    pytest.param(POD.replace("  namespace: ns\n", "  labels: {1: 2}\n"), "load.wrong-type", 5, 15,
                 "metadata.labels.1: expected a string, got the number 2", id="label-with-a-number-key-and-value"),
    pytest.param(POD.replace("memory: 1Gi}", "memory: 1Gi, 1: 2}"), "load.wrong-type", 10, 42,
                 "spec.containers[0].resources.requests.1: a key must be a name, not the number 1",
                 id="resource-named-by-a-number"),
    pytest.param("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
                 "  - {name: w, replicas: 1000000000, template: {spec: {containers: []}}}\n",
                 "load.bad-value", 6, 25, "spec.tasks[0].replicas: must be at most 100000, got 1000000000",
                 id="task-with-a-billion-replicas"),
    pytest.param("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
                 "  - {name: a, replicas: 60000, template: {spec: {containers: []}}}\n"
                 "  - {name: b, replicas: 60000, template: {spec: {containers: []}}}\n",
                 "load.bad-value", 6, 3, "spec.tasks: the tasks' replicas add up to 120000, more than 100000",
                 id="tasks-together-above-the-limit"),
])
def test_one_bad_input_gives_one_located_diagnostic(
        write_dump: WriteDump, text: str, code: str, line: int, col: int, message: str) -> None:
    (diagnostic,) = diagnostics_of(write_dump(text))
    assert diagnostic.span is not None
    assert (diagnostic.code, diagnostic.span.file, diagnostic.span.line, diagnostic.span.col) == (
        code, "cluster.yaml", line, col)
    assert diagnostic.message == message
    assert diagnostic.help


def test_the_largest_quantity_kubernetes_holds_is_accepted(write_dump: WriteDump) -> None:
    (pod,) = load(write_dump(POD.replace("500m", "9223372036854775807m").replace("1Gi", "9223372036854775807"))).pods
    assert (pod.resreq["cpu"], pod.resreq["memory"]) == (2**63 - 1, 2**63 - 1)


def test_a_job_of_the_largest_size_is_accepted(write_dump: WriteDump) -> None:
    snapshot = load(write_dump("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                               "  tasks:\n  - {name: w, replicas: 100000, template: {spec: {containers: []}}}\n"))
    assert len(snapshot.deferred_pods) == 100_000


def test_a_bad_quantity_renders_with_snippet_and_help(write_dump: WriteDump) -> None:
    (diagnostic,) = diagnostics_of(write_dump(POD.replace("500m", "1.5x")))
    assert diagnostic.render() == (
        "cluster.yaml:10:23: error[load.bad-quantity]: spec.containers[0].resources.requests.cpu: "
        "'1.5x' is not a quantity: unknown suffix 'x'\n"
        "   10 |       requests: {cpu: 1.5x, memory: 1Gi}\n"
        "      |                       ^^^^\n"
        "   help: quantities look like 500m, 2, 1.5Gi, 1e3")


def test_a_misspelt_phase_suggests_the_right_one(write_dump: WriteDump) -> None:
    (diagnostic,) = diagnostics_of(write_dump(POD + "status: {phase: Runing}\n"))
    assert diagnostic.help == "did you mean 'Running'?"


def test_a_duplicate_object_points_back_at_the_first(write_dump: WriteDump) -> None:
    (diagnostic,) = diagnostics_of(write_dump(POD), write_dump(POD, "again.yaml"))
    assert str(diagnostic.span) == "again.yaml:4:9"
    assert [(str(span), note) for span, note in diagnostic.related] == [("cluster.yaml:4:9", "first here")]


def test_every_error_in_every_file_is_reported_at_once_sorted_by_position(write_dump: WriteDump) -> None:
    first = write_dump(POD.replace("500m", "lots").replace("1Gi", "much") + "status: {phase: Done}\n")
    second = write_dump("a: [unclosed\n", "broken.yaml")
    found = [(d.code, str(d.span)) for d in diagnostics_of(first, second)]
    assert found == [
        ("load.yaml-syntax", "broken.yaml:2:1"),
        ("load.bad-quantity", "cluster.yaml:10:23"),
        ("load.bad-quantity", "cluster.yaml:10:37"),
        ("load.bad-value", "cluster.yaml:11:17"),
    ]


def test_a_path_that_does_not_exist_is_reported(write_dump: WriteDump) -> None:
    (diagnostic,) = diagnostics_of("missing.yaml")
    assert diagnostic.one_line() == ("missing.yaml:1:1: error[load.unreadable-file]: no such file or folder: "
                                     "missing.yaml (check the path; folders are read for *.yaml, *.yml and "
                                     "*.json files)")


def test_a_folder_without_dump_files_is_reported(write_dump: WriteDump) -> None:
    write_dump("notes\n", "dump/readme.txt")
    (diagnostic,) = diagnostics_of("dump")
    assert (diagnostic.code, diagnostic.message) == ("load.no-input",
                                                     "folder dump holds no *.yaml, *.yml or *.json file")


def test_no_paths_at_all_is_reported(write_dump: WriteDump) -> None:
    (diagnostic,) = diagnostics_of()
    assert (diagnostic.code, diagnostic.span) == ("load.no-input", None)
