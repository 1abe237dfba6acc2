"""Forward rules whose output is a structure (a dict, a dataclass, a namedtuple): the output
becomes a structure of duals, item by item, as a tuple's does and as ``jvp`` seeds structured
inputs, so the user's code indexes it and reads its fields. A chunk of tangents pushed through
such a rule one tangent at a time is stacked item by item."""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import chainrules as cr

X = np.array([0.5, 1.0])


def as_dict(x):
    return {"out": 2.0 * x, "reg": x * x}


@cr.frule.register(as_dict)
def frule_as_dict(tangents, x):
    dx = tangents[1]
    return as_dict(x), cr.Tangent[dict]({"out": 2.0 * dx, "reg": 2.0 * x * dx})


@cr.rrule.register(as_dict)
def rrule_as_dict(x):
    def as_dict_pullback(dy):
        return cr.NoTangent(), 2.0 * dy["out"] + 2.0 * x * dy["reg"]

    return as_dict(x), as_dict_pullback


def as_ordered_dict(x):
    return OrderedDict(out=2.0 * x, nested={"reg": x * x})


@cr.frule.register(as_ordered_dict)
def frule_as_ordered_dict(tangents, x):  # a plain dict of tangents, a Tangent[dict] inside
    dx = tangents[1]
    return as_ordered_dict(x), {"out": 2.0 * dx, "nested": cr.Tangent[dict]({"reg": 2.0 * x * dx})}


@dataclasses.dataclass
class Fit:
    out: object
    reg: object
    label: str = "fit"


def as_dataclass(x):
    return Fit(2.0 * x, x * x)


@cr.frule.register(as_dataclass)
def frule_as_dataclass(tangents, x):
    dx = tangents[1]
    return as_dataclass(x), cr.Tangent[Fit](out=2.0 * dx, reg=2.0 * x * dx)


Pair = namedtuple("Pair", "out reg")


def as_namedtuple(x):
    return Pair(2.0 * x, x * x)


@cr.frule.register(as_namedtuple)
def frule_as_namedtuple(tangents, x):
    dx = tangents[1]
    return as_namedtuple(x), cr.Tangent[Pair](out=2.0 * dx, reg=2.0 * x * dx)


def by_key(x):
    d = as_dict(x)
    return d["out"] + d["reg"]


def by_ordered_key(x):
    d = as_ordered_dict(x)
    return d["out"] + d["nested"]["reg"]


def by_field(x):
    fit = as_dataclass(x)
    return fit.out + fit.reg


def by_name(x):
    pair = as_namedtuple(x)
    return pair.out + pair.reg


READERS = [by_key, by_ordered_key, by_field, by_name]


@pytest.mark.parametrize("f", READERS, ids=lambda f: f.__name__)
def test_the_output_of_a_rule_called_inside_is_read_item_by_item(f):
    assert cr.derivative(f, 0.5) == 3.0  # 2 + 2x


@pytest.mark.parametrize("f", READERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("chunk_size", [None, 1])
def test_a_chunk_pushed_one_tangent_at_a_time_is_stacked_item_by_item(f, chunk_size):
    J = cr.jacobian(f, X, mode="forward", chunk_size=chunk_size)
    np.testing.assert_array_equal(J, np.diag(2.0 + 2.0 * X))


def test_the_structures_kind_and_its_other_items_are_kept():
    def kinds(x):
        d, fit = as_ordered_dict(x), as_dataclass(x)
        assert type(d) is OrderedDict and fit.label == "fit"
        return d["out"] * fit.reg

    assert cr.derivative(kinds, 0.5) == 6.0 * 0.25  # (2x x^2)' = 6 x^2


def test_the_jacobian_of_the_ruled_function_itself_has_a_block_per_item():
    J = cr.jacobian(as_dataclass, X, mode="forward")
    np.testing.assert_array_equal(J.out, 2.0 * np.eye(2))
    np.testing.assert_array_equal(J.reg, np.diag(2.0 * X))
    J = cr.jacobian(as_dict, X, mode="forward")
    np.testing.assert_array_equal(J["reg"], np.diag(2.0 * X))


def halves(x):
    return {"half": x / 2.0}


@cr.frule.register(halves, batched=True)
def frule_halves(tangents, x):
    return halves(x), {"half": tangents[1] / 2.0}


def test_a_batched_rules_structured_output_is_fitted_item_by_item():
    np.testing.assert_array_equal(cr.jacobian(lambda x: halves(x)["half"], X, mode="forward"), np.eye(2) / 2.0)


def test_a_hessian_through_the_rules_of_a_function_with_a_dict_output():
    def product(x):
        d = as_dict(x)
        return np.sum(d["out"] * d["reg"])  # sum(2 x^3)

    np.testing.assert_array_equal(cr.hessian(product, X), np.diag(12.0 * X))


def pair(x):
    return 2.0 * x, x


@cr.frule.register(pair, batched=True)
def frule_pair(tangents, x):  # right for one tangent; a batch comes out item-last, so it runs one at a time
    dx = tangents[1]
    return pair(x), np.stack([2.0 * dx, dx], axis=-1)


def test_a_batched_rule_whose_batch_does_not_fit_the_structure_runs_one_tangent_at_a_time():
    def total(x):
        a, b = pair(x)
        return a + b

    assert cr.jacobian(total, 0.5, mode="forward") == 3.0


def untangled(x):
    return {"a": 2.0 * x, "b": x}


@cr.frule.register(untangled, batched=True)
def frule_untangled(tangents, x):  # the input's tangent, not a tangent of the dict
    return untangled(x), tangents[1]


def reads_untangled(x):
    return untangled(x)["a"]


@pytest.mark.parametrize(
    "differentiate",
    [lambda: cr.derivative(reads_untangled, 0.5), lambda: cr.jacobian(reads_untangled, X, mode="forward")],
    ids=["one tangent", "a chunk, then one tangent at a time"],
)
def test_a_tangent_that_is_not_the_structures_is_refused_naming_the_rule_and_line(differentiate):
    where = re.escape(f"{__file__}:{reads_untangled.__code__.co_firstlineno + 1}")
    with pytest.raises(TypeError, match=rf"frule for .*untangled \(called at {where}\).*is not a tangent of a dict"):
        differentiate()
