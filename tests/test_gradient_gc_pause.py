"""``cr.gradient`` pauses the cyclic garbage collector for its forward pass and sweep, and always
leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

import chainrules as cr


def probe(x):
    return x


seen: list = []


@cr.rrule.register(probe)
def rrule_probe(x):
    seen.append(("primal", gc.isenabled()))

    def probe_pullback(dy):
        seen.append(("pullback", gc.isenabled()))
        return cr.NoTangent(), dy

    return x, probe_pullback


def test_gradient_pauses_the_collector_and_restores_it():
    def f(x):
        return probe(x) * x  # the source engine calls probe's rule (the tape would run its body)

    seen.clear()
    assert gc.isenabled()
    assert cr.gradient(f, 3.0, engine="source") == (6.0,)
    assert seen == [("primal", False), ("pullback", False)]
    assert gc.isenabled()
    assert cr.gradient(f, 3.0, engine="tape") == (6.0,)
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
