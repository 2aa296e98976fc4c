"""Session records: every session's snapshot and decisions, written compactly to a folder and read back.

A recording is a folder holding `meta.json` (format, the policy that decided, who recorded) and
`sessions.jsonl.gz`: one JSON line per session, `{"session": N, "now": epoch, "snapshot": ...,
"decisions": ...}`, gzip-compressed. Snapshots are delta-encoded against the previous line: a keyed
collection (nodes, pods, podgroups, queues, priority classes) is written `{"full": [...]}` the first
time and `{"upsert": [...], "delete": [keys]}` after, or left out when nothing in it changed; other
fields appear when they change. Whenever the order of a collection changes the engine could see
it (tie-breaks follow snapshot order), so that collection is written in full. Each writer starts with
a full line, so a recording that was appended to after a restart still reads back.

`SessionRecorder` is the writer; the live scheduler (`vpolicy scheduler --record DIR`) and `vpolicy
simulate --record DIR` both use it:

    with SessionRecorder(directory, policy=policy.source, recorder="scheduler") as rec:
        ...
        rec.write(snapshot, result.decisions, now=clock())

`read_sessions(directory)` yields `SessionRecord`s back; `vpolicy.sim.replay` re-runs them.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from vpolicy.errors import PolicyError
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions
from vpolicy.sim import codec
from vpolicy.source import Span

FORMAT = "vpolicy-sessions/1"
SESSIONS = "sessions.jsonl.gz"
META = "meta.json"
BAD_RECORD = "replay.bad-record"
NO_RECORDING = "replay.no-recording"
# Collections written as deltas, and the key each of their items is known by.
_KEYED: dict[str, Callable[[Any], str]] = {
    "nodes": lambda n: n.name, "pods": lambda p: p.key, "podgroups": lambda g: g.key,
    "queues": lambda q: q.name, "priority_classes": lambda pc: pc.name,
}
_JSON_KEY: dict[str, Callable[[dict[str, Any]], str]] = {
    "nodes": lambda n: n["name"], "pods": lambda p: f"{p['namespace']}/{p['name']}",
    "podgroups": lambda g: f"{g['namespace']}/{g['name']}", "queues": lambda q: q["name"],
    "priority_classes": lambda pc: pc["name"],
}
_PLAIN = ("namespaces", "conf_text", "conf_line_offset", "conf_col_offset", "warnings", "deferred_pods")


@dataclass(frozen=True, slots=True)
class SessionRecord:
    session: int
    now: float
    snapshot: snap.ClusterSnapshot
    decisions: Decisions


class SessionRecorder:
    """Appends sessions to `directory/sessions.jsonl.gz` (created with its meta.json if missing)."""

    def __init__(self, directory: str | Path, *, policy: str = "", policy_kind: str = "",
                 recorder: str = "scheduler", label: str = "", flush_every: int = 1):
        """`policy` is the file that decides (a `.vpol` policy or a conf; `policy_kind` says which when
        the suffix does not); `flush_every` trades what a crash loses for compression (1: every session)."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        meta_path = self.directory / META
        if not meta_path.exists():
            meta_path.write_text(json.dumps({"format": FORMAT, "policy": policy, "policy_kind": policy_kind,
                                             "policy_path": str(Path(policy).resolve()) if policy else "",
                                             "label": label, "recorder": recorder}, indent=2) + "\n", encoding="utf-8")
        path = self.directory / SESSIONS
        self.session = _count_lines(path) if path.exists() else 0
        self._out = gzip.GzipFile(path, "ab")
        self._flush_every = max(1, flush_every)
        self._previous: dict[str, dict[str, tuple[object, Any]]] = {}  # field -> key -> (object, json)
        self._plain: dict[str, Any] = {}

    def write(self, snapshot: snap.ClusterSnapshot, decisions: Decisions, *, now: float) -> None:
        line = {"session": self.session, "now": now, "snapshot": self._delta(snapshot),
                "decisions": codec.encode_decisions(decisions)}
        self._out.write(json.dumps(line, separators=(",", ":")).encode("utf-8") + b"\n")
        self.session += 1
        if self.session % self._flush_every == 0:
            self._out.flush()

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> "SessionRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _delta(self, s: snap.ClusterSnapshot) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, key_of in _KEYED.items():
            items = getattr(s, name)
            before = self._previous.get(name)
            now: dict[str, tuple[object, Any]] = {}
            upserts = []
            for item in items:
                key = key_of(item)
                old = before.get(key) if before is not None else None
                if old is not None and old[0] is item:  # the same immutable object: unchanged
                    now[key] = old
                    continue
                encoded = codec.encode(item)
                now[key] = (item, encoded)
                if old is None or old[1] != encoded:
                    upserts.append(encoded)
            self._previous[name] = now
            if before is None or not _same_order(list(before), list(now)):
                out[name] = {"full": [v for _o, v in now.values()]}
            elif upserts or len(before) != len(now):
                deleted = [k for k in before if k not in now]
                out[name] = {"upsert": upserts, **({"delete": deleted} if deleted else {})}
        for name in _PLAIN:
            encoded = codec.encode(getattr(s, name))
            if name not in self._plain or self._plain[name] != encoded:
                out[name] = encoded
                self._plain[name] = encoded
        return out


def read_sessions(directory: str | Path) -> Iterator[SessionRecord]:
    """The sessions of one recording, in order; a damaged line raises PolicyError at its line."""
    path = Path(directory) / SESSIONS
    if not path.is_file():
        raise PolicyError.single(NO_RECORDING, f"no session recording in {directory} (no {SESSIONS})",
                                 Span(str(directory), 1, 1),
                                 help="record with `vpolicy simulate --record DIR` or `vpolicy scheduler --record DIR`")
    state: dict[str, dict[str, Any]] = {}  # field -> key -> decoded object
    plain: dict[str, Any] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, text in enumerate(lines, start=1):
                try:
                    line = json.loads(text)
                    snapshot = _apply(line["snapshot"], state, plain)
                    yield SessionRecord(int(line["session"]), float(line["now"]), snapshot,
                                        codec.decode_decisions(line["decisions"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise PolicyError.single(BAD_RECORD, f"session record {number} is damaged: {exc}",
                                             Span(str(path), number, 1),
                                             help="re-record, or cut the file before this line") from exc
    except (OSError, EOFError) as exc:
        raise PolicyError.single(BAD_RECORD, f"cannot read {path}: {exc}", Span(str(path), 1, 1),
                                 help="a recording cut short by a crash reads up to the last whole line; "
                                      "this one cannot be read at all") from exc


def read_meta(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def recordings(directory: str | Path) -> list[Path]:
    """`directory` when it is a recording, else its sub-folders that are (simulate records one per policy)."""
    root = Path(directory)
    if (root / SESSIONS).is_file():
        return [root]
    if root.is_dir():
        return sorted(p for p in root.iterdir() if (p / SESSIONS).is_file())
    return []


def _apply(delta: dict[str, Any], state: dict[str, dict[str, Any]], plain: dict[str, Any]) -> snap.ClusterSnapshot:
    hints = codec.field_types(snap.ClusterSnapshot)
    for name in _KEYED:
        change = delta.get(name)
        if change is None:
            continue
        item_type = codec.item_type(hints[name])
        if "full" in change:
            state[name] = {}
            upserts = change["full"]
        else:
            for key in change.get("delete", ()):
                state.setdefault(name, {}).pop(key, None)
            upserts = change["upsert"]
        items = state.setdefault(name, {})
        for data in upserts:
            items[_JSON_KEY[name](data)] = codec.decode(item_type, data)
    for name in _PLAIN:
        if name in delta:
            plain[name] = codec.decode_field(snap.ClusterSnapshot, name, delta[name])
    fields: dict[str, Any] = {name: tuple(state.get(name, {}).values()) for name in _KEYED}
    return snap.ClusterSnapshot(**fields, **plain)


def _same_order(before: list[str], now: list[str]) -> bool:
    """True when `now` is `before` less some keys plus new keys at the end (what a delta can express)."""
    kept = set(now)
    survivors = [k for k in before if k in kept]
    return now[:len(survivors)] == survivors


def _count_lines(path: Path) -> int:
    try:
        with gzip.open(path, "rb") as f:
            return sum(1 for _ in f)
    except (OSError, EOFError):
        return 0
