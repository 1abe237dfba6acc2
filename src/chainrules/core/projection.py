"""Projection of a tangent onto the tangent space of its primal, and un-broadcasting.

``ProjectTo(x)(dx)`` returns a tangent that is valid for ``x``: a real primal gets a real
tangent, float32 stays float32, an integer primal gets a float tangent (integers are reals
here), a bool gets ``NoTangent``, an array keeps its shape (a mismatch is an error), a sparse
matrix's tangent is put on its pattern (``core.sparse``), and structures are projected field by
field. Rules capture ``ProjectTo(x)`` in the primal and apply
it in the pullback.
"""

from __future__ import annotations

import dataclasses
import types
from numbers import Complex, Integral, Real

import numpy as np

from .active import ActiveValue
from .sparse import SparsePattern, is_sparse
from .tangents import (
    AbstractThunk,
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    _is_namedtuple_type,
    unthunk,
)

_NO = NoTangent()
_F64 = np.float64


class ProjectTo:
    """A projector onto the tangent space of a primal ``x``.

    >>> import numpy as np, chainrules as cr
    >>> cr.ProjectTo(1.0)(2.0 + 3.0j)
    2.0
    >>> cr.ProjectTo(np.zeros(2, dtype=np.float32))(np.ones(2)).dtype
    dtype('float32')
    >>> cr.ProjectTo(True)(1.0)
    NoTangent()
    """

    __slots__ = ("kind", "dtype", "shape", "primal")

    def __init__(self, x):
        self.primal = None
        self.shape = None
        self.dtype = None
        if _is_duck_array(x):
            self.kind = "identity"  # an array-like of another library (a dual number): its tangents as given
        elif is_sparse(x):  # (see core.sparse): its entries on its pattern, of its float dtype
            self.kind, self.shape, self.primal = "sparse", x.shape, SparsePattern(x)
            self.dtype = self.primal.dtype
        elif isinstance(x, np.ndarray):
            kind = x.dtype.kind
            self.shape = x.shape
            if kind in "fc":
                self.kind, self.dtype = "array", x.dtype
            elif kind in "iu":
                self.kind, self.dtype = "array", np.dtype(np.float64)
            elif kind == "b":
                self.kind = "none"
            else:
                self.kind = "identity"
        elif isinstance(x, (bool, np.bool_)):
            self.kind = "none"
        elif isinstance(x, np.generic) and isinstance(x, (np.floating, np.complexfloating)):
            self.kind, self.dtype = "npscalar", x.dtype
        elif isinstance(x, (Integral, Real)):
            self.kind = "real"
        elif isinstance(x, Complex):
            self.kind = "complex"
        elif isinstance(x, (str, bytes, type(None), range, slice, type(Ellipsis))):
            self.kind = "none"
        elif isinstance(x, (tuple, list, dict)) or dataclasses.is_dataclass(x) or _has_fields(x):
            self.kind, self.primal = "structure", x
        else:
            self.kind = "identity"  # functions, modules, opaque objects: leave the tangent alone

    def __call__(self, dx):
        kind = self.kind
        if kind == "identity" or isinstance(dx, AbstractZero):
            return dx
        if kind == "none":
            return _NO
        if isinstance(dx, AbstractThunk):
            return self._project_thunk(dx)
        if _is_duck_array(dx):
            return self._project_duck(dx)
        if kind == "real":
            if isinstance(dx, (float, int)):
                return float(dx)
            return float(np.real(_scalar(dx)))
        if kind == "complex":
            return complex(_scalar(dx))
        if kind == "npscalar":
            value = _scalar(dx)
            if self.dtype.kind == "f":
                value = np.real(value)
            return self.dtype.type(value)
        if kind == "array":
            return self._project_array(dx)
        if kind == "sparse":
            return self._project_sparse(dx)
        return self._project_structure(dx)

    def batch(self, dx):
        """``self`` applied to every row of ``dx``, a tangent with a leading batch axis (one
        tangent per row): shapes are checked, realness and dtype matched, the batch axis kept.

        >>> import numpy as np, chainrules as cr
        >>> cr.ProjectTo(np.zeros(2, dtype=np.float32)).batch(np.ones((3, 2), dtype=complex)).dtype
        dtype('float32')
        >>> cr.ProjectTo(1.0).batch(np.ones(3)).shape
        (3,)
        """
        kind = self.kind
        if kind == "identity" or isinstance(dx, AbstractZero):
            return dx
        if kind == "none":
            return _NO
        if isinstance(dx, AbstractThunk):
            dx = dx.unthunk()
        if kind == "sparse":  # a batch of a sparse matrix's tangents is a list of them
            return [self(d) for d in dx]
        if kind == "structure":
            raise TypeError(f"ProjectTo: a batch of tangents of a {type(self.primal).__qualname__} is not supported")
        shape = self.shape if kind == "array" else ()
        if np.ndim(dx) != len(shape) + 1 or np.shape(dx)[1:] != shape:
            raise ValueError(
                f"ProjectTo: a batch of tangents of shape {np.shape(dx)} does not fit a primal of shape {shape}"
            )
        if _is_duck_array(dx):
            return np.real(dx) if kind != "complex" and self.dtype is not None and self.dtype.kind == "f" else dx
        dtype = self.dtype if self.dtype is not None else np.dtype(np.complex128 if kind == "complex" else _F64)
        dx = dx if isinstance(dx, np.ndarray) else np.asarray(dx)
        if dtype.kind == "f" and dx.dtype.kind == "c":
            dx = dx.real
        return dx if dx.dtype == dtype else dx.astype(dtype)

    def _project_thunk(self, dx):
        if isinstance(dx, InplaceableThunk):
            return InplaceableThunk(dx.add_into, Thunk(lambda: self(dx.val.unthunk())))
        return Thunk(lambda: self(dx.unthunk()))

    def _project_array(self, dx):
        if isinstance(dx, Tangent):
            raise TypeError(f"ProjectTo: a {type(dx).__name__} is not a tangent of an array of shape {self.shape}")
        dx = np.asarray(dx)
        if dx.shape != self.shape:
            raise ValueError(f"ProjectTo: a tangent of shape {dx.shape} does not fit a primal of shape {self.shape}")
        if self.dtype.kind == "f" and dx.dtype.kind == "c":
            dx = dx.real
        if dx.dtype != self.dtype:
            dx = dx.astype(self.dtype)
        return dx

    def _project_sparse(self, dx):
        if isinstance(dx, Tangent):
            raise TypeError(f"ProjectTo: a {type(dx).__name__} is not a tangent of a sparse matrix")
        return self.primal.project(dx)

    def _project_duck(self, dx):
        """A tangent that is an array-like of another library keeps its type: only shape and realness are checked."""
        if self.kind in ("array", "real", "npscalar", "complex"):
            shape = self.shape if self.kind == "array" else ()
            if np.shape(dx) != shape:
                raise ValueError(f"ProjectTo: a tangent of shape {np.shape(dx)} does not fit a primal of shape {shape}")
            if self.kind != "complex" and (self.dtype is None or self.dtype.kind == "f") and np.iscomplexobj(dx):
                return np.real(dx)
            return dx
        return self._project_structure(dx)

    def _project_structure(self, dx):
        x = self.primal
        P = type(x)
        if isinstance(dx, Tangent):
            if not (issubclass(P, dx.primal_type) or issubclass(dx.primal_type, P)):
                raise TypeError(f"ProjectTo: a {type(dx).__name__} is not a tangent of a {P.__qualname__}")
            items = dx.backing
        elif isinstance(dx, (tuple, list)) and isinstance(x, (tuple, list)):
            items = tuple(dx)
        elif isinstance(dx, dict) and isinstance(x, dict):
            items = dx
        else:
            raise TypeError(f"ProjectTo: a {type(dx).__name__} is not a tangent of a {P.__qualname__}")
        if isinstance(items, tuple):
            if len(items) != len(x):
                raise ValueError(f"ProjectTo: {len(items)} tangents for a {P.__qualname__} of {len(x)} elements")
            if _is_namedtuple_type(P):
                return Tangent[P](**{k: ProjectTo(v)(d) for k, v, d in zip(P._fields, x, items)})
            return Tangent[P](*(ProjectTo(v)(d) for v, d in zip(x, items)))
        if isinstance(x, dict):
            return Tangent[P]({k: ProjectTo(x[k])(d) for k, d in items.items()})
        return Tangent[P](**{k: ProjectTo(getattr(x, k))(d) for k, d in items.items()})

    def __repr__(self) -> str:
        detail = f", {self.dtype}, {self.shape}" if self.kind == "array" else ""
        return f"ProjectTo({self.kind}{detail})"


_OPAQUE = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    np.ufunc,
)


def _has_fields(x) -> bool:
    """Objects with attributes (including callable objects) are structures; functions are not."""
    if isinstance(x, _OPAQUE):
        return False
    return hasattr(x, "__dict__") or bool(getattr(type(x), "__slots__", ()))


def _is_duck_array(v) -> bool:
    """An array-like of another library that speaks NumPy's protocols (a dual number, a tracer):
    it must go through NumPy functions, not be converted with ``np.asarray`` or ``float``."""
    return hasattr(type(v), "__array_function__") and not isinstance(v, (np.ndarray, np.generic))


def _shape(x) -> tuple:
    """``np.shape(x)``, also of a list or tuple holding another library's array-likes (a Hessian's
    dual numbers), which ``np.shape`` would convert."""
    if isinstance(x, (list, tuple)) and any(_is_duck_array(e) or isinstance(e, (list, tuple)) for e in x):
        return (len(x), *_shape(x[0]))
    return np.shape(x)


def _scalar(dx):
    if isinstance(dx, np.ndarray):
        if dx.ndim != 0:
            raise ValueError(f"ProjectTo: a tangent of shape {dx.shape} does not fit a scalar primal")
        return dx[()]
    if isinstance(dx, Tangent):
        raise TypeError(f"ProjectTo: a {type(dx).__name__} is not a tangent of a number")
    return dx


def unbroadcast(x, dx):
    """Sum ``dx`` over the axes along which ``x`` was broadcast, back to ``x``'s shape.

    The cotangent of a broadcasting binary operation has the output's shape; each input gets
    the sum over the axes it was stretched along.

    >>> import numpy as np, chainrules as cr
    >>> cr.unbroadcast(np.zeros((3, 1)), np.ones((2, 3, 4))).shape
    (3, 1)
    >>> float(cr.unbroadcast(2.0, np.ones(5)))
    5.0
    """
    if isinstance(dx, AbstractZero):
        return dx
    shape = np.shape(x)
    dx_shape = np.shape(dx)
    if dx_shape == shape:
        return dx
    if not _is_duck_array(dx):
        dx = np.asarray(dx)
    extra = len(dx_shape) - len(shape)
    if extra < 0:
        return np.broadcast_to(dx, shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and dx_shape[i + extra] != 1)
    out = np.sum(dx, axis=axes) if axes else dx
    return out if np.shape(out) == shape else np.reshape(out, shape)


def carries_batch(y, dy) -> bool:
    """Whether the cotangent ``dy`` of an output ``y`` carries a leading batch axis: one more
    dimension than ``y`` (row ``b`` is the ``b``-th cotangent). A rule registered ``batched=True``
    tells a batch from a single cotangent this way.

    >>> import numpy as np
    >>> from chainrules.core import carries_batch
    >>> carries_batch(np.zeros(3), np.zeros((5, 3))), carries_batch(2.0, np.zeros(5)), carries_batch(2.0, 1.0)
    (True, True, False)
    """
    nd = getattr(dy, "ndim", None)
    if not nd:  # a number, a zero, a structure, or a 0-d array
        return False
    ny = getattr(y, "ndim", None)
    if ny is None:
        ny = np.ndim(y) if isinstance(y, (list, tuple)) else 0
    return nd == ny + 1


def unbroadcast_batch(x, dx):
    """``unbroadcast`` for a batch of cotangents: ``dx`` of shape ``(B, *s)``, where ``x``'s shape
    broadcasts to ``s``, summed back to ``(B, *np.shape(x))``; the batch axis is never summed.

    >>> import numpy as np
    >>> from chainrules.core import unbroadcast_batch
    >>> unbroadcast_batch(np.zeros((3, 1)), np.ones((2, 3, 4))).shape
    (2, 3, 1)
    >>> unbroadcast_batch(2.0, np.ones((4, 5))).tolist()
    [5.0, 5.0, 5.0, 5.0]
    """
    if isinstance(dx, AbstractZero):
        return dx
    shape = np.shape(x)
    dx_shape = np.shape(dx)
    target = dx_shape[:1] + shape
    if dx_shape == target:
        return dx
    extra = len(dx_shape) - len(target)
    if extra < 0:  # fewer axes than x: the missing ones were broadcast
        dx = np.reshape(dx, dx_shape[:1] + (1,) * -extra + dx_shape[1:])
        dx_shape, extra = np.shape(dx), 0
    # one sum over the axes broadcasting put in front of x's and those x had as 1 (as unbroadcast)
    axes = tuple(range(1, 1 + extra)) + tuple(
        i + 1 + extra for i, n in enumerate(shape) if n == 1 and dx_shape[i + 1 + extra] != 1
    )
    if axes:
        dx = np.sum(dx, axis=axes, keepdims=True)
        if extra:
            dx = np.reshape(dx, dx_shape[:1] + np.shape(dx)[1 + extra :])
    return dx if np.shape(dx) == target else np.broadcast_to(dx, target)


def numpy_cotangent(y, dy):
    """A Python number ``dy``, the cotangent of a NumPy output ``y``, as a NumPy scalar of
    ``y``'s dtype; any other ``dy`` as it is.

    NumPy gives a Python float (or complex) no precision of its own: a float32 partial times it is float32,
    even where the output (and so its cotangent) is float64. A pullback that multiplies a
    single cotangent by partials converts it first, so that it computes what it computes for
    a batch of cotangents (arrays of the output's dtype).

    >>> import numpy as np
    >>> np.float32(0.1) * numpy_cotangent(np.float64(1.0), 3.0)  # float64, as for an array cotangent
    np.float64(0.30000000447034836)
    """
    tdy = type(dy)
    if (tdy is float or tdy is int or tdy is complex) and isinstance(y, (np.ndarray, np.generic)):
        dtype = y.dtype
        if dtype.kind == "c" or (dtype.kind == "f" and tdy is not complex):  # (a real output's is made real first)
            return dtype.type(dy)
    return dy


def input_matcher(y, dy):
    """``match_input``, or ``match_input_batch`` when ``dy`` carries a batch of cotangents of the
    output ``y``: how a pullback that takes one cotangent or a batch alike brings its result back.

    >>> import numpy as np
    >>> input_matcher(np.zeros(3), np.ones((2, 3))) is match_input_batch
    True
    """
    return match_input_batch if carries_batch(y, dy) else match_input


def match_input_batch(x, dx):
    """``match_input`` for a batch of cotangents (a leading batch axis): every row brought back
    to ``x``'s space, the batch axis kept.

    The result has shape ``(B, *np.shape(x))``: summed over broadcast axes, real for a real
    ``x``, in ``x``'s float dtype (float64 for Python numbers and integer scalars; an integer
    array keeps the cotangent's dtype, as with ``match_input``); a bool gets ``NoTangent``. An
    array that already fits is returned as it is, so a structured tangent (``BasisSeed``) keeps
    its structure. Zeros pass through.

    >>> import numpy as np
    >>> from chainrules.core import match_input_batch
    >>> match_input_batch(2.0, np.array([[1.0 + 1.0j, 2.0], [3.0, 4.0]])).tolist()
    [3.0, 7.0]
    """
    if isinstance(dx, AbstractZero):
        return dx
    if type(x) is np.ndarray and isinstance(dx, np.ndarray) and dx.dtype == x.dtype and dx.shape[1:] == x.shape:
        if x.dtype.kind in "fc" and dx.ndim == x.ndim + 1:  # it fits already: the common case
            return dx
    if isinstance(x, (bool, np.bool_)):
        return _NO
    dx = unbroadcast_batch(x, dx)
    if isinstance(x, (list, tuple)) and isinstance(dx, np.ndarray):
        # a list NumPy took as an array: structural, as an engine splits it (an array would be split along the batch)
        return Tangent[type(x)](*(match_input_batch(e, dx[:, i]) for i, e in enumerate(x)))
    if _is_duck_array(dx) or _is_duck_array(x):
        return np.real(dx) if np.iscomplexobj(dx) and not np.iscomplexobj(x) else dx
    # the dtypes ``match_input`` gives each row
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
        if kind == "b":
            return _NO
        if kind not in "fc":  # integer arrays (and others) keep the cotangent's real dtype, as match_input does
            return np.real(dx) if np.iscomplexobj(dx) else dx
        dtype = x.dtype
    elif isinstance(x, np.floating):
        dtype = x.dtype
    elif isinstance(x, (float, int, np.integer)):
        dtype = np.dtype(_F64)
    elif isinstance(x, complex):
        dtype = np.dtype(np.complex128)
    else:
        return dx
    if not isinstance(dx, np.ndarray):
        dx = np.asarray(dx)
    if dtype.kind == "f" and dx.dtype.kind == "c":
        dx = dx.real
    return dx if dx.dtype == dtype else dx.astype(dtype)


def match_input(x, dx):
    """Bring a cotangent computed for an elementwise operation back to the input ``x``'s space.

    Sums over broadcast axes, takes the real part for a real ``x``, keeps ``x``'s float dtype,
    and returns a Python float for a Python number. Zeros pass through.

    >>> import numpy as np, chainrules as cr
    >>> cr.match_input(2.0, np.array([1.0 + 1.0j, 2.0]))
    3.0
    """
    tx, tdx = type(x), type(dx)
    if tx is np.ndarray and tdx is np.ndarray and x.dtype.kind in "fc":
        return _match_array(x, dx)
    if tx is tdx and (tx is float or tx is complex or tx is _F64):
        return dx
    # fast paths for the common scalar and same-shape cases the general code below also covers
    if tx is float and tdx is _F64:
        return float(dx)
    if tx is _F64 and tdx is float:
        return _F64(dx)
    if isinstance(dx, AbstractZero):
        return dx
    if np.shape(dx) != _shape(x):
        dx = unbroadcast(x, dx)
    if isinstance(x, (list, tuple)) and (isinstance(dx, np.ndarray) or _is_duck_array(dx)):
        # a list NumPy took as an array: structural, as the cotangents of lists are everywhere else
        return Tangent[type(x)](*(match_input(e, dx[i]) for i, e in enumerate(x)))
    if _is_duck_array(dx) or _is_duck_array(x):
        # keep another library's array-like (a dual number), or a constant cotangent of one; only realness is matched
        return np.real(dx) if np.iscomplexobj(dx) and not np.iscomplexobj(x) else dx
    if isinstance(x, np.ndarray):
        kind = x.dtype.kind
        if kind in "fc":
            if kind == "f" and np.iscomplexobj(dx):
                dx = np.real(dx)
            if np.ndim(dx) == 0 or getattr(dx, "dtype", None) != x.dtype:
                dx = np.asarray(dx, dtype=x.dtype)
        elif kind == "b":
            return _NO
        elif isinstance(dx, (np.ndarray, np.generic, Complex)):  # an integer array used arithmetically:
            dx = np.asarray(np.real(dx) if np.iscomplexobj(dx) else dx)  # a real array of its shape
        return dx
    if isinstance(x, (bool, np.bool_)):
        return _NO
    if not isinstance(dx, (Complex, np.generic, np.ndarray)):
        return dx  # a number an engine follows (nested differentiation): converting it would drop its derivative
    if isinstance(x, (float, int, np.floating, np.integer)):
        dx = np.real(dx) if np.iscomplexobj(dx) else dx
        return x.dtype.type(dx) if isinstance(x, np.floating) else float(dx)
    if isinstance(x, complex):
        return complex(dx)
    return dx


#: how a cotangent of one shape is summed back to an input of another, by the pair of shapes
#: (see `_sum_plan`): a pullback meets the same few pairs on every call
_SUM_PLANS: dict[tuple[tuple, tuple], tuple] = {}


def _sum_plan(shape: tuple, dx_shape: tuple) -> tuple:
    """``(axes, keepdims)`` of the sum that brings a cotangent of ``dx_shape`` back to an input
    of ``shape`` (``axes`` None: no sum; ``False``: spread a smaller cotangent out instead)."""
    plan = _SUM_PLANS.get((shape, dx_shape))
    if plan is not None:
        return plan
    extra = len(dx_shape) - len(shape)
    if extra < 0:
        plan = (False, False)
    else:
        kept = tuple(i + extra for i, n in enumerate(shape) if n == 1 and dx_shape[i + extra] != 1)
        if kept or not shape:  # (a sum to a 0-d x would be a scalar, not an array)
            plan = (tuple(range(extra)) + kept, True)
        elif extra:  # only leading axes (a bias added to a batch): the sum has x's shape already
            plan = (tuple(range(extra)), False)
        else:
            plan = (None, False)
    if len(_SUM_PLANS) >= 256:  # ever new shapes: keep the memory bounded
        _SUM_PLANS.clear()
    _SUM_PLANS[shape, dx_shape] = plan
    return plan


def _match_array(x: np.ndarray, dx: np.ndarray):
    """``match_input`` for a float or complex array ``x`` and an array ``dx`` (the common case)."""
    shape = x.shape
    if dx.shape != shape:
        axes, keepdims = _SUM_PLANS.get((shape, dx.shape)) or _sum_plan(shape, dx.shape)
        if axes is False:
            dx = np.broadcast_to(dx, shape)
        elif axes is not None:
            dx = np.add.reduce(dx, axes, None, None, keepdims)
        if dx.shape != shape:
            dx = dx.reshape(shape)
    if dx.dtype != x.dtype:
        if x.dtype.kind == "f" and dx.dtype.kind == "c":
            dx = dx.real
        dx = dx.astype(x.dtype)
    return dx


def conj(x):
    """The complex conjugate; real values are returned as they are (no copy)."""
    if type(x) is np.ndarray:
        return np.conj(x) if x.dtype.kind == "c" else x
    if type(x) is float or type(x) is _F64 or isinstance(x, AbstractZero) or not np.iscomplexobj(x):
        return x
    return np.conj(x)


# ----- arrays as sequences of rows ---------------------------------------------------------------


def is_array_of_rows(x) -> bool:
    """Whether iterating over ``x`` gives the rows of an array: a NumPy array, or an engine's
    stand-in for one (a dual or tracked array) with at least one axis.

    >>> import numpy as np
    >>> is_array_of_rows(np.zeros((2, 3))), is_array_of_rows([1.0]), is_array_of_rows(np.float64(1.0))
    (True, False, False)
    """
    return isinstance(x, np.ndarray) or isinstance(x, ActiveValue) and np.ndim(x) >= 1


def rows_cotangent(xs, rows: list):
    """The cotangent of the array ``xs`` from the cotangents of its first ``len(rows)`` rows (the
    rest, and zeros among them, are zero): a new array. The rows of an engine's stand-in for an
    array, and rows that are an engine's values, are stacked, so that what they carry (the partials
    of dual numbers, under forward over reverse) is kept.

    >>> import numpy as np
    >>> from chainrules.core import ZeroTangent
    >>> rows_cotangent(np.zeros((3, 2)), [ZeroTangent(), np.ones(2)])
    array([[0., 0.],
           [1., 1.],
           [0., 0.]])
    >>> rows_cotangent(np.zeros(3), [np.array([1.0, 2.0])]).tolist()  # a batch of two cotangents of row 0
    [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    """
    rows = [unthunk(r) for r in rows]
    # (a plain array's rows get an engine's values as cotangents where they depend on an outer
    # differentiation's values: a plain array cannot hold those)
    if isinstance(xs, ActiveValue) or any(isinstance(r, ActiveValue) for r in rows):
        shape = np.shape(xs)
        zero = np.zeros(shape[1:])
        full = rows + [zero] * (shape[0] - len(rows))
        return np.stack([zero if isinstance(r, AbstractZero) else r for r in full])
    dtype = xs.dtype if xs.dtype.kind in "fc" else np.dtype(np.float64)
    given = [(i, r) for i, r in enumerate(rows) if not isinstance(r, AbstractZero)]
    # a row drops the array's first axis: a batch of a row's cotangents (a leading batch axis)
    # has as many axes as the array, and goes to [:, i]
    if given and np.ndim(given[0][1]) == xs.ndim:
        out = np.zeros(np.shape(given[0][1])[:1] + xs.shape, dtype=dtype)
        for i, r in given:
            out[:, i] = r
        return out
    out = np.zeros(xs.shape, dtype=dtype)
    for i, r in given:
        out[i] = r
    return out
