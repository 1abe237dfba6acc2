"""scipy.linalg.expm's rules compute the exponential with the intermediates their derivative reuses
(Al-Mohy and Higham's scaling and squaring): the value agrees with SciPy's to rounding and with
scipy.linalg.expm_frechet's (the same algorithm) more closely still, where SciPy's own Padé
evaluation lies up to ~2000 ulps away (the rule fuzzer's draws); the derivative is the Fréchet
derivative: against scipy.linalg.expm_frechet, finite differences, and a second derivative."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.testing import test_frule, test_rrule


def _shifted(rng, n: int, dtype=np.float64):
    """A matrix like the fuzzer's: entries in (-1, 1) plus 2.5 on the diagonal (degree 13, no squaring)."""
    return (rng.uniform(-1, 1, (n, n)) + 2.5 * np.eye(n)).astype(dtype)


def test_the_primal_is_the_frechet_algorithms_exponential_and_scipys_to_rounding():
    rng = np.random.default_rng(1)
    eps = np.finfo(np.float64).eps
    for a in [_shifted(rng, 3) for _ in range(40)]:
        y, _ = cr.rrule(sl.expm, a)
        y_forward, _ = cr.frule((cr.NoTangent(), np.ones_like(a)), sl.expm, a)
        assert np.array_equal(y, y_forward)
        scale = np.max(np.abs(y))
        reference = sl.expm_frechet(a, np.zeros_like(a))[0]
        assert np.max(np.abs(y - reference)) <= 64 * eps * scale
        assert np.max(np.abs(y - sl.expm(a))) <= 4096 * eps * scale


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("a", ["triangular", "diagonal", "general", "1x1"])
def test_scipys_special_cases(dtype, a):
    rng = np.random.default_rng([3, len(a)])
    # float64 scaled to need squarings, where SciPy treats triangles specially; float32 kept small for
    # finite differences in single precision
    x = _shifted(rng, 1 if a == "1x1" else 3, dtype) * (1 if dtype is np.float32 else 2)
    x = {"triangular": np.triu(x), "diagonal": np.diag(np.diag(x))}.get(a, x)
    y, _ = cr.rrule(sl.expm, x)
    expected = sl.expm(x)
    assert y.dtype == expected.dtype
    # with squarings the two evaluations part further (~6e-12 of the largest entry here); the
    # rule's stays with expm_frechet's, the same algorithm's
    rtol = 1e-5 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(y, expected, rtol=rtol, atol=rtol * np.max(np.abs(expected)))
    if dtype is np.float64:
        reference = sl.expm_frechet(x, np.zeros_like(x))[0]
        assert np.max(np.abs(y - reference)) <= 64 * np.finfo(np.float64).eps * np.max(np.abs(y))
    if dtype is np.complex128:
        return  # (complex derivatives: tests/rules/scipy/test_linalg.py's test_expm)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype is np.float32 else {"primal_rtol": 1e-10}
    test_rrule(sl.expm, x, **tol)
    test_frule(sl.expm, x, **tol)


def test_derivatives_are_the_frechet_derivative():
    rng = np.random.default_rng(7)
    for _ in range(5):
        a, e = _shifted(rng, 3), rng.standard_normal((3, 3))
        _, dy = cr.frule((cr.NoTangent(), e), sl.expm, a)
        expected = sl.expm_frechet(a, e, compute_expm=False)
        np.testing.assert_allclose(dy, expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())
        _, back = cr.rrule(sl.expm, a)
        expected = sl.expm_frechet(a.T, e, compute_expm=False)
        np.testing.assert_allclose(back(e)[1], expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())


def test_empty_matrix():
    a = np.zeros((0, 0))
    y, back = cr.rrule(sl.expm, a)
    assert y.shape == (0, 0) and isinstance(back(np.zeros((0, 0)))[1], cr.ZeroTangent)


def test_second_derivative_through_the_rule():
    # forward over reverse: the pullback runs on dual numbers, whose value is the rule's own
    rng = np.random.default_rng(11)
    a = _shifted(rng, 2) / 3

    def total(x):
        return np.sum(sl.expm(x))

    hessian = np.asarray(cr.hessian(total, a)).reshape(4, 4)
    h = 1e-5
    expected = np.zeros((4, 4))
    for j in range(4):
        step = np.zeros(4)
        step[j] = h
        up = cr.gradient(total, a + step.reshape(2, 2))[0]
        down = cr.gradient(total, a - step.reshape(2, 2))[0]
        expected[:, j] = ((up - down) / (2 * h)).ravel()
    np.testing.assert_allclose(hessian, expected, rtol=1e-6, atol=1e-8)
