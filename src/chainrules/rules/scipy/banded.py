"""Rules for ``scipy.linalg.solve_banded`` and ``solveh_banded``: solves with a matrix in band storage.

``solve_banded((l, u), ab, b)`` reads ``A[i, j] = ab[u + i - j, j]`` for ``-u <= i - j <= l``;
``solveh_banded(ab, b, lower)`` reads one triangle of a Hermitian positive definite ``A`` the same
way (``ab[i - j, j]`` below the diagonal, or ``ab[k + i - j, j]`` above it). The derivative is the
dense solve's, ``dX = A^{-1} (dB - dA X)``, and the pullback of ``dX`` is ``dB = A^{-H} dX``,
``dA = -dB X^H``, where only the entries in the band are read back into band storage: entries of
``ab`` that SciPy does not read (the corners of the storage) get zero. The LU factors of the band
(GBTRF) or its Cholesky factor (PBTRF) are computed once and solve the primal, the tangent and the
adjoint system; the products with the band go diagonal by diagonal, O(n (l + u + 1)) work per
column, never through the dense matrix. Dual numbers (forward over reverse) use the dense matrix.
A batch of cotangents (a leading batch axis, for reverse-mode Jacobians) is pulled back row by
row with the same factors, and a batch of tangents pushed forward likewise.

>>> import numpy as np, scipy.linalg as sl, chainrules as cr
>>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])  # l = u = 1
>>> x, back = cr.rrule(sl.solve_banded, (1, 1), ab, np.array([5.0, 6.0, 5.0]))
>>> x
array([1., 1., 1.])
>>> dab = back(np.array([1.0, 0.0, 0.0]))[2]
>>> bool(dab[0, 0] == 0 and dab[2, 2] == 0)  # the corners of ab are not read: no cotangent
True
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl

from ...core import carries_batch, conj, frule, rrule, unthunk
from ._lapack import (
    NO,
    ZERO,
    as_array,
    batch_size,
    by_rows,
    float_dtype,
    is_batched,
    is_plain,
    is_zero,
    lapack,
    mH,
    no_rule,
    options,
    projector,
)

# ----- products with a band, diagonal by diagonal --------------------------------------------
#
# A general band ``gb`` of ``A`` holds ``A[j + off, j]`` at ``gb[u + off, j]``, for the offsets
# ``off = i - j`` from ``-u`` to ``l``; matrices of right-hand sides are (n, k).


def _shift(v, off: int):
    """``w[i] = v[i - off]`` along axis 0, zeros where ``i - off`` is out of range."""
    n = np.shape(v)[0]
    if off == 0:
        return v
    if abs(off) >= n:
        return np.zeros_like(v)
    pad = np.zeros((abs(off),) + np.shape(v)[1:], dtype=v.dtype)
    return np.concatenate([pad, v[: n - off]]) if off > 0 else np.concatenate([v[-off:], pad])


def _band_matmul(gb, lower: int, upper: int, x):
    """``A @ x`` for the band ``gb`` of ``A``."""
    out = 0
    for off in range(-upper, lower + 1):
        out = out + _shift(gb[upper + off][:, None] * x, off)
    return out


def _band_of_outer(g, x, lower: int, upper: int):
    """The band of ``g @ x^H``: the entry at offset ``off`` in column ``j`` is ``sum_k g[j + off, k] conj(x[j, k])``."""
    xc = conj(x)
    return np.stack([np.sum(_shift(g, -off) * xc, axis=-1) for off in range(-upper, lower + 1)])


def _dense(gb, lower: int, upper: int):
    """The matrix of the band ``gb`` (for dual numbers, whose solves are NumPy's)."""
    n = np.shape(gb)[1]
    i, j = np.indices((n, n))
    off = i - j
    inside = (off >= -upper) & (off <= lower)
    return gb[np.clip(upper + off, 0, lower + upper), j] * inside


# ----- Hermitian bands: one triangle stored ------------------------------------------------


def _hermitian_band(ab, lower: bool):
    """The general band (``l = u = k``) of the Hermitian matrix stored in one triangle of ``ab``."""
    k = np.shape(ab)[0] - 1
    diag = np.real(ab[0 if lower else k]).astype(ab.dtype, copy=False) if np.iscomplexobj(ab) else ab[0 if lower else k]
    rows = {0: diag}
    for d in range(1, k + 1):
        stored = ab[d] if lower else ab[k - d]  # A[j + d, j] (lower) or A[j - d, j] (upper)
        mirrored = conj(_shift(stored, d if lower else -d))
        rows[d], rows[-d] = (stored, mirrored) if lower else (mirrored, stored)
    return np.stack([rows[off] for off in range(-k, k + 1)])


def _fold_band(fb, lower: bool):
    """The cotangent of the stored triangle from that of the full band ``fb`` (``l = u = k``):
    an entry off the diagonal stands for itself and its mirror; the diagonal is read real."""
    k = (np.shape(fb)[0] - 1) // 2
    diag = np.real(fb[k]).astype(fb.dtype, copy=False) if np.iscomplexobj(fb) else fb[k]
    rows = {0: diag}
    for d in range(1, k + 1):
        if lower:
            rows[d] = fb[k + d] + conj(_shift(fb[k - d], -d))
        else:
            rows[d] = fb[k - d] + conj(_shift(fb[k + d], d))
    order = range(k + 1) if lower else range(k, -1, -1)
    return np.stack([rows[d] for d in order])


# ----- factorizations ---------------------------------------------------------------------


def _split_complex(solve, b, real_factors: bool):
    if real_factors and np.iscomplexobj(b):
        return solve(b.real) + 1j * solve(b.imag)
    return solve(b)


class _BandLU:
    """``A = P L U`` of a general band (GBTRF); solves with ``A``, ``A^T`` or ``A^H`` (GBTRS)."""

    def __init__(self, ab, lower: int, upper: int):
        self.dtype, self.lower, self.upper = ab.dtype, lower, upper
        storage = np.zeros((2 * lower + upper + 1, ab.shape[1]), dtype=ab.dtype)
        storage[lower:] = ab  # GBTRF needs l more rows for the fill-in of row interchanges
        self.lu, self.piv, info = lapack("gbtrf", ab.dtype)(storage, lower, upper)
        if info > 0:
            raise np.linalg.LinAlgError("scipy.linalg.solve_banded: singular matrix")

    def solve(self, b, op: str = "N"):
        trans = {"N": 0, "T": 1, "C": 2 if np.iscomplexobj(self.lu) else 1}[op]
        gbtrs = lapack("gbtrs", self.dtype)

        def columns(cols):
            return gbtrs(self.lu, self.lower, self.upper, cols.astype(self.dtype, copy=False), self.piv, trans=trans)[0]

        return _split_complex(columns, b, not np.iscomplexobj(self.lu))


class _BandCholesky:
    """``A = L L^H`` of a Hermitian positive definite band (PBTRF); ``A^H = A`` (PBTRS)."""

    def __init__(self, ab, lower: bool):
        self.dtype, self.lower = ab.dtype, lower
        self.c, info = lapack("pbtrf", ab.dtype)(ab, lower=int(lower))
        if info > 0:
            raise np.linalg.LinAlgError(f"scipy.linalg.solveh_banded: {info}th leading minor not positive definite")

    def solve(self, b, op: str = "N"):
        pbtrs = lapack("pbtrs", self.dtype)

        def columns(cols):
            return pbtrs(self.c, cols.astype(self.dtype, copy=False), lower=int(self.lower))[0]

        return _split_complex(columns, b, not np.iscomplexobj(self.c))


class _Dense:
    """Solves with the dense matrix of a band of dual numbers."""

    def __init__(self, gb, lower: int, upper: int):
        self.a = _dense(gb, lower, upper)

    def solve(self, b, op: str = "N"):
        return np.linalg.solve(mH(self.a) if op == "C" else self.a, b)


def _arrays(ab, b, name):
    ab, b = as_array(ab), as_array(b)
    if np.ndim(ab) != 2:
        reason = (
            f"the rule takes a single banded matrix, got ab of shape {np.shape(ab)}; apply it to each matrix "
            "and stack the results (np.stack([... for m in ab]))"
        )
        if np.ndim(ab) > 2:  # (a stack, which SciPy takes)
            raise no_rule(name, (ab, b), reason)
        raise ValueError(f"{name}: {reason}")
    if np.ndim(b) not in (1, 2):
        raise ValueError(f"the rule for {name} takes b with one or two axes, got shape {np.shape(b)}")
    if np.shape(ab)[-1] != np.shape(b)[0]:
        raise ValueError(f"{name}: shapes of ab and b are not compatible.")
    if isinstance(ab, np.ndarray) and isinstance(b, np.ndarray):
        dtype = float_dtype(ab, b)
        ab, b = ab.astype(dtype, copy=False), b.astype(dtype, copy=False)
    return ab, b


def _columns(x):
    return x[:, None] if np.ndim(x) == 1 else x


def _tangent_rows(tangent, tangents, primals):
    """``tangent(*row)`` for each row of a batch of tangents (unbatched ones and zeros repeated in
    every row), stacked; ``tangent(*tangents)`` when none carries a batch."""
    batch = batch_size(tangents, primals)
    if batch is None:
        return tangent(*tangents)
    rows = [[d[k] if is_batched(d, p) else d for d, p in zip(tangents, primals)] for k in range(batch)]
    return np.stack([tangent(*row) for row in rows])


# ----- solve_banded -------------------------------------------------------------------------

_BANDED_OPTIONS = (("overwrite_ab", False), ("overwrite_b", False), ("check_finite", True))


def _banded_setup(l_and_u, ab, b, rest, kwargs):
    name = "scipy.linalg.solve_banded"
    options(name, rest, kwargs, _BANDED_OPTIONS)
    lower, upper = (int(v) for v in l_and_u)
    ab, b = _arrays(ab, b, name)
    if lower + upper + 1 != np.shape(ab)[0]:
        raise ValueError(
            f"{name}: invalid values for the number of lower and upper diagonals: l+u+1 "
            f"({lower + upper + 1}) does not equal ab.shape[0] ({np.shape(ab)[0]})"
        )
    if np.size(b) == 0:
        return lower, upper, ab, np.empty(np.shape(b), dtype=ab.dtype), None
    solver = _BandLU(ab, lower, upper) if is_plain(ab, b) else _Dense(ab, lower, upper)
    x = solver.solve(_columns(b))
    return lower, upper, ab, (x[:, 0] if np.ndim(b) == 1 else x), solver


@rrule.register(sl.solve_banded, batched=True)
def rrule_solve_banded(l_and_u, ab, b, *rest, **kwargs):
    project_ab, project_b = projector(ab), projector(b)
    lower, upper, ab_, x, solver = _banded_setup(l_and_u, ab, b, rest, kwargs)
    extra = (NO,) * len(rest)

    def solve_banded_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx) or solver is None:
            return (NO, NO, ZERO, ZERO) + extra
        if carries_batch(x, dx):
            return by_rows(solve_banded_pullback, dx)
        g = solver.solve(_columns(dx), "C")  # A^H G = dX with the primal's factors
        dab = -_band_of_outer(g, _columns(x), lower, upper)  # the band of -G X^H
        return (NO, NO, project_ab(dab), project_b(g[:, 0] if np.ndim(x) == 1 else g)) + extra

    return x, solve_banded_pullback


@frule.register(sl.solve_banded, batched=True)
def frule_solve_banded(tangents, l_and_u, ab, b, *rest, **kwargs):
    dab, db = (unthunk(t) for t in tangents[2:4])
    lower, upper, ab_, x, solver = _banded_setup(l_and_u, ab, b, rest, kwargs)
    if (is_zero(dab) and is_zero(db)) or solver is None:
        return x, ZERO

    def tangent(dab, db):
        rhs = 0 if is_zero(db) else _columns(db)  # A dX = dB - dA X
        if not is_zero(dab):
            rhs = rhs - _band_matmul(dab, lower, upper, _columns(x))
        dx = solver.solve(rhs)
        return dx[:, 0] if np.ndim(x) == 1 else dx

    return x, _tangent_rows(tangent, (dab, db), (ab, b))  # (a batch: row by row, with the same factors)


# ----- solveh_banded ------------------------------------------------------------------------

_HBANDED_OPTIONS = (("overwrite_ab", False), ("overwrite_b", False), ("lower", False), ("check_finite", True))


def _hbanded_setup(ab, b, rest, kwargs):
    name = "scipy.linalg.solveh_banded"
    lower = bool(options(name, rest, kwargs, _HBANDED_OPTIONS)["lower"])
    ab, b = _arrays(ab, b, name)
    k = np.shape(ab)[0] - 1
    if np.size(b) == 0:
        return lower, k, np.empty(np.shape(b), dtype=ab.dtype), None
    solver = _BandCholesky(ab, lower) if is_plain(ab, b) else _Dense(_hermitian_band(ab, lower), k, k)
    x = solver.solve(_columns(b))
    return lower, k, (x[:, 0] if np.ndim(b) == 1 else x), solver


@rrule.register(sl.solveh_banded, batched=True)
def rrule_solveh_banded(ab, b, *rest, **kwargs):
    project_ab, project_b = projector(ab), projector(b)
    lower, k, x, solver = _hbanded_setup(ab, b, rest, kwargs)
    extra = (NO,) * len(rest)

    def solveh_banded_pullback(dx):
        dx = unthunk(dx)
        if is_zero(dx) or solver is None:
            return (NO, ZERO, ZERO) + extra
        if carries_batch(x, dx):
            return by_rows(solveh_banded_pullback, dx)
        g = solver.solve(_columns(dx), "C")  # A is Hermitian: the same factor solves A^H G = dX
        dab = _fold_band(-_band_of_outer(g, _columns(x), k, k), lower)
        return (NO, project_ab(dab), project_b(g[:, 0] if np.ndim(x) == 1 else g)) + extra

    return x, solveh_banded_pullback


@frule.register(sl.solveh_banded, batched=True)
def frule_solveh_banded(tangents, ab, b, *rest, **kwargs):
    dab, db = (unthunk(t) for t in tangents[1:3])
    lower, k, x, solver = _hbanded_setup(ab, b, rest, kwargs)
    if (is_zero(dab) and is_zero(db)) or solver is None:
        return x, ZERO

    def tangent(dab, db):
        rhs = 0 if is_zero(db) else _columns(db)
        if not is_zero(dab):
            rhs = rhs - _band_matmul(_hermitian_band(dab, lower), k, k, _columns(x))
        dx = solver.solve(rhs)
        return dx[:, 0] if np.ndim(x) == 1 else dx

    return x, _tangent_rows(tangent, (dab, db), (ab, b))  # (a batch: row by row, with the same factors)
