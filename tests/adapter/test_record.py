"""`vpolicy scheduler --record DIR`: the live sessions are stored so `vpolicy replay` can re-run them."""
from __future__ import annotations

from pathlib import Path

from tests.adapter.kubeemu import EmulatorThread
from tests.adapter.conftest import load
from tests.adapter.test_e2e import SCENARIOS, scenario
from vpolicy import cli


def test_a_recorded_live_session_replays_with_the_same_decisions(emu: EmulatorThread, kubeconfig: Path,
                                                                   tmp_path: Path) -> None:
    objects, conf_text = scenario(SCENARIOS / "reclaim" / "starving_queue_reclaims_from_queue_over_deserved.yaml")
    assert conf_text
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(conf_text)
    load(emu, objects)
    record = tmp_path / "record"
    assert cli.main(["scheduler", "--kubeconfig", str(kubeconfig), "--once", "--conf", str(conf),
                     "--record", str(record)]) == 0
    assert (record / "sessions.jsonl.gz").stat().st_size > 0
    assert cli.main(["replay", str(record), "--conf", str(conf)]) == 0  # 0: every decision the same
