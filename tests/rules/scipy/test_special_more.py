"""Rules for more of ``scipy.special``: beta, the incomplete gamma functions and their inverses,
Bessel functions in their argument (orders held fixed), exponential integrals, Dawson, erfi,
Faddeeva, loggamma, multigammaln, softplus. Finite differences on arrays and scalars in float64
and float32, complex arguments where the function is holomorphic, parameters without a
closed-form derivative refused only when differentiated, Hessians, both reverse engines."""

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
from chainrules.testing import nondiff, test_frule, test_rrule

from ..numpy.test_linalg import rng_for


def _positive(r):
    return r.uniform(0.4, 3.0, (3, 4))


def _real(r):
    return r.standard_normal((3, 4)) * 1.5


def _named(v):
    if callable(v):
        return getattr(v, "__name__", "")
    return "orders" if isinstance(v, np.ndarray) else repr(v)


UNARY = [
    (sc.j0, _real),
    (sc.j1, _real),
    (sc.y0, _positive),
    (sc.y1, _positive),
    (sc.k0, _positive),
    (sc.k1, _positive),
    (sc.k0e, _positive),
    (sc.k1e, _positive),
    (sc.loggamma, _positive),
    (sc.exp1, _positive),
    (sc.expi, lambda r: np.concatenate([-_positive(r)[:1], _positive(r)[1:]])),  # Ei is real on both sides of 0
    (sc.dawsn, _real),
    (sc.erfi, _real),
    (sc.wofz, _real),  # complex output of a real argument
    (sc.softplus, lambda r: r.standard_normal((3, 4)) * 4),
]


@pytest.mark.parametrize("f, make", UNARY, ids=_named)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary(f, make, dtype):
    x = make(rng_for("special-more", f.__name__, dtype)).astype(dtype)
    test_rrule(f, x)
    test_frule(f, x)
    test_rrule(f, x[0, 0])  # a NumPy scalar
    test_frule(f, float(x[0, 1]))  # a Python float


def _small(r):
    return r.uniform(0.05, 0.95, (3, 4))


# (f, integer order or parameter, argument): the first argument is discrete, so its tangent is NoTangent
ORDERED = [
    (sc.jv, np.array([[0], [1], [3]]), _positive),  # orders broadcast against the argument
    (sc.yv, 2, _positive),
    (sc.iv, np.array([[-1], [0], [2]]), _real),
    (sc.kv, 1, _positive),
    (sc.ive, 1, _real),
    (sc.kve, 2, _positive),
    (sc.jve, 3, _real),
    (sc.yve, 0, _positive),
    (sc.yn, np.array([[0], [1], [2]]), _positive),
    (sc.kn, 3, _positive),
    (sc.expn, np.array([[0], [1], [4]]), _positive),
    (sc.gammainc, np.array([[1], [2], [5]]), _positive),
    (sc.gammaincc, 3, _positive),
    (sc.gammaincinv, 2, _small),
    (sc.gammainccinv, np.array([[1], [2], [4]]), _small),
    (sc.spherical_jn, np.array([[0], [1], [3]]), _real),
    (sc.spherical_yn, 2, _positive),
    (sc.spherical_in, np.array([[0], [1], [2]]), _real),
    (sc.spherical_kn, 1, _positive),
]


@pytest.mark.parametrize("f, order, make", ORDERED, ids=_named)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_in_the_argument_with_an_integer_order(f, order, make, dtype):
    x = make(rng_for("special-ordered", f.__name__, dtype)).astype(dtype)
    test_rrule(f, order, x)
    test_frule(f, order, x)
    first = order if np.ndim(order) == 0 else int(np.ravel(order)[1])
    test_rrule(f, first, x[0, 0])
    test_frule(f, first, float(x[0, 1]))


@pytest.mark.parametrize("f", [sc.spherical_jn, sc.spherical_yn, sc.spherical_in, sc.spherical_kn], ids=_named)
def test_spherical_derivative_flag(f):
    # derivative=True is itself differentiated: by keyword and positionally (a flag, NoTangent)
    x = rng_for("spherical-flag", f.__name__).uniform(0.5, 3.0, (2, 3))
    n = np.array([[0], [3]])
    test_rrule(f, n, x, fkwargs={"derivative": True})
    test_frule(f, n, x, fkwargs={"derivative": True})
    test_rrule(f, n, x, nondiff(True))
    test_frule(f, n, x, nondiff(False))


def _holding_first_constant(f, a, x):
    """``cr.rrule`` with the cotangent of ``a`` dropped: what an engine does for a constant ``a``.
    That cotangent must be left unevaluated, since evaluating it raises."""
    y, back = cr.rrule(f, a, x)

    def back_in_x(dy):
        df, da, dx = back(dy)
        assert isinstance(da, (cr.Thunk, cr.ZeroTangent)), da
        return df, cr.NoTangent(), dx

    return y, back_in_x


# real-valued parameters: the rules differentiate in the argument, the parameter held constant
PARAMETERS = [
    (sc.jv, 2.5, _positive),
    (sc.yv, 0.7, _positive),
    (sc.iv, 1.5, _positive),
    (sc.kv, 0.3, _positive),
    (sc.ive, 1.2, _positive),
    (sc.kve, 2.5, _positive),
    (sc.jve, 0.5, _positive),
    (sc.yve, 1.5, _positive),
    (sc.gammainc, 2.5, _positive),
    (sc.gammaincc, 0.7, _positive),
    (sc.gammaincinv, 1.5, _small),
    (sc.gammainccinv, 3.5, _small),
    (sc.zeta, 2.5, _positive),  # Hurwitz's zeta(s, q), in q
]


@pytest.mark.parametrize("f, a, make", PARAMETERS, ids=_named)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_in_the_argument_with_a_real_parameter(f, a, make, dtype):
    x = make(rng_for("special-parameter", f.__name__, dtype)).astype(dtype)
    test_rrule(f, nondiff(a), x, rule=_holding_first_constant)
    test_frule(f, nondiff(a), x)
    test_rrule(f, nondiff(np.full((3, 1), a, dtype)), x, rule=_holding_first_constant)


@pytest.mark.parametrize("f, a, make", PARAMETERS, ids=_named)
def test_a_differentiated_parameter_is_refused(f, a, make):
    x = make(rng_for("special-refused", f.__name__))
    message = rf"scipy\.special\.{f.__name__} at .*test_special_more\.py:\d+: the derivative in (a|the order v|s) "
    _, back = cr.rrule(f, a, x)
    da = back(np.ones_like(x))[1]
    with pytest.raises(ValueError, match=message):
        cr.unthunk(da)
    with pytest.raises(ValueError, match=message):
        cr.frule((cr.NoTangent(), 1.0, np.ones_like(x)), f, a, x)
    # an exactly zero tangent contributes zero times a finite derivative
    _, dy = cr.frule((cr.NoTangent(), 0.0, np.ones_like(x)), f, a, x)
    np.testing.assert_allclose(dy, cr.frule((cr.NoTangent(), cr.ZeroTangent(), np.ones_like(x)), f, a, x)[1])


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_engines_refuse_a_parameter_only_when_it_is_differentiated(engine):
    x = np.array([0.6, 1.4, 2.9])
    eps = 1e-6

    def fd_in_x(f):
        return [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]

    def in_a_closure(x):
        a = 1.0 + 0.5  # a constant: its cotangents are never read, though it feeds two calls
        return np.sum(sc.gammainc(a, x) * sc.jv(a, x))

    np.testing.assert_allclose(cr.gradient(in_a_closure, x, engine=engine)[0], fd_in_x(in_a_closure), rtol=1e-7)

    def once(a, x):
        return np.sum(sc.gammainc(a, x) * x)

    with pytest.raises(ValueError, match=r"scipy\.special\.gammainc at .*test_special_more\.py:\d+: the derivative"):
        cr.gradient(once, 1.5, x, engine=engine)
    # left out with argnums, an argument that feeds one call is never read
    grad = cr.gradient(once, 1.5, x, engine=engine, argnums=1)
    np.testing.assert_allclose(grad, fd_in_x(lambda x: once(1.5, x)), rtol=1e-7)

    def twice(a, x):
        return np.sum(sc.gammainc(a, x) * sc.jv(a, x))

    # differentiated and feeding two calls, its cotangents are added as the sweep goes, which evaluates them:
    # refused; left out with argnums, it is a constant
    with pytest.raises(ValueError, match=r"scipy\.special\.(jv|gammainc) at .*: the derivative in"):
        cr.gradient(twice, 1.5, x, engine=engine)
    grad = cr.gradient(twice, 1.5, x, engine=engine, argnums=1)
    np.testing.assert_allclose(grad, fd_in_x(lambda x: twice(1.5, x)), rtol=1e-7)
    with pytest.raises(ValueError, match=r"scipy\.special\.gammainc at .*: the derivative in a has no closed form"):
        cr.jvp(once, (1.5, x), (1.0, np.ones(3)))


@pytest.mark.parametrize("f", [sc.ive, sc.jve, sc.yve], ids=_named)
def test_scaled_bessel_functions_refuse_complex_arguments(f):
    z = np.array([1.0 + 0.5j, 2.0 - 1.0j])
    with pytest.raises(cr.NoRuleError, match=rf"{f.__name__}\(.*a complex argument.*not holomorphic"):
        cr.rrule(f, 1, z)
    with pytest.raises(TypeError, match="not holomorphic"):
        cr.frule((cr.NoTangent(), cr.NoTangent(), np.ones(2)), f, 1, z)


HOLOMORPHIC = [
    (sc.jv, (1,)),
    (sc.yv, (2,)),
    (sc.iv, (0,)),
    (sc.kv, (1,)),
    (sc.kve, (2,)),
    (sc.spherical_jn, (2,)),
    (sc.exp1, ()),
    (sc.expi, ()),
    (sc.dawsn, ()),
    (sc.erfi, ()),
    (sc.wofz, ()),
    (sc.loggamma, ()),
]


@pytest.mark.parametrize("f, orders", HOLOMORPHIC, ids=_named)
def test_holomorphic_rows_take_complex_arguments(f, orders):
    # away from the branch cuts along the negative real axis
    rng = rng_for("special-complex", f.__name__)
    z = rng.uniform(0.5, 2.0, (2, 3)) + 1j * rng.uniform(-1.0, 1.0, (2, 3))
    test_rrule(f, *orders, z)
    test_frule(f, *orders, z)
    test_rrule(f, *orders, z.astype(np.complex64))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_beta_and_multigammaln(dtype):
    rng = rng_for("beta", dtype)
    a, b = rng.uniform(0.5, 3.0, (3, 1)).astype(dtype), rng.uniform(0.5, 3.0, (3, 4)).astype(dtype)
    test_rrule(sc.beta, a, b)
    test_frule(sc.beta, a, b)
    test_rrule(sc.beta, float(a[0, 0]), b)
    test_rrule(sc.beta, -0.5, 1.5)  # between the poles of Gamma
    test_rrule(sc.multigammaln, b + 2, 3)
    test_frule(sc.multigammaln, b + 2, 3)
    test_rrule(sc.multigammaln, 2.5, 4)


def test_values_at_the_edges():
    # J1'(0) = 1/2 and J0'(0) = 0 (no division by z in the recurrence); P(1, x)' = exp(-x) at 0
    _, back = cr.rrule(sc.jv, np.array([0, 1, 2]), 0.0)
    np.testing.assert_array_equal(back(1.0)[2], 0.5)  # the cotangent of a scalar sums the three
    _, back = cr.rrule(sc.gammainc, 1, 0.0)
    assert back(1.0)[2] == 1.0
    _, back = cr.rrule(sc.expn, 0, 2.0)
    np.testing.assert_allclose(back(1.0)[2], -np.exp(-2.0) * 3.0 / 4.0, rtol=1e-15)
    # the spherical functions reflect negative real z as SciPy does
    test_rrule(sc.spherical_jn, np.array([1, 2]), np.array([-1.5, -0.4]))


def test_softplus_tails():
    y, back = cr.rrule(sc.softplus, np.array([-800.0, 0.0, 800.0]))
    np.testing.assert_array_equal(y, [0.0, np.log(2.0), 800.0])
    np.testing.assert_allclose(back(np.ones(3))[1], [0.0, 0.5, 1.0], rtol=1e-15)


BATCHED = [
    (sc.jv, (2,), _positive),
    (sc.kve, (1,), _positive),
    (sc.gammainc, (np.array([1, 2, 3, 4]),), _positive),
    (sc.expn, (1,), _positive),
    (sc.wofz, (), _real),
    (sc.k1e, (), _positive),
    (sc.spherical_in, (2,), _real),
]


@pytest.mark.parametrize("f, orders, make", BATCHED, ids=_named)
def test_batched_frule_equals_row_by_row(f, orders, make):
    rng = rng_for("special-more-batch", f.__name__)
    x = make(rng)
    args = (*orders, x)
    assert cr.frule.lookup(f, args).batched
    dx = rng.standard_normal((5,) + x.shape)
    skip = (cr.NoTangent(),) * (1 + len(orders))
    _, dy = cr.frule((*skip, dx), f, *args)
    for i in range(5):
        np.testing.assert_allclose(dy[i], cr.frule((*skip, dx[i]), f, *args)[1], rtol=1e-12)


def _bessel_loss(x):
    return np.sum(sc.jv(2.5, x) ** 2 + sc.jv(1, x) * sc.kv(0.5, x) + sc.ive(1, x) + sc.y1(x) * sc.k0e(x))


def _gamma_loss(x):
    return np.sum(sc.gammainc(2.5, x) ** 2 + sc.gammaincc(np.array([1, 2, 3]), x) * x + sc.gammaincinv(1.5, x / 4))


def _more_loss(x):
    return np.sum(
        sc.expn(np.array([0, 1, 2]), x) * sc.exp1(x)
        + sc.dawsn(x) * sc.erfi(x)
        + np.abs(sc.wofz(x)) ** 2
        + sc.loggamma(x) * sc.beta(x, 2.0)
        + sc.y0(x) * sc.kn(2, x)
    )


def _wrappers_loss(x):
    # SciPy's Python functions (not ufuncs): their rules are called by the source engine
    return np.sum(sc.softplus(x) * sc.multigammaln(x + 2.0, 3) + sc.spherical_jn(2, x) * sc.spherical_kn(1, x, True))


def _fd_hessian(f, x, engine: str, eps: float = 1e-6):
    def g(x):
        return cr.gradient(f, x, engine=engine)[0]

    return np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize(
    "loss, engine",
    [(loss, engine) for loss in (_bessel_loss, _gamma_loss, _more_loss) for engine in ("source", "tape")]
    + [(_wrappers_loss, "source")],
    ids=_named,
)
def test_gradient_and_hessian(loss, engine):
    x = np.array([0.6, 1.3, 2.2])
    eps = 1e-6
    fd = np.array([(loss(x + eps * e) - loss(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(cr.gradient(loss, x, engine=engine)[0], fd, rtol=1e-7, atol=1e-9)
    # the partials are ufuncs with rules, so the pullbacks run on dual numbers: forward over reverse
    np.testing.assert_allclose(cr.hessian(loss, x), _fd_hessian(loss, x, engine), rtol=1e-5, atol=1e-6)


def test_the_tape_engine_names_a_wrapper_whose_rule_it_cannot_use():
    # it sees the body of multigammaln, which converts its argument to an array
    with pytest.raises(cr.ChainRulesError, match="multigammaln has a rule that the tape engine cannot use"):
        cr.gradient(lambda x: np.sum(sc.multigammaln(x + 2.0, 3)), np.array([0.6, 1.3]), engine="tape")


def test_hessian_through_spherical_functions_at_negative_arguments():
    def loss(x):
        return np.sum(sc.spherical_jn(np.array([1, 2, 3]), x) ** 2 + sc.spherical_in(2, x, True))

    x = np.array([-1.4, 0.5, -2.0])
    np.testing.assert_allclose(cr.hessian(loss, x), _fd_hessian(loss, x, "source"), rtol=1e-5, atol=1e-6)
