"""Rules for NumPy's linear operators over neighbouring entries: ``np.gradient`` (finite-difference
stencils) and ``np.lib.stride_tricks.sliding_window_view`` (the windows of a convolution).

Both are linear in the array, so each pushforward is the function applied to the tangent and each
pullback its adjoint, built from slices, ``np.pad`` and sums, which have rules themselves: a
Hessian, whose pullbacks run on dual numbers, goes through them too.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...core import AbstractZero, NoTangent, Thunk, ZeroTangent, frule, rrule, unthunk, user_location
from ...core.errors import NoDerivativeError
from ...core.tangents import RefusedThunk, Tangent
from ._arrays import cotangent_array, sequence_items, to_input

_NO = NoTangent()
_ZERO = ZeroTangent()

# ----- np.gradient ----------------------------------------------------------------------------------

#: a stencil of np.gradient reaches at most two entries either side (the second-order edges)
_REACH = 2
_WIDTH = 2 * _REACH + 1


def _gradient_layout(f, varargs, axis):
    """``(axes, spacings, slots)``: the axes differentiated along, in the order of the outputs, the
    spacing of each (a scalar or coordinates, as given) and the position in ``varargs`` it came
    from (``None`` for the default spacing of 1)."""
    ndim = np.ndim(f)
    axes = tuple(range(ndim)) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(int(a) % ndim for a in axes)
    if not varargs:
        return axes, (1.0,) * len(axes), (None,) * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return axes, (varargs[0],) * len(axes), (0,) * len(axes)
    return axes, tuple(varargs), tuple(range(len(varargs)))


def _stencils(n: int, spacing, edge_order: int, like):
    """``C`` of shape ``(n, 5)``: ``np.gradient(v, spacing)[i] = sum_k C[i, k] v[i + k - 2]``.

    Read off ``np.gradient`` itself, so every spacing and edge order NumPy supports is matched: it
    is applied to five probes, the ``j``-th one at the positions ``i`` with ``i % 5 == j``; as a
    stencil spans at most five neighbours, output ``i`` of probe ``(i + k - 2) % 5`` is ``C[i, k]``.
    """
    positions = np.arange(n)
    probes = (positions[None, :] % _WIDTH == np.arange(_WIDTH)[:, None]).astype(like)
    responses = np.gradient(probes, spacing, axis=1, edge_order=edge_order)
    rows = (positions[:, None] + np.arange(_WIDTH)[None, :] - _REACH) % _WIDTH
    return responses[rows, positions[:, None]]


def _gradient_adjoint(dy, stencils, axis: int):
    """``sum_i C[i, k] dy[i]`` sent to position ``i + k - 2`` along ``axis``: the adjoint of the stencils."""
    dy = np.moveaxis(dy, axis, -1)
    n = dy.shape[-1]
    total = None
    for k in range(_WIDTH):
        shift = k - _REACH
        if abs(shift) >= n:
            continue
        term = stencils[:, k] * dy
        pad = [(0, 0)] * (dy.ndim - 1)
        if shift > 0:
            term = np.pad(term[..., : n - shift], pad + [(shift, 0)])
        elif shift < 0:
            term = np.pad(term[..., -shift:], pad + [(0, -shift)])
        total = term if total is None else total + term
    return np.moveaxis(total, -1, axis)


def _coordinates_refusal(location: str | None) -> NoDerivativeError:
    return NoDerivativeError(
        f"np.gradient{' at ' + location if location else ''}: its derivative in sample coordinates "
        f"(an array of positions) is not supported; pass the spacing as a number, or hold the "
        f"coordinates constant (take them from outside the function being differentiated)"
    )


def _coordinates_refused(location: str | None) -> RefusedThunk:
    """The coordinates' cotangent: raising where an engine reads it, kept unread by sums (of
    coordinates held constant but used twice), which an engine never reads."""

    def refused():
        raise _coordinates_refusal(location)

    return RefusedThunk(refused)


def _gradient_options(kwargs):
    unknown = set(kwargs) - {"axis", "edge_order"}
    if unknown:
        raise TypeError(f"np.gradient() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    return kwargs.get("axis"), kwargs.get("edge_order", 1)


@rrule.register(np.gradient)
def rrule_gradient(f, *varargs, **kwargs):
    """Along each axis, ``y = C f / h`` for stencils ``C`` read off NumPy: ``f̄ = Cᵀ ȳ`` summed
    over the axes, and a scalar spacing ``h`` gets ``h̄ = -<ȳ, y> / h``."""
    ys = np.gradient(f, *varargs, **kwargs)
    axis, edge_order = _gradient_options(kwargs)
    axes, spacings, slots = _gradient_layout(f, varargs, axis)
    outputs = (ys,) if len(axes) == 1 else tuple(ys)
    dtype = np.result_type(f, np.float64) if isinstance(f, np.ndarray) else np.float64
    stencils = [_stencils(np.shape(f)[a], h, edge_order, dtype) for a, h in zip(axes, spacings)]
    location = user_location() if any(s is not None and np.ndim(varargs[s]) for s in slots) else None

    def gradient_pullback(dys):
        items = [unthunk(dys)] if len(axes) == 1 else sequence_items(outputs, dys)
        df = _ZERO
        dvarargs = [_ZERO] * len(varargs)
        for y, dy, a, h, slot, c in zip(outputs, items, axes, spacings, slots, stencils):
            dy = cotangent_array(y, dy)
            if isinstance(dy, AbstractZero):
                continue
            term = _gradient_adjoint(dy, c, a)
            df = term if isinstance(df, AbstractZero) else df + term
            if slot is None:
                continue
            if np.ndim(varargs[slot]):
                dvarargs[slot] = _coordinates_refused(location)
            else:
                dh = -np.sum(np.real(np.conj(dy) * y)) / h
                dvarargs[slot] = dh if isinstance(dvarargs[slot], AbstractZero) else dvarargs[slot] + dh
        dvarargs = [d if isinstance(d, AbstractZero | Thunk) else to_input(v, d) for v, d in zip(varargs, dvarargs)]
        return (_NO, to_input(f, df), *dvarargs)

    return ys, gradient_pullback


@frule.register(np.gradient)
def frule_gradient(tangents, f, *varargs, **kwargs):
    ys = np.gradient(f, *varargs, **kwargs)
    axis, _ = _gradient_options(kwargs)
    axes, spacings, slots = _gradient_layout(f, varargs, axis)
    outputs = (ys,) if len(axes) == 1 else tuple(ys)
    df = unthunk(tangents[1])
    dvarargs = [unthunk(t) for t in tangents[2:]]
    pushed = None if isinstance(df, AbstractZero) else np.gradient(df, *varargs, **kwargs)
    pushed = (pushed,) if len(axes) == 1 and pushed is not None else pushed
    dys = []
    for i, (y, h, slot) in enumerate(zip(outputs, spacings, slots)):
        dy = _ZERO if pushed is None else pushed[i]
        dh = _ZERO if slot is None else dvarargs[slot]
        if not isinstance(dh, AbstractZero):
            if np.ndim(h):
                raise _coordinates_refusal(user_location())
            term = -y / h * dh
            dy = term if isinstance(dy, AbstractZero) else dy + term
        dys.append(dy)
    if all(isinstance(d, AbstractZero) for d in dys):
        return ys, _ZERO
    if len(axes) == 1:
        return ys, dys[0]
    dys = [np.zeros_like(y) if isinstance(d, AbstractZero) else d for y, d in zip(outputs, dys)]
    return ys, Tangent[type(ys)](*dys)


# ----- sliding_window_view ------------------------------------------------------------------------

_sliding_window_view = np.lib.stride_tricks.sliding_window_view


def _window_layout(x, window_shape, axis):
    """For each axis of ``x`` that windows slide along: ``(axis, windows)``, the lengths of its
    windows (an axis may be named more than once)."""
    window_shape = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    if axis is None:
        axes = tuple(range(np.ndim(x)))
    else:
        axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(int(a) % np.ndim(x) for a in axes)
    return axes, tuple(int(w) for w in window_shape)


def _window_sum(dy, x_ndim: int, axes, windows):
    """The adjoint of ``sliding_window_view``: each window position's cotangent sent back to the
    entries it views, by padding it to its offset (``np.pad`` and ``+``, which duals support)."""
    total = None
    for offsets in itertools.product(*(range(w) for w in windows)):
        piece = dy[(Ellipsis, *offsets)]
        before = [0] * x_ndim
        for a, o in zip(axes, offsets):
            before[a] += o
        after = [0] * x_ndim
        for a, w in zip(axes, windows):
            after[a] += w - 1
        widths = [(b, t - b) for b, t in zip(before, after)]
        piece = np.pad(piece, widths)
        total = piece if total is None else total + piece
    return total


@rrule.register(_sliding_window_view)
def rrule_sliding_window_view(x, window_shape, *args, **kwargs):
    y = _sliding_window_view(x, window_shape, *args, **kwargs)
    axes, windows = _window_layout(x, window_shape, args[0] if args else kwargs.get("axis"))
    options = tuple(_NO for _ in args)

    def sliding_window_view_pullback(dy):
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (_NO, dy, _NO, *options)
        return (_NO, to_input(x, _window_sum(dy, np.ndim(x), axes, windows)), _NO, *options)

    return y, sliding_window_view_pullback


@frule.register(_sliding_window_view)
def frule_sliding_window_view(tangents, x, window_shape, *args, **kwargs):
    y = _sliding_window_view(x, window_shape, *args, **kwargs)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, dx
    axis = args[0] if args else kwargs.get("axis")
    return y, _sliding_window_view(dx, window_shape, axis)
