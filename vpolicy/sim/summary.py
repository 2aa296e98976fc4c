"""One run's observations (`simulate.RunResult`) -> the numbers of metrics.json, per policy.

Definitions (docs/simulate.md repeats them for readers of the report):

- allocation: CPU cores and GPUs held by pods on nodes (Running or Releasing), averaged over [0, end)
  as a step function; utilization divides by what the ready, schedulable nodes can allocate.
- wait: first start - arrival, for jobs that started (a job starts when `min_available` pods run);
  completion: finish - arrival, for jobs that finished. Jobs already running when the run began are
  left out of both. Percentiles are nearest-rank (`metrics.percentile`).
- starved: jobs that waited longer than `starve_after`, counting a job that never started as waiting
  until the end.
- fairness: the time-weighted mean (and the minimum) of Jain's index over the intervals where it is
  defined (some queue with demand holds something).
- preemption: evicted pods by action, jobs restarted or failed by an eviction, and GPU-hours of work
  thrown away (GPUs x run time of every pod killed by those restarts and failures).

The numbers are rounded for reading (4 decimals, times to 0.1 s); this module does no I/O.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from vpolicy.sim import metrics
from vpolicy.sim.simulate import JobRecord, RunResult

GPU = metrics.GPU
# Whole cores and GPUs from milli-units.
_MILLI = 1000.0


def summarize(run: RunResult, *, starve_after: float) -> dict[str, Any]:
    end = run.end
    samples = run.samples
    cpu_capacity = run.capacity.get("cpu", 0) / _MILLI
    gpu_capacity = run.capacity.get(GPU, 0) / _MILLI
    mean_cpu = metrics.time_weighted_mean([(s.time, s.cpu_allocated / _MILLI) for s in samples], end)
    mean_gpu = metrics.time_weighted_mean([(s.time, s.gpu_allocated / _MILLI) for s in samples], end)
    mean_frag = metrics.time_weighted_mean([(s.time, s.gpu_fragmented / _MILLI) for s in samples], end)
    jains = [(s.time, s.jain) for s in samples]
    counted = [j for j in run.jobs.values() if j.origin != "cluster"]
    queues = sorted({j.queue for j in counted})
    starved = [j for j in counted if _waited(j, end) > starve_after]
    actions = Counter(e.action for e in run.evictions)
    return {
        "label": run.label,
        "source": run.source,
        "sessions": run.sessions,
        "wall_s": _round(run.wall_s, 2),
        "mean_session_ms": _round(run.session_ms / run.sessions if run.sessions else 0.0, 3),
        "end_s": _round(end, 1),
        "capacity": {"cpu_cores": cpu_capacity, "gpus": gpu_capacity},
        "cpu": {"mean_allocated_cores": _round(mean_cpu),
                "mean_utilization": _round(_ratio(mean_cpu, cpu_capacity))},
        "gpu": {"mean_allocated": _round(mean_gpu), "mean_utilization": _round(_ratio(mean_gpu, gpu_capacity)),
                "allocated_gpu_hours": _round((mean_gpu or 0.0) * end / 3600.0),
                "mean_fragmented": _round(mean_frag),
                "max_fragmented": max((s.gpu_fragmented for s in samples), default=0) / _MILLI},
        "fairness": {"mean_jain": _round(metrics.time_weighted_mean(jains, end)),
                     "min_jain": _round(min((v for _t, v in jains if v is not None), default=None))},
        "jobs": {
            "submitted": len(counted),
            "started": sum(1 for j in counted if j.first_start is not None),
            "completed": sum(1 for j in counted if j.finish is not None and not j.failed),
            "failed": sum(1 for j in counted if j.failed),
            "unfinished": sum(1 for j in counted if j.finish is None),
            "restarted": sum(1 for j in run.jobs.values() if j.restarts),
        },
        "wait_s": _stats([j.first_start - j.arrival for j in counted if j.first_start is not None]),
        "completion_s": _stats(_completions(counted)),
        "queues": {q: _queue([j for j in counted if j.queue == q], end, starve_after) for q in queues},
        "preemption": {
            "evicted_pods": len(run.evictions),
            "by_action": dict(sorted(actions.items())),
            "jobs_restarted": sum(j.restarts for j in run.jobs.values()),
            "jobs_failed": sum(1 for j in run.jobs.values() if j.failed),
            "lost_gpu_hours": _round(sum(e.lost_gpu_hours for e in run.evictions)),
        },
        "starvation": {"threshold_s": starve_after, "count": len(starved),
                       "jobs": sorted(j.key for j in starved)},
    }


def _queue(jobs: Sequence[JobRecord], end: float, starve_after: float) -> dict[str, Any]:
    return {
        "jobs": len(jobs),
        "started": sum(1 for j in jobs if j.first_start is not None),
        "completed": sum(1 for j in jobs if j.finish is not None and not j.failed),
        "wait_s": _stats([j.first_start - j.arrival for j in jobs if j.first_start is not None]),
        "completion_s": _stats(_completions(jobs)),
        "starved": sum(1 for j in jobs if _waited(j, end) > starve_after),
    }


def _completions(jobs: Sequence[JobRecord]) -> list[float]:
    return [j.finish - j.arrival for j in jobs if j.finish is not None and not j.failed]


def _waited(job: JobRecord, end: float) -> float:
    return (job.first_start if job.first_start is not None else end) - job.arrival


def _stats(values: Sequence[float]) -> dict[str, float | None]:
    return {"count": len(values), "p50": _round(metrics.percentile(values, 50), 1),
            "p95": _round(metrics.percentile(values, 95), 1), "max": _round(metrics.percentile(values, 100), 1)}


def _ratio(value: float | None, capacity: float) -> float | None:
    return None if value is None or capacity == 0 else value / capacity


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
