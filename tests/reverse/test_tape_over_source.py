"""Reverse over reverse with the tape outside and the source engine inside.

The inner source-engine gradient runs on the tape's tracked arrays: indexing, attributes and
array methods on them go through the rules of the arrays inside (``chainrules.core.twins``),
recorded on the outer tape. Checked against finite differences of the inner gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.trace import deep_primal
from chainrules.testing import fd_jacobian

RNG = np.random.default_rng(11)
X = RNG.normal(size=(2, 3))
W = RNG.normal(size=(2, 3))

INNER = {
    "indexing": lambda y: y[0, 0] * y[1, 2] + y[1][1] ** 3,
    "slicing": lambda y: (y[:, 1:] ** 2).sum() * y[0, 0],
    "sum_method": lambda y: (y * y * y).sum(),
    "sum_axis_method": lambda y: (y.sum(axis=0) ** 2).sum(),
    "transpose_attribute": lambda y: (y.T @ y).sum() * y[0, 1],
    "shape_attribute": lambda y: (y**2).sum() * y.shape[0] + y[1, 1] * y.ndim,
    "reshape_dot_methods": lambda y: y.reshape(3, 2).dot(y).trace() ** 2,
    "numpy_functions": lambda y: np.sum(np.sin(y) * y),
    "trace_squared": lambda y: np.trace(y.T @ y) ** 2,
}


@pytest.mark.parametrize("inner", INNER.values(), ids=INNER.keys())
def test_tape_gradient_of_a_source_gradient_matches_finite_differences(inner):
    def weighted_inner_gradient(x):
        return (cr.gradient(inner, x, engine="source")[0] * W).sum()

    outer = cr.gradient(weighted_inner_gradient, X, engine="tape")[0]
    hessian_times_w = fd_jacobian(weighted_inner_gradient, X).reshape(X.shape)
    np.testing.assert_allclose(outer, hessian_times_w, rtol=1e-6, atol=1e-6)


def test_the_example_of_a_product_of_two_entries():
    x0 = np.array([1.0, 2.0])
    g = cr.gradient(lambda x: cr.gradient(lambda y: y[0] * y[1], x)[0].sum(), x0, engine="tape")[0]
    np.testing.assert_allclose(g, [1.0, 1.0])


def scaled_by_a_constant_twice(c, x):
    return np.sum(c * x) * x + np.polyval(c, x) * x  # x's cotangent: two terms, a rule's lazily


def test_a_lazy_cotangent_added_to_a_tracked_number_is_its_value():
    """The inner pullback adds two cotangents of the constant ``x`` (``dx + dx_1``, one a rule's
    ``Thunk``): on the outer tape, an operator with a lazy operand computes with its value."""
    c = np.array([0.5, -0.2, 0.3])

    def inner_in_both(z):
        dc, dx = cr.gradient(scaled_by_a_constant_twice, z[:3], z[3])
        return np.sum(dc * W[0]) + dx

    z = np.append(c, 0.7)
    outer = cr.gradient(inner_in_both, z, engine="tape")[0]
    np.testing.assert_allclose(outer, fd_jacobian(inner_in_both, z).ravel(), rtol=1e-6, atol=1e-8)
    assert cr.gradient(lambda k: np.sum(cr.gradient(scaled_by_a_constant_twice, k, 0.7)[0]), c, engine="tape") == (
        cr.ZeroTangent(),
    )


def cubes_through_a_buffer(x):  # = sum(x ** 3)
    out = np.zeros_like(x)
    out[:] = x * x
    out[:] *= x
    return np.sum(out)


def products_through_a_buffer(x):
    F = np.zeros_like(x)
    F[:] = x + 1.0
    for i in range(1, len(x)):
        F[i] = F[i] * F[0]
    shifted = np.zeros_like(x)
    shifted[:] = F
    shifted[1:] = shifted[1:] * shifted[:-1]
    return np.sum(F * shifted)


@pytest.mark.parametrize("f", [cubes_through_a_buffer, products_through_a_buffer], ids=lambda f: f.__name__)
def test_reads_of_a_buffer_written_in_the_same_statement_under_an_outer_tape(f):
    """The source engine's pullbacks keep the values an element read had (a copy of the tape's
    read, which the tape would rebind to the values written after it)."""
    x = np.array([0.5, -1.0, 0.8])
    inner = []

    def slope(z):
        g = cr.gradient(f, z)[0]
        inner.append(g)
        return np.sum(g * W[0])

    outer = cr.gradient(slope, x, engine="tape")[0]
    np.testing.assert_allclose(deep_primal(inner[0]), fd_jacobian(f, x).ravel(), rtol=1e-7)  # its values
    np.testing.assert_allclose(outer, fd_jacobian(slope, x).ravel(), rtol=1e-6, atol=1e-8)


def cube_root(x):
    return np.cbrt(x)


@cr.frule.register(cube_root)
def _frule_cube_root(tangents, x):
    y = np.cbrt(x)
    return y, cr.unthunk(tangents[1]) / (3.0 * y**2)


def test_a_function_with_a_forward_rule_only_has_its_body_differentiated_on_tracked_values():
    """The tape has no reverse rule to run it by (``call_by_rule`` declines): the source engine
    differentiates its body, whose operations the outer tape records."""

    def inner_gradient_sum(z):
        return np.sum(cr.gradient(lambda x: np.sum(cube_root(x) * x), z, engine="source")[0])

    x = np.array([1.5, 2.0, 3.5])
    outer = cr.gradient(inner_gradient_sum, x, engine="tape")[0]
    np.testing.assert_allclose(outer, fd_jacobian(inner_gradient_sum, x).ravel(), rtol=1e-6)
