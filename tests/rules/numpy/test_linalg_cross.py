"""NumPy 2's ``np.linalg.cross``: its rules compute with the function itself, so its checks hold."""

import numpy as np
import pytest

import chainrules as cr

A2, B2 = np.array([1.0, 2.0]), np.array([3.0, 4.0])


def test_two_vectors_are_refused_as_numpy_refuses_them():
    with pytest.raises(ValueError) as numpy_error:
        np.linalg.cross(A2, B2)
    with pytest.raises(ValueError, match="3-dimensional vectors") as rule_error:
        cr.rrule(np.linalg.cross, A2, B2)
    assert str(rule_error.value) == str(numpy_error.value)
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        cr.frule((cr.NoTangent(), A2, B2), np.linalg.cross, A2, B2)


def test_the_axis_keyword_and_a_batch_of_cotangents(batched_pullback):
    a, b = np.random.default_rng(2).standard_normal((2, 3, 4))
    y, back = cr.rrule(np.linalg.cross, a, b, axis=0)
    np.testing.assert_array_equal(y, np.linalg.cross(a, b, axis=0))
    batched_pullback(np.linalg.cross, a, b, kwargs={"axis": 0})
