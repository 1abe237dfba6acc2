"""``cr.pullback`` and its ``back`` inside a gradient that another engine differentiates.

The inner gradient is of a function that linearizes a residual (``r, back = cr.pullback(...)``)
and pulls a cotangent back through it: a fixed one (a vector-Jacobian product) or the residual
itself (a Gauss-Newton step Jᵀ r). The outer derivative of that gradient needs the dependence of
``back`` on the point it was linearized at; checked against finite differences of the inner
gradient for every nesting of the engines. The tape over the source engine had lost it: it ran the
rule of ``pullback`` on plain values, so ``back`` was a constant to the tape (a zero derivative,
or half of it where the cotangent was the residual).
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

T = np.array([0.5, 1.0, 2.0])
DATA = np.array([0.3, 0.2, 0.1])
THETA = np.array([0.9, 0.8])
C = np.array([1.0, 2.0, -0.5])
W = np.array([1.0, -0.5])


def residual(theta):
    return theta[0] * np.exp(-theta[1] * T) - DATA


def vjp_sum(theta):
    """sum(J(theta)ᵀ c)."""
    _, back = cr.pullback(residual, theta)
    return np.sum(back(C)[0])


def gauss_newton(theta):
    """⟨w, J(theta)ᵀ r(theta)⟩: the cotangent is the pullback's own output."""
    r, back = cr.pullback(residual, theta)
    return np.sum(W * back(r)[0])


def inner_gradient(f, inner: str):
    return lambda z: cr.gradient(f, z, engine=inner)[0]


def outer_jacobian(g, outer: str, x):
    if outer == "forward":
        return cr.jacobian(g, x, mode="forward")
    return cr.jacobian(g, x, mode="reverse", engine=outer)


def test_tape_over_source_slope_of_a_vector_jacobian_product():
    def slope(z):  # d vjp_sum / d theta_0: a function of theta_1 alone
        return cr.gradient(vjp_sum, z)[0][0]

    (got,) = cr.gradient(slope, THETA, engine="tape")
    np.testing.assert_allclose(got, fd_jacobian(slope, THETA).reshape(THETA.shape), rtol=1e-7, atol=1e-9)
    assert abs(got[1]) > 0.1


def test_tape_over_source_gauss_newton_step():
    def step_along_w(z):
        return np.sum(W * cr.gradient(gauss_newton, z)[0])

    (got,) = cr.gradient(step_along_w, THETA, engine="tape")
    np.testing.assert_allclose(got, fd_jacobian(step_along_w, THETA).reshape(THETA.shape), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("f", [vjp_sum, gauss_newton], ids=lambda f: f.__name__)
@pytest.mark.parametrize("inner", ["source", "tape"])
@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_every_nesting_agrees_with_finite_differences(f, inner, outer):
    g = inner_gradient(f, inner)
    np.testing.assert_allclose(outer_jacobian(g, outer, THETA), fd_jacobian(g, THETA), rtol=1e-7, atol=1e-9)
