"""The backward sweep: iterative, ownership-respecting, zero-skipping, releasing as it goes."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import trace_rules as rules
from trace_rules import boom, detach, halves, hold, pick, same, scaled, twice

import chainrules as cr
from chainrules.reverse.trace import pullback_full
from chainrules.reverse.trace.tracer import apply


def test_a_million_operation_tape_does_not_recurse():
    def chain(x):
        for _ in range(1_000_000):
            x = x + 1.0
        return x

    limit = sys.getrecursionlimit()
    y, back = pullback_full(chain, 0.5)
    assert y == 1_000_000.5
    assert back(2.0)[1] == 2.0
    assert sys.getrecursionlimit() == limit


def test_inplaceable_thunks_accumulate_into_one_array():
    def mysum(X):
        total = 0.0
        for i in range(len(X)):
            total = total + pick(X, i)
        return total

    X = np.arange(5.0)
    rules.PICK.reset()
    _, back = pullback_full(mysum, X)
    dX = back(1.0)[1]
    np.testing.assert_array_equal(dX, np.ones(5))
    assert rules.PICK.pullbacks == 5
    # the first contribution's value is built once (the one allocated array); the others add into it
    assert rules.PICK.value_thunks == 1 and rules.PICK.add_into == 4
    np.testing.assert_array_equal(X, np.arange(5.0))


def test_borrowed_cotangents_are_never_written():
    dy = np.array([1.0, 2.0])
    _, back = pullback_full(lambda x: same(x) + same(x), np.zeros(2))
    np.testing.assert_array_equal(back(dy)[1], [2.0, 4.0])
    np.testing.assert_array_equal(dy, [1.0, 2.0])  # the user's cotangent, handed back by `same`


def test_arrays_a_rule_keeps_are_never_written():
    rules.KEPT.clear()
    _, back = pullback_full(lambda x: scaled(x) + x, np.zeros(3))
    first = back(np.ones(3))[1]
    np.testing.assert_array_equal(rules.KEPT[0], [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(back(np.ones(3))[1], first)
    np.testing.assert_array_equal(first, [4.0, 4.0, 4.0])


def test_pullbacks_of_unused_results_are_skipped():
    def f(x):
        boom(x)  # computed, never used
        unused = boom(x) * 2.0  # noqa: F841
        return x * 3.0

    _, back = pullback_full(f, np.ones(2))
    np.testing.assert_array_equal(back(np.ones(2))[1], [3.0, 3.0])


def test_zero_cotangents_stop_the_sweep_upstream():
    # `detach` returns ZeroTangent for its input, so nothing flows into `boom`'s output
    _, back = pullback_full(lambda x: detach(boom(x)) * x, 3.0)
    assert back(1.0)[1] == 6.0


def test_operations_with_several_outputs():
    def f(x):
        half, square = halves(x)
        return half * 10.0 + square

    rules.RECEIVED.clear()
    y, back = pullback_full(f, 3.0)
    assert y == 15.0 + 9.0
    assert back(1.0)[1] == 5.0 + 6.0
    (dy,) = rules.RECEIVED
    assert dy == cr.Tangent[tuple](10.0, 1.0)

    # an output that is not used gets a zero cotangent
    rules.RECEIVED.clear()
    _, back = pullback_full(lambda x: halves(x)[1], 3.0)
    assert back(1.0)[1] == 6.0
    assert rules.RECEIVED[0] == cr.Tangent[tuple](cr.ZeroTangent(), 1.0)


def test_arguments_inside_lists_are_traced_by_path():
    def join(parts):
        return np.concatenate(parts)

    @cr.rrule.register(join)
    def rrule_join(parts):
        sizes = [len(p) for p in parts]

        def join_pullback(dy):
            out, start = [], 0
            for n in sizes:
                out.append(dy[start : start + n])
                start += n
            return cr.NoTangent(), tuple(out)

        return join(parts), join_pullback

    def f(a, b):
        return apply(join, ([a, np.ones(1), b * 2.0],), {}) * np.arange(1.0, 6.0)

    _, back = pullback_full(f, np.ones(2), np.ones(2))
    _, da, db = back(np.ones(5))
    np.testing.assert_array_equal(da, [1.0, 2.0])
    np.testing.assert_array_equal(db, [8.0, 10.0])


def test_last_call_releases_each_pullback_after_it_runs():
    def f(x):
        for _ in range(4):
            x = hold(x)
        return x

    rules.ALIVE.clear()
    rules.ALIVE_WHEN_RUN.clear()
    _, back = pullback_full(f, 1.0)
    assert back(1.0)[1] == 1.0
    assert rules.ALIVE_WHEN_RUN == [4, 4, 4, 4]  # a repeatable call keeps the tape
    rules.ALIVE_WHEN_RUN.clear()
    assert back.last_call(1.0)[1] == 1.0
    assert rules.ALIVE_WHEN_RUN == [4, 3, 2, 1]  # each pullback ran after the later ones were freed
    with pytest.raises(cr.ChainRulesError, match="released"):
        back(1.0)


def test_gradient_frees_the_tape_as_it_sweeps():
    def f(x):
        for _ in range(3):
            x = hold(x)
        return x

    rules.ALIVE.clear()
    rules.ALIVE_WHEN_RUN.clear()
    assert cr.gradient(f, 2.0, engine="tape") == (1.0,)
    assert rules.ALIVE_WHEN_RUN == [3, 2, 1]


def test_rules_reach_the_engine_through_rrule_via_ad():
    def f(x, k):
        return twice(lambda t: t * t * k, x)

    # g(t) = k t^2; g(g(x)) = k (k x^2)^2 = k^3 x^4
    y, back = pullback_full(f, 2.0, 3.0)
    assert y == 27.0 * 16.0
    assert back(1.0)[1] == pytest.approx(27.0 * 4 * 8.0)


def test_errors_in_pullbacks_name_the_operation():
    bad = np.frompyfunc(lambda x: x, 1, 1)

    @cr.rrule.register(bad)
    def rrule_bad(x):
        def bad_pullback(dy):
            raise ValueError("inside the pullback")

        return x * 1.0, bad_pullback

    _, back = pullback_full(lambda x: bad(x) * 2.0, 1.0)
    with pytest.raises(ValueError, match="inside the pullback") as info:
        back(1.0)
    assert any("while pulling back through" in note for note in info.value.__notes__)


def test_the_garbage_collector_is_paused_only_while_recording_and_sweeping():
    import gc

    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return x * 2.0

    def broken(x):
        raise RuntimeError("inside f")

    assert gc.isenabled()
    _, back = pullback_full(f, 1.0)
    assert seen == [False] and gc.isenabled()
    back(1.0)
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="inside f"):
        pullback_full(broken, 1.0)
    assert gc.isenabled()
    gc.disable()
    try:
        pullback_full(f, 1.0)[1](1.0)
        assert not gc.isenabled()  # a caller's own setting is left as it was
    finally:
        gc.enable()
