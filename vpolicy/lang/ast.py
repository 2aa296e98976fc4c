"""The typed AST of the vpolicy DSL: frozen, slotted dataclasses mirroring the grammar's rules.

Every node carries a `span` that is excluded from equality (Cedar's `Node.loc`), so `parse(fmt(x)) ==
parse(x)` compares meaning, not layout. `parse` builds these from Lark trees; `check` type-checks them;
`vpolicy.compile` lowers them to the IR. Nothing here evaluates anything.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from vpolicy.source import Span

_NOSPAN = Span("<builtin>", 0, 0)


def _span() -> Span:
    return field(default=_NOSPAN, compare=False, repr=False)


# ---------------------------------------------------------------------------------------------- types
@dataclass(frozen=True, slots=True)
class TypeRef:
    """A written type: `int`, `number`, `bool`, `string`, `resources`, `vote`, `queue`, `job`, `task`,
    `node`, `cluster`, `list[T]`, `map[K, V]`."""

    name: str
    args: tuple["TypeRef", ...] = ()
    span: Span = _span()


# ---------------------------------------------------------------------------------------------- expressions
@dataclass(frozen=True, slots=True)
class Name:
    id: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Literal:
    """int, float, str, bool, or a quantity such as `4Gi` (kept as text, typed by the checker)."""

    value: int | float | str | bool
    kind: str  # int | number | string | bool | quantity
    span: Span = _span()
    # A number as written (`1e-6`, `0.000001`), so `fmt` keeps it; not part of equality, like the span.
    text: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class VoteLit:
    value: str  # permit | reject | abstain
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ResourceLit:
    """`{cpu: 1, memory: 4Gi}`: a resource vector literal."""

    entries: tuple[tuple[str, "Expr"], ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Attr:
    obj: "Expr"
    name: str
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Index:
    obj: "Expr"
    key: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Call:
    func: str
    args: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # not | -
    operand: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # or and == != < <= > >= in + - * /
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class If:
    cond: "Expr"
    then: "Expr"
    orelse: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Let:
    name: str
    value: "Expr"
    body: "Expr"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Aggregate:
    """`sum(t in job.tasks where t.ready: t.resreq)`, `count(...)`, `all(...)`, `any(...)`, `max`, `min`.

    `count` has no body (`count(t in xs where cond)`); `all`/`any` use the body as the condition.
    """

    func: str  # sum | count | all | any | max | min | list | map (a map keyed by the variable's values)
    var: str
    source: "Expr"
    where: "Expr | None"
    body: "Expr | None"
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Select:
    """Victim selection: walk `source` in order, keeping per-group state.

        select c in candidates
          group c.job start c.job.ready_count as left
          when left > c.job.min_available
          then left - 1

    A candidate is selected when `when` holds (with the state variable bound to its group's current
    value); after selection the group's state becomes `then`. With `after EXPR` instead of `then EXPR`
    the state is updated after every candidate, selected or not (drf's accumulation). Without `group`,
    it is a plain filter.
    """

    var: str
    source: "Expr"
    group_key: "Expr | None"
    group_start: "Expr | None"
    state: str | None
    when: "Expr"
    then: "Expr | None"
    after: bool = False  # `after EXPR`: update the group's state after every candidate, chosen or not
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Interp:
    """A string with `{expr}` holes (messages and reasons)."""

    parts: tuple["str | Expr", ...]
    span: Span = _span()


Expr = Name | Literal | VoteLit | ResourceLit | ListLit | Attr | Index | Call | Unary | Binary | If | Let | Aggregate | Select | Interp


# ---------------------------------------------------------------------------------------------- declarations
@dataclass(frozen=True, slots=True)
class Param:
    """`param binpack.weight: number = 1 "doc"`: a typed knob set from a conf's arguments or a policy."""

    name: str  # the name rules use
    type: TypeRef
    default: Expr
    doc: str = ""
    conf_key: str = ""  # `from "binpack.weight"`: the conf argument key; "" = same as name
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True, slots=True)
class Binder:
    name: str
    type: TypeRef | None = None
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class LetDecl:
    """Module-level `let`. Without parameters it is a session constant, evaluated once when the session
    opens (e.g. proportion's deserved shares); with parameters it is a helper function."""

    name: str
    params: tuple[Binder, ...] | None
    type: TypeRef | None
    value: Expr
    doc: str = ""
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True, slots=True)
class Normalize:
    """`normalize [reverse | MODE] by WEIGHT`: scale a node score to 0..100 over the candidate nodes,
    times weight. `mode` is "" (plain or `reverse`) or a named scaling (`NORMALIZE_MODES`)."""

    weight: Expr
    reverse: bool = False
    span: Span = _span()
    mode: str = ""


# Named scalings a `normalize MODE by W` clause may use (besides plain and `reverse`), as kube-scheduler's
# score plugins normalise: `minmax` (InterPodAffinity), `spread` (PodTopologySpread). docs/dsl.md §3.
NORMALIZE_MODES = ("minmax", "spread")


@dataclass(frozen=True, slots=True)
class Rule:
    """`rule NAME: CALLBACK(args) = expr [normalize ...] [unresolvable] [reason "..."] [message "..."] [every S]`."""

    name: str
    callback: str
    params: tuple[Binder, ...]
    body: Expr
    reason: Interp | None = None
    message: Interp | None = None
    unresolvable: bool = False
    normalize: Normalize | None = None
    doc: str = ""
    span: Span = _span()
    name_span: Span = _span()
    callback_span: Span = _span()
    # `every SECONDS`: the rule runs at most once per this many seconds of the session clock in one
    # scheduler process (Volcano's process-wide throttles: tdm's evict period, rescheduling's interval);
    # `every SECONDS from start`: and the first period runs from the scheduler's start
    every: Expr | None = None
    every_from_start: bool = False


@dataclass(frozen=True, slots=True)
class Property:
    """`property NAME: expr`: a statement `verify` proves and `test` checks after every scenario."""

    name: str
    body: Expr
    doc: str = ""
    span: Span = _span()
    name_span: Span = _span()


@dataclass(frozen=True, slots=True)
class Use:
    """`use "volcano/gang.vpol" { enablePreemptable: false, args... }` in a native policy.

    `setting_spans` point at each setting's key, in the order of `settings` (values carry their own)."""

    path: str
    settings: tuple[tuple[str, Expr], ...] = ()
    span: Span = _span()
    setting_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)

    def key_span(self, index: int) -> Span:
        """Where the key of `settings[index]` is written (its value's span when unknown)."""
        return self.setting_spans[index] if index < len(self.setting_spans) else self.settings[index][1].span


@dataclass(frozen=True, slots=True)
class Tier:
    """`tier { use ...; use ... }` in a native policy: plugins of one Volcano tier."""

    uses: tuple[Use, ...]
    span: Span = _span()


@dataclass(frozen=True, slots=True)
class Actions:
    """`actions enqueue, allocate, backfill` in a native policy."""

    names: tuple[str, ...]
    span: Span = _span()


Decl = Param | LetDecl | Rule | Property | Tier | Actions


@dataclass(frozen=True, slots=True)
class Module:
    """A file: `plugin NAME` (a rule module, one Volcano plugin) or `policy NAME` (a whole policy)."""

    kind: str  # plugin | policy
    name: str
    doc: str
    decls: tuple[Decl, ...]
    file: str = field(default="", compare=False)
    span: Span = _span()


# ---------------------------------------------------------------------------------------------- walking
def walk(node: Expr) -> Iterator[Expr]:
    """`node` and every expression inside it (string holes included), parents before children; with a
    stack of its own, so any nesting the parser takes is fine."""
    stack: list[Expr] = [node]
    while stack:
        current = stack.pop()
        yield current
        for f in dataclasses.fields(current):
            stack.extend(_subexpressions(getattr(current, f.name)))


def declared_expressions(module: Module) -> Iterator[Expr]:
    """The expressions written directly in the module's declarations: defaults, let values, rule bodies
    and clauses, property bodies, `use` settings (each the root of a tree to `walk`)."""
    for decl in module.decls:
        if isinstance(decl, Param):
            yield decl.default
        elif isinstance(decl, LetDecl):
            yield decl.value
        elif isinstance(decl, Rule):
            yield decl.body
            yield from (e for e in (decl.reason, decl.message) if e is not None)
            if decl.normalize is not None:
                yield decl.normalize.weight
            if decl.every is not None:
                yield decl.every
        elif isinstance(decl, Property):
            yield decl.body
        elif isinstance(decl, Tier):
            yield from (value for use in decl.uses for _key, value in use.settings)


def _subexpressions(value: object) -> list[Expr]:
    """The expressions held by one field of a node: itself, or those in a tuple of them, of `(key,
    expression)` pairs (resource entries) or of text and holes (strings)."""
    if isinstance(value, Expr):
        return [value]
    if isinstance(value, tuple):
        return [e for item in value for e in _subexpressions(item)]
    return []
