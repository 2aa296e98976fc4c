"""STYLE.md's static checks, enforced: `mypy --strict` on both packages and `ruff check` on the tree,
both configured in pyproject.toml.

A type error or an unused, undefined or shadowed name is a bug found before it runs, so it fails the
suite like any other. mypy's cache lives in .mypy_cache (ignored by git): a clean clone pays about
10 s once, later runs a second or two.
"""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_both_packages_type_check_strictly() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]


def test_ruff_finds_nothing() -> None:
    beside = Path(sys.executable).parent / "ruff"  # the pinned one from the test extras, before any on PATH
    exe = str(beside) if beside.exists() else shutil.which("ruff") or "ruff"
    proc = subprocess.run([exe, "check", "--no-cache", str(ROOT)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
