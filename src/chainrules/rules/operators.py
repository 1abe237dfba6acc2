"""Rules for Python's operators (the ``operator`` module), for numbers and NumPy arrays alike.

The source engine lowers ``a + b`` to ``operator.add(a, b)``, so these rules serve scalars and
broadcasting arrays. Each cotangent is brought back to its input's shape and dtype with
``match_input``. The pushforwards are elementwise, so they take a leading batch axis as it is.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..core import NoTangent, conj, frule, match_input, rrule, unthunk

_NO = NoTangent()


@rrule.register(operator.add)
def rrule_add(a, b):
    def add_pullback(dy):
        dy = unthunk(dy)
        return _NO, match_input(a, dy), match_input(b, dy)

    return a + b, add_pullback


@frule.register(operator.add, batched=True)
def frule_add(tangents, a, b):
    _, da, db = tangents
    return a + b, da + db


@rrule.register(operator.sub)
def rrule_sub(a, b):
    def sub_pullback(dy):
        dy = unthunk(dy)
        return _NO, match_input(a, dy), match_input(b, -dy)

    return a - b, sub_pullback


@frule.register(operator.sub, batched=True)
def frule_sub(tangents, a, b):
    _, da, db = tangents
    return a - b, da - db


@rrule.register(operator.mul)
def rrule_mul(a, b):
    def mul_pullback(dy):
        dy = unthunk(dy)
        return _NO, match_input(a, dy * conj(b)), match_input(b, conj(a) * dy)

    return a * b, mul_pullback


@frule.register(operator.mul, batched=True)
def frule_mul(tangents, a, b):
    _, da, db = tangents
    return a * b, da * b + a * db


@rrule.register(operator.truediv)
def rrule_truediv(a, b):
    y = a / b

    def truediv_pullback(dy):
        dy = unthunk(dy)
        da = dy / conj(b)
        return _NO, match_input(a, da), match_input(b, -da * conj(y))

    return y, truediv_pullback


@frule.register(operator.truediv, batched=True)
def frule_truediv(tangents, a, b):
    _, da, db = tangents
    y = a / b
    return y, (da - y * db) / b


@rrule.register(operator.neg)
def rrule_neg(a):
    def neg_pullback(dy):
        return _NO, -unthunk(dy)

    return -a, neg_pullback


@frule.register(operator.neg, batched=True)
def frule_neg(tangents, a):
    return -a, -tangents[1]


def _log_base(a):
    """log|a| where a != 0, and 0 where a == 0 (the exponent's partial vanishes with the base).

    For a negative base this is the real part of the complex derivative, as ChainRules takes it."""
    if isinstance(a, (float, int)):
        return math.log(abs(a)) if a != 0 else 0.0
    a = np.asarray(a)
    safe = np.where(a == 0, 1, a)
    return np.log(np.abs(safe)) if not np.iscomplexobj(a) else np.log(safe)


def _pow_partials(a, b, y):
    """(dy/da, dy/db) of a ** b, finite at a == 0 whenever the derivative exists there."""
    if isinstance(a, (float, int)) and isinstance(b, (float, int)):
        if b == 0:
            da = 0.0
        elif a == 0 and b < 1:
            da = math.inf  # x ** b with 0 < b < 1 has an infinite slope at 0
        else:
            da = b * a ** (b - 1)
        return da, y * _log_base(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        da = np.where(np.asarray(b) == 0, 0.0, b * np.power(a, b - 1))
    return da, y * _log_base(a)


@rrule.register(operator.pow)
def rrule_pow(a, b):
    y = a**b

    def pow_pullback(dy):
        dy = unthunk(dy)
        pa, pb = _pow_partials(a, b, y)
        return _NO, match_input(a, dy * conj(pa)), match_input(b, dy * conj(pb))

    return y, pow_pullback


@frule.register(operator.pow, batched=True)
def frule_pow(tangents, a, b):
    _, da, db = tangents
    y = a**b
    pa, pb = _pow_partials(a, b, y)
    return y, pa * da + pb * db
