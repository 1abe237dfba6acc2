"""Rules for ``scipy.signal``'s N-dimensional convolutions: ``convolve``, ``correlate``,
``fftconvolve`` and ``oaconvolve`` (``axes=None`` only), real and complex, in modes ``"full"``,
``"same"`` and ``"valid"``; ``convolve2d`` and ``correlate2d`` in each boundary (``fillvalue``
differentiated: the extension of ``in1`` by ``np.pad``, see ``_Convolution2d``); and its
recurrences: ``lfilter`` (in ``b``, ``a``, ``x`` and ``zi``), ``sosfilt``, ``filtfilt`` and
``sosfiltfilt`` (``method='pad'``), ``lfilter_zi`` and ``sosfilt_zi``; ``savgol_filter`` in every
mode (in ``x``, ``delta`` and ``cval``, see ``_Savgol``); ``detrend`` (its own adjoint: an orthogonal
projection) and ``hilbert`` (``ifft(h fft(x, N))``, complex).

Each output is a window of the full convolution ``z[n] = sum_k a[k] b[n - k]`` (``"same"``: the
``a``-sized centre, starting at ``(len(b) - 1) // 2`` along each axis; ``"valid"``: starting at
``min(len(a), len(b)) - 1``), which is bilinear. With the cotangent ``ȳ`` placed in the full
convolution (zeros elsewhere), ``ā[k] = sum_n ȳ[n] conj(b[n - k])``: the correlation of ``ȳ``
with ``b``, computed as the ``"valid"`` convolution with ``b`` reversed along every axis and
conjugated; ``b̄`` likewise with ``a``. ``correlate(a, b)`` is ``convolve(a, w)`` for ``w = b``
reversed and conjugated (each its own adjoint), so its rules are the convolution's with ``b``'s
(co)tangent taken through that map. The pushforward is ``conv(ȧ, b) + conv(a, ḃ)`` in the same mode.

The pullbacks convolve with the function being differentiated (``fftconvolve``'s by FFT), through
this module's rules when an engine's values reach them, so second derivatives work.

``lfilter`` is the filter ``1/A`` of ``B x`` plus the initial states: linear in ``x``, ``zi`` and
``b``; its adjoints are the filter run backwards in time, and the derivatives in ``b`` and ``a``
the filter of ``x`` and of ``-y``, delayed (``_Recurrence``). ``sosfilt`` is a cascade of them,
``filtfilt`` and ``sosfiltfilt`` compose them with the extension of the input at its edges and the
step response's states (``lfilter_zi``: a linear system in ``b`` and ``a``); their rules are the
compositions of these rules, every filter they run going through ``lfilter``'s rule when an
engine's values reach it. ``filtfilt(method='gust')`` is refused.

>>> import numpy as np, scipy.signal as ss, chainrules as cr
>>> y, back = cr.rrule(ss.convolve, np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0]), "valid")
>>> y, [cr.unthunk(d) for d in back(np.array([1.0, 1.0]))[1:3]]
(array([1., 1.]), [array([-1.,  0.,  1.]), array([5., 3.])])
"""

from __future__ import annotations

import inspect

import numpy as np
import scipy.ndimage as ndi
import scipy.signal as ss

from ...core import (
    AbstractZero,
    NoRuleError,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    call_by_engine,
    carries_batch,
    frule,
    match_input_batch,
    rrule,
    unbroadcast,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ...core.errors import option_refused
from ...core.structures import item_tangents
from ..numpy._arrays import (
    array_or_active,
    batch_to_input,
    cotangent_array,
    is_batched,
    normalize_axis,
    tangent_array,
    to_input,
)
from ..numpy._util import match_output
from ._lapack import through_rules

_NO = NoTangent()
_ZERO = ZeroTangent()
_NAMES = {f: f.__name__ for f in (ss.convolve, ss.correlate, ss.fftconvolve, ss.oaconvolve)}
_BY_FFT = (ss.fftconvolve, ss.oaconvolve)  # (their third option is axes)


def _by_rule(f, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)``, an engine's values run by their engine through this module's rule."""
    return call_by_engine(f, args, kwargs, f"scipy.signal.{_NAMES.get(f, f.__name__)}")


def _reversed_conj(t):
    """``conj(t)`` reversed along every axis (its own adjoint)."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    return np.flip(np.conj(t)) if np.ndim(t) else np.conj(t)


class _Convolution:
    """What the rules of one call need: its mode, the convolution that computes (co)tangents (with
    the call's ``method``, or by FFT), and whether it is a correlation."""

    def __init__(self, f, inputs: tuple, args: tuple, kwargs: dict):
        name = _NAMES[f]
        third = "axes" if f in _BY_FFT else "method"
        o = {"mode": "full", third: None if f in _BY_FFT else "auto"}
        o.update(zip(("mode", third), args), **kwargs)
        if f in _BY_FFT and o["axes"] is not None:
            reason = f"axes={o['axes']!r}: the rule differentiates convolutions over all axes (axes=None) only"
            raise NoRuleError(f, (*inputs, *args), location=user_location(), reason=reason)
        self.name, self.mode, self.correlation = name, o["mode"], f is ss.correlate
        if f in _BY_FFT:
            self.conv, self.conv_kwargs = f, {}
        else:
            self.conv, self.conv_kwargs = ss.convolve, {"method": o[third]}

    def __call__(self, a, b, mode: str):
        return _by_rule(self.conv, (a, b, mode), self.conv_kwargs)

    def pad_widths(self, s1: tuple, s2: tuple) -> list:
        """Where the output sits in the full convolution, as ``np.pad`` widths that place it there."""
        widths = []
        for n1, n2 in zip(s1, s2, strict=True):
            total = n1 + n2 - 1
            if self.mode == "same":
                start, size = (n2 - 1) // 2, n1
            elif self.mode == "valid":
                start, size = min(n1, n2) - 1, abs(n1 - n2) + 1
            else:
                start, size = 0, total
            widths.append((start, total - start - size))
        return widths


def _rrule_convolution(f, in1, in2, args: tuple, kwargs: dict):
    spec = _Convolution(f, (in1, in2), args, kwargs)
    y = _by_rule(f, (in1, in2, *args), kwargs)
    kernel = _reversed_conj(in2) if spec.correlation else in2  # correlate(a, b) = convolve(a, kernel)
    widths = spec.pad_widths(np.shape(in1), np.shape(in2))
    options = (_NO,) * len(args)

    def convolution_pullback(dy):
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, dy, *options)
        # dy placed in the full convolution (padded: a dual cotangent takes no writes)
        full = np.pad(dy, widths) if any(w != (0, 0) for w in widths) else dy
        d1 = Thunk(lambda: to_input(in1, spec(full, _reversed_conj(kernel), "valid")))
        if spec.correlation:
            d2 = Thunk(lambda: to_input(in2, _reversed_conj(spec(full, _reversed_conj(in1), "valid"))))
        else:
            d2 = Thunk(lambda: to_input(in2, spec(full, _reversed_conj(in1), "valid")))
        return (_NO, d1, d2, *options)

    convolution_pullback.__name__ = f"{spec.name}_pullback"
    convolution_pullback.__qualname__ = f"{spec.name}_pullback"
    return y, convolution_pullback


def _frule_convolution(f, tangents: tuple, in1, in2, args: tuple, kwargs: dict):
    spec = _Convolution(f, (in1, in2), args, kwargs)
    y = _by_rule(f, (in1, in2, *args), kwargs)
    d1, d2 = unthunk(tangents[1]), unthunk(tangents[2])
    kernel = _reversed_conj(in2) if spec.correlation else in2
    dkernel = _reversed_conj(d2) if spec.correlation else d2
    terms = []
    if not isinstance(d1, AbstractZero):
        terms.append(spec(d1, kernel, spec.mode))
    if not isinstance(dkernel, AbstractZero):
        terms.append(spec(in1, dkernel, spec.mode))
    if not terms:
        return y, _ZERO
    return y, match_output(y, sum(terms[1:], terms[0]))


@rrule.register(ss.convolve)
def rrule_convolve(in1, in2, *args, **kwargs):
    """``ā`` is ``ȳ`` (placed in the full convolution) correlated with ``in2``, ``b̄`` with ``in1``."""
    return _rrule_convolution(ss.convolve, in1, in2, args, kwargs)


@frule.register(ss.convolve)
def frule_convolve(tangents, in1, in2, *args, **kwargs):
    return _frule_convolution(ss.convolve, tangents, in1, in2, args, kwargs)


@rrule.register(ss.correlate)
def rrule_correlate(in1, in2, *args, **kwargs):
    """The convolution of ``in1`` with ``in2`` reversed and conjugated: its rule, with ``in2``'s
    cotangent taken back through the reversal and the conjugation."""
    return _rrule_convolution(ss.correlate, in1, in2, args, kwargs)


@frule.register(ss.correlate)
def frule_correlate(tangents, in1, in2, *args, **kwargs):
    return _frule_convolution(ss.correlate, tangents, in1, in2, args, kwargs)


@rrule.register(ss.fftconvolve)
def rrule_fftconvolve(in1, in2, *args, **kwargs):
    """``convolve``'s rule, its correlations computed by FFT too; ``axes`` other than None is refused."""
    return _rrule_convolution(ss.fftconvolve, in1, in2, args, kwargs)


@frule.register(ss.fftconvolve)
def frule_fftconvolve(tangents, in1, in2, *args, **kwargs):
    return _frule_convolution(ss.fftconvolve, tangents, in1, in2, args, kwargs)


@rrule.register(ss.oaconvolve)
def rrule_oaconvolve(in1, in2, *args, **kwargs):
    """``fftconvolve``'s rule, its correlations computed by overlap-add."""
    return _rrule_convolution(ss.oaconvolve, in1, in2, args, kwargs)


@frule.register(ss.oaconvolve)
def frule_oaconvolve(tangents, in1, in2, *args, **kwargs):
    return _frule_convolution(ss.oaconvolve, tangents, in1, in2, args, kwargs)


# ----- convolve2d and correlate2d: with the input extended by a boundary ----------------------------

#: convolve2d's boundaries as the ``np.pad`` modes that extend the input the same way
_BOUNDARIES = {"fill": "constant", "wrap": "wrap", "symm": "symmetric"}


class _Convolution2d:
    """One call of ``convolve2d`` or ``correlate2d``: outside mode 'valid', the 'valid' convolution
    (correlation) of ``in1`` extended by ``len(in2) - 1`` entries each side by the boundary (padded
    with ``fillvalue``, wrapped or reflected: ``np.pad``), cut to the mode's window (mode 'same':
    starting at ``(len(in2) - 1) // 2``, a correlation's at ``len(in2) // 2``); in mode 'valid',
    ``convolve``'s or ``correlate``'s, where ``in2`` larger makes SciPy's correlation
    ``correlate(in2, in1)`` reversed. The pullback composes the rules of ``np.pad`` and of these."""

    def __init__(self, f, in1, in2, args: tuple, kwargs: dict):
        o = {"mode": "full", "boundary": "fill", "fillvalue": 0}
        o.update(zip(("mode", "boundary", "fillvalue"), args), **kwargs)
        self.in1, self.in2, self.o = in1, in2, o
        self.core = ss.correlate if f is ss.correlate2d else ss.convolve
        self.y = call_by_engine(f, (in1, in2, *args), kwargs, f"scipy.signal.{f.__name__}")  # (SciPy's checks)
        s1, s2 = np.shape(in1), np.shape(in2)
        self.swapped = o["mode"] == "valid" and self.core is ss.correlate and any(a < b for a, b in zip(s1, s2))
        if o["mode"] == "same":
            shift = (lambda n: n // 2) if self.core is ss.correlate else (lambda n: (n - 1) // 2)
            self.window = [(shift(n2), n1) for n1, n2 in zip(s1, s2)]
        else:
            self.window = None

    def pull(self, dy):
        """``(in1̄, in2̄, fillvaluē)`` (the last a zero but for a fill boundary)."""
        if self.o["mode"] == "valid":
            if self.swapped:
                d2, d1 = rrule(ss.correlate, self.in2, self.in1, "valid")[1](np.flip(dy))[1:3]
            else:
                d1, d2 = rrule(self.core, self.in1, self.in2, "valid")[1](dy)[1:3]
            return d1, d2, _ZERO
        mode = _BOUNDARIES[self.o["boundary"]]
        widths = [(n - 1, n - 1) for n in np.shape(self.in2)]
        filled = (self.o["fillvalue"],) if mode == "constant" else ()
        padded, pad_back = rrule(np.pad, self.in1, widths, mode, *filled)
        full, conv_back = rrule(self.core, padded, self.in2, "valid")
        if self.window is not None:
            spans = [(start, total - start - n) for (start, n), total in zip(self.window, np.shape(full))]
            dy = np.pad(dy, spans)
        dp, d2 = conv_back(dy)[1:3]
        d_pad = pad_back(dp)
        return d_pad[1], d2, (d_pad[4] if filled else _ZERO)


def _rrule_2d(f, in1, in2, args: tuple, kwargs: dict):
    call = _Convolution2d(f, in1, in2, args, kwargs)

    def convolution2d_pullback(dy):
        dy = cotangent_array(call.y, dy)
        if _zero(dy):
            return (_NO, dy, dy, *(dy if i == 2 else _NO for i in range(len(args))))
        parts = Thunk(lambda: call.pull(dy))
        # (in1, in2, then mode, boundary and fillvalue, whose cotangent is the third part)
        where = {0: 0, 1: 1, 4: 2}
        cotangents = [
            Thunk(lambda i=where[p], v=v: to_input(v, unthunk(unthunk(parts)[i]))) if p in where else _NO
            for p, v in enumerate((in1, in2, *args))
        ]
        return (_NO, *cotangents)

    convolution2d_pullback.__name__ = convolution2d_pullback.__qualname__ = f"{f.__name__}_pullback"
    return call.y, convolution2d_pullback


def _frule_2d(f, tangents: tuple, in1, in2, args: tuple, kwargs: dict):
    """``f(ḋ1, in2, fillvalue=ḟ) + f(in1, ḋ2)``: bilinear in the extended ``in1`` and ``in2``, the
    extension linear in ``in1`` and ``fillvalue`` together."""
    call = _Convolution2d(f, in1, in2, args, kwargs)
    d1, d2 = unthunk(tangents[1]), unthunk(tangents[2])
    dfill = unthunk(tangents[5]) if len(tangents) > 5 else _ZERO
    settings = {k: v for k, v in call.o.items() if k != "fillvalue"}
    terms = []
    if not (_zero(d1) and _zero(dfill)):
        d1 = np.zeros(np.shape(in1), np.result_type(call.y)) if _zero(d1) else tangent_array(in1, d1)
        fill = {"fillvalue": 0 if _zero(dfill) else dfill}
        terms.append(call_by_engine(f, (d1, in2), {**settings, **fill}, f"scipy.signal.{f.__name__}"))
    if not _zero(d2):
        terms.append(call_by_engine(f, (in1, tangent_array(in2, d2)), call.o, f"scipy.signal.{f.__name__}"))
    return call.y, (match_output(call.y, _plus(*terms)) if terms else _ZERO)


@rrule.register(ss.convolve2d)
def rrule_convolve2d(in1, in2, *args, **kwargs):
    """The composition of ``np.pad``'s rule (the boundary's extension) and ``convolve``'s."""
    return _rrule_2d(ss.convolve2d, in1, in2, args, kwargs)


@frule.register(ss.convolve2d)
def frule_convolve2d(tangents, in1, in2, *args, **kwargs):
    return _frule_2d(ss.convolve2d, tangents, in1, in2, args, kwargs)


@rrule.register(ss.correlate2d)
def rrule_correlate2d(in1, in2, *args, **kwargs):
    """The composition of ``np.pad``'s rule (the boundary's extension) and ``correlate``'s."""
    return _rrule_2d(ss.correlate2d, in1, in2, args, kwargs)


@frule.register(ss.correlate2d)
def frule_correlate2d(tangents, in1, in2, *args, **kwargs):
    return _frule_2d(ss.correlate2d, tangents, in1, in2, args, kwargs)


# ----- lfilter: a linear recurrence --------------------------------------------------------------


def _lfilter(b, a, x, axis: int, zi=None):
    """``lfilter(b, a, x, axis, zi)``, an engine's values run by their engine through its rule."""
    args = (b, a, x, axis) if zi is None else (b, a, x, axis, zi)
    return call_by_engine(ss.lfilter, args, {}, "scipy.signal.lfilter")


def _along(v, axis: int, start: int | None = None, stop: int | None = None):
    """``v[start:stop]`` along ``axis``."""
    index = [slice(None)] * np.ndim(v)
    index[axis] = slice(start, stop)
    return v[tuple(index)]


def _fir(h, v, axis: int):
    """``sum_j h[j] v[n - j]`` along ``axis``, ``v`` zero before its start (a causal FIR filter)."""
    return _lfilter(h, np.ones(1), v, axis)


def _backwards(filter_, v, axis: int):
    """``filter_`` run backwards in time: on ``v`` reversed along ``axis``, its output reversed back."""
    return np.flip(filter_(np.flip(v, axis)), axis)


def _lags(u, v, count: int, axis: int):
    """``[sum_n conj(u[n]) v[n + j] for j < count]``, each summed over every axis: a cotangent of
    coefficients that ``v`` reads ``u`` through, delayed by ``j``."""
    n, length = np.shape(u)[axis], np.shape(v)[axis]
    sums = []
    for j in range(count):
        m = max(0, min(n, length - j))
        sums.append(np.sum(np.conj(_along(u, axis, 0, m)) * _along(v, axis, j, j + m)))
    return np.stack(sums)


def _zero(t) -> bool:
    return isinstance(t, AbstractZero)


def _vector(c):
    """Filter coefficients (or their tangent) as an array, a number as one of length 1 (as SciPy
    takes it)."""
    if _zero(c):
        return c
    c = array_or_active(c)
    return np.reshape(c, 1) if np.ndim(c) == 0 else c


class _Recurrence:
    """One call of ``lfilter(b, a, x, axis, zi)``: ``a[0] y[n] = sum_j b[j] x[n-j] - sum_{j>0}
    a[j] y[n-j] + a[0] c[n]``, ``c`` the initial conditions ``zi`` followed by zeros (they are the
    normalized filter's states: zi[n] adds to y[n]). Run ``K = max(len(a), len(b)) - 1`` steps
    past the end on zeros (``x_e``, ``y_e``), its final states are ``zf[i] = sum_{j<=i} â[j]
    y_e[N+i-j]`` (``â = a / a[0]``, ``b̂ = b / a[0]``). So the output is the filter ``1/Â`` of ``u =
    B̂ x_e + c``, linear in ``x``, ``zi`` and ``b̂``, and the derivatives in ``b̂`` and ``â`` are
    that filter of ``x_e`` and of ``-y_e`` delayed, the adjoints the filters run backwards in time."""

    def __init__(self, b, a, x, axis: int, zi=None):
        b, a, x = _vector(b), _vector(a), array_or_active(x)  # (x a list: its pullback reads it along the axis)
        self.b, self.a, self.x, self.zi = b, a, x, zi
        self.axis = normalize_axis(axis, np.ndim(x))
        self.n, self.k = np.shape(x)[self.axis], max(np.size(a), np.size(b)) - 1
        self.bh, self.ah = b / a[0], a / a[0]
        if zi is None:
            self.y = self.out = _lfilter(b, a, x, self.axis)
            self.y_tail = None
        else:
            self.y, zf = self.out = _lfilter(b, a, x, self.axis, zi)
            # the output past the end: the filter run on from the final states over zeros
            zeros = np.zeros(np.shape(zf), np.result_type(self.y))
            self.y_tail = _lfilter(b, a, zeros, self.axis, zf)[0]

    def _extended(self, v):
        """``v`` followed by ``K`` zeros along the axis where the call has initial states."""
        if self.zi is None:
            return v
        widths = [(0, 0)] * np.ndim(v)
        widths[self.axis] = (0, self.k)
        return np.pad(v, widths)

    def _y_extended(self):
        return self.y if self.zi is None else np.concatenate([self.y, self.y_tail], axis=self.axis)

    def pull(self, dy, dzf):
        """``(b̄, ā, x̄, z̄i)`` from the cotangents of ``y`` and ``zf`` (zeros where either is)."""
        axis, ah, bh = self.axis, self.ah, self.bh
        if _zero(dy):
            dy = np.zeros(np.shape(self.y), np.result_type(self.y))
        w = dy
        if self.zi is not None:  # zf = Â over the tail (zero history): its adjoint runs backwards
            if _zero(dzf):
                tail = np.zeros(np.shape(self.y_tail), np.result_type(self.y_tail))
            else:
                tail = _backwards(lambda t: _fir(np.conj(ah), t, axis), dzf, axis)
            w = np.concatenate([dy, tail], axis=axis)
        u = _backwards(lambda t: _lfilter(np.ones(1), np.conj(ah), t, axis), w, axis)  # ū = (1/Â)^H w
        dx = _along(_backwards(lambda t: _fir(np.conj(bh), t, axis), u, axis), axis, 0, self.n)
        dzi = None if self.zi is None else _along(u, axis, 0, self.k)
        dbh = _lags(self._extended(self.x), u, np.size(self.b), axis)
        dah = -_lags(self._y_extended(), u, np.size(self.a), axis)
        if self.zi is not None and not _zero(dzf):
            dah = dah + _lags(self.y_tail, dzf, np.size(self.a), axis)
        return (*_normalization_pullback(self.a, bh, ah, dbh, dah), dx, dzi)

    def push(self, db, da, dx, dzi):
        """``(ẏ, żf)`` from the tangents of ``b``, ``a``, ``x`` and ``zi`` (``żf`` None without ``zi``)."""
        axis, terms, dah = self.axis, [], _ZERO
        db, da = _vector(db), _vector(da)
        if not (_zero(dx) and _zero(dzi)):
            dx = np.zeros(np.shape(self.x), np.result_type(self.y)) if _zero(dx) else dx
            if self.zi is None:
                terms.append(_lfilter(self.b, self.a, dx, axis))
            else:
                dzi = np.zeros(np.shape(self.zi), np.result_type(self.y)) if _zero(dzi) else dzi
                terms.append(_lfilter(self.b, self.a, self._extended(dx), axis, dzi)[0])
        if not (_zero(db) and _zero(da)):
            dbh, dah = _normalization_push(self.a, self.bh, self.ah, db, da)
            g = _fir(dbh, self._extended(self.x), axis)
            if not _zero(dah):
                g = g - _fir(dah, self._y_extended(), axis)
            terms.append(_lfilter(np.ones(1), self.ah, g, axis))
        if not terms:
            return _ZERO, (None if self.zi is None else _ZERO)
        dy_e = sum(terms[1:], terms[0])
        if self.zi is None:
            return dy_e, None
        dzf = _fir(self.ah, _along(dy_e, axis, self.n), axis)
        if not _zero(dah):
            dzf = dzf + _fir(dah, self.y_tail, axis)
        return _along(dy_e, axis, 0, self.n), dzf


def _output_tangents(out, d, with_states: bool):
    """The cotangents of ``y`` and ``zf`` (``zf``'s zero without states) from the output's ``d``."""
    d = unthunk(d)
    if not with_states:
        return cotangent_array(out, d), _ZERO
    if _zero(d):
        return d, d
    dy, dzf = (unthunk(t) for t in item_tangents(d, out))
    return cotangent_array(out[0], dy), cotangent_array(out[1], dzf)


def _normalization_pullback(a, bh, ah, dbh, dah):
    """``(b̄, ā)`` from the cotangents of ``b̂ = b / a[0]`` and ``â = a / a[0]`` (``â[0] = 1`` stays:
    its cotangent is ignored)."""
    a0 = np.conj(a[0])
    first = np.eye(np.size(a))[0]
    da0 = -(np.sum(np.conj(bh) * dbh) + np.sum(np.conj(ah[1:]) * dah[1:])) / a0
    return dbh / a0, (1 - first) * dah / a0 + first * da0


def _normalization_push(a, bh, ah, db, da):
    """The tangents of ``b̂ = b / a[0]`` and ``â = a / a[0]`` (``â``'s a zero where ``a``'s is)."""
    if _zero(da):
        return (np.zeros(np.shape(bh), np.result_type(bh)) if _zero(db) else db / a[0]), _ZERO
    da0 = da[0] / a[0]
    dbh = -bh * da0 if _zero(db) else db / a[0] - bh * da0
    return dbh, da / a[0] - ah * da0


# ----- initial states of a step response: lfilter_zi and sosfilt_zi ---------------------------------


class _StepStates:
    """``lfilter_zi(b, a)``: the states ``z`` of a filter at rest in its step response, the solution
    of ``M z = B`` with ``M = I - companion(â).T`` (the identity, plus ``â[1:]`` in the first column,
    less the ones above the diagonal) and ``B = b̂[1:] - â[1:] b̂[0]`` (``b̂``, ``â`` padded to one
    length ``n``). Differentiated: ``M ż = Ḃ - Ṁ z``, ``Ṁ z = â̇[1:] z[0]``; the adjoints solve with
    ``M^H``."""

    def __init__(self, b, a):
        b, a = _vector(b), _vector(a)
        if np.ndim(b) != 1 or np.ndim(a) != 1:
            ss.lfilter_zi(b, a)  # (SciPy's error)
        if isinstance(a, np.ndarray) and a[0] == 0:  # (SciPy drops leading zeros of a: a derivative would be lost)
            raise option_refused(ss.lfilter_zi, (b, a), "a[0] = 0: the rule differentiates filters with a[0] != 0")
        self.b, self.a, self.n = b, a, max(np.size(a), np.size(b))
        self.bh, self.ah = b / a[0], a / a[0]
        bp, ap = self._padded(self.bh), self._padded(self.ah)
        k = self.n - 1
        self.m = np.eye(k) + np.outer(ap[1:], np.eye(k)[0]) - np.eye(k, k=1)
        self.z = through_rules(np.linalg.solve, self.m, bp[1:] - ap[1:] * bp[0])
        self.bp0, self.ap = bp[0], ap

    def _padded(self, c):
        return np.pad(c, (0, self.n - np.size(c)))

    def pull(self, dz):
        lam = through_rules(np.linalg.solve, np.conj(np.swapaxes(self.m, 0, 1)), dz)
        dbh = np.concatenate([np.reshape(-np.sum(np.conj(self.ap[1:]) * lam), 1), lam])[: np.size(self.b)]
        dah = np.concatenate([np.zeros(1), -lam * np.conj(self.bp0 + self.z[0])])[: np.size(self.a)]
        return _normalization_pullback(self.a, self.bh, self.ah, dbh, dah)

    def push(self, db, da):
        dbh, dah = _normalization_push(self.a, self.bh, self.ah, _vector(db), _vector(da))
        dbp = self._padded(dbh)
        rhs = dbp[1:] - self.ap[1:] * dbp[0]
        if not _zero(dah):
            rhs = rhs - self._padded(dah)[1:] * (self.bp0 + self.z[0])
        return through_rules(np.linalg.solve, self.m, rhs)


class _CascadeStates:
    """``sosfilt_zi(sos)``: each section's ``lfilter_zi`` scaled by the step response's steady
    state before it, ``scale[s] = prod_{t<s} g[t]``, ``g[t] = sum(b_t) / sum(a_t)`` (a section's
    gain at zero frequency)."""

    def __init__(self, sos):
        sos = array_or_active(sos)
        if np.ndim(sos) != 2 or np.shape(sos)[1] != 6:
            raise ValueError("sos must be shape (n_sections, 6)")
        self.sos, self.sections, self.gains, self.scales = sos, [], [], []
        scale, rows = 1.0, []
        for s in range(np.shape(sos)[0]):
            b, a = sos[s, :3], sos[s, 3:]
            self.sections.append(_StepStates(b, a))
            self.scales.append(scale)
            rows.append(scale * self.sections[-1].z)
            self.gains.append(np.sum(b) / np.sum(a))
            scale = scale * self.gains[-1]
        self.z = np.stack(rows)

    def pull(self, dz):
        rows, dscale = [], 0.0
        for s in reversed(range(len(self.sections))):  # scale[s + 1] = scale[s] g[s]
            a = self.sos[s, 3:]
            dgain = dscale * np.conj(self.scales[s])
            dscale = dscale * np.conj(self.gains[s]) + np.sum(np.conj(self.sections[s].z) * dz[s])
            db, da = self.sections[s].pull(np.conj(self.scales[s]) * dz[s])
            sa = np.conj(np.sum(a))
            rows.append(np.concatenate([db + dgain / sa, da - dgain * np.conj(self.gains[s]) / sa]))
        return np.stack(rows[::-1])

    def push(self, dsos):
        rows, dscale = [], 0.0
        for s, section in enumerate(self.sections):
            a = self.sos[s, 3:]
            db, da = dsos[s, :3], dsos[s, 3:]
            rows.append(dscale * section.z + self.scales[s] * section.push(db, da))
            dgain = (np.sum(db) - self.gains[s] * np.sum(da)) / np.sum(a)
            dscale = dscale * self.gains[s] + self.scales[s] * dgain
        return np.stack(rows)


@rrule.register(ss.lfilter_zi)
def rrule_lfilter_zi(b, a):
    """``λ = M^{-H} z̄``: ``b̂̄[1:] = λ``, ``b̂̄[0] = -â[1:]^H λ``, ``â̄[1:] = -λ conj(b̂[0] + z[0])``."""
    states = _StepStates(b, a)

    def lfilter_zi_pullback(dz):
        dz = cotangent_array(states.z, dz)
        if _zero(dz):
            return (_NO, dz, dz)
        parts = Thunk(lambda: states.pull(dz))
        return (_NO, Thunk(lambda: to_input(b, unthunk(parts)[0])), Thunk(lambda: to_input(a, unthunk(parts)[1])))

    return states.z, lfilter_zi_pullback


@frule.register(ss.lfilter_zi)
def frule_lfilter_zi(tangents, b, a):
    states = _StepStates(b, a)
    db, da = tangent_array(b, unthunk(tangents[1])), tangent_array(a, unthunk(tangents[2]))
    if _zero(db) and _zero(da):
        return states.z, _ZERO
    return states.z, match_output(states.z, states.push(db, da))


@rrule.register(ss.sosfilt_zi)
def rrule_sosfilt_zi(sos):
    """Each section's ``lfilter_zi`` pullback, and the scales' back through the gains."""
    states = _CascadeStates(sos)

    def sosfilt_zi_pullback(dz):
        dz = cotangent_array(states.z, dz)
        if _zero(dz):
            return (_NO, dz)
        return (_NO, Thunk(lambda: to_input(sos, states.pull(dz))))

    return states.z, sosfilt_zi_pullback


@frule.register(ss.sosfilt_zi)
def frule_sosfilt_zi(tangents, sos):
    states = _CascadeStates(sos)
    dsos = tangent_array(sos, unthunk(tangents[1]))
    return states.z, (dsos if _zero(dsos) else match_output(states.z, states.push(dsos)))


# ----- sosfilt: a cascade of second-order recurrences -----------------------------------------------


class _Cascade:
    """``sosfilt(sos, x, axis, zi)``: ``lfilter`` of each section (``sos[s, :3]``, ``sos[s, 3:]``,
    states ``zi[s]``) on the previous one's output; ``pull`` and ``push`` run the sections'
    (``_Recurrence``'s) in turn, in the reverse order and in order."""

    def __init__(self, sos, x, axis: int, zi=None):
        sos = array_or_active(sos)
        if np.ndim(sos) != 2 or np.shape(sos)[1] != 6:
            raise ValueError("sos array must be shape (n_sections, 6)")
        if isinstance(sos, np.ndarray) and not np.all(sos[:, 3] == 1):
            raise ValueError("sos[:, 3] should be all ones")
        self.sos, self.zi, self.sections, y = sos, zi, [], x
        for s in range(np.shape(sos)[0]):
            self.sections.append(_Recurrence(sos[s, :3], sos[s, 3:], y, axis, None if zi is None else zi[s]))
            y = self.sections[-1].y
        self.y = y
        self.out = y if zi is None else (y, np.stack([r.out[1] for r in self.sections]))

    def pull(self, dy, dzf):
        """``(sos̄, x̄, z̄i)`` from the cotangents of ``y`` and ``zf``."""
        rows, dzi = [], []
        for s in reversed(range(len(self.sections))):
            db, da, dy, dz = self.sections[s].pull(dy, _ZERO if self.zi is None or _zero(dzf) else dzf[s])
            rows.append(np.concatenate([db, da]))
            dzi.append(dz)
        return np.stack(rows[::-1]), dy, (None if self.zi is None else np.stack(dzi[::-1]))

    def push(self, dsos, dx, dzi):
        """``(ẏ, żf)`` from the tangents of ``sos``, ``x`` and ``zi`` (``żf`` None without ``zi``)."""
        dy, dzf = dx, []
        for s, section in enumerate(self.sections):
            db, da = (_ZERO, _ZERO) if _zero(dsos) else (dsos[s, :3], dsos[s, 3:])
            dy, dz = section.push(db, da, dy, _ZERO if _zero(dzi) else dzi[s])
            dzf.append(dz)
        if self.zi is None:
            return dy, None
        if all(_zero(d) for d in dzf):
            return dy, _ZERO
        zeros = [np.zeros(np.shape(r.out[1]), np.result_type(r.out[1])) for r in self.sections]
        return dy, np.stack([z if _zero(d) else d for z, d in zip(zeros, dzf)])


def _filter_rules(f, coefficients: int, make) -> None:
    """Register the rules of ``f(*coefficients, x, axis=-1, zi=None)`` (``lfilter``, ``sosfilt``),
    whose call ``make(coefs, x, axis, zi)`` (``_Recurrence``, ``_Cascade``) pulls back and pushes
    forward; with ``zi`` the output is ``(y, zf)``, and ``zi`` by position is differentiated."""
    name = f.__name__

    def settings(rest: tuple, kwargs: dict):
        o = {"axis": -1, "zi": None}
        o.update(zip(("axis", "zi"), rest), **kwargs)
        return o["axis"], o["zi"]

    def filter_rrule(*args, **kwargs):
        coefs, x, rest = args[:coefficients], args[coefficients], args[coefficients + 1 :]
        axis, zi = settings(rest, kwargs)
        call = make(coefs, x, axis, zi)
        out = call.out

        def filter_pullback(d_out):
            dy, dzf = _output_tangents(out, d_out, zi is not None)
            if _zero(dy) and _zero(dzf):
                return (_NO, *(dy for _ in range(coefficients + 1)), *(_NO for _ in rest))
            parts = Thunk(lambda: call.pull(dy, dzf))
            inputs = [
                Thunk(lambda i=i, v=v: to_input(v, np.reshape(unthunk(parts)[i], np.shape(v))))
                for i, v in enumerate((*coefs, x))
            ]
            if len(rest) < 2:
                return (_NO, *inputs, *(_NO for _ in rest))
            return (_NO, *inputs, _NO, Thunk(lambda: to_input(zi, unbroadcast(zi, unthunk(parts)[-1]))))

        filter_pullback.__name__ = filter_pullback.__qualname__ = f"{name}_pullback"
        return out, filter_pullback

    def filter_frule(tangents, *args, **kwargs):
        coefs, x, rest = args[:coefficients], args[coefficients], args[coefficients + 1 :]
        axis, zi = settings(rest, kwargs)
        call = make(coefs, x, axis, zi)
        d = [tangent_array(v, unthunk(t)) for v, t in zip((*coefs, x), tangents[1:])]
        dzi = tangent_array(zi, unthunk(tangents[coefficients + 3])) if len(rest) >= 2 else _ZERO
        dy, dzf = call.push(*d, dzi)
        if zi is None:
            return call.out, (dy if _zero(dy) else match_output(call.y, dy))
        if _zero(dy):
            return call.out, _ZERO
        dzf = dzf if _zero(dzf) else match_output(call.out[1], dzf)
        return call.out, Tangent[tuple](match_output(call.y, dy), dzf)

    filter_rrule.__name__ = filter_rrule.__qualname__ = f"rrule_{name}"
    filter_frule.__name__ = filter_frule.__qualname__ = f"frule_{name}"
    rrule.register(f)(filter_rrule)
    frule.register(f)(filter_frule)


# ``x̄`` and ``z̄i``: the filter run backwards in time on the cotangents; ``b̄`` and ``ā``: those
# correlated with ``x`` and ``-y`` (``_Recurrence``); sosfilt: the sections' in turn, the last first
_filter_rules(ss.lfilter, 2, lambda coefs, x, axis, zi: _Recurrence(*coefs, x, axis, zi))
_filter_rules(ss.sosfilt, 1, lambda coefs, x, axis, zi: _Cascade(*coefs, x, axis, zi))


# ----- filtfilt and sosfiltfilt (method='pad'): a filter run forwards, then backwards ---------------

#: an extension of the input beyond its edges, ``(sign, weight)``: each padded side is ``weight``
#: times the edge entry plus ``sign`` times the entries next to it, reflected
_EXTENSIONS = {"odd": (-1, 2), "even": (1, 0), "constant": (0, 1)}


def _place(v, axis: int, start: int, length: int):
    """``v`` placed at ``start`` along ``axis`` in zeros ``length`` long."""
    widths = [(0, 0)] * np.ndim(v)
    widths[axis] = (start, length - start - np.shape(v)[axis])
    return np.pad(v, widths)


def _plus(*terms):
    """The sum of the terms that are not zero tangents (a zero tangent if none is)."""
    terms = [t for t in terms if not _zero(t)]
    return sum(terms[1:], terms[0]) if terms else _ZERO


def _times(u, v):
    return _ZERO if _zero(u) or _zero(v) else u * v


class _TwoPass:
    """``filtfilt(b, a, x, axis, padtype, padlen)`` and ``sosfiltfilt(sos, x, ...)`` as SciPy
    computes them: ``x`` extended by ``padlen`` entries at each end (``padtype`` odd, even or
    constant: linear in ``x``), filtered (``make``: an ``lfilter`` or ``sosfilt`` call) from the
    step response's states ``z`` (``lfilter_zi``, ``sosfilt_zi``: ``states``) times the first entry,
    then the output reversed and filtered again from ``z`` times its first entry, reversed back
    and cut to ``x``'s length. The rules compose the rules of these steps."""

    def __init__(self, make, states, coefs: tuple, x, settings: dict, ntaps: int):
        padtype, padlen = settings["padtype"], settings["padlen"]
        x = array_or_active(x)  # (a list, extended along the axis)
        if padtype not in (*_EXTENSIONS, None):
            raise ValueError(
                f"Unknown value '{padtype}' given to padtype. padtype must be 'even', 'odd', 'constant', or None."
            )
        self.axis = axis = normalize_axis(settings["axis"], np.ndim(x))
        self.n = np.shape(x)[axis]
        self.edge = 0 if padtype is None else (3 * ntaps if padlen is None else int(padlen))
        if self.n <= self.edge:
            raise ValueError(f"The length of the input vector x must be greater than padlen, which is {self.edge}.")
        self.extension = _EXTENSIONS.get(padtype) if self.edge > 0 else None
        self.states, self.coefs = states, coefs
        z = states(*coefs).z
        shape = [1] * np.ndim(x)
        shape[axis] = -1
        self.z = np.reshape(z, (*np.shape(z)[:-1], *shape))
        ext = self._extend(x)
        self.length = np.shape(ext)[axis]
        self.x0 = _along(ext, axis, 0, 1)
        self.first = make(ext, self.z * self.x0)
        self.u0 = _along(self.first.y, axis, self.length - 1)
        self.second = make(np.flip(self.first.y, axis), self.z * self.u0)
        self.y = _along(np.flip(self.second.y, axis), axis, self.edge, self.edge + self.n)

    def _extend(self, x):
        if self.extension is None:
            return x
        (sign, weight), axis, n, e = self.extension, self.axis, self.n, self.edge
        left = weight * _along(x, axis, 0, 1) + sign * np.flip(_along(x, axis, 1, e + 1), axis)
        right = weight * _along(x, axis, n - 1, n) + sign * np.flip(_along(x, axis, n - e - 1, n - 1), axis)
        return np.concatenate([left, x, right], axis=axis)

    def _extend_adjoint(self, d):
        if self.extension is None:
            return d
        (sign, weight), axis, n, e = self.extension, self.axis, self.n, self.edge
        left, right = _along(d, axis, 0, e), _along(d, axis, e + n)
        out = _along(d, axis, e, e + n)
        if weight:
            ends = [weight * np.sum(left, axis=axis, keepdims=True), weight * np.sum(right, axis=axis, keepdims=True)]
            out = out + _place(ends[0], axis, 0, n) + _place(ends[1], axis, n - 1, n)
        if sign:
            reflected = [sign * np.flip(left, axis), sign * np.flip(right, axis)]
            out = out + _place(reflected[0], axis, 1, n) + _place(reflected[1], axis, n - e - 1, n)
        return out

    def pull(self, dy):
        """``(*coefficients' cotangents, x̄)`` from ``ȳ``."""
        axis, z = self.axis, self.z
        dv = np.flip(_place(dy, axis, self.edge, self.length), axis)
        *dc2, dr, ds2 = self.second.pull(dv, _ZERO)
        du = np.flip(dr, axis) + _place(unbroadcast(self.u0, np.conj(z) * ds2), axis, self.length - 1, self.length)
        *dc1, de, ds1 = self.first.pull(du, _ZERO)
        de = de + _place(unbroadcast(self.x0, np.conj(z) * ds1), axis, 0, self.length)
        dz = unbroadcast(z, np.conj(self.x0) * ds1) + unbroadcast(z, np.conj(self.u0) * ds2)
        states = self.states(*self.coefs)
        dc0 = states.pull(np.reshape(dz, np.shape(states.z)))
        dc0 = dc0 if isinstance(dc0, tuple) else (dc0,)
        return (*(c0 + c1 + c2 for c0, c1, c2 in zip(dc0, dc1, dc2)), self._extend_adjoint(de))

    def push(self, dcoefs: tuple, dx):
        """``ẏ`` from the tangents of the coefficients and of ``x``."""
        axis, z = self.axis, self.z
        dz = _ZERO
        if not all(_zero(d) for d in dcoefs):
            dz = np.reshape(self.states(*self.coefs).push(*dcoefs), np.shape(z))
        de = _ZERO if _zero(dx) else self._extend(dx)
        ds1 = _plus(_times(dz, self.x0), _times(z, _ZERO if _zero(de) else _along(de, axis, 0, 1)))
        du = self.first.push(*dcoefs, de, ds1)[0]
        du0 = _ZERO if _zero(du) else _along(du, axis, self.length - 1)
        ds2 = _plus(_times(dz, self.u0), _times(z, du0))
        dv = self.second.push(*dcoefs, _ZERO if _zero(du) else np.flip(du, axis), ds2)[0]
        return dv if _zero(dv) else _along(np.flip(dv, axis), axis, self.edge, self.edge + self.n)


def _two_pass_rules(f, coefficients: int, call) -> None:
    """Register the rules of ``f``, whose first ``coefficients`` positional arguments are the
    filter's, then ``x``; ``call(coefs, x, settings)`` makes its ``_TwoPass``."""
    signature = inspect.signature(f)
    name = f.__name__

    def settings(args: tuple, kwargs: dict) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        s = dict(bound.arguments)
        if s.get("method", "pad") != "pad":
            raise option_refused(
                f, args, f"method={s['method']!r}: the rule differentiates method='pad' only (the default)"
            )
        return s

    def two_pass_rrule(*args, **kwargs):
        coefs, x, rest = args[:coefficients], args[coefficients], args[coefficients + 1 :]
        passes = call(coefs, x, settings(args, kwargs))
        options = (_NO,) * len(rest)

        def two_pass_pullback(dy):
            dy = cotangent_array(passes.y, dy)
            if _zero(dy):
                return (_NO, *(dy for _ in coefs), dy, *options)
            parts = Thunk(lambda: passes.pull(dy))
            cotangents = (
                Thunk(lambda i=i, c=c: to_input(c, np.reshape(unthunk(parts)[i], np.shape(c))))
                for i, c in enumerate((*coefs, x))
            )
            return (_NO, *cotangents, *options)

        two_pass_pullback.__name__ = two_pass_pullback.__qualname__ = f"{name}_pullback"
        return passes.y, two_pass_pullback

    def two_pass_frule(tangents, *args, **kwargs):
        coefs, x = args[:coefficients], args[coefficients]
        passes = call(coefs, x, settings(args, kwargs))
        d = [tangent_array(v, unthunk(t)) for v, t in zip((*coefs, x), tangents[1:])]
        dy = passes.push(tuple(d[:coefficients]), d[coefficients])
        return passes.y, (dy if _zero(dy) else match_output(passes.y, dy))

    two_pass_rrule.__name__ = two_pass_rrule.__qualname__ = f"rrule_{name}"
    two_pass_frule.__name__ = two_pass_frule.__qualname__ = f"frule_{name}"
    rrule.register(f)(two_pass_rrule)
    frule.register(f)(two_pass_frule)


def _filtfilt(coefs: tuple, x, s: dict) -> _TwoPass:
    b, a = coefs
    ntaps = max(np.size(a), np.size(b))
    return _TwoPass(lambda v, zi: _Recurrence(b, a, v, s["axis"], zi), _StepStates, coefs, x, s, ntaps)


def _sosfiltfilt(coefs: tuple, x, s: dict) -> _TwoPass:
    (sos,) = coefs
    plain = np.asarray(stood_for(sos))  # (SciPy counts the sections of first order as it pads)
    ntaps = 2 * np.shape(sos)[0] + 1 - min(int(np.sum(plain[:, 2] == 0)), int(np.sum(plain[:, 5] == 0)))
    return _TwoPass(lambda v, zi: _Cascade(sos, v, s["axis"], zi), _CascadeStates, coefs, x, s, ntaps)


_two_pass_rules(ss.filtfilt, 2, _filtfilt)
_two_pass_rules(ss.sosfiltfilt, 1, _sosfiltfilt)


# ----- savgol_filter: a convolution, with polynomial fits at the edges in mode 'interp' -------------


class _Savgol:
    """One call of ``savgol_filter(x, window_length, polyorder, deriv, delta, axis, mode, cval)``:
    ``ndimage.convolve1d`` of ``x`` with ``savgol_coeffs`` in ``mode`` (``cval`` and all), or in mode
    'interp' with zeros outside, its ``h = window_length // 2`` outputs at each end replaced by the
    fitted polynomials' values there, linear in the first (last) ``window_length`` entries: the
    matrices ``E`` of these maps are the filter's rows on the identity. The coefficients are
    ``delta ** -deriv`` times those at ``delta = 1``, so ``dy/ddelta = -deriv y / delta``."""

    def __init__(self, x, args: tuple, kwargs: dict):
        bound = inspect.signature(ss.savgol_filter).bind(x, *args, **kwargs)
        bound.apply_defaults()
        s = self.s = dict(bound.arguments)
        self.names = list(s)[1 : 1 + len(args)]
        self.x, self.y = x, call_by_engine(ss.savgol_filter, (x, *args), kwargs, "scipy.signal.savgol_filter")
        self.axis = normalize_axis(s["axis"], np.ndim(x))
        window, order, deriv = s["window_length"], s["polyorder"], s["deriv"]
        self.scale = s["delta"] ** -deriv if deriv else 1.0
        self.coeffs = ss.savgol_coeffs(window, order, deriv) * self.scale
        if s["mode"] == "interp":
            rows = ss.savgol_filter(np.eye(window), window, order, deriv, axis=0, mode="interp") * self.scale
            self.h = window // 2
            self.edges = (rows[: self.h], rows[window - self.h :])

    def _convolution(self):
        """``(mode, cval)`` of the convolution."""
        return ("constant", 0.0) if self.s["mode"] == "interp" else (self.s["mode"], self.s["cval"])

    def _along_axis(self, matrix, v):
        """``matrix`` applied to ``v`` along the axis."""
        return np.moveaxis(np.tensordot(matrix, np.moveaxis(v, self.axis, 0), 1), 0, self.axis)

    def pull(self, dy):
        """``{name: cotangent}`` of ``x``, ``cval`` and ``delta``."""
        mode, cval = self._convolution()
        axis, n = self.axis, np.shape(self.x)[self.axis]
        inner = dy
        if self.s["mode"] == "interp" and self.h:
            inner = _place(_along(dy, axis, self.h, n - self.h), axis, self.h, n)
        # (an array: convolve1d's rule would give a list's cotangent as the list's, which the edges' do not add to)
        back = rrule(ndi.convolve1d, array_or_active(self.x), self.coeffs, axis, None, mode, cval)[1](inner)
        dx = unthunk(back[1])
        if self.s["mode"] == "interp" and self.h:
            window = np.shape(self.edges[0])[1]
            left = self._along_axis(np.conj(self.edges[0]).T, _along(dy, axis, 0, self.h))
            right = self._along_axis(np.conj(self.edges[1]).T, _along(dy, axis, n - self.h))
            dx = dx + _place(left, axis, 0, n) + _place(right, axis, n - window, n)
        out = {"x": dx, "cval": back[6]}
        if self.s["deriv"]:
            out["delta"] = Thunk(lambda: np.sum(np.conj(-self.s["deriv"] * self.y / self.s["delta"]) * dy))
        return out

    def push(self, dx, dcval, ddelta):
        terms = []
        if not (_zero(dx) and _zero(dcval)):
            dx = np.zeros(np.shape(self.x), np.result_type(self.y)) if _zero(dx) else dx
            options = {**{k: v for k, v in self.s.items() if k != "x"}, "cval": 0.0 if _zero(dcval) else dcval}
            terms.append(call_by_engine(ss.savgol_filter, (dx,), options, "scipy.signal.savgol_filter"))
        if self.s["deriv"] and not _zero(ddelta):
            terms.append(-self.s["deriv"] * ddelta / self.s["delta"] * self.y)
        return _plus(*terms)


@rrule.register(ss.savgol_filter)
def rrule_savgol_filter(x, *args, **kwargs):
    """``convolve1d``'s pullback (``cval``'s cotangent and all); in mode 'interp', that of the
    interior outputs plus ``E^H`` of the edges' cotangents."""
    call = _Savgol(x, args, kwargs)

    def savgol_filter_pullback(dy):
        dy = cotangent_array(call.y, dy)
        if _zero(dy):
            return (_NO, dy, *(dy if n in ("delta", "cval") else _NO for n in call.names))
        parts = Thunk(lambda: call.pull(dy))
        cotangents = [Thunk(lambda: to_input(x, unthunk(parts)["x"]))]
        for name, value in zip(call.names, args):
            if name in ("delta", "cval"):
                cotangents.append(Thunk(lambda n=name, v=value: to_input(v, unthunk(unthunk(parts).get(n, _ZERO)))))
            else:
                cotangents.append(_NO)
        return (_NO, *cotangents)

    return call.y, savgol_filter_pullback


@frule.register(ss.savgol_filter)
def frule_savgol_filter(tangents, x, *args, **kwargs):
    call = _Savgol(x, args, kwargs)
    d = dict(zip(("x", *call.names), (unthunk(t) for t in tangents[1:])))
    dy = call.push(tangent_array(x, d["x"]), d.get("cval", _ZERO), d.get("delta", _ZERO))
    return call.y, (dy if _zero(dy) else match_output(call.y, dy))


# ----- detrend and hilbert: linear maps along an axis -----------------------------------------------


def _axis_settings(f, x, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by name, defaults filled in, the axis made non-negative."""
    bound = inspect.signature(f).bind(x, *args, **kwargs)
    bound.apply_defaults()
    s = dict(bound.arguments)
    s["axis"] = normalize_axis(s["axis"], np.ndim(x))
    return s


def _detrended(t, s: dict, lead: int):
    """``detrend`` of ``t`` (``lead`` batch axes in front) as the call ``s`` detrends."""
    options = {"axis": s["axis"] + lead, "type": s["type"], "bp": s["bp"]}
    return call_by_engine(ss.detrend, (t,), options, "scipy.signal.detrend")


@rrule.register(ss.detrend, batched=True)
def rrule_detrend(data, *args, **kwargs):
    """The residual of a least-squares fit (a line per segment, or the mean) is an orthogonal
    projection: its own adjoint, so the cotangent is the cotangent detrended."""
    s = _axis_settings(ss.detrend, data, args, kwargs)
    y = call_by_engine(ss.detrend, (data, *args), kwargs, "scipy.signal.detrend")
    options = (_NO,) * len(args)

    def detrend_pullback(dy):
        batch = carries_batch(y, unthunk(dy))
        dy = match_input_batch(y, unthunk(dy)) if batch else cotangent_array(y, dy)
        if _zero(dy):
            return (_NO, dy, *options)
        back = batch_to_input if batch else to_input
        return (_NO, Thunk(lambda: back(data, _detrended(dy, s, int(batch)))), *options)

    return y, detrend_pullback


@frule.register(ss.detrend, batched=True)
def frule_detrend(tangents, data, *args, **kwargs):
    s = _axis_settings(ss.detrend, data, args, kwargs)
    y = call_by_engine(ss.detrend, (data, *args), kwargs, "scipy.signal.detrend")
    dx = tangent_array(data, unthunk(tangents[1]))
    if _zero(dx):
        return y, dx
    return y, match_output(y, _detrended(dx, s, int(is_batched(data, dx))))


def _hilbert_multiplier(n: int, axis: int, ndim: int):
    """The analytic signal's spectral weights (1 at zero and Nyquist, 2 at positive frequencies,
    0 at negative ones), shaped to multiply along ``axis`` of ``ndim`` axes."""
    h = np.zeros(n)
    h[0] = 1
    h[1 : (n + 1) // 2] = 2
    if n % 2 == 0:
        h[n // 2] = 1
    return np.reshape(h, (n,) + (1,) * (ndim - 1 - axis))


@rrule.register(ss.hilbert, batched=True)
def rrule_hilbert(x, *args, **kwargs):
    """``y = ifft(h fft(x, N))``: ``ȳ``'s adjoint is ``ifft(h fft(ȳ))`` (``fft^H = N ifft``, ``h``
    real), cut (or padded with zeros) to ``x``'s length; a real ``x`` takes its real part."""
    s = _axis_settings(ss.hilbert, x, args, kwargs)
    y = call_by_engine(ss.hilbert, (x, *args), kwargs, "scipy.signal.hilbert")
    n, options = np.shape(x)[s["axis"]], (_NO,) * len(args)
    h = _hilbert_multiplier(np.shape(y)[s["axis"]], s["axis"], np.ndim(x))

    def hilbert_pullback(dy):
        batch = carries_batch(y, unthunk(dy))
        dy = match_input_batch(y, unthunk(dy)) if batch else cotangent_array(y, dy)
        if _zero(dy):
            return (_NO, dy, *options)
        axis = s["axis"] + int(batch)

        def dx():
            full = np.fft.ifft(h * np.fft.fft(dy, axis=axis), axis=axis)
            cut = _along(full, axis, 0, n)
            if np.shape(cut)[axis] < n:
                cut = _place(cut, axis, 0, n)
            return (batch_to_input if batch else to_input)(x, cut)

        return (_NO, Thunk(dx), *options)

    return y, hilbert_pullback


@frule.register(ss.hilbert, batched=True)
def frule_hilbert(tangents, x, *args, **kwargs):
    s = _axis_settings(ss.hilbert, x, args, kwargs)
    y = call_by_engine(ss.hilbert, (x, *args), kwargs, "scipy.signal.hilbert")
    dx = tangent_array(x, unthunk(tangents[1]))
    if _zero(dx):
        return y, dx
    options = {"N": s["N"], "axis": s["axis"] + int(is_batched(x, dx))}
    return y, match_output(y, call_by_engine(ss.hilbert, (dx,), options, "scipy.signal.hilbert"))
