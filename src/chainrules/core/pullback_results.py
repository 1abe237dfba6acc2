"""The check of what a pullback returns: one tangent for the function and one per argument.

The entry points check a whole pullback's result (``checked_cotangents``); inside a function
being differentiated, where the engines read a rule's result as they go (``_, dx = pb(dy)``), the
pullback of a rule they call is checked as it returns (``checked_pullback``), so that a mistake is
named with the rule and the user's line of its call, not as Python's bare ``ValueError`` or as the
enclosing function's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .active import ActiveValue
from .errors import ChainRulesError
from .tangents import AbstractTangent


def callable_label(f) -> str:
    """How errors name ``f``: its qualified name, or its class's for a callable object.

    >>> callable_label(len)
    'len'
    """
    return getattr(f, "__qualname__", type(f).__name__)


def wrong_cotangent_count(label: str, got: str, n_args: int, where: str | None = None) -> ChainRulesError:
    """The error for a pullback of ``label`` (a rule's) that returned ``got`` (``"2 values"``) for
    ``n_args`` arguments, raised at the user's ``where`` (``file:line``) where known.

    >>> str(wrong_cotangent_count("double", "3 values", 1)).split(":")[0]
    'the pullback of double returned 3 values for 1 argument(s)'
    """
    at = f" (called at {where})" if where else ""
    return ChainRulesError(
        f"the pullback of {label}{at} returned {got} for {n_args} argument(s): a pullback returns "
        f"a tuple of {n_args + 1}, the tangent of the function itself first (check its rule)"
    )


def checked_cotangents(f: Callable, cotangents, args: tuple, where: str | None = None):
    """A full pullback's result as ``f``'s rule (or its engine) must give it: a tuple of one tangent
    for ``f`` and one per argument, an array argument's of its shape; else a ChainRulesError naming
    ``f`` (and the user's ``where``), where the mistake (a rule's) would have reached the user as a
    gradient.

    >>> from chainrules import NoTangent
    >>> checked_cotangents(len, (NoTangent(), 1.0), (2.0,))
    (NoTangent(), 1.0)
    """
    expected = expected_cotangents(args)
    if not _fit(cotangents, expected):
        raise _misfit(f, cotangents, expected, where)
    return cotangents


def checked_pullback(
    f: Callable, back: Callable, args: tuple, locate: Callable[[], str | None], batched: bool = False
) -> Callable:
    """``back``, the pullback of ``f``'s rule called on ``args`` inside a function being
    differentiated, whose result is checked as ``checked_cotangents`` checks an entry point's: the
    engine reads it as it goes (``_, dx = back(dy)``), where a mistake would surface as Python's
    bare ``ValueError`` or as a cotangent of the wrong shape blamed on the function around the call.
    ``locate()`` gives the user's ``file:line`` of the call, asked for only when the check fails.
    Only the arguments' shapes are kept, not the arguments; for a ``batched`` rule, whose pullback
    may be given a batch of cotangents (a leading batch axis on each), only their number is checked.

    >>> from chainrules import NoTangent
    >>> back = checked_pullback(len, lambda dy: (NoTangent(),), (2.0,), lambda: "model.py:3")
    >>> back(1.0)
    Traceback (most recent call last):
    chainrules.core.errors.ChainRulesError: the pullback of len (called at model.py:3) returned 1 values for ...
    """
    expected = (None,) * len(args) if batched else expected_cotangents(args)

    def checked_rule_pullback(dy):
        cotangents = back(dy)
        if not _fit(cotangents, expected):
            raise _misfit(f, cotangents, expected, locate())
        return cotangents

    return checked_rule_pullback


def checked_rule(
    f: Callable, rule: Callable, locate: Callable[[], str | None], located_when_called: bool = False
) -> Callable:
    """``rule``, ``f``'s rule, with the pullbacks it returns checked (``checked_pullback``), for an
    engine that calls a user's rule directly; it keeps the rule's name and ``batched`` flag.
    ``locate()`` is asked for the user's line of the call when a check fails or, with
    ``located_when_called``, when the rule is called: for an engine whose reverse pass runs once
    the user's frames are gone (the tape's).

    >>> from chainrules import NoTangent
    >>> def rrule_double(x):
    ...     return 2 * x, lambda dy: (NoTangent(), 2 * dy, dy)
    >>> checked = checked_rule(len, rrule_double, lambda: None)
    >>> checked.__name__, checked(1.0)[0]
    ('rrule_double', 2.0)
    """
    batched = getattr(rule, "batched", False)

    def checked_users_rule(*args, **kwargs):
        y, back = rule(*args, **kwargs)
        if located_when_called:
            where = locate()
            return y, checked_pullback(f, back, args, lambda: where, batched)
        return y, checked_pullback(f, back, args, locate, batched)

    checked_users_rule.batched = batched
    checked_users_rule.__name__ = getattr(rule, "__name__", "rule")
    checked_users_rule.__qualname__ = getattr(rule, "__qualname__", checked_users_rule.__name__)
    return checked_users_rule


def expected_cotangents(args: tuple) -> tuple:
    """What the check of a pullback's result needs of each argument: an array's shape, a number's
    type, ``None`` for anything else (a structure, an engine's value: their own rules check them).

    >>> import numpy as np
    >>> expected_cotangents((np.ones(2), 1.0, [1.0]))
    ((2,), <class 'float'>, None)
    """
    expected = []
    for a in args:  # (per call of a user's rule: no function call per argument)
        ta = type(a)
        if ta is np.ndarray:
            expected.append(a.shape)
        elif ta is float or ta is int or ta is complex or isinstance(a, np.number):
            expected.append(ta)
        else:
            expected.append(None)
    return tuple(expected)


def _fit(cotangents, expected: tuple) -> bool:
    """Whether ``cotangents`` is a tuple of one tangent for the function and one per argument, each
    fitting what ``expected`` says of its argument (see ``expected_cotangents``)."""
    if type(cotangents) is not tuple or len(cotangents) != len(expected) + 1:
        return False
    i = 0
    for e in expected:
        i += 1
        c = cotangents[i]
        tc = type(c)
        if tc is float:
            if e is float:
                continue
        elif tc is np.ndarray and c.shape == e:
            continue
        if not _fits(c, e):
            return False
    return True


def _fits(c, e) -> bool:
    """Whether ``c`` may be the cotangent of an argument of which ``expected_cotangents`` says ``e``."""
    if e is None:
        return True
    shape = e if type(e) is tuple else ()
    tc = type(c)
    if tc is np.ndarray:
        return c.shape == shape
    if tc is float or tc is complex:
        return not shape
    return isinstance(c, (AbstractTangent, ActiveValue)) or (isinstance(c, np.number) and not shape)


def _misfit(f: Callable, cotangents, expected: tuple, where: str | None) -> ChainRulesError:
    """The error for ``cotangents``, which ``_fit`` refused."""
    if type(cotangents) is not tuple or len(cotangents) != len(expected) + 1:  # (then each argument's)
        got = f"{len(cotangents)} values" if isinstance(cotangents, tuple) else f"a {type(cotangents).__name__}"
        return wrong_cotangent_count(callable_label(f), got, len(expected), where)
    i, c, e = next((i, c, e) for i, (c, e) in enumerate(zip(cotangents[1:], expected), 1) if not _fits(c, e))
    what = f"shape {np.shape(c)}" if isinstance(c, (np.ndarray, float, complex, np.number)) else repr(c)[:40]
    argument = f"ndarray of shape {e}" if type(e) is tuple else e.__name__
    at = f" (called at {where})" if where else ""
    return ChainRulesError(
        f"the pullback of {callable_label(f)}{at} returned {what} as the cotangent of argument {i}, a "
        f"{argument} (check its rule)"
    )
