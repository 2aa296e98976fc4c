"""The `vpolicy` command line: parse flags, call the harness, pick a reporter, exit 0 / 1 / 2.

Bad input (policy, conf, snapshot) prints one diagnostic per line on stderr and exits 1 — never a
traceback. A reader that closes the output pipe early (`| head`) ends the command quietly (exit 141,
see EXIT_PIPE_CLOSED). This module holds no logic of its own.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.source import Span

EXIT_OK, EXIT_BAD_INPUT, EXIT_FAILED = 0, 1, 2
# When the reader of the output goes away (`vpolicy dry-run ... | head -1`), stop quietly with the status a
# shell reports for a program killed by SIGPIPE (128 + 13), as `cat` or `grep` would be in that pipe. Not 0:
# the output was cut short, and a script under `set -o pipefail` should see that as it does for those
# tools. Python ignores SIGPIPE, so the write raises BrokenPipeError; restoring the default handler
# instead would let a closed socket kill the live scheduler (an extension command of this same CLI).
EXIT_PIPE_CLOSED = 141


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vpolicy", description="Declarative batch-scheduling policies for Kubernetes")
    sub = p.add_subparsers(dest="command", required=True)
    _extension_commands(sub, sys.argv[1:] if argv is None else argv)
    d = sub.add_parser("dry-run", help="run one session on a cluster dump and print its decisions")
    d.add_argument("--cluster", action="append", required=True, help="dump: file, folder, .gz, - (stdin); repeatable")
    g = d.add_mutually_exclusive_group()
    g.add_argument("--policy", help="a native policy file (policy NAME ...)")
    g.add_argument("--conf", help="a volcano-scheduler.conf (or the ConfigMap holding it)")
    d.add_argument("--output", choices=("table", "json", "yaml"), default="table")
    d.add_argument("--explain", action="store_true", help="add the short reason for every pending pod")
    c = sub.add_parser("check", help="parse and check policies, confs and cluster manifests")
    c.add_argument("files", nargs="+")
    c.add_argument("--output", choices=("text", "json"), default="text")
    t = sub.add_parser("test", help="run scenario files (policies/tests) and report pass/fail with diffs")
    t.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or folders (default: policies/tests)")
    t.add_argument("--run", metavar="REGEX", help="only scenarios whose name or path matches (regex or substring)")
    t.add_argument("--output", choices=("text", "json"), default="text")
    t.add_argument("--coverage", action="store_true", help="also report which rules ever decided something, "
                                                           "and list the others with their spans")
    _explain_verify_commands(sub)
    _fmt_diff_commands(sub)
    _simulation_commands(sub)
    return p


def _explain_verify_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    e = sub.add_parser("explain", help="why a pod or podgroup is placed, pending (conflicting rules, cheapest fix) "
                                       "or evicted")
    e.add_argument("target", metavar="TARGET", help="NAMESPACE/NAME of a pod or podgroup (prefix pod/ or podgroup/ "
                                                    "when both exist)")
    e.add_argument("--cluster", action="append", required=True, help="dump: file, folder, .gz, - (stdin); repeatable")
    g = e.add_mutually_exclusive_group()
    g.add_argument("--policy", help="a native policy file (policy NAME ...)")
    g.add_argument("--conf", help="a volcano-scheduler.conf (or the ConfigMap holding it)")
    e.add_argument("--output", choices=("text", "json"), default="text")
    e.add_argument("--no-fix", action="store_true", help="skip the search for the cheapest fix")
    e.add_argument("--fix-budget", type=float, default=10.0, metavar="SECONDS", help="time for the fix search")
    v = sub.add_parser("verify", help="prove properties of a policy or conf for all small clusters, or print a "
                                      "counterexample cluster")
    v.add_argument("file", metavar="FILE", nargs="?", help="a policy file or a volcano-scheduler.conf "
                                                            "(default: Volcano's built-in conf)")
    v.add_argument("--property", action="append", metavar="NAME", help="only these properties (repeatable)")
    v.add_argument("--bound", type=int, default=2, metavar="N", help="clusters of at most N nodes, jobs and queues")
    v.add_argument("--worlds", type=int, default=None, metavar="K",
                   help="bounds 1-2 are searched exhaustively (one canonical cluster per class); with K, only when "
                        "they have at most K canonical clusters, else K are sampled (larger bounds: K, default 2000)")
    v.add_argument("--seed", type=int, default=0, help="seed for sampling when the bound has more clusters than K")
    v.add_argument("--output", choices=("text", "json"), default="text")
    v.add_argument("--write", metavar="DIR", help="write each counterexample cluster as DIR/<property>.yaml")


def _simulation_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`simulate` and `replay` (vpolicy.sim.command declares their flags and runs them)."""
    from vpolicy.sim import command

    command.add_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser(argv).parse_args(argv)
    extension = getattr(args, "extension", None)
    if callable(extension):  # a subcommand from another package (see _extension_commands); its errors are
        return int(extension(args))  # its own: a broken pipe there may be a socket of the live scheduler
    try:
        try:
            return _run(args)
        finally:
            sys.stdout.flush()  # output that fits in the buffer meets a closed pipe only here
    except BrokenPipeError:
        return _reader_gone()


def _run(args: argparse.Namespace) -> int:
    """One of vpolicy's own subcommands, with bad input reported as one diagnostic line each (exit 1)."""
    try:
        return _command(args)
    except PolicyError as exc:
        for diag in exc.diagnostics:
            print(diag.one_line(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # a closed output pipe is no bad input: main() ends quietly
        raise
    except (OSError, UnicodeDecodeError) as exc:
        print(_unreadable(exc).one_line(), file=sys.stderr)
        return EXIT_BAD_INPUT


def _command(args: argparse.Namespace) -> int:
    """Run one of vpolicy's own subcommands; bad input raises PolicyError."""
    if args.command == "dry-run":
        return _dry_run(args)
    if args.command in ("simulate", "replay"):
        from vpolicy.sim import command

        return command.main(args, out=sys.stdout, err=sys.stderr)
    if args.command == "check":
        from vpolicy.harness.check import run_check

        return run_check(args.files, output=args.output, out=sys.stdout, err=sys.stderr)
    if args.command == "test":
        return _test(args)
    if args.command in ("fmt", "diff"):
        return _fmt(args) if args.command == "fmt" else _diff(args)
    if args.command == "explain":
        return _explain(args)
    if args.command == "verify":
        return _verify(args)
    return EXIT_OK


def _unreadable(exc: OSError | UnicodeDecodeError) -> Diagnostic:
    """A file error that no loader turned into a diagnostic (they all should: see `load.textfile`), still
    as one located line when the error names its file."""
    if isinstance(exc, OSError) and exc.filename is not None:
        name = os.fsdecode(exc.filename)
        return Diagnostic("input.unreadable", f"cannot use {name}: {exc.strerror or exc}", Span(name, 1, 1),
                          help="check the path and its permissions")
    return Diagnostic("input.unreadable", str(exc), help="files given to vpolicy are UTF-8 text")


def _reader_gone() -> int:
    """Stop after the reader of stdout closed it: no error line. Stdout is pointed at /dev/null so the
    interpreter's last flush of what is still buffered does not fail again with 'Exception ignored'
    (the recipe of Python's `signal` documentation, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (embedded, or captured by a test): nothing to flush
        pass
    return EXIT_PIPE_CLOSED


def _dry_run(args: argparse.Namespace) -> int:
    from vpolicy import phases
    from vpolicy.harness import dryrun, report

    phases.mark("startup")
    run = dryrun.dry_run(args.cluster, policy=args.policy, conf=args.conf, one_shot=True)
    for warning in run.snapshot.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in run.policy_warnings:  # already `file:line:col: warning[code]: ...`
        print(line, file=sys.stderr)
    doc = run.document(explain=args.explain)
    if args.output == "json":
        report.write_json(doc, sys.stdout)
    elif args.output == "yaml":
        report.write_yaml(doc, sys.stdout)
    else:
        report.write_tables(doc, sys.stdout)
        dryrun.write_explain_table(doc, sys.stdout)
    phases.mark("report")
    phases.write()
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from vpolicy.harness import explain, report

    result = explain.explain(args.cluster, args.target, policy=args.policy, conf=args.conf, fixes=not args.no_fix,
                             fix_budget_s=args.fix_budget)
    if args.output == "json":
        report.write_json(explain.to_json(result), sys.stdout)
    else:
        sys.stdout.write(explain.format_text(result))
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from vpolicy.harness import report, verify

    run = verify.verify(args.file, properties=args.property, bound=args.bound, worlds=args.worlds, seed=args.seed)
    if args.write:
        verify.write_counterexamples(run, args.write)
    if args.output == "json":
        report.write_json(verify.to_json(run), sys.stdout)
    else:
        sys.stdout.write(verify.format_text(run))
    return EXIT_OK if run.ok else EXIT_FAILED


def _test(args: argparse.Namespace) -> int:
    from vpolicy.harness import report, testing

    run = testing.run_paths(args.paths or [testing.default_root()], run=args.run, coverage=args.coverage)
    for diag in run.errors:
        print(diag.one_line(), file=sys.stderr)
    if args.output == "json":
        report.write_json(testing.to_json(run), sys.stdout)
    else:
        sys.stdout.write(testing.format_text(run))
        if run.coverage is not None:
            from vpolicy.harness import coverage

            sys.stdout.write(coverage.format_text(run.coverage))
    if run.errors:
        return EXIT_BAD_INPUT
    return EXIT_OK if run.ok else EXIT_FAILED


def _fmt_diff_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    f = sub.add_parser("fmt", help="rewrite policy files in the canonical layout (comments kept)")
    f.add_argument("files", nargs="+", metavar="FILE", help=".vpol files, or folders searched for them")
    f.add_argument("--check", action="store_true", help="change nothing; print the diff and exit 1 if a file "
                                                        "is not formatted")
    d = sub.add_parser("diff", help="pods and podgroups whose fate differs between two policies, and why")
    d.add_argument("--cluster", action="append", help="dump: file, folder, .gz, - (stdin); repeatable")
    d.add_argument("--symbolic", action="store_true",
                   help="instead of one cluster, search every cluster up to --bound for one where A and B differ")
    d.add_argument("--bound", type=int, default=2, help="with --symbolic: at most this many nodes, queues, jobs")
    d.add_argument("--worlds", type=int, default=2000, help="with --symbolic: exhaustive up to this many clusters")
    d.add_argument("--policy", dest="sides", action=_Side, metavar="FILE", help="a native policy file (A or B)")
    d.add_argument("--conf", dest="sides", action=_Side, metavar="FILE", help="a volcano-scheduler.conf (A or B)")
    d.add_argument("--output", choices=("text", "json"), default="text")
    d.add_argument("--exit-code", action="store_true", help="exit 2 when the two policies decide differently")


class _Side(argparse.Action):
    """`--policy`/`--conf`, in the order given: the first is side A, the second side B."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sides = list(getattr(namespace, self.dest, None) or [])
        sides.append(((option_string or "--policy").lstrip("-"), str(values)))
        setattr(namespace, self.dest, sides)


def _fmt(args: argparse.Namespace) -> int:
    from vpolicy.harness import fmt

    return fmt.run_fmt(args.files, check=args.check, out=sys.stdout, err=sys.stderr)


def _diff(args: argparse.Namespace) -> int:
    from vpolicy.harness import diff, report

    sides = args.sides or []
    if len(sides) != 2:
        print("error[diff.two-policies]: give exactly two of --policy FILE / --conf FILE (A, then B); "
              f"got {len(sides)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    (kind_a, path_a), (kind_b, path_b) = sides
    if args.symbolic:
        from vpolicy.harness import diff_search

        found = diff_search.search(diff.PolicyRef(kind_a, path_a), diff.PolicyRef(kind_b, path_b),
                                   bound=args.bound, worlds=args.worlds)
        sys.stdout.write(diff_search.format_text(found))
        return EXIT_FAILED if args.exit_code and found.diff is not None else EXIT_OK
    if not args.cluster:
        print("error[diff.no-cluster]: give --cluster PATH, or --symbolic to search small clusters", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = diff.diff_policies(args.cluster, diff.PolicyRef(kind_a, path_a), diff.PolicyRef(kind_b, path_b))
    if args.output == "json":
        report.write_json(diff.to_json(result), sys.stdout)
    else:
        sys.stdout.write(diff.format_text(result))
    return EXIT_FAILED if args.exit_code and not result.same else EXIT_OK


# The commands this package defines (a name missing here only costs the look-up of the others')
_BUILT_IN = frozenset({"dry-run", "check", "test", "explain", "verify", "fmt", "diff", "simulate", "replay"})


def _extension_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]", argv: Sequence[str]) -> None:
    """Subcommands other packages contribute (entry point group `vpolicy.commands`; e.g. `scheduler` from
    cluster_adapter), so the engine never imports them. Only the one asked for is loaded; the others
    appear in `--help`. Each entry point is a `register(subparsers)` that sets `extension=<main(args) -> int>`
    on its parser's defaults."""
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted in _BUILT_IN:  # reading every installed package's entry points costs a dry-run ~35 ms of start-up
        return
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group="vpolicy.commands"), key=lambda e: e.name):
        if ep.name == wanted:
            ep.load()(sub)
        else:
            sub.add_parser(ep.name, help=f"(from {ep.value.split(':')[0]}; see vpolicy {ep.name} --help)")


if __name__ == "__main__":
    sys.exit(main())
