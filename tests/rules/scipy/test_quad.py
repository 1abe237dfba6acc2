"""``scipy.integrate.quad`` of the user's function: differentiated in ``args``, in what the function
closes over and in the ends (Leibniz's rule), on finite and infinite ranges; checked against closed
forms, finite differences, forward against reverse mode, to third order in an end."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import chainrules as cr
import chainrules.testing as crt


def damped(x, c):
    """exp(-c x²) cos(x): smooth, decaying on the whole line."""
    return np.exp(-c * x**2) * np.cos(x)


cr.scalar_rule(
    damped,
    lambda x, c: np.exp(-c * x**2) * (-2 * c * x * np.cos(x) - np.sin(x)),
    lambda x, c: -(x**2) * np.exp(-c * x**2) * np.cos(x),
)

VALUE_ONLY = cr.Tangent[tuple](1.0, cr.ZeroTangent())  # quad's (integral, error estimate): the integral's cotangent


@pytest.mark.parametrize("ends", [(0.0, 2.0), (-1.0, 3.0), (2.0, -0.5)])
def test_quad_rule_against_finite_differences_on_finite_ranges(ends):
    crt.test_rrule(si.quad, crt.nondiff(damped), *ends, (0.7,), output_tangent=VALUE_ONLY, rtol=1e-7, atol=1e-9)


def exponential_area(c, b):
    """∫_0^b exp(c x) dx = (exp(c b) - 1) / c."""
    return si.quad(lambda x: np.exp(c * x), 0.0, b)[0]


def test_gradient_in_closure_and_end_every_mode():
    c, b = 0.5, 2.0
    expected = ((b * np.exp(c * b) * c - (np.exp(c * b) - 1)) / c**2, np.exp(c * b))
    np.testing.assert_allclose(cr.gradient(exponential_area, c, b), expected, rtol=1e-12)
    v = np.array([c, b])
    for mode in ("reverse", "forward"):
        J = cr.jacobian(lambda v: exponential_area(v[0], v[1]), v, mode=mode)
        np.testing.assert_allclose(J, expected, rtol=1e-12)
    y, _ = cr.pullback(exponential_area, c, b)
    assert y == si.quad(lambda x: np.exp(c * x), 0.0, b)[0]  # SciPy's value itself


def test_hessian_and_higher_derivatives_in_the_ends_and_the_arguments():
    c, b = 0.5, 2.0
    H = cr.hessian(lambda v: exponential_area(v[0], v[1]), np.array([c, b]))
    # closed form: d²/db² = c e^{cb}, d²/dc db = b e^{cb}, d²/dc² = ∫ x² e^{cx}
    d2c = si.quad(lambda x: x**2 * np.exp(c * x), 0.0, b, epsabs=1e-13)[0]
    np.testing.assert_allclose(H, [[d2c, b * np.exp(c * b)], [b * np.exp(c * b), c * np.exp(c * b)]], rtol=1e-10)
    third = cr.derivative(lambda b: cr.derivative(lambda b: cr.derivative(lambda b: exponential_area(c, b), b), b), b)
    assert third == pytest.approx(c**2 * np.exp(c * b), rel=1e-10)


def test_reversed_ends():
    def flipped(c, a):  # ∫_a^0 exp(c x) dx = (1 - exp(c a)) / c, a > 0
        return si.quad(lambda x: np.exp(c * x), a, 0.0)[0]

    def from_infinity(c):  # ∫_∞^0 exp(-c x) dx = -1 / c
        return si.quad(lambda x: np.exp(-c * x), np.inf, 0.0)[0]

    c, a = 0.5, 2.0
    expected = ((-a * np.exp(c * a) * c - (1 - np.exp(c * a))) / c**2, -np.exp(c * a))
    np.testing.assert_allclose(cr.gradient(flipped, c, a), expected, rtol=1e-12)
    assert cr.gradient(from_infinity, c)[0] == pytest.approx(1 / c**2, rel=1e-10)


def test_infinite_ranges():
    def gaussian(s):  # ∫ exp(-x²/(2s²)) dx over the line = s √(2π)
        return si.quad(lambda x, s: np.exp(-(x**2) / (2 * s**2)), -np.inf, np.inf, args=(s,))[0]

    def tail(a):  # ∫_a^∞ exp(-x) dx = exp(-a)
        return si.quad(lambda x: np.exp(-x), a, np.inf)[0]

    def head(b, c):  # ∫_-∞^b exp(c x) dx = exp(c b) / c
        return si.quad(lambda x: np.exp(c * x), -np.inf, b)[0]

    assert cr.gradient(gaussian, 1.5)[0] == pytest.approx(np.sqrt(2 * np.pi), rel=1e-10)
    assert cr.derivative(gaussian, 1.5) == pytest.approx(np.sqrt(2 * np.pi), rel=1e-10)
    assert cr.gradient(tail, 1.0)[0] == pytest.approx(-np.exp(-1.0), rel=1e-12)
    assert cr.hessian(tail, 1.0) == pytest.approx(np.exp(-1.0), rel=1e-10)
    b, c = 0.3, 2.0
    np.testing.assert_allclose(
        cr.gradient(head, b, c), (np.exp(c * b), np.exp(c * b) * (b / c - 1 / c**2)), rtol=1e-9
    )


def test_full_output_and_quads_warning():
    def with_info(c):
        y, err, info = si.quad(lambda x: np.sin(c * x), 0.0, 1.0, full_output=1)
        assert info["last"] >= 1 and err < 1e-10
        return y

    assert cr.gradient(with_info, 2.0)[0] == pytest.approx((np.sin(2.0) / 2.0 - (1 - np.cos(2.0)) / 4.0), rel=1e-12)

    def rough(c):  # one subinterval cannot hold the oscillations: quad warns, as it does undifferentiated
        return si.quad(lambda x: np.sin(c * x), 0.0, 50.0, limit=1)[0]

    with pytest.warns(si.IntegrationWarning):
        cr.gradient(rough, 3.0)


def test_refused_settings_name_the_line_and_the_tape_refuses_the_rule():
    def weighted(c):
        return si.quad(lambda x: np.exp(c * x), 0.0, 1.0, weight="cos", wvar=2.0)[0]

    with pytest.raises(cr.NoRuleError, match=r"test_quad.py:\d+.*weight= is not differentiated"):
        cr.gradient(weighted, 0.5)
    # (the tape sees the values being differentiated reach the ruled integral through the integrand's closure)
    with pytest.raises(cr.ChainRulesError, match="quad has a rule that the tape engine cannot use here.*source"):
        cr.gradient(lambda c: exponential_area(c, 1.0), 0.5, engine="tape")


def test_against_finite_differences_of_scipy():
    def f(c, a):
        return si.quad(lambda x, c: np.log1p(c * x**2) / (1 + x), a, 3.0, args=(c,))[0]

    h = 1e-6
    fd = ((f(0.8 + h, 0.2) - f(0.8 - h, 0.2)) / (2 * h), (f(0.8, 0.2 + h) - f(0.8, 0.2 - h)) / (2 * h))
    np.testing.assert_allclose(cr.gradient(f, 0.8, 0.2), fd, rtol=1e-7)
