"""Array rules whose pullbacks take a batch of cotangents (a leading batch axis), checked against the
same pullback called row by row: every elementwise row, the reductions and scans, the reshapes,
joins, splits, copies and selections, indexing, the products, norms and traces."""

import operator

import numpy as np
import pytest
from test_ufuncs import CASES, _args

import chainrules as cr
from chainrules.core import batch_declines

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


# ----- reductions and scans -------------------------------------------------------------------

X32 = X.astype(np.float32)
C = rand(3, 4, dtype=complex)
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])  # tied maxima share the cotangent
ZEROS = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, 2.0, 0.5]])  # prod and cumprod through zeros
NANS = np.where(X > 1, np.nan, X)
SCANS_AND_REDUCTIONS = [
    (np.max, (X,), {}),
    (np.max, (X,), {"axis": 0}),
    (np.max, (X,), {"axis": -1, "keepdims": True}),
    (np.max, (X32,), {"axis": 1}),
    (np.max, (TIES,), {"axis": 1}),
    (np.max, (X,), {"axis": 0, "initial": 0.5}),
    (np.min, (X, (0, 1)), {}),
    (np.amax, (rand(2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
    (np.amin, (X, 1), {}),
    (np.ndarray.max, (X,), {"axis": 1}),
    (np.ndarray.min, (X32,), {}),
    (np.nanmax, (NANS,), {"axis": 0}),
    (np.nanmin, (NANS,), {}),
    (np.maximum.reduce, (X,), {}),
    (np.minimum.reduce, (X, 1), {"keepdims": True}),
    (np.fmax.reduce, (NANS,), {}),
    (np.fmin.reduce, (NANS,), {"axis": 1}),
    (np.ptp, (X,), {}),
    (np.ptp, (TIES,), {"axis": 1, "keepdims": True}),
    (np.prod, (X,), {}),
    (np.prod, (X, 1), {"keepdims": True}),
    (np.prod, (ZEROS,), {"axis": 1}),
    (np.prod, (C,), {"axis": 0}),
    (np.prod, (X32,), {"axis": 0}),
    (np.nanprod, (NANS,), {"axis": 0}),
    (np.ndarray.prod, (X,), {"axis": -1}),
    (np.multiply.reduce, (X,), {}),
    (np.cumsum, (X,), {}),
    (np.maximum.accumulate, (X,), {"axis": 1}),
    (np.minimum.accumulate, (X,), {}),
    (np.cumsum, (X,), {"axis": 1}),
    (np.cumsum, (C, 0), {}),
    (np.cumsum, (X32,), {"axis": 0, "dtype": np.float64}),
    (np.ndarray.cumsum, (rand(2, 3, 4), -1), {}),
    (np.cumprod, (X,), {}),
    (np.cumprod, (ZEROS,), {"axis": 1}),
    (np.cumprod, (C,), {"axis": 0}),
    (np.ndarray.cumprod, (X32, 1), {}),
    (np.add.accumulate, (X,), {}),
    (np.logaddexp.accumulate, (X,), {"axis": 1}),
    (np.add.reduceat, (X, [0, 2, 1]), {"axis": 1}),
    (np.multiply.accumulate, (X, 1), {}),
    (np.var, (X,), {}),
    (np.var, (X,), {"axis": 0, "ddof": 1}),
    (np.var, (C,), {"axis": 1, "keepdims": True}),
    (np.ndarray.var, (X32,), {"axis": 1}),
    (np.std, (X,), {"axis": (0, 1)}),
    (np.std, (C,), {"axis": 1, "keepdims": True}),
    (np.ndarray.std, (X, 0), {}),
    (np.average, (X,), {}),
    (np.average, (X, 1), {"keepdims": True}),
    (np.average, (X, 0, R.uniform(0.5, 1.5, 3)), {}),  # weights by position get a cotangent too
    (np.average, (X, None, R.uniform(0.5, 1.5, (3, 4))), {}),
    (np.average, (X,), {"axis": 1, "weights": R.uniform(0.5, 1.5, 4), "keepdims": True}),
    (np.average, (C, 1, R.uniform(0.5, 1.5, 4)), {}),
    (np.median, (X,), {}),
    (np.median, (X, 0), {}),
    (np.median, (X,), {"axis": 1, "keepdims": True}),
    (np.quantile, (X, 0.3), {}),
    (np.quantile, (X, np.array([0.2, 0.7])), {"axis": 0}),
    (np.quantile, (rand(2, 3, 4), np.array([0.1, 0.5, 0.9])), {"axis": (0, 2)}),
    (np.percentile, (X, [10.0, 90.0], 1), {"keepdims": True}),
    (np.percentile, (X32, 40.0), {"axis": 0}),
    (np.trapezoid, (X,), {}),
    (np.trapezoid, (X, np.sort(R.uniform(0, 2, 4))), {}),  # sample points by position get a cotangent
    (np.trapezoid, (X, None, 0.3, 0), {}),
    (np.trapezoid, (X, np.sort(R.uniform(0, 2, (3, 4)), axis=0)), {"axis": 0}),
    (np.trapezoid, (C,), {"dx": 0.5}),
]


@pytest.mark.parametrize("f, args, kwargs", SCANS_AND_REDUCTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_reductions_and_scans(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args) if _rtol(*args) > 1e-13 else 1e-12)


# ----- shapes, joins, splits, copies, selections -----------------------------------------------

X3 = rand(2, 3, 4)
ARRANGEMENTS = [
    (np.flip, (X,), {}),
    (np.flip, (X3, (0, 2)), {}),
    (np.fliplr, (X,), {}),
    (np.flipud, (C,), {}),
    (np.rot90, (X,), {}),
    (np.rot90, (X3, 3, (2, 0)), {}),
    (np.roll, (X, 2), {}),
    (np.roll, (X, 1, 1), {}),
    (np.roll, (X3, (1, -2), (0, 2)), {}),
    (np.roll, (X32, -1), {"axis": -1}),
    (np.moveaxis, (X3, 0, -1), {}),
    (np.moveaxis, (X3, (0, 1), (2, 0)), {}),
    (np.tile, (X, 2), {}),
    (np.tile, (rand(3), (2, 2)), {}),
    (np.tile, (C, (2, 1, 3)), {}),
    (np.repeat, (X, 2), {}),
    (np.repeat, (X, 3, 1), {}),
    (np.repeat, (X, [1, 0, 2], 0), {}),  # a count per entry
    (np.repeat, (X, np.arange(12) % 3), {}),
    (np.ndarray.repeat, (X32, 2), {"axis": 0}),
    (np.pad, (X, 1), {}),
    (np.pad, (X, ((1, 0), (2, 3))), {"mode": "constant", "constant_values": 5.0}),
    (np.pad, (X, 2), {"mode": "reflect"}),
    (np.pad, (C, ((0, 2), (1, 1))), {"mode": "wrap"}),
    (np.pad, (X, 1), {"mode": "edge"}),
    (np.pad, (X, 2), {"mode": "symmetric"}),
    (np.pad, (X, ((1, 0), (2, 3))), {"mode": "mean", "stat_length": (1, 2)}),
    (np.pad, (X, 2), {"mode": "median"}),
    (np.pad, (C, ((0, 2), (1, 1))), {"mode": "maximum", "stat_length": 2}),
    (np.pad, (X32, 1), {"mode": "minimum"}),
    (np.pad, (X, ((2, 1), (1, 5))), {"mode": "linear_ramp", "end_values": (1.0, -2.0)}),
    (np.tril, (X,), {}),
    (np.triu, (X, 1), {}),
    (np.tril, (rand(3),), {}),  # a vector is broadcast to the rows of a square matrix
    (np.triu, (X3, -1), {}),
    (np.copy, (X,), {}),
    (np.ndarray.copy, (C,), {}),
    (np.asarray, (X,), {}),
    (np.asanyarray, (X32,), {}),
    (np.array, (X,), {}),
    (np.array, (X,), {"ndmin": 3}),
    (np.array, (C,), {"dtype": np.complex64}),
    (np.ascontiguousarray, (X.T,), {}),
    (np.asfortranarray, (X,), {}),
    (np.ndarray.astype, (X, np.float32), {}),
    (np.astype, (X32, np.float64), {}),
    (np.ndarray.astype, (C, np.complex64), {}),
    (np.ndarray.astype, (X, int), {}),  # truncation: a zero derivative
    (np.atleast_1d, (X,), {}),
    (np.atleast_1d, (2.0,), {}),
    (np.atleast_2d, (rand(3),), {}),
    (np.atleast_3d, (X,), {}),
]


@pytest.mark.parametrize("f, args, kwargs", ARRANGEMENTS, ids=lambda v: getattr(v, "__name__", ""))
def test_arrangements_and_copies(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args))


JOINS = [
    (np.concatenate, ([X, rand(2, 4)],), {}),
    (np.concatenate, ((X, rand(3, 2)), 1), {}),
    (np.concatenate, ([X, rand(5)],), {"axis": None}),
    (np.concatenate, (X3,), {}),  # an array's rows are the pieces
    (np.concatenate, ([C, X],), {}),
    (np.concatenate, ([X[0], [1.0, 2.0]],), {}),  # a list among the pieces gets a structure
    (np.concatenate, ([X32, X32],), {"axis": 1}),
    (np.stack, ([X, X * 2],), {}),
    (np.stack, ((X, X),), {"axis": -1}),
    (np.hstack, ([rand(3), rand(2)],), {}),
    (np.hstack, ([X, X],), {}),
    (np.vstack, ([rand(4), X],), {}),
    (np.dstack, ([X, X],), {}),
    (np.column_stack, ([rand(3), X],), {}),
    (np.append, (X, rand(2, 4), 0), {}),
    (np.append, (X, rand(3)), {}),
    (np.append, (rand(3), 2.5), {}),
    (np.append, (X[0], [1.0, 2.0]), {}),
    (np.split, (X, 3), {}),
    (np.split, (X, [1, 3], 1), {}),
    (np.split, (C, 2, 1), {}),
    (np.array_split, (rand(7), 3), {}),
    (np.hsplit, (X, 2), {}),
    (np.vsplit, (X32, 3), {}),
    (np.dsplit, (rand(2, 2, 4), [1]), {}),
    (np.atleast_2d, (X[0], 2.0, X), {}),  # several arrays: a tuple out
    (np.array, ([1.0, 2.0, 3.0],), {}),  # a list in: a structured cotangent
    (np.array, ([[1.0, 2.0], [3.0, 4.5]],), {}),
    (np.asarray, ([X[0], X[1]],), {}),
]


@pytest.mark.parametrize("f, args, kwargs", JOINS, ids=lambda v: getattr(v, "__name__", ""))
def test_joins_splits_and_structures(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args))


SELECTIONS = [
    (np.take, (X, [0, 2, 2]), {}),  # a repeated position: the cotangents add
    (np.take, (X, [3, 0], 1), {}),
    (np.take, (X, 5), {}),  # a number out
    (np.take, (X, [-1, 7]), {"axis": 1, "mode": "wrap"}),
    (np.take, (X, [-3, 9]), {"mode": "clip"}),
    (np.ndarray.take, (C, np.array([[0, 1], [2, 2]]), 0), {}),
    (np.take_along_axis, (X, np.argsort(X, axis=1), 1), {}),
    (np.take_along_axis, (X, np.array([[0], [2], [1]]), 1), {}),
    (np.take_along_axis, (X, np.array([0, 5, 5]), None), {}),
    (np.sort, (X,), {}),
    (np.sort, (X, 0), {}),
    (np.sort, (X, None), {}),
    (np.sort, (np.array([1.0, 1.0, 0.0]),), {}),
    (np.sort, (X32,), {"axis": 0, "kind": "stable"}),
    (np.sort, ([0.5, -1.0, 2.0],), {}),  # a list: a batch at each element
    (np.sort_complex, (X,), {}),  # a real array: the real part of each complex cotangent
    (np.sort_complex, (C,), {}),
    (np.sort_complex, (X32,), {}),
    (np.trim_zeros, (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]),), {}),
    (np.trim_zeros, (np.array([[0.0, 0.0, 0.0], [0.0, 1.2, 0.0]]),), {"axis": 1}),
    (np.trim_zeros, ([0.0, 1.5, 0.0],), {"trim": "b"}),
    (np.diag, (rand(3),), {}),
    (np.diag, (rand(3), 1), {}),
    (np.diag, (X,), {}),
    (np.diag, (C, -1), {}),
    (np.diagonal, (X,), {}),
    (np.diagonal, (X3, 1, 2, 0), {}),
    (np.ndarray.diagonal, (X3,), {"axis1": 1, "axis2": 2}),
    (np.trace, (X,), {}),
    (np.trace, (X3, 0, 1, 2), {}),
    (np.ndarray.trace, (C, 1), {}),
    (np.ndarray.item, (X, 5), {}),
    (np.ndarray.item, (X, (1, 2)), {}),
    (np.ndarray.tolist, (X,), {}),  # nested lists out: a batch at each number
    (np.ndarray.tolist, (C,), {}),
    (np.ndarray.tolist, (X3.astype(np.float32),), {}),
    (np.ndarray.tolist, (np.array(0.5),), {}),  # a number out
]


@pytest.mark.parametrize("f, args, kwargs", SELECTIONS, ids=lambda v: getattr(v, "__name__", ""))
def test_selections(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args))


@pytest.mark.parametrize(
    "f, args",
    [(np.take, (X, np.array([0, 2, 0]), 0)), (np.diagonal, (X3, 0, 1, 2)), (np.trace, (X3, 0, 0, 2))],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_batch_of_selections_adds_into_an_accumulator(f, args):
    y, back = cr.rrule(f, *args)
    dys = rand(4, *np.shape(y))
    thunk = back(dys)[1]
    acc = np.ones((4, *np.shape(args[0])))
    assert thunk.add_into(acc) is acc
    np.testing.assert_allclose(acc, 1 + cr.unthunk(thunk), rtol=1e-14)
    for k in range(4):
        np.testing.assert_allclose(cr.unthunk(thunk)[k], cr.unthunk(back(dys[k])[1]), rtol=1e-14)


# ----- products, interpolation, polynomials, norms, traces ---------------------------------------

PLANAR = pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
MORE_PRODUCTS = [
    (np.kron, (X, rand(2, 2))),
    (np.kron, (rand(3), X)),
    (np.kron, (C, rand(2))),
    (np.kron, (X32, X32[:2])),
    (np.vdot, (rand(4), rand(4))),
    (np.vdot, (C, C * 2)),
    (np.vdot, (X, rand(12))),
    (np.vdot, ([1.0, 2.0], [3.0, 4.0])),
    (np.convolve, (rand(5), rand(3))),
    (np.convolve, (rand(3), rand(6))),  # the longer one second
    (np.convolve, (rand(5), rand(3), "same")),
    (np.convolve, (rand(5), rand(3), "valid")),
    (np.convolve, (rand(4, dtype=complex), rand(3))),
    (np.correlate, (rand(5), rand(3), "full")),
    (np.correlate, (rand(3), rand(6), "same")),
    (np.correlate, (rand(4), rand(5), "same")),
    (np.correlate, (rand(4, dtype=complex), rand(3, dtype=complex), "full")),
    (np.cross, (rand(3), rand(3))),
    (np.cross, (rand(4, 3), rand(3))),  # broadcast: the batch axis is never summed
    pytest.param(np.cross, (rand(2), rand(5, 2)), marks=PLANAR),  # 2-vectors: the third component out
    pytest.param(np.cross, (rand(3, 2), rand(3)), marks=PLANAR),
    (np.cross, (rand(3, 4), rand(3, 4), -1, -1, -1, 0)),
    (np.cross, (rand(3, 5), rand(5, 3), 0)),
    (np.cross, (rand(2, 3, dtype=complex), rand(3))),
    (np.linalg.cross, (rand(4, 3), rand(4, 3))),
    (np.interp, (rand(5), np.linspace(-1, 1, 4), rand(4))),
    (np.interp, (rand(2, 3) * 2, np.linspace(-1, 1, 4), rand(4), 0.5, -0.5)),  # bounds by position
    (np.interp, (0.3, np.linspace(-1, 1, 4), rand(4))),
    (np.interp, (rand(5), np.linspace(-1, 1, 4), rand(4, dtype=complex))),
    (np.polyval, (rand(4), rand(5))),
    (np.polyval, (rand(3), rand(2, 2))),
    (np.polyval, (rand(3), 0.7)),
    (np.polyval, ([1.0, 2.0, 3.0], X)),
    (np.polyval, (rand(3, dtype=complex), rand(4))),
    (np.polyval, (X32[0], X32[1])),
]


@pytest.mark.parametrize("f, args", MORE_PRODUCTS, ids=lambda v: getattr(v, "__name__", ""))
def test_more_products(f, args, batched_pullback):
    batched_pullback(f, *args, rtol=_rtol(*args) if _rtol(*args) > 1e-13 else 1e-12)


NORMS = [
    (np.linalg.norm, (X,), {}),
    (np.linalg.norm, (X, None, 1), {}),
    (np.linalg.norm, (C,), {"axis": 0, "keepdims": True}),
    (np.linalg.norm, (X, 1), {}),
    (np.linalg.norm, (X, "nuc"), {}),
    (np.linalg.norm, (X3, 3, -1), {}),
    (np.linalg.norm, (X3,), {"axis": (1, 2)}),
    (np.linalg.norm, (X, np.inf, 1), {}),
    (np.linalg.norm, (X32,), {}),
    (np.linalg.norm, ([3.0, 4.0],), {}),
    (np.linalg.vector_norm, (X3,), {"axis": (0, 2)}),
    (np.linalg.vector_norm, (C,), {"ord": 1}),
    (np.linalg.matrix_norm, (X3,), {}),
    (np.linalg.matrix_norm, (X3,), {"ord": 2, "keepdims": True}),
    (np.linalg.trace, (X3,), {}),
    (np.linalg.trace, (C,), {"offset": 1}),
]


@pytest.mark.parametrize("f, args, kwargs", NORMS, ids=lambda v: getattr(v, "__name__", ""))
def test_norms_and_traces(f, args, kwargs, batched_pullback):
    batched_pullback(f, *args, kwargs=kwargs, rtol=_rtol(*args) if _rtol(*args) > 1e-13 else 1e-12)


def test_a_batch_for_some_pieces_and_zeros_for_the_others():
    ys, back = cr.rrule(np.split, X, [1, 3], 1)
    dys = [rand(5, *np.shape(y)) for y in ys]
    dx = back(cr.Tangent[list](dys[0], cr.ZeroTangent(), dys[2]))[1]
    assert dx.shape == (5, 3, 4)
    np.testing.assert_array_equal(dx[:, :, 1:3], 0.0)
    np.testing.assert_array_equal(dx[:, :, :1], dys[0])
    np.testing.assert_array_equal(dx[:, :, 3:], dys[2])
    y, back = cr.rrule(np.atleast_2d, X[0], 2.0)
    _, da, db = back(cr.Tangent[tuple](cr.ZeroTangent(), rand(5, 1, 1)))
    assert isinstance(da, cr.ZeroTangent) and db.shape == (5,)


def test_kron_of_arrays_with_no_label_left_declines_a_batch():
    """Kron's batched pullback labels the batch axis with a letter of its own; two 26-axis
    arrays use every letter, so the rule refuses a batch for that call (and pulls back one
    cotangent at a time)."""
    a, b = np.full((1,) * 25 + (2,), 2.0), np.full((1,) * 25 + (3,), 3.0)
    before = batch_declines()
    y, back = cr.rrule(np.kron, a, b)
    assert batch_declines() == before + 1
    _, da, db = back(np.ones_like(y))
    np.testing.assert_allclose(cr.unthunk(da), np.full(a.shape, 9.0), rtol=1e-14)
    before = batch_declines()
    cr.rrule(np.kron, X, X)
    assert batch_declines() == before


# ----- found by fuzzing (tests/fuzz/fuzz_rules.py) ----------------------------------------------


@pytest.mark.parametrize(
    "f, a, b, kwargs",
    [
        (np.inner, rand(2, 2), rand(2, 2), {}),  # b contracted over its last axis: b's matrix is b.T
        (np.inner, rand(3, 3, dtype=complex), rand(3, 3), {}),
        (np.tensordot, rand(2, 2), rand(2, 2), {"axes": ([0], [1])}),  # both operands transposed
        (np.tensordot, rand(2, 3, 2), rand(2, 2), {"axes": ([2], [1])}),
        (np.tensordot, rand(2, 2), rand(2, 3, 2), {"axes": ([0], [2])}),
    ],
    ids=["inner", "inner-complex", "tensordot", "tensordot-3d", "tensordot-3d-right"],
)
def test_square_operands_contracted_out_of_place(f, a, b, kwargs, batched_pullback):
    """An operand whose matrix is its transpose gets its cotangents transposed back, even when
    the transpose has the operand's own shape (a square matrix)."""
    batched_pullback(f, a, b, kwargs=kwargs)


def test_reverse_jacobian_of_inner_with_a_square_matrix():
    a, b = rand(3, 3), rand(3, 3)

    def inner_with(b):
        return np.inner(a, b)

    expected = cr.jacobian(inner_with, b, mode="forward")
    np.testing.assert_allclose(cr.jacobian(inner_with, b, mode="reverse"), expected, rtol=1e-13)
