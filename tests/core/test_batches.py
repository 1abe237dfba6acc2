"""Batches of cotangents in the core: telling a batch apart, bringing it back to an input, the
ledger of declined batches, and ``scalar_rule``'s batched pullback."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import (
    BasisSeed,
    batch_declines,
    carries_batch,
    decline_batch,
    match_input_batch,
    unbroadcast_batch,
)


def test_a_batch_has_one_more_axis_than_the_output():
    assert carries_batch(np.zeros((2, 3)), np.zeros((4, 2, 3)))
    assert carries_batch(1.0, np.zeros(4)) and carries_batch(np.float32(1.0), np.zeros(4))
    assert not carries_batch(np.zeros(3), np.zeros(3))
    assert not carries_batch(1.0, 2.0) and not carries_batch(1.0, np.array(2.0))
    assert not carries_batch(np.zeros(3), cr.ZeroTangent()) and not carries_batch(np.zeros(3), [1.0, 2.0])


@pytest.mark.parametrize(
    "x_shape, dx_shape",
    [((3,), (5, 3)), ((3, 1), (5, 3, 4)), ((), (5, 2, 3)), ((1, 4), (5, 2, 3, 4)), ((2, 3), (5, 3))],
)
def test_unbroadcast_batch_is_unbroadcast_row_by_row(x_shape, dx_shape):
    rng = np.random.default_rng(0)
    x, dx = np.zeros(x_shape), rng.standard_normal(dx_shape)
    out = unbroadcast_batch(x, dx)
    assert out.shape == (dx_shape[0], *x_shape)
    for k in range(dx_shape[0]):
        np.testing.assert_array_equal(out[k], np.broadcast_to(cr.unbroadcast(x, dx[k]), x_shape))


@pytest.mark.parametrize(
    "x",
    [
        np.zeros(3),
        np.zeros(3, dtype=np.float32),
        np.zeros((3, 1)),
        np.arange(3),
        np.zeros(3, dtype=complex),
        np.array([True, False, True]),
        2.0,
        3,
        1j,
        np.float32(1.0),
        np.int64(2),
    ],
    ids=repr,
)
def test_match_input_batch_is_match_input_row_by_row(x):
    rng = np.random.default_rng(1)
    out_shape = (3, 4) if np.shape(x) == (3, 1) else (3,)
    dx = rng.standard_normal((5, *out_shape)) + 1j * rng.standard_normal((5, *out_shape))
    out = match_input_batch(x, dx)
    if isinstance(x, np.ndarray) and x.dtype == bool:
        assert out == cr.match_input(x, dx[0]) == cr.NoTangent()
        return
    assert out.shape == (5, *np.shape(x))
    for k in range(5):
        expected = cr.match_input(x, dx[k])
        np.testing.assert_array_equal(out[k], expected)
        assert out.dtype == np.asarray(expected).dtype


def test_match_input_batch_keeps_a_fitting_block_as_it_is():
    scaled = BasisSeed(3, (3,), 0) * np.arange(1.0, 4.0)
    assert match_input_batch(np.zeros(3), scaled) is scaled
    assert match_input_batch(np.zeros(3), cr.ZeroTangent()) == cr.ZeroTangent()
    assert match_input_batch(True, np.ones(3)) == cr.NoTangent()
    assert match_input_batch(np.array([True]), np.ones((2, 1))) == cr.NoTangent()


def test_project_to_batch_checks_shapes_and_matches_dtypes():
    rows = cr.ProjectTo(np.zeros(2, dtype=np.float32)).batch(np.ones((3, 2)) + 1j)
    assert rows.dtype == np.float32 and rows.shape == (3, 2)
    assert cr.ProjectTo(1.0).batch(np.ones(3)).dtype == np.float64
    assert cr.ProjectTo(1j).batch(np.ones(3)).dtype == np.complex128
    assert cr.ProjectTo(True).batch(np.ones(3)) == cr.NoTangent()
    with pytest.raises(ValueError, match="does not fit"):
        cr.ProjectTo(np.zeros(2)).batch(np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not fit"):
        cr.ProjectTo(np.zeros(2)).batch(np.ones(2))
    with pytest.raises(TypeError, match="not supported"):
        cr.ProjectTo((1.0, 2.0)).batch(np.ones((3, 2)))


def test_the_ledger_counts_declines():
    before = batch_declines()
    decline_batch()
    decline_batch()
    assert batch_declines() == before + 2


def _cube(x):
    return x**3


def _mix(a, b):
    return a * b + b


cr.scalar_rule(_cube, lambda x: 3 * x**2)
cr.scalar_rule(_mix, lambda a, b: b, lambda a, b: a + 1)


@pytest.mark.parametrize(
    "f, args",
    [
        (_cube, (2.0,)),
        (_cube, (np.array([1.0, -2.0, 0.5]),)),
        (_mix, (2.0, np.array([1.0, 3.0]))),
        (_mix, (np.array([[1.0], [2.0]]), np.array([1.0, 3.0, 5.0]))),
    ],
)
def test_scalar_rule_pulls_back_a_batch_like_rows(f, args):
    assert cr.rrule.lookup(f, args).batched
    y, back = cr.rrule(f, *args)
    dys = np.random.default_rng(2).standard_normal((4, *np.shape(y)))
    batched = back(dys)
    for k in range(4):
        row = back(float(dys[k]) if np.ndim(y) == 0 else dys[k])
        for got, expected, x in zip(batched[1:], row[1:], args):
            assert np.shape(got) == (4, *np.shape(x))
            np.testing.assert_allclose(got[k], expected, rtol=1e-14)
