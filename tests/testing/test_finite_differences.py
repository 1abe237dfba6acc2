"""Finite-difference methods: exact coefficients, adaptive steps, accuracy, extrapolation, structured JVPs/VJPs."""

import dataclasses
import math
from collections import namedtuple
from fractions import Fraction

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import (
    backward_fdm,
    central_fdm,
    fd_jacobian,
    fd_jvp,
    fd_vjp,
    fdm_coefficients,
    forward_fdm,
)


def test_coefficients_are_exact_rationals():
    assert fdm_coefficients([-2, -1, 0, 1, 2], 1) == tuple(map(Fraction, ["1/12", "-2/3", "0", "2/3", "-1/12"]))
    assert fdm_coefficients([-1, 0, 1], 2) == (1, -2, 1)
    assert fdm_coefficients([0, 1], 1) == (-1, 1)
    assert fdm_coefficients([0, 1, 2], 1) == (Fraction(-3, 2), 2, Fraction(-1, 2))


def test_coefficients_reject_bad_grids():
    with pytest.raises(ValueError, match="repeated"):
        fdm_coefficients([0, 0, 1], 1)
    with pytest.raises(ValueError, match="order 0 to 2"):
        fdm_coefficients([-1, 0, 1], 3)
    with pytest.raises(ValueError, match="more than 3 points"):
        central_fdm(3, 3)


@pytest.mark.parametrize(
    "f, df, points",
    [
        (math.sin, math.cos, [-3.0, -0.7, 0.3, 1.0, 2.5]),
        (math.exp, math.exp, [-2.0, 0.0, 0.5, 1.0, 3.0]),
        (math.log, lambda x: 1 / x, [0.1, 0.5, 1.0, 2.0, 10.0]),
    ],
    ids=["sin", "exp", "log"],
)
def test_central_fdm_5_1_reaches_1e_10_relative(f, df, points):
    m = central_fdm(5, 1)
    for x in points:
        assert abs(m(f, x) - df(x)) <= 1e-10 * abs(df(x)), (f, x)


def test_the_default_testing_method_is_as_accurate_within_its_range():
    m = cr.testing.default_fdm()
    assert m.max_range == 1e-2
    for x in [0.3, 1.0, 2.0]:
        assert abs(m(math.log, x) - 1 / x) <= 1e-10 / x


def test_higher_derivatives():
    assert abs(central_fdm(7, 2)(math.sin, 0.8) + math.sin(0.8)) < 1e-8
    assert abs(central_fdm(7, 3)(math.exp, 0.5) - math.exp(0.5)) < 1e-5


def test_the_bound_estimator_is_two_points_wider_and_estimates_the_pth_derivative():
    m = central_fdm(5, 1)
    assert m.bound_estimator.grid == (-3, -2, -1, 0, 1, 2, 3)
    assert m.bound_estimator.q == 5 and m.bound_estimator.bound_estimator is None
    assert central_fdm(5, 1, adapt=2).bound_estimator.bound_estimator.grid == tuple(range(-4, 5))
    assert central_fdm(5, 1, adapt=0).bound_estimator is None


def test_the_adaptive_step_balances_round_off_and_truncation():
    m = central_fdm(5, 1)
    # A function with large higher derivatives needs a smaller step than a gentle one.
    steep = m.estimate_step(lambda x: math.sin(50 * x), 0.1)[0]
    gentle = m.estimate_step(math.sin, 0.1)[0]
    assert steep < gentle / 10
    # The error bound it reports is small and honest for sin.
    step, bound = m.estimate_step(math.sin, 1.0)
    assert bound < 1e-11 and abs(m(math.sin, 1.0, step) - math.cos(1.0)) <= 10 * bound


def test_the_step_is_clamped_by_max_range():
    step, bound = central_fdm(5, 1, adapt=0, max_range=1e-4).estimate_step(math.exp, 0.0)
    assert step == pytest.approx(1e-4 / 2) and math.isnan(bound)
    assert central_fdm(5, 1, adapt=0).estimate_step(math.exp, 0.0)[0] > 1e-4
    # the range keeps evaluations inside a narrow domain: log near 0 (the bound estimator is clamped too)
    with pytest.raises(ValueError, match="math domain"):
        central_fdm(5, 1, max_range=1e-2)(math.log, 0.004)
    assert abs(central_fdm(5, 1, max_range=1e-3)(math.log, 0.004) - 250.0) < 1e-10 * 250.0


def test_polynomials_of_low_degree_fall_back_to_the_default_step():
    m = central_fdm(5, 1)
    assert abs(m(lambda x: x * x, 3.0) - 6.0) < 1e-10
    assert abs(m(lambda x: 2.0, 1.0)) < 1e-10


def test_vector_valued_functions_are_differentiated_elementwise():
    m = central_fdm(5, 1)
    d = m(lambda x: np.array([math.sin(x), x**3]), 0.5)
    np.testing.assert_allclose(d, [math.cos(0.5), 0.75], rtol=1e-10)


def test_float32_round_off_gives_a_larger_step():
    m = central_fdm(5, 1)
    f32 = m.estimate_step(math.sin, 1.0, eps=np.finfo(np.float32).eps)[0]
    f64 = m.estimate_step(math.sin, 1.0)[0]
    assert f32 > 10 * f64
    estimate = m(lambda x: np.sin(np.float32(x)), 1.0, eps=np.finfo(np.float32).eps)
    assert abs(estimate - math.cos(1.0)) < 1e-4


def test_one_sided_methods_work_at_a_domain_boundary():
    x = 1e-3  # sqrt is undefined left of 0: a central method with range 1e-2 steps outside
    with pytest.raises(ValueError):
        central_fdm(5, 1, max_range=1e-2)(math.sqrt, x)
    exact = 0.5 / math.sqrt(x)
    assert abs(forward_fdm(5, 1, max_range=1e-3)(math.sqrt, x) - exact) < 1e-6 * exact
    assert abs(backward_fdm(5, 1, max_range=1e-3)(lambda t: math.sqrt(-t), -x) + exact) < 1e-6 * exact
    assert forward_fdm(3, 1).bound_estimator.grid == (0, 1, 2, 3, 4)
    assert backward_fdm(3, 1).bound_estimator.grid == (-4, -3, -2, -1, 0)


def test_error_powers_come_from_the_exact_moments():
    assert central_fdm(5, 1).error_powers[:3] == [4, 6, 8]
    assert central_fdm(3, 1).error_powers[:3] == [2, 4, 6]
    assert forward_fdm(3, 1).error_powers[:3] == [2, 3, 4]


def test_richardson_extrapolation():
    exact = math.cos(1.0)
    plain = central_fdm(3, 1)
    rich = central_fdm(3, 1, richardson=True, max_range=0.2)
    # a 3-point method at a large step is crude; extrapolating from that step recovers full precision
    assert abs(plain(math.sin, 1.0, 0.1) - exact) > 1e-4
    assert abs(rich(math.sin, 1.0) - exact) < 1e-12
    value, error = central_fdm(5, 1).extrapolate(math.exp, 1.0, initial_step=0.1)
    assert abs(value - math.e) < 1e-12 and error < 1e-9
    assert "richardson=True" in repr(rich)


# ----- structured JVPs and VJPs ----------------------------------------------------------------


@dataclasses.dataclass
class Affine:
    w: np.ndarray
    b: float
    name: str = "layer"


Pair = namedtuple("Pair", ["a", "b"])


def test_fd_jvp_of_scalars_and_tuples():
    assert fd_jvp(math.sin, 0.3, 2.0) == pytest.approx(2 * math.cos(0.3), rel=1e-10)
    assert fd_jvp(lambda a: a[0] * a[1], (2.0, 3.0), (1.0, 0.5)) == pytest.approx(3.0 + 1.0, rel=1e-10)
    assert fd_jvp(lambda a: a[0] * a[1], (2.0, 3.0), cr.Tangent[tuple](1.0, cr.ZeroTangent())) == pytest.approx(3.0)


def test_fd_jvp_returns_a_tangent_of_the_output():
    out = fd_jvp(lambda x: Pair(np.sin(x), 2 * x), np.array([0.1, 0.2]), np.ones(2))
    assert isinstance(out, cr.Tangent[Pair])
    np.testing.assert_allclose(out.a, np.cos([0.1, 0.2]), rtol=1e-10)
    np.testing.assert_allclose(out.b, [2.0, 2.0], rtol=1e-10)
    # float32 outputs keep their dtype
    out32 = fd_jvp(lambda x: x * 3, np.ones(2, np.float32), np.ones(2, np.float32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, 3.0, rtol=1e-4)


def test_fd_jvp_with_a_zero_direction_or_integer_output_costs_nothing():
    calls = []

    def f(x):
        calls.append(x)
        return x * 2

    assert fd_jvp(f, 1.0, cr.ZeroTangent()) == 0.0 and len(calls) == 1
    assert fd_jvp(lambda x: round(x), 1.2, 1.0) == cr.NoTangent()


def test_fd_vjp_of_a_dataclass_is_a_structural_tangent():
    layer = Affine(np.array([1.0, 2.0]), 0.5)

    def f(m):
        return float(np.sum(m.w**2)) + 3 * m.b

    g = fd_vjp(f, 1.0, layer)
    assert isinstance(g, cr.Tangent[Affine])
    np.testing.assert_allclose(g.w, [2.0, 4.0], rtol=1e-10)
    assert g.b == pytest.approx(3.0, rel=1e-10)
    assert g.name == cr.NoTangent()
    assert layer.w.tolist() == [1.0, 2.0]  # the primal is untouched


def test_fd_vjp_of_several_arguments_via_a_tuple():
    g = fd_vjp(lambda a: a[0] * a[1] + a[2], 2.0, (3.0, 4.0, 5))
    assert isinstance(g, cr.Tangent[tuple])
    assert g[0] == pytest.approx(8.0) and g[1] == pytest.approx(6.0) and g[2] == cr.NoTangent()


def test_fd_vjp_follows_the_complex_convention():
    # the gradient of a real f(z) is df/dx + i df/dy: |z|^2 at 1+2j gives 2+4j
    g = fd_vjp(lambda z: abs(z) ** 2, 1.0, 1 + 2j)
    assert g == pytest.approx(2 + 4j, rel=1e-10)
    # a holomorphic function pulls back by the conjugate derivative: conj(f'(z)) dy
    z = 0.3 - 0.4j
    assert fd_vjp(np.exp, 1.0 + 0.5j, z) == pytest.approx(np.conj(np.exp(z)) * (1.0 + 0.5j), rel=1e-9)


def test_fd_vjp_with_dict_and_list_inputs():
    g = fd_vjp(lambda d: d["x"] * d["y"][0], 2.0, {"x": 3.0, "y": [4.0, 1.0]})
    assert isinstance(g, cr.Tangent[dict])
    assert g["x"] == pytest.approx(8.0)
    assert isinstance(g["y"], cr.Tangent[list]) and g["y"][0] == pytest.approx(6.0) and g["y"][1] == 0.0


def test_fd_jacobian_layout():
    J = fd_jacobian(lambda v: np.array([v[0] * v[1], v[1] ** 2, 1.0]), np.array([2.0, 3.0]))
    np.testing.assert_allclose(J, [[3.0, 2.0], [0.0, 6.0], [0.0, 0.0]], rtol=1e-10, atol=1e-12)


def test_fd_perturb_ints_on_request():
    assert fd_vjp(lambda n: n * 2.5, 1.0, 3) == cr.NoTangent()
    assert fd_vjp(lambda n: n * 2.5, 1.0, 3, perturb_ints=True) == pytest.approx(2.5)


def test_integers_inside_structures_are_not_perturbed_unless_asked_as_at_the_top():
    seen = []

    def f(a):  # the integers reach f as they were given
        seen.append(type(a[1]))
        return a[0] * a[1] + a[2]["k"] * a[3].w

    x = (2.0, 3, {"k": np.int64(4)}, _Weights(w=5, b=True))
    g = fd_vjp(f, 1.0, x)
    assert set(seen) == {int}
    assert g[0] == pytest.approx(3.0) and g[1] == cr.NoTangent() and g[2] == cr.NoTangent()  # all carried
    assert g[3] == cr.NoTangent()  # nothing of it is perturbed
    assert fd_jvp(f, x, (1.0, cr.NoTangent(), cr.NoTangent(), cr.NoTangent())) == pytest.approx(3.0)

    seen.clear()
    g = fd_vjp(f, 1.0, x, perturb_ints=True)  # every integer, at every depth, as at the top
    assert set(seen) == {float}
    assert g[1] == pytest.approx(2.0) and g[1] == pytest.approx(fd_vjp(lambda n: 2.0 * n, 1.0, 3, perturb_ints=True))
    assert g[2]["k"] == pytest.approx(5.0) and g[3].w == pytest.approx(4.0)
    assert g[3].b == cr.NoTangent()  # booleans never
    assert fd_jvp(f, x, (0.0, 1.0, {"k": 1.0}, cr.Tangent[_Weights](w=1.0)), perturb_ints=True) == pytest.approx(11.0)
    v, from_vec = cr.testing.to_vec(x, perturb_ints=True)
    assert v.tolist() == [2.0, 3.0, 4.0, 5.0] and from_vec(v)[1] == 3.0
    assert cr.testing.to_vec(x)[0].tolist() == [2.0]


@dataclasses.dataclass
class _Weights:
    w: int
    b: bool


def test_a_change_of_output_structure_is_an_error():
    with pytest.raises(ValueError, match="changed structure"):
        fd_jvp(lambda x: [x] if x == 1.0 else [x, x], 1.0, 1.0)
