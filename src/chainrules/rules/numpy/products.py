"""Rules for products: ``matmul``/``@``, ``dot``, ``vdot``, ``inner``, ``outer``, ``tensordot``, ``einsum``, ``kron``,
``vecdot``, ``matvec``, ``vecmat``, ``multi_dot``; and the polynomial functions built on them (``polyval``,
``polyder``, ``vander``, ``polyfit``, ``roots``, ``poly``; ``numpy.polynomial``'s are in ``series``).

Matrix-like products are written as one 2-D product of reshaped operands (``tensordot``'s own
method), computed with BLAS (see ``_blas``); two matrices skip the reshaping. Their cotangents are
``InplaceableThunk``s: added into an accumulator they are one BLAS multiply-add with
``beta = 1`` (seed 004's ``mul!(X̄, A', Ȳ, true, true)``), so the product is never allocated;
where the accumulator's layout does not allow it, the value is added. For ``y = a @ b`` the
cotangents are ``ā = ȳ b^H`` and ``b̄ = a^H ȳ`` (ChainRules' ``*`` rule: conjugate transposes).

Forward rules use NumPy alone and accept a leading batch axis on the tangents. Pullbacks (all but
``multi_dot``'s) accept a batch of cotangents too (a leading batch axis, for reverse-mode
Jacobians): a batch is pulled back with ``np.matmul`` on the operands as they are (so a
``BasisSeed`` block selects rows instead of multiplying), and its cotangents are ``Thunk``s,
computed only for the operands that are differentiated.
"""

from __future__ import annotations

import math
import operator
import string
import warnings
from collections.abc import Callable
from numbers import Integral

import numpy as np

from ...core import (
    AbstractThunk,
    AbstractZero,
    ActiveValue,
    InplaceableThunk,
    NoDerivativeError,
    NoRuleError,
    Thunk,
    ZeroTangent,
    carries_batch,
    decline_batch,
    frule,
    match_input_batch,
    rrule,
    unbroadcast_batch,
    unthunk,
    user_location,
)
from ...core.active import stood_for
from ...core.basis import BasisSeed, seed_times_transposed, structured_matmul
from ...core.errors import at_user, option_refused
from ..operators import _is_user_object, rrule_user_binary
from ._arrays import (
    NO,
    ZERO,
    ArrayLike,
    add_value_into,
    array_or_active,
    as_sequence,
    batch_of,
    batch_to_input,
    cotangent_array,
    has_no_tangent,
    inplaceable,
    is_batched,
    normalize_axis,
    sequence_cotangent,
    sequence_items,
    sum_to,
    tangent_array,
    tangent_dtype,
    to_input,
)
from ._blas import apply_op, muladd, product
from ._util import match_output

_PASSIVE_KWARGS = frozenset({"casting", "order", "subok", "dtype"})


def _check_kwargs(f, kwargs, allowed=_PASSIVE_KWARGS):
    extra = set(kwargs) - allowed
    if "out" in extra and _writes_nowhere(kwargs["out"]):  # NumPy's default: a new array, no mutation
        extra.discard("out")
    if extra:
        raise option_refused(
            f,
            (),
            f"the keyword argument(s) {sorted(extra)}"
            + (": writing into out= is a mutation, assign the result instead" if "out" in extra else ""),
        )


def _writes_nowhere(out) -> bool:
    """Whether ``out=`` asks for a new array: ``None``, or a ufunc's tuple of ``None``s."""
    return out is None or (isinstance(out, tuple) and all(o is None for o in out))


def _conj(x):
    return np.conj(x) if np.iscomplexobj(x) else x


def _add_terms(*terms):
    total = ZERO
    for t in terms:
        if not isinstance(t, AbstractZero):
            total = t if isinstance(total, AbstractZero) else total + t
    return total


# ----- the 2-D contraction core ----------------------------------------------------------------


class _Contraction:
    """``y = reshape(A @ B, shape)`` with ``A = reshape(transpose(a, perm_a), (M, K))`` and
    ``B = reshape(transpose(b, perm_b), (K, N))``: every product here but ``einsum`` and ``kron``."""

    __slots__ = ("perm_a", "perm_b", "M", "K", "N", "shape")

    def __init__(self, perm_a, perm_b, M, K, N, shape):
        self.perm_a, self.perm_b = tuple(perm_a), tuple(perm_b)
        self.M, self.K, self.N, self.shape = M, K, N, tuple(shape)

    @classmethod
    def tensordot(cls, a, b, axes_a, axes_b):
        sa, sb = np.shape(a), np.shape(b)
        axes_a = [int(ax) % len(sa) for ax in axes_a]
        axes_b = [int(ax) % len(sb) for ax in axes_b]
        free_a = [i for i in range(len(sa)) if i not in axes_a]
        free_b = [i for i in range(len(sb)) if i not in axes_b]
        for i, j in zip(axes_a, axes_b):
            if sa[i] != sb[j]:
                raise ValueError(f"shape-mismatch for sum: {sa} and {sb} along axes {axes_a} and {axes_b}")
        M = math.prod(sa[i] for i in free_a)
        K = math.prod(sa[i] for i in axes_a)
        N = math.prod(sb[i] for i in free_b)
        shape = tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b)
        return cls(free_a + axes_a, axes_b + free_b, M, K, N, shape)

    def matrices(self, a, b):
        # a plain 2-D operand already in place (the common `W @ x`) is its own matrix
        A = a if type(a) is np.ndarray and a.shape == (self.M, self.K) and self.perm_a == (0, 1) else None
        if A is None:
            A = _as_matrix(a, self.perm_a, self.M, self.K)
        B = b if type(b) is np.ndarray and b.shape == (self.K, self.N) and self.perm_b == (0, 1) else None
        if B is None:
            B = _as_matrix(b, self.perm_b, self.K, self.N)
        return A, B

    def rrule(self, a, b, scalar_output: bool = False):
        """``(y, pullback)`` where ``pullback(dy) -> (da, db)``."""
        A, B = self.matrices(a, b)
        if type(A) is np.ndarray and type(B) is np.ndarray and A.dtype == B.dtype and A.dtype.kind == "f":
            # what `a @ b` computes, without the BLAS wrapper's call overhead on small operands
            y = np.matmul(A, B)
            y = y if y.shape == self.shape else y.reshape(self.shape)
        else:
            y = np.reshape(product(A, "N", B, "N"), self.shape)
        if scalar_output and type(y) is np.ndarray:  # an engine's number (a nested differentiation's) is one already
            y = y[()]

        def contraction_pullback(dy):
            dy = unthunk(dy)
            if carries_batch(y, dy):
                return self.batch_pullback(a, b, A, B, y, dy)
            return self.single_pullback(a, b, A, B, y, dy)

        return y, contraction_pullback

    def single_pullback(self, a, b, A, B, y, dy):
        """``(da, db)`` for one cotangent ``dy`` of ``y``."""
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return dy, dy
        dY = np.reshape(dy, (self.M, self.N))
        da = _product_cotangent(a, self.perm_a, (self.M, self.K), dY, "N", B, "C")
        db = _product_cotangent(b, self.perm_b, (self.K, self.N), A, "C", dY, "N")
        return da, db

    def batch_pullback(self, a, b, A, B, y, dy):
        """``(da, db)`` for a batch of cotangents ``dy`` of shape ``(batch, *y.shape)``.

        The products are written on ``dy`` as it comes (no reshape where none is needed), so
        that a structured block of unit cotangents selects rows of the operands."""
        dy = match_input_batch(y, dy)
        M, N = self.M, self.N
        if N == 1 and np.shape(dy)[1:] == (M,):  # matrix @ vector: rows of dy are cotangents of A @ b
            da = lambda: dy[:, :, None] * _conj(B[:, 0])  # noqa: E731  (each runs only if its thunk is read)
            db = lambda: np.matmul(dy, _conj(A))  # noqa: E731
        elif M == 1 and np.shape(dy)[1:] == (N,):  # vector @ matrix
            da = lambda: np.matmul(dy, _conj(B).T)  # noqa: E731
            db = lambda: _conj(A[0])[:, None] * dy[:, None, :]  # noqa: E731
        else:
            lead = np.shape(dy)[:1]
            dY = dy if np.shape(dy) == lead + (M, N) else np.reshape(dy, lead + (M, N))
            da = lambda: np.matmul(dY, _conj(B).T)  # noqa: E731
            db = lambda: np.matmul(_conj(A).T, dY)  # noqa: E731
        return (
            _batch_operand_cotangent(a, self.perm_a, da),
            _batch_operand_cotangent(b, self.perm_b, db),
        )


def _batch_operand_cotangent(x, perm, matrix):
    """The batched cotangent of an operand (a thunk) from a function computing its batch of matrix
    cotangents (run only when the thunk is read: a captured constant's never is)."""
    if has_no_tangent(x):
        return NO

    # the matrix is laid out as the operand transposed by perm: of the operand's shape only when
    # perm keeps the axes in place (a square operand contracted over its first axis has its shape too)
    in_place = perm == tuple(range(len(perm)))

    def value():
        m = matrix()
        if (
            in_place
            and type(m) is np.ndarray
            and type(x) is np.ndarray
            and m.dtype == x.dtype
            and m.shape[1:] == x.shape
            and x.dtype.kind in "fc"
        ):
            return m  # already the operand's batch of cotangents: the common `W @ x`
        lead = np.shape(m)[:1]
        shape = np.shape(x)
        if not in_place or np.shape(m)[1:] != shape:
            permuted = tuple(shape[p] for p in perm)
            m = np.reshape(m, lead + permuted)
            if not in_place:
                m = np.transpose(m, (0, *(int(p) + 1 for p in np.argsort(perm))))
        return match_input_batch(x, m)

    return Thunk(value)


def _as_matrix(x, perm, rows, cols):
    if perm != tuple(range(len(perm))):
        x = np.transpose(x, perm)
    return np.reshape(x, (rows, cols))


def _from_matrix(m, perm, shape):
    if perm == _MATRIX and np.shape(m) == shape:
        return m
    permuted = tuple(shape[p] for p in perm)
    out = np.reshape(m, permuted)
    if perm != tuple(range(len(perm))):
        out = np.transpose(out, np.argsort(perm))
    return out


def _matrix_view(acc, perm, rows, cols):
    """A writeable 2-D view of the accumulator matching the operand's matrix, or None."""
    if type(acc) is not np.ndarray or not acc.flags.writeable:
        return None
    if acc.shape == (rows, cols) and perm == (0, 1):
        return acc
    try:
        return np.reshape(np.transpose(acc, perm), (rows, cols), copy=False)
    except ValueError:  # the transposed accumulator cannot be viewed as a matrix
        return None


def _product_cotangent(x, perm, matrix_shape, p, op_p, q, op_q):
    """The cotangent ``op(p) @ op(q)`` of operand ``x``, as an ``InplaceableThunk`` for arrays."""
    if has_no_tangent(x):
        return NO
    shape = np.shape(x)

    def product_value():
        return to_input(x, _from_matrix(product(p, op_p, q, op_q), perm, shape))

    if type(x) is not np.ndarray:
        return product_value()
    if isinstance(p, ActiveValue) or isinstance(q, ActiveValue):
        # an engine's values (a Hessian's duals): a plain accumulator cannot take them in place
        return Thunk(product_value)
    return _inplaceable_product(Thunk(product_value), perm, matrix_shape, p, op_p, q, op_q)


def _inplaceable_product(value: Thunk, perm, matrix_shape, p, op_p, q, op_q) -> InplaceableThunk:
    """The cotangent ``value`` (``op(p) @ op(q)``, laid out by ``perm``), which adds itself into an
    accumulator through BLAS with beta = 1 where the accumulator can be viewed as the matrix."""

    def product_add_into(acc):
        return _add_product_into(acc, perm, matrix_shape, p, op_p, q, op_q, value.unthunk)

    return InplaceableThunk(product_add_into, value)


def _add_product_into(acc, perm, matrix_shape, p, op_p, q, op_q, value: Callable):
    """``acc += op(p) @ op(q)`` (laid out by ``perm``): one BLAS multiply-add with beta = 1
    where the accumulator can be viewed as the matrix, else ``value()`` added."""
    view = _matrix_view(acc, perm, *matrix_shape)
    if view is None or not muladd(view, p, op_p, q, op_q):
        add_value_into(acc, value())
    return acc


# ----- matmul ------------------------------------------------------------------------------


#: the contractions of 1-D and 2-D ndarray operands, by their shapes (they depend on nothing else)
_PLAIN_CONTRACTIONS: dict = {}


def _matmul_contraction(a, b):
    """The 2-D form of ``a @ b`` when one exists: 1-D and 2-D operands, or a stack times a matrix."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim <= 2 and b.ndim <= 2:
        key = (a.shape, b.shape)
        found = _PLAIN_CONTRACTIONS.get(key)
        if found is None:
            found = _general_matmul_contraction(a, b)
            if len(_PLAIN_CONTRACTIONS) >= 256:  # ever new shapes: keep the memory bounded
                _PLAIN_CONTRACTIONS.clear()
            _PLAIN_CONTRACTIONS[key] = found
        return found
    return _general_matmul_contraction(a, b)


def _general_matmul_contraction(a, b):
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0 or nb > 2:
        return None
    sa, sb = np.shape(a), np.shape(b)
    K = sa[-1]
    if sb[0 if nb == 1 else -2] != K:
        return None
    if na > 2 and type(a) is np.ndarray:
        try:
            np.reshape(a, (-1, K), copy=False)
        except ValueError:  # folding the stack would copy it: take the stacked path
            return None
    elif na > 2:
        return None
    N = sb[-1] if nb == 2 else 1
    shape = sa[:-1] + (sb[-1:] if nb == 2 else ())
    return _Contraction(range(na), range(nb), math.prod(sa[:-1]), K, N, shape)


def _matmul_stacked_rrule(a, b):
    """``a @ b`` for stacked operands with broadcasting, in NumPy; 1-D operands are promoted."""
    y = np.matmul(a, b)
    na, nb = np.ndim(a), np.ndim(b)
    A = a if na > 1 else np.expand_dims(a, 0)
    B = b if nb > 1 else np.expand_dims(b, -1)

    def matmul_stacked_pullback(dy):
        dy = unthunk(dy)
        if carries_batch(y, dy):
            return _matmul_stacked_batch(a, b, A, B, match_input_batch(y, dy))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return dy, dy
        dY = dy if na > 1 else np.expand_dims(dy, -2 if nb > 1 else 0)
        dY = dY if nb > 1 else np.expand_dims(dY, -1)

        def da_value():
            return to_input(a, np.reshape(sum_to(np.matmul(dY, apply_op(B, "C")), np.shape(A)), np.shape(a)))

        def db_value():
            return to_input(b, np.reshape(sum_to(np.matmul(apply_op(A, "C"), dY), np.shape(B)), np.shape(b)))

        # (an engine's cotangent, a Hessian's dual, makes values a plain accumulator cannot take in place)
        if type(a) is np.ndarray and type(b) is np.ndarray and not isinstance(dY, ActiveValue):
            return inplaceable(da_value), inplaceable(db_value)
        return da_value(), db_value()

    return y, matmul_stacked_pullback


def _matmul_stacked_batch(a, b, A, B, dy):
    """The cotangents of stacked ``a @ b`` for a batch of cotangents (a leading batch axis)."""
    na, nb = np.ndim(a), np.ndim(b)
    dY = dy if na > 1 else np.expand_dims(dy, -2)
    dY = dY if nb > 1 else np.expand_dims(dY, -1)

    def da_value():
        value = np.matmul(dY, apply_op(B, "C"))
        return match_input_batch(a, np.reshape(unbroadcast_batch(A, value), np.shape(dy)[:1] + np.shape(a)))

    def db_value():
        value = np.matmul(apply_op(A, "C"), dY)
        return match_input_batch(b, np.reshape(unbroadcast_batch(B, value), np.shape(dy)[:1] + np.shape(b)))

    return (NO if has_no_tangent(a) else Thunk(da_value)), (NO if has_no_tangent(b) else Thunk(db_value))


_MATRIX = (0, 1)
_NO_LEAD = (NO,)  # the tangent of the function itself, first in a rule's pullback


class RealMatrixCotangent(InplaceableThunk):
    """The cotangent ``op(p) @ op(q)`` of a real matrix operand whose dtype the product has
    (nothing to project): ``_inplaceable_product``'s thunk for the two cotangents of ``a @ b``,
    made per pullback without its two closures and inner thunk (they cost as much as a small
    product).

    >>> a, dy = np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> t = real_matrix_cotangent(a, "C", dy, "N")
    >>> t.unthunk().tolist(), t.add_into(np.ones((2, 2))).tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [[2.0, 3.0], [4.0, 5.0]])
    """

    # InplaceableThunk's own slots stay unused: `add_into` and `val` are defined here instead
    __slots__ = ("_p", "_op_p", "_q", "_op_q", "_value", "_thunk")

    def add_into(self, acc):
        p, op_p, q, op_q = self._p, self._op_p, self._q, self._op_q
        shape = (p.shape[0] if op_p == "N" else p.shape[1], q.shape[1] if op_q == "N" else q.shape[0])
        return _add_product_into(acc, _MATRIX, shape, p, op_p, q, op_q, self.unthunk)

    def unthunk(self):
        value = self._value
        if value is None:
            value = self._value = product(self._p, self._op_p, self._q, self._op_q)
        return value

    @property
    def val(self) -> Thunk:
        thunk = self._thunk
        if thunk is None:
            thunk = self._thunk = Thunk(self.unthunk)
        return thunk


def real_matrix_cotangent(p, op_p: str, q, op_q: str) -> RealMatrixCotangent:
    """The ``RealMatrixCotangent`` ``op(p) @ op(q)`` of real matrices ``p`` and ``q`` of one
    dtype (``op`` ``"N"`` or ``"C"``; the caller has checked)."""
    t = object.__new__(RealMatrixCotangent)  # (no __init__: the slots are set here)
    t._p, t._op_p, t._q, t._op_q = p, op_p, q, op_q
    t._value = t._thunk = None
    return t


def _matrix_product_rrule(a, b, lead: tuple = ()):
    """``a @ b`` for two matrices (2-D arrays), the common case, without reshaping anything.
    The pullback returns ``lead + (da, db)`` (``lead=(NoTangent(),)``: a rule's whole pullback)."""
    y = np.matmul(a, b)
    # real operands of the product's dtype: a cotangent of that dtype gives theirs directly
    real = y.dtype.kind == "f" and a.dtype == y.dtype and b.dtype == y.dtype

    def matrix_product_pullback(dy):
        if real and type(dy) is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape:
            return (*lead, real_matrix_cotangent(dy, "N", b, "C"), real_matrix_cotangent(a, "C", dy, "N"))
        dy = unthunk(dy)
        if carries_batch(y, dy):  # a batch of cotangents: the contraction's batched pullback
            return (*lead, *_matmul_contraction(a, b).batch_pullback(a, b, a, b, y, dy))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (*lead, dy, dy)
        da = _product_cotangent(a, _MATRIX, a.shape, dy, "N", b, "C")
        db = _product_cotangent(b, _MATRIX, b.shape, a, "C", dy, "N")
        return (*lead, da, db)

    return y, matrix_product_pullback


def _is_matrix_product(a, b) -> bool:
    """``a @ b`` of two ndarray matrices whose inner dimensions agree."""
    return type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]


def _is_matrix_vector(a, b) -> bool:
    """``a @ b`` of an ndarray matrix and vector of one float dtype: the common layer ``W @ x``."""
    return (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.ndim == 2
        and b.ndim == 1
        and a.dtype == b.dtype
        and a.dtype.kind == "f"
        and a.shape[1] == b.shape[0]
    )


def _matrix_vector_rrule(a, b):
    """``a @ b`` for a real matrix and vector (``_is_matrix_vector``), whose pullback returns
    ``(NoTangent(), da, db)`` itself. A batch of cotangents ``dy`` (rows of shape ``(M,)``) gives
    ``db = dy @ a``, so a ``BasisSeed`` block selects rows of ``a``, and ``da = dy[:, :, None] * b``;
    both are thunks (either operand may be a constant). One cotangent takes the contraction's
    pullback."""
    y = np.matmul(a, b)

    def matrix_vector_pullback(dy):
        if isinstance(dy, AbstractThunk):
            dy = dy.unthunk()
        if not carries_batch(y, dy):
            contraction = _matmul_contraction(a, b)
            return (NO, *contraction.single_pullback(a, b, a, b.reshape(-1, 1), y, dy))
        if not (isinstance(dy, np.ndarray) and dy.dtype == y.dtype and dy.shape[1:] == y.shape):
            dy = match_input_batch(y, dy)  # (a batch of y's dtype and shape already fits)
        da = Thunk(lambda: match_input_batch(a, dy[:, :, None] * b))
        db = Thunk(lambda: match_input_batch(b, np.matmul(dy, a)))
        return NO, da, db

    return y, matrix_vector_pullback


def _common_matmul_rrule(a, b):
    """The rule of ``a @ b`` for a matrix times a matrix or a real vector, whose pullback returns
    the whole tuple ``(NoTangent(), da, db)`` itself; ``None`` for any other operands."""
    if _is_matrix_product(a, b):
        return _matrix_product_rrule(a, b, _NO_LEAD)
    if _is_matrix_vector(a, b):
        return _matrix_vector_rrule(a, b)
    return None


def _matmul_rrule(a, b):
    if _is_matrix_product(a, b):
        return _matrix_product_rrule(a, b)
    contraction = _matmul_contraction(a, b)
    if contraction is None:
        return _matmul_stacked_rrule(a, b)
    return contraction.rrule(a, b, scalar_output=np.ndim(a) == 1 and np.ndim(b) == 1)


@rrule.register(np.linalg.matmul, batched=True)  # the array API's name: another callable, the same product
@rrule.register(np.matmul, batched=True)
def rrule_matmul(a, b, **kwargs):
    if kwargs:
        kwargs = _matmul_kwargs(a, b, kwargs)
    if not kwargs:
        common = _common_matmul_rrule(a, b)
        if common is not None:
            return common
        y, pullback = _matmul_rrule(a, b)
    else:  # NumPy's product, in the dtype and layout asked for; its derivative is the product's
        _, pullback = _matmul_rrule(a, b)
        y = np.matmul(a, b, **kwargs)

    def matmul_pullback(dy):
        return (NO, *pullback(dy))

    return y, matmul_pullback


@rrule.register(operator.matmul, ArrayLike, batched=True)
@rrule.register(operator.matmul, object, ArrayLike, batched=True)
def rrule_operator_matmul(a, b):
    common = _common_matmul_rrule(a, b)  # (ndarray operands only: first, before the ABC check below)
    if common is not None:
        return common
    if not isinstance(a, ArrayLike) and _is_user_object(
        a
    ):  # the user's class defines `@` on arrays (a linear operator): its code says what it does
        return rrule_user_binary(operator.matmul, a, b)
    y, pullback = _matmul_rrule(a, b)

    def matmul_pullback(dy):
        return (NO, *pullback(dy))

    return y, matmul_pullback


def _ndim(x) -> int:
    return x.ndim if isinstance(x, np.ndarray) else np.ndim(x)


def _matmul_left(da, b, batched: bool, na: int, nb: int):
    """The tangent term ``da @ b``; a batched ``da`` keeps its batch axis in front."""
    if not batched or nb <= 2:
        return structured_matmul(da, b)
    if na == 1:  # (Bt, k) as (Bt, 1.., 1, k) against the stack b, then drop the row axis
        shape = np.shape(da)
        rows = np.reshape(da, (shape[0],) + (1,) * (nb - 2) + (1, shape[1]))
        return np.squeeze(structured_matmul(rows, b), axis=-2)
    if nb > na:  # keep the batch axis from aligning with b's stack axes
        shape = np.shape(da)
        da = np.reshape(da, (shape[0],) + (1,) * (nb - na) + shape[1:])
    return structured_matmul(da, b)


def _matmul_right(a, db, batched: bool, na: int, nb: int):
    """The tangent term ``a @ db``; a batched ``db`` keeps its batch axis in front."""
    if not batched:
        return structured_matmul(a, db)
    if nb == 1:  # rows of db are vectors: one matrix product with a transposed
        if na == 1:
            return structured_matmul(db, a)
        if na == 2:
            return structured_matmul(db, a.T if type(a) is np.ndarray else np.swapaxes(a, -1, -2))
        return np.moveaxis(structured_matmul(a, np.swapaxes(db, -1, -2)), -1, 0)
    if na > nb:
        shape = np.shape(db)
        db = np.reshape(db, (shape[0],) + (1,) * (na - nb) + shape[1:])
    return structured_matmul(a, db)


def _matmul_pushforward(a, b, da, db):
    # written out for the common call, one operand constant (a Jacobian pass through W @ x);
    # products with a BasisSeed tangent are selections (``structured_matmul``)
    tda, tdb = type(da), type(db)
    if tdb is BasisSeed and tda is ZeroTangent and type(a) is np.ndarray and type(b) is np.ndarray:
        if a.ndim == 2 and b.ndim == 1 and db.ndim == 2:  # a Jacobian pass through W @ x: columns of W
            return seed_times_transposed(db, a)
    if tda is not np.ndarray and tda is not BasisSeed and isinstance(da, AbstractThunk):
        da = da.unthunk()
        tda = type(da)
    if tdb is not np.ndarray and tdb is not BasisSeed and isinstance(db, AbstractThunk):
        db = db.unthunk()
        tdb = type(db)
    na = a.ndim if type(a) is np.ndarray else _ndim(a)
    nb = b.ndim if type(b) is np.ndarray else _ndim(b)
    left = right = None
    if tda is np.ndarray or tda is BasisSeed or not isinstance(da, AbstractZero):
        left = _matmul_left(da, b, (da.ndim if isinstance(da, np.ndarray) else _ndim(da)) == na + 1, na, nb)
    if tdb is np.ndarray or tdb is BasisSeed or not isinstance(db, AbstractZero):
        right = _matmul_right(a, db, (db.ndim if isinstance(db, np.ndarray) else _ndim(db)) == nb + 1, na, nb)
    if left is None:
        return ZERO if right is None else right
    return left if right is None else left + right


@frule.register(np.linalg.matmul, batched=True)
@frule.register(np.matmul, batched=True)
def frule_matmul(tangents, a, b, **kwargs):
    _, da, db = tangents
    if kwargs:
        y = np.matmul(a, b, **_matmul_kwargs(a, b, kwargs))
        return y, match_output(y, _matmul_pushforward(a, b, da, db))  # (in the dtype= given)
    return np.matmul(a, b), _matmul_pushforward(a, b, da, db)


def _matmul_kwargs(a, b, kwargs: dict) -> dict:
    """The keywords of ``np.matmul`` that its rules pass on (``dtype``, ``casting``, ``order``,
    ``subok``), ``out=None`` dropped; ``axes``/``axis`` refused, with what to write instead."""
    if "axes" in kwargs or "axis" in kwargs:
        raise NoRuleError(
            np.matmul,
            (a, b),
            location=user_location(),
            reason="axes=/axis= pick the axes of the matrices; move them last with np.moveaxis and call it without",
        )
    _check_kwargs(np.matmul, kwargs)
    return {k: v for k, v in kwargs.items() if k != "out"}


@frule.register(operator.matmul, ArrayLike, batched=True)
@frule.register(operator.matmul, object, ArrayLike, batched=True)
def frule_operator_matmul(tangents, a, b):
    _, da, db = tangents
    return a @ b, _matmul_pushforward(a, b, da, db)


# ----- dot, inner, outer, tensordot ---------------------------------------------------------


def _scalar_product_rrule(a, b, y):
    """``y = a * b`` where one factor is 0-d (``np.dot``/``np.inner`` with a scalar)."""

    def scalar_product_pullback(dy):
        dy = unthunk(dy)
        if carries_batch(y, dy):
            dy = match_input_batch(y, dy)
            da = Thunk(lambda: match_input_batch(a, dy * _conj(b)))
            return da, Thunk(lambda: match_input_batch(b, _conj(a) * dy))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return dy, dy

        def cotangent_a():
            return to_input(a, sum_to(dy * _conj(b), np.shape(a)))

        def cotangent_b():
            return to_input(b, sum_to(_conj(a) * dy, np.shape(b)))

        if np.ndim(dy):  # array work, and one factor is often a constant number: both wait until asked for
            return Thunk(cotangent_a), Thunk(cotangent_b)
        return cotangent_a(), cotangent_b()

    return y, scalar_product_pullback


def _tensordot_axes(a, b, axes):
    if isinstance(axes, Integral):
        n = int(axes)
        return list(range(np.ndim(a) - n, np.ndim(a))), list(range(n))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, Integral) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, Integral) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("tensordot: the two sequences of axes must have the same length")
    return axes_a, axes_b


def _dot_rrule(a, b):
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:
        return _scalar_product_rrule(a, b, np.dot(a, b))
    if na <= 2 and nb <= 2:
        return _matmul_rrule(a, b)
    contraction = _Contraction.tensordot(a, b, [na - 1], [nb - 2 if nb >= 2 else 0])
    return contraction.rrule(a, b)


@rrule.register(np.dot, batched=True)
@rrule.register(np.ndarray.dot, batched=True)
def rrule_dot(a, b, **kwargs):
    _check_kwargs(np.dot, kwargs, frozenset())
    y, pullback = _dot_rrule(a, b)

    def dot_pullback(dy):
        return (NO, *pullback(dy))

    return y, dot_pullback


def _inner_rrule(a, b):
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:
        return _scalar_product_rrule(a, b, np.inner(a, b))
    contraction = _Contraction.tensordot(a, b, [na - 1], [nb - 1])
    return contraction.rrule(a, b, scalar_output=na == 1 and nb == 1)


@rrule.register(np.inner, batched=True)
def rrule_inner(a, b):
    y, pullback = _inner_rrule(a, b)

    def inner_pullback(dy):
        return (NO, *pullback(dy))

    return y, inner_pullback


def _outer_rrule(a, b):
    M, N = math.prod(np.shape(a)), math.prod(np.shape(b))
    return _Contraction(range(np.ndim(a)), range(np.ndim(b)), M, 1, N, (M, N)).rrule(a, b)


@rrule.register(np.linalg.outer, batched=True)  # (of 1-D vectors only)
@rrule.register(np.outer, batched=True)
def rrule_outer(a, b, **kwargs):
    _check_kwargs(np.outer, kwargs, frozenset())
    y, pullback = _outer_rrule(a, b)

    def outer_pullback(dy):
        return (NO, *pullback(dy))

    return y, outer_pullback


def _tensordot_rrule(a, b, axes=2):
    return _Contraction.tensordot(a, b, *_tensordot_axes(a, b, axes)).rrule(a, b)


@rrule.register(np.linalg.tensordot, batched=True)  # (axes= by keyword only)
@rrule.register(np.tensordot, batched=True)
def rrule_tensordot(a, b, *axes_given, **kwargs):
    y, pullback = _tensordot_rrule(a, b, *axes_given, **kwargs)

    def tensordot_pullback(dy):
        return (NO, *pullback(dy), *(NO for _ in axes_given))

    return y, tensordot_pullback


def _tensordot_pushforward(a, b, da, db, axes):
    """``tensordot(da, b) + tensordot(a, db)``; batch axes stay in front."""
    axes_a, axes_b = _tensordot_axes(a, b, axes)
    axes_a = [int(ax) % np.ndim(a) for ax in axes_a]
    axes_b = [int(ax) % np.ndim(b) for ax in axes_b]
    da, db = unthunk(da), unthunk(db)
    left = right = ZERO
    if not isinstance(da, AbstractZero):
        shift = 1 if is_batched(a, da) else 0
        left = np.tensordot(da, b, ([ax + shift for ax in axes_a], axes_b))
    if not isinstance(db, AbstractZero):
        if is_batched(b, db):
            right = np.tensordot(a, db, (axes_a, [ax + 1 for ax in axes_b]))
            right = np.moveaxis(right, np.ndim(a) - len(axes_a), 0)
        else:
            right = np.tensordot(a, db, (axes_a, axes_b))
    return _add_terms(left, right)


@frule.register(np.linalg.tensordot, batched=True)
@frule.register(np.tensordot, batched=True)
def frule_tensordot(tangents, a, b, axes=2):
    da, db = tangents[1], tangents[2]
    return np.tensordot(a, b, axes), _tensordot_pushforward(a, b, da, db, axes)


@frule.register(np.dot, batched=True)
@frule.register(np.ndarray.dot, batched=True)
def frule_dot(tangents, a, b, **kwargs):
    _check_kwargs(np.dot, kwargs, frozenset())
    _, da, db = tangents
    y = np.dot(a, b)
    na, nb = np.ndim(a), np.ndim(b)
    # in the output's dtype: a Python float factor is weak in the tangents' arithmetic (float32 * 0.5
    # is float32) but np.dot makes it a float64 array, which promotes the output
    if na == 0 or nb == 0:
        return y, match_output(y, _scalar_product_pushforward(a, b, da, db))
    if na <= 2 and nb <= 2:
        return y, match_output(y, _matmul_pushforward(a, b, da, db))
    return y, match_output(y, _tensordot_pushforward(a, b, da, db, ([na - 1], [nb - 2 if nb >= 2 else 0])))


def _scalar_product_pushforward(a, b, da, db):
    """``da * b + a * db`` where one factor is 0-d; batch axes stay in front."""
    da, db = unthunk(da), unthunk(db)
    terms = []
    if not isinstance(da, AbstractZero):
        terms.append(_batched_times(a, da, b))
    if not isinstance(db, AbstractZero):
        terms.append(_batched_times(b, db, a))
    return _add_terms(*terms)


def _batched_times(x, dx, other):
    """``dx * other`` where a batched ``dx`` (of a 0-d or array ``x``) keeps its batch axis in front."""
    if is_batched(x, dx):
        dx = np.reshape(dx, np.shape(dx)[:1] + (1,) * max(np.ndim(other) - np.ndim(x), 0) + np.shape(x))
    return dx * other


@frule.register(np.inner, batched=True)
def frule_inner(tangents, a, b):
    _, da, db = tangents
    y = np.inner(a, b)
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:  # (in the output's dtype, as np.dot's)
        return y, match_output(y, _scalar_product_pushforward(a, b, da, db))
    return y, _tensordot_pushforward(a, b, da, db, ([na - 1], [nb - 1]))


@frule.register(np.linalg.outer, batched=True)
@frule.register(np.outer, batched=True)
def frule_outer(tangents, a, b, **kwargs):
    _check_kwargs(np.outer, kwargs, frozenset())
    _, da, db = tangents
    y = np.outer(a, b)
    a1, b1 = np.ravel(a), np.ravel(b)

    def flat(x, dx):
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return dx
        return np.reshape(dx, (np.shape(dx)[0], -1)) if is_batched(x, dx) else np.ravel(dx)

    da1, db1 = flat(a, da), flat(b, db)
    left = right = ZERO
    if not isinstance(da1, AbstractZero):
        left = da1[..., :, None] * b1
    if not isinstance(db1, AbstractZero):
        right = a1[:, None] * db1[..., None, :]
    return y, _add_terms(left, right)


# ----- vdot ----------------------------------------------------------------------------------


@rrule.register(np.vdot, batched=True)
def rrule_vdot(a, b):
    y = np.vdot(a, b)

    def vdot_pullback(dy):
        # y = sum(conj(a) * b): ā = conj(ȳ) b and b̄ = ȳ a (the real inner product convention)
        if type(dy) is not float and type(dy) is not np.float64:  # (a real number: one cotangent)
            batch = batch_of(y, dy)
            if batch is not None:  # one row of outer products per cotangent
                lead = batch.shape[:1]
                da = batch_to_input(a, np.reshape(np.multiply.outer(np.conj(batch), np.ravel(b)), lead + np.shape(a)))
                db = batch_to_input(b, np.reshape(np.multiply.outer(batch, np.ravel(a)), lead + np.shape(b)))
                return NO, da, db
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, dy
        da = to_input(a, np.reshape(np.multiply(np.conj(dy), b), np.shape(a)))
        db = to_input(b, np.reshape(np.multiply(dy, a), np.shape(b)))
        return NO, da, db

    return y, vdot_pullback


@frule.register(np.vdot, batched=True)
def frule_vdot(tangents, a, b):
    da, db = unthunk(tangents[1]), unthunk(tangents[2])
    terms = []
    if not isinstance(da, AbstractZero):
        rows = np.reshape(da, (np.shape(da)[0], -1)) if is_batched(a, da) else np.ravel(da)
        terms.append(np.matmul(_conj(rows), np.ravel(b)))
    if not isinstance(db, AbstractZero):
        rows = np.reshape(db, (np.shape(db)[0], -1)) if is_batched(b, db) else np.ravel(db)
        terms.append(np.matmul(rows, _conj(np.ravel(a))))
    return np.vdot(a, b), _add_terms(*terms)


# ----- vecdot, matvec, vecmat (NumPy 2's gufuncs) ---------------------------------------------
#
# Each is a bilinear product over one or two core axes, its loop axes broadcast: the cotangents
# are computed on the broadcast loop shape and summed back (``_loop_cotangent``). ``vecdot`` and
# ``vecmat`` conjugate their vector argument (NumPy's convention, as ``vdot``'s):
# ``vecdot(a, b) = sum(conj(a) * b)`` and ``vecmat(v, A) = conj(v) @ A``.


def _loop_cotangent(x, g, batched: bool):
    """The cotangent ``g`` of ``x`` computed on the broadcast shape, summed back to ``x``'s shape
    (a batch of cotangents keeps its leading axis)."""
    if batched:
        return match_input_batch(x, unbroadcast_batch(x, g))
    return to_input(x, sum_to(g, np.shape(x)))


def _product_cotangent_thunks(a, b, ga, gb, batched: bool):
    """Thunks of the two operands' cotangents from functions computing them on the broadcast shape."""
    da = NO if has_no_tangent(a) else Thunk(lambda: _loop_cotangent(a, ga(), batched))
    db = NO if has_no_tangent(b) else Thunk(lambda: _loop_cotangent(b, gb(), batched))
    return NO, da, db


def _product_pullback(y, a, b, cotangents, name: str):
    """The pullback of a product ``y`` of ``a`` and ``b`` over stacks: ``cotangents(dy)`` gives the
    two functions computing the operands' cotangents on the broadcast shape (a batch of ``dy`` too)."""

    def product_pullback(dy):
        dy = unthunk(dy)
        batched = carries_batch(y, dy)
        dy = match_input_batch(y, dy) if batched else cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, dy
        return _product_cotangent_thunks(a, b, *cotangents(dy), batched)

    product_pullback.__qualname__ = name
    return product_pullback


def _loop_batched(x, dx, core: int, loop_other: int):
    """A tangent ``dx`` of ``x`` (``core`` core axes) ready to broadcast against an operand with
    ``loop_other`` loop axes: a batched one gets size-1 axes after its batch axis, so that the batch
    axis stays in front of every loop axis."""
    if not is_batched(x, dx):
        return dx
    shape = np.shape(dx)
    missing = loop_other - (np.ndim(x) - core)
    return np.reshape(dx, shape[:1] + (1,) * missing + shape[1:]) if missing > 0 else dx


def _vecdot_vectors(a, b, kwargs):
    """``a`` and ``b`` with the ``axis`` of ``vecdot`` as their last axis, and that axis (negative) of each."""
    axis = kwargs.get("axis", -1)
    axis_a = normalize_axis(axis, np.ndim(a)) - np.ndim(a)
    axis_b = normalize_axis(axis, np.ndim(b)) - np.ndim(b)
    return np.moveaxis(a, axis_a, -1), np.moveaxis(b, axis_b, -1), axis_a, axis_b


@rrule.register(np.linalg.vecdot, batched=True)  # the array API's name: another callable, the same product
@rrule.register(np.vecdot, batched=True)
def rrule_vecdot(a, b, **kwargs):
    """``y = sum(conj(a) * b)`` along ``axis``: ``ā = conj(ȳ) b`` and ``b̄ = ȳ a``, as for ``vdot``."""
    _check_kwargs(np.vecdot, kwargs, _PASSIVE_KWARGS | {"axis"})
    y = np.vecdot(a, b, **kwargs)
    va, vb, axis_a, axis_b = _vecdot_vectors(a, b, kwargs)

    def cotangents(dy):
        g = np.expand_dims(dy, -1)  # the same cotangent for every entry of the vectors
        return lambda: np.moveaxis(_conj(g) * vb, -1, axis_a), lambda: np.moveaxis(g * va, -1, axis_b)

    return y, _product_pullback(y, a, b, cotangents, "vecdot_pullback")


@frule.register(np.linalg.vecdot, batched=True)
@frule.register(np.vecdot, batched=True)
def frule_vecdot(tangents, a, b, **kwargs):
    _check_kwargs(np.vecdot, kwargs, _PASSIVE_KWARGS | {"axis"})
    y = np.vecdot(a, b, **kwargs)
    passive = {k: v for k, v in kwargs.items() if k != "axis"}
    va, vb, axis_a, axis_b = _vecdot_vectors(a, b, kwargs)
    da, db = unthunk(tangents[1]), unthunk(tangents[2])
    terms = []
    if not isinstance(da, AbstractZero):
        vda = np.moveaxis(_loop_batched(a, da, 1, np.ndim(b) - 1), axis_a, -1)
        terms.append(np.vecdot(vda, vb, **passive))
    if not isinstance(db, AbstractZero):
        vdb = np.moveaxis(_loop_batched(b, db, 1, np.ndim(a) - 1), axis_b, -1)
        terms.append(np.vecdot(va, vdb, **passive))
    return y, _add_terms(*terms)


@rrule.register(np.matvec, batched=True)
def rrule_matvec(m, v, **kwargs):
    """``y = m @ v`` over stacks: ``m̄ = ȳ v^H`` and ``v̄ = m^H ȳ``, as for ``matmul``."""
    _check_kwargs(np.matvec, kwargs)
    y = np.matvec(m, v, **kwargs)

    def cotangents(dy):
        # ȳ v^H, an outer product, and m^H ȳ
        return lambda: np.expand_dims(dy, -1) * np.expand_dims(_conj(v), -2), lambda: np.vecmat(_conj(dy), _conj(m))

    return y, _product_pullback(y, m, v, cotangents, "matvec_pullback")


def _bilinear_gufunc_frule(f, core_a: int, core_b: int):
    """The frule of a gufunc ``f(a, b)`` linear in each operand, with ``core_a``/``core_b`` core
    axes: ``f(da, b) + f(a, db)``, a batch of tangents carried through ``f``'s stack axes."""

    def bilinear_frule(tangents, a, b, **kwargs):
        _check_kwargs(f, kwargs)
        y = f(a, b, **kwargs)
        da, db = unthunk(tangents[1]), unthunk(tangents[2])
        terms = []
        if not isinstance(da, AbstractZero):
            terms.append(f(_loop_batched(a, da, core_a, np.ndim(b) - core_b), b, **kwargs))
        if not isinstance(db, AbstractZero):
            terms.append(f(a, _loop_batched(b, db, core_b, np.ndim(a) - core_a), **kwargs))
        return y, _add_terms(*terms)

    bilinear_frule.__qualname__ = f"frule_{f.__name__}"
    return bilinear_frule


frule.register(np.matvec, batched=True)(_bilinear_gufunc_frule(np.matvec, 2, 1))


@rrule.register(np.vecmat, batched=True)
def rrule_vecmat(v, m, **kwargs):
    """``y = conj(v) @ m`` over stacks: ``m̄ = v ȳ^T`` (an outer product) and ``v̄ = m conj(ȳ)``."""
    _check_kwargs(np.vecmat, kwargs)
    y = np.vecmat(v, m, **kwargs)

    def cotangents(dy):
        # m conj(ȳ), and v ȳ^T, an outer product
        return lambda: np.matvec(m, _conj(dy)), lambda: np.expand_dims(v, -1) * np.expand_dims(dy, -2)

    return y, _product_pullback(y, v, m, cotangents, "vecmat_pullback")


frule.register(np.vecmat, batched=True)(_bilinear_gufunc_frule(np.vecmat, 1, 2))


# ----- multi_dot -------------------------------------------------------------------------------


def _chain_matrices(factors: list) -> list:
    """The factors of ``multi_dot`` as matrices: a 1-D first factor is a row, a 1-D last one a column."""
    mats = list(factors)
    if np.ndim(mats[0]) == 1:
        mats[0] = np.reshape(mats[0], (1, -1))
    if np.ndim(mats[-1]) == 1:
        mats[-1] = np.reshape(mats[-1], (-1, 1))
    return mats


def _chain(mats: list):
    """The product of a list of matrices (``None`` for an empty list), in ``multi_dot``'s order."""
    if not mats:
        return None
    return mats[0] if len(mats) == 1 else np.linalg.multi_dot(mats)


@rrule.register(np.linalg.multi_dot, batched=True)
def rrule_multi_dot(arrays, **kwargs):
    """``y = A_1 ... A_n``: ``Ā_i = A_{i-1}^H ... A_1^H ȳ A_n^H ... A_{i+1}^H`` (``matmul``'s rule applied
    factor by factor), itself a chain that ``multi_dot`` puts in its cheapest order. A batch of
    cotangents goes through ``matmul`` between the chains on either side of each factor."""
    _check_kwargs(np.linalg.multi_dot, kwargs, frozenset())
    y = np.linalg.multi_dot(arrays)
    factors = as_sequence(arrays, np.linalg.multi_dot)
    mats = _chain_matrices(factors)
    if not all(type(x) is np.ndarray for x in factors):
        decline_batch()  # lists and other array types: their cotangents are taken one at a time

    def multi_dot_pullback(dy):
        if carries_batch(y, unthunk(dy)):
            return NO, _multi_dot_batch_cotangent(arrays, factors, mats, y, unthunk(dy))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy
        adjoints = [apply_op(m, "C") for m in mats]
        dY = np.reshape(dy, (np.shape(mats[0])[0], np.shape(mats[-1])[1]))
        pieces = [
            NO
            if has_no_tangent(x)
            else to_input(
                x, np.reshape(np.linalg.multi_dot([*adjoints[:i][::-1], dY, *adjoints[i + 1 :][::-1]]), np.shape(x))
            )
            for i, x in enumerate(factors)
        ]
        return NO, sequence_cotangent(arrays, pieces)

    return y, multi_dot_pullback


def _multi_dot_batch_cotangent(arrays, factors: list, mats: list, y, dy):
    """The cotangent of ``multi_dot``'s argument for a batch of cotangents ``dy`` of ``y`` (a leading
    batch axis): each factor's is ``(A_{i-1}^H ... A_1^H) ȳ (A_n^H ... A_{i+1}^H)``, the chains on
    either side multiplied once and applied to the whole batch."""
    dy = match_input_batch(y, dy)
    lead = np.shape(dy)[:1]
    block = np.reshape(dy, lead + (np.shape(mats[0])[0], np.shape(mats[-1])[1]))
    adjoints = [apply_op(m, "C") for m in mats]
    pieces = []
    for i, x in enumerate(factors):
        if has_no_tangent(x):
            pieces.append(NO)
            continue
        left, right = _chain(adjoints[:i][::-1]), _chain(adjoints[i + 1 :][::-1])
        term = block if left is None else np.matmul(left, block)
        term = term if right is None else np.matmul(term, right)
        pieces.append(match_input_batch(x, np.reshape(term, lead + np.shape(x))))
    if isinstance(arrays, (list, tuple)):
        return sequence_cotangent(arrays, pieces)
    if isinstance(pieces[0], AbstractZero):  # (the factors of an array share one dtype)
        return pieces[0]
    return match_input_batch(arrays, np.stack(pieces, axis=1))  # an array of factors: rows after the batch axis


@frule.register(np.linalg.multi_dot, batched=True)
def frule_multi_dot(tangents, arrays, **kwargs):
    _check_kwargs(np.linalg.multi_dot, kwargs, frozenset())
    y = np.linalg.multi_dot(arrays)
    factors = as_sequence(arrays, np.linalg.multi_dot)
    mats = _chain_matrices(factors)
    terms = []
    for i, (x, dx) in enumerate(zip(factors, sequence_items(arrays, tangents[1]))):
        if isinstance(dx, AbstractZero):
            continue
        lead = np.shape(dx)[:1] if is_batched(x, dx) else ()
        dm = np.reshape(dx, lead + np.shape(mats[i]))
        if lead:  # multi_dot takes matrices only: the batch goes through matmul
            left, right = _chain(mats[:i]), _chain(mats[i + 1 :])
            term = dm if left is None else np.matmul(left, dm)
            term = term if right is None else np.matmul(term, right)
        else:
            term = np.linalg.multi_dot([*mats[:i], dm, *mats[i + 1 :]])
        terms.append(np.reshape(term, lead + np.shape(y)))
    if not terms:
        return y, ZERO
    return y, match_output(y, _add_terms(*terms))


# ----- einsum ----------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


class _EinsumSpec:
    """An einsum with explicit labels: ellipses expanded, implicit outputs made explicit, and a
    size-1 axis broadcast against a longer one relabelled so that it is summed on its own."""

    __slots__ = ("inputs", "output", "sizes", "spare")

    def __init__(self, args: tuple, operands: list):
        subscripts = _subscripts_of(args)
        lhs, arrow, rhs = subscripts.partition("->")
        inputs = lhs.split(",")
        if len(inputs) != len(operands):
            raise ValueError(f"einsum: {len(inputs)} subscripts for {len(operands)} operands")
        used = set(subscripts) - set(".,->")
        spare = [c for c in _LETTERS if c not in used]
        ranks = [np.ndim(op) - (len(s) - 3) if "..." in s else 0 for s, op in zip(inputs, operands)]
        ellipsis = "".join(spare[: max(ranks, default=0)])
        spare = spare[len(ellipsis) :]
        expanded = [s.replace("...", ellipsis[len(ellipsis) - r :]) for s, r in zip(inputs, ranks)]
        if arrow:
            output = rhs.replace("...", ellipsis)
        else:  # NumPy's implicit output: the broadcast axes, then the labels used once, sorted
            once = sorted(c for c in set(lhs) - set(".,") if lhs.count(c) == 1)
            output = ellipsis + "".join(once)
        sizes: dict[str, int] = {}
        for s, op in zip(expanded, operands):
            for c, n in zip(s, np.shape(op)):
                if n != 1 or c not in sizes:
                    sizes[c] = n
        relabelled = []
        for s, op in zip(expanded, operands):
            labels = list(s)
            for k, (c, n) in enumerate(zip(s, np.shape(op))):
                if n == 1 and sizes[c] != 1:  # broadcast: its own label, summed out
                    labels[k] = spare.pop()
                    sizes[labels[k]] = 1
            relabelled.append("".join(labels))
        self.inputs, self.output, self.sizes, self.spare = relabelled, output, sizes, spare


def _subscripts_of(args: tuple) -> str:
    if isinstance(args[0], str):
        return args[0].replace(" ", "")
    sublists = list(args[1::2])
    out = args[-1] if len(args) % 2 == 1 else None

    def labels(sublist):
        return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sublist)

    text = ",".join(labels(s) for s in sublists)
    return text + ("->" + labels(out) if out is not None else "")


def _einsum_operands(args: tuple) -> list:
    if isinstance(args[0], str):
        return list(args[1:])
    return list(args[0 : len(args) - (len(args) % 2) : 2])


def _einsum_operand_positions(args: tuple) -> list[int]:
    """Where each operand sits among the positional arguments of the call."""
    if isinstance(args[0], str):
        return list(range(1, len(args)))
    return list(range(0, len(args) - (len(args) % 2), 2))


def _unique(labels: str) -> str:
    return "".join(dict.fromkeys(labels))


def _einsum_cotangent(spec: _EinsumSpec, i: int, operands: list, dy, optimize, batched: bool = False):
    """The cotangent of operand ``i``: another einsum of the output cotangent with the other
    operands conjugated, broadcast along labels only operand ``i`` has, and placed on the
    diagonal where operand ``i`` repeats a label. A batch of cotangents (``batched``) carries
    one more label, in front."""
    x = operands[i]
    labels = spec.inputs[i]
    others = [j for j in range(len(operands)) if j != i]
    present = set(spec.output).union(*(spec.inputs[j] for j in others))
    unique = _unique(labels)
    kept = "".join(c for c in unique if c in present)
    z = spec.spare[-1] if batched else ""
    lead = np.shape(dy)[:1] if batched else ()
    terms = ",".join([z + spec.output] + [spec.inputs[j] for j in others])
    g = np.einsum(f"{terms}->{z}{kept}", dy, *(_conj(operands[j]) for j in others), optimize=optimize)
    if len(kept) < len(unique):  # summed inside operand i alone: every entry gets the same cotangent
        g = np.broadcast_to(
            np.reshape(g, [*lead, *(spec.sizes[c] if c in present else 1 for c in unique)]),
            [*lead, *(spec.sizes[c] for c in unique)],
        )
    if len(unique) < len(labels):  # a repeated label: only the diagonal was read
        g = _on_diagonal(g, z, unique, labels, spec, tangent_dtype(x))
    return match_input_batch(x, g) if batched else to_input(x, g)


def _on_diagonal(g, z: str, unique: str, labels: str, spec: _EinsumSpec, dtype):
    """``g`` (labelled ``z + unique``) on the diagonal of an array labelled ``z + labels``, zeros
    elsewhere: each repeat of a label is a fresh one, tied to the first by an identity matrix. An
    einsum, not a write into zeros, so that an engine's values (a Hessian's duals) fill it too."""
    fresh = iter(spec.spare[:-1])  # (the last spare label is a batch's, ``z``)
    spread, ties = [], []
    for k, c in enumerate(labels):
        if c in labels[:k]:
            d = next(fresh)
            spread.append(d)
            ties.append((c + d, np.eye(spec.sizes[c], dtype=dtype)))
        else:
            spread.append(c)
    terms = ",".join([z + unique] + [t for t, _ in ties])
    return np.einsum(f"{terms}->{z}{''.join(spread)}", g, *(eye for _, eye in ties))


@rrule.register(np.einsum, batched=True)
def rrule_einsum(*args, **kwargs):
    _check_kwargs(np.einsum, kwargs, _PASSIVE_KWARGS | {"optimize"})
    y = np.einsum(*args, **kwargs)
    operands = _einsum_operands(args)
    spec = _EinsumSpec(args, operands)
    positions = _einsum_operand_positions(args)
    optimize = kwargs.get("optimize", False)

    def einsum_pullback(dy):
        dy = unthunk(dy)
        batched = carries_batch(y, dy)
        dy = match_input_batch(y, dy) if batched else cotangent_array(y, dy)
        grads = [NO] * (len(args) + 1)
        for i, pos in enumerate(positions):
            if isinstance(dy, AbstractZero):
                grads[pos + 1] = dy
            elif has_no_tangent(operands[i]):
                grads[pos + 1] = NO
            else:
                grads[pos + 1] = Thunk(lambda i=i: _einsum_cotangent(spec, i, operands, dy, optimize, batched))
        return tuple(grads)

    return y, einsum_pullback


@frule.register(np.einsum, batched=True)
def frule_einsum(tangents, *args, **kwargs):
    _check_kwargs(np.einsum, kwargs, _PASSIVE_KWARGS | {"optimize"})
    y = np.einsum(*args, **kwargs)
    operands = _einsum_operands(args)
    spec = _EinsumSpec(args, operands)
    dxs = [unthunk(tangents[pos + 1]) for pos in _einsum_operand_positions(args)]
    batch_label = spec.spare[-1]
    optimize = kwargs.get("optimize", False)
    terms = []
    for i, dx in enumerate(dxs):
        if isinstance(dx, AbstractZero):
            continue
        batched = is_batched(operands[i], dx)
        inputs = [batch_label + s if (j == i and batched) else s for j, s in enumerate(spec.inputs)]
        output = (batch_label if batched else "") + spec.output
        values = [dx if j == i else op for j, op in enumerate(operands)]
        terms.append(np.einsum(",".join(inputs) + "->" + output, *values, optimize=optimize))
    return y, match_output(y, _add_terms(*terms))  # in the dtype= given, as the primal


# ----- kron ------------------------------------------------------------------------------------


def _kron_labels(nd: int):
    a, b = _LETTERS[:nd], _LETTERS[nd : 2 * nd]
    return a, b, "".join(p + q for p, q in zip(a, b))


def _kron_shapes(a, b):
    nd = max(np.ndim(a), np.ndim(b), 1)
    sa = (1,) * (nd - np.ndim(a)) + np.shape(a)
    sb = (1,) * (nd - np.ndim(b)) + np.shape(b)
    return nd, sa, sb


@rrule.register(np.kron, batched=True)
def rrule_kron(a, b):
    y = np.kron(a, b)
    nd, sa, sb = _kron_shapes(a, b)
    la, lb, interleaved = _kron_labels(nd)
    if 2 * nd >= len(_LETTERS):  # no label is left for a batch axis (kron of 26-axis arrays)
        decline_batch()

    def kron_pullback(dy):
        # y[(i, k)] = a[i] b[k] with the index pairs interleaved: contract dy against the other factor
        if type(dy) is not np.ndarray or dy.ndim != y.ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                return NO, *_kron_batch(a, b, sa, sb, batch, nd)
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, dy
        blocks = np.reshape(dy, [n for pair in zip(sa, sb) for n in pair])
        da = Thunk(
            lambda: to_input(
                a, np.reshape(np.einsum(f"{interleaved},{lb}->{la}", blocks, _conj(np.reshape(b, sb))), np.shape(a))
            )
        )
        db = Thunk(
            lambda: to_input(
                b, np.reshape(np.einsum(f"{interleaved},{la}->{lb}", blocks, _conj(np.reshape(a, sa))), np.shape(b))
            )
        )
        return NO, da, db

    return y, kron_pullback


_BATCH_LABEL = _LETTERS[-1]  # kron of arrays with 26 or more axes would need more labels


def _kron_batch(a, b, sa, sb, dys, nd):
    """Thunks of the cotangents of ``a`` and ``b`` for a batch ``dys`` of cotangents of ``kron(a, b)``."""
    la, lb, interleaved = _kron_labels(nd)
    z, lead = _BATCH_LABEL, dys.shape[:1]
    blocks = np.reshape(dys, [*lead, *(n for pair in zip(sa, sb) for n in pair)])

    def contracted(x, other, sx, so, lx, lo):
        d = np.einsum(f"{z}{interleaved},{lo}->{z}{lx}", blocks, _conj(np.reshape(other, so)))
        return batch_to_input(x, np.reshape(d, lead + np.shape(x)))

    da = Thunk(lambda: contracted(a, b, sa, sb, la, lb))
    db = Thunk(lambda: contracted(b, a, sb, sa, lb, la))
    return da, db


@frule.register(np.kron, batched=True)
def frule_kron(tangents, a, b):
    _, da, db = (unthunk(t) for t in tangents)
    y = np.kron(a, b)
    nd, sa, sb = _kron_shapes(a, b)
    la, lb, interleaved = _kron_labels(nd)
    terms = []
    for x, dx, sx, spec in ((a, da, sa, f"{la},{lb}"), (b, db, sb, f"{lb},{la}")):
        if isinstance(dx, AbstractZero):
            continue
        lead = np.shape(dx)[:1] if is_batched(x, dx) else ()
        z = _BATCH_LABEL if lead else ""
        other = np.reshape(b if x is a else a, sb if x is a else sa)
        term = np.einsum(f"{z}{spec}->{z}{interleaved}", np.reshape(dx, lead + sx), other)
        terms.append(np.reshape(term, lead + np.shape(y)))
    return y, _add_terms(*terms)


# ----- cross, convolve, polyval --------------------------------------------------------------


def _cross_axes(a, b, args, kwargs):
    """The vector axes of ``a``, ``b`` and the output of ``np.cross`` (``axis=`` overrides all three)."""
    o = {"axisa": -1, "axisb": -1, "axisc": -1, "axis": None}
    o.update(zip(("axisa", "axisb", "axisc", "axis"), args), **kwargs)
    if o["axis"] is not None:
        o["axisa"] = o["axisb"] = o["axisc"] = o["axis"]
    return o["axisa"], o["axisb"], o["axisc"]


def _as_3_vectors(v):
    """Vectors along the last axis, 2-vectors given a zero third component."""
    if np.shape(v)[-1] == 3:
        return v
    return np.concatenate([v, np.zeros_like(v, shape=np.shape(v)[:-1] + (1,))], axis=-1)


@rrule.register(np.cross, batched=True)
def rrule_cross(a, b, *args, **kwargs):
    """``a × b`` is bilinear: ``ā = b̄ × ȳ`` reads ``conj(b) × ȳ`` and ``b̄ = ȳ × conj(a)``
    (``<ȳ, a × b> = <a, b × ȳ> = <b, ȳ × a>``). 2-vectors are 3-vectors with a zero third entry."""
    return _rrule_cross(np.cross, a, b, args, kwargs)


@rrule.register(np.linalg.cross, batched=True)
def rrule_linalg_cross(x1, x2, **kwargs):
    """NumPy 2's ``np.linalg.cross(x1, x2, /, *, axis=-1)``: ``np.cross`` of 3-vectors (its own
    checks run: 2-vectors are refused as NumPy refuses them)."""
    return _rrule_cross(np.linalg.cross, x1, x2, (), kwargs)


def _rrule_cross(cross, a, b, args: tuple, kwargs: dict):
    y = cross(a, b, *args, **kwargs)
    axisa, axisb, axisc = _cross_axes(a, b, args, kwargs)
    va, vb = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    na, nb = np.shape(va)[-1], np.shape(vb)[-1]
    a3, b3 = _as_3_vectors(va), _as_3_vectors(vb)

    def cross_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != y.ndim:
            batch = batch_of(y, dy)
            if batch is not None:
                return (NO, *_cross_batch(a, b, axisa, axisb, axisc, va, vb, a3, b3, batch), *(NO for _ in args))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy, dy, *(NO for _ in args))
        if na == nb == 2:  # the output is the third component alone
            dy3 = np.stack([np.zeros_like(dy), np.zeros_like(dy), dy], axis=-1)
        else:
            dy3 = np.moveaxis(dy, axisc, -1)
        da = Thunk(
            lambda: to_input(a, np.moveaxis(sum_to(np.cross(_conj(b3), dy3)[..., :na], np.shape(va)), -1, axisa))
        )
        db = Thunk(
            lambda: to_input(b, np.moveaxis(sum_to(np.cross(dy3, _conj(a3))[..., :nb], np.shape(vb)), -1, axisb))
        )
        return (NO, da, db, *(NO for _ in args))

    return y, cross_pullback


def _cross_batch(a, b, axisa, axisb, axisc, va, vb, a3, b3, dys):
    """Thunks of the cotangents of ``a`` and ``b`` for a batch ``dys`` of cotangents of their cross
    product (``va``, ``vb``: the operands with their vector axes last; ``a3``, ``b3``: as 3-vectors)."""
    na, nb = np.shape(va)[-1], np.shape(vb)[-1]
    if na == nb == 2:  # the output is the third component alone
        zero = np.zeros(dys.shape, dtype=dys.dtype)
        dy3 = np.stack([zero, zero, dys], axis=-1)
    else:
        dy3 = np.moveaxis(dys, normalize_axis(axisc, dys.ndim - 1) + 1, -1)

    def back(x, v, axis, product, n):
        d = unbroadcast_batch(v, product[..., :n])  # (B, *v.shape): the batch axis is never summed
        return batch_to_input(x, np.moveaxis(d, -1, normalize_axis(axis, np.ndim(x)) + 1))

    da = Thunk(lambda: back(a, va, axisa, np.cross(_conj(b3), dy3), na))
    db = Thunk(lambda: back(b, vb, axisb, np.cross(dy3, _conj(a3)), nb))
    return da, db


@frule.register(np.cross, batched=True)
def frule_cross(tangents, a, b, *args, **kwargs):
    return _frule_cross(np.cross, tangents, a, b, args, kwargs)


@frule.register(np.linalg.cross, batched=True)
def frule_linalg_cross(tangents, x1, x2, **kwargs):
    return _frule_cross(np.linalg.cross, tangents, x1, x2, (), kwargs)


def _frule_cross(cross, tangents, a, b, args: tuple, kwargs: dict):
    y = cross(a, b, *args, **kwargs)
    axisa, axisb, axisc = _cross_axes(a, b, args, kwargs)
    va, vb = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    planar = np.shape(va)[-1] == np.shape(vb)[-1] == 2  # the output is the third component alone
    da, db = unthunk(tangents[1]), unthunk(tangents[2])
    terms, batched = [], False
    for x, dx, axis, other, x_first in ((a, da, axisa, vb, True), (b, db, axisb, va, False)):
        if isinstance(dx, AbstractZero):
            continue
        lead = 1 if is_batched(x, dx) else 0
        batched = batched or bool(lead)
        vdx = _as_3_vectors(np.moveaxis(dx, normalize_axis(axis, np.ndim(x)) + lead, -1))
        if lead and np.ndim(vdx) - 1 < np.ndim(other):  # keep the batch axis from meeting other's axes
            vdx = np.reshape(vdx, np.shape(vdx)[:1] + (1,) * (np.ndim(other) - np.ndim(vdx) + 1) + np.shape(vdx)[1:])
        other = _as_3_vectors(other)
        terms.append(np.cross(vdx, other) if x_first else np.cross(other, vdx))
    if not terms:
        return y, ZERO
    dy = _add_terms(*terms)
    if planar:
        return y, dy[..., 2]
    return y, np.moveaxis(dy, -1, normalize_axis(axisc, np.ndim(y)) + batched)


def _convolution_window(n_a: int, n_v: int, mode: str) -> slice:
    """Where ``np.convolve(a, v, mode)`` sits inside the full convolution."""
    short, long = min(n_a, n_v), max(n_a, n_v)
    if mode == "same":
        return slice((short - 1) // 2, (short - 1) // 2 + long)
    if mode == "valid":
        return slice(short - 1, long)
    return slice(0, n_a + n_v - 1)


def _correlate(full, kernel):
    """``np.correlate(full, kernel, "valid")`` for the longer ``full``, as a convolution."""
    return np.convolve(full, np.conj(np.ravel(kernel))[::-1], "valid")


@rrule.register(np.convolve, batched=True)
def rrule_convolve(a, v, *args, **kwargs):
    """``y = (a * v)[window]`` is bilinear; ``ā_i = sum_k ȳ_k conj(v_{k-i})`` is a correlation of the
    cotangent (placed in the full convolution) with ``v``: the valid convolution with ``v``
    conjugated and reversed (which, unlike ``np.correlate``, has a forward rule for Hessians);
    ``v̄`` likewise with ``a``."""
    y = np.convolve(a, v, *args, **kwargs)
    mode = args[0] if args else kwargs.get("mode", "full")
    n_a, n_v = np.size(a), np.size(v)
    window = _convolution_window(n_a, n_v, mode)

    def convolve_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != 1:
            batch = batch_of(y, dy)
            if batch is not None:
                return (NO, *_convolve_batch(a, v, window, batch), *(NO for _ in args))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy, dy, *(NO for _ in args))
        # dy placed in the full convolution, padded rather than written into zeros: a dual cotangent
        # (in a Hessian) takes no writes
        full = np.pad(dy, (window.start, n_a + n_v - 1 - window.stop))
        da = Thunk(lambda: to_input(a, _correlate(full, v).reshape(np.shape(a))))
        dv = Thunk(lambda: to_input(v, _correlate(full, a).reshape(np.shape(v))))
        return (NO, da, dv, *(NO for _ in args))

    return y, convolve_pullback


def _convolve_batch(a, v, window, dys):
    """Thunks of the cotangents of ``a`` and ``v`` for a batch ``dys`` of cotangents of their
    convolution: each row's correlation ``sum_j full[i + j] conj(v[j])`` as one product of the
    rows' sliding windows with ``conj(v)``."""
    n_a, n_v = np.size(a), np.size(v)
    # (a list or tuple operand as NumPy's array of it: np.result_type reads a list as a dtype spec)
    dtype = np.result_type(*(array_or_active(t) for t in (dys, a, v)))
    full = np.zeros((len(dys), n_a + n_v - 1), dtype=dtype)
    full[:, window] = dys
    windows = np.lib.stride_tricks.sliding_window_view

    def correlated(x, other, n):
        d = windows(full, np.size(other), axis=-1) @ _conj(np.ravel(other))  # (B, n)
        return batch_to_input(x, np.reshape(d, (len(dys), *np.shape(x))))

    return Thunk(lambda: correlated(a, v, n_a)), Thunk(lambda: correlated(v, a, n_v))


@frule.register(np.convolve, batched=True)
def frule_convolve(tangents, a, v, *args, **kwargs):
    y = np.convolve(a, v, *args, **kwargs)
    mode = args[0] if args else kwargs.get("mode", "full")
    window = _convolution_window(np.size(a), np.size(v), mode)
    terms = []
    # (a list or tuple operand's tangent, a Tangent[list] of numbers or of batches, as an array)
    da, dv = (tangent_array(x, unthunk(t)) for x, t in ((a, tangents[1]), (v, tangents[2])))
    for x, dx, other in ((a, da, v), (v, dv, a)):
        if isinstance(dx, AbstractZero):
            continue
        rows = dx if is_batched(x, dx) else [dx]  # np.convolve takes one pair of vectors
        full = np.stack([np.convolve(np.ravel(r), np.ravel(other)) for r in rows])
        terms.append(full[:, window] if is_batched(x, dx) else full[0, window])
    if not terms:
        return y, ZERO
    if len(terms) == 2 and np.ndim(terms[0]) != np.ndim(terms[1]):  # one tangent batched, one not
        terms = [np.broadcast_to(t, max(terms, key=np.ndim).shape) for t in terms]
    return y, _add_terms(*terms)


# np.correlate(a, v, mode) is NumPy's c_k = sum_n a[n+k] conj(v[n]), which is the convolution of a
# with w = conj(v) reversed: its rules are the convolution's, with v's (co)tangent taken through the
# reversal and the conjugation (each its own adjoint), and correlate's default mode, "valid"
# (convolve's is "full"). One case differs: in mode "same" with v the longer and len(a) even, NumPy
# centres the window one entry later than np.convolve does; that case is the full convolution,
# sliced where NumPy's window is.


def _reversed_conj(t):
    """``conj(t)`` reversed along its vector axis (the last: a batch of them keeps its rows)."""
    t = unthunk(t)
    if isinstance(t, AbstractZero) or t is NO:
        return t
    return np.conj(t)[..., ::-1] if np.ndim(t) else np.conj(t)


def _correlate_kernel_cotangent(v, dv):
    """``dv`` (one cotangent or a batch of them) brought to ``v``'s space."""
    return (batch_to_input if is_batched(v, dv) else to_input)(v, dv)


def _with_correlate_mode(args: tuple, kwargs: dict) -> dict:
    return kwargs if args or "mode" in kwargs else {**kwargs, "mode": "valid"}


def _shifted_same_window(a, v, args: tuple, kwargs: dict) -> slice | None:
    """Where NumPy's ``correlate(a, v, "same")`` sits in the full convolution when it differs from
    ``convolve``'s "same" (``v`` the longer, ``len(a)`` even); None otherwise."""
    mode = args[0] if args else kwargs.get("mode", "valid")
    n_a, n_v = np.size(a), np.size(v)
    if mode != "same" or n_v <= n_a or n_a % 2:
        return None
    return slice(n_a // 2, n_a // 2 + n_v)


@rrule.register(np.correlate, batched=True)
def rrule_correlate(a, v, *args, **kwargs):
    window = _shifted_same_window(a, v, args, kwargs)
    if window is None:
        y, convolve_pullback = rrule_convolve(a, _reversed_conj(v), *args, **_with_correlate_mode(args, kwargs))
        options = ()
    else:
        full, convolve_pullback = rrule_convolve(a, _reversed_conj(v), mode="full")
        y, options = full[window], (NO,) * len(args)
        after = np.size(full) - window.stop

    def correlate_pullback(dy):
        if window is not None:  # dy placed in the full convolution (padded: a dual cotangent takes no writes)
            dy = unthunk(dy)
            if not isinstance(dy, AbstractZero):
                dy = np.pad(dy, [(0, 0)] * (np.ndim(dy) - 1) + [(window.start, after)])
        _, da, dw, *rest = convolve_pullback(dy)
        return (NO, da, Thunk(lambda: _correlate_kernel_cotangent(v, _reversed_conj(dw))), *rest, *options)

    return y, correlate_pullback


@frule.register(np.correlate, batched=True)
def frule_correlate(tangents, a, v, *args, **kwargs):
    dw = _reversed_conj(tangent_array(v, unthunk(tangents[2])))
    window = _shifted_same_window(a, v, args, kwargs)
    if window is None:
        kwargs = _with_correlate_mode(args, kwargs)
        return frule_convolve((tangents[0], tangents[1], dw), a, _reversed_conj(v), *args, **kwargs)
    full, dfull = frule_convolve((tangents[0], tangents[1], dw), a, _reversed_conj(v), mode="full")
    return full[window], dfull if isinstance(dfull, AbstractZero) else dfull[..., window]


def _vandermonde(p, x):
    """``x ** (n-1), ..., x, 1`` along a new last axis: ``polyval(p, x) = V @ p``."""
    return np.expand_dims(array_or_active(x), -1) ** np.arange(np.size(p) - 1, -1, -1)


@rrule.register(np.polyval, batched=True)
def rrule_polyval(p, x):
    """``y = sum_i p_i x^(n-1-i)``: ``p̄ = V^H ȳ`` summed over the points, ``x̄ = ȳ conj(p'(x))``."""
    y = np.polyval(p, x)
    if np.ndim(p) != 1:
        raise TypeError("the rule for numpy.polyval takes a 1-D array of coefficients (not a poly1d or a 2-D array)")

    def polyval_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != np.ndim(y):
            batch = batch_of(y, dy)
            if batch is not None:  # the points' axes contracted past the batch axis
                nd = np.ndim(x)
                points = (tuple(range(1, nd + 1)), tuple(range(nd)))
                dp = Thunk(lambda: batch_to_input(p, np.tensordot(batch, _conj(_vandermonde(p, x)), points)))
                dx = Thunk(lambda: batch_to_input(x, batch * _conj(np.polyval(np.polyder(p), x))))
                return NO, dp, dx
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy, dy
        dp = Thunk(lambda: to_input(p, np.tensordot(array_or_active(dy), _conj(_vandermonde(p, x)), np.ndim(x))))
        dx = Thunk(lambda: to_input(x, dy * _conj(np.polyval(np.polyder(p), x))))
        return NO, dp, dx

    return y, polyval_pullback


@frule.register(np.polyval, batched=True)
def frule_polyval(tangents, p, x):
    y = np.polyval(p, x)
    dp, dx = tangent_array(p, unthunk(tangents[1])), tangent_array(x, unthunk(tangents[2]))
    terms = []
    if not isinstance(dp, AbstractZero):
        # V @ dp; a batch of coefficient tangents (B, n) gives (B, *x.shape)
        terms.append(np.tensordot(dp, _vandermonde(p, x), ([np.ndim(dp) - 1], [-1])))
    if not isinstance(dx, AbstractZero):
        terms.append(dx * np.polyval(np.polyder(p), x))
    if not terms:
        return y, ZERO
    return y, match_output(y, _add_terms(*terms))


def _polyder_parts(p, rest: tuple, kwargs: dict):
    """``(coefficients, m, multipliers)`` of ``np.polyder(p, m)``: a linear map, which keeps the
    first ``n - m`` of the ``n`` coefficients, each times what differentiating ``m`` times makes
    of its power (``k (k-1) ... (k-m+1)``); none are kept when ``m >= n``."""
    p = array_or_active(p)
    if np.ndim(p) != 1:
        raise TypeError("the rule for numpy.polyder takes a 1-D array of coefficients (not a poly1d or a 2-D array)")
    m = operator.index(rest[0] if rest else kwargs.get("m", 1))
    return p, m, np.polyder(np.ones(np.shape(p)[0]), m)


@rrule.register(np.polyder, batched=True)
def rrule_polyder(p, *rest, **kwargs):
    """``y = polyder(p, m)``, ``y_i = c_i p_i`` for the ``n - m`` kept coefficients: ``p̄_i = c_i ȳ_i``
    for those, zero for the last ``m``."""
    coefficients, m, c = _polyder_parts(p, rest, kwargs)
    order = (NO,) * len(rest)
    y = np.polyder(coefficients, m)
    n = np.shape(coefficients)[0]

    def polyder_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy) + order
        zeros = np.zeros(np.shape(dy)[:-1] + (n - c.size,), dtype=np.result_type(dy, c))
        dp = np.concatenate([dy * c, zeros], axis=-1)
        return (NO, (batch_to_input if is_batched(y, dy) else to_input)(p, dp)) + order

    return y, polyder_pullback


@frule.register(np.polyder, batched=True)
def frule_polyder(tangents, p, *rest, **kwargs):
    coefficients, m, c = _polyder_parts(p, rest, kwargs)
    y = np.polyder(coefficients, m)
    dp = unthunk(tangents[1])
    if isinstance(dp, AbstractZero):
        return y, ZERO
    return y, match_output(y, dp[..., : c.size] * c)  # a batch of tangents keeps its leading axis


def _vander_slopes(V, increasing: bool):
    """``dV/dx`` of ``V = np.vander(x, ...)``, row by row: the column of power ``k`` is ``k x^(k-1)``,
    ``k`` times the column of power ``k - 1`` (no division by ``x``, so ``x = 0`` is fine), and
    zero for ``k = 0``. Built by joining columns, not by writing them (``V`` may hold duals)."""
    m, n = np.shape(V)
    if n == 0:
        return V
    zero = np.zeros((m, 1), dtype=np.result_type(V))
    if increasing:
        return np.concatenate([zero, V[:, :-1] * np.arange(1, n)], axis=1)
    return np.concatenate([V[:, 1:] * np.arange(n - 1, 0, -1), zero], axis=1)


def _vander_increasing(args: tuple, kwargs: dict) -> bool:
    return bool(args[1] if len(args) > 1 else kwargs.get("increasing", False))


@rrule.register(np.vander, batched=True)
def rrule_vander(x, *args, **kwargs):
    """``V[i, k] = x_i^(power k)``: ``x̄_i = sum_k V̄[i, k] conj(dV[i, k]/dx_i)``."""
    y = np.vander(x, *args, **kwargs)
    slopes = _vander_slopes(y, _vander_increasing(args, kwargs))
    order = (NO,) * len(args)

    def vander_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NO, dy) + order
        to_x = batch_to_input if is_batched(y, dy) else to_input
        return (NO, Thunk(lambda: to_x(x, np.sum(dy * _conj(slopes), axis=-1)))) + order

    return y, vander_pullback


@frule.register(np.vander, batched=True)
def frule_vander(tangents, x, *args, **kwargs):
    y = np.vander(x, *args, **kwargs)
    dx = unthunk(tangents[1])
    if isinstance(dx, AbstractZero):
        return y, ZERO
    slopes = _vander_slopes(y, _vander_increasing(args, kwargs))
    return y, match_output(y, np.expand_dims(dx, -1) * slopes)  # a batch of tangents keeps its leading axis


# ----- polyfit --------------------------------------------------------------------------------
#
# np.polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False) solves min ||A c - b|| with
# A = diag(w) V, V = np.vander(x, deg + 1) and b = diag(w) y (one fit per column of a 2-D y), after
# scaling A's columns to unit norm: A = As D, D = diag(scale), c = D^-1 lstsq(As, b). At full column
# rank, c = (A^H A)^-1 A^H b and (the least-squares perturbation, Golub & Van Loan, Matrix Computations, §5.3)
#     dc = (A^H A)^-1 (dA^H r + A^H (db - dA c)),    r = b - A c,
# with (A^H A)^-1 = D^-1 R^-1 R^-H conj(D)^-1 from As = Q R. Its adjoint: with G = (A^H A)^-1 c̄,
#     b̄ = A G = Q R^-H conj(D)^-1 c̄,    Ā = r G^H - b̄ c^H,
# and through A_ij = w_i V_ij(x_i), b = w y (S = dV/dx, row by row; e = y - V c):
#     x̄ = conj(w) sum_k (r conj(S G) - b̄ conj(S c)),  w̄ = sum_k (r conj(V G) + b̄ conj(e)),  ȳ = conj(w) b̄.
_POLYFIT = ("rcond", "full", "w", "cov")


class _PolyFit:
    """The fit NumPy's ``polyfit`` computes, step by step as NumPy does (the same coefficients to the
    bit, its checks, its ``RankWarning``), keeping what the derivatives need. Every step is a NumPy
    function with a forward rule, so it also runs on dual numbers (a Hessian)."""

    def __init__(self, x, y, deg, rest: tuple, kwargs: dict):
        o = {"rcond": None, "full": False, "w": None, "cov": False, **dict(zip(_POLYFIT, rest)), **kwargs}
        for name in ("full", "cov"):
            if o[name]:  # (NumPy's own test)
                raise NoRuleError(
                    np.polyfit,
                    (x, y, deg),
                    location=user_location(),
                    reason=f"{name}={o[name]!r}: the rule differentiates the coefficients alone, with "
                    "full=False and cov=False; call np.polyfit again with those for the other outputs",
                )
        self.order = order = int(deg) + 1
        x, y = array_or_active(x) + 0.0, array_or_active(y) + 0.0
        if deg < 0:
            raise ValueError("expected deg >= 0")
        if np.ndim(x) != 1:
            raise TypeError("expected 1D vector for x")
        if np.shape(x)[0] == 0:
            raise TypeError("expected non-empty vector for x")
        if np.ndim(y) < 1 or np.ndim(y) > 2:
            raise TypeError("expected 1D or 2D array for y")
        if np.shape(x)[0] != np.shape(y)[0]:
            raise TypeError("expected x and y to have same length")
        rcond = o["rcond"]
        if rcond is None:
            rcond = np.shape(x)[0] * np.finfo(x.dtype).eps
        self.V = V = np.vander(x, order)
        self.vector = np.ndim(y) == 1
        w = o["w"]
        if w is not None:
            w = array_or_active(w) + 0.0
            if np.ndim(w) != 1:
                raise TypeError("expected a 1-d array for weights")
            if np.shape(w)[0] != np.shape(y)[0]:
                raise TypeError("expected w and y to have the same length")
            a, b = _in_dtype(V, V * w[:, None]), _in_dtype(y, y * (w if self.vector else w[:, None]))
        else:
            a, b = V, y
        self.w = w
        self.scale = scale = np.sqrt(np.sum(a * a, axis=0))
        self.scaled = scaled = a / scale
        cs, _, self.rank, _ = np.linalg.lstsq(scaled, b, rcond)
        self.c = (cs.T / scale).T
        if self.rank != order:
            warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=3)
        # as columns (one per fit); the weighted and the plain residuals
        self.cols = self.c[:, None] if self.vector else self.c
        self.r = _columns(b, self.vector) - scaled @ _columns(cs, self.vector)
        self.e = _columns(y, self.vector) - V @ self.cols
        self.slopes = _vander_slopes(V, increasing=False)
        self.factors = None

    def qr(self):
        """``(Q, R)`` of the scaled matrix (computed once); refused where the fit is rank-deficient."""
        if self.rank != self.order:
            raise np.linalg.LinAlgError(
                f"numpy.polyfit: the fit has rank {self.rank} < deg + 1 = {self.order} (NumPy warned 'Polyfit "
                "may be poorly conditioned'): the coefficients, a minimum-norm solution there, have no "
                "derivative the rule computes; it differentiates full-rank fits only (fewer coefficients, "
                "more distinct points)"
            )
        if self.factors is None:
            self.factors = np.linalg.qr(self.scaled)
        return self.factors

    def pullback(self, dc):
        """``(g, b̄)`` of ``dc`` (one column per fit, possibly a leading batch axis): ``G = (A^H A)^-1 c̄``
        and ``b̄ = A G``, from which the cotangents below are read."""
        q, R = self.qr()
        u = np.linalg.solve(_mH(R), dc / _conj(self.scale)[:, None])
        return np.linalg.solve(R, u) / self.scale[:, None], q @ u

    def dx(self, g, db):
        dx = np.sum(self.r * _conj(self.slopes @ g) - db * _conj(self.slopes @ self.cols), axis=-1)
        return dx if self.w is None else _conj(self.w) * dx

    def dy(self, db):
        dy = db if self.w is None else _conj(self.w)[:, None] * db
        return dy[..., 0] if self.vector else dy

    def dw(self, g, db):
        return np.sum(self.r * _conj(self.V @ g) + db * _conj(self.e), axis=-1)

    def tangent(self, dx, dy, dw):
        """``dc`` (one column per fit; a leading batch axis where a tangent has one) of the tangents
        ``dx``, ``dy`` (one column per fit) and ``dw``, each possibly zero."""
        _, R = self.qr()
        z = t = ZERO
        if not isinstance(dy, AbstractZero):
            t = self.weighted(dy)
        if not isinstance(dw, AbstractZero):
            dw = dw[..., None]
            t = _add_terms(t, dw * self.e)
            z = _mH(self.V) @ (_conj(dw) * self.r)
        if not isinstance(dx, AbstractZero):
            wdx = self.weighted(dx[..., None])
            t = _add_terms(t, -(wdx * (self.slopes @ self.cols)))
            z = _add_terms(z, _mH(self.slopes) @ (_conj(wdx) * self.r))
        if not isinstance(t, AbstractZero):
            z = _add_terms(z, _mH(self.V) @ (t if self.w is None else _conj(self.w)[:, None] * t))
        return np.linalg.solve(R, np.linalg.solve(_mH(R), z / _conj(self.scale)[:, None])) / self.scale[:, None]

    def weighted(self, v):
        """``w v``, ``v`` holding one column per fit along its last axis."""
        return v if self.w is None else self.w[:, None] * v


def _in_dtype(like, value):
    """``value`` in ``like``'s dtype, as NumPy's in-place ``like *= factor`` leaves it (arrays only:
    dual numbers keep NumPy's promotion)."""
    if type(value) is np.ndarray and type(like) is np.ndarray and value.dtype != like.dtype:
        return value.astype(like.dtype)
    return value


def _columns(v, vector: bool):
    return v[:, None] if vector else v


def _mH(m):
    return _conj(np.swapaxes(m, -1, -2))


@rrule.register(np.polyfit, batched=True)
def rrule_polyfit(x, y, deg, *rest, **kwargs):
    """The least-squares coefficients (``full=False``, ``cov=False``), differentiated in ``x``, ``y``
    and the weights ``w`` at full column rank (the derivation is above).

    >>> import numpy as np, chainrules as cr
    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> c, back = cr.rrule(np.polyfit, x, 2.0 * x + 1.0, 1)
    >>> c, cr.unthunk(back(np.array([0.0, 1.0]))[2])  # the intercept's gradient in y: a row of A^+
    (array([2., 1.]), array([ 0.7,  0.4,  0.1, -0.2]))
    """
    fit = _PolyFit(x, y, deg, rest, kwargs)
    c = fit.c
    w_slot = 2 if len(rest) > 2 and rest[2] is not None else None  # w's place in rest (by keyword: a constant)

    def polyfit_pullback(dc):
        dc = unthunk(dc)
        grads = [NO] * len(rest)
        if isinstance(dc, AbstractZero):
            if w_slot is not None:
                grads[w_slot] = dc
            return (NO, dc, dc, NO, *grads)
        to_x = batch_to_input if carries_batch(c, dc) else to_input
        g, db = fit.pullback(dc[..., None] if fit.vector else dc)
        if w_slot is not None:
            grads[w_slot] = Thunk(lambda: to_x(rest[w_slot], fit.dw(g, db)))
        dx = Thunk(lambda: to_x(x, fit.dx(g, db)))
        return (NO, dx, Thunk(lambda: to_x(y, fit.dy(db))), NO, *grads)

    return c, polyfit_pullback


@frule.register(np.polyfit, batched=True)
def frule_polyfit(tangents, x, y, deg, *rest, **kwargs):
    fit = _PolyFit(x, y, deg, rest, kwargs)
    dx, dy = tangent_array(x, unthunk(tangents[1])), tangent_array(y, unthunk(tangents[2]))
    dw = tangent_array(rest[2], unthunk(tangents[6])) if len(rest) > 2 and rest[2] is not None else ZERO
    if all(isinstance(d, AbstractZero) for d in (dx, dy, dw)):
        return fit.c, ZERO
    if not isinstance(dy, AbstractZero) and fit.vector:
        dy = dy[..., None]
    dc = fit.tangent(*(d if isinstance(d, AbstractZero) else array_or_active(d) for d in (dx, dy, dw)))
    return fit.c, match_output(fit.c, dc[..., 0] if fit.vector else dc)


# ----- roots and poly -------------------------------------------------------------------------
#
# np.roots(p): the roots r_k of p(z) = sum_j p_j z^(M-j), M = len(p) - 1 (NumPy drops leading zeros,
# which change no root, and returns a trailing zero's root 0). At a simple root p(r_k) = 0 and
# p'(r_k) != 0, so by the implicit function theorem dr_k = -sum_j dp_j r_k^(M-j) / p'(r_k): the
# Jacobian J = -V / p'(r) with V the Vandermonde matrix of the roots, holomorphic in p. A root
# repeated (or computed too close to another to tell: the eigenvalue solver's error in it,
# eps sum_j |p_j| |r_k|^(M-j) / |p'(r_k)|, more than _ROOT_RESOLUTION of its distance to the
# nearest other root) has no derivative: its roots move like a square root of the perturbation.
# np.poly(z): the coefficients c of prod_k (z - z_k), so dc/dz_k = -(the coefficients of the product
# of the other roots), shifted one place down (c_0 = 1 stays). Both pull back c̄ J^H, made real for
# a real input, as polyval does.
_ROOT_RESOLUTION = 1e-3


def _roots_jacobian(p, r):
    """``J[k, j] = d r_k / d p_j`` for the roots ``r`` of ``p``; refuses a repeated root."""
    plain_p, plain_r = stood_for(p), stood_for(r)
    slope = np.abs(np.polyval(np.polyder(plain_p), plain_r))
    gaps = np.abs(plain_r[:, None] - plain_r[None, :]) + np.diag(np.full(plain_r.size, np.inf))
    nearest = np.min(gaps, axis=1, initial=np.inf)
    error = np.finfo(slope.dtype).eps * np.polyval(np.abs(plain_p), np.abs(plain_r))
    if np.any(error >= _ROOT_RESOLUTION * nearest * slope):
        raise NoDerivativeError(
            f"numpy.roots{at_user()}: the polynomial has a repeated root (or two roots too close to tell apart), "
            "which has no derivative in the coefficients"
        )
    return -_vandermonde(p, r) / np.expand_dims(np.polyval(np.polyder(p), r), -1)


@rrule.register(np.roots, batched=True)
def rrule_roots(p):
    """The roots of ``p`` (highest degree first) at simple roots: ``p̄ = J^H r̄``.

    >>> import numpy as np, chainrules as cr
    >>> r, back = cr.rrule(np.roots, np.array([1.0, -3.0, 2.0]))  # (z - 2)(z - 1)
    >>> r, cr.unthunk(back(np.array([1.0, 0.0]))[1])  # d2/dp = -(4, 2, 1) / p'(2)
    (array([2., 1.]), array([-4., -2., -1.]))
    """
    r = np.roots(p)
    return r, _through_jacobian(p, r, _roots_jacobian(array_or_active(p), r))


@frule.register(np.roots, batched=True)
def frule_roots(tangents, p):
    r = np.roots(p)
    return r, _pushed_through_jacobian(p, r, tangents[1], lambda: _roots_jacobian(array_or_active(p), r))


def _through_jacobian(x, y, jacobian):
    """The pullback of a vector ``y`` of a vector ``x`` with the (complex) Jacobian ``J[j, k] = dy_j/dx_k``:
    ``x̄ = J^H ȳ``, for one cotangent or a batch of them."""

    def jacobian_pullback(dy):
        if type(dy) is not np.ndarray or dy.ndim != 1:
            batch = batch_of(y, dy)
            if batch is not None:
                return NO, Thunk(lambda: batch_to_input(x, batch @ _conj(jacobian)))
        dy = cotangent_array(y, dy)
        if isinstance(dy, AbstractZero):
            return NO, dy
        return NO, Thunk(lambda: to_input(x, dy @ _conj(jacobian)))

    return jacobian_pullback


def _pushed_through_jacobian(x, y, dx, jacobian):
    """``J dx`` for the Jacobian ``jacobian()`` of a vector ``y`` of a vector ``x`` (computed only for a
    nonzero tangent); a batch of tangents keeps its leading axis."""
    dx = tangent_array(x, unthunk(dx))
    if isinstance(dx, AbstractZero):
        return ZERO
    return match_output(y, dx @ np.swapaxes(jacobian(), -1, -2))


def _poly_jacobian(z):
    """``J[j, k] = d c_j / d z_k`` for ``c = np.poly(z)``: minus the coefficients of the product of the
    roots other than ``z_k`` (row ``k`` of ``others``, lowest degree first, built one root at a time),
    one place below the leading 1."""
    n = np.shape(z)[0]
    others = np.zeros((n, n), dtype=np.result_type(stood_for(z), 1.0))
    others[:, 0] = 1.0
    for i in range(n):
        takes = 1.0 - np.eye(n)[i]  # the rows of the other roots take the factor (z - z_i); row i keeps its own
        shifted = np.concatenate([np.zeros((n, 1)), others[:, :-1]], axis=1)
        others = others + takes[:, None] * (shifted - z[i] * others - others)
    return np.concatenate([np.zeros((1, n)), -np.swapaxes(others[:, ::-1], 0, 1)])


def _poly_roots(z):
    if np.ndim(z) == 2:
        raise option_refused(
            np.poly,
            (z,),
            "a square matrix, whose characteristic polynomial it gives: pass its eigenvalues, "
            "np.poly(np.linalg.eigvals(a))",
        )
    return array_or_active(z)


def _no_roots_pullback(dc):
    return NO, ZERO


@rrule.register(np.poly, batched=True)
def rrule_poly(seq_of_zeros):
    """The coefficients of the monic polynomial with these roots: ``z̄ = J^H c̄``.

    >>> import numpy as np, chainrules as cr
    >>> c, back = cr.rrule(np.poly, np.array([1.0, 2.0]))  # z^2 - 3z + 2
    >>> c, cr.unthunk(back(np.array([0.0, 0.0, 1.0]))[1])  # d(z_0 z_1)
    (array([ 1., -3.,  2.]), array([2., 1.]))
    """
    c = np.poly(seq_of_zeros)
    if np.ndim(c) == 0:  # no roots: the constant 1
        return c, _no_roots_pullback
    return c, _through_jacobian(seq_of_zeros, c, _poly_jacobian(_poly_roots(seq_of_zeros)))


@frule.register(np.poly, batched=True)
def frule_poly(tangents, seq_of_zeros):
    c = np.poly(seq_of_zeros)
    if np.ndim(c) == 0:
        return c, ZERO
    roots = _poly_roots(seq_of_zeros)  # (a matrix is refused, with a zero tangent too)
    return c, _pushed_through_jacobian(seq_of_zeros, c, tangents[1], lambda: _poly_jacobian(roots))
