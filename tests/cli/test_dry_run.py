"""`vpolicy dry-run` as a user runs it: the decision document on the example, and one located
diagnostic line (exit 1, no traceback) for each kind of bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vpolicy.cli import main
from vpolicy.model import conf as conf_model

ROOT = Path(__file__).resolve().parents[2]
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
"""
GOOD_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
"""

OPTIMIZE = """\
configurations:
- name: allocate
  arguments: {mode: optimize, optimizeBudget: 1s}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_prints_exactly_the_decision_document_keys() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vpolicy", "dry-run", "--cluster", str(ROOT / "examples/cluster.yaml"),
         "--conf", str(ROOT / "examples/volcano-scheduler.conf"), "--output", "json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"binds", "pipelined", "evictions", "podgroups", "unschedulable", "stats"} <= set(doc)
    assert doc["binds"], "the example has pending work that fits"
    assert all(isinstance(node, str) for node in doc["binds"].values())


def test_table_and_yaml_outputs_show_the_same_binds(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("dry-run", "--cluster", str(ROOT / "examples/cluster.yaml"), "--conf",
            str(ROOT / "examples/volcano-scheduler.conf"))
    _, as_json, _ = run(capsys, *args, "--output", "json")
    _, as_table, _ = run(capsys, *args)
    binds = json.loads(as_json)["binds"]
    for pod, node in binds.items():
        assert pod in as_table and node in as_table


def test_optimize_mode_says_which_run_of_each_evicting_action_it_kept(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    conf = (ROOT / "examples/volcano-scheduler.conf").read_text()
    conf = conf.replace("backfill", "preempt, backfill", 1) + OPTIMIZE.replace("1s", "unlimited")
    (tmp_path / "conf.yaml").write_text(conf)
    code, out, _ = run(capsys, "dry-run", "--cluster", str(ROOT / "examples/cluster.yaml"), "--conf",
                       str(tmp_path / "conf.yaml"))
    assert code == 0
    assert "optimize: preempt kept volcano's run: the optimize run did no better than Volcano's" in out


@pytest.mark.parametrize("cluster, conf, expected", [
    pytest.param(NODE + "---\nkind: Pod\nmetadata: {name: [oops\n", None, "cluster.yaml:8:1: error[load.yaml-syntax]", id="malformed-yaml"),
    pytest.param(NODE.replace('cpu: "2"', "cpu: 2x"), None, "cluster.yaml:4:29: error[load.bad-quantity]",
                 id="bad-quantity"),
    pytest.param(NODE, GOOD_CONF.replace("gang", "gnag"), "conf.yaml:5:11: error[conf.unknown-plugin]",
                 id="unknown-plugin"),
    pytest.param(NODE, GOOD_CONF.replace("enqueue,", "enqeue,"), "conf.yaml:1:11: error[conf.unknown-action]",
                 id="unknown-action"),
    pytest.param(NODE, GOOD_CONF + "    enablePreemtable: false\n", "conf.yaml:6:5: error[conf.unknown-flag]",
                 id="unknown-flag"),
    pytest.param(NODE, GOOD_CONF + OPTIMIZE.replace("1s", "soon"), "conf.yaml:8:47: error[conf.wrong-type]",
                 id="bad-optimize-budget"),
])
def test_bad_input_is_one_located_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  cluster: str, conf: str | None, expected: str) -> None:
    (tmp_path / "cluster.yaml").write_text(cluster)
    args = ["dry-run", "--cluster", str(tmp_path / "cluster.yaml")]
    if conf is not None:
        (tmp_path / "conf.yaml").write_text(conf)
        args += ["--conf", str(tmp_path / "conf.yaml")]
    code, out, err = run(capsys, *args)
    assert code == 1
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("policy_text, expected", [
    pytest.param('policy p\nactions enqueue allocate\n', "p.vpol:2:17: error[parse.", id="dsl-syntax"),
    pytest.param('policy p\ntier {\n    use "volcano/nope.vpol"\n}\n', "p.vpol:3:5: error[policy.missing-module]",
                 id="missing-module"),
])
def test_bad_policy_files_are_one_located_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          policy_text: str, expected: str) -> None:
    (tmp_path / "cluster.yaml").write_text(NODE)
    (tmp_path / "p.vpol").write_text(policy_text)
    code, _, err = run(capsys, "dry-run", "--cluster", str(tmp_path / "cluster.yaml"), "--policy",
                       str(tmp_path / "p.vpol"))
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and expected in err, err


def test_a_type_error_in_a_rule_module_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cluster.yaml").write_text(NODE)
    (tmp_path / "m.vpol").write_text('plugin m\nrule r: job_ready(job) = job.min_available + "x"\n')
    (tmp_path / "p.vpol").write_text('policy p\ntier {\n    use "m.vpol"\n}\n')
    code, _, err = run(capsys, "dry-run", "--cluster", str(tmp_path / "cluster.yaml"), "--policy",
                       str(tmp_path / "p.vpol"))
    assert code == 1
    assert "m.vpol:2:" in err and "error[check." in err, err
    assert "Traceback" not in err


def test_a_conf_plugin_vpolicy_leaves_out_is_reported_with_the_decisions(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A platform engineer dry-running their own conf must learn that a plugin was dropped: the
    decisions they see are not Volcano's where it would have acted. (No shipped plugin is partial
    today; one is declared so here.)"""
    monkeypatch.setitem(conf_model.PARTIAL_PLUGINS, "usage", "no metrics source is queried")
    cluster, conf = tmp_path / "cluster.yaml", tmp_path / "volcano-scheduler.conf"
    cluster.write_text(NODE)
    conf.write_text(GOOD_CONF + "  - name: usage\n")
    code, out, err = run(capsys, "dry-run", "--cluster", str(cluster), "--conf", str(conf), "--output", "json")
    assert code == 0
    assert json.loads(out)["binds"] == {}
    assert f"{conf}:6:11: warning[conf.partial-plugin]: plugin 'usage' is only partly implemented" in err
