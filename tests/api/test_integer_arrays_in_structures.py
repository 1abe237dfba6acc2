"""An integer array inside a structure (an index, a count, a shape held beside the weights) is a
setting, like an integer number there: ``NoTangent()`` in every entry point and engine, whatever
it is used for, and a tangent given for it in ``jvp`` is ignored. An integer array passed as an
argument of its own is differentiated (docs/tangents.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import chainrules as cr

W = np.array([1.0, 2.0, 3.0])


def weighted(p):
    weights, counts = p
    return np.sum(weights[:2] * counts)  # the integers used arithmetically


def counted(p):
    s = 0.0
    for i in range(p["n"][0]):  # a count
        s = s + p["x"][i] ** 2
    return s


def reshaped(p):
    return np.sum(np.reshape(p["x"], tuple(p["shape"])) ** 2)  # a shape


@dataclasses.dataclass
class Model:
    w: np.ndarray
    index: np.ndarray


def indexed(m):
    return np.sum(m.w[m.index] ** 2)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_the_gradient_has_no_tangent_for_an_integer_array_in_a_structure(engine):
    g = cr.gradient(weighted, (W, np.array([3, 4])), engine=engine)[0]
    np.testing.assert_array_equal(g[0], [3.0, 4.0, 0.0])
    assert g[1] == cr.NoTangent()
    g = cr.gradient(indexed, Model(W, np.array([0, 2])), engine=engine)[0]
    np.testing.assert_array_equal(g.w, [2.0, 0.0, 6.0])
    assert g.index == cr.NoTangent()


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_the_jacobian_has_no_block_for_an_integer_array_in_a_structure(mode):
    J = cr.jacobian(weighted, (W, np.array([3, 4])), mode=mode)
    np.testing.assert_array_equal(J[0], [3.0, 4.0, 0.0])
    assert J[1] == cr.NoTangent()


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize(
    "f, p, expected",
    [
        (counted, {"x": W, "n": np.array([2])}, np.diag([2.0, 2.0, 0.0])),
        (reshaped, {"x": W[:2].copy(), "shape": np.array([2, 1])}, 2.0 * np.eye(2)),
        (indexed, Model(W, np.array([0, 2])), np.diag([2.0, 0.0, 2.0])),
    ],
    ids=["count", "shape", "index"],
)
def test_hessians_and_forward_jacobians_of_integer_settings_in_a_structure(f, p, expected, engine):
    def part(t, name):
        return getattr(t, name) if isinstance(p, Model) else t[name]

    leaf = "w" if isinstance(p, Model) else "x"
    setting = "index" if isinstance(p, Model) else next(k for k in p if k != "x")
    H = cr.hessian(f, p, engine=engine)
    np.testing.assert_allclose(part(part(H, leaf), leaf), expected)
    assert part(H, setting) == cr.NoTangent() and part(part(H, leaf), setting) == cr.NoTangent()
    J = cr.jacobian(f, p, mode="forward")
    np.testing.assert_allclose(part(J, leaf), part(cr.gradient(f, p, engine=engine)[0], leaf))
    assert part(J, setting) == cr.NoTangent()


def test_jvp_ignores_a_tangent_given_for_an_integer_array_in_a_structure():
    p = (W, np.array([3, 4]))
    y, ydot = cr.jvp(weighted, (p,), ((np.zeros(3), np.ones(2)),))
    assert y == 11.0 and ydot == 0.0


def test_an_integer_array_of_its_own_is_differentiated():
    assert cr.gradient(lambda k: np.sum(k * 2.0), np.array([1, 2]))[0].tolist() == [2.0, 2.0]
    np.testing.assert_array_equal(cr.jacobian(lambda k: k * 2.0, np.array([1, 2]), mode="forward"), 2.0 * np.eye(2))
