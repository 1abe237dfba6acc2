"""A buffer the function made, written through a view that a call returned (``out.reshape``,
``out.ravel()``, ``np.asarray(out)``), or read through such a view after a write: the engines
that cannot follow the view refuse it, naming the line, rather than lose the write's derivative."""

import numpy as np
import pytest

import chainrules as cr


def write_through_a_reshape(x):
    out = np.zeros(4)
    v = out.reshape(2, 2)
    v[1] = x[:2] * x[2:]
    return out


def write_through_asarray(x):
    out = np.zeros(4)
    v = np.asarray(out)
    v[2] = x[0] * 3.0
    return out


def write_through_ravel(x):
    out = np.zeros_like(x)
    v = out.ravel()
    v[2] = x[0] * 3.0
    return out


def read_through_a_reshape_after_a_write(x):
    out = np.zeros_like(x)
    v = out.reshape(2, 2)
    out[3] = x[0] ** 2
    return v.sum()


X = np.array([0.3, 0.7, 1.2, 0.9])
WRITES = [write_through_a_reshape, write_through_asarray, write_through_ravel]


@pytest.mark.parametrize("f", WRITES, ids=lambda f: f.__name__)
def test_a_write_through_a_view_from_a_call_is_refused(f):
    with pytest.raises(cr.UnsupportedSyntaxError, match=r"`v` is written in place later.*shares its memory"):
        cr.gradient(lambda z: np.sum(f(z)), X, engine="source")
    with pytest.raises(cr.ChainRulesError):  # forward mode, directly and through the source engine's primal
        cr.jvp(f, (X,), (np.eye(4)[0],))


def test_a_copy_of_a_reshape_is_a_new_buffer():
    def f(x):
        out = np.zeros(4)
        v = out.reshape(2, 2).copy()
        v[1] = x[:2] * x[2:]
        return v.sum() + out.sum()

    np.testing.assert_allclose(cr.gradient(f, X)[0], [1.2, 0.9, 0.3, 0.7])


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_a_hessian_reading_a_view_after_a_write_is_refused(engine):
    # (it had been 0: the tape did not see that a dual's reshape shares the buffer's memory)
    with pytest.raises((cr.ChainRulesError, TypeError), match="share its memory|viewed"):
        cr.hessian(read_through_a_reshape_after_a_write, X, engine=engine)
