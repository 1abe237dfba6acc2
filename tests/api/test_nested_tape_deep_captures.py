"""A nested differentiation on the tape of a function that reaches the outer variable through what
it captured: a dict or list of parameters, another closure, a callable object, a recursive closure.

Under the source engine the outer variable is a plain number there, so the tape must track it to
give the function's tangent (``df``) the cotangent the rule for ``gradient`` pulls back to it: it
boxes what a closure captured, at any depth: containers, a user's data objects (a dataclass's
instance, an object whose method the function calls), ``functools.partial`` objects and closures. Checked
against finite differences and the inner ``engine="source"``; before, the derivative through the
capture was dropped (``ZeroTangent()``, or only the direct part).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import fd_jacobian

X = np.array([0.4, -0.3, 0.7])


def through_closure(x, engine):
    g = lambda z: np.sum(x * z**3)  # noqa: E731
    h = lambda z: g(z)  # noqa: E731
    return np.sum(cr.gradient(h, X + 1.0, engine=engine)[0] ** 2)


def through_four_closures(x, engine):
    # (each closure of the chain is followed: the last one, four captures deep, holds x)
    a = lambda z: np.sin(z) * x  # noqa: E731
    b = lambda z: a(z) + z  # noqa: E731
    c = lambda z: b(z) ** 2  # noqa: E731
    return np.sum(cr.gradient(lambda z: np.sum(c(z)), X + 1.0, engine=engine)[0] ** 2)


def through_dict(x, engine):
    params = {"w": x, "n": 2}
    return np.sum(cr.gradient(lambda z: np.sum(params["w"] * z ** params["n"]), x, engine=engine)[0] ** 2)


def through_list_in_closure(x, engine):
    layers = [x, 2.0 * x]
    g = lambda z: np.sum(np.tanh(layers[0] * z) * layers[1])  # noqa: E731
    return cr.value_and_gradient(lambda z: g(z) * 3.0, X, engine=engine)[1][0] @ X


@dataclasses.dataclass
class Scale:
    w: np.ndarray

    def __call__(self, z):
        return np.sum(self.w * np.sin(z))


def through_object(x, engine):
    layer = Scale(x * x)
    return np.sum(cr.gradient(lambda z: layer(z) ** 2, X, engine=engine)[0])


@dataclasses.dataclass
class Params:
    w: object
    n: int = 2


class Model:
    def __init__(self, W):
        self.W, self.name = W, "model"

    def predict(self, z):
        return np.tanh(self.W * z)


def through_dataclass(x, engine):
    params = Params(w=np.exp(x))
    return np.sum(cr.gradient(lambda z: np.sum(params.w * z ** params.n), X, engine=engine)[0] ** 2)


def through_object_method(x, engine):
    model = Model(x * 2.0)
    return np.sum(cr.gradient(lambda z: np.sum(model.predict(z) ** 2), X, engine=engine)[0] ** 2)


def through_five_containers(x, engine):
    nested = {"a": [[(Params(w={"z": [x]}), 1.0)]]}
    return np.sum(cr.gradient(lambda z: np.sum(z * nested["a"][0][0][0].w["z"][0] ** 2), X, engine=engine)[0])


def through_partials(x, engine):
    scale = functools.partial(np.multiply, x)
    shift = functools.partial(lambda by, z: z + by, x**2)
    return np.sum(cr.gradient(lambda z: np.sum(np.sin(scale(shift(z)))), X, engine=engine)[0] ** 2)


def through_recursion(x, engine):
    def power(z, n):
        return z if n == 0 else np.sin(x * power(z, n - 1))

    return np.sum(cr.gradient(lambda z: np.sum(power(z, 4)), X, engine=engine)[0])


def through_two_derivatives(x, engine):
    a = x[0]
    g = lambda z: a * z**4  # noqa: E731
    d = lambda f: lambda z: cr.gradient(f, z, engine=engine)[0]  # noqa: E731
    return d(d(g))(1.5)  # 12 a z^2


PROGRAMS = [
    through_closure,
    through_four_closures,
    through_dict,
    through_list_in_closure,
    through_object,
    through_dataclass,
    through_object_method,
    through_five_containers,
    through_partials,
    through_recursion,
    through_two_derivatives,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_source_over_tape_matches_finite_differences_and_source_over_source(program):
    got = cr.gradient(lambda x: program(x, "tape"), X)[0]
    expected = fd_jacobian(lambda x: program(x, "source"), X).ravel()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got, cr.gradient(lambda x: program(x, "source"), X)[0], rtol=1e-10, atol=1e-12)


def test_hessian_over_tape_through_a_closure_of_a_closure():
    got = cr.hessian(lambda x: through_closure(x, "tape"), X)
    np.testing.assert_allclose(got, cr.hessian(lambda x: through_closure(x, "source"), X), rtol=1e-8, atol=1e-10)


def test_a_captured_list_written_by_the_tape_function_is_refused():
    def program(x):
        state = [x, 0.0]

        def step(z):
            state[1] = np.sum(state[0] * z)
            return state[1]

        return np.sum(cr.gradient(step, X, engine="tape")[0])

    with pytest.raises(cr.DroppedDerivativeError, match="sets the item 1 of its list"):
        cr.gradient(program, X)


def test_a_captured_data_object_written_by_the_tape_function_is_refused():
    def program(x):
        params = Params(w=x)

        def step(z):
            params.n += 1
            return np.sum(params.w * z)

        return np.sum(cr.gradient(step, X, engine="tape")[0])

    with pytest.raises(cr.DroppedDerivativeError, match="sets the field 'n' of its Params object"):
        cr.gradient(program, X)


def test_a_top_level_tape_gradient_leaves_settings_in_captured_containers_alone():
    """At the top, the tape tracks only a closure's own numbers and arrays: a setting read from a
    captured dict and converted (float()) is not refused, as no differentiation around needs it."""

    def make():
        config = {"rate": 0.1, "n": 3}

        def f(x):
            return x * float(config["rate"]) + np.sum(np.ones(config["n"]) * x)

        return f

    f = make()
    assert cr.gradient(f, 1.5, engine="tape") == pytest.approx((3.1,))
    assert cr.gradient(f, 1.5, engine="tape") == cr.gradient(f, 1.5)


def test_a_tape_gradient_of_a_source_gradient_of_a_nested_tape_gradient():
    """Tape over source over tape: the inner tape tracks the outer tape's value it captured too, as
    the source engine between them needs its cotangent (f'' had been 36 x^2; an array case gave a
    ZeroTangent gradient)."""

    def f(x):  # x^3 * d/dy (x y^2) at y = 2 = 4 x^4
        return x**3 * cr.gradient(lambda y: x * y * y, 2.0, engine="tape")[0]

    x = 0.8
    assert cr.gradient(lambda z: cr.gradient(f, z)[0], x, engine="tape")[0] == pytest.approx(48 * x * x)

    q0, w = np.array([1.0, 2.0]), np.array([1.0, 2.0])

    def g(a):
        return np.sum(cr.gradient(lambda q: np.sum(a * q**3), q0, engine="tape")[0] ** 2)

    def slope(a):
        return np.sum(cr.gradient(g, a)[0] * w)

    a = np.array([0.5, 1.2])
    expected = fd_jacobian(slope, a)[0]
    np.testing.assert_allclose(cr.gradient(slope, a, engine="tape")[0], expected, rtol=1e-6)
    np.testing.assert_allclose(cr.gradient(slope, a)[0], expected, rtol=1e-6)
