"""Operations on the values of two engines nested in each other: the inner differentiation handles them.

Inside a tape gradient, ``cr.jacobian(..., mode="forward")`` runs on duals holding the tape's
tracked values; inside a forward-mode derivative, a tape gradient runs on tracked values holding
duals. A value of the outer engine that the inner function captured meets the inner engine's
values in operators, NumPy functions and methods, on either side. Whichever engine is asked first,
the operation is the inner one's (the later ``next_order``), with the outer value a constant it
computes with; the outer engine then records that arithmetic. Checked against finite differences:
the other way round, the outer engine wrapped the inner one's result and read its derivative as zero.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([0.3, -0.7, 1.1])
W = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4]])

# the inner function of v, with W captured from the outer differentiation, on each side of each operation
WITH_CAPTURED = {
    "matmul_left": lambda W, v: np.tanh(W @ v),
    "matmul_right": lambda W, v: np.tanh(v @ W.T),
    "ufunc_left": lambda W, v: np.multiply(W[0], v * v) + np.add(W[1], np.sin(v)),
    "function_left": lambda W, v: np.dot(W, v) ** 2,
    # (a plain array's method converts a dual: finite differences run the NumPy function instead)
    "method_left": lambda W, v: np.tanh(np.dot(W, v) if isinstance(W, np.ndarray) else W.dot(v)) * W.sum(),
    "operators_left": lambda W, v: W[0] * v - W[1] / (v + 2.0) + W[0] ** 2 * v,
    # a constant of the outer engine first
    "constant_result_left": lambda W, v: (np.round(W[0], 1) + v * v) * v + W[1] * v,
    "stacked": lambda W, v: np.stack([W[0], v]) @ v,
}


def loss(W, x, name):
    J = cr.jacobian(lambda v: WITH_CAPTURED[name](W, v), x, mode="forward")
    return np.sum(J**2) + np.sum(J)


@pytest.mark.parametrize("name", WITH_CAPTURED)
def test_tape_over_forward(name):
    dW, dx = cr.gradient(lambda w, x: loss(w, x, name), W, X, engine="tape")
    np.testing.assert_allclose(dW, fd_jacobian(lambda w: loss(w, X, name), W).reshape(W.shape), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, fd_jacobian(lambda z: loss(W, z, name), X).reshape(X.shape), rtol=1e-6, atol=1e-8)


def test_an_outer_array_updated_in_place_with_an_inner_value():
    def in_place(W, v):
        acc = W[0] * 1.0  # the tape's array (a plain one would refuse a dual written into it)
        acc += v
        return acc * v

    def out_of_place(W, v):
        return (W[0] * 1.0 + v) * v

    def loss_of(f):
        return lambda w, x: np.sum(cr.jacobian(lambda v: f(w, v), x, mode="forward") ** 2)

    expected = cr.gradient(loss_of(out_of_place), W, X, engine="tape")
    reference = fd_jacobian(lambda w: loss_of(out_of_place)(w, X), W).reshape(W.shape)
    np.testing.assert_allclose(expected[0], reference, rtol=1e-6, atol=1e-8)
    for got, want in zip(cr.gradient(loss_of(in_place), W, X, engine="tape"), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def captured_outer_gradient(z, name):
    """The gradient in y of a function of y that captured z (a dual, in forward mode's Jacobian)."""
    inner = {
        "multiply_left": lambda y: np.sum(z * np.sin(y)),
        "multiply_right": lambda y: np.sum(np.sin(y) * z),
        "dot_method_left": lambda y: z.dot(np.sin(y)) * np.sum(y),
        "function_left": lambda y: np.dot(z, y * y),
        "constant_left": lambda y: np.sum(np.round(z, 1) + y * y * z),
    }[name]
    return cr.gradient(inner, z, engine="tape")[0]


@pytest.mark.parametrize(
    "name", ["multiply_left", "multiply_right", "dot_method_left", "function_left", "constant_left"]
)
def test_forward_over_tape(name):
    got = cr.jacobian(lambda z: captured_outer_gradient(z, name), X, mode="forward")
    np.testing.assert_allclose(got, fd_jacobian(lambda z: captured_outer_gradient(z, name), X), rtol=1e-6, atol=1e-8)


def test_the_order_is_shared_by_the_engines():
    from chainrules.core.active import next_order
    from chainrules.forward import Tag

    before = next_order()
    assert Tag().order > before
