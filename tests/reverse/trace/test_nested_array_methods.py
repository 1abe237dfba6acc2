"""Array methods in a tape gradient inside a tape gradient: the inner tape records a method call
on the outer tape's tracked array, whose rule for arrays would call the method's descriptor on
it; the rule registered for tracked arrays runs the method's NumPy function instead."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([[0.5, -1.2], [2.0, 0.3]])

METHODS = {
    "copy": lambda y: y.copy(),
    "sum": lambda y: y.sum(axis=0),
    "reshape": lambda y: y.reshape(4),
    "astype": lambda y: y.astype(np.float64),
    "mean": lambda y: y.mean(0),
    "ravel": lambda y: y.ravel(),
    "flatten": lambda y: y.flatten(),
    "transpose": lambda y: y.transpose(),
    "max": lambda y: y.max(0),
    "cumsum": lambda y: y.cumsum(),
    "diagonal": lambda y: y.diagonal(),
    "prod": lambda y: y.prod(0),
    "trace": lambda y: y.trace(),
    "take": lambda y: y.take([0, 3]),
    "swapaxes": lambda y: y.swapaxes(0, 1),
    "compress": lambda y: y.compress([True, False], axis=1),
}


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_tape_over_tape_through_an_array_method(method):
    def f(y):
        return np.sum(method(y) ** 3)

    def slope_sum(z):
        return np.sum(cr.gradient(f, z, engine="tape")[0])

    expected = fd_jacobian(slope_sum, X).reshape(X.shape)
    np.testing.assert_allclose(cr.gradient(slope_sum, X, engine="tape")[0], expected, rtol=1e-6, atol=1e-8)
