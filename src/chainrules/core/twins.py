"""Function twins: callables that compute the same thing, so that one's rule can serve the other on an engine's values.

Python's ``math`` functions convert their argument with ``float()``, which a dual refuses (it
would drop the derivative). The reverse engines, when they run on duals to build a Hessian
(forward over reverse), call ``rrule(math.sin, x)`` with a dual ``x``; the rule for
``math.sin`` would then call ``math.sin(x)`` and fail. This module maps each such function to
its NumPy twin, whose rule works on duals, and registers that as the rule for dual arguments
(``rrule.register(math.sin, Dual)``). It is a table of *functions*, not of derivatives: the
derivative is always the twin's own rule.

The same table lets the forward engine fall back from an ``operator`` function to its NumPy
ufunc (and back) when only one of them has a rule, and from an array method or attribute to
the NumPy function it stands for (``x.sum(...)`` -> ``np.sum(x, ...)``). Each engine registers
the bridges for its own stand-ins (``register_bridges``, ``register_structural_bridges``): a
dual or a tape's tracked array that reaches another engine's code (nested differentiation)
is indexed, read and called like the array inside it.
"""

from __future__ import annotations

import cmath
import math
import numbers
import operator

import numpy as np
import scipy.special

from .accumulation import add
from .active import ActiveValue, stood_for
from .errors import ChainRulesError, NoRuleError, callable_name, is_internal_file
from .registry import frule, rrule
from .tangents import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

#: callable -> the callable that computes the same values and works on duals
FUNCTION_TWINS: dict = {
    # math: real functions of real arguments
    math.sin: np.sin,
    math.cos: np.cos,
    math.tan: np.tan,
    math.asin: np.arcsin,
    math.acos: np.arccos,
    math.atan: np.arctan,
    math.atan2: np.arctan2,
    math.sinh: np.sinh,
    math.cosh: np.cosh,
    math.tanh: np.tanh,
    math.asinh: np.arcsinh,
    math.acosh: np.arccosh,
    math.atanh: np.arctanh,
    math.exp: np.exp,
    math.exp2: np.exp2,
    math.expm1: np.expm1,
    math.log2: np.log2,
    math.log10: np.log10,
    math.log1p: np.log1p,
    math.sqrt: np.sqrt,
    math.cbrt: np.cbrt,
    math.pow: np.power,
    math.hypot: np.hypot,
    math.fabs: np.abs,
    math.copysign: np.copysign,
    math.fmod: np.fmod,
    math.degrees: np.degrees,
    math.radians: np.radians,
    math.ldexp: np.ldexp,
    math.nextafter: np.nextafter,
    math.frexp: np.frexp,
    math.floor: np.floor,
    math.ceil: np.ceil,
    math.trunc: np.trunc,
    math.isnan: np.isnan,
    math.isinf: np.isinf,
    math.isfinite: np.isfinite,
    math.erf: scipy.special.erf,
    math.erfc: scipy.special.erfc,
    math.gamma: scipy.special.gamma,
    math.lgamma: scipy.special.gammaln,
    # builtins that convert or compute on numbers
    abs: np.abs,
    pow: np.power,
    round: np.round,
    float: np.positive,  # float(x) is x itself, as a real number
}

# cmath's tests of numbers (the computing functions, and math.log with its optional base, are in PROGRAM_TWINS)
FUNCTION_TWINS.update({cmath.isnan: np.isnan, cmath.isinf: np.isinf, cmath.isfinite: np.isfinite})

# operator functions and NumPy ufuncs, both ways
_OPERATOR_UFUNCS = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.true_divide,
    operator.floordiv: np.floor_divide,
    operator.mod: np.remainder,
    operator.pow: np.power,
    operator.neg: np.negative,
    operator.pos: np.positive,
    operator.abs: np.abs,
    operator.matmul: np.matmul,
}
FUNCTION_TWINS.update(_OPERATOR_UFUNCS)
FUNCTION_TWINS.update({u: op for op, u in _OPERATOR_UFUNCS.items() if op is not operator.abs})

# ufunc methods and their NumPy functions
FUNCTION_TWINS.update(
    {
        np.add.reduce: np.sum,
        np.multiply.reduce: np.prod,
        np.maximum.reduce: np.max,
        np.minimum.reduce: np.min,
        np.add.accumulate: np.cumsum,
        np.multiply.accumulate: np.cumprod,
    }
)


def _reshape_call(a, *shape, order="C"):
    return np.reshape, (a, shape[0] if len(shape) == 1 else shape), {"order": order}


def _copy_call(a, order="C"):
    # (the method copies in C order by default, np.copy in the input's memory order)
    return np.copy, (a,), {"order": order}


def _astype_call(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    # (np.astype takes no order, casting or subok: NumPy's check of the cast first, then the layout)
    if not np.can_cast(a.dtype, dtype, casting):
        target = np.dtype(dtype)
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to {target!r} according to the rule {casting!r}")
    return astype_in_order, (a, dtype, order, copy), {}


def astype_in_order(a, dtype, order: str, copy: bool):
    """``a.astype(dtype, order=order, copy=copy)`` by functions NumPy hands to an engine's array:
    ``np.astype`` keeps the layout, ``np.copy`` makes the one ``order`` asks for (its rules are
    ``np.astype``'s, in rules/numpy/shapes.py).

    >>> astype_in_order(np.ones((2, 3)), np.float32, "F", True).flags.f_contiguous
    True
    """
    y = np.astype(a, dtype, copy=copy)
    flags = getattr(y, "flags", None)
    if flags is None:  # a duck array: no memory layout to arrange
        return y
    if order == "A":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    if (order == "C" and not flags.c_contiguous) or (order == "F" and not flags.f_contiguous):
        y = np.copy(y, order=order)
    return y


def _compress_call(a, condition, axis=None, out=None):
    # (np.take at the condition's nonzero positions, which is what np.compress selects: the array
    # stays the first argument, whose tangent the method's is)
    return np.take, (a, np.flatnonzero(condition)), {"axis": axis, "out": out}


def _transpose_call(a, *axes):
    return np.transpose, (a, axes[0] if len(axes) == 1 else (axes or None)), {}


def _same_call(function):
    def method_call(a, *args, **kwargs):
        return function, (a, *args), kwargs

    return method_call


#: array method -> ``call(a, *args, **kwargs) -> (function, args, kwargs)``: the NumPy function
#: call that computes ``a.method(*args, **kwargs)`` (NumPy functions dispatch on duals), with
#: ``a`` its first argument: the method's tangent is that argument's (``_method_rrule``)
METHOD_TWINS: dict = {
    getattr(np.ndarray, name): _same_call(getattr(np, name))
    for name in (
        "sum",
        "mean",
        "prod",
        "max",
        "min",
        "std",
        "var",
        "cumsum",
        "cumprod",
        "dot",
        "trace",
        "clip",
        "round",
        "ravel",
        "squeeze",
        "take",
        "repeat",
        "diagonal",
        "swapaxes",
        "copy",
        "all",
        "any",
        "argmax",
        "argmin",
        "argsort",
        "nonzero",
        "conjugate",
        "conj",
        "astype",
    )
}
METHOD_TWINS[np.ndarray.flatten] = _same_call(np.ravel)
# the methods of NumPy scalars whose NumPy functions give a scalar's result (``np.copy`` would give
# a 0-d array; ``diagonal``, ``trace``, ``swapaxes``, ``nonzero`` refuse a scalar anyway)
_SCALAR_SAME_NAMES = (
    "sum", "mean", "prod", "max", "min", "std", "var", "cumsum", "cumprod", "clip", "round", "ravel", "squeeze",
    "take", "repeat", "all", "any", "argmax", "argmin", "argsort", "conjugate", "conj", "astype",
)  # fmt: skip
METHOD_TWINS[np.ndarray.reshape] = _reshape_call
METHOD_TWINS[np.ndarray.transpose] = _transpose_call
METHOD_TWINS[np.ndarray.copy] = _copy_call
METHOD_TWINS[np.ndarray.astype] = _astype_call
METHOD_TWINS[np.ndarray.compress] = _compress_call


def _item_call(a, *index):
    """``a.item(*index)`` as an entry read ``a[i, j, ...]``, which keeps the derivative (a Python number would not)."""
    shape = np.shape(a)
    if not shape:  # a NumPy scalar's only entry, whatever valid index selects it: the value itself
        return np.positive, (a,), {}
    size = math.prod(shape)
    if not index:
        if size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        position = (0,) * len(shape)
    elif len(index) == 1 and not isinstance(index[0], tuple):
        flat = operator.index(index[0])
        if not -size <= flat < size:
            raise IndexError(f"index {flat} is out of bounds for size {size}")
        position = np.unravel_index(flat % size, shape)
    else:
        position = index[0] if len(index) == 1 else index
    return operator.getitem, (a, tuple(int(i) for i in position)), {}


METHOD_TWINS[np.ndarray.item] = _item_call

#: NumPy scalar method -> ``call(a, *args, **kwargs)``, as ``METHOD_TWINS`` for arrays: a full
#: reduction returns a NumPy scalar, whose array methods (``x.sum().reshape(1)``) are those of
#: ``np.generic``; an engine's number standing for one (nested differentiation) takes them through
#: the same NumPy functions. A scalar's copy is itself, and ``item`` and ``tolist`` its value (no
#: conversion: that would drop the derivative).
SCALAR_METHOD_TWINS: dict = {
    getattr(np.generic, name): method_call
    for name, method_call in (
        *((name, _same_call(getattr(np, name))) for name in _SCALAR_SAME_NAMES),
        ("flatten", _same_call(np.ravel)),
        ("reshape", _reshape_call),
        ("transpose", _transpose_call),
        ("copy", _same_call(np.positive)),
        ("item", _item_call),
        ("tolist", _item_call),
    )
}

#: array attribute -> a function of the array (NumPy scalars have ``T``, ``real`` and ``imag`` too)
ATTRIBUTE_TWINS: dict = {"T": np.transpose, "mT": np.matrix_transpose, "real": np.real, "imag": np.imag}


def method_twin(method):
    """The ``call`` of ``METHOD_TWINS`` or ``SCALAR_METHOD_TWINS`` for an array or NumPy scalar
    method, or ``None``.

    >>> import numpy as np
    >>> method_twin(np.generic.reshape)(np.float64(2.0), 1)[0] is np.reshape
    True
    """
    try:
        found = METHOD_TWINS.get(method)
        return found if found is not None else SCALAR_METHOD_TWINS.get(method)
    except TypeError:  # an unhashable callable
        return None


def call_method(method, value, args: tuple, kwargs: dict, run, refused):
    """``value.method(*args, **kwargs)`` for an engine's ``value``: ``run(method, (value, *args),
    kwargs)`` (the engine's call through the method's rule), or, where that answers
    ``NotImplemented`` (an argument belongs to a differentiation nested inside the engine's), the
    call of the method's NumPy twin, which NumPy hands over to that argument. ``refused(method)``
    is the error raised for a method without a twin.

    >>> import numpy as np
    >>> call_method(np.ndarray.sum, np.ones(3), (), {}, lambda f, a, k: NotImplemented, None)
    np.float64(3.0)
    """
    out = run(method, (value, *args), kwargs)
    if out is NotImplemented:
        return call_twin(method, value, args, kwargs, refused)
    return out


def call_twin(method, value, args: tuple, kwargs: dict, refused):
    """``value.method(*args, **kwargs)`` as the call of the method's NumPy twin (``np.sum(value,
    ...)`` for ``value.sum(...)``); ``refused(method)`` is raised for a method without one."""
    method_call = method_twin(method)
    if method_call is None:
        raise refused(method)
    function, call_args, call_kwargs = method_call(value, *args, **kwargs)
    return function(*call_args, **call_kwargs)


def twin_of(f):
    """The twin of ``f``, or ``None``.

    >>> import math, numpy as np
    >>> twin_of(math.sin) is np.sin, twin_of(np.add) is twin_of(np.add)
    (True, True)
    """
    try:
        return FUNCTION_TWINS.get(f)
    except TypeError:  # an unhashable callable has no twin
        return None


#: the operands a NumPy twin of an operator takes; another class's object implements the operator itself
_TWIN_OPERANDS = (np.ndarray, np.generic, numbers.Number, ActiveValue, list, tuple)


def _own_operator_rule(dispatcher, f, args: tuple):
    """For an operator ``f`` with an operand of a class of its own (a user's vector class, whose
    ``__mul__`` Python calls, not NumPy's twin): the rule for the plain values, which runs that
    method; else ``None``."""
    if f not in _OPERATOR_UFUNCS or all(isinstance(a, _TWIN_OPERANDS) for a in args):
        return None
    return dispatcher.lookup(f, tuple(_plain_value(a) for a in args))


#: operators that raise on Python numbers where NumPy gives inf or nan (1.0 / 0.0)
_RAISING_OPERATORS = frozenset({operator.truediv, operator.floordiv, operator.mod, operator.pow, pow})


def _in_double(f, args: tuple) -> tuple:
    """The arguments of a ``math`` function, computed in double precision as ``math`` computes
    (``math.exp(np.float32(0.7))`` is a Python float): a float32 or float16 value times a float64 one."""
    if getattr(f, "__module__", None) != "math":
        return args
    return tuple(
        np.multiply(a, np.float64(1.0)) if getattr(stood_for(a), "dtype", np.float64) in _LOW_PRECISION else a
        for a in args
    )


_LOW_PRECISION = (np.dtype(np.float32), np.dtype(np.float16))


def _raise_as_python(f, args: tuple) -> None:
    """Raise what ``f`` raises at the plain numbers its arguments stand for: ``math.log(-1.0)``'s
    ValueError, ``math.exp(1e3)``'s OverflowError, ``1.0 / 0.0``'s ZeroDivisionError. The NumPy twin
    gives nan or inf with a warning, and a ``try``/``except`` in the code would take another branch
    on dual numbers than on numbers."""
    module = getattr(f, "__module__", None)
    if module != "math" and module != "cmath" and f not in _RAISING_OPERATORS:
        return
    plain = [stood_for(a) for a in args]
    if module is None or module not in ("math", "cmath"):  # an operator: Python's numbers only (NumPy's do not raise)
        if not all(type(p) in (float, int, complex) for p in plain):
            return
    elif not all(isinstance(p, numbers.Number) for p in plain):
        return
    f(*plain)


#: functions that give a Python int (round with no digits, math.floor/ceil/trunc): on an engine's
#: number too, so that the result indexes and counts (their derivative is zero)
_TO_INT = frozenset({round, math.floor, math.ceil, math.trunc})


def _as_int(f, args: tuple, kwargs: dict):
    """``f(*args)`` as a Python int where ``f`` gives one on numbers (see ``_TO_INT``), else None."""
    if f not in _TO_INT or kwargs or not args or (len(args) == 2 and args[1] is not None) or len(args) > 2:
        return None
    plain = stood_for(args[0])
    return f(plain) if isinstance(plain, numbers.Real) else None


_PYTHON_NUMBERS = (float, int, complex)


def _bridge_rrule(f, twin):
    def rrule_via_twin(*args, **kwargs):
        _raise_as_python(f, args)
        whole = _as_int(f, args, kwargs)
        if whole is not None:
            return whole, lambda dy: (NoTangent(), *(ZeroTangent() for _ in args))
        args = _in_double(f, args)
        own = _own_operator_rule(rrule, f, args)
        if own is not None:
            return own(*args, **kwargs)
        users_reverse = _users_rule(rrule, f, args)
        if users_reverse is not None or _users_rule(frule, f, args) is not None:
            return _by_users_rules(f, twin, users_reverse, args, kwargs)
        if f in _FOLDED and len(args) > 2 and not kwargs:
            return _folded_rrule(twin, args)
        out = rrule(twin, *args, **kwargs)
        if out is None:
            raise NoRuleError(f, args, reason=f"on dual numbers it is served by {callable_name(twin)}, which has none")
        if f in _OPERATOR_UFUNCS and not kwargs and all(type(stood_for(a)) in _PYTHON_NUMBERS for a in args):
            # the operator of the engine's values keeps Python's numbers (the twin's would give a NumPy
            # float, on which a later `/ 0.0` gives inf where Python raises ZeroDivisionError)
            return f(*args), out[1]
        return out

    rrule_via_twin.__qualname__ = f"rrule_{getattr(f, '__name__', 'f')}_on_duals"
    rrule_via_twin.on_engine_values = True
    return rrule_via_twin


def _bridge_frule(f, twin):
    def frule_via_twin(tangents, *args, **kwargs):
        _raise_as_python(f, args)
        whole = _as_int(f, args, kwargs)
        if whole is not None:
            return whole, ZeroTangent()
        own = _own_operator_rule(frule, f, args) or _users_rule(frule, f, args)
        if own is not None:
            return own(tangents, *args, **kwargs)
        if f in _FOLDED and len(args) > 2 and not kwargs:
            return _folded_frule(twin, tangents, args)
        out = frule(tangents, twin, *args, **kwargs)
        if out is None:
            raise NoRuleError(f, args, reason=f"on dual numbers it is served by {callable_name(twin)}, which has none")
        return out

    frule_via_twin.__qualname__ = f"frule_{getattr(f, '__name__', 'f')}_on_duals"
    frule_via_twin.on_engine_values = True  # (forward mode prefers it to the rule for plain numbers)
    return frule_via_twin


def _users_rule(dispatcher, f, args: tuple):
    """The rule a user registered for ``f`` at the plain values ``args`` stand for, in place of
    chainrules' own (``rrule.register(math.exp)`` again), or ``None``: the user's rule, not the
    twin's, is then ``f``'s derivative on an engine's values too. Cached per registry version."""
    key = (dispatcher, f, dispatcher.version, *(type(stood_for(a)) for a in args))
    try:
        return _USERS_RULES[key]
    except KeyError:
        pass
    rule = dispatcher.lookup(f, tuple(stood_for(a) for a in args))
    found = rule if rule is not None and _written_by_user(rule) else None
    if len(_USERS_RULES) >= 1024:
        _USERS_RULES.clear()
    _USERS_RULES[key] = found
    return found


_USERS_RULES: dict = {}


def _written_by_user(rule) -> bool:
    """Whether ``rule``'s code (for a rule ``scalar_rule`` made, its partials') is not chainrules' own."""
    for part in getattr(rule, "partials", None) or (rule,):
        code = getattr(part, "__code__", None) or getattr(type(part).__call__, "__code__", None)
        if code is not None and not is_internal_file(code.co_filename):
            return True
    return False


def _by_users_rules(f, twin, users_reverse, args: tuple, kwargs: dict):
    """``(y, back)`` for a function with a twin whose rule for plain values a user registered,
    called on an engine's values: ``y`` from that engine running ``f``'s forward rule (the
    user's, where they registered one: forward mode through the source engine), ``back`` from
    the user's reverse rule run on those values (a Hessian), else the twin's. The user's reverse
    rule runs only when the pullback is asked for, so a first-order forward pass never calls it."""
    owner = next(a for a in (*args, *kwargs.values()) if isinstance(a, ActiveValue))
    y = owner.call_by_rule(f, args, kwargs)
    if y is NotImplemented:
        y = twin(*args, **kwargs)
    if users_reverse is None:
        return y, rrule(twin, *args, **kwargs)[1]

    def users_pullback(dy):
        return users_reverse(*args, **kwargs)[1](dy)

    return y, users_pullback


#: functions of any number of arguments whose twin takes two: ``f(a, b, c)`` is ``twin(twin(a, b), c)``
#: (math.hypot(x, y, z), the norm of a 3-vector)
_FOLDED = frozenset({math.hypot})


def _folded_rrule(twin, args: tuple):
    """The rule of ``twin`` folded over ``args`` (see ``_FOLDED``): its pullback goes back
    through each step."""
    y, pullbacks = args[0], []
    for a in args[1:]:
        y, pullback = rrule(twin, y, a)
        pullbacks.append(pullback)

    def folded_pullback(dy):
        cotangents = []
        for pullback in reversed(pullbacks):
            _, dy, da = pullback(dy)
            cotangents.append(da)
        return (NoTangent(), dy, *reversed(cotangents))

    return y, folded_pullback


def _folded_frule(twin, tangents: tuple, args: tuple):
    """The forward rule of ``twin`` folded over ``args`` (see ``_FOLDED``)."""
    y, dy = args[0], tangents[1]
    for a, da in zip(args[1:], tangents[2:]):
        y, dy = frule((NoTangent(), dy, da), twin, y, a)
    return y, dy


_BINARY = (
    *(math.atan2, math.pow, math.hypot, math.copysign, math.fmod, math.ldexp, math.nextafter, pow),
    *_OPERATOR_UFUNCS,
)


def _is_bridged(f) -> bool:
    """math and cmath functions, number builtins and operators: their own rules compute on Python
    numbers (which a dual refuses to become) or on NumPy arrays, while the NumPy twins' rules are
    written with NumPy functions only, which take duals."""
    return getattr(f, "__module__", None) in ("math", "cmath", "builtins") or f in _OPERATOR_UFUNCS


# ----- cmath: short straight lines of NumPy calls ------------------------------------------------
#
# A cmath function computes what the NumPy ufunc of the same name computes on its argument made
# complex (cmath.sqrt(-1.0) is 1j, np.sqrt(-1.0) nan; np.add(x, 0j) makes x complex, and its rule
# gives a real x the real part of a cotangent). Such a twin is a few NumPy calls, written as a
# function of ``run`` (which makes one call) and the arguments; its rules run each call's own rule
# and chain them: forwards for the frule, backwards for the pullback.


def _complex(run, z):
    # times a complex128 one: as cmath takes it, a real x is x + 0j and a complex z keeps the sign
    # of a zero imaginary part (adding 0j would turn -0j into +0j: the other side of a branch cut),
    # in double precision (cmath's) whatever the argument's
    return run(np.multiply, z, np.complex128(1.0))


def _holomorphic(ufunc):
    def cmath_twin(run, z):
        return run(ufunc, _complex(run, z))

    cmath_twin.__qualname__ = f"complex_{ufunc.__name__}"
    return cmath_twin


def _log_twin(run, z, *base):
    log_z = run(np.log, _complex(run, z))
    return log_z if not base else run(np.true_divide, log_z, run(np.log, _complex(run, base[0])))


def _phase_twin(run, z):
    return run(np.angle, z)


def _polar_twin(run, z):
    return run(np.abs, z), run(np.angle, z)


def _rect_twin(run, r, phi):
    return run(np.multiply, r, run(np.exp, run(np.multiply, 1j, phi)))


def _real_log_twin(run, x, *base):
    log_x = run(np.log, x)
    return log_x if not base else run(np.true_divide, log_x, run(np.log, base[0]))


def _modf_twin(run, x):
    whole = run(np.trunc, x)
    return run(np.subtract, x, whole), whole


def _remainder_twin(run, x, y):
    # x - n y with n the integer nearest x / y, ties to even (IEEE 754's remainder, as math.remainder)
    return run(np.subtract, x, run(np.multiply, run(np.rint, run(np.true_divide, x, y)), y))


#: cmath function (and the math functions no NumPy function computes: log with a base, modf,
#: remainder) -> its twin, a function of ``run`` and the arguments (see above)
PROGRAM_TWINS: dict = {
    **{
        getattr(cmath, name): _holomorphic(ufunc)
        for name, ufunc in (
            ("exp", np.exp),
            ("log10", np.log10),
            ("sqrt", np.sqrt),
            ("sin", np.sin),
            ("cos", np.cos),
            ("tan", np.tan),
            ("asin", np.arcsin),
            ("acos", np.arccos),
            ("atan", np.arctan),
            ("sinh", np.sinh),
            ("cosh", np.cosh),
            ("tanh", np.tanh),
            ("asinh", np.arcsinh),
            ("acosh", np.arccosh),
            ("atanh", np.arctanh),
        )  # fmt: skip
    },
    cmath.log: _log_twin,
    math.log: _real_log_twin,
    math.modf: _modf_twin,
    math.remainder: _remainder_twin,
    cmath.phase: _phase_twin,
    cmath.polar: _polar_twin,
    cmath.rect: _rect_twin,
}


class _Ref:
    """A value of a twin's straight line: its position among the arguments and the calls' results."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _outputs(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _program_rrule(f, program):
    def rrule_via_numpy_calls(*args):
        _raise_as_python(f, args)
        values = list(args)
        calls = []  # (pullback, operands), one per call, in order

        def run(function, *operands):
            y, back = rrule(function, *[values[o.index] if type(o) is _Ref else o for o in operands])
            values.append(y)
            calls.append((back, operands))
            return _Ref(len(values) - 1)

        out = program(run, *map(_Ref, range(len(args))))
        y = tuple(values[o.index] for o in out) if isinstance(out, tuple) else values[out.index]

        def numpy_calls_pullback(dy):
            dy = unthunk(dy)
            cotangents = [ZeroTangent()] * len(values)
            parts = _outputs(dy) if not isinstance(out, tuple) else _tuple_items(dy, len(out))
            for o, d in zip(_outputs(out), parts):
                cotangents[o.index] = add(cotangents[o.index], d)
            for k in range(len(calls) - 1, -1, -1):
                d = unthunk(cotangents[len(args) + k])
                if isinstance(d, AbstractZero):
                    continue
                back, operands = calls[k]
                for o, dx in zip(operands, back(d)[1:]):
                    if type(o) is _Ref:
                        cotangents[o.index] = add(cotangents[o.index], unthunk(dx))
            return (NoTangent(), *cotangents[: len(args)])

        return y, numpy_calls_pullback

    rrule_via_numpy_calls.__qualname__ = f"rrule_{f.__name__}_via_numpy"
    return rrule_via_numpy_calls


def _program_frule(f, program):
    def frule_via_numpy_calls(tangents, *args):
        _raise_as_python(f, args)
        values, derivatives = list(args), list(tangents[1:])

        def run(function, *operands):
            primals = [values[o.index] if type(o) is _Ref else o for o in operands]
            operand_tangents = [derivatives[o.index] if type(o) is _Ref else ZeroTangent() for o in operands]
            y, dy = frule((NoTangent(), *operand_tangents), function, *primals)
            values.append(y)
            derivatives.append(dy)
            return _Ref(len(values) - 1)

        out = program(run, *map(_Ref, range(len(args))))
        if isinstance(out, tuple):
            return tuple(values[o.index] for o in out), Tangent[tuple](*(derivatives[o.index] for o in out))
        return values[out.index], derivatives[out.index]

    frule_via_numpy_calls.__qualname__ = f"frule_{f.__name__}_via_numpy"
    frule_via_numpy_calls.on_engine_values = True
    return frule_via_numpy_calls


def _tuple_items(d, n: int) -> tuple:
    if isinstance(d, AbstractZero):
        return (d,) * n
    return tuple(d.backing if isinstance(d, Tangent) else d)


def register_bridges(value_type: type, innermost) -> None:
    """Register the rules that serve calls with ``value_type`` arguments (reverse engines running on duals).

    - every bridged function with a twin gets rules typed on ``value_type`` that run the twin's rule;
    - every function with a program twin (``PROGRAM_TWINS``) rules that chain the rules of its calls;
    - and the structural bridges (``register_structural_bridges``).
    """
    for f, twin in FUNCTION_TWINS.items():
        if not _is_bridged(f):
            continue
        arity = 2 if f in _BINARY and f not in (operator.neg, operator.pos, operator.abs) else 1
        signatures = [(value_type,)] + ([(object, value_type)] if arity == 2 else [])
        for types in signatures:
            rrule.register(f, *types, functor=False)(_bridge_rrule(f, twin))
            frule.register(f, *types, functor=False)(_bridge_frule(f, twin))
    for f, program in PROGRAM_TWINS.items():
        two = f in (cmath.log, math.log, cmath.rect, math.remainder)  # (a second argument may be the dual)
        signatures = [(value_type,)] + ([(object, value_type)] if two else [])
        for types in signatures:
            rrule.register(f, *types, functor=False)(_program_rrule(f, program))
            frule.register(f, *types, functor=False)(_program_frule(f, program))
    register_structural_bridges(value_type, innermost)


def register_structural_bridges(value_type: type, innermost) -> None:
    """Register rules for indexing, attributes and array methods on an engine's stand-in ``value_type``.

    - ``operator.getitem`` and ``getattr`` on such a value run the rule registered for the type of
      the plain value inside it (``innermost(x)``, and inside other engines' values nested in it),
      applied to the value itself;
    - an array or NumPy scalar method (``np.ndarray.sum``, ``np.generic.reshape``), which wants a
      real ndarray or scalar, runs the rule of its NumPy function (``np.sum``), which dispatches on
      the value.
    """
    _UNWRAP[value_type] = innermost
    for f in (operator.getitem, getattr):
        rrule.register(f, value_type, functor=False)(_by_primal_type_rrule(f))
        frule.register(f, value_type, functor=False, batched=True)(_by_primal_type_frule(f))
    for method, method_call in (*METHOD_TWINS.items(), *SCALAR_METHOD_TWINS.items()):
        rrule.register(method, value_type, functor=False)(_method_rrule(method, method_call))
        frule.register(method, value_type, functor=False)(_method_frule(method, method_call))


def _method_rrule(method, method_call):
    def rrule_method_on_engine_value(x, *args, **kwargs):
        function, call_args, call_kwargs = method_call(x, *args, **kwargs)
        if not call_args or call_args[0] is not x:  # (x's cotangent is read from the first position)
            raise ChainRulesError(f"the NumPy twin of {callable_name(method)} must take the array first")
        out = rrule(function, *call_args, **call_kwargs)
        if out is None:
            raise NoRuleError(
                method,
                (x, *args),
                reason=f"on {type(x).__name__} values it is {callable_name(function)}, which has none",
            )
        y, back = out
        n = len(args)

        def method_on_engine_value_pullback(dy):
            d = back(dy)
            # the function's arguments may be packed differently (a shape tuple): only x has a tangent
            return (d[0], d[1]) + (d[2 : 2 + n] if len(call_args) == 1 + n else (NoTangent(),) * n)

        return y, method_on_engine_value_pullback

    rrule_method_on_engine_value.__qualname__ = f"rrule_{method.__name__}_on_engine_values"
    return rrule_method_on_engine_value


def _method_frule(method, method_call):
    def frule_method_on_engine_value(tangents, x, *args, **kwargs):
        function, call_args, call_kwargs = method_call(x, *args, **kwargs)
        n = len(args)
        packed = (
            tangents[: 2 + n]
            if len(call_args) == 1 + n
            else (tangents[0], tangents[1]) + (ZeroTangent(),) * (len(call_args) - 1)
        )
        out = frule(packed, function, *call_args, **call_kwargs)
        if out is None:
            raise NoRuleError(
                method,
                (x, *args),
                reason=f"on {type(x).__name__} values it is {callable_name(function)}, which has none",
            )
        return out

    frule_method_on_engine_value.__qualname__ = f"frule_{method.__name__}_on_engine_values"
    return frule_method_on_engine_value


#: each engine's stand-in type and how it unwraps its own layers (``register_structural_bridges``)
_UNWRAP: dict[type, object] = {}


def _plain_value(x):
    """The plain value inside nested engines' stand-ins (a dual holding a tracked array holding a
    dual: forward mode inside a tape inside forward mode), each layer unwrapped by its engine."""
    while isinstance(x, ActiveValue):
        innermost = next((u for t, u in _UNWRAP.items() if isinstance(x, t)), None)
        inner = innermost(x) if innermost is not None else x
        if inner is x:
            return x
        x = inner
    return x


def _by_primal_type_rrule(f):
    def rrule_on_engine_value(x, *rest):
        rule = rrule.lookup(f, (_plain_value(x), *rest))
        if rule is None:
            raise NoRuleError(f, (x, *rest), reason=f"none for the type of the value inside the {type(x).__name__}")
        return rule(x, *rest)

    rrule_on_engine_value.__qualname__ = f"rrule_{f.__name__}_on_engine_values"
    return rrule_on_engine_value


def _by_primal_type_frule(f):
    def frule_on_engine_value(tangents, x, *rest):
        rule = frule.lookup(f, (_plain_value(x), *rest))
        if rule is None:
            raise NoRuleError(f, (x, *rest), reason=f"none for the type of the value inside the {type(x).__name__}")
        return rule(tangents, x, *rest)

    frule_on_engine_value.__qualname__ = f"frule_{f.__name__}_on_engine_values"
    return frule_on_engine_value
