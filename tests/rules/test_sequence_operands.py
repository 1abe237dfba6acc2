"""A list or tuple of numbers next to an array is broadcast as NumPy's array of it (``x * [1.0, 2.0]``),
by the NumPy elementwise rules and the operator rules alike: the partials see that array, and the
sequence's cotangent is structural (``Tangent[list]``, ``Tangent[tuple]``). Python's own meaning
of ``*`` and ``+`` on sequences (repetition, concatenation) is kept."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jvp, nondiff, test_frule, test_rrule

X = np.array([0.5, 2.5, 1.7])  # no ties with L (maximum), no zeros (divide, arctan2)
L = [1.0, 2.0, 3.0]
X23 = np.array([[0.5, 2.5, 1.7], [1.2, 0.8, 2.2]])  # broadcasts against a list of 3
L23 = [[1.0, 2.0, 3.0], [1.5, 0.5, 2.5]]  # a nested list, broadcast against an array of 3

# (function, whether the sequence may come first: an operation defined on both orders and smooth there)
BINARY = [
    (np.multiply, True),
    (operator.mul, True),
    (np.power, True),
    (operator.pow, True),
    (np.divide, True),
    (operator.truediv, True),
    (np.arctan2, True),
    (np.subtract, True),
    (operator.sub, True),
    (np.add, True),
    (operator.add, True),
    (np.maximum, True),
    (np.hypot, True),
    (np.logaddexp, True),
    (operator.mod, False),  # (L % X is 0 at 1 % 0.5: a jump)
]
ORDERED = [(f, first) for f, both in BINARY for first in ((False, True) if both else (False,))]


def _name(value) -> str:
    return getattr(value, "__name__", repr(value))


def _operands(x, seq, sequence_first: bool):
    return (seq, x) if sequence_first else (x, seq)


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("f, sequence_first", ORDERED, ids=_name)
def test_rrule_takes_a_sequence_operand(f, sequence_first, container):
    test_rrule(f, *_operands(X, container(L), sequence_first))


@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("f, sequence_first", ORDERED, ids=_name)
def test_frule_takes_a_sequence_operand(f, sequence_first, container):
    test_frule(f, *_operands(X, container(L), sequence_first))


BROADCAST = [np.multiply, operator.mul, np.power, operator.pow, np.arctan2, operator.sub]


@pytest.mark.parametrize("f", BROADCAST, ids=_name)
def test_a_broadcast_sequence_gets_the_summed_cotangent(f):
    test_rrule(f, X23, L)  # the list of 3 is broadcast along the rows of a (2, 3) array
    test_rrule(f, L23, X)  # a nested list's cotangent is nested too
    test_frule(f, X23, L)
    test_frule(f, L23, X)


@pytest.mark.parametrize("f", [np.multiply, operator.mul], ids=_name)
def test_the_cotangent_of_a_list_is_structural(f):
    y, back = cr.rrule(f, X23, L)
    np.testing.assert_allclose(y, X23 * np.asarray(L))
    dy = np.arange(6.0).reshape(2, 3)
    _, dx, dl = back(dy)
    dl = cr.unthunk(dl)
    assert type(dl) is cr.Tangent[list]
    assert all(type(e) is float for e in dl.backing)
    np.testing.assert_allclose(list(dl.backing), np.sum(dy * X23, axis=0))
    np.testing.assert_allclose(cr.unthunk(dx), dy * np.asarray(L))
    _, _, dt = cr.rrule(f, X, tuple(L))[1](np.ones(3))
    assert type(cr.unthunk(dt)) is cr.Tangent[tuple]


BATCHED = [np.multiply, operator.mul, np.power, operator.pow, np.arctan2, operator.truediv]


@pytest.mark.parametrize("f", BATCHED, ids=_name)
def test_a_batch_of_cotangents_for_a_sequence_operand(f, batched_pullback):
    batched_pullback(f, X23, L)
    batched_pullback(f, L, X23)


# ----- end to end ------------------------------------------------------------------------------


T = tuple(L)
FUNCTIONS = [
    lambda x: np.sum(x * L + x**L / (1 + np.arctan2(x, L))),
    lambda x: np.sum(L * x - np.divide(x, L) + np.power(x, T) - x / T),
    lambda x: np.sum(np.arctan2(L, x) * (x / T) + L**x + np.multiply(T, x) ** 2),
    lambda x: np.sum(np.hypot(x, L) + np.maximum(x, T) + np.subtract(L, x) ** 2 + (T - x) * (x + L)),
]


def _analytic_gradient(x):
    """The gradient of the first of ``FUNCTIONS``, sum(x L + x^L / (1 + atan2(x, L)))."""
    b = np.asarray(L)
    u, v = x**b, 1 + np.arctan2(x, b)
    du, dv = b * x ** (b - 1), b / (x * x + b * b)
    return b + (du * v - u * dv) / v**2


def _central_gradient(f, x, h: float = 1e-6):
    steps = np.eye(len(x)) * h
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps])


def test_the_analytic_gradient_matches_finite_differences():
    np.testing.assert_allclose(_analytic_gradient(X), _central_gradient(FUNCTIONS[0], X), rtol=1e-7)


@pytest.mark.parametrize("engine", ["source", "tape"])
@pytest.mark.parametrize("k", range(len(FUNCTIONS)))
def test_gradient(k, engine):
    f = FUNCTIONS[k]
    (g,) = cr.gradient(f, X, engine=engine)
    np.testing.assert_allclose(g, _central_gradient(f, X), rtol=1e-7, atol=1e-9)
    if k == 0:
        np.testing.assert_allclose(g, _analytic_gradient(X), rtol=1e-12)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("k", range(len(FUNCTIONS)))
def test_jacobian(k, mode):
    f = FUNCTIONS[k]
    J = cr.jacobian(f, X, mode=mode)
    np.testing.assert_allclose(np.ravel(J), _central_gradient(f, X), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("k", range(len(FUNCTIONS)))
def test_hessian(k):
    f = FUNCTIONS[k]
    H = cr.hessian(f, X)
    expected = _central_gradient(lambda x: cr.gradient(f, x)[0], X, h=1e-5)
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-7)
    if k == 0:  # the function is elementwise: the Hessian is diagonal
        assert np.count_nonzero(H - np.diag(np.diag(H))) == 0
        np.testing.assert_allclose(np.diag(H), _central_gradient(lambda x: _analytic_gradient(x) @ np.ones(3), X))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_list_of_traced_entries_gets_their_cotangents(mode):
    def products(x):
        return x * [x[0], x[1], x[2]] + np.multiply(x, (x[2], x[1], x[0]))

    expected = np.diag(2 * X + X[::-1]) + np.fliplr(np.diag(X))  # y_i = x_i^2 + x_i x_(2-i)
    np.testing.assert_allclose(cr.jacobian(products, X, mode=mode), expected, rtol=1e-13)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_an_updated_array_broadcasts_a_list(engine):
    def f(x):
        y = x.copy()
        y += L
        y *= L
        y **= T
        return np.sum(y)

    b = np.asarray(L)
    expected = b * b * (b * (X + b)) ** (b - 1)
    np.testing.assert_allclose(cr.gradient(f, X, engine=engine)[0], expected, rtol=1e-12)


# ----- Python's sequences stay sequences ----------------------------------------------------


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_sequence_repetition_is_kept(engine):
    assert cr.gradient(lambda x: sum([x] * 3), 2.0, engine=engine) == (3.0,)
    assert cr.gradient(lambda x: sum(2 * [x, x * x]), 2.0, engine=engine) == (10.0,)
    assert cr.gradient(lambda x: sum((x, 3.0 * x) * 2), 2.0, engine=engine) == (8.0,)
    assert cr.gradient(lambda x: sum([x] * np.int64(2)), 2.0, engine=engine) == (2.0,)
    np.testing.assert_array_equal(cr.gradient(lambda x: np.sum(np.stack([x] * 2)), X, engine=engine)[0], 2.0)
    assert cr.jacobian(lambda x: sum([x] * 3), 2.0, mode="forward") == 3.0


def test_the_rules_of_repetition_and_concatenation_are_unchanged():
    y, back = cr.rrule(operator.mul, [1.0, 2.0], 2)
    assert y == [1.0, 2.0, 1.0, 2.0]
    assert back(cr.Tangent[list](1.0, 2.0, 3.0, 4.0)) == (cr.NoTangent(), cr.Tangent[list](4.0, 6.0), cr.NoTangent())
    y, back = cr.rrule(operator.mul, 2, (1.0,))
    assert y == (1.0, 1.0)
    assert back(cr.Tangent[tuple](1.0, 2.0)) == (cr.NoTangent(), cr.NoTangent(), cr.Tangent[tuple](3.0))
    y, dy = cr.frule((cr.NoTangent(), cr.Tangent[list](1.0), cr.NoTangent()), operator.mul, [2.0], 2)
    assert y == [2.0, 2.0] and dy == cr.Tangent[list](1.0, 1.0)
    y, back = cr.rrule(operator.add, [1.0], [2.0])
    assert y == [1.0, 2.0]
    assert back(cr.Tangent[list](3.0, 4.0)) == (cr.NoTangent(), cr.Tangent[list](3.0), cr.Tangent[list](4.0))


@pytest.mark.parametrize(
    "op, a, b",
    [
        (operator.add, [1.0], 2.0),
        (operator.sub, [1.0], 2.0),
        (operator.mul, 2.0, [1.0]),
        (operator.truediv, [1.0], 2.0),
        (operator.pow, 2.0, [1.0]),
        (operator.mod, [1.0], 2.0),
        (operator.add, (1.0,), [2.0]),
    ],
    ids=lambda v: _name(v) if callable(v) else type(v).__name__,
)
def test_python_errors_stay_where_numpy_takes_no_part(op, a, b):
    with pytest.raises(TypeError):
        cr.rrule(op, a, b)
    with pytest.raises(TypeError):
        cr.frule((cr.NoTangent(), cr.ZeroTangent(), cr.ZeroTangent()), op, a, b)


# A NumPy function reads a list of numbers as an array: its forward rule takes the list's structural
# tangent (a Tangent[list], cr.jvp's tangent of a list input) as an array too, a batch of them included.
# Reductions, scans, products and linear algebra (the elementwise, shape and joining rules read it so
# themselves).
LIST_CALLS = {
    "sum": (np.sum, (L23,)),
    "max": (np.max, (L,)),
    "mean": (np.mean, (L23,)),
    "prod": (np.prod, ((1.0, 2.0, 3.0),)),
    "cumsum": (np.cumsum, (L,)),
    "diff": (np.diff, (L,)),
    "dot": (np.dot, (L, L)),
    "matmul": (np.matmul, (L23, L)),
    "outer": (np.outer, (L, L)),
    "tensordot": (np.tensordot, (L, L, nondiff(1))),
    "norm": (np.linalg.norm, (L,)),
    "det": (np.linalg.det, ([[2.0, 1.0], [0.5, 3.0]],)),
    "slogdet": (np.linalg.slogdet, ([[2.0, 1.0], [0.5, 3.0]],)),
    "inv": (np.linalg.inv, ([[2.0, 1.0], [0.5, 3.0]],)),
    "solve": (np.linalg.solve, ([[2.0, 1.0], [0.5, 3.0]], [1.0, 2.0])),
    "cholesky": (np.linalg.cholesky, ([[2.0, 0.5], [0.5, 1.0]],)),
}


@pytest.mark.parametrize("name", LIST_CALLS)
def test_frule_reads_a_list_tangent_as_an_array(name):
    f, args = LIST_CALLS[name]
    test_frule(f, *args)


def test_jvp_of_numpy_functions_of_a_list_input():
    for f, args in (LIST_CALLS["sum"], LIST_CALLS["norm"], LIST_CALLS["det"], LIST_CALLS["dot"]):
        tangents = tuple(np.ones(np.shape(a)).tolist() for a in args)
        y, dy = cr.jvp(f, args, tangents)
        expected = fd_jvp(lambda a: f(*a), tuple(map(np.asarray, args)), tuple(map(np.asarray, tangents)))
        np.testing.assert_allclose(dy, expected, rtol=1e-6)
