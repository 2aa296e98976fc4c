"""Canonical layout of a module: `format_module(module) -> str` (what `vpolicy fmt` writes).

What it does: prints declarations one per block separated by blank lines, expressions with one space
around binary operators and only the parentheses precedence needs, long bodies on their own lines with
4-space continuation indents, `select` clauses one per line, long `if`/`else if` chains one branch per
line, rule clauses (normalize, unresolvable, reason, message) one per line in that order.
Guarantee: `parse(format_module(m)) == m` (AST equality ignores spans), so formatting is idempotent.

What it does not do: keep comments. Comment lines directly above a declaration are its `doc` and are
written back above it; every other comment (inside expressions, at the end of a line, above `tier` or
`actions`) is dropped. A parameter's doc is written as its trailing string. It reads only the AST,
never the text (`lang.parse` builds the AST).
"""
from __future__ import annotations

from vpolicy.lang import ast, grammar

WIDTH = 100  # a body that would make its first line longer goes on the next lines
INDENT = "    "
# Binding strength, loosest first: if/let/select < or < and < not < comparison < +- < */ < unary - <
# postfix (. and []) < atoms.
_EXPR, _OR, _AND, _NOT, _CMP, _SUM, _PRODUCT, _UNARY, _POSTFIX, _ATOM = range(10)
_BINARY = {"or": _OR, "and": _AND, "+": _SUM, "-": _SUM, "*": _PRODUCT, "/": _PRODUCT}


def format_module(module: ast.Module) -> str:
    header = f"{module.kind} {module.name}" + (f" {_plain(module.doc)}" if module.doc else "")
    blocks = [header] + [_decl(d) for d in module.decls]
    return "\n\n".join(blocks) + "\n"


def format_expr(expr: ast.Expr) -> str:
    """One expression on one line (holes, messages, tests)."""
    return _expr(expr, _EXPR)


# ---------------------------------------------------------------------------------------------- declarations
def _decl(decl: ast.Decl) -> str:
    if isinstance(decl, ast.Param):
        text = f"param {decl.name}: {_type(decl.type)} = {_expr(decl.default, _EXPR)}"
        if decl.conf_key:
            text += f" from {_plain(decl.conf_key)}"
        return text + (f" {_plain(decl.doc)}" if decl.doc else "")
    if isinstance(decl, ast.LetDecl):
        params = f"({', '.join(map(_binder, decl.params))})" if decl.params is not None else ""
        typed = f": {_type(decl.type)}" if decl.type is not None else ""
        return _doc(decl.doc) + _with_body(f"let {decl.name}{params}{typed} =", decl.value)
    if isinstance(decl, ast.Rule):
        head = f"rule {decl.name}: {decl.callback}({', '.join(map(_binder, decl.params))}) ="
        lines = [_with_body(head, decl.body)]
        if decl.normalize is not None:
            reverse = "reverse " if decl.normalize.reverse else ""
            lines.append(f"{INDENT}normalize {reverse}by {_expr(decl.normalize.weight, _SUM)}")
        if decl.unresolvable:
            lines.append(f"{INDENT}unresolvable")
        for word, clause in (("reason", decl.reason), ("message", decl.message)):
            if clause is not None:
                lines.append(f"{INDENT}{word} {_interp(clause)}")
        return _doc(decl.doc) + "\n".join(lines)
    if isinstance(decl, ast.Property):
        return _doc(decl.doc) + _with_body(f"property {decl.name}:", decl.body)
    if isinstance(decl, ast.Tier):
        return "\n".join(["tier {", *(f"{INDENT}{_use(u)}" for u in decl.uses), "}"])
    return f"actions {', '.join(decl.names)}"


def _doc(doc: str) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in doc.split("\n")) if doc else ""


def _with_body(head: str, body: ast.Expr) -> str:
    lines = _layout(body)
    if len(lines) == 1 and len(head) + 1 + len(lines[0]) <= WIDTH:
        return f"{head} {lines[0]}"
    return "\n".join([head, *(INDENT + line for line in lines)])


def _use(use: ast.Use) -> str:
    if not use.settings:
        return f"use {_plain(use.path)}"
    entries = ", ".join(f"{_key(k, dotted=True)}: {_expr(v, _EXPR)}" for k, v in use.settings)
    return f"use {_plain(use.path)} {{{entries}}}"


def _binder(binder: ast.Binder) -> str:
    return binder.name if binder.type is None else f"{binder.name}: {_type(binder.type)}"


def _type(ref: ast.TypeRef) -> str:
    return ref.name + (f"[{', '.join(map(_type, ref.args))}]" if ref.args else "")


# ---------------------------------------------------------------------------------------------- layout
def _layout(expr: ast.Expr) -> list[str]:
    """A top-level body as lines: select clauses, long if/let chains and long and/or chains split."""
    one = _expr(expr, _EXPR)
    if isinstance(expr, ast.Select):
        lines = [f"select {expr.var} in {_expr(expr.source, _OR)}"]
        if expr.group_key is not None and expr.group_start is not None:
            lines.append(f"{INDENT}group {_expr(expr.group_key, _OR)} start {_expr(expr.group_start, _OR)}"
                         f" as {expr.state}")
        long = len(_when(expr.when)) > WIDTH - 3 * len(INDENT)
        chained = isinstance(expr.when, ast.Binary) and expr.when.op in ("and", "or")
        when = _chain(expr.when) if long and chained else [_when(expr.when)]
        lines.append(f"{INDENT}when {when[0]}")
        lines.extend(f"{INDENT * 2}{line}" for line in when[1:])
        if expr.then is not None:
            lines.append(f"{INDENT}{'after' if expr.after else 'then'} {_expr(expr.then, _OR)}")
        return lines
    if len(one) <= WIDTH - len(INDENT):
        return [one]
    if isinstance(expr, ast.If):
        return [f"if {_expr(expr.cond, _OR)} then {_expr(expr.then, _EXPR)}", *_else(expr.orelse)]
    if isinstance(expr, ast.Let):
        return [f"let {expr.name} = {_expr(expr.value, _EXPR)} in", *_layout(expr.body)]
    return _chain(expr)


def _else(expr: ast.Expr) -> list[str]:
    if isinstance(expr, ast.If):
        return [f"else if {_expr(expr.cond, _OR)} then {_expr(expr.then, _EXPR)}", *_else(expr.orelse)]
    first, *rest = _layout(expr)
    return [f"else {first}", *(INDENT + line for line in rest)]


def _chain(expr: ast.Expr) -> list[str]:
    """`a and b and c` as lines `a`, `and b`, `and c` (likewise `or`); anything else on one line."""
    if not (isinstance(expr, ast.Binary) and expr.op in ("and", "or")):
        return [_expr(expr, _OR) if isinstance(expr, ast.If) else _expr(expr, _EXPR)]
    own = _BINARY[expr.op]
    operands: list[ast.Expr] = []
    node: ast.Expr = expr
    while isinstance(node, ast.Binary) and node.op == expr.op:
        operands.append(node.right)
        node = node.left
    first = _expr(node, own)
    return [first, *(f"{expr.op} {_expr(o, own + 1)}" for o in reversed(operands))]


# ---------------------------------------------------------------------------------------------- expressions
def _expr(expr: ast.Expr, need: int) -> str:
    """`expr` as text, in parentheses when it binds more loosely than its place needs."""
    text, own = _bare(expr)
    return f"({text})" if own < need else text


def _bare(e: ast.Expr) -> tuple[str, int]:  # reason: one branch per node class
    if isinstance(e, ast.Name):
        return e.id, _ATOM
    if isinstance(e, ast.Literal):
        return _literal(e), _ATOM
    if isinstance(e, ast.VoteLit):
        return e.value, _ATOM
    if isinstance(e, ast.Interp):
        return _interp(e), _ATOM
    if isinstance(e, ast.ResourceLit):
        return "{" + ", ".join(f"{_key(k, dotted=False)}: {_expr(v, _EXPR)}" for k, v in e.entries) + "}", _ATOM
    if isinstance(e, ast.ListLit):
        return "[" + ", ".join(_expr(i, _EXPR) for i in e.items) + "]", _ATOM
    if isinstance(e, ast.Call):
        return f"{e.func}({', '.join(_expr(a, _EXPR) for a in e.args)})", _ATOM
    if isinstance(e, ast.Aggregate):
        text = f"{e.func}({e.var} in {_expr(e.source, _EXPR)}"
        text += f" where {_expr(e.where, _EXPR)}" if e.where is not None else ""
        text += f": {_expr(e.body, _EXPR)}" if e.body is not None else ""
        return text + ")", _ATOM
    if isinstance(e, ast.Attr):
        return f"{_expr(e.obj, _POSTFIX)}.{e.name}", _POSTFIX
    if isinstance(e, ast.Index):
        return f"{_expr(e.obj, _POSTFIX)}[{_expr(e.key, _EXPR)}]", _POSTFIX
    if isinstance(e, ast.Unary):
        if e.op == "not":
            return f"not {_expr(e.operand, _NOT)}", _NOT
        return f"-{_expr(e.operand, _UNARY)}", _UNARY
    if isinstance(e, ast.Binary):
        own = _BINARY.get(e.op, _CMP)
        left, right = (_SUM, _SUM) if own == _CMP else (own, own + 1)
        return f"{_expr(e.left, left)} {e.op} {_expr(e.right, right)}", own
    if isinstance(e, ast.If):
        return f"if {_expr(e.cond, _OR)} then {_expr(e.then, _EXPR)} else {_expr(e.orelse, _EXPR)}", _EXPR
    if isinstance(e, ast.Let):
        return f"let {e.name} = {_expr(e.value, _EXPR)} in {_expr(e.body, _EXPR)}", _EXPR
    text = f"select {e.var} in {_expr(e.source, _OR)}"
    if e.group_key is not None and e.group_start is not None:
        text += f" group {_expr(e.group_key, _OR)} start {_expr(e.group_start, _OR)} as {e.state}"
    text += f" when {_when(e.when)}"
    if e.then is not None:
        text += f" {'after' if e.after else 'then'} {_expr(e.then, _OR)}"
    return text, _EXPR


def _when(expr: ast.Expr) -> str:
    """A select's condition: an orexpr, or an if/else chain whose branches are themselves such."""
    if isinstance(expr, ast.If) and _when_chain(expr):
        return f"if {_expr(expr.cond, _OR)} then {_when(expr.then)} else {_when(expr.orelse)}"
    return _expr(expr, _OR)


def _when_chain(expr: ast.Expr) -> bool:
    if isinstance(expr, ast.If):
        return _when_chain(expr.then) and _when_chain(expr.orelse)
    return _bare(expr)[1] >= _OR


def _literal(lit: ast.Literal) -> str:
    if lit.kind == "bool":
        return "true" if lit.value else "false"
    if lit.kind == "string":
        return '"' + _escape(str(lit.value)).replace("{", "{{").replace("}", "}}") + '"'
    if lit.kind == "number" and isinstance(lit.value, float):
        return repr(lit.value)
    return str(lit.value)  # int, quantity (kept as written)


def _interp(interp: ast.Interp) -> str:
    out: list[str] = []
    for part in interp.parts:
        if isinstance(part, str):
            out.append(_escape(part).replace("{", "{{").replace("}", "}}"))
        else:
            hole = _expr(part, _EXPR)
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
