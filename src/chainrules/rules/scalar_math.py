"""Rules for Python's ``math`` module (real scalars)."""

from __future__ import annotations

import math

from ..core import NoTangent, frule, rrule, scalar_rule, unthunk

_NO = NoTangent()


@rrule.register(math.sin)
def rrule_sin(x):
    # Python has no sincos: both are computed here, once, so the pullback only multiplies.
    s, c = math.sin(x), math.cos(x)

    def sin_pullback(dy):
        return _NO, unthunk(dy) * c

    return s, sin_pullback


@frule.register(math.sin, batched=True)
def frule_sin(tangents, x):
    return math.sin(x), math.cos(x) * tangents[1]


@rrule.register(math.cos)
def rrule_cos(x):
    s, c = math.sin(x), math.cos(x)

    def cos_pullback(dy):
        return _NO, -unthunk(dy) * s

    return c, cos_pullback


@frule.register(math.cos, batched=True)
def frule_cos(tangents, x):
    return math.cos(x), -math.sin(x) * tangents[1]


scalar_rule(math.exp, lambda x, *, out: out)
scalar_rule(math.log, lambda x: 1.0 / x)
