"""Rules for ``np.gradient``, ``sliding_window_view``, ``as_strided``, ``np.cov`` and ``np.corrcoef``:
finite differences for every option NumPy has, both reverse engines and Hessians through them, and
the refusals (sample coordinates differentiated, writeable or misaligned strided views, complex
covariances)."""

import numpy as np
import pytest
from _array_checks import Const, check_batched_frule, check_engines
from test_linalg import rng_for

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing import nondiff, test_frule, test_rrule

windows = np.lib.stride_tricks.sliding_window_view
as_strided = np.lib.stride_tricks.as_strided

R = rng_for("windows-and-statistics")
U = R.standard_normal(7)
A = R.standard_normal((5, 6))
X = R.standard_normal((4, 6))
Y = R.standard_normal((2, 6))
COORDINATES = np.cumsum(R.uniform(0.5, 1.0, 7))

GRADIENT_CALLS = [
    ((U,), {}),
    ((U, 0.5), {}),
    ((U, 0.3), {"edge_order": 2}),
    ((U,), {"edge_order": 2}),
    ((U[:3],), {"edge_order": 2}),
    ((U[:2],), {}),
    ((A,), {}),
    ((A, 0.5, 2.0), {}),
    ((A, 0.7), {"axis": 1}),
    ((A,), {"axis": (1, 0), "edge_order": 2}),
    ((A.astype(np.float32), 0.5), {}),
]


@pytest.mark.parametrize("args, kwargs", GRADIENT_CALLS, ids=range(len(GRADIENT_CALLS)))
def test_gradient(args, kwargs):
    test_rrule(np.gradient, *args, fkwargs=kwargs)
    test_frule(np.gradient, *args, fkwargs=kwargs)


def _holding_coordinates_constant(f, u, x, **kwargs):
    """``cr.rrule`` with the coordinates' cotangent dropped, as an engine does for a constant;
    it must be left unevaluated, since evaluating it raises."""
    y, back = cr.rrule(f, u, x, **kwargs)

    def back_in_u(dy):
        df, du, dx = back(dy)
        assert isinstance(dx, (cr.Thunk, cr.ZeroTangent)), dx
        return df, du, cr.NoTangent()

    return y, back_in_u


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_with_sample_coordinates(edge_order):
    kwargs = {"edge_order": edge_order}
    test_rrule(np.gradient, U, nondiff(COORDINATES), fkwargs=kwargs, rule=_holding_coordinates_constant)
    test_frule(np.gradient, U, nondiff(COORDINATES), fkwargs=kwargs)
    _, back = cr.rrule(np.gradient, U, COORDINATES)
    at_this_file = r"np\.gradient at .*test_windows_and_statistics\.py:\d+: its derivative in "
    with pytest.raises(cr.NoDerivativeError, match=at_this_file):
        cr.unthunk(back(np.ones(7))[2])
    with pytest.raises(cr.NoDerivativeError, match=r"np\.gradient at .*: its derivative in sample coordinates"):
        cr.frule((cr.NoTangent(), np.ones(7), np.ones(7)), np.gradient, U, COORDINATES)



def _gradient_twice_from_a_pair(u):
    pair = (u, COORDINATES)  # (a structure whose coordinates are constant)
    return np.sum(np.gradient(pair[0], pair[1]) * np.gradient(pair[0] ** 2, pair[1]))


def test_gradient_at_constant_coordinates_used_twice():
    """The coordinates' two refused cotangents are summed and passed back unread, as a constant's
    cotangents are: no refusal where the coordinates are not differentiated."""
    expected = crt.fd_jacobian(_gradient_twice_from_a_pair, U)[0]
    for engine in ("source", "tape"):
        crt.assert_approx(cr.gradient(_gradient_twice_from_a_pair, U, engine=engine)[0], expected, rtol=1e-6)
    crt.assert_approx(cr.jacobian(_gradient_twice_from_a_pair, U, mode="forward"), expected, rtol=1e-6)

WINDOW_CALLS = [
    ((U, 3), {}),
    ((A, (2, 3)), {}),
    ((A, 2), {"axis": 1}),
    ((A, (2, 2)), {"axis": (1, 1)}),
    ((A, 3, 0), {}),
]


@pytest.mark.parametrize("args, kwargs", WINDOW_CALLS, ids=range(len(WINDOW_CALLS)))
def test_sliding_window_view(args, kwargs):
    test_rrule(windows, *args, fkwargs=kwargs)
    test_frule(windows, *args, fkwargs=kwargs)


def _strides(x, *steps):
    """Strides that step ``steps`` entries of ``x`` (laid out in C order)."""
    return tuple(k * x.itemsize for k in steps)


A32 = A.astype(np.float32)
STRIDED_CALLS = [
    (U, (5, 3), _strides(U, 1, 1)),  # overlapping windows of a series
    (U, (3, 3), _strides(U, 2, 1)),  # windows every other entry
    (A, (4, 5, 2, 2), _strides(A, 6, 1, 6, 1)),  # the 2x2 patches of a matrix
    (A, (2, 3, 3), _strides(A, 1, 6, 7)),  # overlapping diagonals
    (U, (4, 3), _strides(U, 1, 0)),  # a broadcast axis
    (A32, (3, 4), _strides(A32, 7, 2)),
]


@pytest.mark.parametrize("x, shape, strides", STRIDED_CALLS, ids=range(len(STRIDED_CALLS)))
def test_as_strided(x, shape, strides):
    kwargs = {"writeable": False}
    test_rrule(as_strided, x, nondiff(shape), nondiff(strides), fkwargs=kwargs)
    test_frule(as_strided, x, nondiff(shape), nondiff(strides), fkwargs=kwargs)
    check_batched_frule(as_strided, x, Const(shape), Const(strides), fkwargs=kwargs)
    y, back = cr.rrule(as_strided, x, shape, strides, writeable=False)
    rows = R.standard_normal((3, *shape)).astype(x.dtype)
    batched = back(rows)[1]
    for row, dx in zip(rows, batched):
        np.testing.assert_allclose(dx, back(row)[1], rtol=1e-6)


def _strided_loss(x):
    step = x.strides[0]
    lagged = as_strided(x, shape=(x.size - 2, 3), strides=(step, step), writeable=False)
    return np.sum(np.sin(lagged) * lagged[:, ::-1] ** 2) + np.sum(lagged.T @ lagged)


def test_as_strided_through_the_engines_and_hessians():
    # the tape and forward mode see operations, not calls of Python functions: as_strided, which NumPy
    # does not dispatch to them, converts their values, which they refuse (forward mode falls back to
    # the source engine's primal)
    check_engines(_strided_loss, U, engines=("source",))
    with pytest.raises(cr.ChainRulesError, match=r"as_strided has a rule that the tape engine cannot use here"):
        cr.gradient(_strided_loss, U, engine="tape")


@pytest.mark.parametrize(
    "call, reason",
    [
        (lambda x: as_strided(x, (5, 3), _strides(x, 1, 1)), "writeable=True: pass writeable=False"),
        (lambda x: as_strided(x, (3,), (12,), writeable=False), "not multiples of the itemsize 8"),
        (lambda x: as_strided(x, (5, 3), _strides(x, 1, 2), writeable=False), "memory outside the array"),
        (lambda x: as_strided(x[::2], (2,), (16,), writeable=False), "not C-contiguous"),
    ],
    ids=["writeable", "misaligned", "outside", "strided-base"],
)
def test_as_strided_refusals_name_the_line(call, reason):
    with pytest.raises(cr.NoRuleError, match=rf"as_strided.* at .*test_windows_and_statistics\.py:\d+ \(.*{reason}"):
        cr.gradient(lambda x: np.sum(call(x)), U)


COV_CALLS = [
    ((X,), {}),
    ((X.T,), {"rowvar": False}),
    ((X, Y), {}),
    ((X.T, Y.T), {"rowvar": False}),
    ((X[0],), {}),
    ((X[0], X[1]), {}),
    ((X,), {"bias": True}),
    ((X,), {"ddof": 2}),
    ((X,), {"aweights": np.arange(1.0, 7.0)}),
    ((X,), {"fweights": np.arange(1, 7), "aweights": np.linspace(0.5, 1.0, 6)}),
    ((X,), {"fweights": np.arange(1, 7), "ddof": 0}),
    ((X.astype(np.float32),), {}),
    # aweights in their place, differentiated: ddof 1 and 2 (f = sum w - ddof sum(w aw) / sum w), 0 (f = sum w)
    ((X, None, True, False, None, None, np.linspace(0.5, 2.0, 6)), {}),
    ((X, None, True, False, 2, np.arange(1, 7), np.linspace(0.5, 2.0, 6)), {}),
    ((X, Y, True, False, 0, None, np.linspace(2.0, 0.5, 6)), {}),
]


@pytest.mark.parametrize("args, kwargs", COV_CALLS, ids=range(len(COV_CALLS)))
def test_cov(args, kwargs):
    test_rrule(np.cov, *args, fkwargs=kwargs)
    test_frule(np.cov, *args, fkwargs=kwargs)


@pytest.mark.parametrize("args, kwargs", COV_CALLS[:6], ids=range(6))
def test_corrcoef(args, kwargs):
    test_rrule(np.corrcoef, *args, fkwargs=kwargs)
    test_frule(np.corrcoef, *args, fkwargs=kwargs)


def _weighted_covariance_loss(w):
    return np.sum(np.cov(X, aweights=w, ddof=2) ** 2) + np.sum(np.cov(X[:2], Y, aweights=w * w)[0])


def test_aweights_by_keyword_in_every_engine_and_hessians():
    w = np.linspace(0.5, 2.0, 6)
    expected = crt.fd_jacobian(_weighted_covariance_loss, w)[0]
    for engine in ("source", "tape"):
        crt.assert_approx(cr.gradient(_weighted_covariance_loss, w, engine=engine)[0], expected, rtol=1e-6, atol=1e-9)
        H = cr.hessian(_weighted_covariance_loss, w, engine=engine)
        fd = crt.fd_jacobian(lambda v: cr.gradient(_weighted_covariance_loss, v)[0], w)
        crt.assert_approx(H, fd, rtol=1e-5, atol=1e-7)
    crt.assert_approx(cr.jacobian(_weighted_covariance_loss, w, mode="forward"), expected, rtol=1e-6, atol=1e-9)


def test_complex_covariances_are_refused():
    with pytest.raises(cr.NoRuleError, match="a complex array: the rules of np.cov and np.corrcoef take real ones"):
        cr.rrule(np.cov, X + 1j * X)


def _statistics_loss(z):
    M = np.reshape(z, (3, 4))
    smooth = np.gradient(M, 0.5, axis=1, edge_order=2)
    return (
        np.sum(np.cov(M) ** 2)
        + np.sum(np.corrcoef(M.T, rowvar=False)[0])
        + np.sum(smooth**2)
        + np.sum(windows(M[0], 2) @ np.array([1.0, -2.0]) ** 2)
        + np.sum(np.gradient(M[1], 0.3) * M[2])
    )


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_through_both_engines_and_their_hessians(engine):
    z = rng_for("statistics-loss").standard_normal(12)
    grad = cr.gradient(_statistics_loss, z, engine=engine)[0]
    crt.assert_approx(grad, crt.fd_jacobian(_statistics_loss, z)[0], rtol=1e-6, atol=1e-8)
    H = cr.hessian(_statistics_loss, z, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(_statistics_loss, v)[0], z), rtol=1e-5, atol=1e-7)


# ----- histogram ----------------------------------------------------------------------------------

_H = np.random.default_rng(13)
SAMPLES, WEIGHTS = _H.uniform(size=12), _H.normal(size=12)
HISTOGRAM = [
    (SAMPLES, nondiff(4), (0.0, 1.0), nondiff(None), WEIGHTS),
    (SAMPLES, nondiff(4), (-0.1, 1.3), nondiff(True), WEIGHTS),  # the range reaches the densities
    (SAMPLES, nondiff(5), nondiff(None), nondiff(True), WEIGHTS),  # edges from the extreme samples
    (SAMPLES.reshape(3, 4), np.array([0.0, 0.3, 0.55, 1.0]), nondiff(None), nondiff(True), WEIGHTS.reshape(3, 4)),
    (SAMPLES, nondiff(3), nondiff(None), nondiff(False), WEIGHTS.astype(np.float32)),
]


@pytest.mark.parametrize("args", HISTOGRAM, ids=range(len(HISTOGRAM)))
def test_histogram(args):
    """The sums in the weights, the edges in bins, range or the extreme samples, the densities in all."""
    test_rrule(np.histogram, *args)
    test_frule(np.histogram, *args)


def test_histogram_weights_at_the_last_edge_and_outside():
    """A sample at the last edge is in the last bin, as NumPy counts it; one outside the range in none."""
    samples, weights = np.array([0.2, 1.0, 1.5, -0.1]), np.array([1.0, 2.0, 3.0, 4.0])
    y, back = cr.rrule(np.histogram, samples, 2, (0.0, 1.0), None, weights)
    np.testing.assert_array_equal(y[0], [1.0, 2.0])
    np.testing.assert_array_equal(back((np.array([10.0, 20.0]), cr.ZeroTangent()))[5], [10.0, 20.0, 0.0, 0.0])


def test_histogram_through_the_engines():
    from _array_checks import check_engines

    def f(x):
        h, edges = np.histogram(x**2, bins=3, weights=np.exp(x), density=True)
        g, _ = np.histogram(SAMPLES, bins=np.array([0.0, 0.4, 1.0]), weights=x[:4].repeat(3) * x[0])
        return np.sum(h * edges[1:]) + np.sum(g**2) + np.sum(edges**2)

    check_engines(f, np.array([0.13, 0.58, 0.91, 0.34, 0.7]))


SAMPLES_Y = _H.uniform(size=12)
HISTOGRAM2D = [
    (SAMPLES, SAMPLES_Y, nondiff(3), ((0.0, 1.0), (0.0, 1.0)), nondiff(None), WEIGHTS),
    (SAMPLES, SAMPLES_Y, nondiff([3, 2]), ((-0.1, 1.2), (0.0, 1.1)), nondiff(True), WEIGHTS),  # ranges in densities
    (SAMPLES, SAMPLES_Y, nondiff(3), nondiff(None), nondiff(True), WEIGHTS),  # edges from the extreme samples
    (SAMPLES, SAMPLES_Y, np.array([0.0, 0.3, 0.55, 1.0]), nondiff(None), nondiff(True), WEIGHTS),  # edges shared
    (SAMPLES, SAMPLES_Y, [np.array([0.0, 0.3, 1.0]), np.array([0.0, 0.5, 1.0])], nondiff(None), nondiff(True), WEIGHTS),
    (SAMPLES, SAMPLES_Y, nondiff(3), nondiff(None), nondiff(False), WEIGHTS.astype(np.float32)),
]


@pytest.mark.parametrize("args", HISTOGRAM2D, ids=range(len(HISTOGRAM2D)))
def test_histogram2d(args):
    """The sums in the weights, each axis's edges in its bins, its range or its extreme samples."""
    test_rrule(np.histogram2d, *args)
    test_frule(np.histogram2d, *args)


def test_histogram2d_weights_outside_the_range():
    """A sample outside either axis's range is in no bin; one at the last edges in the last bins."""
    x, y, weights = np.array([0.2, 1.0, 1.5, 0.5]), np.array([0.7, 1.0, 0.5, -0.2]), np.array([1.0, 2.0, 3.0, 4.0])
    h, _, _ = np.histogram2d(x, y, 2, ((0.0, 1.0), (0.0, 1.0)), None, weights)
    _, back = cr.rrule(np.histogram2d, x, y, 2, ((0.0, 1.0), (0.0, 1.0)), None, weights)
    dh = np.array([[10.0, 20.0], [30.0, 40.0]])
    np.testing.assert_array_equal(back((dh, cr.ZeroTangent(), cr.ZeroTangent()))[6], [20.0, 40.0, 0.0, 0.0])


def test_histogram2d_through_the_engines():
    from _array_checks import check_engines

    def f(x):
        h, xe, ye = np.histogram2d(x**2, np.cos(x), bins=(3, 2), weights=np.exp(x), density=True)
        g, _, _ = np.histogram2d(SAMPLES[:5], SAMPLES_Y[:5], bins=2, range=((0, 1), (0, 1)), weights=x * x[0])
        return np.sum(h * xe[1:, None] * ye[None, 1:]) + np.sum(g**2) + np.sum(xe**2) * ye[0]

    check_engines(f, np.array([0.13, 0.58, 0.91, 0.34, 0.7]))
