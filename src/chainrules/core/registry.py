"""The rule registry: ``rrule`` and ``frule`` dispatchers, ``scalar_rule``, ``non_differentiable``, ``opt_out``.

One registry per direction, one lookup. A rule is registered for a callable, optionally only
for some positional argument types (``isinstance``; the most specific match wins). Lookup is by
the callable object itself (by identity for unhashable callables) and, for callable instances
(a model object with ``__call__``), by its class. Every engine consumes these two dispatchers;
no engine keeps a derivative table of its own.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from types import MethodDescriptorType, MethodType
from typing import Any

import numpy as np

from .active import ActiveValue, forget_code_owners, stood_for
from .projection import carries_batch, conj, match_input, match_input_batch
from .tangents import AbstractZero, NoTangent, ZeroTangent, unthunk

_NO = NoTangent()
_ZERO = ZeroTangent()


class _OptOut:
    """Marks argument types for which a callable has no rule, so the engine looks inside it."""

    def __repr__(self) -> str:
        return "OPT_OUT"


OPT_OUT = _OptOut()


def _specificity(types: tuple[type, ...]) -> int:
    return sum(len(t.__mro__) for t in types)


class _Entries:
    """The rules of one callable, most specific first, with the choice cached by argument types."""

    __slots__ = ("typed", "untyped", "_depth", "_chosen")

    def __init__(self):
        self.typed: list[tuple[tuple[type, ...], Any]] = []
        self.untyped: Any = None
        self._depth = 0
        self._chosen: dict[tuple[type, ...], Any] = {}

    def add(self, types: tuple[type, ...], rule) -> None:
        if not types:
            self.untyped = rule
        else:
            self.typed = [(t, r) for t, r in self.typed if t != types]
            self.typed.append((types, rule))
            self.typed.sort(key=lambda entry: -_specificity(entry[0]))
            self._depth = max(len(t) for t, _ in self.typed)
        self._chosen = {}

    def remove(self, types: tuple[type, ...]) -> bool:
        """Take out the rule registered for exactly ``types`` (``()``: the untyped one); whether there was one."""
        if not types:
            found, self.untyped = self.untyped is not None, None
        else:
            kept = [(t, r) for t, r in self.typed if t != types]
            found, self.typed = len(kept) < len(self.typed), kept
            self._depth = max((len(t) for t, _ in kept), default=0)
        self._chosen = {}
        return found

    def select(self, args: tuple):
        # isinstance depends on the types only: the choice for these argument types is cached
        n = len(args)
        if self._depth == 1 and n:
            key = type(args[0])
        elif self._depth == 2 and n >= 2:
            key = (type(args[0]), type(args[1]))
        else:
            key = tuple(map(type, args[: self._depth]))
        chosen = self._chosen.get(key, self)
        if chosen is self:
            chosen = self._chosen[key] = self._choose(args)
        if chosen is _BY_VALUE:
            # an engine's values (a dual in a Hessian) that no rule is typed on: the rule typed on
            # the values they stand for (a user's rule for float), chosen anew each call
            return self.choose_for_classes(
                tuple(type(stood_for(a)) if isinstance(a, ActiveValue) else type(a) for a in args[: self._depth])
            )
        return chosen

    def _choose(self, args: tuple):
        classes = tuple(map(type, args[: self._depth]))
        chosen = self.choose_for_classes(classes)
        if chosen is self.untyped and self.typed and any(issubclass(c, ActiveValue) for c in classes):
            return _BY_VALUE  # (which typed rule fits depends on the values stood for, not these classes)
        return chosen

    def choose_for_classes(self, classes: tuple[type, ...]):
        """The rule for arguments of these classes: the first (most specific) typed one they
        fit, else the untyped one (None when there is none, ``OPT_OUT`` for an opt-out)."""
        for types, rule in self.typed:
            if len(classes) >= len(types) and all(issubclass(c, t) for c, t in zip(classes, types)):
                return rule
        return self.untyped


#: (``_Entries._choose``: the rule depends on the values an engine's values stand for, not their classes)
_BY_VALUE = object()


def _instances_are_callable(cls: type) -> bool:
    return any("__call__" in vars(k) for k in cls.__mro__ if k not in (object, type))


#: rule modules waiting for their library to be imported: {library module: [rule modules]}
_DEFERRED: dict[str, list[str]] = {}


def defer_rules(library: str, rules_module: str) -> None:
    """Import ``rules_module`` only once ``library`` has been imported, by anyone: the rules of a
    library that is slow to import (``scipy.stats``) cost nothing to a program that never uses it.
    A lookup that finds no rule loads the modules whose library has appeared since."""
    if library in sys.modules:
        importlib.import_module(rules_module)
    else:
        _DEFERRED.setdefault(library, []).append(rules_module)


def load_deferred_rules(everything: bool = False) -> bool:
    """Import the deferred rule modules whose library is imported (``everything``: all of them,
    importing their libraries); whether any was."""
    ready = [lib for lib in _DEFERRED if everything or lib in sys.modules]
    for library in ready:
        for rules_module in _DEFERRED.pop(library):
            importlib.import_module(rules_module)
    return bool(ready)


class RuleDispatcher:
    """``rrule`` or ``frule``: look a rule up and run it; ``.register`` adds one.

    Calling the dispatcher returns what the rule returns, or ``None`` when there is no rule.
    """

    def __init__(self, name: str, doc: str):
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc
        self._by_key: dict[Any, _Entries] = {}  # hashable callables (and classes: construction)
        self._by_id: dict[int, tuple[Any, _Entries]] = {}  # unhashable callables, kept alive here
        self._for_instances: dict[type, _Entries] = {}  # calls of instances of a class
        self._instance_cache: dict[type, _Entries | None] = {}
        #: incremented on every registration, so that engines may cache lookups
        self.version = 0

    # -- registration --
    def register(self, f, *types: type, functor: bool | None = None, batched: bool = False) -> Callable:
        """Decorator: register ``rule`` for calls of ``f`` (optionally only for these argument types).

        For a class ``f`` whose instances are callable (it defines ``__call__``), the rule is for
        calls of its instances (``functor=True``) and receives the instance first; pass
        ``functor=False`` to register a rule for constructing ``f`` instead.

        ``batched=True`` declares that the rule handles a *batch* of tangents at once: a tangent
        whose ``ndim`` is one more than its primal's carries a leading batch axis (one tangent
        per row), and the rule returns its output tangent(s) with the same leading axis. For an
        ``frule`` that is the tangents it receives; for an ``rrule`` the cotangent its pullback
        receives. Engines call a rule without the flag once per batch element instead. The flag
        is read back as ``rule.batched``. A batched rule whose pullback cannot take a batch for
        some particular call (an argument type it does not cover) calls ``decline_batch()``
        while its primal runs.

        >>> import chainrules as cr
        >>> def double(x):
        ...     return 2 * x
        >>> @cr.rrule.register(double)
        ... def rrule_double(x):
        ...     def double_pullback(dy):
        ...         return cr.NoTangent(), 2 * dy
        ...     return double(x), double_pullback
        >>> y, back = cr.rrule(double, 3.0)
        >>> y, back(1.0)
        (6.0, (NoTangent(), 2.0))
        """
        if not callable(f):
            raise TypeError(f"{self.__name__}.register({f!r}): rules are for callables, got a {type(f).__name__}")
        for t in types:
            if not isinstance(t, type):
                raise TypeError(f"{self.__name__}.register({f!r}, ...): argument types must be classes, got {t!r}")

        def decorator(rule):
            if rule is not OPT_OUT:
                rule.batched = batched
            self._entries_for(f, functor, create=True).add(tuple(types), rule)
            self.version += 1
            self._instance_cache.clear()
            forget_code_owners()
            return rule

        return decorator

    def unregister(self, f, *types: type, functor: bool | None = None) -> None:
        """Take out the rule registered for ``f`` with exactly these argument types (none: the
        rule for all arguments), as ``register`` put it in; a ``LookupError`` if there is none.
        Rules registered for other types stay.

        >>> import chainrules as cr
        >>> def triple(x):
        ...     return 3 * x
        >>> @cr.frule.register(triple, float)
        ... def frule_triple(tangents, x):
        ...     return triple(x), 3 * tangents[1]
        >>> cr.frule.unregister(triple, float)
        >>> cr.frule((cr.NoTangent(), 1.0), triple, 2.0) is None
        True
        """
        entries = self._entries_for(f, functor)
        if entries is None or not entries.remove(tuple(types)):
            kinds = ", ".join(t.__name__ for t in types) or "all arguments"
            raise LookupError(f"{self.__name__}.unregister: no rule for {f!r} registered for ({kinds})")
        self.version += 1
        self._instance_cache.clear()
        forget_code_owners()

    def _entries_for(self, f, functor: bool | None, create: bool = False) -> _Entries | None:
        if isinstance(f, type) and (functor or (functor is None and _instances_are_callable(f))):
            table, key = self._for_instances, f
        else:
            try:
                hash(f)
            except TypeError:  # an unhashable callable: keyed by identity, kept alive by the table
                if create:
                    return self._by_id.setdefault(id(f), (f, _Entries()))[1]
                pair = self._by_id.get(id(f))
                return pair[1] if pair else None
            table, key = self._by_key, f
        entries = table.get(key)
        if entries is None and create:
            entries = table[key] = _Entries()
        return entries

    # -- lookup --
    def lookup(self, f, args: tuple = ()) -> Callable | None:
        """The rule for ``f(*args)`` as a callable taking the arguments (and, for ``frule``, the
        tangents first), or ``None``. For a callable instance the rule is bound to the instance.

        A bound method ``m.q`` without a rule of its own takes the rule of its function ``M.q``,
        called with ``m`` first. The method stands for its object: where ``M.q``'s pullback returns
        ``(d_function, d_self, dx1, ...)``, ``m.q``'s returns ``(d_self, dx1, ...)``, and ``m.q``'s
        tangent ``(d_self, dx1, ...)`` reaches ``M.q``'s frule as ``(NoTangent(), d_self, dx1, ...)``.
        So every engine given ``m.q`` uses the rule, as for a call ``m.q(x)`` in the source engine.
        """
        entries = self._own_entries(f)
        if entries is not None:
            rule = entries.select(args) if entries.typed else entries.untyped
            if rule is not None:
                return None if rule is OPT_OUT else rule
        elif _DEFERRED and load_deferred_rules():  # the library has been imported since: its rules now exist
            return self.lookup(f, args)
        if type(f) is MethodType:  # m.q: the rule of M.q, called with m first
            rule = self.lookup(f.__func__, (f.__self__, *args))
            return None if rule is None else self._bind_method(rule, f.__self__)
        instance_entries = self._instance_entries(f)
        if instance_entries is None:
            return None
        rule = instance_entries.select(args) if instance_entries.typed else instance_entries.untyped
        if rule is None or rule is OPT_OUT:
            return None
        return self._bind_instance(rule, f)

    def _own_entries(self, f) -> _Entries | None:
        """The rules registered for the callable ``f`` itself (by value, or by identity)."""
        if type(f).__hash__ is None:  # e.g. a dataclass instance: keyed by identity
            pair = self._by_id.get(id(f))
            return pair[1] if pair else None
        try:
            return self._by_key.get(f)
        except TypeError:  # hashable type, unhashable contents: keyed by identity too
            pair = self._by_id.get(id(f))
            return pair[1] if pair else None

    def _instance_entries(self, f) -> _Entries | None:
        """The rules registered for the calls of instances of ``f``'s class (``register(C)``)."""
        if isinstance(f, type) or not self._for_instances:
            return None
        cls = type(f)
        entries = self._instance_cache.get(cls, False)
        if entries is False:
            entries = next((self._for_instances[k] for k in cls.__mro__ if k in self._for_instances), None)
            self._instance_cache[cls] = entries
        return entries

    def rule_is_its_class(self, f) -> bool:
        """Whether the rule for calls of ``f`` is its class's, for the calls of its instances
        (``register(C)`` for a class ``C`` with ``__call__``), and none is registered for ``f`` itself:
        a copy of ``f`` (with other fields) takes the same rule.

        >>> import chainrules as cr
        >>> rrule.rule_is_its_class(cr.checkpoint(abs)), rrule.rule_is_its_class(abs)
        (True, False)
        """
        own = self._own_entries(f)
        if own is not None and _has_real_rule(own):
            return False
        entries = self._instance_entries(f)
        return entries is not None and _has_real_rule(entries)

    def _bind_instance(self, rule, f):
        bound = functools.partial(rule, f)
        bound.batched = rule.batched  # (the rule's flag, read by engines, holds for its bound form)
        return bound

    def _bind_method(self, rule, owner):
        # the rule of the function M.q pulls back (d_function, d_self, d_x, ...); the bound
        # method m.q stands for its object, so d_self is the callable's cotangent
        def bound_method_rrule(*args, **kwargs):
            y, pullback = rule(owner, *args, **kwargs)

            def bound_method_pullback(dy):
                return pullback(dy)[1:]

            return y, bound_method_pullback

        bound_method_rrule.batched = getattr(rule, "batched", False)
        return bound_method_rrule

    def has_rule(self, f, *args) -> bool:
        """Whether ``f(*args)`` has a rule."""
        return self.lookup(f, args) is not None

    def registrations(self) -> list[tuple[Any, bool, list]]:
        """``(key, for_instances, rules)`` for every registration with at least one rule (opt-outs
        left out): ``key`` is the callable, or with ``for_instances`` the class whose instances'
        calls the rules are for.

        >>> import chainrules as cr
        >>> def halve(x):
        ...     return x / 2
        >>> cr.scalar_rule(halve, lambda x: 0.5)
        >>> [(instances, len(rules)) for key, instances, rules in cr.rrule.registrations() if key is halve]
        [(False, 1)]
        """
        out = []
        for for_instances, pairs in (
            (False, self._by_key.items()),
            (False, self._by_id.values()),
            (True, self._for_instances.items()),
        ):
            for key, entries in pairs:
                rules = [r for r in (entries.untyped, *(r for _, r in entries.typed)) if r not in (None, OPT_OUT)]
                if rules:
                    out.append((key, for_instances, rules))
        return out

    def registered(self) -> list:
        """Every callable (and class of callable instances) with at least one rule (the deferred
        rule modules' included: their libraries are imported)."""
        load_deferred_rules(everything=True)
        keys = [k for k, e in self._by_key.items() if _has_real_rule(e)]
        keys += [f for f, e in self._by_id.values() if _has_real_rule(e)]
        keys += [k for k, e in self._for_instances.items() if _has_real_rule(e)]
        return keys


def is_users_rule(rule) -> bool:
    """Whether ``rule`` was written outside chainrules: not one of its own rules, nor one it made
    (``scalar_rule``, ``non_differentiable``, a rule bound to a method's object), which return what
    a pullback must by construction. Engines check what a user's rule's pullback returns.

    >>> import numpy as np
    >>> is_users_rule(rrule.lookup(np.sin, (1.0,)))
    False
    """
    if type(rule) is functools.partial:  # (a rule bound to a callable object: ``_bind_instance``)
        rule = rule.func
    return not getattr(rule, "__module__", "").startswith("chainrules.")


class _BatchLedger:
    """How many pullbacks that cannot take a batch of cotangents were made so far (see ``decline_batch``)."""

    __slots__ = ("declines",)

    def __init__(self):
        self.declines = 0


_LEDGER = _BatchLedger()


def decline_batch() -> None:
    """Record that a pullback just made cannot take a batch of cotangents (a leading batch axis).

    Engines call it for each recorded call whose rule is not registered ``batched=True``; a
    batched rule calls it from its primal for a call it cannot batch (say, operands of a user's
    class). A reverse engine offers a batched pullback only if nothing declined while the
    function it differentiates ran (``batch_declines()`` read before and after): one batched
    call of the whole pullback is then correct, else it is called once per cotangent.

    >>> before = batch_declines()
    >>> decline_batch()
    >>> batch_declines() == before + 1
    True
    """
    _LEDGER.declines += 1


def batch_declines() -> int:
    """The number of ``decline_batch()`` calls so far (compare two readings)."""
    return _LEDGER.declines


def _has_real_rule(entries: _Entries) -> bool:
    rules = [entries.untyped] + [r for _, r in entries.typed]
    return any(r is not None and r is not OPT_OUT for r in rules)


class _RRule(RuleDispatcher):
    def __call__(self, f, *args, **kwargs):
        """``rrule(f, *args, **kwargs)`` -> ``(y, pullback)`` or ``None``; ``pullback(dy) -> (df, dx1, ...)``."""
        rule = self.lookup(f, args)
        if rule is None:
            return None
        return rule(*args, **kwargs)


class _FRule(RuleDispatcher):
    #: ``adapt(f, rule, args) -> rule``: the rule a call with a list or tuple argument runs (set by the
    #: rule set: NumPy's functions read a list of numbers as an array, and their rules take its tangent
    #: as one), or ``None``
    _on_sequences: Callable | None = None

    def __call__(self, tangents, f, *args, **kwargs):
        """``frule((df, dx1, ...), f, *args, **kwargs)`` -> ``(y, dy)`` or ``None``."""
        rule = self.lookup(f, args)
        if rule is None:
            return None
        return rule(tangents, *args, **kwargs)

    def lookup(self, f, args: tuple = ()) -> Callable | None:
        """``RuleDispatcher.lookup``; for a call with a list or tuple argument, the rule as the rule set
        adapts it (``adapt_sequence_calls``)."""
        rule = super().lookup(f, args)
        if rule is not None and self._on_sequences is not None:
            for a in args:
                if type(a) is list or type(a) is tuple:
                    return self._on_sequences(f, rule, args)
        return rule

    def adapt_sequence_calls(self, adapt: Callable) -> None:
        """Have calls with a list or tuple argument run ``adapt(f, rule, args)`` in place of ``rule``
        (``frule_on_sequences``: the rule set's reading of lists as arrays, which core leaves to it)."""
        self._on_sequences = adapt

    def _bind_instance(self, rule, f):
        # frule rules for callable instances take (tangents, instance, *args)
        def bound(tangents, *args, **kwargs):
            return rule(tangents, f, *args, **kwargs)

        bound.batched = rule.batched
        return bound

    def _bind_method(self, rule, owner):
        # the tangent of the bound method m.q is its object's: the d_self of M.q's rule
        def bound_method_frule(tangents, *args, **kwargs):
            return rule((_NO, *tangents), owner, *args, **kwargs)

        bound_method_frule.batched = getattr(rule, "batched", False)
        return bound_method_frule


rrule = _RRule(
    "rrule",
    """The reverse-mode rule dispatcher.

    ``rrule(f, *args, **kwargs)`` returns ``(y, pullback)`` where ``y`` is ``f(*args, **kwargs)``
    (possibly computed differently, sharing work with the pullback) and ``pullback(dy)`` returns
    ``(df, dx1, dx2, ...)``: the tangent of ``f`` itself first, then one per positional argument.
    It returns ``None`` when ``f`` has no rule.

    >>> import math, chainrules as cr
    >>> y, back = cr.rrule(math.sin, 0.0)
    >>> y, back(1.0)
    (0.0, (NoTangent(), 1.0))
    """,
)

frule = _FRule(
    "frule",
    """The forward-mode rule dispatcher.

    ``frule((df, dx1, ...), f, *args, **kwargs)`` returns ``(y, dy)``: the primal and its tangent
    for input tangents ``dx1, ...`` (``df`` is the tangent of ``f`` itself). ``None`` when ``f``
    has no rule.

    >>> import math, chainrules as cr
    >>> cr.frule((cr.NoTangent(), 2.0), math.sin, 0.0)
    (0.0, 2.0)
    """,
)


# ----- rules from partial derivatives ------------------------------------------------------


def _takes_out(partial: Callable) -> bool:
    try:
        params = inspect.signature(partial).parameters
    except (TypeError, ValueError):
        return False
    p = params.get("out")
    return p is not None and p.kind is inspect.Parameter.KEYWORD_ONLY


def _pull(x, dy, p):
    """``dy * conj(p)`` brought back to the input's space (shape, realness, dtype)."""
    if type(x) is float and type(dy) is float and type(p) is float:
        return dy * p
    return match_input(x, dy * conj(p))


def _pull_batch(x, dy, p):
    """``_pull`` for a batch of cotangents: the partial broadcasts along the leading batch axis."""
    return match_input_batch(x, dy * conj(p))


def scalar_rule(f: Callable, *partials: Callable) -> None:
    """Register ``rrule`` and ``frule`` for ``f`` from its partial derivatives (ChainRules' ``@scalar_rule``).

    Each partial is called with the inputs; a partial with a keyword-only ``out`` parameter also
    receives the primal output. Works elementwise with NumPy broadcasting: the pullback sums
    each cotangent back to its input's shape. For complex inputs ``f`` is taken to be
    holomorphic (the pullback multiplies by the conjugate partial).

    >>> import math, chainrules as cr
    >>> def cube(x):
    ...     return x ** 3
    >>> cr.scalar_rule(cube, lambda x: 3 * x ** 2)
    >>> cr.rrule(cube, 2.0)[1](1.0)
    (NoTangent(), 12.0)
    >>> cr.scalar_rule(math.exp, lambda x, *, out: out)
    """
    wants_out = tuple(_takes_out(p) for p in partials)
    any_out = any(wants_out)
    name = getattr(f, "__name__", "f")

    def derivatives(args, y):
        if not any_out:
            return [p(*args) for p in partials]
        return [p(*args, out=y) if w else p(*args) for p, w in zip(partials, wants_out)]

    pullback_name = f"{name}_pullback"

    def scalar_rrule(*args, **kwargs):
        if len(args) == 1 and len(partials) == 1:
            return _unary_rrule(args[0], kwargs)
        _check_arity(f, partials, args)
        y = _primal(f, args, kwargs)
        ps = derivatives(args, y)

        def scalar_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO,) + tuple(_ZERO for _ in args)
            pull = _pull_batch if carries_batch(y, dy) else _pull
            return (_NO,) + tuple(pull(x, dy, p) for x, p in zip(args, ps))

        scalar_pullback.__qualname__ = pullback_name
        return y, scalar_pullback

    # One argument is the common case (the source engine calls it for every scalar operation):
    # no argument tuples, and a float seed for a float partial is one multiplication.
    partial, partial_takes_out = (partials[0], wants_out[0]) if len(partials) == 1 else (None, False)

    def _unary_rrule(x, kwargs):
        y = _primal(f, (x,), kwargs) if isinstance(x, ActiveValue) else f(x, **kwargs)
        d = partial(x, out=y) if partial_takes_out else partial(x)

        def scalar_pullback(dy):
            if type(dy) is float and type(d) is float and type(x) is float:
                return _NO, dy * d
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return _NO, _ZERO
            if carries_batch(y, dy):
                return _NO, _pull_batch(x, dy, d)
            return _NO, _pull(x, dy, d)

        scalar_pullback.__qualname__ = pullback_name
        return y, scalar_pullback

    def scalar_frule(tangents, *args, **kwargs):
        if len(args) == 1 and len(partials) == 1 and type(args[0]) is float and type(tangents[1]) is float:
            x = args[0]  # a float with a float tangent: no tuples, no NumPy unless the result is complex
            y = f(x, **kwargs)
            dy = (partial(x, out=y) if partial_takes_out else partial(x)) * tangents[1]
            if type(dy) is not float and np.iscomplexobj(dy) and not np.iscomplexobj(y):
                dy = np.real(dy)
            return y, dy
        _check_arity(f, partials, args)
        y = _primal(f, args, kwargs)
        ps = derivatives(args, y)
        dy = _ZERO
        out_ndim = None  # found only when a tangent is not a float (a float tangent carries no batch)
        for p, x, dx in zip(ps, args, tangents[1:]):
            dx = unthunk(dx)
            if not isinstance(dx, AbstractZero):
                if type(dx) is not float:
                    if out_ndim is None:
                        out_ndim = np.ndim(y)
                    x_ndim = np.ndim(x)
                    if x_ndim < out_ndim and np.ndim(dx) == x_ndim + 1:
                        # a batch of tangents of a lower-rank input: line its axes up with the output's
                        dx = np.reshape(dx, (np.shape(dx)[0],) + (1,) * (out_ndim - x_ndim) + np.shape(x))
                term = p * dx
                dy = term if isinstance(dy, AbstractZero) else dy + term
        if (
            type(dy) is not float
            and not isinstance(dy, AbstractZero)
            and np.iscomplexobj(dy)
            and not np.iscomplexobj(y)
        ):
            dy = np.real(dy)
        if (type(y) is float or type(y) is complex) and isinstance(dy, np.generic):
            dy = type(y)(dy)  # a Python number's tangent is one, whatever the precision of the input's tangent
        return y, dy

    scalar_rrule.__qualname__ = f"rrule_{name}"
    scalar_frule.__qualname__ = f"frule_{name}"
    scalar_rrule.partials = scalar_frule.partials = partials  # the dual engine may read them
    # elementwise: partials broadcast against a leading batch axis of the (co)tangents
    rrule.register(f, batched=True)(scalar_rrule)
    frule.register(f, batched=True)(scalar_frule)


def _primal(f: Callable, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)`` for a rule made from partials; on an engine's values (a Hessian's
    dual numbers), computed by that engine through ``f``'s forward rule, as a ``math`` function
    refuses them (``math.exp`` with a rule registered again by ``scalar_rule``)."""
    owner = next((a for a in args if isinstance(a, ActiveValue)), None)
    if owner is not None:
        y = owner.call_by_rule(f, args, kwargs)
        if y is not NotImplemented:
            return y
    return f(*args, **kwargs)


def _check_arity(f, partials, args):
    if len(args) != len(partials):
        from .errors import callable_name

        raise TypeError(
            f"the rule for {callable_name(f)} takes {len(partials)} positional argument(s), got {len(args)}"
        )


def non_differentiable(*fs: Callable, like_arguments: bool = False) -> None:
    """Register rules for callables whose outputs carry no derivative (``len``, ``np.argmax``, ...).

    The pullback returns ``NoTangent()`` for the callable and every argument; the pushforward
    returns ``NoTangent()``. The callable computes on the values an engine's arguments stand for
    (``int(t)`` of a dual number is ``int`` of its value), unless ``like_arguments``: its result is
    made like its arguments (``np.zeros_like``: an engine's value gives a buffer of its own kind).

    >>> import chainrules as cr
    >>> def count(xs):
    ...     return len(xs)
    >>> cr.non_differentiable(count)
    >>> y, back = cr.rrule(count, [1.0, 2.0])
    >>> y, back(1.0)
    (2, (NoTangent(), NoTangent()))
    """
    for f in fs:
        rrule.register(f, functor=False, batched=True)(_nondiff_rrule(f, like_arguments))  # NoTangents fit any batch
        frule.register(f, functor=False, batched=True)(_nondiff_frule(f, like_arguments))


def _plain(f, args: tuple, like_arguments: bool) -> tuple:
    """The arguments of a function without a derivative, which computes on the values alone: an
    engine's value (a dual number, a tracked array) gives the value it stands for, so that
    ``int(t)`` and ``math.isclose(z, w)`` run under every engine; for a function whose result is
    made like its arguments, only the instance a method of a type written in C takes
    (``np.ndarray.searchsorted``'s)."""
    if like_arguments:
        if type(f) is MethodDescriptorType and args and isinstance(args[0], ActiveValue):
            return (stood_for(args[0]), *args[1:])
        return args
    if not any(isinstance(a, ActiveValue) for a in args):
        return args
    return tuple(stood_for(a) if isinstance(a, ActiveValue) else a for a in args)


def _nondiff_rrule(f, like_arguments: bool):
    def nondiff_rrule(*args, **kwargs):
        y = f(*_plain(f, args, like_arguments), **kwargs)
        n = len(args)

        def nondiff_pullback(dy):
            return (_NO,) * (n + 1)

        return y, nondiff_pullback

    nondiff_rrule.__qualname__ = f"rrule_{getattr(f, '__name__', 'f')}"
    return nondiff_rrule


def _nondiff_frule(f, like_arguments: bool):
    def nondiff_frule(tangents, *args, **kwargs):
        return f(*_plain(f, args, like_arguments), **kwargs), _NO

    nondiff_frule.__qualname__ = f"frule_{getattr(f, '__name__', 'f')}"
    return nondiff_frule


def opt_out(f: Callable, *types: type) -> None:
    """Declare that ``f`` has no rule for these positional argument types, so engines look inside it.

    Use it when a general rule exists but AD through ``f``'s own code is better for some types.

    >>> import chainrules as cr
    >>> class Tiny(float):
    ...     pass
    >>> def square(x):
    ...     return x * x
    >>> cr.scalar_rule(square, lambda x: 2 * x)
    >>> cr.opt_out(square, Tiny)
    >>> cr.rrule(square, Tiny(2.0)) is None, cr.rrule(square, 2.0) is None
    (True, False)
    """
    for dispatcher in (rrule, frule):
        dispatcher.register(f, *types, functor=False)(OPT_OUT)
