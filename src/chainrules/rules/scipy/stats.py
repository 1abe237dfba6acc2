"""Rules for ``scipy.stats`` distributions: densities, distribution functions and quantiles in
every real parameter.

A continuous distribution is a standard form in its shapes θ, moved by ``loc`` and stretched by
``scale``: ``logpdf(x) = g(z; θ) - log(scale)`` and ``cdf(x) = F(z; θ)`` with
``z = (x - loc) / scale``. Each distribution below gives the partials of g in z and θ, and of F
in θ where they have a closed form; one rule per method (``logpdf``, ``pdf``, ``cdf``, ``sf``,
``logcdf``, ``logsf``, ``ppf``, ``isf``) turns them into partials in x, θ, loc and scale. The
discrete distributions give their mass functions' partials in their real parameters (the
counts ``k`` and ``n`` and the integer ``loc`` are discrete: ``NoTangent``). Values are SciPy's
own; an engine's values (a Hessian's dual numbers) are handed to their engine, which runs the
method through this rule (``call_by_rule``).

The summaries of a continuous distribution (``mean``, ``var``, ``std``, ``entropy``, ``moment``,
``median`` and ``interval``, of the distribution or a frozen one) are differentiated in loc and
scale, in which they are affine (or quantiles); in a shape only where the quantiles are.
``gaussian_kde`` refuses a dataset, bandwidth or weights being differentiated.

Parameters passed by keyword (``norm.logpdf(x, loc=mu, scale=s)``) are differentiated too: the
methods' ``*args, **kwds`` are declared as the positions SciPy gives them (shapes, then loc and
scale). A derivative in a shape that has no closed form (the ``a`` of ``gamma.cdf``) is refused
when that shape is differentiated, never returned as zero.

>>> import numpy as np, scipy.stats as st, chainrules as cr
>>> float(cr.gradient(lambda mu: st.norm.logpdf(1.5, loc=mu, scale=2.0), 0.5)[0])  # (x - mu) / s^2
0.25
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.special as sc
import scipy.stats as st
from scipy.stats._distn_infrastructure import (
    rv_continuous,
    rv_continuous_frozen,
    rv_discrete,
    rv_discrete_frozen,
    rv_generic,
)

from ...core import (
    AbstractThunk,
    AbstractZero,
    ActiveValue,
    NoDerivativeError,
    NoRuleError,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    add,
    call_by_engine,
    frule,
    match_input,
    rrule,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ...core.errors import at_user, callable_name
from ...core.keywords import declare_parameters
from ._lapack import fold_onto_triangle, hermitian_from_triangle, parts
from .special import _all_zero, _discrete, _NoClosedForm, _register_elementwise

_P = inspect.Parameter
_NO = NoTangent()
_ZERO = ZeroTangent()


def _log(z):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(z)


# ----- standard forms: d g(z; θ) / dz, d g / dθ, and d F(z; θ) / dθ ---------------------------


class _Form(NamedTuple):
    """A continuous distribution's standard form: ``dlogpdf(z, *θ) -> (g_z, (g_θ, ...))`` and
    ``dcdf(z, *θ) -> (F_θ, ...)`` (``None``: no closed form in any shape)."""

    dlogpdf: Callable
    dcdf: Callable | None = None


def _t_dlogpdf(z, df):
    # g = lnΓ((ν+1)/2) - lnΓ(ν/2) - ln(νπ)/2 - (ν+1)/2 ln(1 + z²/ν)
    z2 = z * z
    d_df = (
        0.5 * (sc.digamma(0.5 * (df + 1)) - sc.digamma(0.5 * df))
        - 0.5 / df
        - 0.5 * np.log1p(z2 / df)
        + (df + 1) * z2 / (2 * df * (df + z2))
    )
    return -(df + 1) * z / (df + z2), (d_df,)


def _beta_dlogpdf(z, a, b):
    both = sc.digamma(a + b)
    return (a - 1) / z - (b - 1) / (1 - z), (_log(z) - sc.digamma(a) + both, np.log1p(-z) - sc.digamma(b) + both)


def _lognorm_dlogpdf(z, s):
    # g = -ln(s z √(2π)) - (ln z)² / (2 s²)
    log_z = _log(z)
    return -(1 + log_z / (s * s)) / z, (log_z * log_z / (s * s * s) - 1 / s,)


def _lognorm_dcdf(z, s):
    # F = Φ(ln z / s)
    u = _log(z) / s
    return (-np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi) * u / s,)


def _weibull_min_dlogpdf(z, c):
    # g = ln c + (c - 1) ln z - z^c
    zc = np.power(z, c)
    return (c - 1) / z - c * zc / z, (1 / c + _log(z) * (1 - zc),)


def _weibull_min_dcdf(z, c):
    # F = 1 - exp(-z^c)
    zc = np.power(z, c)
    return (np.exp(-zc) * zc * _log(z),)


_FORMS: dict[type, _Form] = {
    type(st.norm): _Form(lambda z: (-z, ())),
    type(st.halfnorm): _Form(lambda z: (-z, ())),
    type(st.cauchy): _Form(lambda z: (-2 * z / (1 + z * z), ())),
    type(st.laplace): _Form(lambda z: (-np.sign(z), ())),
    type(st.logistic): _Form(lambda z: (-np.tanh(0.5 * z), ())),
    type(st.gumbel_r): _Form(lambda z: (np.expm1(-z), ())),
    type(st.expon): _Form(lambda z: (-1.0, ())),
    type(st.uniform): _Form(lambda z: (0.0, ())),
    type(st.t): _Form(_t_dlogpdf),
    type(st.gamma): _Form(lambda z, a: ((a - 1) / z - 1, (_log(z) - sc.digamma(a),))),
    type(st.chi2): _Form(
        lambda z, k: ((0.5 * k - 1) / z - 0.5, (0.5 * (_log(z) - np.log(2.0) - sc.digamma(0.5 * k)),))
    ),
    type(st.invgamma): _Form(lambda z, a: ((1 / z - (a + 1)) / z, (-_log(z) - sc.digamma(a),))),
    type(st.beta): _Form(_beta_dlogpdf),
    type(st.lognorm): _Form(_lognorm_dlogpdf, _lognorm_dcdf),
    type(st.weibull_min): _Form(_weibull_min_dlogpdf, _weibull_min_dcdf),
    type(st.pareto): _Form(lambda z, b: (-(b + 1) / z, (1 / b - _log(z),)), lambda z, b: (np.power(z, -b) * _log(z),)),
}


# ----- a call's arguments and values ----------------------------------------------------------


def _shape_names(dist) -> list[str]:
    return [n.strip() for n in dist.shapes.split(",")] if dist.shapes else []


def _parameters(first: str | None) -> Callable[[tuple], tuple]:
    """The positions of ``dist.method(first, *shapes, loc, scale)`` (without ``first`` for freezing
    the distribution; a discrete distribution has no ``scale``)."""

    def parameters(args: tuple) -> tuple:
        dist = args[0]
        names = ["self", *([first] if first else []), *_shape_names(dist)]
        named = [_P(n, _P.POSITIONAL_ONLY) for n in names]
        named.append(_P("loc", _P.POSITIONAL_ONLY, default=0))
        if isinstance(dist, rv_continuous):
            named.append(_P("scale", _P.POSITIONAL_ONLY, default=1))
        return tuple(named)

    return parameters


def _arguments(method, dist, args: tuple, kwargs: dict, scaled: bool) -> tuple:
    """``(first, shapes, loc, scale)`` of the call ``method(dist, *args, **kwargs)`` (``rvs``, which
    takes no first argument, is read with ``None`` in its place)."""
    shape_names = _shape_names(dist)
    names = ["first", *shape_names, "loc", *(["scale"] if scaled else [])]
    bound = {"loc": 0, "scale": 1, **dict(zip(names, args)), **kwargs}
    missing = [n for n in shape_names if n not in bound]
    if missing or len(args) > len(names):
        raise TypeError(f"scipy.stats.{dist.name}.{method.__name__}: takes the shapes ({', '.join(shape_names)})")
    listed = [args[0], *(bound[n] for n in shape_names), bound["loc"], bound["scale"]]
    # (Python numbers as NumPy's: a division by a zero, at the edge of a support, is inf, not a ZeroDivisionError)
    first, *shapes, loc, scale = [np.asarray(v) if isinstance(v, (list, tuple, int, float)) else v for v in listed]
    return first, shapes, loc, scale


def _value(method, dist, args: tuple, kwargs: dict | None = None):
    """``method(dist, *args, **kwargs)``; an engine's value among the arguments has its engine run it
    by its rule (this module's)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return call_by_engine(
            method,
            (dist, *args),
            kwargs or {},
            lambda: f"{callable_name(method)} of scipy.stats.{getattr(dist, 'name', type(dist).__name__)}",
        )


def _where(keep, partial):
    """``partial`` where ``keep``, else 0 (outside the support, where the value is constant)."""
    return partial if partial is None or isinstance(partial, _NoClosedForm) else np.where(keep, partial, 0.0)


def _scaled(partial, factor):
    """``factor * partial``; a discrete shape's ``None`` and a ``_NoClosedForm`` stay as they are."""
    return partial if partial is None or isinstance(partial, _NoClosedForm) else factor * partial


def _shapes_refused(dist, name: str, shapes) -> list:
    """The partials in the shapes where they have no closed form: refused when differentiated (an
    integer-typed shape is taken as discrete, as scipy.special's orders are: NoTangent)."""
    label = f"scipy.stats.{dist.name}.{name}"
    return [None if _discrete(v) else _NoClosedForm(label, n) for v, n in zip(shapes, _shape_names(dist))]


def _shape_cdf_partials(form: _Form, dist, method, z, shapes, name: str | None = None) -> list:
    if not shapes:
        return []
    if form.dcdf is None:
        return _shapes_refused(dist, name or method.__name__, shapes)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return list(form.dcdf(z, *shapes))


# ----- continuous distributions ----------------------------------------------------------------


def _continuous_partials(method, dist, args, kwargs, y, called: str | None = None):
    """The partials of ``y = method(dist, *args, **kwargs)`` in ``(first, *shapes, loc, scale)``
    (``called``: the name of the method the user called, for a refusal, where it is not ``method``)."""
    form = _FORMS[type(dist)]
    first, shapes, loc, scale = _arguments(method, dist, args, kwargs, True)
    name = method.__name__
    if name in ("ppf", "isf"):  # the quantile x: F(z) = q (or 1 - q), z = (x - loc) / scale
        z = (y - loc) / scale
        density = _value(rv_continuous.pdf, dist, (y, *shapes, loc, scale))
        with np.errstate(divide="ignore", invalid="ignore"):
            d_first = (1 if name == "ppf" else -1) / density
            d_shapes = [_scaled(p, -1 / density) for p in _shape_cdf_partials(form, dist, method, z, shapes, called)]
        return d_first, d_shapes, 1.0, z
    z = (first - loc) / scale
    if name in ("logpdf", "pdf"):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            g_z, g_shapes = form.dlogpdf(z, *shapes)
            inside = (y != -np.inf) if name == "logpdf" else (y > 0)
            times = 1.0 if name == "logpdf" else y
            d_first = _where(inside, times * g_z / scale)
            d_scale = _where(inside, -times * (g_z * z + 1) / scale)
            d_shapes = [_where(inside, times * p) for p in g_shapes]
        return d_first, d_shapes, -d_first, d_scale
    # cdf, sf, logcdf, logsf: the density over the value for the logarithms
    log_density = _value(rv_continuous.logpdf, dist, (first, *shapes, loc, scale))
    lower = name in ("cdf", "logcdf")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        per = np.exp(log_density - y) if name.startswith("log") else np.exp(log_density)
        per_shape = np.exp(-y) if name.startswith("log") else 1.0
        inside = log_density != -np.inf
        sign = 1.0 if lower else -1.0
        d_first = sign * per
        d_shapes = [
            _where(inside, _scaled(p, sign * per_shape)) for p in _shape_cdf_partials(form, dist, method, z, shapes)
        ]
    return d_first, d_shapes, -d_first, -d_first * z


def _continuous_rule(method):
    def compute(dist, *args, **kwargs):
        y = _value(method, dist, args, kwargs)
        d_first, d_shapes, d_loc, d_scale = _continuous_partials(method, dist, args, kwargs, y)
        return y, (None, d_first, *d_shapes, d_loc, d_scale)[: 1 + len(args)]

    return compute


# ----- summaries: moments, entropy, median and intervals ----------------------------------------
# With X = loc + scale Z, Z of the standard form: the mean is loc + scale E[Z], the variance
# scale² Var[Z], the entropy h(Z) + log(scale), the median and an interval's ends are quantiles,
# and E[X^n] moves by n E[X^(n-1)] in loc and by n (E[X^n] - loc E[X^(n-1)]) / scale in scale
# (E[n X^(n-1) Z]). In the shapes they have no closed form here (the quantiles' are the ppf's):
# refused when differentiated.


def _summary_rule(name: str, partials: Callable):
    """The rule of ``dist.<name>(*shapes, loc, scale)``, ``partials(y, loc, scale) -> (d_loc, d_scale)``."""
    method = getattr(rv_generic, name)

    def compute(dist, *args, **kwargs):
        y = _value(method, dist, args, kwargs)
        _, shapes, loc, scale = _arguments(method, dist, (None, *args), kwargs, True)
        d_loc, d_scale = partials(y, loc, scale)
        return y, (None, *_shapes_refused(dist, name, shapes), d_loc, d_scale)[: 1 + len(args)]

    return compute


def _median(dist, *args, **kwargs):
    """``dist.median(*shapes, loc, scale)``, the quantile at 1/2: the ppf's partials."""
    y = _value(rv_generic.median, dist, args, kwargs)
    _, d_shapes, d_loc, d_scale = _continuous_partials(rv_continuous.ppf, dist, (0.5, *args), kwargs, y, "median")
    return y, (None, *d_shapes, d_loc, d_scale)[: 1 + len(args)]


def _moment(dist, order, *args, **kwargs):
    """``dist.moment(order, *shapes, loc, scale)``: E[X^n] (the order is an integer: NoTangent)."""
    y = _value(rv_generic.moment, dist, (order, *args), kwargs)
    _, shapes, loc, scale = _arguments(rv_generic.moment, dist, (order, *args), kwargs, True)
    lower = _value(rv_generic.moment, dist, (order - 1, *shapes, loc, scale)) if order > 0 else 0.0
    d_scale = order * (y - loc * lower) / scale
    partials = (None, None, *_shapes_refused(dist, "moment", shapes), order * lower, d_scale)
    return y, partials[: 2 + len(args)]


def _interval_rules():
    """``dist.interval(confidence, *shapes, loc, scale)``: the quantiles at (1 ∓ confidence) / 2,
    by the ppf's rules; a tuple of the two ends."""

    def ends(confidence):
        return (1 - confidence) / 2, (1 + confidence) / 2

    ppf = rv_continuous.ppf

    def rrule_interval(dist, confidence, *args, **kwargs):
        pairs = [rrule(ppf, dist, q, *args, **kwargs) for q in ends(confidence)]

        def interval_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO, _NO, dy, *(dy,) * len(args))
            total = None
            for sign, (_, back), d in zip((-0.5, 0.5), pairs, parts(dy, 2)):
                if isinstance(unthunk(d), AbstractZero):
                    continue
                _, _, d_q, *d_args = back(d)
                found = (_scaled_tangent(sign, d_q), *d_args)
                total = found if total is None else tuple(map(_lazy_sum, total, found))
            return (_NO, _NO, *(total or (_ZERO,) * (1 + len(args))))

        return tuple(y for y, _ in pairs), interval_pullback

    def frule_interval(tangents, dist, confidence, *args, **kwargs):
        d_confidence = unthunk(tangents[2])
        found = [
            frule((_NO, _NO, _scaled_tangent(sign, d_confidence), *tangents[3:]), ppf, dist, q, *args, **kwargs)
            for sign, q in zip((-0.5, 0.5), ends(confidence))
        ]
        return tuple(y for y, _ in found), Tangent[tuple](*(d for _, d in found))

    return rrule_interval, frule_interval


def _scaled_tangent(factor: float, d):
    return d if isinstance(d, AbstractZero) else factor * d


def _lazy_sum(a, b):
    """``a + b`` of two cotangents, left for the engine to evaluate where one is lazy (a shape's
    refusal raises only when an engine reads it: for an argument being differentiated)."""
    if isinstance(a, AbstractThunk) or isinstance(b, AbstractThunk):
        return Thunk(lambda: add(a, b))
    return add(a, b)


_SUMMARIES = {
    "mean": _summary_rule("mean", lambda y, loc, scale: (1.0, (y - loc) / scale)),
    "var": _summary_rule("var", lambda y, loc, scale: (0.0, 2 * y / scale)),
    "std": _summary_rule("std", lambda y, loc, scale: (0.0, y / scale)),
    "entropy": _summary_rule("entropy", lambda y, loc, scale: (0.0, 1 / scale)),
    "median": _median,
    "moment": _moment,
}


def _rvs(dist, *args, **kwargs):
    """``dist.rvs(*shapes, loc, scale, size=..., random_state=...)`` is ``loc + scale * z``, z drawn
    from the standard form: with the draw held fixed (the random state's), its derivative is 1 in
    loc and z in scale, the pathwise ("reparameterization") gradient (Kingma & Welling, Auto-Encoding
    Variational Bayes, 2014, §2.4). A shape changes the draw itself: refused when differentiated."""
    y = _value(rv_generic.rvs, dist, args, kwargs)
    _, shapes, loc, scale = _arguments(rv_generic.rvs, dist, (None, *args), kwargs, True)
    label = f"scipy.stats.{dist.name}.rvs"
    d_shapes = [None if _discrete(v) else _NoClosedForm(label, n) for v, n in zip(shapes, _shape_names(dist))]
    return y, (None, *d_shapes, 1.0, (y - loc) / scale)[: 1 + len(args)]


# ----- discrete distributions: partials in the real parameters -------------------------------


_DISCRETE: dict[type, tuple] = {}


def _discrete_rule(method):
    def compute(dist, *args, **kwargs):
        y = _value(method, dist, args, kwargs)
        first, shapes, loc, _ = _arguments(method, dist, args, kwargs, False)
        partials = _DISCRETE[type(dist)](method.__name__, dist, y, first - loc, shapes)  # (k - loc: the count)
        return y, (None, None, *partials, None)[: 1 + len(args)]

    return compute


def _mass(dist, k, *shapes):
    return _value(rv_discrete.pmf, dist, (k, *shapes))


def _discrete_partials(support, log_mass_partials, mass_partials, cdf_partials):
    """A discrete distribution's partials in each real shape (``None``: a discrete one), from
    ``support(k, *shapes)`` (whether ``k`` is a count the distribution takes), ``log_mass_partials(k,
    *shapes)`` of ln P(X = k), ``mass_partials(y, k, *shapes)`` of P(X = k) = y, written to hold where
    y = 0 at the edge of a parameter (``poisson.pmf(1, mu)`` at mu = 0 has slope 1), and
    ``cdf_partials(label, k, *shapes)`` of P(X <= k) (``label``, the method's name, for a refusal).
    Outside the support the mass is 0 for all parameters: its partials are 0."""

    def partials(name, dist, y, k, shapes):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if name in ("logpmf", "pmf"):
                inside = support(k, *shapes) & (k == np.floor(k))
                found = log_mass_partials(k, *shapes) if name == "logpmf" else mass_partials(y, k, *shapes)
                return [_where(inside, p) for p in found]
            per = 1.0 if name in ("cdf", "sf") else np.exp(-y)
            sign = 1.0 if name in ("cdf", "logcdf") else -1.0
            label = f"scipy.stats.{dist.name}.{name}"
            return [_scaled(p, sign * per) for p in cdf_partials(label, np.floor(k), *shapes)]

    return partials


def _binom_mass_partials(y, k, n, p):
    # d/dp P(X = k) = n (P(Y = k - 1) - P(Y = k)) for Y ~ binom(n - 1, p); 0 for n = 0 (no Y)
    return None, np.where(n == 0, 0.0, n * (_mass(st.binom, k - 1, n - 1, p) - _mass(st.binom, k, n - 1, p)))


def _binom_cdf_partials(label, k, n, p):
    # d/dp P(X <= k) = -n P(Y = k) for Y ~ binom(n - 1, p); 0 for n = 0 (no Y)
    return None, np.where(n == 0, 0.0, -n * _mass(st.binom, k, n - 1, p))


def _geom_mass_partials(y, k, p):
    # P(X = k) = (1 - p)^(k - 1) p
    return (np.where(k == 1, 1.0, np.power(1 - p, k - 1) - (k - 1) * p * np.power(1 - p, k - 2)),)


def _nbinom_mass_partials(y, k, n, p):
    # P(X = k) = C(k + n - 1, k) p^n (1 - p)^k; in n it is y (ψ(k + n) - ψ(n) + ln p), 0 where y is
    log_c = sc.gammaln(k + n) - sc.gammaln(n) - sc.gammaln(k + 1)
    d_n = y * (sc.digamma(k + n) - sc.digamma(n)) + sc.xlogy(y, p)
    d_p = np.exp(log_c) * (
        n * np.power(p, n - 1) * np.power(1 - p, k) - np.where(k == 0, 0.0, k * np.power(p, n) * np.power(1 - p, k - 1))
    )
    return d_n, d_p


def _nbinom_cdf_partials(label, k, n, p):
    # P(X <= k) = I_p(n, k + 1): d/dp = p^(n-1) (1-p)^k / B(n, k + 1)
    d_p = np.where(k >= 0, np.exp(sc.xlogy(n - 1, p) + sc.xlog1py(k, -p) - sc.betaln(n, k + 1)), 0.0)
    return (None if _discrete(n) else _NoClosedForm(label, "n")), d_p


_DISCRETE.update(
    {
        type(st.poisson): _discrete_partials(
            lambda k, mu: k >= 0,
            lambda k, mu: (np.where(k == 0, -1.0, k / mu - 1),),
            lambda y, k, mu: (_mass(st.poisson, k - 1, mu) - y,),  # P(k - 1) - P(k)
            lambda label, k, mu: (-_mass(st.poisson, k, mu),),
        ),
        type(st.binom): _discrete_partials(
            lambda k, n, p: (k >= 0) & (k <= n),
            lambda k, n, p: (None, np.where(k == 0, 0.0, k / p) - np.where(k == n, 0.0, (n - k) / (1 - p))),
            _binom_mass_partials,
            _binom_cdf_partials,
        ),
        type(st.bernoulli): _discrete_partials(
            lambda k, p: (k >= 0) & (k <= 1),
            lambda k, p: (np.where(k == 0, 0.0, k / p) - np.where(k == 1, 0.0, (1 - k) / (1 - p)),),
            lambda y, k, p: _binom_mass_partials(y, k, 1, p)[1:],
            lambda label, k, p: (-_mass(st.binom, k, 0, p),),
        ),
        type(st.geom): _discrete_partials(
            lambda k, p: k >= 1,
            lambda k, p: (1 / p - np.where(k == 1, 0.0, (k - 1) / (1 - p)),),
            _geom_mass_partials,
            lambda label, k, p: (np.where(k >= 1, k * np.power(1 - p, k - 1), 0.0),),
        ),
        type(st.nbinom): _discrete_partials(
            lambda k, n, p: k >= 0,
            lambda k, n, p: (sc.digamma(k + n) - sc.digamma(n) + np.log(p), n / p - np.where(k == 0, 0.0, k / (1 - p))),
            _nbinom_mass_partials,
            _nbinom_cdf_partials,
        ),
    }
)


# ----- registration ---------------------------------------------------------------------------

_CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf", "ppf", "isf")
_DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "sf", "logcdf", "logsf")

for _name in _CONTINUOUS_METHODS:
    _method = getattr(rv_continuous, _name)
    declare_parameters(_method, _parameters("q" if _name in ("ppf", "isf") else "x"))
    for _cls in _FORMS:
        _register_elementwise(_method, _continuous_rule(_method), f"{_name}", (_cls,))
declare_parameters(rv_generic.rvs, _parameters(None))
for _cls in _FORMS:
    _register_elementwise(rv_generic.rvs, _rvs, "rvs", (_cls,))
for _name, _compute in _SUMMARIES.items():
    _method = getattr(rv_generic, _name)
    declare_parameters(_method, _parameters("order" if _name == "moment" else None))
    for _cls in _FORMS:
        _register_elementwise(_method, _compute, _name, (_cls,))
declare_parameters(rv_generic.interval, _parameters("confidence"))
_rrule_interval, _frule_interval = _interval_rules()
for _cls in _FORMS:
    rrule.register(rv_generic.interval, _cls)(_rrule_interval)
    frule.register(rv_generic.interval, _cls)(_frule_interval)
for _name in _DISCRETE_METHODS:
    _method = getattr(rv_discrete, _name)
    declare_parameters(_method, _parameters("k"))
    for _cls in _DISCRETE:
        _register_elementwise(_method, _discrete_rule(_method), f"{_name}", (_cls,))


# ----- frozen distributions: ``st.norm(mu, s).logpdf(x)`` ---------------------------------------
# A frozen distribution keeps its parameters in ``args`` (and constants in ``kwds``: the engines
# pass parameters that carry derivatives by position). Its tangent is ``Tangent[type](args=...)``,
# one entry per parameter; its methods are the distribution's, through the rules above.


def _frozen_args_tangents(d_frozen, n: int) -> tuple:
    d_frozen = unthunk(d_frozen)
    d_args = _ZERO if isinstance(d_frozen, AbstractZero) else unthunk(getattr(d_frozen, "args", _ZERO))
    return tuple(_ZERO if isinstance(d_args, AbstractZero) else d_args[i] for i in range(n))


def _rrule_freeze(dist, *args, **kwargs):
    """``dist(*args, **kwargs)``: a frozen distribution (a rule for calls of the distribution)."""
    frozen = dist(*args, **kwargs)

    def freeze_pullback(d_frozen):
        return (_NO, *_frozen_args_tangents(d_frozen, len(args)))

    return frozen, freeze_pullback


def _frule_freeze(tangents, dist, *args, **kwargs):
    frozen = dist(*args, **kwargs)
    return frozen, Tangent[type(frozen)](args=Tangent[tuple](*tangents[1 : 1 + len(args)]))


def _generator_rule(dispatcher, frozen, method_name: str, args: tuple):
    method = getattr(type(frozen.dist), method_name)
    call = (frozen.dist, *args, *frozen.args)
    rule = dispatcher.lookup(method, call)
    if rule is None:
        raise NoRuleError(method, call, location=user_location())
    return rule, call


def _frozen_rules(method_name: str):
    def rrule_frozen(frozen, *args, **kwargs):
        rule, call = _generator_rule(rrule, frozen, method_name, args)
        y, back = rule(*call, **frozen.kwds, **kwargs)
        n = len(args)

        def frozen_pullback(dy):
            d = back(dy)  # (NoTangent, the distribution's, the arguments', the parameters')
            return (_NO, Tangent[type(frozen)](args=Tangent[tuple](*d[2 + n :])), *d[2 : 2 + n])

        return y, frozen_pullback

    def frule_frozen(tangents, frozen, *args, **kwargs):
        rule, call = _generator_rule(frule, frozen, method_name, args)
        d_params = _frozen_args_tangents(tangents[1], len(frozen.args))
        return rule((_NO, _NO, *tangents[2:], *d_params), *call, **frozen.kwds, **kwargs)

    rrule_frozen.__qualname__ = f"rrule_frozen_{method_name}"
    frule_frozen.__qualname__ = f"frule_frozen_{method_name}"
    # An engine's values (dual numbers) reach the reverse rule as they are: a distribution frozen
    # on them (``st.norm(mu, s)`` in forward mode run through the source engine, or in a Hessian)
    # holds them in ``args``, which the distribution's method then takes with ``x``'s, through the
    # rules above; the forward rule would take them for constants of the dual numbers it pushes.
    rrule_frozen.on_engine_values = True
    return rrule_frozen, frule_frozen


for _cls in (*_FORMS, *_DISCRETE):
    rrule.register(_cls, functor=True)(_rrule_freeze)
    frule.register(_cls, functor=True)(_frule_freeze)
    declare_parameters(_cls, _parameters(None))
for _frozen_type, _names in (
    (rv_continuous_frozen, (*_CONTINUOUS_METHODS, "rvs", *_SUMMARIES, "interval")),
    (rv_discrete_frozen, _DISCRETE_METHODS),
):
    for _name in _names:
        _method = getattr(_frozen_type, _name)
        _rrule_frozen, _frule_frozen = _frozen_rules(_name)
        rrule.register(_method, batched=True)(_rrule_frozen)
        frule.register(_method, batched=True)(_frule_frozen)


# ----- kernel density estimates ------------------------------------------------------------------
# ``gaussian_kde(dataset, bw_method, weights)`` is differentiated in none of them here: a value being
# differentiated among them is refused at the user's line on every engine (SciPy's own check had
# taken a bandwidth that is a dual number or a tracked value for one that is not a number, a
# ValueError). An estimate of constants is built as SciPy builds it.


def _kde_refusal(location: str | None) -> NoDerivativeError:
    where = f" at {location}" if location else ""
    return NoDerivativeError(
        f"scipy.stats.gaussian_kde{where}: the kernel density estimate is not differentiated in its dataset, "
        "bandwidth or weights: take them from outside the function being differentiated (a closure or a global), "
        "or write the estimate with scipy.stats.norm.pdf(x, loc=data, scale=h), which is differentiated in all of them"
    )


def _rrule_kde(*args, **kwargs):
    location = user_location()

    def refused():
        raise _kde_refusal(location)

    def kde_pullback(d_kde):
        return (_NO, *(Thunk(refused) for _ in args))

    return call_by_engine(st.gaussian_kde, args, kwargs, "scipy.stats.gaussian_kde"), kde_pullback


def _frule_kde(tangents, *args, **kwargs):
    if any(not (isinstance(t, AbstractZero) or _all_zero(t)) for t in map(unthunk, tangents[1:])):
        raise _kde_refusal(user_location())
    return st.gaussian_kde(*args, **kwargs), _ZERO


rrule.register(st.gaussian_kde, functor=False)(_rrule_kde)
frule.register(st.gaussian_kde, functor=False)(_frule_kde)


# ----- multivariate normal ---------------------------------------------------------------------
# log N(x; m, S) = -(k log 2π + log det S + r' S⁻¹ r) / 2 with r = x - m: in x, -S⁻¹r; in m, S⁻¹r;
# in S, -(S⁻¹ - S⁻¹ r r' S⁻¹) / 2 (Petersen & Pedersen, The Matrix Cookbook, eqs. 57 and 61). A
# scalar cov is c I and a vector its diagonal; SciPy reads the lower triangle of a matrix
# (``eigh``), so its cotangent lies there (``fold_onto_triangle``, as for ``eigh``'s own rule).

_MVN = type(st.multivariate_normal)


class _Gaussian(NamedTuple):
    samples: object  # x as (..., k)
    inverse: object  # S⁻¹
    solved: object  # S⁻¹ r per sample, (..., k)
    cov_kind: int  # the number of axes of cov: 0 (c I), 1 (a diagonal) or 2


def _covariance_matrix(cov, k: int):
    """The k × k matrix a ``cov`` argument stands for (or a tangent of it)."""
    if np.ndim(cov) == 0:
        return cov * np.eye(k)
    return np.diag(cov) if np.ndim(cov) == 1 else hermitian_from_triangle(cov, True)


def _gaussian(x, mean, cov) -> _Gaussian:
    k = np.shape(mean)[-1] if mean is not None and np.ndim(mean) else np.shape(cov)[0] if np.ndim(cov) else 1
    # (SciPy reads a vector as samples when k = 1)
    samples = np.reshape(x, np.shape(x) + (1,)) if k == 1 and np.ndim(x) <= 1 else x
    try:
        inverse = np.linalg.inv(_covariance_matrix(cov, k))
    except np.linalg.LinAlgError:
        raise NoDerivativeError(
            f"scipy.stats.multivariate_normal{at_user()}: the covariance is singular, where the density has no "
            "derivative"
        ) from None
    r = samples if mean is None else samples - mean
    return _Gaussian(samples, inverse, r @ inverse, np.ndim(cov))


def _mvn_rules(method_name: str):
    method = getattr(_MVN, method_name)
    scaled = method_name == "pdf"  # the pdf's partials are the logpdf's times the pdf

    signature = inspect.signature(method)

    def arguments(dist, args: tuple, kwargs: dict) -> tuple:
        bound = signature.bind(dist, *args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments[n] for n in ("x", "mean", "cov", "allow_singular"))

    def rrule_mvn(dist, *args, **kwargs):
        x, mean, cov, allow_singular = arguments(dist, args, kwargs)
        y = _value(method, dist, (x, mean, cov, allow_singular))
        n = 2 + len(args)  # cotangents: of the method, the distribution and each positional argument
        g = _gaussian(x, mean, cov)

        def mvn_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO, _NO, dy, dy, dy, _NO)[:n]
            w = np.reshape(dy * y if scaled else dy, np.shape(g.solved)[:-1])
            wu = g.solved * np.expand_dims(w, -1)  # (not w[..., None]: a Hessian's w is a dual number)
            d_x = match_input(x, np.reshape(-wu, np.shape(x)))
            d_mean = _ZERO if mean is None else match_input(mean, np.sum(np.reshape(wu, (-1, wu.shape[-1])), axis=0))
            flat_u, flat_w = np.reshape(g.solved, (-1, wu.shape[-1])), np.reshape(w, -1)
            G = -0.5 * (np.sum(flat_w) * g.inverse - (flat_u * flat_w[:, None]).T @ flat_u)
            d_cov = (
                np.trace(G) if g.cov_kind == 0 else np.diagonal(G) if g.cov_kind == 1 else fold_onto_triangle(G, True)
            )
            return (_NO, _NO, d_x, d_mean, match_input(cov, d_cov), _NO)[:n]

        return y, mvn_pullback

    def frule_mvn(tangents, dist, *args, **kwargs):
        x, mean, cov, allow_singular = arguments(dist, args, kwargs)
        y = _value(method, dist, (x, mean, cov, allow_singular))
        dx, d_mean, d_cov = (unthunk(t) for t in (*tangents, _ZERO, _ZERO, _ZERO)[2:5])
        g = _gaussian(x, mean, cov)
        dy = _ZERO
        if not isinstance(dx, AbstractZero):
            dy = -np.sum(g.solved * np.reshape(dx, np.shape(g.samples)), axis=-1)
        if mean is not None and not isinstance(d_mean, AbstractZero):
            dy = dy + np.sum(g.solved * d_mean, axis=-1)
        if not isinstance(d_cov, AbstractZero):
            dS = _covariance_matrix(d_cov, g.inverse.shape[0])
            dy = dy - 0.5 * np.sum(g.inverse * dS) + 0.5 * np.sum((g.solved @ dS) * g.solved, axis=-1)
        if isinstance(dy, AbstractZero):
            return y, dy
        dy = np.reshape(dy, np.shape(y))
        return y, dy * y if scaled else dy

    rrule_mvn.__qualname__ = f"rrule_multivariate_normal_{method_name}"
    frule_mvn.__qualname__ = f"frule_multivariate_normal_{method_name}"
    rrule.register(method, _MVN)(rrule_mvn)
    frule.register(method, _MVN)(frule_mvn)


_mvn_rules("logpdf")
_mvn_rules("pdf")


# A frozen multivariate normal (``st.multivariate_normal(mean, cov)``) keeps the processed mean
# and a covariance object; its tangent is ``Tangent[type](mean=..., cov_object=Tangent[...](
# _covariance=...))``, the covariance's cotangent as the rule above gives it for the 2-D matrix
# (in its lower triangle), which freezing takes back to the form ``cov`` was given in.
_MVN_FROZEN = type(st.multivariate_normal(mean=[0.0]))


def _freeze_mvn_on_engine_values(dist, bound: inspect.BoundArguments):
    """``dist(mean, cov, ...)`` where ``mean`` or ``cov`` is an engine's value (a dual number: forward
    mode, a Hessian), which SciPy's freezing converts to a plain array: frozen on the plain values,
    then given the engine's values in the processed forms SciPy keeps (``mean`` a vector, the
    covariance a matrix), which the rules of its methods take."""
    mean, cov = bound.arguments["mean"], bound.arguments["cov"]
    plain = inspect.BoundArguments(bound.signature, bound.arguments | {"mean": stood_for(mean), "cov": stood_for(cov)})
    frozen = dist(*plain.args, **plain.kwargs)
    if isinstance(mean, ActiveValue):
        frozen.mean = np.reshape(mean, (frozen.dim,))
    if isinstance(cov, ActiveValue):
        frozen.cov_object._covariance = (
            cov * np.eye(frozen.dim) if np.ndim(cov) == 0 else np.diag(cov) if np.ndim(cov) == 1 else cov
        )
    return frozen


def _rrule_freeze_mvn(dist, *args, **kwargs):
    bound = inspect.signature(dist).bind(*args, **kwargs)
    bound.apply_defaults()
    mean, cov = bound.arguments["mean"], bound.arguments["cov"]
    if isinstance(mean, ActiveValue) or isinstance(cov, ActiveValue):
        frozen = _freeze_mvn_on_engine_values(dist, bound)
    else:
        frozen = dist(*args, **kwargs)

    def freeze_mvn_pullback(d_frozen):
        d_frozen = unthunk(d_frozen)
        d_mean = d_cov = _ZERO
        if not isinstance(d_frozen, AbstractZero):
            d_mean = unthunk(getattr(d_frozen, "mean", _ZERO))
            d_cov = unthunk(getattr(unthunk(getattr(d_frozen, "cov_object", _ZERO)), "_covariance", _ZERO))
        if mean is None or isinstance(d_mean, AbstractZero):
            d_mean = _NO if mean is None else _ZERO
        else:
            d_mean = match_input(mean, np.sum(d_mean) if np.ndim(mean) == 0 else np.reshape(d_mean, np.shape(mean)))
        if not isinstance(d_cov, AbstractZero):  # the 2-D cotangent, taken back to cov's form
            d_cov = match_input(
                cov, np.trace(d_cov) if np.ndim(cov) == 0 else np.diagonal(d_cov) if np.ndim(cov) == 1 else d_cov
            )
        return (_NO, d_mean, d_cov, *(_NO,) * (len(args) - 2))[: 1 + len(args)]

    return frozen, freeze_mvn_pullback


def _rrule_frozen_mvn(method_name: str):
    method = getattr(_MVN, method_name)

    def rrule_frozen_mvn(frozen, x):
        covariance = frozen.cov_object.covariance
        rule = rrule.lookup(method, (frozen._dist, x, frozen.mean, covariance))
        y, back = rule(frozen._dist, x, frozen.mean, covariance)

        def frozen_mvn_pullback(dy):
            _, _, d_x, d_mean, d_cov = back(dy)
            d_frozen = Tangent[type(frozen)](
                mean=d_mean, cov_object=Tangent[type(frozen.cov_object)](_covariance=d_cov)
            )
            return _NO, d_frozen, d_x

        return y, frozen_mvn_pullback

    rrule_frozen_mvn.__qualname__ = f"rrule_frozen_multivariate_normal_{method_name}"
    rrule.register(getattr(_MVN_FROZEN, method_name))(rrule_frozen_mvn)


rrule.register(_MVN, functor=True)(_rrule_freeze_mvn)
_rrule_frozen_mvn("logpdf")
_rrule_frozen_mvn("pdf")
