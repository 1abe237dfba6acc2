"""Nested differentiation: tags keep the traces apart, and pullbacks run on tracked values."""

from __future__ import annotations

import pytest

import chainrules as cr


def test_gradient_inside_a_traced_function():
    # d/dx [x * d/dy (x y)] = d/dx x^2 = 2x
    def f(x):
        return x * cr.gradient(lambda y: x * y, 1.0, engine="tape")[0]

    assert cr.gradient(f, 3.0, engine="tape") == (6.0,)


def test_no_perturbation_confusion():
    # Siskind and Pearlmutter's example: d/dx [x * d/dy (x + y)] = 1; confusing the two
    # differentiations gives 2
    def f(x):
        return x * cr.gradient(lambda y: x + y, 1.0, engine="tape")[0]

    assert cr.gradient(f, 5.0, engine="tape") == (1.0,)


def test_second_derivative():
    def df(x):
        return cr.gradient(lambda t: t * t * t - 2.0 * t, x, engine="tape")[0]

    assert cr.gradient(df, 2.0, engine="tape") == (12.0,)  # 6x


def test_third_derivative():
    def d(f):
        return lambda x: cr.gradient(f, x, engine="tape")[0]

    assert d(d(d(lambda x: x * x * x * x)))(2.0) == pytest.approx(48.0)  # 24x


def test_inner_values_do_not_leak_out():
    # the inner differentiation is finished when the outer one sweeps
    def f(x):
        y, back = cr.pullback(lambda t: t * x, 2.0, engine="tape")
        return y + back(1.0)[0]

    assert cr.gradient(f, 3.0, engine="tape") == (3.0,)  # y = 2x, dt = x
