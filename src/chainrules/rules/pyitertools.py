"""Rules for the functions of ``itertools`` that only rearrange what they are given: ``product``,
``chain`` (and ``chain.from_iterable``), ``pairwise``, ``combinations``,
``combinations_with_replacement``, ``permutations``, ``islice``, ``zip_longest`` and ``repeat``
with a count, and ``starmap``, which calls a function on each tuple.

One mechanism serves the rearrangements: the function runs on *slots* standing for the elements
of its iterable arguments, and what comes out says where every value came from, so the pullback
sends each element's cotangent back to its slot, adding those of an element used more than once
(``product(x, x)``). Like ``map`` and ``zip`` (``pyfunctional.py``), they return an ``Iterated``.

>>> import itertools, chainrules as cr
>>> y, back = cr.rrule(itertools.product, [1.0, 2.0], [3.0])
>>> list(y)
[(1.0, 3.0), (2.0, 3.0)]
>>> back([(1.0, 1.0), (0.5, 2.0)])[1:]
(Tangent[list](1.0, 0.5), Tangent[list](3.0))
"""

from __future__ import annotations

import itertools

from ..core import AbstractZero, NoRuleError, NoTangent, Tangent, ZeroTangent, rrule, unthunk
from ..core.accumulation import add
from ..core.errors import user_location
from .pyfunctional import Iterated, _add_function_tangent, _cotangent, _elements, _entries, _pullback_of

_NO = NoTangent()
_ZERO = ZeroTangent()


class _Slot:
    """Stands for element ``index`` of the ``arg``-th iterable argument while the function runs."""

    __slots__ = ("arg", "index")

    def __init__(self, arg: int, index: int):
        self.arg, self.index = arg, index


def _filled(structure, columns):
    """``structure`` (a slot, a tuple of them, or a constant such as a fill value) with the values."""
    if isinstance(structure, _Slot):
        return columns[structure.arg][structure.index]
    if type(structure) is tuple:
        return tuple(_filled(s, columns) for s in structure)
    return structure


def _send_back(structure, d, dcols) -> None:
    """Add the cotangent ``d`` of an output built as ``structure`` into the slots' cotangents."""
    d = unthunk(d)
    if isinstance(d, AbstractZero):
        return
    if isinstance(structure, _Slot):
        current = dcols[structure.arg][structure.index]
        dcols[structure.arg][structure.index] = d if isinstance(unthunk(current), AbstractZero) else add(current, d)
    elif type(structure) is tuple:
        parts = list(d.backing) if isinstance(d, Tangent) else list(d)
        for s, part in zip(structure, parts):
            _send_back(s, part, dcols)


def _rearrangement(f, iterable_positions):
    """The rule of ``f``, whose positional arguments at ``iterable_positions`` (all when None) are
    iterables of values and the others options (a length, a count)."""

    def rrule_rearrangement(*args, **kwargs):
        positions = range(len(args)) if iterable_positions is None else iterable_positions
        columns, layouts, stand_ins = {}, {}, list(args)
        for k in positions:
            if k < len(args):
                columns[k], layouts[k] = _elements(f, args[k])
                stand_ins[k] = [_Slot(k, i) for i in range(len(columns[k]))]
        structures = list(f(*stand_ins, **kwargs))
        outputs = [_filled(s, columns) for s in structures]

        def rearrangement_pullback(dy):
            dcols = {k: [_ZERO] * len(c) for k, c in columns.items()}
            for structure, d in zip(structures, _entries(dy, len(structures))):
                _send_back(structure, d, dcols)
            return (_NO, *(_cotangent(layouts[k], dcols[k]) if k in columns else _NO for k in range(len(args))))

        rearrangement_pullback.__qualname__ = f"{f.__name__}_pullback"
        return Iterated(outputs, f.__name__), rearrangement_pullback

    rrule_rearrangement.__qualname__ = f"rrule_{f.__name__}"
    rrule.register(f, batched=True)(rrule_rearrangement)  # cotangents pass through as they come, added


for _f in (itertools.product, itertools.chain, itertools.zip_longest):
    _rearrangement(_f, None)
for _f in (
    itertools.pairwise,
    itertools.combinations,
    itertools.combinations_with_replacement,
    itertools.permutations,
    itertools.islice,
):
    _rearrangement(_f, (0,))


@rrule.register(itertools.repeat)
def rrule_repeat(x, *times, **kwargs):
    """``repeat(x, times)``: ``times`` copies of ``x``, whose cotangents are added."""
    if not times and "times" not in kwargs:
        raise NoRuleError(
            itertools.repeat,
            (x,),
            location=user_location(),
            reason="it repeats a value being differentiated without end; give the count, repeat(x, n)",
        )
    outputs = list(itertools.repeat(x, *times, **kwargs))

    def repeat_pullback(dy):
        total = _ZERO
        for d in _entries(dy, len(outputs)):
            if not isinstance(unthunk(d), AbstractZero):
                total = d if isinstance(unthunk(total), AbstractZero) else add(total, d)
        return (_NO, total, *(_NO for _ in times))

    return Iterated(outputs, "repeat"), repeat_pullback


@rrule.register(itertools.chain.from_iterable)
def rrule_chain_from_iterable(xss):
    """``chain.from_iterable(xss)`` is ``chain(*xss)``, whose cotangents go back to ``xss``'s elements."""
    inner, layout = _elements(itertools.chain.from_iterable, xss)
    y, chain_back = rrule(itertools.chain, *inner)

    def chain_from_iterable_pullback(dy):
        return _NO, _cotangent(layout, list(chain_back(dy)[1:]))

    return y, chain_from_iterable_pullback


@rrule.register(itertools.starmap)
def rrule_starmap(f, xs):
    """``starmap(f, xs)``: ``f(*args)`` for each tuple ``args`` of ``xs``, each call differentiated."""
    items, layout = _elements(itertools.starmap, xs)
    results = [_pullback_of(f, *args) for args in items]

    def starmap_pullback(dy):
        df, owned = _NO, False
        dargs = [_ZERO] * len(items)
        for i, d in enumerate(_entries(dy, len(items))):
            if isinstance(unthunk(d), AbstractZero):
                continue
            grads = results[i][1](d)
            df, owned = _add_function_tangent(df, owned, grads[0])
            dargs[i] = _cotangent(_elements(itertools.starmap, items[i])[1], list(grads[1:]))
        return _NO, df, _cotangent(layout, dargs)

    return Iterated([r[0] for r in results], "starmap"), starmap_pullback
