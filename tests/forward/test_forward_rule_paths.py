"""Rule code paths that forward mode relies on, checked with the rule testers."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, 0.5, 2.0])
def test_power_with_a_constant_exponent(exponent):
    # x ** 2 on arrays is np.power with a Python number as exponent: its partial has a fast path
    x = np.array([0.5, 1.5, 2.0])
    crt.test_frule(np.power, x, exponent)
    crt.test_rrule(np.power, x, exponent)
    crt.test_frule(np.power, x.astype(np.float32), exponent)


def test_a_mask_selects_tangents_and_drops_an_unselected_branch_s_nan():
    # np.where(x > 0, np.sqrt(x), 0.0) at x = 0: sqrt's tangent there is inf, and the branch is not
    # taken; selecting with the mask (not multiplying by it: inf * False is NaN) gives the derivative 0
    def f(x):
        return np.where(x > 0, np.sqrt(np.abs(x)), 0.0)

    x = np.array([0.0, 4.0, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        jacobian = cr.jacobian(f, x, mode="forward")
        _, tangent = cr.jvp(lambda v: np.sum(f(v)), (x,), (np.ones(3),))
    np.testing.assert_array_equal(jacobian, np.diag([0.0, 0.25, 0.0]))
    assert tangent == 0.25
