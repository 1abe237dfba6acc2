"""``gradient`` and ``hessian`` need a real scalar output; where they get something else, they say
what they got, the same whether the output is plain or an engine's value (a Hessian's forward
pass runs the function on dual numbers)."""

import numpy as np
import pytest

import chainrules as cr


def squared(z):
    return z * z


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("entry", [cr.gradient, cr.hessian], ids=["gradient", "hessian"])
def test_a_complex_output_is_named_complex(entry, engine):
    with pytest.raises(cr.ChainRulesError, match="needs squared to return a real scalar, got complex;"):
        entry(squared, 1 + 2j, engine=engine)


@pytest.mark.parametrize("entry", [cr.gradient, cr.hessian], ids=["gradient", "hessian"])
def test_an_array_output_is_named_with_its_shape(entry):
    with pytest.raises(cr.ChainRulesError, match=r"got (ndarray|an array) of shape \(2,\)"):
        entry(squared, np.ones(2))
