"""A structured input with nothing to differentiate (a tuple of integer settings, a string) has no
derivative at all: ``NoTangent()`` in every mode and engine, as its gradient."""

import numpy as np
import pytest

import chainrules as cr

MODES = [("forward", "source"), ("reverse", "source"), ("reverse", "tape"), ("auto", "source"), ("auto", "tape")]


@pytest.mark.parametrize("mode, engine", MODES)
def test_a_tuple_of_integers_has_no_jacobian(mode, engine):
    assert cr.jacobian(lambda p: p[0] * 2.0, (3, 4), mode=mode, engine=engine) is cr.NoTangent()
    assert cr.gradient(lambda p: p[0] * 2.0, (3, 4), engine=engine) == (cr.NoTangent(),)


@pytest.mark.parametrize("mode, engine", MODES)
def test_each_output_leaf_of_a_structured_output_has_none(mode, engine):
    J = cr.jacobian(lambda p: (p[0] * np.ones(2), "label"), (3, "x"), mode=mode, engine=engine)
    assert J[0] is cr.NoTangent() and J[1] is cr.NoTangent()
