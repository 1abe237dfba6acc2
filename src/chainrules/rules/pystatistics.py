"""Rules for Python's ``statistics`` module on numbers: its means, spreads and order statistics.

Each function takes its data as a tuple, a list or a 1-d array of numbers (and ``fmean`` and
``harmonic_mean`` weights alike) and is, where it is smooth, ``dy = sum_i w_i dx_i`` plus the
partial of an option (``xbar``/``mu``, ``weights``, ``interval``):

- ``mean``, ``fmean``: ``w_i = 1/n``; with weights ``v``, ``v_i / V`` and ``(x_i - y) / V`` for ``v_i``
  (``V = sum v``);
- ``variance``, ``pvariance``: ``2 (x_i - c) / d`` with ``c`` the mean (or the ``xbar``/``mu`` given,
  whose partial is ``-2 sum (x_i - c) / d``) and ``d = n - 1`` (``n``); ``stdev``, ``pstdev``
  divide by ``2 s`` (zero where every entry equals ``c``, as ``np.std``'s rule);
- ``geometric_mean``: ``g / (n x_i)``; ``harmonic_mean``: ``h^2 v_i / (V x_i^2)`` and
  ``(h / V) (1 - h / x_i)`` for ``v_i`` (``v_i = 1`` without weights); a zero entry is refused;
- ``median_low``, ``median_high`` select one entry of a stable sort, ``median`` one or the mean of
  two; ``median_grouped`` moves with the entry it selects, and with ``interval`` by
  ``(n/2 - cf)/f - 1/2``.

The primal is the library's own result (it computes with exact fractions). On an engine's values
(a Hessian runs the rule on dual numbers) the library cannot convert them to fractions, so the
same formulas compute it. The tape and forward mode run the body of a function called inside the
one they differentiate on their values: the medians' bodies only sort and index, which they
differentiate; the others convert, and they refuse them at the user's line (the API's forward
mode runs the function as the source engine's primal does, with these rules).

>>> import statistics, chainrules as cr
>>> y, back = cr.rrule(statistics.variance, [1.0, 2.0, 3.0])
>>> y, back(1.0)[1]  # 2 (x_i - 2) / (3 - 1)
(1.0, Tangent[list](-1.0, 0.0, 1.0))
"""

from __future__ import annotations

import inspect
import statistics
from bisect import bisect_left, bisect_right

import numpy as np

from ..core import (
    AbstractZero,
    ActiveValue,
    NoDerivativeError,
    NoTangent,
    ZeroTangent,
    carries_batch,
    frule,
    rrule,
    unthunk,
)
from ..core.errors import at_user
from .operators import match_arg, seq_entries, seq_tangent
from .pybuiltins import _elements, _nondiff_pullback, _sort_order

_NO = NoTangent()
_ZERO = ZeroTangent()


def _mean(items, weights=None):
    n = len(items)
    if weights is None:
        return sum(items) / n, [1.0 / n] * n, None
    total = sum(weights)
    y = sum(v * x for v, x in zip(weights, items)) / total
    return y, [v / total for v in weights], [(x - y) / total for x in items]


def _spread(items, centre, divisor: int, root: bool):
    """``(value, data partials, centre partial)`` of the variance about ``centre`` (the mean where
    None) over ``divisor``, or of its square root."""
    c = sum(items) / len(items) if centre is None else centre
    deviations = [x - c for x in items]
    y = sum(d * d for d in deviations) / divisor
    scale = 2.0 / divisor
    if root:
        y = np.sqrt(y)
        scale = 0.0 if y == 0 else 1.0 / (divisor * y)  # (every deviation is 0 there)
    weights = [scale * d for d in deviations]
    return y, weights, None if centre is None else -scale * sum(deviations)


def _variance(items, xbar=None):
    return _spread(items, xbar, len(items) - 1, root=False)


def _stdev(items, xbar=None):
    return _spread(items, xbar, len(items) - 1, root=True)


def _pvariance(items, mu=None):
    return _spread(items, mu, len(items), root=False)


def _pstdev(items, mu=None):
    return _spread(items, mu, len(items), root=True)


def _refuse_zeros(f, items) -> None:
    if any(x == 0 for x in items):
        raise NoDerivativeError(
            f"statistics.{f.__name__}{at_user()}: an entry equal to 0 makes the mean 0, and it has no derivative there"
        )


def _geometric_mean(items):
    _refuse_zeros(statistics.geometric_mean, items)
    n = len(items)
    y = np.exp(sum(np.log(x) for x in items) / n)
    return y, [y / (n * x) for x in items], None


def _harmonic_mean(items, weights=None):
    _refuse_zeros(statistics.harmonic_mean, items)
    given = [1.0] * len(items) if weights is None else weights
    total = sum(given)
    y = total / sum(v / x for v, x in zip(given, items))
    data = [y * y * v / (total * x * x) for v, x in zip(given, items)]
    return y, data, None if weights is None else [y / total * (1.0 - y / x) for x in items]


def _pick(items, k: int):
    """The ``k``-th entry of a stable sort, and its position among ``items``."""
    i = _sort_order(items, None, False)[k]
    return items[i], i


def _median(items):
    n = len(items)
    if n % 2:
        return _median_low(items)
    order = _sort_order(items, None, False)
    weights = [0.0] * n
    weights[order[n // 2 - 1]] = weights[order[n // 2]] = 0.5
    return (items[order[n // 2 - 1]] + items[order[n // 2]]) / 2, weights, None


def _median_low(items):
    y, i = _pick(items, (len(items) - 1) // 2)
    return y, i, None


def _median_high(items):
    y, i = _pick(items, len(items) // 2)
    return y, i, None


def _median_grouped(items, interval=1.0):
    n = len(items)
    x, i = _pick(items, n // 2)
    ordered = sorted(items)
    below = bisect_left(ordered, x)
    share = (n / 2 - below) / (bisect_right(ordered, x, lo=below) - below)
    return x - interval / 2 + interval * share, i, share - 0.5


#: each function and the formula of ``(value, data partials, option partial)``: the partials a list of
#: one weight per entry, or the position of the one entry selected; the option's a number, a list
#: (weights) or None (not given)
_FORMULAS = {
    statistics.mean: _mean,
    statistics.fmean: _mean,
    statistics.variance: _variance,
    statistics.stdev: _stdev,
    statistics.pvariance: _pvariance,
    statistics.pstdev: _pstdev,
    statistics.geometric_mean: _geometric_mean,
    statistics.harmonic_mean: _harmonic_mean,
    statistics.median: _median,
    statistics.median_low: _median_low,
    statistics.median_high: _median_high,
    statistics.median_grouped: _median_grouped,
}


#: the functions whose own code is right on the tape's and forward mode's values: it sorts, indexes
#: and averages two entries, which those engines differentiate as it runs (the others convert the
#: values to fractions, and the engines refuse them at the user's line)
_SORTING_BODIES = frozenset({statistics.median, statistics.median_low, statistics.median_high})


def _is_engine_value(v) -> bool:
    return isinstance(v, ActiveValue) or (isinstance(v, (list, tuple)) and any(isinstance(e, ActiveValue) for e in v))


def _evaluate(f, data, args: tuple, kwargs: dict):
    """``(y, items, data partials, option partial)``, or None where the data carry no tangent."""
    items = _elements(f, data)
    if items is None:
        return None
    bound = inspect.signature(f).bind(data, *args, **kwargs)
    bound.apply_defaults()
    options = list(bound.arguments.values())[1:]
    option = options[0] if options else None
    if isinstance(option, (tuple, list)) or np.ndim(option) == 1:
        option = list(option)  # weights
    engine_values = _is_engine_value(option) or any(isinstance(x, ActiveValue) for x in items)
    y = None if engine_values else f(data, *args, **kwargs)  # (the library's errors first: too few entries)
    value, partials, option_partial = _FORMULAS[f](items, *([] if option is None else [option]))
    return value if engine_values else y, items, partials, option_partial


def _data_cotangent(data, n: int, partials, dy, batch: bool):
    if isinstance(partials, int):  # the one entry selected
        entries = [_ZERO] * n
        entries[partials] = dy
    else:
        entries = [dy * w for w in partials]
    return seq_tangent(data, entries, batch)


def _option_cotangent(option, partial, dy, batch: bool):
    if partial is None:
        return _NO if option is None else _ZERO
    if isinstance(partial, list):
        return seq_tangent(option, [dy * w for w in partial], batch)
    return match_arg(option, dy * partial, batch)


def _rrule_statistic(f, data, *args, **kwargs):
    evaluated = _evaluate(f, data, args, kwargs)
    if evaluated is None:
        return f(data, *args, **kwargs), _nondiff_pullback(1 + len(args))
    y, items, partials, option_partial = evaluated
    n = len(items)

    def statistic_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, *(dy for _ in args))
        batch = carries_batch(y, dy)
        return (
            _NO,
            _data_cotangent(data, n, partials, dy, batch),
            *(_option_cotangent(a, option_partial, dy, batch) for a in args),
        )

    return y, statistic_pullback


def _frule_statistic(f, tangents, data, *args, **kwargs):
    evaluated = _evaluate(f, data, args, kwargs)
    if evaluated is None:
        return f(data, *args, **kwargs), _NO
    y, items, partials, option_partial = evaluated
    entries = seq_entries(tangents[1], len(items))
    dy = entries[partials] if isinstance(partials, int) else _weighted(_ZERO, partials, entries)
    if args and option_partial is not None:
        dopt = unthunk(tangents[2])
        if isinstance(option_partial, list):
            dy = _weighted(dy, option_partial, seq_entries(dopt, len(option_partial)))
        elif not isinstance(dopt, AbstractZero):
            dy = dy + option_partial * dopt
    return y, dy


def _weighted(total, weights, entries):
    """``total + sum_i weights[i] entries[i]``, the zero entries left out."""
    for w, e in zip(weights, entries):
        if not isinstance(e, AbstractZero):
            total = total + w * e
    return total


def _register(f) -> None:
    def rrule_statistic(data, *args, **kwargs):
        return _rrule_statistic(f, data, *args, **kwargs)

    def frule_statistic(tangents, data, *args, **kwargs):
        return _frule_statistic(f, tangents, data, *args, **kwargs)

    rrule_statistic.__qualname__ = f"rrule_{f.__name__}"
    frule_statistic.__qualname__ = f"frule_{f.__name__}"
    if f in _SORTING_BODIES:
        rrule_statistic.body_takes_engine_values = frule_statistic.body_takes_engine_values = True
    rrule.register(f, batched=True)(rrule_statistic)
    frule.register(f)(frule_statistic)


for _f in _FORMULAS:
    _register(_f)
