"""``scipy.optimize.minimize`` and ``minimize_scalar``: the optimum differentiated as the root of
the gradient (implicit differentiation with the Hessian), and the optimal value as the function
at the optimum; checked against closed forms, finite differences, forward against reverse mode,
to second order; what it cannot differentiate is refused, naming the line."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

import chainrules as cr
import chainrules.testing as crt

A = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
B = np.array([1.0, 1.0, 2.0])


def ridge_solution(lam):
    """argmin_x |A x - B|² + lam |x|², in closed form."""
    return np.linalg.solve(A.T @ A + lam * np.eye(2), A.T @ B)


def ridge_derivative(lam):
    M = np.linalg.inv(A.T @ A + lam * np.eye(2))
    return -M @ ridge_solution(lam)


def ridge_loss(x, lam):
    return np.sum((A @ x - B) ** 2) + lam * np.sum(x**2)


def ridge_loss_and_gradient(x, lam):
    r = A @ x - B
    return np.sum(r**2) + lam * np.sum(x**2), 2 * A.T @ r + 2 * lam * x


TIGHT = {"tol": 1e-12}


@pytest.mark.parametrize(
    "how",
    [
        {"method": "BFGS"},
        {"method": "L-BFGS-B", "bounds": [(-10, 10), (None, 5.0)]},  # bounds that do not hold at the optimum
        {"method": "Newton-CG", "jac": True, "fun": ridge_loss_and_gradient},
        {"method": "CG", "jac": lambda x, lam: ridge_loss_and_gradient(x, lam)[1], "tol": 1e-6},
    ],
    ids=["BFGS", "L-BFGS-B", "Newton-CG-jac-True", "CG-jac"],
)
def test_minimize_optimum_in_args_every_mode(how):
    how = dict(how)
    fun = how.pop("fun", ridge_loss)

    def optimum(lam):
        return so.minimize(fun, np.zeros(2), args=(lam,), **{**TIGHT, **how}).x

    lam = 0.5
    assert np.allclose(optimum(lam), ridge_solution(lam), atol=1e-6)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(optimum, lam, mode=mode), ridge_derivative(lam), rtol=1e-5, atol=1e-7)


def test_minimize_optimum_and_value_through_a_closure():
    def value(lam):
        return so.minimize(lambda x: ridge_loss(x, lam), np.zeros(2), **TIGHT).fun

    def norm_of_optimum(lam):
        return np.sum(so.minimize(lambda x: ridge_loss(x, lam), np.zeros(2), **TIGHT).x ** 2)

    lam = 0.7
    x = ridge_solution(lam)
    assert cr.gradient(value, lam)[0] == pytest.approx(np.sum(x**2), rel=1e-6)  # the envelope theorem
    assert cr.gradient(norm_of_optimum, lam)[0] == pytest.approx(2 * x @ ridge_derivative(lam), rel=1e-5)
    assert cr.derivative(norm_of_optimum, lam) == pytest.approx(2 * x @ ridge_derivative(lam), rel=1e-5)


def test_minimize_hessian_against_finite_differences_of_the_gradient():
    def f(lam):
        return np.sum(so.minimize(ridge_loss, np.zeros(2), args=(lam,), **TIGHT).x ** 2)

    def closed_form(lam):
        return np.sum(ridge_solution(lam) ** 2)

    lam, h = 0.5, 1e-4
    second = (closed_form(lam + h) - 2 * closed_form(lam) + closed_form(lam - h)) / h**2
    assert cr.hessian(f, lam) == pytest.approx(second, rel=1e-5)


def quartic(x, c):
    return (x - c) ** 2 + x**4


cr.scalar_rule(quartic, lambda x, c: 2 * (x - c) + 4 * x**3, lambda x, c: -2 * (x - c))


def quartic_minimum(c):
    """The minimum of quartic, the real root of its derivative 2 (x - c) + 4 x³ (to machine precision)."""
    roots = np.roots([4.0, 0.0, 2.0, -2.0 * c])
    return float(np.real(roots[np.argmin(np.abs(np.imag(roots)))]))


def quartic_derivative(c):
    """dx/dc at the minimum of quartic: 1 / (1 + 6 x²)."""
    return 1 / (1 + 6 * quartic_minimum(c) ** 2)


def quartic_second_derivative(c):
    """d²x/dc² at the minimum of quartic: -12 x / (1 + 6 x²)³."""
    x = quartic_minimum(c)
    return -12 * x / (1 + 6 * x**2) ** 3


def test_minimize_scalar_against_the_closed_form_and_finite_differences():
    crt.test_rrule(so.minimize_scalar, crt.nondiff(quartic), None, None, (1.0,), rtol=1e-4, atol=1e-6)

    def by_closure(c):
        return so.minimize_scalar(lambda x: (x - c) ** 2 + x**4).x

    def bounded(c):
        return so.minimize_scalar(quartic, bounds=(-3.0, 3.0), args=(c,), method="bounded", options={"xatol": 1e-12}).x

    for f in (by_closure, bounded):
        assert cr.gradient(f, 1.0)[0] == pytest.approx(quartic_derivative(1.0), rel=1e-6)
        assert cr.derivative(f, 1.0) == pytest.approx(quartic_derivative(1.0), rel=1e-6)
    second = quartic_second_derivative(1.0)
    assert cr.derivative(lambda c: cr.derivative(by_closure, c), 1.0) == pytest.approx(second, rel=1e-6)
    assert cr.hessian(bounded, 1.0) == pytest.approx(second, rel=1e-6)


def test_refusals_name_the_solver_and_the_line():
    def constrained(lam):
        cons = {"type": "eq", "fun": lambda x: x[0] - x[1]}
        return so.minimize(ridge_loss, np.zeros(2), args=(lam,), constraints=cons).x

    with pytest.raises(cr.ChainRulesError, match=r"scipy.optimize.minimize at .*test_minimizers.py:\d+: constraints"):
        cr.jacobian(constrained, 0.5, mode="reverse")

    def unfinished(lam):
        return so.minimize(ridge_loss, np.array([5.0, -5.0]), args=(lam,), options={"maxiter": 1}).x

    for mode in ("reverse", "forward"):  # (forward mode: at once, rather than a zero tangent)
        with pytest.raises(cr.ChainRulesError, match="did not converge"):
            cr.jacobian(unfinished, 0.5, mode=mode)

    def gradient_field(lam):
        return np.sum(so.minimize(ridge_loss, np.zeros(2), args=(lam,)).jac)

    with pytest.raises(cr.ChainRulesError, match="the result's 'jac' is not differentiated"):
        cr.gradient(gradient_field, 0.5)


def test_inputs_are_not_mutated_and_the_primal_is_scipys():
    start = np.zeros(2)
    result, _ = cr.pullback(lambda lam: so.minimize(ridge_loss, start, args=(lam,)).x, 0.5)
    np.testing.assert_array_equal(result, so.minimize(ridge_loss, np.zeros(2), args=(0.5,)).x)
    np.testing.assert_array_equal(start, np.zeros(2))


def test_an_entry_held_by_a_bound_stays_the_others_move():
    def at_a_bound(lam):  # the unconstrained optimum has x[1] < 0: the bound x[1] >= 0 holds it at 0
        return so.minimize(ridge_loss, np.zeros(2), args=(lam,), bounds=[(None, None), (0.0, None)], tol=1e-12).x

    lam, a0 = 0.5, A[:, 0]
    x = at_a_bound(lam)
    assert x[1] == 0.0 and x[0] == pytest.approx(a0 @ B / (a0 @ a0 + lam), rel=1e-6)
    expected = [-(a0 @ B) / (a0 @ a0 + lam) ** 2, 0.0]  # x[0] = a0·B / (a0·a0 + lam), x[1] = 0
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(at_a_bound, lam, mode=mode), expected, rtol=1e-5, atol=1e-9)

    def clipped(c):  # argmin over [0, 1] of (x - c)^2: c inside, then the bound 1
        return so.minimize_scalar(lambda x: (x - c) ** 2, bounds=(0.0, 1.0), method="bounded").x

    assert cr.gradient(clipped, 0.4)[0] == pytest.approx(1.0, rel=1e-6)
    assert clipped(1.4) == pytest.approx(1.0, abs=1e-4)  # (the bounded method stops near the bound, not on it)
    assert cr.gradient(clipped, 1.4)[0] == 0.0
    assert cr.derivative(clipped, 1.4) == 0.0


def test_an_interior_optimum_within_the_tolerance_of_a_bound_is_not_held_by_it():
    def argmin(c):  # interior optimum x* = c(1 - ...) a few xatol from the bound 0: dx*/dc ≈ 1
        return so.minimize_scalar(lambda x: (x - c) ** 2 + 0.1 * x**3, bounds=(0.0, 1.0), method="bounded").x

    c, h = 5e-5, 1e-7
    assert argmin(c) == pytest.approx(c, rel=1e-2)
    slope = (argmin(c + h) - argmin(c - h)) / (2 * h)
    assert cr.gradient(argmin, c)[0] == pytest.approx(slope, rel=1e-3)
    assert cr.derivative(argmin, c) == pytest.approx(slope, rel=1e-3)
    assert cr.gradient(argmin, -1e-3)[0] == 0.0  # beyond the bound: the bound holds it



T = np.linspace(0.0, 3.0, 7)
Y = np.exp(-0.7 * T) + 0.05 * np.sin(5 * T)  # not an exact fit: the residuals' second derivatives count


def decay_residuals(p, y):
    return p[1] * np.exp(-p[0] * T) - y


def fitted(y, start=(0.5, 1.0), **settings):
    tight = {"xtol": 1e-14, "ftol": 1e-14, "gtol": 1e-14}
    return so.least_squares(decay_residuals, np.array(start), args=(y,), **tight, **settings)


def polished(y, sigma=1.0, t=T):
    """The least-squares optimum of the misfit (p[1] exp(-p[0] t) - y) / sigma to machine precision:
    Newton's method on the gradient of ½|r|², with exact first and second derivatives of the
    residuals (the reference for finite differences, as a solver's own stopping point is looser)."""
    p = so.least_squares(lambda p: (p[1] * np.exp(-p[0] * t) - y) / sigma, np.array([0.5, 1.0]), method="lm").x
    for _ in range(20):
        e = np.exp(-p[0] * t) / sigma
        r = p[1] * e - y / sigma
        J = np.stack([-p[1] * t * e, e], axis=1)
        mixed = np.sum(r * -t * e)
        H = J.T @ J + np.array([[np.sum(r * p[1] * t**2 * e), mixed], [mixed, 0.0]])
        p = p - np.linalg.solve(H, J.T @ r)
    return p


def test_least_squares_optimum_cost_and_residuals_against_finite_differences():
    h = 1e-5
    references = {
        "x": polished,
        "cost": lambda y: np.atleast_1d(0.5 * np.sum(decay_residuals(polished(y), y) ** 2)),
        "fun": lambda y: decay_residuals(polished(y), y),
    }
    for field, reference in references.items():
        expected = np.array([(reference(Y + h * e) - reference(Y - h * e)) / (2 * h) for e in np.eye(Y.size)]).T

        def f(y, field=field):
            return np.atleast_1d(getattr(fitted(y), field))

        for mode in ("reverse", "forward"):
            np.testing.assert_allclose(cr.jacobian(f, Y, mode=mode), expected, rtol=1e-6, atol=1e-8)


def test_least_squares_closure_bounds_and_refusals():
    def by_closure(y):
        return so.least_squares(lambda p: p[1] * np.exp(-p[0] * T) - y, np.array([0.5, 1.0]), xtol=1e-14,
                                ftol=1e-14, gtol=1e-14).x

    np.testing.assert_allclose(cr.jacobian(by_closure, Y), cr.jacobian(lambda y: fitted(y).x, Y), rtol=1e-8, atol=1e-10)

    def capped(y):  # the amplitude held at its bound 0.9: only the rate moves, along its own equation
        return fitted(y, start=(0.5, 0.5), bounds=([0.0, 0.0], [np.inf, 0.9])).x

    assert fitted(Y, start=(0.5, 0.5), bounds=([0.0, 0.0], [np.inf, 0.9])).active_mask.tolist() == [0, 1]
    J = cr.jacobian(capped, Y)
    np.testing.assert_allclose(J[1], 0.0)

    def rate(y):  # the rate alone with the amplitude fixed at 0.9, polished by Newton's method
        k = capped(y)[0]
        for _ in range(20):
            e = np.exp(-k * T)
            r, dr, d2r = 0.9 * e - y, -0.9 * T * e, 0.9 * T**2 * e
            k = k - np.sum(r * dr) / np.sum(dr * dr + r * d2r)
        return k

    h = 1e-5
    fd = np.array([(rate(Y + h * e) - rate(Y - h * e)) / (2 * h) for e in np.eye(Y.size)])
    np.testing.assert_allclose(J[0], fd, rtol=1e-6, atol=1e-8)

    with pytest.raises(cr.NoDerivativeError, match=r"least_squares at .*test_minimizers.py:\d+: loss='soft_l1'"):
        cr.jacobian(lambda y: fitted(y, loss="soft_l1").x, Y, mode="reverse")


def decay_model(t, k, a):
    return a * np.exp(-k * t)


def test_curve_fit_parameters_in_the_data_the_weights_and_the_model():
    def fit(y, sigma=None, t=T):
        tight = {"xtol": 1e-14, "ftol": 1e-14, "gtol": 1e-14}
        return so.curve_fit(decay_model, t, y, p0=[0.5, 1.0], sigma=sigma, **tight)[0]

    h = 1e-5
    expected = np.array([(polished(Y + h * e) - polished(Y - h * e)) / (2 * h) for e in np.eye(Y.size)]).T
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(fit, Y, mode=mode), expected, rtol=1e-6, atol=1e-8)

    sigma = np.linspace(0.5, 1.5, Y.size)
    d_y, d_sigma, d_t = cr.gradient(lambda y, s, t: fit(y, s, t)[0], Y, sigma, T)
    moves = {
        "y": (d_y, lambda e: polished(Y + e, sigma)),
        "sigma": (d_sigma, lambda e: polished(Y, sigma + e)),
        "t": (d_t, lambda e: polished(Y, sigma, T + e)),
    }
    for got, moved in moves.values():
        fd = np.array([(moved(h * e)[0] - moved(-h * e)[0]) / (2 * h) for e in np.eye(Y.size)])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)

    def by_closure(scale):  # the model closes over what is differentiated
        return so.curve_fit(lambda t, k, a: scale * a * np.exp(-k * t), T, Y, p0=[0.5, 1.0])[0]

    np.testing.assert_allclose(cr.jacobian(by_closure, 2.0), [0.0, -polished(Y)[1] / 4.0], atol=1e-6)
    with pytest.raises(cr.NoDerivativeError, match="not pcov"):
        cr.gradient(lambda y: np.sum(so.curve_fit(decay_model, T, y, p0=[0.5, 1.0])[1]), Y)
