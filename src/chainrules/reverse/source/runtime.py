"""What generated code calls besides the dispatcher: structural cotangents and small helpers.

Tuples, lists, dicts, dataclasses, namedtuples and plain objects are the language's own
structures; splitting their cotangents into items, unpacking them, and making closures are
handled here, with ``Tangent[P]`` cotangents.
"""

from __future__ import annotations

import types
from numbers import Number

import numpy as np

from ...core.errors import UnsupportedSyntaxError
from ...core.projection import ProjectTo
from ...core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

NO = NoTangent()
ZERO = ZeroTangent()
Cell = types.CellType


# ----- splitting structural cotangents -------------------------------------------------------


def split(dt, n: int) -> tuple:
    """The cotangents of the ``n`` items of a tuple/list from the cotangent of the whole.

    >>> split(Tangent[tuple](1.0, ZERO), 2)
    (1.0, ZeroTangent())
    >>> split(ZERO, 2)
    (ZeroTangent(), ZeroTangent())
    """
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return (dt,) * n
    items = dt.backing if isinstance(dt, Tangent) else dt
    if isinstance(items, dict):  # a namedtuple's tangent has named fields
        fields = dt.primal_type._fields
        return tuple(items.get(k, ZERO) for k in fields)
    items = tuple(items)
    if len(items) != n:
        raise ValueError(f"a cotangent of {len(items)} items for a structure of {n}")
    return items


def field(dt, key):
    """The cotangent of item or field ``key`` from the cotangent of a dict or object."""
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return dt
    if isinstance(dt, Tangent):
        return dt[key] if type(dt).primal_type is dict else getattr(dt, key)
    if isinstance(dt, dict):
        return dt.get(key, ZERO)
    return dt[key]


def structural_tangent(primal, items: tuple):
    """``Tangent[type(primal)]`` of a tuple/list/namedtuple primal from its items' cotangents."""
    if all(isinstance(d, AbstractZero) for d in items):
        return ZERO
    P = type(primal)
    if isinstance(primal, tuple) and hasattr(P, "_fields"):
        return Tangent[P](**dict(zip(P._fields, items)))
    return Tangent[P](*items)


# ----- unpacking --------------------------------------------------------------------------------


def unpack(value, n: int, star: int | None):
    """``a, *b, c = value`` with a pullback: ``(items, pullback)``; ``pullback(d_items)`` gives
    the cotangent of ``value``."""
    items = list(value)
    if star is None:
        if len(items) != n:
            raise ValueError(f"cannot unpack {len(items)} values into {n} names")
        out = tuple(items)
        sizes = None
    else:
        after = n - star - 1
        if len(items) < n - 1:
            raise ValueError(f"cannot unpack {len(items)} values into {n - 1} or more names")
        middle = items[star : len(items) - after]
        out = (*items[:star], middle, *items[len(items) - after :])
        sizes = len(middle)
    if isinstance(value, (tuple, list)):
        template = value
    elif isinstance(value, np.ndarray):
        template = None
    else:
        template = items  # an iterator or other iterable: a list of cotangents

    def unpack_pullback(d_items):
        flat = list(d_items)
        if star is not None:
            middle_d = flat[star]
            middle_d = split(middle_d, sizes) if not isinstance(middle_d, list) else tuple(middle_d)
            flat = flat[:star] + list(middle_d) + flat[star + 1 :]
        if template is None:
            return _stack_rows(value, flat)
        if template is items and not isinstance(value, (tuple, list)):
            return flat
        return structural_tangent(template, tuple(flat))

    return out, unpack_pullback


def _stack_rows(array: np.ndarray, rows: list):
    if all(isinstance(unthunk(r), AbstractZero) for r in rows):
        return ZERO
    dtype = np.result_type(array.dtype, np.float64) if array.dtype.kind not in "fc" else array.dtype
    out = np.zeros(array.shape, dtype=dtype)
    for i, r in enumerate(rows):
        r = unthunk(r)
        if not isinstance(r, AbstractZero):
            out[i] += r
    return out


# ----- displays with * and ** ------------------------------------------------------------------


def _sequence_tangent(template, chunk: tuple):
    if isinstance(template, (tuple, list)):
        return structural_tangent(template, chunk)
    if isinstance(template, np.ndarray):
        return _stack_rows(template, list(chunk))
    return list(chunk)


def pack(kind: str, parts: tuple, starred: tuple):
    """A tuple or list display with ``*`` items: ``(value, pullback)``; ``pullback(dy)`` gives
    one cotangent per part (a starred part gets one for the whole iterable)."""
    items, layout = [], []
    for part, star in zip(parts, starred):
        if star:
            seq = list(part)
            items.extend(seq)
            layout.append((len(seq), part if isinstance(part, (tuple, list, np.ndarray)) else seq))
        else:
            items.append(part)
            layout.append(None)
    value = tuple(items) if kind == "tuple" else list(items)

    def pack_pullback(dy):
        d = split(dy, len(items))
        out, i = [], 0
        for entry in layout:
            if entry is None:
                out.append(d[i])
                i += 1
            else:
                size, template = entry
                out.append(_sequence_tangent(template, d[i : i + size]))
                i += size
        return tuple(out)

    return value, pack_pullback


def pack_dict(keys: tuple, values: tuple):
    """A dict display with ``**`` items (key None): ``(value, pullback)``, one cotangent per item;
    a key that a later item overrides gets none."""
    value: dict = {}
    source: dict = {}
    for i, (k, v) in enumerate(zip(keys, values)):
        for key in v if k is None else (k,):
            source[key] = i
        if k is None:
            value.update(v)
        else:
            value[k] = v

    def pack_dict_pullback(dy):
        out = []
        for i, (k, v) in enumerate(zip(keys, values)):
            if k is not None:
                out.append(field(dy, k) if source[k] == i else ZERO)
            else:
                mine = {key: field(dy, key) for key in v if source[key] == i}
                mine = {key: d for key, d in mine.items() if not isinstance(d, AbstractZero)}
                out.append(Tangent[dict](mine) if mine else ZERO)
        return tuple(out)

    return value, pack_dict_pullback


# ----- closures --------------------------------------------------------------------------------


def make_closure(code, globals_, name, defaults, kwdefaults, cells):
    """A nested function of the differentiated function, built from its original code object."""
    fn = types.FunctionType(code, globals_, name, defaults or None, tuple(cells) or None)
    if kwdefaults:
        fn.__kwdefaults__ = dict(kwdefaults)
    return fn


def closure_tangent(fn, names: tuple, values: tuple, tangents: tuple):
    """The tangent of the closure ``fn``: one field per captured variable (zero fields left out).

    A captured variable that holds ``fn`` itself (a recursive closure) contributes a tangent of
    ``fn``: it is added in, not nested as a field.
    """
    fields, own = {}, ZERO
    for name, value, tangent in zip(names, values, tangents):
        tangent = unthunk(tangent)
        if isinstance(tangent, AbstractZero):
            continue
        if value is fn:
            own = tangent if isinstance(own, AbstractZero) else own + tangent
        else:
            fields[name] = tangent
    result = Tangent[types.FunctionType](**fields) if fields else ZERO
    return result if isinstance(own, AbstractZero) else own + result


# ----- seeds and checks ------------------------------------------------------------------------


def project_real(dy):
    """A seed for a real scalar output: unthunked, real, a Python number (zeros pass)."""
    dy = unthunk(dy)
    if type(dy) is float or isinstance(dy, AbstractZero):
        return dy
    if isinstance(dy, Number) or (isinstance(dy, np.ndarray) and dy.ndim == 0) or isinstance(dy, np.generic):
        return ProjectTo(1.0)(dy)
    return dy


def integer_cotangent(d):
    """The cotangent of an integer argument: ``NoTangent`` when it is zero (the integer only
    counted), else the float derivative."""
    d = unthunk(d)
    return NO if isinstance(d, AbstractZero) else d


_MUTABLE = (np.ndarray, list, dict, set, bytearray)


def check_rebind(x, filename: str, line: int, col: int):
    """``x op= v`` rebinds ``x`` here; refuse when Python would have updated a mutable ``x`` in place."""
    if isinstance(x, _MUTABLE):
        raise UnsupportedSyntaxError(
            f"an augmented assignment updates the {type(x).__name__} in place, which is not supported here; "
            "write `x = x + ...`",
            filename,
            line,
            col,
        )
    return x
