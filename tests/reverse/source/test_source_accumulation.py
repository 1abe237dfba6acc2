"""Accumulation under the ownership rule: the engine never writes into user inputs, the seed the
user passes in, or arrays that rules return or keep; it copies a borrowed cotangent once."""

import numpy as np

import chainrules as cr
from chainrules.reverse.source import pullback_full


def passthrough(x):
    return x * 1.0


captured = []


@cr.rrule.register(passthrough)
def rrule_passthrough(x):
    def passthrough_pullback(dy):
        captured.append(dy)
        return cr.NoTangent(), dy  # hands back the very array it was given

    return x * 1.0, passthrough_pullback


def read_only(a):
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def used_three_times(x):
    return passthrough(x) + passthrough(x) * 2.0 + x


def test_user_inputs_and_seed_are_never_written():
    x = read_only([1.0, 2.0, 3.0])
    seed = read_only([1.0, 1.0, 1.0])
    y, back = pullback_full(used_three_times, x)
    (_, dx) = back(seed)
    np.testing.assert_array_equal(dx, [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(seed, [1.0, 1.0, 1.0])
    assert dx is not seed and not any(dx is c for c in captured)


def test_arrays_a_rule_returns_are_not_written():
    captured.clear()
    x = np.array([1.0, 2.0])
    _, back = pullback_full(used_three_times, x)
    seed = np.ones(2)
    (_, dx) = back(seed)
    for c in captured:  # each pullback got its own cotangent and none was changed afterwards
        assert c.flags.writeable is True
    np.testing.assert_array_equal(seed, [1.0, 1.0])
    np.testing.assert_array_equal(dx, [4.0, 4.0])


def sums_items(x):
    return x[0] + x[1] + x[2] + x[0]


def test_inplaceable_cotangents_accumulate_into_one_owned_array():
    x = read_only([1.0, 2.0, 3.0])
    _, back = pullback_full(sums_items, x)
    dx = back(1.0)[1]
    np.testing.assert_array_equal(dx, [2.0, 1.0, 1.0])
    assert dx.flags.writeable and dx.flags.owndata


def test_a_pullback_called_twice_gives_the_same_answer():
    x = np.array([1.0, 2.0, 3.0])
    _, back = pullback_full(used_three_times, x)
    first = back(np.ones(3))[1].copy()
    np.testing.assert_array_equal(back(np.ones(3))[1], first)
