"""Rules for ``scipy.special``: elementwise functions whose derivative reuses the primal's work.

``expit`` and ``log_expit`` compute ``exp(-|x|)`` once and build both the value and the
derivative from it, accurate at both tails (seed 000's logistic sigmoid); ``softmax``,
``log_softmax`` and ``logsumexp`` keep their normalized weights. Every ``frule`` here accepts
tangents with a leading batch axis (registered ``batched=True``): partials broadcast against it.

>>> import scipy.special as sc, chainrules as cr
>>> y, back = cr.rrule(sc.expit, 40.0)
>>> float(y), back(1.0)[1]  # y (1 - y) would round to 0 here
(1.0, 4.248354255291589e-18)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from ...core import NoTangent, ZeroTangent, conj, frule, match_input, rrule, unbroadcast, unthunk
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
    dx = np.asarray(dx)
    return dx.reshape(dx.shape[:1] + (1,) * (out_ndim - np.ndim(x)) + np.shape(x))


def _register_elementwise(f, compute, name: str):
    """``rrule`` and batched ``frule`` for ``f(*args)`` from ``compute(*args) -> (y, partials)``.

    ``partials`` holds one derivative per argument, or ``None`` for an argument that is not
    differentiable (an integer order). Complex partials are taken as holomorphic derivatives.
    """

    def elementwise_rrule(*args):
        y, partials = compute(*args)

        def elementwise_pullback(dy):
            dy = unthunk(dy)
            if is_zero(dy):
                return (_NO,) + tuple(_NO if p is None else _ZERO for p in partials)
            return (_NO,) + tuple(_NO if p is None else match_input(x, dy * conj(p)) for x, p in zip(args, partials))

        elementwise_pullback.__qualname__ = f"{name}_pullback"
        return y, elementwise_pullback

    def elementwise_frule(tangents, *args):
        y, partials = compute(*args)
        out_ndim = np.ndim(y)
        dy = _ZERO
        for x, p, dx in zip(args, partials, tangents[1:]):
            dx = unthunk(dx)
            if p is None or is_zero(dx):
                continue
            term = p * _lift(dx, x, out_ndim)
            dy = term if is_zero(dy) else dy + term
        if not is_zero(dy) and np.iscomplexobj(dy) and not np.iscomplexobj(y):
            dy = np.real(dy)
        if not is_zero(dy) and isinstance(y, np.ndarray) and np.ndim(dy) > 0 and dy.dtype != y.dtype:
            dy = dy.astype(y.dtype)
        return y, dy

    elementwise_rrule.__qualname__ = f"rrule_{name}"
    elementwise_frule.__qualname__ = f"frule_{name}"
    rrule.register(f)(elementwise_rrule)
    frule.register(f, batched=True)(elementwise_frule)


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
    if not n.any():
        return sc.digamma(x)
    value = (-1.0) ** (n + 1) * sc.gamma(n + 1.0) * sc.zeta(n + 1.0, x)
    return np.where(n == 0, sc.digamma(x), value) if n.ndim or n == 0 else value


def _like(y, x):
    """NumPy scalars for scalar inputs, as the ufuncs return them."""
    return y[()] if np.ndim(y) == 0 else y


def _expit(x):
    # exp(-|x|) once: expit(x) = 1/(1+e) for x >= 0 and e/(1+e) below; expit' = e/(1+e)^2,
    # accurate in both tails, where y(1 - y) would round to zero.
    x = _float(x)
    e = np.exp(-np.abs(x))
    d = 1 + e
    y = np.where(x >= 0, 1, e) / d
    return _like(y, x), _like(e / (d * d), x)


def _log_expit(x):
    x = _float(x)
    e = np.exp(-np.abs(x))
    y = np.minimum(x, 0) - np.log1p(e)
    return _like(y, x), _like(np.where(x >= 0, e, 1) / (1 + e), x)


def _logit(p):
    p = _float(p)
    return sc.logit(p), 1 / (p * (1 - p))


def _gammaln(x):
    return sc.gammaln(x), sc.digamma(x)


def _digamma(x):
    x = _float(x)
    return sc.digamma(x), _polygamma(1, x)


def _polygamma_rule(n, x):
    return sc.polygamma(n, x), (None, _polygamma(np.asarray(n) + 1, x))


def _integer_valued(s) -> bool:
    s = np.asarray(s)
    return s.dtype.kind in "iub" or bool(np.all(s == np.round(s)))


def _zeta(s, q):
    # d/dq zeta(s, q) = -s zeta(s + 1, q); in the order s there is no closed form, so it may only
    # be an integer (the orders of polygamma), whose derivative does not exist
    if not _integer_valued(s):
        raise ValueError("the rule for scipy.special.zeta differentiates in q only; its order s must be integer-valued")
    return sc.zeta(s, q), (None, -s * sc.zeta(s + 1.0, q))


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
    # xlogy(0, y) is 0 for every y: its y-partial vanishes there (no 0/0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.xlogy(x, y), (np.log(y) + 0 * x, np.where(x == 0, 0, x / y))


def _xlog1py(x, y):
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sc.xlog1py(x, y), (np.log1p(y) + 0 * x, np.where(x == 0, 0, x / (1 + y)))


def _rel_entr(x, y):
    # x log(x / y): 0 at x = 0 for every y, so its y-partial vanishes there as in xlogy
    value = sc.rel_entr(x, y)  # before _float, which would turn a Python float into a float64 array
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return value, (np.log(x / y) + 1, np.where(x == 0, 0, -x / y))


def _kl_div(x, y):
    # x log(x / y) - x + y
    value = sc.kl_div(x, y)
    x, y = _float(x), _float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return value, (np.log(x / y), 1 - np.where(x == 0, 0, x / y))


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
):
    _register_elementwise(_f, (lambda c: lambda x: (lambda y, d: (y, (d,)))(*c(x)))(_compute), _name)

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


@rrule.register(sc.softmax)
def rrule_softmax(x, *rest, **kwargs):
    y, axes = _softmax(x, _softmax_axis(rest, kwargs, "scipy.special.softmax"), log=False)

    def softmax_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (_NO, _ZERO) + (_NO,) * len(rest)
        dx = y * (dy - np.sum(dy * y, axis=axes, keepdims=True))
        return (_NO, match_input(x, dx)) + (_NO,) * len(rest)

    return y, softmax_pullback


@frule.register(sc.softmax, batched=True)
def frule_softmax(tangents, x, *rest, **kwargs):
    y, axes = _softmax(x, _softmax_axis(rest, kwargs, "scipy.special.softmax"), log=False)
    dx = unthunk(tangents[1])
    if is_zero(dx):
        return y, _ZERO
    axes = _shift(axes, dx, x)
    return y, y * (dx - np.sum(dx * y, axis=axes, keepdims=True))


@rrule.register(sc.log_softmax)
def rrule_log_softmax(x, *rest, **kwargs):
    shifted, e, total, axes = _softmax_parts(x, _softmax_axis(rest, kwargs, "scipy.special.log_softmax"))
    y = shifted - np.log(total)

    def log_softmax_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (_NO, _ZERO) + (_NO,) * len(rest)
        weights = e / total  # the softmax, from the primal's exp (no second exp)
        dx = dy - weights * np.sum(dy, axis=axes, keepdims=True)
        return (_NO, match_input(x, dx)) + (_NO,) * len(rest)

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
    if b is not None:
        b = _float(b)
        a_full = np.broadcast_to(a, np.broadcast_shapes(np.shape(a), np.shape(b)))
    else:
        a_full = a
    axes = _axes(axis, np.ndim(a_full))
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.max(a_full, axis=axes, keepdims=True) if a_full.size else np.zeros((1,) * a_full.ndim)
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
    r, sign = r[()] if np.ndim(r) == 0 else r, sign[()] if np.ndim(sign) == 0 else sign
    if np.ndim(r) == 0 and r.dtype != a_full.dtype and np.iscomplexobj(r) == np.iscomplexobj(a_full):
        r = r.astype(a_full.dtype)
    result = (r, sign) if return_sign else r
    return result, w, e_over_s, axes


@rrule.register(sc.logsumexp)
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
    if not np.iscomplexobj(result[0] if o["return_sign"] else result):
        dr = np.real(dr)
    return result, (tangent_of(result, dr, _ZERO) if o["return_sign"] else dr)
