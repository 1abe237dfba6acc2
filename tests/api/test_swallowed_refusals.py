"""An engine's refusal that the function itself catches is not a silent wrong derivative.

Dual numbers and the tape's tracked values raise ``cr.DroppedDerivativeError`` (a ``TypeError``)
where a conversion would drop the derivative (``float(x)``, ``math.sqrt(x)``, a write into a
plain NumPy buffer). A function that catches that ``TypeError`` goes on along another path, and
its result would lack the derivative, silently. The engines raise the refusal again once the
function returns; forward mode then runs the function as the source engine's primal runs it, as
for a refusal that was not caught, and the tape raises it.
"""

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian


def guarded_sqrt(x):
    try:
        return math.sqrt(x) * x
    except TypeError:  # what a conversion of a dual number (or a tracked value) raises
        return 0.0


def as_number(v):
    try:
        return float(v)
    except TypeError:
        return 0.0


def through_a_helper(x):
    return as_number(x) * x


def buffer_or_fallback(x):
    out = np.zeros(2)
    try:
        out[0] = x[0] * 2.0  # a plain buffer: dual numbers and the tape refuse the write
    except (TypeError, ValueError):
        out = x * 3.0
    return np.sum(out * x)


@pytest.mark.parametrize(
    "f, x", [(guarded_sqrt, 4.0), (through_a_helper, 1.5), (buffer_or_fallback, np.array([0.5, 2.0]))]
)
def test_forward_mode_follows_the_path_python_takes(f, x):
    expected = fd_jacobian(f, x)[0].reshape(np.shape(x))
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-7, atol=1e-9)
    H = cr.hessian(f, x)
    second = fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(np.shape(H))
    np.testing.assert_allclose(H, second, rtol=1e-6, atol=1e-8)


def test_jvp_and_derivative_too():
    assert cr.derivative(guarded_sqrt, 4.0) == pytest.approx(3.0)
    assert cr.jvp(guarded_sqrt, (4.0,), (2.0,))[1] == pytest.approx(6.0)


@pytest.mark.parametrize(
    "f, x", [(guarded_sqrt, 4.0), (through_a_helper, 1.5), (buffer_or_fallback, np.array([0.5, 2.0]))]
)
def test_the_tape_raises_the_refusal_it_made(f, x):
    with pytest.raises(cr.DroppedDerivativeError) as info:
        cr.gradient(f, x, engine="tape")
    assert "caught this error in an `except` clause" in "".join(info.value.__notes__)


def test_a_refusal_an_inner_differentiation_handles_is_not_raised_again():
    def outer(x):  # the inner cr.derivative refuses math.sin of its dual, then runs through the source engine
        return x * cr.derivative(lambda y: math.sin(x * y), 1.0)

    x = 0.7
    assert cr.derivative(outer, x) == pytest.approx(2 * x * math.cos(x) - x * x * math.sin(x), rel=1e-13)


UNRULED = np.frompyfunc(lambda t: t * 2.0, 1, 1)  # no rule in any engine


def without_a_rule_or_fallback(x):
    try:
        y = UNRULED(x)
    except TypeError:  # what a missing rule raises (cr.NoRuleError is a TypeError)
        y = x * 5.0
    return y * x


@pytest.mark.parametrize("engine", ["forward", "source", "tape"])
def test_a_missing_rule_the_function_catches_is_raised(engine):
    with pytest.raises(cr.NoRuleError):
        if engine == "forward":
            cr.derivative(without_a_rule_or_fallback, 1.5)
        else:
            cr.gradient(without_a_rule_or_fallback, 1.5, engine=engine)
