"""Rules for np.unique and NumPy 2's unique_values, unique_counts, unique_inverse and unique_all: the
values are the entries gathered at their first occurrences, so a value's cotangent goes to its first
occurrence and its tangent is read there; the indices, inverse and counts carry no derivative."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian, test_frule, test_rrule

DISTINCT = np.array([3.0, 1.0, 4.0, 2.0, -1.0, 5.0])  # finite differences keep the values distinct
TIED = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 5.0])
ROWS = np.array([[1.0, 2.0], [0.0, 1.0], [2.0, 3.0]])

FLAGS = {"return_index": True, "return_inverse": True, "return_counts": True}


@pytest.mark.parametrize(
    "x, kwargs",
    [
        (DISTINCT, {}),
        (DISTINCT, FLAGS),
        (DISTINCT.reshape(2, 3) + 1j * np.arange(6.0).reshape(2, 3), {"return_counts": True}),
        (ROWS, {"axis": 0, **FLAGS}),
        (ROWS.T, {"axis": -1, "return_inverse": True}),
    ],
    ids=["values", "all", "complex", "rows", "columns"],
)
def test_unique(x, kwargs):
    test_rrule(np.unique, x, fkwargs=kwargs)
    test_frule(np.unique, x, fkwargs=kwargs)


@pytest.mark.parametrize("f", [np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all])
def test_array_api_unique_functions(f):
    test_rrule(f, DISTINCT.reshape(2, 3))
    test_frule(f, DISTINCT.reshape(2, 3))


def test_ties_go_to_the_first_occurrence():
    y, back = cr.rrule(np.unique, TIED, return_counts=True)
    np.testing.assert_array_equal(y[1], [2, 1, 2, 1])
    dy = cr.Tangent[tuple](np.array([10.0, 20.0, 30.0, 40.0]), cr.NoTangent())
    np.testing.assert_array_equal(cr.unthunk(back(dy)[1]), [30.0, 10.0, 0.0, 20.0, 0.0, 40.0])
    y, dy = cr.frule((cr.NoTangent(), np.arange(6.0)), np.unique_all, TIED)
    np.testing.assert_array_equal(dy.values, [1.0, 3.0, 0.0, 5.0])  # the tangents at indices 1, 3, 0, 5
    assert all(isinstance(getattr(dy, name), cr.NoTangent) for name in ("indices", "inverse_indices", "counts"))
    rows = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0]])
    _, back = cr.rrule(np.unique, rows, axis=0)  # the rows [0, 1] (row 1) and [1, 2] (first row 0)
    np.testing.assert_array_equal(cr.unthunk(back(np.array([[1.0, 2.0], [3.0, 4.0]]))[1]), [[3, 4], [1, 2], [0, 0]])


def test_nans_are_one_value_or_each_their_own():
    x = np.array([np.nan, 1.0, np.nan])
    _, back = cr.rrule(np.unique, x)  # equal_nan=True: one NaN, the first
    np.testing.assert_array_equal(cr.unthunk(back(np.array([10.0, 20.0]))[1]), [20.0, 10.0, 0.0])
    y, back = cr.rrule(np.unique_values, x)  # each NaN a value, in NumPy's (unsorted) order
    np.testing.assert_array_equal(y, np.unique_values(x), strict=True)
    np.testing.assert_array_equal(np.sort(cr.unthunk(back(np.array([10.0, 20.0, 30.0]))[1])), [10.0, 20.0, 30.0])


def weighted_unique_squares(x):
    return np.sum(np.unique(x) ** 2 * np.arange(1.0, 5.0))


def unique_squares(x):
    return np.unique(x) ** 2


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_through_the_engines_and_to_second_order(engine):
    # the derivative of the gather at the first occurrences: what finite differences of the array
    # with its later copies held apart cannot see, so they are checked against the gather itself
    first = np.array([1, 3, 0, 5])

    def gathered(x):
        return np.sum(x[first] ** 2 * np.arange(1.0, 5.0))

    (grad,) = cr.gradient(weighted_unique_squares, TIED, engine=engine)
    np.testing.assert_allclose(grad, fd_jacobian(gathered, TIED)[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cr.jacobian(weighted_unique_squares, TIED, mode="forward"), grad)
    hessian = cr.hessian(weighted_unique_squares, TIED, engine=engine)
    np.testing.assert_allclose(hessian, fd_jacobian(lambda x: cr.gradient(gathered, x)[0], TIED), atol=1e-8)
    J = cr.jacobian(unique_squares, TIED, mode="reverse")
    np.testing.assert_allclose(J, fd_jacobian(lambda x: x[first] ** 2, TIED), atol=1e-10)
