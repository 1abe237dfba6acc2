"""Dict subclasses (``OrderedDict``, ``defaultdict``) given to the tape: their cotangent is a
``Tangent[dict]``, as the source engine gives (a ``Tangent`` takes a mapping only for ``dict``).
A bound method of a container subclass gets its object's cotangent as a callable object does."""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source, trace

W = np.array([1.0, 2.0])


def weighted_sum(d):
    return np.sum(d["w"]) * d["b"]


@pytest.mark.parametrize(
    "params",
    [OrderedDict(w=W, b=2.0), defaultdict(float, w=W, b=2.0)],
    ids=lambda d: type(d).__name__,
)
def test_a_dict_subclass_input_gets_the_source_engines_cotangent(params):
    (tape,) = cr.gradient(weighted_sum, params, engine="tape")
    (by_source,) = cr.gradient(weighted_sum, params)
    assert type(tape) is type(by_source) is cr.Tangent[dict]
    assert tape["b"] == by_source["b"] == 3.0
    np.testing.assert_array_equal(tape["w"], by_source["w"])
    np.testing.assert_array_equal(tape["w"], [2.0, 2.0])


class Params(OrderedDict):
    def total(self):
        return weighted_sum(self)


class Pair(list):
    def total(self):
        return self[0] * self[1]


@pytest.mark.parametrize("owner", [Params(w=W, b=2.0), Pair([2.0, 3.0])], ids=lambda o: type(o).__name__)
def test_a_method_of_a_container_subclass_gets_its_objects_cotangent_as_the_source_engine_gives(owner):
    (tape,) = trace.pullback_full(owner.total)[1](1.0)
    (by_source,) = source.pullback_full(owner.total)[1](1.0)
    assert type(tape) is type(by_source)
    for key, value in by_source.items():
        np.testing.assert_array_equal(cr.unthunk(tape[key]), value)
