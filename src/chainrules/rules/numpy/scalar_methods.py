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

from ...core import (
    AbstractZero,
    ActiveValue,
    NoRuleError,
    NoTangent,
    ZeroTangent,
    frule,
    match_input,
    match_input_batch,
    rrule,
    unthunk,
)
from ._util import match_output

_NO = NoTangent()


def _scalar_method_rules(name: str) -> None:
    scalar_method = getattr(np.generic, name)
    array_method = getattr(np.ndarray, name)

    def rrule_scalar_method(x, *args, **kwargs):
        a = np.asarray(x)
        rule = rrule.lookup(array_method, (a, *args))
        if rule is None:
            raise NoRuleError(scalar_method, (x, *args))
        y, array_pullback = rule(a, *args, **kwargs)
        if not any(isinstance(v, ActiveValue) for v in (*args, *kwargs.values())):
            # the type NumPy returns; its scalar method would convert an engine's value among the
            # arguments (a dual bound of clip, in a Hessian): the array rule's value stands for it then
            y = scalar_method(x, *args, **kwargs)

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
    "squeeze", "std", "sum", "swapaxes", "take", "tolist", "trace", "transpose", "var",
)  # fmt: skip
for _name in _NAMES:
    _scalar_method_rules(_name)


_ANY_OBJECT = object()  # looks up the rule registered for any type

# the linear maps a NumPy scalar's value attributes apply, each its own adjoint on real cotangents:
# s.T is s, s.real its real part, s.imag its imaginary part (whose adjoint is 1j * dy)
_VALUE_ATTRIBUTES = {
    "T": lambda x, d: d,
    "real": lambda x, d: np.real(d),
    "imag": lambda x, d: np.imag(d) if np.iscomplexobj(x) else ZeroTangent(),
}
_VALUE_ATTRIBUTE_ADJOINTS = {
    "T": lambda x, dy: dy,
    "real": lambda x, dy: np.real(dy),
    "imag": lambda x, dy: 1j * np.real(dy) if np.iscomplexobj(x) else ZeroTangent(),
}


# Attributes of NumPy scalars: ``s.T``, ``s.real``, ``s.imag`` are linear in ``s``, others (``s.shape``,
# a bound method) carry no derivative. The rule for Python objects would take ``T`` for a number's
# field, as ``real`` is, and give it none. The rules compute with NumPy functions only: in nested
# differentiation ``s`` is another engine's number.
@rrule.register(getattr, np.generic, str, batched=True)
def rrule_scalar_getattr(x, name, *default):
    y = getattr(x, name, *default)
    rest = (_NO,) * len(default)
    adjoint = _VALUE_ATTRIBUTE_ADJOINTS.get(name)
    if adjoint is None:
        if callable(y):  # a bound method (m = s.conjugate): its cotangent, from its call, is the number's
            return y, lambda dy: (_NO, unthunk(dy), _NO, *rest)
        if isinstance(y, (tuple, int, np.dtype)):  # the shape, dtype, size
            return y, lambda dy: (_NO, _NO, _NO, *rest)
        return rrule.lookup(getattr, (_ANY_OBJECT, name))(x, name, *default)

    def scalar_attribute_pullback(dy):
        dy = unthunk(dy)
        dx = dy if isinstance(dy, AbstractZero) else adjoint(x, dy)
        if isinstance(dx, AbstractZero):
            return (_NO, dx, _NO, *rest)
        # a batch of cotangents (a leading batch axis) keeps its axis
        return (_NO, match_input_batch(x, dx) if np.ndim(dx) > 0 else match_input(x, dx), _NO, *rest)

    return y, scalar_attribute_pullback


@frule.register(getattr, np.generic, str, batched=True)
def frule_scalar_getattr(tangents, x, name, *default):
    y = getattr(x, name, *default)
    attribute = _VALUE_ATTRIBUTES.get(name)
    if attribute is None:
        if callable(y) or isinstance(y, (tuple, int, np.dtype)):
            return y, _NO
        return frule.lookup(getattr, (_ANY_OBJECT, name))(tangents, x, name, *default)
    dx = unthunk(tangents[1])
    dy = dx if isinstance(dx, AbstractZero) else attribute(x, dx)
    return y, dy if isinstance(dy, AbstractZero) or np.ndim(dy) > 0 else match_output(y, dy)
