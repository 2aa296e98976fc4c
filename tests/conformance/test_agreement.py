"""vpolicy against Volcano's own scheduler (the Go oracle) on seeded clusters of every family.

Each family's sample must agree case by case (`conformance.run.judge`: the same binds, pipelined pods,
evictions and podgroup phases, up to what Volcano leaves to chance), apart from the open differences
counted in OPEN (docs/conformance.md lists each one with its cause). The count is a ceiling: a fix
that closes one should lower it, and a change that opens a new one fails here with the case named.
`slow`: 10,000 cases per family, reported the same way.
"""
from __future__ import annotations

from collections import Counter

import pytest

from conformance import generate
from conformance.engines import Oracle
from conformance.generate import FAMILIES, case
from conformance.run import judge

SEED = 20261203
SAMPLE = 40
# Cases of the CI sample (seed SEED, cases 0..SAMPLE-1) that still differ (or are undecided) for the open
# reasons docs/conformance.md lists; lower a number when a fix closes a case.
OPEN: dict[str, int] = {"allocate": 2, "enqueue": 2, "preempt": 2, "reclaim": 2, "capacity": 2, "backfill": 2,
                        "confs": 2, "tdm": 2, "task-topology": 2, "usage": 2,
                        "resourcequota": 2, "sla": 3, "rescheduling": 2, "cdp": 2, "nodegroup": 2, "pdb": 3,
                        "numaaware": 2, "volumes": 2, "imagelocality": 2,
                        "extender": 2}
# Measured 2026-12-03 17:30 UTC (differ + undecided): allocate 0, enqueue 0, preempt 0, reclaim 0, capacity 0,
# backfill 0, confs 2 (15:10 UTC: allocate 5, enqueue 0, preempt 0, reclaim 2, capacity 0, backfill 7,
# confs 4); 16:55 UTC: tdm 0 (34 agree, 6 ties), task-topology 0 (35, 5), usage 0 (36, 4),
# resourcequota 0 (39, 1), sla 1 (the v1.10 inqueue gap, docs/conformance.md),
# rescheduling 0 (40 agree), cdp 1 (preempt skipping a node whose victims are all protected,
# docs/conformance.md). Each family whose sample has Volcano-side ties gets up to 2 more, as such a case can
# land on `undecided` instead of `agree-tie` when Volcano's random draws miss vpolicy's outcome.
# 20:00 UTC: confs 0 of 40 (the oracle's tie run, allocate_main.go and the fixes of docs/conformance.md).
# 19:40 UTC: tdm 0 and cdp 0 (the evicted pod's slot, 8deeff3); nodegroup 0, pdb 0, numaaware 0, volumes 0,
# imagelocality 0 (new families: 2 for ties, pdb 3 as reclaim's ties land on undecided more often).


def _run(family: str, count: int, oracle: Oracle) -> tuple[Counter[str], list[str]]:
    tally: Counter[str] = Counter()
    failures = []
    for index in range(count):
        c = case(family, SEED, index)
        verdict = judge(c, oracle)
        tally[verdict.kind] += 1
        if verdict.kind in ("differ", "undecided", "error"):
            failures.append(f"{c.name}: {verdict.kind}: " + "; ".join(verdict.lines[:6]))
    return tally, failures


@pytest.mark.parametrize("family", FAMILIES)
def test_family_agrees_with_volcano(family: str, oracle: Oracle) -> None:
    tally, failures = _run(family, SAMPLE, oracle)
    assert tally["error"] == 0, "\n".join(failures)
    # `undecided` counts with `differ`: whether a case with Volcano-side ties lands in one or the other
    # depends on Volcano's random draws, so only their sum is stable from run to run
    open_now = tally["differ"] + tally["undecided"]
    assert open_now <= OPEN[family], (
        f"{family}: {open_now} of {SAMPLE} cases differ from Volcano (at most {OPEN[family]} known); "
        "reproduce with `python -m conformance.run --family " + family + f" --seed {SEED} --count {SAMPLE}`:\n"
        + "\n".join(failures))


def test_generated_cases_are_reproducible() -> None:
    for family in FAMILIES:
        assert case(family, 7, 3).cluster_json() == case(family, 7, 3).cluster_json()
        assert case(family, 7, 3).conf == case(family, 7, 3).conf


def test_role_label_case_is_drawn() -> None:
    """The allocate family draws roles as labels as well as annotations (the first divergence found)."""
    roles = Counter()
    for index in range(60):
        for obj in case("allocate", SEED, index).objects:
            if obj["kind"] == "Pod":
                meta = obj["metadata"]
                roles["label"] += generate.ROLE in meta.get("labels", {})
                roles["annotation"] += generate.ROLE in meta.get("annotations", {})
    assert roles["label"] and roles["annotation"]


# Open cases (differ + undecided) per case at scale: the most measured over 200-case runs, with room for
# sampling noise and for tie-heavy families (whose ties can land on `undecided`); the goal is 0 everywhere.
# Seed 6, every family, 20:00 UTC (`python -m conformance.run --family all --count 200 --seed 6 --no-shrink`):
# allocate 0, enqueue 0, preempt 2 (preempt-6-101, -20), reclaim 1, capacity 0, backfill 0, confs 2
# (confs-6-105: the anti-affinity reading, docs/conformance.md; -102 undecided), tdm 0, task-topology 0
# (40 ties), usage 0, resourcequota 0, sla 6 (the v1.10 inqueue gap), rescheduling 0, cdp 1 (cdp-6-152),
# nodegroup 0, pdb 1, numaaware 0 (64 ties), volumes 0, imagelocality 0 (79 ties), extender 0. Earlier
# maxima of seeds 1-3 (17:40 UTC): allocate 1%, reclaim 1.5%, capacity 0.5%, sla 2%; confs seeds 1-5 at
# 20:00 UTC: 0, 1, 0, 1, 0 of 200.
OPEN_RATE: dict[str, float] = {"allocate": 0.015, "enqueue": 0.005, "preempt": 0.02, "reclaim": 0.025,
                               "capacity": 0.01, "backfill": 0.01, "confs": 0.02, "tdm": 0.01, "task-topology": 0.01,
                               "usage": 0.01, "resourcequota": 0.005, "sla": 0.04, "rescheduling": 0.005,
                               "cdp": 0.015, "nodegroup": 0.01, "pdb": 0.02, "numaaware": 0.01, "volumes": 0.01,
                               "imagelocality": 0.01, "extender": 0.01}


def test_every_family_has_its_ceilings() -> None:
    """A family added without its ceilings would fail the CI sample and the slow run with a KeyError."""
    assert set(OPEN) == set(FAMILIES) and set(OPEN_RATE) == set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_agrees_at_scale(family: str, oracle: Oracle) -> None:
    count = 10_000
    tally, failures = _run(family, count, oracle)
    open_now = tally["differ"] + tally["undecided"]
    assert tally["error"] == 0 and open_now <= OPEN_RATE[family] * count, (
        f"{family}: {dict(tally)}\n" + "\n".join(failures[:50]))


def test_a_listed_divergence_names_its_go_line() -> None:
    from conformance import divergences

    for entry in divergences.describe():
        assert ".go:" in entry["go_line"] and "v1.10.0" in entry["go_line"], entry


def test_run_command_exit_codes(oracle_binary: object, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m conformance.run`: 0 when every case agrees, 1 on bad arguments (one line, no traceback)."""
    from conformance.run import main

    assert main(["--family", "capacity", "--count", "3", "--seed", str(SEED), "--no-shrink"]) == 0
    assert "capacity: 3 cases" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["--family", "nope"])
    assert exited.value.code == 1
    assert "invalid choice: 'nope'" in capsys.readouterr().err
