"""Values made of numbers and arrays held in tuples, lists, dicts, namedtuples, dataclasses and
objects with fields: their items, their leaves in a fixed order, and tangents shaped like them.

The engines and the API walk inputs and outputs this way to seed tangents and lay out Jacobians.
A *leaf* is what ``is_leaf(value, top)`` accepts (``top``: the value is the whole input, not a
part of a structure); the walks visit items in order (fields in declaration order).

>>> from collections import namedtuple
>>> Point = namedtuple("Point", "x y")
>>> leaves((1.0, Point(2.0, "a")), lambda v, top: isinstance(v, float))
[1.0, 2.0]
>>> tangent_like(Point(2.0, "a"), lambda v, top: isinstance(v, float), [0.5], None)
Tangent[Point](x=0.5, y=None)
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .tangents import (
    AbstractTangent,
    AbstractZero,
    Tangent,
    ZeroTangent,
    _is_namedtuple_type,
    _known_fields,
    object_fields,
    unthunk,
)

_ZERO = ZeroTangent()


def is_structure(x) -> bool:
    """Whether ``x`` holds values: a tuple, list or dict, or an object with fields (a tangent is not
    a structure of primal values, nor are arrays, strings, classes and plain callables)."""
    if isinstance(x, (tuple, list, dict)):
        return True
    if isinstance(x, (str, bytes, np.ndarray, np.generic, type, AbstractTangent)):
        return False
    if callable(x) and not hasattr(x, "__dict__"):
        return False
    return dataclasses.is_dataclass(x) or hasattr(x, "__dict__") or bool(getattr(type(x), "__slots__", ()))


def structure_items(x) -> dict | list:
    """The items of the structure ``x``: a list for tuples and lists, a dict by key or field name otherwise."""
    if isinstance(x, (tuple, list)) and not _is_namedtuple_type(type(x)):
        return list(x)
    if isinstance(x, dict):
        return dict(x)
    if _is_namedtuple_type(type(x)):  # (its fields: SciPy's result tuples' _asdict adds their other attributes)
        return dict(zip(x._fields, x))
    if dataclasses.is_dataclass(x):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    fields = _known_fields(type(x))
    return {k: getattr(x, k) for k in fields if hasattr(x, k)} if fields is not None else object_fields(x)


def item_tangents(t, x) -> dict | list:
    """The tangents of the items of the structure ``x`` from its tangent ``t`` (zeros where missing),
    laid out as ``structure_items(x)``: a list for tuples and lists, a dict otherwise."""
    t = unthunk(t)
    if isinstance(x, (tuple, list)) and not _is_namedtuple_type(type(x)):
        if isinstance(t, AbstractZero):
            return [_ZERO] * len(x)
        items = list(t.backing if isinstance(t, Tangent) else t)
        if len(items) != len(x):
            raise ValueError(f"a tangent with {len(items)} items for a {type(x).__name__} of {len(x)}")
        return items
    if isinstance(x, dict):
        backing = {} if isinstance(t, AbstractZero) else (t.backing if isinstance(t, Tangent) else t)
        return {k: backing.get(k, _ZERO) for k in x}
    names = x._fields if _is_namedtuple_type(type(x)) else list(structure_items(x))
    if isinstance(t, AbstractZero):
        return {k: _ZERO for k in names}
    if isinstance(t, Tangent):
        return {k: t[k] if isinstance(t.backing, dict) else t.backing[i] for i, k in enumerate(names)}
    if isinstance(t, dict):
        return {k: t.get(k, _ZERO) for k in names}
    if isinstance(t, tuple) and _is_namedtuple_type(type(x)):
        return dict(zip(names, t))
    raise TypeError(f"a {type(t).__name__} is not a tangent of a {type(x).__qualname__}")


def leaves(x, is_leaf, top: bool = True) -> list:
    """The leaves of ``x`` in order (parts that are neither leaves nor structures are skipped)."""
    if is_leaf(x, top):
        return [x]
    if not is_structure(x):
        return []
    items = structure_items(x)
    return [leaf for v in (items if isinstance(items, list) else items.values()) for leaf in leaves(v, is_leaf, False)]


def tangent_like(x, is_leaf, values: list, other, top: bool = True):
    """A tangent of ``x`` (``Tangent[P]`` for each structure) whose leaves take ``values`` in leaf
    order (consumed) and whose other parts are ``other``."""
    if is_leaf(x, top):
        return values.pop(0)
    if not is_structure(x):
        return other
    items = structure_items(x)
    if isinstance(items, list):
        return Tangent[type(x)](*(tangent_like(v, is_leaf, values, other, False) for v in items))
    if isinstance(x, dict):
        return Tangent[dict]({k: tangent_like(v, is_leaf, values, other, False) for k, v in items.items()})
    return Tangent[type(x)](**{k: tangent_like(v, is_leaf, values, other, False) for k, v in items.items()})


def with_fields(x, values: dict):
    """A copy of the object ``x`` with some fields replaced (``x`` itself is unchanged)."""
    new = copy.copy(x)
    for k, v in values.items():
        object.__setattr__(new, k, v)
    return new
