"""``jvp`` takes an integer number inside a structured argument for a setting, as ``jacobian``
and ``gradient`` do: its tangent is ignored, whatever was given for it, so ``jvp`` is ``J v``.
An integer argument of its own is differentiated (docs/tangents.md)."""

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    n: int = 2


Pair = collections.namedtuple("Pair", "x n")
LAYER = Layer(np.array([1.0, 2.0]), 3.0)


def layer_output(p):
    return np.sum(p.w) * p.b * p.n


def _jacobian_times(J, direction):
    return np.dot(J.w, direction.w) + J.b * direction.b


@pytest.mark.parametrize(
    "direction",
    [Layer(np.ones(2), 1.0), cr.Tangent[Layer](w=np.ones(2), b=1.0, n=5.0), {"w": np.ones(2), "b": 1.0, "n": 1}],
    ids=["own type", "Tangent", "dict"],
)
def test_jvp_of_a_dataclass_with_an_integer_field_is_the_jacobian_times_the_direction(direction):
    J = cr.jacobian(layer_output, LAYER, mode="forward")
    _, dy = cr.jvp(layer_output, (LAYER,), (direction,))
    assert dy == _jacobian_times(J, Layer(np.ones(2), 1.0)) == 18.0


@pytest.mark.parametrize(
    "primal, direction",
    [
        ((2.0, 3), (1.0, 1.0)),
        ([2.0, np.int64(3)], [1.0, 1.0]),
        (Pair(2.0, 3), Pair(1.0, 1.0)),
        ({"x": 2.0, "n": 3}, {"x": 1.0, "n": 1.0}),
    ],
    ids=["tuple", "list", "namedtuple", "dict"],
)
def test_an_integer_item_takes_no_tangent(primal, direction):
    def product(p):
        return p[0] * p[1] if isinstance(p, (tuple, list)) else p["x"] * p["n"]

    assert cr.jvp(product, (primal,), (direction,)) == (6.0, 3.0)


def test_an_integer_argument_of_its_own_is_moved():
    assert cr.jvp(lambda x, k: x * k, (2.0, 3), (0.0, 1.0)) == (6.0, 2.0)
