"""``x.astype(dtype, order=..., casting=..., copy=...)`` of an array being differentiated twice
(forward over forward, a Hessian): the method goes through its NumPy twin, which takes its
keywords as the method does (``np.astype`` itself takes no order or casting)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

X = np.array([0.5, 1.0, -2.0])


def cube_in_fortran_order(x):
    A = np.outer(x, x).astype(np.float64, order="F")
    assert A.flags.f_contiguous and not A.flags.c_contiguous  # the layout asked for, as NumPy gives it
    B = A.T.astype(np.float64, order="A", copy=False)
    assert B.flags.c_contiguous
    return np.sum(A**3) + np.sum(A * B[0])


def second_directional_derivative(f, x, v):
    return cr.jvp(lambda x: cr.jvp(f, (x,), (v,))[1], (x,), (v,))[1]


def test_forward_over_forward_takes_astypes_keywords():
    v = np.array([1.0, -0.5, 2.0])
    H = cr.hessian(cube_in_fortran_order, X)
    np.testing.assert_allclose(second_directional_derivative(cube_in_fortran_order, X, v), v @ H @ v, rtol=1e-12)
    h = 1e-5
    fd = np.array([(cr.gradient(cube_in_fortran_order, X + h * e)[0] - cr.gradient(cube_in_fortran_order, X - h * e)[0])
                   / (2 * h) for e in np.eye(3)])  # fmt: skip
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-6)


def test_a_cast_numpy_refuses_is_refused_the_same_way():
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        X.astype(np.float32, casting="safe")
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        second_directional_derivative(lambda x: np.sum(x.astype(np.float32, casting="safe")), X, np.ones(3))
