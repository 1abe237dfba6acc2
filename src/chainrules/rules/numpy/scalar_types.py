"""Rules for constructing NumPy's float and complex scalars: ``np.float64(x)``, ``np.float32(x)``,
``np.complex128(x)``, ... (``x`` a number or an array, which they convert like ``astype``).

A conversion of precision is the identity on tangents, brought to the output's dtype going forward
and to the input's space going back. The source engine reaches these rules; the tape and forward
mode cannot (NumPy converts their values before any rule could run) and refuse the conversion.
Under nested differentiation the argument may be an engine's number, which the constructor would
convert and so lose its derivative: it is returned as it is.

>>> import numpy as np, chainrules as cr
>>> y, back = cr.rrule(np.float32, 1.5)
>>> y, back(np.float32(2.0))
(np.float32(1.5), (NoTangent(), 2.0))
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, ActiveValue, NoTangent, frule, input_matcher, rrule, unthunk

_NO = NoTangent()


def _convert(T, x):
    return x if isinstance(x, ActiveValue) else T(x)


def _register(T):
    def rrule_scalar_type(x):
        y = _convert(T, x)

        def scalar_type_pullback(dy):
            dy = unthunk(dy)
            return _NO, input_matcher(x, dy)(x, dy)

        scalar_type_pullback.__qualname__ = f"{T.__name__}_pullback"
        return y, scalar_type_pullback

    def frule_scalar_type(tangents, x):
        y = _convert(T, x)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero) or isinstance(dx, ActiveValue) or isinstance(y, ActiveValue):
            return y, dx
        if np.dtype(T).kind == "f":
            dx = np.real(dx)
        return y, T(dx) if np.ndim(dx) == np.ndim(y) else np.asarray(dx, dtype=T)  # a batch of tangents

    rrule_scalar_type.__qualname__ = f"rrule_{T.__name__}"
    frule_scalar_type.__qualname__ = f"frule_{T.__name__}"
    rrule.register(T, functor=False, batched=True)(rrule_scalar_type)
    frule.register(T, functor=False, batched=True)(frule_scalar_type)


for _T in (np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble):
    _register(_T)
