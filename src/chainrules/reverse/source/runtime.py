"""What generated code calls besides the dispatcher: structural cotangents and small helpers.

Tuples, lists, dicts, dataclasses, namedtuples and plain objects are the language's own
structures; splitting their cotangents into items, unpacking them, and making closures are
handled here, with ``Tangent[P]`` cotangents.
"""

from __future__ import annotations

import math
import operator
import sys
import types
from numbers import Number

import numpy as np

from ...core.accumulation import accumulate
from ...core.active import ActiveValue, stood_for
from ...core.errors import DroppedDerivativeError, UnsupportedSyntaxError
from ...core.projection import ProjectTo, is_array_of_rows, match_input_batch, rows_cotangent, unbroadcast
from ...core.registry import rrule
from ...core.structures import item_tangents, structure_items
from ...core.tangents import AbstractTangent, AbstractZero, NoTangent, Tangent, ZeroTangent, _rebuild, unthunk
from ...core.views import is_view
from ...rules.operators import entry_cotangent
from ...rules.pyfunctional import Iterated, iterates_by_its_class

NO = NoTangent()
ZERO = ZeroTangent()
Cell = types.CellType


# ----- splitting structural cotangents -------------------------------------------------------


def split(dt, n: int) -> tuple:
    """The cotangents of the ``n`` items of a tuple/list from the cotangent of the whole.

    >>> split(Tangent[tuple](1.0, ZERO), 2)
    (1.0, ZeroTangent())
    >>> split(ZERO, 2)
    (ZeroTangent(), ZeroTangent())
    """
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return (dt,) * n
    items = dt.backing if isinstance(dt, Tangent) else dt
    if isinstance(items, dict):  # a namedtuple's tangent has named fields
        fields = dt.primal_type._fields
        return tuple(items.get(k, ZERO) for k in fields)
    items = tuple(items)
    if len(items) != n:
        raise ValueError(f"a cotangent of {len(items)} items for a structure of {n}")
    return items


def field(dt, key):
    """The cotangent of item or field ``key`` from the cotangent of a dict or object."""
    dt = unthunk(dt)
    if isinstance(dt, AbstractZero):
        return dt
    if isinstance(dt, Tangent):
        return dt[key]  # (by item: a field named like a method of Tangent, `items`, reads as the field)
    if isinstance(dt, dict):
        return dt.get(key, ZERO)
    return dt[key]


def structural_tangent(primal, items: tuple):
    """``Tangent[type(primal)]`` of a tuple/list/namedtuple primal from its items' cotangents."""
    if all(isinstance(d, AbstractZero) for d in items):
        return ZERO
    P = type(primal)
    if isinstance(primal, tuple) and hasattr(P, "_fields"):
        return Tangent[P](**dict(zip(P._fields, items)))
    return Tangent[P](*items)


def struct_cotangent(xs, keys: tuple, elements: tuple, cotangents: tuple, all_fields: bool = False):
    """The cotangent of the structure ``xs`` (a tuple, namedtuple, list, dict or dataclass instance)
    from the cotangents of the elements the function read, at ``keys`` (a position for a tuple or
    list, a key for a dict, a field name for a dataclass), whose values were ``elements``; the
    other elements' are zero. Each is matched to its element as an element read's pullback
    matches it (``rrule_getitem``, ``rrule_getattr``; a batch of cotangents row by row), and the
    tangent is the one their sum would be: ``Tangent[dict]`` of the non-zero entries,
    ``Tangent[tuple]``/``Tangent[list]`` with zeros elsewhere, ``Tangent[P]`` of the non-zero
    fields of a namedtuple or dataclass ``P`` (with ``all_fields``, a namedtuple's every field,
    zeros included, as unpacking it gives); ``ZeroTangent()`` when all are zero.

    >>> struct_cotangent({"W": 1.0, "b": 2.0}, ("b",), (2.0,), (0.5,))
    Tangent[dict]({'b': 0.5})
    >>> struct_cotangent((1.0, 2.0, 3.0), (0, 2), (1.0, 3.0), (0.5, ZERO))
    Tangent[tuple](0.5, ZeroTangent(), ZeroTangent())
    """
    matched = {}
    for key, y, dy in zip(keys, elements, cotangents):
        if type(dy) is not float or type(y) is not float:
            dy = unthunk(dy)
            # (an array of its element's dtype and shape, the common case, is what matching gives back)
            if not (type(dy) is np.ndarray and type(y) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape):
                dy = entry_cotangent(y, dy)
                if isinstance(dy, AbstractZero):
                    continue
        matched[key] = dy
    if not matched:
        return ZERO
    P = type(xs)
    if P is dict:
        return Tangent[dict](matched)
    if P is tuple or P is list:
        entries = [ZERO] * len(xs)
        for i, dy in matched.items():
            entries[i] = dy
        return _rebuild(Tangent[P], tuple(entries))  # the entries are valid already: nothing to check
    if isinstance(xs, tuple):  # a namedtuple, by field name
        if all_fields:
            return Tangent[P](**{field: matched.get(i, ZERO) for i, field in enumerate(P._fields)})
        return Tangent[P](**{P._fields[i]: dy for i, dy in matched.items()})
    return _rebuild(Tangent[P], matched)  # a dataclass instance's fields


def is_input_structure(x) -> bool:
    """A tuple, list, dict or dataclass instance: a structure whose cotangent ``input_cotangent`` lays out."""
    return _item_kind(type(x)) == "structure"


def input_cotangent(x, dx):
    """The cotangent of the structure ``x`` passed in, laid out as the tape lays it out: a
    ``Tangent`` with every item of ``x``, in ``x``'s order, where an integer number, a bool, a
    string or ``None`` has ``NoTangent()`` (an integer in a structure is a setting:
    docs/tangents.md), and an item nothing flowed back to has ``ZeroTangent()`` where it could
    carry a derivative and ``NoTangent()`` elsewhere; ``NoTangent()`` or ``ZeroTangent()`` when
    every item has. A dataclass's items are its fields: an attribute its ``__post_init__`` set is
    a constant of the object (as the tape, ``to_vec`` and finite differences take it), whose
    cotangent goes nowhere. A cotangent of another form (a rule's array for a tuple of numbers)
    is left as it is.

    >>> input_cotangent({"b": 2.0, "n": 3, "a": 1.0}, Tangent[dict]({"a": 0.5}))
    Tangent[dict]({'b': ZeroTangent(), 'n': NoTangent(), 'a': 0.5})
    >>> input_cotangent((3, "s"), ZERO), input_cotangent((), ZERO), input_cotangent((1.0,), ZERO)
    (NoTangent(), NoTangent(), ZeroTangent())
    """
    dx = unthunk(dx)
    if not isinstance(dx, (Tangent, AbstractZero)):
        return dx
    if _complete(x, dx):
        return dx
    items = structure_items(x)
    parts = item_tangents(dx, x)
    keys = range(len(items)) if isinstance(items, list) else items
    laid_out = [_item_cotangent(items[k], parts[k]) for k in keys]
    if all(d is NO for d in laid_out):
        return NO
    if all(isinstance(d, AbstractZero) for d in laid_out):
        return ZERO
    P = type(x)
    if isinstance(x, dict):  # (a dict subclass's too, as the tape's)
        return _rebuild(Tangent[dict], dict(zip(keys, laid_out)))
    if isinstance(items, list):
        return _rebuild(Tangent[P], tuple(laid_out))
    return _rebuild(Tangent[P], dict(zip(keys, laid_out)))


def _complete(x, dx) -> bool:
    """Whether ``dx`` is already laid out as ``input_cotangent`` would lay it out, in the common
    case: a tuple's, list's or dict's cotangent with a float or an array for each of its floats
    and arrays, in its order (every item read)."""
    if type(x) is dict:
        backing = dx.backing if type(dx) is Tangent[dict] else None
        if backing is None or len(backing) != len(x) or list(backing) != list(x):
            return False
        pairs = zip(x.values(), backing.values())
    elif type(x) is tuple or type(x) is list:
        backing = dx.backing if type(dx) is Tangent[type(x)] else None
        if backing is None or len(backing) != len(x):
            return False
        pairs = zip(x, backing)
    else:
        return False
    for v, d in pairs:
        tv = type(v)
        if (tv is not float and tv is not np.ndarray) or type(d) is not tv:
            return False
    return True


def _item_cotangent(x, dx):
    """The cotangent of ``x``, an item of a structure passed in (see ``input_cotangent``)."""
    kind = _item_kind(type(x))
    if kind == "setting":
        return NO
    if kind == "structure":
        return input_cotangent(x, dx)
    if not isinstance(dx, AbstractZero):
        return dx
    number_kind = getattr(getattr(x, "dtype", None), "kind", None)  # (an array, a NumPy number, an engine's value)
    return ZERO if isinstance(x, (float, complex)) or number_kind in ("f", "c") else NO


#: a type -> what its values are as items of a structure passed in (see `_item_kind`)
_ITEM_KINDS: dict[type, str] = {float: "value", np.ndarray: "value"}


def _item_kind(t: type) -> str:
    """``"structure"`` (a tuple, list, dict or dataclass), ``"setting"`` (an integer number, a bool,
    a string, ``None``: no derivative) or ``"value"``, for values of the type ``t``."""
    kind = _ITEM_KINDS.get(t)
    if kind is None:
        if issubclass(t, (tuple, list, dict)) or hasattr(t, "__dataclass_fields__"):
            kind = "structure"
        elif issubclass(t, (int, np.integer, np.bool_, str, bytes, type(None))):
            kind = "setting"
        else:
            kind = "value"
        _ITEM_KINDS[t] = kind
    return kind


# ----- unpacking --------------------------------------------------------------------------------


def unpack(value, n: int, star: int | None):
    """``a, *b, c = value`` with a pullback: ``(items, pullback)``; ``pullback(d_items)`` gives
    the cotangent of ``value``."""
    opened = Opened(value) if iterates_by_its_class(value) else None
    items = list(value if opened is None else opened)
    if star is None:
        if len(items) != n:
            raise ValueError(f"cannot unpack {len(items)} values into {n} names")
        out = tuple(items)
        sizes = None
    else:
        after = n - star - 1
        if len(items) < n - 1:
            raise ValueError(f"cannot unpack {len(items)} values into {n - 1} or more names")
        middle = items[star : len(items) - after]
        out = (*items[:star], middle, *items[len(items) - after :])
        sizes = len(middle)
    if isinstance(value, (tuple, list)):
        template = value
    elif is_array_of_rows(value):
        template = None
    else:
        template = items  # an iterator or other iterable: a list of cotangents

    def unpack_pullback(d_items):
        flat = list(d_items)
        if star is not None:
            middle_d = flat[star]
            middle_d = split(middle_d, sizes) if not isinstance(middle_d, list) else tuple(middle_d)
            flat = flat[:star] + list(middle_d) + flat[star + 1 :]
        if template is None:
            return _stack_rows(value, flat)
        if opened is not None:
            return opened.cotangent(flat)
        if template is items and not isinstance(value, (tuple, list)):
            return flat
        return structural_tangent(template, tuple(flat))

    return out, unpack_pullback


def _stack_rows(array, rows: list):
    if all(isinstance(unthunk(r), AbstractZero) for r in rows):
        return ZERO
    if not isinstance(array, ActiveValue) and any(isinstance(unthunk(r), ActiveValue) for r in rows):
        # a plain array's rows with cotangents an engine follows (duals, in a Hessian): scattered
        # out of place, since a plain array cannot hold them
        out = ZERO
        for i, r in enumerate(rows):
            if not isinstance(unthunk(r), AbstractZero):
                out = scattered_sum(out, array, i, r)
        return out
    return rows_cotangent(array, rows)


# ----- displays with * and ** ------------------------------------------------------------------


def _sequence_tangent(template, chunk: tuple):
    if isinstance(template, (tuple, list)):
        return structural_tangent(template, chunk)
    if is_array_of_rows(template):
        return _stack_rows(template, list(chunk))
    return list(chunk)


def pack(kind: str, parts: tuple, starred: tuple):
    """A tuple or list display with ``*`` items: ``(value, pullback)``; ``pullback(dy)`` gives
    one cotangent per part (a starred part gets one for the whole iterable)."""
    items, layout = [], []
    for part, star in zip(parts, starred):
        if star:
            seq = list(part)
            items.extend(seq)
            layout.append((len(seq), part if isinstance(part, (tuple, list)) or is_array_of_rows(part) else seq))
        else:
            items.append(part)
            layout.append(None)
    value = tuple(items) if kind == "tuple" else list(items)

    def pack_pullback(dy):
        d = split(dy, len(items))
        out, i = [], 0
        for entry in layout:
            if entry is None:
                out.append(d[i])
                i += 1
            else:
                size, template = entry
                out.append(_sequence_tangent(template, d[i : i + size]))
                i += size
        return tuple(out)

    return value, pack_pullback


def pack_dict(keys: tuple, values: tuple):
    """A dict display with ``**`` items (key None): ``(value, pullback)``, one cotangent per item;
    a key that a later item overrides gets none."""
    value: dict = {}
    source: dict = {}
    for i, (k, v) in enumerate(zip(keys, values)):
        for key in v if k is None else (k,):
            source[key] = i
        if k is None:
            value.update(v)
        else:
            value[k] = v

    def pack_dict_pullback(dy):
        out = []
        for i, (k, v) in enumerate(zip(keys, values)):
            if k is not None:
                out.append(field(dy, k) if source[k] == i else ZERO)
            else:
                mine = {key: field(dy, key) for key in v if source[key] == i}
                mine = {key: d for key, d in mine.items() if not isinstance(d, AbstractZero)}
                out.append(Tangent[dict](mine) if mine else ZERO)
        return tuple(out)

    return value, pack_dict_pullback


# ----- closures --------------------------------------------------------------------------------


def make_closure(code, globals_, name, defaults, kwdefaults, cells):
    """A nested function of the differentiated function, built from its original code object."""
    fn = types.FunctionType(code, globals_, name, defaults or None, tuple(cells) or None)
    if kwdefaults:
        fn.__kwdefaults__ = dict(kwdefaults)
    return fn


_FUNCTION_TANGENT = Tangent[types.FunctionType]  # looked up once: every closure's pullback builds one


def closure_tangent(fn, names: tuple, values: tuple, tangents: tuple):
    """The tangent of the closure ``fn``: one field per captured variable (zero fields left out).

    A captured variable that holds ``fn`` itself (a recursive closure) contributes a tangent of
    ``fn``: it is added in, not nested as a field. A thunk stays a thunk: it is not known to be
    zero, and computing it only to find out would cost what the caller may never ask for (the
    cotangent of a captured constant such as a batch of inputs).
    """
    fields, own = {}, ZERO
    for name, value, tangent in zip(names, values, tangents):
        if isinstance(tangent, AbstractZero):
            continue
        if value is fn:
            tangent = unthunk(tangent)
            if isinstance(tangent, AbstractZero):
                continue
            own = tangent if isinstance(own, AbstractZero) else own + tangent
        else:
            fields[name] = tangent
    # (the fields are named by the function's own variables: nothing for the constructor to check)
    result = _rebuild(_FUNCTION_TANGENT, fields) if fields else ZERO
    return result if isinstance(own, AbstractZero) else own + result


# ----- seeds and checks ------------------------------------------------------------------------


def project_real(dy):
    """A seed for a real scalar output: unthunked, real, a Python number (zeros pass)."""
    dy = unthunk(dy)
    if type(dy) is float or isinstance(dy, AbstractZero):
        return dy
    if isinstance(dy, Number) or (isinstance(dy, np.ndarray) and dy.ndim == 0) or isinstance(dy, np.generic):
        return ProjectTo(1.0)(dy)
    return dy


_zero_dim_projectors: dict[type, ProjectTo] = {}


def project_0d(d, scalar_type: type):
    """The cotangent of a 0-d array argument of dtype ``scalar_type``: a 0-d array (a rule may
    have given a NumPy scalar or a float), zeros and thunks as they are.

    >>> project_0d(np.float64(2.0), np.float32)
    array(2., dtype=float32)
    """
    if type(d) is np.ndarray and d.ndim == 0 and d.dtype.type is scalar_type:
        return d
    projector = _zero_dim_projectors.get(scalar_type)
    if projector is None:
        projector = _zero_dim_projectors[scalar_type] = ProjectTo(np.zeros((), dtype=scalar_type))
    if isinstance(d, AbstractZero):
        return d
    d = unthunk(d)
    # a reverse-mode Jacobian pulls back a batch of cotangents at once: one 0-d cotangent per row
    return projector.batch(d) if np.ndim(d) else projector(d)


def integer_cotangent(d):
    """The cotangent of an integer argument: ``NoTangent`` when it is zero (the integer only
    counted), else the float derivative."""
    d = unthunk(d)
    return NO if isinstance(d, AbstractZero) else d


_MUTABLE = (np.ndarray, list, dict, set, bytearray)


# ----- containers the function writes into ------------------------------------------------------


def _owned_array(d, like: np.ndarray, owned: bool) -> np.ndarray:
    """``d`` as an array the engine may write into (a copy unless it is owned already)."""
    d = unthunk(d)
    if owned and isinstance(d, np.ndarray) and d.flags.writeable:
        return d
    if isinstance(d, ActiveValue):  # another engine's cotangent (a Hessian): that engine's buffer takes writes
        out = d.buffer_holding(np.zeros(np.shape(d), dtype=d.dtype))
        if out is None:
            out = np.zeros_like(d)
        out[...] = d
        return out
    dtype = like.dtype if like.dtype.kind in "fc" else np.float64
    return np.array(d, dtype=np.result_type(dtype, getattr(d, "dtype", dtype)), copy=True)


def _owned_items(d, n: int, owned: bool) -> list:
    """The cotangent of a list as a Python list of its elements' cotangents, owned by the engine."""
    d = unthunk(d)
    if owned and type(d) is list:
        return d
    if isinstance(d, Tangent):
        d = d.backing
    items = list(d)
    if len(items) != n:
        raise ValueError(f"a cotangent of {len(items)} elements for a list of {n}")
    return items


def _discrete_setitem_pullback(obj: np.ndarray, index):
    """The pullback of a write into an integer or boolean array, which truncates the value: none
    of its derivative passes, and the elements written over pass none back either (an integer
    input's copy, whose cotangent is a float array, ``b = x.copy(); b[0] = 5``)."""

    def discrete_setitem_pullback(dobj, owned):
        if isinstance(unthunk(dobj), AbstractZero):
            return ZERO, dobj, owned
        dobj = _owned_array(dobj, obj, owned)
        batched = np.ndim(dobj) == np.ndim(obj) + 1  # a batch of cotangents: the element at [:, index]
        dobj[((slice(None), *index) if type(index) is tuple else (slice(None), index)) if batched else index] = 0
        return ZERO, dobj, True

    return discrete_setitem_pullback


def plain_setitem(obj, index, value):
    """``obj[index] = value`` where the write passes no derivative (the container does not reach
    the output; ``setitem`` writes through this too), returning the container written: ``obj``,
    or, where an outer differentiation's value meets an array that differentiation cannot write
    into, an array of its own in ``obj``'s place. The function made ``obj`` and nothing else refers to it (the
    ``effects`` pass refuses a write after it was shared), so binding the other array in its
    place changes nothing the code can see:

    - a plain array that such a value is written into becomes that engine's writable array
      holding the same numbers (``ActiveValue.buffer_holding``), so the write does not convert it;
    - an engine's array that the engine does not own (forward mode owns copies and arrays made
      like its values, not ``y = x * 2``) is copied, and its copy, which it owns, takes the write.
    """
    if type(obj) is np.ndarray and isinstance(value, ActiveValue):
        buffer = value.buffer_holding(obj)
        if buffer is not None:
            obj = buffer
    elif isinstance(obj, ActiveValue):
        try:
            obj[index] = value
        except DroppedDerivativeError:
            obj = obj.copy()
        else:
            return obj
    obj[index] = value
    return obj


def _nested_shape(value) -> tuple:
    """``np.shape(value)``, reading a (nested) list or tuple by its lengths: NumPy would convert its
    items, which an engine's values refuse."""
    if isinstance(value, (list, tuple)):
        return (len(value), *(_nested_shape(value[0]) if value else ()))
    return np.shape(value)


def _overwritten(shape: tuple, index):
    """Which elements of ``obj[index]`` (a mask of that selection's shape) a later element of the
    same write ``obj[index] = value`` wrote over, for an ``obj`` of ``shape``; ``None`` where none was.

    Only an integer array in the index can repeat a position (slices, integers and boolean masks
    select each once), so an index without one of two or more elements is not looked at further.
    NumPy keeps one write to a repeated position, the last in practice, but does not document which
    ("for advanced assignments, there is in general no guarantee for the iteration order", Indexing
    on ndarrays, Detailed notes): the same write of each element's number into a scratch array, read
    back, says which stayed."""
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, (list, np.ndarray)):
            part = np.asarray(part)
            if part.size > 1 and part.dtype.kind in "iu":
                break
    else:
        return None
    # the scratch arrays are touched only at the selected positions, but each touched page costs: the
    # selection's shape comes from one of bytes, and the numbers take the narrowest type that counts them
    selected = np.empty(shape, dtype=np.bool_)[index].shape
    count = math.prod(selected)
    dtype = np.int32 if count < 2**31 else np.intp
    slots = np.empty(shape, dtype=dtype)
    numbers = np.arange(count, dtype=dtype).reshape(selected)
    slots[index] = numbers
    overwritten = slots[index] != numbers
    return overwritten if np.count_nonzero(overwritten) else None


def setitem(obj, index, value):
    """``obj[index] = value`` on a list, dict or array the function made: ``(obj, pullback)``, with
    ``pullback(d_obj, owned) -> (d_value, d_obj, owned)`` taking the element's cotangent out.

    A plain array that an outer differentiation's value is written into (a dual, in a Hessian)
    becomes that engine's writable array holding the same numbers (``ActiveValue.buffer_holding``),
    returned to be bound in ``obj``'s place: the function made it and nothing else refers to it
    (a write after it was shared is refused), so the value keeps its derivative (see ``plain_setitem``)."""
    if type(index) is slice and isinstance(obj, list):
        return _list_slice_setitem(obj, index, value)
    obj = plain_setitem(obj, index, value)
    if isinstance(obj, (np.ndarray, ActiveValue)) and getattr(obj.dtype, "kind", "f") in "biu":
        # an integer or boolean array (or an engine's array holding one) truncates what it stores:
        # no derivative passes
        return obj, _discrete_setitem_pullback(obj, index)
    # a forward-mode dual array that took the write (a copy, in a Hessian) is an array here too
    if isinstance(obj, np.ndarray) or (isinstance(obj, ActiveValue) and isinstance(stood_for(obj), np.ndarray)):
        value_shape = _nested_shape(value)
        value_is_number = isinstance(value, Number)
        # a repeated position holds one element's write: the others' cotangents are zero
        overwritten = _overwritten(obj.shape, index)

        def array_setitem_pullback(dobj, owned):
            if isinstance(unthunk(dobj), AbstractZero):
                return ZERO, dobj, owned
            dobj = _owned_array(dobj, obj, owned)
            if np.ndim(dobj) == np.ndim(obj) + 1:  # a batch of cotangents: the element at [:, index]
                real_number = value_is_number and not np.iscomplexobj(value)
                return _batch_setitem_pullback(dobj, index, value_shape, real_number, overwritten)
            piece = dobj[index]
            # a slice is a view, which the write of zeros below would clear (`b[...]` of a 0-d
            # array too, and of an engine's 0-d array in a Hessian)
            dvalue = piece.copy() if isinstance(piece, (np.ndarray, ActiveValue)) or np.ndim(piece) else piece
            if overwritten is not None:
                dvalue[overwritten] = 0
            dobj[index] = 0
            if np.shape(dvalue) != value_shape:  # the value was broadcast into the slice
                dvalue = unbroadcast(np.zeros(value_shape), dvalue)
            if value_is_number and not np.iscomplexobj(value):
                # a real number's cotangent is a float, a dual one (a Hessian) stays a dual
                dvalue = np.real(dvalue) if isinstance(dvalue, ActiveValue) else float(np.real(dvalue))
            return dvalue, dobj, True

        return obj, array_setitem_pullback
    if isinstance(obj, list):
        try:
            index = operator.index(index)  # (an np.int64 from np.argmax, say)
        except TypeError:
            raise TypeError(
                f"a list is indexed by integers or slices, not {type(index).__name__} (writing into a list under "
                "differentiation)"
            ) from None
        n = len(obj)

        def list_setitem_pullback(dobj, owned):
            if isinstance(unthunk(dobj), AbstractZero):
                return ZERO, dobj, owned
            items = _owned_items(dobj, n, owned)
            dvalue, items[index] = items[index], ZERO
            return dvalue, items, True

        return obj, list_setitem_pullback
    if isinstance(obj, dict):

        def dict_setitem_pullback(dobj, owned):
            dobj = unthunk(dobj)
            if isinstance(dobj, AbstractZero):
                return ZERO, dobj, owned
            entries = (
                dobj if owned and type(dobj) is dict else dict(dobj.backing if isinstance(dobj, Tangent) else dobj)
            )
            return entries.pop(index, ZERO), entries, True

        return obj, dict_setitem_pullback
    raise TypeError(f"writing an element of a {type(obj).__name__} is not supported under differentiation")


def _list_slice_setitem(obj: list, index: slice, value):
    """``obj[index] = value`` for a list and a slice (which may change the list's length):
    ``(obj, pullback)``. The value's items take the cotangents of the positions they came to, the
    items written over get none, and the others keep theirs, at their old positions."""
    replaced = range(*index.indices(len(obj)))
    given = value if isinstance(value, (list, tuple)) else list(value)  # (any iterable: Python takes its items)
    obj[index] = given  # (Python's own checks: an extended slice takes as many items as it selects)
    before = len(obj) - len(given) + len(replaced)
    if index.step not in (None, 1):  # an extended slice: the same positions, one for one
        written = list(replaced)
    else:
        written = list(range(replaced.start, replaced.start + len(given)))
    n = len(obj)
    as_value = (lambda items: Tangent[tuple](*items)) if type(given) is tuple else list

    def list_slice_setitem_pullback(dobj, owned):
        if isinstance(unthunk(dobj), AbstractZero):
            return ZERO, dobj, owned
        items = _owned_items(dobj, n, owned)
        dvalue = as_value([items[i] for i in written])
        if index.step not in (None, 1):
            for i in written:
                items[i] = ZERO
            return dvalue, items, True
        start = replaced.start  # the list before the write: the head, zeros for the items replaced, the tail
        old = items[:start] + [ZERO] * len(replaced) + items[start + len(given) :]
        if len(old) != before:
            raise AssertionError(f"list slice write: {len(old)} cotangents for a list of {before}")
        return dvalue, old, True

    return obj, list_slice_setitem_pullback


def _batch_setitem_pullback(dobj: np.ndarray, index, value_shape: tuple, real_number: bool, overwritten):
    """``array_setitem_pullback`` for a batch of cotangents of the array (a leading batch axis):
    the written element's cotangents are taken out of every row (zero where ``overwritten``, see
    ``_overwritten``), and summed over the axes the value was broadcast along; a real number's are real."""
    at = (slice(None), *index) if type(index) is tuple else (slice(None), index)
    dvalue = np.array(dobj[at], copy=True)  # a slice is a view, which the write of zeros would clear
    if overwritten is not None:
        dvalue[:, overwritten] = 0
    dobj[at] = 0
    if dvalue.shape[1:] != value_shape:  # the value was broadcast into the slice
        dvalue = match_input_batch(np.zeros(value_shape), dvalue)
    return (np.real(dvalue) if real_number else dvalue), dobj, True


def append(lst, value):
    """``lst.append(value)`` on a list the function made."""
    if type(lst) is not list:
        raise _not_a_list(lst, "append")
    lst.append(value)


def _not_a_list(obj, method: str) -> UnsupportedSyntaxError:
    """``obj.append(v)`` (or ``extend``) on an object that is not a list (a ``collections.deque``,
    an object of the user's): the engine follows a list's, not another object's, which the entry
    points then differentiate on the tape."""
    from .codegen import user_position

    frame = sys._getframe(2)  # the generated code that called the helper
    filename, line = user_position(frame.f_code.co_filename, frame.f_lineno) or (frame.f_code.co_filename, 0)
    return UnsupportedSyntaxError(
        f"`.{method}(...)` on a {type(obj).__name__}: the source engine follows the {method}s of a list the "
        f"function made, not another object's; build a list, or differentiate on the tape (engine='tape'), "
        "which follows what the object's method does",
        filename,
        line,
        1,
    )


def append_pullback(dlst, owned):
    """The last element's cotangent comes out of the list's."""
    dlst = unthunk(dlst)
    if isinstance(dlst, AbstractZero):
        return ZERO, dlst, owned
    items = dlst if owned and type(dlst) is list else list(dlst.backing if isinstance(dlst, Tangent) else dlst)
    return items.pop(), items, True


def extend(lst, values):
    """``lst.extend(values)`` on a list the function made, with its pullback."""
    if type(lst) is not list:
        raise _not_a_list(lst, "extend")
    added = list(values)
    lst.extend(added)
    template = values if isinstance(values, (tuple, list, np.ndarray)) else added
    k = len(added)

    def extend_pullback(dlst, owned):
        dlst = unthunk(dlst)
        if isinstance(dlst, AbstractZero):
            return ZERO, dlst, owned
        items = dlst if owned and type(dlst) is list else list(dlst.backing if isinstance(dlst, Tangent) else dlst)
        chunk = tuple(items[len(items) - k :]) if k else ()
        del items[len(items) - k :]
        return _sequence_tangent(template, chunk), items, True

    return extend_pullback


def _user_file() -> str:
    """The user's source file of the generated function that called a helper (two frames up)."""
    from .codegen import LINE_MAP

    generated = sys._getframe(2).f_code.co_filename
    return LINE_MAP.get(generated, (generated,))[0]


def suppressed_inside(filename: str, line: int):
    """An exception stopped the ``with`` body at ``line`` half way, and its context manager
    suppressed it: which of its statements ran is not known, so the reverse pass cannot follow
    it. (The API then differentiates the function on the tape, which follows what ran.)"""
    raise UnsupportedSyntaxError(
        "an exception stopped the `with` block half way, and its context manager suppressed it: the source "
        'engine cannot tell which of its statements ran; use engine="tape", or catch the exception with `try`',
        filename,
        line,
        1,
    )


def refuse_write(name: str, line: int, col: int):
    filename = _user_file()
    raise UnsupportedSyntaxError(
        f"writing into `{name}` after it was passed to a call, stored or returned, or into a part of it that a read "
        f"viewed (`row = {name}[i]`), is not supported: other references would see the write, and pullbacks kept "
        f"its old values; write into a copy (`{name} = {name}.copy()`) instead",
        filename,
        line,
        col,
    )


def _is_metadata(value, name: str) -> bool:
    if name == "dtype":
        return isinstance(value, np.dtype)
    if name in ("shape", "strides"):
        return type(value) is tuple and all(isinstance(n, (int, np.integer)) for n in value)
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_metadata(value, owner: str, name: str, line: int, col: int):
    """``owner.name`` (``.shape``, ``.dtype``, ...) of a value whose type the analysis did not know
    was taken for an array's, with no derivative; refuse it when it is not (an object of the
    user's with a number of that name), rather than lose that number's derivative."""
    if not _is_metadata(value, name):
        raise UnsupportedSyntaxError(
            f"`{owner}.{name}` is a {type(value).__name__} here, not an array's {name}: the source engine "
            f"reads `.{name}` of a value whose type it does not know as an array's, with no derivative. "
            f"Give the attribute another name, or pass the object in as an argument (its class is then known)",
            _user_file(),
            line,
            col,
        )


def check_new(value, arguments: tuple, name: str, line: int, col: int):
    """A container the function writes into must not be (or share memory with) an argument, nor
    with what the call that made it was given (``v = out.reshape(2, 2)``, ``np.asarray(out)``: a
    view of another container, whose writes the engine would not see in it)."""
    for arg in arguments:
        shared = value is arg or is_view(value, arg) or _holds(arg, value)
        if shared:
            raise UnsupportedSyntaxError(
                f"`{name}` is written in place later, but here it is an argument or shares its memory (or that of "
                f"an array the call was given: a view); write into a copy (`.copy()`) instead",
                _user_file(),
                line,
                col,
            )


def _holds(container, value, depth: int = 0) -> bool:
    """Whether ``value`` is an item of the list, tuple or dict ``container``, or of one it holds
    (``operator.getitem(m, 0)``, ``d.get(k)``, ``max(a, b, key=len)`` return such an item)."""
    if isinstance(container, dict):
        items = container.values()
    elif isinstance(container, (list, tuple)) and depth < 8:
        items = container
    else:
        return False
    return any(item is value or _holds(item, value, depth + 1) for item in items)


def copy_if_view(element):
    """``element`` itself, or a copy when it is an array that views another one; an outer
    differentiation's array (a tracked array under a tape over this engine) is copied too: its
    engine may follow a write into the array it was read from into it (the tape rebinds a read of
    ``out[:]`` to the values written after it), where the pullbacks need the values read."""
    if isinstance(element, ActiveValue):
        return element.copy() if np.ndim(element) > 0 else element
    return element.copy() if isinstance(element, np.ndarray) and element.base is not None else element


def iterates_views(container) -> bool:
    """Whether iterating over ``container`` gives views of it (the rows of a 2-d array)."""
    return isinstance(container, np.ndarray) and container.ndim > 1


def add_at(acc, owned: bool, like: np.ndarray, index, d):
    """``acc[index] += d`` into an accumulator for the cotangent of the array ``like`` (the
    partial of ``like[index]``, ``index`` an integer or a tuple of them); a zero or borrowed
    accumulator becomes an owned array first. A batch of cotangents (a leading batch axis) is added
    at ``[:, index]``: the index drops as many of ``like``'s axes as it has integers, so ``d`` has
    one axis more than ``like[index]`` only then."""
    d = unthunk(d)
    if isinstance(d, AbstractZero):
        return acc, owned
    acc = unthunk(acc)
    if isinstance(d, ActiveValue) or isinstance(acc, ActiveValue):
        return scattered_sum(acc, like, index, d), False
    dropped = len(index) if type(index) is tuple else 1
    batch = getattr(d, "ndim", 0) == like.ndim - dropped + 1
    if isinstance(acc, AbstractZero):
        acc = np.zeros(d.shape[:1] + like.shape if batch else like.shape, dtype=like.dtype)
    elif not (owned and isinstance(acc, np.ndarray) and acc.flags.writeable):
        acc = np.array(acc, dtype=like.dtype, copy=True)
    if batch:
        acc[(slice(None), *index) if dropped > 1 else (slice(None), index)] += d
    else:
        acc[index] += d
    return acc, True


def scattered_sum(acc, like: np.ndarray, index, d):
    """``acc`` plus ``d`` scattered at ``like[index]``, out of place: for a cotangent that an engine
    follows (a dual number in a Hessian, an outer tape's value), which a plain array cannot take
    in place; getitem's rule scatters it through operations that engine sees."""
    _, dlike, _ = rrule(operator.getitem, like, index)[1](d)
    return accumulate(acc, False, dlike)[0]


# ----- loops over differentiated iterables ---------------------------------------------------------


class Opened:
    """The values of an object whose class iterates by its own code (``iterates_by_its_class``),
    as ``iter``'s rule gives them (the class's ``__iter__`` differentiated), which a loop or an
    unpacking goes over instead of running that code itself; ``cotangent`` takes theirs back
    through the rule's pullback to the object."""

    __slots__ = ("values", "back")

    def __init__(self, obj):
        iterated, self.back = rrule(iter, obj)
        self.values = iterated.remaining()

    def __iter__(self):
        return iter(self.values)

    def cotangent(self, ds: list):
        """The object's cotangent from those of its first ``len(ds)`` values (a loop may stop early)."""
        return self.back(list(ds) + [ZERO] * (len(self.values) - len(ds)))[1]


def loop_iterable(iterable) -> tuple:
    """What ``for v in iterable`` goes over, and where it starts: the values of an object of the
    user's class (``Opened``), or ``iterable`` itself, at the position an iterator the rules made
    (``map`` and friends) has reached."""
    if iterates_by_its_class(iterable):
        return Opened(iterable), 0
    return iterable, (iterable.position if isinstance(iterable, Iterated) else 0)


class ItemCotangents:
    """Collects the cotangents of a loop's variable, one per iteration (visited backwards), and
    gives the cotangent of the iterable it came from."""

    __slots__ = ("iterable", "count", "start", "items", "dense")

    def __init__(self, iterable, count: int, start: int = 0):
        self.iterable, self.count, self.start = iterable, count, start
        self.items: list | None = None
        self.dense: np.ndarray | None = None

    def put(self, i: int, d) -> None:
        d = unthunk(d)
        if isinstance(d, AbstractZero):
            return
        if isinstance(self.iterable, np.ndarray):
            if isinstance(d, ActiveValue) or isinstance(self.dense, ActiveValue):
                self.dense = scattered_sum(ZERO if self.dense is None else self.dense, self.iterable, i, d)
                return
            # a row drops the array's first axis: a batch of cotangents (a leading batch axis) has
            # as many axes as the array, and goes to [:, i]
            batch = getattr(d, "ndim", 0) == self.iterable.ndim
            if self.dense is None:
                kind = self.iterable.dtype
                shape = d.shape[:1] + self.iterable.shape if batch else self.iterable.shape
                self.dense = np.zeros(shape, dtype=kind if kind.kind in "fc" else np.float64)
            if batch:
                self.dense[:, i] += d
            else:
                self.dense[i] += d
            return
        if self.items is None:
            self.items = [ZERO] * self.count
        self.items[i] = d

    def result(self):
        if isinstance(self.iterable, np.ndarray):
            return ZERO if self.dense is None else self.dense
        if self.items is None:
            return ZERO
        if isinstance(self.iterable, Opened):
            return self.iterable.cotangent(self.items)
        if isinstance(self.iterable, (tuple, list)):
            full = self.items + [ZERO] * (len(self.iterable) - self.count)
            return structural_tangent(self.iterable, tuple(full))
        if isinstance(self.iterable, ActiveValue) and np.ndim(self.iterable) >= 1:
            # an engine's stand-in for an array (a dual array, under forward over reverse)
            return rows_cotangent(self.iterable, [ZERO] * self.start + self.items)
        total = len(self.iterable.items) if isinstance(self.iterable, Iterated) else self.start + self.count
        return [ZERO] * self.start + self.items + [ZERO] * (total - self.start - self.count)


def item_cotangents(iterable, count: int, start: int = 0) -> ItemCotangents:
    return ItemCotangents(iterable, count, start)


_IN_PLACE_METHODS = tuple(
    f"__i{name}__"
    for name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow")
    + ("and", "or", "xor", "lshift", "rshift")
)


def _updated_in_place(x) -> bool:
    """Whether ``x op= v`` may update ``x`` in place: a mutable container or array (an engine's
    array too: a dual array is updated in place, as the array it stands for), or an object of a
    class of the user's with an in-place operator (``__iadd__``), which Python calls for ``+=``."""
    if isinstance(x, _MUTABLE) or (isinstance(x, ActiveValue) and np.ndim(x) >= 1):
        return True
    if isinstance(x, (Number, np.generic, ActiveValue, AbstractTangent, str, bytes, tuple, frozenset)):
        return False
    return any(hasattr(type(x), name) for name in _IN_PLACE_METHODS)


def check_rebind(x, filename: str, line: int, col: int, instead: str = "x = x + ..."):
    """``x op= v`` rebinds ``x`` here; refuse when Python would have updated ``x`` in place."""
    if _updated_in_place(x):
        kind = "ndarray" if isinstance(x, ActiveValue) else type(x).__name__  # (what the engine's value stands for)
        raise UnsupportedSyntaxError(
            f"an augmented assignment updates the {kind} in place, which is not supported here; write `{instead}`",
            filename,
            line,
            col,
        )
    return x


def check_item_update(x, item, filename: str, line: int, col: int):
    """``x[i] op= v`` is ``x[i] = x[i] op v`` here. An element of an array is a number or a new
    view, which the write back puts into the array as Python's update in place does; a mutable
    element of a list, dict or object (an array) Python updates in place, which every other
    holder of it sees, and the write back would not: refused, as ``check_rebind`` refuses ``x op= v``."""
    if isinstance(x, np.ndarray) or (isinstance(x, ActiveValue) and np.ndim(x) >= 1):
        return item
    return check_rebind(item, filename, line, col, "x[i] = x[i] + ...")


def check_update(x, v, filename: str, line: int, col: int):
    """``x op= v`` on an array or list the function made and nothing else holds is rebound: refuse
    where ``x op v`` would not mean what the update in place does (a list extended by a tuple, an
    array updated with an object that is neither an array nor a number). An outer
    differentiation's value (a dual, in a Hessian) is a number or an array: the array rebound to
    the result holds the values and their derivatives, as the array updated in place would hold
    the values."""
    if type(x) is list:
        fits = type(v) is list
    elif type(x) is np.ndarray or (isinstance(x, ActiveValue) and np.ndim(x) >= 1):  # (a dual array: an array)
        fits = isinstance(v, (np.ndarray, Number, np.generic, ActiveValue))
    else:
        return check_rebind(x, filename, line, col)
    if not fits:
        raise UnsupportedSyntaxError(
            f"an augmented assignment updates the {type(x).__name__} in place with a {type(v).__name__}, which is "
            "not supported here; write `x = x + ...`",
            filename,
            line,
            col,
        )
    return x


def check_rebound(old, new, filename: str, line: int, col: int):
    """``x op= v`` on an array or list the function made and nothing else holds was rebound to
    ``new``: the same as Python's update in place only when ``new`` keeps the type, shape and
    dtype of ``old`` (in place, NumPy would have cast the result to ``old``'s dtype, or refused
    a result of another shape)."""
    if type(old) not in (np.ndarray, list):
        return new  # not updated in place (`check_update` refused the other mutable objects)
    if type(old) is list:
        same = type(new) is list
    else:  # an outer differentiation's array (see `check_update`) stands for the ndarray
        same = (type(new) is np.ndarray or isinstance(new, ActiveValue)) and (
            np.shape(new) == old.shape and new.dtype == old.dtype
        )
    if not same:
        raise UnsupportedSyntaxError(
            f"an augmented assignment updates the {type(old).__name__} in place, which keeps its shape and dtype; "
            f"here the result would change them, which is not supported: write `x = x + ...`",
            filename,
            line,
            col,
        )
    return new
