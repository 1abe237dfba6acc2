"""Scaled ``BasisSeed`` blocks: the structure survives scaling, and every value equals the dense block's."""

import numpy as np
import pytest

from chainrules.core import BasisSeed, basis

# (batch, primal shape, first): full identity blocks, windows, rows without a unit at either end
LAYOUTS = [(4, (4,), 0), (3, (5,), 1), (4, (5,), 3), (5, (3,), -2), (4, (2, 3), -1), (6, (2, 3), 2), (1, (4,), 2)]


@pytest.fixture(params=[False, True], ids=["dense", "lazy-zeros"])
def lazy(request, monkeypatch):
    """Run each test with small blocks stored densely and with the untouched-zeros layout."""
    if request.param:
        monkeypatch.setattr(basis, "LAZY_ZEROS_BYTES", 1)
    return request.param


def _dense(seed):
    return np.array(seed)


def _is_block(a, seed):
    return isinstance(a, BasisSeed) and a.basis == seed.basis and a.shape == seed.shape


@pytest.mark.parametrize("batch, shape, first", LAYOUTS)
def test_scaling_keeps_the_structure_and_the_values(batch, shape, first, lazy):
    rng = np.random.default_rng(0)
    seed = BasisSeed(batch, shape, first)
    dense = _dense(seed)
    v = rng.standard_normal(shape)
    w = rng.standard_normal(shape)
    cases = [
        (lambda s: s * v, dense * v),
        (lambda s: v * s, v * dense),
        (lambda s: s * 2.5, dense * 2.5),
        (lambda s: s / w, dense / w),
        (lambda s: -s, -dense),
        (lambda s: +s, +dense),
        (lambda s: (s * v) * w, dense * v * w),
        (lambda s: -(s * v) / 2.0, -(dense * v) / 2.0),
        (lambda s: s * v + s * w, dense * v + dense * w),
        (lambda s: s * v - s, dense * v - dense),
        (lambda s: s * (v > 0), dense * (v > 0)),
    ]
    for make, expected in cases:
        out = make(seed)
        assert _is_block(out, seed) and not out.flags.writeable
        np.testing.assert_array_equal(np.asarray(out), expected)
        if out is not seed:  # the scale is the value at each row's unit (zero for a row without one)
            rows = np.arange(batch)
            flat = first + rows
            inside = (flat >= 0) & (flat < dense[0].size)
            expected_scale = np.zeros(batch)
            expected_scale[inside] = expected.reshape(batch, -1)[rows[inside], flat[inside]]
            np.testing.assert_array_equal(out.scale, expected_scale)


@pytest.mark.parametrize("batch, shape, first", LAYOUTS)
def test_a_scaled_block_selects_and_scales_in_products(batch, shape, first, lazy):
    rng = np.random.default_rng(1)
    seed = BasisSeed(batch, shape, first)
    scaled = seed * rng.standard_normal(shape)
    dense = _dense(scaled)
    n = dense[0].size
    if len(shape) == 1:
        for b in (rng.standard_normal((n, 3)), rng.standard_normal(n), rng.standard_normal((3, n)).T):
            np.testing.assert_allclose(scaled @ b, dense @ b, rtol=1e-15, atol=0)
            np.testing.assert_allclose(np.matmul(scaled, b), dense @ b, rtol=1e-15, atol=0)
    else:
        B, A = rng.standard_normal((shape[1], 4)), rng.standard_normal((3, shape[0]))
        np.testing.assert_allclose(scaled @ B, dense @ B, rtol=1e-15, atol=0)
        np.testing.assert_allclose(A @ scaled, A @ dense, rtol=1e-15, atol=0)


def test_the_product_does_not_multiply_by_the_block(monkeypatch):
    """``scaled @ W`` is a row selection: it never calls NumPy's matmul."""
    scaled = BasisSeed(3, (4,), 0) * np.arange(1.0, 5.0)
    W = np.arange(20.0).reshape(4, 5)
    calls = []
    original = basis._seed_times

    def spy(seed, b):
        calls.append(seed.shape)
        return original(seed, b)

    monkeypatch.setattr(basis, "_seed_times", spy)
    out = scaled @ W
    assert calls == [(3, 4)] and type(out) is np.ndarray
    np.testing.assert_array_equal(out, np.arange(1.0, 4.0)[:, None] * W[:3])


@pytest.mark.parametrize("batch, shape, first", LAYOUTS)
def test_sums_over_the_primal_axes_are_the_scale(batch, shape, first, lazy):
    seed = BasisSeed(batch, shape, first)
    scaled = seed * np.random.default_rng(2).standard_normal(shape)
    dense = _dense(scaled)
    axes = tuple(range(1, len(shape) + 1))
    for kwargs in ({"axis": axes}, {"axis": axes, "keepdims": True}, {"axis": tuple(-a for a in axes)}):
        out = np.sum(scaled, **kwargs)
        np.testing.assert_array_equal(out, np.sum(dense, **kwargs))
        assert type(out) is np.ndarray
    # other reductions are ordinary sums of the dense values
    np.testing.assert_allclose(np.sum(scaled, axis=0), np.sum(dense, axis=0), rtol=1e-15)
    np.testing.assert_allclose(np.sum(scaled), np.sum(dense), rtol=1e-15)


def test_complex_blocks_conjugate_their_scale(lazy):
    seed = BasisSeed(3, (3,), 0, dtype=np.complex128)
    v = np.array([1 + 2j, 3 - 1j, -2j])
    scaled = seed * v
    assert _is_block(np.conj(scaled), seed)
    np.testing.assert_array_equal(np.asarray(np.conj(scaled)), np.conj(np.asarray(seed) * v))
    assert np.conj(seed) is seed and np.conj(BasisSeed(2, (2,), 0) * 2.0).dtype == np.float64


def test_dtypes_follow_numpy():
    seed32 = BasisSeed(2, (3,), 0, dtype=np.float32)
    assert (seed32 * 2.0).dtype == np.float32
    assert (seed32 * np.ones(3, dtype=np.float32)).dtype == np.float32
    assert (seed32 * np.ones(3)).dtype == np.float64
    assert (BasisSeed(2, (3,), 0) * (1 + 1j)).dtype == np.complex128


def test_what_would_change_the_units_is_an_ordinary_array():
    seed = BasisSeed(3, (3,), 0)
    v = np.arange(3.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = v / seed
    for derived in (seed * np.ones((2, 3, 3)), seed + v, seed * seed, quotient, np.sin(seed * v), (seed * v)[1:]):
        assert getattr(derived, "basis", None) is None
    np.testing.assert_array_equal(seed + v, np.eye(3) + v)
    np.testing.assert_array_equal(np.exp(seed * v), np.exp(np.eye(3) * v))


def test_a_batch_shaped_scale_reads_each_row_at_its_unit():
    seed = BasisSeed(3, (4,), 1)
    V = np.arange(12.0).reshape(3, 4)  # one scale per (row, column): the product is still diagonal
    out = seed * V
    assert _is_block(out, seed)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(seed) * V)


def test_zeros_off_the_units_are_hard_zeros():
    """Like ``ZeroTangent``: 0 * inf is 0 off the units, where a dense block would make NaN."""
    out = BasisSeed(2, (2,), 0) * np.array([1.0, np.inf])
    np.testing.assert_array_equal(out.scale, [1.0, np.inf])
    np.testing.assert_array_equal(out @ np.ones((2, 2)), [[1.0, 1.0], [np.inf, np.inf]])


def test_large_blocks_touch_only_their_units():
    """Above ``LAZY_ZEROS_BYTES`` the zeros live in untouched memory: the block is read-only,
    reads as the dense block, and its buffer holds the units side by side."""
    n = 600
    seed = BasisSeed(n, (n,), 0)
    assert n * n * 8 >= basis.LAZY_ZEROS_BYTES
    v = np.linspace(1.0, 2.0, n)
    scaled = seed * v
    assert scaled.strides == ((1 - n) * 8, n * 8) and not scaled.flags.writeable
    np.testing.assert_array_equal(np.diag(scaled), v)
    assert np.count_nonzero(scaled) == n
    with pytest.raises(ValueError):
        scaled[0, 0] = 1.0
