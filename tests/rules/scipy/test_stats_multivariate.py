"""Rules for ``scipy.stats.multivariate_normal``'s ``logpdf`` and ``pdf`` in the points, the mean
and the covariance (a matrix, of which SciPy reads the lower triangle; a diagonal; a number),
against finite differences, through the engines, to second order."""

import numpy as np
import pytest
import scipy.stats as st

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

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
    message = r"multivariate_normal at .*test_stats_multivariate\.py:\d+: the covariance is singular"
    with pytest.raises(cr.NoDerivativeError, match=message):
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
    expected = _fd_gradient(f, p)
    np.testing.assert_allclose(cr.gradient(f, p)[0], expected, rtol=1e-6, atol=1e-8)
    # SciPy converts what it freezes: dual numbers (forward mode, a Hessian) are frozen on their
    # values, then put back into the frozen object's mean and covariance
    forward = cr.jacobian(f, p, mode="forward")
    assert type(forward) is np.ndarray
    np.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, p, mode="forward", chunk_size=2), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(f, p), _fd_hessian(f, p), rtol=1e-4, atol=1e-5)


FROZEN_IN_FORWARD_MODE = {
    "mean": (lambda mu: st.multivariate_normal(mu, np.eye(2)).logpdf(np.zeros(2)), np.array([0.1, 0.2])),
    "mean and point": (lambda mu: st.multivariate_normal(mu, S[:2, :2]).logpdf(0.5 * mu + 1), np.array([0.1, 0.2])),
    "scalar cov, pdf": (lambda c: st.multivariate_normal(np.zeros(2), c).pdf(X[0, :2]), 1.3),
    "diagonal cov by keyword": (
        lambda c: st.multivariate_normal(cov=c, mean=M[:2]).logpdf(X[:, :2]),
        np.array([1.3, 0.7]),
    ),
    "one dimension": (lambda p: st.multivariate_normal(p[0], p[1]).logpdf(0.3 * p[0]), np.array([0.3, 1.2])),
}


@pytest.mark.parametrize("name", list(FROZEN_IN_FORWARD_MODE))
def test_frozen_distributions_in_forward_mode(name):
    """Forward mode had refused to freeze dual numbers, with a message about a Hessian."""
    f, x = FROZEN_IN_FORWARD_MODE[name]
    expected = np.reshape(fd_jacobian(f, x), np.shape(f(x)) + np.shape(x))
    dx = np.ones_like(x)
    y, dy = cr.jvp(f, (x,), (dx,))
    np.testing.assert_allclose(y, f(x), rtol=1e-12)
    np.testing.assert_allclose(dy, expected @ dx if np.ndim(x) else expected * dx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="reverse"), expected, rtol=1e-6, atol=1e-8)


def test_hessian_of_the_density_at_one_point():
    """The pdf at one point is a number: in a Hessian its pullback weights a dual number (it had
    been indexed as an array)."""

    def f(p):
        return st.multivariate_normal.pdf(X[0, :2], p[:2], p[2] ** 2 + 0.5) + st.multivariate_normal(p[:2], p[2]).pdf(
            X[1, :2]
        )

    p = np.array([0.1, -0.2, 1.3])
    np.testing.assert_allclose(cr.hessian(f, p), _fd_hessian(f, p), rtol=1e-4, atol=1e-6)
