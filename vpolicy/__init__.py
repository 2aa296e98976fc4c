"""vpolicy's public facade: the names other packages (the live adapter, tools) may use. Re-exports only.

Names are resolved on first use (PEP 562), so `import vpolicy.model` stays cheap and does not load
the solver or the parser.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers (`X as X` marks an explicit re-export)
    from vpolicy.engine.session import CompiledPolicy as CompiledPolicy
    from vpolicy.engine.session import SessionResult as SessionResult
    from vpolicy.engine.session import run_session as run_session
    from vpolicy.errors import Diagnostic as Diagnostic
    from vpolicy.errors import PolicyError as PolicyError
    from vpolicy.harness.policy import resolve as resolve_policy
    from vpolicy.load.cluster import load_cluster as load_cluster
    from vpolicy.load.objects import SnapshotReader as SnapshotReader
    from vpolicy.load.objects import snapshot_from_objects as snapshot_from_objects
    from vpolicy.sim.record import SessionRecorder as SessionRecorder

# public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "CompiledPolicy": ("vpolicy.engine.session", "CompiledPolicy"),
    "SessionResult": ("vpolicy.engine.session", "SessionResult"),
    "run_session": ("vpolicy.engine.session", "run_session"),
    "Diagnostic": ("vpolicy.errors", "Diagnostic"),
    "PolicyError": ("vpolicy.errors", "PolicyError"),
    "resolve_policy": ("vpolicy.harness.policy", "resolve"),
    "load_cluster": ("vpolicy.load.cluster", "load_cluster"),
    "snapshot_from_objects": ("vpolicy.load.objects", "snapshot_from_objects"),
    "SnapshotReader": ("vpolicy.load.objects", "SnapshotReader"),
    "SessionRecorder": ("vpolicy.sim.record", "SessionRecorder"),
}

__all__ = ["CompiledPolicy", "Diagnostic", "PolicyError", "SessionRecorder", "SessionResult", "SnapshotReader",
           "load_cluster",
           "resolve_policy", "run_session", "snapshot_from_objects"]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'vpolicy' has no attribute {name!r}")
    value = getattr(import_module(target[0]), target[1])
    globals()[name] = value
    return value
