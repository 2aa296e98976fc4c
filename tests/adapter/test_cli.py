"""`vpolicy scheduler` is an extension command: found through entry points, loaded only when asked for."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster_adapter.cli import duration
from cluster_adapter.scheduler import PolicySource
from vpolicy.model import conf as conf_model
from tests.adapter.conftest import ROOT

GOOD = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
OTHER = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
BAD = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gangg\n'


def test_other_commands_do_not_load_the_adapter() -> None:
    code = ("import sys; from vpolicy import cli; p = cli._parser(['dry-run', '--cluster', 'x']); "
            "assert 'cluster_adapter' not in sys.modules, 'adapter imported'; "
            "p2 = cli._parser(['scheduler']); assert 'cluster_adapter.cli' in sys.modules")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("text, seconds", [
    pytest.param("1s", 1.0, id="seconds"), pytest.param("500ms", 0.5, id="milliseconds"),
    pytest.param("2m", 120.0, id="minutes"), pytest.param("1.5", 1.5, id="bare-number-is-seconds"),
])
def test_durations_read_like_volcano_flags(text: str, seconds: float) -> None:
    assert duration(text) == seconds


def test_a_changed_conf_is_reloaded_and_a_broken_one_keeps_the_last_good(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(GOOD)
    source = PolicySource(policy=None, conf=str(conf))
    assert source.get().actions == ("enqueue", "allocate")
    conf.write_text(BAD)
    os.utime(conf, (time.time() + 5, time.time() + 5))
    assert source.get().actions == ("enqueue", "allocate")  # kept
    conf.write_text(OTHER)
    os.utime(conf, (time.time() + 10, time.time() + 10))
    assert source.get().actions == ("enqueue", "allocate", "backfill")


def test_a_conf_plugin_left_out_is_logged_when_the_conf_loads(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator must see in the scheduler's log that a plugin of their conf is not applied. (No
    shipped plugin is partial today; one is declared so here.)"""
    monkeypatch.setitem(conf_model.PARTIAL_PLUGINS, "usage", "no metrics source is queried")
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: usage\n')
    with caplog.at_level("WARNING", logger="cluster_adapter.scheduler"):
        PolicySource(policy=None, conf=str(conf)).get()
    assert any("warning[conf.partial-plugin]: plugin 'usage'" in r.getMessage() for r in caplog.records)
