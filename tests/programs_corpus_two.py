"""A second corpus of whole programs the way scientists and ML engineers write them, for
``test_programs.py``: signal processing, likelihoods, linear algebra, neural network layers,
physics with slicing and periodic boundaries, and the Python people write around them.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
import scipy.linalg
import scipy.special
from program_checks import (
    ARRAY_OF_TRACKED,
    SCIPY_WRAPPER,
    SCIPY_WRAPPER_FORWARD,
    new_corpus,
)

PROGRAMS, program = new_corpus()

# ----- signal processing --------------------------------------------------------------------------

T_SIGNAL = np.linspace(0.0, 1.0, 16, endpoint=False)
NOISY = np.sin(2 * np.pi * 2 * T_SIGNAL) + 0.3 * np.cos(2 * np.pi * 6 * T_SIGNAL)


@program(np.sin(2 * np.pi * T_SIGNAL) + 0.2 * T_SIGNAL, hessian=True, nested=True)
def fft_lowpass_filter(x):
    n = len(x)
    spectrum = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(n, d=1.0 / n)
    spectrum = spectrum * (freqs < 4)
    smooth = np.fft.irfft(spectrum, n)
    return np.sum((smooth - NOISY) ** 2) / n


@program(NOISY + 0.1 * T_SIGNAL**2, hessian=True)
def windowed_power_spectrum(x):
    n = x.shape[0]
    window = np.hanning(n)
    X = np.fft.fft((x - x.mean()) * window)
    power = np.abs(X[: n // 2]) ** 2 / np.sum(window**2)
    band = (np.fft.fftfreq(n)[: n // 2] > 0.05) & (np.fft.fftfreq(n)[: n // 2] < 0.3)
    return np.log(np.sum(power[band]) + 1e-3) - 0.1 * np.max(power)


@program(np.array([0.2, 0.5, -0.3]), np.array([1.0, -0.5, 2.0, 0.3, 0.8, -1.1]), hessian=True)
def convolution_modes(kernel, signal):
    full = np.convolve(signal, kernel)
    valid = np.convolve(signal, kernel, mode="valid")
    same = np.convolve(kernel, signal, mode="same")
    return np.sum(full**2) + np.dot(valid, valid[::-1]) + np.sum(same * signal)


@program(np.array([0.0, 0.3, 1.1, 1.8, 2.2, 2.0, 1.4]), hessian=True, nested=True)
def derivatives_by_differences(u):
    dx = 0.5
    slope = np.gradient(u, dx)
    curvature = np.diff(u, n=2) / dx**2
    return np.sum(slope**2) + 0.1 * np.sum(curvature**2) + np.sum(np.diff(u) * u[1:])


@program(np.array([0.5, 1.3, -0.7, 2.1, 0.4, -1.6, 0.9, 1.2]), hessian=True, nested=True)
def moving_average_and_autocorrelation(x):
    window = 3
    kernel = np.ones(window) / window
    trend = np.convolve(x, kernel, mode="valid")
    detrended = x[window // 2 : -(window // 2)] - trend
    lags = [np.sum(detrended[: len(detrended) - k] * detrended[k:]) for k in range(3)]
    return lags[1] / lags[0] + 0.5 * lags[2] / lags[0]


# ----- statistics ---------------------------------------------------------------------------------

DATA_T = np.array([0.3, -1.2, 2.5, 0.8, -0.4, 4.0])
COUNTS = np.array([0.0, 2.0, 1.0, 5.0, 3.0])
X_COUNTS = np.array([[1.0, 0.2], [1.0, -0.5], [1.0, 0.9], [1.0, 1.5], [1.0, 0.4]])


@program(np.array([0.5, 0.1, 1.2]), hessian=True, nested=True)
def student_t_log_likelihood(params):
    loc, log_scale, log_nu = params
    scale, nu = np.exp(log_scale), np.exp(log_nu)
    z = (DATA_T - loc) / scale
    log_pdf = (
        scipy.special.gammaln((nu + 1) / 2)
        - scipy.special.gammaln(nu / 2)
        - 0.5 * np.log(nu * np.pi)
        - log_scale
        - (nu + 1) / 2 * np.log1p(z**2 / nu)
    )
    return -np.sum(log_pdf)


@program(np.array([0.3, 0.6]), hessian=True, nested=True)
def poisson_regression(w):
    log_rate = X_COUNTS @ w
    rate = np.exp(log_rate)
    log_lik = scipy.special.xlogy(COUNTS, rate) - rate - scipy.special.gammaln(COUNTS + 1)
    return -log_lik.sum() + 0.5 * w @ w


@program(np.array([0.7, -0.2]), hessian=True)
def negative_binomial_likelihood(params):
    log_r, logit_p = params
    r = np.exp(log_r)
    p = scipy.special.expit(logit_p)
    y = COUNTS
    ll = (
        scipy.special.gammaln(y + r)
        - scipy.special.gammaln(r)
        - scipy.special.gammaln(y + 1)
        + r * np.log1p(-p)
        + scipy.special.xlogy(y, p)
    )
    return -np.mean(ll)


SIMPLEX_POINTS = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.25, 0.25, 0.5]])


@program(np.array([1.5, 2.0, 0.8]), hessian=True, nested=True)
def dirichlet_log_density(alpha):
    log_norm = scipy.special.gammaln(alpha.sum()) - scipy.special.gammaln(alpha).sum()
    beta_term = scipy.special.betaln(alpha[0], alpha[1])
    return -np.sum(log_norm + (alpha - 1) @ np.log(SIMPLEX_POINTS).T) + 0.1 * beta_term


@program(np.array([1.0, 2.5, 0.3, 1.7]), np.array([0.2, 0.4, 0.1, 0.3]), hessian=True)
def weighted_mean_and_variance(x, w):
    w = w / w.sum()
    mean = np.average(x, weights=w)
    var = np.sum(w * (x - mean) ** 2)
    unweighted = np.var(x, ddof=1) + np.std(x)
    return mean + var + 0.1 * unweighted


@program(
    np.array([[1.0, 0.5, -0.2], [0.3, 1.2, 0.4], [-0.5, 0.1, 0.9], [0.8, -0.7, 0.2], [0.1, 0.3, -1.0]]),
    hessian=True,
    nested=True,
)
def covariance_and_correlation(X):
    C = np.cov(X, rowvar=False)
    R = np.corrcoef(X.T)
    return np.trace(C) + np.sum(np.triu(R, 1) ** 2) + np.linalg.slogdet(C)[1]


@program(np.array([0.1, 1.7, -0.6, 2.4, 0.9, -1.3, 0.35]))
def quantile_losses(x):
    q = np.quantile(x, [0.25, 0.75])
    median = np.percentile(x, 50)
    iqr = q[1] - q[0]
    tau = 0.3
    residual = x - median
    pinball = np.sum(np.maximum(tau * residual, (tau - 1) * residual))
    return pinball + iqr**2 + np.median(x**2)


@program(np.array([0.4, -0.8]), 0.2, hessian=True, nested=True)
def probit_regression(w, b):
    X = np.array([[0.5, 1.0], [-1.0, 0.3], [1.5, -0.2], [0.2, 0.2]])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    z = X @ w + b
    p = 0.5 * (1 + scipy.special.erf(z / np.sqrt(2)))
    return -np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))


@program(np.array([-0.4, 0.3, 1.1]), np.array([0.8, 0.5, 0.3]), np.array([0.2, 0.3, 0.5]))
def gaussian_mixture_log_likelihood(means, scales, weights):
    x = np.array([-0.9, 0.1, 0.4, 1.3, 2.0])[:, None]
    log_comp = -0.5 * ((x - means) / scales) ** 2 - np.log(scales) - 0.5 * np.log(2 * np.pi) + np.log(weights)
    peak = log_comp.max(axis=1, keepdims=True)
    log_lik = peak[:, 0] + np.log(np.sum(np.exp(log_comp - peak), axis=1))
    return -np.sum(log_lik)


@program(np.array([0.2, -0.4, 0.9]), hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def logsumexp_and_log_softmax(logits):
    log_probs = logits - scipy.special.logsumexp(logits)
    smoothed = np.logaddexp(logits, 0.0)
    return -log_probs[1] + 0.1 * np.sum(smoothed) + np.sum(np.exp(log_probs) ** 2)


# ----- linear algebra -----------------------------------------------------------------------------


@program(np.array([[1.0, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 2.0]]), hessian=True)
def eigenvalue_penalties(S):
    S = 0.5 * (S + S.T)
    evals, evecs = np.linalg.eigh(S)
    smallest = evals[0]
    top = np.sum(evals[-2:])
    alignment = np.abs(evecs[:, -1] @ np.ones(3)) ** 2
    return top - 2.0 * smallest + np.sum(np.linalg.eigvalsh(S @ S)) + alignment


@program(np.array([[2.0, 0.3, 0.1, 0.5], [0.4, 1.5, 0.2, -0.3], [0.1, -0.2, 0.9, 0.6]]))
def low_rank_approximation(A):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    k = 2
    A_k = (U[:, :k] * s[:k]) @ Vt[:k]
    return np.sum((A - A_k) ** 2) + 0.1 * np.sum(s) + np.linalg.norm(A_k, "fro")


@program(
    np.array([0.3, 0.9, 1.6, 2.0, 3.1]),
    np.array([[1.0, 0.1], [1.0, 0.7], [1.0, 1.2], [1.0, 1.9], [1.0, 2.4]]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def qr_least_squares(y, X):
    Q, R = np.linalg.qr(X)
    beta = scipy.linalg.solve_triangular(R, Q.T @ y)
    residual = y - X @ beta
    return residual @ residual + np.sum(beta**2)


@program(
    np.array([[2.0, 0.4, 0.1], [0.4, 1.0, 0.2], [0.1, 0.2, 0.8]]),
    np.array([[0.5, -0.3, 1.0], [1.2, 0.4, -0.7], [-0.2, 0.9, 0.3], [0.6, 0.6, 0.6]]),
)
def cholesky_whitening(Sigma, X):
    L = np.linalg.cholesky(Sigma)
    Z = np.linalg.solve(L, X.T)
    mahalanobis = np.sum(Z**2, axis=0)
    return 0.5 * np.sum(mahalanobis) + X.shape[0] * np.sum(np.log(np.diag(L)))


@program(np.array([0.5, 0.2, 0.8]), 1.5, hessian=True, refuses={"tape": ARRAY_OF_TRACKED, "forward": "np.stack"})
def markov_generator_exponential(rates, t):
    a, b, c = rates
    Q = np.array([[-a, a, 0.0], [b, -b - c, c], [0.0, 0.0, 0.0]])
    P = scipy.linalg.expm(t * Q)
    return -np.log(P[0, 2]) + P[1, 1] ** 2


@program(np.array([[1.0, 0.5], [0.2, 2.0], [0.3, -0.4]]), np.array([1.0, 0.5, -0.2]))
def pseudo_inverse_and_lstsq(A, b):
    x_pinv = np.linalg.pinv(A) @ b
    x_lstsq, residuals, rank, sv = np.linalg.lstsq(A, b, rcond=None)
    sign, logdet = np.linalg.slogdet(A.T @ A)
    return np.sum(x_pinv * x_lstsq) + residuals[0] + logdet + sign * 0.0 + 0.01 * rank


@program(np.array([[0.9, 0.1], [0.2, 0.7]]), np.array([[1.0, 0.5], [-0.5, 1.0]]), hessian=True, nested=True)
def kronecker_and_matrix_powers(A, B):
    K = np.kron(A, B)
    A3 = np.linalg.matrix_power(A, 3)
    return np.trace(K @ K.T) + np.trace(A3 @ B) + np.trace(np.linalg.matrix_power(A @ B, 2))


# ----- machine learning ---------------------------------------------------------------------------

RNG = np.random.default_rng(7)
TOKENS = RNG.normal(size=(4, 3))


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


@program(RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(3, 3)) * 0.5)
def self_attention(Wq, Wk, Wv):
    Q, K, V = TOKENS @ Wq, TOKENS @ Wk, TOKENS @ Wv
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    mask = np.triu(np.ones((4, 4), dtype=bool), k=1)
    scores = np.where(mask, -1e9, scores)
    attn = softmax(scores, axis=-1)
    return np.sum((attn @ V) ** 2)


@program(RNG.normal(size=(4, 5)), np.ones(5), np.zeros(5), hessian=True)
def layer_and_batch_norm(x, gamma, beta):
    eps = 1e-5
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    ln = gamma * (x - mu) / np.sqrt(var + eps) + beta
    batch_mu = ln.mean(axis=0)
    batch_var = ((ln - batch_mu) ** 2).mean(axis=0)
    bn = (ln - batch_mu) / np.sqrt(batch_var + eps)
    return np.sum(bn[:, 0] * ln[:, 1]) + np.sum(np.tanh(ln) ** 2)


@program(np.array([0.3, -0.5, 0.8]), np.array([0.2, 1.0, -0.4, 0.6, 1.5, -0.9, 0.1]), hessian=True, nested=True)
def conv1d_by_loop_and_stride_tricks(w, x):
    k = len(w)
    out_loop = np.stack([np.dot(x[i : i + k], w) for i in range(len(x) - k + 1)])
    windows = np.lib.stride_tricks.sliding_window_view(x, k)
    out_strided = windows @ w
    return np.sum(out_loop * out_strided) + np.sum(np.maximum(out_strided, 0.0) ** 2)


def quadratic_bowl_grad(theta):
    return np.array([2.0, 10.0]) * (theta - np.array([1.0, -1.0]))


@program(np.array([0.5, 0.5]), lr=0.1)
def adam_steps_unrolled(theta0, lr=0.01):
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    theta = theta0
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for t in range(1, 6):
        g = quadratic_bowl_grad(theta) + 0.1 * theta**3
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        m_hat = m / (1 - beta1**t)
        v_hat = v / (1 - beta2**t)
        theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
    return np.sum((theta - np.array([1.0, -1.0])) ** 2)


POINTS = np.array([[0.0, 0.1], [0.2, -0.1], [1.0, 1.1], [1.2, 0.9], [-1.0, 0.8], [-0.8, 1.1]])


@program(np.array([[0.1, 0.0], [1.0, 1.0], [-0.9, 0.9]]), hessian=True, nested=True)
def soft_kmeans(centroids):
    temperature = 0.5
    d2 = np.sum((POINTS[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)
    resp = softmax(-d2 / temperature, axis=1)
    return np.sum(resp * d2) + 0.1 * np.sum(centroids**2)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@program(RNG.normal(size=(4 * 2, 2 + 1)) * 0.5, np.zeros(8))
def lstm_cell_sequence(W, b):
    hidden = 2
    h, c = np.zeros(hidden), np.zeros(hidden)
    for x_t in (0.5, -0.3, 0.9):
        z = W @ np.concatenate([h, [x_t]]) + b
        i, f, o, g = np.split(z, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    return np.sum(h**2) + np.sum(c)


@program(RNG.normal(size=(3, 2)) * 0.5, RNG.normal(size=(3, 2)) * 0.5, RNG.normal(size=(3, 2)) * 0.5)
def gru_cell(Wz, Wr, Wh):
    h = np.zeros(2)
    for x_t in np.array([[0.3], [-0.6], [1.0]]):
        hx = np.concatenate([h, x_t])
        z = sigmoid(hx @ Wz)
        r = sigmoid(hx @ Wr)
        h_tilde = np.tanh(np.concatenate([r * h, x_t]) @ Wh)
        h = (1 - z) * h + z * h_tilde
    return h @ np.array([1.0, -2.0])


X_MLP = RNG.normal(size=(6, 3))
Y_MLP = RNG.normal(size=6)


@program(RNG.normal(size=(3, 4)), RNG.normal(size=4) * 0.1, RNG.normal(size=4))
def mlp_relu_dropout_huber(W1, b1, w2):
    h = np.maximum(X_MLP @ W1 + b1, 0.0)
    leaky = np.where(h > 0, h, 0.01 * h)
    mask = np.random.default_rng(3).random(leaky.shape) > 0.3
    dropped = leaky * mask / 0.7
    pred = dropped @ w2
    r = pred - Y_MLP
    delta = 1.0
    huber = np.where(np.abs(r) <= delta, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))
    return np.mean(huber) + 1e-2 * np.sum(np.abs(W1)) + 1e-3 * np.sum(w2**2)


# ----- physics and engineering --------------------------------------------------------------------


@program(np.array([0.0, 0.2, 0.7, 1.0, 0.6, 0.3, 0.0]), 0.2)
def heat_equation_explicit(u0, r):
    u = u0
    for _ in range(5):
        u_new = u.copy()
        u_new[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
        u = u_new
    return np.sum(u**2) + u[3]


@program(np.array([1.0, 2.0, 1.5, 0.8]), refuses={"tape": "write x = x + v", "forward": "np.zeros_like"})
def finite_element_assembly(k):
    n = len(k) + 1
    K = np.zeros((n, n))
    for e, ke in enumerate(k):
        K[e : e + 2, e : e + 2] += ke * np.array([[1.0, -1.0], [-1.0, 1.0]])
    K_free = K[1:, 1:]
    f = np.ones(n - 1)
    u = np.linalg.solve(K_free, f)
    return f @ u


@program(
    np.array([0.3, 1.1, 0.2, 0.7]),
    refuses={"source": "ufunc.at(a, idx, v)", "tape": "writes into an array in place", "forward": "np.add.at(...)"},
)
def assembly_with_add_at(k):
    n = len(k) + 1
    rows = np.repeat(np.arange(len(k)), 2)
    diag = np.zeros(n)
    np.add.at(diag, rows, np.repeat(k, 2))
    return np.sum(diag**2)


@program(np.array([[0.1, 0.2], [0.7, 0.8], [1.98, 0.15]]), np.array([[0.3, -0.1], [0.0, 0.2], [0.5, 0.1]]), 2.0)
def verlet_periodic_box(pos, vel, box):
    dt = 0.05

    def forces(p):
        d = p[:, None, :] - p[None, :, :]
        d = d - box * np.round(d / box)  # minimum image convention
        r2 = np.sum(d**2, axis=-1) + np.eye(len(p))
        f = d * (np.exp(-r2) * (1 - np.eye(len(p))))[:, :, None]
        return np.sum(f, axis=1)

    acc = forces(pos)
    for _ in range(4):
        pos = np.mod(pos + dt * vel + 0.5 * dt**2 * acc, box)
        new_acc = forces(pos)
        vel = vel + 0.5 * dt * (acc + new_acc)
        acc = new_acc
    return np.sum(vel**2) + np.sum(np.sin(pos))


@program(np.array([[0.0, 0.0], [1.1, 0.1], [2.0, 0.5], [2.8, 1.2]]), hessian=True, nested=True)
def spring_network_energy(nodes):
    edges = [(0, 1), (1, 2), (2, 3), (0, 2)]
    i, j = np.array(edges).T
    lengths = np.linalg.norm(nodes[j] - nodes[i], axis=1)
    rest = np.array([1.0, 1.0, 1.0, 2.0])
    return 0.5 * np.sum((lengths - rest) ** 2) + 0.01 * np.sum(nodes[:, 1] ** 2)


@program(np.array([0.5, -0.3, 1.2]), hessian=True, nested=True)
def potential_on_a_grid(charges):
    xs, ys = np.linspace(-1.0, 1.0, 5), np.linspace(-0.5, 0.5, 4)
    X, Y = np.meshgrid(xs, ys)
    sites = [(-0.3, 0.1), (0.4, -0.2), (0.05, 0.35)]
    phi = sum(q / np.sqrt((X - sx) ** 2 + (Y - sy) ** 2 + 0.05) for q, (sx, sy) in zip(charges, sites))
    ex, ey = np.gradient(phi, ys[1] - ys[0], xs[1] - xs[0])
    cell, _ = np.modf(phi * 3.0 + 10.0)
    return 0.5 * np.mean(ex**2 + ey**2) + 0.01 * np.sum(cell * phi)


@program(np.array([0.4, -1.1, 0.7, 1.6]), hessian=True, nested=True)
def features_from_scalars_and_slices(x):
    features = np.concatenate([x[:2], [x[3] * 2.0, x[0] * x[1]], (np.sin(x[2]),)])
    pairs = np.stack([features[:3], [x[1], 1.0, x[3] ** 2]])
    return np.sum(features**2) + np.sum(pairs[0] * pairs[1])


def decay_rhs(t, y, k):
    return -k * y + np.sin(t)


@program(0.8, 1.0, hessian=True, nested=True)
def adaptive_runge_kutta(k, y0):
    t, y, h, tol = 0.0, y0, 0.2, 1e-4
    while t < 1.0:
        h = min(h, 1.0 - t)
        k1 = decay_rhs(t, y, k)
        k2 = decay_rhs(t + h / 2, y + h / 2 * k1, k)
        k3 = decay_rhs(t + h, y - h * k1 + 2 * h * k2, k)
        y3 = y + h / 6 * (k1 + 4 * k2 + k3)
        y2 = y + h * k2
        err = abs(y3 - y2)
        if err > tol:  # reject the step and halve it
            h = h / 2
            continue
        t, y = t + h, y3
        h = h * 1.5
    return y


@program(np.array([0.05, 0.1, 1.0]), np.array([[0.0, 0.0, 5.0], [0.8, 0.2, 4.0]]), hessian=True)
def ray_sphere_intersections(direction, spheres):
    origin = np.zeros(3)
    d = direction / np.linalg.norm(direction)
    nearest = np.inf
    for center in spheres:
        oc = origin - center
        b = 2.0 * d @ oc
        c = oc @ oc - 1.0
        disc = b * b - 4 * c
        if disc < 0:
            continue
        t = (-b - np.sqrt(disc)) / 2
        if 0 < t < nearest:
            nearest = t
    if nearest == np.inf:
        return 0.0
    hit = origin + nearest * d
    return nearest + hit[0] ** 2


# ----- Python the way people write it -------------------------------------------------------------


@dataclasses.dataclass
class Shape:
    size: float

    @property
    def area(self):
        return self.size**2

    @staticmethod
    def unit_cost():
        return 1.5

    @classmethod
    def from_diameter(cls, diameter):
        return cls(diameter / 2)

    def cost(self):
        return self.area * self.unit_cost()

    def __call__(self, scale):
        return self.cost() * scale


@dataclasses.dataclass
class Circle(Shape):
    @property
    def area(self):
        return np.pi * self.size**2

    def cost(self):
        return super().cost() + 0.1 * self.size


@program(1.3, 0.7, hessian=True, nested=True)
def classes_with_properties_and_inheritance(d, s):
    shapes = [Shape(d), Circle.from_diameter(d), Circle(s)]
    total = sum(shape(1.0 + i) for i, shape in enumerate(shapes))
    return total + Shape.from_diameter(s).area


class Spring:
    def __init__(self, stiffness, rest):
        self.stiffness = stiffness
        self.rest = rest

    def energy(self, length):
        return 0.5 * self.stiffness * (length - self.rest) ** 2


@program(np.array([1.2, 0.8]), refuses={"source": "constructing it has no rule; use a dataclass"})
def plain_class_built_in_the_function(k):
    springs = [Spring(k[0], 1.0), Spring(k[1], 0.5)]
    return sum(spring.energy(1.1) for spring in springs)


def scaled_loss(x, target, weight):
    return weight * np.sum((x - target) ** 2)


@program(np.array([0.3, 1.4, -0.2]), hessian=True, nested=True)
def partial_sorted_and_lambda_table(x):
    loss_to_origin = functools.partial(scaled_loss, target=np.zeros(3), weight=0.5)
    activations = {"square": lambda v: v**2, "soft": lambda v: np.log1p(np.exp(v)), "sin": np.sin}
    ranked = sorted(x, key=lambda v: -abs(v))
    total = sum(np.sum(fn(x)) for _, fn in sorted(activations.items()))
    return loss_to_origin(x) + total + ranked[0] * ranked[-1]


@program(np.array([0.5, -0.2, 0.9]), hessian=True, nested=True, refuses={"source": "return the new value"})
def nonlocal_accumulator(x):
    total = 0.0
    calls = 0

    def add(v):
        nonlocal total, calls
        total = total + v
        calls += 1

    for xi in x:
        add(xi**2)
    add(np.prod(x))
    return total / calls


@program([np.array([0.2, 0.5]), np.array([1.0, -0.3]), np.array([0.7, 0.1])], hessian=False)
def list_of_arrays_stacked_and_zipped(vectors):
    M = np.stack(vectors)
    flat = np.concatenate(vectors)
    cols = [sum(c) for c in zip(*vectors)]
    weighted = sum(i * np.sum(v) for i, v in enumerate(vectors, start=1))
    return np.sum(M @ M.T) + flat @ flat + cols[0] * cols[1] + weighted


@program(np.array([0.4, 1.2, -0.3, 0.8]), hessian=True, nested=True)
def itertools_pipelines(x):
    running = list(itertools.accumulate(x))
    pairs = sum(a * b for a, b in itertools.product(x[:2], x[2:]))
    chained = sum(v**2 for v in itertools.chain(x[:1], x[3:], running[-2:]))
    return running[-1] * 0.5 + pairs + chained


@program(0.9, hessian=True, nested=True, refuses={"source": "writing into the captured or global variable `memo`"})
def memoised_recursion(x):
    memo = {}

    def chebyshev(n):
        if n in memo:
            return memo[n]
        value = 1.0 if n == 0 else x if n == 1 else 2 * x * chebyshev(n - 1) - chebyshev(n - 2)
        memo[n] = value
        return value

    return chebyshev(6) + chebyshev(3) * len(memo)


def describe(v):
    if isinstance(v, (list, tuple)):
        return sum(describe(item) for item in v)
    if isinstance(v, dict):
        return sum(describe(item) for item in v.values())
    if isinstance(v, (int, str)):  # counts and labels, never differentiated
        return float(v) if isinstance(v, int) else 0.0
    if np.ndim(v) > 0:  # an array (isinstance(v, np.ndarray) is false for the engines' arrays)
        return np.sum(v**2)
    return v * 3


@program(np.array([0.5, -1.0]), 0.7, hessian=True, nested=True)
def isinstance_dispatch_and_int_float_mixing(x, s):
    parts = [x, (s, 2), {"scaled": x * s, "label": "w"}, [3]]
    count = len(x) // 2 + 1
    scale = 0.5 * count + 1
    return describe(parts) * scale + s * int(x.size) + x[0] * 2 ** len(parts) + (count - 1) / 2


@program(
    np.array([0.5, -0.3, 0.8], dtype=np.float32), np.array([[1.0, 0.2], [0.1, -0.4], [0.3, 0.9]], np.float32), rtol=3e-3
)
def float32_network_end_to_end(x, W):
    h = np.tanh(x @ W)
    scale = np.float32(2.0)
    out = scale * np.sum(h**2) + np.float32(0.5) * np.mean(W)
    return out.astype(np.float32)


@program(np.array([0.5, -1.2, 2.0, -0.1, 0.8]))
def masked_in_place_on_a_copy(x):
    y = x.copy()
    y[y < 0] *= 2.0
    y[0] += 1.0
    y[::2] = y[::2] ** 2
    return np.sum(y * x)


class RunningStats:
    def __init__(self):
        self.total = 0.0
        self.sq = 0.0
        self.n = 0

    def update(self, v):
        self.total += v
        self.sq += v * v
        self.n += 1

    def variance(self):
        mean = self.total / self.n
        return self.sq / self.n - mean**2


@program(np.array([0.3, 1.2, -0.4, 0.9]), hessian=True, nested=True, refuses={"source": "dataclasses.replace"})
def augmented_assignment_on_attributes(x):
    stats = RunningStats()
    for xi in x:
        stats.update(xi)
    return stats.variance() + stats.total


class Timer:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@program(np.array([0.4, 2.5, 0.1]), hessian=True, nested=True)
def early_return_inside_with(x):
    with Timer():
        for xi in x:
            if xi > 2.0:
                return xi * np.sum(x**2)
    return np.sum(x)


@program(np.array([1.7, -0.6, 2.3]), hessian=True, nested=True)
def asserts_fstrings_and_float_builtins(x):
    assert x.ndim == 1, f"expected a vector, got shape {x.shape}"
    total = 0.0
    for i, xi in enumerate(x):
        whole, frac = divmod(xi, 1.0)
        label = f"x[{i}] = {xi:.2f} ({whole:g} + {frac:.2f})"
        assert label.startswith("x[")
        total = total + frac**2 + abs(xi) * round(1.5) + whole
    return total


@program(
    2.0,
    0.5,
    hessian=True,
    nested=True,
    refuses={"tape": "would drop its derivative", "forward": "would drop its derivative"},
)
def python_and_numpy_scalars(a, b):
    n = np.int64(3)
    c = np.float64(a) * b + n
    d = math.pi * a / float(n)
    return c**2 + d + np.sqrt(a) * np.float32(1.0) + (a > b) * b
