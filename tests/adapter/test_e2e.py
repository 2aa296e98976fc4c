"""End to end: `vpolicy scheduler --once` as a process against the emulator does what `vpolicy dry-run`
decides on a dump of the same objects — binds, evictions, nominated nodes, PodGroup and Queue status,
Events — and `vpolicy scheduler` stops cleanly on SIGTERM, giving its lease back."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from cluster_adapter import convert
from tests.adapter.conftest import EXAMPLE, ROOT, load, read_objects
from tests.adapter.kubeemu import EmulatorThread
from vpolicy import cli

SCENARIOS = ROOT / "policies" / "tests"
VPOLICY = [sys.executable, "-m", "vpolicy"]
# What `kubectl get nodes,pods,podgroups,queues,priorityclasses,namespaces,jobs.batch.volcano.sh -A` reads.
DUMPED = ("nodes", "pods", "namespaces", "priorityclasses", "queues", "podgroups", "jobs")


def scenario(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """A scenario file's cluster objects and its conf text (None: Volcano's default conf)."""
    yaml = YAML(typ="safe", pure=True)
    docs = [d for d in yaml.load_all(path.read_text(encoding="utf-8")) if d]
    header, objects = docs[0], docs[1:]
    encoded = json.loads(json.dumps(objects, default=lambda o: o.isoformat().replace("+00:00", "Z")))
    return list(encoded), header.get("conf")


def dump(emu: EmulatorThread, path: Path) -> Path:
    items = [o for plural in DUMPED for o in emu.call(lambda e, p=plural: e.list(p))]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1))
    return path


def dry_run(cluster: Path, conf: Path | None) -> dict[str, Any]:
    out = io.StringIO()
    args = ["dry-run", "--cluster", str(cluster), "--output", "json"] + (["--conf", str(conf)] if conf else [])
    with redirect_stdout(out):
        assert cli.main(args) == 0
    return dict(json.loads(out.getvalue()))


def run_scheduler(kubeconfig: Path, conf: Path | None, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    args = [*VPOLICY, "scheduler", "--kubeconfig", str(kubeconfig), *extra] + (["--conf", str(conf)] if conf else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def conditions(items: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{k: c.get(k, "") for k in ("type", "status", "reason", "message")} for c in items]


@pytest.mark.parametrize("source, process", [
    pytest.param(EXAMPLE, True, id="example-cluster-gang-vcjob-queues"),
    pytest.param(SCENARIOS / "preempt" / "evicts_lower_priority_job_in_same_queue.yaml", True,
                 id="preempt-evicts-pipelines"),
    # the same command line, run in this process to keep the suite fast
    pytest.param(SCENARIOS / "reclaim" / "starving_queue_reclaims_from_queue_over_deserved.yaml", False,
                 id="reclaim"),
    # one preemptor pipelined where its eviction made room (nominated), one in the room left (not)
    pytest.param(SCENARIOS / "preempt" / "second_preemptor_takes_room_without_a_victim.yaml", False,
                 id="pipelined-without-eviction-is-not-nominated"),
    pytest.param(SCENARIOS / "allocate" / "pipeline-onto-releasing-resources.yaml", False,
                 id="allocate-pipeline-is-not-nominated"),
    pytest.param(SCENARIOS / "deviceshare" / "binpack-prefers-the-fuller-card.yaml", False, id="vgpu-annotations"),
])
def test_scheduler_once_applies_what_dry_run_decides(source: Path, process: bool, emu: EmulatorThread,
                                                     kubeconfig: Path, tmp_path: Path) -> None:
    if source == EXAMPLE:
        objects, conf_text = read_objects(EXAMPLE), (ROOT / "examples" / "volcano-scheduler.conf").read_text()
    else:
        objects, conf_text = scenario(source)
    conf = None
    if conf_text:
        conf = tmp_path / "volcano-scheduler.conf"
        conf.write_text(conf_text)
    load(emu, objects)
    before = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in emu.call(lambda e: e.list("pods"))}
    doc = dry_run(dump(emu, tmp_path / "dump.json"), conf)

    if process:
        done = run_scheduler(kubeconfig, conf, "--once")
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        assert cli.main(["scheduler", "--kubeconfig", str(kubeconfig), "--once"]
                        + (["--conf", str(conf)] if conf else [])) == 0

    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in emu.call(lambda e: e.list("pods"))}
    newly_bound = {f"{ns}/{name}": p["spec"]["nodeName"] for (ns, name), p in pods.items()
                   if p["spec"].get("nodeName") and not before[(ns, name)]["spec"].get("nodeName")}
    in_api = {f"{ns}/{name}" for ns, name in before}
    assert newly_bound == {k: v for k, v in doc["binds"].items() if k in in_api}
    for key, assigned in doc["annotations"].items():
        if key in newly_bound:  # device assignments ride in the Binding, atomically with the node
            held = pods[tuple(key.split("/"))]["metadata"].get("annotations") or {}  # type: ignore[index]
            timeless = {k: v for k, v in assigned.items() if not k.endswith("-time")}  # dry-run's clock is 0
            assert {k: held.get(k) for k in timeless} == timeless, key
            assert all(held.get(k) for k in assigned), key
    gone = {f"{ns}/{name}" for ns, name in before if (ns, name) not in pods}
    assert gone == {e["pod"] for e in doc["evictions"]}
    nominated = {f"{ns}/{name}": p["status"]["nominatedNodeName"] for (ns, name), p in pods.items()
                 if (p.get("status") or {}).get("nominatedNodeName")}
    assert nominated == {k: v for k, v in doc["nominated"].items() if k in in_api}
    unscheduled = {f"{ns}/{name}": c for (ns, name), p in pods.items()
                   for c in (p.get("status") or {}).get("conditions") or []
                   if c.get("type") == "PodScheduled" and c.get("status") == "False"}
    assert set(unscheduled) == {k for k in doc["pod_conditions"] if k in in_api}
    for key, condition in unscheduled.items():
        assert condition["reason"] == doc["pod_conditions"][key]["reason"], key
        assert condition["message"] == doc["pod_conditions"][key]["message"], key
    for key, expected in doc["podgroups"].items():
        held = emu.call(lambda e, k=key: e.get("podgroups", *k.split("/")))
        if held is None:
            continue  # derived from a vcjob: only the snapshot has it
        assert held["status"]["phase"] == expected["phase"], key
        types = {c["type"] for c in expected["conditions"]}
        assert [c for c in conditions(held["status"].get("conditions", [])) if c["type"] in types] == \
            expected["conditions"], key
    for name, expected in doc["queues"].items():
        held = emu.call(lambda e, n=name: e.get("queues", "", n))
        if held is None:
            continue  # root/default: created by Volcano's controllers, not in this API
        status = held["status"]
        assert status.get("allocated", {}) == convert.resource_list(expected["allocated"]), name
        for counter in ("pending", "inqueue", "running", "unknown", "completed"):
            assert status.get(counter, 0) == expected[counter], (name, counter)
    events = emu.call(lambda e: e.list("events"))
    by_reason: dict[str, set[str]] = {}
    for event in events:
        obj = event["involvedObject"]
        by_reason.setdefault(event["reason"], set()).add(f"{obj['namespace']}/{obj['name']}")
    assert by_reason.get("Scheduled", set()) == set(newly_bound)
    assert by_reason.get("Evict", set()) == gone
    ours_pending = {k for k in doc["unschedulable"] if k in in_api and
                    before[tuple(k.split("/"))]["spec"].get("schedulerName") == "volcano"}
    assert by_reason.get("FailedScheduling", set()) == ours_pending


def test_sigterm_stops_the_loop_and_releases_the_lease(emu: EmulatorThread, kubeconfig: Path) -> None:
    load(emu, read_objects(EXAMPLE))
    process = subprocess.Popen(
        [*VPOLICY, "scheduler", "--kubeconfig", str(kubeconfig), "--period", "200ms", "--leader-elect",
         "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "200ms"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())
    try:
        deadline = time.monotonic() + 30
        lease = None
        while time.monotonic() < deadline and process.poll() is None:
            lease = emu.call(lambda e: e.get("leases", "volcano-system", "volcano"))
            if lease and lease["spec"].get("holderIdentity") and emu.call(lambda e: e.count("bind")) > 0:
                break
            time.sleep(0.05)
        assert lease is not None and lease["spec"]["holderIdentity"], process.stderr.read() if process.poll() else ""
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        process.stderr.close()
    released = emu.call(lambda e: e.get("leases", "volcano-system", "volcano"))
    assert released["spec"].get("holderIdentity") in (None, "")


def test_a_bad_conf_exits_1_with_a_diagnostic(kubeconfig: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gangg\n')
    assert cli.main(["scheduler", "--kubeconfig", str(kubeconfig), "--once", "--conf", str(conf)]) == 1
    err = capsys.readouterr().err
    assert "bad.conf:4:11: error[conf.unknown-plugin]" in err and "Traceback" not in err
