"""Element reads with a key of several integers (``A[i, j]``) on the tape: the operator's hot path
takes a tuple of plain ints, and the ``getitem`` rule's element pullback (an ``ElementScatter``)
serves it as it serves ``x[i]``. Each case is checked against the source engine, finite
differences and the general path (a key of NumPy integers, which neither fast path takes)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.trace import pullback_full
from chainrules.reverse.trace.backward import sweep
from chainrules.rules.numpy._arrays import ElementScatter
from chainrules.testing import check_grads, test_rrule


def squares_2d(B):
    A = np.tanh(B)
    s = 0.0
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            s = s + A[i, j] * A[j % n, i % m]
    return s


def squares_2d_general(B):
    """``squares_2d`` with NumPy integers in the key: the general path of both the tape and the rule."""
    A = np.tanh(B)
    s = 0.0
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            s = s + A[np.int64(i), np.int64(j)] * A[np.int64(j % n), np.int64(i % m)]
    return s


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tuple_key_gradient_matches_the_source_engine_and_the_general_path(dtype):
    B = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype)
    (g,) = cr.gradient(squares_2d, B, engine="tape")
    assert g.dtype == dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(g, cr.gradient(squares_2d, B, engine="source")[0], rtol=rtol)
    np.testing.assert_allclose(g, cr.gradient(squares_2d_general, B, engine="tape")[0], rtol=rtol)


def test_tuple_key_gradient_passes_finite_differences_to_second_order():
    B = np.random.default_rng(1).standard_normal((3, 3))
    done = check_grads(squares_2d, (B,), modes=("reverse",), order=2, engine="tape")
    assert done


def test_complex_tuple_key_reads():
    def f(Z):
        s = 0.0
        for i in range(Z.shape[0]):
            for j in range(Z.shape[1]):
                z = Z[i, j]
                s = s + np.real(z * np.conj(z)) * (i + 2.0 * j)
        return s

    Z = np.array([[1.0 + 2.0j, -0.5j], [3.0, 0.25 - 1.0j]])
    (g,) = cr.gradient(f, Z, engine="tape")
    weights = np.array([[0.0, 2.0], [1.0, 3.0]])
    np.testing.assert_allclose(g, 2 * weights * Z)
    check_grads(f, (Z,), modes=("reverse",), order=1, engine="tape")


def test_three_axes_negative_indices_and_partial_keys():
    def f(T):
        s = 0.0
        for i in range(T.shape[0]):
            s = s + T[i, -1, 0] * T[-i - 1, 1, 1] + np.sum(T[i, 0] * 2.0)  # (i, 0): a row, an array
        return s

    T = np.random.default_rng(2).standard_normal((2, 2, 3))
    (g,) = cr.gradient(f, T, engine="tape")
    np.testing.assert_allclose(g, cr.gradient(f, T, engine="source")[0], rtol=1e-12)
    check_grads(f, (T,), modes=("reverse",), order=1, engine="tape")


def test_keys_that_are_not_plain_ints_take_the_general_path():
    def f(A):
        sliced = A[0, 1:] @ A[1, :2] + A[True, 1, 0].sum()
        return sliced + A[(1, np.int64(0))] + A[[0, 1], [1, 0]].sum() + A[1, ...].sum()

    A = np.arange(1.0, 7.0).reshape(2, 3)
    (g,) = cr.gradient(f, A, engine="tape")
    np.testing.assert_allclose(g, cr.gradient(f, A, engine="source")[0], rtol=1e-12)
    check_grads(f, (A,), modes=("reverse",), order=1, engine="tape")


def test_the_tape_records_a_tuple_key_read_as_a_hot_path_entry():
    def f(A):
        return A[1, 0] * 3.0

    A = np.arange(4.0).reshape(2, 2)
    y, back = pullback_full(f, A)
    assert y == 6.0
    (g,) = cr.gradient(f, A, engine="tape")
    np.testing.assert_array_equal(g, [[0.0, 0.0], [3.0, 0.0]])

    # the read's entry names the array's slot directly (no (position, slot) pairs), and its
    # cotangent is an element scatter
    from chainrules.reverse.trace import tracer

    trace = tracer.Trace(None)
    token = tracer._current.set(trace)
    try:
        box = tracer.box(A, trace, 0, tracer.TrackedNumber, tracer.TrackedArray)
        trace.n_slots = 1
        read = box[1, 0]
    finally:
        tracer._current.reset(token)
    pullback, out, f_, first, second = trace.tape[-1]
    assert f_ is operator.getitem and (first, second) == (0, -1) and out == read._slot
    assert type(pullback(2.0)[1]) is ElementScatter
    cts: dict = {read._slot: 2.0}
    sweep(trace.tape, cts, set())
    np.testing.assert_array_equal(cr.unthunk(cts[0]), [[0.0, 0.0], [2.0, 0.0]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("dy", [2.5, np.float64(-1.25), 1.5 - 2.0j, np.array(0.75), cr.ZeroTangent()])
def test_tuple_key_element_pullback_matches_the_general_key(dtype, dy):
    x = np.arange(1.0, 7.0).reshape(2, 3).astype(dtype)
    y, fast = cr.rrule(operator.getitem, x, (1, -1))
    y_general, general = cr.rrule(operator.getitem, x, (np.int64(1), np.int64(-1)))
    assert y == y_general
    got, want = fast(dy), general(dy)
    if isinstance(want[1], cr.AbstractZero):
        assert got[1] == want[1]
        return
    if type(dy) is not complex and np.ndim(dy) == 0 and not isinstance(dy, np.ndarray):
        assert type(got[1]) is ElementScatter
    value, expected = cr.unthunk(got[1]), cr.unthunk(want[1])
    assert value.dtype == expected.dtype == dtype
    np.testing.assert_array_equal(value, expected)
    acc, ref = np.ones((2, 3), dtype=dtype), np.ones((2, 3), dtype=dtype)
    np.testing.assert_array_equal(cr.iadd(acc, got[1]), cr.iadd(ref, want[1]))


def test_getitem_rule_with_a_tuple_of_ints_passes_test_rrule():
    test_rrule(operator.getitem, np.array([[0.5, -1.0], [2.0, 3.0]]), (1, 0))
    test_rrule(operator.getitem, np.array([[0.5, -1.0], [2.0, 3.0]], dtype=np.float32), (-1, -1))
    test_rrule(operator.getitem, np.array([[0.5, -1.0j], [2.0, 3.0]]), (0, 1))


def test_reverse_jacobian_batches_through_tuple_key_reads():
    def f(B):
        A = np.sin(B)
        return np.stack([A[0, 0] * A[1, 1], A[0, 1] ** 2, A[1, 0] * B[0, 1]])

    B = np.array([[0.3, -0.7], [1.1, 0.4]])
    J = cr.jacobian(f, B, mode="reverse", engine="tape")
    np.testing.assert_allclose(J, cr.jacobian(f, B, mode="forward"), rtol=1e-12)
    np.testing.assert_allclose(J, cr.jacobian(f, B, mode="reverse", engine="source"), rtol=1e-12)


def test_hessian_through_tuple_key_reads():
    B = np.array([[0.3, -0.7], [1.1, 0.4]])
    H = cr.hessian(squares_2d, B, engine="tape")
    np.testing.assert_allclose(H, cr.hessian(squares_2d, B, engine="source"), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, cr.hessian(squares_2d_general, B, engine="tape"), rtol=1e-10, atol=1e-12)


def test_tuple_key_reads_of_a_buffer_written_in_between():
    def f(B):
        out = np.zeros_like(B)
        s = 0.0
        for i in range(B.shape[0]):
            for j in range(B.shape[1]):
                out[i, j] = B[i, j] * (i + 1.0)
                s = s + out[i, j] * out[i, 0]  # reads of the buffer between writes into it
        return s + np.sum(out)

    B = np.random.default_rng(3).standard_normal((3, 2))
    (g,) = cr.gradient(f, B, engine="tape")
    np.testing.assert_allclose(g, cr.gradient(f, B, engine="source")[0], rtol=1e-12)
    check_grads(f, (B,), modes=("reverse",), order=1, engine="tape")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64, np.complex128])
def test_elements_of_float32_and_complex_arrays_are_boxed_on_the_hot_path(dtype):
    def f(x):
        y = np.sin(x)
        s = 0.0
        for i in range(len(y)):
            s = s + np.real(y[i] * -y[i] * np.conj(y[i])) + np.real(np.exp(y[i]))  # binary and unary ops
        return s

    x = np.array([0.3, -1.2, 0.7], dtype=dtype)
    from chainrules.reverse.trace import tracer

    y, back = pullback_full(f, x)
    assert isinstance(y, (float, np.floating))
    (g,) = cr.gradient(f, x, engine="tape")
    assert g.dtype == dtype
    rtol = 1e-2 if dtype == np.float16 else (1e-5 if dtype in (np.float32, np.complex64) else 1e-12)
    np.testing.assert_allclose(g, cr.gradient(f, x, engine="source")[0], rtol=rtol)

    # every element read, product, negation and exp is recorded by a hot path (argument slots as ints)
    trace = tracer.Trace(None)
    token = tracer._current.set(trace)
    try:
        box = tracer.box(np.sin(x), trace, 0, tracer.TrackedNumber, tracer.TrackedArray)
        trace.n_slots = 1
        e = box[1]
        z = -(e * e)
        w = np.exp(z)
    finally:
        tracer._current.reset(token)
    assert all(type(v) is tracer.TrackedNumber for v in (e, z, w))
    assert type(tracer.deep_primal(w)) is np.dtype(dtype).type
    assert all(entry[3] >= 0 for entry in trace.tape)
