"""`vpolicy verify`: prove properties of a policy or conf, or find a cluster that breaks one.

For every property (the built-in ones of `verify_props`, and `property` declarations of the policy and
its rule modules), in order of strength:

1. **structural**: the policy runs no action that can break it (no preempt: nobody is preempted) —
   holds for every cluster of every size;
2. **symbolic** (Z3, `preempt-lower-priority-only`, `reclaim-overused-only`, `guarantee-kept`): the
   policy's victim rules,
   combined as Volcano combines them, over every candidate list of up to N+1 tasks with any attribute
   values and resources — holds for every cluster, whatever its size, in which a node has at most N+1
   candidate victims;
3. **search** with the exact engine over the small clusters of `verify_worlds` (at most N nodes, N
   queues, N jobs): *every* such cluster when the bound is small enough to enumerate (bound 2 and
   below: one run for each class of clusters the policy cannot tell apart, `verify_canon`), otherwise
   a seeded sample of `worlds` clusters (then "held", not "proved").

A search that breaks a property shrinks the cluster (`verify_worlds.shrink`), writes it as YAML
(`verify_yaml`), loads that YAML back and re-runs the session to confirm `vpolicy dry-run` reproduces
it. The search is the ground truth: it is run for every property that is not proved structurally, and
a counterexample it finds wins over a symbolic proof (which would then point at a bug). Returns a
`VerifyRun`; never prints.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from vpolicy.compile.lower import compile_module
from vpolicy.engine.session import CompiledPolicy
from vpolicy.errors import Diagnostic, PolicyError, did_you_mean
from vpolicy.compile import ir
from vpolicy.harness import explain_record, verify_canon, verify_props, verify_symbolic, verify_topology, verify_worlds
from vpolicy.harness import verify_yaml
from vpolicy.harness import policy as policies
from vpolicy.lang import load_module
from vpolicy.load.cluster import load_cluster

DEFAULT_WORLDS = 2000  # clusters sampled when the bound is too large to enumerate (1-5 ms each)
# Before an exhaustive search, a few sampled clusters that lean towards contention: a counterexample
# usually shows among them at once, where the enumeration (smallest clusters first) may take thousands.
# They prove nothing; the enumeration still runs for every property they do not break.
PRESAMPLE = 200
# Per solver question. The reclaim proofs at bound 3 (four candidates) take 2-6 s of CPU; the limit is
# wall time, so it leaves room for a busy machine. A timeout is reported as unknown, never as a proof.
SYMBOLIC_TIMEOUT_MS = 30_000
SHRINK_STEPS = 150
DEFAULT_TOPOLOGY_WORLDS = 400  # topology clusters run when their space is larger (hard-topology-within-tier)
_VALIDATED = frozenset({"node-capacity", "gang-all-or-nothing", "queue-capability", "pending-has-reason"})


@dataclass(slots=True)
class Counterexample:
    violations: list[str]
    yaml: str
    size: tuple[int, int, int]  # nodes, queues, jobs
    reproduced: bool


@dataclass(slots=True)
class PropertyResult:
    name: str
    origin: str  # built-in, or the declaring module's file:line
    status: str  # proved | held | violated | unknown
    method: str
    ms: float = 0.0
    cpu_ms: float = 0.0  # process time (the machine may be shared: wall time says less)
    counterexample: Counterexample | None = None
    symbolic: verify_symbolic.Symbolic | None = None


@dataclass(slots=True)
class VerifyRun:
    file: str
    bound: int
    results: list[PropertyResult] = field(default_factory=list)
    worlds: int = 0  # clusters run (canonical ones when exhaustive)
    space: int = 0  # clusters within the bound
    exhaustive: bool = False
    represents: int = 0  # clusters of the space the runs stand for (= space when the search finished)
    presampled: int = 0  # sampled clusters run before an exhaustive search (they prove nothing)
    blind: str = ""  # what the policy cannot tell apart (why one run stands for several clusters)
    search_ms: float = 0.0
    search_cpu_ms: float = 0.0
    command: str = ""

    @property
    def ok(self) -> bool:
        return all(r.status != "violated" for r in self.results)


@dataclass(slots=True)
class _Property:
    name: str
    origin: str
    check: verify_props.Check
    result: PropertyResult
    searching: bool = True
    first_failure: verify_worlds.Spec | None = None
    violations: list[str] = field(default_factory=list)
    found_where: str = ""  # which clusters the search had run when it broke the property


def verify(file: str | None, *, properties: Sequence[str] | None = None, bound: int = 2, worlds: int | None = None,
           seed: int = 0, now: float = 0.0, symbolic_timeout_ms: int = SYMBOLIC_TIMEOUT_MS) -> VerifyRun:
    """Verify `file` (a policy, a volcano-scheduler.conf, or None for Volcano's built-in conf)."""
    problems = _bad_arguments(bound, worlds)
    if problems:
        raise PolicyError(problems)
    policy, declared, declared_terms = _load(file)
    known = {**{n: ("built-in", verify_props.builtin_check(n)) for n in (*verify_props.BUILTIN, verify_props.TOPOLOGY)},
             **declared}
    topology = any(p.module.rules.get("hypernode_gradient") for tier in policy.tiers for p in tier)
    wanted = list(properties) if properties else [n for n in known if n != verify_props.TOPOLOGY or topology]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise PolicyError([Diagnostic("verify.unknown-property", f"unknown property '{n}'",
                                      help=did_you_mean(n, sorted(known)) or f"known: {', '.join(sorted(known))}")
                           for n in unknown])
    run = VerifyRun(file or "<volcano-default>", bound, space=verify_worlds.space(bound))
    blind = verify_canon.blind_spots(policy, declared_terms)
    run.command = f"vpolicy dry-run --cluster CLUSTER.yaml {_policy_flag(file)}".rstrip()
    props = [_Property(n, known[n][0], known[n][1], PropertyResult(n, known[n][0], "held", "")) for n in wanted]
    for p in props:
        t0, c0 = time.perf_counter(), time.process_time()
        reason = verify_symbolic.structural(p.name, policy)
        if p.name == verify_props.TOPOLOGY:
            _search_topology(p, policy, bound=bound, worlds=worlds, seed=seed, now=now)
        elif reason is not None:
            p.result.status, p.result.method, p.searching = "proved", f"structural: {reason}", False
        elif p.name == "preempt-lower-priority-only":
            p.result.symbolic = verify_symbolic.prove_preempt_priority(policy, candidates=bound + 1,
                                                                    timeout_ms=symbolic_timeout_ms)
        elif p.name in ("guarantee-kept", "reclaim-overused-only"):
            p.result.symbolic = verify_symbolic.prove_reclaim(policy, p.name, candidates=bound + 1,
                                                           timeout_ms=symbolic_timeout_ms)
        p.result.ms += _ms(t0)
        p.result.cpu_ms += _cpu_ms(c0)
    _search(run, policy, [p for p in props if p.searching], blind, bound=bound, worlds=worlds, seed=seed, now=now)
    for p in props:
        if p.searching:
            _conclude(run, p, policy, now=now)
    run.results = [p.result for p in props]
    return run


def _search_topology(p: _Property, policy: CompiledPolicy, *, bound: int, worlds: int | None, seed: int,
                     now: float) -> None:
    """`hard-topology-within-tier` over its own worlds (`verify_topology`): the first cluster where a
    hard-mode job spans above its tier is the counterexample (already small: the worlds grow with it)."""
    found, exhaustive, total = verify_topology.worlds(bound, worlds or DEFAULT_TOPOLOGY_WORLDS, seed)
    runs = 0
    p.searching = False
    for snapshot in found:
        runs += 1
        violations = p.check(_observe(snapshot, policy, now))
        if violations:
            comment = (f"Counterexample to '{p.name}' found by vpolicy verify.\n"
                       + "".join(f"  {v}\n" for v in violations)
                       + "Reproduce: vpolicy dry-run --cluster THIS_FILE (with the same --policy or --conf)")
            text = verify_yaml.to_yaml(snapshot, comment=comment)
            jobs = sum(1 for g in snapshot.podgroups if g.network_topology is not None)
            p.result.status = "violated"
            p.result.method = f"search: a counterexample in topology world {runs} of {total} within bound {bound}"
            p.result.counterexample = Counterexample(violations, text, (len(snapshot.nodes), 1, jobs),
                                                     _reproduces(text, p, policy, now))
            return
    what = f"all {total}" if exhaustive else f"{runs} of {total}"
    p.result.status = "proved" if exhaustive else "held"
    p.result.method = (f"search: no counterexample in {what} topology clusters within bound {bound}"
                       + (" (exhaustive)" if exhaustive else " (sampled)"))


def _bad_arguments(bound: int, worlds: int | None) -> list[Diagnostic]:
    """`--bound` and `--worlds` below 1, which would search nothing and still report a result."""
    problems = []
    if bound < 1:
        problems.append(Diagnostic("verify.bad-bound", f"--bound must be at least 1, not {bound}"))
    if worlds is not None and worlds < 1:
        problems.append(Diagnostic("verify.bad-worlds", f"--worlds must be at least 1, not {worlds}",
                                   help="--worlds K runs at most K clusters; leave it out for the default"))
    return problems


def _policy_flag(file: str | None) -> str:
    if file is None:
        return ""
    return f"--policy {file}" if _is_policy(file) else f"--conf {file}"


def _is_policy(file: str) -> bool:
    return Path(file).suffix == ".vpol"


def _load(file: str | None) -> tuple[CompiledPolicy, dict[str, tuple[str, verify_props.Check]], list[ir.Term]]:
    """The compiled policy, its declared properties (from its rule modules and, for a policy file, its
    own) and the policy file's property terms (the rule modules' are part of the policy)."""
    if file is None:
        policy = policies.resolve(None)
    elif _is_policy(file):
        policy = policies.from_policy_file(file)
    else:
        policy = policies.resolve(None, conf=file)
    modules = [p.module for tier in policy.tiers for p in tier]
    own: list[ir.Term] = []
    if file is not None and _is_policy(file):
        modules.append(compile_module(load_module(file)))
        own = [term for _name, term, _fn, _label in modules[-1].properties]
    return policy, verify_props.module_properties(modules), own


def _search(run: VerifyRun, policy: CompiledPolicy, props: list[_Property], blind: verify_canon.Blind, *,
            bound: int, worlds: int | None, seed: int, now: float) -> None:
    if not props:
        return
    t0, c0 = time.perf_counter(), time.process_time()
    if verify_canon.space_is_enumerable(bound) and (worlds is None or verify_canon.count(bound, blind) <= worlds):
        run.exhaustive, run.blind = True, blind.describe()
        presample = verify_worlds.worlds(bound, min(PRESAMPLE, run.space), seed)[0] if bound > 1 else iter(())
        if _run_worlds(run, policy, props, ((spec, 0) for spec in presample), now=now):
            _run_worlds(run, policy, props, ((w.spec, w.weight) for w in verify_canon.worlds(bound, blind)), now=now)
    else:
        specs, _ = verify_worlds.worlds(bound, worlds if worlds is not None else DEFAULT_WORLDS, seed)
        _run_worlds(run, policy, props, ((spec, 1) for spec in specs), now=now)
    run.search_ms, run.search_cpu_ms = _ms(t0), _cpu_ms(c0)


def _run_worlds(run: VerifyRun, policy: CompiledPolicy, props: list[_Property],
                runs: Iterable[tuple[verify_worlds.Spec, int]], *, now: float) -> bool:
    """Run each world and judge every property not yet broken; False once all are broken. A weight of 0
    marks a presampled world: it may break a property but does not count towards a proof."""
    validated = any(p.name in _VALIDATED for p in props)
    for spec, weight in runs:
        observed = _observe(verify_worlds.build(spec), policy, now)
        if validated and any(p.first_failure is None and p.name in _VALIDATED for p in props):
            observed.violations()  # the independent checker runs once per world; counted as search time
        if weight:
            run.worlds += 1
            run.represents += weight
        else:
            run.presampled += 1
        for p in props:
            if p.first_failure is not None:
                continue
            t1, c1 = time.perf_counter(), time.process_time()
            found = p.check(observed)
            p.result.ms += _ms(t1)
            p.result.cpu_ms += _cpu_ms(c1)
            if found:
                p.first_failure, p.violations = spec, found
                p.found_where = (f"the {run.presampled} clusters sampled before the exhaustive search of bound "
                                 f"{run.bound}" if not weight else
                                 f"the first {run.worlds} canonical clusters of bound {run.bound} (exhaustive search)"
                                 if run.exhaustive else f"{run.worlds} of {run.space} clusters within bound "
                                 f"{run.bound} (sampled)")
        if all(p.first_failure is not None for p in props):
            return False
    return True


def _observe(snapshot: Any, policy: CompiledPolicy, now: float) -> verify_props.Observed:
    recorded = explain_record.run_recorded(snapshot, policy, now=now, watch=frozenset())
    return verify_props.Observed(snapshot, policy, recorded, now)


def _conclude(run: VerifyRun, p: _Property, policy: CompiledPolicy, *, now: float) -> None:
    r = p.result
    where = (f"all {run.worlds} canonical clusters, standing for all {run.space} clusters within bound "
             f"{run.bound} (exhaustive)" if run.exhaustive
             else f"{run.worlds} of {run.space} clusters within bound {run.bound} (sampled)")
    if p.first_failure is not None:
        t0, c0 = time.perf_counter(), time.process_time()
        r.status = "violated"
        r.method = f"search: a counterexample among {p.found_where}"
        r.counterexample = _counterexample(p, policy, now=now)
        r.ms += _ms(t0)
        r.cpu_ms += _cpu_ms(c0)
        return
    symbolic = r.symbolic
    if symbolic is not None and symbolic.status == "proved":
        r.status, r.method = "proved", f"{symbolic.detail}; no counterexample in {where}"
    elif symbolic is not None and symbolic.status == "refuted":
        r.status, r.method = "violated", (f"{symbolic.detail}; no cluster in {where} reproduced it (a larger "
                                          "--bound or --worlds may)")
    elif run.exhaustive:
        r.status, r.method = "proved", f"search: no counterexample in {where}"
    else:
        r.status, r.method = "held", f"search: no counterexample in {where}"
        if symbolic is not None:
            r.method += f"; {symbolic.detail}"


def _counterexample(p: _Property, policy: CompiledPolicy, *, now: float) -> Counterexample:
    assert p.first_failure is not None

    def fails(spec: verify_worlds.Spec) -> bool:
        return bool(p.check(_observe(verify_worlds.build(spec), policy, now)))
    spec = verify_worlds.shrink(p.first_failure, fails, max_steps=SHRINK_STEPS)
    snapshot = verify_worlds.build(spec)
    violations = p.check(_observe(snapshot, policy, now)) or p.violations
    comment = (f"Counterexample to '{p.name}' found by vpolicy verify.\n"
               + "".join(f"  {v}\n" for v in violations)
               + "Reproduce: vpolicy dry-run --cluster THIS_FILE (with the same --policy or --conf)")
    text = verify_yaml.to_yaml(snapshot, comment=comment)
    return Counterexample(violations, text, spec.size(), _reproduces(text, p, policy, now))


def _reproduces(text: str, p: _Property, policy: CompiledPolicy, now: float) -> bool:
    """Load the YAML back as dry-run would and check the property fails again."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counterexample.yaml"
        path.write_text(text, encoding="utf-8")
        snapshot = load_cluster([path])
    return bool(p.check(_observe(snapshot, policy, now)))


def write_counterexamples(run: VerifyRun, folder: str) -> list[str]:
    out = []
    Path(folder).mkdir(parents=True, exist_ok=True)
    for r in run.results:
        if r.counterexample is not None:
            path = Path(folder) / f"{r.name}.yaml"
            path.write_text(r.counterexample.yaml, encoding="utf-8")
            out.append(str(path))
    return out


# Rendering ------------------------------------------------------------------------------------------

def to_json(run: VerifyRun) -> dict[str, object]:
    return {
        "file": run.file, "bound": run.bound, "ok": run.ok,
        "search": {"worlds": run.worlds, "space": run.space, "exhaustive": run.exhaustive,
                   "represents": run.represents, "presampled": run.presampled, "blind": run.blind,
                   "ms": run.search_ms,
                   "cpu_ms": run.search_cpu_ms},
        "properties": [{
            "name": r.name, "origin": r.origin, "status": r.status, "method": r.method, "ms": r.ms,
            "cpu_ms": r.cpu_ms,
            "counterexample": None if r.counterexample is None else {
                "violations": r.counterexample.violations, "yaml": r.counterexample.yaml,
                "nodes": r.counterexample.size[0], "queues": r.counterexample.size[1],
                "jobs": r.counterexample.size[2], "reproduced": r.counterexample.reproduced},
        } for r in run.results],
    }


def format_text(run: VerifyRun) -> str:
    if run.exhaustive and run.represents == run.space:
        searched = f"all {run.space} clusters searched as {run.worlds} canonical ones ({run.blind})"
    elif run.exhaustive:
        searched = (f"stopped once every property was broken, after {run.presampled} sampled and {run.worlds} "
                    f"canonical clusters of {run.space}")
    else:
        searched = f"sampled {run.worlds} of {run.space} clusters searched"
    lines = [f"verify {run.file} (bound {run.bound}: at most {run.bound} nodes, queues and jobs; {searched} in "
             f"{run.search_ms / 1000:.1f} s, {run.search_cpu_ms / 1000:.1f} s CPU)"]
    width = max(len(r.name) for r in run.results) if run.results else 0
    for r in run.results:
        lines.append(f"  {r.status.upper():9} {r.name.ljust(width)}  {r.ms:9.1f} ms  {r.method}"
                     + (f"  [{r.origin}]" if r.origin != "built-in" else ""))
    for r in run.results:
        if r.counterexample is not None:
            ce = r.counterexample
            lines.append("")
            lines.append(f"counterexample to {r.name} ({ce.size[0]} nodes, {ce.size[1]} queues, {ce.size[2]} jobs; "
                         f"{'reproduced' if ce.reproduced else 'NOT reproduced'} from the YAML):")
            lines += [f"  {v}" for v in ce.violations]
            lines.append(f"  reproduce: {run.command}")
            lines.append("---")
            lines.append(ce.yaml.rstrip())
    return "\n".join(lines) + "\n"


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _cpu_ms(c0: float) -> float:
    return round((time.process_time() - c0) * 1000, 3)
