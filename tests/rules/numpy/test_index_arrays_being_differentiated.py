"""An integer array that indexes: differentiated as an argument of its own (indexing has no
derivative in its index: its Jacobian is zero), a setting inside a structure."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

w = np.array([1.0, 2.0, 3.0])
index = np.array([0, 2])


def squares_read(p):
    weights, positions = p
    return np.sum(weights[positions] ** 2)


def entries_read(p):
    weights, positions = p
    return weights[positions, None] * 2.0


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_jacobian_of_a_structure_holding_an_index_array(mode):
    J = cr.jacobian(entries_read, (w, index), mode=mode)
    np.testing.assert_array_equal(J[0], [[[2.0, 0.0, 0.0]], [[0.0, 0.0, 2.0]]])
    assert J[1] == cr.NoTangent()  # the index is a setting of the structure


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_hessian_of_a_structure_holding_an_index_array(engine):
    H = cr.hessian(squares_read, (w, index), engine=engine)
    np.testing.assert_array_equal(H[0][0], np.diag([2.0, 0.0, 2.0]))
    assert H[0][1] == cr.NoTangent() and H[1] == cr.NoTangent()  # the index is a setting of the structure


def test_forward_jacobian_in_the_index_array_itself():
    np.testing.assert_array_equal(cr.jacobian(lambda i: w[i] * 2.0, index, mode="forward"), np.zeros((2, 2)))
