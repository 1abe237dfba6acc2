"""Rules whose forward pushes build or reshape the tangent themselves, under forward mode over
forward mode (a tangent that is itself a dual number): np.diag of a computed vector, and the
scipy.special rules whose batched tangents are lined up with the partials. Checked against the
Hessian by forward over reverse."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import chainrules as cr

X = np.array([0.5, -0.3, 1.2])


def forward_over_forward(f, x):
    return cr.jacobian(lambda z: cr.jacobian(f, z, mode="forward"), x, mode="forward")


CASES = {
    "diag of a computed vector": lambda z: np.sum(np.diag(np.exp(0.5 * z)) ** 2),
    "logit": lambda z: np.sum(sp.logit(sp.expit(z)) ** 2),
    "xlog1py": lambda z: np.sum(sp.xlog1py(z, z * z)),
    "ndtri": lambda z: np.sum(sp.ndtri(sp.expit(z))),
    "boxcox1p": lambda z: np.sum(sp.boxcox1p(z * z, 0.5)),
    "kv": lambda z: np.sum(sp.kv(1.5, z * z + 1.0)),
    "beta": lambda z: np.sum(sp.beta(z * z + 1.0, 2.0)),
    "exp1": lambda z: np.sum(sp.exp1(z * z + 0.5)),
}


@pytest.mark.parametrize("name", CASES)
def test_forward_over_forward_is_the_hessian(name):
    f = CASES[name]
    np.testing.assert_allclose(forward_over_forward(f, X), cr.hessian(f, X), rtol=1e-7, atol=1e-10)


def test_nested_derivatives_through_diag():
    x = np.array([0.1, -0.3, 0.5])

    def f(s):
        return np.sum(np.diag(np.exp(s * x)) ** 2)

    assert cr.derivative(lambda t: cr.derivative(f, t), 1.0) == pytest.approx(np.sum(4 * x**2 * np.exp(2 * x)))
