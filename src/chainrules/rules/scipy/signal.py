"""Rules for ``scipy.signal``'s N-dimensional convolutions: ``convolve``, ``correlate`` and
``fftconvolve`` (``axes=None`` only), real and complex, in modes ``"full"``, ``"same"`` and
``"valid"``.

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

>>> import numpy as np, scipy.signal as ss, chainrules as cr
>>> y, back = cr.rrule(ss.convolve, np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0]), "valid")
>>> y, [cr.unthunk(d) for d in back(np.array([1.0, 1.0]))[1:3]]
(array([1., 1.]), [array([-1.,  0.,  1.]), array([5., 3.])])
"""

from __future__ import annotations

import numpy as np
import scipy.signal as ss

from ...core import (
    AbstractZero,
    NoRuleError,
    NoTangent,
    Thunk,
    ZeroTangent,
    call_by_engine,
    frule,
    rrule,
    unthunk,
    user_location,
)
from ..numpy._arrays import cotangent_array, to_input
from ..numpy._util import match_output

_NO = NoTangent()
_ZERO = ZeroTangent()
_NAMES = {ss.convolve: "convolve", ss.correlate: "correlate", ss.fftconvolve: "fftconvolve"}


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
        third = "axes" if f is ss.fftconvolve else "method"
        o = {"mode": "full", third: None if f is ss.fftconvolve else "auto"}
        o.update(zip(("mode", third), args), **kwargs)
        if f is ss.fftconvolve and o["axes"] is not None:
            reason = f"axes={o['axes']!r}: the rule differentiates convolutions over all axes (axes=None) only"
            raise NoRuleError(f, (*inputs, *args), location=user_location(), reason=reason)
        self.name, self.mode, self.correlation = name, o["mode"], f is ss.correlate
        if f is ss.fftconvolve:
            self.conv, self.conv_kwargs = ss.fftconvolve, {}
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
