"""Generator expressions in the source engine: it follows one where its values are consumed at
once (by a call, or an unpacking), as a list of them; elsewhere Python computes the values as they
are consumed, which a list would not follow (a variable rebound before, a second pass that finds
the generator spent), so the source engine refuses it and the API differentiates on the tape."""

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.errors import UnsupportedSyntaxError
from chainrules.reverse.source import pullback_full
from chainrules.testing import fd_jacobian


def consumed_by_calls(x):
    total = sum(v * v for v in x) + max((v for v in x), key=abs)
    return total + sum(sum(a * b for b in x) for a in x) + np.sum(np.stack(tuple(2.0 * v for v in x)))


def unpacked(x):
    a, b = (v * 2.0 for v in x[:2])
    return a * b + x[2]


@pytest.mark.parametrize("f", [consumed_by_calls, unpacked])
def test_a_generator_consumed_at_once_is_followed(f):
    x = np.array([0.5, -2.0, 1.5])
    y, back = pullback_full(f, x)  # the source engine itself
    assert y == pytest.approx(f(x), rel=1e-14)
    grad = cr.unthunk(back(1.0)[1])
    np.testing.assert_allclose(grad, fd_jacobian(f, x).reshape(-1), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], grad, rtol=1e-13)


def rebound_before_it_is_consumed(x):
    k = 1.0
    scaled = (x * k for _ in range(1))
    k = 2.0  # read when `sum` consumes the generator
    return sum(scaled)


def consumed_twice(x):
    squares = (v * v for v in [x])
    return sum(squares) + sum(squares)  # the second pass finds it spent: 0


@pytest.mark.parametrize("f, value, slope", [(rebound_before_it_is_consumed, 6.0, 2.0), (consumed_twice, 9.0, 6.0)])
def test_a_generator_consumed_later_is_refused_and_differentiated_on_the_tape(f, value, slope):
    with pytest.raises(UnsupportedSyntaxError, match="generator expression") as refusal:
        pullback_full(f, 3.0)
    assert "test_source_generators.py" in str(refusal.value)
    assert f(3.0) == value
    assert cr.value_and_gradient(f, 3.0) == (value, (slope,))
    assert cr.derivative(f, 3.0) == slope
