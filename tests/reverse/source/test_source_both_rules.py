"""A callable with a forward and a reverse rule called on dual numbers (forward mode run through
the source engine's primal, a Hessian): the value and its tangents come from the forward rule,
the pullback from the reverse rule, which runs only when the pullback is called. The same for a
value passed by keyword, for callable objects (rules registered for their class or for the
object) and for constructors. Each rule here multiplies by 10 or computes what its body's
operations would not (``np.round``'s zero derivative), so that which one ran shows."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import chainrules as cr


def scaled(x, scale=1.0):
    return scale * x


@cr.frule.register(scaled)
def _frule_scaled(tangents, x, scale=1.0):
    return scale * x, 10.0 * (scale * tangents[1] + x * tangents[2])


@cr.rrule.register(scaled)
def _rrule_scaled(x, scale=1.0):
    return scale * x, lambda dy: (cr.NoTangent(), 10.0 * dy * scale, 10.0 * dy * x)


@pytest.mark.parametrize(
    "f", [lambda s: scaled(1.5, s), lambda s: scaled(1.5, scale=s)], ids=["by position", "by keyword"]
)
def test_a_differentiated_value_is_pushed_by_the_forward_rule_by_position_or_keyword(f):
    assert cr.derivative(f, 2.0) == pytest.approx(15.0, rel=1e-14)


class Rounding:
    """A straight-through estimator as a callable object, with rules for its class."""

    def __call__(self, x):
        return np.round(x)


cr.rrule.register(Rounding)(lambda r, x: (np.round(x), lambda dy: (cr.NoTangent(), dy)))
cr.frule.register(Rounding)(lambda tangents, r, x: (np.round(x), tangents[1]))


class OwnRounding:
    def __call__(self, x):
        return np.round(x)


OWN_ROUNDING = OwnRounding()  # its rules are the object's own
cr.rrule.register(OWN_ROUNDING)(lambda x: (np.round(x), lambda dy: (cr.NoTangent(), dy)))
cr.frule.register(OWN_ROUNDING)(lambda tangents, x: (np.round(x), tangents[1]))


@pytest.mark.parametrize("rounding", [Rounding(), OWN_ROUNDING], ids=["class rules", "object rules"])
def test_a_callable_object_is_pushed_by_its_forward_rule(rounding):
    def f(x):
        return 3.0 * rounding(x)

    assert cr.derivative(f, 0.3) == pytest.approx(3.0, rel=1e-14)
    np.testing.assert_allclose(cr.jacobian(f, np.array([0.3, 1.2]), mode="forward"), 3.0 * np.eye(2), rtol=1e-14)
    assert cr.hessian(lambda x: rounding(x) * x * 3.0, 0.3) == pytest.approx(6.0, rel=1e-14)


@dataclasses.dataclass
class Rounded:
    value: float

    def __post_init__(self):
        self.value = np.round(self.value)


cr.rrule.register(Rounded, functor=False)(lambda v: (Rounded(v), lambda dy: (cr.NoTangent(), cr.unthunk(dy).value)))
cr.frule.register(Rounded, functor=False)(lambda tangents, v: (Rounded(v), cr.Tangent[Rounded](value=tangents[1])))


def test_a_constructor_is_pushed_by_its_forward_rule_in_a_hessian():
    assert cr.hessian(lambda x: Rounded(x).value * x * 3.0, 0.3) == pytest.approx(6.0, rel=1e-14)


def softplus(x):
    return math.log1p(math.exp(x))


@cr.frule.register(softplus)
def _frule_softplus(tangents, x):
    return softplus(x), tangents[1] / (1.0 + math.exp(-x))


@cr.rrule.register(softplus)
def _rrule_softplus(x):
    s = 1.0 / (1.0 + math.exp(-x))  # math.exp refuses a dual: this must not run in forward mode
    return softplus(x), lambda dy: (cr.NoTangent(), dy * s)


def test_the_reverse_rule_runs_only_when_the_pullback_is_called():
    assert cr.derivative(lambda x: 3.0 * softplus(x), 0.5) == pytest.approx(3.0 / (1.0 + math.exp(-0.5)), rel=1e-14)


def apply_n_times(f, x, n):
    for _ in range(n):
        x = f(x)
    return x


@cr.rrule.register(apply_n_times)
def _rrule_apply_n_times(f, x, n):
    backs = []
    for _ in range(n):
        x, back = cr.rrule_via_ad(f, x)
        backs.append(back)

    def apply_n_times_pullback(dy):
        df = cr.ZeroTangent()
        for back in reversed(backs):
            dfi, dy = back(dy)
            df = cr.add(df, dfi)
        return cr.NoTangent(), df, dy, cr.NoTangent()

    return x, apply_n_times_pullback


@cr.frule.register(apply_n_times)
def _frule_apply_n_times(tangents, f, x, n):
    _, df, dx, _ = tangents
    for _ in range(n):
        x, dx = cr.frule_via_ad((df, dx), f, x)
    return x, dx


def test_a_reverse_rule_calling_rrule_via_ad_runs_in_the_reverse_pass_of_a_hessian():
    """Under a Hessian the reverse rule runs only in the pullback, with this engine installed for it."""
    from chainrules.testing import fd_jacobian

    def loss(x):
        return np.sum(apply_n_times(np.sin, x, 3) ** 2)

    x = np.array([0.3, 0.9])
    expected = fd_jacobian(lambda x: cr.gradient(loss, x)[0], x)
    np.testing.assert_allclose(cr.hessian(loss, x), expected, rtol=1e-6, atol=1e-8)
