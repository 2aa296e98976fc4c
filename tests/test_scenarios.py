"""Every scenario under policies/tests passes: the session's decisions meet the file's `expect`.

One test per scenario file, named by its path under policies/tests. A scenario whose header carries
`xfail: "engine bug: ..."` documents a known engine bug: it runs as a strict xfail, so it must fail
with a mismatch (an AssertionError) and turns the suite red the day the bug is fixed. A file that
cannot be loaded fails outright, xfail or not.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.harness import scenario, testing

ROOT = Path(__file__).resolve().parent.parent / "policies" / "tests"
FILES = sorted(p for p in ROOT.rglob("*") if p.suffix in testing.SUFFIXES and p.is_file())


def _param(path: Path) -> object:
    marks = []
    try:
        reason = scenario.read_header(path).xfail
    except PolicyError:
        reason = None  # the test itself reports the diagnostics
    if reason is not None:
        marks.append(pytest.mark.xfail(reason=reason, strict=True, raises=AssertionError))
    return pytest.param(path, id=path.relative_to(ROOT).as_posix(), marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in FILES])
def test_scenario_meets_its_expectations(path: Path) -> None:
    try:
        loaded = scenario.load_scenario(path)
    except PolicyError as exc:
        pytest.fail("\n".join(d.render() for d in exc.diagnostics), pytrace=False)
    result = testing.run_scenario(loaded)
    assert result.passed, result.message()


def test_scenarios_exist() -> None:
    assert FILES, f"no scenario files under {ROOT}"
