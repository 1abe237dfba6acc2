"""The ``operator`` rules against finite differences: numbers, broadcasting arrays, sequences, indexing."""

import collections
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import active_engine
from chainrules.testing import test_frule, test_rrule, test_scalar

RNG = np.random.default_rng(1)
A31 = RNG.standard_normal((3, 1))
B14 = RNG.standard_normal((1, 4))
P34 = RNG.uniform(0.5, 2.0, (3, 4))
F32 = RNG.standard_normal(3).astype(np.float32)
Z3 = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
Point = collections.namedtuple("Point", ["x", "y"])

# operator, argument tuples, (rtol, atol)
ARITHMETIC = [
    (operator.add, [(1.5, -2.25), (2, 0.5), (A31, B14), (1.5, A31), (1 + 2j, 0.5 - 1j), (Z3, 2.0)]),
    (operator.sub, [(1.5, -2.25), (A31, B14), (2.0, B14), (1 + 2j, 0.5 - 1j)]),
    (operator.mul, [(1.5, -2.25), (3, 0.5), (A31, B14), (0.5, P34), (1 + 2j, 0.5 - 1j), (Z3, A31), (2.0, 1 - 1j)]),
    (operator.truediv, [(1.5, -2.25), (3, 2), (A31, P34), (P34, 2.0), (1 + 2j, 0.5 - 1j), (Z3, 0.5 + 1j)]),
    (operator.neg, [(1.5,), (3,), (A31,), (1 + 2j,)]),
    (operator.pos, [(1.5,), (A31,), (1 + 2j,)]),
    (operator.abs, [(1.5,), (-2.0,), (A31,), (3.0 - 4.0j,), (Z3,)]),
    (
        operator.pow,
        [(1.5, 2.5), (1.5, 2), (P34, 1.5), (P34, B14), (2.0, A31), (1 + 2j, 2.0), (1 + 2j, 0.5 - 1j)],
    ),
    (operator.mod, [(7.3, 2.0), (-7.3, 2.0), (7.3, -2.5), (P34 * 3, 1.3)]),
    (operator.floordiv, [(7.3, 2.0), (P34 * 3, 1.3)]),
]

FLOAT32 = [
    (operator.add, (F32, F32)),
    (operator.mul, (F32, 2.0)),
    (operator.truediv, (F32, np.float32(3.0))),
    (operator.pow, (np.abs(F32) + 1, 2.0)),
    (operator.abs, (F32,)),
]

SEQUENCES = [
    (operator.add, ((1.5, 2.0), (3.0,))),
    (operator.add, ([1.5, 2.0], [A31, 4.0])),
    (operator.concat, ((1.5,), (2.0, 3.0))),
    (operator.mul, ((1.5, -2.0), 3)),
    (operator.mul, (2, [1.5, -2.0])),
    (operator.getitem, ((1.5, 2.0, 3.0), 1)),
    (operator.getitem, ([1.5, A31, 3.0], -2)),
    (operator.getitem, ((1.5, 2.0, 3.0, 4.0), slice(1, None, 2))),
    (operator.getitem, ([1.5, 2.0, 3.0], slice(None, None, -1))),
    (operator.getitem, ({"a": 1.5, "b": A31}, "b")),
    (operator.getitem, ({1: 1.5, (2, 3): 2.5}, (2, 3))),
    (operator.getitem, (Point(1.5, 2.5), 1)),
]

NONDIFF = [
    (operator.lt, (1.0, 2.0)),
    (operator.le, (1.0, 2.0)),
    (operator.eq, (1.0, 2.0)),
    (operator.ne, (A31, B14)),
    (operator.ge, (1.0, 2.0)),
    (operator.gt, (1.0, 2.0)),
    (operator.not_, (1.0,)),
    (operator.truth, (1.0,)),
    (operator.is_, (1.0, None)),
    (operator.is_not, (1.0, None)),
    (operator.contains, ([1.0, 2.0], 2.0)),
    (operator.countOf, ([1.0, 2.0], 2.0)),
    (operator.indexOf, ([1.0, 2.0], 2.0)),
    (operator.length_hint, ([1.0, 2.0],)),
    (operator.and_, (True, False)),
    (operator.or_, (True, False)),
    (operator.xor, (6, 3)),
    (operator.invert, (6,)),
    (operator.inv, (6,)),
    (operator.lshift, (6, 1)),
    (operator.rshift, (6, 1)),
    (operator.index, (6,)),
]


def _rows(table):
    return [pytest.param(f, args, id=f"{f.__name__}-{i}") for f, points in table for i, args in enumerate(points)]


@pytest.mark.parametrize("f, args", _rows(ARITHMETIC))
def test_arithmetic_matches_finite_differences(f, args):
    test_rrule(f, *args)
    test_frule(f, *args)


@pytest.mark.parametrize(
    "f, x, holomorphic",
    [(operator.neg, 1.5, True), (operator.pos, -1.5, True), (operator.abs, -1.5, False), (operator.abs, 2.5, False)],
)
def test_unary_operators_as_scalar_functions(f, x, holomorphic):
    test_scalar(f, x, holomorphic=holomorphic)


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f.__name__) for f, a in FLOAT32])
def test_float32_stays_float32(f, args):
    test_rrule(f, *args, rtol=2e-2, atol=1e-3)
    y, back = cr.rrule(f, *args)
    for x, dx in zip(args, back(np.ones_like(y))[1:]):
        if isinstance(x, (np.ndarray, np.generic)):
            assert cr.unthunk(dx).dtype == x.dtype


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f"{f.__name__}-{i}") for i, (f, a) in enumerate(SEQUENCES)])
def test_sequences_and_indexing_match_finite_differences(f, args):
    test_rrule(f, *args)
    test_frule(f, *args)


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f.__name__) for f, a in NONDIFF])
def test_non_differentiable(f, args):
    y, back = cr.rrule(f, *args)
    assert np.all(y == f(*args))
    assert back(1.0) == (cr.NoTangent(),) * (1 + len(args))


@pytest.mark.parametrize(
    "f, args, expected",
    [
        (operator.pow, (0.0, 2.0), (0.0, 0.0)),  # zero base: the exponent's partial y log|a| is 0, not nan
        (operator.pow, (0.0, 0.0), (0.0, 0.0)),
        (operator.pow, (0.0, 1.0), (1.0, 0.0)),
        (operator.pow, (0.0, 0.5), (np.inf, 0.0)),
        (operator.pow, (-2.0, 2), (-4.0, 4.0 * np.log(2.0))),  # negative base: real part of the exponent's partial
        (operator.abs, (0.0,), (0.0,)),  # sign(0) = 0
        (operator.abs, (0j,), (0j,)),
        (operator.floordiv, (7.5, 2.0), (cr.ZeroTangent(), cr.ZeroTangent())),
        (operator.floordiv, (7, 2), (cr.NoTangent(), cr.NoTangent())),
        (operator.mod, (7.5, 2.0), (1.0, -3.0)),  # da = 1, db = -floor(a / b)
        (operator.mod, (-7.5, 2.0), (1.0, 4.0)),
        (operator.mul, ([1.0], 2), (cr.Tangent[list](2.0), cr.NoTangent())),  # repeats sum their cotangents
        (operator.add, ("ab", "c"), (cr.NoTangent(), cr.NoTangent())),
        (operator.mod, ("%.1f", 2.5), (cr.NoTangent(), cr.NoTangent())),
        (operator.getitem, ("abc", 1), (cr.NoTangent(), cr.NoTangent())),
        (operator.getitem, ((1.5, 2.5), 0), (cr.Tangent[tuple](1.0, cr.ZeroTangent()), cr.NoTangent())),
        (operator.getitem, ({"a": 1.5, "b": 2.5}, "a"), (cr.Tangent[dict]({"a": 1.0}), cr.NoTangent())),
        (operator.getitem, (Point(1.5, 2.5), 1), (cr.Tangent[Point](y=1.0), cr.NoTangent())),
    ],
)
def test_conventions(f, args, expected):
    y, back = cr.rrule(f, *args)
    dy = [1.0, 1.0] if isinstance(y, list) else 1.0
    assert back(dy)[1:] == expected


def test_integer_inputs_get_float_cotangents():
    for f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
        grads = cr.rrule(f, 3, 2)[1](1.0)[1:]
        assert all(type(g) is float for g in grads), (f, grads)


def test_complex_abs_gradient_convention():
    # |z|^2 = x^2 + y^2 has gradient 2x + 2iy; abs alone has z / |z|
    assert cr.rrule(operator.abs, 3.0 + 4.0j)[1](1.0)[1] == (3.0 + 4.0j) / 5.0


def test_float_fast_path_returns_floats_for_any_scalar_seed():
    for seed in (1.0, np.float64(1.0), 1, 1.0 + 2.0j, cr.Thunk(lambda: 1.0)):
        for f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
            grads = cr.rrule(f, 1.5, 2.5)[1](seed)[1:]
            assert all(type(g) is float for g in grads), (f, seed, grads)
        assert type(cr.rrule(operator.neg, 1.5)[1](seed)[1]) is float
    zero = cr.rrule(operator.mul, 1.5, 2.5)[1](cr.ZeroTangent())
    assert all(cr.iszero(g) for g in zero)


def test_elementwise_frules_take_a_batch_of_tangents():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    da, db = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 2))
    for f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
        assert cr.frule.lookup(f, (a, b)).batched
        _, dy = cr.frule((cr.NoTangent(), da, db), f, a, b)
        for k in range(5):
            assert np.allclose(dy[k], cr.frule((cr.NoTangent(), da[k], db[k]), f, a, b)[1])


def test_getitem_of_a_user_container_uses_the_active_engine():
    class Box:
        def __init__(self, items):
            self.items = items

        def __getitem__(self, i):
            return self.items[i]

    with pytest.raises(cr.ChainRulesError, match="no reverse-mode engine"):
        cr.rrule(operator.getitem, Box([1.0]), 0)

    def engine(f, *args):
        assert f is Box.__getitem__
        return f(*args), lambda dy: (cr.NoTangent(), cr.Tangent[Box](items=cr.Tangent[list](dy)), cr.NoTangent())

    with active_engine(engine):
        y, back = cr.rrule(operator.getitem, Box([1.5]), 0)
    assert y == 1.5 and back(2.0) == (cr.NoTangent(), cr.Tangent[Box](items=cr.Tangent[list](2.0)), cr.NoTangent())
    with pytest.raises(TypeError, match="register an frule for its __getitem__"):
        cr.frule((cr.NoTangent(), cr.ZeroTangent(), cr.NoTangent()), operator.getitem, Box([1.5]), 0)
