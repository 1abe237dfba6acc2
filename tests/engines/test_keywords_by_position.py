"""A value being differentiated given by keyword to a callable with a rule (``np.average(x,
weights=w)``, ``np.trapezoid(y, x=t)``, ``np.clip(x, a_min=lo)``) is passed to
the rule by its position, in every engine, to every order: it had been refused ("pass it
positionally"). Nested in another differentiation, the source engine had taken an engine's number
given by keyword for a constant and dropped its cotangent. Only a keyword-only parameter, which no
position can take, is refused (see the engines' error tests)."""

import numpy as np
import pytest
import scipy.special as sc

import chainrules as cr
import chainrules.testing as crt

X = np.array([1.0, 2.5, 0.3, 1.7])


def weighted_moments(w):
    p = w / w.sum()
    mean = np.average(X, weights=p)
    spread = np.average((X - mean) ** 2, axis=0, weights=p)
    return mean + spread + np.trapezoid(X**2, x=np.cumsum(w)) + np.sum(np.clip(X, a_min=w[0], a_max=None))


W = np.array([0.2, 0.5, 1.0, 0.7])


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_first_and_second_order(engine):
    f = weighted_moments
    grad = cr.gradient(f, W, engine=engine)[0]
    crt.assert_approx(grad, crt.fd_jacobian(f, W)[0], rtol=1e-7, atol=1e-9)
    H = cr.hessian(f, W, engine=engine)
    crt.assert_approx(H, crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], W), rtol=1e-6, atol=1e-8)


def test_forward_mode():
    f = weighted_moments
    crt.assert_approx(cr.jacobian(f, W, mode="forward"), crt.fd_jacobian(f, W)[0], rtol=1e-7, atol=1e-9)


def test_tape_over_source():
    def slope(w):
        return np.sum(cr.gradient(weighted_moments, w)[0] * np.arange(1.0, 5.0))

    crt.assert_approx(cr.gradient(slope, W, engine="tape")[0], crt.fd_jacobian(slope, W)[0], rtol=1e-6, atol=1e-8)


def test_a_scipy_function_in_the_source_engine():
    def f(b):
        return sc.logsumexp(X, b=b) + sc.logsumexp(X[:2], axis=0, b=b[:2] ** 2)

    crt.assert_approx(cr.gradient(f, W)[0], crt.fd_jacobian(f, W)[0], rtol=1e-7, atol=1e-9)


def _act(x, scale=1.0):
    return np.tanh(x * scale)


class _Layer:
    def __init__(self, act):
        self.act = act  # a callable in a field


def test_method_calls_with_keywords():
    """A method with a rule (``x.clip(min=lo)``) or a callable held in a field, given a value being
    differentiated by keyword: the source engine had dropped its cotangent (a zero gradient)."""

    def f(w):
        layer = _Layer(_act)
        return np.sum(X.clip(min=w[0], max=2.0)) + layer.act(X[0], scale=w[1]) + np.sum(w.clip(max=w[2] * 2))

    w = np.array([0.9, 0.4, 0.3])
    for engine in ("source", "tape"):
        crt.assert_approx(cr.gradient(f, w, engine=engine)[0], crt.fd_jacobian(f, w)[0], rtol=1e-7, atol=1e-9)
    crt.assert_approx(cr.hessian(f, w), crt.fd_jacobian(lambda v: cr.gradient(f, v)[0], w), rtol=1e-6, atol=1e-8)
