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


# ----- fields named like Tangent's own members ------------------------------------------------------


@dataclasses.dataclass
class Basket:
    items: np.ndarray  # (Tangent has an `items()` method and a `backing` property)
    backing: float


ItemsAndKeys = collections.namedtuple("ItemsAndKeys", "items keys")


def basket_loss(x):
    b = Basket(x * 2.0, 3.0)
    b2 = dataclasses.replace(b, backing=x[0])
    p = ItemsAndKeys(x[1], b2.backing)
    return np.sum(b.items**2) * b2.backing + p.items * p.keys


def test_fields_named_like_tangents_members_in_every_engine():
    x = np.array([1.0, 2.0])
    expected = [12 * x[0] ** 2 + 4 * x[1] ** 2 + x[1], 8 * x[0] * x[1] + x[0]]  # 4 |x|² x0 + x1 x0
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(basket_loss, x, engine=engine)[0], expected, rtol=1e-12)
    np.testing.assert_allclose(cr.jacobian(basket_loss, x, mode="forward"), expected, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(basket_loss, x), [[24 * x[0], 8 * x[1] + 1], [8 * x[1] + 1, 8 * x[0]]])
    # the field, read from the tangent by item, not the member of that name
    (g,) = cr.gradient(lambda b: np.sum(b.items**2) * b.backing, Basket(x, 3.0))
    np.testing.assert_allclose(g["items"], 6 * x)
    assert g["backing"] == pytest.approx(np.sum(x**2))
