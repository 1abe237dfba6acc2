"""Rules for NumPy's higher-order functions: ``np.apply_along_axis`` and the call of an
``np.vectorize`` object.

The user's callable is differentiated once per slice (or element), by its rule if it has one,
else by the running reverse engine (``rrule_via_ad``), as ``map``'s is (rules/pyfunctional.py).
The results are laid out as NumPy lays them out; the pullback hands each call's pullback its
part of the cotangent and gathers the parts of the inputs' cotangents. There is no forward rule
(it would run the callable on dual numbers itself): forward mode (``cr.jvp``, ``cr.jacobian``)
runs the function as the source engine's primal, where these rules run on the dual numbers.
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, NoRuleError, NoTangent, ZeroTangent, add, rrule, unthunk
from ...core.active import ActiveValue
from ...core.errors import user_location
from ..pyfunctional import _add_function_tangent, _pullback_of
from ._arrays import to_input

_NO = NoTangent()
_ZERO = ZeroTangent()


def _stacked(values: list, shape: tuple):
    """``values`` (numbers or arrays of one shape, plain or an engine's) as one array of ``shape``
    (the calls' grid, then each value's axes), in the first value's dtype as NumPy's buffer has it."""
    out = np.reshape(np.stack(values), shape)
    first = values[0]
    if not isinstance(out, ActiveValue) and not isinstance(first, ActiveValue):
        dtype = np.result_type(first)
        if out.dtype != dtype:
            out = out.astype(dtype)
    return out


@rrule.register(np.apply_along_axis)
def rrule_apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` on each 1-d slice of ``arr`` along ``axis``, the result's axes standing where
    ``axis`` was (NumPy's layout); ``args`` are passed to every call and get the sum of their
    cotangents, ``kwargs`` are settings.

    >>> import numpy as np, chainrules as cr
    >>> weights = np.array([1.0, 10.0])
    >>> cr.gradient(lambda A: weights @ np.apply_along_axis(lambda r: r @ r, 1, A), np.array([[1.0, 2.0], [3.0, 4.0]]))
    (array([[ 2.,  4.],
           [60., 80.]]),)
    """
    ndim = np.ndim(arr)
    rows = np.moveaxis(arr, axis, -1)  # (NumPy's error for an axis out of range)
    axis %= ndim
    grid = np.shape(rows)[:-1]
    cells = list(np.ndindex(grid))
    if not cells:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")  # (NumPy's)
    calls = [_pullback_of(func1d, rows[cell], *args, **kwargs) for cell in cells]
    res_shape = np.shape(calls[0][0])
    buffer = _stacked([y for y, _ in calls], grid + res_shape)
    k, r = len(grid), len(res_shape)
    order = [*range(axis), *range(k, k + r), *range(axis, k)]
    y = np.transpose(buffer, order)
    backs = [back for _, back in calls]

    def apply_along_axis_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, _NO, _NO, dy, *(dy for _ in args))
        dbuffer = np.transpose(dy, np.argsort(order))
        df, owned = _NO, False
        drows, dargs = [], [_ZERO] * len(args)
        for cell, back in zip(cells, backs):
            d = back(dbuffer[cell])
            df, owned = _add_function_tangent(df, owned, d[0])
            drow = unthunk(d[1])
            drows.append(np.zeros(np.shape(rows)[-1:]) if isinstance(drow, AbstractZero) else drow)
            dargs = [add(a, da) for a, da in zip(dargs, d[2:])]
        darr = np.moveaxis(np.reshape(np.stack(drows), np.shape(rows)), -1, axis)
        return (_NO, df, _NO, to_input(arr, darr), *dargs)

    return y, apply_along_axis_pullback


@rrule.register(np.vectorize.__call__)
def rrule_vectorize_call(vectorized: np.vectorize, *args, **kwargs):
    """``np.vectorize(pyfunc)(*args)``: ``pyfunc`` on each element of the broadcast arguments,
    one output of the broadcast shape (in the first result's dtype, or ``otypes``'s). A ``signature``,
    several outputs, ``excluded`` arguments or keyword arguments are refused.

    >>> import numpy as np, chainrules as cr
    >>> square = np.vectorize(lambda t: t * t)
    >>> cr.gradient(lambda x: np.sum(square(x)), np.array([1.0, 3.0]))
    (array([2., 6.]),)
    """
    if vectorized.signature is not None or vectorized.excluded or kwargs:
        raise NoRuleError(
            np.vectorize.__call__,
            (vectorized, *args),
            location=user_location(),
            reason="the rule takes elementwise calls of positional arguments only (no signature, excluded or keywords)",
        )
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    arrays = [np.broadcast_to(a, shape) for a in args]  # (np.broadcast_to has rules: a Hessian's duals pass)
    cells = list(np.ndindex(shape))
    if not cells:  # NumPy's empty result (with otypes) or its error: nothing to differentiate
        return vectorized(*args), lambda dy: (_NO, _NO, *(_ZERO for _ in args))
    calls = [_pullback_of(vectorized.pyfunc, *(a[cell] for a in arrays)) for cell in cells]
    if isinstance(calls[0][0], tuple):
        raise NoRuleError(
            np.vectorize.__call__, (vectorized, *args), location=user_location(), reason="it returns several outputs"
        )
    y = _stacked([v for v, _ in calls], shape)
    if vectorized.otypes and not isinstance(y, ActiveValue):
        y = y.astype(vectorized.otypes[0])
    backs = [back for _, back in calls]

    def vectorize_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (_NO, _NO, *(dy for _ in args))
        df, owned = _NO, False
        parts = [[] for _ in args]
        for cell, back in zip(cells, backs):
            d = back(dy[cell])
            df, owned = _add_function_tangent(df, owned, d[0])
            for part, da in zip(parts, d[1:]):
                da = unthunk(da)
                part.append(0.0 if isinstance(da, AbstractZero) else da)
        dargs = [to_input(a, _summed_to(a, np.reshape(np.stack(p), shape))) for a, p in zip(args, parts)]
        return (_NO, df, *dargs)

    return y, vectorize_pullback


def _summed_to(a, d):
    """The cotangent ``d`` of ``a`` broadcast to ``d``'s shape, summed back to ``a``'s shape."""
    shape = np.shape(d)
    lead = len(shape) - np.ndim(a)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(np.shape(a)) if n == 1 and shape[lead + i] != 1)
    return np.reshape(np.sum(d, axis=axes), np.shape(a))
