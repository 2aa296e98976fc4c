"""The controller registry (`--controllers` selection, duplicate names), the work queue on the fake
clock, and the `vpolicy controllers` command line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cluster_adapter.controllers import framework
from cluster_adapter.controllers.clock import FakeClock
from cluster_adapter.controllers.workqueue import WorkQueue
from vpolicy import cli

KNOWN = ["queue-controller", "pg-controller", "job-controller", "cronjob-controller", "gc-controller",
         "hypernode-controller"]


@pytest.mark.parametrize("spec, expected", [
    pytest.param("*", KNOWN, id="all"),
    pytest.param("*,-gc", [*KNOWN[:4], "hypernode-controller"], id="all-but-gc"),
    pytest.param("*,-gc-controller,-pg,-hypernode", ["queue-controller", "job-controller", "cronjob-controller"],
                 id="full-names"),
    pytest.param("job,queue", ["queue-controller", "job-controller"], id="only-named"),
])
def test_select(spec: str, expected: list[str]) -> None:
    assert framework.select(spec, list(framework.load_builtin())) == expected


def test_select_refuses_unknown_names() -> None:
    with pytest.raises(framework.UnknownControllerError, match="unknown controller 'jobs'"):
        framework.select("*,-jobs", KNOWN)


def test_a_second_controller_with_a_registered_name_is_an_error() -> None:
    framework.load_builtin()

    class Impostor(framework.Controller):
        name = "job-controller"
        resources = ()

        def setup(self, options: Any) -> None: ...

        def process(self, item: Any) -> None: ...

    with pytest.raises(framework.DuplicateControllerError, match="already registered"):
        framework.register(Impostor)
    assert framework.registered()["job-controller"] is not Impostor


def test_work_queue_dedups_holds_delayed_items_and_counts_failures() -> None:
    clock = FakeClock(1000.0)
    queue: WorkQueue[str] = WorkQueue(clock)
    queue.add("a")
    queue.add("a")
    queue.add_after("later", 30)
    assert queue.take_ready() == ["a"]
    queue.add("a")  # re-added while processing: ready again once done
    assert queue.take_ready() == []
    queue.done("a")
    assert queue.take_ready() == ["a"]
    queue.done("a")
    clock.advance(29)
    assert queue.take_ready() == []
    clock.advance(1)
    assert queue.take_ready() == ["later"]
    queue.add_rate_limited("b")
    queue.add_rate_limited("b")
    assert queue.num_requeues("b") == 2
    assert queue.take_ready(include_retries=True) == ["b"]
    queue.forget("b")
    assert queue.num_requeues("b") == 0


def test_cli_exits_1_on_an_unknown_controller(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["controllers", "--kubeconfig", str(kubeconfig), "--controllers", "*,-nope", "--once"]) == 1
    assert "error[controllers.unknown]" in capsys.readouterr().err


def test_cli_once_creates_the_default_queues(kubeconfig: Path, emu: Any) -> None:
    assert cli.main(["controllers", "--kubeconfig", str(kubeconfig), "--once", "--controllers", "queue"]) == 0
    assert {q["metadata"]["name"] for q in emu.call(lambda e: e.list("queues"))} == {"root", "default"}


def test_a_late_deletion_of_an_earlier_uid_leaves_the_re_created_object_in_the_store() -> None:
    """A restart deletes a pod and creates it again under the same name; the create's answer is recorded
    at once, and the watch's DELETED for the old pod can come after it. The store keeps the new pod
    (the controller would otherwise create it a third time), and handlers still hear of the deletion."""
    from cluster_adapter.controllers.store import Store

    store = Store(["pods"])
    heard: list[tuple[str, str]] = []
    store.on("pods", lambda kind, obj, _held: heard.append((kind, obj["metadata"]["uid"])))

    def pod(uid: str, rv: str) -> dict[str, Any]:
        return {"metadata": {"namespace": "ns", "name": "job-t-0", "uid": uid, "resourceVersion": rv}}
    store.apply("pods", "ADDED", pod("old", "1"))
    store.record("pods", pod("new", "3"))
    store.apply("pods", "DELETED", pod("old", "2"))
    held = store.get("pods", "ns", "job-t-0")
    assert held is not None and held["metadata"]["uid"] == "new"
    assert heard[-1] == ("DELETED", "old")
    store.apply("pods", "DELETED", pod("new", "4"))
    assert store.get("pods", "ns", "job-t-0") is None
