"""The catalogue of the DSL's world: object types and attributes, callbacks, built-in functions.

This is the contract between three parties: `lang.check` types rules with it and suggests names from it,
`docs/dsl.md` documents it, and the engine's runtime (`vpolicy.engine.runtime`) binds every attribute
to the live session objects by the same names. Types are written as strings: `int`, `number`, `bool`,
`string`, `resources`, `vote`, `queue`, `job`, `task`, `node`, `cluster`, `list[T]`, `map[K,V]`, `any`;
a trailing `?` means the value may be `none`.

Built-in functions are the documented primitives DESIGN §6 allows (resource vectors, label/taint matching,
shares); every plugin's *policy* is written in `policies/`, not here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Attribute:
    type: str
    doc: str


@dataclass(frozen=True, slots=True)
class Callback:
    params: tuple[tuple[str, str], ...]  # (conventional name, type)
    result: str
    flag: str | None  # the Volcano enable* flag that switches rules of this callback; None = always on
    combine: str  # how results of several plugins combine (reference §3), for docs and the engine
    doc: str


@dataclass(frozen=True, slots=True)
class Function:
    params: tuple[str, ...]  # parameter types; "..." as the last entry means variadic of the previous
    result: str
    doc: str


TASK = {
    "name": Attribute("string", "pod name"),
    "namespace": Attribute("string", "pod namespace"),
    "key": Attribute("string", "`namespace/name`"),
    "uid": Attribute("string", "pod uid"),
    "job": Attribute("job", "the task's job (its PodGroup)"),
    "queue": Attribute("queue", "the job's queue"),
    "resreq": Attribute("resources", "requests including `pods: 1`"),
    "containers_without_cpu_request": Attribute("int", "its containers that ask no cpu (kube-scheduler's resource "
                                                       "scores give each 100m)"),
    "containers_without_memory_request": Attribute("int", "its containers that ask no memory (scored as 200Mi each)"),
    "priority": Attribute("int", "pod priority (spec.priority; 1 when unset; volcano.sh/task-priority wins)"),
    "priority_class_name": Attribute("string", "pod spec.priorityClassName"),
    "status": Attribute("string", "Volcano task status: Pending, Allocated, Pipelined, Binding, Bound, Running, Releasing, Succeeded, Failed, Unknown"),
    "best_effort": Attribute("bool", "requests nothing but `pods`"),
    "preemptable": Attribute("bool", "volcano.sh/preemptable annotation, else label; default true"),
    "node_name": Attribute("string", "node the task is placed on, or \"\""),
    "role": Attribute("string", "task name within its job (volcano.sh/task-spec)"),
    "labels": Attribute("map[string,string]", "pod labels"),
    "annotations": Attribute("map[string,string]", "pod annotations"),
    "node_selector": Attribute("map[string,string]", "pod spec.nodeSelector"),
    "revocable_zone": Attribute("string", "\"*\" when the pod may use revocable (tdm) nodes: annotation "
                                          "volcano.sh/revocable-zone \"*\", else volcano.sh/preemptable true; else \"\""),
    "scheduled_at": Attribute("number", "lastTransitionTime of the PodScheduled=True condition, epoch seconds "
                                        "(0 when there is none)"),
    "limits": Attribute("resources", "cpu and memory limits: the containers' summed, an init container's when "
                                     "larger (a container without one adds nothing)"),
    "started_at": Attribute("number", "status.startTime, epoch seconds (0 when the pod has not started)"),
    "guaranteed": Attribute("bool", "QoS class Guaranteed (status.qosClass, else every container's cpu and memory "
                                    "limits equal its requests)"),
    "topology_policy": Attribute("string", "annotation volcano.sh/numa-topology-policy (a vcjob task's topologyPolicy); "
                                           "\"\" when unset"),
    "pod_affinity": Attribute("list[term]", "required pod affinity terms (each counts pods matching all of them)"),
    "pod_anti_affinity": Attribute("list[term]", "required pod anti-affinity terms"),
    "preferred_pod_affinity": Attribute("list[term]", "preferred pod affinity terms (with `weight`)"),
    "preferred_pod_anti_affinity": Attribute("list[term]", "preferred pod anti-affinity terms (with `weight`)"),
    "spread_constraints": Attribute("list[term]", "topologySpreadConstraints"),
    "images": Attribute("list[string]", "the images of the pod's init containers and containers"),
}

TERM = {
    "kind": Attribute("string", "affinity, anti_affinity, preferred_affinity, preferred_anti_affinity or spread"),
    "topology_key": Attribute("string", "the node label whose values are the term's domains"),
    "weight": Attribute("int", "a preferred term's weight (0 for others)"),
    "max_skew": Attribute("int", "a spread constraint's maxSkew"),
    "min_domains": Attribute("int", "a spread constraint's minDomains (1 when unset)"),
    "when_unsatisfiable": Attribute("string", "a spread constraint's whenUnsatisfiable: DoNotSchedule or ScheduleAnyway"),
}

JOB = {
    "name": Attribute("string", "PodGroup name"),
    "namespace": Attribute("string", "PodGroup namespace"),
    "key": Attribute("string", "`namespace/name`"),
    "uid": Attribute("string", "PodGroup uid"),
    "queue": Attribute("queue", "the job's queue"),
    "priority": Attribute("int", "value of priorityClassName, else the global default class, else 0"),
    "min_available": Attribute("int", "PodGroup spec.minMember"),
    "min_task_member": Attribute("map[string,int]", "PodGroup spec.minTaskMember (role -> count)"),
    "has_min_resources": Attribute("bool", "spec.minResources is set"),
    "min_resources": Attribute("resources", "spec.minResources (empty when unset)"),
    "tasks": Attribute("list[task]", "all tasks of the job"),
    "roles": Attribute("list[string]", "roles (task names) present in the job or in minTaskMember"),
    "phase": Attribute("string", "PodGroup phase: Pending, Inqueue, Running, Unknown, Completed"),
    "allocated": Attribute("resources", "sum of requests of tasks in allocated statuses"),
    "ready_count": Attribute("int", "tasks Bound, Binding, Running, Allocated or Succeeded"),
    "pipelined_count": Attribute("int", "tasks Pipelined"),
    "pending_count": Attribute("int", "tasks Pending"),
    "pending_best_effort_count": Attribute("int", "Pending tasks that request nothing"),
    "valid_task_count": Attribute("int", "tasks Pending, Pipelined, allocated or Succeeded (gang validity)"),
    "task_count": Attribute("int", "number of tasks"),
    "creation": Attribute("number", "creationTimestamp, epoch seconds"),
    "annotations": Attribute("map[string,string]", "PodGroup annotations"),
    "labels": Attribute("map[string,string]", "PodGroup labels"),
    "preemptable": Attribute("bool", "the PodGroup's volcano.sh/preemptable annotation, else label (default false)"),
    "enqueued_now": Attribute("bool", "the job moved from Pending to Inqueue in this session's enqueue"),
    "quotas": Attribute("list[quota]", "the ResourceQuotas of the job's namespace"),
}

QUEUE = {
    "name": Attribute("string", "queue name"),
    "weight": Attribute("int", "spec.weight"),
    "priority": Attribute("int", "spec.priority"),
    "state": Attribute("string", "Open, Closed, Closing, Unknown"),
    "open": Attribute("bool", "state is Open"),
    "reclaimable": Attribute("bool", "spec.reclaimable (default true)"),
    "has_capability": Attribute("bool", "spec.capability is set"),
    "capability": Attribute("resources", "spec.capability (empty when unset)"),
    "has_deserved": Attribute("bool", "spec.deserved is set"),
    "deserved": Attribute("resources", "spec.deserved (empty when unset)"),
    "guarantee": Attribute("resources", "spec.guarantee.resource"),
    "parent": Attribute("queue?", "spec.parent's queue (root's parent is none)"),
    "ancestors": Attribute("list[queue]", "parent, grandparent, ... up to root"),
    "children": Attribute("list[queue]", "queues whose parent is this one"),
    "is_leaf": Attribute("bool", "no child queues"),
    "jobs": Attribute("list[job]", "jobs in this queue"),
    "allocated": Attribute("resources", "sum of allocated-status task requests (live in the session)"),
    "tree_allocated": Attribute("resources", "allocated of this queue and all its descendants"),
    "tree_inqueue": Attribute("resources", "inqueue of this queue and all its descendants"),
    "inqueue": Attribute("resources", "minResources of Inqueue jobs not yet allocated (live; enqueue adds to it)"),
    "elastic": Attribute("resources", "allocated beyond minResources of its jobs"),
    "request": Attribute("resources", "allocated plus Pending task requests"),
    "creation": Attribute("number", "creationTimestamp, epoch seconds"),
    "has_node_group_affinity": Attribute("bool", "spec.affinity (node group affinity) is set"),
    "node_group_required": Attribute("list[string]", "spec.affinity.nodeGroupAffinity.required... node groups"),
    "node_group_preferred": Attribute("list[string]", "spec.affinity.nodeGroupAffinity.preferred... node groups"),
    "node_group_anti_required": Attribute("list[string]",
                                          "spec.affinity.nodeGroupAntiAffinity.required... node groups"),
    "node_group_anti_preferred": Attribute("list[string]",
                                           "spec.affinity.nodeGroupAntiAffinity.preferred... node groups"),
}

NODE = {
    "name": Attribute("string", "node name"),
    "allocatable": Attribute("resources", "status.allocatable"),
    "used": Attribute("resources", "requests of tasks on the node (including releasing)"),
    "idle": Attribute("resources", "allocatable - used"),
    "releasing": Attribute("resources", "requests of releasing tasks"),
    "pipelined": Attribute("resources", "requests of tasks pipelined onto the node"),
    "future_idle": Attribute("resources", "idle + releasing - pipelined"),
    "evicted": Attribute("resources", "requests of tasks this session evicted here (in used and releasing too): "
                                      "kube-scheduler's NodeInfo, which node scores read, no longer holds them"),
    "labels": Attribute("map[string,string]", "node labels"),
    "annotations": Attribute("map[string,string]", "node annotations"),
    "unschedulable": Attribute("bool", "spec.unschedulable"),
    "pod_count": Attribute("int", "tasks placed on the node"),
    "pods_without_cpu_request": Attribute("int", "containers of the tasks on the node (pipelined too) that ask no "
                                                 "cpu: kube-scheduler's NonZeroRequested counts each as 100m"),
    "pods_without_memory_request": Attribute("int", "containers of the tasks on the node (pipelined too) that ask "
                                                    "no memory: kube-scheduler's NonZeroRequested counts each as 200Mi"),
    "max_pods": Attribute("int", "allocatable pods"),
    "capacity": Attribute("resources", "status.capacity (allocatable when the node lists none)"),
    "cpu_usage": Attribute("number", "CPU used, percent, averaged over the metrics period (a metrics source, or "
                                     "the dump's `usage.volcano.sh/cpu-usage-avg`); 0 when none was measured"),
    "memory_usage": Attribute("number", "memory used, percent, as cpu_usage (`usage.volcano.sh/mem-usage-avg`)"),
    "metrics_time": Attribute("number", "when the usage was measured, epoch seconds (`usage.volcano.sh/metrics-time`"
                                        "); 0 when never"),
    "tasks": Attribute("list[task]", "tasks on the node"),
    "gpus": Attribute("any", "the node's GPU cards as the session sees them (from `volcano.sh/node-vgpu-register` "
                             "and the pods on them); none without an inventory; read by the `vgpu_*` functions"),
    "numa": Attribute("any", "the node's Numatopology and its CPUs still free for pinning as the session sees them; "
                             "none without a Numatopology; read by the `numa_*` functions"),
}

CLUSTER = {
    "total": Attribute("resources", "sum of allocatable over Ready nodes"),
    "used": Attribute("resources", "sum of node used over Ready nodes"),
    "inqueue": Attribute("resources", "sum of queues' inqueue (live; enqueue adds to it)"),
    "queues": Attribute("list[queue]", "all queues"),
    "nodes": Attribute("list[node]", "Ready nodes"),
    "jobs": Attribute("list[job]", "all jobs"),
    "pdbs": Attribute("list[pdb]", "PodDisruptionBudgets"),
    "quotas": Attribute("list[quota]", "ResourceQuotas"),
}

PDB = {
    "name": Attribute("string", "PodDisruptionBudget name"),
    "namespace": Attribute("string", "its namespace"),
    "key": Attribute("string", "`namespace/name`"),
    "disruptions_allowed": Attribute("int", "status.disruptionsAllowed"),
    "disrupted_pods": Attribute("list[string]", "names of the pods in status.disruptedPods"),
}

QUOTA = {
    "name": Attribute("string", "ResourceQuota name"),
    "namespace": Attribute("string", "its namespace"),
    "key": Attribute("string", "`namespace/name`"),
    "hard": Attribute("resources", "status.hard (else spec.hard), by the quota's own resource names"),
    "used": Attribute("resources", "status.used"),
}

REPLY = {
    "ok": Attribute("bool", "the extender answered 200 with the verb's JSON in time (after any retries)"),
    "error": Attribute("string", "why the call failed (\"\" when ok)"),
    "detail": Attribute("string", "predicate: the failure message (\"\": the node fits); prioritize: its errorMessage"),
    "code": Attribute("int", "predicate: the status code (Volcano's api.Status codes; 3 unresolvable)"),
    "status": Attribute("int", "preemptable, reclaimable, jobEnqueueable: 1 permit, -1 reject, 0 abstain"),
    "overused": Attribute("bool", "queueOverused's answer"),
    "ready": Attribute("bool", "jobReady's answer"),
    "scores": Attribute("map[string,number]", "prioritize: node name -> score"),
    "victims": Attribute("list[string]", "preemptable, reclaimable: the UIDs of the victims chosen"),
}

OBJECT_TYPES: dict[str, dict[str, Attribute]] = {
    "task": TASK, "job": JOB, "queue": QUEUE, "node": NODE, "cluster": CLUSTER, "pdb": PDB, "quota": QUOTA,
    "reply": REPLY,
    "term": TERM,
}

# Global names visible in every expression.
GLOBALS = {"cluster": "cluster"}

CALLBACKS: dict[str, Callback] = {
    "queue_order": Callback((("l", "queue"), ("r", "queue")), "int", "enableQueueOrder", "first-non-zero",
                            "negative: l before r; first plugin with a non-zero answer decides"),
    "job_order": Callback((("l", "job"), ("r", "job")), "int", "enableJobOrder", "first-non-zero",
                          "negative: l before r"),
    "task_order": Callback((("l", "task"), ("r", "task")), "int", "enableTaskOrder", "first-non-zero",
                           "negative: l before r"),
    "victim_queue_order": Callback((("l", "queue"), ("r", "queue"), ("preemptor", "queue")), "int", None,
                                   "first-non-zero", "order of victims' queues; none: reverse queue order"),
    "job_valid": Callback((("job", "job"),), "bool", None, "first-failure",
                          "false: the job is skipped by every action (reason/message say why)"),
    "job_ready": Callback((("job", "job"),), "bool", "enableJobReady", "and", "job may be dispatched to bind"),
    "job_pipelined": Callback((("job", "job"),), "vote", "enableJobPipelined", "vote",
                              "placements (incl. pipelined) suffice to keep them"),
    "job_enqueueable": Callback((("job", "job"),), "vote", "enableJobEnqueued", "vote",
                                "a Pending job may become Inqueue"),
    "job_starving": Callback((("job", "job"),), "bool", "enableJobStarving", "first-tier-and",
                             "the job may preempt or reclaim"),
    "overused": Callback((("queue", "queue"),), "bool", "enabledOverused", "or",
                         "the queue gets nothing more in allocate"),
    "allocatable": Callback((("queue", "queue"), ("task", "task")), "bool", "enabledAllocatable", "and",
                            "the queue may take this task"),
    "preemptive": Callback((("queue", "queue"), ("task", "task")), "bool", "enablePreemptive", "and",
                           "the queue may reclaim for this task"),
    "predicate": Callback((("task", "task"), ("node", "node")), "bool", "enablePredicate", "and",
                          "the task may run on the node (reason on failure; `unresolvable` if preemption cannot help)"),
    "node_order": Callback((("task", "task"), ("node", "node")), "number", "enableNodeOrder", "sum",
                           "node score; `normalize [reverse] by W` scales to 0..100 over candidates times W"),
    "preemptable": Callback((("preemptor", "task"), ("candidates", "list[task]")), "list[task]",
                            "enablePreemptable", "tier-intersection", "victims this plugin allows"),
    "reclaimable": Callback((("reclaimer", "task"), ("candidates", "list[task]")), "list[task]",
                            "enableReclaimable", "tier-intersection", "victims this plugin allows"),
    "evictable": Callback((("kind", "string"), ("job", "job"), ("candidates", "list[task]")), "list[task]", None,
                          "tier-intersection",
                          "victims a gang eviction may take for the starving job (`kind`: gangpreempt or "
                          "gangreclaim; Volcano's UnifiedEvictable)"),
    "victim_tasks": Callback((("tasks", "list[task]"),), "list[task]", "enabledVictim", "tier-union",
                             "of the running tasks, those to evict (shuffle); the first tier with any decides"),
    "session_close": Callback((), "bool", None, "each",
                              "asked once as the session closes, after every action, for its effect (Volcano's "
                              "OnSessionClose: an extender's onSessionCloseVerb); the answer decides nothing"),
}

FUNCTIONS: dict[str, Function] = {
    "compare": Function(("any", "any"), "int", "-1, 0 or 1 as a < b, a == b, a > b: two numbers, or two strings, bools or votes"),
    "le": Function(("resources", "resources"), "bool", "every dimension a <= b, missing dims = 0"),
    "le_on": Function(("resources", "resources", "list[string]"), "bool", "a <= b on the listed dimensions only"),
    "dims": Function(("resources",), "list[string]", "dimensions with a positive value"),
    "get": Function(("resources", "string"), "int", "one dimension (0 when missing)"),
    "without": Function(("resources", "string"), "resources", "drop one dimension"),
    "only": Function(("resources", "list[string]"), "resources", "keep only the listed dimensions"),
    "min_each": Function(("resources", "resources"), "resources", "per-dimension minimum"),
    "max_each": Function(("resources", "resources"), "resources", "per-dimension maximum"),
    "positive": Function(("resources",), "resources", "negative dimensions set to 0"),
    "is_empty": Function(("resources",), "bool", "nothing but `pods` requested"),
    "share": Function(("resources", "resources"), "number",
                      "max over b's dims of a/b (0/0 = 0, x/0 = 1): Volcano's share"),
    "share_on": Function(("resources", "resources", "list[string]"), "number", "share over the listed dims"),
    "ratio": Function(("number", "number"), "number", "a/b, 0 when b is 0"),
    "maximum": Function(("number", "number"), "number", "the larger"),
    "minimum": Function(("number", "number"), "number", "the smaller"),
    "contains": Function(("list[any]", "any"), "bool", "membership"),
    "len": Function(("list[any]",), "int", "length"),
    "keys": Function(("map[any,any]",), "list[any]", "the keys of a map, in insertion order"),
    "split": Function(("string",), "list[string]", "comma-separated text as a list of trimmed, non-empty items"),
    "cap_by": Function(("resources", "resources"), "resources",
                       "per-dimension minimum with a capability; a dimension the capability lacks, or a cpu/memory "
                       "capability <= 0, is unlimited (Volcano's Infinity default)"),
    "argument": Function(("string", "number"), "number", "a raw plugin argument by key, else the default"),
    "argument_at": Function(("list[string]", "number"), "number",
                            "a number inside nested mapping arguments, by its path of keys "
                            "(`[\"resources\", r, \"weight\"]`), else the default"),
    "argument_text_at": Function(("list[string]", "string"), "string",
                                 "a text inside nested mapping arguments, by its path of keys, else the default"),
    "argument_keys": Function(("list[string]",), "list[string]",
                              "the keys of the mapping argument at a path of keys (a list's: \"0\", \"1\", ...); "
                              "empty when there is none"),
    "water_fill": Function(("list[queue]", "resources", "map[queue,resources]", "map[queue,resources]"),
                           "map[queue,resources]",
                           "proportion's iterative weighted split of the total: (queues, total, caps, requests)"),
    "matches_node_selector": Function(("task", "node"), "bool", "spec.nodeSelector labels all match"),
    "matches_required_affinity": Function(("task", "node"), "bool", "required node affinity terms match"),
    "preferred_affinity_weight": Function(("task", "node"), "int", "sum of weights of matching preferred terms"),
    "tolerates_taints": Function(("task", "node", "list[string]"), "bool",
                                 "every taint with one of the effects is tolerated"),
    "intolerable_taints": Function(("task", "node", "string"), "int", "count of untolerated taints of an effect"),
    "tolerates_taint": Function(("task", "string", "string"), "bool",
                                "the pod tolerates a taint of this key and effect, with no value"),
    # pods per topology domain (vpolicy.compile.relations over engine.pod_relations' index)
    "pods_in_domain": Function(("term", "node"), "int",
                               "pods placed in the node's domain of the term's topology key that match the term "
                               "(0 when the node lacks the key); a spread term counts only the nodes its "
                               "constraint counts and no terminating pod"),
    "pods_anywhere": Function(("term",), "int", "pods matching the term in every domain of its key"),
    "domain_min": Function(("term",), "int",
                           "the fewest matching pods in any domain the term counts; 0 when it counts fewer "
                           "domains than its min_domains (kube's global minimum)"),
    "domain_count": Function(("term",), "int", "how many domains the term counts"),
    "matches_term": Function(("task", "term"), "bool", "the task itself matches the term (labels and namespace)"),
    "has_label": Function(("node", "string"), "bool", "the node carries the label key"),
    "placed_anti_affinity": Function(("task", "node"), "int",
                                     "placed pods in the node's domains whose required anti-affinity matches the task"),
    "placed_preferred_affinity": Function(("task", "node"), "int",
                                          "signed weights of placed pods' preferred (anti-)affinity terms matching "
                                          "the task, over the node's domains"),
    "image_bytes": Function(("task", "node"), "int",
                            "kube's ImageLocality sum: the size of each of the pod's images the node holds, "
                            "scaled by the share of nodes holding it"),
    "round": Function(("number",), "int", "round to the nearest integer, halves away from zero (Go's math.Round)"),
    "log": Function(("number",), "number", "natural logarithm"),
    "volume_zone_ok": Function(("task", "node"), "bool",
                               "kube's VolumeZone: on a node with zone/region labels, every bound PV's zone/region "
                               "labels hold the node's value"),
    "volume_node_affinity_ok": Function(("task", "node"), "bool",
                                        "every PV the task's bound claims use has a required node affinity the "
                                        "node matches (kube's VolumeBinding)"),
    "missing_claims": Function(("task",), "int",
                               "the task's PersistentVolumeClaims the cluster lacks (or bound to a PV it lacks)"),
    "unbound_immediate_claims": Function(("task",), "int",
                                         "the task's unbound claims whose StorageClass binds Immediately (or "
                                         "that have no class): kube's VolumeBinding PreFilter refuses the pod"),
    "foreign_ephemeral_claims": Function(("task",), "int",
                                         "the task's generic ephemeral volumes whose claim exists but is not "
                                         "controlled by the pod (kube's VolumeBinding PreFilter refuses it)"),
    "volume_limits_ok": Function(("task", "node"), "bool",
                                 "kube's NodeVolumeLimits: the task's CSI volumes (and migrated in-tree disks) not "
                                 "yet on the node, with the node's, stay within each driver's CSINode "
                                 "allocatable.count; follows placements"),
    "volume_binding_ok": Function(("task", "node"), "bool",
                                  "kube's VolumeBinding for unbound WaitForFirstConsumer claims: each finds an "
                                  "available PV for the node (not taken by a task placed earlier) or a class "
                                  "that provisions there; follows placements"),
    "host_ports_free": Function(("task", "node"), "bool",
                                "no pod on the node holds a host port (IP, protocol, port) the task asks for"),
    "half": Function(("number",), "number", "x / 2 (kept for readability of balanced scores)"),
    "abs": Function(("number",), "number", "absolute value"),
    "floor": Function(("number",), "int", "round down"),
    "float": Function(("any",), "number", "convert to number"),
    "str": Function(("any",), "string", "render as text"),
    "now": Function((), "number", "the session clock, epoch seconds"),
    "candidate_nodes": Function((), "list[node]",
                                "in a node_order rule, the nodes being scored together for the task (Volcano's "
                                "BatchNodeOrderFn list: in allocate those that passed the predicates and fit Idle, "
                                "else FutureIdle; in preempt and reclaim every node that passed); elsewhere every "
                                "Ready node"),
    "duration": Function(("string",), "number",
                         "a Go duration (`1h2m3s`, `500ms`, `1.5h`) in seconds; -1 when the text is not one"),
    "metrics_setting": Function(("string", "string"), "string",
                                "a setting of the conf's top-level `metrics` section (`interval`, `type`, ...; "
                                "Volcano's ssn.GetMetricsConf()), else the default"),
    "quantity": Function(("string", "string"), "int",
                         "(text, resource): a Kubernetes quantity (`250m`, `200Mi`, `2`) in the resource's unit "
                         "(millicores for cpu, bytes for memory); -1 when the text is not one"),
    "timestamp": Function(("string",), "number",
                          "an RFC 3339 time (`2024-05-01T12:00:00Z`) as epoch seconds; -1 when the text is not one"),
    "time_of_day": Function(("number",), "number",
                            "seconds since midnight of an epoch time on the session's wall clock: UTC, the live "
                            "scheduler's local zone, or a scenario's `timezone:`"),
    "clock_time": Function(("string",), "number",
                           "a wall-clock time `H:MM` or `HH:MM` as seconds since midnight; -1 when the text is not one"),
    "split_by": Function(("string", "string"), "list[string]", "the text split at every separator, as written"),
    "trim": Function(("string",), "string", "the text without leading and trailing white space"),
    "int_or_percent": Function(("string", "number"), "int",
                               "a Kubernetes IntOrString: an integer, or a percentage of the total rounded up; "
                               "0 when the text is neither"),
    "extender": Function(("string", "any", "any"), "reply",
                         "(verb, subject, other): POST to the plugin's extender (`extender.urlPrefix`/verb, "
                         "timed out by `extender.httpTimeout`, retried `extender.retries` times); the body "
                         "follows what is passed: task and node, task and nodes, task and tasks, a job, a queue, or "
                         "none"),
    "sort_by": Function(("list[any]", "list[any]"), "list[any]",
                        "the items in ascending order of their keys (the second list, item by item: numbers or "
                        "strings); ties keep their order"),
    "index_of": Function(("list[any]", "any"), "int", "the position of the first item equal to the value; -1 when none is"),
    "selects": Function(("pdb", "task"), "bool",
                        "the budget's label selector matches the pod (same namespace; a nil or empty selector "
                        "matches nothing)"),
    # deviceshare's card-level primitives (vpolicy.compile.devices); `cards` is `node.gpus`
    "vgpu_requested": Function(("task",), "bool",
                               "the pod asks for vGPU cards (`volcano.sh/vgpu-number` or `vgpu-memory` limits)"),
    "vgpu_fits": Function(("task", "any", "string"), "bool",
                          "(task, node.gpus, policy): every container's cards fit (free slot, memory, cores, "
                          "exclusive needs idle, type/UUID/mode filters; MIG: a free or re-cut instance); the "
                          "placement then takes the cards this policy (binpack, spread, \"\") picks"),
    "vgpu_unfit_reason": Function(("task", "any"), "string",
                                  "(task, node.gpus): why the cards do not fit, \"\" when they do"),
    "vgpu_score": Function(("task", "any", "string"), "number",
                           "(task, node.gpus, policy): Volcano's card score, summed over the chosen cards: "
                           "binpack 100*usedMem/mem, spread 100 per idle card, otherwise 0"),
    "mig_reconfigurations": Function(("task", "any", "string"), "int",
                                     "(task, node.gpus, policy): MIG cards the placement would re-cut"),
    # numa-aware's CPU pinning (vpolicy.compile.numa); `numa` is `node.numa`
    "numa_fits": Function(("task", "any"), "bool",
                          "(task, node.numa): the node's topology manager policy admits the CPUs each container "
                          "would get (Volcano's filterNodeByPolicy, hints, policy merge); a placement then takes them"),
    "numa_unfit_reason": Function(("task", "any"), "string",
                                  "(task, node.numa): why the node refuses the task, \"\" when it does not"),
    "numa_nodes_used": Function(("task", "any"), "int",
                                "(task, node.numa): how many NUMA nodes the CPUs it would get span (0: none pinned)"),
}

# Network topology (Volcano's HyperNodes): bound by `vpolicy.engine.topology`, functions in
# `vpolicy.compile.topology`; the network-topology-aware module reads them.
HYPERNODE = {
    "name": Attribute("string", "HyperNode name (the whole cluster is the domain `<cluster-top-hypernode>`)"),
    "tier_name": Attribute("string", "spec.tierName (\"\" when unset)"),
    "nodes": Attribute("list[node]", "Ready nodes in the domain, those of member HyperNodes included"),
    "node_names": Attribute("list[string]", "names of `nodes`"),
    "children": Attribute("list[hypernode]", "member HyperNodes"),
    "allocatable": Attribute("resources", "sum of the nodes' allocatable"),
    "used": Attribute("resources", "sum of the nodes' used (live in the session)"),
    "idle": Attribute("resources", "allocatable - used"),
}
OBJECT_TYPES["hypernode"] = HYPERNODE
SUBGROUP = {
    "name": Attribute("string", "the sub-group: its policy's name and the tasks' values of matchLabelKeys"),
    "policy_name": Attribute("string", "the subGroupPolicy entry's name (`policy` itself is a keyword)"),
    "tasks": Attribute("list[task]", "the tasks of the sub-group"),
    "size": Attribute("int", "subGroupSize: the tasks it needs together (all of them when unset)"),
    "ready_count": Attribute("int", "its tasks Bound, Binding, Running, Allocated or Succeeded"),
    "pipelined_count": Attribute("int", "its tasks Pipelined"),
    "topology_mode": Attribute("string", "the policy's networkTopology mode: \"hard\", \"soft\" or \"\""),
    "highest_tier_allowed": Attribute("int", "the policy's highest allowed tier (0 without networkTopology)"),
    "priority": Attribute("int", "the highest priority of its tasks"),
    "match_index": Attribute("int", "its first matchLabelKeys value as a number (0 when not one)"),
}
OBJECT_TYPES["subgroup"] = SUBGROUP
JOB.update({
    "topology_mode": Attribute("string", "spec.networkTopology.mode: \"hard\", \"soft\", or \"\" without networkTopology"),
    "highest_tier_allowed": Attribute("int", "highestTierAllowed, else the tier highestTierName names, else 1; "
                                             "0 without networkTopology"),
    "allocated_hypernode": Attribute("string", "lowest domain holding every placed task of the job (live: "
                                               "follows placements; \"\" when none is placed)"),
    "sub_groups": Attribute("list[subgroup]", "the sub-groups of spec.subGroupPolicy (empty without one)"),
    "min_sub_groups": Attribute("map[string,int]", "minSubGroups of each subGroupPolicy entry, by name"),
})
NODE.update({
    "hypernode": Attribute("string", "the node's lowest-tier HyperNode, \"\" when it is in none"),
    "hypernodes": Attribute("list[hypernode]", "the HyperNodes holding the node, lowest tier first"),
})
CLUSTER.update({
    "hypernodes": Attribute("list[hypernode]", "every HyperNode"),
    "hypernode_tiers": Attribute("list[int]", "min_tier, ..., max_tier (empty without HyperNodes)"),
    "min_tier": Attribute("int", "lowest HyperNode tier (0 without HyperNodes)"),
    "max_tier": Attribute("int", "highest HyperNode tier (0 without HyperNodes)"),
})
CALLBACKS.update({
    "hypernode_order": Callback((("job", "job"), ("hypernode", "hypernode")), "number", "enabledHyperNodeOrder",
                                "sum", "domain score for placing the job's gang inside it; highest wins"),
    "sub_job_order": Callback((("l", "subgroup"), ("r", "subgroup")), "int", "enabledSubJobOrder", "first-non-zero",
                              "negative: l's sub-group is placed before r's; none: by match_index, then name"),
    "sub_job_ready": Callback((("job", "job"), ("subgroup", "subgroup")), "bool", "enabledSubJobReady", "and",
                              "the sub-group's gang is placed: allocate keeps a sub-group's trial only then"),
    "sub_job_pipelined": Callback((("job", "job"), ("subgroup", "subgroup")), "vote", "enabledSubJobPipelined",
                                  "vote", "the sub-group's gang is placed or pipelined: allocate also keeps a "
                                          "sub-group's trial then"),
    "sub_group_hypernode_order": Callback((("subgroup", "subgroup"), ("hypernode", "hypernode")), "number",
                                          "enabledHyperNodeOrder", "sum",
                                          "domain score for placing the sub-group's gang inside it; highest "
                                          "wins"),
    "sub_group_hypernode_tie_break": Callback((("subgroup", "subgroup"), ("hypernode", "hypernode")), "number",
                                              "enabledHyperNodeOrder", "sum",
                                              "added to the sub_group_hypernode_order score of the sub-group's "
                                              "candidate domains when more than one shares the best score"),
    "hypernode_gradient": Callback((("job", "job"), ("hypernode", "hypernode")), "bool",
                                   "enabledHyperNodeGradient", "and",
                                   "a hard-mode job may be placed inside this domain; allocate tries every allowed "
                                   "domain, the tier breaking ties of score (no rule: the whole cluster)"),
    "hypernode_evict_limit": Callback((), "int", "enabledHyperNodeGradient", "min",
                                      "how many HyperNodes gangpreempt and gangreclaim try for a hard-mode job or "
                                      "sub-group, the widest first; several rules: the least (none: no limit)"),
})
FUNCTIONS.update({
    "lca_tier": Function(("cluster", "string", "string"), "int",
                         "(cluster, a, b): tier of the lowest domain holding both; 0 when either is \"\"; "
                         "max_tier + 1 when only the cluster holds both"),
    "ancestor_at": Function(("cluster", "string", "int"), "string",
                            "(cluster, domain, tier): its highest ancestor (or itself) of tier <= tier; \"\" if none"),
    "within": Function(("cluster", "string", "string"), "bool", "(cluster, domain, ancestor): domain is or lies under ancestor"),
    "tasks_within": Function(("list[task]", "hypernode"), "int", "how many of the tasks sit on a node of the domain"),
    "tier_of": Function(("hypernode",), "int", "spec.tier of the domain: 1 nearest the nodes (a leaf switch), "
                                            "higher towards the spine (`tier` itself is a keyword)"),
    "pow": Function(("number", "number"), "number", "a raised to the power b"),
})

TYPE_NAMES = frozenset({"int", "number", "bool", "string", "resources", "vote", "any", "list", "map",
                        *OBJECT_TYPES})
