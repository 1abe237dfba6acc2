"""Attributes of tracked values: the names of arrays' and NumPy scalars' are descriptors on the box
classes (no ``__getattr__``, which would make CPython read every slot of a box through it), and
answer as before: methods through their rules, descriptive attributes from the primal, writes
refused, other names missing."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.trace import tracer
from chainrules.reverse.trace.tracked import TrackedArray, TrackedNumber


def test_the_box_classes_read_their_slots_without_a_hook():
    for cls in (TrackedArray, TrackedNumber):
        assert not hasattr(cls, "__getattr__")
        assert cls.__getattribute__ is object.__getattribute__


def test_array_attributes_and_methods_through_their_rules():
    def f(x):
        assert x.shape == (2, 3) and x.ndim == 2 and x.dtype == np.float64 and x.size == 6
        assert x.base is None
        return x.sum(axis=0) @ x.T.mean(axis=1)[:1].repeat(3) + x.real.max() + x.ravel()[2]

    x = np.arange(6.0).reshape(2, 3).copy()  # (not a view: its base is None)
    (g,) = cr.gradient(f, x, engine="tape")
    np.testing.assert_allclose(g, cr.gradient(f, x, engine="source")[0])
    cr.testing.check_grads(f, (x,), modes=("reverse",), order=1, engine="tape")
    with pytest.raises(cr.NoRuleError, match=r"ndarray\.flat is computed in C"):  # through getattr's rule
        cr.gradient(lambda x: x.flat[2], x, engine="tape")


def test_number_methods_of_numpy_scalars_and_refusals():
    def f(x):
        s = x.sum()  # a NumPy scalar: its methods through the rules of np.generic's
        return s.reshape(1).sum() * s.T + s.conjugate()

    x = np.array([1.0, 2.0])
    (g,) = cr.gradient(f, x, engine="tape")
    np.testing.assert_allclose(g, 2 * x.sum() + 1.0)
    with pytest.raises(AttributeError, match="'float' object .* has no attribute 'reshape'"):
        cr.gradient(lambda a: a.reshape(1), 2.0, engine="tape")  # a Python number has no array methods
    with pytest.raises(AttributeError, match="no attribute 'nbytes'"):
        cr.gradient(lambda x: x.sum().nbytes, x, engine="tape")
    with pytest.raises(TypeError, match=r"x\.fill\(\) writes into an array being differentiated"):
        cr.gradient(lambda x: x.fill(0.0), x, engine="tape")
    for name in ("no_such_attribute", "__no_such_dunder__"):
        with pytest.raises(AttributeError, match=name):
            cr.gradient(lambda x, name=name: getattr(x, name), x, engine="tape")
        with pytest.raises(AttributeError, match=name):
            cr.gradient(lambda a, name=name: getattr(a, name), 2.0, engine="tape")


def test_the_classes_themselves_have_no_array_members():
    # as with __getattr__, where only instances answered: a lookup on the type finds nothing
    assert getattr(TrackedArray, "sum", None) is None and not hasattr(TrackedArray, "shape")
    assert getattr(TrackedNumber, "reshape", None) is None
    assert callable(TrackedNumber.conjugate) and isinstance(TrackedNumber.__dict__["shape"], property)


def test_attributes_of_an_outer_tapes_value_inside_an_inner_differentiation():
    def inner(y, x):
        return (x * y).sum() * x.shape[0]

    def outer(x):
        return cr.gradient(inner, 2.0, x, engine="tape")[0] * x.sum()

    x = np.array([0.5, 1.5])
    (g,) = cr.gradient(outer, x, engine="tape")
    np.testing.assert_allclose(g, cr.gradient(outer, x, engine="source")[0])
    box = tracer.box(np.zeros(2), tracer.Trace(None), 0, TrackedNumber, TrackedArray)
    assert box.ndim == 1 and box.itemsize == 8
