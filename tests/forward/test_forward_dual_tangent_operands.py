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


@pytest.mark.parametrize("zero", [cr.NoTangent(), cr.ZeroTangent()], ids=lambda z: type(z).__name__)
def test_a_dual_array_plus_or_times_a_zero_tangent(zero):
    d = Dual(np.array([1.5, 2.0]), np.array([1.0, 0.0]), Tag())
    assert d * zero is zero and zero * d is zero
    for total in (d + zero, zero + d, d - zero):
        np.testing.assert_array_equal(total.primal, [1.5, 2.0])
        np.testing.assert_array_equal(total.partials, [1.0, 0.0])


@pytest.mark.parametrize("lazy", [cr.Thunk, lambda value: cr.InplaceableThunk(lambda acc: acc + value(), value)])
def test_a_dual_times_a_thunk_is_the_dual_times_its_value(lazy):
    tag = Tag()
    x = Dual(np.array([0.1, 0.2]), np.array([1.0, 0.0]), tag)
    thunk = lazy(lambda: x * 2.0)  # a pullback's lazy cotangent, whose value is a dual of the same tag
    for product in (np.cos(x) * thunk, thunk * np.cos(x), np.multiply(np.cos(x), thunk)):
        assert isinstance(product.primal, np.ndarray)  # one dual, not a dual of a dual
        np.testing.assert_allclose(product.primal, 2 * np.cos(x.primal) * x.primal)
        np.testing.assert_allclose(product.partials, 2 * (np.cos(x.primal) - x.primal * np.sin(x.primal)) * [1, 0])


def test_forward_over_reverse_through_a_rule_whose_pullback_gets_a_thunk():
    def sine(x):
        return np.sin(x)

    @cr.rrule.register(sine)
    def rrule_sine(x):  # multiplies its cotangent as it comes: a thunk in the product's pullback
        return np.sin(x), lambda dy: (cr.NoTangent(), np.cos(x) * dy)

    def energy(x):
        return np.sum(sine(x) * x)

    x, v = np.array([0.1, 0.2]), np.array([1.0, 0.0])
    try:
        expected = fd_jacobian(lambda x: cr.gradient(energy, x)[0], x) @ v
        y, ydot = cr.jvp(lambda x: cr.gradient(energy, x)[0], (x,), (v,))
        assert type(y) is np.ndarray and type(ydot) is np.ndarray
        np.testing.assert_allclose(y, np.cos(x) * x + np.sin(x))
        np.testing.assert_allclose(ydot, expected, rtol=1e-6)
        np.testing.assert_allclose(cr.hessian(energy, x) @ v, expected, rtol=1e-6)
    finally:
        cr.rrule.unregister(sine)
