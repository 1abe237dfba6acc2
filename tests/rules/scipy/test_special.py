"""Rules for ``scipy.special``: finite differences on arrays, NumPy and Python scalars, in float64
and float32; batched pushforwards; the tails of the logistic functions; logsumexp's options."""

import re

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

from ..numpy.test_linalg import rng_for

UNARY = [
    (sc.expit, lambda r: r.standard_normal((3, 4)) * 3),
    (sc.log_expit, lambda r: r.standard_normal((3, 4)) * 3),
    (sc.logit, lambda r: r.uniform(0.05, 0.95, (3, 4))),
    (sc.gammaln, lambda r: r.uniform(0.3, 4.0, (3, 4))),
    (sc.digamma, lambda r: r.uniform(0.3, 4.0, (3, 4))),
    (sc.erf, lambda r: r.standard_normal((3, 4))),
    (sc.erfc, lambda r: r.standard_normal((3, 4))),
    (sc.erfinv, lambda r: r.uniform(-0.9, 0.9, (3, 4))),
    (sc.erfcinv, lambda r: r.uniform(0.1, 1.9, (3, 4))),
    (sc.gamma, lambda r: r.uniform(-2.9, 4.0, (3, 4))),
    (sc.ndtr, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.i0, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.i0e, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.i1, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.i1e, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.erfcx, lambda r: r.standard_normal((3, 4)) * 2),
    (sc.log_ndtr, lambda r: r.standard_normal((3, 4)) * 3),
    (sc.ndtri, lambda r: r.uniform(0.05, 0.95, (3, 4))),
    (sc.entr, lambda r: r.uniform(0.05, 2.0, (3, 4))),
    # SciPy's own elementary ufuncs (other callables than NumPy's) and NumPy's i0
    (sc.log1p, lambda r: r.uniform(-0.5, 2.0, (3, 4))),
    (sc.expm1, lambda r: r.standard_normal((3, 4))),
    (sc.exp2, lambda r: r.standard_normal((3, 4))),
    (sc.exp10, lambda r: r.standard_normal((3, 4))),
    (sc.cbrt, lambda r: r.uniform(0.2, 3.0, (3, 4)) * r.choice([-1.0, 1.0], (3, 4))),
    (np.i0, lambda r: r.standard_normal((3, 4)) * 2),
]


@pytest.mark.parametrize("f, make", UNARY, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary(f, make, dtype):
    x = make(rng_for("special", f.__name__, dtype)).astype(dtype)
    test_rrule(f, x)
    test_frule(f, x)
    test_rrule(f, x[0, 0])  # a NumPy scalar
    test_frule(f, float(x[0, 1]))  # a Python float


@pytest.mark.parametrize("f", [sc.gamma, sc.ndtr, sc.log1p, sc.expm1], ids=lambda f: f.__name__)
def test_holomorphic_rows_take_complex_arguments(f):
    rng = rng_for("complex", f.__name__)
    z = rng.uniform(0.5, 2.0, (2, 3)) + 1j * rng.uniform(-1.0, 1.0, (2, 3))
    test_rrule(f, z)
    test_frule(f, z)
    test_rrule(f, z.astype(np.complex64))


def test_gamma_between_its_poles():
    # Gamma changes sign at each non-positive integer; its derivative there follows psi
    x = np.array([-2.5, -1.5, -0.5, 0.5])
    _, back = cr.rrule(sc.gamma, x)
    np.testing.assert_allclose(back(np.ones(4))[1], sc.gamma(x) * sc.digamma(x), rtol=1e-14)


def test_psi_is_digamma():
    assert sc.psi is sc.digamma and cr.rrule(sc.psi, 2.0) is not None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_polygamma_order_is_not_differentiable(dtype):
    x = rng_for("polygamma", dtype).uniform(0.5, 3.0, (2, 3)).astype(dtype)
    for n in (0, 1, 3):
        test_rrule(sc.polygamma, nondiff(n), x)
        test_frule(sc.polygamma, nondiff(n), x)
    assert cr.rrule(sc.polygamma, 2, x)[1](np.ones_like(x))[1] == cr.NoTangent()


@pytest.mark.parametrize("f", [sc.xlogy, sc.xlog1py, sc.betaln, sc.rel_entr, sc.kl_div], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_with_broadcasting(f, dtype):
    rng = rng_for("binary", f.__name__, dtype)
    a, b = rng.uniform(0.5, 3.0, (3, 1)).astype(dtype), rng.uniform(0.5, 3.0, (3, 4)).astype(dtype)
    test_rrule(f, a, b)
    test_frule(f, a, b)
    test_rrule(f, float(a[0, 0]), b)


TRANSFORMS = [
    # (function, first argument, second argument): Box-Cox in x and lambda, lambda = 0 included
    (sc.boxcox, lambda r: r.uniform(0.5, 2.5, (3, 4)), lambda r: r.uniform(-1.0, 1.5, (3, 4))),
    (sc.boxcox, lambda r: r.uniform(0.5, 2.5, 3), lambda r: np.array([0.0, 0.5, -0.3])),
    (sc.boxcox1p, lambda r: r.uniform(-0.3, 2.0, (3, 4)), lambda r: r.uniform(-1.0, 1.5, (3, 4))),
    (sc.boxcox1p, lambda r: r.uniform(-0.3, 2.0, 3), lambda r: np.zeros(3)),
    (sc.inv_boxcox, lambda r: r.uniform(-0.5, 1.0, (3, 4)), lambda r: r.uniform(-0.5, 1.0, (3, 4))),
    (sc.inv_boxcox, lambda r: r.uniform(-0.5, 1.0, 3), lambda r: np.zeros(3)),
    # the Huber losses in delta and r, inside and outside the quadratic zone
    (sc.huber, lambda r: r.uniform(0.5, 2.5, (3, 4)), lambda r: r.standard_normal((3, 4)) * 2),
    (sc.pseudo_huber, lambda r: r.uniform(0.5, 2.5, (3, 4)), lambda r: r.standard_normal((3, 4)) * 2),
    # the binomial coefficient in real n and k, through psi
    (sc.binom, lambda r: r.uniform(3.0, 6.0, (3, 4)), lambda r: r.uniform(0.5, 2.5, (3, 4))),
]


@pytest.mark.parametrize("f, make_a, make_b", TRANSFORMS, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transforms_and_losses(f, make_a, make_b, dtype):
    rng = rng_for("transforms", f.__name__, dtype)
    a, b = make_a(rng).astype(dtype), make_b(rng).astype(dtype)
    test_rrule(f, a, b)
    test_frule(f, a, b)


@pytest.mark.parametrize(
    "f, x",
    [
        # at lambda = 0 the slope in lambda is a series, whose own derivative is the slope's
        (lambda v: np.sum(sc.boxcox(v[:2], v[2])), np.array([1.3, 0.7, 0.0])),
        (lambda v: np.sum(sc.boxcox1p(v[:2], v[2])), np.array([0.3, -0.2, 0.0])),
        (lambda v: np.sum(sc.inv_boxcox(v[:2], v[2])), np.array([0.4, -0.3, 0.0])),
        # near lambda = 0 too, where the closed form cancels
        (lambda v: np.sum(sc.boxcox(v[:2], v[2]) + sc.inv_boxcox(v[:2], v[2])), np.array([1.3, 0.7, 3e-5])),
    ],
    ids=["boxcox", "boxcox1p", "inv_boxcox", "near 0"],
)
def test_second_derivatives_at_lambda_zero(f, x):
    np.testing.assert_allclose(cr.hessian(f, x), _fd_hessian(f, x, 1e-4), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize(
    "f, cross",
    [(sc.xlogy, lambda y: 1 / y), (sc.xlog1py, lambda y: 1 / (1 + y))],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_the_cross_term_at_x_zero(f, cross):
    # f(0, y) is constant in y, so its y-partial (x / y, x / (1 + y)) is 0 there; the derivative of
    # that partial in x is not 0: the Hessian's cross term
    y = 0.6
    H = cr.hessian(lambda v: f(v[0], v[1]), np.array([0.0, y]))
    assert H[0, 1] == pytest.approx(cross(y), rel=1e-14) and H[1, 0] == pytest.approx(cross(y), rel=1e-14)
    assert H[1, 1] == 0.0


def test_log_ndtr_far_left_tail_and_i1_at_zero():
    # the density over the CDF is about -x far left, where both underflow to zero
    _, back = cr.rrule(sc.log_ndtr, np.array([-40.0, -300.0]))
    np.testing.assert_allclose(back(np.ones(2))[1], [40.025, 300.0033], rtol=1e-4)
    _, back = cr.rrule(sc.i1, 0.0)
    assert back(1.0)[1] == 0.5


def test_relative_entropies_at_zero():
    # x log(x / y) is 0 at x = 0 for every y: no 0/0 in the y-partial
    for f, dy in ((sc.rel_entr, 0.0), (sc.kl_div, 1.0)):
        _, back = cr.rrule(f, 0.0, 2.0)
        assert back(1.0)[2] == dy


def test_xlogy_at_zero_has_no_zero_over_zero():
    y, back = cr.rrule(sc.xlogy, 0.0, 0.0)
    assert y == 0.0
    dx, dy = back(1.0)[1:]
    assert dx == -np.inf and dy == 0.0  # d/dx x log y = log 0; in y, xlogy(0, y) is constant
    _, back = cr.rrule(sc.xlog1py, np.zeros(2), np.array([-1.0, 1.0]))
    np.testing.assert_array_equal(back(np.ones(2))[2], [0.0, 0.0])


def test_expit_uses_one_exp_and_keeps_both_tails():
    x = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    y, back = cr.rrule(sc.expit, x)
    np.testing.assert_allclose(y, sc.expit(x), rtol=1e-15)
    grad = back(np.ones(5))[1]
    # sigma'(x) = sigma(x) sigma(-x): y (1 - y) would give 0 at x = 40, where it is 4.25e-18
    expected = np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))) ** 2
    np.testing.assert_allclose(grad, expected, rtol=1e-14)
    assert grad[3] > 0
    y, back = cr.rrule(sc.log_expit, x)
    np.testing.assert_allclose(y, sc.log_expit(x), rtol=1e-15)
    np.testing.assert_allclose(back(np.ones(5))[1], sc.expit(-x), rtol=1e-14)


def test_expit_calls_exp_once(monkeypatch):
    import chainrules.rules.scipy.special as rules

    calls = []
    exp = np.exp
    monkeypatch.setattr(rules.np, "exp", lambda *a, **k: calls.append(1) or exp(*a, **k))
    y, back = cr.rrule(sc.expit, np.linspace(-3, 3, 7))
    back(np.ones(7))
    assert len(calls) == 1


@pytest.mark.parametrize("f", [sc.softmax, sc.log_softmax], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_softmax_and_log_softmax(f, axis):
    x = rng_for(f.__name__, str(axis)).standard_normal((3, 4))
    test_rrule(f, x, fkwargs={"axis": axis})
    test_frule(f, x, fkwargs={"axis": axis})
    test_rrule(f, x.astype(np.float32), fkwargs={"axis": axis})


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims):
    rng = rng_for("lse", str(axis), keepdims)
    a, b = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    options = {"axis": axis, "keepdims": keepdims}
    test_rrule(sc.logsumexp, a, fkwargs=options)
    test_frule(sc.logsumexp, a, fkwargs=options)
    test_rrule(sc.logsumexp, a.astype(np.float32), fkwargs=options)
    # b positional is differentiated; b as a keyword is a constant
    test_rrule(sc.logsumexp, a, nondiff(axis), b, fkwargs={"keepdims": keepdims})
    test_frule(sc.logsumexp, a, nondiff(axis), b, fkwargs={"keepdims": keepdims})
    test_rrule(sc.logsumexp, a, fkwargs={**options, "b": b[:1]})  # b broadcasts against a
    signed = b - 1.2
    test_rrule(sc.logsumexp, a, fkwargs={**options, "b": signed, "return_sign": True})
    test_frule(sc.logsumexp, a, fkwargs={**options, "b": signed, "return_sign": True})


def test_logsumexp_values_match_scipy_at_the_extremes():
    a = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, -np.inf, -np.inf]])
    y, back = cr.rrule(sc.logsumexp, a, 1)
    np.testing.assert_allclose(y, sc.logsumexp(a, axis=1))
    np.testing.assert_allclose(back(np.array([1.0, 0.0]))[1][0], [0.5, 0.5, 0.0])


BATCHED = [(f, make) for f, make in UNARY] + [
    (sc.softmax, lambda r: r.standard_normal((3, 4))),
    (sc.log_softmax, lambda r: r.standard_normal((3, 4))),
    (sc.logsumexp, lambda r: r.standard_normal((3, 4))),
]


@pytest.mark.parametrize("f, make", BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_batched_frule_equals_row_by_row(f, make):
    rng = rng_for("special-batch", f.__name__)
    x = make(rng)
    assert cr.frule.lookup(f, (x,)).batched
    dx = rng.standard_normal((5,) + x.shape)
    kwargs = {"axis": 1} if f in (sc.softmax, sc.log_softmax, sc.logsumexp) else {}
    y, dy = cr.frule((cr.NoTangent(), dx), f, x, **kwargs)
    for i in range(5):
        np.testing.assert_allclose(dy[i], cr.frule((cr.NoTangent(), dx[i]), f, x, **kwargs)[1], rtol=1e-12)


@pytest.mark.parametrize("f", [sc.xlogy, sc.xlog1py, sc.betaln, sc.polygamma], ids=lambda f: f.__name__)
def test_batched_binary_frule_with_broadcasting(f):
    rng = rng_for("special-batch2", f.__name__)
    a, b = rng.uniform(0.5, 3.0, (4,)), rng.uniform(0.5, 3.0, (3, 4))
    if f is sc.polygamma:
        a = np.array(1)
    da = cr.NoTangent() if f is sc.polygamma else rng.standard_normal((2, 4))
    db = rng.standard_normal((2, 3, 4))
    y, dy = cr.frule((cr.NoTangent(), da, db), f, a, b)
    for i in range(2):
        row = (cr.NoTangent(), da if f is sc.polygamma else da[i], db[i])
        np.testing.assert_allclose(dy[i], cr.frule(row, f, a, b)[1], rtol=1e-12)


def _through_special(x):
    return (
        sc.logsumexp(x)
        + np.sum(sc.expit(x) * sc.log_expit(-x))
        + np.sum(sc.gammaln(x + 2.0) + sc.digamma(x + 2.0) + sc.erf(x))
        + np.sum(sc.softmax(x) * sc.xlogy(x + 2.0, x + 3.0))
    )


def test_hessian_through_the_rules():
    # forward over reverse: the pullbacks run on dual numbers; digamma's partial goes through zeta
    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-6
    hess = cr.hessian(_through_special, x)
    fd = np.stack(
        [
            (cr.gradient(_through_special, x + eps * e)[0] - cr.gradient(_through_special, x - eps * e)[0]) / (2 * eps)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(hess, fd, rtol=1e-5, atol=1e-7)


def test_zeta_differentiates_in_q():
    q = np.array([1.5, 2.0, 3.5])
    test_rrule(sc.zeta, nondiff(3), q)
    test_frule(sc.zeta, nondiff(2.0), q)
    # a non-integer order is held constant (test_special_more's PARAMETERS); differentiated, it is refused
    with pytest.raises(cr.NoDerivativeError, match=r"zeta at .*test_special\.py:\d+: the derivative in s has no"):
        cr.gradient(lambda s: np.sum(sc.zeta(s, q)), 2.5)
    # an integer-valued float order is a real order too: refused where differentiated, not a zero
    with pytest.raises(cr.NoDerivativeError, match="the derivative in s has no"):
        cr.gradient(lambda s: np.sum(sc.zeta(s, q)), 3.0)
    with pytest.raises(cr.ChainRulesError, match="zeta"):  # (the tape may refuse the wrapper of the ufunc first)
        cr.gradient(lambda s: np.sum(sc.zeta(s, q)), 3.0, engine="tape")
    with pytest.raises(cr.ChainRulesError, match="the derivative in s has no"):
        cr.derivative(lambda s: np.sum(sc.zeta(s, q)), 3.0)
    assert cr.gradient(lambda q: np.sum(sc.zeta(3.0, q)), q)[0] == pytest.approx(-3.0 * sc.zeta(4.0, q))


def _fd_hessian(f, x, eps=1e-6):
    steps = np.eye(x.size).reshape((x.size,) + x.shape) * eps
    return np.stack([(cr.gradient(f, x + e)[0] - cr.gradient(f, x - e)[0]).ravel() / (2 * eps) for e in steps], -1)


@pytest.mark.parametrize(
    "name, f",
    [
        # logsumexp's pullback receives a dual cotangent, and broadcasts a against b on duals
        ("logsumexp axis", lambda x: np.sum(sc.logsumexp(x, axis=1) ** 2)),
        ("logsumexp b", lambda x: np.sum(sc.logsumexp(x, 1, np.array([0.5, 1.0, 2.0])) ** 2)),
        # the derivatives of i1 and i1e are built from ufuncs that have rules
        ("i1", lambda x: np.sum(sc.i1(x) ** 2)),
        ("i1e", lambda x: np.sum(sc.i1e(x) ** 2)),
    ],
    ids=lambda v: v.replace(" ", "-") if isinstance(v, str) else "-",
)
def test_hessians(name, f):
    x = rng_for("hessian", name).standard_normal((2, 3))
    hess = np.asarray(cr.hessian(f, x)).reshape(x.size, x.size)
    np.testing.assert_allclose(hess, _fd_hessian(f, x), rtol=1e-5, atol=1e-6)


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


@pytest.mark.parametrize(
    "a, kwargs",
    [
        (np.array(0.3), {"keepdims": True}),  # SciPy keeps a number's dimensions as one axis
        (np.array(0.3), {"keepdims": True, "b": np.array(2.0)}),
        (np.array(0.3 + 0.2j), {"keepdims": True}),
        (np.array([0.1, 0.2, 0.3], np.float32), {"b": np.array([1.0, 2.0, 3.0])}),  # in float64, as SciPy
    ],
)
def test_logsumexp_primal_is_scipys(a, kwargs, batched_pullback):
    y, expected = cr.rrule(sc.logsumexp, a, **kwargs)[0], sc.logsumexp(a, **kwargs)
    assert type(y) is type(expected) and np.shape(y) == np.shape(expected) and y.dtype == expected.dtype
    np.testing.assert_allclose(y, expected, rtol=1e-15)
    test_rrule(sc.logsumexp, a, fkwargs=kwargs, rtol=1e-3, atol=1e-3)
    test_frule(sc.logsumexp, a, fkwargs=kwargs, rtol=1e-3, atol=1e-3)
    batched_pullback(sc.logsumexp, a, kwargs=kwargs, rtol=1e-6)


@pytest.mark.parametrize(
    "a, kwargs",
    [
        (np.zeros((1, 2, 0), np.float32), {"axis": -2, "keepdims": True}),  # an empty output stays float32
        (np.zeros(0), {"return_sign": True}),  # the empty sum: -inf, and SciPy's sign -1
        (np.zeros((2, 0)), {"axis": 1, "return_sign": True}),
    ],
)
def test_logsumexp_of_an_empty_sum_is_scipys(a, kwargs):
    for y in (
        cr.rrule(sc.logsumexp, a, **kwargs)[0],
        cr.frule((cr.NoTangent(), np.ones_like(a)), sc.logsumexp, a, **kwargs)[0],
    ):
        expected = sc.logsumexp(a, **kwargs)
        for got, want in zip(y, expected) if kwargs.get("return_sign") else [(y, expected)]:
            assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_digamma_of_a_complex_number_is_refused_by_name():
    for rule in (lambda z: cr.rrule(sc.psi, z), lambda z: cr.frule((cr.NoTangent(), 1.0), sc.psi, z)):
        with pytest.raises(TypeError, match=r"scipy\.special\.digamma \(psi\).*real arguments only"):
            rule(1.0 + 1.0j)


# ----- a partial that is a number: the tangent still has the output's shape -------------------

QUANTILE_POINTS = {"three": np.array([0.15, 0.45, 0.8]), "empty": np.zeros(0), "scalar": 0.3}


@pytest.mark.parametrize("method", ["ppf", "isf"])
@pytest.mark.parametrize("q", QUANTILE_POINTS.values(), ids=QUANTILE_POINTS.keys())
def test_quantile_tangent_in_loc_alone_has_the_outputs_shape(method, q):
    """The quantiles' partial in loc is the number 1: with loc alone perturbed, the elementwise
    forward rule had returned the tangent 1.0 for an output of shape (3,) or (0,)."""
    import scipy.stats as st
    from scipy.stats._distn_infrastructure import rv_continuous

    f = getattr(rv_continuous, method)
    scale = np.full(np.shape(q), 1.4)
    y, dy = cr.frule(
        (cr.NoTangent(), cr.NoTangent(), cr.ZeroTangent(), 1.0, cr.ZeroTangent()), f, st.uniform, q, -0.63, scale
    )
    assert np.shape(dy) == np.shape(y)
    test_frule(f, nondiff(st.uniform), nondiff(q), -0.63, nondiff(scale))  # loc's tangent alone
    test_rrule(f, nondiff(st.uniform), q, -0.63, scale)

    # (the method written out: the tape engine refuses a method with a rule, by design)
    g = {
        "ppf": lambda loc: st.uniform.ppf(q, loc=loc, scale=scale),
        "isf": lambda loc: st.uniform.isf(q, loc=loc, scale=scale),
    }[method]
    want = cr.testing.fd_jacobian(g, -0.63).reshape(np.shape(y))
    np.testing.assert_allclose(cr.jacobian(g, -0.63, mode="forward"), want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cr.jacobian(g, -0.63, engine="source"), want, rtol=1e-8, atol=1e-10)
    grad = cr.gradient(lambda loc: np.sum(g(loc)), -0.63)[0]
    np.testing.assert_allclose(
        grad, cr.testing.fd_jacobian(lambda loc: np.sum(g(loc)), -0.63)[0, 0], rtol=1e-8, atol=1e-10
    )


LOGSUMEXP_OF_LISTS = {
    "a list": lambda x: sc.logsumexp([x[0], x[1]]),
    "b a list, by keyword": lambda x: sc.logsumexp([0.5, 1.0], b=[x[0], x[1] ** 2]),
    "return_sign": lambda x: sc.logsumexp([x[0], 1.0], b=[x[1], -2.0], return_sign=True)[0],
}


@pytest.mark.parametrize("name", LOGSUMEXP_OF_LISTS)
def test_logsumexp_of_lists_in_every_engine(name):
    """Forward mode gives a list holding dual numbers to logsumexp's forward rule as an array (its
    reverse rule had met the dual numbers inside the list and converted them); the tape refuses the
    call of a ruled function inside the function it is given, at the user's line."""
    f = LOGSUMEXP_OF_LISTS[name]
    x = np.array([0.3, 1.7])
    expected = fd_jacobian(f, x)[0]
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-6)
    np.testing.assert_allclose(cr.jvp(f, (x,), (np.array([1.0, -0.5]),))[1], expected @ [1.0, -0.5], rtol=1e-6)
    with pytest.raises(IgnoredRuleError, match=rf"logsumexp has a rule .* called at {re.escape(__file__)}:\d+"):
        cr.gradient(f, x, engine="tape")


def test_logsumexp_rules_take_lists():
    test_frule(sc.logsumexp, [0.3, 1.7, -0.2])
    test_frule(sc.logsumexp, np.array([0.3, 1.7]), nondiff(None), [1.0, 2.5])
    test_frule(sc.logsumexp, [0.3, 1.0], nondiff(None), [1.5, -2.0], fkwargs={"return_sign": True})
