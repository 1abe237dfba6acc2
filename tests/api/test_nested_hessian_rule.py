"""``cr.hessian`` inside a function being differentiated: the source engine uses its rule (the
pullback along dH is ∇_x ⟨dH, H(x)⟩, a contraction of the third derivative), the tape runs through
it; both against finite differences of the function."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.3, 0.7, -0.4])
W = np.array([1.0, 2.0, 0.5])
ENGINES = ["source", "tape"]


def quartic(x):
    return np.sum(x**3 * x[0]) + np.sum(np.sin(x) * x[1] ** 2)


def trace_of_hessian(x):
    return np.trace(cr.hessian(quartic, x))


def squared_hessian(x):
    return np.sum(cr.hessian(quartic, x) ** 2)


def weighted_hessian(x):
    return np.sum(np.arange(9.0).reshape(3, 3) * cr.hessian(quartic, x))


def captured_weights(w):
    # the function whose Hessian is taken captures what is differentiated
    return np.sum(cr.hessian(lambda z: np.sum(w * z**4) + w[0] * z[1] * z[2] ** 2, X) ** 2)


def scalar_hessian(x):
    return cr.hessian(lambda t: t**4 * x[0] + np.sin(t) * x[1], x[2]) * x[0]


def inner_tape_hessian(x):
    return np.sum(cr.hessian(quartic, x, engine="tape") ** 2)


LOSSES = [
    (trace_of_hessian, X),
    (squared_hessian, X),
    (weighted_hessian, X),
    (captured_weights, W),
    (scalar_hessian, X),
    (inner_tape_hessian, X),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("loss", "at"), LOSSES, ids=[loss.__name__ for loss, _ in LOSSES])
def test_gradient_of_a_function_of_a_hessian(loss, at, engine):
    got = cr.gradient(loss, at, engine=engine)[0]
    assert type(got) is np.ndarray and got.dtype == np.float64
    np.testing.assert_allclose(got, crt.fd_jacobian(loss, at).reshape(at.shape), rtol=1e-6, atol=1e-8)


def test_the_rule_agrees_with_the_tape_running_through_hessian():
    for loss, at in LOSSES:
        source, tape = (cr.gradient(loss, at, engine=engine)[0] for engine in ENGINES)
        np.testing.assert_allclose(source, tape, rtol=1e-10, atol=1e-12)


def test_a_hessian_of_a_function_of_a_hessian():
    # forward mode over the source engine over the rule's pullback: fourth derivatives of `quartic`
    H = cr.hessian(trace_of_hessian, X)
    expected = crt.fd_jacobian(lambda z: cr.gradient(trace_of_hessian, z)[0], X).reshape(3, 3)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)


def test_float32_is_kept():
    x32 = X.astype(np.float32)
    got = cr.gradient(squared_hessian, x32)[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, cr.gradient(squared_hessian, X)[0], rtol=1e-4, atol=1e-4)


def test_the_input_is_left_as_it_was():
    x = X.copy()
    cr.gradient(squared_hessian, x)
    np.testing.assert_array_equal(x, X)


def fills_a_buffer(x):
    out = np.zeros(x.size)
    for i in range(x.size):
        out[i] = x[i] ** 3 * x[0]  # the line of the refused write
    return np.sum(out)


def test_a_third_derivative_the_engines_cannot_take_is_refused_with_both_lines():
    def loss(x):
        return np.trace(cr.hessian(fills_a_buffer, x))  # the line of the call

    call = loss.__code__.co_firstlineno + 1
    write = fills_a_buffer.__code__.co_firstlineno + 3
    with pytest.raises(TypeError) as info:
        cr.gradient(loss, X)
    message = str(info.value)
    assert re.search(rf"derivative of cr\.hessian\(fills_a_buffer, x\) at {re.escape(__file__)}:{call}", message)
    assert f"{__file__}:{write}" in message


def test_a_structured_input_is_refused_with_the_line():
    def loss(x):
        return np.sum(cr.hessian(lambda t: t[0] ** 2 * t[1], (x[0], x[1])).backing[0].backing[0])

    line = loss.__code__.co_firstlineno + 1
    with pytest.raises(cr.ChainRulesError, match=rf"cr\.hessian\(.*at {re.escape(__file__)}:{line}.*structured"):
        cr.gradient(loss, X)
