"""PNG plots of simulation runs, every policy on the same axes (matplotlib, Agg backend: no display).

Each plot has a title, axes labelled with their units, a legend naming the policies, and hours on the
time axis. `write_plots` returns the file names it wrote, in the order the report shows them. This
module draws; it computes nothing beyond unit conversions (the numbers come from `simulate.RunResult`
and `summary.summarize`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, never a window

import matplotlib.pyplot as plt  # noqa: E402  # reason: the backend must be chosen before pyplot loads
from matplotlib.axes import Axes  # noqa: E402  # reason: as above
from matplotlib.ticker import MaxNLocator, MultipleLocator  # noqa: E402  # reason: as above

from vpolicy.sim.simulate import RunResult, Sample  # noqa: E402  # reason: as above

_SIZE = (10.0, 4.2)
_DPI = 110
_STYLES = ("-", "--", "-.", ":")


def write_plots(out: Path, runs: Sequence[RunResult], summaries: Sequence[dict[str, Any]]) -> list[str]:
    written = []
    capacity_gpu = runs[0].capacity.get("nvidia.com/gpu", 0) / 1000 if runs else 0
    capacity_cpu = runs[0].capacity.get("cpu", 0) / 1000 if runs else 0
    if capacity_gpu:
        written.append(_timeline(out / "gpu_allocation.png", runs, lambda s: s.gpu_allocated / 1000,
                                 title="GPUs allocated over time", ylabel="GPUs allocated",
                                 capacity=(capacity_gpu, f"capacity ({capacity_gpu:g} GPUs)")))
    written.append(_timeline(out / "cpu_allocation.png", runs, lambda s: s.cpu_allocated / 1000,
                             title="CPU allocated over time", ylabel="CPU allocated (cores)",
                             capacity=(capacity_cpu, f"capacity ({capacity_cpu:g} cores)")))
    if capacity_gpu:
        written.append(_timeline(out / "gpu_fragmentation.png", runs, lambda s: s.gpu_fragmented / 1000,
                                 title="Fragmented GPUs: free on nodes that cannot host the smallest pending GPU pod",
                                 ylabel="fragmented GPUs", integer=True))
    written.append(_timeline(out / "pending_jobs.png", runs, lambda s: s.pending_jobs,
                             title="Jobs waiting (arrived, gang not yet running)", ylabel="jobs waiting",
                             integer=True))
    written.append(_timeline(out / "fairness.png", runs, lambda s: s.jain,
                             title="Fairness: Jain's index of allocated/deserved over queues with demand",
                             ylabel="Jain's index (1 = fair)", limits=(0.0, 1.05)))
    written.append(_queue_waits(out / "queue_wait.png", summaries))
    return written


def _timeline(path: Path, runs: Sequence[RunResult], value: Callable[[Sample], float | None], *, title: str,
              ylabel: str, capacity: tuple[float, str] | None = None, integer: bool = False,
              limits: tuple[float, float] | None = None) -> str:
    fig, ax = plt.subplots(figsize=_SIZE, dpi=_DPI)
    end = max((r.end for r in runs), default=0.0)
    for i, run in enumerate(runs):
        xs, ys = _steps(run, value)
        ax.step(xs, ys, where="post", label=run.label, linestyle=_STYLES[i % len(_STYLES)], linewidth=1.6)
    if capacity is not None:
        ax.axhline(capacity[0], color="black", linestyle=":", linewidth=1.0, label=capacity[1])
    _hours_axis(ax, end)
    ax.set_title(title, fontsize=11)
    ax.set_ylabel(ylabel)
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if limits is not None:
        ax.set_ylim(*limits)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9, framealpha=0.85)
    return _save(fig, path)


def _queue_waits(path: Path, summaries: Sequence[dict[str, Any]]) -> str:
    queues = sorted({q for s in summaries for q in s["queues"]})
    fig, axes = plt.subplots(1, 2, figsize=(_SIZE[0], _SIZE[1] + 0.6), dpi=_DPI, sharey=True)
    width = 0.8 / max(len(summaries), 1)
    longest = max((s["queues"][q]["wait_s"]["p95"] or 0.0 for s in summaries for q in s["queues"]), default=0.0)
    unit, scale = ("hours", 3600.0) if longest > 3 * 3600 else ("minutes", 60.0)
    for ax, stat in zip(axes, ("p50", "p95"), strict=True):
        for i, summary in enumerate(summaries):
            values = [(summary["queues"].get(q, {}).get("wait_s", {}).get(stat) or 0.0) / scale for q in queues]
            positions = [x + (i - (len(summaries) - 1) / 2) * width for x in range(len(queues))]
            ax.bar(positions, values, width=width, label=summary["label"])
        ax.set_xticks(range(len(queues)))
        ax.set_xticklabels(queues, rotation=20, ha="right", fontsize=9)
        ax.set_title(f"{stat} wait per queue", fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel(f"wait from arrival to gang running ({unit})")
    axes[1].legend(loc="best", fontsize=9)
    return _save(fig, path)


def _steps(run: RunResult, value: Callable[[Sample], float | None]) -> tuple[list[float], list[float]]:
    xs = [s.time / 3600 for s in run.samples]
    ys = [float("nan") if (v := value(s)) is None else float(v) for s in run.samples]
    if xs and run.end / 3600 > xs[-1]:  # the last state holds until the end of the run
        xs.append(run.end / 3600)
        ys.append(ys[-1])
    return xs, ys


def _hours_axis(ax: Axes, end: float) -> None:
    hours = max(end / 3600, 1e-3)
    ax.set_xlim(0, hours)
    ax.set_xlabel("simulated time (hours)")
    step = next((s for s in (0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 168) if hours / s <= 14), 336)
    ax.xaxis.set_major_locator(MultipleLocator(step))


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path.name
