"""Jacobians inside functions that another differentiation differentiates: a reverse-mode Jacobian
under forward mode (the duals of a Hessian-like derivative) or under a tape, and a forward-mode
Jacobian under a tape. The inner Jacobian is built from the outer engine's values (rows stacked,
seeds placed at the outer values), so the outer derivative flows through it."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([1.0, 2.0, -0.5])
W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.3, 0.2, 0.1]])


def field(v):
    return np.array([[1.0, 0.5, 0.0], [0.0, 2.0, 1.0]]) @ v**3 + np.sin(v[0] * v[1])


def weighted_inner_jacobian(inner_mode: str):
    def f(m):
        return np.sum(cr.jacobian(field, m, mode=inner_mode, engine="tape") * W[:2])

    return f


@pytest.mark.parametrize("inner_mode", ["reverse", "forward"])
@pytest.mark.parametrize("outer", ["forward", "tape"])
def test_derivative_of_a_jacobian(inner_mode, outer):
    f = weighted_inner_jacobian(inner_mode)
    expected = fd_jacobian(f, X).reshape(X.shape)
    if outer == "forward":
        got = cr.jacobian(f, X, mode="forward")
    else:
        got = cr.gradient(f, X, engine="tape")[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_reverse_jacobian_by_forward_mode():
    def inner(m):
        return cr.jacobian(field, m, mode="reverse")

    expected = fd_jacobian(inner, X).reshape(2, 3, 3)
    np.testing.assert_allclose(cr.jacobian(inner, X, mode="forward"), expected, rtol=1e-6, atol=1e-8)


def test_tape_gradient_of_a_forward_jacobian_of_an_elementwise_function():
    def f(m):
        J = cr.jacobian(lambda v: v**3 + np.sin(v), m, mode="forward")  # diagonal: a block of the seed
        return np.sum(J * W)

    expected = fd_jacobian(f, X).reshape(X.shape)
    np.testing.assert_allclose(cr.gradient(f, X, engine="tape")[0], expected, rtol=1e-6, atol=1e-8)
