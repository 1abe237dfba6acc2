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


def _register_moving_first_output(f, scaled, flat) -> None:
    """Rules for a one-input ufunc with two outputs of which the first moves with ``x`` (its
    tangent is ``scaled(dx, outputs)``, self-adjoint: an elementwise scale) and the second is
    flat (its tangent is ``flat``: a zero, or ``NoTangent`` for an integer output)."""

    def rrule_moving_first(x, **kwargs):
        outputs = f(x, **kwargs)

        def moving_first_pullback(dys):
            d = sequence_items(outputs, dys)[0]
            if isinstance(d, AbstractZero):
                return _NO, _ZERO
            return _NO, input_matcher(outputs[0], d)(x, scaled(d, outputs))

        moving_first_pullback.__qualname__ = f"{f.__name__}_pullback"
        return outputs, moving_first_pullback

    def frule_moving_first(tangents, x, **kwargs):
        outputs = f(x, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return outputs, dx
        return outputs, Tangent[tuple](scaled(dx + np.zeros_like(outputs[0]), outputs), flat)

    rrule_moving_first.__qualname__, frule_moving_first.__qualname__ = f"rrule_{f.__name__}", f"frule_{f.__name__}"
    rrule.register(f)(rrule_moving_first)
    frule.register(f)(frule_moving_first)


# frac = x - whole moves with x; x = m * 2**e: the mantissa moves with x scaled by 2**-e, the
# integer exponent does not
_register_moving_first_output(np.modf, lambda d, outputs: d, _ZERO)
_register_moving_first_output(np.frexp, lambda d, outputs: np.ldexp(d, -outputs[1]), _NO)
