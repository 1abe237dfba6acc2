"""A structured tangent: a batch of unit vectors that knows it is one, so products against it are copies.

A Jacobian is built by pushing a block of basis vectors through a function (forward mode) or
pulling one back (reverse mode): tangent ``k`` of the block is the unit vector ``e[first + k]``
of the flattened input (or output). Pushed through ``W @ x``, a dense identity block
costs a matrix product (O(N·M·chunk) flops) for an answer that is just rows of ``W`` (O(M·chunk)
copies). ``BasisSeed`` is that block as a NumPy array (so every rule can use it as the ordinary
array of its values, and ``isinstance(t, np.ndarray)`` holds), which also remembers its
structure: ``np.matmul`` and ``@`` with the seed as an operand select rows or columns
instead of multiplying (``np.dot``'s rule computes with ``np.matmul`` too). This is the "a
tangent can be any type that acts right" principle: no rule and no engine code special-cases
it; rules that write tangent products with matmul get the fast path for free.

It lives in the core, beside the other tangent types, so that every engine can seed with it
(the forward engine's Jacobian passes do; a batch of unit cotangents pulled back through
``y = W @ x`` is ``seed @ W`` in the same way) and a rule may recognise it.

Anything derived from a seed (a view, a slice, a result) is an ordinary array: only the seed
itself carries the structure. The seed and the row selections it returns are read-only.
"""

from __future__ import annotations

import math

import numpy as np


class BasisSeed(np.ndarray):
    """``batch`` unit tangents of a primal of shape ``shape``: row ``k`` is ``e[first + k]`` (flat
    index), or zero where ``first + k`` falls outside the primal.

    >>> import numpy as np
    >>> from chainrules.core import BasisSeed
    >>> seed = BasisSeed(2, (3,), first=1, dtype=np.float64)
    >>> np.asarray(seed)
    array([[0., 1., 0.],
           [0., 0., 1.]])
    >>> W = np.arange(12.0).reshape(3, 4)
    >>> seed @ W  # rows 1 and 2 of W, selected, not multiplied
    array([[ 4.,  5.,  6.,  7.],
           [ 8.,  9., 10., 11.]])
    """

    def __new__(cls, batch: int, shape: tuple[int, ...], first: int = 0, dtype=np.float64):
        shape = tuple(shape)
        n = math.prod(shape)
        # The block is a strided window on one short vector that holds a single 1 (batch + n - 1
        # numbers, not batch * n): row k starts k places further left, so its 1 lands in column
        # first + k, or outside the row (a zero row) when first + k is out of range.
        line = np.zeros(batch + n - 1, dtype=dtype)
        if 0 <= batch - 1 + first < line.size:
            line[batch - 1 + first] = 1
        line.flags.writeable = False  # so that no view of it can be made writeable again
        step = line.itemsize
        strides = [step] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        seed = np.ndarray.__new__(
            cls, (batch, *shape), dtype, buffer=line, offset=(batch - 1) * step, strides=(-step, *strides)
        )
        seed.flags.writeable = False
        seed.basis = (first, n)
        return seed

    def __array_finalize__(self, obj):
        self.basis = None  # views and results of operations are plain values

    def __reduce__(self):
        return (np.asarray, (self.view(np.ndarray),))

    # -- products with the seed select instead of multiplying --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__" and not kwargs and len(inputs) == 2:
            fast = _product(*inputs)
            if fast is not None:
                return fast
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)


_CACHE: dict = {}
_CACHE_SIZE = 64


def basis_seed(batch: int, shape: tuple[int, ...], first: int, dtype) -> BasisSeed:
    """``BasisSeed(batch, shape, first, dtype)``, shared between calls: seeds are read-only and
    small (``batch + size`` numbers), so repeated Jacobians reuse them.

    >>> basis_seed(2, (3,), 0, np.float64) is basis_seed(2, (3,), 0, np.float64)
    True
    """
    key = (batch, shape, first, np.dtype(dtype))
    seed = _CACHE.get(key)
    if seed is None:
        if len(_CACHE) >= _CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
        seed = _CACHE[key] = BasisSeed(batch, shape, first, dtype)
    return seed


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, BasisSeed) else x


def _is_seed(x) -> bool:
    return isinstance(x, BasisSeed) and x.basis is not None


def _units(seed: BasisSeed):
    """``(rows, flat)``: the batch rows that hold a unit vector and the flat index of each one."""
    first, n = seed.basis
    rows = np.arange(max(0, -first), max(0, min(seed.shape[0], n - first)))
    return rows, first + rows


def _product(a, b):
    """``a @ b`` when one side is a seed and the other an ordinary array, without a matrix product."""
    if _is_seed(a) and type(b) is np.ndarray and b.ndim >= 1:
        return _seed_times(a, b)
    if _is_seed(b) and type(a) is np.ndarray and a.ndim >= 1:
        return _times_seed(a, b)
    return None


def _seed_times(seed: BasisSeed, b: np.ndarray):
    """``seed @ b``: row ``k`` of the (flattened) seed picks a row of ``b``."""
    first, n = seed.basis
    batch = seed.shape[0]
    dtype = b.dtype if b.dtype == seed.dtype else np.result_type(seed.dtype, b.dtype)
    if seed.ndim == 2 and b.shape[0] == n and b.ndim <= 2:
        # x is a vector: (seed @ b)[k] = b[first + k]
        if first >= 0 and first + batch <= n and b.dtype == dtype:
            out = b[first : first + batch]
            out.flags.writeable = False  # a view of the rule's operand: nobody may write into it
            return out
        out = np.zeros((batch, *b.shape[1:]), dtype=dtype)
        rows, flat = _units(seed)
        out[rows] = b[flat]
        return out
    if seed.ndim == 3 and b.ndim == 2 and seed.shape[2] == b.shape[0]:
        # x is a matrix (n1, n2); unit k sits at (i, j): (E_k @ b)[i] = b[j], other rows zero
        n1, n2 = seed.shape[1:]
        out = np.zeros((batch, n1, b.shape[1]), dtype=dtype)
        rows, flat = _units(seed)
        i, j = np.divmod(flat, n2)
        out[rows, i] = b[j]
        return out
    return None


def _times_seed(a: np.ndarray, seed: BasisSeed):
    """``a @ seed`` for a batched seed of a matrix: (a @ E_k)[:, j] = a[:, i] for the unit at (i, j)."""
    if seed.ndim != 3 or a.ndim != 2 or a.shape[1] != seed.shape[1]:
        return None
    batch, n1, n2 = seed.shape
    dtype = np.result_type(seed.dtype, a.dtype)
    out = np.zeros((batch, a.shape[0], n2), dtype=dtype)
    rows, flat = _units(seed)
    i, j = np.divmod(flat, n2)
    out[rows, :, j] = a[:, i].T
    return out
