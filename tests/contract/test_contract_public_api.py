"""DESIGN.md, "Public API": every name of the listing exists and does what its line says."""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np
import pytest
from contract_support import REVERSE_ENGINES, each_engine

import chainrules as cr
import chainrules.testing as crt


def ratio(a, b):
    return a / (a + b * b)


def test_every_public_name_exists():
    differentiate = ["pullback", "gradient", "value_and_gradient", "jvp", "derivative", "jacobian", "hessian", "show"]
    rules = ["rrule", "frule", "scalar_rule", "non_differentiable", "opt_out", "rrule_via_ad"]
    tangents = ["NoTangent", "ZeroTangent", "Tangent", "Thunk", "InplaceableThunk", "unthunk", "add", "iadd"]
    tangents.append("ProjectTo")
    for name in differentiate + rules + tangents:
        assert callable(getattr(cr, name)), name
    assert callable(cr.rrule.register) and callable(cr.frule.register)
    for name in ["test_rrule", "test_frule", "check_grads", "central_fdm"]:
        assert callable(getattr(cr.testing, name)), name
    assert issubclass(cr.NoRuleError, Exception) and issubclass(cr.UnsupportedSyntaxError, Exception)


# ----- differentiate -----------------------------------------------------------------------


@each_engine
def test_pullback_returns_value_and_a_back_function_with_one_cotangent_per_positional_argument(engine):
    y, back = cr.pullback(ratio, 2.0, 3.0, engine=engine)
    assert y == ratio(2.0, 3.0)
    grads = back(1.0)
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(grads, (9.0 / 121.0, -12.0 / 121.0), rtol=1e-12)


def scaled_sum(x, scale=1.0):
    return (x * scale).sum()


@each_engine
def test_pullback_passes_keyword_arguments_to_f(engine):
    y, back = cr.pullback(scaled_sum, np.array([1.0, 2.0]), engine=engine, scale=3.0)
    assert y == 9.0
    (dx,) = back(1.0)
    np.testing.assert_array_equal(dx, [3.0, 3.0])


@each_engine
def test_gradient_returns_one_gradient_per_positional_argument(engine):
    grads = cr.gradient(ratio, 2.0, 3.0, engine=engine)
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(grads, (9.0 / 121.0, -12.0 / 121.0), rtol=1e-12)


@each_engine
def test_value_and_gradient_returns_the_value_and_the_gradient_tuple(engine):
    y, grads = cr.value_and_gradient(ratio, 2.0, 3.0, engine=engine)
    assert y == ratio(2.0, 3.0)
    np.testing.assert_allclose(grads, cr.gradient(ratio, 2.0, 3.0, engine=engine), rtol=1e-15)


W = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])


def affine_square(x):
    return (W @ x + 1.0) ** 2


@each_engine
def test_jacobian_in_reverse_mode_is_the_analytic_jacobian(engine):
    x = np.array([0.5, -1.0, 2.0])
    J = cr.jacobian(affine_square, x, mode="reverse", engine=engine)
    np.testing.assert_allclose(J, 2 * (W @ x + 1.0)[:, None] * W, rtol=1e-12)


@each_engine
def test_jacobian_auto_mode_uses_reverse_mode_when_the_output_is_not_larger(engine):
    x = np.array([0.5, -1.0, 2.0])  # 3 inputs, 2 outputs: reverse mode
    np.testing.assert_array_equal(
        cr.jacobian(affine_square, x, engine=engine), cr.jacobian(affine_square, x, mode="reverse", engine=engine)
    )


def test_jacobian_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        cr.jacobian(affine_square, np.ones(3), mode="sideways")


@pytest.mark.parametrize("entry", ["pullback", "gradient", "value_and_gradient"])
def test_an_unknown_engine_is_refused_by_name(entry):
    with pytest.raises(ValueError, match="no-such-engine"):
        getattr(cr, entry)(ratio, 2.0, 3.0, engine="no-such-engine")


def test_jacobian_refuses_an_unknown_engine_by_name():
    with pytest.raises(ValueError, match="no-such-engine"):
        cr.jacobian(affine_square, np.ones(3), mode="reverse", engine="no-such-engine")


# ----- rules -------------------------------------------------------------------------------


def test_rrule_returns_the_value_and_a_pullback_with_the_tangent_of_f_first():
    y, pullback = cr.rrule(math.sin, 0.5)
    assert y == math.sin(0.5)
    df, dx = pullback(2.0)
    assert df == cr.NoTangent()
    assert dx == pytest.approx(2.0 * math.cos(0.5), rel=1e-15)


def test_rrule_and_frule_return_none_without_a_rule():
    def no_rule_here(x):
        return x

    assert cr.rrule(no_rule_here, 1.0) is None
    assert cr.frule((cr.NoTangent(), 1.0), no_rule_here, 1.0) is None


def test_frule_takes_the_tangents_first_with_the_tangent_of_f_leading():
    y, dy = cr.frule((cr.NoTangent(), 2.0, 5.0), operator.mul, 3.0, 4.0)
    assert y == 12.0
    assert dy == 2.0 * 4.0 + 3.0 * 5.0


def test_rules_registered_with_the_decorators_are_found_by_the_dispatchers():
    def triple(x):
        return 3.0 * x

    @cr.rrule.register(triple)
    def rrule_triple(x):
        def triple_pullback(dy):
            return cr.NoTangent(), 3.0 * dy

        return triple(x), triple_pullback

    @cr.frule.register(triple)
    def frule_triple(tangents, x):
        return triple(x), 3.0 * tangents[1]

    y, back = cr.rrule(triple, 2.0)
    assert (y, back(1.0)) == (6.0, (cr.NoTangent(), 3.0))
    assert cr.frule((cr.NoTangent(), 1.0), triple, 2.0) == (6.0, 3.0)


def test_scalar_rule_defines_both_rules_from_the_partials():
    def sine(x):
        return math.sin(x)

    cr.scalar_rule(sine, lambda x: math.cos(x))
    y, back = cr.rrule(sine, 0.3)
    assert y == math.sin(0.3) and back(2.0)[1] == pytest.approx(2.0 * math.cos(0.3), rel=1e-15)
    y, dy = cr.frule((cr.NoTangent(), 2.0), sine, 0.3)
    assert y == math.sin(0.3) and dy == pytest.approx(2.0 * math.cos(0.3), rel=1e-15)


def test_non_differentiable_gives_no_tangent_for_every_input():
    def count_items(xs, extra):
        return len(xs) + extra

    cr.non_differentiable(count_items)
    y, back = cr.rrule(count_items, [1.0, 2.0], 3)
    assert y == 5 and back(1.0) == (cr.NoTangent(), cr.NoTangent(), cr.NoTangent())


def test_opt_out_removes_the_rule_for_the_given_types():
    def halve(x):
        return x / 2

    class Exact(float):
        pass

    cr.scalar_rule(halve, lambda x: 0.5)
    cr.opt_out(halve, Exact)
    assert cr.rrule(halve, Exact(1.0)) is None
    assert cr.rrule(halve, 1.0) is not None


def test_rrule_via_ad_outside_a_differentiation_is_a_clear_error():
    with pytest.raises(cr.ChainRulesError, match="rrule_via_ad"):
        cr.rrule_via_ad(abs, -1.0)


# ----- tangents ----------------------------------------------------------------------------


def test_tangent_types_of_the_listing():
    assert cr.NoTangent() is cr.NoTangent() and cr.ZeroTangent() is cr.ZeroTangent()
    assert cr.ZeroTangent() + 2.5 == 2.5 and cr.NoTangent() + 2.5 == 2.5
    assert isinstance(cr.ZeroTangent() * 3.0, cr.ZeroTangent)
    assert cr.Tangent[tuple](1.0, 2.0)[1] == 2.0
    assert cr.Tangent[dict]({"a": 1.0})["a"] == 1.0
    assert cr.unthunk(cr.Thunk(lambda: 4.0)) == 4.0
    assert cr.add(1.0, 2.0) == 3.0
    assert cr.iadd(1.0, 2.0) == 3.0
    assert cr.ProjectTo(1.0)(2.0 + 3.0j) == 2.0


def test_inplaceable_thunk_of_the_listing_adds_itself_into_an_accumulator():
    def add_into(acc):
        acc[0] += 1.0
        return acc

    t = cr.InplaceableThunk(add_into, cr.Thunk(lambda: np.array([1.0, 0.0])))
    acc = np.zeros(2)
    assert cr.iadd(acc, t) is acc
    np.testing.assert_array_equal(acc, [1.0, 0.0])
    np.testing.assert_array_equal(cr.unthunk(t), [1.0, 0.0])


# ----- testing -----------------------------------------------------------------------------


def test_test_rrule_and_test_frule_accept_a_correct_rule():
    cr.testing.test_rrule(operator.mul, 2.0, 3.0, output_tangent=1.5, rtol=1e-8, atol=1e-10)
    cr.testing.test_frule(operator.mul, 2.0, 3.0)
    cr.testing.test_rrule(np.sin, np.array([0.1, 0.7]))


def test_test_rrule_and_test_frule_reject_a_wrong_rule():
    def wrongly_ruled(x):
        return x * x

    @cr.rrule.register(wrongly_ruled)
    def rrule_wrongly_ruled(x):
        return x * x, lambda dy: (cr.NoTangent(), 3.0 * x * dy)  # should be 2 x dy

    @cr.frule.register(wrongly_ruled)
    def frule_wrongly_ruled(tangents, x):
        return x * x, 3.0 * x * tangents[1]

    with pytest.raises(AssertionError):
        cr.testing.test_rrule(wrongly_ruled, 1.5)
    with pytest.raises(AssertionError):
        cr.testing.test_frule(wrongly_ruled, 1.5)


def sine_of_product(x, y):
    return np.sum(np.sin(x * y))


@each_engine
def test_check_grads_accepts_each_engine(engine):
    args = (np.array([0.3, 0.5]), np.array([1.5, -0.5]))
    performed = cr.testing.check_grads(sine_of_product, args, modes=("reverse",), order=1, engine=engine)
    assert performed == [f"reverse[{engine}] order 1: test_contract_public_api.sine_of_product"]


def test_check_grads_with_its_defaults_checks_every_engine_to_second_order():
    args = (np.array([0.3, 0.5]), np.array([1.5, -0.5]))
    performed = cr.testing.check_grads(sine_of_product, args)
    name = "test_contract_public_api.sine_of_product"
    for engine in REVERSE_ENGINES:
        assert f"reverse[{engine}] order 1: {name}" in performed
        assert any(p.startswith("forward order 2") and f"pullback[{engine}]" in p for p in performed), performed
    assert f"forward order 1: {name}" in performed


def test_check_grads_checks_second_order_reverse_over_reverse():
    args = (np.array([0.3, 0.5]), 1.5)  # the scalar broadcasts: its cotangent is summed
    performed = cr.testing.check_grads(
        sine_of_product, args, modes=("reverse",), order=2, engine="tape", nested_modes=("reverse",)
    )
    assert any("order 2" in p for p in performed)


def test_central_fdm_estimates_a_derivative():
    assert crt.central_fdm(5, 1)(np.sin, 0.3) == pytest.approx(math.cos(0.3), rel=1e-10)
    assert crt.central_fdm(5, 2)(np.sin, 0.3) == pytest.approx(-math.sin(0.3), rel=1e-6)


# ----- the default engine and cr.show ----------------------------------------------------------


def test_the_default_reverse_engine_is_the_source_engine():
    assert cr.gradient(ratio, 2.0, 3.0) == cr.gradient(ratio, 2.0, 3.0, engine="source")
    y, back = cr.pullback(ratio, 2.0, 3.0)
    assert (y, back(1.0)) == (ratio(2.0, 3.0), cr.pullback(ratio, 2.0, 3.0, engine="source")[1](1.0))


def test_show_prints_the_generated_code_of_the_source_engine():
    text = cr.show(ratio, 2.0, 3.0)
    assert isinstance(text, str) and "ratio" in text
    compile(text, "<cr.show>", "exec")


# ----- ProjectTo ---------------------------------------------------------------------------


def test_project_to_keeps_dtype_realness_and_shape():
    x32 = np.zeros(3, dtype=np.float32)
    projected = cr.ProjectTo(x32)(np.array([1.0, 2.0, 3.0]) + 1j)
    assert projected.dtype == np.float32
    np.testing.assert_array_equal(projected, [1.0, 2.0, 3.0])
    assert cr.ProjectTo(1.0)(2.0 + 5.0j) == 2.0
    assert cr.ProjectTo(3)(2.0) == 2.0 and type(cr.ProjectTo(3)(2.0)) is float  # integers are reals
    assert cr.ProjectTo(True)(1.0) == cr.NoTangent()
    assert cr.ProjectTo(1.0 + 1.0j)(2.0) == 2.0 + 0j
    with pytest.raises(ValueError, match="shape"):
        cr.ProjectTo(x32)(np.ones(4))


def test_project_to_works_field_by_field_on_structures():
    @dataclasses.dataclass
    class Dense:
        weights: np.ndarray
        bias: float

    primal = Dense(np.zeros(2, dtype=np.float32), 0.0)
    t = cr.ProjectTo(primal)(cr.Tangent[Dense](weights=np.array([1.0, 2.0]), bias=1.0 + 1.0j))
    assert type(t) is cr.Tangent[Dense]
    assert t.weights.dtype == np.float32 and t.bias == 1.0
    t = cr.ProjectTo((1.0, np.ones(2)))((2.0 + 1j, np.array([1.0, 2.0])))
    assert type(t) is cr.Tangent[tuple] and t[0] == 2.0
