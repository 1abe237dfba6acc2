"""An array of objects made from values being differentiated (``x.astype(object)``,
``np.astype(x, object)``, ``np.asarray(x, dtype=object)``): the source engine differentiates the
arithmetic NumPy does on its Python numbers; the tape and forward mode, which carry derivatives in
arrays of floating-point numbers, refuse it at the user's line (it had given a zero derivative),
while a conversion to text or to booleans carries no derivative and passes."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([0.3, 1.7, -0.4])


def by_method(x):
    return np.sum(x.astype(object) ** 2 * np.array([1.0, 2.0, 3.0]))


def by_function(x):
    return np.sum(np.astype(x, object) * x)


def by_asarray(x):
    return np.sum(np.asarray(x, dtype=object) ** 3)


PROGRAMS = [by_method, by_function, by_asarray]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_the_source_engine_differentiates_an_array_of_objects(f):
    np.testing.assert_allclose(cr.gradient(f, X, engine="source")[0], fd_jacobian(f, X).ravel(), rtol=1e-6)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_the_tape_and_forward_mode_refuse_it_at_the_users_line(f):
    with pytest.raises(cr.DroppedDerivativeError, match="test_object_arrays.py"):
        cr.gradient(f, X, engine="tape")
    with pytest.raises(cr.DroppedDerivativeError, match="test_object_arrays.py"):
        cr.jacobian(f, X, mode="forward")
    with pytest.raises(cr.DroppedDerivativeError, match="array of objects"):
        cr.hessian(f, X)


def test_conversions_to_text_and_booleans_carry_no_derivative_and_pass():
    def f(x):
        label = x.astype(str)[0]  # (formatting for a log)
        return np.sum(x**2 * x.astype(bool)) + len(label)

    expected = 2 * X
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(f, X, engine=engine)[0], expected)
    np.testing.assert_allclose(cr.jacobian(f, X, mode="forward"), expected)
