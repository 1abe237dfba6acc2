"""``np.apply_along_axis`` and ``np.vectorize`` objects: the user's callable is differentiated
once per slice or element (by its rule, else by the running reverse engine), the results laid out
as NumPy lays them out."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr
import chainrules.testing as crt

RNG = np.random.default_rng(5)
A = RNG.standard_normal((3, 4))
W = RNG.standard_normal(4)


def fd_gradient(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


SLICE_FUNCTIONS = {
    "number": lambda r: np.sum(np.sin(r) * r),
    "vector": lambda r: np.cumsum(r**2)[::-1],
    "matrix": lambda r: np.outer(r, r[:2]),
    "math": lambda r: math.exp(r[0]) * r[-1],
}


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", list(SLICE_FUNCTIONS))
@pytest.mark.parametrize("engine", ["source", "tape"])
def test_apply_along_axis_against_numpy_and_finite_differences(name, axis, engine):
    func1d = SLICE_FUNCTIONS[name]
    if name == "math" and engine == "tape":  # math.exp of a tracked number: the tape refuses it (docs/engines.md)
        with pytest.raises(cr.DroppedDerivativeError, match="test_higher_order.py"):
            cr.pullback(lambda a: np.apply_along_axis(func1d, axis, a), A, engine=engine)
        return
    weights = RNG.standard_normal(np.apply_along_axis(func1d, axis, A).shape)

    def f(a):
        return np.sum(weights * np.apply_along_axis(func1d, axis, a))

    y, back = cr.pullback(lambda a: np.apply_along_axis(func1d, axis, a), A, engine=engine)
    expected = np.apply_along_axis(func1d, axis, A)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    np.testing.assert_allclose(y, expected, rtol=1e-14)
    np.testing.assert_allclose(back(weights)[0], fd_gradient(f, A), rtol=1e-6, atol=1e-8)


def test_apply_along_axis_differentiates_the_extra_arguments_and_the_second_order():
    def f(a, w):
        return np.sum(np.apply_along_axis(lambda r, v: np.tanh(r @ v) * r[0], 1, a, w) ** 2)

    ga, gw = cr.gradient(f, A, W)
    np.testing.assert_allclose(ga, fd_gradient(lambda a: f(a, W), A), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, fd_gradient(lambda w: f(A, w), W), rtol=1e-6, atol=1e-8)
    h = 1e-5
    H = cr.hessian(lambda w: f(A, w), W)
    fd = np.array([(cr.gradient(f, A, W + h * e)[1] - cr.gradient(f, A, W - h * e)[1]) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6)


def test_apply_along_axis_rule_with_a_ruled_slice_function():
    # (np.cumsum has a rule: the rule runs without an engine, as test_rrule calls it)
    crt.test_rrule(np.apply_along_axis, crt.nondiff(np.cumsum), 0, A)
    crt.test_rrule(np.apply_along_axis, crt.nondiff(np.linalg.norm), 1, A)


def test_apply_along_axis_with_no_slices_raises_numpys_error():
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        cr.gradient(lambda a: np.sum(np.apply_along_axis(np.sum, 1, a)), np.zeros((0, 3)))


def smooth(t, s):
    return math.sin(t) * s + t * t


@pytest.mark.parametrize(
    "args",
    [(A[:, :1], W), (A, 0.5), (np.float64(0.3), W)],
    ids=["broadcast", "python-float", "numpy-scalar"],
)
def test_vectorize_against_numpy_and_finite_differences(args):
    vectorized = np.vectorize(smooth)
    weights = RNG.standard_normal(np.shape(vectorized(*args)))

    def f(*xs):
        return np.sum(weights * vectorized(*xs))

    y, back = cr.pullback(vectorized, *args)
    expected = vectorized(*args)
    assert np.shape(y) == expected.shape and y.dtype == expected.dtype
    np.testing.assert_allclose(y, expected, rtol=1e-14)
    grads = back(weights)
    for i, (a, g) in enumerate(zip(args, grads)):
        x = np.asarray(a, dtype=float)

        def fi(v, i=i):
            xs = list(args)
            xs[i] = v if np.ndim(a) else type(a)(v)
            return f(*xs)

        assert np.shape(g) == np.shape(a)
        expected = fd_gradient(fi, x) if np.ndim(a) else fd_gradient(lambda v, fi=fi: fi(v[()]), x)
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_vectorize_with_otypes_and_in_a_hessian():
    vectorized = np.vectorize(lambda t: t**3 + math.cos(t), otypes=[np.float64])
    x = W.copy()
    assert cr.gradient(lambda v: np.sum(vectorized(v)), x)[0] == pytest.approx(3 * x**2 - np.sin(x))
    np.testing.assert_allclose(cr.hessian(lambda v: np.sum(vectorized(v)), x), np.diag(6 * x - np.cos(x)), atol=1e-10)


def _fd_check(f, args, grads, rtol=1e-6):
    """Each gradient in ``grads`` against central differences of ``f`` in that argument."""
    for i, (a, g) in enumerate(zip(args, grads)):

        def fi(v, i=i):
            xs = list(args)
            xs[i] = v
            return f(*xs)

        assert np.shape(g) == np.shape(a)
        np.testing.assert_allclose(g, fd_gradient(fi, np.asarray(a, dtype=float)), rtol=rtol, atol=1e-8)


SIGNATURES = {
    "row-to-number": ("(n)->()", lambda r: np.sqrt(np.sum(r**2) + 0.5), (A,)),
    "row-and-matrix-to-row": ("(n),(n,m)->(m)", lambda r, w: np.tanh(r @ w), (A, RNG.standard_normal((4, 2)))),
    "broadcast-loops": ("(n),(n)->()", lambda r, v: np.sin(r) @ v, (A[None], RNG.standard_normal((2, 1, 4)))),
    "number-to-row": ("()->(k)", lambda t: np.stack([t, t * t, np.exp(t)]), (W,)),
}


@pytest.mark.parametrize("engine", ["source", "forward"])
@pytest.mark.parametrize("name", list(SIGNATURES))
def test_vectorize_with_a_signature_against_numpy_and_finite_differences(name, engine):
    signature, pyfunc, args = SIGNATURES[name]
    vectorized = np.vectorize(pyfunc, signature=signature)
    expected = vectorized(*args)
    weights = RNG.standard_normal(expected.shape)

    def f(*xs):
        return np.sum(weights * vectorized(*xs))

    if engine == "forward":  # (the source engine's primal on dual numbers, one argument at a time)
        for i in range(len(args)):
            J = cr.jacobian(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), args[i], mode="forward")
            _fd_check(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]), (args[i],), (J,))
        return
    y, back = cr.pullback(vectorized, *args)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    np.testing.assert_allclose(y, expected, rtol=1e-14)
    _fd_check(f, args, back(weights))


def test_vectorize_with_several_outputs_excluded_arguments_and_keyword_settings():
    def pyfunc(r, scale, kind="sin"):
        wave = np.sin(r * scale) if kind == "sin" else np.cos(r * scale)
        return wave * scale, np.sum(r) ** 2

    by_signature = np.vectorize(pyfunc, signature="(n)->(n),()", excluded={1, "kind"})
    elementwise = np.vectorize(lambda t, c: (t * c, np.cos(t)), excluded={1})
    c = np.array(0.7)

    def f(x, c):
        a, b = by_signature(x, c, kind="cos")
        p, q = elementwise(x, c)
        return np.sum(a**2) + np.sum(b * np.arange(3)) + np.sum(p * q)

    a, b = by_signature(A, c, kind="cos")
    assert a.shape == (3, 4) and b.shape == (3,)
    grads = cr.gradient(f, A, c, argnums=(0, 1))
    _fd_check(f, (A, c), grads)
    np.testing.assert_allclose(cr.jacobian(lambda x: f(x, c), A, mode="forward"), grads[0], rtol=1e-12)


def test_vectorize_with_a_signature_in_a_hessian():
    vectorized = np.vectorize(lambda r: np.log(np.sum(np.exp(r))), signature="(n)->()")

    def f(x):
        return np.sum(vectorized(x.reshape(2, 3)) ** 2)

    x = RNG.standard_normal(6)
    H = cr.hessian(f, x)
    expected = np.stack([fd_gradient(lambda v, i=i: cr.gradient(f, v)[0][i], x) for i in range(6)])
    np.testing.assert_allclose(H, expected, rtol=1e-5, atol=1e-7)


def test_vectorize_refuses_a_keyword_argument_carrying_numbers_naming_it():
    # (its rule passes keywords through as settings: one holding a value being differentiated
    # cannot be told from a constant, so the source engine refuses any that carries numbers)
    vectorized = np.vectorize(lambda t, scale=1.0: t * scale)
    with pytest.raises(cr.NoRuleError, match="'scale'") as info:
        cr.gradient(lambda v: np.sum(vectorized(v, scale=v[0])), W, engine="source")
    assert "test_higher_order.py" in str(info.value)


def test_forward_mode_runs_them_through_the_source_engines_primal():
    # (no forward rules: the entry points run f as the source engine's primal, whose reverse rules
    # take the dual numbers)
    vectorized = np.vectorize(smooth)

    def f(x):
        return np.apply_along_axis(lambda r: np.sin(r) * r[0], 1, np.outer(x, x)).ravel() + vectorized(x[0], x).sum()

    x = W[:3]
    J = cr.jacobian(f, x, mode="forward")
    np.testing.assert_allclose(J, cr.jacobian(f, x, mode="reverse"), rtol=1e-12, atol=1e-14)
    y, dy = cr.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(dy, J @ np.ones(3), rtol=1e-12, atol=1e-14)


def test_forward_mode_names_the_call_where_the_source_engine_cannot_run_the_function_either():
    namespace = {"np": np}
    exec("def no_source(x):\n    return np.apply_along_axis(lambda r: r * r, 0, x)\n", namespace)  # (no file)
    with pytest.raises(cr.NoRuleError, match="numpy.apply_along_axis") as info:
        cr.jvp(namespace["no_source"], (W,), (np.ones(4),))
    assert "forward mode needs an frule" in str(info.value)
    assert any("source engine's primal" in note for note in info.value.__notes__)


SQUARE = np.frompyfunc(lambda t: t * t, 1, 1)
PRODUCT = np.frompyfunc(lambda a, b: a * b, 2, 1)


@pytest.mark.parametrize(
    "f",
    [lambda x: np.sum(SQUARE(x)), lambda x: SQUARE(x[0]) * 1.0, lambda x: np.sum(PRODUCT.accumulate(x))],
    ids=["call", "number", "accumulate"],
)
def test_frompyfunc_ufuncs_are_refused_at_the_users_line_naming_np_vectorize(f):
    """NumPy keeps an np.frompyfunc ufunc's Python function out of reach: every engine refuses it
    at the user's line and names np.vectorize, whose rules differentiate the function; a constant
    one is a constant."""
    runs = [lambda e=e: cr.gradient(f, W, engine=e) for e in ("source", "tape")]
    for run in [*runs, lambda: cr.jacobian(f, W, mode="forward")]:
        with pytest.raises(cr.NoRuleError, match=r"\(vectorized\).* at .*test_higher_order\.py:\d+") as info:
            run()
        assert "np.vectorize(func) in place of np.frompyfunc(func, nin, nout)" in str(info.value)
    constant = np.sum(SQUARE(np.array([1.0, 2.0])))
    np.testing.assert_allclose(cr.gradient(lambda x: constant * x[0], W)[0], [5.0, 0.0, 0.0, 0.0])
