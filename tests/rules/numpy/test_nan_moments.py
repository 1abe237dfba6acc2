"""``np.nanvar``, ``np.nanstd`` and ``np.nancumsum``: ``var``/``std``/``cumsum`` of the entries
that are not NaN (as of those inside ``where=``); a NaN entry gets no cotangent."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([[0.5, 1.1, 2.0, -1.0], [1.5, 0.3, 0.6, 0.7], [0.1, -0.2, 0.3, 0.9]])
MISSING = np.array([[False, True, False, False], [False, False, True, True], [False, False, False, False]])


@pytest.mark.parametrize("f", [np.nanvar, np.nanstd])
@pytest.mark.parametrize(
    "args, kwargs",
    [((), {}), ((1,), {}), ((), {"axis": 0, "ddof": 1}), ((), {"axis": 1, "keepdims": True})],
    ids=["all", "axis", "ddof", "keepdims"],
)
def test_rules_without_nans_against_finite_differences(f, args, kwargs, batched_pullback):
    crt.test_rrule(f, X, *args, fkwargs=kwargs)
    crt.test_frule(f, X, *args, fkwargs=kwargs)
    crt.test_rrule(f, X.astype(np.float32), *args, fkwargs=kwargs)
    batched_pullback(f, X, *args, kwargs=kwargs)


@pytest.mark.parametrize("f, plain", [(np.nanvar, np.var), (np.nanstd, np.std)])
def test_nan_entries_take_no_part(f, plain):
    with_nans = np.where(MISSING, np.nan, X)
    y, back = cr.rrule(f, with_nans, axis=1, ddof=1)
    np.testing.assert_allclose(y, f(with_nans, axis=1, ddof=1), rtol=1e-14)
    dy = np.array([1.0, -2.0, 0.5])
    dx = cr.unthunk(back(dy)[1])
    assert np.all(dx[MISSING] == 0.0)
    for row in range(3):  # each row's valid entries: the plain function's cotangent
        kept = ~MISSING[row]
        _, row_back = cr.rrule(plain, X[row, kept], ddof=1)
        np.testing.assert_allclose(dx[row, kept], cr.unthunk(row_back(dy[row])[1]), rtol=1e-12)


def masked_spread(x):
    # NaN where MISSING, a constant: finite differences see the same NaN pattern at every step
    return np.sum(np.nanstd(np.where(MISSING, np.nan, x), axis=1) ** 2) + np.nanvar(np.where(MISSING, np.nan, x))


def test_every_engine_differentiates_moments_of_data_with_missing_entries():
    checks = crt.check_grads(masked_spread, (X,), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)


@pytest.mark.parametrize("args", [(), (1,), (0,)], ids=["flat", "axis-1", "axis-0"])
def test_nancumsum_against_finite_differences_and_with_nans(args, batched_pullback):
    crt.test_rrule(np.nancumsum, X, *args)
    crt.test_frule(np.nancumsum, X, *args)
    batched_pullback(np.nancumsum, X, *args)
    with_nans = np.where(MISSING, np.nan, X)
    y, back = cr.rrule(np.nancumsum, with_nans, *args)
    np.testing.assert_array_equal(y, np.nancumsum(with_nans, *args))
    dy = np.arange(1.0, y.size + 1).reshape(y.shape)
    dx = cr.unthunk(back(dy)[1])
    _, plain_back = cr.rrule(np.cumsum, np.where(MISSING, 0.0, X), *args)
    np.testing.assert_array_equal(dx, np.where(MISSING, 0.0, cr.unthunk(plain_back(dy)[1])))


def test_every_engine_differentiates_a_running_total_with_missing_entries():
    crt.check_grads(lambda x: np.sum(np.nancumsum(np.where(MISSING, np.nan, x), axis=1) ** 2), (X,), order=2)
