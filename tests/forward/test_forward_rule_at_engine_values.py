"""``cr.jvp`` of a function with a forward rule at another engine's value (an outer tape's tracked
array or number): the value is a number or an array, not a structure, so the user's tangent is
brought to it as to a plain one, and the rule pushes it forward (reverse over forward)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_grads

X = np.array([0.1, 0.2])
V = np.array([1.0, 2.0])


@pytest.mark.parametrize("engine", ["tape", "source"])
def test_a_gradient_of_the_jvp_of_a_ruled_function_at_an_array(engine):
    def along_v(x):
        return np.sum(cr.jvp(np.sin, (x,), (V,))[1])  # sum(cos(x) v)

    np.testing.assert_allclose(cr.gradient(along_v, X, engine=engine)[0], -np.sin(X) * V, rtol=1e-12)


def test_a_gradient_of_the_jvp_of_a_ruled_function_at_a_number_on_the_tape():
    def along_two(x):
        return cr.jvp(np.sin, (x,), (2.0,))[1]

    assert cr.gradient(along_two, 0.3, engine="tape") == pytest.approx((-np.sin(0.3) * 2.0,), rel=1e-12)


def test_check_grads_reverse_over_forward_of_a_ruled_function():
    checks = check_grads(np.sin, (X,), nested_modes=("reverse",))
    assert "reverse[tape] order 2: jvp(numpy.sin)" in checks
