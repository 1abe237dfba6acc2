"""Rules for ``scipy.ndimage``'s linear filters and ``gaussian_gradient_magnitude``: finite
differences for every filter in every boundary mode, 1-D, 2-D and 3-D with ``axes=``, kernels
longer than the input, origins, ``cval``, float32 and complex; the pullbacks against the
transposed Jacobian; batched pushforwards and pullbacks; the engines (source gradients, the tape on
the filters, forward Jacobians, Hessians); the refusals of ``output=`` and of the tape inside a
function."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import check_grads, fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(31)
MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-wrap", "grid-mirror", "grid-constant"]
SHAPES = [(6,), (5, 4), (4, 3, 5)]


def _r(*shape, dtype=np.float64):
    value = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R.standard_normal(shape)
    return value.astype(dtype)


def _call(name: str, ndim: int, mode: str):
    """``(f, args, kwargs)`` of one filter on an input of ``ndim`` axes (3-D: over ``axes=(0, 2)``
    where the filter takes axes): the weights are arguments, sizes ``nondiff``, the rest keywords."""
    axes = (0, 2) if ndim == 3 else None
    kwargs = {"mode": mode, "cval": 0.7}
    if name == "correlate1d":
        return ndi.correlate1d, (_r(4),), {**kwargs, "axis": 0, "origin": 1}
    if name == "convolve1d":
        return ndi.convolve1d, (_r(3),), {**kwargs, "axis": -1, "origin": -1}
    if name in ("correlate", "convolve"):
        shape = (3, 2) if axes else (3, 2, 2)[:ndim]  # even sizes: the origins' shift for a convolution
        origin = (1, -1) if axes else [(-1, 0, 1)[a % 3] for a in range(ndim)]
        return getattr(ndi, name), (_r(*shape),), {**kwargs, "origin": origin, "axes": axes}
    if name == "gaussian_filter1d":  # radius 5: the kernel longer than the input, reflected again and again
        return ndi.gaussian_filter1d, (), {**kwargs, "sigma": 1.2, "axis": 0, "order": 1}
    if name == "gaussian_filter":
        order = (0, 2) if axes else [a % 2 for a in range(ndim)]
        return ndi.gaussian_filter, (), {**kwargs, "sigma": 0.8, "order": order, "axes": axes, "truncate": 3.0}
    if name == "uniform_filter1d":
        return ndi.uniform_filter1d, (nondiff(4),), {**kwargs, "axis": -1, "origin": -1}
    if name == "uniform_filter":
        return ndi.uniform_filter, (nondiff(3),), {**kwargs, "axes": axes, "origin": 1}
    if name == "laplace":
        return ndi.laplace, (), {**kwargs, "axes": axes}
    if name in ("gaussian_laplace", "gaussian_gradient_magnitude"):
        return getattr(ndi, name), (), {**kwargs, "sigma": 0.9, "axes": axes}
    return getattr(ndi, name), (), {**kwargs, "axis": 0}  # sobel, prewitt


def _plain(args: tuple) -> tuple:
    return tuple(getattr(a, "value", a) for a in args)


FILTERS = [
    "correlate1d",
    "convolve1d",
    "correlate",
    "convolve",
    "gaussian_filter1d",
    "gaussian_filter",
    "uniform_filter1d",
    "uniform_filter",
    "laplace",
    "sobel",
    "prewitt",
    "gaussian_laplace",
    "gaussian_gradient_magnitude",
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", FILTERS)
def test_against_finite_differences(name, mode, shape):
    f, args, kwargs = _call(name, len(shape), mode)
    x = _r(*shape)
    plain = _plain(args)
    np.testing.assert_array_equal(cr.rrule(f, x, *plain, **kwargs)[0], f(x, *plain, **kwargs))
    test_rrule(f, x, *args, fkwargs=kwargs)
    test_frule(f, x, *args, fkwargs=kwargs)


@pytest.mark.parametrize("f", [ndi.correlate, ndi.convolve], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_weights_are_differentiated(f, mode):
    """The output is bilinear in the input and the weights: both against finite differences."""
    for x, w, origin in ((_r(7), _r(4), 1), (_r(4, 5), _r(3, 2), (0, -1)), (_r(3, 2), _r(4, 3), 0)):
        test_rrule(f, x, w, fkwargs={"mode": mode, "cval": -0.4, "origin": origin})
        test_frule(f, x, w, fkwargs={"mode": mode, "cval": -0.4, "origin": origin})
    test_rrule(f, _r(4, 3, 5), _r(2, 3), fkwargs={"mode": mode, "axes": (2, 0)})


@pytest.mark.parametrize("mode", MODES)
def test_pullback_is_the_jacobians_transpose(mode):
    """The adjoint of a filter with boundary modes is not the filter with a flipped kernel: the
    pullback of the i-th unit cotangent is the Jacobian's i-th row, where its columns are the
    filter of unit inputs (kernels longer than the input, off-centre)."""
    for n, weights, origin in ((5, _r(3), 0), (3, _r(8), -4), (2, _r(7), 3), (1, _r(4), 1)):
        x = _r(n)
        columns = np.stack([ndi.correlate1d(e, weights, mode=mode, origin=origin) for e in np.eye(n)], axis=1)
        _, back = cr.rrule(ndi.correlate1d, x, weights, mode=mode, origin=origin)
        rows = np.stack([cr.unthunk(back(e)[1]) for e in np.eye(n)])
        np.testing.assert_allclose(rows, columns, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", FILTERS)
def test_float32_and_complex(name):
    f, args, kwargs = _call(name, 2, "mirror")
    x32 = _r(5, 4, dtype=np.float32)
    assert cr.rrule(f, x32, *_plain(args), **kwargs)[0].dtype == np.float32
    test_rrule(f, x32, *args, fkwargs=kwargs)
    test_frule(f, x32, *args, fkwargs=kwargs)
    kwargs["cval"] = 0.7 - 0.2j
    test_rrule(f, _r(5, 4, dtype=np.complex128), *args, fkwargs=kwargs)
    test_frule(f, _r(5, 4, dtype=np.complex128), *args, fkwargs=kwargs)


@pytest.mark.parametrize("f", [ndi.correlate, ndi.convolve, ndi.correlate1d, ndi.convolve1d], ids=lambda f: f.__name__)
def test_complex_weights(f):
    w = _r(3, dtype=np.complex128) if f in (ndi.correlate1d, ndi.convolve1d) else _r(3, 2, dtype=np.complex128)
    for x in (_r(4, 5, dtype=np.complex128), _r(4, 5)):  # a real input, a complex output
        test_rrule(f, x, w, fkwargs={"mode": "wrap"})
        test_frule(f, x, w, fkwargs={"mode": "wrap"})


def test_identity_and_sequences_of_modes():
    x = _r(4, 5)
    test_rrule(ndi.gaussian_filter, x, fkwargs={"sigma": (0.0, 1.0), "mode": ("wrap", "nearest")})
    test_rrule(ndi.gaussian_filter, x, fkwargs={"sigma": 0.0})  # no axis filtered: the input
    test_frule(ndi.uniform_filter, x, nondiff((1, 1)))
    test_rrule(ndi.laplace, x, fkwargs={"mode": ["mirror", "constant"], "cval": 2.0})
    test_rrule(ndi.laplace, x, fkwargs={"axes": ()})
    test_rrule(ndi.sobel, x, fkwargs={"mode": ("wrap", "reflect"), "axis": 1})
    test_rrule(ndi.gaussian_laplace, x, fkwargs={"sigma": 0.7, "mode": ("wrap", "nearest"), "radius": 2})
    test_rrule(ndi.gaussian_gradient_magnitude, x, fkwargs={"sigma": (0.6, 1.1), "mode": ("grid-wrap", "constant")})


def test_gradient_magnitude_at_zero_is_the_subgradient():
    g = cr.gradient(lambda u: np.sum(ndi.gaussian_gradient_magnitude(u, 1.0)), np.ones((3, 4)))[0]
    np.testing.assert_array_equal(g, np.zeros((3, 4)))


# ----- batches ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILTERS)
def test_batched_rules_equal_row_by_row(name):
    f, args, kwargs = _call(name, 2, "reflect")
    args = _plain(args)
    x = _r(5, 4)
    assert cr.frule.lookup(f, (x, *args)).batched and cr.rrule.lookup(f, (x, *args)).batched
    dxs = _r(3, 5, 4)
    _, dy = cr.frule((cr.NoTangent(), dxs, *(cr.NoTangent() for _ in args)), f, x, *args, **kwargs)
    y, back = cr.rrule(f, x, *args, **kwargs)
    dys = _r(3, *y.shape)
    dx = cr.unthunk(back(dys)[1])
    for i in range(3):
        _, dy1 = cr.frule((cr.NoTangent(), dxs[i], *(cr.NoTangent() for _ in args)), f, x, *args, **kwargs)
        np.testing.assert_allclose(dy[i], dy1, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(dx[i], cr.unthunk(back(dys[i])[1]), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("f", [ndi.correlate, ndi.convolve], ids=lambda f: f.__name__)
def test_batched_weights_equal_row_by_row(f):
    x, w = _r(5, 4), _r(2, 3)
    dws = _r(3, 2, 3)
    _, dy = cr.frule((cr.NoTangent(), cr.ZeroTangent(), dws), f, x, w, mode="wrap")
    y, back = cr.rrule(f, x, w, mode="wrap")
    dys = _r(3, *y.shape)
    dw = cr.unthunk(back(dys)[2])
    for i in range(3):
        np.testing.assert_allclose(dy[i], cr.frule((cr.NoTangent(), cr.ZeroTangent(), dws[i]), f, x, w, mode="wrap")[1])
        np.testing.assert_allclose(dw[i], cr.unthunk(back(dys[i])[2]), rtol=1e-13)


# ----- engines ------------------------------------------------------------------------------

NOISY = R.standard_normal((6, 5))
KERNEL = np.array([[0.2, -0.1], [0.3, 0.5]])


def denoising_loss(u):
    """Data fidelity after a blur, smoothness penalties, a learned-looking filter and edges."""
    fidelity = np.sum((ndi.gaussian_filter(u, 1.0, mode="reflect") - NOISY) ** 2)
    smoothness = np.sum(ndi.laplace(u, mode="wrap") ** 2) + np.sum(ndi.sobel(u, axis=0, mode="nearest") ** 2)
    matched = ndi.correlate(u, KERNEL * u[0, 0], mode="mirror")
    local = ndi.uniform_filter(u, 3, mode="constant", cval=1.0)
    edges = ndi.gaussian_gradient_magnitude(u, 0.8, mode="grid-wrap")
    return fidelity + 0.1 * smoothness + np.sum(np.tanh(matched)) + np.sum(local**3) + np.sum(edges)


U0 = R.standard_normal((6, 5))


def test_source_gradient():
    g = cr.gradient(denoising_loss, U0, engine="source")[0]
    np.testing.assert_allclose(g, fd_jacobian(denoising_loss, U0).reshape(U0.shape), rtol=1e-6, atol=1e-8)


def test_hessian():
    expected = fd_jacobian(lambda z: cr.gradient(denoising_loss, z)[0], U0).reshape(U0.shape * 2)
    np.testing.assert_allclose(cr.hessian(denoising_loss, U0), expected, rtol=1e-5, atol=1e-7)


def test_forward_and_reverse_jacobians():
    def program(u):
        return ndi.gaussian_filter1d(u, 1.0, order=1, mode="wrap") * ndi.convolve(u, u[:2, :2] ** 2, mode="nearest")

    expected = fd_jacobian(program, U0).reshape(U0.shape * 2)
    np.testing.assert_allclose(cr.jacobian(program, U0, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(program, U0, mode="reverse"), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "f", [ndi.sobel, ndi.laplace, ndi.prewitt, ndi.correlate, ndi.convolve1d], ids=lambda f: f.__name__
)
def test_every_engine_to_second_order(f):
    args = (_r(4, 5), _r(2, 3)) if f is ndi.correlate else (_r(4, 5), _r(3)) if f is ndi.convolve1d else (_r(4, 5),)
    performed = check_grads(f, args, order=2)
    assert len(performed) == 6  # order 1 and 2 of reverse[source], reverse[tape] and forward


GAUSSIANS = [
    (ndi.gaussian_filter, {"sigma": 1.0, "mode": "mirror", "order": (1, 0)}),
    (ndi.gaussian_filter1d, {"sigma": 0.7, "mode": "constant", "cval": 2.0, "order": 2}),
    (ndi.gaussian_laplace, {"sigma": 0.8, "mode": "wrap"}),
    (ndi.gaussian_gradient_magnitude, {"sigma": 0.8, "mode": "nearest"}),
]


@pytest.mark.parametrize("f, kwargs", GAUSSIANS, ids=lambda v: getattr(v, "__name__", ""))
def test_gaussians_through_every_engine(f, kwargs):
    """sigma is a keyword here (``cr.pullback`` passes keywords on, undifferentiated): each reverse
    engine, given the filter, uses its rule; the second order through a function calling it."""
    x, dy = _r(4, 5), _r(4, 5)
    expected = fd_jacobian(lambda u: f(u, **kwargs), x).reshape(x.shape * 2)
    for engine in ("source", "tape"):
        _, back = cr.pullback(f, x, engine=engine, **kwargs)
        np.testing.assert_allclose(back(dy)[0], np.tensordot(dy, expected, 2), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(lambda u: f(u, **kwargs), x, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    performed = check_grads(lambda u: f(u, **kwargs), (x,), order=2, engine="source")
    assert len(performed) == 4  # order 1 and 2 of reverse[source] and forward


def test_cval_and_weights_are_differentiated_in_programs():
    """A differentiated cval (moved to its position by the engine) and 1-d weights get derivatives."""

    def program(c, w):
        u = ndi.gaussian_filter(NOISY, 1.0, mode="constant", cval=c)
        v = ndi.uniform_filter1d(NOISY * c, 3, 0, None, "grid-constant", c**2)
        edges = ndi.gaussian_gradient_magnitude(NOISY, 0.8, None, "constant", c)
        return (
            np.sum(u**2)
            + np.sum(np.sin(v))
            + np.sum(ndi.convolve1d(u, w, mode="constant", cval=c) ** 2)
            + np.sum(edges**2)
        )

    c, w = 0.6, np.array([0.3, -0.2, 0.5, 0.1])
    gc, gw = cr.gradient(program, c, w)
    np.testing.assert_allclose(gc, fd_jacobian(lambda z: program(z, w), c).item(), rtol=1e-6)
    np.testing.assert_allclose(gw, fd_jacobian(lambda z: program(c, z), w)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        cr.jacobian(lambda z: program(z[0], z[1:]), np.r_[c, w], mode="forward"), np.r_[gc, gw], rtol=1e-8
    )


def test_sigma_is_refused_at_the_users_line():
    with pytest.raises(cr.NoDerivativeError, match=r"gaussian_filter at .*test_ndimage\.py:\d+: .* in sigma"):
        cr.gradient(lambda s: np.sum(ndi.gaussian_filter(NOISY, s) ** 2), 1.0)
    with pytest.raises(cr.NoDerivativeError, match=r"gaussian_laplace at .*test_ndimage\.py:\d+: .* in sigma"):
        cr.jacobian(lambda s: ndi.gaussian_laplace(NOISY, s[0]), np.array([1.0]), mode="forward")
    # a constant sigma is a setting
    cr.gradient(lambda u: np.sum(ndi.gaussian_gradient_magnitude(u, 1.0, None, "reflect")), NOISY)


def test_tape_refuses_a_filter_inside_a_function():
    with pytest.raises(IgnoredRuleError, match=r"gaussian_filter has a rule that the tape engine cannot use"):
        cr.gradient(denoising_loss, U0, engine="tape")


def test_output_is_refused_at_the_users_line():
    x = _r(4, 5)
    with pytest.raises(cr.NoRuleError, match=r"gaussian_filter\(.*\) at .*test_ndimage\.py.*output="):
        cr.rrule(ndi.gaussian_filter, x, 1.0, output=np.empty_like(x))
    with pytest.raises(cr.NoRuleError, match="output="):
        cr.gradient(lambda u: np.sum(ndi.correlate(u, KERNEL, np.empty_like(u))), x)
    with pytest.raises(cr.NoRuleError, match="output="):
        cr.frule((cr.NoTangent(), x), ndi.laplace, x, output=np.float32)


def test_an_integer_input_is_refused_where_differentiated():
    """ndimage rounds the output to an integer input's dtype: no derivative there, but an integer
    array filtered as a constant is fine."""
    labels = np.arange(6)
    g = cr.gradient(lambda u: np.sum(u * ndi.gaussian_filter(labels, 1.0)), np.ones(6))[0]
    np.testing.assert_array_equal(g, ndi.gaussian_filter(labels, 1.0))
    for mode in ("reverse", "forward"):
        with pytest.raises(
            cr.NoDerivativeError, match=r"gaussian_filter at .*test_ndimage\.py:\d+: the output is rounded"
        ):
            cr.jacobian(lambda u: ndi.gaussian_filter(u, 1.0), labels, mode=mode)
    with pytest.raises(cr.NoDerivativeError, match="rounded"):
        cr.jacobian(lambda w: ndi.correlate1d(labels, w), np.ones(3), mode="reverse")
