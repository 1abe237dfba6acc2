"""Second derivatives through the factorizations of ``scipy.linalg``: ``cho_factor`` and ``cho_solve``
(a Gaussian process's negative log marginal likelihood), whose factor is a dual array in a
Hessian, and ``lu_factor`` and ``lu_solve``, whose pullback also runs on a tape's tracked arrays
(a tape over the source engine)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([[0.0], [0.4], [1.1], [1.7]])
Y = np.sin(X[:, 0])


def gp_nlml(params, lower=True):
    ell, sf, noise = params[0], params[1], params[2]
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf**2 * np.exp(-0.5 * d2 / ell**2) + noise**2 * np.eye(len(Y))
    c, low = sl.cho_factor(K, lower=lower)
    alpha = sl.cho_solve((c, low), Y)
    return 0.5 * Y @ alpha + np.sum(np.log(np.diag(c)))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_a_gp_likelihood_through_cho_factor_and_cho_solve(lower, engine):
    params = np.array([0.7, 1.2, 0.3])

    def f(p):
        return gp_nlml(p, lower)

    if engine == "tape":  # the tape runs SciPy's Python wrappers, which it refuses: a rule is needed
        with pytest.raises(cr.ChainRulesError, match="cho_factor has a rule that the tape engine cannot use here"):
            cr.hessian(f, params, engine=engine)
        return
    H = cr.hessian(f, params, engine=engine)
    expected = fd_jacobian(lambda p: cr.gradient(f, p)[0], params)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


def lu_solved(a):
    return np.sum(sl.lu_solve(sl.lu_factor(a), np.array([1.0, 2.0, 0.5])) ** 2)


@pytest.mark.parametrize("outer", ["tape", "source", "hessian"])
def test_second_derivative_through_lu_factor_and_lu_solve(outer):
    a = np.array([[1.0, 4.0, 0.5], [3.0, 1.0, 2.0], [0.2, 0.1, 5.0]])  # pivoting rows

    def weighted_slope(z):
        return np.sum(cr.gradient(lu_solved, z)[0] * a)

    expected = fd_jacobian(weighted_slope, a).reshape(a.shape)
    if outer == "hessian":
        got = np.tensordot(a, cr.hessian(lu_solved, a), axes=2)
    else:
        got = cr.gradient(weighted_slope, a, engine=outer)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
