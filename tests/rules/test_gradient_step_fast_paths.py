"""The fast paths of one gradient step (a product of arrays, an accumulation of two arrays, a
thunk passed on, a reduction along one axis) give exactly what the general paths give: float32
kept, float64, complex, broadcast shapes, batches of cotangents, zeros and thunks."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.accumulation import add, iadd
from chainrules.rules.numpy._util import axes_of
from chainrules.testing import test_rrule

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64, np.complex128]


def sample(shape, dtype):
    x = np.asarray(RNG.standard_normal(shape))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return np.array(x, dtype=dtype)  # (a 0-d array too, not a NumPy scalar)


# ----- accumulate: two arrays of one shape and dtype --------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (5,), ()], ids=str)
def test_accumulating_two_arrays_is_add_then_iadd(shape, dtype):
    a, b, c = (sample(shape, dtype) for _ in range(3))
    a0, b0 = a.copy(), b.copy()
    acc, owned = cr.accumulate(a, False, b)  # borrowed: a new array, a and b untouched
    want = add(a0, b0)
    assert type(acc) is type(want) and np.array_equal(acc, want)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    assert owned == (type(acc) is np.ndarray)  # a 0-d sum is a NumPy scalar, which is not owned
    if owned:
        again, owned_again = cr.accumulate(acc, True, c)  # owned: added into in place
        assert again is acc and owned_again
        np.testing.assert_array_equal(again, iadd(want.copy(), c))


def test_accumulating_a_thunk_of_an_array_evaluates_it_once():
    calls = []
    x = np.arange(3.0, dtype=np.float32)
    thunk = cr.Thunk(lambda: calls.append(1) or x * 2)
    acc, owned = cr.accumulate(np.ones(3, np.float32), False, thunk)
    assert owned and acc.dtype == np.float32 and calls == [1]
    np.testing.assert_array_equal(acc, 1 + 2 * x)


def test_an_accumulator_that_is_not_writeable_is_not_written_into():
    view = np.broadcast_to(np.ones(3), (2, 3))  # read-only
    acc, owned = cr.accumulate(view, True, np.ones((2, 3)))
    assert acc is not view and owned and np.array_equal(acc, np.full((2, 3), 2.0))
    assert np.array_equal(view, np.ones((2, 3)))


@pytest.mark.parametrize(
    "acc, dx",
    [
        (np.ones(3, np.float32), np.ones(3)),  # another dtype: the sum's dtype as add gives it
        (np.ones((2, 3)), np.ones(3)),  # another shape: broadcast into the accumulator
        (np.ones(3, int), np.ones(3, int)),  # integers are not accumulated in place
    ],
    ids=["dtype", "shape", "int"],
)
def test_other_pairs_of_arrays_take_the_general_path(acc, dx):
    got, _ = cr.accumulate(acc, False, dx)
    want = add(acc, dx)
    assert got.dtype == want.dtype and np.array_equal(got, want)


# ----- products of arrays --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "a_shape, b_shape", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (3, 4)), ((3, 4), ())], ids=str
)
def test_product_of_arrays_pullback(a_shape, b_shape, dtype):
    a, b = sample(a_shape, dtype), sample(b_shape, dtype)
    y, back = cr.rrule(operator.mul, a, b)
    dy = sample(y.shape, y.dtype)
    _, da, db = back(dy)
    da, db = cr.unthunk(da), cr.unthunk(db)
    want_a = cr.match_input(a, dy * np.conj(b))
    want_b = cr.match_input(b, np.conj(a) * dy)
    for got, want, x in ((da, want_a, a), (db, want_b, b)):
        assert type(got) is type(want) and np.shape(got) == np.shape(x) and got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
    # a thunk of the same cotangent, and a batch of two, give the same
    _, da_t, db_t = back(cr.Thunk(lambda: dy))
    np.testing.assert_array_equal(cr.unthunk(da_t), da)
    np.testing.assert_array_equal(cr.unthunk(db_t), db)
    _, da_b, db_b = back(np.stack([dy, 2 * dy]))
    np.testing.assert_allclose(cr.unthunk(da_b), np.stack([da, 2 * da]), rtol=1e-6)
    np.testing.assert_allclose(cr.unthunk(db_b), np.stack([db, 2 * db]), rtol=1e-6)
    assert all(isinstance(d, cr.ZeroTangent) for d in back(cr.ZeroTangent())[1:])
    test_rrule(operator.mul, a, b)


def test_product_with_a_python_float_keeps_float32():
    a = sample((3, 4), np.float32)
    y, back = cr.rrule(operator.mul, a, 2.0)
    assert y.dtype == np.float32
    _, da, db = back(np.ones_like(y))
    da = cr.unthunk(da)
    assert da.dtype == np.float32 and np.array_equal(da, np.full(a.shape, 2.0, np.float32))
    assert isinstance(db, cr.Thunk)  # the 2.0's cotangent, a product and a sum, waits until asked for
    db = cr.unthunk(db)
    assert type(db) is float and db == pytest.approx(float(a.sum(dtype=np.float64)), rel=1e-5)


def test_the_cotangent_of_a_constant_in_a_product_is_never_computed():
    a, b = sample((3, 4), np.float32), sample((3, 4), np.float32)
    _, back = cr.rrule(operator.mul, a, b)
    _, da, db = back(np.ones((3, 4), np.float32))
    assert isinstance(da, cr.Thunk) and isinstance(db, cr.Thunk)  # either may be a constant's


# ----- subtraction and addition of a thunk -------------------------------------------------------


@pytest.mark.parametrize("op", [operator.add, operator.sub], ids=lambda op: op.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_thunk_cotangent_gives_what_its_value_gives(op, dtype):
    a, b = sample((3, 4), dtype), sample((3, 1), dtype)
    y, back = cr.rrule(op, a, b)
    dy = sample(y.shape, dtype)
    plain = [cr.unthunk(d) for d in back(dy)[1:]]
    lazy = [cr.unthunk(d) for d in back(cr.Thunk(lambda: dy))[1:]]
    for p, q in zip(plain, lazy):
        assert p.dtype == q.dtype and np.array_equal(p, q)


# ----- matrix products -------------------------------------------------------------------------


@pytest.mark.parametrize("f", [operator.matmul, np.matmul], ids=["operator.matmul", "np.matmul"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_product_pullback_returns_the_whole_tuple(f, dtype):
    a, b = sample((3, 4), dtype), sample((4, 2), dtype)
    y, back = cr.rrule(f, a, b)
    dy = sample(y.shape, dtype)
    df, da, db = back(dy)
    assert df == cr.NoTangent()
    np.testing.assert_allclose(cr.unthunk(da), dy @ b.conj().T, rtol=1e-5)
    np.testing.assert_allclose(cr.unthunk(db), a.conj().T @ dy, rtol=1e-5)
    batch = back(np.stack([dy, -dy]))
    assert len(batch) == 3 and batch[0] == cr.NoTangent()
    np.testing.assert_allclose(cr.unthunk(batch[2])[1], -(a.conj().T @ dy), rtol=1e-5)
    assert back(cr.ZeroTangent()) == (cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent())
    test_rrule(f, a, b)


# ----- reductions along one axis -----------------------------------------------------------------


@pytest.mark.parametrize("axis, ndim", [(0, 2), (1, 2), (-1, 2), (-2, 3), ((1, 0), 2), (None, 3)])
def test_axes_of_one_integer_is_the_general_answer(axis, ndim):
    want = tuple(range(ndim)) if axis is None else tuple(sorted(a % ndim for a in np.atleast_1d(axis)))
    assert axes_of(axis, ndim) == want


@pytest.mark.parametrize("axis", [2, -3])
def test_axes_of_out_of_range_raises(axis):
    with pytest.raises(np.exceptions.AxisError):
        axes_of(axis, 2)


def test_maximum_with_a_nan_row_and_a_tie_row():
    # as many winners as rows in all (0 in the NaN row, 2 in the tie row): the NaN row's
    # cotangent goes to its NaN entry and the tie splits
    x = np.array([[1.0, np.nan, 0.0], [3.0, 3.0, 1.0]], np.float32)
    y, back = cr.rrule(np.max, x, axis=1, keepdims=True)
    dx = back(np.array([[2.0], [4.0]], np.float32))[1]
    np.testing.assert_array_equal(dx, [[0, 2, 0], [2, 2, 0]])
    assert dx.dtype == np.float32


# ----- summing a cotangent back to its input's shape ------------------------------------------------


@pytest.mark.parametrize(
    "x_shape, dx_shape",
    [((4,), (3, 4)), ((3, 1), (3, 4)), ((1, 4), (2, 3, 4)), ((), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (2, 3, 4))],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_summing_back_to_an_input_is_unbroadcast(x_shape, dx_shape, dtype):
    x, dx = sample(x_shape, dtype), sample(dx_shape, dtype)
    for _ in range(2):  # the second call takes the remembered plan
        got = cr.match_input(x, dx)
        want = cr.unbroadcast(x, dx)
        assert type(got) is np.ndarray and got.shape == x.shape and got.dtype == x.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_cotangent_of_a_shape_that_does_not_broadcast_is_refused():
    with pytest.raises(ValueError):
        cr.match_input(np.ones(3), np.ones(4))


def test_many_pairs_of_shapes_keep_the_remembered_plans_bounded():
    from chainrules.core.projection import _SUM_PLANS

    for n in range(1, 300):
        assert cr.match_input(np.ones((n, 1)), np.ones((n, 2))).shape == (n, 1)
    assert len(_SUM_PLANS) <= 256


# ----- attributes that carry no derivative ---------------------------------------------------------


def test_the_shape_of_an_array_has_no_tangent():
    x = np.ones((3, 4), np.float32)
    y, back = cr.rrule(getattr, x, "shape")
    assert y == (3, 4)
    assert back(cr.ZeroTangent()) == (cr.NoTangent(),) * 3
    y, back = cr.rrule(getattr, x, "size", 0)  # with a default: the general path, the same answer
    assert y == 12 and back(cr.ZeroTangent()) == (cr.NoTangent(),) * 4
