"""A forward-mode Jacobian inside a function that forward mode differentiates (the Jacobian of a
Jacobian): the inner Jacobian is a dual array, which indexes, slices and reduces like the array it
stands for, also when its value is a block of the basis seed (an elementwise function's diagonal
Jacobian)."""

from __future__ import annotations

import numpy as np

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([1.0, 2.0, -0.5])


def field(v):
    return np.array([[1.0, 0.5, 0.0], [0.0, 2.0, 1.0]]) @ v**3 + np.sin(v[0] * v[1])


def elementwise(v):
    return v**3 + np.sin(v)


def inner_jacobian(m):
    return cr.jacobian(field, m, mode="forward")


def inner_diagonal_jacobian(m):
    return cr.jacobian(elementwise, m, mode="forward")


def test_jacobian_of_a_forward_jacobian():
    for inner, shape in ((inner_jacobian, (2, 3, 3)), (inner_diagonal_jacobian, (3, 3, 3))):
        expected = fd_jacobian(inner, X).reshape(shape)
        np.testing.assert_allclose(cr.jacobian(inner, X, mode="forward"), expected, rtol=1e-6, atol=1e-8)


def test_rows_and_entries_of_an_inner_jacobian():
    def first_row_and_trace(m):
        J, D = inner_jacobian(m), inner_diagonal_jacobian(m)
        return J[0] * D[1, 1] + np.trace(J[:, :2]) * D[2]

    expected = fd_jacobian(first_row_and_trace, X).reshape(3, 3)
    np.testing.assert_allclose(cr.jacobian(first_row_and_trace, X, mode="forward"), expected, rtol=1e-6, atol=1e-8)
