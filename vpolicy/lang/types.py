"""The checker's types: parsed from the catalogue's strings and from written `TypeRef`s, and compared.

What it does: represents `int`, `number`, `bool`, `string`, `resources`, `vote`, the object types,
`list[T]`, `map[K,V]` and `any` as one small immutable `Type`; parses the catalogue's type strings
(`"map[queue,resources]"`, `"queue?"`); answers assignability and unification with two relaxations:
`any` fits everything both ways, and an `int` fits where a `number` is wanted.

What it does not do: walk expressions (`lang.check` does) or know attributes and functions
(`lang.builtins` does). Optional types (`queue?`) are tracked but not enforced: the DSL has no `none`
literal, so a missing parent is the runtime's business.
"""
from __future__ import annotations

from dataclasses import dataclass

from vpolicy.lang import ast, builtins

# Type constructors and how many arguments each takes.
ARITY = {"list": 1, "map": 2}
SCALARS = frozenset({"int", "number", "bool", "string", "resources", "vote", "any"})


@dataclass(frozen=True, slots=True)
class Type:
    name: str
    args: tuple[Type, ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        inner = f"[{','.join(map(str, self.args))}]" if self.args else ""
        return f"{self.name}{inner}{'?' if self.optional else ''}"

    @property
    def is_numeric(self) -> bool:
        return self.name in ("int", "number", "any")

    @property
    def is_object(self) -> bool:
        return self.name in builtins.OBJECT_TYPES


ANY = Type("any")
INT = Type("int")
NUMBER = Type("number")
BOOL = Type("bool")
STRING = Type("string")
RESOURCES = Type("resources")
VOTE = Type("vote")


def list_of(item: Type) -> Type:
    return Type("list", (item,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def parse(text: str) -> Type:
    """A catalogue type string: `int`, `list[task]`, `map[queue,resources]`, `queue?`."""
    parsed, rest = _parse(text.replace(" ", ""))
    if rest:
        raise ValueError(f"bad type string {text!r}")  # the catalogue is ours: a broken invariant
    return parsed


def _parse(text: str) -> tuple[Type, str]:
    name_end = 0
    while name_end < len(text) and (text[name_end].isalnum() or text[name_end] == "_"):
        name_end += 1
    name, rest = text[:name_end], text[name_end:]
    args: list[Type] = []
    if rest.startswith("["):
        rest = rest[1:]
        while True:
            arg, rest = _parse(rest)
            args.append(arg)
            if rest.startswith(","):
                rest = rest[1:]
                continue
            if not rest.startswith("]"):
                raise ValueError(f"bad type string near {rest!r}")
            rest = rest[1:]
            break
    optional = rest.startswith("?")
    return Type(name, tuple(args), optional), rest[1:] if optional else rest


def from_ref(ref: ast.TypeRef) -> tuple[Type, str | None]:
    """A written type, and an error message when it names no type or has the wrong arguments
    (the type is then `any`, so one mistake gives one diagnostic)."""
    known = builtins.TYPE_NAMES
    if ref.name not in known:
        return ANY, f"unknown type '{ref.name}'"
    want = ARITY.get(ref.name, 0)
    if len(ref.args) != want:
        if want == 0:
            return ANY, f"type '{ref.name}' takes no arguments"
        return ANY, f"type '{ref.name}' takes {want} argument{'s' if want > 1 else ''}, not {len(ref.args)}"
    args: list[Type] = []
    for arg in ref.args:
        converted, error = from_ref(arg)
        if error:
            return ANY, error
        args.append(converted)
    return Type(ref.name, tuple(args)), None


def assignable(value: Type, target: Type) -> bool:
    """May a value of type `value` stand where `target` is wanted?"""
    if value.name == "any" or target.name == "any":
        return True
    if value.name == "int" and target.name == "number":
        return True
    if value.name != target.name or len(value.args) != len(target.args):
        return False
    return all(assignable(a, b) for a, b in zip(value.args, target.args))


def unify(a: Type, b: Type) -> Type | None:
    """The common type of two branches or list items, or None when they have none."""
    if a.name == "any":
        return b
    if b.name == "any":
        return a
    if {a.name, b.name} == {"int", "number"}:
        return NUMBER
    if a.name != b.name or len(a.args) != len(b.args):
        return None
    args: list[Type] = []
    for x, y in zip(a.args, b.args):
        joined = unify(x, y)
        if joined is None:
            return None
        args.append(joined)
    return Type(a.name, tuple(args), a.optional or b.optional)


def comparable(a: Type, b: Type, op: str) -> bool:
    """Numbers with numbers, resources with resources (every dimension), anything else only with its own
    type and only by `==`/`!=` (strings are not ordered)."""
    if a.name == "any" or b.name == "any":
        return True
    if a.is_numeric and b.is_numeric:
        return True
    if a.name == "resources" and b.name == "resources":
        return True
    return op in ("==", "!=") and unify(a, b) is not None


def orderable(a: Type, b: Type) -> bool:
    """May `compare(a, b)` order the two? Numbers with numbers, or two strings, bools or votes; at run
    time anything else (a number with a string, two resource vectors, two jobs) has no order."""
    if a.name == "any" or b.name == "any":
        return True
    if a.is_numeric and b.is_numeric:
        return True
    return a.name == b.name and a.name in ("string", "bool", "vote")


def arithmetic(op: str, a: Type, b: Type) -> Type | None:
    """The result of `a op b` for `+ - * /`, or None when the operands do not go together: numbers
    (`/` always gives a number), resources +- resources, resources * or / a number, and `+` joining two
    strings or two lists."""
    if a.name == "any" or b.name == "any":
        return ANY if not (a.name == "resources" or b.name == "resources") else RESOURCES
    if a.is_numeric and b.is_numeric:
        return INT if op != "/" and a.name == b.name == "int" else NUMBER
    if a.name == b.name == "resources" and op in "+-":
        return RESOURCES
    if a.name == "resources" and b.is_numeric and op in "*/":
        return RESOURCES
    if a.is_numeric and b.name == "resources" and op == "*":
        return RESOURCES
    if a.name == b.name == "string" and op == "+":
        return STRING
    if a.name == b.name == "list" and op == "+":
        return unify(a, b)
    return None


def element(collection: Type) -> Type | None:
    """What an aggregate or select variable ranges over: a list's items (`any` for `any`)."""
    if collection.name == "any":
        return ANY
    if collection.name == "list":
        return collection.args[0]
    return None
