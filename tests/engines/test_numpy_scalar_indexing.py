"""``s[None]``, ``s[()]``, ``s[...]`` of a NumPy scalar being differentiated (a full reduction's
result): every engine indexes it as NumPy does, through ``operator.getitem``'s rule; a Python
number being differentiated is not subscriptable, as the plain number is not. An engine's number
that indexes is a sequence to NumPy, which turns the engine's refusal of ``out[i] = x`` into its
own error; the engines raise their refusal instead."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import trace
from chainrules.testing import check_grads

X = np.array([0.5, 1.0, -2.0])


def new_axis(x):
    s = np.sum(x * x)
    return np.sum(s[None] * x)


def empty_tuple(x):
    s = np.float64(2.0) * x[0]  # (a NumPy scalar times an entry: a NumPy scalar)
    return s[()] * np.prod(x) + np.sum(s[..., None] ** 2)


@pytest.mark.parametrize("f", [new_axis, empty_tuple])
def test_every_engine_indexes_a_numpy_scalar_as_numpy_does(f):
    checks = check_grads(f, (X,), order=2)
    assert any(c.startswith("reverse[tape]") for c in checks), checks
    assert any(c.startswith("forward") for c in checks), checks
    gradients = [cr.gradient(f, X, engine=engine)[0] for engine in ("source", "tape")]
    np.testing.assert_allclose(gradients[0], gradients[1], rtol=1e-14)
    jacobian = cr.jacobian(lambda x: np.atleast_1d(f(x)), X, mode="forward")[0]
    np.testing.assert_allclose(jacobian, gradients[0], rtol=1e-14)


def test_a_new_axis_of_a_numpy_scalar_has_its_shape():
    y, dy = cr.jvp(lambda x: np.sum(x)[None], (X,), (np.ones(3),))
    assert y.shape == dy.shape == (1,)
    np.testing.assert_allclose(dy, [3.0])


@pytest.mark.parametrize("engine", ["tape", "forward"])
def test_a_python_number_being_differentiated_is_not_subscriptable(engine):
    def f(x):
        return x[None] * 2.0

    with pytest.raises(TypeError, match="'float' object is not subscriptable"):
        if engine == "forward":
            cr.derivative(f, 1.5)
        else:
            cr.gradient(f, 1.5, engine=engine)


def into_a_plain_buffer(x):
    out = np.zeros(2)
    out[0] = np.sum(x)  # a NumPy scalar being differentiated, written into a plain array
    return np.sum(out)


@pytest.mark.parametrize("run", ["tape", "forward"])
def test_a_write_into_a_plain_buffer_raises_the_engines_refusal_not_numpys_error(run):
    with pytest.raises(cr.DroppedDerivativeError, match="would drop its derivative") as info:
        if run == "tape":
            trace.pullback_full(into_a_plain_buffer, X)
        else:
            from chainrules import forward

            forward.jvp(into_a_plain_buffer, (X,), (np.ones(3),))
    assert "test_numpy_scalar_indexing.py" in str(info.value)
    # (cr.jvp then runs the function as the source engine's primal, which follows the write)
    np.testing.assert_allclose(cr.jvp(into_a_plain_buffer, (X,), (np.ones(3),))[1], 3.0)


def test_a_number_that_indexes_is_still_not_iterable():
    seen = []

    def f(x):
        s = np.sum(x)
        seen.append(np.iterable(s))
        with pytest.raises(TypeError):
            list(s)
        with pytest.raises(TypeError):
            iter(s)
        return s * 2.0

    for engine in ("source", "tape"):
        cr.gradient(f, X, engine=engine)
    cr.jvp(f, (X,), (np.ones(3),))
    assert seen == [False, False, False]


def converts_then_fails(x):
    """What a C library does with a refused conversion (MINPACK behind scipy.optimize.fsolve): it
    clears the refusal and raises an error of its own, which does not chain it."""
    try:
        float(np.sum(x))
        failed = False
    except TypeError:
        failed = True
    if failed:
        raise RuntimeError("Result from function call is not a proper array of floats.")
    return x


@pytest.mark.parametrize("run", ["tape", "forward"])
def test_a_librarys_own_error_after_a_refusal_raises_the_refusal_with_it_as_a_note(run):
    with pytest.raises(cr.DroppedDerivativeError, match="would drop its derivative") as info:
        if run == "tape":
            trace.pullback_full(converts_then_fails, X)
        else:
            from chainrules import forward

            forward.jvp(converts_then_fails, (X,), (np.ones(3),))
    assert any("RuntimeError: Result from function call" in note for note in info.value.__notes__)
