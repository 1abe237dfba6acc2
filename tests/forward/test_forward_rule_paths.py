"""Rule code paths that forward mode relies on, checked with the rule testers."""

import numpy as np
import pytest

import chainrules.testing as crt


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, 0.5, 2.0])
def test_power_with_a_constant_exponent(exponent):
    # x ** 2 on arrays is np.power with a Python number as exponent: its partial has a fast path
    x = np.array([0.5, 1.5, 2.0])
    crt.test_frule(np.power, x, exponent)
    crt.test_rrule(np.power, x, exponent)
    crt.test_frule(np.power, x.astype(np.float32), exponent)
