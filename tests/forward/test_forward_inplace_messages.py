"""``acc += v`` on a plain NumPy buffer with a value being differentiated is NumPy's write into the
buffer (``np.add(acc, v, out=acc)``): forward mode and the tape refuse it naming the user's line
and saying to write ``acc = acc + v``."""

from __future__ import annotations

import re

import numpy as np
import pytest

import chainrules as cr
from chainrules import forward


def accumulates_in_a_plain_buffer(x):
    acc = np.zeros(3)
    for i in range(1, 3):
        acc += x * i  # the line named
    return np.sum(acc**2)


def accumulates_by_assignment(x):
    acc = np.zeros(3)
    for i in range(1, 3):
        acc = acc + x * i
    return np.sum(acc**2)


@pytest.mark.parametrize("engine", ["forward", "tape"])
def test_augmented_assignment_into_a_plain_buffer_is_refused_with_the_line_and_the_fix(engine):
    x = np.array([0.3, -0.2, 0.9])
    line = accumulates_in_a_plain_buffer.__code__.co_firstlineno + 3
    with pytest.raises(TypeError) as info:
        if engine == "forward":
            forward.jacobian(accumulates_in_a_plain_buffer, x)  # the engine itself
        else:
            cr.gradient(accumulates_in_a_plain_buffer, x, engine="tape")
    message = str(info.value)
    assert f"{__file__}:{line}" in message and "write x = x + v" in message
    expected = cr.gradient(accumulates_by_assignment, x, engine="tape")[0]
    np.testing.assert_allclose(cr.jacobian(accumulates_by_assignment, x, mode="forward"), expected, rtol=1e-12)
    np.testing.assert_allclose(cr.gradient(accumulates_in_a_plain_buffer, x)[0], expected, rtol=1e-12)
    assert re.search(r"writes? (into an array )?in place", message)
    if engine == "forward":  # the API runs it as the source engine's primal, which follows the buffer
        np.testing.assert_allclose(cr.jacobian(accumulates_in_a_plain_buffer, x, mode="forward"), expected, rtol=1e-12)
