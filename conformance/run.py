"""`python -m conformance.run --family NAME --count N --seed S`: both engines on generated clusters.

For each case of each family: Volcano's session (the oracle, `--runs` times: it breaks ties at random),
then vpolicy's on the same objects and conf. The case agrees when vpolicy's outcome is one Volcano
produced (`conformance.compare`, up to interchangeable nodes). A case that does not is run through the
oracle once more with its ties among equally scored nodes going to the node first in the dump, as
vpolicy's do (one of Volcano's possible outcomes: agree-tie when vpolicy's equals it), then `--confirm`
more times; if Volcano answered the same every time, the difference is real: it is
checked against the listed divergences (`conformance.divergences`), else shrunk (objects dropped while
the difference stays) and written as a scenario file whose expectation is Volcano's outcome. A case
where Volcano itself answered differently from run to run and vpolicy matched none is `undecided`.

Exit 0: every case agrees or differs by a listed divergence; 2: a new difference (scenario files
written under --out); 1: bad arguments or an engine that cannot run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from conformance import build, divergences, extender_server, generate, version_gap
from conformance.compare import differences, node_classes, outcome, shared_podgroups
from conformance.engines import Document, EngineError, Oracle, VolcanoPanic, run_vpolicy
from conformance.generate import FAMILIES, Case, case

DEFAULT_OUT = Path(__file__).resolve().parent / "found"


@dataclass
class Verdict:
    kind: str  # agree | agree-tie | listed | undecided | volcano-panic | differ | error
    lines: list[str] = field(default_factory=list)
    volcano: Document | None = None
    vpolicy_ms: float = 0.0
    volcano_ms: float = 0.0
    note: str = ""


def run_volcano(c: Case, oracle: Oracle, *, ties: str = "random") -> Document:
    """Volcano's decisions on `c`, as main-branch Volcano would make them (`conformance.version_gap`)."""
    seen_by_main = version_gap.main_case(c)
    return version_gap.main_document(c, oracle.run(seen_by_main.cluster_json(), c.conf, ties=ties))


def judge(c: Case, oracle: Oracle, *, runs: int = 3, confirm: int = 17, settle: int = 200) -> Verdict:
    c = extender_server.resolve(c)  # a case asking the family's extender: this process's server
    cluster = c.cluster_json()
    try:
        volcano_docs = [run_volcano(c, oracle) for _ in range(runs)]
        start = time.perf_counter()
        vp_doc = run_vpolicy(cluster, c.conf)
        vp_ms = (time.perf_counter() - start) * 1000
    except VolcanoPanic as exc:
        return Verdict("volcano-panic", [str(exc).splitlines()[0][:300]])
    except EngineError as exc:
        return Verdict("error", [str(exc)])
    classes = node_classes(c.objects)
    groups = shared_podgroups(volcano_docs[0], vp_doc)
    seen = {outcome(d, classes, groups) for d in volcano_docs}
    mine = outcome(vp_doc, classes, groups)
    volcano_ms = min(float(d["stats"]["session_ms"]) for d in volcano_docs)
    if mine in seen:
        return Verdict("agree" if len(seen) == 1 else "agree-tie", volcano=volcano_docs[0], vpolicy_ms=vp_ms,
                       volcano_ms=volcano_ms)
    try:  # Volcano with its draws among equally scored nodes made as vpolicy makes them: one of its outcomes
        first_of_equal = run_volcano(c, oracle, ties="first")
    except VolcanoPanic as exc:
        return Verdict("volcano-panic", [str(exc).splitlines()[0][:300]])
    except EngineError as exc:
        return Verdict("error", [str(exc)])
    if outcome(first_of_equal, classes, groups) == mine:
        return Verdict("agree-tie", volcano=first_of_equal, vpolicy_ms=vp_ms, volcano_ms=volcano_ms,
                       note="Volcano's outcome when its ties among equal nodes go to the first")
    for _ in range(confirm):
        try:
            d = run_volcano(c, oracle)
        except VolcanoPanic as exc:
            return Verdict("volcano-panic", [str(exc).splitlines()[0][:300]])
        except EngineError as exc:
            return Verdict("error", [str(exc)])
        seen.add(outcome(d, classes, groups))
        if mine in seen:
            return Verdict("agree-tie", volcano=d, vpolicy_ms=vp_ms, volcano_ms=volcano_ms)
    if len(seen) > 1:
        # Volcano's own draws (the order of a Go map of queues or jobs, a node among equals) gave several
        # outcomes, and one of a few percent is missed by twenty runs (preempt-1-142: vpolicy's in 11 of
        # 300): draw up to `settle` more before calling the case undecided
        for k in range(settle):
            try:
                d = run_volcano(c, oracle)
            except (VolcanoPanic, EngineError):
                break
            seen.add(outcome(d, classes, groups))
            if mine in seen:
                return Verdict("agree-tie", volcano=d, vpolicy_ms=vp_ms, volcano_ms=volcano_ms,
                               note=f"one of Volcano's rarer outcomes (run {runs + 1 + confirm + k + 1})")
    first = outcome(volcano_docs[0], classes, groups)
    lines = differences(first, mine)
    listed = divergences.explain(c, first, mine, lines)
    # where Volcano gave several outcomes, vpolicy's may be another of them changed by a listed gap
    for other in sorted(seen - {first}, key=repr) if listed is None else ():
        other_lines = differences(other, mine)
        listed = divergences.explain(c, other, mine, other_lines)
        if listed is not None:
            lines = other_lines
            break
    if listed is not None:
        return Verdict("listed", lines, volcano_docs[0], vp_ms, volcano_ms, note=listed.key)
    if len(seen) > 1:
        return Verdict("undecided", lines, volcano_docs[0], vp_ms, volcano_ms,
                       note=f"Volcano gave {len(seen)} different outcomes")
    return Verdict("differ", lines, volcano_docs[0], vp_ms, volcano_ms)


# ---- shrinking -----------------------------------------------------------------------------------------

def _still_differs(c: Case, oracle: Oracle) -> bool:
    return judge(c, oracle, runs=3, confirm=2, settle=0).kind == "differ"


def _without(c: Case, drop: set[int]) -> Case:
    return Case(c.family, c.seed, c.index, [o for i, o in enumerate(c.objects) if i not in drop], c.conf)


def _dependents(objects: list[dict[str, Any]], index: int) -> set[int]:
    """The object at `index` and what cannot stay without it: a podgroup's pods, a node's pods."""
    obj = objects[index]
    out = {index}
    kind, name = obj["kind"], obj["metadata"]["name"]
    for i, o in enumerate(objects):
        if o["kind"] != "Pod":
            continue
        if kind == "PodGroup" and o["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name") == name:
            out.add(i)
        if kind == "Node" and o["spec"].get("nodeName") == name:
            out.add(i)
    if kind == "Queue":
        for i, o in enumerate(objects):
            if o["kind"] == "PodGroup" and o["spec"].get("queue") == name:
                out |= _dependents(objects, i)
    return out


def shrink(c: Case, oracle: Oracle, *, budget_s: float = 120.0) -> Case:
    """Drop objects (with what depends on them) one at a time while the difference stays."""
    deadline = time.monotonic() + budget_s
    order = {"Queue": 0, "PodGroup": 1, "Node": 2, "Pod": 3, "PriorityClass": 4}
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        candidates = sorted(range(len(c.objects)), key=lambda i: order.get(c.objects[i]["kind"], 5))
        for index in candidates:
            if index >= len(c.objects) or time.monotonic() > deadline:
                break
            smaller = _without(c, _dependents(c.objects, index))
            if smaller.objects and _still_differs(smaller, oracle):
                c, changed = smaller, True
                break
    return c


def scenario_text(c: Case, volcano: Document, lines: list[str]) -> str:
    """A scenario file (docs/scenarios.md) whose expectation is Volcano's outcome."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    yaml = YAML()
    yaml.default_flow_style = False
    classes = node_classes(c.objects)
    groups = set(volcano.get("podgroups", {}))
    got = outcome(volcano, classes, groups)
    expect: dict[str, Any] = {"binds": dict(volcano.get("binds", {})),
                              "pipelined": dict(volcano.get("pipelined", {})),
                              "evictions": list(got.evictions),
                              "podgroups": dict(got.phases)}
    header = {"apiVersion": "vpolicy/v1", "kind": "Scenario",
              "name": f"conformance {c.name}: vpolicy differs from Volcano",
              "description": LiteralScalarString(
                  "Found by `python -m conformance.run` (docs/conformance.md); the expectation is what\n"
                  "Volcano's own session decided. Differences when found:\n"
                  + "\n".join(f"  {line}" for line in lines) + "\n"),
              "conf": LiteralScalarString(c.conf), "expect": expect}
    out = io.StringIO()
    yaml.dump_all([header, *c.objects], out)
    return out.getvalue()


# ---- command line ----------------------------------------------------------------------------------------

def run_family(family: str, count: int, seed: int, oracle: Oracle, *, out: Path | None, runs: int,
               shrink_budget: float, verbose: bool) -> tuple[Counter[str], list[str], dict[str, float]]:
    tally: Counter[str] = Counter()
    reports: list[str] = []
    times = {"vpolicy_ms": 0.0, "volcano_ms": 0.0}
    for index in range(count):
        c = case(family, seed, index)
        v = judge(c, oracle, runs=runs)
        tally[v.kind] += 1
        times["vpolicy_ms"] += v.vpolicy_ms
        times["volcano_ms"] += v.volcano_ms
        if v.kind in ("differ", "error", "undecided") or (verbose and v.kind == "listed"):
            head = f"{c.name}: {v.kind}" + (f" ({v.note})" if v.note else "")
            reports.append(head + "".join(f"\n    {line}" for line in v.lines[:20]))
        if v.kind == "differ" and out is not None:
            small = shrink(c, oracle, budget_s=shrink_budget)
            final = judge(small, oracle, runs=3, confirm=5)
            if final.kind == "differ" and final.volcano is not None:
                small_lines, volcano = final.lines, final.volcano
            else:
                small, small_lines, volcano = c, v.lines, v.volcano or {}
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{c.name}.yaml"
            path.write_text(scenario_text(small, volcano, small_lines))
            reports.append(f"    shrunk to {len(small.objects)} objects: {path}")
    return tally, reports, times


class _Parser(argparse.ArgumentParser):
    """Bad arguments are bad input: one line and exit 1 (argparse's own exit 2 means a difference here)."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m conformance.run", description=__doc__.split("\n")[0])
    parser.add_argument("--family", action="append", choices=[*FAMILIES, "all"], required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3, help="oracle runs per case (Volcano breaks ties at random)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where shrunk scenarios are written")
    parser.add_argument("--no-shrink", action="store_true", help="report differences without shrinking them")
    parser.add_argument("--shrink-budget", type=float, default=120.0, help="seconds of shrinking per difference")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--verbose", action="store_true", help="also list the cases explained by a divergence")
    parser.add_argument("--without-decorators", action="store_true",
                        help="draw clusters without the registered decorators (pod relations, HyperNodes)")
    args = parser.parse_args(argv)
    if args.count < 0 or args.runs < 1:
        print("conformance.run: --count must be >= 0 and --runs >= 1", file=sys.stderr)
        return 1
    families = list(FAMILIES) if "all" in args.family else list(dict.fromkeys(args.family))
    if args.without_decorators:
        generate.POD_DECORATORS.clear()
        generate.CLUSTER_DECORATORS.clear()
    try:
        binary = build.oracle_path(log=True)
    except build.OracleBuildError as exc:
        print(f"conformance.run: {exc}", file=sys.stderr)
        return 1
    summary: dict[str, Any] = {}
    failed = False
    with Oracle(binary) as oracle:
        for family in families:
            start = time.monotonic()
            tally, reports, times = run_family(family, args.count, args.seed, oracle,
                                               out=None if args.no_shrink else args.out, runs=args.runs,
                                               shrink_budget=args.shrink_budget, verbose=args.verbose)
            failed |= bool(tally["differ"] or tally["error"])
            summary[family] = {"cases": args.count, **dict(tally), "seconds": round(time.monotonic() - start, 1),
                               "vpolicy_ms_total": round(times["vpolicy_ms"], 1),
                               "volcano_ms_total": round(times["volcano_ms"], 1)}
            if not args.json:
                for line in reports:
                    print(line)
                print(f"{family}: {args.count} cases, " + ", ".join(f"{k} {n}" for k, n in sorted(tally.items()))
                      + f" ({summary[family]['seconds']} s)", flush=True)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
