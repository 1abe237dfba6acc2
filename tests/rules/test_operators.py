"""The ``operator`` rules against finite differences: numbers, broadcasting arrays, sequences, indexing."""

import collections
import dataclasses
import math
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


# ----- operators defined in Python by the user's classes, in-place operators, dict merge, call ---------


@dataclasses.dataclass
class Vec:
    x: float

    def __add__(self, other):
        return Vec(self.x + other) if isinstance(other, float) else NotImplemented

    def __radd__(self, other):
        return Vec(other * self.x)  # deliberately not symmetric, to see which method ran

    def __neg__(self):
        return Vec(-self.x)

    def __iadd__(self, other):
        self.x += other
        return self


def _rules_only_engine(f, *args, **kwargs):
    """An engine for tests: it differentiates only what has a rule."""
    result = cr.rrule(f, *args, **kwargs)
    if result is None:
        raise cr.NoRuleError(f, args)
    return result


class Scale:
    """Only reflected: Vec + Scale runs Scale.__radd__ after Vec.__add__ declines."""

    def __init__(self, k):
        self.k = k

    def __radd__(self, v):
        return Vec(self.k * v.x)


def _fields(dy, *names):
    dy = cr.unthunk(dy)
    return [cr.ZeroTangent() if cr.iszero(dy) else getattr(dy, n) for n in names]


@cr.rrule.register(Vec.__add__)
def _rrule_vec_add(v, other):
    def vec_add_pullback(dy):
        (dx,) = _fields(dy, "x")
        return cr.NoTangent(), cr.Tangent[Vec](x=dx), dx

    return Vec.__add__(v, other), vec_add_pullback


@cr.rrule.register(Vec.__radd__)
def _rrule_vec_radd(v, other):
    def vec_radd_pullback(dy):
        (dx,) = _fields(dy, "x")
        return cr.NoTangent(), cr.Tangent[Vec](x=other * dx), v.x * dx

    return Vec.__radd__(v, other), vec_radd_pullback


@cr.rrule.register(Scale.__radd__)
def _rrule_scale_radd(s, v):
    def scale_radd_pullback(dy):
        (dx,) = _fields(dy, "x")
        return cr.NoTangent(), cr.Tangent[Scale](k=v.x * dx), cr.Tangent[Vec](x=s.k * dx)

    return Scale.__radd__(s, v), scale_radd_pullback


@cr.rrule.register(Vec.__neg__)
def _rrule_vec_neg(v):
    def vec_neg_pullback(dy):
        (dx,) = _fields(dy, "x")
        return cr.NoTangent(), cr.Tangent[Vec](x=-dx)

    return Vec.__neg__(v), vec_neg_pullback


USER_OPERATORS = [
    (operator.add, (Vec(1.5), 2.0)),  # Vec.__add__
    (operator.add, (2.0, Vec(1.5))),  # float.__add__ is C code: Vec.__radd__
    (operator.add, (Vec(1.5), Scale(2.5))),  # __add__ returns NotImplemented: the right operand's __radd__
    (operator.neg, (Vec(1.5),)),
    (operator.call, (math.sin, 0.5)),
    (operator.call, (operator.mul, 1.5, 2.5)),
]


@pytest.mark.parametrize(
    "f, args", [pytest.param(f, a, id=f"{f.__name__}-{i}") for i, (f, a) in enumerate(USER_OPERATORS)]
)
def test_operators_of_user_classes_go_through_the_engine(f, args):
    with active_engine(_rules_only_engine):
        test_rrule(f, *args)


def test_user_operators_in_c_and_in_forward_mode_are_clear_errors():
    class Bag(set):
        pass

    with pytest.raises(cr.NoRuleError, match="implements this operator in C"):
        cr.rrule(operator.sub, Bag({1}), Bag({2}))
    with pytest.raises(TypeError, match="Vec operand"):
        cr.frule((cr.NoTangent(), cr.ZeroTangent(), 1.0), operator.add, Vec(1.5), 2.0)


INPLACE = [
    (operator.iadd, (1.5, 2.5)),
    (operator.isub, (1.5, 2.5)),
    (operator.imul, (1.5, 2.5)),
    (operator.itruediv, (1.5, 2.5)),
    (operator.ifloordiv, (7.3, 2.5)),
    (operator.imod, (7.3, 2.5)),
    (operator.ipow, (1.5, 2.5)),
    (operator.iadd, ((1.5,), (2.5,))),
    (operator.iconcat, ((1.5,), (2.5,))),
    (operator.or_, ({"a": 1.5, "b": 2.0}, {"b": 3.0, "c": A31})),
]


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f"{f.__name__}-{i}") for i, (f, a) in enumerate(INPLACE)])
def test_in_place_operators_on_immutable_values_and_dict_merge(f, args):
    test_rrule(f, *args)
    test_frule(f, *args)


@pytest.mark.parametrize(
    "inplace, pure",
    [(operator.iadd, operator.add), (operator.imul, operator.mul), (operator.itruediv, operator.truediv)],
)
def test_in_place_operators_update_arrays_and_differentiate_the_old_value(inplace, pure):
    a, b, dy = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3)
    old = a.copy()
    y, back = cr.rrule(inplace, a, b)
    assert y is a and np.allclose(a, pure(old, b))
    expected = cr.rrule(pure, old, b)[1](dy)
    assert all(np.allclose(g, e) for g, e in zip(back(dy)[1:], expected[1:]))
    a = old.copy()
    y, dy_forward = cr.frule((cr.NoTangent(), dy, dy), inplace, a, b)
    assert y is a and np.allclose(dy_forward, cr.frule((cr.NoTangent(), dy, dy), pure, old, b)[1])


def test_in_place_operators_on_lists_and_user_classes():
    xs = [1.5]
    y, back = cr.rrule(operator.iadd, xs, [2.5, 3.5])
    assert y is xs and xs == [1.5, 2.5, 3.5]
    assert back(cr.Tangent[list](1.0, 2.0, 3.0)) == (cr.NoTangent(), cr.Tangent[list](1.0), cr.Tangent[list](2.0, 3.0))
    d = {"a": 1.0}
    y, back = cr.rrule(operator.ior, d, {"b": 2.0})
    assert y is d and back(cr.Tangent[dict]({"a": 3.0, "b": 4.0}))[1:] == (
        cr.Tangent[dict]({"a": 3.0}),
        cr.Tangent[dict]({"b": 4.0}),
    )

    def engine(f, *args):
        assert f is Vec.__iadd__
        return f(*args), lambda dy: (cr.NoTangent(), dy, dy.x)

    v = Vec(1.5)
    with active_engine(engine):
        y, back = cr.rrule(operator.iadd, v, 2.0)
    assert y is v and v.x == 3.5 and back(cr.Tangent[Vec](x=1.0)) == (cr.NoTangent(), cr.Tangent[Vec](x=1.0), 1.0)


GETTERS = [
    (operator.itemgetter(1), ((1.5, 2.5, 3.5),)),
    (operator.itemgetter(0, 2), ([1.5, 2.5, A31],)),
    (operator.itemgetter("b"), ({"a": 1.5, "b": 2.5},)),
    (operator.attrgetter("x"), (Vec(1.5),)),
    (operator.attrgetter("y", "x"), (Point(1.5, 2.5),)),
]


@pytest.mark.parametrize("getter, args", [pytest.param(g, a, id=str(i)) for i, (g, a) in enumerate(GETTERS)])
def test_itemgetter_and_attrgetter_objects(getter, args):
    # the getter is called through a function: the checkers compare a copy of the callable with ==,
    # which getter objects do not define
    def call_getter(*xs):
        return getter(*xs)

    test_rrule(call_getter, *args, rule=lambda _, *xs: cr.rrule(getter, *xs))
    test_frule(call_getter, *args, rule=lambda tangents, _, *xs: cr.frule(tangents, getter, *xs))


def test_same_type_operands_never_try_the_reflected_method():
    with active_engine(_rules_only_engine), pytest.raises(TypeError, match="unsupported operand"):
        cr.rrule(operator.add, Vec(1.5), Vec(2.5))


@pytest.mark.parametrize("f, args", [(math.sin, (0.5,)), (operator.mul, (1.5, 2.5)), (max, (1.5, 2.5))])
def test_operator_call_forward_mode_uses_the_callee_frule(f, args):
    test_frule(operator.call, f, *args)
    with pytest.raises(cr.NoRuleError, match="operator.call in forward mode"):
        cr.frule((cr.NoTangent(), cr.NoTangent(), 1.0), operator.call, lambda x: x, 1.0)


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mod, operator.iadd, operator.isub, operator.imod])
@pytest.mark.parametrize(
    "a, b",
    [
        (0.8, np.array([1, 2, 3])),
        (np.float32(-1.5), np.array([[2]])),
        (np.float32(0.8), np.array(2)),
        (np.array([0.8], np.float32), np.array([2])),
        (np.array(0.8, np.float32), np.array(2)),
    ],
)
def test_number_meeting_an_integer_array_gets_a_tangent_of_the_output(op, a, b):
    """Only the number's tangent reaches the output: spread over the array, in the output's dtype."""
    y, dy = cr.frule((cr.NoTangent(), 1.0, cr.NoTangent()), op, a.copy() if isinstance(a, np.ndarray) else a, b)
    assert np.shape(dy) == np.shape(y) and np.result_type(dy) == np.result_type(y)
    if not (op.__name__.startswith("i") and isinstance(a, np.ndarray)):  # (in place on an array, by design)
        test_frule(op, a, b)
