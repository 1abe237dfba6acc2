"""``test_rrule``, ``test_frule`` and ``test_scalar``: check a rule against finite differences and the rule contract.

What ``test_rrule(f, *args)`` checks, in order (ChainRulesTestUtils' list, plus mutation and
repeat-call checks):

1. ``rrule(f, *args)`` exists and returns ``(y, pullback)``; ``y`` equals ``f(*args)`` to rounding
   (same shapes and dtypes); the rule mutates none of its inputs.
2. ``pullback(dy)`` returns a tuple of ``1 + len(args)`` entries, the tangent of ``f`` first.
3. ``iadd`` of each cotangent into an owned random accumulator equals ``add`` (this runs an
   ``InplaceableThunk``'s ``add_into``).
4. Each cotangent is valid for its argument (type, shape, dtype, structure, or a zero), and
   arguments that cannot be perturbed (``nondiff(x)``, bools, strings, plain functions, and
   integers unless the rule gives them a float) get ``NoTangent()``.
5. Each cotangent matches finite differences (unthunked values compared).
6. Calling the pullback again gives the same result, a ``Thunk``-wrapped seed gives the same
   result, twice the seed gives twice the cotangents, a ``ZeroTangent()`` seed gives zeros;
   nothing the rule returned, nor its inputs, the seed or ``y``, was mutated by the pullback.
7. For a rule registered ``batched=True`` (that did not ``decline_batch()`` for these
   arguments): the pullback given a batch of cotangents at once (random ones, and the
   ``BasisSeed`` blocks ``cr.jacobian`` seeds with) gives, row by row, what it gives each row
   alone (``batched_checks``). ``test_frule`` checks a batched pushforward alike.

How the finite-difference reference is formed: an argument with at most ``FULL_FD_MAX`` reals
gets its full cotangent ``J^T dy`` one Jacobian column at a time (about 11 calls of ``f`` per real)
and is compared entry by entry; a larger one is checked by ``RANDOM_PROJECTIONS`` random
directions ``u``, comparing ``<dy, J u>`` (one finite-difference JVP each) with
``<cotangent, u>``. That keeps a call at milliseconds for small inputs and linear in the number of
arguments for large ones, at the price of a less specific message for large arguments.

Rules that call ``cr.rrule_via_ad`` (``map``, ``sorted`` with a key) run under a test engine,
``fd_pullback_full``: ``cr.rrule`` for callables with a rule, finite differences for the rest;
those that call ``cr.frule_via_ad`` (``np.piecewise``) under ``fd_pushforward_full``, its forward twin.
"""

from __future__ import annotations

import copy
import inspect
import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    active_engine,
    active_forward_engine,
    add,
    batch_declines,
    callable_name,
    frule,
    iadd,
    rrule,
    unthunk,
)
from ..core.active import ENGINE_INSTALLED
from .batched_checks import batched_pullback_problems, batched_pushforward_problems
from .checks import (
    approx_problems,
    deep_unthunk,
    default_tolerances,
    is_zero_tangent,
    must_be_no_tangent,
    primal_tolerance,
    tangent_problems,
)
from .finite_differences import FiniteDifferenceMethod, central_fdm, default_fdm, fd_jvp, fd_vjp
from .random_tangents import as_rng, rand_tangent
from .to_vec import _OPAQUE, NonDifferentiable, _object_fields, describe, layout, nondiff, tangent_to_vec, unwrap

#: arguments with at most this many reals get a full finite-difference cotangent
FULL_FD_MAX = 32
#: random directions used for larger arguments
RANDOM_PROJECTIONS = 2

_NO = NoTangent()


# ----- the test engine ------------------------------------------------------------------------


def fd_pullback_full(g: Callable, *args, **kwargs):
    """A reverse "engine" for testing higher-order rules: ``cr.rrule`` where ``g`` has a rule, else finite differences.

    It has the engine protocol's signature (``(y, pullback)``, ``pullback(dy) -> (dg, dx1, ...)``),
    so ``cr.rrule_via_ad`` reaches it while ``test_rrule`` runs a rule.

    >>> import chainrules as cr
    >>> from chainrules.testing import fd_pullback_full
    >>> y, back = fd_pullback_full(lambda x: x ** 3, 2.0)
    >>> y, round(back(1.0)[1], 8)
    (8.0, 12.0)
    """
    result = rrule(g, *args, **kwargs)
    if result is not None:
        return result
    y = g(*args, **kwargs)
    inputs = (g, *args)

    def call(values):
        return values[0](*values[1:], **kwargs)

    def fd_pullback(dy):
        t = fd_vjp(call, dy, inputs)
        if isinstance(t, AbstractZero):
            return (_NO,) * len(inputs)
        return tuple(t.backing)

    return y, fd_pullback


def fd_pushforward_full(tangents: tuple, g: Callable, *args, **kwargs):
    """The forward "engine" for testing higher-order rules: ``cr.frule`` where ``g`` has one, else finite differences.

    It has the engine protocol's signature (``(y, dy)`` for ``tangents = (dg, dx1, ...)``), so
    ``cr.frule_via_ad`` reaches it while ``test_frule`` runs a rule.

    >>> import chainrules as cr
    >>> from chainrules.testing import fd_pushforward_full
    >>> y, dy = fd_pushforward_full((cr.NoTangent(), 1.0), lambda x: x ** 3, 2.0)
    >>> y, round(dy, 8)
    (8.0, 12.0)
    """
    result = frule(tangents, g, *args, **kwargs)
    if result is not None:
        return result
    return g(*args, **kwargs), fd_jvp(lambda values: values[0](*values[1:], **kwargs), (g, *args), tuple(tangents))


# ----- helpers ---------------------------------------------------------------------------------


def _call(f: Callable, *args, **kwargs):
    return f(*args, **kwargs)


def _labels(f: Callable, n: int) -> list[str]:
    """``the tangent of f itself``, then ``argument 1 (x)``, ... named from f's signature where it has one."""
    names: list[str | None] = [None] * n
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i in range(min(n, len(positional))):
        names[i] = positional[i].name
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    if star is not None:
        for i in range(len(positional), n):
            names[i] = f"*{star}[{i - len(positional)}]"
    labels = [f"the tangent of {_short(f)} itself (the pullback's first entry)"]
    labels += [f"argument {i + 1}" + (f" ({names[i]})" if names[i] else "") for i in range(n)]
    return labels


def _short(f) -> str:
    return callable_name(f)


def _as_input(f: Callable) -> tuple[Any, Callable]:
    """What the testers take as the input ``f`` itself (the tangent of ``f``, the pullback's first
    entry) and how to call ``f`` from it: ``call(that, *args, **kwargs)``. That is ``f``, a callable
    object with fields being perturbed through them; for a bound method of a Python function, its
    object, whose tangent the engines give as the bound method's (docs/engines.md), called through
    the method's function.

    >>> class Scale:
    ...     def __init__(self, a):
    ...         self.a = a
    ...     def times(self, x):
    ...         return self.a * x
    >>> s = Scale(2.0)
    >>> that, call = _as_input(s.times)
    >>> that is s, call(Scale(3.0), 1.5)
    (True, 4.5)
    """
    if type(f) is types.MethodType and type(f.__func__) is types.FunctionType and not isinstance(f.__self__, type):
        return f.__self__, f.__func__
    return f, _call


def _snapshot(values: list) -> list:
    """Deep copies to compare against later (to detect mutation); a value that cannot be copied, or
    whose copy does not compare identical to it, is kept as it is."""
    out = []
    for v in values:
        try:
            c = copy.deepcopy(v)
        except Exception:  # a lock, a generator, an open file: only identity can be compared
            c = v
        # an object holding bound methods or a random generator (a SciPy distribution): its copy
        # differs from it already, so only identity can be compared
        out.append(c if _identical(c, v) else v)
    return out


def _identical(a, b) -> bool:
    """Exact equality of two values, arrays and structures included (NaNs equal NaNs in the same places)."""
    a, b = unthunk(a), unthunk(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, Tangent):
        return _identical(a.backing, b.backing)
    if isinstance(a, (float, np.floating, complex, np.complexfloating)):
        return a == b or (a != a and b != b)
    fields = None if isinstance(a, _OPAQUE) else _object_fields(a)
    if fields is not None:
        return all(_identical(getattr(a, k, None), getattr(b, k, None)) for k in fields)
    try:
        return bool(a == b)
    except Exception:  # no boolean equality: the best we can do is identity
        return a is b


def _mutation_problems(before: list, after: list, labels: list[str], when: str) -> list[str]:
    return [
        f"{label} was mutated {when}; rules must never write into their inputs (copy first)"
        for b, a, label in zip(before, after, labels)
        if not _identical(b, a)
    ]


def _as_float(x):
    """An integer argument as the float it stands for when a rule differentiates it arithmetically."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        return x.astype(np.float64)
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return float(x)
    return x


def _is_int_like(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iu"
    return isinstance(x, (int, np.integer))


def _kind_problems(y, ref, path: str) -> list[str]:
    """Differences in kind (array shape and dtype, structure type, real vs complex) between a rule's primal and f's."""
    y, ref = unthunk(y), unthunk(ref)
    if isinstance(ref, np.ndarray):
        if not isinstance(y, (np.ndarray, np.generic)) or np.shape(y) != ref.shape:
            return [f"{path}: f returns an array of shape {ref.shape}, the rule {describe(y)}"]
        if y.dtype != ref.dtype:
            return [f"{path}: f returns dtype {ref.dtype}, the rule dtype {y.dtype}"]
        return []
    if isinstance(ref, np.generic) and isinstance(y, (np.generic, np.ndarray)) and y.dtype != ref.dtype:
        return [f"{path}: f returns a {ref.dtype} scalar, the rule {describe(y)}"]
    if isinstance(ref, (tuple, list, dict)) or isinstance(ref, Tangent):
        if type(y) is not type(ref):
            return [f"{path}: f returns a {type(ref).__name__}, the rule a {type(y).__name__}"]
        if len(y) != len(ref):
            return [f"{path}: f returns {len(ref)} elements, the rule {len(y)}"]
        if isinstance(ref, dict):
            return [p for k in ref for p in _kind_problems(y.get(k), ref[k], f"{path}[{k!r}]")]
        if isinstance(ref, Tangent):
            return []
        return [p for i, (a, b) in enumerate(zip(y, ref)) for p in _kind_problems(a, b, f"{path}[{i}]")]
    if isinstance(ref, (float, int)) and not isinstance(ref, bool) and isinstance(y, (complex, np.complexfloating)):
        return [f"{path}: f returns a real number, the rule a complex one"]
    return []


# ----- test_rrule ------------------------------------------------------------------------------


class _Report:
    """The problems found so far by one tester call; ``fatal`` stops with everything found."""

    def __init__(self, name: str):
        self.name = name
        self.problems: list[str] = []

    def add(self, problems: list[str]) -> None:
        self.problems += problems

    def fatal(self, problem: str):
        self.problems.append(problem)
        self.finish()

    def finish(self) -> None:
        if self.problems:
            body = "\n".join(f"  - {p}".replace("\n", "\n    ") for p in self.problems)
            raise AssertionError(f"{self.name} failed:\n{body}")

    def run(self, what: str, fn: Callable, *args, **kwargs):
        """``(True, fn(...))``, or ``(False, None)`` with the exception recorded as a problem."""
        try:
            with active_engine(fd_pullback_full), active_forward_engine(fd_pushforward_full):
                # the test engines compute on plain values: a rule's InplaceableThunk is checked as the
                # engines add it outside a nested differentiation, into a plain array (iadd)
                plain = ENGINE_INSTALLED.set(False)
                try:
                    return True, fn(*args, **kwargs)
                finally:
                    ENGINE_INSTALLED.reset(plain)
        except Exception as exc:
            self.problems.append(f"{what} raised {type(exc).__name__}: {exc}")
            return False, None


def _batched_rule(dispatcher, rule, f, primals: list):
    """The rule registered ``batched=True`` that the tester runs for ``f`` at ``primals``, else None:
    the one ``dispatcher`` (``rrule`` or ``frule``) finds, or a ``rule=`` given with a true ``.batched``."""
    found = dispatcher.lookup(f, tuple(primals)) if rule is dispatcher else rule
    return found if getattr(found, "batched", False) else None


def _check_primal(report: _Report, y, y_expected, tol: float) -> None:
    report.add(_kind_problems(y, y_expected, "the primal y"))
    why = "the rule's primal must equal f(*args) to rounding"
    report.add(approx_problems(y, y_expected, tol, tol, "the primal y", why))


# ----- test_rrule ------------------------------------------------------------------------------


def test_rrule(
    f: Callable,
    *args,
    output_tangent=None,
    fkwargs: dict | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    fdm: FiniteDifferenceMethod | None = None,
    check_thunked_output_tangent: bool = True,
    rule: Callable | None = None,
    rng: np.random.Generator | int | None = 0,
    primal_rtol: float | None = None,
) -> None:
    """Check the reverse rule of ``f`` at ``args`` against finite differences and the rule contract.

    ``output_tangent`` is the seed (random by default, see ``rand_tangent``); ``fkwargs`` are
    keyword arguments passed to ``f`` and never differentiated; ``rtol``/``atol`` default by
    dtype (``default_tolerances``); ``fdm`` defaults to ``central_fdm(5, 1, max_range=1e-2)``;
    ``rule`` replaces ``cr.rrule`` (e.g. an engine's ``pullback_full``); ``rng`` seeds the
    random tangents. Wrap an argument in ``nondiff(x)`` to require ``NoTangent()`` for it.
    ``primal_rtol`` is how far (relative to the largest entry) the rule's ``y`` may lie from
    ``f(*args)``: a thousand machine epsilons by default, more for a rule that evaluates ``f``
    another way. Raises ``AssertionError`` listing every failed check; a mismatch with finite differences that
    disagree as much among themselves (at other steps) is marked unsteady: ``f`` is not smooth there.

    When the rule is registered ``batched=True`` (``rule.batched``; for a ``rule`` given here,
    its own ``.batched``) and did not call ``decline_batch()`` for these arguments, its pullback
    is also given batches of cotangents with a leading batch axis, as the engines give them for
    Jacobians: random cotangents (with unit ones after them), a ``BasisSeed`` block of unit
    cotangents and that block scaled per row, one call each; each random row must match the
    pullback of that row alone, and the blocks what the plain batch gave their rows, within
    ``rtol``/``atol`` ("batched pullback mismatch"). This is done for a number or array output
    and for tuples, lists, dicts and namedtuples of them (other structured outputs are skipped;
    the blocks only for a number or array output). See ``chainrules.testing.batched_checks``.

    >>> import operator
    >>> from chainrules.testing import test_rrule, nondiff
    >>> test_rrule(operator.mul, 2.0, 3.0)
    >>> test_rrule(operator.truediv, 1.5, 4.0, output_tangent=2.0)
    """
    report = _Report(f"test_rrule({callable_name(f)})")
    fkwargs = dict(fkwargs or {})
    fdm = fdm or default_fdm()
    rng = as_rng(rng)
    rule = rule or rrule
    primals = [unwrap(a) for a in args]
    marked = [False] + [isinstance(a, NonDifferentiable) for a in args]
    this, call_f = _as_input(f)  # position 0 is f itself: a callable object with fields is differentiable too
    inputs = [this, *primals]
    labels = _labels(f, len(primals))
    n = len(inputs)

    inputs_before, kwargs_before = _snapshot(inputs), _snapshot([fkwargs])
    ok, y_expected = report.run(f"calling {_short(f)} itself", f, *copy.deepcopy(primals), **copy.deepcopy(fkwargs))
    if not ok:
        report.finish()
    declines = batch_declines()
    ok, result = report.run("the rule", rule, f, *primals, **fkwargs)
    if not ok:
        report.finish()
    declined = batch_declines() != declines  # the rule said its pullback cannot take a batch for these arguments
    if result is None:
        report.fatal(f"there is no rrule for {callable_name(f)}({', '.join(type(p).__name__ for p in primals)})")
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        report.fatal(f"the rule must return a pair (y, pullback), got {describe(result)}")
    y, pullback = result
    report.add(_mutation_problems(inputs_before, inputs, labels, "by the rule"))
    report.add(_mutation_problems(kwargs_before, [fkwargs], ["a keyword argument"], "by the rule"))
    inputs_before = _snapshot(inputs)  # (the pullback is blamed only for what it changes itself)
    tol = primal_tolerance(y_expected, *primals) if primal_rtol is None else primal_rtol
    _check_primal(report, y, y_expected, tol)
    y_before = _snapshot([y])
    dy = rand_tangent(y_expected, rng) if output_tangent is None else output_tangent
    dy_before = _snapshot([dy])

    seed_label = ["the seed (output tangent)"]

    def pull(seed, what: str):
        ok, out = report.run(f"the pullback on {what}", pullback, seed)
        if seed_label and not _identical(dy_before[0], dy):
            report.add(_mutation_problems(dy_before, [dy], seed_label, "by the pullback"))
            seed_label.clear()  # reported once
        if not ok:
            return None
        if not isinstance(out, tuple):
            report.fatal(f"the pullback must return a tuple (d{_short(f)}, dx1, ...), got {describe(out)}")
        if len(out) != n:
            report.fatal(
                f"the pullback on {what} returned {len(out)} cotangents; it must return 1 + {n - 1}: "
                f"the tangent of {_short(f)} itself first, then one per positional argument"
            )
        return out

    raw = pull(dy, "the seed")
    if raw is None:
        report.finish()

    # iadd into an owned accumulator (which runs an InplaceableThunk's add_into) must equal add
    for i, t in enumerate(raw):
        if not isinstance(t, InplaceableThunk) and isinstance(unthunk(t), AbstractZero):
            continue
        acc = rand_tangent(_as_float(inputs[i]), rng)
        if isinstance(acc, AbstractZero):
            continue
        ok_add, want = report.run(f"add(accumulator, cotangent of {labels[i]})", add, acc, deep_unthunk(t))
        ok_iadd, got = report.run(f"iadd(accumulator, cotangent of {labels[i]})", iadd, copy.deepcopy(acc), t)
        if ok_add and ok_iadd:
            why = "iadd of the cotangent into an owned accumulator must equal add"
            report.add(approx_problems(got, want, tol, tol, labels[i], why))

    cotangents = [deep_unthunk(t) for t in raw]
    cotangents_before = _snapshot(cotangents)

    fd_inputs: dict[int, Any] = {}
    for i, (x, t) in enumerate(zip(inputs, cotangents)):
        report.add(tangent_problems(x, t, labels[i], nondiff=marked[i]))
        if marked[i]:
            continue
        if _is_int_like(x):
            if not isinstance(t, AbstractZero):
                fd_inputs[i] = _as_float(x)  # an integer the rule treats arithmetically: checked as a float
        elif not must_be_no_tangent(x) and layout(x).size:
            fd_inputs[i] = x
    rtol_default, atol_default = default_tolerances(*(inputs[i] for i in fd_inputs), y_expected)
    rtol = rtol_default if rtol is None else rtol
    atol = atol_default if atol is None else atol
    if not report.problems:  # invalid cotangents cannot be compared meaningfully
        for i, x in fd_inputs.items():
            call = _call_with(call_f, inputs, fkwargs, i)
            ok, found = report.run(
                f"finite differences for {labels[i]}",
                _fd_cotangent_problems,
                call,
                x,
                dy,
                cotangents[i],
                fdm,
                rtol,
                atol,
                labels[i],
                rng,
            )
            if ok:
                report.add(found)

    repeats = [("the same seed a second time", dy, "calling the pullback twice with one seed must give one result")]
    if check_thunked_output_tangent:
        thunked_seed = Thunk(lambda: copy.deepcopy(dy_before[0]))
        repeats.append(("a Thunk-wrapped seed", thunked_seed, "a Thunk-wrapped seed must give the same result"))
    for what, seed, why in repeats:
        out = pull(seed, what)
        if out is not None:
            for i, t in enumerate(out):
                report.add(approx_problems(deep_unthunk(t), cotangents_before[i], tol, tol, labels[i], why))
    y_layout = layout(y_expected)
    if y_layout.size and not report.problems:
        # twice the seed must give twice the cotangents (and leave the first call's results alone)
        doubled_seed = y_layout.tangent(2 * tangent_to_vec(y_expected, dy), 0)
        doubled = pull(doubled_seed, "a doubled seed")
        for i, x in fd_inputs.items() if doubled is not None else ():
            got = tangent_to_vec(x, deep_unthunk(doubled[i]))
            want = 2 * tangent_to_vec(x, cotangents[i])
            why = "the pullback must be linear in the seed: pullback(2 dy) must equal 2 pullback(dy)"
            report.add(approx_problems(got, want, tol, tol, labels[i], why))
    zeros = pull(ZeroTangent(), "a ZeroTangent() seed")
    for i, t in enumerate(zeros or ()):
        # (a thunk is computed here: one that fails on the zero seed is reported, not raised)
        ok, zero = report.run(f"unthunking {labels[i]} from a ZeroTangent() seed", is_zero_tangent, t)
        if ok and not zero:
            report.add([f"{labels[i]}: a ZeroTangent() seed must give a zero cotangent, got {describe(unthunk(t))}"])
    batched = _batched_rule(rrule, rule, f, primals)
    if batched is not None and not declined:
        # a batch of cotangents at once must give, row by row, what each row alone gives
        known = (dy, cotangents) if output_tangent is None else None  # the tester's random seed: the first row
        found = batched_pullback_problems(
            report.run, pullback, batched, y_expected, inputs, labels, rtol, atol, rng, known
        )
        report.add(found)

    report.add(_mutation_problems(inputs_before, inputs, labels, "by the pullback"))
    report.add(_mutation_problems(dy_before, [dy], seed_label, "by the pullback"))
    report.add(_mutation_problems(y_before, [y], ["the primal output y"], "by the pullback"))
    report.add(
        [
            f"{label}: the cotangent returned by the first call was changed by later calls of the pullback "
            "(return a fresh array from each call)"
            for label, b, a in zip(labels, cotangents_before, cotangents)
            if not _identical(b, a)
        ]
    )
    report.finish()


test_rrule.__test__ = False  # a library function, not a test: pytest must not collect it where it is imported


def _fresh(a):
    """A copy of a mutable argument, so that a function that writes into it cannot change the next call."""
    if type(a) is np.ndarray:
        return a.copy()
    return copy.deepcopy(a) if isinstance(a, (list, dict)) else a


def _call_with(call_f: Callable, inputs, fkwargs, i):
    """``v -> f(*args)`` with input ``i`` replaced by ``v`` (0 is ``f`` itself, called by ``call_f``:
    see ``_as_input``); mutable inputs copied per call."""
    fixed = list(inputs)

    def call(v):
        values = [_fresh(a) for a in fixed]
        values[i] = v
        return call_f(*values, **fkwargs)

    return call


def _unsteady_note(estimate: Callable, primal, got, expected, fdm: FiniteDifferenceMethod) -> str:
    """Where a rule and finite differences disagree: a note when finite differences at two fixed
    steps (the default one and one about six times smaller) disagree with the adaptive estimate as
    much as the rule does. Then the function is not smooth at the scale of the steps (LAPACK's
    choice of an eigenvector's sign or phase is rounding noise, a branch cut, a tie) and the
    adaptive step selection reads the jumps as a huge derivative; the comparison cannot judge the
    rule. Empty when the estimates agree (the rule is the one at fault) or cannot be had."""
    try:
        want = tangent_to_vec(primal, expected)
        mismatch = float(np.max(np.abs(tangent_to_vec(primal, got) - want), initial=0.0))
        others = [
            tangent_to_vec(primal, estimate(central_fdm(5, 1, adapt=0, condition=c, max_range=fdm.max_range)))
            for c in (10.0, 1e5)
        ]
    except Exception:
        return ""
    spread = max(float(np.max(np.abs(v - w), initial=0.0)) for v in others for w in (want, *others))
    if not (math.isfinite(spread) and spread >= 0.5 * mismatch > 0):
        return ""
    return (
        f"\n    (finite differences are unsteady here: at two fixed steps they give values {spread:.3g} apart, as far "
        "as the rule's mismatch; the function is not smooth at this scale, e.g. an eigenvector's sign or phase "
        "chosen by LAPACK, so this comparison cannot judge the rule: check a smooth function of the output, such "
        "as the eigenvectors with their signs aligned to a reference, or V diag(c) V^H)"
    )


def _fd_cotangent_problems(call, x, dy, cotangent, fdm, rtol, atol, label, rng) -> list[str]:
    why = "the cotangent does not match finite differences"
    x_layout = layout(x)
    if x_layout.size <= FULL_FD_MAX:
        expected = fd_vjp(call, dy, x, fdm)
        problems = approx_problems(cotangent, expected, rtol, atol, label, why)
        if problems:
            problems[-1] += _unsteady_note(lambda m: fd_vjp(call, dy, x, m), x, cotangent, expected, fdm)
        return problems
    # A large argument: compare <dy, J u> by a finite-difference JVP with <cotangent, u> for random u.
    y_layout = layout(call(x))
    dy_vec = np.zeros(y_layout.size)
    y_layout.pack(dy, dy_vec, 0, "the seed")
    cot_vec = np.zeros(x_layout.size)
    x_layout.pack(cotangent, cot_vec, 0, label)
    for _ in range(RANDOM_PROJECTIONS):
        u = rng.standard_normal(x_layout.size)
        jvp_vec = np.zeros(y_layout.size)
        y_layout.pack(fd_jvp(call, x, x_layout.tangent(u, 0), fdm), jvp_vec, 0, "the JVP")
        expected, got = float(dy_vec @ jvp_vec), float(cot_vec @ u)
        scale = max(abs(expected), abs(got), float(np.linalg.norm(dy_vec) * np.linalg.norm(jvp_vec)))
        if not (math.isfinite(got) and abs(got - expected) <= max(atol, rtol * scale)):
            return [
                f"{label}: {why} along a random direction u: <cotangent, u> = {got:.12g}, finite differences "
                f"<dy, J u> = {expected:.12g}\n    abs error {abs(got - expected):.3g}, rel error "
                f"{abs(got - expected) / max(abs(expected), 1e-300):.3g} (rtol={rtol:g}, atol={atol:g} relative to "
                f"{scale:.3g}; the argument has {x_layout.size} reals, more than {FULL_FD_MAX}, so it is checked "
                "by random projections)"
            ]
    return []


# ----- test_frule ------------------------------------------------------------------------------


def test_frule(
    f: Callable,
    *args,
    tangents: tuple | None = None,
    fkwargs: dict | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    fdm: FiniteDifferenceMethod | None = None,
    rule: Callable | None = None,
    rng: np.random.Generator | int | None = 0,
    primal_rtol: float | None = None,
) -> None:
    """Check the forward rule of ``f`` at ``args`` against a finite-difference JVP and the rule contract.

    ``tangents`` gives one tangent per positional argument (or ``(df, dx1, ...)`` with the
    tangent of ``f`` first); random by default, ``NoTangent()`` for arguments that cannot be
    perturbed or are wrapped in ``nondiff``. Checks: the rule exists and returns ``(y, dy)``;
    ``y`` equals ``f(*args)`` to rounding; ``dy`` is a valid tangent of ``y`` and matches finite
    differences; zero input tangents give a zero ``dy``; ``iadd`` of ``dy`` into an owned
    accumulator equals ``add``; neither the arguments nor the tangents are mutated (``primal_rtol`` as
    in ``test_rrule``). A mismatch with
    finite differences that disagree as much among themselves is marked unsteady, as in ``test_rrule``.

    When the rule is registered ``batched=True`` (``rule.batched``; for a ``rule`` given here,
    its own ``.batched``), it is also given batches of tangents with a leading batch axis, as the
    forward engine gives them: random tangents per perturbed argument (with unit ones after
    them), the ``BasisSeed`` blocks of unit tangents ``cr.jacobian`` seeds the number and array
    arguments with, and those blocks scaled per row, one call each (``NoTangent()`` for the
    tangent of ``f`` itself); each random row of the output tangent must match the rule given
    that row alone, and the blocks what the plain batch gave their rows, within
    ``rtol``/``atol`` ("batched pushforward mismatch"). Arguments that are numbers, arrays, or
    tuples, lists, dicts and namedtuples of them are batched (others get a zero tangent; the
    blocks go to number and array arguments only). As the forward engine does, an output tangent
    left broadcastable is broadcast, one that lost the batch axis is not compared (the engine
    pushes such a rule's rows one at a time), and an operator's rule (``operator.mul``, ``pow``,
    ...) is given batches at Python numbers only (on NumPy values the engine runs the ufunc's
    rule). See ``chainrules.testing.batched_checks``.

    >>> import math
    >>> from chainrules.testing import test_frule
    >>> test_frule(math.sin, 0.5)
    >>> test_frule(math.exp, 0.5, tangents=(2.0,))
    """
    report = _Report(f"test_frule({callable_name(f)})")
    fkwargs = dict(fkwargs or {})
    fdm = fdm or default_fdm()
    rng = as_rng(rng)
    rule = rule or frule
    primals = [unwrap(a) for a in args]
    marked = [False] + [isinstance(a, NonDifferentiable) for a in args]
    this, call_f = _as_input(f)
    inputs = [this, *primals]
    labels = _labels(f, len(primals))
    n = len(inputs)
    if tangents is None:
        all_tangents = [_NO if m else rand_tangent(x, rng) for x, m in zip(inputs, marked)]
    else:
        tangents = tuple(tangents)
        if len(tangents) == n - 1:
            tangents = (rand_tangent(this, rng), *tangents)
        if len(tangents) != n:
            raise ValueError(f"{report.name}: {len(tangents)} tangents for {n - 1} arguments (give one per argument)")
        all_tangents = list(tangents)
    inputs_before, tangents_before = _snapshot(inputs), _snapshot(all_tangents)
    ok, y_expected = report.run(f"calling {_short(f)} itself", f, *copy.deepcopy(primals), **copy.deepcopy(fkwargs))
    if not ok:
        report.finish()
    ok, result = report.run("the rule", rule, tuple(all_tangents), f, *primals, **fkwargs)
    if not ok:
        report.finish()
    if result is None:
        report.fatal(f"there is no frule for {callable_name(f)}({', '.join(type(p).__name__ for p in primals)})")
    if not (isinstance(result, tuple) and len(result) == 2):
        report.fatal(f"the rule must return a pair (y, dy), got {describe(result)}")
    y, dy = result
    tol = primal_tolerance(y_expected, *primals) if primal_rtol is None else primal_rtol
    _check_primal(report, y, y_expected, tol)
    report.add(_mutation_problems(inputs_before, inputs, labels, "by the rule"))
    tangent_labels = [f"the tangent of {label}" for label in labels]
    report.add(_mutation_problems(tangents_before, all_tangents, tangent_labels, "by the rule"))
    dy_value = deep_unthunk(dy)
    report.add(tangent_problems(y_expected, dy_value, "the output tangent dy", top=False))

    # finite differences along the given tangents; an integer given a float tangent moves as a float
    fd_x, fd_dx = [], []
    for x, t, m in zip(inputs, all_tangents, marked):
        t_value = unthunk(t)
        if m or isinstance(t_value, AbstractZero) or (must_be_no_tangent(x) and not _is_int_like(x)):
            fd_x.append(nondiff(x))
            fd_dx.append(_NO)
        else:
            fd_x.append(_as_float(x))
            fd_dx.append(t_value)
    moved = [x for x in fd_x if not isinstance(x, NonDifferentiable)]
    rtol_default, atol_default = default_tolerances(*moved, y_expected)
    rtol = rtol_default if rtol is None else rtol
    atol = atol_default if atol is None else atol

    def call(values):
        return call_f(*[unwrap(v) for v in values], **fkwargs)

    if not report.problems:
        ok, expected = report.run("finite differences", fd_jvp, call, tuple(fd_x), tuple(fd_dx), fdm)
        if ok:
            why = "the output tangent does not match finite differences"
            problems = approx_problems(dy_value, expected, rtol, atol, "the output tangent dy", why)
            if problems:
                estimate = lambda m: fd_jvp(call, tuple(fd_x), tuple(fd_dx), m)  # noqa: E731
                problems[-1] += _unsteady_note(estimate, y_expected, dy_value, expected, fdm)
            report.add(problems)

    zero_tangents = tuple(_NO if (m or must_be_no_tangent(x)) else ZeroTangent() for x, m in zip(inputs, marked))
    ok, zero_result = report.run("the rule with zero tangents", rule, zero_tangents, f, *primals, **fkwargs)
    if ok and not is_zero_tangent(zero_result[1]):
        got = describe(unthunk(zero_result[1]))
        report.add([f"the output tangent for zero input tangents must be zero, got {got}"])

    acc = rand_tangent(y_expected, rng)
    if not isinstance(dy_value, AbstractZero) and not isinstance(acc, AbstractZero):
        ok_add, want = report.run("add(accumulator, dy)", add, acc, dy_value)
        ok_iadd, got = report.run("iadd(accumulator, dy)", iadd, copy.deepcopy(acc), dy)
        if ok_add and ok_iadd:
            why = "iadd of dy into an owned accumulator must equal add"
            report.add(approx_problems(got, want, tol, tol, "the output tangent dy", why))

    batched = _batched_rule(frule, rule, f, primals)
    if batched is not None:
        # a batch of tangents at once must give, row by row, what each row alone gives
        found = batched_pushforward_problems(
            report.run, rule, batched, f, primals, fkwargs, all_tangents, marked, y_expected, rtol, atol, rng, dy
        )
        report.add(found)
    report.finish()


test_frule.__test__ = False


# ----- test_scalar -----------------------------------------------------------------------------


def test_scalar(
    f: Callable,
    x,
    *,
    holomorphic: bool = False,
    fkwargs: dict | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    fdm: FiniteDifferenceMethod | None = None,
) -> None:
    """Check both rules of a scalar function ``f`` at ``x``: unit and random seeds, real and complex.

    For a real ``x``: ``test_frule`` with tangent 1 and a random one, ``test_rrule`` with
    cotangent 1 and a random one. With ``holomorphic=True`` (or a complex ``x``) the same runs at
    a complex point (``x + 0.5j`` for a real ``x``) with the tangents 1 and ``1j``, and
    cotangents 1 and ``1j`` when the output is complex.

    >>> import math, operator
    >>> from chainrules.testing import test_scalar
    >>> test_scalar(math.sin, 0.5)
    >>> test_scalar(operator.neg, 1.5, holomorphic=True)
    """
    options = {"fkwargs": fkwargs, "rtol": rtol, "atol": atol, "fdm": fdm}
    points = [x]
    if not isinstance(x, (complex, np.complexfloating)) and holomorphic:
        points.append(complex(x, 0.5))
    for z in points:
        is_complex = isinstance(z, (complex, np.complexfloating))
        for t in (1.0, 1j) if is_complex else (1.0,):
            test_frule(f, z, tangents=(type(z)(t) if is_complex else t,), **options)
        test_frule(f, z, **options)
        y = f(z, **(fkwargs or {}))
        for seed in (1.0, 1j) if isinstance(y, (complex, np.complexfloating)) else (1.0,):
            test_rrule(f, z, output_tangent=seed, **options)
        test_rrule(f, z, **options)


test_scalar.__test__ = False

__all__ = [
    "FULL_FD_MAX",
    "RANDOM_PROJECTIONS",
    "fd_pullback_full",
    "fd_pushforward_full",
    "test_frule",
    "test_rrule",
    "test_scalar",
]
