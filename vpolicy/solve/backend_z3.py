"""IR -> Z3: a memoised translator and an incremental, labelled solver. The only module importing z3.

Every assertion is tracked under its rule's `Label` (`assert_and_track`), so an unsat core maps back to
rule spans. Translation covers the arithmetic and logical fragment of the IR (constants, solver
unknowns, + - * /, comparisons, and/or/not, if, let); terms over session objects are evaluated exactly
before they reach the solver (see `vpolicy.compile.encode_gang`). `unknown` from Z3 — a timeout
included — is returned as `Unknown`, never as `Unsat`.

The arithmetic is exact, over integers and rationals, and gives each operator the meaning
`compile.evaluate` gives it: `/` is true division, also between two ints (Z3's `/` on two Int terms
would round down), and 0 when the divisor is 0 (Z3 leaves x/0 unconstrained); a float constant is the
rational its IEEE double is exactly (0.1 is 3602879701896397/2**55, not 1/10). What this module does not
model is rounding: a float operation's result is rounded in Python and exact here, so an encoder whose
answers may depend on it bounds the rounding itself (`compile.rounding`, used by `compile.encode_victims`).
Resource vectors never reach `/` here: the encoders keep vectors as one integer term per dimension and
do not divide them (`evaluate._div` scales a vector by 1/b, which raises for b = 0).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

import z3

from vpolicy.compile import ir
from vpolicy.solve.result import Result, Sat, SolverError, Unknown, Unsat


class Z3Backend:
    def __init__(self, *, timeout_ms: int = 1000):
        self.timeout_ms = timeout_ms
        self._memo: dict[ir.Term, z3.ExprRef] = {}
        self._syms: dict[str, z3.ExprRef] = {}
        self.calls = 0
        self.rlimit_spent = 0  # Z3 resource units its checks used (see `check`)
        self._ctx: z3.Context | None = None

    @property
    def ctx(self) -> z3.Context:
        """This backend's own Z3 context, made on first use. Z3's work on a question (and so what a
        resource limit cuts off) depends on what its context met before; in Z3's shared main context an
        answer would depend on the process's earlier sessions, here only on this backend's questions."""
        if self._ctx is None:
            self._ctx = z3.Context()
        return self._ctx

    # translation ---------------------------------------------------------------------------------
    def translate(self, term: ir.Term, env: dict[str, z3.ExprRef] | None = None) -> z3.ExprRef:
        if env:
            return self._tr(term, env)
        cached = self._memo.get(term)
        if cached is None:
            cached = self._tr(term, {})
            self._memo[term] = cached
        return cached

    def symbol(self, name: str, sort: str = "int") -> z3.ExprRef:
        sym = self._syms.get(name)
        if sym is None:
            maker = {"int": z3.Int, "real": z3.Real, "bool": z3.Bool}.get(sort)
            if maker is None:
                raise SolverError(f"unknown sort {sort!r}")
            sym = maker(name, self.ctx)
            self._syms[name] = sym
        return sym

    def _tr(self, t: ir.Term, env: dict[str, z3.ExprRef]) -> Any:  # noqa: C901  # reason: one case per term kind
        if isinstance(t, ir.Const):
            v = t.value
            if isinstance(v, bool):
                return z3.BoolVal(v, self.ctx)
            if isinstance(v, int):
                return z3.IntVal(v, self.ctx)
            if isinstance(v, float):
                return _float_value(v, self.ctx)
            raise SolverError(f"constant {v!r} has no solver meaning")
        if isinstance(t, ir.Sym):
            return self.symbol(t.name, t.sort)
        if isinstance(t, ir.Var):
            if t.name in env:
                return env[t.name]
            raise SolverError(f"free variable {t.name!r}")
        if isinstance(t, ir.Bind):
            return self._tr(t.body, {**env, t.name: self._tr(t.value, env)})
        if isinstance(t, ir.Cond):
            return z3.If(self._tr(t.test, env), self._tr(t.then, env), self._tr(t.orelse, env))
        if isinstance(t, ir.Op):
            args = [self._tr(a, env) for a in t.args]
            if t.op == "and":
                return z3.And(*args) if args else z3.BoolVal(True, self.ctx)
            if t.op == "or":
                return z3.Or(*args) if args else z3.BoolVal(False, self.ctx)
            if t.op == "not":
                return z3.Not(args[0])
            if t.op == "neg":
                return -args[0]
            a, b = args
            ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: _divide(a, b),
                   "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, "<=": lambda: a <= b,
                   ">": lambda: a > b, ">=": lambda: a >= b}
            if t.op not in ops:
                raise SolverError(f"operator {t.op!r} has no solver meaning")
            return ops[t.op]()
        raise SolverError(f"term {type(t).__name__} is evaluated exactly, not by the solver")

    # solving -------------------------------------------------------------------------------------
    def check(self, constraints: Iterable[tuple[ir.Label, ir.Term]], *, timeout_ms: int | None = None,
              rlimit: int | None = None) -> Result:
        """Solve the labelled constraints together; unsat cores come back as labels. `rlimit` bounds
        Z3's work deterministically (a timeout depends on the machine's load): given alone, it is the
        only bound, so the same question always gets the same answer; `rlimit_spent` counts the units
        used, for callers that share one budget over several checks."""
        solver = z3.Solver(ctx=self.ctx)
        if rlimit is None or timeout_ms is not None:
            solver.set("timeout", timeout_ms if timeout_ms is not None else self.timeout_ms)
        if rlimit is not None:
            solver.set("rlimit", max(1, rlimit))  # 0 would mean no limit
        labels: dict[str, ir.Label] = {}
        for i, (label, term) in enumerate(constraints):
            tag = f"c{i}|{label.rule_id}"
            labels[tag] = label
            solver.assert_and_track(self.translate(term), z3.Bool(tag, self.ctx))
        return self._run(solver, labels)

    def model_values(self, model: z3.ModelRef) -> dict[str, Any]:
        """The values `model` gives this backend's symbols, as Python ints, floats and bools."""
        values: dict[str, Any] = {}
        for name, sym in self._syms.items():
            val = model.eval(sym, model_completion=False)
            if z3.is_int_value(val):
                values[name] = val.as_long()
            elif z3.is_rational_value(val):
                values[name] = val.numerator_as_long() / val.denominator_as_long()
            elif z3.is_true(val) or z3.is_false(val):
                values[name] = z3.is_true(val)
        return values

    def _run(self, solver: z3.Solver, labels: dict[str, ir.Label]) -> Result:
        self.calls += 1
        before = resource_count(solver)
        answer = solver.check()
        self.rlimit_spent += resource_count(solver) - before
        if answer == z3.sat:
            return Sat(self.model_values(solver.model()))
        if answer == z3.unsat:
            core = [labels[str(c)] for c in solver.unsat_core() if str(c) in labels]
            unique = tuple(dict.fromkeys(core))
            return Unsat(unique)
        return Unknown(solver.reason_unknown() or "unknown")


def resource_count(solver: z3.Solver) -> int:
    """Z3's resource counter (its context's, so read it before and after a check for that check's work).
    A solver's `rlimit` is counted from where this stands when the check starts."""
    return int(solver.statistics().get_key_value("rlimit count"))


def _float_value(v: float, ctx: z3.Context) -> z3.ArithRef:
    """The exact rational of the double `v`: `compile.evaluate` compares and computes with the double, and
    `RealVal(0.1)` would be the decimal 1/10 instead."""
    try:
        exact = Fraction(v)
    except (OverflowError, ValueError) as e:  # inf and nan are no rationals
        raise SolverError(f"constant {v!r} has no solver meaning") from e
    return z3.RealVal(exact, ctx)


def _divide(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    """`evaluate._div` on numbers: true division (ints are made reals, or Z3 would divide them as
    integers, rounding down), and 0 where the divisor is 0 (Z3's own x/0 is any value)."""
    quotient = _real(a) / _real(b)
    return z3.If(b == 0, z3.RealVal(0, b.ctx), quotient)


def _real(x: z3.ArithRef) -> z3.ArithRef:
    return z3.ToReal(x) if x.is_int() else x


class IncrementalSolver:
    """One solver kept across checks: base constraints once, per-question assumptions via push/pop."""

    def __init__(self, backend: Z3Backend, base: Iterable[tuple[ir.Label, ir.Term]] = ()):
        self.backend = backend
        self.solver = z3.Solver(ctx=backend.ctx)
        self.solver.set("timeout", backend.timeout_ms)
        self.labels: dict[str, ir.Label] = {}
        self._n = 0
        for label, term in base:
            self._track(label, term)

    def _track(self, label: ir.Label, term: ir.Term) -> None:
        tag = f"c{self._n}|{label.rule_id}"
        self._n += 1
        self.labels[tag] = label
        self.solver.assert_and_track(self.backend.translate(term), z3.Bool(tag, self.backend.ctx))

    def check(self, extra: Iterable[tuple[ir.Label, ir.Term]] = ()) -> Result:
        self.solver.push()
        try:
            for label, term in extra:
                self._track(label, term)
            return self.backend._run(self.solver, self.labels)
        finally:
            self.solver.pop()
