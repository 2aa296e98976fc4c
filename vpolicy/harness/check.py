"""`vpolicy check FILE...`: parse and check policy files, volcano-scheduler.conf files and cluster
manifests, reporting every diagnostic with its location; exit 1 on any error.

The kind of a file is told by its content: a `.vpol` file is DSL, a YAML document with `actions` or
`tiers` (or a ConfigMap holding `volcano-scheduler.conf`) is a conf, anything else a cluster manifest.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence, TextIO

from vpolicy.errors import Diagnostic, PolicyError, sorted_diagnostics


def check_file(path: str) -> list[Diagnostic]:
    from vpolicy import lang
    from vpolicy.load import cluster, conf

    try:
        if path.endswith(".vpol"):
            lang.load_module(path)
        elif _looks_like_conf(path):
            loaded = conf.load_conf(path)
            return list(getattr(loaded, "warning_diagnostics", ()))
        else:
            snapshot = cluster.load_cluster([path])
            return [Diagnostic("load.warning", w, severity="warning") for w in snapshot.warnings]
    except PolicyError as exc:
        return list(exc.diagnostics)
    return []


def _looks_like_conf(path: str) -> bool:
    if path.endswith(".conf"):
        return True
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return False
    return "volcano-scheduler.conf" in text or any(
        line.startswith(("actions:", "tiers:")) for line in text.splitlines())


def run_check(files: Sequence[str], *, output: str, out: TextIO, err: TextIO) -> int:
    diags: list[Diagnostic] = []
    for path in files:
        diags.extend(check_file(path))
    diags = sorted_diagnostics(diags)
    if output == "json":
        json.dump([d.to_json() for d in diags], out, indent=2)
        out.write("\n")
    else:
        for d in diags:
            print(d.render(), file=err)
    errors = sum(1 for d in diags if d.severity == "error")
    if output == "text":
        print(f"{len(files)} file(s) checked: {errors} error(s), {len(diags) - errors} warning(s)", file=err)
    return 1 if errors else 0
