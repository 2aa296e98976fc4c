"""Settings of the live scheduler, grouped by the part that reads them; defaults are Volcano's.

Plain frozen dataclasses: the CLI builds them from flags, tests build them directly (with short
periods). Nothing here reads the environment or the clock.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SCHEDULER_NAME = "volcano"  # Volcano's --scheduler-name
DEFAULT_LEASE_NAMESPACE = "volcano-system"  # where Volcano keeps its leader lock


@dataclass(frozen=True, slots=True)
class ClientSettings:
    context: str = ""  # kubeconfig context ("" = current)
    qps: float = 2000.0  # Volcano's scheduler --kube-api-qps
    burst: int = 2000  # --kube-api-burst
    request_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class InformerSettings:
    watch_timeout_s: int = 300  # server-side end of each watch; the informer then resumes from its RV
    backoff_initial_s: float = 0.2  # first wait after a failed list/watch
    backoff_max_s: float = 5.0  # the wait doubles up to this
    sync_timeout_s: float = 60.0  # how long the scheduler waits for the first complete list


@dataclass(frozen=True, slots=True)
class LeaderSettings:
    enabled: bool = False
    namespace: str = DEFAULT_LEASE_NAMESPACE
    name: str = DEFAULT_SCHEDULER_NAME  # Volcano names the lock after the scheduler
    identity: str = ""  # "" = hostname + random suffix
    lease_duration_s: float = 15.0  # Volcano / client-go defaults
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


@dataclass(frozen=True, slots=True)
class ApplySettings:
    bind_workers: int = 16  # parallel bind calls (Volcano binds asynchronously too)
    attempts: int = 4  # tries per write on transient errors and conflicts
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 2.0
    event_repeat_s: float = 600.0  # the same event for the same pod is repeated at most this often
    write_events: bool = True


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    period_s: float = 1.0  # Volcano's --schedule-period
    once: bool = False
    policy: str | None = None
    conf: str | None = None
    record: str | None = None  # a folder: every session's snapshot and decisions, for `vpolicy replay`
    metrics_port: int | None = None
    metrics_address: str = "0.0.0.0"  # noqa: S104  # reason: in a pod, Prometheus scrapes from outside
    client: ClientSettings = field(default_factory=ClientSettings)
    informers: InformerSettings = field(default_factory=InformerSettings)
    leader: LeaderSettings = field(default_factory=LeaderSettings)
    apply: ApplySettings = field(default_factory=ApplySettings)
