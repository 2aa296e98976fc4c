"""`vpolicy test`: run scenario files and compare each session's decisions with the scenario's `expect`.

`collect(paths)` finds scenario files (files, or folders searched recursively for *.yaml/*.yml);
`run_paths(paths, run=PATTERN)` loads, filters, runs and compares them and returns a `TestRun`;
`compare(expect, decisions)` is the diff itself: one readable block per failing expectation, marking
missing (`-`), unexpected (`+`) and wrong (`~`) entries with what actually happened to the pod.
Nothing here prints: `format_text` and `to_json` turn a `TestRun` into what the CLI writes.

A scenario with `xfail` documents a known engine bug: it is expected to fail (outcome `xfail`), and
passing is an error (`xpass`), as with pytest's strict xfail. Bad scenario files are not results but
diagnostics of the run (`TestRun.errors`), so the CLI can exit 1 for them and 2 for failures.
"""
from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vpolicy.compile.lower import compile_module
from vpolicy.engine.session import SessionResult, run_session
from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.harness import coverage as rule_coverage
from vpolicy.harness import explain_record, verify_props
from vpolicy.harness import policy as policies
from vpolicy.harness import scenario as scenarios
from vpolicy.lang import load_module
from vpolicy.model.decisions import Decisions
from vpolicy.source import Span

SUFFIXES = (".yaml", ".yml")
NO_SCENARIOS = "test.no-scenarios"
Outcome = Literal["pass", "fail", "xfail", "xpass"]


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One scenario's result: `passed` = every expectation held; `failures` = one diff block per expectation."""

    name: str
    file: str
    passed: bool
    failures: list[str]
    document: dict[str, object]  # the session's decision document (DESIGN §4)
    xfail: str | None = None
    rule_calls: int = 0  # how many rule evaluations the session made (a cheap coverage signal)

    @property
    def outcome(self) -> Outcome:
        if self.xfail is None:
            return "pass" if self.passed else "fail"
        return "xpass" if self.passed else "xfail"

    @property
    def ok(self) -> bool:
        return self.outcome in ("pass", "xfail")

    def message(self) -> str:
        """The failure text the CLI and pytest show: the scenario, then each failing expectation."""
        head = f"{self.file}: {self.name}"
        if self.outcome == "xpass":
            return f"{head}\n  passed, but is marked xfail: {self.xfail}\n  remove the xfail line if the bug is fixed"
        return "\n".join([head, *self.failures])


@dataclass(slots=True)
class TestRun:
    results: list[CaseResult] = field(default_factory=list)
    errors: list[Diagnostic] = field(default_factory=list)  # scenario files that could not be loaded
    coverage: rule_coverage.Coverage | None = None  # with run_paths(..., coverage=True)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def ok(self) -> bool:
        return not self.errors and all(r.ok for r in self.results)

    def summary(self) -> str:
        parts = [f"{self.count('pass')} passed", f"{self.count('fail')} failed"]
        parts += [f"{n} {label}" for label, n in (("xfailed", self.count("xfail")), ("xpassed", self.count("xpass")))
                  if n]
        if self.errors:
            parts.append(f"{len(self.errors)} error{'s' if len(self.errors) > 1 else ''}")
        return ", ".join(parts)


def default_root() -> Path:
    """Where `vpolicy test` looks when given no path: the shipped scenarios, `policies/tests`."""
    root = policies.policy_root() / "tests"
    try:
        return root.relative_to(Path.cwd())  # shorter file names in reports when run from the checkout
    except ValueError:
        return root


def collect(paths: Sequence[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Scenario files under `paths` (folders recursively, sorted), and a diagnostic per missing path."""
    files: list[Path] = []
    errors: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not found:
                errors.append(Diagnostic(NO_SCENARIOS, f"no scenario files (*.yaml, *.yml) under {raw}",
                                         Span(str(raw), 1, 1), help="point at policies/tests or a file in it"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            errors.append(Diagnostic(scenarios.MISSING_FILE, f"no such file or folder: {raw}", Span(str(raw), 1, 1),
                                     help="give scenario files or folders holding them"))
    return list(dict.fromkeys(files)), errors


def matcher(pattern: str | None) -> re.Pattern[str] | None:
    """`--run`: a regular expression, or (if it is not a valid one) a plain substring."""
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return re.compile(re.escape(pattern))


def selected(header: scenarios.Header, path: Path, pattern: re.Pattern[str] | None) -> bool:
    """Whether `--run` keeps this scenario: the pattern is searched in its name and in its path."""
    return pattern is None or bool(pattern.search(header.name) or pattern.search(path.as_posix()))


def run_paths(paths: Sequence[str | Path], *, run: str | None = None, now: float = 0.0,
              coverage: bool = False) -> TestRun:
    """Collect, filter by `run` (on name or path), load and run every scenario under `paths`; with
    `coverage`, also record which rules of the policies used ever decided something (`TestRun.coverage`)."""
    files, errors = collect(paths)
    out = TestRun(errors=errors)
    pattern = matcher(run)
    recorder = rule_coverage.CoverageRecorder() if coverage else None
    for path in files:
        try:
            header = scenarios.read_header(path)
            if not selected(header, path, pattern):
                continue
            loaded = scenarios.load_scenario(path)
        except PolicyError as exc:
            out.errors.extend(exc.diagnostics)
            continue
        try:
            if recorder is None:
                out.results.append(run_scenario(loaded, now=now))
                continue
            recorder.add_policy(loaded.policy)
            with recorder.recording():
                out.results.append(run_scenario(loaded, now=now))
        except PolicyError as exc:  # a rule of the scenario's policy failed: bad input, located at the rule
            out.errors.extend(exc.diagnostics)
    if recorder is not None:
        out.coverage = recorder.result()
    return out


def run_scenario(loaded: scenarios.Scenario, *, now: float = 0.0) -> CaseResult:
    """Run one session on the scenario's cluster and policy, and compare with its expectations."""
    try:
        result = run_session(loaded.cluster, loaded.policy, now=now if loaded.now is None else loaded.now,
                             last_runs=loaded.last_runs, timezone=loaded.timezone)
    except PolicyError:
        raise  # the policy's fault (a rule that cannot be evaluated): run_paths reports it as an error
    except Exception as exc:  # noqa: BLE001  # reason: an engine crash is a failed case, not a crashed run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        failure = (f"the session raised {type(exc).__name__}: {exc}\n"
                   f"  at {Path(where.filename).name}:{where.lineno} in {where.name}")
        return CaseResult(loaded.name, loaded.file, False, [failure], {}, loaded.xfail)
    document = result.decisions.to_document()
    failures = compare(loaded.expect, result.decisions) + property_failures(loaded, result, now=now)
    calls = result.decisions.stats.get("rule_calls", 0)
    return CaseResult(loaded.name, loaded.file, not failures, failures, document, loaded.xfail,
                      calls if isinstance(calls, int) else 0)


def property_failures(loaded: scenarios.Scenario, result: SessionResult, *, now: float = 0.0) -> list[str]:
    """One block per `property` of the policy's rule modules that held when the session opened and does
    not hold after it: a scenario that passes its expectations still fails when it breaks what a module
    promises (a property false from the start is the cluster's doing, not the policy's). A `policy:`
    file's own properties are checked as well as those of the modules it uses."""
    modules = [p.module for tier in loaded.policy.tiers for p in tier]
    if loaded.header.policy.kind == "policy":
        modules.append(compile_module(load_module(loaded.header.policy.path)))
    declared = verify_props.module_properties(modules)
    if not declared:
        return []
    when = now if loaded.now is None else loaded.now
    observed = verify_props.Observed(loaded.cluster, loaded.policy, explain_record.Recorded(result), when)
    return [f"  property {name} ({origin}):\n    {line}"
            for name, (origin, check) in declared.items() for line in check(observed)]


# comparing --------------------------------------------------------------------------------------------
def compare(expect: scenarios.Expect, decisions: Decisions) -> list[str]:
    """One text block per expectation that does not hold; [] when the session met every expectation."""
    failures: list[str] = []
    for key, value in expect.items():
        lines = _CHECKS[key](value, decisions)
        if lines:
            span = expect.spans.get(key)
            where = f" ({span})" if span else ""
            failures.append("\n".join([f"  expect.{key}{where}:", *(f"    {line}" for line in lines)]))
    return failures


def pod_state(pod: str, decisions: Decisions) -> str:
    """What the session did with a pod, in words, for the 'actually' side of a diff."""
    notes = []
    if pod in decisions.binds:
        notes.append(f"bound to {decisions.binds[pod]}")
    if pod in decisions.pipelined:
        notes.append(f"pipelined to {decisions.pipelined[pod]}")
    if any(e.pod == pod for e in decisions.evictions):
        notes.append("evicted")
    if pod in decisions.unschedulable:
        reasons = decisions.unschedulable[pod]
        notes.append(f"pending: {'; '.join(reasons)}" if reasons else "pending")
    return ", ".join(notes) or "untouched by the session"


def _placements(expected: Mapping[str, str], actual: Mapping[str, str], decisions: Decisions, *, what: str,
                exact: bool) -> list[str]:
    lines = []
    for pod, node in sorted(expected.items()):
        got = actual.get(pod)
        if got is None:
            lines.append(f"- {pod} -> {node}: missing (actually {pod_state(pod, decisions)})")
        elif got != node:
            lines.append(f"~ {pod} -> {node}: wrong node, {what} to {got}")
    if exact:
        for pod, node in sorted(actual.items()):
            if pod not in expected:
                lines.append(f"+ {pod} -> {node}: unexpected")
    return lines


def _binds(expected: Mapping[str, str], d: Decisions) -> list[str]:
    return _placements(expected, d.binds, d, what="bound", exact=True)


def _binds_include(expected: Mapping[str, str], d: Decisions) -> list[str]:
    return _placements(expected, d.binds, d, what="bound", exact=False)


def _pipelined(expected: Mapping[str, str], d: Decisions) -> list[str]:
    return _placements(expected, d.pipelined, d, what="pipelined", exact=True)


def _pipelined_include(expected: Mapping[str, str], d: Decisions) -> list[str]:
    return _placements(expected, d.pipelined, d, what="pipelined", exact=False)


def _nominated(expected: Mapping[str, str], d: Decisions) -> list[str]:
    return _placements(expected, d.nominated, d, what="nominated", exact=True)


def _binds_exclude(pods: Sequence[str], d: Decisions) -> list[str]:
    return [f"+ {pod} -> {d.binds[pod]}: bound, but must not be" for pod in sorted(pods) if pod in d.binds]


def _bound(pods: Sequence[str], d: Decisions) -> list[str]:
    return [f"- {pod}: not bound (actually {pod_state(pod, d)})" for pod in sorted(set(pods)) if pod not in d.binds]


def _bind_count(expected: int, d: Decisions) -> list[str]:
    if len(d.binds) == expected:
        return []
    bound = ", ".join(f"{pod} -> {node}" for pod, node in sorted(d.binds.items())) or "none"
    return [f"~ {len(d.binds)} pods bound, expected {expected} (bound: {bound})"]


def _evictions_of(pods: Sequence[str], d: Decisions, *, exact: bool) -> list[str]:
    evicted = {e.pod: e for e in d.evictions}
    lines = [f"- {pod}: not evicted (actually {pod_state(pod, d)})" for pod in sorted(set(pods)) if pod not in evicted]
    if exact:
        lines += [f"+ {pod}: evicted by {e.action} for {e.for_job}, unexpected"
                  for pod, e in sorted(evicted.items()) if pod not in pods]
    return lines


def _evictions(pods: Sequence[str], d: Decisions) -> list[str]:
    return _evictions_of(pods, d, exact=True)


def _evictions_include(pods: Sequence[str], d: Decisions) -> list[str]:
    return _evictions_of(pods, d, exact=False)


def _podgroups(expected: Mapping[str, str], d: Decisions) -> list[str]:
    lines = []
    for group, phase in sorted(expected.items()):
        status = d.podgroups.get(group)
        if status is None:
            lines.append(f"- {group}: expected {phase}, but the session has no such job (its queue is missing?)")
        elif status.phase != phase:
            lines.append(f"~ {group}: expected {phase}, got {status.phase}")
    return lines


def _unschedulable(pods: Sequence[str], d: Decisions) -> list[str]:
    return [f"- {pod}: expected pending with a reason, actually {pod_state(pod, d)}"
            for pod in sorted(pods) if pod not in d.unschedulable]


def _unschedulable_reasons(expected: Mapping[str, str], d: Decisions) -> list[str]:
    lines = []
    for pod, text in sorted(expected.items()):
        reasons = d.unschedulable.get(pod)
        if reasons is None:
            lines.append(f"- {pod}: expected a reason containing {text!r}, actually {pod_state(pod, d)}")
        elif not any(text in reason for reason in reasons):
            lines.append(f"~ {pod}: no reason contains {text!r}; reasons: {' | '.join(reasons) or '(none)'}")
    return lines


_CHECKS: dict[str, Callable[[Any, Decisions], list[str]]] = {
    "binds": _binds, "binds_include": _binds_include, "binds_exclude": _binds_exclude, "bound": _bound, "bind_count": _bind_count,
    "pipelined": _pipelined, "pipelined_include": _pipelined_include, "nominated": _nominated,
    "evictions": _evictions, "evictions_include": _evictions_include,
    "podgroups": _podgroups, "unschedulable": _unschedulable, "unschedulable_reasons": _unschedulable_reasons,
}


# reporting --------------------------------------------------------------------------------------------
_LABELS: dict[Outcome, str] = {"pass": "PASS", "fail": "FAIL", "xfail": "XFAIL", "xpass": "XPASS"}


def format_text(run: TestRun, *, verbose: bool = True) -> str:
    """Per-case PASS/FAIL lines (with diffs for failures), then the summary line."""
    lines = []
    for result in run.results:
        label = _LABELS[result.outcome]
        if result.outcome == "pass" and not verbose:
            continue
        lines.append(f"{label:<6}{result.file}: {result.name}")
        if result.outcome == "fail":
            lines.extend(result.failures)
        elif result.outcome == "xfail":
            lines.append(f"      known failure: {result.xfail}")
        elif result.outcome == "xpass":
            lines.append(f"      passed, but is marked xfail ({result.xfail}); remove the xfail line")
    lines.append(run.summary())
    return "\n".join(lines) + "\n"


def to_json(run: TestRun) -> dict[str, object]:
    doc: dict[str, object] = {
        "results": [{"name": r.name, "file": r.file, "outcome": r.outcome, "passed": r.passed,
                     "failures": r.failures, "xfail": r.xfail, "rule_calls": r.rule_calls} for r in run.results],
        "errors": [d.to_json() for d in run.errors],
        "summary": {"passed": run.count("pass"), "failed": run.count("fail"), "xfailed": run.count("xfail"),
                    "xpassed": run.count("xpass"), "errors": len(run.errors)},
    }
    if run.coverage is not None:
        doc["coverage"] = rule_coverage.to_json(run.coverage)
    return doc
