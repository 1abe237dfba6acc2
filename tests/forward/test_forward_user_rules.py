"""Forward rules for the user's own Python callables: used for the function given, and inside it.

Duals see operations, not calls of Python functions. The forward engine uses the ``frule`` of
the function (or callable object) it is given; a call of a ruled callable inside it runs its
body, which the engine detects and refuses rather than push the tangent through the body in
place of the rule. ``cr.jvp``, ``cr.derivative`` and ``cr.jacobian(..., mode="forward")`` then
run the function through the source engine's primal, which sees the call and pushes the
tangents through the rule.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward
from chainrules.core.ruled_calls import IgnoredRuleError


def twice(x):
    return 2.0 * x


@cr.frule.register(twice)  # differs from the body, so that which one ran shows in the result
def frule_twice(tangents, x):
    return 2.0 * x, 100.0 * tangents[1]


def test_the_rule_of_the_function_given_is_used():
    assert cr.derivative(twice, 1.0) == 100.0
    assert cr.jvp(twice, (3.0,), (2.0,)) == (6.0, 200.0)
    np.testing.assert_array_equal(cr.jacobian(twice, np.array([1.0, 2.0]), mode="forward"), 100.0 * np.eye(2))
    # the user's tangent is brought to the input's dtype, as for any other function
    y, dy = cr.jvp(twice, (np.float32(1.0),), (1.0,))
    assert dy == 100.0 and np.asarray(dy).dtype == np.float32


def test_a_call_inside_the_function_is_refused_by_the_engine_and_uses_the_rule_through_the_api():
    def f(x):
        return twice(x) * 3.0  # the call

    with pytest.raises(IgnoredRuleError) as info:
        forward.jvp(f, (1.0,), (1.0,))
    lines, first = inspect.getsourcelines(f)
    line = first + next(i for i, text in enumerate(lines) if "# the call" in text)
    message = str(info.value)
    assert message.startswith("test_forward_user_rules.twice has a rule that forward mode cannot use here")
    assert f"{__file__}:{line}" in message
    with pytest.raises(IgnoredRuleError, match="twice has a rule"):
        forward.jacobian(f, np.array([1.0, 2.0]))
    # the API runs f through the source engine's primal: the call's tangent is the rule's (100x, not the body's 2x)
    assert cr.derivative(f, 1.0) == 300.0
    np.testing.assert_array_equal(cr.jacobian(f, np.array([1.0, 2.0]), mode="forward"), 300.0 * np.eye(2))
    assert cr.derivative(lambda x: twice(2.0) * x, 1.0) == 4.0  # a constant reaches twice: nothing to refuse


# a rule registered batched=True takes a chunk of tangents at once; another is called per tangent
CALLS: list = []


def weighted(x):
    return 3.0 * x


@cr.frule.register(weighted, batched=True)
def frule_weighted(tangents, x):
    CALLS.append(np.shape(tangents[1]))
    return 3.0 * x, 30.0 * tangents[1]


def unbatched(x):
    return 3.0 * x


@cr.frule.register(unbatched)
def frule_unbatched(tangents, x):
    CALLS.append(np.shape(tangents[1]))
    return 3.0 * x, 30.0 * tangents[1]


def test_a_jacobian_pushes_each_chunk_through_the_rule():
    x = np.array([1.0, 2.0, 3.0])
    CALLS.clear()
    np.testing.assert_array_equal(forward.jacobian(weighted, x, chunk_size=2), 30.0 * np.eye(3))
    assert CALLS == [(2, 3), (1, 3)]  # two passes, each with its batch of tangents
    CALLS.clear()
    np.testing.assert_array_equal(forward.jacobian(unbatched, x, chunk_size=2), 30.0 * np.eye(3))
    assert CALLS == [(3,), (3,), (3,)]  # one call per tangent


def test_structured_inputs_reach_the_rule_as_tangents():
    def product(pair):
        return pair[0] * pair[1]

    seen = []

    @cr.frule.register(product)
    def frule_product(tangents, pair):
        seen.append(tangents[1])
        (a, b), (da, db) = pair, tangents[1]
        return a * b, 10.0 * (da * b + a * db)

    assert cr.jvp(product, ((2.0, 3.0),), ((1.0, 0.0),)) == (6.0, 30.0)
    assert seen == [cr.Tangent[tuple](1.0, 0.0)]  # a plain tuple of tangents becomes Tangent[tuple]
    J = cr.jacobian(product, (2.0, 3.0), mode="forward")
    assert J == cr.Tangent[tuple](30.0, 20.0)


def test_a_rule_rescues_a_function_whose_body_forward_mode_cannot_run():
    def norm_to_one(x):
        return math.hypot(x, 1.0)  # float() of a dual: no derivative through it

    @cr.frule.register(norm_to_one)
    def frule_norm_to_one(tangents, x):
        h = math.hypot(x, 1.0)
        return h, tangents[1] * x / h

    assert cr.derivative(norm_to_one, 1.0) == pytest.approx(1 / math.sqrt(2), rel=1e-15)
    with pytest.raises(IgnoredRuleError, match="norm_to_one has a rule that forward mode cannot use") as info:
        forward.jvp(lambda x: 3.0 * norm_to_one(x), (1.0,), (1.0,))
    assert isinstance(info.value.__cause__, TypeError) and "float()" in str(info.value.__cause__)
    assert cr.derivative(lambda x: 3.0 * norm_to_one(x), 1.0) == pytest.approx(3 / math.sqrt(2), rel=1e-15)


@dataclasses.dataclass
class Gain:
    k: float

    def __call__(self, x):
        return self.k * x


SPECIAL = Gain(2.0)  # unhashable: its rule is kept by identity


@cr.frule.register(SPECIAL)
def frule_special(tangents, x):
    return SPECIAL(x), 100.0 * tangents[1]


@cr.frule.register(Gain)  # every other instance: tangents first, then the instance
def frule_gain(tangents, gain, x):
    return gain(x), 10.0 * tangents[1]


def test_callable_objects_use_their_rule_by_object_then_by_class():
    ordinary = Gain(2.0)
    assert cr.derivative(SPECIAL, 1.0) == 100.0
    assert cr.derivative(ordinary, 1.0) == 10.0
    with pytest.raises(IgnoredRuleError, match="the test_forward_user_rules.Gain instance has a rule"):
        forward.jvp(lambda x: ordinary(x) + x, (1.0,), (1.0,))
    assert cr.derivative(lambda x: ordinary(x) + x, 1.0) == 11.0  # through the source engine: the class's rule
    # the object's fields are duals: its rule takes values being differentiated as arguments only
    with pytest.raises(IgnoredRuleError, match="Gain instance has a rule") as info:
        cr.jvp(lambda g: g(3.0), (ordinary,), (cr.Tangent[Gain](k=1.0),))
    assert "not inside structures or the callable object's own fields" in "".join(info.value.__notes__)


@dataclasses.dataclass
class Quadratic:
    """``0.5 x' A x - b' x``, with rules in both directions."""

    A: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return 0.5 * x @ self.A @ x - self.b @ x

    def at(self, x):  # the same value, by a method with rules of its own
        return self(x)


def _quadratic_rrule(q, x):
    def quadratic_pullback(dy):
        dy = cr.unthunk(dy)
        return cr.Tangent[Quadratic](A=0.5 * dy * np.outer(x, x), b=-dy * x), dy * (0.5 * (q.A + q.A.T) @ x - q.b)

    return q(x), quadratic_pullback


def _quadratic_frule(tangents, q, x):
    dq, dx = tangents
    dy = 0.0 if cr.iszero(dx) else (0.5 * (q.A + q.A.T) @ x - q.b) @ cr.unthunk(dx)
    if not cr.iszero(dq):
        dy = dy + 0.5 * x @ cr.unthunk(dq.A) @ x - cr.unthunk(dq.b) @ x
    return q(x), dy


cr.rrule.register(Quadratic)(_quadratic_rrule)
cr.frule.register(Quadratic)(_quadratic_frule)


@cr.rrule.register(Quadratic.at)
def rrule_quadratic_at(q, x):
    y, back = _quadratic_rrule(q, x)
    return y, lambda dy: (cr.NoTangent(), *back(dy))


@cr.frule.register(Quadratic.at)
def frule_quadratic_at(tangents, q, x):
    return _quadratic_frule(tangents[1:], q, x)


def quadratic_of(q, x):  # an object holding the values being differentiated, as an argument
    return q(x)


@cr.rrule.register(quadratic_of)
def rrule_quadratic_of(q, x):
    y, back = _quadratic_rrule(q, x)
    return y, lambda dy: (cr.NoTangent(), *back(dy))


@cr.frule.register(quadratic_of)
def frule_quadratic_of(tangents, q, x):
    return _quadratic_frule(tangents[1:], q, x)


QA, QX = np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([0.1, 0.4])


@pytest.mark.parametrize(
    "f",
    [
        lambda b: Quadratic(QA, b)(QX + b),
        lambda b: Quadratic(QA, b)(QX) * Quadratic(QA, b)(QX + b),
        lambda b: Quadratic(QA, b).at(QX + b),
        lambda b: quadratic_of(Quadratic(QA, b), QX + b),
    ],
    ids=["called", "called twice", "method", "argument"],
)
def test_the_fields_of_a_ruled_callable_object_reach_its_forward_rule_as_its_tangent(f):
    # called inside the function: forward mode runs it through the source engine's primal, where the
    # object's fields hold dual numbers; its frule gets them as a Tangent[Quadratic], not NoTangent()
    b = np.array([0.5, -0.3])
    expected = cr.testing.fd_jacobian(f, b)[0]
    np.testing.assert_allclose(cr.jacobian(f, b, mode="forward"), expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cr.jacobian(f, b, mode="forward"), cr.gradient(f, b)[0], rtol=1e-14)
    y, dy = cr.jvp(f, (b,), (np.array([1.0, 0.0]),))
    assert type(dy) is np.float64 and type(y) is np.float64
    assert dy == pytest.approx(expected[0], rel=1e-8)
    h = 1e-5  # the Hessian: forward mode over the source engine's gradient, against differences of gradients
    hessian = np.array([(cr.gradient(f, b + h * e)[0] - cr.gradient(f, b - h * e)[0]) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(cr.hessian(f, b), hessian, rtol=1e-6, atol=1e-9)


def test_non_differentiable_user_functions():
    def rounded_scale(x):
        return np.round(x * 4.0) / 4.0

    cr.non_differentiable(rounded_scale)
    assert cr.derivative(rounded_scale, 1.3) == cr.ZeroTangent()
    with pytest.raises(IgnoredRuleError, match="rounded_scale has a rule"):
        forward.jvp(lambda x: rounded_scale(x) * x, (1.3,), (1.0,))
    assert cr.derivative(lambda x: rounded_scale(x) * x, 1.3) == 1.25  # the rule's zero: d/dx = rounded_scale(x)


def test_a_reverse_rule_alone_does_not_stop_forward_mode():
    def halve(x):
        return x / 2.0

    @cr.rrule.register(halve)
    def rrule_halve(x):
        return x / 2.0, lambda dy: (cr.NoTangent(), 50.0 * dy)

    # no frule to ignore: forward mode differentiates the body
    assert cr.derivative(lambda x: halve(x) * x, 3.0) == 3.0


def _bisection(g, lo, hi):
    """The root of ``g`` in ``[lo, hi]`` by bisection: only comparisons of ``g``'s values reach the result."""
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if g(lo) * g(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def bisect_root(g, lo, hi):
    """``_bisection``, with a forward rule."""
    return _bisection(g, lo, hi)


@cr.frule.register(bisect_root)
def frule_bisect_root(tangents, g, lo, hi):
    return bisect_root(g, lo, hi), 1.0  # (never reached below)


def test_a_call_receiving_the_duals_through_a_function_argument_is_refused():
    # the duals reach the ruled solver only as what its equation captured; its body's tangent,
    # through comparisons alone, would be a silent zero, and so would the source engine's primal's
    def cube_root(c):
        return bisect_root(lambda x: x**3 - c, 0.0, 10.0)  # the call

    lines, first = inspect.getsourcelines(cube_root)
    line = first + next(i for i, text in enumerate(lines) if "# the call" in text)
    with pytest.raises(IgnoredRuleError, match="bisect_root has a rule that forward mode") as info:
        forward.jvp(cube_root, (8.0,), (1.0,))
    assert f"{__file__}:{line}" in str(info.value)
    with pytest.raises(IgnoredRuleError, match="bisect_root has a rule") as info:
        cr.derivative(cube_root, 8.0)
    assert "nor captured by a function passed to it" in "".join(info.value.__notes__)
    assert cr.derivative(lambda c: bisect_root(lambda x: x**3 - 8.0, 0.0, 10.0) * c, 1.0) == pytest.approx(2.0)


def bisect_root_reverse(g, lo, hi):
    """``_bisection``, with a reverse rule only."""
    return _bisection(g, lo, hi)


@cr.rrule.register(bisect_root_reverse)
def rrule_bisect_root_reverse(g, lo, hi):
    root = bisect_root_reverse(g, lo, hi)
    _, back = cr.rrule_via_ad(g, root)
    g_x = cr.unthunk(back(1.0)[1])

    def bisect_root_reverse_pullback(dx):
        dg, _ = back(-cr.unthunk(dx) / g_x)  # the implicit function theorem: the cotangent of what g captured
        return cr.NoTangent(), dg, cr.ZeroTangent(), cr.ZeroTangent()

    return root, bisect_root_reverse_pullback


def test_a_solver_with_a_reverse_rule_only_receiving_the_duals_through_its_equation_is_refused():
    # its body reaches the root through comparisons alone: differentiated, a silent zero; so is the
    # value of its reverse rule run on the duals (the source engine's primal)
    def cube_root(c):
        return bisect_root_reverse(lambda x: x**3 - c, 0.0, 10.0)  # the call

    assert cr.gradient(cube_root, 8.0)[0] == pytest.approx(1 / 12, rel=1e-12)  # the rule, in reverse mode
    lines, first = inspect.getsourcelines(cube_root)
    line = first + next(i for i, text in enumerate(lines) if "# the call" in text)
    with pytest.raises(IgnoredRuleError, match="bisect_root_reverse has a rule that forward mode") as info:
        forward.jvp(cube_root, (8.0,), (1.0,))
    assert f"{__file__}:{line}" in str(info.value)
    with pytest.raises(IgnoredRuleError, match="bisect_root_reverse has a rule") as info:
        cr.derivative(cube_root, 8.0)
    assert "computed its value without the values being differentiated" in "".join(info.value.__notes__)
    with pytest.raises(cr.ChainRulesError, match="bisect_root_reverse"):
        cr.jacobian(lambda v: cube_root(v[0]) * v, np.array([8.0, 1.0]), mode="forward")
    with pytest.raises(cr.ChainRulesError, match="bisect_root_reverse"):
        cr.hessian(cube_root, 8.0)
    # a constant equation: nothing to refuse
    assert cr.derivative(lambda c: bisect_root_reverse(lambda x: x**3 - 8.0, 0.0, 10.0) * c, 1.0) == pytest.approx(2.0)


def total_of(g, xs):
    return sum(g(x) for x in xs)


@cr.rrule.register(total_of)
def rrule_total_of(g, xs):
    calls = [cr.rrule_via_ad(g, x) for x in xs]  # its value computed by the engine: it carries what g captured

    def total_of_pullback(dy):
        parts = [back(dy) for _, back in calls]
        return cr.NoTangent(), functools.reduce(cr.add, (p[0] for p in parts)), cr.Tangent[list](*(p[1] for p in parts))

    return sum(y for y, _ in calls), total_of_pullback


def test_a_reverse_rule_whose_value_carries_what_a_function_argument_captured_serves_forward_mode():
    def f(c):
        return total_of(lambda x: c**2 * x + c * x**2, [1.0, 2.0])  # 3 c^2 + 5 c

    assert cr.derivative(f, 1.5) == pytest.approx(6 * 1.5 + 5, rel=1e-14)
    assert cr.derivative(f, 1.5) == pytest.approx(cr.testing.fd_jacobian(f, 1.5), rel=1e-8)
    assert cr.hessian(f, 1.5) == pytest.approx(6.0, rel=1e-14)


def test_derivatives_of_derivatives_through_a_rule_that_calls_its_own_function():
    def square(x):
        return x * x

    @cr.frule.register(square)
    def frule_square(tangents, x):
        return square(x), 2.0 * x * tangents[1]  # the rule's primal calls square itself

    # the inner derivative uses the rule; the outer one differentiates the rule, square's body included
    assert cr.derivative(lambda x: cr.derivative(square, x), 3.0) == 2.0
    assert cr.derivative(lambda x: cr.derivative(square, x) * x, 3.0) == 12.0


def test_a_ruled_library_function_is_named_where_its_body_converts_the_value():
    import scipy.linalg

    a = np.array([[2.0, 0.3], [0.1, 1.5]])
    with pytest.raises(IgnoredRuleError, match=r"scipy\.linalg\._matfuncs\.expm has a rule") as info:
        forward.jvp(lambda a: scipy.linalg.expm(a) * 2.0, (a,), (np.eye(2),))
    assert "NumPy array" in str(info.value.__cause__)
    y, dy = cr.jvp(scipy.linalg.expm, (a,), (np.eye(2),))  # given to forward mode itself: its rule
    expected = cr.jacobian(scipy.linalg.expm, a, mode="reverse")
    np.testing.assert_allclose(dy, np.einsum("ijkl,kl->ij", expected, np.eye(2)), rtol=1e-10)
    # called inside, through the API: the source engine's primal calls its rule
    y2, dy2 = cr.jvp(lambda a: scipy.linalg.expm(a) * 2.0, (a,), (np.eye(2),))
    np.testing.assert_allclose(y2, 2.0 * y, rtol=1e-15)
    np.testing.assert_allclose(dy2, 2.0 * dy, rtol=1e-12)


def softplus(x):
    return np.log1p(np.exp(x))


@cr.frule.register(softplus)  # a correct rule written in another form than the body
def frule_softplus(tangents, x):
    return np.logaddexp(0.0, x), tangents[1] * 0.5 * (1.0 + np.tanh(0.5 * x))


@cr.rrule.register(softplus)
def rrule_softplus(x):
    sigmoid = 0.5 * (1.0 + np.tanh(0.5 * x))

    def softplus_pullback(dy):
        return cr.NoTangent(), dy * sigmoid

    return np.logaddexp(0.0, x), softplus_pullback


def test_a_correct_rule_of_the_function_given_agrees_with_finite_differences_and_the_source_engine():
    x = np.array([-1.5, 0.2, 3.0])
    dx = np.array([0.3, -1.1, 0.7])
    y, dy = cr.jvp(softplus, (x,), (dx,))
    np.testing.assert_allclose(y, softplus(x), rtol=1e-14)
    np.testing.assert_allclose(dy, cr.testing.fd_jvp(softplus, x, dx), rtol=1e-9)
    J = cr.jacobian(softplus, x, mode="forward")
    np.testing.assert_allclose(J, cr.jacobian(softplus, x, mode="reverse", engine="source"), rtol=1e-15)
    np.testing.assert_allclose(J @ dx, dy, rtol=1e-15)
    cr.testing.check_grads(softplus, (x,), modes=("forward",), order=1)
