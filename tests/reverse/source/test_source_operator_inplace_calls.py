"""The functions of augmented assignment called by name (``operator.imul(z, 2.0)``) change an
array, list or dict in place, as ``z *= 2.0`` does: the source engine refuses them with the line
and what to write (the entry points then take the tape, which follows them), where it had
computed a new value and left the container unchanged, a wrong gradient without warning. On a
number they only compute, and are followed."""

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian


def scale_in_place(x):
    z = x * 1.0
    operator.imul(z, 2.0)
    return np.sum(z * z)


def square_in_place(x):
    z = x * 1.0
    z = operator.imul(z, z)
    return np.sum(z)


def merge_in_place(x):
    d = {"a": x[0]}
    operator.ior(d, {"b": x[1] * x[1]})
    return sum(d.values())


def extend_in_place(x):
    items = [x[0], 2.0]
    operator.iadd(items, [x[1] * x[1]])
    return sum(items)


def on_a_number(x):
    y = operator.imul(x[0], 2.0)
    return y * x[1]


X = np.array([0.9, 0.4, 1.7])


IN_PLACE = [scale_in_place, square_in_place, merge_in_place, extend_in_place]


@pytest.mark.parametrize("f", IN_PLACE, ids=lambda f: f.__name__)
def test_an_in_place_operator_call_on_a_container(f):
    with pytest.raises(cr.UnsupportedSyntaxError, match=r"changes `\w+` in place.*write `x = x"):
        pullback_full(f, X.copy())
    x = X.copy()
    np.testing.assert_allclose(cr.gradient(f, x)[0], fd_jacobian(f, X)[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(x, X)


def test_an_in_place_operator_call_on_the_argument_is_refused_by_both_engines():
    def f(x):
        operator.imul(x, 2.0)
        return np.sum(x * x)

    x = X.copy()
    with pytest.raises(cr.ChainRulesError, match="operator.imul"):
        cr.gradient(f, x)
    np.testing.assert_array_equal(x, X)  # the caller's array is unchanged


def test_an_in_place_operator_call_on_a_number_is_followed():
    np.testing.assert_allclose(pullback_full(on_a_number, X)[1](1.0)[1], [0.8, 1.8, 0.0])
