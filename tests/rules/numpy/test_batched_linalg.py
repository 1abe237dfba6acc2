"""``numpy.linalg`` rules whose pullbacks take a batch of cotangents (a leading batch axis), checked
against the same pullback called row by row: real, complex and float32, single matrices and
stacks, array outputs and tuple outputs; and the batched pushforwards of eig, eigvals, svd, qr,
lstsq, tensorsolve and tensorinv against row-by-row calls."""

import numpy as np
import pytest
from test_linalg import hermitian, rng_for, values, wellcond

import chainrules as cr
from chainrules.core import basis_seed, batch_declines
from chainrules.testing import nondiff

linalg = np.linalg
DTYPES = [np.float64, np.float32, np.complex128]


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def rtol_for(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def stack(make, k=2):
    return np.stack([make() for _ in range(k)])


# f, a maker of its arguments from (rng, dtype), keywords
ARRAY_OUT = [
    (linalg.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, (3, 2), dt)), {}),
    (linalg.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, 3, dt)), {}),
    (linalg.solve, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)), rand(r, 3, dt)), {}),
    (linalg.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), rand(r, (2, 3, 2), dt)), {}),  # a broadcast
    (linalg.tensorsolve, lambda r, dt: (rand(r, (2, 3, 6), dt) + 0, rand(r, (2, 3), dt)), {}),
    (linalg.tensorsolve, lambda r, dt: (rand(r, (2, 3, 3, 2), dt), rand(r, (3, 2), dt)), {"axes": (1, 0)}),
    (linalg.tensorinv, lambda r, dt: (np.reshape(wellcond(6, dtype=dt, rng=r), (2, 3, 6)),), {"ind": 2}),
    (linalg.inv, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.inv, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {}),
    (linalg.det, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.det, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {}),
    (linalg.cholesky, lambda r, dt: (hermitian(3, dt, r),), {}),
    (linalg.cholesky, lambda r, dt: (hermitian(3, dt, r),), {"upper": True}),
    (linalg.cholesky, lambda r, dt: (stack(lambda: hermitian(3, dt, r)),), {}),
    (linalg.eigvalsh, lambda r, dt: (hermitian(4, dt, r),), {}),
    (linalg.eigvalsh, lambda r, dt: (hermitian(3, dt, r), "U"), {}),
    (linalg.eigvalsh, lambda r, dt: (stack(lambda: hermitian(3, dt, r)),), {}),
    (linalg.eigvals, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.svdvals, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {}),
    (linalg.svdvals, lambda r, dt: (stack(lambda: wellcond(4, 3, dtype=dt, rng=r)),), {}),
    (linalg.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"compute_uv": False}),
    (linalg.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"mode": "r"}),
    (linalg.pinv, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (linalg.pinv, lambda r, dt: (hermitian(3, dt, r),), {"hermitian": True}),
    (linalg.pinv, lambda r, dt: (stack(lambda: wellcond(3, 2, dtype=dt, rng=r)),), {}),
    (linalg.matrix_power, lambda r, dt: (wellcond(3, dtype=dt, rng=r), 5), {}),
    (linalg.matrix_power, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)), -2), {}),
    (linalg.norm, lambda r, dt: (rand(r, (3, 4), dt),), {}),
    (linalg.norm, lambda r, dt: (rand(r, (3, 4), dt),), {"ord": "nuc"}),
    (linalg.norm, lambda r, dt: (rand(r, (2, 3, 4), dt),), {"ord": 2, "axis": (1, 2), "keepdims": True}),
    (linalg.norm, lambda r, dt: (rand(r, (3, 4), dt),), {"ord": 3, "axis": 1}),
    (linalg.vector_norm, lambda r, dt: (rand(r, (3, 4), dt),), {"axis": 0}),
    (linalg.matrix_norm, lambda r, dt: (rand(r, (2, 3, 4), dt),), {"ord": 1}),
    (linalg.cond, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.cond, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {"p": "fro"}),
    (linalg.trace, lambda r, dt: (rand(r, (2, 3, 3), dt),), {}),
    (linalg.trace, lambda r, dt: (rand(r, (3, 4), dt),), {"offset": 1}),
]


def _name(v):
    return getattr(v, "__name__", None) or str(v)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f, make, kwargs", ARRAY_OUT, ids=_name)
def test_array_outputs_row_by_row(f, make, kwargs, dtype, batched_pullback):
    args = make(rng_for("batched-pullback", f.__name__, str(kwargs), dtype), dtype)
    batched_pullback(f, *args, kwargs=kwargs, rtol=rtol_for(dtype))


# ----- tuple outputs: a structured cotangent whose components carry the batch ---------------------


def _batch_of_cotangents(y, batch, rng, skip=()):
    """Row ``k`` of a batch of cotangents of ``y``, for ``k`` or ``None`` (the whole batch): an
    array, or a ``Tangent`` of the tuple ``y`` whose components carry the batch (``NoTangent`` for
    integers and booleans, a ``ZeroTangent`` beside the batch at the positions in ``skip``)."""

    def one(v, i):
        if i in skip:
            return cr.ZeroTangent()
        if np.result_type(v).kind not in "fc":
            return cr.NoTangent()
        return rand(rng, (batch, *np.shape(v)), np.result_type(v))

    if not isinstance(y, tuple):
        dys = one(y, 0)
        return lambda k: dys if k is None else dys[k]
    parts = [one(v, i) for i, v in enumerate(y)]
    return lambda k: cr.Tangent[type(y)](*(p if k is None or isinstance(p, cr.AbstractZero) else p[k] for p in parts))


def _compare(got, want, k, what, rtol):
    got, want = cr.unthunk(got), cr.unthunk(want)
    if isinstance(want, cr.AbstractZero):
        assert type(got) is type(want), f"{what}: {got!r} for {want!r}"
        return
    if isinstance(want, cr.Tangent):
        assert isinstance(got, cr.Tangent), what
        for g, w in zip(got.backing, want.backing):
            _compare(g, w, k, what, rtol)
        return
    got = np.asarray(got)
    assert got.shape[1:] == np.shape(want) and got.dtype == np.asarray(want).dtype, what
    np.testing.assert_allclose(got[k], want, rtol=rtol, atol=1e-12 if rtol < 1e-6 else 1e-5, err_msg=what)


def check_rows(f, *args, kwargs=None, skip=(), batch=3, rtol=1e-10, seed=0):
    """Pull back a batch of cotangents of ``f``'s output (of each component of a tuple output) at
    once and one row at a time; ``skip``: components that get no cotangent."""
    kwargs = kwargs or {}
    assert cr.rrule.lookup(f, args).batched
    declines = batch_declines()
    y, back = cr.rrule(f, *args, **kwargs)
    assert batch_declines() == declines
    row = _batch_of_cotangents(y, batch, np.random.default_rng(seed), skip)
    batched = back(row(None))
    for k in range(batch):
        one = back(row(k))
        assert len(one) == len(batched)
        for i, (got, want) in enumerate(zip(batched, one)):
            _compare(got, want, k, f"{f.__name__}: cotangent {i}, row {k}", rtol)


TUPLE_OUT = [
    (linalg.slogdet, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (linalg.slogdet, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {}, ()),
    (linalg.eigh, lambda r, dt: (hermitian(4, dt, r),), {}, ()),
    (linalg.eigh, lambda r, dt: (hermitian(3, dt, r),), {"UPLO": "U"}, (1,)),  # eigenvalues only
    (linalg.eigh, lambda r, dt: (stack(lambda: hermitian(3, dt, r)),), {}, ()),
    (linalg.eig, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}, ()),
    (linalg.eig, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {}, (0,)),
    (linalg.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"full_matrices": False}, ()),
    (linalg.svd, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {}, ()),
    (linalg.svd, lambda r, dt: (hermitian(3, dt, r),), {"hermitian": True}, ()),
    (linalg.svd, lambda r, dt: (stack(lambda: wellcond(3, 2, dtype=dt, rng=r)),), {"full_matrices": False}, ()),
    (linalg.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}, ()),
    (linalg.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"mode": "complete"}, ()),
    (linalg.qr, lambda r, dt: (wellcond(3, 5, dtype=dt, rng=r),), {}, ()),
    (linalg.qr, lambda r, dt: (wellcond(3, 5, dtype=dt, rng=r),), {}, (1,)),
    (linalg.qr, lambda r, dt: (stack(lambda: wellcond(3, 2, dtype=dt, rng=r)),), {}, ()),
    (linalg.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, 5, dt)), {}, (2,)),
    (linalg.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, (5, 2), dt)), {}, (2,)),
    (linalg.lstsq, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r), rand(r, (3, 2), dt)), {}, (1, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f, make, kwargs, skip", TUPLE_OUT, ids=_name)
def test_tuple_outputs_row_by_row(f, make, kwargs, skip, dtype):
    args = make(rng_for("batched-tuple", f.__name__, str(kwargs), skip, dtype), dtype)
    check_rows(f, *args, kwargs=kwargs, skip=skip, rtol=rtol_for(dtype))


def test_multi_dot_row_by_row():
    rng = rng_for("multi_dot")
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    for arrays in ([a, b, c], (rng.standard_normal(3), b, rng.standard_normal((4, 2))), np.stack([b[:, :3]] * 3)):
        y, back = cr.rrule(linalg.multi_dot, arrays)
        dys = rng.standard_normal((3, *np.shape(y)))
        batched = cr.unthunk(back(dys)[1])
        for k in range(3):
            one = cr.unthunk(back(dys[k])[1])
            if isinstance(one, cr.Tangent):
                for got, want in zip(batched.backing, one.backing):
                    np.testing.assert_allclose(got[k], want, rtol=1e-12)
            else:
                np.testing.assert_allclose(batched[k], one, rtol=1e-12)


def test_multi_dot_declines_a_batch_for_lists_of_numbers():
    declines = batch_declines()
    cr.rrule(linalg.multi_dot, [[[1.0, 2.0]], np.ones((2, 2))])
    assert batch_declines() == declines + 1


def test_a_structured_seed_is_solved_with_the_primal_factors(monkeypatch):
    """A reverse Jacobian seeds with a ``BasisSeed`` (an ndarray subclass): it is solved as its
    values, with the primal's LU factors (no NumPy solve, which would factorize again)."""
    rng = rng_for("seed")
    a, b = wellcond(4, rng=rng), rng.standard_normal(4)
    x, back = cr.rrule(linalg.solve, a, b)
    seed = basis_seed(4, (4,), 0, np.float64)
    monkeypatch.setattr(np.linalg, "solve", None)
    _, da, db = back(seed)
    inverse = np.linalg.inv(a)  # row k: A^{-T} e_k
    np.testing.assert_allclose(db, inverse, rtol=1e-12)
    np.testing.assert_allclose(cr.unthunk(da), -inverse[:, :, None] * x, rtol=1e-12)


# ----- batched pushforwards ---------------------------------------------------------------------

FORWARD = [
    (linalg.eig, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.eig, lambda r, dt: (stack(lambda: wellcond(3, dtype=dt, rng=r)),), {}),
    (linalg.eigvals, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (linalg.svd, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (linalg.svd, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {"full_matrices": False}),
    (linalg.svd, lambda r, dt: (stack(lambda: wellcond(3, 2, dtype=dt, rng=r)),), {"compute_uv": False}),
    (linalg.qr, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {"mode": "complete"}),
    (linalg.qr, lambda r, dt: (wellcond(3, 5, dtype=dt, rng=r),), {}),
    (linalg.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, 5, dt)), {}),
    (linalg.lstsq, lambda r, dt: (wellcond(5, 3, dtype=dt, rng=r), rand(r, (5, 2), dt)), {}),
    (linalg.tensorsolve, lambda r, dt: (rand(r, (2, 3, 6), dt), rand(r, (2, 3), dt)), {}),
    (linalg.tensorsolve, lambda r, dt: (rand(r, (2, 3, 3, 2), dt), rand(r, (3, 2), dt)), {"axes": (1, 0)}),
    (linalg.tensorinv, lambda r, dt: (np.reshape(wellcond(6, dtype=dt, rng=r), (6, 2, 3)),), {"ind": 1}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("zero_first", [False, True])
@pytest.mark.parametrize("f, make, kwargs", FORWARD, ids=_name)
def test_batched_frule_row_by_row(f, make, kwargs, dtype, zero_first):
    rng = rng_for("batched-frule", f.__name__, str(kwargs), dtype, zero_first)
    args = make(rng, dtype)
    assert cr.frule.lookup(f, args).batched
    batch = 3
    dirs = [rand(rng, (batch, *np.shape(a)), dtype) for a in args]
    if zero_first and len(args) > 1:
        dirs[0] = cr.ZeroTangent()  # a zero tangent beside a batched one
    elif zero_first:
        dirs[0] = rand(rng, np.shape(args[0]), dtype)[None].repeat(batch, 0)  # the same direction in every row
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args, **kwargs)
    for k in range(batch):
        row = [d if isinstance(d, cr.AbstractZero) else d[k] for d in dirs]
        y1, dy1 = cr.frule((cr.NoTangent(), *row), f, *args, **kwargs)
        for got, want in zip(values(dy, y1), values(dy1, y1)):
            got = got[k] if got.ndim == want.ndim + 1 else got
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_matrix_power_exponent_gets_no_cotangent_in_a_batch():
    a = wellcond(3, rng=rng_for("power"))
    y, back = cr.rrule(linalg.matrix_power, a, nondiff(3).value)
    assert back(np.ones((2, 3, 3)))[2] == cr.NoTangent()
    assert cr.rrule(linalg.matrix_power, a, 0)[1](np.ones((2, 3, 3)))[1] == cr.ZeroTangent()
