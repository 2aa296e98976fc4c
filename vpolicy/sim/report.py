"""What `vpolicy simulate --out DIR` writes, and the summary it prints.

- `DIR/metrics.json`: the inputs (cluster, workload, seed, period) and `summary.summarize` per policy.
- `DIR/<policy>/timeline.csv` (cluster over time), `queues.csv` (per queue over time), `jobs.csv`
  (one row per job: arrival, start, finish, wait, completion).
- `DIR/*.png` (`vpolicy.sim.plots`) and `DIR/index.html`, one page that shows them with the numbers.
- `print_summary`: one rich table per run set, a column per policy.

Formatting only; the numbers come from `summary`, the plots from `plots`.
"""
from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any, Sequence, TextIO

from rich.table import Table

from vpolicy.harness import report as reporters
from vpolicy.sim import plots
from vpolicy.sim.simulate import RunResult
from vpolicy.sim.workload import Workload, format_duration

GPU = "nvidia.com/gpu"


def write_report(out: str | Path, runs: Sequence[RunResult], summaries: Sequence[dict[str, Any]], *,
                 inputs: dict[str, Any], workload: Workload) -> list[Path]:
    """Write every file of the report; returns their paths (metrics.json first, index.html last)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    document = {"inputs": inputs, "workload": {"name": workload.name, "file": workload.file,
                                               "description": workload.description.strip()},
                "policies": {s["label"]: s for s in summaries}}
    written = [root / "metrics.json"]
    written[0].write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for run in runs:
        folder = root / run.label
        folder.mkdir(exist_ok=True)
        written += [_timeline_csv(folder / "timeline.csv", run), _queues_csv(folder / "queues.csv", run),
                    _jobs_csv(folder / "jobs.csv", run)]
    images = plots.write_plots(root, runs, summaries)
    written += [root / name for name in images]
    index = root / "index.html"
    index.write_text(_html(document, runs, images), encoding="utf-8")
    written.append(index)
    return written


def print_summary(summaries: Sequence[dict[str, Any]], out: TextIO) -> None:
    console = reporters.console(out, width=34 + 46 * max(len(summaries), 1), highlight=False)
    table = Table(title="Simulation summary", title_justify="left")
    table.add_column("metric")
    for s in summaries:
        table.add_column(s["label"], justify="right")
    for name, cell in _ROWS:
        table.add_row(name, *(cell(s) for s in summaries))
    console.print(table)
    queues = sorted({q for s in summaries for q in s["queues"]})
    if queues:
        per_queue = Table(title="Wait per queue (p50 / p95 / max) and starved jobs", title_justify="left")
        per_queue.add_column("queue")
        for s in summaries:
            per_queue.add_column(s["label"], justify="right")
        for q in queues:
            per_queue.add_row(q, *(_queue_cell(s["queues"].get(q)) for s in summaries))
        console.print(per_queue)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _dur(value: float | None) -> str:
    return "-" if value is None else format_duration(value)


def _queue_cell(q: dict[str, Any] | None) -> str:
    if q is None:
        return "-"
    w = q["wait_s"]
    return f"{_dur(w['p50'])} / {_dur(w['p95'])} / {_dur(w['max'])}  ({q['starved']} starved)"


_ROWS: list[tuple[str, Any]] = [
    ("sessions (mean ms)", lambda s: f"{s['sessions']} ({s['mean_session_ms']:.0f})"),
    ("CPU utilization", lambda s: _pct(s["cpu"]["mean_utilization"])),
    ("GPU utilization", lambda s: _pct(s["gpu"]["mean_utilization"])),
    ("GPU-hours allocated", lambda s: _num(s["gpu"]["allocated_gpu_hours"], 1)),
    ("fragmented GPUs (mean / max)", lambda s: f"{_num(s['gpu']['mean_fragmented'])} / "
                                               f"{_num(s['gpu']['max_fragmented'], 0)}"),
    ("fairness (Jain, mean / min)", lambda s: f"{_num(s['fairness']['mean_jain'], 3)} / "
                                              f"{_num(s['fairness']['min_jain'], 3)}"),
    ("jobs completed / submitted", lambda s: f"{s['jobs']['completed']} / {s['jobs']['submitted']}"),
    ("wait p50 / p95 / max", lambda s: f"{_dur(s['wait_s']['p50'])} / {_dur(s['wait_s']['p95'])} / "
                                       f"{_dur(s['wait_s']['max'])}"),
    ("completion p50 / p95", lambda s: f"{_dur(s['completion_s']['p50'])} / {_dur(s['completion_s']['p95'])}"),
    ("starved jobs", lambda s: f"{s['starvation']['count']} (> {_dur(s['starvation']['threshold_s'])})"),
    ("evicted pods", lambda s: str(s["preemption"]["evicted_pods"])),
    ("jobs restarted / failed", lambda s: f"{s['preemption']['jobs_restarted']} / {s['preemption']['jobs_failed']}"),
    ("lost GPU-hours", lambda s: _num(s["preemption"]["lost_gpu_hours"])),
    ("wall time", lambda s: f"{s['wall_s']:.1f} s"),
]


def _timeline_csv(path: Path, run: RunResult) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["time_s", "cpu_allocated_cores", "memory_allocated_gib", "gpu_allocated", "gpu_fragmented",
                      "pending_jobs", "running_jobs", "jain"])
        for s in run.samples:
            out.writerow([_g(s.time), _g(s.cpu_allocated / 1000), _g(round(s.memory_allocated / 2**30, 3)),
                          _g(s.gpu_allocated / 1000), _g(s.gpu_fragmented / 1000), s.pending_jobs, s.running_jobs,
                          "" if s.jain is None else _g(round(s.jain, 6))])
    return path


def _queues_csv(path: Path, run: RunResult) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["time_s", "queue", "cpu_allocated_cores", "gpu_allocated", "cpu_requested_cores",
                      "gpu_requested", "pending_jobs", "running_jobs"])
        for s in run.samples:
            for name, q in s.queues.items():
                out.writerow([_g(s.time), name, _g(q.allocated.get("cpu", 0) / 1000),
                              _g(q.allocated.get(GPU, 0) / 1000),
                              _g(q.request.get("cpu", 0) / 1000), _g(q.request.get(GPU, 0) / 1000), q.pending_jobs,
                              q.running_jobs])
    return path


def _jobs_csv(path: Path, run: RunResult) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["job", "queue", "origin", "pods", "gpus_per_pod", "arrival_s", "first_start_s", "finish_s",
                      "wait_s", "completion_s", "failed", "restarts"])
        for j in sorted(run.jobs.values(), key=lambda j: (j.arrival, j.key)):
            wait = None if j.first_start is None else j.first_start - j.arrival
            done = None if j.finish is None or j.failed else j.finish - j.arrival
            out.writerow([j.key, j.queue, j.origin, j.pods, _g(j.gpus_per_pod), _g(j.arrival), _opt(j.first_start),
                          _opt(j.finish), _opt(wait), _opt(done), str(j.failed).lower(), j.restarts])
    return path


def _g(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _opt(value: float | None) -> str:
    return "" if value is None else _g(round(value, 3))


def _html(document: dict[str, Any], runs: Sequence[RunResult], images: Sequence[str]) -> str:
    summaries = list(document["policies"].values())
    e = html.escape
    head = "".join(f"<th>{e(s['label'])}</th>" for s in summaries)
    rows = "".join(f"<tr><th>{e(name)}</th>" + "".join(f"<td>{e(cell(s))}</td>" for s in summaries) + "</tr>"
                   for name, cell in _ROWS)
    queues = sorted({q for s in summaries for q in s["queues"]})
    queue_rows = "".join(f"<tr><th>{e(q)}</th>" + "".join(f"<td>{e(_queue_cell(s['queues'].get(q)))}</td>"
                                                          for s in summaries) + "</tr>" for q in queues)
    sources = "".join(f"<li><b>{e(s['label'])}</b>: {e(s['source'] or 'Volcano default conf')} — "
                      f"<a href='{e(s['label'])}/timeline.csv'>timeline.csv</a>, "
                      f"<a href='{e(s['label'])}/queues.csv'>queues.csv</a>, "
                      f"<a href='{e(s['label'])}/jobs.csv'>jobs.csv</a></li>" for s in summaries)
    figures = "".join(f"<figure><img src='{e(name)}' alt='{e(name)}'><figcaption>{e(name)}</figcaption></figure>"
                      for name in images)
    inputs = document["inputs"]
    workload = document["workload"]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vpolicy simulate: {e(workload['name'])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
th:first-child {{ text-align: left; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; border: 1px solid #eee; }}
code {{ background: #f4f4f4; padding: 1px 4px; }}
</style></head><body>
<h1>vpolicy simulate: {e(workload['name'])}</h1>
<p>{e(workload['description'])}</p>
<p>Cluster <code>{e(', '.join(inputs['cluster']))}</code>, workload <code>{e(inputs['workload'])}</code>,
seed {inputs['seed']}, session period {inputs['period_s']:g} s, simulated {e(format_duration(inputs['end_s']))}.
Raw numbers: <a href="metrics.json">metrics.json</a>.</p>
<ul>{sources}</ul>
<h2>Summary</h2>
<table><tr><th>metric</th>{head}</tr>{rows}</table>
<h2>Wait per queue (p50 / p95 / max)</h2>
<table><tr><th>queue</th>{head}</tr>{queue_rows}</table>
<h2>Over time</h2>
{figures}
</body></html>
"""
