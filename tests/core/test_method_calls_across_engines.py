"""An engine's value whose method is called with a value of a differentiation nested inside its
own (``core.twins.call_method``): the call goes to the method's NumPy twin, which hands it to the
inner value; a method without a twin is refused with the user's line, by the tape and by forward mode."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.twins import call_method

X = np.array([0.3, 0.7, -0.4])


def test_call_method_runs_the_engines_call_first():
    calls = []

    def run(f, args, kwargs):
        calls.append(f)
        return "ran"

    assert call_method(np.ndarray.sum, np.ones(2), (), {}, run, None) == "ran"
    assert calls == [np.ndarray.sum]


def test_call_method_goes_to_the_twin_or_raises_the_engines_error():
    def declined(f, args, kwargs):
        return NotImplemented

    out = call_method(np.ndarray.reshape, np.arange(4.0), ((2, 2),), {}, declined, None)
    np.testing.assert_array_equal(out, np.arange(4.0).reshape(2, 2))
    with pytest.raises(LookupError, match="searchsorted"):
        call_method(np.ndarray.searchsorted, X, (0.5,), {}, declined, lambda m: LookupError(m.__name__))


def test_a_tape_array_method_with_an_inner_dual_goes_to_numpys_function():
    def f(x):
        return cr.derivative(lambda t: x.dot(t * x), 2.0)

    np.testing.assert_allclose(cr.gradient(f, X, engine="tape")[0], 2 * X, rtol=1e-12)


def test_a_dual_array_method_with_an_inner_tape_value_goes_to_numpys_function():
    def k(t):
        v = t * X
        return cr.gradient(lambda x: v.dot(x) * x[0], X, engine="tape")[0].sum()

    # d/dt sum(grad_x (t X.x) x0) = d/dt (t sum(X) x0 + t X.x) at x = X
    expected = X.sum() * X[0] + X @ X
    np.testing.assert_allclose(cr.derivative(k, 2.0), expected, rtol=1e-12)


def test_a_method_without_a_twin_is_refused_with_the_line_by_the_tape():
    def h(x):
        return cr.derivative(lambda t: x.searchsorted(t), 2.0)

    line = h.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"x\.searchsorted\(\.\.\.\).*{re.escape(__file__)}:{line}.*np\.searchsorted"):
        cr.gradient(h, X, engine="tape")


def test_a_method_without_a_derivative_of_a_captured_dual_computes_on_its_value():
    # the tape tracks a dual the inner function captured; the method, which has no derivative,
    # runs on the array the dual stands for
    def k(t):
        v = t * X
        return cr.gradient(lambda x: v.searchsorted(2.0) * x[2] * t, X, engine="tape")[0].sum()

    h = 1e-6  # (2.0 goes after every entry of v = 1.7 X: the count is 3)
    assert k(1.7) == pytest.approx(3 * 1.7)
    assert cr.derivative(k, 1.7) == pytest.approx(3.0)
    assert cr.derivative(k, 1.7) == pytest.approx((k(1.7 + h) - k(1.7 - h)) / (2 * h))
