"""Calls of Python callables that have rules, as the engines that run Python code see them.

The tape and forward engines run the user's Python on their own values (tracked values, dual
numbers) and see the *operations* on those values: operators, NumPy's protocols, array
methods. They never see the *call* of a Python function or of a callable object: Python gives
no hook that could replace what a call returns without changing the function object (its
``__code__``) or the calling code, and both belong to the user. So an engine looks a rule up
for the function it differentiates, but a call of another ruled callable inside it runs that
callable's body.

What an engine can do is notice. ``ignored_rule`` walks the stack from an operation on the
engine's values and finds a frame of a ruled callable whose arguments hold those values: the
engine is about to differentiate that callable's body in place of its rule, and raises
``IgnoredRuleError`` instead (for a class with a rule for its construction, the frame of its
``__init__`` making an instance of that very class). Not noticed: a ruled callable that does no
operation on the values it receives (it returns them unchanged), and calls made by rules
themselves (a rule computing its primal by calling its own function: an outer differentiation
of the rule runs that function's body, as it runs any code of the rule).

The set of watched code objects (``watched``) is recomputed when a rule is registered. Engines
walk from every operation only while it holds code of the user's (``watches_user_code``): until
a rule is registered for a Python function or callable object outside the installed libraries
and the standard library, an operation costs nothing more. The rules for library functions
(SciPy's, written in Python) are always registered; a call of one is still recognized when its
body converts a value being differentiated (``np.asarray``), which is where such a body fails,
and engines then raise the error of this module in place of the conversion's, or when the error
that ended the differentiation was raised in that body (``failed``: ``scipy.sparse.diags`` tests a
dual for a number and raises a ``ValueError`` of its own). A function wrapped
by a decorator (``functools.wraps``; SciPy's batching wrapper) runs the wrapper's code, which is
the registered function's own; a wrapper may rebind ``*args`` to a list or move keyword arguments
into other variables before it converts them, so a wrapper's locals are searched too. A ruled
library function that another one runs (``scipy.optimize.root_scalar`` runs ``newton``) is
reported as the call the user's code made, the outer one, at the user's line.
"""

from __future__ import annotations

import functools
import inspect
import os
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .active import ActiveValue
from .errors import ChainRulesError, callable_name, is_library, user_location
from .registry import RuleDispatcher, frule, rrule
from .tangents import object_fields

_FUNCTION = types.FunctionType
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the code that runs rules (the registry, the rule set, the engines): a ruled callable it calls
# is called by a rule, not by the user's function
_RULE_RUNNERS = tuple(
    os.path.join(_PACKAGE_DIR, d) for d in ("core", "rules", "reverse", "forward", "api.py", "checkpointing.py")
)
_MISSING = object()
#: a frame cache (see `ignored_rule`) is emptied when it holds more frames than this
CLEAN_FRAMES = 32


class IgnoredRuleError(ChainRulesError, TypeError):
    """A callable with a rule was called on an engine's values where that engine cannot use the rule.

    ``callable`` is the ruled callable, ``location`` the ``file:line`` of its call.
    """

    def __init__(self, message: str, f=None, location: str | None = None):
        self.callable = f
        self.location = location
        super().__init__(message)


# ----- what to watch ------------------------------------------------------------------------

_watched: dict[RuleDispatcher, tuple[int, dict]] = {}


def watched(dispatcher: RuleDispatcher) -> dict:
    """The code objects of the Python callables ``dispatcher`` has rules for, by ``id`` (hashing a
    code object hashes its bytecode), each mapped to ``(code, matchers)``: how a frame running it
    is recognized. Recomputed when a rule is registered.

    >>> import chainrules as cr
    >>> from chainrules.core.ruled_calls import watched
    >>> def softsign(x):
    ...     return x / (1 + abs(x))
    >>> cr.scalar_rule(softsign, lambda x: 1 / (1 + abs(x)) ** 2)
    >>> id(softsign.__code__) in watched(cr.rrule)
    True
    """
    cached = _watched.get(dispatcher)
    if cached is not None and cached[0] == dispatcher.version:
        return cached[1]
    table: dict = {}

    def watch(code, matcher):
        if code.co_filename.startswith(_RULE_RUNNERS):
            # chainrules' own callables (cr.gradient, cr.pullback have rules for the source
            # engine's nested differentiation): the tape and forward engines nest by themselves
            return
        matchers = table.setdefault(id(code), (code, []))[1]
        if matcher not in matchers:
            matchers.append(matcher)

    for key, for_instances, rules in dispatcher.registrations():
        if all(getattr(rule, "body_takes_engine_values", False) for rule in rules):
            continue  # its own code is right on an engine's values too (copy.deepcopy: they copy themselves)
        if for_instances:  # calls of the instances of a class (and of its subclasses)
            for cls in _with_subclasses(key):
                code = _call_code(cls)
                if code is not None:
                    watch(code, ("instance", None))
        elif type(key) is _FUNCTION:
            watch(key.__code__, ("function", key))
        elif type(key) is types.MethodType and type(key.__func__) is _FUNCTION:
            watch(key.__func__.__code__, ("method", key))
        elif not isinstance(key, type):  # a callable object registered by itself
            code = _call_code(type(key))
            if code is not None:
                watch(code, ("instance", None))
        else:  # constructing a class (a rule registered with functor=False): its ``__init__`` runs
            code = _method_code(key, "__init__")
            if code is not None:
                watch(code, ("class", key))
    table = {key: (code, tuple(matchers)) for key, (code, matchers) in table.items()}
    _watched[dispatcher] = (dispatcher.version, table)
    return table


_user_code_watched: dict = {}


def watches_user_code(dispatcher: RuleDispatcher) -> bool:
    """Whether ``watched(dispatcher)`` holds code outside the installed libraries and the standard
    library: then engines check every operation (see the module docstring)."""
    cached = _user_code_watched.get(dispatcher)
    if cached is not None and cached[0] == dispatcher.version:
        return cached[1]
    answer = any(not is_library(code.co_filename) for code, _ in watched(dispatcher).values())
    _user_code_watched[dispatcher] = (dispatcher.version, answer)
    return answer


def _call_code(cls: type):
    return _method_code(cls, "__call__")


def _method_code(cls: type, name: str):
    """The code of the Python function that is ``cls``'s method ``name`` (inherited or its own), or None."""
    for klass in cls.__mro__:
        method = vars(klass).get(name)
        if method is not None:
            return method.__code__ if type(method) is _FUNCTION else None
    return None


def _with_subclasses(cls: type) -> list:
    found, todo = [], [cls]
    while todo:
        klass = todo.pop()
        if klass not in found:
            found.append(klass)
            todo.extend(type.__subclasses__(klass))
    return found


_rule_codes: list = [None, None, {}]


def _codes_of_rules() -> dict:
    """The code objects of the rules written outside chainrules, and of the functions nested in
    them (pullbacks), by ``id``: a frame running one of them is a rule at work."""
    if _rule_codes[0] == rrule.version and _rule_codes[1] == frule.version:
        return _rule_codes[2]
    codes: dict = {}
    for dispatcher in (rrule, frule):
        for _, _, rules in dispatcher.registrations():
            for rule in rules:
                while hasattr(rule, "func") and not hasattr(rule, "__code__"):  # functools.partial
                    rule = rule.func
                code = getattr(rule, "__code__", None)
                if isinstance(code, types.CodeType) and not code.co_filename.startswith(_RULE_RUNNERS):
                    _add_nested(code, codes)
    _rule_codes[:] = [rrule.version, frule.version, codes]
    return codes


def _add_nested(code: types.CodeType, codes: dict) -> None:
    codes[id(code)] = code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _add_nested(const, codes)


# ----- finding a ruled call on the stack ----------------------------------------------------


def ignored_rule(
    dispatcher: RuleDispatcher,
    frame,
    clean: dict | None,
    owns: Callable[[Any, Any], bool],
    key: Any,
    primal: Callable[[Any], Any],
    entry=None,
    held_anywhere: bool = False,
    through_callables: bool = False,
    users_only: bool = False,
):
    """``(found, clean)``: a call of a callable with a rule in ``dispatcher`` that is running on
    the stack from ``frame`` up to ``entry`` and received values for which ``owns(value, key)``
    is true, as ``(callable, its frame)``, or ``None``.

    ``entry`` is the frame in which the engine started the differentiation that ``key`` stands
    for: the frames above it were called before its values existed, so the walk stops there
    (``None``: at the top of the stack).

    ``owns`` is asked about the engine's own values (``ActiveValue`` instances) found in the
    arguments, their containers and fields; ``primal(value)`` gives the plain value the rule
    lookup sees. ``clean`` caches frames of the user's code already walked past for the same
    ``key`` (a dict from ``id`` to frame, or ``None``): the walk stops at one of them, so an
    engine that walks from every operation pays for a new frame once, and otherwise for the
    frames of chainrules between the operation and the user's code. The caller keeps the
    returned dict and drops it when its differentiation ends (it holds frames alive).
    ``held_anywhere``: the values may be in any of the callable's variables, not only in its
    arguments (a value its code computed from them, or from what a function argument closes over).
    ``through_callables``: only the values its callable arguments hold count (see ``given_to``).
    ``users_only``: only callables of the user's code count (not a library's, see ``RuledCallWatch.check``).
    """
    f = frame
    while f is not None and f is not entry and _runs_rules(f.f_code):  # to the user's code
        f = f.f_back
    if f is None or f is entry or (clean is not None and id(f) in clean):
        return None, clean
    if clean is None:
        clean = {}
    table = watched(dispatcher)
    passed = []
    while f is not None and f is not entry:
        if id(f) in clean:
            break
        code = f.f_code
        ruled = table.get(id(code))
        if ruled is not None and ruled[0] is code and not (users_only and in_library_code(code)):
            found = _ruled_call(dispatcher, f, ruled[1], owns, key, primal, held_anywhere, through_callables)
            found = found and _called_by_user(dispatcher, found, primal)
            if found is not None:
                return found, clean
        if not code.co_flags & _RESUMABLE and not _runs_rules(code):
            passed.append(f)  # not a generator's frame: that one is resumed from anywhere
        f = f.f_back
    if len(clean) + len(passed) > CLEAN_FRAMES:
        clean.clear()
    for f in passed[:CLEAN_FRAMES]:
        clean[id(f)] = f
    return None, clean


#: ids of code objects of chainrules itself met so far (see ``_RULE_RUNNERS``), and the code
#: objects themselves, kept so that the ids stay theirs (``RuledCallWatch.check`` skips such
#: frames by id before asking its cache of clean frames)
RULE_RUNNER_CODE: set = set()
_rule_runner_code: list = []
_user_code: dict = {}  # id(code) -> code of the user's code met so far (bounded: see _runs_rules)


def _runs_rules(code: types.CodeType) -> bool:
    """Whether ``code`` is chainrules' own (registry, rules, engines), remembered by id."""
    key = id(code)
    if key in RULE_RUNNER_CODE:
        return True
    if _user_code.get(key) is code:
        return False
    if code.co_filename.startswith(_RULE_RUNNERS):
        RULE_RUNNER_CODE.add(key)
        _rule_runner_code.append(code)
        return True
    if len(_user_code) > 10_000:  # code made at run time (exec) comes and goes
        _user_code.clear()
    _user_code[key] = code
    return False


def _ruled_call(dispatcher, frame, matchers, owns, key, primal, held_anywhere=False, through_callables=False):
    positional, keywords = _arguments(frame)
    given = (*positional, *keywords)
    if through_callables:
        given = [v for v in given if given_to(v) is not None]
    if not any(_holds(v, owns, key, 3) for v in given) and not (
        # a decorator's wrapper may move its arguments into other variables before it fails
        # (SciPy's batching wrapper pops array keywords into a list): a wrapper's locals count
        (held_anywhere or any(kind == "function" and hasattr(fn, "__wrapped__") for kind, fn in matchers))
        and any(_holds(v, owns, key, 3) for v in frame.f_locals.values())
    ):
        return None
    return _ruled_frame(dispatcher, frame, matchers, primal, positional)


def _called_by_user(dispatcher, found: tuple, primal) -> tuple | None:
    """``found`` (a ruled call, ``(callable, frame)``) or, where a library's code made that call, the
    outermost ruled call among the library's frames around it: the call the user's code made, whose
    rule the user meant and whose line the error names (``scipy.optimize.root_scalar`` runs
    ``newton``; the values reach ``newton`` only through the function given to ``root_scalar``).
    ``None`` where a rule made that outermost call (computing its primal, as ``_ruled_frame`` says)."""
    table = watched(dispatcher)
    frame = found[1].f_back
    while frame is not None and in_library_code(frame.f_code):
        ruled = table.get(id(frame.f_code))
        if ruled is not None and ruled[0] is frame.f_code:
            if _called_by_rule(frame):
                return None
            found = _ruled_frame(dispatcher, frame, ruled[1], primal, _arguments(frame)[0]) or found
        frame = frame.f_back
    return found


def _ruled_frame(dispatcher, frame, matchers, primal, positional: list):
    """``(callable, frame)`` where ``frame`` runs a callable that ``matchers`` recognize and that has a
    rule for its arguments (``positional``), the user's call of it (not a rule's); else ``None``."""
    if _called_by_rule(frame):
        return None  # a rule computing its primal: an outer differentiation of the rule
    for kind, registered in matchers:
        if kind == "function":
            if not _is_this_function(registered, frame):
                continue
            candidate, args = registered, positional
        elif kind == "method":
            if not positional or positional[0] is not registered.__self__:
                continue
            candidate, args = registered, positional[1:]
        elif kind == "class":  # the instance being made is of this very class (an inherited __init__ serves others)
            if not positional or type(positional[0]) is not registered:
                continue
            candidate, args = registered, positional[1:]
        else:  # an instance of a class with a rule for calls of its instances
            if not positional:
                continue
            candidate, args = positional[0], positional[1:]
        if dispatcher.lookup(candidate, tuple(primal(a) for a in args)) is not None:
            return candidate, frame
    return None


def _called_by_rule(frame) -> bool:
    """Whether chainrules or a rule made the call that ``frame`` runs."""
    caller = frame.f_back
    return caller is not None and (
        caller.f_code.co_filename.startswith(_RULE_RUNNERS) or id(caller.f_code) in _codes_of_rules()
    )


_library_code: dict = {}  # id(code) -> (code, whether it is a library's), bounded as _user_code


def in_library_code(code: types.CodeType) -> bool:
    """Whether ``code`` is an installed library's or the standard library's (not chainrules'), remembered by id."""
    hit = _library_code.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    if len(_library_code) > 10_000:
        _library_code.clear()
    answer = is_library(code.co_filename)
    _library_code[id(code)] = (code, answer)
    return answer


def _arguments(frame) -> tuple[list, list]:
    """The values of a frame's parameters: positional ones (``*args`` spread) and keyword ones."""
    code = frame.f_code
    names = code.co_varnames
    local = frame.f_locals
    n_positional = code.co_argcount
    n_keyword = code.co_kwonlyargcount
    positional = [local.get(name) for name in names[:n_positional]]
    keywords = [local.get(name) for name in names[n_positional : n_positional + n_keyword]]
    i = n_positional + n_keyword
    if code.co_flags & inspect.CO_VARARGS:
        extra = local.get(names[i], ())
        positional.extend(extra if isinstance(extra, (tuple, list)) else ())
        i += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        extra = local.get(names[i], {})
        keywords.extend(extra.values() if isinstance(extra, dict) else ())
    return positional, keywords


def _holds(value, owns, key, depth: int) -> bool:
    """Whether ``value`` is, or holds within ``depth`` levels (see ``_held_by``), a value ``owns``."""
    return any(owns(v, key) for v in engine_values_in(value, depth))


def holds_engine_values(value) -> bool:
    """Whether ``value`` is an engine's value or holds one (see ``_held_by``), within three levels.

    >>> from chainrules.forward import Dual, Tag
    >>> def times(k):
    ...     return lambda x: k * x
    >>> holds_engine_values(times(Dual(2.0, 1.0, Tag()))), holds_engine_values([1.0, (2.0,)])
    (True, False)
    """
    return _holds(value, _any_engine, None, 3)


def _any_engine(value, key) -> bool:
    return True


def engine_values_in(value, depth: int = 3) -> Iterator[ActiveValue]:
    """The engines' values that ``value`` is or holds (see ``_held_by``), within ``depth`` levels,
    as ``holds_engine_values`` looks for them.

    >>> from chainrules.forward import Dual, Tag
    >>> def times(k):
    ...     return lambda x: k * x
    >>> [type(v).__name__ for v in engine_values_in([times(Dual(2.0, 1.0, Tag())), 3.0])]
    ['Dual']
    """
    if isinstance(value, ActiveValue):
        yield value
    elif depth > 0 and not isinstance(value, (str, bytes, type, types.ModuleType)):
        for v in _held_by(value):
            yield from engine_values_in(v, depth - 1)


def _held_by(value) -> Iterable:
    """What ``value`` holds: a container's items, an object's fields (a model's parameters), and
    what a callable was given before its call, which its call computes with as with its
    arguments (a solver's equation closing over the values being differentiated): a function's
    captured values and defaults, a ``functools.partial``'s function and arguments, a bound
    method's object.

    >>> def times(k):
    ...     return lambda x, n=3: k * x**n
    >>> list(_held_by(times(2.0)))
    [2.0, 3]
    """
    if isinstance(value, (tuple, list, set, frozenset)):
        return value
    if isinstance(value, dict):
        return value.values()
    given = given_to(value)
    if given is not None:
        return given
    return object_fields(value).values() if hasattr(value, "__dict__") or hasattr(type(value), "__slots__") else ()


def given_to(value) -> tuple | None:
    """What the callable ``value`` was given before its call, which its call computes with as
    with its arguments: a function's captured values (its filled cells) and defaults, a
    ``functools.partial``'s function and arguments, a bound method's object and function;
    ``None`` for any other value.

    >>> def times(k):
    ...     return lambda x, n=3: k * x**n
    >>> given_to(times(2.0)), given_to(2.0)
    ((2.0, 3), None)
    """
    if type(value) is _FUNCTION:
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # a name not yet assigned holds nothing
                continue
        return (*cells, *(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values())
    if type(value) is types.MethodType:
        return value.__self__, value.__func__
    if isinstance(value, functools.partial):
        return value.func, *value.args, *value.keywords.values()
    return None


def _is_this_function(fn, frame) -> bool:
    """Whether ``frame`` runs ``fn`` itself, not another function made from the same code (a
    closure made by the same ``def`` in another call, with other captured values)."""
    if fn.__globals__ is not frame.f_globals:
        return False
    cells = fn.__closure__
    if cells:
        local = frame.f_locals
        for name, cell in zip(fn.__code__.co_freevars, cells):
            try:
                captured = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            if local.get(name, _MISSING) is not captured:
                return False
    return True


# ----- what an engine holds -----------------------------------------------------------------


class RuledCallWatch:
    """One engine's watch for calls of ruled Python callables on its values.

    ``owns(value, owner)`` says whether an engine value belongs to ``owner``, the object that
    stands for one differentiation (a trace, a tag); ``primal(value)`` is the plain value a rule
    lookup sees. ``owner`` carries two attributes the watch reads and writes: ``entry``, the
    frame that started the differentiation (the walk stops there), and ``clean_frames``, the
    cache of frames walked past (``None`` to start; the engine sets both to ``None`` when the
    differentiation ends). ``engine`` names the engine in errors; ``advice`` ends them and may
    name the callable as ``{name}``.

    >>> import sys, types
    >>> import chainrules as cr
    >>> from chainrules.core.active import ActiveValue
    >>> class Box(ActiveValue):
    ...     def __init__(self, owner, value):
    ...         self.owner, self.value = owner, value
    >>> watch = RuledCallWatch(cr.rrule, "a toy engine", "Call {name} elsewhere.",
    ...                        lambda v, owner: v.owner is owner, lambda v: v.value)
    >>> def twice(x):
    ...     watch.check(owner, sys._getframe(0))  # what an engine does at an operation on x
    ...     return x
    >>> cr.scalar_rule(twice, lambda x: 2.0)
    >>> owner = types.SimpleNamespace(entry=None, clean_frames=None)
    >>> watch.active()
    True
    >>> try:
    ...     twice(Box(owner, 1.0))
    ... except IgnoredRuleError as err:
    ...     print(str(err).split(":")[0])
    chainrules.core.ruled_calls.twice has a rule that a toy engine cannot use here
    """

    __slots__ = ("dispatcher", "engine", "advice", "owns", "primal", "version", "on")

    def __init__(
        self,
        dispatcher: RuleDispatcher,
        engine: str,
        advice: str,
        owns: Callable[[Any, Any], bool],
        primal: Callable[[Any], Any],
    ):
        self.dispatcher = dispatcher
        self.engine = engine
        self.advice = advice
        self.owns = owns
        self.primal = primal
        #: the dispatcher's version ``on`` was computed for; an engine's hot path reads the two
        #: attributes itself (``if watch.version != rrule.version: watch.refresh()``, then
        #: ``if watch.on: watch.check(...)``), which costs less than calling ``active()``
        self.version = -1
        self.on = False

    def refresh(self) -> None:
        """Recompute ``on`` for the dispatcher's current rules."""
        self.on = watches_user_code(self.dispatcher)
        self.version = self.dispatcher.version

    def active(self) -> bool:
        """Whether operations must be checked: a callable of the user's has a rule (``watches_user_code``)."""
        if self.version != self.dispatcher.version:
            self.refresh()
        return self.on

    def check(self, owner, frame) -> None:
        """Raise ``IgnoredRuleError`` if, from ``frame`` up, a ruled callable of the user's code is running
        on ``owner``'s values. (A library's is found where its body converts, branches on or fails on
        them, whether or not a callable of the user's has a rule: see ``refused``, ``branched``, ``failed``.)"""
        while frame is not None and id(frame.f_code) in RULE_RUNNER_CODE:  # chainrules' own frames
            frame = frame.f_back
        clean = owner.clean_frames
        if clean is not None and id(frame) in clean:
            return  # the common case: a frame of the user's code already walked past
        found, owner.clean_frames = ignored_rule(
            self.dispatcher, frame, clean, self.owns, owner, self.primal, owner.entry, users_only=True
        )
        if found is not None:
            raise ignored_rule_error(found[0], found[1], self.engine, self.advice)

    def branched(self, owner, frame) -> IgnoredRuleError | None:
        """At a comparison or truth test of ``owner``'s value in ``frame``: the ``IgnoredRuleError``
        to raise where code branches on it inside a call of a callable with a reverse rule, whose
        iterations the engine would otherwise differentiate in place of the rule, silently, as no
        conversion shows it: a library's code inside one of the rule set's (an iterative solver
        such as ``scipy.optimize.newton``), and, for an engine that watches other rules than
        reverse ones (forward mode), the user's code inside a call of the user's own callable that
        received the values through a function passed to it (a solver's equation: a bisection
        reaches its result through comparisons alone). ``None`` elsewhere: the user's code branches
        freely, and a frame of its code costs a lookup or two while no such rule is registered."""
        if owner is None:
            return None
        if in_library_code(frame.f_code):
            found, _ = ignored_rule(rrule, frame, None, self.owns, owner, self.primal, owner.entry, held_anywhere=True)
        elif self.dispatcher is not rrule and watches_user_code(rrule):  # (the tape's own check sees these)
            found, _ = ignored_rule(
                rrule, frame, None, self.owns, owner, self.primal, owner.entry, through_callables=True
            )
        else:
            return None
        return None if found is None else ignored_rule_error(found[0], found[1], self.engine, self.advice)

    def refused(self, owner, frame, error: Exception) -> Exception:
        """The error for a refused conversion of ``owner``'s value at ``frame``: ``error``, or, when
        the conversion happens in the body of a ruled callable that received the value (a library
        function's, which ``active`` does not watch at every operation), ``IgnoredRuleError``
        caused by ``error``."""
        if owner is None or not watched(self.dispatcher):
            return error
        # (anywhere in its variables: a library's code may have rebound its parameters before it converts,
        # scipy.stats' `args, loc, scale = self._parse_args(*args, **kwds)`)
        found, _ = ignored_rule(
            self.dispatcher, frame, None, self.owns, owner, self.primal, owner.entry, held_anywhere=True
        )
        if found is None:
            return error
        ruled = ignored_rule_error(found[0], found[1], self.engine, self.advice)
        ruled.__cause__ = error
        return ruled

    def failed(self, owner, error: Exception) -> IgnoredRuleError | None:
        """The ``IgnoredRuleError`` for ``error``, which ended a differentiation of ``owner``'s,
        where it was raised in the body of a ruled callable that received ``owner``'s values (a
        library function's: ``scipy.sparse.diags`` indexes a dual and tests it for a number, and
        fails with an error of its own before anything converts it); ``None`` elsewhere, and for
        chainrules' own errors, which say already what failed."""
        if owner is None or isinstance(error, ChainRulesError) or not watched(self.dispatcher):
            return None
        tb = error.__traceback__
        if tb is None:
            return None
        frame = tb.tb_frame
        while tb.tb_next is not None:
            tb = tb.tb_next
            if tb.tb_frame.f_back is not None:  # (the frames of compiled code, Cython's, have no caller to walk)
                frame = tb.tb_frame
        found, _ = ignored_rule(self.dispatcher, frame, None, self.owns, owner, self.primal, owner.entry)
        return None if found is None else ignored_rule_error(found[0], found[1], self.engine, self.advice)


# ----- the error ----------------------------------------------------------------------------


def describe(f) -> str:
    """How an error names a ruled callable: its qualified name, or ``the C instance`` for a callable object."""
    if isinstance(f, (types.FunctionType, types.MethodType, type)):
        return callable_name(f)
    return f"the {callable_name(type(f))} instance"


def call_site(frame) -> str | None:
    """``file:line`` of the call that made ``frame``; where a library's code made it (SciPy's
    ``interpn`` building a ``RegularGridInterpolator``), with the user's line that called into it."""
    caller = frame.f_back
    if caller is None:
        return None
    site = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    user = user_location(frame=caller) if in_library_code(caller.f_code) else None
    return site if user is None else f"{site} (in library code called at {user})"


def ignored_rule_error(f, frame, engine: str, advice: str) -> IgnoredRuleError:
    """The error an engine raises for a call of ``f`` (running in ``frame``) whose rule it cannot
    use; ``advice`` may name the callable as ``{name}``.

    >>> import sys
    >>> def g(x):
    ...     return ignored_rule_error(g, sys._getframe(0), "the tape engine", "Call {name} elsewhere.")
    >>> str(g(1.0)).split(":")[0]
    'chainrules.core.ruled_calls.g has a rule that the tape engine cannot use here'
    """
    where = call_site(frame)
    name = describe(f)
    return IgnoredRuleError(
        f"{name} has a rule that {engine} cannot use here: it was called{' at ' + where if where else ''} with "
        f"values being differentiated, and {engine} sees operations on values, never calls of Python "
        f"functions, so it would differentiate the body of {name} in place of its rule. " + advice.format(name=name),
        f,
        where,
    )
