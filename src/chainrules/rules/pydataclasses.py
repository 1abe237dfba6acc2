"""Rules for ``dataclasses.asdict`` and ``dataclasses.astuple``.

Both rebuild a dataclass as plain containers, recursing into fields that are dataclasses,
namedtuples, lists, tuples and dicts, and deep-copying every other value. The output mirrors
the input item for item, in the same order, so one walk carries a tangent either way: the
pushforward from the input's structure to the output's, the pullback back.

>>> import dataclasses, chainrules as cr
>>> @dataclasses.dataclass
... class Point:
...     x: float
...     y: float
>>> d, back = cr.rrule(dataclasses.asdict, Point(1.0, 2.0))
>>> d
{'x': 1.0, 'y': 2.0}
>>> back({"x": 3.0, "y": 4.0})[1]
Tangent[Point](x=3.0, y=4.0)
"""

from __future__ import annotations

import dataclasses

from ..core import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from ..core.structures import item_tangents, structure_items
from ..core.tangents import _is_namedtuple_type

_NO = NoTangent()
_ZERO = ZeroTangent()


def _is_rebuilt(x) -> bool:
    """Whether ``asdict``/``astuple`` rebuild ``x`` (rather than deep-copy it as a value)."""
    return isinstance(x, (list, tuple, dict)) or (dataclasses.is_dataclass(x) and not isinstance(x, type))


def _structural(x, tangents: list):
    """The tangent of the container ``x`` whose items, in order, have ``tangents``."""
    if all(isinstance(t, AbstractZero) for t in tangents):
        return _ZERO
    P = type(x)
    if isinstance(x, (tuple, list)) and not _is_namedtuple_type(P):
        return Tangent[P](*tangents)
    if isinstance(x, dict):
        return Tangent[dict](dict(zip(x, tangents)))
    return Tangent[P](**dict(zip(structure_items(x), tangents)))


def _in_order(items) -> list:
    return list(items.values()) if isinstance(items, dict) else items


def _carry(source, target, t, f):
    """The tangent of ``target`` given the tangent ``t`` of ``source``, one being the other as
    ``f`` (``asdict`` or ``astuple``) rebuilt it: item for item, in order."""
    t = unthunk(t)
    if isinstance(t, AbstractZero) or not _is_rebuilt(source):
        return t
    values, items = _in_order(structure_items(source)), _in_order(item_tangents(t, source))
    targets = _in_order(structure_items(target)) if _is_rebuilt(target) else None
    if targets is None or len(targets) != len(items):
        raise TypeError(
            f"the rule for dataclasses.{f.__name__} follows the output of its default factory; "
            f"this one made a {type(target).__name__} of a {type(source).__name__}"
        )
    return _structural(target, [_carry(v, w, d, f) for v, w, d in zip(values, targets, items)])


def _rebuilding_rules(f):
    def rrule_rebuild(x, **factory):
        y = f(x, **factory)

        def rebuild_pullback(dy):
            return _NO, _carry(y, x, dy, f)

        return y, rebuild_pullback

    def frule_rebuild(tangents, x, **factory):
        y = f(x, **factory)
        return y, _carry(x, y, tangents[1], f)

    rrule_rebuild.__qualname__ = f"rrule_{f.__name__}"
    frule_rebuild.__qualname__ = f"frule_{f.__name__}"
    # (the tape and forward mode may run f's own code: their values deep-copy themselves)
    rrule_rebuild.body_takes_engine_values = frule_rebuild.body_takes_engine_values = True
    rrule.register(f)(rrule_rebuild)
    frule.register(f)(frule_rebuild)


_rebuilding_rules(dataclasses.asdict)
_rebuilding_rules(dataclasses.astuple)
