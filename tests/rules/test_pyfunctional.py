"""Rules for iter, map, zip, enumerate, filter, reversed, functools.reduce and itertools.accumulate,
and for consuming what they return; checked directly and, with user callables, through the
source engine against finite differences."""

import functools
import itertools
import math
import operator

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt
from chainrules.rules.pyfunctional import Iterated

NO, ZERO = cr.NoTangent(), cr.ZeroTangent()


def check(fn, *args):
    crt.check_grads(fn, args, modes=("reverse",), order=1, engine="source")


# ----- the rules themselves, with callables that have rules (no engine needed) -------------------


def test_map_with_a_rule_callable():
    y, back = cr.rrule(map, math.sin, (0.5, 1.0))
    assert isinstance(y, Iterated) and list(y) == [math.sin(0.5), math.sin(1.0)]
    dmap, df, dxs = back([2.0, ZERO])
    assert (dmap, df) == (NO, NO)  # math.sin has no tangent
    assert dxs == cr.Tangent[tuple](2.0 * math.cos(0.5), ZERO)
    assert back(ZERO) == (NO, NO, ZERO)


def test_map_over_several_iterables_stops_at_the_shortest():
    y, back = cr.rrule(map, operator.mul, [1.0, 2.0, 3.0], np.array([4.0, 5.0]))
    assert list(y) == [4.0, 10.0]
    _, _, da, db = back([1.0, 1.0])
    assert da == cr.Tangent[list](4.0, 5.0, ZERO)
    np.testing.assert_array_equal(db, [1.0, 2.0])


def test_zip_enumerate_filter_reversed():
    y, back = cr.rrule(zip, [1.0, 2.0], ("a", "b"))
    assert list(y) == [(1.0, "a"), (2.0, "b")]
    assert back([cr.Tangent[tuple](3.0, NO), ZERO]) == (NO, cr.Tangent[list](3.0, ZERO), NO)
    y, back = cr.rrule(enumerate, [1.0, 2.0], 5)
    assert list(y) == [(5, 1.0), (6, 2.0)]
    assert back([ZERO, (NO, 7.0)]) == (NO, cr.Tangent[list](ZERO, 7.0), NO)
    y, back = cr.rrule(filter, lambda v: v > 1.5, [1.0, 2.0, 3.0])
    assert list(y) == [2.0, 3.0]
    assert back([10.0, 20.0]) == (NO, NO, cr.Tangent[list](ZERO, 10.0, 20.0))
    y, back = cr.rrule(reversed, (1.0, 2.0))
    assert list(y) == [2.0, 1.0] and back([10.0, 20.0]) == (NO, cr.Tangent[tuple](20.0, 10.0))


def test_iter():
    y, back = cr.rrule(iter, (1.0, 2.0))
    assert isinstance(y, Iterated) and next(y) == 1.0
    assert back([ZERO, 3.0]) == (NO, cr.Tangent[tuple](ZERO, 3.0))
    assert cr.rrule(iter, y)[0] is y  # an iterator is its own
    y, back = cr.rrule(iter, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert len(list(y)) == 2
    np.testing.assert_array_equal(back([ZERO, np.array([5.0, 6.0])])[1], [[0.0, 0.0], [5.0, 6.0]])
    with pytest.raises(cr.NoRuleError, match="until the sentinel"):
        cr.rrule(iter, lambda: 1.0, 0.0)


def test_reduce_with_and_without_initial():
    y, back = cr.rrule(functools.reduce, operator.mul, [2.0, 3.0, 4.0])
    assert y == 24.0 and back(1.0) == (NO, NO, cr.Tangent[list](12.0, 8.0, 6.0))
    y, back = cr.rrule(functools.reduce, operator.add, [2.0, 3.0], 1.0)
    assert y == 6.0 and back(1.0) == (NO, NO, cr.Tangent[list](1.0, 1.0), 1.0)
    with pytest.raises(TypeError, match="empty"):
        cr.rrule(functools.reduce, operator.add, [])
    crt.test_rrule(functools.reduce, operator.mul, [2.0, 3.0, 4.0])
    crt.test_rrule(functools.reduce, operator.add, (2.0, 3.0), 1.5)
    crt.test_rrule(functools.reduce, operator.mul, np.array([1.5, 2.0, 0.5]))


def test_accumulate():
    y, back = cr.rrule(itertools.accumulate, [1.0, 2.0, 3.0])
    assert list(y) == [1.0, 3.0, 6.0]
    assert back([1.0, 1.0, 1.0]) == (NO, cr.Tangent[list](3.0, 2.0, 1.0))
    y, back = cr.rrule(itertools.accumulate, [2.0, 3.0, 4.0], operator.mul)
    assert list(y) == [2.0, 6.0, 24.0]
    _, dxs, dfunc = back([0.0, 0.0, 1.0])
    assert dxs == cr.Tangent[list](12.0, 8.0, 6.0) and dfunc == NO


def test_consumers_of_an_iterated():
    def made():
        return cr.rrule(map, math.exp, [0.0, 1.0, 2.0])[0]

    it = made()
    first, back_next = cr.rrule(next, it)
    rest, back_list = cr.rrule(list, it)
    assert first == 1.0 and rest == [math.e, math.exp(2.0)]
    assert back_next(5.0) == (NO, [5.0, ZERO, ZERO])
    assert back_list(cr.Tangent[list](1.0, 2.0)) == (NO, [ZERO, 1.0, 2.0])
    assert cr.rrule(sum, made(), 1.0)[1](2.0) == (NO, [2.0, 2.0, 2.0], 2.0)
    y, back = cr.rrule(max, made())
    assert y == math.exp(2.0) and back(1.0) == (NO, [ZERO, ZERO, 1.0])
    y, back = cr.rrule(sorted, made(), key=lambda v: -v)
    assert y[0] == math.exp(2.0) and back([1.0, 2.0, 3.0]) == (NO, [3.0, 2.0, 1.0])
    y, back = cr.rrule(tuple, made())
    assert len(y) == 3 and back(cr.Tangent[tuple](1.0, ZERO, ZERO)) == (NO, [1.0, ZERO, ZERO])
    pairs = cr.rrule(zip, ["a", "b"], [1.0, 2.0])[0]
    y, back = cr.rrule(dict, pairs)
    assert y == {"a": 1.0, "b": 2.0}
    assert back(cr.Tangent[dict]({"b": 3.0})) == (NO, [ZERO, cr.Tangent[tuple](NO, 3.0)])


def test_iterables_of_unknown_length_are_refused():
    def gen():
        yield 1.0

    with pytest.raises(cr.NoRuleError, match="its length is unknown"):
        cr.rrule(map, math.sin, gen())
    with pytest.raises(cr.NoRuleError, match="none of the iterables has a known length"):
        cr.rrule(zip, gen(), itertools.count())
    y, _ = cr.rrule(zip, [1.0, 2.0], itertools.count())  # bounded by the list
    assert list(y) == [(1.0, 0), (2.0, 1)]


def test_an_iterated_is_consumed_once():
    it = cr.rrule(map, math.sin, [0.0, 1.0])[0]
    assert list(it) == [0.0, math.sin(1.0)] and list(it) == []


# ----- user callables through the source engine ----------------------------------------------------


def map_a_closure(xs, w):
    return sum(map(lambda x: x * w + math.sin(x), xs))


def map_two(xs, ys):
    return max(map(lambda a, b: a * b, xs, ys)) + sum(map(operator.add, xs, ys))


def fold(xs, c):
    return functools.reduce(lambda a, b: a * b + c, xs, 1.5)


def running(xs):
    return sum(itertools.accumulate(xs, lambda a, b: a * b + 1.0))


def pairs(xs, ys):
    total = 0.0
    d = dict(zip(["p", "q"], map(math.exp, ys)))
    return total + d["p"] * sum(map(lambda p: p[1] * p[0], enumerate(xs))) + d["q"]


def selected(xs):
    return sum(filter(lambda v: v > 0.5, map(math.sin, xs))) + sum(reversed(xs)) * 0.0


@pytest.mark.parametrize(
    "fn, args",
    [
        (map_a_closure, ([1.0, 2.0, 3.0], 0.5)),
        (map_two, ((1.0, 2.0), [3.0, 4.0])),
        (fold, ([1.5, 2.0, 3.0], 0.25)),
        (running, ([1.5, 2.0, 3.0],)),
        (pairs, ([1.0, 2.0], [0.1, 0.2])),
        (selected, ([0.2, 1.0, 2.0],)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_user_callables_through_the_source_engine(fn, args):
    check(fn, *args)


def test_map_gives_a_closure_its_tangent():
    from chainrules.reverse.source import pullback_full

    def outer(w, xs):
        return sum(map(lambda x: w * x, xs))

    _, dw, dxs = pullback_full(outer, 2.0, [1.0, 3.0])[1](1.0)
    assert dw == 4.0 and dxs == cr.Tangent[list](2.0, 2.0)
