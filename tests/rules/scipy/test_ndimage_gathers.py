"""Rules for ``scipy.ndimage``'s rank filters and interpolations (orders 0 to 5): the entries and
weights each output reads against ndimage's own values in every boundary mode (ties of order 0's
rounding included, splines' prefilter and padding); finite differences in the input, ``cval``, the
coordinates, the shift, the affine matrix and offset and the angle; batches; the engines (source
gradients, the tape on the function, forward and reverse Jacobians, Hessians); the refusals of zoom
factors, NaN windows and integer outputs."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(7)
MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-wrap", "grid-mirror", "grid-constant"]
X = R.standard_normal((4, 5))
COORDINATES = np.concatenate(
    [R.uniform(-6.3, 9.7, (2, 12)), np.array([[-0.5, 1.5, 3.0, 2.5], [4.5, -1.0, 0.0, 5.5]])], 1
)
MATRIX, OFFSET = np.array([[0.93, 0.21], [-0.33, 1.07]]), np.array([0.41, -0.63])


def _interpolations(order: int, mode: str) -> list:
    """``(f, args, kwargs)`` of each interpolation; exact integers and half-integers among the
    positions of the map, the shift by 2.5 and the rotation by 45 degrees."""
    kwargs = {"order": order, "mode": mode, "cval": 0.7}
    return [
        (ndi.map_coordinates, (COORDINATES,), kwargs),
        (ndi.shift, (np.array([0.37, -1.71]),), kwargs),
        (ndi.shift, (2.5,), kwargs),
        (ndi.zoom, (), {**kwargs, "zoom": (1.6, 0.7)}),
        (ndi.zoom, (), {**kwargs, "zoom": 1.5, "grid_mode": True}),
        (ndi.affine_transform, (MATRIX, OFFSET), {**kwargs, "output_shape": (3, 6)}),
        (ndi.affine_transform, (np.array([0.93, 1.31]), 0.29), kwargs),
        (ndi.affine_transform, (np.c_[MATRIX, OFFSET],), kwargs),
        (ndi.rotate, (45.0,), kwargs),
        (ndi.rotate, (-23.0,), {**kwargs, "reshape": False}),
    ]


RANKS = [
    (ndi.minimum_filter, (nondiff(3),), {}),
    (ndi.maximum_filter, (), {"footprint": [[1, 0, 1], [0, 1, 1]], "origin": (0, 1)}),
    (ndi.median_filter, (nondiff(4),), {"origin": -1}),
    (ndi.percentile_filter, (nondiff(30), nondiff((2, 3))), {}),
    (ndi.rank_filter, (nondiff(-2),), {"size": (3, 2), "axes": (1, 0)}),
    (ndi.minimum_filter1d, (nondiff(4),), {"axis": 0, "origin": 1}),
    (ndi.maximum_filter1d, (nondiff(7),), {}),
]


def _plain(args: tuple) -> tuple:
    return tuple(getattr(a, "value", a) for a in args)


@pytest.mark.filterwarnings("ignore:It is recommended to use mode")  # (zoom's grid_mode with 'constant', 'wrap')
@pytest.mark.parametrize("mode", MODES)
def test_weights_are_ndimages(mode):
    """The output is linear in the input and cval: the Jacobian the pullback gives, applied to the
    input, plus the derivative in cval times cval, is ndimage's output to rounding, for every
    interpolation of order 0 and 1 (exact half-integers: rotate by 45 degrees, the map's points),
    the map, a zoom and a rotation of order 3, the map of order 2, 4 or 5, order 3 without the
    prefilter, and every rank filter, on an input with ties."""
    ties = np.round(X * 2) / 2
    calls = _interpolations(0, mode) + _interpolations(1, mode) + [_interpolations(3, mode)[i] for i in (0, 3, 8)]
    spline = {"order": 2 + MODES.index(mode) % 4, "mode": mode, "cval": 0.7}  # orders 2 to 5, each in two modes
    calls += [(ndi.map_coordinates, (COORDINATES,), spline)]
    calls += [(ndi.shift, (0.4,), {"order": 3, "mode": mode, "cval": 0.7, "prefilter": False})]
    calls += [(f, _plain(args), {**kwargs, "mode": mode, "cval": 0.7}) for f, args, kwargs in RANKS]
    for f, args, kwargs in calls:
        for x in (X, ties) if f.__module__.endswith("_filters") else (X,):
            _check_linear(f, x, args, kwargs)


def _check_linear(f, x, args: tuple, kwargs: dict):
    """The reverse Jacobians in the input and cval, applied to them, give ndimage's output."""

    def affine(u, c):
        return f(u, *args, **{**kwargs, "cval": c})

    y = affine(x, 0.7)
    jacobian = cr.jacobian(lambda u: affine(u, 0.7), x, mode="reverse").reshape(y.size, x.size)
    along_cval = cr.jacobian(lambda c: affine(x, c), 0.7, mode="reverse").reshape(-1)
    np.testing.assert_allclose(jacobian @ x.ravel() + 0.7 * along_cval, y.ravel(), rtol=1e-12, atol=1e-12)


def test_three_dimensions():
    """rotate turns each plane of ``axes`` (its splines along them only), the map's output has two
    axes, the rank filters take ``axes`` (a footprint in its own order, a box in theirs) and modes
    per axis."""
    x = R.standard_normal((3, 4, 5))
    for mode in ("reflect", "grid-constant"):
        _check_linear(ndi.rotate, x, (31.0,), {"order": 3, "mode": mode, "axes": (2, 0)})
    _check_linear(ndi.map_coordinates, x, (R.uniform(-2, 6, (3, 2, 3)),), {"order": 4, "mode": "wrap"})
    _check_linear(ndi.minimum_filter, x, (), {"size": (2, 3), "axes": (2, 0), "origin": (0, -1)})
    _check_linear(ndi.median_filter, x, (), {"footprint": [[1, 0, 1]], "axes": (0, 2), "origin": (0, 1)})
    _check_linear(ndi.maximum_filter, x, (), {"size": (2, 3, 2), "mode": ["mirror", "wrap", "constant"]})
    test_rrule(ndi.rotate, x, 31.0, fkwargs={"mode": "mirror", "axes": (2, 0), "reshape": False})


@pytest.mark.parametrize("mode", MODES)
def test_against_finite_differences(mode):
    """Every differentiated argument of the interpolations of order 1 and 3 (the slopes reflected by
    the modes), the map's of orders 2, 4 and 5, and the rank filters' input and cval (an input
    without ties: a locally constant selection); order 0 and the gathers' weights in every mode are
    checked exactly above."""
    calls = _interpolations(1, mode)
    calls[0] = (ndi.map_coordinates, (COORDINATES[:, :12],), calls[0][2])  # (random: off the kinks)
    calls[8] = (ndi.rotate, (37.0,), calls[8][2])
    calls = calls[:2] + calls[5:] if mode in ("mirror", "grid-constant") else [calls[i] for i in (0, 1, 5, 8)]
    if mode in ("reflect", "nearest", "constant", "grid-constant"):  # (order 3, ndimage's default)
        calls = [(f, args, {**kwargs, "order": 3}) for f, args, kwargs in calls[:4]]
    for f, args, kwargs in calls:
        test_rrule(f, X, *args, fkwargs=kwargs)
        test_frule(f, X, *args, fkwargs=kwargs)
    for n in (1, 2, 3, 4, 5) if mode in ("mirror", "grid-wrap") else (1, 3):
        test_rrule(ndi.map_coordinates, X, COORDINATES[:, :12], nondiff(None), nondiff(n), nondiff(mode), 0.7)
    for f, args, kwargs in RANKS if mode == "constant" else RANKS[:: 3 if mode in ("wrap", "reflect") else 8]:
        if f is ndi.maximum_filter1d:  # cval positional
            test_rrule(f, X, *args, nondiff(-1), nondiff(None), nondiff(mode), 0.7)
            test_frule(f, X, *args, nondiff(-1), nondiff(None), nondiff(mode), 0.7)
        else:
            test_rrule(f, X, *args, fkwargs={**kwargs, "mode": mode, "cval": 0.7})
            test_frule(f, X, *args, fkwargs={**kwargs, "mode": mode, "cval": 0.7})


def test_complex_and_float32():
    z = X + 1j * R.standard_normal(X.shape)
    test_rrule(
        ndi.map_coordinates, z, COORDINATES[:, :12], nondiff(None), nondiff(1), nondiff("grid-constant"), 0.4 - 0.3j
    )
    test_frule(
        ndi.map_coordinates, z, COORDINATES[:, :12], nondiff(None), nondiff(1), nondiff("grid-constant"), 0.4 - 0.3j
    )
    test_rrule(ndi.rotate, z, 33.0, fkwargs={"order": 1, "mode": "constant"})
    test_frule(ndi.shift, z, np.array([0.3, -1.7]), fkwargs={"order": 3, "mode": "grid-constant", "cval": 0.2j})
    x32 = X.astype(np.float32)
    assert cr.rrule(ndi.shift, x32, 0.3)[0].dtype == np.float32
    test_rrule(ndi.shift, x32, np.array([0.3, -1.7]), fkwargs={"order": 1, "mode": "wrap"})
    test_frule(ndi.maximum_filter, x32, nondiff(2), fkwargs={"mode": "wrap"})


# ----- engines ------------------------------------------------------------------------------

C = R.uniform(-1.0, 5.0, (2, 6))


def warping_loss(u):
    """Every rank filter and interpolation (splines of order 2, 3 and 5 among them), their
    positions moved by the input."""
    a = ndi.map_coordinates(u, C * (1 + 0.1 * u[0, 0]), mode="mirror")
    b = ndi.shift(u, (0.3 * u[1, 1], -0.71), order=2, mode="grid-constant", cval=0.5)
    c = ndi.rotate(u, 20 + 5 * u[2, 2], order=1, mode="nearest", reshape=False)
    d = ndi.affine_transform(u, np.array([[0.93, 0.1 * u[0, 1]], [-0.33, 1.07]]), (0.41, u[1, 2]), order=1)
    z = ndi.zoom(u, 1.5, order=0, mode="grid-wrap", grid_mode=True) + ndi.zoom(u, 1.5, order=5, mode="nearest")
    e = ndi.minimum_filter(u, 3, mode="wrap") + ndi.percentile_filter(u**2, 30, size=(2, 3), mode="constant", cval=0.4)
    f = ndi.maximum_filter(u, footprint=[[1, 0], [1, 1]]) * ndi.rank_filter(u, 1, 3, mode="mirror")
    g = ndi.median_filter(u, 3, mode="nearest") - ndi.minimum_filter1d(u, 2, 0) + ndi.maximum_filter1d(u, 3)
    return np.sum(a**2) + np.sum(np.sin(b)) + np.sum(c**3) + np.sum(d * e) + np.sum(np.tanh(z)) + np.sum(f * g**2)


def test_gradients_and_hessian():
    x = X[:3, :3]
    expected = fd_jacobian(warping_loss, x).reshape(x.shape)
    np.testing.assert_allclose(cr.gradient(warping_loss, x, engine="source")[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(warping_loss, x, mode="forward").reshape(x.shape), expected, rtol=1e-6)
    hessian = fd_jacobian(lambda u: cr.gradient(warping_loss, u)[0], x).reshape(x.shape * 2)
    np.testing.assert_allclose(cr.hessian(warping_loss, x), hessian, rtol=1e-5, atol=1e-7)


def test_reverse_jacobian_of_a_vector():
    def program(u):
        moved = ndi.map_coordinates(u, C + 0.1 * u[0, :2, None], order=1, mode="wrap")
        return moved * ndi.maximum_filter1d(u, 3)[0, :1]

    expected = fd_jacobian(program, X).reshape(6, *X.shape)
    np.testing.assert_allclose(cr.jacobian(program, X, mode="reverse"), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "f, args, kwargs",
    [
        (ndi.map_coordinates, (C,), {"order": 1, "mode": "reflect"}),
        (ndi.shift, (np.array([0.4, -0.3]),), {"order": 1, "mode": "grid-wrap"}),
        (ndi.zoom, (), {"zoom": 0.6, "order": 1, "mode": "nearest"}),
        (ndi.affine_transform, (MATRIX, OFFSET), {"order": 1, "mode": "grid-constant"}),
        (ndi.rotate, (17.0,), {"order": 1, "mode": "constant"}),
        (ndi.median_filter, (), {"size": 3, "mode": "mirror"}),
        (ndi.minimum_filter1d, (), {"size": 3, "mode": "constant", "cval": -0.2}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_tape_and_source_on_the_function(f, args, kwargs):
    """Each reverse engine, given the function, pulls back through its rule all its arguments."""
    primals = (X, *args)
    dy = R.standard_normal(f(*primals, **kwargs).shape)

    def expected(i):
        def moved(v):
            return f(*primals[:i], v, *primals[i + 1 :], **kwargs)

        return (dy.reshape(-1) @ fd_jacobian(moved, primals[i])).reshape(np.shape(primals[i]))

    for engine in ("source", "tape"):
        _, back = cr.pullback(f, X, *args, engine=engine, **kwargs)
        for i, got in enumerate(back(dy)):
            np.testing.assert_allclose(got, expected(i), rtol=1e-6, atol=1e-8)


# ----- refusals -----------------------------------------------------------------------------


def test_zoom_factors_nan_windows_and_integer_outputs_are_refused():
    with pytest.raises(cr.NoDerivativeError, match=r"zoom at .*test_ndimage_gathers\.py:\d+: the zoom factors"):
        cr.gradient(lambda s: np.sum(ndi.zoom(X, s, order=1)), 1.5)
    with pytest.raises(cr.NoDerivativeError, match=r"zoom at .*test_ndimage_gathers\.py:\d+: the zoom factors"):
        cr.jacobian(lambda s: ndi.zoom(X, s[0], order=1), np.array([1.5]), mode="forward")
    nan = X.copy()
    nan[1, 1] = np.nan
    for mode in ("reverse", "forward"):
        with pytest.raises(cr.NoDerivativeError, match=r"minimum_filter at .*test_ndimage_gathers\.py:\d+: .*NaN"):
            cr.jacobian(lambda u: ndi.minimum_filter(u, 2), nan, mode=mode)
        with pytest.raises(
            cr.NoDerivativeError, match=r"shift at .*test_ndimage_gathers\.py:\d+: the output is rounded"
        ):
            cr.jacobian(lambda s: ndi.shift(np.arange(6), s, order=1), np.array([0.5]), mode=mode)
    with pytest.raises(cr.NoRuleError, match=r"rotate\(.*\) at .*test_ndimage_gathers\.py.*output="):
        cr.rrule(ndi.rotate, X, 30.0, output=np.float32)
