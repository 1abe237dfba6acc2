"""Validity of tangents for their primals, tolerances by dtype, and zero detection."""

import dataclasses
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import default_tolerances
from chainrules.testing.checks import is_zero_tangent, primal_tolerance, tangent_problems

NO, ZERO = cr.NoTangent(), cr.ZeroTangent()


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    steps: int


def ok(x, dx, **kw):
    return tangent_problems(x, dx, "dx", **kw) == []


def test_valid_tangents():
    assert ok(1.0, 2.0) and ok(1.0, np.float64(2.0)) and ok(1.0, ZERO) and ok(1.0, NO)
    assert ok(1j, 2.0) and ok(1j, 1 - 1j)
    assert ok(np.ones(2, np.float32), np.ones(2, np.float32))
    assert ok(np.ones(2, np.complex64), np.ones(2, np.complex64))
    assert ok(np.array(1.0), np.float64(2.0))
    assert ok(3, NO) and ok(3, 2.5)  # an integer used arithmetically may get a float
    assert ok(np.arange(3), np.ones(3))
    assert ok(Layer(np.ones(2), 3), cr.Tangent[Layer](w=np.ones(2)))
    assert ok(Layer(np.ones(2), 3), cr.Tangent[Layer](w=np.ones(2), steps=ZERO))
    assert ok((1.0, "a"), cr.Tangent[tuple](2.0, NO))
    assert ok({"a": 1.0}, cr.Tangent[dict]({"a": 3.0}))
    assert ok(math.sin, NO) and ok("s", NO) and ok(True, NO)


def test_invalid_tangents_say_why():
    def why(x, dx, **kw):
        (problem,) = tangent_problems(x, dx, "dx", **kw)
        return problem

    assert "complex tangent" in why(1.0, 1j) and "match_input" in why(1.0, 1j)
    assert "expected a real scalar" in why(1.0, np.ones(1))
    assert "complex tangent (dtype complex128) for a real array" in why(np.ones(2), np.ones(2) * 1j)
    assert "shape (2,)" in why(np.ones(2), np.ones(3))
    assert "got ZeroTangent() for an integer" in why(3, ZERO)
    assert "got ZeroTangent() for a bool" in why(True, ZERO)
    assert "got ZeroTangent() for a function" in why(math.sin, ZERO)
    assert "a string has no derivative" in why("s", 1.0)
    assert "marked nondiff" in why(2.0, 1.0, nondiff=True)
    assert "integer field" in why(Layer(np.ones(2), 3), cr.Tangent[Layer](w=np.ones(2), steps=1.0))
    assert "structural tangent cr.Tangent[tuple]" in why((1.0, 2.0), (1.0, 2.0))
    assert "expected a Tangent[Layer]" in why(Layer(np.ones(2), 3), cr.Tangent[tuple](1.0))
    with pytest.raises(TypeError, match="Layer has no field 'bias'; its fields are w, steps"):
        cr.Tangent[Layer](bias=1.0)  # a tangent with a field its primal lacks cannot be made
    assert "has 1 fields, the primal has 2" in why((1.0, 2.0), cr.Tangent[tuple](1.0))
    assert "dx.w: expected an array of dtype float32" in why(
        Layer(np.ones(2, np.float32), 3), cr.Tangent[Layer](w=np.ones(2))
    )
    # a zero inside a structure is fine whatever the field
    assert ok(Layer(np.ones(2), 3), cr.Tangent[Layer](w=ZERO, steps=ZERO))


def test_thunks_are_validated_by_their_value():
    assert ok(np.ones(2), cr.Thunk(lambda: np.ones(2)))
    assert not ok(np.ones(2), cr.Thunk(lambda: np.ones(3)))


def test_tolerances_follow_the_least_precise_dtype():
    assert default_tolerances(1.0, np.ones(2)) == (1e-9, 1e-9)
    assert default_tolerances(1.0, {"w": np.ones(2, np.float32)}) == (1e-3, 1e-3)
    assert default_tolerances(Layer(np.ones(2, np.float16), 1)) == (5e-2, 5e-2)
    assert default_tolerances(np.ones(2, np.complex64)) == (1e-3, 1e-3)
    assert primal_tolerance(1.0) < 1e-12 < primal_tolerance(np.float32(1.0)) < 1e-3


def test_is_zero_tangent():
    assert is_zero_tangent(ZERO) and is_zero_tangent(0.0) and is_zero_tangent(np.zeros(3))
    assert is_zero_tangent(cr.Tangent[tuple](0.0, NO)) and is_zero_tangent(cr.Thunk(lambda: 0.0))
    assert not is_zero_tangent(cr.Tangent[tuple](0.0, 1.0)) and not is_zero_tangent(np.array([0.0, 1e-30]))
