"""The language docs stay in step with the catalogue and with the codes the front-end emits."""
from __future__ import annotations

import re
from pathlib import Path

from vpolicy.lang import builtins

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_lists_every_callback_function_and_attribute() -> None:
    text = (ROOT / "docs" / "dsl.md").read_text(encoding="utf-8")
    names = [*builtins.CALLBACKS, *(f"{n}(" for n in builtins.FUNCTIONS)]
    names += [attr for attributes in builtins.OBJECT_TYPES.values() for attr in attributes]
    assert [n for n in names if f"`{n}" not in text] == []


def test_every_code_the_front_end_emits_is_documented() -> None:
    emitted = set()
    for module in ("parse.py", "check.py"):
        source = (ROOT / "vpolicy" / "lang" / module).read_text(encoding="utf-8")
        emitted |= set(re.findall(r'"((?:parse|check)\.[a-z-]+)"', source))
    documented = set(re.findall(r"^\| `((?:parse|check)\.[a-z-]+)`",
                                (ROOT / "docs" / "diagnostics-lang.md").read_text(encoding="utf-8"), re.MULTILINE))
    assert emitted == documented
