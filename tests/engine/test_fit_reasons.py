"""Why a task fits no node, node by node: each failing node gets its first failing predicate's reason,
whether the reason is a literal (computed once and shared, `Placement._fixed_reason`) or reads the
task and node (computed for each node)."""
from __future__ import annotations

import textwrap
from pathlib import Path

from tests.engine import build
from vpolicy.compile.lower import compile_module
from vpolicy.engine import runtime
from vpolicy.engine.placement import FitErrors, Placement
from vpolicy.engine.state import SessionState
from vpolicy.lang.parse import parse_text


def test_each_node_gets_its_first_failing_rules_reason_literal_or_read_from_the_node(tmp_path: Path) -> None:
    path = tmp_path / "p.vpol"
    path.write_text("plugin p\n" + textwrap.dedent("""
        rule refused: predicate(task, node) = node.name != "n3"
            reason "refused"
        rule full: predicate(task, node) = false
            reason "no room on {node.name} for {task.name}"
        """).strip("\n") + "\n", encoding="utf-8")
    module = compile_module(parse_text(path.read_text(encoding="utf-8"), str(path)))
    snap = build.snapshot(nodes=[build.node(f"n{i}") for i in range(12)], podgroups=[build.podgroup("a")],
                          pods=[build.pod("a-0", "a")])
    state = SessionState(snap)
    rt = runtime.Runtime(((runtime.PluginInstance("p", module, {}),),), state)
    task = next(iter(state.tasks.values()))
    errors = FitErrors()
    assert not len(Placement(rt, state).feasible_rows(task, errors))
    assert errors.nodes["n3"] == ["refused"]
    assert {name: reasons for name, reasons in errors.nodes.items() if name != "n3"} == {
        f"n{i}": [f"no room on n{i} for a-0"] for i in range(12) if i != 3}
    histogram = sorted(["1 refused", *(f"1 no room on n{i} for a-0" for i in range(12) if i != 3)])
    assert errors.text() == f"0/12 nodes are unavailable: {', '.join(histogram)}."
