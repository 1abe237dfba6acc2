"""Second derivatives through the source engine of functions that unpack an array into its rows.

Under forward over reverse (a Hessian) or a tape over the source engine, the array being
unpacked is the outer engine's value; the cotangent of ``a, b, c = P``, ``first, *rest = P`` or
``zip(*P)`` is still an array, stacked from the rows' cotangents, not a list of them.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

P = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.1]])


def named_rows(P):
    a, b, c = P
    return np.sum(a * b * c)


def starred_rows(P):
    first, *rest = P
    return np.sum(first**2) * len(rest) + sum(np.sum(r**3) for r in rest)


def zipped_columns(P):
    xs, ys = zip(*P)
    return sum(xs) * sum(ys) ** 2


def packed_display(P):
    rows = [*P, P[0] * 2.0]
    return np.sum(rows[0] * rows[3]) + np.sum(rows[1] ** 3)


FUNCTIONS = [named_rows, starred_rows, zipped_columns, packed_display]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hessian_of_a_function_unpacking_rows(f):
    H = cr.hessian(f, P)
    assert isinstance(H, np.ndarray) and H.shape == P.shape * 2
    expected = fd_jacobian(lambda z: cr.gradient(f, z)[0], P).reshape(H.shape)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_tape_over_source_of_a_function_unpacking_rows(f):
    W = np.arange(P.size, dtype=float).reshape(P.shape) / 5.0

    def weighted_slope(z):
        return np.sum(cr.gradient(f, z)[0] * W)

    expected = fd_jacobian(weighted_slope, P).reshape(P.shape)
    np.testing.assert_allclose(cr.gradient(weighted_slope, P, engine="tape")[0], expected, rtol=1e-6, atol=1e-8)
