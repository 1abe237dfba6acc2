"""A rule whose pullback returns the wrong number of cotangents, or a cotangent unlike its argument
(a number for an array, another shape, None), is named in a ChainRulesError at the entry points,
rather than handed to the user as a gradient."""

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
