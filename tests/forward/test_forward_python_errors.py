"""On dual numbers, a ``math`` function (or a division of Python numbers) raises what it raises
on numbers, ``math.log(-1.0)``'s ValueError, ``math.exp(1e3)``'s OverflowError, rather than give
its NumPy twin's nan or inf: a ``try``/``except`` in the code takes the branch Python takes."""

import math

import pytest

import chainrules as cr


def log_or_fallback(x):
    try:
        return math.log(x - 2.0)
    except ValueError:
        return math.log(x) * x


def sqrt_or_fallback(x):
    try:
        return math.sqrt(x - 2.0)
    except ValueError:
        return x * x


def exp_or_fallback(x):
    try:
        return math.exp(x * 1000.0)
    except OverflowError:
        return x**2


CASES = [
    (log_or_fallback, math.log(1.3) + 1.0, 1.0 / 1.3),
    (sqrt_or_fallback, 2.6, 2.0),
    (exp_or_fallback, 2.6, 2.0),
]


@pytest.mark.parametrize("f, first, second", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_math_error_takes_the_handler_on_dual_numbers(f, first, second):
    x = 1.3
    assert cr.jvp(f, (x,), (1.0,))[1] == pytest.approx(first, rel=1e-12)
    assert cr.derivative(f, x) == pytest.approx(first, rel=1e-12)
    assert cr.gradient(f, x)[0] == pytest.approx(first, rel=1e-12)
    assert cr.hessian(f, x) == pytest.approx(second, rel=1e-12)


def test_a_math_function_in_its_domain_is_unchanged():
    assert cr.derivative(lambda x: math.log(x) + math.sqrt(x), 4.0) == pytest.approx(0.25 + 0.25, rel=1e-14)
    assert cr.hessian(lambda x: math.exp(x), 0.5) == pytest.approx(math.exp(0.5), rel=1e-14)
