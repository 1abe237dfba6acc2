"""Callables with rules that only these tests use, so the tape's mechanics are tested on their own.

The tape sees a callable when a tracked value reaches it through NumPy's ufunc protocol, so
each is a ufunc made with ``np.frompyfunc`` (its own implementation is never run: the rule
computes the result). Each rule counts what the sweep does with it.
"""

from __future__ import annotations

import weakref

import numpy as np

import chainrules as cr


def _never(*args):
    raise AssertionError("the ufunc itself must not run: its rule computes the result")


class Counts:
    def __init__(self):
        self.reset()

    def reset(self):
        self.value_thunks = 0
        self.add_into = 0
        self.pullbacks = 0


# ----- pick(x, i): x[i] with the cotangent as an InplaceableThunk (seed 004's getindex) -----

pick = np.frompyfunc(_never, 2, 1)
PICK = Counts()


@cr.rrule.register(pick)
def rrule_pick(x, i):
    n = x.shape

    def pick_pullback(dy):
        PICK.pullbacks += 1

        def add_into(acc):
            PICK.add_into += 1
            acc[i] += dy
            return acc

        def value():
            PICK.value_thunks += 1
            out = np.zeros(n)
            out[i] = dy
            return out

        return cr.NoTangent(), cr.InplaceableThunk(add_into, cr.Thunk(value)), cr.NoTangent()

    return x[i], pick_pullback


# ----- same(x): x itself, whose pullback hands back the very cotangent it received ------------

same = np.frompyfunc(_never, 1, 1)


@cr.rrule.register(same)
def rrule_same(x):
    def same_pullback(dy):
        return cr.NoTangent(), dy  # borrowed: the engine must not write into it

    return x, same_pullback


# ----- scaled(x): 3x, whose pullback returns an array it keeps (for a second call) -------------

scaled = np.frompyfunc(_never, 1, 1)
KEPT: list = []


@cr.rrule.register(scaled)
def rrule_scaled(x):
    kept = np.full(np.shape(x), 3.0)
    KEPT.append(kept)

    def scaled_pullback(dy):
        return cr.NoTangent(), kept if np.all(np.asarray(dy) == 1.0) else kept * dy

    return 3.0 * x, scaled_pullback


# ----- boom(x): a pullback that must never run -------------------------------------------------

boom = np.frompyfunc(_never, 1, 1)


@cr.rrule.register(boom)
def rrule_boom(x):
    def boom_pullback(dy):
        raise AssertionError("a pullback whose output cotangent is zero must be skipped")

    return x * 2.0, boom_pullback


# ----- view_of(x): a view of x, sharing its memory -------------------------------------------

view_of = np.frompyfunc(_never, 1, 1)


@cr.rrule.register(view_of)
def rrule_view_of(x):
    return x[:], lambda dy: (cr.NoTangent(), dy)


# ----- detach(x): x, with no derivative flowing back ----------------------------------------

detach = np.frompyfunc(_never, 1, 1)


@cr.rrule.register(detach)
def rrule_detach(x):
    def detach_pullback(dy):
        return cr.NoTangent(), cr.ZeroTangent()

    return x, detach_pullback


# ----- halves(x): two outputs (x / 2, x * x) --------------------------------------------------

halves = np.frompyfunc(_never, 1, 2)
RECEIVED: list = []


@cr.rrule.register(halves)
def rrule_halves(x):
    def halves_pullback(dy):
        RECEIVED.append(dy)
        d_half, d_square = dy
        return cr.NoTangent(), cr.unthunk(d_half) * 0.5 + cr.unthunk(d_square) * 2.0 * x

    return (x / 2.0, x * x), halves_pullback


# ----- hold(x): captures an object, so the release of captured values can be watched -------------

hold = np.frompyfunc(_never, 1, 1)
ALIVE: list = []


class Residual:
    """Stands for an array a pullback captures."""


@cr.rrule.register(hold)
def rrule_hold(x):
    residual = Residual()
    ALIVE.append(weakref.ref(residual))

    def hold_pullback(dy):
        assert residual is not None
        # every residual captured by a later entry of the tape (already run) is released by now
        ALIVE_WHEN_RUN.append(sum(r() is not None for r in ALIVE))
        return cr.NoTangent(), dy

    return x * 1.0, hold_pullback


ALIVE_WHEN_RUN: list = []


# ----- twice(g, x): g(g(x)), differentiated through the active engine -------------------------

twice = np.frompyfunc(_never, 2, 1)


@cr.rrule.register(twice)
def rrule_twice(g, x):
    y1, back1 = cr.rrule_via_ad(g, x)
    y2, back2 = cr.rrule_via_ad(g, y1)

    def twice_pullback(dy):
        dg2, dy1 = back2(dy)
        dg1, dx = back1(dy1)
        return cr.NoTangent(), cr.add(dg1, dg2), dx

    return y2, twice_pullback
