"""Policy text to the typed AST: one Lark Transformer, spans on every node, lark errors as diagnostics.

What it does: parses a file with `lang.grammar`'s LALR parser and builds `lang.ast` nodes, each with a
`Span` (1-based line/col, inclusive end). Strings are unescaped; strings with `{expr}` holes become
`Interp` (always so for `reason`/`message`), each hole parsed with the `expr` start symbol and its spans
moved to the hole's place in the file. Comment lines directly above a declaration become its `doc`
(a parameter's trailing string wins; of two declarations on one line, only the first has them). A syntax error becomes a `PolicyError` holding exactly one
diagnostic that says what was found and what the parser was waiting for ("expected ')' to close the call
opened at 3:12"); common mistakes are recognised from the example table `SYNTAX_EXAMPLES` (lark's
`match_examples`) and a few token rules, and get their own codes. A tree nested deeper than `MAX_DEPTH`
is refused (`parse.too-deep`) before anything recurses over it. Terminals in words come from `grammar`.

What it does not do: names, types and duplicates (`lang.check`), layout (`lang.fmt`).
Invariant: only `vpolicy.lang` imports lark; every other package sees `ast` nodes and diagnostics.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lark import Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.tree import Meta

from vpolicy import errors, source
from vpolicy.lang import ast, grammar
from vpolicy.load import textfile
from vpolicy.source import Span

_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}
# How deeply a file may nest, in grammar nodes: a declaration is one level, and so is each operator,
# call, aggregate, list, resource literal, `if`, `let` or `select` inside another (parentheses are free).
# Everything after the parser walks the tree recursively (this module's transformer, the checker, the
# formatter, the compiler's rewrites, Python's own compiler of the generated code); all of them handle
# this depth in every shape, and real policies nest a dozen levels or so.
MAX_DEPTH = 100


@dataclass(frozen=True, slots=True)
class SyntaxLabel:
    """A classified syntax mistake: its code, its message (`{found}` names the token), and a hint.

    `by_state`: recognised by lark's `match_examples` (the parser stopped in the same state as on one of
    the examples); otherwise by `_match_tokens`, from the tokens alone, whatever the nesting depth.
    """

    code: str
    message: str
    help: str | None = None
    by_state: bool = True


# Known mistakes with examples of each. Every example is also a test (tests/lang/test_parse_errors.py),
# so the table cannot rot.
SYNTAX_EXAMPLES: tuple[tuple[SyntaxLabel, tuple[str, ...]], ...] = (
    (SyntaxLabel("parse.missing-header", "unexpected {found}; expected 'plugin NAME' or 'policy NAME' first",
                 "every file starts with its kind and name, e.g. 'plugin gang'"),
     ("rule r: job_valid(job) = true", "let x = 1", "# comment\nparam w: int = 1")),
    (SyntaxLabel("parse.rule-missing-equals",
                 "unexpected {found}; expected '=' between the callback's arguments and the rule's body",
                 "a rule reads 'rule NAME: CALLBACK(ARGS) = EXPR'"),
     ("plugin p\nrule r: job_valid(job) job.min_available > 0", "plugin p\nrule r: job_valid(job) true")),
    (SyntaxLabel("parse.rule-missing-arguments", "unexpected {found}; expected '(' after the callback's name",
                 "a rule names the callback's arguments, as in 'job_valid(job)'"),
     ("plugin p\nrule r: job_valid = true", "plugin p\nrule r: job_valid job = true")),
    (SyntaxLabel("parse.double-equals", "'==' where a definition takes '='", "'==' compares; '=' defines",
                 by_state=False),
     ("plugin p\nrule r: job_valid(job) == true", "plugin p\nlet x == 1", "plugin p\nparam w: int == 1")),
    (SyntaxLabel("parse.single-equals", "'=' where a comparison takes '=='", "'=' defines; '==' compares",
                 by_state=False),
     ("plugin p\nlet x = a = b", "plugin p\nrule r: job_valid(job) = if job.priority = 1 then true else false")),
    (SyntaxLabel("parse.missing-operand", "unexpected {found}; expected an expression after {prev}", by_state=False),
     ("plugin p\nlet x = 1 +", "plugin p\nlet x = a and\nrule r: job_valid(job) = true",
      "plugin p\nlet x = f(a *)")),
    (SyntaxLabel("parse.aggregate-syntax", "unexpected {found}; expected 'in' after the aggregate's variable",
                 "aggregates read 'max(x in xs: x.weight)'; for two numbers use maximum(a, b) or minimum(a, b)",
                 by_state=False),
     ("plugin p\nlet x = max(a, b)", "plugin p\nlet x = min(a)", "plugin p\nrule r: job_order(l, r) = sum(l)")),
)
_LABELS = {label.code: label for label, _ in SYNTAX_EXAMPLES}
# Characters people bring from other languages.
_CHARACTER_HINTS = {
    "&": "use 'and'", "|": "use 'or'", "!": "use 'not' to negate, '!=' to compare",
    "'": "strings use double quotes", ";": "declarations need no ';'",
}


def parse_text(text: str, file: str) -> ast.Module:
    """Parse a whole module; raises `PolicyError` with one diagnostic on a syntax error."""
    source.remember(source.SourceFile(name=file, text=text))
    try:
        tree = grammar.parse_tree(text)
    except UnexpectedInput as exc:
        raise errors.PolicyError([_diagnose(exc, text=text, file=file)]) from exc
    strings = _check_depth(tree, file)
    module = _build(_Builder(file, comments=_comment_lines(text), string_depths=strings), tree)
    assert isinstance(module, ast.Module)
    return module


UNREADABLE = "input.unreadable"


def parse_file(path: str | Path) -> ast.Module:
    """Read and parse a `.vpol` file; its text is remembered so diagnostics can quote it. A file that is
    missing, a folder or not UTF-8 is one located `input.unreadable` (at its first byte that is not UTF-8)."""
    try:
        text = textfile.read_text(path)
    except textfile.UnreadableFile as exc:
        help = ("policy files are UTF-8 text; convert it, e.g. with iconv -f latin1 -t utf-8" if exc.not_utf8
                else "give the path of a .vpol file")
        raise errors.PolicyError([exc.diagnostic(UNREADABLE, help=help)]) from exc
    return parse_text(text, str(path))


def parse_expr(text: str, file: str = "<expr>", *, line: int = 1, col: int = 1, depth: int = 0) -> ast.Expr:
    """Parse one expression whose first character sits at `line:col` of `file` (string holes, tools),
    `depth` levels deep in the file (a hole: as deep as its string)."""
    try:
        tree = grammar.parse_tree(text, start=grammar.START_EXPR)
    except UnexpectedInput as exc:
        diagnostic = _diagnose(exc, text=text, file=file, line=line, col=col, hole=True)
        raise errors.PolicyError([diagnostic]) from exc
    strings = _check_depth(tree, file, line=line, col=col, depth=depth)
    return _expr(_build(_Builder(file, line=line, col=col, string_depths=strings), tree))


# ---------------------------------------------------------------------------------------------- helpers
def _build(builder: _Builder, tree: Tree[Token]) -> object:
    try:
        return builder.transform(tree)
    except VisitError as exc:  # a PolicyError raised inside a transformer callback (bad escape, hole)
        if isinstance(exc.orig_exc, errors.PolicyError):
            raise exc.orig_exc from exc
        raise


def _check_depth(tree: Tree[Token], file: str, *, line: int = 1, col: int = 1, depth: int = 0) -> dict[int, int]:
    """Refuse a tree (`depth` levels deep in its file) nested deeper than `MAX_DEPTH` before anything
    recurses over it, at the first node (in text order) past the limit; else how deep each string token
    sits (by `id`), so that its holes, parsed later, count from there. Walked with a stack of its own:
    the parser itself never recurses."""
    strings: dict[int, int] = {}
    stack: list[tuple[Tree[Token], int]] = [(tree, depth + 1)]
    while stack:
        node, depth = stack.pop()
        strings.update((id(t), depth) for t in node.children if isinstance(t, Token) and t.type == "STRING")
        if depth > MAX_DEPTH:
            at_line, at_col = (1, 1) if node.meta.empty else (node.meta.line, node.meta.column)
            real_line, real_col = at_line + line - 1, at_col + (col - 1 if at_line == 1 else 0)
            raise _fail("parse.too-deep", f"nested more than {MAX_DEPTH} levels deep", Span(file, real_line, real_col),
                        help="give inner parts names: 'let NAME = ... in', a module 'let', or a helper function")
        stack.extend((child, depth + 1) for child in reversed(node.children) if isinstance(child, Tree))
    return strings


def _comment_lines(text: str) -> dict[int, str]:
    """Line number -> comment text, for lines holding nothing but a `# comment`."""
    found: dict[int, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):  # lines as lark counts them (not at \x85)
        stripped = line.strip()
        if stripped.startswith("#"):
            body = stripped[1:]
            found[number] = (body.removeprefix(" ")).rstrip()
    return found


def _fail(code: str, message: str, span: Span, help: str | None = None) -> errors.PolicyError:
    return errors.PolicyError([errors.Diagnostic(code=code, message=message, span=span, help=help)])


@dataclass(frozen=True, slots=True)
class _Setting:
    """One `key: value` of a `use` on its way into `ast.Use`, with where its key is written."""

    key: str
    value: ast.Expr
    key_span: Span


class _Opt:
    """A rule clause on its way into `ast.Rule` (the grammar lists them in any order)."""

    __slots__ = ("kind", "span", "value")

    def __init__(self, kind: str, value: object, span: Span):
        self.kind, self.value, self.span = kind, value, span


@v_args(meta=True)
class _Builder(Transformer[Token, object]):
    """Tree -> AST. `line`/`col` place the parsed text in its file (1, 1 except for string holes)."""

    def __init__(self, file: str, *, line: int = 1, col: int = 1, comments: dict[int, str] | None = None,
                 string_depths: dict[int, int] | None = None):
        super().__init__(visit_tokens=False)
        self.file, self.line0, self.col0 = file, line - 1, col - 1
        self.comments = comments or {}
        self.string_depths = string_depths or {}  # see _check_depth
        self.documented: set[int] = set()  # lines whose declaration took the comment block above them

    # -------------------------------------------------------------------------------- spans
    def _at(self, line: int, col: int) -> tuple[int, int]:
        return line + self.line0, col + (self.col0 if line == 1 else 0)

    def span(self, meta: Meta) -> Span:
        if meta.empty:
            return Span(self.file, 1, 1)  # lark gives no position to an empty rule; none of ours is empty
        line, col = self._at(meta.line, meta.column)
        end_line, end_col = self._at(meta.end_line, meta.end_column - 1)
        return Span(self.file, line, col, end_line, end_col)

    def tok_span(self, tok: Token) -> Span:
        assert tok.line is not None and tok.column is not None
        line, col = self._at(tok.line, tok.column)
        return Span(self.file, line, col, line, col + len(tok) - 1)

    def doc_above(self, meta: Meta) -> str:
        """The comment lines directly above the declaration; only the first declaration on a line takes
        them (declarations are built in source order)."""
        if meta.line in self.documented:
            return ""
        self.documented.add(meta.line)
        lines: list[str] = []
        number = meta.line - 1
        while number in self.comments:
            lines.append(self.comments[number])
            number -= 1
        return "\n".join(reversed(lines))

    # -------------------------------------------------------------------------------- strings
    def plain(self, tok: Token) -> str:
        """A string token's value, unescaped, no holes (paths, keys, docs)."""
        return "".join(str(p) for p in self.string_parts(tok, holes=False))

    def _unescape(self, tok: Token, index: int, char: str) -> str:
        if char in _ESCAPES:
            return _ESCAPES[char]
        span = self.tok_span(tok)
        at = Span(self.file, span.line, span.col + index, span.line, span.col + index + 1)
        raise _fail("parse.invalid-escape", f"unknown escape '\\{char}' in string", at,
                    help="strings know \\\\, \\\", \\n and \\t")

    def string_parts(self, tok: Token, *, holes: bool) -> tuple[str | ast.Expr, ...]:
        """Split a string token into text and `{expr}` holes (`{{`/`}}` are literal braces)."""
        raw = str(tok)
        parts: list[str | ast.Expr] = []
        buf: list[str] = []
        i, last = 1, len(raw) - 1
        while i < last:
            char = raw[i]
            if char == "\\":
                buf.append(self._unescape(tok, i, raw[i + 1]))
                i += 2
            elif holes and char in "{}" and raw[i + 1 : i + 2] == char:
                buf.append(char)
                i += 2
            elif holes and char == "{":
                end = self._hole_end(tok, raw, i)
                if buf:
                    parts.append("".join(buf))
                    buf = []
                parts.append(self._hole(tok, raw, i, end))
                i = end + 1
            else:
                buf.append(char)
                i += 1
        if buf:
            parts.append("".join(buf))
        return tuple(parts)

    def _hole_end(self, tok: Token, raw: str, start: int) -> int:
        depth = 0
        for j in range(start, len(raw) - 1):
            depth += {"{": 1, "}": -1}.get(raw[j], 0)
            if depth == 0:
                return j
        span = self.tok_span(tok)
        at = Span(self.file, span.line, span.col + start, span.line, span.col + start)
        raise _fail("parse.unclosed-hole", "unclosed '{' in string", at,
                    help="close the hole with '}', or write '{{' for a literal brace")

    def _hole(self, tok: Token, raw: str, start: int, end: int) -> ast.Expr:
        span = self.tok_span(tok)
        text = raw[start + 1 : end]
        if not text.strip():
            at = Span(self.file, span.line, span.col + start, span.line, span.col + end)
            raise _fail("parse.empty-hole", "empty '{}' in string", at,
                        help="put an expression inside, or write '{{}}' for literal braces")
        return parse_expr(text, self.file, line=span.line, col=span.col + start + 1,
                          depth=self.string_depths.get(id(tok), 0))

    def interp(self, tok: Token) -> ast.Interp:
        return ast.Interp(self.string_parts(tok, holes=True), span=self.tok_span(tok))

    # -------------------------------------------------------------------------------- module
    def start(self, meta: Meta, ch: list[object]) -> ast.Module:
        header = ch[0]
        assert isinstance(header, tuple)
        kind, name, doc = (str(x) for x in header)
        decls = tuple(_decl(d) for d in ch[1:])
        return ast.Module(kind, name, doc, decls, file=self.file, span=self.span(meta))

    def header(self, meta: Meta, ch: list[object]) -> tuple[str, str, str]:
        doc = ch[2] if len(ch) > 2 else None
        return str(ch[0]), str(ch[1]), self.plain(doc) if isinstance(doc, Token) else ""

    def dotted_name(self, meta: Meta, ch: list[Token]) -> str:
        return ".".join(str(t) for t in ch)

    def param(self, meta: Meta, ch: list[object]) -> ast.Param:
        name, type_, default, _from, key, doc = ch
        assert isinstance(name, Token) and isinstance(type_, ast.TypeRef)
        above = self.doc_above(meta)  # taken even when the doc string wins, so no later declaration has it
        text = self.plain(doc) if isinstance(doc, Token) else above
        return ast.Param(str(name), type_, _expr(default), doc=text,
                         conf_key=self.plain(key) if isinstance(key, Token) else "",
                         span=self.span(meta), name_span=self.tok_span(name))

    def letdecl(self, meta: Meta, ch: list[object]) -> ast.LetDecl:
        name, params, type_, value = ch
        assert isinstance(name, Token) and (params is None or isinstance(params, tuple))
        assert type_ is None or isinstance(type_, ast.TypeRef)
        return ast.LetDecl(str(name), _binders(params), type_, _expr(value), doc=self.doc_above(meta),
                           span=self.span(meta), name_span=self.tok_span(name))

    def params(self, meta: Meta, ch: list[object]) -> tuple[ast.Binder, ...]:
        return tuple(b for b in ch if isinstance(b, ast.Binder))

    def binder(self, meta: Meta, ch: list[object]) -> ast.Binder:
        name, type_ = ch
        assert type_ is None or isinstance(type_, ast.TypeRef)
        return ast.Binder(str(name), type_, span=self.span(meta))

    def type(self, meta: Meta, ch: list[object]) -> ast.TypeRef:
        args = tuple(a for a in ch[1:] if isinstance(a, ast.TypeRef))
        return ast.TypeRef(str(ch[0]), args, span=self.span(meta))

    def rule(self, meta: Meta, ch: list[object]) -> ast.Rule:
        name, callback, params, body, *opts = ch
        assert isinstance(name, Token) and isinstance(callback, Token) and isinstance(params, tuple)
        seen: dict[str, _Opt] = {}
        for opt in opts:
            assert isinstance(opt, _Opt)
            if opt.kind in seen:
                raise _fail("parse.duplicate-clause", f"'{opt.kind}' appears twice in rule '{name}'", opt.span)
            seen[opt.kind] = opt
        reason, message, normalize = (seen[k].value if k in seen else None for k in ("reason", "message", "normalize"))
        assert reason is None or isinstance(reason, ast.Interp)
        assert message is None or isinstance(message, ast.Interp)
        assert normalize is None or isinstance(normalize, ast.Normalize)
        every = seen["every"].value if "every" in seen else (None, False)
        assert isinstance(every, tuple)
        return ast.Rule(str(name), str(callback), _binders(params) or (), _expr(body),
                        reason=reason, message=message, unresolvable="unresolvable" in seen, normalize=normalize,
                        every=_expr(every[0]) if every[0] is not None else None, every_from_start=bool(every[1]),
                        doc=self.doc_above(meta), span=self.span(meta),
                        name_span=self.tok_span(name), callback_span=self.tok_span(callback))

    def normalize(self, meta: Meta, ch: list[object]) -> _Opt:
        mode, weight = ch
        reverse = mode is not None and getattr(mode, "type", "") == "REVERSE"
        name = "" if mode is None or reverse else str(mode)
        node = ast.Normalize(_expr(weight), reverse, span=self.span(meta), mode=name)
        return _Opt("normalize", node, self.span(meta))

    def unresolvable(self, meta: Meta, ch: list[object]) -> _Opt:
        return _Opt("unresolvable", True, self.span(meta))

    def reason(self, meta: Meta, ch: list[Token]) -> _Opt:
        return _Opt("reason", self.interp(ch[0]), self.span(meta))

    def message(self, meta: Meta, ch: list[Token]) -> _Opt:
        return _Opt("message", self.interp(ch[0]), self.span(meta))

    def every(self, meta: Meta, ch: list[object]) -> _Opt:
        return _Opt("every", (ch[0], ch[1] is not None), self.span(meta))

    def property(self, meta: Meta, ch: list[object]) -> ast.Property:
        name, body = ch
        assert isinstance(name, Token)
        return ast.Property(str(name), _expr(body), doc=self.doc_above(meta), span=self.span(meta),
                            name_span=self.tok_span(name))

    def tier(self, meta: Meta, ch: list[object]) -> ast.Tier:
        return ast.Tier(tuple(u for u in ch if isinstance(u, ast.Use)), span=self.span(meta))

    def use(self, meta: Meta, ch: list[object]) -> ast.Use:
        path, settings = ch
        assert isinstance(path, Token) and (settings is None or isinstance(settings, tuple))
        entries = [entry for entry in settings or () if isinstance(entry, _Setting)]
        return ast.Use(self.plain(path), tuple((e.key, e.value) for e in entries), span=self.span(meta),
                       setting_spans=tuple(e.key_span for e in entries))

    def settings(self, meta: Meta, ch: list[object]) -> tuple[object, ...]:
        return _present(ch)

    def setting(self, meta: Meta, ch: list[object]) -> _Setting:
        key, value = ch
        if isinstance(key, Token):
            return _Setting(self.plain(key), _expr(value), self.tok_span(key))
        start = self.span(meta)  # a dotted name: from the setting's start, as long as the name
        name = str(key)
        return _Setting(name, _expr(value), Span(self.file, start.line, start.col, start.line, start.col + len(name) - 1))

    def actions(self, meta: Meta, ch: list[Token]) -> ast.Actions:
        return ast.Actions(tuple(str(t) for t in ch), span=self.span(meta))

    # -------------------------------------------------------------------------------- expressions
    def ifexpr(self, meta: Meta, ch: list[object]) -> ast.If:
        return ast.If(_expr(ch[0]), _expr(ch[1]), _expr(ch[2]), span=self.span(meta))

    def letexpr(self, meta: Meta, ch: list[object]) -> ast.Let:
        return ast.Let(str(ch[0]), _expr(ch[1]), _expr(ch[2]), span=self.span(meta))

    def selectexpr(self, meta: Meta, ch: list[object]) -> ast.Select:
        var, src, group, when, update = ch
        key, start, state = group if isinstance(group, tuple) else (None, None, None)
        then, after = update if isinstance(update, tuple) else (None, False)
        return ast.Select(str(var), _expr(src), _maybe(key), _maybe(start), None if state is None else str(state),
                          _expr(when), _maybe(then), after=bool(after), span=self.span(meta))

    def group(self, meta: Meta, ch: list[object]) -> tuple[object, object, str]:
        return ch[0], ch[1], str(ch[2])

    def then_clause(self, meta: Meta, ch: list[object]) -> tuple[object, bool]:
        return ch[0], False

    def after_clause(self, meta: Meta, ch: list[object]) -> tuple[object, bool]:
        return ch[0], True

    def or_(self, meta: Meta, ch: list[object]) -> ast.Binary:
        return ast.Binary("or", _expr(ch[0]), _expr(ch[1]), span=self.span(meta))

    def and_(self, meta: Meta, ch: list[object]) -> ast.Binary:
        return ast.Binary("and", _expr(ch[0]), _expr(ch[1]), span=self.span(meta))

    def not_(self, meta: Meta, ch: list[object]) -> ast.Unary:
        return ast.Unary("not", _expr(ch[0]), span=self.span(meta))

    def neg(self, meta: Meta, ch: list[object]) -> ast.Unary:
        return ast.Unary("-", _expr(ch[0]), span=self.span(meta))

    def compare(self, meta: Meta, ch: list[object]) -> ast.Binary:
        return ast.Binary(str(ch[1]), _expr(ch[0]), _expr(ch[2]), span=self.span(meta))

    arith = compare

    def attr(self, meta: Meta, ch: list[object]) -> ast.Attr:
        return ast.Attr(_expr(ch[0]), str(ch[1]), span=self.span(meta))

    def index(self, meta: Meta, ch: list[object]) -> ast.Index:
        return ast.Index(_expr(ch[0]), _expr(ch[1]), span=self.span(meta))

    def number(self, meta: Meta, ch: list[Token]) -> ast.Literal:
        text = str(ch[0])
        if text.isdigit():
            return ast.Literal(int(text), "int", span=self.span(meta), text=text)
        return ast.Literal(float(text), "number", span=self.span(meta), text=text)

    def quantity(self, meta: Meta, ch: list[Token]) -> ast.Literal:
        return ast.Literal(str(ch[0]), "quantity", span=self.span(meta))

    def string(self, meta: Meta, ch: list[Token]) -> ast.Literal | ast.Interp:
        parts = self.string_parts(ch[0], holes=True)
        if all(isinstance(p, str) for p in parts):
            return ast.Literal("".join(str(p) for p in parts), "string", span=self.span(meta))
        return ast.Interp(parts, span=self.span(meta))

    def true(self, meta: Meta, ch: list[Token]) -> ast.Literal:
        return ast.Literal(True, "bool", span=self.span(meta))

    def false(self, meta: Meta, ch: list[Token]) -> ast.Literal:
        return ast.Literal(False, "bool", span=self.span(meta))

    def vote(self, meta: Meta, ch: list[Token]) -> ast.VoteLit:
        return ast.VoteLit(str(ch[0]), span=self.span(meta))

    def name(self, meta: Meta, ch: list[Token]) -> ast.Name:
        return ast.Name(str(ch[0]), span=self.span(meta))

    def call(self, meta: Meta, ch: list[object]) -> ast.Call:
        return ast.Call(str(ch[0]), tuple(_expr(a) for a in _present(ch[1:])), span=self.span(meta))

    def aggregate(self, meta: Meta, ch: list[object]) -> ast.Aggregate:
        func, var, src, where, body = ch
        return ast.Aggregate(str(func), str(var), _expr(src), _maybe(where), _maybe(body), span=self.span(meta))

    def reslit(self, meta: Meta, ch: list[object]) -> ast.ResourceLit:
        return ast.ResourceLit(_pairs(_present(ch)), span=self.span(meta))

    def resentry(self, meta: Meta, ch: list[object]) -> tuple[str, ast.Expr]:
        key, value = ch
        assert isinstance(key, Token)
        return (self.plain(key) if key.type == "STRING" else str(key)), _expr(value)

    def listlit(self, meta: Meta, ch: list[object]) -> ast.ListLit:
        return ast.ListLit(tuple(_expr(i) for i in _present(ch)), span=self.span(meta))


# The transformer's callbacks return `object` to lark; these narrow what the grammar guarantees.
_DECLS = (ast.Param, ast.LetDecl, ast.Rule, ast.Property, ast.Tier, ast.Actions)


def _expr(node: object) -> ast.Expr:
    assert isinstance(node, ast.Expr), node
    return node


def _maybe(node: object) -> ast.Expr | None:
    return None if node is None else _expr(node)


def _decl(node: object) -> ast.Decl:
    assert isinstance(node, _DECLS), node
    return node


def _binders(node: object) -> tuple[ast.Binder, ...] | None:
    if node is None:
        return None
    assert isinstance(node, tuple) and all(isinstance(b, ast.Binder) for b in node)
    return node


def _pairs(items: Sequence[object]) -> tuple[tuple[str, ast.Expr], ...]:
    out: list[tuple[str, ast.Expr]] = []
    for item in items:
        assert isinstance(item, tuple)
        out.append((str(item[0]), _expr(item[1])))
    return tuple(out)


def _present(items: Sequence[object]) -> tuple[object, ...]:
    return tuple(i for i in items if i is not None)


# ---------------------------------------------------------------------------------------------- syntax errors
def _diagnose(exc: UnexpectedInput, *, text: str, file: str, line: int = 1, col: int = 1,
              hole: bool = False) -> errors.Diagnostic:
    """One diagnostic for a lark error in `text`, which starts at `line:col` of `file` (a string's
    `{...}` hole when `hole`: its end is the closing brace, and the module examples do not apply)."""

    def place(at_line: int, at_col: int, width: int = 1) -> Span:
        real_line, real_col = at_line + line - 1, at_col + (col - 1 if at_line == 1 else 0)
        return Span(file, real_line, real_col, real_line, real_col + max(width, 1) - 1)

    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        char = text[pos]
        if char == '"':
            end = text.find("\n", pos)
            width = (len(text) if end < 0 else end) - pos
            return errors.Diagnostic("parse.unterminated-string", "unterminated string", place(exc.line, exc.column, width),
                                     help="close it with '\"' on the same line; strings cannot span lines")
        shown = f"'{char}'" if char.isprintable() else repr(char)
        return errors.Diagnostic(
            "parse.unexpected-character",
            f"unexpected character {shown}; expected {grammar.describe_expected(grammar.accepted_terminals(exc, hole=hole))}",
            place(exc.line, exc.column), help=_CHARACTER_HINTS.get(char))
    if not isinstance(exc, UnexpectedToken):  # LALR reports the end of input as UnexpectedToken('$END')
        return errors.Diagnostic("parse.unexpected-token", str(exc).splitlines()[0], place(exc.line, exc.column))
    token, expected = exc.token, grammar.accepted_terminals(exc, hole=hole)
    at_end = token.type == "$END"
    if at_end:
        body = text.rstrip()
        end_line = body.count("\n") + 1
        span = place(end_line, len(body) - (body.rfind("\n") + 1) + 1)
        before = grammar.tokens_before(text, len(text))
    else:
        span = place(token.line or 1, token.column or 1, len(token))
        before = grammar.tokens_before(text, token.start_pos or 0)
    found = "'}'" if at_end and hole else grammar.describe_token(token)
    prev = before[-1] if before else None
    label = (None if hole else _match_example(exc)) or _match_tokens(token, expected, before)
    if label is not None:
        if label.code == "parse.double-equals" and prev is not None and prev.type == "EQUAL":
            span = place(prev.line or 1, prev.column or 1, 2)
        message = label.message.format(found=found, prev=f"'{prev}'")
        return errors.Diagnostic(label.code, message, span, help=label.help)
    code = "parse.unexpected-eof" if at_end and not hole else "parse.unexpected-token"
    wanted = grammar.waiting_for(expected, before, place) or f"expected {grammar.describe_expected(expected)}"
    help = f"'{token}' is a keyword; choose another name" if grammar.is_keyword(token) and "NAME" in expected else None
    return errors.Diagnostic(code, f"unexpected {found}; {wanted}", span, help=help)


def _match_example(exc: UnexpectedInput) -> SyntaxLabel | None:
    def parse_module(text: str) -> Tree[Token]:
        return grammar.parse_tree(text)

    table = [(label, examples) for label, examples in SYNTAX_EXAMPLES if label.by_state]
    try:
        return exc.match_examples(parse_module, table, use_accepts=True)
    except AssertionError:  # an error without parser state cannot be matched
        return None


def _match_tokens(token: Token, expected: set[str], before: list[Token]) -> SyntaxLabel | None:
    """Mistakes recognised from the tokens themselves, whatever the nesting depth."""
    prev = before[-1] if before else None
    if token.type == "EQUAL" and "COMP_OP" in expected:
        return _LABELS["parse.single-equals"]
    if (str(token) == "==" and "EQUAL" in expected) or (
            token.type == "EQUAL" and prev is not None and prev.type == "EQUAL" and prev.end_pos == token.start_pos):
        return _LABELS["parse.double-equals"]
    if prev is not None and prev.type in grammar.OPERATOR_TOKENS and grammar.EXPR_CORE <= expected:
        return _LABELS["parse.missing-operand"]
    if expected == {"IN"} and len(before) >= 3 and before[-3].type == "AGG":
        return _LABELS["parse.aggregate-syntax"]
    return None
