"""Where the source engine refuses a function's Python (a generator, a list reversed in place,
``nonlocal`` state, an exception suppressed half way through a ``with`` block:
``cr.UnsupportedSyntaxError``) or a call in it that has no rule (a plain class built, a library
function that rebuilds its arguments: ``cr.NoRuleError``), or where it recurses deeper than its own
frames allow (a ``RecursionError``), the reverse entry points differentiate it
on the tape, which follows what runs, and remember that choice for the function; where the tape
refuses it too, the source engine's refusal is raised with a note saying why the tape failed."""

import collections
import contextlib
import functools
import itertools
import math
import operator
import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules import api
from chainrules.reverse import source
from chainrules.testing import fd_jacobian

X = np.array([0.4, 1.3, 2.2])


def with_a_suppressed_exception(x):
    y = x * 2.0
    with contextlib.suppress(FloatingPointError):
        with np.errstate(invalid="raise"):
            y = np.sqrt(x - 1.0)  # stops the block at x[0] < 1: y keeps its value
    return np.sum(y * x)


def with_a_generator(x):
    def squares():
        for v in x:
            yield v * v

    return sum(squares()) * x[0]


def reversed_in_place(x):
    out = [v**3 for v in x]
    out.reverse()
    return out[0] * x[1] + out[2]


def with_nonlocal_state(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + np.sin(v)

    for v in x:
        add(v)
    return total * x[2]


class Vector:
    """A plain class (not a dataclass): building one has no rule."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __add__(self, other):
        return Vector(self.a + other.a, self.b + other.b)

    def scaled(self, s):
        return Vector(self.a * s, self.b * s)


def with_a_plain_class(x):
    v = Vector(x[0], x[1]).scaled(2.0) + Vector(x[1], np.sin(x[2]))
    return v.a**2 + v.b**2


Pair = collections.namedtuple("Pair", "u v")


def with_library_calls_without_rules(x):
    picked = operator.itemgetter(0, 2)(x)
    pair = Pair(x[0], x[1])._replace(v=x[2] * 3.0)
    kernel = functools.partial(np.power, x[1:])
    products = itertools.accumulate(x[1:], operator.mul, initial=x[0])
    return np.sum(np.stack(picked) ** 2) + pair.u * pair.v + np.sum(kernel(2.0)) + sum(products)


SYNTAX = [with_a_suppressed_exception, with_a_generator, reversed_in_place, with_nonlocal_state]


@pytest.mark.parametrize("f", [*SYNTAX, with_a_plain_class, with_library_calls_without_rules])
def test_the_entry_points_take_the_tape(f):
    with pytest.raises(cr.UnsupportedSyntaxError if f in SYNTAX else cr.NoRuleError):
        source.pullback_full(f, X)
    expected = fd_jacobian(f, X)[0].ravel()
    np.testing.assert_allclose(cr.gradient(f, X)[0], expected, rtol=1e-7, atol=1e-9)
    value, (grad,) = cr.value_and_gradient(f, X)
    assert value == pytest.approx(f(X), rel=1e-14)
    np.testing.assert_allclose(grad, cr.gradient(f, X, engine="tape")[0], rtol=1e-14)
    np.testing.assert_allclose(cr.pullback(f, X)[1](2.0)[0], 2 * expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(f, X, mode="reverse"), expected, rtol=1e-7, atol=1e-9)
    H = cr.hessian(f, X)
    np.testing.assert_allclose(H, fd_jacobian(lambda z: cr.gradient(f, z, engine="tape")[0], X), atol=1e-7)
    assert api._chosen_before(f, api._ON_THE_TAPE)  # later calls go to the tape directly


def relaxed(x, n):  # a recursion as deep as Python allows, not as deep as the source engine's frames allow
    return x if n == 0 else np.sin(relaxed(x, n - 1)) * 0.5 + x * 0.5


def test_a_recursion_too_deep_for_the_source_engines_frames_takes_the_tape():
    depth = int(sys.getrecursionlimit() * 0.6)
    assert relaxed(0.3, depth)  # (Python runs it)

    def f(x):
        return relaxed(x, depth)

    with pytest.raises(RecursionError):
        source.pullback_full(f, 0.3)
    expected = fd_jacobian(f, 0.3).ravel()
    np.testing.assert_allclose(cr.gradient(f, 0.3), expected, rtol=1e-6)
    assert api._chosen_before(f, api._ON_THE_TAPE)


def test_where_the_tape_refuses_too_the_source_engines_refusal_is_raised():
    def careful_sine(x):
        def values():
            yield math.sin(x)  # the tape cannot take math.sin of its values

        return sum(values())

    with pytest.raises(cr.UnsupportedSyntaxError, match="`yield` is not supported") as info:
        cr.gradient(careful_sine, 0.3)
    assert "The tape engine could not differentiate" in "".join(info.value.__notes__)
    assert "math" in "".join(info.value.__notes__)
    assert not api._chosen_before(careful_sine, api._ON_THE_TAPE)


def test_show_keeps_the_refusal():
    with pytest.raises(cr.UnsupportedSyntaxError, match="changes `out` in place"):
        cr.show(reversed_in_place, X)


def test_where_the_tape_refuses_a_repeated_write_the_source_engines_refusal_is_raised():
    def repeated_write(x, w):
        def inner(u, k=w):  # the source engine refuses a default that depends on w
            return np.cos(u) * k

        v = inner(x)
        out = np.zeros_like(v)
        out[[0, 0]] = v[:2]  # the tape refuses a write that repeats a position
        return np.sum(out**2)

    with pytest.raises(cr.UnsupportedSyntaxError, match="default value of the nested function") as info:
        cr.gradient(repeated_write, X, 0.7)
    assert "repeats a position" in "".join(info.value.__notes__)


def test_a_c_function_called_through_ctypes_raises_the_source_engines_refusal():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no C math library to call")
    libm = ctypes.CDLL(name)
    libm.cos.restype, libm.cos.argtypes = ctypes.c_double, [ctypes.c_double]

    def ccall(x):
        return libm.cos(x) * x

    # the tape's ctypes.ArgumentError (a tracked value for a C double) is noted on the refusal
    with pytest.raises(cr.NoRuleError, match="tape engine could not differentiate"):
        cr.gradient(ccall, 1.0)
