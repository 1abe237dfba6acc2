"""A small MLP loss on both reverse engines: float32 stays float32 from the weights to their
gradients, and the cotangents of the captured data (inputs, labels) are never computed."""

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy import products
from chainrules.testing.zoo.arrays import mlp_loss

ENGINES = ["source", "tape"]


def make_problem(dtype, batch=5, n_in=4, n_hidden=3, n_out=2):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((batch, n_in)).astype(dtype)
    Y = np.eye(n_out, dtype=dtype)[rng.integers(0, n_out, batch)]
    weights = (
        rng.standard_normal((n_in, n_hidden)).astype(dtype),
        rng.standard_normal(n_hidden).astype(dtype),
        rng.standard_normal((n_hidden, n_out)).astype(dtype),
        rng.standard_normal(n_out).astype(dtype),
    )
    return weights, X, Y


def handwritten_gradient(X, Y, W1, b1, W2, b2):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    dz = (e / e.sum(axis=1, keepdims=True) - Y) / X.shape[0]
    da = (dz @ W2.T) * (1 - h * h)
    return X.T @ da, da.sum(axis=0), h.T @ dz, dz.sum(axis=0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_gradient_matches_backprop_and_keeps_the_dtype(engine, dtype):
    weights, X, Y = make_problem(dtype)
    grads = cr.gradient(mlp_loss(X, Y), *weights, engine=engine)
    expected = handwritten_gradient(X, Y, *weights)
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    for g, e in zip(grads, expected):
        assert type(g) is np.ndarray and g.dtype == dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cotangent_of_the_inputs_is_never_computed(engine, monkeypatch):
    weights, X, Y = make_problem(np.float64)
    made = []
    product = products.product

    def counting_product(p, op_p, q, op_q):
        made.append((np.shape(p), op_p, np.shape(q), op_q))
        return product(p, op_p, q, op_q)

    monkeypatch.setattr(products, "product", counting_product)
    cr.gradient(mlp_loss(X, Y), *weights, engine=engine)
    # dW2 = h^T dz, dh = dz W2^T and dW1 = X^T da; never dX = da W1^T
    assert sorted(made) == sorted([((5, 3), "C", (5, 2), "N"), ((5, 2), "N", (3, 2), "C"), ((5, 4), "C", (5, 3), "N")])


def test_array_operators_leave_the_cotangents_of_arrays_as_thunks():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for op in (operator.mul, operator.truediv, operator.sub):
        _, back = cr.rrule(op, a, b)
        _, da, db = back(np.ones(2))
        assert isinstance(db, cr.Thunk)
        expected = {operator.mul: a, operator.truediv: -a / (b * b), operator.sub: -np.ones(2)}[op]
        np.testing.assert_allclose(cr.unthunk(db), expected)
    _, back = cr.rrule(operator.add, np.ones((2, 3)), np.ones(3))
    _, da, db = back(np.ones((2, 3)))
    assert type(da) is np.ndarray  # passed on as it is: nothing to defer
    assert isinstance(db, cr.Thunk) and cr.unthunk(db).tolist() == [2.0, 2.0, 2.0]


def test_float32_arguments_get_float32_cotangents_from_mixed_operations():
    x = np.ones(3, np.float32)
    for f in (lambda x: np.sum(x * 2.0 + 1), lambda x: np.sum(np.tanh(x) / 3), lambda x: np.max(x - 0.5)):
        for engine in ENGINES:
            (g,) = cr.gradient(f, x, engine=engine)
            assert g.dtype == np.float32, (engine, g.dtype)
