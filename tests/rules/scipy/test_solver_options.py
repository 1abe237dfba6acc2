"""A solver's tolerances given from the code being differentiated: keyword arguments declared as
options (``core.keywords.declare_options``) carry no derivative, so a tolerance captured from an
enclosing function reaches the rule as a keyword instead of being refused as a keyword no position
of the solver's signature can take."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.optimize as so

import chainrules as cr


def decay_with_tolerance(tol):
    """y(1) of y' = -k y, y(0) = 1, with the solver's tolerances set from the enclosing call."""

    def decayed(k):
        sol = si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), rtol=tol, atol=tol * 1e-2, max_step=0.5)
        return sol.y[0, -1]

    return decayed


def fitted_slope_with_tolerance(tol):
    x = np.array([0.0, 1.0, 2.0, 3.0])

    def slope(y):
        return so.curve_fit(lambda x, a, b: a * x + b, x, y, ftol=tol, xtol=tol)[0][0]

    return slope


def test_solve_ivp_with_captured_tolerances():
    decayed = decay_with_tolerance(1e-10)
    expected = -np.exp(-0.7)
    assert cr.gradient(decayed, 0.7)[0] == pytest.approx(expected, rel=1e-7)
    assert cr.derivative(decayed, 0.7) == pytest.approx(expected, rel=1e-7)
    assert cr.jacobian(decayed, 0.7, mode="forward") == pytest.approx(expected, rel=1e-7)


def test_the_tape_refuses_the_solver_not_its_keyword():
    # the tape sees solve_ivp's body, not its call
    with pytest.raises(cr.ChainRulesError, match="solve_ivp has a rule that the tape engine cannot use here"):
        cr.gradient(decay_with_tolerance(1e-10), 0.7, engine="tape")


def test_curve_fit_with_captured_tolerances():
    slope = fitted_slope_with_tolerance(1e-12)
    y = np.array([1.0, 3.0, 2.0, 5.0])
    # a line fitted to y: the slope is linear in y, (x - mean x) / Σ (x - mean x)²
    np.testing.assert_allclose(cr.gradient(slope, y)[0], [-0.3, -0.1, 0.1, 0.3], rtol=1e-8)


def test_a_differentiated_tolerance_has_a_zero_derivative():
    # the rule differentiates the exact solution, which does not depend on the tolerance
    assert isinstance(cr.gradient(lambda tol: decay_with_tolerance(tol)(0.7), 1e-8)[0], cr.ZeroTangent)


def test_a_keyword_that_is_not_an_option_is_still_refused():
    def with_jacobian(k):
        sol = si.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.array([1.0]), method="Radau", jac=np.array([[-k]]))
        return sol.y[0, -1]

    with pytest.raises(cr.NoRuleError, match="'jac' depends on differentiated values"):
        cr.gradient(with_jacobian, 0.7, engine="source")
