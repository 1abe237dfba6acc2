"""``np.nanmedian``, ``np.nanquantile`` and ``np.nanpercentile``: ``median``/``quantile``/``percentile``
of the entries that are not NaN, each row with its own count of them; a NaN entry gets no cotangent,
and the NaN output of a row of NaNs moves with nothing (neither its entries nor q)."""

from __future__ import annotations

import numpy as np
import pytest
from _array_checks import Const, check_batched_frule

import chainrules as cr
import chainrules.testing as crt

X = np.random.default_rng(5).permutation(24).reshape(2, 3, 4) / 7.0  # no ties: a derivative everywhere
MISSING = np.zeros(X.shape, dtype=bool)
MISSING[0, 0, 1] = MISSING[0, 1, :3] = MISSING[1, 2, :] = True  # rows of 4, 3, 1 and 0 valid entries
WITH_NANS = np.where(MISSING, np.nan, X)
ND = crt.nondiff
METHODS = ["linear", "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "hazen", "weibull"]
METHODS += ["median_unbiased", "normal_unbiased", "interpolated_inverted_cdf", "lower", "higher", "nearest", "midpoint"]

ORDER_STATISTICS = [
    (np.nanmedian, (X,), {}),
    (np.nanmedian, (X,), {"axis": 1}),
    (np.nanmedian, (X, ND(-1)), {"keepdims": True}),
    (np.nanmedian, (X[0].astype(np.float32),), {"axis": 0}),
    (np.nanquantile, (X, 0.3), {}),
    (np.nanquantile, (X, np.array([0.1, 0.55, 0.9])), {"axis": 2}),
    (np.nanquantile, (X, np.array([[0.2], [0.7]]), ND(1)), {"keepdims": True}),
    (np.nanquantile, (X,), {"q": 0.25, "axis": (0, 1)}),
    (np.nanpercentile, (X, 35.0), {"axis": 0}),
    (np.nanpercentile, (X, np.array([10.0, 80.0])), {"axis": (0, 2)}),
]


def _id(case):
    f, args, kwargs = case
    return f"{f.__name__}-{len(args)}-{sorted(kwargs.items())}"


def _plain(a):
    return getattr(a, "value", a)


@pytest.mark.parametrize("case", ORDER_STATISTICS, ids=_id)
def test_rules_without_nans_against_finite_differences(case, batched_pullback):
    f, args, kwargs = case
    tol = {"rtol": 1e-3, "atol": 1e-3} if np.result_type(_plain(args[0])) == np.float32 else {}
    crt.test_rrule(f, *args, fkwargs=kwargs, **tol)
    crt.test_frule(f, *args, fkwargs=kwargs, **tol)
    batched_pullback(f, *(_plain(a) for a in args), kwargs=kwargs, rtol=1e-6)
    check_batched_frule(f, *(Const(_plain(a)) if a is not _plain(a) else a for a in args), fkwargs=kwargs)


@pytest.mark.parametrize("method", METHODS)
def test_rules_with_nans_against_finite_differences(method):
    """Rows of 3, 1, 4 and 4 entries that are not NaN (and of 4 and 8), q away from every method's jumps and kinks."""
    data = WITH_NANS[:, :2]
    for f, q, axis in [(np.nanquantile, np.array([0.44, 0.57]), 2), (np.nanpercentile, 57.0, (1, 2))]:
        crt.test_rrule(f, data, q, fkwargs={"axis": axis, "method": method})
        crt.test_frule(f, data, q, fkwargs={"axis": axis, "method": method})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's: the row of NaNs)
@pytest.mark.parametrize(
    "f, plain, q, method",
    [
        (np.nanmedian, np.median, None, None),
        *((np.nanquantile, np.quantile, np.array([0.3, 0.8]), method) for method in METHODS),
        *((np.nanpercentile, np.percentile, 60.0, method) for method in METHODS),
    ],
)
def test_nan_entries_take_no_part(f, plain, q, method, batched_pullback):
    """Each row's entries that are not NaN: the plain function's cotangents, for every method."""
    args = () if q is None else (q,)
    options = {} if method is None else {"method": method}
    y, back = cr.rrule(f, WITH_NANS, *args, axis=2, **options)
    np.testing.assert_array_equal(y, f(WITH_NANS, *args, axis=2, **options))
    dy = np.arange(1.0, y.size + 1).reshape(y.shape)
    grads = back(dy)
    dx = cr.unthunk(grads[1])
    assert np.all(dx[MISSING] == 0.0)
    rows = np.reshape(dy, (-1, 6))  # (q, rows)
    for r, (i, j) in enumerate(np.ndindex(2, 3)):  # each row's valid entries: the plain function's cotangents
        kept = ~MISSING[i, j]
        if not kept.any():  # a row of NaNs: a NaN output, which nothing moves
            assert np.all(np.isnan(y[..., i, j])) and np.all(dx[i, j] == 0.0)
            continue
        _, row_back = cr.rrule(plain, X[i, j, kept], *args, **options)
        row_grads = row_back(rows[:, r].reshape(np.shape(y[..., i, j])))
        np.testing.assert_allclose(dx[i, j, kept], cr.unthunk(row_grads[1]), rtol=1e-13)
    if q is not None:  # q's cotangent: a NaN row's output cotangent plays no part in it
        dy_kept = np.where(np.isnan(y), 0.0, dy)
        np.testing.assert_allclose(back(dy_kept)[2], grads[2], rtol=1e-13)
        assert np.all(np.isfinite(grads[2]))
    _, dy_forward = cr.frule(
        (cr.NoTangent(), np.where(MISSING, np.nan, 1.0), *(0.0 for _ in args)), f, WITH_NANS, *args, axis=2, **options
    )
    np.testing.assert_array_equal(dy_forward, np.where(np.isnan(y), 0.0, 1.0))  # NaN tangents there take no part
    batched_pullback(f, WITH_NANS, *args, kwargs={"axis": 2, **options})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's: the quantile of nothing)
@pytest.mark.parametrize("f, args", [(np.nanmedian, ()), (np.nanquantile, ([0.2, 0.5],)), (np.nanpercentile, (50.0,))])
def test_no_entries_at_all_give_constant_nans(f, args):
    """NumPy's nan variants of an empty array are nanmean's NaNs, q's axes left out: nothing moves them."""
    x = np.ones((2, 0))
    y, back = cr.rrule(f, x, *args, axis=1)
    np.testing.assert_array_equal(y, f(x, *args, axis=1))
    assert all(isinstance(g, cr.ZeroTangent) for g in back(np.ones(np.shape(y)))[1:])
    assert (
        cr.frule((cr.NoTangent(), np.ones((2, 0)), *(np.ones(np.shape(a)) for a in args)), f, x, *args, axis=1)[1]
        == cr.ZeroTangent()
    )


def summaries_with_missing_entries(x, q, method="linear"):
    # NaN where MISSING (a constant: finite differences see the same NaN pattern at every step)
    data = np.where(MISSING[0], np.nan, x)
    low, high = np.nanquantile(data, np.array([0.0, 1.0]) + q * np.array([1.0, -1.0]), axis=1, method=method)
    spread = np.sum((high - low) ** 2) * np.nanpercentile(data, 100 * q, method=method)
    return np.sum(np.nanmedian(data, axis=0) ** 2) + spread + low[2]


# (q = 0.35 away from each one's jumps and kinks, for rows of 3, 1, 4 and 8 entries)
@pytest.mark.parametrize("method", ["linear", "hazen", "median_unbiased", "nearest", "averaged_inverted_cdf"])
def test_every_engine_differentiates_order_statistics_of_data_with_missing_entries(method):
    checks = crt.check_grads(lambda x, q: summaries_with_missing_entries(x, q, method), (X[0] * 1.3, 0.35), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_of_the_engines_and_forward_mode_agree(engine):
    x, q = X[0] * 1.3, 0.35
    expected = crt.fd_jacobian(lambda v: summaries_with_missing_entries(v, q), x)[0]
    gradient = cr.gradient(summaries_with_missing_entries, x, q, engine=engine)
    crt.assert_approx(gradient[0], expected.reshape(x.shape), rtol=1e-6, atol=1e-9)
    assert np.all(gradient[0][MISSING[0]] == 0.0)
    forward = cr.jacobian(lambda v: summaries_with_missing_entries(v, q), x, mode="forward")
    crt.assert_approx(forward, gradient[0], rtol=1e-12, atol=1e-12)
