"""Canonical layout of a module: `format_module(module) -> str` (what `vpolicy fmt` writes).

What it does: describes every declaration as a `lang.layout` document (groups that stay on one line when
they fit and break otherwise, outermost first) and prints it in `WIDTH` columns. The rules, which
docs/dsl.md §7 states for authors:

- Declarations: one blank line between them; `param`s, and `let`s, that the source has directly under
  one of their kind stay together. A `let`/`rule`/`property` body that does not fit after its head
  starts on the next line, indented 4; rule clauses follow one per line (normalize, unresolvable,
  reason, message, every); a `param` that does not fit puts its doc string on the next line.
- `and`/`or` chains break before each operator, one operand per line under the first; arithmetic and
  comparisons break before an operator, as many operands per line as fit, the rest indented 4.
- `if`/`else if`/`else` one branch per line; a `then` branch that does not fit goes on the next line
  indented 4, and `then` starts its own line when the condition breaks. `let X = V in` puts its body on
  the next line; `select` puts each clause on its own line (always, when it has a `group`).
- Aggregates break after `:`, the body under the variable (a breaking `where` goes on 4 further); calls
  one argument per line under the first; list and resource literals as many items per line as fit.
- What follows a keyword (`when`, `where`, `if`, `let X =`, ...) or an opening bracket breaks under its
  own first character.
- Parentheses: those precedence needs, and around an `and` inside an `or` and around an `if`, `let` or
  `select` in a `then` branch. Numbers and quantities are written as the source wrote them.

Guarantee: `parse(format_module(m)) == m` (AST equality ignores spans and number spellings), and
formatting is idempotent: the layout is a function of the AST, plus, for blank lines only, of which
declarations were adjacent (their spans).

What it does not do: keep comments other than docs. Comment lines directly above a declaration are its
`doc` and are written back above it; `harness.fmt` puts every other comment back. A parameter's doc is
written as its trailing string. It never rewraps a string or a comment (such lines may pass `WIDTH`).
"""
from __future__ import annotations

import itertools

from vpolicy.lang import ast, grammar
from vpolicy.lang import layout as L

WIDTH = 100  # the line limit of the project's code, for policies too
INDENT = 4
# Binding strength, loosest first: if/let/select < or < and < not < comparison < +- < */ < unary - <
# postfix (. and []) < atoms.
_EXPR, _OR, _AND, _NOT, _CMP, _SUM, _PRODUCT, _UNARY, _POSTFIX, _ATOM = range(10)
_BINARY = {"or": _OR, "and": _AND, "+": _SUM, "-": _SUM, "*": _PRODUCT, "/": _PRODUCT}
_COMMA = L.concat(",", L.line)
_NAMES = itertools.count()  # unique names for groups that `if_broken` asks about


def format_module(module: ast.Module, *, width: int = WIDTH) -> str:
    """The module in the canonical layout (`width`: the line limit; tests use small ones)."""
    header = f"{module.kind} {module.name}" + (f" {_plain(module.doc)}" if module.doc else "")
    out = [header]
    previous: ast.Decl | None = None
    for decl in module.decls:
        if previous is None or not _together(previous, decl):
            out.append("")  # a blank line
        out.append(_doc(decl) + L.render(_decl(decl), width))
        previous = decl
    return "\n".join(out) + "\n"


def format_expr(expr: ast.Expr) -> str:
    """One expression on one line (string holes, messages, tests)."""
    return L.flat_text(_expr(expr, _EXPR))


def layout_expr(expr: ast.Expr, width: int = WIDTH) -> str:
    """One expression laid out in `width` columns (tests and tools)."""
    return L.render(_expr(expr, _EXPR), width)


# ---------------------------------------------------------------------------------------------- declarations
def _together(before: ast.Decl, decl: ast.Decl) -> bool:
    """Whether `decl` stays directly under `before`: both `param`s or both `let`s, and adjacent in the
    source (a doc or a comment above `decl` makes them not adjacent)."""
    if type(before) is not type(decl) or not isinstance(decl, (ast.Param, ast.LetDecl)):
        return False
    end = before.span.end_line or before.span.line
    return before.span.line > 0 and decl.span.line == end + 1


def _decl(decl: ast.Decl) -> L.Doc:
    if isinstance(decl, ast.Param):
        head = f"param {decl.name}: {_type(decl.type)} = "
        key = f" from {_plain(decl.conf_key)}" if decl.conf_key else ""
        main = L.concat(head, L.align(_expr(decl.default, _EXPR)), key)
        if not decl.doc:
            return main
        return L.group(L.concat(main, L.nest(INDENT, L.concat(L.line, _plain(decl.doc)))))
    if isinstance(decl, ast.LetDecl):
        params = f"({', '.join(map(_binder, decl.params))})" if decl.params is not None else ""
        typed = f": {_type(decl.type)}" if decl.type is not None else ""
        return _with_body(f"let {decl.name}{params}{typed} =", decl.value)
    if isinstance(decl, ast.Rule):
        head = f"rule {decl.name}: {decl.callback}({', '.join(map(_binder, decl.params))}) ="
        clauses: list[L.Doc | str] = []
        if decl.normalize is not None:
            mode = decl.normalize.mode or ("reverse" if decl.normalize.reverse else "")
            word = f"{mode} " if mode else ""
            clauses.append(L.concat(f"normalize {word}by ", L.align(_expr(decl.normalize.weight, _SUM))))
        if decl.unresolvable:
            clauses.append("unresolvable")
        for word, clause in (("reason", decl.reason), ("message", decl.message)):
            if clause is not None:
                clauses.append(f"{word} {_interp(clause)}")
        if decl.every is not None:
            clauses.append(L.concat("every ", L.align(_expr(decl.every, _SUM)),
                                    " from start" if decl.every_from_start else ""))
        lines = [L.concat(L.hardline, c) for c in clauses]
        return L.concat(_with_body(head, decl.body), L.nest(INDENT, L.concat(*lines)))
    if isinstance(decl, ast.Property):
        return _with_body(f"property {decl.name}:", decl.body)
    if isinstance(decl, ast.Tier):
        uses = [L.concat(L.hardline, _use(u)) for u in decl.uses]
        return L.concat("tier {", L.nest(INDENT, L.concat(*uses)), L.hardline, "}")
    return L.concat("actions ", L.align(L.fill(map(L.text, decl.names), _COMMA)))


def _doc(decl: ast.Decl) -> str:
    doc = "" if isinstance(decl, (ast.Param, ast.Tier, ast.Actions)) else decl.doc
    return "".join(f"# {line}\n" if line else "#\n" for line in doc.split("\n")) if doc else ""


def _with_body(head: str, body: ast.Expr) -> L.Doc:
    """`head body` on one line, or the body on the next lines, indented."""
    return L.group(L.concat(head, L.nest(INDENT, L.concat(L.line, _expr(body, _EXPR)))))


def _use(use: ast.Use) -> L.Doc:
    if not use.settings:
        return L.text(f"use {_plain(use.path)}")
    entries = [L.concat(f"{_key(k, dotted=True)}: ", L.align(_expr(v, _EXPR))) for k, v in use.settings]
    return L.group(L.concat(f"use {_plain(use.path)} ", _bracketed("{", entries, "}", packed=True)))


def _binder(binder: ast.Binder) -> str:
    return binder.name if binder.type is None else f"{binder.name}: {_type(binder.type)}"


def _type(ref: ast.TypeRef) -> str:
    return ref.name + (f"[{', '.join(map(_type, ref.args))}]" if ref.args else "")


# ---------------------------------------------------------------------------------------------- expressions
def _expr(expr: ast.Expr, need: int) -> L.Doc:
    """`expr` as a document, in parentheses when it binds more loosely than its place needs."""
    doc, own = _bare(expr)
    return L.concat("(", L.align(doc), ")") if own < need else doc


def _bare(e: ast.Expr) -> tuple[L.Doc, int]:  # reason: one branch per node class
    if isinstance(e, ast.Name):
        return L.text(e.id), _ATOM
    if isinstance(e, ast.Literal):
        return L.text(_literal(e)), _ATOM
    if isinstance(e, ast.VoteLit):
        return L.text(e.value), _ATOM
    if isinstance(e, ast.Interp):
        return L.text(_interp(e)), _ATOM
    if isinstance(e, ast.ResourceLit):
        entries = [L.concat(f"{_key(k, dotted=False)}: ", L.align(_expr(v, _EXPR))) for k, v in e.entries]
        return L.group(_bracketed("{", entries, "}", packed=True)), _ATOM
    if isinstance(e, ast.ListLit):
        return L.group(_bracketed("[", [_item(i) for i in e.items], "]", packed=True)), _ATOM
    if isinstance(e, ast.Call):
        return L.group(_bracketed(f"{e.func}(", [_item(a) for a in e.args], ")", packed=False)), _ATOM
    if isinstance(e, ast.Aggregate):
        return _aggregate(e), _ATOM
    if isinstance(e, ast.Attr):
        return L.concat(_expr(e.obj, _POSTFIX), f".{e.name}"), _POSTFIX
    if isinstance(e, ast.Index):
        return L.concat(_expr(e.obj, _POSTFIX), "[", L.align(_expr(e.key, _EXPR)), "]"), _POSTFIX
    if isinstance(e, ast.Unary):
        if e.op == "not":
            return L.concat("not ", _expr(e.operand, _NOT)), _NOT
        return L.concat("-", _expr(e.operand, _UNARY)), _UNARY
    if isinstance(e, ast.Binary):
        return _binary(e)
    if isinstance(e, ast.If):
        return _if_chain(e, when=False), _EXPR
    if isinstance(e, ast.Let):
        head = L.concat(f"let {e.name} = ", L.align(_expr(e.value, _EXPR)), " in")
        return L.align(L.group(L.concat(head, L.line, _expr(e.body, _EXPR)))), _EXPR
    return _select(e), _EXPR


def _binary(e: ast.Binary) -> tuple[L.Doc, int]:
    own = _BINARY.get(e.op, _CMP)
    if own == _CMP:  # not chainable: `a op b`, breaking before the operator
        rest = L.nest(INDENT, L.concat(L.line, f"{e.op} ", _expr(e.right, _SUM)))
        return L.group(L.concat(_expr(e.left, _SUM), rest)), _CMP
    # A left-leaning run of one binding strength: `a - b + c` is one chain of three operands.
    ops: list[tuple[str, ast.Expr]] = []
    node: ast.Expr = e
    while isinstance(node, ast.Binary) and _BINARY.get(node.op) == own:
        ops.append((node.op, node.right))
        node = node.left
    # An `and` inside an `or` is parenthesised though precedence does not need it: it reads unambiguously.
    operand = _NOT if own == _OR else own + 1
    first = _expr(node, _NOT if own == _OR else own)
    tail = [L.concat(f"{op} ", _expr(right, operand)) for op, right in reversed(ops)]
    if own in (_OR, _AND):  # a list of conditions: one per line, under the first
        return L.group(L.concat(first, *(L.concat(L.line, t) for t in tail))), own
    # Arithmetic: as many operands per line as fit, the rest indented.
    return L.nest(INDENT, L.fill([first, *tail], L.line)), own


def _item(expr: ast.Expr) -> L.Doc:
    """An argument or list item: a breaking `and`/`or` chain is indented past the next item's column."""
    doc = _expr(expr, _EXPR)
    if isinstance(expr, ast.Binary) and expr.op in ("and", "or"):
        return L.nest(INDENT, doc)
    return doc


def _bracketed(open_: str, items: list[L.Doc], close: str, *, packed: bool) -> L.Doc:
    """`open item, item close`, items under the first when it breaks: one per line, or `packed` as many
    per line as fit (literals)."""
    if not items:
        return L.text(open_ + close)
    body = L.fill(items, _COMMA) if packed else L.join(_COMMA, items)
    return L.concat(open_, L.align(L.concat(body, close)))


def _aggregate(e: ast.Aggregate) -> L.Doc:
    """`f(x in xs where c: body)`: the body goes under `x` when it does not fit after `:`; a breaking
    `where` condition goes on indented 4 past `x`, so it cannot be read as the body."""
    head: L.Doc = L.concat(f"{e.var} in ", L.align(_expr(e.source, _EXPR)))
    if e.where is not None:
        head = L.concat(head, " where ", L.nest(INDENT, _expr(e.where, _EXPR)))
    if e.body is None:
        return L.concat(f"{e.func}(", L.align(L.concat(head, ")")))
    body = L.group(L.concat(head, ":", L.line, _expr(e.body, _EXPR), ")"))
    return L.concat(f"{e.func}(", L.align(body))


def _if_chain(e: ast.If, *, when: bool) -> L.Doc:
    """`if C then A` / `else if C then A` / `else B`, one branch per line when the chain breaks. Inside a
    select's `when` every branch is an or-level expression (the grammar's `when` chain)."""
    branches: list[L.Doc] = []
    node: ast.Expr = e
    keyword = "if "
    while isinstance(node, ast.If):
        name = f"if-{next(_NAMES)}"
        cond = L.group(L.align(_expr(node.cond, _OR)), name=name)
        then = L.align(_expr(node.then, _OR))
        # `then A` under the `if` when the condition breaks; else after it, A on the next line if need be.
        after = L.if_broken(name, L.concat(L.line, "then ", then),
                            L.group(L.concat(" then", L.nest(INDENT, L.concat(L.line, then)))))
        branches.append(L.concat(keyword, cond, after))
        node, keyword = node.orelse, "else if "
    last = L.align(_expr(node, _OR if when else _EXPR))
    if isinstance(node, (ast.Let, ast.Select)):  # a block: on the next lines when it does not fit here
        branches.append(L.group(L.concat("else", L.nest(INDENT, L.concat(L.line, last)))))
    else:
        branches.append(L.concat("else ", last))
    return L.align(L.group(L.join(L.line, branches)))


def _select(e: ast.Select) -> L.Doc:
    clauses: list[L.Doc] = []
    if e.group_key is not None and e.group_start is not None:
        clauses.append(L.concat("group ", L.align(_expr(e.group_key, _OR)), " start ",
                                L.align(_expr(e.group_start, _OR)), f" as {e.state}"))
    clauses.append(L.concat("when ", L.align(_when(e.when))))
    if e.then is not None:
        clauses.append(L.concat("after " if e.after else "then ", L.align(_expr(e.then, _OR))))
    head = L.concat(f"select {e.var} in ", L.align(_expr(e.source, _OR)))
    body = L.nest(INDENT, L.concat(*(L.concat(L.line, c) for c in clauses)))
    # A select that keeps state per group reads as a table of clauses, however short.
    return L.align(L.group(L.concat(head, body), broken=e.group_key is not None))


def _when(expr: ast.Expr) -> L.Doc:
    """A select's condition: an or-level expression, or an if/else chain of them."""
    return _if_chain(expr, when=True) if isinstance(expr, ast.If) else _expr(expr, _OR)


# ---------------------------------------------------------------------------------------------- text
def _literal(lit: ast.Literal) -> str:
    if lit.kind == "bool":
        return "true" if lit.value else "false"
    if lit.kind == "string":
        return '"' + _escape(str(lit.value)).replace("{", "{{").replace("}", "}}") + '"'
    if lit.kind in ("int", "number") and lit.text and _written(lit):
        return lit.text
    if lit.kind == "number" and isinstance(lit.value, float):
        return repr(lit.value)
    return str(lit.value)  # int, quantity (kept as written)


def _written(lit: ast.Literal) -> bool:
    """Whether the number's source text still says its value (a rewritten node may carry a stale one)."""
    try:
        value = int(lit.text) if lit.kind == "int" else float(lit.text)
    except ValueError:
        return False
    return value == lit.value and (lit.kind == "int") == lit.text.isdigit()


def _interp(interp: ast.Interp) -> str:
    out: list[str] = []
    for part in interp.parts:
        if isinstance(part, str):
            out.append(_escape(part).replace("{", "{{").replace("}", "}}"))
        else:
            hole = format_expr(part)
            if '"' in hole:
                raise ValueError(f"a string cannot appear inside a '{{...}}' hole: {hole}")
            out.append("{" + (f" {hole}" if hole.startswith("{") else hole) + "}")
    return '"' + "".join(out) + '"'


def _plain(text: str) -> str:
    return f'"{_escape(text)}"'


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def _key(key: str, *, dotted: bool) -> str:
    parts = key.split(".") if dotted else [key]
    if all(p.isidentifier() and p.isascii() and p not in grammar.reserved_words() for p in parts):
        return key
    return _plain(key)
