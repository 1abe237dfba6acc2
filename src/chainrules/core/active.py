"""The engine that is differentiating right now, so that rules can call back into it.

A rule for a higher-order function (``map``, ``sorted`` with a key, ``functools.reduce``) needs
the pullback of a *user* callable. ``rrule_via_ad(f, *args)`` asks the active reverse engine for
it. Engines install themselves with ``active_engine`` while they run user code; the state is a
``ContextVar``, so threads and nested differentiation each see their own engine.
"""

from __future__ import annotations

import abc
import dis
import functools
import itertools
import operator
import sys
import types
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import numpy as np

from .errors import ChainRulesError, DroppedDerivativeError, callable_name, is_internal_file, is_library
from .tangents import AbstractTangent


class ActiveValue:
    """Base class of the engines' stand-ins for numbers and arrays (tracked values, dual numbers).

    Such a value overloads Python's operators and NumPy's protocols to carry derivatives itself,
    so a rule that meets one treats it as a number or an array (it computes with it) and never as
    a user object whose methods it would differentiate.

    Each engine's values answer ``differentiation_order()``: the ``next_order()`` number their
    differentiation took when it started. Where two engines' differentiations nest, an operation
    on values of both is the inner (larger) one's to handle; the other engine's values are
    constants to it, which its rules compute with.
    """

    __slots__ = ()

    def differentiation_order(self) -> int:
        """The order of the differentiation this value belongs to (see ``next_order``)."""
        return 0

    def __str__(self) -> str:
        """The text of the value this one stands for (``str(x)``, ``print(x)``, ``"%s" % x``): the
        user's code reads what it reads on the plain value (``repr`` names the engine's value)."""
        return str(stood_for(self))

    def stands_for(self) -> Any:
        """The value this one stands for, one level down (a dual number's primal, which may be
        another engine's value); itself for a value that stands for nothing else."""
        return self

    @property
    def __class__(self) -> type:
        """To the user's code, the class of the plain number or array this value stands for, so
        that ``isinstance(x, float)`` (or ``np.ndarray``, ``numbers.Real``) takes the branch it
        takes on the plain value (so does the body of a library callable with a rule that the user's
        code called, see ``_owner``); to chainrules and the libraries it calls, its own class.
        (``isinstance`` asks ``__class__`` only where the type itself does not match; ``type(x)``
        is the engine's class everywhere.)"""
        frame = sys._getframe(1)
        if frame.f_code is _ABC_INSTANCECHECK:  # isinstance(x, numbers.Real): whoever asked the abstract class
            frame = frame.f_back
        owner = _owner(frame.f_code)
        if owner is _RULED_BODY:  # as the user's code, if the user's code called it
            owner = _owner(frame.f_back.f_code)
        return type(stood_for(self)) if owner is _USER else type(self)

    def buffer_holding(self, array: Any) -> Any:
        """A writable array of this value's differentiation that holds the plain ``array`` (fresh,
        the caller's to give away) with a zero derivative, so that values like this one can be
        written into it; ``None`` where the engine has no such arrays.

        A function that fills a buffer it made (``out = np.zeros(n)``, then ``out[i] = v``) runs
        its writes through this when an outer differentiation's values reach them (a Hessian: a
        dual written into the source engine's buffer)."""
        return None

    def call_by_rule(self, f: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """``f(*args, **kwargs)``, with this value among the arguments, run by this value's engine
        through ``f``'s rule (recorded by a tape); ``NotImplemented`` where the engine runs ``f``'s
        body instead. A callable of chainrules' own whose call an engine cannot see (``checkpoint``'s
        wrapper) hands its calls over with this."""
        return NotImplemented

    def carrying(self, primal: Any, tangent: Any) -> Any:
        """A value of this one's differentiation that stands for the plain ``primal`` and carries
        ``tangent`` (forward mode's dual number; its tangent a batch along a leading axis where the
        differentiation pushes a chunk of them, as this value's own does); ``None`` where the
        engine's values carry no tangent (a tape's). With ``tangent_of``, a rule that integrates its
        tangent itself (``solve_ivp``'s forward sensitivities) reads and makes this engine's values."""
        return None

    def tangent_of(self, value: Any) -> Any:
        """The tangent ``value`` carries in this one's differentiation (see ``carrying``): a zero
        where it holds none of its values, ``None`` where the engine's values carry no tangent."""
        return None


#: each binary operator's reflected method, which Python calls on the right operand where the left declines
_REFLECTED = {
    operator.add: "__radd__",
    operator.sub: "__rsub__",
    operator.mul: "__rmul__",
    operator.truediv: "__rtruediv__",
    operator.floordiv: "__rfloordiv__",
    operator.mod: "__rmod__",
    operator.pow: "__rpow__",
    operator.matmul: "__rmatmul__",
}


def reflected_by_its_class(op: Callable[[Any, Any], Any], other: Any) -> bool:
    """Whether ``other``, the right operand of the operator ``op`` beside an engine's number, has
    a class that implements ``op``'s reflected method in Python (a user's ``V.__rmul__``). A plain
    number's operator declines such an operand, and Python calls that method; an engine's number
    declines it too (``NotImplemented``), so the method runs on the engine's value, which carries
    the derivative through it.

    >>> import operator
    >>> class Scaled:
    ...     def __rmul__(self, s):
    ...         return Scaled()
    >>> reflected_by_its_class(operator.mul, Scaled()), reflected_by_its_class(operator.mul, 2.0)
    (True, False)
    """
    name = _REFLECTED.get(op)
    if name is None or isinstance(other, (ActiveValue, AbstractTangent)):  # (chainrules' own: they handle it)
        return False
    return type(getattr(type(other), name, None)) is types.FunctionType


def stood_for(value: Any) -> Any:
    """The plain number or array an engine's value stands for (through any number of engines'
    values: a dual number of a tape's); any other value, or an engine's value that stands for
    nothing else, itself.

    >>> stood_for(2.0)
    2.0
    """
    while isinstance(value, ActiveValue):
        inner = value.stands_for()
        if inner is value:
            break
        value = inner
    return value


def nesting_depth(value: Any) -> int:
    """How many engines' values ``value`` is wrapped in: 0 for a plain value, 1 for a dual number
    or a tracked value, 2 for a Hessian's dual number of a tracked value.

    >>> nesting_depth(2.0)
    0
    """
    depth = 0
    while isinstance(value, ActiveValue):
        inner = value.stands_for()
        if inner is value:
            break
        value, depth = inner, depth + 1
    return depth


@functools.lru_cache(maxsize=1024)
def rebound_names(code: types.CodeType) -> frozenset:
    """The captured names that ``code`` or a function nested in it assigns (``nonlocal``): a copy of
    a closure that gives such a name a cell of its own would keep the function's writes from the
    caller.

    >>> def counter():
    ...     n = 0
    ...     def step():
    ...         nonlocal n
    ...         n += 1
    ...     return step
    >>> sorted(rebound_names(counter().__code__))
    ['n']
    """
    names = set()
    for instr in dis.get_instructions(code):
        if instr.opname in ("STORE_DEREF", "DELETE_DEREF"):
            names.add(instr.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= rebound_names(const)
    return frozenset(names)


#: code object -> whose it is (see ``ActiveValue.__class__``); emptied when a rule is registered
#: (``forget_code_owners``)
_OWNERS: dict = {}
_USER, _LIBRARY, _RULED_BODY = "the user's", "a library's", "the body of a library callable with a rule"
_ABC_INSTANCECHECK = abc.ABCMeta.__instancecheck__.__code__


def _owner(code) -> str:
    """Whose ``code`` is: the user's (code the source engine generated from the user's counts as the
    user's), or chainrules' or a library's (the standard library, installed packages).

    The body of a library callable with a rule (``ruled_calls.watched``) is set apart: the tape and
    forward mode see operations, never calls, so where the user's code calls it on their values
    they run its body in the rule's place, and that body must take the branches it takes on plain
    values (NumPy's ``polyval(x, c)`` gives ``c`` an axis per axis of ``x`` only for an
    ``np.ndarray`` ``x``: on the engine's class it computed another function). Called by a rule or
    another library function, it is that library's code."""
    known = _OWNERS.get(code)
    if known is None:
        filename = code.co_filename
        if filename.startswith("<chainrules-source") or not (
            is_internal_file(filename) or is_library(filename) or filename.startswith("<frozen")
        ):
            known = _USER
        elif is_library(filename) and not is_internal_file(filename) and _is_ruled_body(code):
            known = _RULED_BODY
        else:
            known = _LIBRARY
        if len(_OWNERS) >= 4096:
            _OWNERS.clear()
        _OWNERS[code] = known
    return known


def _is_ruled_body(code) -> bool:
    from .registry import frule, rrule  # (they import this module)
    from .ruled_calls import watched

    # (by id, and the very code object: the id of a code object that is gone may be another's now)
    return any(watched(dispatcher).get(id(code), (None,))[0] is code for dispatcher in (rrule, frule))


def forget_code_owners() -> None:
    """Forget whose each code object is (``_owner``): a rule was registered or taken out, and
    the body of the callable it is for is set apart, or no longer."""
    _OWNERS.clear()


def call_by_engine(f: Callable[..., Any], args: tuple, kwargs: dict, name: str | Callable[[], str]) -> Any:
    """``f(*args, **kwargs)``, for a rule computing its primal with a library function ``f`` that
    converts its arguments to arrays (SciPy's): an engine's value among them (a Hessian's dual
    number) has its engine run ``f`` through ``f``'s rule (``ActiveValue.call_by_rule``), which keeps
    what the value carries. ``name`` names ``f`` in the error where that engine cannot (a function
    making the name is called only then).

    >>> import math
    >>> call_by_engine(math.hypot, (3.0, 4.0), {}, "math.hypot")
    5.0
    """
    active = next((a for a in (*args, *kwargs.values()) if isinstance(a, ActiveValue)), None)
    if active is None:
        return f(*args, **kwargs)
    out = active.call_by_rule(f, args, kwargs)
    if out is NotImplemented:
        raise TypeError(
            f"{name if isinstance(name, str) else name()}: this engine cannot run it on its values; "
            "differentiate it with the source engine (engine='source') or forward mode"
        )
    return out


_orders = itertools.count(1)


class InplaceOperators:
    """``x += v`` and the other augmented operators of an engine's array, each handed to the
    engine's ``self._inplace(op, other)`` with the ``operator`` function it applies (one place for
    the six methods every engine's array type needs)."""

    __slots__ = ()

    def __iadd__(self, other):
        return self._inplace(operator.add, other)

    def __isub__(self, other):
        return self._inplace(operator.sub, other)

    def __imul__(self, other):
        return self._inplace(operator.mul, other)

    def __itruediv__(self, other):
        return self._inplace(operator.truediv, other)

    def __ipow__(self, other):
        return self._inplace(operator.pow, other)

    def __imatmul__(self, other):
        return self._inplace(operator.matmul, other)


def with_part(z, name: str, value):
    """What ``z.real = value`` (``name`` "real") or ``z.imag = value`` leaves in the array ``z``, as a
    new array of ``z``'s shape: NumPy writes ``value`` into that part of ``z``'s memory, which an
    engine's array does as an update in place of all of it. NumPy's functions and operators compute
    it, so that an engine's values go through their rules.

    >>> with_part(np.array([1.0 + 2.0j, 3.0 - 1.0j]), "real", 0.5)
    array([0.5+2.j, 0.5-1.j])
    >>> with_part(np.array([1.0, 2.0]), "imag", 0.5)
    Traceback (most recent call last):
    TypeError: array does not have imaginary part to set
    """
    if np.iscomplexobj(value):  # (NumPy keeps its real part, with a ComplexWarning)
        value = np.real(value)
    if not np.iscomplexobj(z):
        if name == "imag":
            raise TypeError("array does not have imaginary part to set")  # NumPy's error
        return value + np.zeros(np.shape(z))
    # `1j * z.imag` and `z.real` by ufuncs (exactly), reading no view of z: the tape takes the view
    # np.imag(z) for memory another array shares with z, and would refuse the write into z
    if name == "real":
        return value + (z - np.conj(z)) / 2
    return (z + np.conj(z)) / 2 + 1j * value


def part_assignment_refused(name: str, where: str | None) -> DroppedDerivativeError:
    """The refusal of ``z.real = v`` (``name`` "real") or ``z.imag = v`` into an engine's array that
    another array may share memory with, at the user's location ``where``."""
    rebuilt = "v + 1j * z.imag" if name == "real" else "z.real + 1j * v"
    return DroppedDerivativeError(
        f"`z.{name} = v` writes into a part of an array that another array may share memory with (an argument, "
        f"a view or a reshape of it){' at ' + where if where else ''}: the engine cannot follow that write into "
        f"the other array; build a new array instead, `z = {rebuilt}`"
    )


class NumberIndexing:
    """``s[None]``, ``s[()]`` and ``s[...]`` of an engine's number: a NumPy scalar indexes as a 0-d
    array does, through ``operator.getitem``'s rule run by the value's engine (``call_by_rule``);
    a Python number is not subscriptable, as Python says for the plain number. (NumPy then takes
    such a number for a sequence where a conversion fails: ``out[i] = x`` into a plain array raises
    its "setting an array element with a sequence" from the engine's refusal, which the engines
    raise in its place: ``errors.raise_converted``.)"""

    __slots__ = ()

    # a number is not iterable: without this, ``iter(x)`` would fall back on ``x[0]``, ``x[1]``...
    # (and ``np.iterable(x)`` say yes)
    __iter__ = None

    def __getitem__(self, key):
        number = stood_for(self)
        if not hasattr(type(number), "__getitem__"):
            raise TypeError(f"{type(number).__name__!r} object is not subscriptable")
        return self.call_by_rule(operator.getitem, (self, key), {})


def next_order() -> int:
    """A number larger than every one handed out before: each differentiation that wraps values
    (a forward-mode tag, a tape's trace) takes one as it starts, so that an inner one has the larger.

    >>> next_order() < next_order()
    True
    """
    return next(_orders)


_active: ContextVar[Callable[..., Any] | None] = ContextVar("chainrules_active_engine", default=None)


def rrule_via_ad(f: Callable, *args, **kwargs):
    """``(y, pullback)`` for ``f(*args, **kwargs)``, computed by the active reverse-mode engine.

    ``pullback(dy)`` returns ``(df, dx1, ...)`` like a rule's. Call it from inside a rule; it
    raises while no engine is differentiating.

    >>> import chainrules as cr
    >>> cr.rrule_via_ad(abs, -1.0)
    Traceback (most recent call last):
    ...
    chainrules.core.errors.ChainRulesError: rrule_via_ad(builtins.abs) was called while no reverse-mode ...
    """
    engine = _running(_active, "rrule_via_ad", f, "reverse-mode", "cr.pullback or cr.gradient")
    return engine(f, *args, **kwargs)


def _running(engines: ContextVar, caller: str, f: Callable, kind: str, entry_points: str) -> Callable[..., Any]:
    """The engine set in ``engines``; raises, naming ``caller`` and ``f``, while none is running."""
    engine = engines.get()
    if engine is None:
        raise ChainRulesError(
            f"{caller}({callable_name(f)}) was called while no {kind} engine is running; "
            f"call it from inside a rule, while {entry_points} differentiates"
        )
    return engine


_active_forward: ContextVar[Callable[..., Any] | None] = ContextVar("chainrules_active_forward_engine", default=None)


def frule_via_ad(tangents: tuple, f: Callable, *args, **kwargs):
    """``(y, dy)`` for ``f(*args, **kwargs)`` pushed forward along ``tangents`` (``(df, dx1, ...)``,
    one tangent each, as an frule takes them) by the forward-mode engine that is running: the
    forward rule of a higher-order function (``np.piecewise``) pushes a *user* callable with it, as
    its reverse rule pulls back with ``rrule_via_ad``. It raises while no engine is differentiating.

    >>> import chainrules as cr
    >>> cr.frule_via_ad((cr.NoTangent(), 1.0), abs, -1.0)
    Traceback (most recent call last):
    ...
    chainrules.core.errors.ChainRulesError: frule_via_ad(builtins.abs) was called while no forward-mode ...
    """
    engine = _running(_active_forward, "frule_via_ad", f, "forward-mode", "cr.jvp or cr.jacobian(..., mode='forward')")
    return engine(tangents, f, *args, **kwargs)


#: forward mode's ``jvp(f, primals, tangents)``, registered by ``chainrules.forward`` when it is imported
_FORWARD_JVP: list = []


def register_forward_jvp(jvp: Callable[..., Any]) -> None:
    """Make ``jvp`` the forward-mode engine behind ``jvp_by_forward_mode`` (the core imports no engine)."""
    _FORWARD_JVP[:] = [jvp]


def jvp_by_forward_mode(f: Callable[..., Any], primals: tuple, tangents: tuple) -> tuple:
    """``(y, dy)``: ``f(*primals)`` and its tangent along ``tangents`` by forward mode, whichever engine is
    running, for a rule that needs the derivative of a user callable in any mode (``scipy.linalg.funm``:
    the slopes of its ``func`` at the eigenvalues), as ``frule_via_ad`` gives it while forward mode runs.

    >>> import chainrules as cr
    >>> jvp_by_forward_mode(lambda x: x * x, (3.0,), (1.0,))
    (9.0, 6.0)
    """
    return _FORWARD_JVP[0](f, primals, tangents)  # (chainrules imports chainrules.forward, which registers it)


class active_engine:  # lower case: it is used like a function, ``with active_engine(engine):``
    """Make ``pullback_full(f, *args, **kwargs) -> (y, pullback)`` the engine behind ``rrule_via_ad``.

    A context manager; a class rather than a generator because engines enter it on every call.
    """

    __slots__ = ("_engine", "_token", "_installed")
    _variable = _active

    def __init__(self, pullback_full: Callable[..., Any]):
        self._engine = pullback_full

    def __enter__(self) -> None:
        self._token = self._variable.set(self._engine)
        self._installed = ENGINE_INSTALLED.set(True)

    def __exit__(self, *exc_info) -> None:
        ENGINE_INSTALLED.reset(self._installed)
        self._variable.reset(self._token)


class active_forward_engine(active_engine):
    """Make ``pushforward_full(tangents, f, *args, **kwargs) -> (y, dy)`` the engine behind ``frule_via_ad``."""

    __slots__ = ()
    _variable = _active_forward


#: whether an engine is differentiating (reverse or forward mode installed): its values may then
#: reach a pullback that runs inside it, and a tangent computed there may hold them (a Hessian's
#: dual numbers), which a plain NumPy array cannot (one variable: the accumulation's loops read it)
ENGINE_INSTALLED: ContextVar[bool] = ContextVar("chainrules_engine_installed", default=False)

#: whether the differentiation starting serves one around it that needs the cotangents of what its
#: function captured (its tangent ``df``): the rules of the entry points called inside a function
#: being differentiated set it, where that function's variables are plain values the inner engine
#: must follow through the captures (the tape then tracks containers and closures a closure holds)
CAPTURES_WANTED: ContextVar[bool] = ContextVar("chainrules_captures_wanted", default=False)


def install_forward(pushforward_full: Callable[..., Any]) -> tuple:
    """``active_forward_engine(pushforward_full).__enter__`` without the object, for the forward
    engine's entry points, which run on every call (a Jacobian of a small function takes microseconds):
    returns the tokens ``uninstall_forward`` takes."""
    return _active_forward.set(pushforward_full), ENGINE_INSTALLED.set(True)


def uninstall_forward(tokens: tuple) -> None:
    ENGINE_INSTALLED.reset(tokens[1])
    _active_forward.reset(tokens[0])


def current_engine() -> Callable[..., Any] | None:
    """The active engine's ``pullback_full``, or ``None``."""
    return _active.get()
