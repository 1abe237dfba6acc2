"""The foundation's rules (operators, math) checked with the project's own testers."""

import math
import operator

import numpy as np
import pytest

from chainrules.testing import nondiff, test_frule, test_rrule, test_scalar

rng = np.random.default_rng(20261122)
BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


def _positive(*shape, dtype=np.float64):
    return (rng.uniform(0.5, 2.0, shape)).astype(dtype)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "a, b",
    [
        (1.3, 0.7),  # floats
        (3, 0.7),  # an int used arithmetically gets a float derivative
        (1.3, 2),
        (_positive(3, 1), _positive(1, 4)),  # broadcasting both ways
        (_positive(3, 4), 1.5),  # array with a scalar
        (2.5, _positive(4)),
        (_positive(2, 3, dtype=np.float32), _positive(2, 3, dtype=np.float32)),
        (_positive(3, dtype=np.float32), np.float32(1.5)),
    ],
    ids=["floats", "int-float", "float-int", "(3,1)x(1,4)", "array-scalar", "scalar-array", "float32", "float32-np"],
)
def test_binary_operators(op, a, b):
    test_rrule(op, a, b)
    test_frule(op, a, b)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv], ids=lambda f: f.__name__)
def test_binary_operators_on_complex_numbers(op):
    test_rrule(op, 1.2 + 0.5j, 0.8 - 0.3j)
    test_frule(op, 1.2 + 0.5j, 0.8 - 0.3j)
    z = (_positive(2, 3) + 1j * _positive(2, 3)).astype(np.complex128)
    test_rrule(op, z, 0.5 - 1.5j)
    test_rrule(op, z, _positive(3))  # a real array meeting a complex one keeps a real cotangent
    test_frule(op, z, z[::-1])


def test_pow_on_complex_numbers():
    test_rrule(operator.pow, 1.2 + 0.5j, 2.0)
    test_rrule(operator.pow, 1.2 + 0.5j, 0.5 - 0.25j)
    test_frule(operator.pow, 1.2 + 0.5j, 0.5 - 0.25j)


def test_pow_at_zero_and_with_integer_arrays():
    test_rrule(operator.pow, 0.0, 2.0)
    test_rrule(operator.pow, _positive(4), np.arange(4))
    test_rrule(operator.pow, np.arange(1, 5), 1.5)  # an int array base used arithmetically


def test_bools_get_no_tangent_and_nondiff_integers_stay_fixed():
    test_rrule(operator.mul, True, 0.7)
    test_rrule(operator.add, np.array([True, False]), _positive(2))
    test_frule(operator.mul, nondiff(3), 0.7)


@pytest.mark.parametrize(
    "x",
    [1.3, -2, _positive(3, 1), _positive(2, dtype=np.float32), 0.5 - 2.0j],
    ids=["float", "int", "array", "float32", "complex"],
)
def test_neg(x):
    test_rrule(operator.neg, x)
    test_frule(operator.neg, x)


def test_neg_as_a_scalar_function():
    test_scalar(operator.neg, 1.3, holomorphic=True)


@pytest.mark.parametrize("f", [math.sin, math.cos, math.exp, math.log], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [0.3, 1.7, 4.0])
def test_math_functions(f, x):
    test_scalar(f, x)


def test_math_functions_at_negative_points():
    for f in (math.sin, math.cos, math.exp):
        test_scalar(f, -2.2)
