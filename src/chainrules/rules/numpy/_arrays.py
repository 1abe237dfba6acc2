"""Helpers shared by the array rules: projection onto inputs, batch axes, sequences, scatter thunks.

A *batched* tangent has one more leading axis than its primal: row ``b`` is the ``b``-th tangent
(the forward engine's chunked partials). Rules detect it with ``is_batched(x, dx)``.

The helpers only touch NumPy-specific machinery (dtypes, ``np.add.at``) when the values are real
``np.ndarray``s; anything else that implements NumPy's protocols (the forward engine's duals) is
handled with NumPy functions alone and passed through unchanged.
"""

from __future__ import annotations

import abc
import math
from numbers import Complex, Integral, Real

import numpy as np

from ...core import (
    AbstractZero,
    ActiveValue,
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    carries_batch,
    match_input_batch,
    unthunk,
)

NO = NoTangent()
ZERO = ZeroTangent()

_SCALAR_TYPES = (float, int, complex)
_F64 = np.float64


class ArrayLike(metaclass=abc.ABCMeta):  # noqa: B024 (a virtual type for isinstance, never subclassed)
    """The type of values NumPy dispatches to: arrays, and objects implementing
    ``__array_function__`` (the forward engine's duals, other array libraries).

    For registering operator rules that must not capture unrelated classes which merely
    define the operator (a user's ``__matmul__`` is differentiated through its own code).

    >>> import numpy as np
    >>> isinstance(np.ones(2), ArrayLike), isinstance(2.0, ArrayLike)
    (True, False)
    """

    @classmethod
    def __subclasshook__(cls, C):
        return True if hasattr(C, "__array_function__") else NotImplemented


# ----- tangent spaces -------------------------------------------------------------------


def tangent_dtype(x) -> np.dtype | None:
    """The dtype of ``x``'s natural tangent: its own float/complex dtype, float64 for integers,
    ``None`` when ``x`` has no derivative (bools) or is not a NumPy value."""
    dtype = x.dtype if type(x) is np.ndarray else getattr(x, "dtype", None)
    if not isinstance(dtype, np.dtype):
        return None
    kind = dtype.kind
    if kind in "fc":
        return dtype
    if kind in "iu":
        return np.dtype(np.float64)
    if kind == "O":
        return dtype
    return None


def has_no_tangent(x) -> bool:
    """Whether ``x`` is a boolean (scalar or array), whose tangent is ``NoTangent``."""
    if isinstance(x, (bool, np.bool_)):
        return True
    return isinstance(x, np.ndarray | np.generic) and tangent_dtype(x) is None


def to_input(x, dx):
    """Bring the array cotangent ``dx`` (already of ``x``'s shape) into ``x``'s tangent space.

    A real ``x`` gets the real part, float32 stays float32, integers get float64, a Python number
    gets a Python number, a bool gets ``NoTangent``, and a (nested) list or tuple gets a
    ``Tangent[list]``/``Tangent[tuple]`` of its elements' cotangents (``dx``'s leading axis runs
    over the elements). Anything that is not a NumPy value passes through untouched.

    >>> import numpy as np
    >>> to_input([1.0, 2], np.array([3.0, 4.0]))
    Tangent[list](3.0, 4.0)
    """
    if isinstance(dx, AbstractZero):
        return dx
    if isinstance(x, np.ndarray):
        dtype = tangent_dtype(x)
        if dtype is None:
            return NO
        if type(dx) is np.ndarray or isinstance(dx, np.generic):
            if dtype.kind == "f" and dx.dtype.kind == "c":
                dx = dx.real
            if dx.dtype != dtype and dtype.kind != "O":
                dx = dx.astype(dtype)
            if np.ndim(dx) != x.ndim:
                dx = np.reshape(dx, x.shape)
        elif isinstance(dx, _SCALAR_TYPES):
            dx = np.asarray(np.real(dx) if dtype.kind == "f" else dx, dtype=dtype).reshape(x.shape)
        return dx
    if isinstance(x, (bool, np.bool_)):
        return NO
    if isinstance(x, (list, tuple)):
        return Tangent[type(x)](*(to_input(e, dx[i]) for i, e in enumerate(x)))
    if isinstance(x, (str, bytes, slice, type(None), type(Ellipsis))):
        return NO
    if not isinstance(dx, (np.ndarray, np.generic, *_SCALAR_TYPES)):
        # array-likes implementing NumPy's protocols: only realness can be read off them
        return np.real(dx) if np.iscomplexobj(dx) and not np.iscomplexobj(x) else dx
    if isinstance(x, np.generic):
        dtype = tangent_dtype(x)
        if dtype is None:
            return NO
        value = dx[()] if isinstance(dx, np.ndarray) else dx
        return dtype.type(np.real(value) if dtype.kind == "f" else value)
    if isinstance(x, (Integral, Real)):
        return float(np.real(dx))
    if isinstance(x, Complex):
        return complex(dx[()] if isinstance(dx, np.ndarray) else dx)
    if isinstance(x, ActiveValue) and np.iscomplexobj(dx) and not np.iscomplexobj(x):
        return np.real(dx)  # an engine's real value (a Hessian's dual number) gets a real cotangent
    return dx  # an object implementing NumPy's protocols: its tangent is an array-like too


def scalar_of(y):
    """A 0-d array as the NumPy scalar it holds; anything else, an engine's number among them (a
    Hessian's dual number, which has no axes to index), as it is.

    >>> scalar_of(np.array(2.0)), scalar_of(np.ones(2))
    (np.float64(2.0), array([1., 1.]))
    """
    return y[()] if np.ndim(y) == 0 and not isinstance(y, ActiveValue) else y


def array_or_active(x):
    """``x`` as an array: an ndarray as it is, and an engine's value (a dual number, where a Hessian
    runs a rule on them) as it is too, since converting it would drop its derivative, and a list or
    tuple holding such values stacked (which keeps it); anything else (a number, a list) converted.

    >>> array_or_active([1.0, 2.0])
    array([1., 2.])
    """
    if isinstance(x, (np.ndarray, ActiveValue)):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, (list, tuple, ActiveValue)) for e in x):
        items = [array_or_active(e) for e in x]
        if any(isinstance(e, ActiveValue) for e in items):
            return np.stack(items)
    return np.asarray(x)


def cotangent_array(y, dy):
    """The cotangent ``dy`` of an array output ``y`` as a value of ``y``'s shape and tangent dtype.

    A complex ``dy`` for a real ``y`` keeps its real part (the imaginary part is orthogonal to
    every real perturbation)."""
    dy = unthunk(dy)
    if type(dy) is np.ndarray and type(y) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape:
        if y.dtype.kind in "fc":  # already in y's tangent space (the common case)
            return dy
    if isinstance(dy, AbstractZero):
        return dy
    if isinstance(y, np.ndarray | np.generic) and isinstance(dy, np.ndarray | np.generic | float | int | complex):
        dtype = tangent_dtype(y)
        if dtype is not None and dtype.kind != "O":
            if dtype.kind == "f" and np.iscomplexobj(dy):
                dy = np.real(dy)
            dy = np.asarray(dy, dtype=dtype)
            if dy.shape != np.shape(y):
                dy = np.broadcast_to(dy, np.shape(y))
    return dy


def batch_of(y, dy):
    """``dy`` as a batch of cotangents of the output ``y`` (a leading batch axis, brought to
    ``y``'s space by ``match_input_batch``) when it carries one, else None. A pullback asks only
    for a cotangent that is not an array of ``y``'s rank, so that a single cotangent, the common
    case, costs it one test."""
    dy = unthunk(dy)
    return match_input_batch(y, dy) if carries_batch(y, dy) else None


def batch_to_input(x, dx):
    """``to_input`` for a batch of cotangents (a leading batch axis): ``dx`` of shape
    ``(B, *np.shape(x))`` brought to ``x``'s space row by row, the batch axis kept; a (nested)
    list or tuple gets a ``Tangent[list]``/``Tangent[tuple]`` of its elements' batches.

    >>> import numpy as np
    >>> batch_to_input([1.0, 2], np.array([[3.0, 4.0], [5.0, 6.0]]))
    Tangent[list](array([3., 5.]), array([4., 6.]))
    """
    if isinstance(x, (list, tuple)) and not isinstance(dx, AbstractZero):
        return Tangent[type(x)](*(batch_to_input(e, dx[:, i]) for i, e in enumerate(x)))
    return match_input_batch(x, dx)


def zeros_tangent(x, batch: int | None = None):
    """A dense zero tangent for ``x`` (with a leading batch axis of length ``batch``)."""
    dtype = tangent_dtype(x)
    if dtype is None:
        dtype = np.dtype(np.complex128 if isinstance(x, complex) else np.float64)
    shape = np.shape(x) if batch is None else (batch, *np.shape(x))
    return np.zeros(shape, dtype=dtype)


# ----- batches ----------------------------------------------------------------------------


def is_batched(x, dx) -> bool:
    """Whether ``dx`` carries a leading batch axis: one more dimension than its primal ``x``."""
    return not isinstance(dx, AbstractZero) and np.ndim(dx) == np.ndim(x) + 1


def batch_size(pairs) -> int | None:
    """The batch length shared by the batched tangents among ``(primal, tangent)`` pairs, or ``None``."""
    sizes = {np.shape(dx)[0] for x, dx in pairs if is_batched(x, dx)}
    if len(sizes) > 1:
        raise ValueError(f"tangents carry batch axes of different lengths {sorted(sizes)}")
    return sizes.pop() if sizes else None


def dense_tangent(x, dx, batch: int | None):
    """``dx`` as an array: zeros materialized, and a leading batch axis added when ``batch`` is set."""
    dx = unthunk(dx)
    if isinstance(dx, AbstractZero):
        return zeros_tangent(x, batch)
    if batch is not None and not is_batched(x, dx):
        return np.broadcast_to(dx, (batch, *np.shape(x)))
    return dx


def tangent_array(x, dx):
    """The tangent ``dx`` of ``x`` as an array where ``x`` is a (nested) list or tuple of numbers
    whose tangent is a ``Tangent[list]``/``Tangent[tuple]`` (of single tangents, or of batches of
    them: the batch axis stays in front), zeros materialized; any other tangent as it is.

    >>> import chainrules as cr
    >>> tangent_array([1.0, 2.0], cr.Tangent[list](3.0, cr.ZeroTangent()))
    array([3., 0.])
    """
    if not (isinstance(x, (list, tuple)) and isinstance(dx, Tangent)):
        return dx
    items = [unthunk(t) for t in sequence_items(x, dx)]
    items = [t if isinstance(t, AbstractZero) else np.asarray(tangent_array(e, t)) for e, t in zip(x, items)]
    batch = batch_size(list(zip(x, items)))
    return np.stack([dense_tangent(e, t, batch) for e, t in zip(x, items)], axis=0 if batch is None else 1)


def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` as a non-negative index into ``ndim`` dimensions (NumPy's error when out of range)."""
    return int(np.lib.array_utils.normalize_axis_index(axis, ndim))


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """An int or a sequence of ints as non-negative axes; ``None`` means every axis."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Integral):
        return (normalize_axis(axis, ndim),)
    return tuple(normalize_axis(a, ndim) for a in axis)


def shifted(axis, ndim: int):
    """The axis (or axes) of a primal with ``ndim`` dimensions, in a tangent with a leading batch axis."""
    if isinstance(axis, Integral):
        return normalize_axis(axis, ndim) + 1
    return tuple(a + 1 for a in normalize_axes(axis, ndim))


def sum_to(dx, shape: tuple):
    """Sum ``dx`` over the axes along which an array of ``shape`` was broadcast to ``dx``'s shape."""
    dx_shape = np.shape(dx)
    if dx_shape == tuple(shape):
        return dx
    extra = len(dx_shape) - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and dx_shape[i + extra] != 1)
    if axes:
        dx = np.sum(dx, axis=axes)
    return np.reshape(dx, shape)


# ----- sequences (the argument of np.concatenate, the output of np.split) ---------------------


def sequence_cotangent(seq, pieces: list, batch: int | None = None):
    """The cotangent of a sequence argument from its elements' cotangents (each a batch of
    ``batch`` cotangents, when given).

    A list or tuple gets ``Tangent[list]``/``Tangent[tuple]``; an array iterated along its first
    axis gets an array (after the batch axis)."""
    if all(isinstance(p, AbstractZero) for p in pieces):
        return ZERO
    if isinstance(seq, (list, tuple)):
        return Tangent[type(seq)](*pieces)
    rows = [zeros_tangent(seq[i], batch) if isinstance(p, AbstractZero) else unthunk(p) for i, p in enumerate(pieces)]
    if batch is not None:
        return batch_to_input(seq, np.stack(rows, axis=1))
    return to_input(seq, np.stack(rows))


def sequence_items(seq, dseq) -> list:
    """The per-element tangents of a sequence from its tangent (structural, a plain sequence, an
    array for an array argument, or a zero); zeros stay zeros."""
    dseq = unthunk(dseq)
    if isinstance(dseq, AbstractZero):
        return [ZERO] * len(seq)
    if not isinstance(seq, (list, tuple)) and is_batched(seq, dseq):  # an array iterated along axis 0
        return [dseq[:, i] for i in range(len(seq))]
    if isinstance(dseq, Tangent):
        items = list(dseq.backing)
    else:
        items = list(dseq)
    if len(items) != len(seq):
        raise ValueError(f"a tangent of {len(items)} elements for a sequence of {len(seq)}")
    return [unthunk(t) for t in items]


def as_sequence(seq, f) -> list:
    """The elements of a sequence argument; generators are refused (they cannot be replayed)."""
    if isinstance(seq, (list, tuple)):
        return list(seq)
    if isinstance(seq, np.ndarray) or hasattr(seq, "__array_function__"):
        return [seq[i] for i in range(np.shape(seq)[0])]
    raise TypeError(f"the rule for {f.__name__} needs a list, tuple or array of arrays, got {type(seq).__name__}")


# ----- scatter: the cotangent of a selection --------------------------------------------------


def index_has_repeats(index) -> bool:
    """Whether an index may select one position twice: it holds integer arrays or lists.

    Basic indices (ints, slices, ``None``, ``Ellipsis``) and boolean masks never repeat."""
    for part in index if isinstance(index, tuple) else (index,):
        if part is None or part is Ellipsis or isinstance(part, (slice, Integral, np.bool_, bool)):
            continue
        if isinstance(part, np.ndarray):
            if part.dtype.kind == "b":
                continue
            return True
        if isinstance(part, (list, tuple)):
            if np.asarray(part).dtype.kind == "b":
                continue
            return True
        return True
    return False


def scatter_thunk(x, index, dy, view=None, unique: bool | None = None):
    """The cotangent of ``x[index]`` (or of ``view(x)[index]``) for the output cotangent ``dy``.

    An ``InplaceableThunk``: adding it into an accumulator writes only the selected entries
    (``acc[index] += dy``, or ``np.add.at`` when the index may repeat a position); its value, a
    dense array of ``x``'s shape, is built only if asked for. ``view`` is a function returning a
    writeable view of an array of ``x``'s shape (e.g. with axes moved) that ``index`` applies to.
    """
    tdy = type(dy)
    if type(index) is int and view is None and type(x) is np.ndarray and (tdy is float or tdy is _F64):
        # a loop's x[i] with a real number for a cotangent: the checks below all pass, and
        # NumPy's tests of the number (np.iscomplexobj) would cost more than the scatter
        if x.dtype.kind in "fc":
            return element_scatter(x, index, dy)
    if isinstance(x, (list, tuple)):  # (np.take of a list): scattered into NumPy's array of it, then structural
        array = np.asarray(x)
        return Thunk(lambda: to_input(x, unthunk(scatter_thunk(array, index, dy, view, unique))))
    dtype = tangent_dtype(x)
    if dtype is None:
        return NO
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return dy
    if dtype.kind == "f" and type(dy) is not float and np.iscomplexobj(dy):
        dy = np.real(dy)
    if unique is None:  # a single integer (a loop's x[i]) is the common case: decide it first
        repeats = type(index) is not int and index_has_repeats(index)
    else:
        repeats = not unique
    return scatter_rows(x.shape, dtype, index, dy, view, repeats)


def scatter_rows(shape: tuple, dtype: np.dtype, index, dy, view, repeats: bool) -> InplaceableThunk:
    """``dy`` scattered at ``index`` into zeros of ``shape`` (into ``view(acc)`` of an accumulator
    ``acc`` in place), ``np.add.at`` where the index ``repeats``: ``scatter_thunk``'s result once
    its arguments are checked, and a batched getitem's with the batch axis in the index."""

    def scatter_add_into(acc):
        target = acc if view is None else view(acc)
        if repeats:
            np.add.at(target, index, dy)
        else:
            target[index] += dy
        return acc

    def scatter_value():
        if isinstance(dy, np.ndarray | np.generic | int | float | complex):
            return scatter_add_into(np.zeros(shape, dtype=dtype))
        # an array-like implementing NumPy's protocols: let it make its own zeros and scatter
        return scatter_add_into(np.zeros_like(dy, shape=shape))

    if isinstance(dy, ActiveValue):  # (dual numbers, say): a plain accumulator cannot take them in place
        return Thunk(lambda: scatter_add(shape, index, dy, view, dtype))
    return InplaceableThunk(scatter_add_into, Thunk(scatter_value))


def scatter_add(shape: tuple, index, values, view=None, dtype=None):
    """Zeros of ``shape`` with ``values`` added at ``index`` of them (of ``view(zeros)``, a view of
    an array of ``shape`` that ``index`` applies to), summed where the index repeats a position, as
    ``np.add.at`` sums; ``values`` broadcast against the selected entries. A new array.

    A pullback that scatters calls it: an engine's values (a Hessian's dual numbers, an outer
    tape's tracked arrays), which a plain array cannot take in place, are summed by ``np.bincount``
    over their positions, whose rule carries their derivatives.

    >>> scatter_add((3,), np.array([0, 2, 0]), np.array([1.0, 2.0, 3.0]))
    array([4., 0., 2.])
    """
    if dtype is None:
        dtype = getattr(values, "dtype", None)
        dtype = np.result_type(values) if dtype is None else np.dtype(dtype)
    if not isinstance(values, ActiveValue):
        if isinstance(values, np.ndarray | np.generic | int | float | complex):
            out = np.zeros(shape, dtype=dtype)
        else:  # an array-like implementing NumPy's protocols: its own zeros, which it scatters into
            out = np.zeros_like(values, shape=shape, dtype=dtype)
        np.add.at(out if view is None else view(out), index, values)
        return out
    size = math.prod(shape)
    positions = np.arange(size).reshape(shape)
    selected = (positions if view is None else view(positions))[index]
    if np.shape(values) != selected.shape:  # (np.trace's scalar over the diagonal)
        values = values + np.zeros(selected.shape, dtype=dtype)
    flat, weights = selected.reshape(-1), np.reshape(values, (-1,))

    def counted(w):
        return np.bincount(flat, w, size)

    summed = counted(np.real(weights)) + 1j * counted(np.imag(weights)) if dtype.kind == "c" else counted(weights)
    if summed.dtype != dtype:
        summed = summed.astype(dtype)
    return np.reshape(summed, shape)


def scatter_batch_thunk(x, index: tuple, dys, view=None, unique: bool | None = None):
    """``scatter_thunk`` for a batch of cotangents ``dys`` (a leading batch axis): row ``b`` of
    ``dys`` is scattered at ``index`` into row ``b`` of a ``(B, *x.shape)`` accumulator.

    ``index`` is a tuple indexing ``x``'s axes; ``view``, when given, takes the batched
    accumulator (the batch axis in front) to a writeable view that ``index`` applies to past
    the batch axis. With a full slice put in front, the index's advanced parts stay side by
    side, so the selected rows keep the batch axis first, as ``dys`` has it.
    """
    if isinstance(x, (list, tuple)):  # as in scatter_thunk
        array = np.asarray(x)
        return Thunk(lambda: batch_to_input(x, unthunk(scatter_batch_thunk(array, index, dys, view, unique))))
    dtype = tangent_dtype(x)
    if dtype is None:
        return NO
    dys = unthunk(dys)
    if isinstance(dys, AbstractZero):
        return dys
    if dtype.kind == "f" and np.iscomplexobj(dys):
        dys = np.real(dys)
    repeats = index_has_repeats(index) if unique is None else not unique
    return scatter_rows((np.shape(dys)[0], *np.shape(x)), dtype, (slice(None), *index), dys, view, repeats)


class ElementScatter(InplaceableThunk):
    """The cotangent of ``x[i]`` for one integer ``i`` and a number ``dy``: ``acc[i] += dy`` in
    place, and a dense array of zeros with ``dy`` at ``i`` as its value.

    ``scatter_thunk``'s result for a loop's ``x[i]``, made without the two closures and the
    thunk that the general one builds (per element of a loop they cost several times the
    scatter itself); the value's ``Thunk`` is made only if the value is asked for.

    >>> import numpy as np
    >>> t = scatter_thunk(np.zeros(3), 1, 2.5)
    >>> type(t).__name__, t.add_into(np.ones(3)), t.unthunk()
    ('ElementScatter', array([1. , 3.5, 1. ]), array([0. , 2.5, 0. ]))
    """

    # InplaceableThunk's own slots stay unused: `add_into` and `val` are defined here instead
    __slots__ = ("_x", "_index", "_dy", "_thunk")

    def add_into(self, acc):
        acc[self._index] += self._dy
        return acc

    @property
    def val(self) -> Thunk:
        thunk = self._thunk
        if thunk is None:
            thunk = self._thunk = Thunk(self._dense)
        return thunk

    def _dense(self) -> np.ndarray:
        x = self._x
        return self.add_into(np.zeros(x.shape, dtype=x.dtype))


def element_scatter(x: np.ndarray, index: int, dy) -> ElementScatter:
    """The ``ElementScatter`` of ``x[index]`` for a float or complex array ``x``, a Python int
    ``index`` and a real number ``dy`` (the caller has checked all three)."""
    t = _new(ElementScatter)
    t._x = x  # for the value's shape and dtype: the pullback that makes this holds x anyway
    t._index = index
    t._dy = dy
    t._thunk = None
    return t


_new = object.__new__


def add_value_into(acc, value):
    """``acc += value`` for an accumulator the caller owns, keeping ``acc``'s real dtype."""
    if type(acc) is np.ndarray and acc.dtype.kind == "f" and np.iscomplexobj(value):
        value = np.real(value)
    acc += value
    return acc


def inplaceable(value_fn, add_into=None) -> InplaceableThunk:
    """An ``InplaceableThunk`` whose value is ``value_fn()``; without a specialised ``add_into``
    the in-place form adds the value (an ordinary add, for layouts BLAS cannot take)."""
    val = Thunk(value_fn)

    def add_value(acc):
        return add_value_into(acc, val.unthunk())

    return InplaceableThunk(add_into or add_value, val)
