"""Second derivatives through arrays the function fills: ``out = np.zeros(n)`` then ``out[i] = v``
or ``acc += v``, under forward over the source engine (``cr.hessian``), a source gradient of a
source gradient, and a tape gradient of a source gradient where the tape can follow it."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.3, 0.7, -0.4, 1.1])


def euler_rows(x):
    out = np.zeros((5, x.size))
    y = x
    for i in range(5):
        y = y + 0.1 * np.sin(y) * y[::-1]
        out[i] = y
    return np.sum(out**2)


def recurrence(x):
    out = np.zeros(x.size)
    out[0] = 1.0  # a constant first, duals after it
    for i in range(1, x.size):
        out[i] = out[i - 1] * x[i] + np.sin(x[i - 1])
    return np.sum(out**2)


def slices_and_updates(x):
    out = np.zeros((3, 4))
    out[0, 1:3] = x[:2] * x[2]
    out[1] += x[1] * x
    out[2, 0] = x[3] ** 3
    out[:, 3] = np.exp(x[:3])
    return np.sum(out * out)


def accumulates(x):
    acc = np.zeros(4)
    for i in range(1, 4):
        acc += x * i * x[0]
    acc *= x[1]
    return np.sum(acc**2)


def empty_buffer(x):
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = x[i] ** 2 + (x[i - 1] if i > 0 else 0.0)
    return np.sum(out * x)


PROGRAMS = [euler_rows, recurrence, slices_and_updates, accumulates, empty_buffer]
TAPE_FOLLOWS = PROGRAMS  # an update rebinds; a write goes into the tape's buffer (ActiveValue.buffer_holding)


def _hessian_by_differences(f, x):
    return crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(x.size, x.size)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian_through_a_filled_buffer(f):
    H = cr.hessian(f, X)
    assert type(H) is np.ndarray and H.shape == (4, 4)
    np.testing.assert_allclose(H, _hessian_by_differences(f, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_source_gradient_of_a_source_gradient_through_a_filled_buffer(f):
    def slope_norm(z):
        return np.sum(cr.gradient(f, z)[0] ** 2)

    got = cr.gradient(slope_norm, X)[0]
    np.testing.assert_allclose(got, crt.fd_jacobian(slope_norm, X).reshape(4), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", TAPE_FOLLOWS, ids=lambda f: f.__name__)
def test_tape_gradient_of_a_source_gradient_through_an_updated_buffer(f):
    def slope_sum(z):
        return np.sum(cr.gradient(f, z)[0])

    got = cr.gradient(slope_sum, X, engine="tape")[0]
    np.testing.assert_allclose(got, crt.fd_jacobian(slope_sum, X).reshape(4), rtol=1e-6, atol=1e-8)


def test_a_float32_buffer_keeps_float32():
    def products(x):
        out = np.zeros(x.size, dtype=x.dtype)
        for i in range(x.size):
            out[i] = x[i] * x[i - 1]
        return np.sum(out**2)

    x = X.astype(np.float32)
    H = cr.hessian(products, x)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, cr.hessian(products, X), rtol=1e-5, atol=1e-5)


def test_the_inputs_are_left_as_they_were():
    x = X.copy()
    cr.hessian(recurrence, x)
    np.testing.assert_array_equal(x, X)


def test_a_write_after_a_view_was_taken_is_refused_as_at_first_order():
    def view_then_write(x):
        out = np.zeros((2, x.size))
        row = out[0]
        out[0] = x
        return np.sum(row * x)

    for differentiate in (cr.gradient, cr.hessian):
        with pytest.raises(cr.UnsupportedSyntaxError, match="writing into `out` after it was"):
            differentiate(view_then_write, X)


def test_an_update_that_would_change_the_buffers_dtype_is_refused_as_at_first_order():
    def widens(x):
        acc = np.zeros(4, dtype=np.float32)
        acc += x
        return np.sum(acc**2)

    for differentiate in (cr.gradient, cr.hessian):
        with pytest.raises(cr.UnsupportedSyntaxError, match="augmented assignment"):
            differentiate(widens, X)


def test_a_third_derivative_through_a_filled_buffer_is_refused_with_the_line():
    line = recurrence.__code__.co_firstlineno + 4
    with pytest.raises(TypeError, match=rf"dual number at {__file__}:{line}"):
        cr.jacobian(lambda x: cr.hessian(recurrence, x)[0], X, mode="forward")


def zero_dimensional_buffer(x):
    b = np.zeros_like(x[0])  # a 0-d array, written whole
    b[...] = x[1] * x[0]
    return b * x[1]


def test_a_zero_dimensional_buffer_to_second_order():
    """In a Hessian the buffer is forward mode's 0-d array: its write is followed (it had been
    refused), and the pullback copies the written element before clearing it (a 0-d view)."""
    x = np.array([2.0, 3.0])
    np.testing.assert_allclose(cr.gradient(zero_dimensional_buffer, x)[0], [x[1] ** 2, 2 * x[0] * x[1]])
    np.testing.assert_allclose(cr.hessian(zero_dimensional_buffer, x), [[0.0, 2 * x[1]], [2 * x[1], 2 * x[0]]])
