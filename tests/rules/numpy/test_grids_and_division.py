"""Rules for ``np.meshgrid`` (both indexings, sparse grids, one to three inputs), the spaced samples
``np.linspace``, ``np.logspace`` and ``np.geomspace`` (in their ends and logspace's base), and the
two-output ufuncs ``np.divmod``, ``np.modf`` and ``np.frexp``, which every engine refused with
``NoRuleError``: finite differences, both reverse engines, forward mode and Hessians through them."""

import numpy as np
import pytest
from _array_checks import Const, check_batched_frule
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


# ----- linspace, logspace, geomspace -----------------------------------------------------------

ND = crt.nondiff
S3, T3 = R.uniform(0.5, 2.0, 3), R.uniform(2.5, 4.0, 3)
SPACINGS = [
    (np.linspace, (0.3, 2.0, ND(5)), {}),
    (np.linspace, (0.3, 2.0), {"num": 4, "endpoint": False}),
    (np.linspace, (S3, T3, ND(4)), {"axis": -1}),
    (np.linspace, (S3.reshape(3, 1), T3[:2], ND(3)), {"axis": 1}),  # ends broadcast against each other
    (np.linspace, (S3, 1.5, ND(4)), {"axis": 1, "retstep": True}),
    (np.linspace, (0.3, 2.0, ND(5), ND(True), ND(True)), {}),  # retstep by position
    (np.linspace, (0.3, 2.0, ND(1)), {}),  # one sample: the start
    (np.linspace, (S3.astype(np.float32), T3.astype(np.float32), ND(3)), {}),
    (np.linspace, (0.3 + 1.0j, 2.0 - 0.5j, ND(4)), {}),
    (np.linspace, ([0.3, 1.0], 2.0, ND(4)), {}),  # a list end: a structural cotangent
    (np.logspace, (0.3, 1.2, ND(5)), {}),
    (np.logspace, (0.3, 1.2, ND(5)), {"base": 2.0}),  # the base by keyword: a setting
    (np.logspace, (S3, T3 / 3, ND(4), ND(True), 2.5), {"axis": -1}),  # the base by position: differentiated
    (np.logspace, (S3, 1.0, ND(4), ND(False), R.uniform(1.5, 3.0, (2, 3))), {"axis": 1}),  # a base per column
    (np.geomspace, (0.3, 2.0, ND(5)), {}),
    (np.geomspace, (-S3, -T3, ND(4)), {"axis": 1, "endpoint": False}),
    (np.geomspace, (1.0 + 1.0j, 2.0 - 3.0j, ND(4)), {}),  # a spiral: holomorphic in both ends
    (np.geomspace, (S3.astype(np.float32), 3.0, ND(4)), {}),
]


def _spacing_id(case):
    f, args, kwargs = case
    return f"{f.__name__}-" + "-".join(type(getattr(a, "value", a)).__name__ for a in args) + f"-{sorted(kwargs)}"


@pytest.mark.parametrize("case", SPACINGS, ids=_spacing_id)
def test_spaced_samples(case, batched_pullback):
    f, args, kwargs = case
    plain = [getattr(a, "value", a) for a in args]
    tol = {"rtol": 1e-3, "atol": 1e-3} if any(np.asarray(a).dtype == np.float32 for a in plain) else {}
    test_rrule(f, *args, fkwargs=kwargs, **tol)
    test_frule(f, *args, fkwargs=kwargs, **tol)
    batched_pullback(f, *plain, kwargs=kwargs, rtol=1e-6)
    check_batched_frule(f, *(Const(a.value) if hasattr(a, "value") else a for a in args), fkwargs=kwargs)


def test_spaced_samples_of_an_integer_dtype_have_zero_derivative():
    _, back = cr.rrule(np.linspace, 0.5, 7.5, 4, dtype=int)
    assert back(np.ones(4)) == (cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), 1.0, 1.0), np.geomspace, 1.0, 100.0, dtype=int)[1] == cr.ZeroTangent()


def test_linspace_pullback_weights_the_ends_by_position():
    # linspace(a, b, 5) = a + (b - a) [0, 1/4, 1/2, 3/4, 1]; the step (b - a) / 4
    (y, step), back = cr.rrule(np.linspace, 0.0, 1.0, 5, retstep=True)
    assert step == 0.25
    _, da, db, _ = back(cr.Tangent[tuple](np.array([1.0, 0.0, 0.0, 0.0, 10.0]), 4.0))
    assert (da, db) == (1.0 - 1.0, 10.0 + 1.0)


def spaced_energy(v):
    xs = np.linspace(v[0], v[1], 6)
    powers = np.logspace(v[0], v[2], 4, base=v[1])  # a differentiated base by keyword: passed by position
    ratios = np.geomspace(v[1], v[2] * 3.0, 5, endpoint=False)
    samples, step = np.linspace(v[:2], v[2], 3, axis=1, retstep=True)
    return (
        np.sum(np.sin(xs) * xs) + np.sum(powers**0.5) + np.sum(np.log(ratios) * ratios) + np.sum(samples**2) * step[0]
    )


def test_spaced_samples_through_every_engine_to_second_order():
    checks = crt.check_grads(spaced_energy, (np.array([0.3, 1.7, 2.2]),), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks) and any(c.startswith("forward") for c in checks)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_spaced_samples_gradients_and_forward_jacobians_agree(engine):
    v = np.array([0.3, 1.7, 2.2])
    gradient = cr.gradient(spaced_energy, v, engine=engine)[0]
    crt.assert_approx(gradient, crt.fd_jacobian(spaced_energy, v)[0], rtol=1e-6)
    crt.assert_approx(cr.jacobian(spaced_energy, v, mode="forward"), gradient, rtol=1e-12)


@pytest.mark.parametrize(
    "args",
    [(0.3, 2.2, 0.25), (0.3, 2.05), (1.5, 0.2, -0.3), (np.float32(0.5), 3.2, np.float32(0.5)), (0.5, 4, 1)],
    ids=["start-stop-step", "start-stop", "descending", "float32", "integer-stop-and-step"],
)
def test_arange_in_its_start_and_step(args, batched_pullback):
    tol = {"rtol": 1e-3, "atol": 1e-3} if any(np.asarray(a).dtype == np.float32 for a in args) else {}
    test_rrule(np.arange, *(a if np.asarray(a).dtype.kind == "f" else crt.nondiff(a) for a in args), **tol)
    test_frule(np.arange, *(a if np.asarray(a).dtype.kind == "f" else crt.nondiff(a) for a in args), **tol)
    batched_pullback(np.arange, *args, rtol=1e-6)


def test_arange_of_integers_has_no_derivative():
    _, back = cr.rrule(np.arange, 2, 9, 3)
    assert back(np.ones(3)) == (cr.NoTangent(),) * 4
    _, back = cr.rrule(np.arange, 4.0)  # a lone stop: where the samples end
    assert back(np.ones(4)) == (cr.NoTangent(), cr.ZeroTangent())


def sampled_ramp(v):
    t = np.arange(v[0], 3.0, v[1])  # 0.2 + k 0.33, k < 9: away from the jump at (3 - 0.2) / 0.33 = 8.48
    return np.sum(np.sin(t) * t**2)


def test_arange_through_the_source_engine_and_forward_mode_to_second_order():
    v = np.array([0.2, 0.33])
    checks = crt.check_grads(sampled_ramp, (v,), modes=("reverse",), order=2, engine="source")
    assert checks
    crt.assert_approx(cr.jacobian(sampled_ramp, v, mode="forward"), cr.gradient(sampled_ramp, v)[0], rtol=1e-12)
