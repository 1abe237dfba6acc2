"""The forward engine's shortcuts for its common calls agree with the general code they skip."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.forward import Dual, Tag
from chainrules.forward.engine import SEED_BUDGET, chunk_size_for


def general_chunk_size(n: int) -> int:
    if n <= 1:
        return 1
    largest = max(1, min(n, SEED_BUDGET // n))
    return math.ceil(n / math.ceil(n / largest))


@pytest.mark.parametrize("n", [0, 1, 2, 10, 2047, 2048, 2049, 5000])
def test_chunk_size_shortcut_matches_the_formula(n):
    assert chunk_size_for(n) == general_chunk_size(n)


def test_jacobians_of_plain_arrays_that_need_assembling():
    W = np.arange(6.0).reshape(2, 3)
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
    J = cr.jacobian(lambda X: (W * X) ** 2, x, mode="forward")  # matrix in, matrix out
    expected = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for j in range(3):
            expected[i, j, i, j] = 2 * W[i, j] ** 2 * x[i, j]
    np.testing.assert_allclose(J, expected)
    g = cr.jacobian(lambda v: (v**3).sum(), np.array([1.0, 2.0]), mode="forward")  # scalar out
    np.testing.assert_allclose(g, [3.0, 12.0])
    empty = cr.jacobian(lambda v: v * 2.0, np.zeros(0), mode="forward")
    assert empty.shape == (0, 0)
    several = cr.jacobian(lambda v: v * 2.0, np.ones(3), mode="forward", chunk_size=2)  # two passes
    np.testing.assert_allclose(several, 2 * np.eye(3))


def test_dual_construction_picks_the_array_class_and_sets_its_fields():
    tag = Tag()
    number = Dual(2.0, 1.0, tag)
    array = Dual(np.ones(2), np.zeros(2), tag, writable=True)
    assert type(number) is Dual and type(array).__name__ == "DualArray"
    assert (number.primal, number.partials, number.tag, number.writable) == (2.0, 1.0, tag, False)
    assert array.writable and len(array) == 2


@pytest.mark.parametrize(
    "f, expected",
    [
        (lambda v: v[0] * v[1], lambda v: np.array([v[1], v[0]])),  # a scalar output
        (
            lambda v: np.outer(v, v),
            lambda v: np.einsum("ik,j->ijk", np.eye(2), v) + np.einsum("i,jk->ijk", v, np.eye(2)),
        ),
        (lambda v: (v * 2.0, v.sum()), lambda v: cr.Tangent[tuple](2.0 * np.eye(2), np.ones(2))),  # a structure
        (lambda v: 3.0, lambda v: np.zeros(2)),  # a constant output
    ],
    ids=["scalar", "matrix", "tuple", "constant"],
)
def test_the_one_pass_jacobian_of_a_vector_runs_f_once_for_every_output_kind(f, expected):
    calls = []

    def counted(v):
        calls.append(1)
        return f(v)

    x = np.array([0.5, -2.0])
    J = cr.jacobian(counted, x, mode="forward")
    assert len(calls) == 1
    want = expected(x)
    if isinstance(want, cr.Tangent):
        for got, ref in zip(J.backing, want.backing):
            np.testing.assert_allclose(got, ref)
    else:
        np.testing.assert_allclose(J, want)
        assert J.shape == np.shape(f(x)) + x.shape


def double(v):
    raise AssertionError("its rule is used, not its body")


@cr.frule.register(double, batched=True)
def frule_double(tangents, v):
    return 2.0 * v, 2.0 * tangents[1]


def test_the_one_pass_jacobian_uses_the_function_s_own_rule_and_is_writeable():
    J = cr.jacobian(double, np.array([1.0, 2.0, 3.0]), mode="forward")
    np.testing.assert_array_equal(J, 2.0 * np.eye(3))
    J[0, 0] = 5.0  # the caller owns the Jacobian (the seed's block is read-only)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("exponent", [2, 2.0])
def test_the_square_of_a_dual_array_is_numpy_s_square_with_its_derivative(dtype, exponent):
    x = np.array([0.5, -1.5, 2.0], dtype=dtype) * (1 + 1j if np.dtype(dtype).kind == "c" else 1)
    t = np.array([1.0, 2.0, -1.0], dtype=dtype)
    y, dy = cr.jvp(lambda v: v**exponent, (x,), (t,))
    np.testing.assert_array_equal(y, x**exponent)  # what the plain code computes, bit for bit
    assert y.dtype == dy.dtype == np.dtype(dtype)
    np.testing.assert_allclose(dy, 2 * x * t, rtol=1e-6)
    J = cr.jacobian(lambda v: v**exponent, x.real.copy(), mode="forward")
    np.testing.assert_allclose(J, np.diag(2 * x.real), rtol=1e-6)


def test_other_powers_of_a_dual_array_keep_the_power_rule():
    x = np.array([0.5, 1.5, 2.0])
    for exponent, derivative in [(3, 3 * x**2), (0.5, 0.5 / np.sqrt(x)), (2.5, 2.5 * x**1.5)]:
        y, dy = cr.jvp(lambda v, e=exponent: v**e, (x,), (np.ones(3),))
        np.testing.assert_allclose(y, x**exponent)
        np.testing.assert_allclose(dy, derivative)
    y, dy = cr.jvp(lambda v: v ** np.array([2.0, 2.0, 2.0]), (x,), (np.ones(3),))  # an array exponent
    np.testing.assert_allclose(dy, 2 * x)
