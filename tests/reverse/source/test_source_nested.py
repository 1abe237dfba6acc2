"""Reverse over reverse: ``cr.gradient``, ``cr.value_and_gradient`` and ``cr.pullback`` called
inside a function the source engine differentiates, checked against finite differences and
against the tape engine, which nests by running the inner differentiation on its tracked values."""

import dataclasses

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_grads

A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.5, 0.0, 1.0]])
X = np.array([0.3, -0.7, 1.1])


def energy(x):
    return np.sum(np.sin(x) * (A @ x)) + np.sum(x * x) * np.sum(x)


def nested_functions(inner: str) -> list:
    """Functions that differentiate ``energy`` inside, with the ``inner`` reverse engine."""

    def squared_gradient(x):
        return np.sum(cr.gradient(energy, x, engine=inner)[0] ** 2)

    def value_times_slope(x):
        value, (slope,) = cr.value_and_gradient(energy, x, engine=inner)
        return value * np.sum(slope)

    def pulled_back(x):
        y, back = cr.pullback(lambda z: np.sin(z) * (A @ z), x, engine=inner)
        (dz,) = back(np.cos(x))  # the cotangent depends on x too
        return np.sum(dz * y)

    return [squared_gradient, value_times_slope, pulled_back]


def both_arguments(x, s):
    gx, gs = cr.gradient(lambda a, b: np.sum(np.tanh(a * b)) * b, x, s)
    return np.sum(gx * x) + gs * s


def selected_and_aux(x, s):
    gs, aux = cr.gradient(lambda a, b: (np.sum(a * a) * b * b, np.sum(a) * b), x, s, argnums=1, has_aux=True)
    return gs * aux


@pytest.mark.parametrize("inner", ["source", "tape"])
@pytest.mark.parametrize("which", range(3))
def test_reverse_over_reverse_against_finite_differences(which, inner):
    f = nested_functions(inner)[which]
    check_grads(f, (X,), modes=("reverse",), order=1, engine="source")


@pytest.mark.parametrize("which", range(3))
def test_reverse_over_reverse_agrees_with_the_tape(which):
    (source,) = cr.gradient(nested_functions("source")[which], X)
    (tape,) = cr.gradient(nested_functions("tape")[which], X, engine="tape")  # the tape nests natively
    np.testing.assert_allclose(source, tape, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", [both_arguments, selected_and_aux], ids=lambda f: f.__name__)
def test_several_arguments_argnums_and_aux(f):
    args = (X, 0.8)
    check_grads(f, args, modes=("reverse",), order=1, engine="source")
    source, tape = cr.gradient(f, *args), cr.gradient(f, *args, engine="tape")  # inner: source on tape values
    np.testing.assert_allclose(source[0], tape[0], rtol=1e-12)
    assert source[1] == pytest.approx(tape[1], rel=1e-12)


def test_the_seed_examples_of_nesting():
    assert cr.gradient(lambda x: cr.gradient(lambda y: y**3, x)[0], 2.0) == (12.0,)

    def d(g):
        return lambda x: cr.gradient(g, x)[0]

    assert d(d(d(lambda x: x * x * x * x)))(2.0) == 48.0  # 24 x, three reverse passes deep
    # the inner function closes over the outer variable: no perturbation confusion
    assert cr.gradient(lambda x: x * cr.gradient(lambda y: x + y, 1.0)[0], 5.0) == (1.0,)
    assert cr.gradient(lambda x: x * cr.gradient(lambda y: x * y * y, 1.0)[0], 5.0) == (20.0,)


@dataclasses.dataclass
class Quadratic:
    w: np.ndarray

    def __call__(self, x):
        return np.sum(self.w * x * x * x)


def test_a_model_captured_by_the_inner_function_gets_its_cotangent():
    def curvature(model, x):
        return np.sum(cr.gradient(model, x)[0])  # sum of 3 w x^2

    model = Quadratic(np.array([1.0, 2.0, 3.0]))
    dmodel, dx = cr.gradient(curvature, model, X)
    np.testing.assert_allclose(dmodel.w, 3 * X**2)
    np.testing.assert_allclose(dx, 6 * model.w * X)
    tape = cr.gradient(curvature, model, X, engine="tape")
    np.testing.assert_allclose(tape[0].w, dmodel.w)


def test_hessian_of_a_function_with_a_nested_gradient_is_third_order():
    def g(x):
        return cr.gradient(lambda y: np.sum(y**4), x)[0].sum()  # sum of 4 x^3

    np.testing.assert_allclose(cr.hessian(g, X), np.diag(24 * X))
    np.testing.assert_allclose(cr.gradient(g, X)[0], 12 * X**2)


@pytest.mark.parametrize("engine", ["source", "tape"])
def test_has_aux_differentiates_the_value_and_returns_the_aux(engine):
    def with_aux(x, k):
        return np.sum(x**k), {"mean": np.mean(x), "k": k}

    (value, aux), (dx, dk) = cr.value_and_gradient(with_aux, X, 2, has_aux=True, engine=engine)
    assert value == pytest.approx(np.sum(X**2)) and aux == {"mean": np.mean(X), "k": 2}
    np.testing.assert_allclose(dx, 2 * X)
    (dx,), aux = cr.gradient(lambda x: [np.sum(x * x), "label"], X, has_aux=True, engine=engine)
    assert aux == "label"
    with pytest.raises(cr.ChainRulesError, match="pair"):
        cr.gradient(lambda x: x * 2.0, 1.0, has_aux=True, engine=engine)
