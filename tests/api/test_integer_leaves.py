"""An integer inside a structure argument (a tuple's item, a dataclass field) is a setting, a
count or a size: every engine and entry point gives it ``NoTangent()``, where an integer argument
of its own that is used arithmetically gets a float gradient (docs/tangents.md)."""

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr


@dataclasses.dataclass
class Params:
    b: float
    n: int


Pair = collections.namedtuple("Pair", "b n")

CASES = [
    (lambda t: t[0] * t[1], (2.0, 3)),
    (lambda t: t[0] * t[1], [2.0, np.int64(3)]),
    (lambda p: p.b * p.n, Params(2.0, 3)),
    (lambda p: p.b * p.n, Pair(2.0, 3)),
    (lambda d: d["b"] * d["n"], {"b": 2.0, "n": 3}),
]


def _no_gradient(t) -> bool:
    return isinstance(t, cr.AbstractZero)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_an_integer_in_a_structure_gets_no_gradient(case, engine):
    f, x = CASES[case]
    (g,) = cr.gradient(f, x, engine=engine)
    fields = list(g.backing.values()) if isinstance(g.backing, dict) else list(g.backing)
    assert fields[0] == 3.0
    assert len(fields) == 1 or _no_gradient(fields[1])
    J = cr.jacobian(f, x, mode="reverse", engine=engine)
    Jf = cr.jacobian(f, x, mode="forward")
    for jac in (J, Jf):
        items = list(jac.backing.values()) if isinstance(jac.backing, dict) else list(jac.backing)
        assert items[0] == 3.0 and _no_gradient(items[1])


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_an_integer_argument_of_its_own_gets_a_float_gradient(engine):
    assert cr.gradient(lambda x, k: x * k, 2.0, 3, engine=engine) == (3.0, 2.0)
    (g,) = cr.gradient(lambda t: t[0] * t[1].sum(), (2.0, np.arange(3)), engine=engine)
    assert g[1] == cr.NoTangent()  # an integer array in a structure is a setting, as an integer number there
