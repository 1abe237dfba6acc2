"""Recording operations on tracked values: the trace, the dispatch, the boxes.

Invariants
----------
- The trace being recorded is the value of one ``ContextVar``; a tracked value carries only a
  tag (its ``Trace``) and a slot number, never gradient state.
- A trace owns the tracked values whose tag it is. An operation is handled by the innermost
  active trace that owns one of its arguments: that trace replaces its own values by their
  primals, runs the rule, records the pullback and boxes the result. Values of outer traces
  pass through as constants, so the rule's own arithmetic on them is recorded by the outer
  trace (nested differentiation, as in autograd's boxes inside boxes). A value whose trace is
  not active (it escaped a finished differentiation) is an error, except while its own trace
  sweeps: then it is a constant to the pullbacks' arithmetic.
- Slots are numbered in creation order: the inputs first, then each recorded output. A tape
  entry's parents always have smaller slots than its outputs, so the reverse of the recorded
  order is a valid order for the sweep.
- The engine owns no derivative: every operation goes through ``chainrules.rrule``.
- The tape cannot intercept the call of a Python function or callable object, only operations
  on its values. While rules for such callables are registered, each recorded operation looks
  down the stack for a call of one that received this trace's values (``RULED_CALLS``)
  and raises rather than differentiate the callable's body in place of its rule.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import operator
import os
import sys
import types
import weakref
from contextvars import ContextVar
from numbers import Integral

import numpy as np

from ...core.active import ActiveValue, next_order, reflected_by_its_class, stood_for
from ...core.errors import GENERATED_LINES, DroppedDerivativeError, NoRuleError, escaped_error, is_library
from ...core.keywords import as_positional, is_option
from ...core.pullback_results import checked_rule
from ...core.registry import decline_batch, is_users_rule, rrule
from ...core.ruled_calls import RuledCallWatch, given_to
from ...core.structures import is_structure, structure_items, with_fields
from ...core.tangents import AbstractTangent, AbstractZero, Tangent, unthunk
from ...core.twins import method_twin
from ...core.views import ViewedParts, part_key, viewed

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Frames of chainrules (its modules beside the engines too: cr.checkpoint's wrapper) and of NumPy
# are the machinery between the user's line and the error; the zoo and the other testing helpers
# are user code as far as messages go.
_MACHINERY = (_PACKAGE_DIR + os.sep, os.path.dirname(np.__file__))
_TESTING = os.path.join(_PACKAGE_DIR, "testing") + os.sep

_current: ContextVar[Trace | None] = ContextVar("chainrules_trace", default=None)


class Trace:
    """One differentiation in progress: its tape and slot counter; also the tag of its values.

    Each tape entry is ``(pullback, out, f, first, second)``: ``out`` is the output slot (an int)
    or a template of slots for an operation with several outputs. The hot paths, for one or two
    top-level arguments, write the slots of the first and second argument (``-1`` for one that
    is not tracked) when the result is a float number or array. Every other operation writes
    ``first = PAIRS`` and ``second`` a list of ``(position, slot)`` for every argument the trace
    tracks, where position indexes the pullback's result (``0`` is ``f`` itself) or is a path
    ``(position, key, ...)`` into a structured argument.
    """

    __slots__ = (
        "tape",
        "n_slots",
        "parent",
        "order",
        "sweeping",
        "entry",
        "clean_frames",
        "refused",
        "constants",
        "__weakref__",
    )

    def __init__(self, parent: Trace | None):
        self.tape: list = []
        self.n_slots = 0
        self.parent = parent
        #: where it nests among other engines' differentiations (a forward tag's `order`): larger is inner
        self.order = next_order()
        #: while its pullback runs, this trace's values are constants to the arithmetic of the
        #: pullbacks (a closure handed to a higher-order rule may have captured them)
        self.sweeping = 0
        #: while recording: the frame of `pullback_full` that records, and frames of the user's
        #: code known to run no ruled callable on this trace's values (see `RULED_CALLS`)
        self.entry = None
        self.clean_frames: dict | None = None
        #: the first refusal raised on this trace's values (a conversion with float(), say)
        self.refused: Exception | None = None
        #: the plain arrays that recorded operations took as constants, by id: (array, its values
        #: when taken), checked when the recording ends (see `hold_constant`)
        self.constants: dict = {}

    def __repr__(self) -> str:
        return f"<Trace of {len(self.tape)} operations, {self.n_slots} slots>"


def current_trace() -> Trace | None:
    """The trace being recorded in this context, or ``None``."""
    return _current.get()


# ----- errors that point at the user's line -------------------------------------------------


# Installed libraries and the standard library (``is_library``): a library function that the
# user's code called runs on tracked values, and messages point at the user's call of it.


def _is_machinery(filename: str) -> bool:
    return filename.startswith(_MACHINERY) and not filename.startswith(_TESTING)


def _user_and_library_frames():
    """The innermost frame of the user's code, and the outermost library frame it called (or None)."""
    frame = sys._getframe(2)
    while frame is not None and _is_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    library = None
    while frame is not None and is_library(frame.f_code.co_filename):
        library, frame = frame, frame.f_back
    return frame, library


def user_location() -> str | None:
    """``file:line`` of the user's code that led here, outside chainrules, NumPy and other libraries;
    in code the source engine generated from the user's (a source-engine gradient inside a tape
    gradient), the user's line it came from."""
    frame, _ = _user_and_library_frames()
    while frame is not None:
        generated = GENERATED_LINES.get(frame.f_code.co_filename)
        if generated is None:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        if frame.f_lineno in generated[1]:
            return f"{generated[0]}:{generated[1][frame.f_lineno]}"
        frame = frame.f_back
    return None


def library_context() -> str:
    """Where the user's code is when a library function it called converts a tracked value, or ''."""
    frame, library = _user_and_library_frames()
    if library is None:
        return ""
    code = library.f_code
    module = library.f_globals.get("__name__", "?")
    function = library.f_globals.get(code.co_name)
    name = f"{module}.{code.co_qualname}"
    ruled = function is not None and getattr(function, "__code__", None) is code and rrule.has_rule(function)
    hint = (
        "; a rule is registered for it, which engine='source' uses"
        if ruled
        else "; register a rule for it and use engine='source', or give the tape NumPy operations"
    )
    return (
        f" inside {name}, a library function that the tape engine runs on tracked values (it sees operators, "
        f"NumPy ufuncs and functions and array methods, not what other Python code does with them){hint}"
    )


def _at() -> str:
    where = user_location()
    return f" (at {where})" if where else ""


# ----- calls of ruled Python callables, which the tape cannot intercept --------------------

_ADVICE = (
    "Use engine='source', which calls the rules of Python functions wherever they are called, or let the "
    "tape differentiate {name} itself: for the function it is given, it uses the rule."
)


def _owned_by(value, trace: Trace) -> bool:
    while isinstance(value, Tracked):
        if value._trace is trace:
            return True
        value = value._value
    return False


#: the check, at each operation, for calls of ruled callables on a trace's values
RULED_CALLS = RuledCallWatch(rrule, "the tape engine", _ADVICE, _owned_by, lambda v: deep_primal(v))


# ----- rule lookup, cached per argument types ----------------------------------------------

_rules: dict = {}
_rules_version = -1


def lookup(f, plain_args: tuple):
    """The rule for ``f(*plain_args)`` (or ``None``), cached by ``(f, argument types)``.

    Typed rules are selected with ``isinstance`` on the positional arguments, so the types
    determine the rule; the cache is emptied whenever a rule is registered (``rrule.version``).
    """
    global _rules_version
    if rrule.version != _rules_version:
        _rules.clear()
        _rules_version = rrule.version
    key = (f, *[type(a) for a in plain_args])
    try:
        return _rules[key]
    except KeyError:
        rule = _rules[key] = checked_if_users(f, rrule.lookup(f, plain_args))
        return rule
    except TypeError:  # an unhashable callable
        return checked_if_users(f, rrule.lookup(f, plain_args))


def checked_if_users(f, rule):
    """``rule``, or where it is a user's (``is_users_rule``) the same rule with its pullback's
    result checked as it returns (``checked_rule``), naming the user's line of the call: the sweep
    reads the cotangents it needs by position, where a wrong number of them would surface as an
    ``IndexError`` or be dropped, and one of the wrong shape be blamed on the function around the
    call."""
    if rule is None or not is_users_rule(rule):
        return rule
    return checked_rule(f, rule, user_location, located_when_called=True)


def _lookup_args(plain: list) -> tuple:
    """The arguments as the rule registry sees them: outer traces' values by their primal."""
    return tuple(deep_primal(a) if isinstance(a, Tracked) else a for a in plain)


def _is_array_method(f) -> bool:
    """Whether ``f`` is an array or NumPy scalar method (``np.ndarray.sum``, ``np.generic.reshape``)
    with a NumPy function twin. Its rule for plain values calls the method itself, which refuses an
    outer trace's tracked value: such a value takes the rule registered for it
    (``register_structural_bridges``), through the NumPy function."""
    return method_twin(f) is not None


def deep_primal(a):
    """The plain value inside any number of boxes."""
    while isinstance(a, Tracked):
        a = a._value
    return a


# ----- the boxes ---------------------------------------------------------------------------


class Tracked(ActiveValue):
    """Base class of the values a trace follows: a primal value, the trace's tag, a slot."""

    __slots__ = ("_value", "_trace", "_slot")

    def differentiation_order(self) -> int:
        return self._trace.order

    def stands_for(self):
        return self._value

    def call_by_rule(self, f, args: tuple, kwargs: dict):
        # without a reverse rule the caller runs f's body, whose operations the trace records
        if lookup(f, _lookup_args(args)) is None:
            return NotImplemented
        return apply(f, args, kwargs, held=True)


_new = object.__new__
_getitem = operator.getitem
_float64 = np.float64
#: the other types of numbers the hot paths box inline, as `_record_output` boxes them (the
#: elements of float32 and complex arrays: x[i] of such an array, and arithmetic on them)
_NUMBERS = frozenset((complex, np.float32, np.float16, np.complex128, np.complex64))
_getframe = sys._getframe


def box(value, trace: Trace, slot: int, number_type: type, array_type: type) -> Tracked:
    inner = value if type(value) is np.ndarray else deep_primal(value)
    # (another engine's array is an array, 0-d too: a dual made by np.zeros_like(x) of a number x takes writes)
    if isinstance(inner, np.ndarray) or (isinstance(inner, ActiveValue) and isinstance(stood_for(inner), np.ndarray)):
        return _array_box(array_type, value, trace, slot)
    t = _new(number_type)
    t._value = value
    t._trace = trace
    t._slot = slot
    return t


def _array_box(array_type: type, value, trace: Trace, slot: int) -> Tracked:
    t = _new(array_type)
    t._value = value
    t._trace = trace
    t._slot = slot
    t._aliased = False  # or True, or "argument": takes no writes; or the ViewedParts that take none (`_alias`)
    t._writable = False  # whether the box owns its array, which writes may then go into (writes.py)
    t._owned_at = 0  # the tape's length when it last wrote into the array it owns
    t._views = None  # weak references to the boxes of its views by basic indexing
    t._view_of = None  # (array box, key) for such a view; the key "real" or "imag" for `z.real`, `z.imag`
    return t


# The two box classes live in tracked.py, whose methods call this module's dispatch; it hands
# them over with `set_box_types` when it is imported (the package imports it first).
TrackedNumber: type = Tracked
TrackedArray: type = Tracked


def set_box_types(number_type: type, array_type: type) -> None:
    global TrackedNumber, TrackedArray
    TrackedNumber, TrackedArray = number_type, array_type


def _is_integer(v) -> bool:
    v = deep_primal(v)
    if isinstance(v, ActiveValue):  # another engine's value (a dual of an integer): by its dtype
        return getattr(getattr(v, "dtype", None), "kind", None) in ("i", "u")
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iu"
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _differentiable_kind(y) -> str | None:
    """'f' for a value that carries a derivative, 'i' for an integer (tracked when integers went
    in), None for anything else (bools, strings, None, objects)."""
    t = type(y)
    if t is float or t is complex:
        return "f"
    if t is np.ndarray:
        k = y.dtype.kind
        return "f" if k in "fc" else ("i" if k in "iu" else None)
    if isinstance(y, Tracked):
        return _differentiable_kind(deep_primal(y))
    if isinstance(y, ActiveValue):  # another engine's number or array (a dual): by its dtype
        kind = getattr(getattr(y, "dtype", None), "kind", None)
        return "f" if kind in ("f", "c") else ("i" if kind in ("i", "u") else None)
    if isinstance(y, (np.floating, np.complexfloating)):
        return "f"
    if (t is int or isinstance(y, np.integer)) and not isinstance(y, (bool, np.bool_)):
        return "i"
    if isinstance(y, (float, complex)):
        return "f"
    if isinstance(y, np.ndarray):  # a subclass (a block of the basis seed, an np.matrix): an array all the same
        k = y.dtype.kind
        return "f" if k in "fc" else ("i" if k in "iu" else None)
    return None


# ----- dispatch ----------------------------------------------------------------------------


def _unwrap(value, trace: Trace, path, parents: list):
    """``value`` with this trace's boxes replaced by primals (tuples and lists searched too)."""
    t = type(value)
    if t is TrackedNumber or t is TrackedArray:
        if value._trace is trace:
            parents.append((path, value._slot))
            return value._value
        return value
    if t is tuple or t is list:
        items = None
        for i, item in enumerate(value):
            new = _unwrap(item, trace, (*path, i) if type(path) is tuple else (path, i), parents)
            if new is not item:
                if items is None:
                    items = list(value)
                items[i] = new
        if items is None:
            return value
        return items if t is list else tuple(items)
    return value


def _owns_any(value, trace: Trace) -> bool:
    t = type(value)
    if t is TrackedNumber or t is TrackedArray:
        return value._trace is trace
    if t is tuple or t is list:
        return any(_owns_any(v, trace) for v in value)
    return False


def apply(f, args: tuple, kwargs: dict, rule=None, held: bool = False):
    """Run ``f(*args, **kwargs)`` through its rule (``rule``, or the one registered for ``f``),
    recording it on the trace that owns an argument (with ``held``, or a field of the callable
    object ``f``: see ``_held_fields``).

    ``NotImplemented`` when an argument is another engine's value of a differentiation nested
    inside that trace (a dual of ``cr.jacobian(..., mode="forward")`` run on this trace's values):
    NumPy's protocols and Python's operators then hand the operation to that value, which treats
    the tracked values as constants. (Method calls go to their NumPy functions first: ``method``.)
    """
    for a in args:
        if isinstance(a, AbstractTangent):
            if any(isinstance(b, AbstractZero) for b in args):
                return NotImplemented  # the zero's operator takes it (`x * ZeroTangent()`), as beside an array
            # a lazy cotangent (a pullback's, under an outer tape) is the value it computes, which may be tracked
            return apply(f, tuple(unthunk(b) for b in args), kwargs, rule)
    trace = _current.get()
    while trace is not None:
        parents: list = []
        plain = [_unwrap(a, trace, i + 1, parents) for i, a in enumerate(args)]
        called = _held_fields(f, trace, parents) if held else f
        if parents or (kwargs and any(_owns_any(v, trace) for v in kwargs.values())):
            if inner_foreign(args, trace.order):
                return NotImplemented
            if called is not f:  # the plain object's call, by its rule, which differentiates the object
                rule = checked_if_users(called, rrule.lookup(called, _lookup_args(plain)))
            return record(trace, called, plain, kwargs, parents, args, rule)
        # None of the arguments is this trace's: the operation belongs to an outer differentiation.
        trace = trace.parent
    stray = _first_stray(args)
    if stray is None:  # (not `or`: a stray value's truth is its primal's, an array's ambiguous or a zero's False)
        stray = _first_stray(list(kwargs.values()))
    if stray is not None:
        raise escaped_error(stray, "cr.pullback/cr.gradient")
    # every tracked argument belongs to a trace whose own pullback is running: plain arithmetic
    return f(*[_strip(a) for a in args], **{k: _strip(v) for k, v in kwargs.items()})


def _held_fields(f, trace: Trace, parents: list, path: tuple = (0,)):
    """``f``, or where ``f`` is an object whose fields (or its fields' fields) hold ``trace``'s values
    a copy of it holding their plain values, whose slots are added to ``parents`` at ``(0, field,
    ...)``: the cotangent of the object is the first of its call's rule. Rule code calls such an
    object on an engine's values (``call_by_rule``): a spline that a constructor's rule fitted to
    the values of a tape over the source engine (an ``interp1d`` holds its ``BSpline``), whose call
    SciPy's compiled code could not run on them."""
    if not is_structure(f) or isinstance(f, (tuple, list, dict)) or len(path) > 3:
        return f
    plain = {}
    for name, value in structure_items(f).items():
        held = _held_fields(value, trace, parents, (*path, name))
        new = _unwrap(value, trace, (*path, name), parents) if held is value else held
        if new is not value:
            plain[name] = new
    return with_fields(f, plain) if plain else f


def inner_foreign(args, order: int) -> bool:
    """Whether an argument (or an item of a tuple or list argument) is another engine's value (a
    dual) of a differentiation started after the trace of ``order``, so nested inside it."""
    for a in args:
        ta = type(a)
        if ta is TrackedNumber or ta is TrackedArray or ta is float or ta is np.ndarray:
            continue
        if ta is tuple or ta is list:
            if inner_foreign(a, order):
                return True
        elif isinstance(a, ActiveValue) and a.differentiation_order() > order:
            return True
    return False


def _first_stray(value):
    """A tracked value of a trace that is neither active nor sweeping, if there is one."""
    if isinstance(value, Tracked):
        return None if value._trace.sweeping else value
    if type(value) in (tuple, list):
        for v in value:
            found = _first_stray(v)
            if found is not None:
                return found
    return None


def _strip(value):
    if isinstance(value, Tracked):
        return value._value
    if type(value) in (tuple, list) and any(isinstance(v, Tracked) for v in value):
        return type(value)(_strip(v) for v in value)
    return value


def record(trace: Trace, f, plain: list, kwargs: dict, parents: list, args: tuple, rule=None):
    watch = RULED_CALLS
    if watch.version != rrule.version:
        watch.refresh()
    if watch.on:
        watch.check(trace, _getframe(1))
    if kwargs:
        owned = [name for name, value in kwargs.items() if _owns_any(value, trace)]
        if any(is_option(f, name) for name in owned):  # options carry no derivative: their values (see core.keywords)
            kwargs = {k: _strip(v) if k in owned and is_option(f, k) else v for k, v in kwargs.items()}
            owned = [name for name in owned if not is_option(f, name)]
        if owned:
            # rules differentiate positional arguments: pass these by their positions (see core.keywords)
            moved = as_positional(f, args, kwargs, owned)
            if moved is None:
                raise TypeError(
                    f"a value being differentiated was passed to {_name(f)} as the keyword argument "
                    f"{owned[0]!r}{_at()}; rules differentiate positional arguments only, and no position of "
                    f"its signature can take it"
                )
            args, kwargs = moved[0], moved[1]
            parents = []
            plain = [_unwrap(a, trace, i + 1, parents) for i, a in enumerate(args)]
    if rule is None:
        lookup_args = plain if trace.parent is None or _is_array_method(f) else _lookup_args(plain)
        rule = lookup(f, lookup_args)
        if rule is None:
            raise kept(trace, _no_rule(trace, f, tuple(lookup_args)))
    if not getattr(rule, "batched", False):
        decline_batch()  # this pullback takes one cotangent at a time (see `TapePullback.batched`)
    if id(f) not in _READ_BY_NO_PULLBACK:
        _hold_operands(trace, args)
        if kwargs:
            _hold_operands(trace, kwargs.values())
    y, pullback = rule(*plain, **kwargs)
    return _record_output(trace, f, y, pullback, PAIRS, parents, plain, args)


def _no_rule(trace: Trace, f, args: tuple) -> Exception:
    """The refusal of a call of ``f`` without a rule: ``NoRuleError``, or, in the body of a ruled
    callable that received this trace's values (a library function's, ``statistics.mean`` calling
    ``as_integer_ratio``), the ``IgnoredRuleError`` that names that callable at the user's line."""
    return RULED_CALLS.refused(trace, _getframe(2), NoRuleError(f, args, location=user_location()))


def kept(trace: Trace, error: Exception) -> Exception:
    """``error``, kept as ``trace``'s first refusal: raised again if the function catches it (see
    ``raise_swallowed``)."""
    if trace.refused is None:
        trace.refused = error
    return error


def _name(f) -> str:
    from ...core.errors import callable_name

    return callable_name(f)


def _record_output(trace: Trace, f, y, pullback, first: int, second, plain, args: tuple):
    """Box the result ``y`` of ``f``'s rule and record its tape entry; ``first`` and ``second`` are
    the entry's (two argument slots, or ``PAIRS`` and a list of pairs: see `Trace`)."""
    if type(y) is np.ndarray and y.dtype.kind in "fc":
        # the common result, boxed without the general walk below (the hot paths box numbers themselves)
        slot = trace.n_slots
        trace.n_slots = slot + 1
        out = _array_box(TrackedArray, y, trace, slot)
        if y.base is not None or f is _getitem or _is_argument(y, plain):  # else it shares no memory
            _mark_shared_memory(out, plain, args, f)
        trace.tape.append((pullback, slot, f, first, second))
        return out
    parents = second if first == PAIRS else _pairs(first, second)
    if isinstance(y, Tracked) and y._trace is trace:
        y, pullback, parents = _through_hidden(y, pullback, parents, len(plain))
    kind = _differentiable_kind(y)
    if kind == "f" or (kind == "i" and _integer_went_in(parents, plain)):
        slot = trace.n_slots
        trace.n_slots = slot + 1
        out = box(y, trace, slot, TrackedNumber, TrackedArray)
        if type(out) is TrackedArray:
            _mark_shared_memory(out, plain, args, f)
        trace.tape.append((pullback, slot, f, PAIRS, parents))
        return out
    if kind is not None or (type(y) in _CONSTANT_RESULTS and not _is_object_array(y)):
        return y
    if _is_taken_apart(y):
        template, boxed = _box_outputs(y, trace, parents, plain, args, f)
        if template is not None:
            trace.tape.append((pullback, template, f, PAIRS, parents))
            return boxed
    else:
        _refuse_untracked(trace, f, y)
    return y


#: results that carry no derivative, returned without a look inside (an integer one is too, where
#: no integer went in): a mask, a flag, a name; an array of objects is looked into (``_parts_of``)
_CONSTANT_RESULTS = frozenset({np.ndarray, bool, np.bool_, type(None), str})


def _is_object_array(y) -> bool:
    return type(y) is np.ndarray and y.dtype.kind == "O"


def _through_hidden(y: Tracked, pullback, parents: list, n_args: int):
    """A rule's result that this trace already follows: the rule's arithmetic reached a value of
    this trace that its arguments did not show (a closure handed to a higher-order rule captured
    it), and this trace recorded that arithmetic. The result depends on the arguments through the
    rule's pullback and on the hidden value through what was recorded: the entry gets both. The
    arguments' cotangents are computed as the pullback runs, while this trace sweeps: a lazy one
    may compute with the hidden value (``h * x`` in a checkpointed closure over ``x``), whose
    arithmetic is plain only then, and would be refused as an escaped value afterwards."""
    position = n_args + 1

    def pullback_and_passthrough(dy):
        d_callable, *d_args = pullback(dy)
        return (d_callable, *map(unthunk, d_args), dy)

    pullback_and_passthrough.__qualname__ = getattr(pullback, "__qualname__", "pullback")
    return y._value, pullback_and_passthrough, [*parents, (position, y._slot)]


def _integer_went_in(parents: list, plain: list) -> bool:
    for path, _ in parents:
        position = path if type(path) is int else path[0]
        if position > len(plain):
            continue  # the pass-through of a hidden value (see `_through_hidden`)
        value = plain[position - 1]
        if type(path) is not int:
            for key in path[1:]:
                value = value[key]
        if _is_integer(value):
            return True
    return False


class OutputTemplate:
    """The slots of an operation's structured output (tuple, list, dict, namedtuple, dataclass,
    object: `_box_outputs`), to gather its cotangent."""

    __slots__ = ("type", "children")

    def __init__(self, type_: type, children: list):
        self.type = type_
        self.children = children  # [(key, slot or OutputTemplate or None)]


#: functions whose result shares no memory that matters with their arguments: a write (writes.py)
#: returns the array it wrote into, which its box then stands for in place of the old one
RESULT_IS_ITS_OWN: set = set()


def _mark_shared_memory(out: Tracked, plain: list, args: tuple, f=None) -> None:
    """Flag boxes whose arrays may share memory, so that writes and in-place operators refuse them.

    An in-place operator on a tracked array rebinds its box to a new array, and a write rebinds it
    to the written array (see writes.py); that matches NumPy only when no other box sees the same
    memory. The exceptions are a view by basic indexing (``y[1:]``, ``y[0]``) and the parts
    ``z.real`` and ``z.imag``: each is registered with its array, and every write into that array
    rebinds it to a fresh read, as NumPy's view would show the write. A part read from an array
    that the tape writes into in place is a copy (the writes must not reach the values an
    operation's pullback kept).
    """
    if f in RESULT_IS_ITS_OWN:
        return
    if f is _getitem and type(args[0]) is TrackedArray and not _shared_whole(args[0]):
        base = args[0]
        if base._writable:
            out._value = np.copy(out._value)
            if not _is_basic(args[1]):
                return
        if _is_basic(args[1]):
            _register_view(out, base, args[1])
            return
        y, b = deep_primal(out), deep_primal(base)
        if type(y) is np.ndarray and type(b) is np.ndarray and not np.may_share_memory(y, b):
            return  # advanced indexing: a copy
    if f is getattr and len(args) == 2 and args[1] in ("real", "imag") and type(args[0]) is TrackedArray:
        base = args[0]
        if not _shared_whole(base):
            if base._writable:
                out._value = np.copy(out._value)
            _register_view(out, base, args[1])  # (a write into it writes that part: `writes.write_part`)
            return
    y = deep_primal(out)
    # another engine's array (a dual, in a Hessian) shares memory as the array it stands for does:
    # a reshape of a buffer made by np.zeros_like(x) is a view of it
    values = stood_for(y) if isinstance(y, ActiveValue) else y
    if not _is_argument(y, plain) and not (type(values) is np.ndarray and _views_an_operand(values, plain)):
        return
    _alias(out)
    for a in args:
        if type(a) is TrackedArray:
            _alias(a)


def _register_view(out, base, key) -> None:
    """``out``, read from ``base`` at ``key``, is a view of it, which writes into ``base`` rebind."""
    out._view_of = (base, key)
    views = base._views
    if views is None:
        base._views = [weakref.ref(out)]
    else:
        views.append(weakref.ref(out))
        n = len(views)
        if n >= 64 and n & (n - 1) == 0:  # at each power of two: the dead ones out
            base._views = [r for r in views if r() is not None]


def _views_an_operand(values: np.ndarray, plain) -> bool:
    """Whether ``values``, a view (an array that does not own its memory), may share memory with
    an operand's array (a view of anything else, a dual's 0-d primal of a product, is new memory to
    the tape)."""
    if values.base is None:
        return False
    for p in plain:
        p = deep_primal(p) if isinstance(p, Tracked) else p
        p = stood_for(p) if isinstance(p, ActiveValue) else p
        if type(p) is np.ndarray and np.may_share_memory(values, p):
            return True
    return False


def _is_argument(y, plain) -> bool:
    """Whether ``y`` is one of the plain arguments ``plain`` or the primal inside one."""
    for p in plain:
        if y is p or (isinstance(p, Tracked) and y is deep_primal(p)):
            return True
    return False


def _alias(box) -> None:
    """Mark ``box`` as sharing memory with another array. Where it is a view by indexing, the array
    it views takes writes only outside the part the view shares (``views.ViewedParts``): NumPy would
    show them in the other array, which the tape does not rebind (``L[i, :j] @ L[j, :j]`` reshapes
    the rows in its rule, a row later written beside them)."""
    if not _shared_whole(box):
        box._aliased = True
    keys = []
    while box._view_of is not None:
        box, key = box._view_of
        keys.append(key)
    if not keys or _shared_whole(box):
        return
    memory = stood_for(box._value)
    part = memory
    for key in reversed(keys):
        part = getattr(part, key) if type(key) is str else part[part_key(key)]
    parts = box._aliased
    box._aliased = viewed(parts and parts.moved_to(memory), part, memory)


def _shared_whole(box) -> bool:
    """Whether another array may share all of ``box``'s memory (not only parts a view shares)."""
    return bool(box._aliased) and type(box._aliased) is not ViewedParts


def _is_basic(key) -> bool:
    """Whether ``key`` is basic indexing (ints, slices, ``None``, ``...``), whose result is a view."""
    parts = key if type(key) is tuple else (key,)
    return all(
        p is None or p is Ellipsis or type(p) is slice or (isinstance(p, Integral) and not isinstance(p, bool))
        for p in parts
    )


def _box_outputs(y, trace: Trace, parents: list, plain: list, args: tuple, f):
    """``(template, boxed)``: ``y``, a structured result of ``f``'s rule, with its numbers and arrays
    tracked leaf by leaf, in the structures the tape takes apart (`_is_taken_apart`), as it boxes
    the inputs (``engine.box_input``); ``(None, y)`` where none is. A part it cannot take apart
    that holds what may carry a derivative is refused (`_refuse_untracked`)."""
    if isinstance(y, dict):
        items = list(y.items())
    elif isinstance(y, (tuple, list)):
        fields = type(y)._fields if is_namedtuple(y) else None
        items = list(zip(fields, y)) if fields else list(enumerate(y))
    else:
        items = [(name, getattr(y, name)) for name in fields_of(y)]
    children = []
    new = {}
    for key, item in items:
        kind = _differentiable_kind(item)
        if kind == "f" or (kind == "i" and _integer_went_in(parents, plain)):
            slot = trace.n_slots
            trace.n_slots = slot + 1
            boxed_item = new[key] = box(item, trace, slot, TrackedNumber, TrackedArray)
            if type(boxed_item) is TrackedArray:
                _mark_shared_memory(boxed_item, plain, args)
            children.append((key, slot))
        elif kind is None and _is_taken_apart(item):
            sub, boxed_item = _box_outputs(item, trace, parents, plain, args, f)
            if sub is not None:
                new[key] = boxed_item
            children.append((key, sub))
        else:
            if kind is None:
                _refuse_untracked(trace, f, item)
            children.append((key, None))
    if not new:
        return None, y
    T = type(y)
    if isinstance(y, dict):
        boxed = copy.copy(y)  # keeps the dict subclass
        boxed.update(new)
    elif isinstance(y, (tuple, list)):
        values = [new.get(key, item) for key, item in items]
        boxed = T(*values) if is_namedtuple(y) else T(values)
    else:
        boxed = with_fields(y, new)
    return OutputTemplate(T, children), boxed


def _is_taken_apart(y) -> bool:
    """Whether the tape tracks the numbers and arrays inside ``y`` leaf by leaf: a tuple, list, dict,
    namedtuple, dataclass or object of the user's own classes (`fields_of`)."""
    return isinstance(y, (tuple, list, dict)) or fields_of(y) is not None


def _refuse_untracked(trace: Trace, f, y) -> None:
    """Refuse ``y``, a result of ``f``'s rule (or a part of one) that the tape cannot take apart,
    where it holds what may carry a derivative: returned as it is, it would be a constant, and the
    derivatives through it silently zero. A string, an integer, ``None`` or an object of constants
    passes."""
    if not _carries_derivative(y, trace, set()):
        return
    name = _name(f)
    if _is_object_array(y):
        raise kept(
            trace,
            DroppedDerivativeError(
                f"{name} made an array of objects from values being differentiated{_at()}: the tape engine tracks "
                "arrays of floating-point or complex numbers, not the Python numbers in an array of objects, so "
                "their derivatives would be lost. Keep a numeric dtype, or use engine='source'"
            ),
        )
    raise kept(
        trace,
        DroppedDerivativeError(
            f"the rule of {name} returned a {type(y).__qualname__} holding numbers or arrays that may carry a "
            f"derivative{_at()}, which the tape engine cannot follow: it tracks them in tuples, lists, dicts, "
            f"namedtuples, dataclasses and objects of your own classes, not inside a {type(y).__qualname__}, so "
            f"their derivatives would be lost. Return them from {name} in one of those, or use engine='source'"
        ),
    )


def _carries_derivative(value, trace: Trace, seen: set) -> bool:
    """Whether ``value`` holds a number or array that may carry a derivative (other than ``trace``'s
    own values, whose arithmetic it recorded): in its items and fields, a closure's cells and
    defaults, a bound method's object, a partial's arguments, a generator's locals, or what a
    built-in iterator goes over."""
    if isinstance(value, Tracked) and value._trace is trace:
        return False
    kind = _differentiable_kind(value)
    if kind is not None:
        return kind == "f"
    if id(value) in seen or isinstance(value, (str, bytes, type, types.ModuleType)):
        return False
    seen.add(id(value))
    parts = given_to(value)
    if parts is None:
        parts = _parts_of(value)
    return parts is not None and any(_carries_derivative(part, trace, seen) for part in parts)


def _parts_of(value) -> list | None:
    """What ``value``, not a callable given values, holds: a generator's locals, a tangent's or a
    structure's items, what a built-in iterator goes over; ``None`` where the tape cannot tell."""
    if isinstance(value, types.GeneratorType):
        return list(inspect.getgeneratorlocals(value).values())
    if isinstance(value, Tangent):
        backing = value.backing
        return list(backing.values() if isinstance(backing, dict) else backing)
    if isinstance(value, (set, frozenset)):
        return list(value)
    if _is_object_array(value):  # (x.astype(object): Python numbers the tape would not follow)
        return list(value.flat)
    if is_structure(value):
        items = structure_items(value)
        return items if isinstance(items, list) else list(items.values())
    if hasattr(value, "__next__"):  # a built-in iterator (one over an array): its arguments
        try:
            return list(value.__reduce__()[1])
        except TypeError:
            return None
    return None


# ----- which values the tape takes apart -----------------------------------------------------

_OPAQUE = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    functools.partial,
    np.ufunc,
    np.random.Generator,
)


def is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def fields_of(value) -> list[str] | None:
    """The fields of a dataclass instance or plain object, or None for anything else."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f.name for f in dataclasses.fields(value)]
    if isinstance(value, _OPAQUE) or _from_a_library(type(value)):
        return None
    d = getattr(value, "__dict__", None)
    return list(d) if isinstance(d, dict) else None


def _from_a_library(cls: type) -> bool:
    """Whether ``cls`` comes from an installed library or the standard library: its objects
    (random generators, distributions, data frames, locks) are not taken apart into fields."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    return cls.__module__ == "builtins" or (filename is not None and is_library(filename))


#: operations whose pullbacks never read their operands' values (a sum's cotangent is the output's
#: for each operand, a concatenation's its slices): a plain array added or joined may be changed
#: afterwards (a buffer refilled in a loop), so `hold_constant` leaves it alone. By identity: the
#: callable recorded may be a user's unhashable object (a dataclass instance with ``__call__``)
_READ_BY_NO_PULLBACK = frozenset(
    map(id, (operator.add, operator.sub, np.add, np.subtract, np.concatenate, np.stack, np.hstack, np.vstack))
)


#: the most entries of a constant whose values `hold_constant` copies (512 KB of float64); a larger
#: one (a data matrix) is taken to be left alone
_COPIED_AT_MOST = 1 << 16


def hold_constant(trace: Trace, a: np.ndarray) -> None:
    """Keep the values of the plain array ``a``, an operand of a recorded operation, to check when
    the recording ends (`changed_constant`) that the function did not change it in place after
    the operation (``c[0] = 5.0`` after ``c * x``, or through a view or the array a view is of):
    the pullback may read it, and would read the changed values. Arrays of more than
    ``_COPIED_AT_MOST`` entries are not checked."""
    if a.size <= _COPIED_AT_MOST and id(a) not in trace.constants:
        trace.constants[id(a)] = (a, a.copy())


def _hold_operands(trace: Trace, operands) -> None:
    """`hold_constant` for the plain arrays among ``operands`` and inside their lists and tuples
    (two levels: ``multi_dot([c, x])``, the index key ``(1, idx)`` of ``X[1, idx]``)."""
    for a in operands:
        if type(a) is np.ndarray:
            hold_constant(trace, a)
        elif type(a) is tuple or type(a) is list:
            for item in a:
                if type(item) is np.ndarray:
                    hold_constant(trace, item)
                elif type(item) is tuple or type(item) is list:
                    for inner in item:
                        if type(inner) is np.ndarray:
                            hold_constant(trace, inner)


def changed_constant(trace: Trace) -> np.ndarray | None:
    """A constant `hold_constant` kept whose values the function changed since, or ``None``; the
    kept copies are let go."""
    kept, trace.constants = trace.constants, {}
    for a, values in kept.values():
        # (NaNs compared only where a first comparison differs: equal_nan costs 25 times more)
        if not np.array_equal(a, values) and not (a.dtype.kind in "fc" and np.array_equal(a, values, equal_nan=True)):
            return a
    return None


#: the ``first`` field of a tape entry whose ``second`` lists (position, slot) pairs
PAIRS = -2
#: the ``first`` field of a write's entry (writes.py): ``second`` lists pairs as for ``PAIRS``, and
#: the pullback takes ``(dy, owned)`` and returns ``(cotangents, owns_the_buffer_cotangent)``
WRITE = -3


def _pairs(first: int, second: int) -> list:
    """A hot path's two argument slots (-1 for untracked) as ``(position, slot)`` pairs."""
    return [(i + 1, slot) for i, slot in enumerate((first, second)) if slot >= 0]


def binary_operation(f):
    """The function ``op(a, b) = f(a, b)`` for tracked operands: ``apply``'s hot path for operators.

    It handles two top-level arguments of the innermost trace with its own rule cache (by the
    operands' types, emptied when a rule is registered) and boxes float results inline; anything
    else goes to ``apply``. Tape entries it writes name the two arguments' slots directly.
    """
    cache: dict = {}
    version = -1
    watch = False
    holds = id(f) not in _READ_BY_NO_PULLBACK  # (see `hold_constant`)

    def op(a, b):
        nonlocal version, watch
        trace = _current.get()
        ta = type(a)
        tb = type(b)
        if ta is TrackedNumber or ta is TrackedArray:
            if a._trace is not trace:
                return apply(f, (a, b), {})
            pa = a._value
            first = a._slot
            if tb is TrackedNumber or tb is TrackedArray:
                if b._trace is not trace:
                    return apply(f, (a, b), {})
                pb = b._value
                second = b._slot
            elif tb is tuple:
                # a key of plain ints (A[i, j]) holds nothing to unwrap: the hot path; any other
                # tuple may hold tracked values or another engine's, which `apply` looks into
                for p in b:
                    if type(p) is not int:
                        return apply(f, (a, b), {})
                pb = b
                second = -1
            elif tb is list:
                return apply(f, (a, b), {})
            else:
                if (
                    tb is not float
                    and tb is not int
                    and isinstance(b, ActiveValue)
                    and b.differentiation_order() > trace.order
                ):
                    return NotImplemented  # a dual of a differentiation nested inside this one: its operation
                if ta is TrackedNumber and tb is not float and tb is not int and reflected_by_its_class(f, b):
                    return NotImplemented  # Python calls the user's `b.__rmul__(a)`, as with a plain number
                if isinstance(b, AbstractTangent):
                    return apply(f, (a, b), {})
                pb = b
                second = -1
        elif tb is TrackedNumber or tb is TrackedArray:
            if b._trace is not trace or ta is tuple or ta is list:
                return apply(f, (a, b), {})
            if ta is not float and isinstance(a, ActiveValue) and a.differentiation_order() > trace.order:
                return NotImplemented
            if isinstance(a, AbstractTangent):
                return apply(f, (a, b), {})
            pa = a
            pb = b._value
            first = -1
            second = b._slot
        else:
            return apply(f, (a, b), {})
        if trace.parent is not None:
            return record(trace, f, [pa, pb], {}, _pairs(first, second), (a, b))
        if version != rrule.version:
            cache.clear()
            version = rrule.version
            watch = RULED_CALLS.active()
        if watch:
            RULED_CALLS.check(trace, _getframe(1))
        try:
            rule, batched = cache[type(pa)][type(pb)]
        except KeyError:
            rule = checked_if_users(f, rrule.lookup(f, (pa, pb)))
            batched = getattr(rule, "batched", False)
            cache.setdefault(type(pa), {})[type(pb)] = (rule, batched)
        if rule is None:
            raise kept(trace, _no_rule(trace, f, (pa, pb)))
        if not batched:
            decline_batch()  # this pullback takes one cotangent at a time (see `TapePullback.batched`)
        if holds:
            if first == -1:
                if ta is np.ndarray:
                    hold_constant(trace, pa)
            elif second == -1 and tb is np.ndarray:
                hold_constant(trace, pb)
        y, pullback = rule(pa, pb)
        ty = type(y)
        if ty is float or ty is _float64 or ty in _NUMBERS:
            slot = trace.n_slots
            trace.n_slots = slot + 1
            out = _new(TrackedNumber)
            out._value = y
            out._trace = trace
            out._slot = slot
            trace.tape.append((pullback, slot, f, first, second))
            return out
        return _record_output(trace, f, y, pullback, first, second, (pa, pb), (a, b))

    op.__qualname__ = op.__name__ = f"traced_{getattr(f, '__name__', 'operation')}"
    return op


binary_operations: dict = {}


def binary(f, a, b):
    """``f(a, b)`` through the hot path of ``binary_operation(f)`` (made once per ``f``)."""
    op = binary_operations.get(f)
    if op is None:
        op = binary_operations[f] = binary_operation(f)
    return op(a, b)


def unary_operation(f):
    """The function ``op(a, kwargs=None) = f(a, **kwargs)`` for a tracked ``a``: ``apply``'s hot path
    for one argument, with options by keyword (``np.sum(x, axis=0)``)."""
    cache: dict = {}
    version = -1
    watch = False
    holds = id(f) not in _READ_BY_NO_PULLBACK  # (see `hold_constant`)

    def op(a, kwargs=None):
        nonlocal version, watch
        trace = _current.get()
        ta = type(a)
        if (ta is not TrackedNumber and ta is not TrackedArray) or a._trace is not trace or trace.parent is not None:
            return apply(f, (a,), kwargs or {})
        if kwargs:
            for value in kwargs.values():
                if _owns_any(value, trace):  # `record` passes it by its position
                    return apply(f, (a,), kwargs)
        pa = a._value
        if version != rrule.version:
            cache.clear()
            version = rrule.version
            watch = RULED_CALLS.active()
        if watch:
            RULED_CALLS.check(trace, _getframe(1))
        try:
            rule, batched = cache[type(pa)]
        except KeyError:
            rule = checked_if_users(f, rrule.lookup(f, (pa,)))
            batched = getattr(rule, "batched", False)
            cache[type(pa)] = (rule, batched)
        if rule is None:
            raise kept(trace, _no_rule(trace, f, (pa,)))
        if not batched:
            decline_batch()
        if kwargs and holds:
            _hold_operands(trace, kwargs.values())  # (weights=c of np.average)
        y, pullback = rule(pa, **kwargs) if kwargs else rule(pa)
        ty = type(y)
        if ty is float or ty is _float64 or ty in _NUMBERS:
            slot = trace.n_slots
            trace.n_slots = slot + 1
            out = _new(TrackedNumber)
            out._value = y
            out._trace = trace
            out._slot = slot
            trace.tape.append((pullback, slot, f, a._slot, -1))
            return out
        return _record_output(trace, f, y, pullback, a._slot, -1, (pa,), (a,))

    op.__qualname__ = op.__name__ = f"traced_{getattr(f, '__name__', 'operation')}"
    return op


unary_operations: dict = {}


def unary(f, a, kwargs=None):
    """``f(a, **kwargs)`` for a unary operator, a one-argument ufunc or a NumPy function of one
    array (``-x``, ``abs(x)``, ``np.sin(x)``, ``np.sum(x, axis=0)``)."""
    op = unary_operations.get(f)
    if op is None:
        op = unary_operations[f] = unary_operation(f)
    return op(a, kwargs)
