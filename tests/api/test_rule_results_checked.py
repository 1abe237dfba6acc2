"""A rule whose pullback returns the wrong number of cotangents, or a cotangent unlike its argument
(a number for an array, another shape, None), is named in a ChainRulesError at the entry points,
rather than handed to the user as a gradient; and where it is called inside the function being
differentiated, with the user's line of the call."""

import numpy as np
import pytest

import chainrules as cr


def total(x):
    return np.sum(x)


@cr.rrule.register(total)
def rrule_total_not_broadcast(x):
    return np.sum(x), lambda dy: (cr.NoTangent(), dy)  # (a number where an array of x's shape is due)


def double(x):
    return 2.0 * x


@cr.rrule.register(double)
def rrule_double_one_too_many(x):
    return 2.0 * x, lambda dy: (cr.NoTangent(), 2.0 * dy, dy)


def product(x, y):
    return x * y


@cr.rrule.register(product)
def rrule_product_without_the_functions_tangent(x, y):
    return x * y, lambda dy: (y * dy, x * dy)


def triple(x):
    return 3.0 * x


@cr.rrule.register(triple)
def rrule_triple_none(x):
    return 3.0 * x, lambda dy: (cr.NoTangent(), None)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda e: cr.gradient(total, np.ones(2), engine=e), r"total returned shape \(\) as the cotangent of argument"),
        (lambda e: cr.pullback(total, np.ones(2), engine=e)[1](1.0), r"shape \(\) as the cotangent"),
        (lambda e: cr.gradient(double, 1.0, engine=e), "double returned 3 values for 1 argument"),
        (lambda e: cr.gradient(product, 1.0, 2.0, engine=e, argnums=1), "product returned 2 values for 2 argument"),
        (lambda e: cr.gradient(triple, 1.0, engine=e), "triple returned None as the cotangent of argument 1"),
    ],
)
def test_a_wrong_rule_result_is_named(call, match, engine):
    with pytest.raises(cr.ChainRulesError, match=match):
        call(engine)


def huber(r, delta=1.0):
    a = np.abs(r)
    return np.sum(np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta)))


@cr.rrule.register(huber)
def rrule_huber_without_deltas_cotangent(r, delta=1.0):
    slope = np.clip(r, -delta, delta)
    return huber(r, delta), lambda dy: (cr.NoTangent(), dy * slope)  # (delta given by position has none)


class Scale:
    def __init__(self, a):
        self.a = a

    def __call__(self, x):
        return self.a * x


@cr.rrule.register(Scale)
def rrule_scale_one_too_many(s, x):
    return s.a * x, lambda dy: (cr.NoTangent(), s.a * dy, dy)


R = np.array([0.3, -2.0])
HERE = r"\(called at .*test_rule_results_checked\.py:\d+\)"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: cr.gradient(lambda r: huber(r, 0.5) * 2.0, R), f"huber {HERE} returned 2 values for 2 argument"),
        (lambda: cr.gradient(lambda x: double(x) * 3.0, 1.0), f"double {HERE} returned 3 values for 1 argument"),
        (lambda: cr.gradient(lambda x: Scale(2.0)(x) * 3.0, 1.0), f"Scale {HERE} returned 3 values for 1 argument"),
        (
            lambda: cr.gradient(lambda x: total(x) * 3.0, np.ones(2)),
            rf"total {HERE} returned shape \(\) as the cotangent of argument 1, a ndarray of shape \(2,\)",
        ),
        (lambda: cr.gradient(lambda x: triple(x) + x, 1.0), f"triple {HERE} returned None as the cotangent"),
        # forward over reverse: the reverse pass runs on dual numbers
        (lambda: cr.hessian(lambda r: huber(r, 0.5) * 2.0, R), f"huber {HERE} returned 2 values for 2 argument"),
        (lambda: cr.hessian(lambda x: double(x) * 3.0, 1.0), f"double {HERE} returned 3 values for 1 argument"),
    ],
)
def test_a_wrong_rule_result_inside_the_function_is_named(call, match):
    # the generated code unpacks what the rule's pullback returns: not a bare ValueError, nor a
    # cotangent blamed on the function around the call
    with pytest.raises(cr.ChainRulesError, match=match):
        call()


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "pullback, match",
    [
        (lambda dy: (cr.NoTangent(),), "histogram_bin_edges {} returned 1 values for 1 argument"),
        (
            lambda dy: (cr.NoTangent(), np.sum(dy)),
            r"histogram_bin_edges {} returned shape \(\) as the cotangent of argument 1",
        ),
    ],
)
def test_a_users_rule_of_a_library_function_is_checked_inside(pullback, match, engine):
    # the source engine calls such a rule directly, the tape records it as an operation
    # (np.histogram_bin_edges has no rule of the rule set's)
    cr.rrule.register(np.histogram_bin_edges)(lambda x: (np.histogram_bin_edges(x), pullback))
    try:
        with pytest.raises(cr.ChainRulesError, match=match.format(HERE)):
            cr.gradient(lambda x: np.sum(np.histogram_bin_edges(x) * 3.0), np.ones(2), engine=engine)
    finally:
        cr.rrule.unregister(np.histogram_bin_edges)
