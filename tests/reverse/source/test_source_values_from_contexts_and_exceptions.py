"""Values that reach the function through a context manager's ``__enter__`` (``with cm(x) as s``)
or an exception (``except Found as e: e.args[0]``): the source engine cannot differentiate how
they were made, so it refuses them (the entry points take the tape), where it had taken them for
constants (zero or half gradients)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source


def entered(x):
    with contextlib.nullcontext(x * x) as s:
        y = s * 3.0
    return y


class Found(Exception):
    pass


def search(t):
    for _ in range(5):
        t = t * 1.5
        if t > 4.0:
            raise Found(t)
    return t


def caught(x):
    try:
        return search(x)
    except Found as e:
        return e.args[0] * x


@pytest.mark.parametrize("f", [entered, caught])
def test_the_source_engine_refuses_and_the_gradient_is_the_tapes(f):
    with pytest.raises((cr.NoRuleError, cr.UnsupportedSyntaxError)):
        source.pullback_full(f, 1.5)
    h = 1e-6
    assert cr.gradient(f, 1.5)[0] == pytest.approx((f(1.5 + h) - f(1.5 - h)) / (2 * h), rel=1e-6)


def test_contexts_and_exceptions_that_carry_no_derivative_stay_with_the_source_engine():
    def guarded(x):
        with np.errstate(all="ignore") as state:  # (a context of constants)
            y = x * 2.0
        try:
            if y > 100.0:
                raise ValueError("too large")
        except ValueError as err:
            print(err)
        return y * x + len(str(state))

    y, back = source.pullback_full(guarded, 1.5)
    assert back(1.0)[1] == pytest.approx(6.0)
