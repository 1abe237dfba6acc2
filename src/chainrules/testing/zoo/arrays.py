"""Zoo family: functions of NumPy arrays: ufuncs, reductions, indexing, shapes, products, linalg.

Methods (``x.sum()``), attributes (``x.T``), indexing and operators appear alongside the NumPy
functions they stand for, so every engine meets both spellings.
"""

from __future__ import annotations

import numpy as np

from . import case

_rng = np.random.default_rng(20240803)
V3 = np.array([0.3, -1.2, 2.0])
V4 = np.array([1.0, 2.0, 3.0, 4.0])
M23 = _rng.standard_normal((2, 3))
M33 = _rng.standard_normal((3, 3)) + 3.0 * np.eye(3)
M34 = _rng.standard_normal((3, 4))
W = _rng.standard_normal((3, 4))
B = _rng.standard_normal(3)

# ----- elementwise and reductions ------------------------------------------------------------


@case(V3, tags=("array",))
def sum_of_squares(x):
    return np.sum(x * x)


@case(V3, tags=("array",))
def method_sum_of_sines(x):
    return (np.sin(x) * x).sum()


@case(V3, tags=("array",))
def elementwise_output(x):
    """An array output: engines are compared on a vector-Jacobian product."""
    return np.exp(x) * 2.0 - x**2


@case(M23, tags=("array",))
def mean_over_axis(x):
    return (x.mean(axis=0) ** 2).sum() + np.max(x)


@case(V4, tags=("array",))
def product_and_cumsum(x):
    return np.prod(x) + np.cumsum(x)[-1] * 0.5


@case(V3, tags=("array",))
def logsumexp_by_hand(x):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m))) + m


@case(V3, tags=("array",))
def euclidean_norm(x):
    return np.sqrt(np.sum(x**2)) + np.linalg.norm(x)


@case(V3, tags=("array",))
def leaky_relu_with_where(x):
    return np.where(x > 0, x, 0.01 * x).sum()


@case(V3, tags=("array",))
def relu_with_maximum(x):
    return np.maximum(x, 0.0) @ x


@case(M23, np.array([0.5, -1.0, 2.0]), tags=("array",))
def broadcast_rows(X, b):
    return ((X + b[None, :]) * b).sum() + (X * 2.0 + b).mean()


def mlp_loss(X, Y):
    """The loss of a tanh MLP with one hidden layer and softmax cross-entropy on inputs ``X`` and
    one-hot labels ``Y``, as a function of its weights (the MLP benchmark's model).

    >>> X, Y = np.ones((2, 3)), np.eye(2)
    >>> loss = mlp_loss(X, Y)
    >>> round(float(loss(np.zeros((3, 4)), np.zeros(4), np.zeros((4, 2)), np.zeros(2))), 4)  # log 2
    0.6931
    """

    def loss(W1, b1, W2, b2):
        h = np.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        m = np.max(z, axis=1, keepdims=True)
        log_p = z - (np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)
        return -np.sum(Y * log_p) / X.shape[0]

    return loss


# ----- indexing and shapes -------------------------------------------------------------------


@case(V4, tags=("array", "control_flow"))
def mysum(X):
    """Seed 004: a Python loop of X[i]; its gradient must cost O(n) time and one array."""
    total = 0.0
    for i in range(len(X)):
        total += X[i]
    return total


@case(V4, tags=("array",))
def slices_and_scalars(x):
    return x[1:3].sum() * x[0] + x[-1] * x[::2].sum()


@case(M34, tags=("array",))
def reshape_and_transpose(x):
    y = x.reshape(4, 3).T
    return (y * x).sum() + np.transpose(x).reshape(-1)[5]


@case(M23, tags=("array", "control_flow"))
def iterate_rows(X):
    """Iterating over an array yields its rows."""
    total = 0.0
    for row in X:
        total = total + np.dot(row, row) * row[0]
    return total


@case(V3, np.array([1.0, -1.0]), tags=("array",))
def concatenate_and_stack(x, y):
    z = np.concatenate([x, y * 2.0])
    s = np.stack([x, x * x])
    return (z * z).sum() + (s @ x).sum()


# ----- products and linear algebra -----------------------------------------------------------


@case(np.array([0.5, -0.3, 0.8, 0.1]), tags=("array",))
def seed003_affine_squared(x):
    """Seed 003's benchmark function f(x) = (W x + b)^2 (a vector output)."""
    return (W @ x + B) ** 2


@case(M23, tags=("array",))
def gram_trace(A):
    return np.trace(A.T @ A) + np.dot(A[0], A[1])


@case(
    np.array([0.2, -0.1, 0.4]),
    _rng.standard_normal((4, 3)) * 0.5,
    _rng.standard_normal((2, 4)) * 0.5,
    tags=("array",),
)
def two_layer_perceptron(x, W1, W2):
    h = np.tanh(W1 @ x + 0.1)
    return np.sum(np.tanh(W2 @ h) ** 2)


@case(M33, np.array([1.0, 2.0, -1.0]), tags=("array",))
def linear_solve(A, b):
    return np.linalg.solve(A, b).sum() + np.log(np.linalg.det(A))


@case(M33, tags=("array",))
def inverse_trace(A):
    return np.trace(np.linalg.inv(A))


@case(M23, V3, tags=("array",))
def einsum_contraction(A, x):
    return np.einsum("ij,j->i", A, x).sum() + np.einsum("ij,ij->", A, A)


# ----- dtypes --------------------------------------------------------------------------------


@case(V3.astype(np.float32), tags=("array", "float32"), rtol=1e-3, atol=1e-4)
def float32_input(x):
    """A float32 input gets a float32 gradient."""
    return (x * x * 3.0).sum()


@case(np.array([1, 2, 3]), V3, tags=("array", "int"))
def int_array_weights(k, x):
    """An integer array used arithmetically gets a float gradient."""
    return (k * x * x).sum() + (k * k).sum() * 0.5


# ----- data-dependent loops ------------------------------------------------------------------


@case(np.array([1.5, -2.0, 0.7]), tags=("array", "control_flow"))
def shrink_until_unit_norm(x):
    while np.sum(x * x) > 1.0:
        x = x * 0.5
    return x.sum() + x[0]


@case(np.array([0.5, 1.5, -0.2, 2.5]), tags=("array", "control_flow"))
def branch_per_element(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] > 1.0:
            total = total + x[i] ** 2
        else:
            total = total - np.sin(x[i])
    return total


@case(0.7, tags=("array", "scalar", "array_write"))
def array_from_list(x):
    """``np.array`` of a list of numbers (NumPy gives ``np.array`` no override protocol)."""
    y = np.array([x * 2.0, x, x * x])
    return (y * y).sum()
