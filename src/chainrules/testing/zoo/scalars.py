"""Zoo family: functions of Python floats (and ints), with branches and loops on their values.

They use NumPy's functions (``np.sin``), which every engine can see. The few that call the
``math`` module carry the tag ``math``: an engine that runs them on tracked values (the tape)
must refuse them with a clear error instead of dropping the derivative.
"""

from __future__ import annotations

import math

import numpy as np

from . import case

# ----- straight-line -----------------------------------------------------------------------


@case(2.0, 3.0, tags=("scalar",))
def seed_quotient(a, b):
    """Seed 001: f(a, b) = a / (a + b*b); at (2, 3) the gradient is (0.0744, -0.0992)."""
    return a / (a + b * b)


@case(0.9, tags=("scalar",))
def sin_of_cos(x):
    """Seed 001: sin(cos(x)); its derivative at 0.9 is -0.6368."""
    return np.sin(np.cos(x))


def _square(x):
    return x**2


def _five_times(x):
    return 5 * x


@case(1.3, tags=("scalar",))
def seed_foo(x):
    """Seed 003: foo(x) = h(g(f(x))) with f = x^2, g = sin, h = 5x, through user functions."""
    return _five_times(np.sin(_square(x)))


@case(1.7, tags=("scalar",))
def cubic(x):
    return 3 * x**3 - 2 * x**2 + x - 7


@case(2.0, 0.5, tags=("scalar",))
def rational(x, y):
    return (x * y + 1) / (x - y * y)


@case(0.3, tags=("scalar",))
def softplus(x):
    return np.log(1 + np.exp(x))


@case(0.7, tags=("scalar",))
def logistic(x):
    return 1 / (1 + np.exp(-x))


@case(1.5, 2.5, tags=("scalar",))
def power_of_variables(x, y):
    return x**y + y**0.5


@case(1.0, 3.0, tags=("scalar",))
def abs_of_difference(x, y):
    return abs(x - y) * x


@case(1.2, -0.4, tags=("scalar",))
def max_times_min(a, b):
    return max(a, b) * min(a, b) + max(a * a, b)


def _helper(a):
    return a * a + 1.0


@case(0.8, tags=("scalar",))
def nested_helpers(x):
    return _helper(_helper(x) - x)


@case(0.5, 1.5, tags=("scalar",))
def reused_intermediates(x, y):
    t = x * y
    u = t + x
    return u * t - u / y + t * t


@case(1.0 + 2.0j, tags=("scalar", "complex"))
def abs2_of_complex(z):
    """|z|^2 = z * conj(z): its gradient at 1+2j is 2+4j (ChainRules' convention)."""
    return np.real(z * np.conj(z))


# ----- integers used as numbers --------------------------------------------------------------


@case(1.3, 3, tags=("scalar", "int"))
def power_by_int(x, n):
    """An integer exponent gets a float derivative (x^n log x)."""
    return x**n


@case(4, 0.5, tags=("scalar", "int"))
def int_times_float(n, x):
    return n * x + n * n


# ----- data-dependent branches and loops -----------------------------------------------------


@case(1.5, tags=("scalar", "control_flow"), name="piecewise_upper")
@case(0.5, tags=("scalar", "control_flow"), name="piecewise_lower")
def piecewise(x):
    if x > 1.0:
        return x * x
    return 2.0 * x - 1.0


@case(37.0, tags=("scalar", "control_flow"))
def halve_until_small(x):
    """The trip count depends on x; the derivative is the product of the halvings taken."""
    steps = 0
    while x > 1.0:
        x = x / 2.0
        steps += 1
    return x * steps


@case(0.6, tags=("scalar", "control_flow"))
def horner_loop(x):
    y = 0.0
    for c in (1.0, -2.0, 0.5, 3.0):
        y = y * x + c
    return y


@case(0.4, tags=("scalar", "control_flow"))
def sine_chain(x):
    """The per-operation benchmark's chain, 100 steps."""
    for _ in range(100):
        x = np.sin(x) * 1.01 + 0.1
    return x


@case(2.0, 0.1, tags=("scalar", "control_flow"))
def early_return_in_loop(x, y):
    total = 0.0
    for i in range(10):
        total = total + x * i - y
        if total > 20.0:
            return total * y
    return total


@case(0.3, 0.9, tags=("scalar", "control_flow"))
def branch_on_comparison_of_two(a, b):
    if a * b > 0.25:
        return np.exp(a) - b
    elif a < b:
        return np.sin(a * b)
    else:
        return a - b


# ----- the math module: tracked values must not silently turn into floats -----------------------


@case(0.5, tags=("scalar", "math"))
def math_sine(x):
    return math.sin(x) * x


@case(2.0, tags=("scalar", "math"))
def math_exp_log(x):
    return math.log(x) + math.exp(x / 2)
