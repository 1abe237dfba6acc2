"""A number operand of an array operation (the 2.0 of ``x * 2.0``, the exponent of ``np.power(x, 2.0)``)
gets its cotangent lazily: computing it is a product and a sum over the array (and for a power a
log), which a constant's nobody asks for. Asked for, it is the same number as before."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy import ufuncs
from chainrules.testing import test_frule, test_rrule

RNG = np.random.default_rng(7)
A = RNG.uniform(0.5, 2.0, (3, 4))
DY = RNG.standard_normal((3, 4))

# (function, the number operand's position, the number): the number's cotangent is sum(dy * dy/dc)
CASES = [
    (operator.mul, 1, 2.0, lambda a, c: a),
    (operator.mul, 0, 2.0, lambda a, c: a),
    (operator.truediv, 1, 3.0, lambda a, c: -a / c**2),
    (operator.truediv, 0, 3.0, lambda a, c: 1.0 / a),
    (operator.sub, 1, 1.5, lambda a, c: -np.ones_like(a)),
    (operator.sub, 0, 1.5, lambda a, c: np.ones_like(a)),
    (operator.add, 0, 1.5, lambda a, c: np.ones_like(a)),
    (operator.pow, 1, 2.0, lambda a, c: a**c * np.log(a)),
    (np.multiply, 1, 2.0, lambda a, c: a),
    (np.divide, 1, 3.0, lambda a, c: -a / c**2),
    (np.subtract, 0, 1.5, lambda a, c: np.ones_like(a)),
    (np.power, 1, 2.5, lambda a, c: a**c * np.log(a)),
    (np.arctan2, 1, 0.7, lambda a, c: -a / (a * a + c * c)),
    (np.maximum, 1, 1.0, lambda a, c: (c > a) * 1.0),
    (np.dot, 1, 2.0, lambda a, c: a),
    (np.dot, 0, 2.0, lambda a, c: a),
]


def _call(f, position, c):
    args = (A, c) if position == 1 else (c, A)
    return f, args


@pytest.mark.parametrize("f, position, c, partial", CASES, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_the_number_operand_of_an_array_operation_gets_a_lazy_cotangent(f, position, c, partial):
    f, args = _call(f, position, c)
    y, back = cr.rrule(f, *args)
    cotangents = back(DY)
    dc = cotangents[1 + position]
    assert isinstance(dc, cr.Thunk)
    expected = np.sum(DY * partial(A, c))
    value = cr.unthunk(dc)
    assert type(value) is float
    np.testing.assert_allclose(value, expected, rtol=1e-12)


@pytest.mark.parametrize("f, position, c, partial", CASES, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_the_number_operand_agrees_with_finite_differences(f, position, c, partial):
    f, args = _call(f, position, c)
    if f in (np.maximum,):
        args = (A, 1.0001) if position == 1 else (1.0001, A)  # away from ties with A's entries
    test_rrule(f, *args)
    test_frule(f, *args)


def test_the_exponent_of_an_array_power_is_not_differentiated_until_asked(monkeypatch):
    logs = []
    log_abs_base = ufuncs._log_abs_base
    monkeypatch.setattr(ufuncs, "_log_abs_base", lambda a: logs.append(a) or log_abs_base(a))
    # the rules were made from the module's rows: the exponent's partial calls the patched name
    y, back = cr.rrule(np.power, A, 2.0)
    _, da, dc = back(DY)
    np.testing.assert_allclose(cr.unthunk(da), DY * 2.0 * A)
    assert logs == []
    np.testing.assert_allclose(cr.unthunk(dc), np.sum(DY * A**2 * np.log(A)), rtol=1e-12)
    assert len(logs) == 1
    # forward mode: a zero tangent for the exponent computes no partial for it
    _, dy = cr.frule((cr.NoTangent(), DY, cr.ZeroTangent()), np.power, A, 2.0)
    np.testing.assert_allclose(dy, DY * 2.0 * A)
    assert len(logs) == 1
    _, dy = cr.frule((cr.NoTangent(), DY, 0.5), np.power, A, 2.0)
    np.testing.assert_allclose(dy, DY * 2.0 * A + 0.5 * A**2 * np.log(A))
    assert len(logs) == 2


def test_a_batch_of_cotangents_leaves_a_deferred_partial_lazy():
    y, back = cr.rrule(np.power, A, 2.0)
    batch = np.stack([DY, 2 * DY])
    _, da, dc = back(batch)
    assert isinstance(dc, cr.Thunk)
    np.testing.assert_allclose(cr.unthunk(da), batch * 2.0 * A)
    np.testing.assert_allclose(cr.unthunk(dc), [np.sum(b * A**2 * np.log(A)) for b in batch], rtol=1e-12)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_with_respect_to_numbers_in_array_code(engine):
    """End to end: the scalar parameters of array code get their gradients, equal to finite differences."""

    def f(x, c, s):
        return np.sum(np.power(x, c) / s - np.maximum(x, s) * c + (1.0 - x) ** 2)

    x, c, s = A, 2.5, 1.3
    grads = cr.gradient(f, x, c, s, engine=engine)
    h = 1e-6
    for i, (arg, g) in enumerate(zip((x, c, s), grads)):
        if i == 0:
            continue
        up = [x, c, s]
        down = [x, c, s]
        up[i], down[i] = arg + h, arg - h
        np.testing.assert_allclose(g, (f(*up) - f(*down)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(grads[0], cr.gradient(f, x, c, s, engine="tape" if engine == "source" else "source")[0])


def test_an_interpolation_tables_cotangents_wait_until_asked_for():
    """``np.interp(x, xp, fp)``: the table (xp, fp) is mostly data; its cotangents, scatters over
    its points, are thunks, one cotangent or a batch, and equal row by row."""
    x = np.array([0.25, 1.5, 2.75, 0.5])
    xp, fp = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 1.0, 4.0, 9.0])
    y, back = cr.rrule(np.interp, x, xp, fp)
    dys = np.stack([np.arange(1.0, 5.0), np.ones(4)])
    singles = [back(dy) for dy in dys]
    for _, _dx, dxp, dfp in singles:
        assert isinstance(dxp, cr.Thunk) and isinstance(dfp, cr.Thunk)
    _, dx_b, dxp_b, dfp_b = back(dys)
    assert isinstance(dxp_b, cr.Thunk) and isinstance(dfp_b, cr.Thunk)
    for k, (_, dx, dxp, dfp) in enumerate(singles):
        np.testing.assert_allclose(cr.unthunk(dx_b)[k], cr.unthunk(dx))
        np.testing.assert_allclose(cr.unthunk(dxp_b)[k], cr.unthunk(dxp))
        np.testing.assert_allclose(cr.unthunk(dfp_b)[k], cr.unthunk(dfp))
    test_rrule(np.interp, x, xp, fp)
