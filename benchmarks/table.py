"""The benchmark result as a table for people (rich): one row per figure, one column per engine mode.

Reads the object `benchmarks.run.run_benchmark` returns and prints it; computes nothing of its own.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

# (key in a mode's object, label): the figures DESIGN §7 sets targets for come first.
ROWS = (
    ("session_ms_p50", "session ms, p50"),
    ("session_ms_max", "session ms, max"),
    ("session_cpu_ms_p50", "session CPU ms, p50"),
    ("pods_per_s", "pods placed per second"),
    ("pods_placed", "pods placed (binds + pipelined)"),
    ("gpus_placed", "GPUs placed"),
    ("evictions", "evictions"),
    ("evicted_gpu_pods", "evicted GPU pods"),
    ("evicted_gpus", "evicted GPUs"),
    ("gpu_pods_pipelined", "GPU pods pipelined (preemptors)"),
    ("unschedulable_pods", "pods left pending"),
    ("peak_rss_mb", "peak RSS, MB"),
    ("violations", "validator violations"),
    ("deterministic", "same decisions every run"),
    ("compile_ms", "policy compile ms"),
    ("generate_ms", "snapshot generation ms"),
)
MODE_ORDER = ("volcano", "optimize")


def build_table(result: Mapping[str, Any]) -> Table:
    modes = [m for m in MODE_ORDER if m in result]
    title = (f"size {result['size']} ({result['nodes']} nodes, {result['gpu_nodes']} with GPUs; "
             f"{result['pending_pods']} pending pods in {result['pending_jobs']} jobs; "
             f"{result['running_pods']} running) - workload {result['workload']}, seed {result['seed']}")
    table = Table(title=title, title_justify="left")
    table.add_column("figure")
    for mode in modes:
        table.add_column(mode, justify="right")
    notes = [str(result[m].get("note", "")) for m in modes if result[m].get("status") != "ok"]
    for key, label in ROWS:
        table.add_row(label, *(_cell(result[m], key) for m in modes))
    for key, label in (("gpus_placed_optimize_over_volcano", "GPUs placed, optimize / volcano"),
                       ("evicted_gpu_pods_optimize_over_volcano", "evicted GPU pods, optimize / volcano"),
                       ("same_gpu_pods_pipelined", "same GPU pods pipelined (preemptors) in both"),
                       ("optimize_pipelined_every_volcano_gpu_pod",
                        "optimize pipelined every GPU pod volcano did")):
        value = result.get(key)
        cell = "-" if value is None else ("yes" if value else "no") if isinstance(value, bool) else f"{value:g}"
        table.add_row(label, *([cell] + [""] * (len(modes) - 1)))
    optimize = result.get("optimize") or {}
    for action, run in (optimize.get("optimize_runs") or {}).items():
        budget = optimize.get("optimize_budget_s")
        notes.append(f"optimize's {action} kept {run['kept']}'s run ({run['why']}; "
                     f"budget {'unlimited' if budget is None else f'{budget:g} s'})")
    if notes:
        table.caption = "; ".join(n for n in notes if n)
    return table


def print_result(result: Mapping[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(build_table(result))


def _cell(mode: Mapping[str, Any], key: str) -> str:
    status = mode.get("status")
    if status != "ok":
        return str(status) if key == "session_ms_p50" else ""
    value = mode.get(key)
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)
