"""A user's rule registered again for a library function that engines reach through a twin
(``math.exp``, whose NumPy twin ``np.exp`` serves dual numbers): the user's rule is the
derivative in every mode, not the twin's and not chainrules' own inlined partials.

The rules below differ from the true derivative on purpose, so that which one ran shows.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import chainrules as cr


@contextlib.contextmanager
def registered_again(dispatcher, f, rule):
    """``rule`` registered for ``f`` for the duration, then chainrules' own rule back."""
    own = dispatcher.lookup(f, (0.5,))
    dispatcher.register(f, batched=getattr(own, "batched", False))(rule)
    try:
        yield
    finally:
        dispatcher.register(f, batched=getattr(own, "batched", False))(own)


def rrule_exp_times_ten(x):
    y = np.exp(x)  # NumPy's exp: the rule's own code runs on dual numbers in a Hessian

    def exp_pullback(dy):
        return cr.NoTangent(), 10.0 * x * dy

    return y, exp_pullback


def frule_exp_times_ten(tangents, x):
    return np.exp(x), 10.0 * x * tangents[1]


def twice_exp(x):
    return 2.0 * math.exp(x)


def test_reverse_mode_uses_a_reverse_rule_registered_again():
    with registered_again(cr.rrule, math.exp, rrule_exp_times_ten):
        assert cr.gradient(twice_exp, 0.5) == (10.0,)  # 2 * 10 * x, not 2 * e^x
        assert cr.gradient(lambda v: math.exp(v[0]) * v[1], np.array([0.5, 3.0]))[0].tolist() == [15.0, math.exp(0.5)]
    assert cr.gradient(twice_exp, 0.5)[0] == pytest.approx(2.0 * math.exp(0.5))  # chainrules' own rule again


def test_forward_mode_uses_a_forward_rule_registered_again():
    with registered_again(cr.frule, math.exp, frule_exp_times_ten):
        assert cr.derivative(twice_exp, 0.5) == 10.0
        assert cr.jvp(twice_exp, (0.5,), (2.0,)) == (pytest.approx(2.0 * math.exp(0.5)), 20.0)
        J = cr.jacobian(lambda v: np.array([math.exp(v[0]) * v[1]]), np.array([0.5, 3.0]), mode="forward")
        np.testing.assert_allclose(J, [[15.0, math.exp(0.5)]])
        # reverse mode keeps chainrules' own reverse rule (the two directions are registered apart)
        assert cr.gradient(twice_exp, 0.5)[0] == pytest.approx(2.0 * math.exp(0.5))
    assert cr.derivative(twice_exp, 0.5) == pytest.approx(2.0 * math.exp(0.5))


def test_nested_forward_mode_uses_a_forward_rule_registered_again():
    with registered_again(cr.frule, math.exp, frule_exp_times_ten):
        # the inner derivative is 2 * 10 * y: its derivative 20
        assert cr.derivative(lambda x: cr.derivative(twice_exp, x), 0.5) == pytest.approx(20.0)


def test_hessian_differentiates_the_reverse_rule_registered_again():
    with registered_again(cr.rrule, math.exp, rrule_exp_times_ten):
        # the gradient is 2 * 10 * x under this rule: the Hessian 20, not 2 e^x
        assert cr.hessian(twice_exp, 0.5) == pytest.approx(20.0)
        # the gradient (10 v0 v1, e^v0): its Jacobian is no longer symmetric, the rule being no derivative of exp
        np.testing.assert_allclose(
            cr.hessian(lambda v: math.exp(v[0]) * v[1], np.array([0.5, 3.0])), [[30.0, 5.0], [math.exp(0.5), 0.0]]
        )


def test_a_reverse_rule_that_cannot_run_on_dual_numbers_is_refused_in_a_hessian():
    def rrule_with_math_exp(x):
        y = math.exp(x)  # the line the refusal names

        def exp_pullback(dy):
            return cr.NoTangent(), 10.0 * x * dy

        return y, exp_pullback

    line = rrule_with_math_exp.__code__.co_firstlineno + 1
    with registered_again(cr.rrule, math.exp, rrule_with_math_exp):
        assert cr.gradient(twice_exp, 0.5) == (10.0,)
        with pytest.raises(cr.DroppedDerivativeError, match=f"{__file__}:{line}"):
            cr.hessian(twice_exp, 0.5)


def test_a_scalar_rule_registered_again_serves_both_modes():
    own_forward, own_reverse = cr.frule.lookup(math.exp, (0.5,)), cr.rrule.lookup(math.exp, (0.5,))
    cr.scalar_rule(math.exp, lambda x: 10.0 * x)
    try:
        assert cr.gradient(twice_exp, 0.5) == (10.0,)
        assert cr.derivative(twice_exp, 0.5) == 10.0
        assert cr.hessian(twice_exp, 0.5) == pytest.approx(20.0)
    finally:
        cr.frule.register(math.exp, batched=own_forward.batched)(own_forward)
        cr.rrule.register(math.exp, batched=own_reverse.batched)(own_reverse)
    assert cr.derivative(twice_exp, 0.5) == pytest.approx(2.0 * math.exp(0.5))
