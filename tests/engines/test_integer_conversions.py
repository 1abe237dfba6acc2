"""A float being differentiated made an integer (``int(t)``, ``round(t)``, ``math.floor(t)``,
``math.trunc(t)``, ``math.ceil(t)``): piecewise constant, its derivative zero wherever it is
defined, on every engine, in its own code or through a NumPy number (``int(np.floor(t))``); a
user's rule for a function that does it is used, or refused where an engine cannot use it, never
passed over silently."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import fd_jacobian

TABLE = np.array([0.0, 1.0, 4.0, 9.0, 16.0])


def table_index(t):  # a table index from a time
    return TABLE[int(t / 0.5)] * t + t**2


def counted(t):
    return sum(t * k for k in range(int(3 * t))) + t


def rounded_and_floored(t):  # int of a NumPy number, round and the math module's
    i = int(np.floor(t / 0.5))
    return TABLE[i] * t**2 + TABLE[round(t)] * t + math.floor(t) * math.trunc(t) * t**2 + math.ceil(t) * t


def of_a_sum(v):
    return int(np.sum(v)) * np.sum(v**2)


@pytest.mark.parametrize("f", [table_index, counted, rounded_and_floored], ids=lambda f: f.__name__)
@pytest.mark.parametrize("t", [1.2, 1.9])  # away from the jumps
def test_int_and_its_kin_have_a_zero_derivative_on_every_engine(f, t):
    expected = fd_jacobian(f, t)[0, 0]
    for engine in ("source", "tape"):
        assert cr.gradient(f, t, engine=engine)[0] == pytest.approx(expected, rel=1e-7)
    assert cr.derivative(f, t) == pytest.approx(expected, rel=1e-7)
    assert forward.jvp(f, (t,), (1.0,))[1] == pytest.approx(expected, rel=1e-7)  # on the duals themselves
    second = fd_jacobian(lambda z: cr.gradient(f, z)[0], t)[0, 0]
    for engine in ("source", "tape"):
        assert cr.hessian(f, t, engine=engine) == pytest.approx(second, rel=1e-6)


def test_int_of_a_numpy_number_being_differentiated():
    v = np.array([0.7, 1.6])
    expected = fd_jacobian(of_a_sum, v).ravel()
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(of_a_sum, v, engine=engine)[0], expected, rtol=1e-7)
    np.testing.assert_allclose(forward.jacobian(of_a_sum, v), expected, rtol=1e-7)


def snapped(x):  # a straight-through estimator: its rule passes the derivative on
    return int(x) + 0.0


def floored(x):
    return math.floor(x) + 0.0


cr.scalar_rule(snapped, lambda x: 1.0)
cr.scalar_rule(floored, lambda x: 1.0)


def test_a_rule_for_a_function_that_makes_an_integer_is_used_or_refused():
    for g in (snapped, floored):

        def f(x, g=g):
            return g(x) * 2.0 + x

        assert cr.gradient(f, 1.3)[0] == cr.derivative(f, 1.3) == 3.0  # by the rule
        with pytest.raises(IgnoredRuleError, match=g.__name__):
            cr.gradient(f, 1.3, engine="tape")
        with pytest.raises(IgnoredRuleError, match=g.__name__):
            forward.jvp(f, (1.3,), (1.0,))


def test_a_float_being_differentiated_is_no_index_on_any_engine():
    def f(t):
        return [1.0, 2.0, 3.0][t] * t

    with pytest.raises(TypeError, match="list indices must be integers"):
        cr.gradient(f, 1.0)
    for run in (lambda: cr.gradient(f, 1.0, engine="tape"), lambda: cr.derivative(f, 1.0)):
        with pytest.raises(TypeError, match=r"a float being differentiated \(1.0\) cannot be used as an integer"):
            run()
