"""Rules for ``scipy.linalg.solve_banded`` and ``solveh_banded``: finite differences in band
storage (the entries SciPy does not read get no cotangent), factorizations shared with the
pullback, the engines and Hessians."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
from chainrules.testing import check_grads, test_frule, test_rrule

from ..numpy.test_linalg import ALL, rng_for


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _banded(rng, lower, upper, n, dtype):
    """Band storage of a diagonally dominant matrix, with junk in the corners SciPy does not read."""
    ab = _random(rng, (lower + upper + 1, n), dtype)
    ab[upper] += 2 * (lower + upper + 1)
    return ab


def _hermitian_banded(rng, k, n, lower, dtype):
    """One triangle of a Hermitian positive definite band (complex diagonals too: SciPy reads them real)."""
    ab = _random(rng, (k + 1, n), dtype) / 2
    ab[0 if lower else k] += 2 * (k + 1)
    return ab


def _dense(ab, lower, upper):
    n = ab.shape[1]
    return np.array([[ab[upper + i - j, j] if -upper <= i - j <= lower else 0 for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("l_and_u", [(1, 1), (2, 0), (0, 2), (1, 2)])
@pytest.mark.parametrize("vector", [True, False])
def test_solve_banded(dtype, l_and_u, vector):
    rng = rng_for("banded", dtype, l_and_u, vector)
    ab = _banded(rng, *l_and_u, 5, dtype)
    b = _random(rng, (5,) if vector else (5, 2), dtype)
    x = cr.rrule(sl.solve_banded, l_and_u, ab, b)[0]
    assert x.dtype == sl.solve_banded(l_and_u, ab, b).dtype
    np.testing.assert_allclose(x, np.linalg.solve(_dense(ab, *l_and_u), b), rtol=1e-4 if dtype is np.float32 else 1e-12)
    test_rrule(sl.solve_banded, l_and_u, ab, b)
    test_frule(sl.solve_banded, l_and_u, ab, b)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("lower", [False, True])
def test_solveh_banded(dtype, k, lower):
    rng = rng_for("hbanded", dtype, k, lower)
    ab = _hermitian_banded(rng, k, 5, lower, dtype)
    b = _random(rng, (5, 2), dtype)
    np.testing.assert_allclose(
        cr.rrule(sl.solveh_banded, ab, b, lower=lower)[0],
        sl.solveh_banded(ab, b, lower=lower),
        rtol=1e-4 if dtype is np.float32 else 1e-12,
    )
    test_rrule(sl.solveh_banded, ab, b, fkwargs={"lower": lower})
    test_frule(sl.solveh_banded, ab, b, fkwargs={"lower": lower})


def test_unread_storage_gets_no_cotangent():
    rng = rng_for("banded-corners")
    ab, b = _banded(rng, 1, 2, 5, np.float64), rng.standard_normal(5)
    _, back = cr.rrule(sl.solve_banded, (1, 2), ab, b)
    dab = back(rng.standard_normal(5))[2]
    # row u + i - j, column j: outside the matrix where i = j + row - u leaves 0..n-1
    assert dab[0, :2].tolist() == [0.0, 0.0] and dab[1, 0] == 0.0 and dab[3, -1] == 0.0
    ab = _hermitian_banded(rng, 2, 5, True, np.complex128)
    _, back = cr.rrule(sl.solveh_banded, ab, np.ones(5, complex), lower=True)
    dab = back(rng.standard_normal(5) + 1j * rng.standard_normal(5))[1]
    assert dab[1, -1] == 0 and np.all(dab[2, -2:] == 0) and not np.any(dab[0].imag)  # the diagonal is read real


def test_the_pullback_reuses_the_band_factorization(monkeypatch):
    import chainrules.rules.scipy.banded as rules

    made = []
    for name in ("_BandLU", "_BandCholesky"):
        cls = getattr(rules, name)
        monkeypatch.setattr(cls, "__init__", lambda self, *a, _init=cls.__init__: made.append(1) or _init(self, *a))
    rng = rng_for("banded-reuse")
    for f, args in (
        (sl.solve_banded, ((1, 1), _banded(rng, 1, 1, 6, np.float64), rng.standard_normal(6))),
        (sl.solveh_banded, (_hermitian_banded(rng, 1, 6, False, np.float64), rng.standard_normal(6))),
    ):
        made.clear()
        x, back = cr.rrule(f, *args)
        back(np.ones(6))
        back(rng.standard_normal(6))
        assert made == [1]


def test_errors():
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        cr.rrule(sl.solve_banded, (1, 1), np.zeros((3, 4)), np.ones(4))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cr.rrule(sl.solveh_banded, np.array([[0.0, 1.0, 1.0], [-1.0, 1.0, 1.0]]), np.ones(3))
    with pytest.raises(ValueError, match="l\\+u\\+1"):
        cr.rrule(sl.solve_banded, (1, 0), np.ones((3, 4)), np.ones(4))
    with pytest.raises(cr.NoRuleError, match="single banded matrix.*stack the results"):
        cr.rrule(sl.solve_banded, (1, 1), np.ones((2, 3, 4)), np.ones(4))


@pytest.mark.parametrize("f", [sl.solve_banded, sl.solveh_banded])
def test_every_engine_to_second_order(f):
    rng = rng_for("banded-engines", f.__name__)
    if f is sl.solve_banded:
        args = ((1, 1), _banded(rng, 1, 1, 4, np.float64), rng.standard_normal((4, 2)))
    else:
        args = (_hermitian_banded(rng, 1, 4, False, np.float64), rng.standard_normal(4))
    performed = check_grads(f, args, order=2)
    assert len(performed) == 6  # order 1 and 2 of reverse[source], reverse[tape] and forward


def test_hessian_through_the_rules_matches_finite_differences_of_the_gradient():
    def f(x):
        return (
            np.sum(sl.solve_banded((1, 1), np.stack([x, 4 + x**2, x]), x**2))
            + np.sum(sl.solveh_banded(np.stack([x, 4 + x**2]), x**2))
            + np.sum(sl.solveh_banded(np.stack([4 + x**2, x]), x**3, lower=True))
        )

    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-5
    fd = np.stack([(cr.gradient(f, x + eps * e)[0] - cr.gradient(f, x - eps * e)[0]) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(cr.hessian(f, x), fd, rtol=1e-7, atol=1e-9)
