"""Whole programs the way scientists write them, for ``test_programs.py``.

Each ``@program(args...)`` is differentiated by every engine, and a construct an engine does not
support by design is listed in ``refuses`` (``program_checks.py`` says how).
"""

from __future__ import annotations

import cmath
import dataclasses
import functools
import logging
import math
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.special
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

# ----- ODEs, dynamics, physics --------------------------------------------------------------------

G = 9.81


def lotka_volterra(state, theta):
    x, y = state[0], state[1]
    return np.stack([theta[0] * x - theta[1] * x * y, theta[3] * x * y - theta[2] * y])


@program(np.array([1.0, 0.5, 0.8, 0.3]), np.array([1.2, 0.7]))
def rk4_integrator(theta, y0):
    h = 0.1
    y = y0
    states = [y0]
    for _ in range(8):
        k1 = lotka_volterra(y, theta)
        k2 = lotka_volterra(y + h / 2 * k1, theta)
        k3 = lotka_volterra(y + h / 2 * k2, theta)
        k4 = lotka_volterra(y + h * k3, theta)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        states.append(y)
    trajectory = np.stack(states)
    return np.sum(trajectory[:, 0] ** 2) + np.mean(trajectory[:, 1])


@program(
    np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 1.1]]),
    np.array([[0.0, 0.1], [-0.1, 0.0], [0.05, -0.05]]),
    np.array([1.0, 2.0, 1.5]),
)
def leapfrog_nbody(pos, vel, mass):
    def acceleration(p):
        diff = p[None, :, :] - p[:, None, :]
        inv_r3 = (np.sum(diff**2, axis=-1) + 0.01) ** -1.5 * (1.0 - np.eye(p.shape[0]))
        return np.sum(diff * (inv_r3 * mass[None, :])[:, :, None], axis=1)

    dt = 0.01
    for _ in range(3):
        vel = vel + 0.5 * dt * acceleration(pos)
        pos = pos + dt * vel
        vel = vel + 0.5 * dt * acceleration(pos)
    return 0.5 * np.sum(mass[:, None] * vel**2) + np.sum(pos**2)


@program(1.2, 0.3, refuses={"tape": MATH_ON_TAPE, "forward": MATH_FORWARD})
def pendulum_until_time(length, theta0):
    dt, t = 0.05, 0.0
    theta, omega, energy = theta0, 0.0, 0.0
    while t < 1.0:  # terminates on time, not on a count
        omega = omega - dt * G / length * math.sin(theta)
        theta = theta + dt * omega
        energy = energy + 0.5 * length**2 * omega**2 * dt
        t += dt
    return theta + energy


@program(1.2, 0.3, hessian=True, nested=True)
def pendulum_with_numpy(length, theta0):
    dt = 0.05
    theta, omega = theta0, 0.0
    for _ in range(20):
        omega = omega - dt * G / length * np.sin(theta)
        theta = theta + dt * omega
    return theta * omega + np.cos(theta)


@program(np.array([0.4, 0.9]), hessian=True, nested=True)
def spring_chain_energy(q):
    stiffness = [2.0, 3.0, 1.5]
    pos = np.concatenate([np.zeros(1), q, np.ones(1) * 2.0])
    energy = 0.0
    for i, k in enumerate(stiffness):
        stretch = pos[i + 1] - pos[i] - 0.6
        energy += 0.5 * k * stretch**2
    return energy


@dataclasses.dataclass
class Particle:
    x: float
    v: float
    m: float = 1.0

    def step(self, dt, force):
        return Particle(self.x + dt * self.v, self.v + dt * force / self.m, self.m)


@program(Particle(1.0, 0.0, 2.0))
def dataclass_integrator(p):
    for _ in range(5):
        p = p.step(0.1, -4.0 * p.x)
    return p.x**2 + p.v**2 * p.m


# ----- statistics and machine learning ------------------------------------------------------------

X_TRAIN = np.array([[0.0], [0.4], [1.1], [1.7], [2.5]])
Y_TRAIN = np.sin(X_TRAIN[:, 0])


def rbf_kernel(X, ell, sf):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return sf**2 * np.exp(-0.5 * d2 / ell**2)


@program(np.array([0.7, 1.2, 0.1]), hessian=True, nested=True)
def gp_nlml_cholesky(params):
    ell, sf, noise = params[0], params[1], params[2]
    K = rbf_kernel(X_TRAIN, ell, sf) + noise**2 * np.eye(len(Y_TRAIN))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, Y_TRAIN))
    return 0.5 * Y_TRAIN @ alpha + np.sum(np.log(np.diag(L)))


@program(
    np.array([0.7, 1.2, 0.1]),
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def gp_nlml_cho_factor(params):
    ell, sf, noise = params
    K = rbf_kernel(X_TRAIN, ell, sf) + noise**2 * np.eye(len(Y_TRAIN))
    c, lower = scipy.linalg.cho_factor(K, lower=True)
    alpha = scipy.linalg.cho_solve((c, lower), Y_TRAIN)
    return 0.5 * Y_TRAIN @ alpha + np.sum(np.log(np.diag(c)))


X_LOGISTIC = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 0.8], [2.0, 2.0], [-1.2, -0.4]])
Y_LOGISTIC = np.array([1.0, 1.0, 0.0, 1.0, 0.0])


@program(np.array([0.3, -0.2]), 0.1, hessian=True, nested=True)
def logistic_regression(w, b):
    p = 1.0 / (1.0 + np.exp(-(X_LOGISTIC @ w + b)))
    p = np.clip(p, 1e-6, 1 - 1e-6)
    log_likelihood = np.where(Y_LOGISTIC > 0.5, np.log(p), np.log(1 - p))
    return -np.mean(log_likelihood) + 0.01 * np.sum(w**2)


@program(np.array([[0.3, -0.2], [0.1, 0.4]]), np.array([[0.5, -0.3]]), np.array([0.1, -0.1]))
def recurrent_network(Wh, Wx, b):
    inputs = [np.array([1.0]), np.array([0.5]), np.array([-0.3]), np.array([0.8])]
    h = np.zeros(2)
    hidden = []
    for x in inputs:
        h = np.tanh(Wh @ h + x @ Wx + b)
        hidden.append(h)
    H = np.stack(hidden)
    return np.sum(H[-1] ** 2) + 0.1 * np.sum(H)


@program(np.array([1.0, 2.0]), hessian=True, nested=True)
def unrolled_gradient_descent(theta):
    A = np.array([[3.0, 0.5], [0.5, 1.0]])
    w = np.zeros(2)
    for _ in range(5):
        w = w - 0.1 * (A @ w - theta)
    return np.sum((w - 1.0) ** 2)


@program(np.array([1.0, 0.5, 0.2]), hessian=True, refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD})
def softmax_cross_entropy(logits):
    shifted = logits - np.max(logits)
    log_p = shifted - np.log(np.sum(np.exp(shifted)))
    return -np.sum(np.array([0.0, 1.0, 0.0]) * log_p) + 0.01 * scipy.special.logsumexp(logits)


@program(np.array([0.3, -0.4], dtype=np.float32), np.float32(0.1), rtol=2e-3)
def float32_model(w, b):
    X = np.array([[1.0, 2.0], [0.5, -1.0], [0.2, 0.3]], dtype=np.float32)
    y = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    p = 1 / (1 + np.exp(-(X @ w + b)))
    return np.mean((p - y) ** 2)


@dataclasses.dataclass
class LinearModel:
    w: np.ndarray
    b: float

    def loss(self, X, y):
        return np.mean((X @ self.w + self.b - y) ** 2)


@dataclasses.dataclass(frozen=True)
class FrozenModel:
    w: np.ndarray
    b: float

    def loss(self, X, y):
        return np.mean((X @ self.w + self.b - y) ** 2)


@program(LinearModel(np.array([0.5, -0.5]), 0.2))
def dataclass_model_loss(model):
    return model.loss(X_LOGISTIC, Y_LOGISTIC)


@program(FrozenModel(np.array([0.5, -0.5]), 0.2))
def frozen_dataclass_loss(model):
    return model.loss(X_LOGISTIC, Y_LOGISTIC) + 0.1 * model.b**2


class MLPParams(NamedTuple):
    W: np.ndarray
    b: np.ndarray
    scale: float


@program(MLPParams(np.array([[0.2, 0.1], [-0.3, 0.5]]), np.array([0.0, 0.1]), 1.5))
def namedtuple_parameters(p):
    return p.scale * np.sum(np.tanh(X_LOGISTIC @ p.W + p.b) ** 2)


@program(
    {
        "hidden": {"W": np.array([[0.2, 0.1], [-0.3, 0.5]]), "b": np.array([0.0, 0.1])},
        "out": {"W": np.array([[0.4], [0.2]]), "b": np.array([0.05])},
    }
)
def dict_of_layers(layers):
    h = X_LOGISTIC
    for name in ("hidden", "out"):
        h = h @ layers[name]["W"] + layers[name]["b"]
        if name != "out":
            h = np.maximum(h, 0.0) + 0.1 * np.minimum(h, 0.0)  # leaky ReLU
    return np.sum((h[:, 0] - Y_LOGISTIC) ** 2)


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


@program(Dense(np.array([[0.2, 0.1], [-0.3, 0.5]]), np.array([0.0, 0.1])))
def callable_layer_object(layer):
    return np.sum(layer(layer(X_LOGISTIC[:2])) ** 2)


class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@program(
    [
        Layer(np.array([[0.3, -0.1], [0.2, 0.4]]), np.array([0.1, 0.0])),
        Layer(np.array([[0.5], [-0.5]]), np.array([0.2])),
    ]
)
def list_of_namedtuple_layers(layers):
    h = X_LOGISTIC[:3]
    for i, layer in enumerate(layers):
        h = h @ layer.W + layer.b
        if i < len(layers) - 1:
            h = np.tanh(h)
    return np.mean(h**2)


@dataclasses.dataclass
class Config:
    lr: float = 0.1
    steps: int = 3


@program(np.array([1.0, -2.0]), Config())
def dataclass_configured_optimiser(theta, cfg):
    w = theta
    for _ in range(cfg.steps):
        w = w - cfg.lr * (2 * (w - 0.5) + 0.1 * np.sin(w))
    return np.sum(w**2)


# ----- numerics: roots, fixed points, recursion ---------------------------------------------------


@program(2.0, hessian=True, nested=True)
def newton_cube_root(a):
    x = 1.0
    for _ in range(50):
        fx = x**3 - a
        if abs(fx) < 1e-12:
            break
        x = x - fx / (3 * x**2)
    return x


@program(np.array([0.2, 0.8, -0.5]))
def fixed_point_until_converged(x):
    y = x
    for _ in range(100):
        y_new = 0.5 * (y + np.cos(y))
        if np.max(np.abs(y_new - y)) < 1e-10:
            break
        y = y_new
    return np.sum(y_new**2)


@program(np.array([0.3, -0.7, 1.2]))
def while_true_with_break(x):
    k = 0
    y = x
    while True:
        y = y * 0.9 + 0.05 * np.sin(y)
        k += 1
        if k >= 4:
            break
    assert y.shape == x.shape
    return np.sum(y**3)


def tree_sum(tree):
    if isinstance(tree, tuple):
        return tree_sum(tree[0]) + tree_sum(tree[1])
    return tree * tree


@program(1.5, 2.0, hessian=True, nested=True)
def binary_tree_sum(a, b):
    return tree_sum(((a, b), (a * b, (b, 3.0))))


def horner(coeffs, x):
    if len(coeffs) == 1:
        return coeffs[0]
    return coeffs[0] + x * horner(coeffs[1:], x)


@program(0.7, np.array([1.0, -2.0, 0.5, 0.3]), hessian=True, nested=True)
def recursive_polynomial(x, coeffs):
    return horner(coeffs, x)


@program(np.array([0.1, 0.2, 0.3, 0.4]), hessian=True)
def recursive_halving(x):
    def split_sum(v):
        if len(v) == 1:
            return v[0]
        half = len(v) // 2
        return split_sum(v[:half]) * 1.5 + split_sum(v[half:]) * np.cos(v[0])

    return split_sum(x)


# ----- Python features: arguments, closures, generators, containers -------------------------------


@program(np.array([0.3, -0.4, 0.8]), alpha=0.2)
def keyword_only_ridge(w, *, alpha=0.1, power=2):
    X = np.array([[1.0, 2.0, 0.5], [0.1, -0.3, 0.7]])
    r = X @ w - np.array([0.5, -0.2])
    return np.sum(r**power) + alpha * np.sum(np.abs(w) ** power)


def weighted_sum(*terms, weights=None):
    if weights is None:
        weights = [1.0] * len(terms)
    return sum(wi * t for wi, t in zip(weights, terms))


@program(np.array([0.3, -0.4, 0.8]), 1.5, hessian=True)
def star_arguments(x, s):
    return weighted_sum(np.sum(x**2), s * np.sum(x), s**3, weights=[1.0, 2.0, 0.5])


@program(np.array([0.3, 0.1, -0.2]), hessian=True, nested=True)
def closures_made_in_a_loop(x):
    terms = []
    for k in range(3):

        def term(v, k=k):
            return np.sin(v[k]) * (k + 1)

        terms.append(term)
    return sum(t(x) for t in terms) + np.sum((x - np.array([1.0, -1.0, 0.5])) ** 2)


@program(np.array([0.3, -0.4, 0.8]), refuses={"tape": ARRAY_OF_TRACKED, "forward": "np.stack"})
def generators_into_sum_array_and_stack(x):
    total = sum(xi * xi for xi in x)
    rows = np.stack([x * k for k in range(1, 4)])
    sines = np.array([np.sin(xi) for xi in x])  # the source engine sees np.array's call
    return total + np.sum(rows) + np.sum(sines * x)


@program(np.array([0.3, -0.4, 0.8, 1.1]), hessian=True, refuses={"tape": ARRAY_OF_TRACKED, "forward": "np.zeros_like"})
def fills_a_fresh_buffer(x):
    n = len(x)
    out = np.empty(n)
    for i in range(n):
        out[i] = x[i] ** 2 + (x[i - 1] if i > 0 else 0.0)
    cumulative = np.zeros(n)
    cumulative[0] = out[0]
    for i in range(1, n):
        cumulative[i] = cumulative[i - 1] + out[i]
    return np.sum(cumulative * out)


@program(np.array([0.3, -0.4, 0.8, 1.1]), hessian=True)
def fills_a_buffer_like_its_input(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = x[i] ** 2 + (out[i - 1] if i > 0 else 0.0)
    return np.sum(out * x)


@program(np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.1]]), hessian=True, nested=True)
def star_unpacking_and_zip(P):
    first, *rest = P
    xs, ys = zip(*P)
    return sum(xs) * sum(ys) + np.sum(first) * len(rest) + sum(np.sum(r**2) for r in rest)


@program({"a": 1.0, "b": 2.0, "c": 0.5})
def dict_items_loop(params):
    total = 0.0
    for name, value in params.items():
        total = total + (len(name) + 1) * value**2
    return total + sum(params.values()) + params["a"] * params["c"]


@program(np.array([0.3, -0.7, 1.2]), hessian=True, nested=True)
def dict_comprehension_of_features(x):
    features = {f"p{k}": x**k for k in range(1, 4)}
    weights = {"p1": 1.0, "p2": -0.5, "p3": 0.25}
    return sum(np.sum(weights[k] * v) for k, v in features.items())


@program(np.array([0.5, 1.0, 1.5]))
def map_filter_reduce_sorted(x):
    squared = list(map(lambda v: v * v, x))
    big = [v for v in squared if v > 0.5]
    product = functools.reduce(lambda a, b: a * b, big, 1.0)
    descending = sorted(x, key=lambda v: -v)
    return product + descending[0] * 2.0 + max(x) - min(squared)


@program(np.array([0.3, -0.7]), 3)
def integer_argument_used_arithmetically(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + np.sum(x ** (i + 1)) / n
    return acc * n


@program(np.array([0.3, 0.5, 1.2]), hessian=True, nested=True)
def list_append_and_slices(x):
    items = [x[0], x[1], x[2]]
    items.append(items[0] * items[1])
    return items[-1] + sum(items[:3])


@program(np.array([0.3, -0.7, 1.2]), hessian=True, nested=True)
def try_except_fallback(x):
    try:
        y = np.log(x[0]) + np.sum(x**2)
    except ValueError:
        y = 0.0
    return y


@program(np.array([1.0, 2.0, 3.0]), hessian=True, nested=True)
def logs_with_f_strings(x):
    total = 0.0
    log = []
    for i, xi in enumerate(x):
        total = total + xi**2
        log.append(f"step {i}: total={total:.3f} x={xi}")
    return total * (1.0 if log else 0.0)


@program(np.array([0.3, -0.7, 1.2]))
def constant_noise_from_a_seeded_generator(x):
    noise = np.random.default_rng(0).normal(size=x.shape)
    return np.sum((x + 0.1 * noise) ** 2)


# ----- arrays, linear algebra, complex numbers ----------------------------------------------------


@program(np.arange(6.0).reshape(2, 3) / 5.0, np.arange(12.0).reshape(3, 4) / 7.0)
def einsum_contractions(A, B):
    C = np.einsum("ij,jk->ik", A, B)
    outer = np.einsum("i,j->ij", A[0], B[:, 1])
    return np.einsum("ii->", C[:, :2]) + np.einsum("ij,ij->", outer, outer) + np.einsum("ik,ik", C, C)


@program(np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]]))
def linear_algebra_mix(A):
    w, V = np.linalg.eigh(A)
    return (
        np.sum(w**2)
        + np.trace(np.linalg.inv(A))
        + np.linalg.det(A)
        + np.linalg.norm(A @ np.ones(3))
        + np.sum(V[:, 0] ** 2)
    )


@program(
    np.array([[2.0, 0.5], [0.5, 1.0]]),
    np.array([1.0, -1.0]),
    hessian=True,
    refuses={"tape": SCIPY_WRAPPER, "forward": SCIPY_WRAPPER_FORWARD},
)
def numpy_and_scipy_solves(A, b):
    x = np.linalg.solve(A, b)
    return x @ A @ x + np.sum(scipy.linalg.solve(A, b)) + np.linalg.slogdet(A)[1]


@program(np.array([0.3, 1.0, 0.2, 0.6, 0.9]))
def cumulative_sorted_and_argmax(x):
    s = np.sort(x)
    return (
        np.sum(np.cumsum(x) * x)
        + np.sum(np.diff(x) ** 2)
        + np.cumprod(1 + 0.1 * x)[-1]
        + s[-1] * s[0]
        + x[np.argmax(x)]
    )


@program(np.array([0.5, -1.2, 2.0, -0.1]))
def boolean_mask_on_a_copy(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y**2) + np.sum(np.where(x > 0, x, 0.1 * x)) + np.sum(x[x > 0.4])


@program(np.array([0.25, 0.5, -0.25]), hessian=True, nested=True)
def convolution_and_interpolation(kernel):
    smoothed = np.convolve(np.array([0.3, -1.2, 0.8, 2.0]), kernel, "same")
    table = np.interp(np.array([0.2, 0.7, 1.3]), np.array([0.0, 0.5, 1.0, 1.5]), np.concatenate([kernel, [1.0]]))
    return np.sum(smoothed**2) + np.sum(table**3)


@program(0.7, 1.3, hessian=True, nested=True)
def complex_arithmetic(a, b):
    z = a + 1j * b
    w = z * z / (1 + z)
    return w.real * w.imag + abs(w) + (z.conjugate() * w).real


@program(np.array([0.5, 1.5, -0.3]), hessian=True, nested=True)
def complex_arrays(x):
    z = x + 1j * x[::-1]
    w = np.exp(z) * np.conj(z)
    return np.sum(w.real) + 0.01 * np.sum(np.abs(w) ** 2) + np.sum(np.angle(z))


@program(0.8, 0.3, refuses={"tape": "complex() of a value being differentiated", "forward": "complex() of a dual"})
def math_and_cmath_together(a, b):
    z = complex(a, b)
    w = cmath.exp(z) * z
    return math.sqrt(a**2 + b**2) + abs(w) + np.sin(a) * math.cos(b)


@program(
    0.6,
    hessian=True,
    nested=True,
    refuses={"tape": "complex() of a value being differentiated", "forward": "complex() of a dual"},
)
def complex_constructor(a):
    z = complex(a, a * a)
    w = np.exp(z) * complex(a) + complex(2.0, a)
    return abs(w) + w.real * w.imag


@program(np.array([0.4, -0.3, 0.9]), hessian=True, nested=True)
def prints_intermediate_values(x):
    energy = np.sum(x**2)
    print("energy", energy, "first", x[0], f"{energy:.4f}", "%.2f per step" % (energy / len(x)))  # noqa: UP031
    return energy * np.exp(-x[0])


@program(np.array([0.5, 2.0, -1.0, 3.0]), hessian=True, nested=True)
def early_return_from_a_search(x):
    for i in range(len(x)):
        if x[i] > 1.5:
            return x[i] ** 2 * np.sum(x)
    else:
        return np.sum(x)


@program(np.array([0.5, 2.0, -1.0, 3.0]), hessian=True, nested=True)
def builtins_on_scalars(x):
    largest = max(x[0], x[1], x[2])
    smallest = min(abs(x[2]), x[3])
    return largest * smallest + abs(x[2]) ** 3 + round(float(np.sum(x)) if False else 0.0)


LOG = logging.getLogger("chainrules.tests.programs")


@program(np.array([0.4, -0.3, 0.9]), hessian=True, nested=True)
def logs_progress_with_percent_formatting(x):
    w = x
    for step in range(3):
        loss = np.sum((w - 1.0) ** 2)
        LOG.info("step %d: loss %.4f, w[0] = %.3f", step, loss, w[0])
        w = w - 0.2 * (w - 1.0) * np.exp(-w)
    return np.sum(w**2)


# ----- loops with else, breaks inside blocks, powers, Jacobians inside functions ------------------


@program(np.array([0.5, 0.2, 0.9]), hessian=True, nested=True)
def while_loop_with_else(x):
    i = 0
    acc = 0.0
    while i < len(x):
        acc = acc + x[i] ** 2
        i += 1
    else:
        acc = acc * 2.0
    return acc


@program(np.array([1.0, 3.0, 0.5]), 1.5, hessian=True, nested=True)
def search_with_break_inside_if(xs, c):
    total = 0.0
    if c > 0:
        for x in xs:
            if x > 2.5:
                break
            total = total + x * c
        else:
            total = total * 2.0
    return total * xs[0]


@program(np.array([0.5, 1.5, 2.5]), hessian=True, nested=True)
def powers_with_differentiated_exponents(x):
    return np.sum(2.0**x) + x[0] ** x[1] + np.sum(x ** np.array([1.0, 2.0, 0.5])) + np.sum(x**-2)


@program(
    np.array([0.3, -0.2, 0.9]),
    hessian=True,
    refuses={
        "tape": "write x = x + v",
        "forward": "write x = x + v",
    },
)
def accumulates_into_a_fresh_buffer(x):
    acc = np.zeros(3)
    for i in range(1, 4):
        acc += x * i
    return np.sum(acc**2)


@program(np.array([1.0, 2.0, -0.5]), hessian=True, nested=True)
def log_determinant_of_a_jacobian(x):
    def flow(v):
        return v + 0.3 * np.tanh(np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.2], [0.1, 0.0, 1.0]]) @ v)

    J = cr.jacobian(flow, x, mode="forward")
    return np.linalg.slogdet(J)[1] + 0.5 * np.sum(flow(x) ** 2)
