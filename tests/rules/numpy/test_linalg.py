"""Rules for ``numpy.linalg``: finite differences in float64, float32 and complex128, batched
pushforwards against row-by-row calls, stacks and other array types, and the documented
behaviour at repeated eigenvalues and singular matrices."""

import inspect
import warnings
import zlib
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg

import chainrules as cr
from chainrules.testing import fd_jacobian, fd_vjp, nondiff, test_frule, test_rrule

REAL = [np.float64, np.float32]
ALL = [np.float64, np.float32, np.complex128]


def rng_for(*key):
    """A generator seeded by the test's own key, the same in every process."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def orthogonal(n, dtype, rng):
    z = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        z = z + 1j * rng.standard_normal((n, n))
    return np.linalg.qr(z)[0]


def wellcond(m, n=None, dtype=np.float64, rng=None):
    """A random matrix with singular values spread over [1, 2]."""
    n = m if n is None else n
    rng = rng or np.random.default_rng(0)
    k = min(m, n)
    u, v = orthogonal(m, dtype, rng)[:, :k], orthogonal(n, dtype, rng)[:k]
    return ((u * np.linspace(1, 2, k)) @ v).astype(dtype)


def hermitian(n, dtype=np.float64, rng=None, spectrum=None):
    """A Hermitian matrix with well separated eigenvalues 1..n (or the given ones)."""
    rng = rng or np.random.default_rng(1)
    q = orthogonal(n, dtype, rng)
    w = np.arange(1.0, n + 1) if spectrum is None else np.asarray(spectrum, dtype=float)
    a = (q * w) @ q.conj().T
    return ((a + a.conj().T) / 2).astype(dtype)


def values(t, y):
    """A tangent as a list of arrays (zeros filled in), for comparisons."""
    t = cr.unthunk(t)
    if isinstance(t, cr.Tangent):
        items = t.backing if isinstance(t.backing, tuple) else [t.backing.get(k, cr.ZeroTangent()) for k in y._fields]
        return [np.zeros(np.shape(p)) if isinstance(v, cr.AbstractZero) else np.asarray(v) for v, p in zip(items, y)]
    if isinstance(t, cr.AbstractZero):
        return [np.zeros(np.shape(p)) for p in y] if isinstance(y, tuple) else [np.zeros(np.shape(y))]
    return [np.asarray(t)]


def inner(a, b):
    return sum(float(np.real(np.vdot(x, y))) for x, y in zip(a, b))


# ----- finite differences ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("vector", [False, True])
def test_solve(dtype, vector):
    rng = rng_for("solve", dtype, vector)
    a, b = wellcond(3, dtype=dtype, rng=rng), rng.standard_normal((3,) if vector else (3, 2)).astype(dtype)
    test_rrule(np.linalg.solve, a, b)
    test_frule(np.linalg.solve, a, b)


# a's and b's stacks broadcast against each other (found by fuzzing): the batched pushforward had
# broadcast a batch axis in front of one operand's stack against the other's stack axes
SOLVE_BROADCASTS = {
    "matrix a, stacked b": ((3, 3), (2, 3, 1)),
    "stacked a, matrix b": ((2, 3, 3), (3, 2)),
    "stacked a, matrix b (fuzz)": ((3, 2, 2), (2, 1)),
    "stacked a, square b (fuzz)": ((2, 2, 2), (2, 2)),
    "stacks broadcast": ((2, 1, 3, 3), (4, 3, 2)),
}


def _flat_jacobian(jacobian, args):
    """A Jacobian with respect to a tuple of arrays as one (outputs, inputs) matrix, as ``fd_jacobian``'s."""
    return np.concatenate([np.reshape(j, (-1, np.size(x))) for j, x in zip(jacobian, args)], axis=1)


@pytest.mark.parametrize("a_shape, b_shape", SOLVE_BROADCASTS.values(), ids=SOLVE_BROADCASTS.keys())
def test_solve_with_broadcasting_stacks(a_shape, b_shape):
    rng = rng_for("solve broadcast", a_shape, b_shape)
    a = rng.standard_normal(a_shape) + 3 * np.eye(a_shape[-1])
    b = rng.standard_normal(b_shape)
    test_rrule(np.linalg.solve, a, b)
    test_frule(np.linalg.solve, a, b)

    def both(p):
        return np.linalg.solve(p[0], np.sin(p[1]))

    def of_a(a):
        return np.linalg.solve(a, b)

    def loss(a):
        return np.sum(np.linalg.solve(a, b) ** 2)

    want_both, want_a = cr.testing.fd_jacobian(both, (a, b)), cr.testing.fd_jacobian(of_a, a)
    tol = {"rtol": 1e-6, "atol": 1e-8}
    np.testing.assert_allclose(_flat_jacobian(cr.jacobian(both, (a, b), mode="forward"), (a, b)), want_both, **tol)
    np.testing.assert_allclose(np.reshape(cr.jacobian(of_a, a, mode="forward"), want_a.shape), want_a, **tol)
    for engine in ("source", "tape"):
        np.testing.assert_allclose(_flat_jacobian(cr.jacobian(both, (a, b), engine=engine), (a, b)), want_both, **tol)
        grad = cr.gradient(loss, a, engine=engine)[0]
        np.testing.assert_allclose(grad.ravel(), cr.testing.fd_jacobian(loss, a).ravel(), **tol)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "a_shape, b_shape, axes", [((2, 3, 6), (2, 3), None), ((2, 3, 2, 3), (2, 3), None), ((2, 3, 3, 2), (3, 2), (1, 0))]
)
def test_tensorsolve(dtype, a_shape, b_shape, axes):
    rng = rng_for("tensorsolve", dtype, a_shape, axes)
    a = np.reshape(wellcond(6, dtype=dtype, rng=rng), a_shape)
    b = rng.standard_normal(b_shape).astype(dtype)
    x = cr.rrule(np.linalg.tensorsolve, a, b, axes=axes)[0]
    expected = np.linalg.tensorsolve(a, b, axes=axes)
    assert x.shape == expected.shape and x.dtype == expected.dtype
    test_rrule(np.linalg.tensorsolve, a, b, fkwargs={"axes": axes})
    test_frule(np.linalg.tensorsolve, a, b, fkwargs={"axes": axes})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape, ind", [((2, 3, 6), 2), ((6, 2, 3), 1), ((2, 3, 3, 2), 2)])
def test_tensorinv(dtype, shape, ind):
    a = np.reshape(wellcond(6, dtype=dtype, rng=rng_for("tensorinv", dtype, shape)), shape)
    y = cr.rrule(np.linalg.tensorinv, a, ind=ind)[0]
    assert y.shape == np.linalg.tensorinv(a, ind=ind).shape
    test_rrule(np.linalg.tensorinv, a, fkwargs={"ind": ind})
    test_frule(np.linalg.tensorinv, a, fkwargs={"ind": ind})


def test_tensorsolve_and_tensorinv_in_every_engine_to_second_order():
    from chainrules.testing import check_grads

    rng = rng_for("tensor-engines")
    a = np.reshape(wellcond(6, rng=rng), (2, 3, 2, 3))
    for f, args in ((np.linalg.tensorsolve, (a, rng.standard_normal((2, 3)))), (np.linalg.tensorinv, (a,))):
        assert len(check_grads(f, args, order=2)) == 6  # reverse[source], reverse[tape], forward; orders 1, 2
    with pytest.raises(np.linalg.LinAlgError, match="prod"):
        cr.rrule(np.linalg.tensorsolve, np.ones((2, 3, 4)), np.ones((2, 3)))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("f", [np.linalg.inv, np.linalg.det, np.linalg.slogdet, np.linalg.svdvals, np.linalg.eigvals])
def test_square_functions(f, dtype):
    a = wellcond(3, dtype=dtype, rng=rng_for(f.__name__, dtype))
    test_rrule(f, a)
    test_frule(f, a)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle(dtype, upper):
    rng = rng_for("cholesky", dtype, upper)
    a = hermitian(3, dtype, rng)
    # garbage in the triangle cholesky does not read: the cotangent there must be zero
    junk = rng.standard_normal((3, 3)).astype(dtype)
    a = a + (np.tril(junk, -1) if upper else np.triu(junk, 1))
    test_rrule(np.linalg.cholesky, a, fkwargs={"upper": upper})
    test_frule(np.linalg.cholesky, a, fkwargs={"upper": upper})
    _, back = cr.rrule(np.linalg.cholesky, a, upper=upper)
    da = back(rng.standard_normal((3, 3)).astype(dtype))[1]
    assert not np.any(np.tril(da, -1) if upper else np.triu(da, 1))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh(dtype, uplo):
    a = hermitian(4, dtype, rng_for("eigvalsh", dtype, uplo))
    test_rrule(np.linalg.eigvalsh, a, fkwargs={"UPLO": uplo})
    test_frule(np.linalg.eigvalsh, a, fkwargs={"UPLO": uplo})


def gauge_free(vectors, cotangent, axis=-2):
    """Remove from each eigenvector (singular vector) cotangent its component along the vector."""
    if axis == -2:
        return cotangent - vectors * np.sum(np.conj(vectors) * cotangent, axis=-2, keepdims=True)
    return cotangent - vectors * np.sum(np.conj(vectors) * cotangent, axis=-1, keepdims=True)


def projected(f, vector_outputs, weights):
    """``f`` followed by ``X diag(c) X^H`` for each matrix of vectors ``X`` among its outputs,
    with rules composed from ``f``'s: smooth and blind to LAPACK's signs and phases, so finite
    differences check the eigenvector (singular vector) cotangents of ``f``'s rules.

    ``vector_outputs`` maps an output index to ``"columns"`` (U, V) or ``"rows"`` (Vh)."""

    def project(x, how, c):
        return (x * c) @ x.conj().T if how == "columns" else (x.conj().T * c) @ x

    def g(*args, **kwargs):
        out = f(*args, **kwargs)
        return tuple(project(o, vector_outputs[i], weights[i]) if i in vector_outputs else o for i, o in enumerate(out))

    def g_rrule(*args, **kwargs):
        out, back = cr.rrule(f, *args, **kwargs)

        def g_pullback(dy):
            dy = cr.unthunk(dy)
            if isinstance(dy, cr.AbstractZero):
                return back(dy)
            parts = list(dy.backing if isinstance(dy, cr.Tangent) else dy)
            for i, how in vector_outputs.items():
                d = cr.unthunk(parts[i])
                if isinstance(d, cr.AbstractZero):
                    continue
                sym = d + d.conj().T
                parts[i] = sym @ (out[i] * weights[i]) if how == "columns" else (weights[i][:, None] * out[i]) @ sym
            return back(type(out)(*parts) if hasattr(out, "_fields") else tuple(parts))

        return g(*args, **kwargs), g_pullback

    def g_frule(tangents, *args, **kwargs):
        out, dout = cr.frule(tangents, f, *args, **kwargs)
        if isinstance(cr.unthunk(dout), cr.AbstractZero):
            return g(*args, **kwargs), dout
        items = values(dout, out)
        res = []
        for i, o in enumerate(out):
            if i not in vector_outputs:
                res.append(items[i])
                continue
            x, dx, c = o, items[i], weights[i]
            if vector_outputs[i] == "columns":
                t = (dx * c) @ x.conj().T
            else:
                t = (dx.conj().T * c) @ x
            res.append(t + t.conj().T)
        return g(*args, **kwargs), cr.Tangent[tuple](*res)

    g.__name__ = f"projected_{f.__name__}"
    cr.rrule.register(g)(g_rrule)
    cr.frule.register(g)(g_frule)
    return g


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo):
    rng = rng_for("eigh", dtype, uplo)
    a = hermitian(4, dtype, rng)
    g = projected(np.linalg.eigh, {1: "columns"}, {1: rng.standard_normal(4)})
    test_rrule(g, a, fkwargs={"UPLO": uplo})
    test_frule(g, a, fkwargs={"UPLO": uplo})
    # eigenvalues only: no gaps are formed
    seed = cr.Tangent[type(np.linalg.eigh(a))](rng.standard_normal(4), cr.ZeroTangent())
    test_rrule(np.linalg.eigh, a, output_tangent=seed, fkwargs={"UPLO": uplo})


def check_frule_against_rrule(f, a, seed, rng, **kwargs):
    """<seed, J da> from the frule equals <J^T seed, da> from the rrule."""
    da = rng.standard_normal(a.shape).astype(a.dtype)
    if np.iscomplexobj(a):
        da = da + 1j * rng.standard_normal(a.shape)
    y, dy = cr.frule((cr.NoTangent(), da), f, a, **kwargs)
    _, back = cr.rrule(f, a, **kwargs)
    lhs = inner(values(seed, y), values(dy, y))
    rhs = inner([back(seed)[1]], [da])
    assert np.isclose(lhs, rhs, rtol=1e-4 if np.dtype(a.dtype) in (np.float32, np.complex64) else 1e-10)


def spectral(f, weights):
    """``f`` (a general eigendecomposition) followed by ``V diag(c) V^{-1}``, which no scaling of
    the eigenvectors changes, with rules composed from ``f``'s."""

    def g(*args, **kwargs):
        w, v = f(*args, **kwargs)
        return w, (v * weights) @ np.linalg.inv(v)

    def g_rrule(*args, **kwargs):
        (w, v), back = cr.rrule(f, *args, **kwargs)
        inv = np.linalg.inv(v)
        y = (v * weights) @ inv

        def g_pullback(dy):
            dy = cr.unthunk(dy)
            if isinstance(dy, cr.AbstractZero):
                return back(dy)
            dw, dy_ = (cr.unthunk(t) for t in dy)
            # Y = V C V^{-1}: dY = dV C W - Y dV W with W = V^{-1}
            dv = (dy_ @ inv.conj().T) * weights - y.conj().T @ dy_ @ inv.conj().T
            return back((dw, dv))

        return (w, y), g_pullback

    def g_frule(tangents, *args, **kwargs):
        out, dout = cr.frule(tangents, f, *args, **kwargs)
        w, v = out
        dw, dv = values(dout, out)
        inv = np.linalg.inv(v)
        y = (v * weights) @ inv
        return (w, y), cr.Tangent[tuple](dw, (dv * weights) @ inv - y @ dv @ inv)

    g.__name__ = f"spectral_{f.__name__}"
    cr.rrule.register(g)(g_rrule)
    cr.frule.register(g)(g_frule)
    return g


@pytest.mark.parametrize("dtype", ALL)
def test_eig(dtype):
    rng = rng_for("eig", dtype)
    a = wellcond(3, dtype=dtype, rng=rng) + np.diag([0.0, 1.0, 2.0]).astype(dtype)
    g = spectral(np.linalg.eig, rng.standard_normal(3))
    test_rrule(g, a)
    test_frule(g, a)
    if dtype is not np.float32:  # LAPACK's normalization, checked where its signs stay put
        test_rrule(np.linalg.eig, a)
        test_frule(np.linalg.eig, a)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(dtype, shape, full_matrices):
    rng = rng_for("svd", dtype, shape, full_matrices)
    a = wellcond(*shape, dtype=dtype, rng=rng)
    k = min(shape)
    if full_matrices:  # the completion of U or V is defined up to a rotation: weight it zero
        weights = {
            0: np.r_[rng.standard_normal(k), np.zeros(shape[0] - k)],
            2: np.r_[rng.standard_normal(k), np.zeros(shape[1] - k)],
        }
    else:
        weights = {0: rng.standard_normal(k), 2: rng.standard_normal(k)}
    g = projected(np.linalg.svd, {0: "columns", 2: "rows"}, weights)
    test_rrule(g, a, fkwargs={"full_matrices": full_matrices})
    test_frule(g, a, fkwargs={"full_matrices": full_matrices})
    test_rrule(np.linalg.svd, a, fkwargs={"compute_uv": False})
    test_frule(np.linalg.svd, a, fkwargs={"compute_uv": False})


def test_svd_full_matrices_complement_moves_with_the_first_columns():
    # U_perp U_perp^H = I - U_k U_k^H is a smooth function of a; its derivative uses the extra columns
    rng = rng_for("svd-complement")
    a = wellcond(4, 2, rng=rng)
    c = rng.standard_normal((4, 4))

    def loss(x):
        u = np.linalg.svd(x)[0]
        return np.sum(c * (u[:, 2:] @ u[:, 2:].T))

    u, s, vh = np.linalg.svd(a)
    du = np.zeros_like(u)
    du[:, 2:] = (c + c.T) @ u[:, 2:]
    _, back = cr.rrule(np.linalg.svd, a)
    grad = back(cr.Tangent[type(np.linalg.svd(a))](du, cr.ZeroTangent(), cr.ZeroTangent()))[1]
    e = rng.standard_normal(a.shape)
    fd = (loss(a + 1e-6 * e) - loss(a - 1e-6 * e)) / 2e-6
    assert np.isclose(np.sum(grad * e), fd, rtol=1e-6)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    rng = rng_for("qr", dtype, shape, mode)
    a = wellcond(*shape, dtype=dtype, rng=rng)
    if mode == "complete" and shape[0] > shape[1]:
        q, r = np.linalg.qr(a, mode="complete")
        dq = rng.standard_normal(q.shape).astype(dtype)
        dq[:, shape[1] :] = 0  # the completion of Q is defined up to a rotation
        seed = cr.Tangent[type(np.linalg.qr(a))](dq, rng.standard_normal(r.shape).astype(dtype))
        test_rrule(np.linalg.qr, a, output_tangent=seed, fkwargs={"mode": mode})
        check_frule_against_rrule(np.linalg.qr, a, seed, rng, mode=mode)
        return
    test_rrule(np.linalg.qr, a, fkwargs={"mode": mode})
    test_frule(np.linalg.qr, a, fkwargs={"mode": mode})


def test_qr_raw_mode_is_refused():
    # a mode NumPy takes but the rule does not differentiate is the rule's refusal, at the user's line;
    # an unknown one is NumPy's ValueError
    with pytest.raises(cr.NoRuleError, match=r"numpy\.linalg\.qr.* at .*test_linalg\.py:\d+ \(mode='raw' has no"):
        cr.gradient(lambda a: np.sum(np.linalg.qr(a, mode="raw")[0]), np.eye(3))
    with pytest.raises(ValueError, match="Unrecognized mode 'bad'"):
        cr.rrule(np.linalg.qr, np.eye(3), mode="bad")


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_pinv(dtype, shape):
    a = wellcond(*shape, dtype=dtype, rng=rng_for("pinv", dtype, shape))
    test_rrule(np.linalg.pinv, a)
    test_frule(np.linalg.pinv, a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_pinv_hermitian_reads_the_lower_triangle(dtype):
    a = hermitian(3, dtype, rng_for("pinv-h", dtype), spectrum=[-1.0, 1.5, 2.0])
    test_rrule(np.linalg.pinv, a, fkwargs={"hermitian": True})
    test_frule(np.linalg.pinv, a, fkwargs={"hermitian": True})


def test_pinv_of_a_rank_deficient_matrix_at_constant_rank():
    rng = rng_for("pinv-rank")
    a = rng.standard_normal((4, 2)) @ rng.standard_normal((2, 3))  # rank 2
    # perturbations that keep the rank: a -> a + U dX + dY V^T stays rank 2 to first order only,
    # so check along the manifold with the pullback applied to the projected direction
    u, s, vh = np.linalg.svd(a)
    direction = u[:, :2] @ rng.standard_normal((2, 2)) @ vh[:2]  # stays in the rank-2 set
    y, back = cr.rrule(np.linalg.pinv, a)
    seed = rng.standard_normal(y.shape)
    fd = (
        np.sum(seed * np.linalg.pinv(a + 1e-6 * direction)) - np.sum(seed * np.linalg.pinv(a - 1e-6 * direction))
    ) / 2e-6
    assert np.isclose(np.sum(back(seed)[1] * direction), fd, rtol=1e-6)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("vector", [False, True])
def test_lstsq(dtype, shape, vector):
    rng = rng_for("lstsq", dtype, shape, vector)
    a = wellcond(*shape, dtype=dtype, rng=rng)
    b = rng.standard_normal((shape[0],) if vector else (shape[0], 2)).astype(dtype)
    test_rrule(np.linalg.lstsq, a, b)
    test_frule(np.linalg.lstsq, a, b)


def test_lstsq_outputs_match_numpy():
    rng = rng_for("lstsq-values")
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    ours = cr.rrule(np.linalg.lstsq, a, b)[0]
    theirs = np.linalg.lstsq(a, b)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-12)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 6, 13, -1, -3])
def test_matrix_power(dtype, n):
    a = 0.7 * wellcond(3, dtype=dtype, rng=rng_for("power", dtype, n))
    test_rrule(np.linalg.matrix_power, a, nondiff(n))
    test_frule(np.linalg.matrix_power, a, nondiff(n))
    np.testing.assert_array_equal(cr.rrule(np.linalg.matrix_power, a, n)[0], np.linalg.matrix_power(a, n))


@pytest.mark.parametrize("n", [3, -2])
def test_matrix_power_of_a_nested_list(n):
    a = [[2.3, 1.2], [-0.7, 1.5]]  # as NumPy takes it: the array of it
    test_rrule(np.linalg.matrix_power, a, nondiff(n))
    test_frule(np.linalg.matrix_power, a, nondiff(n))

    def f(x):
        return np.sum(np.linalg.matrix_power([[x[0], x[1]], [x[2], 1.5]], n))

    x = np.array([2.3, 1.2, -0.7])
    np.testing.assert_allclose(cr.gradient(f, x)[0], fd_jacobian(f, x)[0], rtol=1e-6)


VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 3, 0.5, -2]
MATRIX_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", VECTOR_ORDS)
def test_vector_norms(dtype, order):
    rng = rng_for("vnorm", dtype, order)
    v = rng.standard_normal(5).astype(dtype)
    x = rng.standard_normal((3, 4)).astype(dtype)
    test_rrule(np.linalg.norm, v, fkwargs={"ord": order})
    test_frule(np.linalg.norm, v, fkwargs={"ord": order})
    test_rrule(np.linalg.norm, x, fkwargs={"ord": order, "axis": 1, "keepdims": True})
    test_frule(np.linalg.norm, x, fkwargs={"ord": order, "axis": 0})
    test_rrule(np.linalg.vector_norm, x, fkwargs={"ord": 2 if order is None else order, "axis": (0, 1)})
    test_frule(np.linalg.vector_norm, x, fkwargs={"ord": 2 if order is None else order, "axis": -1, "keepdims": True})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", MATRIX_ORDS)
def test_matrix_norms(dtype, order):
    rng = rng_for("mnorm", dtype, order)
    x = rng.standard_normal((3, 4)).astype(dtype)
    x3 = rng.standard_normal((2, 3, 4)).astype(dtype)
    test_rrule(np.linalg.norm, x, fkwargs={"ord": order})
    test_frule(np.linalg.norm, x, fkwargs={"ord": order})
    test_rrule(np.linalg.norm, x3, fkwargs={"ord": order, "axis": (2, 0), "keepdims": True})
    test_rrule(np.linalg.matrix_norm, x3, fkwargs={"ord": "fro" if order is None else order})
    test_frule(np.linalg.matrix_norm, x3, fkwargs={"ord": "fro" if order is None else order, "keepdims": True})


def test_norm_of_everything_and_at_zero():
    x = rng_for("norm-all").standard_normal((2, 3, 4))
    test_rrule(np.linalg.norm, x)
    test_frule(np.linalg.norm, x)
    # at zero the 2-norm has no derivative: the rules give the zero subgradient, never NaN
    _, back = cr.rrule(np.linalg.norm, np.zeros(3))
    np.testing.assert_array_equal(back(1.0)[1], np.zeros(3))


def test_norm_ties_share_the_derivative():
    _, back = cr.rrule(np.linalg.norm, np.array([3.0, -3.0, 1.0]), np.inf)
    np.testing.assert_array_equal(back(1.0)[1], [0.5, -0.5, 0.0])


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("order", [3.0, 0.5, -2.0, 2.0, 1.0])
def test_vector_norms_in_their_order(dtype, order):
    """A p-norm given its p by position, as the engines pass one being differentiated, is
    differentiated in p: (1/p) y (sum |x|^p log|x| / sum |x|^p - log(sum |x|^p) / p); the rules had
    given it no derivative."""
    rng = rng_for("pnorm", dtype, order)
    v = rng.standard_normal(5).astype(dtype)
    x = rng.standard_normal((3, 4)).astype(dtype)
    for f in (np.linalg.norm, scipy.linalg.norm):
        test_rrule(f, v, order)
        test_frule(f, v, order)
    test_rrule(np.linalg.norm, x, order, nondiff(1), nondiff(True))
    test_frule(np.linalg.norm, x, order, nondiff(0))


def test_norm_orders_being_differentiated_through_the_engines():
    def f(x):
        rows = np.linalg.norm(np.outer(x, x[:2]) + 0.1, ord=1.5 + x[1] ** 2, axis=0)
        return np.linalg.norm(x, 2.5 + x[0] ** 2) + rows @ np.arange(1.0, 3.0) + np.linalg.norm(x, ord=np.inf * x[2])

    x = np.array([0.3, 1.7, 0.4, -0.9])
    expected = fd_jacobian(f, x)[0]
    for engine in ("source", "tape"):
        np.testing.assert_allclose(cr.gradient(f, x, engine=engine)[0], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jacobian(f, x, mode="forward"), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond(dtype, p):
    a = wellcond(3, dtype=dtype, rng=rng_for("cond", dtype, p)) + np.diag([0.0, 0.3, 0.6]).astype(dtype)
    test_rrule(np.linalg.cond, a, fkwargs={"p": p})
    test_frule(np.linalg.cond, a, fkwargs={"p": p})


@pytest.mark.parametrize("dtype", ALL)
def test_trace(dtype):
    x = rng_for("trace", dtype).standard_normal((2, 3, 4)).astype(dtype)
    test_rrule(np.linalg.trace, x, fkwargs={"offset": 1})
    test_frule(np.linalg.trace, x, fkwargs={"offset": -1})


def test_matrix_rank_is_not_differentiable():
    y, back = cr.rrule(np.linalg.matrix_rank, np.eye(3))
    assert y == 3 and back(1.0) == (cr.NoTangent(), cr.NoTangent())


# ----- batched pushforwards -------------------------------------------------------------------

BATCHED = [
    (np.linalg.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), r.standard_normal((3, 2)).astype(dt)), {}),
    (np.linalg.solve, lambda r, dt: (wellcond(3, dtype=dt, rng=r), r.standard_normal(3).astype(dt)), {}),
    (np.linalg.inv, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (np.linalg.det, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (np.linalg.slogdet, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (np.linalg.cholesky, lambda r, dt: (hermitian(3, dt, r),), {}),
    (np.linalg.cholesky, lambda r, dt: (hermitian(3, dt, r),), {"upper": True}),
    (np.linalg.eigh, lambda r, dt: (hermitian(3, dt, r),), {}),
    (np.linalg.eigvalsh, lambda r, dt: (hermitian(3, dt, r),), {"UPLO": "U"}),
    (np.linalg.svdvals, lambda r, dt: (wellcond(3, 4, dtype=dt, rng=r),), {}),
    (np.linalg.pinv, lambda r, dt: (wellcond(4, 3, dtype=dt, rng=r),), {}),
    (np.linalg.matrix_power, lambda r, dt: (wellcond(3, dtype=dt, rng=r), nondiff(5)), {}),
    (np.linalg.norm, lambda r, dt: (r.standard_normal((3, 4)).astype(dt),), {"ord": "nuc"}),
    (np.linalg.norm, lambda r, dt: (r.standard_normal((3, 4)).astype(dt),), {"axis": 1, "ord": 3}),
    (np.linalg.vector_norm, lambda r, dt: (r.standard_normal((3, 4)).astype(dt),), {"axis": 0}),
    (np.linalg.matrix_norm, lambda r, dt: (r.standard_normal((2, 3, 4)).astype(dt),), {"ord": 1}),
    (np.linalg.cond, lambda r, dt: (wellcond(3, dtype=dt, rng=r),), {}),
    (np.linalg.trace, lambda r, dt: (r.standard_normal((2, 3, 3)).astype(dt),), {}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("f, make, kwargs", BATCHED, ids=lambda v: getattr(v, "__name__", ""))
def test_batched_frule_equals_row_by_row(f, make, kwargs, dtype):
    rng = rng_for("batched", f.__name__, dtype, str(kwargs))
    args = make(rng, dtype)
    primals = [a.value if isinstance(a, cr.testing.NonDifferentiable) else a for a in args]
    assert cr.frule.lookup(f, tuple(primals)).batched
    batch = 4
    dirs = [
        cr.NoTangent()
        if isinstance(a, cr.testing.NonDifferentiable)
        else rng.standard_normal((batch,) + a.shape).astype(dtype)
        for a in args
    ]
    if len(args) > 1 and not isinstance(args[1], cr.testing.NonDifferentiable):
        dirs[0] = cr.ZeroTangent()  # a zero tangent next to a batched one is broadcast
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *primals, **kwargs)
    for i in range(batch):
        row = [d if isinstance(d, cr.AbstractZero) else d[i] for d in dirs]
        y1, dy1 = cr.frule((cr.NoTangent(), *row), f, *primals, **kwargs)
        for got, want in zip(values(dy, y), values(dy1, y1)):
            got = got[i] if got.ndim == want.ndim + 1 else got
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ----- stacks of matrices, other array types ---------------------------------------------------

STACKED = [
    (np.linalg.solve, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]), r.standard_normal((2, 3, 2)))),
    (np.linalg.solve, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]), r.standard_normal(3))),
    (np.linalg.inv, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]),)),
    (np.linalg.det, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]),)),
    (np.linalg.slogdet, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]),)),
    (np.linalg.cholesky, lambda r: (np.stack([hermitian(3, rng=r), hermitian(3, rng=r)]),)),
    (np.linalg.eigvalsh, lambda r: (np.stack([hermitian(3, rng=r), hermitian(3, rng=r)]),)),
    (np.linalg.svdvals, lambda r: (np.stack([wellcond(3, rng=r), wellcond(3, rng=r)]),)),
    (np.linalg.pinv, lambda r: (np.stack([wellcond(3, 2, rng=r), wellcond(3, 2, rng=r)]),)),
]


@pytest.mark.parametrize("f, make", STACKED, ids=lambda v: getattr(v, "__name__", ""))
def test_stacks_of_matrices(f, make):
    args = make(rng_for("stack", f.__name__))
    test_rrule(f, *args)
    test_frule(f, *args)


class Wrapped(np.ndarray):
    """An array type of its own: the rules must take the NumPy-function path for it."""


@pytest.mark.parametrize("f, make, kwargs", BATCHED[:10], ids=lambda v: getattr(v, "__name__", ""))
def test_other_array_types_take_the_numpy_path(f, make, kwargs):
    rng = rng_for("wrapped", f.__name__, str(kwargs))
    args = [a.value if isinstance(a, cr.testing.NonDifferentiable) else a for a in make(rng, np.float64)]
    dirs = [rng.standard_normal(a.shape) if isinstance(a, np.ndarray) else cr.NoTangent() for a in args]
    wrap = [a.view(Wrapped) if isinstance(a, np.ndarray) else a for a in args]
    y, dy = cr.frule((cr.NoTangent(), *dirs), f, *args, **kwargs)
    yw, dyw = cr.frule(
        (cr.NoTangent(), *[d.view(Wrapped) if isinstance(d, np.ndarray) else d for d in dirs]), f, *wrap, **kwargs
    )
    for got, want in zip(values(dyw, yw), values(dy, y)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    y, back = cr.rrule(f, *args, **kwargs)
    yw, backw = cr.rrule(f, *wrap, **kwargs)
    seed = cr.testing.rand_tangent(y, 7)
    for got, want in zip(backw(seed)[1:], back(seed)[1:]):
        if not isinstance(want, cr.AbstractZero):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


# ----- shared work ----------------------------------------------------------------------------


def test_eigvalsh_decomposes_once(monkeypatch):
    import chainrules.rules.numpy.linalg as rules

    calls = []
    original = rules.symmetric_eigen
    monkeypatch.setattr(rules, "symmetric_eigen", lambda *a: calls.append(1) or original(*a))
    monkeypatch.setattr(np.linalg, "eigh", None)  # nothing may call NumPy's solver either
    a = hermitian(5)
    w, back = cr.rrule(rules.linalg.eigvalsh, a)
    back(np.ones(5))
    back(np.arange(5.0))
    assert len(calls) == 1


def test_solve_factorizes_once(monkeypatch):
    import chainrules.rules.scipy._lapack as lapack_module

    calls = []
    original = lapack_module.LU.__init__
    monkeypatch.setattr(lapack_module.LU, "__init__", lambda self, a: calls.append(1) or original(self, a))
    x, back = cr.rrule(np.linalg.solve, wellcond(4), np.ones((4, 2)))
    back(np.ones((4, 2)))
    assert len(calls) == 1


# ----- repeated eigenvalues -------------------------------------------------------------------


def test_eigvalsh_at_repeated_eigenvalues_is_finite_and_exact():
    a = hermitian(4, spectrum=[1.0, 1.0, 1.0, 3.0])
    w, v = np.linalg.eigh(a)
    y, back = cr.rrule(np.linalg.eigvalsh, a)
    dw = np.array([2.0, 2.0, 2.0, 5.0])  # equal weights on the repeated eigenvalue: a true gradient
    grad = back(dw)[1]
    p = v[:, 3:] @ v[:, 3:].T  # projector on the simple eigenvalue
    expected = 2.0 * (np.eye(4) - p) + 5.0 * p
    np.testing.assert_allclose(grad, np.tril(expected + expected.T, -1) + np.diag(np.diag(expected)), atol=1e-12)


def test_eigh_at_repeated_eigenvalues_with_a_basis_free_cotangent():
    # f(A) = <C, P(A)>, P the projector on the repeated eigenvalue's eigenspace: smooth in A, and
    # exact, which no cotangent tells from a matrix function's: the rule warns
    rng = rng_for("degenerate")
    a = hermitian(4, spectrum=[1.0, 1.0, 2.0, 4.0], rng=rng)
    c = rng.standard_normal((4, 4))

    def f(x):
        v = np.linalg.eigh(x)[1][:, :2]
        return np.sum(c * (v @ v.T))

    w, v = np.linalg.eigh(a)
    dv = np.zeros_like(v)
    dv[:, :2] = (c + c.T) @ v[:, :2]
    _, back = cr.rrule(np.linalg.eigh, a)
    with pytest.warns(cr.NonSmoothWarning, match="projectors onto a whole eigenspace"):
        grad = back(cr.Tangent[type(np.linalg.eigh(a))](cr.ZeroTangent(), dv))[1]
    assert np.all(np.isfinite(grad))
    e = rng.standard_normal((4, 4))
    e = e + e.T
    fd = (f(a + 1e-6 * e) - f(a - 1e-6 * e)) / 2e-6
    assert np.isclose(np.sum(grad * e), fd, rtol=1e-6)


def test_eigh_at_repeated_eigenvalues_with_a_basis_dependent_cotangent_is_finite():
    # no derivative exists; the rule leaves the rotation inside the eigenspace alone, and warns
    a = hermitian(3, spectrum=[2.0, 2.0, 5.0])
    _, back = cr.rrule(np.linalg.eigh, a)
    with pytest.warns(cr.NonSmoothWarning):
        grad = back((np.zeros(3), np.ones((3, 3))))[1]
    assert np.all(np.isfinite(grad))


V_LOW_RANK = np.array([0.5, -0.3, 0.8])
ISOTROPIC_PLUS_RANK_ONE = 2.0 * np.eye(3) + np.outer(V_LOW_RANK, V_LOW_RANK)  # eigenvalues 2, 2, 2.98


def sqrt_by_eigh(c):
    w, v = np.linalg.eigh(c)
    return (v * np.sqrt(w)) @ v.T


def lower_fold(g):
    """The cotangent of a matrix read from its lower triangle, for the full gradient ``g``."""
    return np.tril(g + g.T, -1) + np.diag(np.diag(g))


def symmetric_direction(rng, n=3):
    s = rng.standard_normal((n, n))
    return s + s.T


def test_eigh_matrix_function_at_repeated_eigenvalues_warns_at_the_users_line():
    # d sqrt(C) needs sqrt'(2) within the eigenspace of 2, which no cotangent of (w, V) carries
    c = ISOTROPIC_PLUS_RANK_ONE
    line = f"{__file__}:{inspect.getsourcelines(sqrt_by_eigh)[1] + 1}"  # its call of eigh
    rng = rng_for("sqrt by eigh")
    dy, s = rng.standard_normal((3, 3)), symmetric_direction(rng)
    for engine in ("source", "tape"):
        with pytest.warns(cr.NonSmoothWarning) as record:
            cr.pullback(sqrt_by_eigh, c, engine=engine)[1](dy)
        message = str(record[0].message)
        assert f"numpy.linalg.eigh at {line}" in message and "scipy.linalg.sqrtm" in message
        assert f"{record[0].filename}:{record[0].lineno}" == line
    with pytest.warns(cr.NonSmoothWarning, match=f"numpy.linalg.eigh at {line}"):
        cr.jacobian(sqrt_by_eigh, c, mode="reverse")  # a batch of cotangents
    with pytest.warns(cr.NonSmoothWarning, match=f"numpy.linalg.eigh at {line}.*the direction rotates"):
        cr.jvp(sqrt_by_eigh, (c,), (s,))
    # the rule the message points to is exact there: X dX + dX X = dC for X = sqrt(C)
    x = scipy.linalg.sqrtm(c).real
    exact = scipy.linalg.solve_sylvester(x, x, dy)
    np.testing.assert_allclose(cr.pullback(scipy.linalg.sqrtm, c)[1](dy)[0].real, exact, atol=1e-12)


def test_eigenvalue_functions_at_repeated_eigenvalues_are_exact_and_do_not_warn():
    c = ISOTROPIC_PLUS_RANK_ONE
    w, v = np.linalg.eigh(c)
    exact = lower_fold((v / (2 * np.sqrt(w))) @ v.T)  # of sum(sqrt(w)), symmetric in the repeated ones
    weights = rng_for("top eigenvector").standard_normal((3, 3))

    def by_eigh(x):
        return np.sum(np.sqrt(np.linalg.eigh(x)[0]))

    def by_eigvalsh(x):
        return np.sum(np.sqrt(np.linalg.eigvalsh(x)))

    def top_eigenvector(x):  # of the eigenvalue that does not repeat
        u = np.linalg.eigh(x)[1][:, 2]
        return np.sum(weights * np.outer(u, u))

    s = symmetric_direction(rng_for("eigenvalue functions"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)
        for engine in ("source", "tape"):
            for f in (by_eigh, by_eigvalsh):
                np.testing.assert_allclose(cr.gradient(f, c, engine=engine)[0], exact, atol=1e-12)
            grad = cr.gradient(top_eigenvector, c, engine=engine)[0]
            np.testing.assert_allclose(grad, fd_vjp(top_eigenvector, 1.0, c), atol=1e-8)
        _, t = cr.jvp(by_eigvalsh, (c,), (s,))
        assert np.isclose(t, np.sum(exact * np.tril(s)))
        both = cr.jacobian(lambda x: np.stack([by_eigh(x), np.sum(np.linalg.eigh(x)[0] ** 2)]), c, mode="reverse")
        np.testing.assert_allclose(both[0], exact, atol=1e-12)


def polar_factor(m):
    u, _, vh = np.linalg.svd(m)
    return u @ vh


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_svd_polar_factor_at_repeated_singular_values_is_exact(dtype):
    # U @ Vh of a unitary matrix (every singular value 1): the part of U^H dU and V^H dV that turns U
    # against V is defined between repeated singular values (1 / (s_i + s_j)), and kept
    rng = rng_for("polar factor", dtype)
    a = orthogonal(3, dtype, rng)
    dy, da = orthogonal(3, dtype, rng) + 0.5, orthogonal(3, dtype, rng) - 0.5

    def by_polar(m):
        return scipy.linalg.polar(m)[0]

    with pytest.warns(cr.NonSmoothWarning, match="the polar factor U @ Vh"):
        grad = cr.pullback(polar_factor, a)[1](dy)[0]
    np.testing.assert_allclose(grad, cr.pullback(by_polar, a)[1](dy)[0], atol=1e-12)
    np.testing.assert_allclose(grad, fd_vjp(polar_factor, dy, a), atol=1e-8)
    with pytest.warns(cr.NonSmoothWarning):
        jac = cr.jacobian(polar_factor, a, mode="reverse")  # a batch of cotangents
    np.testing.assert_allclose(jac, cr.jacobian(by_polar, a, mode="reverse"), atol=1e-12)
    with pytest.warns(cr.NonSmoothWarning, match="the direction rotates"):
        _, t = cr.jvp(polar_factor, (a,), (da,))
    np.testing.assert_allclose(t, (polar_factor(a + 1e-6 * da) - polar_factor(a - 1e-6 * da)) / 2e-6, atol=1e-8)
    along = a @ (da - da.conj().T)  # keeps the singular values equal: nothing left out, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)
        _, t = cr.jvp(polar_factor, (a,), (along,))
    np.testing.assert_allclose(t, cr.jvp(by_polar, (a,), (along,))[1], atol=1e-12)


def test_singular_value_functions_at_repeated_singular_values_do_not_warn():
    a = orthogonal(3, np.float64, rng_for("singular values"))
    da = rng_for("singular values", "direction").standard_normal((3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)
        grad = cr.gradient(lambda m: np.sum(np.linalg.svd(m)[1] ** 3), a)[0]
        _, t = cr.jvp(lambda m: np.linalg.svd(m, compute_uv=False), (a,), (da,))
    np.testing.assert_allclose(grad, 3 * a, atol=1e-12)  # 3 U S^2 Vh
    np.testing.assert_allclose(np.sum(t), np.trace(a.T @ da), atol=1e-12)


def spectral_sqrt(x):
    w, v = np.linalg.eig(x)
    return np.real((v * np.sqrt(w)) @ np.linalg.inv(v))


def test_eig_matrix_function_at_repeated_eigenvalues_warns():
    # V^H dV of V f(w) V^-1 vanishes within the repeated eigenvalues' block: its part against the
    # other eigenvectors, a cotangent of the repeated eigenvalues' vectors, is what warns
    rng = rng_for("eig repeated")
    p = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    a = p @ np.diag([2.0, 2.0, 3.0]) @ np.linalg.inv(p)
    with pytest.warns(cr.NonSmoothWarning, match="numpy.linalg.eig at .*V f\\(w\\) V\\^-1"):
        cr.pullback(spectral_sqrt, a)[1](np.ones((3, 3)))
    with pytest.warns(cr.NonSmoothWarning, match="the direction rotates"):
        cr.jvp(spectral_sqrt, (a,), (rng.standard_normal((3, 3)),))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cr.NonSmoothWarning)
        grad = cr.gradient(lambda x: np.sum(np.real(np.linalg.eig(x)[0])), a)[0]
    np.testing.assert_allclose(grad, np.eye(3), atol=1e-10)


# ----- singular and nearly singular matrices --------------------------------------------------


def exact_inverse(a):
    """The inverse of a small integer-valued matrix in exact rational arithmetic."""
    n = len(a)
    m = [[Fraction(int(a[i][j])) for j in range(n)] + [Fraction(int(i == j)) for j in range(n)] for i in range(n)]
    for col in range(n):
        piv = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[piv] = m[piv], m[col]
        m[col] = [x / m[col][col] for x in m[col]]
        for r in range(n):
            if r != col and m[r][col] != 0:
                m[r] = [x - m[r][col] * y for x, y in zip(m[r], m[col])]
    return [[m[i][n + j] for j in range(n)] for i in range(n)]


def test_solve_and_inv_near_singular_match_exact_arithmetic():
    # cond(a) ~ 4e9: the rules' cotangents stay accurate to cond * eps, as the primal does
    big = 10**5
    a_int = np.array([[big, big + 1, 0], [big - 1, big, 1], [0, 1, 1]])
    a = a_int.astype(float)
    inv = np.array(exact_inverse(a_int.tolist()), dtype=object)
    seed = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0], [2.0, 0.0, -1.0]])
    # inv pullback: -A^{-T} dY A^{-T}, exactly
    seed_q = np.array([[Fraction(s) for s in row] for row in seed], dtype=object)
    exact = -(inv.T.dot(seed_q).dot(inv.T))
    _, back = cr.rrule(np.linalg.inv, a)
    got = back(seed)[1]
    scale = max(abs(float(x)) for x in exact.ravel())
    assert np.max(np.abs(got - exact.astype(float))) <= 1e-5 * scale
    # solve: db = A^{-T} dx
    b = np.array([1.0, 2.0, 3.0])
    _, back = cr.rrule(np.linalg.solve, a, b)
    db = back(np.array([1.0, 0.0, -1.0]))[2]
    exact_db = inv.T.dot(np.array([Fraction(1), Fraction(0), Fraction(-1)], dtype=object)).astype(float)
    assert np.max(np.abs(db - exact_db)) <= 1e-5 * np.max(np.abs(exact_db))


def test_det_of_a_singular_matrix_has_the_adjugate_as_gradient():
    a_int = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])  # rank 2
    d, back = cr.rrule(np.linalg.det, a_int.astype(float))
    assert d == 0 or abs(d) < 1e-12
    cofactor = np.array(
        [
            [np.linalg.det(np.delete(np.delete(a_int, i, 0), j, 1).astype(float)) * (-1) ** (i + j) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(back(1.0)[1], cofactor, atol=1e-10)
    # rank n - 2: the adjugate, and so the gradient, vanishes
    _, back = cr.rrule(np.linalg.det, np.ones((3, 3)))
    np.testing.assert_allclose(back(1.0)[1], np.zeros((3, 3)), atol=1e-12)
    y, dy = cr.frule((cr.NoTangent(), np.eye(3)), np.linalg.det, a_int.astype(float))
    np.testing.assert_allclose(dy, np.trace(cofactor.T), atol=1e-10)


@pytest.mark.parametrize("f", [np.linalg.det, np.linalg.slogdet])
def test_det_and_slogdet_of_a_0x0_matrix(f, capfd):
    """NumPy's det of a 0x0 matrix is 1 (log|det| 0); the rules had passed it to LAPACK's GETRF,
    which refuses n = 0 (printing an illegal-value message) and left no factors to read."""
    empty = np.zeros((0, 0))
    test_rrule(f, empty)
    test_frule(f, empty)
    assert cr.rrule(f, empty)[0] == f(empty)
    assert "illegal value" not in capfd.readouterr().err

    def g(m):
        return np.linalg.det(m) if f is np.linalg.det else np.linalg.slogdet(m)[1]

    fd = cr.testing.fd_jacobian(g, empty)  # (1, 0): no entries to perturb
    for engine in ("source", "tape"):
        grad = cr.gradient(g, empty, engine=engine)[0]
        assert grad.shape == (0, 0)
        np.testing.assert_array_equal(grad.reshape(fd.shape), fd)
    y, dy = cr.jvp(g, (empty,), (empty,))
    assert y == g(empty) and dy == 0
    jac = cr.jacobian(g, empty, mode="forward")
    assert np.shape(jac) == (0, 0)
    np.testing.assert_array_equal(np.reshape(jac, fd.shape), fd)


def test_singular_matrices_raise_where_no_derivative_exists():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        cr.rrule(np.linalg.solve, s, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError):
        cr.rrule(np.linalg.inv, s)
    result, back = cr.rrule(np.linalg.slogdet, s)
    assert result[0] == 0 and result[1] == -np.inf
    with pytest.raises(np.linalg.LinAlgError, match="log|det|"):
        back((0.0, 1.0))
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        cr.rrule(np.linalg.cholesky, -np.eye(2))


def test_primals_match_numpy_to_rounding():
    rng = rng_for("primals")
    a, h = wellcond(5, rng=rng), hermitian(5, rng=rng)
    b = rng.standard_normal((5, 3))
    np.testing.assert_allclose(cr.rrule(np.linalg.solve, a, b)[0], np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(cr.rrule(np.linalg.det, a)[0], np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(cr.rrule(np.linalg.slogdet, a)[0], np.linalg.slogdet(a), rtol=1e-12)
    np.testing.assert_allclose(cr.rrule(np.linalg.cholesky, h)[0], np.linalg.cholesky(h), rtol=1e-12)
    np.testing.assert_allclose(cr.rrule(np.linalg.eigvalsh, h)[0], np.linalg.eigvalsh(h), rtol=1e-12)


def test_inputs_are_not_mutated_and_integers_get_float_cotangents():
    a = np.array([[2, 1], [1, 3]])
    x, back = cr.rrule(np.linalg.solve, a, np.array([1, 2]))
    da, db = back(np.ones(2))[1:]
    assert da.dtype == np.float64 and db.dtype == np.float64
    np.testing.assert_array_equal(a, [[2, 1], [1, 3]])


# ----- through the engines ---------------------------------------------------------------------

_A = np.array([[4.0, 1.0, 0.5], [0.2, 3.0, -0.4], [0.3, -0.1, 5.0]])
_B = np.array([1.0, -2.0, 0.5])


def _through_linalg(x):
    m = _A + np.outer(x, x)
    s = m @ m.T
    return (
        np.sum(np.linalg.solve(m, _B))
        + np.linalg.slogdet(m)[1]
        + np.sum(np.linalg.eigvalsh(s) ** 2) * 0.01
        + np.linalg.norm(np.linalg.inv(m))
        + np.sum(np.linalg.cholesky(s)) * 0.1
        + np.linalg.det(m) * 0.01
    )


def test_forward_and_reverse_jacobians_and_the_hessian_through_the_rules():
    # the reverse rules run on dual numbers inside cr.hessian (forward over reverse): their
    # NumPy-function path, including the batched pushforwards of the rules they call
    x = np.array([0.3, -0.2, 0.5])
    eps = 1e-6
    grad = cr.gradient(_through_linalg, x)[0]
    fd = np.array([(_through_linalg(x + eps * e) - _through_linalg(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(_through_linalg, x, mode="forward"), fd, rtol=1e-6)
    hess = cr.hessian(_through_linalg, x)
    fd_hess = np.stack(
        [
            (cr.gradient(_through_linalg, x + eps * e)[0] - cr.gradient(_through_linalg, x - eps * e)[0]) / (2 * eps)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-7)


def _fd_hessian(f, x, eps=1e-6):
    """Central differences of the reverse-mode gradient, one column per entry of ``x``."""
    steps = np.eye(x.size).reshape((x.size,) + x.shape) * eps
    return np.stack([(cr.gradient(f, x + e)[0] - cr.gradient(f, x - e)[0]).ravel() / (2 * eps) for e in steps], -1)


@pytest.mark.parametrize(
    "name, f, shape",
    [
        # the eigenvalue gaps of eigh and the squared singular values of svd, on dual numbers
        ("eigh vectors", lambda a: (lambda w, v: np.sum(np.abs(v) ** 2 * w))(*np.linalg.eigh(a + a.T)), (3, 3)),
        ("svd values", lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 3), (3, 2)),
        # a scalar cotangent scattered onto a diagonal on dual numbers
        ("trace", lambda a: np.trace(a @ a) ** 2, (3, 3)),
    ],
    ids=lambda v: v.replace(" ", "-") if isinstance(v, str) else "-",
)
def test_hessians_of_spectral_rules_and_trace(name, f, shape):
    x = rng_for("hessian", name).standard_normal(shape)
    hess = np.asarray(cr.hessian(f, x)).reshape(x.size, x.size)
    np.testing.assert_allclose(hess, _fd_hessian(f, x), rtol=1e-5, atol=1e-6)


# ----- edge cases found by fuzzing (tests/fuzz/fuzz_rules.py) ---------------------------------


def test_lstsq_rank_has_numpys_type():
    a, b = np.eye(3, 2) + 1.0, np.ones(3)
    assert type(cr.rrule(np.linalg.lstsq, a, b, rcond=None)[0][2]) is type(np.linalg.lstsq(a, b, rcond=None)[2])
    assert type(cr.frule((cr.NoTangent(), a, b), np.linalg.lstsq, a, b, rcond=None)[0][2]) is np.int32


@pytest.mark.parametrize("x", [np.ones(0), np.ones((2, 0))], ids=["empty", "empty-rows"])
def test_max_norm_of_no_entries_is_zero(x, batched_pullback):
    kwargs = {"ord": np.inf, "axis": -1}
    test_rrule(np.linalg.vector_norm, x, fkwargs=kwargs)
    test_frule(np.linalg.vector_norm, x, fkwargs=kwargs)
    batched_pullback(np.linalg.vector_norm, x, kwargs=kwargs)


def test_det_of_a_stack_with_a_singular_matrix():
    # the stack's gradient is the adjugate of each matrix, also of the singular one (inv would fail)
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])
    _, back = cr.rrule(np.linalg.det, a)
    expected = [[[4.0, -2.0], [-2.0, 1.0]], [[3.0, 0.0], [0.0, 2.0]], np.zeros((2, 2))]
    np.testing.assert_allclose(back(np.ones(3))[1], expected)
    test_rrule(np.linalg.det, a)
    test_frule(np.linalg.det, a)


def test_det_second_order_at_a_singular_matrix_is_refused():
    with pytest.raises(cr.NoDerivativeError, match=r"scipy\.linalg\.det\) at .*test_linalg\.py:\d+ takes a singular"):
        cr.hessian(lambda x: np.linalg.det(x.reshape(2, 2)), np.array([1.0, 2.0, 2.0, 4.0]))


def _spectral_radius_penalty(eigvals):
    def penalty(A):
        return np.sum(np.abs(eigvals(A)) ** 2 * np.array([1.0, 0.5]))

    return penalty


@pytest.mark.parametrize(
    "eigvals",
    [np.linalg.eigvals, lambda A: np.linalg.eig(A)[0], scipy.linalg.eigvals, lambda A: scipy.linalg.eig(A)[0]],
    ids=["np.linalg.eigvals", "np.linalg.eig", "scipy.linalg.eigvals", "scipy.linalg.eig"],
)
def test_second_derivatives_of_a_real_matrix_with_complex_eigenvalues_are_real(eigvals):
    """A real matrix's eigenvalues may be complex; the Hessian of a real function of them is real,
    under forward over reverse and under a tape over the source engine (the complex cotangent of
    the engine's real matrix keeps its real part, as ProjectTo of a plain one does)."""
    A = np.array([[0.5, -0.6], [0.7, 0.2]])  # eigenvalues 0.35 ± 0.63i
    penalty = _spectral_radius_penalty(eigvals)
    expected = fd_jacobian(lambda M: cr.gradient(penalty, M)[0], A).reshape(2, 2, 2, 2)
    H = cr.hessian(penalty, A)
    assert H.dtype == np.float64
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-8)
    weights = np.array([[1.0, -0.5], [0.25, 2.0]])
    by_tape = cr.gradient(lambda M: np.sum(cr.gradient(penalty, M)[0] * weights), A, engine="tape")[0]
    assert by_tape.dtype == np.float64
    np.testing.assert_allclose(by_tape, np.tensordot(weights, expected, axes=2), rtol=1e-6, atol=1e-8)
