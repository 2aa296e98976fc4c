"""The workload format: what it means, how it expands per seed, and every mistake pinned with its place."""
from __future__ import annotations

import re
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from tests.sim.conftest import WriteWorkload, cluster, node
from vpolicy.errors import PolicyError
from vpolicy.load.cluster import load_cluster
from vpolicy.model import snapshot as snap
from vpolicy.model.resources import Resources
from vpolicy.sim import generate, trace
from vpolicy.sim import workload as wl

ROOT = Path(__file__).resolve().parent.parent.parent


def errors(path: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        wl.load_workload(path)
    return [d.one_line() for d in caught.value.diagnostics]


@pytest.mark.parametrize("text, seconds", [
    pytest.param("90", 90.0, id="bare-number-is-seconds"),
    pytest.param("90s", 90.0, id="seconds"),
    pytest.param("1h30m", 5400.0, id="hours-and-minutes"),
    pytest.param("1.5h", 5400.0, id="fractional-hours"),
    pytest.param("1d2h", 93600.0, id="days"),
])
def test_durations(text: str, seconds: float) -> None:
    assert wl.parse_duration(text) == seconds
    assert wl.parse_duration(wl.format_duration(seconds)) == seconds


def test_a_template_expands_into_count_jobs_every_apart(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - name: train-{i}
          namespace: research
          queue: nlp
          at: 1h
          every: 30m
          count: 3
          pods: 4
          min_available: 2
          requests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: "2"}
          priority: high
          duration: 2h
        - {name: solo, requests: {cpu: "1"}, duration: 10m, priority: 5000}
    """)
    jobs = wl.expand(wl.load_workload(path), seed=1)
    assert [(j.key, j.arrival) for j in jobs] == [("default/solo", 0.0), ("research/train-0", 3600.0),
                                                  ("research/train-1", 5400.0), ("research/train-2", 7200.0)]
    train = jobs[1]
    assert (train.queue, train.pods, train.min_available, train.duration, train.priority) == ("nlp", 4, 2, 7200.0,
                                                                                              "high")
    assert train.requests == Resources({"cpu": 500, "memory": 2**30, "nvidia.com/gpu": 2000, "pods": 1})
    assert jobs[0].priority == 5000


def test_jitter_and_duration_ranges_are_drawn_from_the_seed(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: j, count: 20, every: 1h, jitter: 10m, requests: {cpu: "1"}, duration: {min: 1h, max: 2h}}
    """)
    workload = wl.load_workload(path)
    once, again, other = (wl.expand(workload, seed=s) for s in (7, 7, 8))
    assert once == again
    assert once != other
    for i, job in enumerate(once):
        assert i * 3600 <= job.arrival < i * 3600 + 600
        assert 3600 <= job.duration <= 7200


def test_every_mistake_is_reported_at_once_at_its_place(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - name: a
          requests: {cpu: "1"}
          duraton: 1h
        - name: b
          requests: {cpu: 1x}
          duration: 2 hours
          pods: 2
          min_available: 3
        - name: c-{i}
          count: 3
          requests: {cpu: "1"}
          duration: 1h
          on_evict: restrat
        - name: Bad_Name
          requests: {cpu: "1"}
          duration: {min: 2h, max: 1h}
          pods: "2"
    """, extra="events:\n- {at: 1h, queue: default, state: closed}\n")
    assert errors(path) == [
        "w.yaml:5:35: error[workload.bad-value]: events[0].state: 'closed' is not one of Open, Closed "
        "(did you mean 'Closed'?)",
        "w.yaml:7:3: error[workload.missing-key]: jobs[0].duration is missing "
        "(add duration: 2h, or duration: {min: 1h, max: 3h})",
        "w.yaml:9:3: error[workload.unknown-key]: unknown key 'jobs[0].duraton' (did you mean 'duration'?)",
        "w.yaml:11:19: error[workload.bad-quantity]: jobs[1].requests.cpu: '1x' is not a quantity: unknown suffix "
        "'x' (quantities look like 500m, 2, 1.5Gi, 1e3)",
        "w.yaml:12:13: error[workload.bad-duration]: jobs[1].duration: '2 hours' is not a duration "
        "(write a duration such as 90s, 45m, 2h, 1h30m or 1d (a bare number is seconds))",
        "w.yaml:14:18: error[workload.bad-value]: jobs[1].min_available: 3 is more than pods (2) "
        "(write a number from 1 to 2)",
        "w.yaml:16:3: error[workload.missing-key]: jobs[2]: count 3 needs every (the time between arrivals) "
        "(add e.g. every: 1h)",
        "w.yaml:19:13: error[workload.bad-value]: jobs[2].on_evict: 'restrat' is not one of restart, fail "
        "(did you mean 'restart'?)",
        "w.yaml:20:9: error[workload.bad-value]: jobs[3].name: 'Bad_Name' is not a Kubernetes name (use lowercase "
        "letters, digits and '-', starting and ending with a letter or digit; {i} stands for the job's index)",
        "w.yaml:22:28: error[workload.bad-value]: jobs[3].duration: max is less than min (write max >= min)",
        "w.yaml:23:9: error[workload.wrong-type]: jobs[3].pods must be a whole number, got '2' "
        "(remove the quotes around the value)",
    ]


@pytest.mark.parametrize("text, expected", [
    pytest.param("apiVersion: vpolicy/v1\nkind: Workload\nname: x\njobs: {a: 1}\n",
                 "w.yaml:4:7: error[workload.wrong-type]: jobs must be a list, got a mapping (write a list here)",
                 id="jobs-not-a-list"),
    pytest.param("apiVersion: vpolicy/v1\nkind: Workload\nname: x\njobs:\n- {name: a, requests: {cpu: '1'}\n",
                 "w.yaml:6:1: error[workload.yaml-syntax]: invalid YAML: expected ',' or '}', but got "
                 "'<stream end>' (while parsing a flow mapping at line 5, column 3) (a flow list or mapping is not "
                 "closed, or two of its items lack a comma between them)",
                 id="yaml-syntax"),
    pytest.param("apiVersion: vpolicy/v2\nkind: Workload\nname: x\n",
                 "w.yaml:1:13: error[workload.bad-value]: apiVersion must be vpolicy/v1, got 'vpolicy/v2' "
                 "(write apiVersion: vpolicy/v1)", id="api-version"),
    pytest.param("apiVersion: vpolicy/v1\nkind: Workload\nname: x\njobz: []\n",
                 "w.yaml:4:1: error[workload.unknown-key]: unknown key 'jobz' (did you mean 'jobs'?)",
                 id="unknown-top-level-key"),
])
def test_malformed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("w.yaml").write_text(text, encoding="utf-8")
    assert errors("w.yaml") == [expected]


def test_a_duplicate_job_points_back_at_the_first(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: "a-{i}", count: 2, every: 1m, requests: {cpu: "1"}, duration: 1m}
        - {name: a-1, requests: {cpu: "1"}, duration: 1m}
    """)
    with pytest.raises(PolicyError) as caught:
        wl.load_workload(path)
    (diag,) = caught.value.diagnostics
    assert diag.render(with_snippet=False) == (
        "w.yaml:6:10: error[workload.duplicate-job]: job default/a-1 is defined twice\n"
        "   help: give each job its own name; {i} in a name stands for the job's index\n"
        "   note: w.yaml:5:10: first here")


def test_queues_and_priority_classes_are_checked_against_the_cluster(write_workload: WriteWorkload) -> None:
    path = write_workload("""\
        - {name: a, queue: reserch, priority: hihg, requests: {cpu: "1"}, duration: 1m}
    """, extra="events:\n- {at: 1h, queue: nope, state: Closed}\n")
    world = replace(cluster(node("n1"), queues=(snap.Queue("research"),)),
                    priority_classes=(snap.PriorityClass("high", 1000),))
    with pytest.raises(PolicyError) as caught:
        wl.check_against(wl.load_workload(path), world)
    assert [d.one_line() for d in caught.value.diagnostics] == [
        "w.yaml:5:19: error[workload.unknown-queue]: queue 'nope' is not in the cluster "
        "(queues: research, root, default)",
        "w.yaml:7:20: error[workload.unknown-queue]: queue 'reserch' is not in the cluster "
        "(did you mean 'research'?)",
        "w.yaml:7:39: error[workload.unknown-priority-class]: priority class 'hihg' is not in the cluster "
        "(did you mean 'high'?)",
    ]


def test_a_csv_trace_becomes_one_job_per_row(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(textwrap.dedent("""\
        submit_time,job,queue,pods,cpu,memory,gpu,duration,priority
        # comments and blank lines are skipped

        0,research/train-1,nlp,2,4,16Gi,1,2h,high
        90,etl,default,1,500m,1Gi,0,600,
    """), encoding="utf-8")
    workload = trace.load_trace(path)
    jobs = wl.expand(workload, seed=1)
    assert [(j.key, j.queue, j.arrival, j.pods, j.duration, j.priority) for j in jobs] == [
        ("research/train-1", "nlp", 0.0, 2, 7200.0, "high"), ("default/etl", "default", 90.0, 1, 600.0, None)]
    assert jobs[0].requests == Resources({"cpu": 4000, "memory": 16 * 2**30, "nvidia.com/gpu": 1000, "pods": 1})


def test_csv_mistakes_point_at_their_row_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text("submit_time,job,queue,pods,cpu,memory,gpu,duration,priority\n"
                             "30m,train-2,default,two,4,16Gi,1,1h,\n"
                             "60,bad/Name,default,1,4x,16Gi,0,1h,\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        trace.load_trace("t.csv")
    assert [d.one_line() for d in caught.value.diagnostics] == [
        "t.csv:2:21: error[workload.bad-value]: pods: 'two' is not a whole number >= 1 (write a whole number >= 1)",
        "t.csv:3:4: error[workload.bad-value]: 'bad/Name' is not a job name (write name or namespace/name in "
        "lowercase letters, digits and '-')",
        "t.csv:3:23: error[workload.bad-quantity]: cpu: '4x' is not a quantity: unknown suffix 'x' "
        "(quantities look like 500m, 2, 1.5Gi, 1e3)",
    ]


def test_a_csv_header_must_name_the_known_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text("submit,job,queue,pods,cpu,memory,gpu,duration,priority\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        trace.load_trace("t.csv")
    assert [d.one_line() for d in caught.value.diagnostics] == [
        "t.csv:1:1: error[workload.bad-header]: unknown column 'submit' (did you mean 'submit_time'?)",
        "t.csv:1:1: error[workload.bad-header]: missing column submit_time (the header row is submit_time,job,"
        "queue,pods,cpu,memory,gpu,duration,priority)",
    ]


def test_a_generated_workload_is_seeded_and_reads_back(tmp_path: Path) -> None:
    world = load_cluster(ROOT / "examples" / "cluster.yaml")
    once = generate.generate_workload(world, seed=3, hours=6, jobs=40)
    assert once == generate.generate_workload(world, seed=3, hours=6, jobs=40)
    assert once != generate.generate_workload(world, seed=4, hours=6, jobs=40)
    path = tmp_path / "g.yaml"
    path.write_text(generate.dump_workload(once), encoding="utf-8")
    back = wl.load_workload(path)
    wl.check_against(back, world)
    assert wl.expand(back, seed=1) == wl.expand(once, seed=1)
    assert all(0 <= j.arrival < 6 * 3600 for j in wl.expand(back, seed=1))


def test_the_example_workload_fits_the_example_cluster() -> None:
    workload = wl.load_workload(ROOT / "examples" / "workload.yaml")
    wl.check_against(workload, load_cluster(ROOT / "examples" / "cluster.yaml"))
    jobs = wl.expand(workload, seed=1)
    assert workload.duration == 86400.0 and len(jobs) > 100
    assert {j.queue for j in jobs} == {"research-nlp", "research-vision", "prod", "default"}


def test_every_code_the_simulation_emits_is_documented() -> None:
    emitted: set[str] = set()
    for module in (ROOT / "vpolicy" / "sim").glob("*.py"):
        emitted |= set(re.findall(r'"((?:workload|replay)\.[a-z-]+)"', module.read_text(encoding="utf-8")))
    emitted |= {"workload.yaml-syntax", "workload.duplicate-key", "workload.unreadable-file"}  # yaml_spans, stage
    documented = set(re.findall(r"^\| `((?:workload|replay)\.[a-z-]+)`",
                                (ROOT / "docs" / "simulate.md").read_text(encoding="utf-8"), re.MULTILINE))
    assert emitted == documented


@pytest.mark.parametrize("jobs, extra, expected", [
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: .inf}\n', "",
                 "w.yaml:5:45: error[workload.bad-duration]: jobs[0].duration: '.inf' is longer than 3650d (ten "
                 "years), the longest a workload may write", id="infinite-job-duration"),
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: 1e400}\n', "",
                 "w.yaml:5:45: error[workload.bad-duration]: jobs[0].duration: '1e400' is longer than 3650d (ten "
                 "years), the longest a workload may write", id="job-duration-beyond-a-float"),
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: 99999d}\n', "",
                 "w.yaml:5:45: error[workload.bad-duration]: jobs[0].duration: '99999d' is longer than 3650d (ten "
                 "years), the longest a workload may write", id="job-duration-of-centuries"),
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: nan}\n', "",
                 "w.yaml:5:45: error[workload.bad-duration]: jobs[0].duration: 'nan' is not a duration",
                 id="nan-job-duration"),
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: .nan}\n', "",
                 "w.yaml:5:45: error[workload.bad-duration]: jobs[0].duration: '.nan' is not a duration",
                 id="yaml-nan-job-duration"),
    pytest.param('- {name: a, requests: {cpu: "1"}, duration: 1h}\n', "duration: 1e400\n",
                 "w.yaml:4:11: error[workload.bad-duration]: duration: '1e400' is longer than 3650d (ten years), the "
                 "longest a workload may write", id="workload-duration-beyond-a-float"),
])
def test_a_duration_that_is_not_finite_or_longer_than_ten_years_is_a_bad_duration(
        write_workload: WriteWorkload, jobs: str, extra: str, expected: str) -> None:
    path = write_workload(jobs, extra=extra)
    assert errors(path) == [expected + " (write a duration such as 90s, 45m, 2h, 1h30m or 1d (a bare number is "
                                       "seconds))"]


@pytest.mark.parametrize("jobs, expected", [
    pytest.param('- {name: a, pods: 10000000000, requests: {cpu: "1"}, duration: 1h}\n',
                 "w.yaml:5:19: error[workload.bad-value]: jobs[0].pods: must be at most 100000, got 10000000000 "
                 "(a job has at most 100000 pods; Kubernetes supports 150000 in a whole cluster)",
                 id="pods-of-one-job"),
    pytest.param('- {name: a, count: 100000000000, every: 1s, requests: {cpu: "1"}, duration: 1h}\n',
                 "w.yaml:5:20: error[workload.bad-value]: job 'a': count 100000000000 x pods 1 takes the workload to "
                 "100000000000 pods, more than the 1000000 it may create (lower count or pods; all jobs of a workload "
                 "(count x pods each) add up to at most 1000000 pods)", id="count-of-one-template"),
    pytest.param('- {name: a, count: 600000, every: 1s, requests: {cpu: "1"}, duration: 1h}\n'
                 '- {name: b, count: 5, every: 1s, pods: 100000, requests: {cpu: "1"}, duration: 1h}\n',
                 "w.yaml:6:20: error[workload.bad-value]: job 'b': count 5 x pods 100000 takes the workload to "
                 "1100000 pods, more than the 1000000 it may create (lower count or pods; all jobs of a workload "
                 "(count x pods each) add up to at most 1000000 pods)", id="templates-together"),
    pytest.param('- {name: a, requests: {cpu: 1e400}, duration: 1h}\n',
                 "w.yaml:5:29: error[workload.bad-quantity]: jobs[0].requests.cpu: '1e400' is too large: at most "
                 "9223372036854775807m (2^63-1 thousandths) (check the exponent and the suffix; Kubernetes "
                 "quantities hold at most 2^63-1)", id="request-beyond-a-quantity"),
])
def test_a_workload_too_large_to_simulate_is_refused_at_once(write_workload: WriteWorkload, jobs: str,
                                                              expected: str) -> None:
    path = write_workload(jobs)
    assert errors(path) == [expected]


def test_a_job_merged_from_an_anchor_loads_and_its_mistakes_point_at_the_merging_job(
        write_workload: WriteWorkload) -> None:
    good = write_workload('- &a {name: a, requests: {cpu: "1"}, duration: 1.5}\n- {<<: *a, name: b}\n')
    assert [t.duration for t in wl.load_workload(good).templates] == [(1.5, 1.5), (1.5, 1.5)]
    bad = write_workload('- &a {name: a, requests: {cpu: "1"}, duration: .inf}\n- {<<: *a, name: b}\n', name="b.yaml")
    assert [line.split(" (write")[0] for line in errors(bad)] == [
        "b.yaml:5:48: error[workload.bad-duration]: jobs[0].duration: '.inf' is longer than 3650d (ten years), the "
        "longest a workload may write",
        "b.yaml:6:3: error[workload.bad-duration]: jobs[1].duration: 'inf' is longer than 3650d (ten years), the "
        "longest a workload may write"]


def test_a_csv_row_with_more_pods_than_a_job_may_have_is_a_bad_value(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.csv").write_text("submit_time,job,queue,pods,cpu,memory,gpu,duration,priority\n"
                             "0,a,default,100001,1,1Gi,0,1h,\n"
                             "0,b,default,1,1,1Gi,0,nan,\n", encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        trace.load_trace("t.csv")
    assert [d.one_line() for d in caught.value.diagnostics] == [
        "t.csv:2:13: error[workload.bad-value]: pods: must be at most 100000, got 100001 (a job has at most 100000 "
        "pods; Kubernetes supports 150000 in a whole cluster)",
        "t.csv:3:23: error[workload.bad-duration]: duration: 'nan' is not a duration (write seconds, or a duration "
        "such as 90s, 2h)",
    ]
