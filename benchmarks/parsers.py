"""The parsers the loader could use, timed side by side on one realistic dump (how its fast path was chosen).

`python -m benchmarks.parsers --size S` times, on the `benchmarks.dumps` dump of that size, CPU seconds:
JSON with the standard library, orjson (when installed), msgspec into Python objects, and msgspec into the
loader's declared shapes (`vpolicy.load.shapes`: what `vpolicy.load.dumpfile` does); YAML with ruamel's
round-trip loader (the exact path), PyYAML's libyaml `CSafeLoader`, rapidyaml's parse, and rapidyaml's
parse + `emit_json` + the shaped msgspec decode (the fast path). Slow candidates run on the first
`--slow-mb` megabytes' worth of objects only, and their time is scaled up (marked `~`).
"""
from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from benchmarks import dumps
from vpolicy.load import dumpfile


def _cpu(run: Callable[[], Any]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def _shaped(data: bytes) -> None:
    items = dumpfile._LIST_HEAD.decode(data).get("items") or []  # noqa: SLF001  # reason: the loader's own decoders
    for raw in items:
        kind = dumpfile._HEAD.decode(raw).get("kind")  # noqa: SLF001
        decoder = dumpfile._shape_decoder(kind) if isinstance(kind, str) else None  # noqa: SLF001
        (decoder or dumpfile._ANY).decode(raw)  # noqa: SLF001


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parsers")
    parser.add_argument("--size", default="S")
    parser.add_argument("--slow-mb", type=float, default=2.0)
    args = parser.parse_args(argv)
    jdata = dumps.dump_path(args.size, "json").read_bytes()
    ydata = dumps.dump_path(args.size, "yaml").read_bytes()
    cut = ydata.find(b"\n- ", int(args.slow_mb * 1e6)) + 1 or len(ydata)
    ysmall, scale = ydata[:cut], len(ydata) / max(cut, 1)
    sizes = f"{args.size}: JSON {len(jdata) / 1e6:.0f} MB, YAML {len(ydata) / 1e6:.0f} MB"
    rows: list[tuple[str, str]] = [("dump", sizes)]
    rows.append(("json (stdlib)", f"{_cpu(lambda: json.loads(jdata)):.2f}"))
    try:
        orjson = importlib.import_module("orjson")
        rows.append(("orjson", f"{_cpu(lambda: orjson.loads(jdata)):.2f}"))
    except ImportError:
        rows.append(("orjson", "not installed"))
    rows.append(("msgspec, whole objects", f"{_cpu(lambda: msgspec.json.decode(jdata)):.2f}"))
    rows.append(("msgspec, declared shapes (fast path)", f"{_cpu(lambda: _shaped(jdata)):.2f}"))
    from ruamel.yaml import YAML
    rows.append(("ruamel round-trip (exact path)",
                 f"~{_cpu(lambda: list(YAML(typ='rt').load_all(ysmall.decode()))) * scale:.1f}"))
    import yaml  # type: ignore[import-untyped]  # reason: no stubs installed (PyYAML is not a dependency)
    rows.append(("PyYAML CSafeLoader (libyaml)",
                 f"~{_cpu(lambda: yaml.load(ysmall, Loader=yaml.CSafeLoader)) * scale:.1f}"))
    import ryml  # type: ignore[import-untyped]  # reason: rapidyaml ships no type information
    rows.append(("rapidyaml parse", f"{_cpu(lambda: ryml.parse_in_arena(ydata)):.2f}"))
    rows.append(("rapidyaml + emit_json + shapes (fast path)",
                 f"{_cpu(lambda: _shaped(dumpfile._yaml_to_json(ydata))):.2f}"))  # noqa: SLF001
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
