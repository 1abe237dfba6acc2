"""DESIGN.md's forward-mode entry points: ``cr.jvp``, ``cr.derivative``, ``cr.jacobian(mode="forward")``
and ``cr.hessian`` (forward over reverse), with the seeds' forward-mode examples."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from contract_support import each_engine, leaked_internal_types

import chainrules as cr


def ratio(a, b):
    return a / (a + b * b)


def test_jvp_takes_tuples_and_returns_the_value_and_its_tangent():
    y, dy = cr.jvp(ratio, (2.0, 3.0), (1.0, 0.0))
    assert y == ratio(2.0, 3.0)
    assert dy == pytest.approx(9.0 / 121.0, rel=1e-14)
    y, dy = cr.jvp(ratio, (2.0, 3.0), (0.5, 2.0))
    assert dy == pytest.approx(0.5 * 9.0 / 121.0 - 2.0 * 12.0 / 121.0, rel=1e-14)


def test_jvp_refuses_primals_or_tangents_that_are_not_tuples():
    with pytest.raises(TypeError, match="tuple"):
        cr.jvp(ratio, [2.0, 3.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        cr.jvp(ratio, (2.0, 3.0), (1.0,))


def test_jvp_on_arrays_and_structures():
    x = np.array([0.2, 0.4])
    y, dy = cr.jvp(np.sin, (x,), (np.array([1.0, 2.0]),))
    np.testing.assert_allclose(dy, np.cos(x) * [1.0, 2.0], rtol=1e-14)

    @dataclasses.dataclass
    class Scaled:
        k: float
        v: np.ndarray

    y, dy = cr.jvp(lambda s: s.k * np.sum(s.v), (Scaled(2.0, np.ones(2)),), (cr.Tangent[Scaled](k=1.0),))
    assert y == 4.0 and dy == 2.0
    assert leaked_internal_types(dy) == []


def test_jvp_with_a_zero_tangent_for_one_argument():
    assert cr.jvp(lambda a, b: a * b, (2.0, 3.0), (cr.ZeroTangent(), 1.0)) == (6.0, 2.0)


def test_derivative_of_an_integer_input_is_a_float():
    d = cr.derivative(lambda x: x**3, 2)
    assert d == 12.0 and isinstance(d, float)


def test_derivative_follows_the_complex_convention_for_holomorphic_functions():
    assert cr.derivative(lambda z: z * z, 1 + 2j) == pytest.approx(2 + 4j)


def babysqrt(x, t=None, n=10):
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


@pytest.mark.parametrize("x", np.linspace(0.1, 2.0, 7))
def test_seed_003_babysqrt_forward_derivative(x):
    assert cr.derivative(babysqrt, float(x)) == pytest.approx(1 / (2 * math.sqrt(x)), rel=1e-8)


def test_seed_003_nested_derivatives_do_not_confuse_perturbations():
    assert cr.derivative(lambda x: x * cr.derivative(lambda y: x + y, 1.0), 1.0) == 1.0


RNG = np.random.default_rng(7)


@pytest.mark.parametrize("N, M", [(3, 5), (5, 3), (4, 4)])
def test_seed_003_forward_jacobian_of_wx_plus_b_squared(N, M):
    W, b, x = RNG.standard_normal((N, M)), RNG.standard_normal(N), RNG.standard_normal(M)
    analytic = 2 * (W @ x + b)[:, None] * W

    def layer(x):
        return (W @ x + b) ** 2

    np.testing.assert_allclose(cr.jacobian(layer, x, mode="forward"), analytic, rtol=1e-12)
    np.testing.assert_allclose(cr.jacobian(layer, x), analytic, rtol=1e-12)  # auto, either mode


SHAPES = [
    ("matrix to matrix", lambda x: np.sin(x) * 2.0, np.ones((2, 3)), (2, 3, 2, 3)),
    ("matrix to scalar", lambda x: np.sum(x * x), np.ones((2, 3)), (2, 3)),
    ("scalar to vector", lambda x: x * np.array([1.0, 2.0, 3.0]), 2.0, (3,)),
    ("vector to matrix", lambda x: np.outer(x, x), np.array([1.0, 2.0]), (2, 2, 2)),
]


@pytest.mark.parametrize("name, f, x, shape", SHAPES, ids=[s[0] for s in SHAPES])
def test_forward_and_auto_jacobians_have_the_output_shape_then_the_input_shape(name, f, x, shape):
    J = cr.jacobian(f, x, mode="forward")
    assert np.shape(J) == shape
    np.testing.assert_allclose(J, cr.jacobian(f, x, mode="reverse", engine="tape"), rtol=1e-12)
    assert np.shape(cr.jacobian(f, x)) == shape


# doubled(x) = 2x has a forward rule only: forward mode can differentiate it, reverse mode cannot
# (its plain implementation runs when mode="auto" evaluates f to compare the sizes)
doubled = np.frompyfunc(lambda x: 2.0 * x, 1, 1)


@cr.frule.register(doubled)
def frule_doubled(tangents, x):
    return 2.0 * x, 2.0 * tangents[1]


def test_auto_mode_picks_forward_mode_for_fewer_inputs_than_outputs():
    x = np.array([1.0, 2.0])
    J = cr.jacobian(lambda x: np.concatenate([doubled(x), x]), x)  # 2 inputs, 4 outputs: forward
    np.testing.assert_array_equal(J, [[2.0, 0.0], [0.0, 2.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(cr.NoRuleError):  # 2 inputs, 1 output: reverse mode, which has no rule here
        cr.jacobian(lambda x: np.sum(doubled(x)), x, mode="reverse")
    # auto mode picks reverse mode there, and where it refuses f, takes forward mode
    np.testing.assert_array_equal(cr.jacobian(lambda x: np.sum(doubled(x)), x), [2.0, 2.0])


def test_forward_jacobian_keeps_float32():
    assert cr.jacobian(lambda x: x * x, np.ones(2, dtype=np.float32), mode="forward").dtype == np.float32


@each_engine
def test_hessian_is_forward_over_reverse(engine):
    H = cr.hessian(lambda x: np.sum(x**3), np.array([1.0, 2.0]), engine=engine)
    np.testing.assert_allclose(H, np.diag([6.0, 12.0]), rtol=1e-14)
    x = np.array([0.3, -0.7, 1.1])
    H = cr.hessian(lambda x: np.sum(np.sin(x) * x[0]), x, engine=engine)
    expected = np.diag(-np.sin(x) * x[0])
    expected[0, :] += np.cos(x)
    expected[:, 0] += np.cos(x)
    np.testing.assert_allclose(H, expected, rtol=1e-12, atol=1e-14)


def through_array_methods(x):
    return np.mean(x * x) + x.max() + x.prod() + x.dot(x) + (x**3).sum()


@each_engine
def test_hessian_through_array_methods(engine):
    x = np.array([1.0, 2.0])
    expected = np.array([[1.0, 1.0], [1.0, 1.0]]) + 2 * np.eye(2) + np.diag(6 * x)
    np.testing.assert_allclose(cr.hessian(through_array_methods, x, engine=engine), expected, rtol=1e-14)
