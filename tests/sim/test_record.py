"""Session records: snapshots survive the codec and the delta encoding; replay and scenario export."""
from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.sim.conftest import WriteWorkload, cluster, load, node
from vpolicy.harness import policy as policies
from vpolicy.harness import testing
from vpolicy.load.cluster import load_cluster
from vpolicy.model import snapshot as snap
from vpolicy.model.decisions import Decisions, Eviction, PodGroupStatus
from vpolicy.model.resources import Resources
from vpolicy.sim import codec, record, replay, simulate

ROOT = Path(__file__).resolve().parent.parent.parent
ONLY_ENQUEUE = 'actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n'


def pod(name: str, *, node_name: str = "", cpu: int = 1000) -> snap.Pod:
    status = snap.TaskStatus.RUNNING if node_name else snap.TaskStatus.PENDING
    return snap.Pod("ns", name, f"uid-{name}", Resources({"cpu": cpu, "pods": 1}), status, node_name=node_name,
                    phase=status.value, group="g")


def lines(directory: Path) -> list[dict[str, Any]]:
    with gzip.open(directory / record.SESSIONS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_example_cluster_survives_the_codec() -> None:
    original = load_cluster(ROOT / "examples" / "cluster.yaml")
    encoded = codec.encode_snapshot(original)
    assert codec.decode_snapshot(json.loads(json.dumps(encoded))) == original
    assert "origin" not in encoded["pods"][0]  # where an object was read is not part of it


def test_snapshots_are_written_as_deltas_and_read_back_whole(tmp_path: Path) -> None:
    base = cluster(node("n1"))
    first = replace(base, pods=(pod("a"), pod("b")))
    second = replace(base, pods=(pod("a", node_name="n1"), pod("c")))  # a changed, b gone, c new
    third = replace(base, pods=(pod("c"), pod("a", node_name="n1")))  # order changed: written in full
    decisions = Decisions(binds={"ns/a": "n1"}, evictions=[Eviction("ns/x", "preempt", "ns/g", "r.vpol:3")],
                          podgroups={"ns/g": PodGroupStatus("Running")})
    with record.SessionRecorder(tmp_path, policy="p.vpol") as rec:
        for s in (first, second, third):
            rec.write(s, decisions, now=100.0)

    written = lines(tmp_path)
    assert [sorted(w["snapshot"]["pods"]) for w in written] == [["full"], ["delete", "upsert"], ["full"]]
    assert "nodes" not in written[1]["snapshot"]  # unchanged: left out
    back = list(record.read_sessions(tmp_path))
    assert [r.snapshot for r in back] == [first, second, third]
    assert [r.session for r in back] == [0, 1, 2]
    assert back[0].decisions.binds == {"ns/a": "n1"}
    assert back[0].decisions.evictions == decisions.evictions
    assert back[0].decisions.podgroups["ns/g"].phase == "Running"
    assert record.read_meta(tmp_path)["policy"] == "p.vpol"


def test_a_recorder_reopened_on_a_recording_appends_to_it(tmp_path: Path) -> None:
    s = replace(cluster(node("n1")), pods=(pod("a"),))
    for now in (1.0, 2.0):
        with record.SessionRecorder(tmp_path) as rec:
            rec.write(s, Decisions(), now=now)
    assert [(r.session, r.now, r.snapshot) for r in record.read_sessions(tmp_path)] == [(0, 1.0, s), (1, 2.0, s)]


def test_a_simulation_records_every_session_it_ran(tmp_path: Path, write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: first, at: 0s, requests: {cpu: "1", nvidia.com/gpu: "2"}, duration: 100s}
        - {name: second, at: 10s, requests: {cpu: "1", nvidia.com/gpu: "1"}, duration: 50s}
    """)
    world = cluster(node("n1", cpu=8, gpus=2))
    workload, jobs = load(path)
    compiled = policies.resolve(world)
    seen: list[tuple[snap.ClusterSnapshot, Decisions]] = []
    decide = simulate.session_of(compiled)

    def watched(snapshot: snap.ClusterSnapshot, *, now: float) -> Decisions:
        seen.append((snapshot, decide(snapshot, now=now)))
        return seen[-1][1]

    with record.SessionRecorder(tmp_path / "rec", policy="default") as rec:
        simulate.simulate(world, jobs, watched, workload=workload, recorder=rec)
    back = list(record.read_sessions(tmp_path / "rec"))
    assert [r.snapshot for r in back] == [s for s, _ in seen]
    assert [r.decisions.binds for r in back] == [d.binds for _, d in seen]

    same = replay.replay(tmp_path / "rec", compiled)
    assert (same.sessions, same.differing) == (4, [])
    conf = tmp_path / "enqueue-only.conf"
    conf.write_text(ONLY_ENQUEUE, encoding="utf-8")
    other = replay.replay(tmp_path / "rec", policies.resolve(world, conf=str(conf)))
    assert [(d.session, d.lines) for d in other.differing] == [
        (0, ("- bind default/first-worker-0 -> n1",)), (2, ("- bind default/second-worker-0 -> n1",))]


def test_an_exported_session_is_a_scenario_that_passes(tmp_path: Path, write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: a, at: 0s, requests: {cpu: "3", nvidia.com/gpu: "3"}, duration: 100s}
        - {name: b, at: 0s, requests: {cpu: "3", nvidia.com/gpu: "3"}, duration: 100s}
        - {name: c, at: 5s, pods: 2, requests: {cpu: "1", nvidia.com/gpu: "1"}, duration: 10s}
    """)
    world = replace(cluster(node("n1", gpus=4), node("n2", gpus=4)),
                    priority_classes=(snap.PriorityClass("high", 1000),))
    workload, jobs = load(path)
    conf = ROOT / "examples" / "volcano-scheduler.conf"
    with record.SessionRecorder(tmp_path / "rec", policy=str(conf)) as rec:
        simulate.simulate(world, jobs, policies.resolve(world, conf=str(conf)), workload=workload, recorder=rec)
    target = replay.export_scenario(tmp_path / "rec", 1, out=tmp_path / "scenarios" / "s1.yaml")

    header = target.read_text(encoding="utf-8").split("\n---\n")[0]
    assert (tmp_path / "scenarios" / header.split("conf_file: ")[1].split("\n")[0]).resolve() == conf.resolve()
    run = testing.run_paths([target])
    assert [(r.outcome, r.name) for r in run.results] == [
        ("pass", "session 1 of rec, recorded at 2024-05-06 00:00:05 UTC")]
    exported = load_cluster([target])
    recorded = next(r for r in record.read_sessions(tmp_path / "rec") if r.session == 1).snapshot
    assert exported.pods == recorded.pods and exported.podgroups == recorded.podgroups
    assert exported.nodes == recorded.nodes and exported.queues == recorded.queues
