"""Reporters: the decision document as JSON, YAML or tables a person can read (rich).

They only format; what to print comes from the harness results.
"""
from __future__ import annotations

import errno
import functools
import io
import json
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # rich is imported when a table is written: `--output json` never needs it (0.04 s of start-up)
    from rich.console import Console


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class _Console(Console):
        """rich's Console, except that a closed pipe raises BrokenPipeError as any other write does, so the
        CLI handles it once for every command (rich's own handling exits with status 1 on its own)."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    return _Console


def console(out: TextIO, **options: Any) -> Console:
    """A rich Console writing to `out` (keyword options as Console's)."""
    return _console_class()(file=out, **options)


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    # one write: `json.dump` writes each of the document's ~140,000 pieces to `out` on its own (M: 0.07 s)
    out.write(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def write_yaml(doc: dict[str, Any], out: TextIO) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(json.loads(json.dumps(doc)), buf)
    out.write(buf.getvalue())


def write_tables(doc: dict[str, Any], out: TextIO) -> None:
    from rich.table import Table

    screen = console(out, width=140, highlight=False, soft_wrap=False)
    binds = Table(title=f"Binds ({len(doc['binds'])})", title_justify="left")
    binds.add_column("pod")
    binds.add_column("node")
    for pod, node in doc["binds"].items():
        binds.add_row(pod, node)
    screen.print(binds)
    if doc["pipelined"]:
        pipe = Table(title=f"Pipelined ({len(doc['pipelined'])}): placed on resources still being released",
                     title_justify="left")
        pipe.add_column("pod")
        pipe.add_column("node")
        pipe.add_column("nominated")
        nominated = doc.get("nominated") or {}
        for pod, node in doc["pipelined"].items():
            pipe.add_row(pod, node, "yes" if pod in nominated else "")
        screen.print(pipe)
    if doc["evictions"]:
        ev = Table(title=f"Evictions ({len(doc['evictions'])})", title_justify="left")
        for col in ("pod", "action", "for", "rule"):
            ev.add_column(col)
        for e in doc["evictions"]:
            ev.add_row(e["pod"], e["action"], e["for"], e["rule"])
        screen.print(ev)
    groups = Table(title="PodGroups", title_justify="left")
    groups.add_column("podgroup")
    groups.add_column("phase")
    groups.add_column("condition")
    for name, status in doc["podgroups"].items():
        cond = status["conditions"][0] if status["conditions"] else {}
        text = f"{cond.get('type', '')}: {cond.get('message') or cond.get('reason', '')}" if cond else ""
        groups.add_row(name, status["phase"], text)
    screen.print(groups)
    if doc["unschedulable"]:
        pending = Table(title=f"Pending ({len(doc['unschedulable'])})", title_justify="left")
        pending.add_column("pod")
        pending.add_column("why")
        for pod, reasons in doc["unschedulable"].items():
            pending.add_row(pod, "; ".join(reasons))
        screen.print(pending)
    stats = doc.get("stats", {})
    screen.print(f"session: {stats.get('session_ms', 0)} ms")
    for action, run in (stats.get("optimize") or {}).items():
        screen.print(f"optimize: {action} kept {run['kept']}'s run: {run['why']}")
