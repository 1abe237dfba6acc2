"""Rules for ``scipy.integrate``'s quadratures of sampled values, ``trapezoid``,
``cumulative_trapezoid`` and ``simpson``, and for ``quad``'s integral of the user's function
(differentiated by Leibniz's rule on the partition quad settled on: see ``rrule_quad``).

All three are linear in the samples ``y``. ``trapezoid`` is ``np.trapezoid`` (its rules are the
NumPy function's, with an N-D ``x`` broadcast to ``y``'s shape first and the result in ``y``'s
floating dtype, as SciPy does), and ``cumulative_trapezoid`` the running sum of the same
trapezoids, ``cumsum(diff(x) * mean(y))``: both are differentiated in ``y`` and in the spacing
(``x``, or ``dx`` when ``x`` is None) when that is given by position. ``simpson``'s weights are
rational functions of the spacings (Cartwright 2017, and the irregular composite rule in
Wikipedia's "Simpson's rule" article, as SciPy computes them); it is differentiated in ``y`` only:
a differentiated ``x`` is refused (its cotangent raises when an engine reads it, its tangent makes
the ``frule`` raise), never a silent zero.

The pullbacks are written with NumPy functions that have rules (``cumsum``, ``flip``, ``pad``,
``diff``), so second derivatives work; an engine's value among the primal arguments (a Hessian's
dual numbers) has its engine run the SciPy function by its rule.

>>> import numpy as np, scipy.integrate as si, chainrules as cr
>>> y, back = cr.rrule(si.cumulative_trapezoid, np.array([1.0, 2.0, 4.0]))
>>> y, cr.unthunk(back(np.array([1.0, 1.0]))[1])
(array([1.5, 4.5]), array([1. , 1.5, 0.5]))
>>> _, back = cr.rrule(si.simpson, np.array([1.0, 2.0, 4.0]))
>>> cr.unthunk(back(1.0)[1])  # the weights dx/3 * (1, 4, 1)
array([0.33333333, 1.33333333, 0.33333333])
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.integrate as si

from ...core import (
    AbstractZero,
    ActiveValue,
    NoRuleError,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    add,
    call_by_engine,
    carries_batch,
    conj,
    frule,
    match_input,
    match_input_batch,
    rrule,
    unthunk,
)
from ...core.active import nesting_depth, stood_for
from ...core.errors import NoDerivativeError, NoForwardRuleError, at_user, user_location
from ...core.keywords import declare_options
from ...core.ruled_calls import engine_values_in
from ...core.structures import item_tangents
from ..numpy._arrays import cotangent_array, to_input
from ..numpy._util import axes_of, is_batched, match_output
from ..numpy.reductions import _diff_adjoint, _mean_adjoint, _reverse_cumsum, frule_trapezoid, rrule_trapezoid
from ..pyfunctional import _add_function_tangent, _pullback_of, later_pullbacks
from ._functionals import FunctionalCall, plain, undifferentiated_fields

_NO = NoTangent()
_ZERO = ZeroTangent()


def _by_rule(f, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)``, an engine's values run by their engine through this module's rule."""
    return call_by_engine(f, args, kwargs, f"scipy.integrate.{f.__name__}")


# ----- trapezoid ----------------------------------------------------------------------------


def _broadcast_points(y, args: tuple, kwargs: dict):
    """``(args, kwargs, x)``: SciPy broadcasts an N-D ``x`` to ``y``'s shape before it takes its
    differences (NumPy does not); the arguments with ``x`` so broadcast, and the original ``x``
    where that changed its shape (None otherwise)."""
    x = args[0] if args else kwargs.get("x")
    if x is None or np.ndim(x) <= 1 or np.shape(x) == np.shape(y):
        return args, kwargs, None
    wide = np.broadcast_to(x, np.shape(y))
    if args:
        return (wide, *args[1:]), kwargs, x
    return args, {**kwargs, "x": wide}, x


def _in_samples_dtype(out, y):
    """``np.trapezoid``'s result in SciPy's dtype: SciPy sums in the samples' floating dtype (a
    float32 ``y`` with a float64 ``x`` gives float32), NumPy in the one ``y`` and the steps promote to."""
    if not isinstance(out, (np.ndarray, np.generic)):
        return out  # an engine's value
    dtype = np.result_type(y)
    dtype = dtype if dtype.kind in "fc" else np.dtype(np.float64)
    if out.dtype == dtype:
        return out
    return out.astype(dtype) if isinstance(out, np.ndarray) else dtype.type(out)


@rrule.register(si.trapezoid, batched=True)
def rrule_trapezoid_scipy(y, *args, **kwargs):
    """``np.trapezoid``'s rule (the same function, sum of ``step * mean`` along the axis), with an
    N-D ``x`` broadcast to ``y``'s shape as SciPy does, its cotangent summed back to its shape, and
    the result in ``y``'s floating dtype, as SciPy gives it."""
    args, kwargs, x = _broadcast_points(y, args, kwargs)
    out, pullback = rrule_trapezoid(y, *args, **kwargs)
    out = _in_samples_dtype(out, y)
    if x is None or not args:  # x by keyword is not differentiated
        return out, pullback

    def trapezoid_scipy_pullback(dout):
        df, dy, dx, *rest = pullback(dout)
        if isinstance(dx, AbstractZero):
            return (df, dy, dx, *rest)
        dx = (match_input_batch if carries_batch(out, unthunk(dout)) else match_input)(x, dx)
        return (df, dy, dx, *rest)

    return out, trapezoid_scipy_pullback


@frule.register(si.trapezoid, batched=True)
def frule_trapezoid_scipy(tangents, y, *args, **kwargs):
    args, kwargs, x = _broadcast_points(y, args, kwargs)
    if x is not None and args and len(tangents) > 2:
        dx = unthunk(tangents[2])
        if not isinstance(dx, AbstractZero):
            lead = np.shape(dx)[:1] if is_batched(x, dx) else ()  # (x's new axes go after the batch axis)
            dx = np.reshape(dx, (*lead, *(1,) * (np.ndim(y) - np.ndim(x)), *np.shape(x)))
            dx = np.broadcast_to(dx, lead + np.shape(y))
        tangents = (*tangents[:2], dx, *tangents[3:])
    out, dout = frule_trapezoid(tangents, y, *args, **kwargs)
    out = _in_samples_dtype(out, y)
    return out, dout if isinstance(dout, AbstractZero) else match_output(out, dout)


# ----- cumulative_trapezoid -----------------------------------------------------------------


def _cumulative_options(y, args: tuple, kwargs: dict):
    o = {"x": None, "dx": 1.0, "axis": -1, "initial": None}
    o.update(zip(("x", "dx", "axis", "initial"), args), **kwargs)
    return o["x"], o["dx"], axes_of(o["axis"], np.ndim(y))[0], o["initial"]


def _along(axis: int, ndim: int, index) -> tuple:
    key = [slice(None)] * ndim
    key[axis] = index
    return tuple(key)


def _cumulative_parts(y, x, dx, axis: int):
    """``(mean, step)``: the means of neighbouring samples along ``axis`` and the widths of the
    trapezoids, placed to broadcast against them (``dx``, or ``diff(x)``)."""
    ndim = np.ndim(y)
    mean = (y[_along(axis, ndim, slice(1, None))] + y[_along(axis, ndim, slice(None, -1))]) / 2
    return mean, _cumulative_steps(x, dx, ndim, axis)


def _cumulative_steps(x, dx, ndim: int, axis: int, lead: int = 0, points=None):
    """``diff(x)`` as ``cumulative_trapezoid`` places it (``dx`` when ``x`` is None); ``x`` may be a
    batch of tangents (``lead`` leading axes) of the sample points ``points``."""
    if x is None:
        return dx
    if np.ndim(x if points is None else points) == 1:
        shape = [1] * ndim
        shape[axis] = -1
        return np.reshape(np.diff(x, axis=-1), np.shape(x)[:lead] + tuple(shape))
    return np.diff(x, axis=axis + lead)


@rrule.register(si.cumulative_trapezoid)
def rrule_cumulative_trapezoid(y, *args, **kwargs):
    """``cumsum(step * mean)`` along the axis (after a 0 with ``initial=0``): linear in ``y`` and in
    the steps; the adjoint of the running sum is the running sum from the end. ``x`` and ``dx`` get
    cotangents when given by position."""
    out = _by_rule(si.cumulative_trapezoid, (y, *args), kwargs)
    x, dx, axis, initial = _cumulative_options(y, args, kwargs)
    mean, step = _cumulative_parts(y, x, dx, axis)
    n = np.shape(y)[axis]
    slot = 0 if x is not None else 1  # the positional slot that carries the spacing
    differentiated = len(args) > slot

    def cumulative_trapezoid_pullback(dout):
        grads = [_NO] * len(args)
        dout = cotangent_array(out, dout)
        if isinstance(dout, AbstractZero):
            if differentiated:
                grads[slot] = dout
            return (_NO, dout, *grads)
        if initial is not None:  # the leading 0 depends on nothing
            dout = dout[_along(axis, np.ndim(dout), slice(1, None))]
        g = _reverse_cumsum(dout, axis)
        dy = Thunk(lambda: match_input(y, _mean_adjoint(_summed_to(g * conj(step), np.shape(mean)), axis, n)))
        if differentiated:
            through = g * conj(mean)  # the cotangent of the steps
            if x is not None and np.ndim(x) == 1:
                others = tuple(i for i in range(np.ndim(through)) if i != axis)
                grads[0] = Thunk(lambda: match_input(x, _diff_adjoint(np.sum(through, axis=others), 0, np.size(x))))
            elif x is not None:
                grads[0] = Thunk(
                    lambda: match_input(x, _diff_adjoint(_summed_to(through, np.shape(step)), axis, np.shape(x)[axis]))
                )
            else:
                grads[1] = Thunk(lambda: match_input(dx, through))
        return (_NO, dy, *grads)

    return out, cumulative_trapezoid_pullback


def _summed_to(g, shape: tuple):
    """``g`` summed over the axes along which an array of ``shape`` (of as many axes) was broadcast."""
    axes = tuple(i for i, (m, k) in enumerate(zip(np.shape(g), shape, strict=True)) if k == 1 and m != 1)
    return np.sum(g, axis=axes, keepdims=True) if axes else g


@frule.register(si.cumulative_trapezoid)
def frule_cumulative_trapezoid(tangents, y, *args, **kwargs):
    out = _by_rule(si.cumulative_trapezoid, (y, *args), kwargs)
    x, dx, axis, initial = _cumulative_options(y, args, kwargs)
    mean, step = _cumulative_parts(y, x, dx, axis)
    dy = unthunk(tangents[1])
    slot = 0 if x is not None else 1
    dspacing = unthunk(tangents[slot + 2]) if len(tangents) > slot + 2 else _ZERO
    terms = []
    if not isinstance(dy, AbstractZero):
        terms.append(step * _cumulative_parts(dy, None, None, axis)[0])
    if not isinstance(dspacing, AbstractZero):
        dstep = dspacing if x is None else _cumulative_steps(dspacing, None, np.ndim(y), axis, 0, x)
        terms.append(dstep * mean)
    if not terms:
        return out, _ZERO
    dout = np.cumsum(sum(terms[1:], terms[0]), axis=axis)
    if initial is not None:
        widths = [(0, 0)] * np.ndim(dout)
        widths[axis] = (1, 0)
        dout = np.pad(dout, widths)
    return out, match_output(out, dout)


# ----- simpson ------------------------------------------------------------------------------


def _ratio(a, b):
    """``a / b``, 0 where ``b`` is 0 (SciPy's guard against repeated sample points)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return np.divide(a, b, out=np.zeros_like(a), where=b != 0)


def _simpson_weights(h):
    """The weights ``w`` (along the last axis, one per sample) with ``simpson(y) = sum(w * y)``, for
    the spacings ``h`` along the last axis (``n - 1`` of them for ``n`` samples), as
    ``scipy.integrate.simpson`` combines them: Simpson's rule on pairs of intervals (with the
    irregular-spacing weights), and for an even ``n`` Cartwright's correction of the last interval
    (the trapezoid for ``n = 2``)."""
    h = np.asarray(h, dtype=float)
    n = np.shape(h)[-1] + 1
    w = np.zeros(np.shape(h)[:-1] + (n,))
    if n == 2:
        w[..., :] = 0.5 * h
        return w
    pairs = n - 1 if n % 2 else n - 2  # the samples the pairs of intervals cover, less one
    h0, h1 = h[..., 0:pairs:2], h[..., 1:pairs:2]
    hsum = h0 + h1
    h0_over_h1 = _ratio(h0, h1)
    w[..., 0:pairs:2] += hsum / 6 * (2 - _ratio(1, h0_over_h1))
    w[..., 1 : pairs + 1 : 2] += hsum / 6 * (hsum * _ratio(hsum, h0 * h1))
    w[..., 2 : pairs + 2 : 2] += hsum / 6 * (2 - h0_over_h1)
    if n % 2 == 0:  # the last interval (h[-1]) after the pairs, from the last three samples
        a, b = h[..., -2], h[..., -1]
        w[..., -1] += _ratio(2 * b**2 + 3 * a * b, 6 * (b + a))
        w[..., -2] += _ratio(b**2 + 3 * a * b, 6 * a)
        w[..., -3] -= _ratio(b**3, 6 * a * (a + b))
    return w


def _simpson_options(y, args: tuple, kwargs: dict):
    x = args[0] if args else kwargs.get("x")
    return x, kwargs.get("dx", 1.0), axes_of(kwargs.get("axis", -1), np.ndim(y))[0]


def _simpson_weights_for(y, x, dx, axis: int):
    """``simpson``'s weights placed to broadcast against ``y`` (``x`` and ``dx`` plain values)."""
    if isinstance(x, ActiveValue) or isinstance(dx, ActiveValue):
        raise NoDerivativeError(_simpson_refusal(at_user()))
    ndim, n = np.ndim(y), np.shape(y)[axis]
    if x is None and np.ndim(dx) == 0 or x is not None and np.ndim(x) == 1:
        h = np.full(n - 1, float(dx)) if x is None else np.diff(np.asarray(x, dtype=float))
        shape = [1] * ndim
        shape[axis] = n
        return np.reshape(_simpson_weights(h), shape)
    if x is None:  # an array dx: one spacing per lane
        lanes = np.shape(y)[:axis] + np.shape(y)[axis + 1 :]
        h = np.broadcast_to(np.expand_dims(np.asarray(dx, dtype=float), -1), lanes + (n - 1,))
    else:
        h = np.diff(np.moveaxis(np.asarray(x, dtype=float), axis, -1), axis=-1)
    return np.moveaxis(_simpson_weights(h), -1, axis)


def _simpson_refusal(where: str) -> str:
    """The refusal of a differentiated ``x`` (or ``dx``) of the call ``where`` (``at_user()``)."""
    return (
        f"scipy.integrate.simpson{where}: the rule differentiates in the samples y only (simpson's weights are "
        "rational functions of the spacings, whose derivative it does not implement), so the sample "
        "points x must be held constant: take them from outside the function being differentiated, "
        "or use scipy.integrate.trapezoid, which is differentiated in x too"
    )


def _refused_points(where: str) -> Thunk:
    def points_not_differentiated():
        raise NoDerivativeError(_simpson_refusal(where))

    return Thunk(points_not_differentiated)


@rrule.register(si.simpson)
def rrule_simpson(y, *args, **kwargs):
    """``sum(w * y)`` along the axis, for the weights ``w`` of the spacings: ``ȳ = w ȳ_out``. A
    differentiated ``x`` is refused (its cotangent raises when evaluated)."""
    out = _by_rule(si.simpson, (y, *args), kwargs)
    x, dx, axis = _simpson_options(y, args, kwargs)
    if np.shape(y)[axis] == 0:
        raise ValueError("scipy.integrate.simpson: no samples along the axis")
    weights = _simpson_weights_for(y, x, dx, axis)
    where = at_user() if args else ""  # (the pullback runs away from the call)

    def simpson_pullback(dout):
        dout = cotangent_array(out, dout)
        if isinstance(dout, AbstractZero):
            return (_NO, dout, *(_refused_points(where) for _ in args))
        dy = Thunk(lambda: match_input(y, weights * np.expand_dims(dout, axis)))
        return (_NO, dy, *(_refused_points(where) for _ in args))

    return out, simpson_pullback


@frule.register(si.simpson)
def frule_simpson(tangents, y, *args, **kwargs):
    out = _by_rule(si.simpson, (y, *args), kwargs)
    x, dx, axis = _simpson_options(y, args, kwargs)
    if len(tangents) > 2 and not isinstance(unthunk(tangents[2]), AbstractZero):
        raise NoDerivativeError(_simpson_refusal(at_user()))
    dy = unthunk(tangents[1])
    if isinstance(dy, AbstractZero):
        return out, _ZERO
    return out, match_output(out, np.sum(_simpson_weights_for(y, x, dx, axis) * dy, axis=axis))


# ----- quad: the integral of the user's function ---------------------------------------------

#: the Gauss-Legendre rule each of quad's final subintervals is differentiated with (exact for
#: polynomials of degree 41: more than QUADPACK's 21-point Gauss-Kronrod rule on the same interval)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(21)
#: 2-point Gauss-Legendre on [0, 1] (weights 1/2): the sliver an end moves by, exact for cubics
_SLIVER = ((1 - 1 / np.sqrt(3)) / 2, (1 + 1 / np.sqrt(3)) / 2)


def _quadrature(a: float, b: float, info: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(x, w)``: nodes and weights with ``∫ f ≈ Σ w f(x)`` on quad's final partition
    (``info["alist"]``, ``info["blist"]``). Where an end is infinite, the partition is of QUADPACK's
    variable ``t`` in (0, 1], ``x = a + (1 - t) / t`` (``b - (1 - t) / t``; both ``±(1 - t) / t``
    on the whole line), whose ``dx = dt / t²`` goes into the weights. SciPy integrates reversed
    ends (``a > b``) the other way round, and negates."""
    if a > b:
        x, w = _quadrature(b, a, info)
        return x, -w
    n = info["last"]
    lo, hi = info["alist"][:n, None], info["blist"][:n, None]
    half = (hi - lo) / 2
    t = ((hi + lo) / 2 + half * _NODES).ravel()
    w = (half * _WEIGHTS).ravel()
    if np.isfinite(a) and np.isfinite(b):
        return t, w
    s, w = (1 - t) / t, w / t**2
    if np.isfinite(a):
        return a + s, w
    if np.isfinite(b):
        return b - s, w
    return np.concatenate([s, -s]), np.concatenate([w, w])


@rrule.register(si.quad)
def rrule_quad(func, *rest, **keywords):
    """``quad``'s integral of ``func(x, *args)`` over ``[a, b]`` (an end may be infinite), as SciPy
    computes it, differentiated in ``args``, in what ``func`` closes over and in the finite ends.

    QUADPACK's adaptive steps are not differentiated: the derivative is the integral of the
    derivative (Leibniz's rule: ``-func(a)`` and ``func(b)`` for the ends), by a 21-point
    Gauss-Legendre rule on each subinterval of the partition quad settled on, so it is as accurate
    as the integral where the derivative is as smooth as ``func``. Where an engine's values move an
    end (forward mode, a Hessian), the sliver between its old and new place is integrated too, by
    2-point Gauss-Legendre: derivatives in the ends are exact to fourth order. ``weight=``,
    ``points=`` and ``complex_func=True`` are refused.

    >>> import numpy as np, scipy.integrate as si, chainrules as cr
    >>> def area(c, b):  # ∫_0^b exp(c x) dx = (exp(c b) - 1) / c
    ...     return si.quad(lambda x: np.exp(c * x), 0.0, b)[0]
    >>> dc, db = cr.gradient(area, 0.5, 2.0)
    >>> bool(np.isclose(dc, (2.0 * np.exp(1.0) * 0.5 - (np.exp(1.0) - 1)) / 0.25)), bool(np.isclose(db, np.exp(1.0)))
    (True, True)
    """
    call = FunctionalCall(si.quad, func, rest, keywords)
    for name in ("weight", "points", "complex_func"):
        if call.setting(name) not in (None, False):
            raise NoRuleError(
                si.quad, (func, *rest), location=user_location(), reason=f"{name}= is not differentiated"
            )
    found = call.run(full_output=1)
    y, info = found[0], found[2]
    if len(found) > 3 and not call.setting("full_output"):  # quad's warning, which full_output=1 returns instead
        warnings.warn(found[3], si.IntegrationWarning, stacklevel=2)
    args = call.args
    a0, b0 = float(stood_for(call.bound["a"])), float(stood_for(call.bound["b"]))
    nodes, weights = _quadrature(a0, b0, info)
    interior = [(w, _pullback_of(func, x, *args)) for x, w in zip(nodes, weights)]
    slivers = []  # (name, sign, step, [(c, (value, pullback))]) for an end that an engine's values move
    for name, sign, end0 in (("a", -1.0, a0), ("b", 1.0, b0)):
        end = call.bound[name]
        if isinstance(end, ActiveValue):
            step = end - end0
            slivers.append((name, sign, step, [(c, _pullback_of(func, end0 + c * step, *args)) for c in _SLIVER]))
    value = y
    if slivers or any(isinstance(v, ActiveValue) for _, (v, _) in interior):
        total = sum(w * v for w, (v, _) in interior)
        for _, sign, step, pulls in slivers:
            total = total + sign * step * 0.5 * sum(v for _, (v, _) in pulls)
        value = y + (total - stood_for(total))  # SciPy's value, with the derivatives of the sum
    out = (value, *found[1:]) if call.setting("full_output") else (value, found[1])

    def quad_pullback(d_out):
        dy = unthunk(item_tangents(d_out, out)[0])
        if isinstance(dy, AbstractZero):
            return call.cotangents(_NO, (_ZERO,) * len(args))
        df, owned = _NO, False
        dargs = [_ZERO] * len(args)

        def pulled(back, cotangent):
            nonlocal df, owned, dargs
            d = back(cotangent)
            df, owned = _add_function_tangent(df, owned, d[0])
            dargs = [add(total, part) for total, part in zip(dargs, d[2 : 2 + len(args)])]
            return d[1]

        for w, (_, back) in interior:
            pulled(back, w * dy)
        ends = {}
        for name, sign, step, pulls in slivers:  # d/d(end) of sign * step/2 * Σ f(end0 + c step)
            ends[name] = sum(sign * 0.5 * dy * v + c * pulled(back, sign * step * 0.5 * dy) for c, (v, back) in pulls)
        for name, sign, end0 in (("a", -1.0, a0), ("b", 1.0, b0)):
            if name not in ends and np.isfinite(end0) and name in call.parameters[: call.positional]:
                ends[name] = Thunk(lambda sign=sign, end0=end0: sign * dy * func(end0, *args))  # Leibniz's rule
        return call.cotangents(df, tuple(dargs), **ends)

    return out, quad_pullback


# ----- solve_ivp: the adjoint method ---------------------------------------------------------

#: the Gauss-Legendre rule for the parameters' integral on each step of an adjoint solve
_STEP_NODES, _STEP_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _gauss_on_steps(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, w)``: nodes and weights with ``∫ g ≈ Σ w g(s)`` from ``times[0]`` to ``times[-1]`` (either
    direction), on the steps between consecutive ``times``."""
    lo, hi = times[:-1, None], times[1:, None]
    half = (hi - lo) / 2
    return ((hi + lo) / 2 + half * _STEP_NODES).ravel(), (half * _STEP_WEIGHTS).ravel()


def _time_cotangents(call: FunctionalCall, adjoint: _Adjoint, dY, lam, dT) -> dict:
    """The cotangents of ``t_span`` and ``t_eval``: a later start moves every output back along
    ``fun``, ``-λ(t0)·fun(t0, y0)``; an output time moves its column along ``fun`` there. The
    result's times ``t`` (cotangent ``dT``, or a zero) are ``t_eval``, or where it is not given the
    solver's steps from ``t_span``'s start to its end: the first and last move with ``t_span``'s
    ends (the first column, ``y0`` itself, with its start: not at all), the steps between are where
    the step control put them, constant in everything (their cotangents are dropped). Computed when
    read."""
    times = adjoint.times
    dT = None if isinstance(dT, AbstractZero) else np.asarray(dT)
    t_eval = call.setting("t_eval")
    at_start = dY[:, 0] if t_eval is None else 0.0  # (without t_eval the first column is y0, which no start moves)
    start = Thunk(lambda: -adjoint.along(adjoint.t0, lam - at_start))
    end = _ZERO if t_eval is not None else Thunk(lambda: adjoint.along(times[-1], dY[:, -1]))
    if dT is not None and t_eval is None:  # the first and last times are t_span's
        start = Thunk(lambda moved=start: unthunk(moved) + dT[0])
        end = Thunk(lambda moved=end: unthunk(moved) + dT[-1])
    t_span = call.bound["t_span"]
    cotangents = {"t_span": Tangent[type(t_span)](start, end) if isinstance(t_span, (tuple, list)) else _ZERO}
    if t_eval is not None:

        def moved():
            along = np.array([adjoint.along(t, dY[:, i]) for i, t in enumerate(times)])
            return to_input(t_eval, along if dT is None else along + dT)

        cotangents["t_eval"] = Thunk(moved)
    return cotangents


class _Adjoint:
    """The adjoint method on an ODE's forward solution (``solution(t)``, dense; outputs at ``times``):
    ``solve(dY)`` integrates ``λ' = -(∂fun/∂y)ᵀ λ`` backwards from the last output time, adding each
    time's column of the cotangent ``dY`` (states × times) as it passes it, and returns ``λ(t0)``
    (``y0``'s cotangent) with the nodes and weighted adjoints ``[(s, w λ(s))]`` of the parameters'
    integral ``∫ (∂fun/∂θ)ᵀ λ dt``. ``fun`` takes ``(t, y, *args)``, or ``(y, t, *args)`` where not
    ``tfirst`` (``odeint``'s)."""

    def __init__(self, call: FunctionalCall, times, solution, t0: float, method, tolerances: dict, tfirst=True):
        self.call, self.times, self.solution, self.t0 = call, times, solution, t0
        self.method, self.tolerances, self.tfirst = method, tolerances, tfirst
        self.pullback_of = later_pullbacks()

    def evaluate(self, t, y=None):
        """``(fun(t, y, *args), its pullback)``, by its rule or the engine that ran the primal; ``y``
        the solution at ``t`` where not given."""
        y = self.solution(t) if y is None else y
        return self.pullback_of(self.call.F, *((t, y) if self.tfirst else (y, t)), *self.call.args)

    def rate(self, t) -> np.ndarray:
        """``fun(t, y(t))``, plain: how fast the solution moves at ``t``."""
        return np.asarray(stood_for(self.evaluate(t)[0]), dtype=float)

    def along(self, t, d) -> float:
        """``d · fun(t, y(t))``: how far an output moves along the solution, ``d`` its cotangent."""
        return float(np.dot(d, self.rate(t)))

    def vjp(self, t, lam):
        """The pullback of ``fun`` at ``(t, y(t))`` along ``λ``: ``(dfun, d_first, d_second, *dargs)``."""
        return self.evaluate(t)[1](lam)

    def _rhs(self, t, lam):
        d = unthunk(self.vjp(t, lam)[2 if self.tfirst else 1])  # (plain: forward mode's duals ride along)
        return np.zeros_like(lam) if isinstance(d, AbstractZero) else -np.asarray(stood_for(d), dtype=float)

    def solve(self, dY) -> tuple:
        times, nodes = self.times, []
        lam = np.zeros(np.shape(dY)[0])
        for i in range(len(times) - 1, -1, -1):
            lam = lam + dY[:, i]
            earlier = times[i - 1] if i > 0 else self.t0
            if earlier == times[i] or not np.any(lam):  # (a zero adjoint stays zero)
                continue
            segment = si.solve_ivp(
                self._rhs, (times[i], earlier), lam, method=self.method, dense_output=True, **self.tolerances
            )
            if not segment.success:
                raise NoDerivativeError(f"scipy.integrate{at_user()}: the adjoint's solve failed ({segment.message})")
            s, w = _gauss_on_steps(segment.t)  # ∫ from earlier to times[i]: minus this direction's sum
            nodes.extend(zip(s, -w[:, None] * segment.sol(s).T))
            lam = segment.y[:, -1]
        return lam, nodes

    def parameters(self, nodes) -> tuple:
        """``(dfun, dargs)``: the parameters' integral, summed over the nodes' pullbacks."""
        df, owned = _NO, False
        dargs = [_ZERO] * len(self.call.args)
        for s, weighted in nodes:
            d = self.vjp(s, weighted)
            df, owned = _add_function_tangent(df, owned, d[0])
            dargs = [add(total, part) for total, part in zip(dargs, d[3 : 3 + len(dargs)])]
        return df, tuple(dargs)


def _forward_tangent(adjoint: _Adjoint, Y, y0, active: list, t0, times) -> tuple:
    """``(Y, T)``: ``Y`` (states × times) as values of the differentiation of ``active`` (forward
    mode's dual numbers, one differentiation) that carry its tangent, and the output times ``T``
    with theirs. ``t0`` is the start and ``times`` the values the output times stand for (``t_eval``,
    ``odeint``'s ``t``, or ``t_span``'s ends around the solver's steps), an engine's or plain.

    The forward sensitivity equations ``dy' = (∂fun/∂y) dy + (∂fun/∂θ) dθ`` are integrated along
    the forward solution from ``dy0 - fun(t0, y0) dt0`` (a later start reaches each time earlier
    along the solution), one solve for the whole chunk of tangents (a state of ``batch × states``);
    an output time moving by ``dt_i`` moves its column along the solution, ``fun(t_i, y(t_i)) dt_i``
    (so a column at the start is ``y0``'s, whose tangent is ``dy0``). Each right-hand side is one
    evaluation of ``fun`` on the solution at ``t`` carrying ``dy``, by the engine, with what ``fun``
    closes over and ``args`` carrying ``dθ``: its tangent is the sum. The solve takes the primal's
    method and tolerances, ``atol`` applying to each tangent's entries of a state as to the state,
    so the tangent is accurate as the solution is (relative to its own size)."""
    anchor, times_out = active[0], adjoint.times
    carried = [(v, anchor.tangent_of(v)) for v in active]
    carried = [(v, d) for v, d in carried if not isinstance(d, AbstractZero)]
    if not carried:
        return Y, times_out
    v, d = carried[0]
    shape = (*np.shape(d)[:1], np.shape(Y)[0]) if is_batched(v, d) else (np.shape(Y)[0],)  # (a chunk's axis first)
    start = anchor.tangent_of(y0) if isinstance(y0, ActiveValue) else _ZERO
    start = np.zeros(shape, dtype=Y.dtype) if isinstance(start, AbstractZero) else np.reshape(np.asarray(start), shape)
    dt0 = anchor.tangent_of(t0)
    if not isinstance(dt0, AbstractZero):
        start = start - np.multiply.outer(np.asarray(dt0), adjoint.rate(adjoint.t0))

    def rate(t, dy):
        y = anchor.carrying(adjoint.solution(t), np.reshape(dy, shape))
        d = anchor.tangent_of(adjoint.evaluate(t, y)[0])
        return np.zeros_like(dy) if isinstance(d, AbstractZero) else np.reshape(np.asarray(d), -1)

    if times_out.size == 0 or times_out[-1] == adjoint.t0:  # (no time passes)
        dY = np.repeat(start[..., None], times_out.size, axis=-1)
    else:
        tolerances = {k: np.broadcast_to(v, shape).ravel() if np.ndim(v) else v for k, v in adjoint.tolerances.items()}
        span = (adjoint.t0, times_out[-1])
        found = si.solve_ivp(rate, span, start.ravel(), method=adjoint.method, t_eval=times_out, **tolerances)
        if not found.success:
            why = f"the forward sensitivities' solve failed ({found.message})"
            raise NoDerivativeError(f"scipy.integrate{at_user()}: {why}")
        dY = np.reshape(found.y, (*shape, times_out.size))
    dT = _time_tangents(anchor, times, shape[:-1])
    if dT is None:
        return anchor.carrying(Y, dY), times_out
    for i in np.flatnonzero(np.any(dT != 0, axis=tuple(range(dT.ndim - 1)))):  # (fun where a time moves)
        dY[..., i] += np.multiply.outer(dT[..., i], adjoint.rate(times_out[i]))
    return anchor.carrying(Y, dY), anchor.carrying(times_out, dT)


def _time_tangents(anchor: ActiveValue, times, batch: tuple):
    """The tangents (``batch × times``) that ``anchor``'s differentiation gives the values ``times``
    (an engine's array, or a sequence of numbers, its values among them); ``None`` where none moves."""
    if isinstance(times, ActiveValue):
        d = anchor.tangent_of(times)
        return None if isinstance(d, AbstractZero) else np.reshape(np.asarray(d, dtype=float), (*batch, -1))
    moved = [anchor.tangent_of(t) for t in times]
    if all(isinstance(d, AbstractZero) for d in moved):
        return None
    return np.stack([np.zeros(batch) if isinstance(d, AbstractZero) else np.broadcast_to(d, batch) for d in moved], -1)


def _refused_forward(active: list, failed: str | None) -> str | None:
    """Why forward mode cannot have an ODE's solution (``None``: it can)."""
    if failed is not None:
        return f"it failed: {failed}"
    if any(v.tangent_of(v) is None for v in active):  # a reverse engine's (a tape's gradient of a gradient)
        return _SECOND_ORDER
    if max(nesting_depth(v) for v in active) > 1 or len({v.differentiation_order() for v in active}) > 1:
        return "its forward sensitivities give first derivatives only"
    return None


_SECOND_ORDER = "second derivatives (a Hessian) through an ODE's solution: its adjoint gives first derivatives only"


# the solver's tolerances and step sizes: the rule differentiates the exact solution (to within them)
declare_options(si.solve_ivp, ("rtol", "atol", "first_step", "max_step", "min_step"))


@rrule.register(si.solve_ivp)
def rrule_solve_ivp(fun, *rest, **keywords):
    """``solve_ivp``'s solution of ``y' = fun(t, y, *args)``: ``result.y`` differentiated in ``y0``,
    ``args``, what ``fun`` closes over and the times (``t_span``, ``t_eval``), by the adjoint method;
    ``result.t``, the output times, in ``t_eval`` or ``t_span``'s ends (see ``_time_cotangents``).

    The pullback of ``ȳ`` (one column per output time) solves the adjoint equation
    ``λ' = -(∂fun/∂y)ᵀ λ`` backwards from the last output time, adding each time's column of ``ȳ``
    as it passes it, with the forward solution's dense output for ``y(t)``, the same method and
    tolerances (``rtol``, ``atol``): ``λ(t0)`` is ``y0``'s cotangent, and ``∫ (∂fun/∂θ)ᵀ λ dt`` that
    of the parameters ``θ`` (``args`` and what ``fun`` closes over), integrated by 8-point
    Gauss-Legendre on the adjoint's steps (Cao, Li, Petzold & Serban 2003, "Adjoint sensitivity
    analysis for differential-algebraic equations"; Chen et al. 2018, "Neural ordinary differential
    equations"). Each value of ``(∂fun/∂y)ᵀ λ`` is one pullback of ``fun``. So the gradient is the
    exact solution's, to the solver's tolerances, not the discretization's.

    Forward mode (its dual numbers among ``y0``, ``args``, what ``fun`` closes over and the times)
    integrates the forward sensitivity equations ``dy' = (∂fun/∂y) dy + (∂fun/∂θ) dθ`` along the
    same dense output, from ``dy0 - fun(t0, y0) dt0``, one solve for a whole chunk of tangents with
    the same method, ``rtol`` and ``atol``, and moves each output time's column along ``fun``
    (``_forward_tangent``); ``result.y``'s values are the plain solve's. So forward and reverse
    mode each hold to the tolerances, not to each other's rounding; both hold the solver's steps
    between ``t_span``'s ends where they are. Refused: ``events``, and second derivatives (a
    Hessian, nested forward mode), which neither gives. ``result.sol`` (``dense_output=True``) is
    not differentiated: read the solution at the times of ``t_eval``.

    >>> import numpy as np, scipy.integrate as si, chainrules as cr
    >>> def decayed(k):  # y(1) = exp(-k)
    ...     return si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), rtol=1e-10, atol=1e-12).y[0, -1]
    >>> bool(np.isclose(cr.gradient(decayed, 0.5)[0], -np.exp(-0.5)))
    True
    """
    call = FunctionalCall(si.solve_ivp, fun, rest, keywords)
    if call.setting("events") is not None:
        raise NoRuleError(si.solve_ivp, (fun, *rest), location=user_location(), reason="events= are not differentiated")
    args = call.args
    found = call.run(dense_output=True)
    y0 = call.bound["y0"]
    solution = found.sol
    if not call.setting("dense_output"):
        found.sol = None
    t0 = float(stood_for(call.bound["t_span"][0]))
    tolerances = {k: call.setting(k) for k in ("rtol", "atol") if k in call.bound}
    adjoint = _Adjoint(call, found.t, solution, t0, call.setting("method"), tolerances)
    probe = adjoint.evaluate(float(found.t[0]))[0]  # (an engine's values that fun closes over)
    t_span, t_eval = call.bound["t_span"], call.setting("t_eval")
    active = [v for v in (*args, y0, probe) if isinstance(v, ActiveValue)]
    active += engine_values_in((t_span, t_eval), 2)
    if active:
        why = _refused_forward(active, None if found.success else found.message)
        if why is not None:
            raise NoForwardRuleError(si.solve_ivp, (fun, *rest), location=user_location(), reason=why)
        times = t_eval if t_eval is not None else (t_span[0], *found.t[1:-1], t_span[-1])
        found.y, found.t = _forward_tangent(adjoint, found.y, y0, active, t_span[0], times)

    def solve_ivp_pullback(d_result):
        if active:
            raise NoForwardRuleError(si.solve_ivp, (fun, *rest), location=user_location(), reason=_SECOND_ORDER)
        fields = item_tangents(d_result, found)
        others = undifferentiated_fields(fields, ("y", "t"))
        if others:
            reason = f"the result's {others[0]!r} is not differentiated"
            raise NoRuleError(si.solve_ivp, (fun, *rest), location=user_location(), reason=reason)
        dY, dT = unthunk(fields["y"]), unthunk(fields["t"])
        if isinstance(dY, AbstractZero) and isinstance(dT, AbstractZero):
            return call.cotangents(_NO, (_ZERO,) * len(args))
        if not found.success:
            raise NoDerivativeError(f"scipy.integrate.solve_ivp{at_user()} did not succeed ({found.message})")
        dY = np.zeros(np.shape(found.y)) if isinstance(dY, AbstractZero) else dY
        lam, nodes = adjoint.solve(dY)
        df, dargs = adjoint.parameters(nodes)
        times_cotangents = _time_cotangents(call, adjoint, dY, lam, dT)
        return call.cotangents(df, dargs, y0=to_input(y0, lam), **times_cotangents)

    return found, solve_ivp_pullback



@rrule.register(si.odeint)
def rrule_odeint(func, *rest, **keywords):
    """``odeint``'s solution of ``y' = func(y, t, *args)`` (``tfirst=True``: ``func(t, y, *args)``) at
    the times ``t``, one row each: differentiated in ``y0``, ``args``, what ``func`` closes over and
    ``t``, by ``solve_ivp``'s adjoint method. LSODA's dense output at odeint's tolerances stands for
    the solution between the times; forward mode integrates the forward sensitivities along it, by
    LSODA at the same tolerances, ``t``'s tangents too. ``full_output=True`` gives ``(y, infodict)``, whose ``infodict``
    is not differentiated; second derivatives through it are refused.

    >>> import numpy as np, scipy.integrate as si, chainrules as cr
    >>> def decayed(k):  # y(1) = exp(-k)
    ...     return si.odeint(lambda y, t: -k * y, np.array([1.0]), [0.0, 1.0], rtol=1e-10, atol=1e-12)[-1, 0]
    >>> bool(np.isclose(cr.gradient(decayed, 0.5)[0], -np.exp(-0.5)))
    True
    """
    call = FunctionalCall(si.odeint, func, rest, keywords)
    args, y0, tfirst = call.args, call.bound["y0"], bool(call.setting("tfirst"))
    found = call.run()
    Y = found[0] if call.setting("full_output") else found  # (times, states)
    times = np.asarray(plain(call.bound["t"]), dtype=float)
    rtol, atol = call.setting("rtol") or 1.49012e-8, call.setting("atol") or 1.49012e-8  # (odeint's defaults)
    plain_func, plain_args = plain(func), plain(args)

    def rate(t, y):  # the plain right-hand side, for the dense solution between the times
        return plain(plain_func(t, y, *plain_args) if tfirst else plain_func(y, t, *plain_args))

    solution = si.solve_ivp(rate, (times[0], times[-1]), Y[0], method="LSODA", dense_output=True, rtol=rtol, atol=atol)
    if not solution.success:
        raise NoDerivativeError(f"scipy.integrate.odeint{at_user()}: its dense solution failed ({solution.message})")
    adjoint = _Adjoint(call, times, solution.sol, float(times[0]), "LSODA", {"rtol": rtol, "atol": atol}, tfirst)
    active = [v for v in (*args, y0, adjoint.evaluate(float(times[0]))[0]) if isinstance(v, ActiveValue)]
    active += engine_values_in(call.bound["t"], 1)
    if active:
        why = _refused_forward(active, None)
        if why is not None:
            raise NoForwardRuleError(si.odeint, (func, *rest), location=user_location(), reason=why)
        Y = _forward_tangent(adjoint, Y.T, y0, active, call.bound["t"][0], call.bound["t"])[0].T
        found = (Y, found[1]) if call.setting("full_output") else Y

    def odeint_pullback(d_out):
        if active:
            raise NoForwardRuleError(si.odeint, (func, *rest), location=user_location(), reason=_SECOND_ORDER)
        dY = unthunk(item_tangents(d_out, found)[0] if call.setting("full_output") else d_out)
        if isinstance(dY, AbstractZero):
            return call.cotangents(_NO, (_ZERO,) * len(args))
        dY = np.asarray(dY, dtype=float).T  # (states, times)
        lam, nodes = adjoint.solve(dY)
        df, dargs = adjoint.parameters(nodes)
        return call.cotangents(df, dargs, y0=to_input(y0, lam), t=_odeint_times_cotangent(adjoint, dY, lam))

    return found, odeint_pullback


def _odeint_times_cotangent(adjoint: _Adjoint, dY, lam):
    """``t``'s cotangent: a later start moves the later rows back along ``func``,
    ``-(λ(t0) - ȳ_0)·func(t0, y0)`` (the first row is ``y0`` itself); a later time moves its row along
    ``func`` there, ``ȳ_i·func(t_i, y_i)``. Computed when read."""

    def times_cotangent():
        times = adjoint.times
        out = np.array([adjoint.along(t, dY[:, i]) for i, t in enumerate(times)])
        out[0] = -adjoint.along(times[0], lam - dY[:, 0])
        return to_input(adjoint.call.bound["t"], out)

    return Thunk(times_cotangent)
