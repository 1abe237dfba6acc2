"""Dual numbers: a primal value carried together with its partials, pushed forward by ``frule``.

A ``Dual`` wraps a primal (a Python number, a NumPy scalar or array) and its ``partials``: one
tangent, or, in a chunked pass, a batch of tangents stacked along a new leading axis. A dual
of an array is a ``DualArray``, which alone indexes, iterates and has a length. Every
operation on duals (operators, NumPy ufuncs and functions, array methods and attributes)
becomes one call of ``call(f, args, kwargs)``, which looks up ``f``'s ``frule`` in the shared
registry and wraps the result. There is no derivative table here.

Invariants:

- Each differentiation (one ``jvp``, one pass of a Jacobian) has its own ``Tag``. Tags are
  ordered by creation, and a dual's primal may itself be a dual of an *older* tag (nested
  differentiation). An operation works on the newest tag among its arguments; duals of older
  tags are constants to it and flow through the rule as ordinary values. This keeps the
  perturbations of nested derivatives apart (ForwardDiff's tags; "perturbation confusion").
  A tag is marked ``finished`` when its differentiation returns: an operation, conversion or
  comparison on a dual of it (one the function stored, which escaped) raises, as the tape's
  values do, where it would take precedence over the duals of a running differentiation.
- In a chunked pass (``tag.batch`` is an int), every partial carries the batch axis first.
  A rule registered ``batched=True`` receives the batch as it is; any other rule is called
  once per batch element (the loop fallback). Every output tangent is checked against its
  output's shape: one a rule left broadcastable is broadcast, and a batched rule whose output
  lost the batch axis is redone by the loop, so no wrong shape gets through.
- Operators on NumPy values run the rule of the ufunc NumPy itself would call (``a * b`` is
  ``np.multiply``), on Python numbers the rule of the ``operator`` function.
- A rule made from partial derivatives (``scalar_rule``, the NumPy elementwise rows) keeps
  them on the rule (``rule.partials``); its pushforward ``sum(p * dx)`` is formed from them
  here, computing only the partials of nonzero tangents.
- What the registry says about a callable and its argument types (its rule, and how that rule
  is run: from its partials, with the batch, or per batch element) is looked up once and kept
  as a *pusher* until the registry changes; a callable without a rule is remembered weakly.
- A rule whose output tangent is a zero gives a plain (non-dual) value: a constant.
- A rule's output that is a tuple, list, dict, namedtuple or dataclass becomes that structure
  of duals, item by item (its tangent a ``Tangent`` of it or a plain container), as ``jvp`` seeds
  structured inputs; a chunk of tangents is stacked item by item.
- Duals are read-only, except those made by ``np.zeros_like``/``ones_like``/``empty_like``/
  ``full_like`` of a dual and copies (``np.copy(x)``, ``x.copy()``, whose partials are copied
  too): they own their values, so ``x[i] = v`` and ``np.add.at`` store the value's primal and
  partials entry by entry (reverse rules build cotangents that way).
- Converting a dual to a Python number (``float``, ``int``, ``math.sin``) would drop its
  derivative, so it raises a ``TypeError`` that says how to fix the call. Comparisons and
  truth tests use the primal values, so ``if`` and ``while`` work.
- Duals see operations, never the call of a Python function or callable object. While frules
  for such callables are registered, each operation looks down the stack for a call of one
  that received duals of its tag (``RULED_CALLS``) and raises rather than push the tangent
  through the callable's body in place of its rule; so does a comparison of a dual in the body
  of a callable with a reverse rule that received the duals through a function passed to it (a
  solver's iterations, whose derivative is not the rule's).
- A ruled callable run by another engine (``call_by_rule``: the source engine's primal) whose
  fields hold duals, or an argument whose fields do, gives them to the frule as that value's
  tangent (a ``Tangent[P]``), with a copy of it holding their primals (``_opened``).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import operator
import sys
import types
import weakref
from collections.abc import Callable

import numpy as np

from ..core import (
    AbstractTangent,
    AbstractZero,
    ActiveValue,
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
    user_location,
)
from ..core.active import (
    InplaceOperators,
    NumberIndexing,
    _orders,
    part_assignment_refused,
    reflected_by_its_class,
    with_part,
)
from ..core.errors import (
    DroppedDerivativeError,
    EscapedValueError,
    NoForwardRuleError,
    as_index,
    at_user,
    conversion_in_rule,
    escaped_error,
    in_percent_formatting,
)
from ..core.indexing import ellipsis_spelled_out
from ..core.keywords import as_positional, is_option
from ..core.ruled_calls import RuledCallWatch, engine_values_in
from ..core.sparse import NOT_CARRIED, is_sparse
from ..core.structures import is_structure, item_tangents, structure_items, with_fields
from ..core.tangents import _is_namedtuple_type, namedtuple_with
from ..core.twins import ATTRIBUTE_TWINS, call_method, call_twin, method_twin, twin_of

_NO = NoTangent()
_ZERO = ZeroTangent()
_CONTAINERS = (list, tuple)
_NO_KWARGS: dict = {}  # shared, never written


class Tag:
    """Identifies one forward differentiation; newer tags are outer layers of nested duals.

    ``batch`` is the number of tangents pushed forward at once (``None``: a single tangent
    without a batch axis). ``order`` comes from the counter every engine's differentiations share
    (``next_order``), so that it also orders a tag among a tape's traces.

    >>> outer, inner = Tag(), Tag(batch=3)
    >>> inner.order > outer.order, inner.batch
    (True, 3)
    """

    __slots__ = ("order", "batch", "entry", "clean_frames", "refused", "finished")

    def __init__(self, batch: int | None = None):
        self.order = next(_orders)  # next_order(), without its call
        self.batch = batch
        #: while the differentiation runs: the frame that started it, and frames of the user's
        #: code known to run no ruled callable on this tag's duals (see `RULED_CALLS`)
        self.entry = None
        self.clean_frames: dict | None = None
        #: the first refusal raised on this tag's duals (a conversion with float(), say)
        self.refused: Exception | None = None
        #: set when its differentiation returns: a dual of it still in use escaped its function
        #: (stored in a global, an attribute), and operations on it are refused (see `escaped`)
        self.finished = False

    def __repr__(self) -> str:
        return f"Tag({self.order}{'' if self.batch is None else f', batch={self.batch}'})"


def _conversion_error(kind: str) -> DroppedDerivativeError:
    where = user_location()
    at = f" at {where}" if where else ""
    advice = (
        "Python's math functions call float() on their argument: use the NumPy function instead "
        "(np.sin(x), not math.sin(x))"
    )
    if kind == "complex":
        advice = (
            "Python's math and cmath functions call float() and complex() on their argument: use the NumPy "
            "function instead (np.sin(x), not math.sin(x); on a complex value for cmath's: np.sqrt(x + 0j), "
            "not cmath.sqrt(x))"
        )
    return DroppedDerivativeError(
        f"{kind}() of a dual number{at} would drop its derivative. {advice}. "
        "A plain NumPy array converts what is stored into it: make a buffer to fill with "
        "np.zeros_like(x), which holds duals. A number meant to be constant must come from non-dual values."
    )


# ----- calls of ruled Python callables, which duals cannot intercept ------------------------

_ADVICE = (
    "Forward mode uses the rule when {name} is the function it is given (cr.jvp, cr.derivative, "
    "cr.jacobian(..., mode='forward') of it); reverse mode with engine='source' uses the rules of Python "
    "functions wherever they are called."
)


def _of_tag(value, tag: Tag) -> bool:
    while type(value) in _DUALS:
        if value.tag is tag:
            return True
        value = value.primal
    return False


#: the check, at each operation, for calls of ruled callables on a tag's duals
RULED_CALLS = RuledCallWatch(frule, "forward mode", _ADVICE, _of_tag, lambda v: _innermost(v))


def _refused(value, error: Exception) -> Exception:
    """``error``, or, when the refused conversion happens in the body of a Python callable with an
    frule that received ``value``, the error that says forward mode cannot use that rule, or, in a
    rule's own code, the error that says that rule does not take dual numbers."""
    frame = sys._getframe(1)
    tag = value.tag if type(value) in _DUALS else None
    if tag is not None and tag.finished:
        return escaped(tag, value)
    return _kept(tag, conversion_in_rule(frame, "dual numbers") or RULED_CALLS.refused(tag, frame, error))


def _branching(value) -> None:
    """A comparison or truth test of ``value`` by its caller: refused where code iterates on it
    inside a callable with a reverse rule (``RuledCallWatch.branched``), and always where ``value``
    escaped its differentiation."""
    if value.tag.finished:
        raise escaped(value.tag, value)
    error = RULED_CALLS.branched(value.tag, sys._getframe(2))
    if error is not None:
        raise _kept(value.tag, error)


def escaped(tag: Tag, values) -> EscapedValueError:
    """The refusal of an operation on ``values`` (arguments), which hold a dual of ``tag``, a
    finished tag: the dual escaped its differentiation."""
    dual = next((v for v in engine_values_in(values, 4) if type(v) in _DUALS and v.tag is tag), None)
    return escaped_error(dual, "cr.derivative/cr.jvp/cr.jacobian")


def _kept(tag: Tag | None, error: Exception) -> Exception:
    """``error``, kept as ``tag``'s first refusal: raised again if the function catches it (see
    ``raise_swallowed``)."""
    if tag is not None and tag.refused is None:
        tag.refused = error
    return error


class Dual(NumberIndexing, ActiveValue):
    """A primal value and its partials under one ``Tag``.

    Arithmetic, NumPy functions and array methods on duals go through the ``frule`` registry;
    comparisons use the primal values.

    >>> import numpy as np
    >>> from chainrules.forward import Dual, Tag
    >>> x = Dual(2.0, 1.0, Tag())
    >>> y = x * x + 3.0
    >>> y.primal, y.partials
    (7.0, 4.0)
    >>> z = np.sin(x)  # NumPy's functions run their frules; the results are NumPy scalars
    >>> bool(z.partials == np.cos(2.0))
    True
    >>> bool(x > 1.0)
    True
    """

    __slots__ = ("primal", "partials", "tag", "writable")
    # NumPy must hand mixed operations (ndarray @ dual, np.float64 * dual) to the dual.
    __array_priority__ = 1000

    def __new__(cls, primal, partials, tag: Tag, writable: bool = False):
        # a dual of an array is a DualArray: only that one indexes, iterates and has a length (an
        # array subclass, another engine's array, such as an outer tape's, is one too)
        if cls is Dual and (
            type(primal) in _ARRAY_PRIMALS
            or isinstance(primal, np.ndarray)
            or (isinstance(primal, ActiveValue) and np.ndim(primal) > 0)
        ):
            cls = DualArray
        # the fields are set here, not in __init__: one Python call less per dual
        self = object.__new__(cls)
        self.primal = primal
        self.partials = partials
        self.tag = tag
        # Only a dual that owns its values (made by np.zeros_like & co.) may be written into:
        # writing through any other could change an array it shares with the user or a view.
        self.writable = writable
        return self

    def stands_for(self):
        return self.primal

    def __repr__(self) -> str:
        return f"Dual({self.primal!r}, {self.partials!r})"

    def differentiation_order(self) -> int:
        return self.tag.order

    def buffer_holding(self, array):
        inner = self.primal
        if isinstance(inner, ActiveValue):
            # a nested dual's buffer: its value and its partials are buffers of the inner
            # differentiation, which hold that one's values (a second derivative through a fill)
            if self.tag.batch is not None or type(array) is not np.ndarray or array.dtype.kind not in "fc":
                return None
            held, partials = inner.buffer_holding(array), inner.buffer_holding(np.zeros_like(array))
            if held is None or partials is None:
                return None
            return Dual(held, partials, self.tag, writable=True)
        return _owned_buffer(array, self.tag)

    def call_by_rule(self, f, args: tuple, kwargs: dict):
        # f's frule pushes the tangents forward; without one, the caller runs f's body on the duals
        if frule.lookup(f, args) is None and _lookup_twin(f, args) is None:
            return NotImplemented
        held = args if type(f) in _UNSTRUCTURED else (f, *args)
        if any(type(a) not in _DUALS and _holds_duals(a) for a in held):
            # a user's callable object (a bound method's object) or argument holds duals in its fields
            return _call_general(f, args, kwargs, sys._getframe(0), opening=True)
        return call(f, args, kwargs)

    def carrying(self, primal, tangent):
        return Dual(primal, tangent, self.tag)

    def tangent_of(self, value):
        return value.partials if type(value) in _DUALS and value.tag is self.tag else _ZERO

    def __format__(self, spec: str) -> str:
        # printing shows the primal; the computation keeps the dual
        return format(self.primal, spec)

    # -- metadata: the primal's --
    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.primal)

    @property
    def ndim(self) -> int:
        return np.ndim(self.primal)

    @property
    def size(self) -> int:
        return np.size(self.primal)

    @property
    def dtype(self) -> np.dtype:
        primal = self.primal
        return primal.dtype if hasattr(primal, "dtype") else np.result_type(primal)

    # -- conversions that would drop the derivative, except to print the value ("%.3f" % x) --
    def __float__(self):
        if in_percent_formatting(sys._getframe(1)):
            return float(self.primal)
        raise _refused(self, _conversion_error("float"))

    def __int__(self):
        # truncation, as math.trunc: piecewise constant, with a derivative of zero (int's rule, as
        # the source engine calls it); Python takes back a plain int alone
        if in_percent_formatting(sys._getframe(1)):  # "%d" % x prints the value
            return int(self.primal)
        return call(int, (self,))

    def __index__(self):
        if np.ndim(self.primal):  # NumPy probing an index array: it is taken as an array next, as an ndarray is
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        try:
            return as_index(self.primal, sys._getframe(1), at_user)
        except TypeError as error:
            raise _refused(self, error) from None

    def __complex__(self):
        raise _refused(self, _conversion_error("complex"))

    def __array__(self, dtype=None, copy=None):
        where = user_location()
        raise _refused(
            self,
            DroppedDerivativeError(
                f"converting a dual number to a NumPy array{' at ' + where if where else ''} would drop its "
                "derivative: np.array/np.asarray of duals (or of a list holding duals) cannot keep it. "
                "Use np.stack([...]) to build an array from duals, and NumPy functions, which accept duals."
            ),
        )

    def __bool__(self) -> bool:
        # the primal's truth, as NumPy has it (its ValueError for an array of several entries,
        # which the user's code may catch as it would for the plain array)
        _branching(self)
        return bool(self.primal)

    # -- comparisons: on primal values, so control flow follows the primal --
    def __lt__(self, other):
        _branching(self)
        return self.primal < _primal(other)

    def __le__(self, other):
        _branching(self)
        return self.primal <= _primal(other)

    def __gt__(self, other):
        _branching(self)
        return self.primal > _primal(other)

    def __ge__(self, other):
        _branching(self)
        return self.primal >= _primal(other)

    def __eq__(self, other):
        _branching(self)
        return self.primal == _primal(other)

    def __ne__(self, other):
        _branching(self)
        return self.primal != _primal(other)

    def __hash__(self) -> int:
        # hashed and compared by its primal, a dual would find what a cache (a memo dict,
        # functools.lru_cache) computed without its derivative: a silent zero
        where = user_location()
        raise TypeError(
            f"a dual number is unhashable{' (at ' + where + ')' if where else ''}: as a dict key or set member (a "
            "memo dict, functools.lru_cache) it would find values computed without its derivative. Key a cache by "
            "values that are not differentiated (an index, a size), or compute the value each time."
        )

    # -- arithmetic: the ``operator`` functions, whose rules the source engine also uses --
    def __add__(self, other):
        return _binary(operator.add, np.add, self, other)

    def __radd__(self, other):
        return _binary(operator.add, np.add, other, self)

    def __sub__(self, other):
        return _binary(operator.sub, np.subtract, self, other)

    def __rsub__(self, other):
        return _binary(operator.sub, np.subtract, other, self)

    def __mul__(self, other):
        return _binary(operator.mul, np.multiply, self, other)

    def __rmul__(self, other):
        return _binary(operator.mul, np.multiply, other, self)

    def __truediv__(self, other):
        return _binary(operator.truediv, np.true_divide, self, other)

    def __rtruediv__(self, other):
        return _binary(operator.truediv, np.true_divide, other, self)

    def __floordiv__(self, other):
        return _binary(operator.floordiv, np.floor_divide, self, other)

    def __rfloordiv__(self, other):
        return _binary(operator.floordiv, np.floor_divide, other, self)

    def __mod__(self, other):
        return _binary(operator.mod, np.remainder, self, other)

    def __rmod__(self, other):
        return _binary(operator.mod, np.remainder, other, self)

    def __divmod__(self, other):
        return call(divmod, (self, other))

    def __rdivmod__(self, other):
        return call(divmod, (other, self))

    def __pow__(self, other, modulo=None):
        if modulo is not None:
            return NotImplemented
        if (type(other) is int or type(other) is float) and other == 2 and type(self.primal) is np.ndarray:
            if self.primal.dtype.kind in "fc":  # NumPy computes ``a ** 2`` of an inexact array as np.square(a)
                return call(np.square, (self,))
        return _binary(operator.pow, np.power, self, other)

    def __rpow__(self, other):
        return _binary(operator.pow, np.power, other, self)

    def __matmul__(self, other):
        return _binary(operator.matmul, np.matmul, self, other)

    def __rmatmul__(self, other):
        return _binary(operator.matmul, np.matmul, other, self)

    def __neg__(self):
        return call(operator.neg if _is_number(self) else np.negative, (self,))

    def __pos__(self):
        return call(operator.pos if _is_number(self) else np.positive, (self,))

    def __abs__(self):
        return call(abs if _is_number(self) else np.absolute, (self,))

    def __round__(self, ndigits=None):
        return call(round, (self,) if ndigits is None else (self, ndigits))

    # copy.copy and copy.deepcopy (a parameter dict copied in the user's code): a number is immutable
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # math.trunc, math.floor, math.ceil: integers, whose derivative is zero (as their rules give)
    def __trunc__(self):
        return call(math.trunc, (self,))

    def __floor__(self):
        return call(math.floor, (self,))

    def __ceil__(self):
        return call(math.ceil, (self,))

    def conjugate(self):
        return call(np.conjugate, (self,))

    conj = conjugate

    # -- array attributes and methods: the rules of their NumPy counterparts --
    def __getattr__(self, name: str):
        # Only missing attributes arrive here; NumPy probes dunder names, which duals do not have.
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _METADATA:  # facts about the primal's storage, not values with derivatives
            return getattr(self.primal, name)
        inner = _innermost(self)
        owner = type(inner)
        if isinstance(inner, ActiveValue):
            # another engine's value (an outer tape's) stands for the array or NumPy scalar inside it,
            # whose members it has (a Python number inside has none): their rules take it
            owner = np.ndarray if np.ndim(inner) else (np.generic if hasattr(inner, name) else None)
        member = getattr(owner, name, None)
        if member is None:
            raise AttributeError(f"{type(inner).__name__} (the primal of a dual) has no attribute {name!r}")
        if callable(member) and not isinstance(member, type):
            return _BoundMethod(member, self)
        twin = ATTRIBUTE_TWINS.get(name)
        # a nested dual's primal is a dual: the attribute's NumPy function works on it, getattr does not
        if twin is not None and (type(self.primal) in _DUALS or frule.lookup(getattr, (self.primal, name)) is None):
            return twin(self)
        return call(getattr, (self, name))

    # -- NumPy's protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:  # the common case first
            return call(ufunc, inputs)
        if method == "at" and ufunc is np.add and type(inputs[0]) in _DUALS and inputs[0].writable and not kwargs:
            inputs[0]._add_at(*inputs[1:])
            return None
        if "out" in kwargs or method == "at":
            how = "np.{0}.at(...)" if method == "at" else "np.{0}(..., out=...)"
            where = user_location()
            raise DroppedDerivativeError(
                f"{how.format(ufunc.__name__)}{' at ' + where if where else ''} writes in place, which dual numbers do "
                "not support: assign the result instead (y = np.add(a, b)); `x += v` on a plain NumPy array "
                "writes into it too: write x = x + v, or make the buffer with np.zeros_like of a dual, which "
                "takes writes (out[i] = v)"
            )
        f = ufunc if method == "__call__" else getattr(ufunc, method)
        return call(f, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func in _MADE_LIKE and args and type(args[0]) in _DUALS:
            # a new array shaped like a dual: a dual with zero partials, which owns its values
            made = call(func, args, kwargs)
            return made if made is NotImplemented else _owned_buffer(made, args[0].tag)
        if func is np.copy:
            return _owned_copy(call(func, args, kwargs))
        return call(func, args, kwargs)


_MADE_LIKE = frozenset({np.zeros_like, np.ones_like, np.empty_like, np.full_like})
_INPLACE_SYMBOLS = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.pow: "**",
    operator.matmul: "@",
}


def _owned_buffer(array, tag: Tag) -> Dual:
    """A dual that owns the new ``array`` and zero partials, and takes writes.

    The partials are allocated now, not at the first write: a view taken before a write (``r = b[1:]``,
    ``b.reshape(...)``) must see the write's tangent as NumPy's view sees its value."""
    if type(array) is DualArray and array.tag is tag:
        return _owned_copy(array)  # np.full_like(x, v) with a dual v: its fill carries a derivative
    if type(array) is not np.ndarray or array.dtype.kind not in "fc":
        return Dual(array, _ZERO, tag, writable=True)  # a nested dual, or a discrete array: no partials of its own
    shape = array.shape if tag.batch is None else (tag.batch, *array.shape)
    return Dual(array, np.zeros(shape, dtype=array.dtype), tag, writable=True)


def _owned_copy(out):
    """The result of a copy as a dual that takes writes: its primal is new, and its partials are
    copied into a plain array, so that a write cannot reach the tangent they were copied from
    (a rule passes a copy's tangent through as it is)."""
    if type(out) is not DualArray:
        return out  # a constant: a plain array, which takes writes of plain values
    partials, primal = out.partials, out.primal
    if isinstance(partials, np.ndarray):
        # in C order where the primal is (x.copy()): a reshape that views the primal then views the
        # partials too, so that both see a later write (a block of unit tangents is laid out otherwise)
        c_order = isinstance(primal, np.ndarray) and primal.flags.c_contiguous
        partials = np.array(partials, order="C" if c_order else "K")
    return Dual(primal, partials, out.tag, writable=True)


_METADATA = frozenset({"itemsize", "nbytes", "strides", "flags", "base", "device"})


class DualArray(InplaceOperators, Dual):
    """A dual whose primal is an array: it also indexes, iterates and has a length, like an ndarray.

    (A dual number has none of these, so NumPy sees it as a number, not a sequence: storing one
    into a plain array calls ``float()``, whose error says what to do.)
    """

    __slots__ = ()

    # copy.copy and copy.deepcopy: its own array and partials, as a copy of an array is (np.copy's)
    def __copy__(self):
        return np.copy(self)

    def __deepcopy__(self, memo):
        return np.copy(self)

    # A dual of an array is never a number: its operators are the NumPy ufuncs (see `_binary`).
    def __add__(self, other):
        return call(np.add, (self, other))

    def __radd__(self, other):
        return call(np.add, (other, self))

    def __sub__(self, other):
        return call(np.subtract, (self, other))

    def __rsub__(self, other):
        return call(np.subtract, (other, self))

    def __mul__(self, other):
        if reflected_by_its_class(operator.mul, other):  # (an spmatrix: a matrix product, see `__matmul__`)
            return call(operator.mul, (self, other))
        return call(np.multiply, (self, other))

    def __rmul__(self, other):
        return call(np.multiply, (other, self))

    def __truediv__(self, other):
        return call(np.true_divide, (self, other))

    def __rtruediv__(self, other):
        return call(np.true_divide, (other, self))

    def __matmul__(self, other):
        # an operand whose class implements the operator in Python (a sparse matrix), which NumPy's own
        # array defers to: the operator's rule for that class, as a tape records it
        if reflected_by_its_class(operator.matmul, other):
            return call(operator.matmul, (self, other))
        return call(np.matmul, (self, other))

    def __rmatmul__(self, other):
        return call(np.matmul, (other, self))

    # `x += v` updates NumPy's array in place, which every name, container and view holding it
    # sees. A dual that owns its values (np.zeros_like & co., a copy, and views of those) is
    # written into, primal and partials, so its views see the write as NumPy's do. Any other
    # dual takes the result's fields, so its holders see it too; one whose values another array
    # may see (a view of it, the array it is a view of, the caller's argument) is refused, since
    # those would keep the old values. A plain array's view or entry (`buffer[i] += v` on a
    # NumPy scalar) is rebound, as `x = x + v`: Python writes it back with `buffer[i] = ...`.
    def _inplace(self, f, other):
        primal = self.primal
        if type(primal) is not np.ndarray:
            return NotImplemented  # a number, or a nested dual
        if not self.writable and _may_be_seen(primal):
            where = user_location()
            raise TypeError(
                f"in-place {_INPLACE_SYMBOLS[f]}= on a dual array that may share memory with another (an argument, "
                f"a view, a reshape){' at ' + where if where else ''}: write x = x {_INPLACE_SYMBOLS[f]} v instead"
            )
        result = f(self, other)
        if type(result) is not DualArray or result.tag is not self.tag:
            if self.writable and type(result) is np.ndarray:
                self[...] = _cast_inplace(f, result, primal)  # a constant result (x *= 0.0)
                return self
            return result  # an outer differentiation's value: rebound, as before
        new = result.primal
        if np.shape(new) != primal.shape:
            raise ValueError(
                f"in-place {_INPLACE_SYMBOLS[f]}= would change the array's shape from {primal.shape} to {np.shape(new)}"
            )
        _cast_inplace(f, new, primal)
        self._take(result)
        return self

    def _take(self, result) -> None:
        """This dual updated in place to ``result``, a dual of its tag and shape: written into the
        primal and partials it owns, which views of them share, or else given the result's."""
        if self.writable:
            self[...] = result
            return
        primal, new, partials = self.primal, result.primal, result.partials
        if new.dtype != primal.dtype:  # NumPy casts the result to the array's dtype
            new = new.astype(primal.dtype)
            partials = partials.astype(primal.dtype) if isinstance(partials, np.ndarray) else partials
        self.primal, self.partials = new, partials

    # `z.real = v` and `z.imag = v` write into a part of the array's memory: an update in place of
    # all of it, as `x += v` is (reading them is `__getattr__`'s, as for any other attribute)
    real = property(lambda self: self.__getattr__("real"), lambda self, v: self._assign_part("real", v))
    imag = property(lambda self: self.__getattr__("imag"), lambda self, v: self._assign_part("imag", v))

    def _assign_part(self, name: str, value) -> None:
        """``z.real = v`` (``name`` "real") or ``z.imag = v``: the dual updated in place to ``z`` with
        that part replaced (``core.active.with_part``); refused where another array may see the old
        values, as ``x += v`` is."""
        primal = self.primal
        # (a nested dual's primal, another dual, is not told apart from one others hold: refused too)
        if not self.writable and (type(primal) is not np.ndarray or _may_be_seen(primal)):
            raise part_assignment_refused(name, user_location())
        result = with_part(self, name, value)
        if type(result) is np.ndarray:  # (a constant written into a real array)
            result = Dual(result, _ZERO, self.tag)
        if type(result) is not DualArray or result.tag is not self.tag:
            raise TypeError("a dual of an inner differentiation cannot be stored in an outer one's array")
        if result.shape != primal.shape:
            raise ValueError(f"could not broadcast the value of `z.{name}` into shape {primal.shape}")
        self._take(result)

    def __len__(self) -> int:
        return len(self.primal)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # -- indexing --
    def __getitem__(self, key):
        if self.writable:
            view = self._view_of_owned(key)
            if view is not None:
                return view
        out = call(operator.getitem, (self, key))
        if not self.writable:
            return out
        if type(out) is np.ndarray:
            # a part of a buffer that takes writes, with no partials yet: a dual all the same, so that
            # ``x[i] += dual`` adds as duals do and writes back (a plain view's += would write a dual
            # into a plain array)
            return Dual(out, _ZERO, self.tag)
        if type(out) is Dual and np.ndim(out.partials):
            # an entry read from a buffer is a copy (NumPy's scalar), but its batch of partials is a
            # view of the buffer's: copied, or a later write into the buffer would change them
            out.partials = np.copy(out.partials)
        return out

    def __setitem__(self, key, value):
        """``x[key] = value`` for a dual made by ``np.zeros_like``/``ones_like``/``empty_like``/``full_like``
        or a copy (``np.copy(x)``, ``x.copy()``).

        A write copies: the primal gets the value's primal, the partials (every tangent of a
        batch) get the value's partials, entry by entry, as a container stores its items."""
        v, dv = self._writable_split(value, "assigning into")
        self.primal[key] = v
        if type(self.primal) is np.ndarray and self.primal.dtype.kind not in "fc":
            dv = _ZERO  # an integer or boolean array truncates what it stores: no derivative passes
        target = self._partials_buffer(dv)
        if target is None:
            return
        dv = 0.0 if isinstance(dv, AbstractZero) else dv
        if self.tag.batch is None:
            target[key] = dv
        else:  # the batch axis last, so the key indexes the primal's axes and values broadcast on the right
            at = ellipsis_spelled_out(key, self.primal.ndim)
            np.moveaxis(target, 0, -1)[at] = dv if type(dv) is float else np.moveaxis(dv, 0, -1)

    def _view_of_owned(self, key):
        """``self[key]`` as a dual that takes writes, when NumPy's result is a view: its primal and
        partials are views of this dual's, so that a write through either reaches the other."""
        primal, partials = self.primal, self.partials
        if type(primal) is not np.ndarray or type(partials) is not np.ndarray:
            return None
        part = primal[key]
        if type(part) is not np.ndarray or not np.shares_memory(part, primal):
            return None  # an entry (a NumPy scalar) or a copy (advanced indexing): read by the rule
        if self.tag.batch is None:
            dpart = partials[key]
        else:
            dpart = np.moveaxis(np.moveaxis(partials, 0, -1)[ellipsis_spelled_out(key, primal.ndim)], -1, 0)
        if dpart.shape != (part.shape if self.tag.batch is None else (self.tag.batch, *part.shape)):
            return None
        return Dual(part, dpart, self.tag, writable=True)

    def _writable_split(self, value, what: str):
        if not self.writable:
            where = user_location()
            raise conversion_in_rule(
                sys._getframe(1), "dual numbers", "writes into them in place"
            ) or DroppedDerivativeError(
                f"{what} a dual array{' at ' + where if where else ''} is not supported: only a dual made by "
                "np.zeros_like/ones_like/empty_like/full_like or a copy (x.copy()) owns its values and accepts "
                "writes; otherwise build a new array (np.where, np.concatenate, np.stack)"
            )
        if isinstance(value, (list, tuple)) and _has_dual(value, self.tag):
            value = call(np.asarray, (value,))  # (NumPy would convert the list's duals: its rule stacks them)
        if type(value) in _DUALS:
            if value.tag is self.tag:
                return value.primal, value.partials
            if value.tag.order > self.tag.order:
                raise TypeError("a dual of an inner differentiation cannot be stored in an outer one's array")
        return value, _ZERO

    def _partials_buffer(self, dv):
        """The partials as an array this dual owns (allocated at the first nonzero write), or None."""
        target = self.partials
        if isinstance(target, AbstractZero):
            if isinstance(dv, AbstractZero):
                return None
            shape = _shape(self.primal) if self.tag.batch is None else (self.tag.batch, *_shape(self.primal))
            target = np.zeros(shape, dtype=_tangent_dtype(self.primal))
            if isinstance(self.primal, ActiveValue):  # a nested dual: the tangents written are the outer one's values
                target = self.primal.buffer_holding(target)
                if target is None:
                    return None
            self.partials = target
        return target

    def _add_at(self, index, value):
        """``np.add.at(x, index, value)`` for a writable dual: scattered sums, repeated indices included."""
        v, dv = self._writable_split(value, "np.add.at into")
        np.add.at(self.primal, index, v)
        target = self._partials_buffer(dv)
        if target is None or isinstance(dv, AbstractZero):
            return
        if self.tag.batch is None:
            np.add.at(target, index, dv)
        else:
            at = ellipsis_spelled_out(index, self.primal.ndim)
            np.add.at(np.moveaxis(target, 0, -1), at, dv if np.ndim(dv) == 0 else np.moveaxis(dv, 0, -1))


def _may_be_seen(primal: np.ndarray) -> bool:
    """Whether an array other than a dual's ``primal`` may see its memory: a view of it, or, for a
    view, the array it views or another view of that (counting the references: the dual's, the
    caller's name and getrefcount's argument; a view holds its base as ``ndarray.base``)."""
    if sys.getrefcount(primal) > 4:  # (one more here: this function's argument)
        return True
    base = primal.base
    return base is not None and sys.getrefcount(base) > 3  # the view's, this name's and the argument's


def _cast_inplace(f, new, primal: np.ndarray):
    """NumPy's check on ``x op= v``: the result must cast to ``x``'s dtype (same kind)."""
    dtype = np.result_type(_primal_dtype(new))
    if not np.can_cast(dtype, primal.dtype, casting="same_kind"):
        where = user_location()
        raise TypeError(
            f"in-place {_INPLACE_SYMBOLS[f]}= cannot cast the result from {dtype} to the array's {primal.dtype}"
            f"{' at ' + where if where else ''} (NumPy's same_kind rule)"
        )
    return new


_DUALS = (Dual, DualArray)
_ARRAY_PRIMALS = (np.ndarray, DualArray)


class _BoundMethod:
    """``x.sum`` for a dual ``x``: calling it runs the rule of ``np.ndarray.sum`` on ``(x, ...)``."""

    __slots__ = ("method", "dual")

    def __init__(self, method, dual: Dual):
        self.method = method
        self.dual = dual

    def __call__(self, *args, **kwargs):
        method, dual = self.method, self.dual
        if method_twin(method) is not None and (
            type(dual.primal) in _DUALS or frule.lookup(method, (dual.primal, *args)) is None
        ):
            return call_twin(method, dual, args, kwargs, _nested_argument_refused)
        if method is np.ndarray.copy:
            return _owned_copy(call(method, (dual, *args), kwargs))
        # an argument of a differentiation nested inside: NumPy's function hands it over
        return call_method(method, dual, args, kwargs, call, _nested_argument_refused)

    def __repr__(self) -> str:
        return f"<method {getattr(self.method, '__qualname__', self.method)} of {self.dual!r}>"


@rrule.register(_BoundMethod)
def rrule_bound_method_call(bound: _BoundMethod, *args, **kwargs):
    """A dual's method called as a value (``m = x.sum``, then ``m()``) in code a reverse engine runs
    on duals (a Hessian): the method's rule on the dual; the callable's cotangent is the dual's,
    as a bound method's is its object's."""
    y, pullback = rrule(bound.method, bound.dual, *args, **kwargs)

    def bound_method_pullback(dy):
        _, d_self, *d_args = pullback(dy)
        return (d_self, *d_args)

    return y, bound_method_pullback


def _nested_argument_refused(method) -> TypeError:
    where = user_location()
    return TypeError(
        f"x.{method.__name__}(...) of a dual with an argument of a differentiation nested inside its "
        f"own{' at ' + where if where else ''}: call the NumPy function instead (np.{method.__name__})"
    )


_NUMBERS = (float, int, complex, bool)


def _is_number(x) -> bool:
    """Whether ``x`` is (or, for a dual, wraps) a Python number: not an array, nor a nested dual."""
    if type(x) in _DUALS:
        x = x.primal
    return type(x) in _NUMBERS


def _binary(op, ufunc, a, b):
    """An arithmetic operator: ``op``'s rule for Python numbers, the NumPy ufunc's for arrays.

    On NumPy values ``a * b`` *is* ``np.multiply(a, b)``; its rule also broadcasts a batch of
    tangents between operands of different ranks. A dual of an older tag is not a number to
    the newer one (its rule sees the dual itself), so it takes the ufunc too.
    """
    if type(a) in _DUALS:
        if type(b) in _DUALS:
            newest = a.tag if a.tag.order > b.tag.order else b.tag
            numbers = a.tag is newest and type(a.primal) in _NUMBERS and b.tag is newest and type(b.primal) in _NUMBERS
        elif type(b) in _NUMBERS:
            numbers = type(a.primal) in _NUMBERS
        elif isinstance(b, AbstractTangent):
            return NotImplemented  # a zero (an engine's cotangent, in a Hessian): its own operators answer
        elif reflected_by_its_class(op, b):
            return NotImplemented  # Python calls the user's `b.__rmul__(a)`, as with a plain number
        else:
            numbers = False
    elif isinstance(a, AbstractTangent):
        return NotImplemented
    else:
        numbers = type(a) in _NUMBERS and type(b.primal) in _NUMBERS
    return call(op if numbers else ufunc, (a, b))


def _primal(x):
    return x.primal if type(x) in _DUALS else x


def _innermost(x):
    while type(x) in _DUALS:
        x = x.primal
    return x


# ----- the one operation: look up the frule, run it, wrap the result -----------------------


def _newest_tag(args, tag: Tag | None) -> Tag | None:
    for a in args:
        ta = type(a)
        if ta in _DUALS:
            t = a.tag
            if tag is None or t.order > tag.order:
                tag = t
        elif ta in _CONTAINERS or (isinstance(a, tuple) and a):
            tag = _newest_tag(a, tag)
    return tag


def _split(a, tag: Tag):
    """``(primal, tangent)`` of one argument with respect to ``tag``."""
    if type(a) in _DUALS:
        if a.tag is tag:
            return a.primal, a.partials
        return a, _ZERO  # a dual of an older tag is a constant here
    if isinstance(a, _CONTAINERS) and a:
        pairs = [_split(item, tag) for item in a]
        tangents = [t for _, t in pairs]
        if all(isinstance(t, AbstractZero) for t in tangents):
            return a, _ZERO
        items = [p for p, _ in pairs]
        P = type(a)
        primal = namedtuple_with(a, dict(zip(P._fields, items))) if _is_namedtuple_type(P) else P(items)
        return primal, Tangent[P](*tangents)
    return a, _ZERO


def _opened(a, tag: Tag, depth: int = 3):
    """``(primal, tangent)`` of ``a`` with respect to ``tag`` as ``_split`` gives it, where ``a`` may
    also be an object whose fields hold duals of ``tag`` (a callable object's, a bound method's
    object, within ``depth`` levels as ``engine_values_in`` looks): a copy holding their primals,
    and a ``Tangent[P]`` of its items' tangents, as the reverse engines give its cotangent. Only
    the parts that hold such duals are walked; a function that captured some is left as it is."""
    if type(a) in _DUALS:
        return _split(a, tag)
    if type(a) is types.MethodType:  # a bound method stands for its object (see the registry's `lookup`)
        owner, d = _opened(a.__self__, tag, depth)
        return (a, d) if owner is a.__self__ else (types.MethodType(a.__func__, owner), d)
    if depth == 0 or type(a) in _UNSTRUCTURED or not is_structure(a) or not _holds_duals(a, tag, depth):
        return a, _ZERO
    items = structure_items(a)
    P = type(a)
    if isinstance(items, list):
        pairs = [_opened(v, tag, depth - 1) for v in items]
        if all(isinstance(t, AbstractZero) for _, t in pairs):
            return a, _ZERO
        return P(p for p, _ in pairs), Tangent[P](*(t for _, t in pairs))
    pairs = {k: _opened(v, tag, depth - 1) for k, v in items.items()}
    tangents = {k: t for k, (_, t) in pairs.items()}
    if all(isinstance(t, AbstractZero) for t in tangents.values()):
        return a, _ZERO
    changed = {k: p for k, (p, _) in pairs.items() if p is not items[k]}
    if isinstance(a, dict):
        primal = copy.copy(a)
        primal.update(changed)
        return primal, Tangent[dict](tangents)
    return (namedtuple_with(a, changed) if _is_namedtuple_type(P) else with_fields(a, changed)), Tangent[P](**tangents)


def _holds_duals(a, tag: Tag | None = None, depth: int = 3) -> bool:
    """Whether ``a`` holds duals (of ``tag``, if given) within ``depth`` levels (``engine_values_in``)."""
    return any(type(v) in _DUALS and (tag is None or _of_tag(v, tag)) for v in engine_values_in(a, depth))


def _newest_held_tag(values, tag: Tag | None) -> Tag | None:
    for v in engine_values_in(values, 4):
        if type(v) in _DUALS and (tag is None or v.tag.order > tag.order):
            tag = v.tag
    return tag


#: callables that hold no values of their own (a ``call``'s function is almost always one)
_UNSTRUCTURED = frozenset(
    (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType, np.ufunc)
)


def _inner_foreign(args, order: int) -> bool:
    """Whether an argument (or an item of a tuple or list argument) is another engine's value (an
    outer tape's tracked array) of a differentiation started after the tag of ``order``: nested
    inside this one, it handles the operation, with this tag's duals as constants (see ``call``)."""
    for a in args:
        ta = type(a)
        if ta in _DUALS:
            continue
        if ta in _CONTAINERS or isinstance(a, tuple):
            if _inner_foreign(a, order):
                return True
        elif isinstance(a, ActiveValue) and a.differentiation_order() > order:
            return True
    return False


def _has_dual(value, tag: Tag) -> bool:
    if type(value) in _DUALS:
        return value.tag is tag
    if isinstance(value, (list, tuple)):
        return any(_has_dual(v, tag) for v in value)
    if isinstance(value, dict):
        return any(_has_dual(v, tag) for v in value.values())
    return False


def call(f: Callable, args: tuple, kwargs: dict | None = None):
    """``f(*args, **kwargs)`` where some arguments are duals: the pushforward by ``f``'s ``frule``.

    ``NotImplemented`` when an argument is another engine's value of a differentiation nested
    inside this one (a tape's, inside ``cr.jacobian(..., mode="forward")`` run on an outer tape's
    values... or the other way round): NumPy's protocols and Python's operators then hand the
    operation to that value, which treats the duals as constants.

    >>> import numpy as np
    >>> from chainrules.forward import Dual, Tag
    >>> from chainrules.forward.dual import call
    >>> y = call(np.multiply, (Dual(3.0, 1.0, Tag()), 2.0))
    >>> float(y.primal), float(y.partials)
    (6.0, 2.0)
    """
    if not kwargs:
        # the common call, in one pass: positional arguments only, every dual of one tag, no containers
        tag = None
        primals = []
        tangents = [_NO]
        for a in args:
            ta = type(a)
            if ta is DualArray or ta is Dual:
                if tag is not a.tag:
                    if tag is not None:
                        break  # duals of two tags (nested differentiation)
                    tag = a.tag
                primals.append(a.primal)
                tangents.append(a.partials)
            elif ta is np.ndarray or ta is float:  # a constant, without the tests below
                primals.append(a)
                tangents.append(_ZERO)
            elif (
                ta is list or ta is tuple or isinstance(a, tuple) or isinstance(a, (ActiveValue, AbstractTangent))
            ):  # a container may hold duals; another engine's value may be an inner differentiation's; a
                break  # tangent (a pullback's cotangent in a Hessian) is its value, or a zero that takes the operation
            else:
                primals.append(a)
                tangents.append(_ZERO)
        else:
            if tag is None:
                return f(*args)
            if tag.finished:
                raise escaped(tag, args)
            if _PUSHERS_VERSION[0] != frule.version:
                _renew()
            if RULED_CALLS.on:
                RULED_CALLS.check(tag, sys._getframe(1))
            # pusher_for(f, primals), with its cache read here: one Python call less per operation
            try:
                n = len(primals)
                pusher = _PUSHERS.get(
                    (f, type(primals[0]), type(primals[1]))
                    if n == 2
                    else (f, type(primals[0]))
                    if n == 1
                    else (f, *map(type, primals))
                )
            except TypeError:  # an unhashable callable
                pusher = None
            if pusher is None:
                pusher = pusher_for(f, primals)
                if pusher is None:
                    return _without_rule(f, primals, _NO_KWARGS, tag)
            how, rule, partials = pusher
            return how(f, rule, partials, primals, tangents, tag)
    return _call_general(f, args, kwargs, sys._getframe(1))


def _call_general(f: Callable, args: tuple, kwargs: dict | None, caller, opening: bool = False):
    """``call`` with keyword arguments, containers among the arguments, or duals of several tags.
    ``opening``: the callable (a user's object, a bound method's object) or an argument may hold
    duals in its fields, which reach the rule as that value's tangent (see ``_opened``)."""
    if any(isinstance(a, AbstractTangent) for a in args):
        if any(isinstance(a, AbstractZero) for a in args):
            return NotImplemented  # the zero's operator takes it (``x * ZeroTangent()``), as beside an array
        # a lazy cotangent (a pullback's, in a Hessian) is the value it computes: without it, the
        # rule would compute with the thunk as a constant, whose value is a dual of this very tag
        return call(f, tuple(unthunk(a) for a in args), kwargs)
    tag = None
    for a in args:
        if type(a) in _DUALS:
            if tag is None or a.tag.order > tag.order:
                tag = a.tag
        elif type(a) in _CONTAINERS or isinstance(a, tuple):
            tag = _newest_tag(a, tag)
    if kwargs:
        tag = _newest_tag(kwargs.values(), tag)
        if tag is not None and _has_dual(kwargs, tag):
            # options carry no derivative: their primals (see core.keywords)
            kwargs = {k: _split(v, tag)[0] if is_option(f, k) else v for k, v in kwargs.items()}
            # rules differentiate positional arguments: pass the others by their positions
            dual_keywords = [k for k, v in kwargs.items() if _has_dual(v, tag)]
            if dual_keywords:
                moved = as_positional(f, args, kwargs, dual_keywords)
                if moved is None:
                    where = user_location()
                    raise TypeError(
                        f"{_name(f)}: a dual number was passed as the keyword argument {dual_keywords[0]!r}"
                        f"{f' (at {where})' if where else ''}; forward mode differentiates positional arguments "
                        "only, and no position of its signature can take it"
                    )
                return _call_general(f, moved[0], moved[1], caller, opening)
    else:
        kwargs = _NO_KWARGS
    if opening:
        tag = _newest_held_tag((f, args), tag)
    if tag is None:
        return f(*args, **kwargs)
    if tag.finished:
        raise escaped(tag, (f, args, kwargs))
    if _inner_foreign(args, tag.order):
        return NotImplemented
    if _PUSHERS_VERSION[0] != frule.version:
        _renew()
    if RULED_CALLS.on:
        RULED_CALLS.check(tag, caller)
    primals = []
    tangents = [_NO]
    if opening:
        f, df = _opened(f, tag)
        if not isinstance(df, AbstractZero):
            tangents[0] = df
    for a in args:
        if type(a) in _DUALS:
            if a.tag is tag:
                primals.append(a.primal)
                tangents.append(a.partials)
            else:
                primals.append(a)
                tangents.append(_ZERO)
        elif opening or (type(a) in _CONTAINERS and a):
            p, t = _opened(a, tag) if opening else _split(a, tag)
            primals.append(p)
            tangents.append(t)
        else:
            primals.append(a)
            tangents.append(_ZERO)
    if opening:
        _refuse_unopened(f, primals, kwargs, tag)
        # (a copy of the callable is made at each call: its pusher is not kept)
        pusher = _pusher(frule.lookup(f, primals) or _lookup_twin(f, primals), len(primals))
    else:
        pusher = pusher_for(f, primals)
    if pusher is None:
        return _without_rule(f, primals, kwargs, tag)
    return push(f, pusher, primals, tangents, kwargs, tag)


def _refuse_unopened(f, primals: list, kwargs: dict, tag: Tag) -> None:
    """Refuse a rule's call where duals of ``tag`` are still inside the callable or an argument once
    ``_opened`` took out what it could (captured by a function): the rule would take them for
    constants, and its tangent would miss theirs."""
    if any(_holds_duals(v, tag) for v in (f, *primals, *kwargs.values())):
        raise NoForwardRuleError(
            f,
            tuple(primals),
            location=user_location(),
            reason="its forward rule takes the values being differentiated as arguments, and in the fields of "
            "objects (the callable itself, an argument), not captured by a function",
        )


def push(f: Callable, pusher: tuple, primals: list, tangents: list, kwargs: dict, tag: Tag):
    """``f(*primals, **kwargs)`` pushed forward along ``tangents`` (``(df, dx1, ...)``, batched when
    ``tag.batch`` is set) by ``f``'s ``pusher`` (see ``pusher_for``), wrapped as a dual of ``tag``
    (a plain value where the tangent is zero)."""
    how, rule, partials = pusher
    if kwargs:
        if how is _by_partials or how is _by_one_partial:  # the partials are for the positional arguments alone:
            # the rule takes the keywords
            how = _by_batched_rule if getattr(rule, "batched", False) else _by_rule
        return how(f, rule, partials, primals, tangents, tag, kwargs)
    return how(f, rule, partials, primals, tangents, tag)


# ----- pushers: how the calls of one callable with one set of argument types are pushed forward --
#
# A pusher is ``(how, rule, partials)``: ``how(f, rule, partials, primals, tangents, tag, kwargs)``
# runs the frule ``rule`` (or forms the pushforward from its ``partials``) and wraps the result.
# The choice among them depends on the rule alone, so it is made once per callable and argument
# types (``pusher_for``), not at every operation.


_UNSET = object()  # (no output computed yet)


def _by_partials(f, rule, partials, primals, tangents, tag, kwargs=None, y=_UNSET):
    """An elementwise ``f`` pushed forward from the partial derivatives its rule was made from.

    ``scalar_rule`` and the NumPy elementwise rows keep their partials on the rule (``.partials``);
    this is their pushforward ``sum(p * dx)``, with only the partials of nonzero tangents
    computed, and batched tangents of lower-rank inputs given axes so the batch axis lines up.
    """
    batch = tag.batch
    if y is _UNSET:  # (else the output, computed by `_by_one_partial`)
        y = f(*primals)
    ty = type(y)
    if batch is not None:
        y_ndim = y.ndim if ty is np.ndarray else _ndim(y)
    dy = _ZERO
    i = 0
    for p, takes_out in partials:
        i += 1
        dx = tangents[i]
        if p is None:
            continue
        tdx = type(dx)
        if tdx is not np.ndarray and tdx is not float and tdx is not np.float64:
            if isinstance(dx, AbstractZero):
                continue
            dx = unthunk(dx)
        if batch is not None:
            x = primals[i - 1]
            if type(x) is not np.ndarray or x.ndim != y_ndim:
                missing = y_ndim - _ndim(x)
                if missing > 0:
                    dx = np.reshape(dx, (batch,) + (1,) * missing + _shape(x))
        d = p(*primals, out=y) if takes_out else p(*primals)
        if type(d) is float and (d == 1.0 or d == -1.0):
            term = dx if d == 1.0 else -dx
        else:
            term = d * dx
        dy = term if dy is _ZERO else dy + term
    if ty is np.ndarray and (type(dy) is np.ndarray or isinstance(dy, np.ndarray)):
        y_dtype = y.dtype
        want = y.shape if batch is None else (batch,) + y.shape
        if dy.dtype == y_dtype and y_dtype.kind in "fc" and dy.shape == want:
            # the common result: an inexact array and its tangent of the right shape, wrapped
            # as `_wrap` and `_fit` would, without their walk
            out = _new_object(DualArray)
            out.primal, out.partials, out.tag, out.writable = y, dy, tag, False
            return out
    elif (ty is float or ty is np.float64) and batch is None and (type(dy) is float or type(dy) is np.float64):
        # a real number and its real tangent (scalar code): the dual `_partials_output` would make
        out = _new_object(Dual)
        out.primal, out.partials, out.tag, out.writable = y, dy, tag, False
        return out
    return _partials_output(f, y, dy, tag)


def _by_one_partial(f, rule, partials, primals, tangents, tag, kwargs=None):
    """``_by_partials`` for a function of one argument (``np.square``, ``np.sin``, a one-argument
    ``scalar_rule``): at an array with an array tangent, its one term ``p * dx`` without the loop
    over arguments (an elementwise output has the input's axes: no batch axes to line up)."""
    x = primals[0]
    dx = tangents[1]
    if type(x) is not np.ndarray or type(dx) is not np.ndarray:
        return _by_partials(f, rule, partials, primals, tangents, tag)
    y = f(x)
    if type(y) is not np.ndarray or y.ndim != x.ndim:
        return _by_partials(f, rule, partials, primals, tangents, tag, _UNSET, y)
    p, takes_out = partials[0]
    if p is None:
        return _partials_output(f, y, _ZERO, tag)
    d = p(x, out=y) if takes_out else p(x)
    if type(d) is float and (d == 1.0 or d == -1.0):
        dy = dx if d == 1.0 else -dx
    else:
        dy = d * dx
    if type(dy) is np.ndarray:
        y_dtype = y.dtype
        batch = tag.batch
        want = y.shape if batch is None else (batch,) + y.shape
        if dy.dtype == y_dtype and y_dtype.kind in "fc" and dy.shape == want:
            out = _new_object(DualArray)  # the common result, wrapped as in `_by_partials`
            out.primal, out.partials, out.tag, out.writable = y, dy, tag, False
            return out
    return _partials_output(f, y, dy, tag)


def _partials_output(f, y, dy, tag: Tag):
    """The output ``y`` of an elementwise function and its summed tangent ``dy`` as ``_by_partials``
    gives them: the tangent of the output's dtype (real for a real output), fitted, wrapped."""
    if type(dy) is np.ndarray or isinstance(dy, np.ndarray):
        if type(y) is np.ndarray:
            y_dtype = y.dtype
            if dy.dtype != y_dtype:  # the output's dtype (float32 stays float32), real for a real output
                dy = np.real(dy) if dy.dtype.kind == "c" and y_dtype.kind != "c" else dy
                if y_dtype.kind in "fc":  # an integer output's tangent stays a float (ProjectTo's)
                    dy = dy.astype(y_dtype, copy=False)
        else:
            dy = _number_output_tangent(y, dy)
    elif dy is not _ZERO and type(dy) is not float:
        dy = _number_output_tangent(y, dy)
    return _wrapped(y, _fit(f, y, dy, tag.batch), tag)


def _number_output_tangent(y, dy):
    """The tangent ``dy`` of a number ``y`` (a NumPy scalar, a Python number): real for a real ``y``
    (a real function of a complex input: its partial is written for real(p * dz)), and of a NumPy
    scalar's dtype (np.float32 + np.float64)."""
    if np.iscomplexobj(dy) and not np.iscomplexobj(y):
        dy = np.real(dy)
    if isinstance(y, np.inexact) and isinstance(dy, (np.ndarray, np.generic)) and dy.dtype != y.dtype:
        dy = dy.astype(y.dtype)
    return dy


def _by_batched_rule(f, rule, partials, primals, tangents, tag, kwargs=_NO_KWARGS):
    """A rule registered ``batched=True``: given the batch of tangents as it is."""
    batch = tag.batch
    y, dy = rule(tuple(tangents), *primals, **kwargs) if kwargs else rule(tuple(tangents), *primals)
    if (
        type(y) is np.ndarray
        and isinstance(dy, np.ndarray)
        and dy.shape == (y.shape if batch is None else (batch,) + y.shape)
        and y.dtype.kind in "fc"
    ):  # the common result, wrapped as `_fit` and `_wrapped` would, without their walk
        out = _new_object(DualArray)
        out.primal, out.partials, out.tag, out.writable = y, dy, tag, False
        return out
    fitted = _fit(f, y, dy, batch)
    if fitted is None:  # the batch axis got lost: the rule is right for one tangent at a time
        y, fitted = _loop(f, rule, tangents, primals, kwargs, batch)
    return _wrapped(y, fitted, tag)


def _by_rule(f, rule, partials, primals, tangents, tag, kwargs=_NO_KWARGS):
    """Any other rule: given one tangent, or called once per element of a batch."""
    batch = tag.batch
    if batch is None:
        y, dy = rule(tuple(tangents), *primals, **kwargs)
        return _wrapped(y, _fit(f, y, dy, None), tag)
    return _wrapped(*_loop(f, rule, tangents, primals, kwargs, batch), tag)


def _wrapped(y, dy, tag: Tag):
    """The output ``y`` with its (fitted) tangent ``dy`` as a dual of ``tag``, or plain where it is zero."""
    ty = type(y)
    if (ty is np.ndarray and y.dtype.kind in "fc") or ty is float or ty is np.float64:
        if isinstance(dy, AbstractZero):
            return y
        out = _new_object(DualArray if ty is np.ndarray else Dual)  # Dual(y, dy, tag), without its dispatch
        out.primal, out.partials, out.tag, out.writable = y, dy, tag, False
        return out
    return _wrap(y, dy, tag)


_new_object = object.__new__


# (callable, argument types) -> pusher; valid while the registry's version is unchanged
_PUSHERS: dict = {}
_PUSHERS_VERSION = [-1]
# (id(callable), argument types) -> weak reference to a callable found to have no rule for them
# (a user's function, at every jvp or Jacobian): weak and by identity, as the callable may be a
# function made for one call, which the cache must neither keep alive nor mistake for a later one
_UNRULED: dict = {}
_UNRULED_LIMIT = 1024


def _renew() -> None:
    """Forget what was derived from the registry (pushers, whether ruled calls are watched): it changed."""
    _PUSHERS.clear()
    _UNRULED.clear()
    RULED_CALLS.refresh()
    _PUSHERS_VERSION[0] = frule.version


def pusher_for(f, primals) -> tuple | None:
    """The pusher (see ``push``) for ``f(*primals)`` from its frule (its own, else its twin's), or
    ``None`` without a rule. Cached per callable and argument types."""
    if _PUSHERS_VERSION[0] != frule.version:
        _renew()
    n = len(primals)
    try:
        key = (f, type(primals[0])) if n == 1 else (f, *map(type, primals))
        found = _PUSHERS.get(key)
    except TypeError:  # an unhashable callable: looked up every time
        key, found = None, None
    if found is None:
        if key is not None:
            unruled = (id(f), type(primals[0])) if n == 1 else (id(f), *key[1:])
            known = _UNRULED.get(unruled)
            if known is not None and known() is f:
                return None
        found = _pusher(frule.lookup(f, primals) or _lookup_twin(f, primals), n)
        if found is None:
            if key is not None:
                _remember_unruled(f, unruled)
            return None
        if key is not None:
            _PUSHERS[key] = found
    return found


def _pusher(rule, n: int) -> tuple | None:
    """The pusher (see ``push``) of the frule ``rule`` for a call with ``n`` arguments (``None``: no rule)."""
    if rule is None:
        return None
    partials = getattr(rule, "partials", None)
    if partials is not None and len(partials) == n:
        how = _by_one_partial if len(partials) == 1 else _by_partials
        return how, rule, tuple((p, p is not None and _takes_out(p)) for p in partials)
    return _by_batched_rule if getattr(rule, "batched", False) else _by_rule, rule, None


def _remember_unruled(f, key: tuple) -> None:
    try:
        ref = weakref.ref(f)
    except TypeError:  # not weakly referenceable (a builtin): looked up every time
        return
    if len(_UNRULED) >= _UNRULED_LIMIT:  # entries of callables gone since are dropped now and then
        _UNRULED.clear()
    _UNRULED[key] = ref


def _takes_out(partial) -> bool:
    """Whether a partial declares the keyword-only ``out`` (it is given the primal output)."""
    try:
        param = inspect.signature(partial).parameters.get("out")
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY


def _lookup_twin(f, primals):
    twin = twin_of(f)
    return None if twin is None else frule.lookup(twin, primals)


def _name(f) -> str:
    from ..core import callable_name

    return callable_name(f)


# NumPy functions that write into an argument: run on a dual's primal they would change it behind
# the derivative's back
_WRITERS = frozenset({np.copyto, np.place, np.put, np.putmask, np.fill_diagonal, np.put_along_axis})


def _without_rule(f, primals, kwargs, tag):
    """A call with no rule: fine when its result is discrete (shapes, booleans, integers), else loud.
    In the body of a Python callable with a rule that received duals of ``tag`` (a library
    function's), the error says forward mode cannot use that rule, as for a refused conversion.

    Array methods without a rule are not run at all (``x.sort()`` would sort the primal in place)."""
    if not (any(f is w for w in _WRITERS) or isinstance(f, (types.MethodDescriptorType, types.WrapperDescriptorType))):
        y = f(*primals, **kwargs)
        if _is_discrete(y):
            return y
    error = NoForwardRuleError(f, tuple(primals), location=user_location(), reason="forward mode needs an frule")
    raise _kept(tag, RULED_CALLS.refused(tag, sys._getframe(1), error))


def _is_discrete(y) -> bool:
    if isinstance(y, (bool, int, str, bytes, type(None), np.dtype, type)):
        return True
    if isinstance(y, (np.ndarray, np.generic)):
        return y.dtype.kind in "biuSUM"
    if isinstance(y, (tuple, list)):
        return all(_is_discrete(v) for v in y)
    return False


def _wrap(y, dy, tag: Tag):
    if isinstance(dy, AbstractZero):
        return y
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return y
    if _is_structured(y):
        return _rebuilt(y, {k: _wrap(v, d, tag) for k, (v, d) in _items_and_tangents(y, dy).items()})
    if isinstance(y, (np.ndarray, np.generic)) and y.dtype.kind not in "fciu":
        if y.dtype.kind == "O":  # (x.astype(object): Python numbers, whose derivative a dual cannot hold)
            where = user_location()
            raise _kept(
                tag,
                DroppedDerivativeError(
                    f"an array of objects made from dual numbers{' at ' + where if where else ''} would drop their "
                    "derivative: forward mode carries it in arrays of floating-point or complex numbers. Keep "
                    "the values in such an array (or a list of them)"
                ),
            )
        return y  # boolean results carry no derivative; integers used arithmetically do (their rules say when not)
    return Dual(y, dy, tag)


def _is_structured(y) -> bool:
    """Whether a rule's output is a structure of duals, item by item, as the inputs of ``jvp`` are
    seeded: a tuple, list, dict, namedtuple or dataclass, whose items the user's code reads by
    indexing or attribute. Any other object stays one dual, whose attributes and methods run their
    rules (a frozen SciPy distribution's ``logpdf``)."""
    return isinstance(y, (tuple, list, dict)) or (dataclasses.is_dataclass(y) and not isinstance(y, type))


def _items_and_tangents(y, dy) -> dict:
    """``{key: (item, tangent)}`` of the structured output ``y`` and its tangent ``dy`` (a ``Tangent``,
    a plain container, a zero), keyed as ``structure_items`` (positions for tuples and lists); a
    ``TypeError`` or ``ValueError`` where ``dy`` is no tangent of ``y``."""
    dy = unthunk(dy)
    if isinstance(y, dict) and not isinstance(dy, (Tangent, dict, AbstractZero)):  # (item_tangents reads a mapping)
        raise TypeError(f"a {type(dy).__name__} is not a tangent of a {type(y).__qualname__}")
    items, tangents = structure_items(y), item_tangents(dy, y)
    if isinstance(items, list):
        return {i: (v, d) for i, (v, d) in enumerate(zip(items, tangents))}
    return {k: (v, tangents[k]) for k, v in items.items()}


def _rebuilt(y, new: dict):
    """The structure ``y`` with its items replaced by ``new`` (keyed as ``_items_and_tangents``)."""
    P = type(y)
    if isinstance(y, dict):
        out = copy.copy(y)  # (a dict subclass stays one)
        out.update(new)
        return out
    if _is_namedtuple_type(P):
        return namedtuple_with(y, new)
    if isinstance(y, (tuple, list)):
        return P(new.values())
    return with_fields(y, new)


def _structural_tangent(y, tangents: dict) -> Tangent:
    """The ``Tangent`` of the structure ``y`` with these item tangents (keyed as ``_items_and_tangents``)."""
    if isinstance(y, (tuple, list)) and not _is_namedtuple_type(type(y)):
        return Tangent[type(y)](*tangents.values())
    if isinstance(y, dict):
        return Tangent[dict](tangents)
    return Tangent[type(y)](**tangents)


# ----- chunks: batched rules, and the loop for the others -----------------------------------


def _fit(f, y, dy, batch: int | None):
    """The output tangent ``dy`` checked against the output ``y``: exactly its shape (after a
    leading batch axis when ``batch`` is set), broadcast to it when a rule left it broadcastable.

    A shape that cannot be made to fit is an error for a single tangent; for a batch it gives
    ``None``, and the caller runs the rule per element instead.
    """
    tdy = type(dy)
    if tdy is np.ndarray:  # the common case first
        ty = type(y)
        if ty is np.ndarray:
            if dy.shape == (y.shape if batch is None else (batch,) + y.shape):
                return dy
        elif (ty is float or ty is np.float64) and dy.shape == (() if batch is None else (batch,)):
            return dy
    elif batch is None and type(y) is not np.ndarray and (tdy is float or (tdy is np.float64 and type(y) is float)):
        if type(y) is float or not _is_structured(y):  # (a structure's is checked below)
            return dy  # (a number's tangent for an array, from a number meeting an array, is spread below)
    if isinstance(dy, AbstractZero):
        return dy
    if is_sparse(y):
        raise NoForwardRuleError(f, (), location=user_location(), reason=NOT_CARRIED)
    if _is_structured(y):
        try:
            pairs = _items_and_tangents(y, dy)
        except (TypeError, ValueError) as error:
            if batch is not None:
                return None  # (as for a shape: the rule is run one tangent at a time, which says what is wrong)
            where = user_location()
            raise TypeError(
                f"the frule for {_name(f)}{' (called at ' + where + ')' if where else ''} returned a tangent "
                f"that does not fit its output: {error}"
            ) from None
        fitted = {k: _fit(f, v, d, batch) for k, (v, d) in pairs.items()}
        if any(d is None for d in fitted.values()):
            return None
        return _structural_tangent(y, fitted)
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero) or not isinstance(y, (np.ndarray, np.generic, float, complex, Dual)):
        return dy
    want = _shape(y) if batch is None else (batch, *_shape(y))
    have = _shape(dy)
    if have == want:
        return dy
    fits = len(have) == len(want) if batch is not None else len(have) <= len(want)
    if fits and (batch is None or have[0] == batch):
        try:
            if np.broadcast_shapes(have, want) == want:
                return np.broadcast_to(dy, want)
        except ValueError:
            pass
    if batch is not None:
        return None
    raise ValueError(f"the frule for {_name(f)} returned a tangent of shape {have} for an output of shape {want}")


def _item(t, k: int):
    """Batch element ``k`` of a batched tangent."""
    if isinstance(t, AbstractZero):
        return t
    t = unthunk(t)
    if isinstance(t, Tangent):
        backing = t.backing
        if isinstance(backing, tuple):
            return type(t)(*(_item(v, k) for v in backing))
        if type(t).primal_type is dict:
            return type(t)({key: _item(v, k) for key, v in backing.items()})
        return type(t)(**{key: _item(v, k) for key, v in backing.items()})
    return t[k]


def _ndim(x) -> int:
    t = type(x)
    if t is np.ndarray:
        return x.ndim
    if t is float or t is int or t is complex:
        return 0
    return np.ndim(x)


def _shape(x) -> tuple:
    t = type(x)
    if t is np.ndarray:
        return x.shape
    if t is float or t is int or t is complex:
        return ()
    return np.shape(x)


def _loop(f, rule, tangents, primals, kwargs, batch: int):
    """Run a rule once per batch element and stack the output tangents along a new first axis."""
    y = None
    outs = []
    for k in range(batch):
        y, dy_k = rule(tuple(_item(t, k) for t in tangents), *primals, **kwargs)
        outs.append(_fit(f, y, dy_k, None))
    return y, _stack(y, outs)


def _stack(y, outs: list):
    outs = [unthunk(o) for o in outs]
    if all(isinstance(o, AbstractZero) for o in outs):
        return _ZERO
    if _is_structured(y):
        per_out = [_items_and_tangents(y, o) for o in outs]
        stacked = {k: _stack(v, [pairs[k][1] for pairs in per_out]) for k, (v, _) in per_out[0].items()}
        return _structural_tangent(y, stacked)
    filled = [np.zeros(np.shape(y), dtype=_tangent_dtype(y)) if isinstance(o, AbstractZero) else o for o in outs]
    return np.stack(filled)


def _tangent_dtype(y):
    dtype = np.result_type(_primal_dtype(y))
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _primal_dtype(y):
    while type(y) in _DUALS:
        y = y.primal
    return y.dtype if hasattr(y, "dtype") else np.result_type(y)
