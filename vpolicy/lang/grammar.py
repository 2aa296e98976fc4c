"""Locate `grammar/vpolicy.lark` and build the one LALR parser the DSL front-end uses.

What it does: finds the grammar file (in a source checkout, next to the `vpolicy` package; in an
installed wheel, under `sys.prefix/share/vpolicy/grammar/`), builds a Lark LALR parser once per process
with positions and placeholders on, and caches the grammar analysis in the temp dir, keyed by the
grammar's hash (Lark's own `cache=True`). The parser has two start symbols: `start` for a whole file and
`expr` for the `{...}` holes of interpolated strings.

It also knows the grammar's vocabulary, for error messages: terminals in words ("a name", "')'"), which
terminals the parser would really accept at an error, and which bracket or `if`/`let`/`select` was
still open there ("expected ')' to close the call opened at 3:12").

What it does not do: turn trees into the AST, or choose an error's code and wording (`lang.parse`
does both). This and `lang.parse` are the only modules that import lark.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

import lark
from lark import Token
from lark.exceptions import LarkError, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_interactive_parser import InteractiveParser

from vpolicy.source import Span

GRAMMAR_NAME = "vpolicy.lark"
# Start symbols: a whole module, and one expression (a hole in "... {expr} ...").
START_MODULE = "start"
START_EXPR = "expr"


def grammar_path(*, checkout: Path | None = None, prefix: str | None = None) -> Path:
    """The grammar file: the checkout's `grammar/` first, then the wheel's `share/vpolicy/grammar/`.

    `checkout` (the folder holding the `vpolicy` package) and `prefix` default to this installation's.
    """
    checkout = checkout or Path(__file__).resolve().parent.parent.parent
    candidates = (
        checkout / "grammar" / GRAMMAR_NAME,
        Path(prefix or sys.prefix) / "share" / "vpolicy" / "grammar" / GRAMMAR_NAME,
    )
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    # A missing grammar is a broken installation, not a user mistake: an ordinary exception.
    raise FileNotFoundError(f"vpolicy grammar not found; looked in: {', '.join(map(str, candidates))}")


@lru_cache(maxsize=1)
def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def reserved_words() -> frozenset[str]:
    """The keywords NAME never matches, read from the grammar's NAME pattern (`fmt` quotes such keys)."""
    found = re.search(r"^NAME: /\(\?!\(([a-z|]+)\)", grammar_text(), re.MULTILINE)
    if found is None:
        raise ValueError("the grammar's NAME terminal no longer lists its reserved words")
    return frozenset(found.group(1).split("|"))


@lru_cache(maxsize=1)
def parser() -> lark.Lark:
    """The LALR parser (built once per process; the analysis is cached on disk by grammar hash)."""
    return build_parser(grammar_text(), cache=True)


class _NamesEverywhere:
    """Lets the contextual lexer try NAME in every state. Without it a state that accepts only keywords
    would read `rulex` as `rule x`; with it `rulex` is one name, reported as unexpected."""

    always_accept = ("NAME",)

    def process(self, stream: Iterator[lark.Token]) -> Iterator[lark.Token]:
        return stream


def build_parser(text: str, *, cache: bool = False) -> lark.Lark:
    """Build a parser from grammar text (tests build uncached ones to inspect conflicts)."""
    return lark.Lark(
        text,
        parser="lalr",
        lexer="contextual",
        postlex=_NamesEverywhere(),
        start=[START_MODULE, START_EXPR],
        propagate_positions=True,
        maybe_placeholders=True,
        cache=cache,
    )


def parse_tree(text: str, *, start: str = START_MODULE) -> lark.Tree[lark.Token]:
    """Parse text to a Lark tree; raises lark's `UnexpectedInput` (turned into diagnostics by `parse`)."""
    return parser().parse(text, start=start)


# ---------------------------------------------------------------------------------------------- vocabulary
# Terminal names in words, for "expected ..." messages; anonymous keywords and punctuation are quoted.
_WORDS = {
    "NAME": "a name", "STRING": "a string", "NUMBER": "a number", "QUANTITY": "a quantity",
    "MODKIND": "'plugin' or 'policy'", "AGG": "an aggregate", "VOTE": "a vote", "TRUE": "'true'",
    "FALSE": "'false'", "COMP_OP": "a comparison", "ADD_OP": "'+' or '-'", "MUL_OP": "'*' or '/'",
    "$END": "end of file",
}
# Terminals that may start an expression; the first three are acceptable wherever any of them is.
EXPR_CORE = frozenset({"NAME", "NUMBER", "LPAR"})
EXPR_START = EXPR_CORE | {"QUANTITY", "STRING", "TRUE", "FALSE", "VOTE", "AGG", "LSQB", "LBRACE", "MINUS",
                          "NOT", "IF", "LET", "SELECT"}
# Terminals that may continue a finished expression.
OPERATORS = frozenset({"ADD_OP", "MUL_OP", "COMP_OP", "AND", "OR", "DOT", "LSQB"})
DECL_START = frozenset({"PARAM", "LET", "RULE", "PROPERTY", "TIER", "ACTIONS"})
RULE_CLAUSES = frozenset({"NORMALIZE", "UNRESOLVABLE", "REASON", "MESSAGE"})
OPERATOR_TOKENS = frozenset({"ADD_OP", "MUL_OP", "COMP_OP", "AND", "OR", "NOT", "MINUS"})


def terminal_literal(name: str) -> str | None:
    """The fixed text of a keyword or punctuation terminal (`RPAR` -> `)`), else None."""
    try:
        pattern = parser().get_terminal(name).pattern
    except KeyError:
        return None
    return pattern.value if pattern.type == "str" else None


def describe_terminal(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    literal = terminal_literal(name)
    return f"'{literal}'" if literal is not None else name.lower()


def describe_expected(names: frozenset[str] | set[str]) -> str:
    """`{"RPAR", "COMMA"}` -> "',' or ')'"; whole families become "an expression", "an operator"..."""
    rest = set(names)
    groups: list[str] = []
    if EXPR_CORE <= rest:
        groups.append("an expression")
        rest -= EXPR_START
    if {"ADD_OP", "MUL_OP"} <= rest:
        groups.append("an operator")
        rest -= OPERATORS
    for family, words in ((RULE_CLAUSES, "a rule clause"), (DECL_START, "a declaration")):
        if family <= rest:
            groups.append(words)
            rest -= family
    end = ["end of file"] if "$END" in rest else []
    items = groups + sorted(describe_terminal(n) for n in rest - {"$END"}) + end
    if not items:
        return "nothing more"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def describe_token(token: lark.Token) -> str:
    """How an error message names what it found: "name 'x'", "'='", "keyword 'rule'", "the end of the file"."""
    kind, text = token.type, str(token)
    if kind == "$END":
        return "end of file"
    if kind == "NAME":
        return f"name '{text}'"
    if kind == "STRING":
        return f"string {text}"
    if kind in ("NUMBER", "QUANTITY"):
        return f"number {text}"
    if text.isidentifier():
        return f"keyword '{text}'"
    return f"'{text}'"


def is_keyword(token: lark.Token) -> bool:
    return token.type not in ("NAME", "$END") and str(token).isidentifier()


# ---------------------------------------------------------------------------------------------- reading errors
def accepted_terminals(exc: UnexpectedInput, *, hole: bool = False) -> set[str]:
    """The terminals the parser would really take here. LALR's merged states over-approximate
    (`exc.expected` lists rule clauses after a `let`), so ask the interactive parser, which simulates
    the pending reductions on the actual stack. In a hole the end of input is the closing brace."""
    accepted: set[str]
    try:
        if isinstance(exc, UnexpectedToken) and exc.interactive_parser is not None:
            accepted = set(exc.accepts)
        elif exc.state is not None:
            cursor = InteractiveParser(parser(), exc.state.copy(), exc.state.lexer)
            accepted = cursor.accepts()  # type: ignore[no-untyped-call]  # reason: lark leaves accepts() unannotated
        else:
            accepted = set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    except LarkError:
        accepted = set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    if hole and "$END" in accepted:
        accepted = (accepted - {"$END"}) | {"RBRACE"}
    return accepted


def tokens_before(text: str, stop: int) -> list[Token]:
    """The tokens before offset `stop` (comments and blanks dropped), as far as they lex."""
    out: list[Token] = []
    try:
        for tok in parser().lex(text[:stop], dont_ignore=True):
            if tok.type not in ("WS", "COMMENT"):
                out.append(tok)
    except LarkError:
        pass
    return out


_CLOSERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
_KEYWORD_WAIT = {"IF": "THEN", "THEN": "ELSE", "LET": "IN", "SELECT": "WHEN"}
# Tokens after which `let` starts an expression rather than a declaration.
_EXPR_BEFORE = frozenset({"EQUAL", "LPAR", "COMMA", "THEN", "ELSE", "IN", "COLON", "LSQB", "LBRACE", "IF",
                          "WHERE", "WHEN", "BY"}) | OPERATOR_TOKENS


def waiting_for(expected: set[str], before: list[Token], place: Callable[[int, int], Span]) -> str | None:
    """Jinja-style: what the parser still waits for, with where that construct was opened."""
    prev = before[-1] if before else None
    if prev is not None and EXPR_CORE <= expected:
        return f"expected an expression after '{prev}'"
    stack: list[tuple[str, int]] = []  # (opening token type, index into before)
    for i, tok in enumerate(before):
        kind = tok.type
        if kind in _CLOSERS or kind in ("IF", "SELECT") or (
                kind == "LET" and i > 0 and before[i - 1].type in _EXPR_BEFORE):
            stack.append((kind, i))
        elif kind in _CLOSERS.values():
            while stack and _CLOSERS.get(stack[-1][0]) != kind:
                stack.pop()
            if stack:
                stack.pop()
        elif kind in ("THEN", "ELSE", "IN", "WHEN") and stack and _KEYWORD_WAIT.get(stack[-1][0]) == kind:
            opened = stack.pop()
            if kind == "THEN":
                stack.append(("THEN", opened[1]))
    if not stack:
        return None
    kind, index = stack[-1]
    closer = _CLOSERS.get(kind) or _KEYWORD_WAIT[kind]
    if closer not in expected:
        return None
    opener = before[index]
    where = place(opener.line or 1, opener.column or 1)
    at = f"{where.line}:{where.col}"
    if kind in ("IF", "THEN", "LET", "SELECT"):
        return f"expected {describe_terminal(closer)} to go with the '{opener}' at {at}"
    extra = "',' or " if "COMMA" in expected else ("'use' or " if "USE" in expected else "")
    return f"expected {extra}{describe_terminal(closer)} to close the {_what(before, index)} opened at {at}"


def _what(before: list[Token], index: int) -> str:
    """What an opening bracket began: call, argument list, aggregate, index, list, tier..."""
    kind = before[index].type
    prev = [t.type for t in before[max(0, index - 4) : index]]
    if kind == "LPAR":
        if prev[-1:] == ["AGG"]:
            return "aggregate"
        if prev[-4:] == ["RULE", "NAME", "COLON", "NAME"]:
            return "argument list"
        if prev[-2:] == ["LET", "NAME"]:
            return "parameter list"
        return "call" if prev[-1:] == ["NAME"] else "parenthesis"
    if kind == "LSQB":
        return "index" if prev[-1:] and prev[-1] in ("NAME", "RPAR", "RSQB", "STRING") else "list"
    if prev[-1:] == ["TIER"]:
        return "tier"
    return "settings" if prev[-1:] == ["STRING"] else "resource literal"
