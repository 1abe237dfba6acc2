"""The cotangent of an argument has the argument's form: a 0-d array gets a 0-d array of its
dtype (float for integers), as the tape engine gives, whatever form the rules answered in."""

import numpy as np
import pytest

import chainrules as cr


def square(x):
    return x * x


def scaled_sum(x, s):
    return np.sum(x * s) + s


@pytest.mark.parametrize(
    "x, dtype",
    [(np.array(2.0), np.float64), (np.array(2.0, dtype=np.float32), np.float32), (np.array(2), np.float64)],
)
def test_a_0d_array_argument_gets_a_0d_array_of_its_dtype(x, dtype):
    (dx,) = cr.gradient(square, x)
    assert type(dx) is np.ndarray and dx.shape == () and dx.dtype == dtype and dx == 4.0
    (tape,) = cr.gradient(square, x, engine="tape")
    assert type(tape) is np.ndarray and tape.dtype == dx.dtype


def test_a_0d_array_beside_other_arguments_and_through_pullback():
    dx, ds = cr.gradient(scaled_sum, np.array(3.0), 2.0)
    assert type(dx) is np.ndarray and dx.shape == () and dx == 2.0 and ds == 4.0
    y, back = cr.pullback(square, np.array(3.0))
    (dx,) = back(np.float64(2.0))
    assert type(dx) is np.ndarray and dx == 12.0


def test_an_unused_0d_array_argument_is_a_zero():
    assert cr.gradient(lambda x, s: s * 3.0, np.array(2.0), 1.0) == (cr.ZeroTangent(), 3.0)
