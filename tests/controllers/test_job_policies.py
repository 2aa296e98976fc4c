"""Which action a request leads to: explicit actions, internal events, stale requests, task-level
policies before job-level ones, exit codes, `*`, PodPending only with a timeout, and timeouts."""
from __future__ import annotations

from typing import Any

import pytest

from cluster_adapter.controllers.job.policies import Request, decide, parse_duration


def job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "u1"}, "status": {"version": 2},
            "spec": {"tasks": [{"name": "ps", "policies": [{"event": "PodFailed", "action": "AbortJob"}]},
                               {"name": "worker"}], **spec}}


def request(**fields: Any) -> Request:
    return Request("ns", "j", **{"job_version": 2, **fields})


@pytest.mark.parametrize("spec, req, expected", [
    pytest.param({}, request(action="ResumeJob", event="PodFailed"), ("ResumeJob", 0.0), id="explicit-action-wins"),
    pytest.param({"policies": [{"event": "*", "action": "RestartJob"}]}, request(event="OutOfSync"),
                 ("SyncJob", 0.0), id="out-of-sync-is-sync"),
    pytest.param({"policies": [{"event": "*", "action": "RestartJob"}]}, request(event="PodRunning"),
                 ("SyncJob", 0.0), id="pod-running-is-internal"),
    pytest.param({"policies": [{"event": "PodEvicted", "action": "RestartJob"}]},
                 request(event="PodEvicted", job_version=1), ("SyncJob", 0.0), id="older-version-is-sync"),
    pytest.param({"policies": [{"event": "PodEvicted", "action": "RestartJob"}]},
                 request(event="PodEvicted", job_uid="other"), ("SyncJob", 0.0), id="other-incarnation-is-sync"),
    pytest.param({"policies": [{"event": "PodEvicted", "action": "RestartJob"}]}, request(event="PodEvicted"),
                 ("RestartJob", 0.0), id="job-level-event"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartJob"}]},
                 request(event="PodFailed", task_name="ps"), ("AbortJob", 0.0), id="task-level-first"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartJob"}]},
                 request(event="PodFailed", task_name="worker"), ("RestartJob", 0.0), id="task-without-policy-job-level"),
    pytest.param({"policies": [{"events": ["PodEvicted", "PodFailed"], "action": "TerminateJob"}]},
                 request(event="PodFailed"), ("TerminateJob", 0.0), id="events-list"),
    pytest.param({"policies": [{"exitCode": 137, "action": "RestartTask"}]},
                 request(event="PodFailed", exit_code=137), ("RestartTask", 0.0), id="exit-code"),
    pytest.param({"policies": [{"exitCode": 137, "action": "RestartTask"}]},
                 request(event="PodFailed", exit_code=1), ("SyncJob", 0.0), id="other-exit-code-is-sync"),
    pytest.param({"policies": [{"event": "*", "action": "AbortJob"}]}, request(event="TaskFailed"),
                 ("AbortJob", 0.0), id="any-event"),
    pytest.param({"policies": [{"event": "PodPending", "action": "RestartJob"}]}, request(event="PodPending"),
                 ("SyncJob", 0.0), id="pod-pending-without-timeout-ignored"),
    pytest.param({"policies": [{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}]},
                 request(event="PodPending"), ("RestartJob", 600.0), id="pod-pending-with-timeout"),
    pytest.param({"policies": [{"event": "PodFailed", "action": "RestartJob", "timeout": "1m30s"}]},
                 request(event="PodFailed"), ("RestartJob", 90.0), id="timeout-delays"),
])
def test_decide(spec: dict[str, Any], req: Request, expected: tuple[str, float]) -> None:
    assert decide(job(**spec), req) == expected


@pytest.mark.parametrize("text, seconds", [
    pytest.param("10m", 600.0, id="minutes"), pytest.param("1h2m3s", 3723.0, id="compound"),
    pytest.param("500ms", 0.5, id="millis"), pytest.param("", 0.0, id="empty"),
    pytest.param("ten minutes", 0.0, id="nonsense"),
])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
