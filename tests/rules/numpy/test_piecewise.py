"""``np.piecewise``: its rules against finite differences (test_rrule, test_frule), through every
engine, and in forward mode and Hessians with callables that have no rules of their own."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([-1.0, 0.5, 2.0, 0.3, -0.2])


def test_rrule_callables_constants_and_an_otherwise_piece():
    crt.test_rrule(np.piecewise, X, [X < 0, X > 1], [lambda v: v**2, np.sin, 0.5])


def test_rrule_overlapping_conditions_keep_the_last_piece():
    # X > -0.5 and X > 0 overlap: NumPy writes the pieces in order, so the second wins there
    crt.test_rrule(np.piecewise, X, [X > -0.5, X > 0], [np.exp, lambda v: v**3])


def test_rrule_extra_arguments_get_their_cotangents():
    crt.test_rrule(np.piecewise, X, [X < 0, X >= 0], [lambda v, a: a * v**2, lambda v, a: np.sin(a * v)], 1.3)


def test_rrule_of_a_zero_dimensional_input():
    crt.test_rrule(np.piecewise, np.array(0.7), [np.array(True)], [np.tanh, 2.0])


def test_rules_of_a_list_input():
    # NumPy takes the list as an array; its cotangent is structural (Tangent[list]), as a list's is elsewhere
    xs, conds = [-1.0, 0.5, 2.0], [np.array([True, False, False])]
    crt.test_rrule(np.piecewise, xs, conds, [lambda v: v**2, np.sin])
    crt.test_frule(np.piecewise, xs, conds, [lambda v: v**2, np.sin])


def test_frule_through_the_callables_frules():
    crt.test_frule(np.piecewise, X, [X < 0, X > 1], [np.exp, np.sin, 0.5])
    crt.test_frule(np.piecewise, X, [X < 0], [np.cos, np.tanh])


def cubic(v, a=1.0):
    return a * v**3


def test_frule_pushes_callables_without_frules_by_the_forward_engine():
    crt.test_frule(np.piecewise, X, [X < 0, X > 1], [lambda v: v**2, cubic, 0.5])
    crt.test_frule(np.piecewise, X, [X < 0, X >= 0], [lambda v, a: a * v**2, lambda v, a: np.sin(a * v)], 1.3)
    crt.test_frule(np.piecewise, X, [X < 0], [cubic, lambda v, a: np.tanh(a * v)], fkwargs={"a": 0.7})


def test_frule_via_ad_refuses_outside_a_forward_differentiation():
    with pytest.raises(cr.ChainRulesError, match="no forward-mode engine is running"):
        cr.frule((cr.NoTangent(), np.ones_like(X), cr.NoTangent(), cr.NoTangent()), np.piecewise, X, [X < 0], [cubic])


def lambdas(x):  # (a plain cotangent reaches the pullback, and the callables' cotangents are duals in a Hessian)
    return np.sum(np.piecewise(x, [x < 0, x > 1], [lambda v: -(v**2), cubic, 0.25]))


@pytest.mark.parametrize("f", [lambdas, lambda x: np.piecewise(x, [x < 0], [lambda v: v * v, np.sin]) * x])
def test_forward_mode_with_callables_without_frules(f):
    J = cr.jacobian(f, X, mode="forward")
    np.testing.assert_allclose(J, crt.fd_jacobian(f, X).reshape(np.shape(J)), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(J, cr.jacobian(f, X, mode="reverse", engine="tape"), rtol=1e-12)
    d = cr.derivative(lambda t: f(X * t), 1.3)
    np.testing.assert_allclose(d, crt.fd_jacobian(lambda t: f(X * t), 1.3).reshape(np.shape(d)), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessians_with_callables_without_frules(engine):
    for _ in range(2):  # (the second call runs the source engine's cached code)
        H = cr.hessian(lambdas, X, engine=engine)
        np.testing.assert_allclose(H, crt.fd_jacobian(lambda z: cr.gradient(lambdas, z)[0], X), rtol=1e-6, atol=1e-8)


def ramp(x):
    return np.sum(np.piecewise(x, [x < 0, x > 1], [lambda v: -(v**2), np.sin, 0.25]) * x)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_engines_match_finite_differences_and_each_other(engine):
    g = cr.gradient(ramp, X, engine=engine)[0]
    np.testing.assert_allclose(g, crt.fd_jacobian(ramp, X).ravel(), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        cr.hessian(ramp, X, engine=engine),
        crt.fd_jacobian(lambda z: cr.gradient(ramp, z, engine="source")[0], X),
        rtol=1e-6,
        atol=1e-8,
    )


def test_forward_mode_matches_reverse_mode_with_ruled_callables():
    def f(x):
        return np.piecewise(x, [x < 0, x > 1], [np.exp, np.sin, 0.25]) * x

    np.testing.assert_allclose(
        cr.jacobian(f, X, mode="forward"), cr.jacobian(f, X, mode="reverse", engine="tape"), rtol=1e-12
    )
    np.testing.assert_allclose(cr.jacobian(f, X, mode="forward"), crt.fd_jacobian(f, X), rtol=1e-7, atol=1e-9)


def test_a_closure_over_a_differentiated_value_passes_its_tangent():
    def f(w):
        return np.sum(np.piecewise(X, [X < 0], [lambda v: w * v, lambda v: w * w + v]))

    assert cr.gradient(f, 1.5)[0] == pytest.approx(crt.fd_jacobian(f, 1.5).item())


def test_float32_keeps_its_dtype_in_both_modes():
    x = X.astype(np.float32)
    y, dy = cr.frule(
        (cr.NoTangent(), np.ones_like(x), cr.NoTangent(), cr.NoTangent()), np.piecewise, x, [x < 0], [np.sin, np.cos]
    )
    assert y.dtype == dy.dtype == np.float32

    def f(x):
        return np.piecewise(x, [x < 0], [np.sin, np.cos])

    J_forward, J_reverse = cr.jacobian(f, x, mode="forward"), cr.jacobian(f, x, mode="reverse")
    assert J_forward.dtype == J_reverse.dtype == np.float32
    np.testing.assert_allclose(J_forward, J_reverse, rtol=1e-6)


def test_forward_mode_and_hessians_with_a_closure_over_a_differentiated_value():
    def f(p):
        x, w = p[:-1], p[-1]
        return np.piecewise(x, [x < 0], [lambda v: w * v**2, lambda v: np.sin(w * v)])

    P = np.append(X, 1.3)
    np.testing.assert_allclose(cr.jacobian(f, P, mode="forward"), crt.fd_jacobian(f, P), rtol=1e-7, atol=1e-9)
    total = lambda p: np.sum(f(p))  # noqa: E731
    np.testing.assert_allclose(
        cr.hessian(total, P), crt.fd_jacobian(lambda z: cr.gradient(total, z)[0], P), rtol=1e-6, atol=1e-8
    )
