"""The grammar file itself: found, conflict-free, and its reserved words in step with its keywords."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import lark
import pytest

from vpolicy.lang import grammar


def test_the_grammar_is_found_in_the_checkout() -> None:
    path = grammar.grammar_path()
    assert path.name == "vpolicy.lark" and path.parent.name == "grammar"


def test_an_installed_wheel_finds_the_grammar_under_its_prefix(tmp_path: Path) -> None:
    shipped = tmp_path / "venv" / "share" / "vpolicy" / "grammar" / "vpolicy.lark"
    shipped.parent.mkdir(parents=True)
    shipped.write_text(grammar.grammar_text(), encoding="utf-8")
    found = grammar.grammar_path(checkout=tmp_path / "site-packages", prefix=str(tmp_path / "venv"))
    assert found == shipped


def test_a_missing_grammar_is_a_broken_installation(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        grammar.grammar_path(checkout=tmp_path, prefix=str(tmp_path))


def test_the_grammar_has_no_lalr_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    # Lark resolves shift/reduce conflicts silently (as shift) and only logs them at debug level.
    previous = lark.logger.level
    lark.logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            grammar.build_parser(grammar.grammar_text())
    finally:
        lark.logger.setLevel(previous)
    assert [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()] == []


def test_every_keyword_is_reserved_from_names() -> None:
    parser = grammar.parser()
    keywords: set[str] = set()
    for terminal in parser.terminals:
        pattern = terminal.pattern
        if pattern.type == "str" and pattern.value.isidentifier():
            keywords.add(pattern.value)
        elif terminal.name in ("AGG", "VOTE", "TRUE", "FALSE", "MODKIND"):
            keywords.update(re.findall(r"[a-z]+", pattern.value.split("(?!")[0]))
    assert keywords == grammar.reserved_words()


@pytest.mark.parametrize("word", ["rulex", "counter", "permitted", "trueish", "minimum", "allocated", "users"])
def test_names_may_begin_with_a_keyword(word: str) -> None:
    tree = grammar.parse_tree(word, start=grammar.START_EXPR)
    assert tree.data == "name"
