"""A top-level ``for`` loop whose target is bound again in the body to a value being
differentiated (``c = c * x``, ``c *= x``): going back through each iteration, the cotangent that
reached the target's own value (a constant of the iterable) must not flow into the iteration
before, where the target is bound afresh."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


def scaled_constants(x):
    s = 0.0
    for c in (1.0, 2.0, 3.0):
        c = c * x
        s = s + c * c
    return s  # 14 x**2


def scaled_in_place(x):
    s = 0.0
    for c in [1.0, 2.0, 3.0]:
        c *= x
        s = s + c * c
    return s


def scaled_counter(x):
    s = 0.0
    for t in range(4):
        t = t * 0.1
        t = t * x
        s = s + np.sin(t)
    return s


def counter_bound_in_a_branch(x):
    s = 0.0
    for i in range(3):
        if i == 1:
            i = x
        s = s + i * i * x
    return s


def bound_until_a_break(x):
    s = 0.0
    for c in (1.0, 2.0, 3.0):
        if c > 2.5:
            break
        c = c + x
        s = s + c * c
    return s


CASES = [scaled_constants, scaled_in_place, scaled_counter, counter_bound_in_a_branch, bound_until_a_break]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient_and_hessian_agree_with_finite_differences_and_the_tape(f):
    x, h = 0.7, 1e-5
    expected = (f(x + h) - f(x - h)) / (2 * h)
    (source,) = cr.gradient(f, x)
    assert source == pytest.approx(expected, rel=1e-7)
    assert source == pytest.approx(cr.gradient(f, x, engine="tape")[0], rel=1e-12)
    second = (cr.gradient(f, x + h)[0] - cr.gradient(f, x - h)[0]) / (2 * h)
    assert cr.hessian(f, x) == pytest.approx(second, rel=1e-6)
    assert cr.jacobian(f, x, mode="reverse") == pytest.approx(expected, rel=1e-7)
