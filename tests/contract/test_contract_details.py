"""DESIGN.md, "Contract details": the exact behaviours callers outside the project rely on."""

from __future__ import annotations

import collections
import dataclasses
import operator

import numpy as np
import pytest
import scipy.special
from contract_support import each_engine, leaked_internal_types, ruled_ufunc

import chainrules as cr

# ----- cr.pullback and cr.gradient ------------------------------------------------------------


def weighted(a, b, *, weight=2.0):
    return weight * a * b


@each_engine
def test_back_has_one_entry_per_positional_argument_and_none_for_keywords(engine):
    y, back = cr.pullback(weighted, 2.0, 3.0, engine=engine, weight=5.0)
    assert y == 30.0
    assert back(1.0) == (15.0, 10.0)


def product_of_all(*xs):
    out = 1.0
    for x in xs:
        out = out * x
    return out


@each_engine
def test_back_has_one_entry_per_argument_passed_through_star_args(engine):
    _, back = cr.pullback(product_of_all, 2.0, 3.0, 4.0, engine=engine)
    assert back(1.0) == (12.0, 8.0, 6.0)


@dataclasses.dataclass
class Affine:
    slope: float
    offset: float

    def __call__(self, x):
        return self.slope * x + self.offset


@each_engine
def test_back_has_no_entry_for_f_itself_even_when_f_has_fields(engine):
    _, back = cr.pullback(Affine(3.0, 1.0), 2.0, engine=engine)
    assert back(1.0) == (3.0,)


@each_engine
def test_gradient_is_a_tuple_even_for_one_argument(engine):
    grads = cr.gradient(lambda x: x * x, 3.0, engine=engine)
    assert type(grads) is tuple and grads == (6.0,)
    y, grads = cr.value_and_gradient(lambda x: x * x, 3.0, engine=engine)
    assert y == 9.0 and type(grads) is tuple and grads == (6.0,)


# thunky(x) is 2x, whose pullback defers the cotangent in a Thunk
thunky = ruled_ufunc(1)


@cr.rrule.register(thunky)
def rrule_thunky(x):
    def thunky_pullback(dy):
        return cr.NoTangent(), cr.Thunk(lambda: 2.0 * dy)

    return 2.0 * x, thunky_pullback


def thunky_structure(pair, x):
    return thunky(pair[0]) * pair[1] + np.sum(thunky(x))


@each_engine
def test_what_the_api_returns_is_unthunked_all_the_way_down(engine):
    pair, x = (1.5, 4.0), np.array([1.0, 2.0])
    grads = cr.gradient(thunky_structure, pair, x, engine=engine)
    assert leaked_internal_types(grads) == []
    dpair, dx = grads
    assert type(dpair) is cr.Tangent[tuple]
    assert dpair[0] == 8.0 and dpair[1] == 3.0
    np.testing.assert_array_equal(dx, [2.0, 2.0])
    _, back = cr.pullback(thunky_structure, pair, x, engine=engine)
    assert leaked_internal_types(back(1.0)) == []


def ignores_its_second_argument(x, y):
    return x * x


@each_engine
def test_an_argument_the_output_does_not_depend_on_gets_zero_tangent(engine):
    assert cr.gradient(ignores_its_second_argument, 3.0, 4.0, engine=engine) == (6.0, cr.ZeroTangent())
    assert type(cr.gradient(ignores_its_second_argument, 3.0, 4.0, engine=engine)[1]) is cr.ZeroTangent
    (dx, dy) = cr.gradient(lambda x, y: np.sum(x * 2.0), np.ones(2), np.ones(3), engine=engine)
    assert type(dy) is cr.ZeroTangent


rounded = np.frompyfunc(round, 1, 1)  # a callable with a non-differentiable rule
cr.non_differentiable(rounded)


@each_engine
def test_a_float_argument_with_a_zero_cotangent_gets_zero_tangent_not_no_tangent(engine):
    # NoTangent is for what has no derivative; a float argument always has one, possibly zero
    assert cr.gradient(lambda x: rounded(x) * 1.0, 2.4, engine=engine) == (cr.ZeroTangent(),)
    assert type(cr.gradient(lambda x: rounded(x) * 1.0, 2.4, engine=engine)[0]) is cr.ZeroTangent
    _, back = cr.pullback(lambda x, v: x * np.sum(v), 1.5, np.ones(2), engine=engine)
    assert [type(t) for t in back(cr.NoTangent())] == [cr.ZeroTangent, cr.ZeroTangent]


def counted_sum(x, n, label, flag):
    total = 0.0
    for i in range(n):
        total = total + x[i]
    return total * (2.0 if flag else 1.0) + len(label)


@each_engine
def test_an_index_count_bool_or_string_gets_no_tangent(engine):
    grads = cr.gradient(counted_sum, np.array([1.0, 2.0, 3.0]), 2, "abc", False, engine=engine)
    np.testing.assert_array_equal(grads[0], [1.0, 1.0, 0.0])
    assert grads[1:] == (cr.NoTangent(), cr.NoTangent(), cr.NoTangent())
    assert all(type(g) is cr.NoTangent for g in grads[1:])


def mixed_integers(k, v):
    return np.sum(v * k) * k


@each_engine
def test_integer_and_integer_array_inputs_used_arithmetically_get_float_derivatives(engine):
    dk, dv = cr.gradient(mixed_integers, 3, np.array([1, 2]), engine=engine)
    assert type(dk) is float and dk == 2 * 3 * 3.0  # d/dk k^2 sum(v) = 2 k sum(v)
    assert dv.dtype.kind == "f"
    np.testing.assert_array_equal(dv, [9.0, 9.0])


@each_engine
def test_a_pullback_can_be_called_again_with_another_cotangent(engine):
    x = np.array([1.0, 2.0, 3.0])
    _, back = cr.pullback(lambda x: np.sin(x) * x, x, engine=engine)
    (first,) = back(np.array([1.0, 0.0, 0.0]))
    kept = first.copy()
    (second,) = back(np.array([0.0, 2.0, 1.0]))
    d = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(first, [d[0], 0.0, 0.0], rtol=1e-14)
    np.testing.assert_allclose(second, [0.0, 2 * d[1], d[2]], rtol=1e-14)
    np.testing.assert_array_equal(first, kept)  # the second call did not write into the first result
    (third,) = back(np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(third, kept)


@each_engine
def test_a_pullback_with_accumulation_can_be_called_again(engine):
    def mysum(X):
        total = 0.0
        for i in range(len(X)):
            total += X[i]
        return total

    _, back = cr.pullback(mysum, np.arange(4.0), engine=engine)
    (first,) = back(1.0)
    (second,) = back(2.5)
    np.testing.assert_array_equal(first, np.ones(4))
    np.testing.assert_array_equal(second, np.full(4, 2.5))


def sees_keywords(x, **kwargs):
    SEEN.append(dict(kwargs))
    return x * 2.0


def has_an_engine_parameter(x, engine="mine"):
    SEEN.append(engine)
    return x * 2.0


SEEN: list = []


@each_engine
def test_engine_is_never_passed_to_f(engine):
    SEEN.clear()
    assert cr.gradient(sees_keywords, 1.0, engine=engine, other=3) == (2.0,)
    cr.pullback(sees_keywords, 1.0, engine=engine)
    cr.value_and_gradient(sees_keywords, 1.0, engine=engine)
    assert cr.gradient(has_an_engine_parameter, 1.0, engine=engine) == (2.0,)
    cr.jacobian(has_an_engine_parameter, np.ones(2), mode="reverse", engine=engine)
    assert SEEN == [{"other": 3}, {}, {}, "mine", "mine"]


JACOBIAN_CASES = [
    ("matrix to matrix", lambda x: np.sin(x) * 2.0, np.ones((2, 3)), (2, 3, 2, 3)),
    ("matrix to scalar", lambda x: np.sum(x * x), np.ones((2, 3)), (2, 3)),
    ("scalar to vector", lambda x: x * np.array([1.0, 2.0, 3.0]), 2.0, (3,)),
    ("vector to matrix", lambda x: np.outer(x, x), np.array([1.0, 2.0]), (2, 2, 2)),
    ("scalar to scalar", lambda x: x * x, 3.0, ()),
]


@each_engine
@pytest.mark.parametrize("name, f, x, shape", JACOBIAN_CASES, ids=[c[0] for c in JACOBIAN_CASES])
def test_jacobian_has_the_output_shape_followed_by_the_input_shape(engine, name, f, x, shape):
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    assert np.shape(J) == shape
    fd = cr.testing.fd_jacobian(f, x)  # (output size, input size)
    np.testing.assert_allclose(np.reshape(J, np.shape(fd)), fd, rtol=1e-6, atol=1e-9)


# ----- Tangent[P] -------------------------------------------------------------------------


@dataclasses.dataclass
class Dense:
    weights: np.ndarray
    bias: float


Pair = collections.namedtuple("Pair", "first second")


class Plain:
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def __eq__(self, other):
        return type(other) is Plain and (self.a, self.b) == (other.a, other.b)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


def test_structural_tangents_are_tangents_with_attribute_and_key_access():
    t = cr.Tangent[Dense](weights=np.array([1.0, 2.0]))
    assert isinstance(t, cr.Tangent) and isinstance(t, cr.Tangent[Dense])
    np.testing.assert_array_equal(t.weights, [1.0, 2.0])
    np.testing.assert_array_equal(t["weights"], [1.0, 2.0])
    assert t.bias == cr.ZeroTangent() and t["bias"] == cr.ZeroTangent()  # a missing field is zero
    n = cr.Tangent[Pair](first=1.0, second=2.0)
    assert isinstance(n, cr.Tangent) and n.first == 1.0 and n["second"] == 2.0
    p = cr.Tangent[Plain](a=3.0)
    assert isinstance(p, cr.Tangent) and p.a == 3.0 and p["a"] == 3.0
    s = cr.Tangent[Slotted](b=4.0)
    assert s.b == 4.0 and s["b"] == 4.0 and s.a == cr.ZeroTangent()
    d = cr.Tangent[dict]({"k": 5.0})
    assert isinstance(d, cr.Tangent) and d["k"] == 5.0
    tup = cr.Tangent[tuple](1.0, 2.0)
    assert isinstance(tup, cr.Tangent) and tup[0] == 1.0 and tuple(tup) == (1.0, 2.0)


def test_an_unknown_field_of_a_structural_tangent_is_an_error():
    t = cr.Tangent[Dense](bias=1.0)
    with pytest.raises(AttributeError):
        t.no_such_field
    with pytest.raises(KeyError):
        t["no_such_field"]


def test_primal_plus_tangent_works_with_the_plus_operator_for_every_structure():
    dense = Dense(np.array([1.0, 2.0]), 0.5)
    moved = dense + cr.Tangent[Dense](weights=np.array([1.0, 1.0]))
    assert type(moved) is Dense and moved.bias == 0.5
    np.testing.assert_array_equal(moved.weights, [2.0, 3.0])
    np.testing.assert_array_equal(dense.weights, [1.0, 2.0])  # the primal is unchanged

    assert Pair(1.0, 2.0) + cr.Tangent[Pair](second=0.5) == Pair(1.0, 2.5)
    assert type(Pair(1.0, 2.0) + cr.Tangent[Pair](second=0.5)) is Pair
    assert (1.0, 2.0) + cr.Tangent[tuple](0.5, cr.ZeroTangent()) == (1.5, 2.0)

    plain = Plain(1.0, "label")
    moved = plain + cr.Tangent[Plain](a=2.0)
    assert type(moved) is Plain and moved is not plain
    assert (moved.a, moved.b) == (3.0, "label") and plain.a == 1.0

    slotted = Slotted(1.0, 2.0)
    moved = slotted + cr.Tangent[Slotted](b=1.0)
    assert (moved.a, moved.b) == (1.0, 3.0) and slotted.b == 2.0


@dataclasses.dataclass(frozen=True)
class FrozenPoint:
    x: float
    y: float


def test_primal_plus_tangent_works_for_a_frozen_dataclass():
    p = FrozenPoint(1.0, 2.0)
    assert p + cr.Tangent[FrozenPoint](y=1.0) == FrozenPoint(1.0, 3.0)
    assert p == FrozenPoint(1.0, 2.0)


@pytest.mark.parametrize("zero", [cr.ZeroTangent(), cr.NoTangent()], ids=repr)
def test_an_array_plus_a_zero_is_the_array_itself(zero):
    a = np.array([1.0, 2.0])
    assert (a + zero) is a
    assert (zero + a) is a
    assert (a - zero) is a
    assert isinstance(a * zero, cr.AbstractZero) and isinstance(zero * a, cr.AbstractZero)
    f = np.float64(1.5)
    assert f + zero == 1.5 and type(f + zero) is np.float64


# ----- thunks -----------------------------------------------------------------------------


def test_a_thunk_evaluates_itself_once_under_arithmetic():
    calls = []

    def compute():
        calls.append(1)
        return np.array([1.0, 2.0])

    t = cr.Thunk(compute)
    assert calls == []  # deferred
    a = np.array([10.0, 20.0])
    np.testing.assert_array_equal(t + a, [11.0, 22.0])
    np.testing.assert_array_equal(a + t, [11.0, 22.0])
    np.testing.assert_array_equal(a - t, [9.0, 18.0])
    np.testing.assert_array_equal(t * 2.0, [2.0, 4.0])
    np.testing.assert_array_equal(2.0 * t, [2.0, 4.0])
    np.testing.assert_array_equal(t / 2.0, [0.5, 1.0])
    np.testing.assert_array_equal(-t, [-1.0, -2.0])
    assert t @ a == 50.0
    np.testing.assert_array_equal(np.exp(t), np.exp([1.0, 2.0]))
    assert calls == [1]


def test_a_thunk_evaluates_itself_under_powers_abs_and_conversions():
    t = cr.Thunk(lambda: np.array([1.0, -2.0]))
    np.testing.assert_array_equal(t**2, [1.0, 4.0])
    assert 2.0 ** cr.Thunk(lambda: 3.0) == 8.0
    np.testing.assert_array_equal(abs(t), [1.0, 2.0])
    assert float(cr.Thunk(lambda: 1.5)) == 1.5 and complex(cr.Thunk(lambda: 1.5)) == 1.5 + 0j
    assert not cr.Thunk(lambda: 0.0) and cr.Thunk(lambda: 0.5)
    assert len(t) == 2
    np.testing.assert_array_equal(np.asarray(t), [1.0, -2.0])
    assert np.dot(t, np.array([1.0, 1.0])) == -1.0  # NumPy functions that convert see the value
    np.testing.assert_array_equal(np.stack([t, t]), [[1.0, -2.0], [1.0, -2.0]])


def test_unthunk_passes_anything_else_through():
    a = np.ones(2)
    for value in (a, 1.5, 3, None, "s", cr.ZeroTangent(), cr.NoTangent(), cr.Tangent[tuple](1.0)):
        assert cr.unthunk(value) is value
    assert cr.unthunk(cr.Thunk(lambda: a)) is a


class ThunkFailure(Exception):
    pass


def _failing():
    raise ThunkFailure("raised inside the thunk")


def test_an_exception_inside_a_thunk_reaches_the_caller():
    with pytest.raises(ThunkFailure):
        cr.unthunk(cr.Thunk(_failing))
    with pytest.raises(ThunkFailure):
        cr.Thunk(_failing) + 1.0
    with pytest.raises(ThunkFailure):
        cr.add(np.ones(2), cr.Thunk(_failing))
    with pytest.raises(ThunkFailure):
        cr.iadd(np.ones(2), cr.Thunk(_failing))


failing_rule = ruled_ufunc(1)


@cr.rrule.register(failing_rule)
def rrule_failing_rule(x):
    def failing_rule_pullback(dy):
        return cr.NoTangent(), cr.Thunk(_failing)

    return 2.0 * x, failing_rule_pullback


@each_engine
def test_an_exception_inside_a_thunk_reaches_the_user_of_the_api(engine):
    with pytest.raises(ThunkFailure):
        cr.gradient(lambda x: failing_rule(x), 1.0, engine=engine)
    with pytest.raises(ThunkFailure):
        cr.gradient(lambda x: failing_rule(x) * 3.0 + x, 1.0, engine=engine)


# ----- InplaceableThunk and iadd ------------------------------------------------------------


def _inplaceable(index: int, value: float, counts: dict):
    def add_into(acc):
        counts["add_into"] += 1
        acc[index] += value
        return acc

    def dense():
        counts["value"] += 1
        out = np.zeros(3)
        out[index] = value
        return out

    return cr.InplaceableThunk(add_into, cr.Thunk(dense))


def test_iadd_lets_an_inplaceable_thunk_add_into_the_accumulator_without_its_value():
    counts = {"add_into": 0, "value": 0}
    acc = np.ones(3)
    out = cr.iadd(acc, _inplaceable(1, 5.0, counts))
    assert out is acc
    np.testing.assert_array_equal(acc, [1.0, 6.0, 1.0])
    assert counts == {"add_into": 1, "value": 0}


def test_add_with_an_inplaceable_thunk_leaves_both_operands_alone():
    counts = {"add_into": 0, "value": 0}
    acc = np.ones(3)
    t = _inplaceable(0, 2.0, counts)
    out = cr.add(acc, t)
    np.testing.assert_array_equal(out, [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(acc, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(cr.unthunk(t), [2.0, 0.0, 0.0])


def test_iadd_on_a_writeable_array_returns_the_same_object():
    acc = np.zeros(3)
    assert cr.iadd(acc, np.array([1.0, 2.0, 3.0])) is acc
    assert cr.iadd(acc, cr.Thunk(lambda: np.ones(3))) is acc
    assert cr.iadd(acc, 1.0) is acc
    assert cr.iadd(acc, cr.ZeroTangent()) is acc
    np.testing.assert_array_equal(acc, [3.0, 4.0, 5.0])


def test_iadd_never_writes_into_a_read_only_array():
    acc = np.zeros(3)
    acc.setflags(write=False)
    out = cr.iadd(acc, np.ones(3))
    assert out is not acc
    np.testing.assert_array_equal(out, np.ones(3))
    np.testing.assert_array_equal(acc, np.zeros(3))


def test_iadd_on_an_immutable_value_returns_the_sum():
    assert cr.iadd(1.5, 2.0) == 3.5
    assert cr.iadd((1.0, 2.0), (3.0, 4.0)) == (4.0, 6.0)
    assert cr.iadd(cr.ZeroTangent(), 2.0) == 2.0


def test_an_add_into_that_returns_something_else_is_an_error():
    t = cr.InplaceableThunk(lambda acc: acc + 1.0, cr.Thunk(lambda: np.ones(2)))
    with pytest.raises(RuntimeError, match="add_into"):
        cr.iadd(np.zeros(2), t)


# ----- registration -----------------------------------------------------------------------


def test_an_rrule_receives_keyword_arguments_and_an_frule_the_tangents_tuple():
    def power(x, exponent=2.0):
        return x**exponent

    received = []

    @cr.rrule.register(power)
    def rrule_power(x, exponent=2.0):
        received.append(("rrule", exponent))
        y = x**exponent

        def power_pullback(dy):
            return cr.NoTangent(), dy * exponent * x ** (exponent - 1)

        return y, power_pullback

    @cr.frule.register(power)
    def frule_power(tangents, x, exponent=2.0):
        received.append(("frule", len(tangents), exponent))
        _, dx = tangents
        return x**exponent, exponent * x ** (exponent - 1) * dx

    y, back = cr.rrule(power, 2.0, exponent=3.0)
    assert y == 8.0 and back(1.0) == (cr.NoTangent(), 12.0)
    assert cr.frule((cr.NoTangent(), 0.5), power, 2.0, exponent=3.0) == (8.0, 6.0)
    assert received == [("rrule", 3.0), ("frule", 2, 3.0)]


def test_the_most_specific_registered_types_win():
    def describe(x):
        return x

    for types, tag in [((), "any"), ((float,), "float"), ((np.float64,), "np.float64")]:

        @cr.rrule.register(describe, *types)
        def rule(x, tag=tag):
            return tag, lambda dy: (cr.NoTangent(), dy)

    assert cr.rrule(describe, np.float64(1.0))[0] == "np.float64"
    assert cr.rrule(describe, 1.0)[0] == "float"
    assert cr.rrule(describe, "text")[0] == "any"
    assert cr.rrule.lookup(describe, (1.0,)) is not None


@dataclasses.dataclass
class Model:
    scale: float

    def __call__(self, x):
        return self.scale * x


@dataclasses.dataclass
class Squarer:
    def __call__(self, x):
        return x * x


def test_lookup_works_for_unhashable_callables_by_object_then_by_type():
    special, ordinary = Model(2.0), Model(2.0)
    with pytest.raises(TypeError):
        hash(special)  # a dataclass instance with __eq__ is unhashable

    @cr.rrule.register(special)
    def rrule_special(x):
        return special(x), lambda dy: (cr.NoTangent(), 100.0 * dy)

    assert cr.rrule(special, 1.0)[1](1.0) == (cr.NoTangent(), 100.0)
    assert cr.rrule(ordinary, 1.0) is None  # the rule is for that object only

    @cr.rrule.register(Squarer)  # for every instance: the rule receives the instance first
    def rrule_squarer(squarer, x):
        assert isinstance(squarer, Squarer)
        return squarer(x), lambda dy: (cr.NoTangent(), 2 * x * dy)

    assert cr.rrule(Squarer(), 3.0)[1](1.0) == (cr.NoTangent(), 6.0)
    assert cr.rrule.lookup(Squarer(), (3.0,)) is not None

    @cr.frule.register(Squarer)  # a forward rule for every instance: tangents first, then the instance
    def frule_squarer(tangents, squarer, x):
        assert isinstance(squarer, Squarer) and len(tangents) == 2
        return squarer(x), 2 * x * tangents[1]

    assert cr.frule((cr.NoTangent(), 0.5), Squarer(), 3.0) == (9.0, 3.0)

    @cr.rrule.register(Model)
    def rrule_model(model, x):
        return model(x), lambda dy: (cr.Tangent[Model](scale=x * dy), model.scale * dy)

    assert cr.rrule(ordinary, 1.0)[1](1.0) == (cr.Tangent[Model](scale=1.0), 2.0)  # by type
    assert cr.rrule(special, 1.0)[1](1.0) == (cr.NoTangent(), 100.0)  # the object's own rule first


def test_registration_is_global_and_engines_use_it():
    # registered in this module, found through the public dispatcher and by every engine below
    assert cr.rrule.lookup(thunky, (1.0,)) is rrule_thunky


def test_scalar_rule_calls_each_partial_with_the_inputs_and_out_with_the_output():
    def exp_of(x):
        return np.exp(x)

    def scaled_diff(a, b):
        return (a - b) * 3.0

    seen = []
    cr.scalar_rule(exp_of, lambda x, *, out: seen.append((x, out)) or out)
    cr.scalar_rule(scaled_diff, lambda a, b: seen.append((a, b)) or 3.0, lambda a, b: -3.0)
    y, back = cr.rrule(exp_of, 0.5)
    assert back(2.0)[1] == pytest.approx(2.0 * np.exp(0.5), rel=1e-15)
    assert seen[0] == (0.5, y)
    y, back = cr.rrule(scaled_diff, 2.0, 1.0)
    assert y == 3.0 and back(1.0) == (cr.NoTangent(), 3.0, -3.0)
    assert seen[1] == (2.0, 1.0)
    assert cr.frule((cr.NoTangent(), 1.0), exp_of, 0.5)[1] == pytest.approx(np.exp(0.5), rel=1e-15)
    assert cr.frule((cr.NoTangent(), 1.0, 2.0), scaled_diff, 2.0, 1.0)[1] == pytest.approx(-3.0)
    cr.testing.test_rrule(exp_of, np.array([0.1, -0.4]))
    cr.testing.test_frule(scaled_diff, 2.0, 1.0)


def test_non_differentiable_gives_no_tangent_for_f_and_every_argument():
    def first_index(xs, target):
        return xs.index(target)

    def flag(x):
        return x > 0

    cr.non_differentiable(first_index, flag)
    y, back = cr.rrule(first_index, [1.0, 2.0], 2.0)
    assert y == 1 and back(1.0) == (cr.NoTangent(), cr.NoTangent(), cr.NoTangent())
    y, back = cr.rrule(flag, 2.0)
    assert y is True and back(1.0) == (cr.NoTangent(), cr.NoTangent())
    assert cr.frule((cr.NoTangent(), 1.0), flag, 2.0) == (True, cr.NoTangent())


def test_opt_out_matches_positional_arguments_with_isinstance():
    def scale_by(x, k):
        return x * k

    class Symbolic(float):
        pass

    class MoreSymbolic(Symbolic):
        pass

    cr.scalar_rule(scale_by, lambda x, k: k, lambda x, k: x)
    cr.opt_out(scale_by, float, Symbolic)
    assert cr.rrule(scale_by, 2.0, MoreSymbolic(3.0)) is None  # a subclass is opted out too
    assert cr.rrule(scale_by, 2.0, Symbolic(3.0)) is None
    assert cr.frule((cr.NoTangent(), 1.0, 0.0), scale_by, 2.0, Symbolic(3.0)) is None
    assert cr.rrule(scale_by, 2.0, 3.0) is not None  # other types keep the rule
    assert cr.rrule(scale_by, np.ones(2), Symbolic(3.0)) is not None  # np.ndarray is not a float


# apply_to(g, x) is g(x); its rule differentiates the user's g with the active engine
apply_to = ruled_ufunc(2)


@cr.rrule.register(apply_to)
def rrule_apply_to(g, x):
    y, g_pullback = cr.rrule_via_ad(g, x)

    def apply_to_pullback(dy):
        cotangents = g_pullback(dy)
        assert len(cotangents) == 2  # (dg, dx): the tangent of g first
        dg, dx = cotangents
        return cr.NoTangent(), dg, dx

    return y, apply_to_pullback


@dataclasses.dataclass
class Cubic:
    a: float

    def __call__(self, x):
        return self.a * x * x * x


@each_engine
def test_rrule_via_ad_differentiates_a_user_callable_inside_a_rule(engine):
    assert cr.gradient(lambda x: apply_to(lambda t: 3.0 * t * t, x), 2.0, engine=engine) == (12.0,)
    (dx,) = cr.gradient(lambda x: apply_to(Cubic(2.0), x), 1.5, engine=engine)
    assert dx == pytest.approx(2.0 * 3 * 1.5**2, rel=1e-14)


@each_engine
def test_rrule_via_ad_gives_the_tangent_of_a_callable_object(engine):
    dmodel, dx = cr.gradient(lambda m, x: apply_to(m, x), Cubic(2.0), 1.5, engine=engine)
    assert type(dmodel) is cr.Tangent[Cubic]
    assert dmodel.a == pytest.approx(1.5**3, rel=1e-14)
    assert dx == pytest.approx(2.0 * 3 * 1.5**2, rel=1e-14)


# ----- errors ---------------------------------------------------------------------------------

unruled = ruled_ufunc(2)


def inner_helper(v, w):
    return unruled(v, w)  # the innermost user line: the one the message names


def outer_function(x):
    return inner_helper(x * 2.0, 3)


_INNER_LINE = inner_helper.__code__.co_firstlineno + 1


@each_engine
def test_no_rule_error_names_the_callable_the_types_and_the_innermost_user_line(engine):
    with pytest.raises(cr.NoRuleError) as info:
        cr.gradient(outer_function, 1.5, engine=engine)
    message = str(info.value)
    assert "vectorized" in message
    assert "(float, int)" in message
    assert f"{__file__}:{_INNER_LINE}" in message
    assert "register" in message


def test_no_rule_error_names_scipy_functions_by_their_own_module():
    with pytest.raises(cr.NoRuleError, match=r"scipy\.special\.gammaln") as info:
        raise cr.NoRuleError(scipy.special.gammaln, (np.ones(2),), location="model.py:3")
    assert "numpy.gammaln" not in str(info.value)
    assert "numpy.add.reduce" in str(cr.NoRuleError(np.add.reduce, (np.ones(2),)))
    assert "numpy.sin(" in str(cr.NoRuleError(np.sin, (np.ones(2),)))


def test_operators_rules_are_registered_for_the_operator_module():
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pow):
        assert cr.rrule.lookup(op, (1.0, 2.0)[: 1 if op is operator.neg else 2]) is not None


def uses_a_match(x):
    match x:  # the construct the message must point at
        case 0.0:
            return 0.0
        case _:
            return x * 2.0


def uses_yield(x):
    yield x * 2.0  # the construct the message must point at


@pytest.mark.parametrize("f, line", [(uses_a_match, 1), (uses_yield, 1)], ids=["match", "yield"])
def test_unsupported_syntax_error_has_the_file_and_line_of_the_construct(f, line):
    with pytest.raises(cr.UnsupportedSyntaxError) as info:  # (cr.gradient takes the tape there)
        cr.show(f, 1.5)
    assert f"{__file__}:{f.__code__.co_firstlineno + line}" in str(info.value)


def test_the_tape_differentiates_what_the_source_engine_refuses():
    assert cr.gradient(uses_a_match, 1.5) == (2.0,)
    assert cr.gradient(uses_a_match, 1.5, engine="tape") == (2.0,)


def test_show_returns_compilable_source_naming_the_function():
    text = cr.show(weighted, 2.0, 3.0, weight=4.0)
    assert "weighted" in text
    compile(text, "<cr.show>", "exec")
    text = cr.show(Affine(3.0, 1.0), 2.0)
    assert "Affine" in text or "__call__" in text
    compile(text, "<cr.show>", "exec")


# ----- rules for the user's own callables, on the default engine ------------------------------


def test_the_default_engine_uses_a_rule_registered_for_a_user_function():
    def stable_softplus(x):
        return np.log1p(np.exp(-abs(x))) + max(x, 0.0)

    used = []

    @cr.rrule.register(stable_softplus)
    def rrule_stable_softplus(x):
        used.append(x)
        s = 1 / (1 + np.exp(-x))

        def stable_softplus_pullback(dy):
            return cr.NoTangent(), dy * s

        return stable_softplus(x), stable_softplus_pullback

    assert cr.gradient(stable_softplus, 0.5)[0] == pytest.approx(1 / (1 + np.exp(-0.5)), rel=1e-14)
    assert cr.gradient(lambda x: 2.0 * stable_softplus(x), 0.5)[0] == pytest.approx(2 / (1 + np.exp(-0.5)))
    assert used == [0.5, 0.5]


def test_the_default_engine_looks_up_unhashable_callables_by_object_then_by_type():
    @dataclasses.dataclass
    class Gain:
        k: float

        def __call__(self, x):
            return self.k * x

    special, ordinary = Gain(2.0), Gain(2.0)

    @cr.rrule.register(special)
    def rrule_special(x):
        return special(x), lambda dy: (cr.NoTangent(), 100.0 * dy)

    @cr.rrule.register(Gain)
    def rrule_gain(gain, x):
        return gain(x), lambda dy: (cr.Tangent[Gain](k=x * dy), 10.0 * dy)

    assert cr.gradient(lambda x: special(x), 1.0) == (100.0,)
    assert cr.gradient(lambda x: ordinary(x), 1.0) == (10.0,)
    assert cr.gradient(lambda g: g(3.0), ordinary) == (cr.Tangent[Gain](k=3.0),)


@each_engine
def test_a_reverse_jacobian_keeps_float32_and_gives_integers_floats(engine):
    J = cr.jacobian(lambda x: x * x, np.array([1.0, 2.0], dtype=np.float32), mode="reverse", engine=engine)
    assert J.dtype == np.float32
    np.testing.assert_array_equal(J, np.diag([2.0, 4.0]))
    J = cr.jacobian(lambda x: x * x, np.array([1, 2]), mode="reverse", engine=engine)
    assert J.dtype == np.float64
    np.testing.assert_array_equal(J, np.diag([2.0, 4.0]))
