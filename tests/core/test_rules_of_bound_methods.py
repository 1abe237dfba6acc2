"""A rule registered for a method (``M.q``) serves the bound method ``m.q`` given to any engine or
called through the dispatchers: the registry calls the rule with the object first, and the bound
method's tangent is its object's (the rule's ``d_self``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source, trace

X = np.array([0.3, 1.2])


@dataclasses.dataclass
class Scaled:
    w: float

    def apply(self, x):
        return self.w * np.round(x)

    def plain(self, x):
        return self.w * x


@cr.rrule.register(Scaled.apply)
def rrule_apply(s, x):  # straight through the rounding, so that the rule's use shows in the result
    def apply_pullback(dy):
        return cr.NoTangent(), cr.Tangent[Scaled](w=np.sum(dy * np.round(x))), dy * s.w

    return s.apply(x), apply_pullback


@cr.frule.register(Scaled.apply)
def frule_apply(tangents, s, x):
    _, ds, dx = tangents
    dw = cr.unthunk(ds).w if isinstance(ds, cr.Tangent) else 0.0
    return s.apply(x), dw * np.round(x) + s.w * dx


def test_the_dispatchers_call_the_functions_rule_with_the_object_first():
    m = Scaled(3.0)
    y, back = cr.rrule(m.apply, 1.3)
    assert y == 3.0
    assert back(1.0) == (cr.Tangent[Scaled](w=1.0), 3.0)
    assert cr.frule((cr.Tangent[Scaled](w=1.0), 0.5), m.apply, 1.3) == (3.0, 2.5)
    assert cr.rrule.has_rule(m.apply, 1.3) and cr.frule.has_rule(m.apply, 1.3)


def test_a_method_without_a_rule_has_none():
    assert cr.rrule(Scaled(3.0).plain, 1.3) is None
    assert cr.frule((cr.NoTangent(), 1.0), Scaled(3.0).plain, 1.3) is None


def test_a_rule_of_the_bound_method_itself_comes_first():
    m = Scaled(3.0)
    cr.rrule.register(m.apply)(lambda x: (m.apply(x), lambda dy: (cr.NoTangent(), 7.0 * dy)))
    try:
        assert cr.rrule(m.apply, 1.3)[1](1.0) == (cr.NoTangent(), 7.0)
        assert cr.rrule(Scaled(3.0).apply, 1.3)[1](1.0) == (cr.Tangent[Scaled](w=1.0), 3.0)
    finally:
        cr.rrule.unregister(m.apply)


@pytest.mark.parametrize("engine", [source, trace])
def test_both_reverse_engines_pull_back_the_objects_cotangent_first(engine):
    y, back = engine.pullback_full(Scaled(3.0).apply, 1.3)
    assert y == 3.0
    assert back(1.0) == (cr.Tangent[Scaled](w=1.0), 3.0)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_and_jacobians_of_a_bound_method_use_its_rule(engine):
    m = Scaled(3.0)
    assert cr.gradient(m.apply, 0.3, engine=engine) == (3.0,)
    np.testing.assert_array_equal(cr.jacobian(m.apply, X, mode="reverse", engine=engine), 3.0 * np.eye(2))


def test_forward_mode_uses_the_rule_of_a_bound_method():
    m = Scaled(3.0)
    assert cr.derivative(m.apply, 0.3) == 3.0
    assert cr.jvp(m.apply, (1.3,), (2.0,)) == (3.0, 6.0)
    np.testing.assert_array_equal(cr.jacobian(m.apply, X, mode="forward"), 3.0 * np.eye(2))
    np.testing.assert_array_equal(cr.jacobian(m.apply, X, mode="forward", chunk_size=1), 3.0 * np.eye(2))


def test_forward_mode_uses_the_rule_of_a_bound_method_at_an_outer_tapes_values():
    assert cr.gradient(lambda x: cr.derivative(Scaled(3.0).apply, x) * x, 1.3, engine="tape") == (3.0,)


def test_a_hessian_through_a_call_of_the_method_agrees_with_its_rules():
    m = Scaled(3.0)
    # sum(w round(x) x): the rules make round's derivative 1, so the gradient is w x + w round(x)
    np.testing.assert_array_equal(cr.hessian(lambda x: np.sum(m.apply(x) * x), X), 6.0 * np.eye(2))


def test_forward_mode_over_the_source_engine_uses_the_rule_of_a_bound_method():
    m = Scaled(3.0)
    assert cr.derivative(lambda x: cr.value_and_gradient(m.apply, x)[0], 1.3) == 3.0
    apply = m.apply  # a bound method passed around as a value
    assert cr.derivative(lambda z: apply(z) * z, 1.3) == pytest.approx(3.0 * 1.3 + 3.0 * np.round(1.3))
