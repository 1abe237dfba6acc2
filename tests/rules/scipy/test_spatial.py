"""Rules for ``scipy.spatial.distance``: ``cdist``, ``pdist``, ``squareform`` and the distances of
two vectors, against finite differences, through the engines (to second order), at coincident
points, and the refusal of the metrics without a rule."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist, cityblock, euclidean, pdist, sqeuclidean, squareform

import chainrules as cr
from chainrules.testing import check_grads, fd_jacobian, test_frule, test_rrule

METRICS = ["euclidean", "sqeuclidean", "cityblock"]
DTYPES = [np.float64, np.float32]


def _points(seed, *shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _fd_gradient(f, x):
    return fd_jacobian(f, x).reshape(x.shape)


def _fd_hessian(f, x):
    return fd_jacobian(lambda z: cr.gradient(f, z, engine="source")[0], x).reshape(x.shape + x.shape)


# ----- the rules against finite differences -------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", METRICS)
def test_cdist(metric, dtype):
    A, B = _points(1, 3, 2, dtype=dtype), _points(2, 4, 2, dtype=dtype)
    np.testing.assert_array_equal(cr.rrule(cdist, A, B, metric)[0], cdist(A, B, metric))
    test_rrule(cdist, A, B, metric)
    test_frule(cdist, A, B, metric)
    test_rrule(cdist, A, B, fkwargs={"metric": metric})
    test_frule(cdist, A, B, fkwargs={"metric": metric})


@pytest.mark.parametrize("metric", METRICS)
def test_cdist_with_weights(metric):
    A, B, w = _points(3, 3, 4), _points(4, 2, 4), np.array([0.5, 1.0, 2.0, 1.5])
    test_rrule(cdist, A, B, metric, fkwargs={"w": w})
    test_frule(cdist, A, B, metric, fkwargs={"w": w})


def test_cdist_default_metric_is_euclidean():
    A, B = _points(5, 2, 3), _points(6, 3, 3)
    np.testing.assert_array_equal(cr.rrule(cdist, A, B)[0], cdist(A, B))
    test_rrule(cdist, A, B)
    test_frule(cdist, A, B)
    test_rrule(cdist, A, B, "sqe")  # SciPy's aliases
    test_frule(cdist, A, B, fkwargs={"metric": "cblock"})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", METRICS)
def test_pdist(metric, dtype):
    X = _points(7, 4, 3, dtype=dtype)
    np.testing.assert_array_equal(cr.rrule(pdist, X, metric)[0], pdist(X, metric))
    test_rrule(pdist, X, metric)
    test_frule(pdist, X, metric)
    test_rrule(pdist, X, fkwargs={"metric": metric, "w": np.array([1.0, 0.5, 2.0])})
    test_frule(pdist, X, fkwargs={"metric": metric, "w": np.array([1.0, 0.5, 2.0])})


@pytest.mark.parametrize("dtype", DTYPES)
def test_squareform_both_directions(dtype):
    v = _points(8, 6, dtype=dtype)
    np.testing.assert_array_equal(cr.rrule(squareform, v)[0], squareform(v))
    test_rrule(squareform, v)
    test_frule(squareform, v)
    M = _points(9, 4, 4, dtype=dtype)  # (not symmetric: read above the diagonal, as SciPy reads it)
    np.testing.assert_array_equal(cr.rrule(squareform, M, checks=False)[0], squareform(M, checks=False))
    test_rrule(squareform, M, fkwargs={"checks": False})
    test_frule(squareform, M, fkwargs={"checks": False})
    S = squareform(v)  # a distance matrix, with SciPy's checks: the same rule (finite differences leave them)
    _, back = cr.rrule(squareform, S)
    np.testing.assert_array_equal(back(np.arange(1.0, 7.0))[1], np.triu(squareform(np.arange(1.0, 7.0))))


def test_squareform_of_one_point():
    test_rrule(squareform, np.zeros(0))
    test_frule(squareform, np.zeros(0))
    test_rrule(squareform, np.zeros((1, 1)))
    test_frule(squareform, np.zeros((1, 1)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f", [euclidean, sqeuclidean, cityblock])
def test_vector_distances(f, dtype):
    u, v = _points(10, 5, dtype=dtype), _points(11, 5, dtype=dtype)
    assert cr.rrule(f, u, v)[0] == f(u, v)
    test_rrule(f, u, v)
    test_frule(f, u, v)
    w = np.linspace(0.5, 2.0, 5).astype(dtype)  # the weights are differentiated too
    test_rrule(f, u, v, w)
    test_frule(f, u, v, w)


# SciPy broadcasts u - v (and w) like NumPy: each cotangent is summed back to its argument's shape
BROADCAST_SHAPES = [((2,), (1,), None), ((1,), (3,), None), ((3,), (3,), (1,)), ((1,), (1,), (3,)), ((1,), (3,), (3,))]


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("f", [euclidean, sqeuclidean, cityblock])
def test_vector_distances_broadcast(f, shapes):
    rng = np.random.default_rng(16)
    args = [rng.uniform(0.5, 2.0, s) * (1 + i) for i, s in enumerate(shapes) if s is not None]
    try:
        expected = f(*args)
    except ValueError:  # (sqeuclidean's np.dot takes no w longer than u - v)
        pytest.skip("SciPy refuses these shapes")
    assert cr.rrule(f, *args)[0] == expected
    test_rrule(f, *args)
    test_frule(f, *args)
    y, back = cr.rrule(f, *args)  # a batch of cotangents, summed back row by row
    batch = back(np.array([1.0, -2.0, 0.5]))
    for i, seed in enumerate([1.0, -2.0, 0.5]):
        for c, c1 in zip(batch[1:], back(seed)[1:]):
            np.testing.assert_allclose(cr.unthunk(c)[i], cr.unthunk(c1), rtol=1e-13)
    for k in range(len(args)):  # each argument differentiated through the engines

        def g(x, k=k):
            return f(*args[:k], x, *args[k + 1 :])

        expected = _fd_gradient(g, args[k])
        np.testing.assert_allclose(cr.gradient(g, args[k], engine="source")[0], expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(cr.jacobian(g, args[k], mode="forward"), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(cr.hessian(g, args[k]), _fd_hessian(g, args[k]), rtol=1e-5, atol=1e-6)


def test_euclidean_broadcast_gradient():
    def f(u):
        return euclidean(u, np.array([0.5]))

    u = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.gradient(f, u)[0], _fd_gradient(f, u), rtol=1e-7)
    np.testing.assert_allclose(cr.gradient(f, u)[0], cr.jacobian(f, u, mode="forward"), rtol=1e-13)


@pytest.mark.parametrize("metric", METRICS)
def test_batched_rules_equal_row_by_row(metric):
    A, B, X = _points(12, 3, 2), _points(13, 4, 2), _points(14, 4, 2)
    rng = np.random.default_rng(15)
    for f, args in ((cdist, (A, B)), (pdist, (X,))):
        assert cr.frule.lookup(f, args).batched
        dirs = [rng.standard_normal((3,) + a.shape) for a in args]
        _, dy = cr.frule((cr.NoTangent(), *dirs, cr.NoTangent()), f, *args, metric)
        y, back = cr.rrule(f, *args, metric)
        seeds = rng.standard_normal((3,) + y.shape)
        batch = [cr.unthunk(c) for c in back(seeds)[1 : 1 + len(args)]]
        for i in range(3):
            _, dy1 = cr.frule((cr.NoTangent(), *[d[i] for d in dirs], cr.NoTangent()), f, *args, metric)
            np.testing.assert_allclose(dy[i], dy1, rtol=1e-13, atol=1e-15)
            for c, c1 in zip(batch, back(seeds[i])[1 : 1 + len(args)]):
                np.testing.assert_allclose(c[i], cr.unthunk(c1), rtol=1e-13, atol=1e-15)


# ----- coincident points: the subgradient 0, as np.linalg.norm's rule at a zero vector ---------


def test_coincident_points_have_subgradient_zero():
    A = np.array([[1.0, 2.0], [0.0, 0.0]])
    B = np.array([[1.0, 2.0]])
    _, back = cr.rrule(cdist, A, B)
    dA, dB = (cr.unthunk(c) for c in back(np.ones((2, 1)))[1:3])
    assert np.all(np.isfinite(dA)) and np.all(np.isfinite(dB))
    np.testing.assert_array_equal(dA[0], 0.0)  # the coincident pair adds nothing
    np.testing.assert_allclose(dA[1], -B[0] / np.linalg.norm(B[0]))
    _, dy = cr.frule((cr.NoTangent(), np.ones_like(A), np.zeros_like(B)), cdist, A, B)
    assert dy[0, 0] == 0.0
    norm_gradient = cr.rrule(np.linalg.norm, np.zeros(2))[1](1.0)[1]  # the convention matched
    np.testing.assert_array_equal(cr.rrule(euclidean, B[0], B[0])[1](1.0)[1], norm_gradient)
    X = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(
        cr.gradient(lambda x: np.sum(pdist(x)), X, engine="source")[0][:2], [[1.0, 0], [1, 0]]
    )
    assert cr.rrule(cityblock, B[0], B[0])[1](1.0)[1].tolist() == [0.0, 0.0]  # sign(0) = 0


# ----- the engines ------------------------------------------------------------------------------

Y = _points(20, 4, 2)
W = _points(21, 3, 4)


def rbf(X):
    return np.sum(np.exp(-cdist(X, Y, "sqeuclidean") / 2) * W)


def pairwise(X):
    K = squareform(np.exp(-pdist(X)))  # a Laplace kernel of the points, through the matrix form
    return np.sum(K * K[::-1]) + np.sum(squareform(K + np.eye(3), checks=False) ** 2)


def manhattan(X):
    return np.sum(np.sin(cdist(X, Y, "cityblock")) * W) + cityblock(X[0], X[1]) ** 2


def vectors(X):
    return euclidean(X[0], X[1]) * sqeuclidean(X[1], X[2], np.array([1.0, 2.0])) + np.sum(cdist(X, Y) ** 3)


@pytest.mark.parametrize("f", [rbf, pairwise, manhattan, vectors])
def test_engines_against_finite_differences(f):
    X = _points(22, 3, 2)
    expected = _fd_gradient(f, X)
    np.testing.assert_allclose(cr.gradient(f, X, engine="source")[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, X, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(f, X), _fd_hessian(f, X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cr.hessian(f, X, engine="source"), _fd_hessian(f, X), rtol=1e-6, atol=1e-7)


def test_jacobians_in_both_modes():
    X = _points(23, 4, 2)
    for metric in METRICS:
        forward = cr.jacobian(lambda x, m=metric: pdist(x, m), X, mode="forward")
        reverse = cr.jacobian(lambda x, m=metric: pdist(x, m), X, mode="reverse", engine="source")
        np.testing.assert_allclose(forward, reverse, rtol=1e-13, atol=1e-15)
        expected = np.stack([_fd_gradient(lambda x, k=k, m=metric: pdist(x, m)[k], X) for k in range(6)])
        np.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("metric", METRICS)
def test_every_engine_to_second_order(metric):
    A, B = _points(24, 3, 2), _points(25, 2, 2)
    assert len(check_grads(cdist, (A, B, metric), order=2)) == 6  # source, tape, forward; orders 1 and 2
    assert len(check_grads(pdist, (A, metric), order=2)) == 6
    f = {"euclidean": euclidean, "sqeuclidean": sqeuclidean, "cityblock": cityblock}[metric]
    assert len(check_grads(f, (A[0], B[0]), order=2)) == 6
    assert len(check_grads(squareform, (pdist(A),), order=2)) == 6


# ----- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "minkowski", "correlation"])
def test_other_metrics_are_refused_by_name(metric):
    A, B = _points(26, 3, 2), _points(27, 2, 2)
    for call in (
        lambda: cr.rrule(cdist, A, B, metric),
        lambda: cr.frule((cr.NoTangent(), A, B, cr.NoTangent()), cdist, A, B, metric),
        lambda: cr.rrule(pdist, A, metric=metric),
        lambda: cr.gradient(lambda a: np.sum(cdist(a, B, metric)), A, engine="source"),
        lambda: cr.jvp(pdist, (A, metric), (A, cr.NoTangent())),
    ):
        with pytest.raises(cr.NoRuleError, match=repr(metric)):
            call()
    # forward mode inside a Python function: its refusal carries the rule's
    with pytest.raises(cr.ChainRulesError, match=repr(metric)):
        cr.jacobian(lambda a: pdist(a, metric), A, mode="forward")


def test_callable_metric_and_out_are_refused():
    A, B = _points(28, 3, 2), _points(29, 2, 2)
    with pytest.raises(cr.NoRuleError, match="callable metric"):
        cr.rrule(cdist, A, B, lambda u, v: np.sum(u * v))
    with pytest.raises(cr.NoRuleError, match="out"):
        cr.rrule(cdist, A, B, out=np.empty((3, 2)))
