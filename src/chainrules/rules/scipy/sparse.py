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

Sparse matrices built from the values being differentiated: ``diags``/``diags_array`` (each
diagonal's cotangent is that diagonal of the result's), the constructors of CSR, CSC and COO from
``(data, (row, col))`` (duplicates summed; ``data``'s cotangent is the result's at those positions),
``(data, indices, indptr)``, a dense array or another sparse matrix, a number times a sparse matrix,
sums and differences of two (the patterns united, each cotangent on its operand's pattern), sparse
products ``A @ B``, ``.T``/``.transpose()`` and ``.tocsr()``/``.tocsc()``/``.tocoo()``; so the
source engine differentiates ``spsolve(D.T @ sp.diags(k) @ D + eps * sp.eye(n), f)`` in ``k``.
Forward mode and second derivatives refuse them (``core.sparse.NOT_CARRIED``): SciPy stores a sparse
matrix's entries as plain numbers, and there is no dual of a sparse matrix to carry the tangents.
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
from numbers import Number

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ...core import AbstractZero, ProjectTo, Thunk, frule, rrule, unthunk
from ...core.errors import NoForwardRuleError, option_refused, user_location
from ...core.registry import decline_batch
from ...core.ruled_calls import holds_engine_values
from ...core.sparse import NOT_CARRIED, SparsePattern, entries_at
from ..numpy._arrays import ArrayLike
from ..operators import seq_entries, seq_tangent
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
    if sp.issparse(x):
        return _sparse_product_rrule(A, x)
    ndim = _operand_ndim(f, A, x)
    y = A @ x if type(x) is np.ndarray else _times(A, x, ndim)

    def sparse_times_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NO, ZERO, ZERO
        return NO, Thunk(lambda: _on_pattern(A, dy, x)), _project(x, _times(_adjoint(A), dy, np.ndim(y)))

    return y, sparse_times_pullback


def _sparse_product_rrule(A, B):
    """``(y, pullback)`` of the sparse product ``y = A @ B``: ``dA = dy B^H`` and ``dB = A^H dy``, each on
    its operand's pattern (thunks), computed as sparse products."""
    decline_batch()  # (a batch of a sparse matrix's cotangents is a list)

    def sparse_product_pullback(dy):
        dy = _sparse_zero(dy)
        if dy is None:
            return NO, ZERO, ZERO
        return NO, Thunk(lambda: _on(A, dy @ _adjoint(B))), Thunk(lambda: _on(B, _adjoint(A) @ dy))

    return A @ B, sparse_product_pullback


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
    if sp.issparse(x):
        y = A @ x
        dA, dx = _sparse_zero(tangents[1]), _sparse_zero(tangents[2])
        if dA is None and dx is None:
            return y, ZERO
        return y, _on(y, (0 if dA is None else dA @ x) + (0 if dx is None else A @ dx))
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


# `A @ x` and `x @ A`, as the engines see the operator: typed on the classes of both operands, ahead of the
# rules for arrays and for the user's classes' operators (and so are `*`'s, below).
# Marked `untyped_agrees`: the operators' untyped rules reach the same rules through the sparse
# operand's methods (the rules for classes defining an operator in Python), so the source engine
# may still resolve an operator statically where an operand's type is unknown (`np.sin(x) * 0.5`
# would otherwise be dispatched at every call).
for _S in _SPARSE:
    _register_products(operator.matmul, True, (_S, ArrayLike))
    _register_products(operator.matmul, False, (ArrayLike, _S))
    for _T in _SPARSE:  # (a sparse product: see `_sparse_product_rrule`)
        _register_products(operator.matmul, True, (_S, _T))
# the methods themselves: the calls `A.dot(x)` and `A.__matmul__(x)`, and what the tape and the
# forward engine name when a value being differentiated reaches their code
for _method in {m for cls in _CLASSES for m in (cls.__matmul__, cls.dot)}:
    _register_products(_method, True)
for _method in {cls.__rmatmul__ for cls in _CLASSES}:
    _register_reflected(_method)


# ----- sparse matrices built from values being differentiated -----------------------------------
# Their tangents and cotangents are sparse matrices on the result's or the operand's pattern (`ProjectTo`
# of a sparse matrix: see `core.sparse`), never densified.


def _no_engine_values(f, args: tuple) -> None:
    """Refuse to build a sparse matrix from an engine's values (dual numbers: forward mode run through the
    source engine, a Hessian), which SciPy would convert to plain numbers."""
    if any(map(holds_engine_values, args)):
        raise NoForwardRuleError(f, args, location=user_location(), reason=NOT_CARRIED)


def _sparse_zero(t):
    """``t`` unthunked, or None for a zero."""
    t = unthunk(t)
    return None if isinstance(t, AbstractZero) else t


def _on(x, t):
    """The tangent ``t`` (sparse or dense; None, a zero) projected on ``x``: a sparse matrix's pattern, an
    array's dtype, a number's type."""
    return ZERO if t is None else ProjectTo(x)(t)


def _scaled(A, s):
    """``(y, pullback)`` of ``y = A * s`` (``s * A``): ``dA = conj(s) dy`` on ``A``'s pattern (a thunk) and
    ``ds = sum(conj(A) dy)`` over it."""
    decline_batch()  # (a batch of a sparse matrix's cotangents is a list)

    def scaled_pullback(dy):
        dy = _sparse_zero(dy)
        if dy is None:
            return ZERO, ZERO
        pattern = SparsePattern(A)
        ds = np.sum(np.conj(pattern.entries(A)) * pattern.entries(dy))
        return Thunk(lambda: _on(A, dy * np.conj(s))), _on(s, ds)

    return A * s, scaled_pullback


def _scaled_tangent(y, A, s, dA, ds):
    """``dA s + A ds`` on ``y``'s pattern, for a batch of tangents (a list of ``dA``, a 1-d ``ds``) too."""
    dA, ds = _sparse_zero(dA), _sparse_zero(ds)
    batch = len(dA) if isinstance(dA, list) else len(ds) if np.ndim(ds) > np.ndim(s) else None
    if batch is not None:
        return [
            _scaled_tangent(
                y, A, s, dA[i] if isinstance(dA, list) else dA, ds if ds is None or np.ndim(ds) == np.ndim(s) else ds[i]
            )
            for i in range(batch)
        ]
    if dA is None and ds is None:
        return ZERO
    return _on(y, (0 if dA is None else dA * s) + (0 if ds is None else A * ds))


def rrule_sparse_mul(a, b):
    """``a * b`` with a sparse operand: scaled by a number, spmatrix's matrix product with a dense
    operand; sparray's elementwise product is refused."""
    A, s = (a, b) if sp.issparse(a) else (b, a)
    if np.ndim(s) == 0:
        _no_engine_values(operator.mul, (a, b))
        y, back = _scaled(A, s)

        def sparse_mul_pullback(dy):
            dA, ds = back(dy)
            return (NO, dA, ds) if A is a else (NO, ds, dA)

        return y, sparse_mul_pullback
    if isinstance(A, sp.sparray):
        _elementwise_refused(a, b)
    return (_sparse_times_rrule if A is a else _times_sparse_rrule)(operator.mul, a, b)


def frule_sparse_mul(tangents, a, b):
    A, s = (a, b) if sp.issparse(a) else (b, a)
    if np.ndim(s) == 0:
        _no_engine_values(operator.mul, (a, b))
        dA, ds = tangents[1:] if A is a else tangents[:0:-1]
        y = A * s
        return y, _scaled_tangent(y, A, s, dA, ds)
    if isinstance(A, sp.sparray):
        _elementwise_refused(a, b)
    return (_sparse_times_frule if A is a else _times_sparse_frule)(operator.mul, tangents, a, b)


def _elementwise_refused(a, b):
    raise option_refused(
        operator.mul,
        (a, b),
        "for a sparse array (sparray), `*` of an array is an elementwise product with a sparse result, whose "
        "entries are not differentiated; write A @ x for the matrix product, or A.multiply(x).toarray() outside "
        "the differentiation",
    )


def rrule_reflected_mul(A, x):
    """``A.__rmul__(x)``: ``x * A``."""
    y, back = rrule_sparse_mul(x, A)

    def reflected_mul_pullback(dy):
        _, dx, dA = back(dy)
        return NO, dA, dx

    return y, reflected_mul_pullback


def frule_reflected_mul(tangents, A, x):
    return frule_sparse_mul((tangents[0], tangents[2], tangents[1]), x, A)


# Marked `untyped_agrees`: the untyped rule reaches the methods' rules below
for _S in _SPARSE:
    for _types in ((_S, ArrayLike), (ArrayLike, _S), (_S, Number), (Number, _S)):
        rrule.register(operator.mul, *_types, batched=True)(rrule_sparse_mul)
        frule.register(operator.mul, *_types, batched=True)(frule_sparse_mul)
rrule_sparse_mul.untyped_agrees = frule_sparse_mul.untyped_agrees = True
for _method in {cls.__mul__ for cls in _CLASSES}:
    rrule.register(_method, batched=True)(rrule_sparse_mul)
    frule.register(_method, batched=True)(frule_sparse_mul)
for _method in {cls.__rmul__ for cls in _CLASSES}:
    rrule.register(_method, batched=True)(rrule_reflected_mul)
    frule.register(_method, batched=True)(frule_reflected_mul)


def _sum_rules(sign: int):
    """Rules for ``A + B`` (``sign`` 1) and ``A - B`` (-1) of two sparse matrices: the result's pattern is
    their union, each cotangent the result's on its operand's pattern."""
    op = operator.add if sign > 0 else operator.sub

    def rrule_sparse_sum(A, B):
        _both_sparse(op, A, B)

        def sparse_sum_pullback(dy):
            dy = _sparse_zero(dy)
            if dy is None:
                return NO, ZERO, ZERO
            return NO, Thunk(lambda: _on(A, dy)), Thunk(lambda: _on(B, dy if sign > 0 else -dy))

        return op(A, B), sparse_sum_pullback

    def frule_sparse_sum(tangents, A, B):
        _both_sparse(op, A, B)
        y = op(A, B)
        dA, dB = _sparse_zero(tangents[1]), _sparse_zero(tangents[2])
        if dA is None and dB is None:
            return y, ZERO
        return y, _on(y, op(0 if dA is None else dA, 0 if dB is None else dB))

    return rrule_sparse_sum, frule_sparse_sum


def _both_sparse(op, A, B):
    if not (sp.issparse(A) and sp.issparse(B)):
        raise option_refused(op, (A, B), "the rules add and subtract two sparse matrices; a dense operand is not")


for _op, _name, _sign in ((operator.add, "__add__", 1), (operator.sub, "__sub__", -1)):
    _rules = _sum_rules(_sign)
    _rules[0].untyped_agrees = _rules[1].untyped_agrees = True  # (the untyped rule reaches the methods')
    for _S in _SPARSE:
        for _T in _SPARSE:
            rrule.register(_op, _S, _T)(_rules[0])
            frule.register(_op, _S, _T)(_rules[1])
    for _method in {getattr(cls, _name) for cls in _CLASSES}:
        rrule.register(_method)(_rules[0])
        frule.register(_method)(_rules[1])


def _register_linear(method, forward) -> None:
    """Rules for ``method(A, *options)``, a linear map of the sparse matrix ``A`` to a sparse matrix that is
    its own adjoint up to ``forward`` (a transpose, a conversion): the tangent is ``forward(dA)`` on the
    result's pattern, the cotangent ``forward(dy)`` on ``A``'s."""

    def rrule_sparse_linear(A, *rest, **kwargs):
        no_rest = (NO,) * len(rest)

        def sparse_linear_pullback(dy):
            dy = _sparse_zero(dy)
            return NO, ZERO if dy is None else Thunk(lambda: _on(A, forward(dy))), *no_rest

        return method(A, *rest, **kwargs), sparse_linear_pullback

    def frule_sparse_linear(tangents, A, *rest, **kwargs):
        y = method(A, *rest, **kwargs)
        dA = _sparse_zero(tangents[1])
        return y, ZERO if dA is None else _on(y, forward(dA))

    rrule.register(method)(rrule_sparse_linear)
    frule.register(method)(frule_sparse_linear)


def _transposed(t):
    return t.T


def _same(t):
    return t


# `A.T` is a property, which the engines differentiate through its getter
for _method in {cls.transpose for cls in _CLASSES} | {sp.csr_array.T.fget}:
    _register_linear(_method, _transposed)
for _method in {getattr(cls, name) for cls in _CLASSES for name in ("tocsr", "tocsc", "tocoo")}:
    _register_linear(_method, _same)


def _diags_layout(diagonals, offsets) -> tuple[list, np.ndarray, bool]:
    """``diags``'s diagonals as a list, their offsets, and whether one diagonal was given bare (a scalar
    ``offsets``), as SciPy reads them."""
    if np.ndim(offsets) == 0 and (len(diagonals) == 0 or np.ndim(diagonals[0]) == 0):
        return [diagonals], np.atleast_1d(offsets), True
    return list(diagonals), np.atleast_1d(offsets), False


def _diagonal_cotangent(shape, offset: int, d, dy):
    """The cotangent of the diagonal ``d`` at ``offset`` of a matrix of ``shape`` whose cotangent is ``dy``:
    ``dy``'s entries along it (summed for a diagonal of one entry, which SciPy broadcasts); the entries past
    the matrix's edge take none."""
    length = min(shape[0] + min(offset, 0), shape[1] - max(offset, 0))
    if np.size(d) != 1:
        length = min(length, np.size(d))
    j = np.arange(max(length, 0))
    along = entries_at(dy, j - min(offset, 0), j + max(offset, 0))
    if np.size(d) == 1:
        cotangent = np.reshape(np.sum(along), np.shape(d))
    else:
        cotangent = np.zeros(np.shape(d), along.dtype)
        cotangent[: len(along)] = along
    return cotangent if type(d) is not np.ndarray else ProjectTo(d)(cotangent)


def _register_diags(f) -> None:
    """Rules for ``f(diagonals, offsets, ...)`` (``diags``, ``diags_array``): the cotangent of each
    diagonal is that diagonal of the cotangent (on the result's pattern), the tangent the matrix of the
    diagonals' tangents."""

    def offsets_of(rest, kwargs):
        return rest[0] if rest else kwargs.get("offsets", 0)

    def rrule_diags(diagonals, *rest, **kwargs):
        _no_engine_values(f, (diagonals,))
        y = f(diagonals, *rest, **kwargs)
        ds, offsets, bare = _diags_layout(diagonals, offsets_of(rest, kwargs))
        no_rest = (NO,) * len(rest)

        def diags_pullback(dy):
            dy = _sparse_zero(dy)
            if dy is None:
                return NO, ZERO, *no_rest
            cotangents = [_diagonal_cotangent(y.shape, k, d, dy) for d, k in zip(ds, offsets)]
            return NO, cotangents[0] if bare else seq_tangent(diagonals, cotangents), *no_rest

        return y, diags_pullback

    def frule_diags(tangents, diagonals, *rest, **kwargs):
        _no_engine_values(f, (diagonals,))
        y = f(diagonals, *rest, **kwargs)
        ds, offsets, bare = _diags_layout(diagonals, offsets_of(rest, kwargs))
        dds = [unthunk(tangents[1])] if bare else list(seq_entries(unthunk(tangents[1]), len(ds)))
        if all(isinstance(t, AbstractZero) for t in dds):
            return y, ZERO
        dds = [np.zeros(np.shape(d)) if isinstance(t, AbstractZero) else t for d, t in zip(ds, dds)]
        return y, _on(y, sp.diags_array(dds, offsets=offsets, shape=y.shape, format="csr"))

    rrule.register(f)(rrule_diags)
    frule.register(f)(frule_diags)


for _f in (sp.diags, sp.diags_array):
    _register_diags(_f)


def _assembled_positions(cls, arg, shape):
    """The positions of the entries of ``cls(arg)`` for ``arg`` = ``(data, (row, col))`` or, for CSR and
    CSC, ``(data, indices, indptr)``; None for another ``arg``."""
    if not isinstance(arg, tuple) or not arg:
        return None
    if len(arg) == 2 and isinstance(arg[1], tuple) and len(arg[1]) == 2:
        return np.asarray(arg[1][0], dtype=np.intp), np.asarray(arg[1][1], dtype=np.intp)
    if len(arg) == 3 and cls.__name__[:3] in ("csr", "csc"):
        indices, indptr = np.asarray(arg[1], dtype=np.intp), np.asarray(arg[2], dtype=np.intp)
        outer = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        return (outer, indices) if cls.__name__[:3] == "csr" else (indices, outer)
    return None


def _register_constructor(cls) -> None:
    """Rules for ``cls(arg, shape=..., ...)``: from entries at positions (``(data, (row, col))``: the
    cotangent of ``data`` is the result's at those positions, each duplicate's the entry's it adds to), from
    a sparse matrix (a conversion) or from a dense array (its tangent projected on the result's pattern)."""

    def rrule_sparse_constructor(arg, *rest, **kwargs):
        _no_engine_values(cls, (arg,))
        y = cls(arg, *rest, **kwargs)
        positions = _assembled_positions(cls, arg, y.shape)
        no_rest = (NO,) * len(rest)

        def sparse_constructor_pullback(dy):
            dy = _sparse_zero(dy)
            if dy is None:
                return NO, ZERO, *no_rest
            if positions is None:
                return (
                    NO,
                    Thunk(lambda: _on(arg, dy.toarray() if sp.issparse(dy) and not sp.issparse(arg) else dy)),
                    *no_rest,
                )
            data = entries_at(dy, *positions)
            data = ProjectTo(arg[0])(data) if type(arg[0]) is np.ndarray else data
            return NO, seq_tangent(arg, (data, *(NO,) * (len(arg) - 1))), *no_rest

        return y, sparse_constructor_pullback

    def frule_sparse_constructor(tangents, arg, *rest, **kwargs):
        _no_engine_values(cls, (arg,))
        y = cls(arg, *rest, **kwargs)
        positions = _assembled_positions(cls, arg, y.shape)
        if positions is None:
            return y, _on(y, _sparse_zero(tangents[1]))
        data = seq_entries(unthunk(tangents[1]), len(arg))[0]
        data = _sparse_zero(data)
        if data is None:
            return y, ZERO
        return y, _on(y, sp.coo_array((data, positions), shape=y.shape))

    rrule.register(cls, functor=False)(rrule_sparse_constructor)
    frule.register(cls, functor=False)(frule_sparse_constructor)


for _cls in _CLASSES:
    if _cls.__name__[:3] in ("coo", "csr", "csc"):
        _register_constructor(_cls)


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
