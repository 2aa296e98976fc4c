"""Fixtures for the scenario harness tests: scenario files written into a temporary cwd.

Working in the temporary folder lets tests pin spans as rendered (`case.yaml:4:1`) rather than as
absolute paths.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Protocol

import pytest

# A cluster small enough for any scenario: one node, one podgroup with one 1-cpu pod.
CLUSTER = """\
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 1}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata: {name: pg-w-0, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


class WriteScenario(Protocol):
    def __call__(self, header: str, name: str = "case.yaml", cluster: str = CLUSTER) -> str: ...


@pytest.fixture
def write_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WriteScenario:
    """Write a dedented header plus a cluster under a relative name and return that name."""
    monkeypatch.chdir(tmp_path)

    def write(header: str, name: str = "case.yaml", cluster: str = CLUSTER) -> str:
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(header) + cluster, encoding="utf-8")
        return name

    return write
