"""A structured tangent: a batch of (scaled) unit vectors that knows it is one, so products against it are copies.

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

The structure survives the elementwise steps a cotangent takes on its way back through
``(W x + b) ** 2``: multiplying the block by an array (or a number) that broadcasts against it,
dividing it by one, negating it, adding two blocks of the same units, each gives a *scaled*
block, whose row ``k`` is ``scale[k] * e[first + k]`` (a diagonal block). Its matmul selects and
scales rows, and its sum over the non-batch axes is ``scale``. The zeros off the units are hard
zeros, as a ``ZeroTangent`` is: ``0 * inf`` is 0 here where a dense block would make it NaN.

It lives in the core, beside the other tangent types, so that every engine can seed with it
(the forward engine's Jacobian passes do; a batch of unit cotangents pulled back through
``y = W @ x`` is ``seed @ W`` in the same way) and a rule may recognise it.

Anything else derived from a seed (a view, a slice, another result) is an ordinary array: only
the blocks themselves carry the structure. Blocks and the row selections they return are
read-only.
"""

from __future__ import annotations

import math
import mmap

import numpy as np


class BasisSeed(np.ndarray):
    """``batch`` unit tangents of a primal of shape ``shape``: row ``k`` is ``e[first + k]`` (flat
    index), or zero where ``first + k`` falls outside the primal. A scaled block (see the module
    docstring) has row ``k`` equal to ``scale[k] * e[first + k]``.

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
    >>> scaled = seed * np.array([5.0, 6.0, 7.0])  # rows 6 e[1] and 7 e[2]
    >>> scaled.scale, scaled @ W  # rows of W, selected and scaled
    (array([6., 7.]), array([[24., 30., 36., 42.],
           [56., 63., 70., 77.]]))
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

    #: ``(first, n)`` on a block itself; views and results of operations read the class's ``None``
    #: (plain values): NumPy does not copy an instance's attributes to a view, so no
    #: ``__array_finalize__`` (a Python call on every view) is needed to reset them
    basis = None
    #: ``None``: unit rows; else the value at each row's unit (zero for a zero row)
    scale = None

    def __reduce__(self):
        return (np.asarray, (self.view(np.ndarray),))

    # -- products with the block select instead of multiplying; scaling keeps the structure --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            structured = _STRUCTURED.get(ufunc)
            if structured is not None:
                result = structured(*inputs)
                if result is not None:
                    return result
        elif method == "reduce" and ufunc is np.add and len(inputs) == 1:
            result = _row_sums(inputs[0], **kwargs)
            if result is not None:
                return result
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
    key = (batch, shape, first, dtype)  # dtypes that compare equal make equal seeds
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


def _unit_rows(seed: BasisSeed) -> tuple[int, int]:
    """``(r0, r1)``: rows ``r0 <= k < r1`` hold a unit vector, at flat index ``first + k``."""
    first, n = seed.basis
    r0 = max(0, -first)
    return r0, max(r0, min(seed.shape[0], n - first))


def _units(seed: BasisSeed):
    """``(rows, flat)``: the batch rows that hold a unit vector and the flat index of each one."""
    r0, r1 = _unit_rows(seed)
    rows = np.arange(r0, r1)
    return rows, seed.basis[0] + rows


def _unit_values(seed: BasisSeed, dtype=None) -> np.ndarray:
    """The value at each row's unit (zero for rows without one): ``scale``, or ones. A new array."""
    if seed.scale is not None:
        return seed.scale.astype(dtype or seed.scale.dtype)
    values = np.zeros(seed.shape[0], dtype=dtype or seed.dtype)
    r0, r1 = _unit_rows(seed)
    values[r0:r1] = 1
    return values


#: scaled blocks of at least this many bytes keep their zeros in untouched memory (see ``_scaled``)
LAZY_ZEROS_BYTES = 1 << 20


def _scaled(seed: BasisSeed, values: np.ndarray) -> BasisSeed:
    """A block with ``seed``'s units and ``values[k]`` at row ``k``'s unit (``values`` is a new
    array the block keeps); its data are the dense values, for every operation that does not
    know the structure."""
    first, n = seed.basis
    batch = seed.shape[0]
    dtype = values.dtype
    r0 = max(0, -first)  # _unit_rows, inlined
    r1 = max(r0, min(batch, n - first))
    if r0 > 0:
        values[:r0] = 0
    if r1 < batch:
        values[r1:] = 0
    if batch * n * dtype.itemsize < LAZY_ZEROS_BYTES:
        flat = np.zeros(batch * n, dtype=dtype)  # written as a plain array, viewed as a block once
        if r1 > r0:  # row k's unit sits at k * n + first + k: a stride of n + 1 through the block
            flat[r0 * (n + 1) + first :: n + 1][: r1 - r0] = values[r0:r1]
        # its views, the block among them, are read-only too (write=False, given positionally: cheaper)
        flat.setflags(False)
        out = flat.reshape(seed.shape).view(BasisSeed)
    else:
        out = _lazy_zeros_block(seed.shape, first, r0, r1, values)
        out.setflags(False)
    out.basis, out.scale = seed.basis, values
    return out


def _lazy_zeros_block(shape: tuple, first: int, r0: int, r1: int, values: np.ndarray) -> BasisSeed:
    """A large scaled block whose zeros cost nothing to make: entry ``(k, j)`` (``j`` the flat
    index) is stored at position ``base + k * (1 - batch) + j * batch`` of a buffer, which is
    distinct for every entry, and puts the units ``(k, first + k)`` side by side. The buffer is
    fresh anonymous memory, zero until written, so only the units' few pages are ever touched:
    a dense block would write (and page in) ``batch * n`` numbers, as much as the Jacobian itself."""
    batch, n = shape[0], math.prod(shape[1:])
    dtype = values.dtype
    size = dtype.itemsize
    base = (batch - 1) ** 2
    memory = mmap.mmap(-1, (base + batch * (n - 1) + 1) * size)
    units = np.ndarray(r1 - r0, dtype, buffer=memory, offset=(base + batch * first + r0) * size)
    units[...] = values[r0:r1]
    strides = [batch * size] * (len(shape) - 1)  # the flat index steps by `batch` positions
    for i in range(len(shape) - 3, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 2]
    return np.ndarray.__new__(
        BasisSeed, shape, dtype, buffer=memory, offset=base * size, strides=((1 - batch) * size, *strides)
    )


def _is_plain_value(v) -> bool:
    """A number or an ordinary array of numbers: what a block may be scaled by."""
    if isinstance(v, (int, float, complex, np.number, np.bool_)):
        return True
    return type(v) is np.ndarray and v.dtype.kind in "biufc"


def _values_at_units(seed: BasisSeed, v, dtype) -> np.ndarray | None:
    """``v`` broadcast against the block, read at each row's unit, as a new array of ``dtype``
    (zero for rows without a unit); ``None`` when ``v`` does not broadcast within the block's
    shape (the product would not be a block of these units)."""
    batch = seed.shape[0]
    if type(v) is not np.ndarray or v.ndim == 0:
        return np.full(batch, v, dtype=dtype)
    first = seed.basis[0]
    if v.shape == seed.shape[1:]:  # v has the primal's shape: the common case
        if first >= 0 and first + batch <= v.size:  # every row holds a unit
            return v.reshape(-1)[first : first + batch].astype(dtype)
        values = np.zeros(batch, dtype=dtype)
        r0, r1 = _unit_rows(seed)
        values[r0:r1] = v.reshape(-1)[first + r0 : first + r1]
        return values
    r0, r1 = _unit_rows(seed)
    values = np.zeros(batch, dtype=dtype)
    try:
        if np.broadcast_shapes(v.shape, seed.shape) != seed.shape:
            return None
    except ValueError:
        return None
    rows = np.arange(r0, r1)
    wide = np.broadcast_to(v, seed.shape)
    values[rows] = wide[(rows, *np.unravel_index(first + rows, seed.shape[1:]))] if seed.ndim > 1 else wide[rows]
    return values


def _result_dtype(seed: BasisSeed, v) -> np.dtype:
    """The dtype of an arithmetic result of the block and ``v``, as NumPy would make it."""
    return np.promote_types(seed.dtype, v.dtype) if type(v) is np.ndarray else np.result_type(seed.dtype, v)


def _multiply(a, b):
    if type(a) is BasisSeed and a.basis is not None:
        seed, v = a, b
    elif type(b) is BasisSeed and b.basis is not None:
        seed, v = b, a
    else:
        return None
    if type(v) is np.ndarray:  # the common factor, checked without the general tests
        if v.dtype == seed.dtype:
            dtype = v.dtype
        elif v.dtype.kind in "biufc":
            dtype = np.promote_types(seed.dtype, v.dtype)
        else:
            return None
        first, batch = seed.basis[0], seed.shape[0]
        if v.ndim == 1 and v.shape == seed.shape[1:] and first >= 0 and first + batch <= v.size:
            # a vector's value at every row's unit (a new array: the block keeps it)
            values = v.astype(dtype) if batch == v.size else v[first : first + batch].astype(dtype)
        else:
            values = _values_at_units(seed, v, dtype)
    elif _is_plain_value(v):
        dtype = _result_dtype(seed, v)
        values = _values_at_units(seed, v, dtype)
    else:
        return None
    if values is None:
        return None
    if seed.scale is not None:
        values *= seed.scale
    return _scaled(seed, values)


def _divide(a, b):
    if not _is_seed(a) or not _is_plain_value(b):
        return None
    dtype = _result_dtype(a, b)
    values = _values_at_units(a, b, dtype)
    if values is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero row divided by zero stays a hard zero
        return _scaled(a, np.divide(_unit_values(a, dtype), values, out=values))


def _negative(a):
    return _scaled(a, np.negative(_unit_values(a))) if _is_seed(a) else None


def _positive(a):
    return a if _is_seed(a) else None


def _conjugate(a):
    if not _is_seed(a):
        return None
    if a.dtype.kind != "c" or a.scale is None:
        return a
    return _scaled(a, np.conj(a.scale))


def _same_units(a, b) -> bool:
    return _is_seed(a) and _is_seed(b) and a.basis == b.basis and a.shape == b.shape


def _add(a, b):
    if not _same_units(a, b):
        return None
    dtype = np.result_type(a.dtype, b.dtype)
    return _scaled(a, _unit_values(a, dtype) + _unit_values(b, dtype))


def _subtract(a, b):
    if not _same_units(a, b):
        return None
    dtype = np.result_type(a.dtype, b.dtype)
    return _scaled(a, _unit_values(a, dtype) - _unit_values(b, dtype))


def _row_sums(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """``np.sum(block, axis=<every axis but the batch axis>)``: each row's one value."""
    if not _is_seed(a) or out is not None or where is not True or initial not in (np._NoValue, 0):
        return None
    if dtype is not None and np.dtype(dtype) != a.dtype:
        return None
    axes = range(a.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    if sorted(int(x) % a.ndim for x in axes) != list(range(1, a.ndim)):
        return None
    values = _unit_values(a)
    return values.reshape((a.shape[0],) + (1,) * (a.ndim - 1)) if keepdims else values


def _product(a, b):
    """``a @ b`` when one side is a block and the other an ordinary array, without a matrix product."""
    if type(a) is BasisSeed and a.basis is not None and type(b) is np.ndarray and b.ndim >= 1:
        return _seed_times(a, b)
    if type(b) is BasisSeed and b.basis is not None and type(a) is np.ndarray and a.ndim >= 1:
        return _times_seed(a, b)
    return None


def _seed_times(seed: BasisSeed, b: np.ndarray, fresh: bool = False):
    """``seed @ b``: row ``k`` of the (flattened) block picks a row of ``b`` (and scales it).

    ``fresh``: ``b`` is a view made for this product alone (a rule's ``a.T``), which the full
    block's product may return itself, made read-only, rather than a view of it."""
    first, n = seed.basis
    batch = seed.shape[0]
    b_dtype = b.dtype
    same_dtype = b_dtype == seed.dtype
    dtype = b_dtype if same_dtype else np.result_type(seed.dtype, b_dtype)
    scale = seed.scale
    if seed.ndim == 2 and b.shape[0] == n and b.ndim <= 2:
        # x is a vector: (seed @ b)[k] = scale[k] * b[first + k]
        if first >= 0 and first + batch <= n:
            if first == 0 and batch == n:
                picked = b if fresh and same_dtype and scale is None else b.view()
            else:
                picked = b[first : first + batch]
            if scale is not None:
                return (scale[:, None] if b.ndim == 2 else scale) * picked
            if same_dtype:
                picked.setflags(False)  # a view of the rule's operand: nobody may write into it (write=False)
                return picked
        out = np.zeros((batch, *b.shape[1:]), dtype=dtype)
        rows, flat = _units(seed)
        out[rows] = b[flat] if scale is None else scale[rows].reshape((-1,) + (1,) * (b.ndim - 1)) * b[flat]
        return out
    if seed.ndim == 3 and b.ndim == 2 and seed.shape[2] == b.shape[0]:
        # x is a matrix (n1, n2); unit k sits at (i, j): (E_k @ b)[i] = scale[k] * b[j], other rows zero
        n1, n2 = seed.shape[1:]
        out = np.zeros((batch, n1, b.shape[1]), dtype=dtype)
        rows, flat = _units(seed)
        i, j = np.divmod(flat, n2)
        out[rows, i] = b[j] if scale is None else scale[rows, None] * b[j]
        return out
    return None


def seed_times_transposed(seed: BasisSeed, a: np.ndarray):
    """``seed @ a.T`` for a block ``seed`` of unit tangents of a vector and a matrix ``a``: the tangent
    ``a @ e_k`` of a matrix-vector product for each unit ``e_k`` at once, selected columns of ``a``
    (all of them, as the read-only view ``a.T``, for the full block of a Jacobian's one pass).

    >>> a = np.arange(6.0).reshape(2, 3)
    >>> seed_times_transposed(basis_seed(3, (3,), 0, np.float64), a)
    array([[0., 3.],
           [1., 4.],
           [2., 5.]])
    """
    if seed.basis is not None and seed.ndim == 2 and a.ndim == 2:
        result = _seed_times(seed, a.T, fresh=True)
        if result is not None:
            return result
    return structured_matmul(seed, a.T)


def structured_matmul(a, b):
    """``np.matmul(a, b)``, as a selection when an operand is a block: what NumPy's dispatch to
    ``BasisSeed.__array_ufunc__`` gives, without the dispatch (rules call it on their hot path).

    >>> seed = basis_seed(2, (3,), 1, np.float64)
    >>> structured_matmul(seed, np.arange(6.0).reshape(3, 2))  # rows 1 and 2
    array([[2., 3.],
           [4., 5.]])
    """
    if type(a) is BasisSeed or type(b) is BasisSeed:
        result = _product(a, b)
        if result is not None:
            return result
    return np.matmul(a, b)


def _times_seed(a: np.ndarray, seed: BasisSeed):
    """``a @ seed`` for a batched block of a matrix: (a @ E_k)[:, j] = scale[k] * a[:, i] for the unit at (i, j)."""
    if seed.ndim != 3 or a.ndim != 2 or a.shape[1] != seed.shape[1]:
        return None
    batch, n1, n2 = seed.shape
    dtype = np.result_type(seed.dtype, a.dtype)
    out = np.zeros((batch, a.shape[0], n2), dtype=dtype)
    rows, flat = _units(seed)
    i, j = np.divmod(flat, n2)
    columns = a[:, i].T
    out[rows, :, j] = columns if seed.scale is None else seed.scale[rows, None] * columns
    return out


_STRUCTURED = {
    np.matmul: _product,
    np.multiply: _multiply,
    np.true_divide: _divide,
    np.negative: _negative,
    np.positive: _positive,
    np.conjugate: _conjugate,
    np.add: _add,
    np.subtract: _subtract,
}
