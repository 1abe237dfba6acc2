"""Rules for ``np.meshgrid``: coordinate arrays from coordinate vectors, each input laid along its
own axis and broadcast over the others (``indexing="xy"`` swaps the first two axes, ``sparse``
keeps the broadcast axes at length one).

The pullback of each output sums its cotangent over the axes it was broadcast along; the
pushforward is ``np.meshgrid`` of the tangents, built with reshapes and ``np.broadcast_to`` so that
it also runs on the dual numbers of a Hessian.

>>> import numpy as np, chainrules as cr
>>> (X, Y), back = cr.rrule(np.meshgrid, np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0]))
>>> back((np.ones((2, 3)), np.ones((2, 3))))[1:]
(array([2., 2., 2.]), array([3., 3.]))
"""

from __future__ import annotations

import numpy as np

from ...core import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from ._arrays import cotangent_array, sequence_items, to_input

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
