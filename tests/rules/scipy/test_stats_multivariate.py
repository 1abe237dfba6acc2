"""Rules for ``scipy.stats.multivariate_normal``'s ``logpdf`` and ``pdf`` in the points, the mean
and the covariance (a matrix, of which SciPy reads the lower triangle; a diagonal; a number),
against finite differences, through the engines, to second order."""

import numpy as np
import pytest
import scipy.stats as st

import chainrules as cr
from chainrules.testing import nondiff, test_frule, test_rrule

from .test_stats import _fd_gradient, _fd_hessian

MVN = type(st.multivariate_normal)
_rng = np.random.default_rng(11)
_A = _rng.standard_normal((3, 3))
S = _A @ _A.T + 3 * np.eye(3)
X = _rng.standard_normal((4, 3))
M = _rng.standard_normal(3)

CALLS = {
    "samples, full cov": (X, M, S),
    "one point": (X[0], M, S),
    "a lower-triangular cov (SciPy reads that triangle)": (X, M, np.tril(S)),
    "diagonal cov": (X, M, np.array([1.5, 2.0, 0.7])),
    "scalar cov": (X, M, 1.7),
    "one dimension, samples": (np.array([0.3, -0.5]), 0.2, 1.4),
    "one dimension, one number": (0.3, 0.2, 1.4),
    "standard, one dimension": (X[:, 0],),
}


@pytest.mark.parametrize("method", [MVN.logpdf, MVN.pdf], ids=["logpdf", "pdf"])
@pytest.mark.parametrize("name", list(CALLS))
def test_rules(method, name):
    args = CALLS[name]
    test_rrule(method, nondiff(st.multivariate_normal), *args)
    test_frule(method, nondiff(st.multivariate_normal), *args)


def test_engines_with_a_cholesky_parametrized_covariance():
    """Mean and cov by keyword, the covariance built as L L' (symmetric, so both triangles move)."""

    def log_likelihood(p):
        L = np.array([[p[0], 0.0], [p[1], p[2]]])
        return st.multivariate_normal.logpdf(X[:, :2], mean=p[3:5], cov=L @ L.T).sum()

    p = np.array([1.2, 0.3, 0.9, 0.1, -0.2])
    expected = _fd_gradient(log_likelihood, p)
    np.testing.assert_allclose(cr.gradient(log_likelihood, p)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(log_likelihood, p, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    H = cr.hessian(log_likelihood, p)
    H_fd = _fd_hessian(log_likelihood, p)
    np.testing.assert_allclose(H, H_fd, rtol=1e-4, atol=1e-5)


def test_a_singular_covariance_is_refused():
    with pytest.raises(ValueError, match="covariance is singular"):
        cr.gradient(
            lambda m: st.multivariate_normal.logpdf(X[:, :2], m, np.ones((2, 2)), allow_singular=True).sum(), M[:2]
        )


FROZEN = {
    "full cov": lambda p: (
        st.multivariate_normal(mean=p[3:5], cov=np.array([[p[0] ** 2 + 1, p[1]], [p[1], p[2] ** 2 + 1]]))
        .logpdf(X[:, :2])
        .sum()
    ),
    "diagonal cov, pdf": lambda p: st.multivariate_normal(p[3:5], p[:2] ** 2).pdf(X[:, :2]).sum(),
    "scalar cov, points": lambda p: st.multivariate_normal(p[3:5], p[0] ** 2 + 0.5).logpdf(X[:, :2] * p[2]).sum(),
}


@pytest.mark.parametrize("name", list(FROZEN))
def test_frozen_distributions(name):
    """Freezing and the frozen methods are one pair of rules: the frozen object's tangent holds
    the mean's cotangent and the covariance's (in ``cov_object._covariance``), which freezing takes
    back to the form ``cov`` was given in; checked end to end against finite differences."""
    f = FROZEN[name]
    p = np.array([1.2, 0.3, 0.9, 0.1, -0.2])
    np.testing.assert_allclose(cr.gradient(f, p)[0], _fd_gradient(f, p), rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError, match="cannot take dual numbers"):  # SciPy converts what it freezes
        cr.hessian(f, p)
