import copy
import dataclasses
import pickle
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    b: float


class Plain:
    def __init__(self, a, b):
        self.a, self.b = a, b


class Slotted:
    __slots__ = ("p", "q")

    def __init__(self, p, q):
        self.p, self.q = p, q


Pair = namedtuple("Pair", ["first", "second"])


# ----- zeros -----


@pytest.mark.parametrize("zero", [cr.ZeroTangent(), cr.NoTangent()])
def test_zeros_are_singletons_and_act_as_zero(zero):
    assert type(zero)() is zero
    assert copy.deepcopy(zero) is zero and pickle.loads(pickle.dumps(zero)) is zero
    assert zero + 2.5 == 2.5 and 2.5 + zero == 2.5
    assert zero * 3.0 is zero and 3.0 * zero is zero and -zero is zero
    assert 4.0 - zero == 4.0 and zero - 4.0 == -4.0
    assert not zero


def test_ndarray_plus_zero_is_the_array_itself():
    a = np.arange(3.0)
    assert (a + cr.ZeroTangent()) is a
    assert (cr.ZeroTangent() + a) is a
    assert (a * cr.ZeroTangent()) is cr.ZeroTangent()
    assert (a @ cr.ZeroTangent()) is cr.ZeroTangent()


def test_zero_cannot_be_unpacked():
    with pytest.raises(TypeError, match="zero tangent"):
        a, b = cr.ZeroTangent()


def test_no_and_zero_are_distinct():
    assert cr.NoTangent() is not cr.ZeroTangent()
    assert cr.iszero(cr.NoTangent()) and cr.iszero(cr.ZeroTangent()) and not cr.iszero(0.0)


# ----- thunks -----


def test_thunk_is_lazy_and_evaluated_once():
    calls = []
    t = cr.Thunk(lambda: calls.append(1) or np.array([1.0, 2.0]))
    assert calls == []
    np.testing.assert_array_equal(t + 1.0, [2.0, 3.0])
    np.testing.assert_array_equal(2.0 * t, [2.0, 4.0])
    np.testing.assert_array_equal(np.sin(t), np.sin([1.0, 2.0]))
    assert cr.unthunk(t) is cr.unthunk(t)
    assert calls == [1]


def test_thunk_never_evaluated_when_unused():
    def boom():
        raise AssertionError("evaluated")

    t = cr.Thunk(boom)
    assert cr.add(cr.ZeroTangent(), cr.ZeroTangent()) is cr.ZeroTangent()
    assert isinstance(t, cr.AbstractThunk)  # creating and holding it costs nothing


def test_exception_inside_thunk_reaches_caller():
    t = cr.Thunk(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cr.unthunk(t)


def test_nested_thunks_unthunk_fully():
    assert cr.unthunk(cr.Thunk(lambda: cr.Thunk(lambda: 5.0))) == 5.0


def test_unthunk_passes_other_values_through():
    x = np.ones(2)
    assert cr.unthunk(x) is x and cr.unthunk(cr.NoTangent()) is cr.NoTangent()


def test_thunk_arithmetic_with_arrays_on_the_left():
    t = cr.Thunk(lambda: np.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.array([1.0, 1.0]) + t, [2.0, 3.0])
    np.testing.assert_array_equal(np.eye(2) @ t, [1.0, 2.0])
    assert t.shape == (2,)


def test_inplaceable_thunk_arithmetic_uses_its_value():
    t = cr.InplaceableThunk(lambda acc: acc, cr.Thunk(lambda: 2.0))
    assert t + 1.0 == 3.0 and cr.unthunk(t) == 2.0


# ----- structural tangents -----


def test_tangent_is_specialised_and_cached():
    assert cr.Tangent[Point] is cr.Tangent[Point]
    t = cr.Tangent[Point](x=1.0)
    assert isinstance(t, cr.Tangent) and type(t).primal_type is Point
    assert t.x == 1.0 and t.y is cr.ZeroTangent() and t["y"] is cr.ZeroTangent()
    with pytest.raises(AttributeError):
        t.z
    with pytest.raises(TypeError):
        cr.Tangent(x=1.0)


def test_tangent_fields_positionally_for_dataclass_and_namedtuple():
    assert cr.Tangent[Point](1.0, 2.0).y == 2.0
    assert cr.Tangent[Pair](1.0, 2.0).second == 2.0
    assert cr.Tangent[Pair](first=3.0).second is cr.ZeroTangent()


def test_tangent_of_tuple_list_dict():
    t = cr.Tangent[tuple](1.0, cr.ZeroTangent())
    assert t[0] == 1.0 and len(t) == 2 and list(t) == [1.0, cr.ZeroTangent()]
    d = cr.Tangent[dict]({"a": 1.0})
    assert d["a"] == 1.0 and d["b"] is cr.ZeroTangent()
    assert cr.Tangent[list](1.0, 2.0)[1] == 2.0


def test_tangent_is_immutable():
    t = cr.Tangent[Point](x=1.0)
    with pytest.raises(AttributeError):
        t.x = 2.0


def test_tangent_arithmetic_and_equality():
    t = cr.Tangent[Point](x=1.0, y=2.0)
    assert -t == cr.Tangent[Point](x=-1.0, y=-2.0)
    assert 2.0 * t == t * 2.0 == cr.Tangent[Point](x=2.0, y=4.0)
    assert t / 2.0 == cr.Tangent[Point](x=0.5, y=1.0)
    assert t + t == cr.Tangent[Point](x=2.0, y=4.0)
    assert t - t == cr.ZeroTangent()
    assert cr.Tangent[Point](x=0.0) == cr.ZeroTangent()
    assert cr.Tangent[Point](x=1.0) == cr.Tangent[Point](x=1.0, y=cr.ZeroTangent())
    assert t * cr.ZeroTangent() is cr.ZeroTangent()


def test_semi_structural_tangent_with_natural_fields():
    w = np.ones(3)
    t = cr.Tangent[Frozen](w=cr.Thunk(lambda: 2 * w), b=cr.ZeroTangent())
    s = cr.add(t, cr.Tangent[Frozen](w=w, b=1.0))
    np.testing.assert_array_equal(s.w, 3 * w)
    assert s.b == 1.0


def test_adding_tangents_of_unrelated_types_raises_naming_both():
    with pytest.raises(TypeError, match=r"Point.*Pair|Pair.*Point"):
        cr.add(cr.Tangent[Point](x=1.0), cr.Tangent[Pair](first=1.0))
    with pytest.raises(TypeError, match="Point"):
        cr.Tangent[Point](x=1.0) + cr.Tangent[Plain](a=1.0)


@pytest.mark.parametrize(
    "primal, tangent, expected",
    [
        (Point(1.0, 2.0), cr.Tangent[Point](x=0.5), Point(1.5, 2.0)),
        (Pair(1.0, 2.0), cr.Tangent[Pair](second=1.0), Pair(1.0, 3.0)),
        ((1.0, 2.0), cr.Tangent[tuple](1.0, 1.0), (2.0, 3.0)),
        ([1.0, 2.0], cr.Tangent[list](1.0, cr.ZeroTangent()), [2.0, 2.0]),
        ({"a": 1.0, "b": 2.0}, cr.Tangent[dict]({"a": 1.0}), {"a": 2.0, "b": 2.0}),
    ],
)
def test_primal_plus_tangent_moves_fields_and_keeps_the_primal(primal, tangent, expected):
    before = copy.deepcopy(primal)
    moved = primal + tangent
    assert type(moved) is type(primal) and moved == expected
    assert primal == before


def test_primal_plus_tangent_frozen_dataclass_with_array():
    w = np.ones(2)
    p = Frozen(w=w, b=1.0)
    q = p + cr.Tangent[Frozen](w=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(q.w, [2.0, 3.0])
    np.testing.assert_array_equal(p.w, [1.0, 1.0])
    assert q.b == 1.0 and q is not p


def test_primal_plus_tangent_plain_and_slotted_objects():
    p = Plain(1.0, 2.0) + cr.Tangent[Plain](b=1.0)
    assert (p.a, p.b) == (1.0, 3.0)
    s = Slotted(1.0, 2.0) + cr.Tangent[Slotted](p=1.0)
    assert (s.p, s.q) == (2.0, 2.0)


def test_primal_plus_tangent_with_unknown_field_raises():
    with pytest.raises(AttributeError, match="zz"):
        Plain(1.0, 2.0) + cr.Tangent[Plain](zz=1.0)


def test_tangent_deepcopy_and_pickle():
    t = cr.Tangent[Point](x=np.ones(2))
    t2 = copy.deepcopy(t)
    assert t2 == t and type(t2) is type(t)
    assert pickle.loads(pickle.dumps(cr.Tangent[tuple](1.0, 2.0))) == cr.Tangent[tuple](1.0, 2.0)


def test_a_namedtuple_tangent_is_indexed_by_position_as_the_namedtuple_is():
    Pair = namedtuple("Pair", "a b")
    t = cr.Tangent[Pair](a=1.0)
    assert t[0] == 1.0 and t[1] == cr.ZeroTangent() and t["a"] == 1.0


def test_a_field_the_primal_lacks_is_refused_when_the_tangent_is_made():
    @dataclasses.dataclass
    class Model:
        w: float

    with pytest.raises(TypeError, match="Model has no field 'typo'; its fields are w"):
        cr.Tangent[Model](w=1.0, typo=5.0)
