"""Tracked values: Python numbers and NumPy arrays that record what is done to them.

Operators, NumPy ufuncs (``__array_ufunc__``), NumPy functions (``__array_function__``) and
array methods become operations on the trace, each through the rule of the callable that
would have run: ``operator.mul`` for ``a * b``, ``np.sin`` for ``np.sin(x)``,
``np.ndarray.sum`` for ``x.sum()``, ``getattr`` for ``x.T``, ``operator.getitem`` for ``x[i]``.
Comparisons and truth tests read the primal values, so data-dependent control flow runs as it
would without differentiation. Anything that would turn a tracked value into a plain one and
lose its derivative (``float(x)``, ``math.sin(x)``, ``np.asarray(x)``, writing it into a plain
array) raises ``TypeError`` saying what to write instead.

A tracked value is not an instance of ``float`` or ``np.ndarray`` (it could not be one without
handing its plain value to every C function that asks): code that branches on ``isinstance``
should ask ``np.ndim(x)`` or ``getattr(x, "ndim", 0)``, which tracked values answer.
"""

from __future__ import annotations

import math
import operator
import sys

import numpy as np

from ...core.active import ActiveValue, InplaceOperators, NumberIndexing
from ...core.errors import DroppedDerivativeError, as_index, conversion_in_rule, in_percent_formatting
from ...core.ruled_calls import in_library_code
from ...core.tangents import NoTangent
from ...core.twins import call_method
from . import tracer, writes
from .tracer import (
    Tracked,
    apply,
    binary,
    binary_operation,
    deep_primal,
    library_context,
    unary,
    unary_operation,
    unary_operations,
    user_location,
)


def _at() -> str:
    where = user_location()
    return (f" (at {where})" if where else "") + library_context()


def _lost_derivative(what: str) -> DroppedDerivativeError:
    module = (
        "Functions of the math module call float() too: use the NumPy function instead (np.sin, np.exp, np.sqrt, ...)"
    )
    if what == "complex()":
        module = (
            "Functions of the math and cmath modules call float() and complex() too (engine='source' uses their "
            "rules): use the NumPy function instead (np.sin, np.exp, on a complex value for cmath's: "
            "np.sqrt(x + 0j), np.exp(1j * x))"
        )
    return DroppedDerivativeError(
        f"{what} of a value being differentiated would drop its derivative{_at()}. {module}, which "
        "carries the derivative, or move the conversion out of the function being differentiated. A plain "
        "NumPy array converts what is written into it (out[i] = x): make the buffer with np.zeros_like(x), "
        "whose writes the tape records, or build arrays with np.stack or np.concatenate. The default "
        "engine='source' reads the code: it differentiates math functions and writes into plain buffers as written."
    )


def _refused(value, error: Exception) -> Exception:
    """``error``, or, when the refused conversion happens in the body of a Python callable with a
    rule that received ``value``, the error that says the tape cannot use that rule, or, in a
    rule's own code, the error that says that rule does not take tracked values."""
    frame = sys._getframe(1)
    error = conversion_in_rule(frame, "tracked values") or tracer.RULED_CALLS.refused(value._trace, frame, error)
    return tracer.kept(value._trace, error)


def _branching(value) -> None:
    """A comparison or truth test of ``value`` by its caller: refused where a library's code
    iterates on it inside a ruled callable (``RuledCallWatch.branched``)."""
    frame = sys._getframe(2)
    if in_library_code(frame.f_code):
        error = tracer.RULED_CALLS.branched(value._trace, frame)
        if error is not None:
            raise tracer.kept(value._trace, error)


def _is_integer(value) -> bool:
    """An integer number or array (what the tape tracks only in case it is used arithmetically):
    converted to an integer or an integer array (``np.arange(n)``, ``int(n)``), as it is used as an
    index, it is a count, through which no derivative flows."""
    value = deep_primal(value)
    if type(value) is np.ndarray:
        return value.dtype.kind in "iu"
    return type(value) is int or isinstance(value, np.integer)


def _library_converts_integer(value) -> bool:
    """Whether library code (``np.hanning(n)``'s) converts ``value``, an integer, to a float: a
    setting, as the source engine takes a library call of integers, with no derivative (the user's
    own ``float(n)`` is refused, as for any value being differentiated)."""
    return _is_integer(value) and in_library_code(sys._getframe(2).f_code)


# the operators' hot paths, one closure each (see tracer.binary_operation)
_add = binary_operation(operator.add)
_sub = binary_operation(operator.sub)
_mul = binary_operation(operator.mul)
_truediv = binary_operation(operator.truediv)
_floordiv = binary_operation(operator.floordiv)
_mod = binary_operation(operator.mod)
_matmul = binary_operation(operator.matmul)
_and = binary_operation(operator.and_)
_or = binary_operation(operator.or_)
_xor = binary_operation(operator.xor)
_lshift = binary_operation(operator.lshift)
_rshift = binary_operation(operator.rshift)
_pow = binary_operation(operator.pow)
_getitem = binary_operation(operator.getitem)


class _Operators(Tracked):
    """The operators shared by tracked numbers and arrays."""

    __slots__ = ()

    def __hash__(self):
        # an integer argument (a count, a size, a key: tracked in case it is used arithmetically) hashes
        # as itself: a setting looked up in a table (its derivative is NoTangent() wherever it is only a key)
        if _is_integer(self) and np.ndim(self._value) == 0:
            return hash(self._value)
        # like arrays: a tracked value is not a dictionary key (caches would mix traces, or find values
        # computed without the derivative)
        raise TypeError(
            f"a value being differentiated is unhashable{_at()}: as a dict key or set member (a memo dict, "
            "functools.lru_cache) it would find values computed without its derivative. Key a cache by values "
            "that are not differentiated (an index, a size), or compute the value each time."
        )

    # arithmetic, through the rules of the `operator` module
    __add__ = _add

    def __radd__(self, other):
        return _add(other, self)

    __sub__ = _sub

    def __rsub__(self, other):
        return _sub(other, self)

    __mul__ = _mul

    def __rmul__(self, other):
        return _mul(other, self)

    __truediv__ = _truediv

    def __rtruediv__(self, other):
        return _truediv(other, self)

    __floordiv__ = _floordiv

    def __rfloordiv__(self, other):
        return _floordiv(other, self)

    __mod__ = _mod

    def __rmod__(self, other):
        return _mod(other, self)

    def __divmod__(self, other):
        return apply(divmod, (self, other), {})

    def __rdivmod__(self, other):
        return apply(divmod, (other, self), {})

    def __pow__(self, other, modulo=None):
        if modulo is None:
            return _pow(self, other)
        return apply(pow, (self, other, modulo), {})

    def __rpow__(self, other):
        return _pow(other, self)

    __matmul__ = _matmul

    def __rmatmul__(self, other):
        return _matmul(other, self)

    __neg__ = unary_operation(operator.neg)

    __pos__ = unary_operation(operator.pos)

    __abs__ = unary_operation(abs)

    __invert__ = unary_operation(operator.invert)

    __and__ = _and

    def __rand__(self, other):
        return _and(other, self)

    __or__ = _or

    def __ror__(self, other):
        return _or(other, self)

    __xor__ = _xor

    def __rxor__(self, other):
        return _xor(other, self)

    __lshift__ = _lshift
    __rshift__ = _rshift

    # comparisons and truth read the primal values: control flow runs as it would untraced
    def __lt__(self, other):
        _branching(self)
        return deep_primal(self) < deep_primal(other)

    def __le__(self, other):
        _branching(self)
        return deep_primal(self) <= deep_primal(other)

    def __gt__(self, other):
        _branching(self)
        return deep_primal(self) > deep_primal(other)

    def __ge__(self, other):
        _branching(self)
        return deep_primal(self) >= deep_primal(other)

    def __eq__(self, other):
        _branching(self)
        return deep_primal(self) == deep_primal(other)

    def __ne__(self, other):
        _branching(self)
        return deep_primal(self) != deep_primal(other)

    def __bool__(self):
        _branching(self)
        return bool(deep_primal(self))

    # conversions that would drop the derivative, except to print the value ("%.3f" % x)
    def __float__(self):
        if in_percent_formatting(sys._getframe(1)) or _library_converts_integer(self):
            return float(deep_primal(self))
        raise _refused(self, _lost_derivative("float()"))

    def __int__(self):
        # truncation, as math.trunc: piecewise constant, with a derivative of zero (int's rule, as
        # the source engine calls it); Python takes back a plain int alone
        if in_percent_formatting(sys._getframe(1)):  # "%d" % x prints the value
            return int(deep_primal(self))
        return deep_primal(apply(int, (self,), {}))

    def __complex__(self):
        raise _refused(self, _lost_derivative("complex()"))

    def __array__(self, dtype=None, copy=None):
        if _is_integer(self):  # (a length, indices)
            return np.array(deep_primal(self), dtype=dtype, copy=True if copy is None else copy)
        raise _refused(
            self,
            DroppedDerivativeError(
                f"converting a value being differentiated to a plain NumPy array would drop its derivative{_at()}. "
                "This happens in np.asarray/np.array, when it is written into a plain array (out[i] = x, out += x), "
                "and in functions that convert their arguments. Make a buffer with np.zeros_like(x), whose writes the "
                "tape records, or build arrays with np.stack or np.concatenate."
            ),
        )

    def __reduce_ex__(self, protocol):
        raise TypeError(f"a value being differentiated cannot be pickled{_at()}")

    # NumPy's protocols: ufuncs and array functions run through their rules
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            if len(inputs) == 1:  # the only input is this value
                op = unary_operations.get(ufunc)
                return op(self) if op is not None else unary(ufunc, self)
            if len(inputs) == 2:
                return binary(ufunc, inputs[0], inputs[1])
        out = kwargs.get("out")
        if out is not None and any(o is not None for o in out):
            raise TypeError(
                f"{ufunc.__name__}(..., out=...) writes into an array in place{_at()}; with a value being "
                "differentiated, assign the result instead (y = np.add(a, b)). `x += v` on a plain NumPy array "
                "writes into it too: write x = x + v; and `buf[i] += v` into a plain buffer (np.zeros(n)) would "
                "store the value without its derivative: make the buffer with np.zeros_like(v, shape=n), whose "
                "writes the tape records"
            )
        if method == "at":
            raise TypeError(
                f"np.{ufunc.__name__}.at(...) writes into an array in place{_at()}, which the tape engine does not "
                "do: build the result out of place (for sums by index into a 1-d array, "
                "`a = a + np.bincount(idx, weights=v, minlength=a.size)`)"
            )
        f = ufunc if method == "__call__" else getattr(ufunc, method)
        return apply(f, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func in _DESCRIBE and len(args) == 1 and not kwargs:
            return func(deep_primal(args[0]))  # np.shape(x) is x.shape: metadata, not an operation
        if func in _MEMORY:  # whether arrays overlap: the primals' memory
            return func(*[deep_primal(a) for a in args], **kwargs)
        if len(args) == 1 and args[0] is self:  # np.sum(x, axis=0): the hot path of one argument
            op = unary_operations.get(func)
            return op(self, kwargs) if op is not None else unary(func, self, kwargs)
        return apply(func, args, kwargs)

    def __format__(self, spec: str) -> str:
        return format(deep_primal(self), spec)

    def buffer_holding(self, array):
        """A tracked array of this value's trace holding ``array``, a constant that takes writes
        (``out[i] = v``, recorded as ``writes.write_into``); over an outer differentiation's value (a
        dual, in a Hessian) its array is that engine's buffer. ``None`` while the trace is not recording."""
        trace = self._trace
        if not _recording(trace):
            return None
        inner = self._value
        if isinstance(inner, ActiveValue):
            array = inner.buffer_holding(array)
            if array is None:
                return None
        slot = trace.n_slots
        trace.n_slots = slot + 1
        buffer = tracer.box(array, trace, slot, TrackedNumber, TrackedArray)
        trace.tape.append((_constant_pullback, slot, np.copy, tracer.PAIRS, []))
        buffer._writable = True  # the array is the caller's to give away: writes go into it
        buffer._owned_at = len(trace.tape)
        return buffer


def _recording(trace) -> bool:
    active = tracer.current_trace()
    while active is not None:
        if active is trace:
            return True
        active = active.parent
    return False


def _constant_pullback(dy):
    return (_NO,)


_NO = NoTangent()


class TrackedNumber(NumberIndexing, _Operators):
    """A Python or NumPy number followed by the trace: behaves as the number in arithmetic,
    comparisons and NumPy calls, and records every operation on it.

    >>> from chainrules.reverse.trace import pullback_full
    >>> def f(x):
    ...     return x * x * 3.0 if x > 0 else -x
    >>> y, back = pullback_full(f, 2.0)
    >>> y, back(1.0)
    (12.0, (NoTangent(), 12.0))
    """

    __slots__ = ()

    # what NumPy scalars describe themselves with (np.float64(1.0).shape == ())
    @property
    def shape(self) -> tuple:
        return ()

    @property
    def ndim(self) -> int:
        return 0

    @property
    def size(self) -> int:
        return 1

    @property
    def dtype(self) -> np.dtype:
        value = deep_primal(self)
        # another engine's number (an outer forward differentiation's dual) describes itself
        return value.dtype if isinstance(value, ActiveValue) else np.asarray(value).dtype

    def __index__(self):
        try:
            return as_index(deep_primal(self), sys._getframe(1), _at)
        except TypeError as error:
            raise _refused(self, error) from None

    def __round__(self, ndigits=None):
        return apply(round, (self,) if ndigits is None else (self, ndigits), {})

    def __trunc__(self):
        return apply(math.trunc, (self,), {})

    def __floor__(self):
        return apply(math.floor, (self,), {})

    def __ceil__(self):
        return apply(math.ceil, (self,), {})

    @property
    def real(self):
        return apply(getattr, (self, "real"), {})

    @property
    def imag(self):
        return apply(getattr, (self, "imag"), {})

    def conjugate(self):
        # like an array's methods: through the rule of the method of the number's own type;
        # another engine's number (a dual, in a Hessian) through np.conjugate, whose rule takes it
        primal = deep_primal(self)
        return apply(np.conjugate if isinstance(primal, ActiveValue) else type(primal).conjugate, (self,), {})

    def is_integer(self) -> bool:
        return deep_primal(self).is_integer()

    def __copy__(self):
        return self  # numbers are immutable

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"TrackedNumber({self._value!r})"


def _number_attribute(self: TrackedNumber, name: str):
    """``x.name`` of a tracked number for a name of NumPy scalars' (see ``_Computed``).

    A NumPy scalar (what a full reduction returns) has the array methods (s.sum(), s.reshape(1)),
    defined on np.generic: they go through the rules of those (rules/numpy/scalar_methods.py),
    like an array's methods, and ``s.T`` through np.transpose. A Python number has none. Another
    engine's number (a dual, in a Hessian) stands for a NumPy scalar when it has the attribute itself.
    """
    primal = deep_primal(self)
    if isinstance(primal, np.generic):
        member = getattr(type(primal), name, None)
    elif isinstance(primal, ActiveValue) and not name.startswith("_") and hasattr(primal, name):
        member = getattr(np.generic, name, None)
    else:
        member = None
    if name in _SCALAR_ATTRIBUTES and member is not None:
        return apply(_SCALAR_ATTRIBUTES[name], (self,), {})
    method = member
    if method is None or name.startswith("_") or not callable(method):
        kind = type(primal).__name__
        raise AttributeError(f"{kind!r} object (being differentiated) has no attribute {name!r}")
    return _tracked_method(self, method, name)


def _tracked_method(value, method, name: str):
    """``value.name`` for a method of arrays or NumPy scalars: a call goes through ``method``'s rule."""

    def tracked_method(*args, **kwargs):
        # an argument of a differentiation nested inside: NumPy's function hands it over
        return call_method(method, value, args, kwargs, apply, _nested_argument_refused)

    # named as the method it stands for, which errors about it name (numpy.generic.tolist)
    tracked_method.__name__, tracked_method.__qualname__ = name, getattr(method, "__qualname__", name)
    tracked_method.__module__ = "numpy"
    return tracked_method


def _nested_argument_refused(method) -> TypeError:
    name = method.__name__
    return TypeError(
        f"x.{name}(...) of a value being differentiated, with an argument of a differentiation nested "
        f"inside its own{_at()}: call the NumPy function instead (np.{name})"
    )


# attributes of NumPy scalars that are values: through the NumPy function they stand for
_SCALAR_ATTRIBUTES = {"T": np.transpose}

# NumPy functions that only describe their argument, answered from the primal like x.shape
_DESCRIBE = frozenset({np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj})
# NumPy functions that ask whether arrays overlap, answered from the primals' memory
_MEMORY = frozenset({np.may_share_memory, np.shares_memory})
# attributes that describe an array without carrying a derivative: read from the primal
_DESCRIPTIVE = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags"})
# attributes that are arrays derived from this one: through the rule of `getattr`
_DERIVED = frozenset({"T", "mT", "real", "imag"})
# methods that write into the array
_MUTATING = frozenset({"fill", "sort", "partition", "put", "resize", "itemset", "setfield", "setflags"})


class TrackedArray(InplaceOperators, _Operators):
    """A NumPy array followed by the trace.

    Methods go through the rules of their ``np.ndarray`` counterparts (``x.sum(axis=0)`` through
    the rule of ``np.ndarray.sum``), ``x.T`` through the rule of ``getattr``, ``x[i]`` through
    the rule of ``operator.getitem``; ``x.shape``, ``x.dtype``, ``len(x)`` read the primal.
    Writing into a tracked array (``x[i] = v``, ``x.fill(0)``) raises, except into a buffer made by
    ``buffer_holding`` (the source engine's ``out = np.zeros(n)`` filled with tracked values), where
    ``x[i] = v`` records ``write_into_copy`` and rebinds ``x`` to its result; ``x += y`` rebinds
    ``x`` to a new value unless another array may share its memory (then it raises).
    """

    # see `tracer.box` for what each field says
    __slots__ = ("_aliased", "_writable", "_owned_at", "_views", "_view_of", "__weakref__")

    def __len__(self) -> int:
        return len(deep_primal(self))

    def __iter__(self):
        for i in range(len(self)):
            yield _getitem(self, i)

    def __contains__(self, item) -> bool:
        return deep_primal(item) in deep_primal(self)

    __getitem__ = _getitem

    def __setitem__(self, key, value):
        refused = conversion_in_rule(sys._getframe(1), "tracked values", "writes into them in place")
        if refused is not None:
            raise refused
        writes.write(self, key, value)

    # `x += v` rebinds this box to the new value, which is what NumPy's in-place update looks like
    # to every holder of the box; its views read it afresh, and on a view it writes into its array
    def _inplace(self, f, other):
        if self._aliased:
            raise TypeError(
                f"in-place {f.__name__} on an array being differentiated that may share memory with another "
                f"(an argument, a view, a reshape){_at()}: write x = x {_SYMBOL[f]} y instead"
            )
        result = binary(f, self, other)
        if result is NotImplemented:  # a dual of a differentiation nested inside: Python asks it for x + v
            return result
        old = deep_primal(self)
        new = deep_primal(result)
        if not isinstance(result, TrackedArray) or result._trace is not self._trace or new.shape != old.shape:
            raise ValueError(
                f"in-place {f.__name__} would change the array's shape from {old.shape} to {np.shape(new)}{_at()}"
            )
        if new.dtype != old.dtype:
            if not np.can_cast(new.dtype, old.dtype, "same_kind"):
                raise TypeError(f"in-place {f.__name__} cannot cast {new.dtype} to {old.dtype}{_at()}")
            result = apply(np.ndarray.astype, (result, old.dtype), {})
        if self._view_of is not None:
            base, key = self._view_of
            writes.write_at(base, key, result)  # which rebinds this view too
            return self
        self._value = result._value
        self._slot = result._slot
        self._writable = False  # the result is a rule's, which its pullback may hold
        writes.refresh_views(self)
        return self

    def __copy__(self):
        return apply(np.copy, (self,), {})  # its own array, as copy.copy of an array is

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __repr__(self) -> str:
        return f"TrackedArray({self._value!r})"


def _array_attribute(self: TrackedArray, name: str):
    """``x.name`` of a tracked array for a name of ``np.ndarray``'s (see ``_Computed``)."""
    if name in _DESCRIPTIVE:
        return getattr(deep_primal(self), name)
    if name in _DERIVED:
        return apply(getattr, (self, name), {})
    if name == "base" and getattr(deep_primal(self), "base", 0) is None:
        return None  # not a view (which the source engine asks before it copies one); a view's base has no rule
    if name in _MUTATING:
        raise TypeError(f"x.{name}() writes into an array being differentiated{_at()}; compute a new array instead")
    method = getattr(np.ndarray, name, None)
    if method is None or name.startswith("__"):
        raise AttributeError(f"'TrackedArray' object has no attribute {name!r}")
    if not callable(method):  # another attribute of arrays (x.flat, x.base): through getattr's rule
        return apply(getattr, (self, name), {})
    return _tracked_method(self, method, name)


class _Computed:
    """An attribute that tracked values answer from their primal: ``compute(value, name)``.

    The box classes define no ``__getattr__``: a class with one makes CPython 3.11 read every
    attribute through it, slots included (no specialized load), and the tape reads its boxes'
    ``_value``, ``_trace`` and ``_slot`` several times per recorded operation (about a tenth of
    the instructions of a loop of ``y[i] * y[i]``). Each name of arrays' (of NumPy scalars', for
    tracked numbers) that the class does not define itself is one of these instead; other names
    are missing as any attribute is. On the class itself (``TrackedArray.sum``) it is missing too,
    as it was without it, so that ``getattr(type(x), name, None)`` finds no member there.
    """

    __slots__ = ("_name", "_compute")

    def __init__(self, name: str, compute) -> None:
        self._name = name
        self._compute = compute

    def __get__(self, value, owner=None):
        if value is None:
            raise AttributeError(f"type object {owner.__name__!r} has no attribute {self._name!r}")
        return self._compute(value, self._name)


class _Assignable(_Computed):
    """An attribute that tracked arrays also take assignments to: ``assign(value, name, new)``."""

    __slots__ = ("_assign",)

    def __init__(self, name: str, compute, assign) -> None:
        super().__init__(name, compute)
        self._assign = assign

    def __set__(self, value, new) -> None:
        self._assign(value, self._name, new)


def _numpy_scalar_types(t: type = np.generic) -> set:
    types = {t}
    for sub in t.__subclasses__():
        types |= _numpy_scalar_types(sub)
    return types


def _install_computed(cls: type, names, compute) -> None:
    for name in sorted(names):
        if not name.startswith("__") and not hasattr(cls, name):
            setattr(cls, name, _Computed(name, compute))


_install_computed(TrackedArray, dir(np.ndarray), _array_attribute)
# `z.real = v` writes into a part of the array's memory: a write into the array (`writes.write_part`)
for _part in ("real", "imag"):
    setattr(TrackedArray, _part, _Assignable(_part, _array_attribute, writes.write_part))
_install_computed(
    TrackedNumber,
    {n for t in _numpy_scalar_types() for n in dir(t) if not n.startswith("_")},
    _number_attribute,
)


_SYMBOL = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.pow: "**",
    operator.matmul: "@",
}

tracer.set_box_types(TrackedNumber, TrackedArray)
