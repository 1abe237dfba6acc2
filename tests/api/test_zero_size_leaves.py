"""A structured input or output holding an array of size 0 has a Jacobian with empty blocks for
it, in every mode and engine."""

import numpy as np
import pytest

import chainrules as cr

MODES = [("forward", "source"), ("reverse", "source"), ("reverse", "tape"), ("auto", "source"), ("auto", "tape")]


def total(p):
    return np.sum(p["a"]) + np.sum(p["b"] ** 2)


@pytest.mark.parametrize("mode, engine", MODES)
def test_an_empty_array_in_a_structured_input(mode, engine):
    J = cr.jacobian(total, {"a": np.zeros(0), "b": np.array([1.0, 2.0])}, mode=mode, engine=engine)
    assert J["a"].shape == (0,)
    np.testing.assert_array_equal(J["b"], [2.0, 4.0])


@pytest.mark.parametrize("mode, engine", MODES)
def test_an_empty_output_beside_a_structured_input(mode, engine):
    J = cr.jacobian(lambda p: (p[0][:0], p[0] * p[1]), (np.array([1.0, 2.0]), 3.0), mode=mode, engine=engine)
    assert [np.shape(block) for block in J[0]] == [(0, 2), (0,)]
    np.testing.assert_array_equal(J[1][0], 3.0 * np.eye(2))
