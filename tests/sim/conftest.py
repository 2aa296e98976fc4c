"""Builders for the simulation tests: tiny clusters as model objects, workload files in a temporary cwd.

Working in the temporary folder lets tests pin spans as rendered (`w.yaml:4:3`) rather than as absolute
paths.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Protocol

import pytest

from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources
from vpolicy.sim import workload as wl

GI = 1024**3
GPU = "nvidia.com/gpu"


def node(name: str, *, cpu: int = 8, gpus: int = 0, memory_gi: int = 64) -> snap.Node:
    values = {"cpu": cpu * 1000, "memory": memory_gi * GI, "pods": 110}
    if gpus:
        values[GPU] = gpus * 1000
    return snap.Node(name=name, allocatable=Resources(values), capacity=Resources(values))


def cluster(*nodes: snap.Node, queues: tuple[snap.Queue, ...] = ()) -> snap.ClusterSnapshot:
    return snap.ClusterSnapshot(nodes=nodes, queues=(*queues, snap.Queue(snap.ROOT_QUEUE, reclaimable=False),
                                                     snap.Queue(snap.DEFAULT_QUEUE)))


class WriteWorkload(Protocol):
    def __call__(self, jobs: str, *, name: str = "w.yaml", extra: str = "") -> str: ...


@pytest.fixture
def write_workload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WriteWorkload:
    """Write a workload file (header + the given `jobs:` items) into the temporary cwd; return its name."""
    monkeypatch.chdir(tmp_path)

    def write(jobs: str, *, name: str = "w.yaml", extra: str = "") -> str:
        text = "apiVersion: vpolicy/v1\nkind: Workload\nname: test\n" + textwrap.dedent(extra) + "jobs:\n"
        text += textwrap.dedent(jobs)
        (tmp_path / name).write_text(text, encoding="utf-8")
        return name

    return write


def load(path: str, *, seed: int = 1) -> tuple[wl.Workload, tuple[wl.JobSpec, ...]]:
    workload = wl.load_workload(path)
    return workload, wl.expand(workload, seed=seed)
