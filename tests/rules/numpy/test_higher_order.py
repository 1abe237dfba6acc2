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


def test_vectorize_refuses_what_its_rule_does_not_take_naming_it():
    with pytest.raises(cr.NoRuleError, match="signature, excluded or keywords"):
        cr.gradient(lambda v: np.sum(np.vectorize(smooth, excluded={1})(v, 2.0)), W)
    with pytest.raises(cr.NoRuleError, match="several outputs"):
        cr.gradient(lambda v: np.sum(np.vectorize(lambda t: (t, t * t))(v)[0]), W)


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
