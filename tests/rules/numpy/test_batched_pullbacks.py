"""Array rules whose pullbacks take a batch of cotangents (a leading batch axis), checked against the
same pullback called row by row: every elementwise row, sum and mean, the reshapes and
transposes, indexing, and the products."""

import operator

import numpy as np
import pytest
from test_ufuncs import CASES, _args

import chainrules as cr

R = np.random.default_rng(11)


def rand(*shape, dtype=np.float64):
    value = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R.standard_normal(shape)
    return value.astype(dtype)


def _rtol(*args):
    single = any(np.result_type(a) in (np.float32, np.complex64) for a in args if isinstance(a, np.ndarray))
    return 2e-6 if single else 1e-13


@pytest.mark.parametrize("f, makers, kwargs", CASES)
def test_elementwise_rows(f, makers, kwargs, batched_pullback):
    args = _args(makers)
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args))


X = rand(3, 4)
REDUCTIONS = [
    (np.sum, (X,), {}),
    (np.sum, (X, 0), {}),
    (np.sum, (X,), {"axis": -1, "keepdims": True}),
    (np.sum, (X,), {"axis": (0, 1)}),
    (np.sum, (X,), {"where": X > 0}),
    (np.sum, (X.astype(np.float32),), {"dtype": np.float64}),
    (np.ndarray.sum, (X, 1), {}),
    (np.nansum, (np.where(X > 1, np.nan, X),), {"axis": 0}),
    (np.add.reduce, (X,), {}),
    (np.mean, (X,), {}),
    (np.mean, (X,), {"axis": 1, "keepdims": True}),
    (np.ndarray.mean, (rand(2, 3, 4),), {"axis": (0, 2)}),
    (np.nanmean, (np.where(X > 1, np.nan, X),), {"axis": 1}),
    (np.sum, (rand(3, dtype=complex),), {}),
]


@pytest.mark.parametrize("f, args, kwargs", REDUCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_sum_and_mean(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args))


FORTRAN = np.asfortranarray(rand(3, 4))
STRIDED = rand(4, 6)[::2, ::-2]
SHAPES = [
    (np.reshape, (X, (2, 6)), {}),
    (np.reshape, (X, (4, 3)), {"order": "F"}),
    (np.reshape, (FORTRAN, (12,)), {"order": "A"}),
    (np.ndarray.reshape, (X, 6, 2), {}),
    (np.ravel, (X,), {}),
    (np.ravel, (FORTRAN,), {"order": "K"}),
    (np.ravel, (STRIDED,), {"order": "K"}),
    (np.ndarray.ravel, (X, "F"), {}),
    (np.ndarray.flatten, (X,), {}),
    (np.squeeze, (rand(3, 1, 4),), {}),
    (np.ndarray.squeeze, (rand(1, 3, 1), 0), {}),
    (np.expand_dims, (X, (0, 2)), {}),
    (np.transpose, (X,), {}),
    (np.transpose, (rand(2, 3, 4), (1, 2, 0)), {}),
    (np.ndarray.transpose, (rand(2, 3, 4), 2, 0, 1), {}),
    (np.swapaxes, (rand(2, 3, 4), 0, -1), {}),
    (np.broadcast_to, (rand(3, 1), (2, 3, 4)), {}),
    (np.broadcast_to, (2.5, (3,)), {}),
    (np.reshape, (rand(4, dtype=complex), (2, 2)), {}),
]


@pytest.mark.parametrize("f, args, kwargs", SHAPES, ids=lambda v: getattr(v, "__name__", ""))
def test_reshapes_and_transposes(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs)


INDICES = [
    ((3, 4), 2),
    ((3, 4), (1, slice(None, None, -1))),
    ((3, 4), (Ellipsis, None, 1)),
    ((3, 4), np.array([0, 2, 2])),  # a repeated position: the cotangents add
    ((3, 4), (slice(None), [3, 0, 3])),
    ((3, 4, 5), (np.array([0, 2]), slice(1, 3), np.array([1, 3]))),  # advanced indices around a slice move axes
    ((3, 4), X > 0),
    ((3, 4), (X[:, 0] > 0, slice(None))),
    ((4,), 1),  # a number out
]


@pytest.mark.parametrize("shape, index", INDICES, ids=repr)
def test_indexing(shape, index, batched_pullback):
    batched_pullback(operator.getitem, rand(*shape), index)


@pytest.mark.parametrize("name", ["T", "mT", "real", "imag"])
def test_attributes(name, batched_pullback):
    batched_pullback(getattr, rand(2, 3, 4, dtype=complex), name)
    batched_pullback(getattr, rand(2, 3), name)


def test_the_scatter_of_a_batch_adds_into_an_accumulator():
    x, index = rand(3, 4), np.array([0, 2, 0])
    _, back = cr.rrule(operator.getitem, x, index)
    dys = rand(5, 3, 4)
    thunk = back(dys)[1]
    acc = np.ones((5, 3, 4))
    out = thunk.add_into(acc)
    assert out is acc
    np.testing.assert_allclose(acc, 1 + cr.unthunk(thunk), rtol=1e-14)


M, V = rand(3, 4), rand(4)
PRODUCTS = [
    (np.matmul, (M, V)),
    (np.matmul, (rand(3), M)),
    (np.matmul, (M, rand(4, 2))),
    (np.matmul, (V, V)),
    (np.matmul, (rand(2, 3, 4), rand(4, 5))),
    (np.matmul, (rand(3, 4), rand(2, 4, 5))),
    (np.matmul, (rand(2, 1, 3, 4), rand(3, 4, 2))),
    (np.matmul, (rand(4), rand(2, 4, 3))),
    (np.matmul, (rand(3, 4, dtype=complex), rand(4, dtype=complex))),
    (np.matmul, (M.astype(np.float32), V.astype(np.float32))),
    (operator.matmul, (M, V)),
    (np.dot, (M, V)),
    (np.dot, (2.0, M)),
    (np.dot, (M, np.float64(3.0))),
    (np.dot, (rand(2, 3, 4), rand(5, 4, 2))),
    (np.ndarray.dot, (M, rand(4, 3))),
    (np.inner, (M, rand(2, 4))),
    (np.inner, (V, V)),
    (np.outer, (V, rand(2))),
    (np.tensordot, (rand(2, 3, 4), rand(3, 4, 5))),
    (np.tensordot, (rand(2, 3, 4), rand(4, 2), ([0, 2], [1, 0]))),
    (np.einsum, ("ij,j->i", M, V)),
    (np.einsum, ("ij,kj->ik", M, rand(2, 4))),
    (np.einsum, ("ii->i", rand(3, 3))),
    (np.einsum, ("ij->", M)),
    (np.einsum, ("...j,j", rand(2, 3, 4), V)),
    (np.einsum, ("ij,jk", M, rand(4, 1))),
    (np.einsum, ("i,->i", V, 2.0)),
    (np.einsum, ("ij,ij->i", rand(3, 4, dtype=complex), M)),
]


@pytest.mark.parametrize("f, args", PRODUCTS, ids=lambda v: getattr(v, "__name__", ""))
def test_products(f, args, batched_pullback):
    batched_pullback(f, *args, rtol=_rtol(*args) if _rtol(*args) > 1e-13 else 1e-12)
