"""``cmath`` functions differentiated twice: Hessians (forward over reverse) and gradients of gradients.

The source engine calls the rules of ``cmath`` functions; run on an outer differentiation's values
(duals, tracked numbers) those rules are their twins' (``chainrules.core.twins.PROGRAM_TWINS``):
the NumPy ufunc of the same name on the argument made complex, chained rule by rule. Each is
checked on a real-to-real function through complex intermediates, against finite differences.
The tape and forward mode see no ``cmath`` call (only its ``complex()`` of their value), and say so.
"""

from __future__ import annotations

import cmath

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward
from chainrules.testing import fd_jacobian

X0 = 0.8


def z_of(x):
    """A complex point off the branch cuts, moving with x."""
    return x * (0.45 + 0.3j) + 0.1j


# real-to-real functions through each cmath function with a derivative
THROUGH = {
    "exp": lambda x: cmath.exp(z_of(x)).real,
    "log": lambda x: cmath.log(z_of(x)).imag * x,
    "log_base": lambda x: abs(cmath.log(z_of(x), x + 2.0)),
    "log10": lambda x: cmath.log10(z_of(x)).real,
    "sqrt_of_a_negative": lambda x: cmath.sqrt(x - 2.0).imag * x,
    "sin": lambda x: cmath.sin(z_of(x)).imag,
    "cos": lambda x: cmath.cos(z_of(x)).real * x,
    "tan": lambda x: cmath.tan(z_of(x)).real,
    "asin": lambda x: cmath.asin(z_of(x)).real,
    "acos": lambda x: cmath.acos(z_of(x)).imag,
    "atan": lambda x: cmath.atan(z_of(x)).real,
    "sinh": lambda x: cmath.sinh(z_of(x)).real,
    "cosh": lambda x: cmath.cosh(z_of(x)).imag,
    "tanh": lambda x: cmath.tanh(z_of(x)).real,
    "asinh": lambda x: cmath.asinh(z_of(x)).imag,
    "acosh": lambda x: cmath.acosh(z_of(x) + 1.5).real,
    "atanh": lambda x: cmath.atanh(z_of(x)).real,
    "phase": lambda x: cmath.phase(z_of(x)) * x,
    "polar": lambda x: cmath.polar(z_of(x))[0] * cmath.polar(z_of(x))[1],
    "rect": lambda x: cmath.rect(x, x * x).imag,
    "the_brief_example": lambda x: (cmath.exp(1j * x) * cmath.sqrt(x + 2)).real,
}


def second_derivative(f) -> float:
    return fd_jacobian(lambda z: cr.gradient(f, z)[0], X0).item()


@pytest.mark.parametrize("name", THROUGH)
def test_hessian_by_forward_over_reverse(name):
    f = THROUGH[name]
    H = cr.hessian(f, X0)
    assert type(H) is float
    assert H == pytest.approx(second_derivative(f), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", THROUGH)
@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_derivative_of_a_source_gradient(name, outer):
    f = THROUGH[name]

    def slope(x):
        return cr.gradient(f, x)[0]

    got = cr.derivative(slope, X0) if outer == "forward" else cr.gradient(slope, X0, engine=outer)[0]
    assert type(got) is float
    assert got == pytest.approx(second_derivative(f), rel=1e-6, abs=1e-8)


def test_arrays_through_cmath_in_a_loop():
    def energy(v):
        total = 0.0
        for k in range(v.shape[0]):
            w = cmath.exp(1j * v[k]) * cmath.sqrt(v[k] + 2.0 - 1j)
            total = total + (w * w.conjugate()).real * v[k] + w.imag
        return total

    v = np.array([0.3, -0.4, 1.1])
    expected = fd_jacobian(lambda z: cr.gradient(energy, z)[0], v)
    np.testing.assert_allclose(cr.hessian(energy, v), expected, rtol=1e-6, atol=1e-8)
    weights = np.array([1.0, -2.0, 0.5])
    tape = cr.gradient(lambda z: np.sum(weights * cr.gradient(energy, z)[0]), v, engine="tape")[0]
    np.testing.assert_allclose(tape, expected @ weights, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["exp", "rect", "polar", "log_base"])
def test_the_twin_rules_on_duals_agree_with_the_cmath_rules(name):
    # forward over the rules themselves: the rule run on a dual gives the derivative of the plain rule's value
    f = THROUGH[name]
    h = 1e-6
    slope = cr.derivative(lambda x: cr.gradient(f, x)[0], X0)
    assert slope == pytest.approx((cr.gradient(f, X0 + h)[0] - cr.gradient(f, X0 - h)[0]) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("engine", ["tape", "forward"])
def test_engines_that_cannot_see_the_call_refuse_with_the_line(engine):
    f = THROUGH["exp"]
    with pytest.raises(cr.DroppedDerivativeError, match=r"complex\(\).*test_nested_cmath.py:\d+"):
        if engine == "forward":
            forward.jvp(f, (X0,), (1.0,))
        else:
            cr.gradient(f, X0, engine="tape")


def test_forward_mode_through_the_api_sees_the_call():
    # cr.derivative runs f through the source engine's primal, which calls the cmath function's rule
    f = THROUGH["exp"]
    h = 1e-6
    assert cr.derivative(f, X0) == pytest.approx((f(X0 + h) - f(X0 - h)) / (2 * h), rel=1e-8)
    assert cr.derivative(f, X0) == pytest.approx(cr.gradient(f, X0)[0], rel=1e-14)
