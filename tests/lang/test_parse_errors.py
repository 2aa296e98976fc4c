"""Syntax errors: exactly one diagnostic, at the offending token, saying what was found and awaited."""
from __future__ import annotations

import textwrap

import pytest

from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.lang.parse import SYNTAX_EXAMPLES, parse_text


def syntax_error(text: str) -> Diagnostic:
    with pytest.raises(PolicyError) as caught:
        parse_text(text, "e.vpol")
    assert len(caught.value.diagnostics) == 1
    return caught.value.diagnostics[0]


@pytest.mark.parametrize("code, text", [
    pytest.param(label.code, example, id=f"{label.code}-{i}")
    for label, examples in SYNTAX_EXAMPLES for i, example in enumerate(examples)
])
def test_every_example_in_the_table_is_classified_as_its_label(code: str, text: str) -> None:
    assert syntax_error(text).code == code


CASES = [
    pytest.param(
        "plugin p\nrule r: job_valid(job) job.ready_count > 0\n",
        """\
e.vpol:2:24: error[parse.rule-missing-equals]: unexpected name 'job'; expected '=' between the callback's arguments and the rule's body
    2 | rule r: job_valid(job) job.ready_count > 0
      |                        ^^^
   help: a rule reads 'rule NAME: CALLBACK(ARGS) = EXPR'""",
        id="rule-without-equals"),
    pytest.param(
        "plugin p\nrule r: job_valid = true\n",
        """\
e.vpol:2:19: error[parse.rule-missing-arguments]: unexpected '='; expected '(' after the callback's name
    2 | rule r: job_valid = true
      |                   ^
   help: a rule names the callback's arguments, as in 'job_valid(job)'""",
        id="callback-without-parentheses"),
    pytest.param(
        "plugin p\nlet x == 1\n",
        """\
e.vpol:2:7: error[parse.double-equals]: '==' where a definition takes '='
    2 | let x == 1
      |       ^^
   help: '==' compares; '=' defines""",
        id="double-equals-in-a-definition"),
    pytest.param(
        "plugin p\nrule r: job_valid(job) =\n    if job.priority = 1 then true else false\n",
        """\
e.vpol:3:21: error[parse.single-equals]: '=' where a comparison takes '=='
    3 |     if job.priority = 1 then true else false
      |                     ^
   help: '=' defines; '==' compares""",
        id="single-equals-in-a-condition"),
    pytest.param(
        "plugin p\nlet x = job.ready_count +\nrule r: job_valid(job) = true\n",
        """\
e.vpol:3:1: error[parse.missing-operand]: unexpected keyword 'rule'; expected an expression after '+'
    3 | rule r: job_valid(job) = true
      | ^^^^""",
        id="trailing-operator"),
    pytest.param(
        "plugin p\nlet x = max(a, b)\n",
        """\
e.vpol:2:14: error[parse.aggregate-syntax]: unexpected ','; expected 'in' after the aggregate's variable
    2 | let x = max(a, b)
      |              ^
   help: aggregates read 'max(x in xs: x.weight)'; for two numbers use maximum(a, b) or minimum(a, b)""",
        id="max-called-like-a-function"),
    pytest.param(
        "let x = 1\n",
        """\
e.vpol:1:1: error[parse.missing-header]: unexpected keyword 'let'; expected 'plugin NAME' or 'policy NAME' first
    1 | let x = 1
      | ^^^
   help: every file starts with its kind and name, e.g. 'plugin gang'""",
        id="no-header"),
    pytest.param(
        "plugin p\nlet x = minimum(a,\n    b\nrule r: job_valid(job) = true\n",
        """\
e.vpol:4:1: error[parse.unexpected-token]: unexpected keyword 'rule'; expected ',' or ')' to close the call opened at 2:16
    4 | rule r: job_valid(job) = true
      | ^^^^""",
        id="unclosed-call"),
    pytest.param(
        "plugin p\nlet xs = [1, 2\n",
        """\
e.vpol:2:15: error[parse.unexpected-eof]: unexpected end of file; expected ',' or ']' to close the list opened at 2:10
    2 | let xs = [1, 2
      |               ^""",
        id="unclosed-list-at-end-of-file"),
    pytest.param(
        "plugin p\nlet x = sum(t in xs: t.weight\n",
        """\
e.vpol:2:30: error[parse.unexpected-eof]: unexpected end of file; expected ')' to close the aggregate opened at 2:12
    2 | let x = sum(t in xs: t.weight
      |                              ^""",
        id="unclosed-aggregate"),
    pytest.param(
        "plugin p\nlet x = if a then 1\n",
        """\
e.vpol:2:20: error[parse.unexpected-eof]: unexpected end of file; expected 'else' to go with the 'if' at 2:9
    2 | let x = if a then 1
      |                    ^""",
        id="if-without-else"),
    pytest.param(
        "plugin p\nlet x = if a 1 else 2\n",
        """\
e.vpol:2:14: error[parse.unexpected-token]: unexpected number 1; expected 'then' to go with the 'if' at 2:9
    2 | let x = if a 1 else 2
      |              ^""",
        id="if-without-then"),
    pytest.param(
        "plugin p\nlet x = let y = 1 y\n",
        """\
e.vpol:2:19: error[parse.unexpected-token]: unexpected name 'y'; expected 'in' to go with the 'let' at 2:9
    2 | let x = let y = 1 y
      |                   ^""",
        id="let-without-in"),
    pytest.param(
        "plugin p\nlet x =\n",
        """\
e.vpol:2:8: error[parse.unexpected-eof]: unexpected end of file; expected an expression after '='
    2 | let x =
      |        ^""",
        id="missing-value"),
    pytest.param(
        "plugin p\nlet start = 1\n",
        """\
e.vpol:2:5: error[parse.unexpected-token]: unexpected keyword 'start'; expected a name
    2 | let start = 1
      |     ^^^^^
   help: 'start' is a keyword; choose another name""",
        id="keyword-as-name"),
    pytest.param(
        "plugin p\nlet x = a b\n",
        """\
e.vpol:2:11: error[parse.unexpected-token]: unexpected name 'b'; expected an operator, a declaration, '(' or end of file
    2 | let x = a b
      |           ^""",
        id="two-operands"),
    pytest.param(
        "policy p\ntier { usex }\n",
        """\
e.vpol:2:8: error[parse.unexpected-token]: unexpected name 'usex'; expected 'use' or '}' to close the tier opened at 2:6
    2 | tier { usex }
      |        ^^^^""",
        id="keyword-glued-to-a-name"),
    pytest.param(
        "plugin p\nlet x = a && b\n",
        """\
e.vpol:2:11: error[parse.unexpected-character]: unexpected character '&'; expected an operator, a declaration, '(' or end of file
    2 | let x = a && b
      |           ^
   help: use 'and'""",
        id="c-style-and"),
    pytest.param(
        'plugin p\nrule r: job_valid(job) = true\n    reason "NotEnoughTasks\n',
        """\
e.vpol:3:12: error[parse.unterminated-string]: unterminated string
    3 |     reason "NotEnoughTasks
      |            ^^^^^^^^^^^^^^^
   help: close it with '"' on the same line; strings cannot span lines""",
        id="unterminated-string"),
    pytest.param(
        'plugin p\nlet x = "a \\q"\n',
        """\
e.vpol:2:12: error[parse.invalid-escape]: unknown escape '\\q' in string
    2 | let x = "a \\q"
      |            ^^
   help: strings know \\\\, \\", \\n and \\t""",
        id="invalid-escape"),
    pytest.param(
        'plugin p\nlet x = "min: {job.min_available"\n',
        """\
e.vpol:2:15: error[parse.unclosed-hole]: unclosed '{' in string
    2 | let x = "min: {job.min_available"
      |               ^
   help: close the hole with '}', or write '{{' for a literal brace""",
        id="unclosed-hole"),
    pytest.param(
        'plugin p\nlet x = "min: {}"\n',
        """\
e.vpol:2:15: error[parse.empty-hole]: empty '{}' in string
    2 | let x = "min: {}"
      |               ^^
   help: put an expression inside, or write '{{}}' for literal braces""",
        id="empty-hole"),
    pytest.param(
        'plugin p\nlet x = "min: {job.min_available +} left"\n',
        """\
e.vpol:2:35: error[parse.missing-operand]: unexpected '}'; expected an expression after '+'
    2 | let x = "min: {job.min_available +} left"
      |                                   ^""",
        id="error-inside-a-hole"),
    pytest.param(
        'plugin p\nlet x = "min: {job least} left"\n',
        """\
e.vpol:2:20: error[parse.unexpected-token]: unexpected name 'least'; expected an operator, '(' or '}'
    2 | let x = "min: {job least} left"
      |                    ^^^^^""",
        id="hole-keeps-columns"),
    pytest.param(
        'plugin p\nrule r: job_valid(job) = true reason "a" reason "b"\n',
        """\
e.vpol:2:42: error[parse.duplicate-clause]: 'reason' appears twice in rule 'r'
    2 | rule r: job_valid(job) = true reason "a" reason "b"
      |                                          ^^^^^^^^^^""",
        id="clause-twice"),
]


@pytest.mark.parametrize("text, rendered", CASES)
def test_syntax_errors_render_exactly(text: str, rendered: str) -> None:
    assert syntax_error(text).render() == textwrap.dedent(rendered)


def test_a_policy_error_is_raised_with_the_lark_error_chained() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_text("plugin p\nlet x =", "e.vpol")
    assert caught.value.__cause__ is not None
    assert str(caught.value) == "e.vpol:2:8: error[parse.unexpected-eof]: unexpected end of file; " \
                                "expected an expression after '='"
