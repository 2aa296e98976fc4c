"""docs/diagnostics.md lists every code the front-end, the loaders and the authoring commands emit."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Modules whose codes this table owns (explain/verify document their own).
SOURCES = [*sorted((ROOT / "vpolicy" / "lang").glob("*.py")), *sorted((ROOT / "vpolicy" / "load").glob("*.py")),
           *(ROOT / "vpolicy" / "harness" / name for name in ("check.py", "fmt.py", "diff.py", "coverage.py",
                                                               "testing.py", "scenario.py", "policy.py"))]
_CODE = re.compile(r'"((?:parse|check|conf|load|policy|scenario|test|fmt|diff|input)\.[a-z][a-z-]*)"')


def test_every_code_of_the_loaders_front_end_and_authoring_commands_is_in_the_table() -> None:
    emitted = {code for path in SOURCES for code in _CODE.findall(path.read_text(encoding="utf-8"))}
    table = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z]+\.[a-z-]+)` \|", table, re.MULTILINE))
    assert sorted(emitted - documented) == []


def test_no_code_has_two_rows() -> None:
    table = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z]+\.[a-z-]+)` \|", table, re.MULTILINE)
    assert sorted({r for r in rows if rows.count(r) > 1}) == []
