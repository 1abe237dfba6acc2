"""A ninth corpus of whole programs: numerical code as scientists write it. Spectral methods with
``np.fft`` (spectral derivatives, circular convolution, power spectra, 2-d low-pass filters, a
Poisson solver), complex intermediates (phases, magnitudes, complex matrix products, a real loss
of complex values), float32 end to end, ``np.einsum`` with many subscripts, ellipsis and repeated
indices, broadcasting with ``keepdims`` and axis tuples, norms, sorting and selection, quantiles,
interpolation, ``scipy.stats`` densities with their parameters differentiated, ``scipy.signal``
convolutions, running sums and products, quadrature, clipping, polynomial fits.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from program_checks import SCIPY_WRAPPER, new_corpus

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(909)
SIGNAL = np.array([0.3, 1.1, -0.4, 0.8, 1.6, -0.9, 0.2, 0.5])
IMAGE = np.array(
    [
        [0.2, 0.9, -0.3, 0.4],
        [1.1, -0.5, 0.7, 0.1],
        [-0.2, 0.6, 0.8, -0.7],
        [0.5, 0.3, -0.1, 1.2],
    ]
)

# ----- spectral methods ---------------------------------------------------------------------------


@program(np.sin(np.linspace(0.0, 2 * np.pi, 8, endpoint=False)) + 0.3 * SIGNAL, hessian=True, nested=True)
def spectral_derivative_of_a_periodic_field(u):
    n = u.size
    k = 2 * np.pi * np.fft.rfftfreq(n, d=2 * np.pi / n)
    du = np.fft.irfft(1j * k * np.fft.rfft(u), n=n)
    d2u = np.fft.irfft(-(k**2) * np.fft.rfft(u), n=n)
    return np.sum(du**2) + np.sum(u * d2u) + np.sum(u**3 * du)


@program(SIGNAL, np.array([0.5, 0.3, 0.2, 0.0, 0.0, 0.0, 0.0, 0.1]), hessian=True)
def circular_convolution_by_fft(x, h):
    y = np.fft.ifft(np.fft.fft(x) * np.fft.fft(h)).real
    target = np.roll(x, 1)
    return np.sum((y - target) ** 2) + 0.1 * np.sum(y**4)


@program(np.concatenate([SIGNAL, SIGNAL[::-1] * 0.7, SIGNAL * 0.4]), hessian=True, nested=True)
def averaged_periodogram(x):
    seg, hop = 8, 4
    window = np.hanning(seg)
    frames = np.stack([x[i : i + seg] * window for i in range(0, x.size - seg + 1, hop)])
    spectra = np.abs(np.fft.rfft(frames, axis=-1)) ** 2 / np.sum(window**2)
    psd = spectra.mean(axis=0)
    freqs = np.fft.rfftfreq(seg)
    centroid = np.sum(freqs * psd) / np.sum(psd)
    return centroid + 0.01 * np.sum(np.log(psd + 1.0))


@program(IMAGE, hessian=True, nested=True)
def low_pass_image_filter_with_fftshift(img):
    F = np.fft.fftshift(np.fft.fft2(img))
    ky, kx = np.meshgrid(np.arange(-2, 2), np.arange(-2, 2), indexing="ij")
    mask = np.exp(-(kx**2 + ky**2) / 2.0)
    smooth = np.fft.ifft2(np.fft.ifftshift(F * mask)).real
    return np.sum((smooth - img) ** 2) + np.sum(smooth**2 * img)


@program(IMAGE, nested=True)
def spectral_poisson_solver_2d(f):
    f = f - f.mean()
    n = f.shape[0]
    ky = 2 * np.pi * np.fft.fftfreq(n)[:, None]
    kx = 2 * np.pi * np.fft.rfftfreq(n)[None, :]
    k2 = kx**2 + ky**2
    k2[0, 0] = 1.0
    u_hat = -np.fft.rfft2(f) / k2
    u_hat[0, 0] = 0.0
    u = np.fft.irfft2(u_hat, s=f.shape)
    return np.sum(u * f) + 0.5 * np.sum(u**2)


@program(SIGNAL[:7], hessian=True, nested=True)
def odd_length_rfft_round_trip_with_norms(x):
    X = np.fft.rfft(x, norm="ortho")
    y = np.fft.irfft(X * np.exp(-0.2 * np.arange(X.size)), n=x.size, norm="ortho")
    Z = np.fft.fft(x, n=12, norm="forward")
    return np.sum(y**2 * x) + np.sum(np.abs(Z) ** 2) + np.sum(Z.imag * np.arange(12))


@program(SIGNAL[:6], hessian=True)
def hermitian_fft_pair(x):
    h = np.fft.ihfft(x)
    back = np.fft.hfft(h * np.array([1.0, 0.8, 0.5, 0.2]), n=6)
    return np.sum((back - x) ** 2) + np.sum(np.abs(h) ** 3)


@program(RNG.normal(size=(3, 4, 2)), hessian=True)
def fftn_over_chosen_axes(a):
    A = np.fft.fftn(a, axes=(0, 1), norm="ortho")
    B = np.fft.ifftn(A * np.conj(A), axes=(0, 1))
    return np.sum(B.real * a) + np.sum(np.abs(np.fft.rfftn(a, axes=(2, 0))) ** 2)


@program(SIGNAL, np.array([0.9, -0.3, 0.4]))
def cross_correlation_delay_by_fft(x, kernel):
    y = np.convolve(x, kernel, mode="same")
    Xf = np.fft.rfft(x, n=16)
    Yf = np.fft.rfft(y, n=16)
    xcorr = np.fft.irfft(Xf * np.conj(Yf), n=16)
    lags = np.arange(16)
    w = np.exp(5.0 * xcorr) / np.sum(np.exp(5.0 * xcorr))
    return np.sum(w * lags) + np.sum(xcorr**2)


# ----- complex values -----------------------------------------------------------------------------


@program(np.array([0.3, -0.8, 1.2, 0.5]), hessian=True, nested=True)
def phases_of_unit_phasors(theta):
    z = np.exp(1j * theta)
    ref = np.exp(1j * np.array([0.1, -0.5, 1.0, 0.9]))
    dphi = np.angle(z * np.conj(ref))
    coherence = np.abs(np.mean(z))
    return np.sum(dphi**2) - coherence + np.sum(np.real(z) * np.imag(z))


@program(np.array([[0.4, -0.2, 0.3], [0.1, 0.5, -0.6]]), np.array([[0.2, 0.7, -0.1], [-0.3, 0.1, 0.4]]), hessian=True)
def complex_matrix_products(re, im):
    A = re + 1j * im
    G = A @ A.conj().T
    v = np.array([1.0 - 0.5j, 0.3 + 0.2j, -0.4j])
    Av = A @ v
    return np.real(np.trace(G)) + np.sum(np.abs(Av) ** 2) + np.abs(np.vdot(Av, Av[::-1])) + np.sum(G.imag**2)


@program(np.array([0.2, 0.3, 0.1]), np.array([-0.5, 0.2]), hessian=True)
def iir_magnitude_response(b, a):
    w = np.linspace(0.1, np.pi - 0.1, 16)
    z = np.exp(-1j * w)
    num = np.polyval(b[::-1], z)
    den = 1.0 + a[0] * z + a[1] * z**2
    H = num / den
    target = np.exp(-w)
    mag = np.abs(H)
    return np.sum((mag - target) ** 2) + 0.1 * np.sum(np.angle(H) ** 2)


@program(np.array([0.6, -0.4, 1.1]), hessian=True, nested=True)
def complex_exponential_sum_of_modes(k):
    t = np.linspace(0.0, 1.0, 10)
    modes = np.exp(1j * np.outer(t, k) - 0.3 * t[:, None])
    field = modes.sum(axis=1)
    intensity = (field * field.conj()).real
    return np.sum(intensity * t) + np.sum(np.abs(modes.prod(axis=1)))


@program(np.array([0.5, 1.5, 2.5, 1.0, -0.5]), hessian=True)
def unwrapped_phase_slope(omega):
    t = np.arange(5.0)
    phase = np.cumsum(omega) * 0.9
    z = np.exp(1j * phase)
    recovered = np.unwrap(np.angle(z))
    slope = np.polyfit(t, recovered, 1)[0]
    return slope**2 + np.sum(recovered * t)


@program(np.array([[1.0, 0.3], [0.2, 0.8]]), np.array([[0.1, -0.4], [0.5, 0.2]]), hessian=True)
def hermitian_matrix_eigenvalues(re, im):
    A = re + 1j * im
    H = A + A.conj().T
    w = np.linalg.eigvalsh(H)
    M = A @ A
    return np.sum(w**2) + np.abs(np.linalg.det(M)) + np.real(np.trace(np.linalg.inv(A + 2 * np.eye(2))))


# ----- float32 end to end -------------------------------------------------------------------------


@program(
    np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3]], dtype=np.float32),
    np.array([0.05, -0.1], dtype=np.float32),
    rtol=3e-3,
    hessian=True,
)
def float32_two_layer_softmax_classifier(W, b):
    X = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8], [-0.6, 0.2, 0.4], [0.9, 0.9, -0.5]], dtype=np.float32)
    labels = np.array([0, 1, 1, 0])
    h = np.tanh(X @ W.T + b)
    logits = np.concatenate([h, -h.sum(axis=1, keepdims=True)], axis=1)
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(4), labels]) + np.float32(1e-2) * np.sum(W * W)


@program(SIGNAL.astype(np.float32), rtol=3e-3, hessian=True)
def float32_spectral_smoothing(x):
    X = np.fft.rfft(x)
    gain = np.exp(-np.arange(X.size, dtype=np.float32) / np.float32(2.0))
    y = np.fft.irfft(X * gain, n=x.size)
    return np.sum((y - x) ** 2) + np.sum(y**3) * np.float32(0.1)


@program(RNG.normal(size=(2, 3, 4)).astype(np.float32), rtol=3e-3)
def float32_einsum_and_norms(a):
    G = np.einsum("bij,bkj->bik", a, a)
    n = np.linalg.norm(a, axis=(1, 2))
    v = np.linalg.norm(a, ord=3, axis=-1)
    return np.sum(G**2) / np.float32(10.0) + np.sum(n) + np.sum(v * np.float32(0.5))


@program(np.array([0.7, -1.3, 2.2, 0.1, -0.5, 1.6], dtype=np.float32), rtol=3e-3, hessian=True)
def float32_top_k_and_cumulative(x):
    order = np.argsort(x)
    top = x[order[-3:]]
    c = np.cumsum(np.sort(x) ** 2)
    return np.sum(top**2) + c[-2] * np.float32(0.1) + np.sum(np.diff(x) ** 2) + np.trapezoid(x**2)


@program(np.array([0.2, 0.9, 0.4, 1.3], dtype=np.float32), rtol=3e-3, refuses={"tape": SCIPY_WRAPPER})
def float32_normal_log_likelihood(mu):
    data = np.array([0.1, 1.2, 0.5, 1.0], dtype=np.float32)
    sigma = np.float32(0.7)
    return -np.sum(scipy.stats.norm.logpdf(data, loc=mu, scale=sigma))


# ----- einsum, broadcasting, norms ----------------------------------------------------------------


@program(RNG.normal(size=(3, 4)), RNG.normal(size=(4, 4)), hessian=True, nested=True)
def einsum_with_many_subscripts(X, W):
    bilinear = np.einsum("bi,ij,bj->b", X, W, X)
    trace = np.einsum("ii->", W)
    diag = np.einsum("ii->i", W @ W.T)
    outer = np.einsum("bi,bj->ij", X, X)
    contraction = np.einsum("ij,ij->", outer, W)
    return np.sum(bilinear**2) + trace**2 + np.sum(diag) + contraction


@program(RNG.normal(size=(2, 3, 3)), hessian=True)
def einsum_with_ellipsis_batches(A):
    AA = np.einsum("...ij,...jk->...ik", A, A)
    tr = np.einsum("...ii->...", AA)
    quad = np.einsum("...i,...ij,...j", A[..., 0], A, A[..., 1])
    return np.sum(tr**2) + np.sum(quad) + np.einsum("bij,bij", A, AA)


@program(RNG.normal(size=(2, 3, 2, 3)), nested=True)
def einsum_with_a_repeated_index_in_one_operand(T):
    partial_trace = np.einsum("aibi->ab", T)
    diag = np.einsum("aiai->ai", T)
    return np.sum(partial_trace**2) + np.sum(np.exp(0.3 * diag))


@program(RNG.normal(size=(3, 4, 5)) + 0.5, hessian=True, nested=True)
def normalise_over_an_axis_tuple(x):
    mean = x.mean(axis=(0, 2), keepdims=True)
    var = x.var(axis=(0, 2), keepdims=True)
    z = (x - mean) / np.sqrt(var + 1e-3)
    gamma = np.linspace(0.5, 1.5, 4)[None, :, None]
    scaled = z * gamma + np.std(x, axis=-1, ddof=1, keepdims=True)
    return np.sum(scaled**2 * x) + np.sum(np.max(x, axis=(1, 2)))


@program(np.array([[0.5, -1.2, 0.3], [0.9, 0.4, -0.7], [-0.2, 0.8, 1.5]]), hessian=True, nested=True)
def matrix_and_vector_norms(A):
    fro = np.linalg.norm(A, "fro")
    spectral = np.linalg.norm(A, 2)
    nuclear = np.linalg.norm(A, "nuc")
    col1 = np.linalg.norm(A, ord=1, axis=0)
    rows_inf = np.linalg.norm(A, ord=np.inf, axis=1)
    p4 = np.linalg.norm(A.ravel(), ord=4)
    return fro + spectral**2 + nuclear + np.sum(col1**2) + np.sum(rows_inf) + p4


@program(RNG.normal(size=(2, 3, 4)), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def log_sum_exp_over_axis_tuples(x):
    m = np.max(x, axis=(1, 2), keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=(1, 2), keepdims=True))
    lse2 = scipy.special.logsumexp(x, axis=(0, 2))
    soft = scipy.special.softmax(x, axis=1)
    return np.sum(lse**2) + np.sum(lse2) + np.sum(soft * x)


@program(np.array([[0.3, 0.8], [1.2, -0.4], [0.5, 0.9]]), np.array([0.5, -1.0, 0.7, 0.2]), hessian=True)
def broadcast_pairwise_kernel(X, ell):
    Y = np.array([[0.0, 0.1], [1.0, -0.5], [0.4, 0.4], [-0.3, 0.8]])
    d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
    K = np.exp(-d2 / (2.0 * np.exp(ell)[None, :] ** 2))
    row = K / K.sum(axis=1, keepdims=True)
    return np.sum(row * d2) + np.sum(np.prod(K + 1.0, axis=0))


@program(RNG.normal(size=(4, 3)), hessian=True, nested=True)
def tensordot_kron_and_outer(A):
    B = np.tensordot(A, A, axes=([0], [0]))
    K = np.kron(A[:2, :2], np.array([[1.0, 0.5], [0.5, 2.0]]))
    o = np.outer(A[:, 0], A[:, 1])
    return np.sum(B**2) + np.sum(K * K.T) + np.trace(o @ o.T) + np.inner(A[0], A[1])


# ----- sorting and selection ----------------------------------------------------------------------


@program(np.array([0.7, -1.3, 2.2, 0.1, -0.5, 1.6, 0.95]), hessian=True, nested=True)
def top_k_weighted_sum_by_argsort(x):
    k = 3
    idx = np.argsort(x)[::-1][:k]
    top = x[idx]
    weights = np.array([3.0, 2.0, 1.0])
    ranks = np.sort(x)
    return np.sum(weights * top**2) + np.sum(ranks * np.arange(x.size)) + np.sum(np.sort(-x)[:2] ** 3)


@program(np.array([[0.4, -0.2, 1.3], [2.0, 0.8, -1.1], [0.1, 0.6, 0.3], [-0.7, 1.5, 0.9]]), hessian=True)
def sort_rows_with_take_along_axis(M):
    order = np.argsort(M, axis=1)
    sorted_rows = np.take_along_axis(M, order, axis=1)
    spread = sorted_rows[:, -1] - sorted_rows[:, 0]
    col_sorted = np.sort(M, axis=0)
    return np.sum(spread**2) + np.sum(col_sorted[1:] * col_sorted[:-1]) + np.sum(np.max(M, axis=0) ** 3)


@program(np.array([0.9, -0.4, 1.7, 0.2, 3.1, -1.2, 0.6, 2.4, 1.05, -0.1]), hessian=True, nested=True)
def medians_percentiles_and_quantiles(x):
    med = np.median(x)
    p = np.percentile(x, [10.0, 25.0, 75.0, 90.0])
    q = np.quantile(x, 0.3)
    iqr = p[2] - p[1]
    mad = np.median(np.abs(x - med))
    return med**2 + np.sum(p * np.array([1.0, -2.0, 0.5, 1.5])) + q * iqr + mad


@program(np.array([[0.9, -0.4, 1.7, 0.2, 2.6], [3.1, -1.2, 0.6, 2.4, 1.05], [0.3, 0.7, -0.9, 1.4, 0.05]]), hessian=True)
def quantiles_and_percentiles_along_axes(M):
    q = np.quantile(M, [0.2, 0.8], axis=1)
    m = np.median(M, axis=0)
    lo = np.percentile(M, 40.0, axis=1)
    mid = np.quantile(M, 0.6, axis=0)
    return np.sum(q[1] - q[0]) ** 2 + np.sum(m**2) + np.sum(lo * np.arange(3)) + np.sum(mid)


@program(np.array([0.8, 2.6, -0.3, 1.4, 5.9, 0.1, 1.9, -2.2, 0.6, 1.1]), hessian=True)
def trimmed_mean_and_winsorised_variance(x):
    s = np.sort(x)
    trimmed = s[2:-2].mean()
    lo, hi = s[2], s[-3]
    wins = np.clip(x, lo + 1e-3, hi - 1e-3)
    return trimmed**2 + np.var(wins) + np.ptp(x) * 0.1


@program(np.array([0.4, 2.1, -0.6, 1.3, 0.9, -1.8, 0.2]))
def smallest_entries_by_partition(x):
    smallest = np.partition(x, 2)[:3]
    return np.sum(smallest**2)


@program(np.array([0.4, 2.1, -0.6, 1.3, 0.9, -1.8, 0.2]), hessian=True, nested=True)
def smallest_entries_by_argpartition(x):
    idx = np.argpartition(x, 2)[:3]
    i_max = np.argmax(x)
    return np.sum(x[idx] ** 2) + x[i_max] ** 3 + np.min(x) * np.max(x)


# ----- interpolation ------------------------------------------------------------------------------


@program(np.array([0.3, 1.7, 2.4, 3.55]), np.array([0.0, 0.8, 0.5, 1.4, 1.1]), hessian=True)
def linear_interpolation_at_query_points(xq, fp):
    xp = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    y = np.interp(xq, xp, fp)
    grid = np.interp(np.linspace(0.1, 3.9, 7), xp, fp**2)
    return np.sum(y**2 * xq) + np.sum(grid)


@program(np.array([0.0, 0.9, 2.1, 2.8, 4.2]), np.array([0.0, 0.8, 0.5, 1.4, 1.1]))
def interpolation_with_differentiated_knots(xp, fp):
    xq = np.array([0.4, 1.5, 2.5, 3.3])
    return np.sum(np.interp(xq, xp, fp) ** 2) + np.sum(np.interp(xq, xp, fp, period=None) * xq)


@program(np.array([0.2, 1.4, 0.7, 1.8, 1.0, 0.3]), hessian=True, nested=True)
def hand_written_piecewise_linear_lookup(fp):
    xp = np.linspace(0.0, 5.0, 6)
    xq = np.array([0.35, 1.8, 2.6, 4.1, 4.9])
    i = np.clip(np.searchsorted(xp, xq) - 1, 0, xp.size - 2)
    t = (xq - xp[i]) / (xp[i + 1] - xp[i])
    y = (1.0 - t) * fp[i] + t * fp[i + 1]
    return np.sum(y**3) + np.sum(np.gradient(fp, xp) ** 2)


@program(np.array([[0.1, 0.5, 0.3], [0.8, 0.2, 0.6], [0.4, 0.9, 0.7]]), hessian=True)
def bilinear_grid_lookup_by_hand(values):
    gx = np.array([0.0, 1.0, 2.0])
    gy = np.array([0.0, 0.5, 1.0])
    pts = np.array([[0.3, 0.2], [1.6, 0.7], [0.9, 0.95]])
    ix = np.clip(np.searchsorted(gx, pts[:, 0]) - 1, 0, 1)
    iy = np.clip(np.searchsorted(gy, pts[:, 1]) - 1, 0, 1)
    tx = (pts[:, 0] - gx[ix]) / (gx[ix + 1] - gx[ix])
    ty = (pts[:, 1] - gy[iy]) / (gy[iy + 1] - gy[iy])
    v = (
        values[ix, iy] * (1 - tx) * (1 - ty)
        + values[ix + 1, iy] * tx * (1 - ty)
        + values[ix, iy + 1] * (1 - tx) * ty
        + values[ix + 1, iy + 1] * tx * ty
    )
    return np.sum(v**2) + np.sum(values * np.outer(gx, gy))


# ----- statistics ---------------------------------------------------------------------------------

DATA = np.array([0.3, 1.9, 0.8, 1.2, 2.6, 0.5, 1.4])


@program(np.array([1.1, 0.6]), hessian=True, nested=True, refuses={"tape": SCIPY_WRAPPER})
def normal_likelihood_cdf_and_sf(theta):
    mu, log_sigma = theta
    sigma = np.exp(log_sigma)
    ll = np.sum(scipy.stats.norm.logpdf(DATA, loc=mu, scale=sigma))
    censored = scipy.stats.norm.sf(2.5, loc=mu, scale=sigma)
    lower = scipy.stats.norm.cdf(0.2, mu, sigma)
    return -ll - np.log(censored) - np.log(lower)


@program(np.array([4.0, 1.0, 0.8]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def student_t_regression_in_its_degrees_of_freedom(theta):
    df, loc, scale = theta
    resid = DATA - loc
    return -np.sum(scipy.stats.t.logpdf(resid, df, scale=scale)) + scipy.stats.t.cdf(1.0, 5.0, loc=loc, scale=scale)


@program(np.array([2.5, 0.6]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def gamma_likelihood_in_shape_and_scale(theta):
    a, scale = theta
    ll = np.sum(scipy.stats.gamma.logpdf(DATA, a, scale=scale))
    tail = scipy.stats.gamma.sf(3.0, 2.5, scale=scale) * a
    return -ll + tail


@program(np.array([2.2, 3.1]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def beta_likelihood_in_both_shapes(ab):
    a, b = ab
    p = np.array([0.15, 0.42, 0.66, 0.3, 0.81])
    return -np.sum(scipy.stats.beta.logpdf(p, a, b)) + np.sum(scipy.stats.beta.pdf(p, a, b))


@program(np.array([0.2, 0.8]), nested=True, refuses={"tape": SCIPY_WRAPPER})
def frozen_distribution_and_its_quantile(theta):
    dist = scipy.stats.norm(theta[0], np.exp(theta[1]))
    q = dist.ppf(0.9)
    return -np.sum(dist.logpdf(DATA)) + q**2 + dist.cdf(1.0)


@program(RNG.normal(size=(6, 3)) + np.array([0.0, 1.0, -0.5]), hessian=True, nested=True)
def covariance_correlation_and_weighted_averages(X):
    C = np.cov(X, rowvar=False)
    R = np.corrcoef(X.T)
    w = np.linspace(0.5, 2.0, 6)
    avg = np.average(X, axis=0, weights=w)
    s = np.std(X, axis=0, ddof=1)
    return np.sum(C**2) + np.sum(np.triu(R, 1) ** 2) + np.sum(avg**2) + np.sum(s)


@program(np.array([0.3, -0.5, 0.8]), np.array([1.2, 0.7, 2.0]))
def polynomial_least_squares_fit(coef, noise):
    x = np.linspace(-1.0, 1.0, 9)
    y = np.polyval(coef, x) + noise[0] * np.sin(3 * x) + noise[1] * x**3 + noise[2] * 0.01
    fitted = np.polyfit(x, y, 2)
    weighted = np.polyfit(x, y, 1, w=np.linspace(1.0, 2.0, 9))
    return np.sum(fitted**2) + np.sum(np.polyval(fitted, x) * y) + np.sum(weighted)


@program(np.array([0.3, 0.5, 0.2, 0.8, 0.4]))
def weighted_histogram(w):
    samples = np.array([0.1, 0.45, 0.5, 0.8, 0.95])
    counts, _ = np.histogram(samples, bins=3, range=(0.0, 1.0), weights=w)
    return np.sum(counts**2)


# ----- signal processing, running sums and quadrature ---------------------------------------------


@program(SIGNAL, np.array([0.25, 0.5, 0.25, -0.1]), hessian=True, nested=True, refuses={"tape": SCIPY_WRAPPER})
def scipy_signal_convolutions(x, h):
    full = scipy.signal.convolve(x, h)
    same = scipy.signal.fftconvolve(x, h, mode="same")
    valid = scipy.signal.correlate(x, h, mode="valid")
    return np.sum(full**2) + np.sum(same * x) + np.sum(valid**3)


@program(IMAGE, np.array([[0.1, 0.2], [0.3, -0.1]]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def two_dimensional_convolution_and_correlation(img, k):
    a = scipy.signal.convolve(img, k, mode="valid")
    b = scipy.signal.fftconvolve(img, k, mode="full")
    c = scipy.signal.correlate(img, k, mode="same")
    return np.sum(a**2) + np.sum(b * b[::-1, ::-1]) + np.sum(c * img)


@program(SIGNAL, hessian=True, nested=True)
def first_order_iir_filter_as_a_loop(x):
    alpha = 0.7
    y = np.zeros_like(x)
    state = 0.0
    for i in range(x.size):
        state = alpha * state + (1.0 - alpha) * x[i]
        y[i] = state
    return np.sum((y - 0.5 * x) ** 2) + np.sum(np.diff(y, n=2) ** 2)


@program(np.array([0.9, 1.1, 1.05, 0.95, 1.2, 0.8]), hessian=True, nested=True)
def compound_growth_with_cumprod_and_cumsum(r):
    growth = np.cumprod(r)
    paid = np.cumsum(growth * 0.1)
    M = np.outer(r, r[::-1])
    col = np.cumprod(M, axis=0)[-1]
    return growth[-1] + np.sum(paid**2) + np.sum(np.log(col))


@program(np.array([1.0, 0.6, 0.8, 0.3, 0.5, 0.9]), hessian=True, nested=True, refuses={"tape": SCIPY_WRAPPER})
def nonuniform_gradient_and_trapezoid(y):
    t = np.array([0.0, 0.4, 0.9, 1.5, 1.8, 2.6])
    dydt = np.gradient(y, t)
    d2 = np.gradient(y, t, edge_order=2)
    area = np.trapezoid(y**2, x=t)
    running = scipy.integrate.cumulative_trapezoid(y, t, initial=0.0)
    return np.sum(dydt**2) + np.sum(d2 * y) + area + np.sum(running)


@program(RNG.normal(size=(3, 5)), hessian=True)
def gradient_of_a_grid_with_spacings(F):
    gy, gx = np.gradient(F, 0.5, 0.25)
    lap = np.gradient(gx, 0.25, axis=1)
    return np.sum(gx**2 + gy**2) + np.sum(lap * F) + np.sum(np.diff(F, axis=0) ** 2)


@program(np.array([0.35, -1.4, 0.8, 2.3, -0.15, 1.1]), hessian=True, nested=True)
def clipping_and_where_away_from_ties(x):
    lo = np.array([-1.0, -1.0, 0.0, 0.0, -0.5, 0.5])
    hi = np.array([1.0, 1.0, 1.0, 2.0, 0.5, 2.0])
    c = np.clip(x, lo, hi)
    r = np.where(x > 0.5, x**2, -x)
    m = np.maximum(x, 0.2 * x) + np.minimum(x**2, 1.0) + np.fmax(x, 0.0)
    return np.sum(c**3) + np.sum(r) + np.sum(m**2)


@program(np.array([0.5, -0.2, 0.3, 0.1]), hessian=True, nested=True)
def polynomial_values_derivatives_and_integral(c):
    x = np.linspace(-1.0, 1.0, 7)
    p = np.polyval(c, x)
    dp = np.polyval(np.polyder(c), x)
    antiderivative = np.concatenate([c / np.arange(c.size, 0, -1), np.zeros(1)])
    integ = np.polyval(antiderivative, 1.0) - np.polyval(antiderivative, -1.0)
    return np.sum(p**2) + np.sum(dp * x) + integ**2


@program(SIGNAL, hessian=True)
def roll_and_circular_differences(x):
    d = x - np.roll(x, 1)
    d2 = np.roll(x, -1) - 2 * x + np.roll(x, 1)
    tv = np.sum(np.sqrt(d**2 + 0.01))
    return tv + np.sum(d2**2) + np.sum(np.flip(x) * np.cumsum(x))


@program(
    np.array([0.3, 0.8, -0.4, 1.2]),
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER},
)
def lfilter_from_scipy(x):
    return np.sum(scipy.signal.lfilter([0.5, 0.5], [1.0, -0.3], x) ** 2)


@program(
    np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]]),
    hessian=True,
    nested=True,
    refuses={"tape": SCIPY_WRAPPER},
)
def spectral_functions_of_a_symmetric_matrix(A):
    S = 0.5 * (A + A.T)
    w, V = np.linalg.eigh(S)
    logm = (V * np.log(w)) @ V.T
    entropy = -np.sum(w / np.sum(w) * np.log(w / np.sum(w)))
    return np.sum(logm**2) + entropy + np.linalg.norm(scipy.linalg.expm(0.1 * S))


@program(np.array([1.2, 0.7, 2.1]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def kde_log_likelihood_by_bandwidth(bw):
    grid = np.linspace(-1.0, 3.0, 5)
    d = (DATA[None, :] - grid[:, None]) / bw[:, None, None]
    dens = np.mean(scipy.stats.norm.pdf(d), axis=-1) / bw[:, None]
    return -np.sum(np.log(dens)) + scipy.special.logsumexp(-bw)


@program(np.array([0.8, 1.7, 1.3, 2.6, 0.9]), hessian=True)
def covariance_with_importance_weights(w):
    # the weights are differentiated: np.cov(aweights=w) (fails: its rule gives them a zero cotangent)
    X = np.array([[0.3, -1.2, 0.8, 2.1, -0.4], [1.0, 0.5, -0.7, 0.2, 1.4], [0.1, 0.9, 1.1, -0.3, 0.6]])
    C = np.cov(X, aweights=w)
    return np.sum(C**2) + np.average(X[0], weights=w)
