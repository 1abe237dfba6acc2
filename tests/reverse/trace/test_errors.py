"""Nothing drops a derivative silently: missing rules, conversions and writes raise, naming the line."""

from __future__ import annotations

import copy
import math
import pickle
import re

import numpy as np
import pytest
from trace_rules import view_of

import chainrules as cr
from chainrules.reverse.trace import pullback_full
from chainrules.reverse.trace.tracer import apply

HERE = re.escape(__file__)

no_rule = np.frompyfunc(lambda x, y: x, 2, 1)  # a ufunc nobody registered a rule for


def test_missing_rule_names_the_callable_the_types_and_the_line():
    def f(x):
        return no_rule(x, 2)  # the line the error points at

    with pytest.raises(cr.NoRuleError) as info:
        pullback_full(f, 1.5)
    message = str(info.value)
    assert "(float, int)" in message
    assert re.search(HERE + r":\d+", message)
    assert info.value.callable is no_rule
    line = int(re.search(HERE + r":(\d+)", message).group(1))
    assert "the line the error points at" in open(__file__).read().splitlines()[line - 1]


@pytest.mark.parametrize(
    "convert",
    [math.sin, math.exp, float, complex],
    ids=["math.sin", "math.exp", "float", "complex"],
)
def test_conversions_to_plain_numbers_raise(convert):
    def f(x):
        return convert(x) * x

    with pytest.raises(TypeError, match="would drop its derivative") as info:
        pullback_full(f, 0.5)
    assert "np.sin" in str(info.value) and re.search(HERE + r":\d+", str(info.value))


def test_converting_an_array_raises():
    with pytest.raises(TypeError, match="plain NumPy array"):
        pullback_full(lambda x: np.asarray(x), np.ones(2))
    with pytest.raises(TypeError, match="plain NumPy array"):
        pullback_full(lambda x: np.array([x, x]), 1.0)
    with pytest.raises(TypeError, match="plain NumPy array"):
        pullback_full(lambda x: np.float64(x), 1.0)


def test_writing_into_a_plain_array_raises():
    def setitem(x):
        out = np.zeros(2)
        out[0] = x
        return out

    def add_into(x):
        out = np.zeros(2)
        out += x
        return out

    with pytest.raises(TypeError, match="drop its derivative"):
        pullback_full(setitem, 1.0)
    with pytest.raises(TypeError, match="writes into an array in place"):
        pullback_full(add_into, np.ones(2))


def test_writing_into_an_argument_or_with_a_method_raises():
    # a write into the function's own array is recorded (test_writes.py); into an argument it would
    # change the caller's array, and the writing methods are refused
    def f(x):
        x[0] = 1.0
        return x

    def fill(x):
        y = x * 2.0
        y.fill(0.0)
        return y

    line = f.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"assignment into an argument being differentiated.*:{line}\)"):
        pullback_full(f, np.ones(2))
    with pytest.raises(TypeError, match="writes into an array being differentiated"):
        pullback_full(fill, np.ones(2))


def test_in_place_operators_on_new_arrays_rebind():
    def f(x):
        y = x * 2.0
        alias = y
        y += x
        y *= x
        return alias  # the same box: it sees the updates, as it would see NumPy's

    y, back = pullback_full(f, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(y, [3.0, 12.0])
    np.testing.assert_array_equal(back(np.ones(2))[1], [6.0, 12.0])  # d(3x^2) = 6x


def test_in_place_operators_on_shared_memory_raise():
    def on_argument(x):
        x += 1.0
        return x

    def on_view(x):
        y = x * 2.0
        v = view_of(y)
        v += 1.0
        return y

    def on_viewed(x):
        y = x * 2.0
        v = view_of(y)
        y += 1.0
        return v

    for f in (on_argument, on_view, on_viewed):
        with pytest.raises(TypeError, match="share memory"):
            pullback_full(f, np.ones(2))


def test_tracked_float_as_an_index_raises():
    with pytest.raises(TypeError, match="cannot be used as an integer"):
        pullback_full(lambda x: [1.0, 2.0][x], 1.0)


def test_tracked_integers_index_and_count():
    def f(n, x):
        return [x, x * 2.0, x * 3.0][n] * sum(1.0 for _ in range(n))

    assert cr.gradient(f, 2, 1.5, engine="tape") == (cr.NoTangent(), 6.0)


def test_keyword_arguments_with_tracked_values_raise_when_no_position_takes_them():
    def combine(a, *, b=1.0):
        return a * b

    @cr.rrule.register(combine)
    def rrule_combine(a, *, b=1.0):
        return a * b, lambda dy: (cr.NoTangent(), dy * b)

    with pytest.raises(TypeError, match="keyword argument 'b'.*no position of its signature can take it"):
        pullback_full(lambda x: apply(combine, (2.0,), {"b": x}), 1.0)

    def scale(a, b=1.0):
        return a * b

    @cr.rrule.register(scale)
    def rrule_scale(a, b=1.0):
        return a * b, lambda dy: (cr.NoTangent(), dy * b, dy * a)

    # a keyword with a position is passed there, and differentiated
    assert pullback_full(lambda x: apply(scale, (2.0,), {"b": x}), 1.5)[1](1.0) == (cr.NoTangent(), 2.0)


def test_a_tracked_value_given_to_a_declared_option_is_passed_as_its_value():
    """An option carries no derivative (``declare_options``): the rule gets the plain value, and no
    cotangent reaches the value from it."""
    from chainrules.core.keywords import declare_options

    def weighed(a, *, w=1.0):
        return a * w

    @cr.rrule.register(weighed)
    def rrule_weighed(a, *, w=1.0):
        assert type(w) is float  # (the plain value, not the tracked one)
        return a * w, lambda dy: (cr.NoTangent(), dy * w)

    declare_options(weighed, ["w"])
    y, back = pullback_full(lambda x: apply(weighed, (x,), {"w": x + 1.0}), 2.0)
    assert y == 6.0 and back(1.0) == (cr.NoTangent(), 3.0)


def test_values_that_escape_their_differentiation_raise_when_used():
    kept = []

    def f(x):
        kept.append(x)
        return x * 2.0

    pullback_full(f, 1.0)
    with pytest.raises(TypeError, match="escaped"):
        kept[0] * 3.0
    with pytest.raises(TypeError, match="escaped"):
        pullback_full(lambda y: y * kept[0], 1.0)


@pytest.mark.parametrize("escaping", [lambda x: x * 2.0, lambda x: x[0] * 0.0], ids=["array", "zero"])
def test_escaped_values_whose_truth_is_ambiguous_or_false_raise_too(escaping):
    """An array's truth is ambiguous and a zero's is False: neither may decide whether it escaped
    (the array raised NumPy's ValueError, the zero was taken for a constant)."""
    kept = []

    def f(x):
        kept.append(escaping(x))
        return np.sum(x**2)

    pullback_full(f, np.ones(2))
    with pytest.raises(TypeError, match="escaped"):
        kept[0] + 1.0


def test_truth_of_an_array_follows_numpy():
    with pytest.raises(ValueError, match="ambiguous"):
        pullback_full(lambda x: x if x else -x, np.ones(2))


def test_tracked_values_are_unhashable_and_unpicklable():
    def f(x):
        with pytest.raises(TypeError, match="unhashable"):
            hash(x)
        with pytest.raises(TypeError, match="pickled"):
            pickle.dumps(x)
        assert copy.copy(x) is x and copy.deepcopy(x) is x
        return x

    pullback_full(f, 1.0)


def test_conversions_inside_a_library_function_name_it_and_the_users_line():
    import statistics

    def f(x):
        return statistics.covariance([x, x * 2.0], [1.0, 3.0])  # the user's line (a function without a rule)

    with pytest.raises(TypeError, match="inside statistics.covariance") as info:
        pullback_full(f, 1.0)
    line = int(re.search(HERE + r":(\d+)", str(info.value)).group(1))
    assert "the user's line" in open(__file__).read().splitlines()[line - 1]


def test_a_cotangent_with_too_few_items_for_a_tuple_output_is_a_clear_error():
    y, back = pullback_full(lambda a: (a, a * 2.0), np.ones(2))
    with pytest.raises(ValueError, match="a cotangent of 1 items for a tuple of 2"):
        back((np.ones(2),))
    np.testing.assert_allclose(back((np.ones(2), np.ones(2)))[1], np.full(2, 3.0))
