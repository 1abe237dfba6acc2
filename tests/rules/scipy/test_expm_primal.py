"""scipy.linalg.expm's rules give SciPy's own value as the primal, bit for bit (the rule fuzzer found
matrices where the rule's own Padé evaluation differs from SciPy's by ~2000 ulps), and keep the
accurate Fréchet derivative: against scipy.linalg.expm_frechet, finite differences, and a
second derivative (whose dual numbers take the rule's own arithmetic)."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.testing import test_frule, test_rrule


def _shifted(rng, n: int, dtype=np.float64):
    """A matrix like the fuzzer's: entries in (-1, 1) plus 2.5 on the diagonal (degree 13, no squaring)."""
    return (rng.uniform(-1, 1, (n, n)) + 2.5 * np.eye(n)).astype(dtype)


def test_the_primal_is_scipys_value_where_the_two_evaluations_differ():
    from chainrules.rules.scipy.linalg import _Expm

    rng = np.random.default_rng(1)
    matrices = [_shifted(rng, 3) for _ in range(40)]
    own = [np.max(np.abs(_Expm(a).value - sl.expm(a))) / np.max(np.abs(sl.expm(a))) for a in matrices]
    assert max(own) > 200 * np.finfo(np.float64).eps  # the draws where the two evaluations part
    for a in matrices:
        y, _ = cr.rrule(sl.expm, a)
        assert np.array_equal(y, sl.expm(a))
        y, _ = cr.frule((cr.NoTangent(), np.ones_like(a)), sl.expm, a)
        assert np.array_equal(y, sl.expm(a))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("a", ["triangular", "diagonal", "general", "1x1"])
def test_scipys_special_cases_are_its_values(dtype, a):
    rng = np.random.default_rng([3, len(a)])
    # float64 scaled to need squarings, where SciPy treats triangles specially; float32 kept small for
    # finite differences in single precision
    x = _shifted(rng, 1 if a == "1x1" else 3, dtype) * (1 if dtype is np.float32 else 2)
    x = {"triangular": np.triu(x), "diagonal": np.diag(np.diag(x))}.get(a, x)
    y, _ = cr.rrule(sl.expm, x)
    assert np.array_equal(y, sl.expm(x)) and y.dtype == sl.expm(x).dtype
    if dtype is np.complex128:
        return  # (complex derivatives: tests/rules/scipy/test_linalg.py's test_expm)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype is np.float32 else {}
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
