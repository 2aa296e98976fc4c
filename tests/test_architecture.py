"""The dependency rules of STYLE.md, enforced: import-linter contracts from pyproject.toml."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([exe, str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
