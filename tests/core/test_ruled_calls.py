"""Which Python callables with rules the engines watch for, and how a ruled call is found on the stack."""

from __future__ import annotations

import sys

import chainrules as cr
from chainrules.core.active import ActiveValue
from chainrules.core.ruled_calls import CLEAN_FRAMES, ignored_rule, watched


class Box(ActiveValue):
    """Stands for an engine's value; ``owns`` recognizes the boxes of one key."""

    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key, self.value = key, value


def owns(value, key) -> bool:
    return value.key is key


def plain(value):
    return value.value if isinstance(value, Box) else value


def _entry(code):
    entry = watched(cr.rrule).get(id(code))
    return None if entry is None else entry[1]


def test_registrations_list_every_ruled_callable_once_without_opt_outs():
    def ruled(x):
        return x

    def opted(x):
        return x

    cr.scalar_rule(ruled, lambda x: 1.0)
    cr.opt_out(opted, float)
    found = {id(key): (instances, rules) for key, instances, rules in cr.rrule.registrations()}
    assert found[id(ruled)][0] is False and len(found[id(ruled)][1]) == 1
    assert id(opted) not in found


def test_watched_code_functions_methods_callable_objects_and_subclasses():
    def function(x):
        return x

    class Model:
        def __call__(self, x):
            return x

    class Wider(Model):
        def __call__(self, x):
            return super().__call__(x)

    class Point:
        def __init__(self, x):
            self.x = x

        def norm(self):
            return self.x

    point = Point(1.0)
    for f in (function, Model, point.norm, Point):  # Point: a rule for constructing it
        cr.rrule.register(f)(lambda *a: (None, None))
    assert _entry(function.__code__) == (("function", function),)
    assert _entry(Model.__call__.__code__) == (("instance", None),)
    assert _entry(Wider.__call__.__code__) == (("instance", None),)  # calls of a subclass's instances too
    assert _entry(Point.norm.__code__) == (("method", point.norm),)
    assert _entry(Point.__init__.__code__) == (("class", Point),)  # constructing a Point, not a subclass


KEY, OTHER = object(), object()


def look():
    """What the walk finds from the caller's frame (run while that frame is live)."""
    return ignored_rule(cr.rrule, sys._getframe(1), None, owns, KEY, plain)[0]


def test_ignored_rule_finds_a_ruled_frame_holding_the_engines_values():
    frames = []

    def scale(x, *rest, k=1.0):
        frames.append(sys._getframe(0))
        return look()

    cr.scalar_rule(scale, lambda x: 1.0)

    def caller(*args, **kwargs):  # the user's code that calls the ruled function
        return scale(*args, **kwargs)

    assert caller(Box(KEY, 2.0)) == (scale, frames[-1])
    # another differentiation's values, and constants, are not this engine's business
    assert caller(Box(OTHER, 2.0)) is None
    assert caller(2.0) is None
    # values in *args, in containers and in keyword arguments count
    assert caller(1.0, [Box(KEY, 2.0)]) == (scale, frames[-1])
    assert caller(1.0, k=Box(KEY, 2.0)) == (scale, frames[-1])


def test_the_walk_remembers_clean_frames_and_stops_at_them():
    frame = sys._getframe(0)
    found, clean = ignored_rule(cr.rrule, frame, None, owns, KEY, plain)
    assert found is None and id(frame) in clean and len(clean) <= CLEAN_FRAMES
    again, same = ignored_rule(cr.rrule, frame, clean, owns, KEY, plain)
    assert again is None and same is clean


def test_a_call_from_a_rule_is_not_reported():
    def cube(x):
        return look()

    @cr.rrule.register(cube)
    def rrule_cube(x):
        return cube(x), None  # the rule computes its primal by calling cube

    assert rrule_cube(Box(KEY, 2.0))[0] is None
    assert cube(Box(KEY, 2.0))[0] is cube  # the same call from the user's code is


def test_only_rules_for_the_users_own_code_make_engines_check_every_operation():
    import scipy.linalg

    from chainrules.core.registry import RuleDispatcher
    from chainrules.core.ruled_calls import watches_user_code

    registry = RuleDispatcher("rrule", "a registry of its own")
    registry.register(scipy.linalg.expm)(lambda a: (None, None))
    assert watched(registry) and not watches_user_code(registry)  # library code: seen at its conversions

    def mine(x):
        return x

    registry.register(mine)(lambda x: (x, None))
    assert watches_user_code(registry)


def test_values_reached_through_a_callable_argument_count():
    import functools

    def solve(g, lo):  # a solver that computes with what g captured, not with its arguments
        return look()

    cr.scalar_rule(solve, lambda g, lo: (0.0, 0.0))

    class Equation:
        def __init__(self, c):
            self.c = c

        def residual(self, x):
            return x - self.c

    c = Box(KEY, 2.0)
    for g in (
        lambda x: x - c,  # a closure's cell
        lambda x, c=c: x - c,  # a default
        functools.partial(lambda x, c: x - c, c=c),  # a partial's arguments
        Equation(c).residual,  # a bound method's object
    ):
        found = solve(g, 0.0)
        assert found is not None and found[0] is solve
    constant, other = 2.0, Box(OTHER, 2.0)
    assert solve(lambda x: x - constant, 0.0) is None
    assert solve(lambda x: x - other, 0.0) is None  # another differentiation's value
