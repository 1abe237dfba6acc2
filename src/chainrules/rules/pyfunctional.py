"""Rules for Python's higher-order functions and iteration: ``iter``, ``map``, ``zip``, ``enumerate``,
``filter``, ``reversed``, ``functools.reduce``, ``itertools.accumulate`` and the views
``dict.items``/``values``/``keys``; making and calling a ``functools.partial``, and
``functools.wraps``/``update_wrapper`` (a decorator's wrapper, given the wrapped function's name).

A user callable inside ``map``/``reduce``/``accumulate`` is differentiated by its rule if it
has one, else by the engine that is running (``chainrules.rrule_via_ad``), once per element.

``map`` and friends return lazy iterators in Python. Under differentiation they return an
``Iterated``: an iterator over values computed when the call is made, which remembers the
values and where each came from, so that cotangents can flow back element by element.
Consuming one with ``list``, ``tuple``, ``sum``, ``sorted``, ``min``, ``max``, ``next``,
``dict`` or another of these functions has a rule here too; the cotangent of an ``Iterated`` is
a list with one cotangent per element. Iterables whose length is unknown (generators of other
libraries, infinite iterators) are refused with ``NoRuleError`` unless a sized iterable bounds
them, because computing their values eagerly could change what the program does. An object of
the user's class whose ``__iter__`` gives its values is iterated by that method, which the running
engine differentiates (``iterates_by_its_class``).

Every pullback here takes a batch of cotangents (a leading batch axis on each value's, for a
reverse-mode Jacobian in one sweep) as it takes one: the cotangents pass through to where the
values came from. Those that call a user callable hand the batch to each call's pullback, and
decline it (``decline_batch``) where that pullback takes one cotangent at a time.

>>> import math, chainrules as cr
>>> y, back = cr.rrule(map, math.sin, [0.0, 1.0])
>>> list(y) == [math.sin(0.0), math.sin(1.0)]
True
>>> back([1.0, 1.0])[2] == cr.Tangent[list](1.0, math.cos(1.0))
True
"""

from __future__ import annotations

import builtins
import functools
import itertools
import operator
import types

import numpy as np

from ..core import (
    AbstractZero,
    NoRuleError,
    NoTangent,
    Tangent,
    ZeroTangent,
    callable_name,
    carries_batch,
    decline_batch,
    is_array_of_rows,
    rows_cotangent,
    rrule,
    rrule_via_ad,
    unthunk,
)
from ..core.accumulation import accumulate as _accumulate
from ..core.active import current_engine
from ..core.errors import is_internal_file, is_library, user_location
from .operators import match_arg, match_entry

_NO = NoTangent()
_ZERO = ZeroTangent()


class Iterated:
    """An iterator over values computed eagerly by a rule (``map``, ``zip``, ...)."""

    __slots__ = ("items", "position", "origin")

    def __init__(self, items: list, origin: str):
        self.items = items
        self.position = 0
        self.origin = origin

    def __iter__(self):
        return self

    def __next__(self):
        if self.position >= len(self.items):
            raise StopIteration
        self.position += 1
        return self.items[self.position - 1]

    def __length_hint__(self) -> int:
        return len(self.items) - self.position

    def remaining(self) -> list:
        """The values not consumed yet; consumes them."""
        rest = self.items[self.position :]
        self.position = len(self.items)
        return rest

    def __repr__(self) -> str:
        return f"<{self.origin} iterator, {len(self.items) - self.position} values left>"


# ----- elements of iterables and their cotangents ---------------------------------------------

_DISCRETE = (str, bytes, bytearray, range, dict, set, frozenset)


def _sized(xs) -> bool:
    return isinstance(xs, (tuple, list, Iterated, *_DISCRETE)) or is_array_of_rows(xs)


def _elements(f, xs, limit: int | None = None) -> tuple[list, object]:
    """The values of the iterable ``xs`` and what its cotangent is built against."""
    if isinstance(xs, (tuple, list)):
        return list(xs), ("seq", xs)
    if is_array_of_rows(xs):
        return list(xs), ("array", xs)
    if isinstance(xs, Iterated):
        start = xs.position
        return xs.remaining(), ("iterated", start, len(xs.items))
    if isinstance(xs, _DISCRETE):
        return list(xs), ("discrete",)
    if iterates_by_its_class(xs):
        return _by_its_class(f, xs)
    if limit is not None:
        return list(itertools.islice(xs, limit)), ("discrete",)
    raise NoRuleError(
        f,
        (xs,),
        location=user_location(),
        reason="its length is unknown; pass a list, tuple or array (e.g. build a list first)",
    )


def iterates_by_its_class(xs) -> bool:
    """Whether iterating over ``xs`` runs the user's code of its class (``__iter__``, or
    ``__getitem__`` where it has no ``__iter__``), whose values only that code gives, or a
    library's ``__iter__`` that has a rule (numpy.polynomial's series). A namedtuple is iterated as
    the tuple it is; the other classes of libraries (an ``enum``) and of chainrules (an engine's
    values) are not the user's.

    >>> class Bag:
    ...     def __iter__(self):
    ...         return iter([1.0, 2.0])
    >>> iterates_by_its_class(Bag()), iterates_by_its_class((1.0, 2.0))
    (True, False)
    """
    cls = type(xs)
    method = cls.__iter__ if hasattr(cls, "__iter__") else getattr(cls, "__getitem__", None)
    if not isinstance(method, types.FunctionType):
        return False
    filename = method.__code__.co_filename
    if is_library(filename):
        return rrule.lookup(method, (xs,)) is not None
    return not is_internal_file(filename)


def _by_its_class(f, xs) -> tuple[list, object]:
    """The values of ``xs``, which its class's ``__iter__`` gives: the method is differentiated (by
    its rule, else by the running engine), and must give them in an iterator the rules made
    (``iter`` of a list, tuple or array; ``map``, ``zip``...), whose cotangent its pullback takes
    back to ``xs``."""
    cls = type(xs)
    if not hasattr(cls, "__iter__"):  # the sequence protocol: xs[0], xs[1], ... until an IndexError
        raise NoRuleError(
            f,
            (xs,),
            location=user_location(),
            reason=f"a {cls.__name__} is iterated by its __getitem__ until an IndexError, so its length is unknown; "
            "give its class an __iter__ (return iter() of a list or tuple), or index it over a range",
        )
    it, back = _pullback_of(cls.__iter__, xs)
    if not isinstance(it, Iterated):
        what = "the object itself (its __next__ is not differentiated)" if it is xs else f"a {type(it).__name__}"
        raise NoRuleError(
            cls.__iter__,
            (xs,),
            location=user_location(),
            reason=f"it returns {what}, whose values cannot be followed back to the {cls.__name__}; "
            "return iter() of a list, tuple or array",
        )
    start = it.position
    return it.remaining(), ("method", back, start, len(it.items))


def _entries(d, n: int) -> list:
    """``n`` per-element cotangents from the cotangent of a sequence (zeros pass through)."""
    d = unthunk(d)
    if isinstance(d, AbstractZero):
        return [_ZERO] * n
    if isinstance(d, Tangent):
        backing = d.backing
        items = list(backing) if isinstance(backing, tuple) else [backing.get(k, _ZERO) for k in d.primal_type._fields]
    elif isinstance(d, np.ndarray):
        items = list(d)
    else:
        items = list(d)
    if len(items) != n:
        raise ValueError(f"a cotangent of {len(items)} elements for {n} values")
    return items


def _cotangent(layout, ds: list):
    """The cotangent of an iterable argument from its elements' cotangents."""
    ds = [unthunk(d) for d in ds]
    kind = layout[0]
    if kind == "discrete":
        return _NO
    if all(isinstance(d, AbstractZero) for d in ds):
        return _ZERO
    if kind == "seq":
        xs = layout[1]
        P = type(xs)
        if isinstance(xs, tuple) and hasattr(P, "_fields"):
            return Tangent[P](**dict(zip(P._fields, ds)))
        return Tangent[P](*ds)
    if kind == "array":
        return rows_cotangent(layout[1], ds)
    if kind == "method":  # its __iter__'s pullback takes the cotangent of the iterator it returned
        _, back, start, total = layout
        return back(_iterated_cotangent(start, total, ds))[1]
    _, start, total = layout
    return _iterated_cotangent(start, total, ds)


def _add_function_tangent(df, owned: bool, d):
    """Accumulate the callable's tangents over its calls; it stays ``NoTangent`` if every call's is."""
    if isinstance(d, NoTangent):
        return df, owned
    return _accumulate(_ZERO if isinstance(df, NoTangent) else df, owned, d)


def _pullback_of(f, *args, **kwargs):
    """``(y, pullback)`` of a user callable: its rule, else the running engine's transformation.

    A pullback that takes one cotangent at a time declines a batch (``decline_batch``): a rule
    not registered ``batched=True`` here, an engine's transformation by itself. The rules that
    call user callables (``map``, ``reduce``, ``accumulate``, a ``functools.partial``) hand a
    batch of cotangents to each call's pullback as it is, so they take one exactly when these do.
    """
    rule = rrule.lookup(f, args)
    if rule is not None:
        if not getattr(rule, "batched", False):
            decline_batch()
        return rule(*args, **kwargs)
    y, back = rrule_via_ad(f, *args, **kwargs)
    if getattr(back, "batched", True) is False:  # the tape's pullback of a function with a structured output
        decline_batch()
    return y, back


def later_pullbacks():
    """``_pullback_of`` for a rule's pullback, which must differentiate a user callable at points
    the primal did not see (an ODE's adjoint at the solver's times): the engine running now is kept,
    as the reverse pass may run after it stopped (checkpointing's pullback does the same)."""
    engine = current_engine()

    def pullback_of(f, *args):
        rule = rrule.lookup(f, args)
        if rule is not None:
            return rule(*args)
        if engine is None:
            return rrule_via_ad(f, *args)  # (no engine: its error)
        return engine(f, *args)

    return pullback_of


# ----- iter, map, zip, enumerate, filter, reversed ---------------------------------------------


@rrule.register(builtins.iter, batched=True)  # the cotangents, or batches of them, pass through
def rrule_iter(xs, *sentinel):
    """``iter(xs)``: an iterator over the values of ``xs``, whose cotangents go back to it; an object
    of the user's class gives them by its own ``__iter__``, differentiated."""
    if sentinel:
        raise NoRuleError(
            iter, (xs, *sentinel), location=user_location(), reason="it calls a function until the sentinel comes"
        )
    if isinstance(xs, Iterated):  # (an iterator is its own)
        return xs, _iter_of_iterated_pullback
    items, layout = _elements(iter, xs)

    def iter_pullback(dy):
        return _NO, _cotangent(layout, _entries(dy, len(items)))

    return Iterated(items, "iter"), iter_pullback


def _iter_of_iterated_pullback(dy):
    return _NO, dy


@rrule.register(builtins.map, batched=True)  # each element's pullback takes the batch, or declines it
def rrule_map(f, *iterables):
    """``map(f, *iterables)``: ``f`` is differentiated once per element."""
    sized = [len(_elements_len(xs)) for xs in iterables if _sized(xs)]
    limit = min(sized) if sized else None
    columns, layouts = zip(*(_elements(map, xs, limit) for xs in iterables)) if iterables else ((), ())
    n = min((len(c) for c in columns), default=0)
    results = [_pullback_of(f, *(c[i] for c in columns)) for i in range(n)]
    y = Iterated([r[0] for r in results], "map")
    backs = [r[1] for r in results]

    def map_pullback(dy):
        ds = _entries(dy, n)
        df, owned = _NO, False
        dcols = [[_ZERO] * len(c) for c in columns]
        for i in range(n - 1, -1, -1):
            if isinstance(unthunk(ds[i]), AbstractZero):
                continue
            d = backs[i](ds[i])
            df, owned = _add_function_tangent(df, owned, d[0])
            for k in range(len(columns)):
                dcols[k][i] = d[k + 1]
        return (_NO, df, *(_cotangent(lay, dc) for lay, dc in zip(layouts, dcols)))

    return y, map_pullback


def _elements_len(xs):
    """Something whose ``len`` is the number of values ``xs`` will give (xs is sized)."""
    if isinstance(xs, Iterated):
        return range(len(xs.items) - xs.position)
    return xs


@rrule.register(builtins.zip, batched=True)  # elements' cotangents pass through as they come
def rrule_zip(*iterables, strict: bool = False):
    """``zip(*iterables)``: each tuple's cotangent goes back to its elements."""
    sized = [len(_elements_len(xs)) for xs in iterables if _sized(xs)]
    limit = min(sized) if sized else None
    if iterables and limit is None:
        raise NoRuleError(zip, iterables, location=user_location(), reason="none of the iterables has a known length")
    columns, layouts = zip(*(_elements(zip, xs, limit) for xs in iterables)) if iterables else ((), ())
    rows = list(builtins.zip(*columns, strict=strict))
    n = len(rows)

    def zip_pullback(dy):
        ds = _entries(dy, n)
        dcols = [[_ZERO] * len(c) for c in columns]
        for i, d in enumerate(ds):
            d = unthunk(d)
            if isinstance(d, AbstractZero):
                continue
            parts = list(d.backing) if isinstance(d, Tangent) else list(d)
            for k, part in enumerate(parts):
                dcols[k][i] = part
        return (_NO, *(_cotangent(lay, dc) for lay, dc in zip(layouts, dcols)))

    return Iterated(rows, "zip"), zip_pullback


@rrule.register(builtins.enumerate, batched=True)
def rrule_enumerate(xs, *start, **kwargs):
    """``enumerate(xs[, start])``: the index carries no cotangent, the element's goes back to ``xs``."""
    items, layout = _elements(enumerate, xs)
    n = len(items)

    def enumerate_pullback(dy):
        ds = _entries(dy, n)
        parts = []
        for d in ds:
            d = unthunk(d)
            parts.append(d if isinstance(d, AbstractZero) else (list(d.backing) if isinstance(d, Tangent) else d)[1])
        return (_NO, _cotangent(layout, parts), *((_NO,) * len(start)))

    return Iterated(list(builtins.enumerate(items, *start, **kwargs)), "enumerate"), enumerate_pullback


@rrule.register(builtins.filter, batched=True)  # the cotangents, or batches of them, pass through
def rrule_filter(f, xs):
    """``filter(f, xs)``: the predicate selects (no derivative flows through it)."""
    items, layout = _elements(filter, xs)
    keep = [i for i, x in builtins.enumerate(items) if (bool(x) if f is None else f(x))]

    def filter_pullback(dy):
        ds = _entries(dy, len(keep))
        full = [_ZERO] * len(items)
        for i, d in zip(keep, ds):
            full[i] = d
        return _NO, _NO, _cotangent(layout, full)

    return Iterated([items[i] for i in keep], "filter"), filter_pullback


@rrule.register(builtins.reversed, batched=True)
def rrule_reversed(xs):
    """``reversed(xs)``: the cotangents go back in the opposite order."""
    items, layout = _elements(reversed, xs)

    def reversed_pullback(dy):
        return _NO, _cotangent(layout, _entries(dy, len(items))[::-1])

    return Iterated(items[::-1], "reversed"), reversed_pullback


# ----- iterating over a dict -----------------------------------------------------------------------


def _dict_iteration_rule(method, origin: str):
    def rrule_dict_view(d: dict):
        keys = list(d)
        values = [d[k] for k in keys]
        items = {"items": list(zip(keys, values)), "values": values, "keys": keys}[origin]

        def dict_view_pullback(dy):
            if origin == "keys":
                return _NO, _NO
            entries = {}
            for k, e in zip(keys, _entries(dy, len(keys))):
                e = unthunk(e)
                if origin == "items" and not isinstance(e, AbstractZero):
                    e = (list(e.backing) if isinstance(e, Tangent) else list(e))[1]
                if not isinstance(unthunk(e), AbstractZero):
                    entries[k] = e
            return _NO, (Tangent[dict](entries) if entries else _ZERO)

        return Iterated(items, f"dict.{origin}"), dict_view_pullback

    rrule_dict_view.__qualname__ = f"rrule_dict_{origin}"
    rrule.register(method, batched=True)(rrule_dict_view)


# `for k, v in d.items()`: the views of a dict, iterated under differentiation
_dict_iteration_rule(dict.items, "items")
_dict_iteration_rule(dict.values, "values")
_dict_iteration_rule(dict.keys, "keys")


# ----- folds -----------------------------------------------------------------------------------

_NOTHING = object()


@rrule.register(functools.reduce, batched=True)  # as map: each call's pullback takes the batch, or declines
def rrule_reduce(f, xs, *initial):
    """``functools.reduce(f, xs[, initial])``: a chain of ``f`` calls, pulled back in reverse."""
    items, layout = _elements(functools.reduce, xs)
    if initial:
        acc, steps = initial[0], items
    elif items:
        acc, steps = items[0], items[1:]
    else:
        raise TypeError("reduce() of empty iterable with no initial value")
    backs = []
    for x in steps:
        acc, back = _pullback_of(f, acc, x)
        backs.append(back)
    offset = 0 if initial else 1

    def reduce_pullback(dy):
        df, owned = _NO, False
        ds = [_ZERO] * len(items)
        dacc = dy
        for i in range(len(backs) - 1, -1, -1):
            if isinstance(unthunk(dacc), AbstractZero):
                break
            d = backs[i](dacc)
            df, owned = _add_function_tangent(df, owned, d[0])
            dacc, ds[i + offset] = d[1], d[2]
        if initial:
            return _NO, df, _cotangent(layout, ds), dacc
        ds[0] = dacc  # the first element started the chain
        return _NO, df, _cotangent(layout, ds)

    return acc, reduce_pullback


@rrule.register(itertools.accumulate, batched=True)
def rrule_accumulate(xs, *func, initial=None):
    """``itertools.accumulate(xs, func, initial=...)``: running results, each from the previous.

    ``initial`` is a keyword argument, so (as for every rule) it gets no cotangent."""
    f = func[0] if func and func[0] is not None else operator.add
    items, layout = _elements(itertools.accumulate, xs)
    outputs, backs = [], []
    if initial is not None:
        acc = initial
        outputs.append(acc)
        steps = items
    elif items:
        acc = items[0]
        outputs.append(acc)
        steps = items[1:]
    else:
        steps = []
    for x in steps:
        acc, back = _pullback_of(f, acc, x)
        outputs.append(acc)
        backs.append(back)
    offset = 0 if initial is not None else 1

    def accumulate_pullback(dy):
        douts = _entries(dy, len(outputs))
        df, owned = _NO, False
        ds = [_ZERO] * len(items)
        dacc, dacc_owned = douts[-1] if douts else _ZERO, False
        for i in range(len(backs) - 1, -1, -1):
            d = backs[i](dacc)
            df, owned = _add_function_tangent(df, owned, d[0])
            ds[i + offset] = d[2]
            dacc, dacc_owned = _accumulate(d[1], False, douts[i])
        if initial is None and items:
            ds[0] = dacc
        return (_NO, _cotangent(layout, ds), *((df,) if func else ()))

    return Iterated(outputs, "accumulate"), accumulate_pullback


# ----- consuming an Iterated -------------------------------------------------------------------


def _consume(it: Iterated):
    start = it.position
    return it.remaining(), start, len(it.items)


def _iterated_cotangent(start: int, total: int, ds: list):
    if all(isinstance(unthunk(d), AbstractZero) for d in ds):
        return _ZERO
    return [_ZERO] * start + list(ds) + [_ZERO] * (total - start - len(ds))


def _container_rule(P: type):
    def rrule_from_iterated(it: Iterated):
        items, start, total = _consume(it)

        def from_iterated_pullback(dy):
            return _NO, _iterated_cotangent(start, total, _entries(dy, len(items)))

        return P(items), from_iterated_pullback

    rrule_from_iterated.__qualname__ = f"rrule_{P.__name__}_of_iterated"
    rrule.register(P, Iterated, functor=False, batched=True)(rrule_from_iterated)


_container_rule(list)
_container_rule(tuple)


@rrule.register(builtins.sum, Iterated, batched=True)
def rrule_sum_iterated(it: Iterated, *start):
    """``sum`` of an ``Iterated``: every value (and ``start``) gets the output's cotangent."""
    items, first, total = _consume(it)
    y = builtins.sum(items, *start)

    def sum_iterated_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, *((dy,) * len(start)))
        batch = carries_batch(y, dy)  # each value (and start) gets it, summed over the axes it was broadcast along
        ds = [match_entry(x, dy, batch) for x in items]
        return (_NO, _iterated_cotangent(first, total, ds), *(match_arg(s, dy, batch) for s in start))

    return y, sum_iterated_pullback


def _selection_rule(pick):
    def rrule_pick_iterated(it: Iterated, *, key=None, default=_NOTHING):
        items, first, total = _consume(it)
        if not items:
            if default is _NOTHING:
                raise ValueError(f"{pick.__name__}() arg is an empty sequence")
            return default, lambda dy: (_NO, _ZERO)
        keys = [x if key is None else key(x) for x in items]
        best = 0
        for i in range(1, len(items)):  # the first of equal values wins, as in Python
            if (keys[i] < keys[best]) if pick is builtins.min else (keys[i] > keys[best]):
                best = i

        def pick_iterated_pullback(dy):
            ds = [_ZERO] * len(items)
            ds[best] = dy
            return _NO, _iterated_cotangent(first, total, ds)

        return items[best], pick_iterated_pullback

    rrule_pick_iterated.__qualname__ = f"rrule_{pick.__name__}_of_iterated"
    rrule.register(pick, Iterated, batched=True)(rrule_pick_iterated)


_selection_rule(builtins.min)
_selection_rule(builtins.max)


@rrule.register(builtins.sorted, Iterated, batched=True)
def rrule_sorted_iterated(it: Iterated, *, key=None, reverse: bool = False):
    """``sorted`` of an ``Iterated``: each value's cotangent comes from its sorted position."""
    items, first, total = _consume(it)
    order = sorted(range(len(items)), key=lambda i: items[i] if key is None else key(items[i]), reverse=reverse)

    def sorted_iterated_pullback(dy):
        ds = [_ZERO] * len(items)
        for position, d in zip(order, _entries(dy, len(items))):
            ds[position] = d
        return _NO, _iterated_cotangent(first, total, ds)

    return [items[i] for i in order], sorted_iterated_pullback


@rrule.register(builtins.next, Iterated, batched=True)
def rrule_next_iterated(it: Iterated, *default):
    """``next`` of an ``Iterated``: the value's cotangent goes to its position."""
    position, total = it.position, len(it.items)
    if position >= total:
        if default:
            return default[0], lambda dy: (_NO, _ZERO, dy)
        raise StopIteration
    y = next(it)

    def next_iterated_pullback(dy):
        ds = [_ZERO] * total
        ds[position] = dy
        return (_NO, _iterated_cotangent(0, total, ds), *((_ZERO,) if default else ()))

    return y, next_iterated_pullback


@rrule.register(builtins.dict, Iterated, functor=False, batched=True)
def rrule_dict_iterated(it: Iterated):
    """``dict`` of an ``Iterated`` of pairs (``dict(zip(keys, values))``)."""
    items, first, total = _consume(it)
    y = dict(items)
    last = {k: i for i, (k, _) in builtins.enumerate(items)}

    def dict_iterated_pullback(dy):
        dy = unthunk(dy)
        ds = []
        for i, (k, _) in builtins.enumerate(items):
            d = _ZERO if isinstance(dy, AbstractZero) or last[k] != i else _field(dy, k)
            ds.append(_ZERO if isinstance(unthunk(d), AbstractZero) else Tangent[tuple](_NO, d))
        return _NO, _iterated_cotangent(first, total, ds)

    return y, dict_iterated_pullback


def _field(d, k):
    if isinstance(d, Tangent):
        return d[k]
    return d.get(k, _ZERO)


# ----- functools.partial -----------------------------------------------------------------------

_CONSTANT = (int, bool, str, bytes, type(None), type, np.dtype, slice, range, np.integer, np.bool_)


def _constant(x) -> bool:
    """Whether ``x`` can carry no derivative: integers, strings, types, options (and tuples,
    lists and dicts of them). Anything else (numbers, arrays, objects, functions, which may
    capture numbers) may be a value being differentiated."""
    if isinstance(x, _CONSTANT):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "biu"
    if isinstance(x, (tuple, list)):
        return all(map(_constant, x))
    if isinstance(x, dict):
        return all(map(_constant, x.values()))
    return False


def _positional_keywords(f, positional: tuple, keywords: dict, moved: set) -> tuple[tuple, dict, list]:
    """``f(*positional, **keywords)`` with the keywords named in ``moved`` passed positionally
    where ``f``'s signature allows (parameters in between get theirs or their defaults):
    ``(positional, keywords left, names moved in order)``. Those that cannot move stay keywords."""
    import inspect

    if not moved:
        return positional, keywords, []
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return positional, keywords, []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    slots = [p for p in parameters if p.kind in kinds][len(positional) :]
    extra, names, left = [], [], dict(keywords)
    for p in slots:
        if not moved.intersection(left):
            break
        if p.name in left and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            extra.append(left.pop(p.name))
            names.append(p.name)
        elif p.default is not inspect.Parameter.empty:
            extra.append(p.default)
            names.append(None)  # a default, passed explicitly
        else:
            break
    while names and names[-1] is None:  # no trailing defaults
        names.pop()
        extra.pop()
    return (*positional, *extra), left, names


def _call_tangent(dfunc, dstored: list, dkeywords: dict):
    """The tangent of a ``functools.partial`` from those of its function, arguments and keywords."""
    parts = [dfunc, *dstored, *dkeywords.values()]
    if all(isinstance(d, NoTangent) for d in parts):
        return _NO
    if all(isinstance(d, AbstractZero) for d in parts):
        return _ZERO
    fields = {}
    if not isinstance(dfunc, AbstractZero):
        fields["func"] = dfunc
    if not all(isinstance(d, AbstractZero) for d in dstored):
        fields["args"] = Tangent[tuple](*dstored)
    kept = {k: d for k, d in dkeywords.items() if not isinstance(d, AbstractZero)}
    if kept:
        fields["keywords"] = Tangent[dict](kept)
    return Tangent[functools.partial](**fields)


@rrule.register(functools.partial, batched=True)  # its function's pullback takes the batch, or declines it
def rrule_call_partial(p: functools.partial, *args, **kwargs):
    """Calling a ``functools.partial``: its function is differentiated (its rule, else the running
    engine) with the stored arguments first. The partial's tangent is a
    ``Tangent[functools.partial]`` with the cotangents of ``func``, ``args`` and ``keywords``.

    A stored keyword that may carry a derivative is passed positionally (its derivative is then
    known); one that cannot be (a keyword-only parameter) is refused with ``NoRuleError``.
    """
    stored = p.args
    keywords = {**p.keywords, **kwargs}
    carrying = {k for k, v in p.keywords.items() if k not in kwargs and not _constant(v)}
    positional, keywords, moved = _positional_keywords(p.func, (*stored, *args), keywords, carrying)
    left = sorted(carrying.intersection(keywords))
    if left:
        raise NoRuleError(
            p,
            args,
            location=user_location(),
            reason=f"its keyword argument(s) {', '.join(map(repr, left))} may carry a derivative, which "
            "a keyword cannot pass back; store them as positional arguments of the partial, or, for a "
            f"keyword-only parameter, call {callable_name(p.func)} in a lambda or def that passes them",
        )
    y, back = _pullback_of(p.func, *positional, **keywords)
    n_stored, n_args = len(stored), len(args)

    def call_partial_pullback(dy):
        d = back(dy)
        dfunc, dpositional = d[0], d[1:]
        dstored = [unthunk(x) for x in dpositional[:n_stored]]
        dargs = dpositional[n_stored : n_stored + n_args]
        moved_d = dpositional[n_stored + n_args :]
        dkeywords = {name: unthunk(x) for name, x in zip(moved, moved_d) if name in p.keywords}
        return (_call_tangent(unthunk(dfunc), dstored, dkeywords), *dargs)

    return y, call_partial_pullback


@rrule.register(functools.partial, functor=False, batched=True)
def rrule_make_partial(func, *args, **keywords):
    """``functools.partial(func, *args)``: the partial's tangent goes back to ``func`` and ``args``.
    (Keyword arguments get no cotangent, as for every rule.)"""
    y = functools.partial(func, *args, **keywords)
    n = len(args)

    def make_partial_pullback(dp):
        dp = unthunk(dp)
        if isinstance(dp, AbstractZero):
            return (_NO, dp, *((dp,) * n))
        dargs = unthunk(dp.args)
        dargs = (_ZERO,) * n if isinstance(dargs, AbstractZero) else tuple(dargs.backing)
        # functools.partial flattens a partial of a partial: its arguments come first
        inner = len(y.args) - n
        return (_NO, dp.func if inner == 0 else _partial_of(func, dp, inner), *dargs[inner:])

    return y, make_partial_pullback


def _partial_of(func: functools.partial, dp, inner: int):
    """The tangent of the inner partial ``func`` when ``functools.partial(func, ...)`` flattened it."""
    dargs = unthunk(dp.args)
    dstored = [_ZERO] * inner if isinstance(dargs, AbstractZero) else list(dargs.backing[:inner])
    dkeywords = unthunk(dp.keywords)
    kept = (
        {}
        if isinstance(dkeywords, AbstractZero)
        else {k: v for k, v in dkeywords.backing.items() if k in func.keywords}
    )
    return _call_tangent(unthunk(dp.func), dstored, kept)


# ----- functools.wraps -------------------------------------------------------------------------


@rrule.register(functools.update_wrapper, batched=True)  # cotangents pass through
def rrule_update_wrapper(wrapper, wrapped, *options, **keywords):
    """``functools.update_wrapper(wrapper, wrapped)`` (what ``@functools.wraps(wrapped)`` does):
    ``wrapper`` itself, given ``wrapped``'s name and ``__wrapped__``. What ``wrapper`` computes
    with ``wrapped`` comes back through ``wrapper``'s own tangent (the variables it captures);
    ``wrapped`` gets what was read through ``wrapper.__wrapped__``."""
    y = functools.update_wrapper(wrapper, wrapped, *options, **keywords)

    def update_wrapper_pullback(dy):
        dy = unthunk(dy)
        dwrapped = _field(dy, "__wrapped__") if isinstance(dy, Tangent) else _ZERO
        return (_NO, dy, dwrapped, *((_NO,) * len(options)))

    return y, update_wrapper_pullback


@rrule.register(functools.wraps, batched=True)  # cotangents pass through
def rrule_wraps(wrapped, *options, **keywords):
    """``functools.wraps(wrapped)``: a ``functools.partial`` of ``update_wrapper`` that stores
    ``wrapped`` as a keyword; its cotangent (``Tangent[functools.partial]``) goes back to ``wrapped``.

    >>> import functools, chainrules as cr
    >>> def f(x):
    ...     return x
    >>> _, back = cr.rrule(functools.wraps, f)
    >>> dp = cr.Tangent[functools.partial](keywords=cr.Tangent[dict]({"wrapped": 2.0}))
    >>> back(dp)[1]
    2.0
    """
    y = functools.wraps(wrapped, *options, **keywords)

    def wraps_pullback(dp):
        dp = unthunk(dp)
        dkeywords = unthunk(dp.keywords) if isinstance(dp, Tangent) else dp
        dwrapped = _field(dkeywords, "wrapped") if isinstance(dkeywords, Tangent) else dkeywords
        return (_NO, dwrapped, *((_NO,) * len(options)))

    return y, wraps_pullback
