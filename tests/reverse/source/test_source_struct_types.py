"""The source engine specializes on the element types of structured arguments and captured
values (tuples, namedtuples, lists, dicts with string keys, dataclass instances): what is taken
out of them (``a, b = p``, ``p[0]``, ``p["W"]``, ``p.W``, ``for w in p``) has a known type, so
operators on it call their rules directly and ``y = a * 2.0; y += b`` is known to update a new
array. The guard checks the element types the specialization relies on, and other element types
make a new specialization."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source
from chainrules.reverse.source import cache
from chainrules.reverse.source.simplify import STRUCT_ITEMS_AT_MOST, ArrayType, StructType, type_of_value
from chainrules.testing import check_grads
from chainrules.testing.checks import assert_approx

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4))

Layer = collections.namedtuple("Layer", ["W", "b"])


@dataclasses.dataclass
class Params:
    W: np.ndarray
    b: np.ndarray


def unpack_tuple(p, x):
    a, b = p
    y = a * 2.0
    y += b
    return np.sum(y**2)


def index_list(p, x):
    y = np.tanh(p[0] @ x)
    y += p[-1]
    return np.sum(y**2)


def dict_items(p, x):
    W, b = p["W"], p["b"]
    y = x @ W
    y += b
    return np.sum(np.sin(y) ** 2)


def namedtuple_fields(p, x):
    y = x @ p.W
    y += p.b
    return np.sum(np.exp(y))


def dataclass_fields(p, x):
    y = x @ p.W
    y *= p.b
    return np.sum(np.cos(y))


def nested(p, x):
    W, b = p["layer"]
    y = x @ W
    y += b
    y *= p["scale"]
    return np.sum(y**2)


def iterate(p, x):
    total = 0.0
    for w in p:
        total = total + np.sum(w * w)
    return total


def W():
    return RNG.standard_normal((4, 2))


def b():
    return RNG.standard_normal(2)


CASES = {
    "tuple": (unpack_tuple, lambda: (RNG.standard_normal(3), RNG.standard_normal(3)), ["rrule_mul(a, 2.0)"]),
    "list": (index_list, lambda: [RNG.standard_normal((3, 3)), b()[0] * np.ones(4)], ["rrule_operator_matmul("]),
    "dict": (dict_items, lambda: {"W": W(), "b": b()}, ["rrule_operator_matmul(x, W)", "= p['W']\n"]),
    "namedtuple": (namedtuple_fields, lambda: Layer(W(), b()), ["rrule_operator_matmul(", "= p.W\n"]),
    "dataclass": (dataclass_fields, lambda: Params(W(), b()), ["rrule_operator_matmul(", "= p.b\n"]),
    "nested": (nested, lambda: {"layer": (W(), b()), "scale": 0.5}, ["rrule_operator_matmul(x, W)"]),
    "iterate": (iterate, lambda: (W(), W(), W()), ["rrule_mul(w, w)"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_through_structures_agree_with_the_tape_and_finite_differences(name):
    fn, make, _ = CASES[name]
    p = make()
    got = cr.gradient(fn, p, X, engine="source")
    want = cr.gradient(fn, p, X, engine="tape")
    assert_approx(got, want)
    check_grads(fn, (p, X), modes=("reverse",), order=1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_typed_elements_call_their_rules_directly(name):
    fn, make, direct = CASES[name]
    text = source.show(fn, make(), X)
    for call in direct:
        assert call in text, text
    assert "pullback(operator.matmul" not in text and "pullback(operator.mul" not in text, text


def test_augmented_assignment_on_an_unpacked_element_works_as_on_an_argument():
    # the example that used to be refused: `y` is a new array made from `a`, an element of `p`
    p = (np.arange(3.0), np.ones(3))
    dp, _ = cr.gradient(unpack_tuple, p, X)
    expected = 2 * (2 * p[0] + p[1])  # d/db of sum((2a + b)**2); d/da is twice it
    assert_approx(tuple(dp), (2 * expected, expected))
    assert "check_update(y, b" in source.show(unpack_tuple, p, X)  # rebound, with its run-time check


def test_the_guard_checks_the_elements_relied_on():
    text = source.show(dict_items, {"W": W(), "b": b(), "unused": "text"}, X)
    assert "type(p.get('W')) is not ndarray" in text
    assert "p.get('W').dtype != float64 or p.get('W').ndim != 2" in text
    assert "unused" not in text  # an element the function does not read is not checked


def pair_product(p):
    y = p[0] * p[-1]
    y += p[0]
    return np.sum(y)


def test_other_element_types_make_a_new_specialization():
    a, c = RNG.standard_normal(3), RNG.standard_normal(3)
    calls = [
        (a, c),
        (a.astype(np.float32), c.astype(np.float32)),
        (2.0, c),
        [a, c],
        [a, c, 3.0 * c],  # p[-1] is another element: the length is checked
        (a.astype(np.float32), 2.0),
    ]
    for p in calls:
        (got,) = cr.gradient(pair_product, p)
        (want,) = cr.gradient(pair_product, p, engine="tape")
        assert_approx(got, want)
        for g, x in zip(got, p):  # (an element the result does not depend on: ZeroTangent)
            assert isinstance(g, cr.ZeroTangent) or np.asarray(g).dtype == np.asarray(x).dtype
    before = cache.stats["compiled"]
    for p in calls:  # each specialization is found again, none made anew
        cr.gradient(pair_product, p)
    assert cache.stats["compiled"] == before


def weights(p):
    return np.sum(X @ p["W"] + p["b"])


def test_a_dict_with_other_keys_or_types_is_respecialized():
    first = {"W": W(), "b": b()}
    calls = [
        first,
        {"b": b().astype(np.float32), "W": W().astype(np.float32)},
        {"W": W(), "b": 1.5, "extra": "text"},
        {"W": W().astype(np.float32), "b": np.float32(1.5)},
    ]
    for p in calls:
        (got,) = cr.gradient(weights, p)
        (want,) = cr.gradient(weights, p, engine="tape")
        assert_approx(got, want)
        assert np.asarray(got["W"]).dtype == p["W"].dtype
    with pytest.raises(KeyError):  # a missing key is the user's KeyError, not the guard's
        cr.gradient(weights, {"W": W()})


def alias_element(p):
    y = p[0]
    y += 1.0
    return np.sum(y * y)


def alias_argument(a):
    y = a
    y += 1.0
    return np.sum(y * y)


def test_an_element_is_the_arguments_own_object():
    # `y = p[0]; y += 1.0` would update the caller's array in place, as `y = a; y += 1.0` would
    with pytest.raises(cr.UnsupportedSyntaxError, match="augmented assignment") as by_element:
        cr.gradient(alias_element, (np.arange(3.0), np.ones(3)))
    with pytest.raises(cr.UnsupportedSyntaxError, match="augmented assignment") as by_argument:
        cr.gradient(alias_argument, np.arange(3.0))
    line = alias_element.__code__.co_firstlineno + 2
    assert f"test_source_struct_types.py:{line}:" in str(by_element.value)
    assert str(by_element.value).split(": ", 1)[1] == str(by_argument.value).split(": ", 1)[1]


STATE = {"W": np.ones((4, 2)), "b": np.zeros(2)}


def reset():
    STATE["W"] = STATE["W"].astype(np.float32)  # changes the dict the function was given


def read_after_a_call(p):
    first = X @ p["W"]
    reset()
    return np.sum(first) + np.sum(X @ p["W"] + p["b"])


def test_elements_of_a_dict_read_after_a_call_are_not_typed():
    # the call might have changed the dict: what is read after it goes through the dispatcher
    STATE["W"] = np.ones((4, 2))
    text = source.show(read_after_a_call, STATE)
    before, after = text.split("reset()", 1)
    assert "rrule_getitem(p, 'W')" in before
    assert "pullback(operator.getitem, p, 'W')" in after and "pullback(operator.getitem, p, 'b')" in after
    STATE["W"] = np.ones((4, 2))
    (got,) = cr.gradient(read_after_a_call, STATE)
    STATE["W"] = np.ones((4, 2))
    (want,) = cr.gradient(read_after_a_call, STATE, engine="tape")
    assert_approx(got, want)
    assert_approx(got["b"], 3.0 * np.ones(2))


def test_a_captured_dict_has_typed_elements():
    params = {"W": W(), "b": b()}

    def model(x):
        return np.sum(np.tanh(x @ params["W"] + params["b"]))

    x = RNG.standard_normal((3, 4))
    assert "rrule_operator_matmul(x, y_1)" in source.show(model, x)
    assert_approx(cr.gradient(model, x), cr.gradient(model, x, engine="tape"))
    params["W"] = params["W"].astype(np.float32)  # another type in the same cell: made again
    assert_approx(cr.gradient(model, x), cr.gradient(model, x, engine="tape"))


def test_large_structures_are_not_typed_element_by_element():
    many = tuple(np.ones(2) for _ in range(1000))
    assert type_of_value(many) is tuple
    small = tuple(np.ones(2) for _ in range(STRUCT_ITEMS_AT_MOST))
    element = ArrayType(np.dtype(float), 1)
    assert type_of_value(small) == StructType("tuple", tuple, tuple((i, element) for i in range(len(small))))

    def total(p):
        return np.sum(p[0] * p[-1])

    text = source.show(total, many)
    assert "p[0]" not in text.splitlines()[2]  # the guard: the class alone
    assert_approx(cr.gradient(total, many)[0][0], many[-1])


def log(w):
    return w  # a function of the user's: it might change the list it is given


def iterate_and_call(p):
    total = 0.0
    for w in p:
        total = total + np.sum(log(w) * w)
    return total


def test_a_loop_over_a_list_that_calls_code_is_not_typed():
    p = [W(), W()]
    text = source.show(iterate_and_call, p)
    assert "if type(p) is not list:" in text  # the elements are neither typed nor checked
    assert "len(p) != 2" in source.show(iterate, p, X)  # (without the call, they are)
    assert_approx(cr.gradient(iterate_and_call, p), cr.gradient(iterate_and_call, p, engine="tape"))


def scale(w):
    return 2.0 * w


def map_then_read(p):
    doubled = list(map(scale, p["ws"]))  # `map` is pure, but it calls `scale`, which might write into `p`
    return np.sum(doubled[0] * p["W"])


def test_a_call_given_a_function_of_the_users_may_change_a_structure():
    p = {"ws": (W(),), "W": W()}
    text = source.show(map_then_read, p)
    before, after = text.split("pullback(map, scale", 1)
    assert "rrule_getitem(p, 'ws')" in before and "pullback(operator.getitem, p, 'W')" in after
    assert_approx(cr.gradient(map_then_read, p), cr.gradient(map_then_read, p, engine="tape"))
