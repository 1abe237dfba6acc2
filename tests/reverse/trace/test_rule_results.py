"""Results of rules that the tape runs (a ``cr.checkpoint`` function, a rule of the user's own
function run by a source gradient inside a tape gradient): numbers and arrays inside tuples,
lists, dicts, namedtuples, dataclasses and objects of the user's classes are tracked leaf by leaf,
and the rule's pullback gets a cotangent of the result's structure, as the source engine gives it.
A result the tape cannot take apart (a closure, a generator, a library's object) that holds
numbers or arrays is refused, naming the callable and the line: returned as it is, the derivatives
through it would be silently zero. One that holds none (a string, ``None``, an integer) is a
constant."""

from __future__ import annotations

import dataclasses
import re
import types
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr

HERE = re.escape(__file__)
X = np.array([0.3, 0.7])


class Holder:
    def __init__(self, a):
        self.a = a


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: np.ndarray
    label: str = "s"


Pair = namedtuple("Pair", "a n")


def _generator(a):
    yield from a


# what each kind of result looks like, how the function reads the array in it, and the cotangent
# of the array inside the cotangent of the result that its rule's pullback receives
KINDS = {
    "object": (Holder, lambda r: r.a, lambda d: d.a),
    "dict": (lambda a: {"a": a, "label": "s"}, lambda r: r["a"], lambda d: d["a"]),
    "object in a list": (lambda a: [Holder(a), 3], lambda r: r[0].a, lambda d: d[0].a),
    "dataclass": (Frozen, lambda r: r.a, lambda d: d.a),
    "object in a namedtuple": (lambda a: Pair(Holder(a), 2), lambda r: r.a.a, lambda d: d.a.a),
}
REFUSED = {
    "closure": (lambda a: lambda: a, lambda r: r()),
    "generator": (_generator, lambda r: np.stack(list(r))),
    "library object": (lambda a: types.SimpleNamespace(a=a), lambda r: r.a),
}


def _with_rule(make, read_ct):
    def g(x):
        return make(np.sin(x))

    def rrule_g(x):
        def g_pullback(dy):
            d = cr.unthunk(dy)
            dx = 0.0 * x if isinstance(d, cr.AbstractZero) else np.cos(x) * cr.unthunk(read_ct(d))
            return cr.NoTangent(), dx

        return make(np.sin(x)), g_pullback

    cr.rrule.register(g)(rrule_g)
    return g


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpointed_result_is_tracked_leaf_by_leaf(kind):
    make, read, _ = KINDS[kind]

    def f(x):
        return (read(cr.checkpoint(lambda x: make(np.sin(x)))(x)) ** 2).sum()

    (g,) = cr.gradient(f, X, engine="tape")  # a zero before
    np.testing.assert_allclose(g, 2 * np.sin(X) * np.cos(X))
    cr.testing.check_grads(f, (X,), modes=("reverse",), order=1, engine="tape")


@pytest.mark.parametrize("kind", KINDS)
def test_a_rules_result_under_a_tape_over_the_source_engine_is_tracked_leaf_by_leaf(kind):
    make, read, read_ct = KINDS[kind]
    g = _with_rule(make, read_ct)

    def inner(x):
        return (read(g(x)) ** 2).sum()

    def f(x):
        return cr.gradient(inner, x)[0].sum()

    np.testing.assert_allclose(cr.gradient(inner, X)[0], 2 * np.sin(X) * np.cos(X))
    (by_tape,) = cr.gradient(f, X, engine="tape")  # partial before: the result was a constant
    np.testing.assert_allclose(by_tape, 2 * np.cos(2 * X))
    np.testing.assert_allclose(by_tape, cr.gradient(f, X, engine="source")[0])
    cr.testing.check_grads(f, (X,), modes=("reverse",), order=1, engine="tape")


def test_constants_beside_the_tracked_leaves_pass_through():
    def make(x):
        return (Holder(np.sin(x)), "label", None, 3, lambda: 3, (i for i in range(2)))

    def f(x):
        held, label, nothing, n, three, count = cr.checkpoint(make)(x)
        assert (label, nothing, n, three(), list(count)) == ("label", None, 3, 3, [0, 1])
        return (held.a**2).sum()

    np.testing.assert_allclose(cr.gradient(f, X, engine="tape")[0], 2 * np.sin(X) * np.cos(X))


def _refused(call, line_marker: str, name: str):
    with pytest.raises(cr.DroppedDerivativeError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, cr.ChainRulesError)
    assert re.search(rf"the rule of \S*\.{name} returned a", message)
    assert re.search(rf"\(at {HERE}:\d+\)", message)
    line = int(re.search(rf"\(at {HERE}:(\d+)\)", message).group(1))
    with open(__file__) as source:
        assert line_marker in source.read().splitlines()[line - 1]
    assert "engine='source'" in message
    return message


@pytest.mark.parametrize("kind", REFUSED)
def test_a_checkpointed_result_the_tape_cannot_take_apart_is_refused(kind):
    make, read = REFUSED[kind]

    def build(x):
        return make(np.sin(x))

    def f(x):
        return (read(cr.checkpoint(build)(x)) ** 2).sum()  # the checkpointed call

    message = _refused(lambda: cr.gradient(f, X, engine="tape"), "# the checkpointed call", "build")
    assert f"not inside a {type(make(X)).__qualname__}" in message


@pytest.mark.parametrize("kind", REFUSED)
def test_a_rules_result_the_tape_cannot_take_apart_is_refused_under_a_tape_over_the_source_engine(kind):
    make, read = REFUSED[kind]
    g = _with_rule(make, lambda d: d.a)

    def inner(x):
        return (read(g(x)) ** 2).sum()  # the ruled call

    def f(x):
        return cr.gradient(inner, x)[0].sum()

    _refused(lambda: cr.gradient(f, X, engine="tape"), "# the ruled call", "g")
    if kind == "closure":  # the source engine gives the closure a Tangent[function] of what it captured
        np.testing.assert_allclose(cr.gradient(f, X, engine="source")[0], 2 * np.cos(2 * X))


def test_a_result_inside_a_structure_that_the_tape_cannot_take_apart_is_refused():
    def build(x):
        return {"a": np.cos(x), "later": lambda: np.sin(x)}

    def f(x):
        r = cr.checkpoint(build)(x)  # the call
        return (r["a"] * r["later"]()).sum()

    _refused(lambda: cr.gradient(f, X, engine="tape"), "# the call", "build")
