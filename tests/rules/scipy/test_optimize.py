"""``scipy.optimize``'s root finders, differentiated by the implicit function theorem: the root
moves with ``args`` and with what the function closes over, never with the bracket, the start or
the settings; checked against finite differences of SciPy's own roots, across engines and modes,
to third order."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.optimize as so

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.core.ruled_calls import IgnoredRuleError


def cubic(x, c, d):
    """x³ + d x - c: one real root for d > 0, moving with c and d."""
    return x**3 + d * x - c


cr.scalar_rule(cubic, lambda x, c, d: 3 * x**2 + d, lambda x, c, d: -1.0 + 0 * x, lambda x, c, d: x)

BRACKETING = [so.brentq, so.brenth, so.ridder, so.bisect, so.toms748]
C, D = 9.0, 2.0
TIGHT = {"xtol": 1e-14}


def fd(f, x, h=1e-6):
    """Central differences of a scalar-valued ``f`` at a number or an array ``x``."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    g = np.zeros(np.shape(f(x)) + np.shape(x))
    for i in np.ndindex(np.shape(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[(...,) + i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def root_derivatives(x, c, d):
    """dx/dc and dx/dd at the root x of cubic(x, c, d) = 0: 1/J and -x/J, J = 3x² + d."""
    J = 3 * x**2 + d
    return 1 / J, -x / J


@pytest.mark.parametrize("solver", BRACKETING, ids=lambda s: s.__name__)
def test_bracketing_rules_against_finite_differences(solver):
    crt.test_rrule(solver, crt.nondiff(cubic), 0.0, 4.0, (C, D), fkwargs=TIGHT, atol=1e-7)


@pytest.mark.parametrize("solver", BRACKETING, ids=lambda s: s.__name__)
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_bracketing_gradient_in_args_and_closure(solver, engine):
    def by_args(c, d):
        return solver(lambda x, c, d: x**3 + d * x - c, 0.0, 4.0, args=(c, d), **TIGHT)

    def by_closure(c, d):
        return solver(lambda x: x**3 + d * x - c, 0.0, 4.0, **TIGHT)

    x = solver(cubic, 0.0, 4.0, args=(C, D), **TIGHT)
    expected = root_derivatives(x, C, D)
    if engine == "tape":  # the tape sees no calls of Python functions: it refuses the solver's rule
        with pytest.raises(IgnoredRuleError, match="engine='source'"):
            cr.gradient(by_args, C, D, engine=engine)
        return
    for f in (by_args, by_closure):
        y, back = cr.pullback(f, C, D, engine=engine)
        assert y == x  # SciPy's root itself
        np.testing.assert_allclose(back(1.0), expected, rtol=1e-12)
        np.testing.assert_allclose(back(1.0), (fd(lambda c: f(c, D), C), fd(lambda d: f(C, d), D)), rtol=1e-6)


def test_a_single_argument_not_in_a_tuple_and_full_output():
    def single(c):
        return so.brentq(lambda x, c: x**3 + D * x - c, 0.0, 4.0, args=c)

    def full(c):
        x, r = so.brentq(lambda x: x**3 + D * x - c, 0.0, 4.0, full_output=True)
        assert r.converged
        return 2.0 * x

    x = so.brentq(cubic, 0.0, 4.0, args=(C, D))
    assert cr.gradient(single, C)[0] == pytest.approx(root_derivatives(x, C, D)[0], rel=1e-12)
    assert cr.gradient(full, C)[0] == pytest.approx(2 * root_derivatives(x, C, D)[0], rel=1e-12)


def test_root_scalar_results_root_field():
    def f(c, d, method):
        kw = {"bracket": (0.0, 4.0)} if method == "brentq" else {"x0": 1.0, "fprime": lambda x, c, d: 3 * x**2 + d}
        return so.root_scalar(lambda x, c, d: x**3 + d * x - c, args=(c, d), method=method, **kw).root

    for method in ("brentq", "newton"):
        x = f(C, D, method)
        gradient = cr.gradient(lambda c, d: f(c, d, method), C, D)
        np.testing.assert_allclose(gradient, root_derivatives(x, C, D), rtol=1e-9)
        assert cr.derivative(lambda c: f(c, D, method), C) == pytest.approx(root_derivatives(x, C, D)[0], rel=1e-9)


def test_newton_scalar_and_elementwise_array_roots():
    c = np.array([1.0, 9.0, 30.0])

    def scalar(c):
        return so.newton(lambda x, c: x**3 + D * x - c, 1.0, args=(c,))

    def array(c):
        return so.newton(lambda x, c: x**3 + D * x - c, np.ones(3), args=(c,))

    x = array(c)
    dx_dc = root_derivatives(x, c, D)[0]
    np.testing.assert_allclose(cr.jacobian(array, c, mode="reverse"), np.diag(dx_dc), rtol=1e-9)
    np.testing.assert_allclose(cr.jacobian(array, c, mode="forward"), np.diag(dx_dc), rtol=1e-9)
    np.testing.assert_allclose(cr.jacobian(array, c), fd(array, c), rtol=1e-5, atol=1e-9)
    assert cr.gradient(scalar, 9.0)[0] == pytest.approx(dx_dc[1], rel=1e-9)
    crt.test_rrule(so.newton, crt.nondiff(cubic), 1.0, crt.nondiff(None), (C, D), fkwargs={"tol": 1e-14}, atol=1e-7)


def coupled(x, theta):
    """A coupled system F(x) = 0 in three unknowns: x_i³ + x_i + 0.3 x_{i+1} = θ_i."""
    return x**3 + x + 0.3 * np.roll(x, -1) - theta


THETA = np.array([1.0, 2.0, 3.5])


def test_fsolve_and_root_jacobians_in_every_mode():
    def by_fsolve(theta):
        return so.fsolve(coupled, np.zeros(3), args=(theta,), xtol=1e-13)

    def by_root(theta):
        return so.root(coupled, np.zeros(3), args=(theta,), tol=1e-13).x

    def by_root_with_jac(theta):
        def fun(x, theta):
            return coupled(x, theta), np.diag(3 * x**2 + 1) + 0.3 * np.roll(np.eye(3), 1, axis=1)

        return so.root(fun, np.zeros(3), args=(theta,), jac=True, tol=1e-13).x

    x = by_fsolve(THETA)
    J = np.diag(3 * x**2 + 1) + 0.3 * np.roll(np.eye(3), 1, axis=1)
    expected = np.linalg.inv(J)  # dx/dθ = J⁻¹
    for f in (by_fsolve, by_root, by_root_with_jac):
        for mode in ("reverse", "forward", "auto"):
            np.testing.assert_allclose(cr.jacobian(f, THETA, mode=mode), expected, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(cr.jacobian(f, THETA), fd(f, THETA), rtol=1e-5, atol=1e-8)
    assert np.array_equal(cr.pullback(by_fsolve, THETA)[0], x)


def test_fsolve_full_output_and_closure():
    def f(theta):
        x, info, ier, message = so.fsolve(lambda x: coupled(x, theta), np.zeros(3), full_output=True, xtol=1e-13)
        assert ier == 1
        return np.sum(x**2)

    np.testing.assert_allclose(cr.gradient(f, THETA)[0], fd(f, THETA), rtol=1e-6)


def test_second_derivatives_are_exact_in_every_nesting():
    def cube_root(c):
        return so.brentq(lambda x, c: x**3 - c, 0.0, 4.0, args=(c,), xtol=1e-14)

    c = 8.0  # x = c^(1/3): x'' = -2/9 c^(-5/3), x''' = 10/27 c^(-8/3)
    assert cr.hessian(cube_root, c) == pytest.approx(-2 / 9 * c ** (-5 / 3), rel=1e-10)
    assert cr.derivative(lambda c: cr.derivative(cube_root, c), c) == pytest.approx(-2 / 9 * c ** (-5 / 3), rel=1e-10)
    third = cr.derivative(lambda c: cr.derivative(lambda c: cr.derivative(cube_root, c), c), c)
    assert third == pytest.approx(10 / 27 * c ** (-8 / 3), rel=1e-9)

    def energy(theta):
        return np.sum(so.fsolve(coupled, np.zeros(3), args=(theta,), xtol=1e-13) ** 2)

    H = cr.hessian(energy, THETA)
    h = 1e-5
    grad = cr.gradient
    by_fd = np.array([(grad(energy, THETA + h * e)[0] - grad(energy, THETA - h * e)[0]) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(H, by_fd, rtol=1e-6, atol=1e-8)


def test_bracket_and_start_get_no_cotangent_and_inputs_are_not_mutated():
    def f(a, c):
        return so.brentq(lambda x: x**3 + D * x - c, a, 4.0)

    ga, gc = cr.gradient(f, 0.0, C)
    assert isinstance(ga, cr.ZeroTangent) or ga == 0.0
    start = np.zeros(3)
    theta = THETA.copy()
    cr.jacobian(lambda t: so.fsolve(coupled, start, args=(t,)), theta, mode="reverse")
    assert np.array_equal(start, np.zeros(3)) and np.array_equal(theta, THETA)


def test_unconverged_and_singular_roots_refuse_a_derivative():
    def unconverged(c):
        return so.newton(lambda x: x**2 + c, 1.0, disp=False)

    with pytest.raises(cr.ChainRulesError, match=r"scipy.optimize.newton at .*test_optimize.py:\d+ did not converge"):
        cr.gradient(unconverged, 1.0)
    with pytest.raises(cr.ChainRulesError, match="did not converge"):  # forward mode: at once, not a zero tangent
        cr.derivative(unconverged, 1.0)
    assert so.newton(lambda x: x**2 + 1.0, 1.0, disp=False) == cr.pullback(unconverged, 1.0)[0]  # the primal runs

    def raising(c):  # disp=True: SciPy's own error, as without differentiation
        return so.newton(lambda x: x**2 + c, 1.0)

    with pytest.raises(RuntimeError, match="Failed to converge"):
        cr.gradient(raising, 1.0)

    def triple_root(c):  # bisection's first midpoint is the root 0, where ∂F/∂x = 3x² = 0
        return so.bisect(lambda x: x**3 - c, -1.0, 1.0)

    with pytest.raises(cr.ChainRulesError, match="singular at the root"):
        cr.gradient(triple_root, 0.0)


def test_optimize_result_fields_read_by_attribute_and_by_key():
    def f(theta):
        result = so.root(coupled, np.zeros(3), args=(theta,), tol=1e-13)
        return np.sum(result.x * result["x"])

    np.testing.assert_allclose(cr.gradient(f, THETA)[0], fd(f, THETA), rtol=1e-6)


SOLVED_IN_PYTHON = {  # solvers whose iterations run in Python on the values they get
    "newton, secant": lambda c: so.newton(lambda x: x**3 - c, 1.0),
    "newton, fprime": lambda c: so.newton(lambda x: x**3 - c, 1.0, fprime=lambda x: 3 * x**2),
    "root_scalar, secant": lambda c: so.root_scalar(lambda x: x**3 - c, x0=1.0, x1=2.0).root,
    "root_scalar, halley": lambda c: so.root_scalar(
        lambda x: x**3 - c, x0=1.0, fprime=lambda x: 3 * x**2, fprime2=lambda x: 6 * x
    ).root,
}


@pytest.mark.parametrize("name", list(SOLVED_IN_PYTHON))
def test_forward_mode_and_the_tape_never_differentiate_a_solvers_iterations(name):
    # Forward mode notices the solver branching on its dual numbers (a comparison in its code) and runs
    # the function through the source engine's primal, where the rule differentiates the root (through
    # the secant's iterations, root_scalar's derivative was 0.041 for 1/12); the tape refuses, naming it.
    f = SOLVED_IN_PYTHON[name]
    assert cr.derivative(f, 8.0) == pytest.approx(1 / 12, rel=1e-12)
    assert cr.gradient(f, 8.0)[0] == pytest.approx(1 / 12, rel=1e-12)
    with pytest.raises(IgnoredRuleError, match=r"scipy\.optimize\.\S+ has a rule that the tape engine cannot use"):
        cr.gradient(f, 8.0, engine="tape")


def test_fixed_point_scalar_and_coupled_maps():
    def dottie(c):  # x = c cos x: dx/dc = cos x / (1 + c sin x)
        return so.fixed_point(lambda x, c: c * np.cos(x), 0.5, args=(c,), xtol=1e-14)

    c = 1.0
    x = float(dottie(c))
    expected = np.cos(x) / (1 + c * np.sin(x))
    assert cr.gradient(dottie, c)[0] == pytest.approx(expected, rel=1e-10)
    assert cr.derivative(dottie, c) == pytest.approx(expected, rel=1e-10)
    h = 1e-5
    second = (cr.gradient(dottie, c + h)[0] - cr.gradient(dottie, c - h)[0]) / (2 * h)
    assert cr.hessian(dottie, c) == pytest.approx(second, rel=1e-6)

    def coupled_map(theta):  # x = 0.5 tanh(A x) + theta, a contraction
        A = np.array([[0.3, -0.2, 0.1], [0.1, 0.4, -0.3], [-0.2, 0.1, 0.2]])
        return so.fixed_point(lambda x: 0.5 * np.tanh(A @ x) + theta, np.zeros(3), xtol=1e-14)

    theta = np.array([0.2, -0.1, 0.4])
    fd = np.array([(coupled_map(theta + h * e) - coupled_map(theta - h * e)) / (2 * h) for e in np.eye(3)]).T
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(cr.jacobian(coupled_map, theta, mode=mode), fd, rtol=1e-7, atol=1e-9)


def steady_state(log_rates, solver):
    """The fixed point of a toggle switch, an equation building its vector with np.array of the
    values it closes over."""
    alpha, beta = np.exp(log_rates)

    def rhs(x):
        return np.array([alpha / (1.0 + x[1] ** 2) - x[0], beta / (1.0 + x[0] ** 2) - x[1]])

    x = solver(rhs, np.array([0.3, 3.0]))
    return x[0] * x[1]


STEADY = {
    "root": lambda rhs, x0: so.root(rhs, x0, method="hybr", tol=1e-13).x,
    "fsolve": lambda rhs, x0: so.fsolve(rhs, x0, xtol=1e-13),
}


@pytest.mark.parametrize("name", list(STEADY))
def test_equations_closing_over_an_outer_differentiations_values(name):
    # A Hessian, forward mode and a tape over the source engine: the closure holds dual numbers or
    # tracked values, which the solver's iterations see as their plain values (np.array of them raised
    # DroppedDerivativeError) while the root's derivatives come from the equation on the engine's values.
    def f(z):
        return steady_state(z, STEADY[name])

    x, h = np.array([0.8, 1.2]), 1e-5
    gradient = cr.gradient(f, x)[0]
    np.testing.assert_allclose(gradient, fd(f, x), rtol=1e-6)
    by_fd = np.array([(cr.gradient(f, x + h * e)[0] - cr.gradient(f, x - h * e)[0]) / (2 * h) for e in np.eye(2)])
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, by_fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), gradient, rtol=1e-10)
    nested = cr.gradient(lambda z: np.sum(cr.gradient(f, z)[0]), x, engine="tape")[0]
    np.testing.assert_allclose(nested, np.sum(H, axis=1), rtol=1e-8)


def test_a_root_of_an_integral_closing_over_a_dual_number():
    def median(log_a):  # of the density a exp(-a x): log(2) / a
        a = np.exp(log_a)

        def cdf_gap(q):
            return si.quad(lambda x: a * np.exp(-a * x), 0.0, q)[0] - 0.5

        return so.brentq(cdf_gap, 0.0, 10.0, xtol=1e-14)

    assert cr.hessian(median, 0.3) == pytest.approx(np.log(2) * np.exp(-0.3), rel=1e-8)
    assert cr.derivative(median, 0.3) == pytest.approx(-np.log(2) * np.exp(-0.3), rel=1e-10)


def test_refusals_name_the_solver_the_user_called_and_the_users_line():
    # root_scalar runs newton: the refusal named newton, called at a line of SciPy's
    def secant_root(k):
        return so.root_scalar(lambda x: np.exp(-k * x) - 1.3 * x, x0=0.3, x1=0.6, method="secant").root

    line = secant_root.__code__.co_firstlineno + 1
    where = rf"root_scalar has a rule that {{}} cannot use here: it was called at .*test_optimize\.py:{line} "
    with pytest.raises(IgnoredRuleError, match=where.format("the tape engine")):
        cr.gradient(secant_root, 0.7, engine="tape")
    with pytest.raises(IgnoredRuleError, match=where.format("forward mode")):
        forward.jacobian(secant_root, 0.7)
    x = secant_root(0.7)  # the source engine and cr.derivative use the rule
    expected = -x * np.exp(-0.7 * x) / (0.7 * np.exp(-0.7 * x) + 1.3)
    assert cr.gradient(secant_root, 0.7)[0] == pytest.approx(expected, rel=1e-10)
    assert cr.derivative(secant_root, 0.7) == pytest.approx(expected, rel=1e-10)
