"""Rules for Lambert W, the incomplete beta functions and their inverses, the hypergeometric
functions, the elliptic integrals, Airy's functions, the Fresnel, sine-cosine and hyperbolic
sine-cosine integrals, spence, poch, Struve's functions, exprel, Owen's T, rgamma and gammasgn:
finite differences in every differentiated argument, real and complex where SciPy takes complex,
at the edges (m = 0, z = 0, the poles of Gamma), gradients through the three engines, Hessians,
reverse Jacobians, and parameters without a closed-form derivative refused when differentiated."""

import math

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

R = np.random.default_rng(11)
UNIT = R.uniform(0.05, 0.95, 4)
REAL = np.array([-1.7, -0.4, 0.6, 2.3])
COMPLEX = R.uniform(0.3, 2.0, 3) + 1j * R.uniform(-1.0, 1.0, 3)
M = np.array([-2.0, -3e-4, 0.0, 5e-4, 0.4, 0.9])  # both sides of the series below |m| = 1e-3
PHI = np.array([0.3, 1.2, 2.5, 4.0, -0.7, 1.5])

# (f, args): parameters wrapped in nondiff are held constant (their cotangents, refused, are dropped)
CASES = [
    (sc.lambertw, (np.array([-0.3, 0.0, 0.5, 3.0]),)),
    (sc.lambertw, (np.array([-0.35, -0.1]), nondiff(-1))),  # the branch k = -1 on (-1/e, 0)
    (sc.lambertw, (COMPLEX,)),
    (sc.betainc, (nondiff(2.5), nondiff(1.5), UNIT)),
    (sc.betaincc, (nondiff(2), nondiff(3.5), UNIT)),  # an integer-typed parameter: NoTangent
    (sc.betaincinv, (nondiff(1.5), nondiff(0.5), UNIT)),
    (sc.betainccinv, (nondiff(0.7), nondiff(2.0), UNIT)),
    (sc.hyp2f1, (nondiff(1.5), nondiff(0.5), nondiff(2.5), np.array([-2.0, 0.3, 0.9]))),
    (sc.hyp2f1, (nondiff(1), nondiff(0.5), nondiff(1.5), COMPLEX / 3)),
    (sc.hyp1f1, (nondiff(0.5), nondiff(1.5), REAL)),
    (sc.hyp1f1, (nondiff(0.5), nondiff(1.5), COMPLEX)),
    (sc.hyperu, (nondiff(1.5), nondiff(0.5), UNIT * 3)),
    (sc.hyp0f1, (nondiff(1.5), REAL)),
    (sc.hyp0f1, (nondiff(2.5), COMPLEX)),
    (sc.ellipk, (M,)),
    (sc.ellipkm1, (np.array([0.05, 0.3, 0.9996, 1.0, 3.0]),)),
    (sc.ellipe, (M,)),
    (sc.ellipkinc, (PHI, M)),
    (sc.ellipeinc, (PHI, M)),
    (sc.ellipkinc, (PHI[:4].astype(np.float32), M[:4].astype(np.float32))),
    (sc.airy, (REAL,)),
    (sc.airy, (COMPLEX,)),
    (sc.fresnel, (REAL,)),
    (sc.fresnel, (COMPLEX,)),
    (sc.sici, (REAL,)),
    (sc.shichi, (REAL,)),
    (sc.shichi, (COMPLEX,)),
    (sc.spence, (np.array([0.1, 1.0, 1.00005, 3.0]),)),
    (sc.spence, (COMPLEX,)),
    (sc.poch, (np.array([0.5, 2.5, -0.5]), np.array([1.3, -0.4, 2.0]))),
    (sc.struve, (nondiff(1.5), UNIT * 5)),
    (sc.struve, (nondiff(2), REAL)),  # an integer order: negative x too
    (sc.modstruve, (nondiff(0.5), UNIT * 5)),
    (sc.exprel, (np.array([-3.0, -4e-3, 0.0, 0.02, 2.0]),)),
    (sc.owens_t, (REAL, np.array([0.5, -1.2, 3.0, 0.2]))),
    (sc.rgamma, (np.array([-2.0, -1.0, 0.0, -0.5, 0.3, 2.5]),)),
    (sc.rgamma, (COMPLEX,)),
    (sc.gammasgn, (np.array([-2.5, -0.5, 0.3, 2.5]),)),
]


def _holding_constant(f, *args):
    """``cr.rrule`` with the cotangents of floating parameters dropped, as an engine leaves those of
    constants unevaluated (evaluating them raises)."""
    y, back = cr.rrule(f, *args)

    def back_in_the_rest(dy):
        grads = list(back(dy))
        for i, a in enumerate(args, 1):
            if isinstance(grads[i], cr.Thunk):
                assert isinstance(a, float), (i, a)
                grads[i] = cr.NoTangent()
        return tuple(grads)

    back_in_the_rest.batched = cr.rrule.lookup(f, args).batched
    return y, back_in_the_rest


@pytest.mark.parametrize("f, args", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_rules_against_finite_differences(f, args):
    test_rrule(f, *args, rule=_holding_constant)
    test_frule(f, *args)


def test_values_at_the_edges():
    def slope(f, x, *rest):
        return cr.frule((cr.NoTangent(), 1.0, *(cr.NoTangent(),) * len(rest)), f, x, *rest)[1]

    assert slope(sc.lambertw, 0.0) == 1.0  # W' = 1 / ((1 + W) exp(W)), no 0 / 0 at z = 0
    np.testing.assert_allclose(slope(sc.ellipk, 0.0), math.pi / 8, rtol=1e-15)
    np.testing.assert_allclose(slope(sc.ellipe, 0.0), -math.pi / 8, rtol=1e-15)
    np.testing.assert_allclose(slope(sc.ellipkm1, 1.0), -math.pi / 8, rtol=1e-15)
    assert slope(sc.spence, 1.0) == -1.0
    assert slope(sc.exprel, 0.0) == 0.5
    # 1/Gamma at its zeros z = -n: (-1)^n n!
    np.testing.assert_allclose([slope(sc.rgamma, -n) for n in range(4)], [1, -1, 2, -6], rtol=1e-14)
    np.testing.assert_array_equal(slope(sc.sici, 0.0)[0], 1.0)  # Si' = sin z / z


def _lambertw_loss(x):
    return np.sum(np.real(sc.lambertw(x)) ** 2 + np.real(sc.lambertw(-x / 10 - 0.01, -1)))


def _beta_loss(x):
    return np.sum(
        sc.betainc(2.5, 1.5, x) ** 2
        + sc.betaincc(2, 3, x) * x
        + sc.betaincinv(1.5, 2.0, x)
        + sc.betainccinv(2.0, 1.5, x)
    )


def _hypergeometric_loss(x):
    return np.sum(sc.hyp2f1(1.5, 0.5, 2.5, x) ** 2 + sc.hyp1f1(0.5, 1.5, x) * x + sc.hyperu(1.5, 0.5, x + 1))


def _elliptic_loss(x):
    # x = 0: the series in m
    return np.sum(
        sc.ellipk(x) ** 2
        + sc.ellipe(x) * x
        + sc.ellipkm1(x + 0.5)
        + sc.ellipkinc(2 * x + 0.1, x) ** 2
        + sc.ellipeinc(x + 1, x / 2) * x
        + sc.hyp0f1(1.5, x)
    )


def _integrals_loss(x):
    ai, aip, bi, bip = sc.airy(x)
    s, c = sc.fresnel(x)
    si, ci = sc.sici(x)
    shi, chi = sc.shichi(x)
    return np.sum(ai * bip + aip * bi * x + s**2 + c + si * ci + chi * x + shi)


def _more_loss(x):
    # x = 1: spence at 1, exprel at 0, rgamma at its zero 0
    return np.sum(
        sc.spence(x) ** 2
        + sc.poch(x, x / 2 + 1)
        + sc.struve(1.5, x) * sc.modstruve(0.5, x)
        + sc.exprel(x - 1) ** 2
        + sc.owens_t(x, x * x)
        + sc.rgamma(x - 1) * x
        + sc.gammasgn(x - 1.5) * x
    )


LOSSES = [_lambertw_loss, _beta_loss, _hypergeometric_loss, _elliptic_loss, _integrals_loss, _more_loss]
POINTS = {_lambertw_loss: [0.2, 0.0, 2.0], _elliptic_loss: [0.2, 0.0, 0.8], _more_loss: [0.2, 1.0, 2.5]}
POINTS.update({_hypergeometric_loss: [0.2, -0.5, 0.8], _integrals_loss: [0.2, -0.5, 0.8]})


def _fd_gradient(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_engines_and_hessian(loss):
    x = np.array(POINTS.get(loss, [0.2, 0.5, 0.8]))
    fd = _fd_gradient(loss, x)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(loss, x, engine=engine)[0], fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(loss, x, mode="forward"), fd, rtol=1e-7, atol=1e-8)
    # the partials are functions with rules, so the pullbacks run on dual numbers: forward over reverse
    fd_hessian = np.stack([_fd_gradient(lambda x: cr.gradient(loss, x)[0][i], x, 1e-5) for i in range(3)])
    np.testing.assert_allclose(cr.hessian(loss, x), fd_hessian, rtol=1e-5, atol=1e-6)


def _vector(x):
    ai, aip, _, _ = sc.airy(x)
    return ai * sc.betainc(2.5, 1.5, x) + sc.ellipkinc(x, x) * aip + np.real(sc.lambertw(x)) + sc.fresnel(x)[1]


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_reverse_jacobian(engine):
    x = np.array([0.2, 0.5, 0.8])
    J = cr.jacobian(_vector, x, mode="reverse", engine=engine)
    np.testing.assert_allclose(J, fd_jacobian(_vector, x).reshape(3, 3), rtol=1e-7, atol=1e-9)


# (a function of the refused parameter, the function's name, the parameter)
REFUSED = [
    (lambda a: sc.betainc(a, 2.0, 0.3), "betainc", "a"),
    (lambda b: sc.betaincc(1.5, b, 0.3), "betaincc", "b"),
    (lambda a: sc.betaincinv(a, 2.0, 0.3), "betaincinv", "a"),
    (lambda b: sc.betainccinv(1.5, b, 0.3), "betainccinv", "b"),
    (lambda c: sc.hyp2f1(1.5, 0.5, c, 0.3), "hyp2f1", "c"),
    (lambda a: sc.hyp1f1(a, 0.5, 0.3), "hyp1f1", "a"),
    (lambda b: sc.hyperu(1.5, b, 0.3), "hyperu", "b"),
    (lambda v: sc.hyp0f1(v, 0.3), "hyp0f1", "v"),
    (lambda v: sc.struve(v, 0.3), "struve", "the order v"),
    (lambda v: sc.modstruve(v, 0.3), "modstruve", "the order v"),
]


@pytest.mark.parametrize("g, name, parameter", REFUSED, ids=[name for _, name, _ in REFUSED])
def test_a_differentiated_parameter_is_refused(g, name, parameter):
    message = rf"scipy\.special\.{name} at .*test_special_families\.py:\d+: the derivative in {parameter} has no"
    for engine in ("source", "tape"):
        with pytest.raises(cr.NoDerivativeError, match=message):
            cr.gradient(g, 1.5, engine=engine)
    with pytest.raises(cr.NoDerivativeError, match=message):
        cr.jacobian(g, 1.5, mode="forward")
