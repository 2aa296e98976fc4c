"""The live loop: snapshot -> `vpolicy.run_session` -> apply the decisions, once per period.

A session runs over the informer cache's snapshot (the same snapshot `vpolicy dry-run` builds from a
dump) with the compiled policy; its decisions are applied in Volcano's order: evictions, binds (in
parallel), pod conditions and the nominated nodes of preemptors, PodGroup and Queue status, then Events
(pods' and PodGroups').

Guarantees (DESIGN §8):
- **never applied twice**: binds and evictions carry the pod uid as a precondition, a bind that
  conflicts is judged from the server's pod (bound to our node = done), and applied binds and
  evictions are *assumed* in the cache until the watch confirms them, so the next session does not
  decide them again;
- **never lost silently**: a decision that cannot be applied leaves the object as it was (the pod
  pending, the victim running) — the next session decides again from fresh state — and is reported
  as an Event on the pod, a log line and a metric; a status write (pod, PodGroup, Queue) that fails is
  logged and counted, and never stops the session's other writes; an API error that still escapes
  applying fails that session only, never the loop;
- **written onto what the session saw**: a PodGroup status goes only to the object with the uid of
  the snapshot's (not to one re-created under its name), a Queue status never carries `state` (the
  queue controller's), and a preemptor is nominated only when the evictions made for it went through;
- **only the leader writes**: with `--leader-elect` every write first asks the elector; losing the
  lease stops the remaining writes of the session at once and ends the loop (exit code 3);
- pods are bound only if their `schedulerName` is this scheduler's; derived pods and PodGroups (a
  vcjob not processed by the job controller yet) exist only in the snapshot and are skipped.

This module decides nothing about placement (the engine does) and makes no API call itself (the
`kube` package does); it owns ordering, bookkeeping, metrics, and the period.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import vpolicy
from cluster_adapter import convert
from cluster_adapter.cache import ObjectCache
from cluster_adapter.config import SchedulerSettings
from cluster_adapter.kube import retry
from cluster_adapter.kube.binder import Binder, BindResult
from cluster_adapter.kube.client import SCHEDULER_RESOURCES, APIError, KubeClient
from cluster_adapter.kube.events import EventRecorder
from cluster_adapter.kube.evictor import Evictor
from cluster_adapter.kube.informers import Informer
from cluster_adapter.kube.leader import LeaderElector
from cluster_adapter.kube.status import StatusWriter
from cluster_adapter.kube.volumes import VolumeWriter
from cluster_adapter.metrics import Metrics
from cluster_adapter.node_metrics import NodeMetrics
from cluster_adapter.timestamps import local_zone
from vpolicy.model import decisions as model_decisions
from vpolicy.model.numa import NumaHold
from vpolicy.model.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)

EXIT_OK, EXIT_BAD_INPUT, EXIT_LOST_LEASE = 0, 1, 3


class _Event(NamedTuple):
    """An Event to write about an object (`involved`: its apiVersion and kind, `convert.POD`, ...)."""

    involved: tuple[str, str]
    namespace: str
    name: str
    uid: str
    reason: str
    message: str
    type: str


@dataclass(slots=True)
class SessionReport:
    """What one session decided and what of it reached the API."""

    bound: list[str] = field(default_factory=list)
    bind_failed: dict[str, str] = field(default_factory=dict)
    evicted: list[str] = field(default_factory=list)
    evict_failed: dict[str, str] = field(default_factory=dict)
    nominated: list[str] = field(default_factory=list)
    pod_conditions: list[str] = field(default_factory=list)  # pods whose PodScheduled condition was written
    podgroups_written: list[str] = field(default_factory=list)
    queues_written: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # key -> why no write was attempted
    # "<resource>/<key>" (pods/ns/name, podgroups/ns/name, queues/name) -> the API error that refused its status
    status_failed: dict[str, str] = field(default_factory=dict)
    not_applied: list[str] = field(default_factory=list)  # cut short by losing the lease
    events: int = 0
    session_ms: float = 0.0
    apply_ms: float = 0.0
    document: dict[str, Any] = field(default_factory=dict)


class PolicySource:
    """The compiled policy from `--policy`/`--conf`, compiled again when the file changes.

    A change that does not compile keeps the previous policy (and logs why): a typo in a ConfigMap
    must not stop a running scheduler. The first load raises `PolicyError`.
    """

    def __init__(self, *, policy: str | None, conf: str | None) -> None:
        self.policy, self.conf = policy, conf
        self._path = policy or conf
        self._mtime: float | None = None
        self._compiled: Any = None

    def get(self) -> Any:
        mtime = self._stat()
        if self._compiled is None or mtime != self._mtime:
            try:
                compiled = vpolicy.resolve_policy(None, policy=self.policy, conf=self.conf)
            except vpolicy.PolicyError as exc:
                if self._compiled is None:
                    raise
                log.error("policy %s changed but does not load; keeping the previous one: %s", self._path,
                          "; ".join(d.one_line() for d in exc.diagnostics))
                self._mtime = mtime
                return self._compiled
            if self._compiled is not None:
                log.info("policy %s reloaded", self._path)
            for warning in compiled.warnings:  # a plugin or setting left out: decisions differ from Volcano's there
                log.warning("policy %s: %s", self._path or "<volcano default>", warning)
            self._compiled, self._mtime = compiled, mtime
        return self._compiled

    def _stat(self) -> float | None:
        if not self._path:
            return None
        try:
            return os.stat(self._path).st_mtime
        except OSError:
            return self._mtime


class Scheduler:
    def __init__(self, client: KubeClient, settings: SchedulerSettings, *, metrics: Metrics | None = None,
                 stop: threading.Event | None = None, wall: Callable[[], float] = time.time) -> None:
        self.client, self.settings = client, settings
        self.metrics = metrics or Metrics()
        self.stop = stop or threading.Event()
        self.wall = wall
        self.cache = ObjectCache()
        self.policy = PolicySource(policy=settings.policy, conf=settings.conf)
        self.recorder: Any = None
        if settings.record:
            self.recorder = vpolicy.SessionRecorder(settings.record, policy=settings.policy or settings.conf or "",
                                                    policy_kind="policy" if settings.policy else "conf")
        self.lost_lease = threading.Event()
        self.elector: LeaderElector | None = None
        if settings.leader.enabled:
            self.elector = LeaderElector(client, settings.leader, on_lost=self._on_lost,
                                         on_error=self.metrics.api_error)
        gate = self.elector.is_leader if self.elector else retry.always
        on_error = self.metrics.api_error
        self.binder = Binder(client, settings.apply, gate=gate, on_error=on_error)
        self.volumes = VolumeWriter(client, settings.apply, gate=gate, on_error=on_error)
        self.evictor = Evictor(client, settings.apply, gate=gate, on_error=on_error)
        self.status = StatusWriter(client, settings.apply, gate=gate, on_error=on_error)
        self.events = EventRecorder(client, settings.apply, clock=time.monotonic, gate=gate, on_error=on_error)
        self.informers: list[Informer] = []
        self.instance = self.elector.identity if self.elector else f"{os.uname().nodename}_{uuid.uuid4().hex[:8]}"
        self.sessions = 0
        # when each `every` rule last ran (tdm's evict period, rescheduling's interval): process-wide, as
        # Volcano keeps lastEvictAt and util's last-executed times
        self.rule_runs: dict[str, float] = {}
        self.started = wall()  # `every ... from start` rules count their first period from here
        # numa-aware's CPUs and GPUs of pods bound by earlier sessions that their nodes' Numatopologies do
        # not show yet: process-wide, as Volcano's cache keeps them (OnSessionClose -> UpdateSchedulerNumaInfo)
        self.numa_holds: tuple[NumaHold, ...] = ()
        # node usage from the conf's `metrics` source (usage, rescheduling), started with the first session
        self.node_metrics: NodeMetrics | None = None
        self._node_names: list[str] = []

    # lifecycle --------------------------------------------------------------------------------------
    def start_informers(self) -> None:
        for resource in SCHEDULER_RESOURCES:
            self.informers.append(Informer(self.client, resource, self.cache, self.settings.informers,
                                           stop=self.stop, on_error=self.metrics.api_error).start())

    def wait_synced(self, timeout_s: float | None = None) -> bool:
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self.settings.informers.sync_timeout_s)
        for informer in self.informers:
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                log.error("informer %s did not list within the sync timeout", informer.resource.name)
                return False
        return True

    def run(self) -> int:
        """Schedule until stopped (SIGTERM) or, with leader election, until the lease is lost."""
        self.policy.get()  # a bad policy fails before anything starts
        self.start_informers()
        if not self.wait_synced():
            return EXIT_BAD_INPUT
        if self.elector is not None:
            if not self.elector.acquire(self.stop):
                return EXIT_OK
            self.elector.start_renewing(self.stop)
        self.metrics.leader.set(1)
        try:
            while not self.stop.is_set() and not self.lost_lease.is_set():
                started = time.monotonic()
                self.run_once()
                if self.settings.once or self.lost_lease.is_set():
                    break
                self.stop.wait(max(0.0, self.settings.period_s - (time.monotonic() - started)))
        finally:
            self.metrics.leader.set(0)
            if self.elector is not None and not self.lost_lease.is_set():
                self.elector.release()
            if self.recorder is not None:
                self.recorder.close()
            self.stop.set()
        return EXIT_LOST_LEASE if self.lost_lease.is_set() else EXIT_OK

    def _on_lost(self) -> None:
        self.lost_lease.set()
        self.metrics.leader.set(0)
        self.stop.set()  # wake the loop now rather than after the period

    # one session ------------------------------------------------------------------------------------
    def run_once(self) -> SessionReport:
        report = SessionReport()
        try:
            snapshot = self.cache.snapshot()
            for warning in snapshot.warnings:
                log.debug("snapshot: %s", warning)
            snapshot = self._with_node_usage(snapshot)
            if self.numa_holds:
                snapshot = dataclasses.replace(snapshot, numa_holds=self.numa_holds)
            now = self.wall()
            result = vpolicy.run_session(snapshot, self.policy.get(), now=now,
                                         scheduler_names=(self.settings.scheduler_name,),
                                         last_runs=self.rule_runs, timezone=local_zone(now),
                                         started=self.started)
        except Exception:  # noqa: BLE001  # reason: one failed session must not end the scheduler
            log.exception("session failed")
            self.metrics.sessions.labels(result="error").inc()
            return report
        decided = result.decisions
        self.rule_runs.update(decided.rule_runs)
        self.numa_holds = decided.numa_holds
        if self.recorder is not None:
            self.recorder.write(snapshot, decided, now=self.wall())
        report.document = decided.to_document()
        session_ms = decided.stats.get("session_ms")
        report.session_ms = float(session_ms) if isinstance(session_ms, (int, float)) else 0.0
        self.metrics.observe_stats(decided.stats)
        self._record_pending(snapshot, decided)
        started = time.monotonic()
        try:
            self.apply(decided, report, snapshot=snapshot)
            self.metrics.sessions.labels(result="ok").inc()
        except retry.NotLeader:
            log.warning("lost the lease while applying; %d decisions left to the next leader",
                        len(report.not_applied))
            self.metrics.sessions.labels(result="lost-lease").inc()
        except APIError as exc:  # each write handles its own; this net keeps a missed one from ending the loop
            log.error("applying the session stopped part way (the next session decides again): %s", exc)
            self.metrics.sessions.labels(result="error").inc()
        report.apply_ms = (time.monotonic() - started) * 1000
        self.metrics.apply_seconds.observe(report.apply_ms / 1000)
        self.sessions += 1
        log.info("session %d: %d bound, %d evicted, %d bind failures, %d pending, %.0f ms + %.0f ms apply",
                 self.sessions, len(report.bound), len(report.evicted), len(report.bind_failed),
                 len(decided.unschedulable), report.session_ms, report.apply_ms)
        return report

    def _with_node_usage(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """The snapshot with each node's load from the conf's metrics source (Volcano's cache keeps
        NodeInfo.ResourceUsage the same way); the source's thread starts with the first session."""
        self._node_names = [n.name for n in snapshot.nodes]
        if self.node_metrics is None:
            metrics = getattr(self.policy.get(), "metrics", {}) or {}
            self.node_metrics = NodeMetrics(
                metrics, get_json=lambda path: self.client._json("GET", path, verb="get custom metrics"))
            if self.node_metrics.enabled:
                log.info("node metrics: %s at %s every %.0f s", metrics.get("type") or "prometheus",
                         metrics.get("address", "the API server"), self.node_metrics.interval_s)
                self.node_metrics.refresh(self._node_names)  # the first session already sees them
                self.node_metrics.run(lambda: self._node_names, self.stop, first_wait=True)
        return self.node_metrics.with_usage(snapshot)

    def apply(self, decided: model_decisions.Decisions, report: SessionReport, *, snapshot: ClusterSnapshot) -> None:
        """Write `decided`, made over `snapshot`, to the API. The snapshot says which objects the session
        saw: their uids, which job each pod belongs to and which node each victim was on."""
        session_id = uuid.uuid4().hex
        now = self.wall()
        pending_work = [e.pod for e in decided.evictions] + list(decided.binds)
        report.not_applied = list(pending_work)
        self._evict(decided, report, now)
        self._bind(decided, report, now)
        report.not_applied = []
        self._write_pods(decided, report, now, nominated=self._nominations(decided, report, snapshot))
        seen_uids = {g.key: g.uid for g in snapshot.podgroups}
        podgroup_events = self._podgroup_events(decided, seen_uids)
        self._write_podgroups(decided, report, now, session_id, seen_uids)
        for name, entry in sorted(decided.queues.items()):
            self._write_queue(name, entry, report)
        self._send_events(self._unschedulable_events(decided) + podgroup_events, report, now)

    # the parts of apply -----------------------------------------------------------------------------
    def _evict(self, decided: model_decisions.Decisions, report: SessionReport, now: float) -> None:
        for eviction in decided.evictions:
            pod = self._pod(eviction.pod)
            if pod is None:
                report.skipped[eviction.pod] = "victim no longer in the cache"
                report.not_applied.remove(eviction.pod)
                continue
            outcome = self.evictor.evict(pod)
            report.not_applied.remove(eviction.pod)
            uid = pod["metadata"].get("uid", "")
            ns, name = convert.split_key(eviction.pod)
            if outcome.ok:
                report.evicted.append(eviction.pod)
                self.cache.assume_evicted(ns, name, uid=uid)
                self.metrics.pods_evicted.labels(action=eviction.action).inc()
                self._event(ns, name, uid, "Evict", f"Pod is evicted by {eviction.action} for podgroup "
                                                    f"{eviction.for_job} ({eviction.rule})", "Warning", now, report)
            else:
                report.evict_failed[eviction.pod] = outcome.reason
                self.metrics.evict_failures.labels(reason="pdb" if outcome.blocked else "error").inc()
                self._event(ns, name, uid, "FailedEvict", outcome.reason, "Warning", now, report)

    def _bind(self, decided: model_decisions.Decisions, report: SessionReport, now: float) -> None:
        work: list[tuple[str, str, dict[str, Any]]] = []
        for key, node in sorted(decided.binds.items()):
            pod = self._pod(key)
            why = self._why_not_bind(pod)
            if why:
                report.skipped[key] = why
                report.not_applied.remove(key)
                if pod is not None:
                    self.metrics.bind_failures.labels(reason="skipped").inc()
                continue
            assert pod is not None
            work.append((key, node, pod))
        if not work:
            return
        workers = max(1, min(self.settings.apply.bind_workers, len(work)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind") as pool:
            results = list(pool.map(lambda w: self._bind_one(w[2], w[1], decided.annotations.get(w[0]),
                                                             decided.volume_bindings.get(w[0])), work))
        lost = False
        events: list[_Event] = []
        for (key, node, pod), result in zip(work, results):
            if result is None:  # the gate closed before this bind
                lost = True
                continue
            report.not_applied.remove(key)
            ns, name = convert.split_key(key)
            uid = pod["metadata"].get("uid", "")
            if result.ok:
                report.bound.append(key)
                self.cache.assume_bound(ns, name, uid=uid, node=node)
                self.metrics.pods_bound.inc()
                events.append(_Event(convert.POD, ns, name, uid, "Scheduled", f"Successfully assigned {key} to {node}",
                                     "Normal"))
            else:
                report.bind_failed[key] = result.reason
                self.metrics.bind_failures.labels(reason="retry" if result.retry_next_session else "final").inc()
                events.append(_Event(convert.POD, ns, name, uid, "FailedScheduling", result.reason, "Warning"))
        # one POST per bind, in parallel as the binds (one at a time, 630 of them took three minutes of a
        # session against a real API server on a busy machine, benchmarks.live found)
        self._send_events(events, report, now)
        if lost:
            raise retry.NotLeader("lost the lease during binding")

    def _bind_one(self, pod: dict[str, Any], node: str, annotations: dict[str, str] | None,
                  volumes: dict[str, str] | None = None) -> BindResult | None:
        """The bind's result; None when the gate closed first. An API error that escapes the binder
        (which turns the ones it expects into results) becomes a failed result too: raised inside the
        pool it would hide every other bind's outcome, and binds that went through would go unrecorded.
        The pod's delayed claims are bound first (`VolumeWriter`); if that fails, the pod is not bound."""
        try:
            if volumes:
                why = self.volumes.write(volumes, node, self.cache.get)
                if why:
                    meta = pod.get("metadata") or {}
                    return BindResult(f"{meta.get('namespace', '')}/{meta.get('name', '')}", node, False, why,
                                      retry_next_session=True)
            return self.binder.bind(pod, node, annotations)
        except retry.NotLeader:
            return None
        except APIError as exc:
            meta = pod.get("metadata") or {}
            return BindResult(f"{meta.get('namespace', '')}/{meta.get('name', '')}", node, False,
                              f"binding to {node} failed: {exc}", exc, retry_next_session=True)

    def _why_not_bind(self, pod: dict[str, Any] | None) -> str:
        if pod is None:
            return "not in the API (a pod derived from a vcjob the job controller has not created yet)"
        spec = pod.get("spec") or {}
        if not self._ours(pod):
            return f"schedulerName is {spec.get('schedulerName')!r}, not {self.settings.scheduler_name!r}"
        if spec.get("nodeName"):
            return f"already bound to {spec['nodeName']}"
        return ""

    def _ours(self, pod: dict[str, Any]) -> bool:
        """Whether the pod names this scheduler (an unwritten schedulerName counts as ours, as in the engine)."""
        name = (pod.get("spec") or {}).get("schedulerName") or self.settings.scheduler_name
        return bool(name == self.settings.scheduler_name)

    def _nominations(self, decided: model_decisions.Decisions, report: SessionReport,
                     snapshot: ClusterSnapshot) -> dict[str, str]:
        """The session's nominated preemptors, less those for which an eviction failed this session (a
        PodDisruptionBudget's 429, an error): their nomination would say that room is being released
        when it is not. Evictions name the preemptor's job, not its pod, so an eviction counts as made
        for a pod when it is for the pod's job on the pod's node. Such a pod keeps its PodScheduled=False
        condition, and the next session decides again."""
        node_of = {p.key: p.node_name for p in snapshot.pods}
        refused = {(e.for_job, node_of.get(e.pod, "")) for e in decided.evictions if e.pod in report.evict_failed}
        if not refused:
            return dict(decided.nominated)
        job_of = {p.key: f"{p.namespace}/{p.group}" for p in snapshot.pods if p.group}
        return {key: node for key, node in decided.nominated.items() if (job_of.get(key), node) not in refused}

    def _write_pods(self, decided: model_decisions.Decisions, report: SessionReport, now: float, *,
                    nominated: dict[str, str]) -> None:
        """The PodScheduled=False condition of every pod of ours left unbound, with the `nominated` node
        of a preemptor whose evictions made its room, in one status patch per pod that changed (in
        parallel, as binds: a first session over a large backlog writes one per pending pod)."""
        work: list[tuple[str, dict[str, Any]]] = []
        for key in sorted(set(decided.pod_conditions) | set(nominated)):
            pod = self._pod(key)
            if pod is None or not self._ours(pod):
                continue
            changes = convert.pod_status_changes(pod, condition=decided.pod_conditions.get(key),
                                                 nominated=nominated.get(key), now=now)
            if changes:
                work.append((key, changes))
        if not work:
            return
        workers = max(1, min(self.settings.apply.bind_workers, len(work)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pod-status") as pool:
            answers = list(pool.map(lambda w: self._patch_pod_status(*w), work))
        for (key, changes), written in zip(work, answers):
            if isinstance(written, APIError):
                self._status_failed("pods", key, written, report)
                continue
            if written is None:
                continue
            self.cache.apply_newer("pods", written)
            self.metrics.status_writes.labels(kind="pod").inc()
            if "nominatedNodeName" in changes:
                report.nominated.append(key)
            if "conditions" in changes:
                report.pod_conditions.append(key)

    def _patch_pod_status(self, key: str, changes: dict[str, Any]) -> dict[str, Any] | APIError | None:
        """The pod's new object, None (nothing written), or the API error that refused the patch —
        returned, not raised, so that one pod's refusal does not cost the other pods their writes."""
        try:
            return self.status.pod(*convert.split_key(key), changes)
        except APIError as exc:
            return exc

    def _write_podgroups(self, decided: model_decisions.Decisions, report: SessionReport, now: float,
                         session_id: str, seen_uids: dict[str, str]) -> None:
        """Every PodGroup status the session changed, in parallel as binds (a first session over a large
        backlog writes one per gang: one at a time, 1,000 of them took minutes against a real API server,
        benchmarks.live found), recorded in the order of the keys."""
        items = sorted(decided.podgroups.items())
        if not items:
            return
        workers = max(1, min(self.settings.apply.bind_workers, len(items)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="podgroup-status") as pool:
            outcomes = list(pool.map(lambda item: self._podgroup_write(
                item[0], item[1], now, session_id, seen_uid=seen_uids.get(item[0])), items))
        for (key, _), outcome in zip(items, outcomes):
            if isinstance(outcome, str):
                report.skipped[key] = outcome
            elif isinstance(outcome, APIError):
                self._status_failed("podgroups", key, outcome, report)
            else:
                self._status_written("podgroups", key, outcome, report.podgroups_written)

    def _podgroup_write(self, key: str, status: model_decisions.PodGroupStatus, now: float, session_id: str, *,
                        seen_uid: str | None) -> dict[str, Any] | APIError | str | None:
        """The status the session computed for the PodGroup it saw (`seen_uid`), onto that object only: one
        deleted and created again under its name (a vcjob restart) is left to the next session. Returns the
        written object (None: nothing to write), the API's refusal, or why it was skipped."""
        ns, name = convert.split_key(key)
        current = self.cache.get("podgroups", ns, name)
        if current is None:
            return None
        if current["metadata"].get("uid") != seen_uid:
            return "podgroup re-created since the session's snapshot: left to the next session"

        def status_for(obj: dict[str, Any]) -> dict[str, Any] | None:
            held = obj.get("status") or {}
            desired = convert.podgroup_status(status, held, now=now, session_id=session_id)
            return desired if convert.status_changed(desired, held) else None

        try:
            return self.status.podgroup(current, status_for)
        except retry.NotLeader:
            raise
        except APIError as exc:
            return exc

    def _write_queue(self, name: str, entry: dict[str, Any], report: SessionReport) -> None:
        """The Queue status fields the session changed (allocated, podgroup counters; never `state`)."""
        current = self.cache.get("queues", "", name)
        if current is None:
            return
        changes = convert.changed_fields(convert.queue_status(entry), current.get("status") or {})
        try:
            written = self.status.queue(name, changes)
        except APIError as exc:
            self._status_failed("queues", name, exc, report)
            return
        self._status_written("queues", name, written, report.queues_written)

    def _status_written(self, resource: str, key: str, written: dict[str, Any] | None, done: list[str]) -> None:
        """Record a status write the API took (`written`, the object it returned; None: nothing to write):
        the cache holds the new object, the report and the metric count it."""
        if written is None:
            return
        self.cache.apply_newer(resource, written)
        done.append(key)
        self.metrics.status_writes.labels(kind=resource.removesuffix("s")).inc()

    def _status_failed(self, resource: str, key: str, exc: APIError, report: SessionReport) -> None:
        """Report a status write the API refused: a log line, a count, and the session report. It is not
        retried here: the object keeps its old status, which still differs from what the next session
        computes, so that session writes it again."""
        log.warning("%s %s: status not written (the next session writes it again): %s", resource, key, exc)
        self.metrics.status_write_failures.labels(kind=resource.removesuffix("s")).inc()
        report.status_failed[f"{resource}/{key}"] = str(exc)

    def _podgroup_events(self, decided: model_decisions.Decisions, seen_uids: dict[str, str]) -> list[_Event]:
        """The Events Volcano records on PodGroups at a session's end, read before their status is
        written: `Unschedulable` (Warning, the gang's condition message) for every podgroup that is not
        ready, and `Scheduled` ("pod group is ready") for one that becomes Running in this session.
        (Volcano records the second every session for every ready podgroup and lets the API's event
        aggregation count them; once per transition says the same without a write per running job.)
        Only about the PodGroups the session saw (`seen_uids`), as their status."""
        events: list[_Event] = []
        for key, status in sorted(decided.podgroups.items()):
            ns, name = convert.split_key(key)
            current = self.cache.get("podgroups", ns, name)
            if current is None:
                continue  # derived from a vcjob the controller has not processed: no object to attach to
            uid = current["metadata"].get("uid", "")
            if uid != seen_uids.get(key):
                continue  # re-created since the snapshot: the session's verdict is about its predecessor
            if status.phase in ("Pending", "Inqueue", "Unknown"):
                message = next((c["message"] for c in status.conditions if c.get("type") == "Unschedulable"), "")
                if message:
                    events.append(_Event(convert.PODGROUP, ns, name, uid, "Unschedulable", message, "Warning"))
            elif status.phase == "Running" and (current.get("status") or {}).get("phase") != "Running":
                events.append(_Event(convert.PODGROUP, ns, name, uid, "Scheduled", "pod group is ready", "Normal"))
        return events

    def _unschedulable_events(self, decided: model_decisions.Decisions) -> list[_Event]:
        """`FailedScheduling` with the reasons, for every pending pod of ours."""
        events: list[_Event] = []
        for key, reasons in sorted(decided.unschedulable.items()):
            pod = self._pod(key)
            if pod is None or not self._ours(pod):
                continue
            ns, name = convert.split_key(key)
            events.append(_Event(convert.POD, ns, name, pod["metadata"].get("uid", ""), "FailedScheduling",
                                 "; ".join(reasons) or "not scheduled", "Warning"))
        return events

    def _send_events(self, events: list[_Event], report: SessionReport, now: float) -> None:
        """The session's closing Events, a few at a time (each is one POST; the recorder drops repeats)."""
        if not events:
            return
        workers = max(1, min(self.settings.apply.bind_workers, len(events)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="events") as pool:
            written = list(pool.map(lambda e: self._event(e.namespace, e.name, e.uid, e.reason, e.message, e.type,
                                                          now, None, involved=e.involved), events))
        report.events += sum(written)

    def _event(self, ns: str, name: str, uid: str, reason: str, message: str, event_type: str, now: float,
               report: SessionReport | None, *, involved: tuple[str, str] = convert.POD) -> bool:
        event = convert.object_event(involved=involved, namespace=ns, name=name, uid=uid, reason=reason,
                                     message=message, event_type=event_type, now=now, instance=self.instance)
        try:
            written = self.events.record(uid or f"{ns}/{name}", event)
        except retry.NotLeader:
            return False
        if written:
            self.metrics.events.labels(reason=reason).inc()
            if report is not None:
                report.events += 1
        return written

    def _pod(self, key: str) -> dict[str, Any] | None:
        ns, name = convert.split_key(key)
        return self.cache.get("pods", ns, name)

    def _record_pending(self, snapshot: ClusterSnapshot, decided: model_decisions.Decisions) -> None:
        queue_of = {g.key: g.queue for g in snapshot.podgroups}
        group_of = {p.key: f"{p.namespace}/{p.group}" for p in snapshot.pods if p.group}
        counts = Counter(queue_of.get(group_of.get(key, ""), "") or "none" for key in decided.unschedulable)
        self.metrics.set_pending(dict(counts))
