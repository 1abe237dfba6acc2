"""Rules for ``scipy.sparse``: products of a constant sparse matrix with a dense operand, and
``spsolve`` / ``SuperLU.solve``, against finite differences, across the engines and in Hessians;
a sparse matrix whose entries depend on the values being differentiated is refused."""

import operator

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import chainrules as cr
from chainrules.core.errors import ChainRulesError, NoForwardRuleError
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import fd_jacobian, test_frule, test_rrule

from ..numpy.test_linalg import rng_for

pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")

FORMATS = ["csr", "csc", "coo", "dia", "bsr", "lil"]
KINDS = ["array", "matrix"]


def _sparse(fmt, kind, n, m, dtype=np.float64, seed=0):
    """A sparse (n, m) matrix with a dominant diagonal, in the format and class asked for."""
    rng = rng_for("sparse", fmt, kind, n, m, np.dtype(dtype).name, seed)
    dense = rng.standard_normal((n, m)) * (rng.random((n, m)) < 0.4)
    if np.dtype(dtype).kind == "c":
        dense = dense + 1j * rng.standard_normal((n, m)) * (dense != 0)
    dense[np.arange(min(n, m)), np.arange(min(n, m))] += 4.0
    return getattr(sp, f"{fmt}_{kind}")(dense.astype(dtype))


def _dense(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _laplacian(n, kind="array"):
    """The 1-d Poisson matrix (Dirichlet boundaries), tridiagonal, in CSR."""
    main, off = 2.0 * np.ones(n), -np.ones(n - 1)
    return getattr(sp, f"csr_{kind}")(sp.diags([off, main, off], [-1, 0, 1]))


# ----- products ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(4,), (4, 2)])
def test_sparse_times_dense(fmt, kind, shape):
    rng = rng_for("times", fmt, kind, shape)
    A = _sparse(fmt, kind, 3, 4)
    x = _dense(rng, shape)
    np.testing.assert_allclose(cr.rrule(operator.matmul, A, x)[0], A.toarray() @ x)
    test_rrule(operator.matmul, A, x)
    test_frule(operator.matmul, A, x)
    # (methods by their functions: a bound method's object is the testers' first input, and A is constant)
    test_rrule(type(A).dot, A, x)
    test_frule(type(A).dot, A, x)
    test_rrule(type(A.T).__matmul__, A.T, _dense(rng, (3, *shape[1:])))
    y = _dense(rng, (2, 3) if len(shape) == 2 else (3,))  # x @ A
    test_rrule(operator.matmul, y, A)
    test_frule(operator.matmul, y, A)
    test_rrule(type(A).__rmatmul__, A, y)
    if kind == "matrix":  # spmatrix's `*` is the matrix product
        test_rrule(operator.mul, A, x)
        test_frule(operator.mul, y, A)


@pytest.mark.parametrize("dtypes", [(np.complex128, np.float64), (np.float64, np.complex128), (np.complex128,) * 2])
def test_sparse_times_complex(dtypes):
    rng = rng_for("complex", dtypes)
    A = _sparse("csr", "array", 3, 4, dtypes[0])
    x = _dense(rng, (4,), dtypes[1])
    test_rrule(operator.matmul, A, x)
    test_frule(operator.matmul, A, x)
    test_rrule(operator.matmul, _dense(rng, (2, 3), dtypes[1]), A)


@pytest.mark.parametrize("shape", [(4,), (4, 2)])
def test_sparse_times_batches(shape):
    """A block of tangents or cotangents (a leading batch axis) at once, row by row the same."""
    rng = rng_for("batch", shape)
    A = _sparse("csr", "matrix", 3, 4)
    x = _dense(rng, shape)
    dxs = _dense(rng, (5, *shape))
    y, dys = cr.frule((cr.NoTangent(), cr.ZeroTangent(), dxs), operator.matmul, A, x)
    np.testing.assert_allclose(dys, [A.toarray() @ dx for dx in dxs])
    cotangents = _dense(rng, (5, *y.shape))
    back = cr.rrule(operator.matmul, A, x)[1]
    np.testing.assert_allclose(back(cotangents)[2], [A.toarray().T @ dy for dy in cotangents])
    z, back = cr.rrule(operator.matmul, x.T, A.T)
    np.testing.assert_allclose(back(_dense(rng, (5, *z.shape)))[1].shape, (5, *x.T.shape))


def test_sparse_times_a_scalar_scales_it():
    A = _sparse("csr", "matrix", 3, 3)
    y, back = cr.rrule(operator.mul, A, np.array(2.0))
    assert sp.issparse(y)
    np.testing.assert_allclose(y.toarray(), 2.0 * A.toarray())
    np.testing.assert_allclose(cr.unthunk(back(y)[1]).toarray(), 4.0 * A.toarray())


def test_tangents_of_the_sparse_matrix():
    """The sparse matrix's tangent is a sparse matrix on its pattern (core.sparse): pushed as dA @ x,
    and its cotangent dy x^H is computed on A's pattern, for a batch a list of them."""
    rng = rng_for("sparse tangents")
    A = _sparse("coo", "array", 4, 4)
    x, dx = _dense(rng, (4, 2)), _dense(rng, (4, 2))
    dA = cr.ProjectTo(A)(_dense(rng, (4, 4)))
    assert type(dA) is sp.csr_array and dA.nnz == sp.csr_array(A).nnz
    _, dy = cr.frule((cr.NoTangent(), dA, dx), operator.matmul, A, x)
    np.testing.assert_allclose(dy, dA.toarray() @ x + A.toarray() @ dx)
    dys = _dense(rng, (3, 4, 2))
    _, dA_bar, _ = cr.rrule(operator.matmul, A, x)[1](dys)
    pattern = A.toarray() != 0
    np.testing.assert_allclose([d.toarray() for d in cr.unthunk(dA_bar)], [(dy @ x.T) * pattern for dy in dys])
    _, dxs = cr.frule((cr.NoTangent(), [dA, 2 * dA, cr.ZeroTangent()], cr.ZeroTangent()), spla.spsolve, A, x[:, 0])
    solved = np.linalg.solve(A.toarray(), -dA.toarray() @ np.linalg.solve(A.toarray(), x[:, 0]))
    np.testing.assert_allclose(dxs, [solved, 2 * solved, np.zeros(4)], atol=1e-12)


# ----- solves --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(4,), (4, 2), (4, 1)])
def test_spsolve(fmt, kind, shape):
    rng = rng_for("spsolve", fmt, kind, shape)
    A = _sparse(fmt, kind, 4, 4)
    b = _dense(rng, shape)
    x = cr.rrule(spla.spsolve, A, b)[0]
    np.testing.assert_allclose(x, spla.spsolve(A, b), rtol=1e-12)
    assert x.shape == spla.spsolve(A, b).shape
    test_rrule(spla.spsolve, A, b)
    test_frule(spla.spsolve, A, b)


@pytest.mark.parametrize("dtypes", [(np.float64, np.complex128), (np.complex128, np.float64), (np.float32, np.float32)])
def test_spsolve_dtypes(dtypes):
    rng = rng_for("spsolve dtypes", dtypes)
    A = _sparse("csc", "array", 4, 4, dtypes[0])
    b = _dense(rng, (4,), dtypes[1])
    x = cr.rrule(spla.spsolve, A, b)[0]
    assert x.dtype == spla.spsolve(A, b).dtype
    tol = {"rtol": 1e-3, "atol": 1e-3} if dtypes[0] == np.float32 else {}
    test_rrule(spla.spsolve, A, b, **tol)


@pytest.mark.parametrize("trans", ["N", "T", "H"])
@pytest.mark.parametrize("shape", [(4,), (4, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_superlu_solve(trans, shape, dtype):
    rng = rng_for("splu", trans, shape, np.dtype(dtype).name)
    A = _sparse("csc", "array", 4, 4, dtype)
    lu = spla.splu(A)
    b = _dense(rng, shape, dtype)
    dense = {"N": A.toarray(), "T": A.toarray().T, "H": A.toarray().conj().T}[trans]
    x, back = cr.rrule(spla.SuperLU.solve, lu, b, trans=trans)  # (SuperLU objects cannot be copied: by hand)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-12)
    dxs = _dense(rng, (3, *shape), dtype)  # a batch of cotangents: x̄ ↦ op(A)^-H x̄
    np.testing.assert_allclose(back(dxs)[2], [np.linalg.solve(dense.conj().T, dx) for dx in dxs], rtol=1e-12)
    np.testing.assert_allclose(back(dxs[0])[2], np.linalg.solve(dense.conj().T, dxs[0]), rtol=1e-12)
    _, dys = cr.frule((cr.NoTangent(), cr.NoTangent(), dxs), spla.SuperLU.solve, lu, b, trans=trans)
    np.testing.assert_allclose(dys, [np.linalg.solve(dense, db) for db in dxs], rtol=1e-12)
    if dtype is np.float64:
        np.testing.assert_allclose(
            back(dxs[0])[2],
            fd_jacobian(lambda v: lu.solve(v, trans), b).T @ dxs[0].ravel() if len(shape) == 1 else back(dxs[0])[2],
        )


def test_solves_batches():
    rng = rng_for("solve batch")
    A = _sparse("csr", "array", 4, 4)
    for shape in [(4,), (4, 2)]:
        b = _dense(rng, shape)
        x, back = cr.rrule(spla.spsolve, A, b)
        dxs = _dense(rng, (3, *x.shape))
        np.testing.assert_allclose(back(dxs)[2], [np.linalg.solve(A.toarray().T, dx) for dx in dxs], rtol=1e-10)
        _, dx = cr.frule((cr.NoTangent(), cr.ZeroTangent(), dxs), spla.spsolve, A, b)
        np.testing.assert_allclose(dx, [np.linalg.solve(A.toarray(), db) for db in dxs], rtol=1e-10)


def test_spsolve_of_a_singular_matrix_returns_what_spsolve_returns_and_nan_derivatives():
    """spsolve warns and returns NaN for an exactly singular A (the rule had raised splu's error)."""
    A = sp.csr_array(np.array([[1.0, 1.0], [1.0, 1.0]]))
    b = np.array([1.0, 2.0])

    def f(b):
        return np.sum(spla.spsolve(A, b))

    with pytest.warns(spla.MatrixRankWarning):
        assert np.isnan(f(b))
    with pytest.warns(spla.MatrixRankWarning):
        value, (grad,) = cr.value_and_gradient(f, b)
    assert np.isnan(value) and grad.shape == b.shape and np.isnan(grad).all()
    with pytest.warns(spla.MatrixRankWarning):
        assert np.isnan(cr.jacobian(f, b, mode="forward")).all()


# ----- engines: PDE-like programs --------------------------------------------------------------

N = 6
L = _laplacian(N)
LM = _laplacian(N, "matrix")
SOURCE = np.sin(np.linspace(0.0, np.pi, N))


def poisson_energy(u):
    """The discrete Dirichlet energy of u plus a load term."""
    return 0.5 * u @ (L @ u) - SOURCE @ u + np.sum(np.sin(u))


def residual_norm(u):
    return np.sum((LM * u - LM.dot(u**2)) ** 2) + np.sum((u @ L) * u)


def poisson_solution(f):
    """The 1-d Poisson solve with load f: sum of squares of u and a nonlinear term."""
    u = spla.spsolve(L, f)
    return np.sum(u**2) + np.sum(np.cos(spla.spsolve(LM.T.tocsc(), np.stack([f, f * f], axis=1))))


def factored(f):
    solve = spla.factorized(L.tocsc())  # splu(A).solve: the rule of SuperLU.solve
    return np.sum(solve(f) ** 2) + np.sum(np.sin(solve(f * f)))


PROGRAMS = [poisson_energy, residual_norm, poisson_solution]


def test_factored_source_forward_and_hessian():
    """SuperLU.solve is C code that refuses dual numbers and tracked arrays without asking them to
    convert (a bare TypeError had come out): forward mode runs the function through the source
    engine's primal, which calls its rule, and the tape refuses it at the user's line."""
    u = np.linspace(0.2, 1.0, N)
    expected = fd_jacobian(factored, u)[0]
    np.testing.assert_allclose(cr.gradient(factored, u)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(factored, u, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda v: cr.gradient(factored, v)[0], u)
    np.testing.assert_allclose(cr.hessian(factored, u), hessian, rtol=1e-5, atol=1e-6)
    with pytest.raises(cr.DroppedDerivativeError, match=r"compiled code called at .*test_sparse\.py:\d+.*TrackedArray"):
        cr.gradient(factored, u, engine="tape")


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_programs_source_and_forward(f):
    u = np.linspace(0.2, 1.0, N)
    expected = fd_jacobian(f, u)[0]
    np.testing.assert_allclose(cr.gradient(f, u)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, u, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    hessian = fd_jacobian(lambda v: cr.gradient(f, v)[0], u)
    np.testing.assert_allclose(cr.hessian(f, u), hessian, rtol=1e-5, atol=1e-6)


def test_tape_products():
    """The tape records `x @ A` and spmatrix's `x * A` (its operators run first); `A @ x`, `A.dot(x)`
    and `spsolve` are library code that it refuses, naming the rule engine='source' uses."""
    u = np.linspace(0.2, 1.0, N)

    def left(u):
        return np.sum((u @ L) ** 2) + np.sum(np.sin(u * LM))

    np.testing.assert_allclose(cr.gradient(left, u, engine="tape")[0], fd_jacobian(left, u)[0], rtol=1e-6, atol=1e-8)
    for f in (poisson_energy, poisson_solution):
        with pytest.raises(IgnoredRuleError, match="engine='source'"):
            cr.gradient(f, u, engine="tape")


def test_jvp_of_a_product():
    u, du = np.linspace(0.2, 1.0, N), np.ones(N)
    y, dy = cr.jvp(lambda u: u @ L + L @ u, (u,), (du,))
    np.testing.assert_allclose(dy, 2 * L.toarray() @ du)


# ----- sparse matrices built from values being differentiated ----------------------------------


@pytest.mark.parametrize("f", [sp.diags, sp.diags_array])
@pytest.mark.parametrize("fmt", [None, "csr", "coo"])
def test_diags(f, fmt):
    rng = rng_for("diags", f.__name__, fmt)
    diagonals = [_dense(rng, (3,)), _dense(rng, (4,)), _dense(rng, (2,))]
    kwargs = {"offsets": [-1, 0, 2], "format": fmt}
    test_rrule(f, diagonals, fkwargs=kwargs)
    test_frule(f, diagonals, fkwargs=kwargs)
    test_rrule(f, _dense(rng, (4,)), fkwargs={"offsets": 1, "shape": (4, 5)})  # one diagonal, bare
    test_rrule(f, [_dense(rng, (1,))], fkwargs={"offsets": [0], "shape": (3, 3)})  # broadcast


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_assembled_from_entries(kind, fmt):
    rng = rng_for("assembled", kind, fmt)
    cls = getattr(sp, f"{fmt}_{kind}")
    rows, cols = np.array([0, 1, 1, 3, 2]), np.array([0, 2, 2, 3, 0])  # (a duplicate: summed)
    test_rrule(cls, (_dense(rng, (5,)), (rows, cols)), fkwargs={"shape": (4, 4)})
    test_frule(cls, (_dense(rng, (5,)), (rows, cols)), fkwargs={"shape": (4, 4)})
    if fmt != "coo":
        A = sp.csr_array(_sparse("csr", kind, 4, 4)) if fmt == "csr" else sp.csc_array(_sparse("csc", kind, 4, 4))
        test_rrule(cls, (_dense(rng, (A.nnz,)), A.indices, A.indptr), fkwargs={"shape": (4, 4)})


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_operations(kind):
    """Scaled, summed, transposed and converted: sparse results on their patterns (a sum's the union)."""
    A = _sparse("csr", kind, 4, 4, seed=1)
    B = _sparse("coo", kind, 4, 4, seed=2) * 2.0
    for args in [(A, 1.5), (np.float64(-0.5), B)]:
        test_rrule(operator.mul, *args)
        test_frule(operator.mul, *args)
    test_rrule(type(A).__rmul__, A, 2.0)
    for op in (operator.add, operator.sub):
        test_rrule(op, A, B)
        test_frule(op, B, A)
    test_rrule(type(A).__add__, A, B)
    for method in (type(A).transpose, type(A).tocsc, type(B).tocsr, type(A).tocoo):
        test_rrule(method, A if method is not type(B).tocsr else B)
        test_frule(method, A if method is not type(B).tocsr else B)
    test_rrule(operator.matmul, A, B)
    test_frule(operator.matmul, B, A)


def diagonal_shift(k):
    K = sp.diags([k * np.ones(N)], [0], format="csr") + L
    return np.sum(spla.spsolve(K.tocsc(), np.ones(N)))


def assembled(w):
    K = sp.csr_array((w, (np.arange(N), np.arange(N))), shape=(N, N))
    return np.sum(K.T @ np.ones(N)) + np.sum((2.0 * K - K.tocoo()) @ np.arange(N))


# the 1-d diffusion problem: one coefficient per cell, K(k) = D^T diag(k) D + eps I
CELLS = 8
DIFFERENCE = sp.csr_array(sp.diags([-np.ones(CELLS), np.ones(CELLS - 1)], [0, 1]))
LOAD = np.linspace(0.5, 1.5, CELLS)
OBSERVED = np.linspace(0.1, 0.3, CELLS)


def diffusion_misfit(k):
    K = DIFFERENCE.T @ sp.diags(k) @ DIFFERENCE + 1e-3 * sp.eye(CELLS)
    u = spla.spsolve(K.tocsc(), LOAD)
    return np.sum((u - OBSERVED) ** 2)


@pytest.mark.parametrize("f", [diagonal_shift, assembled, diffusion_misfit], ids=lambda f: f.__name__)
def test_differentiated_entries_source(f):
    x = np.array([0.7]) if f is diagonal_shift else np.linspace(1.0, 2.0, CELLS if f is diffusion_misfit else N)
    np.testing.assert_allclose(cr.gradient(f, x)[0], fd_jacobian(f, x)[0], rtol=1e-6, atol=1e-8)


def elementwise(u):
    return np.sum((u * L).toarray())


@pytest.mark.parametrize("engine", ["source", "tape", "forward"])
def test_elementwise_product_refused(engine):
    x = np.linspace(0.2, 1.0, N)
    with pytest.raises(ChainRulesError) as raised:
        if engine == "forward":
            cr.jacobian(elementwise, x, mode="forward")
        else:
            cr.gradient(elementwise, x, engine=engine)
    assert "test_sparse.py" in str(raised.value)


def test_operators_of_unknown_operands_stay_resolved_when_the_source_engine_transforms():
    """The sparse rules typed on operator.mul and operator.matmul agree with the untyped ones (which
    reach the sparse methods' rules), so an operand of a type unknown before the call (a NumPy
    function's result) does not make the source engine dispatch the operator at every call; a sparse
    matrix the function builds reaches its rules through the rule chosen."""

    def scaled(x):
        return np.sin(x) * 0.5

    assert "rrule_mul(" in cr.show(scaled, 0.3)

    def built_inside(u):
        K = sp.diags([2.0 * np.ones(N)], [0], format="csr") + L  # (its type is known only when it runs)
        return np.sum((K @ u) ** 2) + np.sum(u @ K)

    u = np.linspace(0.2, 1.0, N)
    np.testing.assert_allclose(cr.gradient(built_inside, u)[0], fd_jacobian(built_inside, u)[0], rtol=1e-6)


# sparse matrices built from the values being differentiated, each on its function's first line
def built_diags(v):
    D = sp.diags(v)
    return np.sum(D @ np.arange(1.0, len(v) + 1))


def built_coo(v):
    A = sp.coo_matrix((v, (np.arange(len(v)), np.arange(len(v)))), shape=(len(v), len(v)))
    return np.sum(A @ np.arange(1.0, len(v) + 1))


def built_scaled(v):
    A = v[0] * sp.eye(len(v))
    return np.sum(A @ v)


def _building_line(f) -> str:
    return f"test_sparse.py:{f.__code__.co_firstlineno + 1}"


BUILDING = [diffusion_misfit, built_diags, built_coo, built_scaled]


@pytest.mark.parametrize("how", ["jacobian", "derivative", "hessian"])
@pytest.mark.parametrize("f", BUILDING, ids=lambda f: f.__name__)
def test_building_refused_by_forward_mode(f, how):
    """Forward mode cannot carry tangents on a sparse matrix (SciPy stores plain numbers), nor can the
    Hessian's forward pass over the reverse one: building one from the values being differentiated is
    refused at the user's line of that call, not failed inside SciPy's code (diags tests a dual for a
    number: "Different number of diagonals and offsets") or the rules' (which SciPy's code would convert)."""
    x = np.linspace(1.0, 2.0, CELLS)
    with pytest.raises(NoForwardRuleError) as raised:
        if how == "jacobian":
            cr.jacobian(f, x, mode="forward")
        elif how == "derivative":
            cr.derivative(lambda t: f(x * t), 1.0)
        else:
            cr.hessian(f, x)
    assert _building_line(f) in str(raised.value) and "cannot carry their tangents" in str(raised.value)
    # (reverse mode differentiates it)
    np.testing.assert_allclose(cr.gradient(f, x)[0], fd_jacobian(f, x)[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [diffusion_misfit, built_diags], ids=lambda f: f.__name__)
def test_building_refused_by_the_tape(f):
    """The tape sees no call of sp.diags, whose body fails on tracked values with an error of SciPy's: the
    error is the tape's refusal of that call's rule, at the user's line."""
    with pytest.raises(IgnoredRuleError, match="has a rule that the tape engine cannot use here") as raised:
        cr.gradient(f, np.linspace(1.0, 2.0, CELLS), engine="tape")
    assert _building_line(f) in str(raised.value)
