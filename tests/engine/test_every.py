"""`every S` on a victim_tasks rule: Volcano's process-wide throttles (tdm's lastEvictAt, rescheduling's
lastRescheduleTime) as sessions that hand their run times to the next one (`Decisions.rule_runs` ->
`run_session(last_runs=...)`), the way the live scheduler carries them; `from start` counts the first
period from the scheduler's start (`run_session(started=...)`)."""
from __future__ import annotations

from pathlib import Path

from vpolicy.engine.session import run_session
from vpolicy.harness import policy as policy_mod
from vpolicy.harness.scenario import load_scenario
from vpolicy.lang import check, parse
from vpolicy.load import conf as conf_loader

ROOT = Path(__file__).resolve().parents[2]
# a closed revocable zone rz1 with two running jobs' preemptable pods on it; tdm.evict.period 1m
SCENARIO = ROOT / "policies" / "tests" / "tdm" / "shuffle-within-the-evict-period-evicts-nothing.yaml"
NOON = 1714564800.0  # 2024-05-01T12:00:00Z


def _evicted(now: float, last_runs: dict[str, float]) -> tuple[list[str], dict[str, float]]:
    loaded = load_scenario(SCENARIO)
    result = run_session(loaded.cluster, loaded.policy, now=now, last_runs=last_runs)
    return sorted(e.pod for e in result.decisions.evictions), result.decisions.rule_runs


def test_a_scheduler_evicts_from_a_closed_zone_once_per_period() -> None:
    runs: dict[str, float] = {}
    first, ran = _evicted(NOON, runs)
    assert first == ["c2/p6", "c2/p7"]  # a fresh scheduler asks at once
    assert ran == {"tdm.closed_zone_victims": NOON}
    runs.update(ran)
    again, ran = _evicted(NOON + 59, runs)
    assert again == [] and ran == {}  # 59 s later: inside the minute, tdm is not asked (nor its clock moved)
    later, ran = _evicted(NOON + 60, runs)
    assert later == ["c2/p6", "c2/p7"] and ran == {"tdm.closed_zone_victims": NOON + 60}


def test_the_period_follows_the_conf() -> None:
    loaded = load_scenario(SCENARIO)
    text = loaded.header.policy.text.replace("tdm.evict.period: 1m", "tdm.evict.period: 10s")
    assert text != loaded.header.policy.text
    compiled = policy_mod.from_conf(conf_loader.parse_conf_text(text, file="tdm.conf"))
    result = run_session(loaded.cluster, compiled, now=NOON + 10, last_runs={"tdm.closed_zone_victims": NOON})
    assert sorted(e.pod for e in result.decisions.evictions) == ["c2/p6", "c2/p7"]
    result = run_session(loaded.cluster, compiled, now=NOON + 9, last_runs={"tdm.closed_zone_victims": NOON})
    assert result.decisions.evictions == []


def test_every_is_only_for_victim_tasks_rules() -> None:
    found = check.check_module(parse.parse_text("plugin p\nrule r: predicate(task, node) = true\n    every 60\n",
                                                "p.vpol"))
    assert [(d.code, d.span.line) for d in found] == [("check.misplaced-clause", 3)]
    assert "'every' is only for victim_tasks rules" in found[0].message


def test_every_cannot_read_the_rules_arguments() -> None:
    found = check.check_module(parse.parse_text("plugin p\nrule r: victim_tasks(tasks) = tasks\n    every len(tasks)\n",
                                                "p.vpol"))
    assert [(d.code, d.span.line) for d in found] == [("check.unknown-name", 3)]


RESCHEDULING = ROOT / "policies" / "tests" / "rescheduling" / "low-node-utilization-moves-pods-off-the-hot-node.yaml"


def test_rescheduling_first_runs_an_interval_after_the_scheduler_started() -> None:
    """rescheduling_util.go: lastRescheduleTime is the process start, interval 1m in this conf."""
    loaded = load_scenario(RESCHEDULING)

    def evicted(now: float, started: float | None, runs: dict[str, float]) -> list[str]:
        result = run_session(loaded.cluster, loaded.policy, now=now, started=started, last_runs=runs)
        return sorted(e.pod for e in result.decisions.evictions)
    assert evicted(NOON, None, {}) == []  # a fresh scheduler's first session
    assert evicted(NOON, NOON - 30, {}) == []  # half an interval after the start
    assert evicted(NOON, NOON - 61, {}) == ["ns1/j-a", "ns1/j-b"]
    assert evicted(NOON, NOON - 3600, {"rescheduling.low_node_utilization": NOON - 30}) == []


def test_from_start_is_written_back_by_fmt() -> None:
    from vpolicy.lang import fmt

    text = "plugin p\n\nrule r: victim_tasks(tasks) = tasks\n    every 60 from start\n"
    module = parse.parse_text(text, "p.vpol")
    assert module.decls[0].every_from_start  # type: ignore[union-attr]
    assert fmt.format_module(module) == text
