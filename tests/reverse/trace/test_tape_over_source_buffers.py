"""The tape over the source engine through arrays the function fills (``out = np.zeros(n)``, then
``out[i] = v``, ``out[1:] = v``, ``out[mask] = v``): the source engine hands the tape's values a
buffer of the tape (``buffer_holding``) whose writes the tape records. Tape gradients of source
gradients, and Hessians of such functions with ``engine="tape"`` (forward over the tape over the
source engine), against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import ActiveValue

X = np.array([0.3, 0.7, -0.4, 1.1])


def row_writes(x):
    out = np.zeros((3, x.size))
    y = x
    for i in range(3):
        y = y + 0.1 * np.sin(y) * y[::-1]
        out[i] = y
    return np.sum(out**2)


def recurrence(x):
    out = np.zeros(x.size)
    out[0] = 1.0  # a constant first, the tape's values after it
    for i in range(1, x.size):
        out[i] = out[i - 1] * x[i] + np.sin(x[i - 1])
    return np.sum(out**2)


def slices(x):
    out = np.zeros(x.size + 1)
    out[1:] = x * x[0]
    out[:2] = np.exp(x[1:3])
    out[::2] += x[:3] ** 2  # an update of a slice: read, add, write back
    return np.sum(out * out)


def two_d_indices(x):
    out = np.zeros((2, 3))
    out[0, 1] = x[0] * x[1]
    out[1, 2] = x[2] ** 3
    out[1, 0] = np.sin(x[3]) * x[0]
    out[:, 1] += x[1:3]  # a column
    return np.sum(out**2 * np.arange(1.0, 7.0).reshape(2, 3))


def boolean_mask(x):
    out = np.zeros(x.size)
    out[x > 0] = x[x > 0] ** 2
    out[x <= 0] = np.sin(x[x <= 0])
    return np.sum(out * x)


def empty_buffer(x):
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = x[i] ** 2 + (x[i - 1] if i > 0 else 0.0)
    return np.sum(out * x)


def broadcast_write(x):
    out = np.ones((3, x.size))
    out[1:] = x[0] * x  # one row written into two
    return np.sum(out**3)


PROGRAMS = [row_writes, recurrence, slices, two_d_indices, boolean_mask, empty_buffer, broadcast_write]


def _slope_norm(f):
    def slope_norm(z):
        return np.sum(cr.gradient(f, z)[0] ** 2)

    return slope_norm


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_tape_gradient_of_a_source_gradient(f):
    loss = _slope_norm(f)
    got = cr.gradient(loss, X, engine="tape")[0]
    np.testing.assert_allclose(got, crt.fd_jacobian(loss, X).reshape(4), rtol=1e-6, atol=1e-8)
    # and the source engine over itself agrees
    np.testing.assert_allclose(got, cr.gradient(loss, X)[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_tape_hessian_over_a_source_gradient(f):
    # forward mode over the tape over the source engine: the tape's buffers hold dual numbers
    loss = _slope_norm(f)
    H = cr.hessian(loss, X, engine="tape")
    expected = crt.fd_jacobian(lambda z: cr.gradient(loss, z)[0], X).reshape(4, 4)
    assert type(H) is np.ndarray and H.shape == (4, 4)
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-7)


def test_float32_is_kept():
    def products(x):
        out = np.zeros(x.size, dtype=x.dtype)
        for i in range(x.size):
            out[i] = x[i] * x[i - 1]
        return np.sum(out**3)

    loss = _slope_norm(products)
    x32 = X.astype(np.float32)
    got = cr.gradient(loss, x32, engine="tape")[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, cr.gradient(loss, X, engine="tape")[0], rtol=1e-4, atol=1e-4)
    H = cr.hessian(loss, x32, engine="tape")
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, cr.hessian(loss, X, engine="tape"), rtol=1e-3, atol=1e-3)


def test_the_inputs_are_left_as_they_were():
    x = X.copy()
    loss = _slope_norm(slices)
    cr.gradient(loss, x, engine="tape")
    cr.hessian(loss, x, engine="tape")
    np.testing.assert_array_equal(x, X)


def test_a_write_after_a_view_was_taken_is_refused_as_at_first_order():
    def view_then_write(x):
        out = np.zeros((2, x.size))
        row = out[0]
        out[0] = x
        return np.sum(row * x)

    with pytest.raises(cr.UnsupportedSyntaxError, match="writing into `out` after it was"):
        cr.gradient(_slope_norm(view_then_write), X, engine="tape")


def test_a_buffer_shared_with_another_array_refuses_writes_with_the_line():
    # the source engine refuses this in the user's code (above); the tape's buffer refuses it too
    from chainrules.reverse.trace import pullback_full

    def reshape_then_write(x):
        out = x.buffer_holding(np.zeros(4))
        out[0] = x[0]
        flat = out.reshape(2, 2)
        out[1] = x[1]  # the line named
        return np.sum(flat)

    line = reshape_then_write.__code__.co_firstlineno + 4
    with pytest.raises(TypeError, match=rf"after another array came to share its memory.*{__file__}:{line}"):
        pullback_full(reshape_then_write, X)


def test_writes_into_a_tape_buffer_directly():
    # the protocol itself: a buffer of the tape holding a plain array, written row by row and by a
    # mask, is a function of the values written, whose pullback splits the cotangent
    from chainrules.reverse.trace import pullback_full

    def fill(x):
        out = np.zeros((2, 3))
        if isinstance(x, ActiveValue):  # traced (finite differences call it with plain arrays)
            out = x.buffer_holding(out)
        out[0] = x * x[1]
        out[1, x > 0.5] = 2.0 * x[x > 0.5]
        out[:, 0] = out[:, 0] + 1.0  # a part read, then written back
        return out

    x = np.array([0.2, 0.9, 0.6])
    y, back = pullback_full(fill, x)
    np.testing.assert_allclose(y, [[1 + 0.2 * 0.9, 0.81, 0.6 * 0.9], [1.0, 1.8, 1.2]])
    dy = np.arange(1.0, 7.0).reshape(2, 3)
    jacobian = crt.fd_jacobian(fill, x).reshape(6, 3)
    np.testing.assert_allclose(back(dy)[1], dy.reshape(6) @ jacobian, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(dy, np.arange(1.0, 7.0).reshape(2, 3))  # the cotangent is not written into


def test_an_integer_buffer_truncates_and_passes_no_derivative():
    from chainrules.reverse.trace import pullback_full

    def counts(x):
        out = x.buffer_holding(np.zeros(2, dtype=np.int64))
        out[0] = 3.0 * x[0] * x[0]  # truncated to an integer
        return np.sum(out * x)

    x = np.array([1.5, 2.0])
    y, back = pullback_full(counts, x)
    assert y == 6 * 1.5
    np.testing.assert_allclose(back(1.0)[1], [6.0, 0.0])  # d/dx of int(3 x0^2) x0 + 0 x1 away from a jump
