"""`benchmarks.instructions`: one session's instruction count under cachegrind.

The count itself needs valgrind (not installed everywhere, and 20-50x slower); what is checked here is
what the count stands on: the measured processes' session runs work on their own, and a machine
without valgrind gets a one-line error instead of a traceback.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import instructions

ROOT = Path(__file__).resolve().parents[2]


def test_the_measured_process_runs_sessions_and_prints_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.instructions", "--size", "S", "--workload",
                           "fragmentation", "--mode", "optimize", "--sessions", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_without_valgrind_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="valgrind is not installed"):
        instructions.main(["--size", "S"])
