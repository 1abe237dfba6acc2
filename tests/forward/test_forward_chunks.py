"""Chunked partials: batched rules, the loop fallback, alignment, and the structured basis seed."""

import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.core import BasisSeed, basis_seed
from chainrules.forward import Dual, Tag, call


def fd_jacobian_shaped(f, x):
    """The finite-difference Jacobian of f at x, shaped out.shape + x.shape."""
    return crt.fd_jacobian(f, x).reshape(np.shape(f(x)) + np.shape(x))


# ----- rules without the batched flag run once per batch element ----------------------------------

_calls = []


def cubic(x, c):
    return c * x**3


@cr.frule.register(cubic)
def frule_cubic(tangents, x, c):
    _calls.append(np.shape(tangents[1]))
    _, dx, dc = tangents
    return cubic(x, c), 3 * c * x**2 * dx + x**3 * dc


def test_an_unbatched_rule_is_called_once_per_tangent():
    _calls.clear()
    x = np.array([1.0, 2.0, 3.0])
    # a Python function is not intercepted on duals; calling it through `call` runs its rule
    J = forward.jacobian(lambda x: call(cubic, (x, 2.0)), x, chunk_size=2)
    np.testing.assert_allclose(J, np.diag(6.0 * x**2))
    assert _calls == [(3,), (3,), (3,)]  # two elements of the first chunk, one of the second


def test_the_loop_fallback_stacks_structured_and_zero_tangents():
    def both(x):
        return x * 2.0, np.floor(x)

    @cr.frule.register(both)
    def frule_both(tangents, x):
        return both(x), cr.Tangent[tuple](2.0 * tangents[1], cr.ZeroTangent())

    J = forward.jacobian(lambda x: call(both, (x,)), np.array([1.5, 2.5]))
    np.testing.assert_allclose(J[0], 2.0 * np.eye(2))


# ----- a batched rule that forgets the batch axis is redone by the loop ---------------------------


def scaled_sum(x, w):
    return np.sum(x * w)


@cr.frule.register(scaled_sum, batched=True)
def frule_scaled_sum_wrong_batch(tangents, x, w):
    # written for one tangent only: sums the batch axis away with everything else
    return scaled_sum(x, w), np.sum(tangents[1] * w)


def test_a_batched_rule_with_a_wrong_output_shape_falls_back_to_the_loop():
    w = np.array([1.0, 2.0, 3.0])
    J = forward.jacobian(lambda x: call(scaled_sum, (x, w)), np.ones(3))
    np.testing.assert_allclose(J, w)


def broadcast_rule_output(x):
    return x * np.ones((2, 3))


@cr.frule.register(broadcast_rule_output)
def frule_broadcast_rule_output(tangents, x):
    return broadcast_rule_output(x), tangents[1] * 1.0  # left broadcastable, not broadcast


def sloppy(x):
    return np.sum(x)


@cr.frule.register(sloppy)
def frule_sloppy(tangents, x):
    return sloppy(x), tangents[1]  # the input's tangent: the wrong shape for a scalar output


def test_output_tangents_are_fitted_to_the_output_or_refused():
    y, dy = forward.jvp(lambda x: call(broadcast_rule_output, (x,)), (np.ones(3),), (np.arange(3.0),))
    assert dy.shape == (2, 3) and dy.flags.writeable
    J = forward.jacobian(lambda x: call(broadcast_rule_output, (x,)), np.ones(3))
    np.testing.assert_array_equal(J, np.broadcast_to(np.eye(3), (2, 3, 3)))
    with pytest.raises(ValueError, match="sloppy.*shape \\(3,\\) for an output of shape \\(\\)"):
        forward.jvp(lambda x: call(sloppy, (x,)), (np.ones(3),), (np.ones(3),))


# ----- elementwise calls get their batched tangents aligned ------------------------------------------


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x[0] * np.ones((2, 3)),  # a scalar's tangent against a matrix
        lambda x: np.sin(x)[:, None] * x[None, :],  # (2, 1) against (1, 2)
        lambda x: x + np.ones((4, 2)),  # a vector against a matrix
        lambda x: np.arctan2(x, np.ones((3, 2))),  # a ufunc with the dual first
        lambda x: np.arctan2(np.ones((3, 2)), x),  # and second
        lambda x: 2.0**x * np.ones((2, 2)),
    ],
)
def test_broadcasting_with_a_batch(f):
    x = np.array([0.3, -0.7])
    for chunk in (1, 2):
        np.testing.assert_allclose(forward.jacobian(f, x, chunk_size=chunk), fd_jacobian_shaped(f, x), atol=1e-8)


def test_a_batch_of_two_against_an_axis_of_two_is_not_confused():
    # the batch axis has the same length as the output's: a misalignment would not change shapes
    x = np.array([1.0, -1.0])
    J = forward.jacobian(lambda x: np.sin(x) * x[0], x)
    np.testing.assert_allclose(J, [[np.cos(1.0) + np.sin(1.0), 0.0], [np.sin(-1.0), np.cos(-1.0)]])


# ----- the structured seed ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "batch, shape, first", [(3, (3,), 0), (2, (4,), -1), (2, (4,), 3), (4, (2, 3), 1), (2, (3,), 5)]
)
def test_basis_seed_values(batch, shape, first):
    seed = BasisSeed(batch, shape, first)
    n = int(np.prod(shape))
    dense = np.zeros((batch, n))
    for k in range(batch):
        if 0 <= first + k < n:
            dense[k, first + k] = 1.0
    np.testing.assert_array_equal(np.asarray(seed), dense.reshape((batch, *shape)))
    assert isinstance(seed, np.ndarray) and not seed.flags.writeable
    assert seed.base.nbytes < dense.nbytes or n * batch <= 3  # one short line, not a block


def test_basis_seed_products_select_and_are_read_only():
    rng = np.random.default_rng(1)
    for batch, first in [(4, 0), (3, 1), (3, 2), (2, -1)]:
        seed = BasisSeed(batch, (4,), first)
        dense = np.asarray(seed).copy()
        for b in (rng.standard_normal((4, 5)), rng.standard_normal(4)):
            np.testing.assert_array_equal(seed @ b, dense @ b)
            np.testing.assert_array_equal(np.matmul(seed, b), dense @ b)
            np.testing.assert_array_equal(np.dot(seed, b), dense @ b)
    W = rng.standard_normal((4, 5))
    rows = BasisSeed(2, (4,), 1) @ W
    assert np.shares_memory(rows, W) and not rows.flags.writeable


def test_basis_seed_of_a_matrix_in_products():
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((5, 2)), rng.standard_normal((3, 4))
    for first in (0, 2, 5):
        seed = BasisSeed(3, (2, 3), first)
        dense = np.asarray(seed).copy()
        np.testing.assert_array_equal(seed @ B, dense @ B)
        np.testing.assert_array_equal(A @ seed, A @ dense)


def test_anything_derived_from_a_seed_is_a_plain_array():
    seed = BasisSeed(3, (3,), 0)
    W = np.arange(9.0).reshape(3, 3)
    for derived in (seed[1:], seed.T, seed.reshape(9), np.sin(seed), seed + np.ones(3)):
        assert getattr(derived, "basis", None) is None
    scaled = 2.0 * seed  # a scaled block knows its units, and its values are the dense ones
    assert scaled.basis == seed.basis and not scaled.flags.writeable
    np.testing.assert_array_equal(scaled, 2.0 * np.eye(3))
    np.testing.assert_array_equal(scaled.scale, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(seed.T @ W, np.eye(3) @ W)
    np.testing.assert_array_equal(seed[::-1] @ W, W[::-1])


def test_the_identity_seed_makes_a_product_a_copy():
    W = np.random.default_rng(3).standard_normal((50, 40))
    x = np.ones(40)
    y = W @ Dual(x, basis_seed(40, (40,), 0, np.float64), Tag(40))
    assert np.shares_memory(y.partials, W)  # rows of W selected, not a matrix product
    assert not y.partials.flags.writeable  # a view of the user's W: nobody may write through it
    J = forward.jacobian(lambda v: W @ v, x)
    np.testing.assert_array_equal(J, W)
    assert J.flags.writeable and not np.shares_memory(J, W)  # the caller's own copy


def test_batched_calls_see_the_batch_on_the_tag():
    tag = Tag(batch=3)
    x = Dual(np.ones(2), np.ones((3, 2)), tag)
    y = call(np.multiply, (x, 2.0))
    assert y.partials.shape == (3, 2)


# ----- batched rules at the shapes their batch axis is easiest to misplace ------------------------

_rng = np.random.default_rng(31)
_STACK = _rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
_VECTOR = _rng.normal(size=3)
_SAMPLES = _rng.normal(size=(2, 3, 4))
_POINTS = np.cumsum(_rng.uniform(0.5, 1.0, size=(3, 4)), axis=-1)
_BLOCKS = _rng.normal(size=(2, 1, 2))

BATCH_AXIS_CASES = {
    # one vector b against a stack of matrices: b's tangents meet the stack's axes
    "solve-stack-vector": lambda t: np.linalg.solve(_STACK * t[0], _VECTOR * t[1]),
    # a number scanned along axis 0 is scanned flattened, its tangents too
    "cumsum-number": lambda t: np.cumsum(t[0] * t[1], axis=0),
    "cumprod-number": lambda t: np.cumprod(t[0] * t[1], axis=0),
    # SciPy broadcasts an N-D x to y's shape: x's new axes go after the batch axis
    "trapezoid-points": lambda t: si.trapezoid(_SAMPLES * t[0], _POINTS * t[1], axis=-1),
    # blocks with fewer stack axes than others: the batch axis stays in front of them all
    "block_diag-stack": lambda t: sl.block_diag(_BLOCKS * t[0], np.array([1.0, 2.0]) * t[1], np.eye(2) * t[0]),
}


@pytest.mark.parametrize("name", sorted(BATCH_AXIS_CASES))
def test_batched_rules_give_the_jacobian_at_their_awkward_shapes(name):
    f = BATCH_AXIS_CASES[name]
    t = np.array([1.3, 0.7])
    J = cr.jacobian(f, t, mode="forward")
    np.testing.assert_allclose(J, fd_jacobian_shaped(f, t), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J, cr.jacobian(f, t, mode="reverse"), rtol=1e-10, atol=1e-12)
