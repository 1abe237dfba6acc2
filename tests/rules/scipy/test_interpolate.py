"""Rules for ``scipy.interpolate``: splines fitted to values being differentiated (``CubicSpline``,
``make_interp_spline``, ``interp1d``, ``BSpline``/``PPoly`` from coefficients) and grids
(``RegularGridInterpolator``), and their calls, against finite differences: the rules, programs
through the engines (source gradients, forward Jacobians, Hessians) and the refusals (knots being
differentiated, interpolants that are not linear in their values, the tape), at the user's line."""

import numpy as np
import pytest
import scipy.interpolate as si

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import fd_jacobian, test_frule, test_rrule

R = np.random.default_rng(41)
NO, ZERO = cr.NoTangent(), cr.ZeroTangent()

X = np.array([0.0, 0.4, 0.9, 1.7, 2.2, 2.6, 3.0])
Y = np.sin(X) + 0.3 * X
# evaluation points off the knots (where the derivatives of a spline's pieces jump), some beyond the ends
T = np.array([-0.25, 0.13, 0.77, 1.21, 1.6, 2.33, 2.9, 3.1])
INSIDE = T[1:-1]


def _values(n, *extra):
    return R.standard_normal((n, *extra))


# ----- rules, the knots held (they are not differentiated) -----------------------------------------


def _in_values(f, x, **kwargs):
    """``f(x, y, **kwargs)`` as a function of ``y`` with its reverse and forward rules (``x`` held)."""

    def build(y):
        return f(x, y, **kwargs)

    def reverse(_, y):
        out, back = cr.rrule(f, x, y, **kwargs)
        return out, lambda d: (NO, back(d)[2])

    def forward(tangents, _, y):
        return cr.frule((NO, ZERO, tangents[1]), f, x, y, **kwargs)

    return build, reverse, forward


def _at_points(obj, **kwargs):
    """The call ``obj(t, **kwargs)`` as a function of ``t`` with its rules (the object held)."""

    def call(t):
        return obj(t, **kwargs)

    def reverse(_, t):
        out, back = cr.rrule(obj, t, **kwargs)
        return out, lambda d: (NO, back(d)[1])

    def forward(tangents, _, t):
        return cr.frule((ZERO, tangents[1]), obj, t, **kwargs)

    return call, reverse, forward


def _check(rules, *args, **options):
    f, reverse, forward = rules
    test_rrule(f, *args, rule=reverse, **options)
    test_frule(f, *args, rule=forward, **options)


BOUNDARIES = ["not-a-knot", "clamped", "natural", "periodic", ((1, 0.5), (2, -1.0)), ("natural", "not-a-knot")]


def test_values_as_a_list():
    """Values given as a (nested) list get a list's cotangent, which the cotangents of the list's other
    uses add to (an array's did not), and take a list's tangent."""
    _check(_in_values(si.CubicSpline, X), list(Y))
    _check(_in_values(si.splrep, X), list(Y))
    _check(_in_values(si.RBFInterpolator, X[:, None]), list(Y))
    grid = (X[:3], X[:4])
    _check(_in_values(si.RegularGridInterpolator, grid, fill_value=None), [list(row) for row in _values(3, 4)])


@pytest.mark.parametrize("n", [2, 3, 4, 7])
@pytest.mark.parametrize("bc_type", BOUNDARIES, ids=str)
def test_cubic_spline_fit(n, bc_type):
    x = X[:n] if n < 7 else X
    y = _values(n)
    if bc_type == "periodic":  # (a periodic fit's ends are one value: perturbed together, as a program does)
        f, reverse, forward = _in_values(si.CubicSpline, x, bc_type=bc_type)
        wrap = (lambda v: f(np.append(v, v[0])), lambda _, v: _periodic(reverse, v), None)
        test_rrule(wrap[0], y[:-1], rule=wrap[1])
        return
    _check(_in_values(si.CubicSpline, x, bc_type=bc_type), y)


def _periodic(reverse, v):
    out, back = reverse(None, np.append(v, v[0]))

    def periodic_pullback(d):
        dy = cr.unthunk(back(d)[1])
        return NO, dy if isinstance(dy, cr.ZeroTangent) else np.concatenate([dy[:1] + dy[-1:], dy[1:-1]])

    return out, periodic_pullback


def test_cubic_spline_fit_of_columns_along_an_axis():
    _check(_in_values(si.CubicSpline, X, axis=1, bc_type="clamped"), _values(2, len(X), 3)[:, :, 0])
    _check(_in_values(si.CubicSpline, X, axis=1), np.moveaxis(_values(len(X), 2, 3), 0, 1))


# values whose PCHIP slopes take every branch: a tripled end slope, extrema inside (zero slopes), a
# weighted harmonic mean, and, for four points, a tripled slope at the right end
PCHIP = np.array([0.0, 0.05, -2.0, -1.0, -0.5, -0.6, 0.4])


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_pchip_fit(n):
    """PCHIP's slopes are limited, smooth between the limits' switches: differentiated there."""
    _check(_in_values(si.PchipInterpolator, X[:n]), PCHIP[:n])
    _check(_in_values(si.PchipInterpolator, X[:n], axis=1), np.stack([PCHIP[:n], np.cos(3 * X[:n])]))


# values whose Akima slopes see extrema inside and near both ends
AKIMA = np.array([0.0, 0.3, 0.6, -1.0, 0.5, 0.2, 1.4])


@pytest.mark.parametrize("method", ["akima", "makima"])
@pytest.mark.parametrize("n", [2, 3, 7])
def test_akima_fit(method, n):
    """Akima's slopes are weighted means of the secants around each knot, weighted by the secants'
    differences: smooth where no difference is zero, differentiated there."""
    _check(_in_values(si.Akima1DInterpolator, X[:n], method=method, extrapolate=True), AKIMA[:n])
    _check(_in_values(si.Akima1DInterpolator, X[:n], axis=1, method=method), np.stack([AKIMA[:n], np.cos(3 * X[:n])]))


def test_akima_slope_where_its_weights_vanish():
    """Secants equal on either side of a knot leave both weights zero: SciPy takes the mean of the outer two
    secants there, whose derivative the rules give (finite differences would cross into the weighted mean)."""
    y = np.concatenate([X[:3], X[2] - 2.0 * (X[3:5] - X[2]), [0.3, 1.0]])  # (slope 1, then -2, around X[2])
    dy = np.cos(5 * X)
    _, d_obj = cr.frule((NO, ZERO, dy), si.Akima1DInterpolator, X, y)
    secants = np.diff(dy) / np.diff(X)
    assert cr.unthunk(d_obj._c)[2, 2] == pytest.approx(0.5 * (secants[0] + secants[3]), rel=1e-12)


@pytest.mark.parametrize("nu", [0, 1, 2, 3])
def test_piecewise_polynomial_call(nu):
    """In the points, the coefficients and the breakpoints (the object's fields) at once."""
    s = si.CubicSpline(X, np.stack([Y, Y**2], 1))
    test_rrule(s, T, fkwargs={"nu": nu})
    test_frule(s, T, fkwargs={"nu": nu})
    test_rrule(s, T.reshape(2, 4), fkwargs={"nu": nu})


@pytest.mark.parametrize("nu", [0, 1, 2, 3, 4])
def test_piecewise_polynomial_derivative(nu):
    """``s.derivative(nu)``: linear in the coefficients, the breakpoints kept."""
    s = si.CubicSpline(X, np.stack([Y, Y**2], 1))
    test_rrule(s.derivative, nu)
    test_frule(s.derivative, nu)


@pytest.mark.parametrize("nu", [1, 2])
def test_piecewise_polynomial_antiderivative(nu):
    """``s.antiderivative(nu)`` (and ``s.derivative(-nu)``): linear in the coefficients, its constant terms
    the integrals over the intervals before, which move with the breakpoints."""
    s = si.CubicSpline(X, np.stack([Y, Y**2], 1))
    test_rrule(s.antiderivative, nu)
    test_frule(s.antiderivative, nu)
    test_rrule(s.derivative, -nu)


@pytest.mark.parametrize("a, b", [(0.3, 2.5), (2.5, -0.4), (-0.5, 3.4)])
def test_piecewise_polynomial_integral(a, b):
    """``s.integrate(a, b)``: in the coefficients, the breakpoints and the bounds (the integrand there)."""
    s = si.CubicSpline(X, np.stack([Y, Y**2], 1))
    test_rrule(s.integrate, a, b)
    test_frule(s.integrate, a, b)


def test_piecewise_polynomial_integral_periodic_and_not_extrapolating():
    periodic = si.CubicSpline(X, np.append(Y[:-1], Y[0]), bc_type="periodic")
    for a, b in [(-0.5, 7.4), (2.5, 3.7), (5.1, -1.25)]:  # (whole periods, and the rest wrapped past the end)
        test_rrule(periodic.integrate, a, b)
        test_frule(periodic.integrate, a, b)
    test_rrule(si.CubicSpline(X, Y, extrapolate=False).integrate, 0.3, 2.5)


def _b_spline_method(t, k, method, *args):
    """``BSpline(t, c, k).method(*args)`` as a function of ``c`` (the knots held), with its rules."""

    def reverse(_, c):
        s, back_s = cr.rrule(si.BSpline, t, c, k)
        out, back = cr.rrule(method, s, *args)
        return out, lambda d: (NO, back_s(back(d)[1])[2])

    def forward(tangents, _, c):
        s, ds = cr.frule((NO, ZERO, tangents[1], NO), si.BSpline, t, c, k)
        return cr.frule((NO, ds, *(ZERO,) * len(args)), method, s, *args)

    return lambda c: method(si.BSpline(t, c, k), *args), reverse, forward


def _in_bounds(s, extrapolate):
    """``s.integrate(a, b, extrapolate)`` as a function of the bounds ``[a, b]`` (``s`` held), with its rules."""

    def reverse(_, bounds):
        out, back = cr.rrule(s.integrate, bounds[0], bounds[1], extrapolate)

        def bounds_pullback(d):
            da, db = (cr.unthunk(g) for g in back(d)[1:3])
            return NO, ZERO if isinstance(da, cr.ZeroTangent) else np.array([da, db])

        return out, bounds_pullback

    def forward(tangents, _, bounds):
        d = cr.unthunk(tangents[1])
        da, db = (ZERO, ZERO) if isinstance(d, cr.ZeroTangent) else d
        return cr.frule((ZERO, da, db, NO), s.integrate, bounds[0], bounds[1], extrapolate)

    return lambda bounds: s.integrate(bounds[0], bounds[1], extrapolate), reverse, forward


@pytest.mark.parametrize("nu", [0, 1, 2])
def test_b_spline_antiderivative(nu):
    s = si.make_interp_spline(X, np.stack([Y, Y**2], 1))
    _check(_b_spline_method(s.t, 3, si.BSpline.antiderivative, nu), s.c)


@pytest.mark.parametrize("a, b, extrapolate", [(2.5, 0.3, None), (-0.3, 3.5, False), (-0.5, 7.4, "periodic")])
def test_b_spline_integral(a, b, extrapolate):
    """In the coefficients, and in the bounds: the integrand there (zero beyond the base interval where the
    bounds are clipped to it)."""
    s = si.make_interp_spline(X, np.stack([Y, Y**2], 1))
    _check(_b_spline_method(s.t, 3, si.BSpline.integrate, a, b, extrapolate), s.c)
    _check(_in_bounds(s, extrapolate), np.array([a, b]))


def test_b_spline_derivative_by_antiderivative_refused():
    with pytest.raises(cr.NoRuleError, match="nu < 0 is a derivative"):
        cr.rrule(si.make_interp_spline(X, Y).antiderivative, -1)


def test_piecewise_polynomial_call_extrapolating_periodically_and_not_at_all():
    periodic = si.CubicSpline(X, np.append(Y[:-1], Y[0]), bc_type="periodic")
    far = np.array([-2.9, -0.35, 3.5, 7.75])
    test_rrule(periodic, far)
    test_frule(periodic, far)
    s = si.CubicSpline(X, Y, extrapolate=False)
    test_rrule(s, INSIDE)
    _, back = cr.rrule(s, T)
    d_s, dt = back(np.ones(len(T)))
    assert cr.unthunk(dt)[0] == 0.0 and cr.unthunk(dt)[-1] == 0.0  # (no value there: NaN, a constant)
    s_axis = si.PPoly(_values(4, 6, 2, 3).transpose(2, 0, 1, 3), X, axis=1)
    test_rrule(s_axis, INSIDE[:3])


@pytest.mark.parametrize(
    "k, bc_type",
    [
        (0, None),
        (1, None),
        (2, None),
        (3, None),
        (3, "clamped"),
        (3, "natural"),
        (5, ([(1, 0.5), (2, 0.0)], [(1, 0.0), (2, 1.0)])),
    ],
)
def test_interp_spline_fit(k, bc_type):
    _check(_in_values(si.make_interp_spline, X, k=k, bc_type=bc_type), _values(len(X)))
    _check(_in_values(si.make_interp_spline, X, k=k, bc_type=bc_type, axis=1), _values(2, len(X)))


@pytest.mark.parametrize("nu", [0, 1, 2])
def test_b_spline_call(nu):
    s = si.make_interp_spline(X, np.stack([Y, Y**2], 1), k=3)
    _check(_at_points(s, nu=nu), T)
    _check(_at_points(si.BSpline(s.t, s.c, 3, extrapolate="periodic"), nu=nu), np.array([-1.1, 0.3, 3.7]))
    test_rrule(_at_points(si.BSpline(s.t, s.c, 3, extrapolate=False))[0], INSIDE, rule=_at_points(s)[1])


def _in_coefficients(cls, position: int, knots, *rest):
    """``cls`` built from coefficients ``c`` (argument ``position``) and ``knots`` (held), with its rules."""

    def arguments(c):
        return (c, knots, *rest) if position == 0 else (knots, c, *rest)

    def reverse(_, c):
        out, back = cr.rrule(cls, *arguments(c))
        return out, lambda d: (NO, back(d)[1 + position])

    def forward(tangents, _, c):
        seeds = [NO, ZERO, ZERO] + [NO] * len(rest)
        seeds[1 + position] = tangents[1]
        return cr.frule(tuple(seeds), cls, *arguments(c))

    return lambda c: cls(*arguments(c)), reverse, forward


def test_from_coefficients():
    """``BSpline(t, c, k)`` and ``PPoly(c, x)`` built from coefficients being differentiated."""
    s = si.make_interp_spline(X, Y)
    _check(_in_coefficients(si.BSpline, 1, s.t, 3), s.c)
    _check(_in_coefficients(si.PPoly, 0, X), _values(4, len(X) - 1))


@pytest.mark.parametrize("kind", ["linear", "slinear", "quadratic", "cubic"])
def test_interp1d(kind):
    unsorted = np.array([3, 0, 5, 1, 6, 2, 4])  # (interp1d sorts its points, and their values with them)
    held = {"bounds_error": False, "fill_value": 0.0}  # (the object holds its fill value: NaN would fill the checks)
    _check(_in_values(si.interp1d, X[unsorted], kind=kind, **held), _values(len(X)))
    _check(_in_values(si.interp1d, X, kind=kind, axis=0, **held), _values(len(X), 2))
    obj = si.interp1d(X, np.stack([Y, Y**2]), kind=kind, bounds_error=False, fill_value=(-1.0, 2.0))
    _check(_at_points(obj), T)


def test_regular_grid_interpolator():
    g1, g2 = np.array([0.0, 0.4, 1.0, 1.3]), np.array([2.0, 1.1, 0.5, 0.0])  # (a descending axis)
    values = _values(4, 4, 2)
    rules = _in_values(si.RegularGridInterpolator, (g1, g2), fill_value=0.0)
    _check(rules, values)
    obj = si.RegularGridInterpolator((g1, g2), values, bounds_error=False, fill_value=None)
    xi = np.array([[0.1, 0.2], [0.5, 0.9], [0.77, 1.7], [1.2, 0.05], [1.5, -0.2]])
    _check(_at_points(obj), xi)
    _check(_at_points(si.RegularGridInterpolator((g1, g2), values, bounds_error=False)), xi[:4])


@pytest.mark.parametrize(
    "settings", [{}, {"k": 5, "s": 0}, {"w": np.linspace(1.0, 2.0, 7), "s": 0}, {"task": -1, "t": [1.0, 2.0]}], ids=str
)
def test_splrep(settings):
    """Interpolating (s=0) or on given knots (task=-1): the weighted least-squares fit on knots the values do
    not choose, linear in them."""
    _check(_in_values(si.splrep, X, **settings), Y)


@pytest.mark.parametrize("der, ext, points", [(0, 0, T), (1, 1, np.array([-0.3, 0.5, 1.9, 3.4])), (2, 2, INSIDE)])
def test_splev(der, ext, points):
    """In the points and in the tck's coefficients (ext=1: zero beyond the base interval)."""
    t, c, k = si.splrep(X, Y)

    def in_points(_, x):
        out, back = cr.rrule(si.splev, x, (t, c, k), der, ext)
        return out, lambda d: (NO, back(d)[1])

    def in_coefficients(_, coefficients):
        out, back = cr.rrule(si.splev, points, (t, coefficients, k), der, ext)
        return out, lambda d: (NO, ZERO if isinstance(cr.unthunk(d), cr.ZeroTangent) else cr.unthunk(back(d)[2][1]))

    test_rrule(lambda x: si.splev(x, (t, c, k), der, ext), points, rule=in_points)
    test_rrule(lambda coefficients: si.splev(points, (t, coefficients, k), der, ext), c, rule=in_coefficients)

    def forward(tangents, _, x, coefficients):
        d_tck = cr.Tangent[tuple](ZERO, tangents[2], NO)
        return cr.frule((NO, tangents[1], d_tck, NO, NO), si.splev, x, (t, coefficients, k), der, ext)

    test_frule(lambda x, coefficients: si.splev(x, (t, coefficients, k), der, ext), points, c, rule=forward)


def test_interpn():
    """``interpn``, linear: a grid interpolator's rules composed, in the values and the points."""
    grid = (np.array([0.0, 0.4, 1.0, 1.3]), np.array([2.0, 1.1, 0.5, 0.0]))  # (a descending axis)
    xi = np.array([[0.1, 0.2], [0.5, 0.9], [0.77, 1.7], [1.2, 0.05], [1.5, -0.2]])
    _check(_interpn_in(grid, bounds_error=False, fill_value=None), _values(4, 4), xi)
    coordinates = (xi[:4, 0], xi[:4, 1])  # (points as a tuple of coordinates: differentiated in the values)
    f, reverse, _ = _interpn_in(grid)

    def in_values(_, v):
        out, back = reverse(_, v, coordinates)
        return out, lambda d: back(d)[:2]

    test_rrule(lambda v: f(v, coordinates), _values(4, 4), rule=in_values)


def _interpn_in(grid, **kwargs):
    """``interpn(grid, values, xi, **kwargs)`` as a function of the values and the points (the grid held)."""

    def reverse(_, values, xi):
        out, back = cr.rrule(si.interpn, grid, values, xi, **kwargs)
        return out, lambda d: (NO, *back(d)[2:4])

    def forward(tangents, _, values, xi):
        return cr.frule((NO, ZERO, *tangents[1:3]), si.interpn, grid, values, xi, **kwargs)

    return lambda values, xi: si.interpn(grid, values, xi, **kwargs), reverse, forward


CENTERS = R.uniform(0.0, 1.0, (9, 2))
RBF_VALUES = np.sin(3 * CENTERS[:, 0]) + CENTERS[:, 1] ** 2
RBF_POINTS = np.array([[0.1, 0.2], [0.5, 0.9], [0.77, 0.4], [0.3, 0.65]])
KERNELS = [
    ("thin_plate_spline", None),
    ("linear", None),
    ("cubic", None),
    ("quintic", None),
    ("gaussian", 2.0),
    ("multiquadric", 1.5),
    ("inverse_multiquadric", 1.5),
    ("inverse_quadratic", 1.5),
]


@pytest.mark.parametrize("kernel, epsilon", KERNELS)
def test_rbf_interpolator(kernel, epsilon):
    """Its coefficients solve a linear system in its values; its calls are its kernel at the distances to
    the centers and its monomials, times them: differentiated in the values and in the points."""
    rules = _in_values(si.RBFInterpolator, CENTERS, kernel=kernel, epsilon=epsilon)
    _check(rules, RBF_VALUES)
    _check(_at_points(si.RBFInterpolator(CENTERS, RBF_VALUES, kernel=kernel, epsilon=epsilon)), RBF_POINTS)


def test_rbf_interpolator_smoothed_complex_and_of_columns():
    _check(_in_values(si.RBFInterpolator, CENTERS, smoothing=0.1, degree=2), np.stack([RBF_VALUES, RBF_VALUES**2], 1))
    _check(_in_values(si.RBFInterpolator, CENTERS), RBF_VALUES + 1j * np.cos(RBF_VALUES))
    _check(_at_points(si.RBFInterpolator(CENTERS, RBF_VALUES + 1j * np.cos(RBF_VALUES), degree=2)), RBF_POINTS)


# ----- programs, through the engines -----------------------------------------------------------


def cubic_energy(y):
    s = si.CubicSpline(X, y, bc_type="natural")
    return np.sum(s(T) ** 2) + np.sum(np.sin(s(T, 1)))


def pchip_energy(y):
    s = si.PchipInterpolator(X, y)
    return np.sum(s(T) ** 3) + np.sum(np.sin(s(T, 1)))


def cubic_slopes(y):
    s = si.CubicSpline(X, y)
    return np.sum(s.derivative()(T) ** 2) + np.sum(s.derivative(2)(T) ** 3)


def spline_at_points(t):
    s = si.make_interp_spline(X, Y, k=3)
    return np.sum(s(t) ** 3) + np.sum(np.cos(s(t, 2)))


def fit_and_points(p):  # the first entries are the points, the rest the values
    s = si.CubicSpline(X, p[len(T) :])
    return np.sum(s(p[: len(T)]) ** 3)


def b_spline_fit_and_points(p):
    s = si.make_interp_spline(X, p[len(T) :], k=3)
    return np.sum(s(p[: len(T)]) ** 3) + np.sum(s(p[: len(T)], 1) ** 2)


def interp1d_linear(p):
    f = si.interp1d(X, p[len(INSIDE) :])
    return np.sum(np.sin(f(p[: len(INSIDE)])) ** 2)


def interp1d_cubic(y):
    f = si.interp1d(X, np.stack([y, y**2]), kind="cubic", bounds_error=False, fill_value=0.0)
    return np.sum(f(T) ** 2)


def akima_fit_and_points(p):
    s = si.Akima1DInterpolator(X, p[len(INSIDE) :], method="makima")
    return np.sum(s(p[: len(INSIDE)]) ** 3) + s.integrate(0.1, 2.9) ** 2


def interpn_values_and_points(p):  # the first entries are the points, the rest the values
    out = si.interpn(GRID, np.reshape(p[GRID_POINTS.size :], (4, 4)), np.reshape(p[: GRID_POINTS.size], (-1, 2)))
    return np.sum(np.sin(out) ** 2)


def rbf_values_and_points(p):  # the first entries are the points, the rest the values
    f = si.RBFInterpolator(CENTERS, p[RBF_POINTS.size :], kernel="gaussian", epsilon=2.0)
    return np.sum(f(np.reshape(p[: RBF_POINTS.size], (-1, 2))) ** 3)


def splrep_splev(p):  # the first entries are points, the rest the values
    tck = si.splrep(X, p[len(T) :])
    return np.sum(si.splev(p[: len(T)], tck) ** 3) + np.sum(si.splev(INSIDE, tck, 1) ** 2)


def spline_integrals(y):
    s = si.CubicSpline(X, y)
    return s.integrate(0.2, 2.7) ** 2 + np.sum(s.antiderivative(2)(T) ** 2)


def integral_bounds(p):
    s = si.PchipInterpolator(X, PCHIP)
    return s.integrate(p[0], p[1]) ** 3 + s.integrate(p[1], p[0] * p[1], extrapolate=False) ** 2


def b_spline_integrals(p):  # the first two entries are bounds, the rest the values
    s = si.make_interp_spline(X, p[2:])
    return s.integrate(p[0], p[1]) ** 3 + np.sum(s.antiderivative()(T) ** 2)


GRID = (np.array([0.0, 0.4, 1.0, 1.3]), np.array([0.0, 0.5, 1.1, 2.0]))
GRID_POINTS = np.array([[0.1, 0.2], [0.5, 0.9], [0.77, 1.7], [1.2, 0.05]])


def grid_values(v):
    f = si.RegularGridInterpolator(GRID, np.reshape(v, (4, 4)))
    return np.sum(f(GRID_POINTS) ** 3)


def grid_points(p):
    f = si.RegularGridInterpolator(GRID, np.cos(np.add.outer(GRID[0], GRID[1])))
    return np.sum(np.sin(f(np.reshape(p, (4, 2)))) ** 2)


PROGRAMS = [
    (cubic_energy, Y),
    (pchip_energy, PCHIP),
    (cubic_slopes, Y),
    (spline_at_points, T),
    (fit_and_points, np.concatenate([T, Y])),
    (b_spline_fit_and_points, np.concatenate([T, Y])),
    (interp1d_linear, np.concatenate([INSIDE, Y])),
    (interp1d_cubic, Y),
    (grid_values, np.cos(np.arange(16.0))),
    (grid_points, GRID_POINTS.ravel()),
    (spline_integrals, Y),
    (akima_fit_and_points, np.concatenate([INSIDE, AKIMA])),
    (rbf_values_and_points, np.concatenate([RBF_POINTS.ravel(), RBF_VALUES])),
    (splrep_splev, np.concatenate([T, Y])),
    (interpn_values_and_points, np.concatenate([GRID_POINTS.ravel(), np.cos(np.arange(16.0))])),
    (integral_bounds, np.array([0.3, 2.1])),
    (b_spline_integrals, np.concatenate([[2.6, 0.35], Y])),
]


@pytest.mark.parametrize("f, x", PROGRAMS, ids=lambda v: getattr(v, "__name__", ""))
def test_programs_source_forward_and_hessian(f, x):
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda v: cr.gradient(f, v)[0], x)
    np.testing.assert_allclose(cr.hessian(f, x), hessian, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "f, x",
    [
        p
        for p in PROGRAMS
        if p[0]
        in (
            cubic_energy,
            pchip_energy,
            cubic_slopes,
            fit_and_points,
            interp1d_cubic,
            spline_integrals,
            rbf_values_and_points,
        )
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_tape_gradient_of_a_source_gradient(f, x):
    """The source engine's rules fit the interpolant to the tape's values, so its coefficients carry
    them, and call it: the tape records the call by its rule, differentiated in the object's fields
    too (SciPy's compiled code had been given the tape's values: a TypeError, or a refusal to write
    into them)."""
    weights = np.linspace(0.5, 1.5, x.size)

    def slope(v):
        return np.sum(cr.gradient(f, v)[0] * weights)

    np.testing.assert_allclose(cr.gradient(slope, x, engine="tape")[0], fd_jacobian(slope, x)[0], rtol=1e-5, atol=1e-7)


def test_float32_values():
    y = Y.astype(np.float32)
    g = cr.gradient(cubic_energy, y)[0]
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, cr.gradient(cubic_energy, Y)[0], rtol=1e-4)


@pytest.mark.parametrize(
    "f, x",
    [
        p
        for p in PROGRAMS
        if p[0]
        in (
            cubic_energy,
            pchip_energy,
            spline_at_points,
            fit_and_points,
            b_spline_fit_and_points,
            integral_bounds,
            b_spline_integrals,
            akima_fit_and_points,
            rbf_values_and_points,
            interpn_values_and_points,
            splrep_splev,
        )
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_tape_refuses_at_the_users_line(f, x):
    """The tape sees no call of the constructor or of the interpolant, whose bodies convert its values: it
    refuses the call whose rule it cannot use, at the user's line."""
    with pytest.raises(IgnoredRuleError, match="has a rule that the tape engine cannot use here") as raised:
        cr.gradient(f, x, engine="tape")
    assert f"test_interpolate.py:{f.__code__.co_firstlineno + 1}" in str(raised.value) or (
        f"test_interpolate.py:{f.__code__.co_firstlineno + 2}" in str(raised.value)
    )


# ----- refusals ----------------------------------------------------------------------------------


def in_knots(x):
    s = si.CubicSpline(x, Y)
    return np.sum(s(T) ** 2)


def akima_in_knots(x):
    s = si.Akima1DInterpolator(x, Y)
    return np.sum(s(INSIDE) ** 2)


def rbf_in_centers(c):
    f = si.RBFInterpolator(np.reshape(c, (-1, 2)), RBF_VALUES)
    return np.sum(f(RBF_POINTS))


def rbf_smoothing(y):
    f = si.RBFInterpolator(CENTERS, RBF_VALUES, None, y[0] ** 2)
    return np.sum(f(RBF_POINTS))


def rbf_neighbors(y):
    f = si.RBFInterpolator(CENTERS, y, neighbors=5)
    return np.sum(f(RBF_POINTS))


def interpn_cubic(v):
    return np.sum(si.interpn((X,), v, INSIDE[:, None], method="cubic"))


def splrep_smoothed(y):
    return np.sum(si.splev(INSIDE, si.splrep(X, y, s=0.1)))


def splev_in_knots(t):
    return np.sum(si.splev(INSIDE, (t, si.splrep(X, Y)[1], 3)))


def grid_in_points(g):
    f = si.RegularGridInterpolator((g,), Y)
    return np.sum(f(INSIDE[:, None]))


def nearest(y):
    f = si.interp1d(X, y, kind="nearest")
    return np.sum(f(INSIDE))


def grid_cubic(v):
    f = si.RegularGridInterpolator((X,), v, method="cubic")
    return np.sum(f(INSIDE[:, None]))


def periodic_b_spline(y):
    s = si.make_interp_spline(X, y, bc_type="periodic")
    return np.sum(s(T))


def filled_beyond(y):
    f = si.interp1d(X, y, bounds_error=False, fill_value=(y[0] * 2, y[-1]))
    return np.sum(f(T * 3))


def clamped_at(y):
    s = si.CubicSpline(X, y, bc_type=((1, y[0] - y[1]), (2, 0.0)))
    return np.sum(s(T))


REFUSED = [
    # settings that carry a derivative: the rules had taken them for constants (a silent wrong derivative)
    (filled_beyond, Y, cr.NoDerivativeError, "not in its settings"),
    (clamped_at, Y, cr.NoDerivativeError, "not in its settings"),
    (in_knots, X, cr.NoDerivativeError, "not in its knots"),
    (grid_in_points, X, cr.NoDerivativeError, "not in its knots"),
    (akima_in_knots, X, cr.NoDerivativeError, "not in its knots"),
    (rbf_in_centers, CENTERS.ravel(), cr.NoDerivativeError, "not in its knots"),
    (rbf_smoothing, RBF_VALUES, cr.NoDerivativeError, "not in its settings"),
    (rbf_neighbors, RBF_VALUES, cr.NoDerivativeError, "neighbors"),
    (nearest, Y, cr.NoDerivativeError, "piecewise constant"),
    (grid_cubic, Y, cr.NoDerivativeError, "method='linear' only"),
    (interpn_cubic, Y, cr.NoDerivativeError, "method='linear' only"),
    (splrep_smoothed, Y, cr.NoDerivativeError, "chooses its knots"),
    (splev_in_knots, si.splrep(X, Y)[0], cr.NoDerivativeError, "not in its knots"),
    (periodic_b_spline, np.append(Y[:-1], Y[0]), cr.NoDerivativeError, "periodic fit"),
]


@pytest.mark.parametrize("f, x, error, reason", REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_refused_at_the_users_line(f, x, error, reason):
    """A derivative the rules do not give is refused, naming the line of the construction (or of the call
    whose derivative in the interpolant's values has no rule): never a silent zero. Forward mode's refusal
    names the same line, from the source engine's primal it ran the function through."""
    lines = [f"test_interpolate.py:{f.__code__.co_firstlineno + k}" for k in (1, 2)]
    with pytest.raises(error, match=reason) as raised:
        cr.gradient(f, x)
    assert any(line in str(raised.value) for line in lines)
    with pytest.raises(cr.ChainRulesError) as raised:
        cr.jacobian(f, x, mode="forward")
    message = "\n".join([str(raised.value), *getattr(raised.value, "__notes__", ())])
    assert reason in message and any(line in message for line in lines)


def test_knots_held_constant_are_not_refused():
    """The knots' cotangent is read only for a value being differentiated: a closure's knots pass."""
    np.testing.assert_allclose(cr.gradient(cubic_energy, Y)[0], fd_jacobian(cubic_energy, Y)[0], rtol=1e-6)
    np.testing.assert_allclose(
        cr.gradient(lambda y: grid_values(y) + nearest(Y), np.cos(np.arange(16.0)))[0],
        fd_jacobian(grid_values, np.cos(np.arange(16.0)))[0],
        rtol=1e-6,
        atol=1e-12,
    )
