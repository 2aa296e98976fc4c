"""Every shipped policy file parses, checks clean, and survives formatting unchanged in meaning."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpolicy.lang import check, fmt, parse

POLICIES = Path(__file__).resolve().parents[2] / "policies"
FILES = sorted(POLICIES.glob("**/*.vpol"))


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(POLICIES))) for p in FILES])
def test_shipped_policies_parse_and_check_without_errors(path: Path) -> None:
    module = parse.parse_file(path)
    errors = [d.render() for d in check.check_module(module) if d.severity == "error"]
    assert errors == []


@pytest.mark.parametrize("path", [pytest.param(p, id=str(p.relative_to(POLICIES))) for p in FILES])
def test_shipped_policies_keep_their_meaning_through_fmt(path: Path) -> None:
    module = parse.parse_file(path)
    text = fmt.format_module(module)
    assert parse.parse_text(text, "formatted.vpol") == module
    assert fmt.format_module(parse.parse_text(text, "formatted.vpol")) == text
