"""Rules for ``np.meshgrid``: coordinate arrays from coordinate vectors, each input laid along its
own axis and broadcast over the others (``indexing="xy"`` swaps the first two axes, ``sparse``
keeps the broadcast axes at length one); and for the spaced samples ``np.linspace``,
``np.logspace`` and ``np.geomspace``, differentiated in their ends (and ``logspace``'s base), and
``np.arange``, in its start and step.

The pullback of each output sums its cotangent over the axes it was broadcast along; the
pushforward is ``np.meshgrid`` of the tangents, built with reshapes and ``np.broadcast_to`` so that
it also runs on the dual numbers of a Hessian.

>>> import numpy as np, chainrules as cr
>>> (X, Y), back = cr.rrule(np.meshgrid, np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0]))
>>> back((np.ones((2, 3)), np.ones((2, 3))))[1:]
(array([2., 2., 2.]), array([3., 3.]))

Sample ``k`` of ``np.linspace(start, stop, num)`` is ``(1 - t_k) start + t_k stop``, so an end's
cotangent sums the output's weighted by its share (``num`` is a setting):

>>> y, back = cr.rrule(np.linspace, 0.0, 1.0, 5)
>>> back(np.array([1.0, 0.0, 0.0, 0.0, 10.0]))
(NoTangent(), 1.0, 10.0, NoTangent())
"""

from __future__ import annotations

import operator

import numpy as np

from ...core import (
    AbstractZero,
    ActiveValue,
    NoTangent,
    Tangent,
    ZeroTangent,
    carries_batch,
    conj,
    frule,
    rrule,
    unbroadcast_batch,
    unthunk,
)
from ...core.active import stood_for
from ._arrays import (
    batch_to_input,
    cotangent_array,
    is_batched,
    normalize_axis,
    sequence_items,
    sum_to,
    tangent_array,
    to_input,
)
from ._util import bind, match_output

_NO = NoTangent()
_ZERO = ZeroTangent()


def _layout(xi: tuple, kwargs: dict):
    """For each input, the shape it takes before broadcasting (ones but along its axis), and the
    full shape of the outputs (their own shape when ``sparse``)."""
    indexing = kwargs.get("indexing", "xy")
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    sizes = [int(np.size(x)) for x in xi]
    axes = list(range(len(xi)))
    if indexing == "xy" and len(xi) > 1:
        axes[0], axes[1] = 1, 0
    shapes = []
    for size, axis in zip(sizes, axes):
        shape = [1] * len(xi)
        shape[axis] = size
        shapes.append(tuple(shape))
    full = [1] * len(xi)
    for size, axis in zip(sizes, axes):
        full[axis] = size
    return shapes, tuple(full), bool(kwargs.get("sparse", False))


def _grid(vectors, shapes, full, sparse):
    out = [np.reshape(v, s) for v, s in zip(vectors, shapes)]
    return out if sparse else [np.broadcast_to(o, full) for o in out]


@rrule.register(np.meshgrid)
def rrule_meshgrid(*xi, **kwargs):
    ys = np.meshgrid(*xi, **kwargs)
    shapes, full, sparse = _layout(xi, kwargs)

    def meshgrid_pullback(dys):
        grads = []
        for x, y, dy, shape in zip(xi, ys, sequence_items(ys, dys), shapes):
            dy = cotangent_array(y, dy)
            if isinstance(dy, AbstractZero):
                grads.append(dy)
                continue
            broadcast = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(dy)[i] != 1)
            summed = np.sum(dy, axis=broadcast) if broadcast else dy
            grads.append(to_input(x, np.reshape(summed, np.shape(x))))
        return (_NO, *grads)

    return ys, meshgrid_pullback


@frule.register(np.meshgrid)
def frule_meshgrid(tangents, *xi, **kwargs):
    ys = np.meshgrid(*xi, **kwargs)
    shapes, full, sparse = _layout(xi, kwargs)
    dxs = [unthunk(t) for t in tangents[1:]]
    if all(isinstance(d, AbstractZero) for d in dxs):
        return ys, _ZERO
    vectors = [np.zeros(np.shape(x)) if isinstance(d, AbstractZero) else d for x, d in zip(xi, dxs)]
    return ys, Tangent[type(ys)](*_grid(vectors, shapes, full, sparse))


# ----- linspace, logspace, geomspace ----------------------------------------------------------


class _Spacing:
    """How ``np.linspace(start, stop, num, endpoint, axis=axis)`` lays out its samples
    ``y = start + t (stop - start)``: the fractions ``t_k = k / div`` (``div`` is ``num - 1``, or
    ``num`` without the endpoint; ``t = 0`` for a single sample) along the output's ``axis``, and
    the ends broadcast over the other axes. ``np.logspace`` and ``np.geomspace`` lay out theirs the
    same way, and so does ``logspace``'s base (NumPy puts its axis at ``axis`` too)."""

    def __init__(self, y, o: dict):
        num = operator.index(o["num"])
        self.ndim = np.ndim(y)
        self.axis = normalize_axis(o["axis"], self.ndim)
        self.div = num - 1 if o["endpoint"] else num
        t = np.arange(num) / self.div if self.div > 0 else np.zeros(num)
        self.t = np.reshape(t, (num,) + (1,) * (self.ndim - 1 - self.axis))

    def spread(self, end, d):
        """``d``, the value or tangent of an ``end`` (with a batch axis in front for a batch of
        tangents), laid out as the output: length-1 axes on the left and at the samples' axis."""
        d = tangent_array(end, d)
        lead = np.shape(d)[:1] if is_batched(end, d) else ()
        shape = np.shape(d)[len(lead) :]
        d = np.reshape(d, lead + (1,) * (self.ndim - 1 - len(shape)) + shape)
        return np.expand_dims(d, self.axis + len(lead))

    def gather(self, end, g, lead: tuple = ()):
        """The cotangent of an ``end`` from ``g``, one of the ends' broadcast shape (after ``lead``,
        the batch axis of a batch)."""
        if lead:
            return batch_to_input(end, unbroadcast_batch(end, g))
        return to_input(end, sum_to(g, np.shape(end)))


def _spacing_rules(f, names: tuple[str, ...], defaults: dict, partials, differentiable: tuple[int, ...]) -> None:
    """Register rules for ``f(start, stop, *settings)``: ``partials(y, grid, values, given)`` gives
    the partial derivative of the samples ``y`` in each positional argument of ``given`` (among
    ``differentiable``; ``values`` are those arguments, bound), laid out as ``y``; the others are
    settings. ``linspace``'s ``retstep=True`` also returns ``step = (stop - start) / div``."""
    name = f.__name__

    def setup(args, kwargs):
        out = f(*args, **kwargs)
        o = bind(f, args[2:], kwargs, names, defaults)
        y = out[0] if o.get("retstep") else out
        grid = _Spacing(y, o)
        values = {names.index(k) + 2: v for k, v in o.items() if k in names}  # every argument, by position
        values.update(enumerate(args))
        given = [i for i in differentiable if i < len(args)]
        steps = {0: -1.0 / grid.div, 1: 1.0 / grid.div} if o.get("retstep") and grid.div > 0 else {}
        if np.result_type(y).kind not in "fc":  # (integer samples: floors, with no derivative)
            return out, y, grid, given, {}, steps
        return out, y, grid, given, partials(y, grid, values, given), steps

    def spacing_rrule(*args, **kwargs):
        out, y, grid, given, partial, steps = setup(args, kwargs)

        def spacing_pullback(dout):
            dy, dstep = sequence_items(out, dout) if out is not y else (unthunk(dout), _ZERO)
            if not np.iscomplexobj(y) and np.iscomplexobj(dy):
                dy = np.real(dy)  # a real output's cotangent is real
            pairs = [(y, dy), (out[1], dstep)] if out is not y else [(y, dy)]
            lead = next((np.shape(d)[:1] for v, d in pairs if carries_batch(v, d)), ())  # a batch's axis
            grads = [_NO] * len(args)
            for i in given:
                g = _ZERO
                if i in partial and not isinstance(dy, AbstractZero):  # summed along the samples
                    g = np.sum(dy * conj(partial[i]), axis=grid.axis + len(lead))
                if i in steps and not isinstance(dstep, AbstractZero):
                    g = g + dstep * steps[i]
                grads[i] = g if isinstance(g, AbstractZero) else grid.gather(args[i], g, lead)
            return (_NO, *grads)

        spacing_pullback.__qualname__ = f"{name}_pullback"
        return out, spacing_pullback

    def spacing_frule(tangents, *args, **kwargs):
        out, y, grid, given, partial, steps = setup(args, kwargs)
        dy = dstep = _ZERO
        for i in given:
            d = unthunk(tangents[i + 1]) if i + 1 < len(tangents) else _ZERO
            if isinstance(d, AbstractZero):
                continue
            spread = grid.spread(args[i], d)
            if i in partial:
                dy = spread * partial[i] if isinstance(dy, AbstractZero) else dy + spread * partial[i]
            if i in steps:
                dstep = spread * steps[i] if isinstance(dstep, AbstractZero) else dstep + spread * steps[i]
        if not isinstance(dy, AbstractZero):
            lead = np.shape(dy)[:1] if np.ndim(dy) > grid.ndim else ()
            dy = match_output(y, np.broadcast_to(dy, lead + np.shape(y)))
        if out is y:
            return out, dy
        if not isinstance(dstep, AbstractZero):
            lead = np.shape(dstep)[:1] if np.ndim(dstep) > grid.ndim else ()
            dstep = np.squeeze(dstep, grid.axis + len(lead))
            dstep = match_output(out[1], np.broadcast_to(dstep, lead + np.shape(out[1])))
        return out, Tangent[tuple](dy, dstep)

    spacing_rrule.__qualname__ = f"rrule_{name}"
    spacing_frule.__qualname__ = f"frule_{name}"
    rrule.register(f, batched=True)(spacing_rrule)
    frule.register(f, batched=True)(spacing_frule)


def _linspace_partials(y, grid, values, given):
    """``y = (1 - t) start + t stop``."""
    return {0: 1 - grid.t, 1: grid.t}


def _logspace_partials(y, grid, values, given):
    """``y = base ** u`` at ``u = (1 - t) start + t stop``: ``dy/du = y log(base)`` and
    ``dy/dbase = u base ** (u - 1)``."""
    base = grid.spread(values[4], values[4])
    slope = y * np.log(base)
    partials = {0: (1 - grid.t) * slope, 1: grid.t * slope}
    if 4 in given:
        u = grid.spread(values[0], values[0]) * (1 - grid.t) + grid.spread(values[1], values[1]) * grid.t
        partials[4] = u * base ** (u - 1)
    return partials


def _geomspace_partials(y, grid, values, given):
    """``y = start ** (1 - t) stop ** t`` (holomorphic in both off the branch cuts, as NumPy rotates
    ``start`` onto the positive reals first): ``dy/dstart = (1 - t) y / start``, ``dy/dstop = t y / stop``."""
    start, stop = (grid.spread(values[i], values[i]) for i in (0, 1))
    return {0: (1 - grid.t) * y / start, 1: grid.t * y / stop}


_DEFAULTS = {"num": 50, "endpoint": True, "dtype": None, "axis": 0}
_spacing_rules(
    np.linspace,
    ("num", "endpoint", "retstep", "dtype", "axis"),
    {**_DEFAULTS, "retstep": False, "device": None},
    _linspace_partials,
    (0, 1),
)
_LOGSPACE = ("num", "endpoint", "base", "dtype", "axis")
_spacing_rules(np.logspace, _LOGSPACE, {**_DEFAULTS, "base": 10.0}, _logspace_partials, (0, 1, 4))
_spacing_rules(np.geomspace, ("num", "endpoint", "dtype", "axis"), _DEFAULTS, _geomspace_partials, (0, 1))


# ----- arange -------------------------------------------------------------------------------------


def _arange(args: tuple, kwargs: dict):
    """``np.arange(*args, **kwargs)``; where ``start`` or ``step`` is an engine's value (a dual number
    of a Hessian), ``start + k step`` computed from it, which carries its derivatives."""
    y = np.arange(*(stood_for(a) for a in args), **kwargs)
    if len(args) > 1 and any(isinstance(a, ActiveValue) for a in args):
        k = np.arange(y.size, dtype=y.dtype)
        return args[0] + (k * args[2] if len(args) > 2 else k), y
    return y, y


def _arange_partials(args: tuple, y) -> dict:
    """Sample ``k`` of ``np.arange(start, stop, step)`` is ``start + k step``: its partial in
    ``start`` is 1 and in ``step`` is ``k``; ``stop`` only says where the samples end (a zero
    derivative between the jumps), as does a lone ``stop``. Integer samples have none, and
    integer arguments are settings."""
    if y.dtype.kind not in "fc" or len(args) < 2:
        return {}
    partials = {0: np.ones(y.shape, dtype=y.dtype)}
    if len(args) > 2:
        partials[2] = np.arange(y.size, dtype=y.dtype)
    return {i: p for i, p in partials.items() if np.result_type(stood_for(args[i])).kind in "fc"}


@rrule.register(np.arange, batched=True)
def rrule_arange(*args, **kwargs):
    """``np.arange(start, stop, step)``, differentiated in ``start`` and ``step`` (positional).

    >>> y, back = rrule(np.arange, 1.0, 2.0, 0.25)
    >>> back(np.ones(4))
    (NoTangent(), 4.0, ZeroTangent(), 6.0)
    """
    y, plain = _arange(args, kwargs)
    partials = _arange_partials(args, plain)

    def arange_pullback(dy):
        dy = unthunk(dy)
        # (a real `stop`: a zero derivative between the jumps; an integer: a setting)
        grads = [_ZERO if np.result_type(stood_for(a)).kind in "fc" else _NO for a in args]
        if not isinstance(dy, AbstractZero):
            lead = np.ndim(dy) == 2  # a batch of cotangents (a leading batch axis)
            for i, p in partials.items():
                g = np.sum(dy * p, axis=-1)
                grads[i] = batch_to_input(args[i], g) if lead else to_input(args[i], g)
        return (_NO, *grads)

    return y, arange_pullback


@frule.register(np.arange, batched=True)
def frule_arange(tangents, *args, **kwargs):
    y, plain = _arange(args, kwargs)
    dy = _ZERO
    for i, p in _arange_partials(args, plain).items():
        d = unthunk(tangents[i + 1]) if i + 1 < len(tangents) else _ZERO
        if not isinstance(d, AbstractZero):
            term = np.expand_dims(d, -1) * p  # (a batch of tangents: its axis first)
            dy = term if isinstance(dy, AbstractZero) else dy + term
    return y, dy if isinstance(dy, AbstractZero) else match_output(y, dy)
