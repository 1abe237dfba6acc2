"""Rules for ``numpy.linalg``: factorizations computed once and shared by the primal and the pullback.

Which BLAS a rule runs on (NumPy and SciPy each bundle an OpenBLAS with its own thread pool, and
alternating between them is slow): rules that reuse a factorization NumPy does not expose
(``solve``, ``det``, ``slogdet``: one LU; ``cholesky``: triangular solves; ``eigvalsh``: one
symmetric eigendecomposition) run on SciPy's LAPACK and BLAS throughout; the others run on NumPy
throughout. Stacks of matrices and objects implementing NumPy's protocols take NumPy functions.

Functions that read one triangle of their argument (``eigh``, ``eigvalsh``, ``cholesky``, and the
``hermitian=True`` options) return the cotangent in that triangle: the derivative of the function
as NumPy computes it, which equals the symmetric gradient of JAX and PyTorch along every
symmetric direction.

Pullbacks take a batch of cotangents too (a leading batch axis, for reverse-mode Jacobians): the
batch is one more stack axis in front of the primal's (its factors broadcast against it), solved
with the primal's factorization once for all rows. The forward rules take a batch of tangents
likewise.

Non-smooth points, documented: eigenvalues (or singular values) closer than ``n * eps * max|w|``
are treated as one repeated value, whose eigenvectors have no derivative; the rules of ``eigh``,
``eig`` and ``svd`` leave their rotation within the eigenspace out (``svd`` keeps the part that
turns ``U`` against ``V``, defined there). That is exact for functions of the eigenvalues
symmetric in the repeated ones, projectors onto a whole eigenspace and the polar factor
``U @ Vh``, not for a matrix function ``V f(w) V^H``, which misses ``f'(w)`` within the
eigenspace; no cotangent tells them apart, so a pullback warns (``NonSmoothWarning``, at the
user's line) where the eigenvectors of repeated values receive a cotangent, and a forward rule
where the direction rotates them within their eigenspace (an eigenvalue-only cotangent never
looks at the gaps). Zero singular values contribute no ``1/s`` terms; a singular matrix gives
``det`` the adjugate as its gradient and makes ``slogdet``'s pullback raise ``LinAlgError``.

>>> import numpy as np, chainrules as cr
>>> a = np.array([[3.0, 1.0], [1.0, 2.0]])
>>> x, back = cr.rrule(np.linalg.solve, a, np.array([1.0, 0.0]))
>>> back(np.array([1.0, 0.0]))[2]  # a^{-T} dx, with the primal's LU factors
array([ 0.4, -0.2])
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ...core import (
    ActiveValue,
    NoDerivativeError,
    Thunk,
    carries_batch,
    conj,
    frule,
    match_input,
    match_input_batch,
    non_differentiable,
    rrule,
    unbroadcast,
    unbroadcast_batch,
    unthunk,
)
from ...core.errors import at_user
from ..operators import frule_on_arrays, rrule_on_arrays
from ..scipy._lapack import (
    LU,
    NO,
    NUMPY,
    SCIPY,
    ZERO,
    Repeated,
    as_array,
    batch_size,
    diag_embed,
    diagonal,
    float_dtype,
    fold_onto_triangle,
    fold_triangle_of_hermitian,
    gap_inverse,
    hermitian_from_triangle,
    hermitian_product,
    is_batched,
    is_plain,
    is_zero,
    lapack,
    mH,
    mm,
    mT,
    no_rule,
    options,
    parts,
    parts_carry_batch,
    plain,
    projector,
    singular_gap_inverses,
    tangent_of,
    triangular_solve,
    with_batch,
)
from ._arrays import scalar_of
from ._util import align

linalg = np.linalg
# NumPy's result namedtuples, whose cotangents are Tangent[...] of the same types
_SlogdetResult = type(linalg.slogdet(np.eye(1)))
_SVDResult = type(linalg.svd(np.eye(1)))
_QRResult = type(linalg.qr(np.eye(1)))


def _plain_matrix(*xs, vectors_ok: bool = False):
    """The arguments as plain arrays of one LAPACK dtype when they are single matrices, else None."""
    if not all(type(x) is np.ndarray for x in xs):
        return None
    if not all(x.ndim == 2 or (vectors_ok and i > 0 and x.ndim == 1) for i, x in enumerate(xs)):
        return None
    dtype = float_dtype(*xs)
    out = tuple(x.astype(dtype, copy=False) for x in xs)
    return out if is_plain(*out) else None


def _tangents(tangents):
    return tuple(unthunk(t) for t in tangents[1:])


# ----- solve --------------------------------------------------------------------------------


def _solve_setup(a, b, name):
    """``(x, lu, vector)``: one LU factorization of ``a`` shared by the primal and its derivative."""
    plain = _plain_matrix(as_array(a), as_array(b), vectors_ok=True)
    if plain is not None:
        a, b = plain
        lu = LU(a)
        lu.check(name)
        return lu.solve(b), lu, b.ndim == 1
    a, b = as_array(a), as_array(b)
    return linalg.solve(a, b), LU(a), np.ndim(b) == 1


@rrule.register(linalg.solve, batched=True)
def rrule_solve(a, b):
    project_a, project_b = projector(a), projector(b)
    x, lu, vector = _solve_setup(a, b, "numpy.linalg.solve")

    def solve_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return NO, ZERO, ZERO
        if carries_batch(x, dx):  # every row solved at once, with the same factors
            db = lu.solve(plain(dx), "C", batched=True, vector=vector)
            da = Thunk(lambda: project_a.batch(unbroadcast_batch(a, _solve_cotangent_of_a(db, x, vector))))
            return NO, da, project_b.batch(unbroadcast_batch(b, db))
        # The factorization of A serves A^H: one transposed triangular solve, no refactorization.
        db = lu.solve(dx, "C", vector=vector)
        da = -(db[..., :, None] * conj(x)[..., None, :]) if vector else mm(db, x, "N", "C", alpha=-1.0)
        return NO, project_a(unbroadcast(a, da)), project_b(unbroadcast(b, db))

    return x, solve_pullback


def _solve_cotangent_of_a(db, x, vector: bool):
    """``-db x^H``, the cotangent of ``a`` in ``x = a^{-1} b`` (``db`` may carry a batch axis)."""
    return -(db[..., :, None] * conj(x)[..., None, :]) if vector else mm(db, x, "N", "C", alpha=-1.0)


@frule.register(linalg.solve, batched=True)
def frule_solve(tangents, a, b):
    da, db = _tangents(tangents)
    x, lu, vector = _solve_setup(a, b, "numpy.linalg.solve")
    batch = batch_size((da, db), (a, b))
    shape = np.shape(x) if batch is None else (batch, *np.shape(x))
    # a's and b's stacks broadcast against each other: both terms are brought to x's shape, stack
    # axes that only the other operand has going after a batch axis (`align`), not in front of it
    rhs = with_batch(db, b, batch)
    if not is_zero(rhs) and np.shape(rhs) != shape:
        rhs = np.broadcast_to(align(b, rhs, np.ndim(x)), shape)
    if not is_zero(da):
        da = align(a, da, np.ndim(x) + vector)
        dax = mm(da, x[..., None])[..., 0] if vector else mm(da, x)
        rhs = -dax if is_zero(rhs) else rhs - dax
    if is_zero(rhs):
        return x, ZERO
    return x, lu.solve(rhs, batched=batch is not None, vector=vector)


# ----- tensor solve and inverse: the matrix case after a reshape ----------------------------


def _tensorsolve_setup(a, b, axes):
    """``(x, lu, order, matrix_shape)``: ``a`` with ``axes`` moved last (``order``), reshaped to a
    square matrix, solved against ``b`` flattened, with the LU factors ``solve`` would keep."""
    a, b = as_array(a), as_array(b)
    order = list(range(np.ndim(a)))
    for k in axes or ():  # as NumPy moves them: each to the end, in the order given
        order.remove(k)
        order.append(k)
    a = np.transpose(a, order)
    x_shape = np.shape(a)[np.ndim(b) :]
    n = math.prod(x_shape)
    if math.prod(np.shape(a)[: np.ndim(b)]) != n:
        raise linalg.LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    x, lu, _ = _solve_setup(np.reshape(a, (n, n)), np.reshape(b, (n,)), "numpy.linalg.tensorsolve")
    return np.reshape(x, x_shape), lu, order, (n, n)


@rrule.register(linalg.tensorsolve, batched=True)
def rrule_tensorsolve(a, b, *rest, **kwargs):
    axes = options("numpy.linalg.tensorsolve", rest, kwargs, (("axes", None),))["axes"]
    project_a, project_b = projector(a), projector(b)
    x, lu, order, matrix_shape = _tensorsolve_setup(a, b, axes)

    def tensorsolve_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        if carries_batch(x, dx):
            lead = np.shape(dx)[:1]
            db = lu.solve(np.reshape(plain(dx), (*lead, -1)), "C", batched=True)
            da = Thunk(lambda: project_a.batch(_tensorsolve_cotangent_of_a(db, x, a, order, lead)))
            return (NO, da, project_b.batch(np.reshape(db, lead + np.shape(b)))) + (NO,) * len(rest)
        # solve's pullback on the matrix: db = A^{-H} dx, dA = -db x^H, then the axes put back
        db = lu.solve(np.reshape(dx, (-1,)), "C")
        da = _tensorsolve_cotangent_of_a(db, x, a, order, ())
        return (NO, project_a(da), project_b(np.reshape(db, np.shape(b)))) + (NO,) * len(rest)

    return x, tensorsolve_pullback


def _tensorsolve_cotangent_of_a(db, x, a, order, lead: tuple):
    """``-db x^H`` on the matrix, its axes put back in ``a``'s order; ``lead``: a batch axis in front."""
    da = -(db[..., :, None] * conj(np.reshape(x, (-1,))))
    da = np.reshape(da, lead + tuple(np.shape(a)[k] for k in order))
    return np.transpose(da, tuple(range(len(lead))) + tuple(len(lead) + np.argsort(order)))


@frule.register(linalg.tensorsolve, batched=True)
def frule_tensorsolve(tangents, a, b, *rest, **kwargs):
    axes = options("numpy.linalg.tensorsolve", rest, kwargs, (("axes", None),))["axes"]
    da, db = _tangents(tangents)[:2]
    x, lu, order, matrix_shape = _tensorsolve_setup(a, b, axes)
    batch = batch_size((da, db), (a, b))
    lead = () if batch is None else (batch,)
    rhs = 0 if is_zero(db) else np.reshape(db, (*lead, -1) if is_batched(db, b) else (-1,))  # A dx = db - dA x
    if not is_zero(da):
        if is_batched(da, a):
            matrices = np.reshape(np.transpose(da, (0, *(k + 1 for k in order))), lead + matrix_shape)
        else:
            matrices = np.reshape(np.transpose(da, order), matrix_shape)
        rhs = rhs - matrices @ np.reshape(x, (-1,))
    if np.ndim(rhs) == 0:
        return x, ZERO
    return x, np.reshape(lu.solve(rhs, batched=batch is not None), lead + np.shape(x))


def _tensorinv_setup(a, ind):
    a = as_array(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = np.shape(a)
    n = math.prod(shape[ind:])
    y = linalg.inv(np.reshape(a, (n, -1)))
    return np.reshape(y, shape[ind:] + shape[:ind]), (n, np.size(a) // n if n else 0)


@rrule.register(linalg.tensorinv, batched=True)
def rrule_tensorinv(a, *rest, **kwargs):
    ind = options("numpy.linalg.tensorinv", rest, kwargs, (("ind", 2),))["ind"]
    project = projector(a)
    y, matrix_shape = _tensorinv_setup(a, ind)
    ym = np.reshape(y, matrix_shape[::-1])

    def tensorinv_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO) + (NO,) * len(rest)
        ymh = mH(ym)  # inv's pullback on the matrix: -Y^H dY Y^H
        if carries_batch(y, dy):
            lead = np.shape(dy)[:1]
            da = -(ymh @ np.reshape(plain(dy), lead + matrix_shape[::-1]) @ ymh)
            return (NO, project.batch(np.reshape(da, lead + np.shape(a)))) + (NO,) * len(rest)
        return (NO, project(np.reshape(-(ymh @ np.reshape(dy, matrix_shape[::-1]) @ ymh), np.shape(a)))) + (NO,) * len(
            rest
        )

    return y, tensorinv_pullback


@frule.register(linalg.tensorinv, batched=True)
def frule_tensorinv(tangents, a, *rest, **kwargs):
    ind = options("numpy.linalg.tensorinv", rest, kwargs, (("ind", 2),))["ind"]
    (da,) = _tangents(tangents)[:1]
    y, matrix_shape = _tensorinv_setup(a, ind)
    if is_zero(da):
        return y, ZERO
    ym = np.reshape(y, matrix_shape[::-1])
    lead = np.shape(da)[:1] if is_batched(da, a) else ()
    return y, np.reshape(-(ym @ np.reshape(da, lead + matrix_shape) @ ym), lead + np.shape(y))


# ----- inverse, determinants ----------------------------------------------------------------


@rrule.register(linalg.inv, batched=True)
def rrule_inv(a):
    project = projector(a)
    y = linalg.inv(a)

    def inv_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, ZERO
        yh = mH(y)
        if carries_batch(y, dy):
            # the inverse broadcasts against the batch; for a block of unit cotangents yh @ dy selects
            return NO, project.batch(-(yh @ dy @ yh))
        return NO, project(-(yh @ dy @ yh))

    return y, inv_pullback


@frule.register(linalg.inv, batched=True)
def frule_inv(tangents, a):
    (da,) = _tangents(tangents)
    y = linalg.inv(a)
    if is_zero(da):
        return y, ZERO
    return y, -(y @ da @ y)


def adjugate(a):
    """The adjugate (classical adjoint) of a single matrix, also when it is singular.

    From the SVD ``a = U S Vh``: ``adj(a) = det(U) det(Vh) Vh^H diag(prod_{j != i} s_j) U^H``.
    """
    u, s, vh = scipy.linalg.svd(a)
    n = s.size
    prefix = np.concatenate([[1], np.cumprod(s[:-1])]) if n else s
    suffix = np.concatenate([np.cumprod(s[::-1][:-1])[::-1], [1]]) if n else s
    others = (prefix * suffix).astype(a.dtype)
    phase = LU(u).det() * LU(vh).det()
    return phase * mm(mH(vh) * others, u, "N", "C")


def _factorizable(a):
    """``a`` as a plain matrix for GETRF, or None: a stack, another array type, or a 0x0 matrix,
    which GETRF refuses and NumPy takes (its determinant is 1), go to NumPy."""
    plain = _plain_matrix(as_array(a))
    return None if plain is None or plain[0].size == 0 else plain


def _det_setup(a):
    plain = _factorizable(a)
    if plain is not None:
        (a,) = plain
        lu = LU(a)
        return lu.det(), lu
    return linalg.det(a), None


def _det_gradient(a, d, lu):
    """``adj(a)^T``, the derivative of ``det`` (``d det = sum(adj(a)^T * da)``)."""
    if lu is None:  # a stack of matrices, or an engine's values (a Hessian's dual numbers)
        try:
            inv = linalg.inv(a)
        except linalg.LinAlgError:  # a singular matrix among them: the adjugate, from an SVD, whatever
            if isinstance(a, ActiveValue):
                raise NoDerivativeError(
                    f"the rule for the determinant (np.linalg.det, scipy.linalg.det){at_user()} takes a singular "
                    "matrix to first order only: its second derivative there (a Hessian, forward mode over the "
                    "pullback) is not supported"
                ) from None
            n = np.shape(a)[-1]
            return mT(np.reshape([adjugate(m) for m in np.reshape(a, (-1, n, n))], np.shape(a)))
        return d[..., None, None] * mT(inv) if np.ndim(d) else d * mT(inv)
    if lu.singular:
        return mT(adjugate(lu.a))
    return d * mT(lu.inv())


@rrule.register(linalg.det, batched=True)
def rrule_det(a):
    project = projector(a)
    d, lu = _det_setup(a)

    def det_pullback(dd):
        dd = unthunk(dd)
        if is_zero(dd):
            return NO, ZERO
        grad = _det_gradient(a, d, lu)
        scale = dd[..., None, None] if np.ndim(dd) else dd
        if carries_batch(d, dd):  # a batch axis in front of the stack's: the gradient broadcasts
            return NO, project.batch(plain(scale) * conj(grad))
        return NO, project(scale * conj(grad))

    return d, det_pullback


@frule.register(linalg.det, batched=True)
def frule_det(tangents, a):
    (da,) = _tangents(tangents)
    d, lu = _det_setup(a)
    if is_zero(da):
        return d, ZERO
    return d, np.sum(_det_gradient(a, d, lu) * da, axis=(-2, -1))


def _slogdet_setup(a):
    plain = _factorizable(a)
    if plain is not None:
        (a,) = plain
        lu = LU(a)
        return _SlogdetResult(*lu.slogdet()), lu
    return linalg.slogdet(a), None


def _inverse_transpose(a, lu, name):
    """``a^{-T}`` from the factorization of the primal (NumPy for stacks and other arrays)."""
    if lu is None:
        return mT(linalg.inv(a))
    if lu.singular:
        raise np.linalg.LinAlgError(f"{name}: the derivative of log|det| does not exist at a singular matrix")
    return mT(lu.inv())


@rrule.register(linalg.slogdet, batched=True)
def rrule_slogdet(a):
    project = projector(a)
    result, lu = _slogdet_setup(a)
    sign = result[0]

    def slogdet_pullback(dresult):
        dsign, dlogabs = parts(dresult, result._fields)
        if is_zero(dlogabs) and (is_zero(dsign) or not np.iscomplexobj(sign)):
            return NO, ZERO
        weight = 0 if is_zero(dlogabs) else np.real(dlogabs)
        if np.iscomplexobj(sign) and not is_zero(dsign):
            # d sign = i sign Im(tr(a^{-1} da)): its cotangent turns the weight complex.
            weight = weight - 1j * np.imag(np.conj(dsign) * sign)
        weight = weight[..., None, None] if np.ndim(weight) else weight
        grad = weight * conj(_inverse_transpose(a, lu, "numpy.linalg.slogdet"))
        # a batch axis in front of the stack's: the weights broadcast against the inverse
        return NO, (project.batch(grad) if parts_carry_batch(result, (dsign, dlogabs)) else project(grad))

    return result, slogdet_pullback


@frule.register(linalg.slogdet, batched=True)
def frule_slogdet(tangents, a):
    (da,) = _tangents(tangents)
    result, lu = _slogdet_setup(a)
    if is_zero(da):
        return result, ZERO
    z = np.sum(_inverse_transpose(a, lu, "numpy.linalg.slogdet") * da, axis=(-2, -1))
    sign = result[0]
    dsign = 1j * sign * np.imag(z) if np.iscomplexobj(sign) else ZERO
    return result, tangent_of(result, dsign, np.real(z))


# ----- Cholesky -----------------------------------------------------------------------------


def _cholesky_setup(a, upper: bool, name: str):
    """The lower factor ``L`` (``a = L L^H`` from the triangle that is read) and the output."""
    plain = _plain_matrix(as_array(a))
    if plain is not None:
        (a,) = plain
        c, info = lapack("potrf", a.dtype)(a, lower=int(not upper), clean=1)
        if info > 0:
            raise np.linalg.LinAlgError(f"{name}: matrix is not positive definite")
        low = mH(c) if upper else c
        return c, low
    c = linalg.cholesky(a, upper=upper)
    return c, (mH(c) if upper else c)


def _phi(x):
    """The lower triangle with half the diagonal."""
    return np.tril(x) - 0.5 * diag_embed(diagonal(x))


def cholesky_gradient(low, dlow, batched: bool = False):
    """``G = L^{-H} Phi(L^H dL) L^{-1}``, whose Hermitian part is the cotangent of ``a = L L^H``
    (Murray 2016, "Differentiation of the Cholesky decomposition", eq. 10); ``dlow`` may carry a
    leading batch axis (``batched``)."""
    x = _phi(mm(low, dlow, "C", "N"))
    y = triangular_solve(low, x, lower=True, op="C", batched=batched)
    return triangular_solve(low, y, lower=True, side="right", batched=batched)


def cholesky_tangent(low, dahat, batched: bool):
    """``dL = L Phi(L^{-1} dA L^{-H})`` for a Hermitian direction ``dahat``."""
    x = triangular_solve(low, dahat, lower=True, batched=batched)
    c = triangular_solve(low, x, lower=True, op="C", side="right", batched=batched)
    return mm(low, _phi(c))


@rrule.register(linalg.cholesky, batched=True)
def rrule_cholesky(a, *, upper=False):
    project = projector(a)
    c, low = _cholesky_setup(a, upper, "numpy.linalg.cholesky")

    def cholesky_pullback(dc):
        dc = unthunk(dc)
        if is_zero(dc):
            return NO, ZERO
        if carries_batch(c, dc):
            dc = plain(dc)
            g = cholesky_gradient(low, mH(dc) if upper else dc, batched=True)
            return NO, project.batch(fold_onto_triangle(g, lower=not upper))
        g = cholesky_gradient(low, mH(dc) if upper else dc)
        return NO, project(fold_onto_triangle(g, lower=not upper))

    return c, cholesky_pullback


@frule.register(linalg.cholesky, batched=True)
def frule_cholesky(tangents, a, *, upper=False):
    (da,) = _tangents(tangents)
    c, low = _cholesky_setup(a, upper, "numpy.linalg.cholesky")
    if is_zero(da):
        return c, ZERO
    dlow = cholesky_tangent(low, hermitian_from_triangle(da, lower=not upper), is_batched(da, a))
    return c, (mH(dlow) if upper else dlow)


# ----- symmetric eigenproblems --------------------------------------------------------------


def _lower(uplo) -> bool:
    uplo = str(uplo).upper()
    if uplo not in ("L", "U"):
        raise ValueError(f"UPLO argument must be 'L' or 'U', got {uplo!r}")
    return uplo == "L"


def eigh_inner(w, v, dw, dv, repeated: Repeated, ops=NUMPY):
    """``(diag(dw) + F * M, M)`` with ``M = V^H dV`` and ``F[i, j] = 1 / (w[j] - w[i])``: the
    cotangent in the eigenbasis that ``eigh_gradient`` (and the generalized problem's rule of
    ``scipy.linalg.eigh``) turns back; ``ZERO`` for what is absent. Without an eigenvector
    cotangent the gaps are never formed, so repeated eigenvalues are harmless. With one, ``F``
    leaves out the pairs of repeated eigenvalues, and ``repeated`` warns where their eigenvectors
    receive a cotangent.
    """
    if is_zero(dw) and is_zero(dv):
        return ZERO, ZERO
    inner, m = 0, ZERO
    if not is_zero(dw):
        inner = diag_embed(np.real(dw).astype(w.dtype, copy=False))
    if not is_zero(dv):
        m = ops.mul(v, dv, "C")
        repeated.check(m)
        inner = inner + gap_inverse(w) * m
    return inner, m


def eigh_gradient(w, v, dw, dv, repeated: Repeated, ops=NUMPY):
    """``G`` whose Hermitian part is the cotangent of the Hermitian ``a = V diag(w) V^H``:
    ``G = V (diag(dw) + F * (V^H dV)) V^H`` (``eigh_inner``)."""
    inner, _ = eigh_inner(w, v, dw, dv, repeated, ops)
    return inner if is_zero(inner) else ops.mul(ops.mul(v, inner), v, "N", "C")


def eigh_tangent(w, v, dahat, repeated: Repeated, ops=NUMPY, columns=slice(None)):
    """``(dw, dV)`` of ``a = V diag(w) V^H`` for a Hermitian direction (stacked or batched);
    ``repeated`` warns where the direction moves the eigenvectors (those in ``columns``) of
    repeated eigenvalues within their eigenspace, which ``dV`` leaves out."""
    m = ops.mul(v, ops.mul(dahat, v), "C")
    repeated.check(m, tangent=True, columns=columns)
    dw = np.real(diagonal(m))
    return dw, ops.mul(v, gap_inverse(w) * m)


@rrule.register(linalg.eigh, batched=True)
def rrule_eigh(a, *rest, **kwargs):
    lower = _lower(options("numpy.linalg.eigh", rest, kwargs, (("UPLO", "L"),))["UPLO"])
    project = projector(a)
    result = linalg.eigh(a, "L" if lower else "U")
    w, v = result
    repeated = Repeated("numpy.linalg.eigh", "eigh", w)

    def eigh_pullback(dresult):
        dw, dv = parts(dresult, result._fields)
        g = eigh_gradient(w, v, dw, dv, repeated)  # the factors broadcast against a batch of cotangents
        if is_zero(g):
            return (NO, ZERO) + (NO,) * len(rest)
        g = fold_onto_triangle(g, lower)
        return (NO, project.batch(g) if parts_carry_batch(result, (dw, dv)) else project(g)) + (NO,) * len(rest)

    return result, eigh_pullback


@frule.register(linalg.eigh, batched=True)
def frule_eigh(tangents, a, *rest, **kwargs):
    lower = _lower(options("numpy.linalg.eigh", rest, kwargs, (("UPLO", "L"),))["UPLO"])
    (da,) = _tangents(tangents)[:1]
    result = linalg.eigh(a, "L" if lower else "U")
    if is_zero(da):
        return result, ZERO
    repeated = Repeated("numpy.linalg.eigh", "eigh", result[0])
    dw, dv = eigh_tangent(result[0], result[1], hermitian_from_triangle(da, lower), repeated)
    return result, tangent_of(result, dw, dv)


def symmetric_eigen(a, lower: bool, name: str):
    """``(w, V, ops)`` of the Hermitian matrix read from one triangle: LAPACK's divide and conquer
    (SYEVD/HEEVD) for one plain matrix, ``np.linalg.eigh`` otherwise; ``ops`` is the library the
    derivative must use to stay on the same BLAS."""
    plain = _plain_matrix(as_array(a))
    if plain is None:
        w, v = linalg.eigh(a, "L" if lower else "U")
        return w, v, NUMPY
    (a,) = plain
    w, v, info = lapack("heevd" if np.iscomplexobj(a) else "syevd", a.dtype)(a, compute_v=1, lower=int(lower))
    if info > 0:
        raise np.linalg.LinAlgError(f"{name}: eigenvalues did not converge")
    return w, v, SCIPY


def eigvalsh_gradient(w, v, dw, lower: bool, ops=NUMPY):
    """The cotangent of ``a`` for ``dw`` on the eigenvalues: ``V diag(dw) V^H`` folded onto the
    triangle that was read; with SciPy, one triangle computed by two rank-k updates (SYRK)."""
    dw = np.real(dw)
    if ops is SCIPY and is_plain(v) and v.ndim == 2 and np.ndim(dw) == 1:
        return fold_triangle_of_hermitian(hermitian_product(v, dw.astype(w.dtype, copy=False), lower), lower)
    return fold_onto_triangle(ops.mul(v * plain(dw)[..., None, :], v, "N", "C"), lower)  # (also a batch of dw)


def eigvalsh_tangent(v, dahat, ops=NUMPY):
    """``dw[i] = Re(v_i^H dA v_i)``: one product, stacked or batched."""
    return np.real(np.sum(conj(v) * ops.mul(dahat, v), axis=-2))


@rrule.register(linalg.eigvalsh, batched=True)
def rrule_eigvalsh(a, *rest, **kwargs):
    lower = _lower(options("numpy.linalg.eigvalsh", rest, kwargs, (("UPLO", "L"),))["UPLO"])
    project = projector(a)
    # The eigenvectors are computed with the eigenvalues, so the pullback only multiplies.
    w, v, ops = symmetric_eigen(a, lower, "numpy.linalg.eigvalsh")

    def eigvalsh_pullback(dw):
        dw = unthunk(dw)
        if is_zero(dw):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(w, dw):
            return (NO, project.batch(eigvalsh_gradient(w, v, dw, lower, ops))) + (NO,) * len(rest)
        return (NO, project(eigvalsh_gradient(w, v, dw, lower, ops))) + (NO,) * len(rest)

    return w, eigvalsh_pullback


@frule.register(linalg.eigvalsh, batched=True)
def frule_eigvalsh(tangents, a, *rest, **kwargs):
    lower = _lower(options("numpy.linalg.eigvalsh", rest, kwargs, (("UPLO", "L"),))["UPLO"])
    (da,) = _tangents(tangents)[:1]
    w, v, ops = symmetric_eigen(a, lower, "numpy.linalg.eigvalsh")
    if is_zero(da):
        return w, ZERO
    return w, eigvalsh_tangent(v, hermitian_from_triangle(da, lower), ops)


# ----- general eigenproblem -----------------------------------------------------------------


def _largest(v):
    """Index of each eigenvector's largest component, which LAPACK makes real (GEEV)."""
    return np.argmax(np.abs(v), axis=-2)


def eig_tangent(w, v, da, repeated: Repeated, ops=NUMPY, batched: bool = False):
    """``(dw, dV)`` for ``a V = V diag(w)`` with LAPACK's normalization: unit columns whose
    largest component is real (Magnus 1985 for the raw derivative, then that gauge); ``da`` may
    carry a leading batch axis (``batched``). ``repeated`` warns where the direction moves the
    eigenvectors of repeated eigenvalues within their eigenspace, which ``dV`` leaves out."""
    m = _in_eigenbasis(v, da, ops, batched)
    repeated.check(m, tangent=True)
    dw = diagonal(m)
    raw = ops.mul(v, gap_inverse(w) * m)
    k = _largest(v)
    vk = np.take_along_axis(v, k[..., None, :], axis=-2)[..., 0, :]
    where = k[..., None, :]
    if batched:  # the index of each vector's largest component, for every row of the batch
        where = np.broadcast_to(where, np.shape(raw)[:-2] + np.shape(where)[-2:])
    rawk = np.take_along_axis(raw, where, axis=-2)[..., 0, :]
    c = -np.real(np.sum(conj(v) * raw, axis=-2))
    if np.iscomplexobj(raw):
        c = c - 1j * np.imag(rawk / vk)
    return dw, raw + v * c[..., None, :]


def _in_eigenbasis(v, da, ops, batched: bool):
    """``V^{-1} dA V``, for ``da`` with a leading batch axis too (``batched``)."""
    return ops.solve_batch(v, ops.mul(da, v)) if batched else ops.solve(v, ops.mul(da, v))


def eigvals_tangent(v, da, ops=NUMPY, batched: bool = False):
    """``dw = diag(V^{-1} dA V)``, the eigenvalues' tangent alone."""
    return diagonal(_in_eigenbasis(v, da, ops, batched))


def eig_gradient(w, v, dw, dv, repeated: Repeated | None, ops=NUMPY, batched: bool = False):
    """Adjoint of ``eig_tangent``: ``V^{-H} (diag(dw) + conj(F) * (V^H dV')) V^H``; the
    cotangents may carry a leading batch axis (``batched``). ``F`` leaves out the pairs of
    repeated eigenvalues, and ``repeated`` warns where their eigenvectors receive a cotangent
    (None: ``dv`` is a zero)."""
    inner = 0 if is_zero(dw) else diag_embed(dw)
    if not is_zero(dv):
        beta = np.sum(conj(dv) * v, axis=-2)  # dv_i^H v_i
        draw = dv - v * np.real(beta)[..., None, :]
        if np.iscomplexobj(v):
            k = _largest(v)
            vk = np.take_along_axis(v, k[..., None, :], axis=-2)[..., 0, :]
            onehot = np.arange(v.shape[-2])[:, None] == k[..., None, :]  # the largest component of each vector
            draw = draw + onehot * (1j * np.imag(beta) / np.conj(vk))[..., None, :]
        m = ops.mul(v, draw, "C")
        repeated.check(m)
        inner = inner + conj(gap_inverse(w)) * m
    if batched:
        return ops.solve_batch(mH(v), ops.mul(inner, v, "N", "C"))
    return ops.solve(mH(v), ops.mul(inner, v, "N", "C"))


@rrule.register(linalg.eig, batched=True)
def rrule_eig(a):
    project = projector(a)
    result = linalg.eig(a)
    w, v = result
    repeated = Repeated("numpy.linalg.eig", "eig", w)

    def eig_pullback(dresult):
        dw, dv = parts(dresult, result._fields)
        if is_zero(dw) and is_zero(dv):
            return NO, ZERO
        if parts_carry_batch(result, (dw, dv)):
            return NO, project.batch(eig_gradient(w, v, plain(dw), plain(dv), repeated, batched=True))
        return NO, project(eig_gradient(w, v, dw, dv, repeated))

    return result, eig_pullback


@frule.register(linalg.eig, batched=True)
def frule_eig(tangents, a):
    (da,) = _tangents(tangents)
    result = linalg.eig(a)
    if is_zero(da):
        return result, ZERO
    repeated = Repeated("numpy.linalg.eig", "eig", result[0])
    dw, dv = eig_tangent(result[0], result[1], da, repeated, batched=is_batched(da, a))
    return result, tangent_of(result, dw, dv)


@rrule.register(linalg.eigvals, batched=True)
def rrule_eigvals(a):
    project = projector(a)
    w, v = linalg.eig(a)

    def eigvals_pullback(dw):
        dw = unthunk(dw)
        if is_zero(dw):
            return NO, ZERO
        if carries_batch(w, dw):
            return NO, project.batch(eig_gradient(w, v, plain(dw), ZERO, None, batched=True))
        return NO, project(eig_gradient(w, v, dw, ZERO, None))

    return w, eigvals_pullback


@frule.register(linalg.eigvals, batched=True)
def frule_eigvals(tangents, a):
    (da,) = _tangents(tangents)
    w, v = linalg.eig(a)
    if is_zero(da):
        return w, ZERO
    return w, eigvals_tangent(v, da, batched=is_batched(da, a))


# ----- singular value decomposition ---------------------------------------------------------


def _safe_inverse(s):
    with np.errstate(divide="ignore"):
        return np.where(s == 0, 0, 1 / np.where(s == 0, 1, s))


def svd_gradient(u, s, vh, du, ds, dvh, repeated: Repeated, ops=NUMPY):
    """The cotangent of ``a = U diag(s) Vh`` (Townsend 2016, "Differentiating the singular value
    decomposition"; the complex phase term of Wan & Zhang 2019). ``U``/``Vh`` may be full: the
    extra columns take the gauge in which they rotate only against the first ``k``. Between
    repeated singular values the part of ``U^H dU`` and ``V^H dV`` that turns ``U`` against ``V``
    is kept (``singular_gap_inverses``), the rest left out, where ``repeated`` warns."""
    if is_zero(ds) and is_zero(du) and is_zero(dvh):
        return ZERO
    mul = ops.mul
    k = s.shape[-1]
    uk, vhk = u[..., :, :k], vh[..., :k, :]
    inv_s = _safe_inverse(s)
    inner = 0 if is_zero(ds) else diag_embed(np.real(ds).astype(s.dtype, copy=False))
    cu, cv = singular_gap_inverses(s)
    extra = 0
    if not is_zero(du):
        duk = du[..., :, :k]
        if u.shape[-1] > k:  # full U: the complement U_perp moves with -U_k dU_k^H U_perp
            duk = duk - mul(u[..., :, k:], mul(du[..., :, k:], uk, "C"))
        j = mul(uk, duk, "C")
        repeated.check(j)
        inner = inner + cu * (j - mH(j))
        if np.iscomplexobj(j):
            inner = inner + diag_embed(1j * np.imag(diagonal(j)) * inv_s)
        if u.shape[-2] > k:
            extra = extra + mul((duk - mul(uk, j)) * inv_s[..., None, :], vhk)
    if not is_zero(dvh):
        dvhk = dvh[..., :k, :]  # the cotangent of Vh's first k rows, i.e. of V_k^H
        if vh.shape[-2] > k:
            dvhk = dvhk - mul(mul(vhk, dvh[..., k:, :], "N", "C"), vh[..., k:, :])
        kk = mul(vhk, dvhk, "N", "C")  # = V_k^H dV_k with dV = dVh^H
        repeated.check(kk)
        inner = inner + cv * (kk - mH(kk))
        if vh.shape[-1] > k:
            extra = extra + mul(uk * inv_s[..., None, :], dvhk - mul(kk, vhk, "C"))
    return mul(mul(uk, inner), vhk) + extra


def svd_tangent(u, s, vh, da, repeated: Repeated, ops=NUMPY):
    """``(dU, ds, dVh)`` of ``a = U diag(s) Vh``; the gauge puts the phase of complex ``dP`` in ``U``.
    Between repeated singular values the Hermitian part of ``dP = U^H dA V`` has no tangent of the
    vectors, where ``repeated`` warns; its anti-Hermitian part turns ``U`` against ``V``."""
    mul = ops.mul
    k = s.shape[-1]
    uk, vhk = u[..., :, :k], vh[..., :k, :]
    inv_s = _safe_inverse(s)
    cu, cv = singular_gap_inverses(s)
    dav = mul(da, vhk, "N", "C")
    dp = mul(uk, dav, "C")
    repeated.check(dp + mH(dp), tangent=True, whole=dp)
    ds = np.real(diagonal(dp))
    du = mul(uk, cu * dp + cv * mH(dp))
    dvh = mul(cv * dp + cu * mH(dp), vhk, "C", "N")  # dV_k^H
    if np.iscomplexobj(dp):
        du = du + uk * (1j * np.imag(diagonal(dp)) * inv_s)[..., None, :]
    if u.shape[-2] > k:
        du = du + (dav - mul(uk, dp)) * inv_s[..., None, :]
    if vh.shape[-1] > k:
        dah_u = mul(uk, da, "C")  # (dA^H U)^H
        dvh = dvh + inv_s[..., :, None] * (dah_u - mul(dp, vhk))
    if u.shape[-1] > k:
        du = np.concatenate([du, -mul(uk, mul(du, u[..., :, k:], "C"))], axis=-1)
    if vh.shape[-2] > k:
        dvh = np.concatenate([dvh, -mul(mul(vh[..., k:, :], dvh, "N", "C"), vhk)], axis=-2)
    return du, ds, dvh


def svdvals_tangent(u, vh, da, ops=NUMPY):
    """``ds[i] = Re(u_i^H dA v_i)`` of the thin factors: the singular values' tangent alone."""
    return np.real(np.sum(conj(u) * ops.mul(da, vh, "N", "C"), axis=-2))


def _svd_options(rest, kwargs):
    return options(
        "numpy.linalg.svd", rest, kwargs, (("full_matrices", True), ("compute_uv", True), ("hermitian", False))
    )


@rrule.register(linalg.svd, batched=True)
def rrule_svd(a, *rest, **kwargs):
    opts = _svd_options(rest, kwargs)
    project = projector(a)
    hermitian = opts["hermitian"]
    full = opts["full_matrices"] and opts["compute_uv"]
    u, s, vh = linalg.svd(a, full_matrices=full, compute_uv=True, hermitian=hermitian)
    result = _SVDResult(u, s, vh) if opts["compute_uv"] else s
    repeated = Repeated("numpy.linalg.svd", "svd", s)

    def svd_pullback(dresult):
        if opts["compute_uv"]:
            du, ds, dvh = parts(dresult, result._fields)
        else:
            du, ds, dvh = ZERO, unthunk(dresult), ZERO
        g = svd_gradient(u, s, vh, du, ds, dvh, repeated)  # the factors broadcast against a batch of cotangents
        if is_zero(g):
            return (NO, ZERO) + (NO,) * len(rest)
        da = fold_onto_triangle(g, lower=True) if hermitian else g
        batched = parts_carry_batch((u, s, vh), (du, ds, dvh))
        return (NO, project.batch(da) if batched else project(da)) + (NO,) * len(rest)

    return result, svd_pullback


@frule.register(linalg.svd, batched=True)
def frule_svd(tangents, a, *rest, **kwargs):
    opts = _svd_options(rest, kwargs)
    (da,) = _tangents(tangents)[:1]
    full = opts["full_matrices"] and opts["compute_uv"]
    u, s, vh = linalg.svd(a, full_matrices=full, compute_uv=True, hermitian=opts["hermitian"])
    result = _SVDResult(u, s, vh) if opts["compute_uv"] else s
    if is_zero(da):
        return result, ZERO
    if opts["hermitian"]:
        da = hermitian_from_triangle(da, lower=True)
    if not opts["compute_uv"]:
        return result, svdvals_tangent(u, vh, da)
    du, ds, dvh = svd_tangent(u, s, vh, da, Repeated("numpy.linalg.svd", "svd", s))
    return result, tangent_of(result, du, ds, dvh)


@rrule.register(linalg.svdvals, batched=True)
def rrule_svdvals(x):
    project = projector(x)
    u, s, vh = linalg.svd(x, full_matrices=False)

    def svdvals_pullback(ds):
        ds = unthunk(ds)
        if is_zero(ds):
            return NO, ZERO
        if carries_batch(s, ds):
            return NO, project.batch((u * np.real(plain(ds))[..., None, :]) @ vh)
        return NO, project((u * np.real(ds)[..., None, :]) @ vh)

    return s, svdvals_pullback


@frule.register(linalg.svdvals, batched=True)
def frule_svdvals(tangents, x):
    (dx,) = _tangents(tangents)
    u, s, vh = linalg.svd(x, full_matrices=False)
    if is_zero(dx):
        return s, ZERO
    return s, svdvals_tangent(u, vh, dx)


# ----- QR -----------------------------------------------------------------------------------


def _sym_upper(x):
    """``triu(x, 1) + triu(x, 1)^H + Re(diag(x))``."""
    up = np.triu(x, 1)
    return up + mH(up) + diag_embed(np.real(diagonal(x))).astype(x.dtype, copy=False)


def qr_gradient(q, r, dq, dr, ops=NUMPY, batched: bool = False):
    """The cotangent of ``a = Q R`` for ``m >= n`` (reduced factors), ``m < n``, and full ``Q``.

    Square and tall: ``[dQ - Q sym(Q^H dQ - dR R^H)] R^{-H}`` (Walter & Lehmann 2018, and
    Liao et al. 2019 for the wide case, which splits ``a = [X | Y]`` with ``X`` square). The
    cotangents may carry a leading batch axis (``batched``).
    """
    if is_zero(dq) and is_zero(dr):
        return ZERO
    mul = ops.mul
    m, n = q.shape[-2], r.shape[-1]
    k = min(m, n)
    if q.shape[-1] > k and not is_zero(dq):  # complete Q of a tall matrix
        dq = dq[..., :, :k] - mul(q[..., :, k:], mul(dq[..., :, k:], q[..., :, :k], "C"))
    q = q[..., :, :k]
    if not is_zero(dr):
        dr = dr[..., :k, :]
    r = r[..., :k, :]
    if m >= n:
        return _qr_square_gradient(q, r, dq, dr, ops, batched)
    r1, r2 = r[..., :, :m], r[..., :, m:]
    dr1 = ZERO if is_zero(dr) else dr[..., :, :m]
    dr2 = ZERO if is_zero(dr) else dr[..., :, m:]
    if not is_zero(dr2):
        coupling = mul(mul(q, r2), dr2, "N", "C")  # the right block of a, rebuilt, couples through Q
        dq = coupling if is_zero(dq) else dq + coupling
    dx = _qr_square_gradient(q, r1, dq, dr1, ops, batched)
    if is_zero(dr2):
        dy = np.zeros(np.shape(dx)[:-1] + (n - m,), dtype=np.result_type(q, r))
    else:
        dy = mul(q, dr2)
    if is_zero(dx):
        dx = np.zeros(np.shape(dy)[:-1] + (m,), dtype=dy.dtype)
    return np.concatenate([dx, dy], axis=-1)


def _qr_square_gradient(q, r, dq, dr, ops, batched=False):
    if is_zero(dq) and is_zero(dr):
        return ZERO
    x = 0
    if not is_zero(dq):
        x = ops.mul(q, dq, "C")
    if not is_zero(dr):
        x = x - ops.mul(dr, r, "N", "C")
    w = (0 if is_zero(dq) else dq) - ops.mul(q, _sym_upper(x))
    return ops.trisolve(r, w, lower=False, op="C", side="right", batched=batched)  # w R^{-H}


def qr_tangent(q, r, da, ops=NUMPY, batched: bool = False):
    """``(dQ, dR)`` of ``a = Q R`` (Householder QR: the diagonal of ``R`` is real); ``da`` may
    carry a leading batch axis (``batched``)."""
    mul = ops.mul
    m, n = q.shape[-2], r.shape[-1]
    k = min(m, n)
    qk, rk = q[..., :, :k], r[..., :k, :]
    if m < n:
        dx, dy = da[..., :, :m], da[..., :, m:]
        dq, dr1 = _qr_square_tangent(qk, rk[..., :, :m], dx, ops, batched)
        dr2 = mul(dq, mul(qk, rk[..., :, m:]), "C") + mul(qk, dy, "C")
        return dq, np.concatenate([dr1, dr2], axis=-1)
    dq, dr = _qr_square_tangent(qk, rk, da, ops, batched)
    if q.shape[-1] > k:
        qperp = q[..., :, k:]
        dq = np.concatenate([dq, -mul(qk, mul(dq, qperp, "C"))], axis=-1)
        dr = np.concatenate([dr, np.zeros(dr.shape[:-2] + (m - k, n), dtype=dr.dtype)], axis=-2)
    return dq, dr


def _qr_square_tangent(q, r, da, ops, batched=False):
    dar = ops.trisolve(r, da, lower=False, side="right", batched=batched)  # da r^{-1}
    c = ops.mul(q, dar, "C")
    low = np.tril(c, -1)
    omega = low - mH(low)
    if np.iscomplexobj(c):
        omega = omega + diag_embed(1j * np.imag(diagonal(c)))
    dr = ops.mul(c - omega, r)
    dq = ops.mul(q, omega) + dar - ops.mul(q, c)
    return dq, np.triu(dr)


def _qr_mode(a, rest, kwargs, name):
    mode = options(name, rest, kwargs, (("mode", "reduced"),))["mode"]
    if mode in ("raw", "full", "f", "economic", "e"):  # (NumPy's deprecated ones among them)
        raise no_rule(name, (a, *rest), f"mode={mode!r} has no derivative; use 'reduced', 'complete' or 'r'")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unrecognized mode {mode!r}")  # (NumPy's)
    return mode


@rrule.register(linalg.qr, batched=True)
def rrule_qr(a, *rest, **kwargs):
    mode = _qr_mode(a, rest, kwargs, "numpy.linalg.qr")
    project = projector(a)
    q, r = linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    result = r if mode == "r" else _QRResult(q, r)

    def qr_pullback(dresult):
        dq, dr = (ZERO, unthunk(dresult)) if mode == "r" else parts(dresult, result._fields)
        if parts_carry_batch((q, r), (dq, dr)):
            g = qr_gradient(q, r, plain(dq), plain(dr), batched=True)
            return (NO, ZERO if is_zero(g) else project.batch(g)) + (NO,) * len(rest)
        g = qr_gradient(q, r, dq, dr)
        return (NO, ZERO if is_zero(g) else project(g)) + (NO,) * len(rest)

    return result, qr_pullback


@frule.register(linalg.qr, batched=True)
def frule_qr(tangents, a, *rest, **kwargs):
    mode = _qr_mode(a, rest, kwargs, "numpy.linalg.qr")
    (da,) = _tangents(tangents)[:1]
    q, r = linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    result = r if mode == "r" else _QRResult(q, r)
    if is_zero(da):
        return result, ZERO
    dq, dr = qr_tangent(q, r, da, batched=is_batched(da, a))
    return result, (dr if mode == "r" else tangent_of(result, dq, dr))


# ----- least squares and pseudo-inverse -----------------------------------------------------


def pinv_tangent(a, y, da, ops=NUMPY):
    """``dY`` of ``Y = pinv(a)`` at locally constant rank (Golub & Pereyra 1973, eq. 4.12):
    ``-Y dA Y + Y Y^H dA^H (I - A Y) + (I - Y A) dA^H Y^H Y``."""
    mul = ops.mul
    dah = mH(da)
    term1 = -mul(mul(y, da), y)
    term2 = mul(mul(y, y, "N", "C"), dah - mul(mul(dah, a), y))
    term3 = mul(dah - mul(mul(y, a), dah), mul(y, y, "C"))
    return term1 + term2 + term3


def pinv_gradient(a, y, dy, ops=NUMPY):
    """Adjoint of ``pinv_tangent``."""
    mul = ops.mul
    dyh = mH(dy)
    grad = -mul(mul(y, dy, "C"), y, "N", "C")
    grad = grad + mul(dyh - mul(mul(a, y), dyh), mul(y, y, "N", "C"))  # (I - A Y) dY^H Y Y^H
    grad = grad + mul(mul(y, y, "C"), dyh - mul(dyh, mul(y, a)))  # Y^H Y dY^H (I - Y A)
    return grad


@rrule.register(linalg.pinv, batched=True)
def rrule_pinv(a, *rest, **kwargs):
    hermitian = options("numpy.linalg.pinv", rest, kwargs, (("rcond", None), ("hermitian", False), ("rtol", None)))[
        "hermitian"
    ]
    project = projector(a)
    y = linalg.pinv(a, *rest, **kwargs)
    a_read = hermitian_from_triangle(a, lower=True) if hermitian else a

    def pinv_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO) + (NO,) * len(rest)
        batched = carries_batch(y, dy)  # the factors broadcast against a batch of cotangents
        g = pinv_gradient(a_read, y, plain(dy) if batched else dy)
        g = fold_onto_triangle(g, lower=True) if hermitian else g
        return (NO, project.batch(g) if batched else project(g)) + (NO,) * len(rest)

    return y, pinv_pullback


@frule.register(linalg.pinv, batched=True)
def frule_pinv(tangents, a, *rest, **kwargs):
    hermitian = options("numpy.linalg.pinv", rest, kwargs, (("rcond", None), ("hermitian", False), ("rtol", None)))[
        "hermitian"
    ]
    (da,) = _tangents(tangents)[:1]
    y = linalg.pinv(a, *rest, **kwargs)
    if is_zero(da):
        return y, ZERO
    if hermitian:
        a, da = hermitian_from_triangle(a, lower=True), hermitian_from_triangle(da, lower=True)
    return y, pinv_tangent(a, y, da)


_LstsqResult = type(linalg.lstsq(np.eye(1), np.ones(1)))  # a plain tuple


def lstsq_setup(a, b, rcond, ops=NUMPY, svd=linalg.svd, vector_residual=False, rank_type=np.int32):
    """The SVD of ``a`` shared by the solution, the outputs and their derivatives.

    ``rcond`` follows NumPy (None: ``eps * max(m, n)``; negative: ``eps``); SciPy's ``cond``
    passes its own default in. ``vector_residual``: SciPy returns a scalar residual for a vector b.
    ``rank_type``: the rank's type as the library returns it (NumPy's LAPACK int32, SciPy's int).
    """
    mul = ops.mul
    a, b = as_array(a), as_array(b)
    dtype = float_dtype(a, b)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    m, n = a.shape
    u, s, vh = svd(a, full_matrices=False)
    eps = np.finfo(s.dtype).eps
    if rcond is None:
        rcond = eps * max(m, n)
    elif rcond < 0:
        rcond = eps
    rank = int(np.count_nonzero(s > rcond * s[0])) if s.size else 0
    ur, sr, vhr = u[:, :rank], s[:rank], vh[:rank]
    col = b[:, None] if b.ndim == 1 else b
    x = mul(vhr, mul(ur, col, "C") / sr[:, None], "C")
    r = col - mul(a, x)
    if rank == n and m > n:
        residuals = np.sum(np.abs(r) ** 2, axis=0)
        if vector_residual and b.ndim == 1:
            residuals = residuals[0]
    else:
        residuals = np.empty(0, dtype=s.dtype)
    xs = x[:, 0] if b.ndim == 1 else x
    ctx = dict(a=a, u=u, s=s, vh=vh, ur=ur, sr=sr, vhr=vhr, x=x, r=r, vector=b.ndim == 1, mul=mul)
    return (xs, residuals, rank_type(rank), s), ctx


def _pinv_apply(c, v):
    """``A^+ v`` from the truncated SVD."""
    mul = c["mul"]
    return mul(c["vhr"], mul(c["ur"], v, "C") / c["sr"][:, None], "C")


def _pinv_h_apply(c, v):
    """``A^{+H} v``."""
    mul = c["mul"]
    return mul(c["ur"], mul(c["vhr"], v) / c["sr"][:, None])


def lstsq_gradient(result, c, dx, dres, ds, batched: bool = False):
    """``(da, db)`` of least squares ``x = A^+ b`` at locally constant rank; from the pseudo-inverse
    derivative (Golub & Pereyra 1973): ``-b' x^H + r (A^+ b')^H + (A^{+H} x) ((I - A^+ A) dx)^H``
    with ``b' = A^{+H} dx``; residuals add ``2 r dres``; singular values ``U diag(ds) V^H``. The
    cotangents may carry a leading batch axis (``batched``)."""
    mul = c["mul"]
    x, r, vector = c["x"], c["r"], c["vector"]
    da, db = 0, 0
    if not is_zero(dx):
        dxc = dx[..., None] if vector else dx
        db = _pinv_h_apply(c, dxc)
        q_dx = dxc - mul(c["vhr"], mul(c["vhr"], dxc), "C")  # (I - A^+ A) dx
        da = -mul(db, x, "N", "C") + mul(r, _pinv_apply(c, db), "N", "C") + mul(_pinv_h_apply(c, x), q_dx, "N", "C")
    if not is_zero(dres) and np.size(result[1]):
        weight = np.real(dres)
        if batched:  # one row of weights per residual column (one for a vector b)
            weight = np.reshape(weight, (np.shape(weight)[0], 1, -1))
        weighted = 2 * r * weight
        db = db + weighted
        da = da - mul(weighted, x, "N", "C")
    if not is_zero(ds) and ds is not None:
        da = da + mul(c["u"] * np.real(ds)[..., None, :], c["vh"])
    da = ZERO if np.ndim(da) == 0 else da
    db = ZERO if np.ndim(db) == 0 else (db[..., 0] if vector else db)
    return da, db


def lstsq_tangent(result, c, da, db):
    """``(dx, dres, ds)`` of least squares at locally constant rank."""
    mul = c["mul"]
    x, r, vector = c["x"], c["r"], c["vector"]
    rhs = 0 if is_zero(db) else (db[..., None] if vector else db)  # (also a batch of tangents)
    if not is_zero(da):
        rhs = rhs - mul(da, x)
    if np.ndim(rhs) == 0:
        return ZERO, ZERO, ZERO
    dx = _pinv_apply(c, rhs)
    if not is_zero(da):
        # + A^+ A^{+H} dA^H r + (I - A^+ A) dA^H A^{+H} x
        vhr = c["vhr"]
        dx = dx + mul(vhr, mul(vhr, mul(da, r, "C")) / (c["sr"] ** 2)[:, None], "C")
        q = mul(da, _pinv_h_apply(c, x), "C")
        dx = dx + q - mul(vhr, mul(vhr, q), "C")
    dres = ZERO
    if np.size(result[1]):
        dres = 2 * np.real(np.sum(conj(r) * rhs, axis=-2))
        if np.ndim(result[1]) == 0:
            dres = dres[..., 0]
    ds = ZERO if is_zero(da) else np.real(np.sum(conj(c["u"]) * mul(da, c["vh"], "N", "C"), axis=-2))
    return (dx[..., 0] if vector else dx), dres, ds


@rrule.register(linalg.lstsq, batched=True)
def rrule_lstsq(a, b, *rest, **kwargs):
    rcond = options("numpy.linalg.lstsq", rest, kwargs, (("rcond", None),))["rcond"]
    project_a, project_b = projector(a), projector(b)
    result, c = lstsq_setup(a, b, rcond)

    def lstsq_pullback(dresult):
        dx, dres, _, ds = parts(dresult, 4)
        if parts_carry_batch(result, (dx, dres, ZERO, ds)):
            da, db = lstsq_gradient(result, c, plain(dx), plain(dres), plain(ds), batched=True)
            return (NO, project_a.batch(da), project_b.batch(db)) + (NO,) * len(rest)
        da, db = lstsq_gradient(result, c, dx, dres, ds)
        return (NO, project_a(da), project_b(db)) + (NO,) * len(rest)

    return result, lstsq_pullback


@frule.register(linalg.lstsq, batched=True)
def frule_lstsq(tangents, a, b, *rest, **kwargs):
    rcond = options("numpy.linalg.lstsq", rest, kwargs, (("rcond", None),))["rcond"]
    da, db = _tangents(tangents)[:2]
    result, c = lstsq_setup(a, b, rcond)
    dx, dres, ds = lstsq_tangent(result, c, da, db)
    return result, tangent_of(result, dx, dres, NO, ds)


# ----- matrix power -------------------------------------------------------------------------


def _power_program(n: int):
    """NumPy's binary powering as a program ``[(out, left, right)]`` over slots (slot 0 is the base).

    The same products in the same order as ``np.linalg.matrix_power``, so the primal is identical.
    """
    if n == 1:
        return [], 0
    if n == 2:
        return [(1, 0, 0)], 1
    if n == 3:
        return [(1, 0, 0), (2, 1, 0)], 2
    program, z, result, slots = [], None, None, 1
    while n > 0:
        if z is None:
            z = 0
        else:
            program.append((slots, z, z))
            z, slots = slots, slots + 1
        n, bit = divmod(n, 2)
        if bit:
            if result is None:
                result = z
            else:
                program.append((slots, result, z))
                result, slots = slots, slots + 1
    return program, result


def _run_power(base, program, out):
    values = {0: base}
    for o, left, right in program:
        values[o] = values[left] @ values[right]
    return values, values[out]


@rrule.register(linalg.matrix_power, batched=True)
def rrule_matrix_power(a, n):
    if isinstance(a, (list, tuple)):  # (its products would be of lists)
        return rrule_on_arrays(rrule_matrix_power, (a, n))
    project = projector(a)
    n = int(n)
    if n == 0:
        y = linalg.matrix_power(a, 0)
        return y, lambda dy: (NO, ZERO, NO)
    base = linalg.inv(a) if n < 0 else a
    program, out = _power_program(abs(n))
    values, y = _run_power(base, program, out)

    def matrix_power_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, ZERO, NO
        grads = {out: plain(dy)}
        for o, left, right in reversed(program):
            g = grads.pop(o, None)
            if g is None:
                continue
            grads[left] = grads.get(left, 0) + g @ mH(values[right])
            grads[right] = grads.get(right, 0) + mH(values[left]) @ g
        dbase = grads.get(0, 0)
        if n < 0:
            bh = mH(base)
            dbase = -(bh @ dbase @ bh)
        # a batch of cotangents: the powers broadcast against it all along
        return NO, (project.batch(dbase) if carries_batch(y, dy) else project(dbase)), NO

    return y, matrix_power_pullback


@frule.register(linalg.matrix_power, batched=True)
def frule_matrix_power(tangents, a, n):
    if isinstance(a, (list, tuple)):
        return frule_on_arrays(frule_matrix_power, tangents, (a, n))
    (da,) = _tangents(tangents)[:1]
    n = int(n)
    if n == 0 or is_zero(da):
        return linalg.matrix_power(a, n), ZERO
    base = linalg.inv(a) if n < 0 else a
    dbase = -(base @ da @ base) if n < 0 else da
    program, out = _power_program(abs(n))
    values, dvalues = {0: base}, {0: dbase}
    for o, left, right in program:
        values[o] = values[left] @ values[right]
        dvalues[o] = dvalues[left] @ values[right] + values[left] @ dvalues[right]
    return values[out], dvalues[out]


# ----- norms --------------------------------------------------------------------------------


def _sgn(x):
    """``x / |x|``, and 0 at 0 (the subgradient ChainRules takes for norms at zero)."""
    ax = np.abs(x)
    return np.where(ax == 0, 0, x / np.where(ax == 0, 1, ax))


def _ties(mask, axes):
    """``mask`` divided by its count over ``axes``: ties share the derivative of a max or min."""
    return mask / np.sum(mask, axis=axes, keepdims=True)


def _safe_divide(x, y):
    return np.where(y == 0, 0, x / np.where(y == 0, 1, y))


def vector_norm_weights(x, order, axes):
    """``(y, G)``: the norm over ``axes`` (kept as size-1 axes) and ``G`` with
    ``d y = Re(sum(conj(G) * dx, axes))``."""
    ax = np.abs(x)
    if order is None or order == 2:
        y = np.sqrt(np.sum(ax * ax, axis=axes, keepdims=True))
        return y, _safe_divide(x, y)
    if order == np.inf or order == -np.inf:
        if order > 0:  # (the largest of no entries is 0, as NumPy's norm says)
            y = np.max(ax, axis=axes, keepdims=True, initial=0)
        else:
            y = np.min(ax, axis=axes, keepdims=True)
        return y, _sgn(x) * _ties(ax == y, axes)
    if order == 0:
        return np.sum(ax != 0, axis=axes, keepdims=True).astype(ax.dtype), np.zeros_like(x)
    if order == 1:
        return np.sum(ax, axis=axes, keepdims=True), _sgn(x)
    order = float(order)
    with np.errstate(divide="ignore"):
        y = np.sum(ax**order, axis=axes, keepdims=True) ** (1 / order)
        ratio = np.where(ax == 0, 0, _safe_divide(ax, y))
        return y, _sgn(x) * np.where(ax == 0, 0, ratio ** (order - 1))


def matrix_norm_weights(x, order, axes):
    """``(y, G)`` for a matrix norm over the two ``axes``, like ``vector_norm_weights``."""
    row, col = axes
    ax = np.abs(x)
    if order is None or order == "fro":
        return vector_norm_weights(x, 2, axes)
    if order in ("nuc", 2, -2):
        moved = np.moveaxis(x, (row, col), (-2, -1))
        u, s, vh = linalg.svd(moved, full_matrices=False)
        if order == "nuc":
            y, g = np.sum(s, axis=-1), u @ vh
        else:
            i = 0 if order == 2 else -1
            y, g = s[..., i], u[..., :, i : i + 1 or None] @ vh[..., i : i + 1 or None, :]
        y = np.expand_dims(y, (row, col)) if row < col else np.expand_dims(y, (col, row))
        return y, np.moveaxis(g, (-2, -1), (row, col))
    if order in (1, -1):
        sums = np.sum(ax, axis=row, keepdims=True)
        pick = np.max if order == 1 else np.min
        y = pick(sums, axis=col, keepdims=True)
        return y, _sgn(x) * _ties(sums == y, col)
    if order in (np.inf, -np.inf):
        sums = np.sum(ax, axis=col, keepdims=True)
        pick = np.max if order > 0 else np.min
        y = pick(sums, axis=row, keepdims=True)
        return y, _sgn(x) * _ties(sums == y, row)
    raise ValueError(f"Invalid norm order {order!r} for matrices.")


def _norm_setup(x, order, axis, keepdims, matrix_default: bool = False):
    """``(y, G, axes)`` for ``np.linalg.norm``'s conventions."""
    x = as_array(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    nd = x.ndim
    if axis is None:
        if order is None:
            axes, kind = tuple(range(nd)), "vector"
        elif nd == 1:
            axes, kind = (0,), "vector"
        elif nd == 2:
            axes, kind = (0, 1), "matrix"
        else:
            raise ValueError("Improper number of dimensions to norm.")
    elif isinstance(axis, (int, np.integer)):
        axes, kind = (int(axis) % nd,), "vector"
    else:
        axes = tuple(int(a) % nd for a in axis)
        kind = "matrix" if len(axes) == 2 else "vector"
        if len(axes) != 2:
            raise ValueError("Improper number of dimensions to norm.")
    if kind == "vector":
        if isinstance(order, str):
            raise ValueError(f"Invalid norm order {order!r} for vectors")
        y, g = vector_norm_weights(x, order, axes)
    else:
        y, g = matrix_norm_weights(x, order, axes)
    return _finish(y.astype(x.real.dtype, copy=False), axes, keepdims), g.astype(x.dtype, copy=False), axes


def _finish(y, axes, keepdims):
    y = y if keepdims else np.squeeze(y, axis=axes)
    return scalar_of(y)


def _norm_rrule(x, y, g, axes, keepdims):
    project = projector(x)

    def norm_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, ZERO
        dy = np.real(dy)
        if carries_batch(y, dy):  # a batch of cotangents: the weights G scale every row alike
            return NO, match_input_batch(x, (dy if keepdims else np.expand_dims(dy, tuple(a + 1 for a in axes))) * g)
        if not keepdims:
            dy = np.expand_dims(dy, axes)
        return NO, project(dy * g)

    return norm_pullback


def _norm_gradient_batch(dy, g, axes, keepdims):
    """``dy * g`` for a batch of cotangents ``dy`` of a norm over ``axes`` (``scipy.linalg.norm``'s
    pullback): the batch axis in front."""
    dy = np.real(plain(dy))
    if not keepdims:
        dy = np.expand_dims(dy, tuple(a + 1 for a in axes))
    return dy * g


def _norm_tangent(x, dx, g, axes, keepdims):
    shift = 1 if is_batched(dx, x) else 0
    return np.real(np.sum(conj(g) * dx, axis=tuple(a + shift for a in axes), keepdims=keepdims))


def _order_partial(x, y, order, axes, keepdims):
    """dy/d ord of the norm ``y`` of ``x`` over ``axes``, a vector p-norm of finite nonzero p =
    ``ord``: (1/p) y (sum |x|^p log|x| / sum |x|^p - log(sum |x|^p) / p); None for the other norms,
    whose orders take values apart (its limit at p = inf is 0)."""
    if len(axes) != 1 or order is None or isinstance(order, str) or order == 0 or np.isinf(order):
        return None
    ax = np.abs(as_array(x))
    kept = y if keepdims else np.expand_dims(y, axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        powers = ax**order
        logs = np.log(np.where(ax == 0, 1, ax))  # (|x|^p log|x| -> 0 at 0, for p > 0; y = 0 for p < 0)
        total = np.sum(powers, axis=axes, keepdims=True)
        slope = kept / order * (np.sum(powers * logs, axis=axes, keepdims=True) / total - np.log(total) / order)
    return _finish(np.where(kept == 0, 0, slope), axes, keepdims)


def norm_rest_cotangents(x, y, rest: tuple, axes, keepdims, dy) -> tuple:
    """The cotangents of a norm's arguments after ``x`` (``ord, axis, keepdims, ...``) given by
    position, from the norm's cotangent ``dy`` (perhaps a batch): ``ord``'s where it is a p-norm's p
    (``_order_partial``), which the engines pass by position when it is being differentiated."""
    partial = _order_partial(x, y, rest[0], axes, keepdims) if rest else None
    if partial is None or is_zero(dy):
        return (NO,) * len(rest)
    batch = carries_batch(y, dy)
    d = np.sum(np.real(dy) * partial, axis=tuple(range(int(batch), np.ndim(dy))))
    return (match_input_batch(rest[0], d) if batch else match_input(rest[0], d), *(NO,) * (len(rest) - 1))


def norm_order_tangent(x, y, rest: tuple, axes, keepdims, tangents: tuple):
    """The norm's tangent from its ``ord``'s tangent (the first of ``tangents`` after x's), or ZERO."""
    d = unthunk(tangents[0]) if tangents else ZERO
    partial = None if is_zero(d) else _order_partial(x, y, rest[0], axes, keepdims)
    if partial is None:
        return ZERO
    term = partial * np.reshape(d, np.shape(d) + (1,) * np.ndim(partial))
    return np.asarray(term, dtype=np.result_type(partial))[()]  # (in the norm's precision)


def _norm_options(rest, kwargs):
    return options("numpy.linalg.norm", rest, kwargs, (("ord", None), ("axis", None), ("keepdims", False)))


@rrule.register(linalg.norm, batched=True)
def rrule_norm(x, *rest, **kwargs):
    o = _norm_options(rest, kwargs)
    y, g, axes = _norm_setup(x, o["ord"], o["axis"], o["keepdims"])
    back = _norm_rrule(x, y, g, axes, o["keepdims"])

    def norm_pullback(dy):
        dy = unthunk(dy)
        return back(dy) + norm_rest_cotangents(x, y, rest, axes, o["keepdims"], dy)

    return y, norm_pullback


@frule.register(linalg.norm, batched=True)
def frule_norm(tangents, x, *rest, **kwargs):
    o = _norm_options(rest, kwargs)
    (dx,) = _tangents(tangents)[:1]
    y, g, axes = _norm_setup(x, o["ord"], o["axis"], o["keepdims"])
    dy = norm_order_tangent(x, y, rest, axes, o["keepdims"], tangents[2:])
    if is_zero(dx):
        return y, dy
    dy_x = _norm_tangent(x, dx, g, axes, o["keepdims"])
    return y, dy_x if is_zero(dy) else dy_x + dy


def _vector_norm_setup(x, axis, keepdims, order):
    x = as_array(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    if axis is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (int(axis) % x.ndim,)
    else:
        axes = tuple(int(a) % x.ndim for a in axis)
    y, g = vector_norm_weights(x, order, axes)
    return _finish(y.astype(x.real.dtype, copy=False), axes, keepdims), g.astype(x.dtype, copy=False), axes


@rrule.register(linalg.vector_norm, batched=True)
def rrule_vector_norm(x, *, axis=None, keepdims=False, ord=2):  # noqa: A002 (NumPy's keyword)
    y, g, axes = _vector_norm_setup(x, axis, keepdims, ord)
    return y, _norm_rrule(x, y, g, axes, keepdims)


@frule.register(linalg.vector_norm, batched=True)
def frule_vector_norm(tangents, x, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    (dx,) = _tangents(tangents)
    y, g, axes = _vector_norm_setup(x, axis, keepdims, ord)
    return y, (ZERO if is_zero(dx) else _norm_tangent(x, dx, g, axes, keepdims))


def _matrix_norm_setup(x, keepdims, order):
    x = as_array(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    axes = (x.ndim - 2, x.ndim - 1)
    y, g = matrix_norm_weights(x, order, axes)
    return _finish(y.astype(x.real.dtype, copy=False), axes, keepdims), g.astype(x.dtype, copy=False), axes


@rrule.register(linalg.matrix_norm, batched=True)
def rrule_matrix_norm(x, *, keepdims=False, ord="fro"):  # noqa: A002 (NumPy's keyword)
    y, g, axes = _matrix_norm_setup(x, keepdims, ord)
    return y, _norm_rrule(x, y, g, axes, keepdims)


@frule.register(linalg.matrix_norm, batched=True)
def frule_matrix_norm(tangents, x, *, keepdims=False, ord="fro"):  # noqa: A002
    (dx,) = _tangents(tangents)
    y, g, axes = _matrix_norm_setup(x, keepdims, ord)
    return y, (ZERO if is_zero(dx) else _norm_tangent(x, dx, g, axes, keepdims))


def _cond_setup(x, p):
    """``(y, G)`` of ``np.linalg.cond`` with ``d y = Re(sum(conj(G) * dx))`` per matrix."""
    x = as_array(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    if p is None or p in (2, -2):
        u, s, vh = linalg.svd(x, full_matrices=False)
        hi, lo = (0, -1) if p != -2 else (-1, 0)
        num, den = s[..., hi], s[..., lo]
        outer_hi = u[..., :, hi, None] * vh[..., hi, None, :]
        outer_lo = u[..., :, lo, None] * vh[..., lo, None, :]
        y = num / den
        # (expand_dims, not [..., None, None]: a Hessian's dual number for one matrix has no axes to index)
        g = outer_hi / np.expand_dims(den, (-2, -1)) - np.expand_dims(num / den**2, (-2, -1)) * outer_lo
        return y, g
    inv = linalg.inv(x)
    axes = (x.ndim - 2, x.ndim - 1)
    nx, gx = matrix_norm_weights(x, p, axes)
    ni, gi = matrix_norm_weights(inv, p, axes)
    # d ||X^{-1}|| = Re <G_inv, -X^{-1} dX X^{-1}> = Re <-X^{-H} G_inv X^{-H}, dX>
    g = ni * gx - nx * (mH(inv) @ gi @ mH(inv))
    return _finish(nx * ni, axes, False), g.astype(x.dtype, copy=False)


@rrule.register(linalg.cond, batched=True)
def rrule_cond(x, *rest, **kwargs):
    p = options("numpy.linalg.cond", rest, kwargs, (("p", None),))["p"]
    project = projector(x)
    y, g = _cond_setup(x, p)

    def cond_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(y, dy):  # the batch axis in front of the stack's: g broadcasts
            return (NO, project.batch(np.real(plain(dy))[..., None, None] * g)) + (NO,) * len(rest)
        dy = np.real(dy)
        return (NO, project((dy[..., None, None] if np.ndim(dy) else dy) * g)) + (NO,) * len(rest)

    return y, cond_pullback


@frule.register(linalg.cond, batched=True)
def frule_cond(tangents, x, *rest, **kwargs):
    p = options("numpy.linalg.cond", rest, kwargs, (("p", None),))["p"]
    (dx,) = _tangents(tangents)[:1]
    y, g = _cond_setup(x, p)
    if is_zero(dx):
        return y, ZERO
    return y, np.real(np.sum(conj(g) * dx, axis=(-2, -1)))


# ----- trace --------------------------------------------------------------------------------


@rrule.register(linalg.trace, batched=True)
def rrule_trace(x, *, offset=0, dtype=None):
    project = projector(x)
    shape = np.shape(x)
    y = linalg.trace(x, offset=offset, dtype=dtype)

    def trace_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, ZERO
        eye = np.eye(shape[-2], shape[-1], k=offset, dtype=np.result_type(dy, float))
        # each trace's cotangent on its matrix's diagonal (reshaped: np.asarray would drop a dual's derivative)
        spread = np.reshape(dy, np.shape(dy) + (1, 1)) * eye
        if carries_batch(y, dy):  # (a leading batch axis stays in front of the stacked matrices)
            return NO, match_input_batch(x, spread)
        return NO, project(spread)

    return y, trace_pullback


@frule.register(linalg.trace, batched=True)
def frule_trace(tangents, x, *, offset=0, dtype=None):
    (dx,) = _tangents(tangents)
    y = linalg.trace(x, offset=offset, dtype=dtype)
    return y, (ZERO if is_zero(dx) else linalg.trace(dx, offset=offset, dtype=dtype))


non_differentiable(linalg.matrix_rank)
