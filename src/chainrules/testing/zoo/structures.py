"""Zoo family: structured inputs and outputs: tuples, lists, dicts, dataclasses, namedtuples.

The gradient for a structured argument is a ``Tangent`` of its type; fields that cannot carry a
derivative (strings, bools, ints used as flags) get ``NoTangent``.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from . import case


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float


@dataclasses.dataclass(frozen=True)
class Settings:
    scale: float
    name: str
    clip: bool


class Point(NamedTuple):
    x: float
    y: float


_X = np.array([0.5, -1.0, 2.0])


@case((1.5, -0.5), tags=("structure",))
def tuple_argument(p):
    a, b = p
    return a * b + b


@case([0.5, 1.5, -2.0], tags=("structure",))
def list_argument(xs):
    return sum(xs) * xs[0] + xs[-1] * xs[1]


@case({"w": 2.0, "x": 0.5, "b": -1.0}, tags=("structure",))
def dict_argument(d):
    return d["w"] * d["x"] + d["b"] * d["w"]


@case(Params(np.array([0.2, -0.4, 0.6]), 0.3), _X, tags=("structure", "array"))
def dataclass_argument(p, x):
    return np.sum((p.w * x + p.b) ** 2)


@case(Point(1.5, -2.0), tags=("structure",))
def namedtuple_argument(p):
    return p.x**2 + p.y**2 + p.x * p.y


@case(Settings(2.0, "double", True), 0.4, tags=("structure",))
def frozen_dataclass_with_flags(s, x):
    """The string and the bool field get NoTangent."""
    y = x * s.scale
    if s.clip and y > 1.0:
        return 1.0 + 0.0 * y
    return y * y


@case({"layer": (np.array([1.0, -2.0]), 0.5), "gain": 3.0}, tags=("structure", "array"))
def nested_structure(model):
    w, b = model["layer"]
    return model["gain"] * np.sum(w * w) + b


@case(0.8, tags=("structure",))
def tuple_output(x):
    return x * 2.0, x * x


@case(0.8, tags=("structure",))
def dict_output(x):
    return {"square": x * x, "sine": np.sin(x)}


@case(Params(np.array([0.1, 0.2]), -0.5), tags=("structure", "array"))
def dataclass_output(p):
    return Params(p.w * 2.0 + p.b, p.b * p.b)


@case(1.1, tags=("structure",))
def output_with_an_int(x):
    return x * 3.0, 7


@case(Point(0.3, 0.4), tags=("structure",))
def namedtuple_output(p):
    return Point(p.x * p.y, p.x + p.y)
