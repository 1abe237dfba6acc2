"""Checkpointing: reverse mode that keeps a function's arguments, not its intermediates.

A reverse engine keeps what every pullback needs until the reverse pass reaches it: for a long
loop, the intermediates of every iteration. ``cr.checkpoint(f)`` wraps ``f`` so that a call of it
keeps only its arguments (and ``f``'s captured values); its pullback runs ``f`` again under the
engine that is differentiating (``rrule_via_ad``'s engine) and pulls back through that. Memory
then grows with the number of checkpointed calls instead of with every operation inside them,
for the price of one more forward pass of each (Griewank and Walther, "Evaluating Derivatives",
2nd ed., ch. 12; ``jax.checkpoint``, ``torch.utils.checkpoint`` and Zygote's ``checkpointed``
do the same).

The mechanism is a rule: ``Checkpointed`` instances have an ``rrule`` whose primal calls ``f`` on
plain values and whose pullback recomputes. The source engine calls rules by itself; the tape
sees calls only through its values' protocols, so a call with the tape's values asks them to run
it through the rule (``ActiveValue.call_by_rule``). Forward mode keeps no intermediates and runs
``f`` as it is.

``f`` must compute the same values when it runs again: no randomness drawn inside it (pass a
generator's draws in as arguments) and no state it changes.

>>> import numpy as np, chainrules as cr
>>> @cr.checkpoint
... def layer(h, W):
...     return np.tanh(W @ h)
>>> def loss(W, x):
...     for _ in range(3):
...         x = layer(x, W)
...     return np.sum(x**2)
>>> W, x = np.eye(2) * 0.5, np.array([1.0, -2.0])
>>> np.allclose(cr.gradient(loss, W, x)[0], cr.gradient(lambda W, x: loss(W, x), W, x)[0])
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from .api import DEFAULT_ENGINE, _reverse_engine
from .core import NoTangent, Tangent, ZeroTangent, iszero, rrule, unthunk
from .core.active import ActiveValue, current_engine
from .core.ruled_calls import holds_engine_values


class Checkpointed:
    """``f`` as ``checkpoint`` returns it: a call runs ``f``, and reverse mode recomputes its
    intermediates in the pullback instead of keeping them (see the module docstring)."""

    def __init__(self, f: Callable):
        if not callable(f):
            raise TypeError(f"checkpoint: {f!r} is not callable")
        self.f = f
        functools.update_wrapper(self, f)

    def __call__(self, /, *args, **kwargs):
        for value in (*args, *kwargs.values()):
            if isinstance(value, ActiveValue):  # an engine's values: it runs the call through the rule
                out = value.call_by_rule(self, args, kwargs)
                if out is not NotImplemented:
                    return out
                break
        return self.f(*args, **kwargs)

    def __get__(self, obj, owner=None):
        """As a method (``@cr.checkpoint`` on ``def __call__(self, h)``): the checkpoint of the method
        bound to ``obj``."""
        if obj is None:
            return self
        return Checkpointed(self.f.__get__(obj, owner))

    def __repr__(self) -> str:
        return f"checkpoint({getattr(self.f, '__qualname__', self.f)!r})"


def checkpoint(f: Callable) -> Checkpointed:
    """``f`` wrapped so that reverse mode keeps only its arguments and recomputes the rest in the
    pullback: less memory for one more forward pass of ``f``. Use it as a decorator or on a
    closure; ``f`` must give the same values when run again.

    >>> import numpy as np, chainrules as cr
    >>> step = cr.checkpoint(lambda x: np.sin(x) * x)
    >>> round(float(cr.gradient(lambda x: step(step(x)), 0.5)[0]), 6)
    0.431821
    """
    return Checkpointed(f)


def _wrapper_tangent(c: Checkpointed, df) -> Tangent | NoTangent:
    """The tangent of the wrapper from the tangent of ``f`` (what a closure captured)."""
    if iszero(df) or isinstance(unthunk(df), NoTangent):
        return NoTangent()
    return Tangent[Checkpointed](f=df)


@rrule.register(Checkpointed)
def rrule_checkpointed(c: Checkpointed, /, *args, **kwargs):
    # the engine differentiating now, kept for the pullback (a tape's reverse pass runs after it
    # has stopped recording); a direct call of the rule recomputes with the default engine
    engine = current_engine() or _reverse_engine(DEFAULT_ENGINE).pullback_full
    if any(map(holds_engine_values, (c.f, *args, *kwargs.values()))):
        # another engine's values (a tape's, differentiating this gradient): f runs as the engine
        # runs it, calling the rules of what f calls, whose bodies that engine would differentiate
        y = engine(c.f, *args, **kwargs)[0]
    else:
        y = c.f(*args, **kwargs)

    def checkpointed_pullback(dy):
        _, back = engine(c.f, *args, **kwargs)  # f's forward pass again, now with its pullbacks
        df, *dargs = back(dy)
        return (_wrapper_tangent(c, df), *dargs)

    return y, checkpointed_pullback


@rrule.register(checkpoint)
def rrule_checkpoint(f, /):
    """Making the wrapper inside a differentiated function: ``f``'s tangent passes through it."""

    def checkpoint_pullback(dc):
        dc = unthunk(dc)
        if isinstance(dc, (ZeroTangent, NoTangent)):
            return NoTangent(), dc
        return NoTangent(), dc.f if isinstance(dc, Tangent) else dc

    return Checkpointed(f), checkpoint_pullback


__all__ = ["Checkpointed", "checkpoint"]
