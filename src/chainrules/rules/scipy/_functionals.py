"""The call of a SciPy function that takes the user's function ``F(x, *args)`` and its extra
arguments ``args`` (a root finder, a minimizer, ``quad``), as its rule sees it.

The rules of such functions run them on plain values (``FunctionalCall.run``: ``F``'s outputs, the
arguments and what ``F`` closes over unwrapped from any engine's values), then differentiate ``F``,
as given, on the engine's values where the result says how (a root, an optimum, quadrature
nodes): the function's own steps are never differentiated. The pullback returns one cotangent per
positional argument given, the tuple ``args``'s where it stands (``FunctionalCall.cotangents``).

>>> import scipy.optimize as so
>>> call = FunctionalCall(so.brentq, lambda x, c: x * x - c, (0.0, 3.0), {"args": (4.0,)})
>>> call.run(), call.args, call.setting("xtol")
(2.0, (4.0,), 2e-12)
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from ...core import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk
from ...core.active import ActiveValue, rebound_names, stood_for

_NO = NoTangent()
_ZERO = ZeroTangent()

#: settings that are the user's callables, which the SciPy function calls with ``x`` and ``args``
CALLBACKS = ("fprime", "fprime2", "jac", "hess", "hessp", "Dfun")


class FunctionalCall:
    """A SciPy function's call as given: the arguments bound to its signature, the extra arguments
    ``args`` of ``F`` as a tuple, and how to run it on plain values."""

    def __init__(self, function, F, rest: tuple, keywords: dict):
        self.function = function
        self.signature = inspect.signature(function)
        self.parameters = list(self.signature.parameters)
        self.positional = 1 + len(rest)
        self.bound = dict(self.signature.bind(F, *rest, **keywords).arguments)
        for name, parameter in self.signature.parameters.items():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # (solve_ivp's ``**options``) by their names
                self.bound.update(self.bound.pop(name, {}))
        given = self.bound.get("args", ())
        given = () if given is None else given
        self.single = not isinstance(given, tuple)  # SciPy takes ``args=c`` as ``args=(c,)``
        self.args = (given,) if self.single else given
        self.F = F

    def run(self, **settings):
        """The function on plain values, ``settings`` overriding the call's: ``F``'s outputs, the
        user's other callables' and the arguments unwrapped from any engine's values, and ``F`` and
        the callables computing on plain values throughout (``plain``: what they close over too),
        as the solver's iterations are not differentiated."""
        call = {name: plain(value) for name, value in self.bound.items()}
        call[self.parameters[0]] = functools.partial(_plain_output, call[self.parameters[0]])
        for name in CALLBACKS:
            given = call.get(name)
            if callable(given):
                call[name] = functools.partial(_plain_output, given)
        call.update(settings)
        return self.function(**call)

    def setting(self, name: str, default=None):
        """The value given for the parameter (or option) ``name``, or its default."""
        parameter = self.signature.parameters.get(name)
        return self.bound.get(name, default if parameter is None else parameter.default)

    def cotangents(self, dF, dargs: tuple, **by_name) -> tuple:
        """The pullback's tuple: one cotangent per positional argument given, ``args``'s where it
        stands and ``by_name``'s (``a=``: an end of an integral); a number among the others (a
        bracket end, a start, a tolerance) gets a zero, a setting (a callable, a flag, a method's
        name) ``NoTangent``."""
        if all(isinstance(d, AbstractZero) for d in dargs):
            d_args = _ZERO
        else:
            d_args = dargs[0] if self.single else Tangent[tuple](*dargs)
        by_name["args"] = d_args
        rest = [
            by_name[name] if name in by_name else _ZERO if is_number(self.bound[name]) else _NO
            for name in self.parameters[1 : self.positional]
        ]
        return (_NO, dF, *rest)


def is_number(value) -> bool:
    """A number or an array of numbers, not a flag."""
    value = stood_for(value)
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (int, float, complex, np.number)) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "iufc"
    )


def _plain_output(f, *args):
    return plain(f(*args))


def plain(value, _copies: dict | None = None):
    """``value`` with every engine's value in it unwrapped, in tuples and lists too (``args``, a
    ``t_span``, ``root(jac=True)``'s output), and in what a function (or a ``functools.partial``)
    closes over and its defaults: a copy of the function whose cells hold the plain values, so that
    the user's equation computes on plain values while a solver iterates (its closure holds an outer
    differentiation's values under a Hessian, forward mode or a tape over the source engine: those
    would carry derivatives nobody reads, and fail where the equation converts them,
    ``np.array([a * x[0], ...])``). A name the function assigns (``nonlocal``) keeps the caller's
    cell; a value holding nothing to unwrap is returned itself.

    >>> import chainrules as cr
    >>> def scaled_by(a):  # under cr.derivative, a is a dual number
    ...     f = plain(lambda x: np.array([a * x]))
    ...     return a * f(2.0)[0]
    >>> cr.derivative(scaled_by, 3.0)  # a * (a * 2) with the inner a a constant: 3 * 2
    6.0
    """
    if isinstance(value, ActiveValue):
        return stood_for(value)
    if type(value) in (tuple, list):
        items = [plain(v, _copies) for v in value]
        return value if all(p is v for p, v in zip(items, value)) else type(value)(items)
    if isinstance(value, functools.partial):
        func, args = plain(value.func, _copies), plain(value.args, _copies)
        keywords = {k: plain(v, _copies) for k, v in value.keywords.items()}
        if func is value.func and args is value.args and all(keywords[k] is v for k, v in value.keywords.items()):
            return value
        return functools.partial(func, *args, **keywords)
    if type(value) is types.FunctionType:
        return _plain_function(value, {} if _copies is None else _copies)
    return value


def _plain_function(f: types.FunctionType, copies: dict):
    """``f`` with its closure's and defaults' engine values unwrapped (see ``plain``), ``f`` itself
    where they hold none. ``copies``: the functions met so far (a function that calls itself
    through its closure keeps calling itself as it is)."""
    if id(f) in copies:
        return copies[id(f)]
    copies[id(f)] = f
    rebound = rebound_names(f.__code__)
    cells = list(f.__closure__ or ())
    for i, (name, cell) in enumerate(zip(f.__code__.co_freevars, cells)):
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet filled (a name the caller assigns after the call)
            continue
        stripped = value if name in rebound else plain(value, copies)
        if stripped is not value:
            cells[i] = types.CellType(stripped)
    defaults = plain(f.__defaults__, copies) if f.__defaults__ else f.__defaults__
    keywords = {k: plain(v, copies) for k, v in (f.__kwdefaults__ or {}).items()}
    if (
        all(new is old for new, old in zip(cells, f.__closure__ or ()))
        and defaults is f.__defaults__
        and all(keywords[k] is v for k, v in (f.__kwdefaults__ or {}).items())
    ):
        return f
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, defaults, tuple(cells) or None)
    g.__kwdefaults__, g.__dict__, g.__qualname__ = keywords or None, f.__dict__, f.__qualname__
    copies[id(f)] = g
    return g


def undifferentiated_fields(fields: dict, differentiated: tuple) -> list:
    """The fields of a result's cotangent (``item_tangents`` of an ``OptimizeResult`` or ``OdeResult``)
    outside ``differentiated`` that carry a nonzero cotangent: a rule that does not differentiate
    them refuses these (zeros, dense or not, are fine)."""
    found = []
    for name, d in fields.items():
        d = unthunk(d)
        if name in differentiated or isinstance(d, AbstractZero):
            continue
        if is_number(d) and not np.any(d):
            continue
        found.append(name)
    return found


def holds_active(value) -> bool:
    """Whether ``value`` is an engine's value, or a tuple, list or dict holding one."""
    if isinstance(value, dict):
        return any(holds_active(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(holds_active(v) for v in value)
    return isinstance(value, ActiveValue)

