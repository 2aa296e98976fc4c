"""Wall time of each phase of one command, written out for the benchmarks (`VPOLICY_TIMINGS=FILE`).

`benchmarks.dumps` times `vpolicy dry-run` as a child process and wants to know where the seconds go:
start-up (interpreter and imports), read (parsing the dump), build snapshot (the readers), compile,
session, report. Each phase's end is `mark`ed where it happens; `write` puts the marks in FILE as JSON
when the variable is set, and does nothing otherwise (the marks cost a clock read each). Start-up counts
from `VPOLICY_SPAWNED_AT` (epoch seconds, set by the parent just before it starts the child). Each phase
also has its process CPU seconds (`<phase> (cpu)`): on a shared machine wall time says little; and the
process's peak resident memory when it ended (`<phase> (peak MiB)`), to see which phase sets the peak.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time

_marks: dict[str, float] = {}
_cpu: dict[str, float] = {}
_peak: dict[str, float] = {}
_last: list[float] = []
_last_cpu: list[float] = [0.0]  # process CPU time counts from the process's start


def mark(phase: str) -> None:
    """The phase that ends now; the first mark's phase counts from the process's spawn when known."""
    now = time.time()
    if not _last:
        spawned = os.environ.get("VPOLICY_SPAWNED_AT")
        _last.append(float(spawned) if spawned else now)
    _marks[phase] = _marks.get(phase, 0.0) + now - _last[-1]
    _last.append(now)
    cpu = time.process_time()
    _cpu[phase] = _cpu.get(phase, 0.0) + cpu - _last_cpu[-1]
    _last_cpu.append(cpu)
    if os.environ.get("VPOLICY_TIMINGS"):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
        _peak[phase] = peak / (1 << 20 if sys.platform == "darwin" else 1 << 10)


def write() -> None:
    path = os.environ.get("VPOLICY_TIMINGS")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({**{k: round(v, 3) for k, v in _marks.items()},
                       **{f"{k} (cpu)": round(v, 3) for k, v in _cpu.items()},
                       **{f"{k} (peak MiB)": round(v) for k, v in _peak.items()}}, out)
