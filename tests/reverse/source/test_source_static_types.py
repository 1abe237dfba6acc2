"""The source engine knows the dtype and dimensions of what operators and ufuncs compute from
arrays of known types (its arguments and captured arrays): rules are called directly further
down the function, and ``y[i]`` on a computed array takes the inline indexing partial. A type it
cannot fix (a scalar that may be an int or a numpy.float64) stays open, and captured arrays of
another dtype make the specialization again."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source

RNG = np.random.default_rng(11)


def make_layer(X):
    def layer(W, b, V):
        h = np.tanh(X @ W + b)  # X is captured: its dtype and dimensions are specialized on
        return np.sum((h @ V) ** 2)

    return layer


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_chain_of_operators_and_ufuncs_keeps_its_types(dtype):
    X = RNG.standard_normal((5, 3)).astype(dtype)
    W, b, V = (RNG.standard_normal(s).astype(dtype) for s in ((3, 4), (4,), (4, 2)))
    layer = make_layer(X)
    text = source.show(layer, W, b, V)
    assert "rrule_operator_matmul(h, V)" in text  # h = np.tanh(...) is known to be a 2-d array
    assert "pullback(operator.matmul" not in text
    assert f"X.dtype != {np.dtype(dtype).name} or X.ndim != 2" in text  # the guard on the captured array
    got = cr.gradient(layer, W, b, V)
    want = cr.gradient(layer, W, b, V, engine="tape")
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_a_captured_array_of_another_dtype_makes_the_specialization_again():
    W, b, V = (RNG.standard_normal(s) for s in ((3, 4), (4,), (4, 2)))
    X = RNG.standard_normal((5, 3))
    wide, narrow = make_layer(X), make_layer(X.astype(np.float32))  # one code object, two closures
    for layer, dtype in ((wide, np.float64), (narrow, np.float32), (wide, np.float64)):
        args = tuple(a.astype(dtype) for a in (W, b, V))
        got = cr.gradient(layer, *args)
        want = cr.gradient(layer, *args, engine="tape")
        for g, w in zip(got, want):
            assert g.dtype == dtype
            np.testing.assert_allclose(g, w, rtol=1e-5)
    cr.testing.check_grads(wide, (W, b, V), modes=("reverse",))


def squares_of_sines(x):
    y = np.sin(x)
    s = 0.0
    for i in range(3):
        s = s + y[i] * y[i]
    t = y[1:]  # a slice of a known array: known too
    return s + t[0] * 2.0


def test_indexing_a_computed_array_takes_the_inline_partial():
    x = RNG.standard_normal(4)
    text = source.show(squares_of_sines, x)
    assert "add_at(dy, dy_own, y, i," in text  # y[i] in the loop: no pullback kept per iteration
    assert "add_at(ZERO, False, t, 0," in text
    assert "rrule_mul(" not in text
    np.testing.assert_allclose(cr.gradient(squares_of_sines, x)[0], cr.gradient(squares_of_sines, x, engine="tape")[0])
    cr.testing.check_grads(squares_of_sines, (x,), modes=("reverse",))


def scaled(x, a, flag):
    c = a if flag else 2  # an int or whatever `a` is: a real scalar of unknown kind
    return np.sum((x * c) ** 2)


@pytest.mark.parametrize("a", [3.0, np.float64(3.0), 3])
@pytest.mark.parametrize("flag", [True, False])
def test_a_scalar_of_unknown_kind_leaves_the_dtype_to_run_time(a, flag):
    # float32 * numpy.float64 is float64, float32 * 2 is float32: the static type cannot say which
    x = RNG.standard_normal(3).astype(np.float32)
    got = cr.gradient(scaled, x, a, flag, argnums=0)
    want = cr.gradient(scaled, x, a, flag, argnums=0, engine="tape")
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    y, back = cr.pullback(scaled, x, a, flag)
    assert type(y) is type(scaled(x, a, flag))


def zero_dimensional(x, z):
    s = np.sin(x)  # a 0-d array's ufunc gives a NumPy scalar
    r = np.abs(z)  # a complex array's absolute value is real
    return s * s + np.sum(r * np.cos(x))


def test_zero_dimensional_and_complex_results():
    x = np.array(0.7)
    z = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    got = cr.gradient(zero_dimensional, x, z)
    want = cr.gradient(zero_dimensional, x, z, engine="tape")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    cr.testing.check_grads(zero_dimensional, (x, z), modes=("reverse",))


def integer_weights(x, k):
    return np.sum(np.exp(x * k) / (k + 1))


def test_integer_arrays_mixed_with_floats():
    x, k = RNG.standard_normal(4), np.arange(4)
    got = cr.gradient(integer_weights, x, k, argnums=0)
    np.testing.assert_allclose(got, np.exp(x * k) * k / (k + 1), rtol=1e-12)


def reductions_and_methods(x, A):
    z = np.sum(A * x, axis=1)  # an array function with constant options
    w = z.copy()  # an array method
    u = A.T  # an attribute
    s = 0.0
    for i in range(3):
        s = s + z[i] * w[i] + u[0][i]
    return s + np.max(x.cumsum())


def test_array_functions_methods_and_attributes_keep_their_types():
    x, A = RNG.standard_normal(4), RNG.standard_normal((3, 4))
    text = source.show(reductions_and_methods, x, A)
    for inline in ("add_at(dz, dz_own, z, i,", "add_at(dw, dw_own, w, i,"):
        assert inline in text
    got = cr.gradient(reductions_and_methods, x, A)
    want = cr.gradient(reductions_and_methods, x, A, engine="tape")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    cr.testing.check_grads(reductions_and_methods, (x, A), modes=("reverse",))


def pairs(A):
    s = 0.0
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            s = s + A[i, j] * A[i, -1 - j]
    return s


def rows_of_a_cube(C):
    total = 0.0
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            total = total + np.sum(C[i, j] ** 2)  # C[i, j] is a row: a 1-d array
    return total


def picked(A):
    return np.stack([A[0, 1] * A[1, 0], A[1, 1] ** 2, A[0, 0] * 3.0])


def test_indexing_with_several_integers_takes_the_inline_partial():
    A = RNG.standard_normal((3, 4))
    text = source.show(pairs, A)
    assert "add_at(dA, dA_own, A, y_" in text and "pullback(operator.getitem" not in text
    np.testing.assert_allclose(cr.gradient(pairs, A)[0], cr.gradient(pairs, A, engine="tape")[0], rtol=1e-12)
    cr.testing.check_grads(pairs, (A,), modes=("reverse",))
    C = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(cr.gradient(rows_of_a_cube, C)[0], 2 * C, rtol=1e-12)
    # a block of cotangents goes through the partials at once
    J = cr.jacobian(picked, A, mode="reverse")
    np.testing.assert_allclose(J, cr.jacobian(picked, A, mode="forward"), rtol=1e-12)
    assert J.shape == (3, 3, 4)


def at(A, index):
    return A[index] * 2.0


def test_a_tuple_passed_in_as_the_index_keeps_the_dispatcher():
    # its elements are not checked by the guard: an index of another kind next time stays correct
    A = RNG.standard_normal((3, 4))
    want = np.zeros((3, 4))
    want[1, 2] = 2.0
    np.testing.assert_allclose(cr.gradient(lambda A: at(A, (1, 2)), A)[0], want)
    want = np.zeros((3, 4))
    want[1, :] = 2.0
    np.testing.assert_allclose(cr.gradient(lambda A: np.sum(at(A, (1, slice(None)))), A)[0], want)


def fraction_squared(x):
    return math.modf(x)[0] ** 2 + math.modf(-x)[1] * x


def mantissa_times(x):
    return math.frexp(x)[0] * x


@pytest.mark.parametrize("f", [fraction_squared, mantissa_times])
@pytest.mark.parametrize("x", [2.3, np.float64(-1.7), np.array(0.6)])
def test_math_functions_that_return_a_pair_are_not_taken_for_real_functions(f, x):
    # math.modf and math.frexp return tuples: their pullbacks take the tuple's cotangent (read as
    # a real function's pushforward, the gradient had come out as a nested Tangent)
    (g,) = cr.gradient(f, x)
    h = 1e-6
    assert isinstance(g, (float, np.floating, np.ndarray)) and np.ndim(g) == 0
    assert float(g) == pytest.approx((f(float(x) + h) - f(float(x) - h)) / (2 * h), rel=1e-6)
