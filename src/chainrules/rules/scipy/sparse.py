"""Rules for ``scipy.sparse``: a sparse matrix times a dense array, and sparse solves.

The products ``A @ x``, ``A.dot(x)``, ``x @ A`` and, for the ``spmatrix`` classes, ``A * x`` and
``x * A`` (matrix products there; for ``sparray`` they are elementwise, with a sparse result, and
have no rule): the tangent of ``A @ x`` is ``dA @ x + A @ dx``, the cotangent of ``x`` is
``A^H @ dy`` and that of ``A`` is ``dy x^H`` on ``A``'s pattern (a sparse matrix's tangent is one
on its pattern: see ``chainrules.core.sparse``), computed entry by entry, never densified, and
only where ``A`` is differentiated (a thunk).

``scipy.sparse.linalg.spsolve(A, b)`` factorizes ``A`` once with SuperLU (``splu``), solves
with the factors, and its pullback solves ``A^H db = dx`` with the same factors (Giles 2008, "An
extended collection of matrix derivative results", section 2.3.1: for ``x = A^-1 b``,
``b̄ = A^-H x̄``, ``Ā = -b̄ x^H``, here on ``A``'s pattern). A factorization the user made is
reused the same way: ``splu(A).solve(b)`` and ``factorized(A)(b)`` (which is
``splu(A).solve``) have the rule of ``SuperLU.solve``.

A call without a rule whose sparse result depends on the values being differentiated
(``sparray * x``, ``sp.kron``) is refused.

Every pullback takes a batch of cotangents (a leading batch axis; the sparse matrix's are a list)
and every forward rule a batch of tangents (the sparse matrix's a list), pushed through the
sparse matrix (or its factors) as the columns of one block.
Engine values (dual numbers: ``cr.hessian``, forward mode) are multiplied on the left of the
sparse matrix, where their own ``@`` reaches these rules again, and solved through the forward
rule of ``SuperLU.solve`` (``through_rules``).

>>> import numpy as np, scipy.sparse as sp, chainrules as cr
>>> A = sp.csr_array(np.array([[2.0, 1.0], [0.0, 3.0]]))
>>> y, back = cr.rrule(A.dot, np.array([1.0, 1.0]))
>>> y, back(np.array([1.0, 0.0]))[1]  # A^T e_1
(array([3., 3.]), array([2., 1.]))
"""

from __future__ import annotations

import operator

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ...core import AbstractZero, Thunk, frule, rrule, unthunk
from ...core.errors import option_refused
from ...core.sparse import SparsePattern
from ..numpy._arrays import ArrayLike
from ._lapack import NO, ZERO, _stack_rows, is_active, mT, options, plain, projector, through_rules

# (imported with the rule set, not deferred until SciPy's sparse module is: rules typed on sparse classes for
# operators that have rules already would not be loaded by a lookup, which loads deferred rules only for a
# callable without any)
_SPARSE = (sp.sparray, sp.spmatrix)
_FORMATS = ("bsr", "coo", "csc", "csr", "dia", "dok", "lil")
_CLASSES = [getattr(sp, f"{fmt}_{kind}") for fmt in _FORMATS for kind in ("array", "matrix")]
_SOLVE = spla.SuperLU.solve


# ----- products with a constant sparse matrix ----------------------------------------------


def _operand_ndim(f, A, x) -> int:
    """The number of axes of the dense operand ``x`` of a product with the sparse matrix ``A``: 1
    or 2 (a scalar scales the matrix, a sparse result these rules do not differentiate)."""
    if np.ndim(A) != 2 or np.ndim(x) not in (1, 2):
        raise option_refused(
            f,
            (A, x),
            "the rules take a 2-d sparse matrix times a dense vector or matrix; a sparse result "
            "(a scaled or elementwise product) does not carry derivatives",
        )
    return np.ndim(x)


def _rows_times(v, M):
    """``v @ M`` over ``v``'s last axis, whatever its leading axes (a batch, a matrix's rows).
    The dense operand is on the left, so an engine's array (a dual) computes it with its own ``@``,
    which reaches the rule for ``x @ A`` again."""
    shape = np.shape(v)
    if len(shape) <= 2:
        return plain(v) @ M
    return np.reshape(np.reshape(v, (-1, shape[-1])) @ M, (*shape[:-1], M.shape[1]))


def _times(A, v, ndim: int):
    """``A @ v`` for ``v`` of ``ndim`` axes or a batch of them (one more, leading)."""
    if type(v) is np.ndarray and v.ndim == ndim:
        return A @ v
    if ndim == 1:  # rows of a batch: (A v)^T = v^T A^T
        return _rows_times(v, A.T)
    return mT(_rows_times(mT(v), A.T))


def _adjoint(A):
    """``A^H``, a transposed view of the compressed formats (conjugated only where complex)."""
    return A.conj().T if np.iscomplexobj(A) else A.T


def _on_pattern(A, dy, x, left: bool = False):
    """The cotangent of the sparse matrix ``A`` of ``y = A @ x``, ``dy x^H`` (``x^H dy`` of
    ``y = x @ A`` where ``left``), with ``x`` a vector or a matrix (its columns summed over),
    computed on ``A``'s pattern entry by entry, never densified; for a batch of ``dy`` (a leading
    axis), a list of them (see ``core.sparse``)."""
    pattern = SparsePattern(A)
    if np.ndim(dy) > np.ndim(x):
        return [_on_pattern_of(pattern, row, x, left) for row in plain(dy)]
    return _on_pattern_of(pattern, plain(dy), x, left)


def _on_pattern_of(pattern, dy, x, left: bool):
    # entry k at (r, c) is sum_j a[r, j] b[c, j]
    a, b = (np.conj(x).T, dy.T) if left else (dy, np.conj(x))
    if np.ndim(a) == 1:
        return pattern.tangent(a[pattern.rows] * b[pattern.cols])
    return pattern.tangent(np.einsum("kj,kj->k", a[pattern.rows], b[pattern.cols]))


def _tangent_term(dA, x, product):
    """``product(dA, x)`` for the tangent ``dA`` of a sparse matrix, a zero, or a batch of them
    (a list: the terms stacked)."""
    if isinstance(dA, list):
        return _stack_rows([_tangent_term(d, x, product) for d in dA])
    dA = unthunk(dA)
    return dA if isinstance(dA, AbstractZero) else product(dA, x)


def _negated(t):
    """``-t`` for a tangent, a zero, or a batch of sparse tangents (a list)."""
    return [_negated(d) for d in t] if isinstance(t, list) else t if isinstance(t, AbstractZero) else -t


def _plus(a, b):
    """The sum of two output tangents, either a zero (a batch's term broadcast against one tangent)."""
    if isinstance(a, AbstractZero):
        return b
    return a if isinstance(b, AbstractZero) else a + b


def _project(x, dx):
    project = projector(x)
    return project.batch(dx) if np.ndim(dx) == np.ndim(x) + 1 else project(dx)


def _sparse_times_rrule(f, A, x):
    """``(y, pullback)`` of ``y = A @ x``: ``dx = A^H @ dy``, ``dA = dy x^H`` on ``A``'s pattern
    (a thunk: a constant ``A``'s is never computed)."""
    ndim = _operand_ndim(f, A, x)
    y = A @ x if type(x) is np.ndarray else _times(A, x, ndim)

    def sparse_times_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, ZERO, ZERO
        return NO, Thunk(lambda: _on_pattern(A, dy, x)), _project(x, _times(_adjoint(A), dy, np.ndim(y)))

    return y, sparse_times_pullback


def _times_sparse_rrule(f, x, A):
    """``(y, pullback)`` of ``y = x @ A``: ``dx = dy @ A^H``, ``dA = x^H dy`` on ``A``'s pattern."""
    _operand_ndim(f, A, x)
    y = x @ A if type(x) is np.ndarray else _rows_times(x, A)

    def times_sparse_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, ZERO, ZERO
        return NO, _project(x, _rows_times(dy, _adjoint(A))), Thunk(lambda: _on_pattern(A, dy, x, left=True))

    return y, times_sparse_pullback


def _sparse_times_frule(f, tangents, A, x):
    ndim = _operand_ndim(f, A, x)
    y = A @ x if type(x) is np.ndarray else _times(A, x, ndim)
    dx = unthunk(tangents[2])
    dy = dx if isinstance(dx, AbstractZero) else _times(A, dx, ndim)
    return y, _plus(dy, _tangent_term(tangents[1], x, lambda dA, x: _times(dA, x, ndim)))


def _times_sparse_frule(f, tangents, x, A):
    _operand_ndim(f, A, x)
    y = x @ A if type(x) is np.ndarray else _rows_times(x, A)
    dx = unthunk(tangents[1])
    dy = dx if isinstance(dx, AbstractZero) else _rows_times(dx, A)
    return y, _plus(dy, _tangent_term(tangents[2], x, lambda dA, x: _rows_times(x, dA)))


def _register_products(f, sparse_first: bool, types: tuple = ()) -> None:
    """Rules for ``f(A, x)`` (``A @ x``: ``A.__matmul__``, ``A.dot``) or, where ``sparse_first``
    is false, ``f(x, A)`` (``x @ A``)."""
    if sparse_first:

        def rrule_sparse_times(A, x):
            return _sparse_times_rrule(f, A, x)

        def frule_sparse_times(tangents, A, x):
            return _sparse_times_frule(f, tangents, A, x)

        rules = rrule_sparse_times, frule_sparse_times
    else:

        def rrule_times_sparse(x, A):
            return _times_sparse_rrule(f, x, A)

        def frule_times_sparse(tangents, x, A):
            return _times_sparse_frule(f, tangents, x, A)

        rules = rrule_times_sparse, frule_times_sparse
    for rule in rules if types else ():
        rule.untyped_agrees = True  # (see the registrations below)
    rrule.register(f, *types, batched=True)(rules[0])
    frule.register(f, *types, batched=True)(rules[1])


def _register_reflected(method) -> None:
    """Rules for ``A.__rmatmul__(x)`` (and spmatrix's ``A.__rmul__(x)``): ``x @ A``, the sparse
    matrix first."""

    def rrule_reflected_times(A, x):
        y, back = _times_sparse_rrule(method, x, A)

        def reflected_times_pullback(dy):
            _, dx, dA = back(dy)
            return NO, dA, dx

        return y, reflected_times_pullback

    def frule_reflected_times(tangents, A, x):
        return _times_sparse_frule(method, (tangents[0], tangents[2], tangents[1]), x, A)

    rrule.register(method, batched=True)(rrule_reflected_times)
    frule.register(method, batched=True)(frule_reflected_times)


# `A @ x` and `x @ A` (and spmatrix's `*`), as the engines see the operators: typed on the
# classes of both operands, ahead of the rules for arrays and for the user's classes' operators.
# Marked `untyped_agrees`: the operators' untyped rules reach the same rules through the sparse
# operand's methods (the rules for classes defining an operator in Python), so the source engine
# may still resolve an operator statically where an operand's type is unknown (`np.sin(x) * 0.5`
# would otherwise be dispatched at every call).
for _S in _SPARSE:
    _register_products(operator.matmul, True, (_S, ArrayLike))
    _register_products(operator.matmul, False, (ArrayLike, _S))
_register_products(operator.mul, True, (sp.spmatrix, ArrayLike))
_register_products(operator.mul, False, (ArrayLike, sp.spmatrix))


def _elementwise_refused(a, b):
    raise option_refused(
        operator.mul,
        (a, b),
        "for a sparse array (sparray), `*` is an elementwise product with a sparse result, whose entries are not "
        "differentiated; write A @ x for the matrix product, or A.multiply(x).toarray() outside the differentiation",
    )


def rrule_sparse_elementwise(a, b):
    _elementwise_refused(a, b)


def frule_sparse_elementwise(tangents, a, b):
    _elementwise_refused(a, b)


# (the untyped rule refuses it too, finding no rule for the sparse array's `__mul__`)
rrule_sparse_elementwise.untyped_agrees = frule_sparse_elementwise.untyped_agrees = True


# sparray's `*` is elementwise, with a sparse result: refused by name (forward mode would otherwise
# multiply an array of dual numbers by the sparse array as NumPy arrays)
for _types in ((sp.sparray, ArrayLike), (ArrayLike, sp.sparray)):
    rrule.register(operator.mul, *_types, batched=True)(rrule_sparse_elementwise)
    frule.register(operator.mul, *_types, batched=True)(frule_sparse_elementwise)
# the methods themselves: the calls `A.dot(x)` and `A.__matmul__(x)`, and what the tape and the
# forward engine name when a value being differentiated reaches their code
for _method in {m for cls in _CLASSES for m in (cls.__matmul__, cls.dot)} | {sp.spmatrix.__mul__}:
    _register_products(_method, True)
for _method in {cls.__rmatmul__ for cls in _CLASSES} | {sp.spmatrix.__rmul__}:
    _register_reflected(_method)


# ----- solves ------------------------------------------------------------------------------

#: the solve whose pullback a solve with ``trans`` takes: (A^-1)^H = A^-H, (A^-T)^H = conj(A)^-1
_ADJOINT = {"N": "H", "H": "N", "T": "C"}


def _lu_solve(lu, rhs, trans: str, dtype):
    """``lu.solve(rhs, trans)`` for a block of columns; ``trans='C'`` solves with ``conj(A)``.
    SuperLU takes right-hand sides of its factors' dtype only: given that ``dtype``, ``rhs`` is
    cast to it, and a complex ``rhs`` of real factors is solved as its real and imaginary parts
    (the solve is linear over C), as it is where the factors' dtype is unknown (``None``)."""
    if trans == "C":
        return np.conj(_lu_solve(lu, np.conj(rhs), "N", dtype))
    if np.iscomplexobj(rhs) and (dtype is None or dtype.kind == "f"):
        return _lu_solve(lu, rhs.real, trans, dtype) + 1j * _lu_solve(lu, rhs.imag, trans, dtype)
    return lu.solve(np.ascontiguousarray(rhs, dtype=dtype), trans)


def _solve(lu, rhs, trans: str, ndim: int, dtype=None):
    """``A^-1 rhs`` (``trans`` as SuperLU's) for ``rhs`` of ``ndim`` axes or a batch of them: a
    batch is solved as the columns of one block."""
    if np.ndim(rhs) == ndim:
        return _solve_block(lu, rhs, trans, dtype)
    if ndim == 1:  # (B, n): B columns
        return mT(_solve_block(lu, mT(rhs), trans, dtype))
    batch, n, k = np.shape(rhs)
    columns = np.reshape(np.moveaxis(rhs, 0, 1), (n, batch * k))
    return np.moveaxis(np.reshape(_solve_block(lu, columns, trans, dtype), (n, batch, k)), 1, 0)


def _solve_block(lu, rhs, trans: str, dtype):
    """An engine's array goes through the forward rule of ``SuperLU.solve``, which solves its
    tangents with the same factors."""
    if is_active(rhs):
        return through_rules(_SOLVE, lu, rhs, trans)
    return _lu_solve(lu, plain(rhs), trans, dtype)


def _user_solve(lu, b, trans: str):
    """The user's ``lu.solve(b, trans)``, by SciPy itself on a NumPy array (its own dtype checks)."""
    return _solve(lu, b, trans, np.ndim(b)) if is_active(b) else lu.solve(b, trans)


def _solve_options(rest: tuple, kwargs: dict) -> str:
    return options("SuperLU.solve", rest, kwargs, (("trans", "N"),))["trans"]


@rrule.register(_SOLVE, spla.SuperLU, ArrayLike, batched=True)
def rrule_superlu_solve(lu, b, *rest, **kwargs):
    trans = _solve_options(rest, kwargs)
    if trans not in _ADJOINT:
        raise ValueError(f"SuperLU.solve: trans must be 'N', 'T' or 'H', got {trans!r}")
    y = _user_solve(lu, b, trans)
    no_rest = (NO,) * len(rest)

    def superlu_solve_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, NO, ZERO, *no_rest
        return NO, NO, _project(b, _solve(lu, dy, _ADJOINT[trans], np.ndim(y))), *no_rest

    return y, superlu_solve_pullback


@frule.register(_SOLVE, spla.SuperLU, ArrayLike, batched=True)
def frule_superlu_solve(tangents, lu, b, *rest, **kwargs):
    trans = _solve_options(rest, kwargs)
    y = _user_solve(lu, b, trans)
    db = unthunk(tangents[2])
    return y, db if isinstance(db, AbstractZero) else _solve(lu, db, trans, np.ndim(b))


def _spsolve_setup(A, b, rest: tuple, kwargs: dict):
    """SuperLU's factors of ``A`` as ``spsolve`` would solve with them: in the dtype it computes in
    (``A``'s floating dtype promoted with ``b``'s; a complex ``b`` with a real ``A`` is solved as
    its real and imaginary parts, with real factors), and ``b`` in that dtype."""
    if np.ndim(A) != 2 or np.ndim(b) not in (1, 2):
        raise option_refused(spla.spsolve, (A, b), "the rule takes a dense vector or matrix b")
    permc_spec = options("scipy.sparse.linalg.spsolve", rest, kwargs, (("permc_spec", None), ("use_umfpack", True)))[
        "permc_spec"
    ]
    a_dtype = A.dtype if A.dtype.kind in "fc" else np.dtype(np.float64)
    b_dtype = b.dtype if b.dtype.kind in "fc" else np.dtype(np.float64)
    dtype = np.promote_types(a_dtype, b_dtype)
    factor_dtype = dtype if a_dtype.kind == "c" else np.finfo(dtype).dtype
    try:
        lu = spla.splu(sp.csc_array(A, dtype=factor_dtype), permc_spec=permc_spec)
    except RuntimeError:  # an exactly singular A: spsolve warns and returns NaN (see `_singular`)
        lu = None
    if type(b) is np.ndarray and b.dtype != dtype:
        b = b.astype(dtype)
    return lu, b, np.dtype(factor_dtype)


def _singular(A, b, rest: tuple, kwargs: dict):
    """``spsolve``'s own result for an exactly singular ``A``: it warns (``MatrixRankWarning``) and
    returns NaN, whose derivatives are NaN too."""
    return spla.spsolve(A, plain(b), *rest, **kwargs)


def _spsolve_shape(b, x):
    """``spsolve`` returns a vector for a column ``b`` of shape ``(n, 1)``."""
    return np.reshape(x, np.shape(x)[:1]) if np.ndim(b) == 2 and np.shape(b)[1] == 1 else x


@rrule.register(spla.spsolve, sp.sparray, ArrayLike, batched=True)
@rrule.register(spla.spsolve, sp.spmatrix, ArrayLike, batched=True)
def rrule_spsolve(A, b, *rest, **kwargs):
    lu, b_, dtype = _spsolve_setup(A, b, rest, kwargs)
    ndim = np.ndim(b)
    x = _singular(A, b, rest, kwargs) if lu is None else _spsolve_shape(b, _solve(lu, b_, "N", ndim, dtype))
    no_rest = (NO,) * len(rest)

    def spsolve_pullback(dx):
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return NO, NO, ZERO, *no_rest
        if np.ndim(x) < ndim:  # a column b: x is a vector, and so is each row of dx
            dx = np.reshape(dx, (*np.shape(dx), 1))
        db = np.full(np.shape(dx), np.nan, dtype) if lu is None else _solve(lu, dx, "H", ndim, dtype)
        # dA = -A^-H dx x^H = -db x^H (Giles 2008, section 2.3.1), on A's pattern
        dA = Thunk(lambda: _negated(_on_pattern(A, db, np.reshape(x, np.shape(db)[-ndim:]))))
        return NO, dA, _project(b, db), *no_rest

    return x, spsolve_pullback


@frule.register(spla.spsolve, sp.sparray, ArrayLike, batched=True)
@frule.register(spla.spsolve, sp.spmatrix, ArrayLike, batched=True)
def frule_spsolve(tangents, A, b, *rest, **kwargs):
    lu, b_, dtype = _spsolve_setup(A, b, rest, kwargs)
    ndim = np.ndim(b)
    x = _singular(A, b, rest, kwargs) if lu is None else _spsolve_shape(b, _solve(lu, b_, "N", ndim, dtype))
    # dx = A^-1 (db - dA x)
    dA_x = _tangent_term(tangents[1], np.reshape(x, np.shape(b)), lambda dA, x: _times(dA, x, ndim))
    db = _plus(unthunk(tangents[2]), _negated(dA_x))
    if isinstance(db, AbstractZero):
        return x, db
    dx = np.full(np.shape(db), np.nan, dtype) if lu is None else _solve(lu, db, "N", ndim, dtype)
    if np.ndim(x) < ndim:  # a column b: its tangents' trailing axis of 1 dropped as x's
        dx = np.reshape(dx, np.shape(dx)[:-1])
    return x, dx
