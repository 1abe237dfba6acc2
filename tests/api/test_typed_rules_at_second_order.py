"""A rule registered for argument types (``rrule.register(f, float)``, ``np.ndarray``) is the rule
for an engine's values standing for values of those types: a Hessian (forward mode over the
gradient) and a gradient of a gradient use it, as first order does, not ``f``'s body."""

import numpy as np
import pytest

import chainrules as cr


def cube(x):
    return x**3


@cr.rrule.register(cube, float)
def rrule_cube_of_a_float(x):
    # (ten times the derivative: shows which rule ran)
    return x**3, lambda dy: (cr.NoTangent(), 30.0 * x * x * dy)


def square(x):
    return x**2


@cr.rrule.register(square, np.ndarray)
def rrule_square_of_an_array(x):
    return x**2, lambda dy: (cr.NoTangent(), 20.0 * x * dy)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_rule_typed_on_float_in_a_hessian_and_a_nested_gradient(engine):
    assert cr.gradient(cube, 2.0, engine=engine) == (120.0,)
    assert cr.hessian(cube, 2.0, engine=engine) == pytest.approx(120.0, rel=1e-14)
    assert cr.gradient(lambda x: cr.gradient(cube, x, engine=engine)[0], 2.0, engine=engine)[0] == pytest.approx(120.0)


def summed_square(x):
    return np.sum(x**2)


@cr.rrule.register(summed_square, np.ndarray)
def rrule_summed_square_of_an_array(x):
    return np.sum(x**2), lambda dy: (cr.NoTangent(), 20.0 * x * dy)


def test_a_rule_typed_on_arrays_in_a_hessian():
    H = cr.hessian(lambda z: np.sum(square(z)), np.array([1.0, 2.0]))  # (the tape refuses a ruled call inside f)
    np.testing.assert_allclose(H, 20.0 * np.eye(2), rtol=1e-14)
    for engine in ("source", "tape"):
        H = cr.hessian(summed_square, np.array([1.0, 2.0]), engine=engine)
        np.testing.assert_allclose(H, 20.0 * np.eye(2), rtol=1e-14)


def test_the_choice_by_value_is_made_per_call_not_by_the_first_values_class():
    from chainrules.forward import Dual, Tag

    # a dual of a complex number first (no rule is typed on complex: none), then one of a float,
    # of the same class Dual: the rule typed on float
    assert cr.rrule.lookup(cube, (Dual(1j, 1.0, Tag()),)) is None
    assert cr.rrule.lookup(cube, (Dual(1.5, 1.0, Tag()),)) is rrule_cube_of_a_float
