"""The shortcuts that cut the fixed costs of a small Jacobian give the numbers of the general paths:
matmul contractions shared between calls of the same shapes, plain 2-D operands used as their own
matrices, the partial of ``x ** n`` for a positive integer ``n`` without error-state handling, and
scaled unit blocks written as plain arrays."""

import operator
import warnings

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core import basis_seed
from chainrules.rules.numpy import products

RNG = np.random.default_rng(11)


def test_matmul_contractions_are_shared_by_shape_and_stay_correct():
    products._PLAIN_CONTRACTIONS.clear()
    W, x = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    first = products._matmul_contraction(W, x)
    assert products._matmul_contraction(RNG.standard_normal((4, 3)), RNG.standard_normal(3)) is first
    other = products._matmul_contraction(RNG.standard_normal((3, 4)), RNG.standard_normal(4))
    assert other is not first and other.shape == (3,)
    for a, b in [(W, x), (W, RNG.standard_normal((3, 2))), (x, W.T), (x, x)]:
        crt.test_rrule(operator.matmul, a, b)


def test_a_mismatched_product_is_still_refused_after_a_cached_one():
    W = RNG.standard_normal((4, 3))
    assert products._matmul_contraction(W, np.ones(3)) is not None
    assert products._matmul_contraction(W, np.ones(5)) is None
    with pytest.raises(ValueError):
        cr.gradient(lambda v: np.sum(W @ v), np.ones(5))


def test_a_transposed_operand_is_not_taken_as_its_own_matrix():
    A = RNG.standard_normal((3, 4))
    crt.test_rrule(operator.matmul, A.T, RNG.standard_normal(3))
    crt.test_rrule(operator.matmul, A.T, RNG.standard_normal((3, 2)))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_integer_powers_at_zero_warn_nothing(n):
    x = np.array([0.0, -1.5, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        J = cr.jacobian(lambda v: v**n, x, mode="reverse")
    np.testing.assert_allclose(J, np.diag(n * x ** (n - 1)), rtol=1e-14)
    crt.test_rrule(operator.pow, np.abs(x) + 0.5, n)


def test_a_scaled_block_is_a_diagonal_of_its_values():
    seed = basis_seed(3, (5,), 1, np.float64)
    scaled = seed * np.arange(1.0, 6.0)
    assert scaled.scale.tolist() == [2.0, 3.0, 4.0]
    expected = np.zeros((3, 5))
    expected[[0, 1, 2], [1, 2, 3]] = [2.0, 3.0, 4.0]
    np.testing.assert_array_equal(np.asarray(scaled), expected)
    assert not scaled.flags.writeable
    np.testing.assert_array_equal(scaled @ np.eye(5), expected)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("n, m", [(3, 5), (5, 3), (4, 4)])
def test_the_seed_jacobian_on_every_mode_equals_the_analytic_one_and_finite_differences(engine, n, m):
    W, b, x = RNG.standard_normal((m, n)), RNG.standard_normal(m), RNG.standard_normal(n)

    def f(v):
        return (W @ v + b) ** 2

    analytic = 2 * (W @ x + b)[:, None] * W
    fd = crt.fd_jacobian(f, x).reshape(m, n)
    for mode in ("auto", "forward", "reverse"):
        for _ in range(2):  # the second call runs on what the first one cached
            J = cr.jacobian(f, x, mode=mode, engine=engine)
            np.testing.assert_allclose(J, analytic, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-8)


def _product_ufunc(batched: bool):
    """A fresh two-argument ufunc with an rrule of its own (registered ``batched`` or not)."""
    ufunc = np.frompyfunc(operator.mul, 2, 1)

    def rrule_product(a, b):
        def product_pullback(dy):
            return cr.NoTangent(), dy * b, dy * a  # elementwise: right for a batch of rows too

        return a * b, product_pullback

    cr.rrule.register(ufunc, batched=batched)(rrule_product)
    return ufunc


@pytest.mark.parametrize("batched", [False, True])
def test_the_tape_hot_path_keeps_each_rule_s_batched_flag_in_its_cache(batched):
    from chainrules.reverse import trace

    ufunc = _product_ufunc(batched)
    W = RNG.standard_normal((3, 3))
    x = RNG.standard_normal(3)

    def f(v):
        return ufunc(W @ v, v)

    for _ in range(2):  # the second call finds the rule in the hot path's cache
        y, back = trace.pullback_full(f, x)
        assert back.batched is batched
    expected = W * x[:, None] + np.diag(W @ x)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="reverse", engine="tape"), expected, rtol=1e-12)
