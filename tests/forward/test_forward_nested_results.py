"""Nested forward mode: a derivative computed inside the function that is zero, and a buffer of the
inner differentiation written with the outer one's dual numbers."""

import numpy as np
import pytest

import chainrules as cr


def test_a_nested_derivative_that_is_zero_everywhere_gives_a_zero():
    # the inner derivative is ZeroTangent(), so the outer function returns a zero: its derivative is
    # zero too, not NoTangent() ("no derivative exists")
    d = cr.derivative(lambda x: cr.derivative(lambda z: x * x, 1.0) * x, 0.7)
    assert isinstance(d, cr.ZeroTangent)
    assert isinstance(cr.jvp(lambda x: cr.derivative(lambda z: 3.0, x), (0.7,), (1.0,))[1], cr.ZeroTangent)


def _square_into_a_buffer(x):
    out = np.zeros_like(x)
    out[0] = x[0] ** 2
    return out.sum()


def test_forward_over_forward_writes_a_dual_into_a_buffer():
    # the inner buffer's tangents are the outer differentiation's values: an outer buffer holds them
    second = cr.derivative(lambda a: cr.derivative(lambda b: _square_into_a_buffer(np.stack([b, 1.0])), a), 0.3)
    assert second == pytest.approx(2.0, rel=1e-14)
