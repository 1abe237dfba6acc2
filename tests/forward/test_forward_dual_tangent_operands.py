"""Dual numbers in arithmetic with the tangent zeros (``NoTangent()``, ``ZeroTangent()``).

Forward over reverse runs a reverse engine's cotangent code on duals, where a rule's zero for
an index or a count meets a dual cotangent (``dk + dk_1`` for an integer ``k`` used both
arithmetically and as an index): the zero's own operators answer, as for a float.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.forward import Dual, Tag
from chainrules.testing import fd_jacobian


@pytest.mark.parametrize("zero", [cr.NoTangent(), cr.ZeroTangent()], ids=lambda z: type(z).__name__)
def test_a_dual_plus_or_times_a_zero_tangent(zero):
    d = Dual(1.5, 1.0, Tag())
    for total in (d + zero, zero + d, d - zero):
        assert (total.primal, total.partials) == (1.5, 1.0)
    assert (zero - d).primal == -1.5
    assert d * zero is zero and zero * d is zero


def weighted_entry(v, k=1):
    return np.sin(v[k]) * (k + 1)  # k indexes and multiplies


def sum_of_terms(x):
    return sum(weighted_entry(x, k) for k in range(3))


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_a_function_using_an_integer_as_index_and_factor(engine):
    x = np.array([0.3, 0.1, -0.2])
    expected = fd_jacobian(lambda z: cr.gradient(sum_of_terms, z)[0], x)
    np.testing.assert_allclose(cr.hessian(sum_of_terms, x, engine=engine), expected, rtol=1e-7, atol=1e-9)
