"""Rules for ``scipy.stats`` distributions: every method of every distribution with a rule,
checked with ``test_rrule``/``test_frule`` against finite differences in the argument, the
shapes, loc and scale; parameters given by keyword differentiated in the engines; shapes whose
distribution function has no closed-form derivative refused only when differentiated; values
outside the support; Hessians; the rules loaded only once ``scipy.stats`` is imported."""

import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats as st
from scipy.stats._distn_infrastructure import (
    rv_continuous,
    rv_continuous_frozen,
    rv_discrete,
    rv_discrete_frozen,
    rv_generic,
)

import chainrules as cr
from chainrules.core import ActiveValue
from chainrules.core.ruled_calls import IgnoredRuleError
from chainrules.testing import fd_jacobian, nondiff, test_frule, test_rrule

# (distribution, shapes, points inside the support of the standard form, whether F has shape partials)
CONTINUOUS = [
    (st.norm, (), np.array([-1.3, 0.2, 1.7]), True),
    (st.halfnorm, (), np.array([0.2, 0.9, 2.1]), True),
    (st.cauchy, (), np.array([-2.0, 0.3, 1.1]), True),
    (st.laplace, (), np.array([-1.2, 0.4, 2.2]), True),
    (st.logistic, (), np.array([-1.5, 0.1, 2.4]), True),
    (st.gumbel_r, (), np.array([-0.8, 0.5, 1.9]), True),
    (st.expon, (), np.array([0.3, 1.0, 2.5]), True),
    (st.uniform, (), np.array([0.15, 0.5, 0.8]), True),
    (st.t, (3.5,), np.array([-1.1, 0.4, 2.6]), False),  # (shapes without F's partials: held as integers below)
    (st.gamma, (2.3,), np.array([0.4, 1.3, 3.1]), False),
    (st.chi2, (3.4,), np.array([0.6, 2.0, 4.2]), False),
    (st.invgamma, (2.6,), np.array([0.3, 0.8, 1.9]), False),
    (st.beta, (2.2, 3.1), np.array([0.15, 0.4, 0.75]), False),
    (st.lognorm, (0.7,), np.array([0.4, 1.1, 2.3]), True),
    (st.weibull_min, (1.8,), np.array([0.3, 0.9, 1.7]), True),
    (st.pareto, (2.7,), np.array([1.2, 1.9, 3.5]), True),
]
LOC, SCALE = 0.3, 1.4


def _ids(case):
    return case[0].name


@pytest.mark.parametrize("case", CONTINUOUS, ids=_ids)
@pytest.mark.parametrize("method", ["logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"])
def test_continuous_in_every_argument(case, method):
    dist, shapes, z, shape_partials = case
    x = LOC + SCALE * z
    f = getattr(rv_continuous, method)
    differentiated = shape_partials or method in ("logpdf", "pdf")
    shape_args = shapes if differentiated else tuple(round(s) for s in shapes)  # integer-typed: NoTangent
    test_rrule(f, nondiff(dist), x, *shape_args, LOC, SCALE)
    test_frule(f, nondiff(dist), x, *shape_args, LOC, SCALE)
    test_rrule(f, nondiff(dist), float(x[1]), *shape_args, LOC, SCALE)  # a Python float


@pytest.mark.parametrize("case", CONTINUOUS, ids=_ids)
@pytest.mark.parametrize("method", ["ppf", "isf"])
def test_quantiles_in_every_argument(case, method):
    dist, shapes, _, shape_partials = case
    q = np.array([0.15, 0.45, 0.8])  # (not 0.5: Laplace's quantile has a kink there)
    shape_args = shapes if shape_partials else tuple(round(s) for s in shapes)
    test_rrule(getattr(rv_continuous, method), nondiff(dist), q, *shape_args, LOC, SCALE)
    test_frule(getattr(rv_continuous, method), nondiff(dist), q, *shape_args, LOC, SCALE)


def test_broadcast_parameters_and_float32():
    x = np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    test_rrule(rv_continuous.logpdf, nondiff(st.t), x, np.array([2.5, 4.0, 7.0]), np.array([[0.1], [-0.2]]), 1.3)
    test_frule(rv_continuous.cdf, nondiff(st.norm), x, 0.2, np.array([0.8, 1.1, 1.6]))
    xf = x.astype(np.float32)
    y, back = cr.rrule(rv_continuous.logpdf, st.norm, xf)  # SciPy's value is float64; x's cotangent is x's dtype
    assert cr.unthunk(back(np.ones_like(y))[2]).dtype == np.float32


# (distribution, discrete arguments, real parameters, counts): the counts and n are NoTangent
DISCRETE = [
    (st.poisson, (), (2.3,), np.array([0, 1, 4])),
    (st.binom, (7,), (0.35,), np.array([0, 2, 7])),
    (st.bernoulli, (), (0.3,), np.array([0, 1, 1])),
    (st.geom, (), (0.4,), np.array([1, 2, 5])),
    (st.nbinom, (), (3.2, 0.45), np.array([0, 2, 6])),
]


@pytest.mark.parametrize("case", DISCRETE, ids=_ids)
@pytest.mark.parametrize("method", ["logpmf", "pmf", "cdf", "sf", "logcdf", "logsf"])
def test_discrete_in_real_parameters(case, method):
    dist, discrete, real, k = case
    if dist is st.nbinom and method not in ("logpmf", "pmf"):  # cdf in n: no closed form
        real = (3, *real[1:])
    if method in ("sf", "logsf"):  # below the top of the support, where log sf is finite
        k = np.minimum(k, k.max() - 1)
    f = getattr(rv_discrete, method)
    args = (nondiff(dist), nondiff(k), *(nondiff(v) for v in discrete), *real)
    test_rrule(f, *args)
    test_frule(f, *args)
    if method in ("cdf", "sf"):  # between the counts, the functions are steps
        test_rrule(f, nondiff(dist), nondiff(k + 0.5), *(nondiff(v) for v in discrete), *real)


@pytest.mark.parametrize("method", ["logpmf", "pmf", "cdf", "logsf"])
def test_discrete_shifted_by_loc(method):
    """The partials are taken at the count k - loc (they had been at k: wrong wherever loc != 0)."""
    f = getattr(rv_discrete, method)
    k = np.array([2, 4, 6])
    test_rrule(f, nondiff(st.poisson), nondiff(k), 2.3, nondiff(2))
    test_frule(f, nondiff(st.nbinom), nondiff(k), 3, 0.45, nondiff(-1))
    test_rrule(f, nondiff(st.binom), nondiff(k), nondiff(6), 0.35, nondiff(1))


def test_a_discrete_refusal_names_its_method():
    with pytest.raises(ValueError, match=r"scipy\.stats\.nbinom\.sf at .*: the derivative in n has no closed form"):
        cr.gradient(lambda n: st.nbinom.sf(2, n, 0.4), 3.2)


def test_python_numbers_at_the_edges_of_the_support_and_parameters():
    """Python numbers divide as NumPy's do there (to an inf the partials mask or never reach); a
    ZeroDivisionError had been raised."""
    assert cr.gradient(lambda x: st.gamma.logpdf(x, 2.0), 0.0)[0] == 0.0  # -inf at the edge of the support
    assert cr.gradient(lambda x: st.lognorm.logpdf(x, 0.5, scale=2.0), 0.0)[0] == 0.0
    assert cr.gradient(lambda mu: st.poisson.logpmf(0, mu), 0.0)[0] == -1.0  # -mu
    assert cr.gradient(lambda p: st.binom.logpmf(0, 3, p), 0.0)[0] == -3.0  # 3 ln(1 - p)
    assert cr.gradient(lambda p: st.geom.logpmf(1, p), 1.0)[0] == 1.0  # ln p


def _fd_gradient(f, p, h=1e-6):
    g = np.zeros_like(p)
    for i in range(p.size):
        e = np.zeros_like(p)
        e[i] = h
        g[i] = (f(p + e) - f(p - e)) / (2 * h)
    return g


def _fd_hessian(f, p, h=1e-4):
    return np.array([_fd_gradient(lambda q: _fd_gradient(f, q, h)[i], p, h) for i in range(p.size)])


X = np.array([0.3, 1.2, 2.0, 0.7])
# parameters given by keyword as users write them: the engines pass them to the rules by position
KEYWORD_PROGRAMS = {
    "norm logpdf": lambda p: st.norm.logpdf(X, loc=p[0], scale=p[1]).sum(),
    "norm ppf": lambda p: st.norm.ppf(0.3, loc=p[0], scale=p[1]),
    "gamma shape by keyword": lambda p: st.gamma.logpdf(X, a=p[0] + 1, scale=p[1]).sum(),
    "t loc": lambda p: st.t.logpdf(X, p[0] + 3, loc=p[1]).sum(),
    "lognorm cdf": lambda p: st.lognorm.cdf(X, p[0], scale=p[1]).sum(),
    "weibull logsf": lambda p: st.weibull_min.logsf(X, p[0] + 1, scale=p[1]).sum(),
    "poisson likelihood": lambda p: st.poisson.logpmf([0, 1, 3], p[0] + 1).sum() * p[1],
    "binom sf": lambda p: st.binom.sf([0, 1, 3], 5, p[0] / 2).sum() * p[1],
    "nbinom logpmf": lambda p: st.nbinom.logpmf([0, 1, 4], p[1] + 1, p[0] / 2).sum(),
}


def test_outside_the_support_the_gradient_is_zero():
    g = cr.gradient(lambda x: st.gamma.logpdf(x, 2.0).sum() + st.expon.pdf(x).sum(), np.array([-1.0, 0.5, 1.0]))[0]
    assert g[0] == 0.0 and np.all(np.isfinite(g))
    np.testing.assert_allclose(g[1:], 1 / np.array([0.5, 1.0]) - 1 - np.exp(-np.array([0.5, 1.0])))


def test_a_shape_without_closed_form_is_refused_only_when_differentiated():
    with pytest.raises(ValueError, match=r"scipy\.stats\.gamma\.cdf at .*: the derivative in a has no closed form"):
        cr.gradient(lambda a: st.gamma.cdf(1.0, a), 1.3)
    a = 1.3  # a constant: the rule differentiates in x
    np.testing.assert_allclose(cr.gradient(lambda x: st.gamma.cdf(x, a), 1.1)[0], st.gamma.pdf(1.1, a))
    with pytest.raises(ValueError, match=r"derivative in a has no closed form"):
        cr.jacobian(lambda a: st.gamma.cdf(1.0, a), np.array([1.3]), mode="forward")


def test_distributions_without_rules_and_the_tape_are_refused_clearly():
    with pytest.raises(cr.NoRuleError, match=r"rv_continuous\.logpdf\(.*gompertz_gen"):
        cr.gradient(lambda a: st.gompertz.logpdf(1.0, a), 1.3)
    with pytest.raises(IgnoredRuleError, match="engine='source'"):
        cr.gradient(lambda mu: st.norm.logpdf(1.0, loc=mu), 0.3, engine="tape")


def test_rules_wait_for_scipy_stats_to_be_imported(tmp_path):
    script = tmp_path / "late_import.py"
    script.write_text(
        "import sys, chainrules as cr\n"
        "assert 'scipy.stats' not in sys.modules\n"
        "import scipy.stats as st\n"
        "print(cr.gradient(lambda m: st.norm.logpdf(1.5, loc=m), 0.5)[0])\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    assert float(out) == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["logpdf", "cdf", "logsf", "ppf"])
def test_frozen_continuous_methods(method):
    frozen = st.lognorm(0.7, 0.2, 1.5)  # its parameters get a Tangent[rv_continuous_frozen](args=...)
    point = np.array([0.3, 0.6]) if method == "ppf" else np.array([0.5, 1.4])
    test_rrule(getattr(rv_continuous_frozen, method), frozen, point)
    test_frule(getattr(rv_continuous_frozen, method), frozen, point)


def test_frozen_discrete_method():
    test_rrule(rv_discrete_frozen.logpmf, st.binom(6, 0.3), nondiff(np.array([0, 2, 5])))
    test_frule(rv_discrete_frozen.cdf, st.poisson(1.7), nondiff(np.array([0, 2, 5])))


FROZEN_PROGRAMS = {
    "norm by position": lambda p: st.norm(p[0], p[1]).logpdf(X).sum(),
    "norm by keyword": lambda p: st.norm(loc=p[0], scale=p[1]).cdf(X).sum(),
    "one frozen, two methods": lambda p: (lambda d: d.logpdf(X).sum() + d.ppf(0.3))(st.lognorm(p[0] + 0.2, scale=p[1])),
    "poisson": lambda p: st.poisson(p[0] + 1).logpmf([0, 2, 3]).sum() * p[1],
}


# The point and the frozen parameters both depend on the input: in forward mode SciPy freezes the
# dual numbers themselves, which the frozen method's rule then hands to the distribution's with
# the point's (they had been taken for constants: a wrong derivative, a leaked dual number).
FROZEN_WITH_THE_POINT = {
    "norm logpdf by position": (lambda x: st.norm(x, 2.0).logpdf(0.5 * x), -0.3 / 16),
    "gamma cdf, scale by keyword": (lambda x: st.gamma(2.0, scale=x).cdf(1.5 * x), 0.0),  # constant in x
    "norm logpdf by keyword": (lambda x: st.norm(loc=x, scale=2.0).logpdf(0.5 * x), -0.3 / 16),
    "norm ppf": (lambda x: st.norm(x, 2.0).ppf(0.25 + 0.1 * x), None),
    "t logpdf": (lambda x: st.t(3.0 + x, loc=x).logpdf(2 * x), None),
    "beta cdf, loc and scale by keyword": (lambda x: st.beta(2.0, 3.0, loc=x - 1, scale=1 + x).cdf(x * x), None),
    "poisson logpmf, loc": (lambda x: st.poisson(1.5 + x, loc=0).logpmf(2.0 + 0 * x), None),
}


@pytest.mark.parametrize("name", list(FROZEN_WITH_THE_POINT))
def test_frozen_parameters_and_point_from_one_input(name):
    f, exact = FROZEN_WITH_THE_POINT[name]
    x = 0.3
    expected = fd_jacobian(f, x)
    if exact is not None:
        np.testing.assert_allclose(expected, exact, atol=1e-8)
    for d in (cr.derivative(f, x), cr.jvp(f, (x,), (1.0,))[1], cr.gradient(f, x)[0]):
        assert not isinstance(d, ActiveValue)  # a plain number, never a dual number
        np.testing.assert_allclose(d, expected, rtol=1e-6, atol=1e-8)
    assert not isinstance(cr.jvp(f, (x,), (1.0,))[0], ActiveValue)
    np.testing.assert_allclose(cr.hessian(f, x), fd_jacobian(lambda z: cr.gradient(f, z)[0], x), rtol=1e-5, atol=1e-7)


def test_frozen_parameters_and_points_from_one_array_in_every_mode():
    def f(p):
        return st.norm(p[2:], 2.0).logpdf(p[:2]) + st.gamma(2.5, scale=p[3] + 1).cdf(p[1:3] + 1)

    p = np.array([0.1, 0.4, -0.3, 0.2])
    expected = fd_jacobian(f, p)
    for J in (
        cr.jacobian(f, p, mode="forward"),
        cr.jacobian(f, p, mode="forward", chunk_size=1),
        cr.jacobian(f, p, mode="forward", chunk_size=3),
        cr.jacobian(f, p),
        cr.jacobian(f, p, mode="reverse"),
    ):
        assert type(J) is np.ndarray
        np.testing.assert_allclose(J, expected, rtol=1e-6, atol=1e-8)
    jvp = cr.jvp(f, (p,), (np.array([1.0, -1.0, 0.5, 2.0]),))
    assert all(type(v) is np.ndarray for v in jvp)
    np.testing.assert_allclose(jvp[1], expected @ np.array([1.0, -1.0, 0.5, 2.0]), rtol=1e-6)

    def g(p):
        return np.sum(f(p))

    np.testing.assert_allclose(cr.hessian(g, p), _fd_hessian(g, p), rtol=1e-4, atol=1e-5)


def test_a_frozen_shape_without_closed_form_is_refused():
    with pytest.raises(ValueError, match=r"scipy\.stats\.gamma\.ppf at .*: the derivative in a has no closed form"):
        cr.gradient(lambda a: st.gamma(a).ppf(0.3), 1.4)


# (summaries of a distribution: affine in loc and scale, their quantiles by the ppf's rule)
SUMMARY_CASES = [(st.norm, ()), (st.gamma, (2,)), (st.lognorm, (0.7,)), (st.t, (5,))]


@pytest.mark.parametrize("case", SUMMARY_CASES, ids=_ids)
@pytest.mark.parametrize("method", ["mean", "var", "std", "entropy", "median", "moment", "interval"])
def test_summaries_in_loc_scale_and_quantile_shapes(case, method):
    dist, shapes = case
    f = getattr(rv_generic, method)
    first = {"moment": (nondiff(3),), "interval": (0.8,)}.get(method, ())
    quantile = method in ("median", "interval")  # (lognorm's quantiles have a partial in its shape)
    shape_args = shapes if quantile else tuple(round(v) for v in shapes)  # integer-typed: NoTangent
    test_rrule(f, nondiff(dist), *first, *shape_args, LOC, SCALE)
    test_frule(f, nondiff(dist), *first, *shape_args, LOC, SCALE)


SUMMARY_PROGRAMS = {
    "mean by keyword": lambda p: st.norm.mean(loc=p[0], scale=p[1]) * p[1],
    "var and std": lambda p: st.gamma.var(2.5, loc=p[0], scale=p[1]) + st.t.std(4, p[0], p[1]),
    "entropy": lambda p: st.norm.entropy(scale=p[1]) * p[0],
    "median of lognorm in its shape": lambda p: st.lognorm.median(p[0], scale=p[1]),
    "moment": lambda p: st.logistic.moment(3, loc=p[0], scale=p[1]),
    "interval": lambda p: np.subtract(*st.norm.interval(p[0] / 2, loc=p[0], scale=p[1])),
    "frozen interval": lambda p: st.norm(p[0], p[1]).interval(0.9)[1] * st.norm(p[1], 2.0).mean(),
    "frozen median": lambda p: st.weibull_min(p[1] + 1, scale=p[0]).median(),
}


def test_a_summary_in_a_shape_without_closed_form_is_refused_in_every_engine():
    here = re.escape(__file__)
    with pytest.raises(ValueError, match=rf"scipy\.stats\.gamma\.mean at {here}:\d+: the derivative in a has no"):
        cr.gradient(lambda a: st.gamma.mean(a, scale=2.0), 1.3)
    with pytest.raises(ValueError, match=rf"scipy\.stats\.t\.var at {here}:\d+: the derivative in df has no"):
        cr.jacobian(lambda p: st.t.var(p[0], loc=p[1]), np.array([4.5, 0.2]), mode="forward")
    with pytest.raises(ValueError, match=rf"scipy\.stats\.gamma\.median at {here}:\d+: the derivative in a has no"):
        cr.derivative(lambda a: st.gamma(a).median(), 1.3)
    with pytest.raises(IgnoredRuleError, match=rf"rv_generic\.mean has a rule .* called at {here}:\d+"):
        cr.gradient(lambda mu: st.norm.mean(loc=mu), 0.3, engine="tape")
    # a shape held constant: the rule differentiates in loc and scale
    assert cr.derivative(lambda s: st.gamma.mean(2.0, scale=s), 1.3) == pytest.approx(2.0)


@pytest.mark.parametrize("name", [*KEYWORD_PROGRAMS, *FROZEN_PROGRAMS, *SUMMARY_PROGRAMS])
def test_engines_against_finite_differences(name):
    f = {**KEYWORD_PROGRAMS, **FROZEN_PROGRAMS, **SUMMARY_PROGRAMS}[name]
    p = np.array([0.6, 1.3])
    expected = _fd_gradient(f, p)
    np.testing.assert_allclose(cr.gradient(f, p)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(f, p, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(f, p), _fd_hessian(f, p), rtol=1e-4, atol=1e-5)


def test_a_kernel_density_estimate_of_values_being_differentiated_is_refused_in_every_engine():
    """SciPy took a bandwidth that is a dual number or a tracked value for one that is not a number
    (its ValueError); the estimate's rule refuses a differentiated dataset, bandwidth or weights."""

    def f(x):
        return st.gaussian_kde(X, bw_method=x[0]).evaluate(0.3)[0]

    x = np.array([0.3, 1.2])
    here = re.escape(__file__)
    with pytest.raises(cr.NoDerivativeError, match=rf"scipy\.stats\.gaussian_kde at {here}:\d+: .* not differentiated"):
        cr.jacobian(f, x, mode="forward")
    with pytest.raises(cr.NoDerivativeError, match=r"scipy\.stats\.gaussian_kde at .* bandwidth"):
        cr.derivative(lambda s: st.gaussian_kde(X * s)(0.3)[0], 1.2)
    with pytest.raises(IgnoredRuleError, match=rf"gaussian_kde has a rule .* called at {here}:\d+"):
        cr.gradient(f, x, engine="tape")
    with pytest.raises(cr.NoRuleError, match=rf"gaussian_kde\.evaluate.* at {here}:\d+"):
        cr.gradient(f, x)
    # an estimate of constants (a global's: the tape takes arrays a closure holds for values being differentiated)
    assert cr.gradient(lambda s: s * st.gaussian_kde(X)(0.3)[0], 2.0)[0] == pytest.approx(st.gaussian_kde(X)(0.3)[0])


EDGES = [
    # (function of one parameter, the parameter at the edge of its range, the one-sided slope there)
    (lambda p: st.bernoulli.pmf(1, p), 0.0, 1.0),
    (lambda mu: st.poisson.pmf(1, mu), 0.0, 1.0),
    (lambda p: st.geom.pmf(2, p), 1.0, -1.0),
    (lambda p: st.binom.pmf(1, 3, p), 0.0, 3.0),
    (lambda p: st.binom.pmf(3, 3, p), 1.0, 3.0),
    (lambda p: st.nbinom.pmf(0, 1, p), 0.0, 1.0),
    (lambda p: st.bernoulli.logpmf(1, p), 0.0, np.inf),
    (lambda mu: st.poisson.pmf(-1, mu), 0.7, 0.0),  # outside the support: 0 for every mu
    (lambda mu: st.poisson.pmf(1.5, mu), 0.7, 0.0),
]


@pytest.mark.parametrize("f, at, slope", EDGES)
def test_mass_functions_at_the_edge_of_a_parameter(f, at, slope):
    """Where the mass is 0 at the edge of a parameter's range it still moves with the parameter:
    the slope had been set to 0 wherever the mass was 0 (outside the support only, now)."""
    with np.errstate(divide="ignore"):
        assert cr.gradient(f, at)[0] == slope
        assert cr.derivative(f, at) == slope


def test_samples_in_loc_and_scale():
    """``rvs`` is loc + scale z with the draw z held fixed (a seeded random state): the pathwise
    ("reparameterization") gradient, 1 in loc and z in scale. A shape changes the draw: refused."""
    from scipy.stats._distn_infrastructure import rv_generic

    seeded = {"size": 4, "random_state": 5}
    test_rrule(rv_generic.rvs, nondiff(st.norm), 0.3, 1.4, fkwargs=seeded)
    test_frule(rv_generic.rvs, nondiff(st.norm), 0.3, 1.4, fkwargs=seeded)
    test_rrule(rv_generic.rvs, nondiff(st.t), 4, np.array([0.1, 0.2, 0.3, 0.4]), 1.4, fkwargs=seeded)
    test_rrule(rv_continuous_frozen.rvs, st.norm(0.2, 1.3), fkwargs=seeded)

    def energy(p):  # keyword parameters, a frozen distribution and a shape held as an integer
        a = st.norm.rvs(loc=p[0], scale=p[1], size=5, random_state=3)
        b = st.norm(p[0], p[1]).rvs(size=4, random_state=7)
        c = st.gamma.rvs(2, loc=p[0], scale=p[1], size=6, random_state=1)
        return np.sum(a**2) + np.sum(np.sin(b)) + np.mean(c) * p[1]

    p = np.array([0.3, 1.4])
    expected = _fd_gradient(energy, p)
    np.testing.assert_allclose(cr.gradient(energy, p)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(energy, p, mode="forward"), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(energy, p), _fd_hessian(energy, p), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"scipy\.stats\.gamma\.rvs at .*: the derivative in a has no closed form"):
        cr.gradient(lambda q: np.mean(st.gamma.rvs(q[0] + 2, scale=q[1], size=6, random_state=1)), p)
