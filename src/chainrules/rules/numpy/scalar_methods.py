"""Rules for the array methods of NumPy scalars: ``s.sum()``, ``s.reshape(1)``, ``s.clip(0, 1)``, ...

A full reduction returns a NumPy scalar (``np.float64``), which has the methods of arrays,
defined on ``np.generic``: code such as ``x.sum().round(3)`` or ``x.max().reshape(1)`` calls
them. Each ``np.generic`` method here has the rule of its ``np.ndarray`` counterpart applied to
the scalar as a 0-d array; the primal is the scalar method's own result, so its type is what
NumPy returns. (``conjugate``/``conj`` have rules of their own, in ``rules/conjugate.py``.)
A test checks that every name listed has an ``np.ndarray`` rule.

>>> import numpy as np
>>> import chainrules as cr
>>> y, back = cr.rrule(np.generic.reshape, np.float64(2.0), 1)
>>> y, back(np.array([3.0]))
(array([2.]), (NoTangent(), np.float64(3.0), NoTangent()))
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, NoRuleError, NoTangent, frule, match_input, rrule, unthunk
from ._util import match_output

_NO = NoTangent()


def _scalar_method_rules(name: str) -> None:
    scalar_method = getattr(np.generic, name)
    array_method = getattr(np.ndarray, name)

    def rrule_scalar_method(x, *args, **kwargs):
        y = scalar_method(x, *args, **kwargs)
        a = np.asarray(x)
        rule = rrule.lookup(array_method, (a, *args))
        if rule is None:
            raise NoRuleError(scalar_method, (x, *args))
        _, array_pullback = rule(a, *args, **kwargs)

        def scalar_method_pullback(dy):
            _, da, *rest = array_pullback(dy)
            da = unthunk(da)
            return (_NO, da if isinstance(da, AbstractZero | NoTangent) else match_input(x, da), *rest)

        return y, scalar_method_pullback

    def frule_scalar_method(tangents, x, *args, **kwargs):
        y = scalar_method(x, *args, **kwargs)
        a = np.asarray(x)
        if frule.lookup(array_method, (a, *args)) is None:
            raise NoRuleError(scalar_method, (x, *args), reason="forward mode needs an frule")
        dx = unthunk(tangents[1])
        da = dx if isinstance(dx, AbstractZero) else np.asarray(dx)
        _, dy = frule((tangents[0], da, *tangents[2:]), array_method, a, *args, **kwargs)
        dy = unthunk(dy)
        return y, dy if isinstance(dy, AbstractZero | NoTangent) else match_output(y, dy)

    rrule.register(scalar_method)(rrule_scalar_method)
    frule.register(scalar_method)(frule_scalar_method)


# the np.ndarray methods with rules (reductions, shapes, indexing, ufuncs) that scalars also have;
# the array rule is looked up when a scalar method is called, so the rule modules' order of import
# does not matter
_NAMES = (
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "copy", "cumprod", "cumsum", "diagonal",
    "flatten", "item", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "reshape", "round", "searchsorted",
    "squeeze", "std", "sum", "swapaxes", "take", "trace", "transpose", "var",
)  # fmt: skip
for _name in _NAMES:
    _scalar_method_rules(_name)
