"""A rule whose own code converts the values of an outer differentiation (dual numbers in a
Hessian, tracked values under a tape), or writes into them, is named in the error, with the
user's line and what is not supported, instead of advice about the user's code, which did not
convert or write anything."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward

# a rule as the library's own rules are written, whose pullback converts its cotangent with
# np.asarray: its code must live in chainrules/rules for its frames to be the library's
_RULE_SOURCE = """
import numpy as np
import chainrules as cr

def scaled(x):
    return 3.0 * x

def rrule_scaled(x):
    def scaled_pullback(dy):
        return cr.NoTangent(), 3.0 * np.asarray(dy)
    return 3.0 * x, scaled_pullback

def reversed_copy(x):
    return x[::-1].copy()

def rrule_reversed_copy(x):
    def reversed_copy_pullback(dy):
        dx = dy * 1.0  # a new array, which the rule owns, but a dual or tracked one takes no writes
        dx[::-1] = dy
        return cr.NoTangent(), dx
    return x[::-1].copy(), reversed_copy_pullback
"""


@pytest.fixture(scope="module")
def example_rules():
    namespace = {"__name__": "chainrules.rules.converting_example"}
    filename = os.path.join(os.path.dirname(cr.rules.__file__), "converting_example.py")
    exec(compile(_RULE_SOURCE, filename, "exec"), namespace)
    functions = namespace["scaled"], namespace["reversed_copy"]
    for f in functions:
        cr.rrule.register(f)(namespace[f"rrule_{f.__name__}"])
    try:
        yield functions
    finally:
        for f in functions:
            cr.rrule.unregister(f)


@pytest.fixture
def scaled(example_rules):
    return example_rules[0]


def test_a_hessian_through_a_rule_that_converts_duals_names_the_rule_and_the_line(scaled):
    def f(x):
        return np.sum(scaled(x) ** 2)  # the line named

    line = f.__code__.co_firstlineno + 1
    message = re.escape("chainrules.rules.converting_example.rrule_scaled.<locals>.scaled_pullback") + r".*"
    message += re.escape("cannot take dual numbers") + r".*" + re.escape(f"(called at {__file__}:{line})")
    with pytest.raises(TypeError, match=message):
        cr.hessian(f, np.array([1.0, 2.0]))
    np.testing.assert_allclose(cr.gradient(f, np.array([1.0, 2.0]))[0], [18.0, 36.0])


def test_a_tape_gradient_of_a_gradient_through_such_a_rule_names_it(scaled):
    def slope(x):
        return np.sum(cr.gradient(lambda z: np.sum(scaled(z) ** 2), x)[0])

    with pytest.raises(TypeError, match=re.escape("scaled_pullback (converting_example.py:") + ".*tracked values"):
        cr.gradient(slope, np.array([1.0, 2.0]), engine="tape")


def fills_a_plain_buffer(x):
    out = np.zeros(2)
    out[0] = x * x  # a plain array cannot hold a dual: forward mode runs this line as it is
    return out[0] * x


def test_a_conversion_in_the_users_own_code_keeps_its_advice():
    assert cr.gradient(fills_a_plain_buffer, 1.5) == (pytest.approx(6.75),)
    with pytest.raises(cr.DroppedDerivativeError, match=re.escape("np.zeros_like(x)")):
        forward.jvp(fills_a_plain_buffer, (1.5,), (1.0,))  # the engine itself
    # the API runs the function through the source engine's primal, which follows the buffer
    assert cr.derivative(fills_a_plain_buffer, 1.5) == pytest.approx(6.75)
    # the source engine writes through its runtime, which gives the buffer to the dual's engine
    assert cr.hessian(fills_a_plain_buffer, 1.5) == pytest.approx(9.0)


@pytest.mark.parametrize("engine", ["hessian", "tape"])
def test_a_rule_writing_into_an_outer_differentiations_buffer_is_named(example_rules, engine):
    reversed_copy = example_rules[1]

    def f(x):
        return np.sum(reversed_copy(x) ** 3 * np.arange(3.0))  # the line named

    x = np.array([1.0, 2.0, 3.0])
    line = f.__code__.co_firstlineno + 1
    values = "dual numbers" if engine == "hessian" else "tracked values"
    message = (
        re.escape("reversed_copy_pullback (converting_example.py:")
        + ".*"
        + re.escape(f"cannot take {values}: it writes into them in place")
    )
    with pytest.raises(TypeError, match=message) as info:
        if engine == "hessian":
            cr.hessian(f, x)
        else:
            cr.gradient(lambda z: np.sum(cr.gradient(f, z)[0]), x, engine="tape")
    assert f"(called at {__file__}:{line})" in str(info.value)
    np.testing.assert_allclose(cr.gradient(f, x)[0], [6.0, 12.0, 0.0])


def test_dual_numbers_in_a_list_a_rule_takes_as_a_constant_are_named_as_such():
    # first order, a NumPy function reads the list as an array: its forward rule takes it as one
    assert cr.derivative(lambda x: np.interp(0.5, [0.0, 1.0], [x, 2 * x]), 1.0) == pytest.approx(1.5)
    # the reverse rule meets the duals of a Hessian inside the list
    with pytest.raises(TypeError, match=r"passes them inside a list or another container \(pass an array"):
        cr.hessian(lambda x: np.interp(0.5, [0.0, 1.0], [x[0], 2 * x[0]]), np.array([1.0]))
    assert cr.derivative(lambda x: np.interp(0.5, [0.0, 1.0], np.stack([x, 2 * x])), 1.0) == pytest.approx(1.5)
