"""Minimal unsat cores over labelled groups, and `Unknown` kept apart from `Unsat`."""
from __future__ import annotations

import pytest

from vpolicy.compile import ir
from vpolicy.solve import cores
from vpolicy.solve.backend_z3 import Z3Backend
from vpolicy.solve.result import Sat, Unknown, Unsat
from vpolicy.source import Span

X, Y, Z = ir.Sym("x"), ir.Sym("y"), ir.Sym("z")
SPAN = Span("t.vpol", 1, 1)


def label(name: str) -> ir.Label:
    return ir.Label(name, SPAN, name)


def group(name: str, *terms: ir.Term) -> cores.Group:
    return cores.Group(label(name), terms)


def hard_cubes() -> list[ir.Term]:
    """x^3 + y^3 == z^3 over positive integers: unsat (Fermat, n = 3), beyond Z3's nonlinear arithmetic."""
    cube = lambda v: ir.op("*", v, ir.op("*", v, v))  # noqa: E731  # reason: a one-line helper reads best here
    return [ir.op(">", X, ir.Const(0)), ir.op(">", Y, ir.Const(0)), ir.op(">", Z, ir.Const(0)),
            ir.op("==", ir.add(cube(X), cube(Y)), cube(Z))]


def test_core_is_shrunk_to_the_groups_that_conflict() -> None:
    groups = [group("low", ir.op(">=", X, ir.Const(5))), group("unrelated", ir.op(">=", Y, ir.Const(1))),
              group("high", ir.op("<=", X, ir.Const(3))), group("also-unrelated", ir.op("<=", Y, ir.Const(9)))]
    out = cores.minimal_core(Z3Backend(), groups)
    assert isinstance(out.result, Unsat)
    assert [g.label.rule_id for g in out.groups] == ["low", "high"]
    assert out.minimal


def test_drop_first_keeps_the_preferred_one_of_two_cores() -> None:
    # Either "capacity" or "queue" alone conflicts with "need": the preference decides which is shown.
    need = group("need", ir.op(">=", X, ir.Const(1)))
    capacity = group("capacity", ir.op("<=", X, ir.Const(0)))
    queue = group("queue", ir.op("<=", X, ir.Const(0)))
    out = cores.minimal_core(Z3Backend(), [need, capacity, queue], drop_first=[1])
    assert [g.label.rule_id for g in out.groups] == ["need", "queue"]
    out = cores.minimal_core(Z3Backend(), [need, capacity, queue], drop_first=[2])
    assert [g.label.rule_id for g in out.groups] == ["need", "capacity"]


def test_satisfiable_groups_return_a_model() -> None:
    out = cores.minimal_core(Z3Backend(), [group("a", ir.op(">=", X, ir.Const(2))), group("b", ir.op("<=", X, ir.Const(2)))])
    assert isinstance(out.result, Sat)
    assert out.result.model["x"] == 2


def test_hard_terms_are_always_on_and_never_in_a_core() -> None:
    out = cores.minimal_core(Z3Backend(), [group("need", ir.op("<=", X, ir.Const(-1)))], hard=[ir.op(">=", X, ir.Const(0))])
    assert isinstance(out.result, Unsat)
    assert [g.label.rule_id for g in out.groups] == ["need"]


@pytest.mark.parametrize("rlimit", [pytest.param(1_000, id="1k-units"), pytest.param(50_000, id="50k-units")])
def test_running_out_of_resource_units_on_a_hard_instance_is_unknown_not_unsat(rlimit: int) -> None:
    backend = Z3Backend()
    out = cores.minimal_core(backend, [group("fermat", *hard_cubes())], rlimit=rlimit)
    assert isinstance(out.result, Unknown)
    assert not isinstance(out.result, Unsat)
    assert out.groups == ()


def test_backend_check_keeps_unknown_apart_from_unsat() -> None:
    result = Z3Backend().check([(label("fermat"), t) for t in hard_cubes()], timeout_ms=1)
    assert isinstance(result, Unknown)


def test_an_unknown_deletion_check_keeps_the_group_and_says_the_core_may_not_be_minimal() -> None:
    # "conflict" alone is unsat; with "fermat" in the core too, dropping "conflict" leaves a hard instance.
    conflict = group("conflict", ir.op(">=", X, ir.Const(1)), ir.op("<=", X, ir.Const(0)))
    fermat = group("fermat", *hard_cubes())
    out = cores.minimal_core(Z3Backend(), [fermat, conflict], rlimit=50_000, drop_first=[1])
    assert isinstance(out.result, Unsat)
    assert [g.label.rule_id for g in out.groups] == ["conflict"]
    assert out.minimal is False  # dropping "conflict" first came back unknown, so it was kept unproven


def test_the_resource_limit_is_per_check_and_counted_so_each_check_gets_the_same_answer() -> None:
    # Z3's counter runs on over the process; each check's limit counts from where it stands, so the tenth
    # hard question is cut off exactly as the first was, and the units it spent are counted.
    backend = Z3Backend()
    answers = [cores.minimal_core(backend, [group("fermat", *hard_cubes())], rlimit=20_000).result for _ in range(10)]
    assert all(isinstance(a, Unknown) for a in answers)
    assert 10 * 20_000 <= backend.rlimit_spent < 10 * 30_000
    quick = cores.minimal_core(backend, [group("a", ir.op(">=", X, ir.Const(2))), group("b", ir.op("<=", X, ir.Const(1)))],
                               rlimit=20_000)
    assert isinstance(quick.result, Unsat)


def test_backend_check_with_only_a_resource_limit_answers_the_same_each_time() -> None:
    backend = Z3Backend(timeout_ms=1)  # the backend's default timeout is not used when a limit is given
    easy = [(label("a"), ir.op(">=", X, ir.Const(2))), (label("b"), ir.op("<=", X, ir.Const(1)))]
    assert all(isinstance(backend.check(easy, rlimit=100_000), Unsat) for _ in range(5))
    assert all(isinstance(backend.check([(label("fermat"), t) for t in hard_cubes()], rlimit=5_000), Unknown)
               for _ in range(3))


def _spent_on_the_same_questions() -> tuple[int, str]:
    backend = Z3Backend()
    backend.check([(label("a"), ir.op(">=", X, ir.Const(3))), (label("b"), ir.op("<=", X, ir.Const(9)))], rlimit=100_000)
    out = cores.minimal_core(backend, [group("fermat", *hard_cubes()), group("c", ir.op(">=", X, ir.Const(1)))],
                             rlimit=30_000)
    return backend.rlimit_spent, type(out.result).__name__


def test_a_backends_work_does_not_depend_on_what_other_backends_asked_before() -> None:
    # Each backend has its own Z3 context: in Z3's shared one, the units a question takes (and so where a
    # limit cuts it off) drift with every earlier question of the process, so a live scheduler's notes
    # would depend on its history.
    first = _spent_on_the_same_questions()
    for i in range(3):
        Z3Backend().check([(label("other"), ir.op("==", ir.op("*", ir.Sym(f"y{i}"), Y), ir.Const(7 + i)))],
                          rlimit=50_000)
    assert [_spent_on_the_same_questions() for _ in range(3)] == [first] * 3
