"""``pullback_full``: run a function on tracked inputs, then sweep its tape backwards on demand.

A function (or callable object) with a rule is not run: its rule is the answer, as in the
other engines. Otherwise inputs are boxed leaf by leaf (numbers, integer and float arrays; inside tuples, lists, dicts,
namedtuples, dataclasses and plain objects); bools, strings and other values pass through
untracked and get ``NoTangent``. A callable object's own fields are boxed too, so its tangent
is a ``Tangent`` of its class. While the function runs, the trace is the active one and this
engine answers ``chainrules.rrule_via_ad``.

When every rule the function called pulls back a batch of cotangents at once (none declined,
see ``chainrules.core.decline_batch``) and the output is one number or array, the pullback
is ``batched``: ``back(dy)`` with a leading batch axis on ``dy`` sweeps the tape once for the
whole batch and returns cotangents with the batch axis in front.
"""

from __future__ import annotations

import copy
import functools
import gc
import math
import sys
import types
from collections.abc import Callable

import numpy as np

from ...core.active import CAPTURES_WANTED, active_engine, rebound_names, stood_for
from ...core.errors import (
    ChainRulesError,
    DroppedDerivativeError,
    callable_name,
    raise_converted,
    raise_swallowed,
)
from ...core.projection import ProjectTo
from ...core.registry import batch_declines, rrule
from ...core.ruled_calls import in_library_code
from ...core.structures import with_fields
from ...core.tangents import AbstractThunk, AbstractZero, NoTangent, Tangent, Thunk, ZeroTangent, unthunk
from . import tracer
from .backward import add_to, part, sweep
from .tracer import Trace, Tracked, _current, _new, fields_of, is_namedtuple
from .tracked import TrackedArray, TrackedNumber

_ZERO = ZeroTangent()
_NO = NoTangent()


class _Structure:
    """Where a structured value's tracked leaves are: ``children`` is ``[(key, index, template)]``."""

    __slots__ = ("type", "children")

    def __init__(self, type_: type, children: list):
        self.type = type_
        self.children = children


# ----- inputs ------------------------------------------------------------------------------


def box_input(value, trace: Trace, top: bool = True, held: _Held | None = None):
    """``(boxed, template)``: ``value`` with its differentiable leaves tracked by ``trace``.

    ``template`` is a slot (a leaf), a ``_Structure``, or ``None`` (nothing tracked). An integer
    number is tracked as an argument of its own (used arithmetically, it gets a float gradient),
    not inside a structure, where it is a setting (a count, a size: ``NoTangent()``), as the
    source engine, ``cr.jacobian`` and ``to_vec`` take it. ``held``: ``value`` is what a closure
    captured (see ``_Held``).
    """
    if held is not None:
        return held.box(value, trace)
    if type(value) is float:
        slot = trace.n_slots
        trace.n_slots = slot + 1
        return tracer.box(value, trace, slot, TrackedNumber, TrackedArray), slot
    kind = tracer._differentiable_kind(value)
    if kind is not None and (top or kind != "i" or isinstance(value, np.ndarray)):
        slot = trace.n_slots
        trace.n_slots = slot + 1
        boxed = tracer.box(value, trace, slot, TrackedNumber, TrackedArray)
        if type(boxed) is TrackedArray:
            boxed._aliased = "argument"  # the caller's array: writes and in-place updates must not diverge from it
        return boxed, slot
    return _box_parts(value, trace, None)


def _box_parts(value, trace: Trace, held: _Held | None):
    """``box_input`` of a tuple's, list's, dict's or object's items (``(value, None)`` for any other value)."""
    if isinstance(value, (tuple, list)):
        items, children = [], []
        fields = type(value)._fields if is_namedtuple(value) else None
        for i, item in enumerate(value):
            b, t = box_input(item, trace, False, held)
            items.append(b)
            children.append((fields[i] if fields else i, i, t))
        if all(t is None for _, _, t in children):
            return value, None
        boxed = type(value)(*items) if fields else type(value)(items)
        return boxed, _Structure(type(value), children)
    if isinstance(value, dict):
        new, children = {}, []
        for i, (k, item) in enumerate(value.items()):
            new[k], t = box_input(item, trace, False, held)
            children.append((k, i, t))
        if all(t is None for _, _, t in children):
            return value, None
        boxed = copy.copy(value)  # keeps the dict subclass
        boxed.update(new)
        return boxed, _Structure(type(value), children)
    if type(value) is functools.partial:  # its fields as the rules for partials name them (rules/pyfunctional.py)
        parts = [box_input(getattr(value, name), trace, False, held) for name in ("func", "args", "keywords")]
        if all(t is None for _, t in parts):
            return value, None
        (func, _), (args, _), (keywords, _) = parts
        children = [(name, i, t) for i, (name, (_, t)) in enumerate(zip(("func", "args", "keywords"), parts))]
        return functools.partial(func, *args, **keywords), _Structure(functools.partial, children)
    fields = fields_of(value)
    if fields:
        new, children = {}, []
        for i, name in enumerate(fields):
            item = getattr(value, name)
            b, t = box_input(item, trace, False, held)
            if t is not None:
                new[name] = b
            children.append((name, i, t))
        if not new:
            return value, None
        return with_fields(value, new), _Structure(type(value), children)
    return value, None


def _field_of(value, key, index: int):
    if type(value) is types.FunctionType:  # a closure: by its captured name's cell
        return value.__closure__[index].cell_contents
    if type(value) is types.MethodType:  # a bound method: its object's field
        value = value.__self__
    if isinstance(value, dict):
        return value[key]
    if isinstance(value, (tuple, list)):
        return value[index]
    return getattr(value, key)


def collect(template, value, cts: dict, batch: bool = False, lazy: bool = False):
    """The tangent of an input from the swept cotangents, shaped like the input (with a leading
    batch axis for a batched sweep); ``lazy``: array cotangents are projected only when asked for
    (the function's own tangent: what a closure captured is mostly constant, and rarely asked for)."""
    if template is None:
        return _NO
    if type(template) is int:
        ct = cts.get(template, _ZERO)
        if type(ct) is float and type(value) is float:
            return ct
        if isinstance(ct, AbstractZero):
            return _NO if tracer._is_integer(value) else _ZERO
        if isinstance(ct, Tracked):
            return ct  # a cotangent an outer differentiation follows (nested): the rules shaped it
        project = ProjectTo(tracer.deep_primal(value))
        if batch:
            if lazy or isinstance(ct, AbstractThunk):  # computed only if asked for
                return Thunk(lambda: project.batch(unthunk(ct)))
            return project.batch(ct)
        if lazy and not isinstance(ct, AbstractThunk):
            return Thunk(lambda: project(ct))
        return project(ct)  # (a thunk stays one)
    items = []
    for key, index, child in template.children:
        items.append((key, collect(child, _field_of(value, key, index), cts, batch, lazy)))
    if all(t is _NO for _, t in items):
        return _NO
    if all(isinstance(t, AbstractZero) for _, t in items):
        return _ZERO
    P = template.type
    if issubclass(P, dict):  # (a dict subclass's too: an OrderedDict, a defaultdict, as the source engine's)
        return Tangent[dict](dict(items))
    if issubclass(P, (tuple, list)) and not hasattr(P, "_fields"):
        return Tangent[P](*(t for _, t in items))
    return Tangent[P](**dict(items))


# ----- outputs -----------------------------------------------------------------------------


def unbox_output(value, trace: Trace):
    """``(primal, template)``: the output with the trace's boxes replaced by their primals."""
    if type(value) is float:
        return value, None
    if isinstance(value, Tracked):
        if value._trace is trace:
            return value._value, value._slot
        return value, None  # a constant here (an outer differentiation's value)
    if isinstance(value, (tuple, list)):
        items, children = [], []
        fields = type(value)._fields if is_namedtuple(value) else None
        for i, item in enumerate(value):
            p, t = unbox_output(item, trace)
            items.append(p)
            children.append((fields[i] if fields else i, i, t))
        if all(t is None for _, _, t in children):
            return value, None
        primal = type(value)(*items) if fields else type(value)(items)
        return primal, _Structure(type(value), children)
    if isinstance(value, dict):
        new, children = {}, []
        for i, (k, item) in enumerate(value.items()):
            new[k], t = unbox_output(item, trace)
            children.append((k, i, t))
        if all(t is None for _, _, t in children):
            return value, None
        primal = copy.copy(value)
        primal.update(new)
        return primal, _Structure(type(value), children)
    fields = fields_of(value)
    if fields:
        new, children = {}, []
        for i, name in enumerate(fields):
            p, t = unbox_output(getattr(value, name), trace)
            if t is not None:
                new[name] = p
            children.append((name, i, t))
        if not new:
            return value, None
        return with_fields(value, new), _Structure(type(value), children)
    return value, None


def _seed(template, dy, cts: dict, owned: set) -> None:
    if template is None:
        return
    if type(template) is int:
        acc = cts.get(template)
        cts[template] = dy if acc is None else add_to(acc, template, dy, owned)  # the first is borrowed
        return
    if template.type in (tuple, list) and isinstance(dy, (tuple, list, Tangent)):
        items = dy.backing if isinstance(dy, Tangent) else dy
        if isinstance(items, (tuple, list)) and len(items) != len(template.children):
            raise ValueError(
                f"a cotangent of {len(items)} items for a {template.type.__name__} of {len(template.children)}"
            )
    for key, index, child in template.children:
        if child is not None:
            _seed(child, part(dy, key, index), cts, owned)


# ----- the engine --------------------------------------------------------------------------


class TapePullback:
    """``back(dy) -> (df, dx1, ..., dxn)`` for a recorded call; it may be called many times.

    ``back.last_call(dy)`` gives the same result and frees each pullback (and the arrays it
    captured) as soon as it has run; ``back`` cannot be called after it.

    ``back.batched`` says whether ``dy`` may carry a leading batch axis (one cotangent per row,
    pulled back in one sweep; the cotangents come back with the batch axis in front).
    """

    __slots__ = ("_trace", "_f", "_f_template", "_args", "_templates", "_out_template", "_batch_ndim")

    def __init__(self, trace, f, f_template, args, templates, out_template, batch_ndim=None):
        self._trace = trace
        self._f = f
        self._f_template = f_template
        self._args = args
        self._templates = templates
        self._out_template = out_template
        #: the output's ndim when a batch of cotangents may be pulled back at once, else None
        self._batch_ndim = batch_ndim

    @property
    def batched(self) -> bool:
        return self._batch_ndim is not None

    def __call__(self, dy):
        return self._sweep(dy, release=False)

    def last_call(self, dy):
        """``back(dy)``, releasing the tape as the sweep goes (the pullback is spent afterwards)."""
        return self._sweep(dy, release=True)

    def _sweep(self, dy, release: bool):
        trace = self._trace
        if trace is None:
            raise ChainRulesError("this pullback's tape was released by last_call(); it cannot be called again")
        owned: set = set()
        out = self._out_template
        batch = self._batch_ndim is not None and getattr(dy, "ndim", 0) == self._batch_ndim + 1
        if type(out) is int:  # one tracked output
            cts = {out: dy}  # borrowed
        else:
            cts = {}
            _seed(out, dy, cts, owned)
        if release:
            self._trace = None
        trace.sweeping += 1
        pause_gc = gc.isenabled()  # as while recording (see pullback_full): the tape is large
        if pause_gc:
            gc.disable()
        try:
            sweep(trace.tape, cts, owned, release=release)
        finally:
            trace.sweeping -= 1
            if pause_gc:
                gc.enable()
        df = collect(self._f_template, self._f, cts, batch, lazy=True)
        return (df, *(collect(t, a, cts, batch) for t, a in zip(self._templates, self._args)))

    def __repr__(self) -> str:
        return f"<tape pullback of {getattr(self._f, '__qualname__', type(self._f).__name__)}>"


class RulePullback:
    """``back(dy) -> (df, dx1, ..., dxn)`` of a function that has a rule: the rule's own pullback.

    Like ``TapePullback`` it may be called many times, and ``last_call`` releases it.
    """

    def __init__(self, f, pullback):
        self._f = f
        self._pullback = pullback

    def __call__(self, dy):
        pullback = self._pullback
        if pullback is None:
            raise ChainRulesError("this pullback was released by last_call(); it cannot be called again")
        return pullback(dy)

    def last_call(self, dy):
        """``back(dy)``, releasing the rule's pullback (and what it captured) afterwards."""
        out = self(dy)
        self._pullback = None
        return out

    def __repr__(self) -> str:
        return f"<rule pullback of {getattr(self._f, '__qualname__', type(self._f).__name__)}>"


def pullback_full(f: Callable, *args, **kwargs):
    """``(y, back)`` with ``y = f(*args, **kwargs)`` and ``back(dy) -> (df, dx1, ..., dxn)``.

    ``f`` runs once on tracked inputs, recording each operation's rule pullback on a tape;
    ``back`` sweeps the tape backwards. ``df`` is the tangent of ``f`` itself: a ``Tangent`` of
    its class for a callable object (or a bound method's object) with differentiable fields,
    ``Tangent[function]`` by name for a closure's captured numbers and arrays, ``NoTangent()`` otherwise.
    When ``f`` has a rule (a Python function, a callable object, by itself or by its class),
    the rule runs instead and ``back`` is its pullback.

    >>> from chainrules.reverse.trace import pullback_full
    >>> y, back = pullback_full(lambda a, b: a / (a + b * b), 2.0, 3.0)
    >>> [round(d, 4) for d in back(1.0)[1:]]
    [0.0744, -0.0992]
    """
    return pullback_with_constants(f, args, kwargs, _NO_CONSTANTS)


_NO_CONSTANTS = frozenset()


def pullback_with_constants(f: Callable, args: tuple, kwargs: dict, constants: frozenset):
    """``pullback_full(f, *args, **kwargs)`` where the positional arguments at the positions
    ``constants`` carry no derivative (``argnums`` left them out): they are not tracked, so code
    that converts them (a library's filter of data) runs, and their cotangents are zeros.

    >>> from chainrules.reverse.trace import pullback_with_constants
    >>> y, back = pullback_with_constants(lambda w, n: w * float(n), (2.0, 3.0), {}, frozenset({1}))
    >>> back(1.0)[1:]
    (3.0, NoTangent())
    """
    # arguments of an outer differentiation are looked up by their plain values
    rule = rrule.lookup(f, tuple(map(tracer.deep_primal, args)))
    if rule is not None:
        with active_engine(pullback_full):
            y, pullback = rule(*args, **kwargs)
        return y, RulePullback(f, pullback)
    trace = Trace(_current.get())
    declines = batch_declines()
    if type(f) in _PLAIN_CALLABLES:
        boxed_f, f_template = _box_function(f, trace)
    else:
        boxed_f, f_template = _box_callable(f, trace)
    copied_objects = _copied_objects(boxed_f, f_template, []) if f_template is not None else None
    boxed, templates = [], []
    for i, a in enumerate(args):
        if constants and i in constants:
            boxed.append(a)
            templates.append(None)
            continue
        if type(a) is float:  # the common leaf, boxed here without the general walk
            slot = trace.n_slots
            trace.n_slots = slot + 1
            b = _new(TrackedNumber)
            b._value, b._trace, b._slot = a, trace, slot
            boxed.append(b)
            templates.append(slot)
            continue
        b, t = box_input(a, trace)
        boxed.append(b)
        templates.append(t)
    token = _current.set(trace)
    trace.entry = sys._getframe(0)  # where a walk for calls of ruled callables stops
    # Recording makes a few small container objects per operation (a closure, a box, a tape
    # entry), which the cyclic garbage collector would traverse again and again as the tape
    # grows: it made a 30,000-operation tape four times slower to record, and sweeping a long
    # tape whose pullbacks make thunks several times slower. It is paused while the outermost
    # tape records and while a tape sweeps (reference counting frees everything outside cycles).
    pause_gc = gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        with active_engine(pullback_full):
            out = boxed_f(*boxed, **kwargs)
    except Exception as error:
        raise_converted(error, trace.refused or tracer.RULED_CALLS.failed(trace, error), (TrackedArray, TrackedNumber))
        raise
    finally:
        if pause_gc:
            gc.enable()
        _current.reset(token)
        trace.entry = trace.clean_frames = None
        changed = tracer.changed_constant(trace)
    if trace.refused is not None:
        raise_swallowed(trace.refused, f)
    if changed is not None:
        raise DroppedDerivativeError(
            f"{callable_name(f)} changed in place an array (of shape {changed.shape}) after an operation being "
            "differentiated read it: the reverse pass would read the changed values. Write into a copy "
            "(c = c.copy()) before changing it, or change it before it is used"
        )
    if copied_objects:
        _refuse_changed_fields(f, copied_objects)
    y, out_template = unbox_output(out, trace)
    batchable = type(out_template) is int and batch_declines() == declines and _is_number_or_array(y)
    # (`getattr` rather than `np.ndim`, whose dispatch costs as much as the rest of this line)
    batch_ndim = getattr(y, "ndim", 0) if batchable else None
    return y, TapePullback(trace, f, f_template, args, templates, out_template, batch_ndim)


def _copied_objects(value, template, out: list, captured: bool = False) -> list:
    """``(copy, its fields)`` for each object that boxing ``f`` copied (``with_fields``): its
    own for a method or a callable object, and those in its fields; and each list and dict a
    closure captured (``captured``: reached through a closure's cells, see ``_Held``), copied too.
    (A closure's boxed cells need no check: a captured name the function rebinds is not boxed,
    see `rebound_names`.)"""
    if not isinstance(template, _Structure):
        return out
    if type(value) is types.MethodType:
        value = value.__self__
    if captured and isinstance(value, (list, dict)) or not isinstance(value, (tuple, list, dict, types.FunctionType)):
        out.append((value, _field_values(value)))
    captured = captured or type(value) is types.FunctionType
    for key, index, child in template.children:
        if child is not None:
            _copied_objects(_field_of(value, key, index), child, out, captured)
    return out


_CACHED = functools.cached_property


def _field_values(obj) -> dict:
    """``{name: value}`` of the object's fields: its ``__dict__``, or a slotted dataclass's fields
    (a dict's items, a list's by index)."""
    if isinstance(obj, (list, dict)):
        return dict(obj) if isinstance(obj, dict) else dict(enumerate(obj))
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        return dict(d)
    return {name: getattr(obj, name) for name in fields_of(obj) or () if hasattr(obj, name)}


def _refuse_changed_fields(f, copied_objects: list) -> None:
    """Refuse ``f`` when it rebound, added or deleted a field of an object it ran on a copy of:
    the caller's object would silently keep its old state."""
    for copy_, fields in copied_objects:
        now = _field_values(copy_)
        changed = [name for name in now if name not in fields or now[name] is not fields[name]]
        changed += [name for name in fields if name not in now]
        # (a functools.cached_property computed for the first time stores its value: no state)
        changed = [name for name in changed if not isinstance(getattr(type(copy_), str(name), None), _CACHED)]
        if changed:
            what = "item" if isinstance(copy_, (list, dict)) else "field"
            raise DroppedDerivativeError(
                f"{callable_name(f)} sets the {what} {changed[0]!r} of its {type(copy_).__name__} object: the tape "
                f"engine differentiates a copy of the object (to track its {what}s), so the state it changes would "
                "be lost. Pass the state in as an argument and return the new state"
            )


def _is_number_or_array(y) -> bool:
    """Whether ``y`` is a number or an array, with ``ndim`` where it is not a Python number."""
    return isinstance(y, (float, complex, np.ndarray, np.number))


_PLAIN_CALLABLES = frozenset({types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial})


def _box_callable(f, trace: Trace):
    if fields_of(f) or is_namedtuple(f):
        return box_input(f, trace)
    return f, None


def _box_function(f, trace: Trace):
    """A closure with its captured numbers and arrays tracked, and a bound method with its object's
    fields (a container subclass's items) tracked, as a callable object's are, so that ``df``
    carries their cotangents as the source engine's does: ``Tangent[function]`` by captured name,
    the object's tangent for a method. A differentiation around this one (the rule for
    ``gradient``) needs them."""
    if type(f) is types.MethodType:
        owner = f.__self__
        if isinstance(owner, (Tracked, type, types.ModuleType)) or not (
            fields_of(owner) or isinstance(owner, (tuple, list, dict))
        ):
            return f, None
        boxed, template = box_input(owner, trace)
        return (f, None) if template is None else (types.MethodType(f.__func__, boxed), template)
    if type(f) is not types.FunctionType:
        return f, None
    # For a differentiation around this one that needs them (``CAPTURES_WANTED``: the rule for
    # `gradient` over the source engine, whose values are plain here), what the closure reaches
    # through its captures is tracked, as `df` must carry their cotangents; otherwise only its own
    # cells' numbers and arrays, as captured data the function converts (float() of a setting in
    # a captured dict) would be refused for a `df` no one reads.
    held = _Held(math.inf, through_closures=True) if CAPTURES_WANTED.get() else _Held(1)
    return held.closure(f, trace, top=True)


#: a function whose copy is being made (met again through its own cells: a recursive closure)
_PENDING = object()


class _Held:
    """Boxes what a closure captured: its float numbers and arrays, and those in the containers,
    objects and closures it captured (``params["w"]``, a closure calling another one, a callable
    object), to ``depth`` levels, in copies. A differentiation around this one (the rule for
    ``gradient`` over another engine, whose values are plain here) needs their cotangents in
    ``df``, at any depth (``math.inf``), as the source engine differentiates through all of them:
    a value it reached that were left untracked would read as a zero derivative. ``through_closures``
    (for that one): a captured closure is no level of its own, as the source engine follows
    closures calling closures to any depth (layers composed, a checkpoint's function calling
    another closure). A captured
    name the function rebinds keeps its cell (the caller's), an integer is a count, an outer
    tape's value is followed by that tape (unless ``CAPTURES_WANTED``: an engine between the two,
    the source engine's gradient run on the outer tape's values, needs its cotangent in ``df``
    too), and a callable with a rule of its own keeps its identity (a callable object whose rule
    is its class's, a ``cr.checkpoint`` wrapper, is copied: the copy takes the rule). A dual (a
    Hessian's) is tracked: its cotangent is the mixed term of the Hessian-vector product that
    differentiates this gradient inside another reverse engine's function. Each object is copied
    once (a dict two closures share stays one; a recursive closure calls its copy), its cotangent
    taken on the first path to it."""

    __slots__ = ("depth", "through_closures", "done", "fixups")

    def __init__(self, depth: float, through_closures: bool = False):
        self.depth = depth
        self.through_closures = through_closures
        self.done: dict = {}  # id -> (value, its copy, or _PENDING while its cells are boxed)
        self.fixups: dict = {}  # id of a pending function -> the new cells that must hold its copy

    def box(self, value, trace: Trace):
        """``(boxed, template)`` as ``box_input``'s, for a captured ``value``."""
        if isinstance(value, Tracked) and not CAPTURES_WANTED.get():
            return value, None
        kind = tracer._differentiable_kind(stood_for(value))
        if kind is not None:
            return box_input(value, trace) if kind == "f" else (value, None)
        is_function = type(value) is types.FunctionType
        if (self.depth == 0 and not (is_function and self.through_closures)) or isinstance(
            value, (str, bytes, type, types.ModuleType)
        ):
            return value, None
        found = self.done.get(id(value))
        if found is not None and found[0] is value:
            return (value if found[1] is _PENDING else found[1]), None
        if is_function:
            return self.closure(value, trace)
        if not isinstance(value, (tuple, list, dict)) and (
            (rrule.lookup(value) is not None and not rrule.rule_is_its_class(value))
            if callable(value)
            else not fields_of(value)
        ):
            # (a callable object with a rule of its own keeps its identity: the rule is by object; one
            # whose rule is its class's is copied, and the rule runs on the copy's tracked values,
            # which the trace follows through what the rule computes with them, `_through_hidden`; a
            # user's data object, a dataclass's instance, is copied with its fields tracked)
            return value, None
        self.done[id(value)] = (value, value)  # (a container holding itself: met again, untracked)
        self.depth -= 1
        try:
            boxed, template = _box_parts(value, trace, self)
        finally:
            self.depth += 1
        self.done[id(value)] = (value, boxed)
        return boxed, template

    def closure(self, f: types.FunctionType, trace: Trace, top: bool = False):
        """A copy of ``f`` with the cells whose values were boxed replaced, and its template
        (``top``: the function differentiated, whose rule was looked up already)."""
        cells = f.__closure__
        if not cells or (not top and _keeps_identity(f)):
            return f, None
        self.done[id(f)] = (f, _PENDING)
        level = 0 if self.through_closures else 1
        self.depth -= level
        rebound = rebound_names(f.__code__)
        new_cells, children = list(cells), []
        try:
            for i, (name, cell) in enumerate(zip(f.__code__.co_freevars, cells)):
                try:
                    value = cell.cell_contents
                except ValueError:  # a cell not yet filled (a function defined before the name it uses)
                    continue
                if name in rebound:  # rebinding must reach the caller's cell
                    continue
                found = self.done.get(id(value))
                if found is not None and found[1] is _PENDING and found[0] is value:  # a recursive closure
                    new_cells[i] = types.CellType()  # (filled below, once the copy it stands for is made)
                    self.fixups.setdefault(id(value), []).append(new_cells[i])
                    continue
                boxed, template = self.box(value, trace)
                if boxed is not value:
                    new_cells[i] = types.CellType(boxed)
                if template is not None:
                    children.append((name, i, template))
        finally:
            self.depth += level
        g = f
        if children:
            g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, tuple(new_cells))
            g.__kwdefaults__, g.__dict__ = f.__kwdefaults__, f.__dict__
        self.done[id(f)] = (f, g)
        for cell in self.fixups.pop(id(f), ()):
            cell.cell_contents = g
        return g, (_Structure(types.FunctionType, children) if children else None)


def _keeps_identity(f: types.FunctionType) -> bool:
    """Whether the closure ``f`` is not copied: a library's or chainrules' own, or one with a rule."""
    return (
        in_library_code(f.__code__)
        or f.__globals__.get("__name__", "").startswith("chainrules.")
        or rrule.lookup(f) is not None
    )
