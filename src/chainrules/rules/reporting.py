"""The ``logging`` module's calls have no derivative: they only read the values they report.

A function that reports its progress calls ``logging.info("loss %.3f", loss)`` or a logger's
method with values being differentiated. Without rules, the source engine would refuse such a
call of library code (it may change its arguments, for all the engine knows); the tape and
forward mode simply run it, and its formatting prints the values.

>>> import logging
>>> import numpy as np
>>> import chainrules as cr
>>> def loss(x):
...     value = np.sum(x**2)
...     logging.getLogger("example").debug("loss %.3f", value)
...     return value
>>> cr.gradient(loss, np.array([1.0, 2.0]))
(array([2., 4.]),)
"""

from __future__ import annotations

import logging

from ..core import non_differentiable

_LEVELS = ("debug", "info", "warning", "error", "critical", "exception", "log")

non_differentiable(
    *(getattr(logging, name) for name in _LEVELS),
    *(getattr(logging.Logger, name) for name in _LEVELS),
    *(getattr(logging.LoggerAdapter, name) for name in _LEVELS),
)
