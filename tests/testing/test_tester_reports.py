"""How the testers report rules that go wrong in ways beyond a wrong number: a thunk that fails
on a zero seed, a rule that mutates its input in its forward part (blamed on the rule, not the
pullback), and finite-difference methods asked for a derivative of order 0."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt


def scale(x):
    return 2.0 * x


@cr.rrule.register(scale)
def rrule_scale_failing_thunk(x):
    # the thunk multiplies the seed as a number: a ZeroTangent() seed makes it raise
    return 2.0 * x, lambda dy: (cr.NoTangent(), cr.Thunk(lambda: np.multiply(2.0, cr.unthunk(dy))))


def test_a_thunk_failing_on_a_zero_seed_is_reported():
    with pytest.raises(AssertionError, match=r"unthunking argument 1 \(x\) from a ZeroTangent\(\) seed raised"):
        crt.test_rrule(scale, np.array([1.0, 2.0]))


def bump(x):
    return x * 3.0


@cr.rrule.register(bump)
def rrule_bump_mutating_its_input(x):
    x[0] += 1.0  # in the forward part
    return x * 3.0, lambda dy: (cr.NoTangent(), 3.0 * dy)


def test_a_mutation_by_the_rule_is_not_blamed_on_the_pullback():
    with pytest.raises(AssertionError) as caught:
        crt.test_rrule(bump, np.array([1.0, 2.0]))
    message = str(caught.value)
    assert "mutated by the rule" in message
    assert "mutated by the pullback" not in message


@pytest.mark.parametrize("method", [crt.central_fdm, crt.forward_fdm, crt.backward_fdm])
def test_a_derivative_of_order_0_is_refused_clearly(method):
    with pytest.raises(ValueError, match=r"\(3, 0\): the order q of the derivative is at least 1"):
        method(3, 0)
