"""A thirteenth corpus of whole programs: SciPy's breadth as scientific code uses it.
``scipy.special`` (log-gamma and its derivatives, beta functions, error functions and their
inverses, the logistic pair, ``log_ndtr``/``ndtri``, ``xlogy``/``xlog1py``, ``logsumexp`` with
weights and an axis, softmax, Bessel functions, ``zeta``), ``scipy.stats`` densities, masses and
distribution functions with their parameters differentiated, frozen distributions, the
multivariate normal; solvers inside losses (``minimize``, ``brentq``/``root_scalar``, ``fsolve``,
``least_squares``, ``curve_fit``), quadrature and ODE solutions (``quad``, ``solve_ivp``,
``odeint``, ``trapezoid``/``simpson``/``cumulative_trapezoid``), interpolants and their
derivatives, ``scipy.ndimage`` filters with their modes, ``scipy.signal`` convolutions,
``scipy.spatial.distance``, ``scipy.linalg`` factorizations, matrix functions and structured
matrices, sparse matrices scaled by values being differentiated and ``spsolve``, Python's
``statistics`` module and ``numpy.polynomial`` classes, mixed in loops, closures and dataclasses,
in float32 where SciPy keeps it.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import scipy.integrate
import scipy.interpolate
import scipy.linalg
import scipy.ndimage
import scipy.optimize
import scipy.signal
import scipy.sparse
import scipy.sparse.linalg
import scipy.spatial.distance
import scipy.special
import scipy.stats
from numpy.polynomial import Chebyshev, Legendre, Polynomial
from program_checks import ARRAY_OF_TRACKED, SCIPY_WRAPPER, SCIPY_WRAPPER_FORWARD, new_corpus

PROGRAMS, program = new_corpus()

RNG = np.random.default_rng(1313)

# a SciPy Python function with a rule, called inside the function differentiated: the tape sees its operations only
RULE_ON_TAPE = {"tape": SCIPY_WRAPPER}


# a SciPy Python function without a rule: the source engine refuses it, the tape and forward mode its conversion of the
# values into a plain array (library code is differentiated only through rules)
def no_rule(name: str) -> dict:
    return {"source": f"no differentiation rule for {name}", "tape": ARRAY_OF_TRACKED, "forward": ARRAY_OF_TRACKED}


# a SciPy Python wrapper with a rule (and a forward rule): the tape and forward mode see the operations inside it
WRAPPER = {"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD}
# a SciPy solver with a reverse rule only: forward mode runs its body, which converts the duals; the API then runs
# the function through the source engine's primal, which calls the rule
SOLVER = {"tape": SCIPY_WRAPPER, "forward": ARRAY_OF_TRACKED}
# a sparse matrix built from values being differentiated: SciPy stores plain numbers, so forward mode refuses the
# constructor's rule inside the function, and then its forward rule (running the function as the source engine does)
SPARSE_FROM_VALUES = {"tape": SCIPY_WRAPPER, "forward": "scipy.sparse._construct.diags", "forward-primal": "sparse"}

SAMPLES = np.array([0.42, 1.37, 0.88, 2.15, 0.61, 1.02, 1.74, 0.29])
COUNTS = np.array([3.0, 0.0, 5.0, 2.0, 7.0, 1.0])
TIMES = np.linspace(0.0, 2.0, 9)
IMAGE = RNG.normal(size=(6, 5))
POINTS = RNG.normal(size=(5, 2))


def spd(n, seed, shift=None):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A @ A.T + (n if shift is None else shift) * np.eye(n)


# ----- scipy.special -------------------------------------------------------------------------------


@program(np.array([1.3, 0.7, 2.4]), hessian=True, nested=True)
def dirichlet_multinomial_log_likelihood_by_gammaln(alpha):
    counts = np.array([4.0, 1.0, 6.0])
    a0 = np.sum(alpha)
    n = np.sum(counts)
    return (
        scipy.special.gammaln(a0)
        - scipy.special.gammaln(n + a0)
        + np.sum(scipy.special.gammaln(counts + alpha) - scipy.special.gammaln(alpha))
    )


@program(np.array([1.3, 0.7, 2.4]), hessian=True, nested=True)
def dirichlet_entropy_by_digamma(alpha):
    a0 = np.sum(alpha)
    k = alpha.size
    log_b = np.sum(scipy.special.gammaln(alpha)) - scipy.special.gammaln(a0)
    return log_b + (a0 - k) * scipy.special.digamma(a0) - np.sum((alpha - 1.0) * scipy.special.digamma(alpha))


@program(np.array([2.2, 3.1]), hessian=True, refuses=RULE_ON_TAPE)
def gamma_fisher_information_by_polygamma(shape_rate):
    a, b = shape_rate[0], shape_rate[1]
    trigamma = scipy.special.polygamma(1, a)
    info = np.array([[trigamma, -1.0 / b], [-1.0 / b, a / b**2]])
    return np.linalg.slogdet(info)[1] + scipy.special.polygamma(2, a) ** 2


@program(np.array([2.5, 1.7]), hessian=True, nested=True)
def beta_binomial_log_marginal_by_betaln(ab):
    successes = np.array([3.0, 7.0, 1.0, 5.0])
    trials = np.array([10.0, 12.0, 4.0, 9.0])
    a, b = ab[0], ab[1]
    terms = scipy.special.betaln(successes + a, trials - successes + b) - scipy.special.betaln(a, b)
    return np.sum(terms)


@program(np.array([0.3, -0.8, 1.2, 0.05]), hessian=True, nested=True)
def probit_gaussian_tail_by_erf_and_erfc(z):
    cdf = 0.5 * (1.0 + scipy.special.erf(z / np.sqrt(2.0)))
    tail = 0.5 * scipy.special.erfc(z / np.sqrt(2.0))
    return np.sum(np.log(cdf) * tail) + np.sum(cdf**2)


@program(np.array([0.1, 0.45, 0.8, 0.93]), hessian=True)
def gaussian_quantiles_by_erfinv_and_ndtri(p):
    q1 = np.sqrt(2.0) * scipy.special.erfinv(2.0 * p - 1.0)
    q2 = scipy.special.ndtri(p)
    return np.sum(q1 * q2) + np.sum(np.abs(q1 - q2) ** 2) + np.sum(q2**3)


@program(np.array([0.4, -1.1, 2.0]), np.array([1.0, 0.0, 1.0, 1.0, 0.0]), hessian=True, nested=True)
def logistic_regression_by_expit_and_log_expit(w, y):
    X = np.array([[1.0, 0.3, -0.2], [1.0, -1.2, 0.5], [1.0, 0.8, 0.9], [1.0, 0.1, -1.4], [1.0, -0.5, 0.2]])
    z = X @ w
    nll = -np.sum(y * scipy.special.log_expit(z) + (1.0 - y) * scipy.special.log_expit(-z))
    p = scipy.special.expit(z)
    return nll + 0.1 * np.sum(scipy.special.logit(0.05 + 0.9 * p) ** 2)


@program(np.array([0.6, -0.4, 1.5, -2.2]), hessian=True, nested=True)
def probit_likelihood_by_log_ndtr(z):
    y = np.array([1.0, 0.0, 1.0, 0.0])
    sign = 2.0 * y - 1.0
    return -np.sum(scipy.special.log_ndtr(sign * z)) + 0.05 * np.sum(z**2)


@program(np.array([0.2, 0.5, 0.3]), np.array([0.25, 0.25, 0.5]), hessian=True)
def kl_and_cross_entropy_by_xlogy(p, q):
    kl = np.sum(scipy.special.xlogy(p, p) - scipy.special.xlogy(p, q))
    bernoulli = -np.sum(scipy.special.xlog1py(1.0 - p, -q))
    return kl + bernoulli


@program(RNG.normal(size=(3, 4)), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def weighted_logsumexp_mixture_along_an_axis(logits):
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    per_row = scipy.special.logsumexp(logits, b=weights, axis=1)
    total = scipy.special.logsumexp(logits)
    return np.sum(per_row**2) + total


@program(RNG.normal(size=(4, 3)), hessian=True, refuses=RULE_ON_TAPE)
def attention_weights_by_softmax_and_log_softmax(scores):
    labels = np.array([0, 2, 1, 2])
    attn = scipy.special.softmax(scores, axis=1)
    logp = scipy.special.log_softmax(scores, axis=1)
    nll = -np.sum(logp[np.arange(4), labels])
    return nll + np.sum(attn @ np.array([1.0, -0.5, 2.0]) ** 2)


@program(np.array([0.8, 1.7, 3.1]), hessian=True, nested=True)
def von_mises_normalizer_by_iv_and_kv(kappa):
    log_norm = np.log(2.0 * np.pi * scipy.special.iv(0, kappa))
    mean_resultant = scipy.special.iv(1, kappa) / scipy.special.iv(0, kappa)
    matern = scipy.special.kv(1.5, kappa) * kappa**1.5
    return np.sum(log_norm) + np.sum(mean_resultant**2) + np.sum(matern)


@program(np.array([1.2, 2.9, 4.4]), hessian=True)
def drum_modes_by_bessel_jv(r):
    modes = np.array([0.0, 1.0, 2.0])
    total = 0.0
    for n in modes:
        total = total + np.sum(scipy.special.jv(n, r) ** 2)
    return total + np.sum(scipy.special.jv(0.5, r) * r)


@program(np.array([1.5, 3.2]), hessian=True)
def hurwitz_zeta_power_law_normalizer(shift):
    # a discrete power law p(k) = (k + q)^-s / zeta(s, q) over k >= 0, in its offset q (s is fixed)
    s = 2.5
    data = np.array([0.0, 1.0, 3.0, 6.0, 11.0])
    log_norm = np.log(scipy.special.zeta(s, shift[:, None]))
    return np.sum(s * np.log(data[None, :] + shift[:, None]) + log_norm)


@program(np.array([0.2, 0.5]), hessian=True)
def hypergeometric_series_in_its_argument(z):
    return np.sum(scipy.special.hyp2f1(0.5, 1.0, 1.5, z) * z)


@program(np.array([0.3, 1.4]), hessian=True)
def lambert_w_growth(x):
    return np.sum(np.real(scipy.special.lambertw(x)) ** 2)


@program(np.array([0.7, 1.9, 0.4], dtype=np.float32), hessian=True, rtol=2e-3)
def float32_special_functions_keep_their_precision(x):
    out = scipy.special.gammaln(x) + scipy.special.erf(x) * scipy.special.expit(x)
    assert out.dtype == np.float32
    return np.sum(out**2)


# ----- scipy.stats ---------------------------------------------------------------------------------


@program(np.array([0.9, 0.6]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def normal_log_likelihood_in_location_and_log_scale(theta):
    mu, log_sigma = theta[0], theta[1]
    return -np.sum(scipy.stats.norm.logpdf(SAMPLES, loc=mu, scale=np.exp(log_sigma)))


@program(np.array([1.1, 0.8, 4.0]), hessian=True, refuses=RULE_ON_TAPE)
def student_t_robust_regression_likelihood(theta):
    slope, scale, dof = theta[0], theta[1], theta[2]
    x = np.linspace(0.0, 1.0, SAMPLES.size)
    resid = SAMPLES - slope * x
    return -np.sum(scipy.stats.t.logpdf(resid, dof, scale=scale))


@program(np.array([2.0, 1.5]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def gamma_likelihood_with_shape_and_scale(theta):
    return -np.sum(scipy.stats.gamma.logpdf(SAMPLES, theta[0], scale=theta[1]))


@program(np.array([2.0, 3.0]), hessian=True, refuses=RULE_ON_TAPE)
def beta_likelihood_of_proportions(ab):
    props = np.array([0.12, 0.35, 0.41, 0.27, 0.58, 0.2])
    return -np.sum(scipy.stats.beta.logpdf(props, ab[0], ab[1]))


@program(np.array([0.3, -0.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def poisson_regression_log_likelihood_by_logpmf(w):
    x = np.linspace(-1.0, 1.0, COUNTS.size)
    rate = np.exp(w[0] + w[1] * x + 1.0)
    return -np.sum(scipy.stats.poisson.logpmf(COUNTS, rate))


@program(np.array([0.35, 0.6]), hessian=True, refuses=RULE_ON_TAPE)
def binomial_mass_and_tail_in_the_success_probability(p):
    k = np.array([2, 5, 7])
    n = 10
    logpmf = scipy.stats.binom.logpmf(k[:, None], n, p[None, :])
    tail = scipy.stats.binom.sf(4, n, p)
    return np.sum(logpmf) + np.sum(np.log(tail))


@program(np.array([0.2, -0.4, 1.1]), hessian=True, nested=True, rtol=1e-5, refuses=RULE_ON_TAPE)
def frozen_normal_cdf_and_quantile(x):
    dist = scipy.stats.norm(loc=0.3, scale=1.4)
    probs = dist.cdf(x)
    return np.sum(dist.logpdf(x)) + np.sum(dist.ppf(0.5 * probs + 0.25) ** 2) + np.sum(dist.logsf(x))


@program(np.array([1.4, 0.5]), hessian=True, refuses=RULE_ON_TAPE)
def frozen_gamma_built_from_parameters(theta):
    dist = scipy.stats.gamma(theta[0], scale=theta[1])
    # (the gamma cdf has no closed-form derivative in its shape: the tail is of a fixed shape, the scale fitted)
    tail = scipy.stats.gamma(2.0, scale=theta[1])
    return -np.sum(dist.logpdf(SAMPLES)) + np.sum(tail.cdf(np.array([0.5, 1.0, 2.0])))


@program(np.array([0.2, -0.3]), np.array([1.2, 0.4]), hessian=True, refuses=RULE_ON_TAPE)
def multivariate_normal_log_likelihood_in_mean_and_cholesky(mean, chol_diag):
    data = np.array([[0.1, -0.2], [0.5, 0.3], [-0.4, -0.6], [0.8, 0.1]])
    L = np.diag(chol_diag) + np.array([[0.0, 0.0], [0.3, 0.0]])
    return -np.sum(scipy.stats.multivariate_normal.logpdf(data, mean=mean, cov=L @ L.T))


@program(np.array([0.5, 1.1]), hessian=True, refuses={"tape": SCIPY_WRAPPER})
def frozen_multivariate_normal_density(mean):
    dist = scipy.stats.multivariate_normal(mean=mean, cov=np.array([[1.0, 0.3], [0.3, 0.8]]))
    data = np.array([[0.1, 0.4], [1.2, 0.9], [0.6, 1.5]])
    return np.sum(dist.logpdf(data)) + np.sum(dist.pdf(data))


@program(np.array([0.7, 1.3, 0.4, 2.2]), hessian=True, refuses=RULE_ON_TAPE)
def shannon_entropy_by_scipy_stats_entropy(w):
    p = w / np.sum(w)
    return scipy.stats.entropy(p) + scipy.stats.entropy(p, np.full(4, 0.25))


@program(SAMPLES, hessian=True, refuses=RULE_ON_TAPE)
def standardized_scores_by_zscore(x):
    z = scipy.stats.zscore(x, ddof=1)
    return np.sum(z**3) + np.sum(np.tanh(z) * x)


@program(np.array([0.3, 1.4, 0.8]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def mixture_of_distributions_in_a_loop(params):
    comps = [scipy.stats.norm, scipy.stats.logistic, scipy.stats.laplace]
    log_lik = []
    for k, dist in enumerate(comps):
        log_lik.append(dist.logpdf(SAMPLES, loc=params[k], scale=1.0 + 0.2 * k))
    return -np.sum(scipy.special.logsumexp(np.stack(log_lik), axis=0, b=np.full((3, 1), 1.0 / 3.0)))


# ----- scipy.optimize inside losses ----------------------------------------------------------------


@program(np.array([0.8, -0.3]), hessian=True, nested=True, refuses=SOLVER)
def bilevel_ridge_by_minimize_newton_cg(x):
    def inner(z, a):
        return np.sum((z - a) ** 2) + 0.3 * np.sum(z**2) + 0.05 * np.sum(z**4)

    def inner_gradient(z, a):
        return 2.0 * (z - a) + 0.6 * z + 0.2 * z**3

    def inner_hessian(z, a):
        return np.diag(2.6 + 0.6 * z**2)

    res = scipy.optimize.minimize(
        inner,
        np.zeros(2),
        args=(x,),
        jac=inner_gradient,
        hess=inner_hessian,
        method="Newton-CG",
        options={"xtol": 1e-14},
    )
    return np.sum(res.x**2) + res.x @ x


@program(np.array([1.5, 0.4]), hessian=True, nested=True, refuses=SOLVER)
def kepler_anomaly_by_root_scalar(orbit):
    mean_anomaly, ecc = orbit[0], orbit[1]

    def kepler(E):
        return E - ecc * np.sin(E) - mean_anomaly

    E = scipy.optimize.root_scalar(kepler, bracket=[0.0, np.pi], method="brentq", xtol=1e-14).root
    return np.cos(E) + E**2


@program(np.array([0.3, 0.9]), hessian=True, refuses=SOLVER)
def market_clearing_price_by_brentq(elasticities):
    def excess_demand(p):
        return np.sum(p ** (-elasticities)) - 2.0 * p

    price = scipy.optimize.brentq(excess_demand, 0.1, 10.0, xtol=1e-14)
    return price**2 + np.log(price)


@program(np.array([1.2, 0.5]), hessian=True, nested=True, refuses=SOLVER)
def chemical_equilibrium_by_fsolve(k):
    def balance(c):
        return np.array([c[0] * c[1] - k[0] * (1.0 - c[0]), c[1] - k[1] * (1.0 - c[0]) - 0.2 * c[1] ** 2])

    c = scipy.optimize.fsolve(balance, np.array([0.5, 0.5]), xtol=1e-13)
    return np.sum(c**2) + c[0] * k[1]


@program(np.array([2.0, 0.7]), hessian=True, refuses=SOLVER)
def exponential_decay_fit_by_levenberg_marquardt_least_squares(truth):
    t = np.linspace(0.0, 3.0, 8)
    data = truth[0] * np.exp(-truth[1] * t) + 0.05 * np.sin(5.0 * t)

    def residuals(p):
        return p[0] * np.exp(-p[1] * t) - data

    def jacobian(p):
        return np.stack([np.exp(-p[1] * t), -p[0] * t * np.exp(-p[1] * t)], axis=1)

    # (Levenberg-Marquardt with the exact Jacobian reaches the minimum to rounding: the differences checking the
    # derivative see the solution move, not the solver's tolerance)
    fit = scipy.optimize.least_squares(
        residuals, np.array([1.0, 1.0]), jac=jacobian, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15
    )
    return np.sum(fit.x**2) + fit.x[0] * fit.x[1]


@program(np.array([1.1, 1.333, 1.661, 1.978, 2.478, 2.961]), refuses=SOLVER, rtol=1e-5)
def growth_curve_fit_by_curve_fit(y):
    t = np.linspace(0.0, 2.5, 6)

    def model(tt, a, r):
        return a * np.exp(r * tt)

    def model_jacobian(tt, a, r):
        return np.stack([np.exp(r * tt), a * tt * np.exp(r * tt)], axis=1)

    popt, _ = scipy.optimize.curve_fit(model, t, y, p0=np.array([1.0, 0.5]), jac=model_jacobian, xtol=1e-15, ftol=1e-15)
    return popt[0] + 3.0 * popt[1] ** 2


@dataclasses.dataclass
class Tariff:
    base: float
    slope: float


@program(np.array([0.6, 1.3]), hessian=True, nested=True, refuses=SOLVER)
def dataclass_of_prices_inside_an_optimal_quantity(w):
    tariff = Tariff(base=w[0], slope=w[1])

    def cost(q):
        return tariff.base * q + 0.5 * tariff.slope * q**2 - np.log(1.0 + q)

    def marginal_cost(q):
        return tariff.base + tariff.slope * q - 1.0 / (1.0 + q)

    # (the quantity minimizing the cost, by its first-order condition: a minimizer of values alone reaches it only
    # to the square root of the rounding error, which differences of the program could not check)
    q = scipy.optimize.root_scalar(marginal_cost, bracket=(0.0, 5.0), method="brentq", xtol=1e-15).root
    return q**2 + cost(q)


# ----- scipy.integrate -----------------------------------------------------------------------------


@program(np.array([0.7, 1.3]), hessian=True, nested=True, refuses=SOLVER)
def expected_utility_by_quad(theta):
    def integrand(x, a, b):
        return np.log1p(a * x) * np.exp(-b * x)

    value, _ = scipy.integrate.quad(integrand, 0.0, np.inf, args=(theta[0], theta[1]), epsabs=1e-13, epsrel=1e-13)
    return value


@program(np.array([1.2, 0.4]), refuses=SOLVER, rtol=1e-5)
def logistic_growth_by_solve_ivp(params):
    r, k = params[0], 1.0 + params[1]

    def rhs(t, y):
        return r * y * (1.0 - y / k)

    sol = scipy.integrate.solve_ivp(rhs, (0.0, 3.0), np.array([0.1]), t_eval=TIMES, rtol=1e-11, atol=1e-12)
    return np.sum((sol.y[0] - 0.5) ** 2)


@program(np.array([0.5, 1.2]), refuses=SOLVER, rtol=1e-5)
def damped_oscillator_by_odeint(params):
    damping, stiffness = params[0], params[1]

    def rhs(y, t):
        return np.array([y[1], -stiffness * y[0] - damping * y[1]])

    ys = scipy.integrate.odeint(rhs, np.array([1.0, 0.0]), TIMES, rtol=1e-11, atol=1e-12)
    return np.sum(ys[:, 0] ** 2) + ys[-1, 1]


@program(np.array([0.3, 1.1, 0.8, 1.6, 0.2, 0.9, 1.4, 0.7, 1.0]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def work_by_trapezoid_and_simpson(force):
    x = TIMES
    work_t = scipy.integrate.trapezoid(force**2, x)
    work_s = scipy.integrate.simpson(force * np.sin(x), x=x)
    return work_t * work_s + scipy.integrate.trapezoid(force, dx=0.25)


@program(np.array([0.3, 1.1, 0.8, 1.6, 0.2, 0.9, 1.4, 0.7, 1.0]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def cumulative_hazard_by_cumulative_trapezoid(hazard):
    H = scipy.integrate.cumulative_trapezoid(np.exp(hazard), TIMES, initial=0.0)
    survival = np.exp(-H)
    return -np.sum(np.log(survival[1:] + 1e-3)) + np.sum(hazard * survival)


@program(RNG.normal(size=(3, 9)), hessian=True, refuses=RULE_ON_TAPE)
def row_integrals_by_simpson_along_an_axis(f):
    totals = scipy.integrate.simpson(f**2, x=TIMES, axis=1)
    return np.sum(np.sqrt(totals + 1.0))


@program(np.array([0.9, 0.4]), hessian=True, nested=True, refuses=SOLVER)
def quad_in_a_loop_over_bins(theta):
    edges = np.array([0.0, 0.5, 1.2, 2.0])
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        mass = scipy.integrate.quad(lambda t: theta[0] * np.exp(-theta[1] * t * t), lo, hi, epsabs=1e-13)[0]
        total = total + np.log(mass)
    return total


# ----- scipy.interpolate ---------------------------------------------------------------------------


@program(np.array([0.0, 0.8, 0.9, 0.1, -0.7, -0.9]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def cubic_spline_curvature_penalty(y):
    x = np.linspace(0.0, 2.5, 6)
    s = scipy.interpolate.CubicSpline(x, y, bc_type="natural")
    t = np.linspace(0.0, 2.5, 11)
    curvature = s.derivative(2)(t)
    return scipy.integrate.trapezoid(curvature**2, t) + np.sum((s(t) - np.sin(t)) ** 2)


@program(np.array([0.1, 0.5, 0.7, 1.2, 1.1, 1.6, 2.0]), hessian=True, refuses=RULE_ON_TAPE)
def make_interp_spline_fit_and_slope(y):
    x = np.array([0.0, 0.3, 0.7, 1.2, 1.5, 2.1, 2.6])
    spl = scipy.interpolate.make_interp_spline(x, y, k=3)
    t = np.linspace(0.1, 2.5, 7)
    return np.sum((spl(t) - 0.8 * t) ** 2) + np.sum(spl(t, nu=1) ** 2)


@program(np.array([1.0, 1.4, 0.9, 0.3, 0.6]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def interp1d_lookup_table_loss(table):
    grid = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    f = scipy.interpolate.interp1d(grid, table, kind="linear")
    g = scipy.interpolate.interp1d(grid, table, kind="cubic")
    queries = np.array([0.3, 1.7, 2.2, 3.9])
    return np.sum(f(queries) ** 2) + np.sum(g(queries) * queries)


@program(np.array([0.2, 0.9, 1.0, 1.6, 2.5, 2.6]), hessian=True, refuses=RULE_ON_TAPE)
def monotone_pchip_profile_and_derivative(y):
    x = np.array([0.0, 0.5, 1.0, 1.8, 2.4, 3.0])
    p = scipy.interpolate.PchipInterpolator(x, y)
    t = np.linspace(0.1, 2.9, 8)
    return np.sum(p(t) ** 2) + np.sum(p.derivative()(t) * t)


@program(RNG.normal(size=(4, 3)), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def regular_grid_interpolation_of_a_field(values):
    xs = np.array([0.0, 0.5, 1.2, 2.0])
    ys = np.array([-1.0, 0.0, 1.0])
    interp = scipy.interpolate.RegularGridInterpolator((xs, ys), values)
    pts = np.array([[0.2, -0.5], [1.0, 0.3], [1.7, 0.9], [0.6, 0.0]])
    return np.sum(interp(pts) ** 2) + np.sum(values**2) * 0.01


@program(np.array([0.3, 0.5, 1.1, 0.8]), hessian=True, refuses=RULE_ON_TAPE)
def spline_query_points_differentiated(t):
    x = np.linspace(0.0, 2.0, 7)
    s = scipy.interpolate.CubicSpline(x, np.cos(2.0 * x))
    return np.sum(s(t) ** 2) + np.sum(s.derivative()(t))


# PPoly.integrate's derivative in a bound is the spline there
@program(1.3, hessian=True, refuses=RULE_ON_TAPE)
def spline_integral_up_to_a_differentiated_bound(b):
    x = np.linspace(0.0, 2.0, 7)
    s = scipy.interpolate.CubicSpline(x, np.sin(x))
    return s.integrate(0.0, b) + np.sin(b)


# interpn builds and calls a RegularGridInterpolator: its rule composes that one's
@program(RNG.normal(size=(3, 4)), hessian=True, refuses=RULE_ON_TAPE)
def gridded_lookup_by_interpn(values):
    grid = (np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 2.0, 3.0]))
    return np.sum(scipy.interpolate.interpn(grid, values, np.array([[0.2, 1.5], [0.8, 2.5]])) ** 2)


@program(np.array([0.2, 0.5, 0.4, 0.9, 0.7], dtype=np.float32), rtol=2e-3, refuses=RULE_ON_TAPE)
def float32_values_through_a_cubic_spline(y):
    x = np.linspace(0.0, 1.0, 5)
    s = scipy.interpolate.CubicSpline(x, y)
    return float(np.sum(s(np.array([0.1, 0.45, 0.8])) ** 2))


# ----- scipy.ndimage -------------------------------------------------------------------------------


@program(IMAGE, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def gaussian_denoising_energy(img):
    smooth = scipy.ndimage.gaussian_filter(img, sigma=1.0, mode="reflect")
    return np.sum((smooth - img) ** 2) + 0.1 * np.sum(smooth**4)


@program(IMAGE, hessian=True, refuses=RULE_ON_TAPE)
def local_contrast_by_uniform_filter(img):
    mean = scipy.ndimage.uniform_filter(img, size=3, mode="nearest")
    sq = scipy.ndimage.uniform_filter(img**2, size=3, mode="nearest")
    return np.sum(np.sqrt(sq - mean**2 + 0.1))


@program(IMAGE, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def correlate_and_convolve_with_boundary_modes(img):
    kernel = np.array([[0.0, 0.25, 0.0], [0.25, -1.0, 0.25], [0.0, 0.25, 0.0]])
    total = 0.0
    for mode in ("reflect", "constant", "wrap", "mirror"):
        a = scipy.ndimage.correlate(img, kernel, mode=mode)
        b = scipy.ndimage.convolve(img, kernel[::-1], mode=mode, cval=0.5)
        total = total + np.sum(a * b)
    return total


@program(IMAGE, hessian=True, refuses=RULE_ON_TAPE)
def edge_energy_by_sobel_and_laplace(img):
    gx = scipy.ndimage.sobel(img, axis=0)
    gy = scipy.ndimage.sobel(img, axis=1)
    return np.sum(np.sqrt(gx**2 + gy**2 + 0.01)) + 0.5 * np.sum(scipy.ndimage.laplace(img) ** 2)


@program(IMAGE.astype(np.float32), rtol=2e-3, refuses=RULE_ON_TAPE)
def float32_image_through_a_gaussian_filter(img):
    smooth = scipy.ndimage.gaussian_filter(img, sigma=0.8)
    assert smooth.dtype == np.float32
    return float(np.sum(smooth**2))


@program(np.array([0.2, 1.1, -0.4, 0.9, 1.3, 0.1, -0.7, 0.5]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def one_dimensional_filters_in_a_pipeline(x):
    smooth = scipy.ndimage.gaussian_filter1d(x, 1.2, mode="nearest")
    box = scipy.ndimage.uniform_filter1d(smooth, 3)
    diff = scipy.ndimage.correlate1d(box, np.array([-1.0, 0.0, 1.0]), mode="constant")
    return np.sum(diff**2) + np.sum(box * x)


# ----- scipy.signal --------------------------------------------------------------------------------


@program(
    np.array([0.5, 1.2, -0.3, 0.8, 1.5, -0.6, 0.2]),
    np.array([0.25, 0.5, 0.25]),
    hessian=True,
    nested=True,
    refuses=RULE_ON_TAPE,
)
def deconvolution_loss_by_signal_convolve(x, h):
    observed = np.array([0.2, 0.8, 0.6, 0.1, 0.9, 0.7, 0.1, -0.2, 0.05])
    return np.sum((scipy.signal.convolve(x, h, mode="full") - observed) ** 2)


@program(RNG.normal(size=(6, 6)), hessian=True, refuses=RULE_ON_TAPE)
def blur_by_fftconvolve_same(img):
    kernel = np.outer([0.25, 0.5, 0.25], [0.25, 0.5, 0.25])
    out = scipy.signal.fftconvolve(img, kernel, mode="same")
    return np.sum(out**2) + np.sum(out * img)


@program(np.array([0.4, -0.2, 0.9, 1.3, -0.5, 0.7]), hessian=True, refuses=RULE_ON_TAPE)
def matched_filter_by_signal_correlate(x):
    template = np.array([1.0, -0.5, 0.25])
    response = scipy.signal.correlate(x, template, mode="valid")
    return scipy.special.logsumexp(4.0 * response) / 4.0


@program(np.array([0.9, 0.3]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED})  # (np.array of a list of them)
def recursive_filter_by_lfilter(coef):
    u = np.array([1.0, 0.0, 0.0, 0.5, 0.2, 0.0])
    y = scipy.signal.lfilter(np.array([coef[0]]), np.array([1.0, -coef[1]]), u)
    return np.sum(y**2)


@program(
    np.array([0.4, 1.1, 0.8, 1.6, 1.2, 0.7, 0.9, 1.5, 1.3]),
    hessian=True,
    refuses=RULE_ON_TAPE,
)
def smoothing_by_savgol_filter(x):
    return np.sum(scipy.signal.savgol_filter(x, 5, 2) ** 2)


# ----- scipy.spatial.distance ----------------------------------------------------------------------


@program(POINTS, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def rbf_kernel_ridge_by_cdist(centers):
    X = np.array([[0.1, 0.2], [-0.5, 0.7], [1.1, -0.3], [0.4, 0.4]])
    y = np.array([0.3, -0.1, 0.8, 0.2])
    K = np.exp(-scipy.spatial.distance.cdist(X, centers, "sqeuclidean"))
    coef = np.linalg.solve(K.T @ K + 0.1 * np.eye(centers.shape[0]), K.T @ y)
    return np.sum((K @ coef - y) ** 2) + 0.1 * coef @ coef


@program(POINTS, hessian=True, refuses=RULE_ON_TAPE)
def stress_of_an_embedding_by_pdist(Y):
    target = np.array([1.0, 1.5, 0.8, 2.0, 1.2, 0.9, 1.7, 1.1, 1.4, 0.6])
    d = scipy.spatial.distance.pdist(Y)
    return np.sum((d - target) ** 2) / np.sum(target**2)


@program(POINTS, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def soft_neighbours_by_squareform(Y):
    D = scipy.spatial.distance.squareform(scipy.spatial.distance.pdist(Y, "sqeuclidean"))
    P = np.exp(-D) * (1.0 - np.eye(Y.shape[0]))
    P = P / np.sum(P, axis=1, keepdims=True)
    return -np.sum(np.log(np.diag(P @ P.T)))


@program(POINTS, hessian=True, refuses=RULE_ON_TAPE)
def manhattan_and_euclidean_pair_costs(Y):
    total = 0.0
    for i in range(Y.shape[0] - 1):
        total = total + scipy.spatial.distance.cityblock(Y[i], Y[i + 1]) ** 2
        total = total + scipy.spatial.distance.euclidean(Y[i], Y[-1])
    return total


# ----- scipy.linalg --------------------------------------------------------------------------------


@program(spd(4, 1), np.array([0.3, -0.8, 1.1, 0.2]), hessian=True, refuses=WRAPPER)
def gaussian_process_evidence_by_cho_factor(K, y):
    factor = scipy.linalg.cho_factor(K + 0.1 * np.eye(4), lower=True)
    alpha = scipy.linalg.cho_solve(factor, y)
    logdet = 2.0 * np.sum(np.log(np.diag(factor[0])))
    return 0.5 * y @ alpha + 0.5 * logdet


@program(np.array([[3.0, 0.5, 0.2], [0.4, 2.0, -0.3], [0.1, 0.6, 1.5]]), hessian=True, nested=True, refuses=WRAPPER)
def repeated_solves_by_lu_factor(A):
    lu, piv = scipy.linalg.lu_factor(A)
    x = np.array([1.0, 0.0, 0.0])
    for _ in range(3):
        x = scipy.linalg.lu_solve((lu, piv), x)
        x = x / np.linalg.norm(x)
    return x @ A @ x


@program(np.array([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0], [-0.3, 0.4, 1.2]]), hessian=True, refuses=WRAPPER)
def whitening_by_solve_triangular(L):
    data = np.array([[0.4, -0.1, 0.8], [1.0, 0.3, -0.5]])
    z = scipy.linalg.solve_triangular(L, data.T, lower=True)
    return 0.5 * np.sum(z**2) + np.sum(np.log(np.abs(np.diag(L))))


@program(np.array([[2.0, 0.3], [0.1, 1.5]]), np.array([1.0, -0.5]), hessian=True, refuses=WRAPPER)
def general_solve_with_assume_a(A, b):
    S = A @ A.T + np.eye(2)
    x = scipy.linalg.solve(S, b, assume_a="pos")
    y = scipy.linalg.solve(A, b)
    return x @ b + np.sum(y**2)


@program(np.array([-0.5, 0.2, -1.0, 0.1]), hessian=True, nested=True, refuses=WRAPPER)
def markov_transition_probabilities_by_expm(rates):
    Q = np.array([[-1.0, 1.0], [1.0, -1.0]]) * rates[:2, None] ** 2
    P = scipy.linalg.expm(0.7 * Q)
    return np.sum(np.log(P[[0, 1, 1], [0, 0, 1]])) + rates[2] * rates[3]


@program(spd(3, 7), hessian=True, refuses=WRAPPER)
def log_euclidean_and_root_of_spd_matrix(S):
    L = scipy.linalg.logm(S)
    R = scipy.linalg.sqrtm(S)
    return np.sum(L**2) + np.trace(R) + np.sum(np.real(L * R))


@program(spd(3, 3), hessian=True, refuses=WRAPPER)
def spectral_shaping_by_eigh(S):
    w, V = scipy.linalg.eigh(S)
    shaped = V @ np.diag(np.log(w)) @ V.T
    return np.sum(shaped * S) + w[0] * w[-1]


@program(RNG.normal(size=(4, 3)), hessian=True, refuses=WRAPPER)
def low_rank_approximation_by_svd_and_qr(M):
    U, s, Vt = scipy.linalg.svd(M, full_matrices=False)
    approx = (U[:, :2] * s[:2]) @ Vt[:2]
    Q, R = scipy.linalg.qr(M, mode="economic")
    return np.sum((approx - M) ** 2) + np.sum(np.abs(np.diag(R)) ** 1.5) + np.sum(Q[:, 0] ** 4)


@program(
    np.array([[1.0, 0.3], [-0.2, 0.8]]),
    refuses=no_rule("scipy.linalg._decomp_schur.schur"),
)
def schur_form_without_a_rule(A):
    T, Z = scipy.linalg.schur(A)
    return np.sum(T**2)


@program(np.array([[3.0, 0.5], [0.2, 2.0]]), np.array([[1.0, 0.3, 0.0], [0.2, 0.5, 0.1]]), refuses=WRAPPER)
def sylvester_equation_for_a_coupling(A, C):
    B = np.array([[1.0, 0.2, 0.0], [0.0, 1.5, 0.3], [0.1, 0.0, 2.0]])
    X = scipy.linalg.solve_sylvester(A, B, C)
    return np.sum(X**2) + np.trace(A @ X @ B[:, :2])


@program(np.array([0.4, -0.3, 0.9, 0.2]), hessian=True, nested=True, refuses=WRAPPER)
def autoregressive_covariance_by_toeplitz_and_circulant(acf):
    T = scipy.linalg.toeplitz(np.concatenate([[1.0], 0.5 * np.tanh(acf[:2])]))
    C = scipy.linalg.circulant(acf[1:])
    B = scipy.linalg.block_diag(T, np.eye(1) * (1.0 + acf[3] ** 2))
    return np.linalg.slogdet(T)[1] + np.sum(C**2) + np.trace(B @ B)


# ----- scipy.sparse --------------------------------------------------------------------------------


@program(np.array([1.0, 1.3, 0.8, 1.1, 0.9]), refuses=SPARSE_FROM_VALUES)
def diffusion_stiffness_by_sparse_diags_and_spsolve(conductance):
    n = conductance.size - 1
    main = conductance[:-1] + conductance[1:]
    off = -conductance[1:-1]
    A = scipy.sparse.diags([off, main, off], [-1, 0, 1], format="csc")
    u = scipy.sparse.linalg.spsolve(A, np.ones(n))
    return u @ np.ones(n) + np.sum(u**2)


@program(np.array([0.5, -0.2, 0.8, 0.1]), hessian=True, refuses=WRAPPER)
def graph_laplacian_quadratic_form_by_csr(x):
    rows = np.array([0, 1, 1, 2, 2, 3])
    cols = np.array([1, 0, 2, 1, 3, 2])
    adj = scipy.sparse.csr_matrix((np.ones(6), (rows, cols)), shape=(4, 4))
    weighted = adj * 0.7
    return x @ (weighted @ x) + np.sum((adj.T @ x) ** 2)


@program(np.array([0.3, 1.2, 0.7, 0.5]), refuses=SPARSE_FROM_VALUES)
def sparse_matrix_scaled_by_a_parameter_vector(w):
    L = scipy.sparse.diags([np.full(3, -1.0), np.full(4, 2.0), np.full(3, -1.0)], [-1, 0, 1], format="csr")
    scaled = scipy.sparse.diags(w) @ L
    y = scaled @ np.array([1.0, 0.5, -0.3, 0.2])
    return np.sum(y**2) + np.sum(w * y)


# ----- statistics and numpy.polynomial -------------------------------------------------------------


@program(np.array([0.4, 1.3, 0.9, 2.1, 1.7]), hessian=True, refuses=RULE_ON_TAPE)
def coefficient_of_variation_by_statistics(x):
    values = list(x)
    return statistics.stdev(values) / statistics.mean(values) + statistics.fmean(values, weights=[1, 2, 3, 2, 1])


@program(0.7, 1.5, hessian=True, refuses=RULE_ON_TAPE)
def statistics_of_scalars_in_a_tuple(a, b):
    sample = (a, b, a * b, a + b, 1.0)
    return statistics.pvariance(sample) + statistics.median(sample) * statistics.fmean(sample)


@program(np.array([0.5, -1.2, 0.3, 2.0]), hessian=True, refuses=WRAPPER)
def least_squares_polynomial_class_evaluation(coef):
    p = Polynomial(coef)
    t = np.linspace(-1.0, 1.0, 7)
    return np.sum((p(t) - np.cos(t)) ** 2) + np.sum(p.deriv()(t) ** 2)


@program(np.array([0.4, -0.8, 0.5, 0.3]), hessian=True, refuses=WRAPPER)
def chebyshev_and_legendre_series_losses(coef):
    t = np.linspace(-1.0, 1.0, 9)
    c = Chebyshev(coef)
    leg = Legendre(coef[::-1])
    return np.sum(c(t) * leg(t)) + np.sum(c.integ()(t) ** 2)


@program(np.array([0.5, -1.2, 0.3]), hessian=True, refuses=no_rule("numpy.polynomial._polybase.ABCPolyBase.fit"))
def polynomial_fit_residual_by_polynomial_fit(y):
    t = np.array([0.0, 0.5, 1.0])
    p = Polynomial.fit(np.concatenate([t, t + 1.5]), np.concatenate([y, y**2]), 2)
    return np.sum(p(np.linspace(0.0, 2.5, 5)) ** 2)


# ----- programs mixing SciPy modules ---------------------------------------------------------------


@program(np.array([0.9, 0.3]), hessian=True, nested=True, refuses=WRAPPER)
def posterior_normalizer_by_quad_of_stats_densities(theta):
    def unnormalized(mu):
        return scipy.stats.norm.pdf(mu, loc=theta[0], scale=1.0) * scipy.stats.logistic.pdf(mu, scale=1.0 + theta[1])

    z = scipy.integrate.quad(unnormalized, -8.0, 8.0, epsabs=1e-13, epsrel=1e-12)[0]
    return np.log(z)


@program(np.array([0.6, 1.1, 0.4, 0.9, 1.3, 0.8, 0.5]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def smoothed_spectrum_entropy(x):
    smooth = scipy.ndimage.gaussian_filter1d(x, 1.0)
    power = np.abs(np.fft.rfft(smooth)) ** 2
    p = scipy.special.softmax(np.log(power + 1e-3))
    return -np.sum(scipy.special.xlogy(p, p)) + scipy.integrate.trapezoid(smooth**2)


@program(np.array([0.8, 1.4, 0.6]), hessian=True, refuses=WRAPPER)
def gp_marginal_likelihood_with_matern_kernel(hyper):
    lengthscale, variance, noise = hyper[0], hyper[1], hyper[2]
    X = np.array([[0.0], [0.4], [1.1], [1.7], [2.5]])
    y = np.array([0.2, 0.5, -0.1, -0.6, 0.3])
    r = scipy.spatial.distance.cdist(X, X) / lengthscale
    K = variance * (1.0 + np.sqrt(3.0) * r) * np.exp(-np.sqrt(3.0) * r) + noise**2 * np.eye(5)
    c = scipy.linalg.cho_factor(K)
    return 0.5 * y @ scipy.linalg.cho_solve(c, y) + np.sum(np.log(np.diag(c[0])))


@dataclasses.dataclass
class Kinetics:
    k_on: float
    k_off: float


@program(np.array([1.5, 0.6]), refuses=SOLVER, rtol=1e-5)
def binding_kinetics_dataclass_through_solve_ivp_and_interpolation(k):
    kin = Kinetics(k[0], k[1])

    def rhs(t, y):
        return np.array([-1.0, 1.0]) * (kin.k_on * y[0] - kin.k_off * y[1])

    sol = scipy.integrate.solve_ivp(rhs, (0.0, 2.0), np.array([1.0, 0.0]), t_eval=TIMES, rtol=1e-11, atol=1e-12)
    bound = scipy.interpolate.CubicSpline(TIMES, sol.y[1])
    return np.sum(bound(np.array([0.3, 1.1, 1.9])) ** 2) + np.sum(bound.derivative()(TIMES) ** 2)


@program(np.array([0.2, 0.7, 1.1, 0.4]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def hierarchical_prior_with_special_and_stats(z):
    tau = np.exp(z[0])
    effects = z[1:]
    log_prior = np.sum(scipy.stats.norm.logpdf(effects, scale=tau)) + scipy.stats.halfnorm.logpdf(tau) + z[0]
    log_lik = np.sum(scipy.stats.poisson.logpmf(COUNTS[:3], np.exp(effects)))
    return -(log_prior + log_lik) + scipy.special.gammaln(1.0 + tau)


@program(np.array([0.5, 0.8, 1.2, 0.9]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def closure_over_a_fitted_spline_in_a_loop(y):
    x = np.array([0.0, 1.0, 2.0, 3.0])
    spline = scipy.interpolate.CubicSpline(x, y, bc_type="clamped")

    def energy(t):
        return spline(t) ** 2 + spline.derivative()(t) ** 2

    total = 0.0
    for t in (0.25, 1.5, 2.75):
        total = total + energy(t)
    return total


# ----- SciPy's objects and calls in the language's structures --------------------------------------


@dataclasses.dataclass
class Prior:
    dist: object
    weight: float


@program(np.array([0.3, 1.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def frozen_distribution_held_by_a_dataclass(theta):
    prior = Prior(scipy.stats.norm(loc=theta[0], scale=theta[1]), 0.5)
    return -np.sum(prior.dist.logpdf(SAMPLES)) * prior.weight


@program(np.array([0.3, 1.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def closure_over_a_frozen_distribution(theta):
    dist = scipy.stats.logistic(loc=theta[0], scale=theta[1])

    def score(x):
        return dist.logpdf(x)

    return -sum(score(x) for x in SAMPLES[:3]) + np.sum(dist.cdf(SAMPLES))


@program(np.array([0.5, 1.3, 0.7]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def spline_built_in_a_loop_of_windows(y):
    total = 0.0
    for k in range(2):
        s = scipy.interpolate.CubicSpline(np.array([0.0, 1.0, 2.0]), y * (k + 1.0))
        total = total + s(0.5 + k) ** 2 + s.derivative()(1.5)
    return total


@program(np.array([0.5, 1.3, 0.7, 0.2]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def filters_on_a_list_of_channels(x):
    channels = [x, x**2, np.sin(x)]
    out = [scipy.ndimage.gaussian_filter1d(c, 1.0) for c in channels]
    return sum(np.sum(o * c) for o, c in zip(out, channels))


@program(np.array([0.5, 1.3]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def logpdf_with_broadcast_parameters(theta):
    mu = theta[:, None]
    return -np.sum(scipy.stats.norm.logpdf(SAMPLES[None, :], loc=mu, scale=1.5))


@program(np.array([[2.0, 0.3], [0.3, 1.0]]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def eigh_of_a_covariance_in_a_while_loop(S):
    A = S
    k = 0
    while k < 3:
        w, V = scipy.linalg.eigh(A)
        A = V @ np.diag(np.sqrt(w)) @ V.T + 0.1 * S
        k += 1
    return np.trace(A) + np.sum(A**2)


@program(np.array([0.8, 0.2, 0.5]), hessian=True, nested=True)
def scalar_loop_of_special_calls(x):
    total = 0.0
    for v in x:
        total = total + scipy.special.expit(v) * scipy.special.erf(v) + scipy.special.gammaln(v + 1.0)
    return total


@program(0.7, hessian=True, nested=True, refuses=RULE_ON_TAPE)
def scalar_argument_through_stats(mu):
    return -np.sum(scipy.stats.norm.logpdf(SAMPLES, mu, 1.0)) + scipy.stats.norm.cdf(mu)


@program(np.array([0.8, 0.2, 0.5], dtype=np.float32), hessian=True, rtol=2e-3, refuses=RULE_ON_TAPE)
def float32_stats_logpdf(x):
    out = scipy.stats.norm.logpdf(x, loc=np.float32(0.1), scale=np.float32(1.2))
    return np.sum(out**2)


@program(np.array([0.8, 0.2, 0.5, 0.4]), hessian=True, nested=True, refuses=RULE_ON_TAPE)
def savgol_like_smoother_by_convolve(x):
    k = np.array([-3.0, 12.0, 17.0, 12.0, -3.0]) / 35.0
    y = scipy.signal.convolve(np.concatenate([x[:1], x[:1], x, x[-1:], x[-1:]]), k, mode="valid")
    return np.sum(y**2)
