"""Rules for Python's builtins and its structural containers (tuples, lists, dicts, objects).

- Numbers: ``abs``, ``pow``, ``float``, ``complex``, ``divmod``.
- Selection and reduction over a sequence or over several arguments: ``min``, ``max``, ``sum``,
  ``sorted``. ``min``/``max``/``sorted`` only *select*: the cotangent goes back to the chosen
  elements, and none flows through a ``key`` function. On ties the first element in order wins
  (which is the element Python itself returns).
- Containers: ``tuple(xs)``, ``list(xs)``, ``dict(...)`` convert between a container and the
  structural tangents ``Tangent[tuple]``/``Tangent[list]``/``Tangent[dict]``; ``d.get(key,
  default)`` gives ``Tangent[dict]`` or the default its cotangent; ``getattr(obj, name)`` gives
  ``Tangent[type(obj)](name=dy)``.
- Counting, testing, printing and converting to integers or text carry no derivative
  (``non_differentiable``).

The iterable arguments accepted are tuples, lists and NumPy arrays (a sequence of rows), and
dicts, strings and ranges (whose elements carry no tangent). Generators and other iterators
raise ``NoRuleError``: the cotangent of an element they produced has nowhere to go, so
differentiating through them is the engine's job (the source engine rewrites them).

The pullbacks take a batch of cotangents (a leading batch axis on a number's or an array's, a
structure of such batches for a container's) as they take one, each entry matched row by row.

>>> import chainrules as cr
>>> y, back = cr.rrule(max, [1.0, 3.0, 2.0])
>>> y, back(1.0)
(3.0, (NoTangent(), Tangent[list](ZeroTangent(), 1.0, ZeroTangent())))
>>> cr.rrule(sorted, [3.0, 1.0])[1]([10.0, 20.0])
(NoTangent(), Tangent[list](20.0, 10.0))
"""

from __future__ import annotations

import copy
import inspect
import operator
import types
from numbers import Number

import numpy as np

from ..core import (
    AbstractZero,
    ActiveValue,
    NoRuleError,
    NoTangent,
    Tangent,
    ZeroTangent,
    add,
    carries_batch,
    frule,
    input_matcher,
    is_array_of_rows,
    match_input,
    match_input_batch,
    non_differentiable,
    rrule,
    rrule_via_ad,
    unthunk,
    user_location,
)
from ..core.active import stood_for
from ..core.tangents import _rebuild as _rebuild_tangent
from .operators import (
    dict_entry,
    dict_tangent,
    entries_carry_batch,
    entry_cotangent,
    frule_abs,
    frule_getitem,
    frule_pow,
    match_arg,
    match_entry,
    real_cotangent,
    rrule_abs,
    rrule_getitem,
    rrule_pow,
    seq_entries,
    seq_tangent,
    zero_for,
)

_NO = NoTangent()
_ZERO = ZeroTangent()
_REAL = frozenset((float, int))
#: containers whose elements carry no tangent when iterated (dict keys, characters, integers)
_DISCRETE_ITERABLES = (str, bytes, bytearray, range, dict)


def _elements(f, xs):
    """The elements of the iterable argument ``xs`` of ``f`` as a sequence, or ``None`` when they
    carry no tangent. Raises ``NoRuleError`` for iterables that cannot take a cotangent back."""
    if isinstance(xs, (tuple, list)):
        return xs
    if is_array_of_rows(xs):
        return list(xs)
    if isinstance(xs, _DISCRETE_ITERABLES):
        return None
    raise NoRuleError(
        f,
        (xs,),
        location=user_location(),
        reason="the rule takes a tuple, list or array; build one first, e.g. with a list comprehension",
    )


def _arg_cotangent(x, dy):
    """``match_arg`` for the cotangent of an argument ``x`` that is itself the output, or for a
    batch of them (a leading batch axis)."""
    dy = unthunk(dy)
    return match_arg(x, dy, carries_batch(x, dy))


def _nondiff_pullback(n: int):
    def nondiff_pullback(dy):
        return (_NO,) * (n + 1)

    return nondiff_pullback


# ----- numbers ----------------------------------------------------------------------------------

rrule.register(abs, batched=True)(rrule_abs)  # the operator's rule: its batched flag is the function's own
frule.register(abs, batched=True)(frule_abs)


@rrule.register(pow, batched=True)  # the operator's rule, which takes a batch
def rrule_builtin_pow(base, exp, *mod):
    """Two-argument ``pow`` is ``**``; modular ``pow(b, e, m)`` is integer-only and has no derivative."""
    if mod and mod[0] is not None:
        return pow(base, exp, *mod), _nondiff_pullback(3)
    y, pow_pullback = rrule_pow(base, exp)
    if not mod:
        return y, pow_pullback

    def builtin_pow_pullback(dy):
        return (*pow_pullback(dy), _NO)

    return y, builtin_pow_pullback


@frule.register(pow, batched=True)
def frule_builtin_pow(tangents, base, exp, *mod):
    if mod and mod[0] is not None:
        return pow(base, exp, *mod), _NO
    return frule_pow(tangents[:3], base, exp)


@rrule.register(float, functor=False, batched=True)
def rrule_float(*args):
    """``float(x)``: the identity on numbers (an int gets a float cotangent); a string has no tangent."""
    if not args or isinstance(args[0], (str, bytes, bytearray)):
        return float(*args), _nondiff_pullback(len(args))
    (x,) = args

    def float_pullback(dy):
        if type(x) in _REAL:
            return _NO, dy if type(dy) is float else real_cotangent(dy)
        dy = unthunk(dy)
        return _NO, input_matcher(x, dy)(x, dy)

    return float(x), float_pullback


@frule.register(float, functor=False, batched=True)
def frule_float(tangents, *args):
    if not args or isinstance(args[0], (str, bytes, bytearray)):
        return float(*args), _NO
    dx = tangents[1]
    return float(args[0]), float(dx) if isinstance(dx, np.floating) else dx  # a float's tangent is a float


def _complex(*args):
    """``complex(*args)``; for an engine's numbers (duals, tracked values, under nested
    differentiation), which ``complex()`` would convert, ``re + 1j * im``, which keeps them."""
    if any(isinstance(a, ActiveValue) for a in args):
        return args[0] + 1j * args[1] if len(args) == 2 else args[0] + 0j
    return complex(*args)


@rrule.register(complex, functor=False, batched=True)
def rrule_complex(*args):
    """``complex(re, im)`` is ``re + 1j * im``: its pullback multiplies by the conjugate of 1j."""
    if not args or isinstance(args[0], (str, bytes, bytearray)):
        return complex(*args), _nondiff_pullback(len(args))
    y = _complex(*args)

    def complex_pullback(dz):
        dz = unthunk(dz)
        if isinstance(dz, AbstractZero):
            return (_NO,) + (dz,) * len(args)
        match = input_matcher(y, dz)
        if match is match_input:
            dz = _complex(dz)
        if len(args) == 1:
            return _NO, match(args[0], dz)
        return _NO, match(args[0], dz), match(args[1], -1j * dz)

    return y, complex_pullback


@frule.register(complex, functor=False, batched=True)
def frule_complex(tangents, *args):
    if not args or isinstance(args[0], (str, bytes, bytearray)):
        return complex(*args), _NO
    dz = tangents[1]
    if len(args) == 2:
        dz = dz + 1j * tangents[2]
    return _complex(*args), dz


@rrule.register(divmod, batched=True)
def rrule_divmod(a, b):
    """``divmod(a, b) = (a // b, a % b)``: the quotient is piecewise constant, the remainder is ``mod``."""
    q, r = divmod(a, b)

    def divmod_pullback(dy):
        _, dr = seq_entries(dy, 2)
        dr = unthunk(dr)
        if isinstance(dr, AbstractZero):
            return _NO, zero_for(a), zero_for(b)
        match = input_matcher(r, dr)
        return _NO, match(a, dr), match(b, -dr * q)

    return (q, r), divmod_pullback


@frule.register(divmod)
def frule_divmod(tangents, a, b):
    _, da, db = tangents
    q, r = divmod(a, b)
    return (q, r), Tangent[tuple](zero_for(q), da - q * db)


# ----- selection: min, max, sorted ----------------------------------------------------------------


def _index_of(items, y) -> int:
    """The first position of the object ``y`` that ``min``/``max`` returned (ties: first wins)."""
    for i, v in enumerate(items):
        if v is y:
            return i
    raise AssertionError(f"the selected element {y!r} is not among the elements")  # min/max return an element


# min/max of two Python reals: the pullback only depends on which one was picked (and on whether
# the other is an int, which gets NoTangent), so it needs no closure.
def _first_pullback(dy):
    return _NO, (dy if type(dy) is float else real_cotangent(dy)), _ZERO


def _second_pullback(dy):
    return _NO, _ZERO, (dy if type(dy) is float else real_cotangent(dy))


def _first_of_int_pullback(dy):
    return _NO, (dy if type(dy) is float else real_cotangent(dy)), _NO


def _second_of_int_pullback(dy):
    return _NO, _NO, (dy if type(dy) is float else real_cotangent(dy))


def _minmax_rules(pick):
    name = pick.__name__
    strictly_better = operator.lt if pick is min else operator.gt

    def rrule_minmax(*args, key=None, **default):
        if len(args) > 1:
            if len(args) == 2 and type(args[0]) in _REAL and type(args[1]) in _REAL and key is None and not default:
                a, b = args
                if strictly_better(b, a):  # exactly Python's choice: the first wins on ties
                    return b, _second_pullback if type(a) is float else _second_of_int_pullback
                return a, _first_pullback if type(b) is float else _first_of_int_pullback
            i = _index_of(args, pick(*args, key=key, **default))
            y = args[i]

            def minmax_pullback(dy):
                out = [_NO, *map(zero_for, args)]
                out[i + 1] = _arg_cotangent(y, dy)
                return tuple(out)

            return y, minmax_pullback
        (xs,) = args
        items = _elements(pick, xs)
        if items is None:
            return pick(xs, key=key, **default), _nondiff_pullback(1)
        if not items:  # the default, a keyword argument: no tangent to give back
            return pick(items, key=key, **default), _nondiff_pullback(1)
        i = _index_of(items, pick(items, key=key))
        y = items[i]
        n = len(items)

        def minmax_pullback(dy):
            entries = [_ZERO] * n
            entries[i] = dy = unthunk(dy)
            return _NO, seq_tangent(xs, entries, carries_batch(y, dy))

        return y, minmax_pullback

    def frule_minmax(tangents, *args, key=None, **default):
        if len(args) > 1:
            i = _index_of(args, pick(*args, key=key))
            return args[i], tangents[1 + i]
        (xs,) = args
        items = _elements(pick, xs)
        if not items:
            return pick(xs if items is None else items, key=key, **default), _NO
        i = _index_of(items, pick(items, key=key))
        return items[i], seq_entries(tangents[1], len(items))[i]

    rrule_minmax.__qualname__ = f"rrule_{name}"
    frule_minmax.__qualname__ = f"frule_{name}"
    rrule.register(pick, batched=True)(rrule_minmax)
    frule.register(pick)(frule_minmax)


_minmax_rules(min)
_minmax_rules(max)


def _sort_order(items, key, reverse: bool) -> list[int]:
    """The permutation ``sorted`` applies: stable, and with ``reverse`` equal keys keep their order too."""
    at = items.__getitem__
    return sorted(range(len(items)), key=at if key is None else (lambda i: key(at(i))), reverse=reverse)


@rrule.register(sorted, batched=True)  # each entry's cotangent, or batch of them, goes back to its element
def rrule_sorted(xs, *, key=None, reverse=False):
    """The sorted list; the cotangent of its j-th entry goes back to the element that landed there."""
    items = _elements(sorted, xs)
    if items is None:
        return sorted(xs, key=key, reverse=reverse), _nondiff_pullback(1)
    order = _sort_order(items, key, reverse)
    n = len(order)
    y = [items[i] for i in order]

    def sorted_pullback(dy):
        entries = [_ZERO] * n
        given = seq_entries(dy, n)
        for j, e in enumerate(given):
            entries[order[j]] = e
        return _NO, seq_tangent(xs, entries, entries_carry_batch(y, given))

    return y, sorted_pullback


@frule.register(sorted)
def frule_sorted(tangents, xs, *, key=None, reverse=False):
    items = _elements(sorted, xs)
    if items is None:
        return sorted(xs, key=key, reverse=reverse), _NO
    order = _sort_order(items, key, reverse)
    y = [items[i] for i in order]
    entries = seq_entries(tangents[1], len(items))
    return y, seq_tangent(y, [entries[i] for i in order])


# ----- sum ----------------------------------------------------------------------------------------


@rrule.register(sum, batched=True)
def rrule_sum(xs, *start, **start_kw):
    """``sum(xs, start)``: every element (and a positional ``start``) gets the output's cotangent."""
    items = _elements(sum, xs)
    if items is None:
        return sum(xs, *start, **start_kw), _nondiff_pullback(1 + len(start))
    y = sum(items, *start, **start_kw)
    if isinstance(y, (tuple, list)):
        return y, _sum_concat_pullback(xs, items, start, start_kw)
    n = len(items)

    def sum_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy) + (dy,) * len(start)
        batch = carries_batch(y, dy)  # each element (and start) gets the batch, summed over its broadcast axes
        return (_NO, seq_tangent(xs, (dy,) * n, batch), *(match_arg(s, dy, batch) for s in start))

    return y, sum_pullback


def _sum_concat_pullback(xs, items, start, start_kw):
    """``sum(lists, [])`` concatenates: each piece gets its slice of the output's cotangent."""
    first = start[0] if start else start_kw["start"]
    sizes = [len(first), *map(len, items)]

    def sum_concat_pullback(dy):
        entries = seq_entries(dy, sum(sizes))
        batch = entries_carry_batch([v for piece in (first, *items) for v in piece], entries)
        pieces, at = [], 0
        for piece, size in zip([first, *items], sizes):
            pieces.append(seq_tangent(piece, entries[at : at + size], batch))
            at += size
        dstart = (pieces[0],) if start else ()  # a keyword start gets no cotangent
        return (_NO, seq_tangent(xs, pieces[1:]), *dstart)

    return sum_concat_pullback


@frule.register(sum)
def frule_sum(tangents, xs, *start, **start_kw):
    items = _elements(sum, xs)
    if items is None:
        return sum(xs, *start, **start_kw), _NO
    y = sum(items, *start, **start_kw)
    if isinstance(y, (tuple, list)):  # concatenation
        first = start[0] if start else start_kw["start"]
        entries = list(seq_entries(tangents[2], len(first))) if start else [_ZERO] * len(first)
        for piece, dpiece in zip(items, seq_entries(tangents[1], len(items))):
            entries += seq_entries(dpiece, len(piece))
        return y, seq_tangent(y, entries)
    dy = tangents[2] if start else _ZERO
    for e in seq_entries(tangents[1], len(items)):
        dy = dy + e
    return y, dy


# ----- container constructors -----------------------------------------------------------------


def _sequence_rules(P: type):
    def rrule_sequence(*args):
        if not args:
            return P(), _nondiff_pullback(0)
        (xs,) = args
        items = _elements(P, xs)
        if items is None:
            return P(xs), _nondiff_pullback(1)
        n = len(items)
        y = P(items)

        def sequence_pullback(dy):
            entries = seq_entries(dy, n)
            return _NO, seq_tangent(xs, entries, entries_carry_batch(y, entries))

        return y, sequence_pullback

    def frule_sequence(tangents, *args):
        if not args:
            return P(), _NO
        (xs,) = args
        items = _elements(P, xs)
        y = P(xs if items is None else items)
        if items is None:
            return y, _NO
        return y, seq_tangent(y, seq_entries(tangents[1], len(items)))

    rrule_sequence.__qualname__ = f"rrule_{P.__name__}"
    frule_sequence.__qualname__ = f"frule_{P.__name__}"
    rrule.register(P, functor=False, batched=True)(rrule_sequence)
    frule.register(P, functor=False)(frule_sequence)


_sequence_rules(tuple)
_sequence_rules(list)


# copy.copy and copy.deepcopy (a parameter dict copied before an update): the copy holds the
# values again, so its cotangent, shaped like it, is the original's; an engine's value copies
# itself (a dual array as np.copy does)
def _copy_rules(copier):
    def rrule_copy(x, *memo):
        def copy_pullback(dy):
            return (_NO, dy, *(_NO for _ in memo))

        return copier(x, *memo), copy_pullback

    def frule_copy(tangents, x, *memo):
        return copier(x, *memo), tangents[1]

    rrule_copy.__qualname__ = f"rrule_{copier.__name__}"
    frule_copy.__qualname__ = f"frule_{copier.__name__}"
    # (the tape and forward mode may run copier's own code: their values copy themselves)
    rrule_copy.body_takes_engine_values = frule_copy.body_takes_engine_values = True
    rrule.register(copier, batched=True)(rrule_copy)
    frule.register(copier)(frule_copy)


_copy_rules(copy.copy)
_copy_rules(copy.deepcopy)


def _dict_entries(dt) -> dict:
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return {}
    if isinstance(dt, Tangent):
        return dict(dt.backing)
    return dict(dt)


def _dict_sources(args, kwargs) -> tuple[list, dict]:
    """For ``dict(*args, **kwargs)``: the pairs of the positional argument, and for each key of the
    result where its value came from (an index into the pairs, or ``None`` for a keyword)."""
    pairs = []
    if args:
        (src,) = args
        if isinstance(src, dict):
            pairs = list(src.items())
        elif isinstance(src, (tuple, list)):
            pairs = [tuple(p) for p in src]
        else:
            _elements(dict, src)  # raises for an iterator
    source = {k: i for i, (k, _) in enumerate(pairs)}  # a later duplicate key wins, as in dict()
    source.update(dict.fromkeys(kwargs))
    return pairs, source


@rrule.register(dict, functor=False, batched=True)
def rrule_dict(*args, **kwargs):
    """``dict(mapping)`` or ``dict(pairs)``: each value's cotangent goes back to where it came from.

    Values passed as keyword arguments get no cotangent (a rule returns none for keywords).
    """
    pairs, source = _dict_sources(args, kwargs)
    y = dict(*args, **kwargs)
    if not args:
        return y, _nondiff_pullback(0)
    (src,) = args

    def dict_pullback(dy):
        dvals = _dict_entries(dy)
        picked = [_ZERO] * len(pairs)
        for k, i in source.items():
            if i is not None:
                picked[i] = dvals.get(k, _ZERO)
        batch = entries_carry_batch([v for _, v in pairs], picked)
        if isinstance(src, dict):
            return _NO, dict_tangent({k: match_entry(v, d, batch) for (k, v), d in zip(pairs, picked)})
        return _NO, seq_tangent(src, [seq_tangent(pair, (_NO, d), batch) for pair, d in zip(src, picked)])

    return y, dict_pullback


@frule.register(dict, functor=False)
def frule_dict(tangents, *args, **kwargs):
    pairs, source = _dict_sources(args, kwargs)
    y = dict(*args, **kwargs)
    if not args:
        return y, _ZERO
    (src,) = args
    if isinstance(src, dict):
        dsrc = _dict_entries(tangents[1])
        dvalues = [dsrc.get(k, _ZERO) for k, _ in pairs]
    else:
        dvalues = [seq_entries(d, 2)[1] for d in seq_entries(tangents[1], len(pairs))]
    return y, dict_tangent({k: dvalues[i] for k, i in source.items() if i is not None})


@rrule.register(dict.get, batched=True)
def rrule_dict_get(d, key, *default):
    """``d.get(key[, default])``: the cotangent goes to ``d[key]``, or to the default when the key is missing."""
    if key not in d:
        y = default[0] if default else None

        def dict_default_pullback(dy):
            return (_NO, _ZERO, _NO, *(_arg_cotangent(y, dy) for _ in default))

        return y, dict_default_pullback
    y = d[key]
    unused = (_ZERO,) * len(default)

    def dict_get_pullback(dy):
        return (_NO, dict_tangent({key: entry_cotangent(y, unthunk(dy))}), _NO, *unused)

    return y, dict_get_pullback


@frule.register(dict.get)
def frule_dict_get(tangents, d, key, *default):
    if key not in d:
        return (default[0], tangents[3]) if default else (None, _NO)
    return d[key], dict_entry(tangents[1], key)


# ----- attributes --------------------------------------------------------------------------------

_NO_STRUCTURE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
_FUNCTION_TANGENT = Tangent[types.FunctionType]
_METHODS = (
    types.FunctionType,
    staticmethod,
    classmethod,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
_MISSING = object()
#: (class, name) -> (kind, the attribute as the class defines it, Tangent[class]): classified once
#: per pair, as inspect.getattr_static costs microseconds and getattr runs for every field access.
_CLASS_ATTRIBUTES: dict[tuple[type, str], tuple] = {}


def _classify(cls: type, name: str) -> tuple:
    if issubclass(cls, _NO_STRUCTURE):
        return "opaque", None, None
    if issubclass(cls, Number) and not issubclass(cls, bool) or issubclass(cls, ActiveValue):
        # an engine's stand-in for a number (a dual, a tracked value of an outer engine) reads
        # .real and .imag as the number inside does, never through the stand-in's own code
        return "number", None, None
    static = inspect.getattr_static(cls, name, _MISSING)
    if issubclass(cls, tuple) and name in getattr(cls, "_fields", ()):
        return "field", static, Tangent[cls]  # (also where the class reads it with a property: SciPy's result tuples)
    if isinstance(static, property) and static.fget is not None:  # a data descriptor: wins over __dict__
        return "property", static, None
    if static is _MISSING:
        kind = "missing"
    elif isinstance(static, _METHODS):
        kind = "method"
    elif isinstance(static, types.GetSetDescriptorType):
        kind = "getset"
    else:
        kind = "field"
    plain_tuple = issubclass(cls, (tuple, list)) and not hasattr(cls, "_fields")
    return kind, static, (None if plain_tuple else Tangent[cls])


def _attribute_source(obj, name: str, default: tuple):
    """Where ``getattr(obj, name[, default])`` gets its value, as ``(kind, getter, Tangent[type(obj)])``.

    Kinds: 'opaque' (a module, class or function), 'number' (``.real``, ``.imag``, ...),
    'computed' (Python code computes it: a property's getter or the class's ``__getattr__``, with
    its arguments in ``getter``), 'default', 'method', 'getset' (computed in C, like
    ``ndarray.shape``) and 'field' (a stored value).
    """
    cls = type(obj)
    try:
        kind, static, tangent_type = _CLASS_ATTRIBUTES[cls, name]
    except KeyError:
        kind, static, tangent_type = _CLASS_ATTRIBUTES[cls, name] = _classify(cls, name)
    if kind == "opaque" and cls is types.FunctionType and name in obj.__dict__:
        # set on the function (`__wrapped__`, by functools.wraps): a closure there may carry a derivative
        return "field", None, _FUNCTION_TANGENT
    if kind == "field" or kind == "opaque" or kind == "number":
        return kind, None, tangent_type
    if kind == "property":
        return "computed", (static.fget, (obj,)), tangent_type
    instance_dict = getattr(obj, "__dict__", None)
    if instance_dict is not None and name in instance_dict:
        return "field", None, tangent_type
    if kind == "missing":
        hook = inspect.getattr_static(cls, "__getattr__", _MISSING)
        if hook is not _MISSING and (not default or hasattr(obj, name)):
            return "computed", (hook, (obj, name)), tangent_type
        return "default", None, tangent_type
    return kind, None, tangent_type


def _is_discrete(value) -> bool:
    if isinstance(value, tuple):
        return all(_is_discrete(v) for v in value)
    return isinstance(value, (bool, int, str, bytes, type(None), np.dtype, type))


def _check_getset(obj, name: str, value) -> None:
    """A value computed in C is fine when it is discrete (a shape, a dtype); otherwise we cannot
    know how it depends on ``obj``, and say so."""
    if not _is_discrete(value):
        raise NoRuleError(
            getattr,
            (obj, name),
            location=user_location(),
            reason=f"{type(obj).__qualname__}.{name} is computed in C; register a rule for getattr typed on "
            f"{type(obj).__qualname__}",
        )


def _number_attribute_cotangent(obj, name: str, dy):
    """The cotangent of a number from that of its ``.real`` or ``.imag`` (z.imag = y for z = x + iy)."""
    dy = real_cotangent(dy)  # (a batch of a number's cotangents is a 1-D array: it stays one)
    if isinstance(dy, AbstractZero):
        return dy
    match = match_input_batch if np.ndim(dy) else match_input
    if name == "real":
        return match(obj, dy)
    if name == "imag" and np.iscomplexobj(obj):
        return match(obj, 1j * dy)
    return _ZERO


@rrule.register(getattr, batched=True)  # a field's cotangent, or a batch of them, goes into the object's
def rrule_getattr(obj, name, *default):
    """``getattr(obj, name[, default])``.

    A field's cotangent is ``Tangent[type(obj)](name=dy)``. A property (or a class's
    ``__getattr__``) is differentiated through its Python code by the active engine. A bound
    method's cotangent is taken to be that of its object (a ``Tangent`` of ``obj``'s type passes
    through). A module, class or function gets ``NoTangent``; ``.real``/``.imag`` of a number
    follow the complex convention; the default gets the cotangent when it is returned.
    """
    kind, getter, tangent_type = _attribute_source(obj, name, default)
    rest = (_NO,) * len(default)
    if kind == "computed":
        compute, compute_args = getter
        y, getter_pullback = rrule_via_ad(compute, *compute_args)

        def computed_attribute_pullback(dy):
            return (_NO, getter_pullback(dy)[1], _NO, *rest)

        return y, computed_attribute_pullback
    y = getattr(obj, name, *default)
    if kind == "opaque":
        return y, _nondiff_pullback(2 + len(default))
    if kind == "getset":
        _check_getset(obj, name, y)
        return y, _nondiff_pullback(2 + len(default))
    if kind == "field" and not default and tangent_type is not None:  # the common case, made short

        def field_pullback(dy):
            if type(dy) is not float or type(y) is not float:
                dy = entry_cotangent(y, unthunk(dy))
                if isinstance(dy, AbstractZero):
                    return _NO, _ZERO, _NO
            return _NO, _rebuild_tangent(tangent_type, {name: dy}), _NO  # one known field: nothing to check

        return y, field_pullback
    if kind == "default":

        def default_pullback(dy):
            return _NO, _ZERO, _NO, _arg_cotangent(y, dy)

        return y, default_pullback

    def getattr_pullback(dy):
        if kind == "number":
            return (_NO, _number_attribute_cotangent(obj, name, dy), _NO, *rest)
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, _ZERO, _NO, *rest)
        if kind == "method":
            tangent_of_obj = isinstance(dy, Tangent) and isinstance(obj, type(dy).primal_type)
            return (_NO, dy if tangent_of_obj else _ZERO, _NO, *rest)
        if type(dy) is not float or type(y) is not float:
            dy = entry_cotangent(y, dy)
            if isinstance(dy, AbstractZero):
                return (_NO, _ZERO, _NO, *rest)
        if tangent_type is None:  # an attribute of a tuple subclass: Tangent says what it takes instead
            return (_NO, Tangent[type(obj)](**{name: dy}), _NO, *rest)
        return (_NO, _rebuild_tangent(tangent_type, {name: dy}), _NO, *rest)  # one known field: nothing to check

    return y, getattr_pullback


@frule.register(getattr)
def frule_getattr(tangents, obj, name, *default):
    kind, _, _ = _attribute_source(obj, name, default)
    if kind == "computed":
        raise TypeError(
            f"frule(getattr): {type(obj).__qualname__}.{name} is computed by Python code (a property or "
            f"__getattr__); forward mode runs that code on dual numbers instead of pushing a tangent through getattr"
        )
    y = getattr(obj, name, *default)
    if kind == "getset":
        _check_getset(obj, name, y)
    if kind in ("opaque", "getset"):
        return y, _NO
    if kind == "default":
        return y, tangents[3]
    dobj = unthunk(tangents[1])
    if isinstance(dobj, AbstractZero) or kind == "method":
        return y, dobj
    if kind == "number":
        if name == "real":
            return y, np.real(dobj)
        return y, (np.imag(dobj) if name == "imag" else _ZERO)
    if isinstance(dobj, dict):
        return y, dobj.get(name, _ZERO)
    return y, dobj[name] if isinstance(dobj, Tangent) else getattr(dobj, name)  # (a field named `items` too)


# ----- operator.itemgetter and operator.attrgetter objects ---------------------------------------


def _getter_args(getter) -> tuple:
    return getter.__reduce__()[1]  # the keys or attribute names the getter was built with


def _rrule_attribute_path(obj, path: str):
    """``obj.a.b`` for the path ``"a.b"``: one getattr rule per step, pulled back in reverse."""
    pullbacks = []
    for name in path.split("."):
        obj, pullback = rrule_getattr(obj, name)
        pullbacks.append(pullback)

    def attribute_path_pullback(dy):
        for pullback in reversed(pullbacks):
            dy = pullback(dy)[1]
        return dy

    return obj, attribute_path_pullback


def _getter_rules(getter_type: type, rrule_one):
    """Rules for calling ``itemgetter(k1, ...)`` or ``attrgetter(n1, ...)``: each key's rule, and a
    tuple of results (with summed cotangents) for several keys."""

    def rrule_getter(getter, obj):
        keys = _getter_args(getter)
        results = [rrule_one(obj, k) for k in keys]
        if len(keys) == 1:
            y, pullback = results[0]

            def getter_pullback(dy):
                return _NO, pullback(dy)

            return y, getter_pullback

        def getter_pullback(dy):
            dobj = _ZERO
            for (_, pullback), d in zip(results, seq_entries(dy, len(keys))):
                dobj = add(dobj, pullback(d))
            return _NO, dobj

        return tuple(y for y, _ in results), getter_pullback

    rrule_getter.__qualname__ = f"rrule_{getter_type.__name__}"
    rrule.register(getter_type, batched=True)(rrule_getter)  # getitem's and getattr's rules decline themselves


def _rrule_item(xs, key):
    y, pullback = rrule_getitem(xs, key)
    return y, lambda dy: pullback(dy)[1]


_getter_rules(operator.itemgetter, _rrule_item)
_getter_rules(operator.attrgetter, _rrule_attribute_path)


@frule.register(operator.itemgetter)
def frule_itemgetter(tangents, getter, xs):
    keys = _getter_args(getter)
    pairs = [frule_getitem((_NO, tangents[1], _NO), xs, k) for k in keys]
    if len(keys) == 1:
        return pairs[0]
    return tuple(y for y, _ in pairs), Tangent[tuple](*(dy for _, dy in pairs))


@frule.register(operator.attrgetter)
def frule_attrgetter(tangents, getter, obj):
    names = _getter_args(getter)
    pairs = []
    for path in names:
        y, dy = obj, tangents[1]
        for name in path.split("."):
            y, dy = frule_getattr((_NO, dy, _NO), y, name)
        pairs.append((y, dy))
    if len(names) == 1:
        return pairs[0]
    return tuple(y for y, _ in pairs), Tangent[tuple](*(dy for _, dy in pairs))


# ----- no derivative ------------------------------------------------------------------------------


# isinstance of an engine's value is that of the plain value it stands for, as the user's code sees
# it (see ActiveValue.__class__): the source engine runs the user's isinstance through this rule
@rrule.register(isinstance)
def rrule_isinstance(obj, classes):
    return isinstance(stood_for(obj), classes), _isinstance_pullback


def _isinstance_pullback(dy):
    return _NO, _NO, _NO


@frule.register(isinstance)
def frule_isinstance(tangents, obj, classes):
    return isinstance(stood_for(obj), classes), NoTangent()


non_differentiable(
    round,
    int,
    bool,
    len,
    range,
    slice,
    issubclass,
    type,
    id,
    hash,
    str,
    repr,
    ascii,
    format,
    str.format,
    print,
    ord,
    chr,
    bin,
    oct,
    hex,
    callable,
    hasattr,
    all,
    any,
    # positions and counts of elements: integers, whatever the elements are
    list.index,
    tuple.index,
    list.count,
    tuple.count,
)
