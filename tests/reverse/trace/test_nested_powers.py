"""Powers with a differentiated exponent (``2.0 ** x``, ``x[0] ** x[1]``) in a tape gradient inside a
tape gradient: the rule's partials compare the exponent with zero as the outer tape's value it is,
instead of converting it."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([0.5, 1.5, 2.5])
POWERS = {
    "number_base": lambda v: np.sum(2.0**v),
    "entry_to_entry": lambda v: v[0] ** v[1] + v[2] ** v[0],
    "array_to_array": lambda v: np.sum(v**v),
    "constant_exponents": lambda v: np.sum(v ** np.array([1.0, 2.0, 0.5])) + np.sum(v**-2),
}


@pytest.mark.parametrize("f", POWERS.values(), ids=POWERS.keys())
def test_tape_over_tape_through_powers(f):
    def slope_sum(z):
        return np.sum(cr.gradient(f, z, engine="tape")[0])

    expected = fd_jacobian(slope_sum, X).reshape(X.shape)
    np.testing.assert_allclose(cr.gradient(slope_sum, X, engine="tape")[0], expected, rtol=1e-6, atol=1e-8)
