"""The check of what a pullback returns: one tangent for the function and one per argument.

The entry points check a whole pullback's result (``checked_cotangents``); inside a function
being differentiated the engines read a rule's result as they go, and where that reading fails
(a tuple of the wrong length: ``_, dx = pb(dy)``) they raise ``wrong_cotangent_count`` in place of
Python's bare ``ValueError``, naming the rule and the user's line, at no cost when it does not.
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
    if type(cotangents) is not tuple or len(cotangents) != len(args) + 1:  # (then each argument's)
        got = f"{len(cotangents)} values" if isinstance(cotangents, tuple) else f"a {type(cotangents).__name__}"
        raise wrong_cotangent_count(callable_label(f), got, len(args), where)
    i = 0
    for a in args:
        i += 1
        c = cotangents[i]
        tc = type(c)
        if tc is float:
            if type(a) is float:
                continue
        elif tc is np.ndarray and type(a) is np.ndarray and c.shape == a.shape:
            continue
        _check_cotangent(f, i, a, c, where)
    return cotangents


def _check_cotangent(f: Callable, i: int, a, c, where: str | None) -> None:
    """``checked_cotangents`` for the cotangent ``c`` of argument ``i`` (from 1), ``a``, past its fast cases."""
    ta, tc = type(a), type(c)
    if ta is np.ndarray:
        shape = a.shape
    elif ta is float or ta is int or ta is complex or isinstance(a, np.number):
        shape = ()
    else:
        return  # (a structure's, an engine's value's: their own rules check them)
    if tc is np.ndarray:
        if c.shape == shape:
            return
    elif tc is float or tc is complex:
        if not shape:
            return
    elif isinstance(c, (AbstractTangent, ActiveValue)) or (isinstance(c, np.number) and not shape):
        return
    what = f"shape {np.shape(c)}" if isinstance(c, (np.ndarray, float, complex, np.number)) else repr(c)[:40]
    at = f" (called at {where})" if where else ""
    raise ChainRulesError(
        f"the pullback of {callable_label(f)}{at} returned {what} as the cotangent of argument {i}, a "
        f"{ta.__name__}{' of shape ' + str(shape) if ta is np.ndarray else ''} (check its rule)"
    )
