"""On dual numbers, a ``math`` function (or a division of Python numbers) raises what it raises
on numbers, ``math.log(-1.0)``'s ValueError, ``math.exp(1e3)``'s OverflowError, rather than give
its NumPy twin's nan or inf: a ``try``/``except`` in the code takes the branch Python takes."""

import cmath
import math

import numpy as np
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


def test_a_math_function_of_a_float32_number_computes_in_double_as_math_does():
    f = lambda x: math.exp(x) * 2.0  # noqa: E731
    x = np.float32(0.7)
    y, dy = cr.jvp(f, (x,), (np.float32(1.0),))
    assert y == pytest.approx(f(x), rel=1e-15) and dy == pytest.approx(2.0 * math.exp(float(x)), rel=1e-15)
    assert cr.jacobian(f, x, mode="forward").dtype == cr.jacobian(f, x, mode="reverse").dtype == np.float64


def test_cmath_keeps_the_side_of_a_branch_cut_that_a_negative_zero_names():
    def root(w):
        return cmath.sqrt(w)

    below = complex(-0.4, -0.0)  # on the cut, approached from below: cmath.sqrt gives -0.632j
    y, dy = cr.jvp(root, (below,), (1.0,))
    assert y == root(below)
    assert dy == pytest.approx(cr.jacobian(root, below, mode="reverse"), rel=1e-14)
    assert dy == pytest.approx(1.0 / (2.0 * root(below)), rel=1e-14)
    y, dy = cr.jvp(root, (-0.4,), (1.0,))  # a real number is x + 0j, above the cut
    assert y == root(-0.4) and dy == pytest.approx(1.0 / (2.0 * root(-0.4)), rel=1e-14)


def divided_by_zero_after_a_product(x):
    try:
        y = x * x / 0.0  # the product of the engine's numbers: a Python float, as Python's
    except ZeroDivisionError:
        y = x * x * x
    return y


def sum_with_a_zero_divisor(x):
    r = 0.0
    for d in (1.0, 0.0, 2.0):
        try:
            r = r + x * x / d
        except ZeroDivisionError:
            r = r + x
    return r


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("f, expected", [(divided_by_zero_after_a_product, 7.8), (sum_with_a_zero_divisor, 3.0)])
def test_a_zero_division_of_an_intermediate_takes_the_handler_in_a_hessian(f, expected, engine):
    assert cr.hessian(f, 1.3, engine=engine) == pytest.approx(expected)
