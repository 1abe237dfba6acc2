"""Nested differentiation: tags keep the traces apart, and pullbacks run on tracked values."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.reverse.trace import pullback_full


def test_gradient_inside_a_traced_function():
    # d/dx [x * d/dy (x y)] = d/dx x^2 = 2x
    def f(x):
        return x * cr.gradient(lambda y: x * y, 1.0, engine="tape")[0]

    assert cr.gradient(f, 3.0, engine="tape") == (6.0,)


def test_no_perturbation_confusion():
    # Siskind and Pearlmutter's example: d/dx [x * d/dy (x + y)] = 1; confusing the two
    # differentiations gives 2
    def f(x):
        return x * cr.gradient(lambda y: x + y, 1.0, engine="tape")[0]

    assert cr.gradient(f, 5.0, engine="tape") == (1.0,)


def test_second_derivative():
    def df(x):
        return cr.gradient(lambda t: t * t * t - 2.0 * t, x, engine="tape")[0]

    assert cr.gradient(df, 2.0, engine="tape") == (12.0,)  # 6x


def test_third_derivative():
    def d(f):
        return lambda x: cr.gradient(f, x, engine="tape")[0]

    assert d(d(d(lambda x: x * x * x * x)))(2.0) == pytest.approx(48.0)  # 24x


def test_mixed_partial_of_arrays():
    # d/dw sum(w * d/dx sum(w x^2)) = d/dw sum(w * 2 w x) = 4 w x
    def outer(w, x):
        _, back = cr.pullback(lambda x: w * x * x, x, engine="tape")
        (dx,) = back(np.ones(x.shape))
        return w * dx

    w, x = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    _, back = pullback_full(outer, w, x)
    _, dw, dx = back(np.ones(2))
    np.testing.assert_allclose(dw, 4.0 * w * x)
    np.testing.assert_allclose(dx, 2.0 * w * w)


def test_inner_values_do_not_leak_out():
    # the inner differentiation is finished when the outer one sweeps
    def f(x):
        y, back = cr.pullback(lambda t: t * x, 2.0, engine="tape")
        return y + back(1.0)[0]

    assert cr.gradient(f, 3.0, engine="tape") == (3.0,)  # y = 2x, dt = x


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda a, b: a / (a + b * b), (2.0, 3.0)),
        (lambda x: x * x * x - 2.0 * x, (1.5,)),
        (lambda x, y: (x * y + 1.0) / (x - y * y), (2.0, 0.5)),
        (lambda x: np.sin(np.cos(x)), (0.9,)),
        (lambda x: np.log(1.0 + np.exp(x)), (0.3,)),
        (lambda x, w: np.tanh(w * x) * x, (np.array([0.5, -1.0]), np.array([2.0, 0.3]))),
        (lambda x: np.sum(np.exp(x) * x), (np.array([0.1, 0.2, -0.4]),)),
    ],
    ids=["seed_quotient", "cubic", "rational", "sin_of_cos", "softplus", "array_tanh", "array_sum_exp"],
)
def test_reverse_over_reverse_matches_finite_differences(f, args):
    done = crt.check_grads(f, args, modes=("reverse",), order=2, engine="tape", nested_modes=("reverse",))
    assert any("order 2" in d for d in done), done


def test_df_holds_a_closures_captures_and_a_methods_object():
    # as the source engine's df: by captured name for a closure, the object's tangent for a method
    def make(w):
        return lambda y: np.sum(w * y)

    class Model:
        def __init__(self):
            self.w = np.array([1.0, 2.0])

        def loss(self, y):
            return np.sum(self.w * y * y)

    y = np.array([0.3, 0.7])
    for f, dw in ((make(np.array([0.5, -1.0])), y), (Model().loss, y * y)):  # d/dw of w·y and of w·y²
        df = pullback_full(f, y)[1](1.0)[0]
        assert type(df) is cr.Tangent[type(f.__self__) if hasattr(f, "__self__") else type(f)]
        np.testing.assert_allclose(cr.unthunk(df.w), dw)


def test_source_engine_over_a_tape_gradient_of_a_closure():
    # the rule for gradient reaches x only through the tape's df: a closure's capture must be in it
    def outer(x):
        return x * cr.gradient(lambda y: np.sin(x * y), 0.5, engine="tape")[0]

    expected = crt.fd_jacobian(outer, 0.8)
    np.testing.assert_allclose(cr.gradient(outer, 0.8, engine="source")[0], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.gradient(outer, 0.8, engine="tape")[0], expected, rtol=1e-6)


def test_a_closure_that_rebinds_what_it_captured_still_writes_the_callers_cell():
    calls, x = 0.0, 0.8

    def inner(y):
        nonlocal calls
        calls += 1.0
        return x * y * y

    assert pullback_full(inner, 0.5)[1](1.0) == (cr.Tangent[type(inner)](x=0.25), 0.8)
    assert calls == 1.0


@pytest.mark.parametrize(
    "inner",
    [
        lambda x: x[0, 0] * x[1, 2],  # integer indices: their cotangents scatter an outer tape's numbers
        lambda x: np.sum(np.sin(x) ** 2 * x[0]),
        lambda x: np.sum(x[1, np.array([0, 2, 0])] ** 3),  # a fancy index that repeats a position
        lambda x: np.sum(x[:, 1] * x[0, 1:]),
    ],
)
def test_tape_over_tape_through_indexing(inner):
    def outer(x):
        return np.sum(cr.gradient(inner, x, engine="tape")[0] ** 2)

    x = np.array([[0.3, 0.7, 1.1], [0.2, -0.4, 0.9]])
    expected = crt.fd_jacobian(outer, x).reshape(x.shape)
    np.testing.assert_allclose(cr.gradient(outer, x, engine="tape")[0], expected, rtol=1e-6, atol=1e-8)


def test_a_closures_tangent_is_computed_only_when_asked_for():
    """The cotangents of a closure's captured arrays are thunks until read (a Jacobian never reads
    them: the batch of W's cotangents here would be an M×M×N array), and right when read."""
    from chainrules.core import basis_seed
    from chainrules.reverse.trace import pullback_full

    rng = np.random.default_rng(7)
    W, b, x = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal(3)

    def f(x):
        return (W @ x + b) ** 2

    _, back = pullback_full(f, x)
    df, dx = back(basis_seed(4, (4,), 0, x.dtype))
    assert isinstance(df.W, cr.Thunk) and isinstance(df.b, cr.Thunk)
    z = W @ x + b
    np.testing.assert_allclose(cr.unthunk(dx), 2 * z[:, None] * W)
    np.testing.assert_allclose(cr.unthunk(df.b), np.diag(2 * z))
    np.testing.assert_allclose(cr.unthunk(df.W), np.einsum("ij,k->ijk", np.diag(2 * z), x))
    df1, _ = back(np.ones(4))
    np.testing.assert_allclose(cr.unthunk(df1.W), np.outer(2 * z, x))


def with_a_missing_reading(x):
    reading = None
    try:
        return x * x + reading
    except TypeError:  # Python's: unsupported operand type(s) for +
        return x**3


@pytest.mark.parametrize("inner", ["tape", "source"])
def test_an_unsupported_operand_raises_pythons_type_error_at_every_order(inner):
    """``x + None`` on an outer tape's value inside an inner differentiation raises the TypeError
    Python raises (it recursed through the engine's own operator), which the function catches."""
    second = cr.gradient(lambda z: cr.gradient(with_a_missing_reading, z, engine=inner)[0], 1.5, engine="tape")
    assert second == (pytest.approx(9.0),)
