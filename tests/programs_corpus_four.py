"""A fourth corpus of whole programs: statistics and probabilistic modelling (log-likelihoods
written with SciPy's special functions, mixtures, hidden Markov models, Gaussian processes,
variational inference with the noise passed in, survival and robust regression, HMC) and signal
processing (FFTs, convolutions and correlations, FIR/IIR filters as loops, windows, interpolation,
differences and quadrature).

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import NamedTuple

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.signal
import scipy.special
import scipy.stats
from program_checks import (
    ARRAY_OF_TRACKED,
    MATH_FORWARD,
    MATH_ON_TAPE,
    SCIPY_WRAPPER,
    SCIPY_WRAPPER_FORWARD,
    new_corpus,
)

import chainrules as cr

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(2024)

# ----- count and rate models ----------------------------------------------------------------------

EXPOSURE = np.array([1.0, 2.5, 0.7, 3.2, 1.8, 0.9])
CLAIMS = np.array([0.0, 3.0, 1.0, 4.0, 2.0, 0.0])
COVARIATES = np.array([[1.0, 0.1], [1.0, 0.8], [1.0, -0.4], [1.0, 1.1], [1.0, 0.3], [1.0, -0.9]])


@program(np.array([0.1, 0.4]), hessian=True)
def poisson_glm_with_exposure_offset(beta):
    eta = COVARIATES @ beta + np.log(EXPOSURE)
    mu = np.exp(eta)
    loglik = scipy.special.xlogy(CLAIMS, mu) - mu - scipy.special.gammaln(CLAIMS + 1.0)
    prior = -0.5 * np.sum(beta**2 / 4.0)
    return -(np.sum(loglik) + prior)


@program({"log_mu": np.array([0.3, 0.9, -0.2]), "log_alpha": -0.5})
def negative_binomial_mean_dispersion(params):
    groups = np.array([0, 1, 2, 1, 0, 2])
    mu = np.exp(params["log_mu"])[groups]
    alpha = np.exp(params["log_alpha"])
    r = 1.0 / alpha
    y = CLAIMS
    ll = (
        scipy.special.gammaln(y + r)
        - scipy.special.gammaln(r)
        - scipy.special.gammaln(y + 1)
        + r * np.log(r / (r + mu))
        + y * np.log(mu / (r + mu))
    )
    return -ll.sum()


@program(np.array([0.5, -0.4]))
def zero_inflated_poisson(params):
    logit_pi, log_lam = params
    log_pi = -np.logaddexp(0.0, -logit_pi)
    log_not_pi = -np.logaddexp(0.0, logit_pi)
    lam = np.exp(log_lam)
    log_pois = CLAIMS * log_lam - lam - scipy.special.gammaln(CLAIMS + 1)
    ll = np.where(CLAIMS == 0, np.logaddexp(log_pi, log_not_pi - lam), log_not_pi + log_pois)
    return -np.sum(ll)


@program(np.array([1.2, 0.8, 2.0]), np.array([3.0, 1.0, 4.0]), hessian=True)
def dirichlet_multinomial_log_likelihood(alpha, counts):
    n = np.sum(counts)
    a0 = np.sum(alpha)
    ll = scipy.special.gammaln(a0) - scipy.special.gammaln(n + a0)
    ll = ll + np.sum(scipy.special.gammaln(counts + alpha) - scipy.special.gammaln(alpha))
    ll = ll + scipy.special.gammaln(n + 1) - np.sum(scipy.special.gammaln(counts + 1))
    return -ll


@program(np.array([0.2, 1.1]), nested=True)
def gamma_glm_with_log_link(params):
    b0, log_shape = params
    k = np.exp(log_shape)
    y = np.array([1.3, 0.6, 2.2, 0.9, 1.7])
    x = np.array([0.0, -0.5, 0.8, 0.1, 0.4])
    mu = np.exp(b0 + 0.7 * x)
    theta = mu / k
    ll = (k - 1) * np.log(y) - y / theta - scipy.special.gammaln(k) - k * np.log(theta)
    return -np.sum(ll) + 0.01 * scipy.special.digamma(k) ** 2


# ----- continuous densities -------------------------------------------------------------------------

GROWTH = np.array([0.12, -0.35, 0.48, 1.9, -0.05, 0.22, -2.4])


class StudentT(NamedTuple):
    loc: float
    log_scale: float
    log_df: float


def student_t_logpdf(x, p):
    nu, s = np.exp(p.log_df), np.exp(p.log_scale)
    z = (x - p.loc) / s
    norm = scipy.special.gammaln((nu + 1) / 2) - scipy.special.gammaln(nu / 2) - 0.5 * np.log(np.pi * nu) - np.log(s)
    return norm - (nu + 1) / 2 * np.log1p(z * z / nu)


@program(StudentT(0.1, -0.3, 1.0))
def student_t_namedtuple_parameters(p):
    return -np.sum(student_t_logpdf(GROWTH, p)) + 0.5 * p.log_df**2


@program(np.array([0.6, 1.4]))
def beta_log_density_loop(log_ab):
    a, b = np.exp(log_ab)
    total = 0.0
    for y in (0.15, 0.42, 0.66, 0.81):
        total += (a - 1) * np.log(y) + (b - 1) * np.log1p(-y) - scipy.special.betaln(a, b)
    return -total


@program(np.array([0.3, -0.2, 0.8]))
def skew_normal_log_likelihood(params):
    loc, log_scale, shape = params
    scale = np.exp(log_scale)
    z = (GROWTH - loc) / scale
    logpdf = np.log(2.0) - 0.5 * z**2 - 0.5 * np.log(2 * np.pi) - log_scale + scipy.special.log_ndtr(shape * z)
    return -np.sum(logpdf)


@program(np.array([0.4, -0.1]), 0.5, hessian=True)
def tobit_censored_regression(beta, log_sigma):
    x = np.array([0.2, 1.0, -0.7, 1.6, 0.5, -1.2])
    y = np.array([0.4, 1.3, 0.0, 1.9, 0.6, 0.0])
    sigma = np.exp(log_sigma)
    mu = beta[0] + beta[1] * x
    censored = y <= 0.0
    ll_obs = -0.5 * ((y - mu) / sigma) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi)
    ll_cens = scipy.special.log_ndtr(-mu / sigma)
    return -np.sum(np.where(censored, ll_cens, ll_obs))


@program(np.array([0.5, 2.0, -0.3]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})
def ordinal_logistic_cutpoints(params):
    c0, log_gap, slope = params
    cuts = np.array([c0, c0 + np.exp(log_gap)])
    x = np.array([-1.0, 0.2, 0.9, 1.5, -0.4])
    y = np.array([0, 1, 2, 2, 0])
    eta = slope * x
    cdf = scipy.special.expit(cuts[None, :] - eta[:, None])
    upper = np.concatenate([cdf, np.ones((5, 1))], axis=1)
    lower = np.concatenate([np.zeros((5, 1)), cdf], axis=1)
    probs = (upper - lower)[np.arange(5), y]
    return -np.sum(np.log(probs))


# ----- mixtures and hidden Markov models ------------------------------------------------------------

MIX_DATA = np.array([-1.4, -0.9, -1.1, 0.2, 1.3, 1.8, 1.1, 2.2])


def log_normal_pdf(x, mu, log_sd):
    return -0.5 * ((x - mu) / np.exp(log_sd)) ** 2 - log_sd - 0.5 * np.log(2 * np.pi)


@program(
    np.array([-1.0, 1.5]),
    np.array([-0.5, -0.2]),
    np.array([0.3, -0.3]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def gaussian_mixture_with_scipy_logsumexp(means, log_sds, logits):
    log_w = logits - scipy.special.logsumexp(logits)
    comp = log_normal_pdf(MIX_DATA[:, None], means[None, :], log_sds[None, :]) + log_w
    return -np.sum(scipy.special.logsumexp(comp, axis=1))


@program(np.array([-1.0, 1.5]), nested=True)
def em_step_then_log_likelihood(means):
    sd, weights = 0.6, np.array([0.45, 0.55])
    comp = log_normal_pdf(MIX_DATA[:, None], means, np.log(sd)) + np.log(weights)
    peak = np.max(comp, axis=1, keepdims=True)
    resp = np.exp(comp - peak)
    resp = resp / resp.sum(axis=1, keepdims=True)
    new_means = (resp * MIX_DATA[:, None]).sum(axis=0) / resp.sum(axis=0)
    comp = log_normal_pdf(MIX_DATA[:, None], new_means, np.log(sd)) + np.log(weights)
    return -np.sum(np.logaddexp(comp[:, 0], comp[:, 1]))


@program(np.array([[2.0, -1.0], [-0.5, 1.5]]), np.array([-0.8, 0.9]), hessian=True, nested=True)
def hmm_forward_in_log_space(trans_logits, emission_means):
    obs = np.array([-1.0, -0.7, 0.8, 1.2, 0.4, -0.9])
    log_A = trans_logits - np.log(np.sum(np.exp(trans_logits), axis=1, keepdims=True))
    log_alpha = np.log(np.array([0.5, 0.5])) + log_normal_pdf(obs[0], emission_means, 0.0)
    for y in obs[1:]:
        m = log_alpha[:, None] + log_A
        mx = np.max(m, axis=0)
        log_alpha = mx + np.log(np.sum(np.exp(m - mx), axis=0)) + log_normal_pdf(y, emission_means, 0.0)
    top = np.max(log_alpha)
    return -(top + np.log(np.sum(np.exp(log_alpha - top))))


@program(np.array([0.5, -0.4, 0.2]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def hmm_three_states_with_logsumexp(log_stay):
    obs = np.array([0, 2, 1, 1, 2, 0])
    log_B = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]]))
    stay = scipy.special.expit(log_stay)
    A = np.diag(stay) + (1 - stay)[:, None] * (np.ones((3, 3)) - np.eye(3)) / 2.0
    log_A = np.log(A)
    log_alpha = np.log(np.ones(3) / 3) + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha = scipy.special.logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, obs[t]]
    return -scipy.special.logsumexp(log_alpha)


# ----- regression, evidence and Gaussian processes ---------------------------------------------------

X_REG = np.array([[1.0, 0.3, -0.5], [1.0, -1.1, 0.2], [1.0, 0.7, 0.9], [1.0, 1.5, -0.3], [1.0, -0.2, -1.0]])
Y_REG = np.array([0.8, -1.2, 1.9, 1.4, -0.6])


@program(np.array([0.2, 1.0]), hessian=True)
def bayesian_linear_regression_evidence(log_hyper):
    log_alpha, log_beta = log_hyper
    alpha, beta = np.exp(log_alpha), np.exp(log_beta)
    n, d = X_REG.shape
    A = alpha * np.eye(d) + beta * X_REG.T @ X_REG
    m = beta * np.linalg.solve(A, X_REG.T @ Y_REG)
    fit = beta / 2 * np.sum((Y_REG - X_REG @ m) ** 2) + alpha / 2 * m @ m
    sign, logdet = np.linalg.slogdet(A)
    return -(d / 2 * log_alpha + n / 2 * log_beta - fit - 0.5 * logdet - n / 2 * np.log(2 * np.pi))


GP_X = np.array([[0.0, 0.1], [0.5, -0.3], [1.0, 0.4], [1.4, 1.0], [2.1, 0.2]])
GP_Y = np.array([0.2, 0.6, 0.1, -0.4, -0.2])


def ard_kernel(X1, X2, lengthscales, variance):
    diff = (X1[:, None, :] - X2[None, :, :]) / lengthscales
    return variance * np.exp(-0.5 * np.sum(diff**2, axis=-1))


@program(np.array([0.1, -0.2, 0.0, -1.5]), hessian=True)
def gp_marginal_likelihood_numpy(log_params):
    ls, var, noise = np.exp(log_params[:2]), np.exp(log_params[2]), np.exp(log_params[3])
    K = ard_kernel(GP_X, GP_X, ls, var) + noise * np.eye(len(GP_Y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, GP_Y))
    return 0.5 * GP_Y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(GP_Y) * np.log(2 * np.pi)


@program(np.array([0.1, -0.2, 0.0, -1.5]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def gp_marginal_likelihood_scipy_triangular(log_params):
    ls, var, noise = np.exp(log_params[:2]), np.exp(log_params[2]), np.exp(log_params[3])
    K = ard_kernel(GP_X, GP_X, ls, var) + noise * np.eye(len(GP_Y))
    L = scipy.linalg.cholesky(K, lower=True)
    v = scipy.linalg.solve_triangular(L, GP_Y, lower=True)
    alpha = scipy.linalg.solve_triangular(L.T, v, lower=False)
    return 0.5 * GP_Y @ alpha + np.sum(np.log(np.diag(L)))


@program(
    np.array([0.3, 0.0]),
    np.array([[0.2, 0.3], [1.7, 0.5]]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def gp_predictive_with_cho_solve(log_params, X_star):
    ls, var = np.exp(log_params)
    K = ard_kernel(GP_X, GP_X, ls, var) + 0.05 * np.eye(5)
    K_s = ard_kernel(X_star, GP_X, ls, var)
    factor = scipy.linalg.cho_factor(K)
    mean = K_s @ scipy.linalg.cho_solve(factor, GP_Y)
    cov = ard_kernel(X_star, X_star, ls, var) - K_s @ scipy.linalg.cho_solve(factor, K_s.T)
    return np.sum(mean**2) + np.trace(cov)


@program(np.array([[0.5, 0.2], [-0.3, 1.1], [0.9, -0.6]]), 0.8)
def matern_kernel_matrix_with_jitter(X, log_ell):
    ell = np.exp(log_ell)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    r = np.sqrt(d2 + 1e-12)
    s = np.sqrt(3.0) * r / ell
    K = (1.0 + s) * np.exp(-s) + 1e-3 * np.eye(3)
    sign, logdet = np.linalg.slogdet(K)
    return logdet + np.sum(np.linalg.inv(K))


@program(np.array([0.4, -0.6, 0.2]), 0.0)
def kl_between_gaussians(mu_q, log_scale):
    Sigma_q = np.exp(2 * log_scale) * np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.0]])
    Sigma_p = np.diag([1.0, 2.0, 0.5])
    P_inv = np.linalg.inv(Sigma_p)
    diff = -mu_q
    kl = np.trace(P_inv @ Sigma_q) + diff @ P_inv @ diff - 3
    kl = kl + np.linalg.slogdet(Sigma_p)[1] - np.linalg.slogdet(Sigma_q)[1]
    return 0.5 * kl


# ----- variational inference with the noise passed in ------------------------------------------------


@program(np.array([0.3, -0.2, 0.1]), np.array([-0.5, -0.3, -0.8]), RNG.standard_normal((4, 3)), nested=True)
def reparameterised_elbo(mu, log_sigma, eps):
    z = mu + np.exp(log_sigma) * eps
    w_true = np.array([1.0, -0.5, 0.3])
    log_lik = -0.5 * np.sum((X_REG @ z.T - (X_REG @ w_true)[:, None]) ** 2, axis=0)
    log_prior = -0.5 * np.sum(z**2, axis=1)
    entropy = np.sum(log_sigma) + 0.5 * len(mu) * (1 + np.log(2 * np.pi))
    return -(np.mean(log_lik + log_prior) + entropy)


@program(np.array([0.2, -0.1]), RNG.standard_normal((5, 2)))
def importance_weighted_bound(mu, eps):
    sd = 0.7
    z = mu + sd * eps
    log_p = -0.5 * np.sum((z - np.array([0.5, 0.5])) ** 2, axis=1) - 0.5 * np.sum(z**2, axis=1)
    log_q = -0.5 * np.sum(eps**2, axis=1) - 2 * np.log(sd)
    log_w = log_p - log_q
    m = np.max(log_w)
    return -(m + np.log(np.mean(np.exp(log_w - m))))


@program(
    np.array([0.5, -0.3, 0.1, 0.8]),
    RNG.uniform(0.05, 0.95, size=4),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def gumbel_softmax_relaxation(logits, uniforms):
    temperature = 0.7
    gumbel = -np.log(-np.log(uniforms))
    y = scipy.special.softmax((logits + gumbel) / temperature)
    values = np.array([1.0, -2.0, 0.5, 3.0])
    log_probs = scipy.special.log_softmax(logits)
    return -(y @ values) + 0.1 * np.sum(np.exp(log_probs) * log_probs)


@dataclasses.dataclass
class MeanField:
    mean: np.ndarray
    log_sd: np.ndarray


@program(MeanField(np.array([0.1, 0.4]), np.array([-0.2, -0.6])), RNG.standard_normal((3, 2)))
def mean_field_dataclass_elbo(q, eps):
    samples = [q.mean + np.exp(q.log_sd) * e for e in eps]
    energy = 0.0
    for z in samples:
        energy += 0.5 * np.sum((z - 1.0) ** 2) + 0.25 * np.sum(z**4)
    entropy = np.sum(q.log_sd)
    return energy / len(samples) - entropy


# ----- survival and robust regression ------------------------------------------------------------------

TIMES = np.array([2.0, 3.5, 1.2, 5.0, 0.8, 4.1])
EVENTS = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
SURV_X = np.array([0.3, -0.6, 1.2, -0.2, 0.9, 0.1])


@program(np.array([0.3, 0.2, -0.4]), hessian=True)
def weibull_survival_with_censoring(params):
    log_k, b0, b1 = params
    k = np.exp(log_k)
    lam = np.exp(b0 + b1 * SURV_X)
    log_hazard = log_k - np.log(lam) + (k - 1) * (np.log(TIMES) - np.log(lam))
    cum_hazard = (TIMES / lam) ** k
    return -np.sum(EVENTS * log_hazard - cum_hazard)


@program(np.array([0.7]))
def cox_partial_likelihood_by_reverse_cumsum(beta):
    order = np.argsort(TIMES)
    eta = SURV_X[order] * beta[0]
    events = EVENTS[order]
    risk = np.cumsum(np.exp(eta)[::-1])[::-1]
    return -np.sum(events * (eta - np.log(risk)))


@program(np.array([0.2, 0.9]))
def exponential_survival_piecewise_hazard(log_rates):
    cut = 2.5
    rates = np.exp(log_rates)
    total = 0.0
    for t, d in zip(TIMES, EVENTS):
        if t <= cut:
            cum = rates[0] * t
            log_h = log_rates[0]
        else:
            cum = rates[0] * cut + rates[1] * (t - cut)
            log_h = log_rates[1]
        total = total + d * log_h - cum
    return -total


HUBER_X = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0])
HUBER_Y = np.array([-3.9, -2.1, 0.2, 0.9, 2.2, 3.8, 12.0])


def huber(r, delta=1.0):
    return np.where(np.abs(r) <= delta, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))


@program(np.array([0.1, 1.8]), nested=True)
def huber_robust_line_fit(theta):
    r = HUBER_Y - (theta[0] + theta[1] * HUBER_X)
    return np.sum(huber(r, delta=1.5)) + 0.5 * np.sum(scipy.special.pseudo_huber(1.0, r))


@program(np.array([0.3, 1.1]))
def pinball_loss_for_several_quantiles(theta):
    taus = [0.1, 0.5, 0.9]
    total = 0.0
    for tau in taus:
        r = HUBER_Y - (theta[0] + tau + theta[1] * HUBER_X)
        total += np.mean(np.maximum(tau * r, (tau - 1.0) * r))
    return total


@program(np.array([[0.2, -0.1, 0.3], [0.5, 0.4, -0.2]]))
def softmax_regression_with_l2(W):
    X = np.array([[1.0, 0.5], [0.3, -1.0], [-0.8, 0.2], [0.1, 0.9]])
    labels = np.array([0, 2, 1, 2])
    logits = X @ W
    logits = logits - logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    nll = -np.mean(log_p[np.arange(len(labels)), labels])
    return nll + 0.05 * np.sum(W * W)


@program(np.array([0.8, -0.5]), 0.3)
def logistic_regression_bootstrap_weights(w, b):
    rng = np.random.default_rng(3)
    X = np.array([[0.5, 1.0], [-1.0, 0.3], [1.5, -0.2], [0.2, 0.2], [-0.7, -1.1]])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    counts = rng.multinomial(5, np.ones(5) / 5)
    z = X @ w + b
    nll = counts * (np.logaddexp(0.0, z) - y * z)
    return np.sum(nll) / counts.sum() + 0.01 * np.sum(scipy.special.log_expit(-np.abs(z)))


# ----- Hamiltonian Monte Carlo ---------------------------------------------------------------------------


def banana_potential(q):
    return 0.5 * q[0] ** 2 + 2.0 * (q[1] - q[0] ** 2) ** 2


@program(np.array([0.3, 0.5]), np.array([0.4, -0.2]), nested=True)
def hmc_leapfrog_with_gradient_of_potential(q0, p0):
    step, n_steps = 0.05, 5
    q, p = q0, p0
    p = p - 0.5 * step * cr.gradient(banana_potential, q)[0]
    for i in range(n_steps):
        q = q + step * p
        if i < n_steps - 1:
            p = p - step * cr.gradient(banana_potential, q)[0]
    p = p - 0.5 * step * cr.gradient(banana_potential, q)[0]
    h0 = banana_potential(q0) + 0.5 * p0 @ p0
    h1 = banana_potential(q) + 0.5 * p @ p
    return np.minimum(0.0, h0 - h1) + np.sum(q)


@program(np.array([0.2, -0.4, 0.6]))
def hmc_potential_energy_of_a_hierarchical_model(theta):
    mu, log_tau = theta[0], theta[1]
    eta = theta[2]
    tau = np.exp(log_tau)
    group_effect = mu + tau * eta
    y, s = 0.8, 0.5
    log_post = -0.5 * ((y - group_effect) / s) ** 2 - 0.5 * eta**2 - 0.5 * mu**2 / 25.0
    log_post = log_post + log_tau - np.log1p(tau**2)  # half-Cauchy prior on tau, with the Jacobian
    return -log_post


# ----- signal processing: filters as loops ----------------------------------------------------------------

T_SIG = np.linspace(0.0, 1.0, 8)
CHIRP = np.sin(2 * np.pi * (1.0 + 2.0 * T_SIG) * T_SIG) + 0.2 * np.cos(9 * T_SIG)


def biquad(x, b, a):
    y = []
    x1 = x2 = y1 = y2 = 0.0
    for xn in x:
        yn = b[0] * xn + b[1] * x1 + b[2] * x2 - a[0] * y1 - a[1] * y2
        x2, x1 = x1, xn
        y2, y1 = y1, yn
        y.append(yn)
    return np.array(y)


@program(np.array([0.2, 0.3, 0.2]), np.array([-0.4, 0.1]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})
def iir_biquad_direct_form(b, a):
    y = biquad(CHIRP, b, a)
    return np.sum(y**2) + y[-1]


@program(0.3, CHIRP, nested=True)
def exponential_moving_average(alpha, x):
    s = x[0]
    smoothed = [s]
    for xn in x[1:]:
        s = alpha * xn + (1 - alpha) * s
        smoothed.append(s)
    smoothed = np.stack(smoothed)
    return np.sum((smoothed - x) ** 2)


@program(np.array([0.25, 0.5, 0.25]), CHIRP, hessian=True, refuses={"hessian-tape": "would drop its derivative"})
def fir_filter_written_as_a_loop(taps, x):
    n, m = len(x), len(taps)
    out = np.zeros_like(x)
    for i in range(n):
        acc = 0.0
        for k in range(m):
            if i - k >= 0:
                acc = acc + taps[k] * x[i - k]
        out[i] = acc
    return np.sum(out**2) - out[3]


@program(CHIRP)
def moving_average_by_cumsum(x):
    w = 3
    c = np.cumsum(np.concatenate([np.zeros(1), x]))
    ma = (c[w:] - c[:-w]) / w
    return np.sum((x[w - 1 :] - ma) ** 2) + np.max(ma)


@program(0.35)
def windowed_sinc_lowpass_design(cutoff):
    m = 7
    n = np.arange(m) - (m - 1) / 2
    h = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hamming(m)
    h = h / np.sum(h)
    H = np.fft.rfft(h, n=16)
    stop = np.abs(H[10:]) ** 2
    passband = np.abs(H[:3]) - 1.0
    return np.sum(stop) + np.sum(passband**2)


@program(np.array([0.9, 1.8]), hessian=True)
def goertzel_tone_power(freqs):
    x = CHIRP
    total = 0.0
    for f in freqs:
        coeff = 2 * np.cos(2 * np.pi * f / len(x))
        s1 = s2 = 0.0
        for xn in x:
            s0 = xn + coeff * s1 - s2
            s2, s1 = s1, s0
        total = total + s1**2 + s2**2 - coeff * s1 * s2
    return total


# ----- signal processing: FFT and correlation ---------------------------------------------------------------


@program(CHIRP, nested=True)
def autocorrelation_via_zero_padded_fft(x):
    n = len(x)
    xc = x - np.mean(x)
    X = np.fft.rfft(xc, n=2 * n)
    acf = np.fft.irfft(X * np.conj(X), n=2 * n)[:n]
    acf = acf / acf[0]
    return np.sum(acf[1:4] ** 2)


@program(CHIRP)
def autocorrelation_by_np_correlate(x):
    xc = x - x.mean()
    full = np.correlate(xc, xc, mode="full")
    lags = full[len(x) - 1 :] / full[len(x) - 1]
    same = np.correlate(x, np.array([0.5, 1.0, -0.25]), mode="same")
    valid = np.correlate(x, np.array([1.0, -1.0]), mode="valid")
    return np.sum(lags[1:3]) + np.sum(same**2) + np.sum(np.abs(valid))


@program(CHIRP)
def periodogram_with_hanning_and_fftshift(x):
    win = np.hanning(len(x))
    X = np.fft.fftshift(np.fft.fft(win * (x - x.mean())))
    freqs = np.fft.fftshift(np.fft.fftfreq(len(x), d=0.125))
    power = np.abs(X) ** 2 / np.sum(win**2)
    centroid = np.sum(np.abs(freqs) * power) / np.sum(power)
    return centroid + np.log(np.max(power))


@program(np.array([1.0, 0.6, 0.2]), 0.05, hessian=True)
def wiener_deconvolution(blur, lam):
    n = len(CHIRP)
    H = np.fft.fft(blur, n=n)
    observed = np.real(np.fft.ifft(np.fft.fft(CHIRP) * H))
    G = np.conj(H) / (np.abs(H) ** 2 + lam)
    restored = np.real(np.fft.ifft(np.fft.fft(observed) * G))
    return np.sum((restored - CHIRP) ** 2)


@program(CHIRP)
def analytic_signal_envelope_by_fft(x):
    n = len(x)
    X = np.fft.fft(x)
    h = np.zeros(n)
    h[0] = 1.0
    h[n // 2] = 1.0
    h[1 : n // 2] = 2.0
    analytic = np.fft.ifft(X * h)
    envelope = np.abs(analytic)
    phase = np.unwrap(np.angle(analytic))
    return np.sum(envelope**2) + 0.1 * np.sum(np.diff(phase) ** 2)


@program(RNG.normal(size=(6, 6)), hessian=True)
def gaussian_blur_in_the_frequency_domain(image):
    fy = np.fft.fftfreq(6)[:, None]
    fx = np.fft.rfftfreq(6)[None, :]
    transfer = np.exp(-2 * (np.pi * 0.8) ** 2 * (fx**2 + fy**2))
    blurred = np.fft.irfft2(np.fft.rfft2(image) * transfer, s=image.shape)
    edges = np.abs(np.fft.fft2(image - blurred)) ** 2
    return np.sum(blurred**2) + 0.01 * np.sum(edges)


@program(CHIRP)
def real_cepstrum(x):
    spectrum = np.abs(np.fft.rfft(x)) ** 2 + 1e-2
    cepstrum = np.fft.irfft(np.log(spectrum), n=len(x))
    lifter = np.arange(len(x)) < 3
    return np.sum((cepstrum * lifter) ** 2)


@program(np.array([0.3, 1.0, 0.4]), nested=True)
def short_time_spectrum_by_sliding_windows(taps):
    x = np.convolve(CHIRP, taps, mode="same")
    frames = np.lib.stride_tricks.sliding_window_view(x, 4)[::2]
    spec = np.abs(np.fft.rfft(frames * np.hanning(4), axis=1)) ** 2
    flux = np.sum(np.diff(spec, axis=0) ** 2)
    return flux + np.mean(spec)


@program(np.array([0.1, 0.5, -0.2]), CHIRP, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def scipy_signal_convolve_and_correlate(kernel, x):
    smooth = scipy.signal.convolve(x, kernel, mode="same")
    xcorr = scipy.signal.correlate(smooth, x, mode="full")
    fast = scipy.signal.fftconvolve(x, kernel[::-1], mode="valid")
    return np.max(xcorr) * 0.1 + np.sum(smooth**2) + np.sum(fast)


@program(CHIRP, np.array([0.5, 1.0, 0.5]))
def matched_filter_soft_arg_max(x, template):
    scores = np.correlate(x, template, mode="valid")
    weights = np.exp(3.0 * scores) / np.sum(np.exp(3.0 * scores))
    lag = np.sum(weights * np.arange(len(scores)))
    return lag + 0.1 * np.sum(scores**2)


# ----- signal processing: resampling, differences and quadrature ---------------------------------------------


@program(CHIRP, np.array([0.05, 0.33, 0.51, 0.94]))
def resampling_with_np_interp(values, query):
    resampled = np.interp(query, T_SIG, values)
    coarse = np.interp(np.linspace(0, 1, 5), T_SIG, values)
    return np.sum(resampled**2) + np.sum(np.diff(coarse) ** 2)


X_GRID = np.array([0.0, 0.2, 0.45, 0.6, 0.85, 1.0])


@program(np.array([0.1, 0.5, 0.9, 1.1, 0.7, 0.2]))
def gradient_on_a_nonuniform_grid(u):
    du = np.gradient(u, X_GRID)
    d2u = np.gradient(du, X_GRID, edge_order=2)
    return np.sum(du**2) + 0.1 * np.sum(d2u**2) + np.sum(np.gradient(u**2, 0.5, edge_order=2))


GRADIENT_COORDINATES = "its derivative in sample coordinates (an array of positions) is not supported"


@program(
    np.array([0.0, 0.2, 0.45, 0.6, 0.85, 1.0]),
    refuses={"source": GRADIENT_COORDINATES, "tape": GRADIENT_COORDINATES, "forward": GRADIENT_COORDINATES},
)
def gradient_with_differentiated_sample_positions(x):
    u = np.sin(3 * x) + x**2
    du = np.gradient(u, x)
    return np.sum(du**2)


@program(np.array([0.0, 0.3, 0.55, 0.8, 1.2, 1.5]), hessian=True)
def trapezoid_on_a_moving_grid(x):
    f = np.exp(-x) * np.cos(2 * x)
    area = np.trapezoid(f, x)
    second = np.trapezoid(f**2, dx=0.1)
    return area**2 + second + np.sum(np.diff(x) ** 2)


@program(CHIRP)
def savitzky_golay_by_least_squares(x):
    half = 2
    offsets = np.arange(-half, half + 1)
    V = np.vander(offsets, 3, increasing=True)
    coeffs = np.linalg.pinv(V)[0]
    smooth = np.convolve(x, coeffs[::-1], mode="valid")
    return np.sum((x[half:-half] - smooth) ** 2) + np.sum(np.diff(smooth, prepend=smooth[0]) ** 2)


@program(CHIRP)
def decimate_then_upsample(x):
    kernel = np.array([0.25, 0.5, 0.25])
    low = np.convolve(x, kernel, mode="same")
    down = low[::2]
    up = np.repeat(down, 2)
    residual = x - up
    energy = np.kron(down, np.array([1.0, -1.0]))
    return np.sum(residual**2) + 0.1 * np.sum(energy**2)


@dataclasses.dataclass(frozen=True)
class FilterBank:
    centres: tuple = (1.3, 2.4, 3.1)
    width: float = 0.6


@program(CHIRP, FilterBank())
def mel_like_filter_bank_energies(x, bank):
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    bins = np.arange(len(spectrum), dtype=float)
    energies = []
    for c in bank.centres:
        tri = np.clip(1.0 - np.abs(bins - c) / bank.width / 2, 0.0, None)
        energies.append(np.log(tri @ spectrum + 1e-3))
    return sum(energies)


@program(np.array([0.9, -0.3]))
def ar2_process_exact_likelihood(phi):
    x = CHIRP
    resid = x[2:] - phi[0] * x[1:-1] - phi[1] * x[:-2]
    sigma2 = np.mean(resid**2)
    n = len(resid)
    return 0.5 * n * np.log(sigma2) + 0.5 * np.sum(resid**2) / sigma2 + 0.1 * np.sum(phi**2)


@program(np.array([1.0, 0.5, 0.25]))
def polynomial_trend_and_spectral_leakage(coeffs):
    trend = np.polyval(coeffs, T_SIG)
    detrended = CHIRP - trend
    win = np.blackman(len(detrended))
    spec = np.abs(np.fft.rfft(detrended * win))
    return np.sum(spec[1:] ** 2) / np.sum(win**2) + np.sum(detrended**2)


@program(np.array([0.5, 1.2]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def scipy_stats_log_densities(params):
    mu, log_sd = params
    sd = np.exp(log_sd)
    x = np.array([0.3, 1.1, -0.2, 0.9])
    normal = scipy.stats.norm.logpdf(x, loc=mu, scale=sd)
    t = scipy.stats.t.logpdf(x, 4.0, loc=mu, scale=sd)
    counts = np.array([0, 2, 1, 3])
    poisson = scipy.stats.poisson.logpmf(counts, np.exp(mu))
    return -np.sum(normal) - np.sum(t) - np.sum(poisson)


@program(np.array([0.4, 1.3, 0.2]), nested=True)
def functools_partial_likelihoods(theta):
    def weighted_nll(params, data, weight):
        mu, log_sd = params[0], params[1]
        return weight * np.sum(0.5 * ((data - mu) / np.exp(log_sd)) ** 2 + log_sd)

    terms = [functools.partial(weighted_nll, data=d, weight=w) for d, w in ((GROWTH[:3], 1.0), (GROWTH[3:], 0.5))]
    penalty = theta[2] ** 2 * scipy.special.erf(theta[2])
    return sum(t(theta[:2]) for t in terms) + penalty


# ----- integrals, roots and ODEs of a model's parameters (SciPy's functionals) ------------------------------

LIBRARY_ON_TAPE = "would drop its derivative"  # a SciPy functional with a rule, run by forward mode on duals
# the tape sees the values being differentiated reach the ruled functional through its function's closure
FUNCTIONAL = {"tape": SCIPY_WRAPPER, "forward": LIBRARY_ON_TAPE}


@program(np.array([0.2, -0.5]), hessian=True, refuses=FUNCTIONAL)
def gompertz_survival_by_quad(params):
    a, b = np.exp(params)

    def hazard(t):
        return a * np.exp(b * t)

    total = 0.0
    for t, d in ((0.5, 1.0), (1.2, 0.0), (2.0, 1.0)):
        H, _ = scipy.integrate.quad(hazard, 0.0, t)
        total = total + d * np.log(hazard(t)) - H
    return -total


@program(0.7, nested=True, refuses=FUNCTIONAL)
def normalising_constant_by_quad(theta):
    log_z = np.log(scipy.integrate.quad(lambda x: np.exp(-theta * x**4 - x**2), -4.0, 4.0)[0])
    data = np.array([0.2, -0.5, 0.9])
    return np.sum(theta * data**4 + data**2) + len(data) * log_z


@program(np.array([0.3, 0.4]), hessian=True, refuses=FUNCTIONAL)
def interquantile_range_by_brentq(params):
    mu, log_s = params
    s = np.exp(log_s)

    def cdf_minus(x, p):
        return scipy.special.ndtr((x - mu) / s) - p

    q90 = scipy.optimize.brentq(cdf_minus, -10.0, 10.0, args=(0.9,))
    q10 = scipy.optimize.brentq(cdf_minus, -10.0, 10.0, args=(0.1,))
    return q90 - q10 + 0.1 * q90**2


@program(np.array([1.2, 0.8, 2.5, 0.4]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def gamma_shape_mle_by_newton(x):
    log_mean_minus_mean_log = np.log(np.mean(x)) - np.mean(np.log(x))

    def score(k):
        return np.log(k) - scipy.special.digamma(k) - log_mean_minus_mean_log

    k_hat = scipy.optimize.newton(score, 1.0, fprime=lambda k: 1 / k - scipy.special.polygamma(1, k))
    return k_hat + np.mean(x) / k_hat


@program(np.array([0.9, 0.3]), refuses=FUNCTIONAL)
def sir_epidemic_fit_with_solve_ivp(log_rates):
    beta, gamma = np.exp(log_rates)

    def sir(t, y):
        s, i, r = y
        return np.stack([-beta * s * i, beta * s * i - gamma * i, gamma * i])

    t_obs = np.array([1.0, 2.0, 4.0])
    sol = scipy.integrate.solve_ivp(sir, (0.0, 4.0), np.array([0.99, 0.01, 0.0]), t_eval=t_obs, rtol=1e-10, atol=1e-12)
    observed = np.array([0.02, 0.035, 0.06])
    return np.sum((sol.y[1] - observed) ** 2)


@program(CHIRP, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def scipy_quadratures_of_samples(y):
    a = scipy.integrate.simpson(y**2, x=T_SIG)
    b = scipy.integrate.cumulative_trapezoid(y, T_SIG, initial=0.0)
    c = scipy.integrate.trapezoid(np.abs(y), dx=0.2)
    return a + np.sum(b**2) + c


# ----- more statistics -------------------------------------------------------------------------------------------


@program(np.array([0.5, 1.3, 2.2]), hessian=True)
def box_cox_profile_likelihood(lmbdas):
    y = np.array([1.2, 0.4, 3.3, 2.1, 0.9])
    total = 0.0
    for lmb in lmbdas:
        z = scipy.special.boxcox(y, lmb)
        total = total - 0.5 * len(y) * np.log(np.var(z)) + (lmb - 1) * np.sum(np.log(y))
    return -total


@program(np.array([0.3, 0.8]), nested=True)
def gauss_hermite_expected_sigmoid(params):
    mu, log_sd = params
    nodes, weights = np.polynomial.hermite.hermgauss(10)
    x = mu + np.sqrt(2.0) * np.exp(log_sd) * nodes
    expected = np.sum(weights * scipy.special.expit(x)) / np.sqrt(np.pi)
    return np.log(expected) + 0.5 * mu**2


@program(np.array([0.7, -0.2, 1.5, 0.3]), refuses={"tape": SCIPY_WRAPPER})
def vectorized_scalar_log_likelihood(x):
    def log_term(v):
        if v > 1.0:
            return -np.log(v)
        return -0.5 * v**2

    return np.sum(np.vectorize(log_term)(x))


@program(np.array([[0.3, 1.1], [0.8, -0.5], [1.4, 0.2]]), hessian=True)
def row_statistics_with_apply_along_axis(M):
    def row_stat(r):
        return np.log(np.sum(np.exp(r))) + r[0] * r[1]

    return np.sum(np.apply_along_axis(row_stat, 1, M) ** 2)


@program(np.array([0.3, -0.5, 0.8, 1.2, -0.1, 0.4]), nested=True)
def kalman_smoother_rts(obs):
    a, q, r = 0.9, 0.1, 0.2
    m, P = 0.0, 1.0
    ms, Ps, mp, Pp = [], [], [], []
    for y in obs:
        m_pred, P_pred = a * m, a * a * P + q
        K = P_pred / (P_pred + r)
        m, P = m_pred + K * (y - m_pred), (1 - K) * P_pred
        ms.append(m)
        Ps.append(P)
        mp.append(m_pred)
        Pp.append(P_pred)
    smoothed = [ms[-1]]
    for t in range(len(obs) - 2, -1, -1):
        G = Ps[t] * a / Pp[t + 1]
        smoothed.append(ms[t] + G * (smoothed[-1] - mp[t + 1]))
    return sum(s**2 for s in smoothed) + smoothed[-1]


class Prior(NamedTuple):
    mean: float
    sd: float


@program({"w": np.array([0.3, -0.2]), "log_noise": -0.5}, {"w": Prior(0.0, 1.0), "log_noise": Prior(-1.0, 0.5)})
def map_objective_with_a_dict_of_priors(params, priors):
    X = np.array([[1.0, 0.5], [0.2, -1.0], [-0.7, 0.3]])
    y = np.array([0.4, -0.3, 0.1])
    noise = np.exp(params["log_noise"])
    nll = 0.5 * np.sum((X @ params["w"] - y) ** 2) / noise**2 + len(y) * np.log(noise)
    for name, value in params.items():
        p = priors[name]
        nll = nll + 0.5 * np.sum(((value - p.mean) / p.sd) ** 2)
    return nll


@program(
    {"Healthy": 0.6, "Fever": 0.4},
    {"Healthy": {"Healthy": 0.7, "Fever": 0.3}, "Fever": {"Healthy": 0.4, "Fever": 0.6}},
    {"Healthy": {"normal": 0.5, "cold": 0.4, "dizzy": 0.1}, "Fever": {"normal": 0.1, "cold": 0.3, "dizzy": 0.6}},
    refuses={"tape": MATH_ON_TAPE},
)
def hmm_forward_with_dicts_of_probabilities(start_p, trans_p, emit_p):
    states = ("Healthy", "Fever")
    obs = ("normal", "cold", "dizzy", "cold")
    fwd = [{s: start_p[s] * emit_p[s][obs[0]] for s in states}]
    for o in obs[1:]:
        prev = fwd[-1]
        fwd.append({s: emit_p[s][o] * sum(prev[r] * trans_p[r][s] for r in states) for s in states})
    return math.log(sum(fwd[-1][s] for s in states))


@program(np.array([-1.2, 0.3, 0.8, -0.4]), nested=True)
def log_marginal_by_functools_reduce(log_terms):
    lme = functools.reduce(np.logaddexp, log_terms)
    running = list(itertools.accumulate(log_terms, np.logaddexp))
    return lme + 0.5 * sum(r**2 for r in running)


@program(np.array([0.1, 0.3, 0.2, 0.05]), hessian=True)
def discrete_time_survival_with_itertools(hazards):
    cum = list(itertools.accumulate(hazards))
    surv = [np.exp(-c) for c in cum]
    pmf = [a - b for a, b in itertools.pairwise(surv)]
    return -sum(np.log(p) for p in pmf) + sum(itertools.starmap(lambda a, b: a * b, zip(hazards, surv)))


@dataclasses.dataclass
class NormalPrior:
    mu: float
    log_sigma: float

    def __post_init__(self):
        self.sigma = np.exp(self.log_sigma)

    def logpdf(self, x):
        return -0.5 * ((x - self.mu) / self.sigma) ** 2 - self.log_sigma - 0.5 * np.log(2 * np.pi)


@program(np.array([0.3, -0.2]), hessian=True)
def dataclass_with_a_post_init_derived_field(theta):
    prior = NormalPrior(theta[0], theta[1])
    return -np.sum(prior.logpdf(np.array([0.1, 0.5, -0.3])))


@functools.cache
def polynomial_design(n, degree):
    return np.vander(np.linspace(-1.0, 1.0, n), degree + 1, increasing=True)


@program(np.array([0.3, -0.2, 0.5]), nested=True)
def cached_polynomial_design_matrix(beta):
    X = polynomial_design(6, 2)
    y = np.array([0.1, 0.4, 0.2, 0.6, 0.9, 1.3])
    return np.sum((X @ beta - y) ** 2) + 0.1 * beta @ beta


class SquaredExponential:
    def __init__(self, lengthscale, variance):
        self.lengthscale = lengthscale
        self.variance = variance

    @property
    def precision(self):
        return 1.0 / self.lengthscale**2

    @staticmethod
    def sqdist(a, b):
        return (a[:, None] - b[None, :]) ** 2

    @classmethod
    def unit_variance(cls, ell):
        return cls(ell, 1.0)

    def __call__(self, a, b):
        return self.variance * np.exp(-0.5 * self.sqdist(a, b) * self.precision)


@program(0.7, hessian=True)
def kernel_class_with_property_static_and_classmethod(ell):
    k = SquaredExponential.unit_variance(ell)
    x = np.array([0.0, 0.4, 1.1])
    K = k(x, x) + 1e-2 * np.eye(3)
    return np.linalg.slogdet(K)[1] + np.sum(np.linalg.solve(K, np.ones(3)))


@program(np.array([0.3, 1.2]))
def try_except_for_an_invalid_observation(params):
    total = 0.0
    for y in (0.5, -0.2, 1.4):
        try:
            if y <= 0:
                raise ValueError("non-positive observation")
            total = total + params[0] * np.log(y) - params[1] * y
        except ValueError:
            total = total - params[1] ** 2
    return total


@program(np.array([0.4, 1.2, 0.3, -0.5, 2.0, 0.9]), np.array([0.3, 0.2, 0.6, 0.4, 0.1, 0.5]), hessian=True)
def covariance_and_correlation_variants(x, y):
    c1 = np.cov(x, y)
    c2 = np.cov(x, bias=True)
    c3 = np.cov(np.stack([x, y]), ddof=2)
    r = np.corrcoef(x, y)
    return np.sum(c1**2) + c2 + np.sum(c3) + r[0, 1] ** 2


@program(np.array([[1.0, 0.5, -0.2], [0.3, 1.2, 0.4], [-0.5, 0.1, 0.9], [0.8, -0.7, 0.2]]))
def weighted_covariance_of_features(X):
    C = np.cov(X, rowvar=False, aweights=np.array([1.0, 2.0, 0.5, 1.5]))
    F = np.cov(X.T, fweights=np.array([1, 2, 1, 3]), ddof=0)
    return np.trace(C) + np.sum(F**2)


@program(np.array([0.4, 1.2, 0.3, -0.5, 2.0, 0.9]), nested=True)
def medians_and_quantiles_by_axis(x):
    M = x.reshape(2, 3)
    q = np.quantile(x, [0.0, 0.2, 1.0])
    return (
        np.median(x) ** 2 + np.median(x[:5]) + np.sum(np.median(M, axis=0) ** 2) + np.sum(q * np.array([1.0, 2.0, 3.0]))
    )


@program(np.array([0.35, 0.83]))
def quantile_at_differentiated_levels(q):
    data = np.array([0.4, 1.2, 0.3, -0.5, 2.0, 0.9])
    return np.sum(np.quantile(data, q) ** 2) + np.percentile(data, 100 * q[0])


@program(np.array([1.5, 2.5]), np.array([0.3, 0.7, 0.9]), hessian=True)
def broadcast_binary_special_functions(ab, x):
    a, b = ab
    terms = (
        scipy.special.betaln(a, x + 1.0)
        + scipy.special.xlogy(x, a)
        + scipy.special.xlog1py(b, -x)
        + scipy.special.beta(x, b)
        + scipy.special.binom(b + 3.0, x)
        + scipy.special.gammainc(2.0, x * a)
    )
    return np.sum(terms)


@program(
    np.array([0.3, 1.2]), np.array([0.5, -0.2, 1.4]), refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}
)
def scipy_stats_with_broadcast_locations(params, locs):
    mu, log_s = params
    x = np.array([[0.1], [0.9]])
    lp = scipy.stats.norm.logpdf(x, loc=locs + mu, scale=np.exp(log_s))
    lc = scipy.stats.logistic.logcdf(x, loc=locs, scale=np.exp(log_s))
    ls = scipy.stats.laplace.logpdf(x, locs, np.exp(log_s))
    return -np.sum(lp) - np.sum(lc) + np.sum(ls**2)


@program(np.array([0.5, 1.2]), nested=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def frozen_scipy_distributions(params):
    mu, log_sd = params
    dist = scipy.stats.norm(mu, np.exp(log_sd))
    t = scipy.stats.t(3.0, loc=mu)
    x = np.array([0.3, 1.1, -0.2])
    return -np.sum(dist.logpdf(x)) + np.sum(t.cdf(x)) + dist.ppf(0.9)


@program(
    np.array([0.5, -0.2]),
    np.array([[1.0, 0.3], [0.3, 2.0]]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def multivariate_normal_logpdf_in_mean_and_cov(mean, cov):
    x = np.array([[0.1, 0.2], [1.0, -0.5], [0.3, 0.3]])
    cov = 0.5 * (cov + cov.T)
    return -np.sum(scipy.stats.multivariate_normal.logpdf(x, mean=mean, cov=cov))


@program(np.array([2.0, 3.0, 1.5]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})
def multivariate_t_log_density(params):
    nu, s1, s2 = params
    x = np.array([[0.3, -0.2], [1.1, 0.5], [-0.4, 0.9]])
    L = np.linalg.cholesky(np.array([[s1, 0.2], [0.2, s2]]))
    maha = np.sum(np.linalg.solve(L, x.T) ** 2, axis=0)
    logdet = 2 * np.sum(np.log(np.diag(L)))
    lp = (
        scipy.special.gammaln((nu + 2) / 2)
        - scipy.special.gammaln(nu / 2)
        - np.log(nu * np.pi)
        - 0.5 * logdet
        - (nu + 2) / 2 * np.log1p(maha / nu)
    )
    return -np.sum(lp)


@program(np.array([0.4, -0.3, 0.8]), np.array([1.0, 0.0, 1.0]))
def logistic_loss_three_ways(z, y):
    a = -np.sum(y * scipy.special.log_expit(z) + (1 - y) * scipy.special.log_expit(-z))
    b = np.sum(scipy.special.softplus(z) - y * z)
    c = np.sum(scipy.special.expit(z) * (1 - scipy.special.expit(z)))
    return a + b + c


@program(np.array([0.3, -1.2, 0.5]), hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def signed_logsumexp_of_a_mixture(x):
    v, s = scipy.special.logsumexp(x, b=np.array([1.0, -0.5, 2.0]), return_sign=True)
    w = scipy.special.logsumexp(np.stack([x, 2 * x]), axis=0, b=np.array([[1.0], [0.5]]))
    k = scipy.special.logsumexp(np.stack([x, x**2]), axis=1, keepdims=True)
    return v * s + np.sum(w) + np.sum(k**2)


@program(np.array([[[2.0, 0.3], [0.3, 1.0]], [[1.5, -0.2], [-0.2, 0.8]]]), nested=True)
def batched_covariances_in_one_call(Sigmas):
    L = np.linalg.cholesky(Sigmas)
    sign, logdet = np.linalg.slogdet(Sigmas)
    x = np.linalg.solve(Sigmas, np.ones((2, 2, 1)))
    return np.sum(L) + np.sum(logdet) + np.sum(x**2) + np.sum(np.linalg.inv(Sigmas) * Sigmas.transpose(0, 2, 1))


@program(np.array([0.2, 0.9, 1.6, 2.1, 3.0]), hessian=True)
def weighted_polyfit_then_lstsq(y):
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    c = np.polyfit(t, y, 2, w=np.array([1.0, 2.0, 1.0, 0.5, 1.0]))
    fitted = np.polyval(c, t)
    beta, res, rank, sv = np.linalg.lstsq(np.vander(t, 2), y, rcond=None)
    return np.sum((fitted - y) ** 2) + np.sum(c**2) + np.sum(beta**2) + np.sum(res)


@program(np.array([0.3, 0.9, 1.6]), nested=True)
def histogram_weights_with_bincount(w):
    idx = np.array([0, 2, 2, 1, 0, 2])
    counts = np.bincount(idx, weights=np.concatenate([w, w**2]), minlength=4)
    return np.sum(counts**2)


# ----- more signal processing ---------------------------------------------------------------------------------


@program(0.37, hessian=True, nested=True)
def fractional_delay_by_phase_ramp_even(d):
    n = len(CHIRP)
    k = np.fft.rfftfreq(n)
    y = np.fft.irfft(np.fft.rfft(CHIRP) * np.exp(-2j * np.pi * k * d), n=n)
    return np.sum(y * np.arange(n)) + y[0] ** 2


@program(0.37, hessian=True)
def fractional_delay_by_phase_ramp_odd(d):
    x = CHIRP[:7]
    k = np.fft.rfftfreq(7)
    y = np.fft.irfft(np.fft.rfft(x) * np.exp(-2j * np.pi * k * d), n=7)
    return np.sum(y * np.arange(7)) + y[0] ** 2


@program(np.array([0.3, 0.8, -0.2, 0.5, 0.1]), hessian=True, nested=True)
def irfft_and_hfft_of_a_parametrised_spectrum(c):
    X = c[:3] + 1j * np.concatenate([c[3:], np.zeros(1)])
    y = np.fft.irfft(X, n=4)
    z = np.fft.irfft(X, n=5)
    w = np.fft.hfft(X, n=4)
    return np.sum(y**2 * np.arange(1.0, 5.0)) + np.sum(z**3) + np.sum(w * np.array([1.0, -1.0, 2.0, 0.5]))


@program(CHIRP, hessian=True)
def fft_norms_and_truncation(x):
    a = np.fft.fft(x, n=6, norm="ortho")
    b = np.fft.rfft(x, n=10, norm="forward")
    c = np.fft.irfft(b, n=7, norm="forward")
    d = np.fft.hfft(a[:4], n=6)
    e = np.fft.ihfft(x)
    return np.sum(np.abs(a) ** 2) + np.sum(c**2) + np.sum(d) + np.sum(np.abs(e) ** 3)


@program(CHIRP.reshape(2, 4), nested=True)
def multidimensional_ffts_with_axes(X):
    F = np.fft.fftn(X, axes=(1,))
    H = np.fft.irfftn(np.fft.rfftn(X, s=(2, 6), axes=(0, 1)), s=(2, 6), axes=(0, 1))
    G = np.fft.fft(X, axis=0)
    return np.sum(np.abs(F) ** 2) + np.sum(H**2) + np.real(np.fft.ifft2(X)[1, 1]) + np.sum(np.abs(G))


@program(0.2, hessian=True)
def spectral_derivative_with_a_differentiated_spacing(dx):
    n = 8
    x = dx * np.arange(n)
    u = np.sin(2 * np.pi * x / (n * dx)) + 0.5 * np.cos(4 * np.pi * x / (n * dx))
    k = 2 * np.pi * np.fft.fftfreq(n, d=dx)
    du = np.real(np.fft.ifft(1j * k * np.fft.fft(u)))
    return np.sum(du**2) * dx


@program(np.array([0.2, 0.5, -0.3]), np.array([1.0, -0.5, 2.0, 0.3, 0.8, -1.1]), hessian=True)
def short_signal_long_kernel_convolutions(sig, kern):
    a = np.convolve(sig, kern, mode="same")
    b = np.convolve(sig, kern, mode="valid")
    c = np.correlate(sig, kern, mode="full")
    d = np.correlate(sig, kern, mode="same")
    e = np.correlate(sig, kern, mode="valid")
    return (
        np.sum(a**2 * np.arange(1.0, 7.0))
        + np.sum(b * np.arange(4.0))
        + np.sum(c**2 * np.arange(8.0))
        + np.sum(d * np.arange(6.0))
        + np.sum(e**3)
    )


@program(np.array([0.2, 0.5, -0.3, 0.1]), np.array([1.0, -0.5, 2.0, 0.3, 0.8, -1.1]), nested=True)
def complex_cross_correlation(a, b):
    za = a + 1j * a[::-1]
    zb = b - 0.3j * b**2
    w = np.arange(1.0, 10.0)
    c = np.correlate(za, zb, mode="full")
    d = np.correlate(za, zb, mode="same")
    e = np.correlate(za, zb, mode="valid")
    return np.sum(np.abs(c) ** 2 * w) + np.sum(np.real(d) * w[:6]) + np.sum(np.imag(e) * w[:3])


@program(
    np.arange(12.0).reshape(3, 4) / 7.0,
    np.array([[0.5, -0.2], [0.3, 1.0]]),
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def image_filtering_with_an_even_kernel(image, kernel):
    s = scipy.signal.convolve(image, kernel, mode="same")
    c = scipy.signal.correlate(image, kernel, mode="valid")
    f = scipy.signal.fftconvolve(image, kernel, mode="same")
    return np.sum(s**2 * np.arange(12.0).reshape(3, 4)) + np.sum(c * np.arange(6.0).reshape(2, 3)) + np.sum(f**3)


@program(np.array([0.3, 0.9, 1.4]), nested=True)
def band_limited_sinc_interpolation(samples):
    t = np.array([0.25, 0.8, 1.6])
    n = np.arange(len(samples))
    y = np.sum(samples[None, :] * np.sinc(t[:, None] - n[None, :]), axis=1)
    return np.sum(y**2) + np.sinc(n - 1.0) @ samples


@program(np.array([0.5, 2.0]), hessian=True)
def integral_over_differentiated_limits(ab):
    a, b = ab
    t = np.linspace(a, b, 9)
    f = np.exp(-t) * np.sin(3 * t)
    return np.trapezoid(f, t) + np.sum(np.logspace(0.0, a, 4))


@program(np.array([0.1, 2.9, -2.8, 0.3, 3.0, -3.1]), nested=True)
def unwrapped_phase_trend(phi):
    u = np.unwrap(phi)
    v = np.unwrap(phi * 2.0, period=4.0)
    w = np.unwrap(phi, discont=4.0)
    return np.sum(u**2) + np.sum(v) + np.sum(w**3)


@program(np.array([1.0, 2.0, 0.5, 1.5]), hessian=True)
def lookup_table_values_with_interp(fp):
    xp = np.array([0.0, 0.3, 0.6, 1.0])
    y = np.interp(np.array([0.1, 0.45, 0.8, 1.2]), xp, fp)
    return np.sum(y**2) + y[3]


@program(np.array([0.0, 0.3, 0.6, 1.0]), nested=True)
def lookup_table_knots_with_interp(xp):
    y = np.interp(np.array([0.1, 0.45, 0.8]), xp, np.array([1.0, 2.0, 0.5, 1.5]))
    return np.sum(y**2)


@program(np.array([[0.1, 0.4, 0.2, 0.5], [0.7, 0.3, 0.9, 0.0], [0.2, 0.2, 0.6, 0.8]]), hessian=True)
def image_gradients_along_both_axes(M):
    gy, gx = np.gradient(M, 0.5, 0.25)
    g1 = np.gradient(M, axis=1, edge_order=2)
    return np.sum(gy**2 + gx**2) + np.sum(g1**3)


@program(np.array([[0.1, 0.4, 0.2], [0.7, 0.3, 0.9]]), nested=True)
def quadrature_running_sums_and_differences_by_axis(M):
    a = np.trapezoid(M, axis=0)
    b = np.trapezoid(M, x=np.array([0.0, 0.5, 1.5]), axis=1)
    c = np.cumsum(M, axis=1)
    d = np.diff(M, n=2, axis=1, append=0.5)
    e = np.diff(M, axis=0, prepend=M[:1])
    return np.sum(a**2) + np.sum(b**2) + np.sum(c * M) + np.sum(d**2) + np.sum(e**2)


@program(CHIRP.astype(np.float32), rtol=3e-3)
def float32_spectrum_and_filters(x):
    X = np.fft.rfft(x * np.hanning(8).astype(np.float32))
    c = np.convolve(x, np.array([0.25, 0.5, 0.25], dtype=np.float32), mode="same")
    r = np.correlate(x, x, mode="full")
    return np.sum(np.abs(X) ** 2) + np.sum(c**2) + r[7] + np.sum(np.gradient(x) ** 2) + np.trapezoid(x)


# ----- scatters at second order, complex spectra of real matrices, math of float(), argnums --------


@program(CHIRP, hessian=True, nested=True)
def peak_hold_envelope(x):
    # second derivatives through the running extrema's scatter
    peak = np.maximum.accumulate(np.abs(x))
    trough = np.minimum.accumulate(x)
    return np.sum(peak**2) + np.sum(trough)


@program(CHIRP, hessian=True, nested=True)
def sample_and_hold_with_variable_repeats(x):
    # second derivatives through np.repeat(x, counts)'s scatter
    held = np.repeat(x[::2], [1, 2, 3, 2])
    return np.sum((held - x) ** 2) + np.sum(held**3)


@program(CHIRP, hessian=True, nested=True)
def smoothing_with_reflected_boundaries(x):
    # a tape gradient of a source gradient through np.pad(mode="reflect")'s scatter
    padded = np.pad(x, 1, mode="reflect")
    smooth = np.convolve(padded, np.array([0.25, 0.5, 0.25]), mode="valid")
    return np.sum((smooth - x) ** 2) + np.sum(smooth**3)


@program(np.array([[0.5, -0.6], [0.7, 0.2]]), hessian=True, nested=True)
def var1_stability_penalty(A):
    # eigenvalues of a real matrix that are complex: its Hessian and a tape's gradient stay real
    w = np.linalg.eigvals(A)
    radius = np.max(np.abs(w))
    return np.sum(np.abs(w) ** 2) + 10.0 * np.maximum(radius - 0.9, 0.0) ** 2


@program(np.array([1.5, 2.5, 0.7]), hessian=True, nested=True, refuses={"tape": MATH_ON_TAPE, "forward": MATH_FORWARD})
def dirichlet_log_normaliser_with_math(alpha):
    # math.lgamma(float(...)): the source engine's primal carries forward mode and Hessians through it
    s = float(np.sum(alpha))
    log_norm = math.lgamma(s) - sum(math.lgamma(a) for a in alpha)
    return -log_norm - np.sum((alpha - 1) * np.log(np.array([0.2, 0.5, 0.3])))


@program(np.array([0.2, 0.9, 1.5, 0.4]), hessian=True)
def spectral_subtraction_with_where(power):
    # the discarded branch kept away from sqrt's singular point (a "double where": see docs/engines.md)
    noise = 0.5
    above = power > noise
    magnitude = np.where(above, np.sqrt(np.where(above, power - noise, 1.0)), 0.0)
    return np.sum(magnitude * np.array([1.0, 2.0, 3.0, 4.0]))


@program(np.array([0.2, 0.9, 1.5, 0.4]))
def spectral_subtraction_with_a_floor(power):
    floored = np.maximum(power - 0.5, 0.0)
    magnitude = np.where(floored > 0.0, np.sqrt(np.where(floored > 0.0, floored, 1.0)), 0.0)
    return np.sum(magnitude * np.array([1.0, 2.0, 3.0, 4.0]))


@program(np.array([0.2, 0.9, 1.7]))
def phase_lookup_with_periodic_interp(phase):
    table_phase = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    gain = np.array([1.0, 0.6, 0.2, 0.7, 1.0])  # one period, closed
    return np.sum(np.interp(np.mod(phase, 1.0), table_phase, gain) ** 2)


@program(np.array([0.3, 0.05, 0.5, 0.9, 0.2]), hessian=True)
def life_table(hazards):
    survival = np.cumprod(1.0 - hazards)
    return np.sum(survival * np.arange(1.0, 6.0))


def windowed_spectral_misfit(gains, x, nfft):
    window = np.hanning(nfft)
    target = np.abs(np.fft.rfft(x[:nfft] * window)) ** 2
    model = np.abs(np.fft.rfft((gains[0] * x[:nfft] + gains[1]) * window)) ** 2
    return np.sum((np.log(model + 1e-3) - np.log(target + 1e-3)) ** 2)


@program(np.array([0.8, 0.1]), hessian=True)
def gradient_step_on_a_spectral_fit_with_argnums(gains):
    # argnums=0: the data and the integer length are constants (np.hanning(nfft) has no rule)
    g = cr.gradient(windowed_spectral_misfit, gains, CHIRP, 8, argnums=0)
    gains = gains - 0.01 * g
    return windowed_spectral_misfit(gains, CHIRP, 8)
