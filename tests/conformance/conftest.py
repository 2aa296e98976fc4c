"""The Go conformance oracle, built once per session (cached under ~/.cache/vpolicy/oracle by source hash).

Without Go the fixture fails the tests that need it, loudly: the oracle is how this project knows it
makes Volcano's decisions, so a CI run without it must not look green.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import build
from conformance.engines import Oracle


@pytest.fixture(scope="session")
def oracle_binary() -> Path:
    try:
        return build.oracle_path(log=True)
    except build.OracleBuildError as exc:
        pytest.fail(f"the Volcano conformance oracle cannot be built: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def oracle(oracle_binary: Path) -> Iterator[Oracle]:
    with Oracle(oracle_binary) as running:
        yield running
