"""``cr.jacobian``, ``cr.jvp`` and ``cr.derivative`` inside a function that the source engine
differentiates (``chainrules.api``'s rules for them), and the same losses through the tape and
forward mode, against finite differences.

The pullback of J(x) along dJ is the gradient of ⟨dJ, J(x)⟩: one forward pass over the Jacobian
when the function captured nothing differentiated, else a sum of Hessian-vector products (one per
row or column of J, whichever is fewer) over the function's full pullback, which also gives what
it captured its cotangent.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.api as api
from chainrules.testing import fd_jacobian

X = np.array([0.3, -0.7, 1.1])
A = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4], [0.1, 0.2, 0.9]])
WIDE = np.array([[0.7, -0.2, 0.5], [0.1, 0.4, -0.3]])  # 2 outputs of 3 inputs
TALL = np.array([[0.7, -0.2], [0.1, 0.4], [0.6, -0.3], [0.2, 0.2]])  # 4 outputs of 2 inputs


def fd_gradient(f, x):
    return fd_jacobian(f, x).reshape(np.shape(x))


def field(v):
    return np.tanh(A @ v) + 0.5 * v**2


def squared_jacobian(mode: str, engine: str):
    def loss(x):
        return np.sum(cr.jacobian(field, x, mode=mode, engine=engine) ** 2)

    return loss


def log_volume(mode: str, engine: str):
    def loss(x):
        return np.linalg.slogdet(cr.jacobian(field, x, mode=mode, engine=engine))[1] + 0.1 * np.sum(x**2)

    return loss


def outer_gradient(loss, outer: str, x):
    if outer == "forward":
        return cr.jacobian(loss, x, mode="forward")
    return cr.gradient(loss, x, engine=outer)[0]


@pytest.mark.parametrize("make_loss", [squared_jacobian, log_volume], ids=["squared", "slogdet"])
@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("inner", ["source", "tape"])
@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_a_loss_of_a_jacobian(make_loss, mode, inner, outer):
    loss = make_loss(mode, inner)
    got = outer_gradient(loss, outer, X)
    np.testing.assert_allclose(got, fd_gradient(loss, X), rtol=1e-6, atol=1e-8)


def captured_loss(shape: str, mode: str):
    """A loss of the Jacobian of a function that captures the parameters W being differentiated."""

    def loss(W, x):
        z = x[:2] if shape == "tall" else x
        J = cr.jacobian(lambda v: np.sin(W @ v) * v[0], z, mode=mode)
        return np.sum(J**2) + np.sum(J)

    return loss


@pytest.mark.parametrize("shape", ["wide", "tall"])  # one product per row; one per column
@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("outer", ["source", "tape"])
def test_what_the_function_captured_gets_its_cotangent(shape, mode, outer):
    loss = captured_loss(shape, mode)
    W = WIDE if shape == "wide" else TALL
    dW, dx = cr.gradient(loss, W, X, engine=outer)
    np.testing.assert_allclose(dW, fd_gradient(lambda w: loss(w, X), W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, fd_gradient(lambda z: loss(W, z), X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make_loss", [squared_jacobian, log_volume], ids=["squared", "slogdet"])
def test_the_one_pass_and_the_products_agree(make_loss, monkeypatch):
    loss = make_loss("auto", "source")
    one_pass = cr.gradient(loss, X)[0]
    monkeypatch.setattr(api, "NESTED_JACOBIAN_BUDGET", 0)  # every Jacobian too large for one pass
    np.testing.assert_allclose(cr.gradient(loss, X)[0], one_pass, rtol=1e-12, atol=1e-13)


def test_options_given_positionally_and_a_scalar_jacobian():
    def loss(x):
        return np.sum(cr.jacobian(field, x, "reverse", "tape") ** 3)

    np.testing.assert_allclose(cr.gradient(loss, X)[0], fd_gradient(loss, X), rtol=1e-6, atol=1e-8)

    def scalar(t):
        return cr.jacobian(lambda s: np.sin(s) * s, t) * t

    got = cr.gradient(scalar, 0.4)[0]
    assert type(got) is float
    assert got == pytest.approx(fd_jacobian(scalar, 0.4).item(), rel=1e-7)


SHAPES = {
    "number_to_vector": (0.4, lambda s: np.stack([np.sin(s), s * s, np.exp(s)])),
    "vector_to_number": (X, lambda v: np.sum(np.sin(v) * v)),
    "matrix_to_vector": (np.outer([1.0, -0.5], X), lambda m: np.tanh(m) @ np.ones(3)),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobians_of_numbers_and_matrices(shape, mode):
    x, f = SHAPES[shape]

    def loss(z):
        return np.sum(np.cos(cr.jacobian(f, z, mode=mode)))

    got = cr.gradient(loss, x)[0]
    assert type(got) is type(x)
    np.testing.assert_allclose(got, fd_gradient(loss, x), rtol=1e-6, atol=1e-8)


def test_third_order_a_hessian_of_a_loss_of_a_jacobian():
    loss = log_volume("forward", "source")
    expected = fd_jacobian(lambda z: cr.gradient(loss, z)[0], X)
    np.testing.assert_allclose(cr.hessian(loss, X), expected, rtol=1e-6, atol=1e-7)


def test_a_structured_input_is_refused_with_the_line():
    def loss(x):
        J = cr.jacobian(lambda t: t[0] * t[1], (x[0], x[1]))
        return J[0] + J[1]

    with pytest.raises(cr.ChainRulesError, match="at a structured input has no rule") as info:
        cr.gradient(loss, X)
    assert "test_nested_jacobian_rule.py:" in str(info.value) and "<lambda>" in str(info.value)


# ----- structured outputs: a Tangent of blocks, one per output leaf --------------------------------

STRUCTURED = {  # the function, and a loss of its Jacobian
    "dict": (
        lambda v: {"square": v**2, "pair": np.stack([v[0] * v[1], v[1] * v[2]])},
        lambda J: np.sum(J["pair"] ** 2) + np.sum(np.sin(J["square"])),
    ),
    "tuple": (lambda v: (np.tanh(A @ v), v[0] * v[2]), lambda J: np.sum(J[0] ** 3) + np.sum(J[1] ** 2)),
    "nested": (  # an integer leaf (no derivative) and a number leaf
        lambda v: {"a": (v[0] * v[2], [np.sin(v)]), "n": 3, "b": v[1] ** 3},
        lambda J: np.sum(J["a"][0] ** 2) + np.sum(np.cos(J["a"][1][0])) + np.sum(J["b"] * X),
    ),
    "complex": (
        lambda v: {"c": np.exp(1j * v) * v[0], "r": v**2},
        lambda J: np.sum(np.abs(J["c"]) ** 2 + np.imag(J["c"])) + np.sum(J["r"] ** 2),
    ),
}


def structured_loss(outputs: str, mode: str):
    f, of_jacobian = STRUCTURED[outputs]
    return lambda x: of_jacobian(cr.jacobian(f, x, mode=mode))


@pytest.mark.parametrize("outputs", STRUCTURED)
@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_a_loss_of_the_jacobian_of_a_structured_output(outputs, mode, outer):
    loss = structured_loss(outputs, mode)
    np.testing.assert_allclose(outer_gradient(loss, outer, X), fd_gradient(loss, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("outputs", ["dict", "nested"])
@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_hessian_of_a_loss_of_the_jacobian_of_a_structured_output(outputs, mode, engine):
    loss = structured_loss(outputs, mode)
    expected = fd_jacobian(lambda z: cr.gradient(loss, z)[0], X)
    np.testing.assert_allclose(cr.hessian(loss, X, engine=engine), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_the_jacobian_of_a_structured_output_at_another_engines_values(mode, outer):
    f = STRUCTURED["dict"][0]

    def pair_block(x):  # (2, 3): the Jacobian of the "pair" leaf
        return cr.jacobian(f, x, mode=mode)["pair"]

    if outer == "forward":
        got = cr.jacobian(pair_block, X, mode="forward")
    else:
        got = cr.jacobian(pair_block, X, mode="reverse", engine=outer)
    np.testing.assert_allclose(got, fd_jacobian(pair_block, X).reshape(2, 3, 3), rtol=1e-6, atol=1e-8)


def captured_structured_loss(shape: str, mode: str):
    """A loss of the Jacobian of a structured output of a function capturing the parameters w:
    fewer output entries than inputs ("wide": one product per row) or more ("tall": per column)."""

    def loss(w, x):
        if shape == "wide":
            J = cr.jacobian(lambda v: {"s": np.sin(w[0] * v[0]) * v[1], "t": [(w[1] * v[2]) ** 2]}, x, mode=mode)
            return np.sum(J["s"] ** 2) + np.sum(J["t"][0] ** 3)
        J = cr.jacobian(lambda v: (np.sin(np.outer(w, v[:2])), v[0] * w), x, mode=mode)
        return np.sum(J[0] ** 2) + np.sum(J[1])

    return loss


@pytest.mark.parametrize("shape", ["wide", "tall"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("outer", ["source", "tape"])
def test_what_a_function_with_a_structured_output_captured_gets_its_cotangent(shape, mode, outer):
    loss = captured_structured_loss(shape, mode)
    w = np.array([0.5, -1.2, 0.8])
    dw, dx = cr.gradient(loss, w, X, engine=outer)
    np.testing.assert_allclose(dw, fd_gradient(lambda v: loss(v, X), w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, fd_gradient(lambda z: loss(w, z), X), rtol=1e-6, atol=1e-8)


# ----- jvp and derivative ------------------------------------------------------------------------


def directional(x):
    y, dy = cr.jvp(field, (x,), (np.cos(x),))  # the tangent depends on x too
    return np.sum(dy * y)


def curvature(t):
    return cr.derivative(lambda s: np.sin(s) * s**3, t) * t


@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_a_jvp_inside(outer):
    np.testing.assert_allclose(outer_gradient(directional, outer, X), fd_gradient(directional, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("outer", ["source", "tape", "forward"])
def test_a_derivative_inside(outer):
    got = cr.derivative(curvature, 0.6) if outer == "forward" else cr.gradient(curvature, 0.6, engine=outer)[0]
    assert type(got) is float
    assert got == pytest.approx(fd_jacobian(curvature, 0.6).item(), rel=1e-7)


def test_a_jvp_of_a_function_with_captures():
    def loss(W, x):
        y, dy = cr.jvp(lambda v: np.sin(W @ v), (x,), (x * x,))
        return np.sum(dy**2) + np.sum(y)

    dW, dx = cr.gradient(loss, WIDE, X)
    np.testing.assert_allclose(dW, fd_gradient(lambda w: loss(w, X), WIDE), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, fd_gradient(lambda z: loss(WIDE, z), X), rtol=1e-6, atol=1e-8)
