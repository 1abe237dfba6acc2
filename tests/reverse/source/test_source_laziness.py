"""Cotangents nobody asks for are never computed: a rule's thunk is unthunked only when the
gradient it belongs to is returned (``argnums``) or used, and a closure's tangent keeps the
thunks of what it captured (a captured batch of inputs needs no cotangent)."""

import numpy as np
import pytest

import chainrules as cr

evaluated: list[str] = []


def weigh(w, x):
    return w * x


@cr.rrule.register(weigh)
def rrule_weigh(w, x):
    def weigh_pullback(dy):
        def dw():
            evaluated.append("w")
            return dy * x

        def dx():
            evaluated.append("x")
            return dy * w

        return cr.NoTangent(), cr.Thunk(dw), cr.Thunk(dx)

    return weigh(w, x), weigh_pullback


@pytest.fixture(autouse=True)
def fresh_log():
    evaluated.clear()


def test_argnums_unthunks_only_the_selected_gradients():
    engine = "source"  # the tape engine does not consult rules of Python functions such as `weigh`
    assert cr.gradient(weigh, 2.0, 3.0, argnums=0, engine=engine) == 3.0
    assert evaluated == ["w"]
    evaluated.clear()
    assert cr.gradient(weigh, 2.0, 3.0, argnums=(1,), engine=engine) == (2.0,)
    assert evaluated == ["x"]
    evaluated.clear()
    assert cr.value_and_gradient(weigh, 2.0, 3.0, argnums=[-1, 0], engine=engine) == (6.0, (2.0, 3.0))
    assert sorted(evaluated) == ["w", "x"]


def test_argnums_out_of_range_raises_index_error():
    with pytest.raises(IndexError):
        cr.gradient(weigh, 2.0, 3.0, argnums=2)
    with pytest.raises(IndexError):
        cr.gradient(weigh, 2.0, 3.0, argnums=(0, -3))


def test_the_cotangent_of_a_captured_constant_is_not_computed():
    x = 3.0

    def loss(w):
        return weigh(w, x)  # a closure over x: the tangent of `loss` has a field for it

    assert cr.gradient(loss, 2.0) == (3.0,)
    assert evaluated == ["w"]


def test_a_closure_tangent_still_carries_the_captured_cotangent_when_asked():
    from chainrules.reverse.source import pullback_full

    x = np.array([1.0, 2.0])

    def loss(w):
        return np.sum(weigh(w, x))

    y, back = pullback_full(loss, np.array([2.0, 2.0]))
    df, dw = back(1.0)
    assert np.allclose(cr.unthunk(dw), [1.0, 2.0]) and evaluated == ["w"]
    assert np.allclose(cr.unthunk(df.x), [2.0, 2.0])
    assert evaluated == ["w", "x"]
