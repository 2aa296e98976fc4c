"""Violations of admission rules, and their conversion to located Diagnostics."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from vpolicy.errors import Diagnostic
from vpolicy.model import quantity
from vpolicy.source import Span

Queues = Mapping[str, Mapping[str, Any]]  # queue name -> Queue object


@dataclass(frozen=True, slots=True)
class Violation:
    code: str  # admission.<kebab-name>
    field: str  # JSON path in the object, e.g. spec.tasks[1].minAvailable
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def diagnostics(violations: Iterable[Violation],
                span_of: Callable[[str], Span | None] = lambda _: None) -> list[Diagnostic]:
    """Violations as Diagnostics, each located by `span_of(field path)` when the caller can."""
    return [Diagnostic(code=v.code, message=str(v), span=span_of(v.field)) for v in violations]


def message(violations: Iterable[Violation]) -> str:
    """One line for an AdmissionReview's `status.message`."""
    return "; ".join(str(v) for v in violations)


def integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def resource_list(value: Any) -> dict[str, Fraction] | None:
    """A ResourceList as exact amounts; None when a quantity does not parse."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, Fraction] = {}
    for name, text in value.items():
        try:
            out[str(name)] = quantity.parse_exact(text)
        except (ValueError, TypeError):
            return None
    return out


def exceeds(small: Mapping[str, Fraction], big: Mapping[str, Fraction]) -> list[str]:
    """Resources named in both where `small` is larger than `big`."""
    return sorted(name for name, amount in small.items() if name in big and amount > big[name])
