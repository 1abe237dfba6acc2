"""``np.bincount(x, weights, minlength)``: a sum of the weights by bin, linear in the weights (the
integer bins and ``minlength`` are settings). It is also the vectorized form of ``np.add.at`` into
a 1-d array, which every engine refuses as an update in place."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

BINS = np.array([0, 2, 0, 3, 2])
WEIGHTS = np.array([1.0, 2.0, 3.0, -1.5, 0.25])


@pytest.mark.parametrize(
    "args",
    [(BINS, WEIGHTS), (BINS, WEIGHTS, 7), (BINS, WEIGHTS.astype(np.float32)), (BINS[:0], WEIGHTS[:0], 2)],
    ids=["weights", "minlength", "float32", "empty"],
)
def test_rules_against_finite_differences(args, batched_pullback):
    crt.test_rrule(np.bincount, *args)
    crt.test_frule(np.bincount, *args)
    batched_pullback(np.bincount, *args)


def test_counting_has_no_derivative():
    y, back = cr.rrule(np.bincount, BINS)
    assert y.dtype.kind == "i" and back(np.ones(y.shape)) == (cr.NoTangent(), cr.NoTangent())


def scatter_add(w):
    acc = np.cos(w[:4])
    acc = acc + np.bincount(BINS, weights=w * w, minlength=acc.size)  # np.add.at(acc, BINS, w * w)
    return np.sum(acc**2)


def test_every_engine_differentiates_a_scatter_add_through_bincount():
    checks = crt.check_grads(scatter_add, (WEIGHTS,), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)
    expected = np.cos(WEIGHTS[:4])
    np.add.at(expected, BINS, WEIGHTS * WEIGHTS)
    assert scatter_add(WEIGHTS) == pytest.approx(np.sum(expected**2))
    J = {mode: cr.jacobian(lambda w: np.bincount(BINS, w), WEIGHTS, mode=mode) for mode in ("forward", "reverse")}
    np.testing.assert_array_equal(J["forward"], J["reverse"])
    np.testing.assert_array_equal(J["forward"], (BINS[None, :] == np.arange(4)[:, None]).astype(float))
