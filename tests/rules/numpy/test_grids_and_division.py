"""Rules for ``np.meshgrid`` (both indexings, sparse grids, one to three inputs) and the two-output
ufuncs ``np.divmod``, ``np.modf`` and ``np.frexp``, which every engine refused with ``NoRuleError``: finite
differences, both reverse engines, forward mode and Hessians through them."""

import numpy as np
import pytest
from test_linalg import rng_for

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing import test_frule, test_rrule

R = rng_for("grids-and-division")
A, B, C = R.standard_normal(3), R.standard_normal(2), R.standard_normal(4)

MESHGRIDS = [
    ((A, B), {}),
    ((A, B), {"indexing": "ij"}),
    ((A, B, C), {}),
    ((A, B, C), {"indexing": "ij", "sparse": True}),
    ((A,), {}),
    ((A.reshape(3, 1), B), {"sparse": True}),
]


@pytest.mark.parametrize("args, kwargs", MESHGRIDS, ids=range(len(MESHGRIDS)))
def test_meshgrid(args, kwargs):
    test_rrule(np.meshgrid, *args, fkwargs=kwargs)
    test_frule(np.meshgrid, *args, fkwargs=kwargs)


@pytest.mark.parametrize("args", [(R.uniform(1, 5, 4), R.uniform(0.5, 2, 4)), (R.uniform(1, 5, 4), 1.5), (7.5, 2.0)])
def test_divmod(args):
    test_rrule(np.divmod, *args)
    test_frule(np.divmod, *args)


@pytest.mark.parametrize("x", [R.uniform(-5, 5, 4), 2.75])
def test_modf(x):
    test_rrule(np.modf, x)
    test_frule(np.modf, x)


@pytest.mark.parametrize("x", [R.uniform(-5, 5, 4), 2.75, R.uniform(0.1, 9.0, 3).astype(np.float32)])
def test_frexp(x):
    tol = {"rtol": 1e-3, "atol": 1e-3} if np.result_type(x) == np.float32 else {}
    test_rrule(np.frexp, x, **tol)
    test_frule(np.frexp, x, **tol)


def mantissa_energy(z):
    m, e = np.frexp(z * 3.0 + 0.1)
    return np.sum(m**2 * z) + np.sum(e * z)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_frexp_through_the_engines(engine):
    z = np.array([0.4, 1.7, -2.3])
    expected = crt.fd_jacobian(mantissa_energy, z)[0]
    crt.assert_approx(cr.gradient(mantissa_energy, z, engine=engine)[0], expected, rtol=1e-6)
    crt.assert_approx(cr.jacobian(mantissa_energy, z, mode="forward"), expected, rtol=1e-6)
    H = cr.hessian(mantissa_energy, z, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(mantissa_energy, v)[0], z), rtol=1e-5, atol=1e-7)


def field_energy(z):
    X, Y = np.meshgrid(z[:3], z[3:])
    q, r = np.divmod(X * 3.0 + 10.0, 1.37)
    frac, _ = np.modf(Y * 2.0 + 5.0)
    return np.sum(np.exp(-(X**2) - Y**2) * r) + np.sum(frac**2 * X)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_through_the_engines(engine):
    z = np.array([0.1, 0.4, -0.3, 0.25, -0.6])
    crt.assert_approx(cr.gradient(field_energy, z, engine=engine)[0], crt.fd_jacobian(field_energy, z)[0], rtol=1e-6)
    crt.assert_approx(cr.jacobian(field_energy, z, mode="forward"), crt.fd_jacobian(field_energy, z)[0], rtol=1e-6)
    H = cr.hessian(field_energy, z, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(field_energy, v)[0], z), rtol=1e-5, atol=1e-7)
