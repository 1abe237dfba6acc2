"""Tangents in the output's dtype and shape, from draws the rule fuzzer found: a float32 digamma
(scalar and 0-d) gets a float32 tangent although its partial, trigamma, is computed with float64
constants; np.dot and np.inner of a float32 array with a Python float (which NumPy turns into a
float64 array, promoting the output) get the output's float64 tangent; polygamma with an empty
array of orders gets an empty tangent of the output's shape, not a scalar; a broadcast operand's
tangent added to an integer array's none fills the output's shape."""

import operator

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
from chainrules.testing import nondiff, rand_tangent, test_frule, test_rrule

NO = cr.NoTangent()


@pytest.mark.parametrize("x", [np.float32(1.57), np.array(1.2, dtype=np.float32), np.array([0.7, 2.5], np.float32)])
def test_digamma_of_float32_has_float32_tangent(x):
    y, dy = cr.frule((cr.NoTangent(), rand_tangent(x, 1)), sc.psi, x)
    assert type(dy) is type(y) and np.result_type(dy) == np.float32
    _, back = cr.rrule(sc.psi, x)
    assert np.result_type(back(np.float32(1.0) if np.ndim(x) == 0 else np.ones_like(x))[1]) == np.float32
    test_frule(sc.psi, x, rtol=2e-3, atol=2e-3)
    test_rrule(sc.psi, x, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("f", [np.dot, np.inner])
@pytest.mark.parametrize("number", [0.2, -1.5])
def test_float32_array_times_python_float(f, number):
    a = np.array([[0.5, -1.25]], dtype=np.float32)
    y, dy = cr.frule((cr.NoTangent(), np.ones_like(a), 0.5), f, a, number)
    assert y.dtype == np.float64 and dy.dtype == np.float64  # the output's dtype, as NumPy promotes it
    np.testing.assert_allclose(dy, np.ones_like(a) * number + a * 0.5, rtol=1e-6)
    test_frule(f, a, number, rtol=2e-3, atol=2e-3)
    test_rrule(f, a, number, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "n, x",
    [
        (np.array([], dtype=np.int64), 1.5),
        (np.zeros((0, 2), dtype=np.int64), np.array([0.8, 2.0])),
        (np.array([1, 2]), np.zeros((0, 1))),
    ],
)
def test_polygamma_with_an_empty_output(n, x):
    y = sc.polygamma(n, x)
    _, dy = cr.frule((cr.NoTangent(), cr.NoTangent(), rand_tangent(x, 1)), sc.polygamma, n, x)
    assert isinstance(dy, np.ndarray) and dy.shape == y.shape and dy.dtype == y.dtype
    _, back = cr.rrule(sc.polygamma, n, x)
    dx = back(np.zeros(y.shape))[2]
    assert np.shape(dx) == np.shape(x) and not np.any(dx)


def test_polygamma_with_orders_of_zero_has_the_broadcast_shape():
    n, x = np.array([0, 0, 1]), 1.3
    y, dy = cr.frule((cr.NoTangent(), cr.NoTangent(), 1.0), sc.polygamma, n, x)
    np.testing.assert_allclose(dy, sc.polygamma(n + 1, x), rtol=1e-12)
    assert dy.shape == y.shape
    test_frule(sc.polygamma, nondiff(n), x)
    test_rrule(sc.polygamma, nondiff(n), x)


def _riemann(x):
    return sc.zeta(x)


def _hurwitz_plus_riemann_constant(q):
    return sc.zeta(3.0, q) + sc.zeta(2.0)


def test_riemann_zeta_is_refused_in_x_and_works_as_a_constant():
    # sc.zeta(x) with no q had crashed the rule ("_zeta() missing 1 required positional argument")
    for args in [(3.0,), (np.array([2.0, 3.0]),), (3.0, None)]:
        y, back = cr.rrule(sc.zeta, *args)
        np.testing.assert_array_equal(y, sc.zeta(*args))
        cotangents = back(np.ones_like(y))
        assert len(cotangents) == 1 + len(args)
        with pytest.raises(ValueError, match=r"scipy\.special\.zeta.*derivative in x has no closed form"):
            cr.unthunk(cotangents[1])
    assert isinstance(cr.frule((cr.NoTangent(), 0.0), sc.zeta, 3.0)[1], cr.ZeroTangent)
    with pytest.raises(ValueError, match=r"scipy\.special\.zeta.*derivative in x has no closed form"):
        cr.frule((cr.NoTangent(), 1.0), sc.zeta, 3.0)
    with pytest.raises(ValueError, match=r"scipy\.special\.zeta.*derivative in x"):
        cr.gradient(_riemann, 3.0)
    expected = -3.0 * sc.zeta(4.0, 1.5)
    np.testing.assert_allclose(cr.gradient(_hurwitz_plus_riemann_constant, 1.5)[0], expected, rtol=1e-13)


@pytest.mark.parametrize("op", [operator.add, operator.sub], ids=lambda op: op.__name__)
def test_one_broadcast_operands_tangent_fills_the_output(op):
    # with an integer operand (no tangent), the float operand's tangent had kept its own shape (2, 1)
    a, counts = np.array([[0.5], [-1.5]]), np.arange(4).reshape(2, 2)
    for x, y, tangents in ((a, counts, (NO, np.ones((2, 1)), NO)), (counts, a, (NO, NO, np.ones((2, 1))))):
        out, d_out = cr.frule(tangents, op, x, y)
        assert np.shape(d_out) == out.shape == (2, 2)
        np.testing.assert_array_equal(d_out, np.full((2, 2), 1.0 if x is a or op is operator.add else -1.0))
        test_frule(op, x, y)
