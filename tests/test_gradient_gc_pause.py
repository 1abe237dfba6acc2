"""``cr.gradient`` pauses the cyclic garbage collector for its forward pass and sweep, and always
leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

import chainrules as cr


def test_gradient_pauses_the_collector_and_restores_it():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return x * x

    assert gc.isenabled()
    assert cr.gradient(f, 3.0, engine="tape") == (6.0,)
    assert seen == [False] and gc.isenabled()
    assert cr.gradient(lambda x: x * x, 3.0, engine="source") == (6.0,)
    assert gc.isenabled()


def test_gradient_restores_the_collector_after_an_error_and_leaves_it_off_if_it_was():
    def broken(x):
        raise ValueError("inside f")

    with pytest.raises(ValueError, match="inside f"):
        cr.gradient(broken, 1.0, engine="tape")
    assert gc.isenabled()
    gc.disable()
    try:
        assert cr.value_and_gradient(lambda x: x * 2.0, 1.0, engine="tape") == (2.0, (2.0,))
        assert not gc.isenabled()
    finally:
        gc.enable()
