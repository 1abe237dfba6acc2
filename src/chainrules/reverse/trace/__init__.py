"""Reverse mode by tracing: run the function on tracked values, record a tape, sweep it backwards.

Tracked numbers and arrays turn every operator, NumPy ufunc, NumPy function and array method
applied to them into a call of that callable's ``rrule`` on the plain values; the pullback goes
on the tape of the active trace (a ``ContextVar``) and a tracked result comes back. The user's
own functions, loops and branches simply run, so any Python works that reaches its numbers
only through operations with rules. ``back(dy)`` walks the tape once, backwards, accumulating
with ``chainrules.accumulate``.

>>> import numpy as np
>>> from chainrules.reverse.trace import pullback_full
>>> def f(x):
...     total = 0.0
...     while x < 10.0:          # data-dependent control flow: compares primal values
...         x = x * 2.0
...         total = total + x
...     return total
>>> y, back = pullback_full(f, 3.0)
>>> y, back(1.0)
(18.0, (NoTangent(), 6.0))
"""

from ...core.twins import register_bridges
from .engine import TapePullback, pullback_full, pullback_with_constants
from .tracer import current_trace, deep_primal
from .tracked import TrackedArray, TrackedNumber

# Tracked values that reach another engine's code (the source engine differentiating inside a
# tape gradient) are indexed, read and called through the rules of the arrays inside them, and
# the math functions and number builtins take them through the rules of their NumPy twins.
for _tracked_type in (TrackedNumber, TrackedArray):
    register_bridges(_tracked_type, deep_primal)

__all__ = ["TapePullback", "TrackedArray", "TrackedNumber", "current_trace", "pullback_full", "pullback_with_constants"]
