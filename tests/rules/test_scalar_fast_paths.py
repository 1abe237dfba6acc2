"""The scalar fast paths of the arithmetic and elementwise rules give what their general paths give.

Python reals and NumPy float64 scalars (``np.sin(x)`` and ``X[i]`` return them) take paths that
skip NumPy's array machinery; every cotangent must still have its input's type (a ``float`` for
a Python number, an ``np.float64`` for a NumPy scalar) and the general path's value, for every
kind of cotangent a pullback may receive.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import match_input
from chainrules.testing import test_rrule

F64 = np.float64
OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv]
SCALARS = [
    (F64(1.5), F64(-0.75)),
    (1.5, F64(-0.75)),
    (F64(1.5), -0.75),
    (3, F64(-0.75)),
    (F64(1.5), 2),
]
#: cotangents a pullback may receive: Python and NumPy floats, complex (the real part counts),
#: a 0-d array, a thunk, and zeros
SEEDS = [2.0, F64(2.0), 2.0 + 1.0j, np.array(2.0), cr.Thunk(lambda: 2.0), cr.ZeroTangent()]


def reference_cotangents(op, a, b, dy):
    """The cotangents of the general (array) formulas, brought back with ``match_input``."""
    dy = cr.unthunk(dy)
    if isinstance(dy, cr.AbstractZero):
        return dy, dy
    if op is operator.add:
        da, db = dy, dy
    elif op is operator.sub:
        da, db = dy, -dy
    elif op is operator.mul:
        da, db = dy * b, a * dy
    else:
        da = dy / b
        db = -da * (a / b)
    return match_input(a, da), match_input(b, db)


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("a, b", SCALARS)
@pytest.mark.parametrize("dy", SEEDS, ids=["float", "f64", "complex", "0d", "thunk", "zero"])
def test_operator_on_float64_matches_general_path(op, a, b, dy):
    y, back = cr.rrule(op, a, b)
    assert type(y) is type(op(a, b)) and y == op(a, b)
    df, da, db = back(dy)
    ra, rb = reference_cotangents(op, a, b, dy)
    assert df == cr.NoTangent()
    for got, want, x in ((da, ra, a), (db, rb, b)):
        assert type(got) is type(want)
        if not isinstance(want, cr.AbstractZero):
            assert type(got) is (F64 if type(x) is F64 else float)
            assert got == want


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("a, b", SCALARS[:3])
def test_operator_on_float64_passes_test_rrule(op, a, b):
    test_rrule(op, a, b)


UNARY = [np.sin, np.exp, np.tanh, np.sqrt, np.log, np.negative, np.sinc, np.square]


@pytest.mark.parametrize("f", UNARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [0.7, F64(0.7)], ids=["float", "f64"])
@pytest.mark.parametrize("dy", SEEDS, ids=["float", "f64", "complex", "0d", "thunk", "zero"])
def test_unary_ufunc_on_scalar_matches_general_path(f, x, dy):
    y, back = cr.rrule(f, x)
    assert y == f(x)
    _, dx = back(dy)
    # the general path: the same rule on a 0-d array, whose cotangent is then brought to x
    _, general = cr.rrule(f, np.asarray(x))
    _, dx_general = general(cr.unthunk(dy) if not isinstance(dy, cr.AbstractZero) else dy)
    if isinstance(dx_general, cr.AbstractZero):
        assert isinstance(dx, cr.AbstractZero)
        return
    assert type(dx) is type(x)
    assert dx == pytest.approx(float(dx_general), rel=1e-15)


@pytest.mark.parametrize("f", UNARY, ids=lambda f: f.__name__)
def test_unary_ufunc_on_float64_passes_test_rrule(f):
    test_rrule(f, F64(0.7))
    test_rrule(f, 0.7)


def test_unary_ufunc_keywords_and_arrays_still_take_the_general_path():
    y, back = cr.rrule(np.sin, F64(0.5), dtype=np.float32)
    assert y.dtype == np.float32
    assert back(1.0)[1] == pytest.approx(np.cos(0.5))
    y, back = cr.rrule(np.sin, np.array([0.5, 1.0]))
    np.testing.assert_allclose(back(np.ones(2))[1], np.cos([0.5, 1.0]))


F32 = np.float32
#: NumPy float32 scalars (what ``np.sum`` of a float32 array gives) among Python and float64 reals
SCALARS_F32 = [(F32(1.5), F32(-0.75)), (1.5, F32(-0.75)), (F32(1.5), 2), (F32(1.5), F64(-0.75))]
SEEDS_F32 = [2.0, F32(2.0), F64(2.0), 2.0 + 1.0j, np.array(2.0, dtype=F32), cr.Thunk(lambda: F32(2.0))]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("a, b", SCALARS_F32)
@pytest.mark.parametrize("dy", SEEDS_F32, ids=["float", "f32", "f64", "complex", "0d", "thunk"])
def test_operator_on_float32_matches_general_path(op, a, b, dy):
    y, back = cr.rrule(op, a, b)
    assert type(y) is type(op(a, b)) and y == op(a, b)
    df, da, db = back(dy)
    ra, rb = reference_cotangents(op, a, b, dy)
    for got, want, x in ((da, ra, a), (db, rb, b)):
        assert type(got) is type(want) is (type(x) if isinstance(x, np.floating) else float)
        assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("x", [F32(1.5), F64(1.5), np.float16(1.5)], ids=["f32", "f64", "f16"])
@pytest.mark.parametrize("dy", SEEDS_F32, ids=["float", "f32", "f64", "complex", "0d", "thunk"])
def test_negation_of_a_numpy_scalar_keeps_its_type(x, dy):
    y, back = cr.rrule(operator.neg, x)
    assert type(y) is type(x) and y == -x
    _, dx = back(dy)
    assert type(dx) is type(x)
    assert dx == type(x)(-np.real(cr.unthunk(dy)))


@pytest.mark.parametrize("op", [*OPERATORS, operator.neg], ids=lambda op: op.__name__)
def test_operator_on_float32_passes_test_rrule(op):
    args = (F32(1.5),) if op is operator.neg else (F32(1.5), F32(-0.75))
    test_rrule(op, *args, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("a, b", [(2, 3), (2.0, 3), (2.5, -1.5)])
def test_a_python_real_operations_pullback_keeps_a_dual_cotangent(op, a, b):
    """Nested differentiation (forward over reverse) pulls back dual numbers: the cotangents of
    Python reals stay duals, with the partials the plain cotangent would get."""
    from chainrules.forward import Dual, Tag

    _, back = cr.rrule(op, a, b)
    dual = Dual(1.5, 2.0, Tag())
    _, da, db = back(dual)
    _, plain_a, plain_b = back(1.5)
    _, slope_a, slope_b = back(2.0)
    for d, plain, slope in ((da, plain_a, slope_a), (db, plain_b, slope_b)):
        assert isinstance(d, Dual)
        assert float(d.primal) == pytest.approx(plain)
        assert float(d.partials) == pytest.approx(slope)


def _rows(x):
    return x.shape[0]


def _mean_square(x):
    return np.sum(x * x) / (_rows(x) * 2)  # a product of Python ints on the way to the output


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_hessian_through_a_product_of_python_ints(engine):
    x = np.random.default_rng(3).standard_normal(4)
    H = cr.hessian(_mean_square, x, engine=engine)
    np.testing.assert_allclose(H, np.eye(4) / 4.0)
    cr.testing.check_grads(_mean_square, (x.reshape(2, 2),))
