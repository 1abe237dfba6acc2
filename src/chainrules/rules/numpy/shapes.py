"""Rules for NumPy's shape functions: reshaping, permuting, joining, splitting, padding, repeating,
converting, and selecting (take, sort, trim_zeros, diagonals, triangles).

All of them are linear in the array (``np.pad`` by a maximum, minimum or median piecewise so: its
rules are the linear map where it is evaluated), so each pullback is the adjoint map: a reshape
goes back, a permutation is inverted, a broadcast or a repetition sums, a selection scatters. Selections
return ``InplaceableThunk``s (see ``indexing``). Every forward rule accepts a leading batch axis
on its tangent (``is_batched``) and keeps it in front of the output tangent.

Most rules here are *unary linear* maps: ``_linear(f)`` registers both directions from one
function ``spec(y, x, *args, **kwargs) -> (adjoint, push)`` where ``adjoint(dy)`` is the
cotangent of ``x`` (any positional arguments after ``x`` are indices, shapes or axes and get
``NoTangent``) and ``push(dx, lead)`` the output tangent, ``lead`` being ``(batch,)`` or ``()``.
Every pullback here also takes a batch of cotangents (a leading batch axis; the rules are
registered ``batched=True``): a linear spec's ``adjoint(dy, lead)`` keeps the batch axis in front,
joins cut a batch past its batch axis and splits join one, and selections scatter each row into a
batch of accumulators (``scatter_batch_thunk``). A single cotangent, an array of the output's
rank, is told from a batch with one test, before any other work.
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral

import numpy as np

from ...core import (
    AbstractZero,
    ActiveValue,
    Tangent,
    carries_batch,
    frule,
    match_input_batch,
    rrule,
    unbroadcast_batch,
    unthunk,
)
from ...core.active import stood_for
from ...core.errors import option_refused
from ...core.keywords import declare_parameters
from ...core.twins import astype_in_order
from ..operators import frule_getitem, rrule_getitem
from ..scipy._lapack import parts
from ._arrays import (
    NO,
    ZERO,
    array_or_active,
    as_sequence,
    batch_of,
    batch_size,
    batch_to_input,
    cotangent_array,
    dense_tangent,
    has_no_tangent,
    is_batched,
    normalize_axes,
    normalize_axis,
    scatter_add,
    scatter_batch_thunk,
    scatter_thunk,
    sequence_cotangent,
    sequence_items,
    sum_to,
    tangent_array,
    tangent_dtype,
    to_input,
    zeros_tangent,
)
from ._util import match_output, raise_out, real_dtype
from .reductions import _winners


def _linear(*fs, batched: bool = False, value=None):
    """Register ``rrule`` and batched ``frule`` for the unary linear functions ``fs`` from a spec;
    ``batched=True``: the spec's ``adjoint(dy, lead)`` takes a batch of cotangents too;
    ``value(f, x, *args, **kwargs)``, when given, computes ``f``'s value."""

    def decorator(spec):
        for f in fs:
            rrule.register(f, batched=batched)(_linear_rrule(f, spec, batched, value))
            frule.register(f, batched=True)(_linear_frule(f, spec, value))
        return spec

    return decorator


def _linear_rrule(f, spec, batched: bool = False, value=None):
    name = getattr(f, "__name__", "linear")

    def linear_rrule(x, *args, **kwargs):
        y = f(x, *args, **kwargs) if value is None else value(f, x, *args, **kwargs)
        adjoint, _ = spec(y, x, *args, **kwargs)
        rest = (NO,) * len(args)
        ndim = y.ndim if type(y) is np.ndarray else np.ndim(y)

        def linear_pullback(dy):
            if batched and (type(dy) is not np.ndarray or dy.ndim != ndim):  # (a cotangent of y's rank is one)
                dy = unthunk(dy)
                if carries_batch(y, dy):
                    if has_no_tangent(x):
                        return (NO, NO, *rest)
                    dy = match_input_batch(y, dy)
                    dx = adjoint(dy, np.shape(dy)[:1])
                    return (NO, dx if isinstance(dx, AbstractZero) else batch_to_input(x, dx), *rest)
            dy = cotangent_array(y, dy)
            if isinstance(dy, AbstractZero) or has_no_tangent(x):
                return (NO, NO if has_no_tangent(x) else dy, *rest)
            dx = adjoint(dy)
            return (NO, dx if isinstance(dx, AbstractZero) else to_input(x, dx), *rest)

        linear_pullback.__name__ = linear_pullback.__qualname__ = f"{name}_pullback"
        return y, linear_pullback

    linear_rrule.__name__ = linear_rrule.__qualname__ = f"rrule_{name}"
    return linear_rrule


def _linear_frule(f, spec, value=None):
    def linear_frule(tangents, x, *args, **kwargs):
        y = f(x, *args, **kwargs) if value is None else value(f, x, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, dx
        _, push = spec(y, x, *args, **kwargs)
        if isinstance(x, (list, tuple)):  # a nested list: its tangent is a structure of tangents
            dx = _dense_structure(x, dx)
        return y, push(dx, np.shape(dx)[:1] if is_batched(x, dx) else ())

    linear_frule.__name__ = linear_frule.__qualname__ = f"frule_{getattr(f, '__name__', 'linear')}"
    return linear_frule


def _lead_axes(lead: tuple, axes):
    """Axes of the primal as axes of a tangent with ``lead`` in front."""
    if isinstance(axes, Integral):
        return axes + len(lead) if axes >= 0 else axes
    return tuple(a + len(lead) if a >= 0 else a for a in axes)


def _ndim(y) -> int:
    return y.ndim if type(y) is np.ndarray else np.ndim(y)


# ----- reshaping -----------------------------------------------------------------------------


def _memory_order(x, order: str):
    """'C' or 'F' for a layout-dependent order ('A', 'K'); ``None`` when 'K' follows strides
    that are neither C nor Fortran order."""
    if order is None or order in "Cc":
        return "C"
    if order in "Ff":
        return "F"
    if type(x) is not np.ndarray:
        return "C"
    if x.flags.c_contiguous:
        return "C"
    if x.flags.f_contiguous:
        return "F"
    return "C" if order in "Aa" else None


def _positions_laid_out_like(x):
    """The C-order position of each element of ``x`` in an array with ``x``'s strides (so that a
    memory-order ravel of it tells where each element of ``x`` goes)."""
    itemsize = np.dtype(np.intp).itemsize
    if any(s % x.itemsize for s in x.strides) or any(s == 0 and n > 1 for s, n in zip(x.strides, x.shape)):
        raise option_refused(np.ravel, (x,), "order='K' of an array with aliased or unaligned strides")
    strides = [s // x.itemsize * itemsize for s in x.strides]
    low = sum((n - 1) * s for n, s in zip(x.shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(x.shape, strides) if s > 0)
    buffer = np.empty((high - low) // itemsize + 1, dtype=np.intp)
    positions = np.lib.stride_tricks.as_strided(buffer[-low // itemsize :], x.shape, strides)
    positions[...] = np.arange(x.size).reshape(x.shape)
    return positions


def _reshape_spec(y, x, order):
    """Adjoint and pushforward of any function that only reshapes (in the given memory order)."""
    laid_out = stood_for(x)  # an engine's array (a Hessian's dual) is laid out as the array it stands for
    resolved = _memory_order(laid_out, order)
    if resolved is None:  # ravel in memory order of a strided array: a permutation of the elements
        perm = np.ravel(_positions_laid_out_like(laid_out), order="K")
        unperm = np.argsort(perm)

        def strided_adjoint(dy, lead=()):
            # the inverse permutation, gathered: an engine's values (a Hessian's duals) cannot be written into zeros
            return np.reshape(np.reshape(dy, (*lead, -1))[..., unperm], (*lead, *np.shape(x)))

        return strided_adjoint, lambda dx, lead: np.reshape(dx, (*lead, -1))[..., perm]

    def reshape_adjoint(dy, lead=()):
        if lead and resolved == "F":  # each row in Fortran order: the batch axis goes last, slowest
            rows_last = np.reshape(np.moveaxis(dy, 0, -1), (*np.shape(x), *lead), order="F")
            return np.moveaxis(rows_last, -1, 0)
        return np.reshape(dy, (*lead, *np.shape(x)), order=resolved)

    def reshape_push(dx, lead):
        return np.reshape(dx, (*lead, *np.shape(y)), order=resolved)

    return reshape_adjoint, reshape_push


@_linear(np.reshape, batched=True)
def _reshape(y, x, shape=None, order="C", **_):
    return _reshape_spec(y, x, order)


@_linear(np.ndarray.reshape, batched=True)
def _ndarray_reshape(y, x, *shape, order="C", **_):
    return _reshape_spec(y, x, order)


@_linear(np.ravel, np.ndarray.ravel, np.ndarray.flatten, batched=True)
def _ravel(y, x, order="C"):
    return _reshape_spec(y, x, order)


@_linear(np.squeeze, np.ndarray.squeeze, np.expand_dims, batched=True)
def _reshape_c(y, x, *args, **kwargs):
    return _reshape_spec(y, x, "C")


def _rrule_atleast(f):
    """``np.atleast_Nd(a, b, ...)`` with several arguments returns a tuple: one reshape each."""

    rrule_one, frule_one = _linear_rrule(f, _reshape_c, batched=True), _linear_frule(f, _reshape_c)

    def rrule_atleast(*arys):
        if len(arys) == 1:
            return rrule_one(*arys)
        y = f(*arys)

        def atleast_pullback(dy):
            items = sequence_items(y, dy)
            return (NO, *(_reshape_back(x, out, t) for x, out, t in zip(arys, y, items)))

        return y, atleast_pullback

    def frule_atleast(tangents, *arys):
        if len(arys) == 1:
            return frule_one(tangents, *arys)
        y = f(*arys)
        pieces = []
        for x, out, dx in zip(arys, y, tangents[1:]):
            dx = unthunk(dx)
            pieces.append(dx if isinstance(dx, AbstractZero) else _reshape_c(out, x)[1](dx, _lead(x, dx)))
        return y, Tangent[tuple](*pieces)

    rrule.register(f, batched=True)(rrule_atleast)
    frule.register(f, batched=True)(frule_atleast)


def _reshape_back(x, y, dy):
    """The cotangent of ``x`` from that of its reshape ``y`` (or a batch of them)."""
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero) or has_no_tangent(x):
        return NO if has_no_tangent(x) else dy
    if carries_batch(y, dy):
        return batch_to_input(x, np.reshape(dy, np.shape(dy)[:1] + np.shape(x)))
    return to_input(x, np.reshape(dy, np.shape(x)))


def _lead(x, dx):
    return np.shape(dx)[:1] if is_batched(x, dx) else ()


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    _rrule_atleast(_f)


# ----- permutations ----------------------------------------------------------------------------


def _transpose_spec(y, x, axes):
    ndim = np.ndim(x)
    perm = tuple(range(ndim))[::-1] if axes is None else normalize_axes(axes, ndim)
    inverse = tuple(np.argsort(perm))

    def transpose_adjoint(dy, lead=()):
        return np.transpose(dy, tuple(range(len(lead))) + _lead_axes(lead, inverse))

    def transpose_push(dx, lead):
        return np.transpose(dx, tuple(range(len(lead))) + _lead_axes(lead, perm))

    return transpose_adjoint, transpose_push


@_linear(np.transpose, batched=True)
def _transpose(y, x, axes=None):
    return _transpose_spec(y, x, axes)


@_linear(np.ndarray.transpose, batched=True)
def _ndarray_transpose(y, x, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], Integral)):
        axes = axes[0]
    return _transpose_spec(y, x, axes or None)


@_linear(np.swapaxes, np.ndarray.swapaxes, batched=True)
def _swapaxes(y, x, axis1, axis2):
    ndim = np.ndim(x)
    a1, a2 = normalize_axis(axis1, ndim), normalize_axis(axis2, ndim)
    return (
        lambda dy, lead=(): np.swapaxes(dy, a1 + len(lead), a2 + len(lead)),
        lambda dx, lead: np.swapaxes(dx, a1 + len(lead), a2 + len(lead)),
    )


@_linear(np.moveaxis, batched=True)
def _moveaxis(y, x, source, destination):
    ndim = np.ndim(x)
    src, dst = normalize_axes(source, ndim), normalize_axes(destination, ndim)
    return (
        lambda dy, lead=(): (
            np.moveaxis(dy, _lead_axes(lead, dst), _lead_axes(lead, src)) if lead else np.moveaxis(dy, dst, src)
        ),
        lambda dx, lead: np.moveaxis(dx, _lead_axes(lead, src), _lead_axes(lead, dst)),
    )


def _flip_spec(x, axis):
    axes = normalize_axes(axis, np.ndim(x))
    return (
        lambda dy, lead=(): np.flip(dy, _lead_axes(lead, axes) if lead else axes),
        lambda dx, lead: np.flip(dx, _lead_axes(lead, axes)),
    )


@_linear(np.flip, batched=True)
def _flip(y, x, axis=None):
    return _flip_spec(x, axis)


@_linear(np.fliplr, batched=True)
def _fliplr(y, x):
    return _flip_spec(x, 1)


@_linear(np.flipud, batched=True)
def _flipud(y, x):
    return _flip_spec(x, 0)


@_linear(np.rot90, batched=True)
def _rot90(y, x, k=1, axes=(0, 1)):
    axes = normalize_axes(axes, np.ndim(x))
    return (
        lambda dy, lead=(): np.rot90(dy, -k, _lead_axes(lead, axes) if lead else axes),
        lambda dx, lead: np.rot90(dx, k, _lead_axes(lead, axes)),
    )


@_linear(np.roll, batched=True)
def _roll(y, x, shift, axis=None):
    back = np.negative(shift)

    def rolled(d, by, lead):
        """``d`` (with ``lead`` batch axes in front) rolled by ``by`` as ``np.roll(x, by, axis)`` rolls ``x``."""
        if axis is None:  # rolls the flattened array
            return np.reshape(np.roll(np.reshape(d, (*lead, -1)), by, axis=len(lead)), np.shape(d))
        axes = _lead_axes(lead, normalize_axes(axis, np.ndim(x)))
        return np.roll(d, by, axes[0] if isinstance(axis, Integral) else axes)

    def roll_adjoint(dy, lead=()):
        return rolled(dy, back, lead) if lead else np.roll(dy, back, axis)

    def roll_push(dx, lead):
        return rolled(dx, shift, lead)

    return roll_adjoint, roll_push


# ----- broadcasting and repetition ----------------------------------------------------------------


@_linear(np.broadcast_to, batched=True)
def _broadcast_to(y, x, shape, subok=False):
    out_shape = np.shape(y)

    def broadcast_push(dx, lead):
        padded = np.reshape(dx, (*lead, *(1,) * (len(out_shape) - np.ndim(x)), *np.shape(x)))
        return np.broadcast_to(padded, (*lead, *out_shape))

    def broadcast_adjoint(dy, lead=()):
        return unbroadcast_batch(x, dy) if lead else sum_to(dy, np.shape(x))

    return broadcast_adjoint, broadcast_push


def _broadcast_all(args, subok=False):
    """``np.broadcast_arrays(*args)`` by ``np.broadcast_to``, whose rules take an engine's values."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return tuple(np.broadcast_to(a, shape, subok=subok) for a in args)


@rrule.register(np.broadcast_arrays)
def rrule_broadcast_arrays(*args, **kwargs):
    """Each array broadcast to the shape they share: its cotangent is summed back to its shape."""
    ys = _broadcast_all(args, **kwargs)

    def broadcast_arrays_pullback(dys):
        pairs = zip(args, (cotangent_array(y, dy) for y, dy in zip(ys, sequence_items(ys, dys))))
        return (NO, *(g if isinstance(g, AbstractZero) else to_input(x, sum_to(g, np.shape(x))) for x, g in pairs))

    return ys, broadcast_arrays_pullback


@frule.register(np.broadcast_arrays)
def frule_broadcast_arrays(tangents, *args, **kwargs):
    ys = _broadcast_all(args, **kwargs)
    dxs = [unthunk(t) for t in tangents[1:]]
    if all(isinstance(d, AbstractZero) for d in dxs):
        return ys, ZERO
    zeros = (np.zeros(np.shape(y), dtype=tangent_dtype(y)) for y in ys)
    dys = [z if isinstance(d, AbstractZero) else np.broadcast_to(d, np.shape(z)) for d, z in zip(dxs, zeros)]
    return ys, Tangent[tuple](*dys)


_as_strided = np.lib.stride_tricks.as_strided


def _strided_positions(x, shape, strides, writeable):
    """The flat position in ``x`` (C-contiguous) of each entry of ``as_strided(x, shape, strides)``:
    the entry at ``(i_0, i_1, ...)`` reads ``x.ravel()[sum(i_k * strides_k) / x.itemsize]``."""
    if writeable:  # a write through the view changes x and the view's other aliased entries
        raise option_refused(_as_strided, (x,), "writeable=True: pass writeable=False, a view that is only read")
    if not x.flags.c_contiguous:
        raise option_refused(_as_strided, (x,), "a base that is not C-contiguous: pass np.ascontiguousarray(x)")
    shape = x.shape if shape is None else tuple(int(n) for n in shape)
    strides = x.strides if strides is None else tuple(int(s) for s in strides)
    strides = tuple(s if n > 1 else 0 for n, s in zip(shape, strides))  # (an axis of one entry never steps)
    if any(s % x.itemsize for s in strides):
        raise option_refused(_as_strided, (x,), f"strides {strides} not multiples of the itemsize {x.itemsize}")
    steps = [s // x.itemsize for s in strides]
    low = sum((n - 1) * s for n, s in zip(shape, steps) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, steps) if s > 0)
    if 0 not in shape and (low < 0 or high >= x.size):
        raise option_refused(_as_strided, (x,), "a view reaching memory outside the array")
    itemsize = np.dtype(np.intp).itemsize
    return _as_strided(np.arange(x.size), shape, [s * itemsize for s in steps], writeable=False)


def _as_strided_value(f, x, shape=None, strides=None, subok=False, writeable=True):
    """The view, or for an engine's array (a Hessian's dual), which ``as_strided`` would convert,
    its entries gathered: a copy the view cannot be told from, as it is not writeable."""
    if not isinstance(x, ActiveValue):
        return f(x, shape, strides, subok, writeable)
    return np.reshape(x, -1)[_strided_positions(np.asarray(stood_for(x)), shape, strides, writeable)]


@_linear(_as_strided, batched=True, value=_as_strided_value)
def _as_strided_spec(y, x, shape=None, strides=None, subok=False, writeable=True):
    laid_out = np.asarray(stood_for(x))  # an engine's array (a Hessian's dual) is laid out as the array it stands for
    positions = _strided_positions(laid_out, shape, strides, writeable)

    def strided_adjoint(dy, lead=()):
        # overlapping windows read an entry more than once: its cotangents are summed
        dx = scatter_add((*lead, laid_out.size), (Ellipsis, positions), dy)
        return np.reshape(dx, (*lead, *laid_out.shape))

    def strided_push(dx, lead):
        return np.reshape(dx, (*lead, -1))[..., positions]

    return strided_adjoint, strided_push


@_linear(np.tile, batched=True)
def _tile(y, x, reps):
    reps = (int(reps),) if isinstance(reps, Integral) else tuple(int(r) for r in reps)
    d = max(len(reps), np.ndim(x))
    reps = (1,) * (d - len(reps)) + reps
    padded = (1,) * (d - np.ndim(x)) + np.shape(x)

    def tile_adjoint(dy, lead=()):
        # axis i of y is reps[i] copies of axis i of x: split it in two and sum the copies
        if lead:  # the same past the batch axis
            blocks = np.reshape(dy, [*lead, *(n for pair in zip(reps, padded) for n in pair)])
            return np.reshape(np.sum(blocks, axis=tuple(range(1, 2 * d + 1, 2))), lead + np.shape(x))
        blocks = np.reshape(dy, [n for pair in zip(reps, padded) for n in pair])
        return np.reshape(np.sum(blocks, axis=tuple(range(0, 2 * d, 2))), np.shape(x))

    def tile_push(dx, lead):
        return np.tile(np.reshape(dx, (*lead, *padded)), (1,) * len(lead) + reps)

    return tile_adjoint, tile_push


@_linear(np.repeat, np.ndarray.repeat, batched=True)
def _repeat(y, x, repeats, axis=None):
    shape = (np.size(x),) if axis is None else np.shape(x)
    k = 0 if axis is None else normalize_axis(axis, np.ndim(x))
    counts = np.asarray(repeats)

    def repeat_adjoint(dy, lead=()):
        j = k + len(lead)  # the repeated axis of dy
        if counts.size == 1:  # every entry repeated r times: sum groups of r
            r = int(counts.reshape(()))
            grouped = np.reshape(dy, (*lead, *shape[:k], shape[k], r, *shape[k + 1 :]))
            dx = np.sum(grouped, axis=j + 1)
        else:
            source = np.repeat(np.arange(shape[k]), counts)
            dx = scatter_add(lead + shape, source, np.moveaxis(dy, j, 0), view=lambda a: np.moveaxis(a, j, 0))
        return np.reshape(dx, lead + np.shape(x))

    def repeat_push(dx, lead):
        if axis is None:
            return np.repeat(np.reshape(dx, (*lead, -1)), repeats, axis=len(lead))
        return np.repeat(dx, repeats, axis=k + len(lead))

    return repeat_adjoint, repeat_push


# ----- padding ----------------------------------------------------------------------------------

_GATHER_PAD_MODES = frozenset({"edge", "reflect", "symmetric", "wrap"})
_SIDE_PAD_MODES = frozenset({"mean", "median", "maximum", "minimum", "linear_ramp"})


def _pad(y, x, pad_width, mode="constant", **kwargs):
    widths = _pad_pairs(pad_width, np.ndim(x))
    if mode == "constant":
        inner = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(widths, np.shape(x)))
        inner_rows = (slice(None), *inner)  # the same past a leading batch axis

        def pad_push(dx, lead):  # (the padding constants' tangents are added by rrule_pad and frule_pad)
            return np.pad(dx, [(0, 0)] * len(lead) + widths.tolist(), mode="constant")

        return (lambda dy, lead=(): dy[inner_rows] if lead else dy[inner]), pad_push
    if mode in _GATHER_PAD_MODES and kwargs.get("reflect_type", "even") == "even":
        # every output entry copies one input entry: pad the positions, then gather and scatter
        return _gather(x, np.pad(_positions(x), widths.tolist(), mode=mode))
    if mode in _SIDE_PAD_MODES:
        # (a statistic is piecewise linear: this is its linear map at x, the derivative)
        sides = _PaddedSides(y, x, widths, mode, kwargs.get("stat_length"))
        return sides.adjoint, sides.push
    if mode == "empty":
        raise option_refused(np.pad, (x, pad_width), "mode='empty' leaves the padded entries undefined")
    options = f" with {kwargs}" if kwargs else ""
    raise option_refused(np.pad, (x, pad_width), f"mode={mode!r}{options} is not a copy of input entries")


#: np.pad's values that carry a derivative, each for the mode that takes it: the engines pass one
#: being differentiated by its position after ``mode`` (declared below), the rules by keyword
_PAD_VALUES = {"constant_values": "constant", "end_values": "linear_ramp"}
_UNSET = object()  # (a value the call did not give)


def _pad_parameters(args) -> tuple:
    P = inspect.Parameter
    named = (("pad_width", P.empty), ("mode", "constant"), *((name, _UNSET) for name in _PAD_VALUES))
    return (P("array", P.POSITIONAL_ONLY), *(P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in named))


declare_parameters(np.pad, _pad_parameters)


def _pad_call(args: tuple, kwargs: dict):
    """``(pad_width, mode, kwargs, given)``: a call of np.pad with the values given by position passed
    by keyword, as NumPy takes them (and checks them against the mode), and ``given``, the position
    after the array of each such value."""
    kwargs = dict(kwargs)
    pad_width = args[0] if args else kwargs.pop("pad_width")
    mode = args[1] if len(args) > 1 else kwargs.pop("mode", "constant")
    given = {}
    for position, (name, value) in enumerate(zip(_PAD_VALUES, args[2:]), start=2):
        if value is not _UNSET:
            kwargs[name] = value
            given[position] = name
    return pad_width, mode, kwargs, given


class _PadValues:
    """The padded array's response to the values that fill its padded sides (constant_values, or
    linear_ramp's end_values), a linear map: padding zeros with one side's value one and the
    others zero gives that side's response, as NumPy pads each axis over the ones padded before.
    A value is read per axis and side as NumPy reads it (a number, a pair, or a pair per axis)."""

    def __init__(self, x, pad_width, mode, kwargs, name):
        self.value = kwargs[name]
        self.shape = np.shape(_plain_layout(self.value))
        ndim = np.ndim(x)
        index = np.reshape(np.arange(math.prod(self.shape)), self.shape)
        if index.size == 1 or (index.size == 2 and index.shape != (2, 1)):
            index = np.ravel(index)  # (one number for every side, or one pair for every axis)
        # side by entry, which entry each side reads: a product, which engines' values take
        self.gather = np.eye(index.size)[np.broadcast_to(index, (ndim, 2)).ravel()]
        zeros = np.zeros(np.shape(x), dtype=np.result_type(real_dtype(x), np.float64))
        options = {k: v for k, v in kwargs.items() if k != name}
        unit = np.eye(2 * ndim).reshape(2 * ndim, ndim, 2)
        self.responses = np.stack([np.pad(zeros, pad_width, mode, **options, **{name: u}) for u in unit])

    def cotangent(self, dy, lead: tuple):
        """The value's cotangent from the padded array's ``dy`` (``lead``: a batch axis in front)."""
        sides = np.tensordot(dy, self.responses, (range(len(lead), np.ndim(dy)), range(1, self.responses.ndim)))
        dv = np.reshape(sides @ self.gather, (*lead, *self.shape))
        return batch_to_input(self.value, dv) if lead else to_input(self.value, dv)

    def push(self, dv):
        """The padded array's tangent from the value's ``dv`` (perhaps a batch of them)."""
        dv = tangent_array(self.value, dv)
        lead = np.shape(dv)[:1] if np.ndim(dv) > np.ndim(self.value) else ()
        sides = np.reshape(dv, (*lead, -1)) @ self.gather.T
        return np.tensordot(sides, self.responses, 1)


def _plain_layout(value):
    """``value`` (a number, or nested lists or tuples of them) with the values that engines' values
    stand for in their place: its shape, which NumPy cannot read through them."""
    if isinstance(value, (list, tuple)):
        return [_plain_layout(v) for v in value]
    return stood_for(value)


_linear_pad_rrule = _linear_rrule(np.pad, _pad, batched=True)
_linear_pad_frule = _linear_frule(np.pad, _pad)


@rrule.register(np.pad, batched=True)
def rrule_pad(x, *args, **kwargs):
    """np.pad is linear in the array and in the values that fill its sides (``_PadValues``)."""
    pad_width, mode, kwargs, given = _pad_call(args, kwargs)
    y, linear_pullback = _linear_pad_rrule(x, pad_width, mode, **kwargs)
    values = {i: _PadValues(x, pad_width, mode, kwargs, name) for i, name in given.items()}

    def pad_pullback(dy):
        dx = linear_pullback(dy)[1]
        dy = unthunk(dy) if values else ZERO
        if isinstance(dy, AbstractZero):
            return (NO, dx, *(dy if i in values else NO for i in range(len(args))))
        lead = np.shape(dy)[:1] if carries_batch(y, dy) else ()
        dy = match_input_batch(y, dy) if lead else cotangent_array(y, dy)
        return (NO, dx, *(values[i].cotangent(dy, lead) if i in values else NO for i in range(len(args))))

    return y, pad_pullback


@frule.register(np.pad, batched=True)
def frule_pad(tangents, x, *args, **kwargs):
    pad_width, mode, kwargs, given = _pad_call(args, kwargs)
    y, dy = _linear_pad_frule(tangents[:3], x, pad_width, mode, **kwargs)
    for i, name in given.items():
        dv = unthunk(tangents[i + 2])
        if isinstance(dv, AbstractZero):
            continue
        term = _PadValues(x, pad_width, mode, kwargs, name).push(dv)
        dy = term if isinstance(dy, AbstractZero) else dy + term
    return y, match_output(y, dy)


def _pad_pairs(values, ndim: int) -> np.ndarray:
    """An option of ``np.pad`` given per axis and side (a number, a pair, or a pair per axis) as
    ``np.pad`` reads it: integers in an ``(ndim, 2)`` array."""
    return np.broadcast_to(np.round(np.asarray(values)).astype(np.intp), (ndim, 2))


class _PaddedSides:
    """``np.pad`` with a mode that fills each padded side of an axis from one linear functional of
    the entries along it: a statistic of the first or last ``stat_length`` of them (mean, median,
    maximum, minimum), or a ramp from the end value to the edge entry (linear_ramp).

    NumPy pads the axes one after the other, each over the array padded so far (its earlier axes
    padded, its later ones not yet), so the map is their composition; linearized at ``x``, step
    ``k`` takes ``v`` along axis ``k`` to ``[c_before * (w_before . v), v, c_after * (w_after . v)]``
    and its adjoint is the transpose. A side's weights ``w`` are ``1 / length`` on the entries
    (mean), one on the extremum (shared between ties, as ``np.max``'s rule shares them), one half
    on each of the two middle order statistics (one on the middle one of an odd length; ties in
    the order of a stable sort, as ``np.median``'s rule), or one on the edge entry, which a
    ramp's entry ``i`` of ``width`` takes ``i / width`` of (its ``c``; a statistic's is one).
    The statistics' weights are read off ``y``: outside the later axes' padding it holds the array
    NumPy had padded so far, and the value each side was filled with.
    """

    def __init__(self, y, x, widths: np.ndarray, mode: str, stat_length):
        y = stood_for(y)  # (a Hessian's dual numbers: the weights are those of the values)
        shape, ndim = np.shape(x), np.ndim(x)
        dtype = real_dtype(y)
        lengths = [(None, None)] * ndim if stat_length is None else _pad_pairs(stat_length, ndim).tolist()
        original = tuple(slice(b, b + n) for (b, _), n in zip(widths.tolist(), shape))
        self.steps = []  # (axis, size, before, after): a side (width, weights, coefficients) or None
        for k, ((before, after), n, length_pair) in enumerate(zip(widths.tolist(), shape, lengths)):
            padded_so_far = (slice(None),) * k + original[k:]
            trailing = (1,) * (ndim - 1 - k)  # a vector along axis k, broadcast over the later axes
            sides = []
            for side, (width, length) in enumerate(zip((before, after), length_pair)):
                if not width:
                    sides.append(None)
                    continue
                length = n if length is None else min(length, n)
                chunk = slice(0, length) if side == 0 else slice(n - length, n)
                coefficients = np.ones(width, dtype)
                if mode in ("mean", "linear_ramp"):
                    weights = np.zeros((n, *trailing), dtype)
                    if mode == "mean":
                        weights[chunk] = 1 / dtype.type(length) if length else 0  # (no entries: NumPy's mean is NaN)
                    else:
                        weights[-side] = 1  # the edge entry: the first, or the last
                        coefficients = np.arange(width, dtype=dtype) / dtype.type(width)
                        coefficients = coefficients[::-1] if side else coefficients  # (running back from the end)
                else:
                    weights = _statistic_weights(y, padded_so_far, k, chunk, side, mode, dtype)
                sides.append((width, weights, np.reshape(coefficients, (width, *trailing))))
            if any(sides):
                self.steps.append((k, n, *sides))

    def push(self, dx, lead: tuple):
        """The padded tangent of ``dx`` (with ``lead`` batch axes in front)."""
        for k, _, before, after in self.steps:
            axis = k + len(lead)
            pieces = [dx]
            for side, at in ((before, 0), (after, 2)):
                if side is not None:
                    _, weights, coefficients = side
                    pieces.insert(at, coefficients * np.sum(weights * dx, axis=axis, keepdims=True))
            dx = np.concatenate(pieces, axis=axis)
        return dx

    def adjoint(self, dy, lead=()):
        """The cotangent of ``x`` from the padded array's ``dy`` (with ``lead`` batch axes in front)."""
        for k, n, before, after in reversed(self.steps):
            axis = k + len(lead)
            start = 0 if before is None else before[0]
            dx = dy[(slice(None),) * axis + (slice(start, start + n),)]
            for side, part in ((before, slice(0, start)), (after, slice(start + n, None))):
                if side is not None:
                    _, weights, coefficients = side
                    padded = dy[(slice(None),) * axis + (part,)]
                    dx = dx + weights * np.sum(coefficients * padded, axis=axis, keepdims=True)
            dy = dx
        return dy


def _statistic_weights(y, padded_so_far: tuple, axis: int, chunk: slice, side: int, mode: str, dtype):
    """The weights of the entries of ``y[padded_so_far]`` along ``axis`` in the median, maximum or
    minimum of those in ``chunk`` that NumPy filled its ``side`` (0 before, 1 after) with."""
    roi = y[padded_so_far]
    entries = roi[(slice(None),) * axis + (chunk,)]
    if mode == "median":
        n, half = chunk.stop - chunk.start, dtype.type(0.5)
        ranks = np.argsort(np.argsort(entries, axis=axis, kind="stable"), axis=axis, kind="stable")
        picked = half * np.equal(ranks, (n - 1) // 2) + half * np.equal(ranks, n // 2)  # the middle entry or two
    else:
        first = np.shape(y)[axis] - 1 if side else 0  # an entry of the padded side: the statistic
        filled = y[padded_so_far[:axis] + (slice(first, first + 1),) + padded_so_far[axis + 1 :]]
        hit, count = _winners(entries, filled, (axis,), True, nan_wins=True)
        picked = hit if count is None else hit / count
    outside = (chunk.start, np.shape(roi)[axis] - chunk.stop)
    return np.pad(picked, [(0, 0)] * axis + [outside] + [(0, 0)] * (np.ndim(roi) - 1 - axis))


def _positions(x) -> np.ndarray:
    """The flat position of each entry of ``x``, laid out as ``x``."""
    return np.arange(np.size(x)).reshape(np.shape(x))


def _gather(x, source: np.ndarray):
    """``(adjoint, push)`` of a function whose output copies input entries: ``source`` holds, for
    each output entry, the flat position of the input entry it copies (``np.pad`` of the positions,
    ``np.delete`` of them). The pushforward gathers the tangent's entries; the adjoint scatters the
    cotangent back, summing where an input entry was copied more than once."""
    flat_source = source.ravel()

    def gather_adjoint(dy, lead=()):
        # (with a batch, the positions index the last axis: the scatter adds along it row by row)
        index = (slice(None), flat_source) if lead else flat_source
        flat = scatter_add((*lead, np.size(x)), index, np.reshape(dy, (*lead, -1)))
        return np.reshape(flat, (*lead, *np.shape(x)))

    return gather_adjoint, lambda dx, lead: np.reshape(dx, (*lead, -1))[..., source]


@_linear(np.delete, batched=True)
def _delete(y, x, obj, axis=None):
    """The entries ``np.delete`` keeps, by their positions."""
    return _gather(x, np.delete(_positions(x), obj, axis))


class _Inserted:
    """Where each entry of ``np.insert(arr, obj, values, axis)`` comes from: NumPy's own insert of
    ``arr``'s flat positions and of ``values``' past them (cast, broadcast and moved as the values
    are), so that the output copies entry ``source[i]`` of ``arr`` and ``values`` raveled one after
    the other; ``arr``'s entries each once, ``values``' once per slot they were broadcast into."""

    def __init__(self, arr, obj, values, axis=None):
        n = np.size(arr)
        self.shapes = (np.shape(arr), np.shape(values))
        self.n = n
        self.source = np.insert(_positions(arr), obj, n + _positions(values), axis)
        self.gather_adjoint, self.gather = _gather(np.empty(n + np.size(values)), self.source)

    def adjoint(self, dy):
        """The cotangents of ``arr`` and ``values`` (each of its shape) from the output's."""
        flat = self.gather_adjoint(dy)
        return np.reshape(flat[: self.n], self.shapes[0]), np.reshape(flat[self.n :], self.shapes[1])

    def push(self, darr, dvalues, lead: tuple):
        """The output's tangent from those of ``arr`` and ``values`` (with ``lead`` in front)."""
        joined = np.concatenate([np.reshape(darr, (*lead, -1)), np.reshape(dvalues, (*lead, -1))], axis=-1)
        return self.gather(joined, lead)


@rrule.register(np.insert)
def rrule_insert(arr, obj, values, *args, **kwargs):
    """``arr``'s cotangent is the output's without the inserted entries (``np.delete`` of them),
    ``values``' the inserted entries' summed over the slots each was broadcast into."""
    y = np.insert(arr, obj, values, *args, **kwargs)
    inserted = _Inserted(arr, obj, values, *args, **kwargs)
    rest = (NO,) * len(args)

    def insert_pullback(dy):
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy, NO, dy, *rest)
        darr, dvalues = inserted.adjoint(dy)
        return (NO, to_input(arr, darr), NO, to_input(values, dvalues), *rest)

    return y, insert_pullback


@frule.register(np.insert, batched=True)
def frule_insert(tangents, arr, obj, values, *args, **kwargs):
    y = np.insert(arr, obj, values, *args, **kwargs)
    darr, dvalues = tangent_array(arr, unthunk(tangents[1])), tangent_array(values, unthunk(tangents[3]))
    if isinstance(darr, AbstractZero) and isinstance(dvalues, AbstractZero):
        return y, ZERO
    batch = batch_size(((arr, darr), (values, dvalues)))
    darr, dvalues = dense_tangent(arr, darr, batch), dense_tangent(values, dvalues, batch)
    lead = () if batch is None else (batch,)
    return y, match_output(y, _Inserted(arr, obj, values, *args, **kwargs).push(darr, dvalues, lead))


@_linear(np.resize, batched=True)
def _resize(y, x, new_shape):
    """``np.resize`` repeats the flat entries cyclically: each output entry copies one."""
    return _gather(x, np.resize(_positions(x), new_shape))


# ----- conversions ----------------------------------------------------------------------------


def _input_kind(x) -> str:
    """The dtype kind of an input to a conversion (``"O"`` for objects NumPy does not know)."""
    try:
        return np.asarray(x).dtype.kind if isinstance(x, (list, tuple)) else np.dtype(x.dtype).kind
    except (AttributeError, TypeError, ValueError):
        return "f" if isinstance(x, (float, complex, Integral)) else "O"


def _conversion_spec(y, x):
    """Adjoint and pushforward of a copy or dtype conversion: the identity on values. A conversion
    of real or complex numbers to integers or booleans truncates: its derivative is zero."""
    out_dtype = tangent_dtype(y)
    if isinstance(y, np.ndarray | np.generic) and (
        y.dtype.kind == "b" or (y.dtype.kind in "iu" and _input_kind(x) in "fcO")
    ):
        return (lambda dy, lead=(): ZERO), (lambda dx, lead: ZERO)

    def conversion_push(dx, lead):
        if type(y) is np.ndarray and isinstance(dx, (float, complex, np.generic)):
            dx = np.asarray(dx)  # a number's tangent, for its copy as an array (np.copy(1.5) is a 0-d array)
        if type(dx) is np.ndarray and out_dtype is not None and out_dtype.kind != "O" and dx.dtype != out_dtype:
            return (np.real(dx) if out_dtype.kind == "f" else dx).astype(out_dtype)
        return dx

    return (lambda dy, lead=(): dy), conversion_push


def _astype_value(f, x, dtype, *args, **kwargs):
    """``np.astype(x, dtype, ...)``, also with the arguments of the method ``x.astype`` (order,
    casting, subok), which an engine's array hands on to ``np.astype`` (see core/twins.py)."""
    if f is np.astype and (args or set(kwargs) - {"copy", "device"}):
        return x.astype(dtype, *args, **kwargs)
    return f(x, dtype, *args, **kwargs)


@_linear(np.ndarray.astype, np.astype, astype_in_order, batched=True, value=_astype_value)
def _astype(y, x, dtype, *args, **kwargs):
    return _conversion_spec(y, x)


@_linear(np.copy, np.ndarray.copy, batched=True)
def _copy(y, x, *args, **kwargs):
    return _conversion_spec(y, x)


def _holds_stand_ins(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(map(_holds_stand_ins, x))
    return isinstance(x, ActiveValue)


def _stacked(x):
    return np.stack([_stacked(e) for e in x]) if isinstance(x, (list, tuple)) else x


def _array_value(f, x, *args, **kwargs):
    """``np.array(x, ...)`` (or a sibling), where an engine's stand-in (a dual number, when forward
    mode differentiates the reverse pass) is not converted, which would drop what it carries: it
    is passed on or copied as NumPy treats the array it stands for, and a list holding them is
    stacked, a new array as ``np.array``'s is, with ``dtype`` applied."""
    if isinstance(x, ActiveValue):
        # f's result on the array x stands for tells whether f copies, and the copy's layout,
        # shape (ndmin, ascontiguousarray's one axis) and dtype: the stand-in gets the same
        plain = stood_for(x)
        like = f(plain, *args, **kwargs)
        y = x if like is plain else np.copy(x, order=_memory_order_of(like))
        if np.ndim(like) > np.ndim(y):
            y = np.reshape(y, np.shape(like))
        return y if y.dtype == like.dtype else y.astype(like.dtype)
    if isinstance(x, (list, tuple)) and _holds_stand_ins(x):
        y = _stacked(x)
        dtype = args[0] if args else kwargs.get("dtype")
        return y if dtype is None else y.astype(dtype)
    return f(x, *args, **kwargs)


def _memory_order_of(y) -> str:
    """The memory order of the array ``y``: 'C' or 'F' where it has one, else 'K' (a copy that
    keeps it)."""
    return "C" if y.flags.c_contiguous else "F" if y.flags.f_contiguous else "K"


@_linear(np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, batched=True, value=_array_value)
def _array(y, x, *args, **kwargs):
    """``np.array`` of an array (a copy) or of nested lists/tuples of numbers and arrays; the
    cotangent of a list is a ``Tangent[list]`` with one cotangent per element."""
    convert_adjoint, convert_push = _conversion_spec(y, x)
    stacked = isinstance(x, (list, tuple)) and _holds_stand_ins(x)
    shape = np.shape(y) if stacked else np.shape(x)  # (the stack's: a list's own would convert it)

    def array_adjoint(dy, lead=()):
        # ndmin may have added leading axes; to_input splits a nested list into its elements
        return convert_adjoint(np.reshape(dy, lead + shape), lead)

    def array_push(dx, lead):
        return convert_push(np.reshape(dx, (*lead, *np.shape(y))), lead)

    return array_adjoint, array_push


def _leaf_pairs(x, dx):
    """``(element, tangent)`` for the non-sequence elements of a nested list/tuple."""
    if isinstance(x, (list, tuple)):
        items = [ZERO] * len(x) if isinstance(dx, AbstractZero) else sequence_items(x, dx)
        for e, t in zip(x, items):
            yield from _leaf_pairs(e, t)
    else:
        yield x, unthunk(dx)


def _dense_structure(x, dx):
    """The tangent of a nested list/tuple of numbers and arrays as one array of ``np.shape(x)``,
    with a leading batch axis when its elements' tangents carry one."""
    pairs = list(_leaf_pairs(x, dx))
    batch = batch_size(pairs)
    leaves = iter([dense_tangent(e, t, batch) for e, t in pairs])

    def rebuild(node):
        return [rebuild(e) for e in node] if isinstance(node, (list, tuple)) else next(leaves)

    out = np.array(rebuild(x))
    if batch is not None:  # the batch axis sits below the list axes: bring it to the front
        out = np.moveaxis(out, len(np.shape(x)) - np.ndim(pairs[0][0]), 0)
    return out


# ----- joining ------------------------------------------------------------------------------------


def _concatenate_layout(pieces, axis):
    if axis is None:  # the pieces are flattened first
        return [(int(np.size(p)),) for p in pieces], 0
    return [np.shape(p) for p in pieces], normalize_axis(axis, np.ndim(pieces[0]))


def _stack_layout(pieces, axis):
    k = normalize_axis(axis, np.ndim(pieces[0]) + 1)
    return [np.shape(p)[:k] + (1,) + np.shape(p)[k:] for p in pieces], k


def _hstack_layout(pieces, axis):
    shapes = [np.shape(p) if np.ndim(p) >= 1 else (1,) for p in pieces]
    return shapes, 0 if len(shapes[0]) == 1 else 1


#: for each joining function: the shape each piece takes inside the concatenation it performs,
#: and the axis it joins on
_JOIN_LAYOUTS = {
    np.concatenate: _concatenate_layout,
    np.stack: _stack_layout,
    np.hstack: _hstack_layout,
    np.vstack: lambda pieces, axis: ([_at_least_2d(np.shape(p)) for p in pieces], 0),
    np.dstack: lambda pieces, axis: ([_at_least_3d(np.shape(p)) for p in pieces], 2),
    np.column_stack: lambda pieces, axis: (
        [np.shape(p) if np.ndim(p) >= 2 else (int(np.size(p)), 1) for p in pieces],
        1,
    ),
}


def _at_least_2d(shape):
    return {0: (1, 1), 1: (1, *shape)}.get(len(shape), shape)


def _at_least_3d(shape):
    return {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}.get(len(shape), shape)


def _shape_of(piece) -> tuple:
    """``np.shape`` of a piece to join; a list holding an engine's numbers (dual numbers, when
    forward mode differentiates the reverse pass) is measured without converting them."""
    if isinstance(piece, (list, tuple)) and _holds_stand_ins(piece):
        return np.shape(_stacked(piece))
    return np.shape(piece)


def _measurable(pieces) -> list:
    """The pieces to join, those lists holding an engine's numbers stacked, for their layout."""
    return [_stacked(p) if isinstance(p, (list, tuple)) and _holds_stand_ins(p) else p for p in pieces]


def _split_cotangent(dy, pieces, shapes, axis, lead=()):
    """The cotangent of each joined piece: ``dy`` cut along ``axis`` and reshaped (``lead``: the
    batch axis of a batch of cotangents, kept in front)."""
    if isinstance(dy, AbstractZero):
        return [NO if has_no_tangent(p) else dy for p in pieces]
    bounds = np.cumsum([s[axis] for s in shapes])[:-1]
    parts = np.split(dy, bounds, axis=axis + len(lead))
    if lead:
        return [
            NO if has_no_tangent(p) else batch_to_input(p, np.reshape(d, lead + _shape_of(p)))
            for p, d in zip(pieces, parts)
        ]
    return [NO if has_no_tangent(p) else to_input(p, np.reshape(d, _shape_of(p))) for p, d in zip(pieces, parts)]


def _join_push(pieces, tangents, shapes, axis):
    tangents = [unthunk(t) for t in tangents]
    if all(isinstance(t, AbstractZero) for t in tangents):
        return ZERO
    # a piece given as a list (`[x[3] * 2.0]`): its tangent is a structure of its elements', one array here
    tangents = [
        _dense_structure(p, t) if isinstance(p, (list, tuple)) and not isinstance(t, AbstractZero) else t
        for p, t in zip(pieces, tangents)
    ]
    batch = batch_size(zip(pieces, tangents))
    lead = () if batch is None else (batch,)
    parts = [np.reshape(dense_tangent(p, t, batch), lead + s) for p, t, s in zip(pieces, tangents, shapes)]
    return np.concatenate(parts, axis=axis + len(lead))


def _register_join(f, layout):
    name = f.__name__

    def rrule_join(arrays, *args, **kwargs):
        if kwargs.get("out") is not None or len(args) > 1:
            raise_out(f)
        y = f(arrays, *args, **kwargs)
        pieces = as_sequence(arrays, f)
        shapes, axis = layout(_measurable(pieces), args[0] if args else kwargs.get("axis", 0))
        ndim = _ndim(y)

        def join_pullback(dy):
            if type(dy) is not np.ndarray or dy.ndim != ndim:
                batch = batch_of(y, dy)
                if batch is not None:
                    cotangents = _split_cotangent(batch, pieces, shapes, axis, batch.shape[:1])
                    return (NO, sequence_cotangent(arrays, cotangents, len(batch)), *(NO for _ in args))
            cotangents = _split_cotangent(cotangent_array(y, dy), pieces, shapes, axis)
            return (NO, sequence_cotangent(arrays, cotangents), *(NO for _ in args))

        join_pullback.__name__ = join_pullback.__qualname__ = f"{name}_pullback"
        return y, join_pullback

    def frule_join(tangents, arrays, *args, **kwargs):
        y = f(arrays, *args, **kwargs)
        pieces = as_sequence(arrays, f)
        shapes, axis = layout(_measurable(pieces), args[0] if args else kwargs.get("axis", 0))
        # (in the dtype= given, as the primal)
        return y, match_output(y, _join_push(pieces, sequence_items(arrays, tangents[1]), shapes, axis))

    rrule_join.__name__ = rrule_join.__qualname__ = f"rrule_{name}"
    frule_join.__name__ = frule_join.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(rrule_join)
    frule.register(f, batched=True)(frule_join)


for _f, _layout in _JOIN_LAYOUTS.items():
    _register_join(_f, _layout)


# ----- np.block -----------------------------------------------------------------------------------
#
# np.block([[a, b], [c, d]]) promotes every block to the output's rank (leading axes of length 1)
# and concatenates the innermost lists along the last axis, the lists holding them along the one
# before, and so on. Each block therefore fills one box of the output: along the axis of each
# nesting level it starts after its earlier siblings' extents, and it spans every other axis.


class _Box:
    """A block of ``np.block``'s argument and where it sits in the output: ``index`` (the box, one
    slice per axis) and ``shape`` (the block promoted to the output's rank)."""

    __slots__ = ("block", "index", "shape")

    def __init__(self, block, index: tuple, shape: tuple):
        self.block, self.index, self.shape = block, index, shape


def _list_depth(node) -> int:
    depth = 0
    while isinstance(node, list) and node:
        node, depth = node[0], depth + 1
    return depth


def _block_boxes(arrays, ndim: int):
    """The argument's nested lists with each block replaced by its ``_Box`` (``arrays`` has passed
    ``np.block`` already: lists only, of one depth, no empty list, matching extents)."""
    first = ndim - _list_depth(arrays)  # the axis the outermost list joins along

    def place(node, level: int, starts: list[int]):
        """``(the subtree of boxes, the shape the subtree assembles to)`` for ``node`` at ``starts``."""
        if not isinstance(node, list):
            shape = _shape_of(node)
            shape = (1,) * (ndim - len(shape)) + tuple(shape)
            index = (slice(None),) * first + tuple(
                slice(start, start + shape[first + k]) for k, start in enumerate(starts)
            )
            return _Box(node, index, shape), shape
        axis = first + level
        subtrees, extent, shape = [], 0, None
        for child in node:  # each child starts where the previous one ends along this level's axis
            subtree, shape = place(child, level + 1, [*starts[:level], starts[level] + extent, *starts[level + 1 :]])
            subtrees.append(subtree)
            extent += shape[axis]
        return subtrees, (*shape[:axis], extent, *shape[axis + 1 :])

    return place(arrays, 0, [0] * (ndim - first))[0]


def _block_cotangent(arrays, boxes, dy, lead: tuple):
    """The cotangent of ``np.block``'s argument: ``dy`` cut into the boxes (past ``lead``, a batch axis)."""
    if isinstance(boxes, _Box):
        if has_no_tangent(boxes.block):
            return NO
        piece = np.reshape(dy[(slice(None),) * len(lead) + boxes.index], lead + _shape_of(boxes.block))
        return batch_to_input(boxes.block, piece) if lead else to_input(boxes.block, piece)
    pieces = [_block_cotangent(a, b, dy, lead) for a, b in zip(arrays, boxes)]
    return sequence_cotangent(arrays, pieces, lead[0] if lead else None)


def _block_tangents(arrays, boxes, tangent, lead: tuple):
    """The blocks' tangents as dense arrays promoted to the output's rank (after ``lead``), nested as
    ``arrays``; ``None`` when every one is zero."""
    if isinstance(boxes, _Box):
        tangent = unthunk(tangent)
        if isinstance(tangent, AbstractZero):
            return None
        return np.reshape(dense_tangent(boxes.block, tangent, lead[0] if lead else None), lead + boxes.shape)
    items = sequence_items(arrays, tangent)
    return [_block_tangents(a, b, t, lead) for a, b, t in zip(arrays, boxes, items)]


def _block_batch(arrays, tangent) -> int | None:
    """The batch length of the blocks' tangents (a leading batch axis), ``None`` without one."""
    if not isinstance(arrays, list):
        return batch_size([(arrays, unthunk(tangent))])
    sizes = {_block_batch(a, t) for a, t in zip(arrays, sequence_items(arrays, tangent))} - {None}
    if len(sizes) > 1:
        raise ValueError(f"tangents carry batch axes of different lengths {sorted(sizes)}")
    return sizes.pop() if sizes else None


def _fill_zeros(arrays, boxes, tangents, dtype, lead: tuple):
    """``tangents`` with each constant block's ``None`` replaced by zeros of its box."""
    if isinstance(boxes, _Box):
        return np.zeros(lead + boxes.shape, dtype) if tangents is None else tangents
    return [_fill_zeros(a, b, t, dtype, lead) for a, b, t in zip(arrays, boxes, tangents)]


def _any_tangent(tangents) -> bool:
    if isinstance(tangents, list):
        return any(_any_tangent(t) for t in tangents)
    return tangents is not None


@rrule.register(np.block, batched=True)
def rrule_block(arrays):
    """The pullback cuts the cotangent into the blocks' boxes (a batch of cotangents past its batch axis).

    >>> import numpy as np, chainrules as cr
    >>> a, b = np.ones((2, 2)), np.zeros((2, 1))
    >>> y, back = cr.rrule(np.block, [[a, b], [np.ones((1, 3))]])
    >>> back(np.arange(9.0).reshape(3, 3))[1]
    Tangent[list](Tangent[list](array([[0., 1.],
           [3., 4.]]), array([[2.],
           [5.]])), Tangent[list](array([[6., 7., 8.]])))
    """
    y = np.block(arrays)
    boxes = _block_boxes(arrays, _ndim(y))

    def block_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != _ndim(y):
            batch = batch_of(y, dy)
            if batch is not None:
                return NO, _block_cotangent(arrays, boxes, batch, batch.shape[:1])
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, ZERO
        return NO, _block_cotangent(arrays, boxes, dy, ())

    return y, block_pullback


@frule.register(np.block, batched=True)
def frule_block(tangents, arrays):
    """The pushforward assembles the blocks' tangents with ``np.block`` (zeros for constant blocks)."""
    y = np.block(arrays)
    boxes = _block_boxes(arrays, _ndim(y))
    batch = _block_batch(arrays, tangents[1])
    lead = () if batch is None else (batch,)
    dense = _block_tangents(arrays, boxes, tangents[1], lead)
    if not _any_tangent(dense):
        return y, ZERO
    dtype = tangent_dtype(y) or np.dtype(np.float64)
    dy = np.block(_fill_zeros(arrays, boxes, dense, dtype, lead))
    if dtype.kind in "fc" and dy.dtype != dtype:  # the output's dtype, as NumPy promotes the blocks
        dy = (np.real(dy) if dtype.kind == "f" else dy).astype(dtype)
    return y, dy


def _append_layout(arr, values, axis):
    pieces = [arr, values]
    if axis is None:
        return pieces, [(int(np.size(arr)),), (int(np.size(values)),)], 0
    return pieces, [np.shape(arr), np.shape(values)], normalize_axis(axis, np.ndim(arr))


@rrule.register(np.append, batched=True)
def rrule_append(arr, values, *args, **kwargs):
    y = np.append(arr, values, *args, **kwargs)
    pieces, shapes, axis = _append_layout(arr, values, args[0] if args else kwargs.get("axis"))
    ndim = _ndim(y)

    def append_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                darr, dvalues = _split_cotangent(batch, pieces, shapes, axis, batch.shape[:1])
                return (NO, darr, dvalues, *(NO for _ in args))
        darr, dvalues = _split_cotangent(cotangent_array(y, dy), pieces, shapes, axis)
        return (NO, darr, dvalues, *(NO for _ in args))

    return y, append_pullback


@frule.register(np.append, batched=True)
def frule_append(tangents, arr, values, *args, **kwargs):
    y = np.append(arr, values, *args, **kwargs)
    pieces, shapes, axis = _append_layout(arr, values, args[0] if args else kwargs.get("axis"))
    return y, _join_push(pieces, tangents[1:3], shapes, axis)


# ----- splitting ---------------------------------------------------------------------------------


def _split_axis(f, x, args, kwargs):
    if f is np.hsplit:
        return 1 if np.ndim(x) > 1 else 0
    if f is np.vsplit:
        return 0
    if f is np.dsplit:
        return 2
    return normalize_axis(args[1] if len(args) > 1 else kwargs.get("axis", 0), np.ndim(x))


def _register_split(f):
    name = f.__name__

    def rrule_split(x, *args, **kwargs):
        ys = f(x, *args, **kwargs)
        axis = _split_axis(f, x, args, kwargs)

        def split_pullback(dys):
            items = sequence_items(ys, dys)
            if has_no_tangent(x) or all(isinstance(t, AbstractZero) for t in items):
                return (NO, NO if has_no_tangent(x) else ZERO, *(NO for _ in args))
            first = items[0]  # (one cotangent per piece, the common case, is told by the first)
            batch = None if type(first) is np.ndarray and first.ndim == ys[0].ndim else _items_batch(ys, items)
            if batch is not None:  # a batch of cotangents of each piece: joined past the batch axis
                parts = [
                    zeros_tangent(y, batch) if isinstance(t, AbstractZero) else match_input_batch(y, t)
                    for y, t in zip(ys, items)
                ]
                return (NO, batch_to_input(x, np.concatenate(parts, axis=axis + 1)), *(NO for _ in args))
            parts = [cotangent_array(y, t) for y, t in zip(ys, items)]
            parts = [zeros_tangent(y) if isinstance(t, AbstractZero) else t for y, t in zip(ys, parts)]
            return (NO, to_input(x, np.concatenate(parts, axis=axis)), *(NO for _ in args))

        split_pullback.__name__ = split_pullback.__qualname__ = f"{name}_pullback"
        return ys, split_pullback

    def frule_split(tangents, x, *args, **kwargs):
        ys = f(x, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return ys, dx
        axis = _split_axis(f, x, args, kwargs)
        lead = _lead(x, dx)
        bounds = np.cumsum([np.shape(y)[axis] for y in ys])[:-1]
        return ys, Tangent[list](*np.split(dx, bounds, axis=axis + len(lead)))

    rrule_split.__name__ = rrule_split.__qualname__ = f"rrule_{name}"
    frule_split.__name__ = frule_split.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(rrule_split)
    frule.register(f, batched=True)(frule_split)


def _items_batch(ys, items) -> int | None:
    """The batch length when the cotangents ``items`` of the outputs ``ys`` carry a batch axis (the
    nonzero ones all do, or none does), else None."""
    for y, t in zip(ys, items):
        if not isinstance(t, AbstractZero):
            if type(t) is np.ndarray and type(y) is np.ndarray and t.ndim == y.ndim:
                return None  # one cotangent per piece: the common case, told with one test
            return np.shape(t)[0] if carries_batch(y, t) else None
    return None


for _f in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit):
    _register_split(_f)


# ----- selections: take, take_along_axis, sort --------------------------------------------------


def _number_taken(a, y, dy, ndim):
    """The cotangent of a number (a 0-d array) that ``take`` copied into every entry of ``y``."""
    if type(dy) is not np.ndarray or dy.ndim != ndim:
        batch = batch_of(y, dy)
        if batch is not None:
            return match_input_batch(a, np.sum(np.reshape(batch, (len(batch), -1)), axis=1))
    dy = cotangent_array(y, dy)
    return dy if isinstance(dy, AbstractZero) else to_input(a, np.sum(dy))


def _take_index(x, indices, axis, mode):
    """An index into ``x`` that selects what ``np.take(x, indices, axis, mode=mode)`` selects."""
    n = np.size(x) if axis is None else np.shape(x)[axis]
    positions = np.asarray(indices)
    if mode == "wrap":
        positions = np.mod(positions, n)
    elif mode == "clip":
        positions = np.clip(positions, 0, n - 1)
    else:
        positions = np.where(positions < 0, positions + n, positions)
    if axis is None:
        return np.unravel_index(positions, np.shape(x))
    if positions.ndim == 0:
        positions = int(positions)
    return (slice(None),) * axis + (positions,)


def _take_rule(f):
    def rrule_take(a, indices, *args, **kwargs):
        options = dict(zip(("axis", "out", "mode"), args), **kwargs)
        if options.get("out") is not None:
            raise_out(f)
        axis, mode = options.get("axis"), options.get("mode", "raise")
        y = f(a, indices, axis=axis, mode=mode)
        k = None if axis is None else normalize_axis(axis, np.ndim(a))
        ndim = _ndim(y)

        def take_pullback(dy):
            if k is None and np.ndim(a) == 0:  # a number taken several times: the copies' cotangents add up
                return (NO, _number_taken(a, y, dy, ndim), NO, *(NO for _ in args))
            if type(dy) is not np.ndarray or dy.ndim != ndim:
                batch = batch_of(y, dy)
                if batch is not None:
                    return (
                        NO,
                        scatter_batch_thunk(a, _take_index(a, indices, k, mode), batch),
                        NO,
                        *(NO for _ in args),
                    )
            dx = scatter_thunk(a, _take_index(a, indices, k, mode), cotangent_array(y, dy))
            return (NO, dx, NO, *(NO for _ in args))

        return y, take_pullback

    def frule_take(tangents, a, indices, *args, **kwargs):
        options = dict(zip(("axis", "out", "mode"), args), **kwargs)
        axis, mode = options.get("axis"), options.get("mode", "raise")
        y = f(a, indices, *args, **kwargs)
        dx = tangent_array(a, unthunk(tangents[1]))
        if isinstance(dx, AbstractZero):
            return y, dx
        lead = _lead(a, dx)
        if axis is None:
            return y, np.take(np.reshape(dx, (*lead, -1)), indices, axis=len(lead), mode=mode)
        return y, np.take(dx, indices, axis=normalize_axis(axis, np.ndim(a)) + len(lead), mode=mode)

    rrule.register(f, batched=True)(rrule_take)
    frule.register(f, batched=True)(frule_take)


for _f in (np.take, np.ndarray.take):
    _take_rule(_f)


# compress and extract select what np.take selects at the condition's nonzero positions: take's
# rules, with no cotangent for the condition


def _compress_options(args: tuple, kwargs: dict):
    options = dict(zip(("axis", "out"), args), **kwargs)
    if options.get("out") is not None:
        raise_out(np.compress)
    return options.get("axis")


@rrule.register(np.compress, batched=True)
def rrule_compress(condition, a, *args, **kwargs):
    """``np.compress(condition, a, axis)`` is ``np.take(a, np.flatnonzero(condition), axis)``.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.compress, [True, False, True], np.array([1.0, 2.0, 3.0]))
    >>> y, cr.unthunk(back(np.array([10.0, 20.0]))[2])
    (array([1., 3.]), array([10.,  0., 20.]))
    """
    axis = _compress_options(args, kwargs)
    y, take_pullback = rrule(np.take, a, np.flatnonzero(condition), axis=axis)
    return y, lambda dy: (NO, NO, take_pullback(dy)[1], *(NO for _ in args))


@frule.register(np.compress, batched=True)
def frule_compress(tangents, condition, a, *args, **kwargs):
    axis = _compress_options(args, kwargs)
    return frule((NO, tangents[2], NO), np.take, a, np.flatnonzero(condition), axis=axis)


@rrule.register(np.ndarray.compress, batched=True)
def rrule_compress_method(a, condition, *args, **kwargs):
    """``a.compress(condition, axis)``: ``np.compress``'s rule, its arguments in the method's order."""
    y, pullback = rrule_compress(condition, a, *args, **kwargs)
    return y, lambda dy: (NO, pullback(dy)[2], NO, *(NO for _ in args))


@frule.register(np.ndarray.compress, batched=True)
def frule_compress_method(tangents, a, condition, *args, **kwargs):
    return frule_compress((NO, NO, tangents[1]), condition, a, *args, **kwargs)


@rrule.register(np.extract, batched=True)
def rrule_extract(condition, arr):
    """``np.extract(condition, arr)`` is ``np.take(arr, np.flatnonzero(condition))`` (flat positions)."""
    y, take_pullback = rrule(np.take, arr, np.flatnonzero(condition))
    return y, lambda dy: (NO, NO, take_pullback(dy)[1])


@frule.register(np.extract, batched=True)
def frule_extract(tangents, condition, arr):
    return frule((NO, tangents[2], NO), np.take, arr, np.flatnonzero(condition))


# ----- unique values: a gather at each value's first occurrence ---------------------------------
#
# np.unique's values are the array's entries (its rows along ``axis``) gathered where each value
# first occurs, return_index's indices: their derivative is that of np.take at those indices (the
# cotangent of a value goes to its first occurrence, the later equal entries get none; its tangent
# is the tangent there), a choice among the subgradients of a function that is not differentiable
# where entries tie. The indices, the inverse and the counts are integers with no derivative.

_UNIQUE_OPTIONS = (
    ("return_index", False),
    ("return_inverse", False),
    ("return_counts", False),
    ("axis", None),
)


def _first_occurrences(ar, values, axis, equal_nan: bool):
    """The indices (flat ones without an axis) where each of ``values``, np.unique's values of
    ``ar``, first occurs: return_index's, found again for an unsorted result (``sorted=False``,
    NumPy's hash table), whose values are the sorted ones permuted."""
    ar, values = np.asarray(stood_for(ar)), np.asarray(stood_for(values))
    ordered, first = np.unique(ar, return_index=True, axis=axis, equal_nan=equal_nan)
    if axis is not None or np.array_equal(ordered, values, equal_nan=True):
        return first
    position = np.searchsorted(ordered, values)
    nan = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
    position[nan] = np.flatnonzero(np.isnan(ordered))[: np.count_nonzero(nan)]  # unequal NaNs, each once
    return first[position]


def _unique_call(f, ar, args, kwargs):
    """``(y, tupled, index, axis)`` of ``f(ar, *args, **kwargs)`` (np.unique or one of NumPy 2's
    unique_* functions): its result, whether the values are its first item, and the gather
    (``np.take(ar, index, axis)``) giving them."""
    if f is np.unique:
        options = dict(_UNIQUE_OPTIONS)
        options.update(zip((k for k, _ in _UNIQUE_OPTIONS), args))
        options.update({k: v for k, v in kwargs.items() if k in options})
        equal_nan, axis = kwargs.get("equal_nan", True), options["axis"]
    else:  # the Array API functions: flat, every NaN a value of its own
        equal_nan, axis, options = False, None, {"return_index": f is np.unique_all}
    y = f(ar, *args, **kwargs)
    tupled = isinstance(y, tuple)
    values = y[0] if tupled else y
    if options["return_index"]:
        index = y[1]
    else:
        index = _first_occurrences(ar, values, axis, equal_nan)
    axis = None if axis is None else normalize_axis(axis, np.ndim(stood_for(ar)))
    return y, tupled, index, axis


def _unique_rules(f):
    """The rules of ``f``, np.unique or a unique_* function: np.take's at the first occurrences."""

    def rrule_unique(ar, *args, **kwargs):
        y, tupled, index, axis = _unique_call(f, ar, args, kwargs)
        _, take_pullback = rrule(np.take, ar, index, axis=axis)

        def unique_pullback(dy):
            dvalues = parts(dy, getattr(y, "_fields", len(y)))[0] if tupled else dy
            return (NO, take_pullback(dvalues)[1], *(NO for _ in args))

        return y, unique_pullback

    def frule_unique(tangents, ar, *args, **kwargs):
        y, tupled, index, axis = _unique_call(f, ar, args, kwargs)
        _, dvalues = frule((NO, tangents[1], NO), np.take, ar, index, axis=axis)
        if not tupled or isinstance(dvalues, AbstractZero):
            return y, dvalues
        return y, Tangent[type(y)](dvalues, *(NO for _ in y[1:]))

    rrule_unique.__doc__ = frule_unique.__doc__ = f"""np.{f.__name__}: the values are the entries gathered at
        their first occurrences, whose derivative is np.take's there (each value's cotangent goes to its
        first occurrence); the indices, inverse and counts have none."""
    rrule_unique.__name__ = rrule_unique.__qualname__ = f"rrule_{f.__name__}"
    frule_unique.__name__ = frule_unique.__qualname__ = f"frule_{f.__name__}"
    rrule.register(f, batched=True)(rrule_unique)
    frule.register(f, batched=True)(frule_unique)


for _f in (np.unique, np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all):
    _unique_rules(_f)


def _along_axis_index(shape, indices, axis):
    """The fancy index that ``np.take_along_axis(x, indices, axis)`` reads (``x`` of ``shape``)."""
    indices = np.asarray(indices)
    # the indices broadcast against ``x`` along the other axes: the grids span the output's shape
    out = np.broadcast_shapes(indices.shape, (*shape[:axis], 1, *shape[axis + 1 :]))
    index = list(np.ogrid[tuple(slice(n) for n in out)])
    index[axis] = np.where(indices < 0, indices + shape[axis], indices)
    return tuple(index)


@rrule.register(np.take_along_axis, batched=True)
def rrule_take_along_axis(arr, indices, *args, **kwargs):
    axis = args[0] if args else kwargs.get("axis", -1)
    y = np.take_along_axis(arr, indices, *args, **kwargs)
    ndim = _ndim(y)

    def take_along_axis_pullback(dy):
        if axis is None:
            flat = np.asarray(indices)
            index = np.unravel_index(np.where(flat < 0, flat + np.size(arr), flat), np.shape(arr))
        else:
            index = _along_axis_index(np.shape(arr), indices, normalize_axis(axis, np.ndim(arr)))
        if type(dy) is not np.ndarray or dy.ndim != ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                return (NO, scatter_batch_thunk(arr, index, batch, unique=False), NO, *(NO for _ in args))
        return (NO, scatter_thunk(arr, index, cotangent_array(y, dy), unique=False), NO, *(NO for _ in args))

    return y, take_along_axis_pullback


def _push_along_axis(x, dx, indices, axis):
    lead = _lead(x, dx)
    if axis is None:
        return np.take_along_axis(np.reshape(dx, (*lead, -1)), np.reshape(indices, (1,) * len(lead) + (-1,)), -1)
    k = normalize_axis(axis, np.ndim(x)) + len(lead)
    return np.take_along_axis(dx, np.reshape(indices, (1,) * len(lead) + np.shape(indices)), k)


@frule.register(np.take_along_axis, batched=True)
def frule_take_along_axis(tangents, arr, indices, *args, **kwargs):
    axis = args[0] if args else kwargs.get("axis", -1)
    y = np.take_along_axis(arr, indices, *args, **kwargs)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, dx
    return y, _push_along_axis(arr, dx, indices, axis)


def _sorted_values(a, index):
    """``a``'s values at the sorted positions: indexed as it is when it is an array or an engine's
    stand-in for one (converting a dual array would drop its derivative), converted otherwise."""
    return array_or_active(a)[index]


def _sorted_positions(a, args, kwargs):
    """``np.sort(a, axis, kind, order)``'s permutation along its axis, the index it reads ``a`` at, and the axis."""
    axis = args[0] if args else kwargs.pop("axis", -1)
    perm = np.argsort(a, axis=axis, **dict(zip(("kind", "order"), args[1:]), **kwargs))
    return perm, _permutation_index(a, perm, axis), axis


def _partitioned_positions(a, args, kwargs):
    """``np.partition(a, kth, axis, kind, order)``'s permutation, as ``_sorted_positions``. NumPy orders
    the entries between the kth ones its own way (``argpartition``'s may differ), so the output's
    entries are matched to ``a``'s by rank: the stable sorts of both put equal values in one order."""
    axis = args[1] if len(args) > 1 else kwargs.pop("axis", -1)
    options = dict(zip(("kind", "order"), args[2:]), **kwargs)
    plain = stood_for(a) if isinstance(a, ActiveValue) else np.asarray(a)
    y = np.partition(plain, args[0] if args else options.pop("kth"), axis=axis, **options)
    flat, along = (np.reshape(plain, -1), 0) if axis is None else (plain, axis)
    perm = np.empty(np.shape(y), dtype=np.intp)
    ranked = np.argsort(y, axis=along, kind="stable")
    np.put_along_axis(perm, ranked, np.argsort(flat, axis=along, kind="stable"), along)
    return perm, _permutation_index(a, perm, axis), axis


def _permutation_index(a, perm, axis):
    if axis is None:
        return np.unravel_index(perm, np.shape(a))
    return _along_axis_index(np.shape(a), perm, normalize_axis(axis, np.ndim(a)))


def _sorted_complex_values(a, index):
    """``np.sort_complex``'s output: the sorted values as complex numbers, of the precision NumPy
    gives each real type (complex128 for float32, complex64 for 8- and 16-bit integers)."""
    y = _sorted_values(a, index)
    dtype = np.sort_complex(np.empty(0, np.result_type(y))).dtype
    return y if np.result_type(y) == dtype else np.astype(y, dtype)


def _as_argument(a, da, convert):
    """The cotangent ``da`` of the array a list or tuple ``a`` stands for as ``a``'s own (``convert``:
    ``to_input``, or ``batch_to_input`` for a batch); an array's as it is."""
    if not isinstance(a, (list, tuple)) or isinstance(da, AbstractZero):
        return da
    return convert(a, unthunk(da))


def _permutation_rules(f, positions, values=_sorted_values) -> None:
    """Rules for the values of ``f``, a permutation of ``a``'s entries that ``positions(a, args,
    kwargs)`` gives (``values(a, index)`` reads them, in the output's dtype): the cotangent goes
    back to where each value came from (ties take the order of the permutation, one valid
    subgradient), and the tangent is permuted alike."""

    def permutation_rrule(a, *args, **kwargs):
        _, index, _ = positions(a, args, kwargs)
        y = values(a, index)
        ndim = _ndim(y)
        # a list or tuple of numbers: scattered into the array it stands for, then given its elements
        target = np.asarray(a) if isinstance(a, (list, tuple)) else a

        def permutation_pullback(dy):
            if type(dy) is not np.ndarray or dy.ndim != ndim:
                batch = batch_of(y, dy)
                if batch is not None:
                    da = scatter_batch_thunk(target, index, batch, unique=True)
                    return (NO, _as_argument(a, da, batch_to_input), *(NO for _ in args))
            da = scatter_thunk(target, index, cotangent_array(y, dy), unique=True)
            return (NO, _as_argument(a, da, to_input), *(NO for _ in args))

        permutation_pullback.__qualname__ = f"{f.__name__}_pullback"
        return y, permutation_pullback

    def permutation_frule(tangents, a, *args, **kwargs):
        perm, index, axis = positions(a, args, kwargs)
        y = values(a, index)
        dx = tangent_array(a, unthunk(tangents[1]))
        if isinstance(dx, AbstractZero):
            return y, dx
        return y, match_output(y, _push_along_axis(a, dx, perm, axis))

    permutation_rrule.__qualname__, permutation_frule.__qualname__ = f"rrule_{f.__name__}", f"frule_{f.__name__}"
    rrule.register(f, batched=True)(permutation_rrule)
    frule.register(f, batched=True)(permutation_frule)


_permutation_rules(np.sort, _sorted_positions)
_permutation_rules(np.partition, _partitioned_positions)
_permutation_rules(np.sort_complex, _sorted_positions, _sorted_complex_values)  # by real part, then imaginary


# ----- trim_zeros: a slice decided by the entries equal to zero --------------------------------


def _trim_zeros_key(filt, trim="fb", axis=None):
    """The index ``np.trim_zeros(filt, trim, axis)`` reads ``filt`` at: the bounding box of its
    nonzero entries along ``axis`` (every axis by default) on the sides ``trim`` names, a slice per
    axis. Which entries are zero is piecewise constant in them."""
    plain = np.asarray([stood_for(v) for v in filt] if isinstance(filt, (list, tuple)) else stood_for(filt))
    np.trim_zeros(plain, trim, axis)  # (NumPy's errors for trim and axis)
    axes = range(plain.ndim) if axis is None else normalize_axes(axis, plain.ndim)
    nonzero = np.argwhere(plain)
    if nonzero.size == 0:  # all zero: NumPy's empty slice
        start = stop = [0] * plain.ndim
    else:
        trim = trim.lower()
        start = nonzero.min(axis=0) if "f" in trim else [None] * plain.ndim
        stop = nonzero.max(axis=0) + 1 if "b" in trim else [None] * plain.ndim
    return tuple(slice(start[a], stop[a]) if a in axes else slice(None) for a in range(plain.ndim))


@rrule.register(np.trim_zeros, batched=True)
def rrule_trim_zeros(filt, *args, **kwargs):
    """A slice of ``filt``: the cotangent goes back to the entries kept, zeros to those trimmed.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.trim_zeros, np.array([0.0, 2.0, 0.0, 3.0, 0.0]))
    >>> y, cr.unthunk(back(np.array([1.0, 2.0, 3.0]))[1])
    (array([2., 0., 3.]), array([0., 1., 2., 3., 0.]))
    """
    key = _trim_zeros_key(filt, *args, **kwargs)
    options = (NO,) * len(args)
    if isinstance(filt, (list, tuple)):  # a 1-d sequence, sliced as NumPy slices it: the same type out
        y, getitem_pullback = rrule_getitem(filt, key[0])
        return y, lambda dy: (NO, getitem_pullback(dy)[1], *options)
    y = array_or_active(filt)[key]
    ndim = _ndim(y)

    def trim_zeros_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                return (NO, scatter_batch_thunk(filt, key, batch, unique=True), *options)
        return (NO, scatter_thunk(filt, key, cotangent_array(y, dy), unique=True), *options)

    return y, trim_zeros_pullback


@frule.register(np.trim_zeros, batched=True)
def frule_trim_zeros(tangents, filt, *args, **kwargs):
    key = _trim_zeros_key(filt, *args, **kwargs)
    if isinstance(filt, (list, tuple)):
        return frule_getitem((NO, tangents[1], NO), filt, key[0])
    y = array_or_active(filt)[key]
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, dx
    return y, dx[(slice(None),) * len(_lead(filt, dx)) + key]


# ----- diagonals and triangles ------------------------------------------------------------------


def _diagonal_positions(shape, offset, axis1, axis2):
    """Rows and columns of the ``offset`` diagonal in the plane of ``axis1``, ``axis2``."""
    rows, cols = shape[axis1], shape[axis2]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(length)
    return i - min(offset, 0), i + max(offset, 0)


def _diagonal_scatter(x, dy, offset, axis1, axis2, spread=False, batched=False):
    """The cotangent of ``np.diagonal(x, offset, axis1, axis2)`` (or, with ``spread``, of ``np.trace``);
    ``batched``: ``dy`` is a batch of cotangents (a leading batch axis)."""
    ndim = np.ndim(x)
    a1, a2 = normalize_axis(axis1, ndim), normalize_axis(axis2, ndim)
    rows, cols = _diagonal_positions(np.shape(x), offset, a1, a2)
    if spread and not isinstance(dy, AbstractZero):  # the trace's cotangent reaches every diagonal entry
        dy = np.expand_dims(dy, -1)
    if batched:  # the accumulator holds a batch axis in front: x's axes are one further right

        def batch_diagonal_plane(acc):
            return np.moveaxis(acc, (a1 + 1, a2 + 1), (-2, -1))

        return scatter_batch_thunk(x, (Ellipsis, rows, cols), dy, view=batch_diagonal_plane, unique=True)

    def diagonal_plane(acc):
        return np.moveaxis(acc, (a1, a2), (-2, -1))

    return scatter_thunk(x, (Ellipsis, rows, cols), dy, view=diagonal_plane, unique=True)


def _register_diagonal(f):
    def rrule_diagonal(a, *args, **kwargs):
        offset, axis1, axis2 = _diagonal_options(args, kwargs)
        y = f(a, *args, **kwargs)
        ndim = _ndim(y)

        def diagonal_pullback(dy):
            if type(dy) is not np.ndarray or dy.ndim != ndim:
                batch = batch_of(y, dy)
                if batch is not None:
                    dx = _diagonal_scatter(a, batch, offset, axis1, axis2, batched=True)
                    return (NO, dx, *(NO for _ in args))
            return (NO, _diagonal_scatter(a, cotangent_array(y, dy), offset, axis1, axis2), *(NO for _ in args))

        return y, diagonal_pullback

    def frule_diagonal(tangents, a, *args, **kwargs):
        offset, axis1, axis2 = _diagonal_options(args, kwargs)
        y = f(a, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, dx
        lead, ndim = len(_lead(a, dx)), np.ndim(a)
        return y, np.diagonal(dx, offset, normalize_axis(axis1, ndim) + lead, normalize_axis(axis2, ndim) + lead)

    rrule.register(f, batched=True)(rrule_diagonal)
    frule.register(f, batched=True)(frule_diagonal)


def _diagonal_options(args, kwargs):
    options = dict(zip(("offset", "axis1", "axis2"), args), **kwargs)
    return options.get("offset", 0), options.get("axis1", 0), options.get("axis2", 1)


for _f in (np.diagonal, np.ndarray.diagonal):
    _register_diagonal(_f)


def _register_trace(f):
    def rrule_trace(a, *args, **kwargs):
        options = dict(zip(("offset", "axis1", "axis2", "dtype", "out"), args), **kwargs)
        if options.get("out") is not None:
            raise_out(f)
        offset, axis1, axis2 = options.get("offset", 0), options.get("axis1", 0), options.get("axis2", 1)
        y = f(a, *args, **kwargs)

        def trace_pullback(dy):
            if type(dy) is not np.ndarray or dy.ndim != np.ndim(y):  # (a trace of a matrix is a number)
                batch = batch_of(y, dy)
                if batch is not None:
                    dx = _diagonal_scatter(a, batch, offset, axis1, axis2, spread=True, batched=True)
                    return (NO, dx, *(NO for _ in args))
            dy = cotangent_array(y, dy)
            return (NO, _diagonal_scatter(a, dy, offset, axis1, axis2, spread=True), *(NO for _ in args))

        return y, trace_pullback

    def frule_trace(tangents, a, *args, **kwargs):
        options = dict(zip(("offset", "axis1", "axis2", "dtype", "out"), args), **kwargs)
        offset, axis1, axis2 = options.get("offset", 0), options.get("axis1", 0), options.get("axis2", 1)
        y = f(a, *args, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, dx
        lead = len(_lead(a, dx))
        ndim = np.ndim(a)
        dy = np.trace(dx, offset, normalize_axis(axis1, ndim) + lead, normalize_axis(axis2, ndim) + lead)
        return y, match_output(y, dy)  # in the dtype= given, as the primal

    rrule.register(f, batched=True)(rrule_trace)
    frule.register(f, batched=True)(frule_trace)


for _f in (np.trace, np.ndarray.trace):
    _register_trace(_f)


@rrule.register(np.diag, batched=True)
def rrule_diag(v, *args, **kwargs):
    k = args[0] if args else kwargs.get("k", 0)
    y = np.diag(v, k)

    def diag_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != y.ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                if has_no_tangent(v):
                    return (NO, NO, *(NO for _ in args))
                if np.ndim(v) == 1:
                    return (NO, batch_to_input(v, np.diagonal(batch, k, 1, 2).copy()), *(NO for _ in args))
                return (NO, _diagonal_scatter(v, batch, k, 0, 1, batched=True), *(NO for _ in args))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero) or has_no_tangent(v):
            return (NO, NO if has_no_tangent(v) else dy, *(NO for _ in args))
        if np.ndim(v) == 1:  # v was placed on a diagonal: read it back
            return (NO, to_input(v, np.diagonal(dy, k).copy()), *(NO for _ in args))
        return (NO, _diagonal_scatter(v, dy, k, 0, 1), *(NO for _ in args))

    return y, diag_pullback


@frule.register(np.diag, batched=True)
def frule_diag(tangents, v, *args, **kwargs):
    k = args[0] if args else kwargs.get("k", 0)
    y = np.diag(v, k)
    dv = unthunk(tangents[1])
    if isinstance(dv, AbstractZero):
        return y, dv
    lead = _lead(v, dv)
    if np.ndim(v) == 2:
        return y, np.diagonal(dv, k, len(lead), len(lead) + 1)
    # (a buffer made from dv takes its values: a dual tangent, in forward over forward, too)
    out = np.zeros_like(dv, shape=(*lead, *np.shape(y)))
    rows, cols = _diagonal_positions(np.shape(y), k, 0, 1)
    out[..., rows, cols] = dv
    return y, out


@rrule.register(np.diagflat, batched=True)
def rrule_diagflat(v, *args, **kwargs):
    """``np.diagflat(v, k)`` is ``np.diag(np.ravel(v), k)``: the two rules chained.

    >>> import numpy as np, chainrules as cr
    >>> y, back = cr.rrule(np.diagflat, np.array([[1.0, 2.0]]))
    >>> y, back(np.array([[1.0, 5.0], [6.0, 2.0]]))[1]
    (array([[1., 0.],
           [0., 2.]]), array([[1., 2.]]))
    """
    flat, ravel_pullback = rrule(np.ravel, v)
    y, diag_pullback = rrule(np.diag, flat, *args, **kwargs)
    return y, lambda dy: (NO, ravel_pullback(diag_pullback(dy)[1])[1], *(NO for _ in args))


@frule.register(np.diagflat, batched=True)
def frule_diagflat(tangents, v, *args, **kwargs):
    flat, dflat = frule((NO, tangents[1]), np.ravel, v)
    return frule((NO, dflat, *(NO for _ in args)), np.diag, flat, *args, **kwargs)


def _register_triangle(f):
    def triangle_spec(y, m, k=0):
        def triangle_adjoint(dy, lead=()):  # (f acts on the last two axes: a batch axis stays in front)
            dx = f(dy, k)
            return np.sum(dx, axis=-2) if np.ndim(m) == 1 else dx

        def triangle_push(dx, lead):
            if np.ndim(m) == 1:  # a vector is broadcast to the rows of a square matrix
                n = np.shape(m)[0]
                dx = np.broadcast_to(np.expand_dims(dx, -2), (*lead, n, n))
            return f(dx, k)

        return triangle_adjoint, triangle_push

    _linear(f, batched=True)(triangle_spec)


for _f in (np.triu, np.tril):
    _register_triangle(_f)
