"""Rules for ``scipy.optimize.minimize``, ``minimize_scalar``, ``least_squares`` and ``curve_fit``:
the optimum is a root of the gradient.

At an unconstrained minimum ``x`` of ``fun(x, *args)`` the gradient ``G(x) = ∇ₓ fun(x, *args)``
is zero, so ``x`` moves with ``args`` (and with what ``fun`` closes over) as the root of
``G(x) = 0`` does: the root finders' implicit differentiation (``rules/scipy/optimize.py``)
with ``G`` for the equation. ``∂G/∂x`` is the Hessian of ``fun``, read from Hessian-vector
products, and the pullback of ``x̄`` pulls ``-H⁻¹ x̄`` back through ``G``: mixed second
derivatives of ``fun``, which ``cr.gradient``'s own rule gives (reverse over reverse, its
pullbacks forward over reverse), hence this module beside the API rather than among the rules.
The optimal value ``result.fun`` is differentiated as ``fun`` at the optimum (its ``x`` part,
zero at an exact optimum, included).

An entry that a bound holds at the optimum stays there as the arguments move (its equation is
the bound's, in place of its gradient component: strict complementarity assumed). Refused with a
message naming the line: constraints, a solver that reports no success, a singular Hessian, and a
cotangent on another field of the result (``jac``, ``hess_inv``).

>>> import numpy as np, scipy.optimize as so, chainrules as cr
>>> def ridge(lam):  # argmin_x |A x - b|^2 + lam |x|^2
...     A, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0])
...     loss = lambda x, lam: np.sum((A @ x - b) ** 2) + lam * np.sum(x**2)
...     return so.minimize(loss, np.zeros(2), args=(lam,), tol=1e-12).x
>>> dx = cr.jacobian(ridge, 0.5)  # d/dlam of (AᵀA + lam I)⁻¹ Aᵀ b
>>> A, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0])
>>> M = np.linalg.inv(A.T @ A + 0.5 * np.eye(2))
>>> np.allclose(dx, -M @ M @ A.T @ b, atol=1e-6)
True
"""

from __future__ import annotations

import functools
import inspect

import numpy as np
import scipy.optimize as so

from .api import gradient
from .core import AbstractZero, NoTangent, Tangent, ZeroTangent, add, rrule, unthunk
from .core.active import stood_for
from .core.errors import NoDerivativeError, at_user
from .core.keywords import declare_options
from .core.structures import item_tangents
from .rules.pyfunctional import _add_function_tangent, _pullback_of
from .rules.scipy._functionals import FunctionalCall, holds_active, undifferentiated_fields
from .rules.scipy.optimize import _differentiated_root, _name, first_of_pair

_NO = NoTangent()
_ZERO = ZeroTangent()


def _refuse(solver, why: str):
    raise NoDerivativeError(f"{_name(solver)}{at_user()}: {why}")


def _held_by_bounds(call: FunctionalCall, x, bounds, reach: float):
    """The mask of ``x``'s entries that a bound holds at the optimum (``None`` without bounds): those
    within ``reach`` (relative) of a bound where the gradient, taken at the bound itself, pushes
    against it. They stay at the bound as the arguments move (strict complementarity); the others
    are the root of their components of the gradient. (The gradient at ``x`` would not tell: an
    interior optimum closer to a bound than the solver's tolerance leaves a small gradient of
    either sign there; at the bound, it points into the interval.)"""
    if bounds is None:
        return None
    shape = np.shape(stood_for(x))
    x = np.atleast_1d(np.asarray(stood_for(x), dtype=float))
    if isinstance(bounds, so.Bounds):
        lower, upper = bounds.lb, bounds.ub
    else:
        pairs = np.reshape(np.array(bounds, dtype=object), (-1, 2))
        lower = np.array([-np.inf if lo is None else lo for lo in pairs[:, 0]], dtype=float)
        upper = np.array([np.inf if hi is None else hi for hi in pairs[:, 1]], dtype=float)
    lower, upper = np.broadcast_to(lower, np.shape(x)), np.broadcast_to(upper, np.shape(x))
    with np.errstate(invalid="ignore"):  # (infinite bounds)
        near_lower = np.isfinite(lower) & (np.abs(x - lower) <= reach * (1 + np.abs(lower)))
        near_upper = np.isfinite(upper) & (np.abs(x - upper) <= reach * (1 + np.abs(upper)))
    if not (near_lower.any() or near_upper.any()):
        return np.zeros(shape, dtype=bool)
    snapped = np.where(near_lower, lower, np.where(near_upper, upper, x))
    pair = call.setting("jac", None) is True
    at = np.reshape(snapped, shape) if shape else float(snapped[0])
    g = gradient(call.F, at, *(stood_for(a) for a in call.args), argnums=0, has_aux=pair)
    g = np.atleast_1d(np.asarray(stood_for(g[0] if pair else g), dtype=float))
    return np.reshape((near_lower & (g > 0)) | (near_upper & (g < 0)), shape)


def _optimum_rule(solver, call: FunctionalCall, result, layout: str, held=None, objective=None, values=None):
    """``(result, pullback)``: ``result.x`` and the result's values at the optimum with their
    derivatives, the pullback taking a cotangent of the result (a ``Tangent[OptimizeResult]``).
    ``objective`` is minimized (``call.F`` unless given); ``values`` maps the fields that hold a
    function's value at the optimum to that function (``{"fun": call.F}`` unless given)."""
    fun, args = call.F, call.args
    objective = fun if objective is None else objective
    pair = call.setting("jac") is True if "jac" in call.parameters else False  # fun returns (value, gradient)
    stationarity = functools.partial(gradient, objective, argnums=0, has_aux=pair)
    unconverged = None if result.success else str(result.message)
    x, root_back = _differentiated_root(solver, stationarity, result.x, args, layout, pair, unconverged, held)
    if unconverged is not None:
        return result, root_back
    result.x = x
    value_backs = {}
    for name, f in (values or {"fun": fun}).items():
        value, back = _pullback_of(f, x, *args)
        if pair:  # (value, gradient): the value's pullback
            value, back = value[0], functools.partial(first_of_pair, back)
        result[name], value_backs[name] = value, back
    differentiated = ("x", *value_backs)

    def optimum_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return call.cotangents(_NO, (_ZERO,) * len(args))
        fields = item_tangents(dy, result)
        others = undifferentiated_fields(fields, differentiated)
        if others:
            _refuse(solver, f"the result's {others[0]!r} is not differentiated, only {', '.join(differentiated)}")
        dx = unthunk(fields["x"])
        (dfun, owned), dargs = (_NO, False), (_ZERO,) * len(args)
        for name, back in value_backs.items():  # a value at the optimum: its function's pullback there
            dvalue = unthunk(fields[name])
            if not isinstance(dvalue, AbstractZero):
                d = back(dvalue)
                dfun, owned = _add_function_tangent(dfun, owned, _user_function_cotangent(d[0]))
                dargs = tuple(add(a, b) for a, b in zip(dargs, d[2 : 2 + len(args)]))
                dx = add(dx, d[1])
        if not isinstance(unthunk(dx), AbstractZero):
            d_stationarity, d_root_args = root_back(dx)
            d_fun = _user_function_cotangent(_function_cotangent(d_stationarity))
            dfun, owned = _add_function_tangent(dfun, owned, d_fun)
            dargs = tuple(add(a, b) for a, b in zip(dargs, d_root_args))
        return call.cotangents(dfun, dargs)

    return result, optimum_pullback


def _function_cotangent(d_partial):
    """The cotangent of ``fun`` inside ``partial(gradient, fun, ...)``'s: what it closes over."""
    d_partial = unthunk(d_partial)
    d_args = d_partial if isinstance(d_partial, AbstractZero) else unthunk(d_partial.args)
    d_fun = d_args if isinstance(d_args, AbstractZero) else unthunk(d_args[0])
    return _NO if isinstance(d_fun, AbstractZero) else d_fun  # (zero: nothing in fun is differentiated)


@rrule.register(so.minimize)
def rrule_minimize(fun, *rest, **keywords):
    """``minimize``'s ``OptimizeResult``: ``x`` and ``fun`` differentiated in ``args`` and what
    ``fun`` closes over (with ``jac=True``, ``fun`` returns ``(value, gradient)``)."""
    call = FunctionalCall(so.minimize, fun, rest, keywords)
    if call.setting("constraints"):
        _refuse(so.minimize, "constraints are not differentiated (the optimum solves the KKT conditions, not ∇f = 0)")
    result = call.run()
    held = _held_by_bounds(call, result.x, call.setting("bounds"), 1e-8)  # (projected methods land on a bound)
    return _optimum_rule(so.minimize, call, result, "dense", held)


@rrule.register(so.minimize_scalar)
def rrule_minimize_scalar(fun, *rest, **keywords):
    """``minimize_scalar``'s ``OptimizeResult``: ``x`` and ``fun`` differentiated in ``args`` and
    what ``fun`` closes over."""
    call = FunctionalCall(so.minimize_scalar, fun, rest, keywords)
    result = call.run()
    reach = 10 * (call.setting("options") or {}).get("xatol", 1e-5)  # (the bounded method's tolerance in x)
    bounds = call.setting("bounds")
    held = _held_by_bounds(call, result.x, None if bounds is None else [tuple(bounds)], reach)
    return _optimum_rule(so.minimize_scalar, call, result, "scalar", None if held is None else bool(held))


# ----- least_squares: the minimum of half the squared norm of the residuals ---------------------


class _HalfSquaredNorm:
    """``½ |fun(x, *args)|²``, the objective ``least_squares`` minimizes: a callable whose rule
    differentiates the user's ``fun`` (by its rule or the running engine), so that ``cr.gradient``
    of it, and that gradient's Hessian-vector products, reach ``fun``."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, x, *args):
        r = self.fun(x, *args)
        return 0.5 * np.sum(r * r)


@rrule.register(_HalfSquaredNorm)
def rrule_half_squared_norm(objective: _HalfSquaredNorm, x, *args):
    r, back = _pullback_of(objective.fun, x, *args)

    def half_squared_norm_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, *(dy for _ in args))
        d = back(dy * r)
        d_fun = unthunk(d[0])
        d_objective = d_fun if isinstance(d_fun, AbstractZero) else Tangent[_HalfSquaredNorm](fun=d_fun)
        return (d_objective, *d[1 : 2 + len(args)])

    return 0.5 * np.sum(r * r), half_squared_norm_pullback


def _user_function_cotangent(d):
    """The user's function's cotangent inside ``_HalfSquaredNorm``'s or ``_Misfit``'s (itself elsewhere)."""
    d = unthunk(d)
    if isinstance(d, Tangent) and type(d).primal_type is _HalfSquaredNorm:
        return unthunk(d.fun)
    if isinstance(d, Tangent) and type(d).primal_type is _Misfit:
        return unthunk(d.f)
    return d


@rrule.register(so.least_squares)
def rrule_least_squares(fun, *rest, **keywords):
    """``least_squares``'s ``OptimizeResult``: ``x``, ``cost`` (``½ |fun(x)|²``) and ``fun`` (the
    residuals at ``x``) differentiated in ``args`` and what ``fun`` closes over, the optimum as the
    root of the gradient of the cost (its Hessian, second derivatives of ``fun`` included, not
    Gauss-Newton's). Entries the bounds hold (``active_mask``) stay there. A robust ``loss`` and
    differentiated ``kwargs`` are refused.

    >>> import numpy as np, scipy.optimize as so, chainrules as cr
    >>> t = np.array([0.0, 1.0, 2.0, 3.0])
    >>> def fitted_rate(y):  # fit y ≈ exp(-k t): d k / d y
    ...     return so.least_squares(lambda k, y: np.exp(-k[0] * t) - y, np.array([0.5]), args=(y,)).x[0]
    >>> y = np.exp(-0.7 * t)
    >>> g = cr.gradient(fitted_rate, y)[0]
    >>> bool(np.allclose(g, -(t * np.exp(-0.7 * t)) / np.sum((t * np.exp(-0.7 * t)) ** 2), atol=1e-6))
    True
    """
    call = FunctionalCall(so.least_squares, fun, rest, keywords)
    if call.setting("loss") != "linear":
        _refuse(so.least_squares, f"loss={call.setting('loss')!r} is not differentiated (only 'linear')")
    if holds_active(call.setting("kwargs")):
        _refuse(so.least_squares, "kwargs= is not differentiated: pass what it holds in args=")
    result = call.run()
    held = np.asarray(result.active_mask) != 0
    objective = _HalfSquaredNorm(fun)
    values = {"cost": objective, "fun": fun}
    return _optimum_rule(so.least_squares, call, result, "dense", held, objective, values)


# ----- curve_fit: least squares of a model's misfit ---------------------------------------------


class _Misfit:
    """``(f(xdata, *p) - ydata) / sigma``: ``curve_fit``'s residuals as a function of the parameters
    ``p`` and of the data, whose rule differentiates the user's model ``f``."""

    def __init__(self, f):
        self.f = f

    def __call__(self, p, xdata, ydata, sigma):
        return (self.f(xdata, *p) - ydata) / sigma


@rrule.register(_Misfit)
def rrule_misfit(misfit: _Misfit, p, xdata, ydata, sigma):
    model, back = _pullback_of(misfit.f, xdata, *(p[i] for i in range(len(p))))
    r = (model - ydata) / sigma

    def misfit_pullback(dr):
        dr = unthunk(dr)
        if isinstance(dr, AbstractZero):
            return (_NO, dr, dr, dr, dr)
        scaled = dr / sigma
        d = back(scaled)
        parts = [unthunk(di) for di in d[2 : 2 + len(p)]]
        dp = np.stack([0.0 if isinstance(di, AbstractZero) else di for di in parts])
        d_f = unthunk(d[0])
        d_misfit = d_f if isinstance(d_f, AbstractZero) else Tangent[_Misfit](f=d_f)
        d_sigma = -scaled * r
        return (d_misfit, dp, d[1], -scaled, np.sum(d_sigma) if np.ndim(sigma) == 0 else d_sigma)

    return r, misfit_pullback


_CURVE_FIT_TOLERANCES = ("xtol", "ftol", "gtol", "maxfev", "max_nfev")
declare_options(so.curve_fit, _CURVE_FIT_TOLERANCES)  # (keywords for the solver: no derivative, see rrule_curve_fit)


@rrule.register(so.curve_fit)
def rrule_curve_fit(f, xdata, ydata, *rest, **keywords):
    """``curve_fit``'s ``(popt, pcov)``: ``popt`` differentiated in ``xdata``, ``ydata``, ``sigma`` and
    what the model ``f`` closes over, as the minimum of half the squared misfit
    ``(f(xdata, *p) - ydata) / sigma`` (its full Hessian: the root of its gradient). ``pcov`` is not
    differentiated; bounds, a 2-d ``sigma`` and extra keywords for the solver are refused.

    >>> import numpy as np, scipy.optimize as so, chainrules as cr
    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> def slope(y):  # a line fitted to y: the slope is linear in y
    ...     return so.curve_fit(lambda x, a, b: a * x + b, x, y)[0][0]
    >>> cr.gradient(slope, np.array([1.0, 3.0, 2.0, 5.0]))[0]  # (x - mean x) / Σ (x - mean x)²
    array([-0.3, -0.1,  0.1,  0.3])
    """
    call = FunctionalCall(so.curve_fit, f, (xdata, ydata, *rest), keywords)
    sigma = call.setting("sigma")
    solver_keywords = [k for k in call.bound if k not in call.parameters and k not in _CURVE_FIT_TOLERANCES]
    if np.ndim(stood_for(sigma)) > 1 or solver_keywords:
        _refuse(so.curve_fit, "a 2-d sigma, or keywords for the solver besides its tolerances, are not differentiated")
    if not np.all(np.isinf(np.asarray(call.setting("bounds"), dtype=float))):
        _refuse(so.curve_fit, "bounds= are not differentiated")
    # (SciPy counts f's parameters when p0 is not given, which the plain model's wrapper hides)
    start = {} if call.setting("p0") is not None else {"p0": np.ones(len(inspect.signature(f).parameters) - 1)}
    found = call.run(**start)
    data = (xdata, ydata, 1.0 if sigma is None else sigma)
    stationarity = functools.partial(gradient, _HalfSquaredNorm(_Misfit(f)), argnums=0)
    p, root_back = _differentiated_root(so.curve_fit, stationarity, found[0], data, "dense", False)
    out = (p, *found[1:])

    def curve_fit_pullback(d_out):
        items = [unthunk(d) for d in item_tangents(d_out, out)]
        if any(not isinstance(d, AbstractZero) and np.any(d) for d in items[1:]):
            _refuse(so.curve_fit, "only popt is differentiated, not pcov (or the other outputs)")
        if isinstance(items[0], AbstractZero):
            return call.cotangents(_NO, ())
        d_stationarity, (dx, dy, dsigma) = root_back(items[0])
        d_model = _user_function_cotangent(_user_function_cotangent(_function_cotangent(d_stationarity)))
        return call.cotangents(d_model, (), xdata=dx, ydata=dy, sigma=dsigma if sigma is not None else _ZERO)

    return out, curve_fit_pullback
