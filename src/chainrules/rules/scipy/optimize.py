"""Rules for ``scipy.optimize``'s root finders, by the implicit function theorem.

The root ``x`` of ``F(x, *args) = 0`` that a solver returns moves with ``args`` (and with what
``F`` closes over) through the equation alone, not through the solver's steps: with
``J = ∂F/∂x`` at the root, ``dx = -J⁻¹ (∂F/∂args · d args)`` (the implicit function theorem, as
in Griewank & Walther, "Evaluating Derivatives", 2nd ed., ch. 15, and Blondel et al. 2022,
"Efficient and modular implicit differentiation"). Each rule runs the solver as SciPy does, then
differentiates ``F`` at the root, by its rule or else by the running reverse engine (as ``map``'s
callable is). ``J`` comes from pullbacks of ``F``: one for a scalar root, one in all for
``newton``'s elementwise roots of an array, one per entry for ``fsolve`` and ``root``. The
pullback of ``x̄`` solves ``Jᵀ λ = x̄`` and pulls ``-λ`` back through ``F``, which gives the
cotangents of ``args`` and of ``F`` itself (what it closes over). The bracket, the starting
point and the solver's settings get none: the root does not move with them.

Where ``F``'s values carry an outer differentiation's derivatives (forward mode, which runs a
function calling a solver as the source engine's primal; a Hessian's dual numbers), the solver
runs on their plain values and Newton steps from its root, ``x - J⁻¹ F(x)`` computed on the
engine's values, give the root its derivatives: exactly, since ``F(x) = 0`` at the root (one
step for first derivatives; each step doubles the order that is exact, so two serve up to third
derivatives). The pullback differentiates ``F`` at that root, so Hessians are exact as well.

A solver that reports no convergence returns no root: differentiating its result raises,
naming the solver, rather than giving a derivative of the equation at a point that is not a
root. So does a root where ``J`` is singular (a double root), where ``x`` does not move smoothly.

>>> import scipy.optimize as so, chainrules as cr
>>> def cube_root(c):
...     return so.brentq(lambda x, c: x**3 - c, 0.0, 3.0, args=(c,))
>>> g, = cr.gradient(cube_root, 8.0)  # d c^(1/3) / dc = 1 / (3 c^(2/3)) = 1/12 at c = 8
>>> round(g, 10)
0.0833333333
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.optimize as so

from ...core import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk
from ...core.active import nesting_depth, stood_for
from ...core.errors import NoDerivativeError, at_user
from ...core.structures import item_tangents
from ..pyfunctional import _pullback_of
from ._functionals import FunctionalCall

_NO = NoTangent()
_ZERO = ZeroTangent()


# ----- the root of F(x, *args) = 0 and its derivatives ----------------------------------------


class _Linearized:
    """``F`` at ``x``: its value ``y``, its pullback, and ``J = ∂F/∂x`` read from pullbacks (a number
    for a scalar root, the diagonal for elementwise roots, else the matrix ``J[i] = ∂F_i/∂x``),
    computed when first needed.

    ``fixed`` (a mask of ``x``'s entries, or a bool for a number) marks entries held where they are
    (a minimizer's bound that holds at the optimum): their equations are ``x_i = x*_i`` in place of
    ``F_i = 0``, so they do not move and ``F_i`` takes no part."""

    def __init__(self, solver, F, x, args: tuple, layout: str, pair: bool = False, fixed=None, mapping=False):
        self.solver, self.layout, self.x = solver, layout, x
        self.y, self.back = _pullback_of(F, x, *args)
        if pair:  # F returns (F(x), J(x)) (``root``'s ``jac=True``): its first output is the equation
            self.y, self.back = self.y[0], functools.partial(first_of_pair, self.back)
        if mapping:  # F is a map whose fixed point is sought: the equation is F(x) - x = 0
            self.y, back = self.y - x, self.back
            self.back = functools.partial(_minus_identity, back)
        self.fixed = None if fixed is None or not np.any(fixed) else np.asarray(fixed, dtype=float)
        if self.fixed is not None:
            free, back = 1.0 - self.fixed, self.back
            self.y = self.y * free
            self.back = lambda dy: back(dy * free)
        if np.shape(self.y) != np.shape(x) and not (layout == "dense" and np.size(self.y) == np.size(x)):
            raise NoDerivativeError(
                f"{_name(solver)}{at_user()}: the function returned shape {np.shape(self.y)} at a root of shape "
                f"{np.shape(x)}; a root of F(x) = 0 needs as many equations as unknowns"
            )
        self._J = None

    def _dx(self, cotangent):
        d = unthunk(self.back(cotangent)[1])
        return np.zeros(np.shape(self.x)) if isinstance(d, AbstractZero) else d

    @property
    def J(self):
        if self._J is None:
            if self.layout == "scalar":
                self._J = self._dx(1.0)
            elif self.layout == "elementwise":
                self._J = self._dx(np.ones(np.shape(self.y)))
            else:
                n, shape = int(np.size(self.y)), np.shape(self.y)
                units = np.eye(n)
                self._J = np.stack([np.reshape(self._dx(np.reshape(units[i], shape)), (n,)) for i in range(n)])
            if self.fixed is not None:  # a held entry's equation x_i = x*_i: a unit row
                self._J = self._J + (np.diag(np.ravel(self.fixed)) if self.layout == "dense" else self.fixed)
            self._check_regular()
        return self._J

    def _check_regular(self) -> None:
        J = stood_for(self._J)
        if self.layout == "dense":
            regular = bool(np.all(np.isfinite(J))) and np.linalg.cond(J) < 1 / np.finfo(float).eps
        else:
            regular = bool(np.all(np.isfinite(J)) and np.all(J != 0))
        if not regular:
            raise NoDerivativeError(
                f"{_name(self.solver)}{at_user()}: ∂F/∂x is singular at the root (a multiple root, or an "
                "equation that does not depend on x there), so the root does not move smoothly with the arguments"
            )

    def solve(self, r, transposed: bool = False):
        """``J⁻¹ r`` (``J⁻ᵀ r`` when ``transposed``), shaped like the root."""
        J = self.J
        if self.layout != "dense":
            return r / J
        n = int(np.size(self.x))
        return np.reshape(np.linalg.solve(J.T if transposed else J, np.reshape(r, (n,))), np.shape(self.x))


def first_of_pair(back, dy) -> tuple:
    """The pullback of a pair's first output from the pair's (``(F(x), J(x))``, ``(f(x), ∇f(x))``)."""
    return back(Tangent[tuple](dy, _ZERO))


def _minus_identity(back, dy) -> tuple:
    """The pullback of ``F(x) - x`` from ``F``'s: ``x``'s cotangent less ``dy``."""
    d = list(back(dy))
    dx = unthunk(d[1])
    d[1] = -dy if isinstance(dx, AbstractZero) else dx - dy
    return tuple(d)


def _name(solver) -> str:
    return f"scipy.optimize.{solver.__name__}"


def _differentiated_root(
    solver, F, x, args: tuple, layout: str, pair: bool, unconverged: str | None = None, fixed=None, mapping=False
):
    """``(x, pullback)``: the solver's root ``x`` of ``F(x, *args) = 0`` (plain) with the derivatives
    the arguments' engines carry, and ``pullback(x̄) -> (dF, d_args)``, ``d_args`` a tuple; ``pair``:
    ``F`` returns ``(F(x), J(x))``. ``unconverged``: why the solver failed, which refuses the
    derivatives (at once where an engine's values want them now: forward mode, a Hessian).
    ``fixed``: entries held where they are (see ``_Linearized``); ``mapping``: ``F`` is a map whose
    fixed point ``x`` is (``F(x) - x = 0``)."""
    at = _Linearized(solver, F, x, args, layout, pair, fixed, mapping)
    if unconverged is not None:
        error = _not_converged(solver, unconverged)
        if nesting_depth(at.y):
            raise error

        def refused_pullback(dx):
            raise error

        return x, refused_pullback
    for _ in range(math.ceil(math.log2(nesting_depth(at.y) + 1))):  # Newton steps: see the module docstring
        x = x - at.solve(at.y)
        at = _Linearized(solver, F, x, args, layout, pair, fixed, mapping)

    def root_pullback(dx):
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return _NO, (_ZERO,) * len(args)
        d = at.back(-at.solve(dx, transposed=True))
        return d[0], tuple(d[2 : 2 + len(args)])

    return x, root_pullback


def _not_converged(solver, why: str) -> NoDerivativeError:
    return NoDerivativeError(
        f"{_name(solver)}{at_user()} did not converge ({why}): its result is not a root of the equation, so "
        "the implicit function theorem gives it no derivative; give the solver a tolerance it can reach or start it "
        "closer to the root"
    )


# ----- the solvers' calls: arguments, settings, results ----------------------------------------


def _root_rule(
    solver, call: FunctionalCall, x, converged: bool, why: str, layout: str, pair: bool = False, mapping=False
):
    """``(x, pullback)`` for the root ``x`` a solver returned, ``pullback(x̄)`` giving the call's cotangents."""
    unconverged = None if converged else why
    x, back = _differentiated_root(solver, call.F, x, call.args, layout, pair, unconverged, None, mapping)

    def solver_pullback(dx):
        return call.cotangents(*back(dx))

    return x, solver_pullback


# ----- the rules -----------------------------------------------------------------------------


def _bracketing_rule(solver):
    def rrule_bracketing(f, *rest, **keywords):
        """A root of ``f(x, *args)`` in the bracket ``[a, b]``, a float (with ``full_output=True``,
        ``(x, RootResults)``); differentiated in ``args`` and what ``f`` closes over."""
        call = FunctionalCall(solver, f, rest, keywords)
        x, r = call.run(full_output=True)
        x, back = _root_rule(solver, call, x, r.converged, r.flag, "scalar")
        if not call.setting("full_output"):
            return x, back
        out = (x, r)
        return out, lambda dy: back(item_tangents(dy, out)[0])

    rrule_bracketing.__name__ = f"rrule_{solver.__name__}"
    return rrule_bracketing


for _solver in (so.brentq, so.brenth, so.ridder, so.bisect, so.toms748):
    rrule.register(_solver)(_bracketing_rule(_solver))


@rrule.register(so.newton)
def rrule_newton(func, *rest, **keywords):
    """``newton``'s root of ``func(x, *args)``: a number, or for an array ``x0`` the elementwise roots
    of an elementwise ``func`` (SciPy's vectorized Newton), each differentiated on its own."""
    call = FunctionalCall(so.newton, func, rest, keywords)
    scalar = np.ndim(stood_for(call.bound["x0"])) == 0
    found = call.run(full_output=True)
    if scalar:
        x, r = found
        converged, why = r.converged, r.flag
    else:
        x, converged, _ = found
        converged, why = bool(np.all(converged)), f"{int(np.sum(~converged))} of {np.size(x)} roots unconverged"
    x, back = _root_rule(so.newton, call, x, converged, why, "scalar" if scalar else "elementwise")
    if not call.setting("full_output"):
        return x, back
    out = (x, *found[1:])
    return out, lambda dy: back(item_tangents(dy, out)[0])


@rrule.register(so.root_scalar)
def rrule_root_scalar(f, *rest, **keywords):
    """``root_scalar``'s ``RootResults``: its ``root`` differentiated in ``args`` and what ``f`` closes over."""
    call = FunctionalCall(so.root_scalar, f, rest, keywords)
    r = call.run()
    x, back = _root_rule(so.root_scalar, call, r.root, r.converged, r.flag, "scalar")
    r.root = x
    return r, lambda dy: back(item_tangents(dy, r)["root"])


@rrule.register(so.fsolve)
def rrule_fsolve(func, *rest, **keywords):
    """``fsolve``'s root of ``func(x, *args)`` (a 1-d array, as SciPy returns it; with
    ``full_output``, ``(x, infodict, ier, mesg)``)."""
    call = FunctionalCall(so.fsolve, func, rest, keywords)
    x, info, ier, message = call.run(full_output=True)
    x, back = _root_rule(so.fsolve, call, x, ier == 1, message, "dense")
    if not call.setting("full_output"):
        return x, back
    out = (x, info, ier, message)
    return out, lambda dy: back(item_tangents(dy, out)[0])


@rrule.register(so.root)
def rrule_root(fun, *rest, **keywords):
    """``root``'s ``OptimizeResult``: its ``x`` differentiated in ``args`` and what ``fun`` closes over
    (with ``jac=True``, ``fun`` returns ``(F, J)``; ``F`` is differentiated)."""
    call = FunctionalCall(so.root, fun, rest, keywords)
    result = call.run()
    pair = call.setting("jac") is True
    x, back = _root_rule(so.root, call, result.x, bool(result.success), result.message, "dense", pair)
    result.x = x
    return result, lambda dy: back(item_tangents(dy, result)["x"])


@rrule.register(so.OptimizeResult.__getattr__)
def rrule_result_field(result, name: str):
    """A field of a SciPy result read as an attribute (``OptimizeResult.x``, ``RootResults.root``):
    the item of the dict the result is."""
    y = result[name]

    def result_field_pullback(dy):
        dy = unthunk(dy)
        d_result = dy if isinstance(dy, AbstractZero) else Tangent[type(result)](**{name: dy})
        return _NO, d_result, _NO

    return y, result_field_pullback


@rrule.register(so.fixed_point)
def rrule_fixed_point(func, *rest, **keywords):
    """``fixed_point``'s ``x = func(x, *args)`` (a number, or an array of a coupled map), the root of
    ``func(x) - x``: differentiated in ``args`` and what ``func`` closes over. SciPy raises its own
    error where the iteration does not converge.

    >>> import numpy as np, scipy.optimize as so, chainrules as cr
    >>> def dottie(c):  # x = c cos x
    ...     return so.fixed_point(lambda x, c: c * np.cos(x), 0.5, args=(c,))
    >>> x = dottie(1.0)
    >>> bool(np.isclose(cr.gradient(dottie, 1.0)[0], np.cos(x) / (1 + np.sin(x))))
    True
    """
    call = FunctionalCall(so.fixed_point, func, rest, keywords)
    x = call.run()
    layout = "scalar" if np.ndim(x) == 0 else "dense"
    return _root_rule(so.fixed_point, call, x, True, "", layout, mapping=True)

