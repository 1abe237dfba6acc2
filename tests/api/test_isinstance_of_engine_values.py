"""``isinstance`` in the user's code takes the branch it takes on the plain value, in every mode.

Forward mode and the tape run the function on their own values (dual numbers, tracked values),
and a Hessian runs the source engine's code on dual numbers: ``isinstance(x, float)`` or
``isinstance(x, np.ndarray)`` of such a value had been False, so the function took its other
branch and its derivative was that branch's, silently. To the user's code such a value's
``__class__`` is the plain value's class, and the source engine's rule for ``isinstance`` asks
about the plain value; chainrules and the libraries it runs in see the engine's own class.
"""

import numbers

import numpy as np
import pytest

import chainrules as cr
from chainrules.forward import Dual, Tag
from chainrules.testing import fd_jacobian


def doubled_if_float(x):
    if isinstance(x, float):
        return x * 2.0
    return x * 3.0


def squares_if_array(x):
    if isinstance(x, np.ndarray):
        return np.sum(x**2)
    return np.sum(x) * 10.0


def squared_if_real(x):
    if isinstance(x, (numbers.Real, complex)):  # an abstract class, in a tuple
        return x**2
    return x * 0.0


CASES = [(doubled_if_float, 1.5), (squares_if_array, np.array([1.0, 2.0])), (squared_if_real, 1.5)]


@pytest.mark.parametrize("f, x", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_every_mode_takes_the_plain_values_branch(f, x):
    expected = fd_jacobian(f, x)[0].reshape(np.shape(x))
    np.testing.assert_allclose(cr.gradient(f, x)[0], expected, rtol=1e-7)
    np.testing.assert_allclose(cr.gradient(f, x, engine="tape")[0], expected, rtol=1e-7)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7)
    H = cr.hessian(f, x)
    np.testing.assert_allclose(H, fd_jacobian(lambda z: cr.gradient(f, z)[0], x).reshape(np.shape(H)), atol=1e-6)


def test_the_engines_own_class_elsewhere():
    d = Dual(np.array([1.0, 2.0]), np.array([1.0, 0.0]), Tag())
    assert isinstance(d, np.ndarray) and d.__class__ is np.ndarray  # here: the user's code
    assert type(d) is not np.ndarray and isinstance(d, Dual)  # type() and the engine's class are the engine's
    # NumPy's code sees the engine's class, but the body of a NumPy function with a rule that the user's code
    # calls runs in the rule's place on the tape and in forward mode: np.isscalar answers as on the plain value
    assert np.isscalar(Dual(2.0, 1.0, Tag())) and not np.isscalar(d)


def test_an_engine_value_that_stands_for_nothing_else_keeps_its_class_and_the_defaults():
    from chainrules.core import ActiveValue

    class Box(ActiveValue):  # an engine's value that overrides nothing
        __slots__ = ()

    box = Box()
    assert not isinstance(box, float) and box.__class__ is Box  # it stands for itself
    assert box.buffer_holding(np.zeros(2)) is None  # the base class's defaults
    assert box.call_by_rule(np.sin, (box,), {}) is NotImplemented


def _length_of_its_text(x):
    return x * len(str(x)) + x * len("%s" % x)  # noqa: UP031 (the percent form is what is tested)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_str_of_an_engine_value_is_the_plain_values_text(engine):
    # str(x) reads '0.5' on every engine's value, as on the number: the function's value is unchanged
    assert cr.value_and_gradient(_length_of_its_text, 0.5, engine=engine) == (3.0, (6.0,))
    assert cr.derivative(_length_of_its_text, 0.5) == 6.0
    assert cr.hessian(lambda x: x * _length_of_its_text(x), 0.5, engine=engine) == pytest.approx(12.0)
