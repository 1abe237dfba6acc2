"""Rules for ``scipy.integrate.trapezoid``, ``cumulative_trapezoid`` and ``simpson``: finite
differences for each function (1-D, 2-D, along either axis, float32), the engines (source
gradients, forward Jacobians, Hessians) and the refusal of a differentiated ``x`` in ``simpson``."""

import numpy as np
import pytest
import scipy.integrate as si

import chainrules as cr
from chainrules.rules.scipy.integrate import _simpson_weights_for
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(23)


def _points(*shape):
    return np.cumsum(R.uniform(0.2, 1.0, shape), axis=-1)


Y1, Y2 = R.standard_normal(5), R.standard_normal((3, 5))
X1, X2 = _points(5), _points(3, 5)
TRAPEZOIDS = [
    ((Y1,), {}),
    ((Y1, X1), {}),
    ((Y1, nondiff(None), 0.3), {}),
    ((Y2, X1), {}),
    ((Y2, X2), {}),
    ((Y2, X2[:1]), {}),  # an N-D x broadcast against y
    ((Y2.T, X1), {"axis": 0}),
    ((Y2.T.copy(), X2.T.copy()), {"axis": 0}),
    ((Y2.astype(np.float32), X1.astype(np.float32)), {}),
    ((Y2,), {"x": X1}),
]


@pytest.mark.parametrize("f", [si.trapezoid, si.cumulative_trapezoid])
@pytest.mark.parametrize("case", range(len(TRAPEZOIDS)))
def test_trapezoids_against_finite_differences(f, case):
    args, kwargs = TRAPEZOIDS[case]
    test_rrule(f, *args, fkwargs=kwargs)
    test_frule(f, *args, fkwargs=kwargs)


@pytest.mark.parametrize("args", [(Y2, X1), (Y2, nondiff(None), 0.5), (Y2.astype(np.float32),)])
def test_cumulative_trapezoid_with_initial(args):
    test_rrule(si.cumulative_trapezoid, *args, fkwargs={"initial": 0})
    test_frule(si.cumulative_trapezoid, *args, fkwargs={"initial": 0})


def test_trapezoid_broadcasts_an_n_d_x_as_scipy_does():
    y, x = R.standard_normal((2, 3, 4)), _points(3, 4)  # x's axis 0 is y's axis 1 once broadcast
    out, back = cr.rrule(si.trapezoid, y, x, axis=1)
    np.testing.assert_allclose(out, si.trapezoid(y, x, axis=1))
    assert np.shape(cr.unthunk(back(np.ones_like(out))[2])) == x.shape
    test_rrule(si.trapezoid, y, x, fkwargs={"axis": 1})
    test_frule(si.trapezoid, y, x, fkwargs={"axis": 1})


@pytest.mark.parametrize("spacing", [{"x": np.array([0.0, 0.5, 1.5])}, {"dx": 0.5}], ids=["x", "dx"])
@pytest.mark.parametrize("by_position", [False, True])
def test_trapezoid_of_float32_samples_and_float64_spacing_is_float32(spacing, by_position):
    """SciPy sums in the samples' floating dtype (np.trapezoid in the promoted one): the rules give
    its float32 primal and tangent (the fuzzer's draw trapezoid(float32[3], float64[3], axis=0))."""
    y = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    positional = (y, *([None] if "dx" in spacing else []), *spacing.values())
    args, kwargs = (positional, {}) if by_position else ((y,), spacing)
    expected = si.trapezoid(*args, **kwargs)
    assert expected.dtype == np.float32
    out, back = cr.rrule(si.trapezoid, *args, **kwargs)
    assert type(out) is type(expected) and out.dtype == np.float32 and out == expected
    assert cr.unthunk(back(np.float32(1.0))[1]).dtype == np.float32
    tangents = (cr.NoTangent(), np.ones(3, np.float32), *(cr.NoTangent() for _ in args[1:]))
    out, dout = cr.frule(tangents, si.trapezoid, *args, **kwargs)
    assert out.dtype == np.float32 and dout.dtype == np.float32
    test_rrule(si.trapezoid, *args, fkwargs=kwargs, rtol=2e-3, atol=2e-3)
    test_frule(si.trapezoid, *args, fkwargs=kwargs, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("spaced", [False, True])
def test_simpson_weights_reproduce_scipy(n, spaced):
    x = _points(n) if spaced else None
    basis = np.eye(n)
    expected = [si.simpson(basis[i], x=x, dx=0.7) for i in range(n)]
    np.testing.assert_allclose(_simpson_weights_for(basis[0], x, 0.7, 0), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
@pytest.mark.parametrize(
    "kwargs", [{}, {"dx": 0.3}, {"x": "1-D"}, {"x": "2-D"}, {"x": "1-D", "axis": 0}], ids=lambda k: str(k)
)
def test_simpson_against_finite_differences(n, kwargs):
    kwargs = dict(kwargs)
    y = R.standard_normal((3, n))
    if kwargs.get("axis") == 0:
        y = y.T.copy()
    if kwargs.get("x") == "1-D":
        kwargs["x"] = _points(n)
    elif kwargs.get("x") == "2-D":
        kwargs["x"] = _points(3, n)
    test_rrule(si.simpson, y, fkwargs=kwargs)
    test_frule(si.simpson, y, fkwargs=kwargs)
    if "axis" not in kwargs:
        test_rrule(si.simpson, y[0], fkwargs={k: v for k, v in kwargs.items() if np.ndim(v) < 2})


def test_simpson_float32():
    y = R.standard_normal((2, 6)).astype(np.float32)
    test_rrule(si.simpson, y, fkwargs={"x": _points(6).astype(np.float32)})
    test_frule(si.simpson, y, fkwargs={"dx": 0.5})


# ----- engines ------------------------------------------------------------------------------

XC = np.array([0.0, 0.3, 0.7, 1.2, 1.4, 2.0])


def quadratures(y, x):
    """A program mixing the three: cumulative areas squared, a Simpson integral, a trapezoid in x."""
    return (
        np.sum(si.cumulative_trapezoid(y**2, x, initial=0) ** 2)
        + si.simpson(np.sin(y), x=XC)
        + si.trapezoid(y * x, x)
        + np.sum(si.trapezoid(np.outer(y, y), dx=0.5, axis=0))
    )


Y0, P0 = R.standard_normal(6), _points(6)


def test_source_gradient():
    g = cr.gradient(quadratures, Y0, P0, engine="source")
    np.testing.assert_allclose(g[0], fd_jacobian(lambda z: quadratures(z, P0), Y0)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g[1], fd_jacobian(lambda z: quadratures(Y0, z), P0)[0], rtol=1e-6, atol=1e-8)


def cumulative_in_points(x):
    return si.cumulative_trapezoid(np.cos(x), x, initial=0) * si.trapezoid(x**2, x)


def test_forward_jacobian():
    def program(y):
        return si.cumulative_trapezoid(y**2, P0, initial=0) + si.simpson(y * y[0], x=XC) + si.trapezoid(y, P0)

    np.testing.assert_allclose(cr.jacobian(program, Y0, mode="forward"), fd_jacobian(program, Y0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        cr.jacobian(cumulative_in_points, P0, mode="forward"),
        fd_jacobian(cumulative_in_points, P0),
        rtol=1e-6,
        atol=1e-8,
    )


def in_samples(y):
    return quadratures(y, P0)


def in_points(x):
    return quadratures(Y0, x)


@pytest.mark.parametrize("f, at", [(in_samples, Y0), (in_points, P0)], ids=["samples", "points"])
def test_hessian(f, at):
    expected = fd_jacobian(lambda z: cr.gradient(f, z)[0], at)
    np.testing.assert_allclose(cr.hessian(f, at), expected, rtol=1e-5, atol=1e-7)


_REFUSED_POINTS = r"simpson at .*test_integrate\.py:\d+: .*sample points x must be held constant"


def simpson_in_points(x):
    return si.simpson(np.sin(Y0), x)


def test_simpson_refuses_differentiated_points():
    with pytest.raises(cr.NoDerivativeError, match=_REFUSED_POINTS):
        cr.gradient(simpson_in_points, P0)
    with pytest.raises(cr.NoDerivativeError, match=_REFUSED_POINTS):
        cr.jacobian(simpson_in_points, P0, mode="forward")
    with pytest.raises(cr.NoDerivativeError, match=_REFUSED_POINTS):
        cr.hessian(simpson_in_points, P0)
    # x given by position but constant: differentiated in y alone
    g = cr.gradient(lambda y: si.simpson(y**2, P0), Y0)[0]
    np.testing.assert_allclose(g, fd_jacobian(lambda y: si.simpson(y**2, P0), Y0)[0], rtol=1e-6)
