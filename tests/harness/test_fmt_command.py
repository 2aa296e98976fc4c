"""`vpolicy fmt`: the canonical layout of whole files, comments kept, idempotent, `--check` diffs."""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpolicy import cli
from vpolicy.harness import fmt
from vpolicy.harness.policy import policy_root
from vpolicy.lang import grammar
from vpolicy.lang.fmt import WIDTH
from vpolicy.lang.parse import parse_text

SHIPPED = sorted(policy_root().rglob("*.vpol"))
# Whitespace a gap between two tokens may become: blanks, line breaks, a trailing or a full-line comment.
GAPS = (" ", "  ", "\t", "\n", "\n\n", "\n        ", " # note\n", "\n# note\n", "  #\n  ")
# Tokens next to which a blank may be added where the text has none.
_OPEN_CLOSE = frozenset({"LPAR", "RPAR", "COMMA", "LSQB", "RSQB"})


def _comment_texts(text: str) -> Counter[str]:
    return Counter(c.text.strip() for c in fmt.comments(text))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(policy_root()).as_posix()) for p in SHIPPED])
def test_every_shipped_policy_formats_idempotently_to_the_same_ast_keeping_every_comment(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    once = fmt.format_text(text, str(path))
    assert parse_text(once, str(path)) == parse_text(text, str(path))
    assert fmt.format_text(once, str(path)) == once
    assert _comment_texts(once) == _comment_texts(text)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(policy_root()).as_posix()) for p in SHIPPED])
def test_every_shipped_policy_is_in_the_canonical_layout(path: Path) -> None:
    assert fmt.format_file(path).diff() == "", f"run: vpolicy fmt {path}"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(policy_root()).as_posix()) for p in SHIPPED])
def test_a_shipped_policy_passes_the_line_limit_only_with_a_string_or_a_comment(path: Path) -> None:
    long = [line for line in path.read_text(encoding="utf-8").split("\n") if len(line) > WIDTH]
    assert [line for line in long if '"' not in line and not line.lstrip().startswith("#")] == []


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(policy_root()).as_posix()) for p in SHIPPED])
def test_the_diff_of_a_shipped_policy_turns_it_into_its_formatted_text(path: Path) -> None:
    result = fmt.format_file(path)
    assert _apply(result.old, result.diff()) == result.new


def test_comments_the_layout_drops_are_put_back_above_their_declaration() -> None:
    source = textwrap.dedent('''\
        plugin p  # on the header

        # above a documented param
        param x: number = 1 "x"  # after it
        # loose, above the doc

        # the doc of r
        rule r: job_order(l, r) = # inside
           1 # at the end
        # after everything
    ''')
    assert fmt.format_text(source, "p.vpol") == textwrap.dedent('''\
        plugin p

        # on the header
        # above a documented param
        # after it
        param x: number = 1 "x"

        # loose, above the doc
        # inside
        # at the end

        # the doc of r
        rule r: job_order(l, r) = 1

        # after everything
    ''')


def test_a_comment_above_actions_or_tier_stays_directly_above_it() -> None:
    source = 'policy d\n# what runs\nactions allocate\n#  the tier\ntier { use "a.vpol"  # first\n}\n'
    assert fmt.format_text(source, "d.vpol") == (
        'policy d\n\n# what runs\nactions allocate\n\n#  the tier\n# first\ntier {\n    use "a.vpol"\n}\n')


def test_a_comment_above_the_header_stays_above_it() -> None:
    source = "# Copyright the authors.\n\nplugin p  # p\nlet x = 1\n"
    assert fmt.format_text(source, "p.vpol") == "# Copyright the authors.\nplugin p\n\n# p\n\nlet x = 1\n"


def test_a_doc_above_two_declarations_on_one_line_documents_only_the_first() -> None:
    source = "plugin p\n# the doc of x\nlet x = 1 let y = 2\n"
    assert fmt.format_text(source, "p.vpol") == "plugin p\n\n# the doc of x\nlet x = 1\n\nlet y = 2\n"


def test_a_comment_between_two_adjacent_params_parts_them_for_good() -> None:
    source = 'plugin p\nparam a: int = 1\nparam b: int = 2 "b"  # note\nparam c: int = 3\n'
    once = fmt.format_text(source, "p.vpol")
    assert once == 'plugin p\n\nparam a: int = 1\n\n# note\nparam b: int = 2 "b"\nparam c: int = 3\n'
    assert fmt.format_text(once, "p.vpol") == once


def test_a_hash_inside_a_string_is_not_a_comment() -> None:
    assert fmt.comments('let a = "#x" # real\nlet b = "\\"#" \n') == [fmt.Comment(1, " real", alone=False)]


# the command ------------------------------------------------------------------------------------------------
UGLY = 'plugin p\nparam   w : number=1\nrule r: job_order(l, r) = (l.priority)-r.priority\n'
PRETTY = 'plugin p\n\nparam w: number = 1\n\nrule r: job_order(l, r) = l.priority - r.priority\n'


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_prints_a_unified_diff_exits_1_and_changes_nothing(in_tmp: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    Path("p.vpol").write_text(UGLY, encoding="utf-8")
    assert cli.main(["fmt", "--check", "p.vpol"]) == 1
    captured = capsys.readouterr()
    assert captured.out == (
        "--- p.vpol\n"
        "+++ p.vpol (formatted)\n"
        "@@ -1,3 +1,5 @@\n"
        " plugin p\n"
        "-param   w : number=1\n"
        "-rule r: job_order(l, r) = (l.priority)-r.priority\n"
        "+\n"
        "+param w: number = 1\n"
        "+\n"
        "+rule r: job_order(l, r) = l.priority - r.priority\n")
    assert captured.err == "1 of 1 file(s) would be reformatted\n"
    assert Path("p.vpol").read_text(encoding="utf-8") == UGLY


def test_fmt_rewrites_a_file_once_and_then_has_nothing_to_do(in_tmp: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    Path("lib").mkdir()
    Path("lib/p.vpol").write_text(UGLY, encoding="utf-8")
    Path("lib/ok.vpol").write_text(PRETTY, encoding="utf-8")
    assert cli.main(["fmt", "lib"]) == 0
    assert capsys.readouterr().out == "formatted lib/p.vpol\n"
    assert Path("lib/p.vpol").read_text(encoding="utf-8") == PRETTY
    assert cli.main(["fmt", "--check", "lib"]) == 0
    assert capsys.readouterr() == ("", "")


def test_a_syntax_error_is_a_diagnostic_and_leaves_the_file_alone(in_tmp: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.vpol").write_text("plugin p\nrule r: job_order(l, r) = l.priority +\n", encoding="utf-8")
    assert cli.main(["fmt", "bad.vpol"]) == 1
    assert capsys.readouterr().err == (
        "bad.vpol:2:39: error[parse.missing-operand]: unexpected end of file; expected an expression after '+'\n"
        "    2 | rule r: job_order(l, r) = l.priority +\n"
        "      |                                       ^\n")
    assert Path("bad.vpol").read_text(encoding="utf-8").endswith("+\n")


def test_a_folder_without_policies_is_reported(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("empty").mkdir()
    assert cli.main(["fmt", "empty", "missing.vpol"]) == 1
    assert capsys.readouterr().err == (
        "empty:1:1: error[fmt.no-policies]: no policy files (*.vpol) under empty\n"
        "   help: point at a .vpol file or a folder holding some\n"
        "missing.vpol:1:1: error[fmt.unreadable]: no such file or folder: missing.vpol\n"
        "   help: give .vpol files or folders holding them\n")


# the property ----------------------------------------------------------------------------------------------
@st.composite
def relaid_policies(draw: st.DrawFn) -> str:
    """A shipped policy with some gaps between its tokens replaced by other blanks and comments."""
    path = draw(st.sampled_from(SHIPPED))
    text = path.read_text(encoding="utf-8")
    tokens = grammar.tokens_before(text, len(text))
    gaps = []  # (start, end) of whitespace between two tokens; empty ones only beside brackets and commas
    for left, right in zip(tokens, tokens[1:]):
        start, end = left.end_pos, right.start_pos
        assert start is not None and end is not None
        between = text[start:end]
        if (between and not between.strip()) or (not between and {left.type, right.type} & _OPEN_CLOSE):
            gaps.append((start, end))
    if not gaps:
        return text
    edits = draw(st.lists(st.tuples(st.integers(0, len(gaps) - 1), st.sampled_from(GAPS)), max_size=30,
                          unique_by=lambda e: e[0]))
    for index, replacement in sorted(edits, key=lambda e: -gaps[e[0]][0]):
        start, end = gaps[index]
        text = text[:start] + replacement + text[end:]
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relaid_policies())
def test_formatting_any_layout_keeps_the_ast_and_comments_and_is_idempotent(text: str) -> None:
    once = fmt.format_text(text, "x.vpol")
    assert parse_text(once, "x.vpol") == parse_text(text, "x.vpol")
    assert fmt.format_text(once, "x.vpol") == once
    # No comment text is lost, none is doubled; one may come back as a doc string (above an undocumented `param`).
    assert [c for c in _comment_texts(text) - _comment_texts(once) if f'"{c}"' not in once] == []
    assert _comment_texts(once) - _comment_texts(text) == Counter()


COMMENT_GAPS = (" # {}\n", "\n# {}\n", "  # {}\n        ", "\n\n# {}\n\n", "\n    # {}\n")


@st.composite
def commented_policies(draw: st.DrawFn) -> str:
    """A shipped policy with comments `note_0`, `note_1`, ... put into some gaps between its tokens."""
    path = draw(st.sampled_from(SHIPPED))
    text = path.read_text(encoding="utf-8")
    tokens = grammar.tokens_before(text, len(text))
    gaps = [(t.end_pos, t.end_pos) for t in tokens[:-1]]  # right after a token: a comment may follow any
    edits = draw(st.lists(st.tuples(st.integers(0, len(gaps) - 1), st.sampled_from(COMMENT_GAPS)), min_size=1,
                          max_size=12, unique_by=lambda e: e[0]))
    for number, (index, gap) in enumerate(sorted(edits, key=lambda e: -e[0])):
        start, end = gaps[index]
        assert start is not None and end is not None
        text = text[:start] + gap.format(f"note_{number}") + text[end:]
    return text


def _owner(text: str, line: int) -> int:
    """The declaration a line belongs to: the one it is in or above (-1: above the header; one past the
    last: after every declaration)."""
    module = parse_text(text, "x.vpol")
    if line < module.span.line:
        return -1
    ends = [d.span.end_line or d.span.line for d in module.decls]
    return next((i for i, end in enumerate(ends) if line <= end), len(ends))


def _lines_with(text: str, word: str) -> list[int]:
    return [n for n, line in enumerate(text.split("\n"), start=1) if re.search(rf"\b{word}\b", line)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commented_policies())
def test_no_comment_is_lost_or_moved_to_another_declaration(text: str) -> None:
    once = fmt.format_text(text, "x.vpol")
    for note in sorted(set(re.findall(r"note_\d+", text))):
        before, after = _lines_with(text, note), _lines_with(once, note)
        # once, as a comment (or as the doc string of the param it documents)
        assert len(after) == 1, (note, once)
        assert _owner(once, after[0]) == _owner(text, before[0]), (note, once)
    assert fmt.format_text(once, "x.vpol") == once


def _apply(old: str, diff: str) -> str:
    """Apply a unified diff produced by difflib (the inverse of `Formatted.diff`, for the test)."""
    if not diff:
        return old
    source = old.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    for line in diff.splitlines(keepends=True)[2:]:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0].lstrip("-"))
            start = start - 1 if start else 0
            out.extend(source[at:start])
            at = start
        elif line.startswith("-"):
            at += 1
        elif line.startswith("+"):
            out.append(line[1:])
        elif line.startswith(" "):
            out.append(source[at])
            at += 1
    out.extend(source[at:])
    return "".join(out)
