"""Functions wrapped by decorators (``functools.wraps``): the source engine differentiates the
wrapper's own code with the wrapper's own signature (``inspect.signature`` would report the
wrapped function's, through ``__wrapped__``: the gradient of ``*args`` had been a silent zero).
Gradients are checked against finite differences and the tape."""

import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse import source
from chainrules.testing import fd_jacobian


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2.0

    return wrapper


def swapped(fn):
    @functools.wraps(fn)
    def wrapper(a, b):
        return fn(b, a)

    return wrapper


def scaled(s):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x, *rest, scale=s):
            return fn(x * scale, *rest)

        return wrapper

    return decorate


class Shifted:
    """A class decorator: the instance is the callable, with the function's name and doc."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return self.fn(*args) + 1.0


@doubled
def sine_times(x, y=1.0):
    return np.sin(x) * y


@doubled
@scaled(3.0)
def stacked(x, y=1.0):
    return np.sin(x) * y


@doubled
def weighted_sines(x, w):
    return np.sum(np.sin(x) * w)


@swapped
def squared_times(a, b):
    return a**2 * b


@Shifted
def cubed(x):
    return x**3


CASES = [
    (sine_times, (0.7,)),
    (sine_times, (0.7, 2.0)),
    (stacked, (0.7, 2.0)),
    (squared_times, (0.7, 1.3)),
    (cubed, (0.7,)),
    (weighted_sines, (np.array([0.3, 1.2]), np.array([2.0, -1.0]))),
]


@pytest.mark.parametrize("f, args", CASES, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_gradients_of_decorated_functions(f, args, engine):
    grads = cr.gradient(f, *args, engine=engine)  # (each positional argument's)
    for i, g in enumerate(grads):
        expected = fd_jacobian(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), args[i])
        np.testing.assert_allclose(g, np.reshape(expected, np.shape(args[i])), rtol=1e-7, atol=1e-9)


def test_the_wrapper_keeps_its_own_signature():
    y, back = source.pullback_full(sine_times, 0.7)
    assert y == pytest.approx(2 * np.sin(0.7))
    assert back(1.0)[1] == pytest.approx(2 * np.cos(0.7))  # (was ZeroTangent())
    assert "def wrapper_primal(*args, **kwargs):" in cr.show(sine_times, 0.7)
