"""`load_cluster` pauses Python's cyclic garbage collector while it reads (its collections would walk every
object read, again and again) and leaves it as the caller had it, whether the load succeeds or fails."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from vpolicy.errors import PolicyError
from vpolicy.load import cluster

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


@pytest.fixture
def collector_state() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_the_caller_had_it(collector_state: None, enabled: bool, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    original = cluster._build

    def build(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cluster, "_build", build)
    if enabled:
        gc.enable()
    else:
        gc.disable()
    assert cluster.load_cluster(EXAMPLE).nodes
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 2x}}\n")
    with pytest.raises(PolicyError):
        cluster.load_cluster(bad)
    assert seen == [False, False]  # paused while the snapshot is built
    assert gc.isenabled() is enabled
