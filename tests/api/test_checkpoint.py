"""``cr.checkpoint``: reverse mode keeps a checkpointed call's arguments and recomputes the rest."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from benchmarks._common import peak_bytes
from chainrules.reverse import source

REVERSE = ("source", "tape")
RNG = np.random.default_rng(7)
W = 0.5 * RNG.standard_normal((3, 3))
X = RNG.standard_normal(3)
RUNS = []


@cr.checkpoint
def layer(h, W):
    RUNS.append("layer")
    for _ in range(3):
        h = np.tanh(W @ h) + 0.1 * h
    return h


def plain_layer(h, W):
    for _ in range(3):
        h = np.tanh(W @ h) + 0.1 * h
    return h


def deep(W, x, block=layer):
    for _ in range(4):
        x = block(x, W)
    return np.sum(x**2)


def closure_deep(W, x):
    def body(h):
        RUNS.append("body")
        return np.tanh(W @ h) * h

    step = cr.checkpoint(body)
    for _ in range(3):
        x = step(x)
    return np.sum(x**2)


def decorated_closure_deep(W, x):
    V = W + W.T

    @cr.checkpoint  # a loop body closing over the local `V`, checkpointed where it is defined
    def body(h):
        RUNS.append("body")
        return h + 0.5 * np.sin(V @ h)

    for _ in range(3):
        x = body(x)
    return np.sum(x**2)


def decorated_reference(W, x):
    for _ in range(3):
        x = x + 0.5 * np.sin((W + W.T) @ x)
    return np.sum(x**2)


def closure_reference(W, x):
    for _ in range(3):
        x = np.tanh(W @ x) * x
    return np.sum(x**2)


@pytest.mark.parametrize("engine", REVERSE)
def test_the_gradient_equals_the_unwrapped_functions_and_each_call_runs_twice(engine):
    RUNS.clear()
    got = cr.gradient(deep, W, X, engine=engine)
    assert RUNS == ["layer"] * 8  # four calls in the primal, four again in the pullback
    expected = cr.gradient(deep, W, X, plain_layer, engine=engine)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got[0], crt.fd_jacobian(lambda W: deep(W, X), W).reshape(3, 3), rtol=1e-7)


@pytest.mark.parametrize("engine", REVERSE)
def test_a_checkpointed_closure_gives_its_captured_values_their_cotangents(engine):
    RUNS.clear()
    got = cr.gradient(closure_deep, W, X, engine=engine)
    assert RUNS.count("body") == 6
    expected = cr.gradient(closure_reference, W, X)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)


def test_a_decorated_nested_segment_on_the_source_engine():
    RUNS.clear()
    y, back = source.pullback_full(decorated_closure_deep, W, X)  # (was refused: a decorated nested function)
    _, dW, dx = back(1.0)
    assert RUNS.count("body") == 6
    assert y == pytest.approx(decorated_reference(W, X))
    np.testing.assert_allclose(dW, crt.fd_jacobian(lambda W: decorated_reference(W, X), W).reshape(3, 3), rtol=1e-7)
    np.testing.assert_allclose(dx, crt.fd_jacobian(lambda x: decorated_reference(W, x), X).reshape(3), rtol=1e-7)
    for d, t in zip((dW, dx), cr.gradient(decorated_closure_deep, W, X, engine="tape")):
        np.testing.assert_allclose(d, t, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("engine", REVERSE)
def test_hessians_through_a_checkpoint(engine):
    H = cr.hessian(lambda x: deep(W, x), X, engine=engine)
    expected = crt.fd_jacobian(lambda x: cr.gradient(deep, W, x, plain_layer)[1], X).reshape(3, 3)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)


def test_forward_mode_runs_the_body_once():
    RUNS.clear()
    J = cr.jacobian(lambda x: layer(x, W), X, mode="forward")
    assert RUNS == ["layer"]
    np.testing.assert_allclose(J, crt.fd_jacobian(lambda x: plain_layer(x, W), X).reshape(3, 3), rtol=1e-7)


@pytest.mark.parametrize("engine", REVERSE)
def test_a_reverse_jacobian_through_a_checkpoint(engine):
    J = cr.jacobian(lambda x: layer(x, W), X, mode="reverse", engine=engine)
    np.testing.assert_allclose(J, cr.jacobian(lambda x: plain_layer(x, W), X, mode="forward"), rtol=1e-12)


def test_a_gradient_of_a_gradient_through_a_checkpoint():
    def slope(x):
        return np.sum(cr.gradient(deep, W, x)[1] ** 2)

    def reference(x):
        return np.sum(cr.gradient(deep, W, x, plain_layer)[1] ** 2)

    np.testing.assert_allclose(cr.gradient(slope, X)[0], crt.fd_jacobian(reference, X).reshape(3), rtol=1e-6)


def softmax(x):
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


@cr.rrule.register(softmax)
def rrule_softmax(x):
    y = softmax(x)

    def softmax_pullback(dy):
        dy = cr.unthunk(dy)
        return cr.NoTangent(), y * (dy - np.sum(dy * y))

    return y, softmax_pullback


@cr.checkpoint
def ruled_segment(u):
    return u + np.tanh(u) * softmax(u)


@pytest.mark.parametrize("engine", REVERSE)
def test_a_gradient_of_a_source_gradient_through_a_checkpoint_calling_a_ruled_function(engine):
    # the inner gradient's source engine recomputes the segment (calling softmax's rule), also
    # where an outer tape differentiates it
    def slope(x):
        return np.sum(cr.gradient(lambda z: np.sum(ruled_segment(z) ** 2), x)[0] ** 2)

    def reference(x):
        return np.sum(cr.gradient(lambda z: np.sum(ruled_segment.f(z) ** 2), x)[0] ** 2)

    expected = crt.fd_jacobian(reference, X).reshape(3)
    np.testing.assert_allclose(cr.gradient(slope, X, engine=engine)[0], expected, rtol=1e-6)


def test_the_rule_passes_the_rule_tests():
    crt.test_rrule(layer, X, W)


def test_keywords_pass_through():
    scaled = cr.checkpoint(lambda x, *, c: np.sin(x) * c)
    got = cr.gradient(lambda x: np.sum(scaled(x, c=3.0)), X)[0]
    np.testing.assert_allclose(got, 3.0 * np.cos(X), rtol=1e-14)


def _scaled_by_a_keyword(x, c):
    scaled = cr.checkpoint(lambda x, *, c: np.sin(x) * c)
    return np.sum(scaled(x, c=c))


def test_a_differentiated_keyword_only_argument_is_refused_at_the_users_call():
    # the tape's documented refusal names the call in the user's code, not the wrapper's own line
    line = _scaled_by_a_keyword.__code__.co_firstlineno + 2
    with pytest.raises(TypeError, match=rf"keyword argument 'c' \(at {re.escape(__file__)}:{line}\)"):
        cr.gradient(_scaled_by_a_keyword, X, 3.0, engine="tape")


def test_the_wrapper_looks_like_the_function_and_refuses_what_is_not_callable():
    assert layer.__name__ == "layer" and layer.__wrapped__ is layer.f
    assert repr(layer).startswith("checkpoint(") and "layer" in repr(layer)
    np.testing.assert_array_equal(layer(X, W), plain_layer(X, W))
    with pytest.raises(TypeError, match="not callable"):
        cr.checkpoint(3.0)


def _segment(h):
    for _ in range(20):
        h = h + 0.01 * np.sin(h)
    return h


@pytest.mark.parametrize("engine", REVERSE)
def test_the_reverse_pass_keeps_the_arguments_not_the_intermediates(engine):
    checkpointed = cr.checkpoint(_segment)
    x = RNG.standard_normal(20_000)  # 160 kB a value: what is kept dwarfs the bookkeeping

    def run(block):
        return cr.gradient(lambda x: np.sum(_chain(block, x)), x, engine=engine)

    kept_all = peak_bytes(lambda: run(_segment))
    kept_arguments = peak_bytes(lambda: run(checkpointed))
    # 200 steps keep two arrays each (sin and its product); ten checkpoints keep one each,
    # and the pullback of one segment (20 steps) at a time
    assert kept_arguments < kept_all / 4


def _chain(block, x):
    for _ in range(10):
        x = block(x)
    return x


class _Layer:
    def __init__(self, w):
        self.w = w

    @cr.checkpoint
    def __call__(self, h):
        return np.tanh(self.w * h)

    @cr.checkpoint
    def apply(self, h):
        return np.sin(self.w * h)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_checkpoint_decorates_methods(engine):
    layer = _Layer(2.0)
    assert layer(0.3) == np.tanh(0.6) and layer.apply(0.3) == np.sin(0.6)  # (a plain call binds self)

    def f(x):
        return layer(x) * layer.apply(x)

    expected = crt.fd_jacobian(f, 0.3)[0, 0]
    assert cr.gradient(f, 0.3, engine=engine)[0] == pytest.approx(expected, rel=1e-8)
    assert cr.derivative(f, 0.3) == pytest.approx(expected, rel=1e-8)


def test_a_tape_gradient_through_a_checkpoint_of_a_closure_over_a_captured_value():
    """The tape tracks the value the function captured, which the checkpointed closure reaches: the
    cotangent of the checkpoint's argument, computed with it, is computed while the tape sweeps (it
    had been left a thunk, computed after and refused: a value that escaped its differentiation)."""

    def make(x):
        def f(z):
            step = cr.checkpoint(lambda h: h * x)
            return np.sum(step(z) ** 2)

        return f

    got = cr.gradient(make(X), W[0], engine="tape")[0]
    np.testing.assert_allclose(got, crt.fd_jacobian(make(X), W[0]).reshape(3), rtol=1e-7)
    np.testing.assert_allclose(got, cr.gradient(make(X), W[0])[0], rtol=1e-13)


# A checkpoint that the function of a nested tape gradient or Hessian captures, inside a function the
# source engine differentiates: the source engine's values are plain in the inner tape, which must
# track what the wrapper's function captured (the outer variable, directly or through another
# closure) for the rule of cr.gradient to pull its cotangent back. It had been dropped: the wrong
# gradient and Hessian of the tenth corpus' checkpointed_layer_inside_a_tape_hessian.


def tape_gradient_of_a_checkpoint(x):
    layer = cr.checkpoint(lambda h: np.sin(h) * x)
    return np.sum(cr.gradient(lambda z: np.sum(layer(z) ** 2), x, engine="tape")[0] ** 2)


def tape_gradient_of_a_checkpoint_calling_a_closure(x):
    scale = lambda h: h * x  # noqa: E731
    layer = cr.checkpoint(lambda h: np.sin(scale(h)))
    return np.sum(cr.gradient(lambda z: np.sum(layer(z) ** 2), x, engine="tape")[0] ** 2)


def tape_gradient_of_a_decorated_nested_def(x):
    @cr.checkpoint
    def layer(h):
        return np.tanh(h * x) + x

    return np.sum(cr.gradient(lambda z: np.sum(layer(z) ** 3), x + 1.0, engine="tape")[0] * x)


def tape_hessian_of_a_checkpoint(x):
    layer = cr.checkpoint(lambda h: np.sin(h) * x)
    H = cr.hessian(lambda z: np.sum(layer(z) ** 2), x, engine="tape")
    return np.sum(H) + np.trace(H) ** 2


CAPTURED_CHECKPOINTS = [
    tape_gradient_of_a_checkpoint,
    tape_gradient_of_a_checkpoint_calling_a_closure,
    tape_gradient_of_a_decorated_nested_def,
    tape_hessian_of_a_checkpoint,
]


@pytest.mark.parametrize("program", CAPTURED_CHECKPOINTS, ids=lambda p: p.__name__)
def test_a_source_gradient_through_a_checkpoint_a_nested_tape_gradient_captures(program):
    got = cr.gradient(program, X)[0]
    np.testing.assert_allclose(got, crt.fd_jacobian(program, X).reshape(3), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, cr.gradient(program, X, engine="tape")[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("program", CAPTURED_CHECKPOINTS[1::2], ids=lambda p: p.__name__)
def test_a_source_hessian_through_a_checkpoint_a_nested_tape_gradient_captures(program):
    H = cr.hessian(program, X)
    np.testing.assert_allclose(H, cr.hessian(program, X, engine="tape"), rtol=1e-8, atol=1e-10)
    reference = crt.fd_jacobian(lambda x: cr.gradient(program, x, engine="tape")[0], X).reshape(3, 3)
    np.testing.assert_allclose(H, reference, rtol=1e-5, atol=1e-7)
