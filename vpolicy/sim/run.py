"""Several policies over one cluster and workload, side by side: what `vpolicy simulate` runs.

`load_inputs` reads the cluster, the workload (YAML, or a CSV trace by suffix) and checks them against
each other; `resolve_policies` compiles every `--policy`/`--conf` once, so bad input is reported before
anything runs. `run_policies` then simulates each policy on the same expanded workload: in this process
one after the other, or in `parallel` worker processes (spawned, each loading the inputs itself, since
compiled policies are closures that do not pickle). Results come back in the order the policies were
given and are the same either way: every run is deterministic for its seed.

Progress is reported through a callback `(policy index, simulated seconds)`; this module prints nothing.
"""
from __future__ import annotations

import multiprocessing
import queue as queue_module
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from vpolicy.engine.session import CompiledPolicy
from vpolicy.harness import policy as policies
from vpolicy.load.cluster import load_cluster
from vpolicy.model.snapshot import ClusterSnapshot
from vpolicy.sim import record, simulate, trace
from vpolicy.sim import workload as workloads

PolicyKind = Literal["policy", "conf", "default"]
# How often (wall seconds) a worker reports progress: often enough for a smooth bar, rarely enough to be free.
_PROGRESS_EVERY_S = 0.2
_progress_queue: Any = None  # set in each worker process by _init_worker


@dataclass(frozen=True, slots=True)
class PolicyArg:
    kind: PolicyKind
    path: str = ""
    label: str = ""


@dataclass(frozen=True, slots=True)
class Inputs:
    cluster_paths: tuple[str, ...]
    workload_path: str
    seed: int
    period: float
    until: float | None


def label_policies(given: Sequence[tuple[PolicyKind, str]]) -> list[PolicyArg]:
    """Name each policy by its file stem; repeated stems get `-2`, `-3`."""
    out: list[PolicyArg] = []
    seen: dict[str, int] = {}
    for kind, path in given or [("default", "")]:
        stem = Path(path).stem if path else "volcano-default"
        seen[stem] = seen.get(stem, 0) + 1
        out.append(PolicyArg(kind, path, stem if seen[stem] == 1 else f"{stem}-{seen[stem]}"))
    return out


def load_inputs(inputs: Inputs) -> tuple[ClusterSnapshot, workloads.Workload, tuple[workloads.JobSpec, ...]]:
    """The cluster, the workload and its jobs for the seed; bad input raises PolicyError."""
    cluster = load_cluster(list(inputs.cluster_paths))
    if Path(inputs.workload_path).suffix.lower() == ".csv":
        workload = trace.load_trace(inputs.workload_path)
    else:
        workload = workloads.load_workload(inputs.workload_path)
    workloads.check_against(workload, cluster)
    return cluster, workload, workloads.expand(workload, seed=inputs.seed)


def resolve_policy(cluster: ClusterSnapshot, arg: PolicyArg) -> CompiledPolicy:
    if arg.kind == "policy":
        return policies.resolve(cluster, policy=arg.path)
    if arg.kind == "conf":
        return policies.resolve(cluster, conf=arg.path)
    return policies.resolve(cluster)


@dataclass(frozen=True, slots=True)
class Prepared:
    """Inputs read and checked, policies compiled: nothing left that can be the user's mistake."""

    inputs: Inputs
    args: tuple[PolicyArg, ...]
    cluster: ClusterSnapshot
    workload: workloads.Workload
    jobs: tuple[workloads.JobSpec, ...]
    compiled: tuple[CompiledPolicy, ...]

    @property
    def horizon(self) -> float:
        """How far the runs will go: --until, else the workload's duration, else an estimate (for progress)."""
        if self.inputs.until is not None:
            return self.inputs.until
        if self.workload.duration is not None:
            return self.workload.duration
        return max((j.arrival + j.duration for j in self.jobs), default=0.0)


def prepare(inputs: Inputs, args: Sequence[PolicyArg]) -> Prepared:
    """Read everything and compile every policy; bad input raises PolicyError before anything runs."""
    cluster, workload, jobs = load_inputs(inputs)
    return Prepared(inputs, tuple(args), cluster, workload, jobs, tuple(resolve_policy(cluster, a) for a in args))


def run_policies(prepared: Prepared, *, record_dir: str | None = None, parallel: int = 1,
                 progress: Callable[[int, float], None] | None = None) -> list[simulate.RunResult]:
    """Simulate every policy, in order; the results do not depend on `parallel`."""
    inputs, args = prepared.inputs, prepared.args
    if parallel <= 1 or len(args) == 1:
        return [_run(prepared.cluster, prepared.workload, prepared.jobs, prepared.compiled[i], a, inputs, record_dir,
                     _bind(progress, i)) for i, a in enumerate(args)]
    context = multiprocessing.get_context("spawn")
    updates = context.Queue()
    with ProcessPoolExecutor(max_workers=min(parallel, len(args)), mp_context=context,
                             initializer=_init_worker, initargs=(updates,)) as pool:
        futures: list[Future[simulate.RunResult]] = [pool.submit(_worker, inputs, a, i, record_dir)
                                                     for i, a in enumerate(args)]
        while not all(f.done() for f in futures):
            _drain(updates, progress, timeout=0.1)
        _drain(updates, progress, timeout=0.0)
        return [f.result() for f in futures]


def _bind(progress: Callable[[int, float], None] | None, index: int) -> Callable[[float], None] | None:
    if progress is None:
        return None
    return lambda t: progress(index, t)


def _run(cluster: ClusterSnapshot, workload: workloads.Workload, jobs: tuple[workloads.JobSpec, ...],
         compiled: CompiledPolicy, arg: PolicyArg, inputs: Inputs, record_dir: str | None,
         progress: Callable[[float], None] | None) -> simulate.RunResult:
    recorder = None
    if record_dir is not None:
        target = Path(record_dir) / arg.label
        for stale in (target / record.SESSIONS, target / record.META):
            stale.unlink(missing_ok=True)  # a simulation's recording starts afresh
        recorder = record.SessionRecorder(target, policy=arg.path, policy_kind=arg.kind, recorder="simulate",
                                          label=arg.label, flush_every=1_000)
    try:
        return simulate.simulate(cluster, jobs, compiled, workload=workload, label=arg.label, period=inputs.period,
                                 until=inputs.until, recorder=recorder, progress=progress)
    finally:
        if recorder is not None:
            recorder.close()


def _init_worker(updates: Any) -> None:
    global _progress_queue
    _progress_queue = updates


def _worker(inputs: Inputs, arg: PolicyArg, index: int, record_dir: str | None) -> simulate.RunResult:
    cluster, workload, jobs = load_inputs(inputs)
    last = [0.0]

    def report(t: float) -> None:
        now = time.monotonic()
        if now - last[0] >= _PROGRESS_EVERY_S:
            last[0] = now
            _progress_queue.put((index, t))

    result = _run(cluster, workload, jobs, resolve_policy(cluster, arg), arg, inputs, record_dir, report)
    _progress_queue.put((index, result.end))
    return result


def _drain(updates: Any, progress: Callable[[int, float], None] | None, *, timeout: float) -> None:
    try:
        while True:
            index, t = updates.get(timeout=timeout) if timeout else updates.get_nowait()
            if progress is not None:
                progress(index, t)
            timeout = 0.0
    except queue_module.Empty:
        return
