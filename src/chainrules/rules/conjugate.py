"""Rules for the ``conjugate`` methods of Python and NumPy numbers.

``z.conjugate()`` on a Python ``complex`` or ``float`` calls ``complex.conjugate`` /
``float.conjugate``, and on a NumPy scalar ``np.generic.conjugate`` (or ``.conj``). These are
not the ufunc ``np.conjugate`` (whose rules are in ``rules/numpy/ufuncs.py``) and need rules of
their own. Conjugation is not holomorphic: its pushforward and its pullback are conjugation
itself, not a multiplication by a derivative. An integer's conjugate carries no derivative.

>>> import chainrules as cr
>>> y, back = cr.rrule(complex.conjugate, 1.0 + 2.0j)
>>> y, back(1.0j)
((1-2j), (NoTangent(), -1j))
"""

from __future__ import annotations

import numpy as np

from ..core import AbstractZero, NoTangent, conj, frule, match_input, non_differentiable, rrule, unthunk
from .numpy._util import match_output

_NO = NoTangent()


def _conjugate_rules(method) -> None:
    # x.conjugate() rather than method(x): an engine's stand-in for a number (a dual, a tracked
    # value of an outer differentiation) is not an instance of the method's class, and conjugates
    # itself through its own engine
    def rrule_conjugate_method(x):
        def conjugate_method_pullback(dy):
            return _NO, match_input(x, conj(unthunk(dy)))

        return x.conjugate(), conjugate_method_pullback

    def frule_conjugate_method(tangents, x):
        y = x.conjugate()
        dx = unthunk(tangents[1])
        return y, dx if isinstance(dx, AbstractZero) else match_output(y, conj(dx))

    rrule.register(method)(rrule_conjugate_method)
    frule.register(method, batched=True)(frule_conjugate_method)


for _method in (complex.conjugate, float.conjugate, np.generic.conjugate, np.generic.conj):
    _conjugate_rules(_method)

non_differentiable(int.conjugate)
