"""Rules for indexing NumPy arrays (``x[index]``) and for reading their attributes (``x.T``, ``x.shape``).

The cotangent of ``x[index]`` is an ``InplaceableThunk`` (seed 004, ChainRules' ``getindex``):
added into an accumulator it writes only the selected entries, ``acc[index] += dy`` for basic
indices and boolean masks, ``np.add.at(acc, index, dy)`` where integer arrays may repeat a
position; the dense array of zeros is built only if its value is asked for. So the gradient of
``for i in range(n): total += X[i]`` costs O(n) time and one accumulator. A batch of cotangents
(a leading batch axis) scatters the same way into a batch of accumulators.

``x.item(...)`` reads one entry as a Python number and ``x.tolist()`` all of them, as nested lists
of Python numbers: their cotangents are those of the entries read.
"""

from __future__ import annotations

import operator
from numbers import Integral

import numpy as np

from ...core import (
    AbstractZero,
    ActiveValue,
    NoRuleError,
    Tangent,
    carries_batch,
    frule,
    match_input_batch,
    rrule,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ..operators import seq_entries, zero_for
from ._arrays import (
    NO,
    ZERO,
    element_scatter,
    has_no_tangent,
    index_has_repeats,
    is_batched,
    scatter_rows,
    scatter_thunk,
    tangent_dtype,
    to_input,
)

_F64 = np.float64


@rrule.register(operator.getitem, np.ndarray, batched=True)
def rrule_getitem(x, index):
    if type(index) is not int:
        index = _plain_index(index)
    y = x[index]
    if (type(index) is int or (type(index) is tuple and _all_ints(index))) and x.dtype.kind in "fc":
        # a loop's x[i] or A[i, j]: a real number's cotangent is an ElementScatter, made without
        # scatter_thunk's checks (which the type tests here settle: a key of ints repeats no
        # position); one closure per call

        def getitem_element_pullback(dy):
            td = type(dy)
            if td is float or td is _F64:
                return NO, element_scatter(x, index, dy), NO
            return NO, _scattered(x, index, y, dy), NO

        return y, getitem_element_pullback

    def getitem_pullback(dy):
        return NO, _scattered(x, index, y, dy), NO

    return y, getitem_pullback


def _plain_index(index):
    """``index`` with an engine's value standing for integers or booleans in it (a dual of an index
    array, in a Jacobian or a Hessian in a structure's integer arrays) replaced by that value:
    indexing has no derivative in its index."""
    if isinstance(index, ActiveValue):
        plain = stood_for(index)
        return plain if np.asarray(plain).dtype.kind in "iub" else index
    if type(index) is tuple and any(isinstance(p, ActiveValue) for p in index):
        return tuple(_plain_index(p) for p in index)
    return index


def _all_ints(index: tuple) -> bool:
    """Whether every entry of a tuple key is a Python ``int`` (not a bool, a slice or an array)."""
    for p in index:
        if type(p) is not int:
            return False
    return True


def _scattered(x, index, y, dy):
    """The cotangent of ``x`` from the cotangent (or batch of cotangents) ``dy`` of ``x[index]``."""
    dy = unthunk(dy)
    if carries_batch(y, dy):
        return _batch_scatter_thunk(x, index, dy)
    return scatter_thunk(x, index, dy)


def _batch_scatter_thunk(x, index, dy):
    """The cotangents of ``x[index]`` for a batch of cotangents ``dy``: scattered row by row, as
    ``scatter_thunk`` does one cotangent (the index applies past the leading batch axis)."""
    dtype = tangent_dtype(x)
    if dtype is None:
        return NO
    if dtype.kind == "f" and np.iscomplexobj(dy):
        dy = np.real(dy)
    if _is_basic(index):
        parts = index if isinstance(index, tuple) else (index,)
        rows_index, rows, place = (slice(None), *parts), dy, None
    else:  # advanced indices may move axes: index with the batch axis moved last
        rows_index, rows = _without_ellipsis(index, x.ndim), np.moveaxis(dy, 0, -1)

        def place(acc):
            return np.moveaxis(acc, 0, -1)

    return scatter_rows((np.shape(dy)[0], *x.shape), dtype, rows_index, rows, place, index_has_repeats(index))


def _is_basic(index) -> bool:
    """Whether ``index`` is basic indexing only: ints, slices, ``None`` and ``Ellipsis``."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        p is None or p is Ellipsis or isinstance(p, slice) or (isinstance(p, Integral) and not isinstance(p, bool))
        for p in parts
    )


def _consumed(part) -> int:
    """How many axes of the indexed array an index entry uses."""
    if part is None:
        return 0
    if isinstance(part, (np.ndarray, list, tuple)):
        a = np.asarray(part)
        return a.ndim if a.dtype.kind == "b" else 1
    if isinstance(part, (bool, np.bool_)):
        return 0
    return 1


def _without_ellipsis(index, ndim: int) -> tuple:
    """``index`` as a tuple in which ``Ellipsis`` is spelled out as full slices."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        return parts
    k = next(i for i, p in enumerate(parts) if p is Ellipsis)
    used = sum(_consumed(p) for p in parts if p is not Ellipsis)
    return parts[:k] + (slice(None),) * (ndim - used) + parts[k + 1 :]


def batched_getitem(dx, index, ndim: int):
    """``dx[b][index]`` for every row ``b`` of a batched tangent, in one indexing operation.

    Basic indices take a leading full slice. Advanced indices may move their axes to the front
    (when separated by a slice), so there the batch axis is moved last, indexed past, and moved
    back."""
    if _is_basic(index):
        parts = index if isinstance(index, tuple) else (index,)
        return dx[(slice(None), *parts)]
    parts = _without_ellipsis(index, ndim)
    return np.moveaxis(np.moveaxis(dx, 0, -1)[parts], -1, 0)


@frule.register(operator.getitem, np.ndarray, batched=True)
def frule_getitem(tangents, x, index):
    index = _plain_index(index)
    dx = unthunk(tangents[1])
    y = x[index]
    if isinstance(dx, AbstractZero):
        return y, dx
    if is_batched(x, dx):
        return y, batched_getitem(dx, index, x.ndim)
    return y, dx[index]


# ----- NumPy numbers ------------------------------------------------------------------------------


def _number_entries(x, index):
    """``x[index]`` of a NumPy number (``s[None]``, ``s[()]``, ``s[...]``): the number itself, or an
    array of copies of it. An engine's number (a Hessian's dual) is reshaped to the shape NumPy
    gives the number it stands for, which its engine follows."""
    if not isinstance(x, ActiveValue):
        return x[index]
    like = stood_for(x)[index]
    if not isinstance(like, np.ndarray):
        return x
    return np.reshape(x, like.shape) if like.size else like  # (s[False] holds no copy of it)


@rrule.register(operator.getitem, np.number)
@rrule.register(operator.getitem, np.bool_)
@rrule.register(np.generic.__getitem__)
def rrule_number_getitem(x, index):
    y = _number_entries(x, index)

    def number_getitem_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero) or has_no_tangent(x):
            return NO, NO if has_no_tangent(x) else dy, NO
        return NO, to_input(x, np.sum(dy)), NO  # every entry of y is x

    return y, number_getitem_pullback


@frule.register(operator.getitem, np.number, batched=True)
@frule.register(operator.getitem, np.bool_, batched=True)
@frule.register(np.generic.__getitem__, batched=True)
def frule_number_getitem(tangents, x, index):
    dx = unthunk(tangents[1])
    y = _number_entries(x, index)
    if isinstance(dx, AbstractZero):
        return y, dx
    if is_batched(x, dx):
        return y, batched_getitem(dx, index, 0)
    # (a 0-d array's entries are laid out as the number's; np.reshape keeps a dual tangent's derivative)
    return y, np.reshape(dx, ())[index]


def _item_index(x, index: tuple) -> tuple:
    """The index ``x[...]`` of the entry ``x.item(*index)`` reads: none (a one-entry array), a
    flat position, or one position per axis (as separate arguments or one tuple)."""
    if not index:
        return (0,) * x.ndim
    if len(index) == 1 and not isinstance(index[0], tuple):
        return np.unravel_index(operator.index(index[0]) % max(x.size, 1), x.shape)
    return index[0] if len(index) == 1 else index


@rrule.register(np.ndarray.item, batched=True)  # (the getitem pullback it uses takes a batch)
def rrule_item(x, *index):
    """``x.item(*index)``: one entry as a Python number, with the cotangent of ``x[...]`` at that entry."""
    y = x.item(*index)  # first: NumPy's own error for a bad index or a no-argument call on many entries
    _, getitem_pullback = rrule_getitem(x, _item_index(x, index))
    rest = (NO,) * len(index)

    def item_pullback(dy):
        return (NO, getitem_pullback(dy)[1], *rest)

    return y, item_pullback


@frule.register(np.ndarray.item)
def frule_item(tangents, x, *index):
    y = x.item(*index)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, dx
    dy = dx[_item_index(x, index)]
    return y, dy.item() if isinstance(dy, np.ndarray | np.generic) and type(y) in (float, complex) else dy


def _entries(dy, shape: tuple, out: list) -> None:
    """Append to ``out`` the cotangents of the numbers of nested lists of ``shape`` (in C order)
    from the cotangent ``dy`` of those lists: a ``Tangent[list]``, a plain list, or a zero."""
    if not shape:
        out.append(unthunk(dy))
    elif isinstance(dy, AbstractZero):
        out.extend([ZERO] * int(np.prod(shape)))
    else:
        for d in seq_entries(dy, shape[0]):
            _entries(d, shape[1:], out)


def _tangent_lists(t, depth: int):
    """The nested lists (or rows of an array) ``t`` as ``Tangent[list]``s, ``depth`` levels down."""
    return t if depth == 0 else Tangent[list](*(_tangent_lists(e, depth - 1) for e in t))


@rrule.register(np.ndarray.tolist, batched=True)
def rrule_tolist(x):
    """``x.tolist()``: the entries as nested lists of Python numbers (a number for a 0-d array);
    the cotangent of ``x`` holds the entries' cotangents (each a batch of them, in a batch).

    >>> y, back = rrule(np.ndarray.tolist, np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> y, back(Tangent[list](Tangent[list](0.5, ZERO), [0.0, 2.0]))[1]
    ([[1.0, 2.0], [3.0, 4.0]], array([[0.5, 0. ],
           [0. , 2. ]]))
    """
    y = x.tolist()
    shape = np.shape(x)

    def tolist_pullback(dy):
        leaves: list = []
        _entries(dy, shape, leaves)
        given = [d for d in leaves if not isinstance(d, AbstractZero)]
        if not given or has_no_tangent(x):
            return NO, zero_for(x)  # (NoTangent for integers and booleans)
        lead = np.shape(given[0])  # (B,) for a batch of cotangents of each number
        filled = [np.zeros(lead) if isinstance(d, AbstractZero) else d for d in leaves]
        # an engine's numbers (a Hessian's duals) are stacked, which keeps what they carry
        dx = np.stack(filled) if any(isinstance(d, ActiveValue) for d in given) else np.array(filled)
        dx = np.reshape(np.moveaxis(dx, 0, -1), lead + shape)  # (entries[, B]) -> ([B,] *shape)
        return NO, match_input_batch(x, dx) if lead else to_input(x, dx)

    return y, tolist_pullback


@frule.register(np.ndarray.tolist, batched=True)
def frule_tolist(tangents, x):
    y = x.tolist()
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, dx
    if is_batched(x, dx):  # each number's tangent is its entry's batch
        return y, _tangent_lists(np.moveaxis(dx, 0, -1), np.ndim(x))
    return y, _tangent_lists(dx.tolist(), np.ndim(x))


# ----- attributes -------------------------------------------------------------------------------

_NONDIFFERENTIABLE_ATTRIBUTES = frozenset(
    {"shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides", "flags", "device"}
)


def _attribute_pullback(x, name):
    """The pullback of ``getattr(x, name)`` for a differentiable attribute, else ``None``; it takes
    a batch of cotangents too (a leading batch axis stays in front)."""
    if name == "T":
        return lambda dy: np.transpose(dy, (0, *range(np.ndim(dy) - 1, 0, -1)) if np.ndim(dy) > x.ndim else None)
    if name == "mT":
        return lambda dy: np.swapaxes(dy, -1, -2)
    if name == "real":
        # x.real is linear; its adjoint embeds the real cotangent (a complex x gets dy + 0j)
        return lambda dy: np.real(dy)
    if name == "imag":
        if np.iscomplexobj(x):
            return lambda dy: 1j * np.real(dy)
        return lambda dy: ZERO
    return None


def _no_attribute_rule(x, name: str) -> NoRuleError:
    return NoRuleError(
        getattr,
        (x, name),
        location=user_location(),
        reason=f"ndarray.{name} is computed in C; register a rule for getattr typed on numpy.ndarray",
    )


@rrule.register(getattr, np.ndarray, str, batched=True)
def rrule_getattr(x, name, *default):
    y = getattr(x, name, *default)
    if not default and name in _NONDIFFERENTIABLE_ATTRIBUTES:  # x.shape, the common case
        return y, _no_tangent_of_attribute
    pull = _attribute_pullback(x, name)
    if pull is None:
        if callable(y):  # a bound method (m = x.sum): its cotangent, from its call, is x's
            return y, _method_pullback(len(default))
        if name in _NONDIFFERENTIABLE_ATTRIBUTES:  # shapes and dtypes carry no derivative
            return y, _no_tangents(len(default))
        raise _no_attribute_rule(x, name)

    def getattr_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy, NO, *(NO for _ in default))
        dx = pull(dy)
        if isinstance(dx, AbstractZero):
            return (NO, dx, NO, *(NO for _ in default))
        dx = match_input_batch(x, dx) if carries_batch(y, dy) else to_input(x, dx)
        return (NO, dx, NO, *(NO for _ in default))

    return y, getattr_pullback


def _no_tangents(n_default: int):
    def getattr_pullback(dy):
        return (NO, NO, NO, *(NO for _ in range(n_default)))

    return getattr_pullback


_no_tangent_of_attribute = _no_tangents(0)


def _method_pullback(n_default: int):
    """The pullback of reading a bound method: the method's cotangent (what its calls gave their
    object, or a batch of them) is the object's."""

    def bound_method_pullback(dy):
        return (NO, unthunk(dy), NO, *(NO for _ in range(n_default)))

    return bound_method_pullback


@frule.register(getattr, np.ndarray, str, batched=True)
def frule_getattr(tangents, x, name, *default):
    y = getattr(x, name, *default)
    dx = unthunk(tangents[1])
    if _attribute_pullback(x, name) is None:
        if name in _NONDIFFERENTIABLE_ATTRIBUTES or callable(y):
            return y, NO
        raise _no_attribute_rule(x, name)
    if isinstance(dx, AbstractZero):
        return y, dx
    batched = is_batched(x, dx)
    if name == "T":
        axes = (0, *range(np.ndim(dx) - 1, 0, -1)) if batched else None
        return y, np.transpose(dx, axes)
    if name == "mT":
        return y, np.swapaxes(dx, -1, -2)
    if name == "real":
        return y, np.real(dx)
    if not np.iscomplexobj(x):  # imag of a real array is a constant zero
        return y, ZERO
    return y, np.imag(dx)
