"""``dataclasses.asdict`` and ``astuple``: their rules against finite differences, and a function
that flattens its parameters with them, in every engine."""

import collections
import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import test_frule, test_rrule

Pair = collections.namedtuple("Pair", "u v")


@dataclasses.dataclass
class Inner:
    c: np.ndarray
    count: int


@dataclasses.dataclass
class Params:
    a: float
    b: np.ndarray
    inner: Inner
    xs: list
    pair: Pair
    table: dict


def _params():
    return Params(
        2.0,
        np.array([0.5, -1.0, 1.5]),
        Inner(np.array([0.3, 2.0]), 3),
        [1.5, np.array([1.0, -2.0])],
        Pair(0.5, np.array([0.1, 0.2])),
        {"k": 1.25, 7: np.array([0.7])},
    )


@pytest.mark.parametrize("rebuild", [dataclasses.asdict, dataclasses.astuple])
def test_rules(rebuild):
    test_rrule(rebuild, _params())
    test_frule(rebuild, _params())


def flattened_loss(p):
    d = dataclasses.asdict(p)
    t = dataclasses.astuple(p.inner)
    return (
        d["a"] * np.sum(d["b"] ** 2)
        + np.sum(t[0] ** 3)
        + d["xs"][0] * np.sum(d["xs"][1])
        + d["pair"].u * d["table"]["k"]
        + np.sum(d["table"][7] * d["pair"].v[0])
    )


def test_a_loss_of_flattened_parameters_in_every_engine():
    p = _params()
    expected = {
        "a": np.sum(p.b**2),
        "b": 2 * p.a * p.b,
        "c": 3 * p.inner.c**2,
        "xs0": np.sum(p.xs[1]),
        "xs1": np.full(2, p.xs[0]),
        "u": p.table["k"],
        "k": p.pair.u,
    }
    for engine in ("source", "tape"):
        (g,) = cr.gradient(flattened_loss, p, engine=engine)
        np.testing.assert_allclose(g.a, expected["a"], rtol=1e-12)
        np.testing.assert_allclose(g.b, expected["b"], rtol=1e-12)
        np.testing.assert_allclose(g.inner.c, expected["c"], rtol=1e-12)
        np.testing.assert_allclose(g.xs[0], expected["xs0"], rtol=1e-12)
        np.testing.assert_allclose(g.xs[1], expected["xs1"], rtol=1e-12)
        np.testing.assert_allclose(g.pair.u, expected["u"], rtol=1e-12)
        np.testing.assert_allclose(g.pair.v, [p.table[7][0], 0.0], rtol=1e-12)
        np.testing.assert_allclose(g.table["k"], expected["k"], rtol=1e-12)
    direction = cr.Tangent[Params](a=1.0, b=np.ones(3), inner=cr.Tangent[Inner](c=np.ones(2)))
    _, dy = cr.jvp(flattened_loss, (p,), (direction,))
    np.testing.assert_allclose(dy, expected["a"] + np.sum(expected["b"]) + np.sum(expected["c"]), rtol=1e-12)
    fresh = _params()  # the input is left as it was
    for got, want in ((p.b, fresh.b), (p.inner.c, fresh.inner.c), (p.xs[1], fresh.xs[1]), (p.table[7], fresh.table[7])):
        np.testing.assert_array_equal(got, want)
