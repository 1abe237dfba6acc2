"""numpy.polynomial's rules (rules/numpy/series.py): each family's val, vander, der and int, and the classes."""

import numpy as np
import pytest
from _array_checks import Const, check_batched_frule, check_engines
from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre, polynomial

import chainrules as cr
import chainrules.testing as crt
from chainrules.core.ruled_calls import IgnoredRuleError

R = np.random.default_rng(23)
ND = crt.nondiff
FAMILIES = {
    "poly": polynomial,
    "cheb": chebyshev,
    "leg": legendre,
    "herm": hermite,
    "herme": hermite_e,
    "lag": laguerre,
}


def _r(*shape, dtype=np.float64):
    value = R.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * R.standard_normal(shape)
    return value.astype(dtype)


def _function(prefix: str, what: str):
    return getattr(FAMILIES[prefix], f"{prefix}{what}")


def _id(case):
    args, kwargs = case
    return "-".join(str(np.shape(getattr(a, "value", a))) for a in args) + f"-{kwargs}"


def _check_rules(f, args, kwargs, batched_pullback):
    """Finite differences of the rrule and the frule; one cotangent and a batch, one tangent and a batch."""
    crt.test_rrule(f, *args, fkwargs=kwargs)
    crt.test_frule(f, *args, fkwargs=kwargs)
    plain = tuple(getattr(a, "value", a) for a in args)
    if isinstance(plain[0], np.ndarray):
        single = np.result_type(*(p for p in plain if isinstance(p, np.ndarray))) == np.float32
        batched_pullback(f, *plain, kwargs=kwargs, rtol=1e-6 if single else 1e-13)  # (float32 rows: one rounding)
        check_batched_frule(f, *(p if p is a else Const(p) for a, p in zip(args, plain)), fkwargs=kwargs)


# ----- val ----------------------------------------------------------------------------------------

VAL = [
    ((_r(5), _r(4)), {}),
    ((_r(2, 3), _r(4, 2)), {}),  # each column of c at every point: shape (2, 2, 3)
    ((_r(2), _r(3, 2)), {"tensor": False}),  # the columns broadcast against the points
    ((_r(4, 1), _r(3, 2)), {"tensor": False}),
    ((_r(2), _r(3, 2), ND(False)), {}),
    ((0.7, _r(3)), {}),
    ((_r(3, 2), 0.4), {}),  # a constant: no derivative in the points
    ((_r(3), _r(2)), {}),  # a line: the two-coefficient case of the recurrences
    (([0.3, 1.2], [1.0, 2.0, -1.0]), {}),
    ((_r(3, dtype=np.complex128), _r(3)), {}),
    ((_r(3), _r(4, dtype=np.complex128)), {}),
    ((_r(4, dtype=np.float32), _r(3, dtype=np.float32)), {}),
]


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("args, kwargs", VAL, ids=[_id(c) for c in VAL])
def test_val(prefix, args, kwargs, batched_pullback):
    """polyval, chebval, legval, hermval, hermeval, lagval: linear in c, the family's series of der(c) in x."""
    _check_rules(_function(prefix, "val"), args, kwargs, batched_pullback)


@pytest.mark.parametrize("prefix", FAMILIES)
def test_val_keeps_numpy_s_value_and_dtype(prefix):
    val = _function(prefix, "val")
    for x, c in ((_r(4), _r(5, 2)), (_r(3, dtype=np.float32), _r(4, dtype=np.float32)), (0.3, [1, 2, 3])):
        y = cr.rrule(val, x, c)[0]
        np.testing.assert_array_equal(y, val(x, c))
        assert np.result_type(y) == np.result_type(val(x, c))


# ----- val2d, val3d, grid2d, grid3d -------------------------------------------------------------

SEVERAL = [
    ("val2d", (_r(4), _r(4), _r(3, 2)), {}),  # at the pairs (x_i, y_i)
    ("val2d", (0.3, -0.6, _r(2, 3, 2)), {}),  # c's last axis: one series per column
    ("val2d", ([0.1, 0.5], [0.2, -0.4], _r(2, 2)), {}),
    ("val3d", (_r(3), _r(3), _r(3), _r(2, 3, 2)), {}),
    ("grid2d", (_r(3), _r(2), _r(3, 2)), {}),  # on the grid x × y
    ("grid2d", (_r(2, 2), _r(3), _r(2, 3)), {}),
    ("grid3d", (_r(2), _r(3), _r(2), _r(2, 2, 3)), {}),
    ("grid2d", (_r(3, dtype=np.complex128), _r(2), _r(2, 2)), {}),
    ("val2d", (_r(3, dtype=np.float32), _r(3, dtype=np.float32), _r(2, 2, dtype=np.float32)), {}),
]


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("what, args, kwargs", SEVERAL, ids=[w + "-" + _id((a, k)) for w, a, k in SEVERAL])
def test_val_and_grid_in_several_variables(prefix, what, args, kwargs, batched_pullback):
    """polyval2d, chebgrid3d, ...: val along each axis of c in turn, their rules val's composed."""
    _check_rules(_function(prefix, what), args, kwargs, batched_pullback)


def test_val2d_refuses_points_of_different_shapes_as_numpy_does():
    with pytest.raises(ValueError, match="x, y are incompatible"):
        cr.rrule(chebyshev.chebval2d, _r(3), _r(2), _r(2, 2))


# ----- vander -------------------------------------------------------------------------------------

VANDER = [
    ((_r(5), ND(3)), {}),
    ((_r(2, 3), ND(2)), {}),
    ((0.4, ND(4)), {}),  # NumPy makes a number a 1-d array: shape (1, 5)
    ((_r(3), ND(0)), {}),
    ((_r(3, dtype=np.complex128), ND(2)), {}),
    ((_r(4, dtype=np.float32), ND(3)), {}),
]


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("args, kwargs", VANDER, ids=[_id(c) for c in VANDER])
def test_vander(prefix, args, kwargs, batched_pullback):
    """polyvander, chebvander, ...: the basis at x, whose slopes are vander(x, deg - 1) times der's matrix."""
    _check_rules(_function(prefix, "vander"), args, kwargs, batched_pullback)


# ----- der and int --------------------------------------------------------------------------------

DER = [
    ((_r(5),), {}),
    ((_r(5), ND(2)), {}),
    ((_r(5),), {"m": 3, "scl": 0.5}),
    ((_r(3),), {"m": 4}),  # as many derivatives as coefficients, or more: a zero
    ((_r(4, 2),), {}),
    ((_r(2, 4),), {"axis": 1, "m": 2}),
    ((_r(3, 4, 2),), {"axis": -2}),
    ((0.7,), {}),
    (([1.0, -2.0, 3.0],), {}),
    ((_r(4, dtype=np.complex128),), {"scl": 2.0}),
    ((_r(4, dtype=np.float32),), {}),
]

INT = [
    ((_r(4),), {}),
    ((_r(4), ND(2)), {}),
    ((_r(4),), {"m": 2, "k": [0.5, -1.0], "lbnd": 0.3, "scl": 1.5}),  # the constants: an offset
    ((_r(4),), {"k": 2.0}),
    ((_r(3, 2),), {"lbnd": -0.4}),
    ((_r(2, 3),), {"axis": 1, "m": 2, "k": [1.0]}),
    ((_r(3),), {"m": 0}),
    ((0.7,), {"k": 1.0}),
    ((_r(3, dtype=np.complex128),), {"lbnd": 0.5}),
    ((_r(3, dtype=np.float32),), {"m": 2}),
]


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("args, kwargs", DER, ids=[_id(c) for c in DER])
def test_der(prefix, args, kwargs, batched_pullback):
    """polyder, chebder, ...: linear in c along axis, pulled back by the transpose of their matrix."""
    _check_rules(_function(prefix, "der"), args, kwargs, batched_pullback)


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("args, kwargs", INT, ids=[_id(c) for c in INT])
def test_int(prefix, args, kwargs, batched_pullback):
    """polyint, chebint, ...: linear in c along axis but for the constants k, an offset."""
    _check_rules(_function(prefix, "int"), args, kwargs, batched_pullback)


# ----- add, sub, mul ------------------------------------------------------------------------------

ARITHMETIC = [
    ((_r(3), _r(5)), {}),
    ((_r(4), _r(2)), {}),
    ((_r(4), 1.5), {}),
    ((0.5, _r(3)), {}),
    (([1.0, 2.0], _r(2)), {}),
    ((_r(3, dtype=np.complex128), _r(2)), {}),
    ((_r(3, dtype=np.float32), _r(2, dtype=np.float32)), {}),
]


POWERS = [((_r(3), ND(2)), {}), ((_r(2), ND(3)), {}), ((_r(3), ND(1)), {}), ((_r(3), ND(0)), {})]
POWERS += [(([0.5, -1.0], ND(2)), {}), ((_r(2, dtype=np.complex128), ND(3)), {}), ((_r(3), ND(2)), {"maxpower": 4})]


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("args, kwargs", POWERS, ids=[_id(c) for c in POWERS])
def test_pow(prefix, args, kwargs, batched_pullback):
    """polypow, chebpow, ...: the product with itself, mul's rules composed."""
    _check_rules(_function(prefix, "pow"), args, kwargs, batched_pullback)


@pytest.mark.parametrize("prefix", FAMILIES)
@pytest.mark.parametrize("what", ["add", "sub", "mul"])
@pytest.mark.parametrize("args, kwargs", ARITHMETIC, ids=[_id(c) for c in ARITHMETIC])
def test_add_sub_mul(prefix, what, args, kwargs, batched_pullback):
    """polyadd, chebsub, legmul, ...: linear in each operand (the product bilinear)."""
    _check_rules(_function(prefix, what), args, kwargs, batched_pullback)


# ----- through the engines --------------------------------------------------------------------


@pytest.mark.parametrize("prefix", FAMILIES)
def test_series_functions_through_the_engines(prefix):
    val, der, integ, val2d, grid2d = (_function(prefix, w) for w in ("val", "der", "int", "val2d", "grid2d"))
    points = np.linspace(-0.9, 0.8, 5)

    def f(c):  # the coefficients, and the columns of a 2-d array of them evaluated at its own entries
        a = val(points, c)
        b = val(c[:2], np.reshape(c[:4], (2, 2)) * c[2:4])
        slope = val(points * c[0], der(c, 1, 0.5))
        area = val(0.5, integ(c, 2, [0.3], -0.2)) - val(c[1], integ(c, lbnd=0.1))
        surface = val2d(points, points * c[1], np.outer(c[:2], c[1:]))
        grid = grid2d(c[:2], points[:3], np.reshape(c, (2, 2)))
        return np.sum(a**2) + np.sum(b**3) + np.sum(slope * a) + area**2 + np.sum(surface**2) + np.sum(grid * a[:3])

    c = np.array([0.5, -1.2, 0.3, 0.8])
    check_engines(f, c, engines=("source",))
    with pytest.raises(cr.ChainRulesError, match="has a rule that the tape engine cannot use here"):
        cr.gradient(f, c, engine="tape")


COLUMNS = np.array([[0.5, -1.0], [0.3, 0.8], [-0.6, 0.2]])


@pytest.mark.parametrize("prefix", FAMILIES)
def test_val_of_differentiated_points_and_coefficient_columns_on_every_engine(prefix):
    # the tape and forward mode run val's body in its rule's place: NumPy gives the columns of c an
    # axis per axis of x only for an np.ndarray x, which the body's test of x's class must see
    val = _function(prefix, "val")

    def f(x):  # (c a global: the tape tracks what a closure captures, which val's body converts)
        table = val(x, COLUMNS)  # (2, 3, 2): one row per column
        return np.sum(table**2) + np.sum(val(x, COLUMNS, tensor=False) * x)

    x = np.array([[0.3, -0.7], [0.5, 0.1], [-0.2, 0.9]])
    assert cr.pullback(f, x, engine="tape")[0] == pytest.approx(f(x), rel=1e-12)
    check_engines(f, x)


def test_series_functions_in_float32():
    c, x = _r(4, dtype=np.float32), _r(3, dtype=np.float32)

    def f(c, x):
        return np.sum(chebyshev.chebval(x, legendre.legder(c)) ** 2)

    grads = cr.gradient(f, c, x)
    assert all(g.dtype == np.float32 for g in grads)
    want = cr.gradient(f, c.astype(np.float64), x.astype(np.float64))
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-4)


# ----- the classes --------------------------------------------------------------------------------

CLASSES = [np.polynomial.Polynomial, np.polynomial.Chebyshev, np.polynomial.Legendre]
CLASSES += [np.polynomial.Hermite, np.polynomial.HermiteE, np.polynomial.Laguerre]
ABC = np.polynomial._polybase.ABCPolyBase
COEF = np.array([0.5, -1.2, 0.3, 0.8])


def _series(cls):
    """A series with its own domain and window, which its tangent holds with its coefficients."""
    return cls(COEF, domain=[-0.5, 2.0], window=[-1.0, 0.5])


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_class_construction(cls):
    """The tangent of a series: Tangent[cls] of its coefficients and of its own domain and window."""
    for args in ((COEF,), (COEF, [0.0, 2.0]), (COEF, [0.0, 2.0], np.array([-1.0, 0.5])), ([1.0, 2.0],), (0.7,)):
        crt.test_rrule(cls, *args)
        crt.test_frule(cls, *args)
    crt.test_rrule(cls, COEF, ND(None), ND(None), ND("t"))
    y, back = cr.rrule(cls, COEF)
    assert y == cls(COEF) and y.coef.dtype == np.float64
    assert back(cr.Tangent[cls](coef=np.ones(4)))[1].tolist() == [1.0] * 4
    assert cr.rrule(cls, np.array([1, 2]))[0].coef.dtype == np.float64


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_class_methods(cls):
    """p(x) (x mapped from the domain to the window), p.deriv, p.integ and the operators, in the
    coefficients, the domain and the window."""
    # (two series must have the same domain and window: those of their class, which finite differences leave)
    p, p0, q0 = _series(cls), cls(COEF), cls([0.3, -0.7])
    x = np.array([-0.4, 0.3, 1.7])
    cases = [
        (p, (x,)),
        (p, (0.6,)),
        (cls(COEF), (x,)),  # the class's domain and window: constants
        (ABC.deriv, (p,)),
        (ABC.deriv, (p, ND(2))),
        (ABC.deriv, (cls(COEF), ND(5))),
        (ABC.integ, (p,)),
        (ABC.integ, (p, ND(2), ND([0.5, -1.0]), ND(0.3))),
        (ABC.integ, (cls(COEF), ND(1), ND(2.0))),
        (ABC.__add__, (p0, q0)),
        (ABC.__radd__, (p, 1.5)),
        (ABC.__sub__, (p, [0.2, 0.4, 0.1, -0.3, 0.9])),
        (ABC.__rsub__, (p, 2.0)),
        (ABC.__mul__, (p0, q0)),
        (ABC.__mul__, (p, 1.5)),
        (ABC.__rmul__, (p, [0.5, 2.0])),
        (ABC.__pow__, (p, ND(3))),
        (ABC.__neg__, (p,)),
        (ABC.__pos__, (p,)),
    ]
    for f, args in cases:
        crt.test_rrule(f, *args)
        crt.test_frule(f, *args)


def _class_program(cls):
    def f(c):
        x = np.array([-0.4, 0.3, 1.7])
        p = cls(c, domain=[-0.5, 2.0])
        q = cls(c[:2] * c[2], domain=[-0.5, 2.0])
        dp = p.deriv()
        area = p.integ()(1.5) - p.integ(2, [0.5], lbnd=0.2)(-0.5)
        s = 2.0 * (p - q) - q * c[3] + 1.5 - (-p) + (+q) - c[:2] + q**2
        energy = sum(a * a for a in p)  # (a series iterates over its coefficients)
        return (
            area**2
            + np.sum(dp(x) ** 2)
            + np.sum((p * q)(x))
            + np.sum(s(x) ** 3)
            + np.sum((3.0 - p).coef * s.coef)
            + energy
        )

    return f


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_classes_through_the_engines(cls):
    """A program of a series class: the source engine's gradient, the forward Jacobian and the Hessian
    against finite differences; the tape refuses at the constructor's line: the class has a rule it cannot use."""
    f = _class_program(cls)
    check_engines(f, COEF, engines=("source",))
    with pytest.raises(IgnoredRuleError, match=rf"{cls.__name__} has a rule .*test_series\.py:\d+"):
        cr.gradient(f, COEF, engine="tape")


def test_a_constant_series_at_differentiated_points():
    """A series built outside, called at the points being differentiated: the tape refuses the call's
    rule at its line (its body converts the points), the API's forward mode runs the source engine's primal."""
    p = np.polynomial.Laguerre([0.5, -1.0, 0.25, 2.0], domain=[0.0, 3.0])

    def f(x):
        return np.sum(p(x) ** 2) + np.sum(p.deriv()(x))

    check_engines(f, np.array([0.3, 1.2, 2.5]), engines=("source",))
    with pytest.raises(cr.ChainRulesError, match=r"Laguerre instance has a rule that the tape engine cannot use here"):
        cr.gradient(f, np.array([0.3, 1.2, 2.5]), engine="tape")


def test_a_series_differentiated_as_an_argument():
    """A series passed in: its gradient is Tangent[Chebyshev] of its coefficients, domain and window."""
    p, x = _series(np.polynomial.Chebyshev), np.array([-0.4, 0.3, 1.7])

    def loss(p):
        return np.sum(p.deriv()(x) ** 2) + p.integ(lbnd=0.5)(1.0)

    grad = cr.gradient(loss, p)[0]
    assert type(grad) is cr.Tangent[np.polynomial.Chebyshev]
    for name in ("coef", "domain", "window"):
        value = getattr(p, name)

        def moved(v, name=name):
            return loss(np.polynomial.Chebyshev(**{"coef": p.coef, "domain": p.domain, "window": p.window, name: v}))

        np.testing.assert_allclose(grad[name], crt.fd_jacobian(moved, value)[0], rtol=1e-6, err_msg=name)


def test_series_in_float32():
    c, x = COEF.astype(np.float32), np.array([0.1, 0.6], dtype=np.float32)

    def f(c, x):
        return np.sum(np.polynomial.Legendre(c).deriv()(x) ** 2)

    grads = cr.gradient(f, c, x)
    assert all(g.dtype == np.float32 for g in grads)
    for g, w in zip(grads, cr.gradient(f, COEF, x.astype(np.float64))):
        np.testing.assert_allclose(g, w, rtol=1e-4)


def test_trimmed_coefficients_are_refused_at_the_user_s_line():
    """NumPy trims the trailing zero coefficients of sums and products, and the derivatives in them with them."""

    def cancelled(c):
        return np.sum((np.polynomial.Polynomial(c) - np.polynomial.Polynomial([0.0, 0.0, c[2]])).coef)

    def times_zero(c):
        return np.sum(np.polynomial.chebyshev.chebmul(c, [0.0]))

    for f in (cancelled, times_zero):
        with pytest.raises(cr.NoDerivativeError, match=r"test_series\.py:\d+: NumPy trims the trailing zero"):
            cr.gradient(f, np.array([1.0, 2.0, 3.0]))
    # a constant operand's trailing zeros are harmless where forward mode sees which coefficients move
    y, dy = cr.frule((cr.NoTangent(), np.ones(2), cr.ZeroTangent()), polynomial.polyadd, [1.0, 2.0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(dy, [1.0, 1.0])
