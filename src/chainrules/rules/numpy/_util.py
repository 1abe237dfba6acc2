"""Helpers shared by the elementwise and reduction rules: argument binding, axes, batch axes.

A *batched* tangent carries one more leading axis than its primal (row ``b`` is the ``b``-th
tangent); the forward engine pushes a chunk of tangents through a rule at once that way.
Everything here is written with NumPy functions and operators only, so that it also runs when
the array values are objects implementing NumPy's protocols (the forward engine's duals).
"""

from __future__ import annotations

import numpy as np

from ...core import callable_name
from ...core.errors import option_refused

_ABSENT = object()


def bind(f, args: tuple, kwargs: dict, names: tuple[str, ...], defaults: dict) -> dict:
    """Bind a rule's arguments after the first, given by position (in the order ``names``) or keyword.

    Returns ``defaults`` updated with the given values. ``out=`` is refused (rules do not
    differentiate writing into an existing array), and so is any argument without a default
    here: the rule does not support it, and says so rather than return a wrong derivative.

    >>> names, defaults = ("axis", "dtype", "out", "keepdims"), {"axis": None, "dtype": None, "keepdims": False}
    >>> bind(np.sum, (0,), {"keepdims": True}, names, defaults)
    {'axis': 0, 'dtype': None, 'keepdims': True}
    """
    if not args and all(k in defaults and v is not np._NoValue for k, v in kwargs.items()):
        return {**defaults, **kwargs}  # the common call: supported keywords only
    if len(args) > len(names):
        raise TypeError(f"{callable_name(f)} takes at most {len(names) + 1} positional arguments, got {len(args) + 1}")
    given = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in given:
            raise TypeError(f"{callable_name(f)} got multiple values for argument {key!r}")
        given[key] = value
    if given.pop("out", None) is not None:
        raise_out(f)
    for key, value in given.items():
        if key in defaults or value is None or value is np._NoValue or (key == "where" and value is True):
            continue  # supported, or the default value
        raise option_refused(f, args, f"the argument {key}=: call it without {key}=")
    return {**defaults, **{k: v for k, v in given.items() if k in defaults and v is not np._NoValue}}


def raise_out(f):
    raise option_refused(
        f, (), "out= writes into an existing array, and rules do not differentiate mutation: drop out= and use the "
        "returned value"
    )


def axes_of(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int, a negative int or a tuple) as a sorted tuple of non-negative axes.

    >>> axes_of(None, 3), axes_of(-1, 3), axes_of((2, 0), 3), axes_of(0, 0)
    ((0, 1, 2), (2,), (0, 2), ())
    """
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # one axis: the common call
        return (axis % ndim,)
    if isinstance(axis, (tuple, list)):
        axes = tuple(_normalize(a, ndim) for a in axis)
    else:
        axes = (_normalize(axis, ndim),)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {axis!r}")
    if ndim == 0:  # NumPy reduces a number over its axis 0 (or -1): there is nothing to reduce
        return ()
    return tuple(sorted(axes))


def _normalize(axis, ndim: int) -> int:
    axis = int(axis)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def size_along(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """The number of elements that are reduced together along ``axes``.

    >>> size_along((2, 3, 4), (0, 2))
    8
    """
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def keep(y, axes: tuple[int, ...], keepdims: bool):
    """A reduction's output (or its cotangent) with the reduced axes restored as length-1 axes."""
    if keepdims or not axes:
        return y
    if type(y) is np.ndarray or isinstance(y, np.generic):  # a reshape is cheaper than expand_dims
        shape = list(np.shape(y))
        for a in axes:
            shape.insert(a, 1)
        return np.reshape(y, shape)
    return np.expand_dims(y, axes)


def broadcast_view(v, shape: tuple):
    """``np.broadcast_to(v, shape)``: a read-only view, made directly for an array of ``shape``
    (whatever its strides), and with zero strides for a number or a C-contiguous array of as many
    axes as ``shape`` (``broadcast_to``'s checks cost several times as much for a small array, and
    a pullback spreads a cotangent every call).

    >>> broadcast_view(np.array([[1.0], [2.0]]), (2, 3)).tolist()
    [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    """
    if type(v) is not np.ndarray:
        if not isinstance(v, (float, np.floating)):
            return np.broadcast_to(v, shape)
        v = np.array(v)
    vshape = v.shape
    if vshape == shape:
        view = v.view()  # (reversed or gapped strides too: as a buffer below, v must be contiguous)
    else:
        if not vshape:
            strides = (0,) * len(shape)
        elif len(vshape) == len(shape) and v.flags.c_contiguous:
            strides = list(v.strides)
            for i, n in enumerate(vshape):
                if n != shape[i]:
                    if n != 1:
                        return np.broadcast_to(v, shape)  # its error message
                    strides[i] = 0
        else:
            return np.broadcast_to(v, shape)
        view = np.ndarray(shape, v.dtype, v, 0, strides)
    view.setflags(write=False)
    return view


def is_batched(x, dx) -> bool:
    """Whether the tangent ``dx`` of ``x`` carries a leading batch axis."""
    return np.ndim(dx) == np.ndim(x) + 1


def shift(axes: tuple[int, ...], batched: bool) -> tuple[int, ...]:
    """Axes of the primal as axes of its tangent (one further right when the tangent is batched)."""
    return tuple(a + 1 for a in axes) if batched else axes


def align(x, dx, ndim_out: int):
    """A batched tangent of ``x`` reshaped to broadcast against an output of ``ndim_out`` axes.

    Broadcasting aligns trailing axes, so a batch axis in front of a lower-rank input would meet
    one of the output's axes; length-1 axes are put between the batch axis and ``x``'s own.
    Unbatched tangents, and batched ones already aligned (by the caller), are returned as they are.
    """
    ndim = np.ndim(dx)
    if ndim <= np.ndim(x) or ndim >= ndim_out + 1:
        return dx
    shape = np.shape(dx)
    return np.reshape(dx, shape[:1] + (1,) * (ndim_out + 1 - ndim) + shape[1:])


def real_dtype(x) -> np.dtype:
    """The float dtype a derivative of ``x`` lives in (float64 for integers and Python numbers)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return np.dtype(np.float64)
    return np.finfo(dtype).dtype


def match_output(y, dy):
    """A pushforward result brought to the output's space: real for a real output, its float dtype.

    A batched ``dy`` keeps its batch axis; a number for an array output becomes a 0-d array.
    """
    dtype = getattr(y, "dtype", None)
    if type(dy) in (float, int, complex) and dtype is not None:
        dy = np.asarray(dy) if isinstance(y, np.ndarray) else np.asarray(dy)[()]
    if dtype is None or dtype.kind not in "fc" or not isinstance(dy, (np.ndarray, np.generic)):
        if dtype is None and np.iscomplexobj(dy) and not isinstance(y, complex):
            return np.real(dy)
        return dy
    if dtype.kind == "f" and dy.dtype.kind == "c":
        dy = np.real(dy)
    if dy.dtype != dtype:
        dy = dy.astype(dtype) if isinstance(dy, np.ndarray) else dtype.type(dy)
    if isinstance(y, np.generic) and isinstance(dy, np.ndarray) and dy.ndim == 0:
        dy = dy[()]  # a NumPy scalar output gets a NumPy scalar tangent
    return dy
