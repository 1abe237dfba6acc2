"""Rules for reading a field of a ``Tangent`` in code being differentiated.

A gradient taken inside a function (``cr.gradient(loss, params)`` of a dict, a dataclass or a
namedtuple) is a ``Tangent[P]``, and the function reads it as it reads ``params``:
``grads["w"]``, ``grads.position``, ``grads[0]``. The value read is the field; its cotangent is a
``Tangent[P]`` holding the cotangent at that field and zeros elsewhere, the same structure as the
gradient it came from (which the nested gradient's own rule pulls back).

>>> import numpy as np, chainrules as cr
>>> def penalty(w):
...     grads = cr.gradient(lambda p: np.sum(p["w"] ** 3), {"w": w})[0]
...     return np.sum(grads["w"])
>>> cr.gradient(penalty, np.array([1.0, 2.0]))
(array([ 6., 12.]),)
"""

from __future__ import annotations

from ..core import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk

_NO = NoTangent()


def _with_field(t: Tangent, key, dy) -> Tangent | ZeroTangent:
    """A tangent of ``t``'s type holding ``dy`` at ``key``, zero elsewhere."""
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return ZeroTangent()
    backing = t.backing
    if isinstance(backing, tuple):
        entries = [ZeroTangent()] * len(backing)
        picked = range(len(backing))[key]
        if isinstance(key, slice):
            for i, d in zip(picked, dy):
                entries[i] = d
        else:
            entries[picked] = dy
        return type(t)(*entries)
    if type(t).primal_type is dict:
        return type(t)({key: dy})
    return type(t)(**{key: dy})


@rrule.register(Tangent.__getitem__)
def rrule_tangent_getitem(t: Tangent, key):
    def tangent_getitem_pullback(dy):
        return _NO, _with_field(t, key, dy), _NO

    return t[key], tangent_getitem_pullback


@rrule.register(Tangent.__getattr__)
def rrule_tangent_getattr(t: Tangent, name: str):
    def tangent_getattr_pullback(dy):
        return _NO, _with_field(t, name, dy), _NO

    return getattr(t, name), tangent_getattr_pullback
