"""Rules for NumPy's reductions and scans: sum, mean, prod, max/min, var/std, cumsum, cumprod, ...

Every rule takes ``axis`` (None, an int, a negative int, a tuple) and ``keepdims`` where NumPy
does, ``dtype=`` where NumPy does, and serves both the function (``np.sum(x, axis=0)``) and the
ndarray method (``x.sum(axis=0)``, called as ``np.ndarray.sum(x, axis=0)``). Arguments the rule
cannot differentiate correctly (``out=``, var's ``mean=``) are refused
with an error rather than given a wrong derivative.

Conventions: ``max``/``min`` (and ``amax``, ``amin``, ``nanmax``, ``nanmin``, ``ptp``) split the
cotangent equally between tied maxima; a NaN maximum sends it to the NaN entries. ``prod`` and
``cumprod`` are exact with zeros (no division by a zero entry). ``std`` has derivative zero
where it is zero.

Pushforwards take a batched tangent (one more leading axis than ``x``) and return a batched result.
Every pullback here takes a batch of cotangents too (a leading batch axis, kept in front of the
input's cotangents; the rules are registered ``batched=True``): a reverse-mode Jacobian pulls a
block of cotangents back through them at once.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable

import numpy as np

from ...core import (
    AbstractZero,
    ActiveValue,
    NoDerivativeError,
    NoTangent,
    ZeroTangent,
    carries_batch,
    conj,
    frule,
    match_input,
    match_input_batch,
    rrule,
    unbroadcast_batch,
    unthunk,
)
from ...core.active import stood_for
from ...core.errors import at_user, option_refused
from ...core.keywords import declare_options, declare_parameters
from ._arrays import array_or_active, batch_to_input, scatter_add, sum_to, tangent_array, to_input
from ._util import align, axes_of, bind, broadcast_view, is_batched, keep, match_output, real_dtype, shift, size_along
from .ufuncs import as_computed

_NO = NoTangent()
_ZERO = ZeroTangent()


# ----- the skeleton ------------------------------------------------------------------------


#: the options of reductions that their output depends on: ``initial=``, which takes part in every
#: slice's reduction, and var's and std's ``ddof``, which divides the sum of squares by n - ddof
_VALUED = ("initial", "ddof")


def _register(fs: tuple, names: tuple[str, ...], defaults: dict, plan: Callable, batched: bool = False) -> None:
    """Register rules for reductions of one argument ``x``; the rest are options, except ``_VALUED``.

    ``plan(x, options, primal)`` returns ``(y, back, forward)``: the output (``primal()`` is the
    plain call, a plan may compute ``y`` itself from intermediates it needs anyway),
    ``back(dy)`` the cotangent of ``x`` (before projection) and ``forward(dx, batched)`` the
    tangent of ``y``. Intermediates they share are computed once in ``plan``. With
    ``batched=True``, ``back(dy, lead)`` also takes a batch of cotangents, ``lead`` being
    ``(batch,)`` (or ``()`` for one cotangent). Where the output depends on options among
    ``_VALUED``, a plan returns a fourth: ``{name: partial}``, ``partial()`` being dy/d option, of
    ``y``'s shape; the engines pass such an option being differentiated by its position.
    """
    for f in fs:
        _register_one(f, names, defaults, plan, batched)
        _declare_positions(f, names, defaults)


def _declare_positions(f, names: tuple[str, ...], defaults: dict) -> None:
    """Declare the positions of ``f``'s options where its signature hides one of ``_VALUED`` behind
    ``**kwargs`` (the ndarray methods, the ufuncs' reduce), so that the engines pass one being
    differentiated by its position."""
    valued = [n for n in _VALUED if n in names]
    if not valued or all(n in inspect.signature(f).parameters for n in valued):
        return
    P = inspect.Parameter
    options = (P(n, P.POSITIONAL_OR_KEYWORD, default=defaults.get(n)) for n in names)
    parameters = (P("array", P.POSITIONAL_ONLY), *options)
    declare_parameters(f, lambda args: parameters)


#: the ufunc reduction a NumPy reduction calls for an ndarray (``np.sum(x, axis=a)`` is
#: ``np.add.reduce(x, axis=a)``), called directly for an ndarray and keywords among
#: ``_DIRECT_KEYWORDS``: NumPy's Python wrapper costs as much as reducing a small array
_DIRECT = {
    **dict.fromkeys((np.sum, np.ndarray.sum), np.add.reduce),
    **dict.fromkeys((np.max, np.amax, np.ndarray.max), np.maximum.reduce),
    **dict.fromkeys((np.min, np.amin, np.ndarray.min), np.minimum.reduce),
}
_DIRECT_KEYWORDS = frozenset(("axis", "keepdims", "dtype"))


def _primal(f, x, args, kwargs):
    """The call ``f(x, *args, **kwargs)``, deferred (a plan may compute the output itself)."""
    direct = _DIRECT.get(f)
    if direct is not None and not args and type(x) is np.ndarray and kwargs.keys() <= _DIRECT_KEYWORDS:
        axis, dtype, keepdims = kwargs.get("axis"), kwargs.get("dtype"), kwargs.get("keepdims", False)
        if keepdims is not np._NoValue and dtype is not np._NoValue:  # (a reduce's axis defaults to 0)
            return lambda: direct(x, axis, dtype, None, keepdims)
    return lambda: f(x, *args, **kwargs)


# ----- the quick path: sum, max and min of a float array along axes ---------------------------
#
# ``np.sum(x, axis=1)`` and the like are the common calls in a gradient: their rules take them
# without binding options or building a plan; a cotangent of the output's dtype and shape is
# pulled back here, and any other (a thunk, a zero, a batch, another dtype) by the general rule,
# made only then.

_QUICK_KEYWORDS = frozenset(("axis", "keepdims"))


def _quick_cotangent(shape, dy, dtype):
    """``dy`` as an array of the output's ``shape`` in the input's float ``dtype``, or None when
    it is anything else (the general rule's case)."""
    if type(dy) is np.ndarray:
        return dy if dy.dtype == dtype and dy.shape == shape else None
    if (type(dy) is float or isinstance(dy, np.floating)) and not shape:
        return np.array(dy, dtype=dtype)  # a real number for a scalar output
    return None


def _quick_batch(shape, dy, dtype):
    """``dy`` when it is a batch of cotangents of an output of ``shape`` (a leading batch axis)
    in the input's float ``dtype``, else None (the general rule's case)."""
    if isinstance(dy, np.ndarray) and dy.dtype == dtype and dy.shape[1:] == shape and dy.ndim == len(shape) + 1:
        return dy
    return None


def _quick_sum_back(x, y, axes, keepdims):
    def sum_back(dy, lead=()):
        if lead:
            return broadcast_view(keep(dy, shift(axes, True), keepdims), lead + x.shape)
        return broadcast_view(dy if not dy.ndim else keep(dy, axes, keepdims), x.shape)

    return sum_back


def _quick_extremum_back(x, y, axes, keepdims):
    found = []  # where the extremum is attained: found on first use, not in the primal

    def extremum_back(dy, lead=()):
        if not found:
            found.append(_winners(x, y, axes, keepdims, nan_wins=True))
        hit, count = found[0]
        dy = keep(dy, shift(axes, True), keepdims) if lead else keep(dy, axes, keepdims)
        return hit * (dy if count is None else dy / count)

    return extremum_back


#: the quick rules, by the ufunc reduction (``_DIRECT``): ``make_back(x, y, axes, keepdims)``, the
#: pullback of a cotangent ``_quick_cotangent`` accepted
_QUICK_BACKS = {
    np.add.reduce: _quick_sum_back,
    np.maximum.reduce: _quick_extremum_back,
    np.minimum.reduce: _quick_extremum_back,
}


def _quick_rrule(reduce, make_back, x, axis, keepdims, general_rrule, kwargs, qualname):
    y = reduce(x, axis, None, None, keepdims)
    back = make_back(x, y, axes_of(axis, x.ndim), keepdims)
    dtype, shape = x.dtype, y.shape  # (an ndarray, or a NumPy scalar of a full reduction)
    general = []

    def reduction_pullback(dy):
        if type(dy) is not np.ndarray:
            dy = unthunk(dy)
        d = _quick_cotangent(shape, dy, dtype)
        if d is not None:
            return _NO, back(d)
        d = _quick_batch(shape, dy, dtype)
        if d is not None:
            return _NO, back(d, d.shape[:1])
        if not general:
            general.append(general_rrule(x, (), kwargs)[1])
        return general[0](dy)

    reduction_pullback.__qualname__ = qualname
    return y, reduction_pullback


def _register_one(f, names, defaults, plan, batched=False):
    owner = getattr(f, "__self__", None)
    name = f"{owner.__name__}_{f.__name__}" if isinstance(owner, np.ufunc) else f.__name__  # add_reduce

    reduce = _DIRECT.get(f)
    quick = None if reduce is None else (reduce, _QUICK_BACKS[reduce])
    pullback_name = f"{name}_pullback"
    valued = {names.index(n): n for n in _VALUED if n in names}  # their positions after x

    def reduction_rrule(x, *args, **kwargs):
        if quick is not None and not args and type(x) is np.ndarray and x.dtype.kind == "f":
            if kwargs.keys() <= _QUICK_KEYWORDS and kwargs.get("keepdims") is not np._NoValue:
                axis, keepdims = kwargs.get("axis"), kwargs.get("keepdims", False)
                return _quick_rrule(*quick, x, axis, keepdims, general_rrule, kwargs, pullback_name)
        return general_rrule(x, args, kwargs)

    def general_rrule(x, args, kwargs):
        options = bind(f, args, kwargs, names, defaults)
        y, back, _, *partials = plan(x, options, _primal(f, x, args, kwargs))
        extra = (_NO,) * len(args)
        real = not _complex(y)
        batch_ndim = getattr(y, "ndim", 0) + 1  # a cotangent with this many axes is a batch
        # the options given by position that the output depends on (one given by keyword is a constant)
        by_position = {i: partials[0][n] for i, n in valued.items() if i < len(args) and partials and n in partials[0]}

        def with_options(dy, lead):
            """``extra`` with the cotangents of ``by_position``: dy's sum weighted by each one's partial."""
            if not by_position:
                return extra
            cotangents = list(extra)
            for i, partial in by_position.items():
                d = np.sum(conj(partial()) * dy, axis=tuple(range(len(lead), np.ndim(dy))))
                cotangents[i] = match_input_batch(args[i], d) if lead else match_input(args[i], d)
            return tuple(cotangents)

        def reduction_pullback(dy):
            if type(dy) is not np.ndarray:
                dy = unthunk(dy)
                if isinstance(dy, AbstractZero):
                    return (_NO, dy) + extra
            if real and _complex(dy):
                dy = np.real(dy)  # a real output's cotangent is real
            if batched and getattr(dy, "ndim", 0) == batch_ndim:
                lead = np.shape(dy)[:1]
                return (_NO, match_input_batch(x, back(dy, lead))) + with_options(dy, lead)
            return (_NO, match_input(x, back(dy))) + with_options(dy, ())

        reduction_pullback.__qualname__ = f"{name}_pullback"
        return y, reduction_pullback

    def reduction_frule(tangents, x, *args, **kwargs):
        options = bind(f, args, kwargs, names, defaults)
        dx = unthunk(tangents[1])
        moved = {i: unthunk(tangents[2 + i]) for i in valued if len(tangents) > 2 + i}
        moved = {i: d for i, d in moved.items() if not isinstance(d, AbstractZero)}
        if isinstance(dx, AbstractZero) and not moved:
            return f(x, *args, **kwargs), _ZERO
        y, _, forward, *partials = plan(x, options, lambda: f(x, *args, **kwargs))
        dy = dx if isinstance(dx, AbstractZero) else forward(dx, is_batched(x, dx))
        for i, d in moved.items():  # a number, or a batch of them
            p = partials[0][valued[i]]()
            term = p * np.reshape(d, np.shape(d) + (1,) * np.ndim(p))
            dy = term if isinstance(dy, AbstractZero) else dy + term
        return y, match_output(y, dy)

    reduction_rrule.__qualname__ = f"rrule_{name}"
    reduction_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=batched)(reduction_rrule)
    frule.register(f, batched=True)(reduction_frule)


def _complex(v) -> bool:
    if type(v) is float:
        return False
    if type(v) is np.ndarray:
        return v.dtype.kind == "c"
    dtype = getattr(v, "dtype", None)
    return dtype.kind == "c" if isinstance(dtype, np.dtype) else np.iscomplexobj(v)


def _spread(dy, x, axes, keepdims, lead=()):
    """The cotangent of a reduction's output spread back over the input's shape (a broadcast view);
    ``lead`` is the batch axis of a batch of cotangents."""
    if lead:
        return broadcast_view(keep(dy, shift(axes, True), keepdims), lead + np.shape(x))
    if not np.ndim(dy):  # a number, or a 0-d array: the sum of everything
        return broadcast_view(dy, np.shape(x))
    return broadcast_view(keep(dy, axes, keepdims), np.shape(x))


def _mask(x, options, nan: bool):
    """Which entries take part: the ``where=`` mask, without NaNs for the nan-functions; None if all."""
    where = options.get("where", True)
    mask = None if where is True else np.broadcast_to(where, np.shape(x))
    if nan:
        valid = np.logical_not(np.isnan(x))
        mask = valid if mask is None else np.logical_and(mask, valid)
    return mask


def _safe(d):
    return np.where(d == 0, 1, d)


# ----- sum, mean ---------------------------------------------------------------------------


def _sum_plan(nan: bool):
    def plan(x, o, primal):
        axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
        mask = _mask(x, o, nan)

        def sum_back(dy, lead=()):
            dx = _spread(dy, x, axes, keepdims, lead)
            return dx if mask is None else dx * mask

        def sum_forward(dx, batched):
            if mask is not None:
                dx = dx * mask
            return np.sum(dx, axis=shift(axes, batched), dtype=o["dtype"], keepdims=keepdims)

        y = primal()
        if o["initial"] is None:
            return y, sum_back, sum_forward
        return y, sum_back, sum_forward, {"initial": lambda: np.ones(np.shape(y), dtype=real_dtype(y))}

    return plan


def _mean_plan(nan: bool):
    def plan(x, o, primal):
        axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
        mask = _mask(x, o, nan)
        if mask is None:
            n = size_along(np.shape(x), axes)
        else:
            n = np.sum(mask, axis=axes, keepdims=True).astype(real_dtype(x))

        def mean_back(dy, lead=()):
            dx = keep(dy, shift(axes, bool(lead)), keepdims) / n
            return np.broadcast_to(dx, lead + np.shape(x)) if mask is None else dx * mask

        def mean_forward(dx, batched):
            if mask is not None:
                dx = dx * mask
            total = np.sum(dx, axis=shift(axes, batched), dtype=o["dtype"], keepdims=True) / n
            return total if keepdims else np.squeeze(total, axis=shift(axes, batched))

        return primal(), mean_back, mean_forward

    return plan


_SUM = ("axis", "dtype", "out", "keepdims", "initial", "where")
_SUM_DEFAULTS = {"axis": None, "dtype": None, "keepdims": False, "initial": None, "where": True}
_register((np.sum, np.ndarray.sum), _SUM, _SUM_DEFAULTS, _sum_plan(nan=False), batched=True)
_register((np.nansum,), _SUM, _SUM_DEFAULTS, _sum_plan(nan=True), batched=True)

_MEAN = ("axis", "dtype", "out", "keepdims")
_MEAN_DEFAULTS = {"axis": None, "dtype": None, "keepdims": False, "where": True}
_register((np.mean, np.ndarray.mean), _MEAN, _MEAN_DEFAULTS, _mean_plan(nan=False), batched=True)
_register((np.nanmean,), _MEAN, _MEAN_DEFAULTS, _mean_plan(nan=True), batched=True)


# ----- prod --------------------------------------------------------------------------------


def _others(x, y, axes, keepdims):
    """For every entry, the product of the other entries of its reduced slice: d prod / d x.

    Without zeros that is ``prod / x``. With zeros it is the product of the entries before and
    after it along the slice (no division, no case for the zeros: the partials' own derivatives,
    a Hessian's, are right there too).
    """
    if not np.any(x == 0):
        return keep(y, axes, keepdims) / x
    return _exclusive_products(x, axes)


def _exclusive_products(x, axes: tuple):
    """The product of the other entries of each entry's slice over ``axes``, from running products."""
    nd = np.ndim(x)
    last = tuple(range(nd - len(axes), nd))
    moved = np.moveaxis(x, axes, last)
    shape = np.shape(moved)
    flat = np.reshape(moved, shape[: nd - len(axes)] + (-1,))
    if np.shape(flat)[-1] == 0:
        return x
    ones = np.ones(np.shape(flat)[:-1] + (1,), dtype=flat.dtype)
    before = np.concatenate([ones, np.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    after = np.flip(np.concatenate([ones, np.cumprod(np.flip(flat[..., 1:], -1), axis=-1)], axis=-1), -1)
    return np.moveaxis(np.reshape(before * after, shape), last, axes)


def _prod_plan(nan: bool):
    def plan(x, o, primal):
        y = primal()
        axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
        valid = _mask(x, o, nan)
        xs = x if valid is None else np.where(valid, x, 1)
        if o["initial"] is None:
            others = _others(xs, y, axes, keepdims)
        else:  # y = initial times the product: the others' product without it, then times it
            others = _others(xs, np.prod(xs, axis=axes, keepdims=keepdims), axes, keepdims) * o["initial"]
        if valid is not None:
            others = others * valid

        def prod_back(dy, lead=()):
            return conj(others) * keep(dy, shift(axes, bool(lead)), keepdims)

        def prod_forward(dx, batched):
            return np.sum(others * dx, axis=shift(axes, batched), dtype=o["dtype"], keepdims=keepdims)

        if o["initial"] is None:
            return y, prod_back, prod_forward
        return y, prod_back, prod_forward, {"initial": lambda: np.prod(xs, axis=axes, keepdims=keepdims)}

    return plan


_PROD = ("axis", "dtype", "out", "keepdims", "initial", "where")
_PROD_DEFAULTS = {"axis": None, "dtype": None, "keepdims": False, "initial": None, "where": True}
_register((np.prod, np.ndarray.prod), _PROD, _PROD_DEFAULTS, _prod_plan(nan=False), batched=True)
_register((np.nanprod,), _PROD, _PROD_DEFAULTS, _prod_plan(nan=True), batched=True)


# ----- max, min, ptp -----------------------------------------------------------------------


def _winners(x, y, axes, keepdims, nan_wins: bool, attained: bool = True, mask=None, initial=None):
    """Where max/min is attained, and by how many entries of each slice (None when by one each).

    A NaN result of max/min (``nan_wins``) comes from the NaN entries; nanmax/nanmin skip them,
    and an all-NaN slice there has no winner. ``attained``: no ``initial=`` value could be the
    result, so every slice without NaN has a winner. ``mask``: only these entries take part.
    ``initial``: the ``initial=`` value, counted among the winners where it ties.
    """
    yk = keep(y, axes, keepdims)
    x = as_computed(x, y)  # (dtype=np.float32: NumPy compared the entries cast to float32)
    hit = x == yk
    if type(y) is np.ndarray:
        nan = np.count_nonzero(np.isnan(y)) > 0  # (count_nonzero is C code: half what any() costs)
    else:
        nan = np.any(np.isnan(y))
    if nan_wins and nan:
        hit = np.logical_or(hit, np.isnan(x))
    if mask is not None:
        hit = np.logical_and(hit, mask)
    if attained and not nan and np.count_nonzero(hit) == (y.size if type(y) is np.ndarray else np.size(y)):
        return hit, None  # every slice has a winner and there are as many as slices: one each
    count = np.sum(hit, axis=axes, keepdims=True)
    if initial is not None:
        count = count + (yk == initial)
    if np.all(count == 1):
        return hit, None
    return hit, np.maximum(count, 1).astype(real_dtype(x))


def _selection_back_forward(winners, axes, keepdims):
    """Pullback and pushforward of a reduction that picks the entries ``winners()`` returns as
    ``(hit, count)`` (sharing ties); they are found on first use, not in the primal."""
    found = []

    def hit_count():
        if not found:
            found.append(winners())
        return found[0]

    def select_back(dy, lead=()):
        hit, count = hit_count()
        dy = keep(dy, shift(axes, bool(lead)), keepdims)
        return hit * (dy if count is None else dy / count)

    def select_forward(dx, batched):
        hit, count = hit_count()
        picked = np.sum(hit * dx, axis=shift(axes, batched), keepdims=True)
        if count is not None:
            picked = picked / count
        return picked if keepdims else np.squeeze(picked, axis=shift(axes, batched))

    return select_back, select_forward


def _extremum_plan(nan_wins: bool):
    def plan(x, o, primal):
        y = primal()
        axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
        initial = o["initial"]  # (NumPy needs initial= with where=)
        mask = _mask(x, o, nan=False)

        @functools.cache
        def winners():
            return _winners(x, y, axes, keepdims, nan_wins, initial is None, mask, initial)

        back, forward = _selection_back_forward(winners, axes, keepdims)
        if initial is None:
            return y, back, forward

        def initial_partial():  # its share of the cotangent where it is the extremum
            _, count = winners()
            tie = np.equal(y, initial).astype(real_dtype(x))
            return tie if count is None else tie / np.reshape(count, np.shape(tie))

        return y, back, forward, {"initial": initial_partial}

    return plan


def _ptp_plan(x, o, primal):
    y = primal()
    axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
    hi, lo = np.max(x, axis=axes), np.min(x, axis=axes)
    hi_back, hi_forward = _selection_back_forward(lambda: _winners(x, hi, axes, False, True), axes, keepdims)
    lo_back, lo_forward = _selection_back_forward(lambda: _winners(x, lo, axes, False, True), axes, keepdims)

    def ptp_back(dy, lead=()):
        return hi_back(dy, lead) - lo_back(dy, lead)

    def ptp_forward(dx, batched):
        return hi_forward(dx, batched) - lo_forward(dx, batched)

    return y, ptp_back, ptp_forward


_MAX = ("axis", "out", "keepdims", "initial", "where")
_MAX_DEFAULTS = {"axis": None, "keepdims": False, "initial": None, "where": True}
_EXTREMA = (np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min)
_register(_EXTREMA, _MAX, _MAX_DEFAULTS, _extremum_plan(nan_wins=True), batched=True)
_register((np.nanmax, np.nanmin), _MAX, _MAX_DEFAULTS, _extremum_plan(nan_wins=False), batched=True)
_register((np.ptp,), ("axis", "out", "keepdims"), {"axis": None, "keepdims": False}, _ptp_plan, batched=True)


# ----- var, std ----------------------------------------------------------------------------


def _moments(x, o, primal, nan: bool = False):
    """axes, keepdims, the centred data, the divisor n - ddof, and the variance of var/std (of
    nanvar/nanstd with ``nan``: NaN entries take no part, as entries outside ``where=`` do).

    The variance is computed from the centred data the derivative needs anyway (NumPy's own
    algorithm), except where n - ddof <= 0: there NumPy's call gives its warning and inf/nan.
    """
    axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
    ddof = o["ddof"] if o["correction"] is None else o["correction"]
    mask = _mask(x, o, nan)
    if mask is None:
        centred = x - np.mean(x, axis=axes, dtype=o["dtype"], keepdims=True)
        divisor = size_along(np.shape(x), axes) - ddof
    else:  # only the entries of where= take part (the others' centred value is 0); n per slice
        counting = o["dtype"] or real_dtype(x)  # (counts in the data's dtype: no promotion to float64)
        kept = np.sum(np.where(mask, x, 0), axis=axes, dtype=o["dtype"], keepdims=True)
        centred = np.where(mask, x - kept / np.sum(mask, axis=axes, keepdims=True, dtype=counting), 0)
        divisor = np.sum(mask, axis=axes, keepdims=keepdims, dtype=counting) - ddof  # (the output's shape)
    if np.any(divisor <= 0):
        return axes, keepdims, centred, np.nan, primal()
    squares = np.real(centred * conj(centred)) if np.iscomplexobj(centred) else centred * centred
    variance = np.sum(squares, axis=axes, dtype=o["dtype"], keepdims=keepdims) / divisor
    return axes, keepdims, centred, divisor, variance


def _var_plan(x, o, primal, nan: bool = False):
    # d var = 2 real(sum(conj(x - mean) dx)) / (n - ddof): the mean's own change sums to zero
    axes, keepdims, centred, divisor, y = _moments(x, o, primal, nan)

    def var_back(dy, lead=()):
        return centred * keep((2.0 / divisor) * dy, shift(axes, bool(lead)), keepdims)

    def var_forward(dx, batched):
        return (2.0 / divisor) * np.sum(np.real(conj(centred) * dx), axis=shift(axes, batched), keepdims=keepdims)

    return y, var_back, var_forward, {"ddof": lambda: y / divisor}  # (the sum of squares over n - ddof)


def _std_plan(x, o, primal, nan: bool = False):
    axes, keepdims, centred, divisor, variance = _moments(x, o, lambda: np.square(primal()), nan)
    y = np.sqrt(variance)
    scale = 1.0 / (divisor * _safe(y))  # std = 0 only where every centred entry is 0

    def std_back(dy, lead=()):
        return centred * keep(scale * dy, shift(axes, bool(lead)), keepdims)

    def std_forward(dx, batched):
        return scale * np.sum(np.real(conj(centred) * dx), axis=shift(axes, batched), keepdims=keepdims)

    return y, std_back, std_forward, {"ddof": lambda: y / (2.0 * divisor)}


_VAR = ("axis", "dtype", "out", "ddof", "keepdims")
_VAR_DEFAULTS = {"axis": None, "dtype": None, "ddof": 0, "keepdims": False, "correction": None, "where": True}
_register((np.var, np.ndarray.var), _VAR, _VAR_DEFAULTS, _var_plan, batched=True)
_register((np.std, np.ndarray.std), _VAR, _VAR_DEFAULTS, _std_plan, batched=True)
_register((np.nanvar,), _VAR, _VAR_DEFAULTS, functools.partial(_var_plan, nan=True), batched=True)
_register((np.nanstd,), _VAR, _VAR_DEFAULTS, functools.partial(_std_plan, nan=True), batched=True)


# ----- cumsum, cumprod ---------------------------------------------------------------------


def _scan_axis(x, o):
    """The scanned axis, and x as scanned (flattened when axis is None, and a number always, as NumPy does)."""
    if o["axis"] is None or np.ndim(x) == 0:
        return 0, np.reshape(x, (-1,))
    return axes_of(o["axis"], np.ndim(x))[0], x


def _scan_tangent(x, dx, batched, axis):
    """A tangent of x laid out like the scanned array (flattened, keeping a batch axis)."""
    if axis is not None and np.ndim(x) > 0:
        return dx
    return np.reshape(dx, (np.shape(dx)[0], -1)) if batched else np.reshape(dx, (-1,))


def _reverse_cumsum(d, axis):
    return np.flip(np.cumsum(np.flip(d, axis), axis=axis), axis)


def _cumsum_plan(x, o, primal, nan: bool = False):
    # (nancumsum with ``nan``: a NaN entry adds zero, so it has no derivative)
    y = primal()
    axis, _ = _scan_axis(x, o)
    mask = _mask(x, {}, nan)

    def cumsum_back(dy, lead=()):
        dx = np.reshape(_reverse_cumsum(dy, axis + len(lead)), lead + np.shape(x))
        return dx if mask is None else dx * mask

    def cumsum_forward(dx, batched):
        if mask is not None:
            dx = dx * mask
        return np.cumsum(_scan_tangent(x, dx, batched, o["axis"]), axis=axis + batched, dtype=o["dtype"])

    return y, cumsum_back, cumsum_forward


def _cumprod_plan(x, o, primal):
    # dy_i/dx_j = prod_{k <= i, k != j} x_k for j <= i. Before a slice's first zero z that is
    # y_i / x_j; at z it is the product skipping x_z (cumprod with x_z set to one); after z it is 0.
    y = primal()
    axis, xs = _scan_axis(x, o)
    zero = xs == 0
    if not np.any(zero):
        before, first, xs_safe, skip = None, None, xs, None
    else:
        if isinstance(x, ActiveValue):  # (masks below, whose own derivatives would be dropped)
            raise NoDerivativeError(
                f"the rule for a running product (np.cumprod, np.cumulative_prod, np.multiply.accumulate){at_user()} "
                "takes an entry equal to 0 to first order only: its second derivative there (a Hessian, forward "
                "mode over the pullback) is not supported"
            )
        seen = np.cumsum(zero, axis=axis)
        before = seen == 0
        first = np.logical_and(zero, seen == 1)
        xs_safe = np.where(before, xs, 1)
        skip = np.cumprod(np.where(first, 1, xs), axis=axis, dtype=o["dtype"])

    def cumprod_back(dy, lead=()):
        ax = axis + len(lead)
        dx = _reverse_cumsum(dy * conj(y), ax) / conj(xs_safe)
        if before is not None:
            dx = np.where(before, dx, 0) + np.where(first, _reverse_cumsum(dy * conj(skip), ax), 0)
        return np.reshape(dx, lead + np.shape(x))

    def cumprod_forward(dx, batched):
        dx = _scan_tangent(x, dx, batched, o["axis"])
        ax = axis + batched
        if before is None:
            return y * np.cumsum(dx / xs_safe, axis=ax)
        through = y * np.cumsum(np.where(before, dx / xs_safe, 0), axis=ax)
        at_zero = skip * np.sum(np.where(first, dx, 0), axis=ax, keepdims=True)
        return np.where(before, through, at_zero)

    return y, cumprod_back, cumprod_forward


def _running_extremum_plan(x, o, primal):
    # y_i = x_w(i), w(i) the last position j <= i where x_j equals the running extremum y_i (at a
    # tie any of them is a subgradient's choice): dx_j is the sum of dy_i over the i with w(i) = j
    y = primal()
    axis, xs = _scan_axis(x, o)
    xs = as_computed(xs, y)  # (dtype=np.float32: NumPy compared the entries cast to float32)
    at_record = (xs == y) | (np.isnan(xs) & np.isnan(y))  # NumPy's maximum and minimum propagate NaN
    positions = np.arange(np.shape(xs)[axis]).reshape((-1,) + (1,) * (np.ndim(xs) - 1 - axis))
    winners = np.maximum.accumulate(np.where(at_record, positions, 0), axis=axis)

    def running_extremum_back(dy, lead=()):
        ax = axis + len(lead)
        rows = np.moveaxis(dy, ax, -1)
        picks = np.broadcast_to(np.moveaxis(winners, axis, -1), rows.shape)
        table = (math.prod(rows.shape[:-1]), rows.shape[-1])  # (not -1, which rows of length 0 leave open)
        dtype = np.result_type(rows.dtype, y)
        index = (np.arange(table[0])[:, None], np.reshape(picks, table))
        flat = scatter_add(table, index, np.reshape(rows, table), dtype=dtype)
        return np.reshape(np.moveaxis(flat.reshape(rows.shape), -1, ax), lead + np.shape(x))

    def running_extremum_forward(dx, batched):
        dx = _scan_tangent(x, dx, batched, o["axis"])
        picks = np.broadcast_to(winners, np.shape(dx)) if batched else winners
        return np.take_along_axis(dx, picks, axis=axis + batched)

    return y, running_extremum_back, running_extremum_forward


_SCAN = ("axis", "dtype", "out")
_SCAN_DEFAULTS = {"axis": None, "dtype": None}
_register((np.cumsum, np.ndarray.cumsum), _SCAN, _SCAN_DEFAULTS, _cumsum_plan, batched=True)
_register((np.nancumsum,), _SCAN, _SCAN_DEFAULTS, functools.partial(_cumsum_plan, nan=True), batched=True)
_register((np.cumprod, np.ndarray.cumprod), _SCAN, _SCAN_DEFAULTS, _cumprod_plan, batched=True)


def _with_initial(scan_plan):
    """The plan of the array API's scan (``np.cumulative_sum``, ``np.cumulative_prod``) from that of
    ``np.cumsum`` or ``np.cumprod``: the same scan, which ``include_initial=True`` prefixes with the
    operation's identity, a constant (its cotangent is dropped, its tangent is zero)."""

    def plan(x, o, primal):
        y = primal()
        if not o["include_initial"]:
            return scan_plan(x, o, lambda: y)
        axis, _ = _scan_axis(x, o)
        scanned = np.take(y, np.arange(1, np.shape(y)[axis]), axis=axis)
        _, back, forward = scan_plan(x, o, lambda: scanned)

        def scan_back(dy, lead=()):
            return back(np.take(dy, np.arange(1, np.shape(dy)[axis + len(lead)]), axis=axis + len(lead)), lead)

        def scan_forward(dx, batched):
            t = forward(dx, batched)
            ax = axis + batched
            # (the identity's slab, of t's shape with one entry along the axis, which may be empty)
            return np.concatenate([np.zeros_like(np.sum(t, axis=ax, keepdims=True)), t], axis=ax)

        return y, scan_back, scan_forward

    return plan


if hasattr(np, "cumulative_sum"):  # NumPy 2.1 and later
    _CUMULATIVE = ("axis", "dtype", "out", "include_initial")
    _CUMULATIVE_DEFAULTS = {"axis": None, "dtype": None, "include_initial": False}
    _register((np.cumulative_sum,), _CUMULATIVE, _CUMULATIVE_DEFAULTS, _with_initial(_cumsum_plan), batched=True)
    _register((np.cumulative_prod,), _CUMULATIVE, _CUMULATIVE_DEFAULTS, _with_initial(_cumprod_plan), batched=True)


# ----- average -----------------------------------------------------------------------------

_AVERAGE = ("axis", "weights", "returned")
_AVERAGE_DEFAULTS = {"axis": None, "weights": None, "returned": False, "keepdims": False}


def _average_setup(a, args, kwargs):
    o = bind(np.average, args, kwargs, _AVERAGE, _AVERAGE_DEFAULTS)
    if o["returned"]:
        raise option_refused(np.average, (a,), "returned=True: call np.sum of the weights for the sum")
    axes, keepdims, w = axes_of(o["axis"], np.ndim(a)), o["keepdims"], o["weights"]
    y = np.average(a, axis=o["axis"], weights=w, keepdims=keepdims)
    if w is None:
        return y, axes, keepdims, None, None, None
    wb = w if np.shape(w) == np.shape(a) else np.reshape(w, _weights_shape(np.shape(w), np.ndim(a), axes))
    total = np.sum(np.broadcast_to(wb, np.shape(a)), axis=axes, keepdims=True)
    return y, axes, keepdims, wb, total, keep(y, axes, keepdims)


def _weights_shape(wshape, ndim, axes):
    """The shape that lines up 1-D (or per-axis) weights with the reduced axes of ``a``."""
    shape = [1] * ndim
    for i, a in enumerate(axes):
        shape[a] = wshape[i]
    return tuple(shape)


@rrule.register(np.average, batched=True)
def rrule_average(a, *args, **kwargs):
    y, axes, keepdims, wb, total, yk = _average_setup(a, args, kwargs)
    weighted = len(args) >= 2 and args[1] is not None  # weights given by position get a cotangent
    w = args[1] if weighted else None

    def average_pullback(dy):
        dy = unthunk(dy)
        cotangents = [_NO] * len(args)
        if isinstance(dy, AbstractZero):
            if weighted:
                cotangents[1] = dy
            return (_NO, dy, *cotangents)
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        match = match_input_batch if lead else match_input
        kept = keep(dy, shift(axes, bool(lead)), keepdims)
        if wb is None:
            da = np.broadcast_to(kept / size_along(np.shape(a), axes), lead + np.shape(a))
            return (_NO, match(a, da), *cotangents)
        g = kept / conj(total)
        da = match(a, np.broadcast_to(conj(wb) * g, lead + np.shape(a)))
        if weighted:  # d average / d w_k = (a_k - average) / sum(w)
            dwb = conj(a - yk) * g
            k = len(lead)
            others = tuple(i + k for i in range(np.ndim(a)) if np.shape(wb)[i] == 1 and np.shape(dwb)[i + k] != 1)
            summed = np.sum(dwb, axis=others, keepdims=True)
            cotangents[1] = match(w, np.reshape(summed, lead + np.shape(w)))
        return (_NO, da, *cotangents)

    return y, average_pullback


@frule.register(np.average, batched=True)
def frule_average(tangents, a, *args, **kwargs):
    y, axes, keepdims, wb, total, yk = _average_setup(a, args, kwargs)
    da = unthunk(tangents[1])
    dw = unthunk(tangents[3]) if len(args) >= 2 and args[1] is not None and len(tangents) > 3 else _ZERO
    batch = None
    dy = _ZERO
    if not isinstance(da, AbstractZero):
        batched = is_batched(a, da)
        batch = np.shape(da)[0] if batched else None
        ax = shift(axes, batched)
        if wb is None:
            dy = np.mean(da, axis=ax, keepdims=True)
        else:
            dy = np.sum(wb * da, axis=ax, keepdims=True) / total
    if wb is not None and not isinstance(dw, AbstractZero):
        batched = is_batched(args[1], dw)
        if batched:
            batch = np.shape(dw)[0]
            dw = np.reshape(dw, (batch,) + np.shape(wb))
        elif np.shape(dw) != np.shape(wb):
            dw = np.reshape(dw, np.shape(wb))
        term = np.sum((a - yk) * dw, axis=shift(axes, batched), keepdims=True) / total
        dy = term if isinstance(dy, AbstractZero) else dy + term
    if isinstance(dy, AbstractZero):
        return y, dy
    if not keepdims:
        dy = np.squeeze(dy, axis=shift(axes, batch is not None))
    return y, match_output(y, dy)


# ----- the same as methods of ufuncs (reduce along axis 0 by default) -----------------------

_register((np.add.reduce,), _SUM, {**_SUM_DEFAULTS, "axis": 0}, _sum_plan(nan=False), batched=True)
_register((np.multiply.reduce,), _PROD, {**_PROD_DEFAULTS, "axis": 0}, _prod_plan(nan=False), batched=True)
_UFUNC_MAX = ("axis", "dtype", "out", "keepdims", "initial", "where")
_UFUNC_MAX_DEFAULTS = {"axis": 0, "dtype": None, "keepdims": False, "initial": None, "where": True}
_UFUNC_EXTREMA = (np.maximum.reduce, np.minimum.reduce)
_register(_UFUNC_EXTREMA, _UFUNC_MAX, _UFUNC_MAX_DEFAULTS, _extremum_plan(nan_wins=True), batched=True)
_register(
    (np.fmax.reduce, np.fmin.reduce), _UFUNC_MAX, _UFUNC_MAX_DEFAULTS, _extremum_plan(nan_wins=False), batched=True
)


def _log_sum_exp_plan(exp: Callable):
    """``np.logaddexp.reduce`` (``exp`` is np.exp) and ``np.logaddexp2.reduce`` (np.exp2): y is the
    log of the sum of exponentials, so dy/dx_j = exp(x_j - y), the softmax weight of entry j."""

    def plan(x, o, primal):
        y = primal()
        axes, keepdims = axes_of(o["axis"], np.ndim(x)), o["keepdims"]
        y_kept = keep(y, axes, keepdims)
        with np.errstate(invalid="ignore"):
            weight = exp(x - y_kept)
        # an infinite result has no finite weights (inf - inf): its entries get none
        weight = np.where(np.isinf(y_kept), 0.0, weight).astype(np.result_type(weight), copy=False)
        mask = _mask(x, o, nan=False)
        if mask is not None:
            weight = weight * mask

        def log_sum_exp_back(dy, lead=()):
            return keep(dy, shift(axes, bool(lead)), keepdims) * weight

        def log_sum_exp_forward(dx, batched):
            return np.sum(dx * weight, axis=shift(axes, batched), keepdims=keepdims)

        if o["initial"] is None:
            return y, log_sum_exp_back, log_sum_exp_forward

        def initial_partial():  # the initial value is one more exponential in the sum
            with np.errstate(invalid="ignore"):
                return np.where(np.isinf(y), 0.0, exp(o["initial"] - y))

        return y, log_sum_exp_back, log_sum_exp_forward, {"initial": initial_partial}

    return plan


_register((np.logaddexp.reduce,), _SUM, {**_SUM_DEFAULTS, "axis": 0}, _log_sum_exp_plan(np.exp), batched=True)
_register((np.logaddexp2.reduce,), _SUM, {**_SUM_DEFAULTS, "axis": 0}, _log_sum_exp_plan(np.exp2), batched=True)


_register((np.add.accumulate,), _SCAN, {**_SCAN_DEFAULTS, "axis": 0}, _cumsum_plan, batched=True)
_register((np.multiply.accumulate,), _SCAN, {**_SCAN_DEFAULTS, "axis": 0}, _cumprod_plan, batched=True)
_register(
    (np.maximum.accumulate, np.minimum.accumulate),
    _SCAN,
    {**_SCAN_DEFAULTS, "axis": 0},
    _running_extremum_plan,
    batched=True,
)


def _log_cumsum_exp_plan(x, o, primal):
    # y_i = log sum_{j <= i} exp(x_j), so dy_i/dx_j = exp(x_j - y_i) for j <= i, in (0, 1]. The sums
    # over i (pullback) and j (pushforward) are taken in the log domain, the positive and negative
    # parts of the cotangent apart, so that nothing overflows (TensorFlow's gradient of
    # cumulative_logsumexp, math_grad.py); an infinite y_i has no finite weights, as in logaddexp.reduce's
    y = primal()
    axis, xs = _scan_axis(x, o)
    finite = np.isfinite(y)

    def log_cumsum_exp_back(dy, lead=()):
        ax = axis + len(lead)
        terms = np.where(finite, -y, -np.inf)
        rev = functools.partial(_reverse_log_cumsum_exp, axis=ax)
        dx = _signed_log_sums(dy, terms, xs, rev)
        return np.reshape(dx, lead + np.shape(x))

    def log_cumsum_exp_forward(dx, batched):
        dx = _scan_tangent(x, dx, batched, o["axis"])
        scan = functools.partial(np.logaddexp.accumulate, axis=axis + batched)
        return np.where(finite, _signed_log_sums(dx, xs, np.where(finite, -y, 0.0), scan), 0.0)

    return y, log_cumsum_exp_back, log_cumsum_exp_forward


def _reverse_log_cumsum_exp(v, axis):
    return np.flip(np.logaddexp.accumulate(np.flip(v, axis), axis=axis), axis)


def _signed_log_sums(d, inner, outer, scan):
    """``exp(outer) * S(d * exp(inner))`` for the running sum ``S`` whose log-domain form is
    ``scan`` (of log-sum-exp), each sign of ``d`` summed in the log domain apart."""
    sums = []
    for part in (d, -d):
        positive = part > 0
        logs = np.where(positive, np.log(np.where(positive, part, 1.0)), -np.inf)
        sums.append(np.exp(scan(logs + inner) + outer))
    return sums[0] - sums[1]


def _reduceat_plan(x, o, primal):
    # y_i sums x over [indices[i], indices[i + 1]) (to the end for the last), or is x[indices[i]]
    # alone where the next index is not larger: linear in x, so the tangent is reduceat of it and
    # the cotangent of x_j the sum of those of the y_i whose segment holds j
    y = primal()
    axis = axes_of(o["axis"], np.ndim(x))[0]
    n = np.shape(x)[axis]
    starts = np.asarray(o["indices"])
    ends = np.append(starts[1:], n)
    lengths = np.where(ends > starts, ends - starts, 1)
    owners = np.repeat(np.arange(len(starts)), lengths)  # the output each (output, entry) pair is for
    offsets = np.arange(owners.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    entries = np.repeat(starts, lengths) + offsets

    def reduceat_back(dy, lead=()):
        ax = axis + len(lead)
        spread = np.take(dy, owners, axis=ax)
        shape = lead + np.shape(x)
        return scatter_add(shape, (slice(None),) * ax + (entries,), spread, dtype=np.result_type(spread, y))

    def reduceat_forward(dx, batched):
        return np.add.reduceat(dx, o["indices"], axis=axis + batched, dtype=o["dtype"])

    return y, reduceat_back, reduceat_forward


_register((np.logaddexp.accumulate,), _SCAN, {**_SCAN_DEFAULTS, "axis": 0}, _log_cumsum_exp_plan, batched=True)
_REDUCEAT = ("indices", "axis", "dtype", "out")
_register((np.add.reduceat,), _REDUCEAT, {"indices": None, "axis": 0, "dtype": None}, _reduceat_plan, batched=True)

# ----- diff, trapezoid -----------------------------------------------------------------------

_DIFF = ("n", "axis", "prepend", "append")


def _diff_layout(a, args, kwargs):
    """``(n, axis, pieces, slots)`` of ``np.diff``: the arrays joined along ``axis`` before
    differencing (prepend, a, append), and for each the position of its positional argument
    (``None`` for one given by keyword, which is not differentiated). With ``n=0`` NumPy returns
    ``a`` itself and ignores ``prepend`` and ``append``."""
    o = {"n": 1, "axis": -1, **dict(zip(_DIFF, args)), **kwargs}
    n, axis = int(o["n"]), axes_of(o["axis"], np.ndim(a))[0]
    pieces, slots = [a], [0]
    for key, front in (("prepend", True), ("append", False)) if n else ():
        value = o.get(key, np._NoValue)
        if value is np._NoValue:
            continue
        slot = _DIFF.index(key) + 1 if len(args) > _DIFF.index(key) else None
        pieces.insert(0 if front else len(pieces), value)
        slots.insert(0 if front else len(slots), slot)
    return n, axis, pieces, slots


def _joined_shape(a, piece, axis):
    """The shape ``np.diff`` gives a prepended/appended value: a scalar becomes one slice."""
    if np.ndim(piece):
        return np.shape(piece)
    shape = list(np.shape(a))
    shape[axis] = 1
    return tuple(shape)


@rrule.register(np.diff, batched=True)
def rrule_diff(a, *args, **kwargs):
    y = np.diff(a, *args, **kwargs)
    n, axis, pieces, slots = _diff_layout(a, args, kwargs)
    shapes = [_joined_shape(a, p, axis) for p in pieces]
    bounds = np.cumsum([s[axis] for s in shapes])[:-1]
    # differencing past the joined length leaves an empty array, as its length-th difference does
    n = min(n, sum(s[axis] for s in shapes))

    def diff_pullback(dy):
        # diff is D^n along the axis; D's adjoint is -D of the cotangent padded with a zero at
        # both ends, so (D^n)' dy = (-1)^n D^n (dy padded with n zeros at both ends)
        dy = unthunk(dy)
        grads = [_NO] * (len(args) + 1)
        if isinstance(dy, AbstractZero):
            for s in slots:
                if s is not None:
                    grads[s] = dy
            return (_NO, *grads)
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        ax = axis + len(lead)
        widths = [(0, 0)] * np.ndim(dy)
        widths[ax] = (n, n)
        joined = np.diff(np.pad(dy, widths), n, axis=ax)
        if n % 2:
            joined = -joined
        for piece, part, slot in zip(pieces, np.split(joined, bounds, axis=ax), slots):
            if slot is not None:
                grads[slot] = (
                    match_input_batch(piece, part) if lead else match_input(piece, sum_to(part, np.shape(piece)))
                )
        return (_NO, *grads)

    return y, diff_pullback


@frule.register(np.diff, batched=True)
def frule_diff(tangents, a, *args, **kwargs):
    y = np.diff(a, *args, **kwargs)
    n, axis, pieces, slots = _diff_layout(a, args, kwargs)
    dxs = [_ZERO if s is None else unthunk(tangents[s + 1]) for s in slots]
    if all(isinstance(d, AbstractZero) for d in dxs):
        return y, _ZERO
    batches = {np.shape(d)[0] for p, d in zip(pieces, dxs) if not isinstance(d, AbstractZero) and is_batched(p, d)}
    lead = (batches.pop(),) if batches else ()
    parts = []
    for piece, d in zip(pieces, dxs):
        shape = _joined_shape(a, piece, axis)
        if isinstance(d, AbstractZero):
            parts.append(np.zeros(lead + shape, dtype=real_dtype(piece)))
        else:
            d = d if is_batched(piece, d) or not lead else np.broadcast_to(d, lead + np.shape(piece))
            parts.append(
                np.broadcast_to(
                    np.reshape(d, lead + (1,) * (len(shape) - np.ndim(piece)) + np.shape(piece)), lead + shape
                )
            )
    return y, match_output(y, np.diff(np.concatenate(parts, axis=axis + len(lead)), n, axis=axis + len(lead)))


# np.ediff1d(ary, to_end=None, to_begin=None) is [ravel(to_begin), diff(ravel(ary)), ravel(to_end)]
# in ary's dtype: linear in all three. Positionally to_end comes before to_begin.
_EDIFF1D = ("to_end", "to_begin")


def _ediff1d_layout(ary, args: tuple, kwargs: dict):
    """``(pieces, slots, sizes)`` of ``np.ediff1d``: the three values its output joins (to_begin,
    ary, to_end; None where not given), the position of each among the positional arguments (None
    for one given by keyword, a constant), and the length of each part of the output (``ary``'s is
    that of its differences)."""
    o = {"to_end": None, "to_begin": None, **dict(zip(_EDIFF1D, args)), **kwargs}
    pieces = [o["to_begin"], ary, o["to_end"]]
    slots = [2 if len(args) > 1 else None, 0, 1 if args else None]
    sizes = [0 if p is None else math.prod(np.shape(p)) for p in pieces]
    sizes[1] = max(sizes[1] - 1, 0)
    return pieces, slots, sizes


def _flat_tangent(x, dx, lead: tuple):
    """``dx`` flattened after the batch axis ``lead`` (broadcast along it when unbatched)."""
    if lead and not is_batched(x, dx):
        return np.broadcast_to(np.reshape(dx, (-1,)), lead + (math.prod(np.shape(x)),))
    return np.reshape(dx, lead + (-1,))


@rrule.register(np.ediff1d, batched=True)
def rrule_ediff1d(ary, *args, **kwargs):
    """``y = [to_begin, D a, to_end]`` (all flattened) is linear: the cotangent is split into its three
    parts; ``D``, the first difference, has the adjoint ``-D`` of the cotangent padded with a zero at
    both ends (``ā_i = ȳ_{i-1} - ȳ_i``), reshaped as ``ary``.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.ediff1d, np.array([1.0, 4.0, 2.0]), np.array([5.0]))
    >>> y, back(np.array([1.0, 10.0, 100.0]))[1:]
    (array([ 3., -2.,  5.]), (array([-1., -9., 10.]), array([100.])))
    """
    y = np.ediff1d(ary, *args, **kwargs)
    pieces, slots, sizes = _ediff1d_layout(ary, args, kwargs)
    bounds = (sizes[0], sizes[0] + sizes[1])

    def ediff1d_pullback(dy):
        dy = unthunk(dy)
        grads = [_NO] * (len(args) + 1)
        if isinstance(dy, AbstractZero):
            for piece, slot in zip(pieces, slots):
                if slot is not None and piece is not None:
                    grads[slot] = dy
            return (_NO, *grads)
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        to_x = batch_to_input if lead else to_input
        begin, middle, end = dy[..., : bounds[0]], dy[..., bounds[0] : bounds[1]], dy[..., bounds[1] :]
        if sizes[1] or math.prod(np.shape(ary)):  # ary's part: -D' of the differences' cotangent
            middle = -np.diff(np.pad(middle, [(0, 0)] * len(lead) + [(1, 1)]), axis=-1)
        for piece, slot, part in zip(pieces, slots, (begin, middle, end)):
            if slot is not None and piece is not None:
                grads[slot] = to_x(piece, np.reshape(part, lead + np.shape(piece)))
        return (_NO, *grads)

    return y, ediff1d_pullback


@frule.register(np.ediff1d, batched=True)
def frule_ediff1d(tangents, ary, *args, **kwargs):
    y = np.ediff1d(ary, *args, **kwargs)
    pieces, slots, sizes = _ediff1d_layout(ary, args, kwargs)
    dxs = [
        _ZERO if s is None or p is None else tangent_array(p, unthunk(tangents[s + 1])) for p, s in zip(pieces, slots)
    ]
    if all(isinstance(d, AbstractZero) for d in dxs):
        return y, _ZERO
    batches = {np.shape(d)[0] for p, d in zip(pieces, dxs) if not isinstance(d, AbstractZero) and is_batched(p, d)}
    lead = (batches.pop(),) if batches else ()
    parts = []
    for k, (piece, d) in enumerate(zip(pieces, dxs)):
        if isinstance(d, AbstractZero):
            parts.append(np.zeros(lead + (sizes[k],), dtype=real_dtype(y)))
        elif k == 1:
            parts.append(np.diff(_flat_tangent(piece, d, lead), axis=-1))
        else:
            parts.append(_flat_tangent(piece, d, lead))
    return y, match_output(y, np.concatenate(parts, axis=-1))


def _trapezoid_parts(y, x, dx, axis):
    """``(mean, step)``: the means of neighbouring samples of ``y`` along ``axis`` and the widths
    of the trapezoids (``dx``, or ``diff(x)`` placed to broadcast against the means)."""
    y = array_or_active(y)
    ndim = np.ndim(y)
    head = [slice(None)] * ndim
    tail = [slice(None)] * ndim
    head[axis], tail[axis] = slice(1, None), slice(None, -1)
    mean = (y[tuple(head)] + y[tuple(tail)]) / 2
    if x is None:
        return mean, dx
    return mean, _steps(x, ndim, axis)


def _steps(x, ndim, axis, lead=(), points=None):
    """``diff(x)`` as NumPy's trapezoid places it: 1-D sample points along ``axis``; ``x`` may be
    a batch of tangents (``lead``) of the sample points ``points``."""
    if np.ndim(x if points is None else points) == 1:
        shape = [1] * ndim
        shape[axis] = -1
        return np.reshape(np.diff(x, axis=-1), lead + tuple(shape))
    return np.diff(x, axis=axis + len(lead))


def _trapezoid_options(y, args, kwargs):
    o = {"x": None, "dx": 1.0, "axis": -1, **dict(zip(("x", "dx", "axis"), args)), **kwargs}
    return o["x"], o["dx"], axes_of(o["axis"], np.ndim(y))[0]


def _mean_adjoint(g, axis, n):
    """The adjoint of ``y -> (y[1:] + y[:-1]) / 2`` along ``axis`` applied to ``g``, for ``y`` of
    length ``n`` there (an empty ``y`` has no means, and its cotangent is ``g`` itself: empty too)."""
    if n == 0:
        return g
    widths = [(0, 0)] * np.ndim(g)
    widths[axis] = (1, 0)
    front = np.pad(g, widths)
    widths[axis] = (0, 1)
    return (front + np.pad(g, widths)) / 2


def _diff_adjoint(g, axis, n):
    """The adjoint of ``x -> diff(x)`` along ``axis`` applied to ``g``: ``-diff`` of ``g`` padded with zeros
    (for ``x`` of length ``n`` there; an empty ``x`` has no differences, and ``g`` is its empty cotangent)."""
    if n == 0:
        return g
    widths = [(0, 0)] * np.ndim(g)
    widths[axis] = (1, 1)
    return -np.diff(np.pad(g, widths), axis=axis)


@rrule.register(np.trapezoid, batched=True)
def rrule_trapezoid(y, *args, **kwargs):
    """``sum(step * mean)`` along the axis: linear in ``y``, and in ``x`` (through its steps) or ``dx``;
    ``x`` and ``dx`` get cotangents when given by position."""
    out = np.trapezoid(y, *args, **kwargs)
    x, dx, axis = _trapezoid_options(y, args, kwargs)
    mean, step = _trapezoid_parts(y, x, dx, axis)
    # the positional slot that carries the spacing: x, or dx when x is None
    slot = 0 if x is not None else 1
    differentiated = len(args) > slot

    def trapezoid_pullback(dout):
        dout = unthunk(dout)
        grads = [_NO] * len(args)
        if isinstance(dout, AbstractZero):
            if differentiated:
                grads[slot] = dout
            return (_NO, dout, *grads)
        if carries_batch(out, dout):  # a batch of cotangents: the same with the batch axis in front
            return (_NO, *_trapezoid_batch(y, x, dx, axis, mean, step, dout, differentiated, len(args)))
        g = np.expand_dims(dout, axis)
        dy = to_input(y, _mean_adjoint(np.broadcast_to(g * conj(step), np.shape(mean)), axis, np.shape(y)[axis]))
        through = g * conj(mean)  # the cotangent of the steps
        if differentiated and x is not None and np.ndim(x) == 1:
            others = tuple(i for i in range(np.ndim(through)) if i != axis)
            grads[0] = to_input(x, _diff_adjoint(np.sum(through, axis=others), 0, np.size(x)))
        elif differentiated and x is not None:
            grads[0] = to_input(x, _diff_adjoint(sum_to(through, np.shape(step)), axis, np.shape(x)[axis]))
        elif differentiated:
            grads[1] = to_input(dx, sum_to(through, np.shape(dx)))
        return (_NO, dy, *grads)

    return out, trapezoid_pullback


def _trapezoid_batch(y, x, dx, axis, mean, step, dout, differentiated, n_args):
    """The cotangents of ``np.trapezoid``'s ``y`` and the spacing argument for a batch ``dout``."""
    grads = [_NO] * n_args
    g = np.expand_dims(dout, axis + 1)
    lead = np.shape(dout)[:1]
    n = np.shape(y)[axis]
    dy = batch_to_input(y, _mean_adjoint(np.broadcast_to(g * conj(step), lead + np.shape(mean)), axis + 1, n))
    through = g * conj(mean)
    if differentiated and x is not None and np.ndim(x) == 1:
        others = tuple(i for i in range(1, np.ndim(through)) if i != axis + 1)
        grads[0] = batch_to_input(x, _diff_adjoint(np.sum(through, axis=others), 1, np.size(x)))
    elif differentiated and x is not None:
        grads[0] = batch_to_input(x, _diff_adjoint(unbroadcast_batch(step, through), axis + 1, np.shape(x)[axis]))
    elif differentiated:
        grads[1] = batch_to_input(dx, through)
    return (dy, *grads)


@frule.register(np.trapezoid, batched=True)
def frule_trapezoid(tangents, y, *args, **kwargs):
    out = np.trapezoid(y, *args, **kwargs)
    x, dx, axis = _trapezoid_options(y, args, kwargs)
    mean, step = _trapezoid_parts(y, x, dx, axis)
    dy = tangent_array(y, unthunk(tangents[1]))
    slot = 0 if x is not None else 1
    dspacing = tangent_array(args[slot], unthunk(tangents[slot + 2])) if len(tangents) > slot + 2 else _ZERO
    terms = []
    if not isinstance(dy, AbstractZero):
        lead = 1 if is_batched(y, dy) else 0
        terms.append(np.sum(step * _trapezoid_parts(dy, None, None, axis + lead)[0], axis=axis + lead))
    if not isinstance(dspacing, AbstractZero):
        spacing = x if x is not None else dx
        lead = np.shape(dspacing)[:1] if is_batched(spacing, dspacing) else ()
        dstep = _steps(dspacing, np.ndim(y), axis, lead, x) if x is not None else dspacing
        terms.append(np.sum(align(step, dstep, np.ndim(mean)) * mean, axis=axis + len(lead)))
    if not terms:
        return out, _ZERO
    return out, match_output(out, sum(terms[1:], terms[0]))


# ----- unwrap --------------------------------------------------------------------------------


def _unwrap_plan(x, o, primal):
    """``np.unwrap`` adds to each entry a multiple of the period that is constant between the jumps
    it removes: its derivative is the identity (``discont`` and ``period`` are settings).

    >>> import chainrules as cr
    >>> y, back = cr.rrule(np.unwrap, np.array([3.0, -3.0]))
    >>> y, back(np.array([1.0, 2.0]))
    (array([3.        , 3.28318531]), (NoTangent(), array([1., 2.])))
    """

    def unwrap_back(dy, lead=()):
        return dy

    def unwrap_forward(dx, batched):
        return dx

    return primal(), unwrap_back, unwrap_forward


_register((np.unwrap,), ("discont", "axis"), {"discont": None, "axis": -1, "period": 2 * np.pi}, _unwrap_plan, True)


# ----- median, quantile, percentile ----------------------------------------------------------

_QUANTILE = ("q", "axis", "out", "overwrite_input", "method", "keepdims")
_QUANTILE_DEFAULTS = {
    "q": None,
    "axis": None,
    "overwrite_input": False,
    "method": "linear",
    "keepdims": False,
    "weights": None,
}

# NumPy's methods, as its ``_QuantileMethods`` computes them (the same expressions, so the same rounding
# and so the same entries of the sorted row ``s`` of ``n`` entries). The continuous ones interpolate at
# Hyndman and Fan's virtual index ``v = n q + alpha + q (1 - alpha - beta) - 1``, clamped to [0, n - 1]:
# ``(1 - g) s[floor v] + g s[floor v + 1]`` with ``g = v - floor v``, which moves with q at
# ``dv/dq = n + 1 - alpha - beta``.
_CONTINUOUS = {  # method: (alpha, beta)
    "linear": (1.0, 1.0),  # (whose v NumPy computes as (n - 1) q)
    "weibull": (0.0, 0.0),
    "hazen": (0.5, 0.5),
    "median_unbiased": (1 / 3, 1 / 3),
    "normal_unbiased": (3 / 8, 3 / 8),
    "interpolated_inverted_cdf": (0.0, 1.0),
}


def _boundary(v, previous):
    """NumPy's ``_discrete_interpolation_to_boundaries``: the entry ``floor v`` where ``previous(g, v)``
    (``g = v - floor v``), else the next one, and no entry before the first."""
    below = np.floor(v)
    return np.maximum(np.where(previous(v - below, v), below, below + 1), 0).astype(np.intp)


# The discontinuous ones select the entry of an integer index v, or take ``(1 - g) s[floor v] +
# g s[floor v + 1]`` at a g of their own (the first entry for v < 0, the last for v >= n - 1): q moves nothing.
_DISCONTINUOUS = {  # method: (v(n, q), g(v - floor v, v) where v is not an integer)
    "inverted_cdf": (lambda n, q: _boundary(n * q - 1, lambda g, v: g == 0), None),
    "averaged_inverted_cdf": (lambda n, q: n * q - 1, lambda g, v: np.where(g == 0, 0.5, 1.0)),
    "closest_observation": (
        lambda n, q: _boundary(n * q - 1 - 0.5, lambda g, v: (g == 0) & (np.floor(v) % 2 == 1)),
        None,
    ),
    "lower": (lambda n, q: np.floor((n - 1) * q).astype(np.intp), None),
    "higher": (lambda n, q: np.ceil((n - 1) * q).astype(np.intp), None),
    "nearest": (lambda n, q: np.around((n - 1) * q).astype(np.intp), None),
    "midpoint": (
        lambda n, q: 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)),
        lambda g, v: np.where(v % 1 == 0, 0.0, 0.5),
    ),
}


class _OrderStatistics:
    """The rows of ``a`` to be reduced (the reduced axes moved last and flattened), each row's
    sorting permutation, and the weights of NumPy's ``method``: output ``k`` of a row ``s`` (sorted)
    is ``(1 - g) s[lo] + g s[hi]``, at the entries and with the weight NumPy interpolates with (see
    ``_CONTINUOUS`` and ``_DISCONTINUOUS``), and moves with ``q_k`` at ``dv (s[hi] - s[lo])``
    (``dv`` zero for a discontinuous method). With ``weights`` (``method='inverted_cdf'``) the
    output is the first sorted entry at which the weights' cumulative share reaches ``q_k``: it
    moves with that entry only, and with neither q nor the weights.

    With ``nan`` (``np.nanmedian``, ``np.nanquantile``, ``np.nanpercentile``) a row's NaN entries
    take no part: they sort last, ``n`` is each row's count of the others, and the positions and
    weights are each row's own (a NaN entry's weight, and so its cotangent, is zero; a row of NaNs,
    whose quantile is NaN, has no weights and no slope in ``q``).

    Ties take the order of a stable sort: the cotangent of the selected value goes to one of the
    tied entries (the first for the lower one), one valid subgradient of a piecewise linear map.
    """

    def __init__(self, a, q, axis, nan: bool = False, method: str = "linear", weights=None):
        x = array_or_active(a)  # (a Hessian's dual numbers: the permutation is of their values)
        self.axes = axes_of(axis, x.ndim)
        self.others = [i for i in range(x.ndim) if i not in self.axes]
        self.shape = x.shape
        self.n = size_along(x.shape, self.axes)
        self.rows = self.to_rows(x)
        self.perm = np.argsort(self.rows, axis=-1, kind="stable")  # (NaNs last)
        # each row's count of entries taking part: (*rest, 1) without NaNs, else n for every row
        self.counts = np.sum(~np.isnan(stood_for(self.rows)), axis=-1, keepdims=True) if nan else self.n
        # q in [0, 1] as NumPy has it (in its own dtype, q / 100 of a percentile), or a Hessian's dual
        # numbers, whose derivatives g carries
        self.q_shape = np.shape(q)
        qs = np.ravel(q)
        dtype = stood_for(qs).dtype
        # n as NumPy multiplies q by it: a Python int, or each row's count as numbers of q's dtype
        n = self.counts.astype(dtype) if nan and dtype.kind == "f" else self.counts
        last = self.counts - 1
        if weights is not None:
            self.lo = self.hi = self._weighted(stood_for(weights), stood_for(qs), nan)
            frac, self.dv = 0.0, 0.0
        elif method in _CONTINUOUS:
            alpha, beta = _CONTINUOUS[method]
            v = (n - 1) * qs if method == "linear" else n * qs + (alpha + qs * (1 - alpha - beta)) - 1
            at = stood_for(v)
            self.lo = np.clip(np.floor(at).astype(np.intp), 0, np.maximum(last - 1, 0))
            self.hi = np.minimum(self.lo + 1, last)
            inside = (at >= 0) & (at <= last)  # (past either end: the first or the last entry, which q does not move)
            frac = inside * (v - self.lo) + (at > last)
            self.dv = inside * (self.counts + 1 - alpha - beta)
        else:
            index, gamma = _DISCONTINUOUS[method]
            v = index(n, stood_for(qs))
            self.lo, self.hi = (np.clip(np.floor(v) + k, 0, last).astype(np.intp) for k in (0, 1))
            frac = 0.0 if gamma is None else gamma(v - np.floor(v), v)
            self.dv = 0.0
        if nan:  # a row of NaNs: no position (-1 selects no entry)
            self.lo = np.where(self.counts > 0, self.lo, -1)
        # row k: 1 - g at lo and g at hi (the two are one entry at either end); no entries, no weights
        # (the quantile of no entries is NaN); (Q, n), or (*rest, Q, n) for rows of positions of their own
        self.rowwise = nan or weights is not None
        if self.rowwise or isinstance(frac, ActiveValue):  # (a Hessian's duals: from masks, not written in place)
            entries = np.arange(self.n)
            at_lo, at_hi = entries == self.lo[..., None], entries == self.hi[..., None]
            self.weights = at_lo * np.expand_dims(1 - frac, -1) + at_hi * np.expand_dims(frac, -1)
        else:
            self.weights = np.zeros((qs.size, self.n))
            if self.n:
                np.add.at(self.weights, (np.arange(qs.size), self.lo), 1 - frac)
                np.add.at(self.weights, (np.arange(qs.size), self.hi), frac)
        self.size, self.nan = qs.size, nan  # (Q)

    def _weighted(self, weights, q, nan: bool):
        """NumPy's ``inverted_cdf`` with ``weights``: the position in each sorted row of its first entry at
        which the weights' cumulative share reaches ``q`` (after leading zero weights), ``(*rest, Q)``."""
        if np.shape(weights) != self.shape:  # one weight for each position along the one axis
            weights = np.reshape(weights, [-1 if i in self.axes else 1 for i in range(len(self.shape))])
        w = np.take_along_axis(self.to_rows(np.broadcast_to(weights, self.shape)), self.perm, axis=-1)
        if nan:  # (a NaN entry's weight, which NumPy leaves out with it)
            w = np.where(np.arange(self.n) < self.counts, w, 0)
        with np.errstate(invalid="ignore", divide="ignore"):  # (a row of NaNs: no weights, and no position)
            cdf = np.cumsum(w, axis=-1, dtype=np.float64)
            cdf /= cdf[..., -1:]
        cdf = cdf.astype(q.dtype) if q.dtype.kind == "f" else cdf  # (compared in q's dtype, as NumPy compares)
        cdf = np.where(cdf == 0, -1, cdf)
        return np.minimum(np.sum(cdf[..., None, :] < q[:, None], axis=-1), self.counts - 1)

    def to_rows(self, x, lead=()):
        """``x`` (with ``lead`` batch axes in front) as rows of the reduced entries."""
        k = len(lead)
        moved = np.transpose(x, tuple(range(k)) + tuple(i + k for i in self.others + list(self.axes)))
        return np.reshape(moved, lead + tuple(self.shape[i] for i in self.others) + (self.n,))

    def unsort(self, rows):
        """Rows in sorted order (with batch axes in front) put back in the order of the entries."""
        perm = np.broadcast_to(np.reshape(self.perm, np.shape(rows)[-2:]), np.shape(rows))
        if isinstance(rows, ActiveValue):  # a Hessian's dual numbers, which a plain array cannot take:
            unperm = np.empty_like(perm)  # gathered through the inverse permutation
            np.put_along_axis(unperm, perm, np.broadcast_to(np.arange(self.n), perm.shape), axis=-1)
            return np.take_along_axis(rows, unperm, axis=-1)
        unsorted = np.zeros_like(rows)  # (one scatter: cheaper than the gather's two passes)
        np.put_along_axis(unsorted, perm, rows, axis=-1)
        return unsorted

    def from_rows(self, rows, lead=()):
        """Rows of reduced entries (with ``lead`` batch axes in front) laid out as ``a`` again."""
        k = len(lead)
        moved = np.reshape(rows, lead + tuple(self.shape[i] for i in self.others + list(self.axes)))
        return np.transpose(
            moved, tuple(range(k)) + tuple(int(i) + k for i in np.argsort(self.others + list(self.axes)))
        )

    def pull(self, rows_dy):
        """The cotangents of the sorted entries, ``(*lead, rows, n)``, from the outputs' ``(*lead, Q, rows)``."""
        dy = np.swapaxes(rows_dy, -1, -2)
        if not self.rowwise:
            return dy @ self.weights
        weights = np.reshape(self.weights, (math.prod(self.rows.shape[:-1]), self.size, self.n))  # (rows, Q, n)
        return (dy[..., None, :] @ weights)[..., 0, :]

    def push(self, rows):
        """The outputs' tangents, ``(*lead, *rest, Q)``, from the entries' as rows ``(*lead, *rest, n)``."""
        picked = np.take_along_axis(rows, np.broadcast_to(self.perm, np.shape(rows)), axis=-1)
        if not self.rowwise:
            return picked @ self.weights.T
        if self.nan:  # a NaN entry's tangent (NaN itself where the NaN was computed) takes no part
            picked = np.where(np.arange(self.n) < self.counts, picked, 0)
        return (picked[..., None, :] @ np.swapaxes(self.weights, -1, -2))[..., 0, :]

    def slopes(self):
        """``d y_k / d q_k`` for every row: ``dv (s[hi] - s[lo])``, shape ``(Q, *rest)``."""
        if not self.n:  # NaN, as the quantile of no entries is
            return np.full((self.size, *self.rows.shape[:-1]), np.nan)
        s = np.take_along_axis(self.rows, self.perm, axis=-1)
        at = self.rows.shape[:-1] + (self.size,)
        hi = np.take_along_axis(s, np.broadcast_to(self.hi, at), axis=-1)
        lo = np.take_along_axis(s, np.broadcast_to(self.lo, at), axis=-1)
        slopes = self.dv * (hi - lo)
        if self.nan:  # a row of NaNs: its NaN moves with nothing (a NaN slope would reach past np.nansum)
            slopes = np.where(self.counts > 0, slopes, 0)
        return np.moveaxis(slopes, -1, 0)


def _quantile_batch(a, q, stats, scale, dy, q_given):
    """The cotangents of ``a`` (and of ``q`` when ``q_given``) for a batch ``dy`` of cotangents."""
    lead = np.shape(dy)[:1]
    rows_dy = np.reshape(dy, lead + (stats.size, -1))  # (B, Q, rows)
    da = match_input_batch(a, stats.from_rows(stats.unsort(stats.pull(rows_dy)), lead))
    if not q_given:
        return (da,)
    dq = scale * np.sum(np.reshape(stats.slopes(), np.shape(rows_dy)[1:]) * rows_dy, axis=-1)
    return da, match_input_batch(q, np.reshape(dq, lead + stats.q_shape))


def _quantile_rules(f, percent: bool = False, fixed_q=None, nan: bool = False) -> None:
    """Rules for ``np.quantile``/``np.percentile`` (``q`` in ``[0, 1]``, or in percent) of every
    method NumPy has, with ``weights`` too (``method='inverted_cdf'``, the one NumPy weighs; they
    are settings, as the output moves with them nowhere), and ``np.median`` (``fixed_q = 0.5``);
    with ``nan``, for their nan variants, whose NaN entries take no part (and get zero cotangents).

    >>> import chainrules as cr
    >>> y, back = cr.rrule(np.nanmedian, np.array([3.0, np.nan, 1.0, 2.0]))
    >>> y, back(1.0)
    (np.float64(2.0), (NoTangent(), array([0., 0., 0., 1.])))
    >>> y, back = cr.rrule(np.quantile, np.array([3.0, 1.0, 2.0, 4.0]), 0.5, method="hazen")
    >>> y, back(1.0)[1:]
    (np.float64(2.5), (array([0.5, 0. , 0.5, 0. ]), 4.0))
    """
    names = _QUANTILE if fixed_q is None else tuple(n for n in _QUANTILE if n not in ("q", "method"))
    defaults = _QUANTILE_DEFAULTS
    if fixed_q is not None:  # (the median takes neither a method nor weights)
        defaults = {k: v for k, v in _QUANTILE_DEFAULTS.items() if k not in ("q", "method", "weights")}
    scale = 0.01 if percent else 1.0  # (d(q / 100)/dq)

    def setup(a, args, kwargs):
        o = bind(f, args, kwargs, names, defaults)
        options = {"axis": o["axis"], "keepdims": o["keepdims"]}
        if fixed_q is not None:
            y, q = f(a, **options), fixed_q
        else:
            q, options["method"] = o["q"], o["method"]
            y = f(a, q, **options, **({} if o["weights"] is None else {"weights": o["weights"]}))
        if nan and np.size(a) == 0:  # NumPy's nan variants of no entries: nanmean's NaNs (without q's axes)
            return y, q, None
        quantiles = array_or_active(q)
        if percent:
            quantiles = np.true_divide(quantiles, 100)  # (NumPy's own, so its rounding)
        return y, q, _OrderStatistics(a, quantiles, o["axis"], nan, o.get("method", "linear"), o.get("weights"))

    def rrule_quantile(a, *args, **kwargs):
        y, q, stats = setup(a, args, kwargs)
        q_given = fixed_q is None and bool(args)  # q by position gets a cotangent
        real = not _complex(y)  # (np.median takes complex entries, quantile and percentile do not)

        def quantile_pullback(dy):
            dy = unthunk(dy)
            rest = (_NO,) * (len(args) - q_given)
            if isinstance(dy, AbstractZero) or stats is None:  # (None: a constant of no entries)
                dy = dy if isinstance(dy, AbstractZero) else _ZERO
                return (_NO, dy, *((dy,) if q_given else ()), *rest)
            if real:
                dy = np.real(dy)  # a real output's cotangent is real; a complex median's keeps its imaginary part
            if carries_batch(y, dy):
                return (_NO, *_quantile_batch(a, q, stats, scale, dy, q_given), *rest)
            rows_dy = np.reshape(dy, (stats.size, -1))  # (Q, rows)
            da = match_input(a, stats.from_rows(stats.unsort(stats.pull(rows_dy))))
            if not q_given:
                return (_NO, da, *rest)
            dq = scale * np.sum(np.reshape(stats.slopes(), rows_dy.shape) * rows_dy, axis=1)
            return (_NO, da, match_input(q, np.reshape(dq, stats.q_shape)), *rest)

        quantile_pullback.__qualname__ = f"{f.__name__}_pullback"
        return y, quantile_pullback

    def frule_quantile(tangents, a, *args, **kwargs):
        y, q, stats = setup(a, args, kwargs)
        da = tangent_array(a, unthunk(tangents[1]))  # (a list's or tuple's tangent as one array)
        dq = tangent_array(q, unthunk(tangents[2])) if fixed_q is None and args and len(tangents) > 2 else _ZERO
        if stats is None:
            return y, _ZERO
        out_shape = np.shape(y)
        terms = []
        if not isinstance(da, AbstractZero):
            lead = np.shape(da)[:1] if is_batched(a, da) else ()
            picked = stats.push(stats.to_rows(da, lead))  # (*lead, *rest, Q)
            terms.append(np.reshape(np.moveaxis(picked, -1, len(lead)), lead + out_shape))
        if not isinstance(dq, AbstractZero):
            lead = np.shape(dq)[:1] if is_batched(q, dq) else ()
            flat = np.reshape(dq, lead + (-1,) + (1,) * len(stats.others))
            terms.append(np.reshape(scale * flat * stats.slopes(), lead + out_shape))
        if not terms:
            return y, _ZERO
        return y, match_output(y, sum(terms[1:], terms[0]))

    rrule_quantile.__qualname__ = f"rrule_{f.__name__}"
    frule_quantile.__qualname__ = f"frule_{f.__name__}"
    rrule.register(f, batched=True)(rrule_quantile)
    frule.register(f, batched=True)(frule_quantile)


_quantile_rules(np.quantile)
_quantile_rules(np.percentile, percent=True)
_quantile_rules(np.median, fixed_q=0.5)
_quantile_rules(np.nanquantile, nan=True)
_quantile_rules(np.nanpercentile, percent=True, nan=True)
_quantile_rules(np.nanmedian, fixed_q=0.5, nan=True)
for _f in (np.quantile, np.percentile, np.nanquantile, np.nanpercentile):
    declare_options(_f, ("weights",))  # (the output moves with them nowhere: see _quantile_rules)


# ----- grouped sums --------------------------------------------------------------------------


def _bincount_weights(args: tuple, kwargs: dict):
    """``np.bincount(x, weights, minlength)``'s weights, positional or keyword (None: counting)."""
    return args[0] if args else kwargs.get("weights")


@rrule.register(np.bincount, batched=True)
def rrule_bincount(x, *args, **kwargs):
    """``y[k] = Σ_{j: x_j = k} w_j`` is linear in the weights ``w`` (the integer ``x`` and
    ``minlength`` are settings; without weights ``y`` counts): the weights' cotangent gathers the
    output's at the bins, ``w̄_j = ȳ[x_j]`` (a sum with an index array, as ``np.add.at``'s).

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.bincount, np.array([0, 2, 0]), np.array([1.0, 2.0, 3.0]))
    >>> y, back(np.array([10.0, 20.0, 30.0]))[2]
    (array([4., 0., 2.]), array([10., 30., 10.]))
    """
    y = np.bincount(x, *args, **kwargs)
    weights = _bincount_weights(args, kwargs)
    bins = np.asarray(x)

    def bincount_pullback(dy):
        dy = unthunk(dy)
        rest = [_NO] * len(args)
        if weights is not None and args and not isinstance(dy, AbstractZero):
            if carries_batch(y, dy):
                rest[0] = batch_to_input(weights, dy[:, bins])
            else:
                rest[0] = to_input(weights, dy[bins])
        return (_NO, _NO, *rest)

    return y, bincount_pullback


@frule.register(np.bincount, batched=True)
def frule_bincount(tangents, x, *args, **kwargs):
    y = np.bincount(x, *args, **kwargs)
    weights = _bincount_weights(args, kwargs)
    dw = unthunk(tangents[2]) if args and len(tangents) > 2 else _ZERO
    if y.dtype.kind not in "fc":  # counts (and NumPy's integer zeros for no bins at all): no derivative
        return y, _NO
    if weights is None or isinstance(dw, AbstractZero):
        return y, _ZERO
    bins = np.asarray(x)
    if is_batched(weights, dw):  # each tangent of the batch summed into the bins: one scatter
        dtype = np.result_type(dw.dtype if isinstance(dw, ActiveValue) else dw, y)
        return y, scatter_add((np.shape(dw)[0], y.size), (slice(None), bins), dw, dtype=dtype)
    return y, np.bincount(bins, dw, y.size)
