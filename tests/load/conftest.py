"""Fixtures for the cluster loader tests: dumps written into a temporary folder that is also the cwd.

Working in the temporary folder lets tests pin spans as they are rendered (`cluster.yaml:8:23`)
instead of as absolute paths.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Protocol

import pytest

from vpolicy.errors import Diagnostic, PolicyError
from vpolicy.load import cluster
from vpolicy.model import snapshot


class WriteDump(Protocol):
    def __call__(self, text: str, name: str = "cluster.yaml") -> str: ...


@pytest.fixture
def write_dump(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WriteDump:
    """Write a dedented dump under a relative name (folders are created) and return that name."""
    monkeypatch.chdir(tmp_path)

    def write(text: str, name: str = "cluster.yaml") -> str:
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return name

    return write


def load(*paths: str) -> snapshot.ClusterSnapshot:
    return cluster.load_cluster(paths)


def diagnostics_of(*paths: str) -> list[Diagnostic]:
    with pytest.raises(PolicyError) as caught:
        cluster.load_cluster(paths)
    return caught.value.diagnostics
