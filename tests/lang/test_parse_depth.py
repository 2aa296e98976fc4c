"""Nesting: a file nested deeper than `parse.MAX_DEPTH` is one located `parse.too-deep` error (never a
RecursionError from the stages that walk the tree), and every shape nested up to the limit goes through
all of them: parse, check, fmt, compile and a session."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from vpolicy.compile.lower import compile_module
from vpolicy.engine import runtime
from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.errors import PolicyError
from vpolicy.harness import fmt as fmt_command
from vpolicy.lang import check, fmt, parse
from tests.engine import build

HELP = "give inner parts names: 'let NAME = ... in', a module 'let', or a helper function"

# Each shape nested `n` times around the operand V (a value only known in the session, so nothing folds).
SHAPES = {
    "if": lambda n: "if V > 0 then V else " * n + "V",
    "minus": lambda n: "-" * n + "V",
    "plus": lambda n: " + ".join(["V"] * (n + 1)),
    "not": lambda n: "if " + "not " * n + "V > 0 then 1 else 0",
    "and": lambda n: "if " + " and ".join(["V > 0"] * (n + 1)) + " then 1 else 0",
    "call": lambda n: "abs(" * n + "V" + ")" * n,
    "list": lambda n: "len(" + "[" * n + "V" + "]" * n + ")",
    "let": lambda n: "".join(f"let x{i} = V in " for i in range(n)) + "V",
    "aggregate": lambda n: "sum(x in [" * n + "V" + "]: x)" * n,
    "string-hole": lambda n: 'if "{' + "-" * n + 'V}" == "x" then 1 else 0',
}


def _module(shape: str, n: int) -> str:
    return f"plugin p\nrule r: node_order(task, node) = {SHAPES[shape](n).replace('V', 'task.priority')}\n"


def _deepest(shape: str) -> int:
    """The largest `n` the parser takes for `shape`."""
    lo, hi = 1, parse.MAX_DEPTH
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            parse.parse_text(_module(shape, mid), "d.vpol")
            lo = mid
        except PolicyError:
            hi = mid - 1
    return lo


@pytest.mark.parametrize("text, line, col", [
    pytest.param("plugin p\nlet a = " + "if true then 1 else " * 2000 + "1\n", 2, 1952, id="if-chain-of-2000"),
    pytest.param("plugin p\nlet a = " + "-" * 5000 + "1\n", 2, 107, id="5000-minus-signs"),
    pytest.param("plugin p\nlet a = " + "+".join(["1"] * 3000) + "\n", 2, 9, id="sum-of-3000-terms"),
    pytest.param("plugin p\nrule r: job_valid(job) = true\n    reason \"{" + "-" * 500 + "1}\"\n", 3, 111,
                 id="in-a-string-hole"),
    pytest.param("plugin p\nlet a = " + "[" * 95 + '"{' + "-" * 10 + '1}"' + "]" * 95 + "\n", 2, 108,
                 id="a-string-hole-counts-from-its-string"),
])
def test_nesting_past_the_limit_is_one_located_error(text: str, line: int, col: int) -> None:
    with pytest.raises(PolicyError) as caught:
        parse.parse_text(text, "d.vpol")
    [diag] = caught.value.diagnostics
    assert (diag.code, diag.span, diag.message, diag.help) == (
        "parse.too-deep", parse.Span("d.vpol", line, col), "nested more than 100 levels deep", HELP)


def test_parentheses_do_not_nest() -> None:
    module = parse.parse_text("plugin p\nlet a = " + "(" * 3000 + "1" + ")" * 3000 + "\n", "d.vpol")
    assert check.check_module(module) == []


def test_fmt_reports_the_error_instead_of_crashing(tmp_path: Path) -> None:
    path = tmp_path / "deep.vpol"
    path.write_text("plugin p\nlet a = " + "-" * 5000 + "1\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert fmt_command.run_fmt([str(path)], check=True, out=out, err=err) == 1
    assert err.getvalue().startswith(f"{path}:2:107: error[parse.too-deep]: nested more than 100 levels deep\n")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_nested_to_the_limit_runs_through_every_stage(shape: str) -> None:
    n = _deepest(shape)
    assert n > 40  # the limit is reached by nesting, not by something else in the text
    text = _module(shape, n)
    module = parse.parse_text(text, "d.vpol")
    assert check.check_module(module) == []
    assert parse.parse_text(fmt.format_module(module), "d.vpol") == module
    compiled = compile_module(module)
    policy = CompiledPolicy(("allocate",), ((runtime.PluginInstance("p", compiled, {}),),))
    snapshot = build.snapshot(nodes=[build.node(f"n{i}") for i in range(10)], podgroups=[build.podgroup("pg")],
                              pods=[build.pod("pg-0", "pg")])
    assert run_session(snapshot, policy).decisions.binds
    with pytest.raises(PolicyError):
        parse.parse_text(_module(shape, n + 1), "d.vpol")
