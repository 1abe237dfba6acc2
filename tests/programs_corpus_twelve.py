"""A twelfth corpus of whole programs: the breadth of NumPy's API as numerical code uses it.
Windows by ``sliding_window_view`` and ``as_strided``, group sums through ``np.unique``'s inverse,
stable sorts and ``take_along_axis``/``put_along_axis``, ``np.choose``/``np.select``/
``np.piecewise``, ``np.vectorize`` with a signature, masked arrays, triangular index helpers,
tiling, broadcasting and splitting, axis moves and flips (negative strides), eigenvalues of a
nonsymmetric matrix, ``np.digitize`` as an index, ufunc methods (``reduce``, ``accumulate``,
``reduceat``, ``outer``, ``at``), NaN-aware reductions, ``np.block``, ``np.ix_``, boolean-mask
and in-place writes on copies, ``np.resize``, ``np.diff``/``np.gradient``/``np.trapezoid`` with
their options, ``np.linalg.multi_dot``/``tensorsolve``/``tensorinv``/``matrix_power``,
polynomials (``np.polyval``, ``np.polynomial``), ``np.interp`` in its table, real FFTs in 2-d,
``np.einsum(optimize=True)``, ``np.kron``, rounding used piecewise-constantly, float32 and
complex inputs.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view
from numpy.polynomial import Chebyshev, Legendre, Polynomial
from numpy.polynomial import polynomial as P
from program_checks import ARRAY_OF_TRACKED, SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

PROGRAMS, program = new_corpus()


def no_rule(name: str) -> dict:
    """Every engine's refusal of a NumPy callable that has no rule."""
    return {
        "source": f"no differentiation rule for {name}",
        "tape": f"no differentiation rule for {name}",
        "forward": name,
    }


def in_place(source_call: str, name: str) -> dict:
    """The refusals of a NumPy call writing into its argument: the source engine names the call and
    the array it changes, the tape and forward mode find no rule."""
    return {"source": f"`{source_call}` changes", "tape": f"no differentiation rule for {name}", "forward": name}


# np.lib.stride_tricks.as_strided has a rule, which the tape and forward mode, seeing operations, not the
# calls NumPy does not dispatch to them, cannot use: they refuse it as they refuse SciPy's Python wrappers
AS_STRIDED = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}
# numpy.polynomial's functions without rules (polyroots) are library code the engines cannot look inside
LIBRARY_NO_RULE = {
    "source": "no differentiation rule for numpy.polynomial",
    "tape": ARRAY_OF_TRACKED,
    "forward": "would drop",
}
# a numpy.polynomial class built from a value being differentiated: the class has a rule for its construction, which
# the tape and forward mode cannot use and refuse at the line (the API's forward mode runs the source engine's primal)
SERIES_CLASS = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}
# a plain buffer that a tracked value is written into: the tape and forward mode refuse it by design
BUFFER_ON_TAPE = {"tape": ARRAY_OF_TRACKED, "forward": "would drop its derivative"}
# ndarray.fill is one of the in-place calls every engine refuses by design
FILL = {"source": "`a.fill(v)` changes", "tape": "x.fill() writes", "forward": "numpy.ndarray.fill"}
GRADIENT_IN_COORDINATES = "its derivative in sample coordinates"

RNG = np.random.default_rng(1212)
SERIES = np.array([0.3, 1.1, -0.4, 0.8, 1.6, -0.9, 0.2, 0.5, 1.3])
IMAGE = np.array(
    [
        [0.21, 0.93, -0.34, 0.47],
        [1.12, -0.55, 0.71, 0.16],
        [-0.28, 0.64, 0.85, -0.73],
        [0.52, 0.38, -0.17, 1.24],
    ]
)
LABELS = np.array([2, 0, 1, 2, 0, 2, 1, 1, 0])
NONSYMMETRIC = np.array([[2.0, 0.7, -0.3], [0.2, 0.9, 0.5], [-0.4, 0.1, -0.6]])
WITH_NANS = np.array([[0.5, np.nan, 1.2], [np.nan, -0.7, 0.4], [0.9, 0.3, np.nan]])

# ----- windows and strides ------------------------------------------------------------------------


@program(SERIES, hessian=True, nested=True)
def moving_average_smoother_by_window_view(x):
    windows = sliding_window_view(x, 3)
    smooth = windows.mean(axis=-1)
    weighted = sliding_window_view(x, 4) @ np.array([0.1, 0.4, 0.4, 0.1])
    return np.sum((smooth - x[1:-1]) ** 2) + np.sum(smooth**3) + np.sum(weighted * smooth[:-1])


@program(IMAGE, hessian=True)
def two_dimensional_patches_by_window_view(img):
    patches = sliding_window_view(img, (2, 2))
    energy = np.sum(patches**2, axis=(-2, -1))
    pooled = patches.max(axis=(-2, -1))
    kernel = np.array([[0.5, -0.25], [0.25, 1.0]])
    conv = np.einsum("ijkl,kl->ij", patches, kernel)
    return np.sum(np.sqrt(energy + 0.1)) + np.sum(pooled * conv)


@program(SERIES[:7], hessian=True, nested=True, refuses=AS_STRIDED)
def autoregression_design_by_as_strided(x):
    step = x.strides[0]
    lagged = as_strided(x, shape=(x.size - 2, 3), strides=(step, step), writeable=False)
    X, y = lagged[:, :2], lagged[:, 2]
    coef = np.linalg.solve(X.T @ X + 0.1 * np.eye(2), X.T @ y)
    return np.sum((X @ coef - y) ** 2) + np.sum(coef**2)


@program(np.array([1.0, 0.4, 0.2, -0.1, 0.3]), refuses=AS_STRIDED)
def hankel_log_determinant_by_as_strided(h):
    n = 3
    H = as_strided(h, shape=(n, n), strides=(h.strides[0], h.strides[0]), writeable=False)
    return np.linalg.slogdet(H @ H.T + np.eye(n))[1]


# ----- grouping, sorting, selecting ---------------------------------------------------------------


@program(SERIES, hessian=True, nested=True)
def group_means_by_unique_inverse(values):
    groups, inverse, counts = np.unique(LABELS, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=values, minlength=groups.size)
    means = sums / counts
    within = values - means[inverse]
    return np.sum(within**2) + np.sum(means**2 * groups)


@program(
    SERIES,
    refuses={
        "source": "ufunc.at(a, idx, v)",
        "tape": "np.add.at(...) writes into an array in place",
        "forward": "np.add.at(...)",
    },
)
def group_sums_by_add_at(values):
    _, inverse = np.unique(LABELS, return_inverse=True)
    sums = np.zeros(3)
    np.add.at(sums, inverse, values)
    return np.sum(sums**2) + sums[0] * sums[2]


@program(np.array([0.7, -0.3, 1.4, 0.2, 0.9, -1.1]), hessian=True)
def lexsorted_within_group_ranks(scores):
    groups = np.array([1, 0, 1, 0, 1, 0])
    order = np.lexsort((scores, groups))
    ranked = scores[order]
    weights = np.array([0.1, 0.2, 0.7, 0.1, 0.2, 0.7])
    return np.sum(weights * ranked) + np.sum(ranked[1:] * ranked[:-1])


@program(RNG.normal(size=(3, 5)), hessian=True, nested=True)
def trimmed_row_means_by_stable_argsort(x):
    idx = np.argsort(x, axis=1, kind="stable")
    ordered = np.take_along_axis(x, idx, axis=1)
    trimmed = ordered[:, 1:-1].mean(axis=1)
    spread = ordered[:, -1] - ordered[:, 0]
    return np.sum(trimmed**2) + np.sum(np.log1p(spread**2))


@program(RNG.normal(size=(3, 4)), refuses=in_place("np.put_along_axis(a, idx, v, axis)", "numpy.put_along_axis"))
def top_entry_kept_by_put_along_axis(x):
    idx = np.argmax(x, axis=1)[:, None]
    top = np.take_along_axis(x, idx, axis=1)
    kept = np.zeros_like(x)
    np.put_along_axis(kept, idx, np.exp(top), axis=1)
    return np.sum(kept * x) + np.sum(kept**2)


@program(np.array([0.4, -0.8, 1.3, 0.2]), np.array([1.1, 0.6, -0.2, 0.9]), hessian=True)
def regime_choice_by_np_choose(a, b):
    regime = np.array([0, 2, 1, 0])
    c = a * b
    picked = np.choose(regime, [a, b, c])
    return np.sum(picked**2) + np.sum(np.sin(picked) * a)


@program(np.array([-1.3, -0.4, 0.35, 0.8, 1.7, 2.6]), hessian=True, nested=True)
def huber_like_loss_by_np_select(r):
    small = np.abs(r) < 0.5
    medium = (np.abs(r) >= 0.5) & (np.abs(r) < 2.0)
    loss = np.select([small, medium], [0.5 * r**2, np.abs(r) - 0.125 + 0.1 * r**3], default=np.log(r**2))
    return np.sum(loss)


@program(np.array([-1.2, -0.3, 0.4, 1.1, 2.3]), hessian=True)
def softplus_pieces_by_np_piecewise(x):
    y = np.piecewise(
        x,
        [x < 0, (x >= 0) & (x < 1.5), x >= 1.5],
        [lambda t: np.log1p(np.exp(t)), lambda t: np.log(2.0) + 0.5 * t + t**2 / 8, lambda t: t * 1.1 - 0.2],
    )
    return np.sum(y**2) + np.sum(y * x)


@program(
    RNG.normal(size=(4, 3)),
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER},
)
def row_norms_by_vectorize_with_signature(X):
    def soft_norm(v):
        return np.sqrt(np.sum(v**2) + 0.5)

    norms = np.vectorize(soft_norm, signature="(n)->()")(X)
    return np.sum(norms**2) + np.prod(norms)


@program(np.array([0.4, 1.2, -0.7]), refuses=no_rule("<lambda> (vectorized)"))
def elementwise_python_function_by_frompyfunc(x):
    f = np.frompyfunc(lambda a, b: a * b + np.sin(a), 2, 1)
    y = f(x, np.array([1.0, 2.0, 3.0])).astype(float)
    return np.sum(y**2)


@program(
    SERIES, refuses={"source": "numpy.ma.MaskedArray", "tape": ARRAY_OF_TRACKED, "forward": "would drop its derivative"}
)
def masked_array_statistics(x):
    m = np.ma.masked_array(x, mask=SERIES < 0)
    return float(m.mean()) + float((m**2).sum())


@program(np.array([0.9, 0.3, 1.2, -0.2, 0.4, 0.8]), hessian=True, nested=True, refuses=BUFFER_ON_TAPE)
def cholesky_parametrised_gaussian_by_tril_indices(theta):
    L = np.zeros((3, 3))
    L[np.tril_indices(3)] = theta
    cov = L @ L.T + 0.1 * np.eye(3)
    data = np.array([[0.3, -0.2, 0.5], [1.0, 0.4, -0.3], [-0.6, 0.2, 0.1]])
    sol = np.linalg.solve(cov, data.T)
    return 1.5 * np.linalg.slogdet(cov)[1] + 0.5 * np.sum(data.T * sol)


@program(RNG.normal(size=(4, 2)), hessian=True, nested=True)
def pairwise_energy_by_triu_indices(points):
    diff = points[:, None, :] - points[None, :, :]
    dist2 = np.sum(diff**2, axis=-1)
    i, j = np.triu_indices(points.shape[0], k=1)
    r = np.sqrt(dist2[i, j])
    return np.sum(1.0 / r) + np.sum(r**2)


@program(np.array([0.5, -0.2, 0.8]), hessian=True)
def ridge_by_diag_indices(x):
    A = np.outer(x, x) + np.diag(np.array([1.0, 2.0, 3.0]))
    B = A.copy()
    B[np.diag_indices(3)] += x**2
    return np.linalg.slogdet(B)[1] + np.sum(np.linalg.inv(B) @ x)


@program(RNG.normal(size=(4, 2)), 0.3, refuses=in_place("np.fill_diagonal(a, v)", "numpy.fill_diagonal"))
def kernel_matrix_with_fill_diagonal(points, noise):
    d2 = np.sum((points[:, None, :] - points[None, :, :]) ** 2, axis=-1)
    K = np.exp(-0.5 * d2)
    K = K.copy()
    np.fill_diagonal(K, 1.0 + noise**2)
    y = np.array([0.3, -0.1, 0.8, 0.2])
    return y @ np.linalg.solve(K, y) + np.linalg.slogdet(K)[1]


@program(SERIES[:4], hessian=True)
def periodic_extension_by_tile(x):
    ext = np.tile(x, 3)
    grid = np.tile(x[:, None], (1, 2))
    return np.sum(ext * np.arange(12.0)) + np.sum(np.diff(ext) ** 2) + np.sum(grid**3 * np.array([1.0, -0.5]))


@program(np.array([0.4, -0.3, 1.2]), np.array([0.5, 1.5, -0.7, 0.2]), hessian=True)
def outer_sum_by_broadcast_to(a, b):
    A = np.broadcast_to(a[:, None], (3, 4))
    B = np.broadcast_to(b, (3, 4))
    return np.sum(np.tanh(A + B)) + np.sum(A * B**2)


@program(SERIES, hessian=True, nested=True)
def chunked_means_by_array_split(x):
    chunks = np.array_split(x, 4)
    means = np.stack([c.mean() for c in chunks])
    halves = np.split(x[:8], [3, 5])
    return np.sum(means**2) + sum(np.sum(h) * (k + 1) for k, h in enumerate(halves))


@program(RNG.normal(size=(2, 3, 4)), hessian=True)
def axis_moves_and_flips(t):
    a = np.moveaxis(t, 0, -1)
    b = np.swapaxes(t, 1, 2)
    c = np.rot90(t[0], k=1)
    d = np.flip(t, axis=(1, 2))
    return np.sum(a[..., 0] * b[0].T) + np.sum(c * t[1].T[::-1]) + np.sum(d * t**2) + np.sum(t[:, ::-1, ::-2] ** 3)


# ----- linear algebra ------------------------------------------------------------------------------


@program(NONSYMMETRIC, hessian=True, nested=True)
def eigenvalues_of_a_nonsymmetric_matrix(A):
    w, V = np.linalg.eig(A)
    c = np.array([1.0, -0.5, 0.3])
    projections = (V.T @ c) ** 2
    return np.sum(w.real**3) + np.max(w.real) + np.sum(projections * np.arange(1.0, 4.0))


@program(np.array([[0.5, -1.2], [0.8, 0.3]]), hessian=True)
def complex_eigenvalues_of_a_rotation_like_matrix(A):
    w = np.linalg.eigvals(A)
    return np.sum(np.abs(w) ** 2) + np.sum(w.imag**2) + np.real(np.prod(w))


@program(RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)), hessian=True)
def chain_of_products_by_multi_dot(A, B):
    C = np.array([[0.5, -0.1, 0.3], [0.2, 0.4, -0.6]])
    M = np.linalg.multi_dot([A, B, C, A])
    return np.sum(M**2) + np.trace(M[:, :3])


@program(np.eye(4).reshape(2, 2, 2, 2) * 2.0 + 0.1 * RNG.normal(size=(2, 2, 2, 2)), hessian=True)
def tensor_solve_and_inverse(T):
    b = np.array([[1.0, -0.5], [0.3, 0.8]])
    x = np.linalg.tensorsolve(T, b)
    Tinv = np.linalg.tensorinv(T, ind=2)
    return np.sum(x**2) + np.sum(Tinv * T)


@program(np.array([[0.6, 0.3], [-0.2, 0.7]]), hessian=True, nested=True)
def markov_powers_by_matrix_power(A):
    p0 = np.array([1.0, 0.5])
    total = sum(p0 @ np.linalg.matrix_power(A, k) @ p0 for k in range(5))
    return total + np.sum(np.linalg.matrix_power(A, -2))


@program(np.array([[1.2, 0.3], [0.1, 0.9]]), np.array([[0.5, -0.2], [0.4, 1.1]]), hessian=True)
def kronecker_system(A, B):
    K = np.kron(A, B)
    rhs = np.arange(1.0, 5.0)
    return np.sum(np.linalg.solve(K, rhs)) + np.sum(np.kron(A[0], B[:, 1]) ** 2)


@program(RNG.normal(size=(2, 2)), RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), hessian=True)
def block_matrix_schur_determinant(A, B, D):
    M = np.block([[A @ A.T + 2 * np.eye(2), B], [B.T, np.eye(3) * 3 + D @ D.T * 0.1]])
    return np.linalg.slogdet(M)[1] + np.sum(np.linalg.solve(M, np.ones(5)))


@program(RNG.normal(size=(4, 4)), hessian=True)
def submatrix_by_ix(A):
    rows, cols = np.array([0, 2, 3]), np.array([1, 3])
    S = A[np.ix_(rows, cols)]
    G = S.T @ S + np.eye(2)
    return np.linalg.slogdet(G)[1] + np.sum(A[np.ix_([1, 2], [0, 2])] ** 3)


@program(RNG.normal(size=(3, 3)), np.array([0.4, -0.2, 0.7]), hessian=True, nested=True)
def einsum_with_optimize(W, v):
    X = np.array([[0.3, 0.1, -0.2], [0.5, -0.4, 0.9], [0.2, 0.8, 0.1], [-0.6, 0.3, 0.4]])
    quad = np.einsum("ni,ij,jk,nk->n", X, W, W.T, X, optimize=True)
    bil = np.einsum("i,ij,j->", v, W, v, optimize="greedy")
    return np.sum(np.log1p(quad**2)) + bil**2


@program(np.array([0.3, -0.5, 0.8, 1.1, -0.2, 0.4]), hessian=True)
def outer_product_of_strided_views(x):
    even, odd = x[::2], x[1::2]
    M = np.outer(even, odd[::-1])
    return np.sum(M**2) + np.trace(M) + np.linalg.det(M + np.eye(3))


@program(np.array([1.0, 0.2, -0.3]), np.array([0.4, 1.1, 0.5]), hessian=True)
def torque_by_cross(r, f):
    tau = np.cross(r, f)
    stacked = np.cross(np.stack([r, f]), np.array([0.0, 0.0, 1.0]))
    return np.sum(tau**2) + np.sum(stacked * r)


# ----- ufunc methods ------------------------------------------------------------------------------


@program(RNG.normal(size=(3, 4)), hessian=True, nested=True)
def ufunc_reduce_and_accumulate(x):
    col = np.add.reduce(x, axis=0)
    prod = np.multiply.reduce(x + 2.0, axis=1)
    run = np.multiply.accumulate(1.0 + 0.1 * x, axis=1)
    return np.sum(col**2) + np.sum(np.log(np.abs(prod))) + np.sum(run[:, -1])


@program(np.array([0.3, 0.9, 0.5, 1.4, 1.1, 2.0]), hessian=True)
def running_maximum_by_maximum_accumulate(x):
    peak = np.maximum.accumulate(x)
    drawdown = peak - x
    return np.sum(drawdown**2) + np.sum(peak * x)


@program(SERIES, hessian=True, nested=True)
def segment_sums_by_add_reduceat(x):
    starts = np.array([0, 2, 5, 7])
    seg = np.add.reduceat(x, starts)
    return np.sum(seg**2) + np.sum(np.exp(0.2 * seg))


@program(
    np.array([0.2, 0.9, -0.4]), np.array([0.5, -0.6, 1.3, 0.1]), hessian=True
)
def pairwise_gaps_by_subtract_outer(a, b):
    gaps = np.subtract.outer(a, b)
    prods = np.multiply.outer(a, b)
    return np.sum(np.exp(-(gaps**2))) + np.sum(prods**2)


@program(np.array([0.4, -1.2, 2.1, 0.3, 0.7]), hessian=True, nested=True)
def log_partition_by_logaddexp_reduce(z):
    logz = np.logaddexp.reduce(z)
    cum = np.logaddexp.accumulate(z)
    return logz + 0.1 * np.sum(cum)


# ----- NaN-aware reductions -----------------------------------------------------------------------


@program(np.array([1.0, 0.5, -0.3]), hessian=True, nested=True)
def nan_aware_column_statistics(w):
    # the missing entries put back by np.where, not multiplied: the nan-reductions give them a zero
    # cotangent, and 0 * NaN in a product's pullback is NaN (docs/engines.md, cut-off values)
    missing = np.isnan(WITH_NANS)
    scaled = np.where(missing, np.nan, np.where(missing, 0.0, WITH_NANS) * w)
    s = np.nansum(scaled, axis=0)
    m = np.nanmean(scaled, axis=1)
    top = np.nanmax(scaled, axis=0)
    return np.sum(s**2) + np.sum(m**3) + np.sum(top) + np.nanstd(scaled)


@program(np.array([0.6, 1.4, 0.9]), hessian=True)
def nan_weighted_product_and_cumulative(w):
    data = WITH_NANS[0] + w
    return np.nanprod(data + 2.0) + np.sum(np.nancumsum(data) ** 2) + np.nanvar(WITH_NANS[:, 1] + w**2)


# ----- writes into copies -------------------------------------------------------------------------


@program(np.array([-1.2, 0.4, -0.3, 1.7, 0.9, -0.6]), hessian=True)
def leaky_relu_by_boolean_mask_assignment(x):
    y = x.copy()
    neg = y < 0
    y[neg] = 0.1 * y[neg]
    return np.sum(y**2 * np.arange(1.0, 7.0)) + np.sum(y * x)


@program(np.array([-1.2, 0.4, -0.3, 1.7]), refuses=in_place("np.copyto(dst, src)", "numpy.copyto"))
def clamped_copy_by_copyto(x):
    out = np.exp(x)
    np.copyto(out, x**2, where=x < 0)
    return np.sum(out * x)


@program(np.array([-1.2, 0.4, -0.3, 1.7]), refuses=in_place("np.putmask(a, mask, v)", "numpy.putmask"))
def negative_entries_replaced_by_putmask(x):
    out = x * 2.0
    np.putmask(out, x < 0, x**3)
    return np.sum(out**2)


@program(np.array([-1.2, 0.4, -0.3, 1.7]), refuses=in_place("np.place(a, mask, v)", "numpy.place"))
def negative_entries_replaced_by_place(x):
    out = np.sin(x)
    np.place(out, x < 0, np.array([0.5, 0.7]) * x[x < 0])
    return np.sum(out**2)


@program(np.array([0.3, -0.5, 0.8]), hessian=True)
def cyclic_resize(x):
    y = np.resize(x, 7)
    z = np.resize(x, (2, 4))
    return np.sum(y * np.arange(7.0)) + np.sum(z[0] * z[1]) + np.sum(y**3)


@program(np.array([0.3, -0.5, 0.8, 1.2]), hessian=True, nested=True)
def concatenate_flat_and_append(x):
    M = np.outer(x[:2], x[2:])
    flat = np.concatenate([x, M, x[::-1, None]], axis=None)
    return np.sum(flat**2 * np.linspace(0.5, 1.5, flat.size)) + np.sum(np.append(x, M) ** 3)


# ----- differences, derivatives, integrals --------------------------------------------------------


@program(np.array([0.2, 0.7, 0.5, 1.3, 1.1]), hessian=True)
def differences_with_prepend_and_append(x):
    d = np.diff(x, prepend=0.0, append=x[0])
    d2 = np.diff(x, n=2, prepend=np.array([0.1, 0.2]))
    e = np.ediff1d(x, to_begin=x[-1], to_end=np.array([0.5, -0.5]))
    return np.sum(d**2) + np.sum(d2**3) + np.sum(e * np.arange(e.size))


@program(
    np.array([0.0, 0.35, 0.8, 1.1, 1.7, 2.0]),
    hessian=True,
    nested=True,
    refuses=dict.fromkeys(("source", "tape", "forward"), GRADIENT_IN_COORDINATES),
)
def second_order_gradient_on_a_nonuniform_grid(t):
    y = np.sin(t) * t
    dy = np.gradient(y, t, edge_order=2)
    dy_uniform = np.gradient(y, 0.25, edge_order=2)
    return np.sum(dy**2) + np.sum(dy_uniform * y)


@program(IMAGE, hessian=True)
def gradient_of_an_image_with_spacings(img):
    gy, gx = np.gradient(img, 0.5, 2.0)
    return np.sum(gx**2 + gy**2) + np.sum(gx * gy * img)


@program(np.array([0.0, 0.4, 0.9, 1.5, 2.2]), hessian=True, nested=True)
def trapezoid_with_differentiated_nodes(x):
    y = np.exp(-x) * np.cos(x)
    area = np.trapezoid(y, x)
    moment = np.trapezoid(y * x, x=x)
    return area**2 + moment + np.trapezoid(y, dx=0.3)


@program(np.array([0.0, 0.8, 1.5, 2.5]), np.array([1.0, 0.3, -0.2, 0.6]), hessian=True)
def interpolation_table_differentiated(xp, fp):
    x = np.array([0.2, 0.5, 1.0, 1.9, 2.3])
    y = np.interp(x, xp, fp)
    return np.sum(y**2) + np.sum(y * x)


# ----- polynomials --------------------------------------------------------------------------------


@program(
    np.array([0.5, -1.2, 0.3, 2.0]),
    hessian=True,
    nested=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},  # (np.polyval has a rule)
)
def polynomial_evaluations_three_ways(c):
    x = np.linspace(-1.0, 1.0, 5)
    a = np.polyval(c, x)
    b = P.polyval(x, c)
    p = Polynomial(c)
    return np.sum(a**2) + np.sum(b * a) + np.sum(p(x) ** 2)


@program(np.array([0.5, -1.2, 0.3, 2.0]), hessian=True, refuses=SERIES_CLASS)
def polynomial_object_calculus(c):
    p = Polynomial(c)
    dp = p.deriv()
    area = p.integ()(1.0) - p.integ()(-1.0)
    x = np.array([-0.5, 0.25, 0.8])
    return area**2 + np.sum(dp(x) ** 2) + np.sum((p * p)(x))


@program(np.array([0.4, -0.8, 0.5, 0.3]), hessian=True, nested=True, refuses=SERIES_CLASS)
def chebyshev_and_legendre_series_on_a_domain(c):
    x = np.linspace(0.0, 4.0, 6)
    p = Chebyshev(c, domain=[0.0, 4.0])
    q = Legendre(c[::-1] * 0.5, domain=[0.0, 4.0])
    curvature = p.deriv(2)(x)
    mass = p.integ(lbnd=0.0)(4.0)
    mix = (2.0 * p - p * c[1] + 1.0)(x)
    return np.sum(curvature**2) + mass**2 + np.sum(mix * q(x)) + np.sum((q - 0.5 * q).coef ** 2)


@program(np.array([0.2, 1.1, 1.9, 3.2, 3.8, 5.1]), hessian=True)
def quadratic_fit_by_polyfit(y):
    t = np.arange(6.0)
    coef = np.polyfit(t, y, 2)
    resid = y - np.polyval(coef, t)
    return np.sum(resid**2) + coef[0] ** 2 + np.sum(coef * np.array([1.0, 2.0, 3.0]))


@program(np.array([1.0, -0.4, 0.3]), hessian=True, refuses=LIBRARY_NO_RULE)
def polynomial_roots_and_products(c):
    r = P.polyroots(np.array([-2.0, 0.5, 1.0]) * c)
    prod = P.polymul(c, np.array([1.0, 2.0]))
    return np.sum(r**2) + np.sum(prod**2)


# ----- spectra ------------------------------------------------------------------------------------


@program(IMAGE, hessian=True, nested=True)
def smoothing_by_rfft2_and_irfft2(img):
    F = np.fft.rfft2(img)
    ky = np.fft.fftfreq(4)[:, None]
    kx = np.fft.rfftfreq(4)[None, :]
    smooth = np.fft.irfft2(F * np.exp(-4.0 * (kx**2 + ky**2)), s=img.shape)
    return np.sum((smooth - img) ** 2) + np.sum(np.abs(F) ** 2) * 0.01 + np.sum(smooth**3)


@program(SERIES[:8], hessian=True)
def zero_padded_irfft_interpolation(x):
    X = np.fft.rfft(x)
    fine = np.fft.irfft(X, n=16) * 2.0
    return np.sum(fine**2) + np.sum(fine[::2] * x)


# ----- rounding, indexing by value ----------------------------------------------------------------


@program(np.array([0.37, 1.62, 2.28, 3.91]), hessian=True)
def fractional_parts_by_floor_and_round(x):
    frac = x - np.floor(x)
    nearest = np.round(x * 2.0) / 2.0
    bucket = np.floor(x).astype(int)
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    return np.sum(frac**2) + np.sum((x - nearest) ** 3) + np.sum(weights[bucket] * x**2)


@program(
    np.array([0.13, 0.58, 0.91, 0.34]),
    np.array([0.5, 1.5, -0.5, 2.0]),
    hessian=True,
)
def lookup_table_by_digitize(x, table):
    edges = np.array([0.25, 0.5, 0.75])
    idx = np.digitize(x, edges)
    left = np.concatenate([[0.0], edges])[idx]
    return np.sum(table[idx] * (x - left) ** 2) + np.sum(table**2)


@program(np.array([0.13, 0.58, 0.91, 0.34]), hessian=True)
def histogram_with_differentiated_weights(w):
    samples = np.array([0.1, 0.3, 0.45, 0.8])
    counts, _ = np.histogram(samples, bins=3, range=(0.0, 1.0), weights=w)
    return np.sum(counts**2) + np.sum(np.searchsorted(np.array([0.2, 0.6]), samples) * w)


@program(np.array([0.4, 1.7, -0.3, 0.9]), hessian=True, nested=True)
def softmax_attention_at_argmax(scores):
    k = np.argmax(scores)
    p = np.exp(scores - scores[k])
    p = p / p.sum()
    return np.log(p[k]) + np.sum(p * scores) + scores[k] ** 2


@program(np.array([0.4, 1.7, -0.3, 0.9, 2.2]), hessian=True)
def take_with_wrap_and_clip_modes(x):
    idx = np.array([-1, 3, 6, 7])
    a = np.take(x, idx, mode="wrap")
    b = np.take(x, idx, mode="clip")
    return np.sum(a * b) + np.sum(np.compress(x > 0.5, x) ** 2) + np.sum(np.extract(x < 0.5, x) ** 3)


@program(np.array([0.4, 1.7, -0.3, 0.9, 2.2]), hessian=True)
def top_three_mean_by_partition(x):
    part = np.partition(x, -3)
    top = part[-3:]
    return np.mean(top) ** 2 + np.sum(np.sort(x, kind="stable")[:2] ** 2)


@program(np.array([0.4, 1.7, -0.3, 0.9, 2.2]), hessian=True)
def insert_and_delete_entries(x):
    y = np.insert(x, 2, x[0] * x[1])
    z = np.delete(y, [0, 4])
    return np.sum(y**2) + np.sum(z * np.arange(z.size))


# ----- float32 and complex inputs -----------------------------------------------------------------


@program(np.array([0.3, -0.7, 1.1, 0.4], dtype=np.float32), rtol=3e-3, hessian=True)
def float32_windows_and_accumulate(x):
    w = sliding_window_view(x, 2).sum(axis=-1)
    c = np.multiply.accumulate(np.float32(1.0) + np.float32(0.1) * x)
    return np.sum(w**2) + np.sum(c) + np.sum(np.tile(x, 2)[::-1] * np.arange(8, dtype=np.float32))


@program(np.array([[0.6, 0.2], [-0.1, 0.8]], dtype=np.float32), rtol=3e-3)
def float32_eigenvalues_and_kron(A):
    w = np.linalg.eigvals(A + A.T)
    K = np.kron(A, np.eye(2, dtype=np.float32))
    return np.sum(w.real**2) + np.sum(K**3)


@program(0.8, np.array([0.5 + 0.2j, -0.3 + 0.7j, 1.1 - 0.4j]), hessian=True)
def complex_input_through_real_if_close(s, z):
    z = z * np.exp(1j * s)
    y = z * np.conj(z) * s
    r = np.real_if_close(y)
    phase = np.angle(z[::-1])
    return np.sum(np.real(r) ** 2) + np.sum(phase**2) + np.real(np.sum(np.cumprod(z)))


@program(np.array([0.7, -0.4, 1.2, 0.3]), np.array([0.5 + 0.2j, -0.3 + 0.7j, 1.1 - 0.4j, 0.2 + 0.1j]), hessian=True)
def complex_signal_through_moveaxis_and_flip(gains, z):
    z = z * gains
    Z = z.reshape(2, 2)
    W = np.moveaxis(np.flip(Z, axis=0), 0, 1)
    spec = np.fft.fft(np.concatenate([z, np.conj(z[::-1])]))
    return np.sum(np.abs(W @ Z) ** 2) + np.sum(spec.real**2) + np.sum(np.abs(np.kron(Z, Z)))


# ----- apply_along_axis, cumulative products, outer of series --------------------------------------


@program(RNG.normal(size=(3, 4)), hessian=True)
def per_row_softmax_entropy_by_apply_along_axis(x):
    def entropy(row):
        p = np.exp(row - row.max())
        p = p / p.sum()
        return -np.sum(p * np.log(p))

    h = np.apply_along_axis(entropy, 1, x)
    z = np.apply_along_axis(lambda col: col / np.linalg.norm(col), 0, x)
    return np.sum(h**2) + np.sum(z[0] * z[-1])


@program(np.array([0.05, 0.12, 0.08, 0.2, 0.15]), hessian=True, nested=True)
def survival_curve_by_cumprod(hazard):
    survival = np.cumprod(1.0 - hazard)
    expected_life = np.sum(survival)
    density = hazard * np.concatenate([[1.0], survival[:-1]])
    return expected_life + np.sum(density * np.arange(1.0, 6.0)) + np.log(survival[-1])


@program(np.array([0.3, -0.5, 0.8, 1.2]), hessian=True)
def tril_and_triu_with_offsets(x):
    M = np.outer(x, np.arange(1.0, 5.0)) + np.eye(4)
    lower = np.tril(M, k=-1)
    upper = np.triu(M, k=1)
    return np.sum(lower @ upper) + np.trace(M, offset=1) ** 2 + np.sum(np.diagonal(M, offset=-2) ** 2)


@program(np.array([0.3, -0.5, 0.8]), np.array([1.2, 0.4]), hessian=True)
def sparse_meshgrid_field(x, y):
    X, Y = np.meshgrid(x, y, sparse=True, indexing="ij")
    field = np.sin(X) * np.cos(Y) + X * Y**2
    return np.sum(field**2) + np.sum(np.atleast_2d(x) @ field)


@program(np.array([0.3, -0.5, 0.8]), hessian=True)
def vandermonde_least_squares(x):
    V = np.vander(np.array([0.1, 0.4, 0.7, 1.0]), 3, increasing=True)
    y = V @ x
    coef, *_ = np.linalg.lstsq(V, y**2, rcond=None)
    return np.sum(coef**2) + np.sum(np.vecdot(V, V[::-1]) * y)


@program(np.array([[1.1, 0.3], [0.2, 0.9]]), hessian=True)
def norms_of_several_orders(A):
    return (
        np.linalg.norm(A, "fro") ** 2
        + np.linalg.norm(A, 2)
        + np.linalg.norm(A, "nuc")
        + np.linalg.norm(A, 1)
        + np.linalg.norm(A.ravel(), 3)
    )


@program(np.array([1.5, -2.5, 3.25]), hessian=True)
def mantissa_and_exponent_by_frexp(x):
    m, e = np.frexp(x)
    back = np.ldexp(m, e)
    return np.sum(m**2) + np.sum(back * x) + np.sum(np.heaviside(x, 0.5) * x**2)


# ----- in-place calls on a part of an array the function made -------------------------------------


@program(SERIES, hessian=True, refuses=FILL)
def warm_up_discarded_by_fill_on_a_slice(x):
    y = np.cumsum(x) * 0.5
    y[:3].fill(0.0)
    return np.sum(y**2) + np.sum(y * x)


@program(SERIES, hessian=True, refuses=FILL)
def burn_in_window_zeroed_through_a_named_view(x):
    y = np.tanh(x) + 0.1 * x**2
    burn_in = y[2:5]
    burn_in.fill(0.0)
    return np.sum(y * np.arange(1.0, 10.0)) + np.sum(y**3)


@program(SERIES, refuses={"source": "`a.sort()` changes", "tape": "x.sort() writes", "forward": "numpy.ndarray.sort"})
def tail_sorted_in_place(x):
    y = x * np.linspace(1.0, 2.0, 9)
    y[4:].sort()
    return np.sum(y * np.arange(1.0, 10.0)) + np.sum(y**2)


@program(
    SERIES,
    refuses={
        "source": "`np.copyto(dst, src)` changes",
        "tape": "no differentiation rule for numpy.copyto",
        "forward": "numpy.copyto",
    },
)
def edge_samples_replaced_by_copyto_on_a_slice(x):
    y = np.exp(0.3 * x)
    np.copyto(y[:2], x[-2:] ** 2)
    return np.sum(y * np.arange(1.0, 10.0))


@program(SERIES, refuses=in_place("np.putmask(a, mask, v)", "numpy.putmask"))
def negative_head_zeroed_by_putmask_on_a_slice(x):
    y = x * 2.0 + 0.1
    np.putmask(y[:5], y[:5] < 0, 0.0)
    return np.sum(y**2 * np.arange(1.0, 10.0))


@program(
    SERIES,
    refuses={
        "source": "writes its result into an existing array",
        "tape": "out= writes into an existing array",
        "forward": "out= writes into an existing array",
    },
)
def head_clipped_in_place_by_out(x):
    y = x * 1.5
    np.clip(y[:4], -0.5, 0.5, out=y[:4])
    return np.sum(y * np.arange(1.0, 10.0)) + np.sum(y**2)


@program(np.array([0.4, -1.1, 0.8]), np.array([0.9, 0.3, -0.6]), refuses={"source": "assigning to an attribute"})
def rectified_real_part_assigned_to_real(re, im):
    z = re + 1j * im
    z.real = np.abs(z.real) + 0.1
    return np.sum(np.abs(z) ** 2) + np.sum(np.angle(z))


# ----- more NumPy functions without rules ---------------------------------------------------------


@program(np.array([0.4, 1.7, -0.3, 0.9]), hessian=True)
def peak_of_a_series_with_gaps_by_nanargmax(x):
    gaps = np.array([0.0, 0.0, np.nan, 0.0])
    k = np.nanargmax(x + gaps)
    return x[k] ** 2 + np.nanmean(x + gaps) * 3.0


@program(
    np.array([0.2, 0.9, -0.4]), np.array([0.5, -0.6, 1.3]), hessian=True
)
def bilinear_form_by_multiply_outer(a, b):
    M = np.multiply.outer(a, b)
    return np.sum(M * np.array([[1.0, 0.5, 0.2], [0.5, 2.0, 0.1], [0.2, 0.1, 3.0]])) + np.sum(M**2)


@program(np.array([0.7, -0.3, 1.4, 0.2]), hessian=True)
def sorted_distinct_levels_by_unique(x):
    levels = np.unique(x)
    return np.sum(levels * np.arange(1.0, 5.0)) + np.sum(np.diff(levels) ** 2)


@program(np.array([0.7, -0.3, 1.4]), np.array([0.5, 2.0]), hessian=True)
def grid_of_products_by_broadcast_arrays(x, y):
    X, Y = np.broadcast_arrays(x[:, None], y[None, :])
    return np.sum(np.sin(X) * Y**2) + np.sum(X * Y)


@program(np.array([0.5, 1.3, -0.4, 0.8]), hessian=True)
def weighted_two_dimensional_histogram(w):
    xs = np.array([0.1, 0.6, 0.8, 0.3])
    ys = np.array([0.2, 0.3, 0.9, 0.7])
    H, _, _ = np.histogram2d(xs, ys, bins=2, range=[[0.0, 1.0], [0.0, 1.0]], weights=w)
    return np.sum(H**2) + np.sum(H * np.array([[1.0, 2.0], [3.0, 4.0]]))


@program(np.array([0.5, -1.0, 2.0, 0.3]), hessian=True)
def padding_by_the_edge_mean(x):
    padded = np.pad(x, 2, mode="mean")
    return np.sum(padded * np.arange(8.0)) + np.sum(padded**2)


@program(np.array([0.5, -1.0, 2.0, 0.3]), hessian=True)
def periodic_interpolation_of_a_daily_cycle(fp):
    hours = np.array([0.0, 6.0, 12.0, 18.0])
    t = np.array([3.0, 22.5, 25.0, 13.0])
    y = np.interp(t, hours, fp, period=24.0)
    return np.sum(y**2) + np.sum(y * t)


@program(np.array([0.5, -1.0, 2.0, 0.3, 1.4]), hessian=True)
def median_unbiased_percentiles(x):
    return np.percentile(x, 30.0, method="median_unbiased") ** 2 + np.percentile(x**2, 70.0, method="weibull")


@program(RNG.normal(size=(3, 2)), hessian=True, refuses=no_rule("numpy.average"))
def weighted_average_with_its_weight_sum(x):
    avg, total = np.average(x, axis=0, weights=np.array([1.0, 2.0, 3.0]), returned=True)
    return np.sum(avg**2) + np.sum(total * avg)


@program(RNG.normal(size=(2, 3)), hessian=True, refuses=no_rule("builtins.getattr"))
def entries_read_through_flat(x):
    return x.flat[4] * x.flat[0] + np.sum(x.T.flat[1:4] ** 2)


@program(np.array([0.5, 1.3]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def constant_blocks_by_full(x):
    A = np.full((2, 3), x[0])
    return np.sum(A * x[1]) + np.sum(np.full_like(x, x[1]) ** 2) + np.sum(A**3)
