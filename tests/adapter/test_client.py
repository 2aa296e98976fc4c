"""Our error hierarchy at the client boundary, and the write rate limit."""
from __future__ import annotations

import json
import time

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from cluster_adapter.kube import client


def api_exception(status: int, reason: str, *, retry_after: str | None = None, **details: object) -> ApiException:
    exc = ApiException(status=status, reason=reason, body=json.dumps(
        {"kind": "Status", "reason": reason, "message": f"{reason} happened", "details": details}))
    exc.headers = {"Retry-After": retry_after} if retry_after else {}
    return exc


@pytest.mark.parametrize("status, cls, transient", [
    pytest.param(400, client.APIBadRequest, False, id="400-bad-request"),
    pytest.param(403, client.APIUnauthorized, False, id="403-forbidden"),
    pytest.param(404, client.APINotFound, False, id="404-not-found"),
    pytest.param(409, client.APIConflict, False, id="409-conflict"),
    pytest.param(410, client.APIExpired, False, id="410-expired"),
    pytest.param(422, client.APIBadRequest, False, id="422-invalid"),
    pytest.param(429, client.APITooManyRequests, True, id="429-throttled"),
    pytest.param(500, client.APIServerError, True, id="500-internal"),
    pytest.param(503, client.APIServerError, True, id="503-unavailable"),
])
def test_client_errors_become_our_errors_by_kind(status: int, cls: type[client.APIError], transient: bool) -> None:
    err = client.translate(api_exception(status, "Reason"), "bind pod")
    assert type(err) is cls and err.transient is transient and err.status == status
    assert str(err).startswith("bind pod: ") and "Reason happened" in str(err)


def test_retry_after_and_status_details_are_kept() -> None:
    err = client.translate(api_exception(429, "TooManyRequests", retry_after="3",
                                         causes=[{"reason": "DisruptionBudget"}]), "evict pod")
    assert err.retry_after == 3.0 and err.details["causes"] == [{"reason": "DisruptionBudget"}]


def test_no_answer_is_unavailable_and_chained() -> None:
    def refuse() -> None:
        raise urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]  # reason: test double

    with pytest.raises(client.APIUnavailable) as info:
        client.call("list pods", refuse)
    assert info.value.transient and isinstance(info.value.__cause__, urllib3.exceptions.HTTPError)


def test_the_token_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = client.TokenBucket(qps=50, burst=3)
    started = time.monotonic()
    for _ in range(3):
        bucket.take()
    burst = time.monotonic() - started
    for _ in range(5):
        bucket.take()
    assert burst < 0.02 and time.monotonic() - started >= 5 / 50 * 0.9
