"""A third corpus of whole programs for ``test_programs.py``: the public API called inside real
code (``argnums``, ``has_aux``, ``value_and_gradient`` in an optimisation loop, ``jvp``,
``jacobian`` of vector-valued programs, ``checkpoint``, ``hessian``), SciPy's special functions and
factorisations, iterative numerics (Kalman filters, Gauss-Newton, conjugate gradients, Sinkhorn,
leapfrog, a PDE on a grid), and Python idioms (``match``, walrus, comprehensions, user containers
and operator overloading, ``dataclasses.replace``, float32, complex intermediates, fancy indexing).

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.special
from program_checks import ARRAY_OF_TRACKED, MATH_ON_TAPE, SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

import chainrules as cr

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(11)

# ----- the public API inside programs -------------------------------------------------------------

X_FIT = np.array([[1.0, 0.3], [1.0, -0.8], [1.0, 1.4], [1.0, 0.1], [1.0, -0.2]])
Y_FIT = np.array([0.9, -0.4, 2.1, 0.5, 0.2])


def ridge_loss(w, lam):
    r = X_FIT @ w - Y_FIT
    return 0.5 * r @ r + 0.5 * lam * w @ w


@program(np.array([0.2, -0.1]), 0.3, hessian=True, nested=True)
def unrolled_descent_with_value_and_gradient(w0, lam):
    w = w0
    history = []
    for _ in range(3):
        value, g = cr.value_and_gradient(ridge_loss, w, lam, argnums=0)
        history.append(value)
        w = w - 0.1 * g
    return ridge_loss(w, lam) + 0.01 * sum(history)


def mse_with_metrics(params, data):
    pred = data["X"] @ params["w"] + params["b"]
    err = pred - data["y"]
    loss = np.mean(err**2)
    return loss, {"mae": np.mean(np.abs(err)), "max_err": np.max(np.abs(err))}


@program(np.array([0.5, -0.3]), 0.1)
def has_aux_dict_of_metrics(w, b):
    data = {"X": X_FIT, "y": Y_FIT}
    (loss, metrics), grads = cr.value_and_gradient(mse_with_metrics, {"w": w, "b": b}, data, argnums=0, has_aux=True)
    penalty = np.sum(grads["w"] ** 2) + grads["b"] ** 2
    return loss + 0.5 * metrics["mae"] + 0.1 * metrics["max_err"] + 0.01 * penalty


def two_argument_energy(a, b, scale):
    return scale * np.sum(np.sin(a) * b) + np.sum(a**2 * b**2)


@program(np.array([0.3, -0.6, 1.1]), np.array([1.2, 0.4, -0.5]), hessian=True, nested=True)
def argnums_tuple_gradient_penalty(a, b):
    ga, gb = cr.gradient(two_argument_energy, a, b, 2.0, argnums=(0, 1))
    return two_argument_energy(a, b, 2.0) + 0.1 * (ga @ ga + gb @ gb)


class Pose(NamedTuple):
    position: np.ndarray
    angle: float


def arm_tip(pose, lengths):
    c, s = np.cos(pose.angle), np.sin(pose.angle)
    return pose.position + lengths * np.stack([c, s])


@program(Pose(np.array([0.2, -0.4]), 0.7), 1.5)
def argnums_tuple_with_namedtuple(pose, length):
    def distance_to_goal(p, ell):
        tip = arm_tip(p, ell)
        return np.sum((tip - np.array([1.0, 1.0])) ** 2)

    g_pose, g_len = cr.gradient(distance_to_goal, pose, length, argnums=(0, 1))
    return distance_to_goal(pose, length) + 0.1 * (g_pose.position @ g_pose.position + g_pose.angle**2 + g_len**2)


def rotation_field(x):
    return np.stack([x[1] * x[2], -x[0] * x[2], np.sin(x[0]) + x[1] ** 2])


@program(np.array([0.4, -0.2, 0.9]), hessian=True, nested=True)
def jvp_directional_derivatives(x):
    _, along_first = cr.jvp(rotation_field, (x,), (np.array([1.0, 0.0, 0.0]),))
    y, along_diagonal = cr.jvp(rotation_field, (x,), (np.ones(3) / np.sqrt(3),))
    return np.sum(along_first**2) + y @ along_diagonal


def planar_flow(z):
    u, w, b = np.array([0.5, -0.3]), np.array([1.0, 0.4]), 0.1
    return z + u * np.tanh(w @ z + b)


@program(np.array([0.3, -0.7]), hessian=True, nested=True)
def flow_log_density_reverse_jacobian(z):
    J = cr.jacobian(planar_flow, z, mode="reverse")
    sign, logdet = np.linalg.slogdet(J)
    x = planar_flow(z)
    return 0.5 * x @ x - logdet


@program(np.array([0.3, -0.7, 0.2]), hessian=True, nested=True)
def jacobian_forward_and_reverse_agree(x):
    J_forward = cr.jacobian(rotation_field, x, mode="forward")
    J_reverse = cr.jacobian(rotation_field, x, mode="reverse")
    return np.sum(J_forward * J_reverse) + np.trace(J_forward)


@dataclasses.dataclass
class State:
    pos: np.ndarray
    vel: np.ndarray


class Observation(NamedTuple):
    energy: float
    momentum: np.ndarray


@program(State(np.array([0.5, -0.2]), np.array([0.1, 0.3])), 0.8)
def dataclass_in_namedtuple_out(state, mass):
    kinetic = 0.5 * mass * state.vel @ state.vel
    potential = np.sum(1.0 - np.cos(state.pos))
    return Observation(kinetic + potential, mass * state.vel)


@program({"mu": np.array([0.2, -0.5]), "log_sigma": np.array([0.1, -0.3])})
def dict_in_dict_out(params):
    sigma = np.exp(params["log_sigma"])
    return {"mean": params["mu"] * 2.0, "entropy": np.sum(params["log_sigma"]) + sigma @ sigma, "sigma": sigma}


def damped_step(s):
    pos, vel = s
    acc = -np.sin(pos) - 0.1 * vel
    return (pos + 0.1 * vel, vel + 0.1 * acc)


@program(np.array([0.8, -0.3]), np.array([0.0, 0.5]), hessian=True, nested=True)
def checkpointed_loop_body(pos0, vel0):
    step = cr.checkpoint(damped_step)
    s = (pos0, vel0)
    for _ in range(6):
        s = step(s)
    return np.sum(s[0] ** 2) + 0.5 * np.sum(s[1] ** 2)


def logistic_nll(w):
    z = X_FIT @ w
    labels = (Y_FIT > 0.3).astype(float)
    return np.sum(np.logaddexp(0.0, z) - labels * z) + 0.05 * w @ w


@program(np.array([0.4, -0.2]), nested=True)
def laplace_approximation_evidence(w):
    H = cr.hessian(logistic_nll, w)
    sign, logdet = np.linalg.slogdet(H)
    return logistic_nll(w) + 0.5 * logdet


# ----- SciPy special functions --------------------------------------------------------------------

COUNTS = np.array([3.0, 0.0, 5.0, 2.0, 7.0])
PROPORTIONS = np.array([0.12, 0.55, 0.31, 0.8])


@program(np.array([0.4, 1.1]), hessian=True, nested=True)
def beta_binomial_likelihood(log_ab):
    a, b = np.exp(log_ab)
    n = 8.0
    ll = (
        scipy.special.gammaln(n + 1)
        - scipy.special.gammaln(COUNTS + 1)
        - scipy.special.gammaln(n - COUNTS + 1)
        + scipy.special.betaln(COUNTS + a, n - COUNTS + b)
        - scipy.special.betaln(a, b)
    )
    return -np.sum(ll) + 0.1 * np.sum(scipy.special.digamma(np.exp(log_ab)))


@program(np.array([1.3, 2.2]), hessian=True, nested=True)
def beta_regression_with_logit(params):
    mu_logit, log_phi = params
    mu = scipy.special.expit(mu_logit)
    phi = np.exp(log_phi)
    a, b = mu * phi, (1 - mu) * phi
    y = PROPORTIONS
    ll = (a - 1) * np.log(y) + scipy.special.xlog1py(b - 1, -y) - scipy.special.betaln(a, b)
    return -np.sum(ll) + 0.01 * scipy.special.logit(mu) ** 2


@program(np.array([0.3, -1.2, 2.0]), hessian=True, nested=True)
def censored_normal_tails(z):
    lower = scipy.special.log_ndtr(z)
    upper = scipy.special.log_ndtr(-z)
    mills = scipy.special.erfcx(z / np.sqrt(2.0))
    return -np.sum(lower) - 0.5 * np.sum(upper) + np.sum(np.log(mills)) + scipy.special.ndtr(z).sum()


@program(np.array([0.4, 1.5, 2.5]), 1.7, hessian=True, nested=True)
def von_mises_and_bessel(angles, kappa):
    log_norm = np.log(2 * np.pi * scipy.special.i0e(kappa)) + kappa
    mean_resultant = scipy.special.i1e(kappa) / scipy.special.i0e(kappa)
    ll = kappa * np.cos(angles - 1.0) - log_norm
    return -np.sum(ll) + mean_resultant**2


@program(np.array([0.5, 1.2, 2.0]), 0.6, hessian=True, nested=True)
def matern_covariance_with_kv(r, log_ell):
    nu = 1.5
    ell = np.exp(log_ell)
    scaled = np.sqrt(2 * nu) * r / ell
    k = 2 ** (1 - nu) / scipy.special.gamma(nu) * scaled**nu * scipy.special.kv(nu, scaled)
    return np.sum(k**2) + np.sum(k * r)


@program(np.array([0.4, -0.3, 1.2]), 0.5, hessian=True, nested=True)
def voigt_profile_by_faddeeva(x, gamma):
    sigma = 0.8
    z = (x + 1j * gamma) / (sigma * np.sqrt(2))
    profile = np.real(scipy.special.wofz(z)) / (sigma * np.sqrt(2 * np.pi))
    return np.sum(np.log(profile)) + np.sum(profile**2)


# ----- SciPy linear algebra -----------------------------------------------------------------------

SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])


@program(
    np.array([0.8, -0.2, 0.4]),
    hessian=True,
    nested=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def gp_posterior_mean_with_cho_solve(log_params):
    ell, sf, noise = np.exp(log_params)
    x = np.array([0.0, 0.4, 1.1, 1.7])
    y = np.array([0.1, 0.5, 0.2, -0.3])
    K = sf**2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ell**2) + noise**2 * np.eye(4)
    c, lower = scipy.linalg.cho_factor(K, lower=True)
    alpha = scipy.linalg.cho_solve((c, lower), y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(c)))


@program(
    np.array([[3.0, 0.5, 0.2], [0.4, 2.0, -0.3], [0.1, 0.6, 1.5]]),
    np.array([1.0, -0.5, 0.3]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def lu_factor_reused_for_two_solves(A, b):
    lu, piv = scipy.linalg.lu_factor(A)
    x = scipy.linalg.lu_solve((lu, piv), b)
    z = scipy.linalg.lu_solve((lu, piv), x, trans=1)
    return x @ x + np.sum(z) + np.sum(np.log(np.abs(np.diag(lu))))


@program(
    np.array([[1.5, 0.0, 0.0], [0.3, 2.0, 0.0], [-0.4, 0.2, 1.2]]),
    np.array([0.5, -1.0, 0.7]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def triangular_solves_both_ways(L, b):
    forward = scipy.linalg.solve_triangular(L, b, lower=True)
    back = scipy.linalg.solve_triangular(L.T, forward, lower=False)
    transposed = scipy.linalg.solve_triangular(L, b, lower=True, trans="T")
    return back @ b + np.sum(transposed**2)


@program(
    np.array([[0.1, 0.4], [-0.3, 0.05]]),
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def matrix_exponential_propagator(A):
    P = scipy.linalg.expm(A)
    x = P @ np.array([1.0, -0.5])
    return x @ x + np.trace(P)


@program(
    np.array([[2.0, 0.3], [0.3, 1.5]]), hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}
)
def matrix_square_root_whitening(S):
    S = 0.5 * (S + S.T)
    R = scipy.linalg.sqrtm(S)
    whitened = np.linalg.solve(R, np.array([[1.0, 0.5, 0.2], [-0.3, 0.4, 0.1]]))
    return np.sum(R * np.array([[1.0, 0.5], [0.5, 0.2]])) + np.sum(whitened**2)


@program(0.4, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def log_euclidean_distance(coupling):
    A = np.diag([2.0, 1.0]) + coupling * np.array([[0.0, 1.0], [1.0, 0.0]])
    L = scipy.linalg.logm(A)
    return np.sum((L - np.eye(2) * 0.3) ** 2)


@program(
    np.array([[2.0, 0.5, 0.1, 0.0], [0.5, 1.0, 0.3, 0.2], [0.1, 0.3, 3.0, 0.4], [0.0, 0.2, 0.4, 0.5]]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def top_eigenpairs_by_subset(S):
    S = 0.5 * (S + S.T)
    w, V = scipy.linalg.eigh(S, subset_by_index=[2, 3])
    projection = V @ V.T
    return np.sum(w) + np.sum(projection * np.arange(16.0).reshape(4, 4) / 16.0)


@program(RNG.normal(size=(6, 3)), hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def tall_svd_and_qr_modes(A):
    U, s, Vt = scipy.linalg.svd(A, full_matrices=False)
    Q, R = scipy.linalg.qr(A, mode="economic")
    R_only = scipy.linalg.qr(A, mode="r")[0]
    condition = s[0] / s[-1]
    return condition + np.sum(np.abs(np.diag(R))) + np.sum(R_only[:3] ** 2) + np.sum(U[:, 0] ** 2 * np.arange(6.0))


# ----- filters and quadrature with NumPy ----------------------------------------------------------

SIGNAL = np.sin(np.linspace(0.0, 3.0, 12)) + 0.3 * np.cos(np.linspace(0.0, 17.0, 12))


@program(np.array([0.2, 0.5, 0.2]), hessian=True, nested=True)
def fir_filter_and_spectral_penalty(taps):
    filtered = np.convolve(SIGNAL, taps, mode="same")
    response = np.fft.rfft(taps, n=16)
    stopband = np.abs(response[5:]) ** 2
    reconstructed = np.fft.irfft(np.fft.rfft(filtered), n=12)
    return np.sum((reconstructed - SIGNAL) ** 2) + np.sum(stopband)


@program(np.array([1.0, 0.7]), hessian=True, nested=True)
def simpson_and_trapezoid_quadrature(params):
    a, k = params
    x = np.linspace(0.0, 2.0, 9)
    f = a * np.exp(-k * x) * np.sin(3 * x)
    h = x[1] - x[0]
    simpson = h / 3 * (f[0] + 4 * np.sum(f[1:-1:2]) + 2 * np.sum(f[2:-1:2]) + f[-1])
    trapezoid = np.trapezoid(f**2, x)
    return (simpson - 0.2) ** 2 + trapezoid


@program(np.array([0.3, -0.2]), np.array([1.1, 0.6]), hessian=True, nested=True)
def log_pdfs_written_by_hand(mu, sigma):
    x = np.array([0.1, 0.5, -0.4])
    normal = -0.5 * ((x[:, None] - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi)
    laplace = -np.abs(x[:, None] - mu) / sigma - np.log(2 * sigma)
    gamma_shape = 2.0
    gamma_logpdf = (gamma_shape - 1) * np.log(sigma) - sigma - scipy.special.gammaln(gamma_shape)
    return -np.sum(normal) - 0.5 * np.sum(laplace) - np.sum(gamma_logpdf)


# ----- iterative numerics -------------------------------------------------------------------------

F_KALMAN = np.array([[1.0, 0.1], [0.0, 1.0]])
H_KALMAN = np.array([[1.0, 0.0]])
MEASUREMENTS = np.array([0.1, 0.25, 0.32, 0.48, 0.6])


@program(np.array([-2.0, -3.0]), hessian=True, nested=True)
def kalman_filter_log_likelihood(log_noise):
    q, r = np.exp(log_noise)
    Q, R = q * np.eye(2), r * np.eye(1)
    m, P = np.zeros(2), np.eye(2)
    ll = 0.0
    for z in MEASUREMENTS:
        m, P = F_KALMAN @ m, F_KALMAN @ P @ F_KALMAN.T + Q
        S = H_KALMAN @ P @ H_KALMAN.T + R
        K = P @ H_KALMAN.T @ np.linalg.inv(S)
        innovation = z - H_KALMAN @ m
        ll = ll - 0.5 * (innovation @ np.linalg.solve(S, innovation) + np.log(np.linalg.det(S)))
        m = m + K @ innovation
        P = (np.eye(2) - K @ H_KALMAN) @ P
    return -ll


T_DECAY = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
Y_DECAY = np.array([2.0, 1.3, 0.85, 0.6, 0.4, 0.2])


@program(np.array([1.8, 0.9]), 0.1, hessian=True, nested=True)
def levenberg_marquardt_steps(theta0, damping):
    theta = theta0
    for _ in range(3):
        a, k = theta
        model = a * np.exp(-k * T_DECAY)
        r = model - Y_DECAY
        J = np.stack([np.exp(-k * T_DECAY), -a * T_DECAY * np.exp(-k * T_DECAY)], axis=1)
        A = J.T @ J + damping * np.eye(2)
        theta = theta - np.linalg.solve(A, J.T @ r)
    a, k = theta
    return np.sum((a * np.exp(-k * T_DECAY) - Y_DECAY) ** 2) + theta @ theta


@program(np.array([1.0, -0.5, 0.3, 0.8]), hessian=True, nested=True)
def conjugate_gradient_fixed_iterations(b):
    A = np.array([[4.0, 1.0, 0.0, 0.2], [1.0, 3.0, 0.5, 0.0], [0.0, 0.5, 2.0, 0.3], [0.2, 0.0, 0.3, 1.5]])
    x = np.zeros_like(b)
    r = b - A @ x
    p = r
    for _ in range(3):
        Ap = A @ p
        alpha = (r @ r) / (p @ Ap)
        x = x + alpha * p
        r_new = r - alpha * Ap
        beta = (r_new @ r_new) / (r @ r)
        p = r_new + beta * p
        r = r_new
    return x @ b + np.sum(x**2)


@program(np.array([[2.0, 0.5, 0.1], [0.5, 1.2, 0.3], [0.1, 0.3, 0.8]]))
def power_iteration_spectral_norm(A):
    v = np.ones(3) / np.sqrt(3)
    for _ in range(25):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v + 0.1 * np.sum(v)


def logsumexp_rows(M, axis):
    peak = np.max(M, axis=axis, keepdims=True)
    return np.squeeze(peak, axis=axis) + np.log(np.sum(np.exp(M - peak), axis=axis))


@program(np.array([[0.0, 1.0, 2.0], [1.0, 0.2, 1.0], [2.2, 1.1, 0.3]]), hessian=True, nested=True)
def sinkhorn_in_log_space(C):
    eps = 0.5
    log_a = np.log(np.array([0.3, 0.3, 0.4]))
    log_b = np.log(np.array([0.5, 0.25, 0.25]))
    f, g = np.zeros(3), np.zeros(3)
    for _ in range(8):
        f = -eps * logsumexp_rows((g[None, :] - C) / eps + log_b[None, :], axis=1)
        g = -eps * logsumexp_rows((f[:, None] - C) / eps + log_a[:, None], axis=0)
    plan = np.exp((f[:, None] + g[None, :] - C) / eps + log_a[:, None] + log_b[None, :])
    return np.sum(plan * C)


@program(
    0.5,
    np.array([1.0, 0.0]),
    hessian=True,
    nested=True,
    refuses={"tape": ARRAY_OF_TRACKED, "forward": ARRAY_OF_TRACKED},
)
def implicit_euler_oscillator(damping, y0):
    A = np.array([[0.0, 1.0], [-4.0, -damping]])
    dt = 0.1
    y = y0
    M = np.eye(2) - dt * A
    trajectory = [y]
    for _ in range(8):
        y = np.linalg.solve(M, y)
        trajectory.append(y)
    Y = np.stack(trajectory)
    return np.sum(Y[:, 0] ** 2) + y @ y


KNOTS = np.array([0.0, 0.5, 1.0, 1.5, 2.0])


@program(np.array([0.0, 0.8, 0.3, -0.4, 0.1]), np.array([0.2, 0.7, 1.1, 1.9]), hessian=True, nested=True)
def piecewise_linear_spline_with_searchsorted(values, x):
    idx = np.clip(np.searchsorted(KNOTS, x) - 1, 0, len(KNOTS) - 2)
    t = (x - KNOTS[idx]) / (KNOTS[idx + 1] - KNOTS[idx])
    y = (1 - t) * values[idx] + t * values[idx + 1]
    return np.sum(y**2) + np.sum(np.diff(values) ** 2)


@program(np.array([0.5, 0.2]))
def particle_filter_fixed_seed(params):
    drift, log_obs_sd = params
    obs_sd = np.exp(log_obs_sd)
    rng = np.random.default_rng(5)
    particles = rng.normal(size=16)
    log_evidence = 0.0
    for y in (0.4, 0.9, 1.1):
        particles = particles + drift + 0.3 * rng.normal(size=16)
        log_w = -0.5 * ((y - particles) / obs_sd) ** 2 - np.log(obs_sd)
        peak = np.max(log_w)
        w = np.exp(log_w - peak)
        log_evidence = log_evidence + peak + np.log(np.mean(w))
        positions = (rng.random() + np.arange(16)) / 16  # systematic resampling
        idx = np.minimum(np.searchsorted(np.cumsum(w / np.sum(w)), positions), 15)
        particles = particles[idx]
    return -log_evidence


@program(np.array([0.3, 1.2]), hessian=True, nested=True)
def monte_carlo_with_reparameterisation(params):
    mu, log_sd = params
    eps = np.random.default_rng(0).standard_normal(64)
    z = mu + np.exp(log_sd) * eps
    expected_loss = np.mean(z**2 + np.sin(z))
    entropy = log_sd + 0.5 * np.log(2 * np.pi * np.e)
    return expected_loss - entropy


@program(np.array([1.0, 0.0]), np.array([0.0, 0.8]), hessian=True, nested=True)
def hamiltonian_leapfrog(q0, p0):
    def grad_potential(q):
        return q + 0.3 * q**3

    dt = 0.1
    q, p = q0, p0
    p = p - 0.5 * dt * grad_potential(q)
    for _ in range(10):
        q = q + dt * p
        p = p - dt * grad_potential(q)
    p = p + 0.5 * dt * grad_potential(q)
    energy = 0.5 * p @ p + 0.5 * q @ q + 0.075 * np.sum(q**4)
    return energy + q[0]


@program(RNG.normal(size=(5, 5)) * 0.3, 0.1, hessian=True)
def diffusion_on_a_periodic_grid(u0, kappa):
    u = u0
    for _ in range(4):
        laplacian = (
            np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1) - 4 * u
        )
        u = u + kappa * laplacian - 0.05 * u**3
    return np.sum(u**2) + u[2, 2]


@program(np.array([0.5, -0.2, 0.1, 0.3]), hessian=True, nested=True)
def shooting_control_loss(controls):
    x, v = 0.0, 0.0
    dt = 0.25
    cost = 0.0
    for u in controls:
        v = v + dt * (u - 0.1 * v)
        x = x + dt * v
        cost = cost + 0.5 * dt * u**2
    return cost + 10.0 * (x - 0.2) ** 2 + (v - 0.0) ** 2


# ----- Python idioms ------------------------------------------------------------------------------


@program(np.array([0.4, -1.3, 2.2]), refuses={"source": "`match`"})
def match_on_activation_names(x):
    total = 0.0
    for name in ("relu", "tanh", "softplus", ("leaky", 0.1)):
        match name:
            case "relu":
                total = total + np.sum(np.maximum(x, 0.0))
            case "tanh":
                total = total + np.sum(np.tanh(x))
            case ("leaky", slope):
                total = total + np.sum(np.where(x > 0, x, slope * x))
            case _:
                total = total + np.sum(np.log1p(np.exp(x)))
    return total


@program(np.array([0.5, 1.7, -0.3, 2.4]), hessian=True, nested=True)
def walrus_in_comprehension_and_while(x):
    scaled = [y for v in x if (y := v * 1.5) > 0.5]
    total = 0.0
    i = 0
    while (remaining := len(x) - i) > 1:
        total = total + x[i] * x[i + 1] / remaining
        i += 1
    return sum(scaled) + total


@program(np.array([[0.2, 0.5, -0.1], [0.7, -0.4, 0.9], [0.3, 0.1, 0.6]]), hessian=True, nested=True)
def nested_comprehensions_with_conditions(M):
    upper = [M[i, j] * M[j, i] for i in range(3) for j in range(3) if i < j]
    rows = {i: sum(M[i, j] ** 2 for j in range(3) if j != i) for i in range(3)}
    signs = {("positive" if v > 0 else "negative") for row in M for v in row if abs(v) > 0.15}
    return sum(upper) + max(rows.values()) + min(rows[i] for i in rows) + len(signs)


@program(np.array([1.2, 0.4, -0.7, 0.9, 0.3]), hessian=True, nested=True)
def star_rest_unpacking_and_chained_comparisons(x):
    first, second, *rest = x
    *head, last = rest
    inside = sum(v for v in x if -0.5 < v < 1.0)
    shrink = 0.5 if np.max(x) > 1.0 else 1.0
    flag = np.mean(x) if np.min(x) < 0 else np.median(x)
    return first * second + sum(head) * last + inside * shrink + flag


CALLS = 0


def counted_square(v):
    global CALLS
    CALLS += 1
    return v * v


@program(np.array([0.3, 0.8, -0.5]), hessian=True, nested=True, refuses={"source": "assigning to the global variable"})
def global_call_counter(x):
    total = sum(counted_square(v) for v in x)
    return total * (1.0 + 0.0 * CALLS)


@program(
    np.array([0.3, 0.8, -0.5]), hessian=True, nested=True, refuses={"source": "(`nonlocal`), which is not supported"}
)
def nonlocal_counter_in_a_closure(x):
    count = 0

    def weigh(v):
        nonlocal count
        count += 1
        return v * count

    return sum(weigh(v) for v in x) + count


@program(1.1, hessian=True, nested=True)
def memo_dict_keyed_by_int(x):
    table = {0: 1.0, 1: x}
    for n in range(2, 7):
        table[n] = 2 * x * table[n - 1] - table[n - 2]
    return table[6] + table[3] * 0.5


@program(np.array([0.3, 1.4, -0.2, 0.9]), np.array([1.0, 0.5, 2.0, 0.1]), hessian=True, nested=True)
def enumerate_zip_and_sorted_by_key(x, w):
    pairs = [(i, a * b, a) for i, (a, b) in enumerate(zip(x, w))]
    ranked = sorted(pairs, key=lambda t: t[1])
    weighted = sum(rank * value for rank, (_, value, _) in enumerate(ranked))
    biggest = max(pairs, key=lambda t: t[2])[2]
    return weighted + biggest**2


@dataclasses.dataclass(frozen=True)
class Hyper:
    lr: float
    momentum: float
    steps: int = 3


@program(np.array([1.0, -2.0]), 0.2)
def dataclasses_replace_in_a_schedule(theta0, lr):
    h = Hyper(lr=lr, momentum=0.5)
    theta, velocity = theta0, np.zeros(2)
    for _ in range(2):
        h = dataclasses.replace(h, lr=h.lr * 0.8)
        for _ in range(h.steps):
            velocity = h.momentum * velocity - h.lr * (theta - np.array([0.5, 0.5]))
            theta = theta + velocity
    return np.sum(theta**2)


class Batch:
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __iter__(self):
        return iter(self.rows)


@program(np.array([0.4, -0.6]), hessian=True, nested=True)
def user_container_protocols(w):
    batch = Batch([np.array([1.0, 0.5]), np.array([-0.3, 0.8]), np.array([0.9, -0.2])])
    total = sum(np.tanh(row @ w) for row in batch)
    return total / len(batch) + batch[0] @ w * batch[len(batch) - 1] @ w


@dataclasses.dataclass
class Affine:
    A: np.ndarray
    b: np.ndarray

    def __matmul__(self, other):
        return Affine(self.A @ other.A, self.A @ other.b + self.b)

    def __add__(self, other):
        return Affine(self.A + other.A, self.b + other.b)

    def __neg__(self):
        return Affine(-self.A, -self.b)

    def __call__(self, x):
        return self.A @ x + self.b


@program(np.array([[0.5, 0.1], [-0.2, 0.8]]), np.array([0.1, -0.3]), hessian=True, nested=True)
def operator_overloading_on_a_user_class(A, b):
    f = Affine(A, b)
    g = Affine(np.eye(2) * 0.5, np.array([1.0, 0.0]))
    h = (f @ g) + (-g)
    y = h(np.array([1.0, 2.0]))
    return y @ y + np.sum((f @ f).A)


@dataclasses.dataclass
class Posterior:
    precision: np.ndarray
    _cov: np.ndarray | None = None

    @property
    def cov(self):
        if self._cov is None:
            self._cov = np.linalg.inv(self.precision)
        return self._cov

    @property
    def log_det(self):
        return -np.linalg.slogdet(self.precision)[1]


@program(
    np.array([[2.0, 0.3], [0.3, 1.0]]),
    hessian=True,
    refuses={"source": "assigning to an attribute mutates an object in place"},
)
def lazily_computed_property(P):
    post = Posterior(0.5 * (P + P.T))
    return np.trace(post.cov) + post.cov[0, 1] + post.log_det


class Gaussian(NamedTuple):
    mean: np.ndarray
    log_sd: np.ndarray

    def log_prob(self, x):
        z = (x - self.mean) / np.exp(self.log_sd)
        return np.sum(-0.5 * z**2 - self.log_sd - 0.5 * np.log(2 * np.pi))

    def kl_to_standard(self):
        var = np.exp(2 * self.log_sd)
        return 0.5 * np.sum(var + self.mean**2 - 1 - 2 * self.log_sd)


@program(Gaussian(np.array([0.2, -0.5]), np.array([0.1, -0.3])))
def namedtuple_with_methods(q):
    x = np.array([0.4, -0.1])
    return -q.log_prob(x) + q.kl_to_standard()


@program(np.array([0.5, -0.2, 0.9], dtype=np.float32), np.float32(0.3), rtol=3e-3, hessian=True)
def float32_logistic_loss_end_to_end(w, b):
    X = np.array([[1.0, 0.2, -0.3], [0.4, -1.0, 0.8]], dtype=np.float32)
    y = np.array([1.0, 0.0], dtype=np.float32)
    z = X @ w + b
    loss = np.mean(np.logaddexp(np.float32(0.0), z) - y * z)
    return loss + np.float32(0.01) * np.sum(w * w)


@program(np.array([0.3, -0.4, 1.1, 0.6]), hessian=True, nested=True)
def complex_intermediates_real_loss(x):
    z = x[:2] + 1j * x[2:]
    rotated = z * np.exp(1j * 0.3)
    magnitude = np.abs(rotated) ** 2
    phase_term = np.real(rotated * np.conj(z))
    return np.sum(magnitude) + np.sum(phase_term) + np.angle(z[0] + 2.0)


SCORES_INDEX = np.array([[2, 0], [1, 2], [0, 1]])


@program(np.array([[0.3, 1.2, -0.5], [0.8, -0.1, 0.4], [1.5, 0.2, 0.9]]), hessian=True, nested=True)
def integer_arrays_as_indices(S):
    rows = np.array([0, 2, 1, 2])
    cols = np.array([1, 0, 2, 2])
    picked = S[rows, cols]
    gathered = np.take_along_axis(S, SCORES_INDEX, axis=1)
    best = np.argmax(S, axis=1)
    chosen = S[np.arange(3), best]
    labels = np.array([2, 0, 1])
    log_probs = S - np.log(np.sum(np.exp(S), axis=1, keepdims=True))
    return np.sum(picked**2) + np.sum(gathered) + np.sum(chosen) - np.sum(log_probs[np.arange(3), labels])


@program(np.array([-1.5, -0.2, 0.4, 1.3, 2.6]), hessian=True, nested=True)
def masks_with_where_and_select(x):
    piecewise = np.where(x < 0, x**2, np.where(x < 1, x, 2 * np.sqrt(np.abs(x)) - 1))
    selected = np.select([x < -1, x > 2], [np.exp(x), np.log(np.abs(x))], default=0.5 * x)
    mask = (x > -0.5) & (x < 2.0)
    return np.sum(piecewise) + np.sum(selected**2) + np.sum(x[mask] ** 3)


# ----- a variable rebound to a constant inside a branch, a loop or a block -----------------------
# The value bound before is gone on the paths that rebind it: its cotangent must not flow back
# through them (the source engine's adjoint resets it inside the branch, loop or block).


@program(np.array([0.7, 2.5, -0.4]), hessian=True, nested=True)
def clipped_to_a_constant_in_a_branch(x):
    total = 0.0
    for i in range(3):
        y = x[i] ** 2
        if x[i] > 2.0:
            y = 4.0  # a cap: no derivative past it
        total = total + y * x[0]
    return total


@program(1.3, hessian=True, nested=True)
def reset_on_one_iteration(x):
    y = x * 2.0
    for i in range(3):
        if i == 1:
            y = 1.0
        y = y * x
    return y


@program(np.array([0.5, 1.5]), hessian=True, nested=True)
def rebound_in_a_with_block(x):
    y = np.sum(x**3)
    with np.errstate(invalid="ignore"):
        y = 2.0
    return y * np.sum(x)


@program(np.array([0.3, -1.2, 0.8]), hessian=True)
def fallback_array_in_a_branch(x):
    s = x * 3.0
    if np.sum(x) < 0.0:
        s = np.zeros(3)
    return np.sum(s * x)


# ----- exceptions: the reverse pass goes back through what ran -----------------------------------


@program(np.array([[2.0, 0.3], [0.3, 1.0]]), np.array([1.0, -0.5]), hessian=True, nested=True)
def cholesky_with_a_ridge_fallback(A, b):
    try:
        L = np.linalg.cholesky(A - 1.5 * np.eye(2))  # not definite: LinAlgError
        z = np.linalg.solve(L, b)
    except np.linalg.LinAlgError:
        z = np.linalg.solve(A + 0.1 * np.eye(2), b)
    return np.sum(z**2) + z[0] * A[0, 1]


@program(np.array([0.4, 1.7, 2.6, 0.9]), hessian=True, nested=True)
def guarded_ratios_in_a_loop(x):
    total = 0.0
    with np.errstate(divide="raise"):
        for i in range(4):
            try:
                r = x[i] / np.maximum(x[i] - 1.0, 0.0)
                total = total + r * x[0]
            except FloatingPointError:
                total = total + x[i] ** 2
            finally:
                total = total * 1.05
    return total


@program(np.array([1.6, 2.4, 0.9]), hessian=True, nested=True)
def fixed_point_with_a_divergence_fallback(x):
    z = np.zeros(3) + 0.1
    try:
        for _ in range(6):
            z = np.tanh(x * z + 0.5)
            if np.max(np.abs(z)) > 0.95:
                raise FloatingPointError  # in the second iteration, at the corpus point
            z = z * 0.9
    except FloatingPointError:
        z = z * 0.5
    return np.sum(z**2) + z @ x


# ----- an adaptive integrator: try/except with continue in a while loop, a decorator, dataclass
# state, an isinstance test and a math function, together -----------------------------------------


@dataclasses.dataclass
class OscillatorState:
    t: float
    y: np.ndarray


def damped_rhs(y, k):
    return np.stack([y[1], -k[0] * y[0] - k[1] * y[1] * np.abs(y[1])])


def passed_through(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@program(np.array([2.0, 0.3]), hessian=True, nested=True, refuses={"tape": MATH_ON_TAPE})
@passed_through
def adaptive_heun_steps(k, h0=0.1, t_end=1.0):
    s = OscillatorState(0.0, np.array([1.0, 0.0]))
    h = h0
    steps = 0
    while s.t < t_end and steps < 50:
        try:
            k1 = damped_rhs(s.y, k)
            k2 = damped_rhs(s.y + h * k1, k)
            if np.max(np.abs(h * (k2 - k1) / 2)) > 0.05:
                raise ArithmeticError  # the step is too long: halve it and try again
        except ArithmeticError:
            h = h * 0.5
            steps += 1
            continue
        s = dataclasses.replace(s, t=s.t + h, y=s.y + h / 2 * (k1 + k2))
        if isinstance(s.t, float) and s.t + h > t_end:
            h = max(t_end - s.t, 1e-3)
        steps += 1
    return s.y[0] ** 2 + math.sin(s.y[1])


# ----- a loop's variable and its `else` after the loop -------------------------------------------


@program(np.array([0.8, 1.9, 2.7, 0.4]), hessian=True, nested=True)
def first_entry_past_a_threshold(x):
    for v in x:  # `v` outlives the loop: the entry the search stopped at carries the derivative
        if v > 1.5:
            break
    return v**2 * x[0]


@program(np.array([0.6, -0.2, 1.1]), hessian=True, nested=True)
def last_row_of_a_reshaped_loop(x):
    y = x * 2.0
    for row in np.stack([x, x**2]):  # noqa: B007  (the last row is used after the loop)
        pass
    for y in [0.5, 1.5]:  # noqa: B007  (rebound to a constant: the earlier `y` no longer counts)
        pass
    return np.sum(row * x) + y * x[1]


@program(np.array([0.4, 1.2, 0.7]), hessian=True, nested=True)
def search_with_a_loop_else_return(x):
    for v in x:
        if v > 2.0:
            break
    else:
        return np.sum(x**2) * x[1]  # no entry above 2: the loop ran to its end
    return v * 3.0


@program(np.array([0.4, 1.2, 0.7]), hessian=True, nested=True)
def while_else_return_after_a_nested_search(x):
    i = 0
    total = 0.0
    while i < 3:
        for j in range(3):
            if x[j] * i > 4.0:
                break
        else:
            total = total + x[i] * x[j]
            i += 1
            continue
        return total + x[j]
    else:
        if total > 0.5:
            return total * x[0]
    return total


# ----- a number on the left of a user class's reflected operators -------------------------------
# Python calls `V.__rmul__(a)` where `a * V(...)`'s number declines; an engine's number declines
# too, so the method runs on it and carries its derivative.


@dataclasses.dataclass
class Charge:
    q: float

    def __rmul__(self, s):
        return Charge(s * self.q)

    def __radd__(self, s):
        return Charge(s + self.q)


@program(np.array([0.6, -1.4, 2.0]), hessian=True, nested=True)
def numbers_times_a_dataclass(x):
    scaled = x[0] * Charge(x[1])  # a NumPy float on the left
    shifted = 2.5 + Charge(x[2] * x[0])  # a Python float on the left
    return scaled.q * shifted.q + 3.0 * Charge(x[1]).q  # (3.0 on the left too)


class Mass:
    """A plain class: building one has no rule, so the entry points take the tape."""

    def __init__(self, m):
        self.m = m

    def __rmul__(self, s):
        return Mass(s * self.m)


@program(np.array([0.9, 1.7]), hessian=True, refuses={"source": "no differentiation rule for"})
def numbers_times_a_plain_class(x):
    return (x[0] * Mass(x[1])).m ** 2 + (x[1] * Mass(3.0)).m
