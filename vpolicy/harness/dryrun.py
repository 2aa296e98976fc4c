"""`vpolicy dry-run`: load a cluster dump and a policy, run one session, return its decisions.

Returns results and never prints (the CLI picks a reporter). Bad input surfaces as `PolicyError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from vpolicy.engine.session import SessionResult, run_session
from vpolicy.harness import policy as policies
from vpolicy.load.cluster import load_cluster
from vpolicy.model.snapshot import ClusterSnapshot


@dataclass(slots=True)
class DryRun:
    snapshot: ClusterSnapshot
    result: SessionResult

    def document(self) -> dict[str, object]:
        return self.result.decisions.to_document()


def dry_run(cluster: Sequence[str], *, policy: str | None = None, conf: str | None = None,
            now: float = 0.0) -> DryRun:
    snapshot = load_cluster(list(cluster))
    compiled = policies.resolve(snapshot, policy=policy, conf=conf)
    return DryRun(snapshot, run_session(snapshot, compiled, now=now))
