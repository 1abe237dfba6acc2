"""The dispatcher: a rule if there is one, else the function's own code, transformed.

``pullback(f, *args, **kwargs)`` is what generated code calls for every differentiable call,
and ``pullback_full`` is the engine's entry point (it also makes the engine the one that
``chainrules.rrule_via_ad`` uses). For ``f`` without a rule:

- a Python function is transformed (``cache``); a bound method or a callable object is its
  class's function called with the object first, and the object's cotangent is the tangent of
  ``f`` (so a model gets ``Tangent[Model]``);
- ``getattr``/``operator.getitem`` on the language's structures (fields of dataclasses,
  namedtuples and plain objects, items of tuples, lists and dicts), and constructing a
  dataclass or namedtuple, have structural pullbacks here;
- anything else (built-ins, C extensions, library code, functions whose source is missing)
  raises ``NoRuleError`` naming the callable, the argument types and the user's line.

Batches of cotangents: ``pullback_full``'s ``back`` is ``batched`` (it takes a leading batch
axis on ``dy`` and returns cotangents with the batch axis in front) when the output is an array
and nothing that ran declined a batch (``chainrules.core.decline_batch``): every rule called is
registered ``batched=True`` and every generated function's adjoint is made of such rules'
pullbacks only (``Specialization.batched``); what the dispatcher handles itself (structures,
calls with ``*``/``**``) declines.
"""

from __future__ import annotations

import dataclasses
import gc
import operator
import types

import numpy as np

from ...core import views
from ...core.accumulation import accumulate
from ...core.active import ActiveValue, active_engine, current_engine
from ...core.errors import ChainRulesError, NoRuleError, UnsupportedSyntaxError, note_user_line, user_location
from ...core.keywords import as_positional, is_option
from ...core.pullback_results import checked_pullback
from ...core.registry import _LEDGER, decline_batch, frule, is_users_rule, rrule
from ...core.ruled_calls import engine_values_in, given_to, holds_engine_values
from ...core.structures import leaves
from ...core.tangents import AbstractZero, Tangent, unthunk
from ...rules.operators import numbers_only, reads_sequences_as_arrays
from . import cache, codegen, effects, runtime
from .parse import NoSourceError, is_library_code
from .runtime import NO, ZERO, split, structural_tangent

_FUNCTION = types.FunctionType
_NONE = frozenset()
#: the type of a callable (a class, for a constructor) -> whether it runs Python code (see `_has_python_body`)
_PYTHON_BODIES: dict[type, bool] = {_FUNCTION: True, type(np.linalg.norm): True}
_MODULE = types.ModuleType
_TRANSFORMED = cache._transformed


def _location() -> str | None:
    return codegen.calling_location(2) or user_location()


def _no_rule(f, args, reason: str = ""):
    if not reason:
        entry = effects.known_write(f)
        if entry is not None:  # a call that writes in place: say what to write instead
            reason = f"`{entry.name}` changes a container in place, which the reverse pass would not follow; "
            reason += entry.instead
    return NoRuleError(f, args, location=_location(), reason=reason)


# ----- the dispatcher -----------------------------------------------------------------------


def pullback(f, *args, **kwargs):
    """``(y, back)`` for ``f(*args, **kwargs)``; ``back(dy) -> (df, dx1, ..., dxn)``."""
    if not kwargs and type(f) is _FUNCTION:
        # the fast path (see `_remember`); the generated function checks its argument types
        entry = _TRANSFORMED.get(id(f.__code__))
        if entry is not None:
            hit = entry.fast.get(len(args))
            if hit is not None and hit[0] is f and hit[1] == rrule.version and f.__defaults__ is hit[2]:
                if hit[4] is None or hit[4].valid(f):
                    if not hit[6]:
                        _LEDGER.declines += 1  # decline_batch(), inlined on this hot path
                    return hit[3](*args)
    rule = rrule.lookup(f, args)
    if rule is not None:
        if not getattr(rule, "batched", False):
            _LEDGER.declines += 1  # decline_batch(), inlined on this hot path
        if kwargs and "out" in kwargs:
            _refuse_output(f, args, kwargs)
        return _by_rule(f, rule, args, kwargs)
    y, back = _without_rule(f, args, kwargs)
    if kwargs:
        return y, _positional_only(back)
    return y, back


def pullback_full(f, *args, **kwargs):
    """The source engine: ``(y, back)`` with ``back(dy) -> (df, dx1, ..., dxn)``.

    While it runs, it is the engine ``chainrules.rrule_via_ad`` calls back into.

    >>> def f(a, b):
    ...     return a / (a + b * b)
    >>> y, back = pullback_full(f, 2.0, 3.0)
    >>> round(y, 4), [round(d, 4) for d in back(1.0)[1:]]
    (0.1818, [0.0744, -0.0992])

    The cotangent of a tuple, list, dict or dataclass passed in has every item, in its order
    (``runtime.input_cotangent``), as the tape gives it.
    """
    try:
        pulled = None
        if not kwargs and type(f) is _FUNCTION:
            # the fast path of `pullback`, repeated here to save a call: a generated function that
            # calls nothing through the dispatcher needs no engine installed
            entry = _TRANSFORMED.get(id(f.__code__))
            if entry is not None:
                hit = entry.fast.get(len(args))
                if hit is not None and hit[0] is f and hit[1] == rrule.version and f.__defaults__ is hit[2]:
                    if hit[4] is None or hit[4].valid(f):
                        if not hit[5]:
                            pulled = hit[3](*args)
                            if hit[6] and isinstance(pulled[0], np.ndarray):  # made of batched rules' pullbacks only
                                _mark_batched(pulled[1])
                        elif current_engine() is not pullback_full:
                            pulled = _run_installed(hit[3], args, {}, hit[6])
        if pulled is None:
            pulled = _installed_call(pullback, (f, *args), kwargs)
    except Exception as error:  # the user's own exception (a KeyError in f): the line of f it came from
        if not isinstance(error, ChainRulesError):
            note_user_line(error)
        raise
    return _with_input_cotangents(pulled, args)


def pullback_with_constants(f, args: tuple, kwargs: dict, constants: frozenset):
    """``pullback_full(f, *args, **kwargs)`` where the positional arguments at the positions
    ``constants`` carry no derivative (``argnums`` left them out): they are constants to the
    analysis, so code that has no rule may read them (a library's filter of data), and their
    cotangents are zeros.

    >>> def f(w, data):
    ...     return w * float(len(data))  # (a differentiated data would be refused: float() of an array)
    >>> y, back = pullback_with_constants(f, (2.0, [1.0, 2.0]), {}, frozenset({1}))
    >>> y, back(1.0)[1]
    (4.0, 2.0)
    """
    if type(f) is not _FUNCTION or rrule.lookup(f, args) is not None or frule.lookup(f, args) is not None:
        return pullback_full(f, *args, **kwargs)  # (a rule, or a callable object: every argument is differentiated)
    try:
        pulled = _installed_call(_transformed_call, (f, args, kwargs, False, frozenset(constants)), {})
    except Exception as error:
        if not isinstance(error, ChainRulesError):
            note_user_line(error)
        raise
    if kwargs:  # (the keywords' cotangents come last: as `pullback_full`'s, one per positional argument)
        pulled = pulled[0], _positional_only(pulled[1])
    return _with_input_cotangents(pulled, args)


def _with_input_cotangents(pulled: tuple, args: tuple) -> tuple:
    """``(y, back)`` with the cotangent of each structure in ``args`` laid out as the structure."""
    for a in args:
        if type(a) is not float and type(a) is not np.ndarray and runtime.is_input_structure(a):
            return pulled[0], _laid_out_as_inputs(pulled[1], args)
    return pulled


def _laid_out_as_inputs(back, args: tuple):
    """``back`` with the cotangent of each structure in ``args`` laid out as the structure
    (``runtime.input_cotangent``); batched where ``back`` is (zeros fit any batch)."""

    def input_pullback(dy):
        d = back(dy)
        laid_out = (
            runtime.input_cotangent(a, da) if runtime.is_input_structure(a) else da for a, da in zip(args, d[1:])
        )
        return (d[0], *laid_out, *d[1 + len(args) :])

    input_pullback.batched = getattr(back, "batched", False)
    return input_pullback


def _installed_call(primal, args: tuple, kwargs: dict):
    """``primal(*args, **kwargs)`` with this engine installed (``_run_installed``), or as it is while
    this engine runs."""
    if current_engine() is pullback_full:
        return primal(*args, **kwargs)
    return _run_installed(primal, args, kwargs, True)


def _run_installed(primal, args: tuple, kwargs: dict, batched: bool):
    """``primal(*args, **kwargs)`` with the engine installed and the collector paused, its pullback
    marked batched when ``batched`` (its own adjoint is made of batched pullbacks) and nothing
    declined a batch while it ran. ``primal`` is the dispatcher, or a generated function that
    calls through it (then without the dispatcher's lookup of ``f`` itself)."""
    # The cyclic garbage collector is paused while the primal runs: a loop keeps what each
    # iteration saved alive, and each full collection would walk all of it (quadratic time);
    # nothing the primal makes is garbage before it returns.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with active_engine(pullback_full):
            declines = _LEDGER.declines
            y, back = primal(*args, **kwargs)
            if batched and _LEDGER.declines == declines and isinstance(y, np.ndarray):
                _mark_batched(back)
            return y, back
    finally:
        if collecting:
            gc.enable()


def _mark_batched(back) -> None:
    """``back.batched = True``: nothing declined a batch while the primal ran."""
    try:
        back.batched = True
    except AttributeError:  # a pullback that takes no attributes (a bound method): one cotangent at a time
        pass


def _positional_only(back):
    def positional_pullback(dy):
        return back(dy)[:-1]

    return positional_pullback


def _without_rule(f, args: tuple, kwargs: dict, library_refused: str = ""):
    """``(y, back)`` for a callable without a rule; with keywords, ``back`` also returns a
    dict of their cotangents, last. A library callable is run when its arguments are discrete,
    unless ``library_refused`` says why not."""
    kind = type(f)
    if kind is _FUNCTION:
        if f is dataclasses.replace:  # library code, whose keywords carry derivatives: a structure
            decline_batch()
            return replace_fields(*args, **kwargs)
        return _source(f, args, kwargs, False)
    if _is_bound_method_of(f):
        return _bound_method_call(f, args, kwargs)
    if kind is types.MethodType and type(f.__func__) is _FUNCTION:
        return _source(f.__func__, (f.__self__, *args), kwargs, True)
    if f is getattr:
        decline_batch()  # structural cotangents: one at a time
        return _with_keywords(structural_getattr(*args), kwargs)
    if f is operator.getitem:
        decline_batch()
        return _with_keywords(structural_getitem(*args), kwargs)
    if f is super and len(args) == 2 and not kwargs:
        decline_batch()
        return super(*args), _super_pullback
    if isinstance(f, type):  # the fields' cotangents, or batches of them, are read off the object's
        return construct(f, args, kwargs)
    call = _class_attribute(kind, "__call__")
    if type(call) is _FUNCTION:
        if rrule.lookup(call, (f, *args)) is not None:  # a rule for its class's call (np.vectorize's)
            return _method_by_rule(call, f, args, kwargs)
        return _source(call, (f, *args), kwargs, True)
    if library_refused and not (all(map(_is_discrete, args)) and all(map(_is_discrete, kwargs.values()))):
        raise _no_rule(f, args, library_refused)
    # no derivative at all (what it may change holds none: `rng.normal(size=n)`): any batch of cotangents fits
    return _discrete_call(f, args, kwargs)


def _is_bound_method_of(f) -> bool:
    """Whether ``f`` is a method bound to an object (a Python method, or a method of a type written
    in C: ``x.sum`` of an array), the one that object's attribute of that name gives."""
    if type(f) is not types.MethodType and type(f) is not types.BuiltinMethodType:
        return False
    owner = f.__self__
    if owner is None or isinstance(owner, (types.ModuleType, type, np.ufunc, super)):
        return False  # a function of a module (len), a class method, a ufunc's (np.add.reduce: rules per ufunc)
    try:
        if getattr(owner, f.__name__) != f:
            return False
    except Exception:  # (an attribute that cannot be read again: not a plain method)
        return False
    return _resolve_method(owner, f.__name__)[0] in ("function", "descriptor")  # (not a field's callable)


def _bound_method_call(f, args: tuple, kwargs: dict):
    """``_without_rule`` for a bound method called as a value (``m = x.sum; m()``): as the call
    ``x.sum()`` would run, by its rule (keyword arguments that carry numbers passed by position, as
    for any call) or its Python code; the callable's cotangent is its object's."""
    obj = f.__self__
    kind, target = _resolve_method(obj, f.__name__)
    if kind == "function" and rrule.lookup(target, (obj, *args)) is None:
        return _source(target, (obj, *args), kwargs, True)
    return _method_by_rule(target, obj, args, kwargs)


def _method_by_rule(target, obj, args: tuple, kwargs: dict):
    """``target(obj, *args, **kwargs)``, the call of a method of ``obj`` (or of ``obj`` itself,
    ``target`` its class's ``__call__``), by the rule of ``target``; the callable's cotangent is
    ``obj``'s."""
    y, back = _applied(target, (obj, *args), kwargs, tuple(k for k, v in kwargs.items() if _carries_numbers(v)))

    def method_pullback(dy):
        _, d_args, d_kwargs = back(dy)
        return (*d_args, d_kwargs) if kwargs else d_args

    return y, method_pullback


# ----- calls that may write into containers ------------------------------------------------------


def _refuse_output(f, args: tuple, kwargs: dict):
    """A call that writes its result into an existing array (``out=``) is refused."""
    out = kwargs.get("out")
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise _no_rule(
            f,
            args,
            "it writes its result into an existing array (out=), which the reverse pass would not see; "
            + effects.OUTPUT_ADVICE,
        )


def _writes_reason(names: tuple) -> str:
    what = ", ".join(f"`{n}`" for n in names) if names else "its arguments"
    return (
        f"it may change {what} in place, which the reverse pass would not see: only calls with a rule and "
        "Python code that the engine differentiates (and checks) can be followed there; "
        "build a new value instead of updating one in place"
    )


def dispatch(where: tuple, f, *args, **kwargs):
    """``f(*args, **kwargs)`` for a call that may write into containers (see the ``effects``
    pass); ``where`` is ``(names, line, col)``: the user's names of those containers and the call's
    place. The call runs its rule (rules write into nothing), or its source, differentiated (its
    own analysis follows or refuses its writes); any other callable is refused."""
    rule = rrule.lookup(f, args)
    if rule is not None:
        if kwargs and "out" in kwargs:
            _refuse_output(f, args, kwargs)
        return rule(*args, **kwargs)[0]
    names, line, col = where
    entry = effects.known_write(f)
    if entry is not None:  # known to write in place (the static types did not tell the pass)
        location = _location()
        filename = location.rsplit(":", 1)[0] if location else "<unknown>"
        raise UnsupportedSyntaxError(effects.write_message(entry, names[0] if names else None), filename, line, col)
    return _without_rule(f, args, kwargs, _writes_reason(names))[0]


def dispatch_method(where: tuple, obj, name: str, *args, **kwargs):
    """``obj.name(*args, **kwargs)`` for a call that may write into containers, as ``dispatch``."""
    kind, target = _resolve_method(obj, name)
    if kind == "function":
        rule = rrule.lookup(target, (obj, *args))
        if rule is not None:
            return rule(obj, *args, **kwargs)[0]
        return _source(target, (obj, *args), kwargs, True)[0]
    if kind == "descriptor":
        return dispatch(where, target, obj, *args, **kwargs)
    if kind == "static":
        return dispatch(where, target, *args, **kwargs)
    if kind == "class":
        return dispatch(where, target, type(obj), *args, **kwargs)
    return dispatch(where, getattr(obj, name), *args, **kwargs)


def _carries_numbers(x) -> bool:
    """Whether ``x`` holds real or complex numbers (a callable, such as a ``key``, does not:
    rules that take one use it to select, as ``sorted`` does)."""
    if isinstance(x, (float, complex, np.inexact, ActiveValue)):  # (an engine's number: nested differentiation)
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    if isinstance(x, (tuple, list)):
        return any(map(_carries_numbers, x))
    if isinstance(x, dict):
        return any(map(_carries_numbers, x.values()))
    return False


_DISCRETE = (int, str, bytes, type, type(None), np.dtype, np.integer, np.bool_, slice, range)
_DISCRETE += (np.random.Generator, np.random.BitGenerator, np.random.RandomState)


def _is_discrete(x) -> bool:
    """Integers, booleans, strings, ``None``, types, dtypes and random generators (and tuples, lists
    and dicts of them): sizes, indices, options and random states, which no derivative flows through."""
    if isinstance(x, _DISCRETE):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "biu"
    if isinstance(x, (tuple, list)):
        return all(_is_discrete(v) for v in x)
    if isinstance(x, dict):
        return all(_is_discrete(v) for v in x.values())
    return False


def _discrete_call(f, args: tuple, kwargs: dict):
    """A library call without a rule whose arguments are all discrete (``np.zeros(n)``,
    ``np.arange(n)``) has no derivative; any other one raises ``NoRuleError``."""
    if not (all(map(_is_discrete, args)) and all(map(_is_discrete, kwargs.values()))):
        raise _no_rule(f, args)
    y = f(*args, **kwargs)
    no = (NO,) * (len(args) + 1)
    if kwargs:
        return y, lambda dy: (*no, {k: NO for k in kwargs})
    return y, lambda dy: no


def _with_keywords(pair, kwargs):
    if not kwargs:
        return pair
    y, back = pair
    return y, lambda dy: (*back(dy), {k: NO for k in kwargs})


def _source(fn: types.FunctionType, args: tuple, kwargs: dict, bound: bool):
    pushed = _by_forward_rule(fn, args, kwargs, bound)
    if pushed is not None:
        return pushed
    return _transformed_call(fn, args, kwargs, bound)


def _by_forward_rule(fn: types.FunctionType, args: tuple, kwargs: dict, bound: bool):
    """``(y, back)`` for a callable with a forward rule but no reverse rule called on another
    engine's values (dual numbers: a forward-mode derivative or a Hessian run through this engine):
    ``y`` is pushed through the forward rule by that engine (``ActiveValue.call_by_rule``), as
    forward mode does when the callable is the function it is given; ``back`` differentiates the
    body, which runs again (reverse mode has no rule to use). ``None`` for any other call."""
    ruled, call_args = fn, args
    if frule.lookup(fn, args) is None:
        # a callable object's rule (by object or class) is for a call of the object, never for its other
        # methods (a spline's integrate) nor a classmethod of a class whose construction has a rule (fromroots)
        called = bound and fn is _class_attribute(type(args[0]), "__call__")
        if not called or frule.lookup(args[0], args[1:]) is None:
            return None
        ruled, call_args = args[0], args[1:]
    owner = next((a for a in (*call_args, *kwargs.values()) if isinstance(a, ActiveValue)), None)
    if owner is None:
        # in a structure, in the callable object's fields, or captured by a function passed in (a solver's equation)
        if leaves((args, kwargs), _is_engine_value) or any(map(holds_engine_values, (*args, *kwargs.values()))):
            raise _no_rule(
                ruled,
                call_args,
                "it has a forward rule, which takes values being differentiated as arguments, not inside "
                "structures or the callable object's own fields, nor captured by a function passed to it: its "
                "body would be differentiated in its place",
            )
        return None
    y = owner.call_by_rule(ruled, call_args, kwargs)
    if y is NotImplemented:
        return None
    decline_batch()

    def body_pullback(dy):
        # (installed, as the primal runs: a rule the body calls may call rrule_via_ad)
        return _installed_call(_transformed_call, (fn, args, kwargs, bound), {})[1](dy)

    return y, body_pullback


def _by_rule(f, rule, args: tuple, kwargs: dict):
    """``rule(*args, **kwargs)``: ``(y, back)`` for a call of ``f`` by its reverse rule; on another
    engine's values, by both rules where the reverse rule may compute in Python (``_by_both_rules``).
    A user's rule's ``back`` is checked as it returns (``checked_pullback``): the generated code
    unpacks its result, where a mistake would otherwise surface as a bare ``ValueError`` or be
    blamed on the function around the call."""
    owner = None
    if not getattr(rule, "on_engine_values", False):
        if _has_python_body(f):
            owner = next((a for a in (*args, *kwargs.values()) if isinstance(a, ActiveValue)), None)
        if owner is None and (list in map(type, args) or tuple in map(type, args)):  # (no call without one)
            owner = _in_sequence(f, args)
    y, back = rule(*args, **kwargs) if owner is None else _by_both_rules(owner, f, rule, args, kwargs)
    if is_users_rule(rule):
        if owner is None and any(map(_captures_engine_values, (*args, *kwargs.values()))):
            _refuse_dropped(f, args, y)
        back = checked_pullback(f, back, args, codegen.calling_location, getattr(rule, "batched", False))
    return y, back


def _in_sequence(f, args: tuple) -> ActiveValue | None:
    """Another engine's value (a dual number) in a list or tuple of numbers among ``args`` given to
    ``f``, a NumPy or SciPy callable, which reads the list as an array: the reverse rule would convert
    it to a plain array, where that engine's forward rule takes it as the array of its values
    (``frule.lookup``)."""
    for a in args:
        if type(a) is list or type(a) is tuple:
            held = next(engine_values_in(a, 2), None)
            if held is not None and reads_sequences_as_arrays(f) and numbers_only(a, engines=True):
                return held
    return None


def _captures_engine_values(value) -> bool:
    """Whether ``value`` is a callable that was given another engine's values (a closure over them)."""
    given = given_to(value)
    return given is not None and any(map(holds_engine_values, given))


def _refuse_dropped(f, args: tuple, y) -> None:
    """Refuse the value ``y`` of a user's reverse rule given another engine's values only through a
    function passed to it (a closure over them) where ``y`` holds none of them. That engine takes
    the rule's value as the rule computes it, and the rule computed it without them (a solver's
    iterations reach their root through comparisons alone, where the rule's pullback
    differentiates the equation): its derivatives would be silent zeros."""
    if _is_discrete(y) or holds_engine_values(y):
        return
    raise _no_rule(
        f,
        args,
        "its reverse rule computed its value without the values being differentiated that a function passed to it "
        "captured, so their derivatives would be dropped; forward mode and second derivatives need a forward rule "
        "for it",
    )


def _has_python_body(f) -> bool:
    """Whether ``f`` runs Python code, which its rules may compute with too: a Python function, one
    of NumPy's functions written in Python (``np.linalg.norm``), a class with methods written in
    Python (a constructor), an object of one, or a bound method, of the user's own classes; not a
    ufunc or a built-in (``zip``), whose rules' NumPy calls dispatch on another engine's values."""
    if type(f) is types.MethodType:  # a bound method of the user's (its rule is its function's)
        return type(f.__func__) is _FUNCTION and not is_library_code(f.__func__.__code__)
    key = f if isinstance(f, type) else type(f)
    found = _PYTHON_BODIES.get(key)
    if found is None:  # (a library's class, SciPy's distributions, makes objects its rules know how to use)
        found = any(
            type(v) is _FUNCTION and not is_library_code(v.__code__) for cls in key.__mro__ for v in vars(cls).values()
        )
        _PYTHON_BODIES[key] = found
    return found


def _by_both_rules(owner: ActiveValue, f, rule, args: tuple, kwargs: dict):
    """``(y, back)`` for a callable with a Python body (see ``_has_python_body``) and a reverse rule
    called on another engine's values (dual numbers: forward mode run through this engine, a
    Hessian): ``y`` from that engine's own rule, where it has one (``ActiveValue.call_by_rule``: the
    forward rule pushes the tangents), and ``back`` from the reverse rule. The reverse rule's primal
    code alone would carry the tangents through ``f``'s operations, not through the rule (a
    straight-through estimator's ``np.round``; ``sqrt`` at 0 in a norm's formula, whose forward
    rule takes the zero vector). The reverse rule runs only when the pullback is called (as
    ``core.twins._by_users_rules`` runs a user's), so a first-order forward pass never calls it:
    it may compute what the other engine's values refuse (``math.exp`` of a dual), and it runs with
    this engine installed, as during the forward pass: a rule that differentiates by
    ``rrule_via_ad`` (``cr.checkpoint``'s) calls back into this engine, not into the one
    differentiating this pullback (a tape's, whose values the recomputed code meets)."""
    y = owner.call_by_rule(f, args, kwargs)
    if y is NotImplemented:
        return rule(*args, **kwargs)

    def reverse_rule_pullback(dy):
        # the reverse pass runs with no engine installed; the rule may call rrule_via_ad
        return _installed_call(rule, args, kwargs)[1](dy)

    return y, reverse_rule_pullback


def _is_engine_value(x, top: bool = False) -> bool:
    return isinstance(x, ActiveValue)


def _transformed_call(fn: types.FunctionType, args: tuple, kwargs: dict, bound: bool, constants: frozenset = _NONE):
    entry = _TRANSFORMED.get(id(fn.__code__))
    if entry is None:
        if is_library_code(fn.__code__):
            if all(map(_is_discrete, args)) and all(map(_is_discrete, kwargs.values())):
                return _discrete_call(fn, args, kwargs)  # (np.hanning(n) of an integer: no derivative flows)
            raise _no_rule(fn, args, "library code is differentiated only through rules, never through its source")
        try:
            entry = cache.transformed(fn)
        except NoSourceError as err:
            raise _no_rule(fn, args, f"its source is not available: {err}") from None
    key = cache.call_key(fn, args, kwargs, bound)
    if constants:
        key = (key, constants)
    spec = entry.specialization(fn, args, kwargs, bound, key, constants)
    instance = spec.instance(fn)
    if not constants and not kwargs and not bound and _cells_filled(fn.__closure__) and not _has_typed_rules(fn):
        _remember(entry, fn, args, spec, instance)
    if not spec.batched:
        decline_batch()
    return instance(*args, **kwargs)


def _cells_filled(closure) -> bool:
    """Whether every captured variable holds a value: the generated function then checks the
    type of each one itself (an empty cell has no type to check), as it checks its arguments."""
    if closure is None:
        return True
    try:
        for cell in closure:
            cell.cell_contents  # noqa: B018 (raises ValueError for an empty cell)
    except ValueError:
        return False
    return True


def _has_typed_rules(fn) -> bool:
    """Whether rules (or opt-outs) are registered for ``fn`` for some argument types: then
    whether it has a rule depends on the types of each call, which the fast path does not ask."""
    return rrule._entries_for(fn, False) is not None


def _remember(entry, fn, args: tuple, spec, instance):
    """Let the next call of ``fn`` with as many positional arguments skip the rule lookup and
    the choice of specialization, as long as no rule is registered and ``fn``'s defaults stay
    the same. The generated function checks the types of its arguments and captured variables
    itself and hands a call with other types back to ``respecialize``. Only for a function without rules of any
    argument types: the types of a call then cannot give it a rule."""
    guarded = spec if spec.plan.guards else None
    entry.fast[len(args)] = (fn, spec.version, fn.__defaults__, instance, guarded, spec.calls_out, spec.batched)


def respecialize(fn, bound: bool, *args, **kwargs):
    """A generated function met arguments of other types than it was made for."""
    return _source(fn, args, kwargs, bound)


def respecialize_constants(fn, bound: bool, constants: frozenset, *args, **kwargs):
    """``respecialize`` for a specialization whose arguments at ``constants`` carry no derivative."""
    return _transformed_call(fn, args, kwargs, bound, constants)


def _class_attribute(cls: type, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


# ----- calls with * and ** -------------------------------------------------------------------


def pullback_apply(f, args: tuple, kwargs: dict, active: tuple = ()):
    """``f(*args, **kwargs)``; ``back(dy) -> (df, d_args, d_kwargs)``: the cotangents of the
    tuple and of the dict. ``active`` names the keyword arguments that carry derivatives: a rule
    differentiates positional arguments only (as in ChainRules), so those are passed to it by
    position (see ``core.keywords``), or refused where no position can take them."""
    args = tuple(args)
    y, back = _applied(f, args, kwargs, active)

    def apply_pullback(dy):
        df, d_args, d_kwargs = back(dy)
        return df, structural_tangent(args, d_args), d_kwargs

    return y, apply_pullback


def _applied(f, args: tuple, kwargs: dict, active: tuple):
    """``f(*args, **kwargs)``; ``back(dy) -> (df, (d_arg, ...), d_kwargs)``, one cotangent per
    positional argument (``pullback_apply``'s work, for method calls too)."""
    n = len(args)
    rule = rrule.lookup(f, args)
    if rule is None:
        y, back = _without_rule(f, args, kwargs)

        def apply_pullback(dy):
            d = back(dy)
            return d[0], tuple(d[1 : 1 + n]), (d[-1] if kwargs else None) or ZERO

        return y, apply_pullback
    if not getattr(rule, "batched", False):
        decline_batch()
    positions: dict = {}
    dropped = [k for k in active if _carries_numbers(kwargs.get(k)) and not is_option(f, k)]
    call_args, call_kwargs = args, kwargs
    if dropped:
        moved = as_positional(f, args, kwargs, dropped)
        if moved is None:
            raise _no_rule(
                f,
                args,
                f"its rule does not differentiate keyword arguments, and {', '.join(map(repr, dropped))} "
                "depends on differentiated values, which no position of its signature can take",
            )
        call_args, call_kwargs, positions = moved
    if "out" in call_kwargs:
        _refuse_output(f, call_args, call_kwargs)
    y, back = _by_rule(f, rule, call_args, call_kwargs)

    def apply_rule_pullback(dy):
        d = back(dy)
        return d[0], tuple(d[1 : 1 + n]), {k: d[1 + i] for k, i in positions.items()} if positions else ZERO

    return y, apply_rule_pullback


# ----- method calls --------------------------------------------------------------------------

#: (class, name) -> (how the method calls, the class's attribute as read then): a class's method may
#: be replaced (``A.m = ...``) between calls, so a hit holds while reading it gives the same object
_methods: dict[tuple[type, str], tuple[tuple[str, object], object]] = {}
_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType, types.BuiltinFunctionType)


def _resolve_method(obj, name: str) -> tuple[str, object]:
    """How ``obj.name(...)`` calls: ``function``/``descriptor`` (with ``obj`` first), ``static``,
    ``class`` (with ``type(obj)`` first) or ``field`` (read the attribute, then call it)."""
    fields = getattr(obj, "__dict__", None)
    if fields is not None and name in fields:
        return "field", None
    cls = type(obj)
    key = (cls, name)
    try:  # (the class's attribute cache answers this read, where the walk of its MRO below would not)
        read = getattr(cls, name, None)
        read = getattr(read, "__func__", read)  # (a classmethod is bound anew at each read, its function kept)
    except Exception:  # a descriptor that refuses to be read off the class: resolved at every call
        read = key
    cached = _methods.get(key)
    if cached is not None and cached[1] is read:
        return cached[0]
    attr = _class_attribute(cls, name)
    if isinstance(obj, ActiveValue) and isinstance(getattr(np.ndarray, name, None), _DESCRIPTORS):
        hit = ("descriptor", getattr(np.ndarray, name))  # another engine's array: ndarray's method
    elif isinstance(attr, staticmethod):
        hit = ("static", attr.__func__)
    elif isinstance(attr, classmethod):
        hit = ("class", attr.__func__)
    elif type(attr) is _FUNCTION:
        hit = ("function", attr)
    elif isinstance(attr, _DESCRIPTORS):
        hit = ("descriptor", attr)
    else:
        hit = ("field", None)
    _methods[key] = (hit, read)
    return hit


def _super_pullback(d_proxy):
    """``super(cls, obj)`` is ``obj`` seen from the class after ``cls``: its cotangent is ``obj``'s."""
    return NO, NO, d_proxy


def pullback_method(obj, name: str, *args, **kwargs):
    """``obj.name(*args, **kwargs)``; ``back(dy) -> (d_obj, dx1, ..., dxn)``."""
    if type(obj) is _MODULE or type(obj) is np.ufunc:
        # a function of a submodule (``np.fft.fft``) or a ufunc's method (``np.add.reduce``, whose
        # rules are registered per ufunc): its own rule, as for ``np.sin``
        y, back = pullback(getattr(obj, name), *args, **kwargs)
        return y, lambda dy: (NO, *back(dy)[1:])
    if type(obj) is super:  # a parent's method bound to the object: its tangent is the object's cotangent
        return pullback(getattr(obj, name), *args, **kwargs)
    kind, target = _resolve_method(obj, name)
    if kind == "function" and rrule.lookup(target, (obj, *args)) is None:
        y, back = _source(target, (obj, *args), kwargs, True)
        return y, (_positional_only(back) if kwargs else back)
    if kind in ("function", "descriptor"):
        y, back = pullback(target, obj, *args, **kwargs)
        return y, lambda dy: back(dy)[1:]
    if kind == "static":
        y, back = pullback(target, *args, **kwargs)
        return y, lambda dy: (NO, *back(dy)[1:])
    if kind == "class":
        y, back = pullback(target, type(obj), *args, **kwargs)
        return y, lambda dy: (NO, *back(dy)[2:])
    method, read_back = pullback(getattr, obj, name)
    y, back = pullback(method, *args, **kwargs)

    def field_call_pullback(dy):
        d = back(dy)
        return (read_back(d[0])[1], *d[1:])

    return y, field_call_pullback


def pullback_method_apply(obj, name: str, args: tuple, kwargs: dict, active: tuple = ()):
    """``obj.name(*args, **kwargs)``; ``back(dy) -> (d_obj, d_args, d_kwargs)``. ``active`` names
    the keyword arguments that carry derivatives, as for ``pullback_apply``."""
    args = tuple(args)
    n = len(args)
    kind, target = _resolve_method(obj, name)
    if kind == "function" and rrule.lookup(target, (obj, *args)) is None:
        y, full = _source(target, (obj, *args), kwargs, True)

        def method_keywords_pullback(dy):
            d = full(dy)
            return d[0], structural_tangent(args, tuple(d[1 : 1 + n])), (d[-1] if kwargs else None) or ZERO

        return y, method_keywords_pullback
    if active and kind in ("function", "descriptor") and type(obj) is not np.ufunc:
        # a method with a rule, given keyword arguments that carry derivatives: as for a function
        y, back = _applied(target, (obj, *args), kwargs, active)

        def method_rule_keywords_pullback(dy):
            _, d_args, d_kwargs = back(dy)
            return d_args[0], structural_tangent(args, d_args[1:]), d_kwargs

        return y, method_rule_keywords_pullback
    if active:  # a callable in a field, a module's function, a ufunc's method, a static or class method
        method, read_back = pullback(getattr, obj, name) if kind == "field" else (getattr(obj, name), None)
        y, back = _applied(method, args, kwargs, active)

        def bound_keywords_pullback(dy):
            df, d_args, d_kwargs = back(dy)
            d_obj = read_back(df)[1] if read_back is not None else df if type(obj) is super else NO
            return d_obj, structural_tangent(args, d_args), d_kwargs

        return y, bound_keywords_pullback
    y, back = pullback_method(obj, name, *args, **kwargs)

    def method_apply_pullback(dy):
        d = back(dy)
        return d[0], structural_tangent(args, tuple(d[1 : 1 + n])), ZERO

    return y, method_apply_pullback


# ----- the language's structures ---------------------------------------------------------------

_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _nothing(n: int):
    result = (NO,) * n

    def nondifferentiable_pullback(dy):
        return result

    return nondifferentiable_pullback


def _is_field(obj, name: str) -> bool:
    fields = getattr(obj, "__dict__", None)
    if fields is not None and name in fields:
        return True
    cls = type(obj)
    if isinstance(obj, tuple) and name in getattr(cls, "_fields", ()):
        return True
    return isinstance(_class_attribute(cls, name), types.MemberDescriptorType)


def structural_getattr(obj, name: str):
    """``getattr(obj, name)`` without a registered rule: fields of structures, properties."""
    if isinstance(obj, _OPAQUE):
        return getattr(obj, name), _nothing(3)
    attr = _class_attribute(type(obj), name)
    if isinstance(attr, property) and attr.fget is not None:
        y, back = pullback(attr.fget, obj)
        return y, lambda dy: (NO, back(dy)[1], NO)
    if type(attr) is _FUNCTION and not _is_field(obj, name):
        # a bound method read as a value: its tangent is the object's
        return getattr(obj, name), lambda dy: (NO, dy, NO)
    if not _is_field(obj, name):
        raise _no_rule(getattr, (obj, name), f"`{name}` is not a field of {type(obj).__qualname__}")
    P = type(obj)

    def getattr_pullback(dy):
        dy = unthunk(dy)
        return NO, (dy if isinstance(dy, AbstractZero) else Tangent[P](**{name: dy})), NO

    return getattr(obj, name), getattr_pullback


def structural_getitem(obj, key):
    """``obj[key]`` without a registered rule, for tuples, lists and dicts."""
    if not isinstance(obj, (tuple, list, dict)):
        raise _no_rule(operator.getitem, (obj, key))
    y = obj[key]

    def getitem_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, NO
        if isinstance(obj, dict):
            return NO, Tangent[dict]({key: dy}), NO
        items = [ZERO] * len(obj)
        if isinstance(key, slice):
            for i, d in zip(range(*key.indices(len(obj))), split(dy, len(y))):
                items[i] = d
        else:
            items[key] = dy
        return NO, structural_tangent(obj, tuple(items)), NO

    return y, getitem_pullback


def construct(cls: type, args: tuple, kwargs: dict):
    """``cls(*args, **kwargs)`` for a dataclass or namedtuple: a structure from its fields; for
    another class, only from arguments that carry no derivative (sizes, names, options)."""
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        fields = list(cls._fields)
    elif dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__"):
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
    elif all(map(_is_discrete, args)) and all(map(_is_discrete, kwargs.values())):
        return _discrete_call(cls, args, kwargs)  # made of sizes, names and options: no derivative
    else:
        raise _no_rule(cls, args, "constructing it has no rule; use a dataclass or namedtuple, or register a rule")
    y = cls(*args, **kwargs)
    positional = fields[: len(args)]

    def construct_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            d = {name: dy for name in fields}
        elif isinstance(dy, Tangent):
            d = {name: dy[name] for name in fields}  # (by item: a field may be named `items`)
        else:  # a tuple cotangent of a namedtuple
            d = dict(zip(fields, dy))
        out = (NO, *(d[name] for name in positional))
        return (*out, {k: d.get(k, ZERO) for k in kwargs}) if kwargs else out

    return y, construct_pullback


def replace_fields(obj, /, **changes):
    """``dataclasses.replace(obj, **changes)``: each field's cotangent goes back where its value came
    from, the keyword that changed it or ``obj``; the cotangents of the keywords come last, in a dict."""
    cls = type(obj)
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        reason = "only a dataclass without __post_init__ is a structure of its fields"
        raise _no_rule(dataclasses.replace, (obj,), reason)
    y = dataclasses.replace(obj, **changes)
    kept = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in changes]

    def replace_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, {k: dy for k in changes}
        d_obj = Tangent[cls](**{name: dy[name] for name in kept})
        return NO, d_obj, {k: dy[k] for k in changes}

    return y, replace_pullback


cache.RUNTIME.update(
    pullback=pullback,
    pullback_apply=pullback_apply,
    pullback_method=pullback_method,
    pullback_method_apply=pullback_method_apply,
    accumulate=accumulate,
    ZERO=ZERO,
    NO=NO,
    operator=operator,
    split=runtime.split,
    field=runtime.field,
    struct_cotangent=runtime.struct_cotangent,
    unpack=runtime.unpack,
    pack=runtime.pack,
    pack_dict=runtime.pack_dict,
    make_closure=runtime.make_closure,
    Cell=runtime.Cell,
    closure_tangent=runtime.closure_tangent,
    project_real=runtime.project_real,
    check_rebind=runtime.check_rebind,
    check_item_update=runtime.check_item_update,
    check_rebound=runtime.check_rebound,
    check_update=runtime.check_update,
    integer_cotangent=runtime.integer_cotangent,
    project_0d=runtime.project_0d,
    setitem=runtime.setitem,
    plain_setitem=runtime.plain_setitem,
    append=runtime.append,
    append_pullback=runtime.append_pullback,
    extend=runtime.extend,
    refuse_write=runtime.refuse_write,
    suppressed_inside=runtime.suppressed_inside,
    ChainRulesError=ChainRulesError,
    check_new=runtime.check_new,
    check_metadata=runtime.check_metadata,
    viewed=views.viewed,
    writes_viewed=views.writes_viewed,
    copy_if_view=runtime.copy_if_view,
    iterates_views=runtime.iterates_views,
    item_cotangents=runtime.item_cotangents,
    add_at=runtime.add_at,
    loop_iterable=runtime.loop_iterable,
    respecialize=respecialize,
    respecialize_constants=respecialize_constants,
    dispatch=dispatch,
    dispatch_method=dispatch_method,
)
