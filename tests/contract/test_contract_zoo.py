"""The contract's invariants on every function of the shared zoo, on every engine.

For each case an engine either refuses clearly (``NoRuleError``, ``UnsupportedSyntaxError``, or
a ``TypeError`` that says how to fix the call, each naming a file:line) or its pullback:
returns one cotangent per positional argument, unthunked; can be called again with another
cotangent without changing an earlier result; and never writes into the user's arguments or
cotangents. Forward mode likewise: ``cr.jvp`` gives the plain call's value, an unthunked tangent,
and leaves the arguments and tangents alone. (Values are checked against finite differences by
the engines' own zoo tests.)
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from contract_support import REVERSE_ENGINES, leaked_internal_types, same_values

import chainrules as cr
import chainrules.testing as crt
from chainrules.testing.zoo import cases

PARAMS = [pytest.param(engine, case, id=f"{engine}-{case.name}") for engine in REVERSE_ENGINES for case in cases()]


def _vector(t) -> np.ndarray:
    return crt.to_vec(t)[0]


@pytest.mark.parametrize("engine, case", PARAMS)
def test_pullback_invariants_on_the_zoo(engine, case):
    args_before = copy.deepcopy(case.args)
    try:
        y, back = cr.pullback(case.f, *case.args, engine=engine, **case.kwargs)
        rng = np.random.default_rng(len(case.name))
        dy1, dy2 = crt.rand_tangent(y, rng), crt.rand_tangent(y, rng)
        dy1_before, dy2_before = copy.deepcopy(dy1), copy.deepcopy(dy2)
        first = back(dy1)
    except (cr.NoRuleError, cr.UnsupportedSyntaxError, TypeError) as refusal:
        assert re.search(r"\.py:\d+", str(refusal)), f"a refusal must name the user's file:line: {refusal}"
        assert same_values(case.args, args_before)
        return
    first_copy = copy.deepcopy(first)
    second = back(dy2)
    third = back(dy1)

    assert isinstance(first, tuple) and len(first) == len(case.args)
    assert leaked_internal_types(first) == [] and leaked_internal_types(second) == []
    assert same_values(case.args, args_before), "the engine wrote into an argument"
    assert same_values(dy1, dy1_before) and same_values(dy2, dy2_before), "the engine wrote into a cotangent"
    np.testing.assert_array_equal(_vector(first), _vector(first_copy), err_msg="a later call changed a result")
    np.testing.assert_allclose(_vector(third), _vector(first), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_jvp_invariants_on_the_zoo(case):
    args_before = copy.deepcopy(case.args)
    rng = np.random.default_rng(len(case.name))
    tangents = tuple(crt.rand_tangent(a, rng) for a in case.args)
    tangents_before = copy.deepcopy(tangents)
    try:
        y, dy = cr.jvp(lambda *args: case.f(*args, **case.kwargs), tuple(case.args), tangents)
    except (cr.NoRuleError, cr.UnsupportedSyntaxError, TypeError) as refusal:
        assert re.search(r"\.py:\d+", str(refusal)), f"a refusal must name the user's file:line: {refusal}"
        assert same_values(case.args, args_before)
        return
    assert leaked_internal_types(dy) == []
    assert same_values(case.args, args_before), "the engine wrote into an argument"
    assert same_values(tangents, tangents_before), "the engine wrote into a tangent"
    expected = case.f(*copy.deepcopy(case.args), **case.kwargs)
    np.testing.assert_allclose(_vector(y), _vector(expected), rtol=1e-12)
