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

import math
import operator

import numpy as np
import scipy.special

from .errors import NoRuleError, callable_name
from .registry import frule, rrule
from .tangents import NoTangent, ZeroTangent

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

# math.log takes an optional base; with one argument it is np.log.
FUNCTION_TWINS[math.log] = np.log

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
        np.multiply.outer: np.outer,
    }
)


def _reshape_call(a, *shape, order="C"):
    return np.reshape, (a, shape[0] if len(shape) == 1 else shape), {"order": order}


def _transpose_call(a, *axes):
    return np.transpose, (a, axes[0] if len(axes) == 1 else (axes or None)), {}


def _same_call(function):
    def method_call(a, *args, **kwargs):
        return function, (a, *args), kwargs

    return method_call


#: array method -> ``call(a, *args, **kwargs) -> (function, args, kwargs)``: the NumPy function
#: call that computes ``a.method(*args, **kwargs)`` (NumPy functions dispatch on duals)
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
METHOD_TWINS[np.ndarray.reshape] = _reshape_call
METHOD_TWINS[np.ndarray.transpose] = _transpose_call

#: array attribute -> a function of the array
ATTRIBUTE_TWINS: dict = {"T": np.transpose, "mT": np.matrix_transpose, "real": np.real, "imag": np.imag}


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


def _bridge_rrule(f, twin):
    def rrule_via_twin(*args, **kwargs):
        out = rrule(twin, *args, **kwargs)
        if out is None:
            raise NoRuleError(f, args, reason=f"on dual numbers it is served by {callable_name(twin)}, which has none")
        return out

    rrule_via_twin.__qualname__ = f"rrule_{getattr(f, '__name__', 'f')}_on_duals"
    return rrule_via_twin


def _bridge_frule(f, twin):
    def frule_via_twin(tangents, *args, **kwargs):
        out = frule(tangents, twin, *args, **kwargs)
        if out is None:
            raise NoRuleError(f, args, reason=f"on dual numbers it is served by {callable_name(twin)}, which has none")
        return out

    frule_via_twin.__qualname__ = f"frule_{getattr(f, '__name__', 'f')}_on_duals"
    return frule_via_twin


_BINARY = (math.atan2, math.pow, math.hypot, math.copysign, math.fmod, math.ldexp, pow, *_OPERATOR_UFUNCS)


def _is_bridged(f) -> bool:
    """math functions, number builtins and operators: their own rules compute on Python floats
    (which a dual refuses to become) or on NumPy arrays, while the NumPy twins' rules are written
    with NumPy functions only, which take duals."""
    return getattr(f, "__module__", None) in ("math", "builtins") or f in _OPERATOR_UFUNCS


def register_bridges(value_type: type, innermost) -> None:
    """Register the rules that serve calls with ``value_type`` arguments (reverse engines running on duals).

    - every bridged function with a twin gets rules typed on ``value_type`` that run the twin's rule;
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
    register_structural_bridges(value_type, innermost)


def register_structural_bridges(value_type: type, innermost) -> None:
    """Register rules for indexing, attributes and array methods on an engine's stand-in ``value_type``.

    - ``operator.getitem`` and ``getattr`` on such a value run the rule registered for the type of
      the plain value inside it (``innermost(x)``), applied to the value itself;
    - an array method (``np.ndarray.sum``), which wants a real ndarray, runs the rule of its NumPy
      function (``np.sum``), which dispatches on the value.
    """
    for f in (operator.getitem, getattr):
        rrule.register(f, value_type, functor=False)(_by_primal_type_rrule(f, innermost))
        frule.register(f, value_type, functor=False, batched=True)(_by_primal_type_frule(f, innermost))
    for method, method_call in METHOD_TWINS.items():
        rrule.register(method, value_type, functor=False)(_method_rrule(method, method_call))
        frule.register(method, value_type, functor=False)(_method_frule(method, method_call))


def _method_rrule(method, method_call):
    def rrule_method_on_engine_value(x, *args, **kwargs):
        function, call_args, call_kwargs = method_call(x, *args, **kwargs)
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


def _by_primal_type_rrule(f, innermost):
    def rrule_on_engine_value(x, *rest):
        rule = rrule.lookup(f, (innermost(x), *rest))
        if rule is None:
            raise NoRuleError(f, (x, *rest), reason=f"none for the type of the value inside the {type(x).__name__}")
        return rule(x, *rest)

    rrule_on_engine_value.__qualname__ = f"rrule_{f.__name__}_on_engine_values"
    return rrule_on_engine_value


def _by_primal_type_frule(f, innermost):
    def frule_on_engine_value(tangents, x, *rest):
        rule = frule.lookup(f, (innermost(x), *rest))
        if rule is None:
            raise NoRuleError(f, (x, *rest), reason=f"none for the type of the value inside the {type(x).__name__}")
        return rule(tangents, x, *rest)

    frule_on_engine_value.__qualname__ = f"frule_{f.__name__}_on_engine_values"
    return frule_on_engine_value
