"""The `vpolicy simulate` and `vpolicy replay` subcommands: their flags, and what each run prints.

`add_parsers(subparsers)` declares both (vpolicy/cli.py calls it); `main(args, out=, err=)` runs the one
asked for and returns the exit code: 0 ok, 1 bad input (diagnostics on `err`), 2 for a replay whose
decisions differ. Heavy imports (the engine, matplotlib) happen only when a command runs, so `vpolicy
--help` stays fast. Everything printed goes to `out`/`err`; progress bars only when `err` is a terminal.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

EXIT_OK, EXIT_BAD_INPUT, EXIT_DIFFERENT = 0, 1, 2


class _AppendPolicy(argparse.Action):
    """--policy and --conf, repeatable and interleaved, kept in the order given as (kind, path)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        given.append(((option_string or "--policy").lstrip("-"), str(values)))
        setattr(namespace, self.dest, given)


def _duration(text: str) -> float:
    from vpolicy.sim.workload import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; write e.g. 90s, 30m, 24h or 7d") from None


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    s = sub.add_parser("simulate", help="run sessions over time on a simulated cluster with a workload; metrics, "
                                        "plots and an HTML report",
                       description="Discrete-event simulation: jobs of the workload arrive, a session runs each "
                                   "period, bound pods run for their duration. Several --policy/--conf run the same "
                                   "workload side by side. See docs/simulate.md.")
    s.add_argument("--cluster", action="append", required=True, help="cluster dump: file or folder (repeatable)")
    s.add_argument("--workload", metavar="FILE", help="workload YAML (docs/simulate.md) or a CSV trace (*.csv)")
    s.add_argument("--policy", action=_AppendPolicy, dest="policies", metavar="FILE",
                   help="a native policy file (repeatable; runs side by side with every --conf)")
    s.add_argument("--conf", action=_AppendPolicy, dest="policies", metavar="FILE",
                   help="a volcano-scheduler.conf (repeatable)")
    s.add_argument("--out", metavar="DIR", help="write metrics.json, CSV timelines, PNG plots and index.html here")
    s.add_argument("--seed", type=int, default=1, help="seed for the workload's jitter and duration ranges")
    s.add_argument("--until", type=_duration, metavar="DURATION",
                   help="simulate this long (default: the workload's duration, else until it is done)")
    s.add_argument("--period", type=_duration, default=1.0, metavar="DURATION",
                   help="time between sessions (default 1s; idle stretches are skipped)")
    s.add_argument("--starve-after", type=_duration, default=3600.0, metavar="DURATION",
                   help="a job waiting longer than this counts as starved (default 1h)")
    s.add_argument("--record", metavar="DIR", help="record every session (snapshot + decisions) into DIR/<policy>/")
    s.add_argument("--parallel", type=int, metavar="N", help="run up to N policies at once in worker processes "
                                                              "(default: one per policy, at most the CPU count)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--generate-workload", metavar="FILE",
                   help="write a seeded workload for the cluster to FILE (used as --workload when none is given)")
    s.add_argument("--generate-jobs", type=int, default=150, metavar="N", help="jobs in a generated workload")
    s.add_argument("--generate-hours", type=float, default=24.0, metavar="H", help="hours a generated workload spans")
    r = sub.add_parser("replay", help="re-run recorded sessions under another policy and report where decisions "
                                      "differ; export a session as a scenario",
                       description="DIR is a recording from `simulate --record` or `scheduler --record` (or a folder "
                                   "of them, one per policy).")
    r.add_argument("recording", metavar="DIR")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--policy", metavar="FILE", help="a native policy file to replay under")
    g.add_argument("--conf", metavar="FILE", help="a volcano-scheduler.conf to replay under")
    r.add_argument("--export-scenario", type=int, metavar="N",
                   help="write session N as a scenario file (docs/scenarios.md) instead of replaying")
    r.add_argument("-o", "--out", metavar="FILE", help="where --export-scenario writes (default: scenario-N.yaml)")
    r.add_argument("--output", choices=("text", "json"), default="text")
    r.add_argument("--limit", type=int, default=20, metavar="N", help="show at most N differing sessions per "
                                                                       "recording (text output)")


def main(args: argparse.Namespace, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from vpolicy.errors import PolicyError

    try:
        return _simulate(args, out, err) if args.command == "simulate" else _replay(args, out, err)
    except PolicyError as exc:
        for diag in exc.diagnostics:
            print(diag.one_line(), file=err)
        return EXIT_BAD_INPUT


def _simulate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from vpolicy.load.cluster import load_cluster
    from vpolicy.sim import generate, report, run, summary

    workload_path = args.workload
    if args.generate_workload:
        cluster = load_cluster(args.cluster)
        generated = generate.generate_workload(cluster, seed=args.seed, hours=args.generate_hours,
                                               jobs=args.generate_jobs)
        Path(args.generate_workload).write_text(generate.dump_workload(generated), encoding="utf-8")
        print(f"wrote {args.generate_workload} ({args.generate_jobs} jobs)", file=out)
        workload_path = workload_path or args.generate_workload
        if not args.out:
            return EXIT_OK
    if not workload_path or not args.out:
        print("error: simulate needs --workload FILE (or --generate-workload FILE) and --out DIR", file=err)
        return EXIT_BAD_INPUT
    inputs = run.Inputs(tuple(args.cluster), workload_path, args.seed, args.period, args.until)
    prepared = run.prepare(inputs, run.label_policies(args.policies or []))
    parallel = args.parallel or min(len(prepared.args), os.cpu_count() or 1)
    results = _with_progress(prepared, parallel, args.record, err, enabled=not args.no_progress)
    summaries = [summary.summarize(r, starve_after=args.starve_after) for r in results]
    end = max((r.end for r in results), default=0.0)
    written = report.write_report(args.out, results, summaries, workload=prepared.workload, inputs={
        "cluster": list(args.cluster), "workload": workload_path, "seed": args.seed, "period_s": args.period,
        "until_s": args.until, "end_s": end, "starve_after_s": args.starve_after,
        "jobs": len(prepared.jobs)})
    report.print_summary(summaries, out)
    print(f"report: {written[-1]} (metrics.json, {len(results) * 3} CSV files, "
          f"{sum(1 for p in written if p.suffix == '.png')} plots)", file=out)
    if args.record:
        print(f"recorded sessions: {', '.join(str(Path(args.record) / r.label) for r in results)}", file=out)
    return EXIT_OK


def _with_progress(prepared: Any, parallel: int, record_dir: str | None, err: TextIO, *, enabled: bool) -> list[Any]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from vpolicy.sim import run

    console = Console(file=err)
    if not enabled or not console.is_terminal:
        return run.run_policies(prepared, record_dir=record_dir, parallel=parallel)
    total = max(prepared.horizon / 3600, 1e-6)
    with Progress(TextColumn("{task.description:<24}"), BarColumn(), TextColumn("{task.completed:>6.1f} / "
                  "{task.total:.1f} simulated hours"), TimeElapsedColumn(), console=console) as bar:
        tasks = [bar.add_task(a.label, total=total) for a in prepared.args]

        def update(index: int, t: float) -> None:
            bar.update(tasks[index], completed=min(t / 3600, total))

        results = run.run_policies(prepared, record_dir=record_dir, parallel=parallel, progress=update)
        for task in tasks:
            bar.update(task, completed=total)
    return results


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from vpolicy.harness import policy as policies
    from vpolicy.sim import record, replay

    found = record.recordings(args.recording)
    if not found:
        list(record.read_sessions(args.recording))  # raises the located "no recording" diagnostic
    chosen = ("policy", args.policy) if args.policy else ("conf", args.conf) if args.conf else None
    if args.export_scenario is not None:
        if len(found) != 1:
            print(f"error: {args.recording} holds {len(found)} recordings; name one of: "
                  f"{', '.join(str(p) for p in found)}", file=err)
            return EXIT_BAD_INPUT
        target = args.out or f"scenario-{args.export_scenario}.yaml"
        path = replay.export_scenario(found[0], args.export_scenario, out=target, policy=chosen)
        print(f"wrote {path}: run it with `vpolicy test {path}`", file=out)
        return EXIT_OK
    if chosen is None:
        print("error: replay needs --policy FILE or --conf FILE (or --export-scenario N)", file=err)
        return EXIT_BAD_INPUT
    results = []
    for directory in found:
        first = next(iter(record.read_sessions(directory)), None)
        compiled = policies.resolve(first.snapshot if first else None, **{chosen[0]: chosen[1]})
        results.append(replay.replay(directory, compiled))
    if args.output == "json":
        json.dump(replay.to_json(results), out, indent=2)
        out.write("\n")
    else:
        out.write(replay.format_text(results, limit=args.limit))
    return EXIT_OK if all(r.same for r in results) else EXIT_DIFFERENT

