"""A method of a value being differentiated read as a value and called later (``m = v.sum``,
``m()``) inside a Hessian: the reverse engine runs the code on dual numbers, whose method is the
forward engine's bound method; its call goes through the method's rule on the dual."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.forward import Dual, Tag
from chainrules.reverse import source

X = np.array([0.3, -0.7, 1.2, 0.5])


def picked_method(x):
    v = x * x
    m = [v.sum, v.max, v.mean][0]
    return m() * 0.5 + np.sum(x**3)


def reshaped_by_a_method_value(w):
    m = w.reshape
    return np.sum(m((2, 2)) ** 3)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("f", [picked_method, reshaped_by_a_method_value])
def test_hessian_through_a_method_read_as_a_value(f, engine):
    h = 1e-5
    expected = np.array([(cr.gradient(f, X + h * e)[0] - cr.gradient(f, X - h * e)[0]) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(cr.hessian(f, X, engine=engine), expected, atol=1e-6)


@pytest.mark.parametrize("f", [picked_method, reshaped_by_a_method_value])
def test_hessian_at_a_structure_through_a_method_read_as_a_value(f):
    # (a structured input: the Hessian is forward mode over the source engine's gradient, with no other way)
    H = cr.hessian(lambda p: f(p["x"]), {"x": X})
    np.testing.assert_allclose(H["x"]["x"], cr.hessian(f, X), atol=1e-10)


@pytest.mark.parametrize("f", [picked_method, reshaped_by_a_method_value])
def test_the_source_engine_runs_a_method_value_of_dual_numbers(f):
    # (what a Hessian by the source engine runs: its gradient code on dual numbers, with no fallback)
    direction = np.array([1.0, 0.0, 0.0, 0.0])
    y, back = source.pullback_full(f, Dual(X, direction, Tag()))
    gradient = back(1.0)[1]
    np.testing.assert_allclose(gradient.primal, cr.gradient(f, X)[0])
    np.testing.assert_allclose(gradient.partials, cr.hessian(f, X) @ direction, atol=1e-10)
