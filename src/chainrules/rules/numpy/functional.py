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

from ...core import AbstractZero, NoTangent, ZeroTangent, add, rrule, unthunk
from ...core.active import ActiveValue
from ..operators import seq_entries, seq_tangent
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
    """``np.vectorize(pyfunc)(*args, **kwargs)``: ``pyfunc`` on each element (or, with a
    ``signature``, each core slice) of the broadcast arguments, laid out as NumPy lays it out, one
    output or several (a tuple of arrays). Positional arguments in ``excluded`` are passed whole to
    every call and get the sum of the calls' cotangents; keyword arguments are settings, vectorized
    as NumPy vectorizes them unless excluded.

    >>> import numpy as np, chainrules as cr
    >>> square = np.vectorize(lambda t: t * t)
    >>> cr.gradient(lambda x: np.sum(square(x)), np.array([1.0, 3.0]))
    (array([2., 6.]),)
    >>> norm2 = np.vectorize(lambda row: row @ row, signature="(n)->()")
    >>> cr.gradient(lambda X: np.sum(norm2(X)), np.array([[1.0, 2.0], [3.0, 4.0]]))
    (array([[2., 4.],
           [6., 8.]]),)
    """
    excluded = vectorized.excluded
    looped = [i for i in range(len(args)) if i not in excluded]
    names = [k for k in kwargs if k not in excluded]
    values = [args[i] for i in looped] + [kwargs[k] for k in names]
    if vectorized.signature is None:
        in_core, out_core = [()] * len(values), None
    else:
        in_core, out_core = vectorized._in_and_out_core_dims
        if len(values) != len(in_core):
            raise TypeError(f"wrong number of positional arguments: expected {len(in_core)}, got {len(values)}")
    loops = [np.shape(v)[: np.ndim(v) - len(core)] for v, core in zip(values, in_core)]
    shape = np.broadcast_shapes(*loops)
    # each argument broadcast over the calls' grid, its core axes kept (np.broadcast_to has rules)
    arrays = [np.broadcast_to(v, shape + np.shape(v)[len(loop) :]) for v, loop in zip(values, loops)]
    cells = list(np.ndindex(shape))
    if not cells:  # NumPy's empty result (with otypes) or its error: nothing to differentiate
        return vectorized(*args, **kwargs), lambda dy: (_NO, _NO, *(_ZERO for _ in args))

    def call(cell):
        positional = list(args)
        for i, a in zip(looped, arrays):
            positional[i] = a[cell]
        keywords = dict(kwargs)
        keywords.update((k, a[cell]) for k, a in zip(names, arrays[len(looped) :]))
        return _pullback_of(vectorized.pyfunc, *positional, **keywords)

    calls = [call(cell) for cell in cells]
    first = calls[0][0]
    several = isinstance(first, tuple) if out_core is None else len(out_core) != 1
    results = [v if several else (v,) for v, _ in calls]
    if out_core is not None and len(results[0]) != len(out_core):
        raise ValueError(f"wrong number of outputs from pyfunc: expected {len(out_core)}, got {len(results[0])}")
    outputs = []
    for k in range(len(results[0])):
        out = _stacked([r[k] for r in results], shape + np.shape(results[0][k]))
        if vectorized.otypes and not isinstance(out, ActiveValue):
            out = out.astype(vectorized.otypes[k])
        outputs.append(out)
    backs = [back for _, back in calls]

    def vectorize_pullback(dy):
        douts = [unthunk(d) for d in (seq_entries(dy, len(outputs)) if several else (dy,))]
        if all(isinstance(d, AbstractZero) for d in douts):
            return (_NO, _NO, *(_ZERO for _ in args))
        df, owned = _NO, False
        parts = [[] for _ in looped]
        dwhole = {i: _ZERO for i in range(len(args)) if i in excluded}
        for cell, result, back in zip(cells, results, backs):
            cell_dy = [_ZERO if isinstance(d, AbstractZero) else d[cell] for d in douts]
            d = back(seq_tangent(result, cell_dy) if several else cell_dy[0])
            df, owned = _add_function_tangent(df, owned, d[0])
            for part, i, a in zip(parts, looped, arrays):
                da = unthunk(d[1 + i])
                part.append(np.zeros(np.shape(a)[len(shape) :]) if isinstance(da, AbstractZero) else da)
            for i in dwhole:
                dwhole[i] = add(dwhole[i], d[1 + i])
        dargs = [dwhole.get(i, _ZERO) for i in range(len(args))]
        for i, part, a in zip(looped, parts, arrays):
            dargs[i] = to_input(args[i], _summed_to(args[i], np.reshape(np.stack(part), np.shape(a))))
        return (_NO, df, *dargs)

    return (tuple(outputs) if several else outputs[0]), vectorize_pullback


def _summed_to(a, d):
    """The cotangent ``d`` of ``a`` broadcast to ``d``'s shape, summed back to ``a``'s shape."""
    shape = np.shape(d)
    lead = len(shape) - np.ndim(a)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(np.shape(a)) if n == 1 and shape[lead + i] != 1)
    return np.reshape(np.sum(d, axis=axes), np.shape(a))
