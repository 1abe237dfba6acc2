"""The array methods of NumPy scalars on nested values.

A full reduction returns a NumPy scalar, whose array methods (``s.reshape(1)``, ``s.sum()``,
``s.astype(...)``, ``s.T``) are ``np.generic``'s. Differentiated twice, that scalar is an engine's
number holding another engine's number (a tape's inside a tape's, a tape's inside a dual, a dual
inside a dual); each such method runs through the NumPy function it stands for
(``chainrules.core.twins.SCALAR_METHOD_TWINS``). Each nesting is checked against finite
differences of the inner derivative.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([0.7, -0.4, 1.2])
W = np.array([0.5, -1.5, 2.0])

# each builds a scalar from s = sum(x^3) through one of its methods (attributes)
METHODS = {
    "reshape": lambda s: np.sum(s.reshape(1) ** 2),
    "reshape_tuple": lambda s: np.sum(s.reshape((1, 1)) * s),
    "astype": lambda s: s.astype(np.float64) * s,
    "sum": lambda s: s.sum() * s,
    "mean": lambda s: s.mean() ** 2,
    "prod": lambda s: s.prod() * s,
    "max": lambda s: s.max() * s,
    "min": lambda s: s.min() * s,
    "var": lambda s: s.var() + s * s,
    "conj": lambda s: s.conj() * s,
    "conjugate": lambda s: s.conjugate() * s,
    "real": lambda s: s.real * s,
    "imag": lambda s: s.imag + s * s,
    "T": lambda s: s.T * s,
    "transpose": lambda s: s.transpose() * s,
    "ravel": lambda s: np.sum(s.ravel() ** 2),
    "flatten": lambda s: np.sum(s.flatten() ** 2),
    "squeeze": lambda s: s.squeeze() * s,
    "copy": lambda s: s.copy() * s,
    "clip": lambda s: s.clip(-10.0, 10.0) * s,
    "round": lambda s: s.round(3) + s * s,
    "cumsum": lambda s: np.sum(s.cumsum() * s),
    "repeat": lambda s: np.sum(s.repeat(2) * s),
    "take": lambda s: s.take(0) * s,
    "item": lambda s: s.item() * s,
    "item_index": lambda s: s.item(0) * s,
    "tolist": lambda s: s.tolist() * s,
}


def through(method):
    def g(x):
        return method(np.sum(x**3)) + np.sum(np.sin(x))

    return g


def expected_hessian(g):
    return fd_jacobian(lambda z: cr.gradient(g, z, engine="tape")[0], X)


def weighted_gradient(g, engine):
    return lambda x: np.sum(W * cr.gradient(g, x, engine=engine)[0])


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize(
    ("outer", "inner"), [("tape", "tape"), ("tape", "source"), ("source", "tape"), ("source", "source")]
)
def test_reverse_over_reverse(name, outer, inner):
    g = through(METHODS[name])
    got = cr.gradient(weighted_gradient(g, inner), X, engine=outer)[0]
    np.testing.assert_allclose(got, expected_hessian(g) @ W, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("engine", ["tape", "source"])
def test_forward_over_reverse(name, engine):
    g = through(METHODS[name])
    np.testing.assert_allclose(cr.hessian(g, X, engine=engine), expected_hessian(g), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", METHODS)
def test_forward_over_forward(name):
    g = through(METHODS[name])

    def forward_gradient(x):
        return cr.jacobian(g, x, mode="forward")

    np.testing.assert_allclose(
        cr.jacobian(forward_gradient, X, mode="forward"), expected_hessian(g), rtol=1e-6, atol=1e-7
    )


@pytest.mark.parametrize("name", METHODS)
def test_tape_over_forward(name):
    g = through(METHODS[name])

    def weighted_forward_gradient(x):
        return np.sum(W * cr.jacobian(g, x, mode="forward"))

    got = cr.gradient(weighted_forward_gradient, X, engine="tape")[0]
    np.testing.assert_allclose(got, expected_hessian(g) @ W, rtol=1e-6, atol=1e-7)


NESTINGS = {
    "tape_over_tape": lambda g: cr.gradient(weighted_gradient(g, "tape"), X, engine="tape"),
    "tape_over_source": lambda g: cr.gradient(weighted_gradient(g, "source"), X, engine="tape"),
    "source_over_tape": lambda g: cr.gradient(weighted_gradient(g, "tape"), X, engine="source"),
    "forward_over_tape": lambda g: cr.hessian(g, X, engine="tape"),
    "forward_over_source": lambda g: cr.hessian(g, X, engine="source"),
    "forward_over_forward": lambda g: cr.jacobian(lambda x: cr.jacobian(g, x, mode="forward"), X, mode="forward"),
}


@pytest.mark.parametrize("nesting", NESTINGS)
def test_a_method_without_a_rule_is_refused_with_its_name_and_line(nesting):
    def g(x):
        s = np.sum(x**3)
        return s * s + 0.0 * s.view(np.float64)  # no rule: the derivative would be dropped

    with pytest.raises(TypeError, match=r"view.*test_nested_scalar_methods.py:\d+"):
        NESTINGS[nesting](g)
