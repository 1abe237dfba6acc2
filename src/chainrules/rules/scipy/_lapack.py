"""Shared machinery of the linear-algebra rules: SciPy's BLAS and LAPACK, and tangent plumbing.

NumPy and SciPy each bundle an OpenBLAS with its own thread pool, and a rule that alternates
between them makes the idle pool's spinning threads fight the active one. So a rule keeps its
primal and its pullback in one library: the helpers here call ``scipy.linalg.blas``/``lapack``
for plain two-dimensional arrays of a LAPACK dtype. Anything else (a stack of matrices, an object
implementing NumPy's protocols such as a dual number) goes through NumPy functions instead, so
the rules also run under the forward engine.

>>> import numpy as np
>>> a = np.arange(6.0).reshape(2, 3)
>>> mm(a, a, "N", "T")  # a a^T with SciPy's GEMM, no layout copies
array([[ 5., 14.],
       [14., 50.]])
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from scipy.linalg import blas as _blas
from scipy.linalg import lapack as _lapack

from ...core import (
    AbstractZero,
    ActiveValue,
    BasisSeed,
    NonSmoothWarning,
    NoRuleError,
    NoTangent,
    ProjectTo,
    Tangent,
    ZeroTangent,
    carries_batch,
    match_input,
    match_input_batch,
    unthunk,
    user_location,
    warn_at,
)
from ...core.active import stood_for
from ...core.errors import option_refused

NO = NoTangent()
ZERO = ZeroTangent()
_CHARS = {np.dtype(t): c for t, c in ((np.float32, "s"), (np.float64, "d"), (np.complex64, "c"), (np.complex128, "z"))}
_OPS = {"N": 0, "T": 1, "C": 2}

# ----- arrays and dtypes -------------------------------------------------------------------


def is_plain(*xs) -> bool:
    """Whether every argument is an ``ndarray`` (not a subclass) of a dtype LAPACK works in."""
    return all(type(x) is np.ndarray and x.dtype in _CHARS for x in xs)


def float_dtype(*xs) -> np.dtype:
    """The dtype NumPy's linear algebra computes in for these inputs (integers and bools: float64)."""
    dtypes = [np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype) for x in xs]
    dtypes = [np.dtype(np.float64) if d.kind in "biu" else d for d in dtypes]
    return np.result_type(np.float32, *dtypes)


def as_array(x, dtype=None):
    """An ndarray for numbers and lists; objects implementing NumPy's protocols pass through."""
    if isinstance(x, np.ndarray) or (hasattr(type(x), "__array_function__") and not isinstance(x, np.generic)):
        if dtype is not None and isinstance(x, np.ndarray) and x.dtype != dtype:
            return x.astype(dtype)
        return x
    return np.asarray(x, dtype=dtype)


def is_complex(x) -> bool:
    return np.iscomplexobj(x)


def mT(x):
    """Transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


def mH(x):
    """Conjugate transpose of the last two axes (a view for real arrays)."""
    x = np.swapaxes(x, -1, -2)
    return np.conj(x) if np.iscomplexobj(x) else x


def diag_embed(d):
    """A (stack of) diagonal matrices with diagonal ``d`` along the last axis (by broadcasting, not
    by writing into an array, so that it also builds matrices of dual numbers)."""
    n = np.shape(d)[-1]
    return np.eye(n, dtype=bool) * np.expand_dims(d, -2)


def diagonal(x):
    return np.diagonal(x, axis1=-2, axis2=-1)


def is_active(*xs) -> bool:
    """Whether an argument is an engine's stand-in for an array (a dual number of forward mode)."""
    return any(isinstance(x, ActiveValue) for x in xs)


def through_rules(f, *args, **kwargs):
    """``f(*args, **kwargs)``, where an argument may be an engine's active value (a dual number).

    LAPACK cannot take dual numbers, but a dual answers NumPy's ``__array_function__`` protocol
    with the forward rule of the function it is given: calling that protocol with ``f`` pushes the
    dual through ``f``'s ``frule``. So a rule whose primal or pullback calls a LAPACK-backed
    function with a forward rule also runs on duals (forward over reverse: ``cr.hessian``).
    Plain arguments call ``f`` itself.

    >>> import numpy as np, scipy.linalg as sl
    >>> through_rules(sl.sqrtm, np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[2., 0.],
           [0., 3.]])
    """
    for arg in args:
        for x in arg if type(arg) in (tuple, list) else (arg,):  # factors come as (lu, piv) pairs
            if isinstance(x, ActiveValue):
                protocol = getattr(type(x), "__array_function__", None)
                if protocol is not None:
                    return protocol(x, f, (type(x),), args, kwargs)
    return f(*args, **kwargs)


class _Unprojected:
    """The projector of a primal that is not a NumPy value (a dual number): tangents pass as given,
    one at a time or a batch."""

    __slots__ = ()

    def __call__(self, dx):
        return dx

    def batch(self, dx):
        return dx


_UNPROJECTED = _Unprojected()


class _RealPart(_Unprojected):
    """The projector of an engine's real value (a Hessian's dual array, an outer tape's array): a
    complex tangent (an eigendecomposition's) keeps its real part, as ``ProjectTo`` of a real array's."""

    __slots__ = ()

    def __call__(self, dx):
        return np.real(dx) if np.iscomplexobj(dx) else dx

    batch = __call__


_REAL_PART = _RealPart()


class _OfSequence(_Unprojected):
    """The projector of a (nested) list or tuple that NumPy takes as an array: its tangents
    structural (``Tangent[list]``), as an engine splits them."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __call__(self, dx):
        return match_input(self.x, unthunk(dx))

    def batch(self, dx):
        return match_input_batch(self.x, unthunk(dx))


def projector(x):
    """``ProjectTo(x)`` for arrays and numbers; an engine's value (a dual array) keeps a real
    tangent real and is otherwise left alone. ``projector(x).batch`` projects a batch of
    cotangents (a leading batch axis)."""
    if isinstance(x, (np.ndarray, np.generic, int, float, complex)):
        return ProjectTo(x)
    if isinstance(x, (list, tuple)):
        return _OfSequence(x)
    if getattr(getattr(x, "dtype", None), "kind", None) == "f":
        return _REAL_PART
    return _UNPROJECTED


# ----- BLAS and LAPACK ---------------------------------------------------------------------


@functools.cache
def blas(name: str, dtype: np.dtype):
    return getattr(_blas, _CHARS[np.dtype(dtype)] + name)


@functools.cache
def lapack(name: str, dtype: np.dtype):
    return getattr(_lapack, _CHARS[np.dtype(dtype)] + name)


def _column_major(x, op: str):
    """``(array, op')`` with ``array`` Fortran-ordered and ``op'(array) == op(x)``, copying only if needed."""
    if op == "C" and x.dtype.kind != "c":
        op = "T"
    if x.flags.f_contiguous:
        return x, op
    if x.flags.c_contiguous:
        if op == "N":
            return x.T, "T"
        if op == "T":
            return x.T, "N"
        return np.conj(x.T), "N"
    return np.asfortranarray(x), op


def _op(x, op: str):
    if op == "N":
        return x
    return mH(x) if op == "C" else mT(x)


def mm(a, b, op_a: str = "N", op_b: str = "N", alpha: float = 1.0):
    """``alpha * op_a(a) @ op_b(b)`` with ``op`` one of ``"N"``, ``"T"``, ``"C"`` (conjugate transpose).

    Plain matrices go to SciPy's GEMM without layout copies, and a batch of matrices against a
    single one is one tall GEMM; anything else goes through ``np.matmul``.
    """
    if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype and a.dtype in _CHARS:
        if a.ndim == 2 and b.ndim == 2:
            return _gemm(a, b, op_a, op_b, alpha)
        if a.ndim == 3 and b.ndim == 2 and op_a == "N":
            batch, m, k = a.shape
            return _gemm(np.ascontiguousarray(a).reshape(batch * m, k), b, "N", op_b, alpha).reshape(batch, m, -1)
        if a.ndim == 2 and b.ndim == 3 and op_b == "N" and op_a != "C":
            # (op(a) b_i)^T = b_i^T op(a)^T: the batch stacked as rows of one GEMM
            flipped = "T" if op_a == "N" else "N"
            return mT(mm(np.ascontiguousarray(mT(b)), a, "N", flipped, alpha))
    out = np.matmul(_op(a, op_a), _op(b, op_b))
    return out if alpha == 1.0 else alpha * out


def _gemm(a, b, op_a, op_b, alpha=1.0):
    m = a.shape[1] if op_a != "N" else a.shape[0]
    n = b.shape[0] if op_b != "N" else b.shape[1]
    k = a.shape[0] if op_a != "N" else a.shape[1]
    if m == 0 or n == 0 or k == 0:
        return np.zeros((m, n), dtype=a.dtype)
    fa, oa = _column_major(a, op_a)
    fb, ob = _column_major(b, op_b)
    return blas("gemm", a.dtype)(alpha, fa, fb, trans_a=_OPS[oa], trans_b=_OPS[ob])


def hermitian_product(v, weights, lower: bool):
    """One triangle of ``v @ diag(weights) @ v^H`` (real ``weights``), the other triangle zero.

    Two rank-k updates (SYRK/HERK) on the columns with positive and negative weights: half the
    flops of a GEMM, and the triangle is what the fold onto a triangular argument needs.
    """
    if not is_plain(v) or v.ndim != 2:
        full = np.matmul(v * weights[..., None, :], mH(v))
        return np.tril(full) if lower else np.triu(full)
    herk = blas("herk" if np.iscomplexobj(v) else "syrk", v.dtype)
    roots = np.sqrt(np.abs(weights)).astype(v.real.dtype)
    out = None
    for mask, sign in ((weights > 0, 1.0), (weights < 0, -1.0)):
        if not mask.any():
            continue
        part = np.asfortranarray(v[:, mask] * roots[mask])
        out = herk(sign, part, lower=int(lower)) if out is None else herk(sign, part, beta=1.0, c=out, lower=int(lower))
    if out is None:
        return np.zeros((v.shape[0], v.shape[0]), dtype=v.dtype)
    return out


class LU:
    """``A = P L U`` computed once by LAPACK's GETRF; solves with ``A``, ``A^T`` or ``A^H``.

    LAPACK works on column-major storage, and the column-major storage of a C-ordered ``A`` is
    ``A^T``: that is what gets factorized (the copy GETRF overwrites is then a plain memory copy,
    not a transposition), and every solve flips its operation. For an ``A`` that is not a plain
    matrix, ``solve`` calls ``np.linalg.solve`` instead.
    """

    __slots__ = ("a", "lu", "piv", "singular", "lapack", "transposed")

    def __init__(self, a):
        self.a = a
        self.lapack = is_plain(a) and a.ndim == 2
        self.lu = self.piv = None
        self.singular = self.transposed = False
        if self.lapack:
            self.transposed = a.flags.c_contiguous and not a.flags.f_contiguous
            self.lu, self.piv, info = lapack("getrf", a.dtype)(a.T if self.transposed else a)
            self.singular = info > 0

    def check(self, name: str):
        if self.singular:
            raise np.linalg.LinAlgError(f"{name}: singular matrix")

    def solve(self, b, op: str = "N", batched: bool = False, vector: bool | None = None):
        """``op(A)^{-1} b`` for ``b`` of shape (n,) or (n, k), or either with a leading batch axis
        (``vector``: see ``generic_solve``)."""
        b = plain(b)  # (a block of unit tangents or cotangents: its values)
        if not self.lapack or not is_plain(b):
            return generic_solve(_op(self.a, op), b, batched, vector)
        return _columns(b, batched, lambda cols: self._solve_columns(cols, op))

    def _solve_columns(self, b, op):
        dtype = self.a.dtype
        if np.iscomplexobj(b) and not self.is_complex:  # a complex right-hand side for a real matrix
            return self._solve_columns(b.real, op) + 1j * self._solve_columns(b.imag, op)
        b = b.astype(dtype, copy=False)
        if not self.is_complex and op == "C":
            op = "T"
        if self.transposed:  # the factors are those of F = A^T: A = F^T, A^T = F, A^H = conj(F)
            if op == "C":
                return np.conj(self._getrs(np.conj(b), 0))
            return self._getrs(b, 0 if op == "T" else 1)
        return self._getrs(b, _OPS[op])

    def _getrs(self, b, code):
        x, info = lapack("getrs", self.a.dtype)(self.lu, self.piv, b, trans=code)
        return x

    @property
    def is_complex(self) -> bool:
        return np.iscomplexobj(self.a)

    def diagonal(self):
        return np.diagonal(self.lu)

    def parity(self) -> int:
        """+1 or -1: the sign of the row permutation."""
        swaps = np.count_nonzero(self.piv != np.arange(self.piv.size))
        return -1 if swaps % 2 else 1

    def det(self):
        return self.parity() * np.prod(self.diagonal())

    def slogdet(self):
        d = self.diagonal()
        absd = np.abs(d)
        if self.is_complex:
            sign = self.parity() * np.prod(d / np.where(absd == 0, 1, absd))
        else:
            sign = self.parity() * np.prod(np.sign(d))
        with np.errstate(divide="ignore"):
            logabs = np.sum(np.log(absd))
        if self.singular:
            sign = sign * 0
        return sign, logabs

    def inv(self):
        """``A^{-1}`` from the factors (GETRI)."""
        if not self.lapack:
            return np.linalg.inv(self.a)
        inv, info = lapack("getri", self.a.dtype)(self.lu, self.piv)
        return inv.T if self.transposed else inv  # inv(A^T) = inv(A)^T


def generic_solve(a, b, batched: bool = False, vector: bool | None = None):
    """``a^{-1} b`` with NumPy for (stacks of) matrices ``a``; ``b`` holds vectors (one per matrix)
    or matrices as ``vector`` says, which a caller that knows passes: by default, vectors when ``b``
    has one axis fewer than ``a`` (after a leading batch axis), which cannot tell a stack of
    vectors from one matrix of right-hand sides broadcast against the stack."""
    if vector is None:
        vector = np.ndim(b) - batched == np.ndim(a) - 1
    b = plain(b)
    if batched and type(a) is np.ndarray and type(b) is np.ndarray:
        return _solve_batch_as_columns(a, b, vector)
    if vector:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _solve_batch_as_columns(a, b, vector: bool):
    """``a^{-1} b`` for a batch ``b`` of right-hand sides (a leading batch axis): the batch goes
    in as more columns, so that each matrix of ``a`` is factorized once, not once per row."""
    cols = b[..., None] if vector else b  # (B, *stack, n, k)
    batch, n, k = cols.shape[0], cols.shape[-2], cols.shape[-1]
    stack = np.broadcast_shapes(a.shape[:-2], cols.shape[1:-2])
    if cols.ndim - 3 < len(stack):  # stack axes that only `a` has: placed after the batch axis
        cols = np.reshape(cols, (batch,) + (1,) * (len(stack) - cols.ndim + 3) + cols.shape[1:])
    cols = np.moveaxis(np.broadcast_to(cols, (batch, *stack, n, k)), 0, -2)  # (*stack, n, B, k)
    x = np.linalg.solve(a, np.reshape(cols, (*stack, n, batch * k)))
    x = np.moveaxis(np.reshape(x, (*stack, n, batch, k)), -2, 0)
    return x[..., 0] if vector else x


def _columns(b, batched: bool, solve):
    """Apply ``solve`` (a function of an (n, k) matrix) to ``b`` of shape (n,), (n, k), or batched
    (B, n), or to a stack of matrices (..., n, k) (with or without a batch axis in front), as one
    call with all right-hand sides side by side."""
    if b.ndim <= 2 and not batched:
        return solve(b)
    if b.ndim == 2:  # (B, n): the columns of b.T
        return solve(np.ascontiguousarray(b.T)).T
    cols = np.moveaxis(b, -2, 0)  # (n, ..., k)
    return np.moveaxis(np.reshape(solve(np.reshape(cols, (cols.shape[0], -1))), cols.shape), 0, -2)


def triangular_solve(t, b, lower: bool, op: str = "N", side: str = "left", unit: bool = False, batched: bool = False):
    """``op(t)^{-1} b`` (``side="left"``) or ``b op(t)^{-1}`` (``side="right"``) for a triangular ``t``
    with SciPy's TRSM; ``b`` may carry a leading batch axis (``batched``), solved as one call."""
    b = plain(b)
    if is_plain(t, b) and t.ndim == 2 and b.ndim == 2 + batched and t.dtype == b.dtype:
        if t.shape[0] == 0 or b.size == 0:
            return np.zeros(b.shape, dtype=b.dtype)
        if batched and side == "left":
            return _columns(b, True, lambda cols: triangular_solve(t, cols, lower, op, side, unit))
        if batched:  # the rows of every batch element stacked
            return triangular_solve(t, b.reshape(-1, b.shape[-1]), lower, op, side, unit).reshape(b.shape)
        trsm = blas("trsm", t.dtype)
        code = _OPS[op] if np.iscomplexobj(t) else min(_OPS[op], 1)
        return trsm(
            1.0, np.asfortranarray(t), b, side=int(side == "right"), lower=int(lower), trans_a=code, diag=int(unit)
        )
    return numpy_triangular_solve(t, b, lower, op, side, unit, batched)


def numpy_triangular_solve(t, b, lower, op="N", side="left", unit=False, batched=False):
    """``triangular_solve`` with NumPy only: NumPy has no triangular solver, so a general solve."""
    tri = np.tril(t) if lower else np.triu(t)
    if unit:
        n = np.shape(t)[-1]
        tri = tri - diag_embed(diagonal(tri)) + np.eye(n, dtype=tri.dtype)
    tri = _op(tri, op)
    if side == "left":
        return np.linalg.solve(tri, b)
    return mT(np.linalg.solve(mT(tri), mT(b)))


def numpy_mul(a, b, op_a: str = "N", op_b: str = "N"):
    return np.matmul(_op(a, op_a), _op(b, op_b))


def scipy_solve(a, b):
    """``a^{-1} b`` by LU (GETRF/GETRS) for one plain matrix, ``np.linalg.solve`` otherwise."""
    if is_plain(a, b) and a.ndim == 2 and b.ndim in (1, 2) and a.dtype == b.dtype:
        lu = LU(a)
        lu.check("solve")
        return lu.solve(b)
    return np.linalg.solve(a, b)


def numpy_solve_batch(a, b):
    """``a^{-1} b`` for a batch of matrices ``b`` (a leading batch axis) with NumPy, each matrix of
    ``a`` factorized once."""
    return generic_solve(a, b, batched=True)


def scipy_solve_batch(a, b):
    """``numpy_solve_batch`` by one LU (GETRF/GETRS) for one plain matrix ``a``."""
    if is_plain(a) and a.ndim == 2:
        lu = LU(a)
        lu.check("solve")
        return lu.solve(b, batched=True)
    return generic_solve(a, b, batched=True)


class Ops:
    """The matrix operations a rule computes with, all from one library (one BLAS thread pool).

    ``solve_batch(a, b)`` solves for a batch of matrices ``b`` (a leading batch axis) and
    ``trisolve(..., batched=True)`` for a batch of right-hand sides, factorizing ``a`` once."""

    __slots__ = ("name", "mul", "solve", "trisolve", "solve_batch")

    def __init__(self, name, mul, solve, trisolve, solve_batch):
        self.name, self.mul, self.solve, self.trisolve, self.solve_batch = name, mul, solve, trisolve, solve_batch

    def __repr__(self) -> str:
        return f"Ops({self.name})"


NUMPY = Ops("numpy", numpy_mul, np.linalg.solve, numpy_triangular_solve, numpy_solve_batch)
SCIPY = Ops("scipy", mm, scipy_solve, triangular_solve, scipy_solve_batch)


# ----- symmetric and Hermitian arguments read from one triangle ---------------------------


def hermitian_from_triangle(a, lower: bool):
    """The Hermitian matrix LAPACK sees when it reads only one triangle of ``a``.

    The other triangle is the conjugate transpose of the one read, and the diagonal of a
    complex matrix is taken real.
    """
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    d = diagonal(a)
    if np.iscomplexobj(a):
        d = d.real
    return tri + mH(tri) + diag_embed(d).astype(tri.dtype, copy=False)


def fold_onto_triangle(g, lower: bool):
    """The cotangent of ``a`` from the cotangent ``g`` of ``hermitian_from_triangle(a, lower)``.

    The derivative of a function that reads one triangle lives in that triangle. For every
    symmetric (Hermitian) direction it agrees with the symmetric gradient ``(g + g^H) / 2`` that
    JAX and PyTorch return, and unlike it it also matches finite differences in every direction.
    """
    s = g + mH(g)
    tri = np.tril(s, -1) if lower else np.triu(s, 1)
    d = diagonal(g)
    if np.iscomplexobj(g):
        d = d.real
    return tri + diag_embed(d).astype(tri.dtype, copy=False)


def fold_triangle_of_hermitian(t, lower: bool):
    """``fold_onto_triangle`` for a Hermitian ``g`` given by one triangle ``t`` (the other zero)."""
    out = 2 * t
    idx = np.arange(t.shape[-1])
    d = t[..., idx, idx]
    out[..., idx, idx] = d.real if np.iscomplexobj(t) else d
    return out


# ----- tangents ----------------------------------------------------------------------------


def is_zero(t) -> bool:
    return isinstance(t, AbstractZero)


def parts(dy, fields):
    """The components of a cotangent of a tuple or namedtuple output, unthunked, zeros filled in.

    ``fields`` is the namedtuple's field names or the tuple's length.
    """
    dy = unthunk(dy)
    n = fields if isinstance(fields, int) else len(fields)
    if isinstance(dy, AbstractZero):
        return (ZERO,) * n
    if isinstance(dy, Tangent):
        backing = dy.backing
        if isinstance(backing, tuple):
            items = backing
        elif isinstance(fields, int):
            raise TypeError(f"a {type(dy).__name__} is not a cotangent of a {n}-tuple")
        else:
            items = tuple(backing.get(name, ZERO) for name in fields)
    elif isinstance(dy, (tuple, list)):
        items = tuple(dy)
    else:
        raise TypeError(f"expected a cotangent of a {n}-tuple, got a {type(dy).__name__}")
    if len(items) != n:
        raise ValueError(f"expected a cotangent with {n} components, got {len(items)}")
    return tuple(unthunk(t) for t in items)


def tangent_of(y, *components):
    """The structural tangent of a tuple or namedtuple output ``y``; all zeros give ``ZeroTangent``."""
    if all(isinstance(c, AbstractZero) for c in components):
        return ZERO
    return Tangent[type(y)](*components)


def plain(dy):
    """A batch of cotangents as an ordinary ndarray: a structured seed (``BasisSeed``, an ndarray
    subclass) is viewed as its values, which LAPACK and SciPy's BLAS take; anything else (an
    engine's dual numbers among them) passes as it is."""
    return dy.view(np.ndarray) if type(dy) is BasisSeed else dy


def parts_carry_batch(y, items) -> bool:
    """Whether the components ``items`` of a cotangent of the tuple output ``y`` (as ``parts``
    gives them) carry a leading batch axis: its first component that is not a zero does."""
    for yi, di in zip(y, items):
        if not isinstance(di, AbstractZero):
            return carries_batch(yi, di)
    return False


def by_rows(pullback, dy):
    """``pullback`` called on each row of the batch ``dy`` of array cotangents, its results
    stacked position by position (zeros stay zeros): for the steps LAPACK takes one right-hand
    side matrix at a time, with the factors the pullback closes over reused for every row."""
    rows = [pullback(row) for row in plain(dy)]
    return tuple(_stack_rows([r[i] for r in rows]) for i in range(len(rows[0])))


def _stack_rows(items: list):
    items = [unthunk(t) for t in items]
    first = next((t for t in items if not isinstance(t, AbstractZero)), None)
    if first is None:
        return items[0]
    return np.stack([np.zeros_like(first) if isinstance(t, AbstractZero) else t for t in items])


class MatrixStack:
    """A matrix function of each matrix of a stack ``a`` of shape ``(..., n, n)``, one matrix at a
    time as SciPy computes it (each picks its own algorithm: a Padé degree, a number of square
    roots): ``make(matrix)`` keeps one matrix's work, an object with the ``value`` and the
    derivative methods the rule calls, and ``map`` calls one on the matching matrices of a
    tangent's stack. A single matrix is the stack of shape ``()``.

    >>> import numpy as np
    >>> class Square:
    ...     def __init__(self, m):
    ...         self.m, self.value = m, m @ m
    ...     def derivative(self, e):
    ...         return self.m @ e + e @ self.m
    >>> s = MatrixStack(Square, np.stack([np.eye(2), 2 * np.eye(2)]))
    >>> s.value[1]
    array([[4., 0.],
           [0., 4.]])
    >>> s.map("derivative", np.ones((3, 2, 2, 2))).shape  # three tangents of the stack
    (3, 2, 2, 2)
    """

    def __init__(self, make, a):
        self.shape = np.shape(a)[:-2]
        self.items = [make(a[i]) for i in np.ndindex(self.shape)]
        self.value = self._stacked([item.value for item in self.items], a)

    def map(self, method: str, e, **kwargs):
        """``item.method(e_i, **kwargs)`` for the matrices ``e_i`` of the stack ``e``, the results
        stacked as ``e``; a leading batch axis of ``e`` (a batch of tangents) stays on every ``e_i``."""
        lead = (slice(None),) * (np.ndim(e) - len(self.shape) - 2)
        results = [getattr(item, method)(e[lead + i], **kwargs) for item, i in zip(self.items, np.ndindex(self.shape))]
        return self._stacked(results, e)

    def _stacked(self, results: list, like):
        if not results:  # an empty stack: nothing to compute
            return np.zeros(np.shape(like), float_dtype(like))
        if not self.shape:
            return results[0]
        lead = np.ndim(like) - len(self.shape) - 2
        out = np.stack(results, axis=lead)
        return out.reshape(out.shape[:lead] + self.shape + out.shape[lead + 1 :])


def is_batched(dx, x) -> bool:
    """Whether the tangent ``dx`` carries a leading batch axis relative to its primal ``x``."""
    return not isinstance(dx, AbstractZero) and np.ndim(dx) == np.ndim(x) + 1


def batch_size(tangents, primals) -> int | None:
    """The common batch size of batched tangents, or None when no tangent is batched."""
    size = None
    for dx, x in zip(tangents, primals):
        if is_batched(dx, x):
            if size is not None and np.shape(dx)[0] != size:
                raise ValueError(f"batched tangents disagree on the batch size: {size} and {np.shape(dx)[0]}")
            size = np.shape(dx)[0]
    return size


def with_batch(dx, x, batch: int | None):
    """``dx`` with a leading batch axis (a zero or an unbatched tangent is broadcast)."""
    if batch is None or is_batched(dx, x):
        return dx
    if isinstance(dx, AbstractZero):
        return dx
    return np.broadcast_to(dx, (batch,) + np.shape(dx))


def options(name: str, rest: tuple, kwargs: dict, defaults: tuple[tuple[str, object], ...]) -> dict:
    """The optional arguments of a call ``f(x, *rest, **kwargs)`` by name, with their defaults."""
    if len(rest) > len(defaults):
        raise TypeError(f"{name} takes at most {len(defaults) + 1} positional arguments, got {len(rest) + 1}")
    values = dict(defaults)
    values.update(zip((k for k, _ in defaults), rest))
    for key, value in kwargs.items():
        if key not in values:
            raise TypeError(f"{name} got an unexpected keyword argument {key!r}")
        values[key] = value
    return values


def no_rule(name: str, args: tuple, reason: str) -> NoRuleError:
    """The refusal of a call of the public function ``name`` (``"scipy.linalg.eigh"``), given
    ``args``, with an option or a shape its rule does not differentiate (which the library itself
    takes), at the user's line; an invalid one stays the library's own ``ValueError``.

    >>> import numpy as np
    >>> str(no_rule("numpy.linalg.qr", (np.eye(2),), "mode='raw'")).splitlines()[0]
    "no differentiation rule for numpy.linalg.qr(numpy.ndarray) at <doctest ...>:1 (mode='raw')."
    """
    module, _, short = name.rpartition(".")
    return option_refused(getattr(sys.modules[module], short), args, reason)


def _repeated(w, scale=None):
    """``(close, gaps)``: ``gaps[..., i, j] = w[j] - w[i]``, and the mask of the pairs (the diagonal
    among them) closer than ``n * eps * scale``, by default ``max |w|``: one repeated value."""
    w = as_array(w)  # dual numbers pass through, for Hessians
    gaps = w[..., None, :] - w[..., :, None]
    if scale is None:
        scale = np.max(np.abs(w), axis=-1, keepdims=True)[..., None] if w.size else 1.0
    eps = np.finfo(w.real.dtype).eps
    return np.abs(gaps) <= max(w.shape[-1], 1) * eps * scale, gaps


def gap_inverse(w, scale=None):
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, and 0 where the gap is at rounding level.

    Eigenvalues (or singular values) closer than ``n * eps * scale`` are treated as one repeated
    value: their eigenvectors have no derivative, and the rotation inside their common eigenspace
    is left out (``Repeated`` warns where a cotangent or a tangent has a part there).
    """
    degenerate, gaps = _repeated(w, scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(degenerate, 0, 1 / np.where(degenerate, 1, gaps))


def singular_gap_inverses(s):
    """``(cu, cv)``, the weights by which the pair ``i, j`` of singular values of
    ``a = U diag(s) V^H`` rotates ``U`` and ``V``: ``cu[i, j] = s_j / (s_j^2 - s_i^2)``,
    ``cv[i, j] = s_i / (s_j^2 - s_i^2)``, taken as ``(1/(s_j - s_i) + 1/(s_j + s_i)) / 2`` and
    ``(1/(s_j - s_i) - 1/(s_j + s_i)) / 2``. Where ``s_i`` and ``s_j`` repeat, only the first
    part has no value (``gap_inverse`` drops it); the second, which turns ``U`` against ``V`` (the
    polar factor ``U V^H``), is kept. Zero on the diagonal and between two zero singular values.
    """
    s = as_array(s)
    minus = gap_inverse(s)
    sums = s[..., None, :] + s[..., :, None]
    none = (sums == 0) | np.eye(s.shape[-1], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        plus = np.where(none, 0, 1 / np.where(none, 1, sums))
    return (minus + plus) / 2, (minus - plus) / 2


#: for each kind of decomposition: its vectors, values and subspaces, and what stays exact where
#: its values repeat
_SPECTRA = {
    "eigh": (
        "eigenvectors",
        "eigenvalues",
        "eigenspace",
        "Still exact: functions of the eigenvalues symmetric in the repeated ones, projectors onto a whole "
        "eigenspace. Not exact: matrix functions V f(w) V^H miss f'(w) within the eigenspace (the rules of "
        "scipy.linalg.sqrtm, expm and logm are exact there).",
    ),
    "eig": (
        "eigenvectors",
        "eigenvalues",
        "eigenspace",
        "Still exact: functions of the eigenvalues symmetric in the repeated ones, spectral projectors onto a "
        "whole eigenspace. Not exact: matrix functions V f(w) V^-1 miss f'(w) within the eigenspace (the rules "
        "of scipy.linalg.expm, logm and sqrtm and numpy.linalg.matrix_power are exact there).",
    ),
    "svd": (
        "singular vectors",
        "singular values",
        "singular subspace",
        "Still exact: functions of the singular values symmetric in the repeated ones, the polar factor U @ Vh, "
        "projectors onto a whole singular subspace. Not exact: U f(s) Vh misses f'(s) within the subspace (the "
        "rules of scipy.linalg.polar and numpy.linalg.pinv are exact there).",
    ),
}


class Repeated:
    """The repeated values ``w`` (as ``gap_inverse`` judges them) of one decomposition ``name``
    (``"numpy.linalg.eigh"``) of the kind ``spectrum`` (``"eigh"``, ``"eig"``, ``"svd"``), and the
    user's line of its call, found while the rule's primal runs: the vectors of repeated values have
    no derivative, and the rules leave their rotation within the eigenspace out, which ``check``
    reports with a ``NonSmoothWarning``. Nothing is looked up where no value repeats.
    """

    def __init__(self, name: str, spectrum: str, w):
        off = ~np.eye(np.shape(w)[-1], dtype=bool)
        pairs = _repeated(stood_for(w))[0] & off
        self.pairs = pairs if np.any(pairs) else None
        self.name, self.spectrum = name, spectrum
        self.location = None
        if self.pairs is not None:
            self.location = user_location()
            # a cotangent's columns of the repeated values' vectors, their own entries left out
            self.vectors = np.any(pairs, axis=-2, keepdims=True) & off

    def check(self, m, tangent: bool = False, columns=slice(None), whole=None) -> None:
        """Warn where ``m``, the vectors' cotangent (or, ``tangent``, the direction) in their own
        basis, exceeds rounding (relative to the largest entry of its matrix, or of ``whole`` where
        ``m`` is a part of it; a leading batch axis broadcasts) at entries the derivative needs:

        - a direction's entries between two repeated values (in the ``columns`` of the vectors
          computed), which the tangent of the vectors cannot follow;
        - a cotangent's entries of the vectors of repeated values (their columns, off the
          diagonal). No cotangent tells a function of the eigenspace alone (exact) from a matrix
          function ``V f(w) V^H`` (which misses ``f'``), so whether these vectors receive one at all
          is what decides; a function of the eigenvalues, or of other vectors only, gives none.
        """
        if self.pairs is None or is_zero(m):
            return
        m = np.abs(stood_for(m))
        whole = m if whole is None else np.abs(stood_for(whole))
        tol = np.sqrt(np.finfo(m.dtype).eps) * np.max(whole, axis=(-2, -1), keepdims=True)
        needed = self.pairs[..., columns] if tangent else self.vectors
        if not np.any(needed & (m[..., columns] > tol)):
            return
        vectors, values, space, advice = _SPECTRA[self.spectrum]
        where = f"{self.name} at {self.location}" if self.location else self.name
        what = (
            f"the direction rotates them within their {space}, which their tangent leaves out (the other "
            f"{vectors}' tangents are exact)"
            if tangent
            else f"they receive a cotangent: the derivative leaves out their rotation within their {space}"
        )
        message = f"{where}: the {vectors} of repeated {values} have no derivative, and {what}. {advice}"
        warn_at(NonSmoothWarning(message), self.location)
