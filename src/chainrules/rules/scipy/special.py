"""Rules for ``scipy.special``: elementwise functions whose derivative reuses the primal's work.

``expit`` and ``log_expit`` compute ``exp(-|x|)`` once and build both the value and the
derivative from it, accurate at both tails (seed 000's logistic sigmoid); ``softmax``,
``log_softmax`` and ``logsumexp`` keep their normalized weights. Every ``frule`` here accepts
tangents with a leading batch axis (registered ``batched=True``): partials broadcast against it.

Functions of several outputs (``airy``, ``fresnel``, ``sici``, ``shichi``) take a tuple of
cotangents, one per output, and give a tuple's tangent, as NumPy's ``frexp`` and ``modf`` do.

Partials are written with ufuncs that have rules themselves, so second derivatives work. An
integer-typed order (polygamma's, a Bessel function's) is discrete: ``NoTangent``. A real
parameter whose derivative has no closed form (a Bessel order, the ``a`` of ``gammainc``, the
parameters of ``betainc`` and of the hypergeometric functions) is differentiated in the other
arguments only: its cotangent raises when an engine reads it, which it does for an argument
being differentiated, never for a constant.

>>> import scipy.special as sc, chainrules as cr
>>> y, back = cr.rrule(sc.expit, 40.0)
>>> float(y), back(1.0)[1]  # y (1 - y) would round to 0 here
(1.0, 4.248354255291589e-18)
>>> _, back = cr.rrule(sc.jv, 2.5, 1.0)
>>> back(1.0)[2]  # in x; the cotangent of the order, back(1.0)[1], raises if evaluated
0.11655...
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from ...core import (
    ActiveValue,
    NoDerivativeError,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    carries_batch,
    conj,
    frule,
    input_matcher,
    match_input,
    match_input_batch,
    rrule,
    unbroadcast,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ...core.errors import at_user, option_refused
from ..numpy._arrays import scalar_of, sequence_items
from ..numpy.ufuncs import _LN10, elementwise
from ._lapack import as_array, is_batched, is_zero, options, tangent_of

_NO = NoTangent()
_ZERO = ZeroTangent()
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_ONE_OVER_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _lift(dx, x, out_ndim: int):
    """A batched tangent of ``x`` reshaped to broadcast against partials of ``out_ndim`` axes."""
    if not is_batched(dx, x):
        return dx
    # (np.reshape, not np.asarray: a dual tangent, in forward over forward, keeps its own tangent)
    return np.reshape(dx, np.shape(dx)[:1] + (1,) * (out_ndim - np.ndim(x)) + np.shape(x))


class _NoClosedForm:
    """The partial in a parameter whose derivative exists but has no closed form (the order of a
    Bessel function, the ``a`` of an incomplete gamma function). The rule differentiates in the
    other arguments; the parameter's cotangent is a ``Thunk`` that raises when it is evaluated,
    and its tangent, unless zero, makes the ``frule`` raise. Never a silent zero.

    Engines read the cotangent of a constant (a closure, a global, a value computed from
    neither) never: there the rule just works. An argument of the differentiated function gets
    its cotangent evaluated, so it is refused, even one left out with ``argnums=`` when it feeds
    more than one such call (the sweep adds the cotangents as it goes): refused, never wrong."""

    __slots__ = ("name", "parameter")

    def __init__(self, name: str, parameter: str):
        self.name, self.parameter = name, parameter

    def error(self, location: str | None) -> NoDerivativeError:
        where = f" at {location}" if location else ""
        return NoDerivativeError(
            f"{self.name}{where}: the derivative in {self.parameter} has no closed form, so the rule "
            f"differentiates in the other arguments only and {self.parameter} must be held constant: take it from "
            f"outside the function being differentiated (a closure or a global), not from its arguments"
        )


def _refused_cotangent(partial: _NoClosedForm, location: str | None) -> Thunk:
    def no_closed_form():
        raise partial.error(location)

    return Thunk(no_closed_form)


def _all_zero(dx) -> bool:
    """Whether a tangent of plain numbers is zero everywhere (an engine's value is never taken as zero)."""
    return isinstance(dx, (float, int, complex, np.ndarray, np.generic)) and not np.any(dx)


def _batch_axes(axes: tuple, y, dy) -> tuple:
    """A reduction's axes as axes of ``dy``: one further right for a batch of cotangents."""
    return tuple(a + 1 for a in axes) if carries_batch(y, dy) else axes


def _register_elementwise(f, compute, name: str, types: tuple = ()):
    """``rrule`` and batched ``frule`` for ``f(*args, **kwargs)`` from ``compute(*args, **kwargs) -> (y, partials)``
    (for arguments of these ``types`` only, where given).

    ``partials`` holds one derivative per positional argument, ``None`` for an argument that is
    not differentiable (an integer order), or a ``_NoClosedForm``. Complex partials are taken as
    holomorphic derivatives.
    """

    def elementwise_rrule(*args, **kwargs):
        y, partials = compute(*args, **kwargs)
        refused = any(isinstance(p, _NoClosedForm) for p in partials)
        location = user_location() if refused else None

        def cotangent(x, p, dy, match):
            if p is None:
                return _NO
            if isinstance(p, _NoClosedForm):
                return _refused_cotangent(p, location)
            return match(x, dy * conj(p))

        def elementwise_pullback(dy):
            dy = unthunk(dy)
            if is_zero(dy):
                return (_NO,) + tuple(_NO if p is None else _ZERO for p in partials)
            match = input_matcher(y, dy)
            return (_NO,) + tuple(cotangent(x, p, dy, match) for x, p in zip(args, partials))

        elementwise_pullback.__qualname__ = f"{name}_pullback"
        return y, elementwise_pullback

    def elementwise_frule(tangents, *args, **kwargs):
        y, partials = compute(*args, **kwargs)
        out_ndim = np.ndim(y)
        dy, lead = _ZERO, ()
        for x, p, dx in zip(args, partials, tangents[1:]):
            dx = unthunk(dx)
            if p is None or is_zero(dx):
                continue
            if isinstance(p, _NoClosedForm):
                if _all_zero(dx):
                    continue  # a finite derivative times zero (a constant seeded with a zero tangent)
                raise p.error(user_location())
            if is_batched(dx, x):
                lead = np.shape(dx)[:1]
            term = p * _lift(dx, x, out_ndim)
            dy = term if is_zero(dy) else dy + term
        if is_zero(dy):
            return y, dy
        if np.shape(dy) != (*lead, *np.shape(y)):
            # a partial that is a number (the quantiles' 1 in loc) times a tangent of a number
            dy = dy + np.zeros((*lead, *np.shape(y)))
        if np.iscomplexobj(dy) and not np.iscomplexobj(y):
            dy = np.real(dy)
        return y, _in_dtype_of(y, dy)

    elementwise_rrule.__qualname__ = f"rrule_{name}"
    elementwise_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, *types, batched=True)(elementwise_rrule)
    frule.register(f, *types, batched=True)(elementwise_frule)


def _in_dtype_of(y, dy):
    """A tangent of NumPy numbers in the output's dtype: the partials (``gamma(n + 1.0)``, a float64
    constant) may promote a float32 output's tangent, array or scalar alike."""
    if isinstance(dy, (np.ndarray, np.generic)) and isinstance(y, (np.ndarray, np.generic)) and dy.dtype != y.dtype:
        return dy.astype(y.dtype) if isinstance(dy, np.ndarray) else y.dtype.type(dy)
    return dy


def _register_outputs(f, compute, name: str):
    """``rrule`` and batched ``frule`` for a ufunc ``f(x)`` of several outputs (``airy``, ``fresnel``)
    from ``compute(x, **kwargs) -> (outputs, derivatives)``: one holomorphic derivative per output.
    The cotangent of ``x`` sums each output's cotangent times its derivative's conjugate."""

    def outputs_rrule(x, **kwargs):
        outputs, derivatives = compute(x, **kwargs)

        def outputs_pullback(dys):
            dx = _ZERO
            for y, d, dy in zip(outputs, derivatives, sequence_items(outputs, dys)):
                if not is_zero(dy):
                    term = input_matcher(y, dy)(x, dy * conj(d))
                    dx = term if is_zero(dx) else dx + term
            return _NO, dx

        outputs_pullback.__qualname__ = f"{name}_pullback"
        return outputs, outputs_pullback

    def outputs_frule(tangents, x, **kwargs):
        outputs, derivatives = compute(x, **kwargs)
        dx = unthunk(tangents[1])
        if is_zero(dx):
            return outputs, _ZERO
        dx = _lift(dx, x, np.ndim(outputs[0]))
        return outputs, Tangent[tuple](*(_in_dtype_of(y, d * dx) for y, d in zip(outputs, derivatives)))

    outputs_rrule.__qualname__, outputs_frule.__qualname__ = f"rrule_{name}", f"frule_{name}"
    rrule.register(f, batched=True)(outputs_rrule)
    frule.register(f, batched=True)(outputs_frule)


def _float(x):
    """``x`` as a float array; arrays of other types (dual numbers) pass through."""
    if hasattr(type(x), "__array_function__") and not isinstance(x, (np.ndarray, np.generic)):
        return x
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


def _polygamma(n, x):
    """psi^(n)(x) from ufuncs (which dispatch on dual numbers): digamma for n = 0, else
    (-1)^(n+1) n! zeta(n+1, x), SciPy's own formula."""
    n = np.asarray(n)
    if n.ndim == 0 and n == 0:
        return sc.digamma(x)
    # (an array of orders, even an empty one, broadcasts against x: the partial has the output's shape)
    value = (-1.0) ** (n + 1) * sc.gamma(n + 1.0) * sc.zeta(n + 1.0, x)
    return np.where(n == 0, sc.digamma(x), value) if n.ndim or n == 0 else value


def _like(y, x):
    """NumPy scalars for scalar inputs, as the ufuncs return them; an engine's value (a dual number
    of a Hessian) is already what the ufuncs would return for it."""
    return y[()] if isinstance(y, np.ndarray) and y.ndim == 0 else y


def _expit(x):
    # exp(-|x|) once: expit(x) = 1/(1+e) for x >= 0 and e/(1+e) below; expit' = e/(1+e)^2,
    # accurate in both tails, where y(1 - y) would round to zero.
    x = _float(x)
    e = _exp_minus_abs(x)
    d = 1 + e
    y = np.where(x >= 0, 1, e) / d
    return _like(y, x), _like(e / (d * d), x)


def _exp_minus_abs(x):
    """``exp(-|x|)``, with ``|x|`` taken as ``x`` at ``x = 0``: the functions built on it are smooth
    there, and their partials' own derivatives at 0 (a Hessian) come from one side, not from
    ``|x|``'s zero slope at its kink."""
    return np.exp(-np.where(x >= 0, x, -x))


def _log_expit(x):
    x = _float(x)
    e = _exp_minus_abs(x)
    y = np.minimum(x, 0) - np.log1p(e)
    return _like(y, x), _like(np.where(x >= 0, e, 1) / (1 + e), x)


def _logit(p):
    p = _float(p)
    return sc.logit(p), 1 / (p * (1 - p))


def _gammaln(x):
    return sc.gammaln(x), sc.digamma(x)


def _digamma(x):
    x = _float(x)
    if np.iscomplexobj(x):  # the derivative is trigamma, which SciPy has for real arguments only
        where = user_location()
        raise TypeError(
            f"scipy.special.digamma (psi){f' at {where}' if where else ''}: chainrules differentiates it at real "
            "arguments only, as its derivative (trigamma, scipy.special.polygamma(1, x)) has no complex version "
            "in SciPy"
        )
    return sc.digamma(x), _polygamma(1, x)


def _polygamma_rule(n, x):
    # SciPy's polygamma converts its arguments (np.asarray): on an engine's value (a dual number, in
    # a Hessian) the same formula from ufuncs, which dispatch on it
    y = _polygamma(n, x) if isinstance(x, ActiveValue) else sc.polygamma(n, x)
    return y, (None, _polygamma(np.asarray(n) + 1, x))


def _is_integer(s) -> bool:
    """An integer order (a polygamma's): a setting. A float one, even integer-valued (3.0), is a real
    order, which may be being differentiated."""
    return np.asarray(stood_for(s)).dtype.kind in "iub"


_RIEMANN = _NoClosedForm("scipy.special.zeta", "x")  # Riemann's zeta, zeta(x) without q
_HURWITZ_ORDER = _NoClosedForm("scipy.special.zeta", "s")  # the order s of Hurwitz's zeta(s, q)


def _zeta(s, q=None):
    if q is None:  # Riemann's zeta(x) = zeta(x, 1), whose derivative in x has no closed form either
        return sc.zeta(s), (_RIEMANN, None)
    # d/dq zeta(s, q) = -s zeta(s + 1, q); in the order s there is no closed form (an integer s, the
    # orders of polygamma, is taken as not differentiable)
    return sc.zeta(s, q), (None if _is_integer(s) else _HURWITZ_ORDER, -s * sc.zeta(s + 1.0, q))


def _gamma(x):
    # Gamma'(x) = Gamma(x) psi(x); holomorphic, so complex arguments take the same row
    x = _float(x)
    y = sc.gamma(x)
    return y, y * sc.digamma(x)


def _ndtr(x):
    # the standard normal CDF: its derivative is the density exp(-x^2 / 2) / sqrt(2 pi)
    x = _float(x)
    return sc.ndtr(x), _ONE_OVER_SQRT_2PI * np.exp(-0.5 * x * x)


def _i0(x):
    # I0' = I1 (DLMF 10.29.3 with nu = 0)
    x = _float(x)
    return sc.i0(x), sc.i1(x)


def _i0e(x):
    # i0e = exp(-|x|) I0, so i0e' = exp(-|x|) (I1 - sign(x) I0) = i1e - sign(x) i0e
    x = _float(x)
    y = sc.i0e(x)
    return y, sc.i1e(x) - np.sign(x) * y


def _i1_over_x(i1, x):
    """``I1(x) / x`` (or its scaled form), whose limit at 0 is 1/2."""
    at_zero = x == 0
    return np.where(at_zero, 0.5, i1 / np.where(at_zero, 1, x))


def _i1(x):
    # I1' = I0 - I1 / x (DLMF 10.29.2), from ufuncs with rules of their own (for Hessians)
    x = _float(x)
    y = sc.i1(x)
    return y, sc.i0(x) - _i1_over_x(y, x)


def _i1e(x):
    # i1e = exp(-|x|) I1: the scaled form of I1' above less sign(x) i1e
    x = _float(x)
    y = sc.i1e(x)
    return y, sc.i0e(x) - _i1_over_x(y, x) - np.sign(x) * y


def _erfcx(x):
    # erfcx = exp(x^2) erfc(x), so erfcx' = 2 x erfcx - 2 / sqrt(pi)
    x = _float(x)
    y = sc.erfcx(x)
    return y, 2 * x * y - _TWO_OVER_SQRT_PI


def _log_ndtr(x):
    # the normal density over its CDF, as exp(-x^2/2 - log_ndtr) so the far left tail stays finite
    x = _float(x)
    y = sc.log_ndtr(x)
    return y, _ONE_OVER_SQRT_2PI * np.exp(-0.5 * x * x - y)


def _ndtri(p):
    # the inverse of ndtr: 1 / ndtr'(y) = sqrt(2 pi) exp(y^2 / 2)
    y = sc.ndtri(p)
    return y, np.exp(0.5 * y * y) / _ONE_OVER_SQRT_2PI


def _entr(x):
    x = _float(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.entr(x), -(np.log(x) + 1)


def _erf(x):
    x = _float(x)
    return sc.erf(x), _TWO_OVER_SQRT_PI * np.exp(-x * x)


def _erfc(x):
    x = _float(x)
    return sc.erfc(x), -_TWO_OVER_SQRT_PI * np.exp(-x * x)


def _erfinv(x):
    y = sc.erfinv(x)
    return y, _SQRT_PI_OVER_TWO * np.exp(y * y)


def _erfcinv(x):
    y = sc.erfcinv(x)
    return y, -_SQRT_PI_OVER_TWO * np.exp(y * y)


def _xlogy(x, y):
    x, y = _float(x), _float(y)
    # xlogy(0, y) is 0 for every y: its y-partial x / y vanishes there, and at y = 0 too (no 0/0);
    # elsewhere x / y itself, whose derivative in x is right at x = 0 (a Hessian's cross term)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.xlogy(x, y), (np.log(y) + 0 * x, np.where((x == 0) & (y == 0), 0, x / y))


def _xlog1py(x, y):
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.xlog1py(x, y), (np.log1p(y) + 0 * x, np.where((x == 0) & (y == -1), 0, x / (1 + y)))


def _rel_entr(x, y):
    # x log(x / y): 0 at x = 0 for every y, so its y-partial vanishes there as in xlogy
    value = sc.rel_entr(x, y)  # before _float, which would turn a Python float into a float64 array
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return value, (np.log(x / y) + 1, np.where((x == 0) & (y == 0), 0, -x / y))


def _kl_div(x, y):
    # x log(x / y) - x + y
    value = sc.kl_div(x, y)
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return value, (np.log(x / y), 1 - np.where((x == 0) & (y == 0), 0, x / y))


def _numpy_i0(x):
    # NumPy's modified Bessel function of the first kind, order 0: I0' = I1 (DLMF 10.29.3)
    x = _float(x)
    return np.i0(x), sc.i1(x)


#: below this |l log u| (Box-Cox) or |l y| (its inverse), the slope in l is its Taylor series: the
#: closed form cancels there (relative error about 1e-16 / t), the series' next term is about t^3
_SERIES_BELOW = 1e-4


def _boxcox_lambda_slope(u, log_u, y, lmbda):
    """d/dl of ``y = (u^l - 1) / l`` (``log u`` at ``l = 0``): ``(u^l log u - y) / l``, and near
    ``l = 0`` its Taylor series ``L^2 (1/2 + t / 3 + t^2 / 8)`` (``L = log u``, ``t = l L``), whose own
    derivatives there are the slope's: second derivatives (a Hessian) at ``l = 0`` come out right."""
    t = lmbda * log_u
    small = np.abs(t) < _SERIES_BELOW
    series = log_u * log_u * (0.5 + t / 3.0 + t * t / 8.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(small, series, (np.exp(t) * log_u - y) / np.where(small, 1.0, lmbda))


def _boxcox(x, lmbda):
    # y = (x^l - 1) / l, log x at l = 0: dy/dx = x^(l-1)
    x, lmbda = _float(x), _float(lmbda)
    y = sc.boxcox(x, lmbda)
    return y, (np.power(x, lmbda - 1.0), _boxcox_lambda_slope(x, np.log(x), y, lmbda))


def _boxcox1p(x, lmbda):
    # boxcox(1 + x, l)
    x, lmbda = _float(x), _float(lmbda)
    y = sc.boxcox1p(x, lmbda)
    return y, (np.power(1.0 + x, lmbda - 1.0), _boxcox_lambda_slope(1.0 + x, np.log1p(x), y, lmbda))


def _inv_boxcox(y, lmbda):
    # x = exp(g), g = log(1 + t) / l with t = l y (y at l = 0): dx/dy = x^(1 - l);
    # dx/dl = x g', g' = (t / (1 + t) - log(1 + t)) / l^2, and near l = 0 its Taylor series
    # y^2 (-1/2 + 2 t / 3 - 3 t^2 / 4) (right second derivatives there, as for boxcox)
    y, lmbda = _float(y), _float(lmbda)
    x = sc.inv_boxcox(y, lmbda)
    t = lmbda * y
    small = np.abs(t) < _SERIES_BELOW
    safe = np.where(small, 1.0, lmbda)
    series = y * y * (-0.5 + t * (2.0 / 3.0) - t * t * 0.75)
    with np.errstate(divide="ignore", invalid="ignore"):
        dl = x * np.where(small, series, (t / (1.0 + t) - np.log1p(t)) / (safe * safe))
    return x, (np.power(x, 1.0 - lmbda), dl)


def _huber(delta, r):
    # r^2 / 2 where |r| <= delta, delta (|r| - delta / 2) beyond
    delta, r = _float(delta), _float(r)
    inside = np.abs(r) <= delta
    return sc.huber(delta, r), (np.where(inside, 0.0, np.abs(r) - delta), np.where(inside, r, delta * np.sign(r)))


def _pseudo_huber(delta, r):
    # delta^2 (s - 1), s = sqrt(1 + (r / delta)^2): d/dr = r / s, d/ddelta = 2 delta (s - 1) - r^2 / (delta s)
    delta, r = _float(delta), _float(r)
    s = np.sqrt(1.0 + (r / delta) ** 2)
    return sc.pseudo_huber(delta, r), (2.0 * delta * (s - 1.0) - r * r / (delta * s), r / s)


def _binom(n, k):
    # Gamma(n + 1) / (Gamma(k + 1) Gamma(n - k + 1)): the logarithmic derivatives are differences of psi
    n, k = _float(n), _float(k)
    y = sc.binom(n, k)
    rest = sc.digamma(n - k + 1.0)
    return y, (y * (sc.digamma(n + 1.0) - rest), y * (rest - sc.digamma(k + 1.0)))


def _betaln(a, b):
    a, b = _float(a), _float(b)
    both = sc.digamma(a + b)
    return sc.betaln(a, b), (sc.digamma(a) - both, sc.digamma(b) - both)


for _f, _compute, _name in (
    (sc.expit, _expit, "expit"),
    (sc.log_expit, _log_expit, "log_expit"),
    (sc.logit, _logit, "logit"),
    (sc.gammaln, _gammaln, "gammaln"),
    (sc.digamma, _digamma, "digamma"),
    (sc.gamma, _gamma, "gamma"),
    (sc.ndtr, _ndtr, "ndtr"),
    (sc.i0, _i0, "i0"),
    (sc.i0e, _i0e, "i0e"),
    (sc.i1, _i1, "i1"),
    (sc.i1e, _i1e, "i1e"),
    (sc.erfcx, _erfcx, "erfcx"),
    (sc.log_ndtr, _log_ndtr, "log_ndtr"),
    (sc.ndtri, _ndtri, "ndtri"),
    (sc.entr, _entr, "entr"),
    (sc.erf, _erf, "erf"),
    (sc.erfc, _erfc, "erfc"),
    (sc.erfinv, _erfinv, "erfinv"),
    (sc.erfcinv, _erfcinv, "erfcinv"),
    (np.i0, _numpy_i0, "i0"),
):
    _register_elementwise(_f, (lambda c: lambda x: (lambda y, d: (y, (d,)))(*c(x)))(_compute), _name)

# SciPy's own ufuncs for elementary functions (other callables than NumPy's, the same functions):
# the NumPy rows, with their partials; exp10, which NumPy lacks, is exp2's with log 10
for _f, _twin in ((sc.log1p, np.log1p), (sc.expm1, np.expm1), (sc.exp2, np.exp2), (sc.cbrt, np.cbrt)):
    elementwise(_f, *rrule.lookup(_twin).partials)
elementwise(sc.exp10, lambda x, *, out: out * _LN10)

_register_elementwise(sc.polygamma, _polygamma_rule, "polygamma")
_register_elementwise(sc.zeta, _zeta, "zeta")
# sc.zeta is a Python wrapper around a ufunc, which is what dual numbers meet
_zeta_ufunc = getattr(getattr(sc, "_ufuncs", None), "_zeta", None)
if isinstance(_zeta_ufunc, np.ufunc):
    _register_elementwise(_zeta_ufunc, _zeta, "zeta")
_register_elementwise(sc.xlogy, _xlogy, "xlogy")
_register_elementwise(sc.xlog1py, _xlog1py, "xlog1py")
_register_elementwise(sc.betaln, _betaln, "betaln")
_register_elementwise(sc.rel_entr, _rel_entr, "rel_entr")
_register_elementwise(sc.kl_div, _kl_div, "kl_div")
_register_elementwise(sc.boxcox, _boxcox, "boxcox")
_register_elementwise(sc.boxcox1p, _boxcox1p, "boxcox1p")
_register_elementwise(sc.inv_boxcox, _inv_boxcox, "inv_boxcox")
_register_elementwise(sc.huber, _huber, "huber")
_register_elementwise(sc.pseudo_huber, _pseudo_huber, "pseudo_huber")
_register_elementwise(sc.binom, _binom, "binom")


# ----- parameters without closed-form derivatives; gamma and beta families ---------------------


_PLAIN = (np.ndarray, np.generic, int, float, complex, list, tuple)  # numbers and arrays, not an engine's values


def _discrete(v) -> bool:
    """Whether an order or parameter is integer-typed: a discrete index (as polygamma's order),
    which gets ``NoTangent``. A float one is a point of a continuum whose derivative exists."""
    if isinstance(v, (bool, int, np.integer, np.bool_)):
        return True
    dtype = getattr(v, "dtype", None)
    if dtype is None and isinstance(v, (list, tuple)):
        dtype = np.asarray(v).dtype
    return isinstance(dtype, np.dtype) and dtype.kind in "iub"


def _parameter(name: str, parameter: str, v):
    """The partial in a parameter without a closed-form derivative: ``None`` for an integer-typed
    one, else a ``_NoClosedForm`` (refused only if the parameter is differentiated)."""
    return None if _discrete(v) else _NoClosedForm(f"scipy.special.{name}", parameter)


def _order(v):
    """An order as arithmetic can shift it (``v - 1``): lists become arrays."""
    return np.asarray(v) if isinstance(v, (list, tuple)) else v


def _beta(a, b):
    # B = Gamma(a) Gamma(b) / Gamma(a + b), so dB/da = B (psi(a) - psi(a + b)) (DLMF 5.12.1)
    a, b = _float(a), _float(b)
    y = sc.beta(a, b)
    both = sc.digamma(a + b)
    return y, (y * (sc.digamma(a) - both), y * (sc.digamma(b) - both))


def _gamma_density(a, x):
    """x^(a-1) e^(-x) / Gamma(a), d/dx of the regularized lower incomplete gamma P(a, x) (DLMF
    8.8.13), as one exp of logs; xlogy keeps x = 0 finite for a = 1. Ufuncs with rules (Hessians)."""
    return np.exp(sc.xlogy(a - 1, x) - x - sc.gammaln(a))


def _gammainc(a, x):
    a_partial, x = _parameter("gammainc", "a", a), _float(x)
    a = _order(a)
    return sc.gammainc(a, x), (a_partial, _gamma_density(a, x))


def _gammaincc(a, x):
    # Q = 1 - P
    a_partial, x = _parameter("gammaincc", "a", a), _float(x)
    a = _order(a)
    return sc.gammaincc(a, x), (a_partial, -_gamma_density(a, x))


def _gammaincinv(a, p):
    # x = P^-1(a, p): dx/dp = 1 / P'(x), from the primal x
    a_partial, a = _parameter("gammaincinv", "a", a), _order(a)
    x = sc.gammaincinv(a, p)
    return x, (a_partial, 1 / _gamma_density(a, x))


def _gammainccinv(a, q):
    a_partial, a = _parameter("gammainccinv", "a", a), _order(a)
    x = sc.gammainccinv(a, q)
    return x, (a_partial, -1 / _gamma_density(a, x))


def _loggamma(z):
    # the principal branch of log Gamma: holomorphic off the negative real axis, derivative psi
    z = _float(z)
    return sc.loggamma(z), sc.digamma(z)


def _multigammaln(a, d):
    # log of the multivariate gamma function: d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2),
    # j = 0 .. d - 1 (SciPy's formula); its derivative in a is the same sum of digammas
    if isinstance(a, _PLAIN):
        y = sc.multigammaln(a, d)  # SciPy checks d and the domain of a
        a = _float(a)
    else:  # an engine's value (a dual number, in a Hessian): the formula from ufuncs with rules
        y = d * (d - 1) * 0.25 * math.log(math.pi) + sum(sc.gammaln(a - 0.5 * j) for j in range(int(d)))
    partial = sc.digamma(a)
    for j in range(1, int(d)):
        partial = partial + sc.digamma(a - 0.5 * j)
    return y, (partial, None)


# ----- Bessel functions: derivatives in the argument, the order held fixed ----------------------
# Every partial is built from Bessel functions that have rules themselves, so that second
# derivatives (Hessians, forward over reverse) work. The symmetric recurrences DLMF 10.6.1
# (2 C'_v = C_{v-1} - C_{v+1}, C = J, Y) and 10.29.1 (2 I'_v = I_{v-1} + I_{v+1},
# 2 K'_v = -(K_{v-1} + K_{v+1})) are used rather than 10.6.2 / 10.29.2 (C'_v = C_{v-1} - v C_v / z):
# one more evaluation, but no division by z, so they hold at z = 0.


def _real_only(name: str, z):
    if np.iscomplexobj(z):
        raise option_refused(
            getattr(sc, name),
            (z,),
            "a complex argument: its exponential scaling (by |Re z| or |Im z|) is not holomorphic; differentiate "
            "the unscaled function times the scaling instead",
        )


def _bessel(name: str, f, combine):
    """``compute`` for ``f(v, z)`` with ``f'(v, z) = combine(f(v - 1, z), f(v + 1, z), f(v, z))``."""

    def compute(v, z):
        v_partial, v, z = _parameter(name, "the order v", v), _order(v), _float(z)
        y = f(v, z)
        return y, (v_partial, combine(f(v - 1, z), f(v + 1, z), y, z))

    return compute


def _scaled_real_bessel(name: str, f, combine):
    compute = _bessel(name, f, combine)

    def real_compute(v, z):
        _real_only(name, z)
        return compute(v, z)

    return real_compute


def _half_difference(below, above, y, z):
    return 0.5 * (below - above)


def _half_sum(below, above, y, z):
    return 0.5 * (below + above)


def _minus_half_sum(below, above, y, z):
    return -0.5 * (below + above)


def _ive_combine(below, above, y, z):
    # ive = I_v exp(-|x|) for real x: ive' = (ive_{v-1} + ive_{v+1}) / 2 - sign(x) ive
    return 0.5 * (below + above) - np.sign(z) * y


def _kve_combine(below, above, y, z):
    # kve = K_v exp(z) (holomorphic): kve' = -(kve_{v-1} + kve_{v+1}) / 2 + kve
    return y - 0.5 * (below + above)


def _j0(x):
    # J0' = -J1 (DLMF 10.6.3)
    x = _float(x)
    return sc.j0(x), -sc.j1(x)


def _j1(x):
    x = _float(x)
    return sc.j1(x), 0.5 * (sc.j0(x) - sc.jv(2, x))


def _y0(x):
    x = _float(x)
    return sc.y0(x), -sc.y1(x)


def _y1(x):
    x = _float(x)
    return sc.y1(x), 0.5 * (sc.y0(x) - sc.yv(2, x))


def _k0(x):
    # K0' = -K1 (DLMF 10.29.3)
    x = _float(x)
    return sc.k0(x), -sc.k1(x)


def _k1(x):
    x = _float(x)
    return sc.k1(x), -0.5 * (sc.k0(x) + sc.kv(2, x))


def _k0e(x):
    # k0e = exp(x) K0, so k0e' = k0e - k1e
    x = _float(x)
    y = sc.k0e(x)
    return y, y - sc.k1e(x)


def _k1e(x):
    x = _float(x)
    y = sc.k1e(x)
    return y, y - 0.5 * (sc.k0e(x) + sc.kve(2, x))


#: the sign of f_n(-x) / f_n(x) for even n, real x (DLMF 10.47.14-10.47.16); None: no such reflection
_SPHERICAL_EVEN_SIGN = {"spherical_jn": 1, "spherical_yn": -1, "spherical_in": 1, "spherical_kn": None}


def _spherical_call(name: str, n, z, derivative: bool):
    """``scipy.special.<name>(n, z, derivative)``. SciPy's wrapper converts ``z`` to an array, which
    an engine's value (a dual number, in a Hessian) refuses: for one, the private ufuncs that the
    wrapper calls, with its reflection of negative real ``z`` (where those ufuncs give nan)."""
    if isinstance(z, _PLAIN):
        return getattr(sc, name)(n, z, derivative)
    f = getattr(sc._ufuncs, f"_{name}_d" if derivative else f"_{name}")
    n = np.asarray(n, dtype=np.dtype("long"))
    negative = np.asarray(z < 0) if not np.iscomplexobj(z) else np.zeros((), dtype=bool)
    if not negative.any():
        return f(n, z)
    even_sign = _SPHERICAL_EVEN_SIGN[name]
    if even_sign is None:
        raise NoDerivativeError(
            f"scipy.special.{name}{at_user()}: the rule cannot take a second derivative at a negative real z"
        )
    sign = np.where(n % 2 == 0, even_sign, -even_sign) * (-1 if derivative else 1)  # d/dz of f(-z) adds a minus
    return np.where(negative, sign, 1) * f(n, np.where(negative, -z, z))


def _spherical(name: str, signs: tuple[int, int]):
    """``compute`` for ``scipy.special.<name>(n, z, derivative=False)``, and the second derivative.

    The derivative is SciPy's own ``derivative=True``; the derivative of that is, by the
    recurrences DLMF 10.51.2 (``j``, ``y``: signs +, -) and 10.51.5 (``i``: +, +; ``(-1)^n k``,
    so ``k``: -, -), differentiated, ``(s n f'_{n-1} + t (n + 1) f'_{n+1}) / (2n + 1)``: no
    division by z, and the term of order -1 has the coefficient 0."""
    below_sign, above_sign = signs

    def second(n, z):
        n = np.asarray(n)
        below, above = _spherical_call(name, np.maximum(n - 1, 0), z, True), _spherical_call(name, n + 1, z, True)
        return (below_sign * n * below + above_sign * (n + 1) * above) / (2 * n + 1)

    def compute(n, z, *rest, **kwargs):
        derivative = options(f"scipy.special.{name}", rest, kwargs, (("derivative", False),))["derivative"]
        z = _float(z)
        if derivative:
            y, partial = _spherical_call(name, n, z, True), second(n, z)
        else:
            y, partial = _spherical_call(name, n, z, False), _spherical_call(name, n, z, True)
        return y, (None, partial) + (None,) * len(rest)  # n is an integer; `derivative` a flag

    return compute, second


def _yn(n, x):
    # yn and kn take integer orders only (SciPy truncates a float one): the order is discrete
    x, n = _float(x), _order(n)
    return sc.yn(n, x), (None, 0.5 * (sc.yn(n - 1, x) - sc.yn(n + 1, x)))


def _kn(n, x):
    x, n = _float(x), _order(n)
    return sc.kn(n, x), (None, -0.5 * (sc.kn(n - 1, x) + sc.kn(n + 1, x)))


def _exp1(z):
    # E1' = -exp(-z) / z (DLMF 6.2.1), holomorphic off the cut along the negative real axis
    z = _float(z)
    return sc.exp1(z), -np.exp(-z) / z


def _expi(z):
    # Ei' = exp(x) / x (DLMF 6.2.5)
    z = _float(z)
    return sc.expi(z), np.exp(z) / z


def _expn(n, x):
    # E_n' = -E_{n-1} (DLMF 8.19.13); E_0 = exp(-x) / x, so E_0' = -exp(-x) (1 + x) / x^2
    x = _float(x)
    n_array = np.asarray(n)
    below = -sc.expn(np.maximum(n_array - 1, 0), x)
    if np.any(n_array == 0):
        below = np.where(n_array == 0, -np.exp(-x) * (1 + x) / (x * x), below)
    return sc.expn(n, x), (None, below)


def _dawsn(z):
    # F' = 1 - 2 z F (DLMF 7.5.3 with the definition 7.2.5)
    z = _float(z)
    y = sc.dawsn(z)
    return y, 1 - 2 * z * y


def _erfi(z):
    z = _float(z)
    return sc.erfi(z), _TWO_OVER_SQRT_PI * np.exp(z * z)


def _wofz(z):
    # the Faddeeva function: w' = -2 z w + 2i / sqrt(pi) (DLMF 7.10.2)
    z = _float(z)
    y = sc.wofz(z)
    return y, -2 * z * y + 1j * _TWO_OVER_SQRT_PI


_register_elementwise(sc.beta, _beta, "beta")
_register_elementwise(sc.multigammaln, _multigammaln, "multigammaln")
for _f, _compute, _name in (
    (sc.gammainc, _gammainc, "gammainc"),
    (sc.gammaincc, _gammaincc, "gammaincc"),
    (sc.gammaincinv, _gammaincinv, "gammaincinv"),
    (sc.gammainccinv, _gammainccinv, "gammainccinv"),
    (sc.jv, _bessel("jv", sc.jv, _half_difference), "jv"),  # sc.jn is sc.jv
    (sc.yv, _bessel("yv", sc.yv, _half_difference), "yv"),
    (sc.iv, _bessel("iv", sc.iv, _half_sum), "iv"),
    (sc.kv, _bessel("kv", sc.kv, _minus_half_sum), "kv"),
    (sc.kve, _bessel("kve", sc.kve, _kve_combine), "kve"),
    (sc.ive, _scaled_real_bessel("ive", sc.ive, _ive_combine), "ive"),
    (sc.jve, _scaled_real_bessel("jve", sc.jve, _half_difference), "jve"),
    (sc.yve, _scaled_real_bessel("yve", sc.yve, _half_difference), "yve"),
    (sc.expn, _expn, "expn"),
):
    _register_elementwise(_f, _compute, _name)
_register_elementwise(sc.yn, _yn, "yn")
_register_elementwise(sc.kn, _kn, "kn")
for _f, _compute, _name in (
    (sc.j0, _j0, "j0"),
    (sc.j1, _j1, "j1"),
    (sc.y0, _y0, "y0"),
    (sc.y1, _y1, "y1"),
    (sc.k0, _k0, "k0"),
    (sc.k1, _k1, "k1"),
    (sc.k0e, _k0e, "k0e"),
    (sc.k1e, _k1e, "k1e"),
    (sc.loggamma, _loggamma, "loggamma"),
    (sc.exp1, _exp1, "exp1"),
    (sc.expi, _expi, "expi"),
    (sc.dawsn, _dawsn, "dawsn"),
    (sc.erfi, _erfi, "erfi"),
    (sc.wofz, _wofz, "wofz"),
):
    _register_elementwise(_f, (lambda c: lambda x: (lambda y, d: (y, (d,)))(*c(x)))(_compute), _name)

# The spherical Bessel functions are Python wrappers around private ufuncs of value and
# derivative, which are what dual numbers and tracked arrays meet in the wrappers' bodies: those
# have rules too (for z >= 0, where they agree with the wrappers), as zeta's ufunc above.
for _name, _signs in (
    ("spherical_jn", (1, -1)),
    ("spherical_yn", (1, -1)),
    ("spherical_in", (1, 1)),
    ("spherical_kn", (-1, -1)),
):
    _value_ufunc, _derivative_ufunc = getattr(sc._ufuncs, f"_{_name}"), getattr(sc._ufuncs, f"_{_name}_d")
    _compute, _second = _spherical(_name, _signs)
    _register_elementwise(getattr(sc, _name), _compute, _name)
    _register_elementwise(
        _value_ufunc, (lambda f, d: lambda n, z: (f(n, z), (None, d(n, z))))(_value_ufunc, _derivative_ufunc), _name
    )
    _register_elementwise(
        _derivative_ufunc,
        (lambda d, second: lambda n, z: (d(n, z), (None, second(n, z))))(_derivative_ufunc, _second),
        _name,
    )


# ----- Lambert W, incomplete beta, hypergeometric and elliptic functions, Airy and the integrals --
# Parameters (a, b, c of the hypergeometric functions, a and b of the incomplete beta function, the
# order of Struve's) are differentiated as gammainc's a is: refused, unless integer-typed.


def _lambertw(f):
    """``compute`` for ``f(z, k=0, tol=1e-8)``: the branch k and the tolerance are settings."""

    def compute(z, *rest, **kwargs):
        # W' = W / (z (1 + W)) (DLMF 4.13.4) is 1 / ((1 + W) exp(W)), as z = W exp(W): 1 at z = 0
        # on the principal branch, without 0 / 0
        w = f(z, *rest, **kwargs)
        return w, (1 / ((1 + w) * np.exp(w)),) + (None,) * len(rest)

    return compute


def _beta_density(a, b, x):
    """x^(a-1) (1-x)^(b-1) / B(a, b), d/dx of the regularized incomplete beta I_x(a, b) (DLMF 8.17.1,
    8.17.2), as one exp of logs: xlogy and xlog1py keep x = 0 and x = 1 finite for a = 1, b = 1."""
    return np.exp(sc.xlogy(a - 1, x) + sc.xlog1py(b - 1, -x) - sc.betaln(a, b))


def _incomplete_beta(name: str, f, inverse: bool, sign: int):
    """``compute`` for ``f(a, b, x)``: I_x(a, b), or 1 - I for ``sign = -1``, whose slope in x is
    ``sign`` times the beta density; ``inverse``, the x where I (or 1 - I) is the argument, whose
    slope is the reciprocal of that at the primal x."""

    def compute(a, b, x):
        partials = (_parameter(name, "a", a), _parameter(name, "b", b))
        a, b = _order(a), _order(b)
        y = f(a, b, x)
        if inverse:
            return y, (*partials, sign / _beta_density(a, b, y))
        return y, (*partials, sign * _beta_density(a, b, _float(x)))

    return compute


def _hyp2f1(a, b, c, z):
    # d/dz 2F1(a, b; c; z) = a b / c 2F1(a + 1, b + 1; c + 1; z) (DLMF 15.5.1)
    partials = tuple(_parameter("hyp2f1", p, v) for p, v in (("a", a), ("b", b), ("c", c)))
    a, b, c, z = _order(a), _order(b), _order(c), _float(z)
    return sc.hyp2f1(a, b, c, z), (*partials, a * b / c * sc.hyp2f1(a + 1, b + 1, c + 1, z))


def _hyp1f1(a, b, z):
    # d/dz M(a, b, z) = a / b M(a + 1, b + 1, z) (DLMF 13.3.15)
    partials = (_parameter("hyp1f1", "a", a), _parameter("hyp1f1", "b", b))
    a, b, z = _order(a), _order(b), _float(z)
    return sc.hyp1f1(a, b, z), (*partials, a / b * sc.hyp1f1(a + 1, b + 1, z))


def _hyperu(a, b, x):
    # d/dx U(a, b, x) = -a U(a + 1, b + 1, x) (DLMF 13.3.22)
    partials = (_parameter("hyperu", "a", a), _parameter("hyperu", "b", b))
    a, b, x = _order(a), _order(b), _float(x)
    return sc.hyperu(a, b, x), (*partials, -a * sc.hyperu(a + 1, b + 1, x))


def _hyp0f1(v, z):
    # d/dz 0F1(; v; z) = 0F1(; v + 1; z) / v (DLMF 16.3.1)
    partial, v, z = _parameter("hyp0f1", "v", v), _order(v), _float(z)
    return sc.hyp0f1(v, z), (partial, sc.hyp0f1(v + 1, z) / v)


#: below this |m|, the slopes of the elliptic integrals in m are their series in m: the closed
#: forms cancel there (relative error about 1e-16 / m), the series' next term is about m^4
_ELLIPTIC_SERIES_BELOW = 1e-3
#: (1/2)_n / n! and (-1/2)_n / n!: the coefficients of (1 - m s^2)^(-1/2) and (1 - m s^2)^(1/2) in m s^2
_FIRST_KIND = (1.0, 0.5, 0.375, 0.3125, 0.2734375)
_SECOND_KIND = (1.0, -0.5, -0.125, -0.0625, -0.0390625)


def _elliptic_m_slopes(phi, m, f, e, one_minus_m):
    """dF/dm and dE/dm of the elliptic integrals ``f = F(phi|m)``, ``e = E(phi|m)`` (``phi = None``:
    the complete ones, K and E): (E - (1-m) F) / (2 m (1-m)) - sin(phi) cos(phi) / (2 (1-m) D) and
    (E - F) / (2 m) (DLMF 19.4.2, 19.4.4 with m = k^2, D = sqrt(1 - m sin^2 phi)). Below
    |m| = 1e-3 their series: term by term, d/dm of m^n times the integral I_n of sin^(2n) from 0
    to phi (I_n = ((2n - 1) I_(n-1) - sin^(2n-1) cos) / (2n), I_0 = phi; for K and E, I_n = pi/2 c_n)."""
    small = np.abs(m) < _ELLIPTIC_SERIES_BELOW
    safe = np.where(small, 0.5, m)
    df, de = (e - one_minus_m * f) / (2 * safe * one_minus_m), (e - f) / (2 * safe)
    if phi is None:
        integrals = [math.pi / 2 * c for c in _FIRST_KIND]
    else:
        s, c = np.sin(phi), np.cos(phi)
        df = df - s * c / (2 * one_minus_m * np.sqrt(1 - m * s * s))
        integrals, power = [phi], s
        for n in range(1, len(_FIRST_KIND)):
            integrals.append(((2 * n - 1) * integrals[-1] - power * c) / (2 * n))
            power = power * s * s
    series_f = sum(n * _FIRST_KIND[n] * m ** (n - 1) * integrals[n] for n in range(1, len(_FIRST_KIND)))
    series_e = sum(n * _SECOND_KIND[n] * m ** (n - 1) * integrals[n] for n in range(1, len(_SECOND_KIND)))
    return np.where(small, series_f, df), np.where(small, series_e, de)


def _ellipk(m):
    m = _float(m)
    k = sc.ellipk(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return k, _elliptic_m_slopes(None, m, k, sc.ellipe(m), 1 - m)[0]


def _ellipkm1(p):
    # K(1 - p), accurate near p = 0 where K has its logarithmic singularity: d/dp = -dK/dm at m = 1 - p
    p = _float(p)
    k = sc.ellipkm1(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return k, -_elliptic_m_slopes(None, 1 - p, k, sc.ellipe(1 - p), p)[0]


def _ellipe(m):
    m = _float(m)
    e = sc.ellipe(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return e, _elliptic_m_slopes(None, m, sc.ellipk(m), e, 1 - m)[1]


def _ellipkinc(phi, m):
    # dF/dphi = 1 / sqrt(1 - m sin^2 phi), the integrand (DLMF 19.2.4)
    phi, m = _float(phi), _float(m)
    f = sc.ellipkinc(phi, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = _elliptic_m_slopes(phi, m, f, sc.ellipeinc(phi, m), 1 - m)[0]
    s = np.sin(phi)
    return f, (1 / np.sqrt(1 - m * s * s), slope)


def _ellipeinc(phi, m):
    # dE/dphi = sqrt(1 - m sin^2 phi), the integrand (DLMF 19.2.5)
    phi, m = _float(phi), _float(m)
    e = sc.ellipeinc(phi, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = _elliptic_m_slopes(phi, m, sc.ellipkinc(phi, m), e, 1 - m)[1]
    s = np.sin(phi)
    return e, (np.sqrt(1 - m * s * s), slope)


def _airy(z, **kwargs):
    # (Ai, Ai', Bi, Bi'): Ai'' = z Ai and Bi'' = z Bi (DLMF 9.2.1)
    z = _float(z)
    ai, aip, bi, bip = outputs = sc.airy(z, **kwargs)
    return outputs, (aip, z * ai, bip, z * bi)


def _fresnel(z, **kwargs):
    # (S, C): S' = sin(pi z^2 / 2), C' = cos(pi z^2 / 2) (DLMF 7.2.7, 7.2.8 in SciPy's normalization)
    z = _float(z)
    t = 0.5 * math.pi * z * z
    return sc.fresnel(z, **kwargs), (np.sin(t), np.cos(t))


def _over_z(numerator, z):
    """``numerator / z``, 1 at z = 0: the limit of sin(z) / z and sinh(z) / z."""
    at_zero = z == 0
    return np.where(at_zero, 1, numerator / np.where(at_zero, 1, z))


def _sici(z, **kwargs):
    # (Si, Ci): Si' = sin z / z, Ci' = cos z / z (DLMF 6.2.9, 6.2.11); SciPy's real Ci(-x) = Ci(x)
    # has the same slope cos x / x
    z = _float(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.sici(z, **kwargs), (_over_z(np.sin(z), z), np.cos(z) / z)


def _shichi(z, **kwargs):
    # (Shi, Chi): Shi' = sinh z / z, Chi' = cosh z / z (DLMF 6.2.15, 6.2.16)
    z = _float(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.shichi(z, **kwargs), (_over_z(np.sinh(z), z), np.cosh(z) / z)


def _spence(z):
    # SciPy's spence(z) is the integral of log(t) / (1 - t) from 1 to z: its slope -log1p(u) / u with
    # u = z - 1, and near u = 0 its series -(1 - u/2 + u^2/3), whose own derivative there is right
    z = _float(z)
    u = z - 1
    small = np.abs(u) < _SERIES_BELOW
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = -np.log1p(u) / np.where(small, 1, u)
    return sc.spence(z), np.where(small, -(1 - u / 2 + u * u / 3), slope)


def _poch(z, m):
    # (z)_m = Gamma(z + m) / Gamma(z) (DLMF 5.2.5): logarithmic derivatives psi(z + m) - psi(z) and psi(z + m)
    z, m = _float(z), _float(m)
    y = sc.poch(z, m)
    both = sc.digamma(z + m)
    return y, (y * (both - sc.digamma(z)), y * both)


def _struve_term(v, x):
    """(x / 2)^v / (sqrt(pi) Gamma(v + 3/2)), the term beside the Bessel-like recurrences of Struve's functions."""
    return np.power(x / 2, v) * sc.rgamma(v + 1.5) / math.sqrt(math.pi)


def _struve(v, x):
    # 2 H_v' = H_(v-1) - H_(v+1) + (x/2)^v / (sqrt(pi) Gamma(v + 3/2)) (DLMF 11.4.28)
    partial, v, x = _parameter("struve", "the order v", v), _order(v), _float(x)
    slope = 0.5 * (sc.struve(v - 1, x) - sc.struve(v + 1, x) + _struve_term(v, x))
    return sc.struve(v, x), (partial, slope)


def _modstruve(v, x):
    # 2 L_v' = L_(v-1) + L_(v+1) + (x/2)^v / (sqrt(pi) Gamma(v + 3/2)) (DLMF 11.4.30)
    partial, v, x = _parameter("modstruve", "the order v", v), _order(v), _float(x)
    slope = 0.5 * (sc.modstruve(v - 1, x) + sc.modstruve(v + 1, x) + _struve_term(v, x))
    return sc.modstruve(v, x), (partial, slope)


#: below this |x|, exprel's slope is its series: the closed form cancels (relative error about 1e-16 / x)
_EXPREL_SERIES_BELOW = 1e-2


def _exprel(x):
    # exprel = (e^x - 1) / x: exprel' = (e^x - exprel) / x, and near 0 the series sum n x^(n-1) / (n+1)!,
    # to x^5 (the next term, 7 x^6 / 8!, is below 1e-16 there)
    x = _float(x)
    y = sc.exprel(x)
    small = np.abs(x) < _EXPREL_SERIES_BELOW
    series = 0.5 + x * (1 / 3 + x * (1 / 8 + x * (1 / 30 + x * (1 / 144 + x / 840))))
    return y, np.where(small, series, (np.exp(x) - y) / np.where(small, 1, x))


def _owens_t(h, a):
    # T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt (DLMF 7.18 / Owen 1956): in a the
    # integrand; in h, -phi(h) erf(a h / sqrt 2) / 2 with phi the standard normal density
    h, a = _float(h), _float(a)
    one_plus = 1 + a * a
    dh = -0.5 * _ONE_OVER_SQRT_2PI * np.exp(-0.5 * h * h) * sc.erf(a * h / math.sqrt(2))
    return sc.owens_t(h, a), (dh, np.exp(-0.5 * h * h * one_plus) / (2 * math.pi * one_plus))


def _rgamma(z):
    # 1/Gamma: -psi(z) / Gamma(z), and left of 1/2 the reflection 1/Gamma(z) = Gamma(1 - z) sin(pi z) / pi
    # (DLMF 5.5.3) differentiated, Gamma(1 - z) (pi cos(pi z) - psi(1 - z) sin(pi z)) / pi: finite at
    # the zeros z = 0, -1, -2, ... where psi(z) has its poles
    z = _float(z)
    y = sc.rgamma(z)
    left = np.real(z) < 0.5
    w = np.where(left, 1 - z, 0.5)
    with np.errstate(over="ignore", invalid="ignore"):
        reflected = sc.gamma(w) * (math.pi * np.cos(math.pi * z) - sc.digamma(w) * np.sin(math.pi * z)) / math.pi
        return y, np.where(left, reflected, -y * sc.digamma(np.where(left, 1.0, z)))


def _gammasgn(x):
    # the sign of Gamma: constant between its poles
    x = _float(x)
    y = sc.gammasgn(x)
    return y, np.zeros_like(y)


# sc.lambertw is a Python wrapper around a ufunc, which is what dual numbers and tracked arrays meet
_register_elementwise(sc.lambertw, _lambertw(sc.lambertw), "lambertw")
_register_elementwise(sc._ufuncs._lambertw, _lambertw(sc._ufuncs._lambertw), "lambertw")
for _f, _compute, _name in (
    (sc.betainc, _incomplete_beta("betainc", sc.betainc, False, 1), "betainc"),
    (sc.betaincc, _incomplete_beta("betaincc", sc.betaincc, False, -1), "betaincc"),
    (sc.betaincinv, _incomplete_beta("betaincinv", sc.betaincinv, True, 1), "betaincinv"),
    (sc.betainccinv, _incomplete_beta("betainccinv", sc.betainccinv, True, -1), "betainccinv"),
    (sc.hyp2f1, _hyp2f1, "hyp2f1"),
    (sc.hyp1f1, _hyp1f1, "hyp1f1"),
    (sc.hyperu, _hyperu, "hyperu"),
    (sc.hyp0f1, _hyp0f1, "hyp0f1"),
    (sc.ellipkinc, _ellipkinc, "ellipkinc"),
    (sc.ellipeinc, _ellipeinc, "ellipeinc"),
    (sc.poch, _poch, "poch"),
    (sc.struve, _struve, "struve"),
    (sc.modstruve, _modstruve, "modstruve"),
    (sc.owens_t, _owens_t, "owens_t"),
):
    _register_elementwise(_f, _compute, _name)
for _f, _compute, _name in (
    (sc.ellipk, _ellipk, "ellipk"),
    (sc.ellipkm1, _ellipkm1, "ellipkm1"),
    (sc.ellipe, _ellipe, "ellipe"),
    (sc.spence, _spence, "spence"),
    (sc.exprel, _exprel, "exprel"),
    (sc.rgamma, _rgamma, "rgamma"),
    (sc.gammasgn, _gammasgn, "gammasgn"),
):
    _register_elementwise(_f, (lambda c: lambda x: (lambda y, d: (y, (d,)))(*c(x)))(_compute), _name)
for _f, _compute, _name in (
    (sc.airy, _airy, "airy"),
    (sc.fresnel, _fresnel, "fresnel"),
    (sc.sici, _sici, "sici"),
    (sc.shichi, _shichi, "shichi"),
):
    _register_outputs(_f, _compute, _name)


@rrule.register(sc.softplus, batched=True)  # np.logaddexp's pullback takes a batch
def rrule_softplus(x, **kwargs):
    # softplus(x) is np.logaddexp(0, x, **kwargs), SciPy's definition: that rule, with x second
    y, logaddexp_pullback = rrule(np.logaddexp, 0.0, x, **kwargs)

    def softplus_pullback(dy):
        return _NO, logaddexp_pullback(dy)[2]

    return y, softplus_pullback


@frule.register(sc.softplus, batched=True)
def frule_softplus(tangents, x, **kwargs):
    return frule((_NO, _ZERO, tangents[1]), np.logaddexp, 0.0, x, **kwargs)


# ----- softmax, log_softmax, logsumexp ------------------------------------------------------


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (int(axis) % ndim,) if ndim else ()
    return tuple(int(a) % ndim for a in axis)


def _shift(axes, dx, x):
    return tuple(a + 1 for a in axes) if is_batched(dx, x) else axes


def _softmax_axis(rest, kwargs, name):
    return options(name, rest, kwargs, (("axis", None),))["axis"]


def _softmax_parts(x, axis):
    """``(shifted, e, total, axes)``: ``x`` less its maximum, its ``exp`` and their sum along
    ``axes``, with NumPy functions (which accept dual numbers) and one ``exp``."""
    x = _float(x)
    axes = _axes(axis, np.ndim(x))
    shifted = x - np.max(x, axis=axes, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, np.sum(e, axis=axes, keepdims=True), axes


def _softmax(x, axis, log: bool):
    """softmax or log_softmax, equal to SciPy's to rounding."""
    shifted, e, total, axes = _softmax_parts(x, axis)
    return (shifted - np.log(total) if log else e / total), axes


@rrule.register(sc.softmax, batched=True)
def rrule_softmax(x, *rest, **kwargs):
    y, axes = _softmax(x, _softmax_axis(rest, kwargs, "scipy.special.softmax"), log=False)

    def softmax_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (_NO, _ZERO) + (_NO,) * len(rest)
        dx = y * (dy - np.sum(dy * y, axis=_batch_axes(axes, y, dy), keepdims=True))
        return (_NO, input_matcher(y, dy)(x, dx)) + (_NO,) * len(rest)

    return y, softmax_pullback


@frule.register(sc.softmax, batched=True)
def frule_softmax(tangents, x, *rest, **kwargs):
    y, axes = _softmax(x, _softmax_axis(rest, kwargs, "scipy.special.softmax"), log=False)
    dx = unthunk(tangents[1])
    if is_zero(dx):
        return y, _ZERO
    axes = _shift(axes, dx, x)
    return y, y * (dx - np.sum(dx * y, axis=axes, keepdims=True))


@rrule.register(sc.log_softmax, batched=True)
def rrule_log_softmax(x, *rest, **kwargs):
    shifted, e, total, axes = _softmax_parts(x, _softmax_axis(rest, kwargs, "scipy.special.log_softmax"))
    y = shifted - np.log(total)

    def log_softmax_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (_NO, _ZERO) + (_NO,) * len(rest)
        weights = e / total  # the softmax, from the primal's exp (no second exp)
        dx = dy - weights * np.sum(dy, axis=_batch_axes(axes, y, dy), keepdims=True)
        return (_NO, input_matcher(y, dy)(x, dx)) + (_NO,) * len(rest)

    return y, log_softmax_pullback


@frule.register(sc.log_softmax, batched=True)
def frule_log_softmax(tangents, x, *rest, **kwargs):
    shifted, e, total, axes = _softmax_parts(x, _softmax_axis(rest, kwargs, "scipy.special.log_softmax"))
    y = shifted - np.log(total)
    dx = unthunk(tangents[1])
    if is_zero(dx):
        return y, _ZERO
    axes = _shift(axes, dx, x)
    return y, dx - np.sum((e / total) * dx, axis=axes, keepdims=True)  # the softmax without a second exp


_LSE_OPTIONS = (("axis", None), ("b", None), ("keepdims", False), ("return_sign", False))


def _logsumexp(a, axis, b, keepdims, return_sign):
    """``(result, r, w, e_over_s, axes)``: ``r = log|sum(b exp(a))|`` with the maximum shifted out,
    one ``exp``; ``w = b exp(a - r)`` (signed) is ``dr/da`` and ``exp(a - r)`` is ``dr/db``."""
    a = _float(a)
    if b is not None:  # in the precision of a and b together, as SciPy computes
        b = _float(b)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            a = a.astype(np.result_type(a, b), copy=False)
        a_full = np.broadcast_to(a, np.broadcast_shapes(np.shape(a), np.shape(b)))
    else:
        a_full = a
    axes = _axes(axis, np.ndim(a_full))
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.max(a_full, axis=axes, keepdims=True) if a_full.size else np.zeros((1,) * a_full.ndim, a_full.dtype)
        m = np.where(np.isfinite(m), m, 0)
        e = np.exp(a_full - m)
        t = e if b is None else b * e
        s = np.sum(t, axis=axes, keepdims=True)
        r_keep = np.log(np.abs(s)) + m
        w = t / s
        e_over_s = e / s
    sign_keep = np.sign(s) if not np.iscomplexobj(s) else s / np.abs(s)
    if np.iscomplexobj(s) and not return_sign:
        r_keep = np.log(s) + m
    r = r_keep if keepdims else np.squeeze(r_keep, axis=axes)
    sign = sign_keep if keepdims else np.squeeze(sign_keep, axis=axes)
    if keepdims and a_full.ndim == 0:  # SciPy keeps the dimensions of a number as one axis
        r, sign = np.reshape(r, 1), np.reshape(sign, 1)
    r, sign = scalar_of(r), scalar_of(sign)
    dtype = a_full.dtype if b is None else np.result_type(a_full, b)
    if np.ndim(r) == 0 and r.dtype != dtype and np.iscomplexobj(r) == np.iscomplexobj(dtype.type(0)):
        r = r.astype(dtype)
    result = (r, sign) if return_sign else r
    if not a_full.size:  # an empty sum: SciPy's own result (its sign of the empty sum is -1)
        with np.errstate(divide="ignore"):
            result = sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    return result, w, e_over_s, axes


@rrule.register(sc.logsumexp, batched=True)
def rrule_logsumexp(a, *rest, **kwargs):
    o = options("scipy.special.logsumexp", rest, kwargs, _LSE_OPTIONS)
    b = o["b"]
    result, w, e_over_s, axes = _logsumexp(a, o["axis"], b, o["keepdims"], o["return_sign"])
    b_positional = len(rest) >= 2

    def logsumexp_pullback(dresult):
        dr = unthunk(dresult)
        if o["return_sign"]:
            from ._lapack import parts

            dr = parts(dr, 2)[0]
        if is_zero(dr):
            return (_NO, _ZERO) + tuple(_ZERO if i == 1 else _NO for i in range(len(rest)))
        dr = as_array(dr)  # dual numbers pass through, for Hessians
        r = result[0] if o["return_sign"] else result
        batch = carries_batch(r, dr)
        if o["keepdims"] and np.ndim(w) == 0:  # the axis SciPy gives a number's result
            dr = dr[..., 0]
        if batch:  # a batch of cotangents: match_input_batch sums the broadcast axes
            if not o["keepdims"]:
                dr = np.expand_dims(dr, tuple(x + 1 for x in axes))
            grads = [_NO] * len(rest)
            if b_positional and b is not None:
                grads[1] = match_input_batch(b, dr * conj(e_over_s))
            return (_NO, match_input_batch(a, dr * conj(w))) + tuple(grads)
        if not o["keepdims"]:
            dr = np.expand_dims(dr, axes)
        da = match_input(a, unbroadcast(a, dr * conj(w)))
        grads = [_NO] * len(rest)
        if b_positional and b is not None:
            grads[1] = match_input(b, unbroadcast(b, dr * conj(e_over_s)))
        return (_NO, da) + tuple(grads)

    return result, logsumexp_pullback


@frule.register(sc.logsumexp, batched=True)
def frule_logsumexp(tangents, a, *rest, **kwargs):
    o = options("scipy.special.logsumexp", rest, kwargs, _LSE_OPTIONS)
    b = o["b"]
    result, w, e_over_s, axes = _logsumexp(a, o["axis"], b, o["keepdims"], o["return_sign"])
    da = unthunk(tangents[1])
    db = unthunk(tangents[3]) if len(tangents) > 3 else _ZERO
    batched = is_batched(da, a) or (b is not None and is_batched(db, b))
    total = _ZERO
    if not is_zero(da):
        total = w * _lift(da, a, np.ndim(w))
    if not is_zero(db) and b is not None:
        term = e_over_s * _lift(db, b, np.ndim(w))
        total = term if is_zero(total) else total + term
    if is_zero(total):
        return result, _ZERO
    dr = np.sum(total, axis=tuple(x + 1 for x in axes) if batched else axes, keepdims=o["keepdims"])
    if o["keepdims"] and np.ndim(w) == 0:  # the axis SciPy gives a number's result
        dr = dr[..., None]
    if not np.iscomplexobj(result[0] if o["return_sign"] else result):
        dr = np.real(dr)
    return result, (tangent_of(result, dr, _ZERO) if o["return_sign"] else dr)
