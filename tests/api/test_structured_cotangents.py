"""A value of a structured output's own type (a dataclass instance) is taken as its cotangent by
``cr.pullback``, the same in both reverse engines: its fields are the fields' cotangents."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian


@dataclasses.dataclass
class P:
    a: np.ndarray
    b: float


@dataclasses.dataclass
class Labelled:
    value: P
    label: str


class Plain:
    def __init__(self, scale, name):
        self.scale = scale
        self.name = name


X = np.array([1.0, 2.0])
ENGINES = ["source", "tape"]


def _make(a):
    return P(a * 2, a[0] * a[1])


def _vjp_by_finite_differences(dy_a, dy_b):
    J = fd_jacobian(lambda a: np.concatenate([a * 2, [a[0] * a[1]]]), X)
    return np.concatenate([dy_a, [dy_b]]) @ J


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dataclass_instance_is_the_cotangent_of_a_dataclass_output(engine):
    _, back = cr.pullback(_make, X, engine=engine)
    (dx,) = back(P(np.array([1.0, -1.0]), 0.5))
    np.testing.assert_allclose(dx, _vjp_by_finite_differences(np.array([1.0, -1.0]), 0.5), rtol=1e-7)
    (same,) = back(cr.Tangent[P](a=np.array([1.0, -1.0]), b=0.5))
    np.testing.assert_array_equal(dx, same)


@pytest.mark.parametrize("engine", ENGINES)
def test_inside_a_tuple_and_nested_with_a_string_field(engine):
    def f(a):
        return Labelled(_make(a), "out"), a * a

    _, back = cr.pullback(f, X, engine=engine)
    (dx,) = back((Labelled(P(np.ones(2), 1.0), "ignored"), np.ones(2)))
    np.testing.assert_allclose(dx, _vjp_by_finite_differences(np.ones(2), 1.0) + 2 * X, rtol=1e-7)


def test_a_plain_object_is_the_cotangent_of_a_plain_object_output():
    # (the source engine constructs dataclasses and namedtuples only; the tape runs any constructor)
    _, back = cr.pullback(lambda s: Plain(s * s, "n"), 3.0, engine="tape")
    assert back(Plain(2.0, "n")) == (12.0,)
