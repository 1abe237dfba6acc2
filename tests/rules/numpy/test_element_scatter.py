"""The cotangent of ``x[i]`` for an integer ``i`` and a number: an ``ElementScatter``, which must
act exactly as the general scatter thunk does (seed 004's loop of ``X[i]``)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy._arrays import ElementScatter, scatter_thunk
from chainrules.testing import test_rrule


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("index", [0, 3, -1])
@pytest.mark.parametrize("dy", [2.5, np.float64(-1.25)])
def test_element_scatter_matches_the_general_scatter(dtype, index, dy):
    x = np.arange(5.0).astype(dtype)
    fast = scatter_thunk(x, index, dy)
    general = scatter_thunk(x, np.int64(index), dy)  # a NumPy integer takes the general path
    assert type(fast) is ElementScatter and type(general) is cr.InplaceableThunk
    value = fast.unthunk()
    assert value.dtype == general.unthunk().dtype == dtype
    np.testing.assert_array_equal(value, general.unthunk())
    assert fast.unthunk() is value  # a thunk: evaluated once
    acc, ref = np.ones(5, dtype=dtype), np.ones(5, dtype=dtype)
    assert fast.add_into(acc) is acc
    np.testing.assert_array_equal(acc, general.add_into(ref))


def test_element_scatter_is_not_used_for_other_indices_or_cotangents():
    x = np.zeros((2, 3))
    assert type(scatter_thunk(x, 1, np.ones(3))) is cr.InplaceableThunk  # a row: an array cotangent
    assert type(scatter_thunk(np.zeros(3), slice(0, 2), np.ones(2))) is cr.InplaceableThunk
    assert scatter_thunk(np.zeros(3), 1, cr.ZeroTangent()) == cr.ZeroTangent()
    assert scatter_thunk(np.zeros(3, dtype=bool), 1, 1.0) == cr.NoTangent()
    assert type(scatter_thunk(np.arange(3), 1, 1.0)) is cr.InplaceableThunk  # integers: float64 tangent


def test_accumulating_element_scatters_owns_one_array_and_never_writes_a_borrowed_one():
    x = np.arange(4.0)
    first, second, third = (scatter_thunk(x, i, 1.0 + i) for i in (1, 2, 1))
    acc, owned = cr.accumulate(cr.ZeroTangent(), False, first)
    assert acc is first and not owned  # borrowed
    acc, owned = cr.accumulate(acc, owned, second)
    assert owned and type(acc) is np.ndarray
    np.testing.assert_array_equal(acc, [0.0, 2.0, 3.0, 0.0])
    same, owned = cr.accumulate(acc, owned, third)
    assert same is acc and owned
    np.testing.assert_array_equal(acc, [0.0, 4.0, 3.0, 0.0])
    borrowed = np.zeros(4)
    out, owned = cr.accumulate(borrowed, False, first)
    assert out is not borrowed and owned and not borrowed.any()


def test_accumulate_refuses_an_add_into_that_does_not_return_its_accumulator():
    calls = []

    def add_into(acc):
        calls.append(1)
        return acc.copy()

    thunk = cr.InplaceableThunk(add_into, cr.Thunk(lambda: np.ones(2)))
    with pytest.raises(RuntimeError, match="add_into must add into the accumulator"):
        cr.accumulate(np.zeros(2), True, thunk)
    assert len(calls) == 1


def test_getitem_rule_with_an_integer_index_passes_test_rrule():
    test_rrule(operator.getitem, np.array([0.5, -1.0, 2.0]), 1)
    test_rrule(operator.getitem, np.array([0.5, -1.0, 2.0], dtype=np.float32), -1)


def test_tape_gradient_of_a_loop_of_elements():
    def mysum(X):
        total = 0.0
        for i in range(len(X)):
            total += X[i] * X[i]
        return total

    X = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(cr.gradient(mysum, X, engine="tape")[0], 2 * X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("dy", [2.5, np.float64(-1.25), 1.5 - 2.0j, np.array(0.75), cr.ZeroTangent()])
def test_getitem_element_pullback_matches_the_general_index(dtype, dy):
    x = np.arange(1.0, 5.0).astype(dtype)
    y, fast = cr.rrule(operator.getitem, x, 2)
    y_general, general = cr.rrule(operator.getitem, x, np.int64(2))  # a NumPy integer: the general path
    assert y == y_general
    got, want = fast(dy), general(dy)
    assert got[0] == want[0] == cr.NoTangent() and got[2] == want[2] == cr.NoTangent()
    if isinstance(want[1], cr.AbstractZero):
        assert got[1] == want[1]
        return
    value, expected = cr.unthunk(got[1]), cr.unthunk(want[1])
    assert value.dtype == expected.dtype == dtype
    np.testing.assert_array_equal(value, expected)
    acc, ref = np.ones(4, dtype=dtype), np.ones(4, dtype=dtype)
    np.testing.assert_array_equal(cr.iadd(acc, got[1]), cr.iadd(ref, want[1]))


def test_getitem_element_pullback_of_a_row_and_of_integer_arrays():
    x = np.arange(6.0).reshape(2, 3)
    _, back = cr.rrule(operator.getitem, x, 1)
    np.testing.assert_array_equal(cr.unthunk(back(np.ones(3))[1]), [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    _, back = cr.rrule(operator.getitem, np.arange(3), 1)  # integers: the general path, a float64 tangent
    assert cr.unthunk(back(1.0)[1]).dtype == np.float64
    test_rrule(operator.getitem, np.array([0.5, -1.0, 2.0], dtype=np.complex128), 0)


def test_element_scatter_value_is_made_once_and_keeps_the_dtype_of_x():
    x = np.zeros(3, dtype=np.float32)
    t = scatter_thunk(x, -1, np.float64(2.0))
    assert t.val is t.val
    assert t.unthunk().dtype == np.float32
    np.testing.assert_array_equal(t.unthunk(), [0.0, 0.0, 2.0])
    np.testing.assert_array_equal(x, 0.0)  # x is read for its shape and dtype, never written
