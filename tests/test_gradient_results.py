"""``cr.gradient`` returns plain floats and arrays as the engine gave them, and turns anything else
into what the user sees (thunks evaluated, ``ZeroTangent`` for an inexact argument the output does
not use, ``NoTangent`` for a discrete one), whatever the mix of argument types."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

ENGINES = ["source", "tape"]


def mixed(a, b, c, d, e):
    return a * 2.0 + np.sum(b * b) + np.real(c * np.conj(c)) + np.sum(d)


ARGS = (
    1.5,
    np.array([1.0, 2.0], dtype=np.float32),
    np.array(1.0 + 2.0j),
    np.array(3.0),
    4,
)


@pytest.mark.parametrize("engine", ENGINES)
def test_gradient_agrees_with_the_full_pullback_for_every_kind_of_argument(engine):
    grads = cr.gradient(mixed, *ARGS, engine=engine)
    y, back = cr.pullback(mixed, *ARGS, engine=engine)
    expected = back(1.0)
    assert len(grads) == len(ARGS) == len(expected)
    assert grads[0] == expected[0] == 2.0 and type(grads[0]) is float
    np.testing.assert_allclose(grads[1], [2.0, 4.0])
    assert grads[1].dtype == np.float32
    np.testing.assert_allclose(grads[2], 2.0 + 4.0j)
    np.testing.assert_allclose(grads[3], 1.0)
    assert np.shape(grads[3]) == ()
    assert isinstance(grads[4], cr.NoTangent) and isinstance(expected[4], cr.NoTangent)
    for g, e in zip(grads, expected):
        assert not isinstance(g, cr.AbstractThunk)
        if not isinstance(g, cr.NoTangent):
            np.testing.assert_allclose(g, e)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unused_float_argument_gets_a_zero_tangent_and_argnums_selects(engine):
    def f(x, unused, n):
        return x * x

    assert cr.gradient(f, 3.0, 1.0, 2, engine=engine) == (6.0, cr.ZeroTangent(), cr.NoTangent())
    assert cr.gradient(f, 3.0, 1.0, 2, engine=engine, argnums=0) == 6.0
    assert cr.gradient(f, 3.0, 1.0, 2, engine=engine, argnums=(1, 0)) == (cr.ZeroTangent(), 6.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_thunked_cotangent_is_evaluated(engine):
    def f(x):
        return np.sum(x[0] * 3.0)  # getitem's cotangent is an in-place-able thunk

    (g,) = cr.gradient(f, np.array([1.0, 2.0]), engine=engine)
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, [3.0, 0.0])


def test_has_aux_and_value_and_gradient_keep_their_shape():
    def f(x):
        return x * x, "aux"

    assert cr.gradient(f, 3.0, has_aux=True) == ((6.0,), "aux")
    assert cr.value_and_gradient(f, 3.0, has_aux=True) == ((9.0, "aux"), (6.0,))
    assert cr.value_and_gradient(lambda x: x * x, 3.0, argnums=0) == (9.0, 6.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_has_aux_returns_the_auxiliary_output_undifferentiated(engine):
    def f(x):
        return np.sum(x * x), x * 2.0

    x = np.array([1.0, 2.0])
    (g,), aux = cr.gradient(f, x, engine=engine, has_aux=True)
    np.testing.assert_array_equal(g, [2.0, 4.0])
    np.testing.assert_array_equal(aux, [2.0, 4.0])
    assert type(aux) is np.ndarray


def test_has_aux_refuses_a_function_that_does_not_return_a_pair():
    with pytest.raises(cr.ChainRulesError, match="pair"):
        cr.gradient(lambda x: x * x, 3.0, has_aux=True)
