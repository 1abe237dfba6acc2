"""Flattening values to real vectors and back, the bridge between structured primals and finite differences.

``to_vec(x)`` returns a float64 vector of every perturbable real number inside ``x`` and a
function that rebuilds a value of the same structure from such a vector. A complex number is two
reals (real part, imaginary part), so finite differences see ``C`` as ``R^2``, which is what the
ChainRules convention for complex gradients (``df/dx + i df/dy``) needs. Integers, booleans,
strings, ``None``, functions and other opaque values are *carried*: they take no room in the
vector and come back unchanged.

The same layout maps a vector to a *tangent* of ``x`` (``Tangent[P]`` for structures, an array of
``x``'s dtype for arrays, ``NoTangent()`` for carried values) and a tangent of ``x`` to a vector,
which is how ``fd_jvp``/``fd_vjp`` take directions and return results rules can be compared with.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk
from ..core.sparse import SparsePattern, is_sparse
from ..core.tangents import _is_namedtuple_type, object_fields

_NO = NoTangent()

# Values that are never looked inside: they have no perturbable part.
_OPAQUE = (
    str,
    bytes,
    type(None),
    range,
    slice,
    type(Ellipsis),
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    np.ufunc,
    np.dtype,
    np.random.Generator,
)


class Layout(abc.ABC):
    """How the perturbable reals of one value sit in a vector (a node of the value's tree).

    ``size`` is the number of reals; ``primal(v, i)`` / ``tangent(v, i)`` rebuild a value or a
    tangent from ``v[i:i + size]``; ``pack(t, v, i, path)`` writes the tangent ``t`` into ``v``
    (``v`` starts as zeros, so a zero tangent writes nothing); ``values(v, i)`` writes the
    primal's own reals.
    """

    size = 0

    @abc.abstractmethod
    def primal(self, vec: np.ndarray, i: int): ...

    @abc.abstractmethod
    def tangent(self, vec: np.ndarray, i: int): ...

    def pack(self, t, vec: np.ndarray, i: int, path: str) -> None:
        t = unthunk(t)
        if not isinstance(t, AbstractZero):
            self._pack(t, vec, i, path)

    @abc.abstractmethod
    def _pack(self, t, vec: np.ndarray, i: int, path: str) -> None: ...

    @abc.abstractmethod
    def values(self, vec: np.ndarray, i: int) -> None: ...


class NonDifferentiable:
    """A value marked as not differentiable (``nondiff(x)``): carried by ``to_vec``, never perturbed."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"nondiff({self.value!r})"


def nondiff(x) -> NonDifferentiable:
    """Mark an argument of ``test_rrule``/``test_frule`` (or a value inside ``to_vec``) as non-differentiable.

    Finite differences do not perturb it, its tangent in ``test_frule`` is ``NoTangent()``, and
    ``test_rrule`` requires its cotangent to be ``NoTangent()``. The function receives the value
    itself.

    >>> from chainrules.testing import nondiff, to_vec
    >>> to_vec((1.0, nondiff(2.0)))[0]
    array([1.])
    """
    return x if isinstance(x, NonDifferentiable) else NonDifferentiable(x)


def unwrap(x):
    """The value inside a ``nondiff`` marker (anything else as it is)."""
    return x.value if isinstance(x, NonDifferentiable) else x


def describe(t) -> str:
    """A short description of a value for error messages: its type, and shape and dtype for arrays."""
    if isinstance(t, np.ndarray):
        return f"an array of shape {t.shape} and dtype {t.dtype}"
    if isinstance(t, np.generic):
        return f"a numpy.{type(t).__name__} scalar"
    name = type(t).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


class _Carried(Layout):
    """A value finite differences do not perturb (an int, a bool, a string, a function)."""

    def __init__(self, value):
        self.value = value

    def primal(self, vec, i):
        value = self.value
        # a fresh copy, so a function that mutates its input cannot change the caller's array
        return value.copy() if isinstance(value, np.ndarray) else value

    def tangent(self, vec, i):
        return _NO

    def _pack(self, t, vec, i, path):
        pass  # nothing of a carried value is perturbed: its tangent is dropped

    def values(self, vec, i):
        pass


class _Real(Layout):
    """A real scalar: a Python float (or a perturbed int) or a NumPy floating scalar."""

    size = 1

    def __init__(self, value):
        self.value = value
        # np.float32 stays np.float32; a Python float (or a perturbed int) is a Python float
        self.kind = type(value) if isinstance(value, np.floating) else float

    def primal(self, vec, i):
        return self.kind(vec[i])

    tangent = primal

    def _pack(self, t, vec, i, path):
        if isinstance(t, Tangent) or np.ndim(t) != 0:
            raise TypeError(f"{path}: {describe(t)} is not a tangent of a real scalar")
        vec[i] = float(np.real(t))

    def values(self, vec, i):
        vec[i] = float(self.value)


class _Complex(Layout):
    """A complex scalar: two reals, real part first."""

    size = 2

    def __init__(self, value):
        self.value = value
        self.kind = type(value) if isinstance(value, np.complexfloating) else complex

    def primal(self, vec, i):
        return self.kind(complex(vec[i], vec[i + 1]))

    tangent = primal

    def _pack(self, t, vec, i, path):
        if isinstance(t, Tangent) or np.ndim(t) != 0:
            raise TypeError(f"{path}: {describe(t)} is not a tangent of a complex scalar")
        t = complex(np.asarray(t)[()])
        vec[i], vec[i + 1] = t.real, t.imag

    def values(self, vec, i):
        vec[i], vec[i + 1] = self.value.real, self.value.imag


class _Array(Layout):
    """A float or complex array (or an integer array perturbed as float64)."""

    def __init__(self, value: np.ndarray, dtype: np.dtype):
        self.value = value
        self.shape = value.shape
        self.dtype = dtype
        self.n = value.size
        self.is_complex = dtype.kind == "c"
        self.size = 2 * self.n if self.is_complex else self.n

    def _read(self, vec, i):
        part = vec[i : i + self.size]
        if self.is_complex:
            part = part[0::2] + 1j * part[1::2]
        return part.reshape(self.shape).astype(self.dtype)

    tangent = _read

    def primal(self, vec, i):
        # in the input's memory layout (Fortran order, a transpose's strides): a function may read
        # it (np.ravel(x, order="K")), and finite differences must see the input as the rule does
        out = np.empty_like(self.value, dtype=self.dtype)
        out[...] = self._read(vec, i)
        return out

    def _pack(self, t, vec, i, path):
        if isinstance(t, Tangent) or np.shape(t) != self.shape:
            raise ValueError(f"{path}: {describe(t)} is not a tangent of an array of shape {self.shape}")
        t = np.asarray(t)
        self._write(t, vec, i)

    def _write(self, t, vec, i):
        flat = t.reshape(-1)
        if self.is_complex:
            vec[i : i + self.size : 2] = flat.real
            vec[i + 1 : i + self.size : 2] = flat.imag
        else:
            vec[i : i + self.size] = np.real(flat)

    def values(self, vec, i):
        self._write(self.value, vec, i)


class _Sparse(_Array):
    """A SciPy sparse matrix: its entries on its pattern (``core.sparse``), duplicates summed. The
    primal rebuilt from a vector has the pattern and the primal's format and class; its tangent is
    the pattern's (a CSR matrix)."""

    def __init__(self, value):
        self.pattern = SparsePattern(value)
        super().__init__(np.zeros(self.pattern.nnz, dtype=self.pattern.dtype), self.pattern.dtype)
        self.value, self.shape = value, (self.pattern.nnz,)

    def tangent(self, vec, i):
        return self.pattern.tangent(self._read(vec, i))

    def primal(self, vec, i):
        return self.tangent(vec, i).asformat(self.value.format)

    def _pack(self, t, vec, i, path):
        if isinstance(t, Tangent):
            raise ValueError(f"{path}: {describe(t)} is not a tangent of a sparse matrix")
        try:
            self._write(self.pattern.entries(t), vec, i)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    def values(self, vec, i):
        self._write(self.pattern.entries(self.value), vec, i)


class _Node(Layout):
    """A structure: a tuple, list, namedtuple, dict, dataclass, object with fields, or a ``Tangent``."""

    def __init__(self, value, keys: list, children: list[Layout]):
        self.value = value
        self.keys = keys
        self.children = children
        self.size = sum(c.size for c in children)
        self.all_carried = all(isinstance(c, _Carried) for c in children)

    def _parts(self, vec, i, method):
        out = []
        for child in self.children:
            out.append(getattr(child, method)(vec, i))
            i += child.size
        return out

    def primal(self, vec, i):
        return _rebuild_primal(self.value, self.keys, self._parts(vec, i, "primal"))

    def tangent(self, vec, i):
        if self.all_carried:
            return _NO
        parts = self._parts(vec, i, "tangent")
        x = self.value
        if isinstance(x, Tangent):
            return _rebuild_primal(x, self.keys, parts)
        P = type(x)
        if isinstance(x, dict):
            return Tangent[P](dict(zip(self.keys, parts)))
        if isinstance(x, (tuple, list)) and not _is_namedtuple_type(P):
            return Tangent[P](*parts)
        return Tangent[P](**dict(zip(self.keys, parts)))

    def _pack(self, t, vec, i, path):
        for key, child in zip(self.keys, self.children):
            child.pack(_field(t, key, self.value, path), vec, i, f"{path}{_crumb(self.value, key)}")
            i += child.size

    def values(self, vec, i):
        for child in self.children:
            child.values(vec, i)
            i += child.size


def _crumb(x, key) -> str:
    if isinstance(key, int) or isinstance(x, dict):
        return f"[{key!r}]"
    return f".{key}"


def _field(t, key, x, path):
    """The part of tangent ``t`` that belongs to field ``key`` of the primal ``x``."""
    if isinstance(t, Tangent):
        P = type(x) if not isinstance(x, Tangent) else type(x).primal_type
        if not (issubclass(P, t.primal_type) or issubclass(t.primal_type, P)):
            raise TypeError(f"{path}: a {type(t).__name__} is not a tangent of a {P.__qualname__}")
        backing = t.backing
        if isinstance(backing, tuple):
            if len(backing) != len(x):
                raise ValueError(f"{path}: {type(t).__name__} has {len(backing)} fields, the primal has {len(x)}")
            if isinstance(key, int):
                return backing[key]
            return backing[list(type(x)._fields).index(key)]  # a namedtuple's Tangent built positionally
        return backing.get(key, ZeroTangent())
    if isinstance(t, (tuple, list)) and isinstance(x, (tuple, list)):
        if len(t) != len(x):
            raise ValueError(f"{path}: {len(t)} tangents for a {type(x).__name__} of {len(x)} elements")
        return t[key] if isinstance(key, int) else t[list(type(x)._fields).index(key)]
    if isinstance(t, dict) and isinstance(x, dict):
        return t.get(key, ZeroTangent())
    raise TypeError(f"{path}: a {type(t).__name__} is not a tangent of a {type(x).__qualname__}")


def _rebuild_primal(x, keys, parts):
    if isinstance(x, Tangent):
        backing = x.backing
        if isinstance(backing, tuple):
            return type(x)(*parts)
        if type(x).primal_type is dict:
            return type(x)(dict(zip(keys, parts)))
        return type(x)(**dict(zip(keys, parts)))
    P = type(x)
    if _is_namedtuple_type(P):
        return P(*parts)
    if isinstance(x, (tuple, list)):
        return P(parts)
    if isinstance(x, dict):
        new = copy.copy(x)
        for k, v in zip(keys, parts):
            new[k] = v
        return new
    new = copy.copy(x)
    for k, v in zip(keys, parts):
        object.__setattr__(new, k, v)
    return new


def _object_fields(x) -> list[str] | None:
    """The field names of a dataclass or an object with ``__dict__``/``__slots__``, else None."""
    if dataclasses.is_dataclass(x):
        return [f.name for f in dataclasses.fields(x)]
    return list(object_fields(x)) or None


def layout(x, perturb_ints: bool = False, _seen: frozenset = frozenset()) -> Layout:
    """The ``Layout`` of ``x``. ``perturb_ints=True`` perturbs integers (not bools) as float64,
    at every depth: inside a tuple, a dict or an object's fields as at the top."""
    x = unthunk(x)
    if isinstance(x, (bool, np.bool_, AbstractZero, NonDifferentiable, *_OPAQUE)):
        return _Carried(x)
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
        if kind in "fc":
            # extended precision is carried at double precision: the vector is float64
            return _Array(x, x.dtype)
        if kind in "iu" and perturb_ints:
            return _Array(x, np.dtype(np.float64))
        return _Carried(x)
    if is_sparse(x):
        return _Sparse(x)
    if isinstance(x, (float, np.floating)):
        return _Real(x)
    if isinstance(x, (int, np.integer)):
        return _Real(float(x)) if perturb_ints else _Carried(x)
    if isinstance(x, (complex, np.complexfloating)):
        return _Complex(x)
    if id(x) in _seen:  # a cycle: the value refers to itself
        return _Carried(x)
    seen = _seen | {id(x)}
    if isinstance(x, Tangent):
        keys = [k for k, _ in x.items()]
        return _Node(x, keys, [layout(v, perturb_ints, seen) for _, v in x.items()])
    if isinstance(x, (tuple, list)):
        keys = list(x._fields) if _is_namedtuple_type(type(x)) else list(range(len(x)))
        return _Node(x, keys, [layout(v, perturb_ints, seen) for v in x])
    if isinstance(x, dict):
        keys = list(x)
        return _Node(x, keys, [layout(x[k], perturb_ints, seen) for k in keys])
    fields = None if callable(x) and not _has_state(x) else _object_fields(x)
    if fields is None:
        return _Carried(x)
    return _Node(x, fields, [layout(getattr(x, k), perturb_ints, seen) for k in fields])


def _has_state(x) -> bool:
    """A callable object (a model with ``__call__``) is a structure; a plain callable is not."""
    return dataclasses.is_dataclass(x) or bool(object_fields(x))


def values_like(lay: Layout, y) -> np.ndarray:
    """The reals of ``y``, which should have the layout ``lay`` (a fast path for plain floats and arrays).

    Raises ``ValueError`` when ``y`` has a different number of reals.
    """
    if type(y) is float and isinstance(lay, _Real):
        return np.array([y])
    if type(y) is np.ndarray and isinstance(lay, _Array) and y.shape == lay.shape and y.dtype.kind == "f":
        return y.astype(np.float64).ravel()
    actual = layout(y)
    if actual.size != lay.size:
        raise ValueError(f"{lay.size} reals expected, {actual.size} found")
    out = np.empty(actual.size)
    actual.values(out, 0)
    return out


def to_vec(x, perturb_ints: bool = False) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
    """``(v, from_vec)``: the perturbable reals of ``x`` as a float64 vector, and the inverse.

    Floats, complex numbers (two reals), NumPy arrays of any float or complex dtype, tuples,
    lists, dicts, namedtuples, dataclasses, objects with fields and ``cr.Tangent`` structures are
    flattened, and a SciPy sparse matrix as its entries on its pattern (``core.sparse``); integers,
    booleans, strings and functions are carried unchanged, wherever they sit (``perturb_ints=True``
    flattens integers, not booleans, as float64 reals, also wherever they sit). ``from_vec(v)``
    rebuilds a value of ``x``'s structure and dtypes.

    >>> import numpy as np
    >>> from chainrules.testing import to_vec
    >>> v, from_vec = to_vec((1.5, np.array([2.0, 3.0]), 4, 1 + 2j))
    >>> v
    array([1.5, 2. , 3. , 1. , 2. ])
    >>> from_vec(v + 1)
    (2.5, array([3., 4.]), 4, (2+3j))
    >>> to_vec((1.5, 4), perturb_ints=True)[0]
    array([1.5, 4. ])
    """
    lay = layout(x, perturb_ints)
    vec = np.empty(lay.size)
    lay.values(vec, 0)
    return vec, lambda v: lay.primal(np.asarray(v, dtype=np.float64), 0)


def tangent_to_vec(x, dx, perturb_ints: bool = False) -> np.ndarray:
    """The tangent ``dx`` of ``x`` as a vector laid out like ``to_vec(x)``.

    ``dx`` may be natural (a float, an array), structural (``Tangent[P]``, or a plain tuple, list
    or dict), a zero or a thunk.

    >>> import chainrules as cr
    >>> from chainrules.testing.to_vec import tangent_to_vec
    >>> tangent_to_vec((1.0, 2j), cr.Tangent[tuple](cr.ZeroTangent(), 3 + 4j))
    array([0., 3., 4.])
    """
    lay = layout(x, perturb_ints)
    vec = np.zeros(lay.size)
    lay.pack(dx, vec, 0, "tangent")
    return vec


def vec_to_tangent(x, v: np.ndarray, perturb_ints: bool = False):
    """The tangent of ``x`` whose reals are ``v`` (laid out like ``to_vec(x)``).

    >>> import numpy as np
    >>> from chainrules.testing.to_vec import vec_to_tangent
    >>> vec_to_tangent((1.0, 2), np.array([0.5]))
    Tangent[tuple](0.5, NoTangent())
    """
    return layout(x, perturb_ints).tangent(np.asarray(v, dtype=np.float64), 0)


__all__ = [
    "Layout",
    "NonDifferentiable",
    "describe",
    "layout",
    "nondiff",
    "tangent_to_vec",
    "to_vec",
    "unwrap",
    "values_like",
    "vec_to_tangent",
]
