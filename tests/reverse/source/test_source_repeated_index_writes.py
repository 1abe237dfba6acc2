"""A write through an integer-array index that repeats a position (``y[[0, 0]] = v``): the position
keeps one element's write (the last, in NumPy), so only that element's value gets the position's
cotangent. The source engine had sent it to every element written there (``y[[0, 0]] = x; return
y[0]`` gave 2.0 for 1.0), in plain writes, ``+=`` and ``*=`` alike. Each case is checked against
central finite differences and forward mode."""

import numpy as np

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.7, -1.3, 2.1, 0.4])


def assert_gradient(f, x):
    """The source engine's gradient of the real-scalar ``f`` at ``x`` equals finite differences and forward mode."""
    (dx,) = cr.gradient(f, x, engine="source")
    crt.assert_approx(np.ravel(dx), crt.fd_jacobian(f, x).ravel(), rtol=1e-7, atol=1e-9)
    crt.assert_approx(np.ravel(dx), np.ravel(cr.jacobian(f, x, mode="forward")), rtol=1e-12, atol=1e-12)


def test_a_number_written_into_a_repeated_position():
    def f(x):
        y = np.zeros(2)
        y[[0, 0]] = x
        return y[0]

    (dx,) = cr.gradient(f, 3.0, engine="source")
    assert dx == 1.0
    assert_gradient(f, 3.0)

    def g(x):
        y = np.zeros(3)
        y[[0, 2, 0]] = x * x
        return y @ np.array([1.0, 10.0, 100.0])

    assert_gradient(g, 1.5)


def test_array_values_with_repeats():
    def f(x):
        y = np.zeros(3)
        y[[0, 0, 1]] = x[:3]
        return np.sum(y)

    (dx,) = cr.gradient(f, X[:3], engine="source")
    crt.assert_approx(dx, np.array([0.0, 1.0, 1.0]))
    assert_gradient(f, X[:3])

    def g(x):
        y = np.ones(4)
        y[[3, 1, 3, 1]] = np.sin(x)
        return np.sum(y**2 * np.arange(1.0, 5.0))

    assert_gradient(g, X)


def test_augmented_add_with_repeats():
    def f(x):
        # each repeated position gets its old value plus the last value written there, once
        y = x * x
        y[[0, 1, 1, 0]] += np.exp(x)
        return np.sum(y**2)

    assert_gradient(f, X)


def test_augmented_multiply_with_repeats():
    def f(x):
        y = x[1:] + 1.0
        y[[1, 1, 2]] *= x[:3]
        return np.sum(y * y)

    assert_gradient(f, X)


def test_two_dimensional_index_with_repeats():
    def element_pairs(x):
        Y = np.outer(x, x)
        Y[[0, 0, 2], [1, 1, 3]] = x[1:] ** 3
        return np.sum(np.tanh(Y))

    def whole_rows(x):
        Y = np.zeros((3, 4))
        Y[[2, 0, 2]] = np.stack([x, 2.0 * x, x**2])
        return np.sum(Y * np.arange(12.0).reshape(3, 4))

    def columns_and_a_mask(x):
        Y = np.outer(x, x)
        Y[:, [3, 3]] = np.stack([x, np.cos(x)], axis=1)
        Y[[1, 1], np.array([False, True, False, False])] = x[2:]
        return np.sum(Y**2)

    for f in (element_pairs, whole_rows, columns_and_a_mask):
        assert_gradient(f, X)


def test_repeats_inside_a_loop():
    def f(x):
        y = np.zeros(3)
        for k in range(2):
            y[[k % 2, k % 2, 2]] = x[k : k + 3] * (k + 1.0)
            y[[0, 0]] += y[[1, 2]] ** 2
        return np.sum(y * x[:3])

    assert_gradient(f, X)


def test_a_write_without_repeats_is_unchanged():
    def f(x):
        y = np.zeros(5)
        y[[4, 0, 2]] = x[1:] ** 2
        y[1:3] = y[3:5] * x[0]
        y[np.array([True, False, False, True, False])] += x[:2]
        return np.sum(y**2)

    assert_gradient(f, X)


def test_negative_indices_alias_positive_ones():
    def f(x):
        y = np.zeros(3)
        y[[0, -3]] = x[:2] ** 2  # -3 is position 0 too: the second write stays
        y[[-1, 2, 1]] += x[1:]
        return np.sum(y * np.array([1.0, 2.0, 3.0]))

    (dx,) = cr.gradient(f, X, engine="source")
    crt.assert_approx(dx[0], 0.0)
    assert_gradient(f, X)


def test_reverse_jacobian_of_a_vector_output():
    def f(x):
        y = np.zeros(3)
        y[[2, 0, 2, 0]] = x * np.arange(1.0, 5.0)
        y[[1, 1]] *= x[:2]
        return y * x[1:]

    J = cr.jacobian(f, X, mode="reverse")
    crt.assert_approx(J, crt.fd_jacobian(f, X), rtol=1e-7, atol=1e-9)
    crt.assert_approx(J, cr.jacobian(f, X, mode="forward"), rtol=1e-12, atol=1e-12)


def test_hessian_through_a_repeated_write():
    def f(x):
        y = np.zeros(3)
        y[[0, 0, 1]] = x[:3] ** 2
        y[[2, 2]] += x[2:] ** 3
        return np.sum(y * x[1:])

    H = cr.hessian(f, X)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.jacobian(f, v, mode="forward"), X), rtol=1e-6, atol=1e-8)
