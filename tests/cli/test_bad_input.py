"""The error contract at the command line (docs/diagnostics.md): a policy file that cannot be read, and a
search flag out of range, are one located line each and exit 1, never a traceback; a reader that closes
the output pipe early ends the command quietly."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vpolicy.cli import EXIT_PIPE_CLOSED, main

ROOT = Path(__file__).resolve().parents[2]
NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
"""
LATIN1_POLICY = b'plugin p\nlet a = "caf\xe9"\n'
NOT_UTF8 = ("latin1.vpol:2:13: error[input.unreadable]: cannot read latin1.vpol: not UTF-8 text (byte 0xe9: invalid "
            "continuation byte) (policy files are UTF-8 text; convert it, e.g. with iconv -f latin1 -t utf-8)")
SCENARIO = """\
apiVersion: vpolicy/v1
kind: Scenario
name: a policy that cannot be read
policy: latin1.vpol
expect:
  binds: {}
---
"""


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cluster, a policy in Latin-1, a policy that uses it, a folder and a scenario, in the cwd."""
    monkeypatch.chdir(tmp_path)
    Path("cluster.yaml").write_text(NODE, encoding="utf-8")
    Path("latin1.vpol").write_bytes(LATIN1_POLICY)
    Path("uses.vpol").write_text('policy p\ntier { use "latin1.vpol" }\n', encoding="utf-8")
    Path("folder").mkdir()
    Path("scenario.yaml").write_text(SCENARIO + NODE, encoding="utf-8")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, expected", [
    pytest.param(("dry-run", "--cluster", "cluster.yaml", "--policy", "latin1.vpol"), NOT_UTF8, id="dry-run"),
    pytest.param(("dry-run", "--cluster", "cluster.yaml", "--policy", "folder"),
                 "folder:1:1: error[input.unreadable]: cannot read folder: Is a directory (give the path of a .vpol "
                 "file)", id="dry-run-folder"),
    pytest.param(("dry-run", "--cluster", "cluster.yaml", "--policy", "uses.vpol"),
                 NOT_UTF8.replace("latin1.vpol", "{tmp}/latin1.vpol"),
                 id="dry-run-used-module"),
    pytest.param(("explain", "--cluster", "cluster.yaml", "--policy", "latin1.vpol", "ns/p"), NOT_UTF8,
                 id="explain"),
    pytest.param(("verify", "latin1.vpol"), NOT_UTF8, id="verify"),
    pytest.param(("verify", "missing.vpol"),
                 "missing.vpol:1:1: error[input.unreadable]: cannot read missing.vpol: No such file or directory "
                 "(give the path of a .vpol file)", id="verify-missing"),
    pytest.param(("diff", "--cluster", "cluster.yaml", "--policy", "latin1.vpol", "--conf",
                  str(ROOT / "examples/volcano-scheduler.conf")), NOT_UTF8, id="diff"),
    pytest.param(("diff", "--symbolic", "--policy", "latin1.vpol", "--conf",
                  str(ROOT / "examples/volcano-scheduler.conf")), NOT_UTF8, id="diff-symbolic"),
    pytest.param(("test", "scenario.yaml"), NOT_UTF8, id="scenario-policy"),
])
def test_a_policy_that_cannot_be_read_is_one_located_line_and_exit_1(
        inputs: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], expected: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert err.splitlines() == [expected.replace("{tmp}", str(inputs))]


def test_fmt_points_at_the_first_byte_that_is_not_utf8(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "fmt", "--check", "latin1.vpol")
    assert code == 1
    assert err.splitlines()[0] == ("latin1.vpol:2:13: error[fmt.unreadable]: cannot read latin1.vpol: not UTF-8 "
                                   "text (byte 0xe9: invalid continuation byte)")


@pytest.mark.parametrize("argv, expected", [
    pytest.param(("verify", "--worlds", "0"), ["error[verify.bad-worlds]: --worlds must be at least 1, not 0 "
                                               "(--worlds K runs at most K clusters; leave it out for the default)"],
                 id="verify-no-worlds"),
    pytest.param(("verify", "--worlds", "-1", "--bound", "0"),
                 ["error[verify.bad-bound]: --bound must be at least 1, not 0",
                  "error[verify.bad-worlds]: --worlds must be at least 1, not -1 (--worlds K runs at most K clusters; "
                  "leave it out for the default)"], id="verify-negative-worlds-and-no-bound"),
    pytest.param(("diff", "--symbolic", "--bound", "0", "--policy", "policies/default.vpol", "--conf",
                  "examples/volcano-scheduler.conf"),
                 ["error[diff.bad-bound]: --bound must be at least 1, not 0 (--bound N searches clusters of at most "
                  "N nodes, queues and jobs)"], id="diff-no-bound"),
    pytest.param(("diff", "--symbolic", "--worlds", "-1", "--policy", "policies/default.vpol", "--conf",
                  "examples/volcano-scheduler.conf"),
                 ["error[diff.bad-worlds]: --worlds must be at least 1, not -1 (--worlds K runs at most K clusters; "
                  "leave it out for the default)"], id="diff-negative-worlds"),
])
def test_a_search_with_nothing_to_search_is_an_error_not_a_result(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...],
        expected: list[str]) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(capsys, *argv)
    assert (code, out, err.splitlines()) == (1, "", expected)


@pytest.mark.parametrize("argv", [
    pytest.param(("dry-run", "--cluster", "examples/cluster.yaml", "--output", "json"), id="dry-run-json"),
    pytest.param(("dry-run", "--cluster", "examples/cluster.yaml"), id="dry-run-tables"),
    pytest.param(("check", "--output", "json", "examples/cluster.yaml"), id="check-json"),
])
def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(argv: tuple[str, ...]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "vpolicy", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head -0` would: every write of the command meets a closed pipe
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert (proc.wait(timeout=120), err) == (EXIT_PIPE_CLOSED, "")
