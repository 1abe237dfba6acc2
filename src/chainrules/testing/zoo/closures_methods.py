"""Zoo family: closures, lambdas, nested functions, methods and callable objects.

Seed 001's ``Polynomial`` is here: a callable dataclass whose ``__call__`` evaluates the
polynomial by Horner's rule (Julia's ``evalpoly``) and maps itself over an array input. Called
as a function of its weights (``polynomial_loss``) its gradient is a ``Tangent[Polynomial]``.
"""

from __future__ import annotations

import dataclasses
import functools
import operator

import numpy as np

from . import case


def evalpoly(x, weights):
    """``weights[0] + weights[1] x + weights[2] x^2 + ...`` by Horner's rule."""
    y = weights[-1]
    for i in range(len(weights) - 2, -1, -1):
        y = y * x + weights[i]
    return y


@dataclasses.dataclass
class Polynomial:
    weights: np.ndarray

    def __call__(self, x):
        if getattr(x, "ndim", 0) > 0:  # an array: the seed's `map(m, x)`
            return np.stack(list(map(self, x)))
        return evalpoly(x, self.weights)


SEED_MODEL = Polynomial(np.array([3.0, 2.0, -3.0, 1.0]))
SEED_X = np.array([1.0, 2.0, 3.0, 4.0])

case(SEED_X, tags=("method", "array", "higher_order"), name="polynomial_model")(SEED_MODEL)


@case(SEED_MODEL, SEED_X, tags=("method", "structure", "array", "higher_order"))
def polynomial_loss(model, x):
    """The seed's model as an argument: the gradient for it is a Tangent[Polynomial]."""
    return np.sum(model(x) ** 2)


@case(1.25, tags=("method", "control_flow"))
def polynomial_at_scalar(x):
    return SEED_MODEL(x)


def _make_scaler(k):
    def scale(t):
        return k * t

    return scale


@case(0.7, tags=("closure",))
def closure_over_constant(x):
    triple = _make_scaler(3.0)
    return triple(x) * x


@case(0.7, 1.3, tags=("closure",))
def closure_over_argument(x, y):
    """The inner function closes over an argument being differentiated."""

    def shifted(t):
        return (t - y) ** 2

    return shifted(x) + shifted(2.0 * x)


@case(np.array([0.3, -0.2, 0.5, 0.1]), tags=("closure", "array"))
def closure_over_array(x):
    W = np.arange(12.0).reshape(3, 4) / 10.0

    def affine(v):
        return W @ v + 1.0

    return np.sum(np.tanh(affine(x)))


@case(0.9, tags=("closure",))
def lambdas(x):
    square = lambda t: t * t  # noqa: E731
    plus_x = lambda t: t + x  # noqa: E731
    return square(plus_x(x)) + plus_x(2.0)


@case(1.1, tags=("closure", "control_flow"))
def nested_definitions_in_loop(x):
    total = 0.0
    for k in (1.0, 2.0, 3.0):

        def term(t, k=k):
            return np.sin(k * t) / k

        total = total + term(x)
    return total


class Linear:
    """A plain class (not a dataclass) with a method."""

    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x):
        return self.W @ x + self.b

    @staticmethod
    def activation(z):
        return np.tanh(z)


@case(
    Linear(np.array([[0.5, -1.0], [1.5, 0.2], [0.3, 0.3]]), np.array([0.1, -0.1, 0.0])),
    np.array([0.4, -0.6]),
    tags=("method", "structure", "array"),
)
def method_of_object(layer, x):
    return np.sum(Linear.activation(layer.forward(x)) ** 2)


@dataclasses.dataclass
class Spring:
    k: float
    rest: float

    def energy(self, x):
        stretch = x - self.rest
        return 0.5 * self.k * stretch * stretch


SPRING = Spring(2.0, 1.0)
case(1.7, tags=("method",), name="bound_method")(SPRING.energy)


@case([0.5, -1.5, 2.0], tags=("closure", "higher_order"))
def map_with_lambda(xs):
    return sum(map(lambda t: t * t * t, xs))


@case([0.5, -1.5, 2.0, 0.25], tags=("closure", "higher_order"))
def sorted_by_key(xs):
    ordered = sorted(xs, key=abs)
    return ordered[0] * 10.0 + ordered[-1]


@case([1.5, -0.5, 2.0], tags=("higher_order",))
def reduce_product(xs):
    return functools.reduce(operator.mul, xs) + functools.reduce(lambda a, b: a * 0.5 + b, xs, 1.0)
