"""``functools.partial``: calling one differentiates its function with the stored arguments, and
the partial's own tangent (``Tangent[functools.partial]``) carries their cotangents back to where
the partial was made."""

import functools
import pathlib

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import check_grads

HERE = str(pathlib.Path(__file__).resolve())


def mul(a, b):
    return a * b


def scaled(a, b, *, scale):
    return a * b * scale


def scaled_by(a, b, scale):
    return a * b * scale


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_the_gradient_of_a_partial(engine):
    assert cr.gradient(functools.partial(lambda a, b: a * b, 3.0), 2.0, engine=engine) == (3.0,)
    assert cr.gradient(functools.partial(mul, b=4.0), 2.0, engine=engine) == (4.0,)
    x = np.array([1.0, 2.0])
    (dx,) = cr.gradient(functools.partial(np.dot, x), np.array([3.0, 5.0]), engine=engine)
    assert np.array_equal(dx, x)


def test_the_tangent_of_a_partial_holds_the_cotangents_of_its_stored_arguments():
    y, back = pullback_full(functools.partial(mul, 3.0), 2.0)
    dp, dx = back(1.0)
    assert y == 6.0 and dx == 3.0
    assert isinstance(dp, cr.Tangent[functools.partial]) and dp.args == cr.Tangent[tuple](2.0)
    dp, _ = pullback_full(functools.partial(mul, b=3.0), 2.0)[1](1.0)
    assert dp.keywords == cr.Tangent[dict]({"b": 2.0})  # a keyword passed positionally to get it
    dp, _ = pullback_full(functools.partial(np.sum, axis=0), np.ones(3))[1](1.0)
    assert dp == cr.NoTangent()


def made_inside(x, y):
    g = functools.partial(mul, x)
    return g(y) + g(2.0) * x


def partial_of_partial(x, y):
    g = functools.partial(functools.partial(scaled_by, x, scale=2.0), y)
    return g() * x


def applied(x, p):
    return p(x) * x


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_partial_made_inside_the_function_against_finite_differences(engine):
    check_grads(made_inside, (1.5, 4.0), modes=("reverse",), order=1, engine=engine)
    assert cr.gradient(made_inside, 1.5, 4.0, engine=engine) == pytest.approx((10.0, 1.5))


def test_a_partial_of_a_partial_is_flattened_and_still_differentiated():
    assert cr.gradient(partial_of_partial, 1.5, 4.0) == pytest.approx((24.0, 4.5))


def test_a_partial_passed_as_an_argument_gets_its_tangent():
    dx, dp = cr.gradient(applied, 2.0, functools.partial(mul, 3.0))
    assert dx == 12.0 and dp.args == cr.Tangent[tuple](4.0)
    dx = cr.gradient(applied, 2.0, functools.partial(np.multiply, 3.0), argnums=0)
    assert dx == 12.0


def keyword_only(x):
    g = functools.partial(scaled, scale=2.0)
    return g(x, 3.0)  # <- keyword-only number


def test_a_stored_keyword_only_number_is_refused_loudly():
    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(keyword_only, 1.5)
    assert cr.gradient(keyword_only, 1.5) == (6.0,)  # the entry points take the tape, which follows the call
    message = str(info.value)
    assert "functools.partial" in message and "'scale'" in message and "positional" in message
    line = next(i for i, text in enumerate(open(HERE), 1) if "<- keyword-only number" in text)
    assert f"{HERE}:{line}" in message
    # a constant option (an integer, a string) is fine as a keyword
    assert cr.gradient(lambda x: functools.partial(np.sum, axis=0)(x * x), np.ones(2))[0].tolist() == [2.0, 2.0]
