"""SciPy functions with rules, called inside a differentiated function by the forward engine or
the tape: refused with ``IgnoredRuleError`` naming the function, also where SciPy wraps the
function in a decorator that repackages its arguments (``_apply_over_batch``); given to the engine
itself, the rule is used. ``cr.jvp`` runs a refused function through the source engine's primal,
which calls the rule."""

import numpy as np
import pytest
import scipy.linalg as sl

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward
from chainrules.core.ruled_calls import IgnoredRuleError

RNG = np.random.default_rng(11)
M = RNG.standard_normal((3, 3))
A = M @ M.T + 3.0 * np.eye(3)  # symmetric positive definite: every function below applies
U = np.triu(A)
B = RNG.standard_normal(3)
LU_PIV = sl.lu_factor(A)
D = RNG.standard_normal((3, 3))
DA = D + D.T
DB = RNG.standard_normal(3)

# name -> (the function, its primal arguments, tangents for them)
CALLS = {
    "solve_triangular": (sl.solve_triangular, (U, B), (np.triu(DA), DB)),
    "cholesky": (sl.cholesky, (A,), (DA,)),
    "lu_solve": (sl.lu_solve, (LU_PIV, B), (cr.ZeroTangent(), DB)),
    "logm": (sl.logm, (A,), (DA,)),
    "eigh": (sl.eigh, (A,), (DA,)),
    "solve": (sl.solve, (A, B), (DA, DB)),
    "inv": (sl.inv, (A,), (DA,)),
    "expm": (sl.expm, (A,), (DA,)),
}
# the argument differentiated when the function is called inside another: the last array
INNER = {name: len(args) - 1 for name, (_, args, _) in CALLS.items()}


def _inside(name):
    fn, args, _ = CALLS[name]
    i = INNER[name]

    def user_function(x):
        out = fn(*args[:i], x, *args[i + 1 :])
        return np.sum(out[0] if isinstance(out, tuple) else out)

    return user_function, args[i], CALLS[name][2][i]


def _message(name):
    return rf"scipy\.linalg\.[\w.]*\b{name} has a rule that"


@pytest.mark.parametrize("name", list(CALLS))
def test_a_call_inside_the_function_is_refused_in_forward_mode_naming_it(name):
    f, x, dx = _inside(name)
    with pytest.raises(IgnoredRuleError, match=_message(name)) as info:
        forward.jvp(f, (x,), (dx,))
    assert info.value.callable is CALLS[name][0]
    assert info.value.location.startswith(__file__)
    # cr.jvp: through the source engine's primal, which calls the rule
    y, dy = cr.jvp(f, (x,), (dx,))
    assert y == pytest.approx(f(x), rel=1e-12)
    assert dy == pytest.approx(crt.fd_jvp(lambda xs: f(*xs), (x,), (dx,)), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", list(CALLS))
def test_a_call_inside_the_function_is_refused_by_the_tape_naming_it(name):
    f, x, _ = _inside(name)
    with pytest.raises(IgnoredRuleError, match=_message(name)) as info:
        cr.gradient(f, x, engine="tape")
    assert info.value.callable is CALLS[name][0]
    np.testing.assert_allclose(cr.gradient(f, x)[0], crt.fd_vjp(f, 1.0, x), rtol=1e-6, atol=1e-8)  # source: the rule


def test_a_wrapped_function_called_with_keywords_is_refused_naming_it():
    with pytest.raises(IgnoredRuleError, match=_message("cholesky")):
        forward.jvp(lambda a: sl.cholesky(a=a, lower=True), (A,), (DA,))
    with pytest.raises(IgnoredRuleError, match=_message("cholesky")):
        cr.gradient(lambda a: np.sum(sl.cholesky(a=a)), A, engine="tape")


def test_a_ruled_call_inside_a_library_function_without_a_rule_names_the_users_line():
    """SciPy's ``pchip_interpolate`` (no rule) builds a ``PchipInterpolator`` (a rule) and calls it: the
    refusal names SciPy's line of the call and the user's line that called into SciPy, which it had
    not named."""
    import scipy.interpolate as si

    def f(values):
        return np.sum(si.pchip_interpolate(np.array([0.0, 1.0, 2.0]), values, np.array([0.3, 1.2])) ** 2)

    line = f"{__file__}:{f.__code__.co_firstlineno + 1}"
    for run in (lambda v: cr.gradient(f, v, engine="tape"), lambda v: forward.jvp(f, (v,), (np.ones_like(v),))):
        with pytest.raises(IgnoredRuleError, match="PchipInterpolator") as info:
            run(np.array([0.0, 1.0, 3.0]))
        assert f"(in library code called at {line})" in str(info.value), str(info.value)
        assert info.value.location.startswith(si.__file__.rsplit("/", 1)[0])


def test_a_conversion_after_the_library_rebinds_its_parameters_names_the_rule():
    """scipy.stats' ``logpdf(x, *args, **kwds)`` rebinds ``args`` (``args, loc, scale =
    self._parse_args(*args, **kwds)``) before it converts a scalar location: the tape's refusal is
    still that it cannot use the method's rule (it had been the conversion's, advising to register
    a rule for a method that has one)."""
    import scipy.stats as st

    def f(mu):
        return np.sum(st.norm.logpdf(np.array([0.4, 1.3]), mu, 1.0))

    with pytest.raises(IgnoredRuleError, match="rv_continuous.logpdf has a rule that the tape engine cannot use"):
        cr.gradient(f, 0.7, engine="tape")
    assert cr.gradient(f, 0.7)[0] == pytest.approx(np.sum(np.array([0.4, 1.3]) - 0.7), rel=1e-12)


@pytest.mark.parametrize("name", list(CALLS))
def test_the_function_given_to_forward_mode_uses_its_rule(name):
    fn, args, tangents = CALLS[name]
    y, dy = cr.jvp(fn, args, tangents)
    expected = crt.fd_jvp(lambda xs: fn(*xs), args, tangents)
    if isinstance(y, tuple):
        for got, want in zip(dy.backing, expected.backing):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    else:
        np.testing.assert_allclose(dy, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["solve_triangular", "cholesky", "logm"])
def test_the_function_given_to_the_tape_uses_its_rule(name):
    fn, args, _ = CALLS[name]
    dy = RNG.standard_normal(np.shape(fn(*args)))
    y, back = cr.pullback(fn, *args, engine="tape")
    _, back_source = cr.pullback(fn, *args)
    for got, want in zip(back(dy), back_source(dy)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_library_function_without_a_rule_branches_on_the_engines_values():
    import colorsys

    def value(r):  # colorsys's Python compares its arguments: v = max(r, g, b), and `if minc == maxc`
        return colorsys.rgb_to_hsv(r, 0.2, 0.1)[2] + colorsys.rgb_to_hsv(r, 0.2, 0.1)[1]

    # s = (maxc - minc) / maxc = 1 - 0.1 / r for r the largest
    expected = 1.0 + 0.1 / 0.5**2
    assert cr.derivative(value, 0.5) == pytest.approx(expected, rel=1e-12)
    assert cr.gradient(value, 0.5, engine="tape")[0] == pytest.approx(expected, rel=1e-12)
    assert cr.gradient(value, 0.5)[0] == pytest.approx(expected, rel=1e-12)
