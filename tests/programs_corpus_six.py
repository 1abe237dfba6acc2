"""A sixth corpus of whole programs: dense linear algebra as it is used in practice (factorisations
reused for several solves, least squares by QR, PCA by SVD and eigh, Procrustes, Kalman and
Riccati iterations, Markov generators through expm, Gaussian conditioning, Lyapunov and Sylvester
equations, matrix functions and norms), SciPy's solvers inside larger programs (calibration
losses whose inner step is a root or an optimum, ODE fits, integrals of parametrised densities),
and the public API inside programs (argnums, has_aux, value_and_gradient loops, jvp, jacobian in
every mode, hessian, checkpoint, structured arguments and outputs).

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.special
from program_checks import ARRAY_OF_TRACKED, SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

import chainrules as cr

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(606)

LINALG = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}  # a scipy.linalg wrapper with a rule
FUNCTIONAL = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}  # a SciPy functional with a rule
SOLVER = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}  # a SciPy solver with a rule
BUFFER = {"tape": ARRAY_OF_TRACKED, "forward": ARRAY_OF_TRACKED}  # a plain buffer or np.array of tracked values
# a SciPy call with a reverse rule only: forward mode watches the calls of callables with an frule, so it runs
# this one's body, which converts the duals; the API then runs the function through the source engine's primal,
# which calls the rule
REVERSE_RULED = {"tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED}


def spd(n, seed, shift=None):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T + (n if shift is None else shift) * np.eye(n)


# ----- factorisations reused, least squares -------------------------------------------------------

DESIGN = np.array(
    [[1.0, 0.2, -0.5], [1.0, 1.1, 0.3], [1.0, -0.7, 0.9], [1.0, 0.4, 1.6], [1.0, -1.3, -0.2], [1.0, 0.8, 0.1]]
)
RESPONSE = np.array([0.3, 1.9, -0.4, 1.2, -1.1, 1.0])


@program(
    spd(4, 1) + 0.3 * RNG.normal(size=(4, 4)),
    np.array([[1.0, 0.5], [-0.2, 0.3], [0.7, -1.0], [0.1, 0.4]]),
    refuses=LINALG,
)
def lu_factor_for_a_block_of_right_hand_sides(A, B):
    lu, piv = scipy.linalg.lu_factor(A)
    X = scipy.linalg.lu_solve((lu, piv), B)
    Y = scipy.linalg.lu_solve((lu, piv), X, trans=1)
    logabsdet = np.sum(np.log(np.abs(np.diag(lu))))
    return np.sum(X**2) + np.sum(Y * B) + logabsdet


@program(DESIGN, RESPONSE, hessian=True, refuses=LINALG)
def least_squares_by_economic_qr(X, y):
    Q, R = scipy.linalg.qr(X, mode="economic")
    coef = scipy.linalg.solve_triangular(R, Q.T @ y)
    residual = y - X @ coef
    leverage = np.sum(Q**2, axis=1)
    return residual @ residual + np.sum(leverage**2) + 0.1 * coef @ coef


@program(DESIGN, RESPONSE, hessian=True, nested=True)
def least_squares_by_numpy_qr_and_solve(X, y):
    Q, R = np.linalg.qr(X)
    coef = np.linalg.solve(R, Q.T @ y)
    fitted = Q @ (Q.T @ y)
    sigma2 = np.sum((y - fitted) ** 2) / (len(y) - X.shape[1])
    cov = sigma2 * np.linalg.inv(R.T @ R)
    return coef @ coef + np.trace(cov)


@program(RESPONSE, DESIGN[:, 1:], nested=True)
def lstsq_with_residuals_and_rank(y, X):
    A = np.column_stack([np.ones(len(y)), X])
    coef, residuals, rank, sv = np.linalg.lstsq(A, y, rcond=None)
    cond = sv[0] / sv[-1]
    return residuals[0] + coef @ coef + 0.01 * cond * rank


@program(RESPONSE, 0.4, refuses=LINALG)
def scipy_lstsq_ridge_by_augmentation(y, lam):
    n, p = DESIGN.shape
    A = np.vstack([DESIGN, np.sqrt(lam) * np.eye(p)])
    b = np.concatenate([y, np.zeros(p)])
    coef, res, rank, sv = scipy.linalg.lstsq(A, b)
    return np.sum((DESIGN @ coef - y) ** 2) + lam * coef @ coef + 0.01 * np.sum(sv)


@program(np.array([[1.0, 0.4, -0.3, 0.8], [0.2, -1.1, 0.5, 0.3]]), np.array([0.7, -0.4]), hessian=True)
def minimum_norm_solution_by_pinv(A, b):
    x = np.linalg.pinv(A) @ b
    P = np.linalg.pinv(A) @ A  # projector onto the row space
    return x @ x + np.sum(np.diag(P) * np.array([1.0, 2.0, 3.0, 4.0]))


@program(spd(4, 2), np.array([0.3, -0.8, 1.1, 0.2]), hessian=True, refuses=LINALG)
def mahalanobis_by_cholesky_and_triangular_solves(S, x):
    L = scipy.linalg.cholesky(S, lower=True)
    z = scipy.linalg.solve_triangular(L, x, lower=True)
    w = scipy.linalg.solve_triangular(L.T, z, lower=False)
    logdet = 2.0 * np.sum(np.log(np.diag(L)))
    return 0.5 * z @ z + 0.5 * logdet + 0.1 * w @ x


@program(np.array([0.2, -0.4, 0.9]), hessian=True, nested=True, refuses=LINALG)
def irls_logistic_regression_by_cho_solve(w0):
    X, y = DESIGN, (RESPONSE > 0.5).astype(float)
    w = w0
    for _ in range(3):
        p = scipy.special.expit(X @ w)
        H = X.T @ (X * (p * (1 - p))[:, None]) + 0.5 * np.eye(3)
        g = X.T @ (p - y) + 0.5 * w
        w = w - scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), g)
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) + 0.25 * w @ w


# ----- PCA, Procrustes, spectra -----------------------------------------------------------------

CLOUD = RNG.normal(size=(6, 3)) @ np.array([[2.0, 0.3, 0.0], [0.0, 1.0, 0.4], [0.0, 0.0, 0.4]])


@program(CLOUD, hessian=True)
def pca_by_svd_reconstruction_error(X):
    Xc = X - X.mean(axis=0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    k = 2
    recon = (U[:, :k] * s[:k]) @ Vt[:k]
    explained = np.sum(s[:k] ** 2) / np.sum(s**2)
    return np.sum((Xc - recon) ** 2) + explained


@program(CLOUD, nested=True)
def pca_by_eigh_of_the_covariance(X):
    C = np.cov(X, rowvar=False)
    w, V = np.linalg.eigh(C)
    top = V[:, ::-1][:, :2]
    scores = (X - X.mean(axis=0)) @ top
    P = top @ top.T
    return np.sum(w[-2:]) + 0.01 * np.sum(scores[:, 0] ** 2) + np.sum(P * np.arange(9.0).reshape(3, 3))


@program(
    CLOUD[:4],
    CLOUD[:4] @ np.array([[0.36, 0.48, -0.8], [-0.8, 0.6, 0.0], [0.48, 0.64, 0.6]]) + 0.05,
    hessian=True,
    refuses=LINALG,
)
def orthogonal_procrustes_alignment(A, B):
    M = B.T @ A
    U, s, Vt = scipy.linalg.svd(M)
    R = (U @ Vt).T
    aligned = A @ R
    return np.sum((aligned - B) ** 2) + 0.1 * np.sum(s)


@program(np.array([[4.0, 1.0, 0.3], [0.5, 3.0, -0.2], [0.1, 0.4, 1.5]]), refuses=LINALG)
def polar_decomposition_of_a_deformation_gradient(F):
    R, S = scipy.linalg.polar(F)
    strain = 0.5 * (S @ S - np.eye(3))
    rotation_angle = np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
    return np.sum(strain**2) + rotation_angle**2


@program(spd(3, 3), spd(3, 4, shift=1.0), hessian=True, refuses=LINALG)
def generalised_eigenproblem_vibration_modes(K, M):
    w, V = scipy.linalg.eigh(K, M)
    freqs = np.sqrt(w)
    participation = (V.T @ M @ np.ones(3)) ** 2
    return np.sum(freqs) + 0.1 * np.sum(participation)


@program(np.array([[-1.0, 0.4, 0.1], [0.3, -2.0, 0.5], [0.0, 0.2, -3.2]]), hessian=True)
def spectral_abscissa_of_a_nonsymmetric_matrix(A):
    lam = np.linalg.eigvals(A)
    return np.max(np.real(lam)) + 0.1 * np.sum(np.abs(lam) ** 2)


@program(np.array([[2.0, 0.5, 0.1], [0.3, 1.0, -0.4], [0.2, 0.6, 3.0], [0.7, -0.1, 0.4]]))
def matrix_norms_with_ord(A):
    fro = np.linalg.norm(A, "fro")
    spectral = np.linalg.norm(A, 2)
    nuclear = np.linalg.norm(A, "nuc")
    one = np.linalg.norm(A, 1)
    inf = np.linalg.norm(A, np.inf)
    vec = np.linalg.norm(A[:, 0], 3) + np.linalg.norm(A[1], 1)
    return fro + 2 * spectral + 3 * nuclear + 0.5 * one + 0.25 * inf + vec


@program(np.array([[2.0, 0.5, 0.1], [0.3, 1.0, -0.4], [0.2, 0.6, 3.0]]), refuses=LINALG)
def scipy_norms_and_condition_number(A):
    n2 = scipy.linalg.norm(A, 2)
    nf = scipy.linalg.norm(A)
    nv = scipy.linalg.norm(A[:, 1], ord=4)
    cond = np.linalg.cond(A)
    return n2 * nf + nv + cond + np.sum(scipy.linalg.svdvals(A) ** 3)


# ----- determinants and log-determinants --------------------------------------------------------

POINTS = np.array([[0.0, 0.1], [0.5, -0.3], [1.2, 0.4], [1.9, 0.0], [2.4, -0.6]])


@program(np.array([0.2, -0.3, -1.5]), hessian=True, nested=True)
def kernel_log_determinant_three_ways(log_params):
    ell, sf, sn = np.exp(log_params)
    d2 = np.sum((POINTS[:, None, :] - POINTS[None, :, :]) ** 2, axis=-1)
    K = sf**2 * np.exp(-0.5 * d2 / ell**2) + (sn**2 + 1e-3) * np.eye(5)
    sign, logdet = np.linalg.slogdet(K)
    L = np.linalg.cholesky(K)
    logdet_chol = 2.0 * np.sum(np.log(np.diag(L)))
    return logdet + logdet_chol + np.log(np.linalg.det(K))


@program(np.array([[1.0, 0.2, 0.3], [0.1, 2.0, -0.4], [0.5, 0.3, 1.5]]), hessian=True, refuses=LINALG)
def scipy_det_and_inverse_identities(A):
    d = scipy.linalg.det(A)
    Ainv = scipy.linalg.inv(A)
    u, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    # Sherman-Morrison against the direct inverse of the updated matrix
    sm = Ainv - np.outer(Ainv @ u, v @ Ainv) / (1.0 + v @ Ainv @ u)
    direct = np.linalg.inv(A + np.outer(u, v))
    return d**2 + np.sum(sm * direct) + np.log(np.abs(np.linalg.det(A + np.outer(u, v))))


@program(np.array([0.5, -0.2, 0.8, 0.3]), hessian=True)
def toeplitz_ar1_exact_likelihood(params):
    phi, log_sigma = np.tanh(params[0]), params[1]
    y = np.array([0.4, -0.1, 0.7, 0.2, -0.5]) + 0.1 * params[2:].sum()
    n = len(y)
    lags = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    Sigma = np.exp(2 * log_sigma) / (1 - phi**2) * phi**lags
    sign, logdet = np.linalg.slogdet(Sigma)
    return 0.5 * logdet + 0.5 * y @ np.linalg.solve(Sigma, y)


# ----- Kalman and Riccati, Lyapunov and Sylvester ------------------------------------------------

F_CV = np.array([[1.0, 0.5], [0.0, 1.0]])
H_CV = np.array([[1.0, 0.0]])
OBS = np.array([0.1, 0.6, 1.2, 1.5, 2.3, 2.6])


@program(np.array([-2.0, -1.0]), hessian=True, nested=True)
def kalman_filter_prediction_error_likelihood(log_qr):
    q, r = np.exp(log_qr)
    Q = q * np.array([[0.25 * 0.25 / 3, 0.125], [0.125, 0.5]])
    m, P = np.zeros(2), np.eye(2)
    nll = 0.0
    for y in OBS:
        m, P = F_CV @ m, F_CV @ P @ F_CV.T + Q
        S = H_CV @ P @ H_CV.T + r
        K = P @ H_CV.T / S
        v = y - H_CV @ m
        nll = nll + 0.5 * (np.log(2 * np.pi * S[0, 0]) + v[0] ** 2 / S[0, 0])
        m, P = m + (K * v).ravel(), (np.eye(2) - K @ H_CV) @ P
    return nll


@program(np.array([0.3, 0.1]), 0.5)
def riccati_iteration_to_steady_state_gain(q_diag, r):
    Q = np.diag(np.exp(q_diag))
    P = np.eye(2)
    for _ in range(25):
        S = H_CV @ P @ H_CV.T + r
        P = F_CV @ P @ F_CV.T + Q - F_CV @ P @ H_CV.T @ np.linalg.inv(S) @ H_CV @ P @ F_CV.T
    K = P @ H_CV.T @ np.linalg.inv(H_CV @ P @ H_CV.T + r)
    return np.sum(K**2) + np.trace(P)


@program(np.array([[-1.0, 0.5], [-0.3, -2.0]]), hessian=True, refuses=LINALG)
def h2_norm_by_continuous_lyapunov(A):
    B = np.array([[1.0], [0.5]])
    C = np.array([[1.0, -1.0]])
    W = scipy.linalg.solve_continuous_lyapunov(A, -B @ B.T)
    return np.trace(C @ W @ C.T) + 0.1 * np.sum(W**2)


@program(np.array([[0.5, 0.2], [-0.1, 0.3]]), np.array([0.1, -0.2]), nested=True, refuses=LINALG)
def var1_stationary_covariance_likelihood(Phi, log_noise):
    Q = np.diag(np.exp(log_noise))
    Sigma = scipy.linalg.solve_discrete_lyapunov(Phi, Q)
    y = np.array([[0.3, -0.1], [0.5, 0.2], [0.1, 0.4]])
    ll = -0.5 * np.linalg.slogdet(Sigma)[1] * 1.0
    for t in range(1, len(y)):
        r = y[t] - Phi @ y[t - 1]
        ll = ll - 0.5 * r @ np.linalg.solve(Q, r)
    return -ll + 0.5 * y[0] @ np.linalg.solve(Sigma, y[0])


@program(np.array([[3.0, 0.5], [0.2, 2.0]]), np.array([[1.0, 0.3, 0.0], [0.2, 0.5, 0.1]]), refuses=LINALG)
def sylvester_equation_for_a_coupled_system(A, C):
    B = np.array([[1.0, 0.2, 0.0], [0.0, 1.5, 0.3], [0.1, 0.0, 2.0]])
    X = scipy.linalg.solve_sylvester(A, B, C)
    return np.sum(X**2) + np.sum(X[:, 0])


# ----- matrix functions: Markov generators, logm, sqrtm -----------------------------------------


@program(np.array([-0.5, 0.2, -1.0, 0.1, -0.3, -0.8]), hessian=True, nested=True, refuses=BUFFER)
def continuous_time_markov_chain_likelihood(log_rates):
    Q = np.zeros((3, 3))
    Q[0, 1], Q[0, 2], Q[1, 0] = np.exp(log_rates[0]), np.exp(log_rates[1]), np.exp(log_rates[2])
    Q[1, 2], Q[2, 0], Q[2, 1] = np.exp(log_rates[3]), np.exp(log_rates[4]), np.exp(log_rates[5])
    Q = Q - np.diag(Q.sum(axis=1))
    counts = {0.5: np.array([[5, 2, 1], [1, 6, 2], [0, 2, 7]]), 2.0: np.array([[2, 3, 3], [2, 3, 3], [3, 2, 4]])}
    ll = 0.0
    for dt, n in counts.items():
        P = scipy.linalg.expm(Q * dt)
        ll = ll + np.sum(n * np.log(P))
    return -ll


@program(np.array([0.4, 0.9, 0.2]), refuses=BUFFER)
def markov_generator_by_built_matrix_and_expm(rates):
    a, b, c = np.exp(rates)
    Q = np.array([[-a, a, 0.0], [b, -b - c, c], [0.0, a * c, -a * c]])
    P = scipy.linalg.expm(1.5 * Q)
    pi0 = np.array([1.0, 0.0, 0.0])
    occupancy = pi0 @ P
    return -np.log(occupancy[2]) + np.sum(P**2)


@program(spd(3, 5), spd(3, 6), refuses=LINALG)
def bures_wasserstein_distance_by_sqrtm(A, B):
    rA = scipy.linalg.sqrtm(A)
    cross = scipy.linalg.sqrtm(rA @ B @ rA)
    return np.trace(A) + np.trace(B) - 2.0 * np.trace(np.real(cross))


@program(spd(3, 7), hessian=True, refuses=LINALG)
def log_euclidean_mean_of_spd_matrices(S):
    other = spd(3, 8)
    L = 0.5 * (scipy.linalg.logm(S) + scipy.linalg.logm(other))
    M = scipy.linalg.expm(L)
    return np.sum(M * np.eye(3)) + np.sum(np.real(L) ** 2)


@program(np.array([0.3, -0.2, 0.5]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})
def matrix_power_and_multi_dot_transfer(theta):
    A = np.array(
        [[np.cos(theta[0]), -np.sin(theta[0]), 0.0], [np.sin(theta[0]), np.cos(theta[0]), theta[1]], [0.0, 0.0, 0.9]]
    )
    B = np.diag(np.exp(theta))
    T = np.linalg.matrix_power(A, 4)
    chain = np.linalg.multi_dot([B, T, B, A.T])
    return np.sum(chain**2) + np.trace(T)


# ----- Gaussian conditioning ---------------------------------------------------------------------


@program(np.array([0.3, -0.5, 1.0]), np.array([-0.5, 0.1]), hessian=True, refuses=LINALG)
def gaussian_conditioning_with_cho_factor(y_obs, log_params):
    ell, noise = np.exp(log_params)
    x_all = np.array([0.0, 0.7, 1.5, 0.3, 1.1])
    K = np.exp(-0.5 * (x_all[:, None] - x_all[None, :]) ** 2 / ell**2)
    Koo = K[:3, :3] + noise * np.eye(3)
    Kuo = K[3:, :3]
    factor = scipy.linalg.cho_factor(Koo, lower=True)
    mean = Kuo @ scipy.linalg.cho_solve(factor, y_obs)
    cov = K[3:, 3:] - Kuo @ scipy.linalg.cho_solve(factor, Kuo.T)
    return np.sum(mean**2) + np.trace(cov) + np.linalg.slogdet(cov + 1e-2 * np.eye(2))[1]


@program(np.array([0.2, -0.1, 0.3, 0.0]), np.array([0.8, -0.3]), hessian=True, nested=True, refuses=LINALG)
def conditional_gaussian_by_solve_assume_pos(log_scales, x_obs):
    mu = np.array([0.1, -0.2, 0.4, 0.0])
    D = np.diag(np.exp(log_scales))
    S = D @ spd(4, 9) @ D
    Sbb = S[2:, 2:]
    gain = scipy.linalg.solve(Sbb, S[2:, :2], assume_a="pos").T
    cond_mean = mu[:2] + gain @ (x_obs - mu[2:])
    cond_cov = S[:2, :2] - gain @ S[2:, :2]
    return cond_mean @ np.linalg.solve(cond_cov, cond_mean) + np.sum(x_obs**3)


# ----- SciPy's solvers inside calibration losses -------------------------------------------------


def black_scholes_call(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * scipy.special.ndtr(d1) - K * np.exp(-r * T) * scipy.special.ndtr(d2)


@program(np.array([10.45, 6.04, 3.25]), hessian=True, refuses=REVERSE_RULED)
def implied_volatility_smile_fit_by_brentq(prices):
    strikes = np.array([100.0, 105.0, 110.0])

    def pricing_error(sigma, K, price):
        return black_scholes_call(100.0, K, 1.0, 0.05, sigma) - price

    vols = [scipy.optimize.brentq(pricing_error, 1e-3, 3.0, args=(K, p), xtol=1e-14) for K, p in zip(strikes, prices)]
    vols = np.stack(vols)
    slope = (vols[-1] - vols[0]) / (strikes[-1] - strikes[0])
    return np.sum((vols - 0.2) ** 2) + 100.0 * slope**2


@program(0.3, hessian=True, nested=True, refuses=REVERSE_RULED)
def kepler_equation_by_vectorised_newton(ecc):
    mean_anomaly = np.array([0.3, 1.1, 2.0, 2.9])

    def kepler(E, M):
        return E - ecc * np.sin(E) - M

    E = scipy.optimize.newton(
        kepler, mean_anomaly, fprime=lambda E, M: 1.0 - ecc * np.cos(E), args=(mean_anomaly,), tol=1e-14
    )
    true_anomaly = 2.0 * np.arctan2(np.sqrt(1 + ecc) * np.sin(E / 2), np.sqrt(1 - ecc) * np.cos(E / 2))
    radius = 1.0 - ecc * np.cos(E)
    return np.sum(true_anomaly * radius)


@program(np.array([1.5, 0.4]), refuses=REVERSE_RULED)
def root_scalar_break_even_price(params):
    fixed_cost, elasticity = params[0], np.exp(params[1])

    def profit(p):
        demand = 10.0 * p ** (-elasticity)
        return (p - 1.0) * demand - fixed_cost

    lo = scipy.optimize.root_scalar(profit, bracket=[1.01, 1.5], method="brentq", xtol=1e-12).root
    hi = scipy.optimize.root_scalar(
        profit, x0=4.0, fprime=lambda p: cr.derivative(profit, p), method="newton", xtol=1e-12
    ).root
    return hi - lo


@dataclasses.dataclass
class Equilibrium:
    k_forward: float
    k_backward: float
    total: np.ndarray


@program(Equilibrium(2.0, 0.5, np.array([1.0, 0.8])), refuses=REVERSE_RULED)
def chemical_equilibrium_by_fsolve_with_dataclass(eq):
    def balance(c):
        a, b, ab = c
        return np.stack(
            [
                eq.k_forward * a * b - eq.k_backward * ab,
                a + ab - eq.total[0],
                b + ab - eq.total[1],
            ]
        )

    c = scipy.optimize.fsolve(balance, np.array([0.5, 0.3, 0.4]), xtol=1e-13)
    return c[2] / (c[0] + c[1]) + np.sum(c**2)


@program(np.array([0.8, 1.2]), nested=True, refuses=REVERSE_RULED)
def steady_state_of_a_two_gene_circuit_by_root(log_rates):
    alpha, beta = np.exp(log_rates)

    def rhs(x):
        u, v = x[0], x[1]
        return np.array([alpha / (1.0 + v**2) - u, beta / (1.0 + u**2) - v])

    def jac(x):
        u, v = x[0], x[1]
        return np.array([[-1.0, -2 * alpha * v / (1 + v**2) ** 2], [-2 * beta * u / (1 + u**2) ** 2, -1.0]])

    sol = scipy.optimize.root(rhs, np.array([0.3, 3.0]), jac=jac, method="hybr", tol=1e-13)
    return sol.x[0] * sol.x[1] + np.log(sol.x[0])


@program(np.array([0.9, 0.3]), hessian=True, refuses=LINALG)
def bellman_value_by_fixed_point(rewards):
    P = np.array([[0.7, 0.3], [0.4, 0.6]])
    gamma = 0.9

    def bellman(v, r):
        return r + gamma * P @ v

    v = scipy.optimize.fixed_point(bellman, np.zeros(2), args=(rewards,), xtol=1e-13, maxiter=2000)
    return v @ np.array([0.6, 0.4]) + 0.1 * np.sum(v**2)


@program(np.array([-1.0, 0.5]), refuses=REVERSE_RULED)
def ridge_hyperparameter_gradient_through_minimize(log_lams):
    Xtr, ytr = DESIGN[:4], RESPONSE[:4]
    Xva, yva = DESIGN[4:], RESPONSE[4:]
    lam = np.exp(log_lams)

    def train_loss(w, lam):
        return np.sum((Xtr @ w - ytr) ** 2) + lam[0] * w[1] ** 2 + lam[1] * w[2] ** 2 + 0.01 * w[0] ** 2

    res = scipy.optimize.minimize(
        train_loss,
        np.zeros(3),
        args=(lam,),
        method="BFGS",
        jac=lambda w, lam: cr.gradient(train_loss, w, lam)[0],
        tol=1e-12,
    )
    return np.sum((Xva @ res.x - yva) ** 2)


# (Brent's method settles an optimum to about sqrt(eps): finite differences of it carry that noise)
@program(np.array([0.3, 1.4, 2.2, 0.9, 1.7]), refuses=FUNCTIONAL, rtol=2e-4)
def gamma_scale_mle_by_minimize_scalar(x):
    shape = 2.0

    def nll(log_scale):
        scale = np.exp(log_scale)
        return np.sum(x / scale + shape * np.log(scale))

    res = scipy.optimize.minimize_scalar(nll, bracket=(-2.0, 2.0), method="brent", tol=1e-12)
    return np.exp(res.x) + 0.1 * res.fun


@program(np.array([2.9, 1.9, 1.25, 0.85, 0.55, 0.4]), refuses=REVERSE_RULED)
def exponential_decay_fit_by_least_squares(y):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])

    def residuals(p):
        return p[0] * np.exp(-p[1] * t) + p[2] - y

    fit = scipy.optimize.least_squares(residuals, np.array([2.5, 0.8, 0.2]), xtol=1e-14, ftol=1e-14, gtol=1e-14)
    half_life = np.log(2.0) / fit.x[1]
    return half_life + fit.x[2] + fit.cost


# (Levenberg-Marquardt on a problem with residuals converges linearly: its optimum carries ~1e-11 of noise)
@program(np.array([0.48, 0.83, 1.12, 1.35, 1.47]), refuses=REVERSE_RULED, rtol=1e-4)
def michaelis_menten_by_curve_fit(rates):
    substrate = np.array([0.5, 1.0, 2.0, 4.0, 8.0])

    def model(s, vmax, km):
        return vmax * s / (km + s)

    def jac(s, vmax, km):
        return np.stack([s / (km + s), -vmax * s / (km + s) ** 2], axis=1)

    popt, pcov = scipy.optimize.curve_fit(model, substrate, rates, p0=[1.5, 1.0], jac=jac, xtol=1e-14, ftol=1e-14)
    vmax, km = popt
    return vmax / km + 0.5 * vmax


@program(np.array([0.2, -0.4]), hessian=True, nested=True, refuses=REVERSE_RULED)
def expected_loss_under_a_density_by_quad(params):
    mu, log_s = params
    s = np.exp(log_s)

    def integrand(x, mu, s):
        density = np.exp(-0.5 * ((x - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))
        return np.log1p(np.exp(x)) * density

    value, err = scipy.integrate.quad(integrand, -12.0, 12.0, args=(mu, s), epsabs=1e-13, epsrel=1e-13)
    return value + 0.1 * mu**2


@program(np.array([0.5, 1.7]), hessian=True, refuses=LINALG)
def arc_length_with_differentiated_limits_by_quad(ab):
    a, b = ab[0], ab[1]
    length, _ = scipy.integrate.quad(lambda x: np.sqrt(1.0 + np.cos(x) ** 2), a, b, epsabs=1e-13, epsrel=1e-13)
    area, _ = scipy.integrate.quad(lambda x, k: np.sin(k * x) ** 2, a, b, args=(1.3,), epsabs=1e-13)
    return length * area


@program(np.array([0.8, 1.5]), refuses=REVERSE_RULED)
def logistic_growth_fit_by_solve_ivp(log_params):
    r, K = np.exp(log_params)
    t_obs = np.array([0.5, 1.0, 2.0, 3.0])
    data = np.array([0.25, 0.45, 1.0, 1.8])

    def rhs(t, n):
        return r * n * (1.0 - n / K)

    sol = scipy.integrate.solve_ivp(rhs, (0.0, 3.0), np.array([0.15]), t_eval=t_obs, rtol=1e-11, atol=1e-12)
    return np.sum((sol.y[0] - data) ** 2)


@program(np.array([0.3, 0.15]), refuses=REVERSE_RULED)
def damped_oscillator_by_odeint_with_args(params):
    omega, zeta = np.exp(params[0]), params[1]

    def rhs(y, t, omega, zeta):
        return np.stack([y[1], -2 * zeta * omega * y[1] - omega**2 * y[0]])

    t = np.linspace(0.0, 4.0, 5)
    ys = scipy.integrate.odeint(rhs, np.array([1.0, 0.0]), t, args=(omega, zeta), rtol=1e-11, atol=1e-12)
    return np.sum(ys[:, 0] ** 2) + 0.5 * np.sum(ys[:, 1] ** 2)


@program(
    0.6, hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED, "hessian-source": "second"}
)
def decay_rate_by_solve_ivp_under_a_hessian(k):
    sol = scipy.integrate.solve_ivp(lambda t, y: -k * y, (0.0, 2.0), np.array([1.0, 2.0]), rtol=1e-11, atol=1e-12)
    return np.sum(sol.y[:, -1] ** 2)


@program(np.array([0.1, 0.15]), refuses=BUFFER)
def portfolio_weights_by_l_bfgs_b_with_an_active_bound(mu):
    cov = np.array([[0.04, 0.006, 0.0], [0.006, 0.09, 0.01], [0.0, 0.01, 0.16]])
    returns = np.array([mu[0], mu[1], -0.05])

    def neg_utility(w):
        return -returns @ w + 2.0 * w @ cov @ w

    def gradient(w):
        return -returns + 4.0 * cov @ w

    res = scipy.optimize.minimize(
        neg_utility,
        np.full(3, 0.3),
        method="L-BFGS-B",
        jac=gradient,
        bounds=[(0.0, 1.0)] * 3,
        options={"ftol": 1e-15, "gtol": 1e-13},
    )
    return res.x @ np.array([1.0, 2.0, 3.0]) + res.fun


# (the bounded method settles its optimum to about sqrt(eps) relative: finite differences carry that noise)
@program(np.array([0.5, 1.0]), refuses=FUNCTIONAL, rtol=1e-3)
def profile_likelihood_with_nested_solvers(theta):
    data = np.array([0.4, 1.3, 0.7, 2.1])

    def profile(log_s):
        s = np.exp(log_s)
        # the location that makes the score zero for this scale
        loc = scipy.optimize.brentq(lambda m: np.sum(np.tanh((data - m) / s)), -5.0, 5.0, xtol=1e-14)
        return np.sum(np.log(np.cosh((data - loc) / s))) + len(data) * log_s + theta[0] * log_s**2

    res = scipy.optimize.minimize_scalar(profile, bounds=(-3.0, 3.0), method="bounded", options={"xatol": 1e-12})
    return res.x * theta[1] + res.fun


# ----- the public API inside programs ------------------------------------------------------------


def regularised_fit(w, lam, X, y):
    r = X @ w - y
    return 0.5 * r @ r + 0.5 * lam * w @ w, {"rmse": np.sqrt(np.mean(r**2)), "norm": np.linalg.norm(w)}


@program(np.array([0.1, 0.2, -0.1]), 0.3, hessian=True, nested=True)
def training_loop_with_value_and_gradient_has_aux(w0, lam):
    w = w0
    trace = []
    for step in range(4):
        (loss, aux), g = cr.value_and_gradient(regularised_fit, w, lam, DESIGN, RESPONSE, argnums=0, has_aux=True)
        trace.append(aux["rmse"])
        w = w - 0.05 / (1 + step) * g
    return regularised_fit(w, lam, DESIGN, RESPONSE)[0] + 0.1 * sum(trace)


@program(np.array([0.1, 0.2, -0.1]), 0.3, nested=True)
def gradient_with_respect_to_the_regulariser_by_argnums(w, lam):
    (g_lam,) = cr.gradient(lambda w, lam: regularised_fit(w, lam, DESIGN, RESPONSE)[0], w, lam, argnums=(1,))
    g_w, aux = cr.gradient(regularised_fit, w, lam, DESIGN, RESPONSE, argnums=0, has_aux=True)
    return g_lam**2 + g_w @ g_w + aux["norm"]


def residual_vector(theta):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    y = np.array([1.0, 0.7, 0.55, 0.4, 0.33])
    return theta[0] * np.exp(-theta[1] * t) + theta[2] - y


@program(np.array([0.9, 0.8, 0.1]), hessian=True, nested=True)
def gauss_newton_steps_with_reverse_jacobians(theta0):
    theta = theta0
    for _ in range(2):
        J = cr.jacobian(residual_vector, theta, mode="reverse")
        r = residual_vector(theta)
        theta = theta - np.linalg.solve(J.T @ J + 1e-2 * np.eye(3), J.T @ r)
    return np.sum(residual_vector(theta) ** 2)


@program(np.array([0.9, 0.8, 0.1]), hessian=True, nested=True)
def levenberg_marquardt_with_forward_and_auto_jacobians(theta):
    J_fwd = cr.jacobian(residual_vector, theta, mode="forward")
    J_auto = cr.jacobian(residual_vector, theta)
    r = residual_vector(theta)
    step = np.linalg.solve(J_fwd.T @ J_auto + 0.1 * np.diag(np.diag(J_fwd.T @ J_fwd)), J_auto.T @ r)
    return np.sum(residual_vector(theta - step) ** 2) + 0.01 * np.sum(J_fwd**2)


def rosenbrock(x, a=1.0, b=10.0):
    return (a - x[0]) ** 2 + b * (x[1] - x[0] ** 2) ** 2


@program(np.array([-0.3, 0.4]), nested=True)
def damped_newton_with_an_inner_hessian(x0):
    x = x0
    for _ in range(3):
        g = cr.gradient(rosenbrock, x)[0]
        H = cr.hessian(rosenbrock, x)
        x = x - np.linalg.solve(H + 2.0 * np.eye(2), g)
    return rosenbrock(x) + 0.1 * np.sum(x**2)


@program(np.array([0.5, -0.2, 0.8]), hessian=True, nested=True)
def hutchinson_trace_of_the_hessian_by_jvp_of_gradient(x):
    def energy(z):
        return np.sum(np.log(np.cosh(z))) + 0.5 * z[0] * z[1] * z[2]

    probes = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    total = 0.0
    for v in probes:
        _, hv = cr.jvp(lambda z: cr.gradient(energy, z)[0], (x,), (v,))
        total = total + v @ hv
    return energy(x) + total / len(probes)


@program(np.array([0.6, -0.4]), 0.7, hessian=True)
def directional_derivatives_with_jvp_of_two_primals(x, scale):
    def field(a, s):
        return np.stack([s * np.sin(a[0]) * a[1], np.exp(s * a[1]) - a[0] ** 2])

    y, dy_x = cr.jvp(field, (x, scale), (np.array([1.0, 0.0]), 0.0))
    _, dy_s = cr.jvp(field, (x, scale), (np.zeros(2), 1.0))
    return y @ y + dy_x @ dy_s


def rk4_step(state, dt):
    def f(s):
        q, p = s[0], s[1]
        return np.stack([p, -np.sin(q) - 0.1 * p])

    k1 = f(state)
    k2 = f(state + 0.5 * dt * k1)
    k3 = f(state + 0.5 * dt * k2)
    k4 = f(state + dt * k3)
    return state + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


@program(np.array([1.0, 0.0]), 0.2, hessian=True, nested=True)
def checkpointed_rk4_integration(y0, dt):
    step = cr.checkpoint(rk4_step)
    y = y0
    energies = []
    for _ in range(8):
        y = step(y, dt)
        energies.append(0.5 * y[1] ** 2 + 1.0 - np.cos(y[0]))
    return y[0] ** 2 + np.sum(np.stack(energies))


@cr.checkpoint
def expensive_linear_response(K, f):
    u = np.linalg.solve(K, f)
    return u, f @ u


@program(spd(3, 11), hessian=True)
def checkpoint_decorator_around_a_solve_with_a_tuple_output(K):
    loads = [np.array([1.0, 0.0, 0.5]), np.array([0.2, 1.0, -0.3])]
    total = 0.0
    for f in loads:
        u, compliance = expensive_linear_response(K, f)
        total = total + compliance + 0.1 * u @ u
    return total


class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@program(
    {
        "enc": Layer(np.array([[0.5, -0.3], [0.2, 0.8], [-0.4, 0.1]]), np.array([0.1, -0.2, 0.0])),
        "dec": Layer(np.array([[0.3, -0.5, 0.2], [0.1, 0.4, -0.6]]), np.array([0.05, -0.05])),
    }
)
def autoencoder_with_a_dict_of_namedtuple_layers(params):
    X = np.array([[0.3, -0.7], [1.1, 0.4], [-0.5, 0.9], [0.2, 0.2]])
    h = np.tanh(X @ params["enc"].W.T + params["enc"].b)
    out = h @ params["dec"].W.T + params["dec"].b
    return np.mean((out - X) ** 2) + 1e-2 * sum(np.sum(layer.W**2) for layer in params.values())


@program(
    {
        "enc": Layer(np.array([[0.5, -0.3], [0.2, 0.8], [-0.4, 0.1]]), np.array([0.1, -0.2, 0.0])),
        "dec": Layer(np.array([[0.3, -0.5, 0.2], [0.1, 0.4, -0.6]]), np.array([0.05, -0.05])),
    }
)
def sgd_on_a_structured_gradient(params):
    def loss(p):
        X = np.array([[0.3, -0.7], [1.1, 0.4], [-0.5, 0.9]])
        h = np.tanh(X @ p["enc"].W.T + p["enc"].b)
        return np.mean((h @ p["dec"].W.T + p["dec"].b - X) ** 2)

    for _ in range(2):
        g = cr.gradient(loss, params)[0]
        params = {k: Layer(v.W - 0.5 * g[k].W, v.b - 0.5 * g[k].b) for k, v in params.items()}
    return loss(params)


class FitResult(NamedTuple):
    coef: np.ndarray
    sse: float
    cov: np.ndarray


@program({"y": RESPONSE, "weights": np.array([1.0, 2.0, 1.0, 0.5, 1.0, 2.0])})
def weighted_least_squares_returning_a_namedtuple(data):
    y, weights = data["y"], data["weights"]
    Xw = DESIGN * np.sqrt(weights)[:, None]
    yw = y * np.sqrt(weights)
    G = Xw.T @ Xw
    coef = np.linalg.solve(G, Xw.T @ yw)
    r = yw - Xw @ coef
    return FitResult(coef, r @ r, np.linalg.inv(G) * (r @ r) / 3.0)


@dataclasses.dataclass
class Kernel:
    log_ell: float
    log_sf: float
    log_noise: float


@program(Kernel(0.2, -0.1, -1.2))
def gp_evidence_and_its_gradient_as_a_dataclass(k):
    def nlml(kern):
        ell, sf, sn = np.exp(kern.log_ell), np.exp(kern.log_sf), np.exp(kern.log_noise)
        x = POINTS[:, 0]
        K = sf**2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ell**2) + sn**2 * np.eye(5)
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, RESPONSE[:5]))
        return 0.5 * RESPONSE[:5] @ alpha + np.sum(np.log(np.diag(L)))

    value, (g,) = cr.value_and_gradient(nlml, k)
    return value + 0.1 * (g.log_ell**2 + g.log_sf**2 + g.log_noise**2)


@program(np.array([0.3, -0.6, 0.9, 0.2]), hessian=True)
def jacobian_of_a_softmax_for_a_log_det_penalty(z):
    def softmax(v):
        e = np.exp(v - np.max(v))
        return e / np.sum(e)

    J = cr.jacobian(softmax, z, mode="auto")
    p = softmax(z)
    # the softmax Jacobian diag(p) - p p^T has rank n-1: a ridge makes its log-det finite
    return np.linalg.slogdet(J + np.outer(p, p) + 0.1 * np.eye(4))[1] - p @ np.log(p)


@program(np.array([1.2, 0.7]), nested=True)
def derivative_of_a_scalar_path_length(ab):
    def curve(t, a, b):
        return np.stack([a * np.cos(t), b * np.sin(t)])

    ts = np.linspace(0.0, np.pi / 2, 7)
    speeds = [np.linalg.norm(cr.derivative(lambda t: curve(t, ab[0], ab[1]), t)) for t in ts]
    return np.trapezoid(np.stack(speeds), ts)


# ----- more factorisations and their options -----------------------------------------------------


@program(np.array([[0.2, 1.5, 0.3], [2.0, 0.1, -0.4], [0.5, 0.3, 1.8]]), refuses=LINALG)
def explicit_plu_factors_and_a_permuted_solve(A):
    P, L, U = scipy.linalg.lu(A)
    b = np.array([1.0, -0.5, 0.25])
    y = scipy.linalg.solve_triangular(L, P.T @ b, lower=True, unit_diagonal=True)
    x = scipy.linalg.solve_triangular(U, y)
    PL, U2 = scipy.linalg.lu(A, permute_l=True)
    return x @ x + np.sum(np.log(np.abs(np.diag(U)))) + np.sum(PL * U2[::-1])


@program(spd(4, 12), np.array([[0.5, 1.0], [-0.3, 0.2], [0.8, -0.6], [0.1, 0.4]]), hessian=True, refuses=LINALG)
def upper_cholesky_factor_reused(S, B):
    c, lower = scipy.linalg.cho_factor(S)  # upper by default
    X = scipy.linalg.cho_solve((c, lower), B)
    R = scipy.linalg.cholesky(S)  # upper
    z = scipy.linalg.solve_triangular(R, B[:, 0], trans="T")
    return np.sum(X * B) + z @ z + np.sum(np.log(np.diag(np.triu(c))))


@program(np.array([[3.0, 0.5, 0.2], [0.4, 2.0, -0.3], [0.1, 0.6, 1.5]]), np.array([0.2, -0.7, 1.1]), refuses=LINALG)
def transposed_and_symmetric_solves(A, b):
    x1 = scipy.linalg.solve(A, b, transposed=True)
    S = A + A.T
    x2 = scipy.linalg.solve(S, b, assume_a="sym")
    lu = scipy.linalg.lu_factor(A)
    x3 = scipy.linalg.lu_solve(lu, b, trans=2)
    return x1 @ (A.T @ x1) + x2 @ b + np.sum(x3**2)


@program(np.array([[2.0, 0.4, 0.1], [0.3, 1.5, -0.2], [0.1, -0.6, 1.0], [0.5, 0.2, 0.7]]), hessian=True)
def complete_and_r_only_qr(A):
    Q, R = np.linalg.qr(A, mode="complete")
    R_only = np.linalg.qr(A, mode="r")
    null_vector = Q[:, 3]
    b = np.array([1.0, 0.5, -0.5, 0.2])
    return (null_vector @ b) ** 2 + np.sum(np.abs(np.diag(R_only))) + np.sum(np.abs(np.diag(R)) ** 2)


@program(
    np.array([[1.0, 0.3], [0.4, -0.2], [0.7, 1.1], [-0.5, 0.6]]),
    np.array([[0.5, 1.0], [1.5, -0.5], [0.2, 0.3], [-1.0, 0.8]]),
    nested=True,
)
def lstsq_with_several_right_hand_sides(X, Y):
    coef, residuals, rank, sv = np.linalg.lstsq(X, Y, rcond=None)
    fitted = X @ coef
    r2 = 1.0 - residuals / np.sum((Y - Y.mean(axis=0)) ** 2, axis=0)
    return np.sum(coef**2) + np.sum(r2) + 0.1 * np.sum(fitted**2)


@program(spd(3, 13), hessian=True, refuses=LINALG)
def pinvh_of_a_covariance_and_whitened_scores(S):
    P = scipy.linalg.pinvh(S)
    X = np.array([[0.3, -0.2, 0.5], [1.0, 0.4, -0.3]])
    return np.sum((X @ P) * X) + np.trace(P @ S @ P)


@program(np.array([[0.2, 1.5, 0.3], [2.0, 0.1, -0.4], [0.5, 0.3, 1.8], [1.0, -1.0, 0.5]]))
def vector_and_matrix_norms_along_axes(A):
    rows = np.linalg.norm(A, axis=1)
    cols = np.linalg.norm(A, ord=1, axis=0)
    smallest_sv = np.linalg.norm(A, ord=-2)
    neg_inf = np.linalg.norm(A[0], ord=-np.inf)
    return np.sum(rows**2) + np.sum(np.sqrt(cols)) + smallest_sv + neg_inf + np.linalg.norm(A, ord=-1)


@program(np.array([[0.5, 2.0, 0.1], [1.5, 0.3, -0.2], [0.2, 0.4, 1.0]]), hessian=True, nested=True)
def slogdet_of_a_matrix_with_negative_determinant(A):
    sign, logabsdet = np.linalg.slogdet(A)
    d = np.linalg.det(A)
    inv = np.linalg.inv(A)
    return sign * logabsdet + d**2 + np.sum(inv**2)


@program(np.stack([spd(3, 20), spd(3, 21), spd(3, 22)]), hessian=True, nested=True)
def batched_cholesky_solves_and_log_dets(K):
    L = np.linalg.cholesky(K)
    y = np.array([0.5, -0.3, 0.8])
    alphas = np.linalg.solve(K, np.broadcast_to(y[:, None], (3, 3, 1)))[..., 0]
    logdets = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
    sign, slog = np.linalg.slogdet(K)
    return np.sum(alphas * y) + np.sum(logdets) + np.sum(slog) + np.sum(np.linalg.det(K) ** 0.5)


@program(np.stack([np.array([[0.1, 0.4], [-0.3, 0.05]]), np.array([[-0.2, 0.1], [0.3, -0.4]])]), refuses=LINALG)
def batched_matrix_exponentials(A):
    P = scipy.linalg.expm(A)
    x0 = np.array([1.0, -0.5])
    return np.sum((P @ x0) ** 2) + np.sum(np.trace(P, axis1=1, axis2=2))


@program(np.stack([spd(3, 23), spd(3, 24)]), hessian=True)
def batched_eigh_spectral_entropy(S):
    w, V = np.linalg.eigh(S)
    p = w / np.sum(w, axis=-1, keepdims=True)
    entropy = -np.sum(p * np.log(p), axis=-1)
    top = V[..., -1]
    return np.sum(entropy) + np.sum(top**4)


@program(np.array([[0.0, 1.0, 0.2], [-2.0, -0.3, 0.5], [0.1, 0.0, -1.0]]), hessian=True)
def complex_eigenpairs_of_a_damped_system(A):
    lam, V = np.linalg.eig(A)
    damping = -np.real(lam)
    frequency = np.abs(np.imag(lam))
    # normalisation-invariant: the modal participation |v_i|^2 / |v|^2
    share = np.abs(V) ** 2 / np.sum(np.abs(V) ** 2, axis=0)
    return (
        np.sum(damping**2) + np.sum(frequency) + np.sum(share[0] * np.array([1.0, 2.0, 3.0])[np.argsort(np.real(lam))])
    )


@program(np.array([[2.0, 0.5, 0.1], [0.3, 1.0, -0.4], [0.2, 0.6, 3.0], [0.7, -0.1, 0.4]]), hessian=True, refuses=LINALG)
def scipy_svd_with_gesvd_and_nuclear_proximal_step(A):
    U, s, Vt = scipy.linalg.svd(A, full_matrices=False, lapack_driver="gesvd")
    shrunk = np.maximum(s - 0.5, 0.0)
    prox = (U * shrunk) @ Vt
    return np.sum((prox - A) ** 2) + np.sum(scipy.linalg.svdvals(prox))


@program(np.array([[0.6, 0.2, 0.2], [0.1, 0.7, 0.2], [0.3, 0.3, 0.4]]), hessian=True)
def stationary_distribution_by_eig_and_by_solve(P):
    n = P.shape[0]
    A = np.vstack([P.T - np.eye(n), np.ones((1, n))])
    b = np.concatenate([np.zeros(n), [1.0]])
    pi_ls = np.linalg.lstsq(A, b, rcond=None)[0]
    w, V = np.linalg.eig(P.T)
    k = np.argmin(np.abs(w - 1.0))
    v = np.real(V[:, k])
    pi_eig = v / np.sum(v)
    return pi_ls @ np.array([1.0, 2.0, 3.0]) + np.sum(pi_eig**2)


@program(np.array([[0.9, 0.1], [-0.2, 0.8]]), np.array([0.3, 0.5]), hessian=True, nested=True)
def lqr_gain_by_riccati_recursion_backwards(A, q):
    B = np.array([[0.0], [1.0]])
    Q, R = np.diag(np.exp(q)), np.array([[0.5]])
    P = Q
    gains = []
    for _ in range(10):
        K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ (A - B @ K)
        gains.append(K)
    x = np.array([1.0, -0.5])
    cost = 0.0
    for K in gains[::-1]:
        u = -K @ x
        cost = cost + x @ Q @ x + u @ R @ u
        x = A @ x + B @ u
    return cost


# ----- more solver options -------------------------------------------------------------------------


@program(np.array([1.2, 0.5]), hessian=True, refuses=LINALG)
def halley_root_with_fprime2_and_full_output(params):
    a, b = params

    def f(x):
        return x**3 + a * x - b - 2.0

    root, info = scipy.optimize.newton(
        f, 1.0, fprime=lambda x: 3 * x**2 + a, fprime2=lambda x: 6 * x, tol=1e-13, full_output=True
    )
    secant = scipy.optimize.newton(lambda x, c: np.tanh(x) - c, 0.1, args=(b / 4,), tol=1e-13)
    return root**2 + secant + float(info.converged)


@program(np.array([0.7, 1.3]), refuses=SOLVER)
def root_scalar_with_secant_and_halley(params):
    k, c = params

    def g(x):
        return np.exp(-k * x) - c * x

    r1 = scipy.optimize.root_scalar(g, x0=0.3, x1=0.6, method="secant", xtol=1e-13)
    r2 = scipy.optimize.root_scalar(
        g,
        x0=0.5,
        fprime=lambda x: -k * np.exp(-k * x) - c,
        fprime2=lambda x: k * k * np.exp(-k * x),
        method="halley",
        xtol=1e-13,
    )
    return r1.root + 2.0 * r2.root + r1.root * k


@program(np.array([0.4, 0.9]), refuses=REVERSE_RULED)
def ridder_toms748_and_bisect_with_full_output(params):
    mu, s = params[0], np.exp(params[1])

    def cdf_gap(x, p):
        return scipy.special.ndtr((x - mu) / s) - p

    median, r = scipy.optimize.ridder(cdf_gap, -10.0, 10.0, args=(0.5,), xtol=1e-14, full_output=True)
    q75 = scipy.optimize.toms748(cdf_gap, -10.0, 10.0, args=(0.75,), xtol=1e-14)
    q25 = scipy.optimize.bisect(cdf_gap, -10.0, 10.0, args=(0.25,), xtol=1e-14)
    return median + (q75 - q25) ** 2 + r.iterations * 0.0


@program(np.array([0.5, 0.3]), refuses=REVERSE_RULED)
def fsolve_with_full_output_and_array_args(p):
    A = np.array([[3.0, 1.0], [1.0, 2.0]])

    def equations(x, A, p):
        return A @ x + 0.1 * x**3 - p

    x, info, ier, msg = scipy.optimize.fsolve(equations, np.zeros(2), args=(A, p), full_output=True, xtol=1e-13)
    return x @ x + 0.0 * ier


@program(np.array([0.6, 0.8]), nested=True, refuses=REVERSE_RULED)
def root_with_jacobian_returned_with_the_value_lm(params):
    a, b = params

    def residual_and_jacobian(x):
        F = np.stack([x[0] ** 2 + x[1] ** 2 - a - 1.0, x[0] - b * x[1]])
        J = np.stack([np.stack([2 * x[0], 2 * x[1]]), np.stack([np.ones(()), -b * np.ones(())])])
        return F, J

    sol = scipy.optimize.root(residual_and_jacobian, np.array([1.0, 1.0]), jac=True, method="lm", tol=1e-14)
    return sol.x[0] - 2.0 * sol.x[1] ** 2


@program(np.array([0.3, -0.2]), hessian=True, refuses=REVERSE_RULED)
def newton_cg_with_hessian_inside_a_loss(target):
    def f(x, t):
        return np.sum(np.cosh(x - t)) + 0.5 * (x[0] * x[1]) ** 2

    res = scipy.optimize.minimize(
        f,
        np.zeros(2),
        args=(target,),
        method="Newton-CG",
        jac=lambda x, t: cr.gradient(f, x, t)[0],
        hess=lambda x, t: cr.hessian(lambda z: f(z, t), x),
        options={"xtol": 1e-13},
    )
    return res.x @ np.array([1.0, 2.0]) + res.fun


@program(np.array([0.8, 1.6, 2.9, 4.2, 5.1]), refuses=REVERSE_RULED, rtol=1e-5)
def least_squares_with_bounds_and_args(y):
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0])

    def residuals(p, t, y):
        return p[0] * t + p[1] * np.sqrt(t) - y

    fit = scipy.optimize.least_squares(
        residuals,
        np.array([0.5, 0.5]),
        args=(t, y),
        bounds=([0.0, 0.0], [10.0, 10.0]),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    return fit.x @ np.array([1.0, 3.0]) + np.sum(fit.fun**2)


@program(
    np.array([0.9, 0.7, 0.52, 0.41, 0.33]), np.array([0.05, 0.05, 0.04, 0.03, 0.03]), refuses=REVERSE_RULED, rtol=1e-4
)
def weighted_curve_fit_with_sigma(y, sigma):
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])

    def model(t, a, k):
        return a * np.exp(-k * t)

    def jac(t, a, k):
        return np.stack([np.exp(-k * t), -a * t * np.exp(-k * t)], axis=1)

    popt, _ = scipy.optimize.curve_fit(
        model, t, y, p0=[1.0, 0.3], sigma=sigma, absolute_sigma=True, jac=jac, xtol=1e-15, ftol=1e-15
    )
    return popt[0] * popt[1]


@program(np.array([0.4, 0.6]), refuses=LINALG, rtol=5e-4)
def minimize_scalar_with_args_and_golden(ab):
    def f(x, a, b):
        return (x - a) ** 4 + np.exp(b * x) - x

    res = scipy.optimize.minimize_scalar(f, args=(ab[0], ab[1]), method="golden", tol=1e-10)
    return res.x**2


FORECAST_TRUTH = np.array([1.0, 2.0, 3.0, 4.0])
FORECAST_B = FORECAST_TRUTH + np.array([0.1, -0.2, 0.15, -0.05])


@program(np.array([2.9478, 2.3, 2.85, 4.75]), refuses=FUNCTIONAL, rtol=1e-4)
def forecast_blend_weight_by_bounded_minimize_scalar(forecast_a):
    def blended_sse(w):
        return np.sum((w * forecast_a + (1 - w) * FORECAST_B - FORECAST_TRUTH) ** 2)

    res = scipy.optimize.minimize_scalar(blended_sse, bounds=(0.0, 1.0), method="bounded")
    return 1e3 * res.x + res.fun


# ----- more integrals and ODEs -------------------------------------------------------------------------


@program(np.array([0.3, 0.8]), hessian=True, refuses=REVERSE_RULED)
def tail_expectation_with_an_infinite_limit(params):
    mu, log_s = params
    s = np.exp(log_s)

    def tail_integrand(x):
        return (x - 1.0) * np.exp(-0.5 * ((x - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi))

    expected_shortfall, _ = scipy.integrate.quad(tail_integrand, 1.0, np.inf, epsabs=1e-13, epsrel=1e-12)
    whole_line, _ = scipy.integrate.quad(
        lambda x: np.exp(-(x**2) / (2 * s * s) - mu * x**4), -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12
    )
    return expected_shortfall + 0.1 * whole_line


@program(np.array([1.0, 2.5]), refuses=LINALG)
def reversed_limits_and_a_keyword_end_in_quad(ab):
    a, b = ab[0], ab[1]
    backwards, _ = scipy.integrate.quad(lambda x: np.sin(x) * x, b, a, epsabs=1e-13)
    forwards, _ = scipy.integrate.quad(lambda x: np.cos(x) ** 2, a, b=b, epsabs=1e-13)
    return backwards + forwards


@program(np.array([0.5, 0.2]), refuses=REVERSE_RULED, rtol=1e-5)
def lotka_volterra_fit_with_solve_ivp_args_and_dop853(log_params):
    a, b = np.exp(log_params)

    def rhs(t, z, a, b):
        prey, pred = z
        return np.stack([a * prey - 0.4 * prey * pred, -b * pred + 0.3 * prey * pred])

    t_obs = np.array([0.5, 1.0, 1.5, 2.0])
    sol = scipy.integrate.solve_ivp(
        rhs, (0.0, 2.0), np.array([1.0, 0.5]), method="DOP853", t_eval=t_obs, args=(a, b), rtol=1e-12, atol=1e-12
    )
    data = np.array([[1.3, 1.6, 2.0, 2.3], [0.45, 0.42, 0.4, 0.4]])
    return np.sum((sol.y - data) ** 2)


@program(np.array([0.9, 0.1]), refuses=REVERSE_RULED, rtol=1e-5)
def oscillator_fit_with_an_np_array_right_hand_side(params):
    omega, damping = np.exp(params[0]), params[1]

    def rhs(t, y):
        return np.array([y[1], -(omega**2) * y[0] - 2 * damping * omega * y[1]])

    t_obs = np.array([0.5, 1.0, 1.5])
    sol = scipy.integrate.solve_ivp(rhs, (0.0, 1.5), np.array([1.0, 0.0]), t_eval=t_obs, rtol=1e-11, atol=1e-12)
    return np.sum((sol.y[0] - np.array([0.6, -0.1, -0.5])) ** 2)


@program(np.array([1.0, 0.3]), 1.5, refuses={"tape": SCIPY_WRAPPER}, rtol=1e-5)
def initial_state_and_final_time_through_solve_ivp(y0, t_end):
    def rhs(t, y):
        return np.stack([y[1], -np.sin(y[0]) - 0.2 * y[1]])

    sol = scipy.integrate.solve_ivp(rhs, (0.0, t_end), y0, rtol=1e-12, atol=1e-12)
    final = sol.y[:, -1]
    return final[0] ** 2 + 0.5 * final[1] ** 2


@program(
    1.2,
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED, "hessian-source": "second"},
    rtol=1e-5,
)
def pendulum_angle_at_a_differentiated_horizon(t_end):
    def rhs(t, y):
        return np.stack([y[1], -np.sin(y[0])])

    sol = scipy.integrate.solve_ivp(rhs, (0.0, t_end), np.array([0.8, 0.0]), rtol=1e-12, atol=1e-12)
    return sol.y[0, -1] ** 2 + 0.1 * t_end


@program(np.array([2.0, 0.5]), refuses=REVERSE_RULED, rtol=1e-5)
def stiff_chemistry_with_radau_and_observation_times(log_k):
    k1, k2 = np.exp(log_k)

    def rhs(t, c):
        a, b = c[0], c[1]
        return np.stack([-k1 * a + k2 * b * b, k1 * a - 2 * k2 * b * b])

    t_obs = np.array([0.2, 1.0, 3.0])
    sol = scipy.integrate.solve_ivp(
        rhs, (0.0, 3.0), np.array([1.0, 0.0]), method="Radau", t_eval=t_obs, rtol=1e-11, atol=1e-13
    )
    return np.sum(sol.y[1] * np.array([1.0, 2.0, 3.0]))


@program(np.array([0.0, 0.7, 1.4, 2.0]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}, rtol=1e-5)
def odeint_at_differentiated_sample_times(t):
    def rhs(y, t):
        return np.stack([y[1], -4.0 * y[0]])

    ys = scipy.integrate.odeint(rhs, np.array([1.0, 0.0]), t, rtol=1e-12, atol=1e-12)
    return np.sum(ys[:, 0] * np.array([1.0, 2.0, 3.0, 4.0]))


@program(np.array([0.8, 0.3]), refuses=REVERSE_RULED, rtol=1e-5)
def odeint_with_a_jacobian_and_tfirst(params):
    k, c = params

    def rhs(t, y):
        return np.stack([-k * y[0] + c * y[1], k * y[0] - c * y[1] - 0.1 * y[1] ** 2])

    def jac(t, y):
        return np.array([[-k, c], [k, -c - 0.2 * y[1]]])

    ys = scipy.integrate.odeint(
        rhs, np.array([1.0, 0.0]), np.array([0.0, 0.5, 2.0]), Dfun=jac, tfirst=True, rtol=1e-12, atol=1e-12
    )
    return ys[-1, 1] + ys[1, 0] ** 2


# ----- more of the API inside programs ---------------------------------------------------------------


def two_layer(params, x):
    h = np.tanh(params["W1"] @ x + params["b1"])
    return params["w2"] @ h


@program(
    {
        "W1": np.array([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]]),
        "b1": np.array([0.1, 0.0, -0.1]),
        "w2": np.array([0.7, -0.4, 0.3]),
    }
)
def input_gradient_penalty_with_a_dict_of_weights(params):
    X = np.array([[0.3, -0.7], [1.1, 0.4], [-0.5, 0.9]])
    y = np.array([0.2, -0.1, 0.4])
    loss, penalty = 0.0, 0.0
    for x, t in zip(X, y):
        pred, (gx,) = cr.value_and_gradient(two_layer, params, x, argnums=(1,))
        loss = loss + (pred - t) ** 2
        penalty = penalty + gx @ gx
    return loss + 0.1 * penalty


@program(np.array([0.4, -0.3, 0.8]), hessian=True, nested=True)
def newton_step_by_hessian_and_solve_then_evaluate(x):
    def f(z):
        return np.sum(np.exp(z)) - z @ np.array([1.0, 2.0, 0.5]) + 0.25 * (z[0] * z[2]) ** 2

    g = cr.gradient(f, x)[0]
    H = cr.hessian(f, x)
    step = np.linalg.solve(H, g)
    return f(x - step) + 0.5 * g @ step


class Particle(NamedTuple):
    q: np.ndarray
    p: np.ndarray


@program(np.array([0.5, -0.2]), np.array([0.1, 0.4]), hessian=True, nested=True)
def symplectic_euler_with_gradients_of_a_potential_in_a_namedtuple(q0, p0):
    def potential(q):
        return 0.5 * q @ q + 0.1 * q[0] ** 4 + 0.2 * q[0] * q[1]

    state = Particle(q0, p0)
    for _ in range(5):
        p = state.p - 0.1 * cr.gradient(potential, state.q)[0]
        state = Particle(state.q + 0.1 * p, p)
    return potential(state.q) + 0.5 * state.p @ state.p


@program(np.array([0.3, 0.9, -0.4]), hessian=True)
def jacobian_of_a_dict_output_function(x):
    def features(z):
        return {"square": z**2, "pair": np.stack([z[0] * z[1], z[1] * z[2]])}

    J = cr.jacobian(features, x, mode="forward")
    Jr = cr.jacobian(features, x, mode="reverse")
    return np.sum(J["square"] ** 2) + np.sum(J["pair"] * Jr["pair"]) + np.sum(x**3)


@program(np.array([0.2, 0.5]), nested=True)
def jvp_with_a_dict_of_primals(v):
    def energy(state):
        return np.sum(state["x"] ** 2 * state["k"]) + np.sin(state["x"][0] * state["k"][1])

    primal = {"x": v, "k": np.array([1.5, 0.5])}
    tangent = {"x": np.array([1.0, 0.0]), "k": np.array([0.0, 1.0])}
    value, directional = cr.jvp(energy, (primal,), (tangent,))
    return value + directional**2


@dataclasses.dataclass
class Truss:
    stiffness: np.ndarray
    load: np.ndarray


@cr.checkpoint
def displacement(truss):
    k = truss.stiffness
    zero = np.zeros(())
    K = np.stack(
        [
            np.stack([k[0] + k[1], -k[1], zero]),
            np.stack([-k[1], k[1] + k[2], -k[2]]),
            np.stack([zero, -k[2], k[2] + k[0]]),
        ]
    )
    return np.linalg.solve(K, truss.load)


@program(Truss(np.array([2.0, 1.5, 1.0]), np.array([0.0, 0.5, 1.0])))
def checkpointed_solve_of_a_dataclass_truss(truss):
    u = displacement(truss)
    compliance = truss.load @ u
    return compliance + 0.1 * np.sum(u**2)


@program(np.array([1.0, 0.5, -0.3]), hessian=True, nested=True)
def derivative_of_derivative_for_a_taylor_model(c):
    def model(t):
        return c[0] * np.exp(c[1] * t) + c[2] * t**3

    d1 = cr.derivative(model, 0.4)
    d2 = cr.derivative(lambda t: cr.derivative(model, t), 0.4)
    return model(0.4) + d1**2 + 0.5 * d2


# ----- matrices stored in one triangle ------------------------------------------------------------------

UPPER_STORED = np.triu(spd(3, 30)) + np.tril(RNG.normal(size=(3, 3)), -1)  # the lower triangle is scratch


@program(UPPER_STORED, hessian=True)
def eigh_reading_the_upper_triangle_only(A):
    w, V = np.linalg.eigh(A, UPLO="U")
    lam = np.linalg.eigvalsh(A, UPLO="U")
    return np.sum(w**2) + np.sum(V[:, -1] ** 4) + np.sum(np.log(lam))


@program(UPPER_STORED.T.copy(), hessian=True, nested=True)
def numpy_cholesky_and_eigh_reading_the_lower_triangle(A):
    L = np.linalg.cholesky(A)
    w = np.linalg.eigvalsh(A)
    return 2.0 * np.sum(np.log(np.diag(L))) + np.sum(L**2) + np.sum(w**3)


@program(UPPER_STORED, np.array([0.4, -0.2, 0.9]), hessian=True, refuses=LINALG)
def scipy_factorisations_of_a_triangle_stored_matrix(A, b):
    R = scipy.linalg.cholesky(A)  # upper: reads A's upper triangle
    c, low = scipy.linalg.cho_factor(A, lower=False)
    x = scipy.linalg.cho_solve((c, low), b)
    y = scipy.linalg.solve(A, b, assume_a="pos")
    w = scipy.linalg.eigh(A, lower=False, eigvals_only=True)
    return np.sum(R**2) + x @ b + y @ y + np.sum(np.sqrt(w))


@program(UPPER_STORED.T.copy(), np.array([0.4, -0.2, 0.9]), refuses=LINALG)
def symmetric_solve_and_pinvh_of_a_lower_stored_matrix(A, b):
    x = scipy.linalg.solve(A, b, assume_a="sym", lower=True)
    P = scipy.linalg.pinvh(A, lower=True)
    v = scipy.linalg.eigh(A, lower=True)[1][:, 0]
    return x @ x + np.sum(P * np.arange(9.0).reshape(3, 3)) + v[0] ** 2


@program(np.array([[0.2, 1.5, 0.3], [2.0, 0.1, -0.4], [0.5, 0.3, 1.8]]), refuses=LINALG)
def unit_lower_and_upper_factors_read_out_of_lu_factor(A):
    lu, piv = scipy.linalg.lu_factor(A)
    L = np.tril(lu, -1) + np.eye(3)
    U = np.triu(lu)
    W = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
    return np.sum(L * W) + np.sum(U * W.T) + np.sum(L @ U)


# ----- more decompositions, banded and structured matrices ----------------------------------------------


@program(np.array([[1.0, 0.3], [0.4, -0.2], [0.7, 1.1], [-0.5, 0.6]]), hessian=True)
def full_svd_projector_onto_the_orthogonal_complement(A):
    U, s, Vt = np.linalg.svd(A, full_matrices=True)
    P_perp = U[:, 2:] @ U[:, 2:].T
    b = np.array([0.5, -1.0, 0.3, 0.8])
    sv = np.linalg.svd(A, compute_uv=False)
    return b @ P_perp @ b + np.sum(sv**3)


@program(np.array([[2.0, 0.4, 0.1], [0.3, 1.5, -0.2], [0.1, -0.6, 1.0], [0.5, 0.2, 0.7]]), refuses=LINALG)
def rank_revealing_qr_with_column_pivoting(A):
    Q, R, perm = scipy.linalg.qr(A, mode="economic", pivoting=True)
    R_only = scipy.linalg.qr(A, mode="r")[0]
    return np.sum(np.abs(np.diag(R))) + np.sum(R_only**2) + np.sum((Q @ R)[:, np.argsort(perm)] * A)


@program(np.array([[1.2, 0.5, 0.1], [0.2, 0.9, 0.4], [0.1, 0.3, 1.5]]), refuses=LINALG)
def logm_and_sqrtm_of_a_nonsymmetric_matrix(A):
    L = scipy.linalg.logm(A)
    R = scipy.linalg.sqrtm(A)
    return np.sum(np.real(L) ** 2) + np.trace(np.real(R)) + np.sum(np.real(R @ R - A) ** 2)


@program(np.array([[-2.0, 3.0, 0.5], [-1.5, -1.0, 2.0], [0.3, -2.5, -0.8]]), hessian=True, refuses=LINALG)
def expm_of_a_large_norm_generator_by_scaling_and_squaring(A):
    P = scipy.linalg.expm(2.0 * A)
    return np.sum(P**2) + np.trace(P)


@program(np.array([[2.0, 0.5], [0.3, 1.5]]), hessian=True, nested=True)
def negative_matrix_powers_and_a_batch_of_inverses(A):
    Ainv2 = np.linalg.matrix_power(A, -2)
    stack = np.stack([A, A.T + np.eye(2), A @ A])
    invs = np.linalg.inv(stack)
    return np.sum(Ainv2) + np.sum(invs**2) + np.linalg.cond(A) + np.linalg.cond(A, "fro") + np.linalg.cond(A, 1)


@program(np.array([2.0, 2.5, 3.0, 2.2, 1.8]), np.array([0.3, -0.1, 0.5, 0.2, -0.4]), hessian=True, refuses=LINALG)
def implicit_heat_step_by_banded_solves(diag, f):
    n = len(diag)
    off = -0.5 * np.ones(n - 1)
    ab = np.stack([np.concatenate([[0.0], off]), diag, np.concatenate([off, [0.0]])])
    u = scipy.linalg.solve_banded((1, 1), ab, f)
    abh = np.stack([np.concatenate([[0.0], off]), diag])
    v = scipy.linalg.solveh_banded(abh, f)
    return u @ u + v @ f


@program(np.array([1.0, 0.6, 0.3, 0.1]), hessian=True, refuses=LINALG)
def toeplitz_circulant_and_block_diagonal_covariances(acf):
    T = scipy.linalg.toeplitz(acf)
    C = scipy.linalg.circulant(acf)
    H = scipy.linalg.hankel(acf[:3], acf[1:])
    B = scipy.linalg.block_diag(T[:2, :2], np.array([[acf[0]]]))
    y = np.array([0.3, -0.2, 0.5, 0.1])
    return y @ np.linalg.solve(T, y) + np.linalg.slogdet(T)[1] + np.sum(C[0] * C[1]) + np.sum(H**2) + np.trace(B)


@program(
    np.array([[0.0, 1.0], [-2.0, -0.5]]),
    refuses={"source": "no differentiation rule", "tape": ARRAY_OF_TRACKED, "forward": ARRAY_OF_TRACKED},
)
def lqr_by_the_continuous_algebraic_riccati_equation(A):
    B = np.array([[0.0], [1.0]])
    P = scipy.linalg.solve_continuous_are(A, B, np.eye(2), np.array([[1.0]]))
    return np.trace(P)


@program(
    np.array([[-1.0, 0.5, 0.0], [0.2, -2.0, 0.3], [0.0, 0.4, -0.5]]), 0.3, refuses={"tape": SCIPY_WRAPPER}, rtol=1e-5
)
def costate_integrated_backwards_in_time(A, weight):
    def costate(t, lam):
        return -A.T @ lam - weight * np.array([1.0, 0.0, 0.0])

    sol = scipy.integrate.solve_ivp(
        costate, (2.0, 0.0), np.array([0.0, 1.0, -0.5]), t_eval=np.array([2.0, 1.0, 0.0]), rtol=1e-12, atol=1e-12
    )
    return np.sum(sol.y[:, -1] ** 2) + np.sum(sol.y[:, 1])


@program(np.array([0.4, 1.1]), hessian=True, refuses=LINALG)
def fixed_point_by_plain_iteration_and_del2(params):
    def update(x, a, b):
        return a * np.cos(x) + 0.1 * b

    x_del2 = scipy.optimize.fixed_point(update, 0.5, args=(params[0], params[1]), xtol=1e-14)
    x_iter = scipy.optimize.fixed_point(
        update, 0.5, args=(params[0], params[1]), method="iteration", xtol=1e-14, maxiter=5000
    )
    return x_del2 + 2.0 * x_iter


@program(np.array([0.3, -0.5]), refuses=SOLVER)
def minimize_with_value_and_gradient_together(center):
    def f_and_grad(x):
        value, (g,) = cr.value_and_gradient(lambda z: np.sum((z - center) ** 4) + np.sum(z**2), x)
        return value, g

    res = scipy.optimize.minimize(f_and_grad, np.zeros(2), jac=True, method="BFGS", tol=1e-10)
    return res.x @ np.array([1.0, 2.0]) + res.fun


@program(np.array([[0.5, -0.2], [0.3, 0.8]]), hessian=True)
def hessian_of_a_matrix_argument_inside_a_program(W):
    def loss(M):
        return np.sum(np.tanh(M @ np.array([1.0, -0.5]))) + 0.5 * np.sum(M**2)

    H = cr.hessian(loss, W)
    return loss(W) + 0.1 * np.sum(H**2) + 0.01 * np.trace(H.reshape(4, 4))


@program(np.array([0.4, -0.3, 0.8, 0.1]), nested=True)
def jacobian_in_chunks_and_jvp_of_a_tuple_output(x):
    def field(z):
        return np.stack([np.sin(z[0] * z[1]), z[2] * z[3], np.exp(z[0] - z[3]), z @ z])

    J = cr.jacobian(field, x, mode="forward", chunk_size=2)
    (a, b), (da, db) = cr.jvp(lambda z: (field(z), z[0] * z), (x,), (np.array([1.0, 0.0, -1.0, 0.5]),))
    return np.sum(J**2) + da @ a + db @ b


# ----- solvers inside solvers, and more of their options ----------------------------------------------


@program(np.array([0.5, 0.3]), hessian=True, refuses=REVERSE_RULED)
def quantile_of_a_density_defined_by_quad_via_brentq(params):
    a, b = np.exp(params)

    def density(x):
        return np.exp(-a * x - b * x**2)

    total, _ = scipy.integrate.quad(density, 0.0, 20.0, epsabs=1e-14, epsrel=1e-13)

    def cdf_gap(q):
        return scipy.integrate.quad(density, 0.0, q, epsabs=1e-14, epsrel=1e-13)[0] / total - 0.5

    median = scipy.optimize.brentq(cdf_gap, 0.0, 10.0, xtol=1e-14)
    return median + 0.1 * total


@program(0.6, nested=True, refuses=REVERSE_RULED)
def iterated_integral_over_a_triangle_by_nested_quad(k):
    def inner(x):
        return scipy.integrate.quad(lambda y: np.exp(-k * (x * x + y * y)), 0.0, x, epsabs=1e-13, epsrel=1e-12)[0]

    outer, _ = scipy.integrate.quad(inner, 0.0, 1.5, epsabs=1e-13, epsrel=1e-12)
    return outer


@program(np.array([0.9, 0.5, 1.6, 2.1, 2.4, 3.3]), refuses=REVERSE_RULED, rtol=1e-4)
def curve_fit_of_two_independent_variables_with_full_output(z):
    xy = np.array([[0.0, 1.0, 2.0, 0.0, 1.0, 2.0], [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])

    def plane(xy, a, b, c):
        return a + b * xy[0] + c * np.sqrt(1.0 + xy[1])

    def jac(xy, a, b, c):
        return np.stack([np.ones(xy.shape[1]), xy[0], np.sqrt(1.0 + xy[1])], axis=1)

    popt, pcov, info, msg, ier = scipy.optimize.curve_fit(plane, xy, z, jac=jac, full_output=True)
    return popt @ np.array([1.0, -2.0, 0.5])


@program(np.array([3.0, 2.2, 1.4, 1.1, 0.8]), refuses=REVERSE_RULED, rtol=1e-4)
def least_squares_with_lm_and_x_scale_reading_the_residuals(y):
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])

    def residuals(p):
        return p[0] * np.exp(-p[1] * t) - y

    def jac(p):
        return np.stack([np.exp(-p[1] * t), -p[0] * t * np.exp(-p[1] * t)], axis=1)

    fit = scipy.optimize.least_squares(
        residuals,
        np.array([2.0, 0.3]),
        jac=jac,
        method="lm",
        x_scale=np.array([1.0, 0.1]),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    return np.sum(fit.fun * t) + fit.x[1]


@program(np.array([0.3, 0.8, 1.5, 2.4]), hessian=True, refuses=REVERSE_RULED)
def vectorised_secant_for_several_roots(c):
    def f(x, c):
        return x**3 + x - c

    roots = scipy.optimize.newton(f, np.ones(4), args=(c,), tol=1e-14, maxiter=200)
    return np.sum(roots**2) + roots[0] * roots[-1]


@program(np.array([0.4, 1.2]), refuses=REVERSE_RULED)
def root_scalar_bisect_and_toms748_with_args(params):
    def f(x, a, b):
        return np.log1p(x) * a - b + x**2

    r1 = scipy.optimize.root_scalar(f, args=(params[0], params[1]), bracket=(0.0, 3.0), method="bisect", xtol=1e-14)
    r2 = scipy.optimize.root_scalar(
        f, args=(params[0], 2 * params[1]), bracket=(0.0, 3.0), method="toms748", xtol=1e-14
    )
    return r1.root * r2.root


@program(np.array([0.6, -0.4]), refuses=REVERSE_RULED, rtol=1e-4)
def bilevel_stackelberg_leader_with_an_inner_minimize(leader):
    def follower_cost(y, x):
        return np.sum((y - 0.5 * x) ** 2) + 0.1 * np.sum(y**4) + y[0] * y[1] * 0.2

    def leader_cost(x):
        y = scipy.optimize.minimize(follower_cost, np.zeros(2), args=(x,), method="BFGS", tol=1e-11).x
        return np.sum((x - 1.0) ** 2) + np.sum(y) ** 2

    return leader_cost(leader)


# ----- spectral functions at repeated eigenvalues ------------------------------------------------------------

WHITEN_DATA = np.array([[0.3, -1.2, 0.5], [1.1, 0.4, -0.7], [-0.6, 0.9, 1.3], [0.2, 0.1, -0.4]])


@program(spd(3, 31), hessian=True)
def whitening_loss_at_a_fitted_covariance(Sigma):
    w, V = np.linalg.eigh(Sigma)
    inv_sqrt = (V / np.sqrt(w)) @ V.T
    Z = WHITEN_DATA @ inv_sqrt
    return 0.5 * np.sum(Z**2 * np.array([1.0, 2.0, 3.0])) + np.sum(np.log(w)) + np.sum(Z[:, 0] * Z[:, 1])


def skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


R_INIT = scipy.linalg.expm(skew(np.array([0.3, -0.2, 0.5])))
LANDMARKS = np.array([[1.0, 0.0, 0.2], [0.0, 1.0, -0.3], [0.5, 0.5, 1.0], [-0.4, 0.8, 0.1]])


@program(np.zeros(3), refuses={"tape": ARRAY_OF_TRACKED})
def pose_update_orthogonalised_by_svd_at_a_rotation(omega):
    M = R_INIT @ (np.eye(3) + skew(omega))
    U, s, Vt = np.linalg.svd(M)
    R = U @ Vt
    target = LANDMARKS @ scipy.linalg.expm(skew(np.array([0.35, -0.1, 0.45]))).T
    return np.sum((LANDMARKS @ R.T - target) ** 2)


@program(np.array([0.2, -0.7]), refuses=REVERSE_RULED, rtol=1e-5)
def pharmacokinetic_auc_by_trapezoid_over_the_solution_times(log_rates):
    ka, ke = np.exp(log_rates)

    def two_compartments(t, y):
        gut, blood = y
        return np.stack([-ka * gut, ka * gut - ke * blood])

    t_eval = np.linspace(0.0, 6.0, 25)
    sol = scipy.integrate.solve_ivp(
        two_compartments, (0.0, 6.0), np.array([1.0, 0.0]), t_eval=t_eval, rtol=1e-11, atol=1e-12
    )
    auc = np.trapezoid(sol.y[1], sol.t)
    return auc + np.max(sol.y[1])


# ----- pullbacks, checkpoints with keywords, auxiliary outputs ---------------------------------------------


@program(np.array([0.9, 0.8, 0.1]), hessian=True, nested=True)
def gauss_newton_direction_by_pullback_and_jvp(theta):
    r, back = cr.pullback(residual_vector, theta)
    g = back(r)[0]  # J^T r
    _, Jg = cr.jvp(residual_vector, (theta,), (g,))  # J J^T r
    step = (g @ g) / (Jg @ Jg) * g  # Cauchy step along the gradient
    return np.sum(residual_vector(theta - step) ** 2) + 0.1 * g @ g


def leapfrog(q, p, dt, stiffness):
    p = p - 0.5 * dt * stiffness * np.sin(q)
    q = q + dt * p
    p = p - 0.5 * dt * stiffness * np.sin(q)
    return q, p


@program(np.array([0.6, -0.3]), np.array([0.0, 0.4]), 1.3, hessian=True, nested=True)
def checkpointed_leapfrog_with_keyword_arguments(q0, p0, stiffness):
    step = cr.checkpoint(leapfrog)
    q, p = q0, p0
    for _ in range(6):
        q, p = step(q, p, dt=0.2, stiffness=stiffness)
    return np.sum(1.0 - np.cos(q)) * stiffness + 0.5 * p @ p


def loss_with_diagnostics(w, X, y):
    z = X @ w
    p = scipy.special.expit(z)
    nll = np.sum(np.logaddexp(0.0, z) - y * z)
    return nll, {"accuracy": np.mean((p > 0.5) == (y > 0.5)), "n_iter": 3, "name": "logistic", "mean_p": np.mean(p)}


@program(np.array([0.2, -0.4, 0.3]), nested=True)
def adagrad_loop_with_integer_and_string_auxiliaries(w0):
    X, y = DESIGN, (RESPONSE > 0.5).astype(float)
    w, accum = w0, np.full(3, 1e-8)
    history = []
    for _ in range(3):
        (loss, aux), g = cr.value_and_gradient(loss_with_diagnostics, w, X, y, argnums=0, has_aux=True)
        accum = accum + g**2
        w = w - 0.3 * g / np.sqrt(accum)
        history.append(aux["mean_p"] * aux["n_iter"] + 0.0 * len(aux["name"]))
    return loss_with_diagnostics(w, X, y)[0] + np.sum(np.stack(history))


@program(np.array([0.5, 1.5]), hessian=True)
def derivative_of_an_array_valued_curve_for_its_curvature(ab):
    def curve(t):
        return np.stack([ab[0] * np.cos(t), ab[1] * np.sin(t), 0.3 * t])

    total = 0.0
    for t in (0.2, 0.9, 1.7):
        d1 = cr.derivative(curve, t)
        d2 = cr.derivative(lambda s: cr.derivative(curve, s), t)
        total = total + np.linalg.norm(np.cross(d1, d2)) / np.linalg.norm(d1) ** 3
    return total


def velocity_verlet(q, p, *, dt, stiffness):
    a = -stiffness * np.sin(q)
    q = q + dt * p + 0.5 * dt * dt * a
    p = p + 0.5 * dt * (a - stiffness * np.sin(q))
    return q, p


@program(np.array([0.6, -0.3]), 1.3, refuses={"source": "keyword argument", "tape": "keyword argument 'stiffness'"})
def checkpointed_verlet_with_a_differentiated_keyword_only_argument(q0, stiffness):
    step = cr.checkpoint(velocity_verlet)
    q, p = q0, np.zeros(2)
    for _ in range(4):
        q, p = step(q, p, dt=0.2, stiffness=stiffness)
    return np.sum(q**2) + p @ p


# ----- solver options: user Hessians, stiff solvers, refused options -------------------------------------


@program(np.array([0.5, -0.3]), refuses=REVERSE_RULED)
def trust_ncg_with_a_user_hessian(target):
    def f(x):
        return np.sum(np.exp(x - target)) - np.sum(x) + 0.1 * (x[0] * x[1]) ** 2

    def g(x):
        return cr.gradient(f, x)[0]

    def H(x):
        return cr.hessian(f, x)

    res = scipy.optimize.minimize(f, np.zeros(2), jac=g, hess=H, method="trust-ncg", options={"gtol": 1e-10})
    return res.x @ np.array([2.0, -1.0]) + res.fun


@program(np.array([0.5, -0.3]), refuses=REVERSE_RULED)
def newton_cg_with_hessian_vector_products(target):
    def f(x):
        return np.sum(np.cosh(x - target)) + 0.1 * (x[0] * x[1]) ** 2

    def hessp(x, v):
        return cr.jvp(lambda z: cr.gradient(f, z)[0], (x,), (v,))[1]

    res = scipy.optimize.minimize(
        f, np.zeros(2), jac=lambda x: cr.gradient(f, x)[0], hessp=hessp, method="Newton-CG", options={"xtol": 1e-13}
    )
    return np.sum(res.x**2)


@program(np.array([1.5, 0.8]), refuses=REVERSE_RULED, rtol=1e-5)
def robertson_like_stiff_system_with_bdf_and_a_jacobian(log_k):
    k1, k2 = np.exp(log_k)

    def rhs(t, y):
        return np.stack(
            [-k1 * y[0] + 50.0 * y[1] * y[2], k1 * y[0] - 50.0 * y[1] * y[2] - k2 * y[1] ** 2, k2 * y[1] ** 2]
        )

    def jac(t, y):
        return np.array(
            [
                [-k1, 50.0 * y[2], 50.0 * y[1]],
                [k1, -50.0 * y[2] - 2 * k2 * y[1], -50.0 * y[1]],
                [0.0, 2 * k2 * y[1], 0.0],
            ]
        )

    sol = scipy.integrate.solve_ivp(
        rhs,
        (0.0, 5.0),
        np.array([1.0, 0.0, 0.0]),
        method="BDF",
        jac=jac,
        t_eval=np.array([1.0, 5.0]),
        rtol=1e-10,
        atol=1e-12,
    )
    return np.sum(sol.y[2] * np.array([1.0, 2.0]))


@program(np.array([0.7, 1.2]), refuses=REVERSE_RULED, rtol=1e-5)
def vectorised_right_hand_side_for_solve_ivp(params):
    a, b = params

    def rhs(t, y):  # y is (2, k) with vectorized=True
        return np.stack([y[1], -a * y[0] - b * y[0] ** 3])

    sol = scipy.integrate.solve_ivp(
        rhs, (0.0, 2.0), np.array([1.0, 0.0]), vectorized=True, t_eval=np.array([1.0, 2.0]), rtol=1e-11, atol=1e-12
    )
    return np.sum(sol.y[0] ** 2)


@program(np.array([0.9, 0.4]), refuses=REVERSE_RULED, rtol=1e-5)
def odeint_with_full_output(params):
    k, c = params
    ys, info = scipy.integrate.odeint(
        lambda y, t: np.stack([-k * y[0], k * y[0] - c * y[1]]),
        np.array([1.0, 0.0]),
        np.array([0.0, 1.0, 2.0]),
        rtol=1e-12,
        atol=1e-12,
        full_output=True,
    )
    return np.sum(ys[:, 1]) + 0.0 * info["nst"][-1]


# forward mode's own refusal is the conversion of a dual inside SciPy; the API's is the rule's reason (which
# the source engine gives): the two share only the line they name
BOTH_NAME_THE_LINE = "programs_corpus_six.py:"


@program(
    0.8, refuses={"source": "points= is not differentiated", "tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED}
)
def quad_with_break_points_is_refused(k):
    value, _ = scipy.integrate.quad(lambda x: np.abs(np.sin(k * x)), 0.0, 3.0, points=[np.pi / k])
    return value


@program(
    0.8, refuses={"source": "weight= is not differentiated", "tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED}
)
def fourier_integral_with_a_cosine_weight_is_refused(k):
    value, _ = scipy.integrate.quad(lambda x: np.exp(-k * x), 0.0, 10.0, weight="cos", wvar=2.0)
    return value


@program(
    np.array([0.3, -0.2]),
    refuses={"source": "constraints are not differentiated", "tape": SCIPY_WRAPPER, "forward": BOTH_NAME_THE_LINE},
)
def constrained_minimize_is_refused(c):
    cons = {"type": "eq", "fun": lambda x: np.sum(x) - 1.0}
    res = scipy.optimize.minimize(lambda x: np.sum((x - c) ** 2), np.zeros(2), constraints=[cons], method="SLSQP")
    return res.x[0]


@program(
    np.array([2.9, 1.9, 1.25, 0.85, 0.55, 0.4]),
    refuses={"source": "loss='soft_l1' is not differentiated", "tape": SCIPY_WRAPPER, "forward": BOTH_NAME_THE_LINE},
)
def robust_least_squares_loss_is_refused(y):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    fit = scipy.optimize.least_squares(lambda p: p[0] * np.exp(-p[1] * t) - y, np.array([2.5, 0.8]), loss="soft_l1")
    return fit.x[1]
