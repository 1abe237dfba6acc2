"""A Python float input gets a Python float derivative, from every engine and every nesting.

Second derivatives are computed in NumPy scalars (the forward pass of a Hessian-vector product,
the partials of NumPy's functions); what reaches the user is brought back to the input's type:
by the rules of nested ``gradient``, ``pullback``, ``jvp``, ``derivative`` and ``jacobian``
(their cotangents match their arguments, as every rule's do), and by ``cr.derivative`` and
``cr.hessian`` at a Python number. Each value is checked against finite differences too.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X0 = 1.5

FUNCTIONS = {
    "numpy": lambda x: x**3 + np.sin(x) * np.exp(0.3 * x),
    "polynomial": lambda x: 3.0 * x * x * x - x,
    "math": lambda x: math.sin(x) * x + math.exp(0.2 * x),  # seen by the source engine's rules only
}
# the engines that can run each function: the tape and forward mode see no math call
INNER = {"numpy": ("source", "tape", "forward"), "polynomial": ("source", "tape", "forward"), "math": ("source",)}


def first(f, inner: str):
    """x -> f'(x), by the ``inner`` engine."""
    if inner == "forward":
        return lambda x: cr.derivative(f, x)
    return lambda x: cr.gradient(f, x, engine=inner)[0]


def outer_derivative(g, outer: str, x):
    if outer == "forward":
        return cr.derivative(g, x)
    return cr.gradient(g, x, engine=outer)[0]


CASES = [
    (name, outer, inner)
    for name in FUNCTIONS
    for inner in INNER[name]
    for outer in ("source", "tape", "forward")
    if not (name == "math" and outer == "forward" and inner == "forward")
]


@pytest.mark.parametrize(("name", "outer", "inner"), CASES)
def test_second_derivative_of_a_float_is_a_float(name, outer, inner):
    f = FUNCTIONS[name]
    got = outer_derivative(first(f, inner), outer, X0)
    assert type(got) is float, type(got)
    expected = fd_jacobian(first(f, "source"), X0).item()
    assert got == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_at_a_float_is_a_float(name, engine):
    f = FUNCTIONS[name]
    if name == "math" and engine == "tape":
        with pytest.raises(TypeError, match=r"float\(\).*test_nested_float_types.py:\d+"):
            cr.hessian(f, X0, engine=engine)
        return
    H = cr.hessian(f, X0, engine=engine)
    assert type(H) is float
    assert H == pytest.approx(fd_jacobian(first(f, "source"), X0).item(), rel=1e-7)


ENGINES = ("source", "tape", "forward")


@pytest.mark.parametrize("engines", list(itertools.product(ENGINES, repeat=3)), ids="-".join)
def test_third_derivative_of_a_float_is_a_float(engines):
    """``engines``: innermost first."""
    g = FUNCTIONS["numpy"]
    for engine in engines:
        g = first(g, engine)
    got = g(X0)
    assert type(got) is float
    expected = fd_jacobian(first(first(FUNCTIONS["numpy"], "source"), "source"), X0).item()
    assert got == pytest.approx(expected, rel=1e-6)


def test_first_derivatives_and_other_inputs_keep_their_types():
    assert type(cr.derivative(np.sin, X0)) is float  # np.sin returns NumPy scalars
    assert type(cr.derivative(np.sin, np.float64(X0))) is np.float64
    assert type(cr.derivative(lambda x: x * x, np.float32(X0))) is np.float32
    H = cr.hessian(FUNCTIONS["numpy"], np.array(X0))
    assert type(H) is np.ndarray and H.shape == ()
    assert type(cr.hessian(FUNCTIONS["numpy"], 2)) is float  # an integer input gets a float derivative


def test_pullback_and_several_arguments_inside():
    def f(x, s):
        y, back = cr.pullback(lambda a, b: np.sin(a) * b**2, x, s)
        dx, ds = back(np.cos(x))
        return dx * ds + y

    for outer in ("source", "tape"):
        gx, gs = cr.gradient(f, X0, 0.7, engine=outer)
        assert type(gx) is float and type(gs) is float
        assert gx == pytest.approx(fd_jacobian(lambda z: f(z, 0.7), X0).item(), rel=1e-7)
        assert gs == pytest.approx(fd_jacobian(lambda z: f(X0, z), 0.7).item(), rel=1e-7)
