"""Typed rules and opt-outs select a rule by the run-time types of every call, also where the
source engine decides statically (a rule called directly, a call known to have no derivative,
an inlined operator) or takes a fast path that skips the rule lookup."""

import math
import types

import chainrules as cr


class Exact(float):
    """A float for which the rules below are switched off (or on)."""


def cube(x):
    return x * x * x


@cr.rrule.register(cube)
def rrule_cube(x):
    def cube_pullback(dy):
        return cr.NoTangent(), 100.0 * dy  # deliberately not 3 x**2: shows that the rule ran

    return cube(x), cube_pullback


cr.opt_out(cube, Exact)


def test_an_opt_out_for_one_type_leaves_the_rule_for_others():
    assert cr.gradient(cube, 2.0) == (100.0,)
    assert cr.gradient(cube, Exact(2.0)) == (12.0,)  # opted out: the engine differentiates the code
    assert cr.gradient(cube, 2.0) == (100.0,)  # the fast path of the last call must not skip the rule
    assert cr.gradient(cube, Exact(2.0)) == (12.0,)


def square(x):
    return x * x


@cr.rrule.register(square, Exact)
def rrule_square_exact(x):
    def square_exact_pullback(dy):
        return cr.NoTangent(), -1.0 * dy

    return square(x), square_exact_pullback


def test_a_typed_rule_is_used_for_its_type_after_a_call_of_another_type():
    assert cr.gradient(square, 3.0) == (6.0,)
    assert cr.gradient(square, Exact(3.0)) == (-1.0,)
    assert cr.gradient(square, 3.0) == (6.0,)
    assert cr.gradient(lambda x: square(x) + x, Exact(3.0)) == (0.0,)


# a module of functions: calls of its attributes are resolved when the engine specializes
steps = types.ModuleType("steps")


def _step(x):
    return float(math.floor(x))


def _twice(x):
    return 2 * x


steps.step = _step
steps.twice = _twice
cr.non_differentiable(steps.step)


@cr.rrule.register(steps.step, Exact)
def rrule_step_straight_through(x):
    """A straight-through estimator, for one type only."""

    def step_straight_through_pullback(dy):
        return cr.NoTangent(), dy

    return steps.step(x), step_straight_through_pullback


@cr.rrule.register(steps.twice, int)
def rrule_twice_int(x):
    def twice_int_pullback(dy):
        return cr.NoTangent(), 7.0 * dy  # recognisable

    return 2 * x, twice_int_pullback


@cr.rrule.register(steps.twice, float)
def rrule_twice_float(x):
    def twice_float_pullback(dy):
        return cr.NoTangent(), 2.0 * dy

    return 2.0 * x, twice_float_pullback


def test_a_call_with_no_derivative_for_some_types_is_differentiated_for_others():
    def f(x):
        return steps.step(x) * 3.0 + x

    assert cr.gradient(f, 1.5) == (1.0,)
    assert cr.gradient(f, Exact(1.5)) == (4.0,)


def test_a_real_scalar_of_either_type_gets_the_rule_of_its_run_time_type():
    def f(k, x, integer):
        y = k if integer else x  # y is an int or a float: the analysis knows only "real"
        return steps.twice(y) * x

    # with the int: d/dx [twice(k) x] = 2k, and k's cotangent comes from the int rule
    assert cr.gradient(f, 3, 2.0, True)[:2] == (14.0, 6.0)
    assert cr.gradient(f, 3, 2.0, False)[:2] == (cr.ZeroTangent(), 8.0)
