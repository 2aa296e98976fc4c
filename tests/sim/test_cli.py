"""`vpolicy simulate` and `vpolicy replay` end to end: files written, exit codes, determinism."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from vpolicy.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
CONF = str(ROOT / "examples" / "volcano-scheduler.conf")
POLICY = str(ROOT / "policies" / "default.vpol")
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"""
WORKLOAD = """\
apiVersion: vpolicy/v1
kind: Workload
name: two hours of small jobs
duration: 2h
jobs:
- {name: "train-{i}", count: 6, every: 20m, jitter: 5m, pods: 2, requests: {cpu: "2", nvidia.com/gpu: "1"},
   duration: {min: 20m, max: 50m}, priority: low}
- {name: "urgent-{i}", count: 3, at: 30m, every: 30m, requests: {cpu: "1", nvidia.com/gpu: "2"}, duration: 15m,
   priority: high}
- {name: "etl-{i}", count: 8, every: 15m, requests: {cpu: "3"}, duration: {min: 5m, max: 25m}}
"""


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    (tmp_path / "w.yaml").write_text(WORKLOAD, encoding="utf-8")
    return tmp_path


def simulate(out: str, *extra: str, policies: tuple[str, ...] = ("--conf", CONF, "--policy", POLICY)) -> int:
    return main(["simulate", "--cluster", "cluster.yaml", "--workload", "w.yaml", *policies, "--out", out,
                 "--parallel", "1", *extra])


def test_simulate_writes_the_report_and_prints_a_summary(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate("report", "--record", "rec") == 0
    out = capsys.readouterr().out
    assert "Simulation summary" in out and "volcano-scheduler" in out and "default" in out
    metrics = json.loads((files / "report" / "metrics.json").read_text(encoding="utf-8"))
    assert list(metrics["policies"]) == ["volcano-scheduler", "default"]
    assert metrics["inputs"]["end_s"] == 7200.0
    for label in metrics["policies"]:
        with (files / "report" / label / "timeline.csv").open(encoding="utf-8") as f:
            assert next(csv.reader(f))[:4] == ["time_s", "cpu_allocated_cores", "memory_allocated_gib",
                                               "gpu_allocated"]
        assert (files / "report" / label / "jobs.csv").is_file()
        assert (files / "rec" / label / "sessions.jsonl.gz").is_file()
    page = (files / "report" / "index.html").read_text(encoding="utf-8")
    for image in ("gpu_allocation.png", "cpu_allocation.png", "gpu_fragmentation.png", "pending_jobs.png",
                  "fairness.png", "queue_wait.png"):
        assert (files / "report" / image).stat().st_size > 10_000
        assert f"src='{image}'" in page


def test_the_same_seed_gives_the_same_run(files: Path) -> None:
    for folder, seed in (("one", "5"), ("two", "5"), ("three", "6")):
        assert simulate(folder, "--seed", seed, policies=("--conf", CONF)) == 0

    def numbers(folder: str) -> dict[str, object]:
        doc: dict[str, Any] = json.loads((files / folder / "metrics.json").read_text(encoding="utf-8"))
        for policy in doc["policies"].values():
            del policy["wall_s"], policy["mean_session_ms"]
        policies: dict[str, object] = doc["policies"]
        return policies

    assert numbers("one") == numbers("two") != numbers("three")
    jobs = "volcano-scheduler/jobs.csv"
    assert (files / "one" / jobs).read_text() == (files / "two" / jobs).read_text()


def test_bad_workloads_are_reported_with_their_place_and_exit_1(files: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (files / "w.yaml").write_text(WORKLOAD.replace("every: 20m", "evry: 20m"), encoding="utf-8")
    assert simulate("report") == 1
    assert capsys.readouterr().err.splitlines() == [
        "w.yaml:6:23: error[workload.missing-key]: jobs[0]: count 6 needs every (the time between arrivals) "
        "(add e.g. every: 1h)",
        "w.yaml:6:33: error[workload.unknown-key]: unknown key 'jobs[0].evry' (did you mean 'every'?)",
    ]
    assert not (files / "report").exists()


def test_replay_reports_differences_and_exits_2(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", "cluster.yaml", "--workload", "w.yaml", "--conf", CONF, "--out", "r",
                 "--record", "rec", "--until", "40m"]) == 0
    capsys.readouterr()
    assert main(["replay", "rec", "--conf", CONF]) == 0
    assert "no decision differs" in capsys.readouterr().out
    (files / "none.conf").write_text('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n', encoding="utf-8")
    assert main(["replay", "rec/volcano-scheduler", "--conf", "none.conf", "--output", "json"]) == 2
    report = json.loads(capsys.readouterr().out)["recordings"][0]
    assert report["differing"][0]["session"] == 0
    assert report["differing"][0]["changes"][0].startswith("- bind default/")


def test_replay_exports_a_session_as_a_scenario(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", "cluster.yaml", "--workload", "w.yaml", "--conf", CONF, "--out", "r",
                 "--record", "rec", "--until", "20m"]) == 0
    assert main(["replay", "rec/volcano-scheduler", "--export-scenario", "0", "-o", "s0.yaml"]) == 0
    assert main(["test", "s0.yaml"]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out
    assert main(["replay", "rec/volcano-scheduler", "--export-scenario", "999"]) == 1


def test_generate_workload_writes_a_workload_file(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", "cluster.yaml", "--generate-workload", "g.yaml", "--generate-jobs", "12",
                 "--generate-hours", "3"]) == 0
    assert "wrote g.yaml (12 jobs)" in capsys.readouterr().out
    assert (files / "g.yaml").read_text(encoding="utf-8").startswith("apiVersion: vpolicy/v1\nkind: Workload\n")
