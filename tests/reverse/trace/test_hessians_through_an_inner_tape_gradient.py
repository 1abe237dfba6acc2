"""A gradient taken by the tape inside a function that the source engine differentiates to second
order (a Hessian), where the inner function captures the variable being differentiated: the
Hessian-vector product behind the nested gradient's pullback needs the captured value's cotangent
(the mixed term), which the tape gives for a captured dual number as for a captured float."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


def squared_by_an_inner_tape(x):  # x**2
    return cr.gradient(lambda y: y * x**2, x, engine="tape")[0]


def refused_inner(x):  # 3 x**4: the inner function builds a plain class, which the source engine refuses
    def inner(y):
        class Box:
            pass

        box = Box()
        box.v = y**3 * x
        return box.v

    return cr.gradient(inner, x)[0] * x


def summed_by_an_inner_tape(x):
    return cr.gradient(lambda y: np.sum(y * x**2), x, engine="tape")[0].sum()


@pytest.mark.parametrize(
    "f, x, expected",
    [(squared_by_an_inner_tape, 1.3, 2.0), (refused_inner, 2.0, 144.0)],
    ids=["closure", "refused inner function"],
)
def test_the_hessian_has_the_mixed_term(f, x, expected):
    assert cr.hessian(f, x) == pytest.approx(expected)
    assert cr.hessian(f, x, engine="tape") == pytest.approx(expected)


def test_the_hessian_of_an_array_function_has_the_mixed_term():
    np.testing.assert_allclose(cr.hessian(summed_by_an_inner_tape, np.array([0.5, 1.5])), 2.0 * np.eye(2))
