"""When a rule and finite differences disagree, test_rrule/test_frule say whether finite differences
agree with themselves: a function that is not smooth at the scale of the steps (LAPACK's choice of
an eigenvector's sign is rounding noise) makes the adaptive step selection read its jumps as a
huge derivative, and then the comparison cannot judge the rule."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import test_frule, test_rrule


def signed_sin(x):
    """sin(x) with a sign that flips, as rounding noise would, wherever the 20th bit of x is set."""
    bits = np.asarray(x, dtype=np.float64).view(np.int64)
    return np.sin(x) * np.where((bits >> 20) & 1, -1.0, 1.0)


def smooth_rrule(x):  # the derivative of the branch the point sits on
    sign = np.where((np.asarray(x).view(np.int64) >> 20) & 1, -1.0, 1.0)
    return signed_sin(x), lambda dy: (cr.NoTangent(), dy * np.cos(x) * sign)


def smooth_frule(tangents, x):
    sign = np.where((np.asarray(x).view(np.int64) >> 20) & 1, -1.0, 1.0)
    return signed_sin(x), tangents[1] * np.cos(x) * sign


def wrong(x):
    return 2 * x


@pytest.fixture(autouse=True)
def rules():
    cr.rrule.register(signed_sin)(smooth_rrule)
    cr.frule.register(signed_sin)(smooth_frule)
    cr.rrule.register(wrong)(lambda x: (wrong(x), lambda dy: (cr.NoTangent(), 3 * dy)))
    cr.frule.register(wrong)(lambda tangents, x: (wrong(x), 3 * tangents[1]))
    yield
    for f in (signed_sin, wrong):
        cr.rrule.unregister(f)
        cr.frule.unregister(f)


X = np.array([0.3, 1.1, -0.7])


@pytest.mark.parametrize("tester", [test_rrule, test_frule])
def test_a_mismatch_from_jumps_is_called_unsteady(tester):
    with pytest.raises(AssertionError, match="does not match finite differences") as info:
        tester(signed_sin, X)
    assert "finite differences are unsteady here" in str(info.value)


@pytest.mark.parametrize("tester", [test_rrule, test_frule])
def test_a_wrong_rule_of_a_smooth_function_is_not(tester):
    with pytest.raises(AssertionError, match="does not match finite differences") as info:
        tester(wrong, X)
    assert "finite differences are unsteady here" not in str(info.value)
