"""``np.select`` (rules/numpy/select.py) with its default left out or given by keyword: the pullback
returns one cotangent per positional argument (it had always returned one for the default, which
the engines could not unpack)."""

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

X = np.array([0.5, 1.0, 1.5])
CONDS = [np.array([True, False, False]), np.array([False, True, False])]


@pytest.mark.parametrize("kwargs", [{}, {"default": 2.0}], ids=["no default", "keyword default"])
def test_rules_without_a_positional_default(kwargs):
    crt.test_rrule(np.select, crt.nondiff(CONDS), [X, X**2], fkwargs=kwargs)
    crt.test_frule(np.select, crt.nondiff(CONDS), [X, X**2], fkwargs=kwargs)
    _, pullback = cr.rrule(np.select, CONDS, [X, X**2], **kwargs)
    assert len(pullback(np.ones(3))) == 3  # f, condlist, choicelist


def test_rules_with_a_positional_default():
    crt.test_rrule(np.select, crt.nondiff(CONDS), [X, X**2], 0.5 * X)
    _, pullback = cr.rrule(np.select, CONDS, [X, X**2], 0.5 * X)
    assert len(pullback(np.ones(3))) == 4


# written out, not called with ``**kwargs``: the source engine passes a call's keywords as written
PROGRAMS = {
    "no default": lambda v: np.select(CONDS, [v * v, np.sin(v)]),
    "keyword default": lambda v: np.select(CONDS, [v * v, np.sin(v)], default=2.0),
    "positional default": lambda v: np.select(CONDS, [v * v, np.sin(v)], np.cos(v)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradient(name, engine):
    def f(v):
        return np.sum(PROGRAMS[name](v) ** 2)

    want = crt.fd_jacobian(f, X)[0]
    crt.assert_approx(cr.gradient(f, X, engine=engine)[0], want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_forward_jacobian(name):
    g = PROGRAMS[name]
    crt.assert_approx(cr.jacobian(g, X, mode="forward"), crt.fd_jacobian(g, X), rtol=1e-7, atol=1e-9)
