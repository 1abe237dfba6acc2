"""``scipy.linalg`` rules whose pullbacks take a batch of cotangents (a leading batch axis), checked
against the same pullback called row by row (real, complex, float32; array outputs, tuple outputs
and tuple arguments such as ``lu_solve``'s factors), and the batched pushforwards of eig, eigvals,
svd, qr, lstsq, pinv and pinvh against row-by-row calls."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr

from ..numpy.test_batched_linalg import check_rows
from ..numpy.test_linalg import hermitian, rng_for, values, wellcond

pytestmark = [
    # SciPy's own logm warns about its accuracy estimate for some inputs
    pytest.mark.filterwarnings("ignore:logm result may be inaccurate:RuntimeWarning"),
    # and hankel that it will stop raveling a 2-D input (a primal here)
    pytest.mark.filterwarnings("ignore:Beginning in SciPy 1.19:FutureWarning"),
]

DTYPES = [np.float64, np.float32, np.complex128]


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def rtol_for(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def spd(n, dtype, rng):
    return hermitian(n, dtype, rng) + np.eye(n, dtype=dtype)


def triangular(n, dtype, rng):
    return wellcond(n, dtype=dtype, rng=rng) + 3 * np.eye(n, dtype=dtype)


def band(rng, dtype, lower, upper, n=5):
    ab = rand(rng, (lower + upper + 1, n), dtype)
    ab[upper] += 4  # the diagonal dominates
    return ab


def hermitian_band(rng, dtype, k, lower, n=5):
    ab = rand(rng, (k + 1, n), dtype)
    ab[0 if lower else k] = 4 + np.abs(ab[0 if lower else k])
    return ab


def _stable(n, dtype, rng):
    return wellcond(n, dtype=dtype, rng=rng) * 0.3 - 2 * np.eye(n, dtype=dtype)


ARRAY_OUT = [
    (sl.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, (3, 2), dt)), {}),
    (sl.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, 3, dt)), {}),
    (sl.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, 3, dt)), {"transposed": True}),
    (sl.solve, lambda r, dt: (hermitian(3, dt, r) + 4 * np.eye(3, dtype=dt), rand(r, (3, 2), dt)), {"assume_a": "sym"}),
    (sl.solve, lambda r, dt: (hermitian(3, dt, r) + 4 * np.eye(3, dtype=dt), rand(r, 3, dt)), {"assume_a": "her"}),
    (sl.solve, lambda r, dt: (spd(3, dt, r), rand(r, (3, 2), dt)), {"assume_a": "pos", "lower": True}),
    (sl.solve, lambda r, dt: (triangular(3, dt, r), rand(r, 3, dt)), {"assume_a": "upper triangular"}),
    (sl.solve, lambda r, dt: (triangular(3, dt, r), rand(r, (3, 2), dt)), {"assume_a": "diagonal"}),
    (sl.solve_triangular, lambda r, dt: (triangular(3, dt, r), rand(r, (3, 2), dt)), {}),
    (sl.solve_triangular, lambda r, dt: (triangular(3, dt, r), rand(r, 3, dt)), {"trans": 2, "lower": True}),
    (sl.solve_triangular, lambda r, dt: (triangular(3, dt, r), rand(r, 3, dt)), {"trans": "T", "unit_diagonal": True}),
    (sl.inv, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (sl.inv, lambda r, dt: (spd(3, dt, r),), {"assume_a": "pos"}),
    (sl.det, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (sl.cholesky, lambda r, dt: (spd(3, dt, r),), {}),
    (sl.cholesky, lambda r, dt: (spd(3, dt, r),), {"lower": True}),
    (sl.eigvalsh, lambda r, dt: (hermitian(4, dt, r),), {}),
    (sl.eigvalsh, lambda r, dt: (hermitian(4, dt, r),), {"subset_by_index": (1, 2), "lower": False}),
    (sl.eigvals, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (sl.svdvals, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {}),
    (sl.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"compute_uv": False}),
    (sl.pinv, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (sl.pinvh, lambda r, dt: (hermitian(3, dt, r),), {}),
    (sl.norm, lambda r, dt: (rand(r, (3, 4), dt),), {}),
    (sl.norm, lambda r, dt: (rand(r, (3, 4), dt),), {"ord": 2}),
    (sl.norm, lambda r, dt: (rand(r, (3, 4), dt),), {"axis": 0, "keepdims": True}),
    (sl.expm, lambda r, dt: (0.1 * rand(r, (3, 3), dt),), {}),
    (sl.expm, lambda r, dt: (3 * rand(r, (3, 3), dt),), {}),  # scaling and squaring
    (sl.expm, lambda r, dt: (np.stack([0.1 * rand(r, (3, 3), dt), 3 * rand(r, (3, 3), dt)]),), {}),  # a stack
    (sl.sqrtm, lambda r, dt: (spd(3, dt, r),), {}),
    (sl.sqrtm, lambda r, dt: (np.stack([spd(3, dt, r), spd(3, dt, r)]),), {}),
    (sl.logm, lambda r, dt: (spd(3, dt, r),), {}),
    (sl.logm, lambda r, dt: (np.stack([spd(3, dt, r), spd(3, dt, r)]),), {}),
    (sl.solve_sylvester, lambda r, dt: (_stable(3, dt, r), _stable(2, dt, r), rand(r, (3, 2), dt)), {}),
    (sl.solve_continuous_lyapunov, lambda r, dt: (_stable(3, dt, r), rand(r, (3, 3), dt)), {}),
    (sl.solve_discrete_lyapunov, lambda r, dt: (0.3 * wellcond(3, dtype=dt, rng=r), rand(r, (3, 3), dt)), {}),
    (
        sl.solve_discrete_lyapunov,
        lambda r, dt: (0.3 * wellcond(3, dtype=dt, rng=r), rand(r, (3, 3), dt)),
        {"method": "bilinear"},
    ),
    (sl.solve_banded, lambda r, dt: ((1, 2), band(r, dt, 1, 2), rand(r, 5, dt)), {}),
    (sl.solve_banded, lambda r, dt: ((1, 0), band(r, dt, 1, 0), rand(r, (5, 2), dt)), {}),
    (sl.solveh_banded, lambda r, dt: (hermitian_band(r, dt, 1, False), rand(r, 5, dt)), {}),
    (sl.solveh_banded, lambda r, dt: (hermitian_band(r, dt, 2, True), rand(r, (5, 2), dt)), {"lower": True}),
    (sl.toeplitz, lambda r, dt: (rand(r, 3, dt), rand(r, 4, dt)), {}),
    (sl.toeplitz, lambda r, dt: (rand(r, 3, dt),), {}),
    (sl.toeplitz, lambda r, dt: (rand(r, (2, 3), dt), rand(r, 2, dt)), {}),  # a stack of columns
    (sl.circulant, lambda r, dt: (rand(r, 4, dt),), {}),
    (sl.circulant, lambda r, dt: (rand(r, (2, 3), dt),), {}),
    (sl.hankel, lambda r, dt: (rand(r, 3, dt), rand(r, 4, dt)), {}),
    (sl.hankel, lambda r, dt: (rand(r, 3, dt),), {}),
    (sl.block_diag, lambda r, dt: (rand(r, (2, 2), dt), rand(r, 3, dt), rand(r, (1, 2), dt)), {}),
    (sl.block_diag, lambda r, dt: (rand(r, (2, 1, 2), dt), rand(r, (2, 2), dt)), {}),  # stacked blocks
]


def _name(v):
    return getattr(v, "__name__", None) or str(v)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f, make, kwargs", ARRAY_OUT, ids=_name)
def test_array_outputs_row_by_row(f, make, kwargs, dtype, batched_pullback):
    if dtype is np.float32 and f in (sl.det, sl.logm, sl.solve_discrete_lyapunov):
        dtype = np.float64  # SciPy computes these in double precision
    if dtype is np.complex128 and kwargs.get("transposed"):
        dtype = np.float64  # SciPy solves no complex transposed system
    args = make(rng_for("sp-batched-pullback", f.__name__, str(kwargs), dtype), dtype)
    batched_pullback(f, *args, kwargs=kwargs, rtol=rtol_for(dtype))


# ----- tuple outputs and tuple arguments ----------------------------------------------------------


def _lu_and_b(r, dt, vector):
    return sl.lu_factor(wellcond(3, dtype=dt, rng=r)), rand(r, 3 if vector else (3, 2), dt)


STRUCTURED = [
    (sl.lu_factor, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (sl.lu, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (sl.lu, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {"permute_l": True}, ()),
    (sl.lu, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, (1,)),
    (sl.lu_solve, lambda r, dt: _lu_and_b(r, dt, False), {}, ()),
    (sl.lu_solve, lambda r, dt: _lu_and_b(r, dt, True), {"trans": 1}, ()),
    (sl.lu_solve, lambda r, dt: _lu_and_b(r, dt, True), {"trans": 2}, ()),
    (sl.cho_factor, lambda r, dt: (spd(3, dt, r),), {}, ()),
    (sl.cho_factor, lambda r, dt: (spd(3, dt, r),), {"lower": True}, ()),
    (sl.cho_solve, lambda r, dt: (sl.cho_factor(spd(3, dt, r)), rand(r, (3, 2), dt)), {}, ()),
    (sl.cho_solve, lambda r, dt: (sl.cho_factor(spd(3, dt, r), lower=True), rand(r, 3, dt)), {}, ()),
    (sl.eigh, lambda r, dt: (hermitian(4, dt, r),), {}, ()),
    (sl.eigh, lambda r, dt: (hermitian(4, dt, r),), {"subset_by_index": (2, 3)}, ()),
    (sl.eigh, lambda r, dt: (hermitian(3, dt, r),), {}, (1,)),
    (sl.eig, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (sl.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}, ()),
    (sl.svd, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {"full_matrices": False}, ()),
    (sl.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}, ()),
    (sl.qr, lambda r, dt: (wellcond(3, 5, dtype=dt, rng=r),), {"mode": "economic"}, ()),
    (sl.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"mode": "r"}, ()),
    (sl.qr, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {"pivoting": True}, ()),
    (sl.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, 5, dt)), {}, ()),
    (sl.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, (5, 2), dt)), {}, ()),
    (sl.pinv, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"return_rank": True}, ()),
    (sl.polar, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (sl.polar, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r), "left"), {}, ()),
    (sl.polar, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {}, (1,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f, make, kwargs, skip", STRUCTURED, ids=_name)
def test_structured_cotangents_row_by_row(f, make, kwargs, skip, dtype):
    args = make(rng_for("sp-batched-structured", f.__name__, str(kwargs), skip, dtype), dtype)
    check_rows(f, *args, kwargs=kwargs, skip=skip, rtol=rtol_for(dtype))


def test_lu_solve_solves_the_batch_with_the_factors_once(monkeypatch):
    """The rows of a batch go to LAPACK side by side: one ``lu_solve`` call for all of them."""
    rng = rng_for("lu_solve-once")
    lu_and_piv, b = sl.lu_factor(wellcond(4, rng=rng)), rng.standard_normal(4)
    x, back = cr.rrule(sl.lu_solve, lu_and_piv, b)
    calls = []
    original = sl.lu_solve
    monkeypatch.setattr(sl, "lu_solve", lambda *a, **k: calls.append(np.shape(a[1])) or original(*a, **k))
    back(np.eye(4))
    assert calls == [(4, 4)]


# ----- batched pushforwards ---------------------------------------------------------------------

FORWARD = [
    (sl.eig, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (sl.eigvals, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (sl.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (sl.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (sl.qr, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {"pivoting": True, "mode": "economic"}),
    (sl.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, (5, 2), dt)), {}),
    (sl.pinv, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (sl.pinvh, lambda r, dt: (hermitian(3, dt, r),), {"return_rank": True}),
    (sl.lu_solve, lambda r, dt: _lu_and_b(r, dt, False), {}),
    (sl.lu_solve, lambda r, dt: _lu_and_b(r, dt, True), {"trans": 2}),
    (sl.cho_solve, lambda r, dt: (sl.cho_factor(spd(3, dt, r)), rand(r, (3, 2), dt)), {}),
    (sl.cho_solve, lambda r, dt: (sl.cho_factor(spd(3, dt, r), lower=True), rand(r, 3, dt)), {}),
    (sl.polar, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (sl.polar, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r), "left"), {}),
    (sl.sqrtm, lambda r, dt: (spd(3, dt, r),), {}),
    (sl.sqrtm, lambda r, dt: (np.stack([spd(3, dt, r), spd(3, dt, r)]),), {}),
    (sl.logm, lambda r, dt: (spd(3, dt, r),), {}),
    (sl.logm, lambda r, dt: (np.stack([spd(3, dt, r), spd(3, dt, r)]),), {}),
    (sl.expm, lambda r, dt: (np.stack([0.1 * rand(r, (3, 3), dt), 3 * rand(r, (3, 3), dt)]),), {}),
    (sl.solve_sylvester, lambda r, dt: (_stable(3, dt, r), _stable(2, dt, r), rand(r, (3, 2), dt)), {}),
    (sl.solve_continuous_lyapunov, lambda r, dt: (_stable(3, dt, r), rand(r, (3, 3), dt)), {}),
    (sl.solve_discrete_lyapunov, lambda r, dt: (0.3 * wellcond(3, dtype=dt, rng=r), rand(r, (3, 3), dt)), {}),
    (sl.solve_banded, lambda r, dt: ((1, 2), band(r, dt, 1, 2), rand(r, 5, dt)), {}),
    (sl.solveh_banded, lambda r, dt: (hermitian_band(r, dt, 2, True), rand(r, (5, 2), dt)), {"lower": True}),
    (sl.hankel, lambda r, dt: (rand(r, 3, dt), rand(r, 4, dt)), {}),
    (sl.hankel, lambda r, dt: (rand(r, (2, 2), dt),), {}),
]


def _gets_tangent(a) -> bool:
    """Not a side (a string) nor a pair of band widths."""
    return not isinstance(a, str) and not (isinstance(a, tuple) and not isinstance(a[0], np.ndarray))


def _direction(rng, a, batch, dtype):
    """A tangent of the argument ``a``: a batch of them (``batch``), or a single one (``None``);
    a pair of factors gets one for its matrix."""
    lead = () if batch is None else (batch,)
    if not _gets_tangent(a):
        return cr.NoTangent()
    if isinstance(a, tuple):
        return cr.Tangent[tuple](rand(rng, (*lead, *np.shape(a[0])), dtype), cr.NoTangent())
    return rand(rng, (*lead, *np.shape(a)), dtype)


def _direction_row(d, k, batched: bool):
    if not batched or isinstance(d, cr.AbstractZero):
        return d
    if isinstance(d, cr.Tangent):
        return cr.Tangent[tuple](d.backing[0][k], cr.NoTangent())
    return d[k]


def _differentiable(args) -> list[int]:
    return [i for i, a in enumerate(args) if _gets_tangent(a)]


# every tangent batched; where there are several, also the first a zero or a single tangent beside the batch
FORWARD_CASES = [
    (f, make, kwargs, first)
    for f, make, kwargs in FORWARD
    for first in ("batched", "zero", "single")
    if first == "batched" or len(_differentiable(make(np.random.default_rng(0), np.float64))) > 1
]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("f, make, kwargs, first", FORWARD_CASES, ids=_name)
def test_batched_frule_row_by_row(f, make, kwargs, first, dtype):
    rng = rng_for("sp-batched-frule", f.__name__, str(kwargs), dtype, first)
    args = make(rng, dtype)
    if dtype is np.complex128 and f is sl.solve_discrete_lyapunov:
        dtype = np.float64  # (a real equation: real directions)
    assert cr.frule.lookup(f, args).batched
    dirs = [_direction(rng, a, 3, dtype) for a in args]
    batched = [True] * len(args)
    if first != "batched":
        i = _differentiable(args)[0]
        dirs[i] = cr.ZeroTangent() if first == "zero" else _direction(rng, args[i], None, dtype)
        batched[i] = False
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args, **kwargs)
    for k in range(3):
        row = [_direction_row(d, k, b) for d, b in zip(dirs, batched)]
        y1, dy1 = cr.frule((cr.NoTangent(), *row), f, *args, **kwargs)
        for got, want in zip(values(dy, y1), values(dy1, y1)):
            got = got[k] if got.ndim == want.ndim + 1 else got
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
