"""The sweep's in-place step for ``x[i]`` cotangents (a loop's element scatter into the one array the
sweep owns) gives what ``chainrules.accumulate`` gives, for every dtype, and never writes a borrowed
array."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.reverse.trace import pullback_full
from chainrules.reverse.trace.backward import sweep


def weighted_loop(X):
    total = 0.0
    for i in range(len(X)):
        total = total + X[i] * (i + 1.0)
    for i in (0, 2, 0):  # repeated positions
        total = total + X[i] * X[i]
    return total


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_loop_of_elements_matches_the_dense_gradient(dtype):
    X = np.array([1.0, -2.0, 3.0, 0.5], dtype=dtype)
    (g,) = cr.gradient(weighted_loop, X, engine="tape")
    expected = np.arange(1.0, 5.0)
    expected[0] += 2 * 2 * X[0]
    expected[2] += 2 * X[2]
    assert g.dtype == dtype
    np.testing.assert_allclose(g, expected, rtol=1e-6)
    np.testing.assert_allclose(g, cr.gradient(weighted_loop, X, engine="source")[0], rtol=1e-6)


def test_complex_elements_accumulate_in_place():
    def f(X):
        total = 0.0
        for i in range(len(X)):
            z = X[i]
            total = total + np.real(z * np.conj(z))
        return total

    X = np.array([1.0 + 2.0j, -0.5j, 3.0])
    (g,) = cr.gradient(f, X, engine="tape")
    np.testing.assert_allclose(g, 2 * X)


def test_repeated_sweeps_of_a_kept_tape_do_not_share_their_accumulator():
    X = np.array([1.0, 2.0, 3.0])
    y, back = pullback_full(weighted_loop, X)
    first = back(1.0)[1]
    second = back(2.0)[1]
    assert first is not second
    np.testing.assert_allclose(second, 2 * first)
    np.testing.assert_array_equal(X, [1.0, 2.0, 3.0])


def test_the_in_place_step_adds_into_an_owned_array_and_refuses_a_broken_add_into():
    def scatter(i, dy):
        def add_into(acc):
            acc[i] += dy
            return acc

        return cr.InplaceableThunk(add_into, cr.Thunk(lambda: np.eye(3)[i] * dy))

    def pullback_of(i):
        return lambda dy: (cr.NoTangent(), scatter(i, dy))

    # slot 0 is an input array whose accumulator the sweep already owns; slots 1 and 2 are x[1], x[2]
    acc = np.zeros(3)
    tape = [(pullback_of(1), 1, "x[1]", 0, -1), (pullback_of(2), 2, "x[2]", 0, -1)]
    cts, owned = {0: acc, 1: 2.0, 2: 3.0}, {0}
    sweep(tape, cts, owned)
    assert cts[0] is acc
    np.testing.assert_array_equal(acc, [0.0, 2.0, 3.0])
    assert len(tape) == 2  # kept: release=False

    def broken_pullback(dy):
        return cr.NoTangent(), cr.InplaceableThunk(lambda acc: acc.copy(), cr.Thunk(lambda: np.ones(3)))

    cts, owned = {0: np.zeros(3), 1: 1.0}, {0}
    with pytest.raises(RuntimeError, match="add_into must add into the accumulator"):
        sweep([(broken_pullback, 1, "x[1]", 0, -1)], cts, owned)


def test_a_borrowed_array_is_never_written_by_the_in_place_step():
    borrowed = np.zeros(3)

    def add_one(acc):
        acc[0] += 1.0
        return acc

    tape = [(lambda dy: (cr.NoTangent(), cr.InplaceableThunk(add_one, cr.Thunk(lambda: np.eye(3)[0]))), 1, "f", 0, -1)]
    cts, owned = {0: borrowed, 1: 1.0}, set()  # slot 0 holds an array the sweep did not allocate
    sweep(tape, cts, owned)
    assert cts[0] is not borrowed and 0 in owned
    np.testing.assert_array_equal(borrowed, 0.0)
    np.testing.assert_array_equal(cts[0], [1.0, 0.0, 0.0])


def _identity_pullback(dy):
    return cr.NoTangent(), dy


def _chain_tape(n: int) -> list:
    """Entry k maps slot k + 1 to slot k: a chain of n identities from slot n down to slot 0."""
    return [(_identity_pullback, k + 1, "identity", k, -1) for k in range(n)]


def test_a_kept_tape_is_swept_in_place_and_a_released_one_is_emptied():
    import tracemalloc

    n = 20_000
    tape = _chain_tape(n)
    cts: dict = {n: 1.5}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        sweep(tape, cts, set())
        extra = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert cts == {0: 1.5}
    assert len(tape) == n and tape[0][1] == 1  # kept, in order
    assert extra < 8 * n / 4  # no copy of the tape's list (8 bytes an entry)

    cts = {n: 2.5}
    sweep(tape, cts, set(), release=True)
    assert cts == {0: 2.5} and tape == []
