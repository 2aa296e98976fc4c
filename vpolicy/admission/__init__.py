"""Volcano's admission rules (reference §15) as pure functions over plain objects (dicts as the API
server or a YAML file holds them): no Kubernetes client, no I/O, no clock.

- `jobs.default_job(job, scheduler_name=...)` -> the defaulted copy (jobs/mutate);
  `jobs.validate_job(job, queues=..., old=...)` -> violations (jobs/validate, create and update);
- `queues.default_queue(queue)`; `queues.validate_queue(queue, queues=..., podgroups=..., old=...)`;
  `queues.validate_queue_delete(name, queues=..., podgroups=...)`;
- `podgroups.default_podgroup(group, namespace_annotations=...)`;
  `podgroups.validate_podgroup(group, queues=...)`;
- `hypernodes.validate_hypernode(hypernode)` (hypernodes/validate);
- `common.Violation` (code, field path, message) and `common.diagnostics(violations, span_of)`, which
  turns them into `vpolicy.errors.Diagnostic`s for `vpolicy check` on manifests.

Lookups are passed in: `queues` maps queue names to Queue objects (None: the checks that need the
cluster are skipped), `podgroups` counts PodGroups per queue. The webhook server
(`cluster_adapter.controllers.webhook`) wraps these in AdmissionReview; nothing here knows HTTP.
Each invalid object gets one violation per rule it breaks, each with one clear message.
"""
