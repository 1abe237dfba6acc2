"""Loops inside ``if`` and ``with`` blocks, with ``break``, ``continue`` and ``else``, in functions
with and without other jumps: the source engine normalizes every loop, wherever it sits, so the
value and the gradient are Python's (the tape engine and finite differences are the references)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_vjp


def break_in_a_loop_inside_if(xs, c):
    total = 0.0
    if c > 0:
        for x in xs:
            if x > 2.5:
                break
            total = total + x * c
    return total


def continue_in_a_loop_inside_else(xs, c):
    total = 0.0
    if c < 0:
        total = c
    else:
        for x in xs:
            if x < 1.5:
                continue
            total = total + x * x * c
    return total


def break_in_a_loop_inside_with(xs, c):
    total = 0.0
    with contextlib.nullcontext():
        i = 0
        while i < len(xs):
            if xs[i] > 2.5:
                break
            total = total + xs[i] * c
            i += 1
    return total


FUNCTIONS = [break_in_a_loop_inside_if, continue_in_a_loop_inside_else, break_in_a_loop_inside_with]


@pytest.mark.parametrize("xs", [np.array([1.0, 2.0, 0.5]), np.array([1.0, 3.0, 0.5])], ids=["runs_through", "breaks"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_loops_nested_in_blocks(f, xs):
    y, back = cr.pullback(f, xs, 1.5)
    assert y == f(xs, 1.5)
    dxs, dc = back(1.0)
    np.testing.assert_allclose(dxs, fd_vjp(lambda v: f(v, 1.5), 1.0, xs), rtol=1e-8, atol=1e-10)
    assert dc == pytest.approx(fd_vjp(lambda c: f(xs, c), 1.0, 1.5), rel=1e-8)
    tape = cr.gradient(f, xs, 1.5, engine="tape")
    np.testing.assert_allclose(dxs, tape[0], rtol=1e-12)


def while_else(x):
    i = 0
    acc = 0.0
    while i < 3:
        acc = acc + x[i] ** 2
        i += 1
    else:
        acc = acc * 2.0
    return acc


def for_else_in_a_loop(x):
    acc = 0.0
    for a in x:
        for b in x:
            acc = acc + a * b
        else:
            acc = acc * 0.5 + a
    return acc


def for_else_after_a_break_inside_if(x):
    acc = 0.0
    if x[0] > 0:
        for a in x:
            if a > 2.5:
                break
            acc = acc + a * a
        else:
            acc = acc * 3.0
    return acc


ELSE_FUNCTIONS = [while_else, for_else_in_a_loop, for_else_after_a_break_inside_if]


@pytest.mark.parametrize("x", [np.array([0.5, 0.2, 0.9]), np.array([0.5, 3.0, 0.9])], ids=["runs_through", "breaks"])
@pytest.mark.parametrize("f", ELSE_FUNCTIONS, ids=lambda f: f.__name__)
def test_the_else_of_a_loop_runs_as_in_python(f, x):
    y, back = cr.pullback(f, x)
    assert y == f(x)
    (dx,) = back(1.0)
    np.testing.assert_allclose(dx, fd_vjp(f, 1.0, x), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(dx, cr.gradient(f, x, engine="tape")[0], rtol=1e-12)
