"""Rules for ``scipy.stats``' summary statistics (moments, means, entropy, order statistics,
standard scores, correlations): finite differences for every differentiated argument in the
settings the rules take; gradients through the three engines, Hessians and reverse Jacobians;
pearsonr's result object; spearmanr's zero derivative; the refusals."""

import numpy as np
import pytest
import scipy.stats as st

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(41)
A = R.random((3, 4)) + 0.5  # positive: the means and the entropy take positive data
W = R.random((3, 4)) + 0.5
C = R.standard_normal((3, 4))

CASES = [
    (st.moment, (A,), {"order": 3}),
    (st.moment, (A,), {"order": 2, "axis": None, "keepdims": True}),
    (st.moment, (A,), {"order": 3, "axis": 1, "center": W[:, :1]}),
    (st.skew, (A,), {"axis": (0, 1)}),
    (st.skew, (A,), {"axis": 1, "bias": False, "keepdims": True}),
    (st.kurtosis, (A,), {"axis": 1, "fisher": False, "bias": False}),
    (st.sem, (A,), {"axis": 1}),
    (st.variation, (A,), {"ddof": 1}),
    (st.gmean, (A, 1, None, W), {}),
    (st.hmean, (A,), {"axis": None}),
    (st.pmean, (A, 1.5), {"weights": W}),
    (st.pmean, (A, -2.0), {"axis": 1}),
    (st.pmean, (A,), {"p": 0.0}),  # the geometric mean
    (st.trim_mean, (A, 0.3), {"axis": 1}),
    (st.entropy, (A,), {}),
    (st.entropy, (A, W, 2.0, 1), {}),
    (st.zscore, (A,), {"axis": 1, "ddof": 1}),
    (st.zscore, (A,), {"axis": None}),
    (st.zmap, (C[:2], A), {}),
    (st.zmap, (C[:, :2], A), {"axis": 1, "ddof": 1}),
    (st.iqr, (C, 1, (20.0, 70.0), 2.0), {}),
    (st.iqr, (C,), {"scale": "normal", "interpolation": "midpoint", "keepdims": True}),
    (st.median_abs_deviation, (C, nondiff(1), nondiff(np.mean), 1.5), {}),
    (st.median_abs_deviation, (C,), {"axis": None, "scale": "normal"}),
    (st.pearsonr, (A, C), {"axis": 1}),
    (st.pearsonr, (A[0], C[0]), {"alternative": "less"}),
    (st.pearsonr, (A, C), {"alternative": "greater"}),
]


@pytest.mark.parametrize("f, args, kwargs", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_against_finite_differences(f, args, kwargs):
    test_rrule(f, *args, fkwargs=kwargs)
    test_frule(f, *args, fkwargs=kwargs)


def test_list_data():
    data = [1.0, 2.5, 4.0, 3.0]
    test_rrule(st.skew, data)
    test_frule(st.zscore, data)
    # (iqr and median_abs_deviation, through NumPy's percentile and median: their cotangents were arrays, which
    # a list's cotangent from another statistic did not add to)
    for f in (st.iqr, st.median_abs_deviation):
        test_rrule(f, [1.0, 2.5, 4.2, 3.0, 0.4])
        test_frule(f, [1.0, 2.5, 4.2, 3.0, 0.4])
    x = np.array([1.0, 2.5, 4.2, 3.0, 0.4])
    gradient = cr.gradient(lambda v: st.iqr(list(v)) + st.median_abs_deviation(list(v)) + st.skew(list(v)), x)[0]
    expected = fd_jacobian(lambda v: st.iqr(v) + st.median_abs_deviation(v) + st.skew(v), x)[0]
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8)


X = A[:2, :3]  # (small: a Hessian is checked by finite differences of the gradient)
K = C[:2, :3]
PROGRAMS = {
    "moment": lambda x: np.sum(st.moment(x, order=3, axis=1) ** 2),
    "skew": lambda x: st.skew(x, axis=1, bias=False) @ np.arange(2.0),
    "kurtosis": lambda x: st.kurtosis(x, axis=None),
    "sem": lambda x: np.sum(st.sem(x, axis=1) ** 2),
    "variation": lambda x: np.sum(st.variation(x, axis=0)),
    "gmean": lambda x: np.sum(st.gmean(x, axis=1, weights=x[::-1]) ** 2),
    "hmean": lambda x: np.sum(st.hmean(x * x, axis=0)),
    "pmean": lambda x: np.sum(st.pmean(x, 1.5, axis=0) ** 2),
    "trim_mean": lambda x: st.trim_mean(x**2, 0.2, axis=None),
    "entropy": lambda x: np.sum(st.entropy(x, x[::-1] ** 2, axis=1)),
    "zscore": lambda x: np.sum(st.zscore(x, axis=1, ddof=1) ** 3 * K),
    "zmap": lambda x: np.sum(st.zmap(K, x, axis=None) ** 3),
    "iqr": lambda x: np.sum(st.iqr(x**3, axis=1) ** 2),
    "median_abs_deviation": lambda x: np.sum(st.median_abs_deviation(x**3, axis=1) ** 2),
    "pearsonr": lambda x: np.sum(st.pearsonr(x, K, axis=1).statistic ** 2),
    "pearsonr_pvalue": lambda x: np.sum(st.pearsonr(x, K, axis=1).pvalue),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_gradients_and_hessians(name):
    f = PROGRAMS[name]
    expected = fd_jacobian(f, X).reshape(X.shape)
    np.testing.assert_allclose(cr.gradient(f, X)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, X, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(f, z)[0], X).reshape(X.shape * 2)
    np.testing.assert_allclose(cr.hessian(f, X), hessian, rtol=1e-5, atol=1e-7)


KEYWORD_ONLY = {
    "hmean_weights": (lambda w: np.sum(st.hmean(X, weights=w, axis=1)), W[:2, :3]),
    "pmean_weights": (lambda w: st.pmean(X, -1.0, weights=w**2, axis=None), W[:2, :3]),
    "moment_center": (lambda c: np.sum(st.moment(X, order=3, center=c, axis=1, keepdims=True) ** 2), W[:2, :1]),
}


@pytest.mark.parametrize("name", KEYWORD_ONLY)
def test_keyword_only_arguments(name):
    """hmean's and pmean's weights= and moment's center= are keyword-only: the engines pass them by
    the positions declared for them."""
    f, x = KEYWORD_ONLY[name]
    expected = fd_jacobian(f, x).reshape(x.shape)
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(x.shape * 2)
    np.testing.assert_allclose(cr.hessian(f, x), hessian, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "f, kwargs",
    [
        (st.skew, {"axis": None}),
        (st.entropy, {"axis": None}),
        (st.pmean, {"p": 2.5, "axis": None}),
        (st.iqr, {}),
        (st.median_abs_deviation, {"axis": None}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_tape(f, kwargs):
    expected = fd_jacobian(lambda x: f(x, **kwargs), A).reshape(A.shape)
    np.testing.assert_allclose(cr.gradient(f, A, engine="tape", **kwargs)[0], expected, rtol=1e-6, atol=1e-8)


def test_tape_pullbacks_of_array_outputs():
    dy = R.standard_normal(3)
    _, back = cr.pullback(st.pearsonr, A, C, axis=1, engine="tape")
    expected = dy @ fd_jacobian(lambda x: st.pearsonr(x, C, axis=1).statistic, A).reshape(3, -1)
    np.testing.assert_allclose(back(cr.Tangent[st._stats_py.PearsonRResult](statistic=dy))[0].ravel(), expected)
    dz = R.standard_normal(A.shape)
    _, back = cr.pullback(st.zscore, A, engine="tape")
    expected = dz.ravel() @ fd_jacobian(st.zscore, A)
    np.testing.assert_allclose(back(dz)[0].ravel(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: st.skew(x, axis=1),
        lambda x: st.gmean(x, axis=0),
        lambda x: st.zscore(x, axis=1),
        lambda x: st.iqr(x, axis=1),
        lambda x: st.median_abs_deviation(x, axis=0),
        lambda x: st.pearsonr(x, C, axis=1).pvalue,
    ],
)
def test_reverse_jacobians(f):
    expected = fd_jacobian(f, A).reshape(np.shape(f(A)) + A.shape)
    np.testing.assert_allclose(cr.jacobian(f, A, mode="reverse"), expected, rtol=1e-6, atol=1e-8)


def test_number_arguments():
    """pmean's p, entropy's base and iqr's and median_abs_deviation's scale are differentiated."""
    for f, x in [
        (lambda p: st.pmean(A, p, axis=None), 1.5),
        (lambda b: st.entropy(A, base=b, axis=None), 3.0),
        (lambda s: st.iqr(C, scale=s), 1.5),
        (lambda s: st.median_abs_deviation(C, axis=None, scale=s), 1.5),
    ]:
        expected = fd_jacobian(f, x)[0]
        np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6)
        np.testing.assert_allclose(cr.derivative(f, x), expected, rtol=1e-6)


def test_moment_by_its_former_keyword():
    """SciPy still takes moment's order as ``moment=``, which its signature does not show: the rules
    bind it as the order, where they raised a TypeError (an unexpected keyword argument)."""

    def f(x):
        return np.sum(st.moment(x, moment=3, axis=1) ** 2)

    expected = fd_jacobian(f, A).reshape(A.shape)
    np.testing.assert_allclose(cr.gradient(f, A)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, A, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda z: cr.gradient(f, z)[0], A).reshape(A.shape * 2)
    np.testing.assert_allclose(cr.hessian(f, A), hessian, rtol=1e-5, atol=1e-7)


def test_pearsonr_correlation_alias():
    """SciPy's result keeps the statistic also as ``correlation``: both engines differentiate it."""

    def f(x):
        return st.pearsonr(x, C[0]).correlation

    expected = fd_jacobian(f, A[0])[0]
    np.testing.assert_allclose(cr.gradient(f, A[0])[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, A[0], mode="forward"), expected, rtol=1e-6, atol=1e-8)


def test_pearsonr_of_two_points():
    """Two points give r = ±1 and the p-value 1 whatever they are: zero derivatives, not NaN."""
    gradient = cr.gradient(lambda x: st.pearsonr(x, C[0, :2]).pvalue, A[0, :2])[0]
    np.testing.assert_array_equal(gradient, 0.0)


def test_spearmanr_has_a_zero_derivative():
    def f(x):
        result = st.spearmanr(x, C[0])
        return result.statistic + result.pvalue + np.sum(x**2)

    np.testing.assert_allclose(cr.gradient(f, A[0])[0], 2 * A[0])
    np.testing.assert_allclose(cr.jacobian(f, A[0], mode="forward"), 2 * A[0])
    _, back = cr.rrule(st.spearmanr, A[0], C[0])
    assert back(1.0) == (cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: cr.rrule(st.skew, A, nan_policy="omit"), r"skew\(.*test_stats_summaries\.py.*nan_policy='omit'"),
        (lambda: cr.frule((cr.NoTangent(), A), st.zscore, A + 1j), r"zscore\(.*test_stats_summaries\.py.*complex"),
        (lambda: cr.rrule(st.moment, A, [2, 3]), r"moment\(.*test_stats_summaries\.py.*an array of orders"),
        (lambda: cr.rrule(st.moment, A, 2, 0, center=W[:1]), r"moment\(.*test_stats_summaries\.py.*array center="),
        (
            lambda: cr.rrule(st.pearsonr, A[0], C[0], method=st.PermutationMethod()),
            r"pearsonr\(.*test_stats_summaries\.py.*method=",
        ),
        (
            lambda: cr.rrule(st.median_abs_deviation, C, center=lambda x, axis: np.min(x, axis=axis)),
            r"<lambda>.*test_stats_summaries\.py.*median_abs_deviation differentiates it through its rule",
        ),
    ],
)
def test_refusals(call, message):
    with pytest.raises(cr.NoRuleError, match=message):
        call()


def test_pearsonr_refuses_its_other_attributes():
    with pytest.raises(cr.NoDerivativeError, match=r"pearsonr at .*test_stats_summaries\.py.*_x is not"):
        cr.gradient(lambda x: st.pearsonr(x, C[0])._x[0], A[0])
