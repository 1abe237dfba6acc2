"""A method (or a callable object) that changes its object's fields: the tape runs it on a copy of
the object, to track its fields, so the caller's object would silently keep its old state. The
tape refuses it; a method that only reads its fields is differentiated."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

import chainrules as cr

X = np.array([0.1, 0.2])


class Recurrent:
    def __init__(self):
        self.w = np.array([0.9, -0.4])
        self.h = np.zeros(2)

    def step(self, x):
        self.h = np.tanh(self.w * self.h + x)
        return (self.h**2).sum()

    def remember(self, x):
        self.last = x  # a field it adds
        return np.sum(self.w * x)

    def forget(self, x):
        del self.h
        return np.sum(self.w * x)

    def loss(self, x):
        return np.sum(self.w * x * x)


class Stepper:
    def __init__(self):
        self.inner = Recurrent()

    def __call__(self, x):
        return self.inner.step(x)  # changes a field of an object in its own field


@pytest.mark.parametrize("method", ["step", "remember", "forget"])
def test_a_method_changing_its_object_is_refused_by_the_tape(method):
    f = getattr(Recurrent(), method)
    with pytest.raises(cr.DroppedDerivativeError, match=rf"Recurrent\.{method} sets the field '\w+' .*a copy"):
        cr.gradient(f, X, engine="tape")


def test_a_callable_object_changing_a_nested_object_is_refused_by_the_tape():
    with pytest.raises(cr.DroppedDerivativeError, match="sets the field 'h' of its Recurrent object"):
        cr.gradient(Stepper(), X, engine="tape")


def test_the_default_engine_refuses_rather_than_lose_the_state():
    model = Recurrent()
    with pytest.raises(cr.ChainRulesError):
        cr.value_and_gradient(model.step, X)
    np.testing.assert_array_equal(model.h, [0.0, 0.0])


def test_a_method_reading_its_object_is_differentiated():
    model = Recurrent()
    np.testing.assert_allclose(cr.gradient(model.loss, X, engine="tape")[0], 2 * model.w * X)


@dataclasses.dataclass(slots=True)
class Slotted:
    w: np.ndarray

    def loss(self, x):
        return np.sum(self.w * x**2)

    def scale(self, x):
        self.w = self.w * x
        return np.sum(self.w)


class Cached:
    def __init__(self, w):
        self.w = w

    @functools.cached_property
    def doubled(self):
        return self.w * 2.0

    def loss(self, x):
        return np.sum(self.doubled * x**2)


def test_slotted_objects_and_cached_properties_are_read_as_fields():
    ones = np.ones(2)
    np.testing.assert_array_equal(cr.gradient(Slotted(np.array([1.0, 2.0])).loss, ones, engine="tape")[0], [2.0, 4.0])
    np.testing.assert_array_equal(cr.gradient(Cached(np.array([1.0, 2.0])).loss, ones, engine="tape")[0], [4.0, 8.0])
    with pytest.raises(cr.DroppedDerivativeError, match="sets the field 'w'"):
        cr.gradient(Slotted(np.array([1.0, 2.0])).scale, 3.0, engine="tape")
