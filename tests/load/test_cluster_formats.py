"""Cluster dumps in every shape kubectl and people write them: List, *List, multi-document, JSON, folders."""
from __future__ import annotations

import json

from tests.load.conftest import WriteDump, load
from vpolicy.load import cluster
from vpolicy.source import Span

KUBECTL_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: n1
    name: n1
    uid: 0b1c
  spec: {}
  status:
    allocatable:
      cpu: "8"
      memory: 32Gi
      pods: "110"
    capacity:
      cpu: "8"
      memory: 32Gi
      pods: "110"
    conditions:
    - lastHeartbeatTime: "2024-05-01T10:00:00Z"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      scheduling.k8s.io/group-name: pg1
    creationTimestamp: "2024-05-01T10:00:00Z"
    name: p1
    namespace: team
    uid: 9f1e
  spec:
    containers:
    - image: busybox
      name: main
      resources:
        requests:
          cpu: 500m
    priority: 0
    schedulerName: volcano
  status:
    phase: Pending
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata:
    name: pg1
    namespace: team
  spec:
    minMember: 1
    queue: q1
  status:
    phase: Inqueue
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: Queue
  metadata:
    name: q1
  spec:
    reclaimable: true
    weight: 1
  status:
    state: Open
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: system-node-critical
  value: 2000001000
kind: List
metadata:
  resourceVersion: ""
"""


def test_a_kubectl_list_dump_yields_every_object(write_dump: WriteDump) -> None:
    cluster = load(write_dump(KUBECTL_LIST))
    assert [n.name for n in cluster.nodes] == ["n1"]
    assert [(p.key, p.uid, p.group) for p in cluster.pods] == [("team/p1", "9f1e", "pg1")]
    assert [g.key for g in cluster.podgroups] == ["team/pg1"]
    assert [q.name for q in cluster.queues] == ["q1", "root", "default"]
    assert [(c.name, c.value) for c in cluster.priority_classes] == [("system-node-critical", 2000001000)]
    assert cluster.warnings == ()


def test_typed_lists_such_as_podlist_are_unpacked(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: v1
        kind: PodList
        items:
        - {apiVersion: v1, kind: Pod, metadata: {name: a}}
        - {apiVersion: v1, kind: Pod, metadata: {name: b}}
        """)
    assert [p.key for p in load(path).pods] == ["default/a", "default/b"]


def test_multi_document_yaml_skips_empty_documents(write_dump: WriteDump) -> None:
    path = write_dump("""\
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: one}
        ---
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: two}
        ---
        """)
    assert load(path).namespaces == ("one", "two")


def test_json_dumps_are_read_like_yaml(write_dump: WriteDump) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.25}}}]}},
    ]}
    cluster = load(write_dump(json.dumps(dump, indent=4), "dump.json"))
    assert cluster.nodes[0].allocatable == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110}
    assert cluster.pods[0].resreq == {"cpu": 250, "pods": 1}
    assert cluster.pods[0].origin == Span("dump.json", 23, 25, 23, 27)


def test_a_folder_contributes_its_yaml_and_json_files_in_name_order(write_dump: WriteDump) -> None:
    write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: from-b}\n", "dump/b.yml")
    write_dump('{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "from-a"}}', "dump/a.json")
    write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: from-c}\n", "dump/c.yaml")
    write_dump("not: read\n", "dump/notes.txt")
    write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: nested}\n", "dump/sub/d.yaml")
    assert load("dump").namespaces == ("from-a", "from-b", "from-c")


def test_files_and_folders_can_be_mixed_and_keep_the_order_given(write_dump: WriteDump) -> None:
    write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: in-folder}\n", "dump/x.yaml")
    single = write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: single}\n", "single.yaml")
    assert load(single, "dump").namespaces == ("single", "in-folder")


def test_kinds_the_scheduler_does_not_use_are_skipped_with_one_warning_each(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        ---
        apiVersion: batch/v1
        kind: Job
        metadata: {name: backup}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        """)
    assert load(path).warnings == (
        "cluster.yaml:2:1: ignoring kind Deployment (not used for scheduling)",
        "cluster.yaml:6:1: ignoring kind Job of batch/v1 (not used for scheduling)",
        "cluster.yaml:10:1: ignoring kind Service (not used for scheduling)",
    )


def test_objects_remember_the_span_of_their_name(write_dump: WriteDump) -> None:
    cluster = load(write_dump(KUBECTL_LIST))
    assert cluster.nodes[0].origin == Span("cluster.yaml", 8, 11, 8, 12)
    assert cluster.queues[0].origin == Span("cluster.yaml", 59, 11, 59, 12)


def test_root_and_default_queues_are_added_only_when_missing(write_dump: WriteDump) -> None:
    path = write_dump("""\
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: default}
        spec: {weight: 5}
        """)
    queues = load(path).queues
    assert [(q.name, q.weight, q.reclaimable) for q in queues] == [("default", 5, True), ("root", 1, False)]


def test_an_empty_dump_still_has_the_root_and_default_queues(write_dump: WriteDump) -> None:
    cluster = load(write_dump("# nothing yet\n"))
    assert [(q.name, q.weight, q.reclaimable) for q in cluster.queues] == [("root", 1, False), ("default", 1, True)]
    assert (cluster.nodes, cluster.pods, cluster.podgroups) == ((), (), ())


CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: gang
"""


def test_a_configmap_conf_is_kept_with_offsets_into_the_dump(write_dump: WriteDump) -> None:
    cluster = load(write_dump(CONFIGMAP))
    assert cluster.conf_text == 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
    assert cluster.conf_origin == Span("cluster.yaml", 8, 5)
    assert (cluster.conf_line_offset, cluster.conf_col_offset) == (7, 4)
    # conf line 4, column 5 (`name`) is dump line 11, column 9
    assert CONFIGMAP.splitlines()[4 + 7 - 1][5 + 4 - 1:].startswith("name: gang")


def test_a_conf_with_an_explicit_indentation_indicator_maps_from_its_key(write_dump: WriteDump) -> None:
    cluster = load(write_dump(CONFIGMAP.replace("conf: |", "conf: |2")))
    assert (cluster.conf_line_offset, cluster.conf_col_offset) == (7, 4)


def test_a_conf_in_a_json_string_has_only_an_origin(write_dump: WriteDump) -> None:
    dump = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
            "data": {"volcano-scheduler.conf": "actions: enqueue\n"}}
    cluster = load(write_dump(json.dumps(dump), "cm.json"))
    assert cluster.conf_text == "actions: enqueue\n"
    assert cluster.conf_line_offset is None
    assert cluster.conf_origin == Span("cm.json", 1, 106, 1, 125)


def test_configmaps_without_a_conf_and_second_confs_are_warned_about(write_dump: WriteDump) -> None:
    path = write_dump(CONFIGMAP + "---\n" + CONFIGMAP.replace("volcano-system", "other")
                      + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-settings}\ndata: {a: b}\n")
    cluster = load(path)
    assert cluster.conf_origin == Span("cluster.yaml", 8, 5)
    assert cluster.warnings == (
        "cluster.yaml:20:5: ignoring the volcano-scheduler.conf of ConfigMap other/volcano-scheduler-configmap: "
        "the one at cluster.yaml:8:5 comes first",
        "cluster.yaml:26:1: ignoring ConfigMap default/app-settings (it has no volcano-scheduler.conf key)",
    )


def test_warnings_come_in_file_order_then_position_order(write_dump: WriteDump) -> None:
    second = write_dump("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "b.yaml")
    first = write_dump("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
                       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "z.yaml")
    assert load(first, second).warnings == (
        "z.yaml:3:18: node n1 has neither status.allocatable nor status.capacity: no pod fits on it",
        "z.yaml:6:1: ignoring kind Deployment (not used for scheduling)",
        "b.yaml:2:1: ignoring kind Secret (not used for scheduling)",
    )


def test_a_single_path_may_be_passed_without_a_list(write_dump: WriteDump) -> None:
    path = write_dump("apiVersion: v1\nkind: Namespace\nmetadata: {name: solo}\n")
    assert cluster.load_cluster(path).namespaces == ("solo",)
