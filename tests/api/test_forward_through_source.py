"""Forward mode where dual numbers cannot pass through the code as Python runs it.

``math.sin(x)`` and ``out[i] = x`` into a plain ``np.zeros(n)`` convert a dual to a float, and a
library function with a rule would run its own code on duals: the forward engine refuses these.
``cr.jvp``, ``cr.derivative`` and ``cr.jacobian(..., mode="forward")`` then run the function as
the source engine's primal runs it (every call through its rule, writes into buffers followed),
still pushing tangents forward. Each case is checked against finite differences and reverse mode.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.interpolate
import scipy.linalg
from numpy.polynomial import Polynomial

import chainrules as cr
from chainrules import api, forward
from chainrules.reverse import source
from chainrules.testing import fd_jacobian

RUNS: list = []


def scalar_math(x):
    RUNS.append(x)
    return math.sin(x) * math.exp(-x) + math.log1p(x * x) / math.hypot(x, 2.0)


def fills_a_buffer(x):
    out = np.zeros(len(x) + 1)
    for i in range(len(x)):
        out[i] = math.tanh(x[i]) * x[(i + 1) % len(x)]
    out[-1] = out[0] + x.sum()
    return out


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_math_functions_in_scalar_code():
    x = 0.7
    with pytest.raises(cr.DroppedDerivativeError):
        forward.jvp(scalar_math, (x,), (1.0,))
    d = cr.derivative(scalar_math, x)
    assert type(d) is float
    assert d == pytest.approx(central(scalar_math, x), rel=1e-8)
    assert d == pytest.approx(cr.gradient(scalar_math, x)[0], rel=1e-14)
    y, dy = cr.jvp(scalar_math, (x,), (2.0,))
    assert y == pytest.approx(scalar_math(x), rel=1e-15) and dy == pytest.approx(2.0 * d, rel=1e-14)


def test_the_function_is_remembered_so_later_calls_run_it_once():
    api._auto_choices.pop(scalar_math, None)
    RUNS.clear()
    cr.derivative(scalar_math, 0.3)
    assert len(RUNS) == 2  # the engine's run, refused, then the source engine's primal
    RUNS.clear()
    cr.derivative(scalar_math, 0.4)
    assert len(RUNS) == 1


def test_a_buffer_filled_with_plain_writes():
    x = np.array([0.2, -0.5, 1.1])
    before = x.copy()
    J = cr.jacobian(fills_a_buffer, x, mode="forward")
    np.testing.assert_array_equal(x, before)  # the input is not written into
    assert J.shape == (4, 3) and J.flags.writeable
    np.testing.assert_allclose(J, cr.jacobian(fills_a_buffer, x, mode="reverse"), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(J, fd_jacobian(fills_a_buffer, x), rtol=1e-6, atol=1e-8)
    t = np.array([1.0, -2.0, 0.5])
    y, dy = cr.jvp(fills_a_buffer, (x,), (t,))
    np.testing.assert_allclose(y, fills_a_buffer(x), rtol=1e-15)
    np.testing.assert_allclose(dy, J @ t, rtol=1e-13)


def test_a_float32_buffer_keeps_its_dtype():
    def fill32(x):
        out = np.zeros(2, dtype=np.float32)
        out[0] = x[0] * x[1]
        out[1] = x[1] ** 2
        return out

    x = np.array([1.5, -2.0], dtype=np.float32)
    J = cr.jacobian(fill32, x, mode="forward")
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, [[-2.0, 1.5], [0.0, -4.0]])


def test_a_library_function_with_a_rule_called_inside():
    upper = np.array([[2.0, 0.5], [0.0, 4.0]])

    def f(x):
        return scipy.linalg.solve_triangular(upper, x) * math.cos(0.3)

    x = np.array([1.0, -1.0])
    J = cr.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(J, np.linalg.inv(upper) * math.cos(0.3), rtol=1e-14)


def test_structured_inputs():
    @dataclasses.dataclass
    class Params:
        a: float
        b: np.ndarray

    def f(p):
        out = np.zeros(2)
        out[0] = math.sin(p.a) * p.b[0]
        out[1] = p.b[1] ** 2
        return out.sum()

    p = Params(0.4, np.array([2.0, 3.0]))
    y, dy = cr.jvp(f, (p,), (cr.Tangent[Params](a=1.0, b=np.array([0.5, -1.0])),))
    expected = math.cos(0.4) * 2.0 + math.sin(0.4) * 0.5 + 2 * 3.0 * -1.0
    assert y == pytest.approx(f(p)) and dy == pytest.approx(expected, rel=1e-14)


def test_derivatives_of_derivatives_through_a_buffer():
    def fill(x):
        out = np.zeros(2)
        out[0] = x * 2.0
        out[1] = math.sin(x) * x
        return out.sum()

    def slope(x):
        return cr.derivative(fill, x)

    x = 1.5
    assert slope(x) == pytest.approx(2.0 + math.cos(x) * x + math.sin(x), rel=1e-14)
    assert cr.derivative(slope, x) == pytest.approx(2 * math.cos(x) - math.sin(x) * x, rel=1e-12)
    assert cr.hessian(fill, x) == pytest.approx(2 * math.cos(x) - math.sin(x) * x, rel=1e-12)


def test_perturbation_confusion_through_the_source_engine():
    # D(x -> x * D(y -> sin(x * y))(1))(1): the inner derivative is x cos(x), the outer 2x cos(x) - x^2 sin(x)
    def outer(x):
        return x * cr.derivative(lambda y: math.sin(x * y), 1.0)

    x = 0.7
    assert cr.derivative(outer, x) == pytest.approx(2 * x * math.cos(x) - x * x * math.sin(x), rel=1e-13)


def test_where_the_source_engine_cannot_run_it_either_the_first_refusal_is_raised():
    def guarded(x):
        def roots():  # a generator: the source engine refuses it
            yield math.sqrt(x)

        return sum(roots())

    with pytest.raises(cr.DroppedDerivativeError, match="use the NumPy function") as info:
        cr.derivative(guarded, 2.0)
    note = "".join(info.value.__notes__)
    assert "guarded failed too: UnsupportedSyntaxError" in note and "`yield`" in note
    assert api._chosen_before(guarded, api._THROUGH_SOURCE) is None


def updates_an_array_a_view_sees(w):
    out = np.zeros(2)
    out[0] = w[0, 1]  # a plain buffer: the forward engine refuses, the source engine's primal is tried
    v1 = np.square(w)
    v5 = np.einsum("ij->ji", v1)  # a view of v1: the update below changes it
    v1 += np.sin(w)
    return np.sum(v5**2) + out[0]


def test_an_update_in_place_that_a_view_sees_is_refused_not_rebound():
    w = np.array([[0.5, -0.2], [0.3, 0.8]])
    with pytest.raises(cr.UnsupportedSyntaxError, match="updates the ndarray in place"):
        cr.gradient(updates_an_array_a_view_sees, w)
    with pytest.raises(cr.DroppedDerivativeError) as info:  # rebinding v1 would leave v5 without the update
        cr.jvp(updates_an_array_a_view_sees, (w,), (np.ones_like(w),))
    assert "updates the ndarray in place" in "".join(info.value.__notes__)
    with pytest.raises(cr.UnsupportedSyntaxError, match="updates the ndarray in place"):
        cr.hessian(updates_an_array_a_view_sees, w)


def test_an_update_in_place_of_an_array_the_function_made_is_followed():
    def f(x):
        y = x * 2.0
        y += np.sin(x)  # y is new: rebinding it is what the update in place does
        out = np.zeros(3)
        out[0] = y[1]
        return np.sum(y**2) + out[0]

    x = np.array([0.3, -0.6, 1.2])
    J = cr.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(J, cr.gradient(f, x)[0], rtol=1e-14)
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-6, atol=1e-8)


def roots_of(x):
    def roots():  # a generator, which the source engine refuses: the API differentiates on the tape
        for v in x:
            yield np.sqrt(v)

    return np.stack(list(roots()))


def guarded_energy(x):
    y = roots_of(x)
    return np.sum(y * x) * x[0]


def guarded_halves(x):
    return roots_of(x) * 0.5  # not one number: no Hessian


# halved(x) = x / 2 has a forward rule only: neither reverse engine can differentiate it
halved = np.frompyfunc(lambda x: 0.5 * x, 1, 1)
cr.frule.register(halved)(lambda tangents, x: (0.5 * x, 0.5 * tangents[1]))


def test_hessians_where_the_source_engine_refuses_the_function():
    x = np.array([0.5, 1.2, 2.0])
    with pytest.raises(cr.UnsupportedSyntaxError):  # the engine itself refuses the generator
        source.pullback_full(guarded_energy, x)
    g = cr.gradient(guarded_energy, x)[0]  # the API takes the tape
    np.testing.assert_allclose(g, cr.gradient(guarded_energy, x, engine="tape")[0], rtol=1e-14)
    np.testing.assert_allclose(g, fd_jacobian(guarded_energy, x)[0], rtol=1e-7)
    H = cr.hessian(guarded_energy, x)
    np.testing.assert_allclose(H, cr.hessian(guarded_energy, x, engine="tape"), rtol=1e-14)
    np.testing.assert_allclose(H, fd_jacobian(lambda z: cr.gradient(guarded_energy, z, engine="tape")[0], x), atol=1e-8)
    with pytest.raises(cr.ChainRulesError, match="real scalar"):  # a vector output has no Hessian
        cr.hessian(guarded_halves, x)

    # where both reverse engines refuse f (a callable with a forward rule only), forward over forward
    def energy(z):
        return np.sum(halved(z) * z**2)

    with pytest.raises(cr.NoRuleError):
        cr.gradient(energy, x)
    np.testing.assert_allclose(cr.hessian(energy, x), np.diag(3 * x), rtol=1e-14)


def straight_through_round(x):
    return np.round(x)


@cr.rrule.register(straight_through_round)
def _rrule_straight_through_round(x):
    return np.round(x), lambda dy: (cr.NoTangent(), dy)


@cr.frule.register(straight_through_round)
def _frule_straight_through_round(tangents, x):
    return np.round(x), tangents[1]


def squared_by_hand(x):
    return x * x


cr.scalar_rule(squared_by_hand, lambda x: 7.0 * x)  # deliberately not the body's derivative: which one ran shows


def test_a_function_with_both_rules_called_inside_is_pushed_by_its_forward_rule():
    """The straight-through estimator's rules, not its body's ``np.round`` (whose derivative is 0):
    run through the source engine's primal, forward mode must use the forward rule, not push the
    duals through the reverse rule's own primal code."""

    def f(x):
        return x * straight_through_round(x) + squared_by_hand(x)

    x = 1.3
    expected = np.round(x) + x + 7.0 * x
    assert cr.gradient(f, x) == pytest.approx((expected,), rel=1e-14)
    assert cr.derivative(f, x) == pytest.approx(expected, rel=1e-14)
    assert cr.jvp(f, (x,), (2.0,))[1] == pytest.approx(2 * expected, rel=1e-14)
    xs = np.array([1.3, 2.6])
    np.testing.assert_allclose(np.diag(cr.jacobian(f, xs, mode="forward")), np.round(xs) + 8.0 * xs, rtol=1e-14)
    assert cr.hessian(f, x) == pytest.approx(2.0 + 7.0, rel=1e-14)  # d/dx (round(x) + x + 7x) by the rules


def norm_of_a_zero_vector(x):
    v = x * 0.0  # zero, with a zero tangent: np.linalg.norm's forward rule takes it; sqrt(0)'s 1/0 would not
    return math.sin(x[0]) + np.linalg.norm(v) + np.linalg.norm(x[1:] - x[1:])


def test_numpys_python_functions_push_tangents_by_their_forward_rule():
    x = np.array([0.5, 1.0, 2.0])
    with np.errstate(all="ignore"):  # (the reverse rule also runs on the duals, for a pullback)
        J = cr.jacobian(norm_of_a_zero_vector, x, mode="forward")
        _, t = cr.jvp(norm_of_a_zero_vector, (x,), (np.ones(3),))
    np.testing.assert_allclose(J, [math.cos(0.5), 0.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(J, cr.jacobian(norm_of_a_zero_vector, x, mode="reverse"), rtol=1e-12)
    assert t == pytest.approx(math.cos(0.5), rel=1e-12)


class Profile(scipy.interpolate.CubicSpline):
    """A spline with a method of the user's: its class's call has rules, the method has none."""

    def weighted(self, t, w):
        return w * self(t) + w**2


PROFILE = Profile(np.linspace(0.0, 2.0, 6), np.sin(np.linspace(0.0, 2.0, 6)))
SPLINE = scipy.interpolate.CubicSpline(np.linspace(0.0, 2.0, 6), np.sin(np.linspace(0.0, 2.0, 6)))


def test_an_objects_call_rule_is_not_used_for_its_other_methods():
    """A callable object's rule is for calls of the object: its other methods and its class's
    classmethods are differentiated as methods (the body of the user's, a library's refused), where
    the call rule (the spline's, the series constructor's) had been applied to their arguments."""

    def user_method(w):
        return math.sin(w) + PROFILE.weighted(0.7, w)

    w = 1.3
    expected = math.cos(w) + SPLINE(0.7) + 2.0 * w
    assert cr.derivative(user_method, w) == pytest.approx(expected, rel=1e-12)
    assert cr.hessian(user_method, w) == pytest.approx(-math.sin(w) + 2.0, rel=1e-12)
    # a library's method has its own rule (the call rule had given SPLINE(0.0, nu=b), a wrong value with a zero
    # slope); a classmethod without one is refused (the source engine finds no rule for it either), where the call
    # rule had given Polynomial(r)
    integral = lambda b: math.sin(b) + SPLINE.integrate(0.0, b)  # noqa: E731
    assert cr.jacobian(integral, 1.3, mode="forward") == pytest.approx(math.cos(1.3) + SPLINE(1.3), rel=1e-12)
    from_roots = lambda r: math.sin(r[0]) + np.sum(Polynomial.fromroots(r).coef)  # noqa: E731
    with pytest.raises(cr.DroppedDerivativeError) as info:
        cr.jacobian(from_roots, np.array([1.3, -0.4]), mode="forward")
    notes = " ".join(info.value.__notes__)
    assert "no differentiation rule for" in notes and "fromroots" in notes, notes
