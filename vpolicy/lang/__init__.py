"""The DSL front-end: policy text to a checked AST (`grammar`, `parse`, `check`, `types`, `fmt`).

`load_module(path)` is the one call most callers need: parse, check, and raise `PolicyError` with every
error (warnings do not raise). This package is the only one that imports lark; the compiler sees only
`lang.ast` nodes and `vpolicy.errors` diagnostics.
"""
from __future__ import annotations

from pathlib import Path

from vpolicy import errors
from vpolicy.lang import ast, check, parse


def load_module(path: str | Path) -> ast.Module:
    """Parse and check one `.vpol` file; raises `PolicyError` with all its errors."""
    module = parse.parse_file(path)
    problems = [d for d in check.check_module(module) if d.severity == "error"]
    if problems:
        raise errors.PolicyError(problems)
    return module
