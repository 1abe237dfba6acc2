"""Rules for Python's operators (the ``operator`` module): numbers, NumPy arrays and sequences.

The source engine lowers ``a + b`` to ``operator.add(a, b)`` and ``xs[i]`` to
``operator.getitem(xs, i)``, so these rules run for every operator in differentiated code.

- Plain Python numbers (``float``, ``int``) take a fast path: no NumPy call, no thunk, at most
  one closure (none for ``+``, ``-`` and unary ``-``).
- The pullbacks of the arithmetic operators take a batch of cotangents at once (a leading batch
  axis, ``batched=True``) for numbers and arrays, as indexing does for every container; for
  sequences (concatenated, repeated) and user objects the rule declines the batch
  (``decline_batch``) and engines pull back one cotangent at a time.
- Arrays broadcast: each cotangent is summed back to its input's shape and dtype by
  ``match_input``. A cotangent of an array that costs arithmetic (a product, a negation, a sum
  over broadcast axes) is a ``Thunk``: the array may be a constant nobody asks about (a batch
  of inputs). The pushforwards are elementwise, so they take a leading batch axis of tangents
  as it is (``batched=True``).
- Sequences: ``+`` concatenates tuples and lists and ``*`` repeats them; their cotangents are
  structural (``Tangent[tuple]``, ``Tangent[list]``). Strings carry no tangent. Next to an array
  NumPy broadcasts a list or tuple instead (``x * [1.0, 2.0]``): the rule runs on the array
  NumPy makes of it (``rrule_on_arrays``), and its cotangent is structural all the same.
- Complex numbers follow ChainRules' convention: the pullback of a holomorphic operation
  multiplies by the conjugate derivative.

The helpers for tangents of tuples, lists and dicts (``seq_entries``, ``seq_tangent``,
``match_entry``) live here and are shared with the builtins and ``math`` rules.

>>> import operator, chainrules as cr
>>> y, back = cr.rrule(operator.mul, 2.0, 3.0)
>>> y, back(1.0)
(6.0, (NoTangent(), 3.0, 2.0))
>>> cr.rrule(operator.getitem, (1.0, 2.0), 0)[1](5.0)
(NoTangent(), Tangent[tuple](5.0, ZeroTangent()), NoTangent())
"""

from __future__ import annotations

import cmath
import math
import operator
import types
from numbers import Number

import numpy as np

from ..core import (
    AbstractThunk,
    AbstractZero,
    ActiveValue,
    NoRuleError,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    carries_batch,
    conj,
    decline_batch,
    frule,
    input_matcher,
    is_array_of_rows,
    match_input,
    match_input_batch,
    non_differentiable,
    rows_cotangent,
    rrule,
    rrule_via_ad,
    unthunk,
    user_location,
)
from ..core.active import reflected_by_its_class, stood_for
from ..core.errors import callable_name
from ..core.keywords import positional_name
from ..core.projection import numpy_cotangent
from ..core.tangents import RefusedThunk
from ..core.tangents import _rebuild as _rebuild_tangent
from .numpy._arrays import batch_to_input, tangent_array, to_input

_NO = NoTangent()
_ZERO = ZeroTangent()
#: Python reals on the fast path; ``bool`` is not one of them (a bool gets ``NoTangent``).
_REAL = frozenset((float, int))
_NDARRAY = np.ndarray
#: NumPy's real float scalars (what ``np.sin(x)``, ``X[i]`` or ``np.sum(X)`` give)
_NP_FLOATS = frozenset(t for t in (np.float16, np.float32, np.float64, np.longdouble))
#: the reals of the arithmetic operators' second fast path: NumPy's float scalars among Python
#: reals; each cotangent takes its input's type
_SCALARS = frozenset((float, int, *_NP_FLOATS))
#: the real scalar cotangents those fast paths take as they are
_SCALAR_COTANGENTS = frozenset((float, *_NP_FLOATS))


def _cotangent_type(t: type) -> type:
    """The type of a real scalar input's cotangent (``match_input``'s answer): its own NumPy
    float type, ``float`` for a Python real."""
    return t if t in _NP_FLOATS else float


#: ``_cotangent_type`` of each real scalar type, looked up by the scalar operators' rules per call
_COTANGENT_TYPES = {t: _cotangent_type(t) for t in _SCALARS}


_SEQUENCES = (tuple, list)
_TEXT = (str, bytes, bytearray)
#: Tangent[tuple] and Tangent[list], looked up once (the scalar path of getitem builds one per call)
_PLAIN_TANGENT = {tuple: Tangent[tuple], list: Tangent[list]}


# ----- tangents of numbers and containers ----------------------------------------------------


def real_cotangent(dy):
    """The cotangent of a Python real input from any scalar cotangent (the slow path of a fast rule),
    or from a batch of them (a 1-D array: a number's single cotangent has no axis), kept a batch."""
    dy = unthunk(dy)
    if type(dy) is float or isinstance(dy, AbstractZero):
        return dy
    if isinstance(dy, ActiveValue) or getattr(dy, "ndim", 0) == 1:
        return np.real(dy)  # an outer engine's number (nested differentiation; float() would drop it), a batch
    return float(np.real(dy))


def real_rows(dy):
    """A batch of cotangents of a Python real output (a 1-D array), real; ``None`` for one cotangent.

    >>> import numpy as np
    >>> real_rows(np.array([1.0 + 2.0j, 3.0])), real_rows(2.0)
    (array([1., 3.]), None)
    """
    dy = unthunk(dy)
    if getattr(dy, "ndim", 0) != 1:
        return None
    return np.real(dy) if np.iscomplexobj(dy) else dy


def _array_cotangent(x, dy, compute):
    """The cotangent ``compute()`` of an operand ``x`` from the output's cotangent ``dy``: a
    ``Thunk`` where computing it is array work (``x`` or ``dy`` an array: ``x`` may be a constant
    whose cotangent nobody asks for, such as the 2.0 of ``x * 2.0``, which would cost a product
    and a sum), the value for numbers."""
    return Thunk(compute) if type(x) is np.ndarray or isinstance(dy, np.ndarray) else compute()


def _fits(x, y) -> bool:
    """Whether an operand ``x`` of an elementwise operation with the real array output ``y`` takes
    a cotangent of ``y``'s shape and dtype as it is (nothing to sum, cast or make real)."""
    return (
        type(x) is np.ndarray
        and type(y) is np.ndarray
        and x.shape == y.shape
        and x.dtype == y.dtype
        and y.dtype.kind == "f"
    )


def _passed_on(x, dy):
    """``match_input(x, dy)`` for a cotangent that passes unchanged (``+``), lazy only where ``x``
    was broadcast (a number included) and the sum over its axes would cost something."""
    if isinstance(dy, np.ndarray) and (type(x) is not np.ndarray or x.shape != dy.shape):
        return Thunk(lambda: match_input(x, dy))
    return match_input(x, dy)


def _passed_on_batch(x, dy):
    """``match_input_batch(x, dy)`` for a batch of cotangents that passes unchanged (``+``): the
    batch itself where it fits ``x`` already (the same shape per row and dtype), lazy where ``x``
    was broadcast (a number included: a sum over its axes)."""
    if isinstance(dy, np.ndarray):
        if type(x) is np.ndarray and dy.shape[1:] == x.shape and dy.dtype == x.dtype and x.dtype.kind in "fc":
            return dy  # what match_input_batch returns, without its call
        return Thunk(lambda: match_input_batch(x, dy))
    return match_input_batch(x, dy)


def zero_for(x):
    """The zero cotangent of an input: ``NoTangent()`` for integers and booleans (they count or
    index), ``ZeroTangent()`` for everything else.

    >>> zero_for(3), zero_for(3.0)
    (NoTangent(), ZeroTangent())
    """
    if isinstance(x, (int, np.integer, np.bool_)):
        return _NO
    if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
        return _NO
    return _ZERO


def match_arg(x, dx, batch: bool = False):
    """The cotangent ``dx`` made valid for the argument ``x`` of a rule.

    Numbers and arrays are matched like operator inputs (``match_input``: summed over broadcast
    axes, real for a real input, a float for an int); a bool, a string or ``None`` gets
    ``NoTangent``; anything else (a container, an object) keeps its cotangent as it is. With
    ``batch``, ``dx`` of a number or array is a batch of cotangents (a leading batch axis),
    matched row by row (``match_input_batch``).

    >>> import numpy as np
    >>> match_arg(2, np.float64(1.5)), match_arg(np.zeros((2, 1)), np.ones((2, 3))).tolist()
    (1.5, [[3.0], [3.0]])
    >>> match_arg(2.0, np.array([1.0 + 1.0j, 3.0]), batch=True).tolist()
    [1.0, 3.0]
    """
    if isinstance(dx, AbstractZero) or (type(x) is float and type(dx) is float):
        return dx
    if isinstance(x, (str, bytes, type(None), range, slice)):
        return _NO
    if isinstance(x, (Number, np.ndarray, np.generic)):
        return (match_input_batch if batch else match_input)(x, unthunk(dx))
    return dx


def match_entry(x, dx, batch: bool = False):
    """The tangent ``dx`` made valid for the element ``x`` of a container: as ``match_arg`` (with
    ``batch``, for a batch of cotangents), except that an integer inside a container counts or
    labels and gets ``NoTangent``."""
    if isinstance(x, (int, np.integer)) and not isinstance(dx, AbstractZero):
        return _NO
    return match_arg(x, dx, batch)


def entries_carry_batch(values, entries) -> bool:
    """Whether the cotangents ``entries`` of the elements ``values`` (of a tuple, a list, a rule's
    sequence output) carry a batch: the first array among them has a leading batch axis.

    >>> import numpy as np
    >>> entries_carry_batch([1.0, 2.0], [ZeroTangent(), np.ones(4)]), entries_carry_batch([1.0], [0.5])
    (True, False)
    """
    for x, e in zip(values, entries):
        e = unthunk(e)
        if getattr(e, "ndim", 0):  # (numbers, zeros and structures tell nothing)
            return carries_batch(x, e)
    return False


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def seq_entries(dt, n: int) -> tuple:
    """The ``n`` entry tangents of a tangent of a tuple or list.

    ``dt`` may be a ``Tangent[tuple]``/``Tangent[list]`` (or of a namedtuple), a plain tuple or
    list, an array (its rows), a thunk of any of these, or a zero (``n`` zeros).
    """
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return (_ZERO,) * n
    if isinstance(dt, Tangent):
        backing = dt.backing
        if isinstance(backing, dict):  # a namedtuple's tangent, by field name
            entries = tuple(backing.get(k, _ZERO) for k in type(dt).primal_type._fields)
        else:
            entries = backing
    else:
        entries = tuple(dt)
    if len(entries) != n:
        raise ValueError(f"a tangent of {len(entries)} entries for a sequence of {n} elements")
    return entries


def seq_tangent(xs, entries, batch: bool = False) -> object:
    """The structural tangent of the tuple or list ``xs`` whose entries have these tangents.

    Each entry is matched to its element (``match_entry``; with ``batch``, the entries are
    batches of cotangents, see ``entries_carry_batch``); all zeros give a zero. A namedtuple gets
    ``Tangent[ThatNamedtuple]`` by field name, an array (a sequence of rows) a dense array.

    >>> seq_tangent([1.0, 2, "a"], (0.5, 1.0, 1.0))
    Tangent[list](0.5, NoTangent(), NoTangent())
    >>> seq_entries(seq_tangent((1.0, 2.0), (ZeroTangent(), 3.0)), 2)
    (ZeroTangent(), 3.0)
    """
    matched = []
    nonzero = False
    for x, e in zip(xs, entries):
        if not isinstance(e, AbstractZero):
            if type(x) is not float or type(e) is not float:
                e = match_entry(x, e, batch)
            nonzero = nonzero or not isinstance(e, AbstractZero)
        matched.append(e)
    if not nonzero:
        return zero_for(xs)  # NoTangent for an integer array, ZeroTangent for a container
    P = type(xs)
    if P is tuple or P is list:
        # the fields are already valid: skip Tangent's argument checks (a third of a scalar getitem's cost)
        return _rebuild_tangent(_PLAIN_TANGENT[P], tuple(matched))
    if is_array_of_rows(xs):
        return rows_cotangent(xs, matched)
    if _is_namedtuple(xs):
        return Tangent[P](**{k: e for k, e in zip(P._fields, matched) if not isinstance(e, AbstractZero)})
    return Tangent[P if issubclass(P, _SEQUENCES) else tuple](*matched)


def _no_tangents(n: int):
    """A pullback for a result that carries no derivative, for ``n`` arguments."""

    def nondiff_pullback(dy):
        return (_NO,) * (n + 1)

    return nondiff_pullback


# ----- lists and tuples as NumPy operands -----------------------------------------------------


def _as_operand(x):
    """A list or tuple operand as the array NumPy makes of it; any other operand as it is."""
    return np.asarray(x) if isinstance(x, _SEQUENCES) else x


def _sequence_cotangent(xs, array, dx):
    """The cotangent of the sequence operand ``xs`` from that of ``array``, the array NumPy made of
    it (a batch of them included): structural, and lazy, since building it is a Python loop over
    the entries and the sequence is mostly a constant's (the list of ``x * [1.0, 2.0]``)."""
    if isinstance(dx, AbstractZero):
        return dx

    def sequence_cotangent():
        d = unthunk(dx)
        if isinstance(d, AbstractZero):
            return d
        return batch_to_input(xs, d) if carries_batch(array, d) else to_input(xs, d)

    return Thunk(sequence_cotangent)


def rrule_on_arrays(rule, args: tuple, kwargs: dict | None = None) -> tuple:
    """``rule(*args, **kwargs)`` for a NumPy operation, run on the arrays NumPy makes of its list
    and tuple operands, so that the rule's partials see what the primal sees; each such operand
    gets a structural cotangent (``Tangent[list]``), as for a list anywhere else.

    >>> y, back = rrule_on_arrays(_rrule_pow_values, (np.array([2.0, 3.0]), [2.0, 1.0]))
    >>> y, unthunk(back(np.ones(2))[2])
    (array([4., 3.]), Tangent[list](2.772588722239781, 3.295836866004329))
    """
    arrays = tuple(map(_as_operand, args))
    y, pullback = rule(*arrays, **(kwargs or {}))

    def sequence_operands_pullback(dy):
        grads = pullback(dy)
        pairs = zip(args, arrays, grads[1:])
        return (grads[0], *(g if x is v else _sequence_cotangent(x, v, g) for x, v, g in pairs))

    return y, sequence_operands_pullback


def frule_on_arrays(rule, tangents: tuple, args: tuple, kwargs: dict | None = None) -> tuple:
    """``rule`` (an ``frule``) run as ``rrule_on_arrays`` runs an rrule: on the arrays NumPy makes
    of the list and tuple operands, with their structural tangents as arrays too."""
    arrays = tuple(map(_as_operand, args))
    pairs = zip(args, arrays, tangents[1:])
    dargs = tuple(t if x is v else tangent_array(x, unthunk(t)) for x, v, t in pairs)
    return rule((tangents[0], *dargs), *arrays, **(kwargs or {}))


def reads_sequences_as_arrays(f) -> bool:
    """Whether ``f`` is a NumPy or SciPy callable (a function, a ufunc or a ufunc's method), which
    takes a list of numbers as the array NumPy makes of it.

    >>> import numpy as np, scipy.special as sc
    >>> [reads_sequences_as_arrays(f) for f in (np.add.reduce, sc.logsumexp, sum)]
    [True, True, False]
    """
    if isinstance(f, np.ufunc) or isinstance(getattr(f, "__self__", None), np.ufunc):
        return True
    module = getattr(f, "__module__", None)
    return isinstance(module, str) and (module.split(".", 1)[0] in ("numpy", "scipy"))


def numbers_only(value, engines: bool = False) -> bool:
    """Whether ``value`` is a number or a (nested) list or tuple of numbers; with ``engines``, an
    engine's value of a plain number (a dual number's) is one.

    >>> numbers_only([1.0, (2, 3.5)]), numbers_only([1.0, "a"]), numbers_only([True])
    (True, False, False)
    """
    if type(value) is list or type(value) is tuple:
        return all(numbers_only(v, engines) for v in value)
    if engines and isinstance(value, ActiveValue):
        value = value.stands_for()
    return isinstance(value, (int, float, complex, np.number)) and not isinstance(value, bool)


def _as_array_operand(f, args: tuple, i: int, tangent) -> tuple:
    """``(x, dx)`` for the ``i``-th of ``args`` given to ``f`` with the tangent ``tangent``: a list or
    tuple of numbers being differentiated, which ``f`` reads as an array (``reads_sequences_as_arrays``),
    as that array and its tangent as an array (a batch's axis in front), so that ``f``'s rule sees
    what ``f`` sees; anything else as it is. A functional's ``args`` are its function's extra
    arguments, handed to it as they are."""
    x, tangent = args[i], unthunk(tangent)
    if isinstance(tangent, AbstractZero) or not numbers_only(x) or positional_name(f, args, i) == "args":
        return x, tangent
    try:
        array = np.asarray(x)
    except ValueError:  # a ragged list: NumPy takes it for a sequence of arrays
        return x, tangent
    return (array, tangent_array(x, tangent)) if array.dtype.kind in "iufc" else (x, tangent)


def _frule_on_sequences(f, rule, args: tuple):
    """The frule ``rule`` of ``f`` for a call with a list or tuple among ``args``: for a NumPy or SciPy
    callable, run on the arrays of its lists of numbers being differentiated (``_as_array_operand``),
    which a ``Tangent[list]`` of them (``cr.jvp``'s tangent of a list input) reaches as an array."""
    if not reads_sequences_as_arrays(f):
        return rule

    def frule_on_sequences(tangents, *args, **kwargs):
        n = min(len(args), len(tangents) - 1)
        pairs = [_as_array_operand(f, args, i, tangents[1 + i]) for i in range(n)]
        arrays = (*(x for x, _ in pairs), *args[n:])
        return rule((tangents[0], *(t for _, t in pairs), *tangents[1 + n :]), *arrays, **kwargs)

    frule_on_sequences.batched = getattr(rule, "batched", False)
    return frule_on_sequences


frule.adapt_sequence_calls(_frule_on_sequences)


# ----- operators defined by the user's own classes -----------------------------------------------

#: operand types whose operators these rules differentiate themselves
# Engine values (tracked numbers, duals) compute with operators themselves: never user objects here.
_NATIVE = (np.ndarray, float, int, complex, np.generic, str, bytes, bytearray, tuple, list, Number, ActiveValue)
#: the native operand types less lists and tuples: an operand of none of them is a user's object or a
#: sequence, told apart by `_rrule_other` (one test for both, where the rules test for user objects)
_NOT_SEQUENCES = tuple(t for t in _NATIVE if t is not tuple and t is not list)
_BINARY_METHODS = {
    operator.add: ("__add__", "__radd__"),
    operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"),
    operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"),
    operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"),
    operator.matmul: ("__matmul__", "__rmatmul__"),
}
_UNARY_METHODS = {operator.neg: "__neg__", operator.pos: "__pos__", operator.abs: "__abs__"}


def _is_user_object(x) -> bool:
    return not isinstance(x, _NATIVE)


def _python_method(cls: type, name: str):
    method = getattr(cls, name, None)
    return method if isinstance(method, types.FunctionType) else None


def _no_operator_rule(op, args):
    return NoRuleError(
        op,
        args,
        location=user_location(),
        reason="an operand's class implements this operator in C; register a rule typed on that class",
    )


def rrule_user_binary(op, a, b):
    """``op(a, b)`` where an operand's class defines the operator in Python (``__add__``/``__radd__``):
    the active engine differentiates that method, trying the reflected one as Python does."""
    decline_batch()  # a user object's cotangent is a structure: one cotangent at a time
    forward, reflected = _BINARY_METHODS[op]
    ta, tb = type(a), type(b)
    order = [(a, b, forward, False)]
    if tb is not ta:  # Python tries the reflected method only for operands of different types
        order.append((b, a, reflected, True))
        if issubclass(tb, ta) and getattr(tb, reflected, None) is not getattr(ta, reflected, None):
            order.reverse()  # a subclass's reflected method goes first
    for obj, other, name, swapped in order:
        method = getattr(type(obj), name, None)
        if method is None or isinstance(obj, ActiveValue):  # (an engine's operator would come back here)
            continue
        if not isinstance(method, types.FunctionType):
            if method(obj, other) is NotImplemented:  # C code that declines, like float.__add__(2.0, Vec)
                continue
            if not swapped and isinstance(obj, np.generic) and reflected_by_its_class(op, other):
                continue  # a NumPy scalar computes with an object by calling its Python `__rmul__`
            raise _no_operator_rule(op, (a, b))  # C code computed it: nothing to look inside
        y, method_pullback = rrule_via_ad(method, obj, other)
        if y is NotImplemented:
            continue

        def user_operator_pullback(dy, method_pullback=method_pullback, swapped=swapped):
            _, dobj, dother = method_pullback(dy)
            return (_NO, dother, dobj) if swapped else (_NO, dobj, dother)

        return y, user_operator_pullback
    op(stood_for(a), stood_for(b))  # every method declined: Python's own TypeError ("unsupported operand type(s)")
    raise _no_operator_rule(op, (a, b))


def _rrule_other(op, rule, a, b):
    """``op(a, b)`` where an operand is a user's object (see ``rrule_user_binary``) or a list or tuple,
    which NumPy broadcasts next to an array: ``rule``, the one for numbers and arrays, then runs on
    the array NumPy makes of it (``rrule_on_arrays``)."""
    if _is_user_object(a) or _is_user_object(b):
        return rrule_user_binary(op, a, b)
    op(a, b)  # Python's own error where NumPy takes no part ([1.0] - 2.0): the arrays would not raise it
    return rrule_on_arrays(rule, (a, b))


def _frule_other(op, rule, tangents, a, b):
    """``frule`` of ``op(a, b)`` where a list or tuple operand is broadcast (see ``_rrule_other``)."""
    op(a, b)  # (Python's own error, as in `_rrule_other`)
    return frule_on_arrays(rule, tangents, (a, b))


# (untyped: the rules for arrays, in rules/numpy/products.py, are typed and so come first)
@rrule.register(operator.matmul)
def rrule_user_matmul(a, b):
    """``a @ b`` where an operand is an object of the user's class that defines ``__matmul__``."""
    return rrule_user_binary(operator.matmul, a, b)


def rrule_user_unary(op, a):
    """``op(a)`` where ``a``'s class defines the operator in Python (``__neg__``, ...)."""
    decline_batch()  # a user object's cotangent is a structure: one cotangent at a time
    method = _python_method(type(a), _UNARY_METHODS[op])
    if method is None:
        raise _no_operator_rule(op, (a,))
    y, method_pullback = rrule_via_ad(method, a)

    def user_operator_pullback(dy):
        return _NO, method_pullback(dy)[1]

    return y, user_operator_pullback


def _fit_tangent(y, dy):
    """``dy`` in the output's space where only one operand's tangent reached it (``NoTangent() + dx``
    is ``dx``): a number's tangent spread over an array output, in the output's dtype."""
    if type(y) is np.ndarray and np.ndim(dy) == 0 and not isinstance(dy, AbstractZero):
        return np.full(y.shape, dy, dtype=y.dtype if y.dtype.kind in "fc" else np.result_type(dy))
    if type(y) is np.ndarray and type(dy) is np.ndarray and dy.ndim <= y.ndim and dy.shape != y.shape:
        # the one tangent is a broadcast operand's (a (2, 1) array plus a constant (2, 2) one); a
        # batch of tangents has one more axis than the output
        dy = np.broadcast_to(dy, y.shape).copy()
    if type(y) is np.ndarray and type(dy) is np.ndarray and dy.dtype != y.dtype and y.dtype.kind in "fc":
        return dy.astype(y.dtype)  # float32 minus an int64 array is float64
    if isinstance(y, np.inexact) and isinstance(dy, (np.generic, np.ndarray)) and dy.ndim == 0 and dy.dtype != y.dtype:
        return y.dtype.type(dy)  # (a 0-d float32 array plus a 0-d int64 array is a float64 scalar)
    return dy


def check_native_frule(op, *args) -> None:
    """Forward mode runs a user class's operator methods on dual numbers; an frule cannot."""
    if any(_is_user_object(x) for x in args):
        raise TypeError(
            f"frule({callable_name(op)}) covers numbers, arrays and sequences; for a "
            f"{', '.join(type(x).__qualname__ for x in args if _is_user_object(x))} operand, forward mode runs "
            "the class's own operator method"
        )


# ----- addition, subtraction, negation -------------------------------------------------------


def _scalar_sum_pullbacks(sign: float, name: str) -> dict:
    """The pullbacks of ``a + b`` (``sign`` 1) or ``a - b`` (``sign`` -1) for real scalar operands,
    by the operands' types: they depend on nothing else, so none is made per call.

    A real scalar cotangent is given each input's type (a NumPy float scalar's own type, ``float``
    for a Python real: ``match_input``'s answer, without its checks); any other goes through
    ``match_input``, whose result for a scalar input depends only on the input's type.
    """
    pullbacks = {}
    for ta in _SCALARS:
        for tb in _SCALARS:
            ca, cb = _cotangent_type(ta), _cotangent_type(tb)
            a, b = ta(0), tb(0)

            def scalar_sum_pullback(dy, a=a, b=b, ca=ca, cb=cb):
                td = type(dy)
                if td in _SCALAR_COTANGENTS:
                    db = dy if sign > 0 else -dy
                    return _NO, (dy if td is ca else ca(dy)), (db if td is cb else cb(db))
                dy = unthunk(dy)
                match = input_matcher(a, dy)  # a scalar output: a batch is a 1-D cotangent
                return _NO, match(a, dy), match(b, dy if sign > 0 else -dy)

            scalar_sum_pullback.__name__ = scalar_sum_pullback.__qualname__ = name
            pullbacks[ta, tb] = scalar_sum_pullback
    return pullbacks


def _add_real_pullback(dy):
    if type(dy) is float:
        return _NO, dy, dy
    rows = real_rows(dy)
    dy = real_cotangent(dy) if rows is None else rows
    return _NO, dy, dy


_ADD_SCALAR_PULLBACKS = _scalar_sum_pullbacks(1.0, "add_pullback")
_SUB_SCALAR_PULLBACKS = _scalar_sum_pullbacks(-1.0, "sub_pullback")
# Python reals take the plainer pullbacks: one dictionary lookup by the operands' types picks
# the pullback of any pair of real scalars (a loop's `total += X[i]` pays for nothing else)
for _ta in _REAL:
    for _tb in _REAL:
        _ADD_SCALAR_PULLBACKS[_ta, _tb] = _add_real_pullback
del _ta, _tb


@rrule.register(operator.add, batched=True)
def rrule_add(a, b):
    if type(a) is _NDARRAY and type(b) is _NDARRAY:  # two arrays: no other kind of operand to rule out
        return _rrule_add_values(a, b)
    pullback = _ADD_SCALAR_PULLBACKS.get((type(a), type(b)))
    if pullback is not None:
        return a + b, pullback
    if isinstance(a, _SEQUENCES) and isinstance(b, _SEQUENCES):
        return _rrule_concat(a, b)
    if isinstance(a, _TEXT):
        return a + b, _no_tangents(2)
    if not isinstance(a, _NOT_SEQUENCES) or not isinstance(b, _NOT_SEQUENCES):
        return _rrule_other(operator.add, _rrule_add_values, a, b)
    return _rrule_add_values(a, b)


def _rrule_add_values(a, b):
    """``a + b`` for numbers and arrays: each operand's cotangent is ``dy`` brought to its space."""
    y = a + b
    fits_a, fits_b = _fits(a, y), _fits(b, y)
    array_out = type(y) is np.ndarray  # (a complex number plus a NumPy float is a Python complex)

    def add_pullback(dy):
        if type(dy) is not np.ndarray and isinstance(dy, AbstractThunk):
            dy = dy.unthunk()
        if array_out and type(dy) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape:  # the common one
            return _NO, (dy if fits_a else _passed_on(a, dy)), (dy if fits_b else _passed_on(b, dy))
        if carries_batch(y, dy):
            return _NO, _passed_on_batch(a, dy), _passed_on_batch(b, dy)
        return _NO, _passed_on(a, dy), _passed_on(b, dy)

    return y, add_pullback


def _rrule_concat(a, b):
    decline_batch()  # the cotangents of sequences are structures, one cotangent at a time
    n = len(a)

    def concat_pullback(dy):
        entries = seq_entries(dy, n + len(b))
        return _NO, seq_tangent(a, entries[:n]), seq_tangent(b, entries[n:])

    return a + b, concat_pullback


@frule.register(operator.add, batched=True)
def frule_add(tangents, a, b):
    _, da, db = tangents
    if type(a) not in _REAL or type(b) not in _REAL:
        check_native_frule(operator.add, a, b)
    if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
        y = a + b
        if not isinstance(y, _SEQUENCES):  # a sequence NumPy broadcasts
            return frule_on_arrays(frule_add, tangents, (a, b))
        entries = seq_entries(da, len(a)) + seq_entries(db, len(b))
        return y, seq_tangent(y, entries)
    if isinstance(a, _TEXT):
        return a + b, _NO
    y = a + b
    return y, da + db if type(y) is float else _fit_tangent(y, da + db)


# `operator.concat(a, b)` is `a + b` for sequences (and refuses numbers itself)
rrule.register(operator.concat, batched=True)(rrule_add)
frule.register(operator.concat, batched=True)(frule_add)  # the flag is per function: keep it


def _sub_real_pullback(dy):
    if type(dy) is float:
        return _NO, dy, -dy
    rows = real_rows(dy)
    dy = real_cotangent(dy) if rows is None else rows
    return _NO, dy, -dy


for _ta in _REAL:
    for _tb in _REAL:
        _SUB_SCALAR_PULLBACKS[_ta, _tb] = _sub_real_pullback
del _ta, _tb


@rrule.register(operator.sub, batched=True)
def rrule_sub(a, b):
    if type(a) is _NDARRAY and type(b) is _NDARRAY:  # two arrays: no other kind of operand to rule out
        return _rrule_sub_values(a, b)
    pullback = _SUB_SCALAR_PULLBACKS.get((type(a), type(b)))
    if pullback is not None:
        return a - b, pullback
    if not isinstance(a, _NOT_SEQUENCES) or not isinstance(b, _NOT_SEQUENCES):
        return _rrule_other(operator.sub, _rrule_sub_values, a, b)
    return _rrule_sub_values(a, b)


def _rrule_sub_values(a, b):
    """``a - b`` for numbers and arrays: ``a``'s cotangent is ``dy`` brought to its space, ``b``'s
    is ``-dy``."""
    y = a - b
    fits_a = _fits(a, y)
    array_out = type(y) is np.ndarray
    # a real array b is summed first and negated after (exactly the same numbers): one pass over
    # the cotangent fewer where b was broadcast
    summed_first = type(b) is np.ndarray and b.dtype.kind == "f"

    def sub_pullback(dy):
        if type(dy) is not np.ndarray and isinstance(dy, AbstractThunk):
            dy = dy.unthunk()
        if array_out and type(dy) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape:  # the common one
            if summed_first:
                return _NO, (dy if fits_a else _passed_on(a, dy)), Thunk(lambda: -match_input(b, dy))
            return _NO, (dy if fits_a else _passed_on(a, dy)), _array_cotangent(b, dy, lambda: match_input(b, -dy))
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        if carries_batch(y, dy):
            return _NO, _passed_on_batch(a, dy), _array_cotangent(b, dy, lambda: match_input_batch(b, -dy))
        return _NO, _passed_on(a, dy), _array_cotangent(b, dy, lambda: match_input(b, -dy))

    return y, sub_pullback


@frule.register(operator.sub, batched=True)
def frule_sub(tangents, a, b):
    _, da, db = tangents
    if type(a) not in _REAL or type(b) not in _REAL:
        check_native_frule(operator.sub, a, b)
        if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
            return _frule_other(operator.sub, frule_sub, tangents, a, b)
    y = a - b
    return y, da - db if type(y) is float else _fit_tangent(y, da - db)


def _neg_real_pullback(dy):
    if type(dy) is float:
        return _NO, -dy
    rows = real_rows(dy)
    return _NO, -(real_cotangent(dy) if rows is None else rows)


def _neg_scalar_pullbacks() -> dict:
    """The pullbacks of ``-a`` for NumPy float scalars, by ``a``'s type (its cotangent's type)."""
    pullbacks = {}
    for ta in _NP_FLOATS:
        a = ta(0)

        def neg_pullback(dy, a=a, ta=ta):
            if type(dy) in _SCALAR_COTANGENTS:
                return _NO, ta(-dy)
            dy = unthunk(dy)
            return _NO, input_matcher(a, dy)(a, -dy)

        pullbacks[ta] = neg_pullback
    return pullbacks


_NEG_SCALAR_PULLBACKS = _neg_scalar_pullbacks()


@rrule.register(operator.neg, batched=True)
def rrule_neg(a):
    if type(a) in _REAL:
        return -a, _neg_real_pullback
    pullback = _NEG_SCALAR_PULLBACKS.get(type(a))
    if pullback is not None:
        return -a, pullback
    if _is_user_object(a):
        return rrule_user_unary(operator.neg, a)
    y = -a

    def neg_pullback(dy):
        dy = unthunk(dy)
        return _NO, input_matcher(y, dy)(a, -dy)

    return y, neg_pullback


@frule.register(operator.neg, batched=True)
def frule_neg(tangents, a):
    if type(a) not in _REAL:
        check_native_frule(operator.neg, a)
    return -a, -tangents[1]


def _pos_pullback(dy):
    return _NO, unthunk(dy)


@rrule.register(operator.pos, batched=True)
def rrule_pos(a):
    if type(a) in _REAL:
        return +a, _pos_pullback
    if _is_user_object(a):
        return rrule_user_unary(operator.pos, a)
    y = +a

    def pos_pullback(dy):
        dy = unthunk(dy)
        return _NO, input_matcher(y, dy)(a, dy)

    return y, pos_pullback


@frule.register(operator.pos, batched=True)
def frule_pos(tangents, a):
    if type(a) not in _REAL:
        check_native_frule(operator.pos, a)
    return +a, tangents[1]


# ----- multiplication and division -----------------------------------------------------------


@rrule.register(operator.mul, batched=True)
def rrule_mul(a, b):
    if type(a) is _NDARRAY and type(b) is _NDARRAY:  # two arrays: no other kind of operand to rule out
        return _rrule_mul_values(a, b)
    if type(a) in _REAL and type(b) in _REAL:

        def mul_pullback(dy):
            if type(dy) is float:
                return _NO, dy * b, a * dy
            rows = real_rows(dy)
            dy = real_cotangent(dy) if rows is None else rows
            return _NO, dy * b, a * dy

        return a * b, mul_pullback
    ca = _COTANGENT_TYPES.get(type(a))
    cb = _COTANGENT_TYPES.get(type(b))
    if ca is not None and cb is not None:  # real scalars, one at least a NumPy float (X[i] * X[j])

        def mul_pullback(dy):
            if type(dy) in _SCALAR_COTANGENTS:
                da, db = dy * b, a * dy
                return _NO, (da if type(da) is ca else ca(da)), (db if type(db) is cb else cb(db))
            dy = unthunk(dy)
            match = input_matcher(a, dy)
            return _NO, match(a, dy * b), match(b, a * dy)

        return a * b, mul_pullback
    if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
        if _is_user_object(a) or _is_user_object(b):
            return rrule_user_binary(operator.mul, a, b)
        y = a * b
        if isinstance(y, _SEQUENCES):  # Python repeats the sequence ([0.0] * n)
            return _rrule_repeat(a, b, y)
        return rrule_on_arrays(_rrule_mul_values, (a, b))  # NumPy broadcasts it (x * [1.0, 2.0])
    if isinstance(a, _TEXT) or isinstance(b, _TEXT):
        return a * b, _no_tangents(2)
    if _is_user_object(a) or _is_user_object(b):
        return rrule_user_binary(operator.mul, a, b)
    return _rrule_mul_values(a, b)


def _rrule_mul_values(a, b):
    """``a * b`` for numbers and arrays: each operand's cotangent is ``dy`` times the other's conjugate."""
    y = a * b
    # a real array operand of the output's shape and dtype (see `_fits`): its cotangent of a
    # cotangent of that shape and dtype is `dy * other` as it is (real, nothing to sum or cast)
    fits_a, fits_b = _fits(a, y), _fits(b, y)

    def mul_pullback(dy):
        if type(dy) is not np.ndarray and isinstance(dy, AbstractThunk):
            dy = dy.unthunk()
        if (fits_a or fits_b) and type(dy) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape:
            da = Thunk(lambda: dy * b) if fits_a else _array_cotangent(a, dy, lambda: match_input(a, dy * conj(b)))
            db = Thunk(lambda: a * dy) if fits_b else _array_cotangent(b, dy, lambda: match_input(b, conj(a) * dy))
            return _NO, da, db
        dy = numpy_cotangent(y, unthunk(dy))
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        match = input_matcher(y, dy)
        da = _array_cotangent(a, dy, lambda: match(a, dy * conj(b)))
        return _NO, da, _array_cotangent(b, dy, lambda: match(b, conj(a) * dy))

    return y, mul_pullback


def _repeat_entries(dy, xs, times: int) -> list:
    """Entry tangents of ``xs`` from the cotangent of ``xs * times``: each entry sums its copies."""
    n = len(xs)
    copies = seq_entries(dy, n * max(times, 0))
    entries = [_ZERO] * n
    for k, e in enumerate(copies):
        if not isinstance(e, AbstractZero):
            entries[k % n] = entries[k % n] + unthunk(e)
    return entries


def _rrule_repeat(a, b, y):
    """``y = a * b``, a sequence repeated."""
    decline_batch()  # the cotangents of sequences are structures, one cotangent at a time
    xs, times = (a, b) if isinstance(a, _SEQUENCES) else (b, a)

    def repeat_pullback(dy):
        dxs = seq_tangent(xs, _repeat_entries(dy, xs, times))
        return (_NO, dxs, _NO) if xs is a else (_NO, _NO, dxs)

    return y, repeat_pullback


@frule.register(operator.mul, batched=True)
def frule_mul(tangents, a, b):
    _, da, db = tangents
    if type(a) not in _REAL or type(b) not in _REAL:
        check_native_frule(operator.mul, a, b)
    if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
        y = a * b
        if not isinstance(y, _SEQUENCES):  # a sequence NumPy broadcasts
            return frule_on_arrays(frule_mul, tangents, (a, b))
        (xs, dxs, times) = (a, da, b) if isinstance(a, _SEQUENCES) else (b, db, a)
        return y, seq_tangent(y, seq_entries(dxs, len(xs)) * max(times, 0))
    if isinstance(a, _TEXT) or isinstance(b, _TEXT):
        return a * b, _NO
    return a * b, da * b + a * db


@rrule.register(operator.truediv, batched=True)
def rrule_truediv(a, b):
    ca = _COTANGENT_TYPES.get(type(a))
    cb = _COTANGENT_TYPES.get(type(b))
    if ca is not None and cb is not None and (type(a) in _NP_FLOATS or type(b) in _NP_FLOATS):
        y = a / b

        def truediv_pullback(dy):
            if type(dy) in _SCALAR_COTANGENTS:
                da = dy / b
                db = -da * y
                return _NO, (da if type(da) is ca else ca(da)), (db if type(db) is cb else cb(db))
            dy = unthunk(dy)
            da = dy / b
            match = input_matcher(y, dy)
            return _NO, match(a, da), match(b, -da * y)

        return y, truediv_pullback
    if (type(a) not in _REAL or type(b) not in _REAL) and (
        not isinstance(a, _NOT_SEQUENCES) or not isinstance(b, _NOT_SEQUENCES)
    ):
        return _rrule_other(operator.truediv, rrule_truediv, a, b)
    y = a / b
    if type(a) in _REAL and type(b) in _REAL:

        def truediv_pullback(dy):
            if type(dy) is not float:
                rows = real_rows(dy)
                dy = real_cotangent(dy) if rows is None else rows
            da = dy / b
            return _NO, da, -da * y

        return y, truediv_pullback

    def truediv_pullback(dy):
        dy = numpy_cotangent(y, unthunk(dy))
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        da = dy / conj(b)
        match = input_matcher(y, dy)
        db = _array_cotangent(b, dy, lambda: match(b, -da * conj(y)))
        return _NO, _array_cotangent(a, dy, lambda: match(a, da)), db

    return y, truediv_pullback


@frule.register(operator.truediv, batched=True)
def frule_truediv(tangents, a, b):
    _, da, db = tangents
    if type(a) not in _REAL or type(b) not in _REAL:
        check_native_frule(operator.truediv, a, b)
        if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
            return _frule_other(operator.truediv, frule_truediv, tangents, a, b)
    y = a / b
    return y, (da - y * db) / b


# floor division is piecewise constant: its derivative is zero wherever it exists.
@rrule.register(operator.floordiv, batched=True)
def rrule_floordiv(a, b):
    if _is_user_object(a) or _is_user_object(b):
        return rrule_user_binary(operator.floordiv, a, b)
    da, db = zero_for(a), zero_for(b)

    def floordiv_pullback(dy):
        return _NO, da, db

    return a // b, floordiv_pullback


@frule.register(operator.floordiv, batched=True)
def frule_floordiv(tangents, a, b):
    check_native_frule(operator.floordiv, a, b)
    y = a // b
    return y, zero_for(y)


# a % b == a - floor(a / b) * b, with the floor's derivative taken as zero (ChainRules' `mod`).
# `a // b` is the quotient Python (and NumPy) pair with `%`, so it is exact where a / b rounds.
@rrule.register(operator.mod, batched=True)
def rrule_mod(a, b):
    if isinstance(a, _TEXT):  # string formatting, "%.3f" % x
        return a % b, _no_tangents(2)
    if not isinstance(a, _NOT_SEQUENCES) or not isinstance(b, _NOT_SEQUENCES):
        return _rrule_other(operator.mod, rrule_mod, a, b)
    y = a % b

    def mod_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        match = input_matcher(y, dy)
        return _NO, match(a, dy), match(b, -dy * (a // b))

    return y, mod_pullback


@frule.register(operator.mod, batched=True)
def frule_mod(tangents, a, b):
    if isinstance(a, _TEXT):
        return a % b, _NO
    check_native_frule(operator.mod, a, b)
    if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
        return _frule_other(operator.mod, frule_mod, tangents, a, b)
    _, da, db = tangents
    y = a % b
    return y, _fit_tangent(y, da - (a // b) * db)


# ----- powers ---------------------------------------------------------------------------------


def _log_base(a):
    """log|a| where a != 0, and 0 where a == 0 (the exponent's partial vanishes with the base).

    For a negative real base this is the real part of the complex derivative, as ChainRules takes it.
    """
    if type(a) in _REAL:
        return math.log(abs(a)) if a != 0 else 0.0
    if type(a) is complex:
        return cmath.log(a) if a != 0 else 0.0
    if not hasattr(type(a), "__array_function__"):  # an engine's value (a nested pullback) stays one
        a = np.asarray(a)
    safe = np.where(a == 0, 1, a)
    return np.log(np.abs(safe)) if not np.iscomplexobj(a) else np.log(safe)


def pow_partials(a, b, y):
    """(dy/da, dy/db) of ``y = a ** b``, finite at ``a == 0`` wherever the derivative exists there."""
    if type(a) in _REAL and type(b) in _REAL:  # no NumPy, no ABC checks on the scalar path
        if b == 0:
            return 0.0, (y * math.log(abs(a)) if a != 0 else 0.0)
        if a == 0:
            return (math.inf if b < 1 else b * 0.0 ** (b - 1)), 0.0  # x ** b, 0 < b < 1, is vertical at 0
        return b * a ** (b - 1), y * math.log(abs(a))
    if isinstance(a, Number) and isinstance(b, Number):
        if b == 0:
            da = 0.0
        elif a == 0 and b.real < 1:
            da = math.inf
        else:
            da = b * a ** (b - 1)
        return da, y * _log_base(a)
    with np.errstate(divide="ignore", invalid="ignore"):  # (only 0 * inf at a = b = 0 set to 0: see _pow_base_partial)
        da = np.where((_as_array(b) == 0) & (_as_array(a) == 0), 0.0, b * np.power(a, b - 1))
    return da, y * _log_base(a)


def _as_array(x):
    """``x`` as an array to compare; an engine's value (a nested pullback's) compares as it is."""
    return x if hasattr(type(x), "__array_function__") else np.asarray(x)


def _pow_base_partial(a, b):
    """dy/da of ``y = a ** b``, the first of ``pow_partials`` (the same numbers), on its own."""
    if type(a) is not np.ndarray and isinstance(a, Number) and isinstance(b, Number):
        return pow_partials(a, b, a**b)[0]
    if type(b) is int or type(b) is float:  # a constant exponent (x ** 2): no mask to build
        if b == 0:
            return 0.0
        if type(b) is int and b > 0:  # a ** (b - 1) cannot divide by zero: no error state to set
            if b == 2:  # a + a is 2 * a exactly, without converting the Python 2 (half the time)
                return a + a if type(a) is _NDARRAY and a.dtype.kind in "fc" else b * a
            return b * np.power(a, b - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return b * np.power(a, b - 1)
    # b a^(b-1) is 0 at b = 0 by itself, except at a = 0 (0 * inf): only that point is set to 0, so
    # that the partial's own derivative in b at b = 0 (a Hessian's cross term, 1 / a) stays
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((_as_array(b) == 0) & (_as_array(a) == 0), 0.0, b * np.power(a, b - 1))


@rrule.register(operator.pow, batched=True)
def rrule_pow(a, b):
    if type(a) is _NDARRAY and (type(b) in _REAL or type(b) is _NDARRAY):  # arrays: no user object to rule out
        return _rrule_pow_values(a, b)
    if (type(a) not in _REAL or type(b) not in _REAL) and (
        not isinstance(a, _NOT_SEQUENCES) or not isinstance(b, _NOT_SEQUENCES)
    ):
        return _rrule_other(operator.pow, _rrule_pow_values, a, b)
    if type(a) in _REAL and type(b) in _REAL:
        y = a**b
        if type(y) is not complex:
            return y, _real_pow_pullback(a, b, y)
    return _rrule_pow_values(a, b)


def _real_pow_pullback(a, b, y):
    """The pullback of ``y = a ** b`` for Python reals with a real result."""

    def pow_pullback(dy):
        if type(dy) is not float:
            rows = real_rows(dy)
            dy = real_cotangent(dy) if rows is None else rows
        pa, pb = pow_partials(a, b, y)
        return _NO, dy * pa, dy * pb

    return pow_pullback


def _rrule_pow_values(a, b):
    """``a ** b`` for numbers and arrays (ChainRules' ``^`` rule, conjugated partials)."""
    y = a**b

    def pow_pullback(dy):
        if isinstance(dy, AbstractThunk):
            dy = dy.unthunk()
        if isinstance(dy, AbstractZero):
            return _NO, dy, dy
        # the exponent's cotangent is left lazy: it is mostly a constant's (the 2 of x ** 2), whose
        # y log|a| and sum over the base's shape nobody asks for
        if carries_batch(y, dy):
            da = match_input_batch(a, dy * conj(_pow_base_partial(a, b)))
            return _NO, da, Thunk(lambda: match_input_batch(b, dy * conj(pow_partials(a, b, y)[1])))
        da = match_input(a, dy * conj(_pow_base_partial(a, b)))
        return _NO, da, _array_cotangent(b, dy, lambda: match_input(b, dy * conj(pow_partials(a, b, y)[1])))

    return y, pow_pullback


@frule.register(operator.pow, batched=True)
def frule_pow(tangents, a, b):
    _, da, db = tangents
    if type(a) not in _REAL or type(b) not in _REAL:
        check_native_frule(operator.pow, a, b)
        if isinstance(a, _SEQUENCES) or isinstance(b, _SEQUENCES):
            return _frule_other(operator.pow, frule_pow, tangents, a, b)
    y = a**b
    if isinstance(db, AbstractZero):  # a constant exponent (x ** 2): no y log|a| to compute
        return y, _pow_base_partial(a, b) * da
    pa, pb = pow_partials(a, b, y)
    return y, pa * da + pb * db


# ----- absolute value ---------------------------------------------------------------------------


def abs_partial(x):
    """d|x|/dx as the pullback multiplies it: sign(x) (0 at 0), or x / |x| for complex x.

    For complex x the cotangent of the real |x| is real, and the pullback gives ``dy * x / |x|``
    (ChainRules' convention: the gradient of a real function of z is df/dx + i df/dy).
    """
    if type(x) in _REAL:
        return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
    if type(x) is complex:
        r = abs(x)
        return x / r if r != 0 else 0j
    if np.iscomplexobj(x):
        r = np.abs(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r == 0, 0, x / np.where(r == 0, 1, r))
    return np.sign(x)


@rrule.register(operator.abs, batched=True)
def rrule_abs(x):
    if type(x) not in _REAL and _is_user_object(x):
        return rrule_user_unary(operator.abs, x)
    s = abs_partial(x)
    if type(x) in _REAL:

        def abs_pullback(dy):
            if type(dy) is not float:
                rows = real_rows(dy)
                dy = real_cotangent(dy) if rows is None else rows
            return _NO, dy * s

        return abs(x), abs_pullback

    y = abs(x)

    def abs_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO, dy
        return _NO, input_matcher(y, dy)(x, np.real(dy) * s)

    return y, abs_pullback


@frule.register(operator.abs, batched=True)
def frule_abs(tangents, x):
    if type(x) not in _REAL:
        check_native_frule(operator.abs, x)
    # d|x| = Re(conj(x / |x|) dx), which is sign(x) dx for real x
    dx = tangents[1]
    s = abs_partial(x)
    if type(x) in _REAL or isinstance(dx, AbstractZero):
        return abs(x), s * dx
    return abs(x), np.real(conj(s) * unthunk(dx))


# ----- indexing -------------------------------------------------------------------------------


def dict_tangent(entries: dict):
    """``Tangent[dict]`` of the non-zero entries, or ``ZeroTangent()`` when there are none."""
    entries = {k: e for k, e in entries.items() if not isinstance(e, AbstractZero)}
    return Tangent[dict](entries) if entries else _ZERO


def dict_entry(dt, key):
    """The tangent at ``key`` of a dict's tangent (a ``Tangent[dict]``, a plain dict or a zero)."""
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return dt
    if isinstance(dt, Tangent):
        return dt[key]
    return dt.get(key, _ZERO)


def entry_cotangent(y, dy):
    """``match_entry`` for the cotangent of the entry ``y`` itself, or a batch of them (a leading
    batch axis), matched row by row."""
    return match_input_batch(y, dy) if carries_batch(y, dy) else match_entry(y, dy)


@rrule.register(operator.getitem, batched=True)
def rrule_getitem(xs, key):
    """``xs[key]`` for tuples, lists (integer or slice keys), dicts and strings.

    The cotangent is structural: ``Tangent[tuple]``/``Tangent[list]`` with the picked entries
    (zeros elsewhere), ``Tangent[dict]`` with the picked key. NumPy arrays have a rule of their
    own; another object's ``__getitem__`` is differentiated by the active engine. An entry of a
    plain tuple, list or dict takes a batch of cotangents.
    """
    y = xs[key]
    if isinstance(xs, _SEQUENCES):
        n = len(xs)
        if isinstance(key, slice):
            picked = range(n)[key]

            def getitem_pullback(dy):
                entries = [_ZERO] * n
                given = seq_entries(dy, len(picked))
                for i, e in zip(picked, given):
                    entries[i] = e
                return _NO, seq_tangent(xs, entries, entries_carry_batch(y, given)), _NO

            return y, getitem_pullback
        i = operator.index(key) % n
        field = xs._fields[i] if _is_namedtuple(xs) else None  # (a result of np.linalg.eigh, slogdet, ...)
        # another tuple or list subclass takes its entries by position, as the plain ones do
        tangent_type = None if field is not None else _PLAIN_TANGENT.get(type(xs)) or Tangent[type(xs)]

        def getitem_pullback(dy):
            # (a refused cotangent is kept unread, as sums keep it: the entry may be a constant)
            if not isinstance(dy, RefusedThunk) and (type(dy) is not float or type(y) is not float):
                dy = entry_cotangent(y, unthunk(dy))
                if isinstance(dy, AbstractZero):
                    return _NO, _ZERO, _NO
            if field is not None:  # the one field, valid for its element
                return _NO, Tangent[type(xs)](**{field: dy}), _NO
            entries = [_ZERO] * n
            entries[i] = dy
            # the one entry is already valid for its element: no checks to repeat
            return _NO, _rebuild_tangent(tangent_type, tuple(entries)), _NO

        return y, getitem_pullback
    if isinstance(xs, dict):

        def getitem_pullback(dy):
            return _NO, dict_tangent({key: entry_cotangent(y, unthunk(dy))}), _NO

        return y, getitem_pullback
    if isinstance(xs, (*_TEXT, range)):
        return y, _no_tangents(2)
    # Another type's own __getitem__ (a user container): let the engine look inside it.
    y, method_pullback = rrule_via_ad(type(xs).__getitem__, xs, key)

    def getitem_pullback(dy):
        _, dxs, dkey = method_pullback(dy)
        return _NO, dxs, dkey

    return y, getitem_pullback


@frule.register(operator.getitem)
def frule_getitem(tangents, xs, key):
    _, dxs, _ = tangents
    y = xs[key]
    if isinstance(xs, _SEQUENCES):
        entries = seq_entries(dxs, len(xs))
        if isinstance(key, slice):
            return y, seq_tangent(y, entries[key])
        return y, entries[key]
    if isinstance(xs, dict):
        return y, dict_entry(dxs, key)
    if isinstance(xs, (*_TEXT, range)):
        return y, _NO
    raise TypeError(
        f"frule({callable_name(operator.getitem)}) covers tuples, lists, dicts and strings (NumPy arrays have "
        f"their own rule); for a {type(xs).__qualname__}, register an frule for its __getitem__"
    )


# ----- in-place operators, dict merge, call ------------------------------------------------------


def _inplace_rules(inplace_op, method_name: str, pure_rrule, pure_frule):
    """``a += b`` and friends: an immutable ``a`` (a number, a tuple) gives the pure operator's result;
    a list, a dict or an array is updated in place, and the rule differentiates the pure operator on a
    copy of its old value (which the pullback may need, and the update overwrites). A user class's
    own in-place method (``__iadd__``) is differentiated by the active engine."""

    def rrule_inplace(a, b):
        if isinstance(a, (np.ndarray, list, dict)):
            _, pullback = pure_rrule(a.copy(), b)
            return inplace_op(a, b), pullback
        method = _python_method(type(a), method_name) if _is_user_object(a) else None
        if method is None:  # Python itself falls back to the pure operator
            return pure_rrule(a, b)
        decline_batch()  # a user object's cotangent is a structure: one cotangent at a time
        y, method_pullback = rrule_via_ad(method, a, b)

        def user_inplace_pullback(dy):
            return (_NO, *method_pullback(dy)[1:])

        return y, user_inplace_pullback

    def frule_inplace(tangents, a, b):
        if isinstance(a, (np.ndarray, list, dict)):
            _, dy = pure_frule(tangents, a.copy(), b)
            y = inplace_op(a, b)
            return y, _fit_tangent(y, dy)  # (an array updated in place keeps its dtype: float32 stays float32)
        return pure_frule(tangents, a, b)

    name = inplace_op.__name__
    rrule_inplace.__qualname__, frule_inplace.__qualname__ = f"rrule_{name}", f"frule_{name}"
    rrule.register(inplace_op, batched=pure_rrule.batched)(rrule_inplace)
    frule.register(inplace_op, batched=True)(frule_inplace)


_inplace_rules(operator.iadd, "__iadd__", rrule_add, frule_add)
_inplace_rules(operator.iconcat, "__iadd__", rrule_add, frule_add)
_inplace_rules(operator.isub, "__isub__", rrule_sub, frule_sub)
_inplace_rules(operator.imul, "__imul__", rrule_mul, frule_mul)
_inplace_rules(operator.itruediv, "__itruediv__", rrule_truediv, frule_truediv)
_inplace_rules(operator.ifloordiv, "__ifloordiv__", rrule_floordiv, frule_floordiv)
_inplace_rules(operator.imod, "__imod__", rrule_mod, frule_mod)
_inplace_rules(operator.ipow, "__ipow__", rrule_pow, frule_pow)


@rrule.register(operator.or_)
def rrule_or(a, b):
    """``a | b``: merging dicts (the right one wins a shared key) passes each value's cotangent back to
    the dict it came from; on bools, ints and sets it has no derivative."""
    y = a | b
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return y, _no_tangents(2)

    def dict_or_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO, _ZERO, _ZERO
        dvalues = dict(dy.backing) if isinstance(dy, Tangent) else dict(dy)
        da = {k: match_entry(v, dvalues.get(k, _ZERO)) for k, v in a.items() if k not in b}
        db = {k: match_entry(v, dvalues.get(k, _ZERO)) for k, v in b.items()}
        return _NO, dict_tangent(da), dict_tangent(db)

    return y, dict_or_pullback


@frule.register(operator.or_)
def frule_or(tangents, a, b):
    y = a | b
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return y, _NO
    _, da, db = tangents
    merged = {k: dict_entry(da, k) for k in a if k not in b}
    merged.update({k: dict_entry(db, k) for k in b})
    return y, dict_tangent(merged)


_inplace_rules(operator.ior, "__ior__", rrule_or, frule_or)


@rrule.register(operator.call)
def rrule_call(f, *args, **kwargs):
    """``operator.call(f, *args)`` is ``f(*args)``: the active engine differentiates ``f``."""
    y, f_pullback = rrule_via_ad(f, *args, **kwargs)

    def call_pullback(dy):
        return (_NO, *f_pullback(dy))

    return y, call_pullback


@frule.register(operator.call)
def frule_call(tangents, f, *args, **kwargs):
    result = frule(tangents[1:], f, *args, **kwargs)
    if result is None:
        raise NoRuleError(f, args, location=user_location(), reason="operator.call in forward mode needs its frule")
    return result


# ----- no derivative ----------------------------------------------------------------------------

non_differentiable(
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.ge,
    operator.gt,
    operator.not_,
    operator.truth,
    operator.is_,
    operator.is_not,
    operator.contains,
    operator.countOf,
    operator.indexOf,
    operator.length_hint,
    operator.and_,
    operator.xor,
    operator.invert,
    operator.inv,
    operator.lshift,
    operator.rshift,
    operator.index,
)
