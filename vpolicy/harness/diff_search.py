"""`vpolicy diff --symbolic --bound N`: find a small cluster on which two policies decide differently.

`diff` compares two policies on one snapshot; this asks the question for *every* cluster up to a bound
(nodes, queues and jobs, small resource values — the worlds `verify` enumerates, `verify_worlds`).
Up to `--worlds` clusters it is exhaustive, so "no difference" is a proof for that bound; above, a
seeded sample biased towards contention, reported as such. A difference found is shrunk to a smallest
cluster that still shows it and printed as manifests the user can `dry-run` with either policy.

The search runs the exact engine on each world; it does not encode the two policies in the solver.
"""
from __future__ import annotations

from dataclasses import dataclass

from vpolicy.engine.session import CompiledPolicy, run_session
from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.harness import policy as policies
from vpolicy.harness import verify_worlds, verify_yaml
from vpolicy.harness.diff import PolicyDiff, PolicyRef, compare
from vpolicy.model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class SearchResult:
    bound: int
    searched: int
    exhaustive: bool
    cluster_yaml: str | None  # a smallest cluster on which the policies differ, or None
    diff: PolicyDiff | None

    def summary(self) -> str:
        scope = (f"all {self.searched} clusters" if self.exhaustive
                 else f"{self.searched} sampled clusters") + f" within bound {self.bound}"
        if self.diff is None:
            verdict = "proved equal" if self.exhaustive else "no difference found"
            return f"{verdict}: {scope}"
        return f"the policies differ on a cluster found among {scope}: {self.diff.summary()}"


def search(a: PolicyRef, b: PolicyRef, *, bound: int = 2, worlds: int = 2000, seed: int = 0) -> SearchResult:
    """Search the clusters within `bound` for one where `a` and `b` differ; PolicyError on bad input."""
    problems = _bad_arguments(bound, worlds)
    if problems:
        raise PolicyError(problems)
    left, right = _compiled(a), _compiled(b)
    specs, exhaustive = verify_worlds.worlds(bound, worlds, seed)
    searched = 0
    for spec in specs:
        searched += 1
        if _differs(left, right, verify_worlds.build(spec)):
            small = verify_worlds.shrink(spec, lambda s: _differs(left, right, verify_worlds.build(s)))
            snapshot = verify_worlds.build(small)
            found = _diff(a, b, left, right, snapshot)
            text = verify_yaml.to_yaml(snapshot, comment=f"{a} and {b} decide differently here")
            return SearchResult(bound, searched, exhaustive, text, found)
        if searched >= worlds:
            break
    return SearchResult(bound, searched, exhaustive, None, None)


def _bad_arguments(bound: int, worlds: int) -> list[Diagnostic]:
    """`--bound` and `--worlds` below 1, which would search nothing and still claim "proved equal"."""
    problems = []
    if bound < 1:
        problems.append(Diagnostic("diff.bad-bound", f"--bound must be at least 1, not {bound}",
                                   help="--bound N searches clusters of at most N nodes, queues and jobs"))
    if worlds < 1:
        problems.append(Diagnostic("diff.bad-worlds", f"--worlds must be at least 1, not {worlds}",
                                   help="--worlds K runs at most K clusters; leave it out for the default"))
    return problems


def _compiled(ref: PolicyRef) -> CompiledPolicy:
    return policies.resolve(None, policy=ref.path if ref.kind == "policy" else None,
                            conf=ref.path if ref.kind == "conf" else None)


def _diff(a: PolicyRef, b: PolicyRef, left: CompiledPolicy, right: CompiledPolicy,
          snapshot: ClusterSnapshot) -> PolicyDiff:
    groups = {p.key: f"{p.namespace}/{p.group}" for p in snapshot.pods if p.group}
    return compare(a, b, run_session(snapshot, left, solver_budget=0).decisions,
                   run_session(snapshot, right, solver_budget=0).decisions,
                   pods=[p.key for p in snapshot.pods], groups=groups)


def _differs(left: CompiledPolicy, right: CompiledPolicy, snapshot: ClusterSnapshot) -> bool:
    return not _diff(PolicyRef("policy", "A"), PolicyRef("policy", "B"), left, right, snapshot).same


def format_text(result: SearchResult) -> str:
    from vpolicy.harness.diff import format_text as format_diff

    lines = [result.summary()]
    if result.diff is not None and result.cluster_yaml is not None:
        lines += ["", format_diff(result.diff).rstrip(), "", "# the cluster:", result.cluster_yaml.rstrip()]
    return "\n".join(lines) + "\n"


