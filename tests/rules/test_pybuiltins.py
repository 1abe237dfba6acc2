"""The builtins' rules against finite differences: numbers, selection, reduction, containers, attributes."""

import collections
import copy
import dataclasses
import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import active_engine
from chainrules.testing import test_frule, test_rrule

RNG = np.random.default_rng(2)
V3 = RNG.standard_normal(3)
A31 = RNG.standard_normal((3, 1))
M23 = RNG.standard_normal((2, 3))
Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"

    @property
    def scale(self):
        return 2.0 * self.b


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


LAYER = Layer(np.array([1.0, -2.0]), 0.5)

# builtin, argument tuples, keyword arguments
DIFFERENTIABLE = [
    (abs, [(-1.5,), (3.0 - 4.0j,), (A31,)], {}),
    (pow, [(1.5, 2.5), (2.0, 3), (1 + 1j, 2.0), (np.abs(A31) + 0.5, 1.5), (1.5, 2.5, None)], {}),
    (float, [(2.5,), (3,)], {}),
    (complex, [(1.5,), (1.5, -2.0), (1 + 2j, 0.5 - 1j), (1 + 2j,)], {}),
    (divmod, [(7.3, 2.0), (-7.3, 2.5), (M23 * 3, 1.3)], {}),
    (min, [(1.5, -2.0), (1.5, -2.0, 0.5), ([1.5, -2.0, 0.5],), ((3.0, A31.ravel()[0]),), (V3,)], {}),
    (max, [(1.5, -2.0), (1.5, -2.0, 0.5), ([1.5, -2.0, 0.5],), ((-3.0, 2.0),), (V3,)], {}),
    (min, [([1.5, -2.0, 0.5],), (1.5, -2.5, 0.5)], {"key": abs}),
    (max, [([1.5, -2.0, 0.5],)], {"key": lambda v: -v}),
    (sum, [([1.5, -2.0, 0.5],), ((1.5, -2.0), 4.0), ([A31, 2.0, M23[:1]],), (M23,), ([A31], V3)], {}),
    (sum, [([1.5, -2.0],)], {"start": 3.0}),
    (sum, [([[1.5], [-2.0, A31]], []), (((1.5,), (2.5, 3.5)), (0.5,))], {}),  # concatenation
    (sum, [([[1.5], [-2.0]],)], {"start": [0.5]}),
    (sorted, [([1.5, -2.0, 0.5],), ((0.3, 2.0, -1.0, 4.0),), (V3,)], {}),
    (sorted, [([1.5, -2.0, 0.5],)], {"reverse": True}),
    (sorted, [([1.5, -2.0, 0.5],)], {"key": abs}),
    (tuple, [([1.5, -2.0, A31],), ((1.5,),), (M23,)], {}),
    (list, [((1.5, -2.0, A31),), ([1.5],), (V3,)], {}),
    (dict, [({"a": 1.5, "b": A31},), ([("a", 1.5), ("b", -2.0)],), ((("a", 1.5), ["a", -2.0], ("b", 3.0)),)], {}),
    (dict, [({"a": 1.5, "b": 2.5},), ([("a", 1.5), ("b", 2.5)],)], {"b": 4.0}),
    (getattr, [(LAYER, "w"), (LAYER, "b"), (Point(1.5, 2.5), "y"), (1.5 - 2.5j, "real"), (1.5 - 2.5j, "imag")], {}),
    (getattr, [(2.5, "real"), (LAYER, "missing", 3.0)], {}),
    (dict.get, [({"a": 1.5, "b": A31}, "b"), ({"a": 1.5}, "a", 2.5), ({"a": 1.5}, "c", 2.5), ({"a": V3}, "c")], {}),
]

NONDIFF = [
    (round, (2.7,)),
    (round, (2.75, 1)),
    (int, (2.7,)),
    (bool, (2.7,)),
    (len, ([1.0, 2.0],)),
    (range, (3,)),
    (slice, (1, 3)),
    (isinstance, (2.7, float)),
    (issubclass, (bool, int)),
    (type, (2.7,)),
    (id, (2.7,)),
    (hash, (2.7,)),
    (str, (2.7,)),
    (repr, (2.7,)),
    (ascii, (2.7,)),
    (format, (2.7, ".1f")),
    (print, ()),
    (ord, ("a",)),
    (chr, (97,)),
    (bin, (5,)),
    (oct, (5,)),
    (hex, (5,)),
    (callable, (abs,)),
    (hasattr, (LAYER, "w")),
    (all, ([1.0, 0.0],)),
    (any, ([1.0, 0.0],)),
    (list.index, ([1.5, 2.5, 1.5], 2.5)),
    (tuple.index, ((1.5, "a", 2.5), 2.5)),
    (list.count, ([1.5, 2.5, 1.5], 1.5)),
    (tuple.count, ((1.5, 2.5), 0.5)),
    (pow, (3, 4, 5)),
    (min, ({"a": 1.0, "b": 2.0},)),
    (max, ("abc",)),
    (sum, (range(4),)),
    (sorted, ({"b": 1.0, "a": 2.0},)),
    (tuple, ("abc",)),
    (list, ({"a": 1.0},)),
    (float, ("2.5",)),
    (complex, ("1+2j",)),
    (getattr, (math, "pi")),
    (getattr, (np.ones((2, 3)), "shape")),
]


def _rows(table):
    return [
        pytest.param(f, args, kw, id=f"{f.__name__}-{','.join(kw)}-{i}")
        for f, points, kw in table
        for i, args in enumerate(points)
    ]


@pytest.mark.parametrize("f, args, kw", _rows(DIFFERENTIABLE))
def test_builtins_match_finite_differences(f, args, kw):
    test_rrule(f, *args, fkwargs=kw)
    test_frule(f, *args, fkwargs=kw)


@pytest.mark.parametrize("f, args", [pytest.param(f, a, id=f"{f.__name__}-{i}") for i, (f, a) in enumerate(NONDIFF)])
def test_non_differentiable(f, args, capsys):
    y, back = cr.rrule(f, *args)
    assert y == f(*args) or f is id
    assert back(1.0) == (cr.NoTangent(),) * (1 + len(args))
    assert cr.frule((cr.NoTangent(),) * (1 + len(args)), f, *args)[1] == cr.NoTangent()


@pytest.mark.parametrize(
    "f, args, kw, expected",
    [
        # ties: the first of the equal elements is selected, as Python's own min and max return it
        (min, (1.0, 1.0), {}, (1.0, cr.ZeroTangent())),
        (max, (2.0, 1.0, 2.0), {}, (1.0, cr.ZeroTangent(), cr.ZeroTangent())),
        (max, ([2.0, 1.0, 2.0],), {}, (cr.Tangent[list](1.0, cr.ZeroTangent(), cr.ZeroTangent()),)),
        (min, ([1.5, -1.5],), {"key": abs}, (cr.Tangent[list](1.0, cr.ZeroTangent()),)),
        (max, (2.0, 0), {}, (1.0, cr.NoTangent())),  # an integer that was not selected
        (min, ([],), {"default": 5.0}, (cr.NoTangent(),)),
        # sorted: the cotangent of position j goes to the element that landed there (stable on ties)
        (sorted, ([3.0, 1.0, 3.0, 2.0],), {}, (cr.Tangent[list](2.0, 0.0, 3.0, 1.0),)),
        (sorted, ([3.0, 1.0, 3.0, 2.0],), {"reverse": True}, (cr.Tangent[list](0.0, 3.0, 1.0, 2.0),)),
        (sum, ([1.5, 2, True],), {}, (cr.Tangent[list](1.0, cr.NoTangent(), cr.NoTangent()),)),
        (sum, ([1.5, 2.5],), {"start": 1.0}, (cr.Tangent[list](1.0, 1.0),)),  # keywords get no cotangent
        (pow, (2.0, 3.0, None), {}, (12.0, 8.0 * math.log(2.0), cr.NoTangent())),
        (float, (3,), {}, (1.0,)),
        (float, (np.float32(1.5),), {}, (np.float32(1.0),)),
        (complex, (1.0, 2.0), {}, (1.0, 0.0)),
        (divmod, (7.5, 2.0), {}, (cr.ZeroTangent(), cr.ZeroTangent())),
        (
            dict,
            ([("a", 1.0), ("a", 2.0)],),
            {},
            (cr.Tangent[list](cr.ZeroTangent(), cr.Tangent[tuple](cr.NoTangent(), 1.0)),),
        ),
        (getattr, (LAYER, "name"), {}, (cr.ZeroTangent(), cr.NoTangent())),
    ],
)
def test_conventions(f, args, kw, expected):
    y, back = cr.rrule(f, *args, **kw)
    if isinstance(y, list):
        dy = cr.Tangent[list](*[float(i) for i in range(len(y))])
    elif isinstance(y, tuple):
        dy = cr.Tangent[tuple](cr.ZeroTangent(), cr.ZeroTangent())
    elif isinstance(y, dict):
        dy = cr.Tangent[dict]({k: 1.0 for k in y})
    elif isinstance(y, str):
        dy = cr.NoTangent()
    else:
        dy = 1.0
    assert back(dy)[1:] == expected


def test_complex_gradient_convention():
    # the gradient of |z|^2 at 1 + 2i is 2 + 4i; of (z.imag)^2 it is 4i
    z = 1.0 + 2.0j
    y, back = cr.rrule(abs, z)
    assert np.isclose(back(2.0 * y)[1], 2.0 + 4.0j)
    y, back = cr.rrule(getattr, z, "imag")
    assert back(2.0 * y)[1] == 4.0j


def test_getattr_of_fields_is_structural():
    obj = Slotted(np.array([1.0, 2.0]))
    dw = cr.rrule(getattr, obj, "w")[1](np.ones(2))[1]
    assert isinstance(dw, cr.Tangent) and type(dw).primal_type is Slotted and np.array_equal(dw.w, np.ones(2))
    assert cr.frule((cr.NoTangent(), dw, cr.NoTangent()), getattr, obj, "w")[1] is dw.w
    assert cr.rrule(getattr, LAYER, "w")[1](cr.ZeroTangent())[1] == cr.ZeroTangent()


def test_getattr_of_a_method_passes_the_object_tangent_through():
    t = cr.Tangent[dict]({"a": 1.0})
    back = cr.rrule(getattr, {"a": 1.0}, "get")[1]
    assert back(t)[1] is t
    assert back(cr.Tangent[Layer](b=1.0))[1] == cr.ZeroTangent()  # not a tangent of a dict


def test_getattr_of_a_property_uses_the_active_engine():
    with pytest.raises(cr.ChainRulesError, match="no reverse-mode engine"):
        cr.rrule(getattr, LAYER, "scale")

    def engine(f, *args):
        assert f is Layer.scale.fget
        return f(*args), lambda dy: (cr.NoTangent(), cr.Tangent[Layer](b=2.0 * dy))

    with active_engine(engine):
        y, back = cr.rrule(getattr, LAYER, "scale")
    assert y == 1.0 and back(1.0) == (cr.NoTangent(), cr.Tangent[Layer](b=2.0), cr.NoTangent())
    with pytest.raises(TypeError, match="dual numbers"):
        cr.frule((cr.NoTangent(), cr.ZeroTangent(), cr.NoTangent()), getattr, LAYER, "scale")


def test_getattr_of_a_computed_c_attribute_is_a_clear_error():
    with pytest.raises(cr.NoRuleError, match="ndarray.flat is computed in C"):
        cr.rrule(getattr, np.ones((2, 3)), "flat")


@pytest.mark.parametrize("f", [sum, min, max, sorted, tuple, list])
def test_iterators_are_refused_with_a_clear_error(f):
    with pytest.raises(cr.NoRuleError, match="tuple, list or array"):
        cr.rrule(f, (v for v in [1.0, 2.0]))


def test_min_and_max_of_two_floats_take_the_fast_path_and_agree_with_python():
    for a, b in [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (math.nan, 1.0), (1.0, math.nan)]:
        for f in (min, max):
            y, back = cr.rrule(f, a, b)
            assert y is f(a, b)
            grads = back(1.0)[1:]
            assert grads == ((1.0, cr.ZeroTangent()) if y is a else (cr.ZeroTangent(), 1.0))


def test_sum_of_arrays_returns_shaped_cotangents():
    grads = cr.rrule(sum, [A31, 2.0, V3])[1](np.ones((3, 3)))[1]
    assert grads[0].shape == (3, 1) and type(grads[1]) is float and grads[1] == 9.0 and grads[2].shape == (3,)


def test_float_of_a_numpy_float32_has_a_float_tangent():
    assert type(cr.frule((cr.NoTangent(), np.float32(1.0)), float, np.float32(1.5))[1]) is float
    test_frule(float, np.float32(1.5))


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
@pytest.mark.parametrize(
    "x", [np.array([0.3, -1.2, 2.0]), 1.5, [0.4, np.array([1.0, 2.0])]], ids=["array", "float", "list"]
)
def test_copies(copier, x):
    test_rrule(copier, x)
    test_frule(copier, x)


def test_a_parameter_dict_copied_before_an_update_in_every_engine():
    """``copy.deepcopy`` of a dict of values being differentiated, and ``copy.copy`` of an array
    then written into: the source engine's rules, forward mode's and the tape's own copies."""

    def f(x):
        params = {"w": x, "b": x[0] * 2.0}
        saved = copy.deepcopy(params)
        params["w"] = params["w"] * 3.0
        shallow = copy.copy(saved["w"])
        shallow[0] = 5.0
        return np.sum(saved["w"] ** 2) + saved["b"] * np.sum(params["w"]) + np.sum(shallow)

    x = np.array([0.3, 1.2])
    expected = np.array([2 * x[0] + 12 * x[0] + 6 * x[1], 2 * x[1] + 6 * x[0] + 1.0])
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(f, x), [[14.0, 6.0], [6.0, 2.0]], rtol=1e-12)
