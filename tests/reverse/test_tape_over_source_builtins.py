"""Reverse over reverse with the tape outside and the source engine inside, through the ``math``
module and the number builtins: the inner engine calls their rules with the tape's tracked
numbers, which run the rules of their NumPy twins (``math.sin`` -> ``np.sin``), as dual numbers
do in a Hessian."""

from __future__ import annotations

import math

import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian


def scalar_model(y):
    return math.sin(y) * math.exp(y) + math.sqrt(1 + y * y) + abs(y) ** 2 + pow(y, 3) + float(y) * math.log1p(y)


def two_arguments(y):
    return math.atan2(y, 2.0) + math.hypot(y, 1.5) * math.pow(y, 2.5)


@pytest.mark.parametrize("f", [scalar_model, two_arguments], ids=lambda f: f.__name__)
@pytest.mark.parametrize("outer", ["tape", "source"])
def test_second_derivative_through_math_functions(f, outer):
    def slope(x):
        return cr.gradient(f, x)[0]

    (curvature,) = cr.gradient(slope, 0.7, engine=outer)
    assert curvature == pytest.approx(fd_jacobian(slope, 0.7)[0, 0], rel=1e-7)
    assert cr.hessian(f, 0.7) == pytest.approx(curvature, rel=1e-10)
