"""Hessians on the tape through buffers the function makes with np.zeros_like and writes into:
at a number (a 0-d buffer, written whole) and at an array, against the analytic Hessian and the
source engine."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian


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


def normalised_in_place(x):
    h = x * 2.0
    h /= 1.0 + h @ h  # the product's value, under a Hessian a dual of a 0-d view: new memory, not h's
    return np.sum(h * x)


def normalised_by_its_norm(x):
    h = x * 2.0
    h /= np.linalg.norm(h)
    return np.sum(h * x**2)


@pytest.mark.parametrize("f", [normalised_in_place, normalised_by_its_norm], ids=lambda f: f.__name__)
def test_an_in_place_update_by_a_reduction_of_the_array_itself_to_second_order(f):
    x = np.array([0.4, -0.3, 0.9, 0.2])
    expected = fd_jacobian(lambda z: cr.gradient(f, z, engine="tape")[0], x)
    np.testing.assert_allclose(cr.hessian(f, x, engine="tape"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(f, x), expected, rtol=1e-6, atol=1e-8)
    by_tape = cr.gradient(lambda z: np.sum(cr.gradient(f, z, engine="tape")[0]), x, engine="tape")[0]
    np.testing.assert_allclose(by_tape, expected.sum(axis=0), rtol=1e-6, atol=1e-8)
