"""Rules for ``scipy.linalg``: factorizations and matrix functions whose pullbacks reuse the primal's work.

Every rule here runs on SciPy's BLAS and LAPACK throughout (see ``_lapack``): the LU, Cholesky,
eigen, singular value and Schur factors computed for the primal are kept, and the pullback only
solves and multiplies with them. The matrix exponential keeps its Padé intermediates and computes
the Fréchet derivative of the adjoint direction (Al-Mohy & Higham 2009), and ``expm_frechet`` is
the exponential of a block matrix; the square root and the logarithm solve Sylvester equations in
the Schur basis of the primal. The trigonometric and hyperbolic functions (``cosm``, ``sinm``,
``tanm``, ``coshm``, ``sinhm``, ``tanhm``) and ``fractional_matrix_power`` take their Fréchet
derivatives from the function of the block matrix ``[[A, E], [0, A]]``; ``signm`` from the Newton
iteration of the sign function, and ``funm(A, func)`` from the divided differences of ``func`` at
the eigenvalues (its derivative by forward mode).

The matrix functions (``expm``, ``sqrtm``, ``logm`` and the others above) take stacks of matrices
``(..., n, n)``, one matrix at a time with its own intermediates, as SciPy loops over them; the
other rules take single matrices (a stack raises a ``NoRuleError`` that points to ``numpy.linalg``
where it has the function). Their pullbacks also take a batch of cotangents (a leading batch axis in front of the
stack, for reverse-mode Jacobians): all rows are solved with the primal's factors at once, or,
where LAPACK takes one right-hand side matrix at a time (TRSYL), row by row with the same factors.
Arrays that are not plain ndarrays (dual numbers) are computed with NumPy functions, and where a
rule returns LAPACK's factors or its pullback calls LAPACK, the dual numbers go through the
forward rule of the SciPy function itself (``through_rules``; matrix functions' adjoints through
that of a block matrix), so every rule also runs under the forward engine, and ``cr.hessian``
(forward over reverse) reaches them all. Functions that read one triangle
(``assume_a='sym'|'her'|'pos'``, ``cholesky``, ``cho_factor``, ``eigh``, ``eigvalsh``) return the
cotangent in that triangle, as in ``numpy.linalg``'s rules; the generalized eigenproblem
``eigh(a, b)`` (``type=1``: ``a V = b V diag(w)``, ``V^H b V = I``; ``type=2``: ``a b V = V
diag(w)`` and ``type=3``: ``b a V = V diag(w)``, through the ``type=1`` problem of ``(b a b, b)``)
reads one triangle of both and differentiates both.

>>> import numpy as np, scipy.linalg as sl, chainrules as cr
>>> y, back = cr.rrule(sl.expm, np.zeros((2, 2)))
>>> back(np.array([[1.0, 2.0], [3.0, 4.0]]))[1]  # at 0, the derivative of exp is the identity
array([[1., 2.],
       [3., 4.]])
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg as sl

from ...core import ActiveValue, NoTangent, Thunk, carries_batch, conj, decline_batch, frule, rrule, unthunk
from ...core.active import jvp_by_forward_mode, stood_for
from ...core.errors import NoDerivativeError, at_user
from ..numpy.linalg import (
    _cholesky_setup,
    _det_gradient,
    _det_setup,
    _norm_gradient_batch,
    _norm_setup,
    _norm_tangent,
    _safe_inverse,
    cholesky_gradient,
    cholesky_tangent,
    eig_gradient,
    eig_tangent,
    eigh_gradient,
    eigh_inner,
    eigh_tangent,
    eigvals_tangent,
    eigvalsh_gradient,
    eigvalsh_tangent,
    norm_order_tangent,
    norm_rest_cotangents,
    pinv_gradient,
    pinv_tangent,
    qr_gradient,
    qr_tangent,
    svd_gradient,
    svd_tangent,
    svdvals_tangent,
    symmetric_eigen,
)
from ..pyfunctional import later_pullbacks
from ._lapack import (
    LU,
    NO,
    NUMPY,
    SCIPY,
    ZERO,
    MatrixStack,
    Repeated,
    _columns,
    _repeated,
    as_array,
    batch_size,
    by_rows,
    diag_embed,
    diagonal,
    float_dtype,
    fold_onto_triangle,
    gap_inverse,
    hermitian_from_triangle,
    is_active,
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
    tangent_of,
    through_rules,
    triangular_solve,
    with_batch,
)

mul = mm  # every product in this module goes to SciPy's BLAS


def _matrix(a, name: str, square: bool = True, stacks: bool = False):
    """``a`` as an array of a LAPACK dtype (other array types pass through): one matrix, or with
    ``stacks`` a stack of them (``(..., n, n)``; SciPy takes stacks everywhere, the other rules
    refuse one; fewer than two axes is SciPy's error too)."""
    a = as_array(a)
    if np.ndim(a) < 2:
        raise ValueError(f"{name}: expected a matrix, got shape {np.shape(a)}")
    if np.ndim(a) > 2 and not stacks:
        short = name.rsplit(".", 1)[-1]
        advice = (
            f"np.linalg.{short}, which takes stacks, has a rule too"
            if hasattr(np.linalg, short)
            else "apply it to each matrix and stack the results (np.stack([... for m in a]))"
        )
        raise no_rule(name, (a,), f"the rule takes a single matrix, got shape {np.shape(a)}; {advice}")
    if square and a.shape[-2] != a.shape[-1]:
        raise ValueError(f"{name}: expected a square matrix, got shape {a.shape}")
    if isinstance(a, np.ndarray):
        a = a.astype(float_dtype(a), copy=False)
    return a


def _rhs(b, a):
    b = as_array(b)
    if isinstance(b, np.ndarray) and isinstance(a, np.ndarray):
        b = b.astype(float_dtype(a, b), copy=False)
    return b


def _lapack_matrix(a, name: str, square: bool = True):
    """``_matrix`` for rules whose outputs are LAPACK's own factors: NumPy arrays, or dual numbers,
    which ``through_rules`` pushes through the function's forward rule."""
    a = _matrix(a, name, square)
    if not is_plain(a) and not is_active(a):
        raise TypeError(f"the rule for {name} needs a NumPy array of a LAPACK dtype (it returns LAPACK's factors)")
    return a


def _tangents(tangents):
    return tuple(unthunk(t) for t in tangents[1:])


def _conj_solve(factor, b, batched=False):
    """``conj(A)^{-1} b`` from a factorization of ``A``."""
    return conj(factor.solve(conj(b), "N", batched=batched))


# ----- structured solves --------------------------------------------------------------------

_ASSUME = {
    None: "gen",
    "gen": "gen",
    "general": "gen",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "pos": "pos",
    "positive definite": "pos",
    "diagonal": "diagonal",
    "tridiagonal": "band",
    # SciPy reads the bandwidth off the values: every nonzero entry counts, as in the general case
    "banded": "gen",
    "upper triangular": "upper",
    "lower triangular": "lower",
}


def _symmetric_from_triangle(a, lower):
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    return tri + mT(tri) + diag_embed(diagonal(a))


def _fold_symmetric(g, lower):
    s = g + mT(g)
    return (np.tril(s, -1) if lower else np.triu(s, 1)) + diag_embed(diagonal(g))


class _Structure:
    """The matrix SciPy reads for an ``assume_a`` (``read``), and the cotangent map back (``pull``).

    With ``assume_a=None`` SciPy detects the structure of the values it is given; the derivative
    is the general one, since every perturbation off the structure leaves it.
    """

    def __init__(self, assume_a, lower: bool, a, name: str):
        if assume_a not in _ASSUME:
            raise ValueError(f"{name}: unknown assume_a={assume_a!r}")
        self.kind, self.lower, self.mask = _ASSUME[assume_a], lower, None
        if assume_a == "tridiagonal":
            self.mask = _band_mask(a.shape[0], 1, 1)
        elif self.kind == "diagonal":
            self.mask = np.eye(a.shape[0], dtype=bool)
        elif self.kind in ("upper", "lower"):
            self.mask = _band_mask(
                a.shape[0], a.shape[0] if self.kind == "lower" else 0, a.shape[0] if self.kind == "upper" else 0
            )

    def read(self, x):
        if self.kind == "gen":
            return x
        if self.kind in ("her", "pos") or (self.kind == "sym" and not np.iscomplexobj(x)):
            return hermitian_from_triangle(x, self.lower)
        if self.kind == "sym":
            return _symmetric_from_triangle(x, self.lower)
        return x * self.mask

    def pull(self, g):
        if self.kind == "gen":
            return g
        if self.kind in ("her", "pos") or (self.kind == "sym" and not np.iscomplexobj(g)):
            return fold_onto_triangle(g, self.lower)
        if self.kind == "sym":
            return _fold_symmetric(g, self.lower)
        return g * self.mask


def _band_mask(n, below, above):
    i, j = np.indices((n, n))
    return (j - i <= above) & (i - j <= below)


class _Cholesky:
    """``A = L L^H`` (POTRF) solving with ``A``; ``A`` is Hermitian, so ``A^H = A``."""

    def __init__(self, ahat):
        self.ahat = ahat
        self.lapack = is_plain(ahat)
        if self.lapack:
            self.c, info = lapack("potrf", ahat.dtype)(ahat, lower=1, clean=1)
            if info > 0:
                raise np.linalg.LinAlgError("scipy.linalg.solve: matrix is not positive definite")

    def solve(self, b, op="N", batched=False):
        if op == "T":
            return _conj_solve(self, b, batched)
        if not (self.lapack and is_plain(b)):
            return _generic(self.ahat, b, batched)
        from ._lapack import _columns

        def potrs(cols):
            if np.iscomplexobj(cols) and not np.iscomplexobj(self.c):
                return potrs(cols.real) + 1j * potrs(cols.imag)
            return lapack("potrs", self.c.dtype)(self.c, cols.astype(self.c.dtype, copy=False), lower=1)[0]

        return _columns(b, batched, potrs)


class _Triangular:
    def __init__(self, ahat, lower):
        self.ahat, self.lower = ahat, lower
        if is_plain(ahat) and np.any(diagonal(ahat) == 0):
            raise np.linalg.LinAlgError("scipy.linalg.solve: singular matrix")

    def solve(self, b, op="N", batched=False):
        vector = np.ndim(b) - batched == 1
        cols = b[..., None] if vector else b
        x = triangular_solve(self.ahat, cols, self.lower, op, batched=batched)
        return x[..., 0] if vector else x


def _generic(a, b, batched):
    from ._lapack import generic_solve

    return generic_solve(a, b, batched)


def _factor(ahat, kind, name):
    if kind == "pos":
        return _Cholesky(ahat)
    if kind in ("upper", "lower", "diagonal"):
        return _Triangular(ahat, kind == "lower")
    lu = LU(ahat)
    lu.check(name)
    return lu


def _solve_op(factor, b, op, batched=False):
    return _conj_solve(factor, b, batched) if op == "K" else factor.solve(b, op, batched=batched)


def _solve_setup(a, b, opts, name):
    a = _matrix(a, name)
    b = _rhs(b, a)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and b.dtype != a.dtype:
        a = a.astype(b.dtype)
    if np.ndim(b) not in (1, 2):
        raise ValueError(f"{name}: b must be one- or two-dimensional for this rule, got shape {np.shape(b)}")
    if opts["transposed"] and np.iscomplexobj(a):
        return sl.solve(a, b, transposed=True), None, None, None  # SciPy's own error for this case
    structure = _Structure(opts["assume_a"], opts["lower"], a, name)
    ahat = structure.read(a)
    factor = _factor(ahat, structure.kind, name)
    op = "T" if opts["transposed"] else "N"
    return _solve_op(factor, b, op), factor, structure, op


_SOLVE_OPTIONS = (
    ("lower", False),
    ("overwrite_a", False),
    ("overwrite_b", False),
    ("check_finite", True),
    ("assume_a", None),
    ("transposed", False),
)


@rrule.register(sl.solve, batched=True)
def rrule_solve(a, b, *rest, **kwargs):
    opts = options("scipy.linalg.solve", rest, kwargs, _SOLVE_OPTIONS)
    project_a, project_b = projector(a), projector(b)
    x, factor, structure, op = _solve_setup(a, b, opts, "scipy.linalg.solve")
    vector = np.ndim(x) == 1

    def solve_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        if carries_batch(x, dx):  # every row solved at once, with the same factors
            db = _solve_op(factor, plain(dx), "C" if op == "N" else "K", batched=True)
            da = Thunk(lambda: project_a.batch(structure.pull(_solve_cotangent_of_a(db, x, op))))
            return (NO, da, project_b.batch(db)) + (NO,) * len(rest)
        # the primal's factorization solves the adjoint system: no refactorization
        db = _solve_op(factor, dx, "C" if op == "N" else "K")
        dop = -(db[:, None] * conj(x)[None, :]) if vector else mul(db, x, "N", "C", alpha=-1.0)  # cotangent of op(a)
        dahat = dop if op == "N" else mT(dop)
        return (NO, project_a(structure.pull(dahat)), project_b(db)) + (NO,) * len(rest)

    return x, solve_pullback


def _solve_cotangent_of_a(db, x, op: str):
    """The cotangent of the matrix read, ``-db x^H`` through ``op`` (``db`` may carry a batch axis)."""
    dop = -(db[..., :, None] * conj(x)[None, :]) if np.ndim(x) == 1 else mul(db, x, "N", "C", alpha=-1.0)
    return {"N": dop, "T": mT(dop), "C": mH(dop)}[op]


@frule.register(sl.solve, batched=True)
def frule_solve(tangents, a, b, *rest, **kwargs):
    opts = options("scipy.linalg.solve", rest, kwargs, _SOLVE_OPTIONS)
    da, db = _tangents(tangents)[:2]
    x, factor, structure, op = _solve_setup(a, b, opts, "scipy.linalg.solve")
    vector = np.ndim(x) == 1
    batch = batch_size((da, db), (a, b))
    rhs = with_batch(db, b, batch)
    if not is_zero(da):
        dahat = structure.read(da)
        if op == "T":
            dahat = mT(dahat)
        dax = mul(dahat, x[:, None])[..., 0] if vector else mul(dahat, x)
        rhs = -dax if is_zero(rhs) else rhs - dax
    if is_zero(rhs):
        return x, ZERO
    return x, _solve_op(factor, rhs, op, batched=batch is not None)


# ----- triangular solves --------------------------------------------------------------------

_TRANS = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}
_ADJOINT = {"N": "C", "T": "K", "C": "N"}


def _triangle(a, lower, unit):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        n = a.shape[0]
        t = t - diag_embed(diagonal(t)) + np.eye(n, dtype=t.dtype)
    return t


def _tri_solve(t, b, lower, op, unit, batched=False):
    vector = np.ndim(b) - batched == 1
    cols = b[..., None] if vector else b
    if op == "K":
        x = conj(triangular_solve(t, conj(cols), lower, "N", unit=unit, batched=batched))
    else:
        x = triangular_solve(t, cols, lower, op, unit=unit, batched=batched)
    return x[..., 0] if vector else x


def _tri_mask(g, lower, unit):
    g = np.tril(g) if lower else np.triu(g)
    return g - diag_embed(diagonal(g)) if unit else g


_TRI_OPTIONS = (
    ("trans", 0),
    ("lower", False),
    ("unit_diagonal", False),
    ("overwrite_b", False),
    ("check_finite", True),
)


def _tri_setup(a, b, opts):
    a = _matrix(a, "scipy.linalg.solve_triangular")
    b = _rhs(b, a)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and b.dtype != a.dtype:
        a = a.astype(b.dtype)
    t = _triangle(a, opts["lower"], opts["unit_diagonal"])
    if is_plain(t) and not opts["unit_diagonal"] and np.any(diagonal(t) == 0):
        raise np.linalg.LinAlgError("scipy.linalg.solve_triangular: singular matrix")
    op = _TRANS[opts["trans"]]
    return t, op, _tri_solve(t, b, opts["lower"], op, opts["unit_diagonal"])


@rrule.register(sl.solve_triangular, batched=True)
def rrule_solve_triangular(a, b, *rest, **kwargs):
    opts = options("scipy.linalg.solve_triangular", rest, kwargs, _TRI_OPTIONS)
    project_a, project_b = projector(a), projector(b)
    t, op, x = _tri_setup(a, b, opts)
    lower, unit = opts["lower"], opts["unit_diagonal"]

    def solve_triangular_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        if carries_batch(x, dx):  # every row solved at once
            db = _tri_solve(t, plain(dx), lower, _ADJOINT[op], unit, batched=True)
            da = Thunk(lambda: project_a.batch(_tri_mask(_solve_cotangent_of_a(db, x, op), lower, unit)))
            return (NO, da, project_b.batch(db)) + (NO,) * len(rest)
        db = _tri_solve(t, dx, lower, _ADJOINT[op], unit)
        dop = -(db[:, None] * conj(x)[None, :]) if np.ndim(x) == 1 else mul(db, x, "N", "C", alpha=-1.0)
        dt = {"N": dop, "T": mT(dop), "C": mH(dop)}[op]
        return (NO, project_a(_tri_mask(dt, lower, unit)), project_b(db)) + (NO,) * len(rest)

    return x, solve_triangular_pullback


@frule.register(sl.solve_triangular, batched=True)
def frule_solve_triangular(tangents, a, b, *rest, **kwargs):
    opts = options("scipy.linalg.solve_triangular", rest, kwargs, _TRI_OPTIONS)
    da, db = _tangents(tangents)[:2]
    t, op, x = _tri_setup(a, b, opts)
    batch = batch_size((da, db), (a, b))
    rhs = with_batch(db, b, batch)
    if not is_zero(da):
        dt = _tri_mask(da, opts["lower"], opts["unit_diagonal"])
        dop = {"N": dt, "T": mT(dt), "C": mH(dt)}[op]
        dax = mul(dop, x[:, None])[..., 0] if np.ndim(x) == 1 else mul(dop, x)
        rhs = -dax if is_zero(rhs) else rhs - dax
    if is_zero(rhs):
        return x, ZERO
    return x, _tri_solve(t, rhs, opts["lower"], op, opts["unit_diagonal"], batched=batch is not None)


# ----- LU -----------------------------------------------------------------------------------


def _permutation(piv):
    """Row order of ``P^T A`` from LAPACK's row interchanges: ``A[perm] = L U``."""
    perm = np.arange(piv.size)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _unpack(lu):
    low = np.tril(lu, -1) + np.eye(lu.shape[0], dtype=lu.dtype)
    return low, np.triu(lu)


def _lu_gradient(low, up, dlow, dup, batched: bool = False):
    """Cotangent of ``B = L U`` from those of ``L`` (strictly lower) and ``U`` (upper):
    ``L^{-H} (tril(L^H dL, -1) + triu(dU U^H)) U^{-H}``; a leading batch axis when ``batched``."""
    m = 0
    if not is_zero(dlow):
        m = np.tril(mul(low, dlow, "C"), -1)
    if not is_zero(dup):
        m = m + np.triu(mul(dup, up, "N", "C"))
    x = triangular_solve(low, m, lower=True, op="C", unit=True, batched=batched)
    return triangular_solve(up, x, lower=False, op="C", side="right", batched=batched)


def _lu_tangent(low, up, db, batched=False):
    """``(dL, dU)`` of ``B = L U``: ``F = L^{-1} dB U^{-1}``, ``dL = L tril(F, -1)``, ``dU = triu(F) U``."""
    f = triangular_solve(low, db, lower=True, unit=True, batched=batched)
    f = triangular_solve(up, f, lower=False, side="right", batched=batched)
    return mul(low, np.tril(f, -1)), mul(np.triu(f), up)


def _lu_factor_setup(a):
    a = _lapack_matrix(a, "scipy.linalg.lu_factor")
    lu, piv = through_rules(sl.lu_factor, a)
    return a, lu, piv


@rrule.register(sl.lu_factor, batched=True)
def rrule_lu_factor(a, *rest, **kwargs):
    project = projector(a)
    a_, lu, piv = _lu_factor_setup(a)
    result = (lu, piv)
    low, up = _unpack(lu)
    perm = _permutation(piv)

    def lu_factor_pullback(dresult):
        dlu, _ = parts(dresult, 2)
        if is_zero(dlu):
            return (NO, ZERO) + (NO,) * len(rest)
        batched = carries_batch(lu, dlu)
        dlu = plain(dlu)
        db = _lu_gradient(low, up, np.tril(dlu, -1), np.triu(dlu), batched)
        # da[perm] = db, gathered rather than written (a tape's values take no writes)
        da = db[:, np.argsort(perm)] if batched else db[np.argsort(perm)]
        return (NO, project.batch(da) if batched else project(da)) + (NO,) * len(rest)

    return result, lu_factor_pullback


@frule.register(sl.lu_factor, batched=True)
def frule_lu_factor(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    a_, lu, piv = _lu_factor_setup(a)
    result = (lu, piv)
    if is_zero(da):
        return result, ZERO
    perm = _permutation(piv)
    dlow, dup = _lu_tangent(*_unpack(lu), da[..., perm, :], batched=is_batched(da, a))
    return result, tangent_of(result, np.tril(dlow, -1) + np.triu(dup), NO)


def _lu_solve_setup(lu_and_piv, b, trans):
    lu, piv = lu_and_piv
    lu = _lapack_matrix(lu, "scipy.linalg.lu_solve")
    b = _rhs(b, lu)
    op = _TRANS[trans]
    x = through_rules(sl.lu_solve, (lu, piv), b, trans=trans)
    return lu, np.asarray(piv), b, op, x


def _lu_matrix_cotangent(lu, perm, dmat):
    """The cotangent of the packed ``lu`` from that of ``A = P L U`` (or a batch of them)."""
    low, up = _unpack(lu)
    pa = dmat[..., perm, :]
    return np.tril(mul(pa, up, "N", "C"), -1) + np.triu(mul(low, pa, "C"))


@rrule.register(sl.lu_solve, batched=True)
def rrule_lu_solve(lu_and_piv, b, *rest, **kwargs):
    trans = options(
        "scipy.linalg.lu_solve", rest, kwargs, (("trans", 0), ("overwrite_b", False), ("check_finite", True))
    )["trans"]
    project_b = projector(b)
    lu, piv, b_, op, x = _lu_solve_setup(lu_and_piv, b, trans)
    project_lu = projector(lu)

    def lu_solve_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        adjoint = {"N": 2, "T": 0, "C": 0}[op]
        if carries_batch(x, dx):  # every row solved at once: the batch side by side as columns
            rhs = conj(plain(dx)) if op == "T" else plain(dx)
            db = _columns(rhs, True, lambda cols: through_rules(sl.lu_solve, (lu, piv), cols, trans=adjoint))
            db = conj(db) if op == "T" else db
            dlu = project_lu.batch(_lu_matrix_cotangent(lu, _permutation(piv), _solve_cotangent_of_a(db, x, op)))
            return (NO, tangent_of(lu_and_piv, dlu, NO), project_b.batch(db)) + (NO,) * len(rest)
        db = through_rules(sl.lu_solve, (lu, piv), conj(dx) if op == "T" else dx, trans=adjoint)
        db = conj(db) if op == "T" else db
        dop = -(db[:, None] * conj(x)[None, :]) if np.ndim(x) == 1 else mul(db, x, "N", "C", alpha=-1.0)
        dmat = {"N": dop, "T": mT(dop), "C": mH(dop)}[op]
        dlu = project_lu(_lu_matrix_cotangent(lu, _permutation(piv), dmat))
        return (NO, tangent_of(lu_and_piv, dlu, NO), project_b(db)) + (NO,) * len(rest)

    return x, lu_solve_pullback


@frule.register(sl.lu_solve, batched=True)
def frule_lu_solve(tangents, lu_and_piv, b, *rest, **kwargs):
    trans = options(
        "scipy.linalg.lu_solve", rest, kwargs, (("trans", 0), ("overwrite_b", False), ("check_finite", True))
    )["trans"]
    dlu_and_piv, db = _tangents(tangents)[:2]
    lu, piv, b_, op, x = _lu_solve_setup(lu_and_piv, b, trans)
    dlu = parts(dlu_and_piv, 2)[0]
    batched = batch_size((dlu, db), (lu, b)) is not None
    rhs = db
    if not is_zero(dlu):
        low, up = _unpack(lu)
        dmat = mul(np.tril(dlu, -1), up) + mul(low, np.triu(dlu))
        perm = _permutation(piv)
        dfull = np.empty_like(dmat)
        if is_batched(dlu, lu):
            dfull[:, perm] = dmat
        else:
            dfull[perm] = dmat
        dop = {"N": dfull, "T": mT(dfull), "C": mH(dfull)}[op]
        dax = mul(dop, x[:, None])[..., 0] if np.ndim(x) == 1 else mul(dop, x)
        rhs = -dax if is_zero(rhs) else rhs - dax
    if is_zero(rhs):
        return x, ZERO
    if batched:  # every row solved at once: the batch side by side as columns
        return x, _columns(plain(rhs), True, lambda cols: through_rules(sl.lu_solve, (lu, piv), cols, trans=trans))
    return x, through_rules(sl.lu_solve, (lu, piv), rhs, trans=trans)


@rrule.register(sl.lu, batched=True)
def rrule_lu(a, *rest, **kwargs):
    opts = options(
        "scipy.linalg.lu",
        rest,
        kwargs,
        (("permute_l", False), ("overwrite_a", False), ("check_finite", True), ("p_indices", False)),
    )
    project = projector(a)
    a_ = _lapack_matrix(a, "scipy.linalg.lu")
    result = through_rules(sl.lu, a_, permute_l=opts["permute_l"], p_indices=opts["p_indices"])
    if opts["permute_l"]:
        pl, up = result
        lu, piv = through_rules(sl.lu_factor, a_)
        perm = _permutation(piv)
        low = pl[perm]
    else:
        p, low, up = result
        perm = np.argsort(p) if opts["p_indices"] else np.argmax(p, axis=0)  # a[perm] = L U

    def lu_pullback(dresult):
        if opts["permute_l"]:
            dpl, dup = parts(dresult, 2)
            dlow = ZERO if is_zero(dpl) else plain(dpl)[..., perm, :]
        else:
            _, dlow, dup = parts(dresult, 3)
        if is_zero(dlow) and is_zero(dup):
            return (NO, ZERO) + (NO,) * len(rest)
        batched = parts_carry_batch((low, up), (dlow, dup))
        dlow = ZERO if is_zero(dlow) else np.tril(plain(dlow), -1)
        dup = ZERO if is_zero(dup) else np.triu(plain(dup))
        db = _lu_gradient(low, up, dlow, dup, batched)
        # da[perm] = db, gathered rather than written (a tape's values take no writes)
        da = db[:, np.argsort(perm)] if batched else db[np.argsort(perm)]
        return (NO, project.batch(da) if batched else project(da)) + (NO,) * len(rest)

    return result, lu_pullback


@frule.register(sl.lu, batched=True)
def frule_lu(tangents, a, *rest, **kwargs):
    opts = options(
        "scipy.linalg.lu",
        rest,
        kwargs,
        (("permute_l", False), ("overwrite_a", False), ("check_finite", True), ("p_indices", False)),
    )
    (da,) = _tangents(tangents)[:1]
    a_ = _lapack_matrix(a, "scipy.linalg.lu")
    result = through_rules(sl.lu, a_, permute_l=opts["permute_l"], p_indices=opts["p_indices"])
    if is_zero(da):
        return result, ZERO
    lu, piv = through_rules(sl.lu_factor, a_)
    perm = _permutation(piv)
    low, up = _unpack(lu)
    dlow, dup = _lu_tangent(low, up, da[..., perm, :], batched=is_batched(da, a))
    if opts["permute_l"]:
        dpl = np.empty_like(dlow)
        dpl[..., perm, :] = dlow
        return result, tangent_of(result, dpl, dup)
    return result, tangent_of(result, NO, dlow, dup)


# ----- Cholesky -----------------------------------------------------------------------------


@rrule.register(sl.cholesky, batched=True)
def rrule_cholesky(a, *rest, **kwargs):
    lower = options(
        "scipy.linalg.cholesky", rest, kwargs, (("lower", False), ("overwrite_a", False), ("check_finite", True))
    )["lower"]
    project = projector(a)
    c, low = _cholesky_setup(_matrix(a, "scipy.linalg.cholesky"), not lower, "scipy.linalg.cholesky")

    def cholesky_pullback(dc):
        dc = unthunk(dc)
        if is_zero(dc):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(c, dc):  # all rows through the same triangular solves
            dc = plain(dc)
            g = cholesky_gradient(low, dc if lower else mH(dc), batched=True)
            return (NO, project.batch(fold_onto_triangle(g, lower))) + (NO,) * len(rest)
        g = cholesky_gradient(low, dc if lower else mH(dc))
        return (NO, project(fold_onto_triangle(g, lower))) + (NO,) * len(rest)

    return c, cholesky_pullback


@frule.register(sl.cholesky, batched=True)
def frule_cholesky(tangents, a, *rest, **kwargs):
    lower = options(
        "scipy.linalg.cholesky", rest, kwargs, (("lower", False), ("overwrite_a", False), ("check_finite", True))
    )["lower"]
    (da,) = _tangents(tangents)[:1]
    c, low = _cholesky_setup(_matrix(a, "scipy.linalg.cholesky"), not lower, "scipy.linalg.cholesky")
    if is_zero(da):
        return c, ZERO
    dlow = cholesky_tangent(low, hermitian_from_triangle(da, lower), is_batched(da, a))
    return c, (dlow if lower else mH(dlow))


def _cho_factor_setup(a, lower):
    a = _matrix(a, "scipy.linalg.cho_factor")
    c, low = _cholesky_setup(a, not lower, "scipy.linalg.cho_factor")
    other = np.triu(a, 1) if lower else np.tril(a, -1)  # SciPy leaves the input in the unused triangle
    return c + other, low


@rrule.register(sl.cho_factor, batched=True)
def rrule_cho_factor(a, *rest, **kwargs):
    lower = options(
        "scipy.linalg.cho_factor", rest, kwargs, (("lower", False), ("overwrite_a", False), ("check_finite", True))
    )["lower"]
    project = projector(a)
    c, low = _cho_factor_setup(a, lower)
    result = (c, lower)

    def cho_factor_pullback(dresult):
        dc, _ = parts(dresult, 2)
        if is_zero(dc):
            return (NO, ZERO) + (NO,) * len(rest)
        batched = carries_batch(c, dc)
        dc = plain(dc)
        factor = np.tril(dc) if lower else np.triu(dc)
        g = cholesky_gradient(low, factor if lower else mH(factor), batched)
        da = fold_onto_triangle(g, lower) + (np.triu(dc, 1) if lower else np.tril(dc, -1))
        return (NO, project.batch(da) if batched else project(da)) + (NO,) * len(rest)

    return result, cho_factor_pullback


@frule.register(sl.cho_factor, batched=True)
def frule_cho_factor(tangents, a, *rest, **kwargs):
    lower = options(
        "scipy.linalg.cho_factor", rest, kwargs, (("lower", False), ("overwrite_a", False), ("check_finite", True))
    )["lower"]
    (da,) = _tangents(tangents)[:1]
    c, low = _cho_factor_setup(a, lower)
    result = (c, lower)
    if is_zero(da):
        return result, ZERO
    dlow = cholesky_tangent(low, hermitian_from_triangle(da, lower), is_batched(da, a))
    dc = (dlow if lower else mH(dlow)) + (np.triu(da, 1) if lower else np.tril(da, -1))
    return result, tangent_of(result, dc, NO)


def _cho_solve_setup(c_and_lower, b):
    c, lower = c_and_lower
    c = _lapack_matrix(c, "scipy.linalg.cho_solve")
    b = _rhs(b, c)
    x = through_rules(sl.cho_solve, (c, lower), b)
    return c, bool(lower), x


@rrule.register(sl.cho_solve, batched=True)
def rrule_cho_solve(c_and_lower, b, *rest, **kwargs):
    c, lower, x = _cho_solve_setup(c_and_lower, b)
    project_b, project_c = projector(b), projector(c)

    def cho_solve_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        batched = carries_batch(x, dx)
        if batched:  # every row solved at once: the batch side by side as columns
            db = _columns(plain(dx), True, lambda cols: through_rules(sl.cho_solve, (c, lower), cols))
        else:
            db = through_rules(sl.cho_solve, (c, lower), dx)  # A = A^H: the same factor solves the adjoint
        dmat = _solve_cotangent_of_a(db, x, "N")
        sym = dmat + mH(dmat)
        # A = L L^H (lower) or U^H U (upper); only that triangle of c is read
        dc = np.tril(mul(sym, np.tril(c))) if lower else np.triu(mul(np.triu(c), sym))
        if batched:
            return (NO, tangent_of(c_and_lower, project_c.batch(dc), NO), project_b.batch(db)) + (NO,) * len(rest)
        return (NO, tangent_of(c_and_lower, project_c(dc), NO), project_b(db)) + (NO,) * len(rest)

    return x, cho_solve_pullback


@frule.register(sl.cho_solve, batched=True)
def frule_cho_solve(tangents, c_and_lower, b, *rest, **kwargs):
    dcl, db = _tangents(tangents)[:2]
    c, lower, x = _cho_solve_setup(c_and_lower, b)
    dc = parts(dcl, 2)[0]
    batched = batch_size((dc, db), (c, b)) is not None
    rhs = db
    if not is_zero(dc):
        f = np.tril(c) if lower else np.triu(c)
        df = np.tril(dc) if lower else np.triu(dc)
        dmat = mul(df, f, "N", "C") + mul(f, df, "N", "C") if lower else mul(df, f, "C") + mul(f, df, "C")
        dax = mul(dmat, x[:, None])[..., 0] if np.ndim(x) == 1 else mul(dmat, x)
        rhs = -dax if is_zero(rhs) else rhs - dax
    if is_zero(rhs):
        return x, ZERO
    if batched:  # every row solved at once: the batch side by side as columns
        return x, _columns(plain(rhs), True, lambda cols: through_rules(sl.cho_solve, (c, lower), cols))
    return x, through_rules(sl.cho_solve, (c, lower), rhs)


# ----- inverse and determinant --------------------------------------------------------------


def _inv_setup(a, rest, kwargs):
    opts = options(
        "scipy.linalg.inv",
        rest,
        kwargs,
        (("overwrite_a", False), ("check_finite", True), ("assume_a", None), ("lower", False)),
    )
    a = _matrix(a, "scipy.linalg.inv")
    structure = _Structure(opts["assume_a"], opts["lower"], a, "scipy.linalg.inv")
    ahat = structure.read(a)
    if is_plain(ahat):
        lu = LU(ahat)
        lu.check("scipy.linalg.inv")
        y = lu.inv()
    else:
        y = np.linalg.inv(ahat)
    return y, structure


@rrule.register(sl.inv, batched=True)
def rrule_inv(a, *rest, **kwargs):
    project = projector(a)
    y, structure = _inv_setup(a, rest, kwargs)

    def inv_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(y, dy):  # -Y^H dY Y^H, row by row in two products
            g = mul(mul(mH(y), plain(dy)), y, "N", "C", alpha=-1.0)
            return (NO, project.batch(structure.pull(g))) + (NO,) * len(rest)
        return (NO, project(structure.pull(-mul(mul(y, dy, "C"), y, "N", "C")))) + (NO,) * len(rest)

    return y, inv_pullback


@frule.register(sl.inv, batched=True)
def frule_inv(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    y, structure = _inv_setup(a, rest, kwargs)
    if is_zero(da):
        return y, ZERO
    return y, -mul(y, mul(structure.read(da), y))


def _det_matrix(a):
    """SciPy computes determinants in double precision whatever the input's precision."""
    a = _matrix(a, "scipy.linalg.det")
    if isinstance(a, np.ndarray):
        a = a.astype(np.result_type(a, np.float64), copy=False)
    return a


@rrule.register(sl.det, batched=True)
def rrule_det(a, *rest, **kwargs):
    project = projector(a)
    a = _det_matrix(a)
    d, lu = _det_setup(a)

    def det_pullback(dd):
        dd = unthunk(dd)
        if is_zero(dd):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(d, dd):
            return (NO, project.batch(plain(dd)[:, None, None] * conj(_det_gradient(a, d, lu)))) + (NO,) * len(rest)
        return (NO, project(dd * conj(_det_gradient(a, d, lu)))) + (NO,) * len(rest)

    return d, det_pullback


@frule.register(sl.det, batched=True)
def frule_det(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    a = _det_matrix(a)
    d, lu = _det_setup(a)
    if is_zero(da):
        return d, ZERO
    return d, np.sum(_det_gradient(a, d, lu) * da, axis=(-2, -1))


# ----- QR, least squares, pseudo-inverse ----------------------------------------------------

_QR_OPTIONS = (("overwrite_a", False), ("lwork", None), ("mode", "full"), ("pivoting", False), ("check_finite", True))


def _qr_setup(a, opts):
    mode = opts["mode"]
    if mode == "raw":
        raise no_rule("scipy.linalg.qr", (a,), "mode='raw' has no derivative; use 'full', 'economic' or 'r'")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"scipy.linalg.qr: mode={mode!r}; use 'full', 'economic', 'r' or 'raw'")
    a = _lapack_matrix(a, "scipy.linalg.qr", square=False)
    pivoting = opts["pivoting"]
    out = through_rules(sl.qr, a, mode="economic" if mode == "economic" else "full", pivoting=pivoting)
    q, r = out[0], out[1]
    perm = out[2] if pivoting else None
    if mode == "r":
        result = (r, perm) if pivoting else (r,)
    else:
        result = (q, r, perm) if pivoting else (q, r)
    return result, q, r, perm


@rrule.register(sl.qr, batched=True)
def rrule_qr(a, *rest, **kwargs):
    opts = options("scipy.linalg.qr", rest, kwargs, _QR_OPTIONS)
    project = projector(a)
    result, q, r, perm = _qr_setup(a, opts)

    def qr_pullback(dresult):
        items = parts(dresult, len(result))
        dq, dr = (ZERO, items[0]) if opts["mode"] == "r" else items[:2]
        batched = parts_carry_batch((q, r), (dq, dr))
        g = qr_gradient(q, r, plain(dq), plain(dr), SCIPY, batched)
        if is_zero(g):
            return (NO, ZERO) + (NO,) * len(rest)
        if perm is not None:  # a[:, perm] = Q R
            g, permuted = np.empty_like(g), g
            if batched:
                g[:, :, perm] = permuted
            else:
                g[:, perm] = permuted
        return (NO, project.batch(g) if batched else project(g)) + (NO,) * len(rest)

    return result, qr_pullback


@frule.register(sl.qr, batched=True)
def frule_qr(tangents, a, *rest, **kwargs):
    opts = options("scipy.linalg.qr", rest, kwargs, _QR_OPTIONS)
    (da,) = _tangents(tangents)[:1]
    result, q, r, perm = _qr_setup(a, opts)
    if is_zero(da):
        return result, ZERO
    dq, dr = qr_tangent(q, r, da if perm is None else da[..., perm], SCIPY, is_batched(da, a))
    if opts["mode"] == "r":
        return result, tangent_of(result, dr, *((NO,) if perm is not None else ()))
    return result, tangent_of(result, dq, dr, *((NO,) if perm is not None else ()))


def _svd(a, full_matrices=True):
    return through_rules(sl.svd, a, full_matrices=full_matrices)


_LSTSQ_OPTIONS = (
    ("cond", None),
    ("overwrite_a", False),
    ("overwrite_b", False),
    ("check_finite", True),
    ("lapack_driver", None),
)


def _lstsq_setup(a, b, opts):
    from ..numpy.linalg import lstsq_setup

    _matrix(a, "scipy.linalg.lstsq", square=False)
    cond = opts["cond"]
    # LAPACK's default cutoff (cond=None) is the machine epsilon
    result, ctx = lstsq_setup(a, b, -1 if cond is None else cond, SCIPY, _svd, vector_residual=True, rank_type=int)
    # SciPy's empty residues carry the input's dtype; gelsy computes none (nor singular values),
    # whatever the shapes: its empty residues, which the derivatives then leave out
    gelsy = opts["lapack_driver"] == "gelsy"
    if gelsy or np.size(result[1]) == 0:
        result = (result[0], np.empty(0, dtype=ctx["a"].dtype)) + result[2:]
    if gelsy:
        result = result[:3] + (None,)
    return result, ctx


@rrule.register(sl.lstsq, batched=True)
def rrule_lstsq(a, b, *rest, **kwargs):
    from ..numpy.linalg import lstsq_gradient

    opts = options("scipy.linalg.lstsq", rest, kwargs, _LSTSQ_OPTIONS)
    project_a, project_b = projector(a), projector(b)
    result, ctx = _lstsq_setup(a, b, opts)

    def lstsq_pullback(dresult):
        dx, dres, _, ds = parts(dresult, 4)
        ds = ZERO if result[3] is None else ds
        if parts_carry_batch(result, (dx, dres, ZERO, ds)):
            da, db = lstsq_gradient(result, ctx, plain(dx), plain(dres), plain(ds), batched=True)
            return (NO, project_a.batch(da), project_b.batch(db)) + (NO,) * len(rest)
        da, db = lstsq_gradient(result, ctx, dx, dres, ds)
        return (NO, project_a(da), project_b(db)) + (NO,) * len(rest)

    return result, lstsq_pullback


@frule.register(sl.lstsq, batched=True)
def frule_lstsq(tangents, a, b, *rest, **kwargs):
    from ..numpy.linalg import lstsq_tangent

    opts = options("scipy.linalg.lstsq", rest, kwargs, _LSTSQ_OPTIONS)
    da, db = _tangents(tangents)[:2]
    result, ctx = _lstsq_setup(a, b, opts)
    dx, dres, ds = lstsq_tangent(result, ctx, da, db)
    return result, tangent_of(result, dx, dres, NO, NO if result[3] is None else ds)


_PINV_OPTIONS = (("atol", None), ("rtol", None), ("return_rank", False), ("check_finite", True))


@rrule.register(sl.pinv, batched=True)
def rrule_pinv(a, **kwargs):
    opts = options("scipy.linalg.pinv", (), kwargs, _PINV_OPTIONS)
    project = projector(a)
    a = _matrix(a, "scipy.linalg.pinv", square=False)
    result = through_rules(sl.pinv, a, **kwargs)
    y = result[0] if opts["return_rank"] else result

    def pinv_pullback(dresult):
        dy = parts(dresult, 2)[0] if opts["return_rank"] else unthunk(dresult)
        if is_zero(dy):
            return NO, ZERO
        if carries_batch(y, dy):  # the factors broadcast against the batch
            return NO, project.batch(pinv_gradient(a, y, plain(dy), SCIPY))
        return NO, project(pinv_gradient(a, y, dy, SCIPY))

    return result, pinv_pullback


@frule.register(sl.pinv, batched=True)
def frule_pinv(tangents, a, **kwargs):
    opts = options("scipy.linalg.pinv", (), kwargs, _PINV_OPTIONS)
    (da,) = _tangents(tangents)
    a = _matrix(a, "scipy.linalg.pinv", square=False)
    result = through_rules(sl.pinv, a, **kwargs)
    y = result[0] if opts["return_rank"] else result
    if is_zero(da):
        return result, ZERO
    dy = pinv_tangent(a, y, da, SCIPY)
    return result, (tangent_of(result, dy, NO) if opts["return_rank"] else dy)


_PINVH_OPTIONS = (("atol", None), ("rtol", None), ("lower", True), ("return_rank", False), ("check_finite", True))


def _pinvh_setup(a, rest, kwargs):
    opts = options("scipy.linalg.pinvh", rest, kwargs, _PINVH_OPTIONS)
    a = _matrix(a, "scipy.linalg.pinvh")
    result = through_rules(sl.pinvh, a, *rest, **kwargs)
    y = result[0] if opts["return_rank"] else result
    return opts, hermitian_from_triangle(a, opts["lower"]), result, y


@rrule.register(sl.pinvh, batched=True)
def rrule_pinvh(a, *rest, **kwargs):
    project = projector(a)
    opts, ahat, result, y = _pinvh_setup(a, rest, kwargs)

    def pinvh_pullback(dresult):
        dy = parts(dresult, 2)[0] if opts["return_rank"] else unthunk(dresult)
        if is_zero(dy):
            return (NO, ZERO) + (NO,) * len(rest)
        # the pseudo-inverse's derivative at the Hermitian matrix read from one triangle, folded onto it
        batched = carries_batch(y, dy)
        g = fold_onto_triangle(pinv_gradient(ahat, y, plain(dy), SCIPY), opts["lower"])
        return (NO, project.batch(g) if batched else project(g)) + (NO,) * len(rest)

    return result, pinvh_pullback


@frule.register(sl.pinvh, batched=True)
def frule_pinvh(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    opts, ahat, result, y = _pinvh_setup(a, rest, kwargs)
    if is_zero(da):
        return result, ZERO
    dy = pinv_tangent(ahat, y, hermitian_from_triangle(da, opts["lower"]), SCIPY)
    return result, (tangent_of(result, dy, NO) if opts["return_rank"] else dy)


# ----- polar decomposition ------------------------------------------------------------------
#
# SciPy's factors come from the thin SVD A = W S V^H (k = min(m, n) singular values): U = W V^H,
# and P = V S V^H (side "right", A = U P) or P = W S W^H (side "left", A = P U). Differentiating
# them along the SVD's derivatives (Townsend 2016, "Differentiating the singular value
# decomposition"), with C = W^H dA V and K_ij = 1 / (s_i + s_j), the rotations of W and V inside
# the singular subspaces combine into
#   W^H dU V = (C - C^H) o K,
#   V^H dP V = (C^H S + S C) o K  (right)  or  W^H dP W = (C S + S C^H) o K  (left),
# the solution of P dP + dP P = d(A^H A) (resp. d(A A^H)) in P's eigenbasis, as for the square
# root of a matrix (Higham 2008, "Functions of Matrices", Sec. 6.1 and Ch. 8), and the directions
# off the subspaces add
#   dU: (I - W W^H) dA V S^{-1} V^H + W S^{-1} W^H dA (I - V V^H),
#   dP: V W^H dA (I - V V^H) + its conjugate transpose  (right; left: (I - W W^H) dA V W^H + c.t.).
# The factors are differentiable where A has full rank k; zero singular values contribute no
# 1/s terms. The pullback is the adjoint of these maps.


class _Polar:
    def __init__(self, a, side):
        if side not in ("right", "left"):
            raise ValueError("scipy.linalg.polar: `side` must be either 'right' or 'left'")
        self.right = side == "right"
        a = _matrix(a, "scipy.linalg.polar", square=False)
        self.w, self.s, self.vh = w, s, vh = _svd(a, full_matrices=False)
        self.tall, self.wide = a.shape[0] > s.shape[0], a.shape[1] > s.shape[0]
        self.k = _safe_inverse(s[:, None] + s[None, :])
        self.inv_s = _safe_inverse(s)
        self.value = (mul(w, vh), mul(mH(vh) * s, vh) if self.right else mul(w * s, w, "N", "C"))

    def tangent(self, da):
        w, s, vh, k = self.w, self.s, self.vh, self.k
        c = mul(mul(w, da, "C"), vh, "N", "C")  # W^H dA V
        du = mul(mul(w, (c - mH(c)) * k), vh)
        if self.right:
            dp = mul(mul(vh, (mH(c) * s + s[:, None] * c) * k, "C"), vh)
        else:
            dp = mul(mul(w, (c * s + s[:, None] * mH(c)) * k), w, "N", "C")
        if self.tall:
            off = mul(da, vh, "N", "C") - mul(w, c)  # (I - W W^H) dA V
            du = du + mul(off * self.inv_s, vh)
            if not self.right:
                part = mul(off, w, "N", "C")
                dp = dp + part + mH(part)
        if self.wide:
            off = mul(w, da, "C") - mul(c, vh)  # W^H dA (I - V V^H)
            du = du + mul(w * self.inv_s, off)
            if self.right:
                part = mul(vh, off, "C")
                dp = dp + part + mH(part)
        return du, dp

    def gradient(self, du, dp):
        w, s, vh, k = self.w, self.s, self.vh, self.k
        cbar, extra = 0, 0
        if not is_zero(du):
            ub = mul(mul(w, du, "C"), vh, "N", "C")  # W^H dU V
            cbar = (ub - mH(ub)) * k
            if self.tall:
                extra = extra + mul((mul(du, vh, "N", "C") - mul(w, ub)) * self.inv_s, vh)
            if self.wide:
                extra = extra + mul(w * self.inv_s, mul(w, du, "C") - mul(ub, vh))
        if not is_zero(dp):
            sym = dp + mH(dp)
            if self.right:
                pb = mul(mul(vh, sym), vh, "N", "C")  # V^H (dP + dP^H) V
                cbar = cbar + s[:, None] * (pb * k)
                if self.wide:
                    part = mul(vh, sym)
                    extra = extra + mul(w, part - mul(mul(part, vh, "N", "C"), vh))
            else:
                pb = mul(mul(w, sym, "C"), w)  # W^H (dP + dP^H) W
                cbar = cbar + (pb * k) * s
                if self.tall:
                    part = mul(sym, w)
                    extra = extra + mul(part - mul(w, mul(w, part, "C")), vh)
        if np.ndim(cbar) == 0 and np.ndim(extra) == 0:
            return ZERO
        return mul(mul(w, cbar), vh) + extra if np.ndim(cbar) else extra


def _polar_side(rest, kwargs):
    return options("scipy.linalg.polar", rest, kwargs, (("side", "right"),))["side"]


@rrule.register(sl.polar, batched=True)
def rrule_polar(a, *rest, **kwargs):
    project = projector(a)
    polar = _Polar(a, _polar_side(rest, kwargs))

    def polar_pullback(dresult):
        du, dp = parts(dresult, 2)
        if parts_carry_batch(polar.value, (du, dp)):  # the factors broadcast against the batch
            g = polar.gradient(plain(du), plain(dp))
            return (NO, g if is_zero(g) else project.batch(g)) + (NO,) * len(rest)
        g = polar.gradient(du, dp)
        return (NO, g if is_zero(g) else project(g)) + (NO,) * len(rest)

    return polar.value, polar_pullback


@frule.register(sl.polar, batched=True)  # (the factors broadcast against a batch of directions)
def frule_polar(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    polar = _Polar(a, _polar_side(rest, kwargs))
    if is_zero(da):
        return polar.value, ZERO
    return polar.value, tangent_of(polar.value, *polar.tangent(da))


# ----- eigenproblems ------------------------------------------------------------------------

_EIGH_OPTIONS = (
    ("lower", True),
    ("eigvals_only", False),
    ("overwrite_a", False),
    ("overwrite_b", False),
    ("type", 1),
    ("check_finite", True),
    ("subset_by_index", None),
    ("subset_by_value", None),
    ("driver", None),
)


def _by_scipy(f, args: tuple, kwargs: dict, numpy_call):
    """``f(*args, **kwargs)`` of a SciPy decomposition where an argument is an engine's value (a
    Hessian's dual numbers), run by that engine through ``f``'s rule: the gauge of its factors (the
    signs of eigenvectors and singular vectors) is then the one SciPy gives the plain values, which
    a function of the factors depends on; NumPy's driver may choose another. ``numpy_call()`` where
    no engine runs a rule."""
    active = next((x for x in args if isinstance(x, ActiveValue)), None)
    out = NotImplemented if active is None else active.call_by_rule(f, args, kwargs)
    return numpy_call() if out is NotImplemented else out


def _eigh_setup(a, b, opts, name):
    """The full decomposition, of the standard problem or (``b`` given) the generalized one (a
    subset is selected from it, so its derivative sees every pair)."""
    a = _matrix(a, name)
    lower = bool(opts["lower"])
    driver = opts["driver"] if opts["driver"] in ("ev", "evd", "evr") else None
    if b is not None:
        w, v = _generalized_eigh(a, b, opts, lower, name)
    elif opts["eigvals_only"]:
        w, v, _ = symmetric_eigen(a, lower, name)
    elif is_plain(a):
        w, v = sl.eigh(a, lower=lower, driver=driver)
    else:
        w, v = _by_scipy(sl.eigh, (a,), {"lower": lower, "driver": driver}, lambda: np.linalg.eigh(a, "UL"[lower]))
    index = slice(None)
    if opts["subset_by_index"] is not None:
        lo, hi = opts["subset_by_index"]
        index = slice(int(lo), int(hi) + 1)
    elif opts["subset_by_value"] is not None:
        lo, hi = opts["subset_by_value"]
        index = np.flatnonzero((w > lo) & (w <= hi))
    return a, lower, w, v, index


def _generalized_eigh(a, b, opts, lower: bool, name: str):
    """``(w, V)`` of the generalized problem of ``opts["type"]``, both matrices read from one triangle."""
    b = _matrix(b, name)
    # the subset driver gives way to the full decomposition; SciPy judges the others (and the type)
    kwargs = {"lower": lower, "type": opts["type"], "driver": None if opts["driver"] == "gvx" else opts["driver"]}
    if is_plain(a, b):
        return sl.eigh(a, b, **kwargs)
    return _by_scipy(sl.eigh, (a, b), kwargs, lambda: _reduced_eigh(a, b, lower, opts["type"]))


def _reduced_eigh(a, b, lower: bool, kind: int):
    """The generalized problem by NumPy functions (arrays that are not NumPy's own): with
    ``b = L L^H``, the eigenvectors ``U`` of ``L^{-1} a L^{-H}`` give ``V = L^{-H} U`` (``type=1``),
    and those of ``L^H a L`` give ``V = L^{-H} U`` (``type=2``) or ``V = L U`` (``type=3``)."""
    low = np.linalg.cholesky(hermitian_from_triangle(b, lower))
    a = hermitian_from_triangle(a, lower)
    if kind == 1:
        w, u = np.linalg.eigh(NUMPY.trisolve(low, NUMPY.trisolve(low, a, lower=True), lower=True, op="C", side="right"))
    else:
        w, u = np.linalg.eigh(mH(low) @ a @ low)
        if kind == 3:
            return w, low @ u
    return w, NUMPY.trisolve(low, u, lower=True, op="C")


class _TypedEigh:
    """``eigh(a, b, type=2)`` (``a b V = V diag(w)``, ``V^H b V = I``) and ``type=3`` (``b a V =
    V diag(w)``, ``V^H b^{-1} V = I``) as the ``type=1`` problem of the pencil ``(b a b, b)``:
    ``b a b Y = b Y diag(w)``, ``Y^H b Y = I`` (multiply ``a b y = w y`` by ``b``; put ``v = b y``
    into ``b a v = w v``), whose ``Y`` is ``V`` for ``type=2`` and ``b^{-1} V`` for ``type=3``. The
    derivatives are those of that problem (below) through ``b a b`` and ``V = b Y``."""

    def __init__(self, kind: int, a, b, lower: bool, v, name: str):
        self.kind, self.lower = kind, lower
        self.a, self.b = hermitian_from_triangle(a, lower), hermitian_from_triangle(_matrix(b, name), lower)
        self.y = v if kind == 2 else np.linalg.solve(self.b, v)

    def gradient(self, w, dw, dv, repeated: Repeated):
        """The cotangents of ``a`` and ``b``, folded onto the triangles read; ``dw``, ``dv`` may carry a batch."""
        a, b, extra = self.a, self.b, ZERO
        if self.kind == 3 and not is_zero(dv):  # V = b Y
            extra, dv = dv @ mH(self.y), b @ dv
        ga, gb = generalized_eigh_gradient(w, self.y, dw, dv, repeated, SCIPY)
        if is_zero(ga):
            return ZERO, ZERO
        gb = gb + ga @ b @ a + a @ b @ ga  # d(b a b) = db a b + b da b + b a db
        if not is_zero(extra):
            gb = gb + extra
        return fold_onto_triangle(b @ ga @ b, self.lower), fold_onto_triangle(gb, self.lower)

    def tangent(self, w, dahat, dbhat, repeated: Repeated, columns):
        """``(dw, dV)`` along Hermitian directions (either may be a zero; one or a batch)."""
        a, b = self.a, self.b
        dpencil = ZERO if is_zero(dahat) else b @ dahat @ b
        if not is_zero(dbhat):
            term = dbhat @ a @ b + b @ a @ dbhat
            dpencil = term if is_zero(dpencil) else dpencil + term
        dw, dy = generalized_eigh_tangent(w, self.y, dpencil, dbhat, repeated, SCIPY, columns=columns)
        if self.kind == 2:
            return dw, dy
        return dw, b @ dy if is_zero(dbhat) else b @ dy + dbhat @ self.y


# The generalized problem a V = b V Λ, V^H b V = I (Λ = diag(w)): with P = V^H da V, Q = V^H db V
# and dV = V C, differentiating both equations and multiplying by V^H gives
#     C Λ - Λ C = P - Q Λ - dΛ,    C + C^H = -Q,
# so dw_i = Re (P - Q Λ)_ii = v_i^H (da - w_i db) v_i and C = F * (P - Q Λ) - Q_R / 2, where
# F[i, j] = 1 / (w[j] - w[i]) off the pairs of repeated eigenvalues and Q_R is Q on those pairs
# (the diagonal among them): the normalisation fixes the Hermitian part of C there, the rotation
# within an eigenspace is left out as in the standard problem (b = I gives Q = 0 and its rule).
# These are the classical results for the mass-normalised modes of a v = w b v: Fox & Kapoor
# (1968), "Rates of change of eigenvalues and eigenvectors", AIAA J. 6(12), eqs. for dw_i and the
# modal expansion of dv_i with its -v_i (v_i^H db v_i) / 2 term; Nelson (1976), "Simplified
# calculation of eigenvector derivatives", AIAA J. 14(9). The pullback is its adjoint: with
# G = diag(dw) + F * (V^H dV) (the standard rule's), the cotangents are V G V^H for a and
# -V (G Λ + (V^H dV)_R / 2) V^H for b.


def generalized_eigh_gradient(w, v, dw, dv, repeated: Repeated, ops=SCIPY):
    """``(Ga, Gb)`` whose Hermitian parts are the cotangents of ``a`` and ``b`` in ``a V = b V
    diag(w)``, ``V^H b V = I`` (derived above); ``dw``, ``dv`` may carry a leading batch axis."""
    inner, m = eigh_inner(w, v, dw, dv, repeated, ops)
    if is_zero(inner):
        return ZERO, ZERO
    outer = -inner * w[..., None, :]
    if not is_zero(m):
        outer = outer - 0.5 * (_repeated(w)[0] * m)
    return ops.mul(ops.mul(v, inner), v, "N", "C"), ops.mul(ops.mul(v, outer), v, "N", "C")


def generalized_eigh_tangent(w, v, dahat, dbhat, repeated: Repeated, ops=SCIPY, columns=slice(None)):
    """``(dw, dV)`` of ``a V = b V diag(w)``, ``V^H b V = I`` along Hermitian directions (either may
    be a zero; stacked or batched); ``repeated`` warns as for the standard problem."""
    m, q = 0, ZERO
    if not is_zero(dahat):
        m = ops.mul(v, ops.mul(dahat, v), "C")
    if not is_zero(dbhat):
        q = ops.mul(v, ops.mul(dbhat, v), "C")
        m = m - q * w[..., None, :]
    repeated.check(m, tangent=True, columns=columns)
    c = gap_inverse(w) * m
    if not is_zero(q):
        c = c - 0.5 * (_repeated(w)[0] * q)
    return np.real(diagonal(m)), ops.mul(v, c)


def _embed(full_like, part, index):
    """The cotangent of the full ``w`` (or ``v``) from that of the selected columns (or a batch)."""
    if is_zero(part) or (isinstance(index, slice) and index == slice(None)):
        return part
    out = np.zeros(np.shape(part)[:-1] + full_like.shape[-1:], dtype=np.result_type(full_like, part))
    out[..., index] = part
    return out


def _b(rest, kwargs, name):
    if len(rest) > 1:
        raise TypeError(f"{name} takes at most 2 positional arguments")
    return rest[0] if rest else kwargs.pop("b", None)


def _eigvals_gradient(w, v, dw, b, lower: bool):
    """The cotangents of ``a`` (and ``b``) for ``dw`` on the eigenvalues: ``V diag(dw) V^H`` (and
    ``-V diag(dw w) V^H``), folded onto the triangles read."""
    ga = eigvalsh_gradient(w, v, dw, lower, SCIPY)
    return ga, (None if b is None else eigvalsh_gradient(w, v, -np.real(dw) * w, lower, SCIPY))


def _vectors_gradient(w, v, dw, dv, b, lower: bool, repeated: Repeated):
    """The cotangents of ``a`` (and ``b``) for cotangents of the eigenvalues and eigenvectors."""
    if b is None:
        return fold_onto_triangle(eigh_gradient(w, v, dw, dv, repeated, SCIPY), lower), None
    ga, gb = generalized_eigh_gradient(w, v, dw, dv, repeated, SCIPY)
    return fold_onto_triangle(ga, lower), fold_onto_triangle(gb, lower)


def _typed(opts, a, b, lower: bool, v):
    """The ``_TypedEigh`` of a generalized problem of ``type=2`` or ``3``, else None."""
    if b is None or opts["type"] == 1:
        return None
    return _TypedEigh(opts["type"], a, b, lower, v, "scipy.linalg.eigh")


def _projected(project, g, batched: bool):
    """The cotangent ``g`` of an argument (``project`` None: of ``b=None``), one or a batch."""
    if project is None:
        return NO
    return g if is_zero(g) else (project.batch(g) if batched else project(g))


@rrule.register(sl.eigh, batched=True)
def rrule_eigh(a, *rest, **kwargs):
    b = _b(rest, kwargs, "scipy.linalg.eigh")
    opts = options("scipy.linalg.eigh", (), kwargs, _EIGH_OPTIONS)
    projections = (projector(a),) + ((projector(b) if b is not None else None,) if rest else ())
    a_, lower, w, v, index = _eigh_setup(a, b, opts, "scipy.linalg.eigh")
    result = w[index] if opts["eigvals_only"] else (w[index], v[:, index])
    outputs = (result, v) if opts["eigvals_only"] else result
    repeated = Repeated("scipy.linalg.eigh", "eigh", w)
    typed = _typed(opts, a_, b, lower, v)

    def eigh_pullback(dresult):
        if opts["eigvals_only"]:
            dw, dv = unthunk(dresult), ZERO
        else:
            dw, dv = parts(dresult, 2)
        batched = parts_carry_batch(outputs, (dw, dv))
        dw, dv = _embed(w, plain(dw), index), _embed(v, plain(dv), index)
        if is_zero(dw) and is_zero(dv):
            gs = (ZERO, ZERO)
        elif typed is not None:
            gs = typed.gradient(w, dw, dv, repeated)
        elif is_zero(dv):
            gs = _eigvals_gradient(w, v, dw, b, lower)
        else:
            gs = _vectors_gradient(w, v, dw, dv, b, lower, repeated)
        return (NO,) + tuple(_projected(p, g, batched) for p, g in zip(projections, gs))

    return result, eigh_pullback


@frule.register(sl.eigh, batched=True)
def frule_eigh(tangents, a, *rest, **kwargs):
    b = _b(rest, kwargs, "scipy.linalg.eigh")
    opts = options("scipy.linalg.eigh", (), kwargs, _EIGH_OPTIONS)
    da, db = (_tangents(tangents) + (ZERO,))[:2]
    a_, lower, w, v, index = _eigh_setup(a, b, opts, "scipy.linalg.eigh")
    result = w[index] if opts["eigvals_only"] else (w[index], v[:, index])
    if is_zero(da) and is_zero(db):
        return result, ZERO
    dahat, dbhat = (d if is_zero(d) else hermitian_from_triangle(d, lower) for d in (da, db))
    repeated = Repeated("scipy.linalg.eigh", "eigh", w)
    typed = _typed(opts, a_, b, lower, v)
    if typed is not None:
        dw, dv = typed.tangent(w, dahat, dbhat, repeated, index)
        return result, (dw[..., index] if opts["eigvals_only"] else tangent_of(result, dw[..., index], dv[..., index]))
    if opts["eigvals_only"]:
        dw = 0 if is_zero(dahat) else eigvalsh_tangent(v, dahat, SCIPY)
        dw = dw if is_zero(dbhat) else dw - w * eigvalsh_tangent(v, dbhat, SCIPY)
        return result, dw[..., index]
    if is_zero(dbhat):
        dw, dv = eigh_tangent(w, v, dahat, repeated, SCIPY, columns=index)
    else:
        dw, dv = generalized_eigh_tangent(w, v, dahat, dbhat, repeated, SCIPY, columns=index)
    return result, tangent_of(result, dw[..., index], dv[..., index])


_EIGVALSH_OPTIONS = tuple((k, d) for k, d in _EIGH_OPTIONS if k != "eigvals_only")


@rrule.register(sl.eigvalsh, batched=True)
def rrule_eigvalsh(a, *rest, **kwargs):
    options("scipy.linalg.eigvalsh", (), {k: v for k, v in kwargs.items() if k != "b"}, _EIGVALSH_OPTIONS)
    return rrule_eigh(a, *rest, eigvals_only=True, **kwargs)


@frule.register(sl.eigvalsh, batched=True)
def frule_eigvalsh(tangents, a, *rest, **kwargs):
    options("scipy.linalg.eigvalsh", (), {k: v for k, v in kwargs.items() if k != "b"}, _EIGVALSH_OPTIONS)
    return frule_eigh(tangents, a, *rest, eigvals_only=True, **kwargs)


_EIG_OPTIONS = (
    ("left", False),
    ("right", True),
    ("overwrite_a", False),
    ("overwrite_b", False),
    ("check_finite", True),
    ("homogeneous_eigvals", False),
)


def _eig_setup(a, b, opts, name):
    if b is not None or opts["left"] or opts["homogeneous_eigvals"]:
        raise no_rule(
            name,
            (a,) if b is None else (a, b),
            "only the standard problem with right eigenvectors (b=None, left=False, homogeneous_eigvals=False) "
            "has a rule",
        )
    a = _matrix(a, name)
    w, v = sl.eig(a) if is_plain(a) else _by_scipy(sl.eig, (a,), {}, lambda: np.linalg.eig(a))
    return a, w, v


@rrule.register(sl.eig, batched=True)
def rrule_eig(a, *rest, **kwargs):
    b = _b(rest, kwargs, "scipy.linalg.eig")
    opts = options("scipy.linalg.eig", (), kwargs, _EIG_OPTIONS)
    project = projector(a)
    a_, w, v = _eig_setup(a, b, opts, "scipy.linalg.eig")
    result = (w, v) if opts["right"] else w
    repeated = Repeated("scipy.linalg.eig", "eig", w)

    def eig_pullback(dresult):
        dw, dv = parts(dresult, 2) if opts["right"] else (unthunk(dresult), ZERO)
        if is_zero(dw) and is_zero(dv):
            return (NO, ZERO) + (NO,) * len(rest)
        if parts_carry_batch((w, v), (dw, dv)):
            g = eig_gradient(w, v, plain(dw), plain(dv), repeated, SCIPY, batched=True)
            return (NO, project.batch(g)) + (NO,) * len(rest)
        return (NO, project(eig_gradient(w, v, dw, dv, repeated, SCIPY))) + (NO,) * len(rest)

    return result, eig_pullback


@frule.register(sl.eig, batched=True)
def frule_eig(tangents, a, *rest, **kwargs):
    b = _b(rest, kwargs, "scipy.linalg.eig")
    opts = options("scipy.linalg.eig", (), kwargs, _EIG_OPTIONS)
    (da,) = _tangents(tangents)[:1]
    a_, w, v = _eig_setup(a, b, opts, "scipy.linalg.eig")
    result = (w, v) if opts["right"] else w
    if is_zero(da):
        return result, ZERO
    if not opts["right"]:  # the eigenvalues alone
        return result, _as_dtype(eigvals_tangent(v, da, SCIPY, is_batched(da, a)), w.dtype)
    dw, dv = eig_tangent(w, v, da, Repeated("scipy.linalg.eig", "eig", w), SCIPY, is_batched(da, a))
    # in the outputs' types: SciPy's eigenvalues are complex always, its eigenvectors real when all are
    dv = np.real(dv) if np.iscomplexobj(dv) and not np.iscomplexobj(v) else dv
    return result, tangent_of(result, _as_dtype(dw, w.dtype), dv)


def _as_dtype(dw, dtype):
    """``dw`` in the eigenvalues' ``dtype`` (SciPy's are complex always)."""
    return dw if np.result_type(dw) == dtype else np.asarray(dw).astype(dtype)


_EIGVALS_OPTIONS = (("b", None), ("overwrite_a", False), ("check_finite", True), ("homogeneous_eigvals", False))


@rrule.register(sl.eigvals, batched=True)
def rrule_eigvals(a, *rest, **kwargs):
    options("scipy.linalg.eigvals", rest, kwargs, _EIGVALS_OPTIONS)
    return rrule_eig(a, *rest[:1], right=False, **kwargs)


@frule.register(sl.eigvals, batched=True)
def frule_eigvals(tangents, a, *rest, **kwargs):
    options("scipy.linalg.eigvals", rest, kwargs, _EIGVALS_OPTIONS)
    return frule_eig(tangents, a, *rest[:1], right=False, **kwargs)


# ----- singular values ----------------------------------------------------------------------

_SVD_OPTIONS = (
    ("full_matrices", True),
    ("compute_uv", True),
    ("overwrite_a", False),
    ("check_finite", True),
    ("lapack_driver", "gesdd"),
)


def _svd_setup(a, opts, name="scipy.linalg.svd"):
    a = _matrix(a, name, square=False)
    full = opts["full_matrices"] and opts["compute_uv"]
    if is_plain(a):
        u, s, vh = sl.svd(a, full_matrices=full, lapack_driver=opts["lapack_driver"])
    else:
        options = {"full_matrices": full, "lapack_driver": opts["lapack_driver"]}
        u, s, vh = _by_scipy(sl.svd, (a,), options, lambda: np.linalg.svd(a, full_matrices=full))
    return (u, s, vh) if opts["compute_uv"] else s, u, s, vh


@rrule.register(sl.svd, batched=True)
def rrule_svd(a, *rest, **kwargs):
    opts = options("scipy.linalg.svd", rest, kwargs, _SVD_OPTIONS)
    project = projector(a)
    result, u, s, vh = _svd_setup(a, opts)
    repeated = Repeated("scipy.linalg.svd", "svd", s)

    def svd_pullback(dresult):
        du, ds, dvh = parts(dresult, 3) if opts["compute_uv"] else (ZERO, unthunk(dresult), ZERO)
        if parts_carry_batch((u, s, vh), (du, ds, dvh)):  # the factors broadcast against the batch
            g = svd_gradient(u, s, vh, plain(du), plain(ds), plain(dvh), repeated, SCIPY)
            return (NO, ZERO if is_zero(g) else project.batch(g)) + (NO,) * len(rest)
        g = svd_gradient(u, s, vh, du, ds, dvh, repeated, SCIPY)
        return (NO, ZERO if is_zero(g) else project(g)) + (NO,) * len(rest)

    return result, svd_pullback


@frule.register(sl.svd, batched=True)
def frule_svd(tangents, a, *rest, **kwargs):
    opts = options("scipy.linalg.svd", rest, kwargs, _SVD_OPTIONS)
    (da,) = _tangents(tangents)[:1]
    result, u, s, vh = _svd_setup(a, opts)
    if is_zero(da):
        return result, ZERO
    if not opts["compute_uv"]:
        return result, svdvals_tangent(u, vh, da, SCIPY)
    du, ds, dvh = svd_tangent(u, s, vh, da, Repeated("scipy.linalg.svd", "svd", s), SCIPY)
    return result, tangent_of(result, du, ds, dvh)


@rrule.register(sl.svdvals, batched=True)
def rrule_svdvals(a, *rest, **kwargs):
    options("scipy.linalg.svdvals", rest, kwargs, (("overwrite_a", False), ("check_finite", True)))
    project = projector(a)
    _, u, s, vh = _svd_setup(a, dict(_SVD_OPTIONS, full_matrices=False), "scipy.linalg.svdvals")

    def svdvals_pullback(ds):
        ds = unthunk(ds)
        if is_zero(ds):
            return (NO, ZERO) + (NO,) * len(rest)
        if carries_batch(s, ds):
            return (NO, project.batch(mul(u * np.real(plain(ds))[:, None, :], vh))) + (NO,) * len(rest)
        return (NO, project(mul(u * np.real(ds), vh))) + (NO,) * len(rest)

    return s, svdvals_pullback


@frule.register(sl.svdvals, batched=True)
def frule_svdvals(tangents, a, *rest, **kwargs):
    options("scipy.linalg.svdvals", rest, kwargs, (("overwrite_a", False), ("check_finite", True)))
    (da,) = _tangents(tangents)[:1]
    _, u, s, vh = _svd_setup(a, dict(_SVD_OPTIONS, full_matrices=False), "scipy.linalg.svdvals")
    if is_zero(da):
        return s, ZERO
    return s, svdvals_tangent(u, vh, da, SCIPY)


# ----- norms --------------------------------------------------------------------------------


_NORM_OPTIONS = (("ord", None), ("axis", None), ("keepdims", False), ("check_finite", True))


def _sp_norm_setup(a, rest, kwargs):
    o = options("scipy.linalg.norm", rest, kwargs, _NORM_OPTIONS)
    y, g, axes = _norm_setup(a, o["ord"], o["axis"], o["keepdims"])
    if (o["ord"] not in ("nuc", 2, -2) or np.ndim(a) == 1) and not isinstance(a, ActiveValue):
        # the value (and its type: SciPy returns Python floats for BLAS norms) from SciPy itself (not
        # for a Hessian's dual numbers, which SciPy would convert);
        # the weights g came from the same reductions
        y = sl.norm(a, o["ord"], o["axis"], o["keepdims"])
    return o, y, g, axes


@rrule.register(sl.norm, batched=True)
def rrule_norm(a, *rest, **kwargs):
    project = projector(a)
    o, y, g, axes = _sp_norm_setup(a, rest, kwargs)

    def norm_pullback(dy):
        dy = unthunk(dy)
        rest_cotangents = norm_rest_cotangents(a, y, rest, axes, o["keepdims"], dy)
        if is_zero(dy):
            return (NO, ZERO) + rest_cotangents
        if carries_batch(y, dy):
            return (NO, project.batch(_norm_gradient_batch(dy, g, axes, o["keepdims"]))) + rest_cotangents
        dy = np.real(dy)
        if not o["keepdims"]:
            dy = np.expand_dims(dy, axes)
        return (NO, project(dy * g)) + rest_cotangents

    return y, norm_pullback


@frule.register(sl.norm, batched=True)
def frule_norm(tangents, a, *rest, **kwargs):
    (da,) = _tangents(tangents)[:1]
    o, y, g, axes = _sp_norm_setup(a, rest, kwargs)
    dy = norm_order_tangent(a, y, rest, axes, o["keepdims"], tangents[2:])
    if not is_zero(da):
        dy_a = _norm_tangent(a, da, g, axes, o["keepdims"])
        dy = dy_a if is_zero(dy) else dy_a + dy
    if is_zero(dy):
        return y, dy
    return y, (float(dy) if isinstance(y, float) and np.ndim(dy) == 0 else dy)


# ----- the matrix exponential ---------------------------------------------------------------
#
# Algorithm 6.4 of Al-Mohy & Higham (2009), "Computing the Fréchet derivative of the matrix
# exponential, with an application to condition number estimation", SIAM J. Matrix Anal. Appl.
# 30(4):1639-1657: scaling and squaring with a Padé approximant of degree 3, 5, 7, 9 or 13 chosen
# from ||A||_1 (their Table 6.1), differentiated along the Padé evaluation and the squaring
# recurrence, reusing the powers of A, the LU factors of q(A) and the squares. The primal keeps
# every intermediate; the pullback of a cotangent G is the Fréchet derivative in the adjoint
# direction, L(A^H, G) = L(A, G^H)^H, so it runs on A's own intermediates. The primal differs
# from scipy.linalg.expm (the 2009 "new scaling and squaring" choice of degree and scaling) by
# rounding only, and is the more accurate of the two: on 40 well-scaled 3 x 3 matrices where both
# choose degree 13 without squaring, SciPy 1.17's value lay up to ~1300 ulps (of the largest entry)
# from a 60-digit mpmath reference, this one within ~24, as scipy.linalg.expm_frechet's value does.

_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0),
    13: (
        64764752532480000.0,
        32382376266240000.0,
        7771770303897600.0,
        1187353796428800.0,
        129060195264000.0,
        10559470521600.0,
        670442572800.0,
        33522128640.0,
        1323241920.0,
        40840800.0,
        960960.0,
        16380.0,
        182.0,
        1.0,
    ),
}
# ell_m of Table 6.1: the largest ||A||_1 for which degree m meets double precision, for both
# the exponential and its Fréchet derivative
_ELL = {3: 1.08e-2, 5: 2.00e-1, 7: 7.83e-1, 9: 1.78, 13: 4.74}


def _onenorm(x) -> float:
    return float(np.max(np.sum(np.abs(x), axis=-2))) if np.size(x) else 0.0


class _Expm:
    """The exponential of one matrix with everything its Fréchet derivative needs."""

    def __init__(self, a):
        n = a.shape[0]
        self.ident = ident = np.eye(n, dtype=a.dtype)
        # comparisons only, so that the choice also reads a dual number's primal value
        norm = np.max(np.sum(np.abs(a), axis=0))
        self.m = next((m for m in (3, 5, 7, 9) if norm <= _ELL[m]), 13)
        self.s = 0
        while self.m == 13 and norm > _ELL[13] * 2.0**self.s:  # the least s with ||A / 2^s||_1 <= ell_13
            self.s += 1
        if self.s:
            a = a * 2.0**-self.s
        self.a = a
        b = _PADE[self.m]
        a2 = mul(a, a)
        powers = [a2]  # A^2, A^4, ...: as many as the degree needs
        if self.m == 13:
            a4 = mul(a2, a2)
            a6 = mul(a4, a2)
            powers = [a2, a4, a6]
            self.w1 = b[13] * a6 + b[11] * a4 + b[9] * a2
            self.z1 = b[12] * a6 + b[10] * a4 + b[8] * a2
            w = mul(a6, self.w1)
            w += b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident
            v = mul(a6, self.z1)
            v += b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
            self.w = w
        else:
            for _ in range(self.m // 2 - 1):
                powers.append(mul(powers[-1], a2) if len(powers) != 1 else mul(a2, a2))
            w = b[1] * ident + sum(b[2 * j + 3] * p for j, p in enumerate(powers))
            v = b[0] * ident + sum(b[2 * j + 2] * p for j, p in enumerate(powers))
            self.w = w  # U = A W
        self.powers = powers
        u = mul(a, self.w)
        # r = q(A)^{-1} p(A) with p = V + U, q = V - U: one LU, reused by the derivative
        self.lu = LU(v - u)
        self.lu.check("scipy.linalg.expm")
        self.r = self.lu.solve(v + u)
        self.squares = [self.r]
        for _ in range(self.s):
            self.squares.append(mul(self.squares[-1], self.squares[-1]))
        self.value = self.squares.pop()  # squares[k] is r^(2^k), k < s

    def frechet(self, e, batched: bool = False):
        """``L(A, E)``, the derivative of the computed exponential in the direction ``E``
        (eqs. (6.11)-(6.13) and (3.3)); ``E`` may carry a leading batch axis."""
        b, a, powers = _PADE[self.m], self.a, self.powers
        if self.s:
            e = e * 2.0**-self.s
        a2 = powers[0]
        m2 = mul(a, e)
        m2 += mul(e, a)
        ms = [m2]  # M_2k = L_{x^2k}(A, E)
        if self.m >= 5:
            m4 = mul(a2, m2)
            m4 += mul(m2, a2)
            ms.append(m4)
        if self.m >= 7:
            m6 = mul(powers[1], m2)
            m6 += mul(m4, a2)
            ms.append(m6)
        if self.m == 9:
            m8 = mul(powers[1], m4)
            m8 += mul(m4, powers[1])
            ms.append(m8)
        if self.m == 13:
            a6 = powers[2]
            lw = mul(a6, b[13] * m6 + b[11] * m4 + b[9] * m2)
            lw += mul(m6, self.w1)
            lw += b[7] * m6 + b[5] * m4 + b[3] * m2
            lu = mul(a, lw)
            lu += mul(e, self.w)
            lv = mul(a6, b[12] * m6 + b[10] * m4 + b[8] * m2)
            lv += mul(m6, self.z1)
            lv += b[6] * m6 + b[4] * m4 + b[2] * m2
        else:
            lu = mul(a, sum(b[2 * j + 3] * mk for j, mk in enumerate(ms)))
            lu += mul(e, self.w)
            lv = sum(b[2 * j + 2] * mk for j, mk in enumerate(ms))
        rhs = mul(lu - lv, self.r)
        rhs += lu
        rhs += lv
        lr = self.lu.solve(rhs, batched=batched)
        for x in self.squares:  # d(X^2) = X dX + dX X along the squaring phase
            nxt = mul(x, lr)
            nxt += mul(lr, x)
            lr = nxt
        return lr


def _expm_setup(a):
    """``a`` and the exponentials of its matrices (None for no entries), one at a time as SciPy loops."""
    a = _matrix(a, "scipy.linalg.expm", stacks=True)
    if a.size == 0:
        return a, None
    return a, MatrixStack(_Expm, a)


@rrule.register(sl.expm, batched=True)
def rrule_expm(a):
    project = projector(a)
    a_, ex = _expm_setup(a)
    y = a_.copy() if ex is None else ex.value

    def expm_pullback(dy):
        dy = unthunk(dy)
        if is_zero(dy) or ex is None:
            return NO, ZERO
        # L(A^H, G) = L(A, G^H)^H: the adjoint direction reuses A's intermediates; the Fréchet
        # derivative takes a batch of directions
        batched = carries_batch(y, dy)
        dx = mH(ex.map("frechet", mH(plain(dy)), batched=batched))
        return NO, (project.batch(dx) if batched else project(dx))

    return y, expm_pullback


@frule.register(sl.expm, batched=True)
def frule_expm(tangents, a):
    (da,) = _tangents(tangents)
    a_, ex = _expm_setup(a)
    y = a_.copy() if ex is None else ex.value
    if is_zero(da) or ex is None:
        return y, ZERO
    return y, ex.map("frechet", da, batched=is_batched(da, a))


def _blocks(top_left, top_right, bottom_right):
    """``[[top_left, top_right], [0, bottom_right]]`` of each matrix of the stacks given (a zero
    stands for zeros; one batch axis in front of all three, or none)."""
    given = [t for t in (top_left, top_right, bottom_right) if not is_zero(t)]
    shape, dtype = np.shape(given[0]), np.result_type(*(t.dtype for t in given))
    tl, tr, br = (np.zeros(shape, dtype) if is_zero(t) else t for t in (top_left, top_right, bottom_right))
    bottom = np.concatenate([np.zeros(shape, dtype), br], axis=-1)
    return np.concatenate([np.concatenate([tl, tr], axis=-1), bottom], axis=-2)


def _upper_block(x, e):
    """``[[X, E], [0, X]]``, whose function holds the Fréchet derivative ``L_f(X, E)`` in its upper right."""
    return _blocks(x, e, x)


_EXPM_FRECHET_OPTIONS = (("method", None), ("compute_expm", True), ("check_finite", True))


def _expm_frechet_setup(a, e, rest, kwargs):
    opts = options("scipy.linalg.expm_frechet", rest, kwargs, _EXPM_FRECHET_OPTIONS)
    if opts["method"] not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {opts['method']}")
    a, e = (_matrix(x, "scipy.linalg.expm_frechet", stacks=True) for x in (a, e))
    return a, e, a.shape[-1], opts["compute_expm"]


@rrule.register(sl.expm_frechet, batched=True)
def rrule_expm_frechet(a, e, *rest, **kwargs):
    """``(expm(A), L(A, E))`` as the blocks of ``expm([[A, E], [0, A]])`` (``_upper_block``): the
    rule of expm there, whose Padé evaluation is Al-Mohy & Higham's, as SciPy's method='SPS'."""
    project_a, project_e = projector(a), projector(e)
    a, e, n, compute_expm = _expm_frechet_setup(a, e, rest, kwargs)
    big, expm_pullback = rrule_expm(_upper_block(a, e))
    blocks = (big[..., :n, :n], big[..., :n, n:])

    def expm_frechet_pullback(dresult):
        dexp, dl = parts(dresult, 2) if compute_expm else (ZERO, unthunk(dresult))
        if is_zero(dexp) and is_zero(dl):
            return (NO, ZERO, ZERO) + (NO,) * len(rest)
        batched = parts_carry_batch(blocks, (dexp, dl))
        g = expm_pullback(_blocks(dexp, dl, ZERO))[1]
        ga, ge = g[..., :n, :n] + g[..., n:, n:], g[..., :n, n:]
        if batched:
            return (NO, project_a.batch(ga), project_e.batch(ge)) + (NO,) * len(rest)
        return (NO, project_a(ga), project_e(ge)) + (NO,) * len(rest)

    return (blocks if compute_expm else blocks[1]), expm_frechet_pullback


@frule.register(sl.expm_frechet, batched=True)
def frule_expm_frechet(tangents, a, e, *rest, **kwargs):
    da, de = _tangents(tangents)[:2]
    a, e, n, compute_expm = _expm_frechet_setup(a, e, rest, kwargs)
    batch = batch_size((da, de), (a, e))
    dbig = ZERO if is_zero(da) and is_zero(de) else _upper_block(with_batch(da, a, batch), with_batch(de, e, batch))
    big, dbig = frule_expm((NO, dbig), _upper_block(a, e))
    blocks = (big[..., :n, :n], big[..., :n, n:])
    if is_zero(dbig):
        return (blocks if compute_expm else blocks[1]), ZERO
    if compute_expm:
        return blocks, tangent_of(blocks, dbig[..., :n, :n], dbig[..., :n, n:])
    return blocks[1], dbig[..., :n, n:]


# ----- square root and logarithm through the Schur form --------------------------------------


def _sylvester(a, b, c, op="N"):
    """``X`` with ``op(a) X + X op(b) = c`` for upper triangular ``a``, ``b`` (LAPACK's TRSYL)."""
    x, scale, info = lapack("trsyl", a.dtype)(a, b, c.astype(a.dtype, copy=False), trana=op, tranb=op)
    if info < 0:
        raise np.linalg.LinAlgError(f"TRSYL failed with info={info}")
    return x / scale if scale != 1 else x


def _sqrt_upper(t):
    """The principal square root of an upper triangular matrix, by halves: the diagonal blocks
    recursively and the coupling block from ``R11 R12 + R12 R22 = T12`` (Deadman, Higham &
    Ralha 2013, "Blocked Schur algorithms for computing the matrix square root")."""
    n = t.shape[0]
    if n == 1:
        return np.sqrt(t)
    h = n // 2
    r11, r22 = _sqrt_upper(t[:h, :h]), _sqrt_upper(t[h:, h:])
    out = np.zeros_like(t)
    out[:h, :h], out[h:, h:] = r11, r22
    out[:h, h:] = _sylvester(r11, r22, t[:h, h:])
    return out


def _maybe_real(a, x):
    """SciPy's convention: a real matrix whose function is real to rounding gets a real result."""
    if not np.iscomplexobj(a) and np.iscomplexobj(x):
        tol = {4: np.finfo(np.float32).eps * 1e3, 8: np.finfo(np.float64).eps * 1e6}[x.real.dtype.itemsize]
        if np.allclose(x.imag, 0.0, atol=tol):
            return x.real
    return x


def _schur(a, name):
    """The complex Schur form ``a = Q T Q^H``; for a real ``a``, eigenvalues on the negative real
    axis are put on the upper side of the branch cut, as SciPy's functions take them."""
    a = _lapack_matrix(a, name)
    t, q = sl.schur(a, output="complex")
    if not np.iscomplexobj(a):
        d = diagonal(t)
        on_cut = (d.real < 0) & (np.abs(d.imag) <= 64 * np.finfo(d.real.dtype).eps * np.abs(d))
        if on_cut.any():
            idx = np.flatnonzero(on_cut)
            t[idx, idx] = d.real[idx] + 0j
    return a, t, q


def _to_schur(q, x):
    return mul(mul(q, x.astype(q.dtype, copy=False), "C"), q)


def _from_schur(q, x):
    return mul(mul(q, x), q, "N", "C")


def _real_like(y, dx):
    return np.real(dx) if not np.iscomplexobj(y) else dx


def _check_disp(name, a, rest, kwargs, extra=()):
    opts = options(name, rest, kwargs, (("disp", True),) + extra)
    if opts["disp"] is False:
        raise no_rule(name, (a, *rest), "disp=False (deprecated in SciPy) has no derivative rule")


class _Sqrtm:
    def __init__(self, a):
        self.a, t, self.q = _schur(a, "scipy.linalg.sqrtm")
        self.r = _sqrt_upper(t)
        self.value = _maybe_real(self.a, _from_schur(self.q, self.r))

    def frechet(self, e):
        """``R Z + Z R = Q^H E Q`` in the Schur basis (the derivative of ``X X = A``)."""
        return _real_like(self.value, _from_schur(self.q, _sylvester(self.r, self.r, _to_schur(self.q, e))))

    def adjoint(self, g):
        return _from_schur(self.q, _sylvester(self.r, self.r, _to_schur(self.q, g), op="C"))


class _BlockFrechet:
    """A matrix function ``f(A, *args)`` of one matrix with Fréchet derivatives from ``f`` of the
    block matrix ``[[B, E], [0, B]]``, whose upper right block is ``L_f(B, E)`` (Higham 2008,
    "Functions of Matrices", Theorem 3.6 / eq. 3.16; Mathias 1996), every call through ``f``'s
    forward rule where an argument is a dual number (forward over reverse). The adjoint is
    ``G -> conj(L_f(A^T, conj(G)))``, which is ``L_f(A, .)^*`` for every primary matrix function:
    in an eigenbasis ``L_f`` scales ``E_ij`` by the divided difference ``f[l_i, l_j]``, its adjoint
    by the conjugate, and ``A^T`` has ``A``'s eigenvalues, so this holds on the branch cut too,
    where ``f(A^H) != f(A)^H``."""

    def __init__(self, f, a, *args):
        self.f, self.a, self.args = f, a, args
        self.value = through_rules(f, a, *args)

    def _upper_right(self, b, e):
        n = b.shape[-1]
        return through_rules(self.f, _upper_block(b, e), *self.args)[:n, n:]

    def frechet(self, e):
        return _real_like(self.value, self._upper_right(self.a, e))

    def adjoint(self, g):
        return _real_like(self.a, conj(self._upper_right(mT(self.a), conj(g))))


def _of_each_matrix(f, a, compute=None, *args):
    """``f(a, *args)`` of each matrix of ``a`` (a stack, or one), one at a time as SciPy loops, with
    what its derivatives need: ``compute``'s work, or (a dual number, or no ``compute``) the block
    matrices of ``_BlockFrechet``."""
    a = _matrix(a, f"scipy.linalg.{f.__name__}", stacks=True)
    return MatrixStack(lambda m: _BlockFrechet(f, m, *args) if compute is None or is_active(m) else compute(m), a)


def _matrix_function_pullback(fm, project, dx):
    """The cotangent of ``A`` from ``dx`` on ``f(A)`` (``fm`` from ``_of_each_matrix``), one or a batch."""
    dx = unthunk(dx)
    if is_zero(dx):
        return ZERO
    if carries_batch(fm.value, dx):  # one matrix at a time (TRSYL, the block matrices), the same work reused
        return project.batch(by_rows(lambda row: (fm.map("adjoint", row),), dx)[0])
    return project(fm.map("adjoint", dx))


def _matrix_function_tangent(fm, a, da):
    """The tangent of ``f(A)`` along ``da`` (``fm`` from ``_of_each_matrix``), one or a batch."""
    if is_zero(da):
        return ZERO
    if is_batched(da, a):  # one matrix at a time (TRSYL, the block matrices), the same work reused
        return by_rows(lambda row: (fm.map("frechet", row),), da)[0]
    return fm.map("frechet", da)


def _register_matrix_function(f, of=None, options=None):
    """The ``rrule`` and ``frule`` of ``f(A)``, both batched: ``of(a)`` computes ``f`` of each matrix
    with what its derivative needs (default: the block matrices of ``_BlockFrechet``); ``options``,
    where ``f`` takes them, are its settings after ``disp`` (checked by ``_check_disp``)."""
    name = f"scipy.linalg.{f.__name__}"

    def settings(a, rest, kwargs):
        if options is None:
            if rest or kwargs:
                raise TypeError(f"{name}() takes only the matrix")
        else:
            _check_disp(name, a, rest, kwargs, options)
        return _of_each_matrix(f, a) if of is None else of(a)

    def matrix_function_rrule(a, *rest, **kwargs):
        project, fm = projector(a), settings(a, rest, kwargs)

        def matrix_function_pullback(dy):
            return (NO, _matrix_function_pullback(fm, project, dy)) + (NO,) * len(rest)

        matrix_function_pullback.__name__ = matrix_function_pullback.__qualname__ = f"{f.__name__}_pullback"
        return fm.value, matrix_function_pullback

    def matrix_function_frule(tangents, a, *rest, **kwargs):
        fm = settings(a, rest, kwargs)
        return fm.value, _matrix_function_tangent(fm, a, _tangents(tangents)[0])

    matrix_function_rrule.__name__ = matrix_function_rrule.__qualname__ = f"rrule_{f.__name__}"
    matrix_function_frule.__name__ = matrix_function_frule.__qualname__ = f"frule_{f.__name__}"
    rrule.register(f, batched=True)(matrix_function_rrule)
    frule.register(f, batched=True)(matrix_function_frule)


def _sqrtm_of(a):
    return _of_each_matrix(sl.sqrtm, a, _Sqrtm)


_register_matrix_function(sl.sqrtm, _sqrtm_of, (("blocksize", None),))


# Inverse scaling and squaring (Al-Mohy & Higham 2012, "Improved inverse scaling and squaring
# algorithms for the matrix logarithm"): square roots of the Schur factor until it is close to I,
# then log(I + Y) by the m-point Gauss-Legendre rule, which is the [m/m] Padé approximant. Its
# Fréchet derivative (Al-Mohy, Higham & Relton 2013, "Computing the Fréchet derivative of the
# matrix logarithm and estimating the condition number") solves one Sylvester equation per square
# root and two triangular systems per node.
_LOG_NODES = 8
_LOG_THETA = 0.3  # ||Y||_1 bound; the [8/8] Padé error is below 1e-18 there


class _Logm:
    def __init__(self, a):
        a = as_array(a)
        if isinstance(a, np.ndarray):  # SciPy's logm works in double precision
            a = a.astype(np.result_type(a, np.float64), copy=False)
        self.a, t, self.q = _schur(a, "scipy.linalg.logm")
        t0, n = t, t.shape[0]
        ident = np.eye(n, dtype=t.dtype)
        if np.any(diagonal(t) == 0):
            raise np.linalg.LinAlgError("scipy.linalg.logm: the logarithm of a singular matrix does not exist")
        self.roots = []
        while _onenorm(t - ident) > _LOG_THETA and len(self.roots) < 64:
            t = _sqrt_upper(t)
            self.roots.append(t)
        self.y = y = t - ident
        x, w = np.polynomial.legendre.leggauss(_LOG_NODES)
        self.nodes, self.weights = (x + 1) / 2, w / 2
        self.shifted = [ident + node * y for node in self.nodes]  # I + t_k Y, upper triangular
        self.scale = 2.0 ** len(self.roots)
        log_t = self.scale * sum(
            wk * triangular_solve(sk, y, lower=False) for wk, sk in zip(self.weights, self.shifted)
        )
        idx = np.arange(n)
        log_t[idx, idx] = np.log(diagonal(t0))  # the diagonal exactly, as Al-Mohy & Higham recompute it
        self.value = _maybe_real(self.a, _from_schur(self.q, log_t))

    def frechet(self, e):
        f = _to_schur(self.q, e)
        for r in self.roots:  # d(R^2) = dA: R dR + dR R = dA at every square root
            f = _sylvester(r, r, f)
        f = sum(
            wk * triangular_solve(sk, triangular_solve(sk, f, lower=False), lower=False, side="right")
            for wk, sk in zip(self.weights, self.shifted)
        )
        return _real_like(self.value, _from_schur(self.q, self.scale * f))

    def adjoint(self, g):
        f = self.scale * _to_schur(self.q, g)
        f = sum(
            wk * triangular_solve(sk, triangular_solve(sk, f, lower=False, op="C"), lower=False, op="C", side="right")
            for wk, sk in zip(self.weights, self.shifted)
        )
        for r in reversed(self.roots):
            f = _sylvester(r, r, f, op="C")
        return _from_schur(self.q, f)


def _logm_of(a):
    return _of_each_matrix(sl.logm, a, _Logm)


_register_matrix_function(sl.logm, _logm_of, ())


# ----- trigonometric, hyperbolic, sign and fractional powers through block matrices ---------
#
# SciPy computes the trigonometric and hyperbolic functions from expm and fractional powers by
# the Schur-Padé algorithm; their rules differentiate the function itself through the block-
# triangular identity of _BlockFrechet (one evaluation of f at 2n x 2n per direction), whose
# repeated eigenvalues both algorithms take. The sign function has its own Newton iteration.


for _f in (sl.cosm, sl.sinm, sl.tanm, sl.coshm, sl.sinhm, sl.tanhm):
    _register_matrix_function(_f)


class _Signm:
    """The matrix sign function, its derivatives by the Newton iteration ``X <- (X + X^{-1}) / 2``
    from ``X = A`` and its derivative ``L <- (L - X^{-1} L X^{-1}) / 2`` from ``L = E``, which
    converges to ``L_sign(A, E)`` (Higham 2008, "Functions of Matrices", eq. 5.16 and Theorem 5.7;
    Kenney & Laub 1991). SciPy's own signm takes a shifted Newton iteration where its Schur-Parlett
    value is inaccurate, as at the block matrices of ``_BlockFrechet``, and the shift changes the
    sign of eigenvalues near the imaginary axis. The iteration runs on NumPy functions with rules,
    so it also runs on dual numbers (forward over reverse)."""

    def __init__(self, a):
        self.a = a
        self.value = through_rules(sl.signm, a)

    def _newton(self, x, e):
        tol = x.shape[-1] * np.finfo(float_dtype(x)).eps
        for _ in range(100):
            if np.linalg.cond(stood_for(x)) > 1 / tol:  # an eigenvalue on the imaginary axis reaches 0
                break
            inverse = np.linalg.inv(x)
            e = 0.5 * (e - inverse @ e @ inverse)
            x, previous = 0.5 * (x + inverse), x
            if _onenorm(stood_for(x - previous)) <= tol * _onenorm(stood_for(x)):  # quadratic: L converged too
                return e
        raise NoDerivativeError(
            f"scipy.linalg.signm{at_user()}: A has an eigenvalue on or near the imaginary axis, where the sign "
            "function jumps (its Newton iteration does not converge)"
        )

    def frechet(self, e):
        return _real_like(self.value, self._newton(self.a, e))

    def adjoint(self, g):
        return _real_like(self.a, conj(self._newton(mT(self.a), conj(g))))


def _signm_of(a):
    return MatrixStack(_Signm, _matrix(a, "scipy.linalg.signm", stacks=True))


_register_matrix_function(sl.signm, _signm_of, ())


def _power_setup(a, t):
    """``A^t`` of each matrix and ``d(A^t)/dt = log(A) A^t`` (SciPy's principal logarithm), a thunk."""
    fm = _of_each_matrix(sl.fractional_matrix_power, a, None, t)
    return fm, Thunk(lambda: through_rules(sl.logm, a) @ fm.value)


@rrule.register(sl.fractional_matrix_power, batched=True)
def rrule_fractional_matrix_power(a, t):
    project, project_t = projector(a), projector(t)
    fm, by_t = _power_setup(a, t)

    def fractional_matrix_power_pullback(dy):
        da = _matrix_function_pullback(fm, project, dy)
        dy = unthunk(dy)
        if is_zero(dy):
            return NO, da, ZERO
        batched = carries_batch(fm.value, dy)
        dt = np.sum(dy * conj(unthunk(by_t)), axis=tuple(range(int(batched), np.ndim(dy))))
        return NO, da, (project_t.batch(dt) if batched else project_t(dt))

    return fm.value, fractional_matrix_power_pullback


@frule.register(sl.fractional_matrix_power, batched=True)
def frule_fractional_matrix_power(tangents, a, t):
    da, dt = _tangents(tangents)
    fm, by_t = _power_setup(a, t)
    dy = _matrix_function_tangent(fm, a, da)
    if is_zero(dt):
        return fm.value, dy
    term = np.reshape(dt, np.shape(dt) + (1,) * np.ndim(fm.value)) * unthunk(by_t)  # a batch of dt leads
    return fm.value, term if is_zero(dy) else dy + term


class _Funm:
    """``funm(A, func)`` with derivatives by the Daleckii-Krein formula: with ``A = V diag(l) V^{-1}``,
    ``L(A, E) = V (D * (V^{-1} E V)) V^{-1}`` where ``D[i, j] = f[l_i, l_j]``, the divided difference
    (``f'(l_i)`` where the eigenvalues meet), and its adjoint scales by ``conj(D)`` (Higham 2008,
    "Functions of Matrices", Theorem 3.11). ``f'`` is forward mode on ``func``: ``d/dt func(l + t)``.
    SciPy's Schur-Parlett value has repeated eigenvalues at the block matrices of ``_BlockFrechet``,
    where it divides by zero, so the block identity cannot serve. The eigen-decomposition, ``func``
    and its forward derivative run on dual numbers too (forward over reverse). Where ``func``
    holds dual numbers (forward mode in what it closes over), SciPy's compiled loops cannot take its
    values: the value is ``V diag(func(l)) V^{-1}``, which carries their derivative."""

    def __init__(self, a, func):
        self.a, self.func = a, func
        self._d = None
        self._eig = w, v = np.linalg.eig(a)
        fw = func(w)
        if not isinstance(fw, ActiveValue):
            self.value = through_rules(sl.funm, a, func)
            return
        self._refuse_nearly_defective(v)
        value = (v * fw) @ np.linalg.inv(v)
        # (real where SciPy's value is: a real A's, its imaginary part at rounding level)
        real = not np.iscomplexobj(sl._matfuncs._maybe_real(stood_for(a), stood_for(value)))
        self.value = np.real(value) if real else value

    @staticmethod
    def _refuse_nearly_defective(v):
        if np.linalg.cond(stood_for(v)) > 1e8:
            raise NoDerivativeError(
                f"scipy.linalg.funm{at_user()}: A is not diagonalizable to working accuracy (its "
                "eigenvectors are nearly dependent), where the divided differences of func do not give L_f"
            )

    def _differences(self):
        """``V``, ``V^{-1}`` and ``D``, once."""
        if self._d is None:
            w, v = self._eig
            self._refuse_nearly_defective(v)
            fw, dfw = jvp_by_forward_mode(lambda t: self.func(w + t), (0.0,), (1.0,))
            # a complex eigenvalue, or a complex A, moves off the real line: func must be complex-
            # differentiable there (Cauchy-Riemann: the derivative along i is i f')
            if np.iscomplexobj(self.a) or np.any(np.imag(stood_for(w)) != 0):
                along_i = jvp_by_forward_mode(lambda s: self.func(w + 1j * s), (0.0,), (1.0,))[1]
                if not np.allclose(stood_for(along_i), 1j * stood_for(dfw), rtol=1e-8, atol=1e-12):
                    raise NoDerivativeError(
                        f"scipy.linalg.funm{at_user()}: func is not complex-differentiable at A's complex eigenvalues "
                        "(its derivative along i is not i times that along 1), so f(A) has no Fréchet derivative"
                    )
            gaps = w[:, None] - w[None, :]
            scale = np.maximum(np.abs(stood_for(w))[:, None], np.abs(stood_for(w))[None, :])
            meet = np.abs(stood_for(gaps)) <= 1e-8 * np.maximum(scale, 1.0)
            quotient = (fw[:, None] - fw[None, :]) / np.where(meet, 1.0, gaps)
            self._d = v, np.linalg.inv(v), np.where(meet, 0.5 * (dfw[:, None] + dfw[None, :]), quotient)
        return self._d

    def frechet(self, e):
        v, vinv, d = self._differences()
        return _real_like(self.value, v @ (d * (vinv @ e @ v)) @ vinv)

    def values_cotangent(self, pullback_of, g):
        """The cotangent of what ``func`` holds for ``g`` on ``V diag(func(l)) V^{-1}``."""
        w, v = self._eig
        vinv = np.linalg.inv(v)
        return pullback_of(self.func, w)[1](diagonal(mH(v) @ g @ mH(vinv)))[0]

    def adjoint(self, g):
        v, vinv, d = self._differences()
        return _real_like(self.a, mH(vinv) @ (conj(d) * (mH(v) @ g @ mH(vinv))) @ mH(v))


def _funm_of(a, func):
    return MatrixStack(lambda m: _Funm(m, func), _matrix(a, "scipy.linalg.funm", stacks=True))


@rrule.register(sl.funm, batched=True)
def rrule_funm(a, func, *rest, **kwargs):
    """``funm(A, func)``: the cotangent of ``A``, and where ``func`` holds values (a closure's, a
    ``functools.partial``'s), theirs through ``func``'s pullback at the eigenvalues: with
    ``A = V diag(l) V^{-1}``, ``funm`` is ``V diag(func(l)) V^{-1}``, whose values' cotangent is the
    diagonal of ``V^H dY V^{-H}``. ``func`` must be complex-differentiable at complex eigenvalues."""
    _check_disp("scipy.linalg.funm", a, rest, kwargs)
    project, fm = projector(a), _funm_of(a, func)
    pullback_of = None
    if getattr(func, "__closure__", None) or isinstance(func, functools.partial):
        pullback_of = later_pullbacks()
        decline_batch()  # func's pullback takes one cotangent at a time

    def funm_pullback(dy):
        da = _matrix_function_pullback(fm, project, dy)
        dfunc = NO
        if pullback_of is not None and not is_zero(unthunk(dy)):
            dy = unthunk(dy)
            for item, i in zip(fm.items, np.ndindex(fm.shape)):
                d = item.values_cotangent(pullback_of, dy[i])
                dfunc = d if isinstance(dfunc, NoTangent) else dfunc + d
        return (NO, da, dfunc) + (NO,) * len(rest)

    return fm.value, funm_pullback


@frule.register(sl.funm, batched=True)
def frule_funm(tangents, a, func, *rest, **kwargs):
    _check_disp("scipy.linalg.funm", a, rest, kwargs)
    if not is_zero(unthunk(tangents[2])):
        raise no_rule("scipy.linalg.funm", (a, func), "a tangent of the values func holds: forward mode takes A's only")
    fm = _funm_of(a, func)
    return fm.value, _matrix_function_tangent(fm, a, _tangents(tangents)[0])
