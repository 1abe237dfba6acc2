"""The cotangent of a tuple, list, dict, namedtuple or dataclass passed in is laid out as the
tape lays it out, whichever way the function read it (element by element, whole, not at all):
every item in the input's order, ``NoTangent()`` for an integer number, a bool, a string or
``None`` (docs/tangents.md), ``ZeroTangent()`` for a float item nothing flowed back to; a
dataclass's fields only, an attribute its ``__post_init__`` set being a constant of the object."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.source import pullback_full
from chainrules.testing import check_grads

Named = collections.namedtuple("Named", "a n s b")


@dataclasses.dataclass
class Config:
    w: np.ndarray
    n: int
    name: str
    u: float = 1.0


@dataclasses.dataclass
class Derived:
    w: np.ndarray
    s: float

    def __post_init__(self):
        self.total = 2 * self.s  # no field: a constant of the object


def scaled_by_config(c):
    return np.sum(c.w) * c.n


def read_by_a_function(d):
    return second_entry(d) * 2.0


def second_entry(d):
    return d["b"]


def read_at_an_index(t, i):
    return t[i] * 2.0


def sum_of_derived(b):
    return np.sum(b.w) * b.total


CONFIG = Config(np.array([1.0, 2.0]), 3, "a", 2.0)
CASES = {
    "dataclass fields": (scaled_by_config, (CONFIG,)),
    "dataclass field unread": (lambda c: c.u * c.n, (CONFIG,)),
    "tuple of settings": (lambda t: t[0] * t[1], ((2.0, 3, "s", 4.0, None, True),)),
    "list": (lambda t: t[0] * t[1], ([2.0, 3, "s", 4.0, np.array([1.0])],)),
    "dict in its order": (lambda d: d["b"] * d["a"], ({"a": 2.0, "n": 3, "b": 4.0, "s": "x", "z": 5.0},)),
    "namedtuple": (lambda t: t.b * 2.0, (Named(2.0, 3, "s", 4.0),)),
    "nested": (lambda d: d["l"][0] * d["l"][1], ({"l": [1.0, 2.0, 3], "k": (4, "x"), "e": ()},)),
    "read whole": (read_by_a_function, ({"a": 1.0, "n": 3, "b": 2.0},)),
    "read at a variable index": (read_at_an_index, ((1.0, 2.0, 3), 1)),
    "empty dict": (lambda d, x: x * 2.0, ({}, 1.0)),
    "empty tuple": (lambda t, x: x * 2.0, ((), 1.0)),
    "settings only": (lambda d, x: x * d["n"], ({"n": 3}, 1.0)),
    "float unread": (lambda d, x: x * 2.0, ({"a": 1.0}, 1.0)),
    "derived attribute": (sum_of_derived, (Derived(np.array([1.0, 2.0]), 2.0),)),
    "integer and bool arrays": (
        lambda d: np.sum(d["w"]) + 0.0 * np.sum(d["i"]),
        ({"w": np.ones(2), "i": np.array([1, 2]), "b": np.array([True])},),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cotangent_of_a_structure_is_the_tapes(name):
    f, args = CASES[name]
    assert repr(cr.gradient(f, *args, engine="source")) == repr(cr.gradient(f, *args, engine="tape"))


def test_a_hessian_of_a_structure_is_laid_out_as_the_tapes():
    def f(d):
        return np.sum(d["w"] ** 3) * d["s"] * d["n"]

    d = {"w": np.array([0.5, 1.5]), "n": 3, "s": 2.0}
    assert repr(cr.hessian(f, d)) == repr(cr.hessian(f, d, engine="tape"))


def test_settings_in_a_dataclass_have_no_tangent():
    g = pullback_full(scaled_by_config, CONFIG)[1](1.0)[1]
    assert list(g.backing) == ["w", "n", "name", "u"]
    assert g.n == cr.NoTangent() and g.name == cr.NoTangent() and g.u == cr.ZeroTangent()
    np.testing.assert_array_equal(g.w, [3.0, 3.0])


def test_an_attribute_set_after_construction_is_a_constant_of_the_object():
    b = Derived(np.array([1.0, 2.0]), 2.0)
    g = cr.gradient(sum_of_derived, b)[0]
    assert list(g.backing) == ["w", "s"] and g.s == cr.ZeroTangent()
    check_grads(sum_of_derived, (b,), modes=("reverse",), order=1, engine="source")
