"""Rules for ``scipy.linalg``'s Sylvester and Lyapunov solvers: finite differences in every dtype
SciPy supports, the Schur factors shared by the primal and the pullback, the engines (both reverse
engines, forward mode, forward over reverse) and Hessians through the rules."""

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


def _problem(name, dtype, rng):
    """Arguments of a well-conditioned equation: the eigenvalues keep every sum (or product) away from 0 (1)."""
    a = _random(rng, (3, 3), dtype) / 2 + 2 * np.eye(3, dtype=dtype)
    if name == "sylvester":
        return (a, _random(rng, (2, 2), dtype) / 2 + np.eye(2, dtype=dtype), _random(rng, (3, 2), dtype))
    q = _random(rng, (3, 3), dtype)
    return (a, q) if name == "continuous" else (a / 6, q)


EQUATIONS = {
    "sylvester": (sl.solve_sylvester, {}),
    "continuous": (sl.solve_continuous_lyapunov, {}),
    "discrete": (sl.solve_discrete_lyapunov, {}),
    "discrete-bilinear": (sl.solve_discrete_lyapunov, {"method": "bilinear"}),
}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name", EQUATIONS)
def test_solvers_against_finite_differences(name, dtype):
    f, kwargs = EQUATIONS[name]
    args = _problem(name.split("-")[0], dtype, rng_for("equations", name, dtype))
    y = cr.rrule(f, *args, **kwargs)[0]
    expected = f(*args, **kwargs)
    assert y.dtype == expected.dtype  # float32 kept where SciPy keeps it (not by the discrete solver)
    np.testing.assert_allclose(y, expected, rtol=1e-4 if dtype is np.float32 else 1e-10)
    test_rrule(f, *args, fkwargs=kwargs)
    test_frule(f, *args, fkwargs=kwargs)


def test_mixed_real_and_complex_coefficients():
    rng = rng_for("equations-mixed")
    a, b, q = _problem("sylvester", np.float64, rng)
    a, b = (a + a.T) / 2, (b + b.T) / 2  # real eigenvalues: see the next test for complex ones
    q = q + 1j * rng.standard_normal(q.shape)
    test_rrule(sl.solve_sylvester, a, b, q)
    test_frule(sl.solve_sylvester, a, b, q)
    _, back = cr.rrule(sl.solve_sylvester, a, b, q)
    da, db, dq = back(rng.standard_normal(q.shape) + 1j * rng.standard_normal(q.shape))[1:]
    assert not np.iscomplexobj(da) and not np.iscomplexobj(db) and np.iscomplexobj(dq)


def test_real_coefficients_with_complex_eigenvalues_and_a_complex_right_hand_side():
    # SciPy 1.17 hands the real (quasi-triangular) Schur forms to the complex TRSYL here, which
    # reads them as triangular; the rules solve in the complex Schur form: the equation holds
    rng = rng_for("equations-mixed")
    a, b, q = _problem("sylvester", np.float64, rng)
    assert np.iscomplexobj(np.linalg.eigvals(a)) and np.iscomplexobj(np.linalg.eigvals(b))
    q = q + 1j * rng.standard_normal(q.shape)
    x = cr.rrule(sl.solve_sylvester, a, b, q)[0]
    kron = np.kron(a, np.eye(2)) + np.kron(np.eye(3), b.T)  # A X + X B, rows of X flattened
    np.testing.assert_allclose(x, np.linalg.solve(kron, q.ravel()).reshape(3, 2), rtol=1e-12)
    y = cr.rrule(sl.solve_continuous_lyapunov, a, q @ q.T)[0]
    np.testing.assert_allclose(a @ y + y @ a.T, q @ q.T, atol=1e-12)


def test_the_pullback_reuses_the_primal_schur_forms(monkeypatch):
    import chainrules.rules.scipy.matrix_equations as rules

    calls = []
    original = rules.sl.schur
    monkeypatch.setattr(rules.sl, "schur", lambda *a, **k: calls.append(1) or original(*a, **k))
    rng = rng_for("equations-reuse")
    for name, f, expected in (("sylvester", sl.solve_sylvester, 2), ("continuous", sl.solve_continuous_lyapunov, 1)):
        calls.clear()
        x, back = cr.rrule(f, *_problem(name, np.float64, rng))
        back(np.ones_like(x))
        back(rng.standard_normal(x.shape))
        assert len(calls) == expected  # A's (and B's) Schur form, once


def test_discrete_methods_agree_and_larger_matrices_take_the_bilinear_one():
    rng = rng_for("equations-large")
    a, q = rng.standard_normal((12, 12)) / 8, rng.standard_normal((12, 12))
    g, e = rng.standard_normal((12, 12)), rng.standard_normal((12, 12))
    x, back = cr.rrule(sl.solve_discrete_lyapunov, a, q)  # n >= 10: SciPy's default is 'bilinear'
    np.testing.assert_allclose(x, sl.solve_discrete_lyapunov(a, q), rtol=1e-9, atol=1e-12)
    x2, back2 = cr.rrule(sl.solve_discrete_lyapunov, a, q, method="direct")
    np.testing.assert_allclose(x2, x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(back2(g)[1], back(g)[1], rtol=1e-8, atol=1e-11)
    h = 1e-6
    fd = np.sum(g * (sl.solve_discrete_lyapunov(a + h * e, q) - sl.solve_discrete_lyapunov(a - h * e, q))) / (2 * h)
    assert np.isclose(np.sum(back(g)[1] * e), fd, rtol=1e-6)


def test_empty_equations_and_refused_stacks():
    x, back = cr.rrule(sl.solve_sylvester, np.zeros((0, 0)), np.eye(2), np.zeros((0, 2)))
    assert x.shape == (0, 2)
    assert all(isinstance(t, cr.ZeroTangent) for t in back(np.zeros((0, 2)))[1:])
    with pytest.raises(cr.NoRuleError, match="takes a single matrix.*stack the results"):
        cr.rrule(sl.solve_continuous_lyapunov, np.ones((2, 3, 3)), np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="unknown solver"):
        cr.rrule(sl.solve_discrete_lyapunov, np.eye(2) / 2, np.eye(2), method="schur")


@pytest.mark.parametrize("f", [sl.solve_sylvester, sl.solve_continuous_lyapunov, sl.solve_discrete_lyapunov])
def test_every_engine_to_second_order(f):
    # reverse mode in both engines, forward mode, and forward over reverse (the rules on dual numbers)
    name = {sl.solve_sylvester: "sylvester", sl.solve_continuous_lyapunov: "continuous"}.get(f, "discrete")
    performed = check_grads(f, _problem(name, np.float64, rng_for("equations-engines", name)), order=2)
    assert len(performed) == 6  # order 1 and 2 of reverse[source], reverse[tape] and forward


def test_hessian_through_the_solvers_matches_finite_differences_of_the_gradient():
    base = np.array([[1.0, 0.3, -0.2], [0.1, 0.8, 0.4], [-0.3, 0.2, 1.2]])
    weights = np.arange(9.0).reshape(3, 3) / 7 - 0.4

    def f(x):
        m = base + np.outer(x, x)
        s = m @ m.T + np.eye(3)
        return (
            np.sum(weights[:, :2] * sl.solve_sylvester(m, np.diag([2.0, 1.5]), weights[:, :2] + x[:, None]))
            + np.sum(weights * sl.solve_continuous_lyapunov(m + np.eye(3), s))
            + np.sum(weights * sl.solve_discrete_lyapunov(m / 3, s))
            + np.sum(weights * sl.solve_discrete_lyapunov(m / 3, s, method="bilinear"))
        )

    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-5
    fd = np.stack([(cr.gradient(f, x + eps * e)[0] - cr.gradient(f, x - eps * e)[0]) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(cr.hessian(f, x), fd, rtol=1e-6, atol=1e-8)
