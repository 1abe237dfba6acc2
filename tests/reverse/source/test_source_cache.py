"""The cache: parse once per function, compile once per call signature, and stay correct when
types, globals, defaults or rules change. Generated code is registered for tracebacks."""

import linecache
import math
import traceback

import pytest

import chainrules as cr
from chainrules.reverse.source import cache, pullback_full, show


def poly(x, y):
    return x * x * y + 3.0 * y


def counts():
    return dict(cache.stats)


def test_a_second_call_neither_parses_nor_compiles():
    pullback_full(poly, 1.0, 2.0)[1](1.0)
    before = counts()
    for _ in range(3):
        y, back = pullback_full(poly, 1.5, 2.5)
        assert back(1.0)[1:] == pytest.approx((7.5, 5.25))
    assert counts() == before


def test_new_argument_types_compile_a_specialization_but_do_not_parse():
    def scaled(x, s):
        return x * s

    pullback_full(scaled, 1.0, 2.0)
    before = counts()
    assert pullback_full(scaled, 1, 2.0)[1](1.0)[1:] == (2.0, 1.0)
    after = counts()
    assert after["parsed"] == before["parsed"] and after["compiled"] == before["compiled"] + 1
    # back to the first types: both specializations are kept
    pullback_full(scaled, 1.0, 2.0)
    pullback_full(scaled, 1, 2.0)
    assert counts() == after


def test_arguments_of_other_types_reach_their_own_specialization():
    def twice(x):
        return x + x

    assert pullback_full(twice, 1.0)[1](1.0)[1] == 2.0
    import numpy as np

    dx = pullback_full(twice, np.ones(2))[1](np.ones(2))[1]
    assert dx.tolist() == [2.0, 2.0]
    assert pullback_full(twice, 1.0)[1](1.0)[1] == 2.0


def test_a_rule_registered_later_is_used():
    def custom(x):
        return x * x

    def uses_custom(x):
        return custom(x) + 1.0

    assert pullback_full(uses_custom, 3.0)[1](1.0)[1] == 6.0
    assert pullback_full(custom, 3.0)[1](1.0)[1] == 6.0

    @cr.rrule.register(custom)
    def rrule_custom(x):
        def custom_pullback(dy):
            return cr.NoTangent(), 100.0 * dy

        return x * x, custom_pullback

    assert pullback_full(custom, 3.0)[1](1.0)[1] == 100.0
    assert pullback_full(uses_custom, 3.0)[1](1.0)[1] == 100.0


GLOBAL_FN = math.exp


def uses_global_function(x):
    return GLOBAL_FN(x) * 2.0


def test_a_rebound_global_makes_a_new_specialization():
    global GLOBAL_FN
    assert pullback_full(uses_global_function, 0.0)[1](1.0)[1] == pytest.approx(2.0)
    before = counts()
    GLOBAL_FN = math.log
    try:
        assert pullback_full(uses_global_function, 2.0)[1](1.0)[1] == pytest.approx(1.0)
        assert counts()["compiled"] == before["compiled"] + 1
    finally:
        GLOBAL_FN = math.exp


def test_changed_defaults_are_seen():
    def with_default(x, k=2.0):
        return x * k

    assert pullback_full(with_default, 1.0)[1](1.0)[1] == 2.0
    with_default.__defaults__ = (5.0,)
    assert pullback_full(with_default, 1.0)[1](1.0)[1] == 5.0


def test_a_method_replaced_on_its_class_is_seen():
    class Scaler:
        def scale(self, v):
            return v * 2.0

    class Tripler(Scaler):
        pass

    scaler, tripler = Scaler(), Tripler()

    def f(x):
        return scaler.scale(x) * tripler.scale(x)

    assert pullback_full(f, 1.5)[1](1.0)[1] == pytest.approx(8 * 1.5)
    Scaler.scale = lambda self, v: v * 3.0  # (both objects' method)
    assert pullback_full(f, 1.5)[1](1.0)[1] == pytest.approx(18 * 1.5)
    Tripler.scale = lambda self, v: v * v  # a subclass's own method, before its parent's
    assert pullback_full(f, 1.5)[1](1.0)[1] == pytest.approx(9 * 1.5**2)


def test_closures_over_values_of_other_types():
    def make(scale):
        def f(x):
            return x * scale

        return f

    import numpy as np

    assert pullback_full(make(2.0), 1.0)[1](1.0)[1] == 2.0
    assert pullback_full(make(np.float32(3.0)), 1.0)[1](1.0)[1] == 3.0
    assert pullback_full(make(2.0), 4.0)[1](1.0)[0].scale == 4.0


def test_a_closure_takes_the_fast_path_and_sees_its_captured_variables_change():
    import numpy as np

    scale = 2.0

    def f(x):
        return x * scale

    assert pullback_full(f, 1.0)[1](1.0)[1] == 2.0
    before = counts()
    assert pullback_full(f, 1.0)[1](1.0)[1] == 2.0  # the fast path: no new specialization
    assert counts() == before
    scale = 3.0  # the same cell, a new value of the same type
    assert pullback_full(f, 1.0)[1](1.0)[1] == 3.0
    scale = np.array([1.0, 4.0])  # the same cell, a value of another type: a new specialization
    assert pullback_full(f, 1.0)[1](1.0)[1] == 5.0
    assert counts()["compiled"] == before["compiled"] + 1
    scale = 5.0
    assert pullback_full(f, 1.0)[1](1.0)[1] == 5.0


def test_a_closure_over_a_cell_filled_later():
    def make():
        def f(x):
            return x * late

        with pytest.raises(NameError):
            pullback_full(f, 1.0)  # the cell is empty: no fast path may be remembered for it
        late = 2.0
        return f

    f = make()
    assert pullback_full(f, 3.0)[1](1.0)[1] == 2.0
    assert pullback_full(f, 3.0)[1](1.0)[1] == 2.0


def test_generated_code_is_deterministic():
    first = show(poly, 1.0, 2.0)
    cache._transformed.clear()
    assert show(poly, 1.0, 2.0) == first


def divides_by_zero(x):
    y = x * 2.0
    return y / 0.0


def test_tracebacks_show_the_generated_code():
    with pytest.raises(ZeroDivisionError) as info:
        pullback_full(divides_by_zero, 1.0)
    text = "".join(traceback.format_exception(info.value))
    assert "<chainrules-source" in text and "divides_by_zero" in text
    assert "y_2 = y / 0.0" in text
    frame = info.traceback[-1]
    lines = linecache.getlines(str(frame.path))
    assert any("# return y / 0.0" in line for line in lines)


def test_a_pullback_can_be_called_again():
    y, back = pullback_full(poly, 1.0, 2.0)
    assert back(1.0) == back(1.0)
    assert back(2.0)[1:] == pytest.approx((8.0, 8.0))
