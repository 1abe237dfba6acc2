"""The seed documents' examples, differentiated by the source engine."""

import dataclasses
import math

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.source import pullback_full


def f(a, b):
    return a / (a + b * b)


def sin_cos(x):
    return math.sin(math.cos(x))


# seed 003: foo(x) = h(g(f(x))) with f(x) = x^2, g = sin, h(x) = 5x
def square(x):
    return x**2


def five_times(x):
    return 5 * x


def foo(x):
    return five_times(math.sin(square(x)))


# seed 003's Babylonian square root (Julia's default t=(1+x)/2 cannot refer to x in Python)
def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


def test_seed_001_wengert_list_example():
    y, back = pullback_full(f, 2.0, 3.0)
    df, da, db = back(1.0)
    assert y == pytest.approx(2.0 / 11.0)
    assert df == cr.NoTangent()  # the seed's `nothing` for f itself
    assert (round(da, 4), round(db, 4)) == (0.0744, -0.0992)
    assert da == pytest.approx(9 / 121) and db == pytest.approx(-12 / 121)  # b²/(a+b²)², -2ab/(a+b²)²


def test_seed_001_through_the_api():
    assert cr.gradient(f, 2.0, 3.0, engine="source") == pytest.approx((9 / 121, -12 / 121))


def test_seed_001_trigonometry():
    y, back = pullback_full(sin_cos, 0.9)
    assert y == pytest.approx(0.5823, abs=1e-4)
    assert back(1.0)[1] == pytest.approx(-0.6368, abs=1e-4)


def test_seed_003_foo():
    x = 0.7
    assert cr.gradient(foo, x, engine="source")[0] == pytest.approx(10 * x * math.cos(x * x))


@pytest.mark.parametrize("x", [0.1, 0.5, 1.0, 1.7, 2.0])
def test_seed_003_babysqrt(x):
    y, back = pullback_full(babysqrt, x)
    assert y == pytest.approx(math.sqrt(x))
    assert back(1.0)[1] == pytest.approx(1 / (2 * math.sqrt(x)), rel=1e-8)


def test_seed_examples_against_finite_differences():
    for fn, args in [(f, (2.0, 3.0)), (sin_cos, (0.9,)), (foo, (0.7,)), (babysqrt, (1.3,))]:
        crt.check_grads(fn, args, modes=("reverse",), order=1, engine="source")


# seed 001's Polynomial model: `(m::Polynomial)(x) = evalpoly(x, m.weights)` and, for a vector,
# `map(m, x)` -- the case the seed's expression-based pullback could not handle
@dataclasses.dataclass
class Polynomial:
    weights: np.ndarray

    def __call__(self, x):
        if isinstance(x, np.ndarray):
            return np.array(list(map(self, x)))
        return evalpoly(x, self.weights)


def evalpoly(x, coeffs):
    """Horner's rule, recursively: coeffs[0] + x * (coeffs[1] + x * (...))."""
    return coeffs[0] if len(coeffs) == 1 else coeffs[0] + x * evalpoly(x, coeffs[1:])


def test_seed_001_polynomial_model_with_map():
    model = Polynomial(np.array([3.0, 2.0, -3.0, 1.0]))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y, back = pullback_full(model, x)
    np.testing.assert_allclose(y, np.polynomial.polynomial.polyval(x, model.weights))
    dy = np.array([1.0, -0.5, 2.0, 0.25])
    dmodel, dx = back(dy)
    assert isinstance(dmodel, cr.Tangent) and type(dmodel).primal_type is Polynomial
    powers = x[:, None] ** np.arange(4)  # d y_i / d w_k = x_i^k
    np.testing.assert_allclose(cr.unthunk(dmodel.weights), dy @ powers)
    derivative = np.polynomial.polynomial.polyval(x, np.polynomial.polynomial.polyder(model.weights))
    np.testing.assert_allclose(dx, dy * derivative)


def test_seed_001_polynomial_gradient_through_the_api():
    def loss(model, x):
        return np.sum(model(x) ** 2)

    model, x = Polynomial(np.array([3.0, 2.0, -3.0, 1.0])), np.array([1.0, 2.0, 3.0, 4.0])
    dmodel, dx = cr.gradient(loss, model, x, engine="source")
    expected = crt.fd_vjp(lambda a: loss(*a), 1.0, (model, x))
    crt.assert_approx((dmodel, dx), expected)
