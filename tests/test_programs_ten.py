"""The tenth corpus (``programs_corpus_ten.py``) through every engine and mode, and nested
compositions of the API (a Jacobian of a gradient, a derivative of a derivative) compared across
engines and modes, with each other and with finite differences."""

from __future__ import annotations

import numpy as np
import program_checks as checks
import pytest
from programs_corpus_ten import PROGRAMS, rosenbrock

import chainrules as cr

BY_NAME = {p.name: p for p in PROGRAMS}
NAMES = checks.parameters(PROGRAMS)


def test_the_corpus_is_large_and_varied():
    assert len(PROGRAMS) >= 40
    assert sum(p.hessian for p in PROGRAMS) >= 15 and sum(p.nested for p in PROGRAMS) >= 10
    assert len(BY_NAME) == len(PROGRAMS)


@pytest.mark.parametrize("name", NAMES["all"])
def test_first_derivatives_match_finite_differences(name):
    checks.check_first_derivatives(BY_NAME[name])


@pytest.mark.parametrize("name", NAMES["second order"])
def test_second_derivatives_match_finite_differences(name):
    # the shared checks, and the Hessians against the finite differences of the forward derivative
    p = BY_NAME[name]
    checks.check_second_derivatives(p)
    if p.hessian:
        check_hessians_against_the_forward_derivative(p)


def check_hessians_against_the_forward_derivative(p):
    # a reference independent of the reverse engine: a gradient wrong in the same way as the
    # Hessian over it would pass check_hessian
    engines = [e for e in checks.REVERSE if e not in p.refuses and f"hessian-{e}" not in p.refuses]
    if not engines:
        return  # (their refusals are checked by check_hessian)
    f = checks.first_argument_function(p)
    x = p.args[0]
    reference = checks.crt.fd_jacobian(lambda z: np.reshape(cr.jacobian(f, z, mode="forward"), np.shape(z)), x)
    for engine in engines:
        H = cr.hessian(f, x, engine=engine)
        np.testing.assert_allclose(H, reference.reshape(np.shape(H)), rtol=1e-5, atol=1e-7, err_msg=engine)


# ----- nested compositions compared across engines and modes --------------------------------------


def wavy(z):
    return np.sum(np.sin(z) * z**2) + np.prod(z) + np.exp(z[0] * z[-1])


def logistic_nll(z):
    X = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8], [-0.6, 0.2, 0.4]])
    logits = X @ z
    return np.sum(np.logaddexp(0.0, logits) - np.array([1.0, 0.0, 1.0]) * logits) + 0.1 * np.sum(z**4)


SCALAR_FUNCTIONS = [
    (wavy, np.array([0.3, -0.5, 0.8])),
    (rosenbrock, np.array([0.9, 1.2, 0.8])),
    (logistic_nll, np.array([0.4, -0.2, 0.3])),
]
IDS = [f.__name__ for f, _ in SCALAR_FUNCTIONS]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("inner", checks.REVERSE)
@pytest.mark.parametrize("f, x", SCALAR_FUNCTIONS, ids=IDS)
def test_jacobian_of_a_gradient_is_the_hessian(f, x, inner, mode):
    H = cr.hessian(f, x)
    reference = checks.crt.fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(H.shape)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-8)
    J = cr.jacobian(lambda z: cr.gradient(f, z, engine=inner)[0], x, mode=mode)
    np.testing.assert_allclose(J, H, rtol=1e-10, atol=1e-12, err_msg=f"{inner} inside {mode}")
    if mode == "reverse":
        J_tape = cr.jacobian(lambda z: cr.gradient(f, z, engine=inner)[0], x, mode=mode, engine="tape")
        np.testing.assert_allclose(J_tape, H, rtol=1e-10, atol=1e-12, err_msg=f"{inner} inside the tape")


@pytest.mark.parametrize("f, x", SCALAR_FUNCTIONS, ids=IDS)
def test_hessians_agree_across_engines_and_with_a_forward_jacobian_of_a_forward_jacobian(f, x):
    H = cr.hessian(f, x)
    np.testing.assert_allclose(cr.hessian(f, x, engine="tape"), H, rtol=1e-10, atol=1e-12)
    forward_twice = cr.jacobian(lambda z: cr.jacobian(f, z, mode="forward"), x, mode="forward")
    np.testing.assert_allclose(forward_twice, H, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("inner", checks.REVERSE)
@pytest.mark.parametrize("outer", checks.REVERSE)
@pytest.mark.parametrize("f, x", SCALAR_FUNCTIONS, ids=IDS)
def test_reverse_over_reverse_hessian_vector_products(f, x, inner, outer):
    v = np.linspace(-1.0, 1.0, x.size)
    H = cr.hessian(f, x)
    hv = cr.gradient(lambda z: cr.gradient(f, z, engine=inner)[0] @ v, x, engine=outer)[0]
    np.testing.assert_allclose(hv, H @ v, rtol=1e-10, atol=1e-12, err_msg=f"{inner} inside {outer}")
    _, hv_forward = cr.jvp(lambda z: cr.gradient(f, z, engine=inner)[0], (x,), (v,))
    np.testing.assert_allclose(hv_forward, H @ v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, x", SCALAR_FUNCTIONS, ids=IDS)
def test_finite_differences_of_an_inner_gradient_match_the_hessian(f, x):
    # the testing API composed with the API: differences of a function that itself differentiates
    def gradient_norm(z):
        return np.sum(cr.gradient(f, z)[0] ** 2)

    reference = checks.crt.fd_jacobian(gradient_norm, x).reshape(x.shape)
    H = cr.hessian(f, x)
    np.testing.assert_allclose(2.0 * H @ cr.gradient(f, x)[0], reference, rtol=1e-6, atol=1e-8)
    for engine in checks.REVERSE:
        np.testing.assert_allclose(cr.gradient(gradient_norm, x, engine=engine)[0], reference, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("inner", ["derivative", "source", "tape"])
@pytest.mark.parametrize("outer", ["derivative", "source", "tape"])
def test_perturbation_confusion_in_every_pairing(inner, outer):
    def d(g, how):
        if how == "derivative":
            return lambda z: cr.derivative(g, z)
        return lambda z: cr.gradient(g, z, engine=how)[0]

    # D(x -> x * D(y -> x + y)(1))(1) == 1, and with x * y the inner derivative is x: 2 x
    assert d(lambda x: x * d(lambda y: x + y, inner)(1.0), outer)(1.0) == pytest.approx(1.0, abs=1e-14)
    assert d(lambda x: x * d(lambda y: x * y, inner)(1.0), outer)(1.5) == pytest.approx(3.0, rel=1e-14)


def test_third_derivatives_agree_across_nestings():
    def f(t):
        return np.sin(2.0 * t) * t**2

    x = 0.4
    by_derivatives = cr.derivative(lambda a: cr.derivative(lambda b: cr.derivative(f, b), a), x)
    by_gradients = cr.gradient(lambda a: cr.gradient(lambda b: cr.gradient(f, b, engine="tape")[0], a)[0], x)[0]
    by_hessian = cr.derivative(lambda a: cr.hessian(lambda z: f(z[0]), np.array([a]))[0, 0], x)
    d3 = -8 * np.cos(2 * x) * x**2 - 24 * np.sin(2 * x) * x + 12 * np.cos(2 * x)
    for got in (by_derivatives, by_gradients, by_hessian):
        assert got == pytest.approx(d3, rel=1e-12)
