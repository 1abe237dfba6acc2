"""Hessians through rules whose own code meets dual numbers: forward mode differentiates the
reverse pass, so a rule runs on its duals and must neither convert them (np.asarray), nor index
a dual number as an array, nor write them into a plain array, nor take a decomposition whose
gauge (eigenvector signs) differs from the one the plain values get. Each Hessian is checked
against finite differences of the gradient."""

import math

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special as sc

import chainrules as cr

C = np.arange(9.0).reshape(3, 3)
STACK = np.array([[[3.2, 0.4], [-0.7, 2.5]]])
RHS = np.array([[0.6], [-1.3]])
X = np.array([0.9, -0.3, 0.5, 0.2, 1.7, -0.8, 0.4, 0.1, -1.1])


def _symmetric(x):
    return x.reshape(3, 3) + x.reshape(3, 3).T


def fd_hessian(f, x, h=1e-5):
    def gradient(v):
        return np.ravel(cr.gradient(f, v)[0])

    flat = np.ravel(x)
    columns = [
        gradient((flat + h * e).reshape(np.shape(x))) - gradient((flat - h * e).reshape(np.shape(x)))
        for e in np.eye(flat.size)
    ]
    return np.array(columns).T / (2 * h)


CASES = {
    # the conversions of np.array and its relatives pass a dual on (np.array copies it)
    "np.asarray": (lambda x: np.sum(np.asarray(x) ** 3), X[:4]),
    "np.array with ndmin": (lambda x: np.sum(np.array(x, ndmin=2) ** 3 * x[0]), X[:4]),
    "np.asanyarray, np.ascontiguousarray": (lambda x: np.sum(np.asanyarray(x) * np.ascontiguousarray(x) ** 2), X[:4]),
    # a norm of one vector is a dual number, not a 0-d array to index
    "vector_norm ord=inf of a 0-d array": (lambda x: np.linalg.vector_norm(x[0], ord=np.inf) ** 3, X[:2]),
    "cond": (lambda x: np.linalg.cond(x[:4].reshape(2, 2)), X[:4]),
    # interpolation in its knots: they are read as the duals they are
    "np.interp in xp": (lambda xp: np.sum(np.interp(np.array([0.3, 0.8]), xp, xp**2) ** 2), np.array([0.0, 0.5, 1.0])),
    # quantiles in q: the weights are built from masks, not written in place
    "quantile in q": (
        lambda q: np.sum(np.quantile(np.array([0.3, -1.0, 2.0, 0.7]) ** 2, q) ** 2),
        np.array([0.3, 0.55]),
    ),
    "percentile in a and q": (lambda x: np.percentile(x[:3], x[3] * 100) * x[0], np.array([0.3, -1.0, 2.0, 0.45])),
    # SciPy's value of a norm comes from SciPy for plain values only
    "scipy.linalg.norm ord=-inf": (lambda x: sla.norm(x[:3], -np.inf) * np.sum(x**2), X[:4]),
    # functions of eigenvectors and singular vectors depend on their signs: the duals get SciPy's
    "scipy.linalg.eigh eigenvectors": (lambda x: np.sum(sla.eigh(_symmetric(x))[1] * C), X),
    "scipy.linalg.svd gesvd": (lambda x: np.sum(sla.svd(x.reshape(3, 3), lapack_driver="gesvd")[2] * C), X),
    "scipy.linalg.eig": (lambda x: np.sum(np.real(sla.eig(_symmetric(x))[1]) * C), X),
    # np.full_like's fill value: NumPy's copyto would convert the dual
    "np.full_like in its fill value": (lambda v: np.sum(np.full_like(np.ones((2, 3)), v) ** 3), X[:3]),
    # a stack of matrices and one matrix of right-hand sides broadcast against it (not a stack of vectors)
    "np.linalg.solve, a stack in a": (lambda a: np.sum(np.linalg.solve(a, RHS) ** 3), STACK),
    "np.linalg.solve, a stack in b": (lambda b: np.sum(np.linalg.solve(STACK, b) ** 3), RHS),
    # logsumexp of a number: its result is a dual number, not a 0-d array to index
    "logsumexp of a number": (lambda x: sc.logsumexp(x[0], b=x[1]) ** 3, np.array([0.4, 0.2])),
    # the standard deviation of one entry is 0 wherever it is: sqrt's infinite slope at 0 is not selected
    "np.std of one entry": (lambda x: np.std(x[:1]) + np.sum(np.std(x.reshape(2, 1), axis=1)), X[:2]),
    # math.log with a base: its twin on dual numbers is log(x) / log(base), not np.log(x, out=base)
    "math.log(x, 2.0)": (lambda x: math.log(x, 2.0) * x, 1.7),
    "math.log(3.0, x)": (lambda x: math.log(3.0, x) * x, 1.7),
    "math.log(x, 2 x)": (lambda x: math.log(x, 2.0 * x) * x, 1.7),
    # math.modf and math.remainder on dual numbers: x - trunc(x), and x - rint(x / y) y
    "math.modf": (lambda x: math.modf(x)[0] ** 2 * x + math.modf(x)[1] * x, 1.7),
    "math.remainder": (lambda x: math.remainder(x, 0.7) * x + math.remainder(3.1, x) ** 2, 1.3),
    "math.frexp": (lambda x: math.frexp(x * x)[0] * x + math.frexp(x)[1] * x, 2.9),
    # math.nextafter's twin on dual numbers is np.nextafter (x moved by one ulp)
    "math.nextafter": (lambda x: math.nextafter(x * x, 5.0) * x + math.nextafter(2.0, x) * x, 1.3),
    # a NumPy scalar's clip with a dual bound: NumPy's scalar method would convert the bound
    "np.generic.clip in its bound": (lambda lo: np.float64(0.2).clip(lo, 0.5) * lo + np.float64(0.9).clip(0, lo), 0.3),
    # partials with a special point: their own derivatives there (sinc''(0) = -pi^2 / 3; the cross
    # term of a ** b at b = 0 is 1 / a), not a constant put in their place
    "np.sinc at 0": (lambda x: np.sum(np.sinc(x) * np.array([1.0, 2.0])), np.array([0.0, 0.3])),
    "a ** b at b = 0": (lambda v: v[0] ** v[1] + np.power(v[0], v[1] * 2.0), np.array([2.0, 0.0])),
    "scipy.special.log_expit at 0": (lambda x: np.sum(sc.log_expit(x) * np.array([1.0, 2.0])), np.array([0.0, 0.4])),
    # a product with zeros: each entry's partial is the product of the others, whose own derivatives
    # in the other entries (zeros included) are not 0
    "np.prod with a zero": (lambda x: np.prod(x) + np.sum(np.prod(x.reshape(2, 2), axis=1)), np.array([0, 2, 3, 0.5])),
    "np.prod with two zeros": (lambda x: np.prod(x * np.array([1.0, 2.0, 1.0])), np.array([0.0, 0.0, 1.5])),
    # SciPy's polygamma converts its argument: on dual numbers its formula from ufuncs
    "scipy.special.polygamma": (lambda x: np.sum(sc.polygamma(np.array([0, 1, 2]), x) * x), np.array([1.3, 0.7, 2.1])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hessian_through_rule_code_matches_finite_differences(name):
    f, x = CASES[name]
    with np.errstate(divide="ignore", invalid="ignore"):  # (sqrt's slope at 0, for the one-entry std)
        hessian = np.asarray(cr.hessian(f, x))
    assert np.all(np.isfinite(hessian))  # (NaN would equal NaN below)
    np.testing.assert_allclose(hessian.reshape(np.size(x), np.size(x)), fd_hessian(f, x), rtol=1e-5, atol=1e-6)


def test_a_running_product_through_a_zero_is_differentiated_once_only():
    # its pullback at a zero entry masks the zero's neighbours: the masks' own derivatives would be
    # dropped, so the second order is refused there rather than wrong
    x = np.array([0.7, 0.0, 2.0])
    assert np.allclose(cr.gradient(lambda v: np.sum(np.cumprod(v)), x)[0], [1.0, 2.1, 0.0])
    with pytest.raises(cr.NoDerivativeError, match=r"running product .* at .*test_nested_rule_code\.py:\d+ takes"):
        cr.hessian(lambda v: np.sum(np.cumprod(v)), x)
    assert np.all(np.isfinite(cr.hessian(lambda v: np.sum(np.cumprod(v)), x + 0.5)))


def test_a_real_input_gets_a_real_hessian_through_complex_constants():
    # the gradient at a dual number with a real value keeps the real part of a complex cotangent,
    # as at a plain float: the Hessian of this linear function is a real zero, not 0j
    z, w = np.array([1 + 2j, 0.5 - 1j, -0.3 + 0.2j]), np.array([0.3, -1.2, 0.7])
    hessian = cr.hessian(lambda s: np.sum(np.real(np.inner(z, s)) * w), -0.476)
    assert type(hessian) is float and hessian == 0.0
    assert cr.hessian(lambda s: np.real(np.sum(np.inner(z, s) ** 2)), -0.476) == pytest.approx(-7.4)
