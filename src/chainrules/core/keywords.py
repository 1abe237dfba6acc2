"""Keyword arguments that carry derivatives, passed to a rule by their position.

A rule differentiates positional arguments only (as in ChainRules): its pullback returns one
cotangent per positional argument. A call such as ``np.average(x, weights=w)`` or
``np.trapezoid(y, x=t)`` with ``w`` or ``t`` being differentiated is the same call as
``np.average(x, None, w)``: the engines make it so, from the callable's signature, before calling
the rule, and refuse only what no position can hold (a keyword-only parameter, a callable without
a signature). Where a signature hides the positions behind ``*args, **kwds`` (a SciPy
distribution's methods, whose positions depend on the distribution), the rule set declares them
with ``declare_parameters``. Keyword arguments that only say how accurately a callable computes its
result (a solver's tolerances), or that move it nowhere (``np.quantile``'s weights, which select an
entry), carry no derivative: the rule set declares them with ``declare_options``, and the engines
pass them on as plain values.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Sequence

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_NO_SIGNATURE = ()
_signatures: dict = {}
#: callable -> parameters(args): its positional parameters for a call with these arguments
_declared: dict = {}
#: callable -> the names of its keyword arguments that carry no derivative (see ``declare_options``)
_options: dict = {}


def declare_parameters(f: Callable, parameters: Callable[[tuple], Sequence[inspect.Parameter]]) -> None:
    """Declare the positional parameters of ``f``, in order, where its signature does not show them:
    ``parameters(args)`` gives them for a call with positional arguments ``args``. For a class
    ``f``, they are those of calls of its instances, the instance first (as ``self``).

    >>> import inspect
    >>> def scaled(x, *args, **kwds):
    ...     return x * kwds.get("scale", args[0] if args else 1.0)
    >>> P = inspect.Parameter
    >>> declare_parameters(scaled, lambda args: (P("x", P.POSITIONAL_ONLY), P("scale", P.POSITIONAL_ONLY, default=1.0)))
    >>> as_positional(scaled, (2.0,), {"scale": 3.0}, ["scale"])
    ((2.0, 3.0), {}, {'scale': 1})
    """
    _declared[f] = parameters


def declare_options(f: Callable, names: Iterable[str]) -> None:
    """Declare keyword arguments of ``f`` whose derivative is zero: those that set how accurately it
    computes a result that, in exact arithmetic, does not depend on them (tolerances and step sizes;
    ``f``'s rule differentiates that exact result, a solution to within the tolerances), and those
    the result is piecewise constant in (``np.quantile``'s weights, which select one of its entries).
    A value being differentiated given there (a tolerance captured from the code around the call) is
    passed to the rule as a keyword, its plain value under every engine, instead of being refused as
    a keyword argument no position can take.

    >>> def solve(x, *, tol=1e-8):
    ...     return x
    >>> declare_options(solve, ["tol"])
    >>> is_option(solve, "tol"), is_option(solve, "x")
    (True, False)
    """
    _options[f] = _options.get(f, frozenset()) | frozenset(names)


def is_option(f: Callable, name: str) -> bool:
    """Whether ``name`` is a keyword argument of ``f`` declared with ``declare_options``."""
    try:
        return name in _options.get(f, ())
    except TypeError:  # an unhashable callable
        return False


def _positional_parameters(f: Callable, args: tuple) -> tuple:
    """The parameters of ``f`` that may be passed by position, in order (empty when unknown)."""
    try:
        declared, cached = _declared.get(f), _signatures.get(f)
    except TypeError:  # an unhashable callable
        declared = cached = None
    if declared is not None:
        return tuple(declared(args))
    for_instances = _declared.get(type(f)) if _declared else None
    if for_instances is not None:  # a call of an instance of a declared class: its parameters after self
        return tuple(for_instances((f, *args)))[1:]
    if type(f) is types.MethodType:  # a bound method: its function's parameters after self
        return _positional_parameters(f.__func__, (f.__self__, *args))[1:]
    if cached is not None:
        return cached
    try:
        parameters = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # a built-in without a signature, a ufunc
        found = _NO_SIGNATURE
    else:
        found = []
        for p in parameters:
            if p.kind not in _POSITIONAL:
                break
            found.append(p)
        found = tuple(found)
    try:
        _signatures[f] = found
    except TypeError:
        pass
    return found


def positional_name(f: Callable, args: tuple, i: int) -> str | None:
    """The name of the parameter of ``f`` that the ``i``-th of ``args`` is given to (``None`` where
    the signature does not say).

    >>> import numpy as np
    >>> positional_name(np.average, (1.0, None, 2.0), 2)
    'weights'
    """
    parameters = _positional_parameters(f, args)
    return parameters[i].name if i < len(parameters) else None


def as_positional(f: Callable, args: tuple, kwargs: dict, names: Iterable[str]):
    """``(args, kwargs, positions)``: the call ``f(*args, **kwargs)`` with the keyword arguments
    ``names`` passed by position, each parameter between given its keyword argument or its
    default, and the position each of ``names`` now has; None when ``f``'s signature does not
    allow it.

    >>> import numpy as np
    >>> args, kwargs, positions = as_positional(np.average, (1.0,), {"weights": 2.0, "keepdims": False}, ["weights"])
    >>> args, kwargs, positions
    ((1.0, None, 2.0), {'keepdims': False}, {'weights': 2})
    >>> as_positional(np.add, (1.0,), {"out": None}, ["out"]) is None
    True
    """
    parameters = _positional_parameters(f, args)
    index = {p.name: i for i, p in enumerate(parameters)}
    names = list(names)
    if not names or any(n not in index or index[n] < len(args) for n in names):
        return None
    new_args = list(args)
    rest = dict(kwargs)
    for p in parameters[len(args) : max(index[n] for n in names) + 1]:
        if p.name in rest:
            new_args.append(rest.pop(p.name))
        elif p.default is not inspect.Parameter.empty:
            new_args.append(p.default)
        else:
            return None
    return tuple(new_args), rest, {n: index[n] for n in names}
