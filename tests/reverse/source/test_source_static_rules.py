"""The source engine calls a rule directly where it knows the rule when it specializes: a
callee registered for all arguments (no typed rules) takes its rule whatever the argument types,
operators and keyword calls included; ``out=``, ``**`` and callees with typed rules keep the
dispatcher, and registering a rule later makes the specialization again."""

from __future__ import annotations

import operator
import types

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.active import ActiveValue
from chainrules.reverse import source

RNG = np.random.default_rng(5)


def layer(W, b):
    h = np.tanh(W * 2.0 + b)
    m = np.max(h, axis=0, keepdims=True)
    return np.sum((h - m) * W) / W.shape[0]


def test_operators_and_keyword_calls_call_their_rules_directly():
    W, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    text = source.show(layer, W, b)
    for direct in ("rrule_mul(", "rrule_add(", "rrule_tanh(", "rrule_max(h, axis=0, keepdims=True)", "rrule_sub("):
        assert direct in text
    assert "pullback(operator.add" not in text and "pullback(np.max" not in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_calls_give_the_dispatchers_gradient(dtype):
    W, b = RNG.standard_normal((3, 4)).astype(dtype), RNG.standard_normal(4).astype(dtype)
    got = cr.gradient(layer, W, b, engine="source")
    want = cr.gradient(layer, W, b, engine="tape")  # every call through the rule lookup
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=1e-5)
    cr.testing.check_grads(layer, (W.astype(np.float64), b.astype(np.float64)))


def literal_options(x):
    z = np.mean(x * x, axis=-1, keepdims=True)
    return np.sum(np.exp(x - z), axis=(0, 1)) + np.sum(np.transpose(x, axes=(1, 0)), axis=(-1,))


def test_literal_keyword_values_are_constants_of_a_direct_call():
    # a signed number or a tuple of literals is written in the generated code as it is, so the
    # call keeps its rule (and takes a batch of cotangents) instead of the packed f(*t, **d) form
    x = RNG.standard_normal((3, 4))
    text = source.show(literal_options, x)
    for direct in ("axis=(-1), keepdims=True)", "axis=(0, 1))", "axes=(1, 0))", "axis=(-1,))"):
        assert direct in text
    assert "pullback_apply" not in text
    cr.testing.check_grads(literal_options, (x,), modes=("reverse",))
    _, back = source.pullback_full(lambda x: literal_options(x) * 2.0, x)
    assert getattr(back, "batched", False)
    J = cr.jacobian(lambda x: literal_options(x.reshape(3, 4)) * 2.0, x.ravel(), mode="reverse")
    np.testing.assert_allclose(
        J, cr.jacobian(lambda x: literal_options(x.reshape(3, 4)) * 2.0, x.ravel(), mode="forward"), rtol=1e-12
    )


def summed_with_out_none(x):
    return np.sum(np.sum(x * 2.0, axis=0, out=None))


def test_out_keeps_the_dispatcher():
    x = RNG.standard_normal((2, 3))
    assert "pullback(np.sum, y_1, axis=0, out=None)" in source.show(summed_with_out_none, x)
    np.testing.assert_array_equal(cr.gradient(summed_with_out_none, x)[0], np.full((2, 3), 2.0))


def scale(x):
    return 3.0 * x


@cr.rrule.register(scale)
def rrule_scale(x):
    def scale_pullback(dy):
        return cr.NoTangent(), 100.0 * dy  # not 3 dy: shows which rule ran

    return scale(x), scale_pullback


# calls of a module's attributes are resolved when the engine specializes (user globals are not)
ops = types.ModuleType("ops")
ops.scale = scale


def scaled_sum(x):
    return np.sum(ops.scale(x + 1.0))


def test_a_rule_registered_later_for_some_types_is_used():
    x = RNG.standard_normal(3)
    assert "rrule_scale(" in source.show(scaled_sum, x)
    np.testing.assert_array_equal(cr.gradient(scaled_sum, x)[0], np.full(3, 100.0))

    @cr.rrule.register(scale, np.ndarray)
    def rrule_scale_array(x):
        def scale_array_pullback(dy):
            return cr.NoTangent(), -1.0 * dy

        return scale(x), scale_array_pullback

    # typed rules now: the call goes through the dispatcher, which picks by the run-time type
    assert "rrule_scale(" not in source.show(scaled_sum, x)
    np.testing.assert_array_equal(cr.gradient(scaled_sum, x)[0], np.full(3, -1.0))
    assert cr.gradient(lambda v: scale(v) * 1.0, 2.0) == (100.0,)  # a float still takes the untyped rule


def test_rules_for_dual_numbers_leave_plain_arguments_direct():
    # forward over reverse registers rules for the forward engine's dual numbers (operator.add
    # among them); plain arrays never select those, and dual numbers still do
    x = RNG.standard_normal(3)
    H = cr.hessian(lambda v: np.sum(np.tanh(v * v + v)), x)
    t = np.tanh(x * x + x)
    d1, d2 = 1 - t * t, -2 * t * (1 - t * t)
    np.testing.assert_allclose(H, np.diag(d2 * (2 * x + 1) ** 2 + d1 * 2), rtol=1e-10)
    typed = cr.rrule._entries_for(operator.add, False).typed
    assert any(any(issubclass(c, ActiveValue) for c in types) for types, _ in typed)
    text = source.show(layer, RNG.standard_normal((3, 4)), RNG.standard_normal(4))
    assert "rrule_add(" in text and "rrule_mul(" in text


def affine_of(W, b):
    def affine(x):
        return np.sum(np.abs(W @ x + b) ** 2) / x.shape[0]

    return affine


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_a_captured_array_takes_the_rule_directly_and_the_same_gradient(dtype):
    W = RNG.standard_normal((3, 4)).astype(dtype)
    b, x = RNG.standard_normal(3).astype(dtype), RNG.standard_normal(4).astype(dtype)
    f = affine_of(W, b)
    text = source.show(f, x)
    assert "rrule_operator_matmul(W, x)" in text and "pullback(operator" not in text
    got = cr.gradient(f, x, engine="source")[0]
    want = cr.gradient(f, x, engine="tape")[0]
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if dtype is np.float64:
        cr.testing.check_grads(f, (x,))


class Marked(np.ndarray):
    """An ndarray subclass with a matmul rule of its own (typed on it)."""


def test_a_captured_array_of_another_class_respecializes_and_takes_its_typed_rule():
    calls = []

    @cr.rrule.register(operator.matmul, Marked, object)
    def rrule_marked_matmul(A, x):
        calls.append(type(A))
        y, back = cr.rrule(operator.matmul, A.view(np.ndarray), x)
        return y, back

    try:
        W, b, x = RNG.standard_normal((3, 4)), RNG.standard_normal(3), RNG.standard_normal(4)
        plain = cr.gradient(affine_of(W, b), x)[0]
        assert calls == []
        marked = cr.gradient(affine_of(W.view(Marked), b), x)[0]
        assert calls == [Marked]
        np.testing.assert_allclose(marked, plain)
    finally:
        cr.rrule.unregister(operator.matmul, Marked, object)


def shape_scaled(x):
    n, m = x.shape
    return np.sum(x * x.ndim) / (x.shape[0] * x.size) + n * m


def test_an_arrays_shape_ndim_and_size_are_plain_values():
    x = RNG.standard_normal((2, 3))
    text = source.show(shape_scaled, x)
    assert "pullback(getattr" not in text and "pullback(operator.getitem" not in text
    assert "= x.shape" in text and "= x.ndim" in text and "= x.size" in text
    got = cr.gradient(shape_scaled, x)[0]
    np.testing.assert_allclose(got, np.full((2, 3), 2.0 / 12.0))
    np.testing.assert_allclose(got, cr.gradient(shape_scaled, x, engine="tape")[0])
    cr.testing.check_grads(shape_scaled, (x,))


def built_from_metadata(x):
    ramp = np.arange(x.size) / x.size
    eye = np.eye(x.shape[0])
    return np.sum(x.ravel() * ramp) + np.sum(eye @ x) + np.sum(np.full(x.shape, 2.0) * x.astype(x.dtype) ** 2)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_library_calls_on_an_arrays_shape_size_and_dtype(engine):
    x = RNG.standard_normal((3, 3))
    got = cr.gradient(built_from_metadata, x, engine=engine)[0]
    np.testing.assert_allclose(got, np.arange(9.0).reshape(3, 3) / 9.0 + 1.0 + 4.0 * x)
    cr.testing.check_grads(built_from_metadata, (x,))
