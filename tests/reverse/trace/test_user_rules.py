"""Rules for the user's own Python callables on the tape: used for the function given, refused inside it.

The tape sees operations on tracked values, not calls of Python functions. A rule registered
for a function or a callable object is used when that callable is what the tape differentiates
(or what a higher-order rule hands to ``rrule_via_ad``); a call of it inside the function runs
its body, which the tape detects and refuses rather than differentiate the body in place of
the rule.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.reverse.trace import pullback_full

HERE = re.escape(__file__)


def _line_of(f, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if marker in line)


# a rule that differs from the body, so that which one ran shows in the result
def twice(x):
    return 2.0 * x


@cr.rrule.register(twice)
def rrule_twice(x):
    def twice_pullback(dy):
        return cr.NoTangent(), 100.0 * dy

    return 2.0 * x, twice_pullback


def test_the_rule_of_the_function_given_is_used_as_by_the_source_engine():
    assert cr.gradient(twice, 1.0, engine="tape") == (100.0,)
    assert cr.gradient(twice, 1.0, engine="source") == (100.0,)
    y, back = pullback_full(twice, 3.0)
    assert y == 6.0 and back(1.0) == (cr.NoTangent(), 100.0)
    assert back(2.0) == (cr.NoTangent(), 200.0)  # may be called again, as a Jacobian does
    assert back.last_call(1.0) == (cr.NoTangent(), 100.0)
    with pytest.raises(cr.ChainRulesError, match="released by last_call"):
        back(1.0)
    J = cr.jacobian(twice, np.array([1.0, 2.0]), mode="reverse", engine="tape")
    np.testing.assert_array_equal(J, 100.0 * np.eye(2))


def test_a_call_inside_the_function_is_refused_naming_the_callable_and_the_line():
    def f(x):
        return twice(x) * 3.0  # the call

    with pytest.raises(IgnoredRuleError) as info:
        cr.gradient(f, 1.0, engine="tape")
    message = str(info.value)
    assert message.startswith("test_user_rules.twice has a rule that the tape engine cannot use here")
    assert f"{__file__}:{_line_of(f, '# the call')}" in message
    assert "engine='source'" in message
    assert isinstance(info.value, cr.ChainRulesError) and isinstance(info.value, TypeError)
    assert info.value.callable is twice
    assert cr.gradient(f, 1.0, engine="source") == (300.0,)  # what the rule gives


def test_a_call_on_constants_or_with_another_closure_is_not_refused():
    def make_scale(k):
        def scale(x):
            return k * x

        return scale

    ruled, other = make_scale(2.0), make_scale(3.0)  # one code object, two functions

    @cr.rrule.register(ruled)
    def rrule_ruled(x):
        return ruled(x), lambda dy: (cr.NoTangent(), 100.0 * dy)

    # `twice` of a constant: no value being differentiated reaches the ruled function
    assert cr.gradient(lambda x: twice(2.0) * x, 1.5, engine="tape") == (4.0,)
    # the other closure has no rule: its body is differentiated
    assert cr.gradient(lambda x: other(x) * x, 1.5, engine="tape") == (9.0,)
    with pytest.raises(IgnoredRuleError, match="make_scale.<locals>.scale has a rule"):
        cr.gradient(lambda x: ruled(x) * x, 1.5, engine="tape")
    assert cr.gradient(ruled, 1.5, engine="tape") == (100.0,)


def test_a_rule_rescues_a_function_whose_body_the_tape_cannot_run():
    def norm_to_one(x):
        return math.hypot(x, 1.0)  # math converts with float(): no derivative through it

    @cr.rrule.register(norm_to_one)
    def rrule_norm_to_one(x):
        h = math.hypot(x, 1.0)

        def norm_to_one_pullback(dy):
            return cr.NoTangent(), dy * x / h

        return h, norm_to_one_pullback

    assert cr.gradient(norm_to_one, 1.0, engine="tape")[0] == pytest.approx(1 / math.sqrt(2), rel=1e-15)

    def f(x):
        return 3.0 * norm_to_one(x)

    # inside f the body runs and converts: the error says which rule the tape could not use
    with pytest.raises(IgnoredRuleError, match="norm_to_one has a rule that the tape engine cannot use") as info:
        cr.gradient(f, 1.0, engine="tape")
    assert isinstance(info.value.__cause__, TypeError) and "float()" in str(info.value.__cause__)
    assert cr.gradient(f, 1.0, engine="source")[0] == pytest.approx(3 / math.sqrt(2), rel=1e-15)


def bisect_root(g, lo, hi):
    """The root of ``g`` in ``[lo, hi]`` by bisection: only comparisons of ``g``'s values reach the result."""
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if g(lo) * g(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@cr.rrule.register(bisect_root)
def rrule_bisect_root(g, lo, hi):
    root = bisect_root(g, lo, hi)
    _, back = cr.rrule_via_ad(g, root)
    slope = cr.unthunk(back(1.0)[1])

    def bisect_root_pullback(dx):  # implicit function theorem: the cotangent of what g captured
        dg, _ = back(-cr.unthunk(dx) / slope)
        return cr.NoTangent(), dg, cr.ZeroTangent(), cr.ZeroTangent()

    return root, bisect_root_pullback


def test_a_call_receiving_the_values_through_a_function_argument_is_refused():
    # the values reach the ruled solver only as what its equation captured (a cell, a default):
    # its body's derivative, through comparisons alone, would be a silent zero
    def cube_root(c):
        return bisect_root(lambda x: x**3 - c, 0.0, 10.0)  # the call

    def with_default(c):
        return bisect_root(lambda x, c=c: x**3 - c, 0.0, 10.0)

    with pytest.raises(IgnoredRuleError, match="bisect_root has a rule that the tape engine") as info:
        cr.gradient(cube_root, 8.0, engine="tape")
    assert f"{__file__}:{_line_of(cube_root, '# the call')}" in str(info.value)
    with pytest.raises(IgnoredRuleError, match="bisect_root has a rule"):
        cr.gradient(with_default, 8.0, engine="tape")
    # the source engine calls the rule
    assert cr.gradient(cube_root, 8.0)[0] == pytest.approx(cr.testing.fd_jvp(cube_root, 8.0, 1.0), rel=1e-6)


@dataclasses.dataclass
class Gain:
    k: float

    def __call__(self, x):
        return self.k * x


SPECIAL = Gain(2.0)  # a dataclass instance is unhashable: its rule is kept by identity


@cr.rrule.register(SPECIAL)
def rrule_special(x):
    return SPECIAL(x), lambda dy: (cr.NoTangent(), 100.0 * dy)


@cr.rrule.register(Gain)  # every other instance: the rule receives it first
def rrule_gain(gain, x):
    return gain(x), lambda dy: (cr.Tangent[Gain](k=x * dy), 10.0 * dy)


def test_callable_objects_use_their_rule_by_object_then_by_class():
    ordinary = Gain(2.0)
    for engine in ("tape", "source"):
        assert cr.gradient(SPECIAL, 1.0, engine=engine) == (100.0,)
        assert cr.gradient(ordinary, 1.0, engine=engine) == (10.0,)
    y, back = pullback_full(ordinary, 3.0)
    assert y == 6.0 and back(1.0) == (cr.Tangent[Gain](k=3.0), 10.0)  # the object's tangent first


def test_calls_of_callable_objects_inside_the_function_are_refused():
    ordinary = Gain(2.0)
    with pytest.raises(IgnoredRuleError, match="the test_user_rules.Gain instance has a rule"):
        cr.gradient(lambda x: ordinary(x), 1.0, engine="tape")
    with pytest.raises(IgnoredRuleError, match="the test_user_rules.Gain instance has a rule"):
        cr.gradient(lambda x: SPECIAL(x), 1.0, engine="tape")
    # differentiating with respect to the object: its fields are tracked, so the call is refused too
    with pytest.raises(IgnoredRuleError, match="Gain instance has a rule"):
        cr.gradient(lambda g: g(3.0), ordinary, engine="tape")
    assert cr.gradient(lambda g: g(3.0), ordinary, engine="source") == (cr.Tangent[Gain](k=3.0),)


class Scaler:
    def __init__(self, k: float):
        self.k = k

    def scale(self, x):
        return self.k * x


def test_a_rule_for_a_bound_method():
    scaler = Scaler(3.0)

    @cr.rrule.register(scaler.scale)
    def rrule_scale(x):
        return scaler.scale(x), lambda dy: (cr.NoTangent(), 30.0 * dy)

    assert cr.gradient(scaler.scale, 1.0, engine="tape") == (30.0,)
    with pytest.raises(IgnoredRuleError, match="Scaler.scale has a rule"):
        cr.gradient(lambda x: scaler.scale(x), 1.0, engine="tape")
    # another Scaler's method has no rule
    assert cr.gradient(lambda x: Scaler(3.0).scale(x), 1.0, engine="tape") == (3.0,)


def test_non_differentiable_user_functions():
    def rounded_scale(x):
        return np.round(x * 4.0) / 4.0

    cr.non_differentiable(rounded_scale)
    assert cr.gradient(rounded_scale, 1.3, engine="tape") == (cr.ZeroTangent(),)
    with pytest.raises(IgnoredRuleError, match="rounded_scale has a rule"):
        cr.gradient(lambda x: rounded_scale(x) * x, 1.3, engine="tape")
    assert cr.gradient(lambda x: rounded_scale(x) * x, 1.3, engine="source") == (1.25,)


def test_typed_rules_and_opt_outs_decide_what_is_refused():
    def halve(x):
        return x / 2.0

    @cr.rrule.register(halve, np.ndarray)  # a rule for arrays only
    def rrule_halve(x):
        return x / 2.0, lambda dy: (cr.NoTangent(), dy / 2.0)

    assert cr.gradient(lambda x: halve(x) * x, 2.0, engine="tape") == (2.0,)  # floats: no rule to ignore
    with pytest.raises(IgnoredRuleError, match="halve has a rule"):
        cr.gradient(lambda x: np.sum(halve(x)), np.ones(2), engine="tape")
    cr.opt_out(halve, np.ndarray)
    np.testing.assert_array_equal(cr.gradient(lambda x: np.sum(halve(x)), np.ones(2), engine="tape")[0], [0.5, 0.5])


# apply_to(g, x) is g(x), with a rule that differentiates g with the active engine
apply_to = np.frompyfunc(lambda g, x: g(x), 2, 1)


@cr.rrule.register(apply_to)
def rrule_apply_to(g, x):
    y, g_pullback = cr.rrule_via_ad(g, x)
    return y, lambda dy: (cr.NoTangent(), *g_pullback(dy))


def test_higher_order_rules_reach_the_rule_through_rrule_via_ad():
    assert cr.gradient(lambda x: apply_to(twice, x) * 3.0, 1.0, engine="tape") == (300.0,)
    assert cr.gradient(lambda x: apply_to(Gain(2.0), x), 1.0, engine="tape") == (10.0,)


def test_a_rule_that_calls_its_own_function_is_differentiated_by_an_outer_tape():
    def cube(x):
        return x * x * x

    @cr.rrule.register(cube)
    def rrule_cube(x):
        def cube_pullback(dy):
            return cr.NoTangent(), 3.0 * x * x * dy

        return cube(x), cube_pullback  # the rule's primal calls cube itself

    # the inner tape uses the rule; the outer one differentiates the rule's code, cube's body included
    assert cr.gradient(lambda x: cr.gradient(cube, x, engine="tape")[0], 2.0, engine="tape") == (12.0,)
    cr.scalar_rule(cube, lambda x: 3.0 * x * x)
    assert cr.hessian(cube, 2.0, engine="tape") == pytest.approx(12.0, rel=1e-15)
    H = cr.hessian(lambda x: np.sum(x * x * x), np.array([1.0, 2.0]), engine="tape")
    np.testing.assert_allclose(H, np.diag([6.0, 12.0]))


def test_a_ruled_library_function_is_named_where_its_body_converts_the_value():
    import scipy.linalg

    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    with pytest.raises(IgnoredRuleError, match=r"scipy\.linalg\._matfuncs\.expm has a rule") as info:
        cr.gradient(lambda a: np.sum(scipy.linalg.expm(a)), a, engine="tape")
    assert "plain NumPy array" in str(info.value.__cause__)
    expected = cr.gradient(lambda a: np.sum(scipy.linalg.expm(a)), a)  # the source engine calls the rule
    _, back = cr.pullback(scipy.linalg.expm, a, engine="tape")  # given to the tape itself: its rule
    np.testing.assert_allclose(back(np.ones((2, 2)))[0], expected[0], rtol=1e-12)


def test_a_ruled_library_function_whose_body_runs_on_the_values_runs_whether_or_not_the_user_has_rules():
    # rules of this module's functions are registered, so the tape checks every operation for calls of
    # them; a library's ruled function is found where its body converts or branches on a value, as when
    # no rule of the user's is registered, so what the tape does with it does not depend on them:
    # SciPy's lambertw runs its ufunc, whose rule the tape uses, and polyval its arithmetic
    import scipy.special
    from numpy.polynomial import polynomial

    def f(x):
        return np.sum(np.real(scipy.special.lambertw(x)) * polynomial.polyval(x, [0.5, -1.0, 0.3]))

    x = np.array([0.3, 0.7])
    assert cr.rrule.lookup(twice, (1.0,)) is not None
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], cr.gradient(f, x)[0], rtol=1e-12)
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_jacobian(f, x)[0].ravel(), rtol=1e-7)


def softplus(x):
    return np.log1p(np.exp(x))


@cr.rrule.register(softplus)  # a correct rule written in another form than the body
def rrule_softplus(x):
    y = np.logaddexp(0.0, x)
    sigmoid = 0.5 * (1.0 + np.tanh(0.5 * x))

    def softplus_pullback(dy):
        return cr.NoTangent(), dy * sigmoid

    return y, softplus_pullback


def test_a_correct_rule_of_the_function_given_agrees_with_finite_differences_and_the_source_engine():
    x = np.array([-1.5, 0.2, 3.0])
    dy = np.array([0.3, -1.1, 0.7])
    y, back = cr.pullback(softplus, x, engine="tape")
    assert type(pullback_full(softplus, x)[1]).__name__ == "RulePullback"  # the rule's pullback, not a tape
    np.testing.assert_allclose(y, softplus(x), rtol=1e-14)
    (tape_dx,) = back(dy)
    fd_dx = cr.testing.fd_vjp(softplus, dy, x)
    np.testing.assert_allclose(tape_dx, fd_dx, rtol=1e-9)
    _, source_back = cr.pullback(softplus, x, engine="source")
    np.testing.assert_allclose(tape_dx, source_back(dy)[0], rtol=1e-15)
    cr.testing.check_grads(softplus, (x,), modes=("reverse",), order=1, engine="tape")


def test_chainrules_own_ruled_functions_nest_on_the_tape_without_refusal():
    # cr.gradient and cr.pullback have rules (for the source engine's nested differentiation);
    # called inside a function on the tape, they are the tape's own nesting, not a user's ruled call
    from chainrules.core.ruled_calls import watched
    from chainrules.reverse.trace.tracer import RULED_CALLS

    assert RULED_CALLS.active()  # this module registers rules for functions of its own
    import chainrules.api

    assert all(code.co_filename != chainrules.api.__file__ for code, _ in watched(cr.rrule).values())
    x = np.array([0.3, -0.7])

    def inner_gradient_sum(x):
        return np.sum(cr.gradient(lambda z: np.sum(np.sin(z) * z), x, engine="tape")[0])

    expected = cr.hessian(lambda z: np.sum(np.sin(z) * z), x).sum(axis=0)
    np.testing.assert_allclose(cr.gradient(inner_gradient_sum, x, engine="tape")[0], expected, rtol=1e-12)


@dataclasses.dataclass
class Scale:  # eq=True makes the instances unhashable, the dataclass default
    c: float

    def __call__(self, x):
        return self.c * np.sin(x)


@cr.rrule.register(Scale)
def rrule_scale(k, x):
    def scale_pullback(dy):
        return cr.Tangent[Scale](c=np.sum(dy * np.sin(x))), dy * k.c * np.cos(x)

    return k.c * np.sin(x), scale_pullback


def test_a_tape_gradient_of_a_source_gradient_through_an_unhashable_callable_objects_rule():
    # the source engine hands the ruled call to the tape, which records the instance as the operation
    def f(x):
        return np.sum(Scale(2.0)(x))

    def summed_gradient(z):
        return np.sum(cr.gradient(f, z)[0])

    x = np.array([0.3, 0.5])
    expected = cr.testing.fd_jacobian(summed_gradient, x).ravel()
    np.testing.assert_allclose(cr.gradient(summed_gradient, x, engine="tape")[0], expected, rtol=1e-8)
    np.testing.assert_allclose(cr.gradient(summed_gradient, x, engine="source")[0], expected, rtol=1e-8)
