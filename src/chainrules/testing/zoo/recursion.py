"""Zoo family: recursive functions, including seed 003's Babylonian square root."""

from __future__ import annotations

import numpy as np

from . import case


@case(2.0, tags=("recursion", "scalar", "control_flow"))
def babysqrt(x, t=None, n=10):
    """Seed 003: babysqrt(x, t=(1+x)/2, n=10) = t if n == 0 else babysqrt(x, (t + x/t)/2, n - 1).

    Its derivative converges to 1 / (2 sqrt(x)).
    """
    if t is None:
        t = (1 + x) / 2
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


@case(1.3, 5, tags=("recursion", "scalar", "control_flow"))
def recursive_power(x, n):
    """The integer only counts: its gradient is NoTangent."""
    return 1.0 if n == 0 else x * recursive_power(x, n - 1)


@case([0.5, -1.0, 2.0, 0.25], tags=("recursion", "structure", "control_flow"))
def recursive_list_sum(xs):
    if not xs:
        return 0.0
    return xs[0] * xs[0] + recursive_list_sum(xs[1:])


@case(np.array([0.5, -1.0, 2.0, 0.25, 1.5]), tags=("recursion", "array", "control_flow"))
def divide_and_conquer_sum(x):
    if len(x) == 1:
        return x[0] * x[0]
    half = len(x) // 2
    return divide_and_conquer_sum(x[:half]) + np.sin(divide_and_conquer_sum(x[half:]))


def _ping(x, n):
    return x if n == 0 else _pong(x * 1.1, n - 1)


def _pong(x, n):
    return _ping(np.sin(x) + x, n)


@case(0.4, tags=("recursion", "scalar", "control_flow"))
def mutual_recursion(x):
    return _ping(x, 4)


@case(3.0, tags=("recursion", "scalar", "control_flow"))
def newton_sqrt(a, x=1.0):
    """Newton's iteration for sqrt(a), recursing until it converges (a data-dependent depth)."""
    nx = 0.5 * (x + a / x)
    return nx if abs(nx - x) < 1e-12 else newton_sqrt(a, nx)
