"""Rules for NumPy's ufuncs with two outputs from a division: ``np.divmod(x, y) = (q, r)`` with
``q = floor(x / y)`` and ``r = x - q y``, ``np.modf(x) = (frac, whole)``, and
``np.frexp(x) = (m, e)`` with ``x = m * 2**e``.

The integral parts are piecewise constant: their derivative is zero (where it exists), so the
cotangent of ``q``, ``whole`` or ``e`` contributes nothing. ``r`` moves with ``x`` and against
``y`` scaled by ``q``; ``frac`` moves with ``x``; ``m`` moves with ``x`` scaled by ``2**-e``.

>>> import numpy as np, chainrules as cr
>>> (q, r), back = cr.rrule(np.divmod, 7.5, 2.0)
>>> (q, r), back((1.0, 1.0))[1:]
((np.float64(3.0), np.float64(1.5)), (1.0, -3.0))
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, input_matcher, rrule, unthunk
from ._arrays import sequence_items

_NO = NoTangent()
_ZERO = ZeroTangent()


@rrule.register(np.divmod)
def rrule_divmod(x, y, **kwargs):
    q, r = outputs = np.divmod(x, y, **kwargs)

    def divmod_pullback(dys):
        dr = sequence_items(outputs, dys)[1]
        if isinstance(dr, AbstractZero):
            return _NO, _ZERO, _ZERO
        match = input_matcher(r, dr)
        return _NO, match(x, dr), match(y, -dr * q)

    return outputs, divmod_pullback


@frule.register(np.divmod)
def frule_divmod(tangents, x, y, **kwargs):
    q, r = outputs = np.divmod(x, y, **kwargs)
    dx, dy = unthunk(tangents[1]), unthunk(tangents[2])
    dr = _ZERO
    if not isinstance(dx, AbstractZero):
        dr = dx + np.zeros_like(r)
    if not isinstance(dy, AbstractZero):
        dr = -dy * q if isinstance(dr, AbstractZero) else dr - dy * q
    if isinstance(dr, AbstractZero):
        return outputs, dr
    return outputs, Tangent[tuple](_ZERO, dr)


@rrule.register(np.modf)
def rrule_modf(x, **kwargs):
    frac, whole = outputs = np.modf(x, **kwargs)

    def modf_pullback(dys):
        dfrac = sequence_items(outputs, dys)[0]
        if isinstance(dfrac, AbstractZero):
            return _NO, _ZERO
        return _NO, input_matcher(frac, dfrac)(x, dfrac)

    return outputs, modf_pullback


@frule.register(np.modf)
def frule_modf(tangents, x, **kwargs):
    outputs = np.modf(x, **kwargs)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return outputs, dx
    return outputs, Tangent[tuple](dx + np.zeros_like(outputs[0]), _ZERO)


@rrule.register(np.frexp)
def rrule_frexp(x, **kwargs):
    """``x = m * 2**e``: the mantissa moves with x (``dm/dx = 2**-e``), the integer exponent does not."""
    mantissa, exponent = outputs = np.frexp(x, **kwargs)

    def frexp_pullback(dys):
        dm = sequence_items(outputs, dys)[0]
        if isinstance(dm, AbstractZero):
            return _NO, _ZERO
        return _NO, input_matcher(mantissa, dm)(x, np.ldexp(dm, -exponent))

    return outputs, frexp_pullback


@frule.register(np.frexp)
def frule_frexp(tangents, x, **kwargs):
    outputs = np.frexp(x, **kwargs)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return outputs, dx
    return outputs, Tangent[tuple](np.ldexp(dx + np.zeros_like(outputs[0]), -outputs[1]), _NO)
