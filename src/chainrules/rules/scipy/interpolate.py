"""Rules for ``scipy.interpolate``: splines fitted to values being differentiated, and their evaluation.

An interpolant is an object built from the values (``CubicSpline(x, y)``, ``make_interp_spline``,
``interp1d``, ``RegularGridInterpolator``) whose calls are then differentiated: the constructor's
rule returns the object, and its tangent is structural, ``Tangent[CubicSpline](_c=dc)``, the
tangent of the coefficients the object keeps; the rule for the calls of the object's instances
takes that tangent to the values. For fixed knots both steps are linear:

- evaluation is linear in the coefficients: a piecewise polynomial's value at ``t`` in interval
  ``i`` is ``sum_p c[p, i] (t - x[i])**(k - p)`` (its ``nu``-th derivative likewise), a B-spline's
  ``sum_j c[j] B_j(t)`` (``BSpline.design_matrix``; its derivatives are the design matrix of the
  differentiated knots times the differences of the coefficients). In the points ``t`` the
  derivative is the interpolant's own, ``s(t, nu + 1)``;
- the coefficients of an interpolating spline are linear in the values ``y``: they solve the
  interpolation and boundary conditions ``K c = E y + b`` (for a cubic spline: its values at both
  ends of each interval, continuity of the first and second derivatives at the inner knots, and
  the two boundary conditions; for a B-spline: its values at ``x`` and the derivative conditions
  at the ends), with ``K`` factorized once (SuperLU). The pushforward is ``K⁻¹ E ẏ`` and the
  pullback ``Eᵀ K⁻ᵀ c̄``: exact, where the dense map would cost O(n²).

A spline's derivatives, antiderivatives and integrals (``s.derivative(nu)``, ``s.antiderivative(nu)``,
``s.integrate(a, b)``) are linear in its coefficients too; an integral's derivative in a bound is the
integrand there (negated for ``a``).

``PchipInterpolator`` is not linear in its values: its slopes are limited (zero at an extremum, a
weighted harmonic mean of the secants elsewhere, one-sided estimates at the ends), smooth between the
switches of the limits, where its rules linearize it (``_PchipFit``); so are ``Akima1DInterpolator``'s,
weighted means of the secants around each knot (``_AkimaFit``). A ``RegularGridInterpolator``
with ``method='linear'`` is multilinear: each output is a weighted sum of the values at the corners of
its cell (``interpn`` is one called once). ``interp1d`` of kind ``'linear'`` is the B-spline of degree
1 on its values; its spline kinds keep the B-spline ``make_interp_spline`` made. An ``RBFInterpolator``'s
coefficients solve a linear system in its values, and its calls are its kernel and monomials at the
points times them. ``splrep`` with knots the values do not choose (``s=0``, or ``task=-1``) is a weighted
least-squares fit on them, linear in the values, and ``splev`` a B-spline's call.

The knots (the ``x`` of a fit, a grid's points; a spline's own breakpoints are, in its calls) are not
differentiated: their cotangent raises when an engine reads it, which it does for a value being
differentiated, never for a constant (a ``RefusedThunk``, which sums keep unread). So does the values'
cotangent of ``interp1d``'s piecewise constant kinds, of a grid's other methods, and of a periodic
B-spline fit.

An engine's values (forward mode run through the source engine, a Hessian's dual numbers) reach
the constructors' reverse rules: the object holds coefficients carrying them (``c + K⁻¹ E (y -
y₀)``), and its calls go through the calls' forward rules.

>>> import numpy as np, scipy.interpolate as si, chainrules as cr
>>> x = np.linspace(0.0, 3.0, 7)
>>> def energy(y):
...     s = si.CubicSpline(x, y)
...     return np.sum(s(np.linspace(0.0, 3.0, 31)) ** 2)
>>> g, = cr.gradient(energy, np.sin(x))
>>> g.shape
(7,)
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import scipy.interpolate as si
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ...core import (
    AbstractZero,
    NoDerivativeError,
    NoTangent,
    ProjectTo,
    Tangent,
    Thunk,
    ZeroTangent,
    callable_name,
    frule,
    rrule,
    unthunk,
    user_location,
)
from ...core.active import nesting_depth, stood_for
from ...core.errors import option_refused
from ...core.ruled_calls import engine_values_in
from ...core.structures import item_tangents, with_fields
from ...core.tangents import RefusedThunk
from ..numpy._arrays import scatter_add, tangent_array, to_input
from .sparse import _solve, _times

_NO = NoTangent()
_ZERO = ZeroTangent()
_FLOAT = np.dtype(np.float64)


# ----- shared plumbing ---------------------------------------------------------------------


def _is_zero(t) -> bool:
    return isinstance(t, AbstractZero)


def _engine_value(*values):
    """The first engine's value (a dual number) among ``values``, their containers and fields, or None."""
    return next(engine_values_in(values, 4), None)


def _by_engine(owner, f, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)`` run by the engine of ``owner`` (one of its values, in the arguments or in
    the fields of the object ``f``): through ``f``'s forward rule, which carries what they carry."""
    y = owner.call_by_rule(f, args, kwargs)
    if y is NotImplemented:
        raise NoDerivativeError(f"{callable_name(type(f))}: this engine cannot run it on its values{_at()}")
    return y


def _at(location: str | None = None) -> str:
    location = user_location() if location is None else location
    return f" at {location}" if location else ""


def _refusal(f, location: str | None, reason: str) -> NoDerivativeError:
    return NoDerivativeError(f"{callable_name(f)}{_at(location)}: {reason}")


def _refused(f, location: str | None, reason: str) -> Thunk:
    """A cotangent that raises when an engine reads it: for an argument being differentiated, never a constant."""

    def refused():
        raise _refusal(f, location, reason)

    return RefusedThunk(refused)


_KNOTS = (
    "the interpolant is differentiated in the values it fits and in the points it is evaluated at, not in "
    "its knots or grid: take them from outside the function being differentiated (a closure or a global)"
)


_SETTINGS = (
    "the interpolant is differentiated in the values it fits and in the points it is evaluated at, not in "
    "its settings (interp1d's fill_value, the derivatives bc_type gives at the ends): take them from outside "
    "the function being differentiated (a closure or a global)"
)


def _no_knot_tangent(f, dx, reason: str = _KNOTS) -> None:
    """Refuse a tangent of the knots, or of another argument the rules do not differentiate (forward mode)."""
    dx = unthunk(dx)
    if not _is_zero(dx) and not (isinstance(dx, np.ndarray | float | int) and not np.any(dx)):
        raise _refusal(f, None, reason)


def _columns(y, axis: int):
    """``y`` with its interpolation ``axis`` first, as a matrix (points, columns)."""
    y = np.moveaxis(y, axis, 0)
    return np.reshape(y, (np.shape(y)[0], -1))


def _uncolumns(y2, shape: tuple, axis: int):
    """The inverse of ``_columns`` for an array of ``shape``."""
    moved = (shape[axis], *shape[:axis], *shape[axis + 1 :])
    return np.moveaxis(np.reshape(y2, moved), 0, axis)


def _arranged(y2, t_shape: tuple, extra: tuple, axis: int):
    """Values at the points, ``(points, columns)``, laid out as SciPy returns them: the points' shape
    in place of the interpolation ``axis`` among the ``extra`` axes of the values."""
    y = np.reshape(y2, (*t_shape, *extra))
    if axis == 0 or not t_shape:
        return y
    nt = len(t_shape)
    return np.transpose(y, _order(nt, len(extra), axis))


def _arranged_columns(dy, t_shape: tuple, extra: tuple, axis: int):
    """The inverse of ``_arranged``: a cotangent of the call's output as ``(points, columns)``."""
    if axis != 0 and t_shape:
        dy = np.transpose(dy, np.argsort(_order(len(t_shape), len(extra), axis)))
    return np.reshape(dy, (int(np.prod(t_shape, dtype=int)), -1))


def _order(nt: int, ne: int, axis: int) -> list:
    return [*range(nt, nt + axis), *range(nt), *range(nt + axis, nt + ne)]


def _points(t) -> np.ndarray:
    """The evaluation points as SciPy reads them: flat float64."""
    return np.ravel(np.asarray(stood_for(t), dtype=_FLOAT))


def _points_cotangent(t, g):
    """The cotangent of the points ``t`` from ``g``, one entry per point (real for real points)."""
    if not np.iscomplexobj(stood_for(t)) and np.iscomplexobj(g):
        g = np.real(g)
    g = np.reshape(g, np.shape(t))
    return ProjectTo(t)(g) if isinstance(t, np.ndarray | float | int | np.generic) else g


def _points_term(g, dt):
    """``g * dt`` per point, ``g`` of shape (points, columns), ``dt`` the points' tangent."""
    return g * np.reshape(dt, (-1, 1))


def _summed(g, dy2):
    """``sum_columns(conj(g) * dy)`` per point: the points' cotangent from the output's."""
    return np.sum(np.conj(g) * dy2, axis=1)


def _along_first(v, like):
    """The 1-d ``v`` shaped to broadcast along the first axis of ``like``."""
    return np.reshape(v, (-1,) + (1,) * (np.ndim(like) - 1))


def _zero_rows(rows: int, like):
    return np.zeros((rows, *np.shape(like)[1:]))


# ----- linear fits: K c = E y + b ------------------------------------------------------------


class _Fit:
    """The coefficients of a spline with fixed knots as a linear map of the values it fits: the
    conditions ``K c = E y + b`` (``b``: given derivative values), with ``K`` factorized once.
    Values and coefficients are matrices (points or coefficients, columns).

    >>> K, E = sp.eye_array(2) * 2.0, sp.eye_array(2)
    >>> _Fit(K, E).adjoint(np.array([[2.0], [4.0]]))
    array([[1.],
           [2.]])
    """

    def __init__(self, K, E):
        self.lu = spla.splu(sp.csc_array(K))
        self.E = sp.csr_array(E)

    def forward(self, dy2):
        return _solve(self.lu, _times(self.E, dy2, 2), "N", 2, _FLOAT)

    def adjoint(self, dc2):
        return _times(self.E.T, _solve(self.lu, dc2, "T", 2, _FLOAT), 2)

    def delta(self, y2):
        """The coefficients' change carrying the engine's values of ``y2`` (its value zero)."""
        return self.forward(y2 - stood_for(y2))


def _sparse(entries: list, shape: tuple):
    """A CSR matrix from blocks of ``(rows, cols, values)`` (duplicates summed)."""
    rows, cols, vals = (
        np.concatenate([np.broadcast_to(np.asarray(e[i], dtype=float), np.shape(e[0])) for e in entries])
        for i in range(3)
    )
    return sp.csr_array((vals, (rows.astype(np.intp), cols.astype(np.intp))), shape=shape)


def _cubic_sides(bc_type) -> tuple:
    """Each end's condition of ``CubicSpline``: ``'not-a-knot'``, ``'periodic'``, or the order (1 or 2)
    of the derivative given there."""
    sides = (bc_type, bc_type) if isinstance(bc_type, str) else tuple(bc_type)
    aliases = {"clamped": 1, "natural": 2}
    return tuple(aliases.get(s, s) if isinstance(s, str) else int(s[0]) for s in sides)


def _cubic_fit(x: np.ndarray, bc_type) -> _Fit:
    """``CubicSpline``'s conditions on its coefficients ``c[p, i]`` (unknown ``p m + i``), as SciPy
    meets them: two points with a not-a-knot or periodic end are a line, three with two not-a-knot
    ends a parabola."""
    left, right = _cubic_sides(bc_type)
    n = len(x)
    m = n - 1
    h = np.diff(x)
    i, j = np.arange(m), np.arange(1, m)

    def u(p, k):
        return p * m + k

    K = [
        (i, u(3, i), 1.0),  # the value at the interval's start
        *((m + i, u(p, i), h ** (3 - p)) for p in range(4)),  # and at its end
        (2 * m + j - 1, u(0, j - 1), 3 * h[j - 1] ** 2),  # first derivatives continuous at the inner knots
        (2 * m + j - 1, u(1, j - 1), 2 * h[j - 1]),
        (2 * m + j - 1, u(2, j - 1), 1.0),
        (2 * m + j - 1, u(2, j), -1.0),
        (3 * m + j - 2, u(0, j - 1), 6 * h[j - 1]),  # second derivatives too
        (3 * m + j - 2, u(1, j - 1), 2.0),
        (3 * m + j - 2, u(1, j), -2.0),
    ]
    E = [(i, i, 1.0), (m + i, i + 1, 1.0)]
    rows = {"left": 4 * m - 2, "right": 4 * m - 1}
    last = m - 1

    def first_at_end(row, sign=1.0):  # s'(x[-1]) from the last interval
        return [
            ([row], [u(0, last)], sign * 3 * h[last] ** 2),
            ([row], [u(1, last)], sign * 2 * h[last]),
            ([row], [u(2, last)], sign),
        ]

    def second_at_end(row, sign=1.0):
        return [([row], [u(0, last)], sign * 6 * h[last]), ([row], [u(1, last)], sign * 2.0)]

    for end, side in (("left", left), ("right", right)):
        row = rows[end]
        if n == 2 and side in ("not-a-knot", "periodic"):  # the secant's slope: a line
            K += [([row], [u(2, 0)], 1.0)] if end == "left" else first_at_end(row)
            E += [([row], [0], -1 / h[0]), ([row], [1], 1 / h[0])]
        elif n == 3 and left == right == "not-a-knot":  # a parabola: no cubic terms
            K.append(([row], [u(0, 0 if end == "left" else 1)], 1.0))
        elif side == "not-a-knot":  # third derivative continuous at the second (second-to-last) knot
            k = 0 if end == "left" else m - 2
            K += [([row], [u(0, k)], 1.0), ([row], [u(0, k + 1)], -1.0)]
        elif side == "periodic":  # first (second) derivatives equal at both ends
            K += (
                ([([row], [u(2, 0)], 1.0)] + first_at_end(row, -1.0))
                if end == "left"
                else ([([row], [u(1, 0)], 2.0)] + second_at_end(row, -1.0))
            )
        elif end == "left":
            K.append(([row], [u(2, 0)], 1.0) if side == 1 else ([row], [u(1, 0)], 2.0))
        else:
            K += first_at_end(row) if side == 1 else second_at_end(row)
    return _Fit(_sparse(K, (4 * m, 4 * m)), _sparse(E, (4 * m, n)))


def _derivative_orders(bc_type) -> tuple[list, list]:
    """The orders of the derivatives ``make_interp_spline``'s ``bc_type`` gives at each end."""
    if bc_type is None or bc_type == "not-a-knot":
        return [], []
    sides = (bc_type, bc_type) if isinstance(bc_type, str) else tuple(bc_type)
    aliases = {"clamped": [1], "natural": [2]}
    return tuple(aliases[s] if isinstance(s, str) else [] if s is None else [int(o) for o, _ in s] for s in sides)


def _bspline_fit(spline, x: np.ndarray, bc_type) -> _Fit:
    """``make_interp_spline``'s conditions on the B-spline's coefficients: the derivatives given at
    ``x[0]``, its values at ``x``, the derivatives given at ``x[-1]``."""
    left, right = _derivative_orders(bc_type)
    t, k = spline._t, spline.k
    rows = [_design(t, k, x[:1], nu) for nu in left]
    rows += [_design(t, k, x, 0)]
    rows += [_design(t, k, x[-1:], nu) for nu in right]
    K = sp.vstack(rows, format="csr")
    n = len(x)
    E = sp.csr_array((np.ones(n), (np.arange(n) + len(left), np.arange(n))), shape=(K.shape[0], n))
    return _Fit(K, E)


def _design(t: np.ndarray, k: int, points: np.ndarray, nu: int):
    """The matrix of the ``nu``-th derivatives of the B-splines of knots ``t`` and degree ``k`` at
    ``points`` (extrapolated beyond the base interval): the design matrix of the knots without
    ``nu`` at each end, of degree ``k - nu``, times the differences that give the derivative's
    coefficients (de Boor, "A Practical Guide to Splines", ch. X, eq. (15))."""
    nt = len(t) - k - 1
    if nu > k:
        return sp.csr_array((len(points), nt))
    D = sp.eye_array(nt, format="csr")
    for r in range(nu):
        knots, degree = t[r : len(t) - r], k - r
        size = len(knots) - degree - 1
        gaps = knots[degree + 1 : degree + size] - knots[1:size]
        scale = np.divide(degree, gaps, out=np.zeros_like(gaps), where=gaps > 0)
        step = sp.diags_array([-scale, scale], offsets=[0, 1], shape=(size - 1, size), format="csr")
        D = step @ D
    return sp.csr_array(si.BSpline.design_matrix(points, t[nu : len(t) - nu], k - nu, extrapolate=True) @ D)


# ----- constructors ----------------------------------------------------------------------------


class _Construction:
    """What a constructor's rules share: the object ``built`` from plain values, the fit of its
    coefficients (made when a derivative needs it), and how the values and the coefficients are laid
    out (``shape`` and ``axis`` of the values, ``order`` of the points where the constructor sorts them)."""

    def __init__(self, f, built, fit, y, axis: int, order=None):
        self.f, self.built, self._fit, self.axis = f, built, fit, axis
        self.shape = np.shape(stood_for(y))
        self.order, self.inverse = order, None if order is None else np.argsort(order)
        self.location = user_location()

    @property
    def fit(self) -> _Fit:
        if callable(self._fit):
            self._fit = self._fit()
        return self._fit

    def coefficients(self, dy):
        """The coefficients' tangent (a matrix) for the values' tangent ``dy``."""
        return self.fit.forward(_columns(self.sorted(dy), self.axis))

    def carried(self, y):
        """The coefficients' change (a matrix, value zero) carrying the engine's values in ``y``."""
        return self.fit.delta(_columns(self.sorted(y), self.axis))

    def values(self, dc2):
        """The values' cotangent for the coefficients' (a matrix)."""
        return self.unsorted(_uncolumns(self.fit.adjoint(dc2), self.shape, self.axis))

    def sorted(self, dy):
        """The values (or their tangent) in the order of the sorted points."""
        return dy if self.order is None else np.take(dy, self.order, axis=self.axis)

    def unsorted(self, dy):
        return dy if self.order is None else np.take(dy, self.inverse, axis=self.axis)


def _constructor_rules(f, build, tangent, carried, cotangent):
    """Rules for ``f(x, y, ...)`` building an interpolant from values ``y`` (the second argument; the
    first is its knots): ``build(x, y, rest, kwargs) -> _Construction``; ``tangent(c, dy)`` is the
    object's tangent for the values' ``dy``; ``carried(c, y)`` the object holding coefficients that
    carry the engine's values in ``y``; ``cotangent(c, d_obj)`` the values' cotangent (or a zero) for
    the object's."""

    def rrule_construct(x, y, *rest, **kwargs):
        owner = _engine_value(y)
        if _engine_value(x) is not None:
            raise _refusal(f, None, _KNOTS)
        if _engine_value(rest, kwargs) is not None:  # (a Hessian's, or forward mode's through this rule)
            raise _refusal(f, None, _SETTINGS)
        c = build(x, y, rest, kwargs)
        obj = c.built if owner is None else carried(c, y)
        knots = _refused(f, c.location, _KNOTS)
        # the settings after y: given by position (where the engines pass one being differentiated), refused
        settings = tuple(_refused(f, c.location, _SETTINGS) for _ in rest)

        def construct_pullback(d_obj):
            d_obj = unthunk(d_obj)
            dy = _ZERO if _is_zero(d_obj) else unthunk(cotangent(c, d_obj))
            if not _is_zero(dy) and type(y) is np.ndarray:
                dy = ProjectTo(y)(dy)
            elif not _is_zero(dy) and isinstance(y, (list, tuple)):
                dy = to_input(y, dy)  # (a list's: Tangent[list])
            return _NO, knots, dy, *settings

        return obj, construct_pullback

    def frule_construct(tangents, x, y, *rest, **kwargs):
        _no_knot_tangent(f, tangents[1])
        for d in tangents[3:]:
            _no_knot_tangent(f, d, _SETTINGS)
        c = build(stood_for(x), stood_for(y), rest, kwargs)
        dy = tangent_array(y, unthunk(tangents[2]))
        return c.built, _ZERO if _is_zero(dy) else tangent(c, dy)

    # an engine's values reach the reverse rule as they are: the object it builds holds coefficients carrying
    # them, which its calls' rules take; the forward rule's object would be one dual number, not callable
    rrule_construct.on_engine_values = True
    rrule_construct.__qualname__ = f"rrule_{f.__name__}"
    frule_construct.__qualname__ = f"frule_{f.__name__}"
    rrule.register(f, functor=False)(rrule_construct)
    frule.register(f, functor=False)(frule_construct)


def _arguments(f, x, y, rest: tuple, kwargs: dict, names: tuple) -> dict:
    """The settings of ``f(x, y, *rest, **kwargs)`` by name (``names``, with defaults, after ``x, y``)."""
    settings = dict(names)
    for (name, _), value in zip(names, rest):
        settings[name] = value
    settings.update(kwargs)
    return settings


def _build_cubic(x, y, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(si.CubicSpline, x, y, rest, kwargs, (("axis", 0), ("bc_type", "not-a-knot"), ("extrapolate", None)))
    built = si.CubicSpline(x, stood_for(y), *rest, **kwargs)
    knots = np.asarray(x, dtype=_FLOAT)
    return _Construction(
        si.CubicSpline, built, lambda: _cubic_fit(knots, s["bc_type"]), y, s["axis"] % max(np.ndim(y), 1)
    )


def _build_interp_spline(x, y, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(
        si.make_interp_spline,
        x,
        y,
        rest,
        kwargs,
        (("k", 3), ("t", None), ("bc_type", None), ("axis", 0), ("check_finite", True)),
    )
    built = si.make_interp_spline(x, stood_for(y), *rest, **kwargs)
    if s["bc_type"] == "periodic":
        return _Construction(si.make_interp_spline, built, _periodic_refused, y, 0)
    knots = np.asarray(x, dtype=_FLOAT)
    return _Construction(
        si.make_interp_spline,
        built,
        lambda: _bspline_fit(built, knots, s["bc_type"]),
        y,
        s["axis"] % max(np.ndim(y), 1),
    )


def _periodic_refused():
    raise _refusal(
        si.make_interp_spline,
        None,
        "a periodic fit (bc_type='periodic') is not differentiated in its "
        "values; CubicSpline(x, y, bc_type='periodic') is",
    )


class _HermiteFit:
    """A cubic Hermite spline's coefficients as a function of its values, its slopes at the knots local
    functions of the secants ``m``, smooth between the switches of their formulas, where the fit is
    linearized. Subclasses give the ``slopes`` and their partials (computed with NumPy from the values, so an
    engine's values, a Hessian's, carry the fit's second derivatives; which formula holds is read from the
    values they stand for): ``slopes_tangent(dm)`` and its adjoint ``secants_cotangent(dd)``. Two points
    are a line, its slopes the secant."""

    def __init__(self, x: np.ndarray, y2):
        self.h = np.reshape(np.diff(x), (-1, 1))
        self.m = (y2[1:] - y2[:-1]) / self.h
        self.line = len(x) == 2
        if self.line:
            self.slopes = np.concatenate([self.m, self.m])

    def _hermite(self, y2, m, d):
        """A cubic Hermite spline's coefficients, (4 intervals, columns), from values, secants and slopes."""
        h = self.h
        return np.concatenate([(d[:-1] + d[1:] - 2 * m) / (h * h), (3 * m - 2 * d[:-1] - d[1:]) / h, d[:-1], y2[:-1]])

    def forward(self, dy2):
        dm = (dy2[1:] - dy2[:-1]) / self.h
        return self._hermite(dy2, dm, np.concatenate([dm, dm]) if self.line else self.slopes_tangent(dm))

    def adjoint(self, dc2):
        h = self.h
        c0, c1, c2, c3 = np.split(dc2, 4)
        dm = 3 * c1 / h - 2 * c0 / (h * h)
        first, second = c0 / (h * h) - 2 * c1 / h + c2, c0 / (h * h) - c1 / h  # (into d[:-1], d[1:])
        zero = np.zeros_like(first[:1])
        dd = np.concatenate([first, zero]) + np.concatenate([zero, second])
        dm = dm + (dd[:1] + dd[1:] if self.line else self.secants_cotangent(dd))
        g = dm / h
        return np.concatenate([c3, zero]) + np.concatenate([zero, g]) - np.concatenate([g, zero])

    def delta(self, y2):
        """The coefficients' change carrying the engine's values of ``y2``, the values the fit was made
        from: the coefficients themselves, computed on them, less their plain value."""
        c = self._hermite(y2, self.m, self.slopes)
        return c - stood_for(c)


class _PchipFit(_HermiteFit):
    """``PchipInterpolator``'s coefficients: its slopes are limited functions of the secants (Fritsch and
    Butland's weighted harmonic mean inside, zero at an extremum; Moler's one-sided estimate at the ends,
    limited to keep the shape).

    >>> fit = _PchipFit(np.array([0.0, 1.0, 2.0]), np.array([[0.0], [1.0], [3.0]]))
    >>> fit.slopes.ravel().round(4)  # as PchipInterpolator([0, 1, 2], [0, 1, 3])([0, 1, 2], 1)
    array([0.5   , 1.3333, 2.5   ])
    """

    def __init__(self, x: np.ndarray, y2):
        super().__init__(x, y2)
        if self.line:
            return
        h, m = self.h, self.m
        plain = stood_for(m)
        flat = (np.sign(plain[1:]) != np.sign(plain[:-1])) | (plain[1:] == 0) | (plain[:-1] == 0)
        w1, w2 = 2 * h[1:] + h[:-1], h[1:] + 2 * h[:-1]
        m1, m2 = np.where(flat, 1.0, m[:-1]), np.where(flat, 1.0, m[1:])
        inner = (w1 + w2) / (w1 / m1 + w2 / m2)
        inner_d = np.where(flat, 0.0, inner)
        ends = [
            self._end(h[0], h[1], m[0], m[1], plain[0], plain[1]),
            self._end(h[-1], h[-2], m[-1], m[-2], plain[-1], plain[-2]),
        ]
        self.slopes = np.concatenate([ends[0][0][None], inner_d, ends[1][0][None]])
        # the partials of the inner slopes in their two secants, and of the ends' in their two
        square = inner_d * inner_d / (w1 + w2)
        self.partials = (
            square * w1 / (m1 * m1),
            square * w2 / (m2 * m2),
            ends[0][1:],
            ends[1][1:],
        )

    @staticmethod
    def _end(h0, h1, m0, m1, p0, p1):
        """The slope at an end from its two secants, and its partials in them: zero where its sign is
        not the first secant's, three times that secant where the shape would not be kept."""
        d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
        plain = stood_for(d)
        zero = np.sign(plain) != np.sign(p0)
        tripled = ~zero & (np.sign(p0) != np.sign(p1)) & (np.abs(plain) > 3 * np.abs(p0))
        slope = np.where(zero, 0.0, np.where(tripled, 3 * m0, d))
        first = np.where(zero, 0.0, np.where(tripled, 3.0, (2 * h0 + h1) / (h0 + h1)))
        second = np.where(zero | tripled, 0.0, -h0 / (h0 + h1))
        return slope, first, second

    def slopes_tangent(self, dm):
        a, b, (q0, q1), (r0, r1) = self.partials
        return np.concatenate(
            [(q0 * dm[0] + q1 * dm[1])[None], a * dm[:-1] + b * dm[1:], (r0 * dm[-1] + r1 * dm[-2])[None]]
        )

    def secants_cotangent(self, dd):
        a, b, (q0, q1), (r0, r1) = self.partials
        inner, zero = dd[1:-1], np.zeros_like(dd[:1])
        spread = np.concatenate([a * inner, zero]) + np.concatenate([zero, b * inner])
        rest = np.zeros_like(spread[2:])
        at_start = np.concatenate([(q0 * dd[0])[None], (q1 * dd[0])[None], rest])
        at_end = np.concatenate([rest, (r1 * dd[-1])[None], (r0 * dd[-1])[None]])
        return spread + at_start + at_end


class _AkimaFit(_HermiteFit):
    """``Akima1DInterpolator``'s coefficients: the slope at knot ``i`` is ``m1 + w (m2 - m1)`` of the four
    secants ``m0..m3`` around it (two more at each end, extrapolated linearly), ``w = f2 / (f1 + f2)`` with
    weights ``f1 = |m3 - m2|``, ``f2 = |m1 - m0|`` (``'makima'`` adds half of ``|m3 + m2|`` and ``|m1 + m0|``;
    Akima, J. ACM 17 (1970) 589; makima as MATLAB's), and ``(m0 + m3) / 2`` where SciPy finds the weights'
    sum below ``1e-9`` of its largest (their formula's switch, taken as SciPy takes it).

    >>> fit = _AkimaFit(np.arange(5.0), np.array([[0.0], [1.0], [2.0], [4.0], [6.0]]), "akima")
    >>> fit.slopes.ravel().tolist()  # as Akima1DInterpolator(range(5), [0, 1, 2, 4, 6])(range(5), 1)
    [1.0, 1.0, 1.5, 2.0, 2.0]
    """

    def __init__(self, x: np.ndarray, y2, method: str):
        super().__init__(x, y2)
        if self.line:
            return
        m = self.m
        left, right = self._extended(m[:2], m[-2:])
        ext = np.concatenate([left, m, right])
        m0, m1, m2, m3 = (ext[r : len(ext) - 3 + r] for r in range(4))
        p0, p1, p2, p3 = (stood_for(v) for v in (m0, m1, m2, m3))
        f1, f2 = np.abs(m3 - m2), np.abs(m1 - m0)
        s1, s2 = np.sign(p3 - p2), np.sign(p1 - p0)  # (d|v|/dv)
        d1 = (s1, -s1)  # (f1's partials in m3, m2; f2's in m1, m0)
        d2 = (s2, -s2)
        if method == "makima":
            f1, f2 = f1 + 0.5 * np.abs(m3 + m2), f2 + 0.5 * np.abs(m1 + m0)
            t1, t2 = 0.5 * np.sign(p3 + p2), 0.5 * np.sign(p1 + p0)
            d1, d2 = (d1[0] + t1, d1[1] + t1), (d2[0] + t2, d2[1] + t2)
        plain = stood_for(f1 + f2)
        weighted = plain > 1e-9 * np.max(plain)
        f12 = np.where(weighted, f1 + f2, 1.0)
        w = f2 / f12
        self.slopes = np.where(weighted, m1 + w * (m2 - m1), 0.5 * (m0 + m3))
        by_f2, by_f1 = (m2 - m1) * f1 / (f12 * f12), -(m2 - m1) * f2 / (f12 * f12)
        self.partials = [  # (the slopes' partials in m0, m1, m2, m3)
            np.where(weighted, by_f2 * d2[1], 0.5),
            np.where(weighted, 1 - w + by_f2 * d2[0], 0.0),
            np.where(weighted, w + by_f1 * d1[1], 0.0),
            np.where(weighted, by_f1 * d1[0], 0.5),
        ]

    @staticmethod
    def _extended(first, last):
        """The two secants beyond each end, linear in the first two and the last two: ``m[-1] = 2 m[0] -
        m[1]``, ``m[-2] = 2 m[-1] - m[0]``."""
        return (
            np.concatenate([(3 * first[0] - 2 * first[1])[None], (2 * first[0] - first[1])[None]]),
            np.concatenate([(2 * last[1] - last[0])[None], (3 * last[1] - 2 * last[0])[None]]),
        )

    def slopes_tangent(self, dm):
        left, right = self._extended(dm[:2], dm[-2:])
        ext = np.concatenate([left, dm, right])
        n = len(ext) - 3
        return sum(p * ext[r : r + n] for r, p in enumerate(self.partials))

    def secants_cotangent(self, dd):
        n = len(dd)
        ext = sum(
            np.concatenate([_zero_rows(r, dd), p * dd, _zero_rows(3 - r, dd)]) for r, p in enumerate(self.partials)
        )
        g0, g1, g2, g3 = ext[0], ext[1], ext[-2], ext[-1]  # (the extended secants' cotangents, linear back)
        inner = ext[2 : n + 1]
        rest = _zero_rows(len(inner) - 2, dd)
        at_start = np.concatenate([(3 * g0 + 2 * g1)[None], (-2 * g0 - g1)[None], rest])
        at_end = np.concatenate([rest, (-g2 - 2 * g3)[None], (2 * g2 + 3 * g3)[None]])
        return inner + at_start + at_end


def _build_pchip(x, y, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(si.PchipInterpolator, x, y, rest, kwargs, (("axis", 0), ("extrapolate", None)))
    built = si.PchipInterpolator(x, stood_for(y), *rest, **kwargs)
    knots, axis = np.asarray(x, dtype=_FLOAT), s["axis"] % max(np.ndim(y), 1)
    return _Construction(si.PchipInterpolator, built, lambda: _PchipFit(knots, _columns(y, axis)), y, axis)


def _build_akima(x, y, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(si.Akima1DInterpolator, x, y, rest, kwargs, (("axis", 0), ("method", "akima")))
    built = si.Akima1DInterpolator(x, stood_for(y), *rest, **kwargs)
    knots, axis = np.asarray(x, dtype=_FLOAT), s["axis"] % max(np.ndim(y), 1)
    fit = lambda: _AkimaFit(knots, _columns(y, axis), s["method"])  # noqa: E731
    return _Construction(si.Akima1DInterpolator, built, fit, y, axis)


def _coefficients_shape(c: _Construction, dc2, leading: tuple):
    return np.reshape(dc2, (*leading, *np.delete(np.asarray(c.shape, dtype=int), c.axis)))


def _spline_rules(leading: int):
    """``tangent``, ``carried`` and ``cotangent`` of ``_constructor_rules`` for a spline whose
    coefficients ``_c`` have ``leading`` axes before the values' other axes (a piecewise
    polynomial's: order, interval; a B-spline's: one)."""

    def tangent(c: _Construction, dy):
        dc2 = c.coefficients(dy)
        return Tangent[type(c.built)](_c=_coefficients_shape(c, dc2, c.built._c.shape[:leading]))

    def carried(c: _Construction, y):
        delta = _coefficients_shape(c, c.carried(y), c.built._c.shape[:leading])
        return with_fields(c.built, {"_c": c.built._c + delta})

    def cotangent(c: _Construction, d_obj):
        dc = unthunk(item_tangents(d_obj, c.built)["_c"])
        return dc if _is_zero(dc) else c.values(np.reshape(dc, (int(np.prod(np.shape(dc)[:leading])), -1)))

    return tangent, carried, cotangent


def _coefficient_rules(cls, position: int, stored, unstored):
    """Rules for ``cls(...)`` built from its coefficients (argument ``position``) and its knots (the
    other of the first two; not differentiated): ``stored(c, axis)`` is how the object keeps them
    (SciPy moves the interpolation ``axis`` first), ``unstored`` its inverse. Both are linear."""

    def rrule_from_coefficients(*args, **kwargs):
        c, knots = args[position], args[1 - position]
        if _engine_value(knots) is not None:
            raise _refusal(cls, None, _KNOTS)
        built = cls(*(stood_for(a) if i == position else a for i, a in enumerate(args)), **kwargs)
        carried = _engine_value(c) is not None
        obj = with_fields(built, {"_c": built._c + stored(c - stood_for(c), built.axis)}) if carried else built
        refused = _refused(cls, user_location(), _KNOTS)

        def from_coefficients_pullback(d_obj):
            d_obj = unthunk(d_obj)
            dc = _ZERO if _is_zero(d_obj) else unthunk(item_tangents(d_obj, built)["_c"])
            if not _is_zero(dc):
                dc = unstored(dc, built.axis)
                dc = ProjectTo(c)(dc) if type(c) is np.ndarray else dc
            out = [_NO] * (len(args) + 1)
            out[1 + position], out[2 - position] = dc, refused
            return tuple(out)

        return obj, from_coefficients_pullback

    def frule_from_coefficients(tangents, *args, **kwargs):
        _no_knot_tangent(cls, tangents[2 - position])
        built = cls(*args, **kwargs)
        dc = unthunk(tangents[1 + position])
        return built, _ZERO if _is_zero(dc) else Tangent[cls](_c=stored(dc, built.axis))

    rrule_from_coefficients.on_engine_values = True
    rrule_from_coefficients.__qualname__ = f"rrule_{cls.__name__}"
    frule_from_coefficients.__qualname__ = f"frule_{cls.__name__}"
    rrule.register(cls, functor=False)(rrule_from_coefficients)
    frule.register(cls, functor=False)(frule_from_coefficients)


def _bspline_stored(c, axis: int):
    return np.moveaxis(c, axis, 0)


def _bspline_unstored(c, axis: int):
    return np.moveaxis(c, 0, axis)


def _ppoly_stored(c, axis: int):
    return np.moveaxis(np.moveaxis(c, axis + 1, 0), axis + 1, 0)


def _ppoly_unstored(c, axis: int):
    return np.moveaxis(np.moveaxis(c, 0, axis + 1), 0, axis + 1)


_coefficient_rules(si.BSpline, 1, _bspline_stored, _bspline_unstored)
_coefficient_rules(si.PPoly, 0, _ppoly_stored, _ppoly_unstored)
_constructor_rules(si.CubicSpline, _build_cubic, *_spline_rules(2))
_constructor_rules(si.make_interp_spline, _build_interp_spline, *_spline_rules(1))
_constructor_rules(si.PchipInterpolator, _build_pchip, *_spline_rules(2))
_constructor_rules(si.Akima1DInterpolator, _build_akima, *_spline_rules(2))


# ----- evaluation ------------------------------------------------------------------------------


class _PPolyPlan:
    """A piecewise polynomial's evaluation at points ``t`` (flat): each point's interval ``i`` and,
    for the ``nu``-th derivative, the weights ``W[p]`` of the coefficients ``c[p, i]`` (NumPy's
    arithmetic on the points, so an engine's points give weights carrying their derivatives).
    ``wraps`` counts the periods a periodic extrapolation took off; ``outside`` marks the points
    without a value (NaN) where it does not extrapolate. The breakpoints are differentiated too."""

    def __init__(self, pp, t, extrapolate):
        extrapolate = pp.extrapolate if extrapolate is None else extrapolate
        x = pp._x
        self.pp, self.k, self.m = pp, np.shape(pp._c)[0] - 1, np.shape(pp._c)[1]
        points = _points(t)
        self.t = np.ravel(t) if _engine_value(t) is not None else points
        self.wraps = None
        if extrapolate == "periodic":
            period = x[-1] - x[0]
            self.wraps = np.floor((points - x[0]) / period)
            self.t = self.t - period * self.wraps
            points = points - period * self.wraps
        ascending = x[-1] >= x[0]
        found = np.searchsorted(x, points, "right") if ascending else len(x) - np.searchsorted(x[::-1], points, "left")
        self.i = np.clip(found - 1, 0, self.m - 1)
        lo, hi = min(x[0], x[-1]), max(x[0], x[-1])
        self.outside = (points < lo) | (points > hi) if extrapolate is False else None

    def weights(self, nu: int):
        """``W`` of shape (k + 1, points): ``d^nu/dt^nu (t - x[i])**(k - p)``."""
        dt = self.t - self.pp._x[self.i]
        rows = []
        for p in range(self.k + 1):
            power = self.k - p - nu
            falling = float(np.prod(np.arange(power + 1, self.k - p + 1))) if power >= 0 else 0.0
            rows.append(falling * dt**power if power > 0 else np.full(np.shape(dt), falling))
        W = np.stack(rows)
        return W if self.outside is None else np.where(self.outside, 0.0, W)

    def values(self, c, W):
        """``sum_p W[p] c[p, i]`` as (points, columns)."""
        c3 = np.reshape(c, (self.k + 1, self.m, -1))
        return np.sum(W[:, :, None] * c3[:, self.i], axis=0)

    def coefficients_cotangent(self, W, dy2):
        shape = np.shape(self.pp._c)
        return np.reshape(
            scatter_add((shape[0], shape[1], np.shape(dy2)[1]), (slice(None), self.i), W[:, :, None] * dy2[None]), shape
        )

    def linear(self, nu: int):
        return _PPolyMap(self, nu)

    def knots_term(self, g):
        """The breakpoints' cotangent for the points' ``g``: each interval's origin moves the
        polynomial the opposite way; a periodic wrap moves the point with both ends."""
        dx = scatter_add(self.pp._x.shape, self.i, -g)
        if self.wraps is not None:
            moved = np.sum(g * self.wraps)
            dx = dx + np.concatenate([[moved], np.zeros(len(dx) - 2), [-moved]])
        return dx

    def knots_shift(self, dx):
        """How far the points move within their polynomials for the breakpoints' tangent ``dx``."""
        shift = -dx[self.i]
        return shift if self.wraps is None else shift + self.wraps * (dx[0] - dx[-1])


def _call_settings(rest: tuple, kwargs: dict) -> tuple[int, object]:
    """``nu`` and ``extrapolate`` of a spline's call ``s(t, nu=0, extrapolate=None)``."""
    settings = dict(zip(("nu", "extrapolate"), rest))
    settings.update(kwargs)
    return int(settings.get("nu", 0) or 0), settings.get("extrapolate")


def _evaluated(f, t, kwargs: dict):
    """``f(t, **kwargs)``; where an engine's values are in the points or in ``f``'s fields (coefficients
    carrying them), run by that engine through the forward rule of ``f``'s calls."""
    owner = _engine_value(f, t)
    return f(t, **kwargs) if owner is None else _by_engine(owner, f, (t,), kwargs)


def _derivative_at(f, t, nu: int, extrapolate, layout: tuple, outside):
    """The interpolant's derivative ``f(t, nu + 1)`` as (points, columns), zero where it has no value."""
    kwargs = {"nu": nu + 1} if extrapolate is None else {"nu": nu + 1, "extrapolate": extrapolate}
    d = _arranged_columns(_evaluated(f, t, kwargs), *layout)
    return d if outside is None else np.where(outside[:, None], 0.0, d)


def _tangent_sum(*terms):
    """The sum of the terms that are not ``None``; ``None`` where all are."""
    terms = [t for t in terms if t is not None]
    return None if not terms else terms[0] if len(terms) == 1 else sum(terms[1:], terms[0])


def _spline_call_rules(cls, plan_of):
    """Rules for the calls ``s(t, nu=0, extrapolate=None)`` of instances of ``cls`` (``PPoly``,
    ``BSpline``), differentiated in ``s`` (its coefficients, and where ``plan_of`` says so its
    breakpoints) and in the points ``t``. ``plan_of(s, t, extrapolate)`` gives the evaluation's plan:
    ``outside`` (points without a value), ``linear(nu)`` (the map from coefficients to values, with
    ``apply`` and ``adjoint``), and ``knots_term(g)`` and ``knots_shift(dx)``, the breakpoints'
    cotangent and how far their tangent moves the points (``knots_term`` None: a B-spline's knots,
    not differentiated)."""

    def rrule_spline_call(s, t, *rest, **kwargs):
        nu, extrapolate = _call_settings(rest, kwargs)
        y = _evaluated(s, t, {"nu": nu, "extrapolate": extrapolate})
        layout = (np.shape(stood_for(t)), _extra(s), s.axis)
        plan = plan_of(s, t, extrapolate)
        no_rest = (_NO,) * len(rest)

        def spline_call_pullback(dy):
            dy = unthunk(dy)
            if _is_zero(dy):
                return _ZERO, _ZERO, *no_rest
            dy2 = _arranged_columns(dy, *layout)
            g = functools.cache(lambda: _summed(_derivative_at(s, t, nu, extrapolate, layout, plan.outside), dy2))
            coefficients = Thunk(lambda: plan.linear(nu).adjoint(dy2))
            fields = {"_c": coefficients}
            if plan.knots_term is not None:
                fields["_x"] = Thunk(lambda: plan.knots_term(_real_like(s._x, g())))
            return Tangent[type(s)](**fields), Thunk(lambda: _points_cotangent(t, g())), *no_rest

        return y, spline_call_pullback

    def frule_spline_call(tangents, s, t, *rest, **kwargs):
        nu, extrapolate = _call_settings(rest, kwargs)
        y = s(t, nu=nu, extrapolate=extrapolate)
        layout = (np.shape(t), _extra(s), s.axis)
        d_s, dt = unthunk(tangents[0]), unthunk(tangents[1])
        fields = {} if _is_zero(d_s) else {k: unthunk(v) for k, v in item_tangents(d_s, s).items()}
        dc, dx = fields.get("_c", _ZERO), fields.get("_x", _ZERO)
        plan = plan_of(s, t, extrapolate)
        if plan.knots_term is None:
            _no_knot_tangent(type(s), fields.get("_t", _ZERO))
        if _is_zero(dt) and _is_zero(dx) and _is_zero(dc):
            return y, _ZERO
        moved = _ZERO if _is_zero(dt) else np.reshape(dt, (-1,))
        if not _is_zero(dx):
            moved = moved + plan.knots_shift(dx)
        slope = None if _is_zero(moved) else _derivative_at(s, t, nu, extrapolate, layout, plan.outside)
        dy2 = _tangent_sum(
            None if _is_zero(dc) else plan.linear(nu).apply(dc),
            None if slope is None else _points_term(slope, moved),
        )
        return y, _arranged(dy2, *layout)

    rrule.register(cls, functor=True)(rrule_spline_call)
    frule.register(cls, functor=True)(frule_spline_call)


def _extra(s) -> tuple:
    """The shape of the values of a spline's one point (its coefficients' trailing axes)."""
    return np.shape(s._c)[2:] if isinstance(s, si.PPoly) else np.shape(s._c)[1:]


def _real_like(x, g):
    return np.real(g) if not np.iscomplexobj(x) else g


class _PPolyMap:
    """The map from a piecewise polynomial's coefficients to its ``nu``-th derivative at the points."""

    def __init__(self, points: _PPolyPlan, nu: int):
        self.points, self.W = points, points.weights(nu)

    def apply(self, dc):
        return self.points.values(dc, self.W)

    def adjoint(self, dy2):
        return self.points.coefficients_cotangent(self.W, dy2)


class _BSplinePlan:
    """A B-spline's evaluation at points ``t`` (flat; wrapped where it extrapolates periodically):
    the design matrices of its derivatives. Its knots are not differentiated."""

    knots_term = None

    def __init__(self, s, t, extrapolate):
        extrapolate = s.extrapolate if extrapolate is None else extrapolate
        self.s, self.t = s, t
        points = _points(t)
        knots, k = s._t, s.k
        n = len(knots) - k - 1
        if extrapolate == "periodic":
            points = knots[k] + (points - knots[k]) % (knots[n] - knots[k])
        self.points = points
        self.outside = (points < knots[k]) | (points > knots[n]) if extrapolate is False else None

    def linear(self, nu: int):
        moved = None
        if _engine_value(self.t) is not None:  # (a Hessian's points: the design matrix moves with them)
            if nesting_depth(self.t) > 1:
                raise _refusal(type(self.s), None, _NESTED)
            moved = (self.design(nu + 1), np.ravel(self.t) - self.points)
        return _BSplineMap(self.design(nu), np.shape(self.s._c), moved)

    def design(self, nu: int):
        M = _design(self.s._t, self.s.k, self.points, nu)
        return M if self.outside is None else sp.csr_array(sp.diags_array((~self.outside).astype(float)) @ M)


_NESTED = (
    "a B-spline's derivatives of third order in the points it is evaluated at and its coefficients together "
    "are not carried; differentiate in one of them"
)


class _BSplineMap:
    """The map from a B-spline's coefficients to its derivative at the points: a design matrix ``M``.
    Where the points are an engine's values (a Hessian's), ``moved`` is the design matrix of the next
    derivative and the points' displacement (value zero, carrying their tangents): the adjoint moves
    with the points to first order, which is all a Hessian's single level of dual numbers carries."""

    def __init__(self, M, shape: tuple, moved=None):
        self.M, self.shape, self.moved = M, shape, moved

    def apply(self, dc):
        # (the coefficients past the design's columns are not read: an antiderivative's repeat its last)
        return _times(self.M, np.reshape(dc, (self.shape[0], -1))[: self.M.shape[1]], 2)

    def adjoint(self, dy2):
        dc = _times(sp.csr_array(self.M.T), dy2, 2)
        if self.moved is not None:
            slope, shift = self.moved
            dc = dc + _times(sp.csr_array(slope.T), dy2 * np.reshape(shift, (-1, 1)), 2)
        return np.reshape(np.concatenate([dc, _zero_rows(self.shape[0] - self.M.shape[1], dc)]), self.shape)


_spline_call_rules(si.PPoly, _PPolyPlan)
_spline_call_rules(si.BSpline, _BSplinePlan)


# ----- interp1d ----------------------------------------------------------------------------------
# Its values, sorted by x and laid out as (points, columns), are ``_y``: kind 'linear' interpolates them
# as the B-spline of degree 1 on the knots x (ends doubled), the spline kinds by the B-spline
# ``make_interp_spline`` fitted to them (``_spline``). The piecewise constant kinds are not differentiated.

_CONSTANT_KINDS = (
    "interp1d of a piecewise constant kind ('nearest', 'previous', 'next') is not differentiated in its values; "
    "kind='linear' or a spline kind ('slinear', 'quadratic', 'cubic') is"
)


def _build_interp1d(x, y, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(
        si.interp1d,
        x,
        y,
        rest,
        kwargs,
        (
            ("kind", "linear"),
            ("axis", -1),
            ("copy", True),
            ("bounds_error", None),
            ("fill_value", np.nan),
            ("assume_sorted", False),
        ),
    )
    built = si.interp1d(x, stood_for(y), *rest, **kwargs)
    order = None if s["assume_sorted"] else np.argsort(np.asarray(x), kind="mergesort")
    if built._kind == "spline":
        fit = lambda: _bspline_fit(built._spline, built.x, None)  # noqa: E731
    else:
        fit = _constant_kinds_refused
    return _Construction(si.interp1d, built, fit, y, s["axis"] % np.ndim(y), order)


def _constant_kinds_refused():
    raise _refusal(si.interp1d, None, _CONSTANT_KINDS)


def _interp1d_tangent(c: _Construction, dy):
    """The tangent of an ``interp1d``: of its values ``y`` (sorted), of the same as (points, columns)
    ``_y``, and of its B-spline's coefficients (a spline kind)."""
    built, ordered = c.built, c.sorted(dy)
    if built._kind not in ("linear", "spline"):
        _constant_kinds_refused()
    fields = {"y": ordered, "_y": _columns(ordered, c.axis)}
    if built._kind == "spline":
        fields["_spline"] = Tangent[si.BSpline](_c=c.coefficients(dy))
    return Tangent[si.interp1d](**fields)


def _interp1d_carried(c: _Construction, y):
    built, d = c.built, _interp1d_tangent(c, y - stood_for(y))
    fields = {"y": built.y + d.y, "_y": built._y + d._y}
    if built._kind == "spline":
        fields["_spline"] = with_fields(built._spline, {"_c": built._spline._c + d._spline._c})
    return with_fields(built, fields)


def _interp1d_cotangent(c: _Construction, d_obj):
    fields = {k: unthunk(v) for k, v in item_tangents(d_obj, c.built).items()}
    spline = fields.get("_spline", _ZERO)
    dc2 = spline if _is_zero(spline) else unthunk(item_tangents(spline, c.built._spline)["_c"])
    total = _tangent_sum(
        None if _is_zero(fields["y"]) else c.unsorted(fields["y"]),
        None if _is_zero(fields["_y"]) else c.unsorted(_uncolumns(fields["_y"], c.shape, c.axis)),
        None if _is_zero(dc2) else c.values(dc2),
    )
    return _ZERO if total is None else total


_constructor_rules(si.interp1d, _build_interp1d, _interp1d_tangent, _interp1d_carried, _interp1d_cotangent)


def _interp1d_spline(obj):
    """The B-spline an ``interp1d`` evaluates (its coefficients may carry an engine's values); None for
    the piecewise constant kinds."""
    if obj._kind == "spline":
        return obj._spline
    if obj._kind == "linear":
        x = obj.x
        knots = np.concatenate([x[:1], x, x[-1:]])
        return with_fields(si.BSpline.construct_fast(knots, stood_for(obj._y), 1), {"_c": obj._y})
    return None


class _Interp1dPoints:
    """An ``interp1d``'s call at points ``t``: its B-spline's plan, without values beyond the ends
    where it fills them in place of extrapolating."""

    def __init__(self, obj, t):
        self.obj, self.t, self.spline = obj, t, _interp1d_spline(obj)
        self.layout = (np.shape(stood_for(t)), obj._y_extra_shape, obj._y_axis)
        if self.spline is not None:
            self.plan = _BSplinePlan(self.spline, t, True)
            points = _points(t)
            if not obj._extrapolate:
                self.plan.outside = (points < obj.x[0]) | (points > obj.x[-1])

    def slope(self):
        spline_layout = (self.layout[0], np.shape(self.spline._c)[1:], 0)
        return _derivative_at(self.spline, self.t, 0, None, spline_layout, self.plan.outside)

    def field_tangent(self, dc2):
        if self.obj._kind == "spline":
            return Tangent[si.interp1d](_spline=Tangent[si.BSpline](_c=dc2))
        return Tangent[si.interp1d](_y=dc2)

    def field(self, d_obj):
        fields = item_tangents(d_obj, self.obj)
        _no_knot_tangent(si.interp1d, fields["x"])
        if self.obj._kind == "spline":
            spline = unthunk(fields["_spline"])
            return spline if _is_zero(spline) else unthunk(item_tangents(spline, self.obj._spline)["_c"])
        return unthunk(fields["_y"])


@rrule.register(si.interp1d, functor=True)
def rrule_interp1d_call(obj, t):
    owner = _engine_value(obj, t)
    y = obj(t) if owner is None else _by_engine(owner, obj, (t,), {})
    call = _Interp1dPoints(obj, t)
    if call.spline is None:
        refused = _refused(si.interp1d, user_location(), _CONSTANT_KINDS)
        return y, lambda dy: (refused, _ZERO)  # (piecewise constant in the points)

    def interp1d_call_pullback(dy):
        dy = unthunk(dy)
        if _is_zero(dy):
            return _ZERO, _ZERO
        dy2 = _arranged_columns(dy, *call.layout)
        d_obj = call.field_tangent(Thunk(lambda: call.plan.linear(0).adjoint(dy2)))
        return d_obj, Thunk(lambda: _points_cotangent(t, _summed(call.slope(), dy2)))

    return y, interp1d_call_pullback


@frule.register(si.interp1d, functor=True)
def frule_interp1d_call(tangents, obj, t):
    y = obj(t)
    d_obj, dt = unthunk(tangents[0]), unthunk(tangents[1])
    call = _Interp1dPoints(obj, t)
    dc = _ZERO if _is_zero(d_obj) else call.field(d_obj)
    if call.spline is None:
        if not _is_zero(dc):
            raise _refusal(si.interp1d, None, _CONSTANT_KINDS)
        return y, _ZERO
    dy2 = _tangent_sum(
        None if _is_zero(dc) else call.plan.linear(0).apply(dc),
        None if _is_zero(dt) else _points_term(call.slope(), dt),
    )
    return y, _ZERO if dy2 is None else _arranged(dy2, *call.layout)


# ----- RegularGridInterpolator --------------------------------------------------------------------
# Its values (``_values``, flipped along the grid's descending axes) at the corners of each point's
# cell, weighted by products of the point's fractions along each axis (method 'linear').

_GRID_METHODS = (
    "RegularGridInterpolator is differentiated with method='linear' only (multilinear in its values and its points)"
)


def _flipped(values, obj):
    return np.flip(values, obj._descending_dimensions) if obj._descending_dimensions else values


@rrule.register(si.RegularGridInterpolator, functor=False)
def rrule_grid_interpolator(points, values, *rest, **kwargs):
    if _engine_value(points) is not None:
        raise _refusal(si.RegularGridInterpolator, None, _KNOTS)
    built = si.RegularGridInterpolator(points, stood_for(values), *rest, **kwargs)
    obj = built
    if _engine_value(values) is not None:
        if built.method != "linear":  # (its spline, made now, would hold the plain values)
            raise _refusal(si.RegularGridInterpolator, None, _GRID_METHODS)
        obj = with_fields(built, {"_values": built._values + _flipped(values - stood_for(values), built)})
    refused = _refused(si.RegularGridInterpolator, user_location(), _KNOTS)
    no_rest = (_NO,) * len(rest)

    def grid_interpolator_pullback(d_obj):
        d_obj = unthunk(d_obj)
        dv = _ZERO if _is_zero(d_obj) else unthunk(item_tangents(d_obj, built)["_values"])
        if not _is_zero(dv):
            dv = _flipped(dv, built)
            dv = ProjectTo(values)(dv) if type(values) is np.ndarray else to_input(values, dv)
        return _NO, refused, dv, *no_rest

    return obj, grid_interpolator_pullback


rrule_grid_interpolator.on_engine_values = True


@frule.register(si.RegularGridInterpolator, functor=False)
def frule_grid_interpolator(tangents, points, values, *rest, **kwargs):
    _no_knot_tangent(si.RegularGridInterpolator, tangents[1])
    built = si.RegularGridInterpolator(points, values, *rest, **kwargs)
    dv = tangent_array(values, unthunk(tangents[2]))
    return built, _ZERO if _is_zero(dv) else Tangent[si.RegularGridInterpolator](_values=_flipped(dv, built))


class _GridPoints:
    """A grid interpolator's cells and weights at points ``xi`` (rows of ``(points, dims)``): each axis's
    interval ``i[d]`` and fraction ``w[d]`` (NumPy's arithmetic on the points, so an engine's points give
    fractions carrying their derivatives), and the points filled in place of a value."""

    def __init__(self, obj, xi):
        grid = obj._grid
        self.obj, self.dims = obj, len(grid)
        self.shape = np.shape(stood_for(xi))
        plain = np.reshape(np.asarray(stood_for(xi), dtype=_FLOAT), (-1, self.dims))
        rows = np.reshape(xi, (-1, self.dims)) if _engine_value(xi) is not None else plain
        self.i, self.w, self.h = [], [], []
        for d, g in enumerate(grid):
            i = np.clip(np.searchsorted(g, plain[:, d]) - 1, 0, len(g) - 2)
            h = g[i + 1] - g[i]
            self.i.append(i)
            self.h.append(h)
            self.w.append((rows[:, d] - g[i]) / h)
        outside = None
        if not obj.bounds_error and obj.fill_value is not None:
            outside = np.any([(plain[:, d] < g[0]) | (plain[:, d] > g[-1]) for d, g in enumerate(grid)], axis=0)
        self.outside = outside

    def corners(self):
        """``(index, weight, partials)`` per corner of the cells: the values' index, the weights, and the
        weights' derivatives along each axis."""
        for corner in itertools.product((0, 1), repeat=self.dims):
            index = tuple(i + c for i, c in zip(self.i, corner))
            factors = [w if c else 1 - w for w, c in zip(self.w, corner)]
            signs = [1.0 / h if c else -1.0 / h for h, c in zip(self.h, corner)]
            weight = _product(factors)
            partials = [_product([*factors[:d], *factors[d + 1 :]]) * signs[d] for d in range(self.dims)]
            if self.outside is not None:
                weight = np.where(self.outside, 0.0, weight)
                partials = [np.where(self.outside, 0.0, p) for p in partials]
            yield index, weight, partials

    def columns(self, values):
        return np.reshape(values, (*np.shape(values)[: self.dims], -1))

    def combined(self, values):
        """The weighted sums of ``values`` at the points, as (points, columns); zero outside."""
        columns = self.columns(values)
        return sum(weight[:, None] * columns[index] for index, weight, _ in self.corners())

    def evaluate(self, values):
        """The interpolated values, as (points, columns); the fill value outside."""
        out = self.combined(values)
        return out if self.outside is None else np.where(self.outside[:, None], self.obj.fill_value, out)

    def slopes(self, values):
        """The derivatives along each axis, (dims, points, columns)."""
        columns = self.columns(values)
        rows = [0.0] * self.dims
        for index, _, partials in self.corners():
            for d in range(self.dims):
                rows[d] = rows[d] + partials[d][:, None] * columns[index]
        return np.stack(rows)

    def values_cotangent(self, dy2):
        shape = np.shape(self.obj._values)
        columns = (*shape[: self.dims], np.shape(dy2)[1])
        corners = list(self.corners())
        index = tuple(np.concatenate([c[0][d] for c in corners]) for d in range(self.dims))
        weighted = np.concatenate([weight[:, None] * dy2 for _, weight, _ in corners])
        return np.reshape(scatter_add(columns, index, weighted), shape)

    def layout(self, values):
        return (*self.shape[:-1], *np.shape(values)[self.dims :])


def _product(factors: list):
    out = 1.0
    for f in factors:
        out = out * f
    return out


def _grid_method(obj, rest: tuple, kwargs: dict) -> str:
    method = rest[0] if rest else kwargs.get("method")
    return obj.method if method is None else method


@rrule.register(si.RegularGridInterpolator, functor=True)
def rrule_grid_call(obj, xi, *rest, **kwargs):
    no_rest = (_NO,) * len(rest)
    if _grid_method(obj, rest, kwargs) != "linear":
        if _engine_value(obj, xi) is not None:
            raise _refusal(type(obj), None, _GRID_METHODS)
        refused = _refused(type(obj), user_location(), _GRID_METHODS)
        return obj(stood_for(xi), *rest, **kwargs), lambda dy: (refused, refused, *no_rest)
    values = obj._values
    cells = _GridPoints(obj, xi)
    if _engine_value(obj, xi) is None:
        y = obj(xi, *rest, **kwargs)
    else:  # (SciPy converts an engine's values: the same weighted sum, on them)
        with_fields(obj, {"_values": stood_for(values)})(stood_for(xi), *rest, **kwargs)  # (SciPy's checks)
        y = np.reshape(cells.evaluate(values), cells.layout(values))

    def grid_call_pullback(dy):
        dy = unthunk(dy)
        if _is_zero(dy):
            return _ZERO, _ZERO, *no_rest
        dy2 = np.reshape(dy, (len(cells.i[0]), -1))
        d_obj = Tangent[type(obj)](_values=Thunk(lambda: cells.values_cotangent(dy2)))
        d_xi = Thunk(lambda: _points_cotangent(xi, np.stack([_summed(s, dy2) for s in cells.slopes(values)], 1)))
        return d_obj, d_xi, *no_rest

    return y, grid_call_pullback


@frule.register(si.RegularGridInterpolator, functor=True)
def frule_grid_call(tangents, obj, xi, *rest, **kwargs):
    y = obj(xi, *rest, **kwargs)
    d_obj, d_xi = unthunk(tangents[0]), unthunk(tangents[1])
    fields = {} if _is_zero(d_obj) else item_tangents(d_obj, obj)
    _no_knot_tangent(type(obj), fields.get("_grid", _ZERO))
    dv = unthunk(fields.get("_values", _ZERO))
    if _is_zero(dv) and _is_zero(d_xi):
        return y, _ZERO
    if _grid_method(obj, rest, kwargs) != "linear":
        raise _refusal(type(obj), None, _GRID_METHODS)
    cells = _GridPoints(obj, xi)
    moved = None
    if not _is_zero(d_xi):
        steps = np.reshape(d_xi, (-1, cells.dims))
        moved = sum(s * steps[:, d, None] for d, s in enumerate(cells.slopes(obj._values)))
    dy2 = _tangent_sum(None if _is_zero(dv) else cells.combined(dv), moved)
    return y, np.reshape(dy2, cells.layout(obj._values))


# ----- splrep: FITPACK's B-spline of its values ----------------------------------------------------------
# For knots the values do not choose (interpolating, s=0; or the knots given, task=-1) its coefficients are
# the weighted least-squares fit on them: ``B^T W^2 B c = B^T W^2 y``, linear in the values (the residual
# is zero where it interpolates). Its tck tuple holds them padded with ``k + 1`` zeros, as FITPACK gives them.

_SMOOTHED = (
    "splrep with s > 0 (or with weights and s unset) chooses its knots from the values: not differentiated "
    "in them; s=0 (interpolating) or task=-1 with the knots given is"
)


def _build_splrep(x, y, rest: tuple, kwargs: dict) -> _Construction:
    names = (("w", None), ("xb", None), ("xe", None), ("k", 3), ("task", 0), ("s", None), ("t", None))
    names += (("full_output", 0), ("per", 0), ("quiet", 1))
    s = _arguments(si.splrep, x, y, rest, kwargs, names)
    if s["full_output"] or s["per"]:
        raise option_refused(si.splrep, (x, y), "full_output and per=1 have no rule; call it without them")
    built = si.splrep(x, stood_for(y), *rest, **kwargs)
    if s["task"] != -1 and (s["w"] is not None if s["s"] is None else s["s"] != 0):  # (SciPy's default s)
        return _Construction(si.splrep, built, _smoothed_refused, y, 0)
    points = np.asarray(x, dtype=_FLOAT)
    weights = np.ones(len(points)) if s["w"] is None else np.asarray(s["w"], dtype=_FLOAT)

    def fit():
        t, _, k = built
        B = _design(t, k, points, 0)
        weighted = sp.csr_array(B.T @ sp.diags_array(weights**2))  # (B^T W^2)
        return _Fit(weighted @ B, weighted)

    return _Construction(si.splrep, built, fit, y, 0)


def _smoothed_refused():
    raise _refusal(si.splrep, None, _SMOOTHED)


def _padded_coefficients(c: _Construction, dc2):
    """The tck's coefficients for the fit's (a column): padded with zeros to the knots' length."""
    dc = dc2[:, 0]
    return np.concatenate([dc, np.zeros(len(c.built[1]) - len(dc))])


def _splrep_tangent(c: _Construction, dy):
    return Tangent[tuple](_ZERO, _padded_coefficients(c, c.coefficients(dy)), _NO)


def _splrep_carried(c: _Construction, y):
    t, coefficients, k = c.built
    return t, coefficients + _padded_coefficients(c, c.carried(y)), k


def _splrep_cotangent(c: _Construction, d_tck):
    dc = unthunk(item_tangents(d_tck, c.built)[1])
    n = len(c.built[0]) - c.built[2] - 1
    return dc if _is_zero(dc) else c.values(np.reshape(dc[:n], (n, 1)))


_constructor_rules(si.splrep, _build_splrep, _splrep_tangent, _splrep_carried, _splrep_cotangent)


_SPLEV = "splev is differentiated for a tck tuple of one coefficient array and ext 0, 1 or 2"


class _SplevPoints:
    """``splev(x, (t, c, k), der, ext)``: the B-spline ``(t, c, k)``'s plan at the points (ext=0
    extrapolates, ext=1 gives zero beyond the base interval, ext=2 raises there)."""

    def __init__(self, x, tck, der: int, ext: int):
        if ext not in (0, 1, 2) or isinstance(tck, si.BSpline) or np.ndim(stood_for(tck[1])) != 1:
            raise option_refused(si.splev, (x, tck), _SPLEV)
        t, c, k = tck
        if _engine_value(t) is not None:
            raise _refusal(si.splev, None, _KNOTS)
        spline = with_fields(si.BSpline.construct_fast(t, stood_for(c), k), {"_c": c})
        self.spline, self.x, self.der, self.extrapolate = spline, x, der, ext == 0
        self.plan = _BSplinePlan(spline, x, self.extrapolate)
        self.layout = (np.shape(stood_for(x)), (), 0)

    def slope(self):
        return _derivative_at(self.spline, self.x, self.der, self.extrapolate, self.layout, self.plan.outside)


def _splev_settings(rest: tuple, kwargs: dict) -> tuple[int, int]:
    settings = dict(zip(("der", "ext"), rest))
    settings.update(kwargs)
    return int(settings.get("der", 0)), int(settings.get("ext", 0))


@rrule.register(si.splev)
def rrule_splev(x, tck, *rest, **kwargs):
    der, ext = _splev_settings(rest, kwargs)
    call = _SplevPoints(x, tck, der, ext)
    if _engine_value(x, tck) is None:
        y = si.splev(x, tck, *rest, **kwargs)
    else:  # (the B-spline holding the engine's coefficients, called by the engine)
        si.splev(stood_for(x), tuple(stood_for(v) for v in tck), *rest, **kwargs)  # (SciPy's checks)
        y = _evaluated(call.spline, x, {"nu": der, "extrapolate": call.extrapolate})
    knots = _refused(si.splev, user_location(), _KNOTS)
    no_rest = (_NO,) * len(rest)

    def splev_pullback(dy):
        dy = unthunk(dy)
        if _is_zero(dy):
            return _NO, _ZERO, _ZERO, *no_rest
        dy2 = _arranged_columns(dy, *call.layout)
        dc = Thunk(lambda: call.plan.linear(der).adjoint(dy2))
        dx = Thunk(lambda: _points_cotangent(x, _summed(call.slope(), dy2)))
        return _NO, dx, Tangent[tuple](knots, dc, _NO), *no_rest

    return y, splev_pullback


rrule_splev.on_engine_values = True


@frule.register(si.splev)
def frule_splev(tangents, x, tck, *rest, **kwargs):
    der, ext = _splev_settings(rest, kwargs)
    y = si.splev(x, tck, *rest, **kwargs)
    dx, d_tck = unthunk(tangents[1]), unthunk(tangents[2])
    dt, dc, _ = [_ZERO] * 3 if _is_zero(d_tck) else [unthunk(d) for d in item_tangents(d_tck, tck)]
    _no_knot_tangent(si.splev, dt)
    if _is_zero(dx) and _is_zero(dc):
        return y, _ZERO
    call = _SplevPoints(x, tck, der, ext)
    dy2 = _tangent_sum(
        None if _is_zero(dc) else call.plan.linear(der).apply(dc),
        None if _is_zero(dx) else _points_term(call.slope(), dx),
    )
    return y, _arranged(dy2, *call.layout)


# ----- interpn: a RegularGridInterpolator called once -------------------------------------------------

_INTERPN_POINTS = "interpn is differentiated in xi given as one array (..., ndim), not as a tuple of arrays"


def _interpn_settings(rest: tuple, kwargs: dict) -> dict:
    settings = dict(zip(("method", "bounds_error", "fill_value"), rest))
    settings.update(kwargs)
    return settings


def _interpn_points(xi):
    """``xi`` as one array of points (..., ndim): a tuple of coordinate arrays broadcast and stacked."""
    return np.stack(np.broadcast_arrays(*map(np.asarray, xi)), axis=-1) if isinstance(xi, tuple) else xi


@rrule.register(si.interpn)
def rrule_interpn(points, values, xi, *rest, **kwargs):
    """``interpn(points, values, xi)``: ``RegularGridInterpolator(points, values, ...)(xi)``, by their rules."""
    settings = _interpn_settings(rest, kwargs)
    if _engine_value(rest, kwargs) is not None:
        raise _refusal(si.interpn, None, _SETTINGS)
    if isinstance(xi, tuple) and _engine_value(xi) is not None:
        raise _refusal(si.interpn, None, _INTERPN_POINTS)
    location = user_location()
    no_rest = tuple(_refused(si.interpn, location, _SETTINGS) for _ in rest)
    if settings.get("method", "linear") != "linear":
        if _engine_value(points, values, xi) is not None:
            raise _refusal(si.interpn, None, _GRID_METHODS)
        refused = _refused(si.interpn, location, _GRID_METHODS)
        y = si.interpn(points, values, xi, *rest, **kwargs)
        return y, lambda dy: (_NO, _refused(si.interpn, location, _KNOTS), refused, refused, *no_rest)
    obj, obj_pullback = rrule_grid_interpolator(points, values, **settings)
    y, call_pullback = rrule_grid_call(obj, _interpn_points(xi))

    def interpn_pullback(dy):
        d_obj, d_xi = call_pullback(dy)
        _, d_points, d_values = obj_pullback(d_obj)
        if isinstance(xi, tuple):
            d_xi = _refused(si.interpn, location, _INTERPN_POINTS)
        return _NO, d_points, d_values, d_xi, *no_rest

    return y, interpn_pullback


rrule_interpn.on_engine_values = True


@frule.register(si.interpn)
def frule_interpn(tangents, points, values, xi, *rest, **kwargs):
    for d in tangents[4:]:
        _no_knot_tangent(si.interpn, d, _SETTINGS)
    if isinstance(xi, tuple):
        _no_knot_tangent(si.interpn, tangents[3], _INTERPN_POINTS)
    settings = _interpn_settings(rest, kwargs)
    if settings.get("method", "linear") != "linear":
        for d in tangents[2:4]:
            _no_knot_tangent(si.interpn, d, _GRID_METHODS)
        _no_knot_tangent(si.interpn, tangents[1])
        return si.interpn(points, values, xi, *rest, **kwargs), _ZERO
    obj, d_obj = frule_grid_interpolator((_NO, *tangents[1:3]), points, values, **settings)
    d_xi = _ZERO if isinstance(xi, tuple) else tangents[3]
    return frule_grid_call((d_obj, d_xi), obj, _interpn_points(xi))


# ----- RBFInterpolator --------------------------------------------------------------------------------
# Its coefficients ``_coeffs`` (one row per center, then one per monomial) solve the system of its kernel
# at the centers' distances (plus the smoothing) and its monomials, ``[[K + S, P], [P^T, 0]] c = [d, 0]``:
# linear in the values ``d`` (complex ones as pairs of real columns, as SciPy keeps them). A call is the
# matrix of the kernel at the distances to the centers and of the monomials at the shifted and scaled
# points, times them. The centers, the smoothing and epsilon are not differentiated; nor is an
# interpolator of ``neighbors`` (each point its own system, switching with the neighborhoods).

# the kernels phi(r) as psi(s) of s = r**2 (SciPy's RBFInterpolator), and psi'(s); 0 at s = 0 where
# phi' is (thin_plate_spline's, cubic's, quintic's) or where r has no derivative (linear's)
_RBF_KERNELS = {
    "linear": (lambda s: -np.sqrt(s), lambda s: np.where(s > 0, -0.5 / np.sqrt(np.where(s > 0, s, 1.0)), 0.0)),
    "thin_plate_spline": (
        lambda s: np.where(s > 0, 0.5 * s * np.log(np.where(s > 0, s, 1.0)), 0.0),
        lambda s: np.where(s > 0, 0.5 * np.log(np.where(s > 0, s, 1.0)) + 0.5, 0.0),
    ),
    "cubic": (lambda s: s * np.sqrt(s), lambda s: 1.5 * np.sqrt(s)),
    "quintic": (lambda s: -s * s * np.sqrt(s), lambda s: -2.5 * s * np.sqrt(s)),
    "multiquadric": (lambda s: -np.sqrt(s + 1), lambda s: -0.5 / np.sqrt(s + 1)),
    "inverse_multiquadric": (lambda s: 1 / np.sqrt(s + 1), lambda s: -0.5 / (s + 1) ** 1.5),
    "inverse_quadratic": (lambda s: 1 / (s + 1), lambda s: -1 / (s + 1) ** 2),
    "gaussian": (lambda s: np.exp(-s), lambda s: -np.exp(-s)),
}

_NEIGHBORS = (
    "RBFInterpolator with neighbors (a system per neighborhood, switching with the points) is not "
    "differentiated; neighbors=None is"
)


class _RBFMatrix:
    """An ``RBFInterpolator``'s matrix at points ``x`` (rows; NumPy's arithmetic, so an engine's points
    carry their derivatives): the kernel at their distances to the centers, then the monomials of the
    points shifted and scaled as the fit's; ``along(k)`` is its derivative along coordinate ``k``."""

    def __init__(self, obj, x):
        self.obj, self.x = obj, x
        eps = obj.epsilon
        self.diff = eps * (x[:, None, :] - obj.y[None, :, :])  # (points, centers, dims)
        self.s = np.sum(self.diff * self.diff, axis=2)
        self.scaled = (x - obj._shift) / obj._scale
        self.powers = np.asarray(obj.powers)

    def value(self):
        phi, _ = _RBF_KERNELS[self.obj.kernel]
        monomials = np.prod(self.scaled[:, None, :] ** self.powers[None], axis=2)
        return np.concatenate([phi(self.s), monomials], axis=1)

    def along(self, k: int):
        _, slope = _RBF_KERNELS[self.obj.kernel]
        kernel = slope(self.s) * 2 * self.obj.epsilon * self.diff[:, :, k]
        p = self.powers[:, k]
        factors = self.scaled[:, None, :] ** self.powers[None]
        lowered = self.scaled[:, None, k] ** np.maximum(p - 1, 0)[None] * (p / self.obj._scale[k])[None]
        others = np.prod(np.concatenate([factors[:, :, :k], factors[:, :, k + 1 :]], axis=2), axis=2)
        return np.concatenate([kernel, lowered * others], axis=1)


def _real_pairs(z, complex_values: bool):
    """Complex columns as SciPy keeps them, pairs of real columns (real, imaginary)."""
    if not complex_values:
        return z
    return np.reshape(np.stack([np.real(z), np.imag(z)], axis=-1), (np.shape(z)[0], -1))


def _complex_columns(r, complex_values: bool):
    """The inverse of ``_real_pairs``."""
    return r[:, 0::2] + 1j * r[:, 1::2] if complex_values else r


class _RBFFit:
    """The coefficients of an ``RBFInterpolator`` as a linear map of its values (columns, complex ones
    taken as pairs of real columns): the solution of its system (``np.linalg.solve``, whose rules carry an
    engine's values)."""

    def __init__(self, obj, complex_values: bool):
        centers = _RBFMatrix(obj, obj.y).value()
        n, r = np.shape(obj.y)[0], len(obj.powers)
        top = centers + np.concatenate([np.diag(obj.smoothing), np.zeros((n, r))], axis=1)
        bottom = np.concatenate([centers[:, n:].T, np.zeros((r, r))], axis=1)
        self.lhs, self.n, self.r, self.complex = np.concatenate([top, bottom]), n, r, complex_values

    def forward(self, dd2):
        dd2 = _real_pairs(dd2, self.complex)
        return np.linalg.solve(self.lhs, np.concatenate([dd2, np.zeros((self.r, np.shape(dd2)[1]))]))

    def adjoint(self, dc2):
        return _complex_columns(np.linalg.solve(self.lhs.T, dc2)[: self.n], self.complex)

    def delta(self, d2):
        return self.forward(d2 - stood_for(d2))


def _build_rbf(y, d, rest: tuple, kwargs: dict) -> _Construction:
    s = _arguments(si.RBFInterpolator, y, d, rest, kwargs, (("neighbors", None),))
    built = si.RBFInterpolator(y, stood_for(d), *rest, **kwargs)
    if s["neighbors"] is not None:
        fit = _neighbors_refused
    else:
        fit = lambda: _RBFFit(built, np.iscomplexobj(stood_for(d)))  # noqa: E731
    return _Construction(si.RBFInterpolator, built, fit, d, 0)


def _neighbors_refused():
    raise _refusal(si.RBFInterpolator, None, _NEIGHBORS)


def _rbf_tangent(c: _Construction, dd):
    """The tangent of an ``RBFInterpolator``: of its values ``d`` (as it keeps them) and its coefficients."""
    dd2 = _columns(dd, 0)
    return Tangent[si.RBFInterpolator](d=_real_pairs(dd2, c.fit.complex), _coeffs=c.coefficients(dd))


def _rbf_carried(c: _Construction, d):
    delta = _rbf_tangent(c, d - stood_for(d))
    return with_fields(c.built, {"d": c.built.d + delta.d, "_coeffs": c.built._coeffs + delta._coeffs})


def _rbf_cotangent(c: _Construction, d_obj):
    fields = {k: unthunk(v) for k, v in item_tangents(d_obj, c.built).items()}
    total = _tangent_sum(
        None if _is_zero(fields["d"]) else _complex_columns(fields["d"], c.fit.complex),
        None if _is_zero(fields["_coeffs"]) else c.fit.adjoint(fields["_coeffs"]),
    )
    return _ZERO if total is None else _uncolumns(total, c.shape, 0)


_constructor_rules(si.RBFInterpolator, _build_rbf, _rbf_tangent, _rbf_carried, _rbf_cotangent)


def _rbf_output(obj, out2, n_points: int):
    """A call's values from its real columns, laid out as SciPy returns them."""
    return np.reshape(_complex_columns(out2, _complex_rbf(obj)), (n_points, *obj.d_shape))


def _complex_rbf(obj) -> bool:
    return np.dtype(obj.d_dtype).kind == "c"


@rrule.register(si.RBFInterpolator, functor=True)
def rrule_rbf_call(obj, x):
    owner = _engine_value(obj, x)
    if obj.neighbors is not None:
        if owner is not None:
            raise _refusal(si.RBFInterpolator, None, _NEIGHBORS)
        refused = _refused(si.RBFInterpolator, user_location(), _NEIGHBORS)
        return obj(x), lambda dy: (refused, refused)
    points = _RBFMatrix(obj, x if _engine_value(x) is not None else np.asarray(x, dtype=_FLOAT))
    if owner is None:
        y = obj(x)
    else:  # (SciPy converts an engine's values: the same product, on them)
        y = _rbf_output(obj, points.value() @ obj._coeffs, len(stood_for(x)))
    complex_values = _complex_rbf(obj)

    def rbf_call_pullback(dy):
        dy = unthunk(dy)
        if _is_zero(dy):
            return _ZERO, _ZERO
        g = _real_pairs(np.reshape(dy, (np.shape(dy)[0], -1)), complex_values)
        d_obj = Tangent[si.RBFInterpolator](_coeffs=Thunk(lambda: points.value().T @ g))

        def points_cotangent():
            spread = g @ obj._coeffs.T
            return _points_cotangent(
                x, np.stack([np.sum(points.along(k) * spread, axis=1) for k in range(np.shape(x)[1])], 1)
            )

        return d_obj, Thunk(points_cotangent)

    return y, rbf_call_pullback


@frule.register(si.RBFInterpolator, functor=True)
def frule_rbf_call(tangents, obj, x):
    y = obj(x)
    d_obj, dx = unthunk(tangents[0]), unthunk(tangents[1])
    fields = {} if _is_zero(d_obj) else {k: unthunk(v) for k, v in item_tangents(d_obj, obj).items()}
    _no_knot_tangent(si.RBFInterpolator, fields.get("y", _ZERO))
    dc = fields.get("_coeffs", _ZERO)
    if _is_zero(dc) and _is_zero(dx):  # (its values ``d`` are read by its fit only)
        return y, _ZERO
    if obj.neighbors is not None:
        raise _refusal(si.RBFInterpolator, None, _NEIGHBORS)
    points = _RBFMatrix(obj, np.asarray(x, dtype=_FLOAT))
    moved = None
    if not _is_zero(dx):
        moved = sum((points.along(k) * np.reshape(dx[:, k], (-1, 1))) @ obj._coeffs for k in range(np.shape(x)[1]))
    out2 = _tangent_sum(None if _is_zero(dc) else points.value() @ dc, moved)
    return y, _ZERO if out2 is None else _rbf_output(obj, out2, len(x))


# ----- derivatives, antiderivatives and integrals -------------------------------------------------
# Each is linear in the spline's coefficients. The maps are NumPy's arithmetic, so an engine's values (a
# Hessian's) pass through them. A piecewise polynomial's antiderivatives and integrals depend on its
# breakpoints too, differentiated as its calls differentiate them; a B-spline's knots are not.


def _order_setting(rest: tuple, kwargs: dict) -> int:
    """``nu`` of ``s.derivative(nu=1)`` or ``s.antiderivative(nu=1)``."""
    return int(rest[0] if rest else kwargs.get("nu", 1))


def _derivative_factors(c, nu: int):
    """The rising factorials ``PPoly.derivative`` multiplies the kept coefficients by, shaped to them."""
    kept = max(np.shape(c)[0] - nu, 1)
    factors = np.array([np.prod(np.arange(p, p + nu, dtype=float)) for p in range(kept, 0, -1)])
    return np.reshape(factors, (kept,) + (1,) * (np.ndim(c) - 1))


class _PPolyOrder:
    """The coefficients of ``s.derivative(nu)`` (``nu < 0``: ``s.antiderivative(-nu)``) as a linear map of
    ``s``'s ``(order, interval, ...)``: a derivative keeps those of order ``nu`` and more times rising
    factorials; each step of an antiderivative divides them by their new powers and adds the constant terms
    that make it continuous and zero at ``x[0]``, the integrals over the intervals before (as
    ``PPoly.antiderivative``). Those integrals move with the breakpoints: ``d/dh_j`` of the integral over
    interval ``j`` is the polynomial's value at its end.

    >>> s = si.PPoly(np.array([[2.0, 2.0], [1.0, 3.0]]), np.array([0.0, 1.0, 2.0]))
    >>> _PPolyOrder(s, -1).apply(s.c).tolist()  # (1 + 1 = 2 at x = 1)
    [[1.0, 1.0], [1.0, 3.0], [0.0, 2.0]]
    """

    knots, knots_differentiated = "_x", True

    def __init__(self, s, nu: int):
        self.nu, self.order, self.x = nu, np.shape(s._c)[0], s._x
        self.factors = _derivative_factors(s._c, nu) if 0 <= nu < self.order else None

    def _powers(self, exponents, like):
        return np.reshape(np.diff(self.x), (1, -1) + (1,) * (np.ndim(like) - 2)) ** _along_first(exponents, like)

    def _at_ends(self, c):
        """Each interval's polynomial at the interval's end."""
        return np.sum(c * self._powers(np.arange(np.shape(c)[0] - 1, -1, -1.0), c), axis=0)

    def _step(self, c, moved=None):
        """One antiderivative step; ``moved``: the coefficients it is given and the breakpoints' tangent,
        for the tangent ``c`` of those coefficients."""
        q = np.arange(np.shape(c)[0], 0, -1.0)
        c = c / _along_first(q, c)
        ends = np.sum(c * self._powers(q, c), axis=0)  # (the integral over each interval)
        if moved is not None:
            ends = ends + self._at_ends(moved[0]) * _along_first(np.diff(moved[1]), ends)
        return np.concatenate([c, np.cumsum(np.concatenate([_zero_rows(1, ends), ends[:-1]]), axis=0)[None]])

    def apply(self, c, moved=None):
        """The result's coefficients (or their tangent) for ``c``; ``moved`` as ``_step``'s."""
        if self.nu >= 0:
            if self.nu >= self.order:
                return _zero_rows(1, c)
            return c[: self.order - self.nu] * self.factors
        for _ in range(-self.nu):
            if moved is not None:
                c, moved = self._step(c, moved), (self._step(moved[0]), moved[1])
            else:
                c = self._step(c)
        return c

    def adjoint(self, g, c=None):
        """The cotangent of the coefficients for the result's ``g``, and, at coefficients ``c``, that of the
        breakpoints (None for a derivative)."""
        if self.nu >= 0:
            if self.nu >= self.order:
                return _zero_rows(self.order, g), None
            return np.concatenate([g * self.factors, _zero_rows(self.nu, g)]), None
        given = [c]
        for _ in range(-self.nu - 1):
            given.append(None if c is None else self._step(given[-1]))
        dx = None
        for step in reversed(range(-self.nu)):
            q = np.arange(self.order + step, 0, -1.0)
            later = np.cumsum(g[-1][:0:-1], axis=0)[::-1]  # (each interval's integral is in the later constants)
            ends = np.concatenate([later, _zero_rows(1, later)])
            g = (g[:-1] + self._powers(q, g[:-1]) * ends[None]) / _along_first(q, ends[None])
            if c is not None:
                dh = np.reshape(np.conj(self._at_ends(given[step])) * ends, (len(ends), -1))
                dh = _real_like(self.x, np.sum(dh, axis=1))
                dx = _tangent_sum(dx, np.concatenate([-dh, [0.0]]) + np.concatenate([[0.0], dh]))
        return g, dx

    def blank(self, s):
        """The result for zero coefficients."""
        return si.PPoly.construct_fast(_zero_rows(self.order - self.nu, s._c), s._x)


class _BSplineAntiderivative:
    """The coefficients of ``s.antiderivative(-nu)`` as a linear map of ``s``'s: each step's are the
    cumulated sums of ``c[j] (t[j + k + 1] - t[j]) / (k + 1)``, zero first, on the knots with one more at each
    end (the integral of a B-spline: de Boor, "A Practical Guide to Splines", ch. X; SciPy's ``splantider``).
    The knots are not differentiated."""

    knots, knots_differentiated = "_t", False

    def __init__(self, s, nu: int):
        t, k, rows = s._t, s.k, np.shape(s._c)[0]
        self.rows = rows
        self.steps = []  # (gaps, coefficients used, rows given, degree) per step
        for _ in range(-nu):
            n = len(t) - k - 1
            self.steps.append((t[k + 1 :] - t[:n], n, rows, k))
            t, k, rows = np.concatenate([t[:1], t, t[-1:]]), k + 1, len(t) + 2
        self.t, self.k = t, k

    def apply(self, c, moved=None):
        if not self.steps:  # (order 0: the coefficients padded to the knots' length)
            return np.concatenate([c, _zero_rows(len(self.t) - np.shape(c)[0], c)])
        for gaps, n, _, k in self.steps:
            sums = np.cumsum(c[:n] * _along_first(gaps, c), axis=0) / (k + 1)
            c = np.concatenate([_zero_rows(1, sums), sums, *([sums[-1:]] * (k + 2))])
        return c

    def adjoint(self, g, c=None):
        if not self.steps:
            return g[: self.rows], None
        for gaps, n, rows, k in reversed(self.steps):
            tail = g[n : n + 1] + np.sum(g[n + 1 :], axis=0)[None]  # (the last sum, repeated)
            sums = np.concatenate([g[1:n], tail])
            g = np.cumsum(sums[::-1], axis=0)[::-1] * _along_first(gaps / (k + 1), sums)
            g = np.concatenate([g, _zero_rows(rows - n, g)])
        return g, None

    def blank(self, s):
        """The result for zero coefficients, with the coefficients its evaluation reads."""
        return si.BSpline.construct_fast(self.t, _zero_rows(len(self.t) - self.k - 1, s._c), self.k)


def _bspline_order(s, nu: int) -> _BSplineAntiderivative:
    if nu > 0:
        raise option_refused(
            si.BSpline.antiderivative, (s, -nu), "nu < 0 is a derivative, which has no rule; call it with nu >= 0"
        )
    return _BSplineAntiderivative(s, nu)


def _order_rules(method, order_of, sign: int):
    """Rules for ``s.derivative(nu=1)`` (``sign`` 1) or ``s.antiderivative(nu=1)`` (-1), a linear map of
    the coefficients given by ``order_of(s, sign * nu)`` (``apply``, ``adjoint``), the knots kept: their
    tangent passes through where the map differentiates them (``knots_differentiated``), else is refused."""

    def rrule_order(s, *rest, **kwargs):
        order = order_of(s, sign * _order_setting(rest, kwargs))
        if _engine_value(s._c) is None:
            y = method(s, *rest, **kwargs)
        else:  # (SciPy's arithmetic converts them: the same map, on them)
            y = method(with_fields(s, {"_c": stood_for(s._c)}), *rest, **kwargs)
            y = with_fields(y, {"_c": order.apply(s._c)})
        no_rest = (_NO,) * len(rest)

        def order_pullback(dy):
            dy = unthunk(dy)
            if _is_zero(dy):
                return _NO, _ZERO, *no_rest
            fields = item_tangents(dy, y)
            dc = unthunk(fields["_c"])
            dc, dx = (dc, None) if _is_zero(dc) else order.adjoint(dc, s._c)
            knots = {}
            if order.knots_differentiated:
                kept = unthunk(fields[order.knots])
                knots[order.knots] = _tangent_sum(None if _is_zero(kept) else kept, dx)
            return _NO, Tangent[type(s)](_c=dc, **knots), *no_rest

        return y, order_pullback

    def frule_order(tangents, s, *rest, **kwargs):
        order = order_of(s, sign * _order_setting(rest, kwargs))
        y = method(s, *rest, **kwargs)
        d_s = unthunk(tangents[1])
        if _is_zero(d_s):
            return y, _ZERO
        fields = {k: unthunk(v) for k, v in item_tangents(d_s, s).items()}
        dc, dx = fields["_c"], fields[order.knots]
        if not order.knots_differentiated:
            _no_knot_tangent(method, dx)
        elif not _is_zero(dx):
            dc = order.apply(np.zeros(np.shape(s._c)) if _is_zero(dc) else dc, (s._c, dx))
            return y, Tangent[type(y)](_c=dc, _x=dx)
        return y, Tangent[type(y)](_c=dc if _is_zero(dc) else order.apply(dc), **{order.knots: _ZERO})

    rrule.register(method)(rrule_order)
    frule.register(method)(frule_order)


class _Integral:
    """``s.integrate(a, b, extrapolate)`` as ``sum_j signs[j] F(points[j])``, ``F`` the antiderivative zero
    at the start of the base interval ``[start, end]``, at the points SciPy splits the integral at: whole
    periods and the rest wrapped into the base interval (``periodic``), the bounds clipped to it (``clips``).
    ``follows`` holds how far each point moves with ``a``, ``b``, ``start`` and ``end``."""

    def __init__(self, a, b, start: float, end: float, periodic: bool, clips: bool):
        bounds = [float(stood_for(a)), float(stood_for(b))]
        lo, hi, sign = (0, 1, 1.0) if bounds[1] >= bounds[0] else (1, 0, -1.0)
        a0, b0 = bounds[lo], bounds[hi]

        def moving(bound=None, wraps=0.0, start_=0.0, end_=0.0):  # (a point at bound - wraps (end - start))
            return [float(bound == 0), float(bound == 1), start_ + wraps, end_ - wraps]

        if periodic:
            period = end - start
            n, left = divmod(b0 - a0, period)
            wraps = np.floor((a0 - start) / period)
            a1 = start + (a0 - start) % period
            b1 = a1 + left
            terms = [(start, -n, moving(start_=1.0)), (end, n, moving(end_=1.0)), (a1, -1.0, moving(lo, wraps))]
            if b1 <= end:
                terms.append((b1, 1.0, moving(hi, wraps + n)))
            else:
                terms += [(end, 1.0, moving(end_=1.0)), (start, -1.0, moving(start_=1.0))]
                terms.append((start + b1 - end, 1.0, moving(hi, wraps + n + 1)))
        else:
            terms = [(a0, -1.0, moving(lo)), (b0, 1.0, moving(hi))]
            if clips:
                terms = [
                    (p, w, f)
                    if start <= p <= end
                    else (start, w, moving(start_=1.0))
                    if p < start
                    else (end, w, moving(end_=1.0))
                    for p, w, f in terms
                ]
        self.points = np.array([p for p, _, _ in terms])
        self.signs = sign * np.array([w for _, w, _ in terms])[:, None]
        self.follows = np.array([f for _, _, f in terms]).T

    def at(self, a, b):
        """The points, carrying the engine's values of the bounds they follow."""
        points = self.points
        for follows, bound in zip(self.follows, (a, b)):
            if _engine_value(bound) is not None:
                points = points + (bound - stood_for(bound)) * follows
        return points

    def moved(self, da, db, dx):
        """How far the tangents of the bounds and of the base interval's ends move the points; None where
        they do not."""
        ends = (_ZERO, _ZERO) if _is_zero(dx) else (dx[0], dx[-1])
        return _tangent_sum(*(f * d for f, d in zip(self.follows, (da, db, *ends)) if not _is_zero(d)))

    def ends_term(self, g, dx):
        """The ends' cotangent ``g`` (per point) brings to the breakpoints' ``dx``."""
        ends = [np.sum(g * self.follows[2])[None], np.zeros(len(dx) - 2), np.sum(g * self.follows[3])[None]]
        return dx + np.concatenate(ends)


def _integral_rules(method, base, order_of, plan_of, clips: bool):
    """Rules for ``s.integrate(a, b, extrapolate=None)``, differentiated in the coefficients (a linear map:
    the antiderivative's, ``order_of(s, -1)``, at the points ``plan_of`` evaluates), in the bounds (the
    integrand there) and, where ``order_of``'s map does, in the knots. ``base(s)``: the base interval;
    ``clips``: whether the bounds are clipped to it where it does not extrapolate (a B-spline's), else the
    integral has no value beyond it (NaN)."""

    def setup(s, a, b, rest: tuple, kwargs: dict):
        extrapolate = rest[0] if rest else kwargs.get("extrapolate")
        extrapolate = s.extrapolate if extrapolate is None else extrapolate
        periodic = isinstance(extrapolate, str) and extrapolate == "periodic"
        integral = _Integral(a, b, *base(s), periodic, clips and not periodic and not extrapolate)
        order = order_of(s, -1)
        evaluated = bool(periodic or extrapolate or clips)  # (the points are in the base interval otherwise)
        plan = plan_of(order.blank(s), integral.at(a, b), evaluated)
        layout = ((len(integral.points),), _extra(s), s.axis)
        integrand = lambda t: _derivative_at(s, t, -1, evaluated, layout, plan.outside)  # noqa: E731
        return integral, order, plan, integrand, evaluated

    def rrule_integrate(s, a, b, *rest, **kwargs):
        integral, order, plan, integrand, evaluated = setup(s, a, b, rest, kwargs)
        if _engine_value(s, a, b) is None:
            y = method(s, a, b, *rest, **kwargs)
        else:  # (the antiderivative holding the engine's values, called by the engine at points carrying them)
            F = with_fields(order.blank(s), {"_c": order.apply(s._c)})
            values = _evaluated(F, integral.at(a, b), {"extrapolate": evaluated})
            layout = ((len(integral.points),), _extra(s), 0)
            y = np.reshape(np.sum(integral.signs * _arranged_columns(values, *layout), axis=0), _extra(s))
        no_rest = (_NO,) * len(rest)

        def integrate_pullback(dy):
            dy = unthunk(dy)
            if _is_zero(dy):
                return _NO, _ZERO, _ZERO, _ZERO, *no_rest
            dy2 = integral.signs * np.reshape(dy, (1, -1))
            g = functools.cache(lambda: _summed(integrand(integral.at(a, b)), dy2))  # (per point)
            coefficients = functools.cache(lambda: order.adjoint(plan.linear(0).adjoint(dy2), s._c))
            fields = {"_c": Thunk(lambda: coefficients()[0])}
            if order.knots_differentiated:
                dx = Thunk(lambda: integral.ends_term(g(), plan.knots_term(g()) + coefficients()[1]))
                fields[order.knots] = Thunk(lambda: _real_like(s._x, unthunk(dx)))
            da, db = (
                Thunk(lambda f=f, v=v: _points_cotangent(v, np.sum(g() * f))) for f, v in zip(integral.follows, (a, b))
            )
            return _NO, Tangent[type(s)](**fields), da, db, *no_rest

        return y, integrate_pullback

    def frule_integrate(tangents, s, a, b, *rest, **kwargs):
        y = method(s, a, b, *rest, **kwargs)
        integral, order, plan, integrand, _ = setup(s, a, b, rest, kwargs)
        d_s, da, db = (unthunk(d) for d in tangents[1:4])
        fields = {} if _is_zero(d_s) else {k: unthunk(v) for k, v in item_tangents(d_s, s).items()}
        dc, dx = fields.get("_c", _ZERO), fields.get(order.knots, _ZERO)
        if not order.knots_differentiated:
            _no_knot_tangent(method, dx)
            dx = _ZERO
        moved = integral.moved(da, db, dx)
        if not _is_zero(dx):
            moved = _tangent_sum(moved, plan.knots_shift(dx))
            dc = order.apply(np.zeros(np.shape(s._c)) if _is_zero(dc) else dc, (s._c, dx))
        elif not _is_zero(dc):
            dc = order.apply(dc)
        rows = np.shape(order.blank(s)._c)[0]
        dy2 = _tangent_sum(
            None if _is_zero(dc) else plan.linear(0).apply(dc[:rows]),
            None if moved is None else _points_term(integrand(integral.points), moved),
        )
        return y, _ZERO if dy2 is None else np.reshape(np.sum(integral.signs * dy2, axis=0), np.shape(y))

    rrule.register(method)(rrule_integrate)
    frule.register(method)(frule_integrate)


def _bspline_base(s) -> tuple:
    return s._t[s.k], s._t[len(s._t) - s.k - 1]


def _ppoly_base(s) -> tuple:
    return s._x[0], s._x[-1]


_order_rules(si.PPoly.derivative, _PPolyOrder, 1)
_order_rules(si.PPoly.antiderivative, _PPolyOrder, -1)
_order_rules(si.BSpline.antiderivative, _bspline_order, -1)
_integral_rules(si.PPoly.integrate, _ppoly_base, _PPolyOrder, _PPolyPlan, False)
_integral_rules(si.BSpline.integrate, _bspline_base, _bspline_order, _BSplinePlan, True)
