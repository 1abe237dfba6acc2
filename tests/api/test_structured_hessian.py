"""``cr.hessian`` at a structured input: nested ``Tangent`` blocks, laid out as ``cr.jacobian``
lays out the Jacobian of the gradient, checked against finite differences of the gradient."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

Pair = namedtuple("Pair", "a b")


@dataclasses.dataclass
class Params:
    w: np.ndarray
    s: float


def _f(a, b):
    return np.sum(np.sin(a) * a) * b + b**3 + a[0] * a[1] ** 2


A = np.array([0.3, -1.2])
B = 0.7
INPUTS = {
    "tuple": ((A, B), lambda x: x),
    "list": ([A, B], lambda x: x),
    "namedtuple": (Pair(A, B), lambda x: (x.a, x.b)),
    "dict": ({"a": A, "b": B}, lambda x: (x["a"], x["b"])),
    "dataclass": (Params(A, B), lambda x: (x.w, x.s)),
}


def _block(H, x, i):
    """The part of a structured Hessian (or of one of its blocks) at the i-th field of x."""
    if isinstance(x, dict):
        return H[("a", "b")[i]]
    if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
        return H[i]
    return getattr(H, (dataclasses.fields(x)[i].name if dataclasses.is_dataclass(x) else x._fields[i]))


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("name", INPUTS)
def test_hessian_at_a_structure_matches_finite_differences_of_the_gradient(name, engine):
    x, fields = INPUTS[name]

    def f(x):
        a, b = fields(x)
        return _f(a, b)

    H = cr.hessian(f, x, engine=engine)
    assert type(H) is cr.Tangent[type(x)]

    def flat_gradient(v):  # the gradient over (a, b) as one vector: its Jacobian is the flat Hessian
        ga, gb = cr.gradient(_f, v[:2], v[2])
        return np.concatenate([ga, [gb]])

    expected = fd_jacobian(flat_gradient, np.array([*A, B]))
    for i, rows in ((0, slice(0, 2)), (1, 2)):
        row = _block(H, x, i)
        assert type(row) is cr.Tangent[type(x)]
        np.testing.assert_allclose(_block(row, x, 0), expected[rows, :2], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(_block(row, x, 1), expected[rows, 2], rtol=1e-6, atol=1e-8)


def test_hessian_at_a_tuple_where_a_field_does_not_matter_has_zero_blocks():
    H = cr.hessian(lambda t: np.sum(t[0] ** 3), (A, 2.0))
    np.testing.assert_allclose(H[0][0], np.diag(6 * A))
    np.testing.assert_array_equal(H[0][1], np.zeros(2))
    np.testing.assert_array_equal(H[1][0], np.zeros(2))
    assert H[1][1] == 0.0


def test_hessian_of_nested_tuples():
    x = ((1.0, 2.0), 3.0)
    H = cr.hessian(lambda t: t[0][0] * t[0][1] * t[1], x)
    # d2/dx0 dx1 = x2, d2/dx0 dx2 = x1, d2/dx1 dx2 = x0
    assert H[0][0][0][1] == 3.0 and H[0][0][1] == 2.0 and H[0][1][1] == 1.0 and H[1][1] == 0.0


@dataclasses.dataclass
class Scaled:
    """A user's class with its own operators, which Python calls before NumPy's."""

    a: float
    v: np.ndarray

    def __mul__(self, s):
        return Scaled(self.a * s, self.v * s)

    def __add__(self, other):
        return Scaled(self.a + other.a, self.v + other.v)


def _through_user_operators(b):
    p = Scaled(2.0, np.array([1.0, -3.0])) * b + Scaled(b**2, np.ones(2)) * 0.5
    return p.a * b + np.sum(p.v**2)


def test_second_derivatives_through_a_user_class_operators():
    """The reverse pass run on dual numbers calls the class's ``__mul__`` with a dual, as Python
    does, not NumPy's multiply (which made a dual holding the object, without its fields)."""
    for b in (1.5, -0.4):
        expected = fd_jacobian(lambda t: cr.gradient(_through_user_operators, t)[0], b).item()
        assert cr.hessian(_through_user_operators, b) == pytest.approx(expected, rel=1e-6)
        assert cr.hessian(_through_user_operators, b, engine="tape") == pytest.approx(expected, rel=1e-6)
