"""A corpus of ordinary NumPy functions: forward mode agrees with finite differences, and each
primitive's pushforward through the engine (single and chunked) equals its frule called directly."""

import numpy as np
import pytest
import scipy.special

import chainrules as cr
import chainrules.testing as crt
from chainrules import forward


def fd_jacobian_shaped(f, x):
    """The finite-difference Jacobian of f at x, shaped out.shape + x.shape."""
    return crt.fd_jacobian(f, x).reshape(np.shape(f(x)) + np.shape(x))


_rng = np.random.default_rng(42)
A = _rng.standard_normal((3, 3))
S = A @ A.T + 3 * np.eye(3)  # symmetric positive definite
B = _rng.standard_normal((2, 3))
X0 = np.array([0.4, -0.9, 1.3])
M0 = np.array([[0.5, -0.2, 0.3], [0.1, 0.8, -0.6]])


def babysqrt(x, t=None, n=10):
    t = (1 + x) / 2 if t is None else t
    return t if n == 0 else babysqrt(x, (t + x / t) / 2, n - 1)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def horner(x):
    total = np.zeros_like(x)
    for c in (0.5, -1.0, 2.0, 3.0):
        total = total * x + c
    return total


def pairwise_loop(x):
    total = 0.0
    for i in range(len(x) - 1):
        total = total + x[i] * x[i + 1]
    return total


def branchy(x):
    if np.sum(x) > 0:
        return np.exp(x)
    return np.cos(x)


def layer(x):
    h = np.tanh(B @ x + 1.0)
    return np.sum(h**2)


# name -> (function, input); inputs are vectors (3,) or matrices (2, 3)
CORPUS = {
    "sin_cos": (lambda x: np.sin(x) * np.cos(x), X0),
    "gaussian": (lambda x: np.exp(-(x**2)), X0),
    "log1p": (lambda x: np.log1p(x**2), X0),
    "sqrt": (lambda x: np.sqrt(x**2 + 1.0), X0),
    "affine_tanh": (lambda x: np.tanh(A @ x + 0.5), X0),
    "affine_square": (lambda x: (A @ x + 1.0) ** 2, X0),
    "softmax": (softmax, X0),
    "normalize": (lambda x: x / np.linalg.norm(x), X0),
    "sum_cubes": (lambda x: np.sum(x**3), X0),
    "mean_square": (lambda x: np.mean(x * x), X0),
    "prod": (np.prod, X0),
    "cumsum": (lambda x: np.cumsum(x * x), X0),
    "outer": (lambda x: np.outer(x, np.sin(x)), X0),
    "dot": (lambda x: np.dot(x, x), X0),
    "quadratic_form": (lambda x: x @ S @ x, X0),
    "relu": (lambda x: np.maximum(x, 0.0), X0),
    "leaky_relu": (lambda x: np.where(x > 0, x, 0.1 * x), X0),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), X0),
    "abs": (np.abs, X0),
    "concatenate": (lambda x: np.concatenate([x, x**2]), X0),
    "stack": (lambda x: np.stack([x, np.sin(x)]), X0),
    "reverse_product": (lambda x: x[::-1] * x, X0),
    "solve": (lambda x: np.linalg.solve(S, x), X0),
    "inv_of_diag_plus": (lambda x: np.linalg.inv(np.diag(x**2) + S), X0),
    "det": (lambda m: np.linalg.det(m @ m.T + np.eye(2)), M0),
    "cholesky": (lambda m: np.linalg.cholesky(m @ m.T + np.eye(2)), M0),
    "eigh_values": (lambda m: np.linalg.eigh(m @ m.T + np.diag([1.0, 2.0]))[0], M0),
    "einsum": (lambda m: np.einsum("ij,kj->ik", m, m), M0),
    "transpose_matmul": (lambda m: m.T @ m, M0),
    "reshape_sum": (lambda m: m.reshape(3, 2).sum(axis=1), M0),
    "axis_reductions": (lambda m: np.max(m, axis=1) * np.min(m, axis=0)[:2], M0),
    "var_std": (lambda x: np.var(x) + np.std(x), X0),
    "expit": (lambda x: scipy.special.expit(2 * x), X0),
    "arctan2": (lambda x: np.arctan2(x, 1.0 + x**2), X0),
    "hypot": (lambda x: np.hypot(x, 2.0), X0),
    "power": (lambda x: np.power(np.abs(x) + 1.0, 2.5), X0),
    "broadcast_outer": (lambda x: x[:, None] * x[None, :], X0),
    "trace": (lambda m: np.trace(m.T @ m), M0),
    "kron": (lambda x: np.kron(x, x[:2]), X0),
    "sort": (np.sort, X0),
    "babysqrt": (lambda x: babysqrt(x**2 + 0.5), X0),
    "horner": (horner, X0),
    "python_loop": (pairwise_loop, X0),
    "branch": (branchy, X0),
    "neural_layer": (layer, X0),
    "matrix_elementwise": (lambda m: np.exp(m) * m.sum(), M0),
}


# Cases whose rules are written elsewhere and may not be registered yet: until they are, forward
# mode must refuse the case with a NoRuleError that names the missing rule.
PENDING = {
    "normalize": (np.linalg.norm, (X0,)),
    "solve": (np.linalg.solve, (S, X0)),
    "inv_of_diag_plus": (np.linalg.inv, (S,)),
    "det": (np.linalg.det, (S,)),
    "cholesky": (np.linalg.cholesky, (S,)),
    "eigh_values": (np.linalg.eigh, (S,)),
    "expit": (scipy.special.expit, (X0,)),
}


def missing_rule(name):
    """The callable a case needs whose frule is not registered, or None."""
    f, args = PENDING.get(name, (None, ()))
    return f if f is not None and cr.frule.lookup(f, args) is None else None


def refuses_while_pending(name) -> bool:
    f, x = CORPUS[name]
    missing = missing_rule(name)
    if missing is None:
        return False
    with pytest.raises(cr.NoRuleError, match=cr.core.callable_name(missing)):
        forward.jacobian(f, x)
    return True


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_jacobian_agrees_with_finite_differences(name):
    if refuses_while_pending(name):
        return
    f, x = CORPUS[name]
    J = forward.jacobian(f, x)
    np.testing.assert_allclose(J, fd_jacobian_shaped(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_jvp_agrees_with_the_jacobian_and_with_small_chunks(name):
    if refuses_while_pending(name):
        return
    f, x = CORPUS[name]
    dx = np.random.default_rng(len(name)).standard_normal(x.shape)
    y, dy = cr.jvp(f, (x,), (dx,))
    np.testing.assert_allclose(y, f(x), rtol=1e-13)
    J = forward.jacobian(f, x, chunk_size=2)
    expected = np.tensordot(J, dx, axes=dx.ndim)
    np.testing.assert_allclose(
        np.asarray(cr.unthunk(dy) if not isinstance(dy, cr.ZeroTangent) else 0 * y), expected, rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(crt.fd_jvp(f, x, dx), expected, rtol=1e-6, atol=1e-8)


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 30


# ----- frule by frule: the engine's result for one primitive is that primitive's frule ---------------

PRIMITIVES = [
    (np.sin, (X0,)),
    (np.exp, (X0,)),
    (np.multiply, (X0, X0[::-1])),
    (np.matmul, (A, X0)),
    (np.sum, (M0,)),
    (np.transpose, (M0,)),
    (np.reshape, (M0, (3, 2))),
    (np.concatenate, ([X0, X0],)),
    (np.linalg.solve, (S, X0)),
    (np.tanh, (M0,)),
    (np.maximum, (X0, 0.0)),
    (np.cumsum, (X0,)),
]


@pytest.mark.parametrize("f, args", PRIMITIVES, ids=[getattr(f, "__name__", str(f)) for f, _ in PRIMITIVES])
def test_engine_pushforward_is_the_frule(f, args):
    if cr.frule.lookup(f, args) is None:  # a rule still to come: forward mode refuses the call
        with pytest.raises(cr.NoRuleError, match=cr.core.callable_name(f)):
            cr.jvp(lambda v: f(v, *args[1:]), (args[0],), (np.ones_like(args[0]),))
        return
    rng = np.random.default_rng(7)
    for i, x in enumerate(args):
        if not isinstance(x, np.ndarray):
            continue
        dx = rng.standard_normal(x.shape)

        def g(v, i=i):
            return f(*args[:i], v, *args[i + 1 :])

        tangents = (cr.NoTangent(),) + tuple(dx if j == i else cr.ZeroTangent() for j in range(len(args)))
        y_rule, dy_rule = cr.frule(tangents, f, *args)
        y, dy = cr.jvp(g, (x,), (dx,))
        np.testing.assert_array_equal(y, y_rule)
        np.testing.assert_allclose(dy, dy_rule, rtol=1e-14, atol=1e-15)
        # the chunked engine call equals the frule applied to each basis tangent
        J = forward.jacobian(g, x)
        columns = []
        for e in np.eye(x.size):
            t = (cr.NoTangent(),) + tuple(e.reshape(x.shape) if j == i else cr.ZeroTangent() for j in range(len(args)))
            columns.append(np.asarray(cr.frule(t, f, *args)[1]))
        expected = np.stack(columns, axis=-1).reshape(np.shape(y_rule) + x.shape)
        np.testing.assert_allclose(J, expected, rtol=1e-13, atol=1e-14)
