"""Rules for ``scipy.stats``' summary statistics: ``moment``, ``skew``, ``kurtosis``, ``sem``,
``variation``, ``gmean``, ``hmean``, ``pmean``, ``trim_mean``, ``entropy``, ``iqr``,
``median_abs_deviation``, ``zscore``, ``zmap``, ``pearsonr`` and ``spearmanr``.

Each statistic but ``zscore`` and ``zmap`` reduces its inputs along ``axis`` (an int, None or a
tuple) to one value per slice, so its derivative is one gradient ``G`` per input, of the input's
(broadcast) shape: ``ȳ`` spread over each slice times ``G`` is the input's cotangent, and the sum
of ``G ẋ`` over each slice the output's tangent (``_Summary``). The gradients are written with
NumPy functions of the inputs (central moments ``m_k = mean(d^k)``, ``d = a - mean(a)``, whose
gradient is ``k (d^{k-1} - m_{k-1}) / n``), so they also run on the dual numbers of a Hessian.
``iqr`` and ``median_abs_deviation`` are compositions of NumPy's percentile and median, taken
through those functions' rules. Real inputs only, ``nan_policy`` 'propagate' (or 'raise'); 'omit'
and complex data are refused, never given a wrong derivative.

Every real argument is differentiated: the data, the weights (``moment``'s ``center=`` and
``hmean``'s and ``pmean``'s ``weights=`` are keyword-only: the engines pass them by the positions
declared for them), ``pmean``'s ``p``, ``entropy``'s ``base``, ``iqr``'s ``rng`` and the number
``scale`` of ``iqr`` and ``median_abs_deviation``. ``pearsonr``'s p-value is a function of r and
the sample size n (r follows a beta distribution on [-1, 1] with both shapes n/2 - 1), so it is
differentiated too. The order statistics that ``trim_mean``, ``iqr`` and ``median_abs_deviation``
pick are piecewise linear in the data: their derivative is that of the entries they pick (ties
taken in the order the entries stand). ``spearmanr``, and ``trim_mean`` in its proportion, are
piecewise constant: their derivative is zero (see ``rrule_spearmanr``).

>>> import numpy as np, scipy.stats as st, chainrules as cr
>>> cr.gradient(lambda a: st.gmean(a), np.array([1.0, 4.0]))[0]  # gmean / (n a)
array([1.  , 0.25])
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np
import scipy.special as sc
import scipy.stats as st

from ...core import (
    AbstractZero,
    NoDerivativeError,
    NoRuleError,
    NoTangent,
    Tangent,
    ZeroTangent,
    add,
    call_by_engine,
    carries_batch,
    frule,
    match_input,
    match_input_batch,
    rrule,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ...core.errors import at_user, option_refused
from ...core.keywords import declare_parameters
from ..numpy._arrays import array_or_active, batch_to_input, tangent_array, to_input
from ..numpy._util import align, axes_of, is_batched, keep, match_output, shift, size_along
from ._lapack import parts, tangent_of

_P = inspect.Parameter
_NO = NoTangent()
_ZERO = ZeroTangent()
#: ``scale='normal'``: the IQR and the MAD of the standard normal distribution (scipy.stats' constants)
_NORMAL_SCALE = {st.iqr: 2 * np.sqrt(2) * sc.erfinv(0.5), st.median_abs_deviation: sc.ndtri(0.75)}


#: keyword-only arguments that carry derivatives: the engines pass them by position (``_declared``)
_KEYWORD_ONLY = {st.moment: "center", st.hmean: "weights", st.pmean: "weights"}


def _declared(f) -> inspect.Signature:
    """``f``'s signature with its parameters up to the keyword-only one of ``_KEYWORD_ONLY`` made
    positional, as ``declare_parameters`` declares them."""
    parameters = list(inspect.signature(f).parameters.values())
    last = [p.name for p in parameters].index(_KEYWORD_ONLY[f]) + 1
    positional = [p.replace(kind=_P.POSITIONAL_OR_KEYWORD) for p in parameters[:last]]
    return inspect.Signature(positional + parameters[last:])


_SIGNATURES = {f: _declared(f) for f in _KEYWORD_ONLY}
#: keywords SciPy still takes under their former names (its ``_rename_parameter``), which its
#: signature does not show: a call binds them by their names now
_RENAMED = {st.moment: {"moment": "order"}}
for _f, _signature in _SIGNATURES.items():
    declare_parameters(_f, lambda args, _signature=_signature: tuple(_signature.parameters.values()))


@functools.cache
def _signature(f) -> tuple[inspect.Signature, int]:
    """``f``'s signature as its rules bind a call (``_SIGNATURES``), and how many arguments SciPy's
    function itself takes by position."""
    own = inspect.signature(f)
    return _SIGNATURES.get(f, own), sum(p.kind is not _P.KEYWORD_ONLY for p in own.parameters.values())


class _Call:
    """A call ``f(*args, **kwargs)`` bound to ``f``'s signature (as declared: ``_SIGNATURES``): its
    settings by name, and which of its arguments came by position (those get cotangents)."""

    def __init__(self, f, args: tuple, kwargs: dict):
        self.f = f
        signature, takes = _signature(f)
        renamed = _RENAMED.get(f, {})
        bound = signature.bind(*args, **{renamed.get(name, name): v for name, v in kwargs.items()})
        bound.apply_defaults()
        self.o = bound.arguments
        self.names = list(signature.parameters)[: len(args)]
        # (the call as SciPy takes it: a keyword-only argument given by position passed by keyword)
        self.args, self.kwargs = args[:takes], {**kwargs, **dict(zip(self.names[takes:], args[takes:]))}
        if self.o.get("nan_policy", "propagate") == "omit":
            raise option_refused(f, args, "nan_policy='omit': the rule takes 'propagate' and 'raise'")
        if any(np.iscomplexobj(stood_for(v)) for v in (*args, *kwargs.values()) if not callable(v)):
            raise option_refused(f, args, "a complex array: the rule takes real data")

    def __getitem__(self, name: str):
        return self.o[name]

    def position(self, name: str) -> int | None:
        """Where the argument ``name`` stands among the positional arguments (None: not there)."""
        return self.names.index(name) if name in self.names else None

    def value(self):
        """The call's value, an engine's values (a Hessian's dual numbers) run by their engine
        through this module's rule."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return call_by_engine(self.f, self.args, self.kwargs, f"scipy.stats.{self.f.__name__}")


def _sum(v, axes):
    return np.sum(v, axis=axes, keepdims=True)


def _mean(v, axes):
    return np.mean(v, axis=axes, keepdims=True)


def _moment_gradient(d, k: int, axes, n):
    """The gradient of the central moment ``mean(d^k)`` in the data, ``k (d^{k-1} - m_{k-1}) / n``."""
    power = d ** (k - 1) if k > 2 else d
    return k * (power - _mean(power, axes)) / n


class _Summary:
    """A statistic's value ``y`` reduced over ``axes`` (of the inputs broadcast together), and its
    gradients: ``arrays`` maps an argument's name to ``G`` (broadcasting against the inputs),
    ``numbers`` a number argument's name to ``∂y/∂p`` (of the shape of ``y`` with its axes kept).
    A result object holding ``y`` (``pearsonr``'s) is ``result``, with ``gather`` taking its
    cotangent to ``y``'s and ``spread`` ``y``'s tangent to its."""

    def __init__(self, y, axes: tuple, keepdims: bool, arrays: dict, numbers: dict | None = None):
        self.y, self.axes, self.keepdims, self.arrays, self.numbers = y, axes, keepdims, arrays, numbers or {}
        self.result, self.gather, self.spread = y, unthunk, _same

    def returning(self, result, gather: Callable, spread: Callable) -> _Summary:
        self.result, self.gather, self.spread = result, gather, spread
        return self


def _same(t):
    return t


def _summary_rules(f, summary: Callable[[_Call], _Summary]) -> None:
    """Register the rules of the statistic ``f`` whose value and gradients ``summary`` gives."""
    name = f.__name__

    def rrule_summary(*args, **kwargs):
        call = _Call(f, args, kwargs)
        s = summary(call)
        arrays = {i: g for i, g in ((call.position(k), g) for k, g in s.arrays.items()) if i is not None}
        numbers = {i: g for i, g in ((call.position(k), g) for k, g in s.numbers.items()) if i is not None}

        def summary_pullback(dy):
            dy = s.gather(dy)
            cotangents = [_NO] * len(args)
            if isinstance(dy, AbstractZero):
                for i in (*arrays, *numbers):
                    cotangents[i] = dy
                return (_NO, *cotangents)
            lead = np.shape(dy)[:1] if carries_batch(s.y, dy) else ()
            kept = keep(dy, shift(s.axes, bool(lead)), s.keepdims)
            match = match_input_batch if lead else match_input
            for i, g in arrays.items():
                cotangents[i] = match(args[i], g * kept)
            for i, g in numbers.items():
                cotangents[i] = match(args[i], np.sum(g * kept, axis=tuple(range(len(lead), np.ndim(kept)))))
            return (_NO, *cotangents)

        summary_pullback.__qualname__ = f"{name}_pullback"
        return s.result, summary_pullback

    def frule_summary(tangents, *args, **kwargs):
        call = _Call(f, args, kwargs)
        s = summary(call)
        terms, batched = [], False
        for key, g in (*s.arrays.items(), *s.numbers.items()):
            i = call.position(key)
            dx = _ZERO if i is None or i + 1 >= len(tangents) else unthunk(tangents[i + 1])
            if isinstance(dx, AbstractZero):
                continue
            x = args[i]
            batched = is_batched(x, dx)
            if key in s.numbers:
                terms.append(g * (np.reshape(dx, (-1,) + (1,) * np.ndim(g)) if batched else dx))
            else:
                dx = align(x, tangent_array(x, dx), np.ndim(g))
                terms.append(np.sum(g * dx, axis=shift(s.axes, batched), keepdims=True))
        if not terms:
            return s.result, _ZERO
        dy = sum(terms[1:], terms[0])
        if not s.keepdims and s.axes:
            dy = np.squeeze(dy, axis=shift(s.axes, batched))
        return s.result, s.spread(match_output(s.y, dy))

    rrule_summary.__qualname__ = f"rrule_{name}"
    frule_summary.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(rrule_summary)
    frule.register(f, batched=True)(frule_summary)


# ----- moments -----------------------------------------------------------------------------


def _data(call: _Call, name: str = "a"):
    """The data argument as an array, its reduced axes (of scipy's ``axis``) and their length n."""
    a = array_or_active(call[name])
    axes = axes_of(call["axis"], np.ndim(a))
    return a, axes, size_along(np.shape(a), axes)


def _moment(call: _Call) -> _Summary:
    # mean(d^k), d = a - center (the mean by default); ∂/∂center = -k d^{k-1} / n, summed over the slice
    a, axes, n = _data(call)
    k, center = call["order"], call["center"]
    if np.ndim(k):
        raise option_refused(st.moment, call.args, "an array of orders: call moment once for each order")
    if center is not None:
        if np.ndim(center) and axes != (np.ndim(a) - 1,):
            reason = "an array center= with axis other than the last, which SciPy moves last first: move it so"
            raise option_refused(st.moment, call.args, reason)
        g = k * (a - array_or_active(center)) ** (k - 1) / n if k else np.zeros(np.shape(a))
        return _Summary(call.value(), axes, call["keepdims"], {"a": g, "center": -g})
    d = a - _mean(a, axes)
    g = _moment_gradient(d, k, axes, n) if k > 1 else np.zeros(np.shape(a))  # (orders 0 and 1: constants)
    return _Summary(call.value(), axes, call["keepdims"], {"a": g})


def _skew(call: _Call) -> _Summary:
    # g1 = m3 / m2^{3/2}; unbiased: g1 sqrt(n (n - 1)) / (n - 2) where n > 2 (scipy's documented G1)
    a, axes, n = _data(call)
    d = a - _mean(a, axes)
    m2, m3 = _mean(d * d, axes), _mean(d**3, axes)
    g = (_moment_gradient(d, 3, axes, n) - 1.5 * m3 / m2 * _moment_gradient(d, 2, axes, n)) / m2**1.5
    if not call["bias"] and n > 2:
        g = g * (np.sqrt((n - 1.0) * n) / (n - 2.0))
    return _Summary(call.value(), axes, call["keepdims"], {"a": g})


def _kurtosis(call: _Call) -> _Summary:
    # g2 = m4 / m2^2 (- 3 for Fisher's); unbiased: ((n^2 - 1) g2 - 3 (n - 1)^2) / ((n - 2)(n - 3)) + 3 where n > 3
    a, axes, n = _data(call)
    d = a - _mean(a, axes)
    m2, m4 = _mean(d * d, axes), _mean(d**4, axes)
    g = (_moment_gradient(d, 4, axes, n) - 2 * m4 / m2 * _moment_gradient(d, 2, axes, n)) / (m2 * m2)
    if not call["bias"] and n > 3:
        g = g * ((n * n - 1.0) / ((n - 2.0) * (n - 3.0)))
    return _Summary(call.value(), axes, call["keepdims"], {"a": g})


def _std_gradient(a, axes, n, ddof):
    """``(std, ∂std/∂a)`` with ``ddof``: ``d / ((n - ddof) std)``."""
    d = a - _mean(a, axes)
    s = np.sqrt(_sum(d * d, axes) / (n - ddof))
    return s, d / ((n - ddof) * s)


def _sem(call: _Call) -> _Summary:
    a, axes, n = _data(call)
    _, g = _std_gradient(a, axes, n, call["ddof"])
    return _Summary(call.value(), axes, call["keepdims"], {"a": g / np.sqrt(n)})


def _variation(call: _Call) -> _Summary:
    # std / mean
    a, axes, n = _data(call)
    s, g = _std_gradient(a, axes, n, call["ddof"])
    m = _mean(a, axes)
    return _Summary(call.value(), axes, call["keepdims"], {"a": g / m - s / (m * m * n)})


# ----- means -------------------------------------------------------------------------------


def _weighted(call: _Call):
    """``(a, w, axes, W)``: the data and the weights (ones without them) broadcast together, the
    reduced axes and the weights' sum over them."""
    a, w = array_or_active(call["a"]), call["weights"]
    w = np.ones(np.shape(a)) if w is None else array_or_active(w)
    shape = np.broadcast_shapes(np.shape(a), np.shape(w))
    a, w = a + np.zeros(shape), w + np.zeros(shape)
    axes = axes_of(call["axis"], len(shape))
    return a, w, axes, _sum(w, axes)


def _log_mean_gradients(a, w, axes, W, y):
    """The gradients of the weighted geometric mean ``y = exp(sum(w log a) / W)`` in ``a`` and ``w``."""
    return {"a": y * w / (a * W), "weights": y * (np.log(a) - np.log(y)) / W}


def _gmean(call: _Call) -> _Summary:
    a, w, axes, W = _weighted(call)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.exp(_sum(w * np.log(a), axes) / W)
        return _Summary(call.value(), axes, call["keepdims"], _log_mean_gradients(a, w, axes, W, y))


def _hmean(call: _Call) -> _Summary:
    # y = W / sum(w / a): ∂y/∂a = y^2 w / (W a^2), ∂y/∂w = y (1 - y / a) / W
    a, w, axes, W = _weighted(call)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = W / _sum(w / a, axes)
        gradients = {"a": y * y * w / (W * a * a), "weights": y * (1 - y / a) / W}
    return _Summary(call.value(), axes, call["keepdims"], gradients)


def _pmean(call: _Call) -> _Summary:
    # y = M^{1/p}, M = sum(w a^p) / W; at p = 0 (the geometric mean), ∂y/∂p = y var_w(log a) / 2
    a, w, axes, W = _weighted(call)
    p = call["p"]
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            y = np.exp(_sum(w * np.log(a), axes) / W)
            gradients = _log_mean_gradients(a, w, axes, W, y)
            log_mean = np.log(y)
            dp = y * (_sum(w * np.log(a) ** 2, axes) / W - log_mean * log_mean) / 2
        else:
            ap = a**p
            M = _sum(w * ap, axes) / W
            y = M ** (1 / p)
            gradients = {"a": y / M * w * a ** (p - 1) / W, "weights": y / (p * M) * (ap - M) / W}
            dp = y * (_sum(w * ap * np.log(a), axes) / (W * M * p) - np.log(M) / (p * p))
    return _Summary(call.value(), axes, call["keepdims"], gradients, {"p": dp})


def _ranks(a, axes):
    """Each entry's rank within its slice along ``axes`` (ties ordered as they stand)."""
    moved = np.moveaxis(a, axes, tuple(range(-len(axes), 0)))
    flat = np.reshape(moved, np.shape(moved)[: np.ndim(a) - len(axes)] + (-1,))
    ranks = np.argsort(np.argsort(flat, axis=-1, kind="stable"), axis=-1, kind="stable")
    return np.moveaxis(np.reshape(ranks, np.shape(moved)), tuple(range(-len(axes), 0)), axes)


def _trim_mean(call: _Call) -> _Summary:
    # the mean of the entries ranked in [cut, n - cut) of each slice, cut = int(proportiontocut n) (ties
    # ordered as they stand: each order statistic's derivative is that of the entry it picks)
    a = np.asarray(stood_for(call["a"]))
    axes = axes_of(call["axis"], np.ndim(a))
    n = size_along(np.shape(a), axes)
    cut = int(call["proportiontocut"] * n)
    y = call.value()  # (scipy raises where 2 cut > n)
    ranks = _ranks(a, axes)
    gradients = {"a": ((ranks >= cut) & (ranks < n - cut)) / (n - 2 * cut)}
    # (constant in the proportion between the jumps of cut: a zero derivative, as spearmanr's)
    flat = np.zeros([1 if i in axes else size for i, size in enumerate(np.shape(a))])
    return _Summary(y, axes, call["keepdims"], gradients, {"proportiontocut": flat})


def _entropy(call: _Call) -> _Summary:
    # p = pk / S_p: H = -sum(p log p), ∂H/∂pk = -(log p + H) / S_p; with q = qk / S_q,
    # D = sum(p log(p / q)), ∂D/∂pk = (log(p / q) - D) / S_p, ∂D/∂qk = (1 - p / q) / S_q; divided by log(base)
    pk, qk, base = array_or_active(call["pk"]), call["qk"], call["base"]
    if qk is not None:
        qk = array_or_active(qk)
        shape = np.broadcast_shapes(np.shape(pk), np.shape(qk))
        pk, qk = pk + np.zeros(shape), qk + np.zeros(shape)
    axes = axes_of(call["axis"], np.ndim(pk))
    S = _sum(pk, axes)
    p = pk / S
    log_base = 1.0 if base is None else np.log(base)
    with np.errstate(divide="ignore", invalid="ignore"):
        if qk is None:
            H = _sum(sc.entr(p), axes)
            gradients = {"pk": -(np.log(p) + H) / (S * log_base)}
        else:
            T = _sum(qk, axes)
            q = qk / T
            H = _sum(sc.rel_entr(p, q), axes)
            gradients = {"pk": (np.log(p / q) - H) / (S * log_base), "qk": (1 - p / q) / (T * log_base)}
    numbers = {} if base is None else {"base": -H / (log_base * log_base * base)}
    return _Summary(call.value(), axes, call["keepdims"], gradients, numbers)


def _pearsonr(call: _Call) -> _Summary:
    # r = sxy / sqrt(sxx syy) of the centred samples: ∂r/∂x = yc / sqrt(sxx syy) - r xc / sxx, and in y alike.
    # The p-value is a function of r: r has the beta distribution of shapes n/2 - 1 on [-1, 1] (scipy's
    # documented null distribution), of density (1 - r^2)^{n/2 - 2} / (2^{n-3} B(n/2 - 1, n/2 - 1)).
    if call["method"] is not None:
        raise option_refused(st.pearsonr, call.args, "method=: the rule differentiates the exact (default) p-value")
    x, y = array_or_active(call["x"]), array_or_active(call["y"])
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    x, y = x + np.zeros(shape), y + np.zeros(shape)
    axes = axes_of(call["axis"], len(shape))
    n = size_along(shape, axes)
    xc, yc = x - _mean(x, axes), y - _mean(y, axes)
    sxx, syy = _sum(xc * xc, axes), _sum(yc * yc, axes)
    root = np.sqrt(sxx * syy)
    rk = _sum(xc * yc, axes) / root
    result = call.value()
    a = n / 2 - 1
    r = np.reshape(rk, np.shape(result.statistic))
    with np.errstate(divide="ignore", invalid="ignore"):
        # (two points: r is ±1 and the p-value 1, constants)
        density = np.exp((a - 1) * np.log1p(-r * r) - (2 * a - 1) * np.log(2) - sc.betaln(a, a)) if n > 2 else 0 * r
    slope = {"two-sided": -2 * np.sign(r) * density, "less": density, "greater": -density}[call["alternative"]]

    where = at_user()

    def gather(dresult):
        dresult = unthunk(dresult)
        dr, dp = parts(dresult, result._fields)
        for key, d in dresult.items() if isinstance(dresult, Tangent) and isinstance(dresult.backing, dict) else ():
            if key == "correlation":  # (SciPy's alias of the statistic)
                dr = add(dr, unthunk(d))
            elif key not in result._fields:
                raise NoDerivativeError(f"scipy.stats.pearsonr{where}: its result's {key} is not differentiated")
        if isinstance(dp, AbstractZero):
            return dr
        return slope * dp if isinstance(dr, AbstractZero) else dr + slope * dp

    def spread(dr):
        return tangent_of(result, dr, slope * dr)

    gradients = {"x": yc / root - rk * xc / sxx, "y": xc / root - rk * yc / syy}
    summary = _Summary(result.statistic, axes, False, gradients)
    return summary.returning(result, gather, spread)


for _f, _summary in (
    (st.moment, _moment),
    (st.skew, _skew),
    (st.kurtosis, _kurtosis),
    (st.sem, _sem),
    (st.variation, _variation),
    (st.gmean, _gmean),
    (st.hmean, _hmean),
    (st.pmean, _pmean),
    (st.trim_mean, _trim_mean),
    (st.entropy, _entropy),
    (st.pearsonr, _pearsonr),
):
    _summary_rules(_f, _summary)


# ----- standardized scores -----------------------------------------------------------------


class _Standardized:
    """``zmap(scores, compare)``: ``z = (scores - m) / s`` with ``m`` and ``s`` the mean and the
    standard deviation (``ddof``) of ``compare`` along ``axis`` (all of it, raveled, for None).
    With ``zc`` the standardized ``compare``, ``dz = (dscores - dm - z ds) / s`` where ``dm`` is
    the mean of ``dcompare`` and ``ds = sum(zc dcompare) / (n - ddof)``."""

    def __init__(self, call: _Call, scores, compare):
        self.whole = call["axis"] is None
        self.compare_shape = np.shape(compare)
        compare = np.reshape(compare, (-1,)) if self.whole else compare
        self.axes = axes_of(0 if self.whole else call["axis"], np.ndim(compare))
        self.n, ddof = size_along(np.shape(compare), self.axes), call["ddof"]
        self.m = _mean(compare, self.axes)
        d = compare - self.m
        self.s = np.sqrt(_sum(d * d, self.axes) / (self.n - ddof))
        self.zc, self.z = d / self.s, (scores - self.m) / self.s
        self.dof = self.n - ddof
        self.y = call.value()

    def pushforward(self, scores, compare, dscores, dcompare):
        terms = []
        if not isinstance(dscores, AbstractZero):
            terms.append(align(scores, dscores, np.ndim(self.z)))
        if not isinstance(dcompare, AbstractZero):
            batched = is_batched(compare, dcompare)
            lead = np.shape(dcompare)[:1] if batched else ()
            dc = np.reshape(dcompare, lead + (-1,)) if self.whole else dcompare
            axes = shift(self.axes, batched)
            dm, ds = _mean(dc, axes), _sum(self.zc * dc, axes) / self.dof
            terms.append(-align(self.m, dm, np.ndim(self.z)) - self.z * align(self.s, ds, np.ndim(self.z)))
        if not terms:
            return _ZERO
        return match_output(self.y, sum(terms[1:], terms[0]) / self.s)

    def pullback(self, dz):
        """The cotangents of ``scores`` and of ``compare`` (of ``z``'s broadcast shape and of
        ``compare``'s, with any batch axis in front)."""
        lead = np.shape(dz)[:1] if carries_batch(self.y, dz) else ()
        unbroadcast = match_input_batch if lead else match_input
        u = dz / self.s
        kept = np.zeros(np.shape(self.m))
        dm, ds = -unbroadcast(kept, u), -unbroadcast(kept, u * self.z)
        dcompare = dm / self.n + ds * self.zc / self.dof
        return u, np.reshape(dcompare, lead + self.compare_shape)


def _standardized_rules(f, scores_name: str, compare_name: str | None) -> None:
    """The rules of ``zmap``, and of ``zscore`` (``zmap(a, a)``: ``compare_name`` None)."""
    name = f.__name__

    def arguments(call: _Call):
        scores = array_or_active(call[scores_name])
        return scores, scores if compare_name is None else array_or_active(call[compare_name])

    def rrule_standardized(*args, **kwargs):
        call = _Call(f, args, kwargs)
        scores, compare = arguments(call)
        z = _Standardized(call, scores, compare)

        def standardized_pullback(dz):
            dz = unthunk(dz)
            cotangents = [_NO] * len(args)
            positions = [call.position(n) for n in (scores_name, compare_name) if n and call.position(n) is not None]
            if isinstance(dz, AbstractZero):
                for i in positions:
                    cotangents[i] = dz
                return (_NO, *cotangents)
            match = match_input_batch if carries_batch(z.y, dz) else match_input
            dscores, dcompare = z.pullback(dz)
            if compare_name is None:
                cotangents[0] = match(args[0], dscores + dcompare) if positions else _NO
            else:
                for i, d in zip((call.position(scores_name), call.position(compare_name)), (dscores, dcompare)):
                    if i is not None:
                        cotangents[i] = match(args[i], d)
            return (_NO, *cotangents)

        standardized_pullback.__qualname__ = f"{name}_pullback"
        return z.y, standardized_pullback

    def frule_standardized(tangents, *args, **kwargs):
        call = _Call(f, args, kwargs)
        scores, compare = arguments(call)
        z = _Standardized(call, scores, compare)
        dscores = tangent_array(args[0], unthunk(tangents[1])) if call.position(scores_name) == 0 else _ZERO
        if compare_name is None:
            return z.y, z.pushforward(scores, compare, dscores, dscores)
        i = call.position(compare_name)
        dcompare = _ZERO if i is None else tangent_array(args[i], unthunk(tangents[i + 1]))
        return z.y, z.pushforward(scores, compare, dscores, dcompare)

    rrule_standardized.__qualname__ = f"rrule_{name}"
    frule_standardized.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(rrule_standardized)
    frule.register(f, batched=True)(frule_standardized)


_standardized_rules(st.zscore, "a", None)
_standardized_rules(st.zmap, "scores", "compare")


# ----- order statistics: iqr and median_abs_deviation, through NumPy's percentile and median -------


def _scale(call: _Call):
    """``scale`` as a number (``'normal'``: the normal distribution's constant), and its position
    among the arguments when it is a number given by position (it then gets a cotangent)."""
    scale = call["scale"]
    if isinstance(scale, str):
        if scale.lower() != "normal":
            raise ValueError(f"{scale} is not a valid scale value.")
        return _NORMAL_SCALE[call.f], None
    return scale, call.position("scale")


def _ruled(f, name: str):
    """``(y, pullback)`` of ``f(*args, **kwargs)`` by its rule; a callable without one is refused."""

    def run(*args, **kwargs):
        out = rrule(f, *args, **kwargs)
        if out is None:
            reason = f"{name} differentiates it through its rule: register one, or pass a function that has one"
            raise NoRuleError(f, args, location=user_location(), reason=reason)
        return out

    return run


def _pushed(f, tangents: tuple, *args, **kwargs):
    out = frule(tangents, f, *args, **kwargs)
    if out is None:
        raise NoRuleError(f, args, location=user_location(), reason=f"{f.__name__} has no forward rule")
    return out


def _number_cotangent(x, y, dy, lead: tuple):
    """The cotangent of the number ``x`` that divides the output ``y``: ``-sum(y dy) / x``."""
    whole = tuple(range(len(lead), np.ndim(dy)))
    total = -np.sum(y * dy, axis=whole) / x
    return (match_input_batch if lead else match_input)(x, total)


def _iqr_setup(call: _Call):
    x = array_or_active(call["x"])
    options = {"axis": call["axis"], "method": call["interpolation"], "keepdims": call["keepdims"]}
    return x, array_or_active(call["rng"]), options


@rrule.register(st.iqr, batched=True)
def rrule_iqr(*args, **kwargs):
    """``(percentile(x, rng[1]) - percentile(x, rng[0])) / scale``, differentiated by NumPy's
    percentile's rule (in ``x`` and in ``rng``) and in a number ``scale``."""
    call = _Call(st.iqr, args, kwargs)
    x, rng, options = _iqr_setup(call)
    scale, scale_at = _scale(call)
    q, percentile_pullback = _ruled(np.percentile, "scipy.stats.iqr")(x, rng, **options)
    y = (q[1] - q[0]) / scale

    def iqr_pullback(dy):
        dy = unthunk(dy)
        cotangents = [_NO] * len(args)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, *cotangents[1:])
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        _, dx, drng = percentile_pullback(np.stack([-dy, dy], axis=len(lead)) / scale)[:3]
        cotangents[0] = (batch_to_input if lead else to_input)(call["x"], unthunk(dx))  # (a list's: Tangent[list])
        if call.position("rng") is not None:
            cotangents[call.position("rng")] = (batch_to_input if lead else to_input)(call["rng"], unthunk(drng))
        if scale_at is not None:
            cotangents[scale_at] = _number_cotangent(args[scale_at], y, dy, lead)
        return (_NO, *cotangents)

    return y, iqr_pullback


@frule.register(st.iqr, batched=True)
def frule_iqr(tangents, *args, **kwargs):
    call = _Call(st.iqr, args, kwargs)
    x, rng, options = _iqr_setup(call)
    scale, scale_at = _scale(call)
    rng_at = call.position("rng")
    drng = _ZERO if rng_at is None else tangent_array(call["rng"], unthunk(tangents[rng_at + 1]))
    dx = tangent_array(call["x"], unthunk(tangents[1]))
    q, dq = _pushed(np.percentile, (_NO, dx, drng), x, rng, **options)
    y = (q[1] - q[0]) / scale
    dq = unthunk(dq)
    terms = []
    if not isinstance(dq, AbstractZero):
        lead = np.ndim(dq) - np.ndim(q)
        terms.append((dq[:, 1] - dq[:, 0] if lead else dq[1] - dq[0]) / scale)
    dscale = _ZERO if scale_at is None else unthunk(tangents[scale_at + 1])
    if not isinstance(dscale, AbstractZero):
        terms.append(-y * (np.reshape(dscale, (-1,) + (1,) * np.ndim(y)) if np.ndim(dscale) else dscale) / scale)
    return y, (match_output(y, sum(terms[1:], terms[0])) if terms else _ZERO)


def _mad_setup(call: _Call):
    """The data, the reduced axes, the center function and the median's options."""
    x = array_or_active(call["x"])
    axes = axes_of(call["axis"], np.ndim(x))
    center = np.median if call["center"] is None else call["center"]
    return x, axes, center, {"axis": call["axis"], "keepdims": call["keepdims"]}


def _expanded(c, axis, axes: tuple, lead: tuple = ()):
    """The center ``c`` (one per slice) with the reduced axes restored, to broadcast against ``x``."""
    return c if axis is None and not lead else keep(c, shift(axes, bool(lead)), False)


@rrule.register(st.median_abs_deviation, batched=True)
def rrule_median_abs_deviation(*args, **kwargs):
    """``median(|x - c|) / scale`` with ``c = center(x)`` (the median by default): NumPy's median's
    rule, the sign of ``x - c``, and ``center``'s rule (which ``center`` must have)."""
    call = _Call(st.median_abs_deviation, args, kwargs)
    x, axes, center, options = _mad_setup(call)
    scale, scale_at = _scale(call)
    c, center_pullback = _ruled(center, "scipy.stats.median_abs_deviation")(x, axis=call["axis"])
    d = x - _expanded(c, call["axis"], axes)
    sign = np.sign(stood_for(d))
    m, median_pullback = _ruled(np.median, "scipy.stats.median_abs_deviation")(np.abs(d), **options)
    y = m / scale

    def median_abs_deviation_pullback(dy):
        dy = unthunk(dy)
        cotangents = [_NO] * len(args)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, *cotangents[1:])
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        dd = sign * unthunk(median_pullback(dy / scale)[1])
        dc = -np.reshape(np.sum(dd, axis=shift(axes, bool(lead))), lead + np.shape(c))
        dx = add(dd, unthunk(center_pullback(dc)[1]))
        cotangents[0] = (batch_to_input if lead else to_input)(call["x"], dx)  # (a list's: Tangent[list])
        if scale_at is not None:
            cotangents[scale_at] = _number_cotangent(args[scale_at], y, dy, lead)
        return (_NO, *cotangents)

    return y, median_abs_deviation_pullback


@frule.register(st.median_abs_deviation, batched=True)
def frule_median_abs_deviation(tangents, *args, **kwargs):
    call = _Call(st.median_abs_deviation, args, kwargs)
    x, axes, center, options = _mad_setup(call)
    scale, scale_at = _scale(call)
    dx = tangent_array(call["x"], unthunk(tangents[1]))
    c, dc = _pushed(center, (_NO, dx), x, axis=call["axis"])
    d = x - _expanded(c, call["axis"], axes)
    dd = _ZERO
    if not isinstance(dx, AbstractZero):
        lead = np.shape(dx)[:1] if is_batched(x, dx) else ()
        dc = unthunk(dc)
        dd = np.sign(d) * (dx - _expanded(dc, call["axis"], axes, lead))
    m, dm = _pushed(np.median, (_NO, dd), np.abs(d), **options)
    y = m / scale
    terms = [] if isinstance(unthunk(dm), AbstractZero) else [unthunk(dm) / scale]
    dscale = _ZERO if scale_at is None else unthunk(tangents[scale_at + 1])
    if not isinstance(dscale, AbstractZero):
        terms.append(-y * (np.reshape(dscale, (-1,) + (1,) * np.ndim(y)) if np.ndim(dscale) else dscale) / scale)
    return y, (match_output(y, sum(terms[1:], terms[0])) if terms else _ZERO)


# ----- rank correlation --------------------------------------------------------------------


@rrule.register(st.spearmanr, batched=True)
def rrule_spearmanr(*args, **kwargs):
    """Spearman's rho is Pearson's r of the data's ranks, which stay the same while no two values
    cross: rho and its p-value are piecewise constant in the data, and their derivative is zero
    wherever it exists (no ties). So the data get zero cotangents; where two values tie, rho
    jumps, and the zero is the derivative of either side. (For a correlation that moves with the
    data, differentiate ``pearsonr``.)"""
    call = _Call(st.spearmanr, args, kwargs)
    y = st.spearmanr(*(stood_for(a) for a in args), **kwargs)
    data = [i for i in (call.position("a"), call.position("b")) if i is not None]
    cotangents = tuple(_ZERO if i in data else _NO for i in range(len(args)))

    def spearmanr_pullback(dy):
        return (_NO, *cotangents)

    return y, spearmanr_pullback


@frule.register(st.spearmanr, batched=True)
def frule_spearmanr(tangents, *args, **kwargs):
    _Call(st.spearmanr, args, kwargs)
    return st.spearmanr(*(stood_for(a) for a in args), **kwargs), _ZERO
