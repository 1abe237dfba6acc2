"""Rules for ``scipy.linalg.toeplitz``, ``circulant``, ``hankel`` and ``block_diag``: finite
differences, stacks SciPy batches, batched pushforwards, the engines and Hessians."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.testing import check_grads, test_frule, test_rrule

from ..numpy.test_linalg import ALL, rng_for, values


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


CASES = {
    "toeplitz-c": (sl.toeplitz, [(4,)]),
    "toeplitz-c-r": (sl.toeplitz, [(3,), (5,)]),
    "toeplitz-stack": (sl.toeplitz, [(2, 3), (4,)]),  # SciPy batches over leading axes, broadcasting r
    "circulant": (sl.circulant, [(4,)]),
    "circulant-stack": (sl.circulant, [(2, 3)]),
    "hankel-c": (sl.hankel, [(3,)]),
    "hankel-c-r": (sl.hankel, [(4,), (2,)]),
    "block_diag": (sl.block_diag, [(2, 2), (3,), (), (1, 2)]),
    "block_diag-stack": (sl.block_diag, [(2, 1, 2), (2,), (2, 2)]),
}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name", CASES)
def test_against_finite_differences(name, dtype):
    f, shapes = CASES[name]
    rng = rng_for("special", name, dtype)
    args = [_random(rng, s, dtype) for s in shapes]
    np.testing.assert_array_equal(cr.rrule(f, *args)[0], f(*args))
    test_rrule(f, *args)
    test_frule(f, *args)


def test_pullbacks_sum_the_diagonals():
    g = np.arange(12.0).reshape(3, 4)
    _, back = cr.rrule(sl.toeplitz, np.zeros(3), np.zeros(4))
    dc, dr = back(g)[1:]
    np.testing.assert_array_equal(dc, [np.trace(g), np.trace(g, -1), np.trace(g, -2)])
    np.testing.assert_array_equal(dr, [0.0, np.trace(g, 1), np.trace(g, 2), np.trace(g, 3)])  # r[0] is not read
    _, back = cr.rrule(sl.hankel, np.zeros(3), np.zeros(4))
    dc, dr = back(g)[1:]
    flipped = g[:, ::-1]  # antidiagonals of g are diagonals of g flipped left to right
    np.testing.assert_array_equal(dc, [np.trace(flipped, k) for k in (3, 2, 1)])
    np.testing.assert_array_equal(dr, [0.0] + [np.trace(flipped, k) for k in (0, -1, -2)])
    _, back = cr.rrule(sl.circulant, np.zeros(3))
    h = np.arange(9.0).reshape(3, 3)
    expected = [np.trace(h), np.trace(h, -1) + h[0, 2], np.trace(h, -2) + np.trace(h, 1)]  # (i - j) mod 3
    np.testing.assert_array_equal(back(h)[1], expected)


def test_toeplitz_of_complex_c_alone_takes_r_as_its_conjugate():
    c = np.array([1.0 + 2.0j, 3.0 - 1.0j, 0.5j])
    test_rrule(sl.toeplitz, c)
    test_frule(sl.toeplitz, c)


def test_r_given_by_keyword_gets_no_cotangent():
    c, r = np.array([1.0, 2.0]), np.array([1.0, 3.0, 4.0])
    for f in (sl.toeplitz, sl.hankel):
        y, back = cr.rrule(f, c, r=r)
        np.testing.assert_array_equal(y, f(c, r))
        assert len(back(np.ones(y.shape))) == 2


def test_hankel_of_arrays_ravels_them_as_scipy_does():
    c = np.arange(4.0).reshape(2, 2)
    with pytest.warns(FutureWarning):
        y = cr.rrule(sl.hankel, c)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        np.testing.assert_array_equal(y, sl.hankel(c))
        test_rrule(sl.hankel, c)
        test_frule(sl.hankel, c)


@pytest.mark.parametrize("name", ["toeplitz-c", "toeplitz-c-r", "toeplitz-stack", "circulant", "block_diag"])
def test_batched_frule_equals_row_by_row(name):
    f, shapes = CASES[name]
    rng = rng_for("special-batched", name)
    args = [rng.standard_normal(s) for s in shapes]
    assert cr.frule.lookup(f, args).batched
    dirs = [rng.standard_normal((3,) + s) for s in shapes]
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args)
    for i in range(3):
        _, dy1 = cr.frule((cr.NoTangent(), *[d[i] for d in dirs]), f, *args)
        np.testing.assert_allclose(values(dy, y)[0][i], values(dy1, y)[0], rtol=1e-14)


@pytest.mark.parametrize("name", ["toeplitz-c-r", "circulant", "hankel-c-r", "block_diag"])
def test_every_engine_to_second_order(name):
    f, shapes = CASES[name]
    rng = rng_for("special-engines", name)
    performed = check_grads(f, tuple(rng.standard_normal(s) for s in shapes), order=2)
    assert len(performed) == 6  # order 1 and 2 of reverse[source], reverse[tape] and forward


def test_hessian_through_the_rules_matches_finite_differences_of_the_gradient():
    weights = np.arange(9.0).reshape(3, 3) / 7 - 0.4

    def f(x):
        return (
            np.sum(weights * sl.toeplitz(x, x**2) ** 3)
            + np.sum(weights * sl.circulant(x) ** 3)
            + np.sum(weights * sl.hankel(x, x[::-1]) ** 3)
            + np.sum(sl.block_diag(np.outer(x, x), x[:2] ** 2) ** 2)
        )

    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-5
    fd = np.stack([(cr.gradient(f, x + eps * e)[0] - cr.gradient(f, x - eps * e)[0]) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(cr.hessian(f, x), fd, rtol=1e-7, atol=1e-8)
