"""The extender plugin against a real HTTP server on 127.0.0.1: each verb's answer reaches the session,
and a failed call follows Volcano's `ignorable` policy (extender.go); timeouts and retries are the
client's (`vpolicy.compile.extender`)."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from tests.engine import build
from vpolicy.engine.session import run_session
from vpolicy.harness import policy as policy_mod
from vpolicy.load import conf as conf_loader
from vpolicy.model.snapshot import ClusterSnapshot, TaskStatus

Handler = Callable[[str, dict[str, Any]], tuple[int, Any]]


class FakeExtender:
    """An HTTP server whose answer per verb is a function of the request body; it records every call."""

    def __init__(self) -> None:
        self.answers: dict[str, Handler] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.delay_s = 0.0
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # reason: http.server's name
                verb = self.path.strip("/")
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                fake.calls.append((verb, body))
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                answer = fake.answers.get(verb)
                code, payload = answer(verb, body) if answer else (404, None)
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    fake = FakeExtender()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def _session(snapshot: ClusterSnapshot, url: str, **arguments: object) -> Any:
    """One session under a conf with the extender beside priority in the first tier (its victims are
    intersected with priority's there), gang's victim rule off."""
    lines = "".join(f"      {k}: {json.dumps(v)}\n" for k, v in {"extender.urlPrefix": url, **arguments}.items())
    text = ('actions: "enqueue, allocate, preempt"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
            "    enablePreemptable: false\n  - name: extender\n    arguments:\n" + lines
            + "- plugins:\n  - name: predicates\n  - name: proportion\n")
    compiled = policy_mod.from_conf(conf_loader.parse_conf_text(text, file="extender.conf"))
    return run_session(snapshot, compiled).decisions


def _two_nodes_one_pod() -> ClusterSnapshot:
    return ClusterSnapshot(nodes=(build.node("n1"), build.node("n2")), queues=(build.queue(),),
                           podgroups=(build.podgroup("pg"),), pods=(build.pod("pg-0", "pg"),))


def test_the_predicate_verb_refuses_the_nodes_it_names(extender: FakeExtender) -> None:
    extender.answers["predicate"] = lambda _, body: (200, {"status": "no" if body["node"]["Name"] == "n1" else ""})
    decisions = _session(_two_nodes_one_pod(), extender.url, **{"extender.predicateVerb": "predicate"})
    assert decisions.binds == {"ns/pg-0": "n2"}
    sent = [body for verb, body in extender.calls if verb == "predicate"]
    assert {b["task"]["Name"] for b in sent} == {"pg-0"}
    assert {b["node"]["Name"] for b in sent} == {"n1", "n2"}


def test_the_prioritize_verb_picks_the_node_it_scores_highest(extender: FakeExtender) -> None:
    extender.answers["prioritize"] = lambda _, body: (200, {"nodeScore": {"n1": 1, "n2": 50}})
    decisions = _session(_two_nodes_one_pod(), extender.url, **{"extender.prioritizeVerb": "prioritize"})
    assert decisions.binds == {"ns/pg-0": "n2"}
    assert extender.verbs().count("prioritize") == 1  # asked once for the task, not once per node


@pytest.mark.parametrize("ignorable, binds", [
    pytest.param(True, {"ns/pg-0": "n1"}, id="ignorable-a-failed-call-lets-the-node-pass"),
    pytest.param(False, {}, id="not-ignorable-a-failed-call-fails-the-node"),
])
def test_a_predicate_call_that_times_out_follows_the_ignorable_policy(extender: FakeExtender, ignorable: bool,
                                                                      binds: dict[str, str]) -> None:
    extender.answers["predicate"] = lambda _, body: (200, {"status": ""})
    extender.delay_s = 0.5
    decisions = _session(_two_nodes_one_pod(), extender.url, **{
        "extender.predicateVerb": "predicate", "extender.httpTimeout": "100ms", "extender.ignorable": ignorable})
    assert decisions.binds == binds


def test_a_server_error_is_retried_when_retries_are_configured(extender: FakeExtender) -> None:
    failures = iter([503])
    extender.answers["predicate"] = lambda _, body: ((next(failures, 200)), {"status": ""})
    decisions = _session(_two_nodes_one_pod(), extender.url, **{
        "extender.predicateVerb": "predicate", "extender.retries": 1})
    assert decisions.binds == {"ns/pg-0": "n1"}
    assert extender.verbs().count("predicate") == 3  # n1 failed once then passed; n2 once


def test_an_unreachable_extender_that_is_ignorable_changes_nothing() -> None:
    decisions = _session(_two_nodes_one_pod(), "http://127.0.0.1:9", **{
        "extender.predicateVerb": "predicate", "extender.prioritizeVerb": "prioritize",
        "extender.jobEnqueueableVerb": "enqueueable", "extender.ignorable": True, "extender.httpTimeout": "200ms"})
    assert decisions.binds == {"ns/pg-0": "n1"}


def test_a_failed_session_open_switches_every_verb_off_unless_ignorable(extender: FakeExtender) -> None:
    extender.answers["open"] = lambda _, body: (500, None)
    extender.answers["predicate"] = lambda _, body: (200, {"status": "never"})
    decisions = _session(_two_nodes_one_pod(), extender.url, **{
        "extender.onSessionOpenVerb": "open", "extender.predicateVerb": "predicate"})
    assert decisions.binds == {"ns/pg-0": "n1"}  # Volcano registers no predicate after the failed open
    assert "predicate" not in extender.verbs()


def test_the_preemptable_verb_chooses_the_victims(extender: FakeExtender) -> None:
    extender.answers["preemptable"] = lambda _, body: (
        200, {"status": 1, "victims": [e for e in body["evictees"] if e["Name"] == "low-1"]})
    snapshot = ClusterSnapshot(
        nodes=(build.node("n1", cpu=2000),), queues=(build.queue(),),
        priority_classes=(build.PriorityClass("high", 100), build.PriorityClass("low", 1)),
        podgroups=(build.podgroup("low", min_member=1, priority_class="low"),
                   build.podgroup("hi", priority_class="high")),
        pods=(build.running("low-0", "low", "n1"), build.running("low-1", "low", "n1"),
              build.pod("hi-0", "hi", priority=100)))
    decisions = _session(snapshot, extender.url, **{"extender.preemptableVerb": "preemptable"})
    assert [e.pod for e in decisions.evictions] == ["ns/low-1"]
    assert snapshot.pods[0].status is TaskStatus.RUNNING


def test_the_predicate_is_asked_for_each_pod_not_each_kind_of_pod(extender: FakeExtender) -> None:
    extender.answers["predicate"] = lambda _, body: (200, {"status": "no" if body["task"]["Name"] == "a-0" else ""})
    snapshot = ClusterSnapshot(nodes=(build.node("n1"),), queues=(build.queue(),),
                               podgroups=(build.podgroup("a"), build.podgroup("b")),
                               pods=(build.pod("a-0", "a"), build.pod("b-0", "b")))
    decisions = _session(snapshot, extender.url, **{"extender.predicateVerb": "predicate"})
    assert decisions.binds == {"ns/b-0": "n1"}
    assert any("no" in reason for reason in decisions.unschedulable["ns/a-0"])


def test_prioritize_gets_only_the_nodes_scored_together(extender: FakeExtender) -> None:
    """Volcano's BatchNodeOrderFn sees the nodes that passed the predicates and fit Idle, not every node:
    n3 is too small for the pod, so the extender is asked about n1 and n2 only."""
    extender.answers["prioritize"] = lambda _, body: (200, {"nodeScore": {n["Name"]: 10 for n in body["nodes"]}})
    snapshot = ClusterSnapshot(nodes=(build.node("n1"), build.node("n2"), build.node("n3", cpu=500)),
                               queues=(build.queue(),), podgroups=(build.podgroup("pg"),),
                               pods=(build.pod("pg-0", "pg"),))
    _session(snapshot, extender.url, **{"extender.prioritizeVerb": "prioritize"})
    (body,) = [b for verb, b in extender.calls if verb == "prioritize"]
    assert [n["Name"] for n in body["nodes"]] == ["n1", "n2"]
    assert body["task"]["Resreq"] == {"MilliCPU": 1000.0, "Memory": float(build.GIB), "ScalarResources": None,
                                      "MaxTaskNum": 1}
    assert body["task"]["Status"] == 1  # Volcano's TaskStatus Pending, as Go encodes it


def test_a_lone_candidate_node_is_not_prioritized(extender: FakeExtender) -> None:
    """Volcano scores only when more than one node is left (allocate's prioritizeNodes)."""
    extender.answers["prioritize"] = lambda _, body: (200, {"nodeScore": {}})
    snapshot = ClusterSnapshot(nodes=(build.node("n1"), build.node("n3", cpu=500)), queues=(build.queue(),),
                               podgroups=(build.podgroup("pg"),), pods=(build.pod("pg-0", "pg"),))
    decisions = _session(snapshot, extender.url, **{"extender.prioritizeVerb": "prioritize"})
    assert decisions.binds == {"ns/pg-0": "n1"}
    assert "prioritize" not in extender.verbs()


def test_session_open_and_close_are_sent_once_each_in_order(extender: FakeExtender) -> None:
    """OnSessionOpen posts the session's jobs, nodes and queues (Volcano's OnSessionOpenRequest, keyed as
    its maps are); OnSessionClose posts `{}` after every action, and its answer changes nothing."""
    extender.answers["open"] = lambda _, body: (200, {})
    extender.answers["close"] = lambda _, body: (500, None)
    extender.answers["predicate"] = lambda _, body: (200, {"status": ""})
    decisions = _session(_two_nodes_one_pod(), extender.url, **{
        "extender.onSessionOpenVerb": "open", "extender.onSessionCloseVerb": "close",
        "extender.predicateVerb": "predicate"})
    assert decisions.binds == {"ns/pg-0": "n1"}
    verbs = extender.verbs()
    assert verbs[0] == "open" and verbs[-1] == "close"
    assert verbs.count("open") == verbs.count("close") == 1
    opened = extender.calls[0][1]
    assert sorted(opened) == ["Jobs", "NamespaceInfo", "NodeList", "Nodes", "Queues", "RevocableNodes"]
    assert sorted(opened["Nodes"]) == ["n1", "n2"] and list(opened["Jobs"]) == ["ns/pg"]
    assert list(opened["Jobs"]["ns/pg"]["Tasks"].values())[0]["Name"] == "pg-0"
    assert extender.calls[-1][1] == {}
