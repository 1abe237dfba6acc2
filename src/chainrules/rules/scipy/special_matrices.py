"""Rules for ``scipy.linalg``'s structured matrices: ``toeplitz``, ``circulant``, ``hankel``, ``block_diag``.

Each builds a matrix by copying its inputs' entries into places, so each is linear: the forward
rule is the function itself applied to the tangents, and the pullback gathers the cotangent back.
A Toeplitz matrix repeats one value along each diagonal and a Hankel matrix along each
antidiagonal, so the cotangent of a value is the sum of the output's cotangent over its
(anti)diagonal (one ``np.bincount`` for all of them); a block diagonal matrix gives each block
its slice. ``toeplitz`` and ``circulant`` take stacks of vectors (SciPy batches over leading axes),
``block_diag`` stacks of blocks; inputs SciPy broadcasts get the broadcast axes summed back. A
batch of cotangents (a leading batch axis, for reverse-mode Jacobians) is gathered the same way,
its batch axis one more stack axis in front.

>>> import numpy as np, scipy.linalg as sl, chainrules as cr
>>> t, back = cr.rrule(sl.toeplitz, np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0]))
>>> t
array([[1., 4.],
       [2., 1.],
       [3., 2.]])
>>> back(np.ones((3, 2)))[1:]  # each value's cotangent sums its diagonal; r[0] is not read
(array([2., 2., 1.]), array([0., 1.]))
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sl

from ...core import carries_batch, frule, rrule, unbroadcast, unbroadcast_batch, unthunk
from ._lapack import NO, ZERO, as_array, batch_size, is_active, is_batched, is_plain, is_zero, plain, projector


def _sums_by_index(g, index, length: int):
    """``s[..., k] = sum(g[..., i, j] for index[i, j] == k)``: the cotangent of ``values`` from that
    of ``values[..., index]``."""
    batch = np.shape(g)[:-2]
    if is_plain(g):
        count = math.prod(batch)
        bins = (index.reshape(1, -1) + length * np.arange(count)[:, None]).reshape(-1)

        def summed(w):
            return np.bincount(bins, weights=w.reshape(-1), minlength=count * length).reshape(batch + (length,))

        if np.iscomplexobj(g):
            return (summed(g.real) + 1j * summed(g.imag)).astype(g.dtype, copy=False)
        return summed(g).astype(g.dtype, copy=False)
    # other array types (dual numbers, for Hessians): a product with the one-hot matrix of the index
    one_hot = (index.reshape(-1, 1) == np.arange(length)).astype(np.result_type(g.dtype, np.float32))
    return np.matmul(g.reshape(batch + (-1,)), one_hot)


def _vector(x):
    x = as_array(x)
    return np.reshape(x, (1,)) if np.ndim(x) == 0 else x


def _to_input(x, dx, batched: bool = False):
    """The cotangent of an input given to SciPy as ``np.atleast_1d(x)`` and broadcast along batch
    axes; ``batched``: ``dx`` carries a leading batch axis in front of those, which is kept."""
    if batched:
        return np.reshape(unbroadcast_batch(_vector(x), dx), np.shape(dx)[:1] + np.shape(x))
    return np.reshape(unbroadcast(_vector(x), dx), np.shape(x))


def _tangent_like(dx, x):
    dx = unthunk(dx)
    return np.zeros(np.shape(x), dtype=np.result_type(as_array(x), np.float32)) if is_zero(dx) else dx


# ----- Toeplitz: T[i, j] = c[i - j] (i >= j), r[j - i] (i < j) --------------------------------


def _toeplitz_index(m: int, n: int):
    """``T = values[..., index]`` with ``values = concatenate(c[..., ::-1], r[..., 1:])``."""
    return (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]


def _toeplitz(c, r=None):
    c = _vector(c)
    r = np.conj(c) if r is None else _vector(r)
    if not is_active(c, r):
        return sl.toeplitz(c, r)
    values = np.concatenate([c[::-1], r[1:]])  # dual numbers: a gather (of vectors)
    return values[_toeplitz_index(c.shape[-1], r.shape[-1])]


def _optional_r(name, rest, kwargs):
    """``r`` from ``f(c, r=None)``, and how many positional arguments get a cotangent."""
    if len(rest) > 1 or set(kwargs) - {"r"}:
        raise TypeError(f"{name} takes c and r only")
    return (rest[0] if rest else kwargs.get("r")), 1 + len(rest)


@rrule.register(sl.toeplitz, batched=True)
def rrule_toeplitz(c, *rest, **kwargs):
    r, n_args = _optional_r("scipy.linalg.toeplitz", rest, kwargs)
    project_c, project_r = projector(c), projector(r)
    y = _toeplitz(c, r)
    m, n = np.shape(y)[-2:]

    def toeplitz_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO,) + (ZERO,) * n_args
        batched = carries_batch(y, dy)
        values = _sums_by_index(plain(dy), _toeplitz_index(m, n), m + n - 1)  # sums over the diagonals
        dc = values[..., :m][..., ::-1]
        dr = np.concatenate([np.zeros_like(values[..., :1]), values[..., m:]], axis=-1)  # r[0] is not read
        if batched:
            if r is None:
                return NO, project_c.batch(_to_input(c, dc + np.conj(dr), True))
            return (NO, project_c.batch(_to_input(c, dc, True)), project_r.batch(_to_input(r, dr, True)))[: 1 + n_args]
        if r is None:  # r = conj(c)
            return NO, project_c(_to_input(c, dc + np.conj(dr)))
        return (NO, project_c(_to_input(c, dc)), project_r(_to_input(r, dr)))[: 1 + n_args]

    return y, toeplitz_pullback


@frule.register(sl.toeplitz, batched=True)
def frule_toeplitz(tangents, c, *rest, **kwargs):
    r, n_args = _optional_r("scipy.linalg.toeplitz", rest, kwargs)
    dc = unthunk(tangents[1])
    dr = unthunk(tangents[2]) if n_args == 2 else ZERO
    y = _toeplitz(c, r)
    if is_zero(dc) and is_zero(dr):
        return y, ZERO
    if r is None:
        return y, _toeplitz(dc)
    if is_batched(dc, c) or is_batched(dr, r):  # SciPy batches over leading axes: a batch of tangents too
        stacked = max(np.ndim(_vector(c)), np.ndim(_vector(r))) - 1
        dc, dr = _batch_in_front(dc, c, stacked), _batch_in_front(dr, r, stacked)
    return y, _toeplitz(_tangent_like(dc, c), _tangent_like(dr, r))


def _batch_in_front(dx, x, stacked: int):
    """A batch of tangents of the vector (or stack of vectors) ``x``, its batch axis in front of
    all ``stacked`` axes SciPy broadcasts the inputs' stacks to, so that it broadcasts with them."""
    if not is_batched(dx, x):
        return dx
    shape = np.shape(_vector(x))
    return np.reshape(dx, np.shape(dx)[:1] + (1,) * (stacked - len(shape) + 1) + shape)


# ----- circulant: C[i, j] = c[(i - j) mod n] ------------------------------------------------


def _circulant_index(n: int):
    return (np.arange(n)[:, None] - np.arange(n)[None, :]) % n


def _circulant(c):
    c = _vector(c)
    if not is_active(c):
        return sl.circulant(c)
    return c[..., _circulant_index(c.shape[-1])]  # dual numbers: a gather


@rrule.register(sl.circulant, batched=True)
def rrule_circulant(c):
    project = projector(c)
    y = _circulant(c)
    n = np.shape(y)[-1]

    def circulant_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, ZERO
        if carries_batch(y, dy):
            return NO, project.batch(_to_input(c, _sums_by_index(plain(dy), _circulant_index(n), n), True))
        return NO, project(_to_input(c, _sums_by_index(dy, _circulant_index(n), n)))

    return y, circulant_pullback


@frule.register(sl.circulant, batched=True)
def frule_circulant(tangents, c):
    dc = unthunk(tangents[1])
    y = _circulant(c)
    if is_zero(dc):
        return y, ZERO
    return y, _circulant(_batch_in_front(dc, c, np.ndim(_vector(c)) - 1))


# ----- Hankel: H[i, j] = c[i + j] (i + j < m), r[i + j - m + 1] -----------------------------


def _hankel_index(m: int, n: int):
    """``H = values[index]`` with ``values = concatenate(c, r[1:])``."""
    return np.arange(m)[:, None] + np.arange(n)[None, :]


def _hankel(c, r=None):
    if r is None:
        r = np.zeros_like(as_array(c))
    if not is_active(c, r):
        return sl.hankel(c, r)  # SciPy ravels (and warns about) arrays of more dimensions
    c, r = np.ravel(c), np.ravel(r)  # dual numbers: a gather
    return np.concatenate([c, r[1:]])[_hankel_index(np.shape(c)[0], np.shape(r)[0])]


@rrule.register(sl.hankel, batched=True)
def rrule_hankel(c, *rest, **kwargs):
    r, n_args = _optional_r("scipy.linalg.hankel", rest, kwargs)
    project_c, project_r = projector(c), projector(r)
    y = _hankel(c, r)
    m, n = y.shape

    def hankel_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO,) + (ZERO,) * n_args
        if carries_batch(y, dy):  # the sums of every row at once; the inputs were raveled
            values = _sums_by_index(plain(dy), _hankel_index(m, n), m + n - 1)
            lead = np.shape(dy)[:1]
            dc = project_c.batch(np.reshape(values[:, :m], lead + np.shape(c)))
            if r is None:
                return NO, dc
            dr = np.concatenate([np.zeros_like(values[:, :1]), values[:, m:]], axis=-1)
            return (NO, dc, project_r.batch(np.reshape(dr, lead + np.shape(r))))[: 1 + n_args]
        values = _sums_by_index(dy, _hankel_index(m, n), m + n - 1)  # sums over the antidiagonals
        dc = np.reshape(values[:m], np.shape(c))
        if r is None:
            return NO, project_c(dc)
        dr = np.reshape(np.concatenate([np.zeros_like(values[:1]), values[m:]]), np.shape(r))  # r[0] is not read
        return (NO, project_c(dc), project_r(dr))[: 1 + n_args]

    return y, hankel_pullback


@frule.register(sl.hankel, batched=True)
def frule_hankel(tangents, c, *rest, **kwargs):
    r, n_args = _optional_r("scipy.linalg.hankel", rest, kwargs)
    dc = unthunk(tangents[1])
    dr = unthunk(tangents[2]) if n_args == 2 else ZERO
    y = _hankel(c, r)
    if is_zero(dc) and is_zero(dr):
        return y, ZERO
    batch = batch_size((dc, dr), (c, r))
    if batch is not None:  # every row's values (raveled, as SciPy ravels the inputs) gathered at once
        m, n = np.shape(y)
        values = _raveled_rows(dc, c, batch)
        tail = np.zeros((batch, n - 1), dtype=values.dtype) if r is None else _raveled_rows(dr, r, batch)[:, 1:]
        return y, np.concatenate([values, tail], axis=-1)[:, _hankel_index(m, n)]
    dc = np.ravel(_tangent_like(dc, c))  # raveled as SciPy ravels the inputs
    return y, _hankel(dc, None if r is None else np.ravel(_tangent_like(dr, r)))


def _raveled_rows(dx, x, batch: int):
    """A batch of tangents of ``x`` (a zero or an unbatched tangent repeated in every row), each
    row raveled."""
    dx = _tangent_like(dx, x)
    if not is_batched(dx, x):
        dx = np.broadcast_to(dx, (batch, *np.shape(dx)))
    return np.reshape(dx, (batch, -1))


# ----- block diagonal matrices --------------------------------------------------------------


def _block_shape(x) -> tuple:
    """The shape SciPy gives an input: at least two axes, new ones in front."""
    shape = np.shape(x)
    return (1,) * (2 - len(shape)) + shape


def _block_diag(*arrs):
    if not is_active(*arrs):
        return sl.block_diag(*arrs)
    # dual numbers: rows of blocks between zeros, concatenated
    blocks = [np.reshape(as_array(a), _block_shape(a)) for a in arrs]
    batch = np.broadcast_shapes(*(np.shape(b)[:-2] for b in blocks))
    dtype = np.result_type(*(b.dtype for b in blocks))
    blocks = [np.broadcast_to(b, batch + np.shape(b)[-2:]) for b in blocks]
    width = sum(np.shape(b)[-1] for b in blocks)
    rows, before = [], 0
    for b in blocks:
        rr, cc = np.shape(b)[-2:]
        left = np.zeros(batch + (rr, before), dtype=dtype)
        right = np.zeros(batch + (rr, width - before - cc), dtype=dtype)
        rows.append(np.concatenate([left, b, right], axis=-1))
        before += cc
    return np.concatenate(rows, axis=-2)


@rrule.register(sl.block_diag, batched=True)
def rrule_block_diag(*arrs):
    projects = [projector(a) for a in arrs]
    y = _block_diag(*arrs)

    def block_diag_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO,) + (ZERO,) * len(arrs)
        batched = carries_batch(y, dy)  # (a leading batch axis: one more stack axis in front)
        dy = plain(dy)
        out, r0, c0 = [NO], 0, 0
        for a, project in zip(arrs, projects):
            rr, cc = _block_shape(a)[-2:]
            block = dy[..., r0 : r0 + rr, c0 : c0 + cc]
            if batched:
                summed = unbroadcast_batch(np.empty(_block_shape(a)), block)
                out.append(project.batch(np.reshape(summed, np.shape(dy)[:1] + np.shape(a))))
            else:
                out.append(project(np.reshape(unbroadcast(np.empty(_block_shape(a)), block), np.shape(a))))
            r0, c0 = r0 + rr, c0 + cc
        return tuple(out)

    return y, block_diag_pullback


@frule.register(sl.block_diag, batched=True)
def frule_block_diag(tangents, *arrs):
    tangents = [unthunk(t) for t in tangents[1:]]
    y = _block_diag(*arrs)
    if all(is_zero(t) for t in tangents):
        return y, ZERO
    blocks, stack_rank = [], max(len(_block_shape(x)) for x in arrs) - 2
    for dx, x in zip(tangents, arrs):
        if is_zero(dx):
            blocks.append(np.zeros(_block_shape(x), dtype=y.dtype))
        elif is_batched(dx, x):  # the batch axis in front of all the stack axes, then the block's own
            shape = _block_shape(x)
            blocks.append(np.reshape(dx, (np.shape(dx)[0], *(1,) * (stack_rank + 2 - len(shape)), *shape)))
        else:
            blocks.append(np.reshape(dx, _block_shape(x)))
    return y, _block_diag(*blocks)
