"""Writes into integer and boolean arrays truncate the value: no derivative passes through them."""

import numpy as np

import chainrules as cr


def counts(y):
    out = np.zeros(2, dtype=int)
    out[0] = 3 * y * y  # 6.75 is stored as 6
    return out[0] * y


def flags(x):
    seen = np.zeros(3, dtype=bool)
    seen[1:] = x[1:] * x[1:]  # nonzero values are stored as True
    return np.sum(np.where(seen, x, 0.0) ** 2)


def test_a_value_written_into_an_integer_buffer_passes_no_derivative():
    assert counts(1.5) == 9.0
    assert cr.gradient(counts, 1.5)[0] == 6.0
    assert cr.hessian(counts, 1.5) == 0.0  # forward over source: the dual buffer truncates too
    source_gradient = lambda y: cr.gradient(counts, y)[0]  # noqa: E731
    second = cr.gradient(source_gradient, 1.5, engine="tape")[0]  # the tape's buffer truncates too
    assert isinstance(second, cr.ZeroTangent) or second == 0.0


def test_the_tape_truncates_a_number_written_into_an_integer_buffer_too():
    # NumPy converts it with int(): piecewise constant, its derivative zero
    assert cr.gradient(counts, 1.5, engine="tape") == cr.gradient(counts, 1.5) == (6.0,)


def test_a_value_written_into_a_boolean_buffer_passes_no_derivative():
    x = np.array([0.5, -2.0, 3.0])
    np.testing.assert_allclose(cr.gradient(flags, x)[0], [0.0, -4.0, 6.0])
