"""The array fast paths of the hot rules (a cotangent of the output's shape and dtype, the common
case in a gradient) give what the general paths give, and every other kind of cotangent still
takes the general path: another dtype, a thunk, a zero, a batch of cotangents."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy._util import broadcast_view

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64]


def cotangents(y):
    """The kinds of cotangent a pullback of an array output may receive, each with the plain
    float64 array it stands for (None for a zero)."""
    dy = RNG.standard_normal(y.shape)
    other = np.float64 if y.dtype == np.float32 else np.float32
    return [
        (dy.astype(y.dtype), dy.astype(y.dtype).astype(np.float64)),
        (dy.astype(other), dy.astype(other).astype(np.float64)),
        (cr.Thunk(lambda: dy.astype(y.dtype)), dy.astype(y.dtype).astype(np.float64)),
        (dy.astype(np.complex128), dy),  # a real output's cotangent counts by its real part
        (cr.ZeroTangent(), None),
    ]


def check(got, want, x):
    got = cr.unthunk(got)
    if want is None:
        assert isinstance(got, cr.AbstractZero)
        return
    assert type(got) is np.ndarray and got.dtype == x.dtype and got.shape == np.shape(x)
    tol = 1e-5  # float32 data or cotangents take part in some cases
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "f, partial", [(np.tanh, lambda x: 1 - np.tanh(x) ** 2), (np.exp, np.exp), (np.log, lambda x: 1 / x)]
)
def test_one_input_elementwise_on_a_real_array(f, partial, dtype):
    x = RNG.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    y, back = cr.rrule(f, x)
    p = partial(x.astype(np.float64))
    for dy, plain in cotangents(y):
        df, dx = back(dy)
        assert df == cr.NoTangent()
        check(dx, None if plain is None else p * plain, x)
    # a batch of cotangents (a leading batch axis) gives a batch of cotangents
    batch = RNG.standard_normal((2, 3, 4)).astype(dtype)
    np.testing.assert_allclose(back(batch)[1], p * batch, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [operator.add, operator.sub], ids=lambda op: op.__name__)
@pytest.mark.parametrize("b_shape", [(3, 4), (4,), (3, 1)], ids=str)
def test_add_and_sub_of_arrays(op, b_shape, dtype):
    a = RNG.standard_normal((3, 4)).astype(dtype)
    b = RNG.standard_normal(b_shape).astype(dtype)
    y, back = cr.rrule(op, a, b)
    sign = 1.0 if op is operator.add else -1.0
    for dy, plain in cotangents(y):
        _, da, db = back(dy)
        check(da, plain, a)
        if plain is not None:
            plain = (
                sign * plain.sum(axis=tuple(range(plain.ndim - len(b_shape)))).reshape(b_shape)
                if b_shape == (4,)
                else sign * plain.sum(axis=1, keepdims=True)
                if b_shape == (3, 1)
                else sign * plain
            )
        check(db, plain, b)
    batch = RNG.standard_normal((2, 3, 4)).astype(dtype)
    _, da, db = back(batch)
    np.testing.assert_allclose(cr.unthunk(da), batch, rtol=1e-6)
    assert cr.unthunk(db).shape == (2, *b_shape)


def test_a_cotangent_of_the_output_is_passed_on_without_a_copy():
    a, b = np.ones((2, 3)), np.ones((2, 3))
    dy = np.arange(6.0).reshape(2, 3)
    _, back = cr.rrule(operator.add, a, b)
    _, da, db = back(dy)
    assert da is dy and db is dy
    _, back = cr.rrule(operator.sub, a, b)
    _, da, db = back(dy)
    assert da is dy and isinstance(db, cr.Thunk)  # the negation waits: b may be a constant


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_product_of_real_matrices(dtype):
    a = RNG.standard_normal((3, 4)).astype(dtype)
    b = RNG.standard_normal((4, 2)).astype(dtype)
    y, back = cr.rrule(operator.matmul, a, b)
    for dy, plain in cotangents(y):
        _, da, db = back(dy)
        check(da, None if plain is None else plain @ b.astype(np.float64).T, a)
        check(db, None if plain is None else a.astype(np.float64).T @ plain, b)
    # the cotangents add themselves into an accumulator (a multiply-add), and are values too
    dy = RNG.standard_normal(y.shape).astype(dtype)
    _, da, db = back(dy)
    assert isinstance(da, cr.InplaceableThunk) and isinstance(db, cr.InplaceableThunk)
    acc = np.ones(b.shape, dtype)
    assert cr.iadd(acc, db) is acc
    np.testing.assert_allclose(acc, 1 + a.T @ dy, rtol=1e-5)


@pytest.mark.parametrize(
    "v, shape", [(np.float32(2.0), (2, 3)), (1.5, (4,)), (np.ones((2, 1)), (2, 3)), (np.ones((1, 3)), (2, 3))]
)
def test_broadcast_view_is_broadcast_to(v, shape):
    got, want = broadcast_view(v, shape), np.broadcast_to(v, shape)
    assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
    assert not got.flags.writeable  # a view of one value: writing into it would change every entry
    with pytest.raises(ValueError):
        broadcast_view(np.ones((2, 2)), (2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_spreads_a_scalar_cotangent_of_any_float_type(dtype):
    x = RNG.standard_normal((3, 4)).astype(dtype)
    _, back = cr.rrule(np.sum, x)
    for dy in (2.0, np.float32(2.0), np.float64(2.0), np.array(2.0)):
        dx = back(dy)[1]
        assert dx.dtype == dtype and dx.shape == x.shape and np.all(dx == 2.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f", [np.sum, np.max, np.min, np.ndarray.sum, np.ndarray.max])
@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": (0, 1)}], ids=str)
def test_reductions_of_a_float_array(f, kwargs, dtype):
    x = RNG.permutation(12).reshape(3, 4).astype(dtype)  # no ties: one maximum per slice
    y, back = cr.rrule(f, x, **kwargs)
    want_y = f(x, **kwargs)
    assert type(y) is type(want_y) and np.array_equal(y, want_y)
    xd = x.astype(np.float64)
    if f in (np.sum, np.ndarray.sum):
        spread = np.ones_like(xd)
    else:
        spread = (xd == np.asarray(f(xd, axis=kwargs.get("axis"), keepdims=True))).astype(np.float64)
    for dy, plain in cotangents(np.asarray(y)):
        if plain is not None:
            plain = spread * np.reshape(plain, np.shape(f(xd, axis=kwargs.get("axis"), keepdims=True)))
        check(back(dy)[1], plain, x)
    if not np.shape(y):  # a scalar output takes a number
        for dy in (2.0, np.float32(2.0), np.float64(2.0)):
            check(back(dy)[1], 2.0 * spread, x)


def test_a_tie_shares_the_cotangent_of_a_maximum():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], np.float32)
    _, back = cr.rrule(np.max, x, axis=1)
    np.testing.assert_array_equal(back(np.array([2.0, 4.0], np.float32))[1], [[0, 1, 1], [4, 0, 0]])
