"""STYLE.md's typing rule, enforced: `mypy --strict` on both packages (configured in pyproject.toml).

A type error is a bug found before it runs, so it fails the suite like any other. The cache lives in
.mypy_cache (ignored by git): a clean clone pays about 10 s once, later runs a second or two.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_both_packages_type_check_strictly() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
