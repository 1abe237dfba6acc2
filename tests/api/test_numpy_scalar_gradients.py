"""A gradient has the type of its input, however the engine computed it: a NumPy number's is that
NumPy type, complex ones included, at the top level and inside a structure, in both engines."""

import collections

import numpy as np
import pytest

import chainrules as cr
from chainrules import api

ENGINES = ["source", "tape"]
NUMBERS = [np.complex128(1 + 2j), np.complex64(1 + 2j), np.float64(2.0), np.float32(2.0)]


def squared_norm(z):
    return abs(z) ** 2


def real_part(z):
    return z.real * 3.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("f", [squared_norm, real_part])
@pytest.mark.parametrize("x", NUMBERS, ids=lambda x: type(x).__name__)
def test_the_gradient_of_a_numpy_number_is_of_its_type(x, f, engine):
    (g,) = cr.gradient(f, x, engine=engine)
    assert type(g) is type(x)
    assert g == cr.gradient(f, complex(x) if np.iscomplexobj(x) else float(x), engine=engine)[0]
    (in_tuple,) = cr.gradient(lambda t: f(t[0]), (x,), engine=engine)
    (in_dict,) = cr.gradient(lambda d: f(d["z"]), {"z": x}, engine=engine)
    assert type(in_tuple[0]) is type(x) and type(in_dict["z"]) is type(x)
    _, back = cr.pullback(f, x, engine=engine)
    assert type(back(1.0)[0]) is type(x)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_float_in_a_structure_gets_a_float(engine):
    (g,) = cr.gradient(lambda t: np.sin(t[0]) * t[1], (1.0, np.float32(2.0)), engine=engine)
    assert type(g[0]) is float and type(g[1]) is np.float32


def test_a_namedtuple_tangent_holding_its_fields_by_position():
    # (a rule may give a namedtuple's tangent as Tangent[tuple])
    Point = collections.namedtuple("Point", "z r")
    typed = api._typed_like(Point(np.complex128(1j), 2.0), cr.Tangent[tuple](1 + 0j, np.float64(3.0)))
    assert type(typed) is cr.Tangent[tuple]
    assert type(typed[0]) is np.complex128 and type(typed[1]) is float
