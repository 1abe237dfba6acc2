"""The seed documents' examples, differentiated by the source engine."""

import math

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
