"""`vpolicy check` on manifests applies Volcano's admission rules (vpolicy.admission), located."""
from __future__ import annotations

from pathlib import Path

from vpolicy.harness.check import check_paths

JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ns}
spec:
  minAvailable: 1
  queue: default
  policies:
  - {event: PodFailed, exitCode: 3, action: RestartJob}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x}]
"""


def test_a_job_the_webhook_would_refuse_is_an_error_at_the_offending_policy(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB)
    run = check_paths([str(tmp_path / "job.yaml")])
    admission = [d for d in run.diagnostics if d.code.startswith("admission.")]
    assert [(d.code, d.span.line, d.span.col) for d in admission if d.span] == [
        ("admission.policy-event-and-exit-code", 8, 5)]
    assert admission[0].message == "spec.policies[0]: must not specify event and exitCode simultaneously"


def test_a_job_the_webhook_accepts_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB.replace("exitCode: 3, ", ""))
    run = check_paths([str(tmp_path / "job.yaml")])
    assert [d for d in run.diagnostics if d.code.startswith("admission.")] == []
