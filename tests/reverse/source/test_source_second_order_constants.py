"""Second derivatives through the source engine of functions that read a constant array.

An array that a helper receives (or a closure captures) is differentiated like any argument; in
a Hessian its cotangents are dual numbers (forward over reverse) or an outer tape's values,
which a plain array of zeros cannot hold. Indexing it (``c[0]``), unpacking it (``a, b = c``)
and looping over it (``for ci in c``) each scatter such cotangents out of place.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

COEFFS = np.array([1.0, 2.0, 3.0])


def indexed(x, c):
    return c[0] * x**3 + c[2] * x


def unpacked(x, c):
    a, b, d = c
    return a * x**3 + b * d * x * x


def looped(x, c):
    total = 0.0
    for ci in c:
        total = total + ci * x**3
    return total


def horner(c, x):
    if len(c) == 1:
        return c[0]
    return c[0] + x * horner(c[1:], x)


HELPERS = {"indexed": indexed, "unpacked": unpacked, "looped": looped, "horner": lambda x, c: horner(c, x)}


@pytest.mark.parametrize("helper", HELPERS.values(), ids=HELPERS.keys())
def test_hessian_of_a_helper_reading_a_constant_array(helper):
    def f(x):
        return helper(x, COEFFS)

    expected = fd_jacobian(lambda x: cr.gradient(f, x)[0], 0.7)[0, 0]
    assert cr.hessian(f, 0.7) == pytest.approx(expected, rel=1e-7)
    assert cr.hessian(f, 0.7, engine="tape") == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("helper", HELPERS.values(), ids=HELPERS.keys())
def test_tape_over_source_of_a_helper_reading_a_constant_array(helper):
    def slope(x):
        return cr.gradient(lambda y: helper(y, COEFFS), x)[0]

    expected = fd_jacobian(slope, 0.7)[0, 0]
    assert cr.gradient(slope, 0.7, engine="tape")[0] == pytest.approx(expected, rel=1e-7)
    assert cr.gradient(slope, 0.7)[0] == pytest.approx(expected, rel=1e-7)


def test_hessian_of_a_function_indexing_a_constant_matrix_argument():
    M = np.array([[1.0, 2.0], [3.0, 4.0]])

    def quad(x, M):
        return M[0, 1] * x[0] ** 2 * x[1] + M[1, 0] * np.sum(x**3)

    x = np.array([0.5, -1.5])
    expected = fd_jacobian(lambda z: cr.gradient(lambda v: quad(v, M), z)[0], x)
    np.testing.assert_allclose(cr.hessian(lambda v: quad(v, M), x), expected, rtol=1e-7, atol=1e-9)
