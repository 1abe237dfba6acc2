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


# ----- W @ x against a block of unit tangents, and one-argument elementwise functions ----------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("chunk_size", [None, 2, 3])  # one pass of the full block, or chunks that start inside x
def test_the_matrix_vector_product_with_a_seed_block_selects_columns(dtype, chunk_size):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((4, 5)).astype(dtype)
    x = rng.standard_normal(5)
    J = cr.jacobian(lambda v: W @ v, x, mode="forward", chunk_size=chunk_size)
    np.testing.assert_array_equal(J, W)  # columns of W, selected, not multiplied
    assert J.dtype == np.result_type(W.dtype, x.dtype)
    J[...] = 0.0  # the caller's to write into: W itself is untouched
    assert np.all(W != 0)


def test_the_seed_block_shortcut_of_the_matmul_rule_agrees_with_the_general_product():
    from chainrules.core import ZeroTangent, basis_seed
    from chainrules.core.basis import seed_times_transposed
    from chainrules.rules.numpy.products import _matmul_pushforward

    W = np.arange(12.0).reshape(3, 4)
    x = np.ones(4)
    for batch, first in [(4, 0), (2, 0), (2, 1), (3, 2), (2, 3)]:  # full, partial and overhanging blocks
        seed = basis_seed(batch, (4,), first, np.float64)
        expected = np.asarray(seed) @ W.T  # tangent k: W @ e[first + k]
        got = _matmul_pushforward(W, x, ZeroTangent(), seed)
        np.testing.assert_array_equal(got, expected)
        assert not (np.shares_memory(got, W) and got.flags.writeable)  # no write can reach W through it
        np.testing.assert_array_equal(seed_times_transposed(seed, W), expected)
    with pytest.raises(ValueError):  # a mismatched product is NumPy's error, as before
        seed_times_transposed(basis_seed(3, (3,), 0, np.float64), W)


def _one_partial_cases():
    """(f, primal, batched tangent or None) for a function of one argument."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, 3)
    z = x + 1j * rng.standard_normal(3)
    yield np.square, x, rng.standard_normal((2, 3))
    yield np.square, x.astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    yield np.square, x.astype(np.float32), rng.standard_normal((2, 3))  # a float64 tangent of a float32 input
    yield np.sin, z, rng.standard_normal((2, 3)) + 1j
    yield np.abs, z, rng.standard_normal((2, 3)) + 1j  # a real output of a complex input
    yield np.exp, x, rng.standard_normal(3)  # a single tangent
    yield np.sqrt, np.array(4.0), rng.standard_normal(2)  # a 0-d array: a NumPy scalar out
    yield np.negative, x, rng.standard_normal((2, 3))
    yield np.tanh, x, rng.standard_normal((2, 3))


@pytest.mark.parametrize("f, x, t", list(_one_partial_cases()), ids=lambda v: getattr(v, "__name__", ""))
def test_one_argument_elementwise_pushes_agree_with_the_general_partials(f, x, t):
    from chainrules.core import NoTangent
    from chainrules.forward.dual import _by_one_partial, _by_partials, pusher_for

    how, rule, partials = pusher_for(f, [x])
    assert how is _by_one_partial
    tag = Tag(None if t.shape == x.shape else t.shape[0])
    fast = _by_one_partial(f, rule, partials, [x], [NoTangent(), t], tag)
    general = _by_partials(f, rule, partials, [x], [NoTangent(), t], tag)
    for a, b in [(fast, general)]:
        assert type(a) is type(b)
        if type(a) in (Dual, type(Dual(np.ones(1), np.ones(1), tag))):
            np.testing.assert_array_equal(a.primal, b.primal)
            np.testing.assert_array_equal(a.partials, b.partials)
            assert np.result_type(a.partials) == np.result_type(b.partials)
            assert a.tag is b.tag is tag
        else:  # a constant (a zero tangent): the plain output
            np.testing.assert_array_equal(a, b)


def test_one_argument_elementwise_in_nested_and_batched_jacobians_match_finite_differences():
    x = np.array([0.3, -1.2, 2.0])
    J = cr.jacobian(lambda v: np.sin(v) ** 2, x, mode="forward")
    np.testing.assert_allclose(J, np.diag(2 * np.sin(x) * np.cos(x)))
    H = cr.jacobian(lambda v: cr.jacobian(lambda u: np.square(u) * u, v, mode="forward"), x, mode="forward")
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 6 * x[i]
    np.testing.assert_allclose(H, expected)
    s = cr.jacobian(lambda v: np.exp(v), np.float32(0.5) * np.ones(2, dtype=np.float32), mode="forward")
    assert s.dtype == np.float32
    np.testing.assert_allclose(s, np.exp(0.5) * np.eye(2), rtol=1e-6)
