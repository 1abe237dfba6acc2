"""Hessians on the tape through buffers the function makes with np.zeros_like and writes into:
at a number (a 0-d buffer, written whole) and at an array, against the analytic Hessian and the
source engine."""

import numpy as np
import pytest

import chainrules as cr


def cube_through_a_0d_buffer(x):
    b = np.zeros_like(x)
    b[...] = x * x
    return b * x


def through_a_vector_buffer(x):
    b = np.zeros_like(x)
    b[0] = x[0] * x[1]
    b[1] = x[1] ** 3
    return np.sum(b * x)


@pytest.mark.parametrize("engine", ["tape", "source"])
def test_a_0d_buffer_of_a_number(engine):
    assert cr.hessian(cube_through_a_0d_buffer, 1.5, engine=engine) == pytest.approx(9.0, rel=1e-13)
    assert cr.gradient(cube_through_a_0d_buffer, 1.5, engine=engine)[0] == pytest.approx(6.75, rel=1e-13)


@pytest.mark.parametrize("engine", ["tape", "source"])
def test_a_vector_buffer(engine):
    x = np.array([0.7, 1.3])
    # f = x0^2 x1 + x1^4
    expected = np.array([[2 * x[1], 2 * x[0]], [2 * x[0], 12 * x[1] ** 2]])
    np.testing.assert_allclose(cr.hessian(through_a_vector_buffer, x, engine=engine), expected, rtol=1e-13)
