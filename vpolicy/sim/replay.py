"""Recorded sessions re-run under another policy, and any one of them exported as a scenario file.

`replay(directory, policy)` reads a recording (`vpolicy.sim.record`), runs every session's snapshot
under `policy` at the recorded clock, and compares the decisions that matter to a cluster — binds,
pipelined placements, evictions, PodGroup phases — with the recorded ones. Sessions are independent:
each replays the recorded snapshot, not one the new policy would have produced, so a difference says
"in this situation the other policy decides otherwise", and the first difference is usually the
interesting one.

`export_scenario(directory, n, ...)` writes session n as a scenario file (docs/scenarios.md): header
with the recorded decisions as expectations, then the snapshot as Kubernetes objects
(`vpolicy.load.manifest`), so an incident becomes a regression test. Formatting for the terminal is
`format_text`/`to_json`; nothing here prints.
"""
from __future__ import annotations

import datetime
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.errors import PolicyError
from vpolicy.model.decisions import Decisions
from vpolicy.load import manifest
from vpolicy.sim import record
from vpolicy.source import Span

NO_SESSION = "replay.no-such-session"


@dataclass(frozen=True, slots=True)
class SessionDiff:
    session: int
    now: float
    lines: tuple[str, ...]


@dataclass(slots=True)
class ReplayResult:
    recording: str
    recorded_policy: str
    policy: str
    sessions: int = 0
    differing: list[SessionDiff] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differing


def replay(directory: str | Path, policy: CompiledPolicy, *,
           progress: Callable[[int], None] | None = None) -> ReplayResult:
    meta = record.read_meta(directory)
    result = ReplayResult(str(directory), str(meta.get("policy", "")), policy.source)
    for rec in record.read_sessions(directory):
        replayed = run_session(rec.snapshot, policy, now=rec.now, solver_budget=0).decisions
        lines = diff_decisions(rec.decisions, replayed)
        if lines:
            result.differing.append(SessionDiff(rec.session, rec.now, tuple(lines)))
        result.sessions += 1
        if progress is not None:
            progress(result.sessions)
    return result


def diff_decisions(recorded: Decisions, replayed: Decisions) -> list[str]:
    """`-` only recorded, `+` only replayed, `~` both but different; sorted by kind, then pod."""
    lines: list[str] = []
    for what, old, new in (("bind", recorded.binds, replayed.binds),
                           ("pipeline", recorded.pipelined, replayed.pipelined)):
        for pod in sorted(set(old) | set(new)):
            if pod not in new:
                lines.append(f"- {what} {pod} -> {old[pod]}")
            elif pod not in old:
                lines.append(f"+ {what} {pod} -> {new[pod]}")
            elif old[pod] != new[pod]:
                lines.append(f"~ {what} {pod}: {old[pod]} -> {new[pod]}")
    evicted_then = {e.pod: e for e in recorded.evictions}
    evicted_now = {e.pod: e for e in replayed.evictions}
    for pod in sorted(set(evicted_then) | set(evicted_now)):
        if pod not in evicted_now:
            lines.append(f"- evict {pod} ({evicted_then[pod].action} for {evicted_then[pod].for_job})")
        elif pod not in evicted_then:
            lines.append(f"+ evict {pod} ({evicted_now[pod].action} for {evicted_now[pod].for_job})")
    phases_then = {k: s.phase for k, s in recorded.podgroups.items()}
    phases_now = {k: s.phase for k, s in replayed.podgroups.items()}
    for group in sorted(set(phases_then) & set(phases_now)):
        if phases_then[group] != phases_now[group]:
            lines.append(f"~ podgroup {group}: {phases_then[group]} -> {phases_now[group]}")
    return lines


def format_text(results: Sequence[ReplayResult], *, limit: int = 20) -> str:
    out = io.StringIO()
    for r in results:
        out.write(f"{r.recording}: {r.sessions} sessions recorded under {r.recorded_policy or '?'}, "
                  f"replayed under {r.policy or 'the default conf'}: ")
        out.write("no decision differs\n" if r.same else f"{len(r.differing)} differ\n")
        for diff in r.differing[:limit]:
            out.write(f"  session {diff.session} at {manifest.timestamp(diff.now)}:\n")
            out.writelines(f"    {line}\n" for line in diff.lines)
        if len(r.differing) > limit:
            out.write(f"  ... {len(r.differing) - limit} more sessions differ (--limit to see them)\n")
    return out.getvalue()


def to_json(results: Sequence[ReplayResult]) -> dict[str, Any]:
    return {"recordings": [{"recording": r.recording, "recorded_policy": r.recorded_policy, "policy": r.policy,
                            "sessions": r.sessions,
                            "differing": [{"session": d.session, "now": d.now, "changes": list(d.lines)}
                                          for d in r.differing]} for r in results]}


def export_scenario(directory: str | Path, session: int, *, out: str | Path,
                    policy: tuple[str, str] | None = None) -> Path:
    """Write session `session` of a recording as a scenario file; `policy` = (policy|conf, path) overrides
    the recorded one. Returns the path written."""
    found = next((r for r in record.read_sessions(directory) if r.session == session), None)
    if found is None:
        raise PolicyError.single(NO_SESSION, f"{directory} has no session {session}", Span(str(directory), 1, 1),
                                 help="`vpolicy replay DIR --policy P` lists the sessions that differ")
    meta = record.read_meta(directory)
    target = Path(out)
    kind, source = policy or _recorded_policy(meta)
    when = datetime.datetime.fromtimestamp(found.now, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    header: dict[str, Any] = {
        "apiVersion": "vpolicy/v1", "kind": "Scenario",
        "name": f"session {session} of {Path(directory).name}, recorded at {when} UTC",
        "description": LiteralScalarString(
            f"Exported by `vpolicy replay {directory} --export-scenario {session}`.\n"
            f"The expectations are what {meta.get('policy') or 'the recorded policy'} decided then;\n"
            "edit them to what should have happened and keep the file as a regression scenario.\n"),
    }
    if source:
        header["policy" if kind == "policy" else "conf_file"] = os.path.relpath(Path(source).resolve(),
                                                                                target.resolve().parent)
    d = found.decisions
    header["expect"] = {
        "binds": dict(sorted(d.binds.items())),
        "pipelined": dict(sorted(d.pipelined.items())),
        "evictions": sorted(e.pod for e in d.evictions),
        "podgroups": {k: s.phase for k, s in sorted(d.podgroups.items())},
    }
    yaml = YAML(typ="rt")  # keeps the header's key order and the description's block style
    yaml.width = 120
    buf = io.StringIO()
    yaml.dump_all([header, *manifest.to_objects(found.snapshot)], buf)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(buf.getvalue(), encoding="utf-8")
    return target


def _recorded_policy(meta: dict[str, Any]) -> tuple[str, str]:
    source = str(meta.get("policy_path") or meta.get("policy", ""))
    if not source or not Path(source).is_file():
        return ("default", "")
    kind = str(meta.get("policy_kind", "")) or ("policy" if source.endswith(".vpol") else "conf")
    return (kind, source)
